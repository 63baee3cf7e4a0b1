//! `objects --record FILE` and `objects --replay FILE` without root: a recording of a service
//! on a private bus lists, without the bus, what the live command listed; the recordings of the
//! real NetworkManager kept with the client cache's tests list their objects; a cut recording
//! is a one-line error.

use std::path::{Path, PathBuf};

use netmirror_client_cache::testing::{HostileService, Ifaces, PrivateBus, Props};
use serde_json::Value;
use zbus::OwnedVariant;

use crate::support::{netmirror, run};

const SERVICE: &str = "org.example.Recorded";

fn v<'a>(x: impl Into<zbus::Variant<'a>>) -> OwnedVariant {
    OwnedVariant::try_from(x.into()).expect("no fds")
}

fn recordings() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../client-cache/tests/data/replay")
}

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
fn a_recorded_listing_replays_to_the_same_rows_without_the_bus() {
    let bus = PrivateBus::start().expect("bus");
    let service = HostileService::start(bus.address(), SERVICE, "/").expect("service");
    let objects = (0..5).map(|i| {
        let mut props = Props::new();
        props.insert("Name".into(), v(format!("node {i}")));
        props.insert("Count".into(), v(i as u32));
        props.insert("Tags".into(), v(vec!["a", "b"]));
        let mut ifaces = Ifaces::new();
        ifaces.insert("org.example.Node".into(), props);
        ifaces.insert("org.example.Empty".into(), Props::new());
        (format!("/n/{i}"), ifaces)
    });
    service.set_objects(objects);
    let file = bus.dir().join("listing.nmrec");
    let file = file.to_str().expect("a UTF-8 path");
    let live = run(netmirror(&[
        "--bus",
        bus.address(),
        "--json",
        "objects",
        "--service",
        SERVICE,
        "--record",
        file,
    ]))
    .json();
    assert_eq!(
        live.as_array().map(Vec::len),
        Some(5 * 4),
        "3 properties, 1 empty"
    );
    // The service gone: the recording alone.
    drop(service);
    let replayed = run(netmirror(&["--json", "objects", "--replay", file])).json();
    assert_eq!(sorted_rows(&replayed), sorted_rows(&live));
}

#[test]
fn a_recorded_networkmanager_activation_lists_its_objects() {
    let file = recordings().join("activation.nmrec");
    let rows = run(netmirror(&[
        "--json",
        "objects",
        "--replay",
        file.to_str().expect("a UTF-8 path"),
        "--interface",
        "org.freedesktop.NetworkManager.Device",
    ]))
    .json();
    let rows = rows.as_array().expect("array");
    let value = |path: &str, property: &str| {
        rows.iter()
            .find(|r| r["path"] == path && r["property"] == property)
            .map(|r| r["value"].clone())
    };
    // va0 activated (100) with its static profile; vb0, its peer, only available (30).
    let va0 = rows
        .iter()
        .find(|r| r["property"] == "Interface" && r["value"] == "va0")
        .and_then(|r| r["path"].as_str())
        .expect("va0");
    assert_eq!(value(va0, "State"), Some(Value::from(100)));
    let vb0 = rows
        .iter()
        .find(|r| r["property"] == "Interface" && r["value"] == "vb0")
        .and_then(|r| r["path"].as_str())
        .expect("vb0");
    assert_eq!(value(vb0, "State"), Some(Value::from(30)));
    assert!(
        rows.iter()
            .all(|r| r["interface"] == "org.freedesktop.NetworkManager.Device")
    );
}

#[test]
fn a_cut_recording_is_a_one_line_error() {
    let whole = std::fs::read(recordings().join("load.nmrec")).expect("the recording");
    let file = std::env::temp_dir().join(format!("netmirror-cut-{}.nmrec", std::process::id()));
    std::fs::write(&file, &whole[..whole.len() / 2]).expect("write");
    let out = run(netmirror(&[
        "objects",
        "--replay",
        file.to_str().expect("a UTF-8 path"),
    ]));
    let _ = std::fs::remove_file(&file);
    let line = out.fails(1);
    assert!(line.contains("recording truncated at byte"), "{line}");
    let out = run(netmirror(&[
        "objects",
        "--replay",
        "/nonexistent/recording",
    ]));
    let line = out.fails(1);
    assert!(
        line.contains("cannot read recording /nonexistent/recording"),
        "{line}"
    );
}
