//! The cache equals `ip -j` after its initial load and after a scripted series of changes.

use std::time::Duration;

use netmirror_platform::testing::NetNs;
use netmirror_platform::{Cache, Change, Event};

use super::support::{
    assert_cache_matches_ip, config, ip, ip_link_json, netns_with_veth, open_without_link_refresh,
    settle, wait_kernel_quiet,
};
use crate::support::bounded;

const LIMIT: Duration = Duration::from_secs(120);

#[test]
fn equals_ip_after_load_and_after_changes() {
    bounded(LIMIT, || {
        let ns = netns_with_veth();
        ip(&ns, "route add 198.51.100.0/24 via 192.0.2.2 table 100");
        ip(&ns, "route add 203.0.113.0/24 via 192.0.2.2 metric 50");
        ip(
            &ns,
            "route add 10.5.0.0/16 nexthop via 192.0.2.2 dev nmx0 nexthop via 192.0.2.3 dev nmx0",
        );
        ip(&ns, "route add blackhole 10.6.0.0/16 table 200");
        ip(
            &ns,
            "-6 route add 2001:db8:2::/64 via 2001:db8:1::2 table 100",
        );
        ip(&ns, "rule add from 198.51.100.0/24 table 100 prio 100");
        ip(&ns, "-6 rule add from 2001:db8:3::/64 table 100 prio 101");

        let mut cache = Cache::open(config(&ns)).unwrap();
        assert_cache_matches_ip(&mut cache, &ns);

        let script = [
            "route add 10.7.0.0/16 via 192.0.2.2",
            "route replace 10.7.0.0/16 via 192.0.2.3",
            "route add 10.8.0.0/16 via 192.0.2.2 table 100",
            "route del 198.51.100.0/24 table 100",
            "route append 10.9.0.0/16 via 192.0.2.2",
            "route append 10.9.0.0/16 via 192.0.2.3",
            "route del 10.9.0.0/16 via 192.0.2.2",
            "addr add 192.0.2.10/24 dev nmx0",
            "route add 10.10.0.0/16 via 192.0.2.2 src 192.0.2.10",
            "addr del 192.0.2.10/24 dev nmx0",
            // A preferred source on another interface: its removal flushes the route too.
            "addr add 198.18.0.1/24 dev nmx1",
            "route add 10.12.0.0/16 via 192.0.2.2 dev nmx0 src 198.18.0.1",
            "addr del 198.18.0.1/24 dev nmx1",
        ];
        for line in script {
            ip(&ns, line);
        }
        assert_cache_matches_ip(&mut cache, &ns);

        let script = [
            "-6 route add 2001:db8:4::/64 dev nmx0 metric 7",
            "-6 route replace 2001:db8:4::/64 via 2001:db8:1::3 metric 7",
            "-6 route del 2001:db8:2::/64 table 100",
            "-6 route add 2001:db8:5::/64 nexthop via 2001:db8:1::2 dev nmx0 nexthop via 2001:db8:1::3 dev nmx0",
            "-6 route append 2001:db8:5::/64 via 2001:db8:1::4 dev nmx0",
            "-6 route del 2001:db8:5::/64 via 2001:db8:1::3 dev nmx0",
            "-6 route add 2001:db8:6::/64 nexthop via 2001:db8:1::2 dev nmx0 nexthop via 2001:db8:1::3 dev nmx0",
            "-6 route del 2001:db8:6::/64 via 2001:db8:1::3 dev nmx0",
            "-6 route replace 2001:db8:5::/64 via 2001:db8:1::9 dev nmx0",
            "rule add fwmark 7 table 200 prio 200",
            "rule del prio 100",
            "link add nmxbr0 type bridge",
            "link set nmx1 master nmxbr0",
            "link set nmx1 nomaster",
            "link set nmx0 mtu 1400",
            "link set nmx0 down",
            "link set nmx0 up",
            "route add 10.11.0.0/16 via 192.0.2.2",
            "link del nmxbr0",
        ];
        for line in script {
            ip(&ns, line);
        }
        assert_cache_matches_ip(&mut cache, &ns);

        // Deleting the veth removes both ends, their addresses and routes.
        ip(&ns, "link del nmx0");
        assert_cache_matches_ip(&mut cache, &ns);
        assert_eq!(cache.stats().n_overruns, 0);
    });
}

