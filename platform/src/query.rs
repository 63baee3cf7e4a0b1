//! Queries: one-shot dumps of links, addresses, routes and rules, with their filters pushed
//! to the kernel (`NETLINK_GET_STRICT_CHK`) and applied again here, so the answer is exact
//! either way. [`Answer::filter`] says which side did the filtering.

use crate::addr::{Address, IFADDRMSG_LEN};
use std::cell::RefCell;
use std::net::IpAddr;

use crate::error::{Error, Result};
use crate::link::{IFINFOMSG_LEN, Link};
use crate::platform::{DumpReport, Platform};
use crate::route::{Family, RTMSG_LEN, Route};
use crate::rule::Rule;
use crate::types::{Ifindex, Protocol, RouteType, Scope, Table};
use crate::wire::{self, Msg, MsgWriter};

const RTA_OIF: u16 = 4;
const RTA_TABLE: u16 = 15;
const IFLA_IFNAME: u16 = 3;
const IFLA_EXT_MASK: u16 = 29;
/// `RTEXT_FILTER_SKIP_STATS`: leave statistics out of link dumps (we do not keep them).
const RTEXT_FILTER_SKIP_STATS: u32 = 1 << 3;

/// Where the filters of a query were applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum FilterSide {
    /// No filter was asked for.
    None,
    /// The kernel filtered (strict checking accepted the request's filters).
    Kernel,
    /// The kernel sent everything and this crate filtered.
    Local,
}

/// The answer to a query.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Answer<T> {
    /// The objects, in the kernel's order.
    pub items: Vec<T>,
    /// Where the filters ran.
    pub filter: FilterSide,
    /// How many dump attempts were interrupted and redone.
    pub n_interrupted: u32,
}

impl<T> Answer<T> {
    fn new(filtered: bool, kernel: bool) -> Self {
        Answer {
            items: Vec::new(),
            filter: match (filtered, kernel) {
                (false, _) => FilterSide::None,
                (true, true) => FilterSide::Kernel,
                (true, false) => FilterSide::Local,
            },
            n_interrupted: 0,
        }
    }
}

/// Receives the objects of a dump one by one as they arrive, in the kernel's order, without
/// the answer being collected: [`RouteQuery::visit`] and the other queries' `visit`. A printer
/// writes each one and lets it go, so printing a million routes holds none of them.
pub trait Visitor<T> {
    /// What the visitor's own steps can fail with (a write to stdout); a dump's own errors
    /// become one too.
    type Error: From<Error>;

    /// A dump begins: once per dump (a query over both families dumps each in turn), before
    /// its first object. What [`Visitor::interrupted`] forgets is what came since.
    fn begin(&mut self) -> std::result::Result<(), Self::Error> {
        Ok(())
    }

    /// One object that passed the query's filters. An error stops the visit: the rest of
    /// the dump is read and dropped, and the error returned.
    fn item(&mut self, item: T) -> std::result::Result<(), Self::Error>;

    /// The dump since [`Visitor::begin`] came back interrupted (`NLM_F_DUMP_INTR`: the
    /// objects changed while it ran, so what it delivered may be inconsistent). `Ok(true)`:
    /// the visitor forgot what it got since `begin`, and the dump is done again (up to the
    /// configured attempts, as every query does); `Ok(false)`: it keeps what it got (it has
    /// passed it on already), and the report's `kept_interrupted` says so.
    fn interrupted(&mut self) -> std::result::Result<bool, Self::Error>;
}

/// What a visited dump did ([`RouteQuery::visit`] and the others).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct VisitReport {
    /// Where the filters ran.
    pub filter: FilterSide,
    /// How many dump attempts were interrupted and redone, or kept.
    pub n_interrupted: u32,
    /// True when an interrupted attempt was kept ([`Visitor::interrupted`] said so): the
    /// objects visited may be inconsistent.
    pub kept_interrupted: bool,
}

