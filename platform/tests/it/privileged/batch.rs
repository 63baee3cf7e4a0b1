//! Batches: one bad item is reported with its index and the kernel's message; the others are
//! applied, or, with `stop_on_error`, nothing after the failing send is sent.

use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

use netmirror_platform::{Address, Item, Op, Platform, Route, Table};

use super::support::{config, netns_with_veth};
use crate::support::bounded;

const LIMIT: Duration = Duration::from_secs(60);

/// `nmx0`'s index, and a route the kernel refuses with an extended ack: its gateway is not on
/// the link.
fn nmx0_and_bad_route(platform: &Platform) -> (netmirror_platform::Ifindex, Route) {
    let ifindex = platform.links().name("nmx0").execute().unwrap().items[0].ifindex();
    let bad = Route::new("10.200.0.0".parse().unwrap(), 16)
        .with_gateway("198.51.100.1".parse().unwrap())
        .with_oif(ifindex);
    (ifindex, bad)
}

fn route(i: u32, ifindex: netmirror_platform::Ifindex) -> Route {
    Route::new(IpAddr::V4(Ipv4Addr::from(0x0a00_0000 + (i << 8))), 24)
        .with_gateway("192.0.2.2".parse().unwrap())
        .with_oif(ifindex)
}

#[test]
fn one_bad_item_is_reported_and_the_rest_applied() {
    bounded(LIMIT, || {
        let ns = netns_with_veth();
        let platform = Platform::open(config(&ns)).unwrap();
        let (ifindex, bad) = nmx0_and_bad_route(&platform);
        let mut batch = platform.batch().per_send(4);
        for i in 0..10 {
            if i == 5 {
                batch = batch.add_route(bad.clone());
            }
            batch = batch.add_route(route(i, ifindex));
        }
        let report = batch.execute().unwrap();
        assert_eq!(report.n_ok, 10);
        assert_eq!(report.n_sends, 3);
        assert_eq!(report.failures.len(), 1);
        let failure = &report.failures[0];
        assert_eq!(failure.index, 5);
        assert_eq!(failure.item, Item::Route(Op::Add, bad.clone()));
        assert_eq!(failure.error.errno, libc::ENETUNREACH);
        let message = failure.error.message.as_deref().unwrap_or_default();
        assert!(message.contains("gateway"), "{message:?}");
        assert!(
            failure.error.to_string().contains(message),
            "{}",
            failure.error
        );
        let table = platform
            .routes()
            .table(netmirror_platform::Table::MAIN)
            .dev(ifindex)
            .execute()
            .unwrap();
        assert_eq!(
            table
                .items
                .iter()
                .filter(|r| r.dst_len() == 24 && r.gateway().is_some())
                .count(),
            10
        );

        // Adding them again fails for each (EEXIST); stopping at the first failure sends
        // nothing after the first send.
        let mut again = platform.batch().per_send(1).stop_on_error(true);
        for i in 0..10 {
            again = again.add_route(route(i, ifindex));
        }
        let report = again.execute().unwrap();
        assert_eq!(report.n_ok, 0);
        assert_eq!(report.failures.len(), 1);
        assert_eq!(report.failures[0].error.errno, libc::EEXIST);
        assert_eq!(report.n_skipped, 9);
        assert_eq!(report.n_sends, 1);

        // Replace and delete, routes and addresses in one batch.
        let addr = Address::new(ifindex, "192.0.2.77".parse().unwrap(), 24);
        let missing = Address::new(ifindex, "192.0.2.78".parse().unwrap(), 24);
        let report = platform
            .batch()
            .replace_route(route(0, ifindex).with_priority(0))
            .delete_route(route(1, ifindex))
            .add_address(addr.clone())
            .delete_address(missing)
            .execute()
            .unwrap();
        assert_eq!(report.n_ok, 3, "{report:?}");
        assert_eq!(report.failures.len(), 1);
        assert_eq!(report.failures[0].index, 3);
        assert_eq!(report.failures[0].error.errno, libc::EADDRNOTAVAIL);
        let addrs = platform.addresses().ifindex(ifindex).execute().unwrap();
        assert!(addrs.items.iter().any(|held| held.id() == addr.id()));
    });
}

