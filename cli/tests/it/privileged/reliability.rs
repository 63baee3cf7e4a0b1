//! Issue 15, the kernel half: hostile names reach no terminal raw, batch input is bounded,
//! signals and closed pipes end commands cleanly with the state they report, family
//! mismatches are malformed lines, `--netns` refuses what is not a namespace and notices one
//! deleted, monitors forget the links that go.

use std::collections::BTreeSet;
use std::io::Write;
use std::process::Stdio;
use std::time::Duration;

use netmirror_platform::testing::{NetNs, Veth};
use serde_json::Value;

use crate::support::{Monitor, netmirror, nm, run};

/// How long an event may take to show up.
const EVENT_TIMEOUT: Duration = Duration::from_secs(10);

/// A link name as a hostile process names it: `ip link add $'\e[31mE\a' type veth ...`.
const EVIL_LINK: &str = "\u{1b}[31mE\u{7}";
/// An alias with an OSC title sequence, a newline that would forge a terse record, and a
/// colon.
const EVIL_ALIAS: &str = "a\u{1b}]0;owned\u{7}\nforged:line";

fn namespace() -> NetNs {
    NetNs::builder()
        .veth(Veth::new("veth0", "veth1").address("192.0.2.1/24"))
        .start()
        .expect("make a namespace")
}

fn temp_dir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("netmirror-test-rel")
        .tempdir()
        .expect("temp dir")
}

/// No control character other than line ends.
#[track_caller]
fn assert_terminal_safe(text: &str) {
    assert!(
        !text.chars().any(|ch| ch.is_control() && ch != '\n'),
        "a control character reached the output: {text:?}"
    );
}

#[test]
fn hostile_link_names_and_aliases_are_escaped_but_exact_in_json() {
    let ns = namespace();
    ns.ip(&[
        "link", "add", EVIL_LINK, "type", "veth", "peer", "name", "evil1",
    ])
    .expect("ip link add");
    ns.ip(&["link", "set", "dev", "veth0", "alias", EVIL_ALIAS])
        .expect("ip link set alias");
    // Up, so that the kernel announces its alias changes (it does only for links up).
    ns.ip(&["link", "set", "dev", EVIL_LINK, "up"])
        .expect("ip link set up");
    let table = nm(&["--netns", ns.name(), "-f", "NAME,ALIAS", "link"]);
    let out = table.ok();
    assert_terminal_safe(out);
    assert!(out.contains(r"\e[31mE\a"), "{out}");
    assert!(out.contains(r"a\e]0;owned\a\nforged:line"), "{out}");
    let terse = nm(&["--netns", ns.name(), "-t", "-f", "NAME,ALIAS", "link"]);
    let out = terse.ok();
    assert_terminal_safe(out);
    // One record per link: the alias's newline forged none.
    assert_eq!(out.lines().count(), 5, "{out}");
    assert!(out.contains(r"veth0:a\e]0;owned\a\nforged\:line"), "{out}");
    assert!(out.contains(r"\e[31mE\a:"), "{out}");
    let json = nm(&["--netns", ns.name(), "--json", "link"]).json();
    let links = json.as_array().expect("an array");
    assert!(
        links.iter().any(|link| link["ifname"] == EVIL_LINK),
        "{json}"
    );
    assert!(
        links.iter().any(|link| link["ifalias"] == EVIL_ALIAS),
        "{json}"
    );

    // Monitor lines, for people and terse.
    for terse in [false, true] {
        let mut args = vec!["--netns", ns.name()];
        if terse {
            args.push("-t");
        }
        args.extend(["-f", "all", "monitor", "link"]);
        let mut command = netmirror(&args);
        command.env("RUST_LOG", "netmirror::monitor=debug");
        let mut monitor = Monitor::start(command, "monitor ready");
        let alias = format!("{EVIL_ALIAS}{terse}");
        ns.ip(&["link", "set", "dev", EVIL_LINK, "alias", &alias])
            .expect("ip link set alias");
        let line = monitor.expect_line(EVENT_TIMEOUT, |line| line.contains("forged"));
        assert_terminal_safe(&line);
        assert!(line.contains(r"\e[31mE\a"), "{line}");
        if terse {
            assert!(line.starts_with("link:changed:"), "{line}");
            assert!(
                line.contains(&format!(r"a\e]0;owned\a\nforged\:line{terse}")),
                "{line}"
            );
        } else {
            assert!(
                line.contains(&format!(r"a\e]0;owned\a\nforged:line{terse}")),
                "{line}"
            );
        }
    }
}

