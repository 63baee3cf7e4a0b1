//! Time per operation of a dedup index of route-like objects with three index types (id, by
//! interface, default routes), at 1k, 100k and 1M objects.
//!
//! Groups: `insert/fill` (build from empty with `insert`, per object); `insert/append_all` (the
//! same with the bulk `append_all`); `lookup/get` and `lookup/get_in` (by
//! id in the primary and in the by-interface index type, in random order);
//! `lookup/get_sequential` (by id, in the order the routes were added); `remove/drain` (remove
//! everything in random order, per object; `remove/drain_one` the same on an index with the id
//! index type only); `remove_insert/steady` (remove a random entry and
//! add it back); `resync/mark_readd_sweep` (mark all, re-add 90% in order, sweep, per object);
//! `iterate/primary` and `iterate/by_ifindex` (a full in-order walk reading each
//! object, per object); `baseline/*`, the same on a `Map` and a
//! `Vec<Arc<Route>>` (`hashmap_insert` fills a map from empty, an `Arc` per object;
//! `hashmap_drain` removes in random order and frees each object, as `remove/drain` does;
//! `slot_map_get_read` and `slot_map_drain` do the same with the index's indirection: a map of
//! slot numbers by id, the object's handle in a vector by its slot).
//! Where a routine handles many objects, criterion's "thrpt" line gives objects per second.
//! The benches run size by size, each map baseline right after the index's operation it is
//! compared with.
//!
//! `NETMIRROR_BENCH_QUICK=1` leaves out the 1M size (for `cargo xtask bench --quick`).
//!
//! Criterion measures wall time. With `NETMIRROR_BENCH_CPU_TIME=1` it measures the benchmark
//! thread's CPU time instead (`CLOCK_THREAD_CPUTIME_ID`), which a machine busy with other work
//! disturbs much less (it still shares caches and memory bandwidth with that work).

mod support;

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use criterion::measurement::Measurement;
use criterion::{BatchSize, BenchmarkId, Criterion, Throughput};
use netmirror_dedup_index::{Object, Placement};
use support::cpu_time::ThreadCpuTime;
use support::{Layout, Map, Route, Routes, route, shuffled, shuffled_ids, slot_map};

/// The sizes: 1k, 100k and 1M objects; with `NETMIRROR_BENCH_QUICK=1` (as
/// `cargo xtask bench --quick` sets), 1k and 100k only.
fn sizes() -> &'static [u32] {
    if support::quick() {
        &[1_000, 100_000]
    } else {
        &[1_000, 100_000, 1_000_000]
    }
}

fn config() -> Criterion {
    Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
}

/// Size by size, each operation of the index runs right before the same work on the map, so
/// the two figures a ratio is made of are measured minutes apart at most, not a whole run
/// apart (on a shared machine, memory latency drifts between the two otherwise).
fn run<M: Measurement>(mut c: Criterion<M>) {
    let c = &mut c;
    for &n in sizes() {
        insert(c, n);
        baseline_insert(c, n);
        lookup(c, n);
        baseline_lookup(c, n);
        remove(c, n);
        baseline_drain(c, n);
        resync(c, n);
        iterate(c, n);
        baseline_iterate(c, n);
    }
}

/// Wall time by default; the benchmark thread's CPU time with `NETMIRROR_BENCH_CPU_TIME=1`.
fn main() {
    // A program that ever started a thread has glibc's malloc take its arena lock (an atomic
    // operation) on every allocation; the platform cache is such a program. Measure that case.
    std::thread::spawn(|| {}).join().ok();
    if std::env::var_os("NETMIRROR_BENCH_CPU_TIME").is_some_and(|value| value == "1") {
        run(config()
            .with_measurement(ThreadCpuTime)
            .configure_from_args());
    } else {
        run(config().configure_from_args());
    }
    Criterion::default().configure_from_args().final_summary();
}

fn insert<M: Measurement>(c: &mut Criterion<M>, n: u32) {
    fill(c, n, "insert/fill", |routes, fresh| {
        for obj in fresh {
            black_box(routes.index.insert(obj, Placement::Append)).ok();
        }
    });
    fill(c, n, "insert/append_all", |routes, fresh| {
        black_box(routes.index.append_all(fresh)).ok();
    });
}

