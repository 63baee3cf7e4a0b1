//! `ip -batch` lines read into [`Item`]s, for programs that take changes in iproute2's words.
//!
//! Each line is an `ip` command line without the `ip` (`route add 10.1.0.0/16 via 192.0.2.1`,
//! `addr del 192.0.2.7/24 dev eth0`). [`parse_line`] reads one with the names `ip` accepts
//! (tables, also from `rt_tables`; protocols; route types; scopes) and fills in what `ip` would
//! choose when a word is left out: table `main` (`local` for local and broadcast routes),
//! protocol `boot`, and the scope that fits the route. A delete leaves the protocol, scope and
//! type it is not given as wildcards, as `ip route del` does. [`parse`] reads a whole file as
//! `ip -batch` does (`#` comments, `\` continuation lines, quoted words), skipping blank
//! commands and numbering the rest.
//!
//! `route`, `addr`, `nexthop` and `rule` lines are understood, with the commands `ip` takes for
//! them that a [`Batch`](crate::Batch) can send: `add`, `del`, `replace`, `change`, `append`,
//! `prepend` (rules: `add` and `del`). Anything else is a [`ParseError`] naming the offending
//! word, never a panic.
//!
//! ```
//! use netmirror_platform::{Ifindex, Item, Op, ipbatch};
//!
//! // Device names are resolved by the caller, from a link dump for example.
//! let ifindex = |name: &str| (name == "eth0").then_some(Ifindex(2));
//! let Item::Route(op, route) = ipbatch::parse_line("route add 10.1.0.0/16 dev eth0 metric 7", &ifindex)?
//! else {
//!     panic!("a route line is a route");
//! };
//! assert_eq!(op, Op::Add);
//! assert_eq!((route.oif(), route.priority()), (Some(Ifindex(2)), 7));
//!
//! let err = ipbatch::parse_line("route add 10.1.0.0/16 dev eth9", &ifindex).unwrap_err();
//! assert_eq!(err.token(), Some("eth9"));
//! assert_eq!(err.to_string(), "cannot find device \"eth9\"");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::borrow::Cow;
use std::net::{IpAddr, Ipv4Addr};

use crate::addr::Address;
use crate::batch::{Item, Op};
use crate::names::{self, c_number};
use crate::nexthop::{GroupMember, NEXTHOP_GRP_TYPE_RES, Nexthop, RTNH_F_ONLINK};
use crate::route::{Encap, Family, NextHop, Route};
use crate::rule::{FIB_RULE_INVERT, FR_ACT_TO_TBL, Rule};
use crate::types::{Ifindex, Protocol, RouteType, Scope, Table};

/// Why a line is not a change `ip` would make; carries the offending word when there is one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ParseError {
    /// The line has no words.
    #[error("empty line")]
    Empty,
    /// A word starts with a quote that does not end (`ip` refuses it too).
    #[error("unterminated quoted string `{0}`")]
    UnterminatedQuote(String),
    /// The file's last line ends in `\`: the command it starts never ends.
    #[error("missing continuation line (the last line ends with `\\`)")]
    MissingContinuation,
    /// The object is not followed by a command.
    #[error("missing command (add, del, replace, change, append or prepend)")]
    MissingCommand,
    /// The command is not one `ip` takes for the object (`add`, `del`, `replace`; `change` for
    /// routes and addresses; `append` and `prepend` for routes).
    #[error("unknown command `{0}` (expected add, del, replace, change, append or prepend)")]
    UnknownCommand(String),
    /// The object is not `route`, `addr`, `nexthop` or `rule`.
    #[error("unknown object `{0}` (expected route, addr, nexthop or rule)")]
    UnknownObject(String),
    /// A route line ends before its prefix.
    #[error("missing the route's prefix")]
    MissingPrefix,
    /// A route line names a second destination (`to`, a type or a prefix after the prefix).
    #[error("a second destination `{0}` (the route's prefix is given already)")]
    DuplicatePrefix(String),
    /// An address line ends before its address.
    #[error("missing the address")]
    MissingAddress,
    /// A keyword is the last word of the line.
    #[error("`{0}` needs a value")]
    MissingValue(String),
    /// A keyword `route` does not know (or does not support here).
    #[error("unknown route keyword `{0}`")]
    UnknownRouteKeyword(String),
    /// A keyword `addr` does not know (or does not support here).
    #[error("unknown address keyword `{0}`")]
    UnknownAddressKeyword(String),
    /// Not an IPv4 or IPv6 address.
    #[error("`{0}` is not an IP address")]
    BadAddress(String),
    /// The prefix length is not a number up to the family's address length.
    #[error("bad prefix length in `{0}`")]
    BadPrefixLength(String),
    /// The device resolver does not know this name.
    #[error("cannot find device \"{0}\"")]
    UnknownDevice(String),
    /// Neither a routing table's name nor a number.
    #[error("unknown table `{0}`")]
    UnknownTable(String),
    /// Neither a route protocol's name nor a number.
    #[error("unknown protocol `{0}`")]
    UnknownProtocol(String),
    /// Neither a scope's name nor a number.
    #[error("unknown scope `{0}`")]
    UnknownScope(String),
    /// The metric is not a 32-bit number.
    #[error("bad metric `{0}`")]
    BadMetric(String),
    /// The broadcast address of an IPv6 address.
    #[error("broadcast is IPv4 only")]
    BroadcastNotIpv4(String),
    /// The gateway's family is not the prefix's.
    #[error("the gateway's family differs from the prefix's")]
    GatewayFamily(String),
    /// The `via` family word does not match the address after it.
    #[error("`via {0}` names another family than its address")]
    ViaFamilyMismatch(String),
    /// The preferred source's family is not the prefix's (`ip` refuses it too).
    #[error("the source address's family differs from the prefix's")]
    SourceFamily(String),
    /// A unicast route to add names neither a gateway nor a device.
    #[error("a unicast route needs `via GATEWAY` or `dev DEVICE`")]
    NoNextHop,
    /// An address without its device.
    #[error("an address needs `dev DEVICE`")]
    NoDevice,
    /// A rule line with nothing after its command (`ip` refuses it too).
    #[error("a rule needs a selector or an action")]
    EmptyRule,
    /// A keyword `rule` does not know (or does not support here).
    #[error("unknown rule keyword `{0}`")]
    UnknownRuleKeyword(String),
    /// A rule's address is not of the rule's family (`-4`, `-6`, or its other address).
    #[error("`{0}` is not of the rule's address family")]
    RuleFamily(String),
    /// A nexthop line without `id N` (or with an id that is not a number above 0).
    #[error("a nexthop needs `id N` (1 to 4294967295)")]
    NoNexthopId,
    /// A keyword `nexthop` does not know (or does not support here).
    #[error("unknown nexthop keyword `{0}`")]
    UnknownNexthopKeyword(String),
    /// A group member that is not `ID` or `ID,WEIGHT` (weight 1 to 65536).
    #[error("bad nexthop group member `{0}` (ID or ID,WEIGHT)")]
    BadGroupMember(String),
    /// A number that does not fit.
    #[error("bad number `{0}`")]
    BadNumber(String),
    /// A keyword's value is not one it takes (a weight, a metric, a realm, `pref`, ...).
    #[error("bad {keyword} `{value}`")]
    BadValue {
        /// The keyword.
        keyword: String,
        /// Its value as written.
        value: String,
    },
}

