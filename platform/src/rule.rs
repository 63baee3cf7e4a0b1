//! Routing policy rules (`ip rule`), IPv4 and IPv6.

use std::net::IpAddr;

use crate::error::{Error, Result};
use crate::route::Family;
use crate::types::{Protocol, Table};
use crate::wire::{self, AF_INET, AF_INET6, MsgWriter, Nlas, nla_str, nla_u8, nla_u32};

const FRA_DST: u16 = 1;
const FRA_SRC: u16 = 2;
const FRA_IIFNAME: u16 = 3;
const FRA_GOTO: u16 = 4;
const FRA_PRIORITY: u16 = 6;
const FRA_FWMARK: u16 = 10;
const FRA_FLOW: u16 = 11;
const FRA_TUN_ID: u16 = 12;
const FRA_SUPPRESS_IFGROUP: u16 = 13;
const FRA_SUPPRESS_PREFIXLEN: u16 = 14;
const FRA_TABLE: u16 = 15;
const FRA_FWMASK: u16 = 16;
const FRA_OIFNAME: u16 = 17;
const FRA_L3MDEV: u16 = 19;
const FRA_UID_RANGE: u16 = 20;
const FRA_PROTOCOL: u16 = 21;
const FRA_IP_PROTO: u16 = 22;
const FRA_SPORT_RANGE: u16 = 23;
const FRA_DPORT_RANGE: u16 = 24;
const FRA_DSCP: u16 = 25;
const FRA_FLOWLABEL: u16 = 26;
const FRA_FLOWLABEL_MASK: u16 = 27;
const FRA_SPORT_MASK: u16 = 28;
const FRA_DPORT_MASK: u16 = 29;
const FRA_DSCP_MASK: u16 = 30;

/// Length of `struct fib_rule_hdr`.
const FIB_RULE_HDR_LEN: usize = 12;

/// Rule action `FR_ACT_TO_TBL` (look up a table).
pub const FR_ACT_TO_TBL: u8 = 1;

/// Rule flag `FIB_RULE_INVERT` (`not`).
pub const FIB_RULE_INVERT: u32 = 0x2;
/// Rule flag `FIB_RULE_UNRESOLVED` (a `goto` whose target does not exist).
pub const FIB_RULE_UNRESOLVED: u32 = 0x4;
/// Rule flag `FIB_RULE_IIF_DETACHED` (the input interface does not exist).
pub const FIB_RULE_IIF_DETACHED: u32 = 0x8;
/// Rule flag `FIB_RULE_OIF_DETACHED` (the output interface does not exist).
pub const FIB_RULE_OIF_DETACHED: u32 = 0x10;

/// A routing policy rule, with every selector the kernel reports.
///
/// Equality (and so the cache's identity) covers every field: two rules at one priority that
/// differ in any selector, or in `not`, are two objects.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Rule {
    family: Family,
    dst: Option<(IpAddr, u8)>,
    src: Option<(IpAddr, u8)>,
    tos: u8,
    action: u8,
    flags: u32,
    table: u32,
    /// `FRA_PRIORITY` when the message has it: the kernel leaves it out at priority 0, and
    /// a request without it lets the kernel choose (add) or matches any priority (delete).
    priority: Option<u32>,
    iifname: Option<Box<str>>,
    oifname: Option<Box<str>>,
    fwmark: Option<u32>,
    fwmask: Option<u32>,
    goto: Option<u32>,
    protocol: u8,
    /// The rarely set selectors, boxed.
    more: Option<Box<RuleMore>>,
}

/// What identifies a rule in the kernel: see [`Rule::id`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RuleId(Rule);

/// The less common selectors of a rule.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
struct RuleMore {
    flow: Option<u32>,
    tun_id: Option<u64>,
    suppress_ifgroup: Option<u32>,
    suppress_prefixlen: Option<u32>,
    l3mdev: Option<u8>,
    uid_range: Option<(u32, u32)>,
    ip_proto: Option<u8>,
    sport: Option<(u16, u16)>,
    dport: Option<(u16, u16)>,
    dscp: Option<u8>,
    dscp_mask: Option<u8>,
    sport_mask: Option<u16>,
    dport_mask: Option<u16>,
    flowlabel: Option<(u32, Option<u32>)>,
    /// Attributes this crate does not decode: type and payload.
    other: Vec<(u16, Box<[u8]>)>,
}

