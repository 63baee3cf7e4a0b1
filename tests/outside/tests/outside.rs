//! The outside user's tests: each library through its documented API.

use std::net::Ipv4Addr;

use netmirror_outside_user::{Neighbour, moves, neighbours_per_interface};

#[test]
fn dedup_index_partitions_a_users_own_type() {
    let n = |last: u8, ifindex| Neighbour {
        address: Ipv4Addr::new(192, 0, 2, last),
        ifindex,
    };
    // The second entry for .1 replaces the first (same id) and moves it to interface 3.
    let counts = neighbours_per_interface(vec![n(1, 2), n(2, 2), n(1, 3)], &[2, 3, 4]);
    assert_eq!(counts, [1, 1, 0]);
}

#[test]
fn dedup_index_changes_name_old_and_new() {
    let n = |last: u8, ifindex| Neighbour {
        address: Ipv4Addr::new(192, 0, 2, last),
        ifindex,
    };
    let a = Ipv4Addr::new(192, 0, 2, 1);
    // An equal sighting is unchanged (no old object); a move replaces it.
    assert_eq!(moves(vec![n(1, 2), n(1, 2), n(2, 2), n(1, 3)]), [(a, 2, 3)]);
}

#[test]
fn platform_changes_name_old_and_new() {
    use std::sync::Arc;

    use netmirror_platform::{Change, Route, Table};
    let before = Arc::new(Route::new("10.3.0.0".parse().unwrap(), 16));
    let after = Arc::new(Route::new("10.3.0.0".parse().unwrap(), 16).with_table(Table(100)));
    let replaced = Change::Replaced {
        old: Arc::clone(&before),
        new: Arc::clone(&after),
    };
    assert_eq!(replaced.old(), Some(&before));
    assert_eq!(replaced.new(), Some(&after));
    assert_eq!(Change::Removed(before).new(), None);
}

#[test]
fn platform_routes_are_built_and_identified_without_a_socket() {
    use netmirror_platform::{Family, Protocol, Route, Table};
    let route = Route::new("10.3.0.0".parse().unwrap(), 16)
        .with_gateway("10.2.0.2".parse().unwrap())
        .with_table(Table(100));
    assert_eq!(route.family(), Family::V4);
    assert_eq!(route.table(), Table(100));
    assert_eq!(route.table().to_string(), "100");
    assert_eq!(Table::MAIN.to_string(), "main");
    assert_eq!(route.id(), route.clone().with_protocol(Protocol::STATIC).id());
}
