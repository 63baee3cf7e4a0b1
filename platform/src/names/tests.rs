//! Tests of the names `ip` prints, in both directions, and of reading `rt_tables` files.

use std::fs;

use proptest::prelude::Just;

use super::*;

#[test]
fn builtin_tables_and_protocols_both_ways() {
    let tables = RouteTables::builtin();
    assert_eq!(tables.name(254), "main");
    assert_eq!(tables.name(100), "100");
    assert_eq!(tables.id("local"), Some(255));
    assert_eq!(tables.id("100"), Some(100));
    assert_eq!(tables.id("0x64"), Some(100));
    assert_eq!(tables.id("nope"), None);
    assert_eq!(protocol(2), "kernel");
    assert_eq!(parse_protocol("static"), Some(4));
    assert_eq!(parse_protocol("250"), Some(250));
    assert_eq!(parse_protocol("nope"), None);
    assert_eq!(route_type(1), "unicast");
    assert_eq!(parse_route_type("blackhole"), Some(6));
    assert_eq!(parse_scope("universe"), Some(0));
    assert_eq!(parse_scope("link"), Some(253));
    assert_eq!(parse_scope("7"), Some(7));
    assert_eq!(parse_scope("far"), None);
    assert_eq!(rule_action(1), "lookup");
}

#[test]
fn system_tables_know_the_builtin_names() {
    // Whatever the machine's files say, `main` and `local` keep their numbers.
    assert_eq!(parse_table("main"), Some(254));
    assert_eq!(table_name(255), "local");
}

#[test]
fn rt_tables_text_names_and_renames() {
    let tables = RouteTables::builtin().with_text(
        "#\n# reserved values\n#\n255\tlocal\n254 main\n  100   isp1  # trailing comment\n\
         0x65 isp2\nbogus line\n102\n#103 commented\n200 isp1\n",
    );
    assert_eq!(tables.name(100), "isp1");
    assert_eq!(tables.name(101), "isp2");
    assert_eq!(
        tables.name(102),
        "102",
        "a number without a name is no definition"
    );
    assert_eq!(tables.name(103), "103");
    assert_eq!(tables.id("isp1"), Some(200), "the later definition wins");
    assert_eq!(tables.id("isp2"), Some(101));
    assert_eq!(tables.id("main"), Some(254));
    assert_eq!(tables.id("bogus"), None);
}

