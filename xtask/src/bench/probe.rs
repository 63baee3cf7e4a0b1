//! Two readings of the machine, taken at the start and at the end of a run and printed with
//! its description: what a system call costs, and what a read from memory that depends on the
//! read before it costs.
//!
//! The ratios of the report are of two kinds, and the machine moves them in opposite ways.
//! The cache load and the monitor burst are measured against the kernel's own work (a raw
//! dump, `ip monitor`), so where system calls and page faults are dear (a virtual machine
//! nested in another, say) netmirror's user-space share weighs less and the ratios improve.
//! dedup-index at 1M is measured against `HashMap`, both waiting on memory, so where a cache
//! and TLB miss is dear the structure with more dependent reads falls further behind. Two runs
//! on different machines (the project's machine is not always the same hardware) are read
//! side by side with these two figures.

use std::hint::black_box;
use std::time::Instant;

/// How many system calls are timed.
const SYSCALLS: u32 = 200_000;
/// The size of the pointer chase: twice a last-level cache of 32 MiB (the AMD EPYC the project
/// ran on in December 2026 has one, and the `profile` bench simulates one), and over many more
/// 4 KiB pages than a TLB maps.
const CHASE_BYTES: usize = 64 << 20;
/// How many dependent reads are timed.
const CHASE_STEPS: u32 = 2_000_000;

/// One reading of the machine.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Reading {
    /// Nanoseconds per `getpid` (a system call that does almost nothing in the kernel).
    pub(crate) syscall_ns: f64,
    /// Nanoseconds per read of a random cycle through [`CHASE_BYTES`], each read's address
    /// taken from the read before.
    pub(crate) chase_ns: f64,
}

impl Reading {
    /// Takes the reading (about a second on the project's machine, most of it building the
    /// cycle).
    pub(crate) fn take() -> Self {
        Self {
            syscall_ns: syscall_ns(),
            chase_ns: chase_ns(),
        }
    }

    /// The reading as a table cell.
    pub(crate) fn cell(self) -> String {
        format!(
            "system call {:.0} ns, dependent random read {:.0} ns",
            self.syscall_ns, self.chase_ns
        )
    }
}

/// Nanoseconds per system call: `std::process::id` is `getpid`, which glibc does not cache.
fn syscall_ns() -> f64 {
    let started = Instant::now();
    let mut sum = 0u64;
    for _ in 0..SYSCALLS {
        sum = sum.wrapping_add(u64::from(std::process::id()));
    }
    black_box(sum);
    started.elapsed().as_nanos() as f64 / f64::from(SYSCALLS)
}

/// Nanoseconds per dependent read: a single cycle through every entry of an array of `u32`
/// (Sattolo's shuffle), followed from entry to entry.
fn chase_ns() -> f64 {
    let next = cycle(CHASE_BYTES / size_of::<u32>(), 0x9e37_79b9_7f4a_7c15);
    let mut at = 0u32;
    let started = Instant::now();
    for _ in 0..CHASE_STEPS {
        at = next[at as usize];
    }
    black_box(at);
    started.elapsed().as_nanos() as f64 / f64::from(CHASE_STEPS)
}

/// `n` entries, each the index of the next in one random cycle through all of them: a
/// permutation shuffled by Sattolo's algorithm (which swaps each entry only with one below it)
/// is a single cycle.
fn cycle(n: usize, seed: u64) -> Vec<u32> {
    let mut next: Vec<u32> = (0..n as u32).collect();
    let mut rng = XorShift(seed);
    for i in (1..n).rev() {
        let j = (rng.next() % i as u64) as usize;
        next.swap(i, j);
    }
    next
}

/// A small fast generator: the shuffle needs no quality beyond spreading the entries.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shuffled_array_is_one_cycle_through_every_entry() {
        let n = 1000usize;
        let next = cycle(n, 1);
        let mut seen = vec![false; n];
        let mut at = 0u32;
        for _ in 0..n {
            assert!(!seen[at as usize], "entry {at} visited twice");
            seen[at as usize] = true;
            at = next[at as usize];
        }
        assert_eq!(at, 0, "the walk ends where it started");
        assert!(seen.iter().all(|&s| s));
    }
}
