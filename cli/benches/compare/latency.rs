//! Scenario 6, the question of the D-Bus latency seed: how long one `Properties.Get` takes
//! through a private `dbus-daemon`, for netmirror's client path (a zbus connection used as
//! `client-cache` uses it: the call built as the cache builds it, `Connection::send_all`,
//! the reply taken off a `MessageStream` and decoded by dbus-meta's wire reader), plain zbus
//! (`call_method`), sd-bus in-process (`sd_bus_call_method` in a loop, the system's
//! libsystemd loaded at run time, see [`super::sdbus`]), a minimal hand-written blocking client,
//! `busctl` (sd-bus, one process per call, so startup included), and the floor of a raw
//! UNIX-socket ping-pong of the same sizes.
//!
//! Where valgrind is installed, callgrind also counts the instructions per call of netmirror's
//! path and of sd-bus, split by function ([`PROFILE_ARG`] runs one client on its own).
//!
//! The property is the bus daemon's own `org.freedesktop.DBus.Features`, so the daemon both
//! routes and answers: one hop each way, like the ping-pong.

use std::ffi::OsString;
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use futures_util::StreamExt;
use netmirror_client_cache::{bench_support, testing::PrivateBus};
use zbus::message::Type;
use zbus::{Connection, Message, MessageStream};

use nix::sys::resource::{UsageWho, getrusage};

use super::measure::{Cmd, Latency};
use super::report::Section;
use super::sdbus::SdBus;
use super::wire::{self, RawBus};
use crate::{Ctx, progress};

pub(crate) const TITLE: &str = "6. D-Bus round trip: one `Properties.Get` through a private bus";

const BUS: &str = "org.freedesktop.DBus";
const BUS_PATH: &str = "/org/freedesktop/DBus";
const PROPS: &str = "org.freedesktop.DBus.Properties";
const PROPERTY: &str = "Features";
const C_BUS: &std::ffi::CStr = c"org.freedesktop.DBus";
const C_BUS_PATH: &std::ffi::CStr = c"/org/freedesktop/DBus";
const C_PROPS: &std::ffi::CStr = c"org.freedesktop.DBus.Properties";
const C_PROPERTY: &std::ffi::CStr = c"Features";

/// Rounds in which the in-process clients take turns, so drift hits them alike.
const ROUNDS: usize = 5;

/// Scenario 6.
pub(crate) fn run(ctx: &Ctx) -> Section {
    let mut section = Section::new(TITLE);
    if let Err(err) = latency(ctx, &mut section) {
        section.fact("setup", format!("failed: {err:#}"));
    }
    section
}

/// netmirror's path: the call built as `client-cache` builds every call it makes, sent with
/// `send_all` (as the cache sends what it queued), the reply taken off the connection's
/// `MessageStream` by serial and sender, and decoded as the cache decodes a fetch's reply.
async fn stream_get(conn: &Connection, stream: &mut MessageStream) -> anyhow::Result<Duration> {
    let started = Instant::now();
    let msg = build_call()?;
    let serial = msg.primary_header().serial_num();
    conn.send_all(std::slice::from_ref(&msg)).await?;
    while let Some(reply) = stream.next().await {
        let reply = reply?;
        let header = reply.header();
        if header.reply_serial() == Some(serial) && header.sender().map(|s| s.as_str()) == Some(BUS)
        {
            if header.message_type() != Type::MethodReturn {
                bail!("Get failed: {reply:?}");
            }
            decode_reply(&reply)?;
            return Ok(started.elapsed());
        }
    }
    bail!("the connection closed")
}

/// The `Get` call, built as the cache builds its calls. Not inlined, so that callgrind can tell
/// its instructions apart.
#[inline(never)]
fn build_call() -> anyhow::Result<Message> {
    Ok(bench_support::method_call(
        BUS,
        BUS_PATH,
        PROPS,
        "Get",
        &[BUS, PROPERTY],
    )?)
}

/// Decodes a `Get` reply's variant, as the cache decodes every reply it keeps (dbus-meta's wire
/// reader, straight into a `Value`). Not inlined, so that callgrind can tell its instructions
/// apart.
#[inline(never)]
fn decode_reply(reply: &Message) -> anyhow::Result<()> {
    let _value = bench_support::reply_value(reply)?;
    Ok(())
}