/// The peak resident memory of a finished child, from `/proc/PID/status` read just before
/// it is reaped (`VmHWM`), in KiB.
fn run_measured(mut command: std::process::Command) -> (crate::support::Run, u64) {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().expect("spawn");
    let status_path = format!("/proc/{}/status", child.id());
    let mut peak = 0;
    let deadline = std::time::Instant::now() + crate::support::TIMEOUT;
    // Read the pipes on threads so the child never blocks on them.
    let read = |pipe: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            let mut pipe = pipe;
            let _ = std::io::Read::read_to_string(&mut pipe, &mut text);
            text
        })
    };
    let stdout = read(Box::new(child.stdout.take().expect("stdout")));
    let stderr = read(Box::new(child.stderr.take().expect("stderr")));
    let status = loop {
        // A zombie has no memory left to show: read while it runs.
        if let Ok(text) = std::fs::read_to_string(&status_path)
            && let Some(kib) = text
                .lines()
                .find_map(|line| line.strip_prefix("VmHWM:"))
                .and_then(|rest| {
                    rest.trim()
                        .trim_end_matches(" kB")
                        .trim()
                        .parse::<u64>()
                        .ok()
                })
        {
            peak = peak.max(kib);
        }
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        assert!(std::time::Instant::now() < deadline, "ran too long");
        std::thread::sleep(Duration::from_millis(2));
    };
    let run = crate::support::Run {
        status,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    };
    (run, peak)
}

#[test]
fn endless_or_huge_batch_lines_cost_bounded_memory_and_name_the_line() {
    let ns = namespace();
    let dir = temp_dir();
    // `prlimit --as` caps the address space: the old read_to_string of /dev/zero died of it
    // (or, without the cap, grew to gigabytes).
    for keep_going in [false, true] {
        let mut args = vec!["--as=1073741824", "--"];
        let bin = env!("CARGO_BIN_EXE_netmirror");
        args.extend([bin, "--netns", ns.name(), "batch"]);
        if keep_going {
            args.push("--continue");
        }
        args.push("/dev/zero");
        let mut command = std::process::Command::new("prlimit");
        command.args(&args);
        let (run, peak_kib) = run_measured(command);
        assert_eq!(run.code(), 1, "{run:#?}");
        assert!(!run.stderr.contains("panicked"), "{run:#?}");
        let stderr = &run.stderr;
        assert_eq!(
            stderr.lines().last().unwrap_or(""),
            if keep_going {
                "netmirror: /dev/zero:1: line longer than 65536 bytes; reading stopped there; 0 of 0 lines before it applied"
            } else {
                "netmirror: /dev/zero:1: line longer than 65536 bytes; nothing was applied"
            },
            "{run:#?}"
        );
        assert!(
            peak_kib < 64 * 1024,
            "peak RSS {peak_kib} KiB for /dev/zero"
        );
    }

    // A 10 MB malformed line after a good one: the good one is applied with --continue, the
    // error names line 2, and stderr stays small.
    let path = dir.path().join("huge.batch");
    let mut file = std::fs::File::create(&path).expect("create");
    writeln!(file, "route add 10.9.0.0/16 dev veth0 table 100").expect("write");
    let junk = "route add \u{1b}[2J\0".repeat(10 * 1024 * 1024 / 15);
    writeln!(file, "{junk}").expect("write");
    drop(file);
    let file = path.display().to_string();
    let (run, peak_kib) = run_measured(netmirror(&["--netns", ns.name(), "batch", "-c", &file]));
    assert_eq!(run.code(), 1, "{run:#?}");
    assert!(
        run.stderr.len() < 1000,
        "{} bytes on stderr",
        run.stderr.len()
    );
    assert!(
        run.stderr
            .contains(&format!("{file}:2: line longer than 65536 bytes; reading stopped there; 1 of 1 lines before it applied")),
        "{run:#?}"
    );
    assert!(
        peak_kib < 64 * 1024,
        "peak RSS {peak_kib} KiB for a 10 MB line"
    );
    assert!(
        ns.ip(&["route", "show", "table", "100"])
            .expect("ip route")
            .contains("10.9.0.0/16")
    );

    // A malformed line under the limit full of NULs and escapes is quoted escaped and cut.
    let line = format!(
        "route add 10.10.0.0/16 dev veth0 {}",
        "\u{1b}]0;x\u{7}\0".repeat(5000)
    );
    let path = dir.path().join("junk.batch");
    std::fs::write(&path, format!("{line}\n")).expect("write");
    let run = nm(&["--netns", ns.name(), "batch", &path.display().to_string()]);
    let stderr = run.fails(1);
    assert!(
        stderr.len() < 600,
        "{} bytes on stderr: {stderr:?}",
        stderr.len()
    );
    assert_terminal_safe(stderr);
    assert!(
        stderr.contains(r"route add 10.10.0.0/16 dev veth0 \e]0;x\a\x00"),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("... ({} bytes)", line.len())),
        "{stderr}"
    );
}

