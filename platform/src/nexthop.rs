//! Nexthop objects (`ip nexthop`, `RTM_NEWNEXTHOP`): a gateway on a device, a blackhole, or a
//! group of other nexthops with weights, which routes point at by id (`nhid`).

use std::net::IpAddr;

use crate::error::{Error, Result};
use crate::platform::Platform;
use crate::query::{Answer, Collect, VisitReport, Visitor, visit_dump};
use crate::route::Family;
use crate::types::{Ifindex, Protocol, Scope};
use crate::wire::{self, AF_INET, AF_INET6, MsgWriter, Nlas, nla_u32};

const NHA_ID: u16 = 1;
const NHA_GROUP: u16 = 2;
const NHA_GROUP_TYPE: u16 = 3;
const NHA_BLACKHOLE: u16 = 4;
const NHA_OIF: u16 = 5;
const NHA_GATEWAY: u16 = 6;
const NHA_ENCAP_TYPE: u16 = 7;
const NHA_ENCAP: u16 = 8;
/// Dump request only: groups only.
const NHA_GROUPS: u16 = 9;
/// Dump request only: the nexthops on the ports of this master device.
const NHA_MASTER: u16 = 10;
const NHA_FDB: u16 = 11;
const NHA_RES_GROUP: u16 = 12;

const NHA_RES_GROUP_BUCKETS: u16 = 1;
const NHA_RES_GROUP_IDLE_TIMER: u16 = 2;
const NHA_RES_GROUP_UNBALANCED_TIMER: u16 = 3;
const NHA_RES_GROUP_UNBALANCED_TIME: u16 = 4;

/// Length of `struct nhmsg`.
pub(crate) const NHMSG_LEN: usize = 8;
/// Length of `struct nexthop_grp`.
const NEXTHOP_GRP_LEN: usize = 8;

/// Group type `NEXTHOP_GRP_TYPE_MPATH` (hash-threshold multipath).
pub const NEXTHOP_GRP_TYPE_MPATH: u16 = 0;
/// Group type `NEXTHOP_GRP_TYPE_RES` (resilient: a bucket table).
pub const NEXTHOP_GRP_TYPE_RES: u16 = 1;

/// `RTNH_F_DEAD`: the nexthop is dead (its device is down).
pub const RTNH_F_DEAD: u32 = 1;
/// `RTNH_F_ONLINK`: the gateway is taken as on the link, unchecked.
pub const RTNH_F_ONLINK: u32 = 4;
/// `RTNH_F_LINKDOWN`: the nexthop's device has no carrier.
pub const RTNH_F_LINKDOWN: u32 = 16;

/// One member of a nexthop group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct GroupMember {
    /// The member nexthop's id.
    pub id: u32,
    /// Its weight (1 to 65536: the kernel sends the weight minus one).
    pub weight: u32,
}

/// The parameters of a resilient group (`NHA_RES_GROUP`), as the kernel reports them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub struct Resilient {
    /// Number of buckets.
    pub buckets: Option<u16>,
    /// Idle timer, in clock ticks of `USER_HZ` (seconds times 100).
    pub idle_timer: Option<u32>,
    /// Unbalanced timer, in `USER_HZ` ticks.
    pub unbalanced_timer: Option<u32>,
    /// How long the group has been unbalanced, in `USER_HZ` ticks.
    pub unbalanced_time: Option<u64>,
}

/// A nexthop object: `ip nexthop add id 1 via 10.0.0.2 dev eth0`, `... id 3 blackhole`,
/// `... id 10 group 1/2,3`.
///
/// Immutable once built; equality covers every field. Build one for a batch with
/// [`Nexthop::new`] and the `with_*` methods.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Nexthop {
    id: u32,
    /// `nh_family`: `AF_INET`, `AF_INET6` or 0 (groups, some blackholes).
    family: u8,
    scope: u8,
    protocol: u8,
    flags: u32,
    gateway: Option<IpAddr>,
    oif: Option<u32>,
    blackhole: bool,
    fdb: bool,
    group: Vec<GroupMember>,
    group_type: Option<u16>,
    resilient: Option<Resilient>,
    /// `NHA_ENCAP_TYPE` and the raw `NHA_ENCAP` nest.
    encap: Option<(u16, Box<[u8]>)>,
    /// Attributes this crate does not decode: type and payload.
    other: Vec<(u16, Box<[u8]>)>,
}

