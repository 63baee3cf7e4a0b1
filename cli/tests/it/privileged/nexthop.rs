//! `nexthop` against `ip -j nexthop`, nexthop events in `monitor`, and the batch that lost a
//! route on a nexthop object in stop mode.

use std::time::Duration;

use netmirror_platform::testing::{NetNs, Veth};
use serde_json::Value;

use crate::support::{Monitor, netmirror, nm};

const EVENT_TIMEOUT: Duration = Duration::from_secs(10);

fn namespace() -> NetNs {
    let ns = NetNs::builder()
        .veth(Veth::new("veth0", "veth1").address("192.0.2.1/24"))
        .start()
        .expect("make a namespace");
    for line in [
        "nexthop add id 1 via 192.0.2.2 dev veth0",
        "nexthop add id 2 via 192.0.2.3 dev veth0 onlink proto zebra",
        "nexthop add id 3 blackhole",
        "nexthop add id 10 group 1/2,3",
        "nexthop add id 11 group 1/2 type resilient buckets 8",
    ] {
        let args: Vec<&str> = line.split_whitespace().collect();
        ns.ip(&args).expect(line);
    }
    ns
}

fn ip_json(ns: &NetNs, args: &[&str]) -> Value {
    serde_json::from_str(&ns.ip(args).expect("ip")).expect("JSON")
}

#[test]
fn nexthop_json_has_the_keys_and_values_of_ip() {
    let ns = namespace();
    let ours = nm(&["--netns", ns.name(), "--json", "nexthop"]).json();
    let ip = ip_json(&ns, &["-j", "nexthop", "show"]);
    let ours = ours.as_array().expect("an array");
    let ip = ip.as_array().expect("an array");
    assert_eq!(ours.len(), ip.len(), "{ours:#?}\n{ip:#?}");
    for (ours, ip) in ours.iter().zip(ip) {
        for key in ["id", "gateway", "dev", "group", "type", "resilient_args"] {
            if let Some(value) = ip.get(key) {
                assert_eq!(&ours[key], value, "{key} of {ip}");
            } else if key != "type" {
                assert_eq!(ours[key], Value::Null, "{key} of {ip}");
            }
        }
        assert_eq!(ours["blackhole"], ip.get("blackhole").is_some(), "{ip}");
        assert_eq!(ours["flags"], ip["flags"], "{ip}");
        let protocol = ip.get("protocol").cloned().unwrap_or("unspec".into());
        assert_eq!(ours["protocol"], protocol, "{ip}");
    }

    let one = nm(&[
        "--netns",
        ns.name(),
        "--json",
        "nexthop",
        "show",
        "id",
        "10",
    ])
    .json();
    assert_eq!(one.as_array().map(Vec::len), Some(1));
    assert_eq!(
        one[0]["group"],
        serde_json::json!([{"id": 1}, {"id": 2, "weight": 3}])
    );

    let text = nm(&["--netns", ns.name(), "nexthop"]);
    let text = text.ok();
    assert!(
        text.lines()
            .any(|line| line.starts_with("10 ") && line.contains("1/2,3")),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|line| line.starts_with("2 ") && line.contains("onlink")),
        "{text}"
    );
}

