//! A consistent, typed client cache of a D-Bus ObjectManager service (NetworkManager, or any
//! other), built on a zbus connection: libnm's NMClient cache in Rust.