/// Destinations of table 100, as `ip -j` lists them (asking for every table: `ip` fails on a
/// table that does not exist yet).
fn table_100(ns: &NetNs) -> BTreeSet<String> {
    let text = ns
        .ip(&["-j", "route", "show", "table", "all"])
        .expect("ip -j route show table all");
    let routes: Vec<Value> = serde_json::from_str(&text).expect("JSON");
    routes
        .iter()
        .filter(|route| route["table"] == "100")
        .map(|route| route["dst"].as_str().unwrap_or("?").to_owned())
        .collect()
}

/// The destination of line `i` (from 0) of the big batch.
fn big_dst(i: u32) -> String {
    std::net::Ipv4Addr::from(0x0a40_0000 + i).to_string()
}

#[test]
fn a_signal_mid_batch_prints_the_summary_and_leaves_what_it_says() {
    let ns = namespace();
    let dir = temp_dir();
    let path = dir.path().join("big.batch");
    let n = 200_000u32;
    let mut text = String::with_capacity(n as usize * 48);
    for i in 0..n {
        text.push_str(&format!(
            "route add {}/32 dev veth0 table 100\n",
            big_dst(i)
        ));
    }
    std::fs::write(&path, text).expect("write");
    let file = path.display().to_string();
    for (signal, keep_going) in [("INT", false), ("TERM", true)] {
        let mut args = vec!["--netns", ns.name(), "--json", "batch"];
        if keep_going {
            args.push("--continue");
        }
        args.push(&file);
        let mut command = netmirror(&args);
        command.env("RUST_LOG", "netmirror::batch=debug");
        let monitor = Monitor::start(command, "sending batch");
        // Once the first send is in the kernel, so the signal comes mid-batch.
        let first = format!("{}/32", big_dst(0));
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while !ns
            .ip(&["route", "show", "table", "all", "exact", &first])
            .unwrap_or_default()
            .contains("table 100")
        {
            assert!(
                std::time::Instant::now() < deadline,
                "no line was ever applied"
            );
            std::thread::sleep(Duration::from_millis(2));
        }
        monitor.signal(signal);
        let (status, stdout, stderr) = monitor.finish(Duration::from_secs(60));
        let expected_status = if signal == "INT" { 130 } else { 143 };
        assert_eq!(
            status.code(),
            Some(expected_status),
            "{stdout:?} {stderr:?}"
        );
        let report: Value = serde_json::from_str(&stdout.join("\n")).expect("a JSON summary");
        let applied = report["applied"].as_u64().expect("applied") as u32;
        let from = report["not_applied_from_line"]
            .as_u64()
            .expect("the first line not applied") as u32;
        assert_eq!(report["interrupted"], format!("SIG{signal}"));
        assert!(applied > 0 && applied < n, "{report}");
        // Every line before the first one not applied was applied, none after.
        assert_eq!(from, applied + 1, "{report}");
        let held = table_100(&ns);
        assert_eq!(held.len(), applied as usize, "{report}");
        assert_eq!(held, (0..applied).map(big_dst).collect(), "{report}");
        assert!(
            stderr.iter().any(|line| line
                == &format!(
                    "netmirror: interrupted by SIG{signal}: {applied} of {} lines{} applied; nothing from {file}:{from} on was applied",
                    if keep_going { report_lines_read(&stderr) } else { n as usize },
                    if keep_going { " read" } else { "" }
                )),
            "{stderr:#?}"
        );
        let _ = ns.ip(&["route", "flush", "table", "100"]);
    }
}

