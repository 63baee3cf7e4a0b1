//! Test fixtures for programs that talk to the kernel's network stack: [`NetNs`], a throwaway
//! network namespace, optionally with veth pairs and addresses, that is deleted on drop.
//!
//! Enabled by the `testing` feature. Needs root (`CAP_SYS_ADMIN` and `CAP_NET_ADMIN`) and
//! `ip` from iproute2. The host's own network namespace is never touched: every link the
//! fixture makes, both ends of a veth pair included, lives in a namespace it made.

use std::ffi::OsStr;
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, BorrowedFd};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::thread;

use rustix::thread::{LinkNameSpaceType, move_into_link_name_space};

/// The prefix of every namespace name the fixture makes; `cargo xtask ci` looks for leftovers
/// with it.
pub const NETNS_PREFIX: &str = "nmx-";

/// Where `ip netns` keeps named network namespaces.
const NETNS_RUN_DIR: &str = "/run/netns";

/// A uniquely named network namespace (`nmx-<pid>-<n>`), with `lo` up, deleted on drop, also
/// when the test panics.
///
/// Run code inside it with [`run`](Self::run) (a closure, on a thread that joined the
/// namespace) or [`command`](Self::command) (`ip netns exec`). Hand it to the code under test by
/// [`name`](Self::name), [`path`](Self::path) or [`fd`](Self::fd).
///
/// If the test process dies without unwinding (`SIGKILL`, abort), its namespaces survive it;
/// the next `NetNs` made on the machine deletes those whose creating process is gone.
///
/// ```no_run
/// use netmirror_platform::testing::{NetNs, Veth};
///
/// let ns = NetNs::builder()
///     .veth(Veth::new("veth0", "veth1").address("192.0.2.1/24").peer_address("192.0.2.2/24"))
///     .start()?;
/// // A socket made inside stays in the namespace.
/// let socket = ns.run(|| std::net::UdpSocket::bind("192.0.2.1:0"))??;
/// let output = ns.command("ip").args(["-o", "addr", "show", "dev", "veth0"]).output()?;
/// assert!(String::from_utf8_lossy(&output.stdout).contains("192.0.2.1/24"));
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct NetNs {
    name: String,
    path: PathBuf,
    file: File,
}

/// Configures a [`NetNs`] before it is made: its veth pairs.
#[derive(Debug, Clone, Default)]
#[must_use = "a builder does nothing until `start` is called"]
pub struct NetNsBuilder {
    veths: Vec<Veth>,
}

/// A veth pair made in a [`NetNs`], both ends up, with addresses. The peer end stays in the
/// same namespace unless [`peer_in`](Self::peer_in) moves it to another one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Veth {
    name: String,
    peer: String,
    peer_netns: Option<String>,
    addresses: Vec<String>,
    peer_addresses: Vec<String>,
}

impl Veth {
    /// A veth pair of the links `name` and `peer`.
    pub fn new(name: &str, peer: &str) -> Self {
        Self {
            name: name.to_owned(),
            peer: peer.to_owned(),
            peer_netns: None,
            addresses: Vec::new(),
            peer_addresses: Vec::new(),
        }
    }

    /// Adds an address in CIDR notation (`192.0.2.1/24`, `2001:db8::1/64`) to the first end.
    /// IPv6 addresses skip duplicate address detection, so they are usable at once.
    pub fn address(mut self, cidr: &str) -> Self {
        self.addresses.push(cidr.to_owned());
        self
    }

    /// Adds an address in CIDR notation to the peer end.
    pub fn peer_address(mut self, cidr: &str) -> Self {
        self.peer_addresses.push(cidr.to_owned());
        self
    }

    /// Puts the peer end in `other` (another fixture namespace) instead, so that the two
    /// namespaces are linked.
    pub fn peer_in(mut self, other: &NetNs) -> Self {
        self.peer_netns = Some(other.name.clone());
        self
    }

    /// The first end's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The peer end's name.
    pub fn peer(&self) -> &str {
        &self.peer
    }
}

impl NetNsBuilder {
    /// Adds a veth pair.
    pub fn veth(mut self, veth: Veth) -> Self {
        self.veths.push(veth);
        self
    }

    /// Makes the namespace, brings `lo` up, and makes the veth pairs.
    pub fn start(self) -> io::Result<NetNs> {
        let ns = NetNs::create()?;
        ns.ip(&["link", "set", "lo", "up"])?;
        for veth in &self.veths {
            ns.add_veth(veth)?;
        }
        Ok(ns)
    }
}

impl NetNs {
    /// A namespace with only `lo`, up.
    pub fn new() -> io::Result<Self> {
        Self::builder().start()
    }

    /// A builder, to add veth pairs.
    pub fn builder() -> NetNsBuilder {
        NetNsBuilder::default()
    }

