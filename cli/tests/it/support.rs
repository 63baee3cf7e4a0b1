//! Running the binary with a time limit, feeding it stdin, and reading a monitor's lines.
// The monitor and JSON helpers serve the privileged tests only.
#![cfg_attr(not(feature = "privileged"), allow(dead_code))]

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

/// Longest a one-shot command may run before the test fails.
pub(crate) const TIMEOUT: Duration = Duration::from_secs(60);

/// What a finished run printed, and how it ended.
#[derive(Debug)]
pub(crate) struct Run {
    pub(crate) status: ExitStatus,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

impl Run {
    /// The exit code (a signal is a test failure).
    #[track_caller]
    pub(crate) fn code(&self) -> i32 {
        self.status
            .code()
            .unwrap_or_else(|| panic!("killed by a signal: {self:?}"))
    }

    /// Asserts success and returns stdout.
    #[track_caller]
    pub(crate) fn ok(&self) -> &str {
        assert_eq!(self.code(), 0, "expected success: {self:#?}");
        &self.stdout
    }

    /// Asserts the exit code, that stdout is empty, and that stderr is one line; returns it.
    #[track_caller]
    pub(crate) fn fails(&self, code: i32) -> &str {
        assert_eq!(self.code(), code, "{self:#?}");
        assert!(self.stdout.is_empty(), "stdout of a failure: {self:#?}");
        assert!(!self.stderr.contains("panicked"), "a panic: {self:#?}");
        assert!(!self.stderr.contains("backtrace"), "a backtrace: {self:#?}");
        if code == 1 {
            assert_eq!(self.stderr.lines().count(), 1, "one line: {self:#?}");
        }
        &self.stderr
    }

    /// Parses stdout as JSON.
    #[track_caller]
    pub(crate) fn json(&self) -> serde_json::Value {
        serde_json::from_str(self.ok()).unwrap_or_else(|err| panic!("not JSON ({err}): {self:#?}"))
    }
}

/// The binary, with a clean environment for what it reads.
pub(crate) fn netmirror(args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_netmirror"));
    command
        .args(args)
        .env_remove("RUST_LOG")
        .env("NO_COLOR", "1");
    command
}

/// Runs `command` to its end, with `stdin` as its input, failing the test after [`TIMEOUT`].
#[track_caller]
pub(crate) fn run_with_input(mut command: Command, stdin: &str) -> Run {
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().expect("spawn netmirror");
    let mut input = child.stdin.take().expect("piped stdin");
    let stdin = stdin.to_owned();
    let writer = thread::spawn(move || {
        let _ = input.write_all(stdin.as_bytes());
    });
    let run = wait(child, TIMEOUT);
    let _ = writer.join();
    run
}

/// Runs `command` to its end with no input.
#[track_caller]
pub(crate) fn run(command: Command) -> Run {
    run_with_input(command, "")
}

/// Runs `netmirror ARGS...` to its end.
#[track_caller]
pub(crate) fn nm(args: &[&str]) -> Run {
    run(netmirror(args))
}

/// Waits for `child` and collects its output, killing it after `timeout`.
#[track_caller]
fn wait(mut child: Child, timeout: Duration) -> Run {
    let stdout = child.stdout.take().expect("piped stdout");
    let stderr = child.stderr.take().expect("piped stderr");
    let read_all = |mut pipe: Box<dyn std::io::Read + Send>| {
        thread::spawn(move || {
            let mut text = String::new();
            let _ = pipe.read_to_string(&mut text);
            text
        })
    };
    let stdout = read_all(Box::new(stdout));
    let stderr = read_all(Box::new(stderr));
    let deadline = Instant::now() + timeout;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("netmirror ran for more than {timeout:?}");
        }
        thread::sleep(Duration::from_millis(10));
    };
    Run {
        status,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    }
}

/// A running monitor whose stdout and stderr lines arrive on channels; killed on drop.
pub(crate) struct Monitor {
    child: Child,
    lines: mpsc::Receiver<String>,
    log: mpsc::Receiver<String>,
}

