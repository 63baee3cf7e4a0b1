//! `cargo xtask bench [--quick]`: the criterion benches of every crate, then the whole-process
//! comparisons against `nmcli`, `ip` and `busctl` (the `compare` bench of the `netmirror`
//! package), written with the machine they ran on to `BENCHMARKS.md`.
//!
//! xtask depends on none of the workspace's crates: the comparisons live in
//! `cli/benches/compare.rs`, which can use the crates' test fixtures, and hand their Markdown
//! back through the file named by `NETMIRROR_BENCH_REPORT`. Criterion's figures are read from
//! its own output as it runs. Only numbers this command produced go into the file.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{Context, bail};

use crate::{cmd, symbol_order, system};

mod dedup;
mod probe;

const USAGE: &str = "\
usage: cargo xtask bench [--quick] [--only N,...] [--no-criterion] [--out PATH]

  --quick          smaller sizes and shorter criterion measurements
  --quick-criterion  full-size comparisons, shorter criterion measurements only
  --only N,...     only these comparison scenarios (1 NetworkManager, 2 route loads,
                   3 filtered query, 4 monitor burst, 5 batch, 6 D-Bus round trip,
                   7 NetworkManager actions: connection up, modify x500)
  --no-criterion   skip the criterion benches
  --no-compare     skip the whole-process comparisons
  --out PATH       write the report there instead of BENCHMARKS.md

Run as root: the comparisons make network namespaces and sandbox NetworkManager. As a
regular user only the criterion benches and the D-Bus round trip (scenario 6) run; the
report says which scenarios were not run.

How long it takes on a 2-core machine (measured 2026-11-30, with other builds running):
  --quick  6-7 min: 2.6 min measuring (criterion 1.7, comparisons 1), plus 3-4.5 min of
           incremental builds when sources changed (one `cargo bench --no-run` for the
           criterion benches, one for the comparisons; seconds when nothing changed, more
           from an empty target dir)
  full     15-21 min (measured 15.6 min on 2026-12-04): criterion's defaults 8.9 min
           (dedup-index ops 3.8 of them, its callgrind profile 1), the dedup-index 1M pairs
           again 2.3 min, comparisons 4.4 min, builds seconds after a previous build
";

/// What the report says about the durations `--help` gives (`USAGE` above).
const TYPICAL_DURATIONS: &str = "On the project's 2-core machine a `--quick` run takes 6-7 \
     min (2.6 of them measuring, the rest building what changed) and a full run 15-21 min (criterion's \
     defaults about 9 of them); those are typical durations, not this run's, which are under \
     [Run time](#run-time).";

/// Criterion's options for `--quick` (with `NETMIRROR_BENCH_QUICK=1`, for smaller sizes):
/// short warm-up and measurement, fewer bootstrap resamples for the confidence intervals.
const QUICK_CRITERION: &[&str] = &[
    "--warm-up-time",
    "0.5",
    "--measurement-time",
    "1",
    "--nresamples",
    "10000",
];

/// Criterion's options for `--quick-criterion`: full sizes, shorter measurements.
const SHORT_CRITERION: &[&str] = &["--warm-up-time", "1", "--measurement-time", "2"];

/// What the command line asked for.
#[derive(Debug)]
struct Options {
    quick: bool,
    quick_criterion: bool,
    only: Option<String>,
    criterion: bool,
    compare: bool,
    out: PathBuf,
}

fn parse(root: &Path, args: &[String]) -> anyhow::Result<Options> {
    let mut options = Options {
        quick: false,
        quick_criterion: false,
        only: None,
        criterion: true,
        compare: true,
        out: root.join("BENCHMARKS.md"),
    };
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--quick" => options.quick = true,
            "--quick-criterion" => options.quick_criterion = true,
            "--no-criterion" => options.criterion = false,
            "--no-compare" => options.compare = false,
            "--only" => options.only = Some(args.next().context("--only needs N,...")?.clone()),
            "--out" => options.out = PathBuf::from(args.next().context("--out needs a path")?),
            "-h" | "--help" => {
                eprint!("{USAGE}");
                std::process::exit(0);
            }
            other => bail!("unknown option `{other}` for `cargo xtask bench`\n\n{USAGE}"),
        }
    }
    Ok(options)
}

