//! Golden bytes.