#[test]
fn a_signal_while_a_stopping_batch_is_read_applies_nothing() {
    let ns = namespace();
    let dir = temp_dir();
    let path = dir.path().join("big.batch");
    let n = 400_000u32;
    let mut text = String::with_capacity(n as usize * 48);
    for i in 0..n {
        text.push_str(&format!(
            "route add {}/32 dev veth0 table 100\n",
            big_dst(i)
        ));
    }
    std::fs::write(&path, text).expect("write");
    let file = path.display().to_string();
    let mut command = netmirror(&["--netns", ns.name(), "batch", &file]);
    command.env("RUST_LOG", "netmirror::batch=debug");
    let monitor = Monitor::start(command, "reading the batch");
    monitor.signal("INT");
    let (status, stdout, stderr) = monitor.finish(Duration::from_secs(60));
    assert_eq!(status.code(), Some(130), "{stdout:?} {stderr:?}");
    let summary = stdout.last().cloned().unwrap_or_default();
    assert!(
        summary.starts_with("0 of ")
            && summary.ends_with(&format!(
                "; interrupted by SIGINT: nothing from {file}:1 on was applied"
            )),
        "{summary}"
    );
    assert!(table_100(&ns).is_empty());
}

/// With `--continue` the lines read when the signal came (a multiple of the chunk size).
fn report_lines_read(stderr: &[String]) -> usize {
    stderr
        .iter()
        .find_map(|line| {
            let rest = line.split(": interrupted by SIGTERM: ").nth(1)?;
            rest.split(" of ").nth(1)?.split(' ').next()?.parse().ok()
        })
        .unwrap_or(0)
}

#[test]
fn closed_or_full_stderr_never_panics_nor_skips_valid_lines() {
    let ns = namespace();
    let dir = temp_dir();
    let path = dir.path().join("mixed.batch");
    let mut text = String::new();
    for i in 0..50 {
        text.push_str(&format!("route add 10.50.{i}.0/24 dev veth0 table 100\n"));
        text.push_str(&format!("bogus line {i}\n"));
    }
    std::fs::write(&path, text).expect("write");
    let file = path.display().to_string();
    let expected: BTreeSet<String> = (0..50).map(|i| format!("10.50.{i}.0/24")).collect();

    // stdout and stderr a pipe whose reader is gone.
    let mut command = netmirror(&["--netns", ns.name(), "batch", "--continue", &file]);
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().expect("spawn");
    drop(child.stdout.take());
    drop(child.stderr.take());
    let status = child.wait().expect("wait");
    assert_eq!(
        status.code(),
        Some(1),
        "lines failed: status 1, not a panic"
    );
    assert_eq!(table_100(&ns), expected);
    ns.ip(&["route", "flush", "table", "100"]).expect("flush");

    // `2>&1 | head -1`, as the issue found it.
    let script = format!(
        "'{}' --netns {} batch --continue '{file}' 2>&1 | head -1; exit ${{PIPESTATUS[0]}}",
        env!("CARGO_BIN_EXE_netmirror"),
        ns.name()
    );
    let run = run({
        let mut command = std::process::Command::new("bash");
        command.args(["-c", &script]);
        command
    });
    assert_eq!(run.code(), 1, "{run:#?}");
    assert_eq!(run.stdout.lines().count(), 1, "{run:#?}");
    assert_eq!(table_100(&ns), expected);
    ns.ip(&["route", "flush", "table", "100"]).expect("flush");

    // stderr on a full device, with and without logs (the log subscriber reported its own
    // write errors with a panicking `eprintln!`).
    for log in [false, true] {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .expect("open /dev/full");
        let mut command = netmirror(&["--netns", ns.name(), "batch", "--continue", &file]);
        if log {
            command.env("RUST_LOG", "debug");
        }
        command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(full);
        let status = command.status().expect("run");
        assert_eq!(status.code(), Some(1), "log: {log}");
        assert_eq!(table_100(&ns), expected);
        ns.ip(&["route", "flush", "table", "100"]).expect("flush");
    }
}

