//! Measures the platform against the kernel's raw dump in an existing namespace: load time,
//! bytes per route, resync, filtered query and batch. Prints to stderr, one line per run.
//!
//! ```text
//! cargo run --release -p netmirror-platform --example measure -- raw NETNS
//! cargo run --release -p netmirror-platform --example measure -- cache NETNS
//! cargo run --release -p netmirror-platform --example measure -- query NETNS
//! cargo run --release -p netmirror-platform --example measure -- resync NETNS
//! cargo run --release -p netmirror-platform --example measure -- table NETNS 100
//! cargo run --release -p netmirror-platform --example measure -- batch NETNS DEV GATEWAY N
//! ```
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
    eprintln!("raw: {total} bytes in {:?}", start.elapsed());
    Ok(())
}

fn main() -> Result<(), Box<dyn Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(mode), Some(netns)) = (args.first(), args.get(1)) else {
        return Err("usage: measure raw|cache|query|resync|table|batch NETNS [ARGS]".into());
    };
    let config = || Config::new().with_netns(Netns::name(netns.as_str()));
    match mode.as_str() {
        "raw" => raw_dump(netns)?,
        "cache" => {
            let before = rss_kib();
            let (cpu0, thread0) = (process_cpu(), thread_cpu());
            let start = Instant::now();
            let cache = Cache::open(config())?;
            let elapsed = start.elapsed();
            let (cpu, thread) = (process_cpu() - cpu0, thread_cpu() - thread0);
            let grown = rss_kib().saturating_sub(before);
            let n_routes = cache.routes().count().max(1);
            eprintln!(
                "cache: {n_routes} routes loaded in {elapsed:?} (CPU {cpu:?}, this thread \
                 {thread:?}); RSS +{grown} KiB = {:.1} bytes/route",
                grown as f64 * 1024.0 / n_routes as f64
            );
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
            let mut cache = Cache::open(config())?;
            let mut events = Vec::new();
            let start = Instant::now();
            cache.resync(&mut events)?;
            eprintln!(
                "resync: {} routes in {:?}, {} events",
                cache.routes().count(),
                start.elapsed(),
                events.len()
            );
        }
        "table" => {
            let table: u32 = args.get(2).ok_or("table number missing")?.parse()?;
            let platform = Platform::open(config())?;
            let start = Instant::now();
            let answer = platform.routes().table(table).execute()?;
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
