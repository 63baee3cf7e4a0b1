#![doc = include_str!("../README.md")]
//!
//! # Entry points
//!
//! - [`Platform`]: a handle on one namespace's rtnetlink, for one-shot queries
//!   ([`Platform::routes`], [`Platform::links`], [`Platform::addresses`], [`Platform::rules`])
//!   with filters pushed to the kernel, and for batches ([`Platform::batch`]).
//! - [`Cache`]: everything loaded into dedup indexes and kept in sync; [`Cache::poll`] returns
//!   [`Event`]s, each [`Change`] with its old and new object.
//! - The object types [`Link`], [`Address`], [`Route`] and [`Rule`], parsed straight from the
//!   wire (a common IPv4 route is 40 bytes).
//!
//! Beside them, [`names`] has iproute2's names for the kernel's numbers (routing tables also
//! from `rt_tables`) and [`ipbatch`] reads `ip -batch` lines into batch [`Item`]s.
//!
//! # Design
//!
//! The API is synchronous and caller-driven, so it fits both a routing daemon's own event loop
//! and a CLI: nothing runs in the background and state changes only inside [`Cache::poll`].
//! For an async program, register the cache (it implements `AsFd`: the event socket) with the
//! runtime (tokio's `AsyncFd`) and call `poll` with a zero timeout when it is readable, or run
//! the cache on a thread of its own. Memory between kernel and user is bounded: `poll` applies
//! at most a fixed number of datagrams per call, and the socket's receive buffer (sized for
//! bursts, 128 MiB by default) is the only queue. A load or resync receives its dump on a
//! second, scoped thread while the calling thread fills the index; the two meet through a
//! bounded queue (at most 512 chunks of 512 messages) and share the parsing and allocating by
//! how far the indexing is behind.
//!
//! When that buffer overflows (ENOBUFS), the cache schedules a resync: once the socket has been
//! quiet for a back-off that doubles while overflows go on, it marks everything dirty, dumps,
//! re-adds and sweeps, and reports the differences as ordinary events between
//! [`Event::Overrun`] and [`Event::Resynced`]. Dumps interrupted by concurrent changes
//! (`NLM_F_DUMP_INTR`) are redone up to [`Config::with_dump_attempts`] times. IPv4 routes the
//! kernel flushes without telling (link down, address removed) are found by a filtered re-dump
//! of that interface's routes.
//!
//! Sockets are opened in the target namespace ([`Netns`]: by name, path or fd) on a short-lived
//! helper thread; the calling thread never changes namespace.
//!
//! # Example
//!
//! Building a route for a batch, and what the cache identifies it by (pure, no I/O):
//!
//! ```
//! use netmirror_platform::{Family, Ifindex, Protocol, Route, Table};
//!
//! let route = Route::new("10.3.0.0".parse()?, 16)
//!     .with_gateway("10.2.0.2".parse()?)
//!     .with_oif(Ifindex(3))
//!     .with_table(Table(100));
//! assert_eq!(route.family(), Family::V4);
//! assert_eq!(route.gateway(), Some("10.2.0.2".parse()?));
//! assert_eq!((route.table().to_string(), route.protocol().to_string()), ("100".into(), "boot".into()));
//! // An update of the same kernel route (same prefix, metric, next hop) has the same id.
//! assert_eq!(route.id(), route.clone().with_protocol(Protocol::STATIC).id());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//!
//! # Minimum supported Rust version
//!
//! Rust 1.90.
//!
//! # Feature flags
//!
//! - `testing`: test fixtures (`testing::NetNs`, a throwaway network namespace).
//! - `privileged`: enables the integration tests that need root.
#![cfg_attr(docsrs, feature(doc_cfg))]

mod addr;
mod batch;
mod cache;
mod error;
pub mod fuzzing;
pub mod ipbatch;
mod link;
mod linkinfo;
pub mod names;
mod netns;
mod nexthop;
mod platform;
mod query;
mod route;
mod rule;
mod socket;
pub mod text;
mod types;
mod wire;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_attrs;

pub use addr::{Address, AddressId, LIFETIME_FOREVER};
pub use batch::{Batch, Failure, Item, Op, Report};
pub use cache::{
    AddressesByIfindex, Cache, Change, Counts, DefaultRoutes, Event, RoutesByIfindex,
    RoutesByWeakId, Stats, WEAK_ID_BUCKETS,
};
pub use error::{Error, KernelError, Result};
pub use link::{IFF_LOWER_UP, IFF_UP, Link};
pub use linkinfo::KindAttr;
pub use netns::Netns;
pub use nexthop::{
    GroupMember, NEXTHOP_GRP_TYPE_MPATH, NEXTHOP_GRP_TYPE_RES, Nexthop, NexthopQuery, RTNH_F_DEAD,
    RTNH_F_LINKDOWN, RTNH_F_ONLINK, Resilient,
};
pub use platform::{Config, DumpReport, Platform};
pub use query::{AddressQuery, Answer, FilterSide, LinkQuery, RouteQuery, RuleQuery};
pub use route::{
    AttrValue, Encap, Family, NextHop, RTAX_CC_ALGO, Route, RouteId, RouteMetric, RouteWeakId,
};
pub use rule::{
    FIB_RULE_IIF_DETACHED, FIB_RULE_INVERT, FIB_RULE_OIF_DETACHED, FIB_RULE_UNRESOLVED,
    FR_ACT_TO_TBL, Rule, RuleId,
};
pub use socket::RcvbufOutcome;
pub use types::{Ifindex, Protocol, RouteType, Scope, Table};

// Documented by its own inner docs: an outer doc comment here would make rustdoc resolve
// their links from the crate root and fail.
#[cfg(feature = "testing")]
pub mod testing;