impl ParseError {
    /// The word of the line that is wrong, when one is.
    pub fn token(&self) -> Option<&str> {
        match self {
            ParseError::UnknownCommand(token)
            | ParseError::UnterminatedQuote(token)
            | ParseError::UnknownObject(token)
            | ParseError::MissingValue(token)
            | ParseError::UnknownRouteKeyword(token)
            | ParseError::DuplicatePrefix(token)
            | ParseError::UnknownAddressKeyword(token)
            | ParseError::BadAddress(token)
            | ParseError::BadPrefixLength(token)
            | ParseError::UnknownDevice(token)
            | ParseError::UnknownTable(token)
            | ParseError::UnknownProtocol(token)
            | ParseError::UnknownScope(token)
            | ParseError::BadMetric(token)
            | ParseError::BroadcastNotIpv4(token)
            | ParseError::GatewayFamily(token)
            | ParseError::UnknownNexthopKeyword(token)
            | ParseError::UnknownRuleKeyword(token)
            | ParseError::RuleFamily(token)
            | ParseError::BadGroupMember(token)
            | ParseError::BadNumber(token)
            | ParseError::BadValue { value: token, .. }
            | ParseError::ViaFamilyMismatch(token)
            | ParseError::SourceFamily(token) => Some(token),
            ParseError::Empty
            | ParseError::MissingContinuation
            | ParseError::MissingCommand
            | ParseError::MissingPrefix
            | ParseError::MissingAddress
            | ParseError::NoNextHop
            | ParseError::NoDevice
            | ParseError::NoNexthopId
            | ParseError::EmptyRule => None,
        }
    }
}

/// One command of a batch file (a line, or lines joined by a trailing `\`) that is not blank
/// or a comment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line<'a> {
    /// The number of its (first) line, from 1.
    pub number: usize,
    /// The command as written (continuation lines joined), without surrounding white space.
    pub text: Cow<'a, str>,
    /// What it asks for, or why it cannot be done.
    pub item: Result<Item, ParseError>,
}

/// Reads every command of a batch file as `ip -batch` reads them: a `#` and what follows it
/// is a comment, a line ending in `\` goes on with the next one, and blank commands are
/// skipped; the others come out numbered and parsed with [`parse_line`].
pub fn parse<'a>(
    text: &'a str,
    ifindex: &'a dyn Fn(&str) -> Option<Ifindex>,
) -> impl Iterator<Item = Line<'a>> + 'a {
    let mut raw = text.split_inclusive('\n').enumerate();
    std::iter::from_fn(move || {
        loop {
            let (idx, first) = raw.next()?;
            let mut text = Cow::Borrowed(first);
            let mut missing = false;
            while let Some(head) = continued(&text).map(str::len) {
                let joined = text.to_mut();
                joined.truncate(head);
                match raw.next() {
                    Some((_, next)) => joined.push_str(next),
                    None => {
                        missing = true;
                        break;
                    }
                }
            }
            if !missing && matches!(split_words(&text).as_deref(), Ok([])) {
                continue;
            }
            let item = if missing {
                Err(ParseError::MissingContinuation)
            } else {
                parse_line(&text, ifindex)
            };
            let text = match text {
                Cow::Borrowed(text) => Cow::Borrowed(text.trim()),
                Cow::Owned(text) => Cow::Owned(text.trim().to_owned()),
            };
            return Some(Line {
                number: idx + 1,
                text,
                item,
            });
        }
    })
}

/// When `line` (with its newline, if it has one) goes on with the next line, as `ip -batch`
/// reads it, the part that stays: the line ends in a backslash right before its newline, and
/// has no comment (a `#` cuts the newline too).
pub fn continued(line: &str) -> Option<&str> {
    if line.contains('#') {
        return None;
    }
    line.strip_suffix("\\\n")
}

/// The words of a command as `ip -batch` splits them: from the first `#` on is a comment;
/// words are separated by spaces, tabs, CRs and LFs; a word that starts with `'` or `"` runs
/// to the next such quote, white space included (an unterminated one is an error).
pub fn split_words(line: &str) -> Result<Vec<&str>, ParseError> {
    const WS: &[char] = &[' ', '\t', '\r', '\n'];
    let mut rest = line.split_once('#').map_or(line, |(command, _)| command);
    let mut words = Vec::new();
    loop {
        rest = rest.trim_start_matches(WS);
        let Some(first) = rest.chars().next() else {
            return Ok(words);
        };
        if first == '\'' || first == '"' {
            let (word, after) = rest[1..]
                .split_once(first)
                .ok_or_else(|| ParseError::UnterminatedQuote(rest.to_owned()))?;
            words.push(word);
            rest = after;
        } else {
            let end = rest.find(WS).unwrap_or(rest.len());
            words.push(&rest[..end]);
            rest = &rest[end..];
        }
    }
}

/// Reads one `ip` command line (`route add ...`, `addr del ...`) into a batch item;
/// `ifindex` resolves device names.
///
/// A `-4` or `-6` option anywhere is accepted: the addresses say the family of routes,
/// addresses and nexthops, and it is the family of a rule (IPv4 without it, unless its
/// `from` or `to` is IPv6).
pub fn parse_line(
    line: &str,
    ifindex: &dyn Fn(&str) -> Option<Ifindex>,
) -> Result<Item, ParseError> {
    parse_line_in(line, None, ifindex)
}

