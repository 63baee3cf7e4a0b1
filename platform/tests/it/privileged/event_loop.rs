//! What an event loop that drives the sync [`Cache`] needs from it: the fd (`AsFd`,
//! `AsRawFd`), whether a poll drained the socket ([`Cache::poll_status`]) and when a scheduled
//! resync is due although the socket is quiet ([`Cache::next_deadline`]).

use std::net::Ipv4Addr;
use std::os::fd::{AsFd, AsRawFd};
use std::time::{Duration, Instant};

use netmirror_platform::{Cache, Change, Event, Route};

use super::support::{assert_cache_matches_ip, config, netns_with_veth, settle};
use crate::support::bounded;

const LIMIT: Duration = Duration::from_secs(120);

fn dst(i: u32) -> Ipv4Addr {
    Ipv4Addr::from(0x0a00_0000 + (i << 4))
}

/// Adds `n` routes via `nmx0` in one batch; each is one notification datagram.
fn add_routes(cache: &Cache, n: u32) {
    let ifindex = cache.link_by_name("nmx0").unwrap().ifindex();
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
}

#[test]
fn poll_status_says_whether_the_socket_was_drained() {
    bounded(LIMIT, || {
        let ns = netns_with_veth();
        let mut cache = Cache::open(config(&ns)).unwrap();
        settle(&mut cache, Duration::from_secs(10));
        assert_eq!(cache.as_raw_fd(), cache.as_fd().as_raw_fd());

        // Far more datagrams than one poll reads: the kernel queued them all before its acks.
        add_routes(&cache, 300);
        let mut events = Vec::new();
        let mut statuses = Vec::new();
        loop {
            let status = cache
                .poll_status(Some(Duration::ZERO), &mut events)
                .unwrap();
            statuses.push(status);
            if status.drained {
                break;
            }
            assert!(statuses.len() < 100, "never drained: {statuses:?}");
        }
        // 300 datagrams at most 64 a poll: four polls that stop with more waiting, then one
        // that empties the socket.
        assert!(statuses.len() >= 5, "{statuses:?}");
        assert!(statuses[..statuses.len() - 1].iter().all(|s| !s.drained));
        let n_events: usize = statuses.iter().map(|s| s.n_events).sum();
        assert_eq!(n_events, events.len());
        let added = events
            .iter()
            .filter(|e| matches!(e, Event::Route(Change::Added(r)) if r.dst_len() == 28))
            .count();
        assert_eq!(added, 300);
        // Nothing is left: the next poll finds the socket empty at once.
        let status = cache
            .poll_status(Some(Duration::ZERO), &mut events)
            .unwrap();
        assert!(status.drained && status.n_events == 0, "{status:?}");
    });
}

#[test]
fn next_deadline_tells_when_a_scheduled_resync_runs() {
    bounded(LIMIT, || {
        let ns = netns_with_veth();
        let backoff = Duration::from_millis(200);
        let mut cache = Cache::open(
            config(&ns)
                .with_rcvbuf(64 * 1024)
                .with_resync_backoff(backoff)
                // Only the resync's deadline here.
                .with_link_refresh(None),
        )
        .unwrap();
        settle(&mut cache, Duration::from_secs(10));
        assert_eq!(cache.next_deadline(), None, "nothing scheduled yet");

        // A stalled consumer overflows the 64 KiB buffer.
        add_routes(&cache, 20_000);
        let mut events = Vec::new();
        let mut deadline_seen = None;
        let resynced_at = loop {
            let status = cache
                .poll_status(Some(Duration::ZERO), &mut events)
                .unwrap();
            if events.iter().any(|e| matches!(e, Event::Resynced { .. })) {
                break Instant::now();
            }
            if let Some(deadline) = cache.next_deadline() {
                deadline_seen = Some(deadline);
                // An event loop with a quiet socket sleeps until the deadline, no longer.
                if status.drained {
                    std::thread::sleep(deadline.saturating_duration_since(Instant::now()));
                }
            }
            assert!(
                deadline_seen.is_none_or(|d| Instant::now() < d + Duration::from_secs(10)),
                "no resync long after the deadline"
            );
        };
        assert!(events.contains(&Event::Overrun), "no overrun");
        let deadline = deadline_seen.expect("an overrun without a deadline");
        assert!(resynced_at >= deadline, "resynced before its deadline");
        assert_eq!(
            cache.next_deadline(),
            None,
            "still scheduled after the resync"
        );
        assert_cache_matches_ip(&mut cache, &ns);
    });
}