/// `-d nexthop show` prints `ip -d nexthop show`'s lines, with every selector `ip` takes and a
/// family: IPv4 and IPv6 gateways, a device-only nexthop, FDB nexthops and an FDB group,
/// groups, and the nexthops of a bridge's port (`master`).
#[test]
fn detail_lines_are_ip_d_nexthop_with_every_selector() {
    let ns = namespace();
    for line in [
        "link add nmxbr type bridge",
        "link add nmxp0 type veth peer name nmxp1",
        "link set nmxp0 master nmxbr",
        "link set nmxp0 up",
        "link set nmxp1 up",
        "link set nmxbr up",
        "nexthop add id 20 dev nmxp0",
        "nexthop add id 21 via fe80::9 dev veth0",
        "nexthop add id 30 via 192.0.2.7 fdb",
        "nexthop add id 31 group 30 fdb",
    ] {
        let args: Vec<&str> = line.split_whitespace().collect();
        ns.ip(&args).expect(line);
    }
    let selections: [&[&str]; 11] = [
        &[],
        &["-4"],
        &["-6"],
        &["id", "10"],
        &["dev", "veth0"],
        &["groups"],
        &["fdb"],
        &["groups", "fdb"],
        &["master", "nmxbr"],
        &["protocol", "zebra"],
        &["-4", "groups"],
    ];
    for selection in selections {
        let (family, rest): (&[&str], &[&str]) = match selection.first() {
            Some(&flag) if flag.starts_with('-') => (&selection[..1], &selection[1..]),
            _ => (&[], selection),
        };
        // ip takes a protocol by number only.
        let theirs_rest: Vec<&str> = rest
            .iter()
            .map(|word| if *word == "zebra" { "11" } else { word })
            .collect();
        let theirs = ns
            .ip(&[&["-d"], family, &["nexthop", "show"], &theirs_rest].concat())
            .expect("ip -d nexthop");
        let ours = nm(&[
            &["-d", "--netns", ns.name()],
            family,
            &["nexthop", "show"],
            rest,
        ]
        .concat())
        .ok()
        .to_owned();
        let theirs: Vec<&str> = theirs.lines().map(str::trim_end).collect();
        let ours: Vec<&str> = ours.lines().collect();
        assert_eq!(ours, theirs, "{selection:?}");
    }
    // Every selection but the empty ones above printed something.
    let all = ns.ip(&["nexthop", "show"]).expect("ip nexthop");
    assert!(all.lines().count() >= 9, "{all}");
}

#[test]
fn monitor_prints_nexthop_events() {
    let ns = namespace();
    let mut command = netmirror(&["--netns", ns.name(), "--json", "monitor", "nexthop"]);
    command.env("RUST_LOG", "netmirror::monitor=debug");
    let mut monitor = Monitor::start(command, "monitor ready");
    ns.ip(&["nexthop", "del", "id", "2"])
        .expect("ip nexthop del");
    let removed = monitor.expect_line(EVENT_TIMEOUT, |line| line.contains("\"removed\""));
    let removed: Value = serde_json::from_str(&removed).expect("JSON");
    assert_eq!(removed["object"], "nexthop");
    assert_eq!(removed["old"]["id"], 2);
    // The groups that held it are announced changed, with their old and new members.
    let changed = monitor.expect_line(EVENT_TIMEOUT, |line| {
        line.contains("\"changed\"") && line.contains("\"id\":10")
    });
    let changed: Value = serde_json::from_str(&changed).expect("JSON");
    assert_eq!(
        changed["old"]["group"],
        serde_json::json!([{"id": 1}, {"id": 2, "weight": 3}])
    );
    assert_eq!(changed["new"]["group"], serde_json::json!([{"id": 1}]));
}

/// The case: stop mode, `route add X`, the same line again (refused), then deletes of
/// routes on nexthop objects. They were undone from the kernel's echo with both the nexthop
/// id and its gateway (refused: "mutually exclusive"), so the routes were lost while the
/// summary said only one line was applied.
#[test]
fn stop_mode_keeps_routes_on_nexthops() {
    let ns = namespace();
    for line in [
        "route add 10.170.0.0/16 nhid 1",
        "route add 10.171.0.0/16 nhid 10",
        "route add 10.172.0.0/16 nhid 3",
    ] {
        let args: Vec<&str> = line.split_whitespace().collect();
        ns.ip(&args).expect(line);
    }
    let before = ns.ip(&["-d", "route", "show", "table", "all"]).expect("ip");
    let dir = tempfile::Builder::new()
        .prefix("netmirror-test-batch")
        .tempdir()
        .expect("temp dir");
    let path = dir.path().join("loss.batch");
    std::fs::write(
        &path,
        "route add 10.169.0.0/16 via 192.0.2.2\n\
         route add 10.169.0.0/16 via 192.0.2.2\n\
         route del 10.170.0.0/16\n\
         route del 10.171.0.0/16\n\
         route del 10.172.0.0/16\n\
         nexthop add id 20 via 192.0.2.9 dev veth0\n\
         route add 10.173.0.0/16 nhid 20\n",
    )
    .expect("write the batch");
    let run = nm(&["--netns", ns.name(), "batch", &path.display().to_string()]);
    assert_eq!(run.code(), 1, "{run:#?}");
    assert_eq!(
        run.stdout, "1 of 7 lines applied, 5 not applied after the first failure\n",
        "{run:#?}"
    );
    assert!(run.stderr.contains("loss.batch:2:"), "{run:#?}");
    assert!(!run.stderr.contains("undoing it failed"), "{run:#?}");
    ns.ip(&["route", "del", "10.169.0.0/16"])
        .expect("ip route del");
    let after = ns.ip(&["-d", "route", "show", "table", "all"]).expect("ip");
    assert_eq!(after, before, "the batch changed the routes");
    let nexthops = ns.ip(&["nexthop", "show", "id", "20"]);
    assert!(nexthops.is_err() || nexthops.is_ok_and(|out| out.trim().is_empty()));
}

