//! [`Cache`]: links, addresses, routes and rules of one namespace, loaded by dumps into
//! dedup indexes and kept in sync by the rtnetlink multicast groups.
//!
//! The cache is driven by its user: nothing runs in the background. [`Cache::poll`] waits
//! for the event socket, applies a bounded number of datagrams and returns the changes, each
//! with its old and new object. The only queue between the kernel and the user is the
//! socket's own receive buffer, so memory stays bounded whatever the user's pace; when that
//! buffer overflows (ENOBUFS), the cache resyncs by mark, dump and sweep once the storm has
//! calmed, and reports the differences as ordinary changes.
//!
//! A dump (the initial load, a resync) is received and parsed on a scoped second thread that
//! ends with it, while the calling thread fills the indexes: the kernel builds each datagram
//! inside `recvmsg`, so its work and ours overlap. The threads meet through a bounded channel
//! of chunks. For the initial route load a third short-lived thread reads the kernel's route
//! counters, so the route index is sized once instead of growing by rehashing doublings.

use std::collections::HashMap;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::sync::Arc;
use std::time::{Duration, Instant};

use dedup::{DedupIndex, IndexHandle, IndexType, Object, Placement, Primary};
use netmirror_dedup_index as dedup;

use crate::addr::{Address, AddressId};
use crate::error::{Error, Result};
use crate::link::{ADDR_GEN_MODE, Link};
use crate::nexthop::Nexthop;
use crate::platform::{Chunk, Config, DumpReport, FibCounters, Platform};
use crate::route::{Family, Route, RouteId, RouteWeakId};
use crate::rule::{Rule, RuleId};
use crate::socket::{NlSocket, RcvbufOutcome, Received};
use crate::types::Ifindex;
use crate::wire::{self, MsgWriter, Msgs};

mod state;
use state::State;

/// `NLM_F_APPEND` on an `RTM_NEWROUTE` event: the route went after its peers.
const NLM_F_APPEND: u16 = 0x800;

const RTNLGRP_LINK: u32 = 1;
const RTNLGRP_IPV4_IFADDR: u32 = 5;
const RTNLGRP_IPV4_ROUTE: u32 = 7;
const RTNLGRP_IPV4_RULE: u32 = 8;
const RTNLGRP_IPV6_IFADDR: u32 = 9;
const RTNLGRP_IPV6_ROUTE: u32 = 11;
const RTNLGRP_IPV6_RULE: u32 = 19;
const RTNLGRP_TC: u32 = 4;
const RTNLGRP_IPV4_NETCONF: u32 = 24;
const RTNLGRP_IPV6_NETCONF: u32 = 25;
const RTNLGRP_NEXTHOP: u32 = 32;

/// `IFF_RUNNING` (the operational state is up).
const IFF_RUNNING: u32 = 0x40;

/// `RTM_F_CLONED`: a route cache entry, not a route of a table.
const RTM_F_CLONED: u32 = 0x200;

/// At most this many datagrams are applied per [`Cache::poll`] (bounds the events returned).
const POLL_BUDGET: usize = 64;

/// How many times in a row [`Cache::reload_routes_of`] puts a re-dump off for events that
/// came while it ran.
const MAX_WORK_DEFERRALS: u32 = 4;

/// The longest back-off between an overflow and its resync.
const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// A change of one object: what it was and what it is.
///
/// The vocabulary is netmirror-dedup-index's: the variants `Added`, `Removed` and `Replaced {
/// old, new }`, the accessors [`old`](Self::old) (the object before, `None` when added) and
/// [`new`](Self::new) (the object now, `None` when removed).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Change<T> {
    /// A new object.
    Added(Arc<T>),
    /// An object that is gone.
    Removed(Arc<T>),
    /// The same kernel object (same id) with new attributes.
    Replaced {
        /// The object before.
        old: Arc<T>,
        /// The object now.
        new: Arc<T>,
    },
}

impl<T> Change<T> {
    /// The object before the change, if it existed.
    pub fn old(&self) -> Option<&Arc<T>> {
        match self {
            Change::Added(_) => None,
            Change::Removed(old) | Change::Replaced { old, .. } => Some(old),
        }
    }

    /// The object after the change, if it still exists.
    #[allow(
        clippy::new_ret_no_self,
        reason = "the accessor of the `new` field, not a constructor"
    )]
    pub fn new(&self) -> Option<&Arc<T>> {
        match self {
            Change::Removed(_) => None,
            Change::Added(new) | Change::Replaced { new, .. } => Some(new),
        }
    }

    /// The object after the change, if it still exists.
    #[deprecated(note = "renamed to `new`, the name dedup-index uses too")]
    pub fn new_obj(&self) -> Option<&Arc<T>> {
        self.new()
    }

    fn from_dedup(change: dedup::Change<T>) -> Option<Self> {
        match change {
            dedup::Change::Added(new) => Some(Change::Added(new)),
            dedup::Change::Replaced { old, new } => Some(Change::Replaced { old, new }),
            _ => None,
        }
    }
}

/// Something the cache reports from [`Cache::poll`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Event {
    /// A link changed.
    Link(Change<Link>),
    /// An address changed.
    Address(Change<Address>),
    /// A route changed.
    Route(Change<Route>),
    /// A rule changed.
    Rule(Change<Rule>),
    /// A nexthop object changed.
    Nexthop(Change<Nexthop>),
    /// The receive buffer overflowed (ENOBUFS): events were lost; a resync is scheduled.
    Overrun,
    /// A resync finished; the changes it found were reported just before this event.
    Resynced {
        /// How many changes the resync found.
        n_changes: usize,
        /// How many of its dumps were interrupted and redone.
        n_interrupted: u32,
    },
}

/// What one [`Cache::poll_status`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PollStatus {
    /// The number of events appended (what [`Cache::poll`] returns).
    pub n_events: usize,
    /// True when the event socket had nothing more to read (or the wait expired): an event
    /// loop may clear the socket's readiness. False when the poll stopped at its bound on
    /// datagrams with more waiting: poll again before waiting for readiness.
    pub drained: bool,
}

/// Counters for diagnostics and tests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stats {
    /// Messages applied from the event socket.
    pub n_messages: u64,
    /// Times the event socket overflowed (ENOBUFS).
    pub n_overruns: u64,
    /// Full resyncs done.
    pub n_resyncs: u64,
    /// Dumps redone because they were interrupted (NLM_F_DUMP_INTR).
    pub n_dump_retries: u64,
    /// Resyncs put off because every attempt of one of their dumps was interrupted.
    pub n_deferred_resyncs: u64,
    /// Datagrams dropped because their sender was not the kernel.
    pub n_foreign: u64,
    /// Messages that could not be parsed (traced and skipped).
    pub n_malformed: u64,
    /// Times the links were read again for their silent changes
    /// ([`Config::with_link_refresh`]).
    pub n_link_refreshes: u64,
}

