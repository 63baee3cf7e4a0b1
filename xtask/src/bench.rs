//! `cargo xtask bench`: the criterion benches of every crate. The side-by-side comparisons
//! against `nmcli` and `ip` join here as the crates gain what they measure.

use std::path::Path;
use std::process::Command;

use crate::cmd;

pub(crate) fn run(_root: &Path, args: &[String]) -> anyhow::Result<()> {
    let quick = args.iter().any(|arg| arg == "--quick");
    let mut bench = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    bench.args(["bench", "--workspace", "--"]);
    if quick {
        bench.args(["--warm-up-time", "1", "--measurement-time", "2"]);
    }
    bench.args(args.iter().filter(|arg| *arg != "--quick"));
    cmd::run(&mut bench)
}
