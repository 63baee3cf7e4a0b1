//! The cache's objects and how kernel messages change them, without a socket: [`State`].
//!
//! [`State::apply`] takes one rtnetlink message and changes the indexes as the kernel changed
//! its tables, including the changes the kernel makes without a notification that follow from
//! the message alone; what needs the kernel's word (a re-dump) is handed to the socket side as
//! [`Work`]. Unit tests drive it with captured kernel messages, without root.

use std::collections::HashMap;
use std::sync::Arc;

use dedup::{DedupIndex, IndexHandle, Placement};
use netmirror_dedup_index as dedup;

use super::{
    AddressesByIfindex, Change, DefaultRoutes, Event, IFF_RUNNING, NLM_F_APPEND, RTM_F_CLONED,
    RoutesByIfindex, RoutesByWeakId, upsert, upsert_at, weak_bucket,
};
use crate::addr::{Address, LIFETIME_FOREVER};
use crate::error::Result;
use crate::link::{IFF_LOWER_UP, IFF_UP, Link};
use crate::types::Ifindex;

/// `IFF_LOOPBACK`.
const IFF_LOOPBACK: u32 = 0x8;
use crate::nexthop::Nexthop;
use crate::route::{Family, Route, RouteId};
use crate::rule::{FR_ACT_GOTO, Rule};
use crate::wire::{self, Msg, Nlas};

/// Links, addresses, routes, rules and nexthops with their indexes, and the re-dumps the
/// messages applied so far call for.
#[derive(Debug)]
pub(crate) struct State {
    pub(crate) links: DedupIndex<Link>,
    pub(crate) addresses: DedupIndex<Address>,
    pub(crate) routes: DedupIndex<Route>,
    pub(crate) rules: DedupIndex<Rule>,
    pub(crate) nexthops: DedupIndex<Nexthop>,
    pub(crate) routes_by_ifindex: IndexHandle<RoutesByIfindex>,
    pub(crate) default_routes: IndexHandle<DefaultRoutes>,
    pub(crate) routes_by_weak_id: IndexHandle<RoutesByWeakId>,
    pub(crate) addresses_by_ifindex: IndexHandle<AddressesByIfindex>,
    /// Interfaces whose routes the kernel may have flushed or flagged without telling (link
    /// down, carrier change, address removed).
    suspect_ifindexes: Vec<u32>,
    /// Interfaces whose IPv6 prefix routes may have a new `expires` ([`Work::prefix_routes`]).
    suspect_prefix_routes: Vec<u32>,
    /// A link may have changed without telling ([`Work::links`]).
    suspect_links: bool,
    /// The kernel may have flushed nexthops without telling (a link on which one sits went
    /// down, lost its carrier or went away).
    suspect_nexthops: bool,
    /// Nexthops whose routes' reported next hops may have changed without a notification (a
    /// group lost a member, a member changed).
    suspect_nhids: Vec<u32>,
    /// Nexthops deleted whose routes are not removed yet ([`State::settle`]).
    deleted_nhids: Vec<u32>,
    /// Links a dump found gone before their `RTM_DELLINK` came. The kernel's events about
    /// such a link still queued were sent before it went (its `RTM_DELLINK` is its last), so
    /// they would bring the link, its addresses, routes or nexthops back for a while: they are
    /// dropped until its `RTM_DELLINK`, or until the event socket is drained, when nothing
    /// queued is older than the dump any more ([`State::events_drained`]).
    gone_links: Vec<u32>,
}

/// What the kernel must be asked again after the messages applied so far
/// ([`State::take_work`]), in this order.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Work {
    /// Dump the nexthops again ([`State::nexthops_resynced`] applies the consequences).
    pub(crate) nexthops: bool,
    /// Dump the links again.
    pub(crate) links: bool,
    /// Dump the routes again of the interfaces in `ifindexes`, sorted, without duplicates.
    pub(crate) ifindexes: Vec<u32>,
    /// Read again the IPv6 prefix routes (protocol kernel) of the interfaces in
    /// `prefix_routes`, sorted, without duplicates.
    pub(crate) prefix_routes: Vec<u32>,
}

impl Default for State {
    fn default() -> Self {
        State::new()
    }
}

impl State {
    /// Empty indexes.
    pub(crate) fn new() -> Self {
        let mut routes = DedupIndex::new();
        let routes_by_ifindex = routes.add_index(RoutesByIfindex);
        let default_routes = routes.add_index(DefaultRoutes);
        let routes_by_weak_id = routes.add_index(RoutesByWeakId);
        let mut addresses = DedupIndex::new();
        let addresses_by_ifindex = addresses.add_index(AddressesByIfindex);
        State {
            links: DedupIndex::new(),
            addresses,
            routes,
            rules: DedupIndex::new(),
            nexthops: DedupIndex::new(),
            routes_by_ifindex,
            default_routes,
            routes_by_weak_id,
            addresses_by_ifindex,
            suspect_ifindexes: Vec::new(),
            suspect_prefix_routes: Vec::new(),
            suspect_links: false,
            suspect_nexthops: false,
            suspect_nhids: Vec::new(),
            deleted_nhids: Vec::new(),
            gone_links: Vec::new(),
        }
    }

