//! Routes (IPv4 and IPv6, every table): a compact type parsed straight from the wire.
//!
//! A route in a full IPv4 table is small: its addresses are stored inline as IPv4 words,
//! everything rare (IPv6 addresses, multipath, metrics, unknown attributes) sits behind one
//! optional box, so a common IPv4 route is 40 bytes.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::error::{Error, Result};
use crate::wire::{self, AF_INET, AF_INET6, MsgWriter, Nlas, nla_u8, nla_u32};

const RTA_DST: u16 = 1;
const RTA_SRC: u16 = 2;
const RTA_IIF: u16 = 3;
const RTA_OIF: u16 = 4;
const RTA_GATEWAY: u16 = 5;
const RTA_PRIORITY: u16 = 6;
const RTA_PREFSRC: u16 = 7;
const RTA_METRICS: u16 = 8;
const RTA_MULTIPATH: u16 = 9;
const RTA_CACHEINFO: u16 = 12;
const RTA_TABLE: u16 = 15;
const RTA_MARK: u16 = 16;
const RTA_PREF: u16 = 20;
const RTA_EXPIRES: u16 = 23;
const RTA_NH_ID: u16 = 30;

/// Length of `struct rtmsg`.
pub(crate) const RTMSG_LEN: usize = 12;

/// The main routing table.
pub const TABLE_MAIN: u32 = 254;
/// The local routing table.
pub const TABLE_LOCAL: u32 = 255;

/// Route type `RTN_UNICAST`.
pub const RTN_UNICAST: u8 = 1;
/// Route type `RTN_LOCAL`.
pub const RTN_LOCAL: u8 = 2;
/// Route type `RTN_BLACKHOLE`.
pub const RTN_BLACKHOLE: u8 = 6;
/// Route type `RTN_UNREACHABLE`.
pub const RTN_UNREACHABLE: u8 = 7;

/// Route protocol `RTPROT_BOOT` (what `ip route add` uses).
pub const RTPROT_BOOT: u8 = 3;
/// Route protocol `RTPROT_RA` (learned from router advertisements).
pub const RTPROT_RA: u8 = 9;
/// Route protocol `RTPROT_STATIC`.
pub const RTPROT_STATIC: u8 = 4;

/// Scope `RT_SCOPE_UNIVERSE`.
pub const RT_SCOPE_UNIVERSE: u8 = 0;
/// Scope `RT_SCOPE_LINK`.
pub const RT_SCOPE_LINK: u8 = 253;
/// Scope `RT_SCOPE_HOST`.
pub const RT_SCOPE_HOST: u8 = 254;

// Bits of `Route::bits`.
const V6: u8 = 1 << 0;
const HAS_DST: u8 = 1 << 1;
const HAS_GATEWAY: u8 = 1 << 2;
const HAS_PREFSRC: u8 = 1 << 3;
const HAS_PRIORITY: u8 = 1 << 4;
const HAS_OIF: u8 = 1 << 5;

/// An IP address family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Family {
    /// IPv4 (`AF_INET`).
    V4,
    /// IPv6 (`AF_INET6`).
    V6,
}

impl Family {
    pub(crate) fn af(self) -> u8 {
        match self {
            Family::V4 => AF_INET,
            Family::V6 => AF_INET6,
        }
    }

    /// The family of an address.
    pub fn of(addr: IpAddr) -> Self {
        match addr {
            IpAddr::V4(_) => Family::V4,
            IpAddr::V6(_) => Family::V6,
        }
    }
}

/// One next hop of a multipath route.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct NextHop {
    /// Output interface index.
    pub ifindex: u32,
    /// Gateway, if any.
    pub gateway: Option<IpAddr>,
    /// `RTNH_F_*` flags.
    pub flags: u8,
    /// Weight minus one (`rtnh_hops`), as the kernel stores it.
    pub hops: u8,
}

/// The less common parts of a route (IPv6 addresses, large flags, preference), boxed so the
/// common IPv4 route stays small; the rarest ones are boxed once more, so an ordinary IPv6
/// route pays for neither.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct RouteExtra {
    /// For IPv6: destination, gateway, preferred source, source.
    v6: [Ipv6Addr; 4],
    src_len: u8,
    has_src: bool,
    /// The full `rtm_flags` when they do not fit in 16 bits.
    flags_hi: u16,
    pref: Option<u8>,
    /// Always `None` rather than an empty `Rare`, so that equality stays exact.
    rare: Option<Box<Rare>>,
}

