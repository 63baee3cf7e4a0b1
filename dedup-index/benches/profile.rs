//! What each operation of the `ops` bench costs in instructions and cache misses, the index
//! beside `hashbrown::Map`: the profile behind the time ratios.
//!
//! At 1M objects both structures wait on memory, and on a shared machine the time ratios
//! drift by tens of percent between runs. Callgrind's counts do not: it runs each operation
//! over every object once (insert from empty, lookup and read the object, remove and free it),
//! counting only inside the operation (`--toggle-collect`), with its cache simulation set to
//! this machine's level 1 data cache and last-level cache (`--D1=32768,8,64`,
//! `--LL=33554432,16,64`). The table gives, per operation: instructions, level 1 data misses
//! (reads and writes; they hit in the level 2 or 3 cache or go to memory) and last-level
//! misses (memory accesses), and the index's count over the map's.
//!
//! `cargo bench -p netmirror-dedup-index --bench profile` (needs `valgrind`): 1k and 1M
//! objects; 1k and 100k with `NETMIRROR_BENCH_QUICK=1`. Without `--bench` (as under
//! `cargo test --benches`) it only runs each operation once at 1k, natively, counting nothing.
//! `profile run OP N` runs one operation (what callgrind is given).

mod support;

use std::hint::black_box;
use std::io::Write;
use std::path::Path;
use std::process::{Command, ExitCode};
use std::sync::Arc;

use netmirror_dedup_index::{Object, Placement};
use support::{Layout, Map, Route, Routes, route, shuffled_ids, slot_map};

/// The operations profiled: the index's, the map's doing the same work, and a label. The last
/// two rows put the map with the index's indirection (a map of slot numbers by id, the
/// handles in a vector by slot) in the index's place: what the indirection alone costs.
const PAIRS: &[(&str, &str, &str)] = &[
    ("insert", "map_insert", "insert (3 index types)"),
    ("lookup", "map_lookup", "lookup, reading the object (3)"),
    ("remove", "map_remove", "remove, freeing the object (3)"),
    ("remove_one", "map_remove", "remove, freeing the object (1)"),
    // Not the index: the map with the index's indirection, over the plain map.
    ("slot_map_lookup", "map_lookup", "lookup: slot map + vector"),
    ("slot_map_remove", "map_remove", "remove: slot map + vector"),
];

/// The work callgrind counts: everything inside, nothing outside.
#[inline(never)]
fn measured<R>(work: impl FnOnce() -> R) -> R {
    work()
}

/// Runs operation `op` over `n` objects. False for an unknown operation.
fn run_op(op: &str, n: u32) -> bool {
    let ids = shuffled_ids(n);
    let fresh: Vec<Route> = (0..n).map(route).collect();
    let map_of = |fresh: Vec<Route>| -> Map {
        fresh
            .into_iter()
            .map(|obj| (obj.id(), Arc::new(obj)))
            .collect()
    };
    match op {
        "insert" => {
            let routes = measured(|| {
                let mut routes = Routes::new(Layout::Three);
                for obj in fresh {
                    black_box(routes.index.insert(obj, Placement::Append)).ok();
                }
                routes
            });
            black_box(routes.index.len());
        }
        "lookup" => {
            let routes = Routes::filled(Layout::Three, n);
            let sum = measured(|| {
                ids.iter()
                    .filter_map(|id| routes.index.get(id))
                    .map(|obj| u64::from(obj.ifindex))
                    .sum::<u64>()
            });
            black_box(sum);
        }
        "remove" | "remove_one" => {
            let layout = if op == "remove" {
                Layout::Three
            } else {
                Layout::One
            };
            let mut routes = Routes::filled(layout, n);
            measured(|| {
                for id in &ids {
                    black_box(routes.index.remove(id));
                }
            });
        }
        "map_insert" => {
            let map = measured(|| {
                let mut map = Map::default();
                for obj in fresh {
                    black_box(map.insert(obj.id(), Arc::new(obj)));
                }
                map
            });
            black_box(map.len());
        }
        "map_lookup" => {
            let map = map_of(fresh);
            let sum = measured(|| {
                ids.iter()
                    .filter_map(|id| map.get(id))
                    .map(|obj| u64::from(obj.ifindex))
                    .sum::<u64>()
            });
            black_box(sum);
        }
        "map_remove" => {
            let mut map = map_of(fresh);
            measured(|| {
                for id in &ids {
                    black_box(map.remove(id));
                }
            });
        }
        "slot_map_lookup" => {
            let (slots, objs) = slot_map(n);
            let sum = measured(|| {
                ids.iter()
                    .filter_map(|id| objs.get(*slots.get(id)? as usize)?.as_ref())
                    .map(|obj| u64::from(obj.ifindex))
                    .sum::<u64>()
            });
            black_box(sum);
        }
        "slot_map_remove" => {
            let (mut slots, mut objs) = slot_map(n);
            measured(|| {
                for id in &ids {
                    let obj = slots
                        .remove(id)
                        .and_then(|slot| objs.get_mut(slot as usize)?.take());
                    black_box(obj);
                }
            });
        }
        _ => return false,
    }
    true
}

/// Callgrind's counts per operation: instructions, level 1 data misses, last-level misses.
#[derive(Debug, Clone, Copy)]
struct Counts {
    ir: f64,
    d1: f64,
    ll: f64,
}

