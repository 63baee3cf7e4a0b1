//! `link`, `addr`, `route`, `rule` against a throwaway namespace, compared with `ip -j`.

use std::collections::BTreeSet;

use netmirror_platform::testing::{NetNs, Veth};
use serde_json::Value;

use crate::support::nm;

/// A namespace with a veth pair with IPv4 and IPv6 addresses, and routes in the main table and
/// in table 100 (one static, one from `bird`, one blackhole).
fn namespace() -> NetNs {
    let ns = NetNs::builder()
        .veth(
            Veth::new("veth0", "veth1")
                .address("192.0.2.1/24")
                .address("2001:db8::1/64")
                .peer_address("192.0.2.2/24"),
        )
        .start()
        .expect("make a namespace");
    for route in [
        "route add 198.51.100.0/24 via 192.0.2.2 dev veth0",
        "route add 203.0.113.0/24 dev veth0 table 100 proto static metric 10",
        "route add 203.0.113.128/25 dev veth1 table 100 proto bird",
        "route add blackhole 10.9.0.0/16 table 100",
        "-6 route add 2001:db8:1::/48 via 2001:db8::2 dev veth0",
        "rule add from 192.0.2.0/24 table 100 priority 100",
    ] {
        let args: Vec<&str> = route.split_whitespace().collect();
        ns.ip(&args)
            .unwrap_or_else(|err| panic!("ip {route}: {err}"));
    }
    ns
}

/// `ip -j -n NS ARGS` parsed.
fn ip_json(ns: &NetNs, args: &[&str]) -> Vec<Value> {
    let mut full = vec!["-j"];
    full.extend_from_slice(args);
    let text = ns.ip(&full).expect("ip -j");
    match serde_json::from_str(&text).expect("ip -j prints JSON") {
        Value::Array(items) => items,
        other => panic!("ip -j printed {other}"),
    }
}

/// `netmirror --json --netns NS ARGS` parsed.
fn our_json(ns: &NetNs, args: &[&str]) -> Vec<Value> {
    let mut full = vec!["--json", "--netns", ns.name()];
    full.extend_from_slice(args);
    match nm(&full).json() {
        Value::Array(items) => items,
        other => panic!("netmirror --json printed {other}"),
    }
}

/// A field as text, with `ip`'s default when `ip` leaves it out.
fn text(item: &Value, key: &str, default: &str) -> String {
    match item.get(key) {
        None | Some(Value::Null) => default.to_owned(),
        Some(Value::String(text)) => text.clone(),
        Some(other) => other.to_string(),
    }
}

#[test]
fn link_json_matches_ip() {
    let ns = namespace();
    let ours = our_json(&ns, &["link"]);
    let theirs = ip_json(&ns, &["link", "show"]);
    let key = |link: &Value| {
        [
            "ifindex",
            "ifname",
            "mtu",
            "operstate",
            "link_type",
            "address",
            "flags",
        ]
        .map(|field| text(link, field, "-"))
        .join(" ")
    };
    let ours: BTreeSet<String> = ours.iter().map(key).collect();
    let theirs: BTreeSet<String> = theirs.iter().map(key).collect();
    assert_eq!(ours, theirs);
    assert_eq!(ours.len(), 3, "lo, veth0, veth1: {ours:?}");
}

#[test]
fn link_table_and_terse() {
    let ns = namespace();
    let run = nm(&["--netns", ns.name(), "link", "show", "veth0"]);
    let lines: Vec<&str> = run.ok().lines().collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(lines[0].starts_with("INDEX  NAME   STATE"), "{lines:?}");
    assert!(
        lines[1].contains("veth0") && lines[1].contains("veth") && lines[1].contains("UP"),
        "{lines:?}"
    );

    let run = nm(&[
        "-t",
        "-f",
        "NAME,STATE,ADDRESS",
        "--netns",
        ns.name(),
        "link",
        "show",
        "dev",
        "lo",
    ]);
    assert_eq!(run.ok(), "lo:UNKNOWN:00\\:00\\:00\\:00\\:00\\:00\n");
}

