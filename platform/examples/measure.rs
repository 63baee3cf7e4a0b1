//! Measures the platform against the kernel's raw dump in an existing namespace: load time,
//! bytes per route, resync, filtered query and batch. Prints to stderr, one line per run.
//!
//! ```text
//! cargo run --release -p netmirror-platform --example measure -- raw NETNS
//! cargo run --release -p netmirror-platform --example measure -- cache NETNS [EMPTY_NETNS]
//! cargo run --release -p netmirror-platform --example measure -- query NETNS
//! cargo run --release -p netmirror-platform --example measure -- resync NETNS
//! cargo run --release -p netmirror-platform --example measure -- table NETNS 100
//! cargo run --release -p netmirror-platform --example measure -- batch NETNS DEV GATEWAY N
//! ```
//!
//! `cache` reports the memory the way issue #6 defines it: RSS after the load minus the RSS of
//! an empty cache, divided by the number of routes. With `EMPTY_NETNS` (a namespace without
//! routes) the empty cache is a real one, opened there and kept open during the load; without
//! it, the RSS before the load stands in for it.
//!
//! With the `testing` feature, `compare` does the whole comparison in namespaces it makes
//! (`nmx-` names, deleted at the end) and prints medians:
//!
//! ```text
//! cargo run --release -p netmirror-platform --features testing --example measure -- \
//!     compare v4|v6 N [RUNS]
//! ```
//!
//! It fills a namespace with N routes (IPv4 `/28`s via 192.0.2.2, or IPv6 `/64`s via
//! 2001:db8:ffff::2) by a batch, then runs RUNS rounds (default 5) of separate processes, in
//! alternating order: `raw` (the floor: dump, nothing parsed), `cache` (with an empty
//! namespace for the memory baseline), `resync` (load, then a full resync) and
//! `ip route show >/dev/null`.
//!
//! Compare with `time ip -n NETNS route show >/dev/null` and `time ip -n NETNS -batch FILE`.

use std::error::Error;
use std::fs::File;
use std::net::{IpAddr, Ipv4Addr};
use std::os::fd::AsFd;
use std::time::{Duration, Instant};

use netlink_sys::{Socket, protocols::NETLINK_ROUTE};
use netmirror_platform::{Cache, Config, Netns, Platform, Route};
use rustix::thread::{LinkNameSpaceType, move_into_link_name_space};

/// The resident set size of this process, in KiB.
fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|kib| kib.parse().ok())
        .unwrap_or(0)
}

/// CPU time of the calling thread, from `/proc/thread-self/schedstat` (nanoseconds).
fn thread_cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap_or_default();
    let ns = stat
        .split_whitespace()
        .next()
        .and_then(|ns| ns.parse().ok())
        .unwrap_or(0);
    Duration::from_nanos(ns)
}

/// CPU time (user and system) of the whole process, every thread that ever ran included,
/// from `/proc/self/stat` (in clock ticks of 10 ms).
fn process_cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // The fields after the command name (which is in parentheses): utime and stime are the
    // 12th and 13th.
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let ticks: u64 = after
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|t| t.parse::<u64>().ok())
        .sum();
    Duration::from_millis(ticks * 10)
}

/// A duration in milliseconds, as the lines printed here show it.
fn ms(duration: Duration) -> String {
    format!("{:.1} ms", duration.as_secs_f64() * 1e3)
}

/// The floor: dump all IPv4 and IPv6 routes with one 32 KiB buffer and parse nothing.
fn raw_dump(netns: &str) -> Result<(), Box<dyn Error>> {
    let file = File::open(format!("/run/netns/{netns}"))?;
    move_into_link_name_space(file.as_fd(), Some(LinkNameSpaceType::Network))?;
    let mut socket = Socket::new(NETLINK_ROUTE)?;
    socket.bind_auto()?;
    let start = Instant::now();
    let mut total = 0;
    for (seq, family) in [(1u32, 2u8), (2, 10)] {
        // nlmsghdr (RTM_GETROUTE, NLM_F_REQUEST | NLM_F_DUMP) + a zeroed rtmsg.
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
            total += n;
            let mut at = 0;
            while at + 16 <= n {
                let len = u32::from_ne_bytes([buf[at], buf[at + 1], buf[at + 2], buf[at + 3]]);
                if u16::from_ne_bytes([buf[at + 4], buf[at + 5]]) == 3 {
                    break 'dump;
                }
                at += (len as usize + 3) & !3;
            }
        }
    }
    eprintln!("raw: {total} bytes in {}", ms(start.elapsed()));
    Ok(())
}

