//! Golden bytes: nexthop messages captured from Linux 6.18 (`ip monitor nexthop`'s input),
//! and the requests this crate builds.

use super::*;
use crate::types::{Protocol, Scope};
use crate::wire::Msgs;

fn bytes(hex: &str) -> Vec<u8> {
    (0..hex.len())
        .step_by(2)
        .map(|at| u8::from_str_radix(&hex[at..at + 2], 16).unwrap())
        .collect()
}

fn parse_one(datagram: &[u8]) -> Nexthop {
    let msg = Msgs::new(datagram).next().unwrap().unwrap();
    Nexthop::parse(msg.payload).unwrap().unwrap()
}

/// `ip nexthop add id 1 via 192.0.2.2 dev v0` (v0 is ifindex 3).
const GATEWAY: &str = concat!(
    "3000000068000506dbe90e6bd152000002fd000000000000",
    "0800010001000000080005000300000008000600c0000202",
);
/// `ip nexthop add id 3 blackhole`.
const BLACKHOLE: &str = "2400000068000506dce90e6be65200000200000000000000080001000300000004000400";
/// `ip nexthop add id 10 group 1/2,3`, with `NHA_OP_FLAGS` (type 14), which this crate does
/// not decode.
const GROUP: &str = concat!(
    "4400000068000506dce90e6bfc5200000000000000000000080001000a000000",
    "0600030000000000140002000100000000000000020000000200000008000e00",
    "00000080",
);
/// Group 10 after `ip nexthop del id 2`.
const GROUP_AFTER: &str = concat!(
    "3c00000068000500dce90e6b755300000000000000000000080001000a000000",
    "06000300000000000c000200010000000000000008000e0000000080",
);

#[test]
fn golden_gateway_nexthop() {
    let nh = parse_one(&bytes(GATEWAY));
    assert_eq!(nh.id(), 1);
    assert_eq!(nh.family(), Some(Family::V4));
    assert_eq!(nh.gateway(), Some("192.0.2.2".parse().unwrap()));
    assert_eq!(nh.oif(), Some(crate::Ifindex(3)));
    assert_eq!(nh.scope(), Scope(253));
    assert_eq!((nh.protocol(), nh.flags()), (Protocol::UNSPEC, 0));
    assert!(!nh.is_blackhole() && !nh.is_group() && !nh.is_fdb());
    assert!(nh.unknown_attributes().is_empty());

    // The request for the same nexthop: what `ip nexthop add` sends, without the scope the
    // kernel chose.
    let mut buf = Vec::new();
    Nexthop::new(1)
        .with_gateway("192.0.2.2".parse().unwrap())
        .with_oif(crate::Ifindex(3))
        .emit(&mut buf, wire::RTM_NEWNEXTHOP, 0x605, 7);
    let expected = concat!(
        "3000000068000506070000000000000002000000000000000800010001000000",
        "080005000300000008000600c0000202",
    );
    assert_eq!(buf, bytes(expected));
}

#[test]
fn display_as_ip_prints() {
    assert_eq!(
        parse_one(&bytes(GATEWAY)).to_string(),
        "id 1 via 192.0.2.2 dev if3 scope link proto unspec"
    );
    assert_eq!(
        parse_one(&bytes(BLACKHOLE)).to_string(),
        "id 3 scope global blackhole proto unspec"
    );
    assert_eq!(
        parse_one(&bytes(GROUP)).to_string(),
        "id 10 group 1/2,3 scope global proto unspec unknown 14:00000080"
    );
    let res = Nexthop::new(11)
        .with_group(vec![GroupMember { id: 1, weight: 1 }])
        .with_group_type(NEXTHOP_GRP_TYPE_RES)
        .with_buckets(8)
        .with_flags(RTNH_F_ONLINK);
    assert_eq!(
        res.to_string(),
        "id 11 group 1 type resilient buckets 8 scope global proto unspec onlink"
    );
}