/// The rarest parts of a route.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
struct Rare {
    iif: Option<u32>,
    mark: Option<u32>,
    expires: Option<u32>,
    nh_id: Option<u32>,
    /// `RTA_METRICS` payload (nested `RTAX_*` attributes), as sent by the kernel.
    metrics: Vec<u8>,
    multipath: Vec<NextHop>,
    /// Attributes this crate does not decode: type and payload.
    other: Vec<(u16, Box<[u8]>)>,
}

static NO_RARE: Rare = Rare {
    iif: None,
    mark: None,
    expires: None,
    nh_id: None,
    metrics: Vec::new(),
    multipath: Vec::new(),
    other: Vec::new(),
};

impl RouteExtra {
    fn rare(&self) -> &Rare {
        self.rare.as_deref().unwrap_or(&NO_RARE)
    }

    fn rare_mut(&mut self) -> &mut Rare {
        self.rare.get_or_insert_with(Box::default)
    }

    /// Drops an emptied `Rare`.
    fn normalize(&mut self) {
        if self.rare.as_deref().is_some_and(|rare| *rare == NO_RARE) {
            self.rare = None;
        }
    }
}

impl Default for RouteExtra {
    fn default() -> Self {
        RouteExtra {
            v6: [Ipv6Addr::UNSPECIFIED; 4],
            src_len: 0,
            has_src: false,
            flags_hi: 0,
            pref: None,
            rare: None,
        }
    }
}

/// A route, IPv4 or IPv6, of any table.
///
/// Immutable once built; equality covers every field, so two equal routes can share one
/// allocation in the cache.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Route {
    /// IPv4 destination, gateway and preferred source (unused for IPv6).
    v4: [[u8; 4]; 3],
    table: u32,
    priority: u32,
    oif: u32,
    flags: u16,
    dst_len: u8,
    tos: u8,
    protocol: u8,
    scope: u8,
    kind: u8,
    bits: u8,
    extra: Option<Box<RouteExtra>>,
}

impl std::fmt::Debug for Route {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut out = f.debug_struct("Route");
        out.field("family", &self.family())
            .field("table", &self.table)
            .field("dst", &format_args!("{}/{}", self.dst(), self.dst_len));
        if let Some((src, len)) = self.src() {
            out.field("src", &format_args!("{src}/{len}"));
        }
        if let Some(gateway) = self.gateway() {
            out.field("gateway", &gateway);
        }
        if let Some(oif) = self.oif() {
            out.field("oif", &oif);
        }
        if let Some(prefsrc) = self.prefsrc() {
            out.field("prefsrc", &prefsrc);
        }
        out.field("priority", &self.priority)
            .field("protocol", &self.protocol)
            .field("scope", &self.scope)
            .field("kind", &self.kind);
        if self.tos != 0 {
            out.field("tos", &self.tos);
        }
        if self.flags() != 0 {
            out.field("flags", &format_args!("{:#x}", self.flags()));
        }
        if let Some(extra) = &self.extra {
            if !extra.rare().multipath.is_empty() {
                out.field("multipath", &extra.rare().multipath);
            }
            if !extra.rare().metrics.is_empty() {
                out.field("metrics", &self.metrics());
            }
            for (name, value) in [
                ("iif", extra.rare().iif),
                ("mark", extra.rare().mark),
                ("expires", extra.rare().expires),
                ("nh_id", extra.rare().nh_id),
            ] {
                if let Some(value) = value {
                    out.field(name, &value);
                }
            }
            if let Some(pref) = extra.pref {
                out.field("pref", &pref);
            }
            if !extra.rare().other.is_empty() {
                let kinds: Vec<u16> = extra.rare().other.iter().map(|(kind, _)| *kind).collect();
                out.field("other_attributes", &kinds);
            }
        }
        out.finish()
    }
}

/// What identifies a route in the kernel's table, for deduplication of events.
///
/// Two routes with the same id are the same kernel entry; their other attributes may differ
/// (a replace). IPv4 keeps several routes per prefix (`ip route append`), told apart by next
/// hop and type, so those are part of the id; IPv6 merges next hops of one prefix and metric
/// into one multipath route, so they are not. It is small and cheap to compute: the cache
/// computes it on every lookup.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RouteId(IdInner);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum IdInner {
    V4 {
        table: u32,
        priority: u32,
        oif: u32,
        dst: [u8; 4],
        gateway: [u8; 4],
        /// Prefix length, TOS, type, and whether there is a gateway.
        small: [u8; 4],
    },
    V6 {
        table: u32,
        priority: u32,
        oif: u32,
        dst: [u8; 16],
        src: [u8; 16],
        gateway: [u8; 16],
        /// Prefix length, source prefix length, type, and whether it qualifies for ECMP.
        small: [u8; 4],
    },
}

