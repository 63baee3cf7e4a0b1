//! The kernel subcommands' one-shot views: `link`, `addr`, `rule` and `route show`.
//!
//! Each opens a [`Platform`] in the namespace asked for, runs one query of
//! `netmirror-platform` (whose filters the kernel applies where it can) and renders the answer
//! as a [`Table`]. The columns and JSON keys are those of `ip -j` where `ip` has them.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::Arc;

use anyhow::Context;
use netmirror_platform::{
    self as platform, Address, AttrValue, Config, Link, Netns, Platform, Route, Rule, Visitor,
    names,
};
use serde_json::{Map, Value};

use crate::args::{self, Family, KernelArgs, RouteSelector};
use crate::failure::Failure;
use crate::render::{
    self, Cell, Field, LazyRow, Mode, Printer, RowStream, StreamMark, Table, TypedCell,
};

/// Columns of `link`.
pub(crate) const LINK_FIELDS: &[Field] = &[
    Field::common("INDEX", "ifindex"),
    Field::common("NAME", "ifname"),
    Field::common("STATE", "operstate"),
    Field::common("MTU", "mtu"),
    Field::common("TYPE", "link_type"),
    Field::common("KIND", "kind"),
    Field::common("ADDRESS", "address"),
    Field::common("FLAGS", "flags"),
    Field::extra("BROADCAST", "broadcast"),
    Field::extra("MASTER", "master"),
    Field::extra("LINK", "link"),
    Field::extra("TXQLEN", "txqlen"),
    Field::extra("GROUP", "group"),
    Field::extra("CARRIER", "carrier"),
    Field::extra("ALIAS", "ifalias"),
    Field::extra("LINK-INDEX", "link_index"),
    Field::extra("LINK-NETNSID", "link_netnsid"),
    Field::extra("ALTNAMES", "altnames"),
    Field::extra("LINKINFO", "linkinfo"),
    Field::extra("QDISC", "qdisc"),
    Field::extra("ALLMULTI", "allmulti"),
    Field::extra("NUM-TX-QUEUES", "num_tx_queues"),
    Field::extra("NUM-RX-QUEUES", "num_rx_queues"),
    Field::extra("GSO-MAX-SIZE", "gso_max_size"),
    Field::extra("GSO-MAX-SEGS", "gso_max_segs"),
    Field::extra("TSO-MAX-SIZE", "tso_max_size"),
    Field::extra("TSO-MAX-SEGS", "tso_max_segs"),
    Field::extra("GRO-MAX-SIZE", "gro_max_size"),
    Field::extra("GSO-IPV4-MAX-SIZE", "gso_ipv4_max_size"),
    Field::extra("GRO-IPV4-MAX-SIZE", "gro_ipv4_max_size"),
    Field::extra("PROTO-DOWN", "proto_down"),
    Field::extra("PROTO-DOWN-REASON", "proto_down_reason"),
    Field::extra("HEADROOM", "headroom"),
    Field::extra("TAILROOM", "tailroom"),
    Field::extra("NETNS-IMMUTABLE", "netns_immutable"),
    Field::extra("MAX-PACING-OFFLOAD-HORIZON", "max_pacing_offload_horizon"),
    Field::extra("ADDRGENMODE", "inet6_addr_gen_mode"),
    Field::extra("LINKMODE", "linkmode"),
    Field::extra("PROMISCUITY", "promiscuity"),
    Field::extra("MIN-MTU", "min_mtu"),
    Field::extra("MAX-MTU", "max_mtu"),
    Field::extra("PERMADDR", "permaddr"),
    Field::extra("UNKNOWN", "unknown_attributes"),
];

/// The keys of [`LINK_FIELDS`] filled from [`Link::setting`], in column order.
const LINK_SETTINGS: &[&str] = &[
    "qdisc",
    "allmulti",
    "num_tx_queues",
    "num_rx_queues",
    "gso_max_size",
    "gso_max_segs",
    "tso_max_size",
    "tso_max_segs",
    "gro_max_size",
    "gso_ipv4_max_size",
    "gro_ipv4_max_size",
    "proto_down",
    "proto_down_reason",
    "headroom",
    "tailroom",
    "netns_immutable",
    "max_pacing_offload_horizon",
    "inet6_addr_gen_mode",
];

/// Columns of `addr`.
pub(crate) const ADDR_FIELDS: &[Field] = &[
    Field::common("INDEX", "ifindex"),
    Field::common("DEV", "ifname"),
    Field::common("FAMILY", "family"),
    Field::common("ADDRESS", "local"),
    Field::common("PREFIXLEN", "prefixlen"),
    Field::common("SCOPE", "scope"),
    Field::common("LABEL", "label"),
    Field::extra("PEER", "address"),
    Field::extra("BROADCAST", "broadcast"),
    Field::extra("FLAGS", "flags"),
    Field::extra("VALID", "valid_life_time"),
    Field::extra("PREFERRED", "preferred_life_time"),
    Field::extra("METRIC", "metric"),
    Field::extra("PROTO", "protocol"),
    Field::extra("UNKNOWN", "unknown_attributes"),
];

/// Columns of `route`.
pub(crate) const ROUTE_FIELDS: &[Field] = &[
    Field::extra("FAMILY", "family"),
    Field::common("TYPE", "type"),
    Field::common("DST", "dst"),
    Field::common("GATEWAY", "gateway"),
    Field::common("DEV", "dev"),
    Field::common("TABLE", "table"),
    Field::common("PROTO", "protocol"),
    Field::common("SCOPE", "scope"),
    Field::common("METRIC", "metric"),
    Field::common("PREFSRC", "prefsrc"),
    Field::extra("SRC", "src"),
    Field::extra("TOS", "tos"),
    Field::extra("NEXTHOPS", "nexthops"),
    Field::extra("FLAGS", "flags"),
    Field::extra("NHID", "nhid"),
    Field::extra("ENCAP", "encap"),
    Field::extra("REALMS", "flow"),
    Field::extra("PREF", "pref"),
    Field::extra("EXPIRES", "expires"),
    Field::extra("MARK", "mark"),
    Field::extra("IIF", "iif"),
    Field::extra("TTL-PROPAGATE", "ttl_propagate"),
    Field::extra("METRICS", "metrics"),
    Field::extra("UNKNOWN", "unknown_attributes"),
];

/// Columns of `rule`: RULE is `ip rule`'s text after the priority (every selector, `not`
/// first); the selectors one by one are there for `--fields` and JSON.
pub(crate) const RULE_FIELDS: &[Field] = &[
    Field::common("PRIORITY", "priority"),
    Field::common("FAMILY", "family"),
    Field::common("RULE", "rule"),
    Field::extra("NOT", "not"),
    Field::extra("SRC", "src"),
    Field::extra("DST", "dst"),
    Field::extra("IIF", "iif"),
    Field::extra("OIF", "oif"),
    Field::extra("FWMARK", "fwmark"),
    Field::extra("FWMASK", "fwmask"),
    Field::extra("ACTION", "action"),
    Field::extra("TABLE", "table"),
    Field::extra("TOS", "tos"),
    Field::extra("PROTO", "protocol"),
    Field::extra("GOTO", "goto"),
    Field::extra("IIF-DETACHED", "iif_detached"),
    Field::extra("OIF-DETACHED", "oif_detached"),
    Field::extra("L3MDEV", "l3mdev"),
    Field::extra("UID-START", "uid_start"),
    Field::extra("UID-END", "uid_end"),
    Field::extra("IPPROTO", "ipproto"),
    Field::extra("SPORT", "sport"),
    Field::extra("DPORT", "dport"),
    Field::extra("TUN-ID", "tun_id"),
    Field::extra("SUPPRESS-PREFIXLEN", "suppress_prefixlen"),
    Field::extra("SUPPRESS-IFGROUP", "suppress_ifgroup"),
    Field::extra("REALMS", "realms"),
    Field::extra("DSCP", "dscp"),
    Field::extra("UNRESOLVED", "unresolved"),
    Field::extra("UNKNOWN", "unknown_attributes"),
];

/// The namespace of `--netns`: a path when it contains `/`, else a name under /run/netns.
pub(crate) fn netns(args: &KernelArgs) -> Option<Netns> {
    args.netns.as_ref().map(|netns| {
        if netns.contains('/') {
            Netns::path(netns)
        } else {
            Netns::name(netns)
        }
    })
}

/// Opens the platform in the namespace of `--netns`.
pub(crate) fn open(args: &KernelArgs) -> anyhow::Result<Platform> {
    let mut config = Config::new();
    if let Some(netns) = netns(args) {
        config = config.with_netns(netns);
    }
    Platform::open(config).map_err(|err| explain(err, "open a netlink socket"))
}

/// Turns a platform error into the CLI's message for it when it has one.
pub(crate) fn explain(err: platform::Error, doing: &str) -> anyhow::Error {
    match &err {
        platform::Error::Netns { netns, source }
            if source.kind() == std::io::ErrorKind::NotFound =>
        {
            Failure::NamespaceMissing {
                name: netns.clone(),
            }
            .into()
        }
        platform::Error::Netns { netns, source }
            if source.kind() == std::io::ErrorKind::PermissionDenied =>
        {
            Failure::NetnsPermissionDenied {
                netns: netns.clone(),
            }
            .into()
        }
        // Its message says it all: `/tmp/x is not a network namespace`.
        platform::Error::NotNetns { .. } => anyhow::Error::new(err),
        _ if crate::failure::is_permission_denied(&err) => Failure::PermissionDenied {
            what: doing.to_owned(),
            hint: crate::failure::KERNEL_HINT,
        }
        .into(),
        _ => anyhow::Error::new(err).context(format!("cannot {doing}")),
    }
}

/// The platform's family for `-4`/`-6`.
pub(crate) fn family(args: &KernelArgs) -> Option<platform::Family> {
    args.family().map(|family| match family {
        Family::V4 => platform::Family::V4,
        Family::V6 => platform::Family::V6,
    })
}

/// The name `ip` prints for a family.
pub(crate) fn family_name(family: platform::Family) -> &'static str {
    match family {
        platform::Family::V4 => "inet",
        platform::Family::V6 => "inet6",
    }
}

/// Interface names by index, to print `dev eth0` instead of an index (shared, so a row naming
/// a link costs no allocation). Kept sorted by index: a binary search is cheaper than hashing
/// for the few links a host has, and route show looks up two per route.
/// Altnames are kept beside, for [`LinkNames::index`] (`ip link show ALTNAME`), and the
/// links that are down, for the `M-DOWN` flag `ip` gives a link whose parent is down.
#[derive(Clone)]
pub(crate) struct LinkNames(Vec<(u32, Arc<str>)>, Vec<(u32, Arc<str>)>, Vec<u32>);

/// Every link, for commands that select by a link's properties and name links too.
pub(crate) fn load_links(platform: &Platform) -> anyhow::Result<Vec<Link>> {
    Ok(platform
        .links()
        .execute()
        .map_err(|err| explain(err, "dump links"))?
        .items)
}

/// The index of the VRF named `name`, refusing a link of another kind, as `ip ... vrf NAME`.
pub(crate) fn vrf_index(
    name: &str,
    names: &LinkNames,
    links: &[Link],
) -> anyhow::Result<platform::Ifindex> {
    let index = names.index(name)?;
    if !links
        .iter()
        .any(|link| link.ifindex() == index && link.kind() == Some("vrf"))
    {
        return Err(args::usage_error(format!("`{name}` is not a VRF")).into());
    }
    Ok(index)
}