#[test]
fn addr_json_matches_ip() {
    let ns = namespace();
    for family in [None, Some("-4"), Some("-6")] {
        let mut args = vec!["addr", "show"];
        let mut ip_args = vec!["addr", "show"];
        if let Some(family) = family {
            args.push(family);
            ip_args.insert(0, family);
        }
        let ours: BTreeSet<String> = our_json(&ns, &args)
            .iter()
            .map(|addr| {
                ["ifname", "family", "local", "prefixlen", "scope"]
                    .map(|key| text(addr, key, "-"))
                    .join(" ")
            })
            .collect();
        let mut theirs = BTreeSet::new();
        for link in ip_json(&ns, &ip_args) {
            for addr in link["addr_info"].as_array().into_iter().flatten() {
                let ifname = text(&link, "ifname", "-");
                theirs.insert(format!(
                    "{ifname} {}",
                    ["family", "local", "prefixlen", "scope"]
                        .map(|key| text(addr, key, "-"))
                        .join(" ")
                ));
            }
        }
        assert_eq!(ours, theirs, "family {family:?}");
    }
    let run = nm(&["--netns", ns.name(), "addr", "show", "dev", "veth1", "-4"]);
    let out = run.ok();
    assert!(out.starts_with("INDEX  DEV    FAMILY  ADDRESS"), "{out}");
    assert!(
        out.contains("192.0.2.2") && !out.contains("192.0.2.1 "),
        "{out}"
    );
}

/// A route as `ip -j route` describes it, with the fields `ip` leaves out filled in: its
/// defaults (table main, protocol boot, type unicast, metric 0), and the value of each
/// selector the command line gave (`ip` does not repeat `table 100` or `dev veth0`).
fn route_key(route: &Value, selectors: &[&str]) -> String {
    let given = |keyword: &str, default: &'static str| -> String {
        match selectors.iter().position(|word| *word == keyword) {
            Some(idx) if selectors[idx + 1] != "all" => selectors[idx + 1].to_owned(),
            _ => default.to_owned(),
        }
    };
    [
        text(route, "type", &given("type", "unicast")),
        text(route, "dst", "-"),
        text(route, "gateway", "-"),
        text(route, "dev", &given("dev", "-")),
        text(route, "table", &given("table", "main")),
        text(route, "protocol", &given("proto", "boot")),
        text(route, "metric", "0"),
    ]
    .join(" ")
}

#[test]
fn route_json_matches_ip_with_each_filter() {
    let ns = namespace();
    let cases: &[&[&str]] = &[
        &["-4", "route", "show"],
        &["-6", "route", "show"],
        &["-4", "route", "show", "table", "all"],
        &["-6", "route", "show", "table", "all"],
        &["route", "show", "table", "100"],
        &["route", "show", "table", "100", "dev", "veth0"],
        &["route", "show", "table", "100", "proto", "bird"],
        &["route", "show", "table", "100", "type", "blackhole"],
        &["-4", "route", "show", "table", "local"],
        &["-4", "route", "show", "dev", "veth0"],
    ];
    for args in cases {
        let ours: BTreeSet<String> = our_json(&ns, args)
            .iter()
            .map(|route| route_key(route, args))
            .collect();
        let theirs: BTreeSet<String> = ip_json(&ns, args)
            .iter()
            .map(|route| route_key(route, args))
            .collect();
        assert_eq!(ours, theirs, "{args:?}");
        assert!(!ours.is_empty(), "{args:?}");
    }
    // Without `show`, as `ip` allows.
    let without_show = our_json(&ns, &["route", "table", "100"]);
    assert_eq!(without_show.len(), 3, "{without_show:?}");
}

#[test]
fn route_table_for_people() {
    let ns = namespace();
    let run = nm(&[
        "--netns",
        ns.name(),
        "route",
        "show",
        "table",
        "100",
        "proto",
        "static",
    ]);
    let out = run.ok();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    assert!(lines[0].starts_with("TYPE     DST"), "{out}");
    for word in ["unicast", "203.0.113.0/24", "veth0", "100", "static", "10"] {
        assert!(
            lines[1].split_whitespace().any(|w| w == word),
            "{word} missing: {out}"
        );
    }
}

#[test]
fn rule_json_matches_ip() {
    let ns = namespace();
    // `ip -j` splits a prefix into `src` and `srclen`; netmirror's `src` is the prefix as
    // `ip rule` prints it.
    let key = |rule: &Value| {
        let src = match rule.get("srclen") {
            Some(len) => format!("{}/{len}", text(rule, "src", "-")),
            None => text(rule, "src", "-"),
        };
        format!(
            "{} {src} {}",
            text(rule, "priority", "-"),
            text(rule, "table", "-")
        )
    };
    let ours: BTreeSet<String> = our_json(&ns, &["rule", "-4"]).iter().map(key).collect();
    let theirs: BTreeSet<String> = ip_json(&ns, &["rule", "show"]).iter().map(key).collect();
    assert_eq!(ours, theirs);
    assert!(ours.contains("100 192.0.2.0/24 100"), "{ours:?}");
}