impl VisitReport {
    pub(crate) fn new(filtered: bool, kernel: bool) -> Self {
        VisitReport {
            filter: Answer::<()>::new(filtered, kernel).filter,
            n_interrupted: 0,
            kept_interrupted: false,
        }
    }

    fn account(&mut self, report: DumpReport) {
        self.n_interrupted += report.n_interrupted;
        self.kept_interrupted |= report.kept_interrupted;
    }
}

/// The visitor behind every `execute`: collects the objects, forgets an interrupted
/// attempt's and has the dump done again.
pub(crate) struct Collect<T> {
    items: Vec<T>,
    mark: usize,
}

impl<T> Collect<T> {
    pub(crate) fn new() -> Self {
        Collect {
            items: Vec::new(),
            mark: 0,
        }
    }

    pub(crate) fn answer(self, report: VisitReport) -> Answer<T> {
        Answer {
            items: self.items,
            filter: report.filter,
            n_interrupted: report.n_interrupted,
        }
    }
}

impl<T> Visitor<T> for Collect<T> {
    type Error = Error;

    fn begin(&mut self) -> Result<()> {
        self.mark = self.items.len();
        Ok(())
    }

    fn item(&mut self, item: T) -> Result<()> {
        self.items.push(item);
        Ok(())
    }

    fn interrupted(&mut self) -> Result<bool> {
        self.items.truncate(self.mark);
        Ok(true)
    }
}

/// The message standing for a visitor's own error inside the dump (which then reads the
/// rest of the dump and returns its first error): replaced by the visitor's error.
const STOPPED: &str = "the visitor stopped";

/// One dump through `visitor`: `parse` turns each message into an object, `keep` applies the
/// query's filters (the same ones `execute` applies, since it is built on this); a dump error
/// that `ignore` accepts counts as an empty dump. `pipelined`: received on a second thread
/// while `parse`, `keep` and the visitor run on this one ([`NlSocket::dump_pipelined`](crate::socket::NlSocket::dump_pipelined)),
/// for the dumps that can be large.
#[allow(clippy::too_many_arguments)]
pub(crate) fn visit_dump<T, V: Visitor<T>>(
    platform: &Platform,
    pipelined: bool,
    build: impl Fn(&mut Vec<u8>, u32),
    parse: impl Fn(&[u8]) -> Result<Option<T>>,
    keep: impl Fn(&T) -> bool,
    visitor: &mut V,
    report: &mut VisitReport,
    ignore: impl Fn(&Error) -> bool,
) -> std::result::Result<(), V::Error> {
    visitor.begin()?;
    let state = RefCell::new((visitor, None::<V::Error>));
    let on_msg = |msg: &Msg<'_>| {
        let mut state = state.borrow_mut();
        if state.1.is_some() {
            return Ok(());
        }
        if let Some(item) = parse(msg.payload)?
            && keep(&item)
            && let Err(err) = state.0.item(item)
        {
            state.1 = Some(err);
            return Err(Error::InvalidArgument(STOPPED.to_owned()));
        }
        Ok(())
    };
    let on_interrupted = || {
        let mut state = state.borrow_mut();
        if state.1.is_some() {
            return Ok(false);
        }
        match state.0.interrupted() {
            Ok(again) => {
                if again {
                    state.0.begin().map_err(|err| {
                        state.1 = Some(err);
                        Error::InvalidArgument(STOPPED.to_owned())
                    })?;
                }
                Ok(again)
            }
            Err(err) => {
                state.1 = Some(err);
                Err(Error::InvalidArgument(STOPPED.to_owned()))
            }
        }
    };
    let outcome = platform.dump_visit(build, pipelined, on_msg, on_interrupted);
    let (_, stopped) = state.into_inner();
    if let Some(err) = stopped {
        return Err(err);
    }
    match outcome {
        Ok(outcome) => report.account(outcome),
        Err(err) if ignore(&err) => {}
        Err(err) => return Err(err.into()),
    }
    Ok(())
}

