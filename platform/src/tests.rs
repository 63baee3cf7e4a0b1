//! Golden-byte tests: real messages captured from the kernel (Linux 6.18, in a test
//! namespace, cross-checked with `ip -d -j`), annotated field by field, parsed by the same
//! code as the receive path. Then a bounded fuzz test of that path (proptest), beside the
//! cargo-fuzz targets in `platform/fuzz` that `cargo xtask ci` runs for a fixed time.

use crate::types::{Protocol, RouteType, Scope, Table};
use std::net::IpAddr;

use proptest::prelude::*;

use crate::wire::{self, Msgs};
use crate::{Address, Family, Link, Route, Rule};

/// Splits a captured datagram and returns its only message's type, flags and payload.
fn one_msg(bytes: &[u8]) -> (u16, u16, Vec<u8>) {
    let mut msgs = Msgs::new(bytes);
    let msg = msgs.next().unwrap().unwrap();
    assert!(msgs.next().is_none());
    (msg.kind, msg.flags, msg.payload.to_vec())
}

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

/// `ip route add 10.3.0.0/16 via 10.2.0.2 table 100` (dev v0 = 3), from a route dump.
const ROUTE_V4_GATEWAY: &[u8] = &[
    0x3c, 0x00, 0x00, 0x00, // nlmsg_len = 60
    0x18, 0x00, // nlmsg_type = RTM_NEWROUTE (24)
    0x02, 0x00, // nlmsg_flags = NLM_F_MULTI
    0x01, 0x00, 0x00, 0x00, // nlmsg_seq = 1
    0xbf, 0x7f, 0x00, 0x00, // nlmsg_pid = the dumping socket's port
    0x02, // rtm_family = AF_INET
    0x10, // rtm_dst_len = 16
    0x00, // rtm_src_len = 0
    0x00, // rtm_tos = 0
    0x64, // rtm_table = 100
    0x03, // rtm_protocol = Protocol::BOOT
    0x00, // rtm_scope = Scope::UNIVERSE
    0x01, // rtm_type = RouteType::UNICAST
    0x00, 0x00, 0x00, 0x00, // rtm_flags = 0
    0x08, 0x00, 0x0f, 0x00, // RTA_TABLE (15), len 8
    0x64, 0x00, 0x00, 0x00, //   100
    0x08, 0x00, 0x01, 0x00, // RTA_DST (1), len 8
    0x0a, 0x03, 0x00, 0x00, //   10.3.0.0
    0x08, 0x00, 0x05, 0x00, // RTA_GATEWAY (5), len 8
    0x0a, 0x02, 0x00, 0x02, //   10.2.0.2
    0x08, 0x00, 0x04, 0x00, // RTA_OIF (4), len 8
    0x03, 0x00, 0x00, 0x00, //   3
];

/// `ip route add 10.5.0.0/16 nexthop via 10.2.0.2 dev v0 nexthop via 10.2.0.3 dev v0`.
const ROUTE_V4_MULTIPATH: &[u8] = &[
    0x50, 0x00, 0x00, 0x00, // nlmsg_len = 80
    0x18, 0x00, 0x02, 0x00, // RTM_NEWROUTE, NLM_F_MULTI
    0x01, 0x00, 0x00, 0x00, 0xbf, 0x7f, 0x00, 0x00, // seq 1, pid
    0x02, 0x10, 0x00, 0x00, // AF_INET, dst_len 16, src_len 0, tos 0
    0xfe, 0x03, 0x00, 0x01, // table main (254), Protocol::BOOT, universe, RouteType::UNICAST
    0x00, 0x00, 0x00, 0x00, // rtm_flags
    0x08, 0x00, 0x0f, 0x00, 0xfe, 0x00, 0x00, 0x00, // RTA_TABLE 254
    0x08, 0x00, 0x01, 0x00, 0x0a, 0x05, 0x00, 0x00, // RTA_DST 10.5.0.0
    0x24, 0x00, 0x09, 0x00, // RTA_MULTIPATH (9), len 36
    0x10, 0x00, // rtnh_len = 16
    0x00, // rtnh_flags
    0x00, // rtnh_hops (weight 1)
    0x03, 0x00, 0x00, 0x00, // rtnh_ifindex = 3
    0x08, 0x00, 0x05, 0x00, 0x0a, 0x02, 0x00, 0x02, //   RTA_GATEWAY 10.2.0.2
    0x10, 0x00, 0x00, 0x00, // second rtnexthop: len 16, flags 0, hops 0
    0x03, 0x00, 0x00, 0x00, //   ifindex 3
    0x08, 0x00, 0x05, 0x00, 0x0a, 0x02, 0x00, 0x03, //   RTA_GATEWAY 10.2.0.3
];