    /// The routes going out of one interface (by their first next hop).
    pub(crate) fn routes_of(&self, ifindex: u32) -> impl Iterator<Item = &Arc<Route>> {
        self.routes
            .partition(self.routes_by_ifindex, &ifindex)
            .into_iter()
            .flatten()
    }

    /// Gives back the route re-dumps of `ifindexes` that [`State::take_work`] handed out and
    /// that were put off.
    pub(crate) fn suspect_again(&mut self, ifindexes: impl IntoIterator<Item = u32>) {
        self.suspect_ifindexes.extend(ifindexes);
    }

    /// Whether [`State::settle`] or [`State::take_work`] has something to do.
    pub(crate) fn has_work(&self) -> bool {
        !self.suspect_ifindexes.is_empty()
            || !self.suspect_prefix_routes.is_empty()
            || self.suspect_links
            || self.suspect_nexthops
            || !self.suspect_nhids.is_empty()
            || !self.deleted_nhids.is_empty()
    }

    /// Takes the re-dumps the messages applied so far call for (the nexthops first: the
    /// routes on them are then right before a device's routes are dumped again, so a route
    /// that only lost a hop is not taken for gone). Routes on changed nexthops are asked
    /// for by [`State::take_nhid_refresh`] after the nexthops are resynced.
    /// Call [`State::settle`] first.
    pub(crate) fn take_work(&mut self) -> Work {
        let mut ifindexes = std::mem::take(&mut self.suspect_ifindexes);
        ifindexes.sort_unstable();
        ifindexes.dedup();
        let mut prefix_routes = std::mem::take(&mut self.suspect_prefix_routes);
        prefix_routes.sort_unstable();
        prefix_routes.dedup();
        Work {
            nexthops: std::mem::take(&mut self.suspect_nexthops),
            links: std::mem::take(&mut self.suspect_links),
            ifindexes,
            prefix_routes,
        }
    }

    /// After a nexthop re-dump synced the nexthop index and reported `changes`: removes the
    /// routes of the nexthops that are gone (the kernel deleted them silently) and notes the
    /// routes of those that changed for [`State::take_nhid_refresh`].
    pub(crate) fn nexthops_resynced(&mut self, changes: &[Event], out: &mut Vec<Event>) {
        let mut gone = Vec::new();
        for event in changes {
            match event {
                Event::Nexthop(Change::Removed(old)) => gone.push(old.id()),
                Event::Nexthop(Change::Replaced { new, .. }) => self.suspect_nhid(new.id()),
                _ => {}
            }
        }
        gone.sort_unstable();
        self.remove_routes_with_nhid(&gone, out);
    }

    /// The nexthops whose routes must be asked again (their reported next hops follow the
    /// nexthop objects without notifications), when the cache holds such a route; sorted.
    pub(crate) fn take_nhid_refresh(&mut self) -> Option<Vec<u32>> {
        if self.suspect_nhids.is_empty() {
            return None;
        }
        let mut ids = std::mem::take(&mut self.suspect_nhids);
        ids.sort_unstable();
        ids.dedup();
        let held = self.routes.iter().any(|route| {
            route
                .nh_id()
                .is_some_and(|id| ids.binary_search(&id).is_ok())
        });
        held.then_some(ids)
    }

    /// The interfaces whose routes (as the kernel's dump filter by device selects them, by
    /// any hop) include every route on the nexthops `ids`: a nexthop's own device, a group's
    /// first member's, `lo` for a blackhole. `None` when one is not known (a full dump then).
    pub(crate) fn devices_of_nexthops(&self, ids: &[u32]) -> Option<Vec<u32>> {
        let device = |nh: &Nexthop| -> Option<u32> {
            if nh.is_blackhole() {
                // The kernel's blackhole nexthop sits on the loopback device.
                return self
                    .links
                    .iter()
                    .find(|link| link.flags() & IFF_LOOPBACK != 0)
                    .map(|link| link.ifindex().0);
            }
            nh.oif().map(u32::from)
        };
        let mut devices = Vec::new();
        for id in ids {
            let nh = self.nexthops.get(id)?;
            let dev = match nh.group().first() {
                Some(member) => device(self.nexthops.get(&member.id)?)?,
                None => device(nh)?,
            };
            devices.push(dev);
        }
        devices.sort_unstable();
        devices.dedup();
        Some(devices)
    }

