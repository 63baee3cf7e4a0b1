//! Tests that need root: they make network namespaces.

#[cfg(any(feature = "tokio", feature = "async-io"))]
mod asynch;
mod attrs;
mod batch;
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
mod security;
mod snapshot;
mod support;
mod undo;