impl std::hash::Hash for RouteId {
    /// Whole words rather than field by field (a derived hash feeds each array as a slice,
    /// length first): the cache hashes an id for every route it loads.
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        let word = |hi: u32, lo: u32| (u64::from(hi) << 32) | u64::from(lo);
        let half = |bytes: [u8; 4]| u32::from_ne_bytes(bytes);
        let wide = |bytes: &[u8; 16]| {
            let [a, b] = [&bytes[..8], &bytes[8..]].map(|half| {
                let mut word = [0u8; 8];
                word.copy_from_slice(half);
                u64::from_ne_bytes(word)
            });
            (a, b)
        };
        match &self.0 {
            IdInner::V4 {
                table,
                priority,
                oif,
                dst,
                gateway,
                small,
            } => {
                state.write_u64(word(*table, *priority));
                state.write_u64(word(*oif, half(*dst)));
                state.write_u64(word(half(*gateway), half(*small)));
            }
            IdInner::V6 {
                table,
                priority,
                oif,
                dst,
                src,
                gateway,
                small,
            } => {
                state.write_u64(word(*table, *priority));
                state.write_u64(word(*oif, half(*small)));
                for addr in [dst, src, gateway] {
                    let (a, b) = wide(addr);
                    state.write_u64(a);
                    state.write_u64(b);
                }
            }
        }
    }
}

/// A route's "weak id": the prefix key the kernel replaces on `NLM_F_REPLACE` (table,
/// destination, source, TOS, metric).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RouteWeakId {
    table: u32,
    priority: u32,
    dst: [u8; 16],
    src: [u8; 16],
    /// Family, prefix length, source prefix length, TOS.
    small: [u8; 4],
}

impl RouteWeakId {
    /// A hash that is the same in every process (unlike `Hash` with a random state).
    pub fn stable_hash(&self) -> u64 {
        let word = |bytes: &[u8]| {
            let mut word = [0u8; 8];
            word.copy_from_slice(bytes);
            u64::from_ne_bytes(word)
        };
        weak_hash(
            self.table,
            self.priority,
            [
                word(&self.dst[..8]),
                word(&self.dst[8..]),
                word(&self.src[..8]),
                word(&self.src[8..]),
            ],
            self.small,
        )
    }
}

/// The mixing behind [`RouteWeakId::stable_hash`], shared with [`Route::weak_hash`].
#[inline]
fn weak_hash(table: u32, priority: u32, words: [u64; 4], small: [u8; 4]) -> u64 {
    const K: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut hash = (u64::from(table) << 32) | u64::from(priority);
    for word in words {
        hash = (hash ^ word).wrapping_mul(K).rotate_left(29);
    }
    hash = (hash ^ u64::from(u32::from_ne_bytes(small))).wrapping_mul(K);
    hash ^ (hash >> 31)
}

impl Route {
    /// A unicast route to `dst/dst_len` in the main table, protocol `boot`, universe scope.
    /// Add a gateway or an output device with the `with_*` methods.
    pub fn new(dst: IpAddr, dst_len: u8) -> Self {
        let mut route = Route {
            v4: [[0; 4]; 3],
            table: TABLE_MAIN,
            priority: 0,
            oif: 0,
            flags: 0,
            dst_len,
            tos: 0,
            protocol: RTPROT_BOOT,
            scope: RT_SCOPE_UNIVERSE,
            kind: RTN_UNICAST,
            bits: 0,
            extra: None,
        };
        if dst.is_ipv6() {
            route.bits |= V6;
            route.extra = Some(Box::default());
        }
        route.set_addr(0, HAS_DST, dst);
        route
    }

    /// Sets the routing table.
    pub fn with_table(mut self, table: u32) -> Self {
        self.table = table;
        self
    }

    /// Sets the gateway (ignored when its family differs from the route's).
    pub fn with_gateway(mut self, gateway: IpAddr) -> Self {
        self.set_addr(1, HAS_GATEWAY, gateway);
        self
    }

    /// Sets the output interface.
    pub fn with_oif(mut self, ifindex: u32) -> Self {
        self.oif = ifindex;
        self.bits |= HAS_OIF;
        self
    }

    /// Sets the metric (`RTA_PRIORITY`).
    pub fn with_priority(mut self, priority: u32) -> Self {
        self.priority = priority;
        self.bits |= HAS_PRIORITY;
        self
    }

    /// Sets the protocol (`RTPROT_*`).
    pub fn with_protocol(mut self, protocol: u8) -> Self {
        self.protocol = protocol;
        self
    }

    /// Sets the scope (`RT_SCOPE_*`).
    pub fn with_scope(mut self, scope: u8) -> Self {
        self.scope = scope;
        self
    }

    /// Sets the route type (`RTN_*`).
    pub fn with_kind(mut self, kind: u8) -> Self {
        self.kind = kind;
        self
    }

