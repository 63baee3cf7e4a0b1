//! A link kind's data and a port's data as `ip -d link` prints them: iproute2's words for each
//! attribute, in its order, with its formatting (`on`/`off`, hex masks, names for states and
//! modes). iproute2 6.1's printers, with the attributes later releases print in their places.
//!
//! What no `ip` release prints (the countdown timers, which the cache does not keep, and
//! attributes `ip` leaves out, such as a bridge port's `mcast_max_groups`) is in the JSON
//! only. A kind without a printer here has its data printed as `name value` pairs.

use crate::linkinfo::KindAttr;
use crate::names::{self, c_hex};
use crate::route::AttrValue;
use crate::text::IfName;

/// How `ip` writes one attribute's value.
#[derive(Clone, Copy)]
enum Show {
    /// As held: a number, an address, a name.
    Plain,
    /// `%#x` as C writes it: `0` for zero, `0x..` otherwise.
    Hex,
    /// `on` for a non-zero number, `off` for zero.
    OnOff,
}

/// A kind's data, read by name.
struct Data<'a>(&'a [KindAttr]);

impl<'a> Data<'a> {
    fn get(&self, name: &str) -> Option<&'a AttrValue> {
        self.0
            .iter()
            .find(|(held, _)| held == name)
            .map(|(_, value)| value)
    }

    fn uint(&self, name: &str) -> Option<u64> {
        match self.get(name)? {
            AttrValue::Uint(value) => Some(*value),
            _ => None,
        }
    }

    /// Whether `name` is there and not zero.
    fn set(&self, name: &str) -> bool {
        match self.get(name) {
            Some(AttrValue::Uint(value)) => *value != 0,
            Some(AttrValue::Flag) => true,
            _ => false,
        }
    }

    /// Every attribute as `name value`: the data of a kind without a printer here.
    fn pairs(&self) -> impl Iterator<Item = String> + 'a {
        self.0.iter().map(|(name, value)| format!("{name} {value}"))
    }

    /// `label value` for each of `spec` that the data holds.
    fn push_all(&self, words: &mut Vec<String>, spec: &[(&str, &str, Show)]) {
        for &(name, label, show) in spec {
            if let Some(value) = self.get(name) {
                words.push(format!("{label} {}", shown(value, show)));
            }
        }
    }
}

fn shown(value: &AttrValue, show: Show) -> String {
    match (show, value) {
        (Show::Hex, AttrValue::Uint(number)) => c_hex(*number),
        (Show::OnOff, AttrValue::Uint(number)) => on_off(*number != 0).to_owned(),
        _ => value.to_string(),
    }
}

fn on_off(on: bool) -> &'static str {
    if on { "on" } else { "off" }
}

/// The words after the kind's name for a link of kind `kind` with data `data`.
pub(super) fn kind_words(kind: &str, data: &[KindAttr], dev: IfName<'_>) -> Vec<String> {
    let data = Data(data);
    let mut words = Vec::new();
    match kind {
        "bridge" => bridge(&data, &mut words),
        "vxlan" => vxlan(&data, dev, &mut words),
        "macvlan" | "macvtap" => macvlan(&data, &mut words),
        "tun" => tun(&data, &mut words),
        _ => words.extend(data.pairs()),
    }
    words
}

/// The words after `KIND_slave` for a port of a controller of kind `kind`.
pub(super) fn port_words(kind: &str, data: &[KindAttr], dev: IfName<'_>) -> Vec<String> {
    let data = Data(data);
    let mut words = Vec::new();
    match kind {
        "bridge" => bridge_port(&data, dev, &mut words),
        _ => words.extend(data.pairs()),
    }
    words
}

