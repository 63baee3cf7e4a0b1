//! `IFLA_LINKINFO`: a link's kind and its kind-specific data (`IFLA_INFO_DATA`), and the kind
//! and data of its port role (`IFLA_INFO_SLAVE_KIND`, `IFLA_INFO_SLAVE_DATA`, e.g. a bridge
//! port), decoded into named key/values by small per-kind tables.
//!
//! The names are those `ip -j -d link` uses where it has one, else the kernel's attribute name
//! in lower case. Values are the kernel's (a bridge's `forward_delay` in centiseconds, a
//! boolean as 0/1); an attribute a table does not list is kept as `attrN` with its raw bytes.
//! The timers that count down all the time (a bridge's `hello_timer`, `gc_timer`, a port's
//! `hold_timer`, ...) are counters, not state, and are left out like the statistics.

use std::borrow::Cow;
use std::net::{Ipv4Addr, Ipv6Addr};

use crate::route::AttrValue;
use crate::wire::{self, Nlas, nla_str};

const IFLA_INFO_KIND: u16 = 1;
const IFLA_INFO_DATA: u16 = 2;
const IFLA_INFO_SLAVE_KIND: u16 = 4;
const IFLA_INFO_SLAVE_DATA: u16 = 5;

/// A named, decoded attribute of a link kind's data.
pub type KindAttr = (Cow<'static, str>, AttrValue);

/// A link's kind information, decoded.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub(crate) struct LinkInfo {
    pub(crate) kind: Option<String>,
    pub(crate) data: Vec<KindAttr>,
    pub(crate) port_kind: Option<String>,
    pub(crate) port_data: Vec<KindAttr>,
    /// Other `IFLA_INFO_*` attributes (not `IFLA_INFO_XSTATS`, counters): type and payload.
    pub(crate) other: Vec<(u16, Box<[u8]>)>,
}

/// How one attribute's payload is read.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Ty {
    U8,
    U16,
    U32,
    U64,
    /// `NLA_UINT`: a number in 4 or 8 bytes, as the value needs.
    Uint,
    /// A big-endian 64-bit number.
    Be64,
    /// A big-endian 16-bit number (UDP ports, EtherTypes).
    Be16,
    /// A big-endian 32-bit number.
    Be32,
    In4,
    In6,
    Mac,
    /// `struct ifla_bridge_id`: priority (2 bytes), then a MAC address, printed as ip does.
    BridgeId,
    /// A present-or-absent flag.
    Flag,
    /// Two big-endian 16-bit ports (`struct ifla_vxlan_port_range`).
    PortRange,
    /// A macvlan mode (`MACVLAN_MODE_*`).
    MacvlanMode,
    /// A TUN device's type (`IFF_TUN`, `IFF_TAP`), as `ip` names it.
    TunType,
    /// `IFLA_PROTO_DOWN_REASON`: the reason bits set (`IFLA_PROTO_DOWN_REASON_VALUE`), as
    /// `ip` lists them without a names file.
    ProtoDownReason,
    /// Nested hardware addresses (`IFLA_MACVLAN_MACADDR_DATA`: `IFLA_MACVLAN_MACADDR` each), as
    /// a list; `None` (kept raw) when an entry is not a 6-byte address.
    MacList,
    /// `struct br_boolopt_multi` (a bridge's boolean options: values, and the mask of those
    /// reported): one 0/1 entry per reported option, named as `ip` names them.
    BoolOpts,
    /// A counter, left out.
    Skip,
    /// A NUL-terminated string.
    Str,
}

/// A link's own scalar attributes (`IFLA_*`) beyond those `Link` has fields for, with
/// `ip -j -d`'s keys.
pub(crate) const LINK: &[(u16, &str, Ty)] = &[
    (6, "qdisc", Ty::Str),
    (31, "num_tx_queues", Ty::U32),
    (32, "num_rx_queues", Ty::U32),
    (39, "proto_down", Ty::U8),
    (55, "proto_down_reason", Ty::ProtoDownReason),
    (40, "gso_max_segs", Ty::U32),
    (41, "gso_max_size", Ty::U32),
    (58, "gro_max_size", Ty::U32),
    (59, "tso_max_size", Ty::U32),
    (60, "tso_max_segs", Ty::U32),
    (61, "allmulti", Ty::U32),
    (63, "gso_ipv4_max_size", Ty::U32),
    (64, "gro_ipv4_max_size", Ty::U32),
    (66, "max_pacing_offload_horizon", Ty::Uint),
    (67, "netns_immutable", Ty::U8),
    (68, "headroom", Ty::U16),
    (69, "tailroom", Ty::U16),
];

