//! A consistent, typed client cache of a D-Bus ObjectManager service (NetworkManager, or any
//! other), built on a zbus connection: libnm's NMClient cache in Rust.

// Documented by its own inner docs: an outer doc comment here would make rustdoc resolve
// their links from the crate root and fail.
#[cfg(feature = "testing")]
pub mod testing;