#[test]
fn rt_tables_files_are_read_like_iproute2() {
    let root = tempfile::Builder::new()
        .prefix("netmirror-test-rt-tables")
        .tempdir()
        .unwrap();
    let etc = root.path().join("etc");
    let usr = root.path().join("usr");
    fs::create_dir_all(etc.join("rt_tables.d")).unwrap();
    fs::create_dir_all(usr.join("rt_tables.d")).unwrap();
    // The administrator's rt_tables hides the distribution's.
    fs::write(etc.join("rt_tables"), "100 admin\n").unwrap();
    fs::write(usr.join("rt_tables"), "101 distro\n").unwrap();
    // Every rt_tables.d/*.conf counts, the administrator's last.
    fs::write(
        usr.join("rt_tables.d/vendor.conf"),
        "110 vendor\n120 shared\n",
    )
    .unwrap();
    fs::write(etc.join("rt_tables.d/b.conf"), "121 shared\n").unwrap();
    fs::write(etc.join("rt_tables.d/a.conf"), "130 vpn\n").unwrap();
    fs::write(etc.join("rt_tables.d/ignored.txt"), "140 ignored\n").unwrap();

    let tables = RouteTables::builtin().load_from(&[&etc, &usr]);
    assert_eq!(tables.name(100), "admin");
    assert_eq!(tables.id("distro"), None);
    assert_eq!(tables.name(110), "vendor");
    assert_eq!(tables.id("shared"), Some(121));
    assert_eq!(tables.id("vpn"), Some(130));
    assert_eq!(tables.id("ignored"), None);
    assert_eq!(tables.name(254), "main");

    // Without the administrator's file, the distribution's is read.
    fs::remove_file(etc.join("rt_tables")).unwrap();
    let tables = RouteTables::builtin().load_from(&[&etc, &usr]);
    assert_eq!(tables.id("distro"), Some(101));
    assert_eq!(tables.id("admin"), None);

    // Nothing there at all: the built-in names.
    let tables = RouteTables::builtin().load_from(&[&root.path().join("none")]);
    assert_eq!(tables, RouteTables::builtin());
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
fn ipv4_prefixes_written_by_hand_match_display() {
    // Every octet value in every position, with every prefix length.
    for value in 0..=255u8 {
        for octets in [
            [value, 0, 0, 0],
            [1, value, 2, 3],
            [9, 99, value, 199],
            [0, 0, 0, value],
        ] {
            let addr = IpAddr::from(octets);
            for len in 1..=33u8 {
                let expected = if len == 32 {
                    addr.to_string()
                } else {
                    format!("{addr}/{len}")
                };
                assert_eq!(route_prefix(addr, len), expected);
            }
        }
    }
}

/// An address as `inet_ntop` (and so `ip`) writes it: as `Display` does, but for an
/// IPv4-compatible IPv6 address (`::1.2.3.4`), which `Display` writes in hex.
fn ntop(addr: IpAddr) -> String {
    match addr {
        IpAddr::V6(v6) if matches!(v6.segments(), [0, 0, 0, 0, 0, 0, seventh, _] if seventh != 0) =>
        {
            let [.., a, b, c, d] = v6.octets();
            format!("::{}", std::net::Ipv4Addr::new(a, b, c, d))
        }
        addr => addr.to_string(),
    }
}

#[test]
fn ipv6_prefixes_written_by_hand_match_display() {
    // Every pattern of zero and non-zero groups (so every run of zeros to compress), with
    // group values of one to four hex digits, the v4-mapped form Display keeps, and lengths.
    let values = [0x1u16, 0x20, 0xabc, 0xffff, 0xdb8];
    for pattern in 0..=u8::MAX {
        let groups: [u16; 8] = std::array::from_fn(|at| {
            if pattern & (1 << at) == 0 {
                0
            } else {
                values[(at + usize::from(pattern)) % values.len()]
            }
        });
        let addr = IpAddr::from(groups);
        for len in [1u8, 64, 127, 128, 129] {
            let expected = if len == 128 {
                ntop(addr)
            } else {
                format!("{}/{len}", ntop(addr))
            };
            assert_eq!(route_prefix(addr, len), expected, "{groups:x?}");
        }
    }
    for text in [
        "::ffff:192.0.2.1",
        "::1",
        "::",
        "1::",
        "fe80::1:0:0:1",
        "2001:db8:0:1:1:1:1:1",
    ] {
        let addr: IpAddr = text.parse().unwrap();
        assert_eq!(route_prefix(addr, 128), addr.to_string());
    }
    // What `ip -6 route show` printed for these destinations (iproute2 6.1, glibc 2.36).
    for (given, ip) in [
        ("::102:304", "::1.2.3.4"),
        ("::1:0", "::0.1.0.0"),
        ("::ffff:0:0", "::ffff:0.0.0.0"),
        ("::ffff:1:0:0", "::ffff:1:0:0"),
        ("::1:0:0:0", "::1:0:0:0"),
        ("::1", "::1"),
        ("::2", "::2"),
        ("::ffff", "::ffff"),
        ("::1:ffff:102:304", "::1:ffff:102:304"),
        ("0:0:0:0:0:1:0:1", "::1:0:1"),
        ("1::102:304", "1::102:304"),
        ("64:ff9b::102:304", "64:ff9b::102:304"),
    ] {
        let addr: IpAddr = given.parse().unwrap();
        assert_eq!(route_prefix(addr, 128), ip, "{given}");
    }
}

#[test]
fn addresses_gateways_and_addresses_in_text_lines_as_ip_prints_them() {
    for text in [
        "::102:304",
        "::1:0",
        "::ffff:1.2.3.4",
        "::1",
        "::",
        "2001:db8::1",
        "0.0.0.0",
        "192.0.2.1",
    ] {
        let addr: IpAddr = text.parse().unwrap();
        assert_eq!(address(addr), ntop(addr), "{text}");
    }
    // The text lines (`-d`, the monitor's text, multipath hops) write gateways and
    // addresses the same way.
    let compatible: IpAddr = "::1.2.3.4".parse().unwrap();
    let route = crate::Route::new("2001:db8::".parse().unwrap(), 64).with_gateway(compatible);
    let line = crate::text::route_lines(&route, &crate::text::default_name, false).join(" ");
    assert!(line.contains("via ::1.2.3.4"), "{line}");
    let addr = crate::Address::new(crate::Ifindex(1), compatible, 96);
    let line = crate::text::address_text(&addr);
    assert!(line.starts_with("inet6 ::1.2.3.4/96 "), "{line}");
}

proptest::proptest! {
    /// Any address and length, groups biased towards zero so that runs of zeros of every
    /// length and place come up, written as `Display` writes it.
    #[test]
    fn any_prefix_matches_display(
        groups in proptest::array::uniform8(proptest::prop_oneof![
            Just(0u16), Just(0xffff), 1u16..0x10, 0u16..=u16::MAX,
        ]),
        v4 in proptest::prelude::any::<[u8; 4]>(),
        len in 0u8..=129,
    ) {
        for addr in [IpAddr::from(groups), IpAddr::from(v4)] {
            let full = if addr.is_ipv4() { 32 } else { 128 };
            let expected = match len {
                0 => "default".to_owned(),
                len if len == full => ntop(addr),
                len => format!("{}/{len}", ntop(addr)),
            };
            proptest::prop_assert_eq!(route_prefix(addr, len), expected);
        }
    }
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

#[test]
fn rt_protos_files_are_read_like_iproute2() {
    let root = tempfile::Builder::new()
        .prefix("netmirror-test-rt-protos")
        .tempdir()
        .unwrap();
    let etc = root.path().join("etc");
    let usr = root.path().join("usr");
    std::fs::create_dir_all(etc.join("rt_protos.d")).unwrap();
    std::fs::create_dir_all(usr.join("rt_protos.d")).unwrap();
    std::fs::write(etc.join("rt_protos"), "77 zooproto\n4 mystatic\n").unwrap();
    // Ignored: the administrator's rt_protos wins over the distribution's.
    std::fs::write(usr.join("rt_protos"), "77 distproto\n").unwrap();
    std::fs::write(usr.join("rt_protos.d/a.conf"), "78 fromusr\n").unwrap();
    std::fs::write(etc.join("rt_protos.d/b.conf"), "0x4f hexproto\n").unwrap();
    std::fs::write(etc.join("rt_protos.d/c.txt"), "80 notconf\n").unwrap();
    let protos = RouteProtocols::builtin().load_from(&[&etc, &usr]);
    assert_eq!(protos.name(77), "zooproto");
    assert_eq!(protos.name(4), "mystatic");
    assert_eq!(protos.name(78), "fromusr");
    assert_eq!(protos.name(79), "hexproto");
    assert_eq!(protos.name(80), "80");
    assert_eq!(protos.name(186), "bgp");
    assert_eq!(protos.id("zooproto"), Some(77));
    assert_eq!(protos.id("kernel"), Some(2));
    assert_eq!(protos.id("300"), None);
    let text = RouteProtocols::builtin().with_text("250 mine\n");
    assert_eq!(
        (text.name(250), text.id("mine")),
        ("mine".into(), Some(250))
    );
}

#[test]
fn flags_metrics_and_realms_as_ip_names_them() {
    // `ip route show realms`: which halves count.
    for (text, mask) in [
        ("6", 0xffff),
        ("5/", 0xffff_0000),
        ("5/6", u32::MAX),
        ("5/0", u32::MAX),
        ("0", 0xffff),
        ("0/6", u32::MAX),
        ("0x50006", u32::MAX),
    ] {
        let realms = parse_realms(text).unwrap();
        assert_eq!(realms_mask(text, realms), mask, "{text}");
    }
    assert_eq!(
        route_flags(0x4 | 0x1 | 0x10),
        ["dead", "onlink", "linkdown"]
    );
    assert_eq!(route_flags(0x4000 | 0x80_0000), ["rt_offload", "0x800000"]);
    assert_eq!(address_flags(0x80, false), Vec::<String>::new());
    assert_eq!(address_flags(0x01, true), ["temporary", "dynamic"]);
    assert_eq!(address_flags(0x01 | 0x80, false), ["secondary"]);
    assert_eq!(
        address_flags(0x80 | 0x200 | 0x800 | 0x1000, false),
        ["noprefixroute", "stable-privacy", "0x1000"]
    );
    assert_eq!(
        (metric(2), metric(16), metric(99)),
        ("mtu".into(), "congctl".into(), "metric99".into())
    );
    assert_eq!(parse_metric("initrwnd"), Some(14));
    assert_eq!(
        (pref(0), pref(1), pref(3)),
        ("medium".into(), "high".into(), "low".into())
    );
    assert_eq!(parse_pref("low"), Some(3));
    assert_eq!(
        (realms(7), realms((5 << 16) | 6)),
        ("7".to_owned(), "5/6".to_owned())
    );
    assert_eq!(parse_realms("5/6"), Some((5 << 16) | 6));
    // A realm past 255 is read, as `ip` reads it, as the raw value of both.
    assert_eq!(parse_realms("70000"), Some(70000));
    assert_eq!(parse_realms("1/70000"), None);
    assert_eq!(parse_realms("5/"), Some(5 << 16));
    assert_eq!(
        (encap_type(2), encap_type(5), encap_type(77)),
        ("ip".into(), "seg6".into(), "77".into())
    );
}

/// DS fields: iproute2's shipped names, a site's own `rt_dsfield` over them (a later
/// definition renames a number), `0x%02x` without a name, numbers read as hexadecimal; a
/// DSCP named by its DS field.
#[test]
fn ds_field_names_as_ip_reads_and_prints_them() {
    let builtin = DsFields::builtin();
    assert_eq!(
        (builtin.name(0x28), builtin.name(0xb8)),
        ("AF11".into(), "EF".into())
    );
    assert_eq!(
        (builtin.name(0x08), builtin.name(0x04)),
        ("0x08".into(), "0x04".into())
    );
    assert_eq!(
        (builtin.id("AF11"), builtin.id("10"), builtin.id("0x1c")),
        (Some(0x28), Some(0x10), Some(0x1c))
    );
    assert_eq!((builtin.id("100"), builtin.id("lowdelay")), (None, None));
    let site = DsFields::builtin().with_text("0x10 lowdelay\n# a comment\n0x28 gold\n");
    assert_eq!(
        (site.name(0x10), site.name(0x28)),
        ("lowdelay".into(), "gold".into())
    );
    assert_eq!(
        (site.id("lowdelay"), site.id("gold"), site.id("AF11")),
        (Some(0x10), Some(0x28), Some(0x28))
    );
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("rt_dsfield"), "0x08 minimize-cost\n").unwrap();
    // A `.d` folder is not read for rt_dsfield (ip reads none).
    std::fs::create_dir(dir.path().join("rt_dsfield.d")).unwrap();
    std::fs::write(dir.path().join("rt_dsfield.d/x.conf"), "0x0c ignored\n").unwrap();
    let loaded = DsFields::builtin().load_from(&[dir.path()]);
    assert_eq!(
        (loaded.name(0x08), loaded.name(0x0c)),
        ("minimize-cost".into(), "0x0c".into())
    );
    assert_eq!(
        (dscp(46), dscp(10), dscp(0)),
        ("EF".into(), "AF11".into(), "0".into())
    );
}

/// Realm names: 0 is `unknown` until a file names it, a site's `rt_realms` names others; only
/// realms up to 255 have names.
#[test]
fn realm_names_as_ip_reads_and_prints_them() {
    let builtin = RouteRealms::builtin();
    assert_eq!(
        (builtin.name(0), builtin.name(7)),
        ("unknown".into(), "7".into())
    );
    let site = RouteRealms::builtin().with_text("0 cosmos\n5 isp1\n300 big\n");
    assert_eq!(
        (site.name(0), site.name(5), site.name(300)),
        ("cosmos".into(), "isp1".into(), "300".into())
    );
    assert_eq!(
        (
            site.id("isp1"),
            site.id("0x5"),
            site.id("256"),
            site.id("big")
        ),
        (Some(5), Some(5), None, None)
    );
}

/// Device group names: 0 is `default`; the administrator's `group` file hides the
/// distribution's and there is no `group.d`; a number without a name prints as `ip` prints
/// it (a C `int`), and reads as `ip` reads it (`strtol` with base 0, not negative).
#[test]
fn device_group_names_as_ip_reads_and_prints_them() {
    let builtin = DeviceGroups::builtin();
    assert_eq!(
        (builtin.name(0), builtin.name(7), builtin.name(u32::MAX)),
        ("default".into(), "7".into(), "-1".into())
    );
    assert_eq!(
        (
            builtin.id("default"),
            builtin.id("7"),
            builtin.id("0x10"),
            builtin.id("010"),
            builtin.id("2147483647"),
            builtin.id("2147483648"),
            builtin.id("-1"),
            builtin.id("spare"),
        ),
        (
            Some(0),
            Some(7),
            Some(16),
            Some(8),
            Some(i32::MAX as u32),
            None,
            None,
            None
        )
    );

    let root = tempfile::Builder::new()
        .prefix("netmirror-test-group")
        .tempdir()
        .unwrap();
    let (etc, usr) = (root.path().join("etc"), root.path().join("usr"));
    fs::create_dir_all(etc.join("group.d")).unwrap();
    fs::create_dir_all(&usr).unwrap();
    fs::write(
        etc.join("group"),
        "# groups\n0 default\n7 spare\n9 uplinks\n7 idle\n",
    )
    .unwrap();
    fs::write(usr.join("group"), "5 distro\n").unwrap();
    fs::write(etc.join("group.d/more.conf"), "11 more\n").unwrap();
    let groups = DeviceGroups::builtin().load_from(&[&etc, &usr]);
    assert_eq!(
        (
            groups.name(7),
            groups.name(9),
            groups.name(5),
            groups.name(11)
        ),
        ("idle".into(), "uplinks".into(), "5".into(), "11".into())
    );
    assert_eq!(
        (
            groups.id("uplinks"),
            groups.id("spare"),
            groups.id("distro")
        ),
        (Some(9), Some(7), None)
    );
    fs::remove_file(etc.join("group")).unwrap();
    let groups = DeviceGroups::builtin().load_from(&[&etc, &usr]);
    assert_eq!(
        (groups.name(5), groups.name(0)),
        ("distro".into(), "default".into())
    );
}

#[test]
fn users_and_groups_are_read_as_the_files_give_them() {
    let entries = id_entries(
        "root:x:0:0:root:/root:/bin/bash\n\
         daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n\
         broken line\n\
         nobody:x:notanumber:\n\
         again:x:1:1::/:/bin/false\n",
    );
    assert_eq!(
        entries,
        [
            (0, "root".to_owned()),
            (1, "daemon".to_owned()),
            (1, "again".to_owned()),
        ]
    );
    let leaked: &'static [(u32, String)] = Box::leak(entries.into_boxed_slice());
    assert_eq!(id_name(leaked, 1), Some("daemon"), "the first with the id");
    assert_eq!(id_name(leaked, 7), None);
}

#[test]
fn prefixes_compare_by_their_leading_bits() {
    let addr = |text: &str| text.parse::<std::net::IpAddr>().unwrap();
    assert!(same_bits(addr("10.1.5.0"), addr("10.1.0.0"), 16));
    assert!(!same_bits(addr("10.1.5.0"), addr("10.1.0.0"), 24));
    assert!(same_bits(addr("10.1.5.0"), addr("192.0.2.1"), 0));
    assert!(same_bits(addr("10.1.5.129"), addr("10.1.5.128"), 25));
    assert!(same_bits(addr("2001:db8:5::1"), addr("2001:db8::"), 32));
    assert!(!same_bits(addr("2001:db8:5::1"), addr("2001:db8::"), 48));
    assert!(same_bits(addr("::1"), addr("::1"), 128));
    // Families never match.
    assert!(!same_bits(addr("0.0.0.0"), addr("::"), 0));
}
