//! `monitor [link|addr|route|rule|nexthop]...`: the kernel's changes as they happen.
//!
//! It opens a `netmirror-platform` [`Cache`] (which loads everything, then follows the
//! multicast groups) and prints each change the cache reports, with the old and the new
//! object: `[ROUTE] changed dst 10.0.0.0/24 ...: metric 100 → 200` for people, one JSON
//! object per line with `--json` (`{"object":"route","event":"added","old":null,"new":{...}}`),
//! and with `-d` the lines `ip -d monitor` prints (`Deleted ` before a removal).
//! When the kernel drops events (ENOBUFS) the cache resyncs and reports what changed; the
//! monitor says so with an `overrun` and a `resynced` line.
//!
//! SIGINT and SIGTERM end it with a last `[MONITOR] stopped` line and status 0. With
//! `--netns NAME|PATH`, it checks every second that the name still leads to the namespace it
//! follows; when the namespace was deleted (`ip netns delete`, or the process of a
//! `/proc/PID/ns/net` path ended) it says so and ends with status 1, rather than holding the
//! namespace alive unseen (its socket keeps the namespace from going away).

use std::collections::BTreeMap;
use std::sync::{Arc, LazyLock};
use std::time::{Duration, Instant};

use netmirror_platform::{Cache, Change, Config, Event, Link, Route, text};
use serde_json::{Map, Value};

use crate::args::{KernelArgs, MonitorArgs, MonitorObject};
use crate::failure::Failure;
use crate::kernel::{self, LinkNames};
use crate::render::{self, Cell, EventKind, EventRows, Field, Mode, Printer};
use crate::signals::Interrupt;

/// The route columns of monitor lines: those of `route`, with the next hops shown by default
/// (an added multipath route or one on a nexthop group lists its hops).
static MONITOR_ROUTE_FIELDS: LazyLock<Vec<Field>> = LazyLock::new(|| {
    kernel::ROUTE_FIELDS
        .iter()
        .map(|field| match field.key {
            "nexthops" => Field::common(field.header, field.key),
            _ => *field,
        })
        .collect()
});

/// The longest wait for events before the monitor looks at signals and its namespace again.
const TICK: Duration = Duration::from_millis(200);

/// A poll that read this many events and emptied the socket is taken for a burst under way
/// (the kernel announces one route at a time, and a monitor as fast as the burst would wake
/// up for every few): the monitor then pauses [`BURST_PAUSE`] before it waits for the socket
/// again, so that it wakes once per few hundred events (a 100k-route `ip -batch` announces
/// about 70 a millisecond). Isolated events are printed at once; in a burst, an event waits
/// at most the pause longer.
const BURST_EVENTS: usize = 4;

/// See [`BURST_EVENTS`].
const BURST_PAUSE: Duration = Duration::from_millis(3);

/// How often the namespace's name is checked.
const NETNS_CHECK: Duration = Duration::from_secs(1);