    /// Sets the preferred source address.
    pub fn with_prefsrc(mut self, prefsrc: IpAddr) -> Self {
        self.set_addr(2, HAS_PREFSRC, prefsrc);
        self
    }

    fn set_addr(&mut self, slot: usize, bit: u8, addr: IpAddr) {
        match (addr, self.extra.as_mut()) {
            (IpAddr::V4(v4), _) if self.bits & V6 == 0 => self.v4[slot] = v4.octets(),
            (IpAddr::V6(v6), Some(extra)) if self.bits & V6 != 0 => extra.v6[slot] = v6,
            _ => return,
        }
        self.bits |= bit;
    }

    fn addr(&self, slot: usize, bit: u8) -> Option<IpAddr> {
        if self.bits & bit == 0 {
            return None;
        }
        if self.bits & V6 != 0 {
            self.extra.as_ref().map(|extra| IpAddr::V6(extra.v6[slot]))
        } else {
            Some(IpAddr::V4(Ipv4Addr::from(self.v4[slot])))
        }
    }

    /// The address family.
    pub fn family(&self) -> Family {
        if self.bits & V6 != 0 {
            Family::V6
        } else {
            Family::V4
        }
    }

    /// The routing table (`RTA_TABLE`, or the header's table).
    pub fn table(&self) -> u32 {
        self.table
    }

    /// The destination prefix address (the unspecified address for a default route).
    pub fn dst(&self) -> IpAddr {
        self.addr(0, HAS_DST).unwrap_or(match self.family() {
            Family::V4 => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            Family::V6 => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
        })
    }

    /// The destination prefix length.
    pub fn dst_len(&self) -> u8 {
        self.dst_len
    }

    /// True for a default route (prefix length 0).
    pub fn is_default(&self) -> bool {
        self.dst_len == 0
    }

    /// The source prefix (IPv6 source routing), if any.
    pub fn src(&self) -> Option<(IpAddr, u8)> {
        let extra = self.extra.as_ref()?;
        if !extra.has_src && extra.src_len == 0 {
            return None;
        }
        let addr = match self.family() {
            Family::V6 => IpAddr::V6(extra.v6[3]),
            Family::V4 => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        };
        Some((addr, extra.src_len))
    }

    /// The gateway, if any (see [`Route::multipath`] for multipath routes).
    pub fn gateway(&self) -> Option<IpAddr> {
        self.addr(1, HAS_GATEWAY)
    }

    /// The preferred source address, if any.
    pub fn prefsrc(&self) -> Option<IpAddr> {
        self.addr(2, HAS_PREFSRC)
    }

    /// The output interface, if any.
    pub fn oif(&self) -> Option<u32> {
        (self.bits & HAS_OIF != 0).then_some(self.oif)
    }

    /// The metric (`RTA_PRIORITY`); 0 when absent.
    pub fn priority(&self) -> u32 {
        self.priority
    }

    /// The protocol that installed the route (`RTPROT_*`).
    pub fn protocol(&self) -> u8 {
        self.protocol
    }

    /// The scope (`RT_SCOPE_*`).
    pub fn scope(&self) -> u8 {
        self.scope
    }

    /// The route type (`RTN_*`).
    pub fn kind(&self) -> u8 {
        self.kind
    }

    /// The TOS (IPv4 only).
    pub fn tos(&self) -> u8 {
        self.tos
    }

    /// The `rtm_flags`.
    pub fn flags(&self) -> u32 {
        let hi = self.extra.as_ref().map_or(0, |extra| extra.flags_hi);
        u32::from(self.flags) | (u32::from(hi) << 16)
    }

    /// The next hops of a multipath route (empty otherwise).
    pub fn multipath(&self) -> &[NextHop] {
        self.extra
            .as_ref()
            .map_or(&[], |extra| &extra.rare().multipath)
    }

    /// The route metrics (`RTAX_*` type and value), e.g. `(2, 1400)` for an MTU of 1400.
    pub fn metrics(&self) -> Vec<(u16, u32)> {
        let Some(extra) = &self.extra else {
            return Vec::new();
        };
        Nlas::new(&extra.rare().metrics)
            .filter_map(|(kind, value)| nla_u32(value).map(|v| (kind, v)))
            .collect()
    }

    /// The firewall mark (`RTA_MARK`), if any.
    pub fn mark(&self) -> Option<u32> {
        self.extra.as_ref().and_then(|extra| extra.rare().mark)
    }

    /// The IPv6 router preference (`RTA_PREF`), if any.
    pub fn pref(&self) -> Option<u8> {
        self.extra.as_ref().and_then(|extra| extra.pref)
    }