static NO_MORE: RuleMore = RuleMore {
    flow: None,
    tun_id: None,
    suppress_ifgroup: None,
    suppress_prefixlen: None,
    l3mdev: None,
    uid_range: None,
    ip_proto: None,
    sport: None,
    dport: None,
    dscp: None,
    dscp_mask: None,
    sport_mask: None,
    dport_mask: None,
    flowlabel: None,
    other: Vec::new(),
};

impl Rule {
    /// The address family.
    pub fn family(&self) -> Family {
        self.family
    }
    /// The destination prefix, if the rule matches on one.
    pub fn dst(&self) -> Option<(IpAddr, u8)> {
        self.dst
    }
    /// The source prefix, if the rule matches on one.
    pub fn src(&self) -> Option<(IpAddr, u8)> {
        self.src
    }
    /// The TOS matched.
    pub fn tos(&self) -> u8 {
        self.tos
    }
    /// The action (`FR_ACT_*`).
    pub fn action(&self) -> u8 {
        self.action
    }
    /// The `FIB_RULE_*` flags.
    pub fn flags(&self) -> u32 {
        self.flags
    }
    /// The table looked up.
    pub fn table(&self) -> Table {
        Table(self.table)
    }
    /// The priority (rules are evaluated in increasing priority).
    pub fn priority(&self) -> u32 {
        self.priority.unwrap_or(0)
    }
    /// The input interface matched, if any.
    pub fn iifname(&self) -> Option<&str> {
        self.iifname.as_deref()
    }
    /// The output interface matched, if any.
    pub fn oifname(&self) -> Option<&str> {
        self.oifname.as_deref()
    }
    /// The firewall mark and mask matched, if any.
    ///
    /// The kernel reports a mark of 0 by its mask alone (`fwmark 0/0xff`): that is `(0, mask)`.
    pub fn fwmark(&self) -> Option<(u32, Option<u32>)> {
        match (self.fwmark, self.fwmask) {
            (None, None) => None,
            (mark, mask) => Some((mark.unwrap_or(0), mask)),
        }
    }
    /// The target priority of a `goto` rule.
    pub fn goto(&self) -> Option<u32> {
        self.goto
    }
    /// The protocol that installed the rule (`RTPROT_*`).
    pub fn protocol(&self) -> Protocol {
        Protocol(self.protocol)
    }

    /// What identifies the rule in the kernel: every selector, the action and the flags it
    /// was made with, but not the flags the kernel changes by itself without an event
    /// (`unresolved` when a goto's target comes or goes, `iif`/`oif` `detached` when the named
    /// interface does), so that the rule's deletion finds it whatever they were when it was
    /// read.
    pub fn id(&self) -> RuleId {
        let mut rule = self.clone();
        rule.flags &= !(FIB_RULE_UNRESOLVED | FIB_RULE_IIF_DETACHED | FIB_RULE_OIF_DETACHED);
        RuleId(rule)
    }

    /// This rule with the flags the kernel changes by itself set to what the kernel now
    /// reports (see [`Rule::id`]), or `None` when they are already.
    pub(crate) fn with_state_flags(
        &self,
        unresolved: bool,
        iif_detached: bool,
        oif_detached: bool,
    ) -> Option<Rule> {
        let mut flags =
            self.flags & !(FIB_RULE_UNRESOLVED | FIB_RULE_IIF_DETACHED | FIB_RULE_OIF_DETACHED);
        for (on, bit) in [
            (unresolved, FIB_RULE_UNRESOLVED),
            (iif_detached, FIB_RULE_IIF_DETACHED),
            (oif_detached, FIB_RULE_OIF_DETACHED),
        ] {
            if on {
                flags |= bit;
            }
        }
        (flags != self.flags).then(|| Rule {
            flags,
            ..self.clone()
        })
    }

    fn more(&self) -> &RuleMore {
        self.more.as_deref().unwrap_or(&NO_MORE)
    }