    /// Updates the routes on the nexthops `ids` (sorted) to what the kernel now reports of
    /// them: `fresh` is a dump that covers them (of every route, or of the devices of
    /// [`State::devices_of_nexthops`]). A held route the dump does not have is left alone:
    /// routes on a nexthop go with their nexthop (see [`State::settle`]) or with their own
    /// `RTM_DELROUTE`, never silently while it lives.
    pub(crate) fn nhid_routes_refreshed(
        &mut self,
        ids: &[u32],
        fresh: Vec<Route>,
        out: &mut Vec<Event>,
    ) {
        let uses = |route: &Route| {
            route
                .nh_id()
                .is_some_and(|id| ids.binary_search(&id).is_ok())
        };
        for route in fresh {
            if route.flags() & RTM_F_CLONED == 0
                && uses(&route)
                && self.routes.get(&route.id()).is_some()
            {
                out.extend(upsert(&mut self.routes, route, Event::Route));
            }
        }
    }

    /// Makes the held routes `held` what `fresh` (a dump that covers them) says: replaced,
    /// or removed when the dump no longer has them. Routes the cache did not hold come with
    /// their own events.
    pub(crate) fn replace_held(
        &mut self,
        held: Vec<RouteId>,
        mut fresh: HashMap<RouteId, Route>,
        out: &mut Vec<Event>,
    ) {
        for id in held {
            match fresh.remove(&id) {
                Some(route) => out.extend(upsert(&mut self.routes, route, Event::Route)),
                None => out.extend(
                    self.routes
                        .remove(&id)
                        .map(|old| Event::Route(Change::Removed(old))),
                ),
            }
        }
    }

    /// Applies one message of the event socket: the object it announces, and what the
    /// kernel changes without a word because of it (a link's routes when it goes away, a
    /// deleted nexthop's routes). What only the kernel can tell (routes flushed when a link
    /// goes down, nexthops flushed with their link, routes whose nexthop changed) is noted
    /// for [`State::take_work`].
    pub(crate) fn apply(&mut self, msg: &Msg<'_>, out: &mut Vec<Event>) -> Result<()> {
        match msg.kind {
            wire::RTM_NEWLINK => {
                let Some(link) = Link::parse(msg.payload)? else {
                    self.apply_bridge_port(msg.payload, out);
                    return Ok(());
                };
                if self.on_gone_link(Some(link.ifindex())) {
                    return Ok(());
                }
                if let Some(Event::Link(change)) = upsert(&mut self.links, link, Event::Link) {
                    self.after_link_change(change, out);
                }
            }
            wire::RTM_DELLINK => {
                let Some(link) = Link::parse(msg.payload)? else {
                    return Ok(());
                };
                let ifindex = link.ifindex().0;
                self.gone_links.retain(|&gone| gone != ifindex);
                let old = self.links.remove(&ifindex);
                self.after_link_removal(ifindex, old, out);
            }
            wire::RTM_NEWADDR => {
                if let Some(addr) = Address::parse(msg.payload)?
                    && !self.on_gone_link(Some(addr.ifindex()))
                    && let Some(event) = upsert(&mut self.addresses, addr, Event::Address)
                {
                    // An IPv6 address's new valid lifetime becomes its prefix route's
                    // `expires` (none when forever) without a route notification.
                    if let Event::Address(Change::Replaced { old, new }) = &event
                        && new.family() == Family::V6
                        && (old.lifetimes().0 != LIFETIME_FOREVER
                            || new.lifetimes().0 != LIFETIME_FOREVER)
                    {
                        self.suspect_prefix_routes.push(new.ifindex().into());
                    }
                    // A link's first IPv4 address brings back to life the next hops that
                    // died with its last one (fib_sync_up), silently.
                    if let Event::Address(Change::Added(new)) = &event
                        && new.family() == Family::V4
                    {
                        let ifindex = u32::from(new.ifindex());
                        let ipv4 = self
                            .addresses
                            .partition(self.addresses_by_ifindex, &ifindex)
                            .into_iter()
                            .flatten()
                            .filter(|addr| addr.family() == Family::V4)
                            .take(2)
                            .count();
                        if ipv4 == 1 {
                            self.suspect_ifindexes.push(ifindex);
                        }
                    }
                    out.push(event);
                }
            }
            wire::RTM_DELADDR => {
                if let Some(addr) = Address::parse(msg.payload)? {
                    if let Some(old) = self.addresses.remove(&addr.id()) {
                        out.push(Event::Address(Change::Removed(old)));
                    }
                    // Routes using it as preferred source go without notifications.
                    if addr.family() == Family::V4 {
                        self.suspect_ifindexes.push(addr.ifindex().into());
                    }
                }
            }
            wire::RTM_NEWROUTE => {
                if let Some(route) = Route::parse(msg.payload)?
                    && route.flags() & RTM_F_CLONED == 0
                    && !self.on_gone_link(route.oif())
                {
                    self.settle_for(route.nh_id(), out);
                    self.apply_new_route(route, msg.flags, out);
                }
            }
            wire::RTM_DELROUTE => {
                if let Some(route) = Route::parse(msg.payload)? {
                    self.apply_del_route(&route, out);
                }
            }
            wire::RTM_NEWRULE => {
                if let Some(rule) = Rule::parse(msg.payload)?
                    && let Some(event) = upsert(&mut self.rules, rule.clone(), Event::Rule)
                {
                    out.push(event);
                    self.resolve_gotos(rule.family(), rule.priority(), out);
                }
            }
            wire::RTM_DELRULE => {
                if let Some(rule) = Rule::parse(msg.payload)?
                    && let Some(old) = self.rules.remove(&rule.id())
                {
                    out.push(Event::Rule(Change::Removed(old)));
                    self.resolve_gotos(rule.family(), rule.priority(), out);
                }
            }
            wire::RTM_NEWNEXTHOP => {
                if let Some(nh) = Nexthop::parse(msg.payload)?
                    && !self.on_gone_link(nh.oif())
                {
                    self.settle_for(Some(nh.id()), out);
                    self.apply_new_nexthop(nh, msg.flags, out);
                }
            }
            wire::RTM_DELNEXTHOP => {
                if let Some(nh) = Nexthop::parse(msg.payload)? {
                    self.apply_del_nexthop(nh.id(), out);
                }
            }
            wire::RTM_NEWNETCONF => self.apply_netconf(msg.payload),
            wire::RTM_NEWQDISC | wire::RTM_DELQDISC => self.apply_qdisc(msg.kind, msg.payload),
            wire::NLMSG_DONE | wire::NLMSG_NOOP => {}
            other => tracing::trace!(kind = other, "ignored message type"),
        }
        Ok(())
    }

