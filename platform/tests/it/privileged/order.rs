//! Routes that share a prefix key keep the kernel's order through events: `ip route prepend`
//! goes before its peers, `append` after them, `replace` takes the first one's place. (Across
//! different prefix keys the kernel orders by its trie; the cache keeps event order there, so
//! the comparison groups by metric, stably.)

use std::time::Duration;

use netmirror_platform::testing::NetNs;
use netmirror_platform::{Cache, Family, Route};
use serde_json::Value;

use super::support::{config, ip, netns_with_veth, settle};
use crate::support::bounded;

const LIMIT: Duration = Duration::from_secs(120);

/// `dst metric gateway` of each route of `dst` in table main, in kernel order.
fn ip_order(ns: &NetNs, family: &str, dst: &str) -> Vec<String> {
    let out = ns
        .ip(&["-j", family, "route", "show", "exact", dst])
        .unwrap();
    let routes: Value = serde_json::from_str(&out).unwrap();
    routes
        .as_array()
        .unwrap()
        .iter()
        .map(|route| {
            let hops = match route["nexthops"].as_array() {
                Some(hops) => hops
                    .iter()
                    .map(|hop| hop["gateway"].as_str().unwrap_or("-").to_owned())
                    .collect::<Vec<_>>()
                    .join(","),
                None => route["gateway"].as_str().unwrap_or("-").to_owned(),
            };
            format!(
                "{dst} metric {} via {hops}",
                route["metric"].as_u64().unwrap_or(0)
            )
        })
        .collect()
}

/// The same for the cache, in its order within each metric.
fn cache_order(cache: &Cache, family: Family, dst: &str) -> Vec<String> {
    let (addr, len) = dst.split_once('/').unwrap();
    let addr: std::net::IpAddr = addr.parse().unwrap();
    let len: u8 = len.parse().unwrap();
    let mut routes: Vec<&Route> = cache
        .routes()
        .map(|route| &**route)
        .filter(|route| {
            route.family() == family
                && route.table() == netmirror_platform::Table::MAIN
                && route.dst() == addr
                && route.dst_len() == len
        })
        .collect();
    routes.sort_by_key(|route| route.priority());
    routes
        .into_iter()
        .map(|route| {
            let hops = if route.multipath().is_empty() {
                gateway(route)
            } else {
                route
                    .multipath()
                    .iter()
                    .map(|hop| hop.gateway.map_or("-".to_owned(), |gw| gw.to_string()))
                    .collect::<Vec<_>>()
                    .join(",")
            };
            format!("{dst} metric {} via {hops}", route.priority())
        })
        .collect()
}

fn gateway(route: &Route) -> String {
    route.gateway().map_or("-".to_owned(), |gw| gw.to_string())
}

#[test]
fn same_prefix_routes_keep_the_kernels_order() {
    bounded(LIMIT, || {
        let ns = netns_with_veth();
        let mut cache = Cache::open(config(&ns)).unwrap();
        settle(&mut cache, Duration::from_secs(10));

        let v4 = "10.20.0.0/24";
        let steps = [
            "route add 10.20.0.0/24 dev nmx0 metric 5",
            "route prepend 10.20.0.0/24 via 192.0.2.2 metric 5",
            "route append 10.20.0.0/24 via 192.0.2.3 metric 5",
            "route prepend 10.20.0.0/24 via 192.0.2.4 metric 5",
            "route replace 10.20.0.0/24 via 192.0.2.5 metric 5",
            "route add 10.20.0.0/24 via 192.0.2.6 metric 6",
            "route prepend 10.20.0.0/24 via 192.0.2.7 metric 4",
            "route append 10.20.0.0/24 via 192.0.2.8 metric 5",
            "route del 10.20.0.0/24 via 192.0.2.2 metric 5",
        ];
        run_steps(&ns, &mut cache, Family::V4, v4, &steps);

        let v6 = "2001:db8:20::/64";
        let steps = [
            "-6 route add 2001:db8:20::/64 dev nmx0 metric 5",
            "-6 route append 2001:db8:20::/64 via 2001:db8:1::2 metric 5",
            "-6 route prepend 2001:db8:20::/64 via 2001:db8:1::3 metric 5",
            "-6 route add 2001:db8:20::/64 via 2001:db8:1::4 metric 6",
            "-6 route replace 2001:db8:20::/64 via 2001:db8:1::5 metric 5",
            "-6 route prepend 2001:db8:20::/64 via 2001:db8:1::6 metric 4",
            "-6 route append 2001:db8:20::/64 via 2001:db8:1::7 metric 5",
            "-6 route append 2001:db8:20::/64 via 2001:db8:1::8 metric 5",
            "-6 route del 2001:db8:20::/64 via 2001:db8:1::7 metric 5",
            "-6 route prepend 2001:db8:20::/64 via 2001:db8:1::9 metric 5",
        ];
        run_steps(&ns, &mut cache, Family::V6, v6, &steps);
    });
}

/// Runs each `ip` step and compares the cache's order of `dst`'s routes with the kernel's.
fn run_steps(ns: &NetNs, cache: &mut Cache, family: Family, dst: &str, steps: &[&str]) {
    let flag = if family == Family::V4 { "-4" } else { "-6" };
    for step in steps {
        ip(ns, step);
        settle(cache, Duration::from_secs(10));
        assert_eq!(
            cache_order(cache, family, dst),
            ip_order(ns, flag, dst),
            "after `ip {step}`"
        );
    }
}
