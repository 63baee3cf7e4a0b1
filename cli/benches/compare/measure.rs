//! Measuring whole processes: wall time, user+sys CPU time and peak RSS of one child, taken
//! from the kernel's own accounting, and A/B comparisons that alternate the two commands.
//!
//! Each measured command runs under a *runner*: this bench binary re-executed with
//! [`RUNNER_ARG`], which spawns the command, waits for it, and reads
//! `getrusage(RUSAGE_CHILDREN)`. The runner has exactly one child, so those figures are the
//! child's own (microsecond CPU times, `ru_maxrss`), untouched by anything else this bench
//! runs. The runner writes them on its stdout; the child's stdout goes where the caller said.

use std::ffi::OsString;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::PathBuf;
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use nix::sys::resource::{UsageWho, getrusage};

/// The first argument that makes this binary a runner.
pub(crate) const RUNNER_ARG: &str = "__netmirror_bench_runner";

/// A command to measure: program, arguments, extra environment, where its stdout goes.
#[derive(Debug, Clone)]
pub(crate) struct Cmd {
    /// What the report calls it (the command line as a user would type it).
    pub(crate) label: String,
    pub(crate) program: PathBuf,
    pub(crate) args: Vec<String>,
    pub(crate) env: Vec<(String, String)>,
    /// `None`: /dev/null.
    pub(crate) stdout: Option<PathBuf>,
}

impl Cmd {
    /// A command whose label is `label`, stdout to /dev/null.
    pub(crate) fn new(label: &str, program: impl Into<PathBuf>, args: &[&str]) -> Self {
        Self {
            label: label.to_owned(),
            program: program.into(),
            args: args.iter().map(|arg| (*arg).to_owned()).collect(),
            env: Vec::new(),
            stdout: None,
        }
    }

    /// Adds an environment variable.
    pub(crate) fn env(mut self, key: &str, value: &str) -> Self {
        self.env.push((key.to_owned(), value.to_owned()));
        self
    }

    /// Runs it once, unmeasured, and returns (exit ok, stdout, stderr).
    pub(crate) fn output(&self) -> anyhow::Result<(bool, String, String)> {
        let out = Command::new(&self.program)
            .args(&self.args)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .output()
            .with_context(|| format!("cannot start `{}`", self.label))?;
        Ok((
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        ))
    }

    /// Runs it once under a runner and returns its figures; fails when it exits non-zero.
    pub(crate) fn measure(&self) -> anyhow::Result<Sample> {
        let exe = std::env::current_exe().context("cannot find the bench binary")?;
        let stdout: OsString = match &self.stdout {
            Some(path) => path.clone().into(),
            None => "/dev/null".into(),
        };
        let out = Command::new(exe)
            .arg(RUNNER_ARG)
            .arg(stdout)
            .arg(&self.program)
            .args(&self.args)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .output()
            .with_context(|| format!("cannot start the runner for `{}`", self.label))?;
        let stderr = String::from_utf8_lossy(&out.stderr);
        let report = String::from_utf8_lossy(&out.stdout);
        let fields: Vec<u64> = report
            .split_whitespace()
            .filter_map(|field| field.parse().ok())
            .collect();
        let [wall_ns, cpu_us, maxrss_kib, code] = fields[..] else {
            bail!(
                "runner for `{}` failed ({}): {}",
                self.label,
                out.status,
                stderr.trim()
            );
        };
        if code != 0 {
            bail!(
                "`{}` exited with status {code}: {}",
                self.label,
                last_lines(&stderr, 3)
            );
        }
        Ok(Sample {
            wall: Duration::from_nanos(wall_ns),
            cpu: Duration::from_micros(cpu_us),
            maxrss_kib,
        })
    }
}

/// The last `n` lines of a text, joined by ` / `.
pub(crate) fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(n)..].join(" / ")
}

/// The runner: `RUNNER_ARG STDOUT PROGRAM ARGS...`. Prints `wall_ns cpu_us maxrss_kib code`.
pub(crate) fn runner_main(args: &[OsString]) -> ExitCode {
    match runner(args) {
        Ok(line) => {
            let mut stdout = std::io::stdout();
            let _ = stdout.write_all(line.as_bytes());
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("runner: {err:#}");
            ExitCode::FAILURE
        }
    }
}

fn runner(args: &[OsString]) -> anyhow::Result<String> {
    let [stdout, program, rest @ ..] = args else {
        bail!("usage: {RUNNER_ARG} STDOUT PROGRAM [ARGS...]");
    };
    let child_stdout = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(stdout)
        .with_context(|| format!("cannot open {}", stdout.to_string_lossy()))?;
    let started = Instant::now();
    let status = Command::new(program)
        .args(rest)
        .stdin(Stdio::null())
        .stdout(child_stdout)
        .status()
        .with_context(|| format!("cannot start {}", program.to_string_lossy()))?;
    let wall = started.elapsed();
    let usage = getrusage(UsageWho::RUSAGE_CHILDREN).context("getrusage")?;
    let micros = |tv: nix::sys::time::TimeVal| {
        u64::try_from(tv.tv_sec()).unwrap_or(0) * 1_000_000
            + u64::try_from(tv.tv_usec()).unwrap_or(0)
    };
    let cpu = micros(usage.user_time()) + micros(usage.system_time());
    // A signal shows as 128 + its number, like a shell does.
    let code = status
        .code()
        .map_or(128, |code| u64::try_from(code).unwrap_or(255));
    Ok(format!(
        "{} {cpu} {} {code}\n",
        wall.as_nanos(),
        u64::try_from(usage.max_rss()).unwrap_or(0)
    ))
}