    /// Applies an `RTM_NEWNETCONF`. A sysctl write of `ignore_routes_with_linkdown` (the
    /// message then holds the link's index, or `all`'s, and that setting alone) makes the
    /// kernel report the next hops without a carrier as `dead` as well as `linkdown`, or no
    /// longer, on every route through them, and no route notification comes; so the routes
    /// of the links concerned that have no carrier are read again. A link's first message,
    /// when it registers, holds every setting: a new link has no routes to change.
    fn apply_netconf(&mut self, payload: &[u8]) {
        const NETCONFA_IFINDEX: u16 = 1;
        const NETCONFA_IGNORE_ROUTES_WITH_LINKDOWN: u16 = 6;
        /// `NETCONFA_IFINDEX` of the `all` settings, which every link follows.
        const NETCONFA_IFINDEX_ALL: u32 = u32::MAX;
        // `struct netconfmsg` is one byte (the family), aligned to four.
        let Some(attrs) = payload.get(4..) else {
            return;
        };
        let (mut ifindex, mut linkdown, mut others) = (None, false, false);
        let mut nlas = Nlas::new(attrs);
        for (kind, value) in &mut nlas {
            match kind {
                NETCONFA_IFINDEX => ifindex = wire::nla_u32(value),
                NETCONFA_IGNORE_ROUTES_WITH_LINKDOWN => linkdown = true,
                _ => others = true,
            }
        }
        let Some(ifindex) = ifindex.filter(|_| linkdown && !others && !nlas.malformed()) else {
            return;
        };
        self.suspect_ifindexes.extend(
            self.links
                .iter()
                .filter(|link| link.flags() & IFF_LOWER_UP == 0)
                .map(|link| link.ifindex().0)
                .filter(|&index| ifindex == NETCONFA_IFINDEX_ALL || ifindex == index),
        );
    }

    /// Applies an `RTM_NEWQDISC`/`RTM_DELQDISC`. A link's `qdisc` (`IFLA_QDISC`) is the
    /// kind of its root queueing discipline, and `tc` replacing or deleting that one changes
    /// it with no link notification; so the links are read again when a root discipline of
    /// another kind than the held link's comes, or one goes (the kernel then attaches its
    /// default, which it does not announce). Other disciplines, classes and filters are not
    /// looked at.
    fn apply_qdisc(&mut self, kind: u16, payload: &[u8]) {
        /// `tcm_parent` of a root discipline.
        const TC_H_ROOT: u32 = u32::MAX;
        const TCA_KIND: u16 = 1;
        /// Length of `struct tcmsg`.
        const TCMSG_LEN: usize = 20;
        let Some(hdr) = payload.get(..TCMSG_LEN) else {
            return;
        };
        if wire::u32_at(hdr, 12) != TC_H_ROOT {
            return;
        }
        let Some(link) = self.links.get(&wire::u32_at(hdr, 4)) else {
            return;
        };
        let held = match link.setting("qdisc") {
            Some(crate::AttrValue::Text(held)) => Some(held.as_str()),
            _ => None,
        };
        let new_kind = Nlas::new(&payload[TCMSG_LEN..])
            .find(|(attr, _)| *attr == TCA_KIND)
            .map(|(_, value)| wire::nla_str(value));
        if kind == wire::RTM_DELQDISC || new_kind.as_deref() != held {
            self.suspect_links = true;
        }
    }