/// The routes of table main on `ifindex` that `route` makes (/24 via a gateway), sorted.
fn held(platform: &Platform, ifindex: netmirror_platform::Ifindex) -> Vec<Route> {
    let mut routes: Vec<Route> = platform
        .routes()
        .table(netmirror_platform::Table::MAIN)
        .dev(ifindex)
        .execute()
        .unwrap()
        .items
        .into_iter()
        .filter(|r| r.dst_len() == 24 && r.gateway().is_some())
        .collect();
    routes.sort_by_key(|r| r.dst());
    routes
}

#[test]
fn undo_past_failure_stops_exactly_at_the_first_failure() {
    bounded(LIMIT, || {
        let ns = netns_with_veth();
        let platform = Platform::open(config(&ns)).unwrap();
        let (ifindex, bad) = nmx0_and_bad_route(&platform);

        // Adds: everything in one send; what followed the refused item is deleted again.
        let report = platform
            .batch()
            .stop_on_error(true)
            .undo_past_failure(true)
            .add_route(route(0, ifindex))
            .add_route(route(1, ifindex))
            .add_route(bad.clone())
            .add_route(route(2, ifindex))
            .add_route(route(3, ifindex))
            .add_route(route(0, ifindex))
            .execute()
            .unwrap();
        assert_eq!(report.n_ok, 2, "{report:?}");
        assert_eq!(report.failures.len(), 1, "{report:?}");
        assert_eq!(report.failures[0].index, 2);
        assert_eq!(report.failures[0].error.errno, libc::ENETUNREACH);
        // Routes 2 and 3 were applied and undone; the repeated route 0 failed (EEXIST), which
        // is not reported since the batch stopped before it.
        assert_eq!(report.n_undone, 2, "{report:?}");
        assert_eq!(report.n_skipped, 3, "{report:?}");
        assert!(report.undo_failures.is_empty(), "{report:?}");
        assert_eq!(report.n_sends, 2, "one send, one undo send: {report:?}");
        let before = held(&platform, ifindex);
        let dsts: Vec<Route> = (0..2).map(|i| route(i, ifindex)).collect();
        assert_eq!(
            before.iter().map(Route::dst).collect::<Vec<_>>(),
            dsts.iter().map(Route::dst).collect::<Vec<_>>()
        );

        // Deletes: route 1's delete follows the refused one, so it comes back as it was.
        let report = platform
            .batch()
            .stop_on_error(true)
            .undo_past_failure(true)
            .delete_route(route(5, ifindex))
            .delete_route(route(1, ifindex))
            .execute()
            .unwrap();
        assert_eq!(report.n_ok, 0, "{report:?}");
        assert_eq!(report.failures[0].index, 0);
        assert_eq!(report.failures[0].error.errno, libc::ESRCH);
        assert_eq!(report.n_undone, 1, "{report:?}");
        assert_eq!(
            held(&platform, ifindex),
            before,
            "route 1 added back as it was"
        );

        // A replace cannot be undone: it starts a send of its own.
        let report = platform
            .batch()
            .stop_on_error(true)
            .undo_past_failure(true)
            .add_route(route(7, ifindex))
            .replace_route(route(8, ifindex))
            .add_route(route(9, ifindex))
            .execute()
            .unwrap();
        assert!(report.is_success(), "{report:?}");
        assert_eq!(report.n_sends, 2, "{report:?}");
    });
}