/// Routes by output interface (the first next hop's for multipath routes).
#[derive(Debug, Clone, Copy)]
pub struct RoutesByIfindex;
/// Default routes only (prefix length 0), all in one list.
#[derive(Debug, Clone, Copy)]
pub struct DefaultRoutes;
/// Routes by weak id (see [`Route::weak_id`]), to find what a replace hits.
///
/// To keep memory flat, the partitions are buckets of a hash of the weak id
/// ([`WEAK_ID_BUCKETS`] of them): a lookup walks one bucket (a few routes even at 1M) and
/// compares weak ids.
#[derive(Debug, Clone, Copy)]
pub struct RoutesByWeakId;

/// The number of buckets of [`RoutesByWeakId`].
pub const WEAK_ID_BUCKETS: u32 = 1 << 12;
/// Addresses by interface.
#[derive(Debug, Clone, Copy)]
pub struct AddressesByIfindex;

impl Object for Link {
    type Id = u32;
    fn id(&self) -> u32 {
        self.ifindex().into()
    }
}

impl Object for Address {
    type Id = AddressId;
    fn id(&self) -> AddressId {
        Address::id(self)
    }
}

impl Object for Route {
    type Id = RouteId;
    fn id(&self) -> RouteId {
        Route::id(self)
    }
    fn hash_id<H: std::hash::Hasher>(&self, state: &mut H) {
        Route::hash_id(self, state);
    }
}

impl Object for Rule {
    type Id = RuleId;
    fn id(&self) -> RuleId {
        Rule::id(self)
    }
}

impl Object for Nexthop {
    type Id = u32;
    fn id(&self) -> u32 {
        Nexthop::id(self)
    }
}

impl IndexType<Route> for RoutesByIfindex {
    type Partition = u32;
    fn partition(&self, route: &Route) -> Option<u32> {
        route.ifindexes().next().map(u32::from)
    }
    fn dense_key(&self, ifindex: &u32) -> Option<usize> {
        usize::try_from(*ifindex).ok()
    }
}

impl IndexType<Route> for DefaultRoutes {
    type Partition = ();
    fn partition(&self, route: &Route) -> Option<()> {
        route.is_default().then_some(())
    }
}

impl IndexType<Route> for RoutesByWeakId {
    type Partition = u32;
    fn partition(&self, route: &Route) -> Option<u32> {
        Some((route.weak_hash() % u64::from(WEAK_ID_BUCKETS)) as u32)
    }
    fn dense_key(&self, bucket: &u32) -> Option<usize> {
        usize::try_from(*bucket).ok()
    }
}

impl IndexType<Address> for AddressesByIfindex {
    type Partition = u32;
    fn partition(&self, addr: &Address) -> Option<u32> {
        Some(addr.ifindex().into())
    }
    fn dense_key(&self, ifindex: &u32) -> Option<usize> {
        usize::try_from(*ifindex).ok()
    }
}

/// The bucket of a weak id: a deterministic hash (partition keys must be pure functions of
/// the object).
fn weak_bucket(weak: &RouteWeakId) -> u32 {
    (weak.stable_hash() % u64::from(WEAK_ID_BUCKETS)) as u32
}

#[derive(Debug)]
struct Resync {
    pending: bool,
    first_overrun: Option<Instant>,
    last_overrun: Option<Instant>,
    /// When the last resync finished.
    last_resync: Option<Instant>,
    backoff: Duration,
    initial_backoff: Duration,
}

/// The kinds of objects a dump fills.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Links,
    Addresses,
    Routes,
    Rules,
    Nexthops,
    /// The IPv6 routes of protocol kernel on one link: its addresses' prefix routes (and its
    /// link-local and multicast routes), read again without a sweep.
    PrefixRoutes,
}

/// A live cache of one namespace's links, addresses, routes (all tables, both families) and
/// rules.
///
/// ```no_run
/// use netmirror_platform::{Cache, Config, Event, Netns};
/// use std::time::Duration;
///
/// let mut cache = Cache::open(Config::new().with_netns(Netns::name("blue")))?;
/// println!("{} routes", cache.routes().count());
/// let mut events = Vec::new();
/// loop {
///     cache.poll(Some(Duration::from_secs(1)), &mut events)?;
///     for event in events.drain(..) {
///         if let Event::Route(change) = event {
///             println!("{:?} -> {:?}", change.old(), change.new());
///         }
///     }
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Cache {
    platform: Platform,
    events: NlSocket,
    rcvbuf: RcvbufOutcome,
    /// The objects and how events change them (socket-free).
    state: State,
    resync: Resync,
    /// The kernel's route counters, to size the route index before a large initial dump.
    fib: FibCounters,
    stats: Stats,
    /// When the links are next read again ([`Config::with_link_refresh`]).
    link_refresh_at: Option<Instant>,
    /// How many times in a row a re-dump of a link's routes was put off because events came
    /// while it ran (see [`Cache::reload_routes_of`]).
    work_deferrals: u32,
}

impl std::fmt::Debug for Cache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cache")
            .field("n_links", &self.state.links.len())
            .field("n_addresses", &self.state.addresses.len())
            .field("n_routes", &self.state.routes.len())
            .field("n_rules", &self.state.rules.len())
            .field("n_nexthops", &self.state.nexthops.len())
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

impl Cache {
    /// Opens the sockets as `config` says, subscribes to the multicast groups, then loads
    /// everything with dumps. Events that happen during the load are applied by the first
    /// [`Cache::poll`].
    #[tracing::instrument(level = "debug", skip_all)]
    pub fn open(config: Config) -> Result<Self> {
        let (events, fib) = config
            .netns
            .run_in(|| Ok((NlSocket::open()?, FibCounters::open())))?;
        let rcvbuf = events.set_rcvbuf(config.rcvbuf);
        for group in [
            RTNLGRP_LINK,
            RTNLGRP_IPV4_IFADDR,
            RTNLGRP_IPV6_IFADDR,
            RTNLGRP_IPV4_ROUTE,
            RTNLGRP_IPV6_ROUTE,
            RTNLGRP_IPV4_RULE,
            RTNLGRP_IPV6_RULE,
        ] {
            events.add_membership(group)?;
        }
        // Netconf: a sysctl write of `ignore_routes_with_linkdown` changes the flags the
        // kernel reports on routes without a carrier, and only this group hears of it. Traffic
        // control: a new root queueing discipline is a link's `qdisc`, and only this group
        // hears of it.
        for group in [RTNLGRP_IPV4_NETCONF, RTNLGRP_IPV6_NETCONF, RTNLGRP_TC] {
            if let Err(err) = events.add_membership(group) {
                tracing::debug!(%err, group, "no netconf or traffic control notifications");
            }
        }
        // Kernels before 5.3 have no nexthop objects (nor their group): nothing to follow.
        if let Err(err) = events.add_membership(RTNLGRP_NEXTHOP) {
            tracing::debug!(%err, "no nexthop notifications");
        }
        let backoff = config.resync_backoff;
        let link_refresh_at = config.link_refresh.map(|every| Instant::now() + every);
        let platform = Platform::open(config)?;
        let mut cache = Cache {
            platform,
            events,
            rcvbuf,
            state: State::new(),
            resync: Resync {
                pending: false,
                first_overrun: None,
                last_overrun: None,
                last_resync: None,
                backoff,
                initial_backoff: backoff,
            },
            fib,
            stats: Stats::default(),
            link_refresh_at,
            work_deferrals: 0,
        };
        // The initial load reports nothing: the user reads the cache.
        cache.load_all(None)?;
        Ok(cache)
    }

