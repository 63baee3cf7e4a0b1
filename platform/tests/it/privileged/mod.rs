//! Tests that need root: they make network namespaces.

mod attrs;
mod batch;
mod bridge_port;
mod burst;
mod cache;
mod dump;
mod multipath;
mod netns;
mod nexthop;
mod open;
mod order;
mod query;
mod rule_flags;
mod security;
mod snapshot;
mod support;
mod undo;