impl Nexthop {
    /// A nexthop with this id and nothing else: add a gateway and device, `blackhole` or a
    /// group with the `with_*` methods.
    pub fn new(id: u32) -> Self {
        Nexthop {
            id,
            family: 0,
            scope: 0,
            protocol: 0,
            flags: 0,
            gateway: None,
            oif: None,
            blackhole: false,
            fdb: false,
            group: Vec::new(),
            group_type: None,
            resilient: None,
            encap: None,
            other: Vec::new(),
        }
    }

    /// Via this gateway (sets the family).
    pub fn with_gateway(mut self, gateway: IpAddr) -> Self {
        self.family = Family::of(gateway).af();
        self.gateway = Some(gateway);
        self
    }

    /// Out of this device.
    pub fn with_oif(mut self, ifindex: Ifindex) -> Self {
        self.oif = Some(ifindex.0);
        self
    }

    /// A blackhole nexthop.
    pub fn with_blackhole(mut self) -> Self {
        self.blackhole = true;
        self
    }

    /// A nexthop for the bridge FDB (`fdb`).
    pub fn with_fdb(mut self) -> Self {
        self.fdb = true;
        self
    }

    /// With these `RTNH_F_*` flags (e.g. [`RTNH_F_ONLINK`]).
    pub fn with_flags(mut self, flags: u32) -> Self {
        self.flags = flags;
        self
    }

    /// Installed by this protocol (`RTPROT_*`).
    pub fn with_protocol(mut self, protocol: Protocol) -> Self {
        self.protocol = protocol.0;
        self
    }

    /// A group of these members.
    pub fn with_group(mut self, members: Vec<GroupMember>) -> Self {
        self.group = members;
        self
    }

    /// A group of this type ([`NEXTHOP_GRP_TYPE_MPATH`], [`NEXTHOP_GRP_TYPE_RES`]).
    pub fn with_group_type(mut self, group_type: u16) -> Self {
        self.group_type = Some(group_type);
        self
    }

    /// With this id.
    pub fn with_id(mut self, id: u32) -> Self {
        self.id = id;
        self
    }

    /// A resilient group with this many buckets.
    pub fn with_buckets(mut self, buckets: u16) -> Self {
        self.resilient
            .get_or_insert_with(Resilient::default)
            .buckets = Some(buckets);
        self
    }