    /// The platform the cache uses for its dumps: run queries and batches on it.
    pub fn platform(&self) -> &Platform {
        &self.platform
    }

    /// What the event socket's receive buffer request achieved.
    pub fn rcvbuf(&self) -> RcvbufOutcome {
        self.rcvbuf
    }

    /// Counters for diagnostics.
    pub fn stats(&self) -> Stats {
        Stats {
            n_foreign: self.events.n_foreign,
            ..self.stats
        }
    }

    /// True while a resync is scheduled (after an overflow, waiting for the storm to calm).
    pub fn resync_pending(&self) -> bool {
        self.resync.pending
    }

    /// The event socket's netlink port id.
    pub fn port(&self) -> u32 {
        self.events.port()
    }

    /// All links, in kernel order.
    pub fn links(&self) -> impl Iterator<Item = &Arc<Link>> {
        self.state.links.iter()
    }

    /// The link with this index.
    pub fn link(&self, ifindex: Ifindex) -> Option<&Arc<Link>> {
        self.state.links.get(&ifindex.0)
    }

    /// The link with this name.
    pub fn link_by_name(&self, name: &str) -> Option<&Arc<Link>> {
        self.state.links.iter().find(|link| link.name() == name)
    }

    /// All addresses, in kernel order.
    pub fn addresses(&self) -> impl Iterator<Item = &Arc<Address>> {
        self.state.addresses.iter()
    }

    /// The addresses of one interface.
    pub fn addresses_of(&self, ifindex: Ifindex) -> impl Iterator<Item = &Arc<Address>> {
        self.state
            .addresses
            .partition(self.state.addresses_by_ifindex, &ifindex.0)
            .into_iter()
            .flatten()
    }

    /// All routes (every table, both families), in kernel order.
    pub fn routes(&self) -> impl Iterator<Item = &Arc<Route>> {
        self.state.routes.iter()
    }

    /// The routes going out of one interface (by their first next hop).
    pub fn routes_of(&self, ifindex: Ifindex) -> impl Iterator<Item = &Arc<Route>> {
        self.state
            .routes
            .partition(self.state.routes_by_ifindex, &ifindex.0)
            .into_iter()
            .flatten()
    }

    /// The default routes of every table.
    pub fn default_routes(&self) -> impl Iterator<Item = &Arc<Route>> {
        self.state
            .routes
            .partition(self.state.default_routes, &())
            .into_iter()
            .flatten()
    }

