//! One cache follows the real NetworkManager through a change sequence: activations, changes
//! made behind NetworkManager's back in the kernel (addresses, routes, MTU, carrier, a MAC
//! address, links that come and go), profile edits, switches of the daemon. After every
//! step the cache's objects equal `GetManagedObjects` read on a second connection, property
//! by property, and every profile's settings equal `GetSettings` read there.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use netmirror_client_cache::{
    ObjectCache, Value,
    nm::NmClient,
    testing::{NM_BUS_NAME, NetworkManagerDaemon, Profile},
};
use zbus::OwnedVariant;

use crate::replay::{Flat, Managed, canon, flat_cache, flat_managed};
use crate::support::bounded;

const LIMIT: Duration = Duration::from_secs(420);
/// How long without a message counts as settled.
const QUIET: Duration = Duration::from_millis(400);
/// How many times a step's comparison is made again while the daemon is still busy (a
/// transition under way when `GetManagedObjects` was answered) before a difference counts.
const ROUNDS: usize = 10;

/// A profile's settings as comparable text: `group.key` → value.
type Settings = BTreeMap<String, String>;

/// Reads what the daemon holds now on a second connection: every object, and the settings
/// of every profile.
async fn truth(conn: &zbus::Connection) -> (Flat, BTreeMap<String, Settings>) {
    let reply = super::get_managed_objects(conn).await;
    let managed: Managed = reply.body().deserialize().expect("a{oa{sa{sv}}}");
    let mut settings = BTreeMap::new();
    for (path, interfaces) in &managed {
        if !interfaces.contains_key("org.freedesktop.NetworkManager.Settings.Connection") {
            continue;
        }
        // A profile deleted since GetManagedObjects: the next round sees it gone.
        let Ok(reply) = conn
            .call_method(
                Some(NM_BUS_NAME),
                path.as_str(),
                Some("org.freedesktop.NetworkManager.Settings.Connection"),
                "GetSettings",
                &(),
            )
            .await
        else {
            continue;
        };
        let groups: HashMap<String, HashMap<String, OwnedVariant>> =
            reply.body().deserialize().expect("a{sa{sv}}");
        let mut flat = Settings::new();
        for (group, keys) in &groups {
            for (key, value) in keys {
                let value = Value::try_from(value).expect("a value of D-Bus");
                flat.insert(format!("{group}.{key}"), canon(&value));
            }
        }
        settings.insert(path.to_string(), flat);
    }
    (flat_managed(&managed), settings)
}

/// The settings the cache fetched for each profile, in the shape of [`truth`]'s.
fn cached_settings(cache: &ObjectCache) -> BTreeMap<String, Settings> {
    let text = |value: &Value| match value {
        Value::Str(text) => text.to_string(),
        other => canon(other),
    };
    cache
        .objects()
        .filter_map(|object| {
            let Value::Dict(groups) = object.fetched()? else {
                return None;
            };
            let mut flat = Settings::new();
            for (group, keys) in &groups.entries {
                let Value::Dict(keys) = keys else { continue };
                for (key, value) in &keys.entries {
                    let value = match value {
                        Value::Variant(inner) => inner,
                        other => other,
                    };
                    flat.insert(format!("{}.{}", text(group), text(key)), canon(value));
                }
            }
            Some((object.path().to_owned(), flat))
        })
        .collect()
}

/// Until `QUIET` passes without an event.
async fn settle(cache: &mut ObjectCache) {
    cache.take_events();
    while cache.next_event_timeout(QUIET).await.is_some() {}
}

/// What differs between the cache and the daemon, as lines (empty when nothing does).
fn differences(
    ours: &(Flat, BTreeMap<String, Settings>),
    theirs: &(Flat, BTreeMap<String, Settings>),
) -> Vec<String> {
    let mut lines = Vec::new();
    for path in ours.0.keys().chain(theirs.0.keys()) {
        match (ours.0.get(path), theirs.0.get(path)) {
            (Some(mine), Some(real)) if mine != real => {
                for iface in mine.keys().chain(real.keys()) {
                    let (mine, real) = (mine.get(iface), real.get(iface));
                    let props = mine
                        .into_iter()
                        .chain(real)
                        .flat_map(BTreeMap::keys)
                        .collect::<std::collections::BTreeSet<_>>();
                    for prop in props {
                        let (a, b) = (
                            mine.and_then(|p| p.get(prop)),
                            real.and_then(|p| p.get(prop)),
                        );
                        if a != b {
                            lines.push(format!("{path} {iface}.{prop}: ours {a:?}, daemon {b:?}"));
                        }
                    }
                }
            }
            (Some(_), None) => lines.push(format!("{path}: only in the cache")),
            (None, Some(_)) => lines.push(format!("{path}: only in GetManagedObjects")),
            _ => {}
        }
    }
    for (path, real) in &theirs.1 {
        match ours.1.get(path) {
            Some(mine) if mine != real => {
                for key in mine.keys().chain(real.keys()) {
                    if mine.get(key) != real.get(key) {
                        lines.push(format!(
                            "{path} settings {key}: ours {:?}, daemon {:?}",
                            mine.get(key),
                            real.get(key)
                        ));
                    }
                }
            }
            None => lines.push(format!("{path}: settings not fetched")),
            _ => {}
        }
    }
    lines.sort();
    lines.dedup();
    lines
}

