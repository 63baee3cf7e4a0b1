//! Helpers for the privileged tests: a namespace with a veth pair, and polling a cache until
//! it matches `ip`.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use netmirror_platform::testing::{NetNs, Veth};
use netmirror_platform::{Cache, Config, Event, Netns, Nexthop, Route};

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

/// A cache of `ns` with the link refresh off (so that only events and the re-reads they ask
/// for can bring a change), settled after its load.
pub(crate) fn open_without_link_refresh(ns: &NetNs) -> Cache {
    let mut cache = Cache::open(config(ns).with_link_refresh(None)).unwrap();
    settle(&mut cache, Duration::from_secs(10));
    cache
}

/// Runs `ip -n <ns> <args>` and panics with its error output on failure.
#[track_caller]
pub(crate) fn ip(ns: &NetNs, args: &str) {
    let args: Vec<&str> = args.split_whitespace().collect();
    if let Err(err) = ns.ip(&args) {
        panic!("ip {args:?}: {err}");
    }
}

/// `ip -j -d link show NAME` in `ns`: the link's JSON object.
pub(crate) fn ip_link_json(ns: &NetNs, name: &str) -> serde_json::Value {
    let out = ns.ip(&["-j", "-d", "link", "show", name]).expect("ip link");
    let json: serde_json::Value = serde_json::from_str(&out).expect("ip's JSON");
    json[0].clone()
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
        // Every attribute of every route, as `ip -d route` prints it.
        let expected_details = details_of_ip(ns);
        let actual_details = details_of(
            cache.routes().map(|route| &**route),
            |id| cache.nexthop(id).map(|nh| &**nh),
            cache,
        );
        if actual == expected && actual_details == expected_details {
            return;
        }
        last = Some((actual, expected, actual_details, expected_details));
        std::thread::sleep(Duration::from_millis(300));
    }
    if let Some((actual, expected, actual_details, expected_details)) = last {
        if actual != expected {
            pretty_assert(&actual, &expected);
        }
        let missing: Vec<_> = expected_details
            .iter()
            .filter(|x| !actual_details.contains(x))
            .collect();
        let extra: Vec<_> = actual_details
            .iter()
            .filter(|x| !expected_details.contains(x))
            .collect();
        panic!(
            "cache differs from ip -d route\nmissing in cache: {missing:#?}\nonly in cache: \
             {extra:#?}"
        );
    }
}

/// `routes` as `ip -d route show table all` prints them, one string per route (its nexthop
/// object and its hops on their own tab-indented lines), sorted.
pub(crate) fn details_of<'a>(
    routes: impl Iterator<Item = &'a Route>,
    nexthop: impl Fn(u32) -> Option<&'a Nexthop>,
    cache: &Cache,
) -> Vec<String> {
    let names: HashMap<u32, String> = cache
        .links()
        .map(|link| (u32::from(link.ifindex()), link.name().to_owned()))
        .collect();
    let name = |ifindex: u32| {
        names
            .get(&ifindex)
            .cloned()
            .unwrap_or_else(|| format!("if{ifindex}"))
    };
    sorted(routes.map(|route| {
        let mut lines = netmirror_platform::text::route_lines(route, &name, true);
        if let Some(nh) = route.nh_id().and_then(&nexthop) {
            let text = netmirror_platform::text::nexthop_text(nh, &name);
            lines.insert(1, format!("nh_info {text}"));
        }
        normal_details(&lines.join("\n\t"))
    }))
}

/// One route's `ip -d` text with blanks squeezed and the countdown of `expires` left out.
fn normal_details(text: &str) -> String {
    text.lines()
        .map(|line| {
            let mut kept = Vec::new();
            let mut words = line.split_whitespace();
            while let Some(word) = words.next() {
                if word == "expires" {
                    words.next();
                    continue;
                }
                kept.push(word);
            }
            let indent = if line.starts_with('\t') { "\t" } else { "" };
            format!("{indent}{}", kept.join(" "))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `ip -d route show table all` of both families in `ns`, one string per route, sorted.
pub(crate) fn details_of_ip(ns: &NetNs) -> Vec<String> {
    let mut routes: Vec<String> = Vec::new();
    for family in ["-4", "-6"] {
        let text = ns
            .ip(&[family, "-d", "route", "show", "table", "all"])
            .unwrap();
        for line in text.lines() {
            match routes.last_mut() {
                Some(route) if line.starts_with('\t') => {
                    route.push('\n');
                    route.push_str(line);
                }
                _ => routes.push(line.to_owned()),
            }
        }
    }
    sorted(routes.iter().map(|route| normal_details(route)))
}

pub(crate) fn sorted(lines: impl Iterator<Item = String>) -> Vec<String> {
    let mut lines: Vec<String> = lines.collect();
    lines.sort();
    lines
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
