//! Static, compile-time-checked descriptions of D-Bus interfaces and their properties, with
//! NetworkManager's whole API declared.
//!
//! Every interface is `const`/`static` data: its name, its properties sorted by name (each with
//! its D-Bus signature, the [`Kind`] of value it holds, the Rust type it was declared with and,
//! for object paths, the interface the target must implement), its methods and its signals.
//! The [`interface!`] macro refuses to compile a property whose Rust type does not have the
//! declared signature. A [`Registry`] finds an interface by name, an [`Interface`] a property
//! by name, both by binary search without allocation.
//!
//! Wire values are checked against their declaration: [`Property::decode`] turns a
//! [`zvariant::Value`] into a typed [`Value`] or returns [`Error::TypeMismatch`] naming the
//! property and both signatures; [`Property::seed`] does the same straight from a message body
//! through serde ([`PropertySeed`]). Undeclared interfaces and properties are their own
//! outcomes ([`Lookup`], [`Decoded`]) and are decoded in generic mode ([`Value::from_zvariant`],
//! [`GenericSeed`]).
//!
//! This crate does no I/O. MSRV: the workspace's `rust-version` (1.90). No feature flags.
//!
//! # Example
//!
//! Declaring part of another service's interface, then checking values against it:
//!
//! ```
//! use netmirror_dbus_meta::{interface, Error, Value};
//! use zvariant::OwnedObjectPath;
//!
//! interface! {
//!     /// `org.freedesktop.UDisks2.Drive`, abridged.
//!     pub mod drive = "org.freedesktop.UDisks2.Drive" {
//!         properties {
//!             MODEL "Model": String = "s";
//!             REMOVABLE "Removable": bool = "b";
//!             SIZE "Size": u64 = "t";
//!         }
//!         methods {
//!             EJECT "Eject"("a{sv}") -> "";
//!         }
//!     }
//! }
//!
//! let size = drive::IFACE.property("Size").ok_or("Size is declared")?;
//! let value = size.decode(&zvariant::Value::from(512_000_000_u64))?;
//! assert_eq!(drive::SIZE.get(&value), Some(512_000_000));
//!
//! // A value of the wrong type is rejected, naming the property and both signatures.
//! let err = size.decode(&zvariant::Value::from("big")).unwrap_err();
//! assert!(matches!(err, Error::TypeMismatch { property: "Size", expected: "t", .. }));
//! assert_eq!(
//!     err.to_string(),
//!     "property org.freedesktop.UDisks2.Drive.Size has signature `s` on the wire, declared `t`"
//! );
//!
//! // NetworkManager's whole API is declared.
//! let nm = &netmirror_dbus_meta::nm::REGISTRY;
//! let active = nm.interface("org.freedesktop.NetworkManager.Device")
//!     .and_then(|device| device.property("ActiveConnection"))
//!     .ok_or("declared")?;
//! assert_eq!(active.target(), Some("org.freedesktop.NetworkManager.Connection.Active"));
//! # let _ = Value::Bool(true);
//! # let _: Option<OwnedObjectPath> = None;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#[doc(hidden)]
pub mod check;
mod de;
mod error;
mod interface;
mod kind;
mod macros;
pub mod nm;
pub mod signature;
mod value;

#[cfg(test)]
mod tests;

pub use de::{
    ErrorInfo, GenericSeed, InterfaceEntry, InterfacesSeed, ManagedObjectsSeed, PropertiesSeed,
    PropertyEntry, PropertySeed,
};
pub use error::{Error, Result};
pub use interface::{
    Decoded, Interface, Lookup, Method, Property, PropertyFlags, PropertyKey, Registry, Signal,
};
pub use kind::{DeclaredType, Kind, Opaque};
pub use value::{SettingsDict, Value, VarDict};

/// Re-exported so that declarations and users agree on one zvariant version.
pub use zvariant;
