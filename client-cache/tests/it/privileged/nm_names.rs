//! `netmirror-dbus-meta`'s typed NetworkManager values against the real daemon and the real
//! nmcli: each device's `DeviceType` and `State` (and the manager's `State` and
//! `Connectivity`), read from the daemon's own `GetAll` replies through the declarations and
//! shown with the typed keys' `Display`, print as `nmcli` prints them.
use std::collections::BTreeMap;
use std::time::Duration;

use netmirror_client_cache::testing::{NM_BUS_NAME, NetworkManagerDaemon, Profile};
use netmirror_dbus_meta::nm::{self, ActivationStateFlags};
use netmirror_dbus_meta::{Interface, Reader, Value};

use crate::support::bounded;

const LIMIT: Duration = Duration::from_secs(120);
const NM_PATH: &str = "/org/freedesktop/NetworkManager";

/// The declared properties of `path`'s `iface`, decoded from the daemon's `GetAll` reply body.
async fn get_all(
    conn: &zbus::Connection,
    path: &str,
    iface: &'static Interface,
) -> BTreeMap<&'static str, Value> {
    let reply = conn
        .call_method(
            Some(NM_BUS_NAME),
            path,
            Some("org.freedesktop.DBus.Properties"),
            "GetAll",
            &iface.name(),
        )
        .await
        .expect("GetAll");
    let body = reply.body();
    let mut reader = Reader::for_body(body.data());
    let end = reader.array(8).expect("an a{sv}");
    let mut out = BTreeMap::new();
    while reader.more(end, 8).expect("a well-formed a{sv}") {
        let name = reader.str().expect("a property name");
        let declared = iface.property(name);
        let value = reader
            .variant_expect(declared.map(|p| p.signature().as_bytes()))
            .expect("a well-formed variant");
        if let Some(property) = declared {
            let value = value.unwrap_or_else(|actual| panic!("{name}: sent as `{actual}`"));
            out.insert(property.name(), value);
        }
    }
    out
}

/// Per device `name:type:state` as nmcli would print it, from D-Bus and the typed values.
async fn ours(address: &str) -> (Vec<String>, String) {
    let conn = zbus::connection::Builder::address(address)
        .build()
        .await
        .expect("connect");
    let manager = get_all(&conn, NM_PATH, &nm::network_manager::IFACE).await;
    let state = nm::network_manager::STATE
        .get(&manager[nm::network_manager::STATE.name()])
        .expect("a u");
    let connectivity = nm::network_manager::CONNECTIVITY
        .get(&manager[nm::network_manager::CONNECTIVITY.name()])
        .expect("a u");
    let general = format!("{state}:{connectivity}");
    let devices = nm::network_manager::ALL_DEVICES
        .get(&manager[nm::network_manager::ALL_DEVICES.name()])
        .expect("an ao")
        .to_vec();
    let mut lines = Vec::new();
    for path in devices {
        let device = get_all(&conn, &path, &nm::device::IFACE).await;
        let get = |name: &str| &device[name];
        let iface = nm::device::INTERFACE
            .get(get(nm::device::INTERFACE.name()))
            .expect("an s");
        let kind = nm::device::DEVICE_TYPE
            .get(get(nm::device::DEVICE_TYPE.name()))
            .expect("a u");
        let state = nm::device::STATE
            .get(get(nm::device::STATE.name()))
            .expect("a u");
        // nmcli names the states of an externally activated device apart.
        let active = nm::device::ACTIVE_CONNECTION
            .get(get(nm::device::ACTIVE_CONNECTION.name()))
            .filter(|path| *path != "/")
            .map(|path| path.to_string());
        let mut external = false;
        if let Some(active) = active {
            let ac = get_all(&conn, &active, &nm::connection_active::IFACE).await;
            if let Some(flags) = ac
                .get(nm::connection_active::STATE_FLAGS.name())
                .and_then(|v| nm::connection_active::STATE_FLAGS.get(v))
            {
                external = flags.contains(ActivationStateFlags::EXTERNAL);
            }
        }
        let shown = match state.name_external() {
            Some(name) if external => name.to_owned(),
            _ => state.to_string(),
        };
        lines.push(format!("{iface}:{kind}:{shown}"));
    }
    lines.sort();
    (lines, general)
}

/// What nmcli prints: the sorted `DEVICE:TYPE:STATE` lines and `STATE:CONNECTIVITY`.
fn theirs(nm: &NetworkManagerDaemon) -> (Vec<String>, String) {
    let run = |args: &[&str]| {
        let output = nm.nmcli().args(args).output().expect("run nmcli");
        assert!(output.status.success(), "nmcli {args:?}: {output:?}");
        String::from_utf8(output.stdout).expect("utf-8")
    };
    let mut lines: Vec<String> = run(&["-t", "-f", "DEVICE,TYPE,STATE", "device"])
        .lines()
        .map(|line| line.replace("\\:", ":"))
        .collect();
    lines.sort();
    let general = run(&["-t", "-f", "STATE,CONNECTIVITY", "general"])
        .trim()
        .to_owned();
    (lines, general)
}

#[test]
fn typed_nm_values_show_as_the_real_nmcli_does() {
    bounded(LIMIT, || {
        let nm = NetworkManagerDaemon::builder()
            .profile(Profile::bridge("names-bridge", "nbr0"))
            .profile(Profile::ethernet("names-veth", "nveth0"))
            .start()
            .unwrap();
        for args in [
            &[
                "link", "add", "nveth0", "type", "veth", "peer", "name", "nveth1",
            ][..],
            &["link", "set", "nveth1", "up"],
            &["link", "set", "nveth0", "up"],
        ] {
            let status = nm.netns_command("ip").args(args).status().expect("run ip");
            assert!(status.success(), "ip {args:?}");
        }
        let up = nm
            .nmcli()
            .args(["--wait", "20", "connection", "up", "names-bridge"])
            .output()
            .expect("run nmcli");
        assert!(up.status.success(), "activate the bridge: {up:?}");

        // States move while devices settle: compare a D-Bus reading taken between two equal
        // nmcli readings.
        let mut last = None;
        for _ in 0..40 {
            let before = theirs(&nm);
            let ours = zbus::block_on(ours(nm.bus_address()));
            let after = theirs(&nm);
            if before == after {
                last = Some((ours, after));
                if last.as_ref().is_some_and(|(o, t)| o == t) {
                    break;
                }
            }
            std::thread::sleep(Duration::from_millis(250));
        }
        let (ours, theirs) = last.expect("nmcli gave two equal readings in a row");
        eprintln!("nmcli: {theirs:#?}");
        assert_eq!(ours, theirs);
        // The reading covers the kinds of device and state this fixture makes.
        let types: Vec<&str> = theirs
            .0
            .iter()
            .filter_map(|l| l.split(':').nth(1))
            .collect();
        for kind in ["loopback", "bridge", "ethernet"] {
            assert!(types.contains(&kind), "no {kind} device in {theirs:?}");
        }
        assert!(
            theirs.0.iter().any(|l| l.ends_with(":connected")),
            "no connected device in {theirs:?}"
        );
    });
}
