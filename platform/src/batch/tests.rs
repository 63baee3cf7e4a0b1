//! The request that adds back a deleted route, built from the kernel's echo of it (captured
//! from Linux 6.18: the notifications of `ip route add 10.60.0.0/16 nhid 10`, a group of two
//! gateways on ifindex 3, and `ip route add 10.62.0.0/16 nhid 3`, a blackhole nexthop; an
//! echo of a delete has the same attributes).

use super::*;
use crate::wire::Msgs;

fn bytes(hex: &str) -> Vec<u8> {
    (0..hex.len())
        .step_by(2)
        .map(|at| u8::from_str_radix(&hex[at..at + 2], 16).unwrap())
        .collect()
}

const ON_GROUP: &str = concat!(
    "5800000018000006dce90e6b1f53000002100000fe0300010000000008000f00fe000000080001000a3c0000",
    "08001e000a00000024000900100000000300000008000500c0000202100000020300000008000500c0000203",
);
const ON_BLACKHOLE: &str = concat!(
    "3c00000018000006dce90e6b4b53000002100000fe0300060000000008000f00fe000000080001000a3e0000",
    "08001e00030000000800040001000000",
);

/// The restore request built from `echo`, parsed back, and its raw attribute types.
fn restore(echo: &str) -> (Route, Vec<u16>, u16) {
    let echo = bytes(echo);
    let msg = Msgs::new(&echo).next().unwrap().unwrap();
    let mut buf = Vec::new();
    emit_restore(msg.payload, &mut buf, 9);
    let sent = Msgs::new(&buf).next().unwrap().unwrap();
    let kinds = wire::Nlas::new(&sent.payload[RTMSG_LEN..])
        .map(|(kind, _)| kind)
        .collect();
    (
        Route::parse(sent.payload).unwrap().unwrap(),
        kinds,
        sent.flags,
    )
}

#[test]
fn a_route_on_a_group_comes_back_with_its_id_alone() {
    let (route, kinds, flags) = restore(ON_GROUP);
    assert_eq!(route.nh_id(), Some(10));
    assert!(route.multipath().is_empty());
    assert_eq!((route.gateway(), route.oif()), (None, None));
    assert_eq!(kinds, [RTA_TABLE_KIND, 1, RTA_NH_ID]);
    assert_eq!(
        flags,
        wire::NLM_F_REQUEST | wire::NLM_F_CREATE | wire::NLM_F_EXCL
    );
}

#[test]
fn a_route_on_a_blackhole_nexthop_comes_back_unicast() {
    let (route, kinds, _) = restore(ON_BLACKHOLE);
    assert_eq!(route.nh_id(), Some(3));
    assert_eq!(route.kind(), RouteType::UNICAST);
    assert_eq!(route.oif(), None);
    assert_eq!(kinds, [RTA_TABLE_KIND, 1, RTA_NH_ID]);
}

#[test]
fn a_multipath_route_keeps_its_hops_weights_and_onlink_only() {
    // The group route's hops as a plain multipath route: the id removed, a hop flagged
    // dead and linkdown and onlink, the route flagged linkdown.
    let mut echo = bytes(ON_GROUP);
    // rtm_flags: linkdown.
    echo[16 + 8] = 16;
    // Drop the RTA_NH_ID attribute (8 bytes at 36..44 of the payload) and fix the length.
    let at = 16 + RTMSG_LEN + 8 + 8;
    echo.drain(at..at + 8);
    let len = echo.len() as u32;
    echo[..4].copy_from_slice(&len.to_ne_bytes());
    // First hop's rtnh_flags: dead | onlink | linkdown.
    let hop = at + 4;
    echo[hop + 2] = 1 | 4 | 16;
    let hex: String = echo.iter().map(|b| format!("{b:02x}")).collect();
    let (route, _, _) = restore(&hex);
    assert_eq!(route.nh_id(), None);
    assert_eq!(route.flags(), 0);
    let hops = route.multipath();
    assert_eq!(hops.len(), 2);
    assert_eq!(hops[0].flags, 4, "only onlink stays");
    assert_eq!((hops[0].hops, hops[1].hops), (0, 2), "weights 1 and 3 stay");
    assert_eq!(hops[1].gateway, Some("192.0.2.3".parse().unwrap()));
}

/// `RTA_TABLE`.
const RTA_TABLE_KIND: u16 = 15;
