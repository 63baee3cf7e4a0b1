//! `objects` finding a service's ObjectManager by its last means, the Introspect walk from `/`:
//! a zbus service on a private bus (no root needed) whose manager is neither at `/` nor at the
//! path its well-known name gives, with only introspectable nodes on the way to it.

use std::collections::BTreeMap;
use std::time::Duration;

use netmirror_client_cache::testing::PrivateBus;
use serde_json::Value;
use zbus::{OwnedVariant as OwnedValue, Variant};

use crate::support::{Monitor, Run, netmirror, run};

const SERVICE: &str = "org.example.Deep";
/// Neither `/` nor `/org/example/Deep`; `/com`, `/com/example`... are plain nodes.
const MANAGER: &str = "/com/example/x/y/Manager";

/// A disk, with properties of the types `objects` shows in their own ways.
struct Disk {
    name: String,
    size: u64,
    device: Vec<u8>,
    tags: Vec<String>,
}

#[zbus::interface(name = "org.example.Disk")]
impl Disk {
    #[zbus(property)]
    fn name(&self) -> String {
        self.name.clone()
    }

    #[zbus(property)]
    fn size(&self) -> u64 {
        self.size
    }

    #[zbus(property)]
    fn device(&self) -> Vec<u8> {
        self.device.clone()
    }

    #[zbus(property)]
    fn tags(&self) -> Vec<String> {
        self.tags.clone()
    }
}

/// An interface with a method and no properties.
struct Eject;

#[zbus::interface(name = "org.example.Eject")]
impl Eject {
    fn eject(&self) {}
}

/// Something beside the manager, not under it: the walk passes it by.
struct Clock;

#[zbus::interface(name = "org.example.Clock")]
impl Clock {
    #[zbus(property)]
    fn ticks(&self) -> u32 {
        7
    }
}

fn disk(name: &str, device: &[u8], tags: &[&str]) -> Disk {
    Disk {
        name: name.to_owned(),
        size: 1 << 30,
        device: device.to_vec(),
        tags: tags.iter().map(|tag| (*tag).to_owned()).collect(),
    }
}

/// The service: its connection holds its name and objects until dropped.
fn serve(bus: &PrivateBus) -> zbus::Connection {
    zbus::block_on(async {
        zbus::connection::Builder::address(bus.address())
            .serve_at("/com/example/clock", Clock)
            .serve_at(MANAGER, zbus::fdo::ObjectManager)
            .serve_at(
                format!("{MANAGER}/disk0"),
                disk("disk0", b"/dev/vda\0", &["boot", "root"]),
            )
            .serve_at(format!("{MANAGER}/disk0"), Eject)
            .serve_at(format!("{MANAGER}/disk1"), disk("disk1", &[1, 2, 255], &[]))
            // An object made only of an interface without properties.
            .serve_at(format!("{MANAGER}/tray"), Eject)
            .name(SERVICE)
            .build()
            .await
    })
    .expect("serve org.example.Deep")
}

/// path → interface → property → value, as a second zbus client reads `GetManagedObjects`.
type Managed = BTreeMap<String, BTreeMap<String, BTreeMap<String, OwnedValue>>>;

fn managed_objects(bus: &PrivateBus) -> Managed {
    let objects = zbus::block_on(async {
        let conn = zbus::connection::Builder::address(bus.address())
            .build()
            .await?;
        zbus::fdo::ObjectManagerProxy::builder(&conn)
            .destination(SERVICE)
            .path(MANAGER)
            .build()
            .await?
            .get_managed_objects()
            .await
    })
    .expect("GetManagedObjects");
    objects
        .into_iter()
        .map(|(path, interfaces)| {
            let interfaces = interfaces
                .into_iter()
                .map(|(name, props)| (name.to_string(), props.into_iter().collect()))
                .collect();
            (path.to_string(), interfaces)
        })
        .collect()
}

