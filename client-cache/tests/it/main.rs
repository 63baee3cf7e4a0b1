//! The client cache's integration tests: one test binary, with a module per topic. Tests that
//! need root live under `privileged` (feature `privileged`).

use std::alloc::System;

use stats_alloc::{INSTRUMENTED_SYSTEM, StatsAlloc};

/// Every test of this binary allocates through `stats_alloc`'s counting wrapper of the system
/// allocator, so that a test can read the heap the process holds ([`heap_kib`]): the resident
/// set only follows it from afar (glibc keeps freed memory in its arenas, a thread's arena
/// grows apart from the others).
#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// The heap the process holds (bytes allocated and not yet freed), in KiB.
fn heap_kib() -> u64 {
    let stats = GLOBAL.stats();
    let held = stats
        .bytes_allocated
        .saturating_sub(stats.bytes_deallocated);
    u64::try_from(held / 1024).unwrap_or(u64::MAX)
}

mod cache;
mod env_opt_in;
mod hostile;
mod mock;
mod private_bus;
#[cfg(feature = "privileged")]
mod privileged;
mod replay;
mod support;
mod ui;