impl LinkNames {
    /// Every link's name.
    pub(crate) fn load(platform: &Platform) -> anyhow::Result<LinkNames> {
        Ok(LinkNames::from_links(&load_links(platform)?))
    }

    /// Names of these links.
    pub(crate) fn from_links(links: &[Link]) -> LinkNames {
        let mut names = LinkNames(Vec::with_capacity(links.len()), Vec::new(), Vec::new());
        for link in links {
            names.insert(link.ifindex(), link.name());
            names.set_up(link.ifindex(), is_up(link));
            for alt in link.altnames() {
                names
                    .1
                    .push((link.ifindex().into(), Arc::from(alt.as_str())));
            }
        }
        names
    }

    /// The shared name of `ifindex`, if known.
    fn get(&self, ifindex: impl Into<u32>) -> Option<&Arc<str>> {
        let ifindex = ifindex.into();
        self.0
            .binary_search_by_key(&ifindex, |(index, _)| *index)
            .ok()
            .map(|at| &self.0[at].1)
    }

    /// The name of `ifindex`, or `if<N>` for a link that vanished.
    pub(crate) fn name(&self, ifindex: impl Into<u32>) -> String {
        let ifindex = ifindex.into();
        self.get(ifindex)
            .map_or_else(|| format!("if{ifindex}"), |name| name.to_string())
    }

    /// The name of `ifindex` as a cell (`if<N>` for a link that vanished).
    pub(crate) fn cell(&self, ifindex: impl Into<u32>) -> Cell {
        let ifindex = ifindex.into();
        self.get(ifindex).map_or_else(
            || format!("if{ifindex}").into(),
            |name| Cell::Shared(name.clone()),
        )
    }

    /// The index of the link named `name`; not finding it is an error, as in `ip`.
    pub(crate) fn index(&self, name: &str) -> anyhow::Result<platform::Ifindex> {
        self.0
            .iter()
            .chain(&self.1)
            .find(|(_, link_name)| &**link_name == name)
            .map(|(ifindex, _)| platform::Ifindex(*ifindex))
            .with_context(|| format!("cannot find device \"{name}\""))
    }

    /// Inserts or renames a link (monitors keep the map current).
    pub(crate) fn insert(&mut self, ifindex: impl Into<u32>, name: &str) {
        let ifindex = ifindex.into();
        match self.0.binary_search_by_key(&ifindex, |(index, _)| *index) {
            Ok(at) if &*self.0[at].1 == name => {}
            Ok(at) => self.0[at].1 = Arc::from(name),
            Err(at) => self.0.insert(at, (ifindex, Arc::from(name))),
        }
    }

    /// Records whether a link is up (`IFF_UP`; monitors keep it current).
    pub(crate) fn set_up(&mut self, ifindex: impl Into<u32>, up: bool) {
        let ifindex = ifindex.into();
        match (self.2.binary_search(&ifindex), up) {
            (Ok(at), true) => drop(self.2.remove(at)),
            (Err(at), false) => self.2.insert(at, ifindex),
            _ => {}
        }
    }

    /// Whether the link `ifindex` is down or unknown: `ip` then prints `M-DOWN` among the
    /// flags of a link whose parent (`IFLA_LINK`, in this namespace) it is.
    fn is_down(&self, ifindex: impl Into<u32>) -> bool {
        let ifindex = ifindex.into();
        self.get(ifindex).is_none() || self.2.binary_search(&ifindex).is_ok()
    }

    /// Forgets a link that is gone (monitors prune the map, so it never outgrows the links).
    pub(crate) fn remove(&mut self, ifindex: impl Into<u32>) {
        let ifindex = ifindex.into();
        if let Ok(at) = self.0.binary_search_by_key(&ifindex, |(index, _)| *index) {
            self.0.remove(at);
        }
        self.1.retain(|(index, _)| *index != ifindex);
        self.2.retain(|index| *index != ifindex);
    }

    /// The number of links known.
    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }
}

/// Whether a link is administratively up (`IFF_UP`).
pub(crate) fn is_up(link: &Link) -> bool {
    link.flags() & IFF_UP != 0
}

/// `IFF_UP`.
const IFF_UP: u32 = 1;

/// Whether `ip` gives the link `M-DOWN`: its parent in this namespace is down (a veth whose
/// peer is).
fn is_m_down(link: &Link, names: &LinkNames) -> bool {
    matches!(
        (link.parent(), link.link_netnsid()),
        (Some(parent), None) if u32::from(parent) != 0 && names.is_down(parent)
    )
}

/// A link's `-d` line (`link -d`, `monitor -d`), with the `M-DOWN` flag that `ip` adds when
/// [`is_m_down`], and its parent's namespace named from `netns` (see [`netns_names`]).
pub(crate) fn link_detail_text(
    link: &Link,
    names: &LinkNames,
    netns: &BTreeMap<i32, String>,
) -> String {
    let name = |ifindex: u32| names.name(ifindex);
    let link_netns = link
        .link_netnsid()
        .and_then(|id| netns.get(&id))
        .map(String::as_str);
    platform::text::link_text_with(link, &name, is_m_down(link, names), link_netns, true)
}

/// The names of the namespaces (`ip netns`) that these links' parents are in, by id, as `ip`
/// names them (`link-netns NAME`): asked of the kernel only when a link has its parent in
/// another namespace. Names that cannot be found are left out, with a warning: the link
/// then shows its `link-netnsid`, as `ip` shows an id it has no name for.
pub(crate) fn netns_names<'a>(
    platform: &Platform,
    mut links: impl Iterator<Item = &'a Link>,
) -> BTreeMap<i32, String> {
    if !links.any(|link| link.link_netnsid().is_some()) {
        return BTreeMap::new();
    }
    read_netns_names(platform)
}

/// [`Platform::netns_names`], or none with a warning when they cannot be read.
pub(crate) fn read_netns_names(platform: &Platform) -> BTreeMap<i32, String> {
    platform.netns_names().unwrap_or_else(|err| {
        tracing::warn!(error = %err, "cannot name the namespaces of links' parents");
        BTreeMap::new()
    })
}

/// A link's row.
pub(crate) fn link_row(link: &Link, names: &LinkNames) -> Vec<Cell> {
    let mut flags = names::link_flags(link.flags());
    // As `ip` does: a link whose parent in this namespace is down (a veth whose peer is).
    if is_m_down(link, names) {
        flags.push("M-DOWN".to_owned());
    }
    let mut row = vec![
        link.ifindex().into(),
        link.name().to_owned().into(),
        names::operstate(link.operstate()).into(),
        link.mtu().into(),
        names::link_type(link.link_type()).into(),
        Cell::opt_text(link.kind()),
        Cell::opt_text(names::hw_address(link.address())),
        Cell::List(flags),
        Cell::opt_text(names::hw_address(link.broadcast())),
        Cell::opt_text(link.controller().map(|ifindex| names.name(ifindex))),
        // A parent in another namespace (IFLA_LINK_NETNSID) is only an index there: never
        // named after a local link that happens to have the same index.
        match (link.parent(), link.link_netnsid()) {
            // `IFLA_LINK` 0: no parent (a veth's first end announced before its peer, a
            // tunnel on no device); ip prints `@NONE`, and `null` in JSON.
            (Some(platform::Ifindex(0)), _) => Cell::from(TypedCell {
                text: "NONE".to_owned(),
                json: Value::Null,
            }),
            (Some(parent), Some(_)) => Cell::from(TypedCell {
                text: format!("if{parent}"),
                json: Value::Null,
            }),
            (Some(parent), None) => names.name(parent).into(),
            (None, _) => Cell::Null,
        },
        link.txqlen().into(),
        names::group(link.group()).into(),
        link.carrier().map_or(Cell::Null, Cell::Bool),
        Cell::opt_text(link.alias()),
        Cell::opt_int(
            link.parent()
                .filter(|parent| parent.0 != 0 && link.link_netnsid().is_some())
                .map(u32::from),
        ),
        Cell::opt_int(link.link_netnsid()),
        Cell::List(link.altnames().to_vec()),
        linkinfo_cell(link),
    ];
    for key in LINK_SETTINGS {
        row.push(link.setting(key).map_or(Cell::Null, |value| match value {
            AttrValue::Uint(number) => Cell::Int(i64::try_from(*number).unwrap_or(i64::MAX)),
            AttrValue::List(items) => Cell::List(items.clone()),
            other => Cell::Text(other.to_string().into()),
        }));
    }
    let (min_mtu, max_mtu) = link.mtu_range();
    row.extend([
        names::link_mode(link.link_mode()).into(),
        link.promiscuity().into(),
        min_mtu.into(),
        max_mtu.into(),
        Cell::opt_text(names::hw_address(link.perm_address())),
    ]);
    row.push(unknown_cell(link.unknown_attributes()));
    row
}

/// `linkinfo` as `ip -j -d` shapes it: `info_kind`, `info_data`, `info_slave_kind`,
/// `info_slave_data`.
fn linkinfo_cell(link: &Link) -> Cell {
    if link.kind().is_none() && link.port_kind().is_none() {
        return Cell::Null;
    }
    let data = |attrs: &[platform::KindAttr]| {
        attrs
            .iter()
            .map(|(name, value)| (name.to_string(), attr_json(value)))
            .collect::<Map<String, Value>>()
    };
    let mut object = Map::new();
    let mut text = Vec::new();
    if let Some(kind) = link.kind() {
        object.insert("info_kind".to_owned(), kind.into());
        text.push(kind.to_owned());
        if !link.kind_data().is_empty() {
            object.insert("info_data".to_owned(), data(link.kind_data()).into());
        }
    }
    if let Some(kind) = link.port_kind() {
        object.insert("info_slave_kind".to_owned(), kind.into());
        text.push(kind.to_owned());
        if !link.port_data().is_empty() {
            object.insert("info_slave_data".to_owned(), data(link.port_data()).into());
        }
    }
    Cell::from(TypedCell {
        text: text.join(","),
        json: Value::Object(object),
    })
}

/// A decoded attribute value in JSON: numbers as numbers, lists as arrays, a flag as `true`,
/// raw bytes as hex.
fn attr_json(value: &AttrValue) -> Value {
    match value {
        AttrValue::Uint(number) => (*number).into(),
        AttrValue::Text(text) => text.clone().into(),
        AttrValue::List(items) => items.clone().into(),
        AttrValue::Flag => true.into(),
        AttrValue::Raw(bytes) => names::hex(bytes).into(),
        // A kind of value this CLI does not know yet: as the library prints it.
        other => other.to_string().into(),
    }
}

/// Attributes the library keeps undecoded: `[{"type": N, "data": "HEX"}]`.
pub(crate) fn unknown_cell(attrs: &[(u16, Box<[u8]>)]) -> Cell {
    if attrs.is_empty() {
        return Cell::List(Vec::new());
    }
    let json = attrs
        .iter()
        .map(|(kind, data)| serde_json::json!({"type": kind, "data": names::hex(data)}))
        .collect();
    let text = attrs
        .iter()
        .map(|(kind, data)| format!("attr{kind}={}", names::hex(data)))
        .collect::<Vec<_>>()
        .join(",");
    Cell::from(TypedCell {
        text,
        json: Value::Array(json),
    })
}

