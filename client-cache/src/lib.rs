//! A consistent, typed client cache of a D-Bus ObjectManager service (NetworkManager, or any
//! other), built on a zbus connection: libnm's NMClient cache in Rust.
//!
//! [`ObjectCache`] subscribes to a service's `InterfacesAdded`, `InterfacesRemoved` and
//! `PropertiesChanged` signals (match rules bound to the service's unique owner) and to its
//! `NameOwnerChanged`, then loads everything with one `GetManagedObjects`. It applies each batch
//! of messages in three phases (record, settle, emit) so that events are only handed out when
//! the cache is consistent, in the order removals, property changes, additions. Object-path
//! properties of declared interfaces are references: an object is visible only once everything
//! it references (transitively) is cached. A restart of the service removes everything (with
//! events) and loads again. The [`nm`] module is a typed NetworkManager layer on top.
//!
//! The cache never spawns: it advances only while [`ObjectCache::next_event`] (or
//! [`ObjectCache::load`]) is polled, on the caller's executor (Tokio, async-io/smol, ...).
//! [`BlockingCache`] runs it on a private thread for synchronous callers.
//!
//! # Example: cache any service generically
//!
//! A small service of our own, on a private bus (the `testing` feature's [`testing::PrivateBus`]),
//! cached without any declaration: its interfaces are kept generically.
//!
//! ```
//! use netmirror_client_cache::{Event, ObjectCache, Value};
//! # #[cfg(feature = "testing")]
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use netmirror_client_cache::testing::PrivateBus;
//!
//! struct Light {
//!     on: bool,
//! }
//!
//! #[zbus::interface(name = "org.example.Light")]
//! impl Light {
//!     #[zbus(property)]
//!     fn on(&self) -> bool {
//!         self.on
//!     }
//! }
//!
//! let bus = PrivateBus::start()?;
//! zbus::block_on(async {
//!     let _service = zbus::connection::Builder::address(bus.address())
//!         .serve_at("/org/example/Lights/kitchen", Light { on: true })
//!         .serve_at("/org/example/Lights", zbus::fdo::ObjectManager)
//!         .name("org.example.Lights")
//!         .build()
//!         .await?;
//!
//!     let conn = zbus::connection::Builder::address(bus.address()).build().await?;
//!     let mut cache = ObjectCache::builder("org.example.Lights")
//!         .manager_path("/org/example/Lights")
//!         .build_loaded(&conn)
//!         .await?;
//!     let events = cache.take_events();
//!     assert!(matches!(events.last(), Some(Event::Loaded)));
//!     let kitchen = cache.object("/org/example/Lights/kitchen").ok_or("cached")?;
//!     assert_eq!(kitchen.prop("org.example.Light", "On"), Some(&Value::Bool(true)));
//!     Ok(())
//! })
//! # }
//! # #[cfg(not(feature = "testing"))]
//! # fn main() {}
//! ```
//!
//! To follow the service, keep polling [`ObjectCache::next_event`]: each
//! [`Event::PropertyChanged`] carries the old and the new value.
//!
//! # Example: watch NetworkManager's devices
//!
//! ```no_run
//! # zbus::block_on(async {
//! use netmirror_client_cache::nm::{NmClient, NmEvent};
//!
//! let conn = zbus::Connection::system().await?;
//! let mut nm = NmClient::new(&conn).await?;
//! for device in nm.devices() {
//!     // What the daemon has not sent (yet) is `None`: nmcli prints `--` for it.
//!     let name = device.interface().unwrap_or("--");
//!     let state = device.state().map_or_else(|| "--".to_owned(), |state| state.to_string());
//!     println!("{name} {:?} {state}", device.device_type());
//! }
//! while let Some(event) = nm.next_event().await {
//!     match event {
//!         NmEvent::DeviceAdded(path) => println!("added {path}"),
//!         NmEvent::DeviceRemoved(path) => println!("removed {path}"),
//!         _ => {}
//!     }
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # });
//! ```
//!
//! # Debugging
//!
//! [`DebugConfig`] says how loudly protocol problems are logged (through `tracing`) and whether
//! each one panics (fatal mode). The library reads no environment variable by itself: a program
//! that wants `NETMIRROR_CLIENT_DEBUG=trace,warning,error` and `NETMIRROR_FATAL_WARNINGS=1` to
//! work opts in once with
//! `DebugConfig::set_process_default(DebugConfig::from_env())` (the `netmirror` CLI and the
//! [`testing`] fixtures do), or per cache with [`CacheBuilder::debug`] (see [`debug`]).
//!
//! # Features
//!
//! - `testing`: the test fixtures ([`testing`]: a private `dbus-daemon`, a sandboxed
//!   NetworkManager).
//! - `privileged`: tests that need root.
//!
//! MSRV: the workspace's `rust-version`.
//!
#![cfg_attr(
    not(feature = "testing"),
    doc = "[`testing`]: https://docs.rs/netmirror-client-cache/latest/netmirror_client_cache/testing/index.html",
    doc = "[`testing::PrivateBus`]: https://docs.rs/netmirror-client-cache/latest/netmirror_client_cache/testing/struct.PrivateBus.html"
)]
#![cfg_attr(docsrs, feature(doc_cfg))]

#[doc(hidden)]
pub mod bench_support;
mod blocking;
mod cache;
mod core;
pub mod debug;
mod error;
mod event;
pub mod meta;
pub mod nm;
mod object;
mod record;
pub mod replay;
mod store;

pub use blocking::{BlockingBuilder, BlockingCache, EVENT_CHANNEL};
pub use cache::{CacheBuilder, ObjectCache, ObjectRef};
pub use core::{FetchSpec, Lookup, RefreshOn, Scope};
pub use debug::{DebugConfig, Diagnostics, Warning, WarningKind};
pub use error::{CallError, CallFailure, Error, Result};
pub use event::Event;
pub use meta::{InterfaceDecl, PropertyDecl, Registry};
pub use netmirror_dbus_meta::{Array, Dict, Value};
pub use object::{Interface, Object};

// Documented by its own inner docs: an outer doc comment here would make rustdoc resolve
// their links from the crate root and fail.
#[cfg(feature = "testing")]
pub mod testing;