/// [`parse_line`] with a family for lines that give none, as `ip -6 -batch` gives every
/// line: a `-4` or `-6` of the line itself wins.
pub fn parse_line_in(
    line: &str,
    family: Option<Family>,
    ifindex: &dyn Fn(&str) -> Option<Ifindex>,
) -> Result<Item, ParseError> {
    let mut words = split_words(line)?;
    // The last family option wins, as in `ip`.
    let family = words
        .iter()
        .rev()
        .find_map(|word| match *word {
            "-4" => Some(Family::V4),
            "-6" => Some(Family::V6),
            _ => None,
        })
        .or(family);
    words.retain(|word| !matches!(*word, "-4" | "-6"));
    let (object, rest) = words.split_first().ok_or(ParseError::Empty)?;
    let (verb, args) = rest.split_first().ok_or(ParseError::MissingCommand)?;
    let op = match *verb {
        "add" => Op::Add,
        "del" | "delete" => Op::Delete,
        "replace" => Op::Replace,
        "change" | "chg" => Op::Change,
        "append" => Op::Append,
        "prepend" => Op::Prepend,
        other => return Err(ParseError::UnknownCommand(other.to_owned())),
    };
    // As `ip`: `append` and `prepend` are route commands, `change` a route and address one.
    let takes = match *object {
        "addr" | "address" | "a" => !matches!(op, Op::Append | Op::Prepend),
        "nexthop" | "nh" => !matches!(op, Op::Append | Op::Prepend | Op::Change),
        "rule" | "rul" | "ru" => matches!(op, Op::Add | Op::Delete),
        _ => true,
    };
    if !takes {
        return Err(ParseError::UnknownCommand((*verb).to_owned()));
    }
    match *object {
        "route" | "r" | "ro" => parse_route(op, args, ifindex).map(|route| Item::Route(op, route)),
        "addr" | "address" | "a" => {
            parse_addr(op, args, ifindex).map(|addr| Item::Address(op, addr))
        }
        "nexthop" | "nh" => parse_nexthop(op, args, ifindex).map(|nh| Item::Nexthop(op, nh)),
        "rule" | "rul" | "ru" => parse_rule(op, args, family).map(|rule| Item::Rule(op, rule)),
        other => Err(ParseError::UnknownObject(other.to_owned())),
    }
}

/// `[to] [TYPE] PREFIX|default [via [inet|inet6] GW] [dev DEV] [tos T] [table T] [metric N]
/// [proto P] [scope S] [src A] [onlink] [realm R] [pref P] [expires N] [METRIC [lock] VALUE]...
/// [encap ip|ip6 ...] [nexthop via GW dev DEV weight W [onlink] [realm R]]...`, the words in
/// any order (the destination too, as `ip` takes `route add dev eth0 10.0.0.0/24`).
fn parse_route(
    op: Op,
    args: &[&str],
    ifindex: &dyn Fn(&str) -> Option<Ifindex>,
) -> Result<Route, ParseError> {
    let delete = op == Op::Delete;
    let mut words = args.iter().copied().peekable();
    let mut kind = None;
    let mut prefix = None;
    let mut gateway = None;
    // The family word of `via inet6 ADDR`, when given: a gateway of the other family is then
    // an `RTA_VIA` next hop.
    let mut via_family: Option<&str> = None;
    let mut dev = None;
    let mut table = None;
    let mut metric = None;
    let mut proto = None;
    let mut scope = None;
    let mut prefsrc = None;
    let mut nh_id = None;
    let mut tos = None;
    let mut more = More::default();
    while let Some(keyword) = words.next() {
        match keyword {
            "onlink" | "pervasive" => {
                more.flags |= names::parse_route_flag(keyword).unwrap_or(0);
                continue;
            }
            "nexthop" => {
                more.hops.push(parse_hop(&mut words, ifindex)?);
                continue;
            }
            "encap" => {
                more.encap = Some(parse_encap(&mut words)?);
                continue;
            }
            _ => {}
        }
        let mut value = || {
            words
                .next()
                .ok_or_else(|| ParseError::MissingValue(keyword.to_owned()))
        };
        if let Some(kind) = names::parse_metric(keyword).filter(|kind| *kind > 1) {
            let mut number = value()?;
            let locked = number == "lock";
            if locked {
                number = value()?;
            }
            more.metrics
                .push((kind, metric_value(keyword, kind, number)?, locked));
            continue;
        }
        match keyword {
            "via" => {
                let mut address = value()?;
                if matches!(address, "inet" | "inet6") {
                    let family = address;
                    via_family = Some(family);
                    address =
                        value().map_err(|_| ParseError::MissingValue(format!("via {family}")))?;
                }
                gateway = Some(parse_addr_value(address)?)
            }
            "dev" | "oif" => dev = Some(resolve(ifindex, value()?)?),
            "table" => {
                let value = value()?;
                table = Some(Table(
                    names::parse_table(value)
                        .ok_or_else(|| ParseError::UnknownTable(value.to_owned()))?,
                ))
            }
            "metric" | "priority" | "preference" => metric = Some(parse_metric(value()?)?),
            "proto" | "protocol" => {
                let value = value()?;
                proto =
                    Some(Protocol(names::parse_protocol(value).ok_or_else(|| {
                        ParseError::UnknownProtocol(value.to_owned())
                    })?))
            }
            "scope" => {
                let value = value()?;
                scope = Some(Scope(
                    names::parse_scope(value)
                        .ok_or_else(|| ParseError::UnknownScope(value.to_owned()))?,
                ))
            }
            "src" => prefsrc = Some(parse_addr_value(value()?)?),
            "nhid" => nh_id = Some(parse_number(value()?)?),
            "tos" | "dsfield" => {
                let value = value()?;
                tos = Some(names::parse_dsfield(value).ok_or_else(|| bad(keyword, value))?)
            }
            "realm" | "realms" => {
                let value = value()?;
                more.realms = Some(names::parse_realms(value).ok_or_else(|| bad(keyword, value))?)
            }
            "pref" => {
                let value = value()?;
                more.pref = Some(names::parse_pref(value).ok_or_else(|| bad(keyword, value))?)
            }
            "expires" => {
                let value = value()?;
                more.expires = Some(value.parse::<u32>().map_err(|_| bad(keyword, value))?)
            }
            // Any other word is the destination, `[to] [TYPE] PREFIX`, wherever it stands,
            // as `ip` reads it; a type is a name (a word starting with a digit is a prefix).
            word if prefix.is_none() => {
                let mut word = word;
                if word == "to" {
                    word = value().map_err(|_| ParseError::MissingPrefix)?;
                }
                if !word.starts_with(|c: char| c.is_ascii_digit())
                    && let Some(id) = names::parse_route_type(word)
                {
                    kind = Some(RouteType(id));
                    word = value().map_err(|_| ParseError::MissingPrefix)?;
                }
                prefix = Some(word);
            }
            other => {
                let destination = matches!(other, "to" | "default" | "all" | "any")
                    || names::parse_route_type(other).is_some()
                    || parse_prefix(other).is_ok();
                return Err(if destination {
                    ParseError::DuplicatePrefix(other.to_owned())
                } else {
                    ParseError::UnknownRouteKeyword(other.to_owned())
                });
            }
        }
    }
    let prefix = prefix.ok_or(ParseError::MissingPrefix)?;
    if let (Some(family), Some(gateway)) = (via_family, gateway)
        && (family == "inet6") != gateway.is_ipv6()
    {
        return Err(ParseError::ViaFamilyMismatch(format!("{family} {gateway}")));
    }
    let is_default = matches!(prefix, "default" | "all" | "any");
    // `default` takes its family from the other addresses of the line, as in `ip`.
    let is_v6 = prefix.contains(':')
        || gateway.is_some_and(|gw: IpAddr| gw.is_ipv6() && via_family.is_none())
        || (is_default && gateway.is_none() && prefsrc.is_some_and(|src: IpAddr| src.is_ipv6()));
    let (dst, dst_len) = match prefix {
        "default" | "all" | "any" => (
            if is_v6 {
                IpAddr::from([0u16; 8])
            } else {
                IpAddr::from([0u8; 4])
            },
            0,
        ),
        prefix => parse_prefix(prefix)?,
    };
    let explicit_kind = kind.is_some();
    let kind = kind.unwrap_or(RouteType::UNICAST);
    let mut route = Route::new(dst, dst_len).with_kind(if delete && !explicit_kind {
        RouteType::UNSPEC
    } else {
        kind
    });
    if let Some(gateway) = gateway {
        if gateway.is_ipv6() != dst.is_ipv6() && via_family.is_none() {
            return Err(ParseError::GatewayFamily(gateway.to_string()));
        }
        route = route.with_gateway(gateway);
    }
    if let Some(src) = prefsrc
        && src.is_ipv6() != dst.is_ipv6()
    {
        return Err(ParseError::SourceFamily(src.to_string()));
    }
    if let Some(dev) = dev {
        route = route.with_oif(dev);
    }
    if let Some(table) = table {
        route = route.with_table(table);
    } else if kind == RouteType::LOCAL || kind == RouteType::BROADCAST {
        // `ip` puts local and broadcast routes in the local table.
        route = route.with_table(Table::LOCAL);
    }
    if let Some(metric) = metric {
        route = route.with_priority(metric);
    }
    match proto {
        Some(proto) => route = route.with_protocol(proto),
        None if delete => route = route.with_protocol(Protocol::UNSPEC),
        None => {}
    }
    // The scope `ip` chooses: host for local routes, link for broadcast, anycast and
    // multicast ones and for unicast routes without a gateway, universe otherwise.
    let scope = scope.unwrap_or(match kind {
        // In a delete request, any scope matches.
        _ if delete => Scope::NOWHERE,
        RouteType::LOCAL => Scope::HOST,
        RouteType::BROADCAST | RouteType::ANYCAST | RouteType::MULTICAST => Scope::LINK,
        RouteType::UNICAST if gateway.is_none() && dev.is_some() => Scope::LINK,
        _ => Scope::UNIVERSE,
    });
    route = route.with_scope(scope);
    if let Some(prefsrc) = prefsrc {
        route = route.with_prefsrc(prefsrc);
    }
    if let Some(nh_id) = nh_id {
        route = route.with_nh_id(nh_id);
    }
    if let Some(tos) = tos {
        route = route.with_tos(tos);
    }
    if !delete
        && kind == RouteType::UNICAST
        && gateway.is_none()
        && dev.is_none()
        && nh_id.is_none()
        && more.hops.is_empty()
    {
        return Err(ParseError::NoNextHop);
    }
    Ok(more.apply(route))
}