    /// Applies a bridge port's `AF_BRIDGE` `RTM_NEWLINK`: the port's STP state (and its
    /// other port settings) change with this message only, never with a link message of
    /// its own, so the held link's port data takes its values.
    fn apply_bridge_port(&mut self, payload: &[u8], out: &mut Vec<Event>) {
        let Some(ifindex) = payload
            .get(..crate::link::IFINFOMSG_LEN)
            .filter(|hdr| hdr[0] == wire::AF_BRIDGE)
            .map(|hdr| wire::u32_at(hdr, 4))
        else {
            return;
        };
        if let Some(link) = self
            .links
            .get(&ifindex)
            .and_then(|held| held.with_bridge_port_info(payload))
        {
            out.extend(upsert(&mut self.links, link, Event::Link));
        }
    }

    /// Sets the `unresolved` flag of the `goto` rules of `family` that jump to `priority`
    /// after a rule there came or went: the kernel resolves a goto to the first rule at its
    /// target priority, and to the next one there when that goes, without an event.
    fn resolve_gotos(&mut self, family: Family, priority: u32, out: &mut Vec<Event>) {
        let target_exists = self
            .rules
            .iter()
            .any(|rule| rule.family() == family && rule.priority() == priority);
        let changed: Vec<Rule> = self
            .rules
            .iter()
            .filter(|rule| {
                rule.family() == family
                    && rule.action() == FR_ACT_GOTO
                    && rule.goto() == Some(priority)
            })
            .filter_map(|rule| {
                rule.with_state_flags(!target_exists, rule.iif_detached(), rule.oif_detached())
            })
            .collect();
        for rule in changed {
            out.extend(upsert(&mut self.rules, rule, Event::Rule));
        }
    }

    /// Sets the `iif`/`oif` detached flags of the rules after a link named `gone` (or one
    /// of its altnames) went away or changed its name, and a link is now called `named`:
    /// the kernel detaches the rules attached to the link that went or was renamed, then
    /// attaches the detached rules naming the new name, without an event.
    fn relink_rules(&mut self, gone: Option<&Link>, named: Option<&str>, out: &mut Vec<Event>) {
        let was = |name: Option<&str>| {
            gone.is_some_and(|link| {
                name.is_some_and(|name| {
                    name == link.name() || link.altnames().iter().any(|alt| alt == name)
                })
            })
        };
        let is = |name: Option<&str>| named.is_some() && name == named;
        let changed: Vec<Rule> = self
            .rules
            .iter()
            .filter_map(|rule| {
                let iif = (rule.iif_detached() || was(rule.iifname())) && !is(rule.iifname());
                let oif = (rule.oif_detached() || was(rule.oifname())) && !is(rule.oifname());
                rule.with_state_flags(rule.is_unresolved(), iif, oif)
            })
            .collect();
        for rule in changed {
            out.extend(upsert(&mut self.rules, rule, Event::Rule));
        }
    }

