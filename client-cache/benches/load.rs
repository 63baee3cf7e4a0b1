//! Criterion benchmarks of loading a mock ObjectManager service (filled in below).
fn main() {}
