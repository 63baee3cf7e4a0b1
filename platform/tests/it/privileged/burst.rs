//! Bursts: 100k routes added with `ip -batch` while the cache runs end in a cache equal to a
//! fresh dump, and a forced overflow (tiny receive buffer, stalled consumer) is detected,
//! resynced and reported.

use std::collections::BTreeSet;
use std::io::Write;
use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use netmirror_platform::testing::NetNs;
use netmirror_platform::{Cache, Change, Event, Family, Platform, Route};

use super::snapshot::route_line;
use super::support::{config, netns_with_veth, settle};
use crate::support::bounded;

const LIMIT: Duration = Duration::from_secs(240);

/// The routes of a fresh dump, as lines.
fn fresh_routes(platform: &Platform) -> BTreeSet<String> {
    let answer = platform.routes().execute().unwrap();
    answer.items.iter().map(route_line).collect()
}

fn cached_routes(cache: &Cache) -> BTreeSet<String> {
    cache.routes().map(|route| route_line(route)).collect()
}

/// Asserts that the cache equals a fresh dump, giving the kernel's asynchronous work (IPv6
/// link-local addresses finishing DAD and their routes) a few rounds to be announced.
#[track_caller]
fn assert_cache_equals_fresh_dump(cache: &mut Cache, events: &mut Vec<Event>) {
    let mut last = None;
    for _ in 0..10 {
        events.extend(settle(cache, Duration::from_secs(60)));
        let (cached, fresh) = (cached_routes(cache), fresh_routes(cache.platform()));
        if cached == fresh {
            return;
        }
        last = Some((cached, fresh));
        std::thread::sleep(Duration::from_millis(300));
    }
    if let Some((cached, fresh)) = last {
        let missing: Vec<_> = fresh.difference(&cached).collect();
        let extra: Vec<_> = cached.difference(&fresh).collect();
        panic!("cache differs from a fresh dump: missing {missing:#?}, extra {extra:#?}");
    }
}

fn dst(i: u32) -> Ipv4Addr {
    Ipv4Addr::from(0x0a00_0000 + (i << 4))
}

#[test]
fn burst_of_100k_routes_from_ip_batch_ends_equal_to_a_fresh_dump() {
    bounded(LIMIT, || {
        let ns = netns_with_veth();
        let mut cache = Cache::open(config(&ns)).unwrap();
        settle(&mut cache, Duration::from_secs(10));

        let dir = tempfile::Builder::new()
            .prefix("netmirror-test-")
            .tempdir()
            .unwrap();
        let path = dir.path().join("routes.batch");
        let mut file = std::fs::File::create(&path).unwrap();
        for i in 0..100_000 {
            writeln!(file, "route add {}/28 via 192.0.2.2", dst(i)).unwrap();
        }
        drop(file);
        let mut child = ns
            .command("ip")
            .args(["-batch"])
            .arg(&path)
            .spawn()
            .unwrap();
        let mut events = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(180);
        let status = loop {
            cache
                .poll(Some(Duration::from_millis(50)), &mut events)
                .unwrap();
            events.clear();
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            assert!(Instant::now() < deadline, "ip -batch did not finish");
        };
        assert!(status.success());
        assert_cache_equals_fresh_dump(&mut cache, &mut events);
        assert!(cache.routes().count() > 100_000);
        // The default receive buffer absorbs the burst: nothing lost, no resync.
        assert_eq!(cache.stats().n_overruns, 0, "{:?}", cache.rcvbuf());
        assert_eq!(cache.stats().n_resyncs, 0);
    });
}

/// A settled cache with a 64 KiB receive buffer (easy to overflow) and a 50 ms resync
/// back-off, and `nmx0`'s index.
fn small_buffer_cache(ns: &NetNs) -> (Cache, netmirror_platform::Ifindex) {
    let mut cache = Cache::open(
        config(ns)
            .with_rcvbuf(64 * 1024)
            .with_resync_backoff(Duration::from_millis(50)),
    )
    .unwrap();
    settle(&mut cache, Duration::from_secs(10));
    let ifindex = cache.link_by_name("nmx0").unwrap().ifindex();
    (cache, ifindex)
}