/// Issue 15: a batch cancelled from another thread (a signal handler's flag) stops between two
/// sends; what it reports applied is exactly what the kernel holds.
#[test]
fn a_cancelled_batch_stops_between_sends_and_reports_exactly() {
    bounded(LIMIT, || {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicBool, Ordering};
        let ns = netns_with_veth();
        let platform = Platform::open(config(&ns)).unwrap();
        let ifindex = platform.links().name("nmx0").execute().unwrap().items[0].ifindex();
        let route = |i: u32| {
            Route::new(IpAddr::V4(Ipv4Addr::from(0x0a50_0000 + i)), 32)
                .with_oif(ifindex)
                .with_table(Table(100))
        };
        // Set before the batch runs: nothing is sent.
        let flag = Arc::new(AtomicBool::new(true));
        let report = (0..1000)
            .fold(platform.batch(), |batch, i| batch.add_route(route(i)))
            .cancel_on(Arc::clone(&flag))
            .execute()
            .unwrap();
        assert_eq!(
            (report.n_ok, report.n_cancelled, report.n_sends),
            (0, 1000, 0)
        );
        assert!(!report.is_success());
        // Set while it runs: the sends made are complete, the rest never sent.
        flag.store(false, Ordering::Relaxed);
        let n = 100_000;
        let batch = (0..n)
            .fold(platform.batch(), |batch, i| batch.add_route(route(i)))
            .per_send(16)
            .stop_on_error(true)
            .undo_past_failure(true)
            .cancel_on(Arc::clone(&flag));
        let setter = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(30));
            flag.store(true, Ordering::Relaxed);
        });
        let report = batch.execute().unwrap();
        setter.join().unwrap();
        assert!(report.failures.is_empty(), "{report:?}");
        assert_eq!(report.n_ok + report.n_cancelled, n as usize);
        assert!(
            report.n_cancelled > 0,
            "the batch finished before the flag: {report:?}"
        );
        assert!(
            report.n_ok > 0,
            "the flag came before the batch ran: {report:?}"
        );
        let held = platform.routes().table(Table(100)).execute().unwrap().items;
        assert_eq!(held.len(), report.n_ok);
        // Exactly the first n_ok items.
        assert!(held.iter().all(|r| u32::from(match r.dst() {
            IpAddr::V4(v4) => v4,
            IpAddr::V6(_) => unreachable!(),
        }) - 0x0a50_0000
            < report.n_ok as u32));
    });
}

/// Two namespaces alike (`netns_with_veth`): lines applied to `ours` by the batch and to
/// `theirs` by `ip -batch` leave the same state there if the batch reads them as `ip` does.
struct Twins {
    ours: netmirror_platform::testing::NetNs,
    theirs: netmirror_platform::testing::NetNs,
    platform: Platform,
}

impl Twins {
    fn new() -> Self {
        let ours = netns_with_veth();
        let platform = Platform::open(config(&ours)).unwrap();
        Twins {
            ours,
            theirs: netns_with_veth(),
            platform,
        }
    }

    /// Applies `lines` through the batch (every line must parse and be applied) and through
    /// `ip -batch`.
    fn apply(&self, lines: &str) {
        self.apply_family(None, lines);
    }

