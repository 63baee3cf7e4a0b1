//! Scenario 4: a burst of route additions (`ip -batch`) while `netmirror --json monitor route`,
//! `netmirror monitor route` (text, one line per event as `ip` prints them) and
//! `ip monitor route` run on the same namespace: events seen against expected, the JSON
//! monitor's set of routes against a fresh dump afterwards, and what each monitor process cost
//! (CPU, peak RSS) to absorb the burst. The burst is repeated in fresh namespaces
//! (the plan's `monitor_rounds`); the CPU ratios are their median.

use std::collections::HashSet;
use std::fs::File;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use netmirror_platform::testing::NetNs;
use serde_json::Value;

use super::measure::{self, RUNNER_ARG};
use super::report::Section;
use super::routes::{self, MONITOR_BASE};
use crate::{Ctx, progress};

pub(crate) const TITLE: &str = "4. A burst of route events: `netmirror monitor route` (text and --json) and `ip monitor route` during `ip -batch`";

/// Marks the start and the end of the burst in both monitors' output.
const SENTINEL_START: &str = "198.51.100.0/24";
const SENTINEL_END: &str = "203.0.113.0/24";

/// How long a monitor may take to show a sentinel.
const READY_TIMEOUT: Duration = Duration::from_secs(30);
const DRAIN_TIMEOUT: Duration = Duration::from_secs(180);

/// A monitor process run under a measuring runner, its stdout in a file.
struct Monitor {
    label: String,
    runner: Child,
    stdout: PathBuf,
    stderr: PathBuf,
}

impl Monitor {
    fn start(
        ctx: &Ctx,
        label: &str,
        name: &str,
        program: &Path,
        args: &[&str],
    ) -> anyhow::Result<Self> {
        let stdout = ctx.scratch_file(&format!("{name}.out"));
        let stderr = ctx.scratch_file(&format!("{name}.err"));
        let runner = Command::new(std::env::current_exe()?)
            .arg(RUNNER_ARG)
            .arg(&stdout)
            .arg(program)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(File::create(&stderr)?)
            .spawn()
            .with_context(|| format!("cannot start `{label}`"))?;
        Ok(Self {
            label: label.to_owned(),
            runner,
            stdout,
            stderr,
        })
    }

    fn output(&self) -> String {
        std::fs::read_to_string(&self.stdout).unwrap_or_default()
    }

    fn exited(&mut self) -> bool {
        matches!(self.runner.try_wait(), Ok(Some(_)))
    }

    /// Waits until the output shows `needle`; false when the monitor exited or time ran out.
    fn wait_for(&mut self, needle: &str, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            if self.output().contains(needle) {
                return true;
            }
            if self.exited() || Instant::now() > deadline {
                return false;
            }
            thread::sleep(Duration::from_millis(50));
        }
    }

    /// Stops the monitor (SIGTERM to the runner's child) and returns the runner's figures
    /// line, its CPU time (ms) and the monitor's stderr.
    fn stop(mut self) -> Ended {
        let runner_pid = self.runner.id();
        let children =
            std::fs::read_to_string(format!("/proc/{runner_pid}/task/{runner_pid}/children"))
                .unwrap_or_default();
        for pid in children.split_whitespace() {
            let _ = Command::new("kill")
                .args(["-TERM", pid])
                .stderr(Stdio::null())
                .status();
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        while !self.exited() && Instant::now() < deadline {
            thread::sleep(Duration::from_millis(20));
        }
        if !self.exited() {
            let _ = self.runner.kill();
        }
        let (figures, cpu_ms) = match self.runner.wait_with_output() {
            Ok(out) => {
                let fields: Vec<u64> = String::from_utf8_lossy(&out.stdout)
                    .split_whitespace()
                    .filter_map(|f| f.parse().ok())
                    .collect();
                match fields[..] {
                    [_, cpu_us, rss_kib, _] => {
                        let cpu_ms = cpu_us as f64 / 1e3;
                        let figures = format!(
                            "CPU {cpu_ms:.0} ms (user+sys), peak RSS {:.1} MiB",
                            rss_kib as f64 / 1024.0
                        );
                        (figures, Some(cpu_ms))
                    }
                    _ => ("no figures".to_owned(), None),
                }
            }
            Err(err) => (format!("no figures for `{}`: {err}", self.label), None),
        };
        let stderr = std::fs::read_to_string(&self.stderr).unwrap_or_default();
        Ended {
            figures,
            cpu_ms,
            stderr,
        }
    }
}