/// A route query: `platform.routes().table(Table(100)).dev(ifindex).execute()`.
#[derive(Debug)]
#[must_use = "a query does nothing until executed"]
pub struct RouteQuery<'a> {
    platform: &'a Platform,
    family: Option<Family>,
    table: Option<Table>,
    dev: Option<u32>,
    protocol: Option<Protocol>,
    kind: Option<RouteType>,
    /// The selectors only this crate compares.
    selectors: RouteSelectors,
    /// `dev` selects routes with any next hop on it (the kernel's own dev filter), not only
    /// by their own device.
    any_hop: bool,
}

/// The selectors of a [`RouteQuery`] that the kernel cannot apply (each `None` selects every
/// route).
#[derive(Debug, Default, PartialEq, Eq)]
struct RouteSelectors {
    dst: Option<(Option<IpAddr>, u8, DstMatch)>,
    src: Option<(IpAddr, u8, DstMatch)>,
    via: Option<(IpAddr, u8)>,
    prefsrc: Option<(IpAddr, u8)>,
    scope: Option<Scope>,
    tos: Option<u8>,
    metric: Option<u32>,
    iif: Option<u32>,
    /// The realms and the mask of their bits that must equal.
    realms: Option<(u32, u32)>,
    mark: Option<u32>,
}

impl RouteSelectors {
    fn matches(&self, route: &Route) -> bool {
        let zero = |like: IpAddr| match like {
            IpAddr::V4(_) => IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED),
            IpAddr::V6(_) => IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED),
        };
        // A zero-length prefix covers an address of its family (`0.0.0.0/0`).
        let within = |have: Option<IpAddr>, want: IpAddr, len: u8| {
            let have = have.unwrap_or(zero(route.dst()));
            crate::names::same_bits(have, want, len)
        };
        let dst_ok = self.dst.is_none_or(|(prefix, len, how)| {
            let dst = route.dst();
            how.matches(dst, route.dst_len(), prefix.unwrap_or(zero(dst)), len)
        });
        let src_ok = self.src.is_none_or(|(prefix, len, how)| {
            let (src, src_len) = route.src().unwrap_or((zero(route.dst()), 0));
            how.matches(src, src_len, prefix, len)
        });
        dst_ok
            && src_ok
            && self
                .via
                .is_none_or(|(prefix, len)| within(route.gateway(), prefix, len))
            && self
                .prefsrc
                .is_none_or(|(prefix, len)| within(route.prefsrc(), prefix, len))
            && self.scope.is_none_or(|scope| route.scope() == scope)
            && self.tos.is_none_or(|tos| route.tos() == tos)
            && self.metric.is_none_or(|metric| route.priority() == metric)
            && self
                .iif
                .is_none_or(|iif| route.iif().map_or(0, |i| i.0) == iif)
            && self
                .realms
                .is_none_or(|(realms, mask)| (route.realms().unwrap_or(0) ^ realms) & mask == 0)
            && self
                .mark
                .is_none_or(|mark| route.mark().unwrap_or(0) == mark)
    }
}

/// How [`RouteQuery::dst`] compares a route's destination with a prefix, as `ip route show
/// [exact|root|match] PREFIX` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DstMatch {
    /// The destination is the prefix (`ip route show PREFIX`).
    Exact,
    /// The destination is in the prefix: the prefix or a longer one within it.
    Root,
    /// The destination covers the prefix: the prefix or a shorter one around it.
    Match,
}

impl DstMatch {
    /// Whether the prefix `have/have_len` compares with `prefix/len` as this says.
    pub fn matches(self, have: IpAddr, have_len: u8, prefix: IpAddr, len: u8) -> bool {
        match self {
            DstMatch::Exact => have_len == len && crate::names::same_bits(have, prefix, len),
            DstMatch::Root => have_len >= len && crate::names::same_bits(have, prefix, len),
            DstMatch::Match => have_len <= len && crate::names::same_bits(have, prefix, have_len),
        }
    }
}