#[test]
fn a_renamed_link_updates_the_peer_that_names_it() {
    let ns = namespace();
    let mut command = netmirror(&["--netns", ns.name(), "--json", "monitor", "link"]);
    command.env("RUST_LOG", "netmirror::monitor=debug");
    let mut monitor = Monitor::start(command, "monitor ready");
    for args in [
        ["link", "set", "veth1", "down"].as_slice(),
        &["link", "set", "veth1", "name", "vethpeer"],
    ] {
        ns.ip(args).expect("ip link set");
    }
    let peer = monitor.expect_line(EVENT_TIMEOUT, |line| {
        line.contains("\"changed\"")
            && line.contains("\"ifname\":\"veth0\"")
            && line.contains("vethpeer")
    });
    let peer: Value = serde_json::from_str(&peer).expect("JSON");
    assert_eq!(peer["old"]["link"], "veth1");
    assert_eq!(peer["new"]["link"], "vethpeer");
}

#[test]
fn a_change_the_columns_do_not_show_is_not_printed_as_no_change() {
    let ns = namespace();
    ns.ip(&["route", "add", "10.190.0.0/16", "via", "192.0.2.2"])
        .expect("ip route add");
    let mut command = netmirror(&["--netns", ns.name(), "monitor", "route"]);
    command.env("RUST_LOG", "netmirror::monitor=debug");
    let mut monitor = Monitor::start(command, "monitor ready");
    ns.ip(&[
        "route",
        "change",
        "10.190.0.0/16",
        "via",
        "192.0.2.2",
        "mtu",
        "1400",
    ])
    .expect("ip route change");
    let line = monitor.expect_line(EVENT_TIMEOUT, |line| line.contains("10.190.0.0/16"));
    assert!(line.contains("changed"), "{line}");
    assert!(
        line.contains('\u{2192}') || line.contains("attributes without a column changed"),
        "a change printed as none: {line}"
    );
}

#[test]
fn monitor_lines_list_the_hops_of_a_route_on_a_group() {
    let ns = namespace();
    let mut command = netmirror(&["--netns", ns.name(), "monitor", "route"]);
    command.env("RUST_LOG", "netmirror::monitor=debug");
    let mut monitor = Monitor::start(command, "monitor ready");
    ns.ip(&["route", "add", "10.191.0.0/16", "nhid", "10"])
        .expect("ip route add");
    let added = monitor.expect_line(EVENT_TIMEOUT, |line| line.contains("10.191.0.0/16"));
    assert!(added.contains("added"), "{added}");
    assert!(
        added.contains("192.0.2.2") && added.contains("192.0.2.3"),
        "the hops are not listed: {added}"
    );
    // A member deleted: the route's hops change without a route event from the kernel.
    ns.ip(&["nexthop", "del", "id", "2"])
        .expect("ip nexthop del");
    let changed = monitor.expect_line(EVENT_TIMEOUT, |line| line.contains("10.191.0.0/16"));
    assert!(changed.contains("changed"), "{changed}");
    assert!(changed.contains('\u{2192}'), "{changed}");
}