/// `ip -6 route add 2001:db8::/64 dev v0 metric 5`.
const ROUTE_V6: &[u8] = &[
    0x74, 0x00, 0x00, 0x00, // nlmsg_len = 116
    0x18, 0x00, 0x02, 0x00, // RTM_NEWROUTE, NLM_F_MULTI
    0x01, 0x00, 0x00, 0x00, 0xc3, 0x7f, 0x00, 0x00, // seq 1, pid
    0x0a, 0x40, 0x00, 0x00, // AF_INET6, dst_len 64, src_len 0, tos 0
    0xfe, 0x03, 0x00, 0x01, // table main, Protocol::BOOT, universe, RouteType::UNICAST
    0x00, 0x00, 0x00, 0x00, // rtm_flags
    0x08, 0x00, 0x0f, 0x00, 0xfe, 0x00, 0x00, 0x00, // RTA_TABLE 254
    0x14, 0x00, 0x01, 0x00, // RTA_DST, len 20
    0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00, 0x00, 0x00, //   2001:db8::
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x08, 0x00, 0x06, 0x00, 0x05, 0x00, 0x00,
    0x00, // RTA_PRIORITY 5
    0x08, 0x00, 0x04, 0x00, 0x03, 0x00, 0x00, 0x00, // RTA_OIF 3
    0x24, 0x00, 0x0c, 0x00, // RTA_CACHEINFO (12), len 36: counters, not state
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, //
    0x05, 0x00, 0x14, 0x00, // RTA_PREF (20), len 5
    0x00, 0x00, 0x00, 0x00, //   ICMPV6_ROUTER_PREF_MEDIUM, padding
];

/// `ip addr add 10.2.0.1/24 dev v0`, from an address dump.
const ADDRESS_V4: &[u8] = &[
    0x4c, 0x00, 0x00, 0x00, // nlmsg_len = 76
    0x14, 0x00, 0x02, 0x00, // RTM_NEWADDR (20), NLM_F_MULTI
    0x01, 0x00, 0x00, 0x00, 0xc7, 0x7f, 0x00, 0x00, // seq 1, pid
    0x02, // ifa_family = AF_INET
    0x18, // ifa_prefixlen = 24
    0x80, // ifa_flags = IFA_F_PERMANENT
    0x00, // ifa_scope = universe
    0x03, 0x00, 0x00, 0x00, // ifa_index = 3
    0x08, 0x00, 0x01, 0x00, 0x0a, 0x02, 0x00, 0x01, // IFA_ADDRESS 10.2.0.1
    0x08, 0x00, 0x02, 0x00, 0x0a, 0x02, 0x00, 0x01, // IFA_LOCAL 10.2.0.1
    0x07, 0x00, 0x03, 0x00, 0x76, 0x30, 0x00, 0x00, // IFA_LABEL "v0", padding
    0x08, 0x00, 0x08, 0x00, 0x80, 0x00, 0x00, 0x00, // IFA_FLAGS IFA_F_PERMANENT
    0x14, 0x00, 0x06, 0x00, // IFA_CACHEINFO (6), len 20
    0xff, 0xff, 0xff, 0xff, //   ifa_prefered = forever
    0xff, 0xff, 0xff, 0xff, //   ifa_valid = forever
    0x8a, 0x24, 0x02, 0x00, //   cstamp
    0x8a, 0x24, 0x02, 0x00, //   tstamp
];

