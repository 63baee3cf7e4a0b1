//! dedup-index against `hashbrown::HashMap<Id, Arc<T>>` (issue #19's targets): the ratios of
//! the criterion run's own figures, and the 1M pairs measured again, several times over.
//!
//! At 1M objects both structures wait on memory, and a shared machine's memory latency drifts
//! by tens of percent within minutes: one run's ratio can be far off (the same code gave a
//! lookup ratio of 0.91 in one full run and 1.83 in the next). The repeats run each pair (the
//! index's operation, then the map's) in one criterion process of its own, a few times, and
//! report the median of the ratios with their spread.

use std::path::Path;
use std::process::Command;

use super::{CriterionResult, run_criterion};

/// The operations compared: the index's benchmark, the map's, and the target for the ratio.
const PAIRS: &[(&str, &str, &str, f64)] = &[
    ("insert", "insert/fill", "baseline/hashmap_insert", 1.0),
    ("lookup", "lookup/get", "baseline/hashmap_get_read", 1.0),
    ("remove", "remove/drain", "baseline/hashmap_drain", 1.3),
];

/// The ratios split at the index's indirection (the id table gives a slot number, the object's
/// handle is read from a vector by it): the operation, the index's benchmark, the map's with
/// the same indirection, and the plain map's. The index over the map with the indirection
/// compares the rest of the index's work with hashbrown's; that map over the plain one is
/// what the indirection costs.
const SPLITS: &[(&str, &str, &str, &str)] = &[
    (
        "lookup",
        "lookup/get",
        "baseline/slot_map_get_read",
        "baseline/hashmap_get_read",
    ),
    (
        "remove (3 index types)",
        "remove/drain",
        "baseline/slot_map_drain",
        "baseline/hashmap_drain",
    ),
    (
        "remove (id index type only)",
        "remove/drain_one",
        "baseline/slot_map_drain",
        "baseline/hashmap_drain",
    ),
];

/// How often each 1M pair is measured again.
const REPEATS: usize = 3;

/// The target for 1M's time per operation over 1k's.
const SCALING_TARGET: f64 = 3.0;

/// What the repeats measured: per repeat, the seconds of every benchmark it ran (the pairs'
/// and the splits').
pub(super) struct Repeats {
    seconds: Vec<Vec<(String, f64)>>,
    command: String,
    failures: Vec<String>,
}

impl Repeats {
    /// The repeats that failed, a line each.
    pub(super) fn failures(&self) -> &[String] {
        &self.failures
    }
}

/// Runs each 1M pair `REPEATS` times with the `ops` bench executable `exe` (in `folder`,
/// with `criterion_home` as its `CRITERION_HOME`), round-robin over the pairs.
pub(super) fn repeat_pairs(exe: &Path, folder: &Path, criterion_home: &Path) -> Repeats {
    let mut seconds = Vec::new();
    let mut failures = Vec::new();
    let mut command = String::new();
    for _ in 0..REPEATS {
        let mut this_repeat = Vec::new();
        for (_, index_id, map_id, _) in PAIRS {
            // With the pair, the benchmarks of the splits of the same map's operation.
            let mut ids = vec![*index_id, *map_id];
            for &(_, split_index, slot_map, _) in SPLITS.iter().filter(|split| split.3 == *map_id) {
                for id in [split_index, slot_map] {
                    if !ids.contains(&id) {
                        ids.push(id);
                    }
                }
            }
            let filter = format!("^({})/1000000$", ids.join("|"));
            let mut bench = Command::new(exe);
            bench
                .current_dir(folder)
                .env("CRITERION_HOME", criterion_home)
                .args(["--bench", "--color", "never", &filter]);
            if command.is_empty() {
                command = super::cmd::show(&bench)
                    .replace(&exe.display().to_string(), "BENCH_EXE")
                    .replace(&filter, "'^(INDEX_OP|MAP_OP|SPLIT_OPS)/1000000$'");
            }
            match run_criterion(&mut bench) {
                Ok((results, _)) => {
                    for id in &ids {
                        match seconds_of(&results, &format!("{id}/1000000")) {
                            Some(secs) if secs > 0.0 => this_repeat.push(((*id).to_owned(), secs)),
                            _ => failures.push(format!("`{filter}` gave no figure for `{id}`")),
                        }
                    }
                }
                Err(err) => failures.push(format!("`{filter}`: {err:#}")),
            }
        }
        seconds.push(this_repeat);
    }
    Repeats {
        seconds,
        command,
        failures,
    }
}