/// Runs until interrupted (or until stdout is closed, or the namespace is deleted).
pub(crate) fn run(
    printer: &mut Printer,
    kernel_args: &KernelArgs,
    args: &MonitorArgs,
) -> anyhow::Result<()> {
    let wanted = |object: MonitorObject| args.objects.is_empty() || args.objects.contains(&object);
    // `-d`: the lines `ip -d monitor` prints, for people.
    let details = kernel_args.details && printer.mode() == Mode::Human;
    // `-d --json`: a route on a nexthop object carries it (`nh_info`).
    let json_details = kernel_args.details && printer.mode() == Mode::Json;
    let family = kernel::family(kernel_args);
    let interrupt = Interrupt::install()?;
    let watch = match kernel::netns(kernel_args) {
        Some(netns) => Some(
            netns
                .watch()
                .map_err(|err| kernel::explain(err, "open the network namespace"))?,
        ),
        None => None,
    };
    let refresh = Some(args.link_refresh).filter(|every| !every.is_zero());
    let mut config = Config::new().with_link_refresh(refresh);
    if let Some(watch) = &watch {
        config = config.with_netns(watch.netns());
    }
    let mut cache =
        Cache::open(config).map_err(|err| kernel::explain(err, "open the kernel cache"))?;
    let mut names = LinkNames::from_links(
        &cache
            .links()
            .map(|link| (**link).clone())
            .collect::<Vec<_>>(),
    );
    // Each link as last shown, by index: what the rows of a link's peers and ports are made
    // from when its name or up state changes. Not the cache's links: the cache already holds
    // the whole batch of events read, links whose own events come later in it among them.
    let mut shown: BTreeMap<u32, Arc<Link>> = cache
        .links()
        .map(|link| (link.ifindex().0, Arc::clone(link)))
        .collect();
    tracing::debug!(counts = ?cache.counts(), "monitor ready");
    let mut events = Vec::new();
    // The names of the last route's table, protocol, type and scope: the next one's, mostly.
    let mut route_names = kernel::NameMemo::default();
    let mut checked = Instant::now();
    let mut netns = NetnsNames::default();
    loop {
        if let Some(signal) = interrupt.received() {
            let mut details = Map::new();
            details.insert("signal".to_owned(), Value::from(signal.name()));
            let text = format!("[MONITOR] stopped by {}", signal.name());
            print_status(printer, "monitor", "stopped", details, &text)?;
            // The process ends now: freeing the cache object by object (every route of
            // the namespace) would only cost time, as for the nm views.
            std::mem::forget(cache);
            return Ok(());
        }
        if let Some(watch) = &watch
            && checked.elapsed() >= NETNS_CHECK
        {
            checked = Instant::now();
            if watch.deleted() {
                let mut details = Map::new();
                details.insert("netns".to_owned(), Value::from(watch.name()));
                let text = format!("[NETNS] deleted: network namespace {}", watch.name());
                print_status(printer, "netns", "deleted", details, &text)?;
                return Err(Failure::NamespaceDeleted {
                    netns: watch.name(),
                }
                .into());
            }
        }
        events.clear();
        let status = cache
            .poll_status(Some(TICK), &mut events)
            .map_err(|err| kernel::explain(err, "read kernel events"))?;
        for event in &events {
            match event {
                Event::Link(change) => {
                    let ifindex = change.new().or(change.old()).map(|link| link.ifindex());
                    // A link's name and up state show in the rows of the links that name it
                    // (its veth peer's `link` and `M-DOWN`, its ports' `master`).
                    let names_before = match change {
                        Change::Replaced { old, new }
                            if old.name() == new.name()
                                && kernel::is_up(old) == kernel::is_up(new) =>
                        {
                            None
                        }
                        _ => Some(names.clone()),
                    };
                    if let Some(link) = change.new() {
                        names.insert(link.ifindex(), link.name());
                        names.set_up(link.ifindex(), kernel::is_up(link));
                        shown.insert(link.ifindex().0, Arc::clone(link));
                    }
                    // A renamed (or gone) link's routes show its new name from now on.
                    route_names.forget_devices();
                    if wanted(MonitorObject::Link) && details {
                        let link = change.new().or(change.old());
                        if let Some(id) = link.and_then(|link| link.link_netnsid()) {
                            netns.refresh(cache.platform(), id);
                        }
                        let lines =
                            link.map(|link| kernel::link_detail_text(link, &names, &netns.names));
                        print_detailed(printer, change, lines)?;
                    } else if wanted(MonitorObject::Link) {
                        let row = |link: &netmirror_platform::Link| kernel::link_row(link, &names);
                        print_change(printer, "link", kernel::LINK_FIELDS, change, row)?;
                    }
                    if let Change::Removed(link) = change {
                        names.remove(link.ifindex());
                        shown.remove(&link.ifindex().0);
                        tracing::trace!(n_names = names.len(), "link name forgotten");
                    }
                    if let (Some(ifindex), Some(names_before)) = (ifindex, names_before)
                        && wanted(MonitorObject::Link)
                        && !details
                    {
                        // Say so, as the change it is to their rows as last shown.
                        for peer in shown.values().filter(|peer| {
                            peer.ifindex() != ifindex
                                && ((peer.parent() == Some(ifindex)
                                    && peer.link_netnsid().is_none())
                                    || peer.controller() == Some(ifindex))
                        }) {
                            let old = kernel::link_row(peer, &names_before);
                            let new = kernel::link_row(peer, &names);
                            if old != new {
                                printer.event_buffered(&render::Event {
                                    object: "link",
                                    kind: EventKind::Changed,
                                    fields: kernel::LINK_FIELDS,
                                    old: Some(old),
                                    new: Some(new),
                                })?;
                            }
                        }
                    }
                }
                Event::Address(change) => {
                    let in_family = change
                        .new()
                        .or(change.old())
                        .is_none_or(|addr| family.is_none_or(|family| addr.family() == family));
                    if wanted(MonitorObject::Addr) && in_family && details {
                        // `ip -d monitor address`'s two lines: the lifetimes on the second.
                        let lines = change.new().or(change.old()).map(|addr| {
                            let ifindex = addr.ifindex();
                            let [head, lifetimes] = text::address_lines(addr);
                            [
                                format!("{ifindex}: {}    {head}", names.name(ifindex)),
                                format!("       {lifetimes}"),
                            ]
                        });
                        print_detailed(printer, change, lines.into_iter().flatten())?;
                    } else if wanted(MonitorObject::Addr) && in_family {
                        let row =
                            |addr: &netmirror_platform::Address| kernel::addr_row(addr, &names);
                        print_change(printer, "addr", kernel::ADDR_FIELDS, change, row)?;
                    }
                }
                Event::Route(change) => {
                    let in_family = change
                        .new()
                        .or(change.old())
                        .is_none_or(|route| family.is_none_or(|family| route.family() == family));
                    if wanted(MonitorObject::Route) && in_family && details {
                        let route = change.new().or(change.old());
                        let lines = route.into_iter().flat_map(|route| {
                            let nh = route.nh_id().and_then(|id| cache.nexthop(id));
                            kernel::route_detail_lines(
                                route,
                                &names,
                                nh.map(Arc::as_ref),
                                netmirror_platform::text::Narrowed::default(),
                            )
                        });
                        print_detailed(printer, change, lines)?;
                    } else if wanted(MonitorObject::Route) && in_family {
                        // With `-d`, a route on a nexthop object carries the object in JSON
                        // (`nh_info`), as `route show -d --json` writes it.
                        let nh_info = |route: Option<&Arc<Route>>| {
                            let id = route?.nh_id().filter(|_| json_details)?;
                            Some(crate::nexthop::nexthop_json_line(
                                cache.nexthop(id)?,
                                &names,
                            ))
                        };
                        let (old_nh, new_nh) = (nh_info(change.old()), nh_info(change.new()));
                        let mut rows = RouteRows {
                            old: change.old().map(|route| &**route),
                            new: change.new().map(|route| &**route),
                            names: &names,
                            memo: &mut route_names,
                        };
                        printer.event_rows(
                            "route",
                            event_kind(change),
                            &MONITOR_ROUTE_FIELDS,
                            &mut rows,
                            [
                                old_nh.as_deref().map(|json| ("nh_info", json)),
                                new_nh.as_deref().map(|json| ("nh_info", json)),
                            ],
                        )?;
                    }
                }
                Event::Rule(change) => {
                    let in_family = change
                        .new()
                        .or(change.old())
                        .is_none_or(|rule| family.is_none_or(|family| rule.family() == family));
                    if wanted(MonitorObject::Rule) && in_family && details {
                        let line = change
                            .new()
                            .or(change.old())
                            .map(|rule| text::rule_text(rule, true));
                        print_detailed(printer, change, line)?;
                    } else if wanted(MonitorObject::Rule) && in_family {
                        print_change(
                            printer,
                            "rule",
                            kernel::RULE_FIELDS,
                            change,
                            kernel::rule_row,
                        )?;
                    }
                }
                Event::Nexthop(change) => {
                    let in_family = change.new().or(change.old()).is_none_or(|nh| {
                        family.is_none_or(|family| nh.family().is_none_or(|f| f == family))
                    });
                    if wanted(MonitorObject::Nexthop) && in_family && details {
                        let name = |ifindex: u32| names.name(ifindex);
                        let line = change
                            .new()
                            .or(change.old())
                            .map(|nh| text::nexthop_text(nh, &name));
                        print_detailed(printer, change, line)?;
                    } else if wanted(MonitorObject::Nexthop) && in_family {
                        let row = |nh: &netmirror_platform::Nexthop| {
                            crate::nexthop::nexthop_row(nh, &names)
                        };
                        print_change(
                            printer,
                            "nexthop",
                            crate::nexthop::NEXTHOP_FIELDS,
                            change,
                            row,
                        )?;
                    }
                }
                Event::Overrun => {
                    let text = "[CACHE] overrun: the kernel dropped events (receive buffer full); resyncing";
                    print_status(printer, "cache", "overrun", Map::new(), text)?;
                }
                Event::Resynced {
                    n_changes,
                    n_interrupted,
                } => {
                    let mut details = Map::new();
                    details.insert("changes".to_owned(), Value::from(*n_changes));
                    details.insert("interrupted_dumps".to_owned(), Value::from(*n_interrupted));
                    let text = format!(
                        "[CACHE] resynced: cache equals a fresh dump again ({n_changes} changes found)"
                    );
                    print_status(printer, "cache", "resynced", details, &text)?;
                }
                other => tracing::debug!(?other, "event not shown"),
            }
        }
        // One write for what a burst printed: flushed once the socket has nothing more to
        // read (or the wait expired), not per event.
        if status.drained {
            printer.flush()?;
            if status.n_events >= BURST_EVENTS {
                // A burst: let the kernel queue more before the next wake-up.
                std::thread::sleep(BURST_PAUSE);
            }
        }
    }
}

