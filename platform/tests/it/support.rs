//! Helpers shared by the integration tests.

use std::sync::mpsc;
use std::thread;
use std::time::Duration;

/// Runs `f` on its own thread and returns its result; panics when it takes longer than `limit`.
#[track_caller]
pub(crate) fn bounded<T: Send + 'static>(
    limit: Duration,
    f: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (done, result) = mpsc::channel();
    let worker = thread::spawn(move || {
        let _ = done.send(f());
    });
    match result.recv_timeout(limit) {
        Ok(value) => value,
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("the test took longer than {limit:?}"),
        // The worker panicked: re-raise its panic with its own message.
        Err(mpsc::RecvTimeoutError::Disconnected) => match worker.join() {
            Err(panic) => std::panic::resume_unwind(panic),
            Ok(()) => panic!("the test's worker ended without a result"),
        },
    }
}

/// The names `ip netns list` shows.
pub(crate) fn netns_names() -> Vec<String> {
    let output = std::process::Command::new("ip")
        .args(["netns", "list"])
        .output()
        .expect("run ip netns list");
    assert!(output.status.success(), "{output:?}");
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .map(str::to_owned)
        .collect()
}
