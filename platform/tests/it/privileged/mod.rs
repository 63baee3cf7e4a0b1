//! Tests that need root: they make network namespaces.

mod cache;
mod netns;
mod snapshot;
mod support;
