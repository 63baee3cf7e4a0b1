//! Helpers for the privileged tests: a namespace with a veth pair, and polling a cache until
//! it matches `ip`.

use std::time::{Duration, Instant};

use netmirror_platform::testing::{NetNs, Veth};
use netmirror_platform::{Cache, Config, Event, Netns};

use super::snapshot::Snapshot;

/// A namespace with the veth pair `nmx0`/`nmx1` (192.0.2.1/24 and 2001:db8:1::1/64 on
/// `nmx0`, 192.0.2.2/24 on `nmx1`).
pub(crate) fn netns_with_veth() -> NetNs {
    NetNs::builder()
        .veth(
            Veth::new("nmx0", "nmx1")
                .address("192.0.2.1/24")
                .address("2001:db8:1::1/64")
                .peer_address("192.0.2.2/24"),
        )
        .start()
        .unwrap()
}

/// The platform configuration for `ns`, by path.
pub(crate) fn config(ns: &NetNs) -> Config {
    Config::new().with_netns(Netns::path(ns.path()))
}

/// Runs `ip -n <ns> <args>` and panics with its error output on failure.
#[track_caller]
pub(crate) fn ip(ns: &NetNs, args: &str) {
    let args: Vec<&str> = args.split_whitespace().collect();
    if let Err(err) = ns.ip(&args) {
        panic!("ip {args:?}: {err}");
    }
}

/// Waits (up to 20 s) until the kernel's own asynchronous work in `ns` is done: no IPv6 address
/// is still tentative (duplicate address detection) and the routes of every table read the same
/// three times in a row, 300 ms apart (IPv6 link-local addresses and their local routes come
/// late). Tests that compare one-off dumps with `ip` call it first.
pub(crate) fn wait_kernel_quiet(ns: &NetNs) {
    let deadline = Instant::now() + Duration::from_secs(20);
    let read = || {
        let addrs = ns.ip(&["-6", "addr", "show"]).unwrap_or_default();
        let routes = ns
            .ip(&["route", "show", "table", "all"])
            .unwrap_or_default()
            + &ns
                .ip(&["-6", "route", "show", "table", "all"])
                .unwrap_or_default();
        (addrs.contains("tentative"), routes)
    };
    let mut same = 0;
    let mut last = read();
    while Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(300));
        let now = read();
        same = if !now.0 && now == last { same + 1 } else { 0 };
        if same >= 2 {
            return;
        }
        last = now;
    }
    panic!("the kernel did not settle in 20 s: {last:?}");
}

/// Polls `cache` until a poll of 100 ms brings nothing and no resync is pending; returns the
/// events seen.
pub(crate) fn settle(cache: &mut Cache, limit: Duration) -> Vec<Event> {
    let deadline = Instant::now() + limit;
    let mut events = Vec::new();
    loop {
        let n = cache
            .poll(Some(Duration::from_millis(100)), &mut events)
            .unwrap();
        if n == 0 && !cache.resync_pending() {
            return events;
        }
        assert!(Instant::now() < deadline, "the cache did not settle");
    }
}

/// Asserts that the cache equals what `ip -j` shows, giving the kernel's asynchronous work
/// (IPv6 link-local addresses, ...) a few rounds to finish.
#[track_caller]
pub(crate) fn assert_cache_matches_ip(cache: &mut Cache, ns: &NetNs) {
    let mut last = None;
    for _ in 0..10 {
        settle(cache, Duration::from_secs(20));
        let expected = Snapshot::of_ip(ns);
        let actual = Snapshot::of_cache(cache);
        if actual == expected {
            return;
        }
        last = Some((actual, expected));
        std::thread::sleep(Duration::from_millis(300));
    }
    if let Some((actual, expected)) = last {
        pretty_assert(&actual, &expected);
    }
}

#[track_caller]
fn pretty_assert(actual: &Snapshot, expected: &Snapshot) {
    let diff = |a: &[String], e: &[String]| {
        let missing: Vec<_> = e.iter().filter(|x| !a.contains(x)).collect();
        let extra: Vec<_> = a.iter().filter(|x| !e.contains(x)).collect();
        format!("missing in cache: {missing:#?}\nonly in cache: {extra:#?}")
    };
    panic!(
        "cache differs from ip -j\nlinks: {}\naddresses: {}\nroutes: {}\nrules: {}",
        diff(&actual.links, &expected.links),
        diff(&actual.addresses, &expected.addresses),
        diff(&actual.routes, &expected.routes),
        diff(&actual.rules, &expected.rules),
    );
}
