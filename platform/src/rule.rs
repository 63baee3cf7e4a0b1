//! Routing policy rules (`ip rule`), IPv4 and IPv6.

use std::net::IpAddr;

use crate::error::{Error, Result};
use crate::route::Family;
use crate::wire::{self, AF_INET, AF_INET6, Nlas, nla_str, nla_u8, nla_u32};

const FRA_DST: u16 = 1;
const FRA_SRC: u16 = 2;
const FRA_IIFNAME: u16 = 3;
const FRA_GOTO: u16 = 4;
const FRA_PRIORITY: u16 = 6;
const FRA_FWMARK: u16 = 10;
const FRA_TABLE: u16 = 15;
const FRA_FWMASK: u16 = 16;
const FRA_OIFNAME: u16 = 17;
const FRA_PROTOCOL: u16 = 21;

/// Length of `struct fib_rule_hdr`.
const FIB_RULE_HDR_LEN: usize = 12;

/// Rule action `FR_ACT_TO_TBL` (look up a table).
pub const FR_ACT_TO_TBL: u8 = 1;

/// A routing policy rule.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Rule {
    family: Family,
    dst: Option<(IpAddr, u8)>,
    src: Option<(IpAddr, u8)>,
    tos: u8,
    action: u8,
    flags: u32,
    table: u32,
    priority: u32,
    iifname: Option<Box<str>>,
    oifname: Option<Box<str>>,
    fwmark: Option<u32>,
    fwmask: Option<u32>,
    goto: Option<u32>,
    protocol: u8,
    /// Attributes this crate does not decode (port ranges, uid range, l3mdev, ...).
    other: Vec<(u16, Box<[u8]>)>,
}

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
    pub fn table(&self) -> u32 {
        self.table
    }
    /// The priority (rules are evaluated in increasing priority).
    pub fn priority(&self) -> u32 {
        self.priority
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
    pub fn fwmark(&self) -> Option<(u32, Option<u32>)> {
        self.fwmark.map(|mark| (mark, self.fwmask))
    }
    /// The target priority of a `goto` rule.
    pub fn goto(&self) -> Option<u32> {
        self.goto
    }
    /// The protocol that installed the rule (`RTPROT_*`).
    pub fn protocol(&self) -> u8 {
        self.protocol
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
            priority: 0,
            iifname: None,
            oifname: None,
            fwmark: None,
            fwmask: None,
            goto: None,
            protocol: 0,
            other: Vec::new(),
        };
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
                FRA_PRIORITY => rule.priority = nla_u32(value).unwrap_or(0),
                FRA_FWMARK => rule.fwmark = nla_u32(value),
                FRA_FWMASK => rule.fwmask = nla_u32(value),
                FRA_TABLE => rule.table = nla_u32(value).unwrap_or(rule.table),
                FRA_PROTOCOL => rule.protocol = nla_u8(value).unwrap_or(0),
                _ => rule.other.push((kind, value.into())),
            }
        }
        if nlas.malformed() {
            return Err(Error::malformed("rule attribute overruns its message"));
        }
        Ok(Some(rule))
    }
}
