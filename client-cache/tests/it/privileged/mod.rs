//! Tests that need root: they start the real NetworkManager daemon in its own namespaces.

mod fixtures;
mod nm_cache;
mod introspect_conformance;