fn main() -> Result<(), Box<dyn Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(mode), Some(netns)) = (args.first(), args.get(1)) else {
        return Err(
            "usage: measure raw|cache|query|resync|table|batch NETNS [ARGS] \
             | compare v4|v6 N [RUNS]"
                .into(),
        );
    };
    let config = || Config::new().with_netns(Netns::name(netns.as_str()));
    match mode.as_str() {
        "raw" => raw_dump(netns)?,
        "cache" => {
            // The baseline: an empty cache (kept open), or nothing.
            let empty = match args.get(2) {
                Some(empty) => Some(Cache::open(
                    Config::new().with_netns(Netns::name(empty.as_str())),
                )?),
                None => None,
            };
            let baseline = if empty.is_some() {
                "an empty cache"
            } else {
                "the start"
            };
            let before = rss_kib();
            let (cpu0, thread0) = (process_cpu(), thread_cpu());
            let start = Instant::now();
            let cache = Cache::open(config())?;
            let elapsed = start.elapsed();
            let (cpu, thread) = (process_cpu() - cpu0, thread_cpu() - thread0);
            let grown = rss_kib().saturating_sub(before);
            let n_routes = cache.routes().count().max(1);
            eprintln!(
                "cache: {n_routes} routes loaded in {} (CPU {}, calling thread {}); \
                 RSS +{grown} KiB over {baseline} = {:.1} bytes/route",
                ms(elapsed),
                ms(cpu),
                ms(thread),
                grown as f64 * 1024.0 / n_routes as f64
            );
            drop(empty);
        }
        "query" => {
            let platform = Platform::open(config())?;
            let start = Instant::now();
            let answer = platform.routes().execute()?;
            eprintln!(
                "query: {} routes in {:?}",
                answer.items.len(),
                start.elapsed()
            );
        }
        "resync" => {
            let start = Instant::now();
            let mut cache = Cache::open(config())?;
            let load = start.elapsed();
            let mut events = Vec::new();
            let start = Instant::now();
            cache.resync(&mut events)?;
            eprintln!(
                "resync: {} routes in {} (load {}), {} events",
                cache.routes().count(),
                ms(start.elapsed()),
                ms(load),
                events.len()
            );
        }
        #[cfg(feature = "testing")]
        "compare" => compare::run(&args[1..])?,
        "table" => {
            let table: u32 = args.get(2).ok_or("table number missing")?.parse()?;
            let platform = Platform::open(config())?;
            let start = Instant::now();
            let answer = platform
                .routes()
                .table(netmirror_platform::Table(table))
                .execute()?;
            eprintln!(
                "table {table}: {} routes in {:?}, filtered by {:?}",
                answer.items.len(),
                start.elapsed(),
                answer.filter
            );
        }
        "batch" => {
            let dev = args.get(2).ok_or("device missing")?;
            let gateway: IpAddr = args.get(3).ok_or("gateway missing")?.parse()?;
            let n: u32 = args.get(4).ok_or("count missing")?.parse()?;
            let platform = Platform::open(config())?;
            let link = platform.links().name(dev.as_str()).execute()?;
            let ifindex = link.items.first().ok_or("no such device")?.ifindex();
            let mut batch = platform.batch();
            for i in 0..n {
                let dst = Ipv4Addr::from(0x1e00_0000 + (i << 4));
                let route = Route::new(dst.into(), 28)
                    .with_gateway(gateway)
                    .with_oif(ifindex);
                batch = batch.add_route(route);
            }
            let start = Instant::now();
            let report = batch.execute()?;
            eprintln!(
                "batch: {} added, {} failed, {} sends in {:?}",
                report.n_ok,
                report.failures.len(),
                report.n_sends,
                start.elapsed()
            );
        }
        other => return Err(format!("unknown mode {other}").into()),
    }
    Ok(())
}

/// `compare`: namespaces made here, separate processes in alternating order, medians.
#[cfg(feature = "testing")]
mod compare {
    use std::error::Error;
    use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
    use std::process::{Command, Stdio};
    use std::time::Instant;

    use netmirror_platform::testing::{NetNs, Veth};
    use netmirror_platform::{Config, Netns, Platform, Route};

    /// Routes added per batch while filling the namespace.
    const FILL_BATCH: u32 = 50_000;

