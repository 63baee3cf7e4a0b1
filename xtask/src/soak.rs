//! `cargo xtask soak [--minutes N] [--dev]`: a long run of kernel churn with `netmirror monitor`
//! following it, not part of CI (30 minutes by default).
//!
//! It builds the `netmirror` binary (release; `--dev` for a quick debug build), makes a throwaway namespace `nmx-soak-PID` with
//! a veth pair, starts `netmirror --netns NS -t -f dst,table monitor route` and churns the
//! namespace with `ip -batch` rounds: routes of table 100 added and deleted, addresses added
//! and deleted, the link's MTU changed and the link set down and up (which flushes routes
//! silently, so the monitor's cache must find out by itself). Every 10 seconds it samples the
//! monitor's resident memory (`VmRSS`); at the end it lets the namespace settle, checks that
//! the table-100 routes the monitor's event stream adds up to equal what `ip -j route show
//! table 100` says, and prints the memory over time. It fails when the state differs, when
//! the monitor ended early, or when its memory in the last quarter of the run grew past
//! twice that of the first quarter (leaks, unbounded maps).
//!
//! The D-Bus half of the soak is not here yet.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

use crate::cmd;

/// How often the monitor's memory is sampled.
const SAMPLE_EVERY: Duration = Duration::from_secs(10);

/// Routes added per churn round (half of them are deleted again in the same round).
const ROUTES_PER_ROUND: u32 = 2000;

/// What the monitor's event stream says table 100 holds, and what else it reported.
#[derive(Debug, Default)]
struct Seen {
    routes: BTreeSet<String>,
    n_lines: u64,
    n_overruns: u64,
    n_resyncs: u64,
}

/// Runs the soak.
pub(crate) fn run(args: &[String]) -> anyhow::Result<()> {
    let (minutes, release) = parse(args)?;
    if !crate::system::is_root() {
        bail!("the soak makes a network namespace: run it as root");
    }
    let netmirror = build(release)?;
    let ns = Namespace::create()?;
    ns.ip(&[
        "link", "add", "soak0", "type", "veth", "peer", "name", "soak1",
    ])?;
    ns.ip(&["addr", "add", "192.0.2.1/24", "dev", "soak0"])?;
    ns.ip(&["link", "set", "soak0", "up"])?;
    ns.ip(&["link", "set", "soak1", "up"])?;

    let mut monitor = Command::new(&netmirror)
        .args([
            "--netns",
            &ns.name,
            "-t",
            "-f",
            "dst,table",
            "monitor",
            "route",
        ])
        .env("RUST_LOG", "netmirror::monitor=debug")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .context("cannot start netmirror monitor")?;
    let pid = monitor.id();
    let seen = Arc::new(Mutex::new(Seen::default()));
    let reader = follow(&mut monitor, Arc::clone(&seen))?;

    let duration = Duration::from_secs(minutes * 60);
    eprintln!(
        "xtask: soak for {minutes} min in {} (monitor pid {pid})",
        ns.name
    );
    let started = Instant::now();
    let mut samples = Vec::new();
    // The first sample after the monitor's load and first events, not before.
    let mut next_sample = started + SAMPLE_EVERY;
    let mut round = 0u32;
    while started.elapsed() < duration {
        if let Some(status) = monitor.try_wait()? {
            bail!("the monitor ended during the soak: {status}");
        }
        if Instant::now() >= next_sample {
            let rss = rss_kib(pid)?;
            let lines = seen.lock().map(|seen| seen.n_lines).unwrap_or(0);
            eprintln!(
                "  {:>6.0} s  RSS {:>8} KiB  {lines} events",
                started.elapsed().as_secs_f64(),
                rss
            );
            samples.push((started.elapsed(), rss));
            next_sample += SAMPLE_EVERY;
        }
        churn(&ns, round)?;
        round += 1;
    }

    // Let the monitor catch up (a resync after an overflow waits for quiet).
    std::thread::sleep(Duration::from_secs(10));
    let final_rss = rss_kib(pid)?;
    samples.push((started.elapsed(), final_rss));
    let expected = ip_table_100(&ns)?;
    let _ = Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status();
    let status = monitor.wait()?;
    let _ = reader.join();
    let seen = seen
        .lock()
        .map_err(|_| anyhow::anyhow!("reader panicked"))?;

    eprintln!("\nxtask: soak report ({round} churn rounds, {minutes} min)");
    for (at, rss) in &samples {
        eprintln!("  {:>6.0} s  RSS {rss:>8} KiB", at.as_secs_f64());
    }
    eprintln!(
        "  {} events, {} overruns, {} resyncs; monitor ended with {status}",
        seen.n_lines, seen.n_overruns, seen.n_resyncs
    );
    let quarter = (samples.len() / 4).max(1);
    let first = samples[..quarter]
        .iter()
        .map(|(_, rss)| *rss)
        .max()
        .unwrap_or(0);
    let last = samples[samples.len() - quarter..]
        .iter()
        .map(|(_, rss)| *rss)
        .max()
        .unwrap_or(0);
    eprintln!("  RSS first quarter (max) {first} KiB, last quarter (max) {last} KiB");
    if seen.routes != expected {
        let missing: Vec<_> = expected.difference(&seen.routes).take(10).collect();
        let extra: Vec<_> = seen.routes.difference(&expected).take(10).collect();
        bail!(
            "the monitor's table 100 ({} routes) differs from ip's ({}): missing {missing:?}, \
             extra {extra:?}",
            seen.routes.len(),
            expected.len()
        );
    }
    eprintln!(
        "  final state: the monitor's table 100 equals `ip -j route show table 100` ({} routes)",
        expected.len()
    );
    if samples.len() >= 8 && last > first.saturating_mul(2) {
        bail!("the monitor's memory grew from {first} KiB to {last} KiB");
    }
    if !status.success() {
        bail!("the monitor did not end cleanly on SIGINT: {status}");
    }
    Ok(())
}

