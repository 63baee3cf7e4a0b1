//! The objects as `ip` prints them: `Display` for [`Route`], [`Address`], [`Link`] (with
//! interfaces as `ifN`), and `*_text` functions that take a way to name interfaces and whether
//! to print the details `ip -d` adds.

use std::fmt;

use crate::route::{AttrValue, Encap, NextHop, RTAX_CC_ALGO, RouteMetric};
use crate::types::{Protocol, RouteType, Scope, Table};
use crate::{Address, Family, Link, Nexthop, Route, Rule, names};

/// Names an interface index (`eth0`), or `ifN` when it is unknown.
pub type IfName<'a> = &'a dyn Fn(u32) -> String;

mod kinds;

pub(crate) fn default_name(ifindex: u32) -> String {
    format!("if{ifindex}")
}

/// A route's words as `ip route show` prints them (`ip -d route` with `details`): its
/// first line, then one `nexthop ...` line per hop of a multipath route.
pub fn route_lines(route: &Route, dev: IfName<'_>, details: bool) -> Vec<String> {
    route_lines_in(route, dev, details, Narrowed::default())
}

/// What a listing of routes was narrowed to, as `ip route show` narrows it: `ip` leaves out of
/// each line the words every line would repeat.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Narrowed {
    /// One table (`table ID`, or none given, which is `table main`): no `table` word.
    pub table: bool,
    /// One device (`dev DEV`): no `dev` word on the route's line (its hops keep theirs).
    pub dev: bool,
    /// One protocol (`proto P`): no `proto` word.
    pub protocol: bool,
    /// One scope (`scope S`): no `scope` word.
    pub scope: bool,
    /// One TOS (`tos T`): no `tos` word.
    pub tos: bool,
    /// One gateway (`via ADDR`, a host prefix): no `via` word for a gateway of the route's
    /// own family (one of the other family, `via inet6 ...`, stays).
    pub gateway: bool,
    /// One preferred source (`src ADDR`, a host prefix): no `src` word.
    pub prefsrc: bool,
    /// One metric (`metric N`): no `metric` word.
    pub metric: bool,
    /// One input interface (`iif DEV`): no `iif` word.
    pub iif: bool,
    /// Both halves of the realms (`realms FROM/TO`): no `realms` word.
    pub realms: bool,
}

/// [`route_lines`] as `ip route show` prints them in a listing narrowed to `narrowed`.
pub fn route_lines_in(
    route: &Route,
    dev: IfName<'_>,
    details: bool,
    narrowed: Narrowed,
) -> Vec<String> {
    let mut words: Vec<String> = Vec::new();
    if route.kind() != RouteType::UNICAST || details {
        words.push(route.kind().to_string());
    }
    words.push(names::route_prefix(route.dst(), route.dst_len()));
    if let Some((src, len)) = route.src() {
        words.push(format!("from {}", names::route_prefix(src, len)));
    }
    if route.tos() != 0 && !narrowed.tos {
        words.push(format!("tos {}", names::dsfield(route.tos())));
    }
    if let Some(id) = route.nh_id() {
        words.push(format!("nhid {id}"));
    }
    if let Some(encap) = route.encap() {
        words.push(encap_text(encap));
    }
    if let Some(gateway) = route.gateway()
        && !(narrowed.gateway && Family::of(gateway) == route.family())
    {
        words.push(via_text(route.family(), gateway));
    }
    if let Some(oif) = route.oif().filter(|_| !narrowed.dev) {
        words.push(format!("dev {}", dev(oif.into())));
    }
    if (route.table() != Table::MAIN || details) && !narrowed.table {
        words.push(format!("table {}", route.table()));
    }
    if route.flags() & RTM_F_CLONED == 0 {
        if (route.protocol() != Protocol::BOOT || details) && !narrowed.protocol {
            words.push(format!("proto {}", route.protocol()));
        }
        if (route.scope() != Scope::UNIVERSE || details) && !narrowed.scope {
            words.push(format!("scope {}", route.scope()));
        }
    }
    if let Some(prefsrc) = route.prefsrc().filter(|_| !narrowed.prefsrc) {
        words.push(format!("src {}", names::address(prefsrc)));
    }
    if (route.family() == Family::V6 || route.priority() != 0) && !narrowed.metric {
        words.push(format!("metric {}", route.priority()));
    }
    words.extend(names::route_flags(route.flags()));
    // As `ip`: none for 0, decimal below 16.
    match route.mark() {
        None | Some(0) => {}
        Some(mark @ 1..16) => words.push(format!("mark {mark}")),
        Some(mark) => words.push(format!("mark {mark:#x}")),
    }
    if let Some(flow) = route.realms().filter(|_| !narrowed.realms) {
        words.push(realm_text(flow));
    }
    if let Some(expires) = route.expires() {
        words.push(format!("expires {expires}sec"));
    }
    for metric in route.metrics() {
        words.push(metric_text(&metric));
    }
    if let Some(iif) = route.iif().filter(|_| !narrowed.iif) {
        words.push(format!("iif {}", dev(iif.into())));
    }
    if let Some(pref) = route.pref() {
        words.push(format!("pref {}", names::pref(pref)));
    }
    if let Some(ttl) = route.ttl_propagate() {
        let state = if ttl == 0 { "disabled" } else { "enabled" };
        words.push(format!("ttl-propagate {state}"));
    }
    for (kind, value) in route.unknown_attributes() {
        words.push(format!("attr{kind} {}", names::hex(value)));
    }
    let mut lines = vec![words.join(" ")];
    for hop in route.multipath() {
        lines.push(hop_text(route.family(), hop, dev));
    }
    lines
}

