//! Child processes of the fixtures, tied to the test process's lifetime.
//!
//! A fixture's daemon must not outlive the test that made it, also when the test process dies
//! without unwinding (a `SIGKILL`, an abort). Every daemon is therefore started through
//! `setpriv --pdeathsig KILL`, which asks the kernel to kill it when its parent dies. The kernel
//! counts the *thread* that forked as the parent, so daemons are forked by one spawner thread
//! that lives as long as the process, not by the (short-lived) test thread that asked.

use std::ffi::OsStr;
use std::io;
use std::process::{Child, Command, ExitStatus};
use std::sync::mpsc;
use std::sync::{Mutex, OnceLock};
use std::thread;
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal};

/// How often the fixtures poll for a state they wait for.
pub(crate) const POLL_INTERVAL: Duration = Duration::from_millis(20);

/// How long a daemon may take to exit after `SIGTERM` before it gets `SIGKILL`.
pub(crate) const STOP_GRACE: Duration = Duration::from_secs(10);

/// A request to the spawner thread: a command, and where to send the started child.
type SpawnRequest = (Command, mpsc::Sender<io::Result<Child>>);

/// A `Command` that runs `program` under `setpriv --pdeathsig KILL`: the kernel kills it when
/// the test process dies. Add arguments, environment and stdio, then [`Daemon::spawn`] it.
pub(crate) fn command_dying_with_us(program: impl AsRef<OsStr>) -> Command {
    let mut command = Command::new("setpriv");
    command.args(["--pdeathsig", "KILL", "--"]).arg(program);
    command
}

/// A daemon started by a fixture: stopped (`SIGTERM`, then `SIGKILL`) and reaped on drop.
#[derive(Debug)]
pub(crate) struct Daemon {
    child: Child,
    what: &'static str,
    exit: Option<ExitStatus>,
}

impl Daemon {
    /// Starts `command` (made by [`command_dying_with_us`]) from the spawner thread.
    pub(crate) fn spawn(what: &'static str, command: Command) -> io::Result<Self> {
        let child = spawn_from_long_lived_thread(command)
            .map_err(|err| io::Error::new(err.kind(), format!("cannot start {what}: {err}")))?;
        tracing::debug!(pid = child.id(), what, "fixture daemon started");
        Ok(Self {
            child,
            what,
            exit: None,
        })
    }

    /// The daemon's process id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The child's standard output, when it was piped.
    pub(crate) fn stdout(&mut self) -> Option<std::process::ChildStdout> {
        self.child.stdout.take()
    }

    /// How the daemon exited, or `None` while it runs.
    pub(crate) fn exit_status(&mut self) -> io::Result<Option<ExitStatus>> {
        if self.exit.is_none() {
            self.exit = self.child.try_wait()?;
        }
        Ok(self.exit)
    }

    /// Sends `SIGTERM`, waits up to `grace` for the daemon to exit, then sends `SIGKILL`; reaps it.
    pub(crate) fn stop(&mut self, grace: Duration) -> io::Result<ExitStatus> {
        if let Some(status) = self.exit_status()? {
            return Ok(status);
        }
        if let Some(pid) = i32::try_from(self.child.id()).ok().and_then(Pid::from_raw) {
            // It may have exited since `try_wait`: an error here only means it is gone already.
            let _ = rustix::process::kill_process(pid, Signal::TERM);
        }
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if let Some(status) = self.exit_status()? {
                return Ok(status);
            }
            thread::sleep(POLL_INTERVAL);
        }
        tracing::warn!(
            pid = self.child.id(),
            what = self.what,
            "fixture daemon ignored SIGTERM, killing it"
        );
        self.kill()
    }

    /// Sends `SIGKILL` and reaps the daemon.
    pub(crate) fn kill(&mut self) -> io::Result<ExitStatus> {
        if let Some(status) = self.exit_status()? {
            return Ok(status);
        }
        // `kill` fails only when the child was reaped already, which `exit_status` rules out.
        self.child.kill()?;
        let status = self.child.wait()?;
        self.exit = Some(status);
        Ok(status)
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Err(err) = self.stop(STOP_GRACE) {
            tracing::warn!(pid = self.child.id(), what = self.what, %err, "cannot stop fixture daemon");
        }
    }
}

/// Spawns `command` from the process-wide spawner thread, so that `--pdeathsig` fires when the
/// process dies rather than when the calling thread ends.
fn spawn_from_long_lived_thread(command: Command) -> io::Result<Child> {
    static SPAWNER: OnceLock<Mutex<mpsc::Sender<SpawnRequest>>> = OnceLock::new();
    let spawner = SPAWNER.get_or_init(|| {
        let (requests, incoming) = mpsc::channel::<SpawnRequest>();
        let started = thread::Builder::new()
            .name("netmirror-test-spawner".into())
            .spawn(move || {
                for (mut command, reply) in incoming {
                    // The asker may have given up (panicked): nobody to tell then.
                    let _ = reply.send(command.spawn());
                }
            });
        if let Err(err) = started {
            tracing::error!(%err, "cannot start the fixtures' spawner thread");
        }
        Mutex::new(requests)
    });
    let (reply, answer) = mpsc::channel();
    spawner
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .send((command, reply))
        .map_err(|_| io::Error::other("the fixtures' spawner thread is gone"))?;
    answer
        .recv()
        .map_err(|_| io::Error::other("the fixtures' spawner thread is gone"))?
}
