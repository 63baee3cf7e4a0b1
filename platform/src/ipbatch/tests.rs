//! Tests of the batch line grammar: what `ip` accepts, the defaults `ip` picks, the errors.

use super::*;
use crate::route::Family;
use crate::types::{Protocol, RouteType, Table};

fn resolve(name: &str) -> Option<crate::Ifindex> {
    match name {
        "eth0" => Some(crate::Ifindex(2)),
        "veth1" => Some(crate::Ifindex(7)),
        _ => None,
    }
}

fn parse_route_line(line: &str) -> (Op, Route) {
    match parse_line(line, &resolve) {
        Ok(Item::Route(op, route)) => (op, route),
        other => panic!("{line}: {other:?}"),
    }
}

#[test]
fn route_add_with_every_keyword() {
    let (op, route) = parse_route_line(
        "route add 10.1.0.0/16 via 192.0.2.1 dev eth0 table 100 metric 7 proto static src 192.0.2.9",
    );
    assert_eq!(op, Op::Add);
    assert_eq!(route.dst(), "10.1.0.0".parse::<IpAddr>().unwrap());
    assert_eq!(route.dst_len(), 16);
    assert_eq!(route.gateway(), Some("192.0.2.1".parse().unwrap()));
    assert_eq!(route.oif(), Some(crate::Ifindex(2)));
    assert_eq!(route.table(), Table(100));
    assert_eq!(route.priority(), 7);
    assert_eq!(route.protocol(), Protocol::STATIC);
    assert_eq!(route.scope(), Scope::UNIVERSE);
    assert_eq!(route.prefsrc(), Some("192.0.2.9".parse().unwrap()));
}

#[test]
fn route_defaults_are_ips() {
    let (_, route) = parse_route_line("route add 10.1.0.0/16 dev eth0");
    assert_eq!(route.table(), Table::MAIN);
    assert_eq!(route.protocol(), Protocol::BOOT);
    assert_eq!(route.scope(), Scope::LINK, "no gateway: link scope");
    assert_eq!(route.kind(), RouteType::UNICAST);

    let (_, route) = parse_route_line("route add blackhole 10.9.0.0/16");
    assert_eq!(route.kind(), RouteType::BLACKHOLE);
    assert_eq!(route.scope(), Scope::UNIVERSE);

    let (_, route) = parse_route_line("route add local 192.0.2.5 dev eth0");
    assert_eq!(route.table(), Table::LOCAL);
    assert_eq!(route.scope(), Scope::HOST);
    assert_eq!(route.dst_len(), 32);

    let (_, route) = parse_route_line("route add broadcast 192.0.2.255 dev eth0");
    assert_eq!(route.table(), Table::LOCAL);
    assert_eq!(route.scope(), Scope::LINK);

    let (_, route) = parse_route_line("-6 route replace default via 2001:db8::1 dev eth0");
    assert_eq!(route.family(), Family::V6);
    assert_eq!(route.dst_len(), 0);

    let (_, route) =
        parse_route_line("route add 10.2.0.0/16 via 192.0.2.1 table main scope link proto 250");
    assert_eq!(route.table(), Table::MAIN);
    assert_eq!(route.scope(), Scope::LINK);
    assert_eq!(route.protocol(), Protocol(250));
}

#[test]
fn route_delete_leaves_wildcards() {
    let (op, route) = parse_route_line("route del 10.1.0.0/16 dev eth0");
    assert_eq!(op, Op::Delete);
    assert_eq!(route.protocol(), Protocol(0));
    assert_eq!(route.scope(), Scope::NOWHERE);
    assert_eq!(route.kind(), RouteType(0));
    let (_, route) = parse_route_line("route delete 10.1.0.0/16");
    assert_eq!(route.oif(), None);
}

#[test]
fn addresses() {
    let Ok(Item::Address(op, addr)) = parse_line(
        "addr add 192.0.2.7/24 dev veth1 broadcast 192.0.2.255",
        &resolve,
    ) else {
        panic!("not an address");
    };
    assert_eq!(op, Op::Add);
    assert_eq!(addr.ifindex(), crate::Ifindex(7));
    assert_eq!(addr.prefix_len(), 24);
    assert_eq!(addr.broadcast(), Some("192.0.2.255".parse().unwrap()));
    assert!(matches!(
        parse_line("address del 2001:db8::7/64 dev eth0", &resolve),
        Ok(Item::Address(Op::Delete, _))
    ));
}

