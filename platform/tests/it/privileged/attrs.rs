//! The attributes kept since issue 13 (RTA_VIA, weights, hop realms and flags, metrics with
//! locks, realms, pref, encap; every rule selector; altnames, a peer in another namespace,
//! bridge data; address flags) arrive whole through the event path: after the objects are
//! made under a running cache, the cache holds exactly what a fresh dump returns, object for
//! object (full equality), and a resync finds nothing to change.

use std::collections::HashSet;
use std::time::Duration;

use netmirror_platform::testing::{NetNs, Veth};
use netmirror_platform::{Cache, Event, Platform};

use super::support::{config, ip, netns_with_veth, settle};
use crate::support::bounded;

const LIMIT: Duration = Duration::from_secs(120);

#[test]
fn events_keep_every_attribute_a_dump_has() {
    bounded(LIMIT, || {
        let other = NetNs::new().unwrap();
        let ns = netns_with_veth();
        let mut cache = Cache::open(config(&ns)).unwrap();
        settle(&mut cache, Duration::from_secs(20));
        // A veth whose peer goes to another namespace, made while the cache runs.
        let peer = Veth::new("nmxp0", "nmxp1").peer_in(&other);
        ip(
            &ns,
            &format!(
                "link add {} type veth peer name {} netns {}",
                peer.name(),
                peer.peer(),
                other.name()
            ),
        );
        for line in [
            "link add nmxbr0 type bridge",
            "link set nmx1 master nmxbr0",
            "link set nmxbr0 up",
            "link property add dev nmx0 altname nmx-alt-name-0",
            "route add 10.80.0.0/16 via inet6 fe80::1 dev nmx0",
            "route add 10.81.0.0/16 encap ip id 1 dst 1.2.3.4 dev nmx0",
            "route add 10.83.0.0/16 nexthop via 192.0.2.2 dev nmx0 weight 1 nexthop via 192.0.2.3 dev nmx0 weight 3",
            "route add 10.84.0.0/16 via 192.0.2.2 dev nmx0 mtu lock 1400 advmss 1300 rtt 10 hoplimit 33 congctl lock cubic features ecn realm 5/6",
            "route add 10.86.0.0/16 via 10.99.0.1 dev nmx0 onlink",
            "route add 10.88.0.0/16 nexthop via 192.0.2.2 dev nmx0 realm 7 nexthop via inet6 fe80::2 dev nmx0 onlink",
            "route add 10.89.0.0/16 via 192.0.2.2 table 3000000000",
            "-6 route add 2001:db8:7::/64 nexthop via 2001:db8:1::2 dev nmx0 weight 2 nexthop via 2001:db8:1::3 dev nmx0 weight 5",
            "-6 route add 2001:db8:8::/64 via 2001:db8:1::2 dev nmx0 pref low mtu 1300",
            "rule add not fwmark 0xca6c table 51820 pref 100",
            "rule add uidrange 100-200 table 5 pref 101",
            "rule add ipproto tcp sport 80-90 dport 443 table 6 pref 102",
            "rule add l3mdev pref 104",
            "rule add iif nmx0 fwmark 0x10/0xff realms 3/4 table 7 pref 105",
            // The goto's target first (a goto resolved later is rule_flags.rs's case).
            "rule add from 10.2.0.0/16 table 60 pref 200",
            "rule add to 10.2.0.0/16 table 60 pref 200",
            "rule add tun_id 9 goto 200 pref 106",
            "addr add 10.9.0.2/24 dev nmxbr0 noprefixroute",
            "addr add 10.9.0.3/24 dev nmxbr0",
            "-6 addr add 2001:db8:9::1/64 dev nmxbr0 nodad home mngtmpaddr",
        ] {
            ip(&ns, line);
        }
        // A kernel option, not on every kernel (CONFIG_IPV6_SEG6_LWTUNNEL).
        let seg6 = "-6 route add 2001:db8:5::/64 encap seg6 mode encap segs 2001:db8::9 dev nmx0";
        ns.ip_where_supported(&seg6.split_whitespace().collect::<Vec<_>>())
            .unwrap();
        let mut events = settle(&mut cache, Duration::from_secs(20));
        // IPv6 duplicate address detection and the bridge's port states settle on their own.
        std::thread::sleep(Duration::from_secs(3));
        events.extend(settle(&mut cache, Duration::from_secs(20)));
        assert!(!events.is_empty());

        let platform = Platform::open(config(&ns)).unwrap();
        let dumped: HashSet<_> = platform
            .routes()
            .execute()
            .unwrap()
            .items
            .into_iter()
            .collect();
        let held: HashSet<_> = cache.routes().map(|route| (**route).clone()).collect();
        assert_eq!(
            held.symmetric_difference(&dumped).collect::<Vec<_>>(),
            Vec::<&netmirror_platform::Route>::new()
        );
        let dumped: HashSet<_> = platform
            .rules()
            .execute()
            .unwrap()
            .items
            .into_iter()
            .collect();
        let held: HashSet<_> = cache.rules().map(|rule| (**rule).clone()).collect();
        assert_eq!(held, dumped);
        assert_eq!(held.iter().filter(|rule| rule.priority() == 200).count(), 2);
        let dumped = platform.links().execute().unwrap().items;
        for link in &dumped {
            let held = cache.link(link.ifindex()).expect("the link is held");
            assert_eq!(**held, *link);
        }
        let nmx0 = cache.link_by_name("nmx0").unwrap();
        assert_eq!(nmx0.altnames(), ["nmx-alt-name-0"]);
        let p0 = cache.link_by_name("nmxp0").unwrap();
        assert!(
            p0.link_netnsid().is_some() && p0.parent().is_some(),
            "{p0:?}"
        );
        let dumped: HashSet<_> = platform
            .addresses()
            .execute()
            .unwrap()
            .items
            .into_iter()
            .collect();
        let held: HashSet<_> = cache.addresses().map(|addr| (**addr).clone()).collect();
        assert_eq!(held, dumped);

        // A resync re-reads everything: nothing differs, so no change is reported.
        let mut resync = Vec::new();
        cache.resync(&mut resync).unwrap();
        let changes: Vec<&Event> = resync
            .iter()
            .filter(|event| {
                matches!(
                    event,
                    Event::Link(_) | Event::Address(_) | Event::Route(_) | Event::Rule(_)
                )
            })
            .collect();
        assert!(changes.is_empty(), "{changes:#?}");
    });
}

