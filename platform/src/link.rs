//! Links (network interfaces), with their altnames and kind-specific data.

use crate::error::{Error, Result};
use crate::linkinfo::{self, KindAttr, LinkInfo};
use crate::types::Ifindex;
use crate::wire::{self, Nlas, nla_str, nla_u8, nla_u32};

const IFLA_ADDRESS: u16 = 1;
const IFLA_BROADCAST: u16 = 2;
const IFLA_IFNAME: u16 = 3;
const IFLA_MTU: u16 = 4;
const IFLA_LINK: u16 = 5;
const IFLA_MASTER: u16 = 10;
const IFLA_TXQLEN: u16 = 13;
const IFLA_OPERSTATE: u16 = 16;
const IFLA_LINKMODE: u16 = 17;
const IFLA_PROTINFO: u16 = 12;
const IFLA_LINKINFO: u16 = 18;
const IFLA_IFALIAS: u16 = 20;
const IFLA_GROUP: u16 = 27;
const IFLA_PROMISCUITY: u16 = 30;
const IFLA_AF_SPEC: u16 = 26;
const IFLA_CARRIER: u16 = 33;
const IFLA_LINK_NETNSID: u16 = 37;
const IFLA_MIN_MTU: u16 = 50;
const IFLA_MAX_MTU: u16 = 51;
const IFLA_PROP_LIST: u16 = 52;
const IFLA_ALT_IFNAME: u16 = 53;
const IFLA_PERM_ADDRESS: u16 = 54;

/// `AF_INET6`'s part of `IFLA_AF_SPEC`, and its `IFLA_INET6_ADDR_GEN_MODE`.
const AF_INET6: u16 = 10;
const IFLA_INET6_ADDR_GEN_MODE: u16 = 8;
/// The name of the setting that holds it.
pub(crate) const ADDR_GEN_MODE: &str = "inet6_addr_gen_mode";

/// Attributes that are counters or per-message, not the link's state: `IFLA_STATS`,
/// `IFLA_STATS64`, `IFLA_CARRIER_CHANGES`, `IFLA_PAD`, `IFLA_EVENT`,
/// `IFLA_CARRIER_UP_COUNT`, `IFLA_CARRIER_DOWN_COUNT`.
const NOT_STATE: &[u16] = &[7, 23, 35, 42, 44, 47, 48];

/// Length of `struct ifinfomsg`.
pub(crate) const IFINFOMSG_LEN: usize = 16;

/// Interface flag `IFF_UP`.
pub const IFF_UP: u32 = 0x1;
/// Interface flag `IFF_LOWER_UP`.
pub const IFF_LOWER_UP: u32 = 0x10000;

/// A network interface.
///
/// Statistics are left out on purpose: they change all the time and are not state (see
/// [`Link::unknown_attributes`] for what else is kept).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    ifindex: u32,
    name: String,
    kind: Option<String>,
    link_type: u16,
    flags: u32,
    mtu: u32,
    min_mtu: u32,
    max_mtu: u32,
    txqlen: u32,
    parent: Option<u32>,
    controller: Option<u32>,
    operstate: u8,
    link_mode: u8,
    carrier: Option<u8>,
    group: u32,
    promiscuity: u32,
    link_netnsid: Option<i32>,
    address: Vec<u8>,
    broadcast: Vec<u8>,
    perm_address: Vec<u8>,
    alias: Option<String>,
    altnames: Vec<String>,
    info: Option<Box<LinkInfo>>,
    /// The scalar attributes decoded by [`linkinfo::LINK`] (qdisc, queues, GSO/GRO sizes, ...).
    settings: Vec<KindAttr>,
    other: Vec<(u16, Box<[u8]>)>,
}

impl std::hash::Hash for Link {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        // A subset of the fields: equal links hash equal, which is all `Hash` needs.
        self.ifindex.hash(state);
        self.name.hash(state);
        self.flags.hash(state);
        self.mtu.hash(state);
        self.address.hash(state);
    }
}