/// Plain zbus: `Connection::call_method`.
async fn call_get(conn: &Connection) -> anyhow::Result<Duration> {
    let started = Instant::now();
    let reply = conn
        .call_method(Some(BUS), BUS_PATH, Some(PROPS), "Get", &(BUS, PROPERTY))
        .await?;
    let _value: zbus::OwnedVariant = reply.body().deserialize()?;
    Ok(started.elapsed())
}

/// sd-bus's `Properties.Get`, timed.
fn sd_get(sd: &mut SdBus) -> anyhow::Result<Duration> {
    let started = Instant::now();
    sd.call_ss_v(C_BUS, C_BUS_PATH, C_PROPS, c"Get", [C_BUS, C_PROPERTY])?;
    Ok(started.elapsed())
}

/// CPU time (user+sys, every thread of this process) and context switches (voluntary and
/// involuntary) so far.
#[derive(Debug, Clone, Copy)]
struct Usage {
    wall: Instant,
    cpu_us: f64,
    switches: f64,
}

impl Usage {
    fn now() -> anyhow::Result<Self> {
        let usage = getrusage(UsageWho::RUSAGE_SELF)?;
        let us = |tv: nix::sys::time::TimeVal| tv.tv_sec() as f64 * 1e6 + tv.tv_usec() as f64;
        Ok(Self {
            wall: Instant::now(),
            cpu_us: us(usage.user_time()) + us(usage.system_time()),
            switches: (usage.voluntary_context_switches() + usage.involuntary_context_switches())
                as f64,
        })
    }

    /// Per call since `self`: mean wall µs, CPU µs, context switches.
    fn per_call(self, calls: usize) -> anyhow::Result<Cost> {
        let now = Self::now()?;
        let n = calls.max(1) as f64;
        Ok(Cost {
            wall_us: now.wall.duration_since(self.wall).as_secs_f64() * 1e6 / n,
            cpu_us: (now.cpu_us - self.cpu_us) / n,
            switches: (now.switches - self.switches) / n,
        })
    }
}

/// What one call costs this process, on average over a loop.
#[derive(Debug, Clone, Copy)]
struct Cost {
    wall_us: f64,
    cpu_us: f64,
    switches: f64,
}

impl std::fmt::Display for Cost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "wall {:.1} µs, CPU {:.1} µs, {:.2} context switches",
            self.wall_us, self.cpu_us, self.switches
        )
    }
}

/// The in-process clients' timings.
#[derive(Default)]
struct Samples {
    stream: Vec<Duration>,
    call: Vec<Duration>,
    sd: Vec<Duration>,
    raw: Vec<Duration>,
}