/// The rarer parts of a route line.
#[derive(Default)]
struct More {
    flags: u32,
    /// `RTAX_*`, value, locked.
    metrics: Vec<(u16, MetricValue, bool)>,
    realms: Option<u32>,
    pref: Option<u8>,
    expires: Option<u32>,
    encap: Option<Encap>,
    hops: Vec<NextHop>,
}

enum MetricValue {
    Number(u32),
    Name(String),
}

impl More {
    fn apply(self, mut route: Route) -> Route {
        if self.flags != 0 {
            route = route.with_flags(self.flags);
        }
        for (kind, value, locked) in self.metrics {
            route = match value {
                MetricValue::Number(number) => route.with_metric(kind, number, locked),
                MetricValue::Name(name) => route.with_congctl(&name, locked),
            };
        }
        if let Some(realms) = self.realms {
            route = route.with_realms(realms);
        }
        if let Some(pref) = self.pref {
            route = route.with_pref(pref);
        }
        if let Some(expires) = self.expires {
            route = route.with_expires(expires);
        }
        if let Some(encap) = self.encap {
            route = route.with_encap(encap);
        }
        if !self.hops.is_empty() {
            route = route.with_multipath(self.hops);
        }
        route
    }
}

fn bad(keyword: &str, value: &str) -> ParseError {
    ParseError::BadValue {
        keyword: keyword.to_owned(),
        value: value.to_owned(),
    }
}

/// A metric's value as `ip route` takes it: a number; `rtt`, `rttvar` and `rto_min` also
/// as a time (`10ms`, `1s`, sent in the kernel's units: 1/8 ms, 1/4 ms, ms) where a bare
/// number is sent as it is; `features ecn`; `congctl NAME`.
fn metric_value(keyword: &str, kind: u16, value: &str) -> Result<MetricValue, ParseError> {
    const RTAX_RTT: u16 = 4;
    const RTAX_RTTVAR: u16 = 5;
    const RTAX_FEATURES: u16 = 12;
    const RTAX_RTO_MIN: u16 = 13;
    if kind == crate::route::RTAX_CC_ALGO {
        return Ok(MetricValue::Name(value.to_owned()));
    }
    if kind == RTAX_FEATURES && value == "ecn" {
        return Ok(MetricValue::Number(1));
    }
    if let Ok(number) = value.parse::<u32>() {
        return Ok(MetricValue::Number(number));
    }
    let ms = match (value.strip_suffix("ms"), value.strip_suffix('s')) {
        (Some(ms), _) => ms.parse::<u32>().ok(),
        (None, Some(secs)) => secs.parse::<u32>().ok().and_then(|s| s.checked_mul(1000)),
        _ => None,
    };
    let scaled = match (kind, ms) {
        (RTAX_RTT, Some(ms)) => ms.checked_mul(8),
        (RTAX_RTTVAR, Some(ms)) => ms.checked_mul(4),
        (RTAX_RTO_MIN, Some(ms)) => Some(ms),
        _ => None,
    };
    scaled
        .map(MetricValue::Number)
        .ok_or_else(|| bad(keyword, value))
}

