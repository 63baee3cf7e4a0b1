//! [`State::apply`] driven by messages captured from a real kernel (Linux 6.18, a namespace
//! with the veth pair v0 (ifindex 3, 192.0.2.1/24) and v1 (ifindex 2)), without a socket.

use super::*;
use crate::route::AttrValue;
use crate::types::{RouteType, Scope};
use crate::wire::Msgs;

/// `ip nexthop add id 1 via 192.0.2.2 dev v0`, `... id 2 via 192.0.2.3 dev v0`, `... id 3
/// blackhole`, `... id 10 group 1/2,3`: one `RTM_NEWNEXTHOP` each.
const NH_ADD: &[&str] = &[
    concat!(
        "3000000068000506dbe90e6bd152000002fd0000000000000800010001000000080005000300000008000600",
        "c0000202",
    ),
    concat!(
        "3000000068000506dbe90e6bd752000002fd0000000000000800010002000000080005000300000008000600",
        "c0000203",
    ),
    "2400000068000506dce90e6be65200000200000000000000080001000300000004000400",
    concat!(
        "4400000068000506dce90e6bfc5200000000000000000000080001000a000000060003000000000014000200",
        "0100000000000000020000000200000008000e0000000080",
    ),
];

/// `ip route add 10.60.0.0/16 nhid 10`, `ip route add 10.62.0.0/16 nhid 3`.
const ROUTES_ADD: &[&str] = &[
    concat!(
        "5800000018000006dce90e6b1f53000002100000fe0300010000000008000f00fe000000080001000a3c0000",
        "08001e000a00000024000900100000000300000008000500c0000202100000020300000008000500c0000203",
    ),
    concat!(
        "3c00000018000006dce90e6b4b53000002100000fe0300060000000008000f00fe000000080001000a3e0000",
        "08001e00030000000800040001000000",
    ),
];

/// `ip nexthop del id 2`: `RTM_DELNEXTHOP` 2, `RTM_NEWNEXTHOP` for group 10 (now 1 alone), and
/// an unrelated IPv6 multicast route event; nothing about route 10.60.0.0/16.
const NH_DEL_MEMBER: &[&str] = &[
    concat!(
        "3000000069000500dce90e6b7553000002fd0000000000000800010002000000080005000300000008000600",
        "c0000203",
    ),
    concat!(
        "3c00000068000500dce90e6b755300000000000000000000080001000a00000006000300000000000c000200",
        "010000000000000008000e0000000080",
    ),
    concat!(
        "740000001800000600000000000000000a800000ff0200020000000008000f00ff00000014000100fe800000",
        "00000000081fa6fffe8744a90800060000000000080004000300000024000c00000000000000000000000000",
        "00000000000000000000000000000000000000000500140000000000",
    ),
];

/// `ip nexthop del id 3`: `RTM_DELNEXTHOP` 3 (and an unrelated IPv6 event); no
/// `RTM_DELROUTE` for 10.62.0.0/16, which the kernel deleted.
const NH_DEL: &[&str] = &[
    "2400000069000500dde90e6bb35300000200000000000000080001000300000004000400",
    concat!(
        "740000001800000600000000000000000a800000ff0200020000000008000f00ff00000014000100fe800000",
        "00000000d4606bfffe2357bc0800060000000000080004000200000024000c00000000000000000000000000",
        "00000000000000000000000000000000000000000500140000000000",
    ),
];

