//! Scenario 6, the question of the D-Bus latency seed: how long one `Properties.Get` takes
//! through a private `dbus-daemon`, for netmirror's client path (a zbus connection used as
//! `client-cache` uses it: `Connection::send` and a `MessageStream`), plain zbus
//! (`call_method`), a minimal hand-written client (what sd-bus does per call), `busctl`
//! (sd-bus, one process per call, so startup included), and the floor of a raw UNIX-socket
//! ping-pong of the same sizes.
//!
//! The property is the bus daemon's own `org.freedesktop.DBus.Features`, so the daemon both
//! routes and answers: one hop each way, like the ping-pong.

use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use futures_util::StreamExt;
use netmirror_client_cache::testing::PrivateBus;
use zbus::message::Type;
use zbus::{Connection, Message, MessageStream};

use super::measure::{Cmd, Latency};
use super::report::Section;
use super::wire::{self, RawBus};
use crate::{Ctx, progress};

pub(crate) const TITLE: &str = "6. D-Bus round trip: one `Properties.Get` through a private bus";

const BUS: &str = "org.freedesktop.DBus";
const BUS_PATH: &str = "/org/freedesktop/DBus";
const PROPS: &str = "org.freedesktop.DBus.Properties";
const PROPERTY: &str = "Features";

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

/// netmirror's path: build the call, `send` it, take the reply off the connection's
/// `MessageStream` by serial, as `client-cache` does for every call it makes.
async fn stream_get(conn: &Connection, stream: &mut MessageStream) -> anyhow::Result<Duration> {
    let started = Instant::now();
    let msg = Message::method_call(BUS_PATH, "Get")
        .destination(BUS)
        .interface(PROPS)
        .build(&(BUS, PROPERTY))?;
    let serial = msg.primary_header().serial_num();
    conn.send(&msg).await?;
    while let Some(reply) = stream.next().await {
        let reply = reply?;
        let header = reply.header();
        if header.reply_serial() == Some(serial) {
            if header.message_type() != Type::MethodReturn {
                bail!("Get failed: {reply:?}");
            }
            let _value: zbus::OwnedVariant = reply.body().deserialize()?;
            return Ok(started.elapsed());
        }
    }
    bail!("the connection closed")
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

fn latency(ctx: &Ctx, section: &mut Section) -> anyhow::Result<()> {
    let bus = PrivateBus::start().context("cannot start a private dbus-daemon")?;
    let n = ctx.plan.round_trips;
    let per_round = n.div_ceil(ROUNDS);
    section.setup(format!(
        "A private `dbus-daemon` (the `PrivateBus` fixture); every client asks it for \
         `{BUS}.{PROPERTY}` with `{PROPS}.Get`. The in-process clients each make {n} calls \
         after 200 unmeasured ones, taking turns in {ROUNDS} rounds; the time of each call \
         is taken around it."
    ));
    progress(&format!("{n} D-Bus round trips per client"));

    let mut raw = RawBus::connect(bus.address())?;
    let mut get = wire::method_call(BUS, BUS_PATH, PROPS, "Get", &[BUS, PROPERTY]);
    let reply_len = raw.round_trip(&mut get)?;
    section.fact(
        "message sizes on the wire",
        format!("request {} bytes, reply {reply_len} bytes", get.len()),
    );

    let (mut t_stream, mut t_call, mut t_raw) = (Vec::new(), Vec::new(), Vec::new());
    zbus::block_on(async {
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
            raw.round_trip(&mut get)?;
        }
        for _ in 0..ROUNDS {
            for _ in 0..per_round {
                t_stream.push(stream_get(&conn, &mut stream).await?);
            }
            for _ in 0..per_round {
                t_call.push(call_get(&call_conn).await?);
            }
            for _ in 0..per_round {
                let started = Instant::now();
                raw.round_trip(&mut get)?;
                t_raw.push(started.elapsed());
            }
        }
        anyhow::Ok(())
    })?;
    let floor = wire::socket_ping_pong(get.len(), reply_len, n)?;

    let stream_lat = Latency::of(
        "netmirror's client path (zbus `send` + `MessageStream`, as client-cache)",
        t_stream,
    );
    let call_lat = Latency::of("plain zbus `Connection::call_method`", t_call);
    let raw_lat = Latency::of(
        "minimal blocking client (pre-built message, one write, one read: sd-bus's floor)",
        t_raw,
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
        "busctl get-property (one process per call)",
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

    let ratio = |a: &Latency, b: &Latency| super::measure::ratio(a.p50_us, b.p50_us);
    section.headline(
        "p50 ratio: netmirror's path / minimal client (sd-bus-like)",
        ratio(&stream_lat, &raw_lat),
    );
    section.fact(
        "p50 ratio: plain zbus call_method / minimal client",
        ratio(&call_lat, &raw_lat),
    );
    section.headline(
        "p50 ratio: netmirror's path / raw socket floor",
        ratio(&stream_lat, &floor_lat),
    );
    section.fact(
        "busctl per process minus process start (p50, sd-bus's call plus connect, hello, auth)",
        format!("{:.1} µs", busctl_lat.p50_us - version_lat.p50_us),
    );
    if stream_lat.p50_us > 1.2 * raw_lat.p50_us {
        where_time_goes(section, &stream_lat, &raw_lat, n)?;
    }
    section.latencies = vec![
        stream_lat,
        call_lat,
        raw_lat,
        floor_lat,
        busctl_lat,
        version_lat,
    ];
    Ok(())
}

/// Splits netmirror's path into building the call, decoding the reply (both timed alone, in a
/// loop) and the rest: zbus's socket reader task and the hand-offs between threads.
fn where_time_goes(
    section: &mut Section,
    ours: &Latency,
    raw: &Latency,
    n: usize,
) -> anyhow::Result<()> {
    let started = Instant::now();
    let mut last = None;
    for _ in 0..n {
        let msg = Message::method_call(BUS_PATH, "Get")
            .destination(BUS)
            .interface(PROPS)
            .build(&(BUS, PROPERTY))?;
        last = Some(msg);
    }
    let build_us = started.elapsed().as_secs_f64() * 1e6 / n as f64;
    // Decoding: a reply-shaped body (a variant holding `as`) built once, decoded n times.
    let value = zbus::Variant::from(vec!["a", "b"]);
    let reply = Message::method_return(&last.context("no message")?.header()).build(&value)?;
    let started = Instant::now();
    for _ in 0..n {
        let _value: zbus::OwnedVariant = reply.body().deserialize()?;
    }
    let decode_us = started.elapsed().as_secs_f64() * 1e6 / n as f64;
    let extra = ours.p50_us - raw.p50_us;
    section.headline(
        "where netmirror's extra time goes (p50 over the minimal client)",
        format!(
            "{extra:.1} µs more per call: building and serialising the call {build_us:.1} µs, \
             decoding the reply {decode_us:.1} µs, the rest ({:.1} µs) is zbus's I/O path \
             between the socket and the caller: its socket-reader task, the queue that \
             hands each message to the caller's stream, task wake-ups and reactor polls \
             (the minimal client does one blocking write and read)",
            extra - build_us - decode_us
        ),
    );
    Ok(())
}