/// An address's row.
pub(crate) fn addr_row(addr: &Address, names: &LinkNames) -> Vec<Cell> {
    let (valid, preferred) = addr.lifetimes();
    vec![
        addr.ifindex().into(),
        names.name(addr.ifindex()).into(),
        family_name(addr.family()).into(),
        addr.local().to_string().into(),
        addr.prefix_len().into(),
        addr.scope().to_string().into(),
        Cell::opt_text(addr.label()),
        Cell::opt_text(addr.peer()),
        Cell::opt_text(addr.broadcast()),
        Cell::List(addr.flag_names()),
        valid.into(),
        preferred.into(),
        Cell::opt_int(addr.rt_priority()),
        Cell::opt_text(addr.proto().map(names::protocol)),
        unknown_cell(addr.unknown_attributes()),
    ]
}

/// A route's row.
pub(crate) fn route_row(route: &Route, names: &LinkNames) -> Vec<Cell> {
    let mut memo = NameMemo::default();
    (0..ROUTE_FIELDS.len())
        .map(|idx| route_cell(route, names, &mut memo, idx))
        .collect()
}

/// The names of the last table, protocol, type, scope and device a route had: the next route
/// most likely has the same, and a hit costs no search of `rt_tables` or `rt_protos`, and no
/// escaping of the name again.
#[derive(Default)]
pub(crate) struct NameMemo {
    table: Recent<u32, Named>,
    protocol: Recent<u8, Named>,
    kind: Recent<u8, Named>,
    scope: Recent<u8, Named>,
    dev: Recent<u32, Named>,
    /// The gateways and preferred sources, as text (many routes share them).
    gateway: Recent<IpAddr, String>,
    prefsrc: Recent<IpAddr, String>,
    /// What the last text for people written of each field [`Shown`] knows showed (see
    /// [`LazyRow::same_tail`]), and which of them were written (bit `1 << idx`).
    shown: Shown,
    shown_fields: u32,
    /// The same for the last JSON written of each field.
    json_fields: u32,
}

impl NameMemo {
    /// Forgets the device name held: the link names it was taken from changed (a monitor's
    /// names follow the links, and a renamed link keeps its index).
    pub(crate) fn forget_devices(&mut self) {
        self.dev.clear();
        self.shown_fields = 0;
        self.json_fields = 0;
    }
}

/// What the fields of a route whose text and JSON follow from one number or address show:
/// equal values, equal texts. Its family, type, gateway and device (unless they are a
/// multipath route's lists), table, protocol, scope, metric, preferred source and TOS
/// ([`Shown::of_common`]); with the rare parts ([`Shown::of`], and as [`RouteRow::remember`]
/// sets them field by field), its flags and preference, and which of the fields most routes
/// lack it lacks (their text then shows nothing).
#[derive(Clone, Copy, PartialEq, Default)]
struct Shown {
    v6: bool,
    kind: u8,
    gateway: Option<Option<IpAddr>>,
    dev: Option<Option<u32>>,
    table: u32,
    protocol: u8,
    scope: u8,
    metric: u32,
    prefsrc: Option<IpAddr>,
    tos: u8,
    flags: u32,
    pref: Option<u8>,
    /// The fields of [`RARE_FIELDS`] the route lacks (bit `1 << idx`).
    lacks: u32,
}

/// The fields that most routes lack, compared in [`Shown`] only as lacking.
const RARE_FIELDS: [usize; 11] = {
    use route_field as f;
    [
        f::SRC,
        f::NEXTHOPS,
        f::NHID,
        f::ENCAP,
        f::REALMS,
        f::EXPIRES,
        f::MARK,
        f::IIF,
        f::TTL_PROPAGATE,
        f::METRICS,
        f::UNKNOWN,
    ]
};

/// The fields (bit `1 << idx`) whose comparison in [`Shown`] needs its rare parts: its flags,
/// preference and [`RARE_FIELDS`].
const SHOWS_RARE: u32 = {
    use route_field as f;
    let mut bits = 1 << f::FLAGS | 1 << f::PREF;
    let mut at = 0;
    while at < RARE_FIELDS.len() {
        bits |= 1 << RARE_FIELDS[at];
        at += 1;
    }
    bits
};

/// Whether `route` lacks field `idx` of [`MAY_LACK`]: its text for people then leaves the
/// field out and its JSON is `null` or `[]` (false for a field every route has). A gateway or
/// a device is lacking only on a route that is not multipath (a multipath route shows its
/// hops' there).
fn lacks(route: &Route, idx: usize) -> bool {
    use route_field as f;
    match idx {
        f::GATEWAY => route.multipath().is_empty() && route.gateway().is_none(),
        f::DEV => route.multipath().is_empty() && route.oif().is_none(),
        f::PREFSRC => route.prefsrc().is_none(),
        f::PREF => route.pref().is_none(),
        f::FLAGS => route.flags() == 0,
        f::SRC => route.src().is_none(),
        f::NEXTHOPS => route.multipath().is_empty(),
        f::NHID => route.nh_id().is_none(),
        f::ENCAP => route.encap().is_none(),
        f::REALMS => route.realms().is_none(),
        f::EXPIRES => route.expires().is_none(),
        f::MARK => route.mark().is_none(),
        f::IIF => route.iif().is_none(),
        f::TTL_PROPAGATE => route.ttl_propagate().is_none(),
        f::METRICS => !route.has_metrics(),
        f::UNKNOWN => route.unknown_attributes().is_empty(),
        _ => false,
    }
}

/// The fields a route may lack ([`lacks`]), each with its JSON then.
const MAY_LACK: [(usize, &str); 16] = {
    use route_field as f;
    [
        (f::GATEWAY, "null"),
        (f::DEV, "null"),
        (f::PREFSRC, "null"),
        (f::SRC, "null"),
        (f::NEXTHOPS, "[]"),
        (f::FLAGS, "[]"),
        (f::NHID, "null"),
        (f::ENCAP, "null"),
        (f::REALMS, "null"),
        (f::PREF, "null"),
        (f::EXPIRES, "null"),
        (f::MARK, "null"),
        (f::IIF, "null"),
        (f::TTL_PROPAGATE, "null"),
        (f::METRICS, "[]"),
        (f::UNKNOWN, "[]"),
    ]
};

impl Shown {
    fn of_common(route: &Route) -> Shown {
        let multipath = !route.multipath().is_empty();
        let gateway = route.gateway();
        Shown {
            v6: route.family() == platform::Family::V6,
            kind: route.kind().0,
            // `None`: a list of the hops' (not compared).
            gateway: (gateway.is_some() || !multipath).then_some(gateway),
            dev: (route.oif().is_some() || !multipath).then(|| route.oif().map(u32::from)),
            table: route.table().0,
            protocol: route.protocol().0,
            scope: route.scope().0,
            metric: route.priority(),
            prefsrc: route.prefsrc(),
            tos: route.tos(),
            flags: 0,
            pref: None,
            lacks: 0,
        }
    }

    /// The fields of `route`, its flags and preference; which rare fields it lacks too when
    /// `rare` (else none: no rare field then compares as the same, [`Shown::same`]).
    fn of(route: &Route, rare: bool) -> Shown {
        let mut shown = Shown::of_common(route);
        shown.flags = route.flags();
        shown.pref = route.pref();
        if rare {
            for idx in RARE_FIELDS {
                if lacks(route, idx) {
                    shown.lacks |= 1 << idx;
                }
            }
        }
        shown
    }

    /// Whether field `idx` shows the same in both (false for a field not compared).
    #[inline]
    fn same(&self, other: &Shown, idx: usize) -> bool {
        use route_field as f;
        match idx {
            f::FAMILY => self.v6 == other.v6,
            f::TYPE => self.kind == other.kind,
            f::GATEWAY => self.gateway.is_some() && self.gateway == other.gateway,
            f::DEV => self.dev.is_some() && self.dev == other.dev,
            f::TABLE => self.table == other.table,
            f::PROTOCOL => self.protocol == other.protocol,
            f::SCOPE => self.scope == other.scope,
            f::METRIC => self.metric == other.metric,
            f::PREFSRC => self.prefsrc == other.prefsrc,
            f::TOS => self.tos == other.tos,
            f::FLAGS => self.flags == other.flags,
            f::PREF => self.pref == other.pref,
            idx if idx < 32 => self.lacks & other.lacks & (1 << idx) != 0,
            _ => false,
        }
    }

    /// Sets field `idx` to `route`'s; false when it is not compared (a field not known,
    /// or a multipath route's list).
    fn set(&mut self, route: &Route, idx: usize) -> bool {
        use route_field as f;
        match idx {
            f::FAMILY => self.v6 = route.family() == platform::Family::V6,
            f::TYPE => self.kind = route.kind().0,
            f::GATEWAY => {
                let gateway = route.gateway();
                self.gateway =
                    (gateway.is_some() || route.multipath().is_empty()).then_some(gateway);
                return self.gateway.is_some();
            }
            f::DEV => {
                let oif = route.oif().map(u32::from);
                self.dev = (oif.is_some() || route.multipath().is_empty()).then_some(oif);
                return self.dev.is_some();
            }
            f::TABLE => self.table = route.table().0,
            f::PROTOCOL => self.protocol = route.protocol().0,
            f::SCOPE => self.scope = route.scope().0,
            f::METRIC => self.metric = route.priority(),
            f::PREFSRC => self.prefsrc = route.prefsrc(),
            f::TOS => self.tos = route.tos(),
            f::FLAGS => self.flags = route.flags(),
            f::PREF => self.pref = route.pref(),
            idx if idx < 32 && RARE_FIELDS.contains(&idx) => {
                let lacking = lacks(route, idx);
                if lacking {
                    self.lacks |= 1 << idx;
                } else {
                    self.lacks &= !(1 << idx);
                }
                return lacking;
            }
            _ => return false,
        }
        true
    }
}

/// How many keys a [`Recent`] memo holds the value of.
const RECENT: usize = 8;

/// The values made for the last [`RECENT`] different keys. A table's routes go through a few
/// gateways and devices, often in turn (a BGP table's prefixes through the router's peers),
/// and come in a few tables, protocols, types and scopes: each value is made once, not again
/// for every route whose key differs from the route before it. Held in place, not behind a
/// pointer: the route before's key is one comparison away.
struct Recent<K, V> {
    keys: [Option<K>; RECENT],
    values: [V; RECENT],
    /// The entry found or made last: the next route's, mostly.
    last: usize,
    /// The entry a new key takes (the oldest made, once every entry is in use).
    next: usize,
}

impl<K, V: Default> Default for Recent<K, V> {
    fn default() -> Self {
        Recent {
            keys: [const { None }; RECENT],
            values: std::array::from_fn(|_| V::default()),
            last: 0,
            next: 0,
        }
    }
}