impl Platform {
    /// Starts a route query (all families and tables unless filtered).
    pub fn routes(&self) -> RouteQuery<'_> {
        RouteQuery {
            platform: self,
            family: None,
            table: None,
            dev: None,
            protocol: None,
            kind: None,
            selectors: RouteSelectors::default(),
            any_hop: false,
        }
    }

    /// Starts a link query.
    pub fn links(&self) -> LinkQuery<'_> {
        LinkQuery {
            platform: self,
            ifindex: None,
            name: None,
        }
    }

    /// Starts an address query.
    pub fn addresses(&self) -> AddressQuery<'_> {
        AddressQuery {
            platform: self,
            family: None,
            ifindex: None,
        }
    }

    /// Starts a rule query.
    pub fn rules(&self) -> RuleQuery<'_> {
        RuleQuery {
            platform: self,
            family: None,
            table: None,
        }
    }
}

impl RouteQuery<'_> {
    /// Only this family.
    pub fn family(mut self, family: Family) -> Self {
        self.family = Some(family);
        self
    }
    /// Only routes of this table.
    pub fn table(mut self, table: Table) -> Self {
        self.table = Some(table);
        self
    }
    /// Only routes going out of this interface, as `ip route show dev` selects them: by the
    /// route's own output interface (`RTA_OIF`). A multipath route (also one on a nexthop
    /// group) has an interface per hop and none of its own, so it is not selected, as `ip`
    /// does not select it.
    pub fn dev(mut self, ifindex: Ifindex) -> Self {
        self.dev = Some(ifindex.0);
        self
    }
    /// Only routes with a next hop on this interface, also multipath routes (as the
    /// kernel's own filter selects them): what the cache asks again when the link changes.
    pub(crate) fn through(mut self, ifindex: u32) -> Self {
        self.dev = Some(ifindex);
        self.any_hop = true;
        self
    }

    /// Only routes of this protocol (`RTPROT_*`).
    pub fn protocol(mut self, protocol: Protocol) -> Self {
        self.protocol = Some(protocol);
        self
    }
    /// Only routes of this type (`RTN_*`), as the kernel reports it: a route on a blackhole
    /// nexthop object is a blackhole route (the kernel's own type filter sees it as unicast,
    /// so this filter always runs here).
    pub fn kind(mut self, kind: RouteType) -> Self {
        self.kind = Some(kind);
        self
    }

    /// Only routes whose destination compares with `prefix/len` as `how` says; a `None`
    /// prefix is the zero-length one of either family (`ip route show default` of both).
    pub fn dst(mut self, prefix: Option<IpAddr>, len: u8, how: DstMatch) -> Self {
        self.selectors.dst = Some((prefix, len, how));
        if let Some(prefix) = prefix {
            self.family = Some(Family::of(prefix));
        }
        self
    }

    /// Only routes whose source prefix (`from`) compares with `prefix/len` as `how` says
    /// (`ip route show from [exact|root|match] PREFIX`).
    pub fn src(mut self, prefix: IpAddr, len: u8, how: DstMatch) -> Self {
        self.selectors.src = Some((prefix, len, how));
        self.family = Some(Family::of(prefix));
        self
    }

    /// Only routes whose gateway is in `prefix/len` (`ip route show via PREFIX`; a route
    /// without one has the zero address, as `ip` compares it).
    pub fn via(mut self, prefix: IpAddr, len: u8) -> Self {
        self.selectors.via = Some((prefix, len));
        self
    }

    /// Only routes whose preferred source is in `prefix/len` (`ip route show src PREFIX`).
    pub fn prefsrc(mut self, prefix: IpAddr, len: u8) -> Self {
        self.selectors.prefsrc = Some((prefix, len));
        self.family = Some(Family::of(prefix));
        self
    }

    /// Only routes of this scope (`ip route show scope S`).
    pub fn scope(mut self, scope: Scope) -> Self {
        self.selectors.scope = Some(scope);
        self
    }

    /// Only routes of this TOS (`ip route show tos T`).
    pub fn tos(mut self, tos: u8) -> Self {
        self.selectors.tos = Some(tos);
        self
    }

    /// Only routes of this metric (`ip route show metric N`; a route without `RTA_PRIORITY`
    /// has 0).
    pub fn metric(mut self, metric: u32) -> Self {
        self.selectors.metric = Some(metric);
        self
    }

    /// Only routes whose input interface (`RTA_IIF`) is this one (`ip route show iif DEV`).
    pub fn iif(mut self, ifindex: Ifindex) -> Self {
        self.selectors.iif = Some(ifindex.0);
        self
    }

    /// Only routes whose realms (`RTA_FLOW`, 0 when absent) equal `realms` in the bits of
    /// `mask`: `ip route show realms TO` compares the low 16 bits, `FROM/` the high ones,
    /// `FROM/TO` all (see [`crate::names::realms_mask`]).
    pub fn realms(mut self, realms: u32, mask: u32) -> Self {
        self.selectors.realms = Some((realms, mask));
        self
    }

    /// Only routes of this firewall mark (`RTA_MARK`, 0 when absent: a dump's routes carry
    /// none, so `mark 0` selects them all, as in `ip route show mark`).
    pub fn mark(mut self, mark: u32) -> Self {
        self.selectors.mark = Some(mark);
        self
    }

    fn matches(&self, route: &Route) -> bool {
        self.table.is_none_or(|table| route.table() == table)
            && self.dev.is_none_or(|dev| {
                if self.any_hop {
                    route.ifindexes().any(|i| i == Ifindex(dev))
                } else {
                    route.oif() == Some(Ifindex(dev))
                }
            })
            && self
                .protocol
                .is_none_or(|protocol| route.protocol() == protocol)
            && self.kind.is_none_or(|kind| route.kind() == kind)
            && self.selectors.matches(route)
    }

    /// Runs the query.
    #[tracing::instrument(level = "debug", skip(self), fields(table = ?self.table, dev = ?self.dev))]
    pub fn execute(self) -> Result<Answer<Route>> {
        let mut collect = Collect::new();
        let report = self.visit(&mut collect)?;
        Ok(collect.answer(report))
    }

    /// Runs the query, handing each route that passes its filters to `visitor` as the dump
    /// arrives, in the kernel's order, instead of collecting them ([`RouteQuery::execute`]
    /// is this with a visitor that collects): IPv4 first, then IPv6, when no family is set.
    pub fn visit<V: Visitor<Route>>(
        self,
        visitor: &mut V,
    ) -> std::result::Result<VisitReport, V::Error> {
        let filtered = self.table.is_some()
            || self.dev.is_some()
            || self.protocol.is_some()
            || self.kind.is_some()
            || self.selectors != RouteSelectors::default();
        let strict = self.platform.strict_check();
        // The type filter is never the kernel's (see `kind`): with it alone, only this crate
        // filtered.
        let kernel_filters = self.table.is_some() || self.dev.is_some() || self.protocol.is_some();
        let mut report = VisitReport::new(filtered, strict && kernel_filters);
        let families = match self.family {
            Some(family) => &[family][..],
            None => &[Family::V4, Family::V6][..],
        };
        for &family in families {
            visit_dump(
                self.platform,
                true,
                |buf, seq| self.emit(buf, seq, family, strict),
                Route::parse,
                |route| self.matches(route),
                visitor,
                &mut report,
                |_| false,
            )?;
        }
        Ok(report)
    }

    fn emit(&self, buf: &mut Vec<u8>, seq: u32, family: Family, strict: bool) {
        let mut msg = MsgWriter::new(
            buf,
            wire::RTM_GETROUTE,
            wire::NLM_F_REQUEST | wire::NLM_F_DUMP,
            seq,
        );
        let mut hdr = [0u8; RTMSG_LEN];
        hdr[0] = family.af();
        if strict {
            // With strict checking these header fields are filters; zero means "any".
            hdr[5] = self.protocol.unwrap_or(Protocol::UNSPEC).0;
        }
        msg.raw(&hdr);
        if strict {
            if let Some(table) = self.table {
                msg.attr_u32(RTA_TABLE, table.0);
            }
            if let Some(dev) = self.dev {
                msg.attr_u32(RTA_OIF, dev);
            }
        }
        msg.finish();
    }
}

