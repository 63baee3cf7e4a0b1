//! `cargo xtask soak [--minutes N] [--dev]`: a long run of kernel churn and D-Bus churn with
//! netmirror's monitors following them, not part of CI (30 minutes by default).
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
//! The D-Bus half runs at the same time: client-cache's `soak_service` example starts a private
//! `dbus-daemon` and an ObjectManager service on it (`org.example.Soak`), and
//! `netmirror --bus ADDRESS -t -f path objects monitor --service org.example.Soak` follows it
//! while the service, in rounds, adds 200 objects, removes the 200 of the round before the
//! last and announces 2,000 property names it invalidates again (the names never repeat). Its
//! memory is sampled with the kernel monitor's; at the end the churn stops and the set of
//! objects the monitor's event stream adds up to must equal what `GetManagedObjects` returns
//! to another client (`soak_service managed`). The same memory rule applies to it.
//! (xtask depends on no crate of the workspace: it builds and runs the example.)

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
    let netmirror = build(
        release,
        &["-p", "netmirror", "--bin", "netmirror"],
        "/netmirror",
    )?;
    let soak_service = build(
        release,
        &["-p", "netmirror-client-cache", "--example", "soak_service"],
        "/soak_service",
    )?;
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
    let mut dbus = DbusHalf::start(&soak_service, &netmirror)?;

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
        dbus.check()?;
        if Instant::now() >= next_sample {
            let rss = rss_kib(pid)?;
            let lines = seen.lock().map(|seen| seen.n_lines).unwrap_or(0);
            eprintln!(
                "  {:>6.0} s  RSS {:>8} KiB  {lines} events",
                started.elapsed().as_secs_f64(),
                rss
            );
            samples.push((started.elapsed(), rss));
            let dbus_rss = dbus.sample(started.elapsed())?;
            eprintln!(
                "   (D-Bus)  RSS {dbus_rss:>8} KiB  {} events of the objects monitor",
                dbus.lines()
            );
            next_sample += SAMPLE_EVERY;
        }
        churn(&ns, round)?;
        round += 1;
    }

    let service_rounds = dbus.stop_churn()?;
    // Let the monitors catch up (a resync after an overflow waits for quiet).
    std::thread::sleep(Duration::from_secs(10));
    let final_rss = rss_kib(pid)?;
    samples.push((started.elapsed(), final_rss));
    dbus.sample(started.elapsed())?;
    let expected = ip_table_100(&ns)?;
    eprintln!("\nxtask: D-Bus soak report ({service_rounds} service rounds, {minutes} min)");
    let dbus_report = dbus.finish(&soak_service);
    if let Err(e) = &dbus_report {
        eprintln!("  FAILED: {e:#}");
    }
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
    dbus_report
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

