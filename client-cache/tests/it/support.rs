//! Helpers shared by the integration tests.

use std::sync::mpsc;
use std::thread;
use std::time::Duration;

/// Runs `f` on its own thread and returns its result; panics when it takes longer than `limit`
/// (the stuck thread is left behind, and the fixtures it holds die with the test process).
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

/// Whether a process with this id exists (zombies included).
pub(crate) fn process_exists(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}