impl Repeats {
    /// The ratio of benchmark `over` to benchmark `under` in each repeat that ran both.
    fn ratios_of(&self, over: &str, under: &str) -> Vec<f64> {
        let of = |repeat: &[(String, f64)], id: &str| {
            repeat.iter().find(|(name, _)| name == id).map(|&(_, s)| s)
        };
        self.seconds
            .iter()
            // Only positive figures are kept (`repeat_pairs`).
            .filter_map(|repeat| Some(of(repeat, over)? / of(repeat, under)?))
            .collect()
    }
}

/// The median, least and greatest of `ratios`, if there are any.
fn spread(ratios: &[f64]) -> Option<(f64, f64, f64)> {
    let min = ratios.iter().copied().fold(f64::INFINITY, f64::min);
    let max = ratios.iter().copied().fold(0.0, f64::max);
    Some((median(ratios)?, min, max))
}

/// `ratios` as their median [min–max], or "–" without any.
fn summary(ratios: &[f64]) -> String {
    spread(ratios).map_or_else(
        || "–".to_owned(),
        |(mid, min, max)| format!("{mid:.2} [{min:.2}–{max:.2}]"),
    )
}

/// The label of the bench that prints the callgrind profile of the same operations.
pub(super) const PROFILE_BENCH: &str = "netmirror-dedup-index/profile";

