//! Unit tests of the dedup index.
