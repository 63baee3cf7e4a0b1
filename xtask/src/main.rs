//! netmirror's build and CI driver: `cargo xtask ci` runs every check and test that CI runs,
//! `cargo xtask tidy` checks the repository's own rules, `cargo xtask bench` runs the benchmarks,
//! `cargo xtask soak` runs netmirror's monitor under kernel churn for a long time.
//!
//! It is a plain binary with few dependencies, since every contributor compiles it.

mod bench;
mod ci;
mod cmd;
mod soak;
mod system;
mod tidy;

use std::path::PathBuf;

const USAGE: &str = "\
usage: cargo xtask <command> [options]

commands:
  ci [--no-privileged]   fmt, clippy, every test (the client cache in fatal mode, privileged
                         tests in throwaway namespaces when root), benches compiled, docs,
                         tidy, `cargo package` for each library crate; warnings are errors
  tidy                   `//!` headers on every .rs file, the crate layering of DESIGN.md
  setup                  install (as root) or name (otherwise) the system packages tests need,
                         and install cargo-fuzz when missing
  bench [--quick] [ARGS] criterion benches of every crate, then the side-by-side comparisons
  soak [--minutes N] [--dev]
                         (root, not in CI) N minutes (default 30) of kernel churn with
                         `netmirror monitor` running: its RSS over time, its final state
                         checked against `ip -j`
";

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let root = project_root();
    std::env::set_current_dir(&root)?;
    let Some((command, rest)) = args.split_first() else {
        eprint!("{USAGE}");
        std::process::exit(2);
    };
    match command.as_str() {
        "ci" => ci::run(&root, rest),
        "tidy" => tidy::run(&root),
        "setup" => system::ensure_packages().and_then(|()| system::ensure_cargo_fuzz()),
        "bench" => bench::run(&root, rest),
        "soak" => soak::run(rest),
        "-h" | "--help" | "help" => {
            eprint!("{USAGE}");
            Ok(())
        }
        other => {
            eprint!("unknown command `{other}`\n\n{USAGE}");
            std::process::exit(2);
        }
    }
}

fn project_root() -> PathBuf {
    let manifest_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest_dir
        .parent()
        .expect("xtask lives one level below the root")
        .to_path_buf()
}