    /// The routes with this weak id (the kernel's prefix key).
    pub fn routes_with_weak_id<'a>(
        &'a self,
        weak: &'a RouteWeakId,
    ) -> impl Iterator<Item = &'a Arc<Route>> + 'a {
        self.state
            .routes
            .partition(self.state.routes_by_weak_id, &weak_bucket(weak))
            .into_iter()
            .flatten()
            .filter(move |route| route.weak_id() == *weak)
    }

    /// The route with this id.
    pub fn route(&self, id: &RouteId) -> Option<&Arc<Route>> {
        self.state.routes.get(id)
    }

    /// All rules, in kernel order.
    pub fn rules(&self) -> impl Iterator<Item = &Arc<Rule>> {
        self.state.rules.iter()
    }

    /// All nexthop objects, in kernel order (by id).
    pub fn nexthops(&self) -> impl Iterator<Item = &Arc<Nexthop>> {
        self.state.nexthops.iter()
    }

    /// The nexthop object with this id.
    pub fn nexthop(&self, id: u32) -> Option<&Arc<Nexthop>> {
        self.state.nexthops.get(&id)
    }

    /// The nexthop object a route points at (`nhid`), if it has one and the cache holds it.
    pub fn nexthop_of(&self, route: &Route) -> Option<&Arc<Nexthop>> {
        route.nh_id().and_then(|id| self.state.nexthops.get(&id))
    }

    /// The routes that point at nexthop `id` (`nhid`). A walk over all routes.
    pub fn routes_with_nhid(&self, id: u32) -> impl Iterator<Item = &Arc<Route>> {
        self.state
            .routes
            .iter()
            .filter(move |route| route.nh_id() == Some(id))
    }

    /// How many objects of each kind the cache holds.
    pub fn counts(&self) -> Counts {
        Counts {
            links: self.state.links.len(),
            addresses: self.state.addresses.len(),
            routes: self.state.routes.len(),
            rules: self.state.rules.len(),
            nexthops: self.state.nexthops.len(),
        }
    }

    /// Waits up to `timeout` (`None`: forever) for events, applies what arrived (at most a
    /// bounded number of datagrams) and appends the resulting events to `out`. Once the
    /// socket is drained, also reads again what the applied events may have changed without a
    /// word, and the links when their refresh is due; and runs a scheduled resync once the
    /// socket is quiet and the back-off has passed. Returns the number of events appended: 0
    /// when the timeout expired, but also when what arrived changed nothing (a bridge port
    /// message, an update equal to the held object).
    ///
    /// [`Cache::poll_status`] says in addition whether the socket was drained.
    pub fn poll(&mut self, timeout: Option<Duration>, out: &mut Vec<Event>) -> Result<usize> {
        Ok(self.poll_status(timeout, out)?.n_events)
    }

    /// [`Cache::poll`], telling also whether the event socket was drained: an event loop
    /// that registered the cache's fd clears its readiness only when
    /// [`PollStatus::drained`] is true (otherwise more is waiting, and an edge-triggered
    /// loop would not be woken for it). Call it again by [`Cache::next_deadline`] at the
    /// latest, even when the socket stays quiet.
    ///
    /// ```no_run
    /// use netmirror_platform::{Cache, Config};
    /// use std::time::Duration;
    ///
    /// let mut cache = Cache::open(Config::new())?;
    /// let mut events = Vec::new();
    /// // An edge-triggered loop: drain before waiting for readiness again.
    /// loop {
    ///     let status = cache.poll_status(Some(Duration::ZERO), &mut events)?;
    ///     if status.drained {
    ///         break;
    ///     }
    /// }
    /// println!("{} events, resync due at {:?}", events.len(), cache.next_deadline());
    /// # Ok::<(), netmirror_platform::Error>(())
    /// ```
    pub fn poll_status(
        &mut self,
        timeout: Option<Duration>,
        out: &mut Vec<Event>,
    ) -> Result<PollStatus> {
        let before = out.len();
        let timeout = match self.next_deadline() {
            Some(deadline) => {
                let left = deadline.saturating_duration_since(Instant::now());
                Some(timeout.map_or(left, |t| t.min(left)))
            }
            None => timeout,
        };
        let drained = self.drain(timeout, None, out)?;
        if self.kernel_work_due(drained) {
            self.kernel_work(drained, out)?;
        }
        Ok(PollStatus {
            n_events: out.len() - before,
            drained,
        })
    }

    /// When the cache must be polled even if its socket stays quiet: the end of the back-off
    /// of a scheduled resync, or the next re-read of the links ([`Config::with_link_refresh`],
    /// every 5 s by default). `None` when nothing is scheduled. An event loop sets a timer
    /// for it and calls [`Cache::poll`] (with a zero timeout) when it fires.
    ///
    /// ```
    /// # fn example(cache: &netmirror_platform::Cache) {
    /// use std::time::{Duration, Instant};
    ///
    /// let wait = cache
    ///     .next_deadline()
    ///     .map(|deadline| deadline.saturating_duration_since(Instant::now()));
    /// let timeout = wait.unwrap_or(Duration::from_secs(60));
    /// # let _ = timeout; }
    /// ```
    pub fn next_deadline(&self) -> Option<Instant> {
        let resync = self
            .resync
            .last_overrun
            .filter(|_| self.resync.pending)
            .and_then(|last| last.checked_add(self.resync.backoff));
        match (resync, self.link_refresh_at) {
            (Some(resync), Some(links)) => Some(resync.min(links)),
            (resync, links) => resync.or(links),
        }
    }

    /// Receives and applies at most [`POLL_BUDGET`] datagrams, the first after waiting up
    /// to `timeout` (`Some(ZERO)`: not at all), the others without waiting, and none after
    /// `until` has passed. Talks to the kernel only through the event socket: never blocks
    /// longer than `timeout`. Returns whether the socket was drained (or the wait expired).
    pub(crate) fn drain(
        &mut self,
        timeout: Option<Duration>,
        until: Option<Instant>,
        out: &mut Vec<Event>,
    ) -> Result<bool> {
        for round in 0..POLL_BUDGET {
            if round > 0 && until.is_some_and(|until| Instant::now() >= until) {
                return Ok(false);
            }
            let nonblocking = round > 0 || timeout == Some(Duration::ZERO);
            if !nonblocking {
                // SO_RCVTIMEO: zero means forever, so clamp to a microsecond.
                let wait = timeout.map(|t| t.max(Duration::from_micros(1)));
                self.events.set_timeout(wait)?;
            }
            // Applied where it was read: the socket's buffer, the state and the counters
            // are apart.
            match self.events.recv_event(nonblocking) {
                Ok(Received::Datagram(datagram)) => apply_datagram(
                    &mut self.state,
                    &mut self.stats,
                    &mut self.resync,
                    datagram,
                    out,
                ),
                Ok(Received::Nothing) => {
                    self.state.events_drained();
                    return Ok(true);
                }
                Ok(Received::Truncated { len }) => {
                    // Longer than any notification seen: its events are lost, as on an
                    // overflow, but the socket still holds what followed.
                    self.stats.n_malformed += 1;
                    tracing::warn!(
                        len,
                        "event datagram longer than the buffer, resync scheduled"
                    );
                    self.resync.pending = true;
                    self.resync.last_overrun.get_or_insert(Instant::now());
                }
                Err(Error::Overrun) => self.note_overrun(out),
                Err(err) => return Err(err),
            }
        }
        Ok(false)
    }

    /// Whether event datagrams already read wait to be applied: [`Cache::drain`] has work
    /// though the socket may not be readable.
    #[cfg(any(feature = "tokio", feature = "async-io"))]
    pub(crate) fn holds_events(&self) -> bool {
        self.events.holds_events()
    }

    /// Whether [`Cache::kernel_work`] has something to do after a drain that ended
    /// `drained`: re-dumps the applied events call for or the link refresh (both only once the
    /// socket is drained, see [`Cache::kernel_work`]), or a resync that is due. A pure check,
    /// no I/O.
    pub(crate) fn kernel_work_due(&self, drained: bool) -> bool {
        (drained && (self.state.has_work() || self.link_refresh_due()))
            || (self.resync.pending && self.resync_due(drained))
    }

    /// Whether the links are to be read again now ([`Config::with_link_refresh`]).
    fn link_refresh_due(&self) -> bool {
        self.link_refresh_at.is_some_and(|at| Instant::now() >= at)
    }

    /// Reads the links again, reporting what changed; and schedules the next time.
    fn refresh_links(&mut self, out: &mut Vec<Event>) -> Result<()> {
        let every = self.platform.config().link_refresh;
        self.link_refresh_at = every.map(|every| Instant::now() + every);
        self.stats.n_link_refreshes += 1;
        self.state.settle(out);
        self.read_links_again(out)
    }

    /// Reads the links again, reporting what changed, and the addresses of those whose
    /// address generation mode changed: a sysctl write of it makes the link-local address at
    /// once, announced only once the link is up and its duplicate detection starts.
    fn read_links_again(&mut self, out: &mut Vec<Event>) -> Result<()> {
        let first = out.len();
        self.load(Kind::Links, None, Some(out))?;
        let regenerated: Vec<u32> = out[first..]
            .iter()
            .filter_map(|event| match event {
                Event::Link(Change::Replaced { old, new })
                    if old.setting(ADDR_GEN_MODE) != new.setting(ADDR_GEN_MODE) =>
                {
                    Some(new.ifindex().0)
                }
                _ => None,
            })
            .collect();
        for ifindex in regenerated {
            self.load(Kind::Addresses, Some(ifindex), Some(out))?;
        }
        Ok(())
    }

    /// The dumps after a drain that ended `drained`: what the applied events call for
    /// ([`Cache::run_work`]) and the link refresh once the socket is drained, then a scheduled
    /// resync once it is due. Blocks for as long as the kernel takes; a resync whose dumps were
    /// all interrupted is scheduled again with a longer back-off.
    ///
    /// A dump read while events wait in the socket sees the kernel after them; those events,
    /// applied after the dump, would then set back what it read, and where the kernel's later
    /// change was silent (routes flagged `linkdown` when a link lost its carrier, flushed when
    /// it went down) nothing would set it right again. So these dumps wait until every event
    /// sent before them is applied: until a drain empties the socket.
    pub(crate) fn kernel_work(&mut self, drained: bool, out: &mut Vec<Event>) -> Result<()> {
        let mut res = Ok(());
        if drained {
            res = self.run_work(out);
            if res.is_ok() && self.link_refresh_due() {
                res = self.refresh_links(out);
            }
        }
        if res.is_ok() && self.resync.pending && self.resync_due(drained) {
            res = self.run_resync(out);
        }
        // A resync the kernel interrupted every time is put off, never given up.
        match res {
            Err(Error::DumpInterrupted { attempts }) => self.defer_resync(attempts),
            other => other?,
        }
        Ok(())
    }

    /// Resyncs everything now (mark, dump, sweep), reporting the differences as events.
    ///
    /// When the kernel interrupted every attempt of a dump ([`Error::DumpInterrupted`]), the
    /// error is returned and a resync is scheduled: [`Cache::poll`] tries again after a
    /// back-off.
    pub fn resync(&mut self, out: &mut Vec<Event>) -> Result<()> {
        let res = self.run_resync(out);
        if let Err(Error::DumpInterrupted { attempts }) = &res {
            self.defer_resync(*attempts);
        }
        res
    }

    /// The kernel interrupted every attempt of a resync's (or a refresh's) dump: concurrent
    /// changes go on. Schedules a whole resync again after a doubled back-off, as after an
    /// overflow, for as long as the churn lasts: the cache never gives up on following.
    fn defer_resync(&mut self, attempts: u32) {
        let now = Instant::now();
        self.stats.n_deferred_resyncs += 1;
        self.resync.backoff = self.resync.backoff.saturating_mul(2).min(MAX_BACKOFF);
        self.resync.pending = true;
        self.resync.first_overrun = Some(now);
        self.resync.last_overrun = Some(now);
        tracing::warn!(
            attempts,
            backoff = ?self.resync.backoff,
            "every dump attempt was interrupted by concurrent changes: resync again after a back-off"
        );
    }

    fn note_overrun(&mut self, out: &mut Vec<Event>) {
        let now = Instant::now();
        self.stats.n_overruns += 1;
        tracing::warn!(
            n_overruns = self.stats.n_overruns,
            "netlink receive buffer overflowed, events lost: resync scheduled"
        );
        let soon_after_resync = self
            .resync
            .last_resync
            .is_some_and(|last| last.elapsed() < self.resync.backoff.saturating_mul(4));
        if self.resync.pending || soon_after_resync {
            // Still storming: wait longer before dumping again.
            self.resync.backoff = self.resync.backoff.saturating_mul(2).min(MAX_BACKOFF);
        }
        self.resync.pending = true;
        self.resync.first_overrun.get_or_insert(now);
        self.resync.last_overrun = Some(now);
        out.push(Event::Overrun);
    }

    /// A resync runs once the socket has been quiet and the back-off since the last overflow
    /// has passed, or at the latest 10 back-offs after the first overflow.
    fn resync_due(&self, quiet: bool) -> bool {
        let now = Instant::now();
        let calm = self.next_deadline().is_some_and(|deadline| now >= deadline);
        let overdue = self
            .resync
            .first_overrun
            .and_then(|first| first.checked_add(self.resync.backoff.saturating_mul(10)))
            .is_some_and(|due| now >= due);
        (quiet && calm) || overdue
    }

    #[tracing::instrument(level = "debug", skip_all)]
    fn run_resync(&mut self, out: &mut Vec<Event>) -> Result<()> {
        self.state.settle(out);
        let before = out.len();
        let retries_before = self.stats.n_dump_retries;
        self.load_all(Some(out))?;
        self.stats.n_resyncs += 1;
        let n_changes = out.len() - before;
        let n_interrupted = (self.stats.n_dump_retries - retries_before) as u32;
        tracing::info!(n_changes, n_interrupted, "resync done");
        out.push(Event::Resynced {
            n_changes,
            n_interrupted,
        });
        let calm_since_last = self
            .resync
            .last_overrun
            .is_some_and(|last| last.elapsed() >= self.resync.backoff.saturating_mul(4));
        if calm_since_last {
            self.resync.backoff = self.resync.initial_backoff;
        }
        self.resync.pending = false;
        self.resync.last_resync = Some(Instant::now());
        self.resync.first_overrun = None;
        Ok(())
    }

    fn load_all(&mut self, mut out: Option<&mut Vec<Event>>) -> Result<()> {
        for kind in [
            Kind::Links,
            Kind::Addresses,
            Kind::Nexthops,
            Kind::Routes,
            Kind::Rules,
        ] {
            self.load(kind, None, out.as_deref_mut())?;
        }
        Ok(())
    }

    /// Dump, mark, insert, sweep for one kind of object; for routes and addresses optionally
    /// only those of one interface (a filtered dump when the kernel allows it).
    fn load(
        &mut self,
        kind: Kind,
        ifindex: Option<u32>,
        out: Option<&mut Vec<Event>>,
    ) -> Result<()> {
        let whole = None::<(IndexHandle<Primary>, ())>;
        let platform = &self.platform;
        let stats = &mut self.stats;
        match kind {
            Kind::Links => {
                let parse = Link::parse;
                let dump = Dump::new(platform, stats, kind, None, &parse);
                let Some(out) = out else {
                    return dump.into_index(&mut self.state.links, whole, Event::Link, None);
                };
                let mut changes = Vec::new();
                let res = dump.into_index(
                    &mut self.state.links,
                    whole,
                    Event::Link,
                    Some(&mut changes),
                );
                // A change the dump saw first is one its event will not report again, nor
                // what the kernel changed with it without a word.
                for event in changes {
                    match event {
                        Event::Link(change) => self.state.after_link_change(change, out),
                        other => out.push(other),
                    }
                }
                res
            }
            Kind::Addresses => {
                let parse = |payload: &[u8]| {
                    Ok(Address::parse(payload)?
                        .filter(|addr| ifindex.is_none_or(|i| addr.ifindex() == Ifindex(i))))
                };
                let partition = ifindex.map(|ifindex| (self.state.addresses_by_ifindex, ifindex));
                let dump = Dump::new(platform, stats, kind, ifindex, &parse);
                dump.into_index(&mut self.state.addresses, partition, Event::Address, out)
            }
            Kind::Routes => {
                let parse = |payload: &[u8]| route_on(payload, ifindex);
                let partition = ifindex.map(|ifindex| (self.state.routes_by_ifindex, ifindex));
                let mut dump = Dump::new(platform, stats, kind, ifindex, &parse);
                if ifindex.is_none() && out.is_none() && counting_pays() {
                    dump = dump.sized_by(&self.fib);
                }
                dump.into_index(&mut self.state.routes, partition, Event::Route, out)
            }
            Kind::PrefixRoutes => {
                let parse = |payload: &[u8]| {
                    Ok(route_on(payload, ifindex)?.filter(|route| {
                        route.family() == Family::V6 && route.protocol() == crate::Protocol::KERNEL
                    }))
                };
                let dump = Dump::new(platform, stats, kind, ifindex, &parse);
                dump.upsert_into(&mut self.state.routes, Event::Route, out)
            }
            Kind::Rules => {
                let parse = Rule::parse;
                let dump = Dump::new(platform, stats, kind, None, &parse);
                dump.into_index(&mut self.state.rules, whole, Event::Rule, out)
            }
            Kind::Nexthops => {
                let parse = Nexthop::parse;
                let dump = Dump::new(platform, stats, kind, None, &parse);
                match dump.into_index(&mut self.state.nexthops, whole, Event::Nexthop, out) {
                    // A kernel without nexthop objects (before 5.3) refuses the dump.
                    Err(Error::Kernel(err))
                        if err.errno == libc::EOPNOTSUPP || err.errno == libc::EINVAL =>
                    {
                        tracing::debug!(%err, "no nexthop objects");
                        Ok(())
                    }
                    other => other,
                }
            }
        }
    }

    /// Applies one datagram as if the event socket had received it (tests, fuzzing).
    #[cfg(any(all(test, feature = "privileged"), feature = "fuzzing"))]
    pub(crate) fn apply_datagram(&mut self, datagram: &[u8], out: &mut Vec<Event>) {
        apply_datagram(
            &mut self.state,
            &mut self.stats,
            &mut self.resync,
            datagram,
            out,
        );
    }

    /// Asks the kernel again what the events applied by this poll may have changed without
    /// a notification ([`State::take_work`]).
    fn run_work(&mut self, out: &mut Vec<Event>) -> Result<()> {
        self.state.settle(out);
        let work = self.state.take_work();
        if work.nexthops {
            let mut changes = Vec::new();
            self.load(Kind::Nexthops, None, Some(&mut changes))?;
            self.state.nexthops_resynced(&changes, out);
            out.append(&mut changes);
        }
        if let Some(ids) = self.state.take_nhid_refresh() {
            // The kernel has no filter by nexthop: the routes of the devices the nexthops
            // sit on (every route on them uses those), filtered by the kernel; without
            // strict checking, or when a device is not known, a dump of every route.
            let devices = self
                .state
                .devices_of_nexthops(&ids)
                .filter(|_| self.platform.strict_check());
            let mut fresh = Vec::new();
            match devices {
                Some(devices) => {
                    for dev in devices {
                        fresh.extend(self.platform.routes().through(dev).execute()?.items);
                    }
                }
                None => fresh = self.platform.routes().execute()?.items,
            }
            self.state.nhid_routes_refreshed(&ids, fresh, out);
        }
        if work.links {
            self.read_links_again(out)?;
        }
        for ifindex in work.prefix_routes {
            self.load(Kind::PrefixRoutes, Some(ifindex), Some(&mut *out))?;
        }
        let mut ifindexes = work.ifindexes.into_iter();
        while let Some(ifindex) = ifindexes.next() {
            if !self.reload_routes_of(ifindex, out)? {
                // Read the events first; the rest of the work comes back once a drain empties
                // the socket again.
                self.state
                    .suspect_again(std::iter::once(ifindex).chain(ifindexes));
                return Ok(());
            }
        }
        self.work_deferrals = 0;
        Ok(())
    }

    /// Reads the routes going out of `ifindex` again, and the multipath routes with a later
    /// next hop on it (taking a link down or losing its carrier marks such hops `dead` or
    /// `linkdown`, or, for IPv4, kills the route when no hop is left, without a
    /// notification), and makes the cache's what the dumps say, reporting the changes.
    ///
    /// False, with nothing applied, when events arrived while the dumps ran. Such a dump may
    /// have seen the kernel after them: a secondary address deleted takes its `local` route
    /// with it, announced after the address, and a dump that reported the route gone before
    /// the address's event is read would turn the kernel's order round. So the dumps are put
    /// off until the events are applied, at most [`MAX_WORK_DEFERRALS`] times in a row (then
    /// applied, under a storm that never pauses).
    fn reload_routes_of(&mut self, ifindex: u32, out: &mut Vec<Event>) -> Result<bool> {
        let parse = |payload: &[u8]| route_on(payload, Some(ifindex));
        let dump = Dump::new(
            &self.platform,
            &mut self.stats,
            Kind::Routes,
            Some(ifindex),
            &parse,
        );
        let objs = dump.collect()?;
        let held = self.state.multipath_through(ifindex, None);
        let multipath: HashMap<RouteId, Route> = if held.is_empty() {
            HashMap::new()
        } else {
            let answer = self.platform.routes().through(ifindex).execute()?;
            answer
                .items
                .into_iter()
                .map(|route| (route.id(), route))
                .collect()
        };
        if self.work_deferrals < MAX_WORK_DEFERRALS && self.events.events_waiting() {
            self.work_deferrals += 1;
            tracing::debug!(ifindex, "events came during a route re-dump; put off");
            return Ok(false);
        }
        let partition = Some((self.state.routes_by_ifindex, ifindex));
        sync_index(&mut self.state.routes, partition, objs, Event::Route, out);
        if !held.is_empty() {
            self.state.replace_held(held, multipath, out);
        }
        Ok(true)
    }
}

