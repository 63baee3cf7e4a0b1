//! `cargo xtask ci`: the one test command. Everything CI checks, in the order a developer wants
//! to hear about failures (cheap first), with warnings made fatal.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, bail};

use crate::{cmd, system, tidy};

/// Library crates that are published and must package.
pub(crate) const PUBLISHED: &[&str] = &[
    "netmirror-dedup-index",
    "netmirror-dbus-meta",
    "netmirror-client-cache",
    "netmirror-platform",
    "netmirror",
];

/// Features that turn on the tests needing root.
const PRIVILEGED_FEATURES: &str =
    "netmirror-platform/privileged,netmirror-client-cache/privileged,netmirror/privileged";

/// Markers in the names of every namespace, process and folder the test fixtures make.
pub(crate) const FIXTURE_MARKER: &str = "netmirror-test";
/// Prefix of the network namespaces the fixtures name.
pub(crate) const NETNS_PREFIX: &str = "nmx-";

pub(crate) fn run(root: &Path, args: &[String]) -> anyhow::Result<()> {
    let mut privileged = system::is_root();
    for arg in args {
        match arg.as_str() {
            "--no-privileged" => privileged = false,
            // Kept for symmetry with STYLE.md: CI mode is always fatal.
            "--fatal-warnings" => {}
            other => bail!("unknown option `{other}` for `cargo xtask ci`"),
        }
    }
    let started = Instant::now();
    if system::is_root() {
        system::ensure_packages()?;
    } else {
        let missing = system::missing_packages();
        if !missing.is_empty() {
            eprintln!(
                "xtask: note: not root, and these packages are missing: {} \
                 (the privileged tests that need them are skipped anyway)",
                missing.join(" ")
            );
        }
    }

    step("tidy", || tidy::run(root))?;
    step("fmt", || {
        cmd::run(cargo().args(["fmt", "--all", "--check"]))
    })?;
    step("clippy", || {
        cmd::run(cargo().args([
            "clippy",
            "--workspace",
            "--all-targets",
            "--all-features",
            "--locked",
        ]))
    })?;

    let test_features = if privileged {
        Some(PRIVILEGED_FEATURES)
    } else {
        None
    };
    let test_result = step("test", || {
        let mut test = cargo();
        test.args(["test", "--workspace", "--locked"]);
        if let Some(features) = test_features {
            test.args(["--features", features]);
        }
        cmd::run(&mut test)
    });
    if privileged {
        step(
            "cleanup after a deliberately failing test",
            deliberate_failure,
        )?;
    } else {
        report_skipped_privileged()?;
    }
    step("leftovers", check_no_leftovers)?;
    test_result?;

    step("bench build", || {
        cmd::run(cargo().args(["test", "--workspace", "--benches", "--no-run", "--locked"]))
    })?;
    step("doc", || {
        cmd::run(cargo().args([
            "doc",
            "--workspace",
            "--no-deps",
            "--all-features",
            "--locked",
        ]))
    })?;
    step("package", || {
        for package in PUBLISHED {
            cmd::run(cargo().args([
                "package",
                "--package",
                package,
                "--no-verify",
                "--allow-dirty",
                "--locked",
            ]))?;
        }
        Ok(())
    })?;
    eprintln!(
        "xtask: ci passed in {:.0} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// A `cargo` command in CI mode: its own target folder (so the strict flags do not invalidate a
/// developer's everyday build), warnings fatal, and the client cache in fatal-warnings mode.
fn cargo() -> Command {
    let mut cargo = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cargo
        .env("CARGO_TARGET_DIR", "target/ci")
        .env("RUSTFLAGS", "-D warnings")
        .env("RUSTDOCFLAGS", "-D warnings")
        .env("NETMIRROR_CLIENT_DEBUG", "warning,error")
        .env("NETMIRROR_FATAL_WARNINGS", "1");
    cargo
}

fn step(name: &str, f: impl FnOnce() -> anyhow::Result<()>) -> anyhow::Result<()> {
    eprintln!("\n== xtask ci: {name}");
    f().with_context(|| format!("xtask ci: step `{name}` failed"))
}

/// As non-root, names every privileged test that did not run, and why.
fn report_skipped_privileged() -> anyhow::Result<()> {
    let listing = cmd::read(cargo().args([
        "test",
        "--workspace",
        "--locked",
        "--features",
        PRIVILEGED_FEATURES,
        "--",
        "--list",
        "--format=terse",
        "privileged::",
    ]))?;
    let skipped: Vec<&str> = listing
        .lines()
        .filter_map(|line| line.strip_suffix(": test"))
        .collect();
    eprintln!(
        "xtask: SKIPPED {} privileged tests: not root, so no network namespace or \
         NetworkManager daemon can be made (run `cargo xtask ci` as root to run them):",
        skipped.len()
    );
    for name in skipped {
        eprintln!("  skipped: {name}");
    }
    Ok(())
}

/// Runs a test that starts every fixture and then panics, and checks that it failed.
/// `check_no_leftovers` then proves the fixtures cleaned up after the panic.
fn deliberate_failure() -> anyhow::Result<()> {
    let mut test = cargo();
    test.args([
        "test",
        "--package",
        "netmirror-client-cache",
        "--features",
        "privileged",
        "--test",
        "it",
        "--locked",
        "--",
        "--exact",
        "privileged::fixtures::deliberate_failure_leaves_nothing_behind",
    ])
    .env("NETMIRROR_DELIBERATE_FAILURE", "1");
    match cmd::run(&mut test) {
        Ok(()) => {
            bail!("the deliberately failing test passed: NETMIRROR_DELIBERATE_FAILURE ignored")
        }
        Err(_) => {
            eprintln!("xtask: the deliberately failing test failed, as it should");
            Ok(())
        }
    }
}

/// Fails when a namespace, bus or daemon made by a test is still there.
fn check_no_leftovers() -> anyhow::Result<()> {
    let mut leftovers = Vec::new();
    if let Ok(netns) = cmd::read(Command::new("ip").args(["netns", "list"])) {
        leftovers.extend(
            netns
                .lines()
                .filter(|line| line.starts_with(NETNS_PREFIX))
                .map(|line| format!("network namespace {line}")),
        );
    }
    for entry in std::fs::read_dir("/proc")?.flatten() {
        let pid = entry.file_name();
        let Some(pid) = pid
            .to_str()
            .filter(|pid| pid.bytes().all(|b| b.is_ascii_digit()))
        else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if cmdline.contains(FIXTURE_MARKER) && !cmdline.contains("xtask") {
            leftovers.push(format!("process {pid}: {}", cmdline.trim()));
        }
    }
    if !leftovers.is_empty() {
        bail!("the tests left these behind:\n  {}", leftovers.join("\n  "));
    }
    eprintln!("xtask: no namespace, bus or daemon left behind");
    Ok(())
}