/// `ip link set v1 down`: `RTM_NEWLINK` for v1 (down), IPv6 route deletions on v1, then
/// `RTM_NEWLINK` for v0 (carrier lost). Nothing about nexthops 1 and 10 on v0, which the
/// kernel flushed.
const PEER_DOWN: &[&str] = &[
    concat!(
        "d405000010000000000000000000000000000100020000000210000001000000070003007631000008000d00",
        "e803000005001000020000000500110000000000050043000000000008000400dc0500000800320044000000",
        "08003300ffff000008001b000000000008001e000000000008003d000000000008001f000200000008002800",
        "ffff0000080029000000010008003a000000010008003f0000000100080040000000010008003b00f8ff0700",
        "08003c00ffff0000080042000000000008002000020000000500210000000000080023000300000008002f00",
        "0100000008003000020000000600440000000000060045000000000005002700000000000a000100d6606b23",
        "57bc00000a000200ffffffffffff0000cc00170005000000000000000500000000000000aa01000000000000",
        "aa01000000000000000000000000000000000000000000000000000000000000000000000000000000000000",
        "0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000",
        "0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000",
        "0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000",
        "640007000500000005000000aa010000aa010000000000000000000000000000000000000000000000000000",
        "0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000",
        "0000000000000000000000000c002b0005000200000000001000120009000100766574680000000008000500",
        "030000000c0006006e6f71756575650030031a008c0002008800010000000000000000000000000001000000",
        "0100000001000000010000000000000001000000000000000000000000000000000000000000000000000000",
        "0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000",
        "10270000e80300000000000000000000000000000000000001000000a0020a00080001001000008014000500",
        "ffff00004ebf0100407d0000e8030000f40002000000000040000000dc050000010000000100000001000000",
        "01000000ffffffffa00f0000e803000000000000803a09008051010003000000580200001000000000000000",
        "01000000010000000100000060ea000000000000000000000000000000000000000000000000000001000000",
        "000000000000000010270000e803000001000000000000000000000001000000000000000000000001000000",
        "0000000000000000000000000000000080ee3600000000000000000001000000000000000000000000000000",
        "00000000000000000004000000000000ffff0000ffffffff0100000000000000000000000000000034010300",
        "2600000000000000050000000000000064010000000000000000000000000000050000000000000000000000",
        "0000000000000000000000000000000000000000050000000000000005000000000000006401000000000000",
        "0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000",
        "0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000",
        "0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000",
        "0000000005000000000000000500000000000000000000000000000000000000000000006401000000000000",
        "640100000000000000000000000000000000000000000000000000000000000000000000000000003c000600",
        "0700000000000000000000000000000000000000000000000500000000000000000000000000000000000000",
        "0000000000000000000000001400070000000000000000000000000000000000050008000000000024000e00",
        "000000000000000000000000000000000000000000000000000000000000000004003e8004004180",
    ),
    concat!(
        "740000001900000000000000000000000a400000fe0200010000000008000f00fe00000014000100fe800000",
        "0000000000000000000000000800060000010000080004000200000024000c00000000000000000000000000",
        "00000000000000000000000000000000000000000500140000000000",
    ),
    concat!(
        "740000001900000000000000000000000a800000ff0200020000000008000f00ff00000014000100fe800000",
        "00000000d4606bfffe2357bc0800060000000000080004000200000024000c00000000000000000000000000",
        "00000000000000000000000000000000000000000500140000000000",
    ),
    concat!(
        "740000001900000000000000000000000a080000ff0200050000000008000f00ff00000014000100ff000000",
        "0000000000000000000000000800060000010000080004000200000024000c00000000000000000000000000",
        "00000000000000000000000000000000000000000500140000000000",
    ),
    concat!(
        "d405000010000000000000000000000000000100030000000310000000000000070003007630000008000d00",
        "e803000005001000030000000500110000000000050043000000000008000400dc0500000800320044000000",
        "08003300ffff000008001b000000000008001e000000000008003d000000000008001f000200000008002800",
        "ffff0000080029000000010008003a000000010008003f0000000100080040000000010008003b00f8ff0700",
        "08003c00ffff0000080042000000000008002000020000000500210000000000080023000300000008002f00",
        "0100000008003000020000000600440000000000060045000000000005002700000000000a0001000a1fa687",
        "44a900000a000200ffffffffffff0000cc00170005000000000000000500000000000000aa01000000000000",
        "aa01000000000000000000000000000000000000000000000000000000000000000000000000000000000000",
        "0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000",
        "0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000",
        "0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000",
        "640007000500000005000000aa010000aa010000000000000000000000000000000000000000000000000000",
        "0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000",
        "0000000000000000000000000c002b0005000200000000001000120009000100766574680000000008000500",
        "020000000c0006006e6f71756575650030031a008c0002008800010000000000000000000000000001000000",
        "0100000001000000010000000000000001000000000000000000000000000000000000000000000000000000",
        "0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000",
        "10270000e80300000000000000000000000000000000000001000000a0020a00080001001000008014000500",
        "ffff00004ebf0100389e0000e8030000f40002000000000040000000dc050000010000000100000001000000",
        "01000000ffffffffa00f0000e803000000000000803a09008051010003000000580200001000000000000000",
        "01000000010000000100000060ea000000000000000000000000000000000000000000000000000001000000",
        "000000000000000010270000e803000001000000000000000000000001000000000000000000000001000000",
        "0000000000000000000000000000000080ee3600000000000000000001000000000000000000000000000000",
        "00000000000000000004000000000000ffff0000ffffffff0100000000000000000000000000000034010300",
        "2600000000000000050000000000000064010000000000000000000000000000050000000000000000000000",
        "0000000000000000000000000000000000000000050000000000000005000000000000006401000000000000",
        "0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000",
        "0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000",
        "0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000",
        "0000000005000000000000000500000000000000000000000000000000000000000000006401000000000000",
        "640100000000000000000000000000000000000000000000000000000000000000000000000000003c000600",
        "0700000000000000000000000000000000000000000000000500000000000000000000000000000000000000",
        "0000000000000000000000001400070000000000000000000000000000000000050008000000000024000e00",
        "000000000000000000000000000000000000000000000000000000000000000004003e8004004180",
    ),
];

fn bytes(hex: &str) -> Vec<u8> {
    (0..hex.len())
        .step_by(2)
        .map(|at| u8::from_str_radix(&hex[at..at + 2], 16).unwrap())
        .collect()
}

/// Applies every message of `datagrams`; returns the events.
fn feed(state: &mut State, datagrams: &[&str]) -> Vec<Event> {
    let mut out = Vec::new();
    for datagram in datagrams {
        let datagram = bytes(datagram);
        for msg in Msgs::new(&datagram) {
            state.apply(&msg.unwrap(), &mut out).unwrap();
        }
    }
    out
}

/// v1 and v0 as they were before `PEER_DOWN`: the same messages with the flags up, running
/// and with carrier.
fn links_up(state: &mut State) {
    for datagram in [PEER_DOWN[0], PEER_DOWN[PEER_DOWN.len() - 1]] {
        let mut datagram = bytes(datagram);
        let flags = u32::from_ne_bytes(datagram[24..28].try_into().unwrap());
        let up = flags | IFF_UP | IFF_RUNNING | IFF_LOWER_UP;
        datagram[24..28].copy_from_slice(&up.to_ne_bytes());
        let mut out = Vec::new();
        for msg in Msgs::new(&datagram) {
            state.apply(&msg.unwrap(), &mut out).unwrap();
        }
    }
}

/// The state after the nexthops and the two routes on them.
fn loaded() -> State {
    let mut state = State::new();
    links_up(&mut state);
    let events = feed(&mut state, NH_ADD);
    assert_eq!(events.len(), 4);
    assert!(
        events
            .iter()
            .all(|event| matches!(event, Event::Nexthop(Change::Added(_))))
    );
    feed(&mut state, ROUTES_ADD);
    assert_eq!(state.routes.len(), 2);
    assert_eq!(state.take_work(), Work::default());
    assert_eq!(state.take_nhid_refresh(), None);
    state
}

fn route_on(state: &State, nh_id: u32) -> Option<Arc<Route>> {
    state
        .routes
        .iter()
        .find(|route| route.nh_id() == Some(nh_id))
        .cloned()
}

