//! The examples a user copies, checked by `cargo xtask ci`: dedup-index's runs always, the
//! platform's are built always and, as root, run as a user runs them, in a throwaway network
//! namespace; client-cache's run against a private bus (see [`crate::dbus_examples`]), its
//! NetworkManager one only as root.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, bail};

use crate::cmd;

/// The platform's examples that watch a namespace: each prints its counts, then the route
/// changes for `--seconds`, and exits by itself.
const WATCHERS: &[&str] = &["watch_routes", "watch_routes_tokio"];

/// The route the check adds while a watcher runs; the watcher must print it as added.
const ROUTE: &str = "198.51.100.0/24";

/// Builds every example with the features they need (`cargo` is CI's cargo, with its target
/// folder `target_dir`); runs dedup-index's and client-cache's, and the kernel and
/// NetworkManager ones when `privileged`.
pub(crate) fn run(mut cargo: Command, target_dir: &Path, privileged: bool) -> anyhow::Result<()> {
    cmd::run(cargo.args([
        "build",
        "--package",
        "netmirror-platform",
        "--examples",
        "--features",
        "netmirror-platform/tokio",
        "--locked",
    ]))?;
    cmd::run(cargo_again(&cargo).args([
        "build",
        "--package",
        "netmirror-client-cache",
        "--examples",
        "--locked",
    ]))?;
    // dedup-index's example needs nothing: it runs everywhere, and must say what it says.
    let mut routes = cargo_again(&cargo);
    routes.args([
        "run",
        "--quiet",
        "--package",
        "netmirror-dedup-index",
        "--example",
        "routes",
        "--locked",
    ]);
    let out = cmd::read(&mut routes).context("example `routes` of netmirror-dedup-index")?;
    if !out.contains("2 routes on interface 2") {
        bail!("example `routes` of netmirror-dedup-index printed:\n{out}");
    }
    eprintln!("xtask: example `routes` of netmirror-dedup-index ran");
    crate::dbus_examples::run(&target_dir.join("debug/examples"), privileged)?;
    if !privileged {
        eprintln!(
            "xtask: the kernel examples were built, not run: they need root for a network namespace"
        );
        return Ok(());
    }
    for example in WATCHERS {
        watch_in_throwaway_netns(&target_dir.join("debug/examples").join(example))
            .with_context(|| format!("example `{example}`"))?;
    }
    Ok(())
}

/// A new command with `cargo`'s program and environment (CI's target folder and flags).
fn cargo_again(cargo: &Command) -> Command {
    let mut again = Command::new(cargo.get_program());
    for (key, value) in cargo.get_envs() {
        match value {
            Some(value) => again.env(key, value),
            None => again.env_remove(key),
        };
    }
    if let Some(dir) = cargo.get_current_dir() {
        again.current_dir(dir);
    }
    again
}

/// A network namespace named as the test fixtures name theirs (`nmx-<pid>-...`, so a
/// leftover of a killed run is recognised), deleted on drop.
pub(crate) struct Netns(pub(crate) String);

impl Netns {
    pub(crate) fn add(what: &str) -> anyhow::Result<Self> {
        let name = format!("{}{}-{what}", crate::ci::NETNS_PREFIX, std::process::id());
        cmd::run(Command::new("ip").args(["netns", "add", &name]))?;
        Ok(Netns(name))
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        if let Err(err) = cmd::run(Command::new("ip").args(["netns", "delete", &self.0])) {
            eprintln!("xtask: cannot delete namespace {}: {err:#}", self.0);
        }
    }
}

/// Runs a watcher in a fresh namespace, adds a route once it has loaded (its first line),
/// and checks that it reported the route and exited by itself, successfully.
fn watch_in_throwaway_netns(binary: &PathBuf) -> anyhow::Result<()> {
    let netns = Netns::add("example")?;
    let mut child = Command::new(binary)
        .args(["--netns", &netns.0, "--seconds", "3"])
        .stdout(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot start {}", binary.display()))?;
    let mut stdout = BufReader::new(child.stdout.take().context("no stdout")?);
    let mut counts = String::new();
    stdout.read_line(&mut counts)?;
    eprintln!("  {}", counts.trim_end());
    if !counts.contains(" routes") {
        let _ = child.kill();
        let _ = child.wait();
        bail!("the first line is not the counts: {counts:?}");
    }
    cmd::run(Command::new("ip").args(["-n", &netns.0, "route", "add", "blackhole", ROUTE]))?;
    let mut rest = String::new();
    stdout.read_to_string(&mut rest)?;
    let status = child.wait()?;
    eprintln!("{rest}");
    if !status.success() {
        bail!("exited with {status}");
    }
    if !rest
        .lines()
        .any(|line| line.starts_with("+ blackhole ") && line.contains(ROUTE))
    {
        bail!("did not print the route it saw added: `+ blackhole {ROUTE}`");
    }
    Ok(())
}