#[test]
fn events_carry_old_and_new_objects() {
    bounded(LIMIT, || {
        let ns = netns_with_veth();
        let mut cache = Cache::open(config(&ns)).unwrap();
        settle(&mut cache, Duration::from_secs(10));

        ip(&ns, "route add 10.7.0.0/16 via 192.0.2.2 table 100");
        ip(&ns, "route replace 10.7.0.0/16 via 192.0.2.3 table 100");
        ip(&ns, "route del 10.7.0.0/16 table 100");
        let events = settle(&mut cache, Duration::from_secs(10));
        let routes: Vec<String> = events
            .iter()
            .filter_map(|event| match event {
                Event::Route(change) => Some(change),
                _ => None,
            })
            .filter(|change| {
                change
                    .old()
                    .or(change.new())
                    .is_some_and(|route| route.table() == netmirror_platform::Table(100))
            })
            .map(|change| match change {
                Change::Added(new) => format!("added via {:?}", new.gateway()),
                Change::Replaced { old, new } => {
                    format!(
                        "replaced via {:?} by via {:?}",
                        old.gateway(),
                        new.gateway()
                    )
                }
                Change::Removed(old) => format!("removed via {:?}", old.gateway()),
                other => format!("{other:?}"),
            })
            .collect();
        assert_eq!(
            routes,
            [
                "added via Some(192.0.2.2)",
                "replaced via Some(192.0.2.2) by via Some(192.0.2.3)",
                "removed via Some(192.0.2.3)",
            ]
        );
    });
}

/// The kernel announces no change to a link that is down made through its settings (group,
/// alias, kind data): without link refreshes the cache never sees one; with them, a refresh
/// reports it as a link event, and the cache then equals `ip` again.
#[test]
fn silent_changes_of_a_down_link_come_with_the_link_refresh() {
    bounded(LIMIT, || {
        let ns = netns_with_veth();
        ip(&ns, "link add nmbr0 type bridge");
        let quiet = config(&ns).with_link_refresh(None);
        let mut silent = Cache::open(quiet).unwrap();
        let every = Duration::from_millis(100);
        let mut refreshed = Cache::open(config(&ns).with_link_refresh(Some(every))).unwrap();
        settle(&mut silent, Duration::from_secs(10));
        settle(&mut refreshed, Duration::from_secs(10));
        ip(
            &ns,
            "link set nmbr0 group 7 alias spare type bridge hello_time 300",
        );
        let bridge = |cache: &Cache| {
            let link = cache.link_by_name("nmbr0").expect("the bridge");
            (
                link.group(),
                link.alias().map(str::to_owned),
                link.kind_data()
                    .iter()
                    .find(|(key, _)| key == "hello_time")
                    .map(|(_, value)| value.to_string()),
            )
        };
        // The kernel's silence: nothing comes in a second.
        let events = settle(&mut silent, Duration::from_secs(10));
        std::thread::sleep(Duration::from_secs(1));
        let mut more = Vec::new();
        silent
            .poll(Some(Duration::from_millis(200)), &mut more)
            .unwrap();
        // (Other events, the kernel's late IPv6 work on the veth, may come.)
        let about_bridge = |event: &Event| match event {
            Event::Link(change) => change
                .old()
                .or(change.new())
                .is_some_and(|link| link.name() == "nmbr0"),
            _ => false,
        };
        assert!(
            !events.iter().chain(&more).any(about_bridge),
            "{events:?} {more:?}"
        );
        assert_eq!(bridge(&silent), (0, None, Some("200".to_owned())));
        // The refresh sees it within a few periods.
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        let mut seen = Vec::new();
        while bridge(&refreshed).0 != 7 {
            assert!(std::time::Instant::now() < deadline, "no refresh: {seen:?}");
            refreshed.poll(Some(every), &mut seen).unwrap();
        }
        assert_eq!(
            bridge(&refreshed),
            (7, Some("spare".to_owned()), Some("300".to_owned()))
        );
        assert!(
            seen.iter()
                .any(|event| matches!(event, Event::Link(Change::Replaced { .. }))),
            "{seen:?}"
        );
        assert!(refreshed.stats().n_link_refreshes > 0);
        assert_cache_matches_ip(&mut refreshed, &ns);
    });
}