/// Times filling an empty three-index-type index with `n` fresh routes the way `add` does,
/// under the benchmark group `name`.
fn fill<M: Measurement>(
    c: &mut Criterion<M>,
    n: u32,
    name: &str,
    add: fn(&mut Routes, Vec<Route>),
) {
    let mut group = c.benchmark_group(name);
    let fresh: Vec<Route> = (0..n).map(route).collect();
    group.throughput(Throughput::Elements(u64::from(n)));
    group.bench_function(BenchmarkId::from_parameter(n), |b| {
        b.iter_batched(
            || fresh.clone(),
            |fresh| {
                let mut routes = Routes::new(Layout::Three);
                add(&mut routes, fresh);
                routes
            },
            BatchSize::PerIteration,
        );
    });
    group.finish();
}

fn lookup<M: Measurement>(c: &mut Criterion<M>, n: u32) {
    let mut group = c.benchmark_group("lookup");
    let routes = Routes::filled(Layout::Three, n);
    let ids = shuffled_ids(n);
    let mut next = 0;
    group.bench_function(BenchmarkId::new("get", n), |b| {
        b.iter(|| {
            next = (next + 1) % ids.len();
            black_box(routes.index.get(&ids[next]))
        });
    });
    let in_order: Vec<_> = (0..n).map(|i| route(i).id()).collect();
    group.bench_function(BenchmarkId::new("get_sequential", n), |b| {
        b.iter(|| {
            next = (next + 1) % in_order.len();
            black_box(routes.index.get(&in_order[next]))
        });
    });
    let by_ifindex = routes.by_ifindex.expect("three index types");
    group.bench_function(BenchmarkId::new("get_in", n), |b| {
        b.iter(|| {
            next = (next + 1) % ids.len();
            black_box(
                routes
                    .index
                    .get_in(by_ifindex, &ids[next])
                    .map(|entry| entry.obj()),
            )
        });
    });
    group.finish();
}

fn remove<M: Measurement>(c: &mut Criterion<M>, n: u32) {
    let mut group = c.benchmark_group("remove");
    let ids = shuffled_ids(n);
    group.throughput(Throughput::Elements(u64::from(n)));
    // `drain_one`: the index with its id index type only, no list but the primary one to
    // unlink from: what the lanes of the other two cost.
    for (name, layout) in [("drain", Layout::Three), ("drain_one", Layout::One)] {
        group.bench_function(BenchmarkId::new(name, n), |b| {
            b.iter_batched(
                || Routes::filled(layout, n),
                |mut routes| {
                    for id in &ids {
                        black_box(routes.index.remove(id));
                    }
                    routes
                },
                BatchSize::PerIteration,
            );
        });
    }
    group.finish();

    let mut group = c.benchmark_group("remove_insert");
    let mut routes = Routes::filled(Layout::Three, n);
    let order = shuffled(n);
    let mut next = 0;
    group.bench_function(BenchmarkId::new("steady", n), |b| {
        b.iter(|| {
            next = (next + 1) % order.len();
            let obj = route(order[next]);
            black_box(routes.index.remove(&obj.id()));
            black_box(routes.index.insert(obj, Placement::Append)).ok();
        });
    });
    group.finish();
}

/// A resync as the platform cache does it: mark everything, re-add what a fresh dump returns
/// (every route but one in ten, in the original order), sweep the rest.
fn resync<M: Measurement>(c: &mut Criterion<M>, n: u32) {
    let mut group = c.benchmark_group("resync");
    let dump: Vec<Route> = (0..n).filter(|i| i % 10 != 0).map(route).collect();
    group.throughput(Throughput::Elements(u64::from(n)));
    group.bench_function(BenchmarkId::new("mark_readd_sweep", n), |b| {
        b.iter_batched(
            || (Routes::filled(Layout::Three, n), dump.clone()),
            |(mut routes, dump)| {
                routes.index.mark_all();
                for obj in dump {
                    black_box(routes.index.insert(obj, Placement::Append)).ok();
                }
                black_box(routes.index.sweep());
                routes
            },
            BatchSize::PerIteration,
        );
    });
    group.finish();
}

fn iterate<M: Measurement>(c: &mut Criterion<M>, n: u32) {
    let mut group = c.benchmark_group("iterate");
    let routes = Routes::filled(Layout::Three, n);
    group.throughput(Throughput::Elements(u64::from(n)));
    group.bench_function(BenchmarkId::new("primary", n), |b| {
        b.iter(|| {
            routes
                .index
                .iter()
                .map(|obj| u64::from(obj.ifindex))
                .sum::<u64>()
        });
    });
    let by_ifindex = routes.by_ifindex.expect("three index types");
    group.bench_function(BenchmarkId::new("by_ifindex", n), |b| {
        b.iter(|| {
            routes
                .index
                .partitions(by_ifindex)
                .flat_map(|part| part.iter())
                .map(|obj| u64::from(obj.metric))
                .sum::<u64>()
        });
    });
    group.finish();
}

