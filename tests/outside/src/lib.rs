//! A small program's use of netmirror's libraries, through their documented APIs only: the
//! crate `cargo xtask ci` builds against the packaged crates, as a crates.io user gets them.

use std::net::Ipv4Addr;

use netmirror_dedup_index::{DedupIndex, IndexType, Object, Placement};

/// A user's own object type in a dedup index: a neighbour entry keyed by its address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Neighbour {
    /// The neighbour's address (its id).
    pub address: Ipv4Addr,
    /// The interface it was seen on.
    pub ifindex: u32,
}

impl Object for Neighbour {
    type Id = Ipv4Addr;

    fn id(&self) -> Ipv4Addr {
        self.address
    }
}

/// Neighbours by interface.
pub struct ByIfindex;

impl IndexType<Neighbour> for ByIfindex {
    type Partition = u32;

    fn partition(&self, neighbour: &Neighbour) -> Option<u32> {
        Some(neighbour.ifindex)
    }
}

/// How many neighbours each of the given interfaces has, through a partitioned index.
pub fn neighbours_per_interface(neighbours: Vec<Neighbour>, ifindexes: &[u32]) -> Vec<usize> {
    let mut index: DedupIndex<Neighbour> = DedupIndex::new();
    let by_ifindex = index.add_index(ByIfindex);
    index.extend(neighbours);
    ifindexes
        .iter()
        .map(|ifindex| {
            index
                .partition(by_ifindex, ifindex)
                .map_or(0, |list| list.iter().count())
        })
        .collect()
}

/// The interface moves among the given sightings, in order: a neighbour seen again on another
/// interface yields `(address, old ifindex, new ifindex)`, through the change's `old()` and
/// `new()`.
pub fn moves(sightings: Vec<Neighbour>) -> Vec<(Ipv4Addr, u32, u32)> {
    let mut index: DedupIndex<Neighbour> = DedupIndex::new();
    let mut moves = Vec::new();
    for neighbour in sightings {
        let Ok(change) = index.insert(neighbour, Placement::Append) else {
            continue;
        };
        if let Some(old) = change.old() {
            moves.push((old.address, old.ifindex, change.new().ifindex));
        }
    }
    moves
}
