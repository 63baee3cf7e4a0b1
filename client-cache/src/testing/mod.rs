//! Test fixtures for programs that talk to D-Bus services: a private `dbus-daemon`
//! ([`PrivateBus`]) and the real NetworkManager daemon sandboxed on one
//! ([`NetworkManagerDaemon`]), seeded with keyfile [`Profile`]s, and an ObjectManager service
//! that misbehaves on demand ([`HostileService`]).
//!
//! They are plain blocking code (`std::process`, `busctl`), free of any async runtime, so they
//! work from any test, async or not. Every temp dir and command line they make contains
//! `netmirror-test`, so a leftover is easy to spot (`cargo xtask ci` checks for them), and every
//! process they start dies with the test process (`setpriv --pdeathsig KILL`). Errors are
//! [`std::io::Error`]s whose message says what failed and, for a daemon, how its log ends.
//!
//! Enabled by the `testing` feature. [`PrivateBus`] needs `dbus-daemon` and `busctl`;
//! [`NetworkManagerDaemon`] needs root and `/usr/sbin/NetworkManager` as well.

mod bus;
mod hostile;
mod network_manager;
mod process;
mod profile;

pub use bus::{PrivateBus, PrivateBusBuilder};
pub use hostile::{Answer, HostileService, Ifaces, Props, Settings};
pub use network_manager::{NM_BUS_NAME, NetworkManagerBuilder, NetworkManagerDaemon};
pub use profile::{Profile, benchmark_profiles};

/// The marker in the path of every temp dir, and so in the command line of every process, the
/// fixtures make.
pub const MARKER: &str = "netmirror-test";

/// An error with a message of its own.
fn fail(message: String) -> std::io::Error {
    std::io::Error::other(message)
}