/// The section of the report: ratios from the criterion run, then the repeats (if any ran),
/// then the lines of the profile bench (if it ran).
pub(super) fn markdown(
    results: &[CriterionResult],
    repeats: Option<&Repeats>,
    profile: Option<&[String]>,
) -> String {
    let ops: Vec<&CriterionResult> = results
        .iter()
        .filter(|result| result.bench == "netmirror-dedup-index/ops")
        .collect();
    let mut out = String::from("## dedup-index against hashbrown's HashMap\n\n");
    if ops.is_empty() {
        out.push_str("The `ops` bench of netmirror-dedup-index did not run.\n\n");
        return out;
    }
    out.push_str(
        "The index's time per operation over `hashbrown::HashMap<RouteId, Arc<Route>>` (foldhash's \
         fast hasher, hashbrown's default, with fixed seeds: see `benches/support/mod.rs`) doing the \
         same work (`insert/fill` over `baseline/hashmap_insert`, `lookup/get` over \
         `baseline/hashmap_get_read`, which reads the object it finds, `remove/drain` over \
         `baseline/hashmap_drain`, which frees each object), from the estimates of the criterion \
         table below; targets of #19: insert ≤ 1.0, lookup ≤ 1.0, remove ≤ 1.3.\n\n",
    );
    let sizes: Vec<u32> = [1_000, 100_000, 1_000_000]
        .into_iter()
        .filter(|n| {
            ops.iter()
                .any(|result| result.id == format!("{}/{n}", PAIRS[0].1))
        })
        .collect();
    out.push_str("| operation |");
    for n in &sizes {
        out.push_str(&format!(" {} |", size_name(*n)));
    }
    out.push_str(" target |\n| --- |");
    out.push_str(&" ---: |".repeat(sizes.len()));
    out.push_str(" ---: |\n");
    for (op, index_id, map_id, target) in PAIRS {
        out.push_str(&format!("| {op} |"));
        for n in &sizes {
            let ratio = ratio_at(&ops, index_id, map_id, *n);
            out.push_str(&format!(" {} |", show_ratio(ratio, *target)));
        }
        out.push_str(&format!(" ≤ {target} |\n"));
    }
    out.push('\n');
    if sizes.contains(&1_000) && sizes.contains(&1_000_000) {
        out.push_str(&format!(
            "Time per operation at 1M over 1k (target of #19: ≤ {SCALING_TARGET} for the \
             index), the map's own beside it: how much of the growth is the machine's memory \
             rather than the structure.\n\n\
             | operation | index 1M ÷ 1k | HashMap 1M ÷ 1k |\n| --- | ---: | ---: |\n"
        ));
        for (op, index_id, map_id, _) in PAIRS {
            let scaling = |id: &str| {
                let big = per_op_seconds(&ops, id, 1_000_000)?;
                let small = per_op_seconds(&ops, id, 1_000)?;
                (small > 0.0).then(|| big / small)
            };
            out.push_str(&format!(
                "| {op} | {} | {} |\n",
                show_ratio(scaling(index_id), SCALING_TARGET),
                scaling(map_id).map_or_else(|| "–".to_owned(), |r| format!("{r:.1}"))
            ));
        }
        out.push('\n');
    }
    if let Some(repeats) = repeats {
        out.push_str(&format!(
            "The 1M pairs again, each in a criterion process of its own (the index's operation, \
             then the map's), {REPEATS} times round-robin after the run above: the median \
             ratio [min–max]. Command: `{}`.\n\n\
             | operation | ratios | median [min–max] | target |\n| --- | --- | ---: | ---: |\n",
            repeats.command
        ));
        for (op, index_id, map_id, target) in PAIRS {
            let ratios = &repeats.ratios_of(index_id, map_id);
            let shown: Vec<String> = ratios.iter().map(|r| format!("{r:.2}")).collect();
            let summary = spread(ratios).map_or_else(
                || "–".to_owned(),
                |(mid, min, max)| format!("{} [{min:.2}–{max:.2}]", show_ratio(Some(mid), *target)),
            );
            out.push_str(&format!(
                "| {op} | {} | {summary} | ≤ {target} |\n",
                shown.join(", ")
            ));
        }
        out.push('\n');
        out.push_str(
            "The same repeats' ratios split at the index's indirection: its id table gives a slot \
             number, and the object's handle is read from a vector by it. \
             `baseline/slot_map_get_read` and `baseline/slot_map_drain` do the map's work with \
             that indirection: a `HashMap<RouteId, u32>` of slot numbers and a vector of \
             handles. The index over that map compares the rest of the index's work with \
             hashbrown's; that map over the plain one is what the indirection alone costs; \
             the two multiply to the index over the map. `remove/drain_one` is the index with \
             its id index type only (no list but the primary one).\n\n\
             | operation | index ÷ map | index ÷ map with the indirection | map with the \
             indirection ÷ map |\n| --- | ---: | ---: | ---: |\n",
        );
        for (op, index_id, slot_id, map_id) in SPLITS {
            out.push_str(&format!(
                "| {op} | {} | {} | {} |\n",
                summary(&repeats.ratios_of(index_id, map_id)),
                summary(&repeats.ratios_of(index_id, slot_id)),
                summary(&repeats.ratios_of(slot_id, map_id)),
            ));
        }
        out.push('\n');
        for failure in &repeats.failures {
            out.push_str(&format!("- failed: {}\n", failure.replace('\n', " ")));
        }
        if !repeats.failures.is_empty() {
            out.push('\n');
        }
    }
    if let Some(lines) = profile {
        out.push_str(
            "What each operation costs, counted by callgrind rather than timed (the same counts \
             whatever else the machine does): instructions, level 1 data cache misses and \
             last-level misses per operation, the index's over the map's, each operation run \
             once over every object (`cargo bench -p netmirror-dedup-index --bench profile`; \
             \"(1)\" is the index with its id index type only; the last two rows are not the \
             index but the map with its indirection, a map of slot numbers and a vector of \
             handles, over the plain map).\n\n```text\n",
        );
        for line in lines {
            out.push_str(line);
            out.push('\n');
        }
        out.push_str("```\n\n");
    }
    out
}

