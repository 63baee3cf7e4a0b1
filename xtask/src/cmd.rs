//! Running child commands with their command line echoed, so a CI log reads like a script.

use std::process::Command;
use std::time::Instant;

use anyhow::{Context, bail};

/// Runs `cmd`, echoing it first and its duration after; fails when it exits non-zero.
pub(crate) fn run(cmd: &mut Command) -> anyhow::Result<()> {
    let shown = show(cmd);
    eprintln!("$ {shown}");
    let started = Instant::now();
    let status = cmd
        .status()
        .with_context(|| format!("cannot start `{shown}`"))?;
    eprintln!("  ({:.1} s)", started.elapsed().as_secs_f64());
    if !status.success() {
        bail!("`{shown}` failed: {status}");
    }
    Ok(())
}

/// Runs `cmd` and returns its standard output; fails when it exits non-zero.
pub(crate) fn read(cmd: &mut Command) -> anyhow::Result<String> {
    let shown = show(cmd);
    let out = cmd
        .output()
        .with_context(|| format!("cannot start `{shown}`"))?;
    if !out.status.success() {
        bail!(
            "`{shown}` failed: {}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The command line of `cmd`, as a shell would show it.
pub(crate) fn show(cmd: &Command) -> String {
    let mut parts = vec![cmd.get_program().to_string_lossy().into_owned()];
    parts.extend(cmd.get_args().map(|arg| arg.to_string_lossy().into_owned()));
    parts.join(" ")
}

/// The cargo running this xtask (`$CARGO`), or `cargo` from `PATH`.
pub(crate) fn cargo() -> Command {
    Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
}

/// The string value of the first `"key":"..."` in a line of cargo's JSON messages (paths and
/// names here hold no quotes or backslashes to unescape).
pub(crate) fn json_str<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let (_, rest) = line.split_once(&format!("\"{key}\":\""))?;
    rest.split('"').next()
}
