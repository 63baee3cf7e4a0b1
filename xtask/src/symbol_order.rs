//! `cargo xtask symbol-order`: writes `cli/symbol-order.txt`, the functions of the release
//! `netmirror` that `route show` (IPv4, IPv6, both, JSON, terse), `addr`, `link` and `rule`
//! run, as callgrind sees them on a throwaway namespace with a few hundred routes of each
//! family, then those of the `nm` lists and the overview against NetworkManager sandboxed on a
//! private bus (client-cache's `ci_bus nm`) with a few profiles. `cli/build.rs` has the linker put them first in the binary's code, so those
//! commands map fewer code pages (see there). The same functions of the build `cargo bench`
//! makes follow under their names there. Run it as root after a change of the toolchain, of
//! dependencies, or of what those commands call; it needs `valgrind` and `nm`.

use std::collections::HashSet;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{Context, bail};

use crate::cmd;
use crate::dbus_examples::Running;
use crate::examples::Netns;

/// Where the list goes, in the CLI's crate (it is part of its package).
const OUT: &str = "cli/symbol-order.txt";

/// The comment line before the names of the bench build's functions in [`OUT`].
const BENCH_NAMES: &str = "# The same functions in the build `cargo xtask bench` measures:";

/// The commands whose functions are listed, in this order (`route show`'s first: it prints
/// the most).
const COMMANDS: &[&[&str]] = &[
    &["route", "show", "-6"],
    &["route", "show", "-4"],
    &["route", "show"],
    &["--json", "route", "show"],
    &["-t", "route", "show"],
    &["addr"],
    &["link"],
    &["rule"],
];

/// The NetworkManager commands whose functions follow (bench scenario 1's, then the other
/// lists), run against the daemon sandboxed on a private bus (client-cache's `ci_bus nm`) with
/// a few profiles of several types, one of them active.
const NM_COMMANDS: &[&[&str]] = &[
    &["-t", "nm", "device"],
    &["-t", "nm", "connection"],
    &[],
    &["nm", "active"],
    &["nm", "device"],
    &["nm", "connection"],
    &["--json", "nm", "connection"],
];

/// The profiles `nmcli connection add` makes for [`NM_COMMANDS`]; the first is activated.
const NM_PROFILES: &[&[&str]] = &[
    &[
        "type",
        "ethernet",
        "ifname",
        "nmxo0",
        "con-name",
        "order-eth",
        "ipv4.method",
        "manual",
        "ipv4.addresses",
        "192.0.2.1/24",
        "ipv6.method",
        "disabled",
    ],
    &[
        "type",
        "bridge",
        "ifname",
        "nmxobr",
        "con-name",
        "order-bridge",
    ],
    &[
        "type",
        "vlan",
        "dev",
        "nmxo0",
        "id",
        "7",
        "con-name",
        "order-vlan",
    ],
];