/// The default rule `32766: from all lookup main`.
const RULE_MAIN: &[u8] = &[
    0x3c, 0x00, 0x00, 0x00, // nlmsg_len = 60
    0x20, 0x00, 0x02, 0x00, // RTM_NEWRULE (32), NLM_F_MULTI
    0x01, 0x00, 0x00, 0x00, 0xca, 0x7f, 0x00, 0x00, // seq 1, pid
    0x02, 0x00, 0x00, 0x00, // AF_INET, dst_len 0, src_len 0, tos 0
    0xfe, 0x00, 0x00, 0x01, // table main, res1, res2, FR_ACT_TO_TBL
    0x00, 0x00, 0x00, 0x00, // flags
    0x08, 0x00, 0x0f, 0x00, 0xfe, 0x00, 0x00, 0x00, // FRA_TABLE 254
    0x08, 0x00, 0x0e, 0x00, 0xff, 0xff, 0xff, 0xff, // FRA_SUPPRESS_PREFIXLEN -1 (unset)
    0x05, 0x00, 0x15, 0x00, 0x02, 0x00, 0x00, 0x00, // FRA_PROTOCOL RTPROT_KERNEL
    0x08, 0x00, 0x06, 0x00, 0xfe, 0x7f, 0x00, 0x00, // FRA_PRIORITY 32766
];

/// The kernel refusing `RTM_NEWROUTE 10.200.0.0/16 via 198.51.100.1 oif 3` (seq 7) on a
/// socket with NETLINK_EXT_ACK and NETLINK_CAP_ACK.
const ERROR_EXT_ACK: &[u8] = &[
    0x44, 0x00, 0x00, 0x00, // nlmsg_len = 68
    0x02, 0x00, // NLMSG_ERROR
    0x00, 0x03, // flags = NLM_F_CAPPED | NLM_F_ACK_TLVS
    0x07, 0x00, 0x00, 0x00, // seq 7 (the request's)
    0xa0, 0x01, 0x00, 0x00, // pid = our port
    0x9b, 0xff, 0xff, 0xff, // error = -101 (ENETUNREACH)
    0x34, 0x00, 0x00, 0x00, // the request's header: len 52,
    0x18, 0x00, 0x05, 0x06, //   RTM_NEWROUTE, REQUEST|ACK|EXCL|CREATE
    0x07, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, //   seq 7, pid 0 (payload capped)
    0x20, 0x00, 0x01, 0x00, // NLMSGERR_ATTR_MSG (1), len 32
    b'N', b'e', b'x', b't', b'h', b'o', b'p', b' ', b'h', b'a', b's', b' ', b'i', b'n', b'v', b'a',
    b'l', b'i', b'd', b' ', b'g', b'a', b't', b'e', b'w', b'a', b'y', 0x00,
];

#[test]
fn golden_route_v4_with_gateway() {
    let (kind, flags, payload) = one_msg(ROUTE_V4_GATEWAY);
    assert_eq!((kind, flags), (wire::RTM_NEWROUTE, 2));
    let route = Route::parse(&payload).unwrap().unwrap();
    assert_eq!(route.family(), Family::V4);
    assert_eq!((route.dst(), route.dst_len()), (ip("10.3.0.0"), 16));
    assert_eq!(route.gateway(), Some(ip("10.2.0.2")));
    assert_eq!(route.oif(), Some(crate::Ifindex(3)));
    assert_eq!(route.table(), Table(100));
    assert_eq!(
        (route.protocol(), route.scope(), route.kind()),
        (Protocol::BOOT, Scope::UNIVERSE, RouteType::UNICAST)
    );
    assert_eq!((route.priority(), route.flags(), route.tos()), (0, 0, 0));
    assert!(route.multipath().is_empty() && route.prefsrc().is_none());
    assert_eq!(route.weak_hash(), route.weak_id().stable_hash());
    // Round trip: what we would send for it parses back to the same route.
    let mut buf = Vec::new();
    route.emit(&mut buf, wire::RTM_NEWROUTE, 0, 1);
    let (_, _, again) = one_msg(&buf);
    assert_eq!(Route::parse(&again).unwrap().unwrap(), route);
}

