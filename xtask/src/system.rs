//! The system packages and privileges the tests need: installed when root, named otherwise.

use std::path::Path;
use std::process::Command;

use crate::cmd;

/// A Debian package and a file whose presence shows it is installed.
const PACKAGES: &[(&str, &str)] = &[
    ("network-manager", "/usr/sbin/NetworkManager"),
    ("dbus-daemon", "/usr/bin/dbus-daemon"),
    ("iproute2", "/sbin/ip"),
    ("util-linux", "/usr/bin/unshare"),
    ("systemd", "/usr/bin/busctl"),
    // The DHCP server of the NetworkManager tests (in a peer namespace of a managed veth).
    ("dnsmasq-base", "/usr/sbin/dnsmasq"),
    // A third-party ObjectManager service whose manager is not at `/` (`objects` tests).
    ("udisks2", "/usr/libexec/udisks2/udisksd"),
    // `dpkg-shlibdeps`, for the Debian package's dependencies (CI's `debian package` step).
    ("dpkg-dev", "/usr/bin/dpkg-shlibdeps"),
];

/// What `cargo xtask bench` needs beyond the tests' packages: valgrind counts instructions
/// per D-Bus call in scenario 6 (without it the report says "not measured").
const BENCH_PACKAGES: &[(&str, &str)] = &[("valgrind", "/usr/bin/valgrind")];

/// Whether this process runs as root (and so may make network namespaces).
pub(crate) fn is_root() -> bool {
    // The effective uid is the third field of the `Uid:` line.
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find(|line| line.starts_with("Uid:"))
                .and_then(|line| line.split_whitespace().nth(2).map(|euid| euid == "0"))
        })
        .unwrap_or(false)
}

/// The packages whose marker file is missing.
pub(crate) fn missing_packages() -> Vec<&'static str> {
    missing(PACKAGES)
}

/// The packages of `list` (name, marker file) whose marker file is missing.
fn missing(list: &[(&'static str, &str)]) -> Vec<&'static str> {
    list.iter()
        .filter(|(_, marker)| !Path::new(marker).exists())
        .map(|(name, _)| *name)
        .collect()
}

/// Installs the missing packages as root; otherwise names them and fails.
pub(crate) fn ensure_packages() -> anyhow::Result<()> {
    install_missing(missing_packages())
}

/// The packages `cargo xtask bench` needs, the tests' and its own, whose marker is missing.
pub(crate) fn missing_bench_packages() -> Vec<&'static str> {
    let mut all = missing_packages();
    all.extend(missing(BENCH_PACKAGES));
    all
}

/// Installs what `cargo xtask bench` needs as root; otherwise names it and fails.
pub(crate) fn ensure_bench_packages() -> anyhow::Result<()> {
    install_missing(missing_bench_packages())
}

fn install_missing(missing: Vec<&'static str>) -> anyhow::Result<()> {
    if missing.is_empty() {
        eprintln!("xtask: system packages present");
        return Ok(());
    }
    if !is_root() {
        anyhow::bail!(
            "missing system packages: {} (as root: apt-get update && apt-get install -y {})",
            missing.join(" "),
            missing.join(" ")
        );
    }
    cmd::run(Command::new("apt-get").arg("update"))?;
    cmd::run(
        Command::new("apt-get")
            .args(["install", "-y", "--no-install-recommends"])
            .args(&missing)
            .env("DEBIAN_FRONTEND", "noninteractive"),
    )?;
    Ok(())
}

/// Whether `cargo fuzz` runs here.
pub(crate) fn has_cargo_fuzz() -> bool {
    cmd::cargo()
        .args(["fuzz", "--version"])
        .output()
        .is_ok_and(|out| out.status.success())
}

/// Installs cargo-fuzz (for the fuzz step of `cargo xtask ci`) when it is missing: a crates.io
/// build into cargo's bin folder, about a minute on two cores. It needs no root.
pub(crate) fn ensure_cargo_fuzz() -> anyhow::Result<()> {
    if has_cargo_fuzz() {
        eprintln!("xtask: cargo-fuzz present");
        return Ok(());
    }
    cmd::run(cmd::cargo().args(["install", "cargo-fuzz", "--locked"]))
}
