//! [`NetworkManagerDaemon`]: the real NetworkManager daemon, sandboxed in network and mount
//! namespaces of its own, on a [`PrivateBus`].

use std::ffi::OsStr;
use std::fs;
use std::io::{self, BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use tempfile::TempDir;

use super::process::{Daemon, STOP_GRACE, command_dying_with_us};
use super::{MARKER, PrivateBus, Profile, benchmark_profiles, fail};

/// NetworkManager's well-known bus name.
pub const NM_BUS_NAME: &str = "org.freedesktop.NetworkManager";

/// Where Debian's `network-manager` installs the daemon.
const NM_PROGRAM: &str = "/usr/sbin/NetworkManager";

/// How long the daemon gets by default to appear on the bus.
const DEFAULT_START_TIMEOUT: Duration = Duration::from_secs(60);

/// The host paths that get a private tmpfs in the sandbox's mount namespace, so that the daemon
/// neither sees nor changes the host's NetworkManager state (nor the host's system bus socket).
const HIDDEN_HOST_PATHS: &[&str] = &["/run", "/var/lib/NetworkManager", "/etc/NetworkManager"];

/// Runs in the sandbox's fresh network and mount namespaces, and keeps them alive: mounts a
/// sysfs of the new network namespace (`$1` is its mount option: `ro` when the daemon is to
/// manage devices, see [`NetworkManagerBuilder::manage_devices`]) and tmpfs over the host's
/// state, brings `lo` up, says
/// `ready`, then waits for its stdin to close (the fixture dropped, or the test process died).
/// `$0` is the sandbox dir, so its path (and the marker in it) shows in the command line.
/// `$1` is the sysfs mount's options: `ro` makes the daemon manage the links itself (without
/// udev, a read-only `/sys` tells it that no udev will come), `rw` leaves them unmanaged.
const HOLDER_SCRIPT: &str = r#"set -e
mount -t sysfs -o "$1" netmirror-test-sysfs /sys
for dir in /run /var/lib/NetworkManager /etc/NetworkManager; do
  mkdir -p "$dir"
  mount -t tmpfs -o mode=0755 netmirror-test-tmpfs "$dir"
done
mkdir -p /run/NetworkManager
ip link set lo up
echo ready
read -r _ || true
"#;

/// The real NetworkManager daemon (`/usr/sbin/NetworkManager`) in a sandbox, on a private bus.
///
/// The sandbox is a fresh network namespace (the daemon sees only the links made in it) and a
/// private mount namespace with tmpfs over `/run`, `/var/lib/NetworkManager` and
/// `/etc/NetworkManager`; the daemon's configuration (`auth-polkit=false`, `dns=none`,
/// `no-auto-default=*`, no connectivity checks, no hostname changes), state and keyfile
/// directory live in a temp dir whose path contains `netmirror-test`. It never touches the
/// host's network or NetworkManager state. Keyfile profiles can be seeded before it starts.
///
/// Both namespaces are held by a small `sh` process, so they survive a [`stop`] and
/// [`start_again`] of the daemon, as the links in them do. On drop the daemon gets `SIGTERM`
/// (then `SIGKILL`), the namespace holder exits, and the bus and the temp dir go. If the test
/// process dies without unwinding, the kernel kills the daemon, the holder and the bus
/// (`setpriv --pdeathsig KILL`), and the namespaces vanish with their last process.
///
/// Needs root (namespaces, mounts) and Debian's `network-manager`, `dbus-daemon`, `iproute2`,
/// `util-linux` and `systemd` (for `busctl`) packages.
///
/// ```no_run
/// use netmirror_client_cache::testing::NetworkManagerDaemon;
///
/// let nm = NetworkManagerDaemon::builder().seed_benchmark_profiles(551).start()?;
/// let names = nm.nmcli().args(["-t", "-f", "NAME", "connection", "show"]).output()?;
/// assert_eq!(String::from_utf8_lossy(&names.stdout).lines().count(), 551);
/// // Give the daemon a link to manage, inside its namespace:
/// let status = nm
///     .netns_command("ip")
///     .args(["link", "add", "veth0", "type", "veth", "peer", "name", "veth1"])
///     .status()?;
/// assert!(status.success());
/// # Ok::<(), std::io::Error>(())
/// ```
///
/// [`stop`]: NetworkManagerDaemon::stop
/// [`start_again`]: NetworkManagerDaemon::start_again
#[derive(Debug)]
pub struct NetworkManagerDaemon {
    // Field order is drop order: the daemon, then the namespaces, then the bus, then the dir.
    daemon: Option<Daemon>,
    holder: Daemon,
    bus: PrivateBus,
    dir: TempDir,
    profiles: Vec<Profile>,
    start_timeout: Duration,
}

/// Configures a [`NetworkManagerDaemon`] before it starts: its profiles, extra configuration
/// and start timeout.
#[derive(Debug, Clone)]
#[must_use = "a builder does nothing until `start` is called"]
pub struct NetworkManagerBuilder {
    profiles: Vec<Profile>,
    extra_config: String,
    start_timeout: Duration,
    manage_devices: bool,
}

impl Default for NetworkManagerBuilder {
    fn default() -> Self {
        Self {
            profiles: Vec::new(),
            extra_config: String::new(),
            start_timeout: DEFAULT_START_TIMEOUT,
            manage_devices: false,
        }
    }
}

impl NetworkManagerBuilder {
    /// Seeds the first `n_profiles` profiles of the benchmark's shape ([`benchmark_profiles`]):
    /// 30 bonds and their 465 VLANs, then bridges and Ethernet profiles.
    pub fn seed_benchmark_profiles(mut self, n_profiles: usize) -> Self {
        self.profiles.extend(benchmark_profiles(n_profiles));
        self
    }

    /// Seeds one profile.
    pub fn profile(mut self, profile: Profile) -> Self {
        self.profiles.push(profile);
        self
    }

    /// Seeds several profiles.
    pub fn profiles(mut self, profiles: impl IntoIterator<Item = Profile>) -> Self {
        self.profiles.extend(profiles);
        self
    }

    /// Adds a snippet to the daemon's configuration (written to its `conf.d`), for example
    /// `"[logging]\nlevel=TRACE\n"`.
    pub fn config(mut self, snippet: &str) -> Self {
        self.extra_config.push_str(snippet);
        self.extra_config.push('\n');
        self
    }

    /// Lets the daemon manage the links made in the sandbox (veth, bridge), so that profiles
    /// can be activated on them: `/sys` is mounted read-only, which tells NetworkManager that
    /// no udev will come (as `nm-sandbox.sh` does). Without it, links stay unmanaged.
    pub fn manage_devices(mut self) -> Self {
        self.manage_devices = true;
        self
    }

    /// How long the daemon may take to appear on the bus (60 s unless set).
    pub fn start_timeout(mut self, timeout: Duration) -> Self {
        self.start_timeout = timeout;
        self
    }

    /// Writes the profiles, starts the bus, the sandbox and the daemon, and returns once the
    /// daemon serves: it owns `org.freedesktop.NetworkManager` on the bus and has answered a
    /// call on its main loop. (It takes its name before it loads its profiles and makes their
    /// devices; the answer means that startup work is done, some seconds for hundreds of
    /// profiles.)
    pub fn start(self) -> io::Result<NetworkManagerDaemon> {
        NetworkManagerDaemon::start_with(self)
    }
}

impl NetworkManagerDaemon {
    /// A builder, to seed profiles or add configuration before the daemon starts.
    pub fn builder() -> NetworkManagerBuilder {
        NetworkManagerBuilder::default()
    }

    /// Starts a daemon without profiles.
    pub fn start() -> io::Result<Self> {
        Self::builder().start()
    }

    fn start_with(builder: NetworkManagerBuilder) -> io::Result<Self> {
        let started = Instant::now();
        // As for `PrivateBus`: tests honour the debug and fatal-mode variables.
        crate::DebugConfig::set_process_default(crate::DebugConfig::from_env());
        let dir = tempfile::Builder::new()
            .prefix(&format!("{MARKER}-nm-"))
            .tempdir()?;
        if let Some(hidden) = HIDDEN_HOST_PATHS
            .iter()
            .find(|hidden| dir.path().starts_with(hidden))
        {
            return Err(fail(format!(
                "the temp dir {} is under {hidden}, which the sandbox hides: set TMPDIR elsewhere",
                dir.path().display()
            )));
        }
        for sub in ["conf.d", "sysconf.d", "keyfiles"] {
            fs::create_dir(dir.path().join(sub))?;
        }
        let keyfiles = dir.path().join("keyfiles");
        fs::write(dir.path().join("NetworkManager.conf"), nm_config(&keyfiles))?;
        if !builder.extra_config.is_empty() {
            fs::write(
                dir.path().join("conf.d").join("50-test.conf"),
                &builder.extra_config,
            )?;
        }
        for profile in &builder.profiles {
            profile.write_keyfile(&keyfiles)?;
        }

        let bus = PrivateBus::start()?;
        let holder = start_namespace_holder(dir.path(), builder.manage_devices)?;
        let mut nm = Self {
            daemon: None,
            holder,
            bus,
            dir,
            profiles: builder.profiles,
            start_timeout: builder.start_timeout,
        };
        nm.start_again()?;
        tracing::debug!(
            n_profiles = nm.profiles.len(),
            elapsed = ?started.elapsed(),
            "sandboxed NetworkManager started"
        );
        Ok(nm)
    }

    /// The private bus the daemon is on.
    pub fn bus(&self) -> &PrivateBus {
        &self.bus
    }

    /// The private bus's address, for a client's connection builder.
    pub fn bus_address(&self) -> &str {
        self.bus.address()
    }

    /// The profiles seeded before the start, in the order they were given.
    pub fn seeded_profiles(&self) -> &[Profile] {
        &self.profiles
    }

    /// The keyfile directory the daemon reads and writes profiles in.
    pub fn keyfile_dir(&self) -> PathBuf {
        self.dir.path().join("keyfiles")
    }

    /// The sandbox's temp dir (configuration, state, keyfiles, logs).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// An `nmcli` command that talks to this daemon (its system bus is the private bus).
    pub fn nmcli(&self) -> Command {
        self.bus.command("nmcli")
    }

    /// A command for `program` inside the sandbox's network and mount namespaces (with
    /// `nsenter`), e.g. `ip link add …` to give the daemon links to see.
    pub fn netns_command(&self, program: impl AsRef<OsStr>) -> Command {
        let mut command = self.bus.command("nsenter");
        command
            .arg(format!("--target={}", self.holder.pid()))
            .args(["--net", "--mount", "--"])
            .arg(program)
            .current_dir("/");
        command
    }

    /// The sandbox's network namespace as a path (`/proc/<pid>/ns/net`), valid while `self` lives.
    pub fn netns_path(&self) -> PathBuf {
        PathBuf::from(format!("/proc/{}/ns/net", self.holder.pid()))
    }

    /// The daemon's process id while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.daemon.as_ref().map(Daemon::pid)
    }

    /// Whether the daemon process runs (it may have crashed, or been stopped).
    pub fn is_running(&mut self) -> io::Result<bool> {
        match &mut self.daemon {
            Some(daemon) => Ok(daemon.exit_status()?.is_none()),
            None => Ok(false),
        }
    }

    /// The daemon's log so far (its stderr, all runs).
    pub fn log(&self) -> String {
        fs::read_to_string(self.dir.path().join("NetworkManager.log")).unwrap_or_default()
    }

    /// Stops the daemon (`SIGTERM`, then `SIGKILL` after 10 s) and waits until its name has left
    /// the bus. The sandbox, its links, the bus and the profiles stay. Does nothing when stopped.
    pub fn stop(&mut self) -> io::Result<()> {
        let Some(mut daemon) = self.daemon.take() else {
            return Ok(());
        };
        let status = daemon.stop(STOP_GRACE)?;
        tracing::debug!(%status, "sandboxed NetworkManager stopped");
        self.bus
            .wait_for_name(NM_BUS_NAME, false, self.start_timeout, || Ok(()))
    }

    /// Starts the daemon again after [`stop`](Self::stop) (or a crash), in the same sandbox and
    /// on the same bus, and waits until it serves (see [`NetworkManagerBuilder::start`]). Stops
    /// it first when it runs.
    pub fn start_again(&mut self) -> io::Result<()> {
        self.stop()?;
        let started = Instant::now();
        let dir = self.dir.path();
        let log = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join("NetworkManager.log"))?;
        let mut command = command_dying_with_us("nsenter");
        command
            .arg(format!("--target={}", self.holder.pid()))
            .args(["--net", "--mount", "--", NM_PROGRAM, "--debug"])
            .arg(path_arg("--config", &dir.join("NetworkManager.conf")))
            .arg(path_arg("--config-dir", &dir.join("conf.d")))
            .arg(path_arg("--system-config-dir", &dir.join("sysconf.d")))
            .arg(path_arg("--intern-config", &dir.join("intern.conf")))
            .arg(path_arg("--state-file", &dir.join("NetworkManager.state")))
            .arg(path_arg("--pid-file", &dir.join("NetworkManager.pid")))
            .env("DBUS_SYSTEM_BUS_ADDRESS", self.bus.address())
            .env_remove("DBUS_SESSION_BUS_ADDRESS")
            .current_dir("/")
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log);
        let daemon = self
            .daemon
            .insert(Daemon::spawn("NetworkManager", command)?);
        let log_path = dir.join("NetworkManager.log");
        let appeared = self
            .bus
            .wait_for_name(NM_BUS_NAME, true, self.start_timeout, || {
                match daemon.exit_status()? {
                    None => Ok(()),
                    Some(status) => Err(fail(format!(
                        "NetworkManager exited ({status}) before it appeared on the bus"
                    ))),
                }
            })
            .and_then(|()| self.wait_until_serving(started));
        if let Err(err) = appeared {
            // Dropping it stops it.
            self.daemon = None;
            return Err(io::Error::new(
                err.kind(),
                format!(
                    "{err}\nNetworkManager's log ends with:\n{}",
                    log_tail(&log_path)
                ),
            ));
        }
        tracing::debug!(elapsed = ?started.elapsed(), "NetworkManager serves");
        Ok(())
    }

    /// Waits until the daemon answers a call on its main loop. It claims its name before it
    /// loads its profiles and makes a device for each, all on its main loop: a call answered
    /// there means that work is done, and a client sees the whole, settled state.
    fn wait_until_serving(&self, started: Instant) -> io::Result<()> {
        // NetworkManager may own its name a moment before it exports its manager object: the
        // call then fails at once with "Object does not exist"; ask again until the deadline.
        loop {
            let remaining = self
                .start_timeout
                .saturating_sub(started.elapsed())
                .max(Duration::from_secs(1));
            let output = self
                .bus
                .command("busctl")
                .arg("--system")
                .arg(format!("--timeout={}", remaining.as_secs().max(1)))
                .args([
                    "get-property",
                    NM_BUS_NAME,
                    "/org/freedesktop/NetworkManager",
                    "org.freedesktop.NetworkManager",
                    "Version",
                ])
                .stdin(Stdio::null())
                .output()?;
            if output.status.success() {
                return Ok(());
            }
            if started.elapsed() >= self.start_timeout {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!(
                        "NetworkManager took its name but did not answer within {:?}: {}",
                        self.start_timeout,
                        String::from_utf8_lossy(&output.stderr).trim()
                    ),
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// The daemon's main configuration: the keyfile plugin on a private directory, no polkit, no DNS
/// or hostname handling, no automatic profiles, no connectivity checks.
fn nm_config(keyfiles: &Path) -> String {
    format!(
        "[main]\nplugins=keyfile\nauth-polkit=false\ndns=none\nrc-manager=unmanaged\n\
         no-auto-default=*\nhostname-mode=none\nsystemd-resolved=false\n\n\
         [keyfile]\npath={}\n\n[connectivity]\nenabled=false\n",
        keyfiles.display()
    )
}

/// Starts the process that makes and holds the sandbox's namespaces, once they are set up.
fn start_namespace_holder(dir: &Path, manage_devices: bool) -> io::Result<Daemon> {
    let log = fs::File::create(dir.join("namespaces.log"))?;
    let mut command = command_dying_with_us("unshare");
    command
        .args([
            "--net",
            "--mount",
            "--propagation=private",
            "--",
            "/bin/sh",
            "-c",
        ])
        .arg(HOLDER_SCRIPT)
        .arg(dir)
        .arg(if manage_devices { "ro" } else { "rw" })
        .current_dir("/")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(log);
    let mut holder = Daemon::spawn("the sandbox's namespace holder", command)?;
    let stdout = holder
        .stdout()
        .ok_or_else(|| io::Error::other("the namespace holder's stdout is not piped"))?;
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line)?;
    if line.trim() != "ready" {
        let log = fs::read_to_string(dir.join("namespaces.log")).unwrap_or_default();
        return Err(fail(format!(
            "cannot make the sandbox's namespaces (root needed): {}",
            log.trim()
        )));
    }
    Ok(holder)
}

/// `--name=path`.
fn path_arg(name: &str, path: &Path) -> String {
    format!("{name}={}", path.display())
}

/// The last lines of a log file.
fn log_tail(path: &Path) -> String {
    let text = fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(30)..].join("\n")
}
