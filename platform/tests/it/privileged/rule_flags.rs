//! The flags the kernel changes on a rule without an event: `unresolved` (a `goto` whose
//! target priority has no rule in the family) and `iif`/`oif` `detached` (no link of that
//! name). Step by step, the cache's rules equal `ip -j -d rule show` and a fresh dump, and
//! each silent change comes as a `changed` event.

use std::collections::{BTreeSet, HashSet};
use std::time::Duration;

use netmirror_platform::testing::NetNs;
use netmirror_platform::{Cache, Change, Event, Platform};
use serde_json::Value;

use super::support::{config, ip, netns_with_veth, settle};
use crate::support::bounded;

const LIMIT: Duration = Duration::from_secs(120);

/// (priority, unresolved, iif detached, oif detached) of every IPv4 rule as `ip -j -d` shows
/// them.
fn ip_flags(ns: &NetNs) -> BTreeSet<(u64, bool, bool, bool)> {
    let text = ns.ip(&["-j", "-d", "-4", "rule", "show"]).expect("ip rule");
    let rules: Vec<Value> = serde_json::from_str(&text).expect("JSON");
    rules
        .iter()
        .map(|rule| {
            (
                rule["priority"].as_u64().expect("a priority"),
                rule.get("unresolved").is_some(),
                rule.get("iif_detached").is_some(),
                rule.get("oif_detached").is_some(),
            )
        })
        .collect()
}

fn cache_flags(cache: &Cache) -> BTreeSet<(u64, bool, bool, bool)> {
    cache
        .rules()
        .filter(|rule| rule.family() == netmirror_platform::Family::V4)
        .map(|rule| {
            (
                u64::from(rule.priority()),
                rule.is_unresolved(),
                rule.iif_detached(),
                rule.oif_detached(),
            )
        })
        .collect()
}

/// The priorities of the rules `events` report as changed.
fn changed(events: &[Event]) -> BTreeSet<u32> {
    events
        .iter()
        .filter_map(|event| match event {
            Event::Rule(Change::Replaced { old, new }) => {
                assert_ne!(old, new, "a change where old equals new");
                Some(new.priority())
            }
            _ => None,
        })
        .collect()
}

#[test]
fn rule_flags_follow_the_kernel_step_by_step() {
    bounded(LIMIT, || {
        let ns = netns_with_veth();
        let mut cache = Cache::open(config(&ns)).unwrap();
        settle(&mut cache, Duration::from_secs(20));
        let platform = Platform::open(config(&ns)).unwrap();
        let step = |line: &str, cache: &mut Cache, expect_changed: &[u32]| {
            if !line.is_empty() {
                ip(&ns, line);
            }
            let events = settle(cache, Duration::from_secs(20));
            assert_eq!(ip_flags(&ns), cache_flags(cache), "after `{line}`");
            let dumped: HashSet<_> = platform
                .rules()
                .execute()
                .unwrap()
                .items
                .into_iter()
                .collect();
            let held: HashSet<_> = cache.rules().map(|rule| (**rule).clone()).collect();
            assert_eq!(held, dumped, "after `{line}`");
            assert_eq!(
                changed(&events),
                expect_changed.iter().copied().collect(),
                "after `{line}`: {events:#?}"
            );
        };
        step("rule add tun_id 9 goto 200 pref 100", &mut cache, &[]);
        step("rule add iif veth-x table 10 pref 110", &mut cache, &[]);
        step("rule add oif veth-x table 10 pref 111", &mut cache, &[]);
        step(
            "rule add iif veth-y oif nmx0 table 10 pref 112",
            &mut cache,
            &[],
        );
        // The goto's target appears, goes, and comes back; an IPv6 rule there changes nothing.
        step("-6 rule add table 20 pref 200", &mut cache, &[]);
        step(
            "rule add from 10.2.0.0/16 table 20 pref 200",
            &mut cache,
            &[100],
        );
        step("rule add to 10.2.0.0/16 table 20 pref 200", &mut cache, &[]);
        step(
            "rule del from 10.2.0.0/16 table 20 pref 200",
            &mut cache,
            &[],
        );
        step(
            "rule del to 10.2.0.0/16 table 20 pref 200",
            &mut cache,
            &[100],
        );
        step("rule add table 20 pref 200", &mut cache, &[100]);
        // The link the iif and oif rules name appears, is renamed, goes, and comes back.
        step(
            "link add veth-x type veth peer name veth-xp",
            &mut cache,
            &[110, 111],
        );
        step("link set veth-x name veth-y", &mut cache, &[110, 111, 112]);
        step("link del veth-y", &mut cache, &[112]);
        step(
            "link add veth-x type veth peer name veth-xp",
            &mut cache,
            &[110, 111],
        );
        // nmx0 goes: the oif of 112 is detached.
        step("link del nmx0", &mut cache, &[112]);
        // A resync finds nothing to change.
        let mut resync = Vec::new();
        cache.resync(&mut resync).unwrap();
        let rules: Vec<_> = resync
            .iter()
            .filter(|event| matches!(event, Event::Rule(_)))
            .collect();
        assert!(rules.is_empty(), "{rules:#?}");
    });
}