    /// Applies an `RTM_NEWROUTE` event where the kernel put the route. Among routes with the
    /// same prefix key (weak id) order is meaning: the kernel's flags say where the new route
    /// went, as NetworkManager's platform cache reads them: `NLM_F_REPLACE` took the first
    /// peer's place, `NLM_F_APPEND` (and `NLM_F_EXCL`, which IPv6 lets through with a
    /// different next hop) went after the last peer, and `NLM_F_CREATE` alone (`ip route
    /// prepend`) before the first. A route the cache already holds is updated where it is; an
    /// IPv6 sibling added to a held multipath route is merged into it in the kernel's order.
    fn apply_new_route(&mut self, route: Route, flags: u16, out: &mut Vec<Event>) {
        if route.family() == Family::V4 && flags & wire::NLM_F_EXCL != 0 {
            // IPv4 announces an addition with `NLM_F_EXCL` only when no route had its prefix
            // key (`fib_table_insert` clears the flag when it finds one): no peers to place it
            // among, so no walk of its weak-id bucket (tens of routes at 100k, hundreds at 1M),
            // and no look for a held route first (one held is updated where it is).
            if let Some(event) = upsert(&mut self.routes, route, Event::Route) {
                out.push(event);
            }
            return;
        }
        let id = route.id();
        if let Some(held) = self.routes.get(&id) {
            if flags & wire::NLM_F_REPLACE == 0
                && route.family() == Family::V6
                && !route.multipath().is_empty()
                && route.nh_id().is_none()
            {
                let merged = held.with_siblings_of(&route);
                if let Some(event) = upsert(&mut self.routes, merged, Event::Route) {
                    out.push(event);
                }
                return;
            }
        } else {
            let weak = route.weak_id();
            let mut peers = self
                .routes
                .partition(self.routes_by_weak_id, &weak_bucket(&weak))
                .into_iter()
                .flatten()
                .filter(|held| held.same_weak_id(&route))
                .map(|held| Route::id(held));
            let first = peers.next();
            let last = peers.next_back().or(first);
            if let (Some(first), Some(last)) = (first, last) {
                if flags & wire::NLM_F_REPLACE != 0 {
                    let placed = self.routes.insert(route, Placement::Before(first));
                    if let (Ok(dedup::Change::Added(new)), Some(old)) =
                        (placed, self.routes.remove(&first))
                    {
                        out.push(Event::Route(Change::Replaced { old, new }));
                    }
                    return;
                }
                let placement = if flags & (NLM_F_APPEND | wire::NLM_F_EXCL) != 0 {
                    Placement::After(last)
                } else {
                    Placement::Before(first)
                };
                out.extend(upsert_at(&mut self.routes, route, placement, Event::Route));
                return;
            }
        }
        if let Some(event) = upsert(&mut self.routes, route, Event::Route) {
            out.push(event);
        }
    }

    fn apply_del_route(&mut self, route: &Route, out: &mut Vec<Event>) {
        let id = route.id();
        // IPv6 announces the deletion of one sibling of a multipath route as that hop alone.
        if route.family() == Family::V6 && route.multipath().is_empty() && route.nh_id().is_none() {
            let reduced = self
                .routes
                .get(&id)
                .filter(|held| !held.multipath().is_empty())
                .and_then(|held| held.without_hop(route.gateway(), route.oif().map(u32::from)));
            if let Some(reduced) = reduced {
                if let Some(event) = upsert(&mut self.routes, reduced, Event::Route) {
                    out.push(event);
                }
                return;
            }
        }
        match self.routes.remove(&id) {
            Some(old) => out.push(Event::Route(Change::Removed(old))),
            None => tracing::trace!(?route, "deleted route was not cached"),
        }
    }

    /// Applies an `RTM_NEWNEXTHOP` event. The kernel does not announce what a changed
    /// nexthop does to the routes using it (their next hops are reported from it), so those
    /// routes, and the routes of the groups it is a member of, are asked again at the end of
    /// the poll.
    ///
    /// A replace (`NLM_F_REPLACE`, as `ip nexthop replace` and routing daemons send it) is
    /// the exception: the kernel then announces every route on the nexthop and on the groups
    /// holding it, so nothing is asked again. A group changed because a member was deleted
    /// carries the delete's flags.
    fn apply_new_nexthop(&mut self, nh: Nexthop, flags: u16, out: &mut Vec<Event>) {
        let id = nh.id();
        if let Some(event) = upsert(&mut self.nexthops, nh, Event::Nexthop) {
            if matches!(event, Event::Nexthop(Change::Replaced { .. }))
                && flags & wire::NLM_F_REPLACE == 0
            {
                self.suspect_nhid(id);
            }
            out.push(event);
        }
    }

    /// Applies an `RTM_DELNEXTHOP` event: the kernel deletes the routes using the nexthop
    /// without a notification for IPv4 (and the groups it was in are announced apart). The
    /// routes go at the next [`State::settle`] (one walk over the routes for many deletions,
    /// as `ip nexthop flush` makes them), or before a message that may concern them.
    fn apply_del_nexthop(&mut self, id: u32, out: &mut Vec<Event>) {
        if let Some(old) = self.nexthops.remove(&id) {
            out.push(Event::Nexthop(Change::Removed(old)));
        }
        self.deleted_nhids.push(id);
    }

    /// Removes the routes of the nexthops deleted since the last call: what the messages
    /// applied so far imply without asking the kernel. Call it before reading the routes.
    pub(crate) fn settle(&mut self, out: &mut Vec<Event>) {
        if self.deleted_nhids.is_empty() {
            return;
        }
        let mut ids = std::mem::take(&mut self.deleted_nhids);
        ids.sort_unstable();
        ids.dedup();
        self.remove_routes_with_nhid(&ids, out);
    }

    /// Settles first when `nh_id` was deleted and not settled yet: a nexthop added again
    /// with that id, or a route on it, is new and must not go with the old routes.
    fn settle_for(&mut self, nh_id: Option<u32>, out: &mut Vec<Event>) {
        if nh_id.is_some_and(|id| self.deleted_nhids.contains(&id)) {
            self.settle(out);
        }
    }