    /// The nexthop's id.
    pub fn id(&self) -> u32 {
        self.id
    }
    /// The address family of a gateway nexthop; `None` for groups and family-less blackholes.
    pub fn family(&self) -> Option<Family> {
        match self.family {
            AF_INET => Some(Family::V4),
            AF_INET6 => Some(Family::V6),
            _ => None,
        }
    }
    /// The scope (`RT_SCOPE_*`).
    pub fn scope(&self) -> Scope {
        Scope(self.scope)
    }
    /// The protocol that installed it (`RTPROT_*`; 0 is `unspec`).
    pub fn protocol(&self) -> Protocol {
        Protocol(self.protocol)
    }
    /// The `RTNH_F_*` flags ([`RTNH_F_ONLINK`], [`RTNH_F_DEAD`], [`RTNH_F_LINKDOWN`], ...).
    pub fn flags(&self) -> u32 {
        self.flags
    }
    /// The gateway, if any.
    pub fn gateway(&self) -> Option<IpAddr> {
        self.gateway
    }
    /// The output device, if any (a blackhole reports none).
    pub fn oif(&self) -> Option<Ifindex> {
        self.oif.map(Ifindex)
    }
    /// True for a blackhole nexthop.
    pub fn is_blackhole(&self) -> bool {
        self.blackhole
    }
    /// True for an FDB nexthop.
    pub fn is_fdb(&self) -> bool {
        self.fdb
    }
    /// The members of a group (empty for a single nexthop).
    pub fn group(&self) -> &[GroupMember] {
        &self.group
    }
    /// True for a group.
    pub fn is_group(&self) -> bool {
        !self.group.is_empty()
    }
    /// The group type as the kernel reported it (`None` when it did not).
    pub fn group_type(&self) -> Option<u16> {
        self.group_type
    }
    /// A resilient group's parameters.
    pub fn resilient(&self) -> Option<&Resilient> {
        self.resilient.as_ref()
    }
    /// The encapsulation type and raw `NHA_ENCAP` payload, if any.
    pub fn encap(&self) -> Option<(u16, &[u8])> {
        self.encap.as_ref().map(|(kind, raw)| (*kind, &raw[..]))
    }
    /// Attributes this crate does not decode, as type and raw payload.
    pub fn unknown_attributes(&self) -> &[(u16, Box<[u8]>)] {
        &self.other
    }
    /// True when `id` is a member of this group.
    pub fn has_member(&self, id: u32) -> bool {
        self.group.iter().any(|member| member.id == id)
    }

    /// Parses an `RTM_NEWNEXTHOP`/`RTM_DELNEXTHOP` payload (after the netlink header).
    /// Returns `Ok(None)` for families other than unspecified, IPv4 and IPv6 (e.g. bridge FDB
    /// nexthops of `AF_BRIDGE` are kept: they are nexthops too; other families are not).
    pub fn parse(payload: &[u8]) -> Result<Option<Self>> {
        let Some(hdr) = payload.get(..NHMSG_LEN) else {
            return Err(Error::malformed("nexthop message shorter than nhmsg"));
        };
        let family = hdr[0];
        if !matches!(family, wire::AF_UNSPEC | AF_INET | AF_INET6 | AF_BRIDGE) {
            return Ok(None);
        }
        let mut nh = Nexthop::new(0);
        nh.family = family;
        nh.scope = hdr[1];
        nh.protocol = hdr[2];
        nh.flags = wire::u32_at(hdr, 4);
        let mut has_id = false;
        let mut encap_type = None;
        let mut encap = None;
        let mut nlas = Nlas::new(&payload[NHMSG_LEN..]);
        for (kind, value) in &mut nlas {
            match kind {
                NHA_ID => {
                    nh.id = nla_u32(value).ok_or_else(|| bad_attr(kind))?;
                    has_id = true;
                }
                NHA_OIF => nh.oif = Some(nla_u32(value).ok_or_else(|| bad_attr(kind))?),
                NHA_GATEWAY => {
                    nh.gateway = Some(match value.len() {
                        4 => IpAddr::from(<[u8; 4]>::try_from(value).unwrap_or_default()),
                        16 => IpAddr::from(<[u8; 16]>::try_from(value).unwrap_or_default()),
                        _ => return Err(bad_attr(kind)),
                    })
                }
                NHA_BLACKHOLE => nh.blackhole = true,
                NHA_FDB => nh.fdb = true,
                NHA_GROUP => nh.group = parse_group(value)?,
                NHA_GROUP_TYPE => {
                    nh.group_type = Some(
                        value
                            .get(..2)
                            .map(|_| wire::u16_at(value, 0))
                            .ok_or_else(|| bad_attr(kind))?,
                    )
                }
                NHA_RES_GROUP => {
                    let (res, complete) = parse_resilient(value)?;
                    nh.resilient = Some(res);
                    if !complete {
                        // Parameters of a later kernel: the whole nest is kept raw too.
                        nh.other.push((kind, value.into()));
                    }
                }
                NHA_ENCAP_TYPE => {
                    encap_type = Some(
                        value
                            .get(..2)
                            .map(|_| wire::u16_at(value, 0))
                            .ok_or_else(|| bad_attr(kind))?,
                    )
                }
                NHA_ENCAP => encap = Some(Box::<[u8]>::from(value)),
                _ => nh.other.push((kind, value.into())),
            }
        }
        if nlas.malformed() {
            return Err(Error::malformed("nexthop attribute overruns its message"));
        }
        if !has_id {
            return Err(Error::malformed("nexthop message without NHA_ID"));
        }
        match (encap_type, encap) {
            (Some(kind), raw) => nh.encap = Some((kind, raw.unwrap_or_default())),
            // An encap nest without its type: kept raw like any unknown attribute.
            (None, Some(raw)) => nh.other.push((NHA_ENCAP, raw)),
            (None, None) => {}
        }
        Ok(Some(nh))
    }