    /// The remaining lifetime in seconds (`RTA_EXPIRES`), if any.
    pub fn expires(&self) -> Option<u32> {
        self.extra.as_ref().and_then(|extra| extra.rare().expires)
    }

    /// The nexthop object id (`RTA_NH_ID`), if any.
    pub fn nh_id(&self) -> Option<u32> {
        self.extra.as_ref().and_then(|extra| extra.rare().nh_id)
    }

    /// Every interface the route goes out of: its `oif` and its next hops'.
    pub fn ifindexes(&self) -> impl Iterator<Item = u32> + '_ {
        self.oif()
            .into_iter()
            .chain(self.multipath().iter().map(|hop| hop.ifindex))
    }

    /// The kernel's identity of this route.
    pub fn id(&self) -> RouteId {
        if self.extra.is_none() && self.bits & V6 == 0 {
            // The common IPv4 route (no multipath, nothing rare): straight from the fields.
            let has_gateway = self.bits & HAS_GATEWAY != 0;
            return RouteId(IdInner::V4 {
                table: self.table,
                priority: self.priority,
                oif: if self.bits & HAS_OIF != 0 {
                    self.oif
                } else {
                    0
                },
                dst: self.v4[0],
                gateway: if has_gateway { self.v4[1] } else { [0; 4] },
                small: [self.dst_len, self.tos, self.kind, u8::from(has_gateway)],
            });
        }
        if let Some(nh_id) = self.nh_id() {
            return self.nh_route_id(nh_id);
        }
        let first_hop = match &self.extra {
            Some(extra) if self.bits & (HAS_OIF | HAS_GATEWAY) != (HAS_OIF | HAS_GATEWAY) => {
                extra.rare().multipath.first()
            }
            _ => None,
        };
        let oif = if self.bits & HAS_OIF != 0 {
            self.oif
        } else {
            first_hop.map_or(0, |hop| hop.ifindex)
        };
        let gateway = self
            .gateway()
            .or_else(|| first_hop.and_then(|hop| hop.gateway));
        let has_gateway = u8::from(gateway.is_some());
        match &self.extra {
            // IPv6 keeps one route per prefix and metric among the routes that qualify for
            // ECMP (a gateway, not learned from router advertisements): next hops added to
            // it become its siblings, announced as one multipath route, so they are not part
            // of the id. Other routes (device routes, RA routes) are told apart by next hop.
            Some(extra) if self.bits & V6 != 0 => {
                let ecmp = gateway.is_some() && self.protocol != RTPROT_RA;
                RouteId(IdInner::V6 {
                    table: self.table,
                    priority: self.priority,
                    oif: if ecmp { 0 } else { oif },
                    dst: extra.v6[0].octets(),
                    src: extra.v6[3].octets(),
                    gateway: match gateway {
                        Some(IpAddr::V6(gw)) if !ecmp => gw.octets(),
                        _ => [0; 16],
                    },
                    small: [self.dst_len, extra.src_len, self.kind, u8::from(ecmp)],
                })
            }
            _ => RouteId(IdInner::V4 {
                table: self.table,
                priority: self.priority,
                oif,
                dst: self.v4[0],
                gateway: match gateway {
                    Some(IpAddr::V4(gw)) => gw.octets(),
                    _ => [0; 4],
                },
                small: [self.dst_len, self.tos, self.kind, has_gateway],
            }),
        }
    }

    /// The id of a route on a nexthop object (`nhid`): its next hops, and the type a
    /// blackhole nexthop lends it, are only reported from the nexthop, so they change with
    /// it; the nexthop's id tells such routes apart.
    fn nh_route_id(&self, nh_id: u32) -> RouteId {
        match &self.extra {
            Some(extra) if self.bits & V6 != 0 => RouteId(IdInner::V6 {
                table: self.table,
                priority: self.priority,
                oif: nh_id,
                dst: extra.v6[0].octets(),
                src: extra.v6[3].octets(),
                gateway: [0; 16],
                small: [self.dst_len, extra.src_len, 0, 2],
            }),
            _ => RouteId(IdInner::V4 {
                table: self.table,
                priority: self.priority,
                oif: nh_id,
                dst: self.v4[0],
                gateway: [0; 4],
                small: [self.dst_len, self.tos, 0, 2],
            }),
        }
    }

    /// `self.weak_id().stable_hash()`, computed without building the weak id (IPv4 fast
    /// path: the cache computes it for every route it inserts).
    pub fn weak_hash(&self) -> u64 {
        match &self.extra {
            Some(_) if self.bits & V6 != 0 => self.weak_id().stable_hash(),
            extra => {
                let [a, b, c, d] = self.v4[0];
                let dst = u64::from_ne_bytes([a, b, c, d, 0, 0, 0, 0]);
                let src_len = extra.as_ref().map_or(0, |extra| extra.src_len);
                weak_hash(
                    self.table,
                    self.priority,
                    [dst, 0, 0, 0],
                    [AF_INET, self.dst_len, src_len, self.tos],
                )
            }
        }
    }

    /// The prefix key that `NLM_F_REPLACE` replaces.
    pub fn weak_id(&self) -> RouteWeakId {
        let (dst, src, src_len) = match &self.extra {
            Some(extra) if self.bits & V6 != 0 => {
                (extra.v6[0].octets(), extra.v6[3].octets(), extra.src_len)
            }
            extra => {
                let mut dst = [0; 16];
                dst[..4].copy_from_slice(&self.v4[0]);
                (
                    dst,
                    [0; 16],
                    extra.as_ref().map_or(0, |extra| extra.src_len),
                )
            }
        };
        RouteWeakId {
            table: self.table,
            priority: self.priority,
            dst,
            src,
            small: [self.family().af(), self.dst_len, src_len, self.tos],
        }
    }

    /// This multipath route without the next hop via `gateway` on `ifindex`: what an IPv6
    /// route is after the kernel deleted one of its siblings (it announces only the deleted
    /// hop). A single remaining hop becomes a plain route. `None` if the hop is not there.
    pub(crate) fn without_hop(
        &self,
        gateway: Option<IpAddr>,
        ifindex: Option<u32>,
    ) -> Option<Route> {
        let extra = self.extra.as_ref()?;
        let at = extra.rare().multipath.iter().position(|hop| {
            hop.gateway == gateway && ifindex.is_none_or(|ifindex| hop.ifindex == ifindex)
        })?;
        let mut route = self.clone();
        let extra = route.extra.as_mut()?;
        extra.rare_mut().multipath.remove(at);
        if let [last] = extra.rare().multipath.as_slice() {
            let last = last.clone();
            extra.rare_mut().multipath.clear();
            extra.normalize();
            route = route.with_oif(last.ifindex);
            if let Some(gateway) = last.gateway {
                route = route.with_gateway(gateway);
            }
        }
        Some(route)
    }

    /// The IPv6 multipath route `event` announces after the kernel added a sibling to this
    /// held route (plain or multipath), with its hops in the kernel's order: the
    /// announcement lists the new hop first, but the kernel keeps existing siblings in their
    /// order and adds new ones at the end.
    pub(crate) fn with_siblings_of(&self, event: &Route) -> Route {
        let same = |a: &NextHop, b: &NextHop| a.gateway == b.gateway && a.ifindex == b.ifindex;
        let plain;
        let held = match self.multipath() {
            [] => {
                plain = [NextHop {
                    ifindex: self.oif().unwrap_or(0),
                    gateway: self.gateway(),
                    flags: 0,
                    hops: 0,
                }];
                &plain[..]
            }
            hops => hops,
        };
        let announced = event.multipath();
        let mut hops: Vec<NextHop> = held
            .iter()
            .filter_map(|hop| announced.iter().find(|new| same(new, hop)).cloned())
            .collect();
        hops.extend(
            announced
                .iter()
                .filter(|new| !held.iter().any(|hop| same(hop, new)))
                .cloned(),
        );
        let mut route = event.clone();
        if let Some(extra) = route.extra.as_mut() {
            extra.rare_mut().multipath = hops;
        }
        route
    }

    /// Parses an `RTM_NEWROUTE`/`RTM_DELROUTE` payload (after the netlink header).
    /// Returns `Ok(None)` for families other than IPv4 and IPv6 (e.g. multicast routes).
    pub fn parse(payload: &[u8]) -> Result<Option<Self>> {
        let Some(hdr) = payload.get(..RTMSG_LEN) else {
            return Err(Error::malformed("route message shorter than rtmsg"));
        };
        let v6 = match hdr[0] {
            AF_INET => false,
            AF_INET6 => true,
            _ => return Ok(None),
        };
        let rtm_flags = wire::u32_at(hdr, 8);
        let mut route = Route {
            v4: [[0; 4]; 3],
            table: u32::from(hdr[4]),
            priority: 0,
            oif: 0,
            flags: rtm_flags as u16,
            dst_len: hdr[1],
            tos: hdr[3],
            protocol: hdr[5],
            scope: hdr[6],
            kind: hdr[7],
            bits: if v6 { V6 } else { 0 },
            extra: None,
        };
        let src_len = hdr[2];
        let mut extra: Option<Box<RouteExtra>> = None;
        fn extra_of(extra: &mut Option<Box<RouteExtra>>) -> &mut RouteExtra {
            extra.get_or_insert_with(Box::default)
        }
        if v6 {
            extra_of(&mut extra);
        }
        if src_len != 0 {
            extra_of(&mut extra).src_len = src_len;
        }
        if rtm_flags > 0xffff {
            extra_of(&mut extra).flags_hi = (rtm_flags >> 16) as u16;
        }
        let mut nlas = Nlas::new(&payload[RTMSG_LEN..]);
        for (kind, value) in &mut nlas {
            match kind {
                RTA_DST => set_address(&mut route, &mut extra, kind, value, 0, HAS_DST)?,
                RTA_GATEWAY => set_address(&mut route, &mut extra, kind, value, 1, HAS_GATEWAY)?,
                RTA_PREFSRC => set_address(&mut route, &mut extra, kind, value, 2, HAS_PREFSRC)?,
                RTA_SRC => set_address(&mut route, &mut extra, kind, value, 3, 0)?,
                RTA_OIF => {
                    route.oif = nla_u32(value).ok_or_else(|| bad_attr(kind))?;
                    route.bits |= HAS_OIF;
                }
                RTA_PRIORITY => {
                    route.priority = nla_u32(value).ok_or_else(|| bad_attr(kind))?;
                    route.bits |= HAS_PRIORITY;
                }
                RTA_TABLE => route.table = nla_u32(value).ok_or_else(|| bad_attr(kind))?,
                RTA_IIF => extra_of(&mut extra).rare_mut().iif = nla_u32(value),
                RTA_MARK => extra_of(&mut extra).rare_mut().mark = nla_u32(value),
                RTA_PREF => extra_of(&mut extra).pref = nla_u8(value),
                RTA_EXPIRES => extra_of(&mut extra).rare_mut().expires = nla_u32(value),
                RTA_NH_ID => extra_of(&mut extra).rare_mut().nh_id = nla_u32(value),
                RTA_METRICS => extra_of(&mut extra).rare_mut().metrics = value.to_vec(),
                RTA_MULTIPATH => {
                    extra_of(&mut extra).rare_mut().multipath = parse_multipath(value, v6)?
                }
                // Counters that change on every use; not part of the route's state.
                RTA_CACHEINFO => {}
                _ => extra_of(&mut extra)
                    .rare_mut()
                    .other
                    .push((kind, value.into())),
            }
        }
        if nlas.malformed() {
            return Err(Error::malformed("route attribute overruns its message"));
        }
        if let Some(extra) = &mut extra {
            extra.normalize();
        }
        if !v6 && extra.as_deref() == Some(&RouteExtra::default()) {
            extra = None;
        }
        route.extra = extra;
        Ok(Some(route))
    }

    /// On nexthop object `id` (`nhid`): the kernel takes the gateway, device and hops from
    /// it, so a route built with this carries no other next hop.
    pub fn with_nh_id(mut self, id: u32) -> Self {
        let extra = self.extra.get_or_insert_with(Box::default);
        extra.rare_mut().nh_id = Some(id);
        self
    }

    /// Appends this route as a request of type `kind` (`RTM_NEWROUTE` / `RTM_DELROUTE`).
    pub(crate) fn emit(&self, buf: &mut Vec<u8>, kind: u16, flags: u16, seq: u32) {
        let mut msg = MsgWriter::new(buf, kind, flags, seq);
        let table_byte = if self.table < 256 {
            self.table as u8
        } else {
            252
        };
        let src_len = self.src().map_or(0, |(_, len)| len);
        // A route on a nexthop object takes its flags and a blackhole's type from the
        // nexthop: the kernel reports them on the route but refuses them in a request.
        let on_nexthop = self.nh_id().is_some();
        let rtm_flags = if on_nexthop { 0 } else { self.flags() };
        let kind = if on_nexthop && self.kind == RTN_BLACKHOLE {
            RTN_UNICAST
        } else {
            self.kind
        };
        let mut hdr = [0u8; RTMSG_LEN];
        hdr[0] = self.family().af();
        hdr[1] = self.dst_len;
        hdr[2] = src_len;
        hdr[3] = self.tos;
        hdr[4] = table_byte;
        hdr[5] = self.protocol;
        hdr[6] = self.scope;
        hdr[7] = kind;
        hdr[8..12].copy_from_slice(&rtm_flags.to_ne_bytes());
        msg.raw(&hdr);
        msg.attr_u32(RTA_TABLE, self.table);
        if let Some(dst) = self.addr(0, HAS_DST) {
            attr_ip(&mut msg, RTA_DST, dst);
        }
        if let Some(extra) = &self.extra
            && extra.has_src
            && self.family() == Family::V6
        {
            attr_ip(&mut msg, RTA_SRC, IpAddr::V6(extra.v6[3]));
        }
        // A route on a nexthop object is requested with its id alone: the kernel reports
        // the nexthop's gateway, device and hops too, and refuses them beside an id.
        if let Some(gateway) = self.gateway().filter(|_| !on_nexthop) {
            attr_ip(&mut msg, RTA_GATEWAY, gateway);
        }
        if let Some(prefsrc) = self.prefsrc() {
            attr_ip(&mut msg, RTA_PREFSRC, prefsrc);
        }
        if let Some(oif) = self.oif().filter(|_| !on_nexthop) {
            msg.attr_u32(RTA_OIF, oif);
        }
        if self.bits & HAS_PRIORITY != 0 {
            msg.attr_u32(RTA_PRIORITY, self.priority);
        }
        if let Some(extra) = &self.extra {
            if !extra.rare().metrics.is_empty() {
                msg.attr(RTA_METRICS, &extra.rare().metrics);
            }
            if let Some(mark) = extra.rare().mark {
                msg.attr_u32(RTA_MARK, mark);
            }
            if let Some(pref) = extra.pref {
                msg.attr(RTA_PREF, &[pref]);
            }
            if let Some(nh_id) = extra.rare().nh_id {
                msg.attr_u32(RTA_NH_ID, nh_id);
            }
            if !extra.rare().multipath.is_empty() && !on_nexthop {
                let nest = msg.begin_nest(RTA_MULTIPATH);
                for hop in &extra.rare().multipath {
                    let mut rtnh = [0u8; 8];
                    rtnh[2] = hop.flags;
                    rtnh[3] = hop.hops;
                    rtnh[4..8].copy_from_slice(&hop.ifindex.to_ne_bytes());
                    let at = msg.nested_raw(&rtnh);
                    if let Some(gateway) = hop.gateway {
                        attr_ip(&mut msg, RTA_GATEWAY, gateway);
                    }
                    msg.patch_len16(at);
                }
                msg.end_nest(nest);
            }
        }
        msg.finish();
    }
}