#[test]
fn a_file_is_numbered_without_blanks_and_comments() {
    let text = "# routes for the lab\n\n  route add 10.1.0.0/16 dev eth0  \nroute add x\n";
    let lines: Vec<Line<'_>> = parse(text, &resolve).collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(
        (lines[0].number, &*lines[0].text),
        (3, "route add 10.1.0.0/16 dev eth0")
    );
    assert!(matches!(lines[0].item, Ok(Item::Route(Op::Add, _))));
    assert_eq!(lines[1].number, 4);
    assert_eq!(lines[1].item, Err(ParseError::BadAddress("x".to_owned())));
}

/// Checks the error's message and the word it blames.
#[track_caller]
fn check_error(line: &str, expected: &str, token: Option<&str>) {
    let err = parse_line(line, &resolve).expect_err(line);
    assert_eq!(err.to_string(), expected, "{line}");
    assert_eq!(err.token(), token, "{line}");
}

#[test]
fn malformed_lines() {
    check_error("", "empty line", None);
    check_error("-6", "empty line", None);
    check_error(
        "route",
        "missing command (add, del, replace, change, append or prepend)",
        None,
    );
    check_error(
        "route flush all",
        "unknown command `flush` (expected add, del, replace, change, append or prepend)",
        Some("flush"),
    );
    check_error(
        "link add x type dummy",
        "unknown object `link` (expected route, addr, nexthop or rule)",
        Some("link"),
    );
    check_error("route add", "missing the route's prefix", None);
    check_error("route add local", "missing the route's prefix", None);
    check_error(
        "route add 10.0.0.0/33 dev eth0",
        "bad prefix length in `10.0.0.0/33`",
        Some("10.0.0.0/33"),
    );
    check_error(
        "route add 10.0.0.0/x dev eth0",
        "bad prefix length in `10.0.0.0/x`",
        Some("10.0.0.0/x"),
    );
    check_error(
        "route add 10.0.0.300/24 dev eth0",
        "`10.0.0.300` is not an IP address",
        Some("10.0.0.300"),
    );
    check_error(
        "route add 10.0.0.0/24 dev nope0",
        "cannot find device \"nope0\"",
        Some("nope0"),
    );
    check_error(
        "route add 10.0.0.0/24 dev",
        "`dev` needs a value",
        Some("dev"),
    );
    check_error(
        "route add 10.0.0.0/24 fastmode 1400 dev eth0",
        "unknown route keyword `fastmode`",
        Some("fastmode"),
    );
    check_error(
        "route add 10.0.0.0/24",
        "a unicast route needs `via GATEWAY` or `dev DEVICE`",
        None,
    );
    check_error(
        "route add 10.0.0.0/24 via 2001:db8::1",
        "the gateway's family differs from the prefix's",
        Some("2001:db8::1"),
    );
    check_error(
        "route add 10.0.0.0/24 dev eth0 table nosuch",
        "unknown table `nosuch`",
        Some("nosuch"),
    );
    check_error(
        "route add 10.0.0.0/24 dev eth0 metric -1",
        "bad metric `-1`",
        Some("-1"),
    );
    check_error(
        "route add 10.0.0.0/24 dev eth0 proto nosuch",
        "unknown protocol `nosuch`",
        Some("nosuch"),
    );
    check_error(
        "route add 10.0.0.0/24 dev eth0 scope far",
        "unknown scope `far`",
        Some("far"),
    );
    check_error("addr add", "missing the address", None);
    check_error(
        "addr add 192.0.2.7/24",
        "an address needs `dev DEVICE`",
        None,
    );
    check_error(
        "addr add 192.0.2.7/24 dev eth0 brd ff02::1",
        "broadcast is IPv4 only",
        Some("ff02::1"),
    );
    check_error(
        "addr add 192.0.2.7/24 dev eth0 lable eth0:1",
        "unknown address keyword `lable`",
        Some("lable"),
    );
    check_error(
        "addr add 192.0.2.7/24 dev eth0 label eth1:1",
        "bad label (must start with the device name `eth0`) `eth1:1`",
        Some("eth1:1"),
    );
    check_error(
        "addr add 192.0.2.7/24 dev eth0 valid_lft 10 preferred_lft 20",
        "bad preferred_lft (greater than valid_lft) `20`",
        Some("20"),
    );
    check_error(
        "addr add 192.0.2.7/24 dev eth0 valid_lft 0",
        "bad valid_lft (zero) `0`",
        Some("0"),
    );
    check_error(
        "addr add 192.0.2.7 peer 2001:db8::1 dev eth0",
        "bad peer (of another family than the address) `2001:db8::1/128`",
        Some("2001:db8::1/128"),
    );
    check_error(
        "addr add 192.0.2.7/24 dev eth0 proto kernel_xx",
        "unknown protocol `kernel_xx`",
        Some("kernel_xx"),
    );
}