fn size_name(n: u32) -> String {
    match n {
        1_000_000 => "1M".to_owned(),
        n if n % 1_000 == 0 => format!("{}k", n / 1_000),
        n => n.to_string(),
    }
}

/// `ratio` to two places, in bold with "(missed)" when, so rounded, it is above `target`.
fn show_ratio(ratio: Option<f64>, target: f64) -> String {
    match ratio {
        None => "–".to_owned(),
        Some(ratio) if (ratio * 100.0).round() / 100.0 > target => {
            format!("**{ratio:.2}** (missed)")
        }
        Some(ratio) => format!("{ratio:.2}"),
    }
}

fn ratio_at(ops: &[&CriterionResult], index_id: &str, map_id: &str, n: u32) -> Option<f64> {
    let index = seconds_of(ops.iter().copied(), &format!("{index_id}/{n}"))?;
    let map = seconds_of(ops.iter().copied(), &format!("{map_id}/{n}"))?;
    (map > 0.0).then(|| index / map)
}

/// The time of one operation of benchmark `id` at size `n`: a benchmark that declares a
/// throughput (it prints one) times all `n` objects per iteration.
fn per_op_seconds(results: &[&CriterionResult], id: &str, n: u32) -> Option<f64> {
    let result = find(results.iter().copied(), &format!("{id}/{n}"))?;
    let seconds = estimate_seconds(&result.time)?;
    Some(match result.thrpt {
        Some(_) => seconds / f64::from(n),
        None => seconds,
    })
}

/// The estimate of benchmark `id` among `results`, in seconds.
fn seconds_of<'a>(results: impl IntoIterator<Item = &'a CriterionResult>, id: &str) -> Option<f64> {
    estimate_seconds(&find(results, id)?.time)
}

/// The result of benchmark `id` among `results`.
fn find<'a>(
    results: impl IntoIterator<Item = &'a CriterionResult>,
    id: &str,
) -> Option<&'a CriterionResult> {
    results.into_iter().find(|result| result.id == id)
}

/// The middle figure of criterion's `[low estimate high]`, in seconds.
fn estimate_seconds(time: &str) -> Option<f64> {
    let inner = time.trim().strip_prefix('[')?.strip_suffix(']')?;
    let words: Vec<&str> = inner.split_whitespace().collect();
    let [_, _, value, unit, _, _] = words.as_slice() else {
        return None;
    };
    let scale = match *unit {
        "ps" => 1e-12,
        "ns" => 1e-9,
        "µs" | "us" => 1e-6,
        "ms" => 1e-3,
        "s" => 1.0,
        _ => return None,
    };
    Some(value.parse::<f64>().ok()? * scale)
}