/// The counts in callgrind's output `text`, divided by `n`.
fn parse_counts(text: &str, n: u32) -> Option<Counts> {
    let events: Vec<&str> = text
        .lines()
        .find_map(|line| line.strip_prefix("events:"))?
        .split_whitespace()
        .collect();
    let totals: Vec<f64> = text
        .lines()
        .find_map(|line| {
            line.strip_prefix("summary:")
                .or_else(|| line.strip_prefix("totals:"))
        })?
        .split_whitespace()
        .map(|count| count.parse().ok())
        .collect::<Option<_>>()?;
    let sum = |names: &[&str]| -> Option<f64> {
        names
            .iter()
            .map(|name| {
                let at = events.iter().position(|event| event == name)?;
                Some(totals.get(at).copied().unwrap_or(0.0))
            })
            .sum::<Option<f64>>()
            .map(|count| count / f64::from(n))
    };
    Some(Counts {
        ir: sum(&["Ir"])?,
        d1: sum(&["D1mr", "D1mw"])?,
        ll: sum(&["DLmr", "DLmw"])?,
    })
}

/// Starts `exe run OP N` under callgrind, writing its counts to `out`.
fn start(exe: &Path, op: &str, n: u32, out: &Path) -> std::io::Result<std::process::Child> {
    Command::new("valgrind")
        .args([
            "--tool=callgrind",
            "--cache-sim=yes",
            "--D1=32768,8,64",
            "--LL=33554432,16,64",
            "--collect-atstart=no",
            "--toggle-collect=*measured*",
        ])
        .arg(format!("--callgrind-out-file={}", out.display()))
        .arg(exe)
        .args(["run", op, &n.to_string()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
}

/// Profiles each of `ops` at `n` objects, two at a time (the counts do not depend on what
/// else runs). Every child started is waited for, whatever fails.
fn profile_all<'a>(
    exe: &Path,
    dir: &Path,
    ops: &[&'a str],
    n: u32,
) -> Vec<(&'a str, Result<Counts, String>)> {
    let mut counts = Vec::new();
    for two in ops.chunks(2) {
        let started: Vec<_> = two
            .iter()
            .map(|op| {
                let out = dir.join(format!("callgrind.{op}.{n}"));
                let child = start(exe, op, n, &out);
                (*op, out, child)
            })
            .collect();
        for (op, out, child) in started {
            let result = child
                .and_then(|mut child| child.wait())
                .map_err(|err| format!("cannot run valgrind: {err}"))
                .and_then(|status| {
                    if !status.success() {
                        return Err(format!("callgrind of `{op} {n}` failed: {status}"));
                    }
                    let text = std::fs::read_to_string(&out)
                        .map_err(|err| format!("{}: {err}", out.display()))?;
                    parse_counts(&text, n).ok_or_else(|| format!("no counts in {}", out.display()))
                });
            counts.push((op, result));
        }
    }
    counts
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [run, op, n] = args.as_slice()
        && run == "run"
    {
        let ok = n.parse().is_ok_and(|n| run_op(op, n));
        return if ok {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        };
    }
    if !args.iter().any(|arg| arg == "--bench") {
        // A smoke run of every operation (`cargo test --benches`).
        let all_ran = PAIRS
            .iter()
            .all(|(index_op, map_op, _)| run_op(index_op, 1_000) && run_op(map_op, 1_000));
        return if all_ran {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        };
    }
    let sizes: &[u32] = if support::quick() {
        &[1_000, 100_000]
    } else {
        &[1_000, 1_000_000]
    };
    let dir = std::env::temp_dir().join(format!("dedup-profile.{}", std::process::id()));
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(err) => {
            eprintln!("profile: cannot find this executable: {err}");
            return ExitCode::FAILURE;
        }
    };
    if let Err(err) = std::fs::create_dir_all(&dir) {
        eprintln!("profile: cannot make {}: {err}", dir.display());
        return ExitCode::FAILURE;
    }
    let mut out = std::io::stdout().lock();
    let header = writeln!(
        out,
        "dedup-index cache profile (callgrind, D1 32 KiB, LL 32 MiB): per operation, \
         index / HashMap = ratio\n{:<32} {:>5} {:>24} {:>24} {:>24}",
        "operation (index types)", "n", "instructions", "L1 data misses", "last-level misses"
    );
    let mut failed = header.is_err();
    // Each operation once (the map's remove serves both remove rows).
    let mut ops: Vec<&str> = Vec::new();
    for (index_op, map_op, _) in PAIRS {
        for op in [*index_op, *map_op] {
            if !ops.contains(&op) {
                ops.push(op);
            }
        }
    }
    for &n in sizes {
        let counts = profile_all(&exe, &dir, &ops, n);
        for (_, result) in &counts {
            if let Err(err) = result {
                eprintln!("profile: {err}");
                failed = true;
            }
        }
        let of = |op: &str| {
            counts
                .iter()
                .find(|(name, _)| *name == op)
                .and_then(|(_, result)| result.as_ref().ok())
        };
        for (index_op, map_op, label) in PAIRS {
            let (Some(index), Some(map)) = (of(index_op), of(map_op)) else {
                continue;
            };
            // No ratio where the map has (next to) no count: 0 / 0 says nothing.
            let cell = |a: f64, b: f64, digits: usize| {
                if b >= 0.01 {
                    format!("{a:.digits$} / {b:.digits$} = {:.2}", a / b)
                } else {
                    format!("{a:.digits$} / {b:.digits$}")
                }
            };
            let row = writeln!(
                out,
                "{label:<32} {:>5} {:>24} {:>24} {:>24}",
                if n >= 1_000_000 {
                    format!("{}M", n / 1_000_000)
                } else {
                    format!("{}k", n / 1_000)
                },
                cell(index.ir, map.ir, 0),
                cell(index.d1, map.d1, 2),
                cell(index.ll, map.ll, 2),
            );
            failed |= row.is_err();
        }
    }
    std::fs::remove_dir_all(&dir).ok();
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