/// Every keyword and flag `ip addr add` takes, read as `ip` reads it (issue: the batch took
/// only `dev` and `broadcast`).
#[test]
fn addresses_take_what_ip_addr_add_takes() {
    let address = |line: &str| match parse_line(line, &resolve) {
        Ok(Item::Address(_, addr)) => addr,
        other => panic!("{line}: {other:?}"),
    };
    let a = address(
        "addr add 192.0.2.7/24 dev eth0 label eth0:web brd + scope link metric 50 proto 7 \
         valid_lft 300 preferred_lft 200 noprefixroute",
    );
    assert_eq!(a.label(), Some("eth0:web"));
    assert_eq!(a.broadcast(), Some("192.0.2.255".parse().unwrap()));
    assert_eq!(a.scope(), crate::Scope(253));
    assert_eq!(a.rt_priority(), Some(50));
    assert_eq!(a.proto(), Some(7));
    assert_eq!(a.lifetimes(), (300, 200));
    assert_eq!(a.flags(), 0x200);
    assert_eq!(
        address("addr add 192.0.2.7/24 dev eth0 brd -").broadcast(),
        Some("192.0.2.0".parse().unwrap())
    );
    // A peer: its length is the prefix's; the address given stays the local one.
    let p = address("addr add 10.9.0.1 peer 10.9.0.2/30 dev eth0");
    assert_eq!(
        (p.local(), p.peer(), p.prefix_len()),
        (
            "10.9.0.1".parse().unwrap(),
            Some("10.9.0.2".parse().unwrap()),
            30
        )
    );
    let p = address("addr add local 10.9.0.5 dev eth0 remote 10.9.0.6");
    assert_eq!(
        (p.peer(), p.prefix_len()),
        (Some("10.9.0.6".parse().unwrap()), 32)
    );
    // IPv6 flags; one lifetime alone leaves the other forever.
    let v6 = address(
        "addr add 2001:db8::7/64 dev eth0 nodad home mngtmpaddr autojoin optimistic preferred_lft 0 proto kernel_ra",
    );
    assert_eq!(v6.flags(), 0x02 | 0x10 | 0x100 | 0x400 | 0x04);
    assert_eq!(v6.lifetimes(), (crate::addr::LIFETIME_FOREVER, 0));
    assert_eq!(v6.proto(), Some(2));
    // 127.0.0.0/8 gets host scope unless told otherwise, as `ip` gives it.
    assert_eq!(
        address("addr add 127.0.0.9/8 dev eth0").scope(),
        crate::Scope(254)
    );
    assert_eq!(
        address("addr add 127.0.0.9/8 dev eth0 scope global").scope(),
        crate::Scope(0)
    );
}

#[test]
fn any_words_give_an_answer_not_a_panic() {
    let words = [
        "route",
        "addr",
        "add",
        "del",
        "replace",
        "default",
        "via",
        "dev",
        "eth0",
        "table",
        "local",
        "10.0.0.0/8",
        "::/0",
        "2001:db8::1",
        "metric",
        "scope",
        "-4",
        "/",
        "",
    ];
    for a in words {
        for b in words {
            for c in words {
                for d in words {
                    let _ = parse_line(&format!("{a} {b} {c} {d}"), &resolve);
                }
            }
        }
    }
}

#[test]
fn route_lines_take_what_ip_route_add_takes() {
    let (_, route) = parse_route_line(
        "route add 10.84.0.0/16 via 192.0.2.1 dev eth0 onlink mtu lock 1400 advmss 1300 \
         rtt 10ms rttvar 5 hoplimit 33 initcwnd 10 initrwnd 20 features ecn congctl lock cubic \
         realm 5/6",
    );
    assert_eq!(names::route_flags(route.flags()), ["onlink"]);
    assert_eq!(route.realms(), Some((5 << 16) | 6));
    let metrics: Vec<(String, String, bool)> = route
        .metrics()
        .iter()
        .map(|metric| {
            (
                names::metric(metric.kind).into_owned(),
                metric.value.to_string(),
                metric.locked,
            )
        })
        .collect();
    let expect = [
        ("mtu", "1400", true),
        ("advmss", "1300", false),
        ("rtt", "80", false),
        ("rttvar", "5", false),
        ("hoplimit", "33", false),
        ("initcwnd", "10", false),
        ("initrwnd", "20", false),
        ("features", "1", false),
        ("congctl", "cubic", true),
    ]
    .map(|(name, value, locked)| (name.to_owned(), value.to_owned(), locked));
    assert_eq!(metrics, expect);

    let (_, route) =
        parse_route_line("route add 10.80.0.0/16 via inet6 fe80::1 dev eth0 pref low expires 60");
    assert_eq!(route.family(), Family::V4);
    assert_eq!(route.gateway(), Some("fe80::1".parse().unwrap()));
    assert_eq!((route.pref(), route.expires()), (Some(3), Some(60)));

    let (_, route) = parse_route_line(
        "route add 10.83.0.0/16 nexthop via 192.0.2.1 dev eth0 weight 1 \
         nexthop via inet6 fe80::2 dev veth1 weight 3 onlink realm 7",
    );
    let hops: Vec<String> = route
        .multipath()
        .iter()
        .map(|hop| {
            format!(
                "{:?} {} {} {} {:?}",
                hop.gateway,
                hop.ifindex,
                hop.weight(),
                hop.flags,
                hop.realms()
            )
        })
        .collect();
    assert_eq!(
        hops,
        ["Some(192.0.2.1) 2 1 0 None", "Some(fe80::2) 7 3 4 Some(7)"]
    );
    assert_eq!(route.oif(), None);

    let (_, route) =
        parse_route_line("route add 10.81.0.0/16 encap ip id 1 dst 1.2.3.4 ttl 9 key dev eth0");
    let encap = route.encap().expect("encap");
    let fields: Vec<String> = encap
        .fields()
        .iter()
        .map(|(name, value)| format!("{name} {value}"))
        .collect();
    assert_eq!(fields, ["id 1", "dst 1.2.3.4", "ttl 9", "flags 4"]);
    assert_eq!(route.oif(), Some(crate::Ifindex(2)));
}

