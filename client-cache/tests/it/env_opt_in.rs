//! The library reads no environment by itself: `NETMIRROR_FATAL_WARNINGS` and
//! `NETMIRROR_CLIENT_DEBUG` apply only once a program opts in with `DebugConfig::from_env()`
//! (the CLI does, and so do the test fixtures). Checked in a child process of this test binary
//! that has both variables set, before and after opting in.

use std::process::Command;

use netmirror_client_cache::{DebugConfig, ObjectCache};

/// Set in the child process.
const CHILD: &str = "NETMIRROR_TEST_ENV_OPT_IN_CHILD";
const NAME: &str = "env_opt_in::the_library_alone_ignores_the_debug_variables";

#[test]
fn the_library_alone_ignores_the_debug_variables() {
    if std::env::var_os(CHILD).is_some() {
        child();
        return;
    }
    let exe = std::env::current_exe().expect("the test binary");
    let output = Command::new(exe)
        .args(["--exact", NAME, "--nocapture", "--test-threads=1"])
        .env(CHILD, "1")
        .env("NETMIRROR_FATAL_WARNINGS", "1")
        .env("NETMIRROR_CLIENT_DEBUG", "trace,warning,error")
        .output()
        .expect("run the child");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "child failed: {output:?}");
    assert!(
        stdout.contains("1 passed"),
        "the child ran the test: {stdout}"
    );
}

/// In a process with both variables set and nothing installed yet.
fn child() {
    assert_eq!(DebugConfig::process_default(), DebugConfig::default());
    let builder = format!("{:?}", ObjectCache::builder("org.example.Service"));
    assert!(
        builder.contains("fatal: false") && builder.contains("trace: false"),
        "a library user's cache is not put in fatal mode by the environment: {builder}"
    );
    // Opting in, as the CLI and the fixtures do.
    let env = DebugConfig::from_env();
    assert!(
        env.fatal && env.trace && env.warning && env.error,
        "{env:?}"
    );
    DebugConfig::set_process_default(env);
    assert_eq!(DebugConfig::process_default(), env);
    let builder = format!("{:?}", ObjectCache::builder("org.example.Service"));
    assert!(builder.contains("fatal: true"), "{builder}");
    // A builder's own setting still wins.
    let builder = format!(
        "{:?}",
        ObjectCache::builder("org.example.Service").debug(DebugConfig::tolerant())
    );
    assert!(builder.contains("fatal: false"), "{builder}");
}