const BRIDGE: &[(u16, &str, Ty)] = &[
    (1, "forward_delay", Ty::U32),
    (2, "hello_time", Ty::U32),
    (3, "max_age", Ty::U32),
    (4, "ageing_time", Ty::U32),
    (5, "stp_state", Ty::U32),
    (6, "priority", Ty::U16),
    (7, "vlan_filtering", Ty::U8),
    (8, "vlan_protocol", Ty::Be16),
    (9, "group_fwd_mask", Ty::U16),
    (10, "root_id", Ty::BridgeId),
    (11, "bridge_id", Ty::BridgeId),
    (12, "root_port", Ty::U16),
    (13, "root_path_cost", Ty::U32),
    (14, "topology_change", Ty::U8),
    (15, "topology_change_detected", Ty::U8),
    (16, "hello_timer", Ty::Skip),
    (17, "tcn_timer", Ty::Skip),
    (18, "topology_change_timer", Ty::Skip),
    (19, "gc_timer", Ty::Skip),
    (20, "group_addr", Ty::Mac),
    (22, "mcast_router", Ty::U8),
    (23, "mcast_snooping", Ty::U8),
    (24, "mcast_query_use_ifaddr", Ty::U8),
    (25, "mcast_querier", Ty::U8),
    (26, "mcast_hash_elasticity", Ty::U32),
    (27, "mcast_hash_max", Ty::U32),
    (28, "mcast_last_member_cnt", Ty::U32),
    (29, "mcast_startup_query_cnt", Ty::U32),
    (30, "mcast_last_member_intvl", Ty::U64),
    (31, "mcast_membership_intvl", Ty::U64),
    (32, "mcast_querier_intvl", Ty::U64),
    (33, "mcast_query_intvl", Ty::U64),
    (34, "mcast_query_response_intvl", Ty::U64),
    (35, "mcast_startup_query_intvl", Ty::U64),
    (36, "nf_call_iptables", Ty::U8),
    (37, "nf_call_ip6tables", Ty::U8),
    (38, "nf_call_arptables", Ty::U8),
    (39, "vlan_default_pvid", Ty::U16),
    (40, "pad", Ty::Skip),
    (41, "vlan_stats_enabled", Ty::U8),
    (42, "mcast_stats_enabled", Ty::U8),
    (43, "mcast_igmp_version", Ty::U8),
    (44, "mcast_mld_version", Ty::U8),
    (45, "vlan_stats_per_port", Ty::U8),
    (46, "multi_boolopt", Ty::BoolOpts),
    // Holds the other querier's timers.
    (47, "mcast_querier_state", Ty::Skip),
    (48, "fdb_n_learned", Ty::Skip),
    (49, "fdb_max_learned", Ty::U32),
];