fn bridge(data: &Data<'_>, words: &mut Vec<String>) {
    use Show::{Hex, Plain};
    data.push_all(
        words,
        &[
            ("forward_delay", "forward_delay", Plain),
            ("hello_time", "hello_time", Plain),
            ("max_age", "max_age", Plain),
            ("ageing_time", "ageing_time", Plain),
            ("stp_state", "stp_state", Plain),
            ("priority", "priority", Plain),
            ("vlan_filtering", "vlan_filtering", Plain),
        ],
    );
    if let Some(protocol) = data.uint("vlan_protocol") {
        words.push(format!("vlan_protocol {}", ether_protocol(protocol)));
    }
    data.push_all(
        words,
        &[
            ("bridge_id", "bridge_id", Plain),
            ("root_id", "designated_root", Plain),
            ("root_port", "root_port", Plain),
            ("root_path_cost", "root_path_cost", Plain),
            ("topology_change", "topology_change", Plain),
            (
                "topology_change_detected",
                "topology_change_detected",
                Plain,
            ),
            // Here come the timers, which count down and are not kept.
            ("fdb_max_learned", "fdb_max_learned", Plain),
            ("vlan_default_pvid", "vlan_default_pvid", Plain),
            ("vlan_stats_enabled", "vlan_stats_enabled", Plain),
            ("vlan_stats_per_port", "vlan_stats_per_port", Plain),
            ("group_fwd_mask", "group_fwd_mask", Hex),
            ("group_addr", "group_address", Plain),
            ("mcast_snooping", "mcast_snooping", Plain),
            ("no_linklocal_learn", "no_linklocal_learn", Plain),
            ("mcast_vlan_snooping", "mcast_vlan_snooping", Plain),
            ("mst_enabled", "mst_enabled", Plain),
            (
                "mdb_offload_fail_notification",
                "mdb_offload_fail_notification",
                Plain,
            ),
            ("fdb_local_vlan_0", "fdb_local_vlan_0", Plain),
            ("mcast_router", "mcast_router", Plain),
            ("mcast_query_use_ifaddr", "mcast_query_use_ifaddr", Plain),
            ("mcast_querier", "mcast_querier", Plain),
            ("mcast_hash_elasticity", "mcast_hash_elasticity", Plain),
            ("mcast_hash_max", "mcast_hash_max", Plain),
            ("mcast_last_member_cnt", "mcast_last_member_count", Plain),
            (
                "mcast_startup_query_cnt",
                "mcast_startup_query_count",
                Plain,
            ),
            (
                "mcast_last_member_intvl",
                "mcast_last_member_interval",
                Plain,
            ),
            ("mcast_membership_intvl", "mcast_membership_interval", Plain),
            ("mcast_querier_intvl", "mcast_querier_interval", Plain),
            ("mcast_query_intvl", "mcast_query_interval", Plain),
            (
                "mcast_query_response_intvl",
                "mcast_query_response_interval",
                Plain,
            ),
            (
                "mcast_startup_query_intvl",
                "mcast_startup_query_interval",
                Plain,
            ),
            ("mcast_stats_enabled", "mcast_stats_enabled", Plain),
            ("mcast_igmp_version", "mcast_igmp_version", Plain),
            ("mcast_mld_version", "mcast_mld_version", Plain),
            ("nf_call_iptables", "nf_call_iptables", Plain),
            ("nf_call_ip6tables", "nf_call_ip6tables", Plain),
            ("nf_call_arptables", "nf_call_arptables", Plain),
        ],
    );
}

/// An EtherType as `ip` names the VLAN protocols.
fn ether_protocol(protocol: u64) -> String {
    match protocol {
        0x8100 => "802.1Q".to_owned(),
        0x88a8 => "802.1ad".to_owned(),
        other => format!("[{other}]"),
    }
}

