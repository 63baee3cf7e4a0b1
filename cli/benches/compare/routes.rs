//! Scenarios 2, 3 and 5: routing tables of 100k to 1M routes in throwaway namespaces, read with
//! `netmirror route show|count` and `ip route show`, loaded against the raw dump floor (see
//! [`super::floor`]), filtered to one table, and programmed with `netmirror batch` and
//! `ip -batch`. Scenario 2 also loads multipath routes with weights and metrics.
//!
//! Routes go via a gateway on the subnet of one end of a veth pair (`via 192.0.2.2`,
//! `via 2001:db8::2`), so they look like a routing daemon's; nothing is ever sent: no process
//! in the namespace opens a socket, and the pair's other end is in the same namespace. Tables are filled with `ip -batch`.

use std::fs::File;
use std::io::{BufWriter, Write as _};
use std::net::Ipv4Addr;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{Context, bail};
use netmirror_platform::testing::{NetNs, Veth};

use super::floor;
use super::measure::{Cmd, Figures};
use super::report::{Comparison, Outcome, Section};
use crate::{Ctx, progress};

pub(crate) const TITLE_LOAD: &str =
    "2. Loading a routing table: `netmirror route show|count` vs `ip route show`";
pub(crate) const TITLE_FILTER: &str = "3. A filtered query: 1k routes of table 100 vs a full load";
pub(crate) const TITLE_BATCH: &str = "5. Programming routes: `netmirror batch` vs `ip -batch`";

/// First destination of each set of routes, so the sets never overlap.
const MAIN_V4_BASE: Ipv4Addr = Ipv4Addr::new(16, 0, 0, 0);
const TABLE100_BASE: Ipv4Addr = Ipv4Addr::new(48, 0, 0, 0);
const BATCH_BASE: Ipv4Addr = Ipv4Addr::new(64, 0, 0, 0);
pub(crate) const MONITOR_BASE: Ipv4Addr = Ipv4Addr::new(80, 0, 0, 0);
/// Routes in table 100 in scenario 3.
const TABLE100_ROUTES: usize = 1_000;
/// The table `batch` programs in scenario 5.
const BATCH_TABLE: u32 = 200;

/// A namespace with `veth0` (192.0.2.1/24, 2001:db8::1/64) and its peer `veth1`, up. The
/// gateways 192.0.2.2 and 2001:db8::2 are on-link through `veth0` and nobody's address.
pub(crate) fn route_ns() -> anyhow::Result<NetNs> {
    NetNs::builder()
        .veth(
            Veth::new("veth0", "veth1")
                .address("192.0.2.1/24")
                .address("2001:db8::1/64"),
        )
        .start()
        .context("cannot make a network namespace")
}

/// The `idx`-th /24 from `base`.
fn v4_prefix(base: Ipv4Addr, idx: usize) -> String {
    let addr = u32::from(base).wrapping_add((idx as u32) << 8);
    format!("{}/24", Ipv4Addr::from(addr))
}

/// The `idx`-th /48 of 2a00::/16 (well within what 100k needs).
fn v6_prefix(idx: usize) -> String {
    format!("2a00:{:x}:{:x}::/48", idx >> 16, idx & 0xffff)
}

/// Writes `ip -batch` lines `route VERB PREFIX via GW [table T]` for `range` to `path`.
pub(crate) fn write_v4_batch(
    path: &Path,
    verb: &str,
    base: Ipv4Addr,
    range: std::ops::Range<usize>,
    table: Option<u32>,
) -> anyhow::Result<()> {
    let mut out = BufWriter::new(File::create(path)?);
    let table = table.map(|t| format!(" table {t}")).unwrap_or_default();
    for idx in range {
        writeln!(
            out,
            "route {verb} {} via 192.0.2.2{table}",
            v4_prefix(base, idx)
        )?;
    }
    out.flush()?;
    Ok(())
}

