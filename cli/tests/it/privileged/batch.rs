//! `batch`: lines applied, a malformed line and a refused line reported with their numbers,
//! `--continue` against stopping, stdin.

use std::collections::BTreeSet;

use netmirror_platform::testing::{NetNs, Veth};

use crate::support::{netmirror, nm, run_with_input};

fn namespace() -> NetNs {
    NetNs::builder()
        .veth(Veth::new("veth0", "veth1").address("192.0.2.1/24"))
        .start()
        .expect("make a namespace")
}

/// The destinations of table 100, as `ip` lists them (asking for every table: `ip` fails on a
/// table that does not exist yet).
fn table_100(ns: &NetNs) -> BTreeSet<String> {
    let text = ns
        .ip(&["-j", "route", "show", "table", "all"])
        .expect("ip route show");
    let routes: Vec<serde_json::Value> = serde_json::from_str(&text).expect("JSON");
    routes
        .iter()
        .filter(|route| route["table"] == "100")
        .map(|route| route["dst"].as_str().unwrap_or("?").to_owned())
        .collect()
}

/// A namespace and a temporary folder for batch files.
fn namespace_and_dir() -> (NetNs, tempfile::TempDir) {
    let dir = tempfile::Builder::new()
        .prefix("netmirror-test-batch")
        .tempdir()
        .expect("temp dir");
    (namespace(), dir)
}

fn write_batch(dir: &tempfile::TempDir, text: &str) -> String {
    let path = dir.path().join("routes.batch");
    std::fs::write(&path, text).expect("write the batch file");
    path.display().to_string()
}

fn set(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|item| (*item).to_owned()).collect()
}

#[test]
fn lines_are_applied() {
    let (ns, dir) = namespace_and_dir();
    let file = write_batch(
        &dir,
        "# routes for table 100\n\
         route add 10.1.0.0/16 dev veth0 table 100\n\
         \n\
         route add 10.2.0.0/16 via 192.0.2.2 table 100 proto static\n\
         route add blackhole 10.3.0.0/16 table 100\n\
         addr add 198.51.100.1/24 dev veth1\n",
    );
    let run = nm(&["--netns", ns.name(), "batch", &file]);
    assert_eq!(run.ok(), "4 of 4 lines applied\n");
    assert_eq!(
        table_100(&ns),
        set(&["10.1.0.0/16", "10.2.0.0/16", "10.3.0.0/16"])
    );
    assert!(
        ns.ip(&["-o", "addr", "show", "dev", "veth1"])
            .expect("ip addr")
            .contains("198.51.100.1/24")
    );

    // Delete them again from stdin, with a JSON report.
    let mut command = netmirror(&["--json", "--netns", ns.name(), "batch", "-"]);
    command.env("NO_COLOR", "1");
    let run = run_with_input(
        command,
        "route del 10.1.0.0/16 table 100\nroute del 10.2.0.0/16 table 100\nroute del 10.3.0.0/16 table 100\n",
    );
    let report = run.json();
    assert_eq!(report["applied"], 3, "{report}");
    assert_eq!(report["failed"], serde_json::json!([]));
    assert!(table_100(&ns).is_empty());
}

#[test]
fn malformed_line_applies_nothing_and_names_its_line() {
    let (ns, dir) = namespace_and_dir();
    let file = write_batch(
        &dir,
        "route add 10.1.0.0/16 dev veth0 table 100\n\
         route add 10.2.0.0/16 dev veth0 table 100\n\
         route add 10.3.0.0/16 dev veth9 table 100\n\
         route add 10.4.0.0/16 dev veth0 table 100\n",
    );
    let stderr = nm(&["--netns", ns.name(), "batch", &file])
        .fails(1)
        .to_owned();
    assert_eq!(
        stderr,
        format!(
            "netmirror: {file}:3: malformed line `route add 10.3.0.0/16 dev veth9 table 100`: \
             cannot find device \"veth9\"; nothing was applied\n"
        )
    );
    assert!(table_100(&ns).is_empty());
}

#[test]
fn refused_line_stops_the_batch_unless_continue() {
    let (ns, dir) = namespace_and_dir();
    // Line 2 asks for a gateway that is not on any link: the kernel refuses it.
    let file = write_batch(
        &dir,
        "route add 10.1.0.0/16 dev veth0 table 100\n\
         route add 10.2.0.0/16 via 203.0.113.1 table 100\n\
         route add 10.3.0.0/16 dev veth0 table 100\n",
    );
    let run = nm(&["--netns", ns.name(), "batch", &file]);
    assert_eq!(run.code(), 1, "{run:#?}");
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(lines.len(), 2, "{run:#?}");
    assert!(
        lines[0].starts_with(&format!(
            "netmirror: {file}:2: `route add 10.2.0.0/16 via 203.0.113.1 table 100`: "
        )),
        "{run:#?}"
    );
    assert!(
        lines[0].contains("Nexthop has invalid gateway"),
        "the kernel's message: {run:#?}"
    );
    assert_eq!(lines[1], "netmirror: 1 of 3 batch lines failed");
    assert_eq!(table_100(&ns), set(&["10.1.0.0/16"]), "stopped at line 2");

    let ns = namespace();
    let run = nm(&["--netns", ns.name(), "batch", "--continue", &file]);
    assert_eq!(run.code(), 1, "{run:#?}");
    assert!(run.stderr.contains(&format!("{file}:2: ")), "{run:#?}");
    assert_eq!(run.stdout, "2 of 3 lines applied\n");
    assert_eq!(
        table_100(&ns),
        set(&["10.1.0.0/16", "10.3.0.0/16"]),
        "went on after line 2"
    );
}

