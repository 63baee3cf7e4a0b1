//! A progress indicator on stderr for loads that take more than a second.
//!
//! It appears only when stderr is a terminal and the load is still running after one second,
//! so quick commands and scripts never see it. Dropping the [`Progress`] guard stops it and
//! erases its line.

use std::io::{IsTerminal, Write};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long a load runs before the indicator appears.
const DELAY: Duration = Duration::from_secs(1);
/// How often the spinner turns.
const TICK: Duration = Duration::from_millis(100);

/// A running indicator; dropping it stops it.
pub(crate) struct Progress {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Progress {
    /// Starts an indicator with this message, if stderr is a terminal.
    pub(crate) fn start(message: &str) -> Progress {
        if !std::io::stderr().is_terminal() {
            return Progress {
                stop: None,
                thread: None,
            };
        }
        let (stop, stopped) = mpsc::channel::<()>();
        let message = message.to_owned();
        let thread = std::thread::Builder::new()
            .name("progress".to_owned())
            .spawn(move || spin(&message, &stopped))
            .ok();
        Progress {
            stop: Some(stop),
            thread,
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        // Dropping the sender wakes the thread, which erases its line if it drew one.
        self.stop.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Waits [`DELAY`], then draws a spinner and the elapsed time until told to stop.
fn spin(message: &str, stopped: &mpsc::Receiver<()>) {
    const FRAMES: [char; 4] = ['|', '/', '-', '\\'];
    let started = Instant::now();
    match stopped.recv_timeout(DELAY) {
        Err(RecvTimeoutError::Timeout) => {}
        Ok(()) | Err(RecvTimeoutError::Disconnected) => return,
    }
    let mut stderr = std::io::stderr();
    let mut frame = 0;
    loop {
        let _ = write!(
            stderr,
            "\r{} {message} ({:.1}s)\x1b[K",
            FRAMES[frame % FRAMES.len()],
            started.elapsed().as_secs_f64()
        );
        let _ = stderr.flush();
        frame += 1;
        match stopped.recv_timeout(TICK) {
            Err(RecvTimeoutError::Timeout) => {}
            Ok(()) | Err(RecvTimeoutError::Disconnected) => break,
        }
    }
    let _ = write!(stderr, "\r\x1b[K");
    let _ = stderr.flush();
}
