#![doc = include_str!("../README.md")]
//!
//! # Entry points
//!
//! - [`Platform`]: a handle on one namespace's rtnetlink, for one-shot queries
//!   ([`Platform::routes`], [`Platform::links`], [`Platform::addresses`], [`Platform::rules`])
//!   with filters pushed to the kernel, and for batches ([`Platform::batch`]).
//! - [`Cache`]: everything loaded into dedup indexes and kept in sync; [`Cache::poll`] returns
//!   [`Event`]s, each [`Change`] with its old and new object.
//! - [`TokioCache`] and [`AsyncIoCache`] (features `tokio`, `async-io`): the same cache as a
//!   `Stream` of events for async programs (see [Async](#async)).
//! - The object types [`Link`], [`Address`], [`Route`] and [`Rule`], parsed straight from the
//!   wire (a common IPv4 route is 40 bytes).
//!
//! Beside them, [`names`] has iproute2's names for the kernel's numbers (routing tables also
//! from `rt_tables`) and [`ipbatch`] reads `ip -batch` lines into batch [`Item`]s.
//!
//! # Design
//!
//! The core API is synchronous and caller-driven, so it fits both a routing daemon's own event
//! loop and a CLI: nothing runs in the background and state changes only inside
//! [`Cache::poll`]. Any event loop can drive it: the cache is `AsFd` and `AsRawFd` (the event
//! socket), [`Cache::poll_status`] says whether it drained the socket (when to clear
//! readiness) and [`Cache::next_deadline`] when a scheduled resync must run although the socket
//! is quiet. Note that `poll` itself runs the dumps some events call for and a due resync,
//! which wait for the kernel; the re-dumps events call for and the link refresh run once a poll
//! has drained the socket, so that no event older than what they read is applied after them.
//!
//! # Async
//!
//! With the feature `tokio`, [`TokioCache`]; with `async-io` (smol, async-std, any executor),
//! [`AsyncIoCache`]. Each is a `futures_core::Stream` of `Result<Event>` over the same cache,
//! and never blocks the executor: `open` loads on a thread of its own, the stream reads the
//! event socket when the runtime's reactor says it is readable, a bounded number of datagrams at
//! a time with a yield to the executor between steps, and runs every dump (a resync, the
//! re-dumps some events call for) on a short-lived thread that holds the cache meanwhile. The
//! resync back-off is the runtime's timer. No `unsafe` is needed, in the crate or by you.
//!
//! ```no_run
//! # #[cfg(feature = "tokio")]
//! # async fn example() -> Result<(), netmirror_platform::Error> {
//! use futures_util::StreamExt;
//! use netmirror_platform::{Change, Config, Event, TokioCache};
//!
//! let mut cache = TokioCache::open(Config::new()).await?;
//! while let Some(event) = cache.next().await {
//!     if let Event::Route(Change::Added(route)) = event? {
//!         println!("+ {route}");
//!     }
//! }
//! # Ok(()) }
//! ```
//!
//! # Memory and faults
//!
//! Memory between kernel and user is bounded: `poll` applies
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
//! (`NLM_F_DUMP_INTR`) are redone up to [`Config::with_dump_attempts`] times; when a resync's
//! dump is interrupted every time, the resync is tried again after a doubled back-off, for as
//! long as the churn lasts ([`Cache::poll`] never fails for it). IPv4 routes the
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
//! - `tokio`: [`TokioCache`], the cache as a tokio `Stream`.
//! - `async-io`: [`AsyncIoCache`], the cache as a `Stream` for async-io (smol, async-std, any
//!   executor).
//! - `testing`: test fixtures (`testing::NetNs`, a throwaway network namespace).
//! - `privileged`: enables the integration tests that need root.
//!
//! # Examples
//!
//! `examples/watch_routes.rs` (sync) and `examples/watch_routes_tokio.rs` load a namespace,
//! print its counts and then its route changes for a while; `cargo xtask ci` runs both in a
//! throwaway namespace.
//!
// The async caches' links: to the types when their features are on, else to the section above
// (the first definition of a link wins).
#![cfg_attr(feature = "tokio", doc = "[`TokioCache`]: crate::TokioCache")]
#![cfg_attr(feature = "async-io", doc = "[`AsyncIoCache`]: crate::AsyncIoCache")]
//! [`TokioCache`]: crate#async
//! [`AsyncIoCache`]: crate#async
#![cfg_attr(docsrs, feature(doc_cfg))]

mod addr;
#[cfg(any(feature = "tokio", feature = "async-io"))]
mod asynch;
mod batch;
mod cache;
mod countdown;
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
#[cfg(feature = "async-io")]
#[cfg_attr(docsrs, doc(cfg(feature = "async-io")))]
pub use asynch::with_async_io::AsyncIoCache;
#[cfg(feature = "tokio")]
#[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
pub use asynch::with_tokio::TokioCache;
pub use batch::{Batch, Failure, Item, Op, Report};
pub use cache::{
    AddressesByIfindex, Cache, Change, Counts, DefaultRoutes, Event, PollStatus, RoutesByIfindex,
    RoutesByWeakId, Stats, WEAK_ID_BUCKETS,
};
pub use error::{Error, KernelError, Result};
pub use link::{IFF_LOWER_UP, IFF_UP, Link};
pub use linkinfo::KindAttr;
pub use netns::{Netns, NetnsWatch};
pub use nexthop::{
    GroupMember, NEXTHOP_GRP_TYPE_MPATH, NEXTHOP_GRP_TYPE_RES, Nexthop, NexthopQuery, RTNH_F_DEAD,
    RTNH_F_LINKDOWN, RTNH_F_ONLINK, Resilient,
};
pub use platform::{Config, DumpReport, Platform};
pub use query::{
    AddressQuery, Answer, DstMatch, FilterSide, LinkQuery, RouteQuery, RuleQuery, VisitReport,
    Visitor,
};
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