fn latency(ctx: &Ctx, section: &mut Section) -> anyhow::Result<()> {
    let bus = PrivateBus::start().context("cannot start a private dbus-daemon")?;
    let n = ctx.plan.round_trips;
    let per_round = n.div_ceil(ROUNDS);
    section.setup(format!(
        "A private `dbus-daemon` (the `PrivateBus` fixture); every client asks it for \
         `{BUS}.{PROPERTY}` with `{PROPS}.Get` and decodes the variant it gets. The in-process \
         clients each make {n} calls after 200 unmeasured ones, taking turns in {ROUNDS} \
         rounds on one thread; the time of each call is taken around it."
    ));
    section.setup(
        "sd-bus is the system's `libsystemd.so.0` (the library `busctl` uses), loaded at run \
         time: one `sd_bus_call_method` per call (it builds, sends, waits, and parses the \
         reply's header) and `sd_bus_message_skip(\"v\")` over the reply's body.",
    );
    section.setup(format!(
        "Where valgrind is installed, callgrind counts the instructions of netmirror's path \
         and of sd-bus: this binary makes {PROFILE_SHORT} and, in a second run, \
         {PROFILE_LONG} calls with one client under `valgrind --tool=callgrind`, and the \
         difference, per call, leaves start-up and connecting out; \
         `callgrind_annotate --inclusive=yes` splits it by function."
    ));
    progress(&format!("{n} D-Bus round trips per client"));

    let mut raw = RawBus::connect(bus.address())?;
    let mut get = wire::method_call(BUS, BUS_PATH, PROPS, "Get", &[BUS, PROPERTY]);
    let reply_len = raw.round_trip(&mut get)?;
    section.fact(
        "message sizes on the wire",
        format!("request {} bytes, reply {reply_len} bytes", get.len()),
    );
    let mut sd = match SdBus::connect(bus.address()) {
        Ok(sd) => Some(sd),
        Err(err) => {
            section.fact("sd-bus in-process", format!("not run: {err:#}"));
            None
        }
    };

    let mut t = Samples::default();
    // Per-call costs over a loop of each client (after the timed rounds).
    let cost_calls = n.min(5_000);
    let (stream_cost, sd_cost, raw_cost) = zbus::block_on(async {
        // One connection each: a `MessageStream` nobody drains would hold up the other's
        // replies once its queue is full.
        let conn = zbus::connection::Builder::address(bus.address())
            .build()
            .await?;
        let call_conn = zbus::connection::Builder::address(bus.address())
            .build()
            .await?;
        let mut stream = MessageStream::from(&conn);
        for _ in 0..200 {
            stream_get(&conn, &mut stream).await?;
            call_get(&call_conn).await?;
            if let Some(sd) = &mut sd {
                sd_get(sd)?;
            }
            raw.round_trip(&mut get)?;
        }
        for _ in 0..ROUNDS {
            for _ in 0..per_round {
                t.stream.push(stream_get(&conn, &mut stream).await?);
            }
            for _ in 0..per_round {
                t.call.push(call_get(&call_conn).await?);
            }
            if let Some(sd) = &mut sd {
                for _ in 0..per_round {
                    t.sd.push(sd_get(sd)?);
                }
            }
            for _ in 0..per_round {
                let started = Instant::now();
                raw.round_trip(&mut get)?;
                t.raw.push(started.elapsed());
            }
        }
        let before = Usage::now()?;
        for _ in 0..cost_calls {
            stream_get(&conn, &mut stream).await?;
        }
        let stream_cost = before.per_call(cost_calls)?;
        let mut sd_cost = None;
        if let Some(sd) = &mut sd {
            let before = Usage::now()?;
            for _ in 0..cost_calls {
                sd_get(sd)?;
            }
            sd_cost = Some(before.per_call(cost_calls)?);
        }
        let before = Usage::now()?;
        for _ in 0..cost_calls {
            raw.round_trip(&mut get)?;
        }
        let raw_cost = before.per_call(cost_calls)?;
        anyhow::Ok((stream_cost, sd_cost, raw_cost))
    })?;
    drop(sd);
    let floor = wire::socket_ping_pong(get.len(), reply_len, n)?;

    let stream_lat = Latency::of(
        "netmirror's client path (the cache's calls: `send_all`, `MessageStream`, wire reader)",
        t.stream,
    );
    let call_lat = Latency::of("plain zbus `Connection::call_method`", t.call);
    let sd_lat = (!t.sd.is_empty()).then(|| {
        Latency::of(
            "sd-bus in-process (`sd_bus_call_method` in a loop, libsystemd)",
            t.sd,
        )
    });
    let raw_lat = Latency::of(
        "minimal hand-written blocking client (pre-built message, one write, one read)",
        t.raw,
    );
    let floor_lat = Latency::of(
        "raw UNIX-socket ping-pong, same sizes, no bus (the floor)",
        floor,
    );

    // busctl: sd-bus, but one process per call; `busctl --version` shows the process cost.
    let busctl = |label: &str, args: &[&str]| {
        Cmd::new(label, "busctl", args).env("DBUS_SYSTEM_BUS_ADDRESS", bus.address())
    };
    let get_cmd = busctl(
        "busctl get-property (sd-bus, one process per call)",
        &["--system", "get-property", BUS, BUS_PATH, BUS, PROPERTY],
    );
    let version_cmd = busctl("busctl --version (process start, no bus)", &["--version"]);
    let mut t_busctl = Vec::new();
    let mut t_version = Vec::new();
    for run in 0..ctx.plan.busctl_runs + 5 {
        let a = get_cmd.measure()?;
        let b = version_cmd.measure()?;
        if run >= 5 {
            t_busctl.push(a.wall);
            t_version.push(b.wall);
        }
    }
    let busctl_lat = Latency::of(&get_cmd.label, t_busctl);
    let version_lat = Latency::of(&version_cmd.label, t_version);

    let ratios = |a: &Latency, b: &Latency| {
        format!(
            "{} / {}",
            super::measure::ratio(a.p50_us, b.p50_us),
            super::measure::ratio(a.p99_us, b.p99_us)
        )
    };
    if let Some(sd_lat) = &sd_lat {
        section.headline(
            "p50 / p99 ratio: netmirror's path ÷ sd-bus in-process",
            ratios(&stream_lat, sd_lat),
        );
        section.fact(
            "p50 / p99 ratio: plain zbus call_method ÷ sd-bus in-process",
            ratios(&call_lat, sd_lat),
        );
        section.fact(
            "p50 / p99 ratio: minimal hand-written client ÷ sd-bus in-process",
            ratios(&raw_lat, sd_lat),
        );
        section.fact(
            "p50 / p99 ratio: sd-bus in-process ÷ raw socket floor",
            ratios(sd_lat, &floor_lat),
        );
    }
    section.headline(
        "p50 / p99 ratio: netmirror's path ÷ raw socket floor",
        ratios(&stream_lat, &floor_lat),
    );
    section.fact(
        "busctl per process minus process start (p50: connect, auth, Hello, the call)",
        format!("{:.1} µs", busctl_lat.p50_us - version_lat.p50_us),
    );
    let costs = [
        ("netmirror's path", Some(stream_cost)),
        ("sd-bus in-process", sd_cost),
        ("minimal hand-written client", Some(raw_cost)),
    ];
    for (who, cost) in costs {
        if let Some(cost) = cost {
            section.fact(
                format!(
                    "per call, mean of {cost_calls} in a loop: {who} (this process, all threads)"
                ),
                cost.to_string(),
            );
        }
    }
    // Where netmirror's time goes, against sd-bus (or the hand-written client, should sd-bus
    // not load); a headline when over the threshold of 1.2× at p50.
    let (reference, reference_cost, reference_name) = match (&sd_lat, sd_cost) {
        (Some(sd_lat), Some(cost)) => (sd_lat, cost, "sd-bus"),
        _ => (&raw_lat, raw_cost, "the minimal client"),
    };
    where_time_goes(
        section,
        (&stream_lat, stream_cost),
        (reference, reference_cost, reference_name),
        n,
    )?;
    progress("counting instructions per call with callgrind");
    match instructions(ctx, bus.address()) {
        Ok(facts) => {
            for (key, value, headline) in facts {
                if headline {
                    section.headline(key, value);
                } else {
                    section.fact(key, value);
                }
            }
        }
        Err(err) => section.fact(
            "instructions per call (callgrind)",
            format!("not measured: {err:#}"),
        ),
    }
    section.latencies = [
        Some(stream_lat),
        Some(call_lat),
        sd_lat,
        Some(raw_lat),
        Some(floor_lat),
        Some(busctl_lat),
        Some(version_lat),
    ]
    .into_iter()
    .flatten()
    .collect();
    Ok(())
}