pub(crate) fn run(root: &Path) -> anyhow::Result<()> {
    if !crate::system::is_root() {
        bail!("symbol-order needs root (it makes a throwaway network namespace)");
    }
    cmd::run(cmd::cargo().args(["build", "--release", "-p", "netmirror"]))?;
    let binary = root.join("target/release/netmirror");
    let netns = Netns::add("order")?;
    fill(&netns.0)?;
    let dir = std::env::temp_dir().join(format!("netmirror-order-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let mut order = Vec::new();
    let mut seen = HashSet::new();
    // Runs `netmirror ARGS` under callgrind (`setup` adds its namespace or bus) and appends the
    // functions it names that no earlier run named.
    let mut trace = |name: String, args: &[&str], setup: &dyn Fn(&mut Command)| {
        let out = dir.join(name);
        let mut valgrind = Command::new("valgrind");
        valgrind
            .args(["--tool=callgrind", "--demangle=no"])
            .arg(format!("--callgrind-out-file={}", out.display()))
            .arg(&binary)
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        setup(&mut valgrind);
        valgrind.args(args);
        cmd::run(&mut valgrind)?;
        let text = std::fs::read_to_string(&out)?;
        for name in functions(&text) {
            if seen.insert(name.to_owned()) {
                order.push(name.to_owned());
            }
        }
        anyhow::Ok(())
    };
    for (n, args) in COMMANDS.iter().enumerate() {
        trace(format!("callgrind.{n}"), args, &|valgrind: &mut Command| {
            valgrind.args(["--netns", &netns.0]);
        })?;
    }
    drop(netns);
    let (daemon, address) = network_manager(root).context("the NetworkManager sandbox")?;
    for (n, args) in NM_COMMANDS.iter().enumerate() {
        trace(
            format!("callgrind.nm.{n}"),
            args,
            &|valgrind: &mut Command| {
                valgrind.env("DBUS_SYSTEM_BUS_ADDRESS", &address);
            },
        )?;
    }
    drop(daemon);
    let _ = std::fs::remove_dir_all(&dir);
    // Only the binary's own functions (callgrind also names the C library's).
    let symbols = code_symbols(&binary)?;
    let listed: Vec<&String> = order
        .iter()
        .filter(|name| symbols.contains(*name))
        .collect();
    if listed.is_empty() {
        bail!("callgrind named none of the binary's functions");
    }
    // The build of the same code that `cargo xtask bench` measures (bench profile, crate
    // features of the dev-dependencies on) names the functions of the workspace's crates and
    // dependencies with other hashes (cargo's metadata covers the profile and the features):
    // the same functions under those names, listed after.
    cmd::run(cmd::cargo().args(["bench", "--no-run", "-p", "netmirror", "--bench", "compare"]))?;
    let mut by_stem: std::collections::HashMap<&str, Vec<&str>> = Default::default();
    let bench_symbols = code_symbols(&binary)?;
    for name in &bench_symbols {
        if let Some(stem) = legacy_stem(name) {
            by_stem.entry(stem).or_default().push(name);
        }
    }
    let mut bench_names = Vec::new();
    for name in &listed {
        let Some(stem) = legacy_stem(name) else {
            continue;
        };
        for other in by_stem.get(stem).into_iter().flatten() {
            if !symbols.contains(*other) && seen.insert((*other).to_owned()) {
                bench_names.push((*other).to_owned());
            }
        }
    }
    let list = render(&listed, &bench_names);
    std::fs::write(root.join(OUT), list).with_context(|| format!("cannot write {OUT}"))?;
    eprintln!(
        "xtask: {OUT}: {} functions, and {} names of the bench build's",
        listed.len(),
        bench_names.len()
    );
    Ok(())
}

/// The text of [`OUT`]: a header, the release build's functions (`listed`), then
/// [`BENCH_NAMES`] and the bench build's names of the same functions.
fn render(listed: &[&String], bench_names: &[String]) -> String {
    let mut list = String::from(
        "# The functions `route show`, `addr`, `link`, `rule` and the `nm` lists run, which\n\
         # cli/build.rs has the linker put first in the release binary's code. Written by\n\
         # `cargo xtask symbol-order` (as root): run it again after a change of the toolchain,\n\
         # of dependencies, or of what those commands call.\n",
    );
    for name in listed {
        let _ = writeln!(list, "{name}");
    }
    let _ = writeln!(list, "{BENCH_NAMES}");
    for name in bench_names {
        let _ = writeln!(list, "{name}");
    }
    list
}

/// The bench build's names in the text of [`OUT`] ([`render`]): the lines after
/// [`BENCH_NAMES`], comments left out.
fn bench_names(text: &str) -> Vec<&str> {
    text.lines()
        .skip_while(|line| *line != BENCH_NAMES)
        .filter(|line| !line.starts_with('#'))
        .collect()
}

/// How many of the bench build's functions in [`OUT`] `binary` (the `netmirror` that
/// `cargo xtask bench` measures) still defines, and how many [`OUT`] names: the order goes
/// stale as the code changes, and then `route show` maps code pages all over the binary again.
pub(crate) fn coverage(root: &Path, binary: &Path) -> anyhow::Result<(usize, usize)> {
    let text =
        std::fs::read_to_string(root.join(OUT)).with_context(|| format!("cannot read {OUT}"))?;
    let names = bench_names(&text);
    let symbols = code_symbols(binary)?;
    let found = names.iter().filter(|name| symbols.contains(**name)).count();
    Ok((found, names.len()))
}

/// Whether an order of which the binary defines `found` of `listed` functions is stale: fewer
/// than 90 % (an order written for the same code has them all).
pub(crate) fn is_stale(found: usize, listed: usize) -> bool {
    found * 10 < listed * 9
}

/// Starts NetworkManager on a private bus (`ci_bus nm`, stopped when the returned process is
/// dropped) and gives it a veth pair and [`NM_PROFILES`] (the first activated); returns the
/// process and the bus address.
fn network_manager(root: &Path) -> anyhow::Result<(Running, String)> {
    cmd::run(cmd::cargo().args([
        "build",
        "-p",
        "netmirror-client-cache",
        "--example",
        "ci_bus",
    ]))?;
    let ci_bus = root.join("target/debug/examples/ci_bus");
    let mut bus = Running::start("ci_bus", Command::new(ci_bus).arg("nm"))?;
    let address = bus.line()?;
    bus.command("veth nmxo0")?;
    let nmcli = |args: &[&str]| {
        cmd::read(
            Command::new("nmcli")
                .args(args)
                .env("DBUS_SYSTEM_BUS_ADDRESS", &address),
        )
    };
    for profile in NM_PROFILES {
        nmcli(&[&["connection", "add"], *profile].concat())?;
    }
    nmcli(&["--wait", "30", "connection", "up", "order-eth"])?;
    Ok((bus, address))
}

/// The names of the functions `binary` defines.
fn code_symbols(binary: &Path) -> anyhow::Result<HashSet<String>> {
    let symbols = cmd::read(Command::new("nm").arg("--defined-only").arg(binary))?;
    Ok(symbols
        .lines()
        .filter_map(
            |line| match line.split_whitespace().collect::<Vec<_>>()[..] {
                [_, kind, name] if kind.eq_ignore_ascii_case("t") => Some(name.to_owned()),
                _ => None,
            },
        )
        .collect())
}

/// A legacy-mangled name without its hash (`_ZN...17h<16 hex digits>E`), which differs
/// between profiles; `None` for other names (v0-mangled ones: the standard library's, the
/// same in every profile).
fn legacy_stem(name: &str) -> Option<&str> {
    let body = name.strip_prefix("_ZN")?.strip_suffix('E')?;
    let (stem, hash) = body.split_at_checked(body.len().checked_sub(19)?)?;
    let hex = hash.strip_prefix("17h")?;
    hex.bytes()
        .all(|byte| byte.is_ascii_hexdigit())
        .then_some(stem)
}

/// Fills `netns` as scenario 2 of the comparisons does, on a smaller scale: a veth pair,
/// 250 IPv4 routes `via 192.0.2.2` and 250 IPv6 ones `via 2001:db8::2`.
fn fill(netns: &str) -> anyhow::Result<()> {
    let mut batch = String::from(
        "link add veth0 type veth peer name veth1\n\
         addr add 192.0.2.1/24 dev veth0\n\
         addr add 2001:db8::1/64 dev veth0 nodad\n\
         link set lo up\n\
         link set veth0 up\n\
         link set veth1 up\n",
    );
    for idx in 0..250 {
        let _ = writeln!(batch, "route add 16.0.{idx}.0/24 via 192.0.2.2");
        let _ = writeln!(batch, "route add 2a00:0:{idx:x}::/48 via 2001:db8::2");
    }
    let mut ip = Command::new("ip")
        .args(["-n", netns, "-batch", "-"])
        .stdin(Stdio::piped())
        .spawn()
        .context("cannot start `ip -batch`")?;
    ip.stdin
        .take()
        .context("no stdin")?
        .write_all(batch.as_bytes())?;
    let status = ip.wait()?;
    if !status.success() {
        bail!("`ip -n {netns} -batch -` failed: {status}");
    }
    Ok(())
}

/// The names callgrind gives the functions it saw, in the order it first names them (a
/// name comes once, in an `fn=(N) NAME` or `cfn=(N) NAME` line; later lines have the
/// number only); without the `'N` it adds to a recursive call's name.
fn functions(callgrind: &str) -> impl Iterator<Item = &str> {
    callgrind.lines().filter_map(|line| {
        let rest = line
            .strip_prefix("fn=(")
            .or_else(|| line.strip_prefix("cfn=("))?;
        let (_, name) = rest.split_once(") ")?;
        Some(name.split('\'').next().unwrap_or(name))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bench_names_are_read_back_from_what_render_writes() {
        let (a, b) = (
            "_ZN4main17h0000000000000001E".to_owned(),
            "_ZN2io4read".to_owned(),
        );
        let text = render(&[&a, &b], &["_ZN4main17h0000000000000002E".to_owned()]);
        assert_eq!(bench_names(&text), ["_ZN4main17h0000000000000002E"]);
        // A file written before the marker existed has no bench names to check.
        assert!(bench_names("# old header\n_ZN4main17h0000000000000001E\n").is_empty());
    }

    #[test]
    fn an_order_is_stale_below_nine_tenths() {
        assert!(!is_stale(1705, 1705));
        assert!(!is_stale(90, 100));
        assert!(is_stale(89, 100));
        assert!(is_stale(0, 10));
    }
}
