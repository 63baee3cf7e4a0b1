//! Live conformance of `netmirror-dbus-meta`'s NetworkManager declarations: the real daemon,
//! seeded with bond, vlan, bridge and ethernet profiles (the bridge activated) and given a veth
//! pair, is introspected object by object from `/`, and every property, method and signal it
//! exports on a declared interface must have the declared signature. What the daemon has and
//! the metadata lacks is reported, not failed (the daemon is 1.42, older than the XML the
//! metadata follows).
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use netmirror_client_cache::testing::{NM_BUS_NAME, NetworkManagerDaemon, Profile};
use netmirror_dbus_meta::nm;
use zbus_xml::{ArgDirection, Node};

use crate::support::bounded;

const LIMIT: Duration = Duration::from_secs(120);

/// Walks at most this many objects, so a misbehaving tree cannot loop forever.
const MAX_OBJECTS: usize = 10_000;

#[derive(Default)]
struct Report {
    n_objects: usize,
    /// Declared interfaces seen, with how many objects had them.
    seen: BTreeMap<String, usize>,
    n_checked: usize,
    /// Declared members whose signature differs: these fail the test.
    mismatches: BTreeSet<String>,
    /// Members the daemon exports that the metadata lacks.
    undeclared: BTreeSet<String>,
    /// Interfaces the daemon exports that the metadata lacks.
    unknown_interfaces: BTreeSet<String>,
    /// Declared properties the daemon does not export (newer than the daemon).
    not_exported: BTreeSet<String>,
}

impl Report {
    fn check(&mut self, what: String, declared: Option<(String, String)>) {
        match declared {
            Some((ours, theirs)) if ours == theirs => self.n_checked += 1,
            Some((ours, theirs)) => {
                self.mismatches
                    .insert(format!("{what}: declared `{ours}`, daemon has `{theirs}`"));
            }
            None => {
                self.undeclared.insert(what);
            }
        }
    }

    fn check_node(&mut self, node: &Node<'_>) {
        for iface in node.interfaces() {
            let name = iface.name().to_string();
            let Some(ours) = nm::REGISTRY.interface(&name) else {
                self.unknown_interfaces.insert(name);
                continue;
            };
            *self.seen.entry(name.clone()).or_default() += 1;
            for declared in ours.properties() {
                if !iface
                    .properties()
                    .any(|p| p.name().as_str() == declared.name())
                {
                    self.not_exported
                        .insert(format!("{name}.{}", declared.name()));
                }
            }
            for property in iface.properties() {
                let declared = ours.property(&property.name());
                let theirs = property.ty().to_string();
                let what = format!("{name}.{} (property)", property.name());
                self.check(what, declared.map(|p| (p.signature().to_owned(), theirs)));
            }
            for method in iface.methods() {
                let (mut inputs, mut outputs) = (String::new(), String::new());
                for arg in method.args() {
                    let sig = arg.ty().to_string();
                    match arg.direction() {
                        Some(ArgDirection::Out) => outputs.push_str(&sig),
                        _ => inputs.push_str(&sig),
                    }
                }
                let declared = ours.method(&method.name());
                let what = format!("{name}.{} (method)", method.name());
                self.check(
                    what,
                    declared.map(|m| {
                        (
                            format!("{} -> {}", m.inputs(), m.outputs()),
                            format!("{inputs} -> {outputs}"),
                        )
                    }),
                );
            }
            for signal in iface.signals() {
                let sig: String = signal
                    .args()
                    .iter()
                    .map(|arg| arg.ty().to_string())
                    .collect();
                let declared = ours.signal(&signal.name());
                let what = format!("{name}.{} (signal)", signal.name());
                self.check(what, declared.map(|s| (s.signature().to_owned(), sig)));
            }
        }
    }
}

async fn introspect(conn: &zbus::Connection, path: &str) -> Node<'static> {
    let reply = conn
        .call_method(
            Some(NM_BUS_NAME),
            path,
            Some("org.freedesktop.DBus.Introspectable"),
            "Introspect",
            &(),
        )
        .await
        .unwrap_or_else(|err| panic!("Introspect {path}: {err}"));
    let xml: String = reply
        .body()
        .deserialize()
        .expect("Introspect returns a string");
    Node::from_reader(xml.as_bytes()).unwrap_or_else(|err| panic!("XML of {path}: {err}"))
}

