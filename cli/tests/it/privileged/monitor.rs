//! `monitor`: the events caused by `ip` commands, for people and as JSON lines.

use std::time::Duration;

use netmirror_platform::testing::{NetNs, Veth};
use serde_json::Value;

use crate::support::{Monitor, netmirror};

/// How long an event may take to show up.
const EVENT_TIMEOUT: Duration = Duration::from_secs(10);

/// A monitor of `objects` in `ns`, started and ready.
fn monitor(ns: &NetNs, extra: &[&str]) -> Monitor {
    let mut args = vec!["--netns", ns.name()];
    args.extend_from_slice(extra);
    let mut command = netmirror(&args);
    command.env("RUST_LOG", "netmirror::monitor=debug");
    Monitor::start(command, "monitor ready")
}

fn namespace() -> NetNs {
    NetNs::builder()
        .veth(Veth::new("veth0", "veth1").address("192.0.2.1/24"))
        .start()
        .expect("make a namespace")
}

#[test]
fn route_add_and_replace_as_json_lines() {
    let ns = namespace();
    let mut monitor = monitor(&ns, &["--json", "monitor", "route"]);
    ns.ip(&[
        "route",
        "add",
        "198.51.100.0/24",
        "dev",
        "veth0",
        "metric",
        "7",
    ])
    .expect("ip route add");
    let line = monitor.expect_line(EVENT_TIMEOUT, |line| line.contains("198.51.100.0/24"));
    let event: Value = serde_json::from_str(&line).expect("one JSON object per line");
    assert_eq!(event["object"], "route");
    assert_eq!(event["event"], "added");
    assert_eq!(event["old"], Value::Null);
    assert_eq!(event["new"]["dev"], "veth0");
    assert_eq!(event["new"]["metric"], 7);
    assert_eq!(event["new"]["table"], "main");

    ns.ip(&[
        "route",
        "replace",
        "198.51.100.0/24",
        "dev",
        "veth0",
        "metric",
        "7",
        "proto",
        "static",
    ])
    .expect("ip route replace");
    let line = monitor.expect_line(EVENT_TIMEOUT, |line| line.contains("198.51.100.0/24"));
    let event: Value = serde_json::from_str(&line).expect("JSON");
    assert_eq!(event["event"], "changed");
    assert_eq!(event["old"]["protocol"], "boot");
    assert_eq!(event["new"]["protocol"], "static");

    ns.ip(&[
        "route",
        "del",
        "198.51.100.0/24",
        "dev",
        "veth0",
        "metric",
        "7",
    ])
    .expect("ip route del");
    let line = monitor.expect_line(EVENT_TIMEOUT, |line| line.contains("198.51.100.0/24"));
    let event: Value = serde_json::from_str(&line).expect("JSON");
    assert_eq!(event["event"], "removed");
    assert_eq!(event["new"], Value::Null);
    assert_eq!(event["old"]["dst"], "198.51.100.0/24");
}

#[test]
fn link_change_for_people_shows_old_and_new() {
    let ns = namespace();
    let mut monitor = monitor(&ns, &["monitor", "link", "addr"]);
    ns.ip(&["link", "set", "veth0", "mtu", "1400"])
        .expect("ip link set mtu");
    let line = monitor.expect_line(EVENT_TIMEOUT, |line| {
        line.contains("mtu 1500 \u{2192} 1400")
    });
    assert!(line.starts_with("[LINK] changed ifindex"), "{line}");
    assert!(line.contains("ifname veth0"), "{line}");

    ns.ip(&["addr", "add", "203.0.113.9/24", "dev", "veth1"])
        .expect("ip addr add");
    let line = monitor.expect_line(EVENT_TIMEOUT, |line| line.contains("203.0.113.9"));
    assert!(line.starts_with("[ADDR] added"), "{line}");
    assert!(line.contains("ifname veth1"), "{line}");
}

