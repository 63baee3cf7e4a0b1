//! Tests that need root: they make network namespaces.

mod netns;
