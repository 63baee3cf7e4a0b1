//! `cargo xtask ci`: the one test command. Everything CI checks, in the order a developer wants
//! to hear about failures (cheap first), with warnings made fatal.

use std::collections::BTreeSet;
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
/// The platform's async caches come along, for their privileged tests.
const PRIVILEGED_FEATURES: &str = "netmirror-platform/privileged,netmirror-platform/tokio,\
     netmirror-platform/async-io,netmirror-client-cache/privileged,netmirror/privileged";

/// Markers in the names of every namespace, process and folder the test fixtures make.
pub(crate) const FIXTURE_MARKER: &str = "netmirror-test";
/// Prefix of the network namespaces the fixtures name.
pub(crate) const NETNS_PREFIX: &str = "nmx-";

/// The variable that makes the deliberately failing tests fail.
const DELIBERATE_FAILURE: &str = "NETMIRROR_DELIBERATE_FAILURE";
/// The name the deliberately failing tests share, one per crate with fixtures.
const DELIBERATE_FAILURE_TEST: &str = "deliberate_failure_leaves_nothing_behind";
/// Each of them: every one must fail when asked to.
const DELIBERATE_FAILURES: &[&str] = &[
    "privileged::fixtures::deliberate_failure_leaves_nothing_behind",
    "privileged::netns::deliberate_failure_leaves_nothing_behind",
];

