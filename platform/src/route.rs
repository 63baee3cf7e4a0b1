//! Routes (IPv4 and IPv6, every table): a compact type parsed straight from the wire.
//!
//! A route in a full IPv4 table is small: its addresses are stored inline as IPv4 words,
//! everything rare (IPv6 addresses, multipath, metrics, unknown attributes) sits behind one
//! optional box, so a common IPv4 route is 40 bytes.

use std::cell::RefCell;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Arc;
use std::time::Instant;

use crate::countdown::{Countdown, Seconds};
use crate::error::{Error, Result};
use crate::types::{Ifindex, Protocol, RouteType, Scope, Table};
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
const RTA_FLOW: u16 = 11;
const RTA_TABLE: u16 = 15;
const RTA_MARK: u16 = 16;
const RTA_VIA: u16 = 18;
const RTA_PREF: u16 = 20;
const RTA_ENCAP_TYPE: u16 = 21;
const RTA_ENCAP: u16 = 22;
const RTA_EXPIRES: u16 = 23;
const RTA_TTL_PROPAGATE: u16 = 26;
const RTA_NH_ID: u16 = 30;

/// `RTAX_LOCK`: the bit mask of locked metrics inside `RTA_METRICS`.
const RTAX_LOCK: u16 = 1;
const RTAX_MTU: u16 = 2;
/// `RTAX_CC_ALGO`: the congestion control algorithm, a string.
pub const RTAX_CC_ALGO: u16 = 16;

/// The kernel's `USER_HZ`: the unit of `rta_expires` in `RTA_CACHEINFO`.
const USER_HZ: i32 = 100;

/// Length of `struct rtmsg`.
pub(crate) const RTMSG_LEN: usize = 12;

// Bits of `Route::bits`.
const V6: u8 = 1 << 0;
const HAS_DST: u8 = 1 << 1;
const HAS_GATEWAY: u8 = 1 << 2;
const HAS_PREFSRC: u8 = 1 << 3;
const HAS_PRIORITY: u8 = 1 << 4;
const HAS_OIF: u8 = 1 << 5;
/// An IPv6 route whose destination ends in four zero bytes (every prefix of up to 96 bits:
/// the kernel zeroes the host bits) holds its first twelve bytes in `v4`, not in its
/// [`RouteExtra`], which routes then share.
const DST_INLINE: u8 = 1 << 6;

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
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct NextHop {
    /// Output interface index.
    pub ifindex: Ifindex,
    /// Gateway, if any: from `RTA_GATEWAY`, or from `RTA_VIA` when its family differs from
    /// the route's (`nexthop via inet6 fe80::1` in an IPv4 route).
    pub gateway: Option<IpAddr>,
    /// `RTNH_F_*` flags (see [`crate::names::route_flags`]).
    pub flags: u8,
    /// Weight minus one (`rtnh_hops`), as the kernel stores it; see [`NextHop::weight`].
    pub hops: u8,
    /// Realms, encapsulation and undecoded attributes, boxed: most hops have none.
    more: Option<Box<HopMore>>,
}

/// The rare parts of a hop.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
struct HopMore {
    realms: Option<u32>,
    encap: Option<Encap>,
    unknown: Vec<(u16, Box<[u8]>)>,
}

impl NextHop {
    /// A hop out of `ifindex` via `gateway` with weight 1.
    pub fn new(ifindex: Ifindex, gateway: Option<IpAddr>) -> Self {
        NextHop {
            ifindex,
            gateway,
            ..NextHop::default()
        }
    }

    /// Sets the weight (1 to 256; clamped).
    pub fn with_weight(mut self, weight: u16) -> Self {
        self.hops = weight.clamp(1, 256).saturating_sub(1) as u8;
        self
    }

    /// The weight as `ip` prints it: `rtnh_hops + 1`.
    pub fn weight(&self) -> u16 {
        u16::from(self.hops) + 1
    }

    /// Sets the hop's realms (`realm`).
    pub fn with_realms(mut self, realms: u32) -> Self {
        self.more_mut().realms = Some(realms);
        self
    }

    /// Sets the hop's encapsulation.
    pub fn with_encap(mut self, encap: Encap) -> Self {
        self.more_mut().encap = Some(encap);
        self
    }

    fn more_mut(&mut self) -> &mut HopMore {
        self.more.get_or_insert_with(Box::default)
    }

    /// The hop's realms (`RTA_FLOW`: `to` in the low 16 bits, `from` in the high ones).
    pub fn realms(&self) -> Option<u32> {
        self.more.as_ref().and_then(|more| more.realms)
    }

    /// The hop's lightweight tunnel encapsulation (`RTA_ENCAP_TYPE` + `RTA_ENCAP`).
    pub fn encap(&self) -> Option<&Encap> {
        self.more.as_ref().and_then(|more| more.encap.as_ref())
    }

    /// Hop attributes this crate does not decode: type and payload.
    pub fn unknown_attributes(&self) -> &[(u16, Box<[u8]>)] {
        self.more.as_ref().map_or(&[], |more| &more.unknown)
    }
}

/// A lightweight tunnel encapsulation (`RTA_ENCAP_TYPE` and the nested `RTA_ENCAP`), kept as
/// the kernel sent it and decoded on demand by [`Encap::fields`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Encap {
    kind: u16,
    data: Box<[u8]>,
}

/// A decoded attribute value (of an encapsulation, a link's kind data, ...).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum AttrValue {
    /// An unsigned number.
    Uint(u64),
    /// Text (a name, an address).
    Text(String),
    /// Several texts (segments, labels).
    List(Vec<String>),
    /// A flag that is present (no value).
    Flag,
    /// Bytes this crate does not decode further, printed in hex.
    Raw(Box<[u8]>),
}

impl std::fmt::Display for AttrValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AttrValue::Uint(value) => write!(f, "{value}"),
            AttrValue::Text(text) => f.write_str(text),
            AttrValue::List(items) => f.write_str(&items.join(",")),
            AttrValue::Flag => f.write_str("on"),
            AttrValue::Raw(bytes) => f.write_str(&crate::names::hex(bytes)),
        }
    }
}

const LWTUNNEL_ENCAP_MPLS: u16 = 1;
const LWTUNNEL_ENCAP_IP: u16 = 2;
const LWTUNNEL_ENCAP_IP6: u16 = 4;
const LWTUNNEL_ENCAP_SEG6: u16 = 5;

impl Encap {
    /// An encapsulation of type `kind` (`LWTUNNEL_ENCAP_*`) with its nested attributes.
    pub fn new(kind: u16, data: impl Into<Box<[u8]>>) -> Self {
        Encap {
            kind,
            data: data.into(),
        }
    }

    /// The type (`LWTUNNEL_ENCAP_*`: 1 mpls, 2 ip, 4 ip6, 5 seg6, ...).
    pub fn kind(&self) -> u16 {
        self.kind
    }

    /// The nested attributes, as the kernel sent them.
    pub fn data(&self) -> &[u8] {
        &self.data
    }