#[test]
fn golden_route_v4_multipath() {
    let (_, _, payload) = one_msg(ROUTE_V4_MULTIPATH);
    let route = Route::parse(&payload).unwrap().unwrap();
    assert_eq!(
        (route.dst(), route.dst_len(), route.table()),
        (ip("10.5.0.0"), 16, Table::MAIN)
    );
    assert_eq!((route.gateway(), route.oif()), (None, None));
    let hops: Vec<_> = route
        .multipath()
        .iter()
        .map(|hop| (hop.ifindex.0, hop.gateway, hop.hops))
        .collect();
    assert_eq!(
        hops,
        [(3, Some(ip("10.2.0.2")), 0), (3, Some(ip("10.2.0.3")), 0)]
    );
    assert_eq!(route.ifindexes().map(|i| i.0).collect::<Vec<_>>(), [3, 3]);
    let mut buf = Vec::new();
    route.emit(&mut buf, wire::RTM_NEWROUTE, 0, 1);
    let (_, _, again) = one_msg(&buf);
    assert_eq!(Route::parse(&again).unwrap().unwrap(), route);
}

#[test]
fn golden_route_v6() {
    let (_, _, payload) = one_msg(ROUTE_V6);
    let route = Route::parse(&payload).unwrap().unwrap();
    assert_eq!(route.family(), Family::V6);
    assert_eq!((route.dst(), route.dst_len()), (ip("2001:db8::"), 64));
    assert_eq!(
        (route.oif(), route.priority(), route.table()),
        (Some(crate::Ifindex(3)), 5, Table::MAIN)
    );
    assert_eq!(route.gateway(), None);
    assert_eq!(route.pref(), Some(0));
    assert_eq!(route.weak_hash(), route.weak_id().stable_hash());
    assert_eq!(route.src(), None);
}

#[test]
fn golden_address_v4() {
    let (kind, _, payload) = one_msg(ADDRESS_V4);
    assert_eq!(kind, wire::RTM_NEWADDR);
    let addr = Address::parse(&payload).unwrap().unwrap();
    assert_eq!(
        (addr.ifindex().0, addr.local(), addr.prefix_len()),
        (3, ip("10.2.0.1"), 24)
    );
    assert_eq!(addr.peer(), None);
    assert_eq!(addr.label(), Some("v0"));
    assert_eq!(addr.flags(), 0x80);
    assert_eq!(addr.lifetimes(), (u32::MAX, u32::MAX));
}

#[test]
fn golden_rule_main() {
    let (kind, _, payload) = one_msg(RULE_MAIN);
    assert_eq!(kind, wire::RTM_NEWRULE);
    let rule = Rule::parse(&payload).unwrap().unwrap();
    assert_eq!(
        (rule.family(), rule.priority(), rule.table()),
        (Family::V4, 32766, Table::MAIN)
    );
    assert_eq!(
        (rule.action(), rule.protocol()),
        (crate::FR_ACT_TO_TBL, Protocol::KERNEL)
    );
    assert_eq!((rule.src(), rule.dst(), rule.fwmark()), (None, None, None));
}

#[test]
fn golden_error_with_extended_ack() {
    let mut msgs = Msgs::new(ERROR_EXT_ACK);
    let msg = msgs.next().unwrap().unwrap();
    assert_eq!((msg.kind, msg.seq), (wire::NLMSG_ERROR, 7));
    let err = wire::parse_error(&msg).unwrap().unwrap();
    assert_eq!(err.errno, libc::ENETUNREACH);
    assert_eq!(err.message.as_deref(), Some("Nexthop has invalid gateway"));
    assert_eq!(
        err.to_string(),
        "Network is unreachable (os error 101): Nexthop has invalid gateway"
    );
}