pub(crate) fn run(root: &Path, args: &[String]) -> anyhow::Result<()> {
    let options = parse(root, args)?;
    let started = Instant::now();
    let load_at_start = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let probe_at_start = probe::Reading::take();
    let is_root = system::is_root();
    if !is_root {
        eprintln!(
            "xtask: not root: the criterion benches and the D-Bus round trip (scenario 6) run, \
             but scenarios 1-5 and 7 need network namespaces and the NetworkManager sandbox and are \
             reported as `not run`; run `cargo xtask bench` as root for all of them"
        );
    }
    if is_root {
        system::ensure_bench_packages()?;
    } else {
        let missing = system::missing_bench_packages();
        if !missing.is_empty() {
            eprintln!(
                "xtask: missing system packages: {} (the comparisons that need them fail; \
                 `cargo xtask bench` as root installs them)",
                missing.join(" ")
            );
        }
    }
    let mut failures = Vec::new();
    let mut timings: Vec<(String, f64)> = Vec::new();

    let mut criterion_results = Vec::new();
    let mut criterion_other: Vec<(String, Vec<String>)> = Vec::new();
    let mut criterion_command = String::new();
    let mut build_commands = Vec::new();
    let mut dedup_repeats = None;
    if options.criterion {
        let targets = criterion_benches(root)?;
        let built = build_benches(
            &targets,
            "building the criterion benches",
            &mut build_commands,
            &mut timings,
            &mut failures,
        );
        for BuiltBench { target, exe } in &built {
            let mut bench = Command::new(exe);
            bench
                .current_dir(root.join(&target.folder))
                .env("CRITERION_HOME", target_dir(exe).join("criterion"))
                .args(["--bench", "--color", "never"]);
            if options.quick {
                bench.env("NETMIRROR_BENCH_QUICK", "1");
                bench.args(QUICK_CRITERION);
            } else if options.quick_criterion {
                bench.args(SHORT_CRITERION);
            }
            if criterion_command.is_empty() {
                criterion_command = format!(
                    "{}{}",
                    if options.quick {
                        "NETMIRROR_BENCH_QUICK=1 "
                    } else {
                        ""
                    },
                    cmd::show(&bench).replace(&exe.display().to_string(), "BENCH_EXE"),
                );
            }
            let label = format!("{}/{}", target.package, target.name);
            let started = Instant::now();
            match run_criterion(&mut bench) {
                Ok((results, other)) => {
                    criterion_results.extend(results.into_iter().map(|mut result| {
                        result.bench.clone_from(&label);
                        result
                    }));
                    if !other.is_empty() {
                        criterion_other.push((label.clone(), other));
                    }
                }
                Err(err) => {
                    eprintln!("xtask: criterion bench {label} failed: {err:#}");
                    failures.push(format!("criterion bench {label}: {err:#}"));
                }
            }
            timings.push((
                format!("criterion `{label}`"),
                started.elapsed().as_secs_f64(),
            ));
        }
        // The 1M pairs of dedup-index and the map again (not in a quick run, which has no
        // 1M), the run's own figures being too noisy for the ratios alone.
        let ops = built.iter().find(|built| {
            built.target.package == "netmirror-dedup-index" && built.target.name == "ops"
        });
        if let (Some(BuiltBench { target, exe }), false) = (ops, options.quick) {
            let started = Instant::now();
            let repeats = dedup::repeat_pairs(
                exe,
                &root.join(&target.folder),
                &target_dir(exe).join("criterion"),
            );
            failures.extend(
                repeats
                    .failures()
                    .iter()
                    .map(|f| format!("dedup-index pairs: {f}")),
            );
            dedup_repeats = Some(repeats);
            timings.push((
                "dedup-index against HashMap, 1M pairs again".to_owned(),
                started.elapsed().as_secs_f64(),
            ));
        }
    }

    let report_path = root.join("target").join("bench").join("compare.md");
    let mut compare_text = None;
    let mut compare_command = String::new();
    let mut symbol_order_coverage = None;
    if options.compare {
        let _ = std::fs::remove_file(&report_path);
        let target = [BenchTarget {
            package: "netmirror".to_owned(),
            folder: PathBuf::from("cli"),
            name: "compare".to_owned(),
        }];
        let built = build_benches(
            &target,
            "building the comparisons (and the `bench`-profile netmirror binary)",
            &mut build_commands,
            &mut timings,
            &mut failures,
        );
        if let Some(compare) = built.first() {
            let binary = target_dir(&compare.exe).join("release").join("netmirror");
            match symbol_order::coverage(root, &binary) {
                Ok((found, listed)) => {
                    if symbol_order::is_stale(found, listed) {
                        eprintln!(
                            "xtask: the measured netmirror defines only {found} of the {listed} \
                             functions cli/symbol-order.txt orders for it: run `cargo xtask \
                             symbol-order` (as root) and bench again"
                        );
                    }
                    symbol_order_coverage = Some((found, listed));
                }
                Err(err) => eprintln!("xtask: cannot check cli/symbol-order.txt: {err:#}"),
            }
            let mut bench = Command::new(&compare.exe);
            bench
                .current_dir(root.join(&compare.target.folder))
                .arg("--bench");
            if options.quick {
                bench.arg("--quick");
            }
            if let Some(only) = &options.only {
                bench.args(["--only", only]);
            }
            bench.env("NETMIRROR_BENCH_REPORT", &report_path);
            let exe = compare.exe.display().to_string();
            let args = cmd::show(&bench).replacen(&format!("{exe} --bench"), "", 1);
            compare_command = format!(
                "`{}` (COMPARE_EXE: the executable that the second build made), i.e. \
                 `cargo bench -p netmirror --bench compare --{args}`",
                cmd::show(&bench).replacen(&exe, "COMPARE_EXE", 1),
            );
            let started = Instant::now();
            match cmd::run(&mut bench) {
                Ok(()) => {
                    compare_text = Some(
                        std::fs::read_to_string(&report_path)
                            .with_context(|| format!("cannot read {}", report_path.display()))?,
                    );
                }
                Err(err) => {
                    eprintln!("xtask: comparisons failed: {err:#}");
                    failures.push(format!("comparisons: {err:#}"));
                }
            }
            timings.push((
                "the whole-process comparisons".to_owned(),
                started.elapsed().as_secs_f64(),
            ));
        }
    }

    let text = markdown(&Written {
        args,
        load_at_start: &load_at_start,
        probes: [probe_at_start, probe::Reading::take()],
        options: &options,
        is_root,
        elapsed_s: started.elapsed().as_secs_f64(),
        timings: &timings,
        build_commands: &build_commands,
        criterion_command: &criterion_command,
        criterion: &criterion_results,
        criterion_other: &criterion_other,
        dedup_repeats: dedup_repeats.as_ref(),
        compare_command: &compare_command,
        symbol_order: symbol_order_coverage,
        compare: compare_text.as_deref(),
        failures: &failures,
    });
    std::fs::write(&options.out, text)
        .with_context(|| format!("cannot write {}", options.out.display()))?;
    eprintln!(
        "xtask: wrote {} ({:.0} s)",
        options.out.display(),
        started.elapsed().as_secs_f64()
    );
    if !failures.is_empty() {
        bail!("some benchmarks failed:\n  {}", failures.join("\n  "));
    }
    Ok(())
}