fn attr_ip(msg: &mut MsgWriter<'_>, kind: u16, addr: IpAddr) {
    match addr {
        IpAddr::V4(v4) => msg.attr(kind, &v4.octets()),
        IpAddr::V6(v6) => msg.attr(kind, &v6.octets()),
    };
}

/// Puts an address attribute of a route being parsed into its slot (0 destination, 1
/// gateway, 2 preferred source, 3 source) and sets `bit`. IPv4 keeps the first three in the
/// route itself and a source (which IPv4 routes do not have) among the other attributes.
#[inline]
fn set_address(
    route: &mut Route,
    extra: &mut Option<Box<RouteExtra>>,
    kind: u16,
    value: &[u8],
    slot: usize,
    bit: u8,
) -> Result<()> {
    if route.bits & V6 != 0 {
        let Ok(octets) = <[u8; 16]>::try_from(value) else {
            return Err(bad_attr(kind));
        };
        let extra = extra.get_or_insert_with(Box::default);
        if let Some(held) = extra.v6.get_mut(slot) {
            *held = Ipv6Addr::from(octets);
        }
        extra.has_src |= slot == 3;
    } else {
        let Ok(octets) = <[u8; 4]>::try_from(value) else {
            return Err(bad_attr(kind));
        };
        match route.v4.get_mut(slot) {
            Some(held) => *held = octets,
            None => {
                let extra = extra.get_or_insert_with(Box::default);
                extra.has_src = true;
                extra.rare_mut().other.push((kind, value.into()));
            }
        }
    }
    route.bits |= bit;
    Ok(())
}

fn bad_attr(kind: u16) -> Error {
    Error::malformed(format!("route attribute {kind} has a wrong size"))
}

fn parse_multipath(mut buf: &[u8], v6: bool) -> Result<Vec<NextHop>> {
    let mut hops = Vec::new();
    while buf.len() >= 8 {
        let len = wire::u16_at(buf, 0) as usize;
        if len < 8 || len > buf.len() {
            return Err(Error::malformed("rtnexthop overruns RTA_MULTIPATH"));
        }
        let mut hop = NextHop {
            ifindex: wire::u32_at(buf, 4),
            gateway: None,
            flags: buf[2],
            hops: buf[3],
        };
        for (kind, value) in Nlas::new(&buf[8..len]) {
            if kind == RTA_GATEWAY {
                hop.gateway = match (v6, value.len()) {
                    (false, 4) => <[u8; 4]>::try_from(value).ok().map(IpAddr::from),
                    (true, 16) => <[u8; 16]>::try_from(value).ok().map(IpAddr::from),
                    _ => return Err(bad_attr(kind)),
                };
            }
        }
        hops.push(hop);
        buf = buf.get(wire::align(len)..).unwrap_or(&[]);
    }
    Ok(hops)
}