#[test]
fn bad_route_values_name_the_word() {
    check_error(
        "route add 10.1.0.0/16 dev eth0 mtu lots",
        "bad mtu `lots`",
        Some("lots"),
    );
    check_error(
        "route add 10.1.0.0/16 nexthop via 192.0.2.1 dev eth0 weight 0",
        "bad weight `0`",
        Some("0"),
    );
    check_error(
        "route add 10.1.0.0/16 dev eth0 pref urgent",
        "bad pref `urgent`",
        Some("urgent"),
    );
    check_error(
        "route add 10.1.0.0/16 dev eth0 encap mpls 100",
        "bad encap `mpls`",
        Some("mpls"),
    );
    check_error(
        "route add 10.1.0.0/16 dev eth0 mtu lock",
        "`mtu` needs a value",
        Some("mtu"),
    );
}

/// Issue 15: `ip` refuses a line whose addresses are of two families; the batch used to send
/// it with the source silently dropped by the kernel's answer ("applied").
#[test]
fn family_mismatch_is_malformed() {
    check_error(
        "route add 10.200.0.24/32 dev eth0 src 2001:db8::1",
        "the source address's family differs from the prefix's",
        Some("2001:db8::1"),
    );
    check_error(
        "route add 2001:db8:5::/64 dev eth0 src 192.0.2.1",
        "the source address's family differs from the prefix's",
        Some("192.0.2.1"),
    );
    check_error(
        "route add 2001:db8:5::/64 via 192.0.2.1",
        "the gateway's family differs from the prefix's",
        Some("192.0.2.1"),
    );
    // With the family word, a gateway of the other family is an `RTA_VIA` next hop.
    let (_, route) = parse_route_line("route add 10.0.0.0/24 via inet6 fe80::1 dev eth0");
    assert_eq!(route.gateway(), Some("fe80::1".parse().unwrap()));
    check_error(
        "route add 10.0.0.0/24 via inet 2001:db8::1",
        "`via inet 2001:db8::1` names another family than its address",
        Some("inet 2001:db8::1"),
    );
    check_error(
        "route add 10.0.0.0/24 via inet6",
        "`via inet6` needs a value",
        Some("via inet6"),
    );
    // The family word is accepted when it matches, and `default` takes its family from the
    // source address as from the gateway.
    let (_, route) = parse_route_line("route add 10.0.0.0/24 via inet 192.0.2.1");
    assert_eq!(route.gateway(), Some("192.0.2.1".parse().unwrap()));
    let (_, route) = parse_route_line("route add default dev eth0 src 2001:db8::1");
    assert_eq!(route.family(), crate::route::Family::V6);
    assert_eq!(route.prefsrc(), Some("2001:db8::1".parse().unwrap()));
    let (_, route) = parse_route_line("route add 10.200.0.24/32 dev eth0 src 10.200.0.1");
    assert_eq!(route.prefsrc(), Some("10.200.0.1".parse().unwrap()));
}