    /// `not`: the rule matches what its selectors do not.
    pub fn is_inverted(&self) -> bool {
        self.flags & FIB_RULE_INVERT != 0
    }
    /// The input interface does not exist (`iif X [detached]`).
    pub fn iif_detached(&self) -> bool {
        self.flags & FIB_RULE_IIF_DETACHED != 0
    }
    /// The output interface does not exist (`oif X [detached]`).
    pub fn oif_detached(&self) -> bool {
        self.flags & FIB_RULE_OIF_DETACHED != 0
    }
    /// A `goto` whose target does not exist (`[unresolved]`).
    pub fn is_unresolved(&self) -> bool {
        self.flags & FIB_RULE_UNRESOLVED != 0
    }
    /// The realms (`FRA_FLOW`: `from` in the high 16 bits, `to` in the low ones), if any.
    pub fn realms(&self) -> Option<u32> {
        self.more().flow
    }
    /// The tunnel id matched (`tun_id`), if any.
    pub fn tun_id(&self) -> Option<u64> {
        self.more().tun_id
    }
    /// `suppress_ifgroup`, if set.
    pub fn suppress_ifgroup(&self) -> Option<u32> {
        self.more()
            .suppress_ifgroup
            .filter(|group| *group != u32::MAX)
    }
    /// `suppress_prefixlength`, if set (the kernel reports `u32::MAX`, printed by nobody,
    /// when it is not; that value is kept too).
    pub fn suppress_prefixlen(&self) -> Option<u32> {
        self.more()
            .suppress_prefixlen
            .filter(|len| *len != u32::MAX)
    }
    /// `l3mdev`: look up the table of the packet's L3 master device.
    pub fn l3mdev(&self) -> bool {
        self.more().l3mdev.is_some_and(|value| value != 0)
    }
    /// The uid range matched (`uidrange A-B`), if any.
    pub fn uid_range(&self) -> Option<(u32, u32)> {
        self.more().uid_range
    }
    /// The IP protocol matched (`ipproto`), if any.
    pub fn ip_proto(&self) -> Option<u8> {
        self.more().ip_proto
    }
    /// The source port range matched (`sport A[-B]`), if any.
    pub fn sport(&self) -> Option<(u16, u16)> {
        self.more().sport
    }
    /// The destination port range matched (`dport A[-B]`), if any.
    pub fn dport(&self) -> Option<(u16, u16)> {
        self.more().dport
    }
    /// The DSCP matched (`dscp`), if the kernel reports one.
    pub fn dscp(&self) -> Option<u8> {
        self.more().dscp
    }
    /// The DSCP mask (`FRA_DSCP_MASK`), if reported.
    pub fn dscp_mask(&self) -> Option<u8> {
        self.more().dscp_mask
    }
    /// The source and destination port masks (`FRA_SPORT_MASK`, `FRA_DPORT_MASK`), if
    /// reported (`0xffff`: the whole port).
    pub fn port_masks(&self) -> (Option<u16>, Option<u16>) {
        (self.more().sport_mask, self.more().dport_mask)
    }
    /// The IPv6 flow label matched and its mask (`flowlabel`), if any.
    pub fn flowlabel(&self) -> Option<(u32, Option<u32>)> {
        self.more().flowlabel
    }
    /// Attributes this crate does not decode, as the kernel sent them: type and payload.
    pub fn unknown_attributes(&self) -> &[(u16, Box<[u8]>)] {
        &self.more().other
    }