/// A sysctl write of `addr_gen_mode` changes a link's mode with no notification, up or down;
/// on a down link it makes the link-local address at once, unannounced too (the kernel
/// announces it when the link comes up). Without link refreshes the cache never sees either;
/// with them, a refresh reports the modes as link events and the address as an added one,
/// and the cache then equals `ip`.
#[test]
fn a_sysctl_address_generation_mode_comes_with_the_link_refresh() {
    bounded(LIMIT, || {
        let ns = netns_with_veth();
        ip(&ns, "link add nmbr1 type bridge");
        ip(&ns, "link set nmbr1 addrgenmode none");
        let mut silent = Cache::open(config(&ns).with_link_refresh(None)).unwrap();
        let every = Duration::from_millis(100);
        let mut refreshed = Cache::open(config(&ns).with_link_refresh(Some(every))).unwrap();
        settle(&mut silent, Duration::from_secs(10));
        settle(&mut refreshed, Duration::from_secs(10));
        let sysctl = |setting: &str| {
            let status = ns
                .command("sysctl")
                .args(["-qw", setting])
                .status()
                .unwrap();
            assert!(status.success(), "{setting}");
        };
        sysctl("net.ipv6.conf.nmx0.addr_gen_mode=3");
        sysctl("net.ipv6.conf.nmbr1.addr_gen_mode=0");
        let link_local = ns.ip(&["-6", "addr", "show", "dev", "nmbr1"]).unwrap();
        assert!(link_local.contains("fe80::"), "{link_local}");
        // What a cache holds: both links' modes and nmbr1's IPv6 addresses.
        let seen = |cache: &Cache| {
            let mode = |name: &str| {
                cache
                    .link_by_name(name)
                    .and_then(|link| link.setting("inet6_addr_gen_mode").map(|m| m.to_string()))
            };
            let ifindex = cache.link_by_name("nmbr1").unwrap().ifindex();
            let addrs = cache
                .addresses()
                .filter(|addr| addr.ifindex() == ifindex)
                .count();
            (mode("nmx0"), mode("nmbr1"), addrs)
        };
        let before = (Some("eui64".to_owned()), Some("none".to_owned()), 0);
        // The kernel's silence.
        let mut events = settle(&mut silent, Duration::from_secs(10));
        std::thread::sleep(Duration::from_secs(1));
        silent
            .poll(Some(Duration::from_millis(200)), &mut events)
            .unwrap();
        assert_eq!(seen(&silent), before, "{events:?}");
        // The refresh sees both within a few periods, and the address with them.
        let after = (Some("random".to_owned()), Some("eui64".to_owned()), 1);
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        let mut events = Vec::new();
        while seen(&refreshed) != after {
            assert!(
                std::time::Instant::now() < deadline,
                "{:?}: {events:?}",
                seen(&refreshed)
            );
            refreshed.poll(Some(every), &mut events).unwrap();
        }
        let added = events.iter().any(|event| {
            matches!(event, Event::Address(Change::Added(addr))
                if addr.to_string().contains("fe80::"))
        });
        assert!(added, "{events:?}");
        assert_cache_matches_ip(&mut refreshed, &ns);
    });
}

/// A link's new MTU rewrites the unlocked `mtu` metric of the IPv6 routes on it, with no
/// route notification (only the link's): the cache reads the link's routes again and reports
/// the change; a locked metric and IPv4's stay as they are.
#[test]
fn a_links_mtu_carries_its_ipv6_routes_mtu_with_it() {
    bounded(LIMIT, || {
        let ns = netns_with_veth();
        ip(
            &ns,
            "-6 route add 2001:db8:6::/64 via 2001:db8:1::2 dev nmx0 mtu 1400",
        );
        ip(
            &ns,
            "-6 route add 2001:db8:7::/64 via 2001:db8:1::2 dev nmx0 mtu lock 1400",
        );
        ip(
            &ns,
            "route add 10.75.0.0/16 via 192.0.2.2 dev nmx0 mtu 1400",
        );
        let mut cache = Cache::open(config(&ns)).unwrap();
        settle(&mut cache, Duration::from_secs(10));
        let mtu = |cache: &Cache, dst: &str| {
            let route = cache
                .routes()
                .find(|route| route.to_string().starts_with(dst))
                .expect(dst);
            route
                .metrics()
                .iter()
                .find(|metric| metric.kind == 2)
                .map(|metric| metric.value.to_string())
        };
        ip(&ns, "link set nmx0 mtu 1300");
        let events = settle(&mut cache, Duration::from_secs(10));
        assert_eq!(mtu(&cache, "2001:db8:6::/64").as_deref(), Some("1300"));
        assert_eq!(mtu(&cache, "2001:db8:7::/64").as_deref(), Some("1400"));
        assert_eq!(mtu(&cache, "10.75.0.0/16").as_deref(), Some("1400"));
        let replaced = events.iter().any(|event| {
            matches!(event, Event::Route(Change::Replaced { new, .. })
                if new.to_string().starts_with("2001:db8:6::/64"))
        });
        assert!(replaced, "{events:?}");
        assert_cache_matches_ip(&mut cache, &ns);
    });
}

