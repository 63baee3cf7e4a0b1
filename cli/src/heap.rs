//! How much memory a loaded cache holds, for `route count`.
//!
//! By default `route count` reports how much the process's resident memory grew while the cache
//! loaded (`VmRSS` in `/proc/self/status`), which costs nothing at run time. Built with the
//! `heap-stats` feature, the binary's global allocator is `stats_alloc`'s counting wrapper of the
//! system allocator, and `route count` reports the exact heap: bytes allocated and not freed
//! while the cache loaded. That wrapper adds two atomic operations to every allocation of every
//! command, so it is only there when asked for.
//!
//! Otherwise the binary runs on the system allocator (glibc's malloc), on purpose. Measured
//! for issue #19 against it (builds without LTO, the same namespaces, alternated runs):
//! mimalloc 0.1.52 (its v3 and v2) cut the instructions of a 600k-route load by 9-12 %
//! (callgrind), but neither it nor tikv-jemallocator 0.7 cut its CPU time (231-250 ms on glibc,
//! 253-430 on the others, medians of 7-9 runs); they took 151-183 bytes per route against
//! glibc's 122 (mimalloc matches glibc only with purging delay and arena eager commit turned
//! off at run time), and `monitor route` applied a 100k-route burst no cheaper (150-190 ms of
//! CPU on glibc, 170-390 on the others).

/// What [`Meter`] measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Measure {
    /// Heap bytes held (the counting allocator).
    Heap,
    /// Growth of the resident set.
    Resident,
}

impl Measure {
    /// The words for people: `cache heap 12.3 MiB`.
    pub(crate) fn label(self) -> &'static str {
        match self {
            Measure::Heap => "cache heap",
            Measure::Resident => "cache resident memory",
        }
    }

    /// The JSON keys: the total and the bytes per route.
    pub(crate) fn json_keys(self) -> (&'static str, &'static str) {
        match self {
            Measure::Heap => ("cache_heap_bytes", "heap_bytes_per_route"),
            Measure::Resident => ("cache_resident_bytes", "resident_bytes_per_route"),
        }
    }
}

/// Measures the memory taken between [`Meter::start`] and [`Meter::used`].
pub(crate) struct Meter {
    start: usize,
}

impl Meter {
    /// What this build measures.
    pub(crate) const MEASURE: Measure = if cfg!(feature = "heap-stats") {
        Measure::Heap
    } else {
        Measure::Resident
    };

    /// Starts measuring now.
    pub(crate) fn start() -> Meter {
        Meter { start: now() }
    }

    /// Bytes taken since the start (0 if the process shrank).
    pub(crate) fn used(&self) -> usize {
        now().saturating_sub(self.start)
    }
}

#[cfg(feature = "heap-stats")]
mod counting {
    use std::alloc::System;

    use stats_alloc::{INSTRUMENTED_SYSTEM, StatsAlloc};

    #[global_allocator]
    static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

    /// Bytes allocated and not yet freed by the whole process.
    pub(super) fn held() -> usize {
        let stats = GLOBAL.stats();
        stats
            .bytes_allocated
            .saturating_sub(stats.bytes_deallocated)
    }
}

#[cfg(feature = "heap-stats")]
fn now() -> usize {
    counting::held()
}

/// The process's resident set in bytes, from `VmRSS` (0 when it cannot be read).
#[cfg(not(feature = "heap-stats"))]
fn now() -> usize {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status.lines().find_map(|line| {
                let kib = line.strip_prefix("VmRSS:")?.trim().strip_suffix("kB")?;
                kib.trim().parse::<usize>().ok()
            })
        })
        .map_or(0, |kib| kib * 1024)
}

/// Bytes for people: `12.3 MiB`.
pub(crate) fn human(bytes: usize) -> String {
    const UNITS: [&str; 4] = ["B", "KiB", "MiB", "GiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_meter_sees_memory_that_is_taken_and_touched() {
        let meter = Meter::start();
        // 64 MiB, every page written, so it is resident (and on the heap).
        let block = vec![1u8; 64 << 20];
        let used = meter.used();
        assert!(block.iter().step_by(4096).all(|&b| b == 1));
        assert!(used >= 60 << 20, "{used} bytes");
    }
}