/// Applies the messages of one datagram of the event socket to `state`.
fn apply_datagram(
    state: &mut State,
    stats: &mut Stats,
    resync: &mut Resync,
    datagram: &[u8],
    out: &mut Vec<Event>,
) {
    for msg in Msgs::new(datagram) {
        match msg {
            Ok(msg) => {
                stats.n_messages += 1;
                if let Err(err) = state.apply(&msg, out) {
                    stats.n_malformed += 1;
                    tracing::warn!(%err, kind = msg.kind, "skipped a malformed event");
                }
            }
            Err(err) => {
                // The rest of the datagram is lost: resync to be sure.
                stats.n_malformed += 1;
                tracing::warn!(%err, "malformed datagram on the event socket, resync scheduled");
                resync.pending = true;
                resync.last_overrun.get_or_insert(Instant::now());
            }
        }
    }
}

impl AsFd for Cache {
    /// The event socket: readable when [`Cache::poll`] has work. Register it with an event
    /// loop and call [`Cache::poll_status`] with a zero timeout when it is readable, again
    /// until it says the socket was drained: the cache reads datagrams several at a time, and
    /// those it holds do not make the socket readable.
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.events.as_fd()
    }
}

impl AsRawFd for Cache {
    /// The event socket, as [`AsFd`] gives it (for event loops that take a raw fd).
    fn as_raw_fd(&self) -> RawFd {
        self.events.as_fd().as_raw_fd()
    }
}

