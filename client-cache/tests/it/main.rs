//! The client cache's integration tests: one test binary, with a module per topic. Tests that
//! need root live under `privileged` (feature `privileged`).

mod cache;
mod env_opt_in;
mod hostile;
mod mock;
mod private_bus;
#[cfg(feature = "privileged")]
mod privileged;
mod replay;
mod support;
mod ui;