impl<K: Copy + PartialEq, V> Recent<K, V> {
    /// The value of `key`: the one held, or else the one `fill` writes into the entry it takes
    /// (a new one, or the oldest, whose memory `fill` can reuse). Every index is below
    /// [`RECENT`], the arrays' length (`% RECENT`, or a position found in them).
    #[inline]
    fn get(&mut self, key: K, fill: impl FnOnce(K, &mut V)) -> &V {
        // Mostly the key of the route before.
        let last = self.last % RECENT;
        if self.keys[last] == Some(key) {
            return &self.values[last];
        }
        self.get_other(key, fill)
    }

    /// [`get`](Self::get) for a key other than the last one.
    #[inline(never)]
    fn get_other(&mut self, key: K, fill: impl FnOnce(K, &mut V)) -> &V {
        let at = match self.keys.iter().position(|held| *held == Some(key)) {
            Some(at) => at,
            None => {
                let at = self.next % RECENT;
                self.next = (at + 1) % RECENT;
                self.keys[at] = Some(key);
                fill(key, &mut self.values[at]);
                at
            }
        };
        self.last = at;
        &self.values[at]
    }

    /// Forgets every value.
    fn clear(&mut self) {
        self.keys = [const { None }; RECENT];
        self.last = 0;
        self.next = 0;
    }
}

/// Writes `addr`'s text (see [`address`]) into `text`, in place of what it held: how
/// [`Recent`] keeps a gateway or preferred source.
fn address_text(addr: IpAddr, text: &mut String) {
    text.clear();
    push_address(text, addr);
}

/// A name's cell, with the text and the JSON written for it.
struct Named {
    cell: Cell,
    text: String,
    json: String,
}

impl Default for Named {
    fn default() -> Self {
        Named {
            cell: Cell::Null,
            text: String::new(),
            json: String::new(),
        }
    }
}

/// The [`Named`] of `id`, from `memo` when it holds `id` (put there when it does not).
fn memo_named<T: Copy + PartialEq>(
    memo: &mut Recent<T, Named>,
    id: T,
    cell: impl FnOnce(T) -> Cell,
) -> &Named {
    memo.get(id, |id, named| {
        named.cell = cell(id);
        named.text.clear();
        named.cell.push_text(&mut named.text);
        named.json.clear();
        render::push_json_cell(&mut named.json, &named.cell);
    })
}

/// The index of each of [`ROUTE_FIELDS`], for [`route_cell`] and [`RouteRow`].
mod route_field {
    pub(super) const FAMILY: usize = 0;
    pub(super) const TYPE: usize = 1;
    pub(super) const DST: usize = 2;
    pub(super) const GATEWAY: usize = 3;
    pub(super) const DEV: usize = 4;
    pub(super) const TABLE: usize = 5;
    pub(super) const PROTOCOL: usize = 6;
    pub(super) const SCOPE: usize = 7;
    pub(super) const METRIC: usize = 8;
    pub(super) const PREFSRC: usize = 9;
    pub(super) const SRC: usize = 10;
    pub(super) const TOS: usize = 11;
    pub(super) const NEXTHOPS: usize = 12;
    pub(super) const FLAGS: usize = 13;
    pub(super) const NHID: usize = 14;
    pub(super) const ENCAP: usize = 15;
    pub(super) const REALMS: usize = 16;
    pub(super) const PREF: usize = 17;
    pub(super) const EXPIRES: usize = 18;
    pub(super) const MARK: usize = 19;
    pub(super) const IIF: usize = 20;
    pub(super) const TTL_PROPAGATE: usize = 21;
    pub(super) const METRICS: usize = 22;
    pub(super) const UNKNOWN: usize = 23;
}

/// A route's cell for field `idx` of [`ROUTE_FIELDS`].
pub(crate) fn route_cell(
    route: &Route,
    names: &LinkNames,
    memo: &mut NameMemo,
    idx: usize,
) -> Cell {
    use route_field as f;
    let hops = route.multipath();
    match idx {
        f::FAMILY => family_name(route.family()).into(),
        f::TYPE => memo_named(&mut memo.kind, route.kind().0, |id| {
            names::route_type(id).into()
        })
        .cell
        .clone(),
        f::DST => Cell::Prefix(route.dst(), route.dst_len()),
        // A multipath route: its hops' gateways and devices for people (the NEXTHOPS column
        // and `-d` have each hop whole); JSON has them under `nexthops` only, as ip does.
        f::GATEWAY if route.gateway().is_none() && !hops.is_empty() => {
            let gateways: Vec<String> = hops
                .iter()
                .map(|hop| hop.gateway.map_or_else(|| "-".to_owned(), address))
                .collect();
            Cell::from(TypedCell {
                text: gateways.join(","),
                json: Value::Null,
            })
        }
        f::GATEWAY => route.gateway().map_or(Cell::Null, address_cell),
        f::DEV => match route.oif() {
            Some(ifindex) => memo_named(&mut memo.dev, ifindex.into(), |id| names.cell(id))
                .cell
                .clone(),
            None if !hops.is_empty() => {
                let devs: Vec<String> = hops.iter().map(|hop| names.name(hop.ifindex)).collect();
                Cell::from(TypedCell {
                    text: devs.join(","),
                    json: Value::Null,
                })
            }
            None => Cell::Null,
        },
        f::TABLE => memo_named(&mut memo.table, route.table().0, |id| {
            names::table_name(id).into()
        })
        .cell
        .clone(),
        f::PROTOCOL => memo_named(&mut memo.protocol, route.protocol().0, |id| {
            names::protocol(id).into()
        })
        .cell
        .clone(),
        f::SCOPE => memo_named(&mut memo.scope, route.scope().0, |id| {
            names::scope(id).into()
        })
        .cell
        .clone(),
        f::METRIC => route.priority().into(),
        f::PREFSRC => route.prefsrc().map_or(Cell::Null, address_cell),
        f::SRC => Cell::opt_text(route.src().map(|(addr, len)| format!("{addr}/{len}"))),
        f::TOS => route.tos().into(),
        f::NEXTHOPS => nexthops_cell(route, names),
        f::FLAGS => Cell::List(names::route_flags(route.flags())),
        f::NHID => Cell::opt_int(route.nh_id()),
        f::ENCAP => route.encap().map_or(Cell::Null, encap_cell),
        f::REALMS => route.realms().map_or(Cell::Null, flow_cell),
        f::PREF => route
            .pref()
            .map_or(Cell::Null, |pref| names::pref(pref).into()),
        f::EXPIRES => Cell::opt_int(route.expires()),
        f::MARK => Cell::opt_text(route.mark().map(|mark| format!("{mark:#x}"))),
        f::IIF => Cell::opt_text(route.iif().map(|iif| names.name(iif))),
        f::TTL_PROPAGATE => Cell::opt_text(
            route
                .ttl_propagate()
                .map(|ttl| if ttl == 0 { "disabled" } else { "enabled" }),
        ),
        f::METRICS => metrics_cell(route),
        f::UNKNOWN => unknown_cell(route.unknown_attributes()),
        _ => Cell::Null,
    }
}

/// A route as a [`LazyRow`] of [`ROUTE_FIELDS`]: the cells `route show` prints for most
/// routes (addresses, names, numbers) are written straight into the output, the others made
/// by [`route_cell`] when they are printed.
pub(crate) struct RouteRow<'a> {
    pub(crate) route: &'a Route,
    pub(crate) names: &'a LinkNames,
    pub(crate) memo: &'a mut NameMemo,
}

impl RouteRow<'_> {
    /// The memo's name of a name field (type, table, protocol, scope, a device), if `idx`
    /// is one and the route has it.
    fn named(&mut self, idx: usize) -> Option<&Named> {
        use route_field as f;
        let route = self.route;
        let names = self.names;
        let memo = &mut *self.memo;
        Some(match idx {
            f::TYPE => memo_named(&mut memo.kind, route.kind().0, |id| {
                names::route_type(id).into()
            }),
            f::TABLE => memo_named(&mut memo.table, route.table().0, |id| {
                names::table_name(id).into()
            }),
            f::PROTOCOL => memo_named(&mut memo.protocol, route.protocol().0, |id| {
                names::protocol(id).into()
            }),
            f::SCOPE => memo_named(&mut memo.scope, route.scope().0, |id| {
                names::scope(id).into()
            }),
            f::DEV => memo_named(&mut memo.dev, route.oif()?.into(), |id| names.cell(id)),
            _ => return None,
        })
    }

    /// Appends field `idx`'s text for people: [`LazyRow::push_text`], or when `if_shown`,
    /// [`LazyRow::push_shown_text`] (nothing for a field whose cell is null or an empty list,
    /// and false).
    fn write_text(&mut self, idx: usize, out: &mut String, if_shown: bool) -> bool {
        use route_field as f;
        match idx {
            f::FAMILY => out.push_str(family_name(self.route.family())),
            f::DST => names::push_route_prefix(out, self.route.dst(), self.route.dst_len()),
            f::METRIC => render::push_int(out, self.route.priority().into()),
            f::TOS => render::push_int(out, self.route.tos().into()),
            _ => {
                if let Some(addr) = self.plain_address(idx) {
                    match addr {
                        Some(addr) => out.push_str(addr),
                        None if if_shown => return false,
                        None => out.push_str("--"),
                    }
                } else if let Some(named) = self.named(idx) {
                    if if_shown && !render::shown(&named.cell) {
                        return false;
                    }
                    out.push_str(&named.text);
                } else {
                    // A field the route lacks is not shown: its cell need not be made.
                    if if_shown && lacks(self.route, idx) {
                        return false;
                    }
                    return self.with_cell(idx, |cell| {
                        let shown = !if_shown || render::shown(cell);
                        if shown {
                            cell.push_text(out);
                        }
                        shown
                    });
                }
            }
        }
        true
    }

    /// The text of the address of a gateway or preferred source field of a route that is
    /// not multipath (`Some(None)`: it has none), if `idx` is one of those.
    #[inline(always)]
    fn plain_address(&mut self, idx: usize) -> Option<Option<&str>> {
        use route_field as f;
        let route = self.route;
        match idx {
            f::GATEWAY => match route.gateway() {
                None if !route.multipath().is_empty() => None,
                gateway => {
                    Some(gateway.map(|addr| self.memo.gateway.get(addr, address_text).as_str()))
                }
            },
            f::PREFSRC => Some(
                route
                    .prefsrc()
                    .map(|addr| self.memo.prefsrc.get(addr, address_text).as_str()),
            ),
            _ => None,
        }
    }

    /// How many of `fields`, counted from the end, show what the row before showed (in the
    /// text table, or in JSON when `json`): [`LazyRow::same_tail`] and `same_json_tail`.
    fn unchanged_tail(&self, fields: &[usize], json: bool) -> usize {
        use route_field as f;
        // Which rare fields the route lacks is known when the last field is one (JSON has them
        // all): a rare field before it is then compared too, else it ends the tail (the memo
        // lacks what it holds as written of it, the route here nothing).
        let rare = json
            || fields
                .last()
                .is_some_and(|&idx| idx < 32 && SHOWS_RARE & (1 << idx) != 0);
        let mut now = Shown::of(self.route, rare);
        let memo = &*self.memo;
        let shown_fields = if json {
            memo.json_fields
        } else {
            memo.shown_fields
        };
        // Only the fields the memo holds as written are compared: the rare parts of the others
        // are taken as it holds them, so that one comparison still tells that every field
        // compared is the same (a monitor's line shows one rare field).
        now.lacks &= shown_fields;
        if shown_fields & 1 << f::FLAGS == 0 {
            now.flags = memo.shown.flags;
        }
        if shown_fields & 1 << f::PREF == 0 {
            now.pref = memo.shown.pref;
        }
        // Mostly every field is as before: one comparison.
        let all = now == memo.shown;
        fields
            .iter()
            .rev()
            .take_while(|&&idx| {
                idx < 32 && shown_fields & (1 << idx) != 0 && (all || now.same(&memo.shown, idx))
            })
            .count()
    }
}

