//! Stop mode never loses a route: what the kernel applied after the failing item of a send is
//! undone exactly, every attribute included, for each kind of route the undo restores.

use std::time::Duration;

use netmirror_platform::{Platform, Route};
use serde_json::Value;

use super::support::{config, ip, netns_with_veth};
use crate::support::bounded;

const LIMIT: Duration = Duration::from_secs(60);

/// Every route of every table, as `ip -j -d` prints them, without the counters that move.
fn all_routes(ns: &netmirror_platform::testing::NetNs) -> Vec<Value> {
    let mut routes = Vec::new();
    for family in ["-4", "-6"] {
        let out = ns
            .ip(&[family, "-d", "-j", "route", "show", "table", "all"])
            .unwrap();
        let parsed: Value = serde_json::from_str(&out).unwrap();
        routes.extend(parsed.as_array().unwrap().iter().cloned());
    }
    routes
}

#[test]
fn undo_restores_every_kind_of_deleted_route_exactly() {
    bounded(LIMIT, || {
        let ns = netns_with_veth();
        let deleted = [
            // The case: a route on a nexthop object (the kernel echoes its gateway
            // and device too, and refuses them beside the id).
            ("nexthop add id 1 via 192.0.2.2 dev nmx0", None),
            ("route add 10.170.0.0/16 nhid 1", Some("10.170.0.0/16")),
            // On a group, and on a blackhole nexthop (reported as a blackhole route).
            ("nexthop add id 2 via 192.0.2.3 dev nmx0", None),
            ("nexthop add id 10 group 1/2,3", None),
            ("route add 10.171.0.0/16 nhid 10", Some("10.171.0.0/16")),
            ("nexthop add id 3 blackhole", None),
            (
                "route add 10.172.0.0/16 nhid 3 table 100",
                Some("10.172.0.0/16 table 100"),
            ),
            // Multipath with weights and an onlink hop.
            (
                "route add 10.173.0.0/16 nexthop via 192.0.2.2 dev nmx0 weight 1 \
                 nexthop via 198.18.0.9 dev nmx0 weight 3 onlink",
                Some("10.173.0.0/16"),
            ),
            // Metrics with locks, realms, a source, a protocol and a metric.
            (
                "route add 10.174.0.0/16 via 192.0.2.2 dev nmx0 mtu lock 1400 advmss 1300 \
                 window 65535 rtt 100ms hoplimit 9 initcwnd 20 initrwnd 30 quickack 1 \
                 realm 5 src 192.0.2.1 proto static metric 77",
                Some("10.174.0.0/16 metric 77"),
            ),
            // Plain types.
            ("route add blackhole 10.175.0.0/16", Some("10.175.0.0/16")),
            (
                "route add unreachable 10.176.0.0/16 table 100",
                Some("10.176.0.0/16 table 100"),
            ),
            ("route add prohibit 10.177.0.0/16", Some("10.177.0.0/16")),
            (
                "route add 10.178.0.0/16 via 198.18.0.1 dev nmx0 onlink",
                Some("10.178.0.0/16"),
            ),
            (
                "route add 10.179.0.0/16 dev nmx0 scope link",
                Some("10.179.0.0/16"),
            ),
            // Lightweight tunnel encapsulations.
            (
                "route add 10.180.0.0/16 encap ip id 5 dst 198.51.100.9 ttl 3 dev nmx0",
                Some("10.180.0.0/16"),
            ),
            (
                "route add 10.181.0.0/16 encap seg6 mode encap segs 2001:db8::1 dev nmx0",
                Some("10.181.0.0/16"),
            ),
        ];
        // seg6 needs a kernel option (CONFIG_IPV6_SEG6_LWTUNNEL): where the kernel lacks it,
        // the route is not made and not deleted.
        let mut deleted = deleted.to_vec();
        deleted.retain(|(line, _)| {
            if line.contains("encap seg6") {
                let args: Vec<&str> = line.split_whitespace().collect();
                return ns.ip_where_supported(&args).unwrap();
            }
            ip(&ns, line);
            true
        });
        let before = all_routes(&ns);
        let platform = Platform::open(config(&ns)).unwrap();
        let nmx0 = platform.links().name("nmx0").execute().unwrap().items[0].ifindex();
        let resolve = |name: &str| (name == "nmx0").then_some(nmx0);
        let mut text = String::from(
            "route add 10.169.0.0/16 via 192.0.2.2\nroute add 10.169.0.0/16 via 192.0.2.2\n",
        );
        for (_, del) in &deleted {
            if let Some(del) = del {
                text.push_str(&format!("route del {del}\n"));
            }
        }
        let items: Vec<_> = netmirror_platform::ipbatch::parse(&text, &resolve)
            .map(|line| line.item.unwrap())
            .collect();
        let n_deletes = items.len() - 2;
        let report = platform
            .batch()
            .extend(items)
            .stop_on_error(true)
            .undo_past_failure(true)
            .execute()
            .unwrap();
        assert_eq!(report.n_ok, 1, "{report:?}");
        assert_eq!(report.failures.len(), 1, "{report:?}");
        assert_eq!(report.failures[0].index, 1);
        assert_eq!(report.failures[0].error.errno, libc::EEXIST);
        assert!(report.undo_failures.is_empty(), "{report:?}");
        assert_eq!(report.n_undone, n_deletes, "{report:?}");
        assert_eq!(report.n_skipped, n_deletes, "{report:?}");
        assert_eq!(report.n_sends, 2, "the deletes were pipelined: {report:?}");

        ip(&ns, "route del 10.169.0.0/16");
        let after = all_routes(&ns);
        let missing: Vec<&Value> = before.iter().filter(|r| !after.contains(r)).collect();
        let extra: Vec<&Value> = after.iter().filter(|r| !before.contains(r)).collect();
        assert!(
            missing.is_empty() && extra.is_empty(),
            "routes changed by the undo\nmissing: {missing:#?}\nextra: {extra:#?}"
        );
    });
}

#[test]
fn a_route_built_on_a_nexthop_is_added_with_its_id_alone() {
    bounded(LIMIT, || {
        let ns = netns_with_veth();
        ip(&ns, "nexthop add id 7 via 192.0.2.2 dev nmx0");
        let platform = Platform::open(config(&ns)).unwrap();
        let report = platform
            .batch()
            .add_route(Route::new("10.180.0.0".parse().unwrap(), 16).with_nh_id(7))
            .execute()
            .unwrap();
        assert!(report.is_success(), "{report:?}");
        let held = platform
            .routes()
            .table(netmirror_platform::Table::MAIN)
            .execute()
            .unwrap();
        let route = held
            .items
            .iter()
            .find(|route| route.dst().to_string() == "10.180.0.0")
            .expect("the route");
        assert_eq!(route.nh_id(), Some(7));
        assert_eq!(route.gateway(), Some("192.0.2.2".parse().unwrap()));
    });
}