    /// Parses an `RTM_NEWRULE`/`RTM_DELRULE` payload; `Ok(None)` for other families.
    pub fn parse(payload: &[u8]) -> Result<Option<Self>> {
        let Some(hdr) = payload.get(..FIB_RULE_HDR_LEN) else {
            return Err(Error::malformed("rule message shorter than fib_rule_hdr"));
        };
        let family = match hdr[0] {
            AF_INET => Family::V4,
            AF_INET6 => Family::V6,
            _ => return Ok(None),
        };
        let (dst_len, src_len) = (hdr[1], hdr[2]);
        let mut rule = Rule {
            family,
            dst: None,
            src: None,
            tos: hdr[3],
            action: hdr[7],
            flags: wire::u32_at(hdr, 8),
            table: u32::from(hdr[4]),
            priority: None,
            iifname: None,
            oifname: None,
            fwmark: None,
            fwmask: None,
            goto: None,
            protocol: 0,
            more: None,
        };
        let mut more = RuleMore::default();
        let ip = |value: &[u8]| -> Result<IpAddr> {
            match (family, value.len()) {
                (Family::V4, 4) => Ok(IpAddr::from(<[u8; 4]>::try_from(value).unwrap_or_default())),
                (Family::V6, 16) => Ok(IpAddr::from(
                    <[u8; 16]>::try_from(value).unwrap_or_default(),
                )),
                _ => Err(Error::malformed("rule address of wrong size")),
            }
        };
        let mut nlas = Nlas::new(&payload[FIB_RULE_HDR_LEN..]);
        for (kind, value) in &mut nlas {
            match kind {
                FRA_DST => rule.dst = Some((ip(value)?, dst_len)),
                FRA_SRC => rule.src = Some((ip(value)?, src_len)),
                FRA_IIFNAME => rule.iifname = Some(nla_str(value).into()),
                FRA_OIFNAME => rule.oifname = Some(nla_str(value).into()),
                FRA_GOTO => rule.goto = nla_u32(value),
                FRA_PRIORITY => rule.priority = nla_u32(value),
                FRA_FWMARK => rule.fwmark = nla_u32(value),
                FRA_FWMASK => rule.fwmask = nla_u32(value),
                FRA_TABLE => rule.table = nla_u32(value).unwrap_or(rule.table),
                FRA_PROTOCOL => rule.protocol = nla_u8(value).unwrap_or(0),
                FRA_FLOW if value.len() == 4 => more.flow = nla_u32(value),
                FRA_TUN_ID if value.len() == 8 => {
                    more.tun_id = Some(u64::from_be_bytes(value.try_into().unwrap_or_default()))
                }
                FRA_SUPPRESS_IFGROUP if value.len() == 4 => more.suppress_ifgroup = nla_u32(value),
                FRA_SUPPRESS_PREFIXLEN if value.len() == 4 => {
                    more.suppress_prefixlen = nla_u32(value)
                }
                FRA_L3MDEV if value.len() == 1 => more.l3mdev = nla_u8(value),
                FRA_UID_RANGE if value.len() == 8 => {
                    more.uid_range = Some((wire::u32_at(value, 0), wire::u32_at(value, 4)))
                }
                FRA_IP_PROTO if value.len() == 1 => more.ip_proto = nla_u8(value),
                FRA_SPORT_RANGE if value.len() == 4 => {
                    more.sport = Some((wire::u16_at(value, 0), wire::u16_at(value, 2)))
                }
                FRA_DPORT_RANGE if value.len() == 4 => {
                    more.dport = Some((wire::u16_at(value, 0), wire::u16_at(value, 2)))
                }
                FRA_DSCP if value.len() == 1 => more.dscp = nla_u8(value),
                FRA_DSCP_MASK if value.len() == 1 => more.dscp_mask = nla_u8(value),
                FRA_SPORT_MASK if value.len() == 2 => {
                    more.sport_mask = Some(wire::u16_at(value, 0))
                }
                FRA_DPORT_MASK if value.len() == 2 => {
                    more.dport_mask = Some(wire::u16_at(value, 0))
                }
                FRA_FLOWLABEL if value.len() == 4 => {
                    let label = u32::from_be_bytes(value.try_into().unwrap_or_default());
                    let mask = more.flowlabel.and_then(|(_, mask)| mask);
                    more.flowlabel = Some((label, mask));
                }
                FRA_FLOWLABEL_MASK if value.len() == 4 => {
                    let mask = u32::from_be_bytes(value.try_into().unwrap_or_default());
                    let label = more.flowlabel.map_or(0, |(label, _)| label);
                    more.flowlabel = Some((label, Some(mask)));
                }
                _ => more.other.push((kind, value.into())),
            }
        }
        if nlas.malformed() {
            return Err(Error::malformed("rule attribute overruns its message"));
        }
        if more != RuleMore::default() {
            rule.more = Some(Box::new(more));
        }
        Ok(Some(rule))
    }
}

