//! An order-preserving, deduplicating multi-index over immutable, shared objects:
//! NetworkManager's NMDedupMultiIndex in Rust.
//!
//! A [`DedupIndex<T>`] holds objects as `Arc<T>`, one per *entry*, identified by
//! [`Object::id`]. Inserting an object equal to the held one keeps the shared, held object;
//! a different object with the same id replaces it in place and the old one is handed back.
//! Every index has the [`Primary`] index type (all entries, one ordered list); each
//! [`IndexType`] you add splits the entries it tracks into ordered *partitions* (routes by
//! interface, default routes only, ...). Lists support append and prepend (with or without
//! moving an existing entry), insertion before or after an entry, moves, removal, lookup by id
//! and in-order iteration, all in O(1) amortised time. Mark and sweep ([`DedupIndex::mark_all`],
//! [`DedupIndex::sweep`] and their per-index and per-partition forms) resynchronise the index
//! with a fresh dump of its source.
//!
//! Memory is a design goal: an entry costs its object, one pointer, 32 bits of its id's hash,
//! two `u32` links per index type, one bit and its share of an id table of `u32` slot numbers
//! with 8-bit hash tags (see the crate's README for figures).
//!
//! Minimum supported Rust version: 1.90. The crate has no feature flags and no `unsafe` code.
//!
//! # Example
//!
//! Routes partitioned by interface, then a resync of interface 2 by mark and sweep:
//!
//! ```
//! use netmirror_dedup_index::{Change, DedupIndex, IndexType, Object, Placement};
//!
//! #[derive(Debug, Clone, PartialEq, Eq)]
//! struct Route {
//!     dst: [u8; 4],
//!     plen: u8,
//!     ifindex: u32,
//!     metric: u32,
//! }
//!
//! impl Object for Route {
//!     type Id = ([u8; 4], u8, u32); // The kernel's identity: destination and metric.
//!     fn id(&self) -> Self::Id {
//!         (self.dst, self.plen, self.metric)
//!     }
//! }
//!
//! struct ByIfindex;
//!
//! impl IndexType<Route> for ByIfindex {
//!     type Partition = u32;
//!     fn partition(&self, route: &Route) -> Option<u32> {
//!         Some(route.ifindex)
//!     }
//! }
//!
//! let route = |dst: u8, ifindex, metric| Route { dst: [10, dst, 0, 0], plen: 16, ifindex, metric };
//!
//! let mut routes = DedupIndex::new();
//! let by_ifindex = routes.add_index(ByIfindex);
//! for (dst, ifindex) in [(1, 2), (2, 3), (3, 2), (4, 2)] {
//!     routes.insert(route(dst, ifindex, 100), Placement::Append)?;
//! }
//!
//! // The metric is part of a route's id, the interface is not: this is an update in place.
//! // The old route comes back; the new one keeps its place in the primary list.
//! let change = routes.insert(route(2, 2, 100), Placement::Append)?;
//! assert_eq!(change.old().map(|old| old.ifindex), Some(3));
//! // Inserting an equal route again keeps the shared object that is already held.
//! let again = routes.insert(route(2, 2, 100), Placement::Append)?;
//! assert!(matches!(again, Change::Unchanged(_)));
//! assert!(std::sync::Arc::ptr_eq(again.new(), change.new()));
//!
//! // Events for interface 2 were lost: mark its routes, re-add what a fresh dump returns,
//! // and sweep what the dump did not return.
//! assert_eq!(routes.mark_partition(by_ifindex, &2)?, 4);
//! for fresh in [route(1, 2, 100), route(2, 2, 100), route(4, 2, 100)] {
//!     routes.insert(fresh, Placement::Append)?;
//! }
//! let gone = routes.sweep_partition(by_ifindex, &2)?;
//! assert_eq!(gone.len(), 1);
//! assert_eq!(gone[0].dst, [10, 3, 0, 0]);
//!
//! let on_2 = routes.partition(by_ifindex, &2).ok_or("no routes on interface 2")?;
//! let dsts: Vec<u8> = on_2.iter().map(|r| r.dst[1]).collect();
//! assert_eq!(dsts, [1, 4, 2]); // Route 2 joined interface 2's list at its end.
//! let all: Vec<u8> = routes.iter().map(|r| r.dst[1]).collect();
//! assert_eq!(all, [1, 2, 4]); // The primary list kept route 2 in place.
//! assert_eq!(routes.len(), 3);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![cfg_attr(docsrs, feature(doc_cfg))]

mod error;
mod hash;
mod index;
mod list;
mod object;
mod partitions;
mod table;
mod view;

pub use crate::error::{Error, Result};
pub use crate::index::{Change, DedupIndex, Placement, Position};
pub use crate::object::{DENSE_KEYS, IndexHandle, IndexType, Object, Primary};
pub use crate::view::{CursorMut, Entries, Entry, Iter, PartitionIter, PartitionRef};

/// Compiles and runs the README's example as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
