//! Scenario 1: the real NetworkManager daemon, sandboxed on a private bus and seeded with the
//! seed's shape, listed by `netmirror nm ...` and by `nmcli` on the same bus.

use std::ffi::OsString;
use std::process::{ExitCode, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::Context;
use netmirror_client_cache::testing::NetworkManagerDaemon;

use super::measure::{Cmd, Spread};
use super::report::Section;
use crate::{Ctx, progress};

pub(crate) const TITLE: &str =
    "1. NetworkManager, 551 profiles / 515 devices: `netmirror nm` vs `nmcli`";

/// Profiles seeded: the seed's 30 bonds and 465 VLANs, padded with bridges and Ethernet.
const N_PROFILES: usize = 551;

/// The first argument that makes this binary the floor of a listing: `LIST_FLOOR_ARG
/// objects|settings` connects to the system bus and calls NetworkManager's `GetManagedObjects`,
/// its reply received and not decoded; `settings` then calls `GetSettings` on every profile
/// (`ListConnections` names them), all in flight at once, the replies not decoded either.
pub(crate) const LIST_FLOOR_ARG: &str = "__netmirror_bench_nm_list_floor";

/// The floor child: the least a zbus program that lists NetworkManager's objects (and its
/// profiles' settings) must do, and exits.
pub(crate) fn list_floor_main(args: &[OsString]) -> ExitCode {
    let settings = match args.first().and_then(|arg| arg.to_str()) {
        Some("objects") => false,
        Some("settings") => true,
        _ => {
            eprintln!("usage: {LIST_FLOOR_ARG} objects|settings");
            return ExitCode::FAILURE;
        }
    };
    let result: zbus::Result<()> = zbus::block_on(async {
        const NM: Option<&str> = Some("org.freedesktop.NetworkManager");
        let conn = zbus::Connection::system().await?;
        conn.call_method(
            NM,
            "/org/freedesktop",
            Some("org.freedesktop.DBus.ObjectManager"),
            "GetManagedObjects",
            &(),
        )
        .await?;
        if settings {
            let listed = conn
                .call_method(
                    NM,
                    "/org/freedesktop/NetworkManager/Settings",
                    Some("org.freedesktop.NetworkManager.Settings"),
                    "ListConnections",
                    &(),
                )
                .await?;
            let paths: Vec<zbus::OwnedObjectPath> = listed.body().deserialize()?;
            let calls = paths.iter().map(|path| {
                conn.call_method(
                    NM,
                    path.as_str(),
                    Some("org.freedesktop.NetworkManager.Settings.Connection"),
                    "GetSettings",
                    &(),
                )
            });
            for reply in futures_util::future::join_all(calls).await {
                reply?;
            }
        }
        // Ended here, as netmirror's commands end once done (see `nm_actions::activate_main`).
        std::process::exit(0)
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("{LIST_FLOOR_ARG}: {err}");
            ExitCode::FAILURE
        }
    }
}

/// Scenario 1.
pub(crate) fn run(ctx: &Ctx) -> Section {
    let mut section = Section::new(TITLE);
    if let Err(err) = nm(ctx, &mut section) {
        section.fact("setup", format!("failed: {err:#}"));
    }
    section
}

/// Lines `nmcli ARGS` prints.
fn nmcli_lines(daemon: &NetworkManagerDaemon, args: &[&str]) -> anyhow::Result<usize> {
    let out = daemon
        .nmcli()
        .args(args)
        .stdin(Stdio::null())
        .output()
        .context("cannot run nmcli")?;
    Ok(String::from_utf8_lossy(&out.stdout).lines().count())
}

fn nm(ctx: &Ctx, section: &mut Section) -> anyhow::Result<()> {
    progress("starting the sandboxed NetworkManager");
    let started = Instant::now();
    let daemon = NetworkManagerDaemon::builder()
        .seed_benchmark_profiles(N_PROFILES)
        .start_timeout(Duration::from_secs(120))
        .start()
        .context("cannot start the sandboxed NetworkManager")?;
    // The daemon takes its name before it has read every profile: wait until the counts settle.
    let deadline = Instant::now() + Duration::from_secs(90);
    let mut last = (0, 0);
    loop {
        let now = (
            nmcli_lines(&daemon, &["-t", "-f", "NAME", "connection", "show"])?,
            nmcli_lines(&daemon, &["-t", "-f", "DEVICE", "device"])?,
        );
        if now == last && now.0 >= N_PROFILES {
            break;
        }
        if Instant::now() > deadline {
            break;
        }
        last = now;
        thread::sleep(Duration::from_secs(1));
    }
    section.setup(format!(
        "The real daemon (`/usr/sbin/NetworkManager`, in network and mount namespaces of its \
         own) on a private `dbus-daemon`, seeded with {N_PROFILES} keyfile profiles, all \
         `autoconnect=false`: the seed's 30 bonds `bond-1..30` and their 465 VLANs (bond i \
         carries VLAN ids i..30), padded with 19 bridges and 37 Ethernet profiles. Bond, \
         VLAN and bridge profiles give unrealized devices (514) and the namespace has `lo`: \
         515 devices. `nmcli device` lists the realized ones only (here `lo`)."
    ));
    section.setup(
        "Both tools get the private bus as `DBUS_SYSTEM_BUS_ADDRESS`; output goes to \
         /dev/null. Terse output on both sides (`-t`), as scripts use it."
            .to_owned(),
    );
    section.setup(format!(
        "The rows against the daemon's floor alternate {} runs of each command (four times \
         the other rows' count): the two sides of a pair take 70-160 ms and differ by a few, \
         less than the machine's noise moves a single run.",
        floor_runs(ctx)
    ));
    section.fact(
        "daemon ready after",
        format!("{:.1} s", started.elapsed().as_secs_f64()),
    );
    section.fact(
        "profiles / devices that nmcli lists (it lists realized devices only)",
        format!("{} / {}", last.0, last.1),
    );
    section.fact(
        "devices on D-Bus (`GetAllDevices`, realized and unrealized)",
        all_devices(&daemon).unwrap_or_else(|err| format!("{err:#}")),
    );
    let address = daemon.bus_address().to_owned();
    let ours = |args: &[&str]| ctx.netmirror(args).env("DBUS_SYSTEM_BUS_ADDRESS", &address);
    let nmcli = |args: &[&str]| {
        let label = format!("nmcli {}", args.join(" "));
        Cmd::new(label.trim(), "nmcli", args).env("DBUS_SYSTEM_BUS_ADDRESS", &address)
    };
    let cases = [
        (
            "devices",
            ours(&["-t", "nm", "device"]),
            nmcli(&["-t", "device"]),
        ),
        (
            "profiles",
            ours(&["-t", "nm", "connection"]),
            nmcli(&["-t", "connection", "show"]),
        ),
        ("overview", ours(&[]), nmcli(&[])),
    ];
    for (case, a, b) in &cases {
        let lines = |cmd: &Cmd| match cmd.output() {
            Ok((true, stdout, _)) => stdout.lines().count().to_string(),
            Ok((false, _, stderr)) => format!("fails: {}", super::measure::last_lines(&stderr, 1)),
            Err(err) => format!("{err:#}"),
        };
        section.fact(
            format!("{case}: output lines"),
            format!("`{}`: {}; `{}`: {}", a.label, lines(a), b.label, lines(b)),
        );
        section.comparisons.push(ctx.compare(case, a, b, || Ok(())));
    }
    // The daemon's floor: this binary, re-executed, makes the calls a listing needs and
    // decodes nothing (process start, connect, `Hello`, the calls and their replies).
    let exe = std::env::current_exe().context("cannot find the bench binary")?;
    let floor = |what: &str, label: &str| {
        Cmd::new(label, &exe, &[LIST_FLOOR_ARG, what]).env("DBUS_SYSTEM_BUS_ADDRESS", &address)
    };
    let objects_floor = floor(
        "objects",
        "zbus floor: connect + GetManagedObjects, not decoded",
    );
    let settings_floor = floor(
        "settings",
        "zbus floor: connect + GetManagedObjects + GetSettings of every profile, not decoded",
    );
    for ((case, ours, _), floor) in
        cases
            .iter()
            .zip([&objects_floor, &settings_floor, &objects_floor])
    {
        let cmp = ctx.compare_runs(
            &format!("{case}: netmirror ÷ the daemon's floor"),
            ours,
            floor,
            floor_runs(ctx),
            || Ok(()),
        );
        section.comparisons.push(cmp);
    }
    let pids = daemon.pid().map(|nm| (nm, daemon.bus().pid()));
    for (case, a, b) in &cases {
        for cmd in [a, b] {
            section.fact(
                format!("{case}: `{}` and the daemon's floor", cmd.label),
                match pids {
                    Some((nm, bus)) => daemon_floor(cmd, nm, bus, floor_runs(ctx))
                        .unwrap_or_else(|err| format!("{err:#}")),
                    None => "the daemon's process id is not known".to_owned(),
                },
            );
        }
    }
    Ok(())
}

/// Runs per command in the comparisons with the daemon's floor and in [`daemon_floor`]: four
/// times the plan's. The two sides of a pair take 70-160 ms and differ by a few, while this
/// machine's noise moves one run by ±10 ms; with five runs, the medians of the same command
/// in two comparisons of one run were 15 % apart.
fn floor_runs(ctx: &Ctx) -> usize {
    ctx.plan.runs * 4
}

/// The wall time of `cmd` against the time NetworkManager's main thread ran meanwhile: the
/// daemon answers a client's calls one after the other on that thread, so no client can list
/// faster than that thread's work for it. Also the time of all the daemon's threads and of the
/// `dbus-daemon` that relays the calls (medians of `runs` runs, from
/// `/proc/PID/task/*/schedstat`, which counts nanoseconds on the CPU).
fn daemon_floor(cmd: &Cmd, nm: u32, bus: u32, runs: usize) -> anyhow::Result<String> {
    let (mut walls, mut mains, mut alls, mut buses, mut ratios) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..runs {
        let (main0, all0) = on_cpu(nm)?;
        let (bus0, _) = on_cpu(bus)?;
        let sample = cmd.measure()?;
        let (main1, all1) = on_cpu(nm)?;
        let (bus1, _) = on_cpu(bus)?;
        let ms = |ns: u64| ns as f64 / 1e6;
        let wall = sample.wall.as_secs_f64() * 1e3;
        let main = ms(main1.saturating_sub(main0));
        walls.push(wall);
        mains.push(main);
        alls.push(ms(all1.saturating_sub(all0)));
        buses.push(ms(bus1.saturating_sub(bus0)));
        ratios.push(wall / main.max(0.001));
    }
    Ok(format!(
        "wall {} ms; meanwhile NetworkManager's main thread ran {} ms (all its threads {}), \
         dbus-daemon {}; wall ÷ main thread {}",
        Spread::of(walls).show(1),
        Spread::of(mains).show(1),
        Spread::of(alls).show(1),
        Spread::of(buses).show(1),
        Spread::of(ratios).show(2),
    ))
}

/// Nanoseconds process `pid` has been on the CPU: its main thread's, and all its threads'.
fn on_cpu(pid: u32) -> anyhow::Result<(u64, u64)> {
    let read = |path: &std::path::Path| -> anyhow::Result<u64> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        text.split_whitespace()
            .next()
            .and_then(|ns| ns.parse().ok())
            .with_context(|| format!("unexpected {}: {text:?}", path.display()))
    };
    let tasks = std::path::PathBuf::from(format!("/proc/{pid}/task"));
    let main = read(&tasks.join(pid.to_string()).join("schedstat"))?;
    let mut all = 0;
    for task in
        std::fs::read_dir(&tasks).with_context(|| format!("cannot list {}", tasks.display()))?
    {
        // A thread may end between the listing and the read.
        all += read(&task?.path().join("schedstat")).unwrap_or(0);
    }
    Ok((main, all))
}

/// The number of devices NetworkManager has, realized or not, as `GetAllDevices` says.
fn all_devices(daemon: &NetworkManagerDaemon) -> anyhow::Result<String> {
    let out = daemon
        .bus()
        .command("busctl")
        .args([
            "--system",
            "call",
            "org.freedesktop.NetworkManager",
            "/org/freedesktop/NetworkManager",
            "org.freedesktop.NetworkManager",
            "GetAllDevices",
        ])
        .stdin(Stdio::null())
        .output()
        .context("cannot run busctl")?;
    // `ao N /path ...`
    let text = String::from_utf8_lossy(&out.stdout);
    text.split_whitespace()
        .nth(1)
        .map(str::to_owned)
        .with_context(|| format!("unexpected GetAllDevices reply: {}", text.trim()))
}
