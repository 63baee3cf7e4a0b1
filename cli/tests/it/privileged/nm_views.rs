//! `nm general|device|connection|active` and `nm monitor` against a real NetworkManager that
//! manages veth devices: a static IPv4+IPv6 profile with a route and DNS, a DHCP profile
//! (DHCPv4 and DHCPv6) served by `dnsmasq` in a peer namespace, a bridge with a veth port,
//! and bond and VLAN profiles whose devices stay unrealized. Every field is compared with
//! `nmcli` on the same bus; the device state sequence of `nm monitor --json` with the
//! `PropertiesChanged` sequence that a second connection (`busctl monitor`) records; and every
//! value of `objects --json`, in every signature the lab's objects have (IP configurations,
//! DHCP options, DNS configuration), with `GetManagedObjects` read by `busctl`.

use std::collections::BTreeMap;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use netmirror_client_cache::testing::NetworkManagerDaemon;
use serde_json::Value;

use crate::support::{Monitor, Run, netmirror, run};

/// How long an event or an activation may take.
const TIMEOUT: Duration = Duration::from_secs(60);

/// Fields nmcli has that netmirror does not show: none for these devices. (`GENERAL.VENDOR`
/// and `GENERAL.PRODUCT` are not on the bus: libnm reads them from udev in nmcli's own
/// process. netmirror shows them, as `--`, where libnm finds none: a virtual interface, or a
/// name the client's namespace does not have, as here where the daemon has a namespace of
/// its own. A hardware device's are left out, since libnm shortens udev's strings by rules
/// netmirror does not reproduce; no hardware device is in this sandbox.)
const NOT_SHOWN: &[&str] = &[];

/// A process killed on drop (the peer namespace's holder, dnsmasq).
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// NetworkManager with veth0 (peer veth1 beside it) and veth2 (peer veth3 in a namespace of
/// its own with dnsmasq serving DHCP on 198.18.0.0/24 and DHCPv6 on 2001:db8:d::/64); the
/// profile `static` activated on veth0 and `dhcp` (IPv6 by DHCPv6) on veth2, the bridge
/// `bridge` (br0, 203.0.113.1/24) with veth1 as its port (`bridge-port`); `bond` (bond0) and
/// `vlan` (vlan7 on bond0) not activated, so their devices are the daemon's unrealized
/// placeholders.
struct Lab {
    nm: NetworkManagerDaemon,
    _dnsmasq: Killed,
    _peer: Killed,
}

#[track_caller]
fn ok(command: &mut Command) {
    let output = command.output().expect("run");
    assert!(output.status.success(), "{command:?}: {output:?}");
}