impl LazyRow for RouteRow<'_> {
    fn with_cell<R>(&mut self, idx: usize, then: impl FnOnce(&Cell) -> R) -> R {
        then(&route_cell(self.route, self.names, self.memo, idx))
    }

    fn push_text(&mut self, idx: usize, out: &mut String) {
        self.remember(idx, false);
        self.write_text(idx, out, false);
    }

    fn push_shown_text(&mut self, idx: usize, out: &mut String) -> bool {
        // Remembered as for a table: an event line copies what its line before showed too.
        self.remember(idx, false);
        self.write_text(idx, out, true)
    }

    fn same_tail(&mut self, fields: &[usize]) -> usize {
        self.unchanged_tail(fields, false)
    }

    fn same_json_tail(&mut self, fields: &[usize]) -> usize {
        self.unchanged_tail(fields, true)
    }

    fn push_json(&mut self, idx: usize, out: &mut String) {
        self.push_json_as(idx, out, render::push_json_cell);
    }

    fn push_json_compact(&mut self, idx: usize, out: &mut String) {
        self.push_json_as(idx, out, render::push_json_cell_compact);
    }

    fn json_shape(&mut self) -> Option<u64> {
        // The family, and the fields the route lacks (bit `1 << idx`).
        let mut shape = u64::from(self.route.family() == platform::Family::V6) << 63;
        for (idx, _) in MAY_LACK {
            if lacks(self.route, idx) {
                shape |= 1 << idx;
            }
        }
        Some(shape)
    }

    fn json_fixed(&mut self, idx: usize) -> Option<&'static str> {
        if idx == route_field::FAMILY {
            return Some(match self.route.family() {
                platform::Family::V6 => "\"inet6\"",
                _ => "\"inet\"",
            });
        }
        let &(_, json) = MAY_LACK.iter().find(|(field, _)| *field == idx)?;
        lacks(self.route, idx).then_some(json)
    }
}

impl RouteRow<'_> {
    /// Notes in the memo that field `idx` of this route was last written for people, or in
    /// JSON when `json` (see [`LazyRow::same_tail`] and `same_json_tail`): its bit is set in
    /// that side's fields when [`Shown`] compares the field (the values of the fields compared
    /// make the same text, or the same JSON), and cleared in the other side's.
    fn remember(&mut self, idx: usize, json: bool) {
        if idx >= 32 {
            return;
        }
        let memo = &mut *self.memo;
        let compared = memo.shown.set(self.route, idx);
        let (written, other) = if json {
            (&mut memo.json_fields, &mut memo.shown_fields)
        } else {
            (&mut memo.shown_fields, &mut memo.json_fields)
        };
        *other &= !(1 << idx);
        if compared {
            *written |= 1 << idx;
        } else {
            *written &= !(1 << idx);
        }
    }
}

impl RouteRow<'_> {
    /// Appends field `idx`'s JSON value: what every route's field has (addresses, names,
    /// numbers, what is missing) written here, the others' cells by `cell_json` (which
    /// writes `null`, numbers, strings and `[]` as this does, nested values its own way).
    fn push_json_as(&mut self, idx: usize, out: &mut String, cell_json: fn(&mut String, &Cell)) {
        use route_field as f;
        self.remember(idx, true);
        match idx {
            f::FAMILY => {
                out.push('"');
                out.push_str(family_name(self.route.family()));
                out.push('"');
            }
            f::DST => {
                out.push('"');
                names::push_route_prefix(out, self.route.dst(), self.route.dst_len());
                out.push('"');
            }
            f::METRIC => render::push_int(out, self.route.priority().into()),
            f::TOS => render::push_int(out, self.route.tos().into()),
            f::NHID => match self.route.nh_id() {
                Some(id) => render::push_int(out, id.into()),
                None => out.push_str("null"),
            },
            f::EXPIRES => match self.route.expires() {
                Some(expires) => render::push_int(out, expires.into()),
                None => out.push_str("null"),
            },
            // What most routes lack, written without making its cell.
            f::SRC if self.route.src().is_none() => out.push_str("null"),
            f::ENCAP if self.route.encap().is_none() => out.push_str("null"),
            f::REALMS if self.route.realms().is_none() => out.push_str("null"),
            // An IPv6 route's router preference: a name, or a number as text (neither needs
            // escaping).
            f::PREF => match self.route.pref() {
                Some(pref) => {
                    out.push('"');
                    out.push_str(&names::pref(pref));
                    out.push('"');
                }
                None => out.push_str("null"),
            },
            f::MARK if self.route.mark().is_none() => out.push_str("null"),
            f::IIF if self.route.iif().is_none() => out.push_str("null"),
            f::TTL_PROPAGATE if self.route.ttl_propagate().is_none() => out.push_str("null"),
            f::NEXTHOPS if self.route.multipath().is_empty() => out.push_str("[]"),
            f::FLAGS if self.route.flags() == 0 => out.push_str("[]"),
            f::METRICS if !self.route.has_metrics() => out.push_str("[]"),
            f::UNKNOWN if self.route.unknown_attributes().is_empty() => out.push_str("[]"),
            _ => {
                if let Some(addr) = self.plain_address(idx) {
                    match addr {
                        Some(addr) => {
                            out.push('"');
                            out.push_str(addr);
                            out.push('"');
                        }
                        None => out.push_str("null"),
                    }
                } else if let Some(named) = self.named(idx) {
                    out.push_str(&named.json);
                } else {
                    self.with_cell(idx, |cell| cell_json(out, cell));
                }
            }
        }
    }
}

/// Appends an address as `ip` prints it (see [`address`]).
fn push_address(out: &mut String, addr: IpAddr) {
    let full = if addr.is_ipv4() { 32 } else { 128 };
    names::push_route_prefix(out, addr, full);
}

/// The hops of a multipath route, as `ip -j` lists them (`gateway`, `dev`, `weight`,
/// `flags`, plus `flow` and `encap` when a hop has them).
fn nexthops_cell(route: &Route, names: &LinkNames) -> Cell {
    let hops = route.multipath();
    if hops.is_empty() {
        return Cell::List(Vec::new());
    }
    let name = |ifindex: u32| names.name(ifindex);
    let text: Vec<String> = hops
        .iter()
        .map(|hop| {
            platform::text::hop_text(route.family(), hop, &name)
                .trim_start_matches("nexthop ")
                .to_owned()
        })
        .collect();
    let json = hops
        .iter()
        .map(|hop| {
            let mut object = Map::new();
            if let Some(gateway) = hop.gateway {
                object.insert("gateway".to_owned(), address(gateway).into());
            }
            object.insert("dev".to_owned(), names.name(hop.ifindex).into());
            object.insert("weight".to_owned(), hop.weight().into());
            object.insert(
                "flags".to_owned(),
                names::route_flags(u32::from(hop.flags)).into(),
            );
            if let Some(flow) = hop.realms() {
                object.insert("flow".to_owned(), flow_cell(flow).json());
            }
            if let Some(encap) = hop.encap() {
                object.insert("encap".to_owned(), encap_cell(encap).json());
            }
            if !hop.unknown_attributes().is_empty() {
                object.insert(
                    "unknown_attributes".to_owned(),
                    unknown_cell(hop.unknown_attributes()).json(),
                );
            }
            Value::Object(object)
        })
        .collect();
    Cell::from(TypedCell {
        text: text.join("; "),
        json: Value::Array(json),
    })
}

/// An encapsulation: `{"type": "ip", "id": 1, "dst": "1.2.3.4", ...}` (nested, where `ip -j`
/// puts the fields beside the route's own `dst` and `src` and so overwrites them).
fn encap_cell(encap: &platform::Encap) -> Cell {
    let mut object = Map::new();
    object.insert("type".to_owned(), encap.kind_name().into_owned().into());
    for (name, value) in encap.fields() {
        object.insert(name.into_owned(), attr_json(&value));
    }
    Cell::from(TypedCell {
        text: platform::text::encap_text(encap)
            .trim_start_matches("encap ")
            .to_owned(),
        json: Value::Object(object),
    })
}

/// Realms as `ip -j` shapes a route's `flow`: `{"from": "5", "to": "6"}` (`to` only when
/// `from` is 0), names from `rt_realms` where they have one.
fn flow_cell(flow: u32) -> Cell {
    let (from, to) = (flow >> 16, flow & 0xffff);
    let mut object = Map::new();
    if from != 0 {
        object.insert("from".to_owned(), names::realm(from as u16).into());
    }
    object.insert("to".to_owned(), names::realm(to as u16).into());
    Cell::from(TypedCell {
        text: names::realms(flow),
        json: Value::Object(object),
    })
}

/// Metrics as `ip -j -d` shapes them (`[{"mtu": 1400, "congestion": "cubic", ...}]`), with
/// the kernel's raw values (`ip` divides `rtt` by 8 and `rttvar` by 4) and a `lock` list of the
/// locked ones, which `ip -j` leaves out.
fn metrics_cell(route: &Route) -> Cell {
    let metrics = route.metrics();
    if metrics.is_empty() {
        return Cell::List(Vec::new());
    }
    let json_name = |kind: u16| match kind {
        platform::RTAX_CC_ALGO => "congestion".into(),
        kind => names::metric(kind),
    };
    let mut object = Map::new();
    let mut locked = Vec::new();
    for metric in &metrics {
        object.insert(
            json_name(metric.kind).into_owned(),
            attr_json(&metric.value),
        );
        if metric.locked {
            locked.push(Value::from(json_name(metric.kind).into_owned()));
        }
    }
    if !locked.is_empty() {
        object.insert("lock".to_owned(), Value::Array(locked));
    }
    let text: Vec<String> = metrics.iter().map(platform::text::metric_text).collect();
    Cell::from(TypedCell {
        text: text.join(" "),
        json: Value::Array(vec![Value::Object(object)]),
    })
}

/// An address as a cell (see [`address`]).
fn address_cell(addr: IpAddr) -> Cell {
    let full = if addr.is_ipv4() { 32 } else { 128 };
    Cell::Prefix(addr, full)
}

/// An address as `ip` prints it: a prefix of full length prints as the bare address.
fn address(addr: IpAddr) -> String {
    names::address(addr)
}