/// Building a rule to add or delete (a [`Batch`](crate::Batch) item), the way `ip rule`
/// builds its request: what is not set is not sent. The kernel chooses the priority of an
/// added rule that has none, and a delete matches every rule that agrees with what is set
/// (`action` 0 and table 0 match any).
///
/// ```
/// use netmirror_platform::{FR_ACT_TO_TBL, Family, Rule, Table};
///
/// // ip rule add from 10.1.0.0/16 fwmark 0x10/0xff lookup 100 pref 1000
/// let rule = Rule::new(Family::V4)
///     .with_src("10.1.0.0".parse()?, 16)
///     .with_fwmark(0x10, Some(0xff))
///     .with_action(FR_ACT_TO_TBL)
///     .with_table(Table(100))
///     .with_priority(1000);
/// assert_eq!(rule.to_string(), "1000:\tfrom 10.1.0.0/16 fwmark 0x10/0xff lookup 100");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
impl Rule {
    /// A rule of `family` with nothing set: no selector, action 0, table 0, no priority.
    pub fn new(family: Family) -> Self {
        Rule {
            family,
            dst: None,
            src: None,
            tos: 0,
            action: 0,
            flags: 0,
            table: 0,
            priority: None,
            iifname: None,
            oifname: None,
            fwmark: None,
            fwmask: None,
            goto: None,
            protocol: 0,
            more: None,
        }
    }

    /// The same rule in `family` (a batch line learns it from its addresses).
    pub(crate) fn with_family(mut self, family: Family) -> Self {
        self.family = family;
        self
    }

    fn more_mut(&mut self) -> &mut RuleMore {
        self.more.get_or_insert_with(Box::default)
    }

