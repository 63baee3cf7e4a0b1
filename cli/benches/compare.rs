//! Whole-process comparisons of `netmirror` against the tools people use today, on the same
//! data: `nmcli` against the same NetworkManager daemon and bus, `ip` against the same network
//! namespace, `busctl` and raw sockets for D-Bus round trips.
//!
//! `cargo bench -p netmirror --bench compare [-- --quick] [--only N,...]` (as root; run by
//! `cargo xtask bench`). Every command runs several times, alternating netmirror and the
//! reference, and is measured from the kernel's accounting of the child process (wall time,
//! user+sys CPU, peak RSS; see [`measure`]). The Markdown report goes to the file named by
//! `NETMIRROR_BENCH_REPORT` (and to stderr when unset). A netmirror subcommand that fails on
//! its first, unmeasured run is reported as `not available`, never given a number.

mod compare {
    pub(crate) mod floor;
    pub(crate) mod latency;
    pub(crate) mod measure;
    pub(crate) mod monitor;
    pub(crate) mod nm;
    pub(crate) mod nm_actions;
    pub(crate) mod report;
    pub(crate) mod routes;
    pub(crate) mod sdbus;
    pub(crate) mod wire;
}

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::Context;

use compare::report::{Comparison, Outcome, Report, Section};
use compare::{floor, latency, measure, monitor, nm, nm_actions, routes};
use measure::{Cmd, Figures};

/// Sizes and repetitions of one run (`--quick` or full).
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    /// Measured runs of each command in a comparison.
    pub(crate) runs: usize,
    /// IPv4 route counts of scenario 2, ascending.
    pub(crate) v4_sizes: Vec<usize>,
    /// IPv6 routes of scenario 2.
    pub(crate) v6_routes: usize,
    /// Multipath IPv4 routes (two weighted hops, metrics) of scenario 2.
    pub(crate) multipath_routes: usize,
    /// Main-table routes of scenario 3 (plus 1k in table 100).
    pub(crate) filter_main_routes: usize,
    /// Routes added while the monitor runs (scenario 4).
    pub(crate) monitor_routes: usize,
    /// Bursts of scenario 4, each in a namespace of its own (the CPU ratio is their median).
    pub(crate) monitor_rounds: usize,
    /// Routes added and deleted by each batch (scenario 5).
    pub(crate) batch_routes: usize,
    /// D-Bus round trips per client (scenario 6).
    pub(crate) round_trips: usize,
    /// `busctl` processes (scenario 6).
    pub(crate) busctl_runs: usize,
}

impl Plan {
    fn new(quick: bool) -> Self {
        if quick {
            Self {
                runs: 3,
                v4_sizes: vec![100_000],
                v6_routes: 20_000,
                multipath_routes: 20_000,
                filter_main_routes: 100_000,
                monitor_routes: 20_000,
                monitor_rounds: 1,
                batch_routes: 20_000,
                round_trips: 2_000,
                busctl_runs: 30,
            }
        } else {
            Self {
                runs: 5,
                v4_sizes: vec![100_000, 600_000, 1_000_000],
                v6_routes: 100_000,
                multipath_routes: 100_000,
                filter_main_routes: 600_000,
                monitor_routes: 100_000,
                monitor_rounds: 3,
                batch_routes: 100_000,
                round_trips: 20_000,
                busctl_runs: 200,
            }
        }
    }
}

/// What every scenario needs: the binary, the plan, a scratch dir.
#[derive(Debug)]
pub(crate) struct Ctx {
    pub(crate) netmirror: PathBuf,
    pub(crate) plan: Plan,
    pub(crate) scratch: tempfile::TempDir,
    pub(crate) is_root: bool,
}

impl Ctx {
    /// A path in the scratch dir.
    pub(crate) fn scratch_file(&self, name: &str) -> PathBuf {
        self.scratch.path().join(name)
    }

    /// A `netmirror` command with `args`, labelled `netmirror ARGS`.
    pub(crate) fn netmirror(&self, args: &[&str]) -> Cmd {
        let label = format!("netmirror {}", args.join(" "));
        Cmd::new(label.trim(), &self.netmirror, args)
    }