fn bridge_port(data: &Data<'_>, dev: IfName<'_>, words: &mut Vec<String>) {
    use Show::{Hex, OnOff, Plain};
    if let Some(state) = data.uint("state") {
        const STATES: [&str; 5] = [
            "disabled",
            "listening",
            "learning",
            "forwarding",
            "blocking",
        ];
        match STATES.get(state as usize) {
            Some(name) => words.push(format!("state {name}")),
            None => words.push(format!("state ({state})")),
        }
    }
    data.push_all(
        words,
        &[
            ("priority", "priority", Plain),
            ("cost", "cost", Plain),
            ("hairpin", "hairpin", OnOff),
            ("guard", "guard", OnOff),
            ("root_block", "root_block", OnOff),
            ("fastleave", "fastleave", OnOff),
            ("learning", "learning", OnOff),
            ("flood", "flood", OnOff),
            ("id", "port_id", Hex),
            ("no", "port_no", Hex),
            ("designated_port", "designated_port", Plain),
            ("designated_cost", "designated_cost", Plain),
            ("bridge_id", "designated_bridge", Plain),
            ("root_id", "designated_root", Plain),
            // Here come the timers, which count down and are not kept.
            ("topology_change_ack", "topology_change_ack", Plain),
            ("config_pending", "config_pending", Plain),
            ("proxy_arp", "proxy_arp", OnOff),
            ("proxy_arp_wifi", "proxy_arp_wifi", OnOff),
            ("multicast_router", "mcast_router", Plain),
            ("fastleave", "mcast_fast_leave", OnOff),
            ("mcast_flood", "mcast_flood", OnOff),
            ("bcast_flood", "bcast_flood", OnOff),
            ("mcast_to_unicast", "mcast_to_unicast", OnOff),
            ("neigh_suppress", "neigh_suppress", OnOff),
            ("neigh_vlan_suppress", "neigh_vlan_suppress", OnOff),
        ],
    );
    if let Some(mask) = data.uint("group_fwd_mask") {
        words.push(format!("group_fwd_mask {}", c_hex(mask)));
        words.push(format!("group_fwd_mask_str {}", fwd_mask_names(mask)));
    }
    data.push_all(
        words,
        &[
            ("vlan_tunnel", "vlan_tunnel", OnOff),
            ("isolated", "isolated", OnOff),
            ("locked", "locked", OnOff),
            ("mab", "mab", OnOff),
        ],
    );
    if let Some(port) = data.uint("backup_port") {
        words.push(format!("backup_port {}", dev(port as u32)));
    }
    data.push_all(words, &[("backup_nhid", "backup_nhid", Plain)]);
}

/// A port's group forward mask as `ip` spells it: the names of the protocols it lets through
/// (`stp`, `lacp`, `lldp`), other bits in hex, `0x0` for none.
fn fwd_mask_names(mask: u64) -> String {
    let names: Vec<String> = (0..16)
        .filter(|bit| mask & (1 << bit) != 0)
        .map(|bit| match bit {
            0 => "stp".to_owned(),
            2 => "lacp".to_owned(),
            14 => "lldp".to_owned(),
            _ => format!("{:#x}", 1u32 << bit),
        })
        .collect();
    if names.is_empty() {
        "0x0".to_owned()
    } else {
        names.join(",")
    }
}