/// Whether `dst` (`A.B.C.D/L`) is one of the burst's `n` routes.
fn in_burst(dst: &str, n: usize) -> bool {
    let Some(addr) = dst
        .split('/')
        .next()
        .and_then(|addr| addr.parse::<Ipv4Addr>().ok())
    else {
        return false;
    };
    let start = u64::from(u32::from(MONITOR_BASE));
    let addr = u64::from(u32::from(addr));
    addr >= start && addr < start + (n as u64) * 256
}

/// The `dst` of a route object of `ip -j` / netmirror JSON.
fn dst_of(object: &Value) -> Option<&str> {
    object.get("dst").and_then(Value::as_str)
}

/// What netmirror's JSON monitor printed: burst routes added, removed, and the net set.
#[derive(Debug, Default)]
struct Seen {
    added: usize,
    removed: usize,
    other: usize,
    overruns: usize,
    resyncs: usize,
    unparsed: usize,
    set: HashSet<String>,
}

fn read_netmirror(text: &str, n: usize) -> Seen {
    let mut seen = Seen::default();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let Ok(value) = serde_json::from_str::<Value>(line) else {
            seen.unparsed += 1;
            continue;
        };
        let event = value.get("event").and_then(Value::as_str).unwrap_or("");
        if line.contains("overrun") {
            seen.overruns += 1;
        }
        if line.contains("resync") {
            seen.resyncs += 1;
        }
        let new = value.get("new").and_then(dst_of);
        let old = value.get("old").and_then(dst_of);
        match (event, new, old) {
            ("added", Some(dst), _) if in_burst(dst, n) => {
                seen.added += 1;
                seen.set.insert(dst.to_owned());
            }
            ("removed", _, Some(dst)) if in_burst(dst, n) => {
                seen.removed += 1;
                seen.set.remove(dst);
            }
            _ => seen.other += 1,
        }
    }
    seen
}

/// Scenario 4.
pub(crate) fn run(ctx: &Ctx) -> Section {
    let mut section = Section::new(TITLE);
    if let Err(err) = burst(ctx, &mut section) {
        section.fact("setup", format!("failed: {err:#}"));
    }
    section
}

/// What one burst gave: each monitor's output read, and each process's figures.
struct Round {
    /// How long `ip -batch` took, in seconds.
    took: f64,
    seen: Seen,
    /// Burst routes of a fresh `ip -j route show` afterwards that the JSON monitor's events
    /// lack, and routes its events hold that the dump lacks.
    missing: usize,
    extra: usize,
    /// Seconds from the batch's end to the JSON monitor showing the end marker, if it did.
    ours_drain: Option<f64>,
    ours: Ended,
    text: Ended,
    /// Burst routes the text monitor printed as added, and whether it showed the end marker.
    text_seen: usize,
    text_done: bool,
    reference: Ended,
    /// Burst routes `ip monitor route` printed, and whether it showed the end marker.
    ip_seen: usize,
    ip_done: bool,
}

/// A stopped monitor's figures line, CPU time (ms) and stderr ([`Monitor::stop`]).
struct Ended {
    figures: String,
    cpu_ms: Option<f64>,
    stderr: String,
}

fn burst(ctx: &Ctx, section: &mut Section) -> anyhow::Result<()> {
    let n = ctx.plan.monitor_routes;
    let rounds = ctx.plan.monitor_rounds.max(1);
    section.setup(format!(
        "Each burst ({rounds} in all) runs in a namespace of its own: the three monitors \
         start, a route {SENTINEL_START} shows they listen, then `ip -batch` adds {n} /24 \
         routes from {MONITOR_BASE} `via 192.0.2.2`, then a route {SENTINEL_END} marks the \
         end; each monitor gets up to {}s to show it.{}",
        DRAIN_TIMEOUT.as_secs(),
        if rounds > 1 {
            " The figures are given burst by burst (separated by `;`); the CPU ratios are \
             their median [min–max]."
        } else {
            ""
        }
    ));
    let file = ctx.scratch_file("monitor.batch");
    routes::write_v4_batch(&file, "add", MONITOR_BASE, 0..n, None)?;
    let mut done = Vec::new();
    for round in 1..=rounds {
        progress(&format!("burst {round} of {rounds}"));
        match one_round(ctx, n, &file)? {
            Ok(result) => done.push(result),
            Err(why) => {
                section.fact("netmirror monitor", format!("not available: {why}"));
                return Ok(());
            }
        }
    }
    report(section, n, &done);
    Ok(())
}