/// `nexthop [via [inet|inet6] ADDR] [dev DEV] [weight W] [onlink] [realm R] [encap ...]`, up
/// to the next `nexthop` or the end of the line.
fn parse_hop<'a>(
    words: &mut std::iter::Peekable<impl Iterator<Item = &'a str>>,
    ifindex: &dyn Fn(&str) -> Option<Ifindex>,
) -> Result<NextHop, ParseError> {
    let mut hop = NextHop::default();
    while let Some(&keyword) = words.peek() {
        if keyword == "nexthop" {
            break;
        }
        words.next();
        match keyword {
            "onlink" | "pervasive" => {
                hop.flags |= names::parse_route_flag(keyword).unwrap_or(0) as u8;
                continue;
            }
            "encap" => {
                hop = hop.with_encap(parse_encap(words)?);
                continue;
            }
            _ => {}
        }
        let mut value = words
            .next()
            .ok_or_else(|| ParseError::MissingValue(keyword.to_owned()))?;
        match keyword {
            "via" => {
                if matches!(value, "inet" | "inet6") {
                    value = words
                        .next()
                        .ok_or_else(|| ParseError::MissingValue(keyword.to_owned()))?;
                }
                hop.gateway = Some(parse_addr_value(value)?);
            }
            "dev" => hop.ifindex = resolve(ifindex, value)?,
            "weight" => {
                let weight = value
                    .parse::<u16>()
                    .ok()
                    .filter(|weight| (1..=256).contains(weight))
                    .ok_or_else(|| bad(keyword, value))?;
                hop = hop.with_weight(weight);
            }
            "realm" | "realms" => {
                hop =
                    hop.with_realms(names::parse_realms(value).ok_or_else(|| bad(keyword, value))?)
            }
            other => return Err(ParseError::UnknownRouteKeyword(other.to_owned())),
        }
    }
    Ok(hop)
}

/// `encap ip|ip6 [id N] [dst A] [src A] [ttl|hoplimit N] [tos|tc N] [key] [csum] [seq]`: an
/// IP tunnel encapsulation (`LWTUNNEL_ENCAP_IP`, `LWTUNNEL_ENCAP_IP6`), the types `ip route`
/// builds from words alone.
fn parse_encap<'a>(
    words: &mut std::iter::Peekable<impl Iterator<Item = &'a str>>,
) -> Result<Encap, ParseError> {
    let kind = words
        .next()
        .ok_or_else(|| ParseError::MissingValue("encap".to_owned()))?;
    let (code, v6) = match kind {
        "ip" => (2, false),
        "ip6" => (4, true),
        other => return Err(bad("encap", other)),
    };
    let mut data = Vec::new();
    let mut push = |attr: u16, value: &[u8]| {
        let len = (4 + value.len()) as u16;
        data.extend_from_slice(&len.to_ne_bytes());
        data.extend_from_slice(&attr.to_ne_bytes());
        data.extend_from_slice(value);
        data.resize(crate::wire::align(data.len()), 0);
    };
    let mut flags: u16 = 0;
    while let Some(&keyword) = words.peek() {
        let flag = match keyword {
            "csum" => Some(0x1),
            "key" => Some(0x4),
            "seq" => Some(0x8),
            _ => None,
        };
        if let Some(flag) = flag {
            words.next();
            flags |= flag;
            continue;
        }
        if !matches!(
            keyword,
            "id" | "dst" | "src" | "ttl" | "tos" | "hoplimit" | "tc"
        ) {
            break;
        }
        words.next();
        let value = words
            .next()
            .ok_or_else(|| ParseError::MissingValue(keyword.to_owned()))?;
        match keyword {
            "id" => {
                let id = value.parse::<u64>().map_err(|_| bad(keyword, value))?;
                push(1, &id.to_be_bytes());
            }
            "dst" | "src" => {
                let addr = parse_addr_value(value)?;
                let attr = if keyword == "dst" { 2 } else { 3 };
                match addr {
                    IpAddr::V4(v4) if !v6 => push(attr, &v4.octets()),
                    IpAddr::V6(v6addr) if v6 => push(attr, &v6addr.octets()),
                    _ => return Err(ParseError::GatewayFamily(value.to_owned())),
                }
            }
            _ => {
                let number = value.parse::<u8>().map_err(|_| bad(keyword, value))?;
                let attr = if matches!(keyword, "ttl" | "hoplimit") {
                    4
                } else {
                    5
                };
                push(attr, &[number]);
            }
        }
    }
    if flags != 0 {
        push(6, &flags.to_be_bytes());
    }
    Ok(Encap::new(code, data))
}

/// `id N [via GW] [dev DEV] [onlink] | blackhole | group ID[,W]/... [type mpath|resilient
/// [buckets N]] [fdb] [proto P]`, as `ip nexthop` reads them; a delete takes the id alone.
fn parse_nexthop(
    op: Op,
    args: &[&str],
    ifindex: &dyn Fn(&str) -> Option<Ifindex>,
) -> Result<Nexthop, ParseError> {
    let mut words = args.iter().copied();
    let mut nh = Nexthop::new(0);
    let mut id = None;
    while let Some(keyword) = words.next() {
        let mut value = || {
            words
                .next()
                .ok_or_else(|| ParseError::MissingValue(keyword.to_owned()))
        };
        match keyword {
            "id" => id = Some(parse_number(value()?)?).filter(|id| *id != 0),
            "via" => nh = nh.with_gateway(parse_addr_value(value()?)?),
            "dev" => nh = nh.with_oif(resolve(ifindex, value()?)?),
            "blackhole" => nh = nh.with_blackhole(),
            "fdb" => nh = nh.with_fdb(),
            "onlink" => {
                let flags = nh.flags() | RTNH_F_ONLINK;
                nh = nh.with_flags(flags);
            }
            "proto" | "protocol" => {
                let value = value()?;
                nh = nh.with_protocol(Protocol(
                    names::parse_protocol(value)
                        .ok_or_else(|| ParseError::UnknownProtocol(value.to_owned()))?,
                ))
            }
            "group" => nh = nh.with_group(parse_group(value()?)?),
            "type" => match value()? {
                "mpath" => nh = nh.with_group_type(0),
                "resilient" => nh = nh.with_group_type(NEXTHOP_GRP_TYPE_RES),
                other => return Err(ParseError::UnknownNexthopKeyword(other.to_owned())),
            },
            "buckets" => {
                let value = value()?;
                let buckets = value
                    .parse::<u16>()
                    .map_err(|_| ParseError::BadNumber(value.to_owned()))?;
                nh = nh.with_buckets(buckets);
            }
            other => return Err(ParseError::UnknownNexthopKeyword(other.to_owned())),
        }
    }
    let id = id.ok_or(ParseError::NoNexthopId)?;
    if op == Op::Delete {
        return Ok(Nexthop::new(id));
    }
    Ok(nh.with_id(id))
}

