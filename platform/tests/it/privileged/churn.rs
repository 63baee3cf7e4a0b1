//! Issue 15: a resync under continuous address churn. The kernel interrupts address dumps
//! (`NLM_F_DUMP_INTR`) while addresses come and go; when every attempt of a resync's dump is
//! interrupted, the cache must put the resync off and try again, however long the churn
//! lasts, and never end its user's loop with `DumpInterrupted` (it did after 8 attempts,
//! which ended `netmirror monitor`).

use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use netmirror_platform::{Address, Cache, Platform};

use super::support::{assert_cache_matches_ip, config, netns_with_veth};
use crate::support::bounded;

/// Addresses kept on the link, so that an address dump spans many datagrams (the kernel
/// only marks a dump interrupted between two of them).
const N_STEADY: u32 = 3000;

fn addr(i: u32) -> IpAddr {
    IpAddr::V4(Ipv4Addr::from(u32::from(Ipv4Addr::new(10, 64, 0, 0)) + i))
}

#[test]
fn resync_under_continuous_address_churn_never_ends_the_cache() {
    bounded(Duration::from_secs(240), || {
        let ns = netns_with_veth();
        let platform = Platform::open(config(&ns)).unwrap();
        let ifindex = platform
            .links()
            .execute()
            .unwrap()
            .items
            .iter()
            .find(|link| link.name() == "nmx0")
            .unwrap()
            .ifindex();
        let steady = (0..N_STEADY).map(|i| Address::new(ifindex, addr(i), 32));
        let report = steady
            .fold(platform.batch(), |batch, address| {
                batch.add_address(address)
            })
            .execute()
            .unwrap();
        assert!(report.is_success(), "{report:?}");

        // One dump attempt, so one interruption exhausts it; a small buffer, so the churn
        // overflows it and resyncs are needed; a short back-off.
        let mut cache = Cache::open(
            config(&ns)
                .with_dump_attempts(1)
                .with_rcvbuf(64 * 1024)
                .with_resync_backoff(Duration::from_millis(10)),
        )
        .unwrap();

        let stop = Arc::new(AtomicBool::new(false));
        let churn = {
            let stop = Arc::clone(&stop);
            let platform = Platform::open(config(&ns)).unwrap();
            std::thread::spawn(move || {
                let mut rounds = 0u32;
                while !stop.load(Ordering::Relaxed) {
                    let churned = (0..200).map(|i| Address::new(ifindex, addr(N_STEADY + i), 32));
                    let added = churned
                        .clone()
                        .fold(platform.batch(), |batch, address| {
                            batch.add_address(address)
                        })
                        .execute()
                        .unwrap();
                    assert!(added.is_success(), "{added:?}");
                    let deleted = churned
                        .fold(platform.batch(), |batch, address| {
                            batch.delete_address(address)
                        })
                        .execute()
                        .unwrap();
                    assert!(deleted.is_success(), "{deleted:?}");
                    rounds += 1;
                }
                rounds
            })
        };

        // A consumer that stalls now and then (so the buffer overflows), for 8 s of churn, and
        // on (up to a minute) until a resync was put off: on a loaded machine the churn thread
        // may not run while the first resyncs dump.
        let mut events = Vec::new();
        let started = Instant::now();
        let mut n_polls = 0u32;
        while started.elapsed() < Duration::from_secs(8)
            || (cache.stats().n_deferred_resyncs == 0
                && started.elapsed() < Duration::from_secs(60))
        {
            events.clear();
            if let Err(err) = cache.poll(Some(Duration::from_millis(20)), &mut events) {
                stop.store(true, Ordering::Relaxed);
                panic!("poll failed under churn: {err} ({:?})", cache.stats());
            }
            n_polls += 1;
            if n_polls.is_multiple_of(50) {
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        stop.store(true, Ordering::Relaxed);
        let rounds = churn.join().unwrap();
        let stats = cache.stats();
        assert!(
            stats.n_overruns > 0,
            "the churn never overflowed: {stats:?}"
        );
        assert!(
            stats.n_deferred_resyncs > 0,
            "no resync was ever interrupted on every attempt ({rounds} churn rounds): {stats:?}"
        );
        // Once the churn stops, the resync put off goes through and the cache is exact.
        assert_cache_matches_ip(&mut cache, &ns);
        assert!(cache.stats().n_resyncs > 0, "{:?}", cache.stats());
    });
}