fn median(values: &[f64]) -> Option<f64> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    match n {
        0 => None,
        n if n % 2 == 1 => Some(sorted[n / 2]),
        n => Some(f64::midpoint(sorted[n / 2 - 1], sorted[n / 2])),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A result whose iteration handles all its objects (it declares a throughput).
    fn result(id: &str, time: &str) -> CriterionResult {
        CriterionResult {
            bench: "netmirror-dedup-index/ops".to_owned(),
            id: id.to_owned(),
            time: time.to_owned(),
            thrpt: Some("[1 elem/s 1 elem/s 1 elem/s]".to_owned()),
        }
    }

    /// A result timed per operation (no throughput).
    fn per_op(id: &str, time: &str) -> CriterionResult {
        CriterionResult {
            thrpt: None,
            ..result(id, time)
        }
    }

    #[test]
    fn estimates_are_read_in_their_unit() {
        assert_eq!(
            estimate_seconds("[82.390 µs 82.953 µs 83.495 µs]"),
            Some(82.953e-6)
        );
        assert_eq!(estimate_seconds("[1.0 s 2.5 s 3.0 s]"), Some(2.5));
        assert_eq!(estimate_seconds("[1.0 parsecs 2 3]"), None);
        assert_eq!(estimate_seconds("garbage"), None);
    }

    #[test]
    fn the_table_gives_each_ratio_and_marks_the_missed_ones() {
        let results = vec![
            result("insert/fill/1000", "[1.0 µs 1.0 µs 1.0 µs]"),
            result("baseline/hashmap_insert/1000", "[1.0 µs 2.0 µs 3.0 µs]"),
            result("insert/fill/1000000", "[1.0 ms 3.0 ms 5.0 ms]"),
            result("baseline/hashmap_insert/1000000", "[1.0 ms 2.0 ms 3.0 ms]"),
            result("remove/drain/1000000", "[1.0 ms 2.5 ms 3.0 ms]"),
            result("baseline/hashmap_drain/1000000", "[1.0 ms 2.0 ms 3.0 ms]"),
            per_op("lookup/get/1000", "[1.0 ns 10.0 ns 11.0 ns]"),
            per_op("lookup/get/1000000", "[1.0 ns 50.0 ns 51.0 ns]"),
        ];
        let seconds = |pairs: &[(&str, f64)]| {
            pairs
                .iter()
                .map(|&(id, s)| (id.to_owned(), s))
                .collect::<Vec<_>>()
        };
        let repeats = Repeats {
            seconds: vec![
                seconds(&[
                    ("insert/fill", 0.9),
                    ("baseline/hashmap_insert", 1.0),
                    ("lookup/get", 3.0),
                    ("baseline/slot_map_get_read", 2.0),
                    ("baseline/hashmap_get_read", 1.0),
                    ("remove/drain", 1.25),
                    ("baseline/hashmap_drain", 1.0),
                ]),
                seconds(&[
                    ("insert/fill", 1.2),
                    ("baseline/hashmap_insert", 1.0),
                    ("lookup/get", 4.0),
                    ("baseline/slot_map_get_read", 4.0),
                    ("baseline/hashmap_get_read", 2.0),
                ]),
                seconds(&[("insert/fill", 0.8), ("baseline/hashmap_insert", 1.0)]),
            ],
            command: "BENCH_EXE".to_owned(),
            failures: vec!["one failed".to_owned()],
        };
        let profile = ["profile line".to_owned()];
        let text = markdown(&results, Some(&repeats), Some(&profile));
        // 1k: 1.0 / 2.0; 1M: 3.0 / 2.0 (missed); remove 1M 1.25.
        assert!(
            text.contains("| insert | 0.50 | **1.50** (missed) | ≤ 1 |"),
            "{text}"
        );
        assert!(text.contains("| remove | – | 1.25 | ≤ 1.3 |"), "{text}");
        // 1M over 1k per object: the index 3.0 ms / 1M over 1.0 µs / 1k = 3.0, the map 1.0;
        // a lookup is timed per operation: 5.0.
        assert!(text.contains("| insert | 3.00 | 1.0 |"), "{text}");
        assert!(
            text.contains("| lookup | **5.00** (missed) | – |"),
            "{text}"
        );
        assert!(
            text.contains("| insert | 0.90, 1.20, 0.80 | 0.90 [0.80–1.20] | ≤ 1 |"),
            "{text}"
        );
        assert!(
            text.contains("| lookup | 3.00, 2.00 | **2.50** (missed) [2.00–3.00] | ≤ 1 |"),
            "{text}"
        );
        assert!(
            text.contains("| remove | 1.25 | 1.25 [1.25–1.25] | ≤ 1.3 |"),
            "{text}"
        );
        // Lookup: 3/1 and 4/2 over the map, 3/2 and 4/4 over the slot map, 2/1 and 4/2 for
        // the indirection; no repeat ran the slot map's drain.
        assert!(
            text.contains("| lookup | 2.50 [2.00–3.00] | 1.25 [1.00–1.50] | 2.00 [2.00–2.00] |"),
            "{text}"
        );
        assert!(
            text.contains("| remove (3 index types) | 1.25 [1.25–1.25] | – | – |"),
            "{text}"
        );
        assert!(text.contains("- failed: one failed"), "{text}");
        assert!(text.contains("```text\nprofile line\n```"), "{text}");
    }
}