/// How `objects --json` shows a value of these types: numbers and booleans as themselves,
/// string arrays as arrays, a byte string as text when it is a printable C string (its NUL
/// left out), else as its bytes.
fn as_json(value: &Variant<'_>) -> Value {
    match value {
        Variant::Str(text) => Value::from(text.as_str()),
        Variant::U64(number) => Value::from(*number),
        Variant::U32(number) => Value::from(*number),
        Variant::Array(items) => {
            let items: Vec<Value> = items.iter().map(as_json).collect();
            let bytes: Option<Vec<u8>> = items
                .iter()
                .map(|item| item.as_u64().and_then(|b| u8::try_from(b).ok()))
                .collect();
            match bytes {
                Some(bytes)
                    if items.first().is_some_and(Value::is_u64)
                        && bytes.last() == Some(&0)
                        && bytes[..bytes.len() - 1]
                            .iter()
                            .all(|b| b.is_ascii_graphic() || *b == b' ') =>
                {
                    Value::from(String::from_utf8(bytes[..bytes.len() - 1].to_vec()).unwrap())
                }
                _ => Value::Array(items),
            }
        }
        Variant::U8(byte) => Value::from(*byte),
        other => panic!("no JSON form for {other:?} here"),
    }
}

fn ours(bus: &PrivateBus, args: &[&str]) -> Run {
    let mut all = vec!["--bus", bus.address()];
    all.extend_from_slice(args);
    run(netmirror(&all))
}

#[test]
fn objects_walks_introspection_data_to_a_deep_manager() {
    let bus = PrivateBus::start().expect("bus");
    let service = serve(&bus);
    let theirs = managed_objects(&bus);
    assert_eq!(
        theirs.keys().collect::<Vec<_>>(),
        [
            &format!("{MANAGER}/disk0"),
            &format!("{MANAGER}/disk1"),
            &format!("{MANAGER}/tray")
        ],
        "{theirs:?}"
    );

    let run = ours(&bus, &["--json", "-v", "objects", "--service", SERVICE]);
    // `-v` says where the manager is and how it was found.
    assert!(
        run.stderr.contains(&format!("manager={MANAGER}"))
            && run.stderr.contains("walking the objects from /"),
        "{}",
        run.stderr
    );
    let mut mine: Managed = BTreeMap::new();
    let mut values: BTreeMap<(String, String, String), Value> = BTreeMap::new();
    for row in run.json().as_array().expect("an array") {
        let path = row["path"].as_str().expect("path").to_owned();
        let interface = row["interface"].as_str().expect("interface").to_owned();
        let props = mine
            .entry(path.clone())
            .or_default()
            .entry(interface.clone())
            .or_default();
        if let Some(property) = row["property"].as_str() {
            props.insert(property.to_owned(), OwnedValue::from(0u8));
            values.insert((path, interface, property.to_owned()), row["value"].clone());
        }
    }
    // The same objects, interfaces (the one without properties too) and property names.
    let shape = |managed: &Managed| -> Vec<(String, String, Vec<String>)> {
        managed
            .iter()
            .flat_map(|(path, interfaces)| {
                interfaces.iter().map(move |(interface, props)| {
                    (
                        path.clone(),
                        interface.clone(),
                        props.keys().cloned().collect(),
                    )
                })
            })
            .collect()
    };
    assert_eq!(shape(&mine), shape(&theirs));
    // And the same values.
    let mut compared = 0;
    for (path, interfaces) in &theirs {
        for (interface, props) in interfaces {
            for (name, value) in props {
                let key = (path.clone(), interface.clone(), name.clone());
                assert_eq!(values[&key], as_json(value), "{key:?}");
                compared += 1;
            }
        }
    }
    assert_eq!(compared, 8, "{theirs:?}");
    assert_eq!(
        values[&(
            format!("{MANAGER}/disk0"),
            "org.example.Disk".to_owned(),
            "Device".to_owned()
        )],
        "/dev/vda"
    );

    // For people too.
    let text = ours(&bus, &["objects", "--service", SERVICE])
        .ok()
        .to_owned();
    assert!(text.contains(&format!("{MANAGER}/tray")), "{text}");
    // The monitor finds the manager too: an object added under it shows, with its
    // properties.
    let mut command = netmirror(&[
        "--bus",
        bus.address(),
        "--json",
        "-v",
        "objects",
        "monitor",
        "--service",
        SERVICE,
    ]);
    command.env("RUST_LOG", "netmirror=debug");
    let mut monitor = Monitor::start(command, "monitor ready");
    zbus::block_on(service.object_server().at(
        format!("{MANAGER}/disk2"),
        disk("disk2", b"/dev/vdb\0", &[]),
    ))
    .expect("add disk2");
    let added = format!("{MANAGER}/disk2");
    monitor.expect_line(Duration::from_secs(30), |line| {
        line.contains(&added) && line.contains("/dev/vdb")
    });
}