/// Asserts that the lines `ours` are `theirs` (`ip`'s), word for word, but for counts of
/// seconds (`valid_lft 2999sec`) within `slack` of each other: lifetimes count down between
/// the two reads.
pub(crate) fn assert_lines_but_lifetimes(ours: &[String], theirs: &[String], slack: i64) {
    let secs = |word: &str| word.strip_suffix("sec")?.parse::<i64>().ok();
    assert_eq!(ours.len(), theirs.len(), "{ours:#?}\n{theirs:#?}");
    for (ours, theirs) in ours.iter().zip(theirs) {
        let (a, b): (Vec<&str>, Vec<&str>) =
            (ours.split(' ').collect(), theirs.split(' ').collect());
        let same = a.len() == b.len()
            && a.iter().zip(&b).all(|(a, b)| {
                a == b || matches!((secs(a), secs(b)), (Some(a), Some(b)) if (a - b).abs() <= slack)
            });
        assert!(same, "ours: {ours}\nip:   {theirs}");
    }
}

/// Sends each line of `pipe` to a channel, from a thread of its own.
pub(crate) fn lines_of(pipe: impl std::io::Read + Send + 'static) -> mpsc::Receiver<String> {
    let (send, lines) = mpsc::channel();
    thread::spawn(move || {
        for line in BufReader::new(pipe).lines() {
            let Ok(line) = line else { break };
            if send.send(line).is_err() {
                break;
            }
        }
    });
    lines
}

impl Monitor {
    /// Starts `command` with stdout and stderr piped, and waits (bounded) until its log says
    /// `ready` (the command is run with `RUST_LOG` set so that it does): events caused after
    /// this are seen.
    #[track_caller]
    pub(crate) fn start(mut command: Command, ready: &str) -> Monitor {
        command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command.spawn().expect("spawn netmirror monitor");
        let lines = lines_of(child.stdout.take().expect("piped stdout"));
        let log = lines_of(child.stderr.take().expect("piped stderr"));
        let mut monitor = Monitor { child, lines, log };
        let deadline = Instant::now() + TIMEOUT;
        let mut seen = Vec::new();
        loop {
            match monitor
                .log
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            {
                Ok(line) if line.contains(ready) => break,
                Ok(line) => seen.push(line),
                Err(_) => panic!(
                    "the monitor never logged `{ready}`; exit: {:?}; stderr:\n{}",
                    monitor.child.try_wait(),
                    seen.join("\n")
                ),
            }
        }
        monitor
    }

    /// Waits up to `timeout` for a stdout line that satisfies `wanted` and returns it.
    #[track_caller]
    pub(crate) fn expect_line(
        &mut self,
        timeout: Duration,
        wanted: impl Fn(&str) -> bool,
    ) -> String {
        let deadline = Instant::now() + timeout;
        let mut seen = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) if wanted(&line) => return line,
                Ok(line) => seen.push(line),
                Err(_) => {
                    let log: Vec<String> = self.log.try_iter().collect();
                    panic!(
                        "no wanted line within {timeout:?}; exit: {:?}; lines seen:\n{}\nstderr:\n{}",
                        self.child.try_wait(),
                        seen.join("\n"),
                        log.join("\n")
                    )
                }
            }
        }
    }
}

impl Monitor {
    /// The next stdout line, if one comes within `timeout`.
    pub(crate) fn try_line(&mut self, timeout: Duration) -> Option<String> {
        self.lines.recv_timeout(timeout).ok()
    }

    /// Sends `signal` (`INT`, `TERM`) to the process.
    #[track_caller]
    pub(crate) fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(self.child.id().to_string())
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -{signal} failed");
    }

    /// Waits (bounded) for the process to end; returns how it ended and the stdout and
    /// stderr lines not read yet.
    #[track_caller]
    pub(crate) fn finish(mut self, timeout: Duration) -> (ExitStatus, Vec<String>, Vec<String>) {
        let deadline = Instant::now() + timeout;
        let status = loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                break status;
            }
            assert!(
                Instant::now() < deadline,
                "the process did not end within {timeout:?}"
            );
            thread::sleep(Duration::from_millis(10));
        };
        // The pipes close with the process: the reader threads end.
        let stdout = self.lines.iter().collect();
        let stderr = self.log.iter().collect();
        (status, stdout, stderr)
    }
}

impl Drop for Monitor {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
