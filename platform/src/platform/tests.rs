//! Unit tests of the kernel's route counters, on text captured from `/proc/net`.

use super::{rt6_entries, triestat_prefixes};

/// `/proc/net/fib_triestat` of a namespace with 600k IPv4 routes and no rules: the local
/// and main tables share one trie, so the kernel prints the same statistics twice.
const MERGED: &str = "Basic info: size of leaf: 48 bytes, size of tnode: 40 bytes.
Main:
\tAver depth:     2.00
\tMax depth:      3
\tLeaves:         600006
\tPrefixes:       600006
\tInternal nodes: 6
\t  1: 2  2: 2  3: 1  20: 1
\tPointers: 1048596
Null ptrs: 448585
Total size: 69756  kB
Local:
\tAver depth:     2.00
\tMax depth:      3
\tLeaves:         600006
\tPrefixes:       600006
\tInternal nodes: 6
\t  1: 2  2: 2  3: 1  20: 1
\tPointers: 1048596
Null ptrs: 448585
Total size: 69756  kB
";

#[test]
fn merged_tables_count_once() {
    assert_eq!(triestat_prefixes(MERGED), 600_006);
}

#[test]
fn separate_tables_add_up() {
    let text = "Basic info: size of leaf: 48 bytes, size of tnode: 40 bytes.
Id 100:
\tAver depth:     1.00
\tPrefixes:       3
Null ptrs: 0
Main:
\tAver depth:     1.50
\tPrefixes:       7
Null ptrs: 1
Local:
\tAver depth:     1.00
\tPrefixes:       4
Null ptrs: 0
";
    assert_eq!(triestat_prefixes(text), 14);
}

#[test]
fn rt6_stats_fourth_field_in_hex() {
    assert_eq!(
        rt6_entries("30d4a 186a7 001e 186a9 0000 0000 0000\n"),
        Some(100_009)
    );
    assert_eq!(rt6_entries("0001 0002\n"), None);
    assert_eq!(triestat_prefixes(""), 0);
}

/// The counters read in a real namespace (needs root).
#[cfg(feature = "privileged")]
mod privileged {
    use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
    use std::sync::mpsc;
    use std::time::Duration;

    use crate::Netns;
    use crate::platform::{Config, FibCounters, Platform};
    use crate::route::Route;
    use crate::testing::{NetNs, Veth};

    /// The estimate a full load sizes its index by: at least what the dump returns, and not
    /// much more (a larger estimate is memory the index holds for nothing).
    #[test]
    fn counters_estimate_the_routes_a_dump_returns() {
        let (done, result) = mpsc::channel();
        std::thread::spawn(move || {
            let ns = NetNs::builder()
                .veth(
                    Veth::new("nmx0", "nmx1")
                        .address("192.0.2.1/24")
                        .address("2001:db8:ffff::1/64"),
                )
                .start()
                .unwrap();
            let netns = Netns::name(ns.name());
            let platform = Platform::open(Config::new().with_netns(netns.clone())).unwrap();
            let mut batch = platform.batch();
            for i in 0..300u32 {
                let v4 = Ipv4Addr::from(0x0a00_0000 + (i << 8));
                batch = batch.add_route(
                    Route::new(v4.into(), 24).with_gateway(IpAddr::V4(Ipv4Addr::new(192, 0, 2, 2))),
                );
                let v6 = Ipv6Addr::new(0x2001, 0xdb8, 1, i as u16, 0, 0, 0, 0);
                batch = batch.add_route(
                    Route::new(v6.into(), 64)
                        .with_gateway(IpAddr::V6("2001:db8:ffff::2".parse().unwrap())),
                );
            }
            assert!(batch.execute().unwrap().is_success());
            let fib = netns.run_in(|| Ok(FibCounters::open())).unwrap();
            let estimate = fib.estimate_routes();
            let dumped = platform.routes().execute().unwrap().items.len();
            let _ = done.send((estimate, dumped));
        });
        let (estimate, dumped) = result
            .recv_timeout(Duration::from_secs(60))
            .expect("the test failed or took longer than 60 s");
        let estimate = estimate.expect("no counter could be read");
        assert!(dumped >= 600, "{dumped} routes dumped");
        assert!(
            (dumped..=dumped + 16).contains(&estimate),
            "estimate {estimate} for {dumped} dumped routes"
        );
    }
}