    /// [`Twins::apply`] with a family option (`-6`): given to each line of the batch, and to
    /// `ip`, whose batch lines take none.
    fn apply_family(&self, family: Option<&str>, lines: &str) {
        let links = self.platform.links().execute().unwrap();
        let ifindex = |name: &str| {
            links
                .items
                .iter()
                .find(|link| link.name() == name)
                .map(|link| link.ifindex())
        };
        let mut batch = self.platform.batch();
        match family {
            // The file as a whole: comments, continuation lines.
            None => {
                for line in netmirror_platform::ipbatch::parse(lines, &ifindex) {
                    let item = line
                        .item
                        .unwrap_or_else(|err| panic!("{}: {err}", line.text));
                    batch = batch.push(item);
                }
            }
            Some(family) => {
                for line in lines.lines().filter(|line| !line.trim().is_empty()) {
                    let line = format!("{family} {line}");
                    let item = netmirror_platform::ipbatch::parse_line(&line, &ifindex)
                        .unwrap_or_else(|err| panic!("{line}: {err}"));
                    batch = batch.push(item);
                }
            }
        }
        let report = batch.execute().unwrap();
        assert!(report.failures.is_empty(), "{report:?}");
        // One file per apply: the tests run side by side in one process.
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("nmx-twins-{}-{n}.batch", std::process::id()));
        std::fs::write(&path, lines).unwrap();
        let mut args: Vec<&str> = family.into_iter().collect();
        args.extend(["-batch", path.to_str().unwrap()]);
        let applied = self.theirs.ip(&args);
        let _ = std::fs::remove_file(&path);
        applied.unwrap();
    }

    /// `ip -j -d ARGS` in both namespaces, the rows whose `key` starts with one of `prefixes`
    /// (sorted, lifetimes rounded down to the minute); asserts they are equal and returns ours.
    fn same(&self, args: &[&str], key: &str, prefixes: &[&str]) -> Vec<serde_json::Value> {
        let rows = |ns: &netmirror_platform::testing::NetNs| {
            let mut args = args.to_vec();
            args.splice(0..0, ["-j", "-d"]);
            let out = ns.ip(&args).unwrap();
            let json: Vec<serde_json::Value> = serde_json::from_str(&out).unwrap();
            // `addr show` nests the addresses in their link.
            let rows = if key == "local" {
                json.iter()
                    .flat_map(|link| link["addr_info"].as_array().cloned().unwrap_or_default())
                    .collect()
            } else {
                json
            };
            let mut rows: Vec<serde_json::Value> = rows
                .into_iter()
                .filter(|row| {
                    let text = row[key].as_str().unwrap_or_default();
                    prefixes.iter().any(|prefix| text.starts_with(prefix))
                })
                .collect();
            for row in &mut rows {
                for field in ["valid_life_time", "preferred_life_time"] {
                    if let Some(secs) = row[field].as_u64().filter(|&s| s != u64::from(u32::MAX)) {
                        row[field] = serde_json::json!(secs / 60 * 60);
                    }
                }
            }
            rows.sort_by_key(|row| row.to_string());
            rows
        };
        let ours = rows(&self.ours);
        assert_eq!(ours, rows(&self.theirs), "ip {args:?}");
        ours
    }
}

/// The address lines of a batch file, with the keywords and flags of `ip addr add` (not
/// `proto`, which iproute2 6.1 does not take, nor `remote`, `optimistic` and `autojoin`, which
/// the unit tests cover), applied by the batch and by `ip -batch`: `ip -j -d addr` shows the
/// same addresses, field by field; then the same after deletes.
#[test]
fn address_lines_apply_as_ip_batch_applies_them() {
    const PREFIXES: &[&str] = &["10.5", "127.", "2001:db8:5"];
    bounded(LIMIT, || {
        let twins = Twins::new();
        twins.apply(
            "\
addr add 10.50.0.1/24 dev nmx0 label nmx0:a brd + metric 77 valid_lft 300 preferred_lft 200 noprefixroute
addr add 10.51.0.1 peer 10.51.0.2/30 dev nmx0 scope link
addr add local 10.52.0.1/24 dev nmx0 broadcast - scope host
addr add 127.0.0.9/8 dev nmx0
addr add 2001:db8:50::1/64 dev nmx0 nodad home
addr add 2001:db8:51::1/64 dev nmx0 nodad mngtmpaddr preferred_lft 0 metric 5
addr replace 2001:db8:52::1/64 dev nmx0 nodad valid_lft forever preferred_lft forever
",
        );
        let held = twins.same(&["addr", "show", "dev", "nmx0"], "local", PREFIXES);
        assert_eq!(held.len(), 7, "{held:#?}");
        // Deletes: a point-to-point address by its peer, a loopback one, an IPv6 one.
        twins.apply(
            "\
addr del 10.51.0.1 peer 10.51.0.2/30 dev nmx0
addr del 127.0.0.9/8 dev nmx0
addr del 2001:db8:50::1/64 dev nmx0
",
        );
        let held = twins.same(&["addr", "show", "dev", "nmx0"], "local", PREFIXES);
        assert_eq!(held.len(), 4, "{held:#?}");
    });
}

