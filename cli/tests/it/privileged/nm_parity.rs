//! nmcli parity of the changing `nm` commands: each command runs on one fresh sandbox and
//! nmcli's equivalent on another, both seeded with the same keyfile, and afterwards both hold
//! the same profiles (`GetSettings` of every profile, read with `busctl`) and the same kernel
//! state (`ip -j link/addr/route` in each sandbox's namespace).
//!
//! What legitimately differs between two sandboxes is normalized, and only that:
//! - `connection.uuid` of a profile that a command created (a fresh random UUID on each side;
//!   the seeded profile keeps its keyfile's UUID, compared as is);
//! - `connection.timestamp`, the second of the last activation: compared as set or unset;
//! - link MAC addresses and interface indexes (each sandbox makes its own veth pair, with
//!   random MACs, and its own namespace numbering);
//! - IPv6 link-local addresses (`fe80::/64` host addresses, and their `local` routes): derived
//!   from the random MAC or from the daemon's own secret, so never equal across sandboxes.
//!   The `fe80::/64` route itself is compared.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;
use std::time::{Duration, Instant};

use netmirror_client_cache::testing::NetworkManagerDaemon;
use serde_json::Value;

use crate::support::{Run, netmirror, run};

/// The UUID of the seeded profile `s1`, the same in both sandboxes.
const SEEDED_UUID: &str = "6f1d6a4e-2c1b-4f53-9a57-3b0c9e1f7a10";

/// The seeded static profile on `va0`, as a keyfile.
const S1: &str = "[connection]\nid=s1\nuuid=6f1d6a4e-2c1b-4f53-9a57-3b0c9e1f7a10\n\
type=ethernet\ninterface-name=va0\nautoconnect=false\n\n[ethernet]\n\n[ipv4]\n\
method=manual\naddress1=192.0.2.1/24,192.0.2.254\ndns=192.0.2.53;\n\
route1=198.51.100.0/24,192.0.2.2\n\n[ipv6]\nmethod=manual\naddress1=2001:db8:1::1/64\n\
addr-gen-mode=eui64\n";

/// A daemon managing the veth pair `va0`/`vb0` (both available), with `s1` loaded from its
/// keyfile.
pub(super) fn sandbox() -> NetworkManagerDaemon {
    let nm = super::nm_actions::daemon();
    let path = nm.keyfile_dir().join("s1.nmconnection");
    std::fs::write(&path, S1).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    nmcli_ok(&nm, &["connection", "load", path.to_str().unwrap()]);
    assert!(profiles(&nm).contains_key("s1"), "s1 not loaded");
    nm
}