/// A rule's row.
pub(crate) fn rule_row(rule: &Rule) -> Vec<Cell> {
    let looks_up =
        rule.action() == platform::FR_ACT_TO_TBL && rule.table() != platform::Table::UNSPEC;
    let range = |range: Option<(u16, u16)>| {
        Cell::opt_text(range.map(|(start, end)| {
            if start == end {
                start.to_string()
            } else {
                format!("{start}-{end}")
            }
        }))
    };
    let selectors = rule.selectors();
    vec![
        rule.priority().into(),
        family_name(rule.family()).into(),
        selectors.join(" ").into(),
        rule.is_inverted().into(),
        names::rule_prefix(rule.src()).into(),
        Cell::opt_text(rule.dst().map(|dst| names::rule_prefix(Some(dst)))),
        Cell::opt_text(rule.iifname()),
        Cell::opt_text(rule.oifname()),
        Cell::opt_text(rule.fwmark().map(|(mark, _)| names::c_hex(mark.into()))),
        Cell::opt_text(
            rule.fwmark()
                .and_then(|(_, mask)| mask)
                .filter(|mask| *mask != u32::MAX)
                .map(|mask| names::c_hex(mask.into())),
        ),
        names::rule_action(rule.action()).into(),
        if looks_up {
            rule.table().to_string().into()
        } else {
            Cell::Null
        },
        rule.tos().into(),
        rule.protocol().to_string().into(),
        Cell::opt_int(rule.goto()),
        rule.iif_detached().into(),
        rule.oif_detached().into(),
        rule.l3mdev().into(),
        Cell::opt_int(rule.uid_range().map(|(start, _)| start)),
        Cell::opt_int(rule.uid_range().map(|(_, end)| end)),
        Cell::opt_text(rule.ip_proto().map(names::ip_proto)),
        range(rule.sport()),
        range(rule.dport()),
        Cell::opt_text(rule.tun_id()),
        Cell::opt_int(rule.suppress_prefixlen().map(|len| len as i32)),
        Cell::opt_text(rule.suppress_ifgroup().map(names::group)),
        Cell::opt_text(rule.realms().map(names::realms)),
        Cell::opt_int(rule.dscp()),
        rule.is_unresolved().into(),
        unknown_cell(rule.unknown_attributes()),
    ]
}

/// A [`args::DeviceSelector`] with its names resolved.
struct DeviceFilter {
    selector: args::DeviceSelector,
    dev: Option<platform::Ifindex>,
    master: Option<platform::Ifindex>,
    group: Option<u32>,
    scope: Option<u8>,
    to: Option<(IpAddr, u8)>,
}

impl DeviceFilter {
    fn new(
        selector: args::DeviceSelector,
        names: &LinkNames,
        links: &[Link],
    ) -> anyhow::Result<DeviceFilter> {
        let dev = selector
            .dev
            .as_deref()
            .map(|d| names.index(d))
            .transpose()?;
        let master = match &selector.master {
            Some((name, true)) => Some(vrf_index(name, names, links)?),
            Some((name, false)) => Some(names.index(name)?),
            None => None,
        };
        let group = match &selector.group {
            Some(group) => Some(
                names::parse_group(group)
                    .ok_or_else(|| args::usage_error(format!("unknown device group `{group}`")))?,
            ),
            None => None,
        };
        let scope = match selector.scope.as_deref() {
            None | Some("all") => None,
            Some(scope) => Some(
                names::parse_scope(scope)
                    .ok_or_else(|| args::usage_error(format!("unknown scope `{scope}`")))?,
            ),
        };
        let to = match &selector.to {
            Some(to) => Some(
                names::parse_prefix(to)
                    .ok_or_else(|| args::usage_error(format!("`{to}` is not a prefix")))?,
            ),
            None => None,
        };
        Ok(DeviceFilter {
            selector,
            dev,
            master,
            group,
            scope,
            to,
        })
    }

    /// Whether `ip link show` with these words lists `link`.
    fn selects_link(&self, link: &Link) -> bool {
        let kind_ok = match self.selector.kind.as_deref() {
            None => true,
            Some(kind) => match kind.strip_suffix("_slave") {
                Some(port) => link.port_kind() == Some(port),
                None => link.kind() == Some(kind),
            },
        };
        self.dev.is_none_or(|dev| link.ifindex() == dev)
            && (!self.selector.up || link.is_up())
            && self.master.is_none_or(|m| link.controller() == Some(m))
            && (!self.selector.nomaster || link.controller().is_none())
            && self.group.is_none_or(|g| link.group() == g)
            && kind_ok
    }

    /// Whether `ip addr show` with these words lists `addr`, on `link` (when known).
    fn selects_address(&self, addr: &Address, link: Option<&Link>, names: &LinkNames) -> bool {
        let link_ok = match link {
            Some(link) => self.selects_link(link),
            None => self.dev.is_none_or(|dev| addr.ifindex() == dev),
        };
        let (set, clear) = self.selector.flags;
        let label_ok = self.selector.label.as_deref().is_none_or(|pattern| {
            let name;
            let label = match addr.label() {
                Some(label) => label,
                None => {
                    name = names.name(addr.ifindex());
                    &name
                }
            };
            glob_match(pattern, label)
        });
        link_ok
            && self.scope.is_none_or(|scope| addr.scope().0 == scope)
            && self
                .to
                .is_none_or(|(prefix, len)| names::same_bits(addr.local(), prefix, len))
            && addr.flags() & set == set
            && addr.flags() & clear == 0
            && label_ok
    }
}

/// Whether `text` matches the shell pattern `pattern` (`*`, `?`, `[a-z]`, `[!x]`), as
/// `fnmatch` without flags, which `ip addr show label` uses.
fn glob_match(pattern: &str, text: &str) -> bool {
    fn class(set: &[char], c: char) -> Option<(bool, usize)> {
        // `set` starts after `[`; returns whether `c` is in it and the class's length.
        let (negated, start) = match set.first() {
            Some('!' | '^') => (true, 1),
            _ => (false, 0),
        };
        let mut i = start;
        let mut found = false;
        loop {
            let &first = set.get(i)?;
            if first == ']' && i > start {
                return Some((found != negated, i + 1));
            }
            if set.get(i + 1) == Some(&'-') && set.get(i + 2).is_some_and(|&end| end != ']') {
                found |= (first..=set[i + 2]).contains(&c);
                i += 3;
            } else {
                found |= first == c;
                i += 1;
            }
        }
    }
    fn go(p: &[char], t: &[char]) -> bool {
        match p.first() {
            None => t.is_empty(),
            Some('*') => (0..=t.len()).any(|skip| go(&p[1..], &t[skip..])),
            Some('?') => !t.is_empty() && go(&p[1..], &t[1..]),
            Some('[') => match (
                t.first(),
                class(&p[1..], t.first().copied().unwrap_or('\0')),
            ) {
                (Some(_), Some((true, len))) => go(&p[1 + len..], &t[1..]),
                (Some(_), Some((false, _))) => false,
                // An unclosed `[` is itself.
                (Some('['), None) => go(&p[1..], &t[1..]),
                _ => false,
            },
            Some('\\') if p.len() > 1 => t.first() == Some(&p[1]) && go(&p[2..], &t[1..]),
            Some(&c) => t.first() == Some(&c) && go(&p[1..], &t[1..]),
        }
    }
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    go(&p, &t)
}

/// `link [show] [SELECTOR]...`.
pub(crate) fn link(
    printer: &mut Printer,
    kernel: &KernelArgs,
    args: &args::LinkArgs,
) -> anyhow::Result<()> {
    let selector = args::DeviceSelector::parse("link", &args.words)?;
    let platform = open(kernel)?;
    let all = load_links(&platform)?;
    let names = LinkNames::from_links(&all);
    let filter = DeviceFilter::new(selector, &names, &all)?;
    let mut table = Table::new(LINK_FIELDS);
    let links: Vec<&Link> = all
        .iter()
        .filter(|link| filter.selects_link(link))
        .collect();
    if kernel.details && printer.mode() == Mode::Human {
        let netns = netns_names(&platform, links.iter().copied());
        for link in links {
            printer.line(&link_detail_text(link, &names, &netns))?;
        }
        return Ok(());
    }
    for link in links {
        table.push(link_row(link, &names));
    }
    printer.table(&table)
}

/// `addr [show] [SELECTOR]...`.
pub(crate) fn addr(
    printer: &mut Printer,
    kernel: &KernelArgs,
    args: &args::AddrArgs,
) -> anyhow::Result<()> {
    let selector = args::DeviceSelector::parse("addr", &args.words)?;
    let platform = open(kernel)?;
    let links = load_links(&platform)?;
    let names = LinkNames::from_links(&links);
    let filter = DeviceFilter::new(selector, &names, &links)?;
    let by_index: std::collections::HashMap<platform::Ifindex, &Link> =
        links.iter().map(|link| (link.ifindex(), link)).collect();
    let link_of = |ifindex: platform::Ifindex| by_index.get(&ifindex).copied();
    let mut query = platform.addresses();
    if let Some(dev) = filter.dev {
        query = query.ifindex(dev);
    }
    if let Some(family) = family(kernel) {
        query = query.family(family);
    }
    let selects = |addr: &Address| filter.selects_address(addr, link_of(addr.ifindex()), &names);
    let progress = crate::progress::Progress::start("loading addresses");
    if kernel.details && printer.mode() == Mode::Human {
        // As `ip -d -o addr` lists them: link by link, each link's in the kernel's order (its
        // IPv4 addresses, then its IPv6 ones).
        let mut addrs = Vec::new();
        let mut stream = printer.lines();
        visit_with(&mut stream, progress, query, |_, addr: Address| {
            if selects(&addr) {
                addrs.push(addr);
            }
            Ok(())
        })
        .map_err(|err| dump_error(err, "dump addresses"))?;
        addrs.sort_by_key(Address::ifindex);
        for addr in &addrs {
            stream.line(&format!(
                "{}: {}    {}",
                addr.ifindex(),
                names.name(addr.ifindex()),
                platform::text::address_text(addr)
            ))?;
        }
        return stream.finish();
    }
    let mut stream = printer.rows(ADDR_FIELDS, &[])?;
    visit_with(&mut stream, progress, query, |stream, addr: Address| {
        if !selects(&addr) {
            return Ok(());
        }
        stream.row(&addr_row(&addr, &names))
    })
    .map_err(|err| dump_error(err, "dump addresses"))?;
    stream.finish()
}

/// The selectors of `ip rule show`, read: each `None` (or `false`) selects every rule.
#[derive(Default)]
struct RuleFilter {
    priority: Option<u32>,
    not: bool,
    from: Option<(IpAddr, u8)>,
    to: Option<(IpAddr, u8)>,
    tos: Option<u8>,
    fwmark: Option<u32>,
    fwmask: Option<u32>,
    iif: Option<String>,
    oif: Option<String>,
    l3mdev: bool,
    uid_range: Option<(u32, u32)>,
    tun_id: Option<u64>,
    table: Option<u32>,
    protocol: Option<u8>,
    ipproto: Option<u8>,
    sport: Option<(u16, u16)>,
    dport: Option<(u16, u16)>,
}