/// `to` before the prefix, `tos`/`dsfield` (hexadecimal or a DS name, as `ip` reads them) and
/// IPv4 prefixes with their trailing zero parts left out, as `ip route` takes them.
#[test]
fn routes_take_to_tos_and_short_prefixes() {
    let route = |line: &str| match parse_line(line, &resolve) {
        Ok(Item::Route(_, route)) => route,
        other => panic!("{line}: {other:?}"),
    };
    let r = route("route add to 10.1/16 dev eth0 tos 10");
    assert_eq!(
        (r.dst(), r.dst_len(), r.tos()),
        ("10.1.0.0".parse().unwrap(), 16, 0x10)
    );
    let r = route("route add to unicast 10.2.3/24 dev eth0 dsfield AF11");
    assert_eq!(
        (r.dst(), r.dst_len(), r.tos()),
        ("10.2.3.0".parse().unwrap(), 24, 0x28)
    );
    let r = route("route add 0/0 via 192.0.2.1 tos 0xb8");
    assert_eq!(
        (r.dst(), r.dst_len(), r.tos()),
        ("0.0.0.0".parse().unwrap(), 0, 0xb8)
    );
    // A bare short address is a host prefix, as in `ip`.
    let r = route("route add 10 dev eth0");
    assert_eq!((r.dst(), r.dst_len()), ("10.0.0.0".parse().unwrap(), 32));
    for bad in ["10.", "10..1", "10.1.2.3.4", "256", "1x"] {
        assert!(
            parse_line(&format!("route add {bad} dev eth0"), &resolve).is_err(),
            "{bad}"
        );
    }
    check_error(
        "route add 10.0.0.0/24 dev eth0 tos 100",
        "bad tos `100`",
        Some("100"),
    );
}

/// `change`, `append` and `prepend`, where `ip` takes them.
#[test]
fn change_append_and_prepend() {
    let op = |line: &str| match parse_line(line, &resolve) {
        Ok(Item::Route(op, _) | Item::Address(op, _) | Item::Nexthop(op, _)) => op,
        other => panic!("{line}: {other:?}"),
    };
    assert_eq!(op("route change 10.0.0.0/24 dev eth0"), Op::Change);
    assert_eq!(op("route chg 10.0.0.0/24 dev eth0"), Op::Change);
    assert_eq!(op("route append 2001:db8::/64 dev eth0"), Op::Append);
    assert_eq!(op("route prepend 10.0.0.0/24 dev eth0"), Op::Prepend);
    assert_eq!(op("addr change 10.0.0.1/24 dev eth0"), Op::Change);
    for line in [
        "addr append 10.0.0.1/24 dev eth0",
        "addr prepend 10.0.0.1/24 dev eth0",
        "nexthop change id 1 dev eth0",
        "nexthop append id 1 dev eth0",
    ] {
        assert!(
            matches!(
                parse_line(line, &resolve),
                Err(ParseError::UnknownCommand(_))
            ),
            "{line}"
        );
    }
}

/// The destination may stand anywhere among the keywords, as `ip` reads it; a second one is
/// refused with its word.
#[test]
fn the_destination_may_come_after_other_keywords() {
    let expected = parse_route_line("route add 10.0.0.0/24 dev eth0 metric 5");
    for line in [
        "route add dev eth0 10.0.0.0/24 metric 5",
        "route add dev eth0 metric 5 to 10.0.0.0/24",
        "route add metric 5 dev eth0 to unicast 10.0.0.0/24",
    ] {
        assert_eq!(parse_route_line(line), expected, "{line}");
    }
    let (_, route) = parse_route_line("route add table 7 blackhole 10.9.0.0/16");
    assert_eq!(
        (route.kind(), route.table(), route.dst_len()),
        (RouteType::BLACKHOLE, Table(7), 16)
    );
    let (_, route) = parse_route_line("route del dev eth0 default");
    assert_eq!((route.dst_len(), route.oif()), (0, Some(crate::Ifindex(2))));
    for (line, word) in [
        ("route add 10.0.0.0/24 dev eth0 10.1.0.0/24", "10.1.0.0/24"),
        ("route add 10.0.0.0/24 dev eth0 to 10.1.0.0/24", "to"),
        ("route add 10.0.0.0/24 dev eth0 blackhole", "blackhole"),
        ("route add default dev eth0 default", "default"),
    ] {
        check_error(
            line,
            &format!("a second destination `{word}` (the route's prefix is given already)"),
            Some(word),
        );
    }
    check_error("route add dev eth0", "missing the route's prefix", None);
    check_error("route add dev eth0 to", "missing the route's prefix", None);
}

fn parse_rule_line(line: &str) -> (Op, crate::Rule) {
    match parse_line(line, &resolve) {
        Ok(Item::Rule(op, rule)) => (op, rule),
        other => panic!("{line}: {other:?}"),
    }
}