/// A new valid lifetime of an IPv6 address becomes its prefix route's `expires` (none when
/// forever) with no route notification (only the address's): the cache reads the link's
/// prefix routes again and reports the change.
#[test]
fn an_ipv6_addresss_lifetime_carries_its_prefix_routes_expiry() {
    bounded(LIMIT, || {
        let ns = netns_with_veth();
        wait_kernel_quiet(&ns);
        let mut cache = open_without_link_refresh(&ns);
        let expires = |cache: &Cache| {
            cache
                .routes()
                .find(|route| route.to_string().starts_with("2001:db8:1::/64"))
                .expect("the prefix route")
                .expires()
        };
        assert_eq!(expires(&cache), None);
        ip(
            &ns,
            "-6 addr change 2001:db8:1::1/64 dev nmx0 valid_lft 600 preferred_lft 300",
        );
        let events = settle(&mut cache, Duration::from_secs(10));
        assert!(expires(&cache).is_some(), "{events:?}");
        let replaced = events.iter().any(|event| {
            matches!(event, Event::Route(Change::Replaced { new, .. })
                if new.to_string().starts_with("2001:db8:1::/64"))
        });
        assert!(replaced, "{events:?}");
        assert_cache_matches_ip(&mut cache, &ns);
        // Forever again: the route's expiry goes, as silently.
        ip(&ns, "-6 addr change 2001:db8:1::1/64 dev nmx0");
        let events = settle(&mut cache, Duration::from_secs(10));
        assert_eq!(expires(&cache), None, "{events:?}");
        assert_cache_matches_ip(&mut cache, &ns);
    });
}

/// A link's last IPv4 address going kills the next hops on it (a multipath route keeps them,
/// `dead`); its first IPv4 address brings them back, and the kernel says nothing of either:
/// the cache reads the link's routes again both times.
#[test]
fn a_links_first_ipv4_address_brings_its_dead_hops_back() {
    bounded(LIMIT, || {
        let ns = netns_with_veth();
        ip(
            &ns,
            "route add 10.70.0.0/16 nexthop via 192.0.2.2 dev nmx0 nexthop via 192.0.2.1 dev nmx1",
        );
        let mut cache = Cache::open(config(&ns)).unwrap();
        settle(&mut cache, Duration::from_secs(10));
        let dead = |cache: &Cache| -> Vec<bool> {
            let route = cache
                .routes()
                .find(|route| route.to_string().starts_with("10.70.0.0/16"))
                .expect("the multipath route");
            route
                .multipath()
                .iter()
                .map(|hop| u32::from(hop.flags) & netmirror_platform::RTNH_F_DEAD != 0)
                .collect()
        };
        assert_eq!(dead(&cache), [false, false]);
        ip(&ns, "addr del 192.0.2.1/24 dev nmx0");
        settle(&mut cache, Duration::from_secs(10));
        assert_eq!(dead(&cache), [true, false]);
        assert_cache_matches_ip(&mut cache, &ns);
        ip(&ns, "addr add 192.0.2.1/24 dev nmx0");
        let events = settle(&mut cache, Duration::from_secs(10));
        assert_eq!(dead(&cache), [false, false], "{events:?}");
        assert_cache_matches_ip(&mut cache, &ns);
    });
}

/// A veth end moved to another namespace leaves as deleted, and the end that stays gets a
/// parent in another namespace (`IFLA_LINK_NETNSID`) without a word: the cache reads the
/// links again at once, without waiting for the link refresh.
#[test]
fn a_peer_moved_away_gives_the_link_that_stays_a_parent_elsewhere() {
    bounded(LIMIT, || {
        let ns = netns_with_veth();
        let other = NetNs::new().unwrap();
        ip(&ns, "link set nmx1 down");
        let mut cache = open_without_link_refresh(&ns);
        let nmx0 = |cache: &Cache| {
            let link = cache.link_by_name("nmx0").expect("nmx0");
            (link.parent(), link.link_netnsid())
        };
        assert_eq!(nmx0(&cache).1, None);
        ip(&ns, &format!("link set nmx1 netns {}", other.name()));
        let events = settle(&mut cache, Duration::from_secs(10));
        assert!(cache.link_by_name("nmx1").is_none());
        assert_eq!(nmx0(&cache).1, Some(0), "{events:?}");
        assert_cache_matches_ip(&mut cache, &ns);
    });
}