/// `ID[,WEIGHT]/ID[,WEIGHT]/...`.
fn parse_group(text: &str) -> Result<Vec<GroupMember>, ParseError> {
    text.split('/')
        .map(|member| {
            let bad = || ParseError::BadGroupMember(member.to_owned());
            let (id, weight) = match member.split_once(',') {
                Some((id, weight)) => (id, weight.parse::<u32>().map_err(|_| bad())?),
                None => (member, 1),
            };
            let id = id.parse::<u32>().map_err(|_| bad())?;
            if !(1..=1 << 16).contains(&weight) || id == 0 {
                return Err(bad());
            }
            Ok(GroupMember { id, weight })
        })
        .collect()
}

fn parse_number(text: &str) -> Result<u32, ParseError> {
    text.parse()
        .map_err(|_| ParseError::BadNumber(text.to_owned()))
}

/// `[not] [from PREFIX] [to PREFIX] [tos T] [fwmark M[/MASK]] [iif|dev NAME] [oif NAME]
/// [pref N] [l3mdev] [uidrange A-B] [ipproto P] [sport P[-P|/MASK]] [dport ...] [dscp D[/MASK]]
/// [flowlabel L[/MASK]] [tun_id N] [table|lookup T] [protocol P] [realms [F/]T]
/// [suppress_prefixlength N] [suppress_ifgroup G] [[type] unicast|blackhole|unreachable|
/// prohibit|goto N|nop]`, with `ip rule`'s abbreviations (`pref`, `prio`, `order`, `ta`, ...),
/// checked in `ip`'s order. Numbers are read as `ip` reads them (`0x` hex, leading-0 octal).
/// An added rule without an action looks up a table, `main` unless another is named; a
/// deleted one matches what its line sets.
fn parse_rule(op: Op, args: &[&str], family: Option<Family>) -> Result<Rule, ParseError> {
    if args.is_empty() {
        return Err(ParseError::EmptyRule);
    }
    // `ip` checks its keywords in this order, an abbreviation taking the first that fits.
    let abbreviates = |word: &str, keyword: &str| keyword.starts_with(word);
    // Its family is set at the end, once the addresses have told it.
    let mut rule = Rule::new(Family::V4);
    let mut family = family;
    let mut rule_family = |addr: IpAddr, word: &str| -> Result<(), ParseError> {
        let of_addr = if addr.is_ipv4() {
            Family::V4
        } else {
            Family::V6
        };
        match family.get_or_insert(of_addr) {
            wanted if *wanted == of_addr => Ok(()),
            _ => Err(ParseError::RuleFamily(word.to_owned())),
        }
    };
    let add = op != Op::Delete;
    let mut src = None;
    let mut dst = None;
    let mut action = add.then_some(FR_ACT_TO_TBL);
    // Whether the line names a table or an action (else an added rule looks up `main`).
    let mut table_named = false;
    let mut table = None;
    let mut l3mdev = false;
    let mut words = args.iter().copied();
    while let Some(word) = words.next() {
        let mut value = || {
            words
                .next()
                .ok_or_else(|| ParseError::MissingValue(word.to_owned()))
        };
        match word {
            "not" => {
                let flags = rule.flags() | FIB_RULE_INVERT;
                rule = rule.with_flags(flags);
            }
            "from" | "to" => {
                let value = value()?;
                let prefix = match value {
                    // `all` is no selector: the kernel holds and reports the rule without one.
                    "all" | "any" | "default" => None,
                    value => {
                        let (addr, len) = parse_prefix(value)?;
                        rule_family(addr, value)?;
                        // Nor is a prefix of length 0.
                        Some((addr, len)).filter(|(_, len)| *len > 0)
                    }
                };
                if word == "from" {
                    src = prefix;
                } else {
                    dst = prefix;
                }
            }
            _ if abbreviates(word, "preference")
                || abbreviates(word, "order")
                || abbreviates(word, "priority") =>
            {
                let value = value()?;
                rule = rule.with_priority(c_number(value).ok_or_else(|| bad("pref", value))?);
            }
            _ if word == "tos" || abbreviates(word, "dsfield") => {
                let value = value()?;
                rule = rule.with_tos(names::parse_dsfield(value).ok_or_else(|| bad("tos", value))?);
            }
            "fwmark" => {
                let value = value()?;
                let (mark, mask) = split_slash(value);
                let number = |text: &str| c_number::<u32>(text).ok_or_else(|| bad("fwmark", value));
                rule = rule.with_fwmark(number(mark)?, mask.map(number).transpose()?);
            }
            _ if abbreviates(word, "realms") => {
                let value = value()?;
                let realms = names::parse_realms(value).ok_or_else(|| bad("realms", value))?;
                rule = rule.with_realms(realms);
            }
            _ if abbreviates(word, "protocol") => {
                let value = value()?;
                rule = rule.with_protocol(Protocol(
                    names::parse_protocol(value)
                        .ok_or_else(|| ParseError::UnknownProtocol(value.to_owned()))?,
                ));
            }
            _ if abbreviates(word, "tun_id") => {
                let value = value()?;
                rule = rule.with_tun_id(c_number(value).ok_or_else(|| bad("tun_id", value))?);
            }
            _ if abbreviates(word, "table") || word == "lookup" => {
                let value = value()?;
                table = Some(
                    names::parse_table(value)
                        .ok_or_else(|| ParseError::UnknownTable(value.to_owned()))?,
                );
                table_named = true;
            }
            _ if abbreviates(word, "suppress_prefixlength") || word == "sup_pl" => {
                let value = value()?;
                let len = c_number::<u32>(value)
                    .filter(|len| i32::try_from(*len).is_ok())
                    .ok_or_else(|| bad("suppress_prefixlength", value))?;
                rule = rule.with_suppress_prefixlen(len);
            }
            _ if abbreviates(word, "suppress_ifgroup") || word == "sup_group" => {
                let value = value()?;
                let group =
                    names::parse_group(value).ok_or_else(|| bad("suppress_ifgroup", value))?;
                rule = rule.with_suppress_ifgroup(group);
            }
            "dev" | "iif" | "oif" => {
                let value = value()?;
                // `ip`'s check_ifname: 1 to 15 bytes, no `/` or white space, not `.` or `..`;
                // and no NUL, which no C string (no `ip` argument) holds.
                if value.len() >= 16 || matches!(value, "." | "..") || value.contains(['/', '\0']) {
                    return Err(bad(word, value));
                }
                rule = if word == "oif" {
                    rule.with_oifname(value)
                } else {
                    rule.with_iifname(value)
                };
            }
            "l3mdev" => {
                rule = rule.with_l3mdev();
                l3mdev = true;
                table_named = true;
            }
            "uidrange" => {
                let value = value()?;
                let range = value
                    .split_once('-')
                    .and_then(|(start, end)| Some((start.parse().ok()?, end.parse().ok()?)))
                    .ok_or_else(|| bad("uidrange", value))?;
                rule = rule.with_uid_range(range.0, range.1);
            }
            "ipproto" => {
                let value = value()?;
                rule = rule.with_ip_proto(
                    names::parse_ip_proto(value).ok_or_else(|| bad("ipproto", value))?,
                );
            }
            "sport" | "dport" => {
                let value = value()?;
                let (range, mask) = parse_port_range(value).ok_or_else(|| bad(word, value))?;
                rule = if word == "sport" {
                    rule.with_sport(range, mask)
                } else {
                    rule.with_dport(range, mask)
                };
            }
            "dscp" => {
                let value = value()?;
                let (dscp, mask) = split_slash(value);
                // A number, or a DS field name's upper six bits.
                let dscp = c_number::<u8>(dscp)
                    .or_else(|| names::parse_dsfield(dscp).map(|field| field >> 2))
                    .filter(|dscp| *dscp <= 0x3f)
                    .ok_or_else(|| bad("dscp", value))?;
                let mask = mask
                    .map(|mask| c_number::<u8>(mask).ok_or_else(|| bad("dscp", value)))
                    .transpose()?
                    .filter(|mask| *mask != 0x3f);
                rule = rule.with_dscp(dscp, mask);
            }
            "flowlabel" => {
                let value = value()?;
                let (label, mask) = split_slash(value);
                let number =
                    |text: &str| c_number::<u32>(text).ok_or_else(|| bad("flowlabel", value));
                // `ip` sends the mask always, the whole label's when none is given.
                let mask = mask.map(number).transpose()?.unwrap_or(0xfffff);
                rule = rule.with_flowlabel(number(label)?, Some(mask));
            }
            _ if word == "nat" || abbreviates(word, "map-to") => {
                // Route NAT left the kernel in 2.6.
                return Err(ParseError::UnknownRuleKeyword(word.to_owned()));
            }
            _ => {
                // The action: `[type] TYPE`, `goto N` or `nop`.
                let word = if word == "type" { value()? } else { word };
                if abbreviates(word, "goto") {
                    let value = value()?;
                    rule = rule.with_goto(c_number(value).ok_or_else(|| bad("goto", value))?);
                    action = Some(rule.action());
                } else if abbreviates(word, "nop") {
                    action = Some(crate::rule::FR_ACT_NOP);
                } else if let Some(kind) = names::parse_route_type(word) {
                    action = Some(kind);
                } else {
                    return Err(ParseError::UnknownRuleKeyword(word.to_owned()));
                }
                table_named = true;
            }
        }
    }
    if l3mdev && table.is_some_and(|table| table != 0) {
        return Err(bad(
            "table (an l3mdev rule looks up its device's)",
            "l3mdev",
        ));
    }
    // The family is known now: `-4`/`-6`, else the addresses', else IPv4.
    rule = rule.with_family(family.unwrap_or(Family::V4));
    if let Some((addr, len)) = src {
        rule = rule.with_src(addr, len);
    }
    if let Some((addr, len)) = dst {
        rule = rule.with_dst(addr, len);
    }
    if let Some(action) = action {
        rule = rule.with_action(action);
    }
    match table {
        Some(table) => rule = rule.with_table(Table(table)),
        None if add && !table_named => rule = rule.with_table(Table::MAIN),
        None => {}
    }
    Ok(rule)
}