/// One criterion result as it printed it.
#[derive(Debug)]
struct CriterionResult {
    /// `package/bench`.
    bench: String,
    id: String,
    /// `[low estimate high]`, as criterion formats them.
    time: String,
    thrpt: Option<String>,
}

/// A `[[bench]]` target of a workspace crate.
#[derive(Debug, Clone)]
struct BenchTarget {
    package: String,
    /// The crate's folder, relative to the root: cargo runs benches there.
    folder: PathBuf,
    name: String,
}

/// A bench target and its executable.
#[derive(Debug)]
struct BuiltBench {
    target: BenchTarget,
    exe: PathBuf,
}

/// The criterion bench targets of the library crates: each `[[bench]]` of their manifests
/// (criterion benches need one, for `harness = false`).
fn criterion_benches(root: &Path) -> anyhow::Result<Vec<BenchTarget>> {
    let mut benches = Vec::new();
    for folder in [
        "dedup-index",
        "dbus-meta",
        "client-cache",
        "platform",
        "cli",
    ] {
        let manifest = std::fs::read_to_string(root.join(folder).join("Cargo.toml"))?;
        let mut package = None;
        let mut section = "";
        for line in manifest.lines().map(str::trim) {
            if line.starts_with('[') {
                section = line;
                continue;
            }
            let Some(value) = line
                .strip_prefix("name")
                .and_then(|rest| rest.trim_start().strip_prefix('='))
                .and_then(|rest| rest.trim().strip_prefix('"'))
                .and_then(|rest| rest.split('"').next())
            else {
                continue;
            };
            match section {
                "[package]" => package = Some(value.to_owned()),
                // The whole-process comparisons run on their own, below.
                "[[bench]]" if value != "compare" => {
                    let package = package.clone().context("a [[bench]] before [package]")?;
                    benches.push(BenchTarget {
                        package,
                        folder: PathBuf::from(folder),
                        name: value.to_owned(),
                    });
                }
                _ => {}
            }
        }
    }
    Ok(benches)
}