const BRIDGE_PORT: &[(u16, &str, Ty)] = &[
    (1, "state", Ty::U8),
    (2, "priority", Ty::U16),
    (3, "cost", Ty::U32),
    (4, "hairpin", Ty::U8),
    (5, "guard", Ty::U8),
    (6, "root_block", Ty::U8),
    (7, "fastleave", Ty::U8),
    (8, "learning", Ty::U8),
    (9, "flood", Ty::U8),
    (10, "proxy_arp", Ty::U8),
    (11, "learning_sync", Ty::U8),
    (12, "proxy_arp_wifi", Ty::U8),
    (13, "root_id", Ty::BridgeId),
    (14, "bridge_id", Ty::BridgeId),
    (15, "designated_port", Ty::U16),
    (16, "designated_cost", Ty::U16),
    (17, "id", Ty::U16),
    (18, "no", Ty::U16),
    (19, "topology_change_ack", Ty::U8),
    (20, "config_pending", Ty::U8),
    (21, "message_age_timer", Ty::Skip),
    (22, "forward_delay_timer", Ty::Skip),
    (23, "hold_timer", Ty::Skip),
    (25, "multicast_router", Ty::U8),
    (26, "pad", Ty::Skip),
    (27, "mcast_flood", Ty::U8),
    (28, "mcast_to_unicast", Ty::U8),
    (29, "vlan_tunnel", Ty::U8),
    (30, "bcast_flood", Ty::U8),
    (31, "group_fwd_mask", Ty::U16),
    (32, "neigh_suppress", Ty::U8),
    (33, "isolated", Ty::U8),
    (34, "backup_port", Ty::U32),
    (35, "mrp_ring_open", Ty::U8),
    (36, "mrp_in_open", Ty::U8),
    (37, "mcast_eht_hosts_limit", Ty::U32),
    (38, "mcast_eht_hosts_cnt", Ty::Skip),
    (39, "locked", Ty::U8),
    (40, "mab", Ty::U8),
    (41, "mcast_n_groups", Ty::Skip),
    (42, "mcast_max_groups", Ty::U32),
    (43, "neigh_vlan_suppress", Ty::U8),
    (44, "backup_nhid", Ty::U32),
];

const VXLAN: &[(u16, &str, Ty)] = &[
    (1, "id", Ty::U32),
    (2, "group", Ty::In4),
    (3, "link", Ty::U32),
    (4, "local", Ty::In4),
    (5, "ttl", Ty::U8),
    (6, "tos", Ty::U8),
    (7, "learning", Ty::U8),
    (8, "ageing", Ty::U32),
    (9, "limit", Ty::U32),
    (10, "port_range", Ty::PortRange),
    (11, "proxy", Ty::U8),
    (12, "rsc", Ty::U8),
    (13, "l2miss", Ty::U8),
    (14, "l3miss", Ty::U8),
    (15, "port", Ty::Be16),
    (16, "group6", Ty::In6),
    (17, "local6", Ty::In6),
    (18, "udp_csum", Ty::U8),
    (19, "udp_zero_csum6_tx", Ty::U8),
    (20, "udp_zero_csum6_rx", Ty::U8),
    (21, "remcsum_tx", Ty::U8),
    (22, "remcsum_rx", Ty::U8),
    (23, "gbp", Ty::Flag),
    (24, "remcsum_nopartial", Ty::Flag),
    (25, "collect_metadata", Ty::U8),
    (26, "label", Ty::Be32),
    (27, "gpe", Ty::Flag),
    (28, "ttl_inherit", Ty::U8),
    (29, "df", Ty::U8),
    (30, "vnifilter", Ty::U8),
    (31, "localbypass", Ty::U8),
    (32, "label_policy", Ty::U32),
    (33, "reserved_bits", Ty::Be64),
];

const MACVLAN: &[(u16, &str, Ty)] = &[
    (1, "mode", Ty::MacvlanMode),
    (2, "flags", Ty::U16),
    (3, "macaddr_mode", Ty::U32),
    (4, "macaddr", Ty::Mac),
    (5, "macaddr_data", Ty::MacList),
    (6, "macaddr_count", Ty::U32),
    (7, "bcqueuelen", Ty::U32),
    (8, "usedbcqueuelen", Ty::U32),
    (9, "bc_cutoff", Ty::U32),
];

/// `IFLA_TUN_*`, with `ip -j -d`'s keys (`owner` and `group` stay numbers, where `ip` looks up
/// `user` and group names).
const TUN: &[(u16, &str, Ty)] = &[
    (1, "owner", Ty::U32),
    (2, "group", Ty::U32),
    (3, "type", Ty::TunType),
    (4, "pi", Ty::U8),
    (5, "vnet_hdr", Ty::U8),
    (6, "persist", Ty::U8),
    (7, "multi_queue", Ty::U8),
    (8, "numqueues", Ty::U32),
    (9, "numdisabled", Ty::U32),
];

/// The table for a kind's data.
fn table(kind: &str) -> &'static [(u16, &'static str, Ty)] {
    match kind {
        "bridge" => BRIDGE,
        "vxlan" => VXLAN,
        "macvlan" | "macvtap" => MACVLAN,
        "tun" => TUN,
        _ => &[],
    }
}

