//! An order-preserving, deduplicating multi-index over immutable, shared objects:
//! NetworkManager's NMDedupMultiIndex in Rust.