/// Builds `targets` with one `cargo bench --no-run` (both cores, shared dependencies built
/// once) and returns their executables. When that build fails, builds each target on its own,
/// so one crate whose benches do not build does not hide the figures of the others; each
/// failure goes to `failures` as a line for the report. The time taken goes to `timings`
/// under `label`.
fn build_benches(
    targets: &[BenchTarget],
    label: &str,
    commands: &mut Vec<String>,
    timings: &mut Vec<(String, f64)>,
    failures: &mut Vec<String>,
) -> Vec<BuiltBench> {
    let started = Instant::now();
    let built = build_all(targets, commands, failures);
    timings.push((label.to_owned(), started.elapsed().as_secs_f64()));
    built
}

/// The builds of [`build_benches`].
fn build_all(
    targets: &[BenchTarget],
    commands: &mut Vec<String>,
    failures: &mut Vec<String>,
) -> Vec<BuiltBench> {
    if targets.is_empty() {
        return Vec::new();
    }
    let mut build = no_run(targets);
    commands.push(cmd::show(&build));
    if let Ok(built) = built_benches(&mut build, targets) {
        return built;
    }
    eprintln!("xtask: building every bench at once failed; building each on its own");
    let mut all = Vec::new();
    for target in targets {
        let one = std::slice::from_ref(target);
        match built_benches(&mut no_run(one), one) {
            Ok(built) => all.extend(built),
            Err(err) => {
                let label = format!("{}/{}", target.package, target.name);
                eprintln!("xtask: bench {label} does not build: {err:#}");
                failures.push(format!("building bench {label}: {err:#}"));
            }
        }
    }
    all
}

