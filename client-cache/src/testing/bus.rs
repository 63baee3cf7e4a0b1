//! [`PrivateBus`]: a `dbus-daemon` of the test's own, configured like the system bus but
//! permissive, on a socket in a temp dir.

use std::fs;
use std::io::{self, BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use tempfile::TempDir;

use super::process::{Daemon, POLL_INTERVAL, command_dying_with_us};
use super::{MARKER, fail};

/// A private `dbus-daemon`: a bus of the test's own, which nothing else on the machine uses.
///
/// It runs with a system-bus-like configuration (`<type>system</type>`, `EXTERNAL` auth) that
/// lets every user own every name and send and receive every message, and with limits raised
/// for large services. Its socket lives in a temp dir whose path contains `netmirror-test`.
/// The daemon is killed and the dir removed on drop; the daemon also dies with the test process.
///
/// ```no_run
/// use netmirror_client_cache::testing::PrivateBus;
///
/// let bus = PrivateBus::start()?;
/// // Hand `bus.address()` to zbus's connection builder, or run a tool against the bus:
/// let status = bus.command("busctl").arg("--system").arg("list").status()?;
/// assert!(status.success());
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct PrivateBus {
    // Field order is drop order: the daemon dies before its dir goes.
    daemon: Daemon,
    address: String,
    socket: PathBuf,
    dir: TempDir,
}

/// Options of a [`PrivateBus`]: a policy that lets anyone send replies nobody asked for (to
/// test that a client checks who answers), other limits.
#[derive(Debug, Clone, Default)]
pub struct PrivateBusBuilder {
    unrequested_replies: bool,
    limits: Vec<(String, u64)>,
}

impl PrivateBusBuilder {
    /// Let every connection send method returns and errors that answer no call it received
    /// (`send_requested_reply="false"`): anyone can then forge a reply to anyone's call, as on
    /// a bus with a careless policy.
    pub fn allow_unrequested_replies(mut self) -> Self {
        self.unrequested_replies = true;
        self
    }

    /// Set one of `dbus-daemon`'s `<limit>`s (`max_outgoing_bytes`, `reply_timeout`, ...).
    pub fn limit(mut self, name: &str, value: u64) -> Self {
        self.limits.push((name.to_owned(), value));
        self
    }

    /// Starts the `dbus-daemon` and returns once it listens.
    pub fn start(self) -> io::Result<PrivateBus> {
        PrivateBus::start_with(&self)
    }
}

impl PrivateBus {
    /// Starts a `dbus-daemon` and returns once it listens.
    ///
    /// Like every fixture of this module, it also makes
    /// [`DebugConfig::from_env`](crate::DebugConfig::from_env) the process default
    /// ([`DebugConfig::set_process_default`](crate::DebugConfig::set_process_default)), so the
    /// caches a test builds honour `NETMIRROR_CLIENT_DEBUG` and `NETMIRROR_FATAL_WARNINGS`.
    pub fn start() -> io::Result<Self> {
        Self::start_with(&PrivateBusBuilder::default())
    }

    /// A bus with options (see [`PrivateBusBuilder`]).
    pub fn builder() -> PrivateBusBuilder {
        PrivateBusBuilder::default()
    }

    fn start_with(options: &PrivateBusBuilder) -> io::Result<Self> {
        // Tests run as CI asks: `NETMIRROR_CLIENT_DEBUG` and `NETMIRROR_FATAL_WARNINGS` apply
        // to the caches they build (the library alone does not read them).
        crate::DebugConfig::set_process_default(crate::DebugConfig::from_env());
        let dir = tempfile::Builder::new()
            .prefix(&format!("{MARKER}-bus-"))
            .tempdir()?;
        let socket = dir.path().join("bus");
        let config = dir.path().join("bus.conf");
        fs::write(&config, bus_config(&socket, options))?;
        let log = fs::File::create(dir.path().join("dbus-daemon.log"))?;

        let mut command = command_dying_with_us("dbus-daemon");
        command
            .arg(format!("--config-file={}", config.display()))
            .args(["--nofork", "--nopidfile", "--nosyslog", "--print-address=1"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(log);
        let mut daemon = Daemon::spawn("dbus-daemon", command)?;

        // The daemon prints its address once it listens, and closes stdout when it fails.
        let stdout = daemon
            .stdout()
            .ok_or_else(|| io::Error::other("dbus-daemon's stdout is not piped"))?;
        let mut printed = String::new();
        BufReader::new(stdout).read_line(&mut printed)?;
        let address = printed.trim().to_owned();
        if address.is_empty() {
            let log = fs::read_to_string(dir.path().join("dbus-daemon.log")).unwrap_or_default();
            return Err(fail(format!(
                "dbus-daemon exited before it listened: {}",
                log.trim()
            )));
        }
        tracing::debug!(%address, pid = daemon.pid(), "private bus started");
        Ok(Self {
            daemon,
            address,
            socket,
            dir,
        })
    }

    /// The bus address, as a client passes it to its connection builder
    /// (`unix:path=/tmp/netmirror-test-bus-…/bus,guid=…`).
    pub fn address(&self) -> &str {
        &self.address
    }

    /// The path of the bus socket.
    pub fn socket_path(&self) -> &Path {
        &self.socket
    }

    /// The temp dir holding the socket, the configuration and the daemon's log.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The `dbus-daemon` process id.
    pub fn pid(&self) -> u32 {
        self.daemon.pid()
    }

    /// A command for `program` whose system and session bus are this bus
    /// (`DBUS_SYSTEM_BUS_ADDRESS` and `DBUS_SESSION_BUS_ADDRESS` set): `nmcli`, `busctl --system`,
    /// `dbus-send --system` and the like then talk to it.
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut command = Command::new(program);
        command
            .env("DBUS_SYSTEM_BUS_ADDRESS", &self.address)
            .env("DBUS_SESSION_BUS_ADDRESS", &self.address);
        command
    }

    /// Whether `name` has an owner on this bus (the bus's `NameHasOwner`, asked with `busctl`).
    pub fn name_has_owner(&self, name: &str) -> io::Result<bool> {
        let output = self
            .command("busctl")
            .args([
                "--system",
                "call",
                "org.freedesktop.DBus",
                "/org/freedesktop/DBus",
                "org.freedesktop.DBus",
                "NameHasOwner",
                "s",
                name,
            ])
            .stdin(Stdio::null())
            .output()?;
        match reply(&output)?.trim() {
            "b true" => Ok(true),
            "b false" => Ok(false),
            other => Err(fail(format!("unexpected NameHasOwner reply `{other}`"))),
        }
    }

    /// Waits until `name` has an owner (`owned`) or has none (`!owned`), for at most `timeout`.
    /// `still_alive` is asked between polls, so a wait for a daemon that died ends at once.
    pub(crate) fn wait_for_name(
        &self,
        name: &str,
        owned: bool,
        timeout: Duration,
        mut still_alive: impl FnMut() -> io::Result<()>,
    ) -> io::Result<()> {
        let deadline = Instant::now() + timeout;
        loop {
            if self.name_has_owner(name)? == owned {
                return Ok(());
            }
            still_alive()?;
            if Instant::now() >= deadline {
                let state = if owned { "appear on" } else { "leave" };
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("{name} did not {state} the private bus within {timeout:?}"),
                ));
            }
            thread::sleep(POLL_INTERVAL);
        }
    }
}

