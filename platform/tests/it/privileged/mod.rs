//! Tests that need root: they make network namespaces.

#[cfg(any(feature = "tokio", feature = "async-io"))]
mod asynch;
mod attrs;
mod batch;
mod bridge_port;
mod burst;
mod cache;
mod churn;
mod dump;
mod event_loop;
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