/// The kernel reports what is left of a lifetime when it writes a message. An address and a
/// route held for a while still show what `ip` shows then (to within the second both count
/// in), not the count they were read with; a lifetime set again to the same count is a
/// change, with what is left counted from then.
#[test]
fn lifetimes_held_for_a_while_count_down_as_the_kernels_do() {
    bounded(LIMIT, || {
        let ns = netns_with_veth();
        ip(
            &ns,
            "addr add 192.0.2.50/24 dev nmx0 valid_lft 600 preferred_lft 300",
        );
        ip(
            &ns,
            "-6 route add 2001:db8:5::/64 via 2001:db8:1::2 dev nmx0 expires 600",
        );
        let mut cache = open_without_link_refresh(&ns);
        let ours = |cache: &Cache| {
            let addr = cache
                .addresses()
                .find(|addr| addr.local().to_string() == "192.0.2.50")
                .expect("the address")
                .lifetimes();
            let expires = cache
                .routes()
                .find(|route| route.to_string().starts_with("2001:db8:5::/64"))
                .expect("the route")
                .expires();
            (addr, expires)
        };
        let theirs = || {
            let json = |args: &[&str]| -> serde_json::Value {
                serde_json::from_str(&ns.ip(args).expect("ip -j")).expect("ip's JSON")
            };
            let addrs = json(&["-j", "-4", "addr", "show", "dev", "nmx0"]);
            let info = addrs[0]["addr_info"]
                .as_array()
                .and_then(|infos| infos.iter().find(|info| info["local"] == "192.0.2.50"))
                .cloned()
                .expect("ip's address");
            let routes = json(&["-j", "-6", "route", "show", "2001:db8:5::/64"]);
            let secs = |value: &serde_json::Value| value.as_i64().expect("seconds");
            (
                (
                    secs(&info["valid_life_time"]),
                    secs(&info["preferred_life_time"]),
                ),
                secs(&routes[0]["expires"]),
            )
        };
        let close = |ours: i64, theirs: i64| (ours - theirs).abs() <= 1;
        std::thread::sleep(Duration::from_millis(2500));
        let ((valid, preferred), expires) = ours(&cache);
        let ((ip_valid, ip_preferred), ip_expires) = theirs();
        let expires = i64::from(expires.expect("an expiry"));
        assert!(
            ip_valid <= 598 && ip_expires <= 598,
            "{ip_valid} {ip_expires}"
        );
        assert!(
            close(valid.into(), ip_valid)
                && close(preferred.into(), ip_preferred)
                && close(expires, ip_expires),
            "netmirror {valid}/{preferred}/{expires}, ip {ip_valid}/{ip_preferred}/{ip_expires}"
        );
        // The same lifetimes again: a new end, which the cache takes.
        ip(
            &ns,
            "addr change 192.0.2.50/24 dev nmx0 valid_lft 600 preferred_lft 300",
        );
        let events = settle(&mut cache, Duration::from_secs(10));
        let replaced = events.iter().any(|event| {
            matches!(event, Event::Address(Change::Replaced { new, .. })
                if new.local().to_string() == "192.0.2.50")
        });
        assert!(replaced, "{events:?}");
        let ((valid, preferred), _) = ours(&cache);
        let ((ip_valid, ip_preferred), _) = theirs();
        assert!(
            valid >= 599 && close(valid.into(), ip_valid) && close(preferred.into(), ip_preferred),
            "netmirror {valid}/{preferred}, ip {ip_valid}/{ip_preferred}"
        );
    });
}

/// A sysctl write of `ignore_routes_with_linkdown` makes the kernel report the next hops on
/// a link without a carrier as `dead` as well as `linkdown` (and no longer when written
/// back), on single and multipath routes; only a netconf notification tells. The cache reads
/// the routes of the links concerned again, for one link and for `all`.
#[test]
fn ignore_routes_with_linkdown_marks_the_hops_of_a_link_without_carrier_dead() {
    bounded(LIMIT, || {
        let ns = netns_with_veth();
        ip(&ns, "route add 10.9.0.0/16 via 192.0.2.2 dev nmx0");
        ip(
            &ns,
            "route add 10.11.0.0/16 nexthop via 192.0.2.2 dev nmx0 nexthop via 192.0.2.3 dev nmx0",
        );
        ip(
            &ns,
            "-6 route add 2001:db8:9::/64 via 2001:db8:1::2 dev nmx0",
        );
        ip(&ns, "link set nmx1 down");
        let mut cache = open_without_link_refresh(&ns);
        let dead = |cache: &Cache| -> Vec<String> {
            let mut dead: Vec<String> = cache
                .routes()
                .filter(|route| {
                    route.flags() & netmirror_platform::RTNH_F_DEAD != 0
                        || route
                            .multipath()
                            .iter()
                            .any(|hop| u32::from(hop.flags) & netmirror_platform::RTNH_F_DEAD != 0)
                })
                .filter_map(|route| route.to_string().split(' ').next().map(str::to_owned))
                .collect();
            dead.sort();
            dead
        };
        let sysctl = |setting: &str| {
            let status = ns
                .command("sysctl")
                .args(["-qw", setting])
                .status()
                .expect("sysctl");
            assert!(status.success(), "{setting}");
        };
        assert_cache_matches_ip(&mut cache, &ns);
        assert_eq!(dead(&cache), Vec::<String>::new());
        sysctl("net.ipv4.conf.nmx0.ignore_routes_with_linkdown=1");
        let events = settle(&mut cache, Duration::from_secs(10));
        let now_dead = dead(&cache);
        assert!(
            ["10.11.0.0/16", "10.9.0.0/16", "192.0.2.0/24"]
                .iter()
                .all(|route| now_dead.iter().any(|dead| dead == route))
                && now_dead.iter().all(|route| !route.contains(':')),
            "{now_dead:?} {events:?}"
        );
        assert_cache_matches_ip(&mut cache, &ns);
        sysctl("net.ipv6.conf.all.ignore_routes_with_linkdown=1");
        let events = settle(&mut cache, Duration::from_secs(10));
        assert!(
            dead(&cache).iter().any(|route| route == "2001:db8:9::/64"),
            "{events:?}"
        );
        assert_cache_matches_ip(&mut cache, &ns);
        sysctl("net.ipv6.conf.all.ignore_routes_with_linkdown=0");
        sysctl("net.ipv6.conf.nmx0.ignore_routes_with_linkdown=0");
        sysctl("net.ipv4.conf.nmx0.ignore_routes_with_linkdown=0");
        settle(&mut cache, Duration::from_secs(10));
        assert_eq!(dead(&cache), Vec::<String>::new());
        assert_cache_matches_ip(&mut cache, &ns);
    });
}

