//! Tests of the names `ip` prints, in both directions.

use super::*;

#[test]
fn tables_and_protocols_both_ways() {
    assert_eq!(table(254), "main");
    assert_eq!(table(100), "100");
    assert_eq!(parse_table("local"), Some(255));
    assert_eq!(parse_table("100"), Some(100));
    assert_eq!(parse_table("nope"), None);
    assert_eq!(protocol(2), "kernel");
    assert_eq!(parse_protocol("static"), Some(4));
    assert_eq!(parse_protocol("250"), Some(250));
    assert_eq!(route_type(1), "unicast");
    assert_eq!(parse_route_type("blackhole"), Some(6));
}

#[test]
fn link_flags_in_ip_order() {
    // lo: LOOPBACK|UP|LOWER_UP|RUNNING.
    assert_eq!(
        link_flags(0x8 | 0x1 | 0x10000 | 0x40),
        ["LOOPBACK", "UP", "LOWER_UP"]
    );
    // eth0: BROADCAST|MULTICAST|UP|LOWER_UP|RUNNING.
    assert_eq!(
        link_flags(0x2 | 0x1000 | 0x1 | 0x10000 | 0x40),
        ["BROADCAST", "MULTICAST", "UP", "LOWER_UP"]
    );
    // Up without carrier.
    assert_eq!(
        link_flags(0x2 | 0x1000 | 0x1),
        ["NO-CARRIER", "BROADCAST", "MULTICAST", "UP"]
    );
    assert_eq!(link_flags(0x8000_0000), ["0x80000000"]);
}

#[test]
fn prefixes_as_ip_prints_them() {
    let v4: IpAddr = "10.0.0.0".parse().unwrap();
    assert_eq!(route_prefix(v4, 0), "default");
    assert_eq!(route_prefix(v4, 24), "10.0.0.0/24");
    assert_eq!(route_prefix("10.0.0.1".parse().unwrap(), 32), "10.0.0.1");
    assert_eq!(route_prefix("fe80::".parse().unwrap(), 64), "fe80::/64");
    assert_eq!(rule_prefix(None), "all");
    assert_eq!(rule_prefix(Some((v4, 8))), "10.0.0.0/8");
}

#[test]
fn states_and_addresses() {
    assert_eq!(operstate(6), "UP");
    assert_eq!(operstate(0), "UNKNOWN");
    assert_eq!(operstate(42), "42");
    assert_eq!(link_type(772), "loopback");
    assert_eq!(
        hw_address(&[2, 0xfc, 0, 0, 0, 1]).as_deref(),
        Some("02:fc:00:00:00:01")
    );
    assert_eq!(hw_address(&[]), None);
    assert_eq!(scope(253), "link");
}