/// One burst in a fresh namespace; `Ok(Err(why))` when netmirror's JSON monitor did not show
/// the first route.
fn one_round(
    ctx: &Ctx,
    n: usize,
    batch: &Path,
) -> anyhow::Result<std::result::Result<Round, String>> {
    let ns = routes::route_ns()?;
    let ours_args = ["--netns", ns.name(), "--json", "monitor", "route"];
    let mut ours = Monitor::start(
        ctx,
        "netmirror --json monitor route",
        "netmirror-monitor",
        &ctx.netmirror,
        &ours_args,
    )?;
    let text_args = ["--netns", ns.name(), "monitor", "route"];
    let mut text = Monitor::start(
        ctx,
        "netmirror monitor route",
        "netmirror-monitor-text",
        &ctx.netmirror,
        &text_args,
    )?;
    let ip_args = ["-n", ns.name(), "monitor", "route"];
    let mut reference = Monitor::start(
        ctx,
        "ip monitor route",
        "ip-monitor",
        Path::new("ip"),
        &ip_args,
    )?;
    // Give both time to subscribe, then prove it with a first route.
    thread::sleep(Duration::from_millis(300));
    add_route(&ns, SENTINEL_START)?;
    let ours_ready = ours.wait_for("198.51.100.0", READY_TIMEOUT);
    let text_ready = text.wait_for("198.51.100.0", READY_TIMEOUT);
    let ip_ready = reference.wait_for("198.51.100.0", READY_TIMEOUT);
    if !ours_ready {
        let stderr = ours.stop().stderr;
        let _ = text.stop();
        let _ = reference.stop();
        return Ok(Err(if stderr.trim().is_empty() {
            "printed nothing for the first route".to_owned()
        } else {
            measure::last_lines(&stderr, 1)
        }));
    }
    progress(&format!("adding {n} routes during the monitors"));
    let took = routes::ip_batch(&ns, batch)?;
    add_route(&ns, SENTINEL_END)?;
    let drain_started = Instant::now();
    let ours_done = ours.wait_for("203.0.113.0", DRAIN_TIMEOUT);
    let ours_drain = ours_done.then(|| drain_started.elapsed().as_secs_f64());
    let text_done = text_ready && text.wait_for("203.0.113.0", DRAIN_TIMEOUT);
    let ip_done = ip_ready && reference.wait_for("203.0.113.0", Duration::from_secs(10));
    let ours_text = ours.output();
    let text_text = text.output();
    let ip_text = reference.output();
    let ours = ours.stop();
    let text = text.stop();
    let reference = reference.stop();

    let fresh =
        routes::run_quiet(Command::new("ip").args(["-n", ns.name(), "-j", "route", "show"]))?;
    let fresh: Value = serde_json::from_str(&fresh).context("`ip -j route show` is not JSON")?;
    let fresh: HashSet<String> = fresh
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|route| dst_of(route))
        .filter(|dst| in_burst(dst, n))
        .map(str::to_owned)
        .collect();
    if fresh.len() != n {
        bail!(
            "the fresh dump holds {} of the {n} routes added",
            fresh.len()
        );
    }
    let ip_seen = ip_text
        .lines()
        .filter(|line| {
            line.split_whitespace()
                .next()
                .is_some_and(|dst| in_burst(dst, n))
        })
        .count();
    // The text monitor's lines name the route after `dst `: `[ROUTE] added type unicast dst
    // 80.0.0.0/24 gateway ...`.
    let text_seen = text_text
        .lines()
        .filter(|line| line.starts_with("[ROUTE] added"))
        .filter_map(|line| line.split(" dst ").nth(1)?.split_whitespace().next())
        .filter(|dst| in_burst(dst, n))
        .count();
    let seen = read_netmirror(&ours_text, n);
    Ok(Ok(Round {
        took,
        missing: fresh.difference(&seen.set).count(),
        extra: seen.set.difference(&fresh).count(),
        seen,
        ours_drain,
        ours,
        text,
        text_seen,
        text_done,
        reference,
        ip_seen,
        ip_done,
    }))
}