/// A link's `qdisc` is the kind of its root queueing discipline: `tc` replacing or deleting
/// it says nothing on the link (only the traffic control group hears of it), and the cache,
/// its link refresh off, follows it.
#[test]
fn a_root_qdisc_replaced_by_tc_is_the_links_qdisc() {
    bounded(LIMIT, || {
        let ns = netns_with_veth();
        let mut cache = open_without_link_refresh(&ns);
        let tc = |args: &[&str]| {
            let status = ns.command("tc").args(args).status().expect("tc");
            assert!(status.success(), "tc {args:?}");
        };
        let qdiscs = |cache: &Cache| -> (String, String) {
            let ours = cache
                .links()
                .find(|link| link.name() == "nmx0")
                .and_then(|link| link.setting("qdisc").map(ToString::to_string))
                .unwrap_or_default();
            let theirs = ip_link_json(&ns, "nmx0");
            (
                ours,
                theirs["qdisc"].as_str().unwrap_or_default().to_owned(),
            )
        };
        assert_eq!(qdiscs(&cache), ("noqueue".into(), "noqueue".into()));
        tc(&["qdisc", "replace", "dev", "nmx0", "root", "pfifo"]);
        let events = settle(&mut cache, Duration::from_secs(10));
        assert_eq!(
            qdiscs(&cache),
            ("pfifo".into(), "pfifo".into()),
            "{events:?}"
        );
        tc(&["qdisc", "del", "dev", "nmx0", "root"]);
        let events = settle(&mut cache, Duration::from_secs(10));
        assert_eq!(
            qdiscs(&cache),
            ("noqueue".into(), "noqueue".into()),
            "{events:?}"
        );
    });
}

/// Counts the kernel keeps on a link change without a word on it where its flags stay:
/// a macvlan going up or down adds to or takes from its lower link's promiscuity (already
/// promiscuous here), a port joining or leaving a bridge changes its own promiscuity and
/// allmulti counts and the bridge's TSO limits. The cache, its link refresh off, reads the
/// links again each time.
#[test]
fn promiscuity_counts_follow_macvlans_and_bridge_ports() {
    bounded(LIMIT, || {
        let ns = netns_with_veth();
        for line in [
            "link set nmx0 promisc on",
            "link set nmx1 promisc on",
            "link add mv0 link nmx0 type macvlan mode bridge",
            "link add br9 type bridge",
        ] {
            ip(&ns, line);
        }
        let mut cache = open_without_link_refresh(&ns);
        const KEYS: [&str; 3] = ["promiscuity", "allmulti", "tso_max_size"];
        let counts = |cache: &Cache| -> (Vec<String>, Vec<String>) {
            let mut ours: Vec<String> = cache
                .links()
                .flat_map(|link| {
                    KEYS.iter().map(move |key| {
                        let value = match *key {
                            "promiscuity" => link.promiscuity().to_string(),
                            _ => link
                                .setting(key)
                                .map(ToString::to_string)
                                .unwrap_or_default(),
                        };
                        format!("{} {key} {value}", link.name())
                    })
                })
                .collect();
            let json: serde_json::Value =
                serde_json::from_str(&ns.ip(&["-j", "-d", "link", "show"]).expect("ip"))
                    .expect("ip's JSON");
            let mut theirs: Vec<String> = json
                .as_array()
                .into_iter()
                .flatten()
                .flat_map(|link| {
                    KEYS.iter().map(move |key| {
                        let value = link.get(*key).map(ToString::to_string);
                        format!(
                            "{} {key} {}",
                            link["ifname"].as_str().unwrap_or_default(),
                            value.unwrap_or_default()
                        )
                    })
                })
                .collect();
            ours.sort();
            theirs.sort();
            (ours, theirs)
        };
        let (ours, theirs) = counts(&cache);
        assert_eq!(ours, theirs);
        for step in [
            "link set mv0 up",
            "link set mv0 down",
            "link set nmx1 master br9",
            "link set nmx1 nomaster",
        ] {
            ip(&ns, step);
            let events = settle(&mut cache, Duration::from_secs(10));
            let (ours, theirs) = counts(&cache);
            assert_eq!(ours, theirs, "after {step}: {events:?}");
        }
    });
}

