//! A routing table in a `DedupIndex`: a custom object type, two index types (routes by
//! interface, default routes), updates in place, and a resync of one interface by mark and
//! sweep, as a routing daemon does after it lost events.
//!
//! Run it with `cargo run -p netmirror-dedup-index --example routes`.

// An example prints what it shows.
#![allow(clippy::print_stdout)]

use std::net::Ipv4Addr;

use netmirror_dedup_index::{Change, DedupIndex, IndexType, Object, Placement};

/// An IPv4 route: what makes it one kernel route (its id) is its destination and metric; its
/// interface and gateway may change in place.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Route {
    dst: Ipv4Addr,
    plen: u8,
    metric: u32,
    ifindex: u32,
    gateway: Option<Ipv4Addr>,
}

impl Object for Route {
    type Id = (Ipv4Addr, u8, u32);

    fn id(&self) -> Self::Id {
        (self.dst, self.plen, self.metric)
    }
}

/// Routes by output interface: one ordered list per interface.
struct ByIfindex;

impl IndexType<Route> for ByIfindex {
    type Partition = u32;

    fn partition(&self, route: &Route) -> Option<u32> {
        Some(route.ifindex)
    }
}

/// Default routes only, in one list: other routes are not tracked by this index type.
struct Defaults;

impl IndexType<Route> for Defaults {
    type Partition = ();

    fn partition(&self, route: &Route) -> Option<()> {
        (route.plen == 0).then_some(())
    }
}

fn route(dst: [u8; 4], plen: u8, ifindex: u32, gateway: Option<[u8; 4]>) -> Route {
    Route {
        dst: dst.into(),
        plen,
        metric: 100,
        ifindex,
        gateway: gateway.map(Into::into),
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut routes = DedupIndex::new();
    let by_ifindex = routes.add_index(ByIfindex);
    let defaults = routes.add_index(Defaults);

    // The initial dump.
    for r in [
        route([0, 0, 0, 0], 0, 2, Some([192, 0, 2, 1])),
        route([10, 1, 0, 0], 16, 2, None),
        route([10, 2, 0, 0], 16, 3, None),
        route([10, 3, 0, 0], 16, 2, Some([192, 0, 2, 9])),
    ] {
        routes.insert(r, Placement::Append)?;
    }
    println!(
        "{} routes, {} default",
        routes.len(),
        count(&routes, defaults, &())
    );

    // An update event: 10.2/16 moved to interface 2. Same id, so it is replaced in place and
    // the old object comes back for the event the daemon reports.
    match routes.insert(route([10, 2, 0, 0], 16, 2, None), Placement::Append)? {
        Change::Replaced { old, new } => {
            println!(
                "changed: {} dev {} -> dev {}",
                new.dst, old.ifindex, new.ifindex
            );
        }
        Change::Added(new) => println!("added: {}", new.dst),
        Change::Unchanged(_) => println!("unchanged"),
        _ => {}
    }

    // Events for interface 2 were lost: mark its routes, re-add what a fresh dump of that
    // interface returns, and sweep the rest.
    let marked = routes.mark_partition(by_ifindex, &2)?;
    for fresh in [
        route([0, 0, 0, 0], 0, 2, Some([192, 0, 2, 1])),
        route([10, 1, 0, 0], 16, 2, None),
    ] {
        routes.insert(fresh, Placement::Append)?;
    }
    let gone = routes.sweep_partition(by_ifindex, &2)?;
    println!(
        "resync of interface 2: {marked} marked, {} removed",
        gone.len()
    );
    for r in &gone {
        println!("  removed: {}/{} dev {}", r.dst, r.plen, r.ifindex);
    }

    // Reading: every route in order, and one interface's list.
    for r in routes.iter() {
        println!("{}/{} dev {} gw {:?}", r.dst, r.plen, r.ifindex, r.gateway);
    }
    let on_2 = count(&routes, by_ifindex, &2);
    println!("{on_2} routes on interface 2");
    assert_eq!(routes.len(), 2);
    Ok(())
}

/// The number of routes in one partition of an index type.
fn count<X: IndexType<Route>>(
    routes: &DedupIndex<Route>,
    index: netmirror_dedup_index::IndexHandle<X>,
    key: &X::Partition,
) -> usize {
    routes
        .partition(index, key)
        .map_or(0, |list| list.iter().count())
}