/// `[local] PREFIX dev DEV [peer PREFIX] [broadcast ADDR|+|-] [label NAME] [scope S]
/// [metric N] [proto P] [valid_lft SECS|forever] [preferred_lft SECS|forever] [FLAG]...`.
fn parse_addr(
    op: Op,
    args: &[&str],
    ifindex: &dyn Fn(&str) -> Option<Ifindex>,
) -> Result<Address, ParseError> {
    /// `ip`'s longest device name and label (`IFNAMSIZ` less the nul).
    const MAX_LABEL: usize = 15;
    let mut words = args.iter().copied();
    let mut local = None;
    let mut dev = None;
    let mut broadcast = None;
    let mut peer = None;
    let mut label = None;
    let mut scope = None;
    let mut flags = 0;
    let mut rt_priority = None;
    let mut proto = None;
    let (mut valid, mut preferred) = (None, None);
    let lifetime = |keyword: &str, value: &str| match value {
        "forever" | "infinity" => Ok(crate::addr::LIFETIME_FOREVER),
        value => value.parse::<u32>().map_err(|_| ParseError::BadValue {
            keyword: keyword.to_owned(),
            value: value.to_owned(),
        }),
    };
    while let Some(keyword) = words.next() {
        // Flags take no value.
        if let Some(flag) = names::parse_address_flag(keyword) {
            flags |= flag;
            continue;
        }
        let mut value = || {
            words
                .next()
                .ok_or_else(|| ParseError::MissingValue(keyword.to_owned()))
        };
        match keyword {
            "local" => local = Some(parse_prefix(value()?)?),
            "dev" => {
                let name = value()?;
                dev = Some((resolve(ifindex, name)?, name));
            }
            "broadcast" | "brd" => broadcast = Some(value()?),
            "peer" | "remote" => peer = Some(parse_prefix(value()?)?),
            "label" => {
                let value = value()?;
                if value.len() > MAX_LABEL {
                    return Err(ParseError::BadValue {
                        keyword: "label (at most 15 bytes)".to_owned(),
                        value: value.to_owned(),
                    });
                }
                label = Some(value);
            }
            "scope" => {
                let value = value()?;
                scope = Some(
                    names::parse_scope(value)
                        .ok_or_else(|| ParseError::UnknownScope(value.to_owned()))?,
                );
            }
            "metric" | "priority" | "preference" => rt_priority = Some(parse_metric(value()?)?),
            "proto" => {
                let value = value()?;
                proto = Some(
                    names::parse_address_proto(value)
                        .ok_or_else(|| ParseError::UnknownProtocol(value.to_owned()))?,
                );
            }
            "valid_lft" => valid = Some(lifetime(keyword, value()?)?),
            "preferred_lft" => preferred = Some(lifetime(keyword, value()?)?),
            // The first word that is no keyword is the local address (`ip` reads it so).
            other if local.is_none() => local = Some(parse_prefix(other)?),
            other => return Err(ParseError::UnknownAddressKeyword(other.to_owned())),
        }
    }
    let (addr, local_len) = local.ok_or(ParseError::MissingAddress)?;
    let (dev, dev_name) = dev.ok_or(ParseError::NoDevice)?;
    // As `ip`: a peer's length (its full length when it has none) is the prefix's.
    let prefix_len = match peer {
        Some((peer, len)) if peer.is_ipv4() != addr.is_ipv4() => {
            return Err(ParseError::BadValue {
                keyword: "peer (of another family than the address)".to_owned(),
                value: format!("{peer}/{len}"),
            });
        }
        Some((_, len)) => len,
        None => local_len,
    };
    let mut address = Address::new(dev, addr, prefix_len).with_flags(flags);
    if let Some((peer, _)) = peer {
        address = address.with_peer(peer);
    }
    if let Some(value) = broadcast {
        let IpAddr::V4(v4) = addr else {
            return Err(ParseError::BroadcastNotIpv4(value.to_owned()));
        };
        // `+` and `-`: the prefix's broadcast address with its host bits set or cleared.
        let host_bits = u32::MAX.checked_shr(u32::from(prefix_len)).unwrap_or(0);
        let broadcast = match value {
            "+" => Ipv4Addr::from(u32::from(v4) | host_bits),
            "-" => Ipv4Addr::from(u32::from(v4) & !host_bits),
            value => match parse_addr_value(value)? {
                IpAddr::V4(v4) => v4,
                IpAddr::V6(_) => return Err(ParseError::BroadcastNotIpv4(value.to_owned())),
            },
        };
        address = address.with_broadcast(broadcast);
    }
    if let Some(label) = label {
        // `ip` refuses a label that does not start with the device's name.
        if !label.starts_with(dev_name) {
            return Err(ParseError::BadValue {
                keyword: format!("label (must start with the device name `{dev_name}`)"),
                value: label.to_owned(),
            });
        }
        address = address.with_label(label);
    }
    // Without `scope`, `ip` gives an added 127.0.0.0/8 address host scope.
    let scope = scope.unwrap_or(match addr {
        IpAddr::V4(v4) if v4.octets()[0] == 127 && op != Op::Delete => Scope::HOST.0,
        _ => 0,
    });
    address = address.with_scope(Scope(scope));
    if let Some(priority) = rt_priority {
        address = address.with_rt_priority(priority);
    }
    if let Some(proto) = proto {
        address = address.with_proto(proto);
    }
    if valid.is_some() || preferred.is_some() {
        let valid = valid.unwrap_or(crate::addr::LIFETIME_FOREVER);
        let preferred = preferred.unwrap_or(crate::addr::LIFETIME_FOREVER);
        if valid == 0 {
            return Err(ParseError::BadValue {
                keyword: "valid_lft (zero)".to_owned(),
                value: "0".to_owned(),
            });
        }
        if preferred > valid {
            return Err(ParseError::BadValue {
                keyword: "preferred_lft (greater than valid_lft)".to_owned(),
                value: preferred.to_string(),
            });
        }
        address = address.with_lifetimes(valid, preferred);
    }
    Ok(address)
}