/// The table for the data of a port role, by its controller's kind (`IFLA_INFO_SLAVE_KIND`
/// is `bridge` for a bridge port, which `ip` prints as `bridge_slave`).
fn port_table(kind: &str) -> &'static [(u16, &'static str, Ty)] {
    match kind {
        "bridge" => BRIDGE_PORT,
        _ => &[],
    }
}

/// Decodes the payload of `IFLA_LINKINFO`.
pub(crate) fn parse(payload: &[u8]) -> LinkInfo {
    let mut info = LinkInfo::default();
    let (mut data, mut port_data) = (None, None);
    for (kind, value) in Nlas::new(payload) {
        match kind {
            IFLA_INFO_KIND => info.kind = Some(nla_str(value)),
            IFLA_INFO_SLAVE_KIND => info.port_kind = Some(nla_str(value)),
            IFLA_INFO_DATA => data = Some(value),
            IFLA_INFO_SLAVE_DATA => port_data = Some(value),
            // IFLA_INFO_XSTATS: counters.
            3 => {}
            _ => info.other.push((kind, value.into())),
        }
    }
    if let Some(data) = data {
        info.data = decode(table(info.kind.as_deref().unwrap_or("")), data);
    }
    if let Some(data) = port_data {
        info.port_data = decode(port_table(info.port_kind.as_deref().unwrap_or("")), data);
    }
    info
}

/// Updates the bridge port data `port_data` with the values of `protinfo` (the payload of
/// `IFLA_PROTINFO` in an `AF_BRIDGE` `RTM_NEWLINK`, the same `IFLA_BRPORT_*` attributes):
/// each attribute `port_data` has takes the new value. Returns whether one changed.
pub(crate) fn update_bridge_port(port_data: &mut [KindAttr], protinfo: &[u8]) -> bool {
    let mut changed = false;
    for (name, value) in decode(BRIDGE_PORT, protinfo) {
        if let Some(held) = port_data.iter_mut().find(|(held, _)| *held == name)
            && held.1 != value
        {
            held.1 = value;
            changed = true;
        }
    }
    changed
}