    /// Appends this nexthop as a request of type `kind` (`RTM_NEWNEXTHOP`, or
    /// `RTM_DELNEXTHOP`, which carries the id only).
    pub(crate) fn emit(&self, buf: &mut Vec<u8>, kind: u16, flags: u16, seq: u32) {
        let mut msg = MsgWriter::new(buf, kind, flags, seq);
        let mut hdr = [0u8; NHMSG_LEN];
        if kind == wire::RTM_DELNEXTHOP {
            msg.raw(&hdr);
            msg.attr_u32(NHA_ID, self.id);
            msg.finish();
            return;
        }
        hdr[0] = self.family;
        hdr[1] = self.scope;
        hdr[2] = self.protocol;
        // The kernel takes only RTNH_F_ONLINK from a request.
        hdr[4..8].copy_from_slice(&(self.flags & RTNH_F_ONLINK).to_ne_bytes());
        msg.raw(&hdr);
        msg.attr_u32(NHA_ID, self.id);
        if !self.group.is_empty() {
            let mut raw = Vec::with_capacity(self.group.len() * NEXTHOP_GRP_LEN);
            for member in &self.group {
                let weight = member.weight.clamp(1, 1 << 16) - 1;
                raw.extend_from_slice(&member.id.to_ne_bytes());
                raw.push(weight as u8);
                raw.push((weight >> 8) as u8);
                raw.extend_from_slice(&[0, 0]);
            }
            msg.attr(NHA_GROUP, &raw);
            if let Some(group_type) = self.group_type {
                msg.attr(NHA_GROUP_TYPE, &group_type.to_ne_bytes());
            }
            if let Some(res) = &self.resilient {
                let nest = msg.begin_nest(NHA_RES_GROUP);
                if let Some(buckets) = res.buckets {
                    msg.attr(NHA_RES_GROUP_BUCKETS, &buckets.to_ne_bytes());
                }
                if let Some(idle) = res.idle_timer {
                    msg.attr_u32(NHA_RES_GROUP_IDLE_TIMER, idle);
                }
                if let Some(unbalanced) = res.unbalanced_timer {
                    msg.attr_u32(NHA_RES_GROUP_UNBALANCED_TIMER, unbalanced);
                }
                msg.end_nest(nest);
            }
        }
        if self.blackhole {
            msg.attr(NHA_BLACKHOLE, &[]);
        }
        if let Some(oif) = self.oif
            && !self.blackhole
        {
            msg.attr_u32(NHA_OIF, oif);
        }
        if let Some(gateway) = self.gateway {
            match gateway {
                IpAddr::V4(v4) => msg.attr(NHA_GATEWAY, &v4.octets()),
                IpAddr::V6(v6) => msg.attr(NHA_GATEWAY, &v6.octets()),
            };
        }
        if self.fdb {
            msg.attr(NHA_FDB, &[]);
        }
        if let Some((encap_type, raw)) = &self.encap {
            msg.attr(NHA_ENCAP_TYPE, &encap_type.to_ne_bytes());
            msg.attr(NHA_ENCAP | NLA_F_NESTED, raw);
        }
        msg.finish();
    }
}