#[test]
fn truncated_and_overrunning_messages_are_errors() {
    // A header that claims more bytes than the datagram has.
    let mut bytes = ROUTE_V4_GATEWAY.to_vec();
    bytes.truncate(40);
    assert!(Msgs::new(&bytes).next().unwrap().is_err());
    // An attribute whose length overruns the message.
    let (_, _, mut payload) = one_msg(ROUTE_V4_GATEWAY);
    payload[12] = 0x40;
    assert!(Route::parse(&payload).is_err());
    // A gateway of the wrong size.
    let (_, _, mut payload) = one_msg(ROUTE_V4_GATEWAY);
    payload[28] = 0x06;
    assert!(Route::parse(&payload).is_err());
    // Shorter than the family header.
    assert!(Route::parse(&[2, 16]).is_err());
    assert!(Address::parse(&[2]).is_err());
    assert!(Rule::parse(&[]).is_err());
    assert!(Link::parse(&[0; 4]).is_err());
}

/// Everything the receive path does with one datagram, minus the cache: split it, decode
/// every message of every type, decode errors.
fn receive(datagram: &[u8]) {
    for msg in Msgs::new(datagram) {
        let Ok(msg) = msg else { break };
        let _ = Route::parse(msg.payload);
        let _ = Address::parse(msg.payload);
        let _ = Rule::parse(msg.payload);
        let _ = Link::parse(msg.payload);
        if msg.kind == wire::NLMSG_ERROR {
            let _ = wire::parse_error(&msg);
        }
    }
}

fn golden() -> Vec<&'static [u8]> {
    vec![
        ROUTE_V4_GATEWAY,
        ROUTE_V4_MULTIPATH,
        ROUTE_V6,
        ADDRESS_V4,
        RULE_MAIN,
        ERROR_EXT_ACK,
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 4096, ..ProptestConfig::default() })]

    /// Random bytes never panic the receive path.
    #[test]
    fn fuzz_random_datagrams(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        receive(&bytes);
    }

    /// Captured messages with bytes flipped, cut or glued together never panic it, and a
    /// parsed route always survives a round trip through the encoder.
    #[test]
    fn fuzz_mutated_captures(
        which in 0..6usize,
        flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..8),
        cut in any::<prop::sample::Index>(),
        glue in 0..3usize,
    ) {
        let base = golden()[which];
        let mut bytes = base.to_vec();
        for (at, value) in flips {
            let at = at.index(bytes.len());
            bytes[at] = value;
        }
        bytes.truncate(cut.index(bytes.len() + 1));
        for _ in 0..glue {
            bytes.extend_from_slice(base);
        }
        receive(&bytes);
        for msg in Msgs::new(&bytes).map_while(Result::ok) {
            if let Ok(Some(route)) = Route::parse(msg.payload) {
                let mut buf = Vec::new();
                route.emit(&mut buf, wire::RTM_NEWROUTE, 0, 1);
                let again = Msgs::new(&buf).next().unwrap().unwrap();
                let reparsed = Route::parse(again.payload);
                prop_assert!(matches!(reparsed, Ok(Some(_))), "{route:?}");
            }
        }
    }
}

/// The cache can move to another thread (e.g. tokio's `spawn_blocking`), and a platform can
/// be shared between threads.
#[test]
fn cache_is_send_and_platform_is_sync() {
    fn send<T: Send>() {}
    fn sync<T: Sync>() {}
    send::<crate::Cache>();
    send::<crate::Platform>();
    sync::<crate::Platform>();
    sync::<std::sync::Arc<Route>>();
}

/// The whole receive path, cache included, on mutated captures: nothing panics, and a resync
/// brings the cache back to what the kernel holds, whatever garbage was applied.
#[cfg(feature = "privileged")]
mod privileged {
    use std::collections::BTreeSet;

    use proptest::prelude::*;
    use proptest::strategy::ValueTree;

