//! Scenario 7: NetworkManager actions. `netmirror nm connection up` against `nmcli connection
//! up` on the same daemon and the same static profile (alternated, each run preceded by an
//! unmeasured `nmcli connection down`), and `modify` calls through the library (one after the
//! other, and pipelined) against `nmcli connection modify` processes.

use std::collections::HashMap;
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use netmirror_client_cache::nm::{NmClient, Persist, UpdateOptions, settings::Settings};
use netmirror_client_cache::testing::NetworkManagerDaemon;
use nix::sys::resource::{UsageWho, getrusage};
use zbus::zvariant::Variant;

use super::measure::{Cmd, ratio};
use super::report::{Outcome, Section};
use crate::{Ctx, progress};

pub(crate) const TITLE: &str =
    "7. NetworkManager actions: `nm connection up` vs `nmcli connection up`, `modify` x500";

/// The static profile activated.
const UP: &str = "bench-up";
/// The profile modified.
const MODIFIED: &str = "bench-mod";
/// Library `modify` calls (both ways).
const MODIFY_CALLS: usize = 500;
/// Pipelined `Update2` calls in flight at once.
const WINDOW: usize = 16;

/// The first argument that makes this binary the floor of `connection up`: `ACTIVATE_ARG
/// PROFILE_PATH` connects to the system bus, calls `ActivateConnection` on the profile, and
/// exits once NetworkManager has answered (no cache, no wait for `activated`).
pub(crate) const ACTIVATE_ARG: &str = "__netmirror_bench_zbus_activate";

