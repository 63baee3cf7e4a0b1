//! Tests that need root: they start the real NetworkManager daemon in its own namespaces.

mod fixtures;
mod introspect_conformance;
mod nm_actions;
mod nm_cache;
mod nm_names;
mod nm_sequence;
mod replay;