    /// The namespace's name, as `ip netns` knows it.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The namespace's bind mount, `/run/netns/<name>`.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// An open file descriptor of the namespace, for `setns(2)`.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.file.as_fd()
    }

    /// A command for `program` inside the namespace (`ip netns exec <name> <program>`). Add
    /// arguments, then run it.
    pub fn command(&self, program: impl AsRef<OsStr>) -> Command {
        let mut command = Command::new("ip");
        command.args(["netns", "exec", &self.name]).arg(program);
        command
    }

    /// Runs `ip -n <name> <args>` and returns its standard output; fails with its standard error.
    pub fn ip(&self, args: &[&str]) -> io::Result<String> {
        let mut command = Command::new("ip");
        command.args(["-n", &self.name]).args(args);
        output_of(&mut command)
    }

    /// Runs `ip -n <name> <args>` for an object that needs a kernel option not every kernel
    /// has (a lightweight tunnel encapsulation such as seg6, built only with
    /// `CONFIG_IPV6_SEG6_LWTUNNEL`): `Ok(true)` when the kernel made it, `Ok(false)` (with a
    /// line on standard error naming the command) when the kernel answered that it does not
    /// support it. Any other failure is an error, as with [`ip`](Self::ip).
    pub fn ip_where_supported(&self, args: &[&str]) -> io::Result<bool> {
        match self.ip(args) {
            Ok(_) => Ok(true),
            Err(err) if is_unsupported(&err.to_string()) => {
                eprintln!("this kernel cannot make `ip {}`: {err}", args.join(" "));
                Ok(false)
            }
            Err(err) => Err(err),
        }
    }

    /// Runs `f` on a thread that has joined the namespace, and returns its result. Sockets made
    /// in `f` belong to the namespace (and keep belonging to it after `f` returns). A panic in
    /// `f` is passed on to the caller. Note that `/sys` still shows the caller's namespace.
    pub fn run<T, F>(&self, f: F) -> io::Result<T>
    where
        T: Send,
        F: FnOnce() -> T + Send,
    {
        let fd = self.fd();
        thread::scope(|scope| {
            let worker = thread::Builder::new()
                .name(format!("{}-run", self.name))
                .spawn_scoped(scope, move || {
                    move_into_link_name_space(fd, Some(LinkNameSpaceType::Network))?;
                    Ok(f())
                })?;
            match worker.join() {
                Ok(result) => result,
                Err(panic) => std::panic::resume_unwind(panic),
            }
        })
    }

    /// Makes a uniquely named namespace.
    fn create() -> io::Result<Self> {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        delete_orphans();
        let pid = std::process::id();
        loop {
            let name = format!(
                "{NETNS_PREFIX}{pid}-{}",
                NEXT.fetch_add(1, Ordering::Relaxed)
            );
            let path = Path::new(NETNS_RUN_DIR).join(&name);
            if path.exists() {
                // Left by an earlier process with the same pid: take the next number.
                continue;
            }
            output_of(Command::new("ip").args(["netns", "add", &name]))?;
            // From here on, `Drop` deletes it.
            let file = match File::open(&path) {
                Ok(file) => file,
                Err(err) => {
                    delete(&name);
                    return Err(err);
                }
            };
            tracing::debug!(netns = %name, "test network namespace made");
            return Ok(Self { name, path, file });
        }
    }

    fn add_veth(&self, veth: &Veth) -> io::Result<()> {
        let mut add = vec!["link", "add", &veth.name, "type", "veth", "peer", "name"];
        add.push(&veth.peer);
        if let Some(other) = &veth.peer_netns {
            add.extend(["netns", other.as_str()]);
        }
        self.ip(&add)?;
        let peer_ns = veth.peer_netns.as_deref().unwrap_or(&self.name);
        for (netns, link, addresses) in [
            (self.name.as_str(), &veth.name, &veth.addresses),
            (peer_ns, &veth.peer, &veth.peer_addresses),
        ] {
            for cidr in addresses {
                let mut command = Command::new("ip");
                command.args(["-n", netns, "addr", "add", cidr, "dev", link]);
                if cidr.contains(':') {
                    command.arg("nodad");
                }
                output_of(&mut command)?;
            }
            output_of(Command::new("ip").args(["-n", netns, "link", "set", link, "up"]))?;
        }
        Ok(())
    }
}

impl Drop for NetNs {
    fn drop(&mut self) {
        // Processes left inside would keep the namespace alive, nameless: end them first.
        if let Ok(pids) = output_of(Command::new("ip").args(["netns", "pids", &self.name])) {
            for pid in pids.split_whitespace() {
                if let Some(pid) = pid.parse().ok().and_then(rustix::process::Pid::from_raw) {
                    let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
                }
            }
        }
        delete(&self.name);
    }
}

/// Deletes the namespace `name`, logging a failure (a drop cannot report it otherwise).
fn delete(name: &str) {
    match output_of(Command::new("ip").args(["netns", "delete", name])) {
        Ok(_) => tracing::debug!(netns = %name, "test network namespace deleted"),
        Err(err) => tracing::warn!(netns = %name, %err, "cannot delete test network namespace"),
    }
}

/// Deletes the fixture namespaces whose creating process (the pid in their name) is gone:
/// what a test process killed without unwinding left behind.
fn delete_orphans() {
    let Ok(entries) = std::fs::read_dir(NETNS_RUN_DIR) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some(pid) = name
            .strip_prefix(NETNS_PREFIX)
            .and_then(|rest| rest.split('-').next())
            .filter(|pid| !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()))
        else {
            continue;
        };
        if !Path::new("/proc").join(pid).exists() {
            tracing::warn!(netns = %name, "deleting a test network namespace left by a dead process");
            delete(name);
        }
    }
}

/// Whether `ip`'s error output says that the kernel lacks what was asked for (a kernel option
/// or module), rather than that the request was wrong.
fn is_unsupported(stderr: &str) -> bool {
    ["not supported", "Unknown device type"]
        .iter()
        .any(|phrase| stderr.contains(phrase))
}

/// Runs `command` and returns its standard output, or an error with its standard error.
fn output_of(command: &mut Command) -> io::Result<String> {
    let output = command.stdin(Stdio::null()).output()?;
    if !output.status.success() {
        return Err(io::Error::other(format!(
            "{:?} failed ({}): {}",
            command,
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}