#[test]
fn overflow_is_detected_resynced_and_reported() {
    bounded(LIMIT, || {
        let ns = netns_with_veth();
        let (mut cache, ifindex) = small_buffer_cache(&ns);

        // A stalled consumer: 20k routes arrive while nobody polls.
        let n = 20_000;
        let mut batch = cache.platform().batch();
        for i in 0..n {
            batch = batch.add_route(
                Route::new(dst(i).into(), 28)
                    .with_gateway("192.0.2.2".parse().unwrap())
                    .with_oif(ifindex),
            );
        }
        let report = batch.execute().unwrap();
        assert!(report.is_success(), "{report:?}");

        let mut events = Vec::new();
        assert_cache_equals_fresh_dump(&mut cache, &mut events);
        assert!(events.contains(&Event::Overrun), "no overrun seen");
        assert!(
            events
                .iter()
                .any(|event| matches!(event, Event::Resynced { .. })),
            "no resync reported"
        );
        assert!(cache.stats().n_overruns >= 1);
        assert!(cache.stats().n_resyncs >= 1);
        // Every new route was reported exactly once, from the queue or from the resync.
        let added: BTreeSet<String> = events
            .iter()
            .filter_map(|event| match event {
                Event::Route(Change::Added(route))
                    if route.family() == Family::V4 && route.dst_len() == 28 =>
                {
                    Some(route.dst().to_string())
                }
                _ => None,
            })
            .collect();
        let n_added = events
            .iter()
            .filter(|event| {
                matches!(event, Event::Route(Change::Added(route)) if route.dst_len() == 28)
            })
            .count();
        assert_eq!(added.len(), n as usize);
        assert_eq!(n_added, n as usize);
    });
}

#[test]
fn a_storm_of_overflows_backs_off_and_ends_consistent() {
    bounded(LIMIT, || {
        let ns = netns_with_veth();
        let (mut cache, ifindex) = small_buffer_cache(&ns);

        // Three seconds of route churn, far more than the 64 KiB buffer holds.
        let storm = {
            let platform = Platform::open(config(&ns)).unwrap();
            std::thread::spawn(move || {
                let routes: Vec<Route> = (0..2000)
                    .map(|i| {
                        Route::new(dst(i).into(), 28)
                            .with_gateway("192.0.2.2".parse().unwrap())
                            .with_oif(ifindex)
                    })
                    .collect();
                // At least two rounds, however slow a loaded machine makes them.
                let until = Instant::now() + Duration::from_secs(3);
                let mut rounds = 0;
                while rounds < 2 || Instant::now() < until {
                    let mut add = platform.batch();
                    let mut del = platform.batch();
                    for route in &routes {
                        add = add.add_route(route.clone());
                        del = del.delete_route(route.clone());
                    }
                    assert!(add.execute().unwrap().is_success());
                    assert!(del.execute().unwrap().is_success());
                    rounds += 1;
                }
                // End with half of them present.
                let mut add = platform.batch();
                for route in &routes[..1000] {
                    add = add.add_route(route.clone());
                }
                assert!(add.execute().unwrap().is_success());
                rounds
            })
        };
        let mut events = Vec::new();
        // A slow consumer: it reads a little, then is busy elsewhere.
        while !storm.is_finished() {
            cache
                .poll(Some(Duration::from_millis(20)), &mut events)
                .unwrap();
            events.clear();
            std::thread::sleep(Duration::from_millis(30));
        }
        let rounds = storm.join().unwrap();
        let during_storm = cache.stats();
        assert_cache_equals_fresh_dump(&mut cache, &mut events);
        assert!(rounds >= 2, "only {rounds} rounds of churn");
        assert!(during_storm.n_overruns >= 2, "{during_storm:?}");
        // Back-off doubles from 50 ms while overflows go on: in three seconds that allows a
        // handful of resyncs, never one per overflow.
        assert!(during_storm.n_resyncs <= 8, "{during_storm:?}");
        assert!(cache.stats().n_resyncs >= 1);
        let present = cache
            .routes()
            .filter(|route| route.dst_len() == 28 && route.family() == Family::V4)
            .count();
        assert_eq!(present, 1000);
    });
}
