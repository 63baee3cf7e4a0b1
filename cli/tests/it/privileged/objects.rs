//! `objects` against real third-party ObjectManager services on a private bus, compared with
//! `GetManagedObjects` read by another client (`busctl`): udisks2, whose manager is at
//! `/org/freedesktop/UDisks2`, not `/`; and NetworkManager, with its objects that have
//! interfaces without properties.

use std::collections::{BTreeMap, BTreeSet};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use netmirror_client_cache::testing::{NetworkManagerDaemon, PrivateBus};
use serde_json::Value;

use crate::support::{Run, netmirror, run};

const UDISKSD: &str = "/usr/libexec/udisks2/udisksd";

/// udisksd on a private bus; killed on drop.
struct Udisks {
    bus: PrivateBus,
    child: Child,
}

impl Drop for Udisks {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn udisks() -> Udisks {
    let bus = PrivateBus::start().expect("private bus");
    let child = bus
        .command(UDISKSD)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("udisksd (Debian's udisks2)");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !bus
        .name_has_owner("org.freedesktop.UDisks2")
        .expect("busctl")
    {
        assert!(Instant::now() < deadline, "udisksd never took its name");
        std::thread::sleep(Duration::from_millis(100));
    }
    Udisks { bus, child }
}

fn ours(address: &str, args: &[&str]) -> Run {
    let mut full = vec!["--bus", address];
    full.extend_from_slice(args);
    run(netmirror(&full))
}

/// `GetManagedObjects` of `service` at `manager`, read with busctl: path → interface →
/// property → `(signature, value)`.
type Managed = BTreeMap<String, BTreeMap<String, BTreeMap<String, (String, Value)>>>;

fn managed_objects(bus: &PrivateBus, service: &str, manager: &str) -> Managed {
    let output = bus
        .command("busctl")
        .args([
            "--system",
            "--json=short",
            "call",
            service,
            manager,
            "org.freedesktop.DBus.ObjectManager",
            "GetManagedObjects",
        ])
        .output()
        .expect("busctl");
    assert!(output.status.success(), "{output:?}");
    let reply: Value = serde_json::from_slice(&output.stdout).expect("JSON");
    let mut managed = Managed::new();
    for (path, interfaces) in reply["data"][0].as_object().expect("a{oa{sa{sv}}}") {
        let object = managed.entry(path.clone()).or_default();
        for (interface, properties) in interfaces.as_object().expect("a{sa{sv}}") {
            let props = object.entry(interface.clone()).or_default();
            for (name, value) in properties.as_object().expect("a{sv}") {
                let signature = value["type"].as_str().expect("type").to_owned();
                props.insert(name.clone(), (signature, value["data"].clone()));
            }
        }
    }
    managed
}

/// Our `objects --json` rows: path → interface → property → row.
fn our_objects(rows: &Value) -> BTreeMap<String, BTreeMap<String, BTreeMap<String, Value>>> {
    let mut objects: BTreeMap<String, BTreeMap<String, BTreeMap<String, Value>>> = BTreeMap::new();
    for row in rows.as_array().expect("array") {
        let path = row["path"].as_str().expect("path").to_owned();
        let interface = row["interface"].as_str().expect("interface").to_owned();
        let props = objects
            .entry(path)
            .or_default()
            .entry(interface)
            .or_default();
        if let Some(property) = row["property"].as_str() {
            props.insert(property.to_owned(), row.clone());
        }
    }
    objects
}

/// Compares our objects with busctl's: the same objects, interfaces (those without
/// properties too) and properties, and equal values where JSON can tell (strings, numbers,
/// booleans, string arrays; `ay` byte strings as text).
#[track_caller]
fn assert_same(ours: &Value, theirs: &Managed) -> usize {
    let mine = our_objects(ours);
    let paths = |m: &dyn Fn() -> BTreeSet<String>| m();
    assert_eq!(
        paths(&|| mine.keys().cloned().collect()),
        paths(&|| theirs.keys().cloned().collect()),
        "objects"
    );
    let mut compared = 0;
    for (path, interfaces) in theirs {
        let my_interfaces = &mine[path];
        assert_eq!(
            my_interfaces.keys().collect::<Vec<_>>(),
            interfaces.keys().collect::<Vec<_>>(),
            "interfaces of {path}"
        );
        for (interface, properties) in interfaces {
            let my_props = &my_interfaces[interface];
            assert_eq!(
                my_props.keys().collect::<Vec<_>>(),
                properties.keys().collect::<Vec<_>>(),
                "properties of {path} {interface}"
            );
            for (name, (signature, value)) in properties {
                let row = &my_props[name];
                assert_eq!(row["signature"], signature.as_str(), "{path} {name}");
                assert!(row["declared"].is_boolean(), "{row}");
                let mine = &row["value"];
                match signature.as_str() {
                    "s" | "o" | "b" | "u" | "i" | "t" | "x" | "q" | "n" | "y" | "as" | "ao" => {
                        assert_eq!(mine, value, "{path} {interface} {name}");
                        compared += 1;
                    }
                    "ay" => {
                        let bytes: Vec<u8> = value
                            .as_array()
                            .expect("bytes")
                            .iter()
                            .map(|b| u8::try_from(b.as_u64().expect("byte")).expect("byte"))
                            .collect();
                        match mine {
                            Value::String(text) => {
                                let mut expected = text.as_bytes().to_vec();
                                expected.push(0);
                                assert_eq!(expected, bytes, "{path} {name}");
                            }
                            other => assert_eq!(other, value, "{path} {name}"),
                        }
                        compared += 1;
                    }
                    _ => {}
                }
            }
        }
    }
    compared
}

#[test]
fn udisks_objects_are_found_and_equal_get_managed_objects() {
    let udisks = udisks();
    let address = udisks.bus.address();
    let theirs = managed_objects(
        &udisks.bus,
        "org.freedesktop.UDisks2",
        "/org/freedesktop/UDisks2",
    );
    assert!(!theirs.is_empty(), "udisksd has no objects");
    let run = ours(
        address,
        &[
            "--json",
            "-v",
            "objects",
            "--service",
            "org.freedesktop.UDisks2",
        ],
    );
    let compared = assert_same(&run.json(), &theirs);
    assert!(compared > 0);
    // `-v` says where the manager was found.
    assert!(
        run.stderr.contains("manager=/org/freedesktop/UDisks2"),
        "{}",
        run.stderr
    );
    // A manager given that is not one, and a service without any: one line, exit 1.
    let stderr = ours(
        address,
        &[
            "objects",
            "--service",
            "org.freedesktop.UDisks2",
            "--manager",
            "/nope",
        ],
    )
    .fails(1)
    .to_owned();
    assert!(
        stderr.starts_with("netmirror: org.freedesktop.UDisks2 has no ObjectManager at /nope (")
            && stderr.ends_with(")\n")
            && stderr.lines().count() == 1,
        "{stderr}"
    );
    let stderr = ours(address, &["objects", "--service", "org.freedesktop.DBus"])
        .fails(1)
        .to_owned();
    assert!(stderr.contains("has no ObjectManager"), "{stderr}");
    let stderr = ours(
        address,
        &["objects", "monitor", "--service", "org.freedesktop.DBus"],
    )
    .fails(1)
    .to_owned();
    assert!(stderr.contains("has no ObjectManager"), "{stderr}");
}

#[test]
fn networkmanager_objects_keep_interfaces_without_properties() {
    let nm = NetworkManagerDaemon::start().expect("NetworkManager");
    let theirs = managed_objects(
        nm.bus(),
        "org.freedesktop.NetworkManager",
        "/org/freedesktop",
    );
    assert!(theirs.contains_key("/org/freedesktop/NetworkManager/AgentManager"));
    let run = ours(
        nm.bus_address(),
        &[
            "--json",
            "objects",
            "--service",
            "org.freedesktop.NetworkManager",
        ],
    );
    assert_same(&run.json(), &theirs);
}

/// The rows of `objects --json`, sorted (a live cache lists its objects in no particular
/// order).
fn sorted_rows(rows: &Value) -> Vec<String> {
    let mut rows: Vec<String> = rows
        .as_array()
        .expect("array")
        .iter()
        .map(Value::to_string)
        .collect();
    rows.sort();
    rows
}

#[test]
fn networkmanager_objects_recorded_then_replayed_without_a_bus_are_the_same() {
    let nm = NetworkManagerDaemon::builder()
        .seed_benchmark_profiles(3)
        .start()
        .expect("NetworkManager");
    let file = nm.dir().join("objects.nmrec");
    let file = file.to_str().expect("a UTF-8 path");
    let live = ours(
        nm.bus_address(),
        &[
            "--json",
            "objects",
            "--service",
            "org.freedesktop.NetworkManager",
            "--record",
            file,
        ],
    )
    .json();
    let theirs = managed_objects(
        nm.bus(),
        "org.freedesktop.NetworkManager",
        "/org/freedesktop",
    );
    assert!(assert_same(&live, &theirs) > 100);
    // No bus: the recording alone.
    let replayed = run(netmirror(&["--json", "objects", "--replay", file])).json();
    assert_eq!(sorted_rows(&replayed), sorted_rows(&live));
    assert_same(&replayed, &theirs);
}