/// Splits netmirror's time over the reference's into building the call and decoding the reply
/// (both timed alone, in a loop) and the rest, with the per-call CPU time and context switches
/// of both side by side. Over 1.2× the reference at p50 (the threshold) it is a
/// headline.
fn where_time_goes(
    section: &mut Section,
    (ours, our_cost): (&Latency, Cost),
    (reference, reference_cost, name): (&Latency, Cost, &str),
    n: usize,
) -> anyhow::Result<()> {
    let started = Instant::now();
    let mut last = None;
    for _ in 0..n {
        last = Some(build_call()?);
    }
    let build_us = started.elapsed().as_secs_f64() * 1e6 / n as f64;
    // Decoding: a reply-shaped body (a variant holding `as`) built once, decoded n times.
    let value = zbus::Variant::from(vec!["a", "b"]);
    let reply = Message::method_return(&last.context("no message")?.header()).build(&value)?;
    let started = Instant::now();
    for _ in 0..n {
        decode_reply(&reply)?;
    }
    let decode_us = started.elapsed().as_secs_f64() * 1e6 / n as f64;
    let extra = ours.p50_us - reference.p50_us;
    let over = ours.p50_us > 1.2 * reference.p50_us;
    let key = format!(
        "where netmirror's time goes (p50 against {name}; {})",
        if over { "over 1.2×" } else { "within 1.2×" }
    );
    let rest = extra - build_us - decode_us;
    let rest = if rest > 0.0 {
        format!("The rest, {rest:.1} µs, is zbus's I/O path")
    } else {
        "Those two cover the difference (it is within this run's noise); the rest of the \
         path is zbus's I/O"
            .to_owned()
    };
    let value = format!(
        "{extra:.1} µs more per call at p50. Building and serialising the call: \
         {build_us:.1} µs; decoding the reply: {decode_us:.1} µs (each timed alone in a loop). \
         {rest}: under `zbus::block_on` the connection's \
         socket-reader task runs on the calling thread, so each reply is read when the \
         runtime's reactor sees the socket readable, parsed, and handed through a broadcast \
         channel to the caller's `MessageStream`, whose future is polled next; {name} reads it \
         in the call itself. Per call in this process (all threads): netmirror's path {:.1} µs \
         CPU and {:.2} context switches, {name} {:.1} µs CPU and {:.2} context switches.",
        our_cost.cpu_us, our_cost.switches, reference_cost.cpu_us, reference_cost.switches,
    );
    if over {
        section.headline(key, value);
    } else {
        section.fact(key, value);
    }
    Ok(())
}