/// The monitor's lines (until `quiet` passes without one) after one change.
fn lines_after(monitor: &mut Monitor, quiet: Duration) -> Vec<String> {
    let mut lines = Vec::new();
    while let Some(line) = monitor.try_line(quiet) {
        lines.push(line);
    }
    lines
}

/// Of `lines`, the one about the route to `dst` that is `event` (`added`, `removed`,
/// `changed`), in text or JSON.
#[track_caller]
fn route_line<'a>(lines: &'a [String], json: bool, event: &str, dst: &str) -> &'a str {
    lines
        .iter()
        .find(|line| {
            if json {
                let value: Value = serde_json::from_str(line).expect("JSON");
                value["event"] == event
                    && (value["old"]["dst"] == dst || value["new"]["dst"] == dst)
            } else {
                line.contains(&format!("{event} ")) && line.contains(&format!("{dst} "))
            }
        })
        .unwrap_or_else(|| panic!("no `{event}` line for {dst} in {lines:#?}"))
}

/// Every `changed` line says what changed: old and new differ in JSON, and the text has an
/// arrow.
#[track_caller]
fn assert_changes_differ(lines: &[String], json: bool) {
    for line in lines {
        if json {
            let value: Value = serde_json::from_str(line).expect("JSON");
            if value["event"] == "changed" {
                assert_ne!(value["old"], value["new"], "old equals new: {line}");
            }
        } else if line.contains("changed") {
            assert!(
                line.contains('\u{2192}'),
                "a change printed as none: {line}"
            );
        }
    }
}

/// The hop flags of the route in a JSON event's `old` or `new`, hop by hop.
fn hop_flags(route: &Value) -> Vec<Value> {
    route["nexthops"]
        .as_array()
        .map(|hops| hops.iter().map(|hop| hop["flags"].clone()).collect())
        .unwrap_or_default()
}

/// What the kernel does without a route notification, as monitor lines: routes deleted with
/// their nexthop object are `removed`; carrier loss on the veth peer sets `linkdown` on the
/// hops through veth0 (and on a route through it), a `changed` line that shows the flags
/// before and after; and no `changed` line prints old equal to new. In text and in JSON.
#[test]
fn monitor_prints_the_kernels_silent_route_changes() {
    for json in [false, true] {
        let ns = namespace();
        for line in [
            "route add 10.180.0.0/16 nhid 1",
            "route add 10.182.0.0/16 nhid 3",
            "route add 10.192.0.0/16 nexthop via 192.0.2.2 dev veth0 weight 1 nexthop via 192.0.2.3 dev veth0 weight 2",
            "route add 10.193.0.0/16 via 192.0.2.2 dev veth0",
        ] {
            let args: Vec<&str> = line.split_whitespace().collect();
            ns.ip(&args).expect(line);
        }
        let mut args = vec!["--netns", ns.name()];
        if json {
            args.push("--json");
        }
        args.extend(["monitor", "route"]);
        let mut command = netmirror(&args);
        command.env("RUST_LOG", "netmirror::monitor=debug");
        let mut monitor = Monitor::start(command, "monitor ready");
        let quiet = Duration::from_secs(2);

        // A blackhole nexthop deleted: its route goes with it, with no RTM_DELROUTE.
        ns.ip(&["nexthop", "del", "id", "3"])
            .expect("ip nexthop del");
        let lines = lines_after(&mut monitor, quiet);
        route_line(&lines, json, "removed", "10.182.0.0/16");
        assert_changes_differ(&lines, json);
        ns.ip(&["nexthop", "del", "id", "1"])
            .expect("ip nexthop del");
        let lines = lines_after(&mut monitor, quiet);
        route_line(&lines, json, "removed", "10.180.0.0/16");
        assert_changes_differ(&lines, json);

        // Carrier loss on veth0: the kernel marks the hops `linkdown` and tells nobody.
        ns.ip(&["link", "set", "veth1", "down"])
            .expect("ip link set down");
        let lines = lines_after(&mut monitor, quiet);
        assert_changes_differ(&lines, json);
        let multipath = route_line(&lines, json, "changed", "10.192.0.0/16");
        let single = route_line(&lines, json, "changed", "10.193.0.0/16");
        if json {
            let multipath: Value = serde_json::from_str(multipath).expect("JSON");
            assert_eq!(
                hop_flags(&multipath["old"]),
                [serde_json::json!([]), serde_json::json!([])],
                "{multipath}"
            );
            assert_eq!(
                hop_flags(&multipath["new"]),
                [
                    serde_json::json!(["linkdown"]),
                    serde_json::json!(["linkdown"])
                ],
                "{multipath}"
            );
            let single: Value = serde_json::from_str(single).expect("JSON");
            assert_eq!(single["old"]["flags"], serde_json::json!([]), "{single}");
            assert_eq!(
                single["new"]["flags"],
                serde_json::json!(["linkdown"]),
                "{single}"
            );
        } else {
            assert!(
                multipath.contains(
                    "nexthops via 192.0.2.2 dev veth0 weight 1; via 192.0.2.3 dev veth0 weight 2 \
                     \u{2192} via 192.0.2.2 dev veth0 weight 1 linkdown; via 192.0.2.3 dev veth0 \
                     weight 2 linkdown"
                ),
                "{multipath}"
            );
            assert!(single.contains("flags -- \u{2192} linkdown"), "{single}");
        }
        // The carrier back: the flags go, as a change again.
        ns.ip(&["link", "set", "veth1", "up"])
            .expect("ip link set up");
        let lines = lines_after(&mut monitor, quiet);
        assert_changes_differ(&lines, json);
        let multipath = route_line(&lines, json, "changed", "10.192.0.0/16");
        if json {
            let multipath: Value = serde_json::from_str(multipath).expect("JSON");
            assert_eq!(
                hop_flags(&multipath["new"]),
                [serde_json::json!([]), serde_json::json!([])],
                "{multipath}"
            );
        } else {
            assert!(
                multipath.contains(
                    "nexthops via 192.0.2.2 dev veth0 weight 1 linkdown; via 192.0.2.3 dev veth0 \
                     weight 2 linkdown \u{2192} via 192.0.2.2 dev veth0 weight 1; via 192.0.2.3 \
                     dev veth0 weight 2"
                ),
                "{multipath}"
            );
        }
    }
}

