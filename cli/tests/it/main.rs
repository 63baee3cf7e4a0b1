//! End-to-end tests of the `netmirror` binary: it is run as a child process and its stdout,
//! stderr and exit status are checked. Tests that need root (throwaway network namespaces, a
//! private bus with a sandboxed NetworkManager) live in `privileged`.

mod dbus;
mod replay;
mod support;
mod usage;
mod walk;

#[cfg(feature = "privileged")]
mod privileged;