/// Rule lines get what `ip rule` sends: an added rule looks up `main` unless it names a table
/// or an action, a deleted one matches only what its line sets; the family is `-6`'s or the
/// addresses'.
#[test]
fn rule_lines_take_ip_rules_defaults_and_family() {
    use crate::rule::FR_ACT_TO_TBL;
    let (op, rule) = parse_rule_line("rule add from 10.1.0.0/16 lookup 100 pref 1000");
    assert_eq!(op, Op::Add);
    assert_eq!(rule.family(), Family::V4);
    assert_eq!(rule.src(), Some(("10.1.0.0".parse().unwrap(), 16)));
    assert_eq!(rule.dst(), None);
    assert_eq!((rule.table(), rule.priority()), (Table(100), 1000));
    assert_eq!(rule.action(), FR_ACT_TO_TBL);

    let (_, rule) = parse_rule_line("rule add fwmark 0x10/0xff");
    assert_eq!((rule.table(), rule.action()), (Table::MAIN, FR_ACT_TO_TBL));
    assert_eq!(rule.fwmark(), Some((0x10, Some(0xff))));
    assert_eq!(
        rule,
        rule_without_priority(&rule),
        "no priority: the kernel picks one"
    );

    let (op, rule) = parse_rule_line("rule del pref 1000");
    assert_eq!(op, Op::Delete);
    assert_eq!((rule.table(), rule.action()), (Table(0), 0), "wildcards");
    assert_eq!(rule.priority(), 1000);

    // `all` and a zero-length prefix select nothing, as the kernel holds them.
    let (_, all) = parse_rule_line("rule add from all to 0/0 table 5");
    assert_eq!((all.src(), all.dst()), (None, None));

    assert_eq!(
        parse_rule_line("-6 rule add fwmark 1 table 5").1.family(),
        Family::V6
    );
    assert_eq!(
        parse_rule_line("rule add from 2001:db8::/32 table 5")
            .1
            .family(),
        Family::V6
    );
    assert_eq!(
        parse_rule_line("rule -4 add to 10.9.0.0/16 table 5")
            .1
            .family(),
        Family::V4
    );
    check_error(
        "-4 rule add from 2001:db8::/32 table 5",
        "`2001:db8::/32` is not of the rule's address family",
        Some("2001:db8::/32"),
    );
    check_error(
        "rule add from 10.0.0.0/8 to 2001:db8::/32",
        "`2001:db8::/32` is not of the rule's address family",
        Some("2001:db8::/32"),
    );
}

fn rule_without_priority(rule: &crate::Rule) -> crate::Rule {
    let mut buf = Vec::new();
    rule.emit(&mut buf, crate::wire::RTM_NEWRULE, 0, 1);
    let attrs = crate::wire::Nlas::new(&buf[16 + 12..]);
    assert!(
        attrs.map(|(kind, _)| kind).all(|kind| kind != 6),
        "FRA_PRIORITY sent"
    );
    rule.clone()
}