/// `--minutes N` (default 30) and `--dev` (a debug build instead of a release one).
fn parse(args: &[String]) -> anyhow::Result<(u64, bool)> {
    let mut minutes = 30;
    let mut release = true;
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--minutes" => {
                minutes = args
                    .next()
                    .and_then(|value| value.parse().ok())
                    .filter(|&value| value > 0)
                    .context("--minutes needs a positive number")?;
            }
            "--dev" => release = false,
            other => bail!("unknown soak option `{other}` (expected --minutes N, --dev)"),
        }
    }
    Ok((minutes, release))
}

/// Builds the binary and returns its path.
fn build(release: bool) -> anyhow::Result<std::path::PathBuf> {
    let mut build = cmd::cargo();
    build.arg("build");
    if release {
        build.arg("--release");
    }
    build.args([
        "-p",
        "netmirror",
        "--bin",
        "netmirror",
        "--message-format=json-render-diagnostics",
    ]);
    let messages = cmd::read(build.stderr(Stdio::inherit()))?;
    messages
        .lines()
        .filter(|line| line.contains(r#""reason":"compiler-artifact""#))
        .filter_map(|line| cmd::json_str(line, "executable"))
        .find(|exe| exe.ends_with("/netmirror"))
        .map(std::path::PathBuf::from)
        .context("cargo build named no netmirror executable")
}

/// Reads the monitor's terse lines on a thread, keeping the set of table-100 routes they add
/// up to: `route:added:DST:100`, `route:removed:DST:100`, `cache:overrun`, `cache:resynced`.
fn follow(
    monitor: &mut Child,
    seen: Arc<Mutex<Seen>>,
) -> anyhow::Result<std::thread::JoinHandle<()>> {
    let stdout = monitor.stdout.take().context("monitor stdout")?;
    let stderr = monitor.stderr.take().context("monitor stderr")?;
    // Its log is drained so it never blocks; shown only when it warns.
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if line.contains("WARN") || line.contains("ERROR") || line.starts_with("netmirror:") {
                eprintln!("  monitor: {line}");
            }
        }
    });
    Ok(std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let Ok(mut seen) = seen.lock() else { return };
            seen.n_lines += 1;
            let parts: Vec<&str> = line.split(':').collect();
            match parts.as_slice() {
                ["route", event, dst, "100"] => {
                    if *event == "removed" {
                        seen.routes.remove(*dst);
                    } else {
                        seen.routes.insert((*dst).to_owned());
                    }
                }
                ["cache", "overrun"] => seen.n_overruns += 1,
                ["cache", "resynced"] => seen.n_resyncs += 1,
                _ => {}
            }
        }
    }))
}