/// One dump of one kind of object, received and parsed on a second thread
/// ([`Platform::dump_retry_parallel`]) while the calling thread fills an index.
struct Dump<'a, T> {
    platform: &'a Platform,
    stats: &'a mut Stats,
    kind: Kind,
    ifindex: Option<u32>,
    parse: &'a (dyn Fn(&[u8]) -> Result<Option<T>> + Sync),
    /// For a full route dump: the counters to size the index by.
    fib: Option<&'a FibCounters>,
}

impl<'a, T: Object + Send + Sync> Dump<'a, T> {
    fn new(
        platform: &'a Platform,
        stats: &'a mut Stats,
        kind: Kind,
        ifindex: Option<u32>,
        parse: &'a (dyn Fn(&[u8]) -> Result<Option<T>> + Sync),
    ) -> Self {
        Dump {
            platform,
            stats,
            kind,
            ifindex,
            parse,
            fib: None,
        }
    }

    /// Sizes the index by the kernel's counters while the dump runs (see [`FibCounters`] and
    /// [`counting_pays`]).
    fn sized_by(mut self, fib: &'a FibCounters) -> Self {
        self.fib = Some(fib);
        self
    }

    /// Makes `index` (or one partition of it) hold exactly what the kernel dumps: mark,
    /// insert, sweep, redoing interrupted dumps. Malformed messages are traced, counted and
    /// skipped.
    ///
    /// Without `out` (nothing to report: the initial load) the objects go into the index by
    /// the bulk path as they arrive, so inserting overlaps the kernel's dumping; an
    /// interrupted attempt marks everything again and the next one re-adds. With `out` the
    /// dump is collected first and [`sync_index`] reports each change.
    fn into_index<X: IndexType<T>>(
        self,
        index: &mut DedupIndex<T>,
        partition: Option<(IndexHandle<X>, X::Partition)>,
        wrap: fn(Change<T>) -> Event,
        out: Option<&mut Vec<Event>>,
    ) -> Result<()> {
        if let Some(out) = out {
            let objs = self.collect()?;
            sync_index(index, partition, objs, wrap, out);
            return Ok(());
        }
        let build = self.request();
        let Dump {
            platform,
            stats,
            kind,
            parse,
            fib,
            ..
        } = self;
        let mut n_malformed = 0u64;
        let on_malformed = count_malformed(kind, &mut n_malformed);
        // Into an empty index (the initial load) nothing can go stale, so the sweep
        // (a walk of every entry) is needed only after an interrupted attempt.
        let mut must_sweep = !index.is_empty();
        mark_scope(index, &partition);
        let report = std::thread::scope(|scope| {
            // The kernel's count of what is coming, read on a third thread (for IPv4
            // the kernel walks its tries to count) and applied between two chunks.
            let (size_tx, size_rx) = std::sync::mpsc::sync_channel::<usize>(1);
            if let Some(fib) = fib {
                let counting = std::thread::Builder::new()
                    .name("netmirror-count".into())
                    .spawn_scoped(scope, move || {
                        if let Some(n) = fib.estimate_routes() {
                            let _ = size_tx.send(n);
                        }
                    });
                if let Err(err) = counting {
                    tracing::debug!(%err, "cannot count routes ahead of the dump");
                }
            }
            platform.dump_retry_parallel(
                build,
                parse,
                |chunk| match chunk {
                    Chunk::Objs(objs) => {
                        if let Ok(expected) = size_rx.try_recv() {
                            // A little over the count: routes come while dumping.
                            let want = expected + expected / 64 + 64;
                            index.reserve(want.saturating_sub(index.len()));
                        }
                        if let Err(err) = index.append_all(objs.drain(..)) {
                            tracing::warn!(%err, "cannot insert into the cache");
                        }
                    }
                    Chunk::Shared(objs) => {
                        if let Err(err) = index.append_all_shared(objs.drain(..)) {
                            tracing::warn!(%err, "cannot insert into the cache");
                        }
                    }
                    // Waiting for the kernel: map the pages the index fills next.
                    Chunk::Idle(worked) => {
                        *worked = index.touch_ahead(TOUCH_AHEAD, TOUCH_STEP) > 0;
                    }
                    Chunk::Restart => {
                        must_sweep = true;
                        mark_scope(index, &partition);
                    }
                },
                on_malformed,
            )
        });
        if report.is_err() {
            // Keep what was added, forget the marks: nothing is swept by mistake.
            index.unmark_all();
        } else if must_sweep {
            drop(sweep_scope(index, &partition));
        }
        tally(stats, n_malformed, report)
    }