/// One measured run.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sample {
    pub(crate) wall: Duration,
    pub(crate) cpu: Duration,
    pub(crate) maxrss_kib: u64,
}

/// Median, min and max of one figure over several runs.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Spread {
    pub(crate) median: f64,
    pub(crate) min: f64,
    pub(crate) max: f64,
}

impl Spread {
    /// The spread of `values` (not empty).
    pub(crate) fn of(mut values: Vec<f64>) -> Self {
        values.sort_by(f64::total_cmp);
        let n = values.len();
        let median = if n == 0 {
            f64::NAN
        } else if n % 2 == 1 {
            values[n / 2]
        } else {
            (values[n / 2 - 1] + values[n / 2]) / 2.0
        };
        Self {
            median,
            min: values.first().copied().unwrap_or(f64::NAN),
            max: values.last().copied().unwrap_or(f64::NAN),
        }
    }

    /// `median [min–max]` with `decimals` decimals.
    pub(crate) fn show(&self, decimals: usize) -> String {
        format!(
            "{:.d$} [{:.d$}–{:.d$}]",
            self.median,
            self.min,
            self.max,
            d = decimals
        )
    }
}

/// The figures of one command over its runs.
#[derive(Debug, Clone)]
pub(crate) struct Figures {
    pub(crate) label: String,
    pub(crate) runs: usize,
    /// Milliseconds.
    pub(crate) wall_ms: Spread,
    /// Milliseconds of user+sys CPU.
    pub(crate) cpu_ms: Spread,
    /// MiB.
    pub(crate) rss_mib: Spread,
}

impl Figures {
    /// Summarises samples.
    pub(crate) fn of(label: &str, samples: &[Sample]) -> Self {
        Self {
            label: label.to_owned(),
            runs: samples.len(),
            wall_ms: Spread::of(samples.iter().map(|s| s.wall.as_secs_f64() * 1e3).collect()),
            cpu_ms: Spread::of(samples.iter().map(|s| s.cpu.as_secs_f64() * 1e3).collect()),
            rss_mib: Spread::of(
                samples
                    .iter()
                    .map(|s| s.maxrss_kib as f64 / 1024.0)
                    .collect(),
            ),
        }
    }
}

/// Measures `a` and `b` `runs` times each, alternating (A B, B A, A B ...), after one unmeasured
/// warm-up run of each. `between` runs before every measured run (unmeasured), e.g. to reset
/// state a command changes.
pub(crate) fn alternate(
    a: &Cmd,
    b: &Cmd,
    runs: usize,
    mut between: impl FnMut() -> anyhow::Result<()>,
) -> anyhow::Result<(Figures, Figures)> {
    between()?;
    a.measure()?;
    between()?;
    b.measure()?;
    let mut samples_a = Vec::with_capacity(runs);
    let mut samples_b = Vec::with_capacity(runs);
    for run in 0..runs {
        let order: [(&Cmd, &mut Vec<Sample>); 2] = if run % 2 == 0 {
            [(a, &mut samples_a), (b, &mut samples_b)]
        } else {
            [(b, &mut samples_b), (a, &mut samples_a)]
        };
        for (cmd, samples) in order {
            between()?;
            samples.push(cmd.measure()?);
        }
    }
    Ok((
        Figures::of(&a.label, &samples_a),
        Figures::of(&b.label, &samples_b),
    ))
}

/// Latency percentiles of many in-process round trips, in microseconds.
#[derive(Debug, Clone)]
pub(crate) struct Latency {
    pub(crate) label: String,
    pub(crate) n: usize,
    pub(crate) p50_us: f64,
    pub(crate) p99_us: f64,
    pub(crate) min_us: f64,
    pub(crate) max_us: f64,
}

impl Latency {
    /// Percentiles of `durations` (nearest rank).
    pub(crate) fn of(label: &str, mut durations: Vec<Duration>) -> Self {
        durations.sort();
        let us = |d: Option<&Duration>| d.map_or(f64::NAN, |d| d.as_secs_f64() * 1e6);
        let rank = |p: f64| {
            let n = durations.len();
            let idx = ((p * n as f64).ceil() as usize).clamp(1, n.max(1)) - 1;
            us(durations.get(idx))
        };
        Self {
            label: label.to_owned(),
            n: durations.len(),
            p50_us: rank(0.50),
            p99_us: rank(0.99),
            min_us: us(durations.first()),
            max_us: us(durations.last()),
        }
    }
}

/// Formats `a / b` as a ratio with two decimals, or `n/a`.
pub(crate) fn ratio(a: f64, b: f64) -> String {
    if b > 0.0 && a.is_finite() && b.is_finite() {
        let mut text = String::new();
        let _ = write!(text, "{:.2}", a / b);
        text
    } else {
        "n/a".to_owned()
    }
}