#[test]
fn continue_skips_malformed_lines() {
    let ns = namespace();
    let run = run_with_input(
        netmirror(&["--netns", ns.name(), "batch", "--continue", "-"]),
        "route add 10.1.0.0/16 dev veth0 table 100\nroute frobnicate\nroute add 10.3.0.0/16 dev veth0 table 100\n",
    );
    assert_eq!(run.code(), 1, "{run:#?}");
    assert!(
        run.stderr.starts_with(
            "netmirror: -:2: malformed line `route frobnicate`: unknown command `frobnicate`"
        ),
        "{run:#?}"
    );
    assert_eq!(table_100(&ns), set(&["10.1.0.0/16", "10.3.0.0/16"]));
}

#[test]
fn missing_file_is_one_line() {
    let stderr = nm(&["batch", "/nonexistent/netmirror-test.batch"])
        .fails(1)
        .to_owned();
    assert!(
        stderr.starts_with("netmirror: cannot read batch file /nonexistent/netmirror-test.batch: "),
        "{stderr}"
    );
}

/// Stop mode, where the kernel refuses an undo: `10.60.0.0/16 via 10.50.0.1` was added while
/// `10.50.0.0/24` made its gateway reachable, and that route is gone since (IPv4 keeps the
/// route). The batch deletes it after a refused line, in the same send; adding it back is
/// refused ("invalid gateway"), so it stays deleted. The summary must not count it as not
/// applied, must name the line whose undo failed, and the status must say the batch failed.
#[test]
fn an_undo_the_kernel_refuses_is_reported_as_applied_and_not_undone() {
    let ns = namespace();
    for line in [
        "route add 10.50.0.0/24 dev veth0",
        "route add 10.60.0.0/16 via 10.50.0.1 dev veth0",
        "route del 10.50.0.0/24 dev veth0",
        "route add 10.61.0.0/16 via 192.0.2.2 dev veth0",
    ] {
        let args: Vec<&str> = line.split_whitespace().collect();
        ns.ip(&args).expect(line);
    }
    // The kernel refuses to add the route again: the undo cannot work.
    assert!(
        ns.ip(&[
            "route",
            "add",
            "10.62.0.0/16",
            "via",
            "10.50.0.1",
            "dev",
            "veth0"
        ])
        .is_err()
    );
    let dir = tempfile::Builder::new()
        .prefix("netmirror-test-batch")
        .tempdir()
        .expect("temp dir");
    let file = write_batch(
        &dir,
        "route add 10.70.0.0/16 via 192.0.2.2\n\
         route add 10.70.0.0/16 via 192.0.2.2\n\
         route del 10.60.0.0/16\n\
         route del 10.61.0.0/16\n\
         route add 10.71.0.0/16 via 192.0.2.2\n",
    );
    let main = |ns: &NetNs| -> BTreeSet<String> {
        let text = ns.ip(&["-j", "route", "show"]).expect("ip route show");
        let routes: Vec<serde_json::Value> = serde_json::from_str(&text).expect("JSON");
        routes
            .iter()
            .map(|route| route["dst"].as_str().unwrap_or("?").to_owned())
            .collect()
    };
    let run = nm(&["--netns", ns.name(), "batch", &file]);
    assert_eq!(run.code(), 1, "{run:#?}");
    assert_eq!(
        run.stdout,
        "1 of 5 lines applied, 2 not applied after the first failure, \
         1 applied after the first failure and not undone\n",
        "{run:#?}"
    );
    assert!(run.stderr.contains("routes.batch:2:"), "{run:#?}");
    assert!(
        run.stderr.contains(
            "routes.batch:3: `route del 10.60.0.0/16`: applied after the first failure, and \
             undoing it failed (the route it deleted stays deleted): "
        ),
        "{run:#?}"
    );
    // What the summary says is what the kernel holds: line 1 and line 3 applied, the rest
    // not (10.61.0.0/16 put back, 10.71.0.0/16 taken away).
    assert_eq!(
        main(&ns),
        set(&["10.61.0.0/16", "10.70.0.0/16", "192.0.2.0/24"])
    );

    // The same in JSON: the line whose undo failed is listed with `undo: true`.
    ns.ip(&["route", "del", "10.70.0.0/16"])
        .expect("ip route del");
    for line in [
        "route add 10.50.0.0/24 dev veth0",
        "route add 10.60.0.0/16 via 10.50.0.1 dev veth0",
        "route del 10.50.0.0/24 dev veth0",
    ] {
        let args: Vec<&str> = line.split_whitespace().collect();
        ns.ip(&args).expect(line);
    }
    let run = nm(&["--netns", ns.name(), "--json", "batch", &file]);
    assert_eq!(run.code(), 1, "{run:#?}");
    let summary: serde_json::Value = serde_json::from_str(&run.stdout).expect("JSON");
    assert_eq!(summary["applied"], 1, "{summary}");
    assert_eq!(summary["skipped"], 2, "{summary}");
    assert_eq!(summary["not_undone"], 1, "{summary}");
    let failed = summary["failed"].as_array().expect("failed lines");
    assert_eq!(failed.len(), 2, "{summary}");
    assert_eq!(failed[1]["line"], 3, "{summary}");
    assert_eq!(failed[1]["undo"], true, "{summary}");
}