/// Every selector and action `ip rule` takes, with its abbreviations, in its order.
#[test]
fn rule_lines_take_what_ip_rule_takes() {
    let (_, r) = parse_rule_line(
        "rule add not from 10.0.0.0/8 to 192.0.2.0/24 tos AF11 fwmark 7 iif veth1 oif eth0 \
         uidrange 100-200 ipproto tcp sport 1000-2000 dport 53 realms 1/2 proto static \
         prio 9 ta 7 sup_pl 0 suppress_ifgroup default",
    );
    assert!(r.is_inverted());
    assert_eq!(r.dst(), Some(("192.0.2.0".parse().unwrap(), 24)));
    assert_eq!(r.tos(), 0x28);
    assert_eq!(r.fwmark(), Some((7, None)));
    assert_eq!((r.iifname(), r.oifname()), (Some("veth1"), Some("eth0")));
    assert_eq!(r.uid_range(), Some((100, 200)));
    assert_eq!(r.ip_proto(), Some(6));
    assert_eq!((r.sport(), r.dport()), (Some((1000, 2000)), Some((53, 53))));
    assert_eq!(r.port_masks(), (None, None));
    assert_eq!(r.realms(), Some((1 << 16) | 2));
    assert_eq!(r.protocol(), Protocol::STATIC);
    assert_eq!((r.priority(), r.table()), (9, Table(7)));
    assert_eq!(
        (r.suppress_prefixlen(), r.suppress_ifgroup()),
        (Some(0), Some(0))
    );

    // `ip`'s abbreviations, checked in its order: `t` is tun_id, `o` order, `pro` protocol.
    let (_, r) = parse_rule_line("rule add t 0x10 o 010 pro 42 lookup main");
    assert_eq!(
        (r.tun_id(), r.priority()),
        (Some(16), 8),
        "hex and octal as ip reads them"
    );
    assert_eq!(r.protocol(), Protocol(42));
    let (_, r) = parse_rule_line("rule add dev veth1 d 0x10 r 3 su 4 ipproto 17");
    assert_eq!(
        (r.iifname(), r.tos(), r.realms()),
        (Some("veth1"), 0x10, Some(3))
    );
    assert_eq!((r.suppress_prefixlen(), r.ip_proto()), (Some(4), Some(17)));

    // Newer selectors (kernel 6.14 on): port masks, DSCP, flow label.
    let (_, r) =
        parse_rule_line("-6 rule add sport 80/0xff00 dport 0x35 dscp EF flowlabel 0x12345 table 5");
    assert_eq!(
        (r.sport(), r.port_masks()),
        (Some((80, 80)), (Some(0xff00), None))
    );
    assert_eq!(
        (r.dport(), r.dscp(), r.dscp_mask()),
        (Some((53, 53)), Some(46), None)
    );
    assert_eq!(
        r.flowlabel(),
        Some((0x12345, Some(0xfffff))),
        "ip sends the mask always"
    );
    let (_, r) = parse_rule_line("-6 rule add dscp 10/0x38 flowlabel 0x12/0xff sport 5/0xffff");
    assert_eq!((r.dscp(), r.dscp_mask()), (Some(10), Some(0x38)));
    assert_eq!(r.flowlabel(), Some((0x12, Some(0xff))));
    assert_eq!(r.port_masks(), (None, None), "a full mask is no mask");

    // Actions.
    for (line, action, table, goto) in [
        ("rule add blackhole pref 7", 6, 0, None),
        ("rule add type unreachable", 7, 0, None),
        ("rule add prohibit from 10.0.0.0/8", 8, 0, None),
        ("rule add goto 100 pref 50", 2, 0, Some(100)),
        ("rule add nop", 3, 0, None),
        ("rule add unicast lookup 9", 1, 9, None),
        ("rule add l3mdev pref 1000", 1, 0, None),
    ] {
        let (_, r) = parse_rule_line(line);
        assert_eq!(
            (r.action(), r.table(), r.goto()),
            (action, Table(table), goto),
            "{line}"
        );
    }
    assert!(parse_rule_line("rule add l3mdev pref 1000").1.l3mdev());
}

/// What a rule line cannot be names its word, as `ip` refuses it.
#[test]
fn bad_rule_lines_name_the_word() {
    check_error("rule add", "a rule needs a selector or an action", None);
    check_error("rule del", "a rule needs a selector or an action", None);
    check_error(
        "rule replace from 10.0.0.0/8",
        "unknown command `replace` (expected add, del, replace, change, append or prepend)",
        Some("replace"),
    );
    check_error("rule add from", "`from` needs a value", Some("from"));
    check_error(
        "rule add bogus 1",
        "unknown rule keyword `bogus`",
        Some("bogus"),
    );
    check_error(
        "rule add nat 10.0.0.1",
        "unknown rule keyword `nat`",
        Some("nat"),
    );
    check_error("rule add iif a/b", "bad iif `a/b`", Some("a/b"));
    check_error("rule add iif a\0b", "bad iif `a\0b`", Some("a\0b"));
    check_error(
        "rule add oif abcdefghijklmnop",
        "bad oif `abcdefghijklmnop`",
        Some("abcdefghijklmnop"),
    );
    check_error("rule add pref -1", "bad pref `-1`", Some("-1"));
    check_error(
        "rule add pref 0x100000000",
        "bad pref `0x100000000`",
        Some("0x100000000"),
    );
    check_error("rule add fwmark 1/x", "bad fwmark `1/x`", Some("1/x"));
    check_error("rule add uidrange 5", "bad uidrange `5`", Some("5"));
    check_error(
        "rule add ipproto nosuch",
        "bad ipproto `nosuch`",
        Some("nosuch"),
    );
    check_error("rule add sport 70000", "bad sport `70000`", Some("70000"));
    check_error("rule add dscp 64", "bad dscp `64`", Some("64"));
    check_error("rule add tos 100", "bad tos `100`", Some("100"));
    check_error(
        "rule add table nosuch",
        "unknown table `nosuch`",
        Some("nosuch"),
    );
    check_error(
        "rule add l3mdev table 5",
        "bad table (an l3mdev rule looks up its device's) `l3mdev`",
        Some("l3mdev"),
    );
    check_error("rule add goto", "`goto` needs a value", Some("goto"));
}