    /// Removes the routes pointing at one of `ids` (the kernel deleted them with their
    /// nexthop). A walk over all routes: this runs only when nexthops go.
    /// `ids` is sorted.
    fn remove_routes_with_nhid(&mut self, ids: &[u32], out: &mut Vec<Event>) {
        if ids.is_empty() {
            return;
        }
        let gone: Vec<RouteId> = self
            .routes
            .iter()
            .filter(|route| {
                route
                    .nh_id()
                    .is_some_and(|id| ids.binary_search(&id).is_ok())
            })
            .map(|route| Route::id(route))
            .collect();
        for id in gone {
            if let Some(old) = self.routes.remove(&id) {
                out.push(Event::Route(Change::Removed(old)));
            }
        }
    }

    /// Schedules the routes using nexthop `id`, directly or through a group, to be asked
    /// again.
    fn suspect_nhid(&mut self, id: u32) {
        self.suspect_nhids.push(id);
        let groups = self
            .nexthops
            .iter()
            .filter(|nh| nh.has_member(id))
            .map(|nh| nh.id());
        self.suspect_nhids.extend(groups);
    }

    /// Reports a link's change already made in `links` (`change` is its event), with what
    /// the kernel changes because of it without a word: rules attached or detached by name,
    /// re-dumps noted for [`State::take_work`], and for a removal the link's routes and
    /// addresses. The same whether the change came from the link's event or from a dump of the
    /// links (a refresh or a resync) that saw it before its event, which then changes nothing.
    pub(crate) fn after_link_change(&mut self, change: Change<Link>, out: &mut Vec<Event>) {
        // Only a dump reports a removal here (an event's goes to `after_link_removal`).
        if let Change::Removed(old) = change {
            let ifindex = old.ifindex().0;
            self.link_gone_before_its_event(ifindex);
            self.after_link_removal(ifindex, Some(old), out);
            return;
        }
        let mut rule_events = Vec::new();
        match &change {
            Change::Added(new) => {
                self.relink_rules(None, Some(new.name()), &mut rule_events);
                // A veth pair's first end is announced before its peer exists, with no parent
                // (`IFLA_LINK` 0); it gets the peer when the peer comes, silently.
                if let Some(parent) = new.parent()
                    && self.links.get(&parent.0).is_some_and(|held| {
                        held.parent() == Some(Ifindex(0)) && held.link_netnsid().is_none()
                    })
                {
                    self.suspect_links = true;
                }
            }
            Change::Replaced { old, new } => {
                if old.name() != new.name() {
                    self.relink_rules(Some(old), Some(new.name()), &mut rule_events);
                }
                self.suspect_after_link_change(old, new);
            }
            Change::Removed(_) => {}
        }
        out.push(Event::Link(change));
        out.append(&mut rule_events);
    }

    /// Notes that a dump found link `ifindex` gone before its `RTM_DELLINK` came: the events
    /// about it still queued are older than its removal ([`State::gone_links`]).
    fn link_gone_before_its_event(&mut self, ifindex: u32) {
        if !self.gone_links.contains(&ifindex) {
            self.gone_links.push(ifindex);
        }
    }

    /// Whether `ifindex` is a link a dump found gone whose older events are still queued.
    fn on_gone_link(&self, ifindex: Option<Ifindex>) -> bool {
        ifindex.is_some_and(|ifindex| self.gone_links.contains(&ifindex.0))
    }

    /// The event socket was drained: every event sent before the last dump has been read.
    pub(crate) fn events_drained(&mut self) {
        self.gone_links.clear();
    }

    /// Reports the removal of link `ifindex` (`old`, when the cache held it; it is no longer
    /// in `links`) and what the kernel removes with it without a word. After a dump that saw
    /// the removal first, the event finds nothing left to remove; it only asks the nexthop
    /// re-dump again.
    fn after_link_removal(&mut self, ifindex: u32, old: Option<Arc<Link>>, out: &mut Vec<Event>) {
        // A veth end moved to another namespace leaves here as deleted; its peer's parent is
        // then in another namespace (IFLA_LINK_NETNSID), silently.
        if self
            .links
            .iter()
            .any(|other| other.parent() == Some(Ifindex(ifindex)) && other.link_netnsid().is_none())
        {
            self.suspect_links = true;
        }
        // Its nexthops go without notifications, and the routes using them.
        self.suspect_nexthops_on(ifindex);
        // Its routes go without notifications; its addresses are announced, but drop any left
        // so the cache never points at a missing link. Routes on nexthop objects follow their
        // nexthops (a group keeps its other members).
        let gone: Vec<RouteId> = self
            .routes_of(ifindex)
            .filter(|route| route.nh_id().is_none())
            .map(|route| Route::id(route))
            .collect();
        for id in gone {
            if let Some(old) = self.routes.remove(&id) {
                out.push(Event::Route(Change::Removed(old)));
            }
        }
        if let Ok(n) = self
            .addresses
            .mark_partition(self.addresses_by_ifindex, &ifindex)
            && n > 0
        {
            let removed = self
                .addresses
                .sweep_partition(self.addresses_by_ifindex, &ifindex)
                .unwrap_or_default();
            out.extend(
                removed
                    .into_iter()
                    .map(|a| Event::Address(Change::Removed(a))),
            );
        }
        // IPv4 multipath routes with any hop on it die with it, also silently (an IPv6 one
        // loses the hop there, which the kernel announces before the link).
        for id in self.multipath_through(ifindex, Some(Family::V4)) {
            if let Some(old) = self.routes.remove(&id) {
                out.push(Event::Route(Change::Removed(old)));
            }
        }
        if let Some(old) = old {
            let mut rule_events = Vec::new();
            self.relink_rules(Some(&old), None, &mut rule_events);
            out.push(Event::Link(Change::Removed(old)));
            out.append(&mut rule_events);
        }
    }

