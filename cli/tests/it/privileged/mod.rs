//! End-to-end tests that need root: the binary against throwaway network namespaces
//! (`NetNs` of `netmirror-platform`) and a sandboxed NetworkManager on a private bus
//! (`NetworkManagerDaemon` of `netmirror-client-cache`). Every JSON output is compared with
//! what `ip -j` or `nmcli -t` say about the same state.

mod batch;
mod conformance;
mod kernel;
mod monitor;
mod nexthop;
mod nm;
mod nm_actions;
mod nm_parity;
mod nm_views;
mod objects;
mod reliability;
