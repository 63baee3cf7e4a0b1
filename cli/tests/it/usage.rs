//! Usage errors, help, completions and the broken pipe: what needs no root and no daemon.

use std::process::Stdio;

use crate::support::{netmirror, nm, run};

#[test]
fn help_shows_an_example_per_subcommand() {
    let help = nm(&["--help"]);
    let text = help.ok();
    for command in [
        "link",
        "addr",
        "route",
        "rule",
        "monitor",
        "batch",
        "nm device",
        "objects",
    ] {
        assert!(
            text.contains(&format!("netmirror {command}")),
            "no example of {command}:\n{text}"
        );
    }
    for command in [
        "link", "addr", "rule", "route", "monitor", "batch", "nm", "objects",
    ] {
        let help = nm(&[command, "--help"]);
        assert!(
            help.ok().contains("Example"),
            "`{command} --help` has no example:\n{}",
            help.stdout
        );
    }
}

#[test]
fn unknown_subcommand_is_a_usage_error() {
    let stderr = nm(&["frobnicate"]).fails(2).to_owned();
    assert!(
        stderr.contains("unrecognized subcommand 'frobnicate'"),
        "{stderr}"
    );
}

#[test]
fn bad_selector_is_a_usage_error() {
    let stderr = nm(&["route", "show", "table"]).fails(2).to_owned();
    assert!(stderr.contains("`table` needs a value"), "{stderr}");
    let stderr = nm(&["route", "show", "cloned"]).fails(2).to_owned();
    assert!(
        stderr.contains("unknown route selector `cloned`"),
        "{stderr}"
    );
    let stderr = nm(&["route", "show", "realms", "/9"]).fails(2).to_owned();
    assert!(stderr.contains("`/9` is not a realm"), "{stderr}");
    let stderr = nm(&["addr", "show", "dev"]).fails(2).to_owned();
    assert!(stderr.contains("`dev` needs a value"), "{stderr}");
    let stderr = nm(&["link", "show", "eth0", "eth1"]).fails(2).to_owned();
    assert!(stderr.contains("unknown link selector `eth1`"), "{stderr}");
}

#[test]
fn bad_bus_is_a_usage_error() {
    let stderr = nm(&["nm", "--bus", "nowhere", "general"])
        .fails(2)
        .to_owned();
    assert!(
        stderr.contains("expected `system`, `session` or a D-Bus address"),
        "{stderr}"
    );
}

#[test]
fn json_and_terse_together_is_a_usage_error() {
    nm(&["--json", "--terse", "link"]).fails(2);
}

#[test]
fn completions_for_each_shell() {
    for shell in ["bash", "zsh", "fish"] {
        let run = nm(&["completions", shell]);
        assert!(run.ok().contains("netmirror"), "{shell}: {run:#?}");
    }
}

#[test]
fn broken_pipe_exits_quietly_with_zero() {
    let mut command = netmirror(&["completions", "bash"]);
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = command.spawn().expect("spawn");
    // Close the reading end before the child writes anything.
    drop(child.stdout.take());
    let output = child.wait_with_output().expect("wait");
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert!(
        output.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn version() {
    let run = run(netmirror(&["--version"]));
    assert!(run.ok().starts_with("netmirror "), "{run:#?}");
}
