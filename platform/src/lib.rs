//! The kernel's network state (links, addresses, routes, rules) as a live cache kept in sync
//! over rtnetlink: NetworkManager's platform cache in Rust.