impl std::fmt::Display for Nexthop {
    /// As `ip -d nexthop` prints it, with the device by index (`dev if3`; names are the
    /// cache's, see [`crate::text::nexthop_text`]): `id 10 group 1/2,3 scope global proto
    /// unspec`, `id 1 via 192.0.2.2 dev if3 scope link proto zebra onlink`, `id 3 scope global
    /// blackhole proto unspec`; an encap and the attributes this crate does not decode as
    /// `encap TYPE:HEX` and `unknown TYPE:HEX`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&crate::text::nexthop_text(self, &crate::text::default_name))?;
        if let Some((kind, raw)) = &self.encap {
            write!(f, " encap {kind}:")?;
            raw.iter().try_for_each(|b| write!(f, "{b:02x}"))?;
        }
        for (kind, raw) in &self.other {
            write!(f, " unknown {kind}:")?;
            raw.iter().try_for_each(|b| write!(f, "{b:02x}"))?;
        }
        Ok(())
    }
}

/// A nexthop query: `platform.nexthops().execute()`, every nexthop object (or those on one
/// device), in the kernel's order (by id).
#[derive(Debug)]
#[must_use = "a query does nothing until executed"]
pub struct NexthopQuery<'a> {
    platform: &'a Platform,
    dev: Option<Ifindex>,
    id: Option<u32>,
    master: Option<Ifindex>,
    groups: bool,
    fdb: bool,
    protocol: Option<Protocol>,
    family: Option<Family>,
}

impl Platform {
    /// Starts a nexthop query.
    pub fn nexthops(&self) -> NexthopQuery<'_> {
        NexthopQuery {
            platform: self,
            dev: None,
            id: None,
            master: None,
            groups: false,
            fdb: false,
            protocol: None,
            family: None,
        }
    }
}

impl NexthopQuery<'_> {
    /// Only the nexthops on this device (`ip nexthop show dev D`; groups have none).
    pub fn dev(mut self, ifindex: Ifindex) -> Self {
        self.dev = Some(ifindex);
        self
    }

    /// Only the nexthop with this id.
    pub fn id(mut self, id: u32) -> Self {
        self.id = Some(id);
        self
    }

    /// Only the nexthops on the ports of this master device, such as a VRF (`ip nexthop
    /// show master D` or `vrf D`; the kernel selects them).
    pub fn master(mut self, ifindex: Ifindex) -> Self {
        self.master = Some(ifindex);
        self
    }

    /// Only groups (`ip nexthop show groups`; the kernel selects them).
    pub fn groups(mut self) -> Self {
        self.groups = true;
        self
    }

    /// Only FDB nexthops (`ip nexthop show fdb`; the kernel selects them, and the answer is
    /// the kernel's, as `ip`'s is).
    pub fn fdb(mut self) -> Self {
        self.fdb = true;
        self
    }

    /// Only the nexthops of this protocol (`ip nexthop show protocol P`).
    pub fn protocol(mut self, protocol: Protocol) -> Self {
        self.protocol = Some(protocol);
        self
    }

    /// Only the nexthops of this family (`ip -4 nexthop`): groups, which have none, are left
    /// out, as `ip` leaves them out.
    pub fn family(mut self, family: Family) -> Self {
        self.family = Some(family);
        self
    }

    /// Runs the query. A kernel without nexthop objects (before 5.3) gives an empty answer.
    pub fn execute(self) -> Result<Answer<Nexthop>> {
        let mut collect = Collect::new();
        let report = self.visit(&mut collect)?;
        Ok(collect.answer(report))
    }

    /// Runs the query, handing each nexthop that passes its filters to `visitor` as the dump
    /// arrives ([`NexthopQuery::execute`] is this with a visitor that collects). A kernel
    /// without nexthop objects (before 5.3) visits none.
    pub fn visit<V: Visitor<Nexthop>>(
        self,
        visitor: &mut V,
    ) -> std::result::Result<VisitReport, V::Error> {
        let filtered = self.dev.is_some()
            || self.id.is_some()
            || self.master.is_some()
            || self.groups
            || self.fdb
            || self.protocol.is_some()
            || self.family.is_some();
        let mut report = VisitReport::new(filtered, false);
        let result = visit_dump(
            self.platform,
            false,
            |buf, seq| {
                let mut msg = MsgWriter::new(
                    buf,
                    wire::RTM_GETNEXTHOP,
                    wire::NLM_F_REQUEST | wire::NLM_F_DUMP,
                    seq,
                );
                msg.raw(&[0u8; NHMSG_LEN]);
                if let Some(master) = self.master {
                    msg.attr_u32(NHA_MASTER, master.into());
                }
                if self.groups {
                    msg.attr(NHA_GROUPS, &[]);
                }
                if self.fdb {
                    msg.attr(NHA_FDB, &[]);
                }
                msg.finish();
            },
            Nexthop::parse,
            |nh| {
                self.dev.is_none_or(|dev| nh.oif() == Some(dev))
                    && self.id.is_none_or(|id| nh.id() == id)
                    && self.protocol.is_none_or(|p| nh.protocol() == p)
                    && self.family.is_none_or(|f| nh.family() == Some(f))
            },
            visitor,
            &mut report,
            |err| matches!(err, Error::Kernel(err) if err.errno == libc::EOPNOTSUPP),
        );
        result.map(|()| report)
    }
}