fn lab() -> Lab {
    let nm = NetworkManagerDaemon::builder()
        .manage_devices()
        .start()
        .expect("start NetworkManager");
    ok(nm.netns_command("ip").args([
        "link", "add", "veth0", "type", "veth", "peer", "name", "veth1",
    ]));
    ok(nm.netns_command("ip").args([
        "link", "add", "veth2", "type", "veth", "peer", "name", "veth3",
    ]));
    ok(nm.netns_command("ip").args(["link", "set", "veth1", "up"]));
    let peer = Killed(
        Command::new("unshare")
            .args(["--net", "sleep", "3600"])
            .stdin(Stdio::null())
            .spawn()
            .expect("unshare"),
    );
    let peer_pid = peer.0.id().to_string();
    // The new namespace exists once unshare has exec'd sleep.
    let deadline = Instant::now() + TIMEOUT;
    while std::fs::read_link(format!("/proc/{peer_pid}/ns/net")).ok()
        == std::fs::read_link("/proc/self/ns/net").ok()
    {
        assert!(Instant::now() < deadline, "no peer namespace");
        std::thread::sleep(Duration::from_millis(20));
    }
    ok(nm
        .netns_command("ip")
        .args(["link", "set", "veth3", "netns", &peer_pid]));
    let in_peer = |args: &[&str]| {
        let mut command = Command::new("nsenter");
        command
            .arg(format!("--target={peer_pid}"))
            .arg("--net")
            .arg("--");
        command.args(args);
        command
    };
    ok(&mut in_peer(&[
        "ip",
        "addr",
        "add",
        "198.18.0.1/24",
        "dev",
        "veth3",
    ]));
    // Without duplicate address detection, so that dnsmasq can bind it at once.
    ok(&mut in_peer(&[
        "ip",
        "-6",
        "addr",
        "add",
        "2001:db8:d::1/64",
        "dev",
        "veth3",
        "nodad",
    ]));
    ok(&mut in_peer(&["ip", "link", "set", "veth3", "up"]));
    let leases = nm.dir().join("dnsmasq.leases");
    let dnsmasq = Killed(
        in_peer(&[
            "dnsmasq",
            "--no-daemon",
            "--conf-file=/dev/null",
            "--port=0",
            "--interface=veth3",
            "--bind-interfaces",
            "--dhcp-range=198.18.0.10,198.18.0.20,255.255.255.0,1h",
            "--dhcp-option=option:dns-server,198.18.0.53",
            "--dhcp-option=option:domain-name,dhcp.example",
            "--dhcp-range=2001:db8:d::100,2001:db8:d::1ff,64,1h",
            "--dhcp-option=option6:dns-server,[2001:db8:d::53]",
            &format!("--dhcp-leasefile={}", leases.display()),
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("dnsmasq"),
    );
    wait_for(&nm, "veth0");
    wait_for(&nm, "veth1");
    wait_for(&nm, "veth2");
    ok(nm.nmcli().args([
        "connection",
        "add",
        "type",
        "ethernet",
        "ifname",
        "veth0",
        "con-name",
        "static",
        "autoconnect",
        "no",
        "ipv4.method",
        "manual",
        "ipv4.addresses",
        "192.0.2.1/24",
        "ipv4.gateway",
        "192.0.2.254",
        "ipv4.dns",
        "192.0.2.53",
        "ipv4.dns-search",
        "example.org",
        "ipv4.routes",
        "198.51.100.0/24 192.0.2.254 50",
        "ipv6.method",
        "manual",
        "ipv6.addresses",
        "2001:db8::1/64",
        "connection.metered",
        "yes",
    ]));
    ok(nm.nmcli().args([
        "connection",
        "add",
        "type",
        "ethernet",
        "ifname",
        "veth2",
        "con-name",
        "dhcp",
        "autoconnect",
        "no",
        "ipv4.method",
        "auto",
        "ipv4.dhcp-timeout",
        "30",
        "ipv6.method",
        "dhcp",
    ]));
    for args in [
        &[
            "type",
            "bridge",
            "ifname",
            "br0",
            "con-name",
            "bridge",
            "autoconnect",
            "no",
            "bridge.stp",
            "no",
            "ipv4.method",
            "manual",
            "ipv4.addresses",
            "203.0.113.1/24",
            "ipv6.method",
            "disabled",
        ][..],
        &[
            "type",
            "ethernet",
            "ifname",
            "veth1",
            "con-name",
            "bridge-port",
            "autoconnect",
            "no",
            "master",
            "br0",
            "slave-type",
            "bridge",
        ],
        &[
            "type",
            "bond",
            "ifname",
            "bond0",
            "con-name",
            "bond",
            "autoconnect",
            "no",
            "ipv4.method",
            "disabled",
            "ipv6.method",
            "disabled",
        ],
        &[
            "type",
            "vlan",
            "ifname",
            "vlan7",
            "dev",
            "bond0",
            "id",
            "7",
            "con-name",
            "vlan",
            "autoconnect",
            "no",
            "ipv4.method",
            "disabled",
            "ipv6.method",
            "disabled",
        ],
    ] {
        ok(nm.nmcli().arg("connection").arg("add").args(args));
    }
    for id in ["static", "dhcp", "bridge", "bridge-port"] {
        ok(nm.nmcli().args(["--wait", "60", "connection", "up", id]));
    }
    // IPv4 and IPv6 may both fail, so `dhcp` is up once either is (on a busy machine
    // DHCPv6 can come first): wait for both leases and their addresses.
    let deadline = Instant::now() + TIMEOUT;
    let leased = |shown: &str| {
        let has = |prefix: &str, value: &str| {
            shown
                .lines()
                .any(|line| line.starts_with(prefix) && line.contains(value))
        };
        has("IP4.ADDRESS", "198.18.0.")
            && has("IP6.ADDRESS", "2001:db8:d::")
            && has("DHCP4.OPTION", "ip_address")
            && has("DHCP6.OPTION", "dhcp6_name_servers")
    };
    while !leased(&nmcli(
        &nm,
        &["-t", "-f", "DHCP4,DHCP6,IP4,IP6", "device", "show", "veth2"],
    )) {
        assert!(
            Instant::now() < deadline,
            "no DHCPv4 and DHCPv6 leases on veth2: {}",
            nmcli(&nm, &["-t", "device", "show", "veth2"])
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    Lab {
        nm,
        _dnsmasq: dnsmasq,
        _peer: peer,
    }
}

/// Waits until the daemon manages `device` and could activate it (`disconnected`).
fn wait_for(nm: &NetworkManagerDaemon, device: &str) {
    let deadline = Instant::now() + TIMEOUT;
    let wanted = format!("{device}:disconnected");
    while !nmcli(nm, &["-t", "-f", "DEVICE,STATE", "device"])
        .lines()
        .any(|line| line == wanted)
    {
        assert!(
            Instant::now() < deadline,
            "NetworkManager never had {device} disconnected: {}",
            nmcli(nm, &["-t", "device"])
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// `nmcli ARGS` on the daemon's bus.
#[track_caller]
fn nmcli(nm: &NetworkManagerDaemon, args: &[&str]) -> String {
    let output = nm.nmcli().args(args).output().expect("run nmcli");
    assert!(
        output.status.success(),
        "nmcli {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("UTF-8")
}

/// `netmirror --bus ADDRESS ARGS`.
fn ours(nm: &NetworkManagerDaemon, args: &[&str]) -> Run {
    let mut full = vec!["--bus", nm.bus_address()];
    full.extend_from_slice(args);
    run(netmirror(&full))
}

/// Terse `NAME:value` lines, in order.
fn fields(text: &str) -> Vec<(String, String)> {
    text.lines()
        .map(|line| {
            let (name, value) = line.split_once(':').expect("NAME:value");
            (name.to_owned(), value.to_owned())
        })
        .collect()
}

/// Compares `nm device IFACE` with `nmcli device show IFACE`, terse, field by field: with
/// `-f all` every field of nmcli's (but [`NOT_SHOWN`]) with its value, and nothing else;
/// without `-f` the same fields in the same order; for people the same lines; `--json` every
/// key of nmcli's `-f all` with its value, typed.
#[track_caller]
fn device_matches(nm: &NetworkManagerDaemon, iface: &str) -> BTreeMap<String, String> {
    let theirs = fields(&nmcli(nm, &["-t", "-f", "all", "device", "show", iface]));
    let mine = fields(ours(nm, &["-t", "-f", "all", "nm", "device", iface]).ok());
    let mine_map: BTreeMap<String, String> = mine.iter().cloned().collect();
    let theirs_map: BTreeMap<String, String> = theirs.iter().cloned().collect();
    for (name, value) in &theirs {
        if NOT_SHOWN.contains(&name.as_str()) {
            continue;
        }
        assert_eq!(
            mine_map.get(name),
            Some(value),
            "{iface} {name}: ours {:?}, nmcli {value:?}",
            mine_map.get(name)
        );
    }
    for name in mine_map.keys() {
        assert!(
            theirs_map.contains_key(name),
            "{iface}: {name} is not nmcli's"
        );
    }
    let order = |list: &[(String, String)]| -> Vec<String> {
        list.iter()
            .map(|(name, _)| name.clone())
            .filter(|name| !NOT_SHOWN.contains(&name.as_str()))
            .collect()
    };
    assert_eq!(order(&mine), order(&theirs), "{iface}: order of -f all");
    let theirs = fields(&nmcli(nm, &["-t", "device", "show", iface]));
    let mine = fields(ours(nm, &["-t", "nm", "device", iface]).ok());
    assert_eq!(mine, theirs, "{iface}: default fields");
    // For people: the same lines, names and values, padding aside.
    let theirs = padded_fields(&nmcli(nm, &["device", "show", iface]));
    let mine = padded_fields(ours(nm, &["nm", "device", iface]).ok());
    assert_eq!(mine, theirs, "{iface}: for people");
    // JSON: one object keyed by nmcli's terse names (`IP4.ADDRESS[1]`), with every key nmcli
    // prints and its value typed (a flag a boolean, a number a number); nothing nmcli does
    // not print but empty values.
    let json = ours(nm, &["--json", "nm", "device", iface]).json();
    let object = json.as_object().expect("an object");
    let theirs = fields(&nmcli(nm, &["-t", "-f", "all", "device", "show", iface]));
    for (name, value) in &theirs {
        if NOT_SHOWN.contains(&name.as_str()) {
            continue;
        }
        let mine = object
            .get(name)
            .unwrap_or_else(|| panic!("{iface}: no {name} in {json}"));
        assert!(
            json_says(mine, value),
            "{iface} {name}: JSON {mine}, nmcli {value:?}"
        );
    }
    for (key, value) in object {
        assert!(
            theirs_map.contains_key(key) || value.is_null() || value == &Value::Array(vec![]),
            "{iface}: {key} = {value} is not nmcli's"
        );
    }
    mine_map
}

/// Whether a JSON value says what nmcli's terse text does: the same string, null or an empty
/// list for an empty text, a boolean for `yes`/`no` (`on`/`off`), a number for its digits.
fn json_says(mine: &Value, theirs: &str) -> bool {
    match mine {
        Value::String(text) => text == theirs,
        Value::Null => theirs.is_empty(),
        Value::Array(items) => items.is_empty() && theirs.is_empty(),
        Value::Bool(on) => {
            let words = if *on { ["yes", "on"] } else { ["no", "off"] };
            words.contains(&theirs)
        }
        Value::Number(number) => number.to_string() == theirs,
        Value::Object(_) => false,
    }
}

/// `nmcli -t` list lines as rows of fields, split at the `:` nmcli does not escape.
fn terse_rows(text: &str) -> Vec<Vec<String>> {
    text.lines()
        .map(|line| {
            let mut row = vec![String::new()];
            let mut chars = line.chars();
            while let Some(c) = chars.next() {
                match c {
                    '\\' => row.last_mut().unwrap().extend(chars.next()),
                    ':' => row.push(String::new()),
                    c => row.last_mut().unwrap().push(c),
                }
            }
            row
        })
        .collect()
}

#[test]
fn device_show_equals_nmcli_field_by_field() {
    let lab = lab();
    let nm = &lab.nm;
    let veth0 = device_matches(nm, "veth0");
    // What the issue saw wrong, spelled out.
    assert_eq!(veth0["GENERAL.CONNECTION"], "static");
    assert!(veth0["GENERAL.CON-PATH"].contains("/ActiveConnection/"));
    assert_eq!(veth0["IP4.ADDRESS[1]"], "192.0.2.1/24");
    assert_eq!(veth0["IP4.DNS[1]"], "192.0.2.53");
    assert_eq!(veth0["WIRED-PROPERTIES.CARRIER"], "on");
    assert_eq!(veth0["GENERAL.METERED"], "yes");
    assert!(
        veth0
            .values()
            .any(|v| v == "dst = 198.51.100.0/24, nh = 192.0.2.254, mt = 50")
    );
    let veth2 = device_matches(nm, "veth2");
    assert!(
        veth2["IP4.ADDRESS[1]"].starts_with("198.18.0."),
        "{veth2:?}"
    );
    assert!(
        veth2
            .values()
            .any(|v| v == "domain_name_servers = 198.18.0.53"),
        "{veth2:?}"
    );
    // Its DHCPv6 lease from the same dnsmasq: the DHCP6 section and what it gave.
    assert!(
        veth2
            .iter()
            .any(|(k, v)| k.starts_with("DHCP6.OPTION")
                && v == "dhcp6_name_servers = 2001:db8:d::53"),
        "{veth2:?}"
    );
    assert!(
        veth2
            .iter()
            .any(|(k, v)| k.starts_with("IP6.ADDRESS") && v.starts_with("2001:db8:d::1")),
        "{veth2:?}"
    );
    assert_eq!(veth2["IP6.DNS[1]"], "2001:db8:d::53", "{veth2:?}");
    let lo = device_matches(nm, "lo");
    assert_eq!(lo["GENERAL.STATE"], "100 (connected (externally))");
    device_matches(nm, "veth1");
    // A bridge: its BRIDGE section (with `-f all`), its port's name.
    let br0 = device_matches(nm, "br0");
    assert_eq!(br0["BRIDGE.SLAVES"], "veth1");
    assert_eq!(br0["IP4.ADDRESS[1]"], "203.0.113.1/24");
    // Virtual devices: libnm finds no vendor or product, and nmcli shows `--`.
    assert_eq!(br0["GENERAL.VENDOR"], "");
    assert_eq!(veth0["GENERAL.PRODUCT"], "");
    // Bond and VLAN profiles give the daemon unrealized devices (in AllDevices): nmcli
    // device show does not find them, and neither does netmirror, saying why.
    for iface in ["bond0", "vlan7"] {
        let theirs = nm
            .nmcli()
            .args(["device", "show", iface])
            .output()
            .expect("run nmcli");
        assert!(!theirs.status.success(), "nmcli found {iface}");
        let mine = ours(nm, &["nm", "device", iface]);
        let err = mine.fails(1);
        assert!(
            err.contains(&format!("device '{iface}' not found")) && err.contains("unrealized"),
            "{err}"
        );
    }

    // `-f` keeps the order asked.
    let asked = "GENERAL.STATE,GENERAL.DEVICE,IP4.ADDRESS";
    assert_eq!(
        fields(ours(nm, &["-t", "-f", asked, "nm", "device", "veth0"]).ok()),
        fields(&nmcli(nm, &["-t", "-f", asked, "device", "show", "veth0"]))
    );
    // NetworkManager 1.42 has no Ifindex property: not a made-up 0.
    let json = ours(nm, &["--json", "-f", "all", "nm", "device"]).json();
    for device in json.as_array().expect("array") {
        assert_eq!(device["ifindex"], Value::Null, "{device}");
    }

    // The list with `-f all`: nmcli's columns in nmcli's order, then netmirror's own; every
    // row's value of each of nmcli's columns is nmcli's, terse, in JSON and for people.
    let header = nmcli(nm, &["-f", "all", "device"]);
    let names: Vec<&str> = header
        .lines()
        .next()
        .expect("a header")
        .split_whitespace()
        .collect();
    assert!(names.contains(&"IP4-CONNECTIVITY"), "{header}");
    let mine_header = ours(nm, &["-f", "all", "nm", "device"]).ok().to_owned();
    let mine_names: Vec<&str> = mine_header
        .lines()
        .next()
        .expect("a header")
        .split_whitespace()
        .collect();
    assert_eq!(mine_names[..names.len()], names[..], "nm device -f all");
    let theirs = terse_rows(&nmcli(nm, &["-t", "-f", "all", "device"]));
    let mine = terse_rows(ours(nm, &["-t", "-f", "all", "nm", "device"]).ok());
    assert_eq!(mine.len(), theirs.len(), "{mine:?}");
    for (mine, theirs) in mine.iter().zip(&theirs) {
        assert_eq!(mine.len(), mine_names.len(), "{mine:?}");
        for (idx, name) in names.iter().enumerate() {
            assert_eq!(mine[idx], theirs[idx], "{} {name}", theirs[0]);
        }
    }
    let json = ours(nm, &["--json", "-f", "all", "nm", "device"]).json();
    let rows = json.as_array().expect("an array");
    assert_eq!(rows.len(), theirs.len(), "{json}");
    for (row, theirs) in rows.iter().zip(&theirs) {
        for (idx, name) in names.iter().enumerate() {
            let key = name.to_lowercase().replace('-', "_");
            assert!(
                json_says(&row[&key], &theirs[idx]),
                "{} {key}: JSON {}, nmcli {:?}",
                theirs[0],
                row[&key],
                theirs[idx]
            );
        }
    }
    let words = |text: &str| -> Vec<Vec<String>> {
        text.lines()
            .map(|line| line.split_whitespace().map(str::to_owned).collect())
            .collect()
    };
    let asked = names.join(",");
    assert_eq!(
        words(ours(nm, &["-f", &asked, "nm", "device"]).ok()),
        words(&header),
        "nm device -f {asked} for people"
    );
    assert_eq!(
        words(ours(nm, &["nm", "device"]).ok()),
        words(&nmcli(nm, &["device"])),
        "nm device for people"
    );
}

/// The lists and `nm general` equal nmcli's: terse (default fields, every shared field), JSON
/// field by field, and the tables for people word by word.
#[test]
fn lists_and_general_equal_nmcli_in_nmcli_order() {
    let lab = lab();
    let nm = &lab.nm;
    for (mine, theirs) in [
        (
            vec!["-t", "-f", "DEVICE,TYPE,STATE,CONNECTION", "nm", "device"],
            vec!["-t", "-f", "DEVICE,TYPE,STATE,CONNECTION", "device"],
        ),
        (
            vec!["-t", "-f", "NAME,UUID,TYPE,DEVICE", "nm", "connection"],
            vec!["-t", "-f", "NAME,UUID,TYPE,DEVICE", "connection"],
        ),
        (
            vec!["-t", "-f", "NAME,UUID,TYPE,DEVICE,STATE", "nm", "active"],
            vec![
                "-t",
                "-f",
                "NAME,UUID,TYPE,DEVICE,STATE",
                "connection",
                "show",
                "--active",
            ],
        ),
        (
            vec![
                "-t",
                "-f",
                "STATE,CONNECTIVITY,WIFI-HW,WIFI,WWAN-HW,WWAN",
                "nm",
                "general",
            ],
            vec![
                "-t",
                "-f",
                "STATE,CONNECTIVITY,WIFI-HW,WIFI,WWAN-HW,WWAN",
                "general",
            ],
        ),
        // Every field nmcli's `general` has, in its order (METERED is ours alone), and the
        // default ones.
        (
            vec!["-t", "-f", GENERAL_ALL, "nm", "general"],
            vec!["-t", "-f", GENERAL_ALL, "general"],
        ),
        (vec!["-t", "nm", "general"], vec!["-t", "general"]),
        // The default fields of the lists.
        (vec!["-t", "nm", "connection"], vec!["-t", "connection"]),
        (
            vec!["-t", "nm", "active"],
            vec!["-t", "connection", "show", "--active"],
        ),
        // Every field the profile list shares with nmcli's.
        (
            vec!["-t", "-f", CONNECTION_SHARED, "nm", "connection"],
            vec!["-t", "-f", CONNECTION_SHARED, "connection"],
        ),
        // The active list's paths: ours are named as nmcli's GENERAL section names them.
        (
            vec!["-t", "-f", "NAME,DBUS-PATH,CON-PATH", "nm", "active"],
            vec![
                "-t",
                "-f",
                "NAME,ACTIVE-PATH,DBUS-PATH",
                "connection",
                "show",
                "--active",
            ],
        ),
    ] {
        assert_eq!(
            ours(nm, &mine).ok(),
            nmcli(nm, &theirs),
            "{mine:?} against nmcli {theirs:?}"
        );
    }

    // JSON says what nmcli says, field by field: `nm general` (RUNNING and STARTUP as
    // booleans) and every row of `nm active`.
    let general = ours(nm, &["--json", "-f", "all", "nm", "general"]).json();
    let theirs = nmcli(nm, &["-t", "-f", GENERAL_ALL, "general"]);
    let values: Vec<&str> = theirs.trim_end().split(':').collect();
    for (name, theirs) in GENERAL_ALL.split(',').zip(values) {
        let key = name.to_lowercase().replace('-', "_");
        let mine = match (name, &general[0][&key]) {
            ("RUNNING", Value::Bool(on)) => (if *on { "running" } else { "not running" }).into(),
            ("STARTUP", Value::Bool(on)) => (if *on { "starting" } else { "started" }).into(),
            (_, Value::String(text)) => text.clone(),
            (_, other) => panic!("{key}: {other}"),
        };
        assert_eq!(mine, theirs, "nm general JSON {key}");
    }
    let active = ours(nm, &["--json", "-f", "all", "nm", "active"]).json();
    let theirs = nmcli(
        nm,
        &[
            "-t",
            "-f",
            "NAME,UUID,TYPE,DEVICE,STATE,ACTIVE-PATH,DBUS-PATH",
            "connection",
            "show",
            "--active",
        ],
    );
    let rows = active.as_array().expect("an array");
    assert_eq!(rows.len(), theirs.lines().count(), "{active}");
    for (row, line) in rows.iter().zip(theirs.lines()) {
        let device = match &row["device"] {
            Value::Array(names) => names
                .iter()
                .map(|name| name.as_str().expect("a name"))
                .collect::<Vec<_>>()
                .join(","),
            other => panic!("device: {other}"),
        };
        let mine = [
            row["name"].as_str().expect("name").to_owned(),
            row["uuid"].as_str().expect("uuid").to_owned(),
            row["type"].as_str().expect("type").to_owned(),
            device,
            row["state"].as_str().expect("state").to_owned(),
            row["dbus_path"].as_str().expect("dbus_path").to_owned(),
            row["con_path"].as_str().expect("con_path").to_owned(),
        ]
        .join(":");
        assert_eq!(mine, line, "nm active JSON");
    }

    // The tables for people: the same words in every column (padding aside), TYPE by nmcli's
    // short names (`ethernet`, `bridge`, `loopback`).
    for (mine, theirs) in [
        (vec!["nm", "general"], vec!["general"]),
        (vec!["nm", "connection"], vec!["connection"]),
        (vec!["nm", "active"], vec!["connection", "show", "--active"]),
    ] {
        let words = |text: &str| -> Vec<Vec<String>> {
            text.lines()
                .map(|line| line.split_whitespace().map(str::to_owned).collect())
                .collect()
        };
        let table = ours(nm, &mine).ok().to_owned();
        assert_eq!(
            words(&table),
            words(&nmcli(nm, &theirs)),
            "{mine:?} against nmcli {theirs:?}"
        );
        if mine[1] != "general" {
            for short in ["ethernet", "bridge", "loopback"] {
                assert!(
                    table
                        .lines()
                        .any(|line| line.split_whitespace().any(|w| w == short)),
                    "{mine:?} has no {short}: {table}"
                );
            }
            assert!(!table.contains("802-3-ethernet"), "{table}");
        }
    }
}

/// Every field of `nmcli general`, in its order.
const GENERAL_ALL: &str =
    "RUNNING,VERSION,STATE,STARTUP,CONNECTIVITY,NETWORKING,WIFI-HW,WIFI,WWAN-HW,WWAN";

/// The fields `nm connection` shares with `nmcli connection` (INTERFACE is netmirror's).
const CONNECTION_SHARED: &str = "NAME,UUID,TYPE,DEVICE,ACTIVE,FILENAME,DBUS-PATH";

/// People's `NAME:   value` lines as `(NAME, value)`, the padding (nmcli's column 40,
/// netmirror's the longest name's) left out.
fn padded_fields(text: &str) -> Vec<(String, String)> {
    text.lines()
        .map(|line| {
            let (name, value) = line.split_once(':').expect("NAME: value");
            (name.to_owned(), value.trim_start().to_owned())
        })
        .collect()
}

/// `nm connection ID` equals `nmcli connection show ID` line for line, in nmcli's order:
/// every setting with nmcli's defaults for what the daemon leaves out (from the generated
/// table), then the active connection's sections; terse and for people, with `-f` groups and
/// names, and as JSON (every name, booleans and numbers typed).
///
/// The one difference left: `-f active,connection.id` is printed in the order asked, where
/// nmcli prints a profile's settings before its active sections whatever the order asked.
#[test]
fn connection_show_equals_nmcli_field_by_field() {
    let lab = lab();
    let nm = &lab.nm;
    for id in ["static", "dhcp", "bridge", "bridge-port"] {
        let theirs = fields(&nmcli(nm, &["-t", "connection", "show", id]));
        let mine = fields(ours(nm, &["-t", "nm", "connection", id]).ok());
        assert!(theirs.len() > 60, "{id}: {theirs:?}");
        for (idx, (name, value)) in theirs.iter().enumerate() {
            assert_eq!(
                mine.get(idx),
                Some(&(name.clone(), value.clone())),
                "{id}: line {} differs",
                idx + 1
            );
        }
        assert_eq!(mine.len(), theirs.len(), "{id}: {mine:?}");
        // For people: the same lines, nmcli's texts (`0 (default)`, `--`, routes in braces).
        let theirs = padded_fields(&nmcli(nm, &["connection", "show", id]));
        let mine = padded_fields(ours(nm, &["nm", "connection", id]).ok());
        assert_eq!(mine, theirs, "{id}: for people");
        for fields_asked in [
            "all",
            "profile",
            "active",
            "ipv4,GENERAL",
            "connection.id,ipv6",
        ] {
            let theirs = fields(&nmcli(
                nm,
                &["-t", "-f", fields_asked, "connection", "show", id],
            ));
            let mine = fields(ours(nm, &["-t", "-f", fields_asked, "nm", "connection", id]).ok());
            assert_eq!(mine, theirs, "{id}: -f {fields_asked}");
        }
        let json = ours(nm, &["--json", "nm", "connection", id]).json();
        let object = json.as_object().expect("object");
        let theirs = fields(&nmcli(nm, &["-t", "connection", "show", id]));
        for (name, value) in &theirs {
            let mine = object
                .get(name)
                .unwrap_or_else(|| panic!("{id}: no {name} in {json}"));
            match value.as_str() {
                "" => assert!(mine.is_null() || mine == "" || mine == &Value::Array(vec![])),
                // A flag is a boolean; an enumeration nmcli names `yes`/`no`
                // (`connection.metered`) keeps its D-Bus number.
                "yes" | "no" => assert!(
                    *mine == Value::Bool(value == "yes") || mine.is_u64(),
                    "{id} {name}: {mine}"
                ),
                _ => {}
            }
        }
    }
    let static_ = fields(ours(nm, &["-t", "nm", "connection", "static"]).ok());
    let static_: BTreeMap<String, String> = static_.into_iter().collect();
    // What the issue saw wrong, spelled out.
    assert_eq!(static_["ipv4.addresses"], "192.0.2.1/24");
    assert_eq!(static_["ipv4.dns"], "192.0.2.53");
    assert_eq!(static_["ipv4.routes"], "198.51.100.0/24 192.0.2.254 50");
    assert_eq!(static_["ipv6.addresses"], "2001:db8::1/64");
    assert_eq!(static_["connection.metered"], "yes");
    // Defaults the daemon does not send.
    assert_eq!(static_["connection.autoconnect-priority"], "0");
    assert_eq!(static_["ipv6.addr-gen-mode"], "default");
    // Its DHCPv4 lease (the lab waits for it). Whenever nmcli has shown one, ours read after
    // must show it too.
    let dhcp_of = |output: String| output.contains("DHCP4.OPTION[1]");
    let ours_dhcp = || {
        ours(
            nm,
            &["-f", "ipv4.dhcp-timeout,DHCP4", "nm", "connection", "dhcp"],
        )
        .ok()
        .to_owned()
    };
    let theirs = nmcli(
        nm,
        &[
            "-f",
            "ipv4.dhcp-timeout,DHCP4",
            "connection",
            "show",
            "dhcp",
        ],
    );
    assert!(
        dhcp_of(theirs.clone()),
        "no DHCP4 lease in nmcli's:\n{theirs}"
    );
    let mine = ours_dhcp();
    assert!(
        dhcp_of(mine.clone()),
        "no DHCP4 lease in ours, read after nmcli's:\n{mine}\nnmcli's:\n{theirs}"
    );
    // Its DHCPv6 lease (the lines themselves are compared with nmcli's above).
    let dhcp6 = ours(nm, &["-t", "-f", "DHCP6", "nm", "connection", "dhcp"])
        .ok()
        .to_owned();
    assert!(
        dhcp6.contains("dhcp6_name_servers = 2001:db8:d::53"),
        "{dhcp6}"
    );
    let human = ours(nm, &["nm", "connection", "static"]).ok().to_owned();
    assert!(
        human.contains("{ ip = 198.51.100.0/24, nh = 192.0.2.254, mt = 50 }"),
        "{human}"
    );
}

/// Records the `State` values of `org.freedesktop.NetworkManager.Device` that
/// `PropertiesChanged` signals carry for `path`, as a second connection (`busctl monitor`)
/// sees them; killed on drop.
struct BusRecorder {
    child: Killed,
    lines: std::sync::mpsc::Receiver<String>,
}

impl BusRecorder {
    fn start(nm: &NetworkManagerDaemon, path: &str) -> BusRecorder {
        let rule = format!(
            "type='signal',interface='org.freedesktop.DBus.Properties',\
             member='PropertiesChanged',path='{path}'"
        );
        BusRecorder::with_rules(nm, &[&rule])
    }

    /// Every device's `PropertiesChanged` and every `InterfacesAdded`, whatever the path (a
    /// restarted daemon may number its devices anew).
    fn start_all(nm: &NetworkManagerDaemon) -> BusRecorder {
        BusRecorder::with_rules(
            nm,
            &[
                "type='signal',interface='org.freedesktop.DBus.Properties',\
                 member='PropertiesChanged'",
                "type='signal',interface='org.freedesktop.DBus.ObjectManager',\
                 member='InterfacesAdded'",
            ],
        )
    }

    fn with_rules(nm: &NetworkManagerDaemon, rules: &[&str]) -> BusRecorder {
        let mut command = nm.bus().command("busctl");
        command.args(["--system", "monitor", "--json=short"]);
        for rule in rules {
            command.args(["--match", rule]);
        }
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("busctl monitor");
        let lines = crate::support::lines_of(child.stdout.take().expect("piped"));
        // busctl is a monitor once it has said so to the bus; give it a moment.
        std::thread::sleep(Duration::from_secs(1));
        BusRecorder {
            child: Killed(child),
            lines,
        }
    }

    /// The states of the device at `path` recorded so far, in order: the one it was exported
    /// with (`InterfacesAdded`), then each `PropertiesChanged` of its `State`.
    fn states_of(&self, path: &str) -> Vec<u64> {
        let mut states = Vec::new();
        for line in self.lines.try_iter() {
            let Ok(message) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            let data = &message["payload"]["data"];
            let state = match message["member"].as_str() {
                Some("InterfacesAdded") if data[0] == path => {
                    &data[1]["org.freedesktop.NetworkManager.Device"]["State"]["data"]
                }
                Some("PropertiesChanged")
                    if message["path"] == path
                        && data[0] == "org.freedesktop.NetworkManager.Device" =>
                {
                    &data[1]["State"]["data"]
                }
                _ => continue,
            };
            if let Some(state) = state.as_u64() {
                states.push(state);
            }
        }
        let _ = &self.child;
        states
    }

    /// The device states recorded so far, in order.
    fn states(&self) -> Vec<u64> {
        let mut states = Vec::new();
        for line in self.lines.try_iter() {
            let Ok(message) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            let data = &message["payload"]["data"];
            if data[0] != "org.freedesktop.NetworkManager.Device" {
                continue;
            }
            if let Some(state) = data[1]["State"]["data"].as_u64() {
                states.push(state);
            }
        }
        let _ = &self.child;
        states
    }
}

#[test]
fn monitor_reports_every_device_state_in_bus_order() {
    let mut lab = lab();
    let nm = &lab.nm;
    let path = nmcli(nm, &["-g", "GENERAL.DBUS-PATH", "device", "show", "veth0"])
        .trim()
        .to_owned();
    let recorder = BusRecorder::start(nm, &path);
    let mut command = netmirror(&["--json", "--bus", nm.bus_address(), "nm", "monitor"]);
    command.env("RUST_LOG", "netmirror::nm=debug");
    let mut monitor = Monitor::start(command, "monitor ready");
    let seen = std::cell::RefCell::new(Vec::<Value>::new());
    let mut wait = |what: &str, wanted: &dyn Fn(&Value) -> bool| {
        monitor.expect_line(TIMEOUT, |line| {
            let event: Value = serde_json::from_str(line).expect("one JSON object per line");
            let hit = wanted(&event);
            seen.borrow_mut().push(event);
            hit
        });
        let _ = what;
    };
    let device_in = |event: &Value, state: u64| {
        event["object"] == "device"
            && event["new"]["device"] == "veth0"
            && event["new"]["state"]["value"] == state
    };

    ok(nm.nmcli().args(["connection", "down", "static"]));
    wait("veth0 disconnected", &|e| device_in(e, 30));
    ok(nm
        .nmcli()
        .args(["--wait", "60", "connection", "up", "static"]));
    wait("veth0 connected", &|e| device_in(e, 100));
    // The profile's row follows the activation at once.
    let follows = seen.borrow().iter().any(|e| {
        e["object"] == "connection"
            && e["new"]["name"] == "static"
            && e["new"]["device"] == serde_json::json!(["veth0"])
    });
    assert!(
        follows,
        "no connection row with device veth0: {:?}",
        seen.borrow()
    );
    ok(nm
        .nmcli()
        .args(["connection", "modify", "static", "ipv4.dns", "192.0.2.54"]));
    wait("static updated", &|e| {
        e["object"] == "connection" && e["event"] == "updated" && e["new"]["name"] == "static"
    });
    ok(nm.nmcli().args(["connection", "down", "static"]));
    wait("veth0 disconnected again", &|e| device_in(e, 30));
    // The link goes down under an active connection: the carrier goes, the device follows.
    ok(nm
        .nmcli()
        .args(["--wait", "60", "connection", "up", "static"]));
    wait("veth0 connected again", &|e| device_in(e, 100));
    ok(nm
        .netns_command("ip")
        .args(["link", "set", "veth1", "down"]));
    wait("veth0 unavailable", &|e| device_in(e, 20));
    // A profile deleted is removed.
    ok(nm.nmcli().args(["connection", "delete", "dhcp"]));
    wait("dhcp removed", &|e| {
        e["object"] == "connection" && e["event"] == "removed" && e["old"]["name"] == "dhcp"
    });
    std::thread::sleep(Duration::from_millis(500));

    let bus = recorder.states();
    let ours: Vec<u64> = seen
        .borrow()
        .iter()
        .filter(|e| e["object"] == "device" && e["event"] == "changed")
        .filter(|e| e["new"]["device"] == "veth0")
        .filter(|e| e["old"]["state"] != e["new"]["state"])
        .map(|e| e["new"]["state"]["value"].as_u64().expect("state number"))
        .collect();
    assert_eq!(ours, bus, "device states: ours against the bus");
    for state in [40, 50, 70, 100, 110, 30, 20] {
        assert!(
            bus.contains(&state),
            "the bus never carried {state}: {bus:?}"
        );
    }
    // Every state change says why, by name and number.
    for event in seen.borrow().iter().filter(|e| e["object"] == "device") {
        assert!(event["new"]["reason"]["name"].is_string(), "{event}");
        assert!(event["new"]["reason"]["value"].is_u64(), "{event}");
    }
    // No `changed` line without a change.
    for event in seen.borrow().iter().filter(|e| e["event"] == "changed") {
        assert_ne!(event["old"], event["new"], "{event}");
    }
    drop(recorder);

    // The daemon restarts: it leaves, comes back, and veth0 is there again in the state
    // nmcli reports, each state it goes through after the monitor has loaded it reported in
    // the bus's order (recorded across the restart by a second connection).
    let recorder = BusRecorder::start_all(nm);
    lab.nm.stop().expect("stop NetworkManager");
    let vanished = monitor.expect_line(TIMEOUT, |line| line.contains("\"vanished\""));
    assert!(vanished.contains("networkmanager"), "{vanished}");
    lab.nm.start_again().expect("start NetworkManager again");
    monitor.expect_line(TIMEOUT, |line| line.contains("\"appeared\""));
    let added = monitor.expect_line(TIMEOUT, |line| {
        line.contains("\"added\"") && line.contains("\"device\":\"veth0\"")
    });
    let added: Value = serde_json::from_str(&added).expect("JSON");
    // Once things settle, the last state printed is nmcli's.
    let mut later = Vec::new();
    let settle = Instant::now() + Duration::from_secs(3);
    while Instant::now() < settle {
        if let Some(line) = monitor.try_line(Duration::from_millis(200)) {
            later.push(line);
        }
    }
    later.extend(std::iter::from_fn(|| {
        monitor.try_line(Duration::from_millis(500))
    }));
    let state = added["new"]["state"]["name"].as_str().expect("state name");
    let last = later
        .iter()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|e| e["object"] == "device" && e["new"]["device"] == "veth0")
        .filter_map(|e| e["new"]["state"]["name"].as_str().map(str::to_owned))
        .next_back()
        .unwrap_or_else(|| state.to_owned());
    let theirs = nmcli(&lab.nm, &["-g", "GENERAL.STATE", "device", "show", "veth0"]);
    assert!(
        theirs.trim().ends_with(&format!("({last})")),
        "nmcli {theirs:?}, ours {last:?}: {added} {later:?}"
    );
    // Then veth0 comes back to life under the restarted daemon: its peer's link goes up
    // (unavailable → disconnected) and `static` is activated again, through every state.
    ok(lab
        .nm
        .netns_command("ip")
        .args(["link", "set", "veth1", "up"]));
    ok(lab
        .nm
        .nmcli()
        .args(["--wait", "60", "connection", "up", "static"]));
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let line = monitor
            .try_line(Duration::from_millis(200))
            .unwrap_or_default();
        let connected = serde_json::from_str::<Value>(&line).is_ok_and(|e| {
            e["object"] == "device"
                && e["new"]["device"] == "veth0"
                && e["new"]["state"]["value"] == 100
        });
        later.push(line);
        if connected {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "veth0 never connected: {later:?}"
        );
    }
    std::thread::sleep(Duration::from_millis(500));
    later.extend(std::iter::from_fn(|| {
        monitor.try_line(Duration::from_millis(500))
    }));
    // The whole sequence after the restart: the state the monitor loaded, then every change.
    let path = nmcli(
        &lab.nm,
        &["-g", "GENERAL.DBUS-PATH", "device", "show", "veth0"],
    )
    .trim()
    .to_owned();
    let mut ours = vec![
        added["new"]["state"]["value"]
            .as_u64()
            .expect("state number"),
    ];
    ours.extend(
        later
            .iter()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .filter(|e| e["object"] == "device" && e["event"] == "changed")
            .filter(|e| e["new"]["device"] == "veth0")
            .filter(|e| e["old"]["state"] != e["new"]["state"])
            .map(|e| e["new"]["state"]["value"].as_u64().expect("state number")),
    );
    let bus = recorder.states_of(&path);
    // The monitor loads the restarted daemon when it appears on the bus, possibly after its
    // first changes: from the state it loaded on, its sequence is the bus's, nothing merged.
    assert!(
        bus.ends_with(&ours),
        "after the restart: ours {ours:?}, the bus {bus:?} ({path})"
    );
    for state in [30, 40, 50, 70, 100] {
        assert!(ours.contains(&state), "after the restart: ours {ours:?}");
    }
}

#[test]
fn device_kernel_shows_the_kernel_next_to_networkmanager() {
    let lab = lab();
    let nm = &lab.nm;
    let netns = nm.netns_path();
    let netns = netns.to_str().expect("UTF-8 path");
    // A route in another table, made behind NetworkManager's back.
    ok(nm.netns_command("ip").args([
        "route",
        "add",
        "203.0.113.0/24",
        "dev",
        "veth0",
        "table",
        "100",
    ]));
    let output = nm
        .netns_command("ip")
        .args(["-j", "addr", "show", "dev", "veth0"])
        .output()
        .expect("ip addr");
    let links: Value = serde_json::from_slice(&output.stdout).expect("ip -j");
    let mut expected: Vec<String> = links[0]["addr_info"]
        .as_array()
        .expect("addr_info")
        .iter()
        .map(|a| format!("{}/{}", a["local"].as_str().expect("local"), a["prefixlen"]))
        .collect();
    expected.sort();
    // Let NetworkManager see the route before comparing.
    let deadline = Instant::now() + TIMEOUT;
    let kernel = loop {
        let run = ours(
            nm,
            &[
                "--netns", netns, "-t", "-f", "KERNEL", "nm", "device", "veth0", "--kernel",
            ],
        );
        let kernel = fields(run.ok());
        if !kernel.iter().any(|(_, v)| v.contains("(not in")) || Instant::now() > deadline {
            break kernel;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let mut addresses: Vec<String> = kernel
        .iter()
        .filter(|(name, _)| name.starts_with("KERNEL.ADDRESS"))
        .map(|(_, value)| value.clone())
        .collect();
    addresses.sort();
    assert_eq!(addresses, expected, "{kernel:?}");
    assert!(
        kernel
            .iter()
            .any(|(_, v)| v == "dst = 203.0.113.0/24, nh = 0.0.0.0, mt = 0, table=100"),
        "{kernel:?}"
    );
    assert!(
        kernel
            .iter()
            .any(|(name, v)| name == "KERNEL.IFINDEX" && !v.is_empty()),
        "{kernel:?}"
    );
    // In sync: nothing marked.
    assert!(
        !kernel.iter().any(|(_, v)| v.contains("(not in")),
        "{kernel:?}"
    );

    // A real disagreement: a multipath route made behind NetworkManager's back. The kernel
    // has two hops; NetworkManager's IP4 configuration (1.42) keeps one route through the
    // first. Both sides are marked.
    ok(nm.netns_command("ip").args([
        "route",
        "add",
        "10.12.0.0/16",
        "nexthop",
        "via",
        "192.0.2.2",
        "dev",
        "veth0",
        "nexthop",
        "via",
        "192.0.2.3",
        "dev",
        "veth0",
    ]));
    let deadline = Instant::now() + Duration::from_secs(10);
    let nm_routes = loop {
        let routes: Vec<String> = fields(&nmcli(
            nm,
            &["-t", "-f", "IP4.ROUTE", "device", "show", "veth0"],
        ))
        .into_iter()
        .map(|(_, route)| route)
        .filter(|route| route.starts_with("dst = 10.12.0.0/16,"))
        .collect();
        if !routes.is_empty() || Instant::now() > deadline {
            break routes;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let kernel = fields(
        ours(
            nm,
            &[
                "--netns", netns, "-t", "-f", "KERNEL", "nm", "device", "veth0", "--kernel",
            ],
        )
        .ok(),
    );
    assert!(
        kernel
            .iter()
            .any(|(name, v)| name.starts_with("KERNEL.ROUTE")
                && v == "dst = 10.12.0.0/16, nh = 192.0.2.2 + 192.0.2.3, mt = 0 (not in NM)"),
        "{kernel:?}"
    );
    // Each single-hop route NetworkManager shows for it is not in the kernel.
    for route in &nm_routes {
        let hop = route
            .split(", ")
            .find_map(|part| part.strip_prefix("nh = "))
            .expect("nh");
        let wanted = format!("route 10.12.0.0/16 via {hop} (not in kernel)");
        assert!(
            kernel
                .iter()
                .any(|(name, v)| name.starts_with("KERNEL.MISSING") && *v == wanted),
            "{wanted}: {kernel:?}"
        );
    }
    // Everything else still agrees.
    let marked = kernel.iter().filter(|(_, v)| v.contains("(not in")).count();
    assert_eq!(marked, 1 + nm_routes.len(), "{kernel:?}");
    // --netns is for --kernel only.
    ours(nm, &["--netns", netns, "nm", "device"]).fails(2);
}

#[test]
fn objects_equal_get_managed_objects_in_every_signature() {
    use super::objects::{assert_same, managed_objects};

    let lab = lab();
    let nm = &lab.nm;
    let read = || {
        managed_objects(
            nm.bus(),
            "org.freedesktop.NetworkManager",
            "/org/freedesktop",
        )
    };
    // The daemon may still move (a DHCPv6 renewal, a late router advertisement): compare with
    // a state busctl read the same before and after ours.
    let deadline = Instant::now() + TIMEOUT;
    let (mine, theirs) = loop {
        let before = read();
        let mine = ours(
            nm,
            &[
                "--json",
                "objects",
                "--service",
                "org.freedesktop.NetworkManager",
            ],
        )
        .json();
        if read() == before {
            break (mine, before);
        }
        assert!(Instant::now() < deadline, "NetworkManager never held still");
    };
    let compared = assert_same(&mine, &theirs);
    // Every signature the lab's objects have was compared, the containers among them.
    let signatures: std::collections::BTreeSet<&str> = theirs
        .values()
        .flat_map(|interfaces| interfaces.values())
        .flat_map(|properties| properties.values())
        .map(|(signature, _)| signature.as_str())
        .collect();
    for wanted in [
        "a{sv}",
        "aa{sv}",
        "aau",
        "au",
        "a(ayuay)",
        "a(ayuayu)",
        "aay",
        "ao",
        "as",
        "(uu)",
    ] {
        assert!(signatures.contains(wanted), "no {wanted} in {signatures:?}");
    }
    assert!(compared > 500, "{compared} values, of {signatures:?}");
}