/// The first argument that makes this binary make D-Bus calls for callgrind to count:
/// `PROFILE_ARG ADDRESS zbus|sd-bus CALLS`.
pub(crate) const PROFILE_ARG: &str = "__netmirror_bench_dbus_profile";

/// Connects to the bus at ADDRESS and makes CALLS `Properties.Get` calls with one client, untimed.
pub(crate) fn profile_main(args: &[OsString]) -> ExitCode {
    let run = || -> anyhow::Result<()> {
        let [address, client, calls] = args else {
            bail!("expected ADDRESS zbus|sd-bus CALLS");
        };
        let address = address.to_string_lossy();
        let calls: usize = calls.to_string_lossy().parse()?;
        match client.to_string_lossy().as_ref() {
            "zbus" => zbus::block_on(async {
                let conn = zbus::connection::Builder::address(&*address)
                    .build()
                    .await?;
                let mut stream = MessageStream::from(&conn);
                for _ in 0..calls {
                    stream_get(&conn, &mut stream).await?;
                }
                anyhow::Ok(())
            }),
            "sd-bus" => {
                let mut sd = SdBus::connect(&address)?;
                for _ in 0..calls {
                    sd_get(&mut sd)?;
                }
                Ok(())
            }
            other => bail!("unknown client {other}"),
        }
    };
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("compare: profile: {err:#}");
            ExitCode::FAILURE
        }
    }
}

/// Calls of the short and the long callgrind run: their difference, divided by
/// `PROFILE_LONG - PROFILE_SHORT`, is the cost of one call without the start-up.
const PROFILE_SHORT: usize = 500;
const PROFILE_LONG: usize = 2_500;