#[test]
fn family_mismatches_are_malformed_lines() {
    let ns = namespace();
    ns.ip(&[
        "-6",
        "addr",
        "add",
        "2001:db8::1/64",
        "dev",
        "veth0",
        "nodad",
    ])
    .expect("ip addr add");
    for line in [
        "route add 10.200.0.24/32 dev veth0 src 2001:db8::1",
        "route add 2001:db8:5::/64 dev veth0 src 192.0.2.1",
        "route add 10.200.0.0/24 via 2001:db8::2",
    ] {
        let mut command = netmirror(&["--netns", ns.name(), "batch", "-"]);
        command.env("NO_COLOR", "1");
        let run = crate::support::run_with_input(command, &format!("{line}\n"));
        let stderr = run.fails(1);
        assert!(
            stderr.starts_with(&format!("netmirror: -:1: malformed line `{line}`: the ")),
            "{stderr}"
        );
        assert!(stderr.ends_with("; nothing was applied\n"), "{stderr}");
    }
    let routes = ns.ip(&["route", "show", "table", "all"]).expect("ip route");
    assert!(!routes.contains("10.200.0"), "{routes}");
    assert!(!routes.contains("2001:db8:5::"), "{routes}");
}

#[test]
fn netns_that_is_not_a_namespace_is_refused_at_once() {
    let dir = temp_dir();
    let fifo = dir.path().join("fifo");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo");
    assert!(status.success());
    let fifo = fifo.display().to_string();
    for args in [
        vec!["--netns", &fifo, "link"],
        vec!["--netns", &fifo, "monitor"],
        vec!["--netns", "/proc/self/ns/mnt", "route"],
    ] {
        let run = nm(&args);
        let stderr = run.fails(1);
        assert!(
            stderr.ends_with(" is not a network namespace\n"),
            "{stderr}"
        );
    }
}

#[test]
fn monitors_end_on_signals_with_a_last_line() {
    let ns = namespace();
    for (signal, json) in [("INT", false), ("TERM", true)] {
        let mut args = vec!["--netns", ns.name()];
        if json {
            args.push("--json");
        }
        args.push("monitor");
        let mut command = netmirror(&args);
        command.env("RUST_LOG", "netmirror::monitor=debug");
        let monitor = Monitor::start(command, "monitor ready");
        monitor.signal(signal);
        let (status, stdout, stderr) = monitor.finish(Duration::from_secs(10));
        assert_eq!(status.code(), Some(0), "{stdout:?} {stderr:?}");
        let last = stdout.last().cloned().unwrap_or_default();
        if json {
            let value: Value = serde_json::from_str(&last).expect("JSON");
            assert_eq!(
                value,
                serde_json::json!({"object": "monitor", "event": "stopped", "signal": "SIGTERM"})
            );
        } else {
            assert_eq!(last, "[MONITOR] stopped by SIGINT");
        }
    }
}

#[test]
fn a_monitor_reports_its_namespace_deleted() {
    let ns = namespace();
    let mut command = netmirror(&["--netns", ns.name(), "monitor"]);
    command.env("RUST_LOG", "netmirror::monitor=debug");
    let monitor = Monitor::start(command, "monitor ready");
    let status = std::process::Command::new("ip")
        .args(["netns", "delete", ns.name()])
        .status()
        .expect("ip netns delete");
    assert!(status.success());
    let (status, stdout, stderr) = monitor.finish(Duration::from_secs(10));
    assert_eq!(status.code(), Some(1), "{stdout:?} {stderr:?}");
    assert_eq!(
        stdout.last().map(String::as_str),
        Some(format!("[NETNS] deleted: network namespace {}", ns.name()).as_str())
    );
    assert_eq!(
        stderr.last().map(String::as_str),
        Some(format!("netmirror: network namespace {} was deleted", ns.name()).as_str())
    );
}

