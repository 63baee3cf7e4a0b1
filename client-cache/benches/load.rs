//! Criterion benchmarks: decoding and applying a `GetManagedObjects` reply of 10k and 100k
//! mock objects (declared interface, one reference each, plus an undeclared interface), to
//! show that the cost per object stays flat. Throughput is reported per object; serializing
//! the reply and dropping the cache are outside the timed part.
//!
//! With `NETMIRROR_BENCH_QUICK=1` (set by `cargo xtask bench --quick`) the sizes are 1k and 10k
//! objects, to keep a quick run short.

use std::{collections::HashMap, hint::black_box};

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use netmirror_client_cache::{InterfaceDecl, Registry, bench_support::PreparedLoad};
use zbus::{OwnedObjectPath, OwnedVariant, Variant};

type Objects = HashMap<OwnedObjectPath, HashMap<String, HashMap<String, OwnedVariant>>>;

fn v<'a>(x: impl Into<Variant<'a>>) -> OwnedVariant {
    OwnedVariant::try_from(x.into()).expect("no fds")
}

fn objects(n: usize) -> Objects {
    (0..n)
        .map(|i| {
            let mut node = HashMap::new();
            node.insert("Name".to_owned(), v(format!("node-{i}")));
            node.insert("Count".to_owned(), v(i as u32));
            node.insert(
                "Peer".to_owned(),
                v(OwnedObjectPath::try_from(format!("/n/{}", (i + 1) % n)).unwrap()),
            );
            let mut other = HashMap::new();
            other.insert("Flag".to_owned(), v(i % 2 == 0));
            let mut ifaces = HashMap::new();
            ifaces.insert("org.example.Node".to_owned(), node);
            ifaces.insert("org.example.Other".to_owned(), other);
            (
                OwnedObjectPath::try_from(format!("/n/{i}")).unwrap(),
                ifaces,
            )
        })
        .collect()
}

fn registry() -> Registry {
    Registry::generic().with(InterfaceDecl::new(
        "org.example.Node",
        [
            ("Name", "s", None),
            ("Count", "u", None),
            ("Peer", "o", Some("org.example.Node")),
        ],
    ))
}

/// Whether `cargo xtask bench --quick` asked for smaller sizes.
fn quick() -> bool {
    std::env::var_os("NETMIRROR_BENCH_QUICK").is_some_and(|value| value == "1")
}

fn load(c: &mut Criterion) {
    let mut group = c.benchmark_group("load/get_managed_objects");
    group.sample_size(10);
    let sizes: &[usize] = if quick() {
        &[1_000, 10_000]
    } else {
        &[10_000, 100_000]
    };
    for &n in sizes {
        let body = (objects(n),);
        let check = PreparedLoad::new(registry(), &body).expect("reply").apply();
        assert_eq!(check.visible(), n, "a ring of references: all visible");
        group.throughput(Throughput::Elements(n as u64));
        group.bench_function(format!("{n}"), |b| {
            b.iter_batched(
                || PreparedLoad::new(registry(), &body).expect("reply"),
                |prepared| black_box(prepared.apply()),
                BatchSize::PerIteration,
            )
        });
    }
    group.finish();
}

criterion_group!(benches, load);
criterion_main!(benches);