/// `RTM_F_CLONED`: a cached route (no protocol or scope printed).
const RTM_F_CLONED: u32 = 0x200;

/// One hop of a multipath route as `ip` prints it: `nexthop via X dev Y weight W [flags]`.
pub fn hop_text(family: Family, hop: &NextHop, dev: IfName<'_>) -> String {
    let mut words = vec!["nexthop".to_owned()];
    if let Some(encap) = hop.encap() {
        words.push(encap_text(encap));
    }
    if let Some(gateway) = hop.gateway {
        words.push(via_text(family, gateway));
    }
    if let Some(flow) = hop.realms() {
        words.push(realm_text(flow));
    }
    words.push(format!("dev {}", dev(hop.ifindex.into())));
    words.push(format!("weight {}", hop.weight()));
    words.extend(names::route_flags(u32::from(hop.flags)));
    for (kind, value) in hop.unknown_attributes() {
        words.push(format!("attr{kind} {}", names::hex(value)));
    }
    words.join(" ")
}

/// A route's or hop's realms as `ip route` prints them: `realm TO`, or `realms FROM/TO`.
fn realm_text(flow: u32) -> String {
    if flow >> 16 == 0 {
        format!("realm {}", names::realms(flow))
    } else {
        format!("realms {}", names::realms(flow))
    }
}

/// A nexthop object as `ip -d nexthop` prints it (and `ip -d route`, after `nh_info`, for a
/// route on it): `id 10 group 1/2,3 scope global proto unspec`, `id 1 via 192.0.2.2 dev eth0
/// scope link proto zebra onlink`, `id 3 scope global blackhole proto unspec`, `id 11 group 1/2 type resilient buckets 8 idle_timer 120
/// unbalanced_timer 0 unbalanced_time 0 scope global proto unspec`.
pub fn nexthop_text(nh: &Nexthop, dev: IfName<'_>) -> String {
    let mut words = vec![format!("id {}", nh.id())];
    if nh.is_group() {
        let members: Vec<String> = nh
            .group()
            .iter()
            .map(|member| match member.weight {
                1 => member.id.to_string(),
                weight => format!("{},{weight}", member.id),
            })
            .collect();
        words.push(format!("group {}", members.join("/")));
    }
    if nh.group_type() == Some(crate::nexthop::NEXTHOP_GRP_TYPE_RES) {
        words.push("type resilient".to_owned());
        if let Some(res) = nh.resilient() {
            // The kernel counts the timers in USER_HZ ticks; `ip` prints seconds.
            let fields = [
                ("buckets", res.buckets.map(u64::from), 1),
                ("idle_timer", res.idle_timer.map(u64::from), 100),
                ("unbalanced_timer", res.unbalanced_timer.map(u64::from), 100),
                ("unbalanced_time", res.unbalanced_time, 100),
            ];
            for (name, value, per) in fields {
                if let Some(value) = value {
                    words.push(format!("{name} {}", value / per));
                }
            }
        }
    }
    if let Some(gateway) = nh.gateway() {
        words.push(format!("via {}", names::address(gateway)));
    }
    if let Some(oif) = nh.oif() {
        words.push(format!("dev {}", dev(oif.into())));
    }
    words.push(format!("scope {}", names::scope(nh.scope().get())));
    if nh.is_blackhole() {
        words.push("blackhole".to_owned());
    }
    words.push(format!("proto {}", names::protocol(nh.protocol().get())));
    words.extend(names::route_flags(nh.flags()));
    if nh.is_fdb() {
        words.push("fdb".to_owned());
    }
    words.join(" ")
}