fn vxlan(data: &Data<'_>, dev: IfName<'_>, words: &mut Vec<String>) {
    let flag = |name: &str, word: &str, words: &mut Vec<String>| {
        if data.set(name) {
            words.push(word.to_owned());
        }
    };
    flag("collect_metadata", "external", words);
    flag("vnifilter", "vnifilter", words);
    if let Some(id) = data.uint("id") {
        words.push(format!("id {id}"));
    }
    let address = |name: &str| match data.get(name) {
        Some(AttrValue::Text(text)) => text.parse::<std::net::IpAddr>().ok(),
        _ => None,
    };
    let group = address("group").or_else(|| address("group6"));
    if let Some(group) = group.filter(|group| !group.is_unspecified()) {
        let word = if group.is_multicast() {
            "group"
        } else {
            "remote"
        };
        words.push(format!("{word} {group}"));
    }
    if let Some(local) = address("local")
        .or_else(|| address("local6"))
        .filter(|local| !local.is_unspecified())
    {
        words.push(format!("local {local}"));
    }
    if let Some(link) = data.uint("link").filter(|link| *link != 0) {
        words.push(format!("dev {}", dev(link as u32)));
    }
    if let Some(AttrValue::List(range)) = data.get("port_range") {
        words.push(format!("srcport {}", range.join(" ")));
    }
    if let Some(port) = data.uint("port") {
        words.push(format!("dstport {port}"));
    }
    if data.uint("learning") == Some(0) {
        words.push("nolearning".to_owned());
    }
    flag("proxy", "proxy", words);
    flag("rsc", "rsc", words);
    flag("l2miss", "l2miss", words);
    flag("l3miss", "l3miss", words);
    match data.uint("tos") {
        None | Some(0) => {}
        Some(1) => words.push("tos inherit".to_owned()),
        Some(tos) => words.push(format!("tos {}", c_hex(tos))),
    }
    if data.set("ttl_inherit") {
        words.push("ttl inherit".to_owned());
    } else {
        match data.uint("ttl") {
            None => {}
            Some(0) => words.push("ttl auto".to_owned()),
            Some(ttl) => words.push(format!("ttl {ttl}")),
        }
    }
    match data.uint("df") {
        Some(1) => words.push("df set".to_owned()),
        Some(2) => words.push("df inherit".to_owned()),
        _ => {}
    }
    if let Some(label) = data.uint("label").filter(|label| *label != 0) {
        words.push(format!("flowlabel {}", c_hex(label)));
    }
    match data.uint("ageing") {
        None => {}
        Some(0) => words.push("ageing none".to_owned()),
        Some(ageing) => words.push(format!("ageing {ageing}")),
    }
    if let Some(limit) = data.uint("limit").filter(|limit| *limit != 0) {
        words.push(format!("maxaddr {limit}"));
    }
    for (name, word) in [
        ("udp_csum", "udpcsum"),
        ("udp_zero_csum6_tx", "udp6zerocsumtx"),
        ("udp_zero_csum6_rx", "udp6zerocsumrx"),
    ] {
        if let Some(on) = data.uint(name) {
            words.push(format!("{}{word}", if on == 0 { "no" } else { "" }));
        }
    }
    flag("remcsum_tx", "remcsumtx", words);
    flag("remcsum_rx", "remcsumrx", words);
    if let Some(bits) = data.uint("reserved_bits") {
        words.push(format!("reserved_bits {}", c_hex(bits)));
    }
    if data.get("gbp").is_some() {
        words.push("gbp".to_owned());
    }
    if data.get("gpe").is_some() {
        words.push("gpe".to_owned());
    }
}

fn macvlan(data: &Data<'_>, words: &mut Vec<String>) {
    let Some(mode) = data.get("mode") else {
        return;
    };
    let mode = match mode {
        AttrValue::Text(mode) => mode.as_str(),
        _ => "unknown",
    };
    words.push(format!("mode {mode}"));
    let flags = data.uint("flags").unwrap_or(0);
    if flags & 1 != 0 {
        words.push("nopromisc".to_owned());
    }
    if flags & 2 != 0 {
        words.push("nodst".to_owned());
    }
    data.push_all(
        words,
        &[
            ("bcqueuelen", "bcqueuelen", Show::Plain),
            ("usedbcqueuelen", "usedbcqueuelen", Show::Plain),
        ],
    );
    // The kernel's `s32`, held as its bits.
    if let Some(cutoff) = data.uint("bc_cutoff") {
        words.push(format!("bclim {}", cutoff as u32 as i32));
    }
    if mode == "source"
        && let Some(count) = data.uint("macaddr_count")
    {
        words.push(format!("remotes ({count})"));
        if let Some(AttrValue::List(macs)) = data.get("macaddr_data") {
            words.extend(macs.iter().cloned());
        }
    }
}

