//! Parsing route messages from the wire, and inserting the routes into the cache's indexes:
//! the two costs of loading a routing table beside the kernel's own dump.
//!
//! With `NETMIRROR_BENCH_QUICK=1` (set by `cargo xtask bench --quick`) the largest size is 10k
//! routes instead of 100k, to keep a quick run short.

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use netmirror_dedup_index::{DedupIndex, Placement};
use netmirror_platform::{DefaultRoutes, Route, RoutesByIfindex, RoutesByWeakId};

/// `n` RTM_NEWROUTE messages as a route dump sends them: 10.x.y.z/28 via 192.0.2.2, oif 3,
/// main table.
fn dump_bytes(n: u32) -> Vec<u8> {
    let mut buf = Vec::with_capacity(n as usize * 60);
    for i in 0..n {
        let dst = (0x0a00_0000u32 + (i << 4)).to_be_bytes();
        buf.extend_from_slice(&60u32.to_ne_bytes()); // nlmsg_len
        buf.extend_from_slice(&24u16.to_ne_bytes()); // RTM_NEWROUTE
        buf.extend_from_slice(&2u16.to_ne_bytes()); // NLM_F_MULTI
        buf.extend_from_slice(&1u32.to_ne_bytes()); // seq
        buf.extend_from_slice(&0u32.to_ne_bytes()); // pid
        buf.extend_from_slice(&[2, 28, 0, 0, 254, 3, 0, 1, 0, 0, 0, 0]); // rtmsg
        for (kind, value) in [
            (15u16, 254u32.to_ne_bytes()), // RTA_TABLE
            (1, dst),                      // RTA_DST
            (5, [192, 0, 2, 2]),           // RTA_GATEWAY
            (4, 3u32.to_ne_bytes()),       // RTA_OIF
        ] {
            buf.extend_from_slice(&8u16.to_ne_bytes());
            buf.extend_from_slice(&kind.to_ne_bytes());
            buf.extend_from_slice(&value);
        }
    }
    buf
}

/// Whether `cargo xtask bench --quick` asked for smaller sizes.
fn quick() -> bool {
    std::env::var_os("NETMIRROR_BENCH_QUICK").is_some_and(|value| value == "1")
}

/// The route counts measured.
fn sizes() -> [u32; 3] {
    [10, 1_000, if quick() { 10_000 } else { 100_000 }]
}

/// Splits `buf` into messages and parses each as a route.
fn parse_all(buf: &[u8]) -> Vec<Route> {
    let mut routes = Vec::new();
    let mut at = 0;
    while at + 16 <= buf.len() {
        let len = u32::from_ne_bytes([buf[at], buf[at + 1], buf[at + 2], buf[at + 3]]) as usize;
        if let Ok(Some(route)) = Route::parse(&buf[at + 16..at + len]) {
            routes.push(route);
        }
        at += (len + 3) & !3;
    }
    routes
}

fn bench_parse(c: &mut Criterion) {
    let mut group = c.benchmark_group("parse/route_v4");
    for n in sizes() {
        let buf = dump_bytes(n);
        group.throughput(Throughput::Elements(u64::from(n)));
        group.bench_with_input(BenchmarkId::from_parameter(n), &buf, |b, buf| {
            b.iter(|| parse_all(black_box(buf)))
        });
    }
    group.finish();
}

/// An empty index with the cache's route index types, room for `capacity` routes.
fn route_index(capacity: usize) -> DedupIndex<Route> {
    let mut index = DedupIndex::with_capacity(capacity);
    index.add_index(RoutesByIfindex);
    index.add_index(DefaultRoutes);
    index.add_index(RoutesByWeakId);
    index
}

/// Fills an index with the cache's route index types from a parsed dump of each size, the
/// way `fill` does it, under the benchmark group `name`.
fn bench_fill(c: &mut Criterion, name: &str, fill: fn(&mut DedupIndex<Route>, &[Route])) {
    let mut group = c.benchmark_group(name);
    group.sample_size(10);
    for n in sizes() {
        let routes = parse_all(&dump_bytes(n));
        group.throughput(Throughput::Elements(u64::from(n)));
        group.bench_with_input(BenchmarkId::from_parameter(n), &routes, |b, routes| {
            b.iter(|| {
                let mut index = route_index(routes.len());
                fill(&mut index, routes);
                index
            })
        });
    }
    group.finish();
}

/// One insert per route, as events add them.
fn bench_insert(c: &mut Criterion) {
    bench_fill(c, "cache/insert_routes", |index, routes| {
        for route in routes.iter().cloned() {
            let _ = index.insert(route, Placement::Append);
        }
    });
}

/// The initial load's path: chunks of 512 routes (what the receiving thread hands over)
/// appended in bulk to an index sized once, as when the kernel's counters are known.
fn bench_append(c: &mut Criterion) {
    bench_fill(c, "cache/append_routes", |index, routes| {
        for chunk in routes.chunks(512) {
            let _ = index.append_all(chunk.iter().cloned());
        }
    });
}

criterion_group!(benches, bench_parse, bench_insert, bench_append);
criterion_main!(benches);