    /// Compares `ours` with `reference`: probes each once (a failing netmirror command is
    /// `not available`), then alternates them the plan's `runs` times. `between` runs
    /// unmeasured before every run.
    pub(crate) fn compare(
        &self,
        case: &str,
        ours: &Cmd,
        reference: &Cmd,
        between: impl FnMut() -> anyhow::Result<()>,
    ) -> Comparison {
        self.compare_runs(case, ours, reference, self.plan.runs, between)
    }

    /// [`compare`](Self::compare) with `runs` alternated runs instead of the plan's.
    pub(crate) fn compare_runs(
        &self,
        case: &str,
        ours: &Cmd,
        reference: &Cmd,
        runs: usize,
        mut between: impl FnMut() -> anyhow::Result<()>,
    ) -> Comparison {
        progress(&format!(
            "{case}: `{}` vs `{}`",
            ours.label, reference.label
        ));
        let probe = |cmd: &Cmd, between: &mut dyn FnMut() -> anyhow::Result<()>, what: &str| {
            if let Err(err) = between() {
                return Some(format!("failed: setup: {err:#}"));
            }
            match cmd.output() {
                Ok((true, _, _)) => None,
                Ok((false, _, stderr)) => Some(format!(
                    "{what}: exits with an error: {}",
                    measure::last_lines(&stderr, 1)
                )),
                Err(err) => Some(format!("{what}: {err:#}")),
            }
        };
        let ours_missing = probe(ours, &mut between, "not available");
        let reference_missing = probe(reference, &mut between, "failed");
        let outcome = |cmd: &Cmd, result: anyhow::Result<Figures>| match result {
            Ok(figures) => Outcome::Measured(figures),
            Err(err) => Outcome::Missing {
                label: cmd.label.clone(),
                why: format!("failed: {err:#}"),
            },
        };
        let missing = |cmd: &Cmd, why: String| Outcome::Missing {
            label: cmd.label.clone(),
            why,
        };
        let (netmirror, reference_outcome) = match (ours_missing, reference_missing) {
            (None, None) => match measure::alternate(ours, reference, runs, &mut between) {
                Ok((a, b)) => (Outcome::Measured(a), Outcome::Measured(b)),
                Err(err) => {
                    let why = format!("failed: {err:#}");
                    (missing(ours, why.clone()), missing(reference, why))
                }
            },
            (Some(why), None) => (
                missing(ours, why),
                outcome(reference, measure_alone(reference, runs, &mut between)),
            ),
            (None, Some(why)) => (
                outcome(ours, measure_alone(ours, runs, &mut between)),
                missing(reference, why),
            ),
            (Some(a), Some(b)) => (missing(ours, a), missing(reference, b)),
        };
        Comparison {
            case: case.to_owned(),
            netmirror,
            reference: reference_outcome,
        }
    }
}

/// Measures one command `runs` times (its counterpart could not run).
fn measure_alone(
    cmd: &Cmd,
    runs: usize,
    between: &mut dyn FnMut() -> anyhow::Result<()>,
) -> anyhow::Result<Figures> {
    let mut samples = Vec::with_capacity(runs);
    for _ in 0..runs {
        between()?;
        samples.push(cmd.measure()?);
    }
    Ok(Figures::of(&cmd.label, &samples))
}

/// A line of progress on stderr.
pub(crate) fn progress(line: &str) {
    eprintln!("compare: {line}");
}

/// Whether this process is root (the effective uid in /proc/self/status).
fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find(|line| line.starts_with("Uid:"))
                .and_then(|line| line.split_whitespace().nth(2).map(|euid| euid == "0"))
        })
        .unwrap_or(false)
}

/// Scenarios by number, as the issue numbers them.
const SCENARIOS: &[u8] = &[1, 2, 3, 4, 5, 6, 7];