/// A change in attributes that are no column of the human table (the link mode, a bridge
/// port's STP state) still shows in JSON: `old` and `new` differ, never print alike.
#[test]
fn json_changes_never_print_old_equal_to_new() {
    let ns = namespace();
    for line in [
        "link add nmxbr0 type bridge",
        "link set veth1 master nmxbr0",
        "link set veth0 up",
        "link set veth1 up",
        "link set nmxbr0 up",
    ] {
        let args: Vec<&str> = line.split_whitespace().collect();
        ns.ip(&args).expect("ip");
    }
    let mut monitor = monitor(&ns, &["--json", "monitor", "link"]);
    let changed = |line: &str, ifname: &str| {
        let event: Value = serde_json::from_str(line).expect("JSON");
        event["event"] == "changed" && event["new"]["ifname"] == ifname
    };
    ns.ip(&["link", "set", "veth0", "mode", "dormant"])
        .expect("ip link set mode");
    let line = monitor.expect_line(EVENT_TIMEOUT, |line| changed(line, "veth0"));
    let event: Value = serde_json::from_str(&line).expect("JSON");
    assert_ne!(event["old"], event["new"], "{line}");
    assert_eq!(event["old"]["linkmode"], "DEFAULT", "{line}");
    assert_eq!(event["new"]["linkmode"], "DORMANT", "{line}");

    ns.ip(&[
        "link",
        "set",
        "dev",
        "veth1",
        "type",
        "bridge_slave",
        "state",
        "1",
    ])
    .expect("ip link set bridge_slave state");
    let line = monitor.expect_line(EVENT_TIMEOUT, |line| {
        changed(line, "veth1") && line.contains("\"state\":1")
    });
    let event: Value = serde_json::from_str(&line).expect("JSON");
    assert_ne!(event["old"], event["new"], "{line}");
    assert_eq!(
        event["new"]["linkinfo"]["info_slave_data"]["state"], 1,
        "{line}"
    );
}

/// The kernel resolves a `goto` silently when a rule appears at its target priority, and
/// detaches an `iif` rule silently when its link goes: the monitor prints both as changes.
#[test]
fn silent_rule_flag_changes_are_printed() {
    let ns = namespace();
    let mut monitor = monitor(&ns, &["--json", "monitor", "rule"]);
    let rule_event = |line: &str, event: &str, priority: u64| {
        let value: Value = serde_json::from_str(line).expect("JSON");
        value["event"] == event
            && (value["new"]["priority"] == priority || value["old"]["priority"] == priority)
    };
    for line in [
        "rule add goto 200 pref 100",
        "rule add iif veth1 table 10 pref 110",
    ] {
        let args: Vec<&str> = line.split_whitespace().collect();
        ns.ip(&args).expect("ip rule add");
    }
    let line = monitor.expect_line(EVENT_TIMEOUT, |line| rule_event(line, "added", 100));
    let event: Value = serde_json::from_str(&line).expect("JSON");
    assert_eq!(event["new"]["unresolved"], true, "{line}");

    ns.ip(&["rule", "add", "table", "20", "pref", "200"])
        .expect("ip rule add");
    let line = monitor.expect_line(EVENT_TIMEOUT, |line| rule_event(line, "changed", 100));
    let event: Value = serde_json::from_str(&line).expect("JSON");
    assert_eq!(
        (&event["old"]["unresolved"], &event["new"]["unresolved"]),
        (&Value::Bool(true), &Value::Bool(false)),
        "{line}"
    );

    ns.ip(&["link", "del", "veth1"]).expect("ip link del");
    let line = monitor.expect_line(EVENT_TIMEOUT, |line| rule_event(line, "changed", 110));
    let event: Value = serde_json::from_str(&line).expect("JSON");
    assert_eq!(
        (&event["old"]["iif_detached"], &event["new"]["iif_detached"]),
        (&Value::Bool(false), &Value::Bool(true)),
        "{line}"
    );
}