/// The names of the namespaces links' parents are in (`link-netns NAME`), read again when a
/// link names an id they lack, at most once a second (a namespace named meanwhile is found;
/// an id without a name does not cost a read per event).
#[derive(Default)]
struct NetnsNames {
    names: BTreeMap<i32, String>,
    read: Option<Instant>,
}

impl NetnsNames {
    fn refresh(&mut self, platform: &netmirror_platform::Platform, id: i32) {
        if self.names.contains_key(&id) || self.read.is_some_and(|at| at.elapsed() < NETNS_REREAD) {
            return;
        }
        self.read = Some(Instant::now());
        self.names = kernel::read_netns_names(platform);
    }
}

/// How often [`NetnsNames`] may read the namespaces' names again.
const NETNS_REREAD: Duration = Duration::from_secs(1);

/// Prints one change as `ip -d monitor` does: the lines of the object (the new one, or the
/// one removed), the first after `Deleted ` for a removal.
fn print_detailed<T>(
    printer: &mut Printer,
    change: &Change<T>,
    lines: impl IntoIterator<Item = String>,
) -> anyhow::Result<()> {
    for (n, line) in lines.into_iter().enumerate() {
        if n == 0 && matches!(change, Change::Removed(_)) {
            printer.tabbed_line_buffered(&format!("Deleted {line}"))?;
        } else {
            printer.tabbed_line_buffered(&line)?;
        }
    }
    Ok(())
}