impl RuleFilter {
    /// Reads `[show]` and `ip rule show`'s selectors.
    fn parse(words: &[String]) -> anyhow::Result<RuleFilter> {
        let mut filter = RuleFilter::default();
        let mut words = args::strip_show(words).iter().map(String::as_str);
        let bad = |what: &str, value: &str| -> anyhow::Error {
            args::usage_error(format!("`{value}` is not {what}")).into()
        };
        fn range<T: std::str::FromStr + Copy>(text: &str) -> Option<(T, T)> {
            match text.split_once('-') {
                Some((a, b)) => Some((a.parse().ok()?, b.parse().ok()?)),
                None => text.parse().ok().map(|n| (n, n)),
            }
        }
        // As `ip rule show` reads them: C numbers (hex, octal).
        let number = names::c_number::<u32>;
        while let Some(word) = words.next() {
            if matches!(word, "not" | "l3mdev") {
                filter.not |= word == "not";
                filter.l3mdev |= word == "l3mdev";
                continue;
            }
            let value = words
                .next()
                .ok_or_else(|| args::usage_error(format!("`{word}` needs a value")))?;
            match word {
                "pref" | "preference" | "priority" | "order" => {
                    filter.priority = Some(number(value).ok_or_else(|| bad("a priority", value))?);
                }
                "from" | "src" => {
                    filter.from = prefix_or_all(value).ok_or_else(|| bad("a prefix", value))?;
                }
                "to" | "dst" => {
                    filter.to = prefix_or_all(value).ok_or_else(|| bad("a prefix", value))?;
                }
                "tos" | "dsfield" => {
                    filter.tos =
                        Some(names::parse_dsfield(value).ok_or_else(|| bad("a TOS value", value))?);
                }
                "fwmark" => {
                    let (mark, mask) = match value.split_once('/') {
                        Some((mark, mask)) => (mark, Some(mask)),
                        None => (value, None),
                    };
                    filter.fwmark = Some(number(mark).ok_or_else(|| bad("a mark", value))?);
                    filter.fwmask = match mask {
                        Some(mask) => Some(number(mask).ok_or_else(|| bad("a mask", value))?),
                        None => None,
                    };
                }
                "iif" | "dev" => filter.iif = Some(value.to_owned()),
                "oif" => filter.oif = Some(value.to_owned()),
                "uidrange" => {
                    filter.uid_range = Some(range(value).ok_or_else(|| bad("a range", value))?);
                }
                "tun_id" => {
                    filter.tun_id = Some(value.parse().map_err(|_| bad("a tunnel id", value))?);
                }
                "table" | "lookup" => {
                    filter.table =
                        Some(names::parse_table(value).ok_or_else(|| bad("a table", value))?);
                }
                "protocol" | "proto" => {
                    filter.protocol = match value {
                        "all" => None,
                        _ => Some(
                            names::parse_protocol(value).ok_or_else(|| bad("a protocol", value))?,
                        ),
                    };
                }
                "ipproto" => {
                    filter.ipproto = Some(
                        names::parse_ip_proto(value).ok_or_else(|| bad("an IP protocol", value))?,
                    );
                }
                "sport" => filter.sport = Some(range(value).ok_or_else(|| bad("a port", value))?),
                "dport" => filter.dport = Some(range(value).ok_or_else(|| bad("a port", value))?),
                other => {
                    return Err(args::usage_error(format!(
                        "unknown rule selector `{other}` (expected pref, not, from, to, tos, \
                         fwmark, iif, oif, l3mdev, uidrange, tun_id, table, protocol, ipproto, \
                         sport or dport)"
                    ))
                    .into());
                }
            }
        }
        Ok(filter)
    }

    /// Whether `ip rule show` with these selectors lists `rule` (iproute2's `filter_nlmsg`).
    fn selects(&self, rule: &Rule) -> bool {
        let prefix = |want: Option<(IpAddr, u8)>, have: Option<(IpAddr, u8)>| match want {
            None => true,
            // The rule's prefix is inside the one asked for (never across families).
            Some((addr, len)) => match have {
                Some((have, have_len)) => {
                    platform::DstMatch::Root.matches(have, have_len, addr, len)
                }
                // `from all`: only a zero-length prefix of its family covers it.
                None => platform::Family::of(addr) == rule.family() && len == 0,
            },
        };
        let (mark, mask) = rule.fwmark().unwrap_or((0, None));
        self.priority.is_none_or(|p| rule.priority() == p)
            && (!self.not || rule.is_inverted())
            && prefix(self.from, rule.src())
            && prefix(self.to, rule.dst())
            && self.tos.is_none_or(|tos| rule.tos() == tos)
            && self.fwmark.is_none_or(|m| m == 0 || mark == m)
            && self.fwmask.is_none_or(|m| m == 0 || mask.unwrap_or(0) == m)
            && self
                .iif
                .as_deref()
                .is_none_or(|iif| rule.iifname() == Some(iif))
            && self
                .oif
                .as_deref()
                .is_none_or(|oif| rule.oifname() == Some(oif))
            && (!self.l3mdev || rule.l3mdev())
            && self.uid_range.is_none_or(|r| rule.uid_range() == Some(r))
            && self.tun_id.is_none_or(|id| rule.tun_id() == Some(id))
            && self.table.is_none_or(|t| t == 0 || rule.table().0 == t)
            && self.protocol.is_none_or(|p| rule.protocol().0 == p)
            && self
                .ipproto
                .is_none_or(|p| p == 0 || rule.ip_proto().unwrap_or(0) == p)
            && self
                .sport
                .is_none_or(|r| r.0 == 0 || rule.sport() == Some(r))
            && self
                .dport
                .is_none_or(|r| r.0 == 0 || rule.dport() == Some(r))
    }
}

/// A prefix of a rule selector; `all` (`default`, `any`) selects every rule, as `ip` reads it
/// without a family.
fn prefix_or_all(text: &str) -> Option<Option<(IpAddr, u8)>> {
    match text {
        "all" | "default" | "any" => Some(None),
        text => names::parse_prefix(text).map(Some),
    }
}

/// `rule [show] [SELECTOR]...`.
pub(crate) fn rule(
    printer: &mut Printer,
    kernel: &KernelArgs,
    args: &args::RuleArgs,
) -> anyhow::Result<()> {
    let filter = RuleFilter::parse(&args.words)?;
    let platform = open(kernel)?;
    let mut query = platform.rules();
    if let Some(family) = family(kernel) {
        query = query.family(family);
    }
    let progress = crate::progress::Progress::start("loading rules");
    if kernel.details && printer.mode() == Mode::Human {
        let mut stream = printer.lines();
        visit_with(&mut stream, progress, query, |stream, rule: Rule| {
            if !filter.selects(&rule) {
                return Ok(());
            }
            stream.tabbed_line(&platform::text::rule_text(&rule, true))
        })
        .map_err(|err| dump_error(err, "dump rules"))?;
        return stream.finish();
    }
    let mut stream = printer.rows(RULE_FIELDS, &[])?;
    visit_with(&mut stream, progress, query, |stream, rule: Rule| {
        if !filter.selects(&rule) {
            return Ok(());
        }
        stream.row(&rule_row(&rule))
    })
    .map_err(|err| dump_error(err, "dump rules"))?;
    stream.finish()
}

/// `route [show] [SELECTOR]...` (`table`, `dev`, `proto`, `type`, `scope`, `tos`, `via`,
/// `src`, `from`, a destination): the main table unless `table` says otherwise, both families
/// unless `-4`/`-6`; the platform pushes the filters it can into the kernel, and compares
/// the rest itself.
pub(crate) fn route_show(
    printer: &mut Printer,
    kernel: &KernelArgs,
    words: &[String],
) -> anyhow::Result<()> {
    let selector = RouteSelector::parse(words)?;
    let platform = open(kernel)?;
    let names = LinkNames::load(&platform)?;
    let mut query = platform.routes();
    match selector.table.as_deref() {
        Some("all") => {}
        Some(table) => {
            let id = names::parse_table(table).ok_or_else(|| {
                args::usage_error(format!(
                    "unknown table `{table}` (a number, main, local, default or all)"
                ))
            })?;
            query = query.table(platform::Table(id));
        }
        None => query = query.table(platform::Table::MAIN),
    }
    if let Some(dev) = &selector.dev {
        query = query.dev(names.index(dev)?);
    }
    if let Some(proto) = &selector.proto {
        let id = names::parse_protocol(proto)
            .ok_or_else(|| args::usage_error(format!("unknown protocol `{proto}`")))?;
        query = query.protocol(platform::Protocol(id));
    }
    // As `ip`, a prefix of the other family than `-4`/`-6` asks for is refused.
    let prefix = |text: &str| -> anyhow::Result<(IpAddr, u8)> {
        let (addr, len) = names::parse_prefix(text)
            .ok_or_else(|| args::usage_error(format!("`{text}` is not an address or prefix")))?;
        if family(kernel).is_some_and(|f| f != platform::Family::of(addr)) {
            return Err(args::usage_error(format!(
                "`{text}` is not a prefix of the family asked for"
            ))
            .into());
        }
        Ok((addr, len))
    };
    if let Some((text, how)) = &selector.dst {
        query = match text.as_str() {
            // The zero-length prefix, of the family asked for or of both.
            "default" => query.dst(None, 0, *how),
            text => {
                let (addr, len) = prefix(text)?;
                query.dst(Some(addr), len, *how)
            }
        };
    }
    let host = |(addr, len): (IpAddr, u8)| len == if addr.is_ipv4() { 32 } else { 128 };
    let mut gateway_host = false;
    let mut prefsrc_host = false;
    if let Some((text, how)) = &selector.src {
        let (addr, len) = prefix(text)?;
        query = query.src(addr, len, *how);
    }
    if let Some((text, named)) = &selector.via {
        // A gateway of the other family is fine when its family is named (`via inet6 ...`).
        let via = match named {
            true => names::parse_prefix(text).ok_or_else(|| {
                args::usage_error(format!("`{text}` is not an address or prefix"))
            })?,
            false => prefix(text)?,
        };
        gateway_host = host(via);
        query = query.via(via.0, via.1);
    }
    if let Some(text) = &selector.prefsrc {
        let src = prefix(text)?;
        prefsrc_host = host(src);
        query = query.prefsrc(src.0, src.1);
    }
    if let Some(scope) = &selector.scope {
        let id = names::parse_scope(scope)
            .ok_or_else(|| args::usage_error(format!("unknown scope `{scope}`")))?;
        query = query.scope(platform::Scope(id));
    }
    if let Some(tos) = &selector.tos {
        let id = names::parse_dsfield(tos)
            .ok_or_else(|| args::usage_error(format!("`{tos}` is not a TOS value")))?;
        query = query.tos(id);
    }
    if let Some(metric) = &selector.metric {
        let metric = names::c_number(metric)
            .ok_or_else(|| args::usage_error(format!("`{metric}` is not a metric")))?;
        query = query.metric(metric);
    }
    if let Some(iif) = &selector.iif {
        query = query.iif(names.index(iif)?);
    }
    let mut realms_whole = false;
    if let Some(text) = &selector.realms {
        let realms = names::parse_realms(text)
            .ok_or_else(|| args::usage_error(format!("`{text}` is not a realm")))?;
        let mask = names::realms_mask(text, realms);
        realms_whole = mask == u32::MAX;
        query = query.realms(realms, mask);
    }
    if let Some(mark) = &selector.mark {
        let mark = names::c_number(mark)
            .ok_or_else(|| args::usage_error(format!("`{mark}` is not a mark")))?;
        query = query.mark(mark);
    }
    if let Some(kind) = &selector.kind {
        let id = names::parse_route_type(kind)
            .ok_or_else(|| args::usage_error(format!("unknown route type `{kind}`")))?;
        query = query.kind(platform::RouteType(id));
    }
    if let Some(family) = family(kernel) {
        query = query.family(family);
    }
    // `ip` leaves out the words a filter makes the same on every line.
    let narrowed = platform::text::Narrowed {
        table: selector.table.as_deref() != Some("all"),
        dev: selector.dev.is_some(),
        protocol: selector.proto.is_some(),
        scope: selector.scope.is_some(),
        tos: selector.tos.is_some(),
        gateway: gateway_host,
        prefsrc: prefsrc_host,
        metric: selector.metric.is_some(),
        iif: selector.iif.is_some(),
        realms: realms_whole,
    };
    let progress = crate::progress::Progress::start("loading routes");
    // With -d, a route on a nexthop object shows the object too (`nh_info`), as `ip -d` does;
    // terse rows have no place for it.
    let nexthops: std::collections::HashMap<u32, platform::Nexthop> =
        if kernel.details && printer.mode() != Mode::Terse {
            platform
                .nexthops()
                .execute()
                .map_err(|err| explain(err, "dump nexthops"))?
                .items
                .into_iter()
                .map(|nh| (nh.id(), nh))
                .collect()
        } else {
            std::collections::HashMap::new()
        };
    if kernel.details && printer.mode() == Mode::Human {
        let mut stream = printer.lines();
        let report = visit_with(&mut stream, progress, query, |stream, route: Route| {
            let nh = route.nh_id().and_then(|id| nexthops.get(&id));
            for line in route_detail_lines(&route, &names, nh, narrowed) {
                stream.tabbed_line(&line)?;
            }
            Ok(())
        })
        .map_err(|err| dump_error(err, "dump routes"))?;
        tracing::debug!(?report, "routes dumped");
        return stream.finish();
    }
    // In JSON, each object once, as `nexthop --json` writes it.
    let nh_info: std::collections::HashMap<u32, String> = match printer.mode() {
        Mode::Json => nexthops
            .iter()
            .map(|(&id, nh)| (id, crate::nexthop::nexthop_json(nh, &names)))
            .collect(),
        _ => std::collections::HashMap::new(),
    };
    let mut stream = printer.rows(ROUTE_FIELDS, &route_bounds(family(kernel)))?;
    let mut memo = NameMemo::default();
    let report = visit_with(&mut stream, progress, query, |stream, route: Route| {
        let extra = route
            .nh_id()
            .and_then(|id| nh_info.get(&id))
            .map(|json| ("nh_info", json.as_str()));
        stream.lazy_row_with(
            &mut RouteRow {
                route: &route,
                names: &names,
                memo: &mut memo,
            },
            extra,
        )
    })
    .map_err(|err| dump_error(err, "dump routes"))?;
    tracing::debug!(?report, "routes dumped");
    stream.finish()
}