fn resolve(ifindex: &dyn Fn(&str) -> Option<Ifindex>, name: &str) -> Result<Ifindex, ParseError> {
    ifindex(name).ok_or_else(|| ParseError::UnknownDevice(name.to_owned()))
}

/// A rule's port selector as `ip rule` reads it: `P`, `A-B`, or `P/MASK` (a mask only with a
/// single port); a mask of all ones is no mask.
fn parse_port_range(text: &str) -> Option<((u16, u16), Option<u16>)> {
    if let Some((start, end)) = text.split_once('-') {
        return Some(((c_number(start)?, c_number(end)?), None));
    }
    let (port, mask) = split_slash(text);
    let mask = match mask {
        Some(mask) => Some(c_number::<u16>(mask)?),
        None => None,
    };
    let port = c_number(port)?;
    Some(((port, port), mask.filter(|mask| *mask != u16::MAX)))
}

/// `A/B` as `(A, Some(B))`, `A` as `(A, None)`: a prefix and its length, a mark and its mask.
fn split_slash(text: &str) -> (&str, Option<&str>) {
    match text.split_once('/') {
        Some((value, after)) => (value, Some(after)),
        None => (text, None),
    }
}

/// `ADDR/LEN`, or a bare address (a host prefix).
pub(crate) fn parse_prefix(text: &str) -> Result<(IpAddr, u8), ParseError> {
    let (addr, len) = split_slash(text);
    let addr = parse_addr_value(addr)?;
    let max = if addr.is_ipv4() { 32 } else { 128 };
    let len = match len {
        Some(len) => len
            .parse::<u8>()
            .ok()
            .filter(|len| *len <= max)
            .ok_or_else(|| ParseError::BadPrefixLength(text.to_owned()))?,
        None => max,
    };
    Ok((addr, len))
}

/// A metric (a route's `RTA_PRIORITY`, an address's prefix route's `IFA_RT_PRIORITY`).
fn parse_metric(text: &str) -> Result<u32, ParseError> {
    text.parse()
        .map_err(|_| ParseError::BadMetric(text.to_owned()))
}

/// An address, also an IPv4 one with its trailing zero parts left out (`10`, `10.1`,
/// `192.168.1`), as `ip` reads prefixes.
fn parse_addr_value(text: &str) -> Result<IpAddr, ParseError> {
    text.parse()
        .ok()
        .or_else(|| short_ipv4(text).map(IpAddr::V4))
        .ok_or_else(|| ParseError::BadAddress(text.to_owned()))
}

/// `10`, `10.1` or `10.1.2`: one to three decimal parts of a dotted quad, the rest zero.
fn short_ipv4(text: &str) -> Option<Ipv4Addr> {
    let mut octets = [0u8; 4];
    let mut n = 0;
    for part in text.split('.') {
        let octet = octets.get_mut(n)?;
        if part.is_empty() || part.len() > 3 || !part.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        *octet = part.parse().ok()?;
        n += 1;
    }
    (n < 4).then_some(Ipv4Addr::from(octets))
}

#[cfg(test)]
mod tests;