/// `via GW`, or `via inet6 GW` for a gateway of the other family.
fn via_text(family: Family, gateway: std::net::IpAddr) -> String {
    match (family, gateway) {
        (Family::V4, std::net::IpAddr::V6(_)) => format!("via inet6 {}", names::address(gateway)),
        (Family::V6, std::net::IpAddr::V4(v4)) => format!("via inet {v4}"),
        (_, gateway) => format!("via {}", names::address(gateway)),
    }
}

/// `encap TYPE FIELD VALUE ...` as `ip` prints it (seg6 segments as `segs N [ A B ]`).
pub fn encap_text(encap: &Encap) -> String {
    let mut words = vec![format!("encap {}", encap.kind_name())];
    for (name, value) in encap.fields() {
        match (&*name, &value) {
            ("segs", AttrValue::List(segs)) => {
                words.push(format!("segs {} [ {} ]", segs.len(), segs.join(" ")))
            }
            ("dst", AttrValue::List(labels)) => words.push(format!("dst {}", labels.join("/"))),
            // LWTUNNEL_IP_FLAGS: the TUNNEL_* bits ip names (none when 0).
            ("flags", AttrValue::Uint(flags)) => {
                for (bit, name) in [(0x1, "csum"), (0x4, "key"), (0x8, "seq")] {
                    if flags & bit != 0 {
                        words.push(name.to_owned());
                    }
                }
                if flags & !0xd != 0 {
                    words.push(format!("flags {:#x}", flags & !0xd));
                }
            }
            _ => words.push(format!("{name} {value}")),
        }
    }
    words.join(" ")
}

/// One metric as `ip` prints it: `mtu lock 1400`, `rtt 1ms`, `features ecn`.
pub fn metric_text(metric: &RouteMetric) -> String {
    let lock = if metric.locked { "lock " } else { "" };
    let name = names::metric(metric.kind);
    let value = match (metric.kind, &metric.value) {
        // rtt in 1/8 ms, rttvar in 1/4 ms, rto_min in ms.
        (4, AttrValue::Uint(raw)) => ms(raw / 8),
        (5, AttrValue::Uint(raw)) => ms(raw / 4),
        (13, AttrValue::Uint(raw)) => ms(*raw),
        (12, AttrValue::Uint(raw)) if raw & 1 != 0 && raw & !1 == 0 => "ecn".to_owned(),
        (RTAX_CC_ALGO, value) => value.to_string(),
        (_, value) => value.to_string(),
    };
    format!("{name} {lock}{value}")
}

fn ms(value: u64) -> String {
    if value >= 1000 {
        format!("{}s", value as f64 / 1000.0)
    } else {
        format!("{value}ms")
    }
}

/// `ip route`'s text for the route, interfaces as `ifN` (see [`route_lines`] to name them).
impl fmt::Display for Route {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&route_lines(self, &default_name, false).join("\n\t"))
    }
}

/// A rule as `ip rule` prints it (`ip -d rule` with `details`): `PRIORITY:\tSELECTORS`, e.g.
/// `100:\tfrom 10.1.0.0/16 lookup 7` (with `details`, `... lookup 7 proto unspec`).
pub fn rule_text(rule: &Rule, details: bool) -> String {
    format!(
        "{}:\t{}",
        rule.priority(),
        rule.selector_words(details).join(" ")
    )
}

/// An address as `ip -o addr` prints it after the interface: `inet 10.0.0.1/24 brd ...
/// scope global dynamic noprefixroute LABEL valid_lft 300sec preferred_lft 200sec`.
pub fn address_text(addr: &Address) -> String {
    let [head, lifetimes] = address_lines(addr);
    format!("{head} {lifetimes}")
}