/// Builds what `what` names (cargo's target options) and returns the path of the executable
/// whose path ends with `suffix`.
fn build(release: bool, what: &[&str], suffix: &str) -> anyhow::Result<std::path::PathBuf> {
    let mut build = cmd::cargo();
    build.arg("build");
    if release {
        build.arg("--release");
    }
    build
        .args(what)
        .arg("--message-format=json-render-diagnostics");
    let messages = cmd::read(build.stderr(Stdio::inherit()))?;
    messages
        .lines()
        .filter(|line| line.contains(r#""reason":"compiler-artifact""#))
        .filter_map(|line| cmd::json_str(line, "executable"))
        .find(|exe| exe.ends_with(suffix))
        .map(std::path::PathBuf::from)
        .with_context(|| format!("cargo build named no {suffix} executable"))
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

/// The service's bus name (client-cache's `soak_service` example).
const SOAK_SERVICE: &str = "org.example.Soak";

/// What the objects monitor's event stream says the service holds, and what else it reported.
#[derive(Debug, Default)]
struct SeenObjects {
    paths: BTreeSet<String>,
    n_lines: u64,
    n_overruns: u64,
    n_resyncs: u64,
    n_reconciles: u64,
}

/// The D-Bus half: the `soak_service` child (private bus and churning service) and
/// `netmirror objects monitor` following it. Both are killed on drop.
struct DbusHalf {
    service: Child,
    service_out: BufReader<std::process::ChildStdout>,
    address: String,
    monitor: Child,
    seen: Arc<Mutex<SeenObjects>>,
    reader: Option<std::thread::JoinHandle<()>>,
    samples: Vec<(Duration, u64)>,
}

impl DbusHalf {
    /// Starts the bus and service, then the monitor, waits for the monitor's load, and then
    /// starts the churn (so the monitor's stream holds every object from the first).
    fn start(soak_service: &std::path::Path, netmirror: &std::path::Path) -> anyhow::Result<Self> {
        let mut service = Command::new(soak_service)
            .arg("serve")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .context("cannot start soak_service")?;
        let mut service_out = BufReader::new(service.stdout.take().context("service stdout")?);
        let mut address = String::new();
        service_out.read_line(&mut address)?;
        let address = address.trim().to_owned();
        if address.is_empty() {
            let _ = service.kill();
            bail!("soak_service printed no bus address");
        }
        let mut monitor = Command::new(netmirror)
            .args([
                "--bus",
                &address,
                "-t",
                "-f",
                "path",
                "objects",
                "monitor",
                "--service",
                SOAK_SERVICE,
            ])
            .env("RUST_LOG", "netmirror::objects=debug")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .context("cannot start netmirror objects monitor")?;
        let seen = Arc::new(Mutex::new(SeenObjects::default()));
        let (ready_tx, ready) = std::sync::mpsc::channel();
        let reader = follow_objects(&mut monitor, Arc::clone(&seen), ready_tx)?;
        let mut half = DbusHalf {
            service,
            service_out,
            address,
            monitor,
            seen,
            reader: Some(reader),
            samples: Vec::new(),
        };
        if ready.recv_timeout(Duration::from_secs(60)).is_err() {
            bail!("netmirror objects monitor did not load within 60 s");
        }
        half.tell("start")?;
        eprintln!(
            "xtask: D-Bus churn on {} (objects monitor pid {})",
            half.address,
            half.monitor.id()
        );
        Ok(half)
    }

    fn tell(&mut self, line: &str) -> anyhow::Result<()> {
        let stdin = self.service.stdin.as_mut().context("service stdin")?;
        writeln!(stdin, "{line}")?;
        stdin.flush()?;
        Ok(())
    }

    /// Fails when the service or the monitor ended.
    fn check(&mut self) -> anyhow::Result<()> {
        if let Some(status) = self.service.try_wait()? {
            bail!("soak_service ended during the soak: {status}");
        }
        if let Some(status) = self.monitor.try_wait()? {
            bail!("the objects monitor ended during the soak: {status}");
        }
        Ok(())
    }

    /// Samples the monitor's memory and returns it.
    fn sample(&mut self, at: Duration) -> anyhow::Result<u64> {
        let rss = rss_kib(self.monitor.id())?;
        self.samples.push((at, rss));
        Ok(rss)
    }

    fn lines(&self) -> u64 {
        self.seen.lock().map(|seen| seen.n_lines).unwrap_or(0)
    }

    /// Ends the churn and returns the service's rounds.
    fn stop_churn(&mut self) -> anyhow::Result<String> {
        self.tell("stop")?;
        let mut quiet = String::new();
        self.service_out.read_line(&mut quiet)?;
        quiet
            .trim()
            .strip_prefix("quiet ")
            .and_then(|rest| rest.strip_suffix(" rounds"))
            .map(str::to_owned)
            .with_context(|| format!("soak_service said {quiet:?}, not `quiet N rounds`"))
    }

    /// Compares the monitor's objects with `GetManagedObjects`, reports, stops everything.
    fn finish(mut self, soak_service: &std::path::Path) -> anyhow::Result<()> {
        let managed = cmd::read(
            Command::new(soak_service)
                .args(["managed", &self.address])
                .stderr(Stdio::piped()),
        )?;
        let mut expected = BTreeSet::new();
        let mut interfaces = 0;
        for line in managed.lines() {
            match line.strip_prefix("interfaces ") {
                Some(n) => interfaces = n.parse().context("soak_service managed")?,
                None => {
                    expected.insert(line.to_owned());
                }
            }
        }
        let pid = self.monitor.id();
        let _ = Command::new("kill")
            .args(["-INT", &pid.to_string()])
            .status();
        let status = self.monitor.wait()?;
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
        for (at, rss) in &self.samples {
            eprintln!("  {:>6.0} s  RSS {rss:>8} KiB", at.as_secs_f64());
        }
        let seen = self
            .seen
            .lock()
            .map_err(|_| anyhow::anyhow!("reader panicked"))?;
        eprintln!(
            "  {} events, {} overruns, {} resyncs, {} reconciles; monitor ended with {status}",
            seen.n_lines, seen.n_overruns, seen.n_resyncs, seen.n_reconciles
        );
        let quarter = (self.samples.len() / 4).max(1);
        let max_of = |samples: &[(Duration, u64)]| samples.iter().map(|s| s.1).max().unwrap_or(0);
        let first = max_of(&self.samples[..quarter.min(self.samples.len())]);
        let last = max_of(&self.samples[self.samples.len().saturating_sub(quarter)..]);
        eprintln!("  RSS first quarter (max) {first} KiB, last quarter (max) {last} KiB");
        if seen.paths != expected {
            let missing: Vec<_> = expected.difference(&seen.paths).take(10).collect();
            let extra: Vec<_> = seen.paths.difference(&expected).take(10).collect();
            bail!(
                "the objects monitor's view ({} objects) differs from GetManagedObjects ({}): \
                 missing {missing:?}, extra {extra:?}",
                seen.paths.len(),
                expected.len()
            );
        }
        eprintln!(
            "  final state: the objects monitor's objects equal GetManagedObjects ({} objects, \
             {interfaces} interfaces)",
            expected.len()
        );
        if self.samples.len() >= 8 && last > first.saturating_mul(2) {
            bail!("the objects monitor's memory grew from {first} KiB to {last} KiB");
        }
        // `objects monitor` does not catch SIGINT yet (the kernel monitor does): dying of it is
        // said, not failed on.
        if std::os::unix::process::ExitStatusExt::signal(&status) == Some(2) {
            eprintln!("  note: the objects monitor does not catch SIGINT yet (it died of it)");
        } else if !status.success() {
            bail!("the objects monitor did not end cleanly on SIGINT: {status}");
        }
        Ok(())
    }
}

impl Drop for DbusHalf {
    fn drop(&mut self) {
        let _ = self.monitor.kill();
        let _ = self.monitor.wait();
        // Its stdin closes: it stops serving and takes its bus with it.
        drop(self.service.stdin.take());
        if self.service.wait_timeout_secs(5).is_none() {
            let _ = self.service.kill();
            let _ = self.service.wait();
        }
    }
}

/// `Child::wait` with a deadline.
trait WaitTimeout {
    fn wait_timeout_secs(&mut self, secs: u64) -> Option<std::process::ExitStatus>;
}

impl WaitTimeout for Child {
    fn wait_timeout_secs(&mut self, secs: u64) -> Option<std::process::ExitStatus> {
        let until = Instant::now() + Duration::from_secs(secs);
        while Instant::now() < until {
            if let Ok(Some(status)) = self.try_wait() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        None
    }
}

/// Reads the objects monitor's terse lines on a thread, keeping the set of objects they add
/// up to (`object:added:PATH`, `object:removed:PATH`, `cache:overrun`, ...); `ready` is told
/// once the monitor has loaded (its debug log says `monitor ready`).
fn follow_objects(
    monitor: &mut Child,
    seen: Arc<Mutex<SeenObjects>>,
    ready: std::sync::mpsc::Sender<()>,
) -> anyhow::Result<std::thread::JoinHandle<()>> {
    let stdout = monitor.stdout.take().context("objects monitor stdout")?;
    let stderr = monitor.stderr.take().context("objects monitor stderr")?;
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if line.contains("monitor ready") {
                let _ = ready.send(());
            }
            if line.contains("WARN") || line.contains("ERROR") || line.starts_with("netmirror:") {
                eprintln!("  objects monitor: {line}");
            }
        }
    });
    Ok(std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let Ok(mut seen) = seen.lock() else { return };
            seen.n_lines += 1;
            match line.split_once(':') {
                Some(("object", rest)) => match rest.split_once(':') {
                    Some(("added", path)) => {
                        seen.paths.insert(path.to_owned());
                    }
                    Some(("removed", path)) => {
                        seen.paths.remove(path);
                    }
                    _ => {}
                },
                Some(("cache", "overrun")) => seen.n_overruns += 1,
                Some(("cache", "resynced")) => seen.n_resyncs += 1,
                Some(("cache", "reconciled")) => seen.n_reconciles += 1,
                _ => {}
            }
        }
    }))
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
