//! Only the kernel may speak: a netlink message sent to the cache's socket by a user-space
//! socket is dropped and counted, never applied.

use std::time::Duration;

use netlink_sys::{Socket, SocketAddr, protocols::NETLINK_ROUTE};
use netmirror_platform::{Cache, Change, Event};

use super::support::{config, ip, netns_with_veth, settle};
use crate::support::bounded;

const LIMIT: Duration = Duration::from_secs(60);

/// An `RTM_NEWROUTE` for 10.66.0.0/16 in the main table, as the kernel would send it.
fn forged_route() -> Vec<u8> {
    let mut msg = Vec::new();
    msg.extend_from_slice(&36u32.to_ne_bytes()); // nlmsg_len: 16 + 12 + 8
    msg.extend_from_slice(&24u16.to_ne_bytes()); // RTM_NEWROUTE
    msg.extend_from_slice(&0u16.to_ne_bytes()); // flags
    msg.extend_from_slice(&0u32.to_ne_bytes()); // seq
    msg.extend_from_slice(&0u32.to_ne_bytes()); // port id claims the kernel
    msg.extend_from_slice(&[2, 16, 0, 0, 254, 3, 0, 1]); // AF_INET /16, main, boot, unicast
    msg.extend_from_slice(&0u32.to_ne_bytes()); // rtm_flags
    msg.extend_from_slice(&8u16.to_ne_bytes()); // RTA_DST
    msg.extend_from_slice(&1u16.to_ne_bytes());
    msg.extend_from_slice(&[10, 66, 0, 0]);
    msg
}

#[test]
fn a_message_from_user_space_is_ignored() {
    bounded(LIMIT, || {
        let ns = netns_with_veth();
        let mut cache = Cache::open(config(&ns)).unwrap();
        settle(&mut cache, Duration::from_secs(10));
        let before = cache.routes().count();

        let port = cache.port();
        ns.run(move || {
            let mut sock = Socket::new(NETLINK_ROUTE).unwrap();
            sock.bind_auto().unwrap();
            sock.send_to(&forged_route(), &SocketAddr::new(port, 0), 0)
                .unwrap();
        })
        .unwrap();

        let events = settle(&mut cache, Duration::from_secs(10));
        assert!(events.is_empty(), "{events:?}");
        assert_eq!(cache.stats().n_foreign, 1);
        assert_eq!(cache.routes().count(), before);
        assert!(
            !cache
                .routes()
                .any(|route| route.dst() == "10.66.0.0".parse::<std::net::IpAddr>().unwrap())
        );
    });
}

/// The event socket reads several datagrams a call: forged ones among the kernel's are each
/// dropped and counted, and every kernel event of the same reads is applied, in order.
#[test]
fn forged_messages_among_kernel_events_are_dropped_one_by_one() {
    bounded(LIMIT, || {
        let ns = netns_with_veth();
        let mut cache = Cache::open(config(&ns)).unwrap();
        settle(&mut cache, Duration::from_secs(10));
        let port = cache.port();
        let sock = ns
            .run(|| {
                let mut sock = Socket::new(NETLINK_ROUTE).unwrap();
                sock.bind_auto().unwrap();
                sock
            })
            .unwrap();
        const N: u8 = 40;
        for i in 1..=N {
            sock.send_to(&forged_route(), &SocketAddr::new(port, 0), 0)
                .unwrap();
            ip(&ns, &format!("route add 198.51.100.{i}/32 via 192.0.2.2"));
        }

        let events = settle(&mut cache, Duration::from_secs(10));
        let added: Vec<String> = events
            .iter()
            .filter_map(|event| match event {
                Event::Route(Change::Added(route)) => Some(route.dst().to_string()),
                _ => None,
            })
            .filter(|dst| dst.starts_with("198.51.100."))
            .collect();
        let expected: Vec<String> = (1..=N).map(|i| format!("198.51.100.{i}")).collect();
        assert_eq!(added, expected, "{events:?}");
        assert_eq!(cache.stats().n_foreign, u64::from(N));
        assert!(
            !cache
                .routes()
                .any(|route| route.dst() == "10.66.0.0".parse::<std::net::IpAddr>().unwrap())
        );
    });
}