#[test]
fn missing_namespace_is_its_own_error() {
    let stderr = nm(&["--netns", "nmx-does-not-exist", "link"])
        .fails(1)
        .to_owned();
    assert_eq!(
        stderr,
        "netmirror: network namespace nmx-does-not-exist does not exist (see `ip netns list`)\n"
    );
}

#[test]
fn missing_device_is_an_error() {
    let ns = NetNs::new().expect("namespace");
    let stderr = nm(&["--netns", ns.name(), "addr", "show", "dev", "nope0"])
        .fails(1)
        .to_owned();
    assert_eq!(stderr, "netmirror: cannot find device \"nope0\"\n");
}

#[test]
fn unknown_table_name_is_a_usage_error() {
    let ns = NetNs::new().expect("namespace");
    let stderr = nm(&["--netns", ns.name(), "route", "show", "table", "nosuch"])
        .fails(2)
        .to_owned();
    assert!(stderr.contains("unknown table `nosuch`"), "{stderr}");
}

#[test]
fn route_count_matches_ip_per_table() {
    let ns = namespace();
    let run = nm(&["--json", "--netns", ns.name(), "route", "count"]);
    let report = run.json();
    let mut ours = BTreeSet::new();
    let mut total = 0;
    for entry in report["tables"].as_array().expect("tables") {
        let n_routes = entry["routes"].as_u64().expect("a count");
        total += n_routes;
        ours.insert(format!(
            "{} {} {n_routes}",
            text(entry, "table", "-"),
            text(entry, "family", "-")
        ));
    }
    let mut theirs = BTreeSet::new();
    for (flag, family) in [("-4", "inet"), ("-6", "inet6")] {
        let mut counts = std::collections::BTreeMap::<String, u64>::new();
        for route in ip_json(&ns, &[flag, "route", "show", "table", "all"]) {
            *counts.entry(text(&route, "table", "main")).or_default() += 1;
        }
        for (table, n_routes) in counts {
            theirs.insert(format!("{table} {family} {n_routes}"));
        }
    }
    assert_eq!(ours, theirs);
    assert_eq!(report["routes"].as_u64(), Some(total));
    // Without the `heap-stats` feature the resident memory taken is measured: a few dozen
    // routes may fit in pages the process had already, so only the keys' presence is certain.
    assert!(
        report["cache_resident_bytes"].as_u64().is_some(),
        "{report}"
    );
    assert!(
        report["resident_bytes_per_route"].as_f64().is_some(),
        "{report}"
    );

    let run = nm(&["--netns", ns.name(), "route", "count"]);
    let out = run.ok();
    assert!(out.starts_with("TABLE  FAMILY  ROUTES\n"), "{out}");
    assert!(
        out.contains(&format!("{total} routes, ")) && out.contains("bytes per route"),
        "{out}"
    );
}

/// `route count` and the overview count nexthop objects (`Cache::counts`), as
/// `ip nexthop show` lists them; the overview also says how many routes use one.
#[test]
fn route_count_and_overview_count_nexthops() {
    let ns = namespace();
    for line in [
        "nexthop add id 1 via 192.0.2.2 dev veth0",
        "nexthop add id 2 dev veth1",
        "nexthop add id 3 blackhole",
        "nexthop add id 10 group 1/2",
        "route add 10.60.0.0/16 nhid 10",
        "route add 10.61.0.0/16 nhid 3",
    ] {
        let args: Vec<&str> = line.split_whitespace().collect();
        ns.ip(&args)
            .unwrap_or_else(|err| panic!("ip {line}: {err}"));
    }
    let n_ip = ip_json(&ns, &["nexthop", "show"]).len() as u64;
    assert_eq!(n_ip, 4);
    let report = nm(&["--json", "--netns", ns.name(), "route", "count"]).json();
    assert_eq!(report["nexthops"].as_u64(), Some(n_ip), "{report}");
    assert_eq!(
        report["rules"].as_u64(),
        Some(
            ip_json(&ns, &["rule", "show"]).len() as u64
                + ip_json(&ns, &["-6", "rule", "show"]).len() as u64
        ),
        "{report}"
    );
    let out = nm(&["--netns", ns.name(), "route", "count"])
        .ok()
        .to_owned();
    assert!(out.contains("4 nexthop objects; "), "{out}");

    let overview = nm(&["--json", "--netns", ns.name()]).json();
    assert_eq!(overview["nexthops"].as_u64(), Some(n_ip), "{overview}");
    let out = nm(&["--netns", ns.name()]).ok().to_owned();
    assert!(out.contains("4 nexthop objects, 2 routes use one"), "{out}");
}