impl Link {
    /// The interface index.
    pub fn ifindex(&self) -> Ifindex {
        Ifindex(self.ifindex)
    }
    /// The interface name.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// The link kind (`veth`, `bridge`, ...) for virtual links.
    pub fn kind(&self) -> Option<&str> {
        self.kind.as_deref()
    }
    /// The hardware type (`ARPHRD_*`, e.g. 1 for Ethernet, 772 for loopback).
    pub fn link_type(&self) -> u16 {
        self.link_type
    }
    /// The `IFF_*` flags.
    pub fn flags(&self) -> u32 {
        self.flags
    }
    /// True when administratively up.
    pub fn is_up(&self) -> bool {
        self.flags & IFF_UP != 0
    }
    /// The MTU.
    pub fn mtu(&self) -> u32 {
        self.mtu
    }
    /// The smallest and largest MTU the device accepts (0 when unknown).
    pub fn mtu_range(&self) -> (u32, u32) {
        (self.min_mtu, self.max_mtu)
    }
    /// The transmit queue length.
    pub fn txqlen(&self) -> u32 {
        self.txqlen
    }
    /// The parent link (`IFLA_LINK`, e.g. a veth's peer), if any.
    pub fn parent(&self) -> Option<Ifindex> {
        self.parent.map(Ifindex)
    }
    /// The controller (`IFLA_MASTER`, e.g. the bridge), if any.
    pub fn controller(&self) -> Option<Ifindex> {
        self.controller.map(Ifindex)
    }
    /// The RFC 2863 operational state (`IF_OPER_*`: 2 down, 6 up, 0 unknown).
    pub fn operstate(&self) -> u8 {
        self.operstate
    }
    /// The link mode (`IF_LINK_MODE_*`).
    pub fn link_mode(&self) -> u8 {
        self.link_mode
    }
    /// The carrier, if reported.
    pub fn carrier(&self) -> Option<bool> {
        self.carrier.map(|c| c != 0)
    }
    /// The interface group.
    pub fn group(&self) -> u32 {
        self.group
    }
    /// The promiscuity count.
    pub fn promiscuity(&self) -> u32 {
        self.promiscuity
    }
    /// The namespace id of the parent's namespace (`IFLA_LINK_NETNSID`), if any.
    pub fn link_netnsid(&self) -> Option<i32> {
        self.link_netnsid
    }
    /// The hardware address.
    pub fn address(&self) -> &[u8] {
        &self.address
    }
    /// The hardware broadcast address.
    pub fn broadcast(&self) -> &[u8] {
        &self.broadcast
    }
    /// The permanent hardware address, if the device has one.
    pub fn perm_address(&self) -> &[u8] {
        &self.perm_address
    }
    /// The interface alias, if set.
    pub fn alias(&self) -> Option<&str> {
        self.alias.as_deref()
    }
    /// The alternative names (`ip link property add altname`), in the kernel's order.
    pub fn altnames(&self) -> &[String] {
        &self.altnames
    }
    /// Whether `name` is this link's name or one of its altnames (as `ip link show NAME`
    /// resolves it).
    pub fn is_named(&self, name: &str) -> bool {
        self.name == name || self.altnames.iter().any(|alt| alt == name)
    }
    /// The kind's data (`IFLA_INFO_DATA`) as named key/values: a bridge's `stp_state`, a
    /// vxlan's `id`, a macvlan's `mode`, ...; undecoded attributes as `attrN` and raw bytes.
    pub fn kind_data(&self) -> &[KindAttr] {
        self.info.as_deref().map_or(&[], |info| &info.data)
    }
    /// The kind of the port role (`IFLA_INFO_SLAVE_KIND`: the controller's kind, `bridge` for
    /// a bridge port, which `ip -d` prints as `bridge_slave`).
    pub fn port_kind(&self) -> Option<&str> {
        self.info
            .as_deref()
            .and_then(|info| info.port_kind.as_deref())
    }
    /// The port role's data (`IFLA_INFO_SLAVE_DATA`: a bridge port's `state`, `cost`, ...).
    pub fn port_data(&self) -> &[KindAttr] {
        self.info.as_deref().map_or(&[], |info| &info.port_data)
    }
    /// More of the link's settings as named values, with `ip -j -d link`'s keys: `qdisc`,
    /// `allmulti`, `num_tx_queues`, `num_rx_queues`, `gso_max_size`, `gso_max_segs`,
    /// `tso_max_size`, `tso_max_segs`, `gro_max_size`, `gso_ipv4_max_size`,
    /// `gro_ipv4_max_size`, `proto_down`, `proto_down_reason` (the reason bits set, as a
    /// list), `headroom`, `tailroom`, ..., and
    /// `inet6_addr_gen_mode` (`eui64`, `none`, `stable_secret`, `random`, or the number in
    /// hex as `0x04`: how the link makes its IPv6 link-local address, from `IFLA_AF_SPEC`).
    pub fn settings(&self) -> &[KindAttr] {
        &self.settings
    }
    /// Every name [`Link::settings`] may hold, so that a viewer can leave none out.
    pub fn setting_names() -> impl Iterator<Item = &'static str> {
        linkinfo::LINK
            .iter()
            .map(|(_, name, _)| *name)
            .chain(["inet6_addr_gen_mode"])
    }
    /// One of [`Link::settings`] by name.
    pub fn setting(&self, name: &str) -> Option<&crate::AttrValue> {
        self.settings
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value)
    }
    /// Attributes this crate does not decode, as the kernel sent them (type and payload),
    /// including undecoded `IFLA_INFO_*` ones as type `18 << 8 | N`. Counters
    /// (`IFLA_STATS*`, carrier counts) are not kept, nor is `IFLA_AF_SPEC` past its IPv6
    /// address generation mode (the rest is per-family counters, timestamps and the
    /// `net.ipv4.conf`/`net.ipv6.conf` sysctl values).
    pub fn unknown_attributes(&self) -> &[(u16, Box<[u8]>)] {
        &self.other
    }

    /// The link a bridge port's `AF_BRIDGE` `RTM_NEWLINK` (`payload`) updates: the port data
    /// of `self` with the values of its `IFLA_PROTINFO` (the STP state and the other port
    /// settings, which the kernel announces this way only). `None` when the message is not
    /// about `self` as a bridge port or changes nothing.
    pub(crate) fn with_bridge_port_info(&self, payload: &[u8]) -> Option<Link> {
        let hdr = payload.get(..IFINFOMSG_LEN)?;
        if hdr[0] != wire::AF_BRIDGE
            || wire::u32_at(hdr, 4) != self.ifindex
            || self.port_kind() != Some("bridge")
        {
            return None;
        }
        let (_, protinfo) =
            Nlas::new(&payload[IFINFOMSG_LEN..]).find(|(kind, _)| *kind == IFLA_PROTINFO)?;
        let mut link = self.clone();
        let info = link.info.as_deref_mut()?;
        linkinfo::update_bridge_port(&mut info.port_data, protinfo).then_some(link)
    }

    /// Parses an `RTM_NEWLINK`/`RTM_DELLINK` payload. Returns `Ok(None)` for messages of
    /// another family (the bridge's per-port `AF_BRIDGE` messages share the link group).
    pub fn parse(payload: &[u8]) -> Result<Option<Self>> {
        let Some(hdr) = payload.get(..IFINFOMSG_LEN) else {
            return Err(Error::malformed("link message shorter than ifinfomsg"));
        };
        if hdr[0] != wire::AF_UNSPEC {
            return Ok(None);
        }
        let mut link = Link {
            ifindex: wire::u32_at(hdr, 4),
            name: String::new(),
            kind: None,
            link_type: wire::u16_at(hdr, 2),
            flags: wire::u32_at(hdr, 8),
            mtu: 0,
            min_mtu: 0,
            max_mtu: 0,
            txqlen: 0,
            parent: None,
            controller: None,
            operstate: 0,
            link_mode: 0,
            carrier: None,
            group: 0,
            promiscuity: 0,
            link_netnsid: None,
            address: Vec::new(),
            broadcast: Vec::new(),
            perm_address: Vec::new(),
            alias: None,
            altnames: Vec::new(),
            info: None,
            settings: Vec::new(),
            other: Vec::new(),
        };
        let mut nlas = Nlas::new(&payload[IFINFOMSG_LEN..]);
        for (kind, value) in &mut nlas {
            match kind {
                IFLA_ADDRESS => link.address = value.to_vec(),
                IFLA_BROADCAST => link.broadcast = value.to_vec(),
                IFLA_PERM_ADDRESS => link.perm_address = value.to_vec(),
                IFLA_IFNAME => link.name = nla_str(value),
                IFLA_IFALIAS => link.alias = Some(nla_str(value)),
                IFLA_MTU => link.mtu = nla_u32(value).unwrap_or(0),
                IFLA_MIN_MTU => link.min_mtu = nla_u32(value).unwrap_or(0),
                IFLA_MAX_MTU => link.max_mtu = nla_u32(value).unwrap_or(0),
                IFLA_TXQLEN => link.txqlen = nla_u32(value).unwrap_or(0),
                IFLA_LINK => link.parent = nla_u32(value),
                IFLA_MASTER => link.controller = nla_u32(value),
                IFLA_OPERSTATE => link.operstate = nla_u8(value).unwrap_or(0),
                IFLA_LINKMODE => link.link_mode = nla_u8(value).unwrap_or(0),
                IFLA_CARRIER => link.carrier = nla_u8(value),
                IFLA_GROUP => link.group = nla_u32(value).unwrap_or(0),
                IFLA_PROMISCUITY => link.promiscuity = nla_u32(value).unwrap_or(0),
                IFLA_LINK_NETNSID => link.link_netnsid = nla_u32(value).map(|v| v as i32),
                IFLA_LINKINFO => {
                    let mut info = linkinfo::parse(value);
                    link.kind = info.kind.take();
                    for (kind, value) in std::mem::take(&mut info.other) {
                        link.other.push(((IFLA_LINKINFO << 8) | kind, value));
                    }
                    if info != LinkInfo::default() {
                        link.info = Some(Box::new(info));
                    }
                }
                IFLA_PROP_LIST => {
                    for (kind, value) in Nlas::new(value) {
                        if kind == IFLA_ALT_IFNAME {
                            link.altnames.push(nla_str(value));
                        } else {
                            link.other
                                .push(((IFLA_PROP_LIST << 8) | kind, value.into()));
                        }
                    }
                }
                IFLA_AF_SPEC => link.settings.extend(addr_gen_mode(value)),
                kind if NOT_STATE.contains(&kind) => {}
                _ => match linkinfo::decode_one(linkinfo::LINK, kind, value) {
                    Some(attr) => link.settings.push(attr),
                    None => link.other.push((kind, value.into())),
                },
            }
        }
        if nlas.malformed() {
            return Err(Error::malformed("link attribute overruns its message"));
        }
        Ok(Some(link))
    }
}

/// The IPv6 address generation mode in an `IFLA_AF_SPEC` payload, named as `ip -d link`
/// names it (an unknown mode as C's `%#.2hhx`).
fn addr_gen_mode(af_spec: &[u8]) -> Option<KindAttr> {
    let (_, inet6) = Nlas::new(af_spec).find(|(family, _)| *family == AF_INET6)?;
    let (_, mode) = Nlas::new(inet6).find(|(kind, _)| *kind == IFLA_INET6_ADDR_GEN_MODE)?;
    let name = match nla_u8(mode)? {
        0 => "eui64".to_owned(),
        1 => "none".to_owned(),
        2 => "stable_secret".to_owned(),
        3 => "random".to_owned(),
        other => format!("{other:#04x}"),
    };
    Some((
        std::borrow::Cow::Borrowed(ADDR_GEN_MODE),
        crate::AttrValue::Text(name),
    ))
}