/// Runs one step: `nmcli ARGS` for a line that starts with `nmcli `, else `ip ARGS` in the
/// daemon's namespace.
fn step(nm: &NetworkManagerDaemon, line: &str) {
    let args: Vec<&str> = line.split_whitespace().collect();
    let out = match args.split_first() {
        Some((&"nmcli", rest)) => nm.nmcli().args(rest).output(),
        _ => nm.netns_command("ip").args(&args).output(),
    }
    .expect("run a step");
    if !out.status.success() && line == "nmcli networking off" && networking_disabled(nm) {
        // NetworkManager answers `Enable(false)` only once every device it took down has
        // reached `unmanaged` (`sleep_devices_check_empty`). Once in CI one never got there
        // (why is not known: the log below is printed to tell), the answer never came and
        // nmcli gave up after D-Bus's 25 s. Networking is off all the same, which is what
        // the step is for: the comparison that follows still holds the cache to the daemon.
        eprintln!(
            "{line}: {} (networking is off; the daemon did not answer)\n\
             NetworkManager's log ends with:\n{}",
            String::from_utf8_lossy(&out.stderr).trim(),
            log_tail(nm)
        );
        return;
    }
    assert!(
        out.status.success(),
        "{line}: {}\nNetworkManager's log ends with:\n{}",
        String::from_utf8_lossy(&out.stderr),
        log_tail(nm)
    );
}

/// Whether the daemon says networking is off (`nmcli general`'s `NETWORKING`).
fn networking_disabled(nm: &NetworkManagerDaemon) -> bool {
    let out = nm
        .nmcli()
        .args(["-t", "-f", "NETWORKING", "general"])
        .output()
        .expect("nmcli general");
    String::from_utf8_lossy(&out.stdout).trim() == "disabled"
}

/// The last lines of the daemon's log, to tell why a step failed.
fn log_tail(nm: &NetworkManagerDaemon) -> String {
    let log = nm.log();
    let lines: Vec<&str> = log.lines().collect();
    lines[lines.len().saturating_sub(120)..].join("\n")
}