#[test]
fn the_monitor_forgets_links_that_go() {
    let ns = namespace();
    let mut command = netmirror(&["--netns", ns.name(), "monitor", "link"]);
    command.env("RUST_LOG", "netmirror::monitor=trace");
    let mut monitor = Monitor::start(command, "monitor ready");
    for i in 0..20 {
        let (name, peer) = (format!("tmp{i}a"), format!("tmp{i}b"));
        ns.ip(&["link", "add", &name, "type", "veth", "peer", "name", &peer])
            .expect("ip link add");
        monitor.expect_line(EVENT_TIMEOUT, |line| line.contains(&peer));
        ns.ip(&["link", "del", &name]).expect("ip link del");
    }
    monitor.expect_line(EVENT_TIMEOUT, |line| {
        line.starts_with("[LINK] removed") && line.contains("tmp19a")
    });
    monitor.signal("INT");
    let (status, _, stderr) = monitor.finish(Duration::from_secs(10));
    assert_eq!(status.code(), Some(0));
    // lo, veth0 and veth1 are left: the map holds three names, not 43.
    let last = stderr
        .iter()
        .rfind(|line| line.contains("link name forgotten"))
        .expect("links forgotten");
    assert!(last.contains("n_names=3"), "{last}");
}

/// Links created while the monitor is stopped reach it in one read: a veth pair (whose
/// second end names the first as its `link`) and a bridge with a port (whose `master` names
/// it). Each link's `added` comes before any event about it, each event's `old` is the row
/// last shown, the first end of a veth pair is added with no parent as `ip monitor` shows it,
/// and what the events leave equals `ip -j link show`.
#[test]
fn links_read_in_one_batch_are_added_before_they_change() {
    let ns = namespace();
    let mut command = netmirror(&["--netns", ns.name(), "--json", "monitor", "link"]);
    command.env("RUST_LOG", "netmirror::monitor=debug");
    let mut monitor = Monitor::start(command, "monitor ready");
    let ip_links = || -> Vec<Value> {
        let out = ns.ip(&["-j", "link", "show"]).expect("ip link show");
        serde_json::from_str(&out).expect("ip -j")
    };
    // Each link by index: as ip shows it at the start, then as the events leave it (and
    // then each event's `old` is the row the last one left).
    let mut shown: std::collections::BTreeMap<u64, (Value, bool)> = ip_links()
        .into_iter()
        .map(|link| (link["ifindex"].as_u64().expect("ifindex"), (link, false)))
        .collect();
    let fields =
        |link: &Value| serde_json::json!([link["ifname"], link.get("link"), link.get("master")]);
    monitor.signal("STOP");
    for line in [
        "link add nmb0 type veth peer name nmb1",
        "link add brb type bridge",
        "link set nmb0 master brb",
        "link set nmb1 up",
        "link add nmc0 type veth peer name nmc1",
    ] {
        let args: Vec<&str> = line.split(' ').collect();
        ns.ip(&args).expect(line);
    }
    monitor.signal("CONT");
    let mut n_events = 0;
    let mut first_added = std::collections::BTreeMap::new();
    while let Some(line) = monitor.try_line(Duration::from_secs(2)) {
        n_events += 1;
        let event: Value = serde_json::from_str(&line).expect("monitor JSON");
        let (old, new) = (&event["old"], &event["new"]);
        if !old.is_null() {
            let ifindex = old["ifindex"].as_u64().expect("ifindex");
            let (known, from_monitor) = shown
                .remove(&ifindex)
                .unwrap_or_else(|| panic!("an event about a link not shown yet: {line}"));
            assert!(
                !from_monitor || known == *old,
                "`old` is not the row last shown, {known}: {line}"
            );
        }
        if !new.is_null() {
            if old.is_null() {
                let name = new["ifname"].as_str().expect("ifname").to_owned();
                first_added.entry(name).or_insert_with(|| new.clone());
            }
            let ifindex = new["ifindex"].as_u64().expect("ifindex");
            // An `old` left the map just now.
            assert!(
                shown.insert(ifindex, (new.clone(), true)).is_none(),
                "a link added twice: {line}"
            );
        }
    }
    assert!(n_events >= 5, "only {n_events} events");
    // A veth's first end is announced before its peer exists, with no parent (`IFLA_LINK`
    // 0): `ip monitor` prints it `nmb1@NONE`, `ip -j` a `link` of null; the cache then reads
    // the link again and reports its parent.
    assert_eq!(first_added["nmb1"]["link"], Value::Null, "{first_added:#?}");
    let ours: Vec<Value> = shown.values().map(|(link, _)| fields(link)).collect();
    let theirs: Vec<Value> = ip_links().iter().map(fields).collect();
    assert_eq!(ours, theirs);
}