    /// Matches packets from `addr/len` (`from`).
    pub fn with_src(mut self, addr: IpAddr, len: u8) -> Self {
        self.src = Some((addr, len));
        self
    }
    /// Matches packets to `addr/len` (`to`).
    pub fn with_dst(mut self, addr: IpAddr, len: u8) -> Self {
        self.dst = Some((addr, len));
        self
    }
    /// Matches the TOS byte (`tos`).
    pub fn with_tos(mut self, tos: u8) -> Self {
        self.tos = tos;
        self
    }
    /// The action (`FR_ACT_*`: [`FR_ACT_TO_TBL`] looks up the table; 6, 7, 8 are
    /// `blackhole`, `unreachable`, `prohibit`).
    pub fn with_action(mut self, action: u8) -> Self {
        self.action = action;
        self
    }
    /// The `FIB_RULE_*` flags ([`FIB_RULE_INVERT`] is `not`).
    pub fn with_flags(mut self, flags: u32) -> Self {
        self.flags = flags;
        self
    }
    /// The table looked up (`lookup`).
    pub fn with_table(mut self, table: Table) -> Self {
        self.table = table.0;
        self
    }
    /// The priority (`pref`); 0 is a priority too, sent as such.
    pub fn with_priority(mut self, priority: u32) -> Self {
        self.priority = Some(priority);
        self
    }
    /// Matches the input interface by name (`iif`).
    pub fn with_iifname(mut self, name: &str) -> Self {
        self.iifname = Some(name.into());
        self
    }
    /// Matches the output interface by name (`oif`).
    pub fn with_oifname(mut self, name: &str) -> Self {
        self.oifname = Some(name.into());
        self
    }
    /// Matches the firewall mark, under `mask` when given (`fwmark M[/MASK]`).
    pub fn with_fwmark(mut self, mark: u32, mask: Option<u32>) -> Self {
        self.fwmark = Some(mark);
        self.fwmask = mask;
        self
    }
    /// Jumps to the rule of priority `target` (`goto`): sets the action too.
    pub fn with_goto(mut self, target: u32) -> Self {
        self.goto = Some(target);
        self.action = FR_ACT_GOTO;
        self
    }
    /// The protocol that installs the rule (`proto`).
    pub fn with_protocol(mut self, protocol: Protocol) -> Self {
        self.protocol = protocol.0;
        self
    }
    /// The realms (`realms`: `from` in the high 16 bits, `to` in the low ones).
    pub fn with_realms(mut self, realms: u32) -> Self {
        self.more_mut().flow = Some(realms);
        self
    }
    /// Matches the tunnel id (`tun_id`).
    pub fn with_tun_id(mut self, id: u64) -> Self {
        self.more_mut().tun_id = Some(id);
        self
    }
    /// Rejects the lookup's answer when its prefix is this long or shorter
    /// (`suppress_prefixlength`).
    pub fn with_suppress_prefixlen(mut self, len: u32) -> Self {
        self.more_mut().suppress_prefixlen = Some(len);
        self
    }
    /// Rejects the lookup's answer when its device is in this group (`suppress_ifgroup`).
    pub fn with_suppress_ifgroup(mut self, group: u32) -> Self {
        self.more_mut().suppress_ifgroup = Some(group);
        self
    }
    /// Looks up the table of the packet's L3 master device (`l3mdev`).
    pub fn with_l3mdev(mut self) -> Self {
        self.more_mut().l3mdev = Some(1);
        self
    }
    /// Matches the socket's uid range (`uidrange A-B`).
    pub fn with_uid_range(mut self, start: u32, end: u32) -> Self {
        self.more_mut().uid_range = Some((start, end));
        self
    }
    /// Matches the IP protocol (`ipproto`).
    pub fn with_ip_proto(mut self, proto: u8) -> Self {
        self.more_mut().ip_proto = Some(proto);
        self
    }
    /// Matches the source port range, under `mask` when given (`sport A[-B]`, `sport P/MASK`).
    pub fn with_sport(mut self, range: (u16, u16), mask: Option<u16>) -> Self {
        let more = self.more_mut();
        more.sport = Some(range);
        more.sport_mask = mask;
        self
    }
    /// Matches the destination port range, under `mask` when given (`dport`).
    pub fn with_dport(mut self, range: (u16, u16), mask: Option<u16>) -> Self {
        let more = self.more_mut();
        more.dport = Some(range);
        more.dport_mask = mask;
        self
    }
    /// Matches the DSCP, under `mask` when given (`dscp D[/MASK]`).
    pub fn with_dscp(mut self, dscp: u8, mask: Option<u8>) -> Self {
        let more = self.more_mut();
        more.dscp = Some(dscp);
        more.dscp_mask = mask;
        self
    }
    /// Matches the IPv6 flow label, under `mask` when given (`flowlabel L[/MASK]`).
    pub fn with_flowlabel(mut self, label: u32, mask: Option<u32>) -> Self {
        self.more_mut().flowlabel = Some((label, mask));
        self
    }