/// One round of churn: routes of table 100 added and half of them deleted, an address added
/// and deleted, the MTU changed; every tenth round the link goes down and up.
fn churn(ns: &Namespace, round: u32) -> anyhow::Result<()> {
    let mut script = String::new();
    let base = (round % 64) * ROUTES_PER_ROUND;
    for i in 0..ROUTES_PER_ROUND {
        let n = base + i;
        script.push_str(&format!(
            "route replace 10.{}.{}.{}/32 dev soak0 table 100\n",
            100 + (n >> 16),
            (n >> 8) & 0xff,
            n & 0xff
        ));
    }
    for i in (0..ROUTES_PER_ROUND).step_by(2) {
        let n = base + i;
        script.push_str(&format!(
            "route del 10.{}.{}.{}/32 dev soak0 table 100\n",
            100 + (n >> 16),
            (n >> 8) & 0xff,
            n & 0xff
        ));
    }
    let addr = format!("198.18.{}.{}/32", (round >> 8) & 0xff, round & 0xff);
    script.push_str(&format!("address add {addr} dev soak0\n"));
    script.push_str(&format!("address del {addr} dev soak0\n"));
    script.push_str(&format!("link set soak0 mtu {}\n", 1280 + round % 200));
    if round % 10 == 9 {
        script.push_str("link set soak0 down\nlink set soak0 up\n");
    }
    let mut ip = Command::new("ip")
        .args(["-n", &ns.name, "-force", "-batch", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .context("cannot start ip -batch")?;
    ip.stdin
        .take()
        .context("ip stdin")?
        .write_all(script.as_bytes())?;
    // Some deletes fail when a down link flushed their routes: that is churn too.
    let _ = ip.wait()?;
    Ok(())
}

/// The destinations of table 100 as `ip -j` lists them.
fn ip_table_100(ns: &Namespace) -> anyhow::Result<BTreeSet<String>> {
    let json = cmd::read(
        Command::new("ip").args(["-j", "-n", &ns.name, "route", "show", "table", "100"]),
    )?;
    Ok(json
        .split("\"dst\":\"")
        .skip(1)
        .filter_map(|rest| rest.split('"').next())
        .map(str::to_owned)
        .collect())
}

/// `VmRSS` of a process, in KiB.
fn rss_kib(pid: u32) -> anyhow::Result<u64> {
    let status =
        std::fs::read_to_string(format!("/proc/{pid}/status")).context("the monitor is gone")?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .context("no VmRSS in /proc/PID/status")
}

/// A throwaway network namespace, deleted on drop.
struct Namespace {
    name: String,
}

impl Namespace {
    fn create() -> anyhow::Result<Namespace> {
        let name = format!("nmx-soak-{}", std::process::id());
        cmd::read(Command::new("ip").args(["netns", "add", &name]))?;
        let ns = Namespace { name };
        ns.ip(&["link", "set", "lo", "up"])?;
        Ok(ns)
    }

    fn ip(&self, args: &[&str]) -> anyhow::Result<()> {
        cmd::read(Command::new("ip").args(["-n", &self.name]).args(args)).map(drop)
    }
}

impl Drop for Namespace {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["netns", "delete", &self.name])
            .status();
    }
}
