//! Interrupted dumps: addresses churned while they are dumped make the kernel set
//! NLM_F_DUMP_INTR; the dump is redone and the answer is complete.

use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use netmirror_platform::{Address, Cache, Event, Platform};

use super::support::{config, netns_with_veth, settle};
use crate::support::bounded;

const LIMIT: Duration = Duration::from_secs(120);

#[test]
fn interrupted_address_dumps_are_redone_and_complete() {
    bounded(LIMIT, || {
        let ns = netns_with_veth();
        let platform = Platform::open(config(&ns)).unwrap();
        let ifindex = platform.links().name("nmx1").execute().unwrap().items[0].ifindex();
        // Enough stable addresses that a dump takes several datagrams.
        let stable: Vec<Address> = (0..1500u32)
            .map(|i| Address::new(ifindex, IpAddr::V4(Ipv4Addr::from(0x0a40_0000 + i)), 32))
            .collect();
        let report = platform.batch().extend(
            stable
                .iter()
                .cloned()
                .map(|addr| netmirror_platform::Item::Address(netmirror_platform::Op::Add, addr)),
        );
        assert!(report.execute().unwrap().is_success());

        let stop = Arc::new(AtomicBool::new(false));
        let churn = {
            let stop = stop.clone();
            let churner = Platform::open(config(&ns)).unwrap();
            std::thread::spawn(move || {
                let addr = Address::new(ifindex, "10.99.0.1".parse().unwrap(), 32);
                while !stop.load(Ordering::Relaxed) {
                    let _ = churner.batch().add_address(addr.clone()).execute();
                    let _ = churner.batch().delete_address(addr.clone()).execute();
                    // A short pause lets some retries finish; without it, on a loaded machine
                    // every retry can be interrupted too (see `answer_or_interrupted`).
                    std::thread::sleep(Duration::from_micros(300));
                }
            })
        };

        let deadline = Instant::now() + Duration::from_secs(60);
        let mut n_interrupted = 0;
        let mut n_dumps = 0;
        while n_interrupted == 0 && Instant::now() < deadline {
            let Some(answer) = answer_or_interrupted(platform.addresses().execute()) else {
                continue;
            };
            n_dumps += 1;
            n_interrupted += answer.n_interrupted;
            for addr in &stable {
                assert!(
                    answer.items.iter().any(|held| held.id() == addr.id()),
                    "{} missing from a dump",
                    addr.local()
                );
            }
        }

        // The cache's resync goes through the same retry.
        let mut cache = loop {
            if let Some(cache) = answer_or_interrupted(Cache::open(config(&ns))) {
                break cache;
            }
        };
        let mut events = Vec::new();
        let resync_deadline = Instant::now() + Duration::from_secs(30);
        let interrupted_resync = |events: &[Event]| {
            events.iter().any(
                |event| matches!(event, Event::Resynced { n_interrupted, .. } if *n_interrupted > 0),
            )
        };
        while !interrupted_resync(&events) && Instant::now() < resync_deadline {
            answer_or_interrupted(cache.resync(&mut events));
        }
        stop.store(true, Ordering::Relaxed);
        churn.join().unwrap();
        settle(&mut cache, Duration::from_secs(10));
        assert!(
            n_interrupted > 0,
            "no dump was interrupted in {n_dumps} dumps"
        );
        assert!(
            cache.stats().n_dump_retries > 0,
            "no cache dump was interrupted"
        );
        assert!(
            interrupted_resync(&events),
            "no resync reported an interrupted dump"
        );
        for addr in &stable {
            assert!(cache.addresses().any(|held| held.id() == addr.id()));
        }
    });
}

#[test]
fn interrupted_link_dumps_are_redone_and_complete() {
    bounded(LIMIT, || {
        let ns = netns_with_veth();
        // 400 links: a link dump takes many datagrams.
        let dir = tempfile::Builder::new()
            .prefix("netmirror-test-")
            .tempdir()
            .unwrap();
        let path = dir.path().join("links.batch");
        let lines: String = (0..200)
            .map(|i| format!("link add nmxa{i} type veth peer name nmxb{i}\n"))
            .collect();
        std::fs::write(&path, lines).unwrap();
        let status = ns.command("ip").arg("-batch").arg(&path).status().unwrap();
        assert!(status.success());
        let platform = Platform::open(config(&ns)).unwrap();
        let stable = platform.links().execute().unwrap().items.len();
        assert_eq!(stable, 403);

        let stop = Arc::new(AtomicBool::new(false));
        let churn = {
            let stop = stop.clone();
            let name = ns.name().to_owned();
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let ip = |args: &[&str]| {
                        std::process::Command::new("ip")
                            .args(["-n", &name])
                            .args(args)
                            .status()
                            .unwrap()
                    };
                    ip(&[
                        "link", "add", "nmxc0", "type", "veth", "peer", "name", "nmxc1",
                    ]);
                    ip(&["link", "del", "nmxc0"]);
                }
            })
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut n_interrupted = 0;
        let mut n_dumps = 0;
        while n_interrupted == 0 && Instant::now() < deadline {
            let Some(answer) = answer_or_interrupted(platform.links().execute()) else {
                continue;
            };
            n_dumps += 1;
            n_interrupted += answer.n_interrupted;
            let names: Vec<&str> = answer.items.iter().map(|link| link.name()).collect();
            for i in 0..200 {
                assert!(
                    names.contains(&format!("nmxa{i}").as_str()),
                    "nmxa{i} missing"
                );
                assert!(
                    names.contains(&format!("nmxb{i}").as_str()),
                    "nmxb{i} missing"
                );
            }
        }
        stop.store(true, Ordering::Relaxed);
        churn.join().unwrap();
        assert!(
            n_interrupted > 0,
            "no link dump was interrupted in {n_dumps} dumps"
        );
    });
}

/// The answer of a dump, or `None` when the churn interrupted every one of its bounded retries:
/// that is the documented outcome under unending churn (`Error::DumpInterrupted`), so the test
/// asks again rather than fail. Any other error fails the test.
fn answer_or_interrupted<T>(res: netmirror_platform::Result<T>) -> Option<T> {
    match res {
        Ok(answer) => Some(answer),
        Err(netmirror_platform::Error::DumpInterrupted { .. }) => None,
        Err(err) => panic!("dump failed: {err}"),
    }
}