    /// The type's name as `ip` prints it (`ip`, `seg6`, ...), or its number.
    pub fn kind_name(&self) -> std::borrow::Cow<'static, str> {
        crate::names::encap_type(self.kind)
    }

    /// The encapsulation's fields as `ip route` prints them (`id`, `src`, `dst`, `ttl`,
    /// `tos`, ...; `mode` and `segs` for seg6), in `ip`'s order. Types and attributes this
    /// crate does not decode are listed as `attrN` with their raw bytes, so nothing is lost.
    pub fn fields(&self) -> Vec<(std::borrow::Cow<'static, str>, AttrValue)> {
        use std::borrow::Cow;
        let mut out: Vec<(Cow<'static, str>, AttrValue)> = Vec::new();
        let raw = |kind: u16, value: &[u8]| {
            (
                Cow::Owned(format!("attr{kind}")),
                AttrValue::Raw(value.into()),
            )
        };
        let ip = |value: &[u8]| match value.len() {
            4 => <[u8; 4]>::try_from(value).ok().map(IpAddr::from),
            16 => <[u8; 16]>::try_from(value).ok().map(IpAddr::from),
            _ => None,
        };
        match self.kind {
            LWTUNNEL_ENCAP_IP | LWTUNNEL_ENCAP_IP6 => {
                let v6 = self.kind == LWTUNNEL_ENCAP_IP6;
                // LWTUNNEL_IP_{ID, DST, SRC, TTL/HOPLIMIT, TOS/TC, FLAGS, OPTS}: printed in
                // ip's order (id, src, dst, ttl, tos, flags).
                let mut by_kind: Vec<(u16, &[u8])> = Nlas::new(&self.data).collect();
                by_kind.sort_by_key(|(kind, _)| match kind {
                    1 => 0,
                    3 => 1,
                    2 => 2,
                    other => *other,
                });
                for (kind, value) in by_kind {
                    let field = match (kind, value.len()) {
                        (1, 8) => Some((
                            "id",
                            AttrValue::Uint(u64::from_be_bytes(
                                value.try_into().unwrap_or_default(),
                            )),
                        )),
                        (2 | 3, _) => ip(value).map(|addr| {
                            (
                                if kind == 2 { "dst" } else { "src" },
                                AttrValue::Text(addr.to_string()),
                            )
                        }),
                        (4, 1) => Some((
                            if v6 { "hoplimit" } else { "ttl" },
                            AttrValue::Uint(u64::from(value[0])),
                        )),
                        (5, 1) => Some((
                            if v6 { "tc" } else { "tos" },
                            AttrValue::Uint(u64::from(value[0])),
                        )),
                        (6, 2) => Some((
                            "flags",
                            AttrValue::Uint(u64::from(u16::from_be_bytes([value[0], value[1]]))),
                        )),
                        _ => None,
                    };
                    out.push(match field {
                        Some((name, value)) => (Cow::Borrowed(name), value),
                        None => raw(kind, value),
                    });
                }
            }
            LWTUNNEL_ENCAP_SEG6 => {
                for (kind, value) in Nlas::new(&self.data) {
                    // SEG6_IPTUNNEL_SRH: `int mode`, then an `ipv6_sr_hdr` with its
                    // segments, the last one first.
                    if kind == 1 && value.len() >= 12 {
                        let mode = wire::u32_at(value, 0);
                        out.push((
                            Cow::Borrowed("mode"),
                            AttrValue::Text(crate::names::seg6_mode(mode).into_owned()),
                        ));
                        let srh = &value[4..];
                        let first = usize::from(srh[4]);
                        let segs: Vec<String> = (0..=first)
                            .rev()
                            .filter_map(|at| srh.get(8 + at * 16..8 + at * 16 + 16))
                            .filter_map(|seg| <[u8; 16]>::try_from(seg).ok())
                            .map(|seg| crate::names::address(IpAddr::V6(Ipv6Addr::from(seg))))
                            .collect();
                        out.push((Cow::Borrowed("segs"), AttrValue::List(segs)));
                    } else {
                        out.push(raw(kind, value));
                    }
                }
            }
            LWTUNNEL_ENCAP_MPLS => {
                for (kind, value) in Nlas::new(&self.data) {
                    match kind {
                        1 if value.len() % 4 == 0 => {
                            let labels = value
                                .chunks_exact(4)
                                .map(|entry| {
                                    let word =
                                        u32::from_be_bytes(entry.try_into().unwrap_or_default());
                                    (word >> 12).to_string()
                                })
                                .collect();
                            out.push((Cow::Borrowed("dst"), AttrValue::List(labels)));
                        }
                        2 if value.len() == 1 => {
                            out.push((Cow::Borrowed("ttl"), AttrValue::Uint(value[0].into())))
                        }
                        _ => out.push(raw(kind, value)),
                    }
                }
            }
            _ => out.push((Cow::Borrowed("data"), AttrValue::Raw(self.data.clone()))),
        }
        out
    }
}

/// One route metric (`RTAX_*` inside `RTA_METRICS`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RouteMetric {
    /// The `RTAX_*` type (2 mtu, 8 advmss, ...; see [`crate::names::metric`]).
    pub kind: u16,
    /// The value as the kernel holds it (`ip` prints `rtt` divided by 8 and `rttvar` by 4).
    pub value: AttrValue,
    /// Whether the metric is locked (`lock mtu 1400`).
    pub locked: bool,
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
    /// The lifetime's end (`RTA_EXPIRES`, `rta_expires`): the kernel reports one it let run
    /// out as negative.
    expires: Option<Countdown<i32>>,
    nh_id: Option<u32>,
    /// `RTA_METRICS` payload (nested `RTAX_*` attributes), as sent by the kernel.
    metrics: Vec<u8>,
    multipath: Vec<NextHop>,
    /// A gateway of another family than the route's (`RTA_VIA`).
    via: Option<IpAddr>,
    /// `RTA_FLOW`: realms.
    flow: Option<u32>,
    encap: Option<Box<Encap>>,
    ttl_propagate: Option<u8>,
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
    via: None,
    flow: None,
    encap: None,
    ttl_propagate: None,
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

/// Moves `dst` into `v4` when it ends in four zero bytes, leaving it unspecified: whether
/// it did.
fn move_dst_inline(v4: &mut [[u8; 4]; 3], dst: &mut Ipv6Addr) -> bool {
    let octets = dst.octets();
    if octets[12..] != [0; 4] {
        return false;
    }
    for (slot, chunk) in v4.iter_mut().zip(octets.chunks_exact(4)) {
        slot.copy_from_slice(chunk);
    }
    *dst = Ipv6Addr::UNSPECIFIED;
    true
}

/// How many of the extra parts it parsed last a thread keeps, to share them with the next
/// routes that have the same ([`share_extra`]).
const RECENT_EXTRAS: usize = 4;

thread_local! {
    static RECENT: RefCell<[Option<Arc<RouteExtra>>; RECENT_EXTRAS]> =
        const { RefCell::new([const { None }; RECENT_EXTRAS]) };
}

/// `extra` in an [`Arc`]: one of the last few this thread parsed when it is equal to it.
/// The routes of a dump come in order, and an IPv6 table's are mostly via one gateway, with
/// one preference and their destinations inline ([`DST_INLINE`]): their extra parts are
/// equal, and a route costs no allocation of its own. Only small extras are kept here (no
/// rare part, no destination of their own), so what is kept alive beyond the routes holding
/// them stays a few hundred bytes.
fn share_extra(extra: RouteExtra) -> Arc<RouteExtra> {
    if extra.rare.is_some() || extra.v6[0] != Ipv6Addr::UNSPECIFIED {
        return Arc::new(extra);
    }
    RECENT.with(|recent| {
        let mut recent = recent.borrow_mut();
        if let Some(at) = recent
            .iter()
            .position(|held| held.as_deref() == Some(&extra))
        {
            // Move-to-front: the hit is found first next time (mostly it is the front one
            // already, and a rotation of one is not free).
            if at > 0 {
                recent[..=at].rotate_right(1);
            }
            return recent[0].clone().unwrap_or_else(|| Arc::new(extra));
        }
        let shared = Arc::new(extra);
        recent.rotate_right(1);
        recent[0] = Some(Arc::clone(&shared));
        shared
    })
}

/// The longest message [`Route::parse`] remembers for [`Route::parse_like_last`]: a plain
/// IPv6 route's is about 120 bytes; a longer one has parts a dump's next route seldom repeats.
const LAST_PARSED_MAX: usize = 256;

/// How many messages in a row a [`LastParsed`] may fail to stand for before the next one
/// parsed in full takes its place. Not the first: in a table whose routes take turns between
/// two gateways it stands for every other one, and keeping what was parsed costs a copy.
const LAST_PARSED_MISSES: u32 = 16;

/// An IPv6 message [`Route::parse`] parsed in full on this thread whose route a message
/// differing from it only in its destination can be built from ([`Route::parse_like_last`]).
struct LastParsed {
    payload: Vec<u8>,
    /// Where the value of the route's destination (its last `RTA_DST`, the one a parse keeps)
    /// starts in `payload`.
    dst_at: usize,
    route: Route,
    /// The messages since it last stood for one.
    misses: u32,
}

thread_local! {
    static LAST_PARSED: RefCell<Option<LastParsed>> = const { RefCell::new(None) };
}