/// The kernel changes a rule's `unresolved` and `detached` flags without an event (a goto's
/// target appears, a named interface appears). The flags are not part of the rule's identity,
/// so the rule's deletion, which reports the current flags, still removes the held rule.
#[test]
fn rules_whose_flags_changed_silently_are_still_removed() {
    bounded(LIMIT, || {
        let ns = netns_with_veth();
        let mut cache = Cache::open(config(&ns)).unwrap();
        settle(&mut cache, Duration::from_secs(20));
        ip(&ns, "rule add tun_id 9 goto 300 pref 106");
        ip(&ns, "rule add iif nmxlater0 table 53 pref 111");
        settle(&mut cache, Duration::from_secs(20));
        let held = |cache: &Cache, priority: u32| {
            cache
                .rules()
                .filter(|rule| rule.priority() == priority)
                .count()
        };
        assert_eq!((held(&cache, 106), held(&cache, 111)), (1, 1));
        // The goto's target and the interface appear: the kernel clears the flags silently.
        ip(&ns, "rule add from 10.2.0.0/16 table 60 pref 300");
        ip(&ns, "link add nmxlater0 type bridge");
        settle(&mut cache, Duration::from_secs(20));
        ip(&ns, "rule del pref 106");
        ip(&ns, "rule del pref 111");
        settle(&mut cache, Duration::from_secs(20));
        assert_eq!((held(&cache, 106), held(&cache, 111)), (0, 0));
    });
}