    pub(super) fn run(args: &[String]) -> Result<(), Box<dyn Error>> {
        let v6 = match args.first().map(String::as_str) {
            Some("v4") => false,
            Some("v6") => true,
            _ => return Err("usage: measure compare v4|v6 N [RUNS]".into()),
        };
        let n: u32 = args.get(1).ok_or("route count missing")?.parse()?;
        let runs: usize = match args.get(2) {
            Some(runs) => runs.parse()?,
            None => 5,
        };
        let full = NetNs::builder()
            .veth(
                Veth::new("nmx0", "nmx1")
                    .address("192.0.2.1/24")
                    .address("2001:db8:ffff::1/64"),
            )
            .start()?;
        let empty = NetNs::new()?;
        fill(&full, n, v6)?;
        let me = std::env::current_exe()?;
        let ip_args: Vec<&str> = if v6 {
            vec!["-n", full.name(), "-6", "route", "show"]
        } else {
            vec!["-n", full.name(), "route", "show"]
        };
        let mut raw = Vec::new();
        let mut cache = Vec::new();
        let mut bytes = Vec::new();
        let mut resync = Vec::new();
        let mut resync_load = Vec::new();
        let mut ip = Vec::new();
        eprintln!(
            "{runs} rounds in {} ({n} IPv{} routes), load average {}",
            full.name(),
            if v6 { 6 } else { 4 },
            load_average()
        );
        for round in 0..runs {
            let mut steps = [0, 1, 2, 3];
            if round % 2 == 1 {
                steps.reverse();
            }
            for step in steps {
                match step {
                    0 => {
                        let line = child(&me, &["raw", full.name()])?;
                        raw.push(number_before(&line, " ms")?);
                    }
                    1 => {
                        let line = child(&me, &["cache", full.name(), empty.name()])?;
                        cache.push(number_before(&line, " ms")?);
                        bytes.push(number_before(&line, " bytes/route")?);
                    }
                    2 => {
                        let line = child(&me, &["resync", full.name()])?;
                        resync.push(number_before(&line, " ms")?);
                        let load = line.split("(load ").nth(1).unwrap_or_default();
                        resync_load.push(number_before(load, " ms")?);
                    }
                    _ => {
                        let start = Instant::now();
                        let status = Command::new("ip")
                            .args(&ip_args)
                            .stdout(Stdio::null())
                            .status()?;
                        if !status.success() {
                            return Err(format!("ip {ip_args:?}: {status}").into());
                        }
                        ip.push(start.elapsed().as_secs_f64() * 1e3);
                    }
                }
            }
        }
        let (raw, cache, ip) = (median(&raw), median(&cache), median(&ip));
        let ratios: Vec<f64> = resync
            .iter()
            .zip(&resync_load)
            .map(|(r, l)| r / l)
            .collect();
        eprintln!(
            "median of {runs}: raw {raw:.1} ms, cache {cache:.1} ms = {:.2}x raw, \
             ip route show {ip:.1} ms = {:.2}x raw (cache = {:.2}x ip); \
             {:.1} bytes/route over an empty cache; resync {:.1} ms = {:.2}x its load; \
             load average {}",
            cache / raw,
            ip / raw,
            cache / ip,
            median(&bytes),
            median(&resync),
            median(&ratios),
            load_average()
        );
        Ok(())
    }

    /// Adds `n` routes to `ns` by batches.
    fn fill(ns: &NetNs, n: u32, v6: bool) -> Result<(), Box<dyn Error>> {
        let platform = Platform::open(Config::new().with_netns(Netns::name(ns.name())))?;
        let start = Instant::now();
        let mut i = 0;
        while i < n {
            let mut batch = platform.batch();
            for i in i..n.min(i + FILL_BATCH) {
                let route = if v6 {
                    let dst = Ipv6Addr::new(0x2001, 0xdb8, (i >> 16) as u16, i as u16, 0, 0, 0, 0);
                    Route::new(dst.into(), 64).with_gateway(IpAddr::V6("2001:db8:ffff::2".parse()?))
                } else {
                    let dst = Ipv4Addr::from(0x0a00_0000 + (i << 4));
                    Route::new(dst.into(), 28).with_gateway(IpAddr::V4(Ipv4Addr::new(192, 0, 2, 2)))
                };
                batch = batch.add_route(route);
            }
            let report = batch.execute()?;
            if let Some(failure) = report.failures.first() {
                return Err(format!("filling {}: {failure:?}", ns.name()).into());
            }
            i = n.min(i + FILL_BATCH);
        }
        eprintln!(
            "filled {} with {n} routes in {:.1} s",
            ns.name(),
            start.elapsed().as_secs_f64()
        );
        Ok(())
    }

    /// Runs this program with `args`; returns the last line it printed to stderr.
    fn child(me: &std::path::Path, args: &[&str]) -> Result<String, Box<dyn Error>> {
        let output = Command::new(me).args(args).stdout(Stdio::null()).output()?;
        let stderr = String::from_utf8_lossy(&output.stderr);
        if !output.status.success() {
            return Err(format!("measure {args:?}: {}: {stderr}", output.status).into());
        }
        let line = stderr.lines().last().unwrap_or_default().to_owned();
        eprintln!("  {line}");
        Ok(line)
    }

    /// The number just before the first `unit` in `line`.
    fn number_before(line: &str, unit: &str) -> Result<f64, Box<dyn Error>> {
        let head = line.split(unit).next().unwrap_or_default();
        let number = head.rsplit(' ').next().unwrap_or_default();
        Ok(number
            .parse()
            .map_err(|_| format!("no number before {unit:?} in {line:?}"))?)
    }

    fn median(values: &[f64]) -> f64 {
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        match sorted.len() {
            0 => f64::NAN,
            len if len % 2 == 1 => sorted[len / 2],
            len => (sorted[len / 2 - 1] + sorted[len / 2]) / 2.0,
        }
    }

    fn load_average() -> String {
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    }
}