#[test]
fn nexthop_text_is_ip_d_nexthop() {
    let dev = |ifindex: u32| format!("v{ifindex}");
    let text = |nh: &Nexthop| crate::text::nexthop_text(nh, &dev);
    assert_eq!(
        text(&parse_one(&bytes(GATEWAY))),
        "id 1 via 192.0.2.2 dev v3 scope link proto unspec"
    );
    assert_eq!(
        text(&parse_one(&bytes(BLACKHOLE))),
        "id 3 scope global blackhole proto unspec"
    );
    assert_eq!(
        text(&parse_one(&bytes(GROUP))),
        "id 10 group 1/2,3 scope global proto unspec"
    );
    let res = Nexthop::new(11)
        .with_group(vec![GroupMember { id: 1, weight: 1 }])
        .with_group_type(NEXTHOP_GRP_TYPE_RES)
        .with_buckets(8);
    assert_eq!(
        text(&res),
        "id 11 group 1 type resilient buckets 8 scope global proto unspec"
    );
    let onlink = Nexthop::new(2)
        .with_gateway("192.0.2.3".parse().unwrap())
        .with_oif(crate::Ifindex(3))
        .with_flags(RTNH_F_ONLINK)
        .with_protocol(crate::Protocol(11));
    assert!(
        text(&onlink).ends_with(" proto zebra onlink"),
        "{}",
        text(&onlink)
    );
}

#[test]
fn golden_blackhole_nexthop() {
    let nh = parse_one(&bytes(BLACKHOLE));
    assert_eq!(nh.id(), 3);
    assert!(nh.is_blackhole());
    assert_eq!(
        (nh.oif(), nh.gateway(), nh.family()),
        (None, None, Some(Family::V4))
    );
}

#[test]
fn golden_group_with_weights() {
    let nh = parse_one(&bytes(GROUP));
    assert_eq!(nh.family(), None);
    assert_eq!(
        nh.group(),
        [
            GroupMember { id: 1, weight: 1 },
            GroupMember { id: 2, weight: 3 }
        ]
    );
    assert_eq!(nh.group_type(), Some(NEXTHOP_GRP_TYPE_MPATH));
    assert!(nh.has_member(2) && !nh.has_member(3));

    let after = parse_one(&bytes(GROUP_AFTER));
    assert_eq!(after.group(), [GroupMember { id: 1, weight: 1 }]);
    // Kept raw, never dropped.
    assert_eq!(
        after.unknown_attributes(),
        [(14, vec![0, 0, 0, 0x80].into_boxed_slice())]
    );
}

#[test]
fn group_requests_round_trip_with_wide_weights() {
    let group = Nexthop::new(20)
        .with_group(vec![
            GroupMember { id: 1, weight: 1 },
            GroupMember { id: 2, weight: 300 },
            GroupMember {
                id: 3,
                weight: 65536,
            },
        ])
        .with_group_type(NEXTHOP_GRP_TYPE_RES)
        .with_buckets(64);
    let mut buf = Vec::new();
    group.emit(&mut buf, wire::RTM_NEWNEXTHOP, 0, 1);
    let again = parse_one(&buf);
    assert_eq!(again.group(), group.group());
    assert_eq!(again.group_type(), Some(NEXTHOP_GRP_TYPE_RES));
    assert_eq!(again.resilient().and_then(|res| res.buckets), Some(64));
    // Weight 300 is 299 in `weight` and `weight_high`.
    let entry = &buf[buf.len() - 16 - 8 - 12..];
    assert!(entry.windows(4).any(|w| w == [2, 0, 0, 0]));

    let mut del = Vec::new();
    group.emit(&mut del, wire::RTM_DELNEXTHOP, 0, 2);
    assert_eq!(
        del,
        bytes("2000000069000000020000000000000000000000000000000800010014000000")
    );
}

#[test]
fn malformed_nexthop_messages_are_errors() {
    // Shorter than nhmsg.
    assert!(Nexthop::parse(&[0; 7]).is_err());
    // No id.
    assert!(Nexthop::parse(&bytes("0200000000000000")).is_err());
    // An attribute longer than the message.
    assert!(Nexthop::parse(&bytes("02000000000000000800010001000000ff000500")).is_err());
    // A group entry cut short.
    assert!(Nexthop::parse(&bytes("000000000000000008000100010000000800020001000000")).is_err());
    // A gateway of a wrong size.
    assert!(Nexthop::parse(&bytes("020000000000000008000100010000000700060001020300")).is_err());
    // Other families (say AF_MPLS) are not nexthops of this crate.
    assert_eq!(
        Nexthop::parse(&bytes("1c000000000000000800010001000000")).unwrap(),
        None
    );
}

/// Every seed of the fuzz targets (the nexthop ones among them) passes the parse target's
/// round-trip checks.
#[cfg(feature = "fuzzing")]
#[test]
fn fuzz_seeds_pass_the_parse_target() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/seeds");
    let mut n_nexthops = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let datagram = std::fs::read(&path).unwrap();
        crate::fuzzing::parse_datagram(&datagram);
        n_nexthops += usize::from(path.to_string_lossy().contains("nexthop"));
    }
    assert!(n_nexthops > 0, "no nexthop seeds");
}