/// `cargo bench --no-run` for `targets`, with JSON messages on stdout.
fn no_run(targets: &[BenchTarget]) -> Command {
    let mut build = cmd::cargo();
    build.args([
        "bench",
        "--no-run",
        "--message-format=json-render-diagnostics",
    ]);
    let mut packages: Vec<&str> = targets.iter().map(|t| t.package.as_str()).collect();
    packages.dedup();
    for package in packages {
        build.args(["-p", package]);
    }
    for target in targets {
        build.args(["--bench", &target.name]);
    }
    build
}

/// Runs a `cargo bench --no-run` and finds each target's executable in its JSON messages.
fn built_benches(build: &mut Command, targets: &[BenchTarget]) -> anyhow::Result<Vec<BuiltBench>> {
    let shown = cmd::show(build);
    eprintln!("$ {shown}");
    let started = Instant::now();
    let out = build
        .stderr(Stdio::inherit())
        .output()
        .with_context(|| format!("cannot start `{shown}`"))?;
    eprintln!("  ({:.1} s)", started.elapsed().as_secs_f64());
    if !out.status.success() {
        bail!("`{shown}` failed: {}", out.status);
    }
    let messages = String::from_utf8_lossy(&out.stdout);
    targets
        .iter()
        .map(|target| {
            // The manifest's path, as cargo spells it (the root may be reached by a link).
            let manifest = format!("/{}/Cargo.toml", target.folder.display());
            messages
                .lines()
                .filter(|line| line.contains(r#""reason":"compiler-artifact""#))
                .filter(|line| {
                    cmd::json_str(line, "manifest_path")
                        .is_some_and(|path| path.ends_with(&manifest))
                })
                .filter(|line| line.contains(r#""kind":["bench"]"#))
                .find(|line| {
                    line.split_once(r#""target":"#)
                        .and_then(|(_, rest)| cmd::json_str(rest, "name"))
                        == Some(target.name.as_str())
                })
                .and_then(|line| cmd::json_str(line, "executable"))
                .map(|exe| BuiltBench {
                    target: target.clone(),
                    exe: PathBuf::from(exe),
                })
                .with_context(|| {
                    format!(
                        "`{shown}` named no executable for bench {}/{}",
                        target.package, target.name
                    )
                })
        })
        .collect()
}

/// The target directory an executable in `TARGET/PROFILE/deps/` was built in.
fn target_dir(exe: &Path) -> PathBuf {
    exe.ancestors()
        .nth(3)
        .map_or_else(|| PathBuf::from("target"), Path::to_path_buf)
}

/// Runs the criterion benches, echoing their output, and collects each `time:` line.
fn run_criterion(bench: &mut Command) -> anyhow::Result<(Vec<CriterionResult>, Vec<String>)> {
    let command_line = cmd::show(bench);
    eprintln!("$ {command_line}");
    let started = Instant::now();
    let mut child = bench
        .stdout(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot start `{command_line}`"))?;
    let stdout = child
        .stdout
        .take()
        .context("criterion's stdout is not piped")?;
    let mut results: Vec<CriterionResult> = Vec::new();
    let mut pending_id: Option<String> = None;
    // Lines of the bench's own (a table it prints), kept verbatim.
    let mut other = Vec::new();
    // After `change:`, the `time:` and `thrpt:` lines compare with the last saved run: not ours.
    let mut in_change = false;
    for line in BufReader::new(stdout).lines() {
        let line = strip_ansi(&line?);
        eprintln!("{line}");
        if line.trim() == "change:" {
            in_change = true;
        } else if let Some((id, rest)) = line.split_once("time:") {
            let id = id.trim();
            if in_change && id.is_empty() {
                continue;
            }
            in_change = false;
            let id = if id.is_empty() {
                pending_id.take().unwrap_or_default()
            } else {
                id.to_owned()
            };
            results.push(CriterionResult {
                bench: String::new(),
                id,
                time: rest.trim().to_owned(),
                thrpt: None,
            });
        } else if let Some((_, rest)) = line.split_once("thrpt:") {
            if let Some(last) = results.last_mut().filter(|_| !in_change) {
                last.thrpt = Some(rest.trim().to_owned());
            }
        } else if !line.starts_with(char::is_whitespace)
            && !line.trim().is_empty()
            && !is_criterion_chatter(&line)
        {
            in_change = false;
            // A line that no `time:` followed was not a benchmark's name.
            other.extend(pending_id.replace(line.trim_end().to_owned()));
        }
    }
    let status = child.wait()?;
    eprintln!("  ({:.1} s)", started.elapsed().as_secs_f64());
    if !status.success() {
        bail!("`{command_line}` failed: {status}");
    }
    other.extend(pending_id);
    Ok((results, other))
}

/// Lines criterion prints that are not a benchmark's name.
fn is_criterion_chatter(line: &str) -> bool {
    const PREFIXES: &[&str] = &[
        "Benchmarking",
        "Found",
        "Gnuplot",
        "Warning",
        "running",
        "test ",
        "WARNING",
    ];
    PREFIXES.iter().any(|prefix| line.starts_with(prefix)) || line.contains("change:")
}

/// Removes terminal colour codes.
fn strip_ansi(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else if c != '\r' {
            out.push(c);
        }
    }
    out
}

/// First line of a command's output, or `unknown`.
fn version(program: &str, args: &[&str]) -> String {
    Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()
        .and_then(|out| {
            String::from_utf8_lossy(&out.stdout)
                .lines()
                .next()
                .map(|line| line.trim().to_owned())
        })
        .filter(|line| !line.is_empty())
        .unwrap_or_else(|| "not found".to_owned())
}

/// `key: value` from a /proc file.
fn proc_field(path: &str, key: &str) -> String {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|text| {
            text.lines()
                .find(|line| line.starts_with(key))
                .and_then(|line| line.split_once(':'))
                .map(|(_, value)| value.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown".to_owned())
}

/// Everything the report is made of.
struct Written<'a> {
    args: &'a [String],
    /// `/proc/loadavg` when the run started: how busy the shared machine was.
    load_at_start: &'a str,
    /// The machine's system call and memory latency at the start and at the end.
    probes: [probe::Reading; 2],
    options: &'a Options,
    is_root: bool,
    elapsed_s: f64,
    /// How long each part of the run took, in seconds.
    timings: &'a [(String, f64)],
    /// The `cargo bench --no-run` commands that built the benches.
    build_commands: &'a [String],
    criterion_command: &'a str,
    criterion: &'a [CriterionResult],
    /// What bench targets printed besides criterion's lines (e.g. a memory table).
    criterion_other: &'a [(String, Vec<String>)],
    /// The 1M pairs of dedup-index and the map, measured again.
    dedup_repeats: Option<&'a dedup::Repeats>,
    compare_command: &'a str,
    /// How many of the functions `cli/symbol-order.txt` orders for the measured `netmirror`
    /// it defines, and how many the file names.
    symbol_order: Option<(usize, usize)>,
    compare: Option<&'a str>,
    failures: &'a [String],
}

fn markdown(w: &Written<'_>) -> String {
    let mut out = String::new();
    let kind = match (w.options.quick, w.options.quick_criterion) {
        (true, _) => "quick run",
        (false, true) => "full-size comparisons, short criterion measurements",
        (false, false) => "full run",
    };
    let date = version("date", &["-u", "+%Y-%m-%d %H:%M UTC"]);
    out.push_str("# Benchmarks\n\n");
    out.push_str(&format!(
        "Written by `cargo xtask bench{}` ({kind}) on {date}, as {}; the run took {:.1} min. \
         Every figure below was produced by that run; rerun the command to reproduce it \
         (it overwrites this file).\n\n",
        w.args
            .iter()
            .map(|arg| format!(" {arg}"))
            .collect::<String>(),
        if w.is_root { "root" } else { "a regular user" },
        w.elapsed_s / 60.0,
    ));
    out.push_str(
        "`--quick` runs smaller sizes (100k IPv4 routes, 20k IPv6, 20k multipath, one \
         20k-route burst, 20k-route batches, 2k D-Bus calls) with 3 runs per command, and the \
         criterion benches with `NETMIRROR_BENCH_QUICK=1` (smaller sizes, where a bench has \
         them), 0.5 s warm-up, 1 s measurement and 10k bootstrap resamples; \
         `--quick-criterion` keeps the full sizes and shortens only criterion (1 s warm-up, 2 s \
         measurement). The full run uses 100k/600k/1M IPv4, 100k IPv6 and 100k multipath \
         routes, three 100k-route bursts, 100k-route batches, 20k D-Bus calls, 5 runs per \
         command, and criterion's defaults (3 s warm-up, 5 s measurement, 100k resamples). ",
    );
    out.push_str(TYPICAL_DURATIONS);
    out.push_str("\n\n");
    if !w.is_root {
        out.push_str(
            "**Not run as root:** scenarios 1-5 and 7 of the comparisons (NetworkManager, route \
             loads, the filtered query, the monitor burst, batches) were not run, since they \
             need network namespaces and the NetworkManager sandbox; only the criterion \
             benches and the D-Bus round trip (scenario 6) ran. Run `cargo xtask bench` as \
             root for all of them.\n\n",
        );
    }
    out.push_str("## Machine\n\n");
    let nproc = std::thread::available_parallelism().map_or(0, |n| n.get());
    let rows = [
        ("CPUs (nproc)", nproc.to_string()),
        ("CPU model", proc_field("/proc/cpuinfo", "model name")),
        ("memory", proc_field("/proc/meminfo", "MemTotal")),
        (
            "kernel",
            std::fs::read_to_string("/proc/sys/kernel/osrelease")
                .map_or_else(|_| "unknown".to_owned(), |s| s.trim().to_owned()),
        ),
        ("nmcli", version("nmcli", &["--version"])),
        ("NetworkManager", version("NetworkManager", &["--version"])),
        ("ip", version("ip", &["-V"])),
        ("dbus-daemon", version("dbus-daemon", &["--version"])),
        ("busctl", version("busctl", &["--version"])),
        ("rustc", version("rustc", &["-V"])),
        ("load average at the start", w.load_at_start.to_owned()),
        (
            "load average at the end",
            std::fs::read_to_string("/proc/loadavg").unwrap_or_default(),
        ),
        ("latencies at the start", w.probes[0].cell()),
        ("latencies at the end", w.probes[1].cell()),
    ];
    out.push_str("| what | value |\n| --- | --- |\n");
    for (key, value) in rows {
        out.push_str(&format!(
            "| {key} | {} |\n",
            value.trim().replace('|', "\\|")
        ));
    }
    out.push_str(
        "\nThe machine is shared and not tuned (no CPU pinning, frequency scaling as it is): \
         read the min–max spread next to each median. The latencies are a `getpid` \
         system call and a read whose address the read before gave, in a random cycle through \
         64 MiB (`xtask/src/bench/probe.rs`). The kernel-bound ratios (the cache load over the \
         raw dump, the monitor over `ip monitor`) improve where system calls are dear, the \
         dedup-index ratios at 1M worsen where dependent reads are: compare runs on different \
         hardware with them.\n\n",
    );

    out.push_str("## How it was measured\n\n");
    out.push_str(
        "Each command runs as a child of a small runner process (the bench binary itself), \
         which reads `getrusage(RUSAGE_CHILDREN)` once its only child has exited: wall time \
         around spawn and wait, user+sys CPU time, and peak RSS (`ru_maxrss`). netmirror and \
         the reference run alternately (A B, B A, ...) after one unmeasured run each, with \
         their standard output to /dev/null. The netmirror binary is the `bench` profile \
         build (release optimisations, with debug info). A netmirror command that fails on its \
         unmeasured run is shown as `not available`, without numbers. One kind of row is \
         timed differently, as its scenario's setup says: scenario 2's load against the raw \
         dump floor times the platform's `Cache::open` and a raw route dump inside their own \
         processes (after entering the namespace), alternated in the same way.\n\n",
    );
    for build in w.build_commands {
        out.push_str(&format!("Build: `{build}`\n\n"));
    }
    if !w.compare_command.is_empty() {
        out.push_str(&format!("Comparisons: {}\n\n", w.compare_command));
    }
    if let Some((found, listed)) = w.symbol_order {
        out.push_str(&format!(
            "Code order: the measured `netmirror` defines {found} of the {listed} functions that \
             `cli/symbol-order.txt` has the linker put first{}\n\n",
            if symbol_order::is_stale(found, listed) {
                " (**stale**: `cargo xtask symbol-order` writes it anew; until then the \
                 commands map code pages from all over the binary, which shows in their peak RSS)"
            } else {
                ""
            }
        ));
    }
    if !w.criterion_command.is_empty() {
        out.push_str(&format!(
            "Criterion: `{}`, for each bench executable that the build made, run in its \
             crate's folder (the same as `cargo bench -p PACKAGE --bench BENCH -- ...`)\n\n",
            w.criterion_command
        ));
    }

    out.push_str("## Whole-process comparisons\n\n");
    match w.compare {
        Some(text) => out.push_str(text),
        None if w.options.compare => out.push_str("The comparisons failed; see below.\n"),
        None => out.push_str("Not run (`--no-compare`).\n"),
    }
    out.push('\n');

    if w.options.criterion {
        let profile = w
            .criterion_other
            .iter()
            .find(|(bench, _)| bench == dedup::PROFILE_BENCH)
            .map(|(_, lines)| lines.as_slice());
        out.push_str(&dedup::markdown(w.criterion, w.dedup_repeats, profile));
    }
    out.push_str("## Criterion benchmarks of the crates\n\n");
    if w.criterion.is_empty() {
        out.push_str(if w.options.criterion {
            "No results (the benches failed or printed none).\n\n"
        } else {
            "Not run (`--no-criterion`).\n\n"
        });
    } else {
        out.push_str(
            "Criterion's confidence interval `[low estimate high]` of the time per \
             iteration (or of the custom measurement a bench declares, such as bytes).\n\n",
        );
        out.push_str(
            "| bench target | benchmark | time [low estimate high] | throughput |\n\
             | --- | --- | --- | --- |\n",
        );
        for result in w.criterion {
            out.push_str(&format!(
                "| {} | `{}` | {} | {} |\n",
                result.bench,
                result.id,
                result.time,
                result.thrpt.as_deref().unwrap_or("")
            ));
        }
        out.push('\n');
    }
    // The dedup-index profile is in the dedup-index section.
    for (bench, lines) in w
        .criterion_other
        .iter()
        .filter(|(bench, _)| bench != dedup::PROFILE_BENCH)
    {
        out.push_str(&format!("Printed by `{bench}`:\n\n```text\n"));
        for line in lines {
            out.push_str(line);
            out.push('\n');
        }
        out.push_str("```\n\n");
    }
    out.push_str("## Run time\n\n");
    out.push_str("| part | seconds |\n| --- | ---: |\n");
    for (part, seconds) in w.timings {
        out.push_str(&format!("| {part} | {seconds:.0} |\n"));
    }
    out.push_str(&format!(
        "| **the whole run** | **{:.0}** ({:.1} min) |\n\n",
        w.elapsed_s,
        w.elapsed_s / 60.0
    ));
    if !w.failures.is_empty() {
        out.push_str("## Failures\n\n");
        for failure in w.failures {
            out.push_str(&format!("- {}\n", failure.replace('\n', " ")));
        }
        out.push('\n');
    }
    out
}
