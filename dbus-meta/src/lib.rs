#![doc = include_str!("../README.md")]
#![cfg_attr(docsrs, feature(doc_cfg))]

#[doc(hidden)]
pub mod check;
mod error;
mod interface;
mod kind;
mod macros;
pub mod nm;
pub mod signature;
mod typed;
pub mod value;
pub mod wire;

#[cfg(test)]
mod tests;

pub use error::{Error, Result};
pub use interface::{
    Decoded, Interface, Lookup, Method, Property, PropertyFlags, PropertyKey, Registry, Signal,
};
pub use kind::{DeclaredType, Kind, Opaque};
pub use kind::{SettingsDict, VarDict};
pub use value::{Array, Dict, Value};
pub use wire::Reader;

/// Re-exported so that declarations and users agree on one zbus version (its wire types).
pub use zbus;