/// A link query: all links, or one by index or name.
#[derive(Debug)]
#[must_use = "a query does nothing until executed"]
pub struct LinkQuery<'a> {
    platform: &'a Platform,
    ifindex: Option<u32>,
    name: Option<String>,
}

impl LinkQuery<'_> {
    /// Only the link with this index (asked of the kernel directly).
    pub fn ifindex(mut self, ifindex: Ifindex) -> Self {
        self.ifindex = Some(ifindex.0);
        self
    }
    /// Only the link with this name (asked of the kernel directly).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Runs the query. A link that does not exist gives an empty answer.
    pub fn execute(self) -> Result<Answer<Link>> {
        let single = self.ifindex.is_some() || self.name.is_some();
        let mut answer = Answer::new(single, true);
        let flags = if single {
            wire::NLM_F_REQUEST | wire::NLM_F_ACK
        } else {
            wire::NLM_F_REQUEST | wire::NLM_F_DUMP
        };
        let build = |buf: &mut Vec<u8>, seq: u32| {
            let mut msg = MsgWriter::new(buf, wire::RTM_GETLINK, flags, seq);
            let mut hdr = [0u8; IFINFOMSG_LEN];
            hdr[4..8].copy_from_slice(&self.ifindex.unwrap_or(0).to_ne_bytes());
            msg.raw(&hdr);
            if let Some(name) = &self.name {
                let mut bytes = name.as_bytes().to_vec();
                bytes.push(0);
                msg.attr(IFLA_IFNAME, &bytes);
            }
            msg.attr_u32(IFLA_EXT_MASK, RTEXT_FILTER_SKIP_STATS);
            msg.finish();
        };
        if single {
            let res = self.platform.request(build, |msg| {
                if let Some(link) = Link::parse(msg.payload)? {
                    answer.items.push(link);
                }
                Ok(())
            });
            match res {
                Ok(()) => {}
                Err(Error::Kernel(err)) if err.errno == libc::ENODEV => {}
                Err(err) => return Err(err),
            }
            return Ok(answer);
        }
        let mut collect = Collect::new();
        let mut report = VisitReport::new(false, true);
        visit_dump(
            self.platform,
            false,
            build,
            Link::parse,
            |_| true,
            &mut collect,
            &mut report,
            |_| false,
        )?;
        Ok(collect.answer(report))
    }

    /// Dumps every link to `visitor` as the dump arrives (the index and name filters are
    /// single requests: [`LinkQuery::execute`] answers them).
    pub fn visit<V: Visitor<Link>>(
        self,
        visitor: &mut V,
    ) -> std::result::Result<VisitReport, V::Error> {
        let mut report = VisitReport::new(false, true);
        visit_dump(
            self.platform,
            false,
            |buf, seq| {
                let mut msg = MsgWriter::new(
                    buf,
                    wire::RTM_GETLINK,
                    wire::NLM_F_REQUEST | wire::NLM_F_DUMP,
                    seq,
                );
                msg.raw(&[0u8; IFINFOMSG_LEN]);
                msg.attr_u32(IFLA_EXT_MASK, RTEXT_FILTER_SKIP_STATS);
                msg.finish();
            },
            Link::parse,
            |_| true,
            visitor,
            &mut report,
            |_| false,
        )?;
        Ok(report)
    }
}