/// Link changes the kernel makes after announcing the link: a new veth pair's first end
/// (announced before its peer exists, without a parent) gets its peer, and a link's MTU
/// going below what IPv6 needs, and back, takes and gives its IPv6 state (the address
/// generation mode). The cache, its
/// link refresh off, has both as `ip` does.
#[test]
fn a_veth_ends_peer_and_ipv6_back_above_1280_come_after_the_link() {
    bounded(LIMIT, || {
        let ns = netns_with_veth();
        let mut cache = open_without_link_refresh(&ns);
        let ip_link = |name: &str| ip_link_json(&ns, name);
        let ours = |cache: &Cache, name: &str| {
            let link = cache
                .links()
                .find(|link| link.name() == name)
                .cloned()
                .expect("the link");
            (
                link.parent().map(u32::from),
                link.setting("inet6_addr_gen_mode").map(ToString::to_string),
            )
        };
        ip(&ns, "link add nmw0 type veth peer name nmw1");
        settle(&mut cache, Duration::from_secs(10));
        for (name, peer) in [("nmw0", "nmw1"), ("nmw1", "nmw0")] {
            assert_eq!(ip_link(name)["link"], peer);
            let theirs = ip_link(peer)["ifindex"]
                .as_u64()
                .and_then(|i| u32::try_from(i).ok());
            assert_eq!(ours(&cache, name).0, theirs, "{name}");
        }
        ip(&ns, "link set nmx0 mtu 1200");
        settle(&mut cache, Duration::from_secs(10));
        assert_eq!(ours(&cache, "nmx0").1, None);
        ip(&ns, "link set nmx0 mtu 1500");
        settle(&mut cache, Duration::from_secs(10));
        assert_eq!(
            ours(&cache, "nmx0").1.as_deref(),
            ip_link("nmx0")["inet6_addr_gen_mode"].as_str()
        );
    });
}