impl LastParsed {
    /// The route of `payload` if it differs from the message kept only in its destination
    /// (`rtm_dst_len` and the value of its `RTA_DST`): the route kept with that destination.
    #[inline]
    fn build_like(&self, payload: &[u8]) -> Option<Route> {
        let dst_end = self.dst_at + 16;
        // Every byte but `rtm_dst_len` (the second) and the destination's value.
        if payload.len() != self.payload.len()
            || payload.first() != self.payload.first()
            || payload.get(2..self.dst_at)? != self.payload.get(2..self.dst_at)?
            || payload.get(dst_end..)? != self.payload.get(dst_end..)?
        {
            return None;
        }
        // The kept route's destination was inline, its extra parts shared (see
        // `Route::remember_parsed`): so must this one's be.
        let (head, tail) = payload.get(self.dst_at..dst_end)?.split_at(12);
        if tail != [0; 4] {
            return None;
        }
        let mut v4 = [[0; 4]; 3];
        for (slot, chunk) in v4.iter_mut().zip(head.chunks_exact(4)) {
            slot.copy_from_slice(chunk);
        }
        Some(Route {
            v4,
            dst_len: *payload.get(1)?,
            ..self.route.clone()
        })
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
    /// Shared between routes with the same extra parts (see [`share_extra`]): an IPv6
    /// route's gateway, preferred source and preference are mostly those of the route before.
    extra: Option<Arc<RouteExtra>>,
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
            if let Some(expires) = self.expires() {
                out.field("expires", &expires);
            }
            for (name, value) in [
                ("iif", extra.rare().iif),
                ("mark", extra.rare().mark),
                ("nh_id", extra.rare().nh_id),
            ] {
                if let Some(value) = value {
                    out.field(name, &value);
                }
            }
            if let Some(pref) = extra.pref {
                out.field("pref", &pref);
            }
            let rare = extra.rare();
            if let Some(via) = rare.via {
                out.field("via", &via);
            }
            if let Some(flow) = rare.flow {
                out.field("realms", &format_args!("{flow:#x}"));
            }
            if let Some(encap) = &rare.encap {
                out.field("encap", encap);
            }
            if let Some(ttl) = rare.ttl_propagate {
                out.field("ttl_propagate", &ttl);
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

/// The three words an IPv4 [`RouteId`] hashes as, from its fields.
#[inline]
fn v4_id_words(
    table: u32,
    priority: u32,
    oif: u32,
    dst: [u8; 4],
    gateway: [u8; 4],
    small: [u8; 4],
) -> [u64; 3] {
    let word = |hi: u32, lo: u32| (u64::from(hi) << 32) | u64::from(lo);
    let half = |bytes: [u8; 4]| u32::from_ne_bytes(bytes);
    [
        word(table, priority),
        word(oif, half(dst)),
        word(half(gateway), half(small)),
    ]
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
                for word in v4_id_words(*table, *priority, *oif, *dst, *gateway, *small) {
                    state.write_u64(word);
                }
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
            table: Table::MAIN.0,
            priority: 0,
            oif: 0,
            flags: 0,
            dst_len,
            tos: 0,
            protocol: Protocol::BOOT.0,
            scope: Scope::UNIVERSE.0,
            kind: RouteType::UNICAST.0,
            bits: 0,
            extra: None,
        };
        if dst.is_ipv6() {
            route.bits |= V6;
            route.extra = Some(Arc::default());
        }
        route.set_addr(0, HAS_DST, dst);
        route
    }

    /// Sets the routing table.
    pub fn with_table(mut self, table: Table) -> Self {
        self.table = table.0;
        self
    }

    /// Sets the gateway; one of another family than the route's is sent as `RTA_VIA`
    /// (`via inet6 fe80::1` on an IPv4 route).
    pub fn with_gateway(mut self, gateway: IpAddr) -> Self {
        if Family::of(gateway) == self.family() {
            self.set_addr(1, HAS_GATEWAY, gateway);
        } else {
            self.rare_mut().via = Some(gateway);
        }
        self
    }

    /// Sets the next hops of a multipath route.
    pub fn with_multipath(mut self, hops: Vec<NextHop>) -> Self {
        self.rare_mut().multipath = hops;
        self.normalize();
        self
    }

    /// Adds a metric (`RTAX_*` with its value; `locked` for `lock`). The congestion control
    /// algorithm ([`RTAX_CC_ALGO`]) takes its name with [`Route::with_congctl`].
    pub fn with_metric(mut self, kind: u16, value: u32, locked: bool) -> Self {
        self.push_metric(kind, &value.to_ne_bytes(), locked);
        self
    }

    /// Sets the congestion control algorithm (`congctl NAME`).
    pub fn with_congctl(mut self, name: &str, locked: bool) -> Self {
        let mut bytes = name.as_bytes().to_vec();
        bytes.push(0);
        self.push_metric(RTAX_CC_ALGO, &bytes, locked);
        self
    }

    fn push_metric(&mut self, kind: u16, value: &[u8], locked: bool) {
        let rare = self.rare_mut();
        let mut entries: Vec<(u16, Vec<u8>)> = Nlas::new(&rare.metrics)
            .filter(|(held, _)| *held != kind)
            .map(|(held, bytes)| (held, bytes.to_vec()))
            .collect();
        let mut lock = entries
            .iter()
            .position(|(held, _)| *held == RTAX_LOCK)
            .map_or(0, |at| nla_u32(&entries.remove(at).1).unwrap_or(0));
        if kind < 32 {
            if locked {
                lock |= 1 << kind;
            } else {
                lock &= !(1 << kind);
            }
        }
        if lock != 0 {
            entries.insert(0, (RTAX_LOCK, lock.to_ne_bytes().to_vec()));
        }
        entries.push((kind, value.to_vec()));
        let mut buf = Vec::new();
        for (kind, bytes) in entries {
            let len = (4 + bytes.len()) as u16;
            buf.extend_from_slice(&len.to_ne_bytes());
            buf.extend_from_slice(&kind.to_ne_bytes());
            buf.extend_from_slice(&bytes);
            buf.resize(wire::align(buf.len()), 0);
        }
        rare.metrics = buf;
    }

    /// Sets the realms (`realm`: `to`, or `from/to` as `(from << 16) | to`).
    pub fn with_realms(mut self, realms: u32) -> Self {
        self.rare_mut().flow = Some(realms);
        self
    }

    /// Sets the IPv6 router preference (`RTA_PREF`: 0 medium, 1 high, 3 low).
    pub fn with_pref(mut self, pref: u8) -> Self {
        self.extra_mut().pref = Some(pref);
        self
    }

    /// Sets the lifetime in seconds (`RTA_EXPIRES`, IPv6).
    pub fn with_expires(mut self, seconds: u32) -> Self {
        self.rare_mut().expires = Some(Countdown::Left(i32::saturating(i64::from(seconds))));
        self
    }

    /// Sets the lightweight tunnel encapsulation.
    pub fn with_encap(mut self, encap: Encap) -> Self {
        self.rare_mut().encap = Some(Box::new(encap));
        self
    }

    /// Adds `rtm_flags` bits (e.g. `RTNH_F_ONLINK` = 4 for `onlink`).
    pub fn with_flags(mut self, flags: u32) -> Self {
        let flags = self.flags() | flags;
        self.flags = flags as u16;
        if flags > 0xffff {
            self.extra_mut().flags_hi = (flags >> 16) as u16;
        }
        self
    }

    fn extra_mut(&mut self) -> &mut RouteExtra {
        Arc::make_mut(self.extra.get_or_insert_with(Arc::default))
    }

    fn rare_mut(&mut self) -> &mut Rare {
        self.extra_mut().rare_mut()
    }

    /// Drops an emptied rare part (equality stays exact).
    fn normalize(&mut self) {
        if let Some(extra) = &mut self.extra
            && extra.rare.as_deref().is_some_and(|rare| *rare == NO_RARE)
        {
            Arc::make_mut(extra).normalize();
        }
        if self.bits & V6 == 0 && self.extra.as_deref() == Some(&RouteExtra::default()) {
            self.extra = None;
        }
    }

    /// Sets the output interface.
    pub fn with_oif(mut self, ifindex: Ifindex) -> Self {
        self.oif = ifindex.0;
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
    pub fn with_protocol(mut self, protocol: Protocol) -> Self {
        self.protocol = protocol.0;
        self
    }

    /// Sets the scope (`RT_SCOPE_*`).
    pub fn with_scope(mut self, scope: Scope) -> Self {
        self.scope = scope.0;
        self
    }

    /// Sets the TOS (`rtm_tos`, IPv4 only; part of the route's identity).
    pub fn with_tos(mut self, tos: u8) -> Self {
        self.tos = tos;
        self
    }

    /// Sets the route type (`RTN_*`).
    pub fn with_kind(mut self, kind: RouteType) -> Self {
        self.kind = kind.0;
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
            (IpAddr::V6(v6), Some(extra)) if self.bits & V6 != 0 => {
                Arc::make_mut(extra).v6[slot] = v6;
                if slot == 0 {
                    // `v4` holds nothing else of an IPv6 route.
                    self.bits &= !DST_INLINE;
                    self.v4 = [[0; 4]; 3];
                    self.inline_dst();
                }
            }
            _ => return,
        }
        self.bits |= bit;
    }

    /// Moves an IPv6 destination that ends in four zero bytes out of the extra parts into
    /// `v4` (see [`DST_INLINE`]).
    fn inline_dst(&mut self) {
        let Some(extra) = &mut self.extra else {
            return;
        };
        if self.bits & (V6 | DST_INLINE) != V6 {
            return;
        }
        let mut dst = extra.v6[0];
        if move_dst_inline(&mut self.v4, &mut dst) {
            if extra.v6[0] != dst {
                Arc::make_mut(extra).v6[0] = dst;
            }
            self.bits |= DST_INLINE;
        }
    }

    /// The destination of an IPv6 route, wherever it is held.
    fn v6_dst(&self, extra: &RouteExtra) -> Ipv6Addr {
        if self.bits & DST_INLINE != 0 {
            let mut octets = [0u8; 16];
            for (chunk, slot) in octets.chunks_exact_mut(4).zip(&self.v4) {
                chunk.copy_from_slice(slot);
            }
            Ipv6Addr::from(octets)
        } else {
            extra.v6[0]
        }
    }

    fn addr(&self, slot: usize, bit: u8) -> Option<IpAddr> {
        if self.bits & bit == 0 {
            return None;
        }
        if self.bits & V6 != 0 {
            self.extra.as_ref().map(|extra| {
                IpAddr::V6(if slot == 0 {
                    self.v6_dst(extra)
                } else {
                    extra.v6[slot]
                })
            })
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
    pub fn table(&self) -> Table {
        Table(self.table)
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

    /// The gateway, if any (see [`Route::multipath`] for multipath routes): `RTA_GATEWAY`,
    /// or `RTA_VIA` for a gateway of the other family.
    pub fn gateway(&self) -> Option<IpAddr> {
        self.addr(1, HAS_GATEWAY).or_else(|| self.rare().via)
    }

    fn rare(&self) -> &Rare {
        self.extra.as_deref().map_or(&NO_RARE, RouteExtra::rare)
    }

    /// The realms (`RTA_FLOW`: `from` in the high 16 bits, `to` in the low ones), if any.
    pub fn realms(&self) -> Option<u32> {
        self.rare().flow
    }

    /// The lightweight tunnel encapsulation (`encap ip ...`), if any.
    pub fn encap(&self) -> Option<&Encap> {
        self.rare().encap.as_deref()
    }

    /// `RTA_TTL_PROPAGATE` (MPLS), if reported.
    pub fn ttl_propagate(&self) -> Option<u8> {
        self.rare().ttl_propagate
    }

    /// The input interface (`RTA_IIF`), if any.
    pub fn iif(&self) -> Option<Ifindex> {
        self.rare().iif.map(Ifindex)
    }

    /// Attributes this crate does not decode, as the kernel sent them: type and payload.
    pub fn unknown_attributes(&self) -> &[(u16, Box<[u8]>)] {
        &self.rare().other
    }

    /// Whether the route has an `mtu` metric that is not locked: the kernel rewrites such an
    /// IPv6 route's MTU when its link's MTU changes, without a notification.
    pub(crate) fn has_unlocked_mtu(&self) -> bool {
        self.has_metrics()
            && self.metrics_lock() & (1 << RTAX_MTU) == 0
            && Nlas::new(&self.rare().metrics).any(|(kind, _)| kind == RTAX_MTU)
    }

    /// The bit mask of locked metrics (`RTAX_LOCK`: bit N locks `RTAX_*` N).
    pub fn metrics_lock(&self) -> u32 {
        Nlas::new(&self.rare().metrics)
            .find(|(kind, _)| *kind == RTAX_LOCK)
            .and_then(|(_, value)| nla_u32(value))
            .unwrap_or(0)
    }

    /// The preferred source address, if any.
    pub fn prefsrc(&self) -> Option<IpAddr> {
        self.addr(2, HAS_PREFSRC)
    }

    /// The output interface, if any.
    pub fn oif(&self) -> Option<Ifindex> {
        (self.bits & HAS_OIF != 0).then_some(Ifindex(self.oif))
    }

    /// The metric (`RTA_PRIORITY`); 0 when absent.
    pub fn priority(&self) -> u32 {
        self.priority
    }

    /// The protocol that installed the route (`RTPROT_*`).
    pub fn protocol(&self) -> Protocol {
        Protocol(self.protocol)
    }

    /// The scope (`RT_SCOPE_*`).
    pub fn scope(&self) -> Scope {
        Scope(self.scope)
    }

    /// The route type (`RTN_*`).
    pub fn kind(&self) -> RouteType {
        RouteType(self.kind)
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

    /// The route metrics (`RTA_METRICS`) in the kernel's order, each with its lock bit
    /// (`RTAX_LOCK` itself is folded into [`RouteMetric::locked`]; see
    /// [`Route::metrics_lock`]): e.g. kind 2 (mtu) with value 1400.
    pub fn metrics(&self) -> Vec<RouteMetric> {
        let lock = self.metrics_lock();
        Nlas::new(&self.rare().metrics)
            .filter(|(kind, _)| *kind != RTAX_LOCK)
            .map(|(kind, value)| RouteMetric {
                kind,
                value: match (kind, nla_u32(value)) {
                    (RTAX_CC_ALGO, _) => AttrValue::Text(wire::nla_str(value)),
                    (_, Some(number)) => AttrValue::Uint(number.into()),
                    (_, None) => AttrValue::Raw(value.into()),
                },
                locked: kind < 32 && lock & (1 << kind) != 0,
            })
            .collect()
    }

    /// Whether the route has any metric ([`Route::metrics`] not empty), without collecting
    /// them.
    pub fn has_metrics(&self) -> bool {
        Nlas::new(&self.rare().metrics).any(|(kind, _)| kind != RTAX_LOCK)
    }

    /// The firewall mark (`RTA_MARK`), if any.
    pub fn mark(&self) -> Option<u32> {
        self.extra.as_ref().and_then(|extra| extra.rare().mark)
    }

    /// The IPv6 router preference (`RTA_PREF`), if any.
    pub fn pref(&self) -> Option<u8> {
        self.extra.as_ref().and_then(|extra| extra.pref)
    }

    /// The remaining lifetime in seconds (`RTA_EXPIRES`; in a dump `RTA_CACHEINFO`'s
    /// `rta_expires`), if any: what is left of it now, as `ip route` would print it now.
    /// Negative where the kernel reports a lifetime past its end, as `ip` prints it. The
    /// kernel reports what is left when it writes a message; the cache keeps the instant the
    /// lifetime runs out, so that a route held for an hour does not show the count it had when
    /// it was read (to within a second). A lifetime set with
    /// [`with_expires`](Self::with_expires) stands still.
    pub fn expires(&self) -> Option<i32> {
        let countdown = self.extra.as_ref()?.rare().expires?;
        Some(i32::saturating(countdown.left()))
    }

    /// The remaining lifetime at `at` (see [`expires`](Self::expires)).
    pub fn expires_at(&self, at: Instant) -> Option<i32> {
        let countdown = self.extra.as_ref()?.rare().expires?;
        Some(i32::saturating(countdown.left_at(at)))
    }

    /// The nexthop object id (`RTA_NH_ID`), if any.
    pub fn nh_id(&self) -> Option<u32> {
        self.extra.as_ref().and_then(|extra| extra.rare().nh_id)
    }

    /// Every interface the route goes out of: its `oif` and its next hops'.
    pub fn ifindexes(&self) -> impl Iterator<Item = Ifindex> + '_ {
        self.oif()
            .into_iter()
            .chain(self.multipath().iter().map(|hop| hop.ifindex))
    }

    /// Hashes [`Route::id`] as [`RouteId`]'s `Hash` does, without building it for the common
    /// IPv4 route (the cache hashes the id of every route it loads).
    pub(crate) fn hash_id<H: std::hash::Hasher>(&self, state: &mut H) {
        if self.extra.is_none() && self.bits & V6 == 0 {
            let has_gateway = self.bits & HAS_GATEWAY != 0;
            let words = v4_id_words(
                self.table,
                self.priority,
                if self.bits & HAS_OIF != 0 {
                    self.oif
                } else {
                    0
                },
                self.v4[0],
                if has_gateway { self.v4[1] } else { [0; 4] },
                [self.dst_len, self.tos, self.kind, u8::from(has_gateway)],
            );
            for word in words {
                state.write_u64(word);
            }
        } else {
            std::hash::Hash::hash(&self.id(), state);
        }
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
            first_hop.map_or(0, |hop| hop.ifindex.into())
        };
        let gateway = self
            .gateway()
            .or_else(|| first_hop.and_then(|hop| hop.gateway));
        // 2 for a gateway of the other family (`RTA_VIA`), whose last octets stand in.
        let has_gateway = match gateway {
            None => 0,
            Some(gateway) if Family::of(gateway) == self.family() => 1,
            Some(_) => 2,
        };
        match &self.extra {
            // IPv6 keeps one route per prefix and metric among the routes that qualify for
            // ECMP (a gateway, not learned from router advertisements): next hops added to
            // it become its siblings, announced as one multipath route, so they are not part
            // of the id. Other routes (device routes, RA routes) are told apart by next hop.
            Some(extra) if self.bits & V6 != 0 => {
                let ecmp = gateway.is_some() && self.protocol != Protocol::RA.0;
                RouteId(IdInner::V6 {
                    table: self.table,
                    priority: self.priority,
                    oif: if ecmp { 0 } else { oif },
                    dst: self.v6_dst(extra).octets(),
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
                    Some(IpAddr::V6(gw)) => {
                        let [.., a, b, c, d] = gw.octets();
                        [a, b, c, d]
                    }
                    None => [0; 4],
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
                dst: self.v6_dst(extra).octets(),
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

    /// Whether `other` has this route's prefix key ([`Route::weak_id`]): for two IPv4 routes
    /// compared field by field, without building either key (a new route is compared with
    /// every route of its [`RoutesByWeakId`](crate::RoutesByWeakId) bucket).
    pub(crate) fn same_weak_id(&self, other: &Route) -> bool {
        if self.bits & V6 == 0 && other.bits & V6 == 0 {
            let src_len = |route: &Route| route.extra.as_ref().map_or(0, |extra| extra.src_len);
            return self.v4[0] == other.v4[0]
                && self.table == other.table
                && self.priority == other.priority
                && self.dst_len == other.dst_len
                && self.tos == other.tos
                && src_len(self) == src_len(other);
        }
        self.weak_id() == other.weak_id()
    }

    /// The prefix key that `NLM_F_REPLACE` replaces.
    pub fn weak_id(&self) -> RouteWeakId {
        let (dst, src, src_len) = match &self.extra {
            Some(extra) if self.bits & V6 != 0 => (
                self.v6_dst(extra).octets(),
                extra.v6[3].octets(),
                extra.src_len,
            ),
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
            hop.gateway == gateway && ifindex.is_none_or(|ifindex| hop.ifindex == Ifindex(ifindex))
        })?;
        let mut route = self.clone();
        let extra = Arc::make_mut(route.extra.as_mut()?);
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
                plain = [NextHop::new(
                    self.oif().unwrap_or(Ifindex(0)),
                    self.gateway(),
                )];
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
            Arc::make_mut(extra).rare_mut().multipath = hops;
        }
        route
    }

    /// Parses an `RTM_NEWROUTE`/`RTM_DELROUTE` payload (after the netlink header).
    /// Returns `Ok(None)` for families other than IPv4 and IPv6 (e.g. multicast routes).
    pub fn parse(payload: &[u8]) -> Result<Option<Self>> {
        if let Some(route) = Route::parse_v4_plain(payload) {
            return Ok(Some(route));
        }
        let keep = match Route::parse_like_last(payload) {
            Ok(route) => return Ok(Some(route)),
            Err(keep) => keep,
        };
        if let Some((route, dst_at)) = Route::parse_v6_plain(payload) {
            if keep && let Some(dst_at) = dst_at {
                Route::remember_parsed(payload, &route, dst_at);
            }
            return Ok(Some(route));
        }
        Route::parse_general(payload)
    }

    /// The IPv6 route of a message that differs from the one this thread keeps
    /// ([`LastParsed`]) only in its destination (`rtm_dst_len` and the value of its
    /// `RTA_DST`): that route with this destination, as a parse would build it, without
    /// parsing. The routes of a large dump mostly differ so (one gateway, device, table and
    /// protocol for thousands of prefixes). Else whether the next message parsed in full is to
    /// be kept instead: none is kept, or the one kept failed [`LAST_PARSED_MISSES`] in a row.
    /// (An IPv4 route's one-pass parse costs no more than the comparison.)
    #[inline]
    fn parse_like_last(payload: &[u8]) -> std::result::Result<Route, bool> {
        LAST_PARSED.with(|last| {
            let Ok(mut last) = last.try_borrow_mut() else {
                return Err(false);
            };
            let Some(last) = last.as_mut() else {
                return Err(true);
            };
            match last.build_like(payload) {
                Some(route) => {
                    last.misses = 0;
                    Ok(route)
                }
                None => {
                    last.misses = last.misses.saturating_add(1);
                    Err(last.misses >= LAST_PARSED_MISSES)
                }
            }
        })
    }

    /// Keeps `payload` and the `route` the one-pass parse built from it (whose destination's
    /// value starts at `dst_at`) for [`Route::parse_like_last`] when another route can be built
    /// from it: its destination held inline (so that the next's extra parts are this one's),
    /// and without rare parts (they may hold a lifetime read against the clock when parsed, or
    /// hops). Else the one kept stays: any message parsed before is as good a model.
    fn remember_parsed(payload: &[u8], route: &Route, dst_at: usize) {
        if payload.len() > LAST_PARSED_MAX
            || route.bits & DST_INLINE == 0
            || route
                .extra
                .as_ref()
                .is_none_or(|extra| extra.rare.is_some())
        {
            return;
        }
        LAST_PARSED.with(|last| {
            let Ok(mut last) = last.try_borrow_mut() else {
                return;
            };
            match &mut *last {
                Some(last) => {
                    last.payload.clear();
                    last.payload.extend_from_slice(payload);
                    last.dst_at = dst_at;
                    last.route = route.clone();
                    last.misses = 0;
                }
                None => {
                    *last = Some(LastParsed {
                        payload: payload.to_vec(),
                        dst_at,
                        route: route.clone(),
                        misses: 0,
                    });
                }
            }
        });
    }

    /// [`Route::parse`] for every message, without the one-pass path of the common IPv4
    /// route.
    fn parse_general(payload: &[u8]) -> Result<Option<Self>> {
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
        // Built here, then shared with the routes parsed before it when equal.
        let mut extra: Option<RouteExtra> = None;
        fn extra_of(extra: &mut Option<RouteExtra>) -> &mut RouteExtra {
            extra.get_or_insert_with(RouteExtra::default)
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
        let (mut encap_type, mut encap, mut cache_expires) = (None, None, None);
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
                RTA_EXPIRES => {
                    extra_of(&mut extra).rare_mut().expires =
                        nla_u32(value).map(|seconds| Countdown::read_now(i64::from(seconds)))
                }
                RTA_NH_ID => extra_of(&mut extra).rare_mut().nh_id = nla_u32(value),
                RTA_METRICS => extra_of(&mut extra).rare_mut().metrics = value.to_vec(),
                RTA_MULTIPATH => {
                    extra_of(&mut extra).rare_mut().multipath = parse_multipath(value, v6)?
                }
                RTA_VIA => extra_of(&mut extra).rare_mut().via = Some(parse_via(value)?),
                RTA_FLOW => extra_of(&mut extra).rare_mut().flow = nla_u32(value),
                RTA_ENCAP_TYPE if value.len() == 2 => encap_type = Some(wire::u16_at(value, 0)),
                RTA_ENCAP => encap = Some(value),
                RTA_TTL_PROPAGATE => extra_of(&mut extra).rare_mut().ttl_propagate = nla_u8(value),
                // Counters that change on every use, not the route's state; but the remaining
                // lifetime (`rta_expires`, a signed count of USER_HZ ticks) is what `ip` shows
                // as `expires`, divided as C divides.
                RTA_CACHEINFO => {
                    if value.len() >= 12 {
                        let expires = wire::u32_at(value, 8).cast_signed();
                        if expires != 0 {
                            cache_expires = Some(expires / USER_HZ);
                        }
                    }
                }
                _ => extra_of(&mut extra)
                    .rare_mut()
                    .other
                    .push((kind, value.into())),
            }
        }
        if nlas.malformed() {
            return Err(Error::malformed("route attribute overruns its message"));
        }
        if let Some(data) = encap {
            extra_of(&mut extra).rare_mut().encap =
                Some(Box::new(Encap::new(encap_type.unwrap_or(0), data)));
        } else if let Some(kind) = encap_type {
            extra_of(&mut extra)
                .rare_mut()
                .other
                .push((RTA_ENCAP_TYPE, kind.to_ne_bytes().into()));
        }
        if let Some(expires) = cache_expires {
            let rare = extra_of(&mut extra).rare_mut();
            rare.expires = rare
                .expires
                .or_else(|| Some(Countdown::read_now(i64::from(expires))));
        }
        if let Some(extra) = &mut extra {
            extra.normalize();
        }
        if !v6 && extra.as_ref() == Some(&RouteExtra::default()) {
            extra = None;
        }
        if let Some(mut extra) = extra {
            if v6 && move_dst_inline(&mut route.v4, &mut extra.v6[0]) {
                route.bits |= DST_INLINE;
            }
            route.extra = Some(share_extra(extra));
        }
        Ok(Some(route))
    }

    /// The common IPv4 route in one pass (most of a large dump): no source prefix, flags in
    /// 16 bits, and nothing but 4-byte destination, gateway, preferred source, device,
    /// priority and table attributes, which need no [`RouteExtra`]. `None` for anything else
    /// (another attribute, another size, a malformed tail): [`Route::parse`] then takes its
    /// general path from the start, which also reports what is malformed. The route is the
    /// one the general path builds from the same message.
    #[inline]
    fn parse_v4_plain(payload: &[u8]) -> Option<Route> {
        let (hdr, mut nlas) = payload.split_first_chunk::<RTMSG_LEN>()?;
        let rtm_flags = wire::u32_at(hdr, 8);
        if hdr[0] != AF_INET || hdr[2] != 0 || rtm_flags > 0xffff {
            return None;
        }
        // Whole words, kept in registers: the route is written once at the end.
        let [mut dst, mut gateway, mut prefsrc] = [0u32; 3];
        let (mut oif, mut priority, mut table) = (0u32, 0u32, u32::from(hdr[4]));
        let mut bits = 0u8;
        while !nlas.is_empty() {
            // Each attribute: 4 bytes of header (length 8, type) and a 4-byte value.
            let (attr, rest) = nlas.split_first_chunk::<8>()?;
            if u16::from_ne_bytes([attr[0], attr[1]]) != 8 {
                return None;
            }
            let value = u32::from_ne_bytes([attr[4], attr[5], attr[6], attr[7]]);
            match u16::from_ne_bytes([attr[2], attr[3]]) {
                RTA_DST => {
                    dst = value;
                    bits |= HAS_DST;
                }
                RTA_GATEWAY => {
                    gateway = value;
                    bits |= HAS_GATEWAY;
                }
                RTA_PREFSRC => {
                    prefsrc = value;
                    bits |= HAS_PREFSRC;
                }
                RTA_OIF => {
                    oif = value;
                    bits |= HAS_OIF;
                }
                RTA_PRIORITY => {
                    priority = value;
                    bits |= HAS_PRIORITY;
                }
                RTA_TABLE => table = value,
                _ => return None,
            }
            nlas = rest;
        }
        Some(Route {
            v4: [dst, gateway, prefsrc].map(u32::to_ne_bytes),
            table,
            priority,
            oif,
            flags: rtm_flags as u16,
            dst_len: hdr[1],
            tos: hdr[3],
            protocol: hdr[5],
            scope: hdr[6],
            kind: hdr[7],
            bits,
            extra: None,
        })
    }

    /// The common IPv6 route in one pass, as [`Route::parse_v4_plain`] the IPv4 one: no
    /// source prefix, flags in 16 bits, and nothing but 16-byte destination, gateway and
    /// preferred source, device, priority, table, preference and cache information without
    /// a remaining lifetime (what the kernel sends for a static or kernel route). `None` for
    /// anything else, which the general path then parses from the start. The route is the
    /// one the general path builds from the same message, its extra parts shared as there.
    #[inline]
    fn parse_v6_plain(payload: &[u8]) -> Option<(Route, Option<usize>)> {
        let (hdr, mut nlas) = payload.split_first_chunk::<RTMSG_LEN>()?;
        // Where the value of the (last) destination starts.
        let mut dst_at = None;
        let rtm_flags = wire::u32_at(hdr, 8);
        if hdr[0] != AF_INET6 || hdr[2] != 0 || rtm_flags > 0xffff {
            return None;
        }
        let mut extra = RouteExtra::default();
        let (mut oif, mut priority, mut table) = (0u32, 0u32, u32::from(hdr[4]));
        let mut bits = V6;
        while !nlas.is_empty() {
            let (head, _) = nlas.split_first_chunk::<4>()?;
            let len = usize::from(u16::from_ne_bytes([head[0], head[1]]));
            if len < 4 || len > nlas.len() {
                return None;
            }
            let kind = u16::from_ne_bytes([head[2], head[3]]) & 0x3fff;
            let value = &nlas[4..len];
            let value_at = payload.len() - nlas.len() + 4;
            nlas = nlas.get(len.next_multiple_of(4)..).unwrap_or(&[]);
            match kind {
                RTA_DST => {
                    extra.v6[0] = Ipv6Addr::from(<[u8; 16]>::try_from(value).ok()?);
                    bits |= HAS_DST;
                    dst_at = Some(value_at);
                }
                RTA_GATEWAY => {
                    extra.v6[1] = Ipv6Addr::from(<[u8; 16]>::try_from(value).ok()?);
                    bits |= HAS_GATEWAY;
                }
                RTA_PREFSRC => {
                    extra.v6[2] = Ipv6Addr::from(<[u8; 16]>::try_from(value).ok()?);
                    bits |= HAS_PREFSRC;
                }
                RTA_OIF => {
                    oif = nla_u32(value)?;
                    bits |= HAS_OIF;
                }
                RTA_PRIORITY => {
                    priority = nla_u32(value)?;
                    bits |= HAS_PRIORITY;
                }
                RTA_TABLE => table = nla_u32(value)?,
                RTA_PREF => extra.pref = nla_u8(value),
                // A remaining lifetime goes among the rare parts: the general path's.
                RTA_CACHEINFO if value.len() >= 12 && wire::u32_at(value, 8) != 0 => {
                    return None;
                }
                RTA_CACHEINFO => {}
                _ => return None,
            }
        }
        let mut v4 = [[0; 4]; 3];
        if move_dst_inline(&mut v4, &mut extra.v6[0]) {
            bits |= DST_INLINE;
        }
        let route = Route {
            v4,
            table,
            priority,
            oif,
            flags: rtm_flags as u16,
            dst_len: hdr[1],
            tos: hdr[3],
            protocol: hdr[5],
            scope: hdr[6],
            kind: hdr[7],
            bits,
            extra: Some(share_extra(extra)),
        };
        Some((route, dst_at))
    }

    /// On nexthop object `id` (`nhid`): the kernel takes the gateway, device and hops from
    /// it, so a route built with this carries no other next hop.
    pub fn with_nh_id(mut self, id: u32) -> Self {
        self.extra_mut().rare_mut().nh_id = Some(id);
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
        let kind = if on_nexthop && self.kind == RouteType::BLACKHOLE.0 {
            RouteType::UNICAST.0
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
        if let Some(gateway) = self.addr(1, HAS_GATEWAY).filter(|_| !on_nexthop) {
            attr_ip(&mut msg, RTA_GATEWAY, gateway);
        }
        if let Some(prefsrc) = self.prefsrc() {
            attr_ip(&mut msg, RTA_PREFSRC, prefsrc);
        }
        if let Some(oif) = self.oif().filter(|_| !on_nexthop) {
            msg.attr_u32(RTA_OIF, oif.into());
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
            let rare = extra.rare();
            // The gateway, encap and hops of a route on a nexthop object are the nexthop's.
            if let Some(via) = rare.via.filter(|_| !on_nexthop) {
                attr_via(&mut msg, via);
            }
            if let Some(flow) = rare.flow {
                msg.attr_u32(RTA_FLOW, flow);
            }
            if let Some(encap) = rare.encap.as_ref().filter(|_| !on_nexthop) {
                attr_encap(&mut msg, encap);
            }
            if let Some(ttl) = rare.ttl_propagate {
                msg.attr(RTA_TTL_PROPAGATE, &[ttl]);
            }
            // A lifetime that ran out (negative) is not one to set.
            if let Some(expires) = self
                .expires()
                .and_then(|expires| u32::try_from(expires).ok())
                && self.family() == Family::V6
            {
                msg.attr_u32(RTA_EXPIRES, expires);
            }
            if !rare.multipath.is_empty() && !on_nexthop {
                let nest = msg.begin_nest(RTA_MULTIPATH);
                for hop in &rare.multipath {
                    let mut rtnh = [0u8; 8];
                    rtnh[2] = hop.flags;
                    rtnh[3] = hop.hops;
                    rtnh[4..8].copy_from_slice(&hop.ifindex.0.to_ne_bytes());
                    let at = msg.nested_raw(&rtnh);
                    match hop.gateway {
                        Some(gateway) if Family::of(gateway) == self.family() => {
                            attr_ip(&mut msg, RTA_GATEWAY, gateway)
                        }
                        Some(gateway) => attr_via(&mut msg, gateway),
                        None => {}
                    }
                    if let Some(realms) = hop.realms() {
                        msg.attr_u32(RTA_FLOW, realms);
                    }
                    if let Some(encap) = hop.encap() {
                        attr_encap(&mut msg, encap);
                    }
                    msg.patch_len16(at);
                }
                msg.end_nest(nest);
            }
        }
        msg.finish();
    }
}

/// `RTA_VIA`: a `struct rtvia` (family, then the address).
fn attr_via(msg: &mut MsgWriter<'_>, addr: IpAddr) {
    let mut bytes = Vec::with_capacity(18);
    match addr {
        IpAddr::V4(v4) => {
            bytes.extend_from_slice(&u16::from(AF_INET).to_ne_bytes());
            bytes.extend_from_slice(&v4.octets());
        }
        IpAddr::V6(v6) => {
            bytes.extend_from_slice(&u16::from(AF_INET6).to_ne_bytes());
            bytes.extend_from_slice(&v6.octets());
        }
    }
    msg.attr(RTA_VIA, &bytes);
}

fn attr_encap(msg: &mut MsgWriter<'_>, encap: &Encap) {
    msg.attr(RTA_ENCAP_TYPE, &encap.kind.to_ne_bytes());
    let nest = msg.begin_nest(RTA_ENCAP | NLA_F_NESTED);
    msg.nested_raw(&encap.data);
    let pad = wire::align(encap.data.len()) - encap.data.len();
    msg.nested_raw(&[0; 3][..pad]);
    msg.end_nest(nest);
}

/// The nested bit of an attribute type.
const NLA_F_NESTED: u16 = 1 << 15;

/// Reads a `struct rtvia`.
fn parse_via(value: &[u8]) -> Result<IpAddr> {
    let family = wire::u16_at(value, 0);
    let addr = value.get(2..).unwrap_or(&[]);
    match (family, addr.len()) {
        (family, 4) if family == u16::from(AF_INET) => {
            Ok(IpAddr::from(<[u8; 4]>::try_from(addr).unwrap_or_default()))
        }
        (family, 16) if family == u16::from(AF_INET6) => {
            Ok(IpAddr::from(<[u8; 16]>::try_from(addr).unwrap_or_default()))
        }
        _ => Err(bad_attr(RTA_VIA)),
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
    extra: &mut Option<RouteExtra>,
    kind: u16,
    value: &[u8],
    slot: usize,
    bit: u8,
) -> Result<()> {
    if route.bits & V6 != 0 {
        let Ok(octets) = <[u8; 16]>::try_from(value) else {
            return Err(bad_attr(kind));
        };
        let extra = extra.get_or_insert_with(RouteExtra::default);
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
                let extra = extra.get_or_insert_with(RouteExtra::default);
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
            ifindex: Ifindex(wire::u32_at(buf, 4)),
            flags: buf[2],
            hops: buf[3],
            ..NextHop::default()
        };
        let (mut encap_type, mut encap) = (None, None);
        let mut more = HopMore::default();
        let mut nlas = Nlas::new(&buf[8..len]);
        for (kind, value) in &mut nlas {
            match kind {
                RTA_GATEWAY => {
                    hop.gateway = match (v6, value.len()) {
                        (false, 4) => <[u8; 4]>::try_from(value).ok().map(IpAddr::from),
                        (true, 16) => <[u8; 16]>::try_from(value).ok().map(IpAddr::from),
                        _ => return Err(bad_attr(kind)),
                    }
                }
                RTA_VIA => hop.gateway = Some(parse_via(value)?),
                RTA_FLOW => more.realms = nla_u32(value),
                RTA_ENCAP_TYPE if value.len() == 2 => encap_type = Some(wire::u16_at(value, 0)),
                RTA_ENCAP => encap = Some(value),
                _ => more.unknown.push((kind, value.into())),
            }
        }
        if nlas.malformed() {
            return Err(Error::malformed(
                "next hop attribute overruns its rtnexthop",
            ));
        }
        if let Some(data) = encap {
            more.encap = Some(Encap::new(encap_type.unwrap_or(0), data));
        } else if let Some(kind) = encap_type {
            more.unknown
                .push((RTA_ENCAP_TYPE, kind.to_ne_bytes().into()));
        }
        if more != HopMore::default() {
            hop.more = Some(Box::new(more));
        }
        hops.push(hop);
        buf = buf.get(wire::align(len)..).unwrap_or(&[]);
    }
    Ok(hops)
}

#[cfg(test)]
mod size_tests {
    use super::*;

    /// A plain IPv4 route is 40 bytes with nothing on the heap: the rare attributes kept
    /// since issue 13 cost it nothing.
    #[test]
    fn plain_ipv4_route_stays_40_bytes() {
        assert_eq!(std::mem::size_of::<Route>(), 40);
        let route = Route::new("10.3.0.0".parse().unwrap(), 16)
            .with_gateway("10.2.0.2".parse().unwrap())
            .with_oif(crate::Ifindex(3))
            .with_table(Table(100))
            .with_priority(5);
        let mut buf = Vec::new();
        route.emit(&mut buf, wire::RTM_NEWROUTE, 0, 1);
        let parsed = Route::parse(&buf[wire::NLMSG_HDRLEN..]).unwrap().unwrap();
        assert!(parsed.extra.is_none(), "{parsed:?}");
        assert_eq!(parsed, route);
        // The parts a multipath route pays for: a hop keeps its rare attributes boxed.
        assert!(std::mem::size_of::<NextHop>() <= 32);
        assert!(std::mem::size_of::<Rare>() <= 144);
    }
}

#[cfg(test)]
mod v4_plain_tests {
    use super::*;

    /// An `rtmsg` (family, dst_len, src_len, tos, table, protocol, scope, type, flags) and
    /// the attributes, each given as (length field, type, value).
    fn message(hdr: [u8; 8], flags: u32, attrs: &[(u16, u16, &[u8])]) -> Vec<u8> {
        let mut buf = hdr.to_vec();
        buf.extend_from_slice(&flags.to_ne_bytes());
        for &(len, kind, value) in attrs {
            buf.extend_from_slice(&len.to_ne_bytes());
            buf.extend_from_slice(&kind.to_ne_bytes());
            buf.extend_from_slice(value);
            while !buf.len().is_multiple_of(4) {
                buf.push(0);
            }
        }
        buf
    }

    /// Every payload parses the same through `Route::parse` (one pass where it can) and the
    /// general path: the same result or error, object, id and weak hash.
    fn assert_one_pass_agrees(cases: &[Vec<u8>]) {
        for payload in cases {
            let one_pass = Route::parse(payload);
            let general = Route::parse_general(payload);
            assert_eq!(
                format!("{one_pass:?}"),
                format!("{general:?}"),
                "{payload:?}"
            );
            if let (Ok(Some(a)), Ok(Some(b))) = (&one_pass, &general) {
                assert_eq!(a, b);
                assert_eq!(a.id(), b.id());
                assert_eq!(a.weak_hash(), b.weak_hash());
            }
        }
    }

    /// The one-pass path gives what the general path gives, for the messages it takes and
    /// for those it leaves to the general path (which then reports what is malformed).
    #[test]
    fn plain_ipv4_path_agrees_with_the_general_path() {
        let dst: &[u8] = &[10, 1, 2, 0];
        let gw: &[u8] = &[192, 0, 2, 2];
        let u32_of = |n: u32| n.to_ne_bytes();
        let (oif, table, prio) = (u32_of(3), u32_of(100), u32_of(7));
        let hdr = [AF_INET, 24, 0, 0, 254, 3, 0, 1];
        let plain = [
            (8, RTA_TABLE, &table[..]),
            (8, RTA_DST, dst),
            (8, RTA_GATEWAY, gw),
            (8, RTA_OIF, &oif[..]),
        ];
        let mut cases = vec![
            message(hdr, 0, &plain),
            message(hdr, 0, &plain[1..]),
            message(hdr, 0, &[]),
            message(
                hdr,
                0,
                &[(8, RTA_PRIORITY, &prio[..]), (8, RTA_PREFSRC, gw)],
            ),
            // The same attribute twice: the last one counts on both paths.
            message(hdr, 0, &[(8, RTA_DST, gw), (8, RTA_DST, dst)]),
            // RTNH_F_ONLINK in the flags, a 16-bit flag, another scope and TOS.
            message([AF_INET, 32, 0, 4, 254, 4, 253, 1], 0x4, &plain),
            message(hdr, 0x8000, &plain),
            // Left to the general path: flags above 16 bits, a source prefix, other
            // attributes and families, odd sizes and malformed tails.
            message(hdr, 0x1_0000, &plain),
            message([AF_INET, 24, 8, 0, 254, 3, 0, 1], 0, &[(8, RTA_SRC, dst)]),
            message(hdr, 0, &[(8, RTA_DST, dst), (8, RTA_MARK, &prio[..])]),
            message(hdr, 0, &[(8, RTA_DST, dst), (8, RTA_IIF, &oif[..])]),
            message(hdr, 0, &[(8, RTA_DST | 0x8000, dst)]),
            message(hdr, 0, &[(7, RTA_DST, &dst[..3])]),
            message(hdr, 0, &[(6, RTA_TABLE, &[1, 0])]),
            message(hdr, 0, &[(12, RTA_DST, &[10, 1, 2, 0, 0, 0, 0, 0])]),
            message(hdr, 0, &[(16, RTA_DST, dst)]),
            message(
                [AF_INET6, 64, 0, 0, 254, 3, 0, 1],
                0,
                &[(8, RTA_OIF, &oif[..])],
            ),
            message([128, 24, 0, 0, 254, 3, 0, 1], 0, &plain),
        ];
        let mut cut = message(hdr, 0, &plain);
        cut.truncate(cut.len() - 3);
        cases.push(cut);
        let mut tail = message(hdr, 0, &plain);
        tail.extend_from_slice(&[4, 0, 0]);
        cases.push(tail);
        cases.push(hdr[..7].to_vec());
        assert_one_pass_agrees(&cases);
        // The common route does take the one-pass path.
        assert!(Route::parse_v4_plain(&cases[0]).is_some());
        assert!(Route::parse_v4_plain(&cases[7]).is_none());
    }

    /// Values of the IPv6 messages of these tests: a destination not held inline, a gateway,
    /// a device, table and priority, and cache information without and with a remaining
    /// lifetime.
    struct V6Parts {
        far: [u8; 16],
        gw: [u8; 16],
        oif: [u8; 4],
        table: [u8; 4],
        prio: [u8; 4],
        cacheinfo: [u8; 32],
        expiring: [u8; 32],
    }

    impl V6Parts {
        fn new() -> Self {
            let u32_of = |n: u32| n.to_ne_bytes();
            let mut cacheinfo = [0u8; 32];
            cacheinfo[4..8].copy_from_slice(&u32_of(5));
            let mut expiring = cacheinfo;
            expiring[8..12].copy_from_slice(&u32_of(3000));
            V6Parts {
                far: [0x2a, 0, 0, 1, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9],
                gw: [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2],
                oif: u32_of(3),
                table: u32_of(254),
                prio: u32_of(1024),
                cacheinfo,
                expiring,
            }
        }
    }

    /// The same for the one-pass path of IPv6 routes.
    #[test]
    fn plain_ipv6_path_agrees_with_the_general_path() {
        let dst: &[u8] = &[0x2a, 0, 0, 1, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        let p = V6Parts::new();
        let (far, gw) = (&p.far[..], &p.gw[..]);
        let hdr = [AF_INET6, 48, 0, 0, 254, 3, 0, 1];
        let plain = [
            (8, RTA_TABLE, &p.table[..]),
            (20, RTA_DST, dst),
            (8, RTA_PRIORITY, &p.prio[..]),
            (20, RTA_GATEWAY, gw),
            (8, RTA_OIF, &p.oif[..]),
            (36, RTA_CACHEINFO, &p.cacheinfo[..]),
            (5, RTA_PREF, &[0][..]),
        ];
        let mut cases = vec![
            message(hdr, 0, &plain),
            message(hdr, 0, &plain[1..]),
            message(hdr, 0, &[]),
            message(hdr, 0, &[(20, RTA_DST, far), (20, RTA_PREFSRC, gw)]),
            message(
                [AF_INET6, 128, 0, 0, 254, 3, 0, 1],
                0,
                &[(20, RTA_DST, far)],
            ),
            // The same attribute twice: the last one counts on both paths.
            message(hdr, 0, &[(20, RTA_DST, gw), (20, RTA_DST, dst)]),
            message(hdr, 0, &[(5, RTA_PREF, &[3][..]), (4, RTA_PREF, &[][..])]),
            message(hdr, 0x200, &plain),
            message(hdr, 0, &[(20, RTA_DST | 0x8000, dst)]),
            message(hdr, 0, &[(16, RTA_CACHEINFO, &p.cacheinfo[..12])]),
            message(hdr, 0, &[(12, RTA_CACHEINFO, &p.cacheinfo[..8])]),
            // Left to the general path: flags above 16 bits, a source prefix, a remaining
            // lifetime, other attributes, odd sizes and malformed tails.
            message(hdr, 0x1_0000, &plain),
            message([AF_INET6, 48, 64, 0, 254, 3, 0, 1], 0, &[(20, RTA_SRC, gw)]),
            message(hdr, 0, &[(36, RTA_CACHEINFO, &p.expiring[..])]),
            message(hdr, 0, &[(20, RTA_DST, dst), (8, RTA_MARK, &p.prio[..])]),
            message(hdr, 0, &[(20, RTA_DST, dst), (8, RTA_IIF, &p.oif[..])]),
            message(hdr, 0, &[(19, RTA_DST, &dst[..15])]),
            message(hdr, 0, &[(8, RTA_GATEWAY, &gw[..4])]),
            message(hdr, 0, &[(6, RTA_TABLE, &[1, 0])]),
            message(hdr, 0, &[(24, RTA_DST, &[dst, &[0; 4]].concat())]),
            message(hdr, 0, &[(28, RTA_DST, dst)]),
        ];
        let mut cut = message(hdr, 0, &plain);
        cut.truncate(cut.len() - 10);
        cases.push(cut);
        let mut tail = message(hdr, 0, &plain);
        tail.extend_from_slice(&[4, 0, 0]);
        cases.push(tail);
        cases.push(hdr[..7].to_vec());
        assert_one_pass_agrees(&cases);
        // The common route does take the one-pass path.
        assert!(Route::parse_v6_plain(&cases[0]).is_some());
        assert!(Route::parse_v6_plain(&cases[3]).is_some());
        assert!(Route::parse_v6_plain(&cases[11]).is_none());
        assert!(Route::parse_v6_plain(&cases[13]).is_none());
    }

    /// What `Route::parse` builds from the last message it parsed in full
    /// (`parse_like_last`) is what the general path builds from the message, after every
    /// message before it of a set that differ in the destination (inline or not, its length,
    /// where it sits, twice), in any other byte or in their family.
    #[test]
    fn a_route_built_from_the_last_message_is_the_one_parsed() {
        let inline = |n: u8| -> Vec<u8> { [&[0x2a, 0, 0, n][..], &[0; 12]].concat() };
        let other_gw: &[u8] = &[0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3];
        let p = V6Parts::new();
        let (far, gw) = (&p.far[..], &p.gw[..]);
        let hdr = |dst_len: u8| [AF_INET6, dst_len, 0, 0, 254, 3, 0, 1];
        let route = |dst_len: u8, flags: u32, dst: &[u8], gw: &[u8], info: &[u8], pref: u8| {
            message(
                hdr(dst_len),
                flags,
                &[
                    (8, RTA_TABLE, &p.table[..]),
                    (20, RTA_DST, dst),
                    (8, RTA_PRIORITY, &p.prio[..]),
                    (20, RTA_GATEWAY, gw),
                    (8, RTA_OIF, &p.oif[..]),
                    (36, RTA_CACHEINFO, info),
                    (5, RTA_PREF, &[pref][..]),
                ],
            )
        };
        let (one, two) = (inline(1), inline(2));
        let cases = vec![
            route(48, 0, &one, gw, &p.cacheinfo, 0),
            route(48, 0, &two, gw, &p.cacheinfo, 0),
            route(64, 0, &two, gw, &p.cacheinfo, 0),
            route(0, 0, &[0; 16], gw, &p.cacheinfo, 0),
            route(128, 0, far, gw, &p.cacheinfo, 0),
            route(48, 0, &two, other_gw, &p.cacheinfo, 0),
            route(48, 0, &two, gw, &p.cacheinfo, 3),
            route(48, 0x200, &two, gw, &p.cacheinfo, 0),
            route(48, 0, &two, gw, &p.expiring, 0),
            message(hdr(48), 0, &[(20, RTA_DST, &one), (20, RTA_DST, &two)]),
            message(hdr(48), 0, &[(20, RTA_DST, &two), (20, RTA_DST, &one)]),
            message(hdr(48), 0, &[(20, RTA_DST, &two), (20, RTA_DST, &two)]),
            message(hdr(48), 0, &[(20, RTA_DST | 0x8000, &two)]),
            message(
                hdr(48),
                0,
                &[(20, RTA_DST, &two), (8, RTA_MARK, &p.prio[..])],
            ),
            message(hdr(48), 0, &[(20, RTA_DST, &two), (20, RTA_GATEWAY, gw)]),
            message(hdr(48), 0, &[(20, RTA_DST, &two), (19, RTA_GATEWAY, gw)]),
            message(
                [AF_INET, 24, 0, 0, 254, 3, 0, 1],
                0,
                &[(8, RTA_DST, &[10, 1, 2, 0]), (20, RTA_GATEWAY, gw)],
            ),
            message(
                [AF_INET, 24, 0, 0, 254, 3, 0, 1],
                0,
                &[(8, RTA_DST, &[10, 1, 3, 0]), (8, RTA_GATEWAY, &gw[..4])],
            ),
        ];
        let forget = || LAST_PARSED.with(|last| *last.borrow_mut() = None);
        for before in &cases {
            for payload in &cases {
                forget();
                let _ = Route::parse(before);
                assert_one_pass_agrees(std::slice::from_ref(payload));
            }
        }
        // Whatever was kept before: all of them in turn, three times over.
        forget();
        for _ in 0..3 {
            assert_one_pass_agrees(&cases);
        }
        // The common case does take the short way: the next prefix via the same gateway.
        forget();
        assert!(Route::parse(&cases[0]).is_ok());
        assert!(Route::parse_like_last(&cases[1]).is_ok());
        assert!(Route::parse_like_last(&cases[2]).is_ok());
        assert!(Route::parse_like_last(&cases[4]).is_err());
        assert!(Route::parse_like_last(&cases[5]).is_err());
        // Routes taking turns between two gateways: the first one's stays kept, and stands
        // for every other route.
        forget();
        let one_other = route(48, 0, &one, other_gw, &p.cacheinfo, 0);
        let two_other = route(48, 0, &two, other_gw, &p.cacheinfo, 0);
        assert!(Route::parse(&cases[0]).is_ok());
        assert!(Route::parse(&one_other).is_ok());
        assert!(Route::parse_like_last(&cases[1]).is_ok());
        assert!(Route::parse(&two_other).is_ok());
        assert!(Route::parse_like_last(&cases[2]).is_ok());
        // After as many misses in a row as it may have, the next message parsed is kept.
        for _ in 0..LAST_PARSED_MISSES {
            assert!(Route::parse(&one_other).is_ok());
        }
        assert!(Route::parse_like_last(&two_other).is_ok());
        assert!(Route::parse_like_last(&cases[1]).is_err());
    }
}

#[cfg(test)]
mod v6_tests {
    use super::*;

    fn round_trip(route: &Route) -> Route {
        let mut buf = Vec::new();
        route.emit(&mut buf, wire::RTM_NEWROUTE, 0, 1);
        Route::parse(&buf[wire::NLMSG_HDRLEN..]).unwrap().unwrap()
    }

    /// IPv6 routes via one gateway share one allocation of their extra parts, their
    /// destinations held inline; a host route's destination (four non-zero last bytes) is
    /// its own, and each route still reads back exactly as built.
    #[test]
    fn ipv6_routes_share_their_extra_parts_and_read_back_exactly() {
        let gateway: IpAddr = "2001:db8::2".parse().unwrap();
        let build = |dst: &str, len: u8| {
            Route::new(dst.parse().unwrap(), len)
                .with_gateway(gateway)
                .with_oif(crate::Ifindex(2))
                .with_priority(1024)
                .with_pref(0)
        };
        let built = [
            build("2a00:1::", 48),
            build("2a00:2::", 48),
            build("2a00:3:0:0:0:0:1:0", 112),
            build("2a00::", 16),
            build("::", 0),
            build("2a00:4::1:2", 128),
            build("2a00:4::1:2", 127),
        ];
        let parsed: Vec<Route> = built.iter().map(round_trip).collect();
        for (built, parsed) in built.iter().zip(&parsed) {
            assert_eq!(parsed, built);
            assert_eq!(parsed.dst(), built.dst());
            assert_eq!(parsed.gateway(), Some(gateway));
            assert_eq!(parsed.id(), built.id());
            assert_eq!(parsed.weak_id(), built.weak_id());
            assert_eq!(parsed.weak_hash(), built.weak_id().stable_hash());
            assert_eq!(parsed.pref(), Some(0));
            let mut again = Vec::new();
            parsed.emit(&mut again, wire::RTM_NEWROUTE, 0, 1);
            let mut first = Vec::new();
            built.emit(&mut first, wire::RTM_NEWROUTE, 0, 1);
            assert_eq!(again, first, "{built:?}");
        }
        let extra = |route: &Route| route.extra.clone().unwrap();
        assert!(Arc::ptr_eq(&extra(&parsed[0]), &extra(&parsed[1])));
        assert!(Arc::ptr_eq(&extra(&parsed[0]), &extra(&parsed[4])));
        assert_ne!(parsed[0].dst(), parsed[1].dst());
        // Four non-zero last bytes: the destination stays in the route's own extra part.
        assert!(!Arc::ptr_eq(&extra(&parsed[5]), &extra(&parsed[0])));
        assert_eq!(parsed[5].dst(), "2a00:4::1:2".parse::<IpAddr>().unwrap());
        // A different gateway is not shared with the others, and a change of a shared
        // route's extra parts copies them first.
        let other = round_trip(&build("2a00:9::", 48).with_gateway("2001:db8::3".parse().unwrap()));
        assert!(!Arc::ptr_eq(&extra(&other), &extra(&parsed[0])));
        let changed = parsed[0].clone().with_expires(30);
        assert_eq!(parsed[1].expires(), None);
        assert_eq!(changed.expires(), Some(30));
        assert_eq!(parsed[1], built[1]);
        // A destination set again on a built route is held as if it had been built so.
        let moved = build("2a00:4::1:2", 128).with_gateway(gateway);
        let mut moved_back = moved.clone();
        moved_back.set_addr(0, HAS_DST, "2a00:1::".parse().unwrap());
        moved_back.dst_len = 48;
        assert_eq!(moved_back, built[0]);
    }
}
