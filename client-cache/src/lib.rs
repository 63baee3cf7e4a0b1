//! A consistent, typed client cache of a D-Bus ObjectManager service (NetworkManager, or any
//! other), built on a zbus connection: libnm's NMClient cache in Rust.

/// Test fixtures: a private `dbus-daemon` and a sandboxed NetworkManager daemon
/// (feature `testing`).
#[cfg(feature = "testing")]
pub mod testing;