#[test]
fn captured_nexthops_parse_as_ip_shows_them() {
    let state = loaded();
    let one = state.nexthops.get(&1).unwrap();
    assert_eq!(one.gateway(), Some("192.0.2.2".parse().unwrap()));
    assert_eq!(one.oif(), Some(crate::Ifindex(3)));
    assert_eq!(one.scope(), Scope(253));
    assert!(!one.is_group() && !one.is_blackhole());
    let three = state.nexthops.get(&3).unwrap();
    assert!(three.is_blackhole());
    assert_eq!((three.oif(), three.gateway()), (None, None));
    let group = state.nexthops.get(&10).unwrap();
    assert_eq!(
        group.group(),
        [
            crate::nexthop::GroupMember { id: 1, weight: 1 },
            crate::nexthop::GroupMember { id: 2, weight: 3 },
        ]
    );
    assert_eq!(group.group_type(), Some(0));
    // A route on a group is reported with its hops; on a blackhole nexthop, as a blackhole.
    let on_group = route_on(&state, 10).unwrap();
    assert_eq!(on_group.multipath().len(), 2);
    assert_eq!(on_group.multipath()[1].hops, 2);
    let on_blackhole = route_on(&state, 3).unwrap();
    assert_eq!(on_blackhole.kind(), RouteType::BLACKHOLE);
}