    /// Appends the request for `kind` (`RTM_NEWRULE`, `RTM_DELRULE`): the header and every
    /// attribute that is set, the flags without those the kernel sets by itself (see
    /// [`Rule::id`]), and the attributes this crate does not decode as they were read.
    pub(crate) fn emit(&self, buf: &mut Vec<u8>, kind: u16, flags: u16, seq: u32) {
        let mut msg = MsgWriter::new(buf, kind, flags, seq);
        let mut hdr = [0u8; FIB_RULE_HDR_LEN];
        hdr[0] = self.family.af();
        hdr[1] = self.dst.map_or(0, |(_, len)| len);
        hdr[2] = self.src.map_or(0, |(_, len)| len);
        hdr[3] = self.tos;
        // Tables past 255 go in `FRA_TABLE` only, as `ip` sends them.
        hdr[4] = u8::try_from(self.table).unwrap_or(0);
        hdr[7] = self.action;
        let flags =
            self.flags & !(FIB_RULE_UNRESOLVED | FIB_RULE_IIF_DETACHED | FIB_RULE_OIF_DETACHED);
        hdr[8..12].copy_from_slice(&flags.to_ne_bytes());
        msg.raw(&hdr);
        let octets = |ip: IpAddr| match ip {
            IpAddr::V4(v4) => v4.octets().to_vec(),
            IpAddr::V6(v6) => v6.octets().to_vec(),
        };
        let name = |name: &str| [name.as_bytes(), &[0]].concat();
        if let Some((addr, _)) = self.dst {
            msg.attr(FRA_DST, &octets(addr));
        }
        if let Some((addr, _)) = self.src {
            msg.attr(FRA_SRC, &octets(addr));
        }
        if let Some(iif) = &self.iifname {
            msg.attr(FRA_IIFNAME, &name(iif));
        }
        if let Some(oif) = &self.oifname {
            msg.attr(FRA_OIFNAME, &name(oif));
        }
        for (kind, value) in [
            (FRA_GOTO, self.goto),
            (FRA_PRIORITY, self.priority),
            (FRA_FWMARK, self.fwmark),
            (FRA_FWMASK, self.fwmask),
            (FRA_TABLE, Some(self.table).filter(|table| *table > 255)),
        ] {
            if let Some(value) = value {
                msg.attr_u32(kind, value);
            }
        }
        if self.protocol != 0 {
            msg.attr(FRA_PROTOCOL, &[self.protocol]);
        }
        let more = self.more();
        for (kind, value) in [
            (FRA_FLOW, more.flow),
            (FRA_SUPPRESS_IFGROUP, more.suppress_ifgroup),
            (FRA_SUPPRESS_PREFIXLEN, more.suppress_prefixlen),
        ] {
            if let Some(value) = value {
                msg.attr_u32(kind, value);
            }
        }
        if let Some(id) = more.tun_id {
            msg.attr(FRA_TUN_ID, &id.to_be_bytes());
        }
        for (kind, value) in [
            (FRA_L3MDEV, more.l3mdev),
            (FRA_IP_PROTO, more.ip_proto),
            (FRA_DSCP, more.dscp),
            (FRA_DSCP_MASK, more.dscp_mask),
        ] {
            if let Some(value) = value {
                msg.attr(kind, &[value]);
            }
        }
        if let Some((start, end)) = more.uid_range {
            msg.attr(
                FRA_UID_RANGE,
                &[start.to_ne_bytes(), end.to_ne_bytes()].concat(),
            );
        }
        for (kind, range) in [(FRA_SPORT_RANGE, more.sport), (FRA_DPORT_RANGE, more.dport)] {
            if let Some((start, end)) = range {
                msg.attr(kind, &[start.to_ne_bytes(), end.to_ne_bytes()].concat());
            }
        }
        for (kind, mask) in [
            (FRA_SPORT_MASK, more.sport_mask),
            (FRA_DPORT_MASK, more.dport_mask),
        ] {
            if let Some(mask) = mask {
                msg.attr(kind, &mask.to_ne_bytes());
            }
        }
        if let Some((label, mask)) = more.flowlabel {
            msg.attr(FRA_FLOWLABEL, &label.to_be_bytes());
            if let Some(mask) = mask {
                msg.attr(FRA_FLOWLABEL_MASK, &mask.to_be_bytes());
            }
        }
        for (kind, value) in &more.other {
            msg.attr(*kind, value);
        }
        msg.finish();
    }
}

/// `ip rule`'s line for the rule: `PRIORITY:\tSELECTORS ACTION`, e.g.
/// `100:\tnot from all fwmark 0xca6c lookup 51820`.
impl std::fmt::Display for Rule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&crate::text::rule_text(self, false))
    }
}

impl Rule {
    /// The words `ip rule` prints after the priority, in its order: `not`, `from`, `to`,
    /// `tos`, `fwmark`, `iif`, `oif`, `l3mdev`, `uidrange`, `ipproto`, `sport`, `dport`,
    /// `tun_id`, `lookup` (with `suppress_*`), `realms`, the action, `proto`, `dscp`,
    /// `flowlabel`.
    pub fn selectors(&self) -> Vec<String> {
        self.selector_words(false)
    }

