//! netmirror's build and CI driver: `cargo xtask ci` runs every check and test that CI runs,
//! `cargo xtask tidy` checks the repository's own rules, `cargo xtask bench` runs the benchmarks,
//! `cargo xtask soak` runs netmirror's monitor under kernel churn for a long time.
//!
//! It is a plain binary with few dependencies, since every contributor compiles it.

mod bench;
mod ci;
mod cmd;
mod dbus_examples;
mod deb;
mod examples;
mod soak;
mod symbol_order;
mod system;
mod tidy;

use std::path::PathBuf;

const USAGE: &str = "\
usage: cargo xtask <command> [options]

commands:
  ci [--no-privileged]   fmt, clippy, every test (the client cache in fatal mode, privileged
                         tests in throwaway namespaces when root), benches compiled, tidy,
                         examples, fuzz targets, docs of every feature set, man page,
                         Debian package, `cargo publish --dry-run` of every crate, the
                         outside crate against the packages; warnings are errors
  tidy                   `//!` headers on every .rs file, the crate layering of DESIGN.md
  setup                  install (as root) or name (otherwise) the system packages tests need,
                         and install cargo-fuzz when missing
  bench [--quick] [ARGS] criterion benches of every crate, then the side-by-side comparisons
  examples               build the examples, run dedup-index's and client-cache's (against a
                         private bus); as root the kernel ones in a throwaway network namespace
                         and the NetworkManager one (a step of `ci`)
  man [DIR]              write the manual page (`netmirror.1`) and the shell completions into
                         DIR (default target/assets), as the Debian package ships them
  deb                    build the Debian package from cli/Cargo.toml's cargo-deb metadata with
                         dpkg-deb (debug CLI) and check it with `dpkg-deb --info`/`--contents`
                         (a step of `ci`)
  soak [--minutes N] [--dev]
                         (root, not in CI) N minutes (default 30) of kernel churn with
                         `netmirror monitor` running: its RSS over time, its final state
                         checked against `ip -j`
  symbol-order           (root, needs valgrind) write cli/symbol-order.txt, the functions
                         `route show`, `addr`, `link` and `rule` run, which the release
                         binary's linker puts first (see cli/build.rs)
";

fn main() -> std::process::ExitCode {
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            // With `RUST_BACKTRACE` set, `{e:?}` ends in the error's backtrace: the causes
            // are said again last, where a log's tail shows them.
            eprintln!("Error: {e:?}");
            eprintln!("xtask: failed: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run() -> anyhow::Result<()> {
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
        "man" => assets(&root, rest, cmd::cargo),
        "deb" => {
            // The debug CLI (built by `man`'s run of it), its assets, then the package.
            let target = std::env::var_os("CARGO_TARGET_DIR")
                .map_or_else(|| root.join("target"), PathBuf::from);
            let assets_dir = target.join("assets");
            assets(&root, &[assets_dir.display().to_string()], cmd::cargo)?;
            deb::run(&root, &target, &assets_dir, &ci::crate_version(&root)?)
        }
        "soak" => soak::run(rest),
        "symbol-order" => symbol_order::run(&root),
        "examples" => {
            let target = std::env::var_os("CARGO_TARGET_DIR")
                .map_or_else(|| root.join("target"), PathBuf::from);
            examples::run(cmd::cargo(), &target, system::is_root())
        }
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

/// `cargo xtask man [DIR]`: the manual page and completion scripts, rendered by the CLI itself
/// (`netmirror man`, `netmirror completions SHELL`) so they always match its arguments.
/// `cargo` makes the cargo command to run the CLI with (CI's, with its own target folder, or the
/// plain one).
fn assets(
    root: &std::path::Path,
    args: &[String],
    cargo: impl Fn() -> std::process::Command,
) -> anyhow::Result<()> {
    let dir = match args {
        [] => root.join("target/assets"),
        [dir] => PathBuf::from(dir),
        _ => anyhow::bail!("usage: cargo xtask man [DIR]"),
    };
    std::fs::create_dir_all(&dir)?;
    let netmirror = |args: &[&str]| {
        let mut cargo = cargo();
        cargo.args(["run", "--quiet", "--locked", "--package", "netmirror", "--"]);
        cargo.args(args);
        cmd::read(&mut cargo)
    };
    let page = netmirror(&["man"])?;
    if !page.contains(".TH netmirror 1") {
        anyhow::bail!("`netmirror man` printed no manual page");
    }
    std::fs::write(dir.join("netmirror.1"), page)?;
    for (shell, file) in [
        ("bash", "netmirror.bash"),
        ("zsh", "_netmirror"),
        ("fish", "netmirror.fish"),
    ] {
        std::fs::write(dir.join(file), netmirror(&["completions", shell])?)?;
    }
    eprintln!("xtask: manual page and completions in {}", dir.display());
    Ok(())
}

fn project_root() -> PathBuf {
    let manifest_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest_dir
        .parent()
        .expect("xtask lives one level below the root")
        .to_path_buf()
}