    use super::golden;
    use crate::testing::NetNs;
    use crate::{Cache, Config, Netns};

    fn routes(cache: &Cache) -> BTreeSet<String> {
        cache.routes().map(|route| format!("{route:?}")).collect()
    }

    #[test]
    fn fuzz_the_cache_receive_path_then_resync() {
        let ns = NetNs::new().unwrap();
        ns.ip(&[
            "link", "add", "nmx0", "type", "veth", "peer", "name", "nmx1",
        ])
        .unwrap();
        let mut cache = Cache::open(Config::new().with_netns(Netns::path(ns.path()))).unwrap();
        let clean = routes(&cache);
        let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
            cases: 2048,
            ..ProptestConfig::default()
        });
        let strategy = (
            0..6usize,
            proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..8),
            any::<prop::sample::Index>(),
        );
        let mut events = Vec::new();
        for _ in 0..2048 {
            let (which, flips, cut) = strategy.new_tree(&mut runner).unwrap().current();
            let mut bytes = golden()[which].to_vec();
            for (at, value) in flips {
                let at = at.index(bytes.len());
                bytes[at] = value;
            }
            bytes.truncate(cut.index(bytes.len() + 1));
            cache.apply_datagram(&bytes, &mut events);
            events.clear();
        }
        cache.resync(&mut events).unwrap();
        assert_eq!(routes(&cache), clean);
        let fresh = cache.platform().routes().execute().unwrap();
        let fresh: BTreeSet<String> = fresh.items.iter().map(|r| format!("{r:?}")).collect();
        assert_eq!(routes(&cache), fresh);
    }

    /// A re-dump of a link's routes that events overtook is put off until they are applied:
    /// the kernel announces a secondary address's deletion before its `local` route's, and
    /// the cache reports them in that order though the route re-dump (called for by an
    /// earlier deletion) runs after the kernel made both changes.
    #[test]
    fn a_route_redump_overtaken_by_events_waits_for_them() {
        use crate::{Change, Event};
        let ns = NetNs::new().unwrap();
        for line in [
            "link add nmx0 type veth peer name nmx1",
            "link set nmx0 up",
            "link set nmx1 up",
            "addr add 192.0.2.1/24 dev nmx0",
            "addr add 10.46.0.1/24 dev nmx0",
            "addr add 192.0.2.9/24 dev nmx0",
        ] {
            ns.ip(&line.split(' ').collect::<Vec<_>>()).unwrap();
        }
        let config = Config::new()
            .with_netns(Netns::path(ns.path()))
            .with_link_refresh(None);
        let mut cache = Cache::open(config).unwrap();
        let mut events = Vec::new();
        // An IPv4 address deleted calls for a re-dump of its link's routes ...
        ns.ip(&["addr", "del", "10.46.0.1/24", "dev", "nmx0"])
            .unwrap();
        while !cache
            .drain(Some(std::time::Duration::from_secs(1)), None, &mut events)
            .unwrap()
        {}
        assert!(cache.kernel_work_due(true));
        // ... which runs after the kernel deleted the next address and its route, their
        // events still unread.
        ns.ip(&["addr", "del", "192.0.2.9/24", "dev", "nmx0"])
            .unwrap();
        events.clear();
        cache.kernel_work(true, &mut events).unwrap();
        assert!(events.is_empty(), "{events:#?}");
        assert!(cache.kernel_work_due(true));
        for _ in 0..10 {
            cache
                .poll_status(Some(std::time::Duration::from_millis(100)), &mut events)
                .unwrap();
        }
        let gone: Vec<String> = events
            .iter()
            .filter_map(|event| match event {
                Event::Address(Change::Removed(addr)) => Some(format!("addr {}", addr.address())),
                Event::Route(Change::Removed(route)) => Some(format!("route {}", route.dst())),
                _ => None,
            })
            .collect();
        assert_eq!(gone, ["addr 192.0.2.9", "route 192.0.2.9"]);
        assert!(!cache.kernel_work_due(true));
    }
}
