//! Shared fixtures of the dedup-index benches: a route-like object of 40 bytes, the index
//! types of a routing cache, and generators of many distinct routes.

#![allow(dead_code, unreachable_pub)]

pub mod cpu_time;

use netmirror_dedup_index::{DedupIndex, IndexHandle, IndexType, Object, Placement};

/// An IPv4 route's fields: 40 bytes, like the kernel's view of a route.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Route {
    pub dst: u32,
    pub gateway: u32,
    pub pref_src: u32,
    pub ifindex: u32,
    pub metric: u32,
    pub table: u32,
    pub mtu: u32,
    pub flags: u32,
    pub plen: u8,
    pub tos: u8,
    pub protocol: u8,
    pub scope: u8,
    pub kind: u8,
}

const _: () = assert!(std::mem::size_of::<Route>() == 40);

/// The kernel's identity of an IPv4 route.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RouteId {
    pub table: u32,
    pub dst: u32,
    pub metric: u32,
    pub plen: u8,
    pub tos: u8,
}

impl Object for Route {
    type Id = RouteId;

    fn id(&self) -> RouteId {
        RouteId {
            table: self.table,
            dst: self.dst,
            metric: self.metric,
            plen: self.plen,
            tos: self.tos,
        }
    }
}

/// Routes by outgoing interface. As the platform cache's own (`RoutesByIfindex`), it numbers
/// its partitions by ifindex ([`IndexType::dense_key`]), so finding one needs no hashing.
pub struct ByIfindex;

impl IndexType<Route> for ByIfindex {
    type Partition = u32;

    fn partition(&self, route: &Route) -> Option<u32> {
        (route.ifindex != 0).then_some(route.ifindex)
    }

    fn dense_key(&self, ifindex: &u32) -> Option<usize> {
        usize::try_from(*ifindex).ok()
    }
}

/// Default routes only.
pub struct DefaultRoutes;

impl IndexType<Route> for DefaultRoutes {
    type Partition = ();

    fn partition(&self, route: &Route) -> Option<()> {
        (route.plen == 0).then_some(())
    }
}

/// Routes by table (a few partitions).
pub struct ByTable;

impl IndexType<Route> for ByTable {
    type Partition = u32;

    fn partition(&self, route: &Route) -> Option<u32> {
        Some(route.table)
    }
}

/// Routes by weak id (destination and table, without metric): about one partition per route.
pub struct ByWeakId;

impl IndexType<Route> for ByWeakId {
    type Partition = (u32, u32, u8);

    fn partition(&self, route: &Route) -> Option<(u32, u32, u8)> {
        Some((route.table, route.dst, route.plen))
    }
}

/// The baselines' map: hashbrown's `HashMap` with foldhash's fast hasher, as hashbrown's
/// default, but with fixed seeds ([`foldhash::fast::FixedState`]). With the default's random
/// ones, ids counting up cluster in the table for some seeds (see the crate's `hash.rs`), and
/// which seeds a run gets follows the program's layout: the same `hashmap_drain/1000000` took
/// 180 ms in one build of this bench and 420 ms in another whose only change was in the
/// index, run after run. Fixed seeds that spread these ids make the map the same in every
/// build and run.
pub type Map = hashbrown::HashMap<RouteId, std::sync::Arc<Route>, foldhash::fast::FixedState>;

/// The map of slot numbers by id, for a baseline with the index's indirection: the slot
/// number found, then the object's handle read from a vector by it.
pub type SlotMap = hashbrown::HashMap<RouteId, u32, foldhash::fast::FixedState>;

/// Routes `0..n` as a [`SlotMap`] and the vector of their handles by slot, kept as the index
/// keeps them (`None` for a slot whose object was taken).
pub fn slot_map(n: u32) -> (SlotMap, Vec<Option<std::sync::Arc<Route>>>) {
    let slots = (0..n).map(|i| (route(i).id(), i)).collect();
    let objs = (0..n)
        .map(|i| Some(std::sync::Arc::new(route(i))))
        .collect();
    (slots, objs)
}

/// The number of interfaces the routes spread over.
pub const N_IFINDEX: u32 = 64;

/// Route number `i`: distinct `/24` destinations over 64 interfaces and two tables; one route in
/// a thousand is a default route (with its own metric).
pub fn route(i: u32) -> Route {
    let default = i.is_multiple_of(1000);
    Route {
        dst: if default { 0 } else { (i << 8) ^ 0x0a00_0000 },
        gateway: 0xc0a8_0001 + i % 200,
        pref_src: 0,
        ifindex: 1 + i % N_IFINDEX,
        metric: if default { i } else { 100 },
        table: if i.is_multiple_of(8) { 100 } else { 254 },
        mtu: 0,
        flags: 0,
        plen: if default { 0 } else { 24 },
        tos: 0,
        protocol: 186,
        scope: 0,
        kind: 1,
    }
}

/// Which index types an index has, besides the primary one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// Only the primary index type (the id).
    One,
    /// The id, routes by interface, default routes.
    Three,
    /// As `Three`, plus routes by table.
    Four,
    /// As `Three`, plus routes by weak id (one partition per destination).
    FourWeakId,
}

impl Layout {
    pub fn label(self) -> &'static str {
        match self {
            Layout::One => "1 (id)",
            Layout::Three => "3 (id, ifindex, default)",
            Layout::Four => "4 (id, ifindex, default, table)",
            Layout::FourWeakId => "4 (id, ifindex, default, weak id)",
        }
    }
}

/// An index of routes with the index types of `layout`.
pub struct Routes {
    pub index: DedupIndex<Route>,
    pub by_ifindex: Option<IndexHandle<ByIfindex>>,
}

impl Routes {
    pub fn new(layout: Layout) -> Self {
        let mut index = DedupIndex::new();
        let mut by_ifindex = None;
        if layout != Layout::One {
            by_ifindex = Some(index.add_index(ByIfindex));
            index.add_index(DefaultRoutes);
        }
        match layout {
            Layout::Four => {
                index.add_index(ByTable);
            }
            Layout::FourWeakId => {
                index.add_index(ByWeakId);
            }
            Layout::One | Layout::Three => {}
        }
        Self { index, by_ifindex }
    }

    /// An index holding routes `0..n`.
    pub fn filled(layout: Layout, n: u32) -> Self {
        let mut routes = Self::new(layout);
        for i in 0..n {
            routes
                .index
                .insert(route(i), Placement::Append)
                .expect("the index has room");
        }
        routes
    }
}

/// Whether `NETMIRROR_BENCH_QUICK=1` asks for smaller sizes (`cargo xtask bench --quick`).
pub fn quick() -> bool {
    std::env::var_os("NETMIRROR_BENCH_QUICK").is_some_and(|value| value == "1")
}

/// `0..n` in a fixed pseudo-random order (xorshift, Fisher-Yates).
pub fn shuffled(n: u32) -> Vec<u32> {
    let mut order: Vec<u32> = (0..n).collect();
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    for i in (1..order.len()).rev() {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        order.swap(i, (state % (i as u64 + 1)) as usize);
    }
    order
}

/// The ids of routes `0..n` in the benches' random order ([`shuffled`]).
pub fn shuffled_ids(n: u32) -> Vec<RouteId> {
    shuffled(n).into_iter().map(|i| route(i).id()).collect()
}