/// The floor child: what any zbus program that starts an activation costs, at the least.
pub(crate) fn activate_main(args: &[std::ffi::OsString]) -> std::process::ExitCode {
    let Some(profile) = args.first().and_then(|p| p.to_str()) else {
        eprintln!("usage: {ACTIVATE_ARG} PROFILE_PATH");
        return std::process::ExitCode::FAILURE;
    };
    let result: zbus::Result<()> = zbus::block_on(async {
        let conn = zbus::Connection::system().await?;
        let profile = zbus::ObjectPath::try_from(profile)?;
        let none = zbus::ObjectPath::from_static_str_unchecked("/");
        conn.call_method(
            Some("org.freedesktop.NetworkManager"),
            "/org/freedesktop/NetworkManager",
            Some("org.freedesktop.NetworkManager"),
            "ActivateConnection",
            &(profile, &none, &none),
        )
        .await?;
        // Ended here, as netmirror's commands end once done: leaving `block_on` with the
        // connection's reader still registered would start zruntime's helper thread to run it.
        std::process::exit(0)
    });
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("{ACTIVATE_ARG}: {err}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// Scenario 7.
pub(crate) fn run(ctx: &Ctx) -> Section {
    let mut section = Section::new(TITLE);
    if let Err(err) = actions(ctx, &mut section) {
        section.fact("setup", format!("failed: {err:#}"));
    }
    section
}

fn nmcli_ok(daemon: &NetworkManagerDaemon, args: &[&str]) -> anyhow::Result<String> {
    let out = daemon
        .nmcli()
        .args(args)
        .stdin(Stdio::null())
        .output()
        .context("cannot run nmcli")?;
    if !out.status.success() {
        bail!(
            "nmcli {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn actions(ctx: &Ctx, section: &mut Section) -> anyhow::Result<()> {
    progress("starting the sandboxed NetworkManager (managing a veth pair)");
    let daemon = NetworkManagerDaemon::builder()
        .manage_devices()
        .start()
        .context("cannot start the sandboxed NetworkManager")?;
    for args in [
        &["link", "add", "va0", "type", "veth", "peer", "name", "vb0"][..],
        &["link", "set", "vb0", "up"],
    ] {
        let status = daemon.netns_command("ip").args(args).status()?;
        anyhow::ensure!(status.success(), "ip {} failed", args.join(" "));
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    while !nmcli_ok(&daemon, &["-t", "-f", "DEVICE,STATE", "device"])?.contains("va0:disconnected")
    {
        anyhow::ensure!(Instant::now() < deadline, "va0 never became available");
        std::thread::sleep(Duration::from_millis(100));
    }
    nmcli_ok(
        &daemon,
        &[
            "connection",
            "add",
            "type",
            "ethernet",
            "ifname",
            "va0",
            "con-name",
            UP,
            "autoconnect",
            "no",
            "ip4",
            "192.0.2.1/24",
            "gw4",
            "192.0.2.254",
            "ip6",
            "2001:db8:1::1/64",
        ],
    )?;
    nmcli_ok(
        &daemon,
        &[
            "connection",
            "add",
            "type",
            "ethernet",
            "ifname",
            "vb0",
            "con-name",
            MODIFIED,
            "autoconnect",
            "no",
            "ip4",
            "198.51.100.1/24",
        ],
    )?;
    section.setup(
        "The real daemon in its sandbox (network and mount namespaces of its own, private \
         `dbus-daemon`), managing a veth pair `va0`/`vb0`. Profile `bench-up`: Ethernet on \
         `va0`, static IPv4 (with gateway) and IPv6, `autoconnect=no`; profile `bench-mod` on \
         `vb0`, inactive."
            .to_owned(),
    );
    section.setup(
        "`connection up`: both commands on the same profile, alternated; before every run an \
         unmeasured `nmcli connection down bench-up`, so each run activates from \
         `disconnected` and waits for `activated`. Wall and CPU (user+sys) of the process from \
         `wait4`'s rusage; medians. Targets (issue 17): wall ≤ 0.6×, CPU ≤ 0.15× nmcli's."
            .to_owned(),
    );
    let address = daemon.bus_address().to_owned();
    let ours = ctx
        .netmirror(&["nm", "connection", "up", UP])
        .env("DBUS_SYSTEM_BUS_ADDRESS", &address);
    let theirs = Cmd::new(
        &format!("nmcli connection up {UP}"),
        "nmcli",
        &["connection", "up", UP],
    )
    .env("DBUS_SYSTEM_BUS_ADDRESS", &address);
    let down = || -> anyhow::Result<()> {
        // Not active (first run): nmcli says so and changes nothing.
        let _ = daemon
            .nmcli()
            .args(["connection", "down", UP])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        Ok(())
    };
    let cmp = ctx.compare("connection up (static profile)", &ours, &theirs, down);
    if let (Outcome::Measured(a), Outcome::Measured(b)) = (&cmp.netmirror, &cmp.reference) {
        let wall = a.wall_ms.median / b.wall_ms.median;
        let cpu = a.cpu_ms.median / b.cpu_ms.median;
        section.headline(
            "connection up: wall / CPU ratio (targets ≤ 0.6 / ≤ 0.15)",
            format!(
                "{} / {} ({})",
                ratio(a.wall_ms.median, b.wall_ms.median),
                ratio(a.cpu_ms.median, b.cpu_ms.median),
                if wall <= 0.6 && cpu <= 0.15 {
                    "met"
                } else {
                    "NOT met"
                }
            ),
        );
    }
    section.comparisons.push(cmp);

    // The floor under the CPU target: this binary, re-executed, does only what every zbus
    // client that starts an activation must (process start, connect, authenticate, `Hello`,
    // one `ActivateConnection` and its reply), and nothing the command adds (arguments, the
    // cache, the wait for `activated`, the output).
    let listed = nmcli_ok(
        &daemon,
        &["-t", "-f", "NAME,DBUS-PATH", "connection", "show"],
    )?;
    let profile = listed
        .lines()
        .find_map(|line| line.strip_prefix(&format!("{UP}:")))
        .context("nmcli does not list the profile's D-Bus path")?
        .to_owned();
    let exe = std::env::current_exe().context("cannot find the bench binary")?;
    let floor = Cmd::new(
        "zbus floor: connect + ActivateConnection, no cache, no wait",
        &exe,
        &[ACTIVATE_ARG, &profile],
    )
    .env("DBUS_SYSTEM_BUS_ADDRESS", &address);
    let cmp = ctx.compare(
        "connection up: the floor of a zbus client",
        &floor,
        &theirs,
        down,
    );
    if let (Outcome::Measured(a), Outcome::Measured(b)) = (&cmp.netmirror, &cmp.reference) {
        section.headline(
            "connection up: CPU of the zbus floor (connect + ActivateConnection) / nmcli",
            ratio(a.cpu_ms.median, b.cpu_ms.median),
        );
    }
    section.comparisons.push(cmp);
    down()?;

    modify(ctx, &daemon, section)
}

/// The figures of `n` modifications: wall and CPU in total.
struct Cost {
    wall: Duration,
    cpu: Duration,
}

impl Cost {
    fn per_call_us(&self, n: usize) -> (f64, f64) {
        (
            self.wall.as_secs_f64() * 1e6 / n as f64,
            self.cpu.as_secs_f64() * 1e6 / n as f64,
        )
    }
}

fn cpu_self() -> anyhow::Result<Duration> {
    let usage = getrusage(UsageWho::RUSAGE_SELF)?;
    let us = |t: nix::sys::time::TimeVal| {
        Duration::from_secs(t.tv_sec() as u64) + Duration::from_micros(t.tv_usec() as u64)
    };
    Ok(us(usage.user_time()) + us(usage.system_time()))
}

/// The address of modification `i` (all different from each neighbour).
fn address(i: usize) -> String {
    format!("198.51.100.{}/24", 2 + i % 250)
}

fn modify(ctx: &Ctx, daemon: &NetworkManagerDaemon, section: &mut Section) -> anyhow::Result<()> {
    let n = MODIFY_CALLS;
    let nmcli_runs = if ctx.plan.runs <= 3 { 50 } else { n };
    section.setup(format!(
        "`modify`: {n} changes of `bench-mod`'s `ipv4.addresses` (to-disk, as `nmcli \
         connection modify`), each to another address. Library, one after the other: \
         `NmClient::update_profile` {n} times, each returning once the cache has fetched the \
         new settings. Library, pipelined: {n} `Update2` calls on the cache's connection, \
         {WINDOW} in flight at a time (NetworkManager answers them in order), then waiting \
         until the cache holds the last one. Both in this process (CPU from `getrusage(RUSAGE_SELF)`, the \
         connection's own thread included), after one connection and full load (not counted). \
         nmcli: {nmcli_runs} `nmcli connection modify bench-mod ipv4.addresses ...` processes \
         (wall and CPU from `wait4`){}.",
        if nmcli_runs == n {
            String::new()
        } else {
            format!(", scaled ×{} to {n} (quick run)", n / nmcli_runs)
        }
    ));
    progress(&format!(
        "modify: {n} library calls, sequential and pipelined"
    ));
    let address_bus = daemon.bus_address().to_owned();
    let (sequential, pipelined) = zbus::block_on(async {
        let conn = zbus::connection::Builder::address(&*address_bus)
            .build()
            .await?;
        let mut nm = NmClient::new(&conn).await?;
        progress("modify: cache loaded");
        let path = nm.profile_path(MODIFIED)?;
        let base = nm.profile_settings(MODIFIED).await?;
        let options = UpdateOptions {
            persist: Persist::Disk,
            ..UpdateOptions::default()
        };
        // Sequential.
        let (wall0, cpu0) = (Instant::now(), cpu_self()?);
        for i in 0..n {
            let mut s = Settings::from_map(base.clone());
            s.set_text("ipv4.addresses", &address(i))?;
            nm.update_profile(&path, s.map(), options, Duration::from_secs(25))
                .await?;
            nm.cache_mut().take_events();
        }
        let sequential = Cost {
            wall: wall0.elapsed(),
            cpu: cpu_self()? - cpu0,
        };
        progress("modify: sequential done");
        // Pipelined.
        let (wall0, cpu0) = (Instant::now(), cpu_self()?);
        let maps: Vec<_> = (0..n)
            .map(|i| {
                let mut s = Settings::from_map(base.clone());
                s.set_text("ipv4.addresses", &address(n + i))?;
                Ok(s.into_map())
            })
            .collect::<anyhow::Result<_>>()?;
        let bodies: Vec<_> = maps
            .iter()
            .map(|map| (map, 0x1u32, HashMap::<&str, Variant<'_>>::new()))
            .collect();
        // A window of calls in flight: each call's reply stream takes every message the
        // connection receives, and hundreds of them at once stall its reader.
        for window in bodies.chunks(WINDOW) {
            let calls = window.iter().map(|body| {
                conn.call_method(
                    Some("org.freedesktop.NetworkManager"),
                    path.as_str(),
                    Some("org.freedesktop.NetworkManager.Settings.Connection"),
                    "Update2",
                    body,
                )
            });
            let replies = nm
                .cache_mut()
                .drive(futures_util::future::join_all(calls))
                .await?;
            for reply in replies {
                reply.context("Update2")?;
            }
        }
        progress("modify: pipelined replies in");
        let last = address(2 * n - 1);
        let last = last.split('/').next().unwrap_or_default().to_owned();
        let held = nm
            .cache_mut()
            .wait_until(
                |c| {
                    c.object(&path)
                        .and_then(|o| o.fetched().map(|v| format!("{v:?}").contains(&last)))
                        .unwrap_or(false)
                },
                Duration::from_secs(30),
            )
            .await?;
        anyhow::ensure!(held, "the cache never showed the last pipelined change");
        let pipelined = Cost {
            wall: wall0.elapsed(),
            cpu: cpu_self()? - cpu0,
        };
        anyhow::Ok((sequential, pipelined))
    })?;
    progress(&format!("modify: {nmcli_runs} nmcli processes"));
    let mut nmcli = Cost {
        wall: Duration::ZERO,
        cpu: Duration::ZERO,
    };
    for i in 0..nmcli_runs {
        let addr = address(i);
        let cmd = Cmd::new(
            "nmcli connection modify",
            "nmcli",
            &["connection", "modify", MODIFIED, "ipv4.addresses", &addr],
        )
        .env("DBUS_SYSTEM_BUS_ADDRESS", daemon.bus_address());
        let sample = cmd.measure()?;
        nmcli.wall += sample.wall;
        nmcli.cpu += sample.cpu;
    }
    let scale = n as f64 / nmcli_runs as f64;
    let nmcli = Cost {
        wall: nmcli.wall.mul_f64(scale),
        cpu: nmcli.cpu.mul_f64(scale),
    };
    let show = |what: &str, cost: &Cost| {
        let (wall_us, cpu_us) = cost.per_call_us(n);
        format!(
            "{what}: {:.0} ms wall, {:.0} ms CPU for {n} ({:.0} modify/s; {:.0} µs wall, \
             {:.0} µs CPU each)",
            cost.wall.as_secs_f64() * 1e3,
            cost.cpu.as_secs_f64() * 1e3,
            n as f64 / cost.wall.as_secs_f64(),
            wall_us,
            cpu_us
        )
    };
    section.fact(
        "modify x500, library, sequential",
        show("sequential", &sequential),
    );
    section.fact(
        "modify x500, library, pipelined",
        show("pipelined", &pipelined),
    );
    section.fact("modify x500, nmcli processes", show("nmcli", &nmcli));
    section.headline(
        "modify x500: throughput library pipelined / sequential / nmcli processes",
        format!(
            "{:.0} / {:.0} / {:.0} per s (wall ratio pipelined/nmcli {}, CPU ratio {})",
            n as f64 / pipelined.wall.as_secs_f64(),
            n as f64 / sequential.wall.as_secs_f64(),
            n as f64 / nmcli.wall.as_secs_f64(),
            ratio(pipelined.wall.as_secs_f64(), nmcli.wall.as_secs_f64()),
            ratio(pipelined.cpu.as_secs_f64(), nmcli.cpu.as_secs_f64()),
        ),
    );
    Ok(())
}