/// Prints one change with the rows of its old and new object.
fn print_change<T>(
    printer: &mut Printer,
    object: &str,
    fields: &'static [Field],
    change: &Change<T>,
    mut row: impl FnMut(&T) -> Vec<Cell>,
) -> anyhow::Result<()> {
    printer.event_buffered(&render::Event {
        object,
        kind: event_kind(change),
        fields,
        old: change.old().map(|old| row(old)),
        new: change.new().map(|new| row(new)),
    })
}

/// What `change` is: `added`, `removed` or `changed`.
fn event_kind<T>(change: &Change<T>) -> EventKind {
    match change {
        Change::Added(_) => EventKind::Added,
        Change::Removed(_) => EventKind::Removed,
        _ => EventKind::Changed,
    }
}

/// A route's change, its rows written from the routes with [`kernel::RouteRow`].
struct RouteRows<'a> {
    old: Option<&'a Route>,
    new: Option<&'a Route>,
    names: &'a LinkNames,
    memo: &'a mut kernel::NameMemo,
}

impl EventRows for RouteRows<'_> {
    type Row<'r>
        = kernel::RouteRow<'r>
    where
        Self: 'r;

    fn old_row(&mut self) -> Option<kernel::RouteRow<'_>> {
        self.old.map(|route| kernel::RouteRow {
            route,
            names: self.names,
            memo: &mut *self.memo,
        })
    }

    fn new_row(&mut self) -> Option<kernel::RouteRow<'_>> {
        self.new.map(|route| kernel::RouteRow {
            route,
            names: self.names,
            memo: &mut *self.memo,
        })
    }
}