fn nmcli_text(nm: &NetworkManagerDaemon, args: &[&str]) -> String {
    let out = nm.nmcli().args(args).output().expect("nmcli");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Runs nmcli, asserting success.
#[track_caller]
pub(super) fn nmcli_ok(nm: &NetworkManagerDaemon, args: &[&str]) {
    let out = nm.nmcli().args(args).output().expect("nmcli");
    assert!(out.status.success(), "nmcli {args:?}: {out:?}");
}

pub(super) fn ours(nm: &NetworkManagerDaemon, args: &[&str]) -> Run {
    let mut full = vec!["--bus", nm.bus_address()];
    full.extend_from_slice(args);
    run(netmirror(&full))
}

/// `busctl --json=short call NM PATH IFACE METHOD` on the sandbox's bus: the reply's `data`.
fn busctl(nm: &NetworkManagerDaemon, path: &str, iface: &str, method: &str) -> Value {
    let mut command: Command = nm.bus().command("busctl");
    let out = command
        .args([
            "--system",
            "--json=short",
            "call",
            "org.freedesktop.NetworkManager",
            path,
            iface,
            method,
        ])
        .output()
        .expect("busctl");
    assert!(out.status.success(), "busctl {path} {method}: {out:?}");
    let reply: Value = serde_json::from_slice(&out.stdout).expect("busctl JSON");
    reply["data"][0].clone()
}

/// Every profile's `GetSettings`, by `connection.id`, as `busctl` decodes it (type-tagged
/// values), normalized as the module says.
pub(super) fn profiles(nm: &NetworkManagerDaemon) -> BTreeMap<String, Value> {
    let paths = busctl(
        nm,
        "/org/freedesktop/NetworkManager/Settings",
        "org.freedesktop.NetworkManager.Settings",
        "ListConnections",
    );
    let mut out = BTreeMap::new();
    for path in paths.as_array().expect("ao") {
        let mut settings = busctl(
            nm,
            path.as_str().unwrap(),
            "org.freedesktop.NetworkManager.Settings.Connection",
            "GetSettings",
        );
        let connection = settings["connection"].as_object_mut().expect("connection");
        let id = connection["id"]["data"].as_str().unwrap().to_owned();
        let uuid = connection["uuid"]["data"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        assert_eq!(uuid.len(), 36, "{id}: uuid {uuid:?}");
        if uuid != SEEDED_UUID {
            connection.insert("uuid".into(), Value::from("<created>"));
        }
        if let Some(ts) = connection.get("timestamp") {
            let set = ts["data"].as_u64().unwrap_or(0) > 0;
            connection.insert("timestamp".into(), Value::from(set));
        }
        out.insert(id, settings);
    }
    out
}

/// Profile `id`'s normalized `GetSettings`, without its `connection.id` (to compare two
/// profiles made from the same words under two names).
#[track_caller]
pub(super) fn settings_of(nm: &NetworkManagerDaemon, id: &str) -> Value {
    let mut settings = profiles(nm)
        .remove(id)
        .unwrap_or_else(|| panic!("no profile {id}"));
    settings["connection"]
        .as_object_mut()
        .expect("connection")
        .remove("id");
    settings
}

fn ip_json(nm: &NetworkManagerDaemon, args: &[&str]) -> Vec<Value> {
    let out = nm.netns_command("ip").args(args).output().unwrap();
    assert!(out.status.success(), "ip {args:?}: {out:?}");
    serde_json::from_slice::<Value>(&out.stdout)
        .ok()
        .and_then(|v| v.as_array().cloned())
        .unwrap_or_default()
}

fn field(v: &Value, key: &str) -> String {
    match &v[key] {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The kernel state of the sandbox's namespace, one line per link, address and route,
/// normalized as the module says.
pub(super) fn kernel(nm: &NetworkManagerDaemon) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for link in ip_json(nm, &["-j", "link", "show"]) {
        let mut flags: Vec<String> = link["flags"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|f| f.as_str().map(str::to_owned))
            .collect();
        flags.sort();
        out.insert(format!(
            "link {} flags {} mtu {} operstate {}",
            field(&link, "ifname"),
            flags.join(","),
            field(&link, "mtu"),
            field(&link, "operstate")
        ));
    }
    for link in ip_json(nm, &["-j", "addr", "show"]) {
        for a in link["addr_info"].as_array().into_iter().flatten() {
            let local = field(a, "local");
            if local.starts_with("fe80:") {
                continue;
            }
            out.insert(format!(
                "addr {} {} {}/{} scope {}",
                field(&link, "ifname"),
                field(a, "family"),
                local,
                field(a, "prefixlen"),
                field(a, "scope")
            ));
        }
    }
    for family in ["-4", "-6"] {
        for r in ip_json(nm, &[family, "-j", "route", "show", "table", "all"]) {
            let dst = field(&r, "dst");
            if dst.starts_with("fe80:") && dst != "fe80::/64" {
                continue;
            }
            out.insert(format!(
                "route {family} {} {dst} via {} dev {} proto {} scope {} table {} metric {} src {}",
                field(&r, "type"),
                field(&r, "gateway"),
                field(&r, "dev"),
                field(&r, "protocol"),
                field(&r, "scope"),
                field(&r, "table"),
                field(&r, "metric"),
                field(&r, "prefsrc"),
            ));
        }
    }
    out
}

/// Device states as nmcli lists them (the daemon's view of the devices).
fn devices(nm: &NetworkManagerDaemon) -> BTreeSet<String> {
    nmcli_text(nm, &["-t", "-f", "DEVICE,STATE,CONNECTION", "device"])
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Waits (up to 15 s) until both sandboxes show the same profiles, kernel state and device
/// states, then asserts that they do, and that `want` (kernel lines) holds in both and
/// `unwanted` in neither: two sandboxes that both failed to act are not a pass.
#[track_caller]
fn assert_same(
    step: &str,
    a: &NetworkManagerDaemon,
    b: &NetworkManagerDaemon,
    want: &[&str],
    unwanted: &[&str],
) {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let (ka, kb) = (kernel(a), kernel(b));
        let (pa, pb) = (profiles(a), profiles(b));
        let (da, db) = (devices(a), devices(b));
        let expected = want.iter().all(|w| ka.contains(*w) && kb.contains(*w))
            && unwanted
                .iter()
                .all(|u| !ka.contains(*u) && !kb.contains(*u));
        if (ka == kb && pa == pb && da == db && expected) || Instant::now() > deadline {
            for w in want {
                assert!(ka.contains(*w), "{step}: ours lacks {w}: {ka:#?}");
                assert!(kb.contains(*w), "{step}: nmcli's lacks {w}: {kb:#?}");
            }
            for u in unwanted {
                assert!(!ka.contains(*u), "{step}: ours still has {u}");
                assert!(!kb.contains(*u), "{step}: nmcli's still has {u}");
            }
            let only_a: Vec<_> = ka.difference(&kb).collect();
            let only_b: Vec<_> = kb.difference(&ka).collect();
            assert!(
                only_a.is_empty() && only_b.is_empty(),
                "{step}: kernel differs: only after netmirror {only_a:#?}, only after nmcli \
                 {only_b:#?}"
            );
            assert_eq!(pa, pb, "{step}: profiles differ (netmirror, nmcli)");
            assert_eq!(da, db, "{step}: device states differ (netmirror, nmcli)");
            return;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

const V4: &str = "addr va0 inet 192.0.2.1/24 scope global";
const V6: &str = "addr va0 inet6 2001:db8:1::1/64 scope global";
const EXTRA: &str = "addr va0 inet 192.0.2.9/24 scope global";

#[test]
fn each_command_leaves_what_nmcli_leaves() {
    let a = sandbox();
    let b = sandbox();
    assert_same("seeded", &a, &b, &[], &[V4]);

    ours(&a, &["nm", "connection", "up", "s1"]).ok();
    nmcli_ok(&b, &["connection", "up", "s1"]);
    assert_same("connection up", &a, &b, &[V4, V6], &[]);
    assert!(
        kernel(&a)
            .iter()
            .any(|l| l.contains("198.51.100.0/24 via 192.0.2.2 dev va0")),
        "the profile's route: {:#?}",
        kernel(&a)
    );

    // reapply: the same change to the profile on both sides, then each side's reapply.
    for nm in [&a, &b] {
        nmcli_ok(
            nm,
            &[
                "connection",
                "modify",
                "s1",
                "+ipv4.addresses",
                "192.0.2.9/24",
            ],
        );
    }
    ours(&a, &["nm", "device", "reapply", "va0"]).ok();
    nmcli_ok(&b, &["device", "reapply", "va0"]);
    assert_same("device reapply", &a, &b, &[V4, V6, EXTRA], &[]);

    ours(&a, &["nm", "connection", "down", "s1"]).ok();
    nmcli_ok(&b, &["connection", "down", "s1"]);
    assert_same("connection down", &a, &b, &[], &[V4, V6, EXTRA]);

    ours(&a, &["nm", "device", "connect", "va0"]).ok();
    nmcli_ok(&b, &["device", "connect", "va0"]);
    assert_same("device connect", &a, &b, &[V4, V6, EXTRA], &[]);

    // A checkpoint, a break, a rollback; nmcli has no checkpoints: its equivalent is to undo
    // the break by hand (connect again).
    ours(&a, &["nm", "checkpoint", "create", "va0"]).ok();
    ours(&a, &["nm", "device", "disconnect", "va0"]).ok();
    nmcli_ok(&b, &["device", "disconnect", "va0"]);
    assert_same("device disconnect", &a, &b, &[], &[V4, V6, EXTRA]);
    ours(&a, &["nm", "checkpoint", "rollback"]).ok();
    nmcli_ok(&b, &["device", "connect", "va0"]);
    assert_same("checkpoint rollback", &a, &b, &[V4, V6, EXTRA], &[]);

    ours(&a, &["nm", "device", "set", "vb0", "managed", "no"]).ok();
    nmcli_ok(&b, &["device", "set", "vb0", "managed", "no"]);
    assert_same("device set managed no", &a, &b, &[V4], &[]);
    assert!(devices(&a).iter().any(|d| d.starts_with("vb0:unmanaged")));
    ours(&a, &["nm", "device", "set", "vb0", "managed", "yes"]).ok();
    nmcli_ok(&b, &["device", "set", "vb0", "managed", "yes"]);
    assert_same("device set managed yes", &a, &b, &[V4], &[]);

    ours(&a, &["nm", "networking", "off"]).ok();
    nmcli_ok(&b, &["networking", "off"]);
    assert_same("networking off", &a, &b, &[], &[V4, V6]);
    ours(&a, &["nm", "networking", "on"]).ok();
    nmcli_ok(&b, &["networking", "on"]);
    // Networking on brings up what autoconnects: s1 does not, so nothing comes back.
    assert_same("networking on", &a, &b, &[], &[]);

    // add and modify: the same words, the same profile (GetSettings).
    let add = [
        "type",
        "ethernet",
        "ifname",
        "vb0",
        "con-name",
        "p2",
        "autoconnect",
        "no",
        "ip4",
        "198.51.100.7/24",
        "gw4",
        "198.51.100.254",
        "ipv6.method",
        "disabled",
        "ethernet.mtu",
        "1400",
        "mac",
        "02:00:00:00:00:07",
    ];
    let mut args = vec!["nm", "connection", "add"];
    args.extend_from_slice(&add);
    ours(&a, &args).ok();
    let mut args = vec!["connection", "add"];
    args.extend_from_slice(&add);
    nmcli_ok(&b, &args);
    assert_same("connection add", &a, &b, &[], &[]);
    assert!(profiles(&a).contains_key("p2"));
    let change = [
        "+ipv4.addresses",
        "198.51.100.8/24",
        "ipv4.dns",
        "198.51.100.53",
        "ipv4.routes",
        "203.0.113.0/24 198.51.100.1 50",
        "ipv6.method",
        "manual",
        "ip6",
        "2001:db8:2::7/64",
        "connection.autoconnect-priority",
        "5",
    ];
    let mut args = vec!["nm", "connection", "modify", "p2"];
    args.extend_from_slice(&change);
    ours(&a, &args).ok();
    let mut args = vec!["connection", "modify", "p2"];
    args.extend_from_slice(&change);
    nmcli_ok(&b, &args);
    assert_same("connection modify", &a, &b, &[], &[]);

    ours(&a, &["nm", "connection", "delete", "p2"]).ok();
    nmcli_ok(&b, &["connection", "delete", "p2"]);
    assert_same("connection delete", &a, &b, &[], &[]);
    assert!(!profiles(&a).contains_key("p2"));
}

/// nmcli's answer to `args` on `nm`: its exit status and first stderr line.
fn nmcli_refusal(nm: &NetworkManagerDaemon, args: &[&str]) -> (i32, String) {
    let out = nm.nmcli().args(args).output().expect("nmcli");
    let stderr = String::from_utf8_lossy(&out.stderr);
    (
        out.status.code().unwrap_or(-1),
        stderr.lines().next().unwrap_or_default().to_owned(),
    )
}

#[test]
fn shared_aliases_are_resolved_by_type_and_refused_when_ambiguous_as_nmcli() {
    let nm = sandbox();
    let before = profiles(&nm);
    // `mac` on a bridge: both 802-3-ethernet and bridge have one. nmcli refuses it (status
    // 2, "Error: 'mac' is ambiguous (...)."); netmirror refuses it with the same words
    // (status 1, as every invalid setting), before anything is sent.
    let cases: &[&[&str]] = &[
        &[
            "type",
            "bridge",
            "ifname",
            "br7",
            "con-name",
            "b7",
            "mac",
            "02:00:00:00:00:03",
        ],
        &[
            "type", "ethernet", "ifname", "q0", "con-name", "e7", "id", "5",
        ],
        &[
            "type",
            "loopback",
            "ifname",
            "lo",
            "con-name",
            "l7",
            "mac",
            "02:00:00:00:00:03",
        ],
    ];
    for words in cases {
        let mut args = vec!["connection", "add"];
        args.extend_from_slice(words);
        let (status, theirs) = nmcli_refusal(&nm, &args);
        assert_eq!(status, 2, "nmcli {args:?}: {theirs}");
        let mut args = vec!["nm", "connection", "add"];
        args.extend_from_slice(words);
        let ours = self::ours(&nm, &args);
        let ours = ours.fails(1).trim_end().trim_start_matches("netmirror: ");
        assert_eq!(format!("Error: {ours}."), theirs, "{words:?}");
    }
    assert_eq!(profiles(&nm), before, "a refused add changed the profiles");

    // modify of a bridge profile: the same refusal; nothing changes.
    nmcli_ok(
        &nm,
        &[
            "connection",
            "add",
            "type",
            "bridge",
            "ifname",
            "br8",
            "con-name",
            "b8",
        ],
    );
    let before = profiles(&nm);
    let (_, theirs) = nmcli_refusal(
        &nm,
        &["connection", "modify", "b8", "mac", "02:00:00:00:00:08"],
    );
    let ours_run = ours(
        &nm,
        &[
            "nm",
            "connection",
            "modify",
            "b8",
            "mac",
            "02:00:00:00:00:08",
        ],
    );
    let ours_line = ours_run
        .fails(1)
        .trim_end()
        .trim_start_matches("netmirror: ");
    assert_eq!(format!("Error: {ours_line}."), theirs);
    assert_eq!(profiles(&nm), before);

    // Where the type has one such setting, the alias names it: as nmcli, by GetSettings.
    for (kind, ifname, alias, value) in [
        ("bond", "bond7", "mac", "02:00:00:00:00:04"),
        ("loopback", "lo", "mtu", "1300"),
        ("bridge", "br9", "mtu", "1400"),
    ] {
        let (o, t) = (format!("ours-{kind}"), format!("theirs-{kind}"));
        ours(
            &nm,
            &[
                "nm",
                "connection",
                "add",
                "type",
                kind,
                "ifname",
                ifname,
                "con-name",
                &o,
                "autoconnect",
                "no",
                alias,
                value,
            ],
        )
        .ok();
        nmcli_ok(
            &nm,
            &[
                "connection",
                "add",
                "type",
                kind,
                "ifname",
                ifname,
                "con-name",
                &t,
                "autoconnect",
                "no",
                alias,
                value,
            ],
        );
        assert_eq!(settings_of(&nm, &o), settings_of(&nm, &t), "{kind} {alias}");
    }
}
