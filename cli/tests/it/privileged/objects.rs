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
pub(super) type Managed = BTreeMap<String, BTreeMap<String, BTreeMap<String, (String, Value)>>>;

pub(super) fn managed_objects(bus: &PrivateBus, service: &str, manager: &str) -> Managed {
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
/// properties too) and properties, with equal signatures and values in every signature (see
/// [`assert_value`]). Returns how many values were compared.
#[track_caller]
pub(super) fn assert_same(ours: &Value, theirs: &Managed) -> usize {
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
                assert_value(signature, value, &row["value"], &format!("{path} {name}"));
                compared += 1;
            }
        }
    }
    compared
}

/// The first complete type of a non-empty signature, and the rest.
fn split_type(signature: &str) -> (&str, &str) {
    let mut depth = 0usize;
    for (at, code) in signature.char_indices() {
        match code {
            'a' => continue,
            '(' | '{' => depth += 1,
            ')' | '}' => depth -= 1,
            _ => {}
        }
        if depth == 0 {
            return signature.split_at(at + 1);
        }
    }
    panic!("signature {signature:?} ends inside a container")
}

/// The complete types of a struct's or dict entry's inside.
fn field_types(mut inside: &str) -> Vec<&str> {
    let mut types = Vec::new();
    while !inside.is_empty() {
        let (first, rest) = split_type(inside);
        types.push(first);
        inside = rest;
    }
    types
}

/// Asserts that `mine`, our JSON of a value of type `signature`, holds what `theirs`, busctl's
/// JSON of it, holds. Our JSON (README, `objects`): variants unwrapped, structs as arrays,
/// dictionaries with string keys as objects (others as arrays of `[key, value]`), byte
/// arrays as text where they are a C string of printable UTF-8. busctl's: variants as
/// `{"type", "data"}`, structs as arrays, dictionaries as objects, byte arrays as arrays.
#[track_caller]
fn assert_value(signature: &str, theirs: &Value, mine: &Value, at: &str) {
    let Some(code) = signature.chars().next() else {
        panic!("{at}: empty signature");
    };
    match code {
        'v' => {
            let inner = theirs["type"].as_str().expect("a variant's type");
            assert_value(inner, &theirs["data"], mine, &format!("{at} <{inner}>"));
        }
        'a' if signature == "ay" => {
            let bytes: Vec<u8> = theirs
                .as_array()
                .expect("bytes")
                .iter()
                .map(|b| u8::try_from(b.as_u64().expect("byte")).expect("byte"))
                .collect();
            match mine {
                Value::String(text) => {
                    let mut expected = text.as_bytes().to_vec();
                    expected.push(0);
                    assert_eq!(expected, bytes, "{at}");
                }
                other => assert_eq!(other, theirs, "{at}"),
            }
        }
        'a' if signature.starts_with("a{") => {
            let types = field_types(&signature[2..signature.len() - 1]);
            let [key_type, value_type] = types[..] else {
                panic!("{at}: dict entry {signature}");
            };
            let theirs = theirs.as_object().expect("busctl's dictionary");
            let mine: BTreeMap<String, &Value> = match mine {
                Value::Object(entries) => entries.iter().map(|(k, v)| (k.clone(), v)).collect(),
                Value::Array(pairs) => pairs
                    .iter()
                    .map(|pair| {
                        let key = match &pair[0] {
                            Value::String(text) => text.clone(),
                            other => other.to_string(),
                        };
                        (key, &pair[1])
                    })
                    .collect(),
                other => panic!("{at}: {other} for {signature}"),
            };
            // A JSON object's members have no order: compare the keys as sets.
            assert_eq!(
                mine.keys().collect::<BTreeSet<_>>(),
                theirs.keys().collect::<BTreeSet<_>>(),
                "{at}: keys ({key_type})"
            );
            for (key, value) in theirs {
                assert_value(value_type, value, mine[key], &format!("{at}[{key}]"));
            }
        }
        'a' => {
            let element = &signature[1..];
            let (theirs, mine) = (
                theirs.as_array().expect("busctl's array"),
                mine.as_array().unwrap_or_else(|| panic!("{at}: {mine}")),
            );
            assert_eq!(mine.len(), theirs.len(), "{at}: length");
            for (i, (theirs, mine)) in theirs.iter().zip(mine).enumerate() {
                assert_value(element, theirs, mine, &format!("{at}[{i}]"));
            }
        }
        '(' => {
            let types = field_types(&signature[1..signature.len() - 1]);
            let (theirs, mine) = (
                theirs.as_array().expect("busctl's struct"),
                mine.as_array().unwrap_or_else(|| panic!("{at}: {mine}")),
            );
            assert_eq!(
                (mine.len(), theirs.len()),
                (types.len(), types.len()),
                "{at}"
            );
            for (i, ((theirs, mine), field)) in theirs.iter().zip(mine).zip(types).enumerate() {
                assert_value(field, theirs, mine, &format!("{at}.{i}"));
            }
        }
        'd' => {
            let (theirs, mine) = (
                theirs.as_f64().expect("busctl's double"),
                mine.as_f64().unwrap_or_else(|| panic!("{at}: {mine}")),
            );
            assert!(
                (theirs - mine).abs() <= 1e-9 * theirs.abs().max(1.0),
                "{at}: {mine} against {theirs}"
            );
        }
        // A file descriptor's number is the receiving process's own.
        'h' => assert!(mine.is_u64(), "{at}: {mine}"),
        _ => assert_eq!(mine, theirs, "{at}"),
    }
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