fn main() -> ExitCode {
    let args: Vec<OsString> = std::env::args_os().collect();
    if args.get(1).is_some_and(|arg| arg == measure::RUNNER_ARG) {
        return measure::runner_main(&args[2..]);
    }
    if args.get(1).is_some_and(|arg| arg == floor::FLOOR_ARG) {
        return floor::floor_main(&args[2..]);
    }
    if args
        .get(1)
        .is_some_and(|arg| arg == nm_actions::ACTIVATE_ARG)
    {
        return nm_actions::activate_main(&args[2..]);
    }
    if args.get(1).is_some_and(|arg| arg == nm::LIST_FLOOR_ARG) {
        return nm::list_floor_main(&args[2..]);
    }
    if args.get(1).is_some_and(|arg| arg == latency::PROFILE_ARG) {
        return latency::profile_main(&args[2..]);
    }
    match run(&args[1..]) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("compare: error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &[OsString]) -> anyhow::Result<()> {
    let mut quick = false;
    let mut only: Vec<u8> = SCENARIOS.to_vec();
    let mut args = args.iter().map(|arg| arg.to_string_lossy().into_owned());
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--quick" => quick = true,
            // Cargo passes `--bench` to every bench target.
            "--bench" => {}
            "--only" => {
                let list = args.next().context("--only needs a list such as 2,3")?;
                only = list
                    .split(',')
                    .map(|n| {
                        n.trim()
                            .parse()
                            .context("--only takes scenario numbers 1-7")
                    })
                    .collect::<anyhow::Result<_>>()?;
            }
            other => anyhow::bail!("unknown argument `{other}` (expected --quick, --only N,...)"),
        }
    }
    let started = Instant::now();
    let scratch = tempfile::Builder::new()
        .prefix("netmirror-test-bench-")
        .tempdir()
        .context("cannot make a scratch dir")?;
    let ctx = Ctx {
        netmirror: PathBuf::from(env!("CARGO_BIN_EXE_netmirror")),
        plan: Plan::new(quick),
        scratch,
        is_root: is_root(),
    };
    progress(&format!(
        "{} run, binary {}",
        if quick { "quick" } else { "full" },
        ctx.netmirror.display()
    ));
    let mut report = Report::default();
    let root_only = |title: &str| {
        let mut section = Section::new(title);
        section.skipped = Some(
            "needs root (network namespaces, the NetworkManager sandbox); run \
             `cargo xtask bench` as root"
                .to_owned(),
        );
        section
    };
    let mut durations = Vec::new();
    for scenario in SCENARIOS.iter().filter(|n| only.contains(n)) {
        let section_started = Instant::now();
        let sections = match scenario {
            1 if !ctx.is_root => vec![root_only(nm::TITLE)],
            1 => vec![nm::run(&ctx)],
            2 if !ctx.is_root => vec![root_only(routes::TITLE_LOAD)],
            // Scenario 3 reuses scenario 2's namespace at its 600k step.
            2 => routes::run_load(&ctx, only.contains(&3)),
            3 if !ctx.is_root => vec![root_only(routes::TITLE_FILTER)],
            3 if only.contains(&2) => Vec::new(),
            3 => routes::run_filter_alone(&ctx),
            4 if !ctx.is_root => vec![root_only(monitor::TITLE)],
            4 => vec![monitor::run(&ctx)],
            5 if !ctx.is_root => vec![root_only(routes::TITLE_BATCH)],
            5 => vec![routes::run_batch(&ctx)],
            6 => vec![latency::run(&ctx)],
            7 if !ctx.is_root => vec![root_only(nm_actions::TITLE)],
            7 => vec![nm_actions::run(&ctx)],
            _ => Vec::new(),
        };
        let took = section_started.elapsed().as_secs_f64();
        progress(&format!("scenario {scenario} took {took:.0} s"));
        durations.push(format!("{scenario}: {took:.0} s"));
        report.sections.extend(sections);
    }
    report.sections.sort_by_key(|section| section.title.clone());
    let mut text = report.markdown();
    text.push_str(&format!(
        "The comparisons took {:.0} s (by scenario: {}).\n",
        started.elapsed().as_secs_f64(),
        durations.join(", ")
    ));
    match std::env::var_os("NETMIRROR_BENCH_REPORT") {
        Some(path) => write_report(Path::new(&path), &text)?,
        None => eprintln!("{text}"),
    }
    Ok(())
}

fn write_report(path: &Path, text: &str) -> anyhow::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
}