    /// The request for this dump: the kind's, filtered where the kernel can filter.
    fn request(&self) -> impl Fn(&mut Vec<u8>, u32) + use<T> {
        let (kind, ifindex) = (self.kind, self.ifindex);
        let strict = self.platform.strict_check();
        move |buf: &mut Vec<u8>, seq| emit_dump(buf, seq, kind, ifindex, strict)
    }
}

/// Counts (in `n`) and traces the malformed messages of a dump of `kind`.
fn count_malformed(kind: Kind, n: &mut u64) -> impl FnMut(Error) + '_ {
    move |err: Error| {
        *n += 1;
        tracing::warn!(%err, ?kind, "skipped a malformed dump message");
    }
}

/// Adds a dump's malformed messages and retries to `stats`; its error, if it failed.
fn tally(stats: &mut Stats, n_malformed: u64, report: Result<DumpReport>) -> Result<()> {
    stats.n_malformed += n_malformed;
    stats.n_dump_retries += u64::from(report?.n_interrupted);
    Ok(())
}

impl<T: Object + Send + Sync> Dump<'_, T> {
    /// Reads the dump and hands over what it holds.
    fn collect(self) -> Result<Vec<Arc<T>>> {
        let build = self.request();
        let mut n_malformed = 0u64;
        let on_malformed = count_malformed(self.kind, &mut n_malformed);
        let (report, objs) = collect(self.platform, build, self.parse, on_malformed);
        tally(self.stats, n_malformed, report)?;
        Ok(objs)
    }

    /// Reads the dump and puts what it holds into `index`, reporting what is new or changed;
    /// removes nothing (for a dump that reads again what may have changed silently, where
    /// what goes is announced).
    fn upsert_into(
        self,
        index: &mut DedupIndex<T>,
        wrap: fn(Change<T>) -> Event,
        out: Option<&mut Vec<Event>>,
    ) -> Result<()> {
        let objs = self.collect()?;
        let mut ignored = Vec::new();
        let out = out.unwrap_or(&mut ignored);
        for obj in objs {
            out.extend(upsert(index, obj, wrap));
        }
        Ok(())
    }
}

/// A route of a dump, unless it is a cached clone or (with `ifindex`) its first hop is on
/// another interface.
fn route_on(payload: &[u8], ifindex: Option<u32>) -> Result<Option<Route>> {
    Ok(Route::parse(payload)?
        .filter(|route| route.flags() & RTM_F_CLONED == 0)
        .filter(|route| ifindex.is_none_or(|i| route.ifindexes().next() == Some(Ifindex(i)))))
}

