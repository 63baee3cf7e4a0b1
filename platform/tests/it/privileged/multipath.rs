//! Multipath routes that the kernel changes without a word: a next hop's link deleted, taken
//! down or without a carrier while the route's first hop is elsewhere.

use std::time::Duration;

use std::net::IpAddr;

use netmirror_platform::Cache;
use netmirror_platform::testing::NetNs;
use serde_json::Value;

use super::support::{
    assert_cache_matches_ip, config, ip, netns_with_veth, open_without_link_refresh, settle,
};
use crate::support::bounded;

const LIMIT: Duration = Duration::from_secs(120);
const RTNH_F_DEAD: u8 = 1;

#[test]
fn silent_multipath_changes_are_caught() {
    bounded(LIMIT, || {
        let ns = netns_with_veth();
        for line in [
            "link add nmxbr0 type bridge",
            "link set nmxbr0 up",
            "addr add 198.18.0.1/24 dev nmxbr0",
            "link add nmxbr1 type bridge",
            "link set nmxbr1 up",
            "addr add 198.19.0.1/24 dev nmxbr1",
        ] {
            ip(&ns, line);
        }
        let mut cache = Cache::open(config(&ns)).unwrap();
        assert_cache_matches_ip(&mut cache, &ns);

        let script = [
            // First hop elsewhere, second on the link that goes.
            "route add 10.30.0.0/16 nexthop via 192.0.2.2 dev nmx0 nexthop via 198.18.0.2 dev nmxbr0 onlink",
            "route add 10.31.0.0/16 nexthop via 198.19.0.2 dev nmxbr1 onlink nexthop via 192.0.2.2 dev nmx0",
            "route add 10.32.0.0/16 nexthop via 192.0.2.2 dev nmx0 nexthop via 198.19.0.2 dev nmxbr1 onlink",
            "-6 route add 2001:db8:30::/64 nexthop via 2001:db8:1::2 dev nmx0 nexthop via fe80::2 dev nmxbr0",
            "link set nmxbr1 down",
            "link del nmxbr0",
        ];
        for line in script {
            ip(&ns, line);
            assert_cache_matches_ip(&mut cache, &ns);
            assert_eq!(
                cached_hop_flags(&cache, "10.32.0.0"),
                ip_hop_flags(&ns, "10.32.0.0/16"),
                "next hop flags after `ip {line}`"
            );
        }
    });
}

/// Whether each next hop of the IPv4 route to `dst`/16 is dead, as the cache holds it.
fn cached_hop_flags(cache: &Cache, dst: &str) -> Vec<bool> {
    let dst: IpAddr = dst.parse().unwrap();
    cache
        .routes()
        .find(|route| route.dst() == dst && route.dst_len() == 16)
        .map(|route| {
            route
                .multipath()
                .iter()
                .map(|hop| hop.flags & RTNH_F_DEAD != 0)
                .collect()
        })
        .unwrap_or_default()
}

/// The same, as `ip -j route show` prints it.
fn ip_hop_flags(ns: &NetNs, dst: &str) -> Vec<bool> {
    let out = ns.ip(&["-j", "-4", "route", "show", "exact", dst]).unwrap();
    let routes: Value = serde_json::from_str(&out).unwrap();
    routes[0]["nexthops"]
        .as_array()
        .map(|hops| {
            hops.iter()
                .map(|hop| {
                    hop["flags"]
                        .as_array()
                        .is_some_and(|flags| flags.iter().any(|flag| flag == "dead"))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The next hops of an IPv6 multipath route follow their links with no route notification:
/// `linkdown` when the carrier goes, `dead` as well when the link goes down, neither when
/// it comes back, whether the hop is the route's first or a later one; a deleted link takes
/// its hop away (announced). The IPv4 route beside them loses its later hop the same way.
#[test]
fn an_ipv6_multipath_routes_hops_follow_their_links() {
    bounded(LIMIT, || {
        let ns = super::nexthop::netns_two_pairs();
        for line in [
            "-6 route add 2001:db8:c::/64 nexthop via 2001:db8:1::2 dev nmx0 nexthop via fe80::2 dev nmy0",
            "-6 route add 2001:db8:e::/64 nexthop via fe80::2 dev nmy0 nexthop via 2001:db8:1::2 dev nmx0",
            "route add 10.70.0.0/16 nexthop via 192.0.2.2 dev nmx0 nexthop via 198.51.100.2 dev nmy0",
        ] {
            ip(&ns, line);
        }
        let mut cache = open_without_link_refresh(&ns);
        assert_cache_matches_ip(&mut cache, &ns);
        for step in [
            "link set nmy1 down",
            "link set nmy0 down",
            "link set nmy0 up",
            "link set nmy1 up",
            "link del nmy0",
        ] {
            ip(&ns, step);
            settle(&mut cache, Duration::from_secs(10));
            assert_cache_matches_ip(&mut cache, &ns);
        }
    });
}