/// Prints a line about the monitor itself: the cache's `overrun` and `resynced`, the
/// monitor `stopped` by a signal, the namespace `deleted`.
fn print_status(
    printer: &mut Printer,
    object: &str,
    event: &str,
    details: Map<String, Value>,
    text: &str,
) -> anyhow::Result<()> {
    let mut json = Map::new();
    json.insert("object".to_owned(), Value::from(object));
    json.insert("event".to_owned(), Value::from(event));
    json.extend(details);
    printer.status(&Value::Object(json), text)
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use netmirror_platform::Route;

    use super::{MONITOR_ROUTE_FIELDS, RouteRows};
    use crate::kernel::tests::{sample_names, sample_routes};
    use crate::kernel::{self, LinkNames, NameMemo};
    use crate::render::{self, Cell, EventKind, Printer};

    /// A printer writing into a shared buffer, without colour.
    fn printer(json: bool, terse: bool, fields: &[&str]) -> (Printer, Arc<Mutex<Vec<u8>>>) {
        render::tests::printer_with(json, terse, fields, false)
    }

    /// A route's row made whole, cell by cell (each with a memo of its own).
    fn cells(route: &Route, names: &LinkNames) -> Vec<Cell> {
        (0..MONITOR_ROUTE_FIELDS.len())
            .map(|idx| kernel::route_cell(route, names, &mut NameMemo::default(), idx))
            .collect()
    }

    /// A route's device, held in the monitor's memo of names, is the link's new name once
    /// the link is renamed (the memo forgets its device on every link event).
    #[test]
    fn a_renamed_link_names_the_routes_on_it_anew() {
        let routes = sample_routes();
        let mut names = sample_names();
        let route = &routes[0];
        let (mut printer, out) = printer(false, false, &[]);
        let mut memo = NameMemo::default();
        for rename in [None, Some("v1"), None, Some("v\u{1b}2")] {
            if let Some(name) = rename {
                names.insert(3u32, name);
                memo.forget_devices();
            }
            let mut rows = RouteRows {
                old: None,
                new: Some(route),
                names: &names,
                memo: &mut memo,
            };
            printer
                .event_rows(
                    "route",
                    EventKind::Added,
                    &MONITOR_ROUTE_FIELDS,
                    &mut rows,
                    [None, None],
                )
                .unwrap();
        }
        printer.flush().unwrap();
        let text = String::from_utf8(out.lock().unwrap().clone()).unwrap();
        let devs: Vec<&str> = text
            .lines()
            .map(|line| {
                line.split(" dev ")
                    .nth(1)
                    .unwrap()
                    .split(' ')
                    .next()
                    .unwrap()
            })
            .collect();
        assert_eq!(devs, ["v0", "v1", "v1", "v\\e2"], "{text}");
    }

    /// Prints a route's event (of the old and the new route) with `whole`, from the cells of
    /// the routes' whole rows, and with `lazy`, written from the routes.
    fn print_both(
        whole: &mut Printer,
        lazy: &mut Printer,
        kind: EventKind,
        [old, new]: [Option<&Route>; 2],
        names: &LinkNames,
        memo: &mut NameMemo,
    ) {
        whole
            .event_buffered(&render::Event {
                object: "route",
                kind,
                fields: &MONITOR_ROUTE_FIELDS,
                old: old.map(|route| cells(route, names)),
                new: new.map(|route| cells(route, names)),
            })
            .unwrap();
        let mut rows = RouteRows {
            old,
            new,
            names,
            memo,
        };
        lazy.event_rows(
            "route",
            kind,
            &MONITOR_ROUTE_FIELDS,
            &mut rows,
            [None, None],
        )
        .unwrap();
    }

    /// Routes that differ from the one before in a few fields at a time (destination,
    /// gateway there or not, device, metric, preferred source, and rare ones: realms, metrics,
    /// preference), so that an event line copies the unchanged end of the line before in
    /// every way it can, also where the first field shown comes from the copied part or no
    /// longer does.
    fn routes_in_a_burst() -> Vec<Route> {
        use netmirror_platform::Ifindex;
        (0u8..96)
            .map(|n| {
                let mut route = Route::new([10, 0, n / 4, 0].into(), 24);
                if n % 3 != 0 {
                    route = route.with_gateway([192, 0, 2, 1 + n % 2].into());
                }
                if n % 5 != 1 {
                    route = route.with_oif(Ifindex(if n % 7 < 4 { 3 } else { 9 }));
                }
                if n % 4 == 0 {
                    route = route.with_priority(100);
                }
                if n % 11 > 8 {
                    route = route.with_prefsrc([192, 0, 2, 9].into());
                }
                if n % 6 == 2 {
                    route = route.with_realms(7);
                }
                if n % 9 == 4 {
                    route = route.with_metric(2, 1400, false);
                }
                if n % 10 == 3 {
                    route = route.with_pref(1);
                }
                route
            })
            .collect()
    }

    /// Events of routes added and removed one after another (each line written from the
    /// route, copying what it can of the line before) are byte for byte the events of their
    /// whole rows, for people, `--terse` and `--json`, with the default fields, all of them,
    /// and fields where the first one shown is often missing; a changed route's event
    /// (written from its cells) and a renamed link between them.
    #[test]
    fn a_burst_of_route_events_copies_only_what_is_unchanged() {
        let routes = routes_in_a_burst();
        let mut names = sample_names();
        for (json, terse) in [(false, false), (false, true), (true, false)] {
            for fields in [
                &[][..],
                &["all"],
                &["gateway", "dev", "metric"],
                &["prefsrc", "gateway", "dev"],
                &["dst", "gateway"],
                &["dst", "flow", "metrics"],
                &["gateway", "pref", "flow"],
            ] {
                let (mut whole, whole_out) = printer(json, terse, fields);
                let (mut lazy, lazy_out) = printer(json, terse, fields);
                let mut memo = NameMemo::default();
                for (n, route) in routes.iter().enumerate() {
                    let (old, new, kind) = match n % 13 {
                        5 => (Some(&routes[n - 1]), Some(route), EventKind::Changed),
                        7 | 8 => (Some(route), None, EventKind::Removed),
                        _ => (None, Some(route), EventKind::Added),
                    };
                    if n == 50 {
                        names.insert(3u32, "renamed");
                        memo.forget_devices();
                    }
                    print_both(&mut whole, &mut lazy, kind, [old, new], &names, &mut memo);
                }
                names.insert(3u32, "v0");
                whole.flush().unwrap();
                lazy.flush().unwrap();
                let whole = String::from_utf8(whole_out.lock().unwrap().clone()).unwrap();
                let lazy = String::from_utf8(lazy_out.lock().unwrap().clone()).unwrap();
                assert_eq!(lazy.lines().count(), routes.len());
                for (lazy, whole) in lazy.lines().zip(whole.lines()) {
                    assert_eq!(lazy, whole, "json {json}, terse {terse}, fields {fields:?}");
                }
            }
        }
    }

    /// A route event written from the routes (one memo of names for them all) is byte for byte
    /// the event of their whole rows, for people, `--terse` and `--json`, with the default
    /// fields, all of them and a few: every route added, removed, and changed into every
    /// other (and into itself).
    #[test]
    fn route_events_written_from_routes_are_those_of_their_cells() {
        let routes = sample_routes();
        let names = sample_names();
        let some: Vec<Option<&Route>> = routes.iter().map(Some).chain([None]).collect();
        for (json, terse) in [(true, false), (false, false), (false, true)] {
            for fields in [&[][..], &["all"], &["DST", "metric", "nexthops", "encap"]] {
                let (mut whole, whole_out) = printer(json, terse, fields);
                let (mut lazy, lazy_out) = printer(json, terse, fields);
                let mut memo = NameMemo::default();
                for &old in &some {
                    for &new in &some {
                        let kind = match (old, new) {
                            (None, None) => continue,
                            (None, Some(_)) => EventKind::Added,
                            (Some(_), None) => EventKind::Removed,
                            (Some(_), Some(_)) => EventKind::Changed,
                        };
                        print_both(&mut whole, &mut lazy, kind, [old, new], &names, &mut memo);
                    }
                }
                whole.flush().unwrap();
                lazy.flush().unwrap();
                let whole = String::from_utf8(whole_out.lock().unwrap().clone()).unwrap();
                let lazy = String::from_utf8(lazy_out.lock().unwrap().clone()).unwrap();
                assert_eq!(lazy.lines().count(), some.len() * some.len() - 1);
                for (lazy, whole) in lazy.lines().zip(whole.lines()) {
                    assert_eq!(lazy, whole, "json {json}, terse {terse}, fields {fields:?}");
                }
                assert_eq!(lazy, whole);
            }
        }
    }
}