/// Route lines with `to`, `tos`/`dsfield`, short IPv4 prefixes, the prefix after other
/// keywords and a realm by its name, applied by the batch and by
/// `ip -batch`: `ip -j -d route show table all` shows the same routes, field by field.
#[test]
fn route_lines_with_tos_and_short_prefixes_apply_as_ip_batch_applies_them() {
    bounded(LIMIT, || {
        let twins = Twins::new();
        twins.apply(
            "\
route add to 10.61/16 dev nmx0 tos 10
route add to unicast 10.62.3/24 via 192.0.2.2 dsfield AF11 table 100
route add 10.63/16 via 192.0.2.2 tos 0xb8 metric 7
route add 10.64 dev nmx0
route add blackhole 10.65/16 tos CS1 table 101
route add dev nmx0 10.66/16 metric 3
route add table 102 via 192.0.2.2 to unicast 10.67.0.0/24
route add 10.68/16 dev nmx0 realms 5/cosmos
",
        );
        let held = twins.same(&["route", "show", "table", "all"], "dst", &["10.6"]);
        assert_eq!(held.len(), 8, "{held:#?}");
    });
}

/// `route change`, `route append` (an IPv6 route beside one of the same identity), `route
/// prepend` and `addr change`, applied by the batch and by `ip -batch`: `ip -j -d` shows the
/// same routes and addresses.
#[test]
fn change_append_and_prepend_apply_as_ip_batch_applies_them() {
    bounded(LIMIT, || {
        let twins = Twins::new();
        twins.apply(
            "\
route add 10.71.0.0/24 via 192.0.2.2 metric 5
route change 10.71.0.0/24 via 192.0.2.3 metric 5 proto static
route add 2001:db8:71::/64 via 2001:db8:1::2 dev nmx0 metric 9
route append 2001:db8:71::/64 via 2001:db8:1::3 dev nmx0 metric 9
route prepend 10.72.0.0/24 dev nmx0 metric 3
route prepend 10.72.0.0/24 via 192.0.2.2 metric 3
addr add 10.73.0.1/24 dev nmx0 valid_lft 500 preferred_lft 500
addr change 10.73.0.1/24 dev nmx0 valid_lft forever preferred_lft forever metric 4
",
        );
        for family in ["-4", "-6"] {
            let args = [family, "route", "show", "table", "all"];
            let held = twins.same(&args, "dst", &["10.7", "2001:db8:71"]);
            assert!(!held.is_empty(), "{family}");
        }
        let held = twins.same(&["addr", "show", "dev", "nmx0"], "local", &["10.73"]);
        assert_eq!(held.len(), 1, "{held:#?}");
        assert_eq!(held[0]["valid_life_time"], u32::MAX);
    });
}

/// Rule lines with every selector and action iproute2 6.1 takes (and its abbreviations),
/// IPv4 and IPv6, with and without a priority, applied by the batch and by `ip -batch`: `ip -j
/// -d rule show` shows the same rules, field by field; then the same after deletes by
/// priority, by selectors alone and by action.
#[test]
fn rule_lines_apply_as_ip_batch_applies_them() {
    bounded(LIMIT, || {
        let twins = Twins::new();
        twins.apply(
            "\
rule add from 10.1.0.0/16 lookup 100 pref 1000
rule add not to 192.0.2.0/24 tos 0x10 fwmark 0x10/0xff iif nmx0 oif nmx0 table 70000 pref 1001 proto static
rule add fwmark 7 uidrange 100-200 ipproto tcp sport 1000-2000 dport 53 table 5 pref 1002
rule add from 10.2/16 realms 1/2 lookup main suppress_prefixlength 0 pref 1003
rule add iif lo suppress_ifgroup 3 lookup 6 pref 1004
rule add blackhole from 10.9.0.0/16 pref 1005
rule add unreachable to 10.10.0.0/16 pref 1006
rule add type prohibit tun_id 0x1234 pref 1007
rule add goto 1010 pref 1008
rule add nop pref 1009
rule add from 10.3.0.0/16 table 7
rule add fwmark 9 dsfield 0x8 table 8
rule add o 1011 t 5 ta 12 pro 42
rule add fwmark 0x11 oif nosuch0 lookup 13 pref 1012
rule add l3mdev pref 1013
",
        );
        twins.apply_family(
            Some("-6"),
            "\
rule add from 2001:db8:1::/48 table 100 pref 2000
rule add to 2001:db8:2::/64 fwmark 3 iif nmx0 table 101 pref 2001
rule add ipproto udp dport 4789 table 102 pref 2002
rule add fwmark 4 table 103
",
        );
        let v4 = twins.same(&["-4", "rule", "show"], "", &[""]);
        let v6 = twins.same(&["-6", "rule", "show"], "", &[""]);
        // The kernel's own rules (three IPv4, two IPv6) besides the lines'.
        assert_eq!((v4.len(), v6.len()), (3 + 15, 2 + 4), "{v4:#?} {v6:#?}");
        twins.apply(
            "\
rule del pref 1000
rule del from 10.3.0.0/16 table 7
rule del blackhole from 10.9.0.0/16
rule del fwmark 0x10/0xff not to 192.0.2.0/24
rule del nop
rule del t 5
",
        );
        twins.apply_family(
            Some("-6"),
            "rule del from 2001:db8:1::/48\nrule del fwmark 4\n",
        );
        let v4 = twins.same(&["-4", "rule", "show"], "", &[""]);
        let v6 = twins.same(&["-6", "rule", "show"], "", &[""]);
        assert_eq!((v4.len(), v6.len()), (3 + 9, 2 + 2), "{v4:#?} {v6:#?}");
    });
}

