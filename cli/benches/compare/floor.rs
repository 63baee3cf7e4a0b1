//! Scenario 2's load against the raw dump floor, as `platform/examples/measure.rs`'s `compare`
//! mode defines it: the time the platform's `Cache::open` takes to load a namespace (what
//! `netmirror route count` does) over the time of a dump of the same namespace's IPv4 and IPv6
//! routes into one 32 KiB buffer with nothing parsed.
//!
//! Each side runs in a process of its own (this bench binary re-executed with [`FLOOR_ARG`]),
//! which enters the namespace first and then times only the load or the dump, so neither
//! process start nor the namespace switch is in the figure. The two alternate, after one
//! unmeasured run each.

use std::ffi::OsString;
use std::fs::File;
use std::io::Write as _;
use std::os::fd::AsFd;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use netlink_sys::{Socket, protocols::NETLINK_ROUTE};
use netmirror_platform::{Cache, Config, Netns};
use nix::sys::resource::{UsageWho, getrusage};
use rustix::thread::{LinkNameSpaceType, move_into_link_name_space};

use super::measure::{Cmd, Figures, Sample, last_lines};
use super::report::{Comparison, Outcome};
use crate::{Ctx, progress};

/// The first argument that makes this binary a load or raw-dump child: `FLOOR_ARG raw|cache
/// NETNS`. It prints `elapsed_ns cpu_us maxrss_kib` of the timed part.
pub(crate) const FLOOR_ARG: &str = "__netmirror_bench_floor";

/// Issue #13's target for the load over the floor (600k and 1M IPv4).
const TARGET_13: f64 = 1.5;
/// Issue #19's target.
const TARGET_19: f64 = 1.25;

/// The child: times a raw dump or a cache load in the namespace named by `args[1]`.
pub(crate) fn floor_main(args: &[OsString]) -> ExitCode {
    let args: Vec<String> = args
        .iter()
        .map(|arg| arg.to_string_lossy().into_owned())
        .collect();
    let result = match args.as_slice() {
        [mode, netns] if mode == "raw" => raw_dump(netns),
        [mode, netns] if mode == "cache" => cache_load(netns),
        _ => Err(anyhow::anyhow!("usage: {FLOOR_ARG} raw|cache NETNS")),
    };
    match result {
        Ok(line) => {
            let mut stdout = std::io::stdout();
            if writeln!(stdout, "{line}").is_err() {
                return ExitCode::FAILURE;
            }
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("floor: {err:#}");
            ExitCode::FAILURE
        }
    }
}

/// User+sys CPU time of this process, every thread included.
fn cpu_self() -> anyhow::Result<Duration> {
    let usage = getrusage(UsageWho::RUSAGE_SELF).context("getrusage")?;
    let micros = |tv: nix::sys::time::TimeVal| {
        u64::try_from(tv.tv_sec()).unwrap_or(0) * 1_000_000
            + u64::try_from(tv.tv_usec()).unwrap_or(0)
    };
    Ok(Duration::from_micros(
        micros(usage.user_time()) + micros(usage.system_time()),
    ))
}

/// The child's answer line. The peak RSS is `VmHWM`, this process image's own high-water
/// mark: `ru_maxrss` of `RUSAGE_SELF` would include the memory of the bench process that
/// spawned it, carried over the exec.
fn answer(elapsed: Duration, cpu: Duration) -> anyhow::Result<String> {
    let status = std::fs::read_to_string("/proc/self/status").context("/proc/self/status")?;
    let hwm_kib: u64 = status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|kib| kib.parse().ok())
        .context("no VmHWM in /proc/self/status")?;
    Ok(format!(
        "{} {} {hwm_kib}",
        elapsed.as_nanos(),
        cpu.as_micros()
    ))
}

