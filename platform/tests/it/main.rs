//! The platform crate's integration tests: one test binary, with a module per topic. Tests that
//! need root live under `privileged` (feature `privileged`).

#[cfg(feature = "privileged")]
mod privileged;
#[cfg(feature = "privileged")]
mod support;