/// An address as `ip addr` (and `ip monitor address`) prints it after the interface, in its
/// two lines without their indentation: `inet 10.0.0.1/24 ... LABEL`, then `valid_lft 300sec
/// preferred_lft 200sec`.
pub fn address_lines(addr: &Address) -> [String; 2] {
    let family = match addr.family() {
        Family::V4 => "inet",
        Family::V6 => "inet6",
    };
    let mut words = vec![family.to_owned()];
    match addr.peer() {
        Some(peer) => {
            words.push(names::address(addr.local()));
            words.push(format!(
                "peer {}/{}",
                names::address(peer),
                addr.prefix_len()
            ));
        }
        None => words.push(format!(
            "{}/{}",
            names::address(addr.local()),
            addr.prefix_len()
        )),
    }
    if let Some(metric) = addr.rt_priority() {
        words.push(format!("metric {metric}"));
    }
    if let Some(brd) = addr.broadcast() {
        words.push(format!("brd {brd}"));
    }
    words.push(format!("scope {}", addr.scope()));
    words.extend(addr.flag_names());
    // As `ip` prints it: not when it is 0 (unspec).
    if let Some(proto) = addr.proto().filter(|proto| *proto != 0) {
        words.push(format!("proto {}", names::address_proto(proto)));
    }
    if let Some(label) = addr.label() {
        words.push(label.to_owned());
    }
    let lifetime = |secs: u32| {
        if secs == crate::LIFETIME_FOREVER {
            "forever".to_owned()
        } else {
            format!("{secs}sec")
        }
    };
    let (valid, preferred) = addr.lifetimes();
    [
        words.join(" "),
        format!(
            "valid_lft {} preferred_lft {}",
            lifetime(valid),
            lifetime(preferred)
        ),
    ]
}

impl fmt::Display for Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&address_text(self))
    }
}

/// A link as `ip -o link` prints it, on one line: `3: v0@v1: <FLAGS> mtu 1500 ...`, the
/// parent as `@ifN` (with `link-netnsid N`) when it is in another namespace, the link-layer
/// addresses, `protodown`, the alias and the altnames; with `details`, every word `ip -d -o
/// link` adds (promiscuity, MTU limits, the kind's and the port role's data as iproute2
/// prints them, queues and offload limits), except the countdown timers, which are not kept.
pub fn link_text(link: &Link, dev: IfName<'_>, details: bool) -> String {
    link_text_with(link, dev, false, None, details)
}

/// [`link_text`], with `M-DOWN` after the flags when `parent_down`: `ip` prints it for a link
/// whose parent in the namespace is down (a veth whose peer is), which only a caller that
/// knows the other links can tell; and with `link-netns NAME` where `link_netns` names the
/// namespace of the link's [`link_netnsid`](Link::link_netnsid) (see
/// [`Platform::netns_names`](crate::Platform::netns_names)), as `ip` prints it.
pub fn link_text_with(
    link: &Link,
    dev: IfName<'_>,
    parent_down: bool,
    link_netns: Option<&str>,
    details: bool,
) -> String {
    let mut head = format!("{}: {}", link.ifindex(), link.name());
    if let Some(parent) = link.parent()
        && parent != link.ifindex()
    {
        match link.link_netnsid() {
            _ if parent.0 == 0 => head.push_str("@NONE"),
            Some(_) => head.push_str(&format!("@if{parent}")),
            None => head.push_str(&format!("@{}", dev(parent.into()))),
        }
    }
    let mut flags = names::link_flags(link.flags());
    if parent_down {
        flags.push("M-DOWN".to_owned());
    }
    let mut words = vec![
        format!("{head}:"),
        format!("<{}>", flags.join(",")),
        format!("mtu {}", link.mtu()),
    ];
    if let Some(qdisc) = link.setting("qdisc") {
        words.push(format!("qdisc {qdisc}"));
    }
    if let Some(master) = link.controller() {
        words.push(format!("master {}", dev(master.into())));
    }
    words.push(format!("state {}", names::operstate(link.operstate())));
    words.push(format!("mode {}", names::link_mode(link.link_mode())));
    words.push(format!("group {}", names::group(link.group())));
    words.push(format!("qlen {}", link.txqlen()));
    words.push(format!("link/{}", names::link_type(link.link_type())));
    if let Some(address) = names::hw_address(link.address()) {
        words.push(address);
    }
    if let Some(brd) = names::hw_address(link.broadcast()) {
        // A point-to-point link's "broadcast" address is its peer's.
        let word = if link.flags() & IFF_POINTOPOINT != 0 {
            "peer"
        } else {
            "brd"
        };
        words.push(format!("{word} {brd}"));
    }
    if !link.perm_address().is_empty()
        && link.perm_address() != link.address()
        && let Some(perm) = names::hw_address(link.perm_address())
    {
        words.push(format!("permaddr {perm}"));
    }
    match (link.link_netnsid(), link_netns) {
        (Some(netnsid), _) if netnsid < 0 => words.push("link-netnsid unknown".to_owned()),
        (Some(_), Some(name)) => words.push(format!("link-netns {name}")),
        (Some(netnsid), None) => words.push(format!("link-netnsid {netnsid}")),
        (None, _) => {}
    }
    if link
        .setting("proto_down")
        .is_some_and(|down| *down != AttrValue::Uint(0))
    {
        words.push("protodown on".to_owned());
    }
    if let Some(AttrValue::List(reasons)) = link.setting("proto_down_reason")
        && !reasons.is_empty()
    {
        words.push(format!("protodown_reason <{}>", reasons.join(",")));
    }
    if details {
        detail_words(link, dev, &mut words);
    }
    if let Some(alias) = link.alias() {
        words.push(format!("alias {alias}"));
    }
    for alt in link.altnames() {
        words.push(format!("altname {alt}"));
    }
    words.join(" ")
}