#[test]
fn only_the_objects_asked_for() {
    let ns = namespace();
    let mut monitor = monitor(&ns, &["-t", "monitor", "addr"]);
    // A route first: it must not be printed; the address after it must.
    ns.ip(&["route", "add", "198.51.100.0/24", "dev", "veth0"])
        .expect("ip route add");
    ns.ip(&["addr", "add", "203.0.113.9/24", "dev", "veth0"])
        .expect("ip addr add");
    let line = monitor.expect_line(EVENT_TIMEOUT, |_| true);
    assert!(line.starts_with("addr:added:"), "{line}");
    assert!(line.contains(":203.0.113.9:24:"), "{line}");
}

/// A down link's alias changes without a notification: `--link-refresh 0.2` reports it within
/// a moment, `--link-refresh 0` never does.
#[test]
fn a_down_links_silent_change_comes_with_the_link_refresh() {
    let ns = namespace();
    ns.ip(&["link", "add", "nmbr9", "type", "bridge"])
        .expect("ip link add");
    let mut refreshed = monitor(&ns, &["--json", "monitor", "link", "--link-refresh", "0.2"]);
    let mut never = monitor(&ns, &["--json", "monitor", "link", "--link-refresh", "0"]);
    ns.ip(&["link", "set", "nmbr9", "alias", "spare"])
        .expect("ip link set alias");
    let line = refreshed.expect_line(EVENT_TIMEOUT, |line| line.contains("spare"));
    let event: Value = serde_json::from_str(&line).expect("JSON");
    assert_eq!(
        (
            &event["event"],
            &event["new"]["ifname"],
            &event["new"]["ifalias"]
        ),
        (
            &Value::from("changed"),
            &Value::from("nmbr9"),
            &Value::from("spare")
        )
    );
    let start = std::time::Instant::now();
    while start.elapsed() < Duration::from_millis(1500) {
        if let Some(line) = never.try_line(Duration::from_millis(100)) {
            assert!(!line.contains("spare"), "the kernel announced it: {line}");
        }
    }
}

/// `ip -n NS -d monitor OBJECTS...`, its lines sent to a channel; killed on drop.
struct IpMonitor {
    child: std::process::Child,
    lines: std::sync::mpsc::Receiver<String>,
}