fn tun(data: &Data<'_>, words: &mut Vec<String>) {
    use Show::{OnOff, Plain};
    if let Some(kind) = data.get("type") {
        match kind {
            AttrValue::Text(kind) => words.push(format!("type {kind}")),
            other => words.push(format!("type UNKNOWN:{other}")),
        }
    }
    data.push_all(
        words,
        &[("pi", "pi", OnOff), ("vnet_hdr", "vnet_hdr", OnOff)],
    );
    if data.set("multi_queue") {
        words.push("multi_queue".to_owned());
        data.push_all(
            words,
            &[
                ("numqueues", "numqueues", Plain),
                ("numdisabled", "numdisabled", Plain),
            ],
        );
    }
    data.push_all(words, &[("persist", "persist", OnOff)]);
    // Named as `ip` names them, from the user and group files; a number without a name.
    if let Some(uid) = data.uint("owner") {
        let uid = uid as u32;
        let name = names::user_name(uid).map_or_else(|| uid.to_string(), str::to_owned);
        words.push(format!("user {name}"));
    }
    if let Some(gid) = data.uint("group") {
        let gid = gid as u32;
        let name = names::group_name(gid).map_or_else(|| gid.to_string(), str::to_owned);
        words.push(format!("group {name}"));
    }
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use super::*;

    fn attrs(pairs: &[(&'static str, AttrValue)]) -> Vec<KindAttr> {
        pairs
            .iter()
            .map(|(name, value)| (Cow::Borrowed(*name), value.clone()))
            .collect()
    }

    #[test]
    fn masks_and_switches_are_written_as_ip_writes_them() {
        assert_eq!(c_hex(0), "0");
        assert_eq!(c_hex(0x4000), "0x4000");
        assert_eq!(fwd_mask_names(0), "0x0");
        assert_eq!(fwd_mask_names(1 << 14 | 1 << 3 | 1), "stp,0x8,lldp");
        let data = attrs(&[
            ("state", AttrValue::Uint(3)),
            ("hairpin", AttrValue::Uint(1)),
            ("fastleave", AttrValue::Uint(0)),
            ("group_fwd_mask", AttrValue::Uint(4)),
            ("backup_port", AttrValue::Uint(7)),
        ]);
        let name = |ifindex: u32| format!("dev{ifindex}");
        assert_eq!(
            port_words("bridge", &data, &name).join(" "),
            "state forwarding hairpin on fastleave off mcast_fast_leave off \
             group_fwd_mask 0x4 group_fwd_mask_str lacp backup_port dev7"
        );
    }

    #[test]
    fn vxlan_words_follow_the_values() {
        let data = attrs(&[
            ("id", AttrValue::Uint(7)),
            ("group", AttrValue::Text("239.1.1.1".into())),
            ("local", AttrValue::Text("0.0.0.0".into())),
            ("link", AttrValue::Uint(3)),
            ("learning", AttrValue::Uint(0)),
            ("tos", AttrValue::Uint(1)),
            ("ttl_inherit", AttrValue::Uint(1)),
            ("ttl", AttrValue::Uint(0)),
            ("df", AttrValue::Uint(0)),
            ("label", AttrValue::Uint(0x12345)),
            ("ageing", AttrValue::Uint(0)),
            ("limit", AttrValue::Uint(0)),
            ("udp_csum", AttrValue::Uint(0)),
            ("gbp", AttrValue::Flag),
        ]);
        let name = |ifindex: u32| format!("dev{ifindex}");
        assert_eq!(
            kind_words("vxlan", &data, &name).join(" "),
            "id 7 group 239.1.1.1 dev dev3 nolearning tos inherit ttl inherit \
             flowlabel 0x12345 ageing none noudpcsum gbp"
        );
    }

    #[test]
    fn an_unknown_kind_keeps_its_pairs() {
        let data = attrs(&[("attr9", AttrValue::Raw(Box::new([1, 2])))]);
        let name = |ifindex: u32| format!("dev{ifindex}");
        assert_eq!(kind_words("wireguard", &data, &name), ["attr9 0102"]);
    }
}