/// An address query.
#[derive(Debug)]
#[must_use = "a query does nothing until executed"]
pub struct AddressQuery<'a> {
    platform: &'a Platform,
    family: Option<Family>,
    ifindex: Option<u32>,
}

impl AddressQuery<'_> {
    /// Only this family.
    pub fn family(mut self, family: Family) -> Self {
        self.family = Some(family);
        self
    }
    /// Only addresses of this interface.
    pub fn ifindex(mut self, ifindex: Ifindex) -> Self {
        self.ifindex = Some(ifindex.0);
        self
    }

    /// Runs the query.
    pub fn execute(self) -> Result<Answer<Address>> {
        let mut collect = Collect::new();
        let report = self.visit(&mut collect)?;
        Ok(collect.answer(report))
    }

    /// Runs the query, handing each address that passes its filters to `visitor` as the dump
    /// arrives ([`AddressQuery::execute`] is this with a visitor that collects).
    pub fn visit<V: Visitor<Address>>(
        self,
        visitor: &mut V,
    ) -> std::result::Result<VisitReport, V::Error> {
        let strict = self.platform.strict_check();
        let mut report = VisitReport::new(self.ifindex.is_some(), strict);
        let family = self.family.map_or(wire::AF_UNSPEC, Family::af);
        let ifindex = self.ifindex;
        visit_dump(
            self.platform,
            false,
            |buf, seq| {
                let mut msg = MsgWriter::new(
                    buf,
                    wire::RTM_GETADDR,
                    wire::NLM_F_REQUEST | wire::NLM_F_DUMP,
                    seq,
                );
                let mut hdr = [0u8; IFADDRMSG_LEN];
                hdr[0] = family;
                if strict {
                    hdr[4..8].copy_from_slice(&ifindex.unwrap_or(0).to_ne_bytes());
                }
                msg.raw(&hdr);
                msg.finish();
            },
            Address::parse,
            |addr| ifindex.is_none_or(|i| addr.ifindex() == Ifindex(i)),
            visitor,
            &mut report,
            |_| false,
        )?;
        Ok(report)
    }
}

