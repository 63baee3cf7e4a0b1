//! Heap bytes per object of a dedup index of route-like objects (40 bytes each), measured with a
//! counting global allocator, for 1, 3 and 4 index types.
//!
//! Run with `cargo bench -p netmirror-dedup-index --bench memory` (1M routes; 100k with
//! `NETMIRROR_BENCH_QUICK=1`, as `cargo xtask bench --quick` sets); under
//! `cargo test --benches` it runs with 10k routes so that it stays quick. It prints the bytes
//! the allocator was asked for, an estimate of what glibc's malloc really uses for them
//! (16-byte granules, 8 bytes of header, 32 bytes at least), the peak while filling (a growing
//! `Vec` briefly holds its old and new buffer), and both again after `shrink_to_fit`.

mod support;

use std::alloc::{GlobalAlloc, Layout as AllocLayout, System};
use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};

use support::{Layout, Routes};

/// Counts live heap bytes: as requested, and as glibc's malloc would round them.
struct Counting;

static REQUESTED: AtomicUsize = AtomicUsize::new(0);
static CHUNKS: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

/// The size of the glibc chunk that serves a request of `size` bytes.
fn chunk(size: usize) -> usize {
    (size + 8).div_ceil(16).max(2) * 16
}

/// Records `new` bytes allocated and `old` bytes freed (a realloc does both).
fn count(new: Option<usize>, old: Option<usize>) {
    if let Some(size) = new {
        let now = REQUESTED.fetch_add(size, Ordering::Relaxed) + size;
        PEAK.fetch_max(now, Ordering::Relaxed);
        CHUNKS.fetch_add(chunk(size), Ordering::Relaxed);
    }
    if let Some(size) = old {
        REQUESTED.fetch_sub(size, Ordering::Relaxed);
        CHUNKS.fetch_sub(chunk(size), Ordering::Relaxed);
    }
}

// SAFETY: every method forwards to `System` with the caller's arguments unchanged and only
// updates counters.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: AllocLayout) -> *mut u8 {
        count(Some(layout.size()), None);
        // SAFETY: forwarded as received.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: AllocLayout) {
        count(None, Some(layout.size()));
        // SAFETY: forwarded as received.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: AllocLayout, new_size: usize) -> *mut u8 {
        count(Some(new_size), Some(layout.size()));
        // SAFETY: forwarded as received.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn live() -> (usize, usize) {
    (
        REQUESTED.load(Ordering::Relaxed),
        CHUNKS.load(Ordering::Relaxed),
    )
}

fn main() -> std::io::Result<()> {
    let full = std::env::args().any(|arg| arg == "--bench");
    let n: u32 = match (full, support::quick()) {
        (true, false) => 1_000_000,
        (true, true) => 100_000,
        (false, _) => 10_000,
    };
    let route_size = size_of::<support::Route>();
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "dedup-index memory: {n} routes of {route_size} bytes; heap bytes per object"
    )?;
    writeln!(
        out,
        "(of which the Arc<Route> alone: {} requested, {} as a glibc chunk)",
        route_size + 16,
        chunk(route_size + 16)
    )?;
    writeln!(
        out,
        "{:<36} {:>10} {:>10} {:>10} {:>12} {:>12}",
        "index types", "requested", "glibc est", "peak", "shrunk req", "shrunk glibc"
    )?;
    for layout in [Layout::One, Layout::Three, Layout::Four, Layout::FourWeakId] {
        let before = live();
        PEAK.store(before.0, Ordering::Relaxed);
        let mut routes = Routes::filled(layout, n);
        let after = live();
        let peak = PEAK.load(Ordering::Relaxed);
        routes.index.shrink_to_fit();
        let shrunk = live();
        let per = |after: usize, before: usize| (after - before) as f64 / f64::from(n);
        writeln!(
            out,
            "{:<36} {:>10.1} {:>10.1} {:>10.1} {:>12.1} {:>12.1}",
            layout.label(),
            per(after.0, before.0),
            per(after.1, before.1),
            per(peak, before.0),
            per(shrunk.0, before.0),
            per(shrunk.1, before.1),
        )?;
        assert_eq!(routes.index.len(), n as usize, "every route is distinct");
        drop(routes);
    }
    Ok(())
}