/// `AF_BRIDGE`: FDB nexthops may carry it.
const AF_BRIDGE: u8 = 7;
/// The nested bit of an attribute type.
const NLA_F_NESTED: u16 = 1 << 15;

fn bad_attr(kind: u16) -> Error {
    Error::malformed(format!("nexthop attribute {kind} has a wrong size"))
}

fn parse_group(value: &[u8]) -> Result<Vec<GroupMember>> {
    if !value.len().is_multiple_of(NEXTHOP_GRP_LEN) {
        return Err(bad_attr(NHA_GROUP));
    }
    Ok(value
        .chunks_exact(NEXTHOP_GRP_LEN)
        .map(|entry| GroupMember {
            id: wire::u32_at(entry, 0),
            // `weight` then `weight_high` (since Linux 6.12; zero before): weight minus one.
            weight: (u32::from(entry[5]) << 8 | u32::from(entry[4])) + 1,
        })
        .collect())
}

/// The parameters of a resilient group, and whether every one of them was decoded.
fn parse_resilient(value: &[u8]) -> Result<(Resilient, bool)> {
    let mut res = Resilient::default();
    let mut complete = true;
    let mut nlas = Nlas::new(value);
    for (kind, value) in &mut nlas {
        match (kind, value.len()) {
            (NHA_RES_GROUP_BUCKETS, 2) => res.buckets = Some(wire::u16_at(value, 0)),
            (NHA_RES_GROUP_IDLE_TIMER, 4) => res.idle_timer = nla_u32(value),
            (NHA_RES_GROUP_UNBALANCED_TIMER, 4) => res.unbalanced_timer = nla_u32(value),
            (NHA_RES_GROUP_UNBALANCED_TIME, 8) => {
                let mut bytes = [0u8; 8];
                bytes.copy_from_slice(value);
                res.unbalanced_time = Some(u64::from_ne_bytes(bytes));
            }
            // NHA_RES_GROUP_PAD: alignment only.
            (0, _) => {}
            _ => complete = false,
        }
    }
    if nlas.malformed() {
        return Err(Error::malformed(
            "resilient group attribute overruns its nest",
        ));
    }
    Ok((res, complete))
}

#[cfg(test)]
mod tests;