/// A rule from a line is sent as it was read: encoded and parsed back it is the same rule,
/// every field (a table past 255 in `FRA_TABLE` only, `tun_id` big-endian).
#[test]
fn rules_encode_and_parse_back_whole() {
    for line in [
        "rule add not from 10.0.0.0/8 to 192.0.2.0/24 tos 0x10 fwmark 7/0xf iif veth1 oif eth0 \
         uidrange 100-200 ipproto tcp sport 1000-2000 dport 53 realms 1/2 proto static \
         pref 9 table 70000 suppress_prefixlength 8 suppress_ifgroup 3 tun_id 0x1122334455",
        "-6 rule add from 2001:db8::/32 sport 80/0xff00 dscp 10/0x38 flowlabel 0x12/0xff nop",
        "rule add goto 100 pref 0",
        "rule del l3mdev",
    ] {
        let (_, rule) = parse_rule_line(line);
        let mut buf = Vec::new();
        rule.emit(&mut buf, crate::wire::RTM_NEWRULE, 0, 1);
        let again = crate::Rule::parse(&buf[16..]).unwrap().unwrap();
        assert_eq!(again, rule, "{line}");
    }
}

/// Comments, continuation lines and quoted words, as `ip -batch` reads them: a `#` anywhere
/// cuts the rest of its line, a line ending in `\` goes on with the next, a quoted word may
/// hold white space; only spaces, tabs, CR and LF separate words.
#[test]
fn comments_continuations_and_quotes_as_ip_reads_them() {
    let text = "route add 10.1.0.0/16 dev eth0 # the lab\n\
                route add 10.2.0.0/16 \\\n\
                dev eth0 metric 5\n\
                   # only a comment\n\
                route add 10.3.0.0/16 dev eth0 #\\\n\
                addr add 10.4.0.1/24 dev eth0 label 'eth0:a b'\n\
                route add 10.5.0.0/16 dev\\\n\
                eth0\n";
    let lines: Vec<Line<'_>> = parse(text, &resolve).collect();
    let numbers: Vec<usize> = lines.iter().map(|line| line.number).collect();
    assert_eq!(numbers, [1, 2, 5, 6, 7], "{lines:#?}");
    for line in &lines[..4] {
        assert!(line.item.is_ok(), "{line:?}");
    }
    assert_eq!(lines[1].text, "route add 10.2.0.0/16 dev eth0 metric 5");
    let Ok(Item::Route(_, route)) = &lines[1].item else {
        panic!("{:?}", lines[1]);
    };
    assert_eq!(route.priority(), 5);
    // A comment before the backslash cuts the newline too: no continuation.
    assert_eq!(lines[2].text, "route add 10.3.0.0/16 dev eth0 #\\");
    let Ok(Item::Address(_, addr)) = &lines[3].item else {
        panic!("{:?}", lines[3]);
    };
    assert_eq!(addr.label(), Some("eth0:a b"));
    // The backslash and newline go, and nothing is put between the lines: `deveth0` is one
    // word, which `ip` does not know either.
    assert_eq!(lines[4].text, "route add 10.5.0.0/16 deveth0");
    assert_eq!(
        lines[4].item,
        Err(ParseError::UnknownRouteKeyword("deveth0".to_owned()))
    );

    assert_eq!(
        split_words("a\u{a0}b\tc\r d \"e f\"g 'h'").unwrap(),
        ["a\u{a0}b", "c", "d", "e f", "g", "h"],
        "only ip's white space separates; a quote ends its word"
    );
    assert_eq!(split_words("  # x").unwrap(), Vec::<&str>::new());
    check_error(
        "addr add 10.4.0.1/24 dev eth0 label 'eth0:a",
        "unterminated quoted string `'eth0:a`",
        Some("'eth0:a"),
    );
    let last: Vec<Line<'_>> = parse("route add 10.6.0.0/16 \\\n", &resolve).collect();
    assert_eq!(last.len(), 1);
    assert_eq!(last[0].item, Err(ParseError::MissingContinuation));
}

/// Rules print as `ip rule` prints them: hex as C's `%#x` (a mark of 0 is `0`), a masked port,
/// DSCP or flow label in hex, DSCP and flow label last (iproute2 6.14 on).
#[test]
fn rules_print_as_ip_rule_prints_them() {
    let (_, rule) = parse_rule_line(
        "-6 rule add fwmark 0/0xff sport 0x1200/0xff00 dport 53 dscp 24/0x38 \
         flowlabel 0x12/0xff table 5 pref 3 proto static",
    );
    assert_eq!(
        rule.to_string(),
        "3:\tfrom all fwmark 0/0xff sport 0x1200/0xff00 dport 53 lookup 5 proto static \
         dscp 0x18/0x38 flowlabel 0x12/0xff"
    );
    let (_, rule) = parse_rule_line("rule add dscp EF flowlabel 0 table 5 pref 4");
    assert_eq!(
        rule.to_string(),
        "4:\tfrom all lookup 5 dscp EF flowlabel 0"
    );
}
