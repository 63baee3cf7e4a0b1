//! Scenario 1: the real NetworkManager daemon, sandboxed on a private bus and seeded with the
//! seed's shape, listed by `netmirror nm ...` and by `nmcli` on the same bus.

use std::process::Stdio;
use std::thread;
use std::time::{Duration, Instant};

use anyhow::Context;
use netmirror_client_cache::testing::NetworkManagerDaemon;

use super::measure::Cmd;
use super::report::Section;
use crate::{Ctx, progress};

pub(crate) const TITLE: &str =
    "1. NetworkManager, 551 profiles / 515 devices: `netmirror nm` vs `nmcli`";

/// Profiles seeded: the seed's 30 bonds and 465 VLANs, padded with bridges and Ethernet.
const N_PROFILES: usize = 551;

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
    Ok(())
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