// The same operations on plain std-like containers, in the same run and right after the
// index's: a reference for what this machine's memory allows
// (`hashbrown::Map` keeps each key inline, at about three times the
// memory of the dedup index's id table). They share the benchmark group `baseline`.

/// `insert/fill` on the map: an `Arc` per object.
fn baseline_insert<M: Measurement>(c: &mut Criterion<M>, n: u32) {
    let mut group = c.benchmark_group("baseline");
    group.throughput(Throughput::Elements(u64::from(n)));
    let fresh: Vec<Route> = (0..n).map(route).collect();
    group.bench_function(BenchmarkId::new("hashmap_insert", n), |b| {
        b.iter_batched(
            || fresh.clone(),
            |fresh| {
                let mut map = Map::default();
                for obj in fresh {
                    black_box(map.insert(obj.id(), Arc::new(obj)));
                }
                map
            },
            BatchSize::PerIteration,
        );
    });
    group.finish();
}

/// `lookup/get` on the map, without and with reading the object found.
fn baseline_lookup<M: Measurement>(c: &mut Criterion<M>, n: u32) {
    let mut group = c.benchmark_group("baseline");
    let map: Map = (0..n)
        .map(|i| (route(i).id(), Arc::new(route(i))))
        .collect();
    let ids = shuffled_ids(n);
    let mut next = 0;
    group.bench_function(BenchmarkId::new("hashmap_get", n), |b| {
        b.iter(|| {
            next = (next + 1) % ids.len();
            black_box(map.get(&ids[next]))
        });
    });
    group.bench_function(BenchmarkId::new("hashmap_get_read", n), |b| {
        b.iter(|| {
            next = (next + 1) % ids.len();
            black_box(map.get(&ids[next]).map(|route| route.ifindex))
        });
    });
    drop(map);
    // The index's own indirection on the map's table: the map gives a slot number, the
    // object's handle is read from a vector by it.
    let (slots, objs) = slot_map(n);
    group.bench_function(BenchmarkId::new("slot_map_get_read", n), |b| {
        b.iter(|| {
            next = (next + 1) % ids.len();
            black_box(
                slots
                    .get(&ids[next])
                    .and_then(|&slot| objs.get(slot as usize)?.as_ref())
                    .map(|route| route.ifindex),
            )
        });
    });
    group.finish();
}

/// `remove/drain` on the map. The map owns the only handle of each object, so every removal
/// frees its object, as in `remove/drain`.
fn baseline_drain<M: Measurement>(c: &mut Criterion<M>, n: u32) {
    let mut group = c.benchmark_group("baseline");
    let ids = shuffled_ids(n);
    group.throughput(Throughput::Elements(u64::from(n)));
    group.bench_function(BenchmarkId::new("hashmap_drain", n), |b| {
        b.iter_batched(
            || {
                (0..n)
                    .map(|i| {
                        let obj = route(i);
                        (obj.id(), Arc::new(obj))
                    })
                    .collect::<Map>()
            },
            |mut map| {
                for id in &ids {
                    black_box(map.remove(id));
                }
                map
            },
            BatchSize::PerIteration,
        );
    });
    // With the index's indirection: the slot number out of the map, the handle out of the
    // vector (freeing the object).
    group.bench_function(BenchmarkId::new("slot_map_drain", n), |b| {
        b.iter_batched(
            || slot_map(n),
            |(mut slots, mut objs)| {
                for id in &ids {
                    let obj = slots
                        .remove(id)
                        .and_then(|slot| objs.get_mut(slot as usize)?.take());
                    black_box(obj);
                }
                (slots, objs)
            },
            BatchSize::PerIteration,
        );
    });
    group.finish();
}

/// `iterate/primary` on a plain vector of the objects.
fn baseline_iterate<M: Measurement>(c: &mut Criterion<M>, n: u32) {
    let mut group = c.benchmark_group("baseline");
    let objs: Vec<Arc<Route>> = (0..n).map(|i| Arc::new(route(i))).collect();
    group.throughput(Throughput::Elements(u64::from(n)));
    group.bench_function(BenchmarkId::new("vec_iterate", n), |b| {
        b.iter(|| objs.iter().map(|obj| u64::from(obj.ifindex)).sum::<u64>());
    });
    group.finish();
}