/// The bursts' figures, burst by burst (joined with `; `), and the median CPU ratios.
fn report(section: &mut Section, n: usize, rounds: &[Round]) {
    let each = |f: &dyn Fn(&Round) -> String| rounds.iter().map(f).collect::<Vec<_>>().join("; ");
    section.fact(
        "`ip -batch` of the burst",
        each(&|r| format!("{n} routes in {:.2} s", r.took)),
    );
    section.headline(
        "netmirror: route-added events for the burst (expected)",
        format!("{} ({n})", each(&|r| r.seen.added.to_string())),
    );
    section.headline(
        "netmirror: overrun / resync lines, other events, unparsed lines",
        each(&|r| {
            let seen = &r.seen;
            format!(
                "{} / {}, {}, {}",
                seen.overruns, seen.resyncs, seen.other, seen.unparsed
            )
        }),
    );
    section.headline(
        "netmirror: routes from its events vs a fresh `ip -j route show`",
        each(&|r| {
            if r.missing == 0 && r.extra == 0 {
                // The fresh dump holds every one of the `n` routes (`one_round`).
                format!("equal ({n} routes)")
            } else {
                format!("differ: {} missing, {} extra", r.missing, r.extra)
            }
        }),
    );
    section.fact(
        "netmirror: end marker seen, after the batch ended",
        each(&|r| match r.ours_drain {
            Some(secs) => format!("yes, {secs:.2} s"),
            None => "no (timed out)".to_owned(),
        }),
    );
    process_facts(
        section,
        (
            "netmirror monitor process (--json)",
            "netmirror monitor stderr (last lines)",
        ),
        rounds,
        |r| &r.ours,
    );
    section.headline(
        "ip monitor route: burst routes printed (expected)",
        each(&|r| printed(r.ip_seen, n, r.ip_done)),
    );
    process_facts(
        section,
        ("ip monitor process", "ip monitor stderr (last lines)"),
        rounds,
        |r| &r.reference,
    );
    section.headline(
        "netmirror monitor route (text): burst routes printed (expected)",
        each(&|r| printed(r.text_seen, n, r.text_done)),
    );
    process_facts(
        section,
        (
            "netmirror monitor process (text)",
            "netmirror monitor (text) stderr (last lines)",
        ),
        rounds,
        |r| &r.text,
    );
    let ratios = |ours: fn(&Round) -> &Ended| -> Vec<f64> {
        rounds
            .iter()
            .filter_map(|r| match (ours(r).cpu_ms, r.reference.cpu_ms) {
                (Some(ours), Some(ip)) if ip > 0.0 => Some(ours / ip),
                _ => None,
            })
            .collect()
    };
    let text = ratios(|r| &r.text);
    let json = ratios(|r| &r.ours);
    section.headline(
        "CPU to absorb the burst, netmirror ÷ ip monitor route: text / --json (target ≤ 0.5, #19)",
        format!("{} / {}", median_spread(&text), median_spread(&json)),
    );
    if rounds.len() > 1 {
        let list = |ratios: &[f64]| {
            ratios
                .iter()
                .map(|r| format!("{r:.2}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        section.fact(
            "CPU ratios burst by burst: text; --json",
            format!("{}; {}", list(&text), list(&json)),
        );
    }
}

/// `seen (n)`, and whether the end marker was missed: what a monitor printed of the burst.
fn printed(seen: usize, n: usize, done: bool) -> String {
    let missed = if done { "" } else { ", end marker not seen" };
    format!("{seen} ({n}){missed}")
}

/// One monitor's process figures, burst by burst, under `keys.0`, and the last lines of each
/// burst's stderr under `keys.1` if any burst printed some.
fn process_facts(
    section: &mut Section,
    keys: (&str, &str),
    rounds: &[Round],
    ended: fn(&Round) -> &Ended,
) {
    let figures: Vec<&str> = rounds.iter().map(|r| ended(r).figures.as_str()).collect();
    section.fact(keys.0, figures.join("; "));
    let lines: Vec<String> = rounds
        .iter()
        .map(|r| ended(r).stderr.as_str())
        .filter(|stderr| !stderr.trim().is_empty())
        .map(|stderr| measure::last_lines(stderr, 2))
        .collect();
    if !lines.is_empty() {
        section.fact(keys.1, lines.join("; "));
    }
}

/// The median of `ratios`, with their spread when there are several: `0.47`, `0.47
/// [0.45–0.52]`, or `--` for none.
fn median_spread(ratios: &[f64]) -> String {
    let spread = measure::Spread::of(ratios.to_vec());
    match ratios.len() {
        0 => "--".to_owned(),
        1 => format!("{:.2}", spread.median),
        _ => spread.show(2),
    }
}

fn add_route(ns: &NetNs, dst: &str) -> anyhow::Result<()> {
    routes::run_quiet(Command::new("ip").args([
        "-n",
        ns.name(),
        "route",
        "add",
        dst,
        "via",
        "192.0.2.2",
    ]))
    .map(drop)
}