/// Waits until nmcli shows `device` in `state` (nmcli's terse state, `disconnected`, ...).
fn wait_for_state(nm: &NetworkManagerDaemon, device: &str, state: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let out = nm
            .nmcli()
            .args(["-t", "-f", "DEVICE,STATE", "device"])
            .output()
            .expect("nmcli");
        if String::from_utf8_lossy(&out.stdout).contains(&format!("{device}:{state}")) {
            return;
        }
        assert!(Instant::now() < deadline, "{device} never {state}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test_log::test]
fn every_step_of_a_change_sequence_leaves_the_cache_equal_to_get_managed_objects() {
    bounded(LIMIT, || {
        let nm = NetworkManagerDaemon::builder()
            .manage_devices()
            .config("[logging]\nlevel=DEBUG\n")
            .profile(Profile::bridge("seq-bridge", "sbr0"))
            .start()
            .expect("start NetworkManager");
        for line in [
            "link add sa0 type veth peer name sb0",
            "link set sb0 up",
            "nmcli connection add type ethernet ifname sa0 con-name seq-static autoconnect no \
             ipv4.method manual ipv4.addresses 192.0.2.1/24 ipv4.gateway 192.0.2.254 \
             ipv6.method manual ipv6.addresses 2001:db8:5::1/64",
        ] {
            step(&nm, line);
        }
        wait_for_state(&nm, "sa0", "disconnected");
        let address = nm.bus_address().to_owned();
        let (conn, other) = zbus::block_on(async {
            let connect = || zbus::connection::Builder::address(address.as_str());
            (
                connect().build().await.expect("connect"),
                connect().build().await.expect("connect"),
            )
        });
        let mut cache =
            zbus::block_on(NmClient::builder().build_loaded(&conn)).expect("load NetworkManager");
        let steps = [
            "(load)",
            "nmcli --wait 30 connection up seq-static",
            // Behind NetworkManager's back: it sees the kernel change and shows it.
            "addr add 198.51.100.7/24 dev sa0",
            "-6 addr add 2001:db8:6::7/64 dev sa0 nodad",
            "route add 10.55.0.0/16 via 192.0.2.254 dev sa0",
            "link set sa0 mtu 1400",
            "link set sa0 address 02:00:00:00:5e:01",
            "addr del 198.51.100.7/24 dev sa0",
            // Carrier lost and back.
            "link set sb0 down",
            "link set sb0 up",
            // A profile edited, then applied.
            "nmcli connection modify seq-static ipv4.addresses 192.0.2.2/24 +ipv4.dns 192.0.2.53",
            "nmcli device reapply sa0",
            "nmcli connection modify seq-static connection.metered yes",
            // In memory only (unsaved, its file elsewhere), then saved again; a clone; a
            // reload of every file.
            "nmcli connection modify --temporary seq-static ipv4.dns 192.0.2.54",
            "nmcli connection modify seq-static ipv4.dns 192.0.2.55",
            "nmcli connection clone seq-static seq-clone",
            "nmcli connection reload",
            "nmcli connection delete seq-clone",
            "nmcli connection modify seq-static ipv4.route-metric 55 ipv6.route-metric 56",
            "nmcli device reapply sa0",
            "-6 addr add 2001:db8:6::8/64 dev sa0 nodad valid_lft 600 preferred_lft 300",
            // The link set down and up behind NetworkManager's back.
            "link set sa0 down",
            "link set sa0 up",
            "nmcli --wait 30 connection up seq-static",
            "nmcli device disconnect sa0",
            "nmcli --wait 30 connection up seq-static",
            // A software device realized by an activation, and links that come and go.
            "nmcli --wait 30 connection up seq-bridge",
            "link add sc0 type veth peer name sd0",
            "link set sd0 up",
            // A profile that activates by itself on the new link.
            "nmcli connection add type ethernet ifname sc0 con-name seq-auto autoconnect yes \
             ipv4.method manual ipv4.addresses 198.51.100.1/24 ipv6.method disabled",
            "link del sc0",
            "nmcli connection delete seq-auto",
            // The daemon's switches.
            "nmcli device set sa0 autoconnect no",
            "nmcli radio wifi off",
            "nmcli radio wifi on",
            "nmcli networking off",
            "nmcli networking on",
            "nmcli --wait 30 connection up seq-static",
            "nmcli device set sa0 managed no",
            "nmcli device set sa0 managed yes",
            "nmcli --wait 30 connection up seq-static",
            "nmcli --wait 30 connection up seq-bridge",
            "nmcli connection down seq-bridge",
            // Its file edited, and loaded again.
            "(rename seq-bridge seq-bridge-b)",
            "nmcli connection delete seq-bridge-b",
            "nmcli connection down seq-static",
            "nmcli connection delete seq-static",
            "link del sa0",
        ];
        let mut compared = 0;
        for line in steps {
            if let Some(rename) = line.strip_prefix("(rename ") {
                let (from, to) = rename.trim_end_matches(')').split_once(' ').unwrap();
                let file = nm.keyfile_dir().join(format!("{from}.nmconnection"));
                let text = std::fs::read_to_string(&file).expect("the profile's keyfile");
                let text = text.replace(&format!("id={from}\n"), &format!("id={to}\n"));
                std::fs::write(&file, text).expect("write the keyfile");
                step(&nm, &format!("nmcli connection load {}", file.display()));
            } else if line != "(load)" {
                step(&nm, line);
            }
            let mut rounds = 0;
            loop {
                let ours = zbus::block_on(async {
                    settle(&mut cache).await;
                    let theirs = truth(&other).await;
                    // Whatever was on its way when the daemon answered.
                    settle(&mut cache).await;
                    theirs
                });
                let mine = (flat_cache(&cache), cached_settings(&cache));
                let lines = differences(&mine, &ours);
                if lines.is_empty() {
                    compared += mine.0.values().flat_map(BTreeMap::values).count();
                    break;
                }
                rounds += 1;
                assert!(
                    rounds < ROUNDS,
                    "after `{line}`, {rounds} rounds:\n{}",
                    lines.join("\n")
                );
            }
        }
        assert_eq!(cache.diagnostics().warnings, 0);
        eprintln!("{} steps, {compared} interfaces compared", steps.len());
    });
}