/// `route -d` prints the nexthop object of a route on one (`nh_info ...`) as `ip -d route`
/// does, for single, blackhole, onlink, group and resilient group nexthops, line for line.
#[test]
fn route_details_show_the_nexthop_object_as_ip_does() {
    let ns = namespace();
    for line in [
        "route add 10.180.0.0/16 nhid 1",
        "route add 10.181.0.0/16 nhid 2",
        "route add 10.182.0.0/16 nhid 3",
        "route add 10.183.0.0/16 nhid 10",
        "route add 10.184.0.0/16 nhid 11 table 100",
    ] {
        let args: Vec<&str> = line.split_whitespace().collect();
        ns.ip(&args).expect(line);
    }
    let normal = |text: &str| -> Vec<String> {
        text.lines()
            .map(|line| {
                let indent = if line.starts_with('\t') { "\t" } else { "" };
                format!(
                    "{indent}{}",
                    line.split_whitespace().collect::<Vec<_>>().join(" ")
                )
            })
            .collect()
    };
    let theirs = ns
        .ip(&["-4", "-d", "route", "show", "table", "all"])
        .expect("ip -d route");
    let ours = nm(&[
        "-d",
        "--netns",
        ns.name(),
        "-4",
        "route",
        "show",
        "table",
        "all",
    ]);
    let ours = normal(ours.ok());
    assert_eq!(ours, normal(&theirs));
    for expected in [
        "\tnh_info id 1 via 192.0.2.2 dev veth0 scope link proto unspec",
        "\tnh_info id 2 via 192.0.2.3 dev veth0 scope link proto zebra onlink",
        "\tnh_info id 3 scope global blackhole proto unspec",
        "\tnh_info id 10 group 1/2,3 scope global proto unspec",
    ] {
        assert!(
            ours.iter().any(|line| line == expected),
            "{expected:?} in {ours:#?}"
        );
    }
    assert!(
        ours.iter()
            .any(|line| line.starts_with("\tnh_info id 11 group 1/2 type resilient buckets 8 ")),
        "{ours:#?}"
    );
}