/// A rule query.
#[derive(Debug)]
#[must_use = "a query does nothing until executed"]
pub struct RuleQuery<'a> {
    platform: &'a Platform,
    family: Option<Family>,
    table: Option<Table>,
}

impl RuleQuery<'_> {
    /// Only this family.
    pub fn family(mut self, family: Family) -> Self {
        self.family = Some(family);
        self
    }
    /// Only rules pointing at this table (filtered here: the kernel has no such filter).
    pub fn table(mut self, table: Table) -> Self {
        self.table = Some(table);
        self
    }

    /// Runs the query.
    pub fn execute(self) -> Result<Answer<Rule>> {
        let mut collect = Collect::new();
        let report = self.visit(&mut collect)?;
        Ok(collect.answer(report))
    }

    /// Runs the query, handing each rule that passes its filter to `visitor` as the dump
    /// arrives ([`RuleQuery::execute`] is this with a visitor that collects).
    pub fn visit<V: Visitor<Rule>>(
        self,
        visitor: &mut V,
    ) -> std::result::Result<VisitReport, V::Error> {
        let mut report = VisitReport::new(self.table.is_some(), false);
        let families = match self.family {
            Some(family) => &[family][..],
            None => &[Family::V4, Family::V6][..],
        };
        for &family in families {
            visit_dump(
                self.platform,
                false,
                |buf, seq| {
                    let mut msg = MsgWriter::new(
                        buf,
                        wire::RTM_GETRULE,
                        wire::NLM_F_REQUEST | wire::NLM_F_DUMP,
                        seq,
                    );
                    let mut hdr = [0u8; 12];
                    hdr[0] = family.af();
                    msg.raw(&hdr);
                    msg.finish();
                },
                Rule::parse,
                |rule| self.table.is_none_or(|t| rule.table() == t),
                visitor,
                &mut report,
                |_| false,
            )?;
        }
        Ok(report)
    }
}