fn write_v6_batch(path: &Path, range: std::ops::Range<usize>) -> anyhow::Result<()> {
    let mut out = BufWriter::new(File::create(path)?);
    for idx in range {
        writeln!(out, "route add {} via 2001:db8::2", v6_prefix(idx))?;
    }
    out.flush()?;
    Ok(())
}

/// Runs `ip -n NS -batch PATH`; returns how long it took.
pub(crate) fn ip_batch(ns: &NetNs, path: &Path) -> anyhow::Result<f64> {
    let started = Instant::now();
    run_quiet(
        Command::new("ip")
            .args(["-n", ns.name(), "-batch"])
            .arg(path),
    )?;
    Ok(started.elapsed().as_secs_f64())
}

/// Runs a command to completion; fails with its stderr.
pub(crate) fn run_quiet(command: &mut Command) -> anyhow::Result<String> {
    let out = command
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("cannot start {command:?}"))?;
    if !out.status.success() {
        bail!(
            "{command:?} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The number of lines `cmd` prints (one unmeasured run), or why not.
fn line_count(cmd: &Cmd) -> String {
    match cmd.output() {
        Ok((true, stdout, _)) => stdout.lines().count().to_string(),
        Ok((false, _, stderr)) => format!("fails: {}", super::measure::last_lines(&stderr, 1)),
        Err(err) => format!("{err:#}"),
    }
}

/// `ip -n NS ARGS`.
fn ip(ns: &NetNs, label_args: &str, args: &[&str]) -> Cmd {
    let mut all = vec!["-n", ns.name()];
    all.extend_from_slice(args);
    Cmd::new(&format!("ip {label_args}"), "ip", &all)
}

/// `netmirror --netns NS ARGS`, labelled without the namespace.
fn ours(ctx: &Ctx, ns: &NetNs, args: &[&str]) -> Cmd {
    let mut cmd = ctx.netmirror(args);
    cmd.args
        .splice(0..0, ["--netns".to_owned(), ns.name().to_owned()]);
    cmd
}

fn no_setup() -> anyhow::Result<()> {
    Ok(())
}

/// Bytes per route held by `route count`: its peak RSS over that of the same command in an
/// (almost) empty namespace, divided by the routes added.
fn bytes_per_route(count: &Comparison, baseline_mib: Option<f64>, n_routes: usize) -> String {
    match (&count.netmirror, baseline_mib) {
        (Outcome::Measured(figures), Some(baseline)) => {
            let delta = (figures.rss_mib.median - baseline) * 1024.0 * 1024.0;
            format!(
                "{:.0} bytes/route (peak RSS {:.1} MiB − {:.1} MiB empty, / {n_routes})",
                delta / n_routes as f64,
                figures.rss_mib.median,
                baseline
            )
        }
        (Outcome::Missing { why, .. }, _) => why.clone(),
        (_, None) => "no baseline (route count failed in an empty namespace)".to_owned(),
    }
}

/// What `netmirror route count` itself says (its lines mentioning bytes or routes).
fn count_says(ctx: &Ctx, ns: &NetNs) -> Option<String> {
    let (ok, stdout, _) = ours(ctx, ns, &["route", "count"]).output().ok()?;
    ok.then(|| {
        stdout
            .lines()
            .filter(|line| !line.trim().is_empty())
            .take(8)
            .map(str::trim)
            .collect::<Vec<_>>()
            .join(" ⏎ ")
    })
}

/// Peak RSS (MiB, median of 3) of `netmirror route count` in this namespace.
/// `netmirror route count` against `ip_show` in `ns` (`size` routes): the comparison, the
/// cache's memory per route from the RSS delta over `baseline`, and what `route count` says.
fn count_rows(
    ctx: &Ctx,
    load: &mut Section,
    ns: &NetNs,
    ip_show: &Cmd,
    case: &dyn Fn(&str) -> String,
    baseline: Option<f64>,
    size: usize,
) {
    let count = ours(ctx, ns, &["route", "count"]);
    let count_cmp = ctx.compare(&case("count"), &count, ip_show, no_setup);
    load.headline(
        case("cache memory (RSS delta)"),
        bytes_per_route(&count_cmp, baseline, size),
    );
    if let Some(says) = count_says(ctx, ns) {
        if let Some(memory) = says.split(" ⏎ ").find(|line| line.contains("bytes")) {
            load.headline(case("`route count` says"), memory.to_owned());
        }
        load.fact(case("`route count` prints"), says);
    }
    load.comparisons.push(count_cmp);
}

fn count_baseline(ctx: &Ctx, ns: &NetNs) -> Option<f64> {
    let cmd = ours(ctx, ns, &["route", "count"]);
    let samples: Vec<_> = (0..3).filter_map(|_| cmd.measure().ok()).collect();
    (!samples.is_empty()).then(|| Figures::of(&cmd.label, &samples).rss_mib.median)
}

/// Scenario 2 (and 3, at its size, when `with_filter`).
pub(crate) fn run_load(ctx: &Ctx, with_filter: bool) -> Vec<Section> {
    let mut load = Section::new(TITLE_LOAD);
    load.setup(floor::SETUP);
    let mut filter = with_filter.then(|| Section::new(TITLE_FILTER));
    if let Err(err) = load_v4(ctx, &mut load, filter.as_mut()) {
        load.fact("IPv4 setup", format!("failed: {err:#}"));
    }
    if let Err(err) = load_v6(ctx, &mut load) {
        load.fact("IPv6 setup", format!("failed: {err:#}"));
    }
    if let Err(err) = load_multipath(ctx, &mut load) {
        load.fact("multipath setup", format!("failed: {err:#}"));
    }
    let mut sections = vec![load];
    if let Some(filter) = filter {
        sections.push(filter);
    }
    sections
}

fn load_v4(ctx: &Ctx, load: &mut Section, mut filter: Option<&mut Section>) -> anyhow::Result<()> {
    let ns = route_ns()?;
    load.setup(format!(
        "IPv4: a throwaway namespace with a veth pair; /24 routes from {MAIN_V4_BASE} \
         `via 192.0.2.2` in the main table, added with `ip -batch` in steps to {:?}",
        ctx.plan.v4_sizes
    ));
    load.setup(
        "`ip route show` prints the IPv4 main table; `netmirror route show -4` asks for the \
         same (main table, IPv4). `netmirror route count` loads every table of both families \
         into the cache and prints counts."
            .to_owned(),
    );
    let baseline = count_baseline(ctx, &ns);
    let mut filled = 0;
    for &size in &ctx.plan.v4_sizes {
        let file = ctx.scratch_file("v4.batch");
        write_v4_batch(&file, "add", MAIN_V4_BASE, filled..size, None)?;
        progress(&format!("filling to {size} IPv4 routes"));
        let took = ip_batch(&ns, &file)?;
        std::fs::remove_file(&file)?;
        load.fact(
            format!("{size} IPv4: fill"),
            format!("`ip -batch` added {} routes in {took:.1} s", size - filled),
        );
        filled = size;
        let case = |what: &str| format!("{} IPv4 {what}", human(size));
        let show = ours(ctx, &ns, &["route", "show", "-4"]);
        let ip_show = ip(&ns, "route show", &["route", "show"]);
        load.fact(
            case("output lines"),
            format!(
                "`{}`: {}; `{}`: {}",
                show.label,
                line_count(&show),
                ip_show.label,
                line_count(&ip_show)
            ),
        );
        load.comparisons
            .push(ctx.compare(&case("show"), &show, &ip_show, no_setup));
        let json = ours(ctx, &ns, &["--json", "route", "show", "-4"]);
        let ip_json = ip(&ns, "-j route show", &["-j", "route", "show"]);
        load.comparisons
            .push(ctx.compare(&case("show --json"), &json, &ip_json, no_setup));
        count_rows(ctx, load, &ns, &ip_show, &case, baseline, size);
        let (floor_cmp, floor_says) = floor::compare(
            ctx,
            ns.name(),
            &format!("{} IPv4", human(size)),
            size >= 600_000,
        );
        load.headline(case("load / raw dump floor"), floor_says);
        load.comparisons.push(floor_cmp);
        if size == ctx.plan.filter_main_routes
            && let Some(filter) = filter.take()
        {
            run_filter(ctx, &ns, size, filter)?;
        }
    }
    if let Some(filter) = filter {
        // The plan's sizes skipped the filter's size: a namespace of its own.
        drop(ns);
        filter_in_new_ns(ctx, filter)?;
    }
    Ok(())
}

fn load_v6(ctx: &Ctx, load: &mut Section) -> anyhow::Result<()> {
    let ns = route_ns()?;
    let baseline = count_baseline(ctx, &ns);
    let size = ctx.plan.v6_routes;
    let file = ctx.scratch_file("v6.batch");
    write_v6_batch(&file, 0..size)?;
    progress(&format!("filling {size} IPv6 routes"));
    let took = ip_batch(&ns, &file)?;
    std::fs::remove_file(&file)?;
    load.setup(format!(
        "IPv6: another namespace, {size} /48 routes of 2a00::/16 `via 2001:db8::2`; \
         `ip -6 route show` against `netmirror route show -6`"
    ));
    let case = |what: &str| format!("{} IPv6 {what}", human(size));
    load.fact(
        case("fill"),
        format!("`ip -batch` added {size} routes in {took:.1} s"),
    );
    let show = ours(ctx, &ns, &["route", "show", "-6"]);
    let ip_show = ip(&ns, "-6 route show", &["-6", "route", "show"]);
    load.fact(
        case("output lines"),
        format!(
            "`{}`: {}; `{}`: {}",
            show.label,
            line_count(&show),
            ip_show.label,
            line_count(&ip_show)
        ),
    );
    load.comparisons
        .push(ctx.compare(&case("show"), &show, &ip_show, no_setup));
    let json = ours(ctx, &ns, &["--json", "route", "show", "-6"]);
    let ip_json = ip(&ns, "-6 -j route show", &["-6", "-j", "route", "show"]);
    load.comparisons
        .push(ctx.compare(&case("show --json"), &json, &ip_json, no_setup));
    count_rows(ctx, load, &ns, &ip_show, &case, baseline, size);
    let (floor_cmp, floor_says) =
        floor::compare(ctx, ns.name(), &format!("{} IPv6", human(size)), false);
    load.headline(case("load / raw dump floor"), floor_says);
    load.comparisons.push(floor_cmp);
    Ok(())
}

/// A namespace with two veth pairs: `veth0` (192.0.2.1/24) and `veth2` (198.51.100.1/24),
/// with their peers `veth1` and `veth3`, up. The gateways 192.0.2.2 and 198.51.100.2 are
/// on-link and nobody's address.
fn multipath_ns() -> anyhow::Result<NetNs> {
    NetNs::builder()
        .veth(Veth::new("veth0", "veth1").address("192.0.2.1/24"))
        .veth(Veth::new("veth2", "veth3").address("198.51.100.1/24"))
        .start()
        .context("cannot make a network namespace")
}

/// The attributes of every multipath route, after its prefix (metrics go before the hops:
/// `ip` reads everything after the first `nexthop` as hops).
const MULTIPATH_ROUTE: &str = "mtu lock 1400 advmss 1360 initcwnd 10 \
     nexthop via 192.0.2.2 dev veth0 weight 1 nexthop via 198.51.100.2 dev veth2 weight 3";

/// Multipath routes with weights and metrics: their bytes per route in the cache, and `route
/// show` against `ip route show`.
fn load_multipath(ctx: &Ctx, load: &mut Section) -> anyhow::Result<()> {
    let ns = multipath_ns()?;
    let size = ctx.plan.multipath_routes;
    let baseline = count_baseline(ctx, &ns);
    let file = ctx.scratch_file("multipath.batch");
    {
        let mut out = BufWriter::new(File::create(&file)?);
        for idx in 0..size {
            writeln!(
                out,
                "route add {} {MULTIPATH_ROUTE}",
                v4_prefix(MAIN_V4_BASE, idx)
            )?;
        }
        out.flush()?;
    }
    progress(&format!("filling {size} multipath IPv4 routes"));
    let took = ip_batch(&ns, &file)?;
    std::fs::remove_file(&file)?;
    load.setup(format!(
        "Multipath: another namespace with two veth pairs, {size} /24 routes from \
         {MAIN_V4_BASE} `{MULTIPATH_ROUTE}` in the main table; `ip route show` (which prints \
         each hop on a line of its own) against `netmirror route show -4`, and \
         `netmirror route count`"
    ));
    let case = |what: &str| format!("{} IPv4 multipath {what}", human(size));
    load.fact(
        case("fill"),
        format!("`ip -batch` added {size} routes in {took:.1} s"),
    );
    let show = ours(ctx, &ns, &["route", "show", "-4"]);
    let ip_show = ip(&ns, "route show", &["route", "show"]);
    load.fact(
        case("output lines"),
        format!(
            "`{}`: {}; `{}`: {}",
            show.label,
            line_count(&show),
            ip_show.label,
            line_count(&ip_show)
        ),
    );
    load.comparisons
        .push(ctx.compare(&case("show"), &show, &ip_show, no_setup));
    count_rows(ctx, load, &ns, &ip_show, &case, baseline, size);
    Ok(())
}

/// Scenario 3 alone (scenario 2 not asked for): its own namespace.
pub(crate) fn run_filter_alone(ctx: &Ctx) -> Vec<Section> {
    let mut filter = Section::new(TITLE_FILTER);
    if let Err(err) = filter_in_new_ns(ctx, &mut filter) {
        filter.fact("setup", format!("failed: {err:#}"));
    }
    vec![filter]
}

fn filter_in_new_ns(ctx: &Ctx, filter: &mut Section) -> anyhow::Result<()> {
    let ns = route_ns()?;
    let size = ctx.plan.filter_main_routes;
    let file = ctx.scratch_file("main.batch");
    write_v4_batch(&file, "add", MAIN_V4_BASE, 0..size, None)?;
    progress(&format!("filling {size} IPv4 routes"));
    ip_batch(&ns, &file)?;
    std::fs::remove_file(&file)?;
    run_filter(ctx, &ns, size, filter)
}

/// Adds 1k routes to table 100 of `ns` (which holds `main_routes` in main) and compares.
fn run_filter(
    ctx: &Ctx,
    ns: &NetNs,
    main_routes: usize,
    filter: &mut Section,
) -> anyhow::Result<()> {
    let file = ctx.scratch_file("table100.batch");
    write_v4_batch(&file, "add", TABLE100_BASE, 0..TABLE100_ROUTES, Some(100))?;
    ip_batch(ns, &file)?;
    std::fs::remove_file(&file)?;
    filter.setup(format!(
        "{} routes in the main table plus {TABLE100_ROUTES} in table 100 (from \
         {TABLE100_BASE}), one namespace; the filter is asked of the kernel where it can \
         (NETLINK_GET_STRICT_CHK), which both tools do",
        human(main_routes)
    ));
    let table100 = ours(ctx, ns, &["route", "show", "table", "100"]);
    let full = ours(ctx, ns, &["route", "show", "table", "all", "-4"]);
    let ip_table100 = ip(
        ns,
        "route show table 100",
        &["route", "show", "table", "100"],
    );
    let ip_full = ip(
        ns,
        "route show table all",
        &["route", "show", "table", "all"],
    );
    filter.fact(
        "output lines of the filtered query",
        format!(
            "`{}`: {}; `{}`: {}",
            table100.label,
            line_count(&table100),
            ip_table100.label,
            line_count(&ip_table100)
        ),
    );
    filter.comparisons.push(ctx.compare(
        "netmirror: table 100 / full load (ratio = filtered ÷ full)",
        &table100,
        &full,
        no_setup,
    ));
    filter.comparisons.push(ctx.compare(
        "table 100: netmirror vs ip",
        &table100,
        &ip_table100,
        no_setup,
    ));
    filter.comparisons.push(ctx.compare(
        "ip: table 100 / full load (for reference)",
        &ip_table100,
        &ip_full,
        no_setup,
    ));
    Ok(())
}

/// Scenario 5.
pub(crate) fn run_batch(ctx: &Ctx) -> Section {
    let mut section = Section::new(TITLE_BATCH);
    if let Err(err) = batch(ctx, &mut section) {
        section.fact("setup", format!("failed: {err:#}"));
    }
    section
}

fn batch(ctx: &Ctx, section: &mut Section) -> anyhow::Result<()> {
    let ns = route_ns()?;
    let size = ctx.plan.batch_routes;
    let add = ctx.scratch_file("batch-add.txt");
    let del = ctx.scratch_file("batch-del.txt");
    write_v4_batch(&add, "add", BATCH_BASE, 0..size, Some(BATCH_TABLE))?;
    write_v4_batch(&del, "del", BATCH_BASE, 0..size, Some(BATCH_TABLE))?;
    section.setup(format!(
        "One namespace; the same file for both tools: {size} lines `route add|del \
         A.B.C.0/24 via 192.0.2.2 table {BATCH_TABLE}`. Before each add the table is flushed, \
         before each delete it is filled with `ip -batch` (both unmeasured)."
    ));
    let table = BATCH_TABLE.to_string();
    // An empty table does not exist for the kernel: flushing it is then a no-op.
    let flush = || -> anyhow::Result<()> {
        match run_quiet(Command::new("ip").args([
            "-n",
            ns.name(),
            "route",
            "flush",
            "table",
            &table,
        ])) {
            Ok(_) => Ok(()),
            Err(err) if format!("{err}").contains("does not exist") => Ok(()),
            Err(err) => Err(err),
        }
    };
    let count_table =
        || -> anyhow::Result<usize> {
            Ok(run_quiet(Command::new("ip").args([
                "-n",
                ns.name(),
                "route",
                "show",
                "table",
                &table,
            ]))?
            .lines()
            .count())
        };
    let add_path = add.to_string_lossy().into_owned();
    let del_path = del.to_string_lossy().into_owned();
    let ours_add = ours(ctx, &ns, &["batch", &add_path]);
    let ours_del = ours(ctx, &ns, &["batch", &del_path]);
    let ip_add = ip(&ns, "-batch FILE (add)", &["-batch", &add_path]);
    let ip_del = ip(&ns, "-batch FILE (del)", &["-batch", &del_path]);
    let mut ours_add_shown = ours_add.clone();
    ours_add_shown.label = "netmirror batch FILE (add)".to_owned();
    let mut ours_del_shown = ours_del.clone();
    ours_del_shown.label = "netmirror batch FILE (del)".to_owned();

    // Correctness first: what each tool leaves in the table.
    flush()?;
    let after_ours = match ours_add.output() {
        Ok((true, _, _)) => format!("{} routes", count_table()?),
        Ok((false, _, stderr)) => format!("fails: {}", super::measure::last_lines(&stderr, 1)),
        Err(err) => format!("{err:#}"),
    };
    flush()?;
    section.fact(
        format!("table {BATCH_TABLE} after one add batch (expected {size})"),
        format!("netmirror: {after_ours}"),
    );
    let case = |what: &str| format!("{} routes {what}", human(size));
    section
        .comparisons
        .push(ctx.compare(&case("add"), &ours_add_shown, &ip_add, &flush));
    let fill = || -> anyhow::Result<()> {
        flush()?;
        ip_batch(&ns, &add).map(drop)
    };
    section
        .comparisons
        .push(ctx.compare(&case("delete"), &ours_del_shown, &ip_del, fill));
    flush()?;
    Ok(())
}

/// `100k`, `1M`.
pub(crate) fn human(n: usize) -> String {
    if n >= 1_000_000 && n.is_multiple_of(1_000_000) {
        format!("{}M", n / 1_000_000)
    } else if n >= 1_000 && n.is_multiple_of(1_000) {
        format!("{}k", n / 1_000)
    } else {
        n.to_string()
    }
}
