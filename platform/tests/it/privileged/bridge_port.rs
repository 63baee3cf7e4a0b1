//! A bridge port's STP state and port settings change with an `AF_BRIDGE` `RTM_NEWLINK`
//! only (no link message of the port's own): the cache applies those, so its port data
//! equals `ip -j -d link show` and a fresh dump at every step.

use std::time::{Duration, Instant};

use netmirror_platform::testing::NetNs;
use netmirror_platform::{AttrValue, Cache, Change, Event, Platform};
use serde_json::Value;

use super::support::{config, ip, netns_with_veth, settle};
use crate::support::bounded;

const LIMIT: Duration = Duration::from_secs(120);

/// The port's state as `ip -j -d link show` prints it.
fn ip_state(ns: &NetNs, port: &str) -> String {
    let text = ns
        .ip(&["-j", "-d", "link", "show", "dev", port])
        .expect("ip link");
    let links: Vec<Value> = serde_json::from_str(&text).expect("JSON");
    links[0]["linkinfo"]["info_slave_data"]["state"]
        .as_str()
        .expect("a port state")
        .to_owned()
}

/// The port's state as the cache holds it, named as ip names it.
fn cache_state(cache: &Cache, port: &str) -> String {
    let link = cache.link_by_name(port).expect("the port is held");
    let state = link
        .port_data()
        .iter()
        .find(|(name, _)| name == "state")
        .map(|(_, value)| value.clone());
    match state {
        Some(AttrValue::Uint(0)) => "disabled",
        Some(AttrValue::Uint(1)) => "listening",
        Some(AttrValue::Uint(2)) => "learning",
        Some(AttrValue::Uint(3)) => "forwarding",
        Some(AttrValue::Uint(4)) => "blocking",
        other => panic!("no port state: {other:?}"),
    }
    .to_owned()
}

/// The cache's port equals a fresh dump's, and its state equals ip's.
#[track_caller]
fn assert_port_matches(cache: &Cache, ns: &NetNs, port: &str, step: &str) {
    let platform = Platform::open(config(ns)).unwrap();
    let dumped = platform
        .links()
        .execute()
        .unwrap()
        .items
        .into_iter()
        .find(|link| link.name() == port)
        .expect("the port is dumped");
    let held = cache.link_by_name(port).expect("the port is held");
    assert_eq!(held.port_data(), dumped.port_data(), "after `{step}`");
    assert_eq!(
        cache_state(cache, port),
        ip_state(ns, port),
        "after `{step}`"
    );
}

/// The port data changes `events` report for `port`.
fn port_changes(events: &[Event], port: &str) -> usize {
    events
        .iter()
        .filter(|event| match event {
            Event::Link(Change::Replaced { old, new }) => {
                new.name() == port && old.port_data() != new.port_data()
            }
            _ => false,
        })
        .count()
}

#[test]
fn bridge_port_state_follows_the_kernel() {
    bounded(LIMIT, || {
        let ns = netns_with_veth();
        let mut cache = Cache::open(config(&ns)).unwrap();
        settle(&mut cache, Duration::from_secs(20));
        for line in [
            "link add nmxbr0 type bridge",
            "link set nmx1 master nmxbr0",
            "link set nmxbr0 up",
            "link set nmx0 up",
            "link set nmx1 up",
        ] {
            ip(&ns, line);
        }
        settle(&mut cache, Duration::from_secs(20));
        assert_port_matches(&cache, &ns, "nmx1", "enslaved");

        // Each state change is announced by an AF_BRIDGE message only.
        for (state, name) in [(1, "listening"), (2, "learning"), (3, "forwarding")] {
            let line = format!("link set dev nmx1 type bridge_slave state {state}");
            ip(&ns, &line);
            let events = settle(&mut cache, Duration::from_secs(20));
            assert_eq!(ip_state(&ns, "nmx1"), name);
            assert_port_matches(&cache, &ns, "nmx1", &line);
            assert!(
                port_changes(&events, "nmx1") >= 1,
                "after `{line}`: {events:#?}"
            );
        }
        let status = ns
            .command("bridge")
            .args(["link", "set", "dev", "nmx1", "cost", "7", "state", "1"])
            .status()
            .expect("bridge link set");
        assert!(status.success());
        let events = settle(&mut cache, Duration::from_secs(20));
        // Through the bridge's own request (`bridge link set`), the cost too.
        assert_port_matches(&cache, &ns, "nmx1", "bridge link set cost 7 state 1");
        assert_eq!(port_changes(&events, "nmx1"), 1, "{events:#?}");

        // STP on: the kernel walks the port through listening and learning to forwarding by
        // itself, announcing each state with AF_BRIDGE only.
        ip(
            &ns,
            "link set nmxbr0 type bridge forward_delay 200 stp_state 1",
        );
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut seen = Vec::new();
        loop {
            let mut events = Vec::new();
            cache
                .poll(Some(Duration::from_millis(100)), &mut events)
                .unwrap();
            let state = cache_state(&cache, "nmx1");
            if seen.last() != Some(&state) {
                seen.push(state.clone());
            }
            if state == "forwarding" {
                break;
            }
            assert!(Instant::now() < deadline, "no forwarding state: {seen:?}");
        }
        settle(&mut cache, Duration::from_secs(20));
        assert_port_matches(&cache, &ns, "nmx1", "stp_state 1");
        assert!(seen.iter().any(|state| state == "learning"), "{seen:?}");

        // A resync finds nothing to change on the port.
        let mut resync = Vec::new();
        cache.resync(&mut resync).unwrap();
        assert_eq!(port_changes(&resync, "nmx1"), 0, "{resync:#?}");
    });
}