impl Drop for IpMonitor {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl IpMonitor {
    fn start(ns: &NetNs, objects: &[&str]) -> IpMonitor {
        let mut child = std::process::Command::new("ip")
            .args(["-n", ns.name(), "-d", "monitor"])
            .args(objects)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("ip monitor");
        let lines = crate::support::lines_of(child.stdout.take().expect("piped"));
        IpMonitor { child, lines }
    }
}

/// The lines of `next` from the one that contains `from` (left out) up to the one that
/// contains `to` (left out), trailing blanks trimmed (`ip` ends most lines with one).
fn lines_between(mut next: impl FnMut() -> String, from: &str, to: &str) -> Vec<String> {
    while !next().contains(from) {}
    let mut lines = Vec::new();
    loop {
        let line = next();
        if line.contains(to) {
            return lines;
        }
        lines.push(line.trim_end().to_owned());
    }
}

/// With `-d`, the monitor prints what `ip -d monitor` prints for routes (on nexthop objects,
/// with their `nh_info`; multipath; IPv6; those an address brings), nexthop objects and
/// groups, rules (`proto` always, as `-d` has it) and addresses (in two lines, the lifetimes
/// on the second), removals after `Deleted `: compared line by line with
/// `ip -d monitor route nexthop rule address` run beside it.
#[test]
fn details_are_the_lines_of_ip_d_monitor() {
    let ns = namespace();
    ns.ip(&["link", "set", "veth0", "up"]).expect("up");
    ns.ip(&["link", "set", "veth1", "up"]).expect("up");
    let objects = ["route", "nexthop", "rule", "address"];
    let mut ours = monitor(&ns, &[&["-d", "monitor"][..], &objects].concat());
    let ip = IpMonitor::start(&ns, &objects);
    // `ip monitor` gives no sign that it listens: a probe rule, added again until it prints it.
    let listening = (0..50).any(|_| {
        let _ = ns.ip(&["rule", "del", "priority", "8"]);
        ns.ip(&[
            "rule",
            "add",
            "priority",
            "8",
            "from",
            "198.18.98.0/24",
            "table",
            "98",
        ])
        .expect("ip rule add");
        let deadline = std::time::Instant::now() + Duration::from_millis(200);
        std::iter::from_fn(|| {
            ip.lines
                .recv_timeout(deadline.saturating_duration_since(std::time::Instant::now()))
                .ok()
        })
        .any(|line| line.contains("198.18.98.0/24"))
    });
    assert!(listening, "ip monitor printed nothing");
    // Each monitor's lines from a first marker rule to a last one.
    let marker = |priority: &str, table: &str| {
        ns.ip(&[
            "rule",
            "add",
            "priority",
            priority,
            "from",
            "198.18.99.0/24",
            "table",
            table,
        ])
        .expect("ip rule add");
    };
    marker("9", "99");
    for step in [
        "nexthop add id 5 via 192.0.2.2 dev veth0",
        "nexthop add id 6 dev veth0",
        "nexthop add id 10 group 5,2/6",
        "route add 198.51.100.0/25 nhid 5",
        "route add 198.51.100.128/25 nhid 10 metric 30",
        "route add 203.0.113.0/24 proto static metric 20 nexthop via 192.0.2.7 dev veth0 weight 2 nexthop via 192.0.2.8 dev veth0",
        "route replace 198.51.100.0/25 nhid 6",
        "-6 route add 2001:db8:5::/64 dev veth0 metric 300 pref high",
        "rule add priority 200 from 10.1.0.0/16 table 7",
        "rule add priority 201 not to 10.2.0.0/16 fwmark 0x5/0xff table 8 proto static",
        "rule del priority 200",
        "route del 198.51.100.0/25",
        "route del 198.51.100.128/25 metric 30",
        "nexthop del id 10",
        "nexthop del id 5",
        "nexthop del id 6",
        "route del 203.0.113.0/24 metric 20",
        "addr add 192.0.2.9/24 dev veth0",
        "-6 route del 2001:db8:5::/64 dev veth0 metric 300",
        // Addresses: a secondary, lifetimes, IPv6 flags, a metric, a peer; the primary's
        // removal takes its secondary with it (the kernel's own deletion, announced).
        "addr add 10.46.0.1/24 dev veth0",
        "addr add 10.46.0.2/24 dev veth0 label veth0:sec",
        "addr add 10.44.0.1/24 dev veth0 valid_lft 3000 preferred_lft 2000 noprefixroute",
        "-6 addr add 2001:db8:44::1/64 dev veth0 nodad home metric 77",
        "addr add 10.45.0.1 peer 10.45.0.2/32 dev veth0",
        "addr del 10.46.0.1/24 dev veth0",
        "addr del 192.0.2.9/24 dev veth0",
        "-6 addr del 2001:db8:44::1/64 dev veth0",
    ] {
        let words: Vec<&str> = step.split(' ').collect();
        ns.ip(&words)
            .unwrap_or_else(|err| panic!("ip {step}: {err}"));
    }
    marker("10", "100");
    let theirs = lines_between(
        || {
            ip.lines
                .recv_timeout(EVENT_TIMEOUT)
                .expect("a line from ip monitor")
        },
        "198.18.99.0/24 lookup 99",
        "198.18.99.0/24 lookup 100",
    );
    let mine = lines_between(
        || ours.expect_line(EVENT_TIMEOUT, |_| true),
        "198.18.99.0/24 lookup 99",
        "198.18.99.0/24 lookup 100",
    );
    assert!(theirs.len() > 20, "{theirs:#?}");
    assert!(
        theirs
            .iter()
            .any(|line| line.contains("nh_info id 10 group 5,2/6"))
    );
    for line in [
        "Deleted 3: veth0    inet 10.46.0.2/24 scope global secondary veth0:sec",
        "       valid_lft 3000sec preferred_lft 2000sec",
        "3: veth0    inet6 2001:db8:44::1/64 metric 77 scope global nodad home",
    ] {
        assert!(
            theirs.iter().any(|theirs| theirs == line),
            "{line}: {theirs:#?}"
        );
    }
    // The lifetimes are the kernel's count as ip read it; ours count down from when the cache
    // read the event, in whole seconds: within one of each other.
    crate::support::assert_lines_but_lifetimes(&mine, &theirs, 1);
    // `rule -d` prints the rules as `ip -d rule` does, `proto` included.
    for family in ["-4", "-6"] {
        let run = crate::support::run(netmirror(&["--netns", ns.name(), family, "-d", "rule"]));
        let theirs = ns.ip(&[family, "-d", "rule"]).expect("ip -d rule");
        let trimmed = |text: &str| {
            text.lines()
                .map(str::trim_end)
                .collect::<Vec<_>>()
                .join("\n")
        };
        assert_eq!(trimmed(&run.stdout), trimmed(&theirs), "{family}");
    }
}

/// With `-d --json`, a route event on a nexthop object carries the object as `nh_info`, the
/// same as `route show -d --json` writes for the route (which the conformance sequence
/// compares with `ip -j -d`); without `-d`, no event has one.
#[test]
fn json_details_carry_the_nexthop_object_of_a_route() {
    let ns = namespace();
    ns.ip(&["link", "set", "veth0", "up"]).expect("up");
    ns.ip(&["nexthop", "add", "id", "5", "dev", "veth0"])
        .expect("ip nexthop add");
    let mut detailed = monitor(&ns, &["-d", "--json", "monitor", "route"]);
    let mut plain = monitor(&ns, &["--json", "monitor", "route"]);
    ns.ip(&["route", "add", "198.51.100.0/24", "nhid", "5"])
        .expect("ip route add");
    let event = |monitor: &mut Monitor| -> Value {
        let line = monitor.expect_line(EVENT_TIMEOUT, |line| line.contains("198.51.100.0/24"));
        serde_json::from_str(&line).expect("JSON")
    };
    let (detailed, plain) = (event(&mut detailed), event(&mut plain));
    let run = crate::support::run(netmirror(&[
        "--netns",
        ns.name(),
        "-d",
        "--json",
        "route",
        "show",
    ]));
    let shown: Value = serde_json::from_str(&run.stdout).expect("JSON");
    let row = shown
        .as_array()
        .expect("rows")
        .iter()
        .find(|row| row["dst"] == "198.51.100.0/24")
        .expect("the route");
    assert_eq!(detailed["new"]["nh_info"], row["nh_info"], "{detailed}");
    assert_eq!(detailed["new"]["nh_info"]["id"], 5, "{detailed}");
    assert_eq!(detailed["new"]["nh_info"]["dev"], "veth0", "{detailed}");
    assert!(plain["new"].get("nh_info").is_none(), "{plain}");
    // Apart from `nh_info`, the event is the one without `-d`.
    let mut without = detailed.clone();
    without["new"]
        .as_object_mut()
        .expect("object")
        .remove("nh_info");
    assert_eq!(without, plain);
}

/// With `-d`, a link whose parent is in a namespace `ip netns` names shows `link-netns NAME`,
/// as `ip -d -o link` prints it, also for a namespace named after the monitor started.
#[test]
fn details_name_the_namespace_of_a_links_parent() {
    let ns = namespace();
    let mut ours = monitor(&ns, &["-d", "monitor", "link"]);
    let other = NetNs::new().expect("second namespace");
    ns.ip(&[
        "link",
        "add",
        "nmxo0",
        "type",
        "veth",
        "peer",
        "name",
        "nmxo1",
        "netns",
        other.name(),
    ])
    .expect("ip link add");
    let line = ours.expect_line(EVENT_TIMEOUT, |line| line.contains(": nmxo0@"));
    let theirs = ns
        .ip(&["-d", "-o", "link", "show", "nmxo0"])
        .expect("ip -d -o link");
    let in_other = format!(" link-netns {} ", other.name());
    assert!(theirs.contains(&in_other), "{theirs}");
    assert!(line.contains(&in_other), "{line}");
}