/// Reads a whole dump (again from the start when the kernel interrupts it) into a list.
fn collect<T: Send + Sync>(
    platform: &Platform,
    build: impl Fn(&mut Vec<u8>, u32),
    parse: &(dyn Fn(&[u8]) -> Result<Option<T>> + Sync),
    on_malformed: impl FnMut(Error),
) -> (Result<DumpReport>, Vec<Arc<T>>) {
    let mut objs = Vec::new();
    let report = platform.dump_retry_parallel(
        build,
        parse,
        |chunk| match chunk {
            Chunk::Objs(chunk) => objs.extend(chunk.drain(..).map(Arc::new)),
            Chunk::Shared(chunk) => objs.append(chunk),
            Chunk::Idle(_) => {}
            Chunk::Restart => objs.clear(),
        },
        on_malformed,
    );
    (report, objs)
}

/// Whether counting the routes ahead of a full route dump ([`FibCounters`]) speeds the load:
/// only with a processor for it beyond the two of the load. The kernel walks its tries for
/// the count (about 24 ms at 600k routes) without giving up the processor, so on two
/// processors it stalls the receiving or the indexing thread that long, which costs more
/// than letting the index grow (the growth re-inserts kept hashes and remaps arrays; memory
/// ends the same, measured: 1.44x the raw dump without the count, 1.50x with it, at 600k).
fn counting_pays() -> bool {
    std::thread::available_parallelism().is_ok_and(|n| n.get() > 2)
}

/// How many slots of reserved room a loading index touches at a time while it waits for the
/// kernel ([`DedupIndex::touch_ahead`]): about 0.2 MB, a fraction of a millisecond.
const TOUCH_STEP: usize = 4096;
/// How far past its last slot a loading index touches its room: the next few milliseconds of
/// inserts, so a load ending sooner leaves at most ~0.7 MB touched for nothing (65536 slots
/// ahead measured no faster and cost 3 B/route more at 600k).
const TOUCH_AHEAD: usize = 16_384;

/// Makes `index` (or one partition of it) hold exactly `objs`: mark, insert, sweep. Reports
/// what was added, replaced and removed.
fn sync_index<T: Object, X: IndexType<T>>(
    index: &mut DedupIndex<T>,
    partition: Option<(IndexHandle<X>, X::Partition)>,
    objs: Vec<Arc<T>>,
    wrap: fn(Change<T>) -> Event,
    out: &mut Vec<Event>,
) {
    mark_scope(index, &partition);
    index.reserve(objs.len().saturating_sub(index.len()));
    for obj in objs {
        if let Some(event) = upsert(index, obj, wrap) {
            out.push(event);
        }
    }
    let removed = sweep_scope(index, &partition);
    out.extend(removed.into_iter().map(|old| wrap(Change::Removed(old))));
}

/// Marks dirty what a dump of `partition` (or, without one, of everything) replaces.
fn mark_scope<T: Object, X: IndexType<T>>(
    index: &mut DedupIndex<T>,
    partition: &Option<(IndexHandle<X>, X::Partition)>,
) {
    match partition {
        Some((handle, key)) => drop(index.mark_partition(*handle, key)),
        None => index.mark_all(),
    }
}

/// Removes and returns what [`mark_scope`] marked and the dump did not bring back.
fn sweep_scope<T: Object, X: IndexType<T>>(
    index: &mut DedupIndex<T>,
    partition: &Option<(IndexHandle<X>, X::Partition)>,
) -> Vec<Arc<T>> {
    match partition {
        Some((handle, key)) => index.sweep_partition(*handle, key).unwrap_or_default(),
        None => index.sweep(),
    }
}

fn upsert<T: Object>(
    index: &mut DedupIndex<T>,
    obj: impl Into<Arc<T>>,
    wrap: fn(Change<T>) -> Event,
) -> Option<Event> {
    upsert_at(index, obj, Placement::Append, wrap)
}

/// Inserts `obj` where `placement` says (an existing entry stays where it is) and reports
/// the change.
fn upsert_at<T: Object>(
    index: &mut DedupIndex<T>,
    obj: impl Into<Arc<T>>,
    placement: Placement<T::Id>,
    wrap: fn(Change<T>) -> Event,
) -> Option<Event> {
    match index.insert(obj, placement) {
        Ok(change) => Change::from_dedup(change).map(wrap),
        Err(err) => {
            tracing::warn!(%err, "cannot insert into the cache");
            None
        }
    }
}

fn emit_dump(buf: &mut Vec<u8>, seq: u32, kind: Kind, ifindex: Option<u32>, strict: bool) {
    let (msg_kind, family, hdr_len) = match kind {
        Kind::Links => (wire::RTM_GETLINK, wire::AF_UNSPEC, 16),
        Kind::Addresses => (wire::RTM_GETADDR, wire::AF_UNSPEC, 8),
        Kind::Routes => (wire::RTM_GETROUTE, wire::AF_UNSPEC, 12),
        Kind::PrefixRoutes => (wire::RTM_GETROUTE, wire::AF_INET6, 12),
        Kind::Rules => (wire::RTM_GETRULE, wire::AF_UNSPEC, 12),
        Kind::Nexthops => (wire::RTM_GETNEXTHOP, wire::AF_UNSPEC, 8),
    };
    let mut msg = MsgWriter::new(buf, msg_kind, wire::NLM_F_REQUEST | wire::NLM_F_DUMP, seq);
    let mut hdr = [0u8; 16];
    hdr[0] = family;
    if let (Kind::Addresses, Some(ifindex), true) = (kind, ifindex, strict) {
        // The kernel filters an address dump by the header's ifa_index.
        hdr[4..8].copy_from_slice(&ifindex.to_ne_bytes());
    }
    if let (Kind::PrefixRoutes, true) = (kind, strict) {
        // ... and a route dump by the header's rtm_protocol.
        hdr[5] = crate::Protocol::KERNEL.0;
    }
    msg.raw(&hdr[..hdr_len]);
    if kind == Kind::Links {
        // IFLA_EXT_MASK = RTEXT_FILTER_SKIP_STATS: statistics are not cached.
        msg.attr_u32(29, 1 << 3);
    }
    if let (Kind::Routes | Kind::PrefixRoutes, Some(ifindex), true) = (kind, ifindex, strict) {
        msg.attr_u32(4, ifindex);
    }
    msg.finish();
}

/// How many objects of each kind a [`Cache`] holds ([`Cache::counts`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Counts {
    /// Links.
    pub links: usize,
    /// Addresses.
    pub addresses: usize,
    /// Routes, every table and family.
    pub routes: usize,
    /// Policy routing rules.
    pub rules: usize,
    /// Nexthop objects.
    pub nexthops: usize,
}

impl Counts {
    /// The total number of objects.
    pub fn total(&self) -> usize {
        self.links + self.addresses + self.routes + self.rules + self.nexthops
    }
}