/// A resync that reads a link's rename, removal or arrival before its event (asked for while
/// the link events wait behind route events): the kernel attached and detached the rules that
/// name the link, and removed the gone link's routes, without a word, and the event that comes
/// after changes nothing. The cache never points at the missing link, and its rules read as
/// `ip -j rule` shows them. The gone link's own events still queued (it went down before it
/// went) are older than the resync and bring nothing back.
#[test]
fn link_changes_a_resync_reads_before_their_events_are_not_undone_by_them() {
    bounded(LIMIT, || {
        let ns = netns_with_veth();
        ip(&ns, "link add nmr0 type bridge");
        ip(&ns, "link add nmr1 type bridge");
        ip(&ns, "link set nmr1 up");
        ip(&ns, "addr add 198.51.100.1/24 dev nmr1");
        ip(&ns, "route add 10.70.0.0/16 dev nmr1 table 100");
        ip(&ns, "rule add iif nmr0 table 100 prio 300");
        ip(&ns, "rule add oif nmq0 table 101 prio 301");
        ip(&ns, "rule add iif nmr1 table 102 prio 302");
        ip(&ns, "rule add oif nmr2 table 103 prio 303");
        let mut cache = open_without_link_refresh(&ns);
        assert!(cache.routes().any(|route| route.table().get() == 100));
        let gone = cache.link_by_name("nmr1").expect("nmr1").ifindex();

        // Route events, then the link changes, all queued when the resync reads the kernel.
        queue_routes(&ns, "10.80", 150);
        ip(&ns, "link set nmr0 name nmq0");
        ip(&ns, "link del nmr1");
        ip(&ns, "link add nmr2 type bridge");
        let mut events = Vec::new();
        cache.resync(&mut events).unwrap();
        let names = |cache: &Cache| {
            let mut names: Vec<String> = cache
                .links()
                .map(|link| link.name().to_owned())
                .filter(|name| name.starts_with("nmr") || name.starts_with("nmq"))
                .collect();
            names.sort();
            names
        };
        assert_eq!(names(&cache), ["nmq0", "nmr2"]);
        let missing: Vec<String> = cache
            .routes()
            .filter(|route| route.oif().is_some_and(|oif| cache.link(oif).is_none()))
            .map(|route| format!("{route:?}"))
            .collect();
        assert!(missing.is_empty(), "routes on a missing link: {missing:#?}");

        let later = settle(&mut cache, Duration::from_secs(10));
        let about_gone: Vec<&Event> = later
            .iter()
            .filter(|event| match event {
                Event::Link(change) => {
                    change.old().or(change.new()).map(|link| link.ifindex()) == Some(gone)
                }
                Event::Address(Change::Added(addr)) => addr.ifindex() == gone,
                Event::Route(Change::Added(route)) => route.oif() == Some(gone),
                _ => false,
            })
            .collect();
        assert!(
            about_gone.is_empty(),
            "stale events brought nmr1 back: {about_gone:#?}"
        );
        let ours: Vec<String> = cache
            .rules()
            .filter(|rule| (300..400).contains(&rule.priority()))
            .map(|rule| {
                let side = |name: Option<&str>, detached: bool| match name {
                    Some(name) if detached => format!("{name} detached"),
                    Some(name) => name.to_owned(),
                    None => "-".to_owned(),
                };
                format!(
                    "{} iif {} oif {}",
                    rule.priority(),
                    side(rule.iifname(), rule.iif_detached()),
                    side(rule.oifname(), rule.oif_detached())
                )
            })
            .collect();
        let json: serde_json::Value =
            serde_json::from_str(&ns.ip(&["-j", "rule", "show"]).unwrap()).unwrap();
        let theirs: Vec<String> = json
            .as_array()
            .unwrap()
            .iter()
            .filter(|rule| (300..400).contains(&rule["priority"].as_u64().unwrap_or(0)))
            .map(|rule| {
                let side = |key: &str| match rule[key].as_str() {
                    Some(name) if rule.get(format!("{key}_detached")).is_some() => {
                        format!("{name} detached")
                    }
                    Some(name) => name.to_owned(),
                    None => "-".to_owned(),
                };
                format!(
                    "{} iif {} oif {}",
                    rule["priority"],
                    side("iif"),
                    side("oif")
                )
            })
            .collect();
        assert_eq!(ours, theirs);
        assert_eq!(
            theirs,
            [
                "300 iif nmr0 detached oif -",
                "301 iif - oif nmq0",
                "302 iif nmr1 detached oif -",
                "303 iif - oif nmr2",
            ]
        );
        assert_cache_matches_ip(&mut cache, &ns);
    });
}

/// A backlog of route events, then the link that the routes' gateway is reached by loses its
/// carrier (its peer goes down): the kernel flags every route on it `linkdown` without a word.
/// The link refresh comes due meanwhile. Were it to read the link before the backlog is
/// applied, the route additions applied after it would set the routes back without the flag,
/// and nothing would set them right (the link's own event then changes nothing). The cache
/// reads again only once the socket is drained, and ends equal to `ip`.
#[test]
fn routes_flagged_silently_behind_a_backlog_are_read_after_it() {
    bounded(LIMIT, || {
        let ns = netns_with_veth();
        let every = Duration::from_millis(50);
        let mut cache = Cache::open(config(&ns).with_link_refresh(Some(every))).unwrap();
        settle(&mut cache, Duration::from_secs(10));
        queue_routes(&ns, "10.81", 200);
        ip(&ns, "link set nmx0 down");
        // Polls that apply the backlog a budget at a time, each with the refresh due.
        let mut events = Vec::new();
        for _ in 0..3 {
            std::thread::sleep(every * 2);
            cache
                .poll_status(Some(Duration::ZERO), &mut events)
                .unwrap();
        }
        settle(&mut cache, Duration::from_secs(10));
        let flagged = |lines: &str| lines.matches("linkdown").count();
        let theirs = ns.ip(&["route", "show"]).unwrap();
        assert!(flagged(&theirs) >= 200, "{theirs}");
        assert_cache_matches_ip(&mut cache, &ns);
    });
}

/// Adds `n` routes `PREFIX.i.0/24 via 192.0.2.2` in one `ip -batch`: one event datagram each,
/// more than a poll applies (its budget is 64).
fn queue_routes(ns: &NetNs, prefix: &str, n: u32) {
    let batch = tempfile::NamedTempFile::new().unwrap();
    let lines: String = (0..n)
        .map(|i| format!("route add {prefix}.{i}.0/24 via 192.0.2.2\n"))
        .collect();
    std::fs::write(batch.path(), lines).unwrap();
    let path = batch.path().to_str().unwrap();
    ip(ns, &format!("-batch {path}"));
}