/// A system-bus-like configuration that allows everything.
fn bus_config(socket: &Path, options: &PrivateBusBuilder) -> String {
    let requested = if options.unrequested_replies {
        "false"
    } else {
        "true"
    };
    let mut limits = String::new();
    for (name, value) in &options.limits {
        limits.push_str(&format!("  <limit name=\"{name}\">{value}</limit>\n"));
    }
    format!(
        r#"<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <auth>EXTERNAL</auth>
  <listen>unix:path={socket}</listen>
  <policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <allow send_type="method_call"/>
    <allow send_type="signal"/>
    <allow send_requested_reply="{requested}" send_type="method_return"/>
    <allow send_requested_reply="{requested}" send_type="error"/>
    <allow receive_type="method_call"/>
    <allow receive_requested_reply="{requested}" receive_type="method_return"/>
    <allow receive_requested_reply="{requested}" receive_type="error"/>
    <allow receive_type="signal"/>
  </policy>
  <limit name="max_replies_per_connection">50000</limit>
  <limit name="max_match_rules_per_connection">50000</limit>
  <limit name="max_names_per_connection">50000</limit>
  <limit name="max_connections_per_user">10000</limit>
{limits}</busconfig>
"#,
        socket = socket.display()
    )
}

/// The standard output of a finished `busctl`, or an error with its standard error.
pub(crate) fn reply(output: &Output) -> io::Result<String> {
    if !output.status.success() {
        return Err(fail(format!(
            "busctl failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}