/// A route's `-d` lines as `ip -d` prints them: its first line, then the nexthop object it
/// uses (`nh_info`, when `nh` is given), then one `nexthop` line per hop, each after a tab.
/// The words a listing is `narrowed` to (its table, device, protocol, ...) are left out, as
/// `ip` leaves them out.
pub(crate) fn route_detail_lines(
    route: &Route,
    names: &LinkNames,
    nh: Option<&platform::Nexthop>,
    narrowed: platform::text::Narrowed,
) -> Vec<String> {
    let name = |ifindex: u32| names.name(ifindex);
    let mut lines = platform::text::route_lines_in(route, &name, true, narrowed).into_iter();
    let first = lines.next();
    let nh_info = nh.map(|nh| format!("\tnh_info {}", platform::text::nexthop_text(nh, &name)));
    first
        .into_iter()
        .chain(nh_info)
        .chain(lines.map(|hop| format!("\t{hop}")))
        .collect()
}

/// The widest text of each of [`ROUTE_FIELDS`] that its data type allows (the default
/// columns'), for the routes of `family` (both when `None`): what an aligned `route show` that
/// outgrows its look-ahead widens its columns to. A multipath route's lists of gateways and
/// devices, and names from `rt_tables` and `rt_protos`, have no such bound.
fn route_bounds(family: Option<platform::Family>) -> Vec<Option<usize>> {
    // "255.255.255.255/32"; IPv6: eight groups of four and seven colons, "/128".
    let (prefix, addr) = match family {
        Some(platform::Family::V4) => (18, 15),
        _ => (43, 39),
    };
    ROUTE_FIELDS
        .iter()
        .map(|field| match field.key {
            "family" => Some(5),
            // "unreachable"; a number has at most 3 digits.
            "type" => Some(11),
            "dst" => Some(prefix),
            "gateway" | "prefsrc" => Some(addr),
            // IFNAMSIZ less the NUL.
            "dev" => Some(15),
            // "universe"/"nowhere".
            "scope" => Some(8),
            // A u32.
            "metric" => Some(10),
            _ => None,
        })
        .collect()
}

/// What a streamed query failed with: its own errors as [`explain`] words them, the
/// printer's as they are.
pub(crate) fn dump_error(err: anyhow::Error, doing: &str) -> anyhow::Error {
    match err.downcast::<platform::Error>() {
        Ok(err) => explain(err, doing),
        Err(err) => err,
    }
}

/// A query visited into a [`RowStream`]: each object written by `write` as the dump hands it
/// over. An interrupted dump is done again if the stream can take back what it wrote of it
/// (it held it all still), else kept with a warning, as `ip` keeps it.
pub(crate) fn visit_with<'s, 'p, T, Q>(
    stream: &'s mut RowStream<'p>,
    progress: crate::progress::Progress,
    query: Q,
    write: impl FnMut(&mut RowStream<'p>, T) -> anyhow::Result<()>,
) -> anyhow::Result<platform::VisitReport>
where
    Q: Visit<T>,
{
    let mut visitor = StreamVisitor {
        stream,
        mark: None,
        progress: Some(progress),
        write,
    };
    let report = query.visit(&mut visitor)?;
    if report.kept_interrupted {
        tracing::warn!(
            "the dump was interrupted by changes after part of it was printed: the listing \
             may be inconsistent"
        );
    }
    Ok(report)
}

/// The queries [`visit_with`] runs.
pub(crate) trait Visit<T> {
    /// Runs the query through `visitor`.
    fn visit<V: Visitor<T, Error = anyhow::Error>>(
        self,
        visitor: &mut V,
    ) -> anyhow::Result<platform::VisitReport>;
}

macro_rules! visit_query {
    ($query:ty, $item:ty) => {
        impl Visit<$item> for $query {
            fn visit<V: Visitor<$item, Error = anyhow::Error>>(
                self,
                visitor: &mut V,
            ) -> anyhow::Result<platform::VisitReport> {
                <$query>::visit(self, visitor)
            }
        }
    };
}

visit_query!(platform::RouteQuery<'_>, Route);
visit_query!(platform::AddressQuery<'_>, Address);
visit_query!(platform::RuleQuery<'_>, Rule);
visit_query!(platform::LinkQuery<'_>, Link);
visit_query!(platform::NexthopQuery<'_>, platform::Nexthop);

/// The [`Visitor`] of [`visit_with`].
struct StreamVisitor<'s, 'p, W> {
    stream: &'s mut RowStream<'p>,
    mark: Option<StreamMark>,
    progress: Option<crate::progress::Progress>,
    write: W,
}

impl<'p, T, W> Visitor<T> for StreamVisitor<'_, 'p, W>
where
    W: FnMut(&mut RowStream<'p>, T) -> anyhow::Result<()>,
{
    type Error = anyhow::Error;

    fn begin(&mut self) -> anyhow::Result<()> {
        self.mark = Some(self.stream.mark());
        Ok(())
    }

    fn item(&mut self, item: T) -> anyhow::Result<()> {
        // The indicator goes before the first row is written.
        self.progress.take();
        (self.write)(self.stream, item)
    }

    fn interrupted(&mut self) -> anyhow::Result<bool> {
        Ok(self.mark.is_some_and(|mark| self.stream.retract(mark)))
    }
}

/// Columns of `route count`.
const COUNT_FIELDS: &[Field] = &[
    Field::common("TABLE", "table"),
    Field::common("FAMILY", "family"),
    Field::common("ROUTES", "routes"),
];

/// `route count`: loads the whole cache (every table, both families, links, addresses and
/// rules, as a program keeping it in sync would), then prints the routes per table and
/// family, and the memory the cache holds, per route: the resident memory taken while the
/// cache loaded, or with the `heap-stats` feature the exact heap (see [`crate::heap`]).
pub(crate) fn route_count(printer: &mut Printer, kernel: &KernelArgs) -> anyhow::Result<()> {
    let mut config = Config::new();
    if let Some(netns) = netns(kernel) {
        config = config.with_netns(netns);
    }
    let progress = crate::progress::Progress::start("loading the cache");
    let meter = crate::heap::Meter::start();
    // Never freed: the process ends after printing, and freeing the cache object by object
    // (every route of the namespace) costs a tenth of the command's instructions, as for the
    // monitor and the nm views.
    let cache = std::mem::ManuallyDrop::new(
        platform::Cache::open(config).map_err(|err| explain(err, "load the kernel cache"))?,
    );
    let heap = meter.used();
    let measure = crate::heap::Meter::MEASURE;
    drop(progress);

    let mut counts: std::collections::BTreeMap<(u32, &'static str), usize> = Default::default();
    let only = family(kernel);
    for route in cache.routes() {
        if only.is_none_or(|family| route.family() == family) {
            *counts
                .entry((route.table().into(), family_name(route.family())))
                .or_default() += 1;
        }
    }
    let mut table = Table::new(COUNT_FIELDS);
    for ((id, family), n_routes) in &counts {
        table.push(vec![
            names::table_name(*id).into(),
            (*family).into(),
            (*n_routes).into(),
        ]);
    }
    let platform::Counts {
        links: n_links,
        addresses: n_addresses,
        routes: n_routes,
        rules: n_rules,
        nexthops: n_nexthops,
        ..
    } = cache.counts();
    let per_route = if n_routes == 0 {
        None
    } else {
        Some(heap as f64 / n_routes as f64)
    };
    if printer.mode() == crate::render::Mode::Json {
        let mut object = serde_json::Map::new();
        object.insert("tables".to_owned(), printer.table_json(&table)?);
        object.insert("routes".to_owned(), n_routes.into());
        object.insert("links".to_owned(), n_links.into());
        object.insert("addresses".to_owned(), n_addresses.into());
        object.insert("rules".to_owned(), n_rules.into());
        object.insert("nexthops".to_owned(), n_nexthops.into());
        let (total_key, per_route_key) = measure.json_keys();
        object.insert(total_key.to_owned(), heap.into());
        object.insert(
            per_route_key.to_owned(),
            per_route.map_or(serde_json::Value::Null, |bytes| {
                ((bytes * 10.0).round() / 10.0).into()
            }),
        );
        return printer.json(&serde_json::Value::Object(object));
    }
    printer.table(&table)?;
    printer.blank()?;
    let per_route = per_route.map_or_else(|| "--".to_owned(), |bytes| format!("{bytes:.1}"));
    printer.note(&format!(
        "{n_routes} routes, {n_links} links, {n_addresses} addresses, {n_rules} rules, \
         {n_nexthops} nexthop objects; {} {} ({per_route} bytes per route, everything included)",
        measure.label(),
        crate::heap::human(heap)
    ))?;
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests;