pub(crate) fn run(root: &Path, args: &[String]) -> anyhow::Result<()> {
    // Why the privileged tests are skipped, or `None` when they run.
    let mut skip_reason = (!system::is_root()).then_some(
        "not root, so no network namespace or NetworkManager daemon can be made \
         (run `cargo xtask ci` as root to run them)",
    );
    for arg in args {
        match arg.as_str() {
            "--no-privileged" => skip_reason = Some("`--no-privileged` was given"),
            // Kept for symmetry with STYLE.md: CI mode is always fatal.
            "--fatal-warnings" => {}
            other => bail!("unknown option `{other}` for `cargo xtask ci`"),
        }
    }
    let privileged = skip_reason.is_none();
    let started = Instant::now();
    let traces_before = fixture_traces()?;
    if system::is_root() {
        system::ensure_packages()?;
    } else {
        let missing = system::missing_packages();
        if !missing.is_empty() {
            eprintln!(
                "xtask: note: not root, and these packages are missing: {} \
                 (the tests that need them will fail: `cargo xtask setup` as root installs them)",
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
    if let Some(reason) = skip_reason {
        report_skipped_privileged(reason)?;
    } else {
        step(
            "cleanup after a deliberately failing test",
            deliberate_failure,
        )?;
    }
    let examples_result = step("examples", || {
        crate::examples::run(cargo(), &ci_target_dir(), privileged)
    });
    step("leftovers", || check_no_leftovers(&traces_before))?;
    test_result?;
    examples_result?;

    step("fuzz", || fuzz(root))?;

    step("bench build", || {
        cmd::run(cargo().args(["test", "--workspace", "--benches", "--no-run", "--locked"]))
    })?;
    step("doc", || {
        // Every feature set a user sees: all features (docs.rs), the defaults, and each
        // optional feature of a library on its own, so a link that resolves only with some
        // other feature on fails here (doc warnings are errors).
        for set in DOC_FEATURE_SETS {
            let mut doc = cargo();
            doc.args(["doc", "--no-deps", "--locked"]).args(*set);
            cmd::run(&mut doc)?;
        }
        Ok(())
    })?;
    step("manual page and completions", || {
        crate::assets(
            root,
            &[root.join("target/ci/assets").display().to_string()],
            cargo,
        )
    })?;
    step("debian package", || {
        crate::deb::run(
            root,
            &ci_target_dir(),
            &root.join("target/ci/assets"),
            &crate_version(root)?,
        )
    })?;
    step("publish --dry-run", || {
        // Every published crate packaged and built from its package alone, in dependency
        // order; the unpublished siblings come from cargo's local overlay of the packages.
        forget_earlier_packages(
            &ci_target_dir(),
            cargo_home().as_deref(),
            &crate_version(root)?,
        )?;
        let mut publish = cargo();
        publish.args(["publish", "--dry-run", "--allow-dirty", "--locked"]);
        for name in PUBLISHED {
            publish.args(["--package", name]);
        }
        cmd::run(&mut publish)
    })?;
    step("outside crate", || outside_crate(root, privileged))?;
    eprintln!(
        "xtask: ci passed in {:.0} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Removes what an earlier `publish --dry-run` of this checkout left behind: the packaging
/// folder (with cargo's overlay registry) and the copies of our own crates that cargo unpacked
/// from that overlay into `$CARGO_HOME/registry/src`. Cargo names that unpack folder after the
/// overlay's path, so a checkout at the same path gets the same folder, and it reuses an
/// unpacked `name-version` found there without comparing it with the new package: a CI
/// machine that keeps `~/.cargo` between runs then verifies the crates against an older tree
/// (it built a `cache.rs` that still used a removed dependency). Only folders named after our
/// published crates at this version are removed; the downloaded dependencies stay.
fn forget_earlier_packages(
    target: &Path,
    cargo_home: Option<&Path>,
    version: &str,
) -> anyhow::Result<()> {
    let package = target.join("package");
    if package.exists() {
        std::fs::remove_dir_all(&package)
            .with_context(|| format!("removing {}", package.display()))?;
    }
    let Some(cargo_home) = cargo_home else {
        return Ok(());
    };
    let Ok(sources) = std::fs::read_dir(cargo_home.join("registry/src")) else {
        return Ok(());
    };
    for source in sources {
        let source = source?.path();
        for name in PUBLISHED {
            let unpacked = source.join(format!("{name}-{version}"));
            if unpacked.exists() {
                std::fs::remove_dir_all(&unpacked)
                    .with_context(|| format!("removing {}", unpacked.display()))?;
            }
        }
    }
    Ok(())
}

/// Cargo's home folder as cargo finds it: `$CARGO_HOME`, else `~/.cargo`.
fn cargo_home() -> Option<std::path::PathBuf> {
    std::env::var_os("CARGO_HOME")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| Path::new(&home).join(".cargo")))
}

/// Where the outside user's crate lives: not a workspace member, it depends on the libraries
/// by version, as a crates.io user does.
const OUTSIDE_DIR: &str = "tests/outside";

/// Builds and tests `tests/outside` against the packaged crates (what `cargo publish
/// --dry-run` left unpacked in the target folder), patched in for crates.io: a user's view,
/// with only what is published. Its lock file is the workspace's, so it gets the same
/// dependency versions; as root its privileged tests run too.
fn outside_crate(root: &Path, privileged: bool) -> anyhow::Result<()> {
    let target = root.join("target/ci");
    let work = target.join("outside");
    if work.exists() {
        std::fs::remove_dir_all(&work)?;
    }
    std::fs::create_dir_all(work.join("src"))?;
    copy_tree(&root.join(OUTSIDE_DIR), &work)?;
    std::fs::copy(root.join("Cargo.lock"), work.join("Cargo.lock"))?;
    let version = crate_version(root)?;
    let mut test = cargo();
    // `--tests`: the crate has no doc tests, and a run's last test line should count tests.
    test.current_dir(&work).args(["test", "--tests"]);
    for name in PUBLISHED.iter().filter(|name| **name != "netmirror") {
        let unpacked = target.join("package").join(format!("{name}-{version}"));
        if !unpacked.join("Cargo.toml").exists() {
            bail!(
                "{} is missing: run the `publish --dry-run` step first",
                unpacked.display()
            );
        }
        test.arg("--config").arg(format!(
            "patch.crates-io.{name}.path={:?}",
            unpacked.display().to_string()
        ));
    }
    if privileged {
        test.args(["--features", "privileged"]);
    }
    cmd::run(&mut test)
}

/// The workspace's version (every published crate has it).
pub(crate) fn crate_version(root: &Path) -> anyhow::Result<String> {
    let manifest = std::fs::read_to_string(root.join("Cargo.toml"))?;
    manifest
        .lines()
        .find_map(|line| line.trim().strip_prefix("version = \""))
        .and_then(|rest| rest.split('"').next())
        .map(str::to_owned)
        .context("no `version = \"...\"` in the workspace manifest")
}

/// Copies a folder's files and subfolders (no links expected).
fn copy_tree(from: &Path, to: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let dest = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_tree(&entry.path(), &dest)?;
        } else {
            std::fs::copy(entry.path(), dest)?;
        }
    }
    Ok(())
}

/// The cargo-fuzz packages, and their targets with the folder of each one's seeds (relative to
/// the package): the platform crate's receive path (netlink from the kernel) and `ip -batch`
/// reader (files from users), dbus-meta's body reader (D-Bus bodies from any service) and
/// client-cache's replay (recordings of the real NetworkManager, damaged: hostile files and
/// hostile messages through the cache's core).
const FUZZ_PACKAGES: &[(&str, &[(&str, &str)])] = &[
    (
        "platform/fuzz",
        &[
            ("parse", "seeds"),
            ("receive", "seeds"),
            ("ipbatch", "seeds-ipbatch"),
        ],
    ),
    ("dbus-meta/fuzz", &[("body", "seeds")]),
    ("client-cache/fuzz", &[("replay", "../tests/data/replay")]),
];
/// How long each fuzz target runs, in seconds: a fixed, short time per CI run.
const FUZZ_SECONDS: u32 = 12;

/// Builds the fuzz targets and runs each for [`FUZZ_SECONDS`], starting from the committed
/// seeds (real captured messages, bodies as zbus writes them, recordings); a crash or a hang
/// (an input that runs over 10 s) fails the step, and libFuzzer leaves the input in
/// `PACKAGE/artifacts/TARGET/`. cargo-fuzz needs a nightly feature gate: on stable it runs
/// with `RUSTC_BOOTSTRAP=1`. Its build lives in `target/fuzz`, apart from CI's.
fn fuzz(root: &Path) -> anyhow::Result<()> {
    // Like the system packages, cargo-fuzz is set up here when missing (a crates.io build,
    // no root needed), so `cargo xtask ci` alone does all set-up.
    system::ensure_cargo_fuzz()?;
    let target_dir = root.join("target/fuzz");
    let fuzz = |dir: &str| {
        let mut cargo = cmd::cargo();
        cargo
            .current_dir(root.join(dir))
            .env("RUSTC_BOOTSTRAP", "1")
            .env_remove("RUSTFLAGS")
            .env_remove("CARGO_TARGET_DIR")
            .args(["fuzz"]);
        cargo
    };
    // Safe Rust throughout: panics are what is looked for, so no sanitizer (faster builds and
    // runs); debug assertions stay on, so arithmetic overflows panic too.
    let options = ["-O", "--sanitizer", "none", "--target-dir"];
    for &(dir, targets) in FUZZ_PACKAGES {
        cmd::run(fuzz(dir).arg("build").args(options).arg(&target_dir))?;
        for &(target, seeds) in targets {
            let corpus = target_dir.join("corpus").join(target);
            std::fs::create_dir_all(&corpus)?;
            cmd::run(
                fuzz(dir)
                    .arg("run")
                    .args(options)
                    .arg(&target_dir)
                    .arg(target)
                    .arg(&corpus)
                    .arg(seeds)
                    .arg("--")
                    .arg(format!("-max_total_time={FUZZ_SECONDS}"))
                    .arg("-timeout=10"),
            )
            .with_context(|| {
                format!("fuzz target `{dir}` `{target}` found a crash (or failed to run)")
            })?;
        }
    }
    Ok(())
}

/// A `cargo` command in CI mode: its own target folder (so the strict flags do not invalidate a
/// developer's everyday build), warnings fatal, and the client cache in fatal-warnings mode.
/// The feature sets `cargo xtask ci` builds the docs with (see its `doc` step).
const DOC_FEATURE_SETS: &[&[&str]] = &[
    &["--workspace", "--all-features"],
    &["--workspace"],
    &["--package", "netmirror-platform", "--features", "tokio"],
    &["--package", "netmirror-platform", "--features", "async-io"],
    &["--package", "netmirror-platform", "--features", "testing"],
    &[
        "--package",
        "netmirror-client-cache",
        "--features",
        "testing",
    ],
];

fn cargo() -> Command {
    let mut cargo = cmd::cargo();
    cargo
        .env("CARGO_TARGET_DIR", ci_target_dir())
        .env("RUSTFLAGS", "-D warnings")
        .env("RUSTDOCFLAGS", "-D warnings")
        .env("NETMIRROR_CLIENT_DEBUG", "warning,error")
        .env("NETMIRROR_FATAL_WARNINGS", "1")
        .env_remove(DELIBERATE_FAILURE);
    cargo
}

/// CI's own target folder. Absolute: tools that run cargo from a crate's folder (trybuild)
/// read it too.
fn ci_target_dir() -> std::path::PathBuf {
    std::env::current_dir()
        .map(|root| root.join("target/ci"))
        .unwrap_or_else(|_| "target/ci".into())
}

fn step(name: &str, f: impl FnOnce() -> anyhow::Result<()>) -> anyhow::Result<()> {
    eprintln!("\n== xtask ci: {name}");
    f().with_context(|| format!("xtask ci: step `{name}` failed"))
}

/// Names every privileged test that did not run, with its crate, and why.
fn report_skipped_privileged(reason: &str) -> anyhow::Result<()> {
    // Build the tests with the privileged features, then ask each test binary for its list.
    let artifacts = cmd::read(cargo().args([
        "test",
        "--workspace",
        "--locked",
        "--features",
        PRIVILEGED_FEATURES,
        "--no-run",
        "--message-format=json",
    ]))?;
    let mut skipped = Vec::new();
    for artifact in artifacts.lines() {
        let (Some(executable), Some(manifest)) = (
            cmd::json_str(artifact, "executable"),
            cmd::json_str(artifact, "manifest_path"),
        ) else {
            continue;
        };
        // Only test harnesses: the binaries built for the CLI's own tests have no `--list`.
        let is_test_build = artifact
            .split_once("\"profile\":{")
            .and_then(|(_, profile)| profile.split_once('}'))
            .is_some_and(|(profile, _)| profile.contains("\"test\":true"));
        if !is_test_build {
            continue;
        }
        let folder = Path::new(manifest)
            .parent()
            .and_then(Path::file_name)
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_default();
        let listing =
            cmd::read(Command::new(executable).args(["--list", "--format=terse", "privileged::"]))?;
        skipped.extend(
            listing
                .lines()
                .filter_map(|line| line.strip_suffix(": test"))
                .map(|test| format!("{folder}: {test}")),
        );
    }
    skipped.sort();
    eprintln!(
        "xtask: SKIPPED {} privileged tests: {reason}:",
        skipped.len()
    );
    for name in skipped {
        eprintln!("  skipped: {name}");
    }
    Ok(())
}

/// Runs the tests that start every fixture and then panic, and checks that each of them
/// failed. `check_no_leftovers` then proves the fixtures cleaned up after the panic.
fn deliberate_failure() -> anyhow::Result<()> {
    let mut test = cargo();
    test.args([
        "test",
        "--workspace",
        "--locked",
        "--no-fail-fast",
        "--features",
        PRIVILEGED_FEATURES,
        "--test",
        "it",
        "--",
        DELIBERATE_FAILURE_TEST,
    ])
    .env(DELIBERATE_FAILURE, "1");
    eprintln!("$ {DELIBERATE_FAILURE}=1 {}", cmd::show(&test));
    let output = test
        .output()
        .context("cannot run the deliberately failing tests")?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    eprint!("{}", String::from_utf8_lossy(&output.stderr));
    eprint!("{stdout}");
    if output.status.success() {
        bail!("the deliberately failing tests passed: {DELIBERATE_FAILURE} was ignored");
    }
    for test in DELIBERATE_FAILURES {
        if !stdout.contains(&format!("test {test} ... FAILED")) {
            bail!("{test} did not fail as it should with {DELIBERATE_FAILURE}=1");
        }
    }
    eprintln!(
        "xtask: the {} deliberately failing tests failed, as they should",
        DELIBERATE_FAILURES.len()
    );
    Ok(())
}

/// The namespaces, processes and temp dirs that carry the fixtures' marks, one line each.
fn fixture_traces() -> anyhow::Result<BTreeSet<String>> {
    let mut traces = BTreeSet::new();
    if let Ok(netns) = cmd::read(Command::new("ip").args(["netns", "list"])) {
        traces.extend(
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
            traces.insert(format!("process {pid}: {}", cmdline.trim()));
        }
    }
    for entry in std::fs::read_dir(std::env::temp_dir())?.flatten() {
        let is_dir = entry.file_type().is_ok_and(|kind| kind.is_dir());
        if is_dir
            && entry
                .file_name()
                .to_string_lossy()
                .starts_with(FIXTURE_MARKER)
        {
            traces.insert(format!("temp dir {}", entry.path().display()));
        }
    }
    Ok(traces)
}

/// Fails when a namespace, bus, daemon or temp dir made by a test is still there: any trace
/// that was not there `before` the run (a developer's own sandbox is not the tests' fault), and
/// that no process still running owns (another test run on the same machine is not this one's).
fn check_no_leftovers(before: &BTreeSet<String>) -> anyhow::Result<()> {
    let processes = processes()?;
    let ancestors = ancestors_of_self(&processes);
    let (in_use, leftovers): (Vec<String>, Vec<String>) = fixture_traces()?
        .difference(before)
        .cloned()
        .partition(|trace| owned_by_a_running_process(trace, &processes, &ancestors));
    if !leftovers.is_empty() {
        bail!("the tests left these behind:\n  {}", leftovers.join("\n  "));
    }
    for (what, traces) in [
        (
            "were there before the run",
            before.iter().cloned().collect::<Vec<_>>(),
        ),
        ("belong to other processes still running", in_use),
    ] {
        if !traces.is_empty() {
            eprintln!(
                "xtask: note: not checked, as they {what}:\n  {}",
                traces.join("\n  ")
            );
        }
    }
    eprintln!("xtask: no namespace, bus, daemon or temp dir left behind");
    Ok(())
}

/// A process: its id, its parent's id and its command line.
struct Process {
    pid: u32,
    ppid: u32,
    cmdline: String,
}

/// Every process on the machine.
fn processes() -> anyhow::Result<Vec<Process>> {
    let mut processes = Vec::new();
    for entry in std::fs::read_dir("/proc")?.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|pid| pid.parse().ok()) else {
            continue;
        };
        let (Ok(stat), Ok(cmdline)) = (
            std::fs::read_to_string(entry.path().join("stat")),
            std::fs::read(entry.path().join("cmdline")),
        ) else {
            continue;
        };
        // `pid (comm) state ppid ...`: comm may hold anything, so split after its last `)`.
        let Some(ppid) = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|ppid| ppid.parse().ok())
        else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        processes.push(Process { pid, ppid, cmdline });
    }
    Ok(processes)
}