#[test]
fn a_deleted_group_member_changes_the_group_and_asks_for_its_routes() {
    let mut state = loaded();
    let before = route_on(&state, 10).unwrap();
    let events = feed(&mut state, NH_DEL_MEMBER);
    let nexthop_events: Vec<&Event> = events
        .iter()
        .filter(|event| matches!(event, Event::Nexthop(_)))
        .collect();
    assert!(matches!(nexthop_events[0], Event::Nexthop(Change::Removed(old)) if old.id() == 2));
    match nexthop_events[1] {
        Event::Nexthop(Change::Replaced { old, new }) => {
            assert_eq!(old.group().len(), 2);
            assert_eq!(new.group().len(), 1);
        }
        other => panic!("{other:?}"),
    }
    // The route on the group is not removed: its hops are asked again.
    assert!(
        !events
            .iter()
            .any(|event| matches!(event, Event::Route(Change::Removed(_))))
    );
    assert_eq!(route_on(&state, 10), Some(before.clone()));
    assert_eq!(state.take_nhid_refresh(), Some(vec![10]));

    // What the kernel then reports of it: one hop, the same route.
    let mut out = Vec::new();
    let fresh = Route::new("10.60.0.0".parse().unwrap(), 16)
        .with_nh_id(10)
        .with_gateway("192.0.2.2".parse().unwrap())
        .with_oif(crate::Ifindex(3));
    state.nhid_routes_refreshed(&[10], vec![fresh.clone()], &mut out);
    match out.as_slice() {
        [Event::Route(Change::Replaced { old, new })] => {
            assert_eq!(**old, *before);
            assert_eq!(**new, fresh);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_deleted_nexthop_takes_its_routes_along() {
    let mut state = loaded();
    let mut events = feed(&mut state, NH_DEL);
    // Not before the state settles: one walk over the routes for many deletions.
    assert!(route_on(&state, 3).is_some());
    state.settle(&mut events);
    let removed: Vec<&Route> = events
        .iter()
        .filter_map(|event| match event {
            Event::Route(Change::Removed(old)) => Some(&**old),
            _ => None,
        })
        .collect();
    assert_eq!(removed.len(), 1, "{events:?}");
    assert_eq!(removed[0].nh_id(), Some(3));
    assert!(route_on(&state, 3).is_none());
    assert!(state.nexthops.get(&3).is_none());
}

#[test]
fn carrier_loss_asks_for_the_nexthops_and_the_routes_of_the_link() {
    let mut state = loaded();
    feed(&mut state, PEER_DOWN);
    let work = state.take_work();
    // v0 lost its carrier: nexthops on it may be flushed, its routes flagged linkdown; v1
    // went down: its routes flushed.
    assert!(work.nexthops, "{work:?}");
    assert_eq!(work.ifindexes, vec![2, 3]);

    // The re-dump finds nexthop 1 and group 10 gone: their routes go too.
    let mut changes = Vec::new();
    for id in [1, 10] {
        let old = state.nexthops.remove(&id).unwrap();
        changes.push(Event::Nexthop(Change::Removed(old)));
    }
    let mut out = Vec::new();
    state.nexthops_resynced(&changes, &mut out);
    assert!(route_on(&state, 10).is_none());
    assert!(out.iter().any(
        |event| matches!(event, Event::Route(Change::Removed(old)) if old.nh_id() == Some(10))
    ));
    // The route on the blackhole nexthop stays.
    assert!(route_on(&state, 3).is_some());
}

/// A refresh or a resync that dumps the links between a change and its event: the dump
/// reports the change and `Cache::load` hands it to `after_link_change`, as here; the
/// event, applied after, changes nothing. The re-dumps are asked all the same (CI once
/// saw `link set ... down` leave the flushed routes and nexthops in a monitor's cache).
#[test]
fn a_link_change_a_dump_saw_before_its_event_still_asks_for_the_re_dumps() {
    let mut state = loaded();
    for datagram in PEER_DOWN {
        let datagram = bytes(datagram);
        for msg in Msgs::new(&datagram) {
            let msg = msg.unwrap();
            if msg.kind != wire::RTM_NEWLINK {
                continue;
            }
            let Some(link) = Link::parse(msg.payload).unwrap() else {
                continue;
            };
            if let Some(Event::Link(change)) = upsert(&mut state.links, link, Event::Link) {
                state.after_link_change(change, &mut Vec::new());
            }
        }
    }
    let late = feed(&mut state, PEER_DOWN);
    assert!(
        !late.iter().any(|event| matches!(event, Event::Link(_))),
        "{late:?}"
    );
    let work = state.take_work();
    assert!(work.nexthops, "{work:?}");
    assert_eq!(work.ifindexes, vec![2, 3]);
}

#[test]
fn a_link_deleted_keeps_routes_on_groups_for_the_nexthop_resync() {
    let mut state = loaded();
    // RTM_DELLINK of v0: the captured RTM_NEWLINK with its type changed.
    let mut datagram = bytes(PEER_DOWN[PEER_DOWN.len() - 1]);
    datagram[4..6].copy_from_slice(&wire::RTM_DELLINK.to_ne_bytes());
    let mut out = Vec::new();
    for msg in Msgs::new(&datagram) {
        state.apply(&msg.unwrap(), &mut out).unwrap();
    }
    assert!(state.links.get(&3).is_none());
    // The route on group 10 (hops on v0) waits for the nexthop resync, which decides.
    assert!(route_on(&state, 10).is_some());
    assert!(state.take_work().nexthops);
}

#[test]
fn a_nexthop_deleted_and_added_again_keeps_its_new_routes() {
    let mut state = loaded();
    feed(&mut state, NH_DEL);
    // `ip nexthop add id 3 blackhole` and `ip route add 10.62.0.0/16 nhid 3` again, before
    // the state settles: the old route goes, the new one stays.
    let mut events = feed(&mut state, &[NH_ADD[2], ROUTES_ADD[1]]);
    state.settle(&mut events);
    let removed = events
        .iter()
        .filter(|event| matches!(event, Event::Route(Change::Removed(_))))
        .count();
    let added = events
        .iter()
        .filter(|event| matches!(event, Event::Route(Change::Added(_))))
        .count();
    assert_eq!((removed, added), (1, 1), "{events:?}");
    assert!(route_on(&state, 3).is_some());
    assert!(state.nexthops.get(&3).is_some());
}

#[test]
fn a_replaced_nexthop_is_announced_with_its_routes_so_nothing_is_asked_again() {
    let mut state = loaded();
    // `ip nexthop replace id 1 via 192.0.2.9 dev v0`: the captured add of nexthop 1 with
    // the replace's flags and another gateway.
    let mut datagram = bytes(NH_ADD[0]);
    datagram[6..8].copy_from_slice(&(wire::NLM_F_REQUEST | wire::NLM_F_REPLACE).to_ne_bytes());
    let last = datagram.len() - 1;
    datagram[last] = 9;
    let mut out = Vec::new();
    for msg in Msgs::new(&datagram) {
        state.apply(&msg.unwrap(), &mut out).unwrap();
    }
    assert!(matches!(
        out.as_slice(),
        [Event::Nexthop(Change::Replaced { .. })]
    ));
    // The kernel announces the routes on it and on group 10 itself.
    assert_eq!(state.take_nhid_refresh(), None);

    // The same change without the replace flag (a group changed by a member's deletion
    // carries the delete's flags): its routes and its groups' routes are asked again.
    datagram[6..8].copy_from_slice(&wire::NLM_F_REQUEST.to_ne_bytes());
    datagram[last] = 7;
    for msg in Msgs::new(&datagram) {
        state.apply(&msg.unwrap(), &mut out).unwrap();
    }
    assert_eq!(state.take_nhid_refresh(), Some(vec![1, 10]));
}

#[test]
fn routes_on_nexthops_are_asked_again_by_the_device_they_sit_on() {
    let state = loaded();
    // Group 10's first member, nexthop 1, is on v0: every route on the group uses v0.
    assert_eq!(state.devices_of_nexthops(&[1, 10]), Some(vec![3]));
    // A blackhole sits on the loopback device, which this state has no message of: then
    // the routes are dumped whole.
    assert_eq!(state.devices_of_nexthops(&[3]), None);
    // A nexthop the state does not hold: the same.
    assert_eq!(state.devices_of_nexthops(&[99]), None);
}

/// An `RTM_NEWRULE`/`RTM_DELRULE` as the kernel sends it: `fib_rule_hdr`, then the table,
/// priority, goto target and interface names.
fn rule_msg(
    kind: u16,
    family: u8,
    rule: (u32, u8, Option<u32>),
    ifs: (Option<&str>, Option<&str>),
    flags: u32,
) -> Vec<u8> {
    let (priority, action, goto) = rule;
    let mut buf = Vec::new();
    let mut msg = wire::MsgWriter::new(&mut buf, kind, 0, 0);
    let mut hdr = [0u8; 12];
    hdr[0] = family;
    hdr[4] = if action == FR_ACT_GOTO { 0 } else { 10 };
    hdr[7] = action;
    hdr[8..12].copy_from_slice(&flags.to_ne_bytes());
    msg.raw(&hdr);
    if action != FR_ACT_GOTO {
        msg.attr_u32(15, 10);
    }
    msg.attr_u32(6, priority);
    if let Some(goto) = goto {
        msg.attr_u32(4, goto);
    }
    for (attr, name) in [(3, ifs.0), (17, ifs.1)] {
        if let Some(name) = name {
            let mut value = name.as_bytes().to_vec();
            value.push(0);
            msg.attr(attr, &value);
        }
    }
    msg.finish();
    buf
}

/// An `RTM_NEWLINK`/`RTM_DELLINK` with the link's index and name.
fn link_msg(kind: u16, ifindex: u32, name: &str) -> Vec<u8> {
    link_msg_with(kind, ifindex, name, 0, &[])
}

fn apply_one(state: &mut State, datagram: &[u8]) -> Vec<Event> {
    let mut out = Vec::new();
    for msg in Msgs::new(datagram) {
        state.apply(&msg.unwrap(), &mut out).unwrap();
    }
    out
}

/// The rules whose flags changed in `events` (old and new flags), by priority.
fn rule_flag_changes(events: &[Event]) -> Vec<(u32, u32, u32)> {
    events
        .iter()
        .filter_map(|event| match event {
            Event::Rule(Change::Replaced { old, new }) => {
                Some((new.priority(), old.flags(), new.flags()))
            }
            _ => None,
        })
        .collect()
}

fn rule_at(state: &State, family: Family, priority: u32) -> Arc<Rule> {
    state
        .rules
        .iter()
        .find(|rule| rule.family() == family && rule.priority() == priority)
        .cloned()
        .expect("the rule")
}

/// The kernel resolves a `goto` to a rule at its target priority in the same family and
/// clears or sets `unresolved` without an event when such a rule comes or goes.
#[test]
fn goto_rules_follow_their_target() {
    use crate::rule::FIB_RULE_UNRESOLVED as UNRESOLVED;
    let mut state = State::new();
    let v4 = wire::AF_INET;
    let goto = (100, FR_ACT_GOTO, Some(200));
    let events = apply_one(
        &mut state,
        &rule_msg(wire::RTM_NEWRULE, v4, goto, (None, None), UNRESOLVED),
    );
    assert_eq!(events.len(), 1);
    assert!(rule_at(&state, Family::V4, 100).is_unresolved());

    // A rule at 200 in the other family resolves nothing.
    let other = (200, crate::rule::FR_ACT_TO_TBL, None);
    let events = apply_one(
        &mut state,
        &rule_msg(wire::RTM_NEWRULE, wire::AF_INET6, other, (None, None), 0),
    );
    assert_eq!(rule_flag_changes(&events), []);

    let target = (200, crate::rule::FR_ACT_TO_TBL, None);
    let events = apply_one(
        &mut state,
        &rule_msg(wire::RTM_NEWRULE, v4, target, (None, None), 0),
    );
    assert_eq!(rule_flag_changes(&events), [(100, UNRESOLVED, 0)]);
    assert!(!rule_at(&state, Family::V4, 100).is_unresolved());

    // A second rule at 200: deleting one of them leaves the goto resolved.
    let second = (200, crate::rule::FR_ACT_TO_TBL, None);
    apply_one(
        &mut state,
        &rule_msg(
            wire::RTM_NEWRULE,
            v4,
            second,
            (Some("x"), None),
            crate::rule::FIB_RULE_IIF_DETACHED,
        ),
    );
    let events = apply_one(
        &mut state,
        &rule_msg(wire::RTM_DELRULE, v4, target, (None, None), 0),
    );
    assert_eq!(rule_flag_changes(&events), []);
    let events = apply_one(
        &mut state,
        &rule_msg(
            wire::RTM_DELRULE,
            v4,
            second,
            (Some("x"), None),
            crate::rule::FIB_RULE_IIF_DETACHED,
        ),
    );
    assert_eq!(rule_flag_changes(&events), [(100, 0, UNRESOLVED)]);
    assert!(rule_at(&state, Family::V4, 100).is_unresolved());
    assert_eq!(state.rules.len(), 2);

    let events = apply_one(
        &mut state,
        &rule_msg(wire::RTM_NEWRULE, v4, target, (None, None), 0),
    );
    assert_eq!(rule_flag_changes(&events), [(100, UNRESOLVED, 0)]);
    // The goto rule itself is found by its id whatever the flag says.
    let events = apply_one(
        &mut state,
        &rule_msg(wire::RTM_DELRULE, v4, goto, (None, None), UNRESOLVED),
    );
    assert!(
        matches!(events[..], [Event::Rule(Change::Removed(_))]),
        "{events:?}"
    );
}

/// The kernel attaches a rule's `iif`/`oif` to the link of that name when it appears (or is
/// renamed to it) and detaches it when the link goes away or is renamed, without an event.
#[test]
fn iif_and_oif_rules_follow_their_links() {
    use crate::rule::{FIB_RULE_IIF_DETACHED as IIF, FIB_RULE_OIF_DETACHED as OIF};
    let table = crate::rule::FR_ACT_TO_TBL;
    let mut state = State::new();
    let v4 = wire::AF_INET;
    apply_one(&mut state, &link_msg(wire::RTM_NEWLINK, 5, "veth-x"));
    apply_one(
        &mut state,
        &rule_msg(
            wire::RTM_NEWRULE,
            v4,
            (300, table, None),
            (Some("veth-x"), None),
            0,
        ),
    );
    apply_one(
        &mut state,
        &rule_msg(
            wire::RTM_NEWRULE,
            v4,
            (301, table, None),
            (Some("veth-y"), Some("veth-x")),
            IIF,
        ),
    );
    apply_one(
        &mut state,
        &rule_msg(
            wire::RTM_NEWRULE,
            v4,
            (302, table, None),
            (Some("other"), None),
            IIF,
        ),
    );

    // Renamed: what named the old name is detached, what names the new one attached.
    let events = apply_one(&mut state, &link_msg(wire::RTM_NEWLINK, 5, "veth-y"));
    assert!(
        matches!(events[0], Event::Link(Change::Replaced { .. })),
        "{events:?}"
    );
    assert_eq!(rule_flag_changes(&events), [(300, 0, IIF), (301, IIF, OIF)]);

    let events = apply_one(&mut state, &link_msg(wire::RTM_DELLINK, 5, "veth-y"));
    assert!(
        matches!(events[0], Event::Link(Change::Removed(_))),
        "{events:?}"
    );
    assert_eq!(rule_flag_changes(&events), [(301, OIF, IIF | OIF)]);

    let events = apply_one(&mut state, &link_msg(wire::RTM_NEWLINK, 6, "veth-x"));
    assert!(
        matches!(events[0], Event::Link(Change::Added(_))),
        "{events:?}"
    );
    assert_eq!(
        rule_flag_changes(&events),
        [(300, IIF, 0), (301, IIF | OIF, IIF)]
    );
    // An unrelated link changes nothing.
    let events = apply_one(&mut state, &link_msg(wire::RTM_NEWLINK, 7, "veth-z"));
    assert_eq!(rule_flag_changes(&events), []);
    assert!(rule_at(&state, Family::V4, 302).iif_detached());
}

/// A rename, a removal and an arrival that a dump of the links saw before their events
/// (`Cache::load` hands each change to `after_link_change`, as here): the rules naming the
/// links are attached and detached as by the events, and the events, applied after, change
/// nothing.
#[test]
fn rules_follow_the_link_changes_a_dump_saw_first() {
    use crate::rule::{FIB_RULE_IIF_DETACHED as IIF, FIB_RULE_OIF_DETACHED as OIF};
    let table = crate::rule::FR_ACT_TO_TBL;
    let mut state = State::new();
    let v4 = wire::AF_INET;
    apply_one(&mut state, &link_msg(wire::RTM_NEWLINK, 5, "veth-x"));
    apply_one(&mut state, &link_msg(wire::RTM_NEWLINK, 6, "veth-q"));
    for (priority, ifs, flags) in [
        (300, (Some("veth-x"), None), 0),
        (301, (None, Some("veth-y")), OIF),
        (302, (Some("veth-q"), None), 0),
        (303, (None, Some("veth-z")), OIF),
    ] {
        apply_one(
            &mut state,
            &rule_msg(wire::RTM_NEWRULE, v4, (priority, table, None), ifs, flags),
        );
    }
    // What the dump reports: veth-x renamed veth-y, veth-q gone, veth-z new.
    let renamed = link_msg(wire::RTM_NEWLINK, 5, "veth-y");
    let new = link_msg(wire::RTM_NEWLINK, 7, "veth-z");
    let mut out = Vec::new();
    for datagram in [&renamed, &new] {
        for msg in Msgs::new(datagram) {
            let link = Link::parse(msg.unwrap().payload).unwrap().unwrap();
            if let Some(Event::Link(change)) = upsert(&mut state.links, link, Event::Link) {
                state.after_link_change(change, &mut out);
            }
        }
    }
    let old = state.links.remove(&6).unwrap();
    state.after_link_change(Change::Removed(old), &mut out);
    assert_eq!(
        rule_flag_changes(&out),
        [(300, 0, IIF), (301, OIF, 0), (303, OIF, 0), (302, 0, IIF)]
    );
    // The events themselves, after: nothing more.
    let mut late = Vec::new();
    for datagram in [renamed, new, link_msg(wire::RTM_DELLINK, 6, "veth-q")] {
        late.extend(apply_one(&mut state, &datagram));
    }
    assert!(late.is_empty(), "{late:?}");
}

/// A link a dump found gone: its events still queued are older than its removal and are
/// dropped, until its `RTM_DELLINK` or until the socket is drained; after either, a link that
/// takes its ifindex again (`ip link add ... index N`) is added as any other.
#[test]
fn a_link_a_dump_found_gone_is_not_brought_back_by_its_older_events() {
    let mut state = State::new();
    for ifindex in [5, 6] {
        apply_one(&mut state, &link_msg(wire::RTM_NEWLINK, ifindex, "veth-x"));
        // What `Cache::load` does for a link its dump no longer finds.
        let old = state.links.remove(&ifindex).unwrap();
        state.after_link_change(Change::Removed(old), &mut Vec::new());
    }
    // Its last announcement before it went, a nexthop made on it just before (the captured
    // `ip nexthop add id 1 via 192.0.2.2 dev v0` with its device changed to 5), then its
    // deletion: nothing to report.
    let events = apply_one(&mut state, &link_msg(wire::RTM_NEWLINK, 5, "veth-x"));
    assert!(events.is_empty(), "{events:?}");
    assert!(state.links.get(&5).is_none());
    let mut nexthop = bytes(NH_ADD[0]);
    let dev = nexthop.len() - 12;
    assert_eq!(nexthop[dev..dev + 4], 3u32.to_ne_bytes());
    nexthop[dev..dev + 4].copy_from_slice(&5u32.to_ne_bytes());
    let events = apply_one(&mut state, &nexthop);
    assert!(events.is_empty(), "{events:?}");
    let events = apply_one(&mut state, &link_msg(wire::RTM_DELLINK, 5, "veth-x"));
    assert!(events.is_empty(), "{events:?}");
    let events = apply_one(&mut state, &link_msg(wire::RTM_NEWLINK, 5, "veth-y"));
    assert!(
        matches!(events[..], [Event::Link(Change::Added(_))]),
        "{events:?}"
    );
    // The other one's deletion was lost; the drained socket ends the wait all the same.
    let events = apply_one(&mut state, &link_msg(wire::RTM_NEWLINK, 6, "veth-x"));
    assert!(events.is_empty(), "{events:?}");
    state.events_drained();
    let events = apply_one(&mut state, &link_msg(wire::RTM_NEWLINK, 6, "veth-z"));
    assert!(
        matches!(events[..], [Event::Link(Change::Added(_))]),
        "{events:?}"
    );
}

/// A bridge port's `RTM_NEWLINK` (`AF_UNSPEC`, with `IFLA_LINKINFO`'s port kind and data) or
/// its `AF_BRIDGE` one (with `IFLA_PROTINFO`), carrying the port's state and cost.
fn port_msg(family: u8, ifindex: u32, state: u8, cost: u32) -> Vec<u8> {
    let mut buf = Vec::new();
    let mut msg = wire::MsgWriter::new(&mut buf, wire::RTM_NEWLINK, 0, 0);
    let mut hdr = [0u8; 16];
    hdr[0] = family;
    hdr[4..8].copy_from_slice(&ifindex.to_ne_bytes());
    msg.raw(&hdr);
    msg.attr(3, b"p0\0");
    let port_attrs = |msg: &mut wire::MsgWriter<'_>| {
        msg.attr(1, &[state]);
        msg.attr_u32(3, cost);
    };
    if family == wire::AF_BRIDGE {
        let at = msg.begin_nest(12);
        port_attrs(&mut msg);
        msg.end_nest(at);
    } else {
        let info = msg.begin_nest(18);
        msg.attr(4, b"bridge\0");
        let data = msg.begin_nest(5);
        port_attrs(&mut msg);
        msg.end_nest(data);
        msg.end_nest(info);
    }
    msg.finish();
    buf
}

/// The STP state of a bridge port changes with an `AF_BRIDGE` `RTM_NEWLINK` only: the held
/// port's data takes its values, one `changed` event; the same values again change nothing.
#[test]
fn a_bridge_port_message_updates_the_port_data() {
    let port = |state: &State| {
        let link = state.links.get(&4).expect("the port").clone();
        link.port_data().to_vec()
    };
    let mut state = State::new();
    apply_one(&mut state, &port_msg(wire::AF_UNSPEC, 4, 0, 2));
    assert_eq!(port(&state)[0], ("state".into(), AttrValue::Uint(0)));

    let events = apply_one(&mut state, &port_msg(wire::AF_BRIDGE, 4, 3, 7));
    assert!(
        matches!(&events[..], [Event::Link(Change::Replaced { old, new })]
            if old.port_data() != new.port_data()),
        "{events:?}"
    );
    assert_eq!(
        port(&state),
        [
            ("state".into(), AttrValue::Uint(3)),
            ("cost".into(), AttrValue::Uint(7))
        ]
    );
    assert_eq!(
        apply_one(&mut state, &port_msg(wire::AF_BRIDGE, 4, 3, 7)),
        []
    );
    // A port the cache does not hold, or a link that is no bridge port: nothing.
    assert_eq!(
        apply_one(&mut state, &port_msg(wire::AF_BRIDGE, 9, 1, 7)),
        []
    );
    // The AF_UNSPEC message of the port says the same as a dump.
    let events = apply_one(&mut state, &port_msg(wire::AF_UNSPEC, 4, 1, 7));
    assert_eq!(events.len(), 1);
    assert_eq!(port(&state)[0], ("state".into(), AttrValue::Uint(1)));
}

/// An IPv4 `RTM_NEWROUTE` of `dst`/24, metric 5, on ifindex 2, via `gateway` if any.
fn v4_route_msg(flags: u16, dst: [u8; 4], gateway: Option<[u8; 4]>) -> Vec<u8> {
    let mut buf = Vec::new();
    let mut msg = wire::MsgWriter::new(&mut buf, wire::RTM_NEWROUTE, flags, 0);
    // rtmsg: AF_INET, /24, main table, protocol boot, universe scope, unicast.
    msg.raw(&[2, 24, 0, 0, 254, 3, 0, 1, 0, 0, 0, 0]);
    msg.attr(1, &dst);
    msg.attr_u32(4, 2);
    if let Some(gateway) = gateway {
        msg.attr(5, &gateway);
    }
    msg.attr_u32(6, 5);
    msg.attr_u32(15, 254);
    msg.finish();
    buf
}

/// An IPv4 addition the kernel flags `NLM_F_EXCL` (no route had its prefix key) goes last,
/// without a look at its peers; one without the flag goes among its peers as the flags say.
#[test]
fn ipv4_routes_go_where_the_kernels_flags_put_them() {
    let mut state = State::new();
    let create = wire::NLM_F_CREATE;
    for (flags, dst, gateway) in [
        (create | wire::NLM_F_EXCL, [10, 20, 0, 0], None),
        (create | wire::NLM_F_EXCL, [10, 30, 0, 0], None),
        // `ip route prepend`: before the first peer.
        (create, [10, 20, 0, 0], Some([192, 0, 2, 2])),
        // `ip route append`: after the last peer.
        (create | NLM_F_APPEND, [10, 20, 0, 0], Some([192, 0, 2, 3])),
        (create | wire::NLM_F_EXCL, [10, 40, 0, 0], None),
    ] {
        let events = apply_one(&mut state, &v4_route_msg(flags, dst, gateway));
        assert!(
            matches!(events[..], [Event::Route(Change::Added(_))]),
            "{events:?}"
        );
    }
    let order: Vec<String> = state
        .routes
        .iter()
        .map(|route| format!("{} {:?}", route.dst(), route.gateway()))
        .collect();
    assert_eq!(
        order,
        [
            "10.20.0.0 Some(192.0.2.2)",
            "10.20.0.0 None",
            "10.20.0.0 Some(192.0.2.3)",
            "10.30.0.0 None",
            "10.40.0.0 None",
        ]
    );
}

/// An `RTM_NEWNETCONF` of `family` for `ifindex` (`u32::MAX`: `all`) with the attributes
/// `kinds`, each a 4-byte 1.
fn netconf_msg(family: u8, ifindex: u32, kinds: &[u16]) -> Vec<u8> {
    let mut buf = Vec::new();
    let mut msg = wire::MsgWriter::new(&mut buf, wire::RTM_NEWNETCONF, 0, 0);
    msg.raw(&[family, 0, 0, 0]);
    msg.attr_u32(1, ifindex);
    for &kind in kinds {
        msg.attr_u32(kind, 1);
    }
    msg.finish();
    buf
}

/// A sysctl write of `ignore_routes_with_linkdown` asks again for the routes of the links
/// it concerns that have no carrier (the only ones whose reported flags it changes): one
/// link's, or every such link's for `all`. A link's first netconf message, with every
/// setting, another setting written, or a link with its carrier, ask for nothing.
#[test]
fn ignore_routes_with_linkdown_asks_for_the_routes_of_links_without_carrier() {
    const IGNORE_ROUTES_WITH_LINKDOWN: u16 = 6;
    let mut state = State::new();
    apply_one(&mut state, &link_msg(wire::RTM_NEWLINK, 3, "a0"));
    apply_one(&mut state, &link_msg(wire::RTM_NEWLINK, 4, "a1"));
    let carrier = IFF_UP | IFF_RUNNING | IFF_LOWER_UP;
    apply_one(
        &mut state,
        &link_msg_with(wire::RTM_NEWLINK, 5, "a2", carrier, &[]),
    );
    assert_eq!(state.take_work(), Work::default());

    apply_one(
        &mut state,
        &netconf_msg(2, 3, &[IGNORE_ROUTES_WITH_LINKDOWN]),
    );
    assert_eq!(state.take_work().ifindexes, [3]);
    apply_one(
        &mut state,
        &netconf_msg(10, u32::MAX, &[IGNORE_ROUTES_WITH_LINKDOWN]),
    );
    assert_eq!(state.take_work().ifindexes, [3, 4]);

    for quiet in [
        netconf_msg(2, 5, &[IGNORE_ROUTES_WITH_LINKDOWN]),
        netconf_msg(2, 3, &[2, 3, 4, 5, IGNORE_ROUTES_WITH_LINKDOWN, 7]),
        netconf_msg(2, 3, &[2]),
        netconf_msg(2, 9, &[IGNORE_ROUTES_WITH_LINKDOWN]),
    ] {
        assert_eq!(apply_one(&mut state, &quiet), []);
        assert_eq!(state.take_work(), Work::default());
    }
}

/// An `RTM_NEWQDISC`/`RTM_DELQDISC` of kind `qdisc` on `ifindex` under `parent`.
fn qdisc_msg(kind: u16, ifindex: u32, parent: u32, qdisc: &str) -> Vec<u8> {
    let mut buf = Vec::new();
    let mut msg = wire::MsgWriter::new(&mut buf, kind, 0, 0);
    let mut hdr = [0u8; 20];
    hdr[4..8].copy_from_slice(&ifindex.to_ne_bytes());
    hdr[8..12].copy_from_slice(&0x8001_0000_u32.to_ne_bytes());
    hdr[12..16].copy_from_slice(&parent.to_ne_bytes());
    msg.raw(&hdr);
    let mut value = qdisc.as_bytes().to_vec();
    value.push(0);
    msg.attr(1, &value);
    msg.finish();
    buf
}

/// A new root queueing discipline of another kind than the link's `qdisc`, or a root one
/// deleted, reads the links again (the kernel says nothing on the link); the same kind
/// again, a discipline under another, or one on a link the cache does not hold, do not.
#[test]
fn a_new_root_qdisc_reads_the_links_again() {
    let mut state = State::new();
    let mut link = Vec::new();
    let mut msg = wire::MsgWriter::new(&mut link, wire::RTM_NEWLINK, 0, 0);
    let mut hdr = [0u8; 16];
    hdr[4..8].copy_from_slice(&3u32.to_ne_bytes());
    msg.raw(&hdr);
    msg.attr(3, b"a0\0");
    msg.attr(6, b"noqueue\0");
    msg.finish();
    apply_one(&mut state, &link);
    assert_eq!(state.take_work(), Work::default());

    const ROOT: u32 = u32::MAX;
    for quiet in [
        qdisc_msg(wire::RTM_NEWQDISC, 3, ROOT, "noqueue"),
        qdisc_msg(wire::RTM_NEWQDISC, 3, 0x8001_0001, "pfifo"),
        qdisc_msg(wire::RTM_NEWQDISC, 3, 0xffff_fff1, "clsact"),
        qdisc_msg(wire::RTM_NEWQDISC, 9, ROOT, "pfifo"),
    ] {
        assert_eq!(apply_one(&mut state, &quiet), []);
        assert_eq!(state.take_work(), Work::default());
    }
    apply_one(&mut state, &qdisc_msg(wire::RTM_NEWQDISC, 3, ROOT, "pfifo"));
    assert!(state.take_work().links);
    apply_one(
        &mut state,
        &qdisc_msg(wire::RTM_DELQDISC, 3, ROOT, "noqueue"),
    );
    assert!(state.take_work().links);
}

/// An `RTM_NEWLINK`/`RTM_DELLINK` of `ifindex` named `name` with `flags` and the `u32`
/// attributes `attrs`.
fn link_msg_with(kind: u16, ifindex: u32, name: &str, flags: u32, attrs: &[(u16, u32)]) -> Vec<u8> {
    let mut buf = Vec::new();
    let mut msg = wire::MsgWriter::new(&mut buf, kind, 0, 0);
    let mut hdr = [0u8; 16];
    hdr[4..8].copy_from_slice(&ifindex.to_ne_bytes());
    hdr[8..12].copy_from_slice(&flags.to_ne_bytes());
    msg.raw(&hdr);
    let mut value = name.as_bytes().to_vec();
    value.push(0);
    msg.attr(3, &value);
    for &(kind, value) in attrs {
        msg.attr_u32(kind, value);
    }
    msg.finish();
    buf
}

/// What the kernel changes on a link after announcing it, and the cache reads again: a veth
/// end announced before its peer existed (`IFLA_LINK` 0) gets the peer; a link's MTU going
/// below or back above what IPv6 needs takes or gives its IPv6 state; a port joining or leaving a bridge, and a macvlan
/// going up or down, change promiscuity counts.
#[test]
fn links_the_kernel_changes_after_announcing_them_are_read_again() {
    const IFLA_MTU: u16 = 4;
    const IFLA_LINK: u16 = 5;
    const IFLA_MASTER: u16 = 10;
    let link = |ifindex: u32, name: &str, attrs: &[(u16, u32)]| {
        link_msg_with(wire::RTM_NEWLINK, ifindex, name, 0, attrs)
    };
    let mut state = State::new();
    // A veth end with no parent yet, its peer, then a link whose parent has one.
    for (msg, read_again) in [
        (link(5, "nmw1", &[(IFLA_LINK, 0)]), false),
        (link(6, "nmw0", &[(IFLA_LINK, 5), (IFLA_MTU, 1500)]), true),
        (link(7, "other", &[(IFLA_LINK, 6)]), false),
    ] {
        apply_one(&mut state, &msg);
        assert_eq!(state.take_work().links, read_again);
    }
    // The MTU across IPv6's 1280 and not; a bridge port joining and leaving.
    for (mtu, master, read_again) in [
        (1500, None, false),
        (1200, None, true),
        (1500, None, true),
        (1400, None, false),
        (1400, Some(9), true),
        (1400, None, true),
    ] {
        let mut attrs = vec![(IFLA_LINK, 5), (IFLA_MTU, mtu)];
        attrs.extend(master.map(|master| (IFLA_MASTER, master)));
        apply_one(&mut state, &link(6, "nmw0", &attrs));
        assert_eq!(state.take_work().links, read_again, "{mtu} {master:?}");
    }
}
