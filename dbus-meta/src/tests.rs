//! Unit tests of the crate (decoding, lookup, signatures).