/// A copy of the binary that an unprivileged user may run, in a temp dir of its own.
fn unprivileged_copy() -> (tempfile::TempDir, std::path::PathBuf) {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::Builder::new()
        .prefix("netmirror-test-bin")
        .tempdir()
        .expect("temp dir");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755))
        .expect("chmod dir");
    let bin = dir.path().join("netmirror");
    std::fs::copy(env!("CARGO_BIN_EXE_netmirror"), &bin).expect("copy the binary");
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).expect("chmod binary");
    (dir, bin)
}

#[test]
fn permission_denied_is_its_own_error() {
    let ns = namespace();
    let (_dir, bin) = unprivileged_copy();
    // `setpriv` drops to nobody; with `in_ns` it runs inside the test namespace (entered by
    // `ip netns exec` as root first), so nothing is ever tried on the host's namespace.
    let as_nobody = |in_ns: bool, args: &[&str], input: &str| {
        let mut command = if in_ns {
            ns.command("setpriv")
        } else {
            std::process::Command::new("setpriv")
        };
        command
            .args([
                "--reuid",
                "65534",
                "--regid",
                "65534",
                "--clear-groups",
                "--",
            ])
            .arg(&bin)
            .args(args);
        command.env("NO_COLOR", "1");
        crate::support::run_with_input(command, input)
    };
    let stderr = as_nobody(false, &["--netns", ns.name(), "link"], "")
        .fails(1)
        .to_owned();
    assert_eq!(
        stderr,
        format!(
            "netmirror: permission denied: enter network namespace {} \
             (run as root, or with CAP_SYS_ADMIN; changing it also needs CAP_NET_ADMIN)\n",
            ns.name()
        )
    );
    // Inside the namespace reading works; changing does not.
    let run = as_nobody(true, &["-t", "-f", "NAME", "link"], "");
    assert!(run.ok().contains("veth0"), "{run:#?}");
    let run = as_nobody(
        true,
        &["batch", "-"],
        "route add 198.18.0.0/16 dev veth0 table 4242\n",
    );
    assert_eq!(run.code(), 1, "{run:#?}");
    assert!(
        run.stderr.ends_with(
            "netmirror: permission denied: change routes and addresses \
             (run as root, or with CAP_NET_ADMIN)\n"
        ),
        "{run:#?}"
    );
}

#[test]
fn colour_only_when_asked_or_on_a_terminal() {
    let ns = NetNs::new().expect("namespace");
    // Not a terminal: no escapes.
    let plain = nm(&["--netns", ns.name(), "link"]);
    assert!(!plain.ok().contains('\u{1b}'), "{plain:#?}");
    // CLICOLOR_FORCE: a bold header and a coloured state.
    let mut command = crate::support::netmirror(&["--netns", ns.name(), "link"]);
    command.env_remove("NO_COLOR").env("CLICOLOR_FORCE", "1");
    let coloured = crate::support::run(command);
    assert!(
        coloured.ok().starts_with("\u{1b}[1mINDEX\u{1b}[0m"),
        "{coloured:#?}"
    );
    // JSON never has colour.
    let mut command = crate::support::netmirror(&["--json", "--netns", ns.name(), "link"]);
    command.env_remove("NO_COLOR").env("CLICOLOR_FORCE", "1");
    assert!(!crate::support::run(command).ok().contains('\u{1b}'));
}

#[test]
fn verbose_and_rust_log_go_to_stderr() {
    let ns = NetNs::new().expect("namespace");
    let quiet = nm(&["--netns", ns.name(), "route"]);
    assert!(quiet.stderr.is_empty(), "{quiet:#?}");
    let verbose = nm(&["-vv", "--netns", ns.name(), "route"]);
    assert!(verbose.stderr.contains("routes dumped"), "{verbose:#?}");
    assert!(
        !verbose.stdout.contains("routes dumped"),
        "logs stay off stdout: {verbose:#?}"
    );
    let mut command = crate::support::netmirror(&["--netns", ns.name(), "route"]);
    command.env("RUST_LOG", "netmirror::kernel=debug");
    let logged = crate::support::run(command);
    assert!(logged.stderr.contains("routes dumped"), "{logged:#?}");
}