    /// [`selectors`](Self::selectors), and with `details` as `ip -d rule` prints them: `proto`
    /// whatever the protocol (`unspec`, `kernel` too).
    pub(crate) fn selector_words(&self, details: bool) -> Vec<String> {
        use crate::names;
        let mut out = Vec::new();
        if self.is_inverted() {
            out.push("not".to_owned());
        }
        out.push(format!("from {}", names::rule_prefix(self.src)));
        if self.dst.is_some() {
            out.push(format!("to {}", names::rule_prefix(self.dst)));
        }
        if self.tos != 0 {
            out.push(format!("tos {}", names::dsfield(self.tos)));
        }
        // Hex as `ip` prints it (`%#x`: 0 is `0`).
        let hex = |value: u32| names::c_hex(value.into());
        if let Some((mark, mask)) = self.fwmark() {
            match mask {
                Some(mask) if mask != u32::MAX => {
                    out.push(format!("fwmark {}/{}", hex(mark), hex(mask)))
                }
                _ => out.push(format!("fwmark {}", hex(mark))),
            }
        }
        let detached = |yes: bool| if yes { " [detached]" } else { "" };
        if let Some(iif) = self.iifname() {
            out.push(format!("iif {iif}{}", detached(self.iif_detached())));
        }
        if let Some(oif) = self.oifname() {
            out.push(format!("oif {oif}{}", detached(self.oif_detached())));
        }
        if self.l3mdev() {
            out.push("lookup [l3mdev-table]".to_owned());
        }
        if let Some((start, end)) = self.uid_range() {
            out.push(format!("uidrange {start}-{end}"));
        }
        if let Some(proto) = self.ip_proto() {
            out.push(format!("ipproto {}", names::ip_proto(proto)));
        }
        let (sport_mask, dport_mask) = self.port_masks();
        for (word, range, mask) in [
            ("sport", self.sport(), sport_mask),
            ("dport", self.dport(), dport_mask),
        ] {
            match (range, mask) {
                // A masked port in hex, as `ip` prints it.
                (Some((start, end)), Some(mask)) if start == end && mask != u16::MAX => {
                    out.push(format!("{word} {}/{}", hex(start.into()), hex(mask.into())))
                }
                (Some((start, end)), _) if start == end => out.push(format!("{word} {start}")),
                (Some((start, end)), _) => out.push(format!("{word} {start}-{end}")),
                (None, _) => {}
            }
        }
        if let Some(id) = self.tun_id() {
            out.push(format!("tun_id {id}"));
        }
        if self.table != 0 {
            out.push(format!("lookup {}", names::table_name(self.table)));
            if let Some(len) = self.suppress_prefixlen() {
                out.push(format!("suppress_prefixlength {}", len as i32));
            }
            if let Some(group) = self.suppress_ifgroup() {
                out.push(format!("suppress_ifgroup {}", names::group(group)));
            }
        }
        if let Some(flow) = self.realms() {
            out.push(format!("realms {}", names::realms(flow)));
        }
        match self.action {
            FR_ACT_TO_TBL => {}
            FR_ACT_GOTO => {
                match self.goto {
                    Some(target) => out.push(format!("goto {target}")),
                    None => out.push("goto none".to_owned()),
                }
                if self.is_unresolved() {
                    out.push("[unresolved]".to_owned());
                }
            }
            action => out.push(names::rule_action(action).into_owned()),
        }
        // As `ip rule` without `-d`: neither `unspec` nor `kernel` is printed.
        if details || (self.protocol != 0 && self.protocol != Protocol::KERNEL.0) {
            out.push(format!("proto {}", names::protocol(self.protocol)));
        }
        // As iproute2 6.14 and later print them: last.
        if let Some(dscp) = self.dscp() {
            match self.dscp_mask() {
                Some(mask) if mask != 0x3f => {
                    out.push(format!("dscp {}/{}", hex(dscp.into()), hex(mask.into())))
                }
                _ => out.push(format!("dscp {}", names::dscp(dscp))),
            }
        }
        if let Some((label, mask)) = self.flowlabel() {
            match mask {
                Some(mask) if mask != 0xfffff => {
                    out.push(format!("flowlabel {}/{}", hex(label), hex(mask)))
                }
                _ => out.push(format!("flowlabel {}", hex(label))),
            }
        }
        for (kind, value) in self.unknown_attributes() {
            out.push(format!("attr{kind} {}", names::hex(value)));
        }
        out
    }
}

/// Rule action `FR_ACT_GOTO`.
pub(crate) const FR_ACT_GOTO: u8 = 2;
/// Rule action `FR_ACT_NOP`.
pub(crate) const FR_ACT_NOP: u8 = 3;