/// This process and its ancestors: where a dead test's orphans are reparented (init, or the
/// nearest subreaper above it, which is above us too).
fn ancestors_of_self(processes: &[Process]) -> BTreeSet<u32> {
    let mut ancestors = BTreeSet::from([1]);
    let mut pid = std::process::id();
    while ancestors.insert(pid) {
        match processes.iter().find(|process| process.pid == pid) {
            Some(process) => pid = process.ppid,
            None => break,
        }
    }
    ancestors
}

/// Whether a trace belongs to a process that still runs (and so not to this run's tests, which
/// have all exited): a namespace `nmx-<pid>-<n>` of a live pid, a marked process whose parent
/// is alive and no ancestor of ours (a live test process, not a reaper of orphans), or a temp
/// dir named on the command line of such a process.
fn owned_by_a_running_process(
    trace: &str,
    processes: &[Process],
    ancestors: &BTreeSet<u32>,
) -> bool {
    let alive = |pid: u32| processes.iter().any(|process| process.pid == pid);
    let owned_process = |process: &Process| {
        process.cmdline.contains(FIXTURE_MARKER)
            && !ancestors.contains(&process.ppid)
            && alive(process.ppid)
    };
    if let Some(name) = trace.strip_prefix("network namespace ") {
        let name = name.split_whitespace().next().unwrap_or_default();
        return name
            .strip_prefix(NETNS_PREFIX)
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse().ok())
            .is_some_and(alive);
    }
    if let Some(rest) = trace.strip_prefix("process ") {
        let pid = rest.split(':').next().and_then(|pid| pid.parse().ok());
        return processes
            .iter()
            .any(|process| Some(process.pid) == pid && owned_process(process));
    }
    if let Some(dir) = trace.strip_prefix("temp dir ") {
        return processes
            .iter()
            .any(|process| owned_process(process) && process.cmdline.contains(dir));
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_earlier_dry_runs_unpacked_crates_are_forgotten_and_nothing_else() {
        let base = std::env::temp_dir().join(format!("xtask-forget-{}", std::process::id()));
        let target = base.join("target");
        let home = base.join("cargo-home");
        let overlay = home.join("registry/src/-0123456789abcdef");
        let crates_io = home.join("registry/src/index.crates.io-1949cf8c6b5b557f");
        for dir in [
            target.join("package/tmp-registry"),
            overlay.join("netmirror-client-cache-0.1.0/src"),
            overlay.join("netmirror-platform-0.1.0"),
            overlay.join("netmirror-platform-0.2.0"),
            crates_io.join("zbus-6.0.0"),
        ] {
            std::fs::create_dir_all(dir).unwrap();
        }
        forget_earlier_packages(&target, Some(&home), "0.1.0").unwrap();
        assert!(!target.join("package").exists());
        assert!(!overlay.join("netmirror-client-cache-0.1.0").exists());
        assert!(!overlay.join("netmirror-platform-0.1.0").exists());
        // Another version and the downloaded dependencies stay.
        assert!(overlay.join("netmirror-platform-0.2.0").exists());
        assert!(crates_io.join("zbus-6.0.0").exists());
        // Nothing to forget is no error.
        forget_earlier_packages(&target, Some(&home), "0.1.0").unwrap();
        forget_earlier_packages(&target, None, "0.1.0").unwrap();
        std::fs::remove_dir_all(&base).unwrap();
    }
}