    /// Notes what a link's change makes the kernel change without a word, for
    /// [`State::take_work`] (part of [`after_link_change`](Self::after_link_change)).
    fn suspect_after_link_change(&mut self, old: &Link, new: &Link) {
        let ifindex = new.ifindex().0;
        // Going down flushes IPv4 routes without notifications; losing or getting back the
        // carrier flips the `linkdown` flag of every route on the link, also silently.
        let watched = IFF_UP | IFF_LOWER_UP | IFF_RUNNING;
        // A new MTU rewrites the unlocked `mtu` metric of the IPv6 routes on the link
        // (rt6_mtu_change), also silently.
        if (old.flags() ^ new.flags()) & watched != 0
            || (old.mtu() != new.mtu()
                && self
                    .routes_of(ifindex)
                    .any(|route| route.family() == Family::V6 && route.has_unlocked_mtu()))
        {
            self.suspect_ifindexes.push(ifindex);
        }
        // Going down or losing the carrier flushes the nexthops on it, and changes the dead and
        // linkdown flags of the others, silently.
        if old.flags() != new.flags() {
            self.suspect_nexthops_on(ifindex);
        }
        // Below the MTU IPv6 needs (1280) the link loses its IPv6 state (`IFLA_AF_SPEC`'s
        // address generation mode), and back above it gets it again, after the link's
        // announcement.
        if (old.mtu() < IPV6_MIN_MTU) != (new.mtu() < IPV6_MIN_MTU) {
            self.suspect_links = true;
        }
        // A port joining or leaving a bridge changes its promiscuity and allmulti counts and
        // the bridge's TSO limits; a macvlan going up or down, its lower link's promiscuity
        // count: silently where no flag changes with them (the count was above zero already).
        if old.controller() != new.controller()
            || ((old.flags() ^ new.flags()) & IFF_UP != 0 && counts_on_its_lower_link(new))
        {
            self.suspect_links = true;
        }
    }

    /// Schedules a nexthop re-dump if a held nexthop sits on `ifindex` (the kernel flushes
    /// those without notifications when the link goes down, loses its carrier or goes
    /// away).
    fn suspect_nexthops_on(&mut self, ifindex: u32) {
        if self
            .nexthops
            .iter()
            .any(|nh| nh.oif() == Some(Ifindex(ifindex)))
        {
            self.suspect_nexthops = true;
        }
    }

    /// The multipath routes (of `family`, or both) with a next hop on `ifindex` other than
    /// the first (those are in the interface's partition already). A walk over all routes:
    /// this runs only when a link goes down, loses its carrier or goes away.
    pub(crate) fn multipath_through(&self, ifindex: u32, family: Option<Family>) -> Vec<RouteId> {
        self.routes
            .iter()
            .filter(|route| family.is_none_or(|family| route.family() == family))
            .filter(|route| route.nh_id().is_none())
            .filter(|route| match route.multipath() {
                [first, rest @ ..] => {
                    first.ifindex != Ifindex(ifindex)
                        && rest.iter().any(|hop| hop.ifindex == Ifindex(ifindex))
                }
                [] => false,
            })
            .map(|route| Route::id(route))
            .collect()
    }
}

/// The least MTU IPv6 works with: below it a link has no IPv6 state.
const IPV6_MIN_MTU: u32 = 1280;

/// Whether `link` adds to its lower link's promiscuity count while it is up (a macvlan or
/// a macvtap; one deleted while up is first announced down).
fn counts_on_its_lower_link(link: &Link) -> bool {
    matches!(link.kind(), Some("macvlan" | "macvtap"))
}

#[cfg(test)]
mod tests;