/// Rule lines, and `-6` before `batch` as `ip -6 -batch` has it: the family of every line
/// (here of rules whose words name none); the kernel holds what `ip -6 rule` would have added.
#[test]
fn rule_lines_and_a_family_for_every_line() {
    let (ns, dir) = namespace_and_dir();
    let rules = |family: &str| -> Vec<String> {
        let text = ns.ip(&[family, "rule", "show"]).expect("ip rule show");
        text.lines()
            .filter(|line| line.starts_with("10"))
            .map(|line| line.split_whitespace().collect::<Vec<_>>().join(" "))
            .collect()
    };
    let file = write_batch(
        &dir,
        "rule add fwmark 7 table 70 pref 1000\nrule add iif veth0 blackhole pref 1001\n",
    );
    let run = nm(&["--netns", ns.name(), "-6", "batch", &file]);
    assert_eq!(run.ok(), "2 of 2 lines applied\n");
    assert_eq!(
        rules("-6"),
        [
            "1000: from all fwmark 0x7 lookup 70",
            "1001: from all iif veth0 blackhole"
        ]
    );
    assert!(rules("-4").is_empty(), "{:?}", rules("-4"));

    // Without a family option the line's addresses say it; then deletes.
    let file = write_batch(&dir, "rule add from 10.1.0.0/16 lookup 71 pref 1002\n");
    nm(&["--netns", ns.name(), "batch", &file]).ok();
    assert_eq!(rules("-4"), ["1002: from 10.1.0.0/16 lookup 71"]);
    let file = write_batch(&dir, "rule del pref 1001\nrule del fwmark 7\n");
    nm(&["--netns", ns.name(), "-6", "batch", &file]).ok();
    assert!(rules("-6").is_empty(), "{:?}", rules("-6"));
}

/// Comments after a command, a command over three lines and a quoted word, read as `ip
/// -batch` reads them; a failure names the command's first line, and a last line ending in
/// `\` is a malformed command.
#[test]
fn comments_and_continuation_lines_as_ip_reads_them() {
    let (ns, dir) = namespace_and_dir();
    let file = write_batch(
        &dir,
        "route add 10.1.0.0/16 dev veth0 table 100 # first\n\
         route add 10.2.0.0/16 \\\n\
         \tvia 192.0.2.2 \\\n\
         \x20 table 100\n\
         route add \"10.3.0.0/16\" dev veth0 table 100\n\
         route add 10.4.0.0/16 \\\n\
         via 203.0.113.1 table 100\n",
    );
    let run = nm(&["--netns", ns.name(), "batch", "--continue", &file]);
    assert_eq!(run.code(), 1, "{run:?}");
    assert_eq!(run.stdout, "3 of 4 lines applied\n");
    assert!(
        run.stderr.starts_with(&format!(
            "netmirror: {file}:6: `route add 10.4.0.0/16 via 203.0.113.1 table 100`: "
        )),
        "{}",
        run.stderr
    );
    assert_eq!(
        table_100(&ns),
        set(&["10.1.0.0/16", "10.2.0.0/16", "10.3.0.0/16"])
    );

    let file = write_batch(&dir, "route add 10.5.0.0/16 dev veth0 table 100 \\\n");
    let stderr = nm(&["--netns", ns.name(), "batch", &file])
        .fails(1)
        .to_owned();
    assert_eq!(
        stderr,
        format!(
            "netmirror: {file}:1: malformed line `route add 10.5.0.0/16 dev veth0 table 100`: \
             missing continuation line (the last line ends with `\\`); nothing was applied\n"
        )
    );
}