/// The selectors newer than this host's iproute2 (port masks, DSCP with its mask, the IPv6
/// flow label), sent by the batch: the kernel reports each as the line set it.
#[test]
fn newer_rule_selectors_reach_the_kernel() {
    bounded(LIMIT, || {
        let ns = netns_with_veth();
        let platform = Platform::open(config(&ns)).unwrap();
        let ifindex = |_: &str| None;
        let lines = "\
-6 rule add dscp 24/0x38 flowlabel 0x12/0xff sport 0x1200/0xff00 table 5 pref 3000
rule add dscp EF dport 48/0xfff0 table 6 pref 3001
";
        let mut batch = platform.batch();
        for line in netmirror_platform::ipbatch::parse(lines, &ifindex) {
            batch = batch.push(line.item.unwrap());
        }
        let report = batch.execute().unwrap();
        assert!(report.is_success(), "{report:?}");
        let rules = platform.rules().execute().unwrap().items;
        let find = |priority| {
            rules
                .iter()
                .find(|rule| rule.priority() == priority)
                .unwrap_or_else(|| panic!("no rule {priority}: {rules:#?}"))
        };
        let r = find(3000);
        assert_eq!((r.dscp(), r.dscp_mask()), (Some(24), Some(0x38)), "{r:?}");
        assert_eq!(r.flowlabel(), Some((0x12, Some(0xff))), "{r:?}");
        assert_eq!(
            (r.sport(), r.port_masks().0),
            (Some((0x1200, 0x1200)), Some(0xff00)),
            "{r:?}"
        );
        let r = find(3001);
        assert_eq!(r.dscp(), Some(46), "{r:?}");
        assert_eq!(
            (r.dport(), r.port_masks().1),
            (Some((48, 48)), Some(0xfff0)),
            "{r:?}"
        );
    });
}

/// A file with comments (a whole line, after a command, before a backslash), continuation
/// lines and quoted words, applied by the batch and by `ip -batch`: `ip -j -d` shows the same
/// routes and addresses.
#[test]
fn comments_continuations_and_quotes_apply_as_ip_batch_applies_them() {
    bounded(LIMIT, || {
        let twins = Twins::new();
        twins.apply(
            "\
# the lab's routes
route add 10.81.0.0/16 dev nmx0 # a comment after a command
route add 10.82.0.0/16 \\
\tvia 192.0.2.2 \\
  metric 5
route add 10.83.0.0/16 dev nmx0 metric 6 #\\
addr add 10.84.0.1/24 dev \"nmx0\" label 'nmx0:a b'
route add \"10.85.0.0/16\" dev nmx0\tmetric 7\r
",
        );
        // Four routes, and the address's prefix, local and broadcast routes.
        let held = twins.same(&["route", "show", "table", "all"], "dst", &["10.8"]);
        assert_eq!(held.len(), 4 + 3, "{held:#?}");
        let held = twins.same(&["addr", "show", "dev", "nmx0"], "local", &["10.84"]);
        assert_eq!(held.len(), 1, "{held:#?}");
        assert_eq!(held[0]["label"], "nmx0:a b");
    });
}