/// Decodes nested attributes with `table`; what it does not list (or lists with another size)
/// is kept as `attrN` and its bytes.
fn decode(table: &[(u16, &'static str, Ty)], data: &[u8]) -> Vec<KindAttr> {
    let mut out = Vec::new();
    for (kind, value) in Nlas::new(data) {
        let entry = table.iter().find(|(id, _, _)| *id == kind);
        if let (Some((_, _, Ty::BoolOpts)), Some(options)) = (entry, bool_options(value)) {
            out.extend(options);
            continue;
        }
        let decoded = entry.and_then(|(_, name, ty)| Some((*name, read(*ty, value)?)));
        match (entry, decoded) {
            (Some((_, _, Ty::Skip)), _) => {}
            (_, Some((name, value))) => out.push((Cow::Borrowed(name), value)),
            _ => out.push((
                Cow::Owned(format!("attr{kind}")),
                AttrValue::Raw(value.into()),
            )),
        }
    }
    out
}

/// A bridge's boolean options (`IFLA_BR_MULTI_BOOLOPT`: `optval`, then `optmask`), one 0/1
/// entry for each option the mask reports, by `ip`'s names (`BR_BOOLOPT_*` order); an option
/// without a name is `boolopt<BIT>`. `None` for another size.
fn bool_options(value: &[u8]) -> Option<Vec<KindAttr>> {
    const NAMES: &[&str] = &[
        "no_linklocal_learn",
        "mcast_vlan_snooping",
        "mst_enabled",
        "mdb_offload_fail_notification",
        "fdb_local_vlan_0",
    ];
    if value.len() != 8 {
        return None;
    }
    let (values, mask) = (wire::u32_at(value, 0), wire::u32_at(value, 4));
    Some(
        (0..32)
            .filter(|bit| mask & (1 << bit) != 0)
            .map(|bit: usize| {
                let name = NAMES.get(bit).map_or_else(
                    || Cow::Owned(format!("boolopt{bit}")),
                    |name| Cow::Borrowed(*name),
                );
                (name, AttrValue::Uint(u64::from(values >> bit & 1)))
            })
            .collect(),
    )
}

/// Decodes one attribute by `table`: `None` when the table does not list it (or it has
/// another size), so the caller keeps it raw.
pub(crate) fn decode_one(
    table: &[(u16, &'static str, Ty)],
    kind: u16,
    value: &[u8],
) -> Option<KindAttr> {
    let (_, name, ty) = table.iter().find(|(id, _, _)| *id == kind)?;
    Some((Cow::Borrowed(*name), read(*ty, value)?))
}

fn read(ty: Ty, value: &[u8]) -> Option<AttrValue> {
    let uint = |number: u64| Some(AttrValue::Uint(number));
    match (ty, value.len()) {
        (Ty::U8, 1) => uint(value[0].into()),
        (Ty::U16, 2) => uint(wire::u16_at(value, 0).into()),
        (Ty::U32, 4) => uint(wire::u32_at(value, 0).into()),
        (Ty::U64 | Ty::Uint, 8) => uint(u64::from_ne_bytes(value.try_into().ok()?)),
        (Ty::Uint, 4) => uint(wire::u32_at(value, 0).into()),
        (Ty::Be64, 8) => uint(u64::from_be_bytes(value.try_into().ok()?)),
        (Ty::Be16, 2) => uint(u16::from_be_bytes([value[0], value[1]]).into()),
        (Ty::Be32, 4) => uint(u32::from_be_bytes(value.try_into().ok()?).into()),
        (Ty::In4, 4) => Some(AttrValue::Text(
            Ipv4Addr::from(<[u8; 4]>::try_from(value).ok()?).to_string(),
        )),
        (Ty::In6, 16) => Some(AttrValue::Text(
            Ipv6Addr::from(<[u8; 16]>::try_from(value).ok()?).to_string(),
        )),
        (Ty::Mac, 6) => crate::names::hw_address(value).map(AttrValue::Text),
        // As ip prints it: the priority in hex, then the address as ether_ntoa writes it
        // (no leading zeros).
        (Ty::BridgeId, 8) => Some(AttrValue::Text(format!(
            "{:02x}{:02x}.{}",
            value[0],
            value[1],
            value[2..]
                .iter()
                .map(|byte| format!("{byte:x}"))
                .collect::<Vec<_>>()
                .join(":")
        ))),
        (Ty::Flag, 0) => Some(AttrValue::Flag),
        (Ty::PortRange, 4) => Some(AttrValue::List(vec![
            u16::from_be_bytes([value[0], value[1]]).to_string(),
            u16::from_be_bytes([value[2], value[3]]).to_string(),
        ])),
        (Ty::MacvlanMode, 4) => {
            let mode = wire::u32_at(value, 0);
            Some(AttrValue::Text(
                match mode {
                    1 => "private",
                    2 => "vepa",
                    4 => "bridge",
                    8 => "passthru",
                    16 => "source",
                    _ => return uint(mode.into()),
                }
                .to_owned(),
            ))
        }
        (Ty::TunType, 1) => match value[0] {
            1 => Some(AttrValue::Text("tun".to_owned())),
            2 => Some(AttrValue::Text("tap".to_owned())),
            other => uint(other.into()),
        },
        (Ty::MacList, _) => {
            const IFLA_MACVLAN_MACADDR: u16 = 4;
            Nlas::new(value)
                .map(|(kind, mac)| {
                    (kind == IFLA_MACVLAN_MACADDR && mac.len() == 6)
                        .then(|| crate::names::hw_address(mac))
                        .flatten()
                })
                .collect::<Option<Vec<_>>>()
                .map(AttrValue::List)
        }
        (Ty::ProtoDownReason, _) => {
            const IFLA_PROTO_DOWN_REASON_VALUE: u16 = 2;
            let (_, bits) =
                Nlas::new(value).find(|(kind, _)| *kind == IFLA_PROTO_DOWN_REASON_VALUE)?;
            let bits = wire::nla_u32(bits)?;
            Some(AttrValue::List(
                (0..32)
                    .filter(|bit| bits & (1 << bit) != 0)
                    .map(|bit: u32| bit.to_string())
                    .collect(),
            ))
        }
        (Ty::Skip, _) => Some(AttrValue::Flag),
        (Ty::Str, _) => Some(AttrValue::Text(nla_str(value))),
        _ => None,
    }
}
