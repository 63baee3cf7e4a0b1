//! The outside user's tests: each library through its documented API.

use std::net::Ipv4Addr;

use netmirror_outside_user::{Neighbour, neighbours_per_interface};

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