/// Introspects every object the daemon exports, starting from `/`.
async fn walk(address: &str) -> Report {
    let conn = zbus::connection::Builder::address(address)
        .build()
        .await
        .expect("connect to the private bus");
    let mut report = Report::default();
    let mut pending = vec!["/".to_owned()];
    while let Some(path) = pending.pop() {
        report.n_objects += 1;
        assert!(
            report.n_objects <= MAX_OBJECTS,
            "more than {MAX_OBJECTS} objects"
        );
        let node = introspect(&conn, &path).await;
        report.check_node(&node);
        for child in node.nodes() {
            let Some(name) = child.name() else { continue };
            let child_path = if path == "/" {
                format!("/{name}")
            } else {
                format!("{path}/{name}")
            };
            pending.push(child_path);
        }
    }
    report
}

/// Best effort: activating gives an active connection (and its objects) to introspect too.
/// A device the daemon has only just seen may not be available yet, so it tries a few times.
fn activate(nm: &NetworkManagerDaemon, profile: &str) {
    let mut last_error = String::new();
    for _ in 0..5 {
        let output = nm
            .nmcli()
            .args(["--wait", "20", "connection", "up", profile])
            .output()
            .expect("run nmcli");
        if output.status.success() {
            return;
        }
        last_error = String::from_utf8_lossy(&output.stderr).trim().to_owned();
        std::thread::sleep(Duration::from_millis(500));
    }
    eprintln!("could not activate {profile} (its objects are not introspected): {last_error}");
}

#[test]
fn introspected_signatures_match_the_metadata() {
    bounded(LIMIT, || {
        let nm = NetworkManagerDaemon::builder()
            .profile(Profile::bond("conf-bond", "cbond0"))
            .profile(Profile::vlan("conf-vlan", "cbond0.7", "cbond0", 7))
            .profile(Profile::bridge("conf-bridge", "cbr0"))
            .profile(Profile::ethernet("conf-veth", "cveth0"))
            .start()
            .unwrap();
        for args in [
            &[
                "link", "add", "cveth0", "type", "veth", "peer", "name", "cveth1",
            ][..],
            &["link", "set", "cveth1", "up"],
            &["link", "set", "cveth0", "up"],
        ] {
            let status = nm.netns_command("ip").args(args).status().expect("run ip");
            assert!(status.success(), "ip {args:?}");
        }
        // The sandbox leaves the veth pair unmanaged; its devices are introspected all the same.
        activate(&nm, "conf-bridge");

        let report = zbus::block_on(walk(nm.bus_address()));

        // The comparison itself catches a difference.
        let mut probe = Report::default();
        probe.check("probe".to_owned(), Some(("u".to_owned(), "s".to_owned())));
        probe.check("probe2".to_owned(), None);
        assert_eq!(
            (
                probe.mismatches.len(),
                probe.undeclared.len(),
                probe.n_checked
            ),
            (1, 1, 0)
        );

        eprintln!(
            "introspected {} objects; {} members match the metadata",
            report.n_objects, report.n_checked
        );
        for (iface, n_objects) in &report.seen {
            eprintln!("  {iface}: {n_objects} object(s)");
        }
        for member in &report.undeclared {
            eprintln!("exported by the daemon, not in the metadata: {member}");
        }
        for iface in &report.unknown_interfaces {
            eprintln!("interface not in the metadata: {iface}");
        }
        for property in &report.not_exported {
            eprintln!("declared, not exported by this (older) daemon: {property}");
        }
        assert!(
            report.mismatches.is_empty(),
            "declared signatures differ from the daemon's:\n{}",
            report
                .mismatches
                .iter()
                .cloned()
                .collect::<Vec<_>>()
                .join("\n")
        );

        // The walk reached the objects the seeded profiles make.
        for iface in [
            "org.freedesktop.NetworkManager",
            "org.freedesktop.NetworkManager.Settings",
            "org.freedesktop.NetworkManager.Settings.Connection",
            "org.freedesktop.NetworkManager.Device",
            "org.freedesktop.NetworkManager.Device.Bond",
            "org.freedesktop.NetworkManager.Device.Vlan",
            "org.freedesktop.NetworkManager.Device.Bridge",
            "org.freedesktop.NetworkManager.Device.Veth",
        ] {
            assert!(report.seen.contains_key(iface), "no object with {iface}");
        }
        assert_eq!(
            report.seen["org.freedesktop.NetworkManager.Settings.Connection"],
            4
        );
        // Most of what the daemon exports is declared and checked.
        assert!(
            report.n_checked > 150,
            "only {} members checked",
            report.n_checked
        );
        // Only the standard D-Bus interfaces are unknown to the metadata.
        for iface in &report.unknown_interfaces {
            assert!(
                iface.starts_with("org.freedesktop.DBus."),
                "undeclared NM interface {iface}"
            );
        }
    });
}