/// The floor: dumps all IPv4 and IPv6 routes with one 32 KiB buffer and parses nothing but
/// the message headers (to find the end of each dump), like measure.rs's `raw` mode.
fn raw_dump(netns: &str) -> anyhow::Result<String> {
    let file = File::open(format!("/run/netns/{netns}"))
        .with_context(|| format!("cannot open namespace {netns}"))?;
    move_into_link_name_space(file.as_fd(), Some(LinkNameSpaceType::Network))
        .context("cannot enter the namespace")?;
    let mut socket = Socket::new(NETLINK_ROUTE)?;
    socket.bind_auto()?;
    let cpu0 = cpu_self()?;
    let start = Instant::now();
    for (seq, family) in [(1u32, 2u8), (2, 10)] {
        // nlmsghdr (RTM_GETROUTE, NLM_F_REQUEST | NLM_F_DUMP) and a zeroed rtmsg.
        let mut request = Vec::with_capacity(28);
        request.extend_from_slice(&28u32.to_ne_bytes());
        request.extend_from_slice(&26u16.to_ne_bytes());
        request.extend_from_slice(&0x301u16.to_ne_bytes());
        request.extend_from_slice(&seq.to_ne_bytes());
        request.extend_from_slice(&0u32.to_ne_bytes());
        request.extend_from_slice(&[family, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        socket.send(&request, 0)?;
        let mut buf: Vec<u8> = Vec::with_capacity(32 * 1024);
        'dump: loop {
            buf.clear();
            let n = socket.recv(&mut buf, 0)?;
            if n == 0 {
                bail!("the dump ended without NLMSG_DONE");
            }
            let mut at = 0;
            while at + 16 <= n {
                let len = u32::from_ne_bytes([buf[at], buf[at + 1], buf[at + 2], buf[at + 3]]);
                match u16::from_ne_bytes([buf[at + 4], buf[at + 5]]) {
                    // NLMSG_DONE
                    3 => break 'dump,
                    // NLMSG_ERROR
                    2 => bail!("the kernel answered the dump with an error"),
                    _ => {}
                }
                at += (len as usize + 3) & !3;
            }
        }
    }
    let elapsed = start.elapsed();
    answer(elapsed, cpu_self()? - cpu0)
}

/// The load: `Cache::open` of the namespace, as `netmirror route count` does.
fn cache_load(netns: &str) -> anyhow::Result<String> {
    let cpu0 = cpu_self()?;
    let start = Instant::now();
    let cache = Cache::open(Config::new().with_netns(Netns::name(netns)))
        .context("cannot load the cache")?;
    let elapsed = start.elapsed();
    let cpu = cpu_self()? - cpu0;
    drop(cache);
    answer(elapsed, cpu)
}

/// One run of a child.
fn sample(cmd: &Cmd) -> anyhow::Result<Sample> {
    let (ok, stdout, stderr) = cmd.output()?;
    if !ok {
        bail!("`{}` failed: {}", cmd.label, last_lines(&stderr, 2));
    }
    let fields: Vec<u64> = stdout
        .split_whitespace()
        .filter_map(|field| field.parse().ok())
        .collect();
    let [elapsed_ns, cpu_us, maxrss_kib] = fields[..] else {
        bail!("`{}` printed {stdout:?}", cmd.label);
    };
    Ok(Sample {
        wall: Duration::from_nanos(elapsed_ns),
        cpu: Duration::from_micros(cpu_us),
        maxrss_kib,
    })
}

/// The setup line scenario 2 shows once.
pub(crate) const SETUP: &str = "Load / raw dump floor: in the same namespace, the platform's \
     `Cache::open` (the load `netmirror route count` does: links, addresses, rules, nexthops and \
     routes of both families) against a raw dump of the IPv4 and IPv6 routes into one 32 KiB \
     buffer with nothing parsed (as `platform/examples/measure.rs`'s `raw` mode). Each runs in \
     a process of its own that enters the namespace and then times only the load or the dump \
     (so the wall column of these rows is that in-process time, the CPU column the process's \
     user+sys CPU over it, the peak RSS the child's `VmHWM`); they alternate after one \
     unmeasured run each. Targets for 600k and 1M IPv4: ≤ 1.5× (#13), ≤ 1.25× (#19).";

/// Compares the load with the floor in `netns`; the case is called `{what} load / raw dump
/// floor`. Returns the comparison and the headline text, which says whether the targets are
/// met when `judged` (the sizes they are set for: 600k and 1M IPv4).
pub(crate) fn compare(ctx: &Ctx, netns: &str, what: &str, judged: bool) -> (Comparison, String) {
    let case = format!("{what} load / raw dump floor (targets ≤1.5 #13, ≤1.25 #19)");
    progress(&format!("{case}: Cache::open vs raw dump"));
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(err) => {
            let why = format!("failed: cannot find the bench binary: {err}");
            return (missing(&case, &why), why);
        }
    };
    let load = Cmd::new(
        "Cache::open (the load of route count)",
        &exe,
        &[FLOOR_ARG, "cache", netns],
    );
    let raw = Cmd::new(
        "raw route dump, nothing parsed",
        &exe,
        &[FLOOR_ARG, "raw", netns],
    );
    match alternate(&load, &raw, ctx.plan.runs) {
        Ok((a, b)) => {
            let ratio = a.wall_ms.median / b.wall_ms.median;
            let verdict = |target: f64| match (judged, ratio <= target) {
                (false, _) => "",
                (true, true) => " met",
                (true, false) => " missed",
            };
            let headline = format!(
                "{ratio:.2}× (load {:.1} ms, raw dump {:.1} ms, medians of {} alternated runs); \
                 targets at 600k/1M IPv4: ≤ {TARGET_13}× (#13){}, ≤ {TARGET_19}× (#19){}",
                a.wall_ms.median,
                b.wall_ms.median,
                a.runs,
                verdict(TARGET_13),
                verdict(TARGET_19),
            );
            (
                Comparison {
                    case,
                    netmirror: Outcome::Measured(a),
                    reference: Outcome::Measured(b),
                },
                headline,
            )
        }
        Err(err) => {
            let why = format!("failed: {err:#}");
            (missing(&case, &why), why)
        }
    }
}

fn missing(case: &str, why: &str) -> Comparison {
    let side = |label: &str| Outcome::Missing {
        label: label.to_owned(),
        why: why.to_owned(),
    };
    Comparison {
        case: case.to_owned(),
        netmirror: side("Cache::open"),
        reference: side("raw route dump"),
    }
}

/// `runs` samples of each, alternating, after one unmeasured run of each.
fn alternate(a: &Cmd, b: &Cmd, runs: usize) -> anyhow::Result<(Figures, Figures)> {
    sample(a)?;
    sample(b)?;
    let mut samples_a = Vec::with_capacity(runs);
    let mut samples_b = Vec::with_capacity(runs);
    for run in 0..runs {
        if run % 2 == 0 {
            samples_a.push(sample(a)?);
            samples_b.push(sample(b)?);
        } else {
            samples_b.push(sample(b)?);
            samples_a.push(sample(a)?);
        }
    }
    Ok((
        Figures::of(&a.label, &samples_a),
        Figures::of(&b.label, &samples_b),
    ))
}