/// Instructions per call, counted by callgrind over this binary in [`PROFILE_ARG`] mode: for
/// netmirror's path (with what building the call, decoding the reply, sending and zbus's
/// socket-reader task take of them) and for sd-bus (`sd_bus_call_method`,
/// `sd_bus_message_skip`). Each client runs twice, with [`PROFILE_SHORT`] and
/// [`PROFILE_LONG`] calls; only the difference counts, so connecting and starting up do not.
/// Returns `(key, value, headline)` facts.
fn instructions(ctx: &Ctx, address: &str) -> anyhow::Result<Vec<(String, String, bool)>> {
    let exe = std::env::current_exe()?;
    let count = |client: &str, calls: usize| -> anyhow::Result<String> {
        let out_file = ctx.scratch_file(&format!("callgrind-{client}-{calls}.out"));
        let status = Command::new("valgrind")
            .arg("--tool=callgrind")
            .arg(format!("--callgrind-out-file={}", out_file.display()))
            .arg(&exe)
            .args([PROFILE_ARG, address, client, &calls.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .context("cannot run valgrind (is it installed?)")?;
        if !status.success() {
            bail!("valgrind --tool=callgrind ({client}, {calls} calls) failed: {status}");
        }
        let out = Command::new("callgrind_annotate")
            .args(["--inclusive=yes", "--threshold=100", "--auto=no"])
            .arg(&out_file)
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()
            .context("cannot run callgrind_annotate")?;
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    };
    let per_call = |client: &str, functions: &[&str]| -> anyhow::Result<(f64, Vec<f64>)> {
        let short = count(client, PROFILE_SHORT)?;
        let long = count(client, PROFILE_LONG)?;
        let calls = (PROFILE_LONG - PROFILE_SHORT) as f64;
        let diff = |function: &str| {
            (inclusive(&long, function) - inclusive(&short, function)) as f64 / calls
        };
        let total = diff("PROGRAM TOTALS");
        Ok((total, functions.iter().map(|f| diff(f)).collect()))
    };
    let k = |instructions: f64| format!("{:.1}k", instructions / 1000.0);
    let (zbus_total, zbus_parts) = per_call(
        "zbus",
        &[
            "compare::compare::latency::build_call",
            "compare::compare::latency::decode_reply",
            // `Connection::send_all` is inlined into the caller; this is the socket write it
            // hands the message to.
            "zbus::runtime::io::<impl zbus::connection::socket::WriteHalf for \
             alloc::sync::Arc<zbus::runtime::io::RegisteredIo<O>>>::send_messages::{{closure}}",
            "zbus::connection::socket_reader::SocketReader::receive_msg::{{closure}}",
        ],
    )?;
    let (sd_total, sd_parts) = per_call("sd-bus", &["sd_bus_call_method", "sd_bus_message_skip"])?;
    let zbus_rest = zbus_total - zbus_parts.iter().sum::<f64>();
    let sd_rest = sd_total - sd_parts.iter().sum::<f64>();
    let context = format!(
        "instructions per call, user space of the calling process (callgrind, {} calls less {})",
        PROFILE_LONG, PROFILE_SHORT
    );
    Ok(vec![
        (
            format!("{context}: netmirror's path"),
            format!(
                "{}: building the call (as the cache builds it) {}, decoding the reply \
                 (dbus-meta's wire reader, into a `Value`) {}, writing it to the socket \
                 (zbus's `send_messages`) {}, zbus's socket-reader task \
                 (`SocketReader::receive_msg`) {}, the rest (the runtime, the stream, the \
                 caller) {}",
                k(zbus_total),
                k(zbus_parts[0]),
                k(zbus_parts[1]),
                k(zbus_parts[2]),
                k(zbus_parts[3]),
                k(zbus_rest)
            ),
            false,
        ),
        (
            format!("{context}: sd-bus"),
            format!(
                "{}: `sd_bus_call_method` {}, `sd_bus_message_skip` {}, the rest {}",
                k(sd_total),
                k(sd_parts[0]),
                k(sd_parts[1]),
                k(sd_rest)
            ),
            false,
        ),
        (
            format!("{context}: netmirror's path ÷ sd-bus"),
            super::measure::ratio(zbus_total, sd_total),
            true,
        ),
    ])
}

/// The largest inclusive count that `callgrind_annotate --inclusive=yes` shows for
/// `function` (a function inlined in several places has a line for each), or for the
/// `PROGRAM TOTALS` line; 0 when absent.
fn inclusive(annotated: &str, function: &str) -> u64 {
    // `COUNT (PERCENT)  FILE:FUNCTION [OBJECT]`
    let named = format!(":{function} [");
    annotated
        .lines()
        .filter(|line| {
            if function == "PROGRAM TOTALS" {
                line.trim_end().ends_with("PROGRAM TOTALS")
            } else {
                line.contains(&named)
            }
        })
        .filter_map(|line| {
            line.split_whitespace()
                .next()
                .and_then(|count| count.replace(',', "").parse::<u64>().ok())
        })
        .max()
        .unwrap_or(0)
}