/// `nexthop` lines and `nhid` as `ip -batch` reads them.
mod batch_lines {
    use crate::batch::{Item, Op};
    use crate::ipbatch::{ParseError, parse_line};
    use crate::nexthop::{GroupMember, NEXTHOP_GRP_TYPE_RES, Nexthop, RTNH_F_ONLINK};
    use crate::types::{Protocol, Scope};

    fn dev(name: &str) -> Option<crate::Ifindex> {
        (name == "eth0").then_some(crate::Ifindex(2))
    }

    fn nexthop(line: &str) -> (Op, Nexthop) {
        match parse_line(line, &dev).unwrap() {
            Item::Nexthop(op, nh) => (op, nh),
            other => panic!("{line}: {other:?}"),
        }
    }

    #[test]
    fn nexthop_lines() {
        let (op, nh) = nexthop("nexthop add id 1 via 192.0.2.2 dev eth0 onlink proto zebra");
        assert_eq!(op, Op::Add);
        assert_eq!(nh.id(), 1);
        assert_eq!(nh.gateway(), Some("192.0.2.2".parse().unwrap()));
        assert_eq!(nh.oif(), Some(crate::Ifindex(2)));
        assert_eq!(nh.flags(), RTNH_F_ONLINK);
        assert_eq!(nh.protocol(), Protocol(11));

        let (_, nh) = nexthop("nexthop add id 3 blackhole");
        assert!(nh.is_blackhole());

        let (op, nh) = nexthop("nexthop replace id 10 group 1/2,3 type resilient buckets 32");
        assert_eq!(op, Op::Replace);
        assert_eq!(
            nh.group(),
            [
                GroupMember { id: 1, weight: 1 },
                GroupMember { id: 2, weight: 3 }
            ]
        );
        assert_eq!(nh.group_type(), Some(NEXTHOP_GRP_TYPE_RES));
        assert_eq!(nh.resilient().and_then(|res| res.buckets), Some(32));

        let (op, nh) = nexthop("nh del id 10");
        assert_eq!((op, nh), (Op::Delete, Nexthop::new(10)));
    }

    #[test]
    fn bad_nexthop_lines_name_the_word() {
        let err = |line: &str| parse_line(line, &dev).unwrap_err();
        assert_eq!(
            err("nexthop add via 192.0.2.2 dev eth0"),
            ParseError::NoNexthopId
        );
        assert_eq!(err("nexthop add id 0 blackhole"), ParseError::NoNexthopId);
        assert_eq!(
            err("nexthop add id x blackhole"),
            ParseError::BadNumber("x".into())
        );
        assert_eq!(
            err("nexthop add id 1 group 1/2,0"),
            ParseError::BadGroupMember("2,0".into())
        );
        assert_eq!(
            err("nexthop add id 1 group 1/2,65537"),
            ParseError::BadGroupMember("2,65537".into())
        );
        assert_eq!(
            err("nexthop add id 1 via 192.0.2.2 dev eth9"),
            ParseError::UnknownDevice("eth9".into())
        );
        assert_eq!(
            err("nexthop add id 1 color blue"),
            ParseError::UnknownNexthopKeyword("color".into())
        );
        assert_eq!(err("nexthop add id"), ParseError::MissingValue("id".into()));
        assert_eq!(err("nexthop add id 1 via").token(), Some("via"));
    }

    #[test]
    fn routes_on_nexthops() {
        let Item::Route(Op::Add, route) =
            parse_line("route add 10.170.0.0/16 nhid 1", &dev).unwrap()
        else {
            panic!("a route");
        };
        assert_eq!(route.nh_id(), Some(1));
        // No gateway nor device: the nexthop gives them, and the scope is universe.
        assert_eq!(
            (route.gateway(), route.oif(), route.scope()),
            (None, None, Scope::UNIVERSE)
        );
        // The request carries the id alone.
        let mut buf = Vec::new();
        route.emit(&mut buf, crate::wire::RTM_NEWROUTE, 0, 1);
        let sent = crate::route::Route::parse(&buf[16..]).unwrap().unwrap();
        assert_eq!(sent.nh_id(), Some(1));
        assert_eq!((sent.gateway(), sent.oif()), (None, None));
        assert_eq!(
            parse_line("route add 10.170.0.0/16 nhid one", &dev).unwrap_err(),
            ParseError::BadNumber("one".into())
        );
    }
}