const IFF_POINTOPOINT: u32 = 0x10;

/// The words `ip -d link` adds after the link-layer addresses: counts, MTU limits, the kind's
/// and the port role's data, the IPv6 address generation mode, queues and offload limits.
fn detail_words(link: &Link, dev: IfName<'_>, words: &mut Vec<String>) {
    let setting = |name: &str| link.setting(name).map(ToString::to_string);
    words.push(format!("promiscuity {}", link.promiscuity()));
    if let Some(allmulti) = setting("allmulti") {
        words.push(format!("allmulti {allmulti}"));
    }
    let (min_mtu, max_mtu) = link.mtu_range();
    words.push(format!("minmtu {min_mtu} maxmtu {max_mtu}"));
    if let Some(kind) = link.kind() {
        words.push(kind.to_owned());
        words.extend(kinds::kind_words(kind, link.kind_data(), dev));
    }
    if let Some(kind) = link.port_kind() {
        words.push(format!("{kind}_slave"));
        words.extend(kinds::port_words(kind, link.port_data(), dev));
    }
    for (name, word) in [
        ("inet6_addr_gen_mode", "addrgenmode"),
        ("num_tx_queues", "numtxqueues"),
        ("num_rx_queues", "numrxqueues"),
        ("gso_max_size", "gso_max_size"),
        ("gso_max_segs", "gso_max_segs"),
        ("tso_max_size", "tso_max_size"),
        ("tso_max_segs", "tso_max_segs"),
        ("gro_max_size", "gro_max_size"),
        ("gso_ipv4_max_size", "gso_ipv4_max_size"),
        ("gro_ipv4_max_size", "gro_ipv4_max_size"),
    ] {
        if let Some(value) = setting(name) {
            words.push(format!("{word} {value}"));
        }
    }
}

impl fmt::Display for Link {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&link_text(self, &default_name, false))
    }
}

/// Parses `payload` as each kind of object and runs every decoder and printer on what comes
/// out (encapsulations, metrics, kind data, the `ip` texts): the fuzz targets' and the
/// mutation tests' way to reach the lazily decoded attributes.
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) fn decode_all(payload: &[u8]) {
    let dev: IfName<'_> = &default_name;
    if let Ok(Some(route)) = Route::parse(payload) {
        let _ = route_lines(&route, dev, true);
        assert_eq!(route.has_metrics(), !route.metrics().is_empty());
        if let Some(encap) = route.encap() {
            let _ = encap.fields();
        }
        for hop in route.multipath() {
            if let Some(encap) = hop.encap() {
                let _ = encap_text(encap);
            }
        }
    }
    if let Ok(Some(rule)) = crate::Rule::parse(payload) {
        let _ = rule.to_string();
    }
    if let Ok(Some(link)) = Link::parse(payload) {
        let _ = link_text(&link, dev, true);
    }
    if let Ok(Some(addr)) = Address::parse(payload) {
        let _ = address_text(&addr);
    }
}
