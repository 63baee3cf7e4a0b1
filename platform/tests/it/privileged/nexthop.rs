//! Nexthop objects and the routes on them, step by step against `ip -j -d route show table
//! all` and `ip -j nexthop`: the cache, and the events replayed onto the first snapshot, after
//! each change, including every change the kernel makes without a notification.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use netmirror_platform::testing::{NetNs, Veth};
use netmirror_platform::{Cache, Change, Event, Family, Nexthop, Route, RouteId};
use serde_json::Value;

use super::support::{config, details_of, details_of_ip, ip, settle, sorted, wait_kernel_quiet};
use crate::support::bounded;

const LIMIT: Duration = Duration::from_secs(180);

/// A namespace with two veth pairs: `nmx0`/`nmx1` (192.0.2.0/24, 2001:db8:1::/64) and
/// `nmy0`/`nmy1` (198.51.100.0/24).
pub(crate) fn netns_two_pairs() -> NetNs {
    NetNs::builder()
        .veth(
            Veth::new("nmx0", "nmx1")
                .address("192.0.2.1/24")
                .address("2001:db8:1::1/64")
                .peer_address("192.0.2.2/24"),
        )
        .veth(
            Veth::new("nmy0", "nmy1")
                .address("198.51.100.1/24")
                .peer_address("198.51.100.2/24"),
        )
        .start()
        .unwrap()
}

/// Routes and nexthops as sorted lines, and the routes as `ip -d route` prints them (every
/// attribute: metrics and their locks, encap, realms, pref, hop flags and weights).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct View {
    pub(crate) routes: Vec<String>,
    pub(crate) nexthops: Vec<String>,
    pub(crate) details: Vec<String>,
}

/// Routes and nexthops rebuilt from the first snapshot and every event since: what a
/// monitor knows.
#[derive(Debug, Default)]
struct Replay {
    routes: HashMap<RouteId, Route>,
    nexthops: BTreeMap<u32, Nexthop>,
}

impl Replay {
    fn of(cache: &Cache) -> Self {
        Replay {
            routes: cache.routes().map(|r| (r.id(), (**r).clone())).collect(),
            nexthops: cache.nexthops().map(|n| (n.id(), (**n).clone())).collect(),
        }
    }

    fn apply(&mut self, events: &[Event]) {
        for event in events {
            match event {
                Event::Route(change) => {
                    if let Some(old) = change.old() {
                        assert!(
                            self.routes.remove(&old.id()).is_some(),
                            "event for a route the monitor did not know: {change:?}"
                        );
                    }
                    if let Some(new) = change.new() {
                        self.routes.insert(new.id(), (**new).clone());
                    }
                    if let Change::Replaced { old, new } = change {
                        assert_ne!(old, new, "a change event where old equals new");
                    }
                }
                Event::Nexthop(change) => {
                    if let Some(old) = change.old() {
                        assert!(
                            self.nexthops.remove(&old.id()).is_some(),
                            "event for a nexthop the monitor did not know: {change:?}"
                        );
                    }
                    if let Some(new) = change.new() {
                        self.nexthops.insert(new.id(), (**new).clone());
                    }
                }
                _ => {}
            }
        }
    }

    /// The view, naming devices as `cache` does.
    fn view(&self, cache: &Cache) -> View {
        View {
            routes: sorted(self.routes.values().filter_map(reduced_line)),
            nexthops: sorted(self.nexthops.values().map(nexthop_line)),
            details: details_of(self.routes.values(), |id| self.nexthops.get(&id), cache),
        }
    }
}

pub(crate) fn view_of_cache(cache: &Cache) -> View {
    View {
        routes: sorted(cache.routes().filter_map(|route| reduced_line(route))),
        nexthops: sorted(cache.nexthops().map(|nh| nexthop_line(nh))),
        details: details_of(
            cache.routes().map(|route| &**route),
            |id| cache.nexthop(id).map(|nh| &**nh),
            cache,
        ),
    }
}

fn json(ns: &NetNs, args: &[&str]) -> Value {
    let out = ns.ip(args).unwrap();
    if out.trim().is_empty() {
        return Value::Array(Vec::new());
    }
    serde_json::from_str(&out).unwrap_or_else(|err| panic!("ip {args:?}: {err}: {out}"))
}

fn num_or(value: &Value, default: u64) -> u64 {
    match value {
        Value::Number(n) => n.as_u64().unwrap_or(default),
        Value::String(s) => s.parse().unwrap_or(default),
        _ => default,
    }
}

fn str_or_dash(value: &Value) -> String {
    value.as_str().unwrap_or("-").to_owned()
}

fn flag_names(value: &Value) -> String {
    let mut names: Vec<&str> = value
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    names.sort_unstable();
    names.join(",")
}

/// `RTNH_F_*` and `RTM_F_*` flags by `ip`'s names.
fn rt_flag_names(flags: u32) -> String {
    let mut names: Vec<&str> = [
        (1, "dead"),
        (2, "pervasive"),
        (4, "onlink"),
        (8, "offload"),
        (16, "linkdown"),
        (32, "unresolved"),
        (64, "trap"),
        (0x100, "notify"),
        (0x2000, "rt_offload"),
        (0x4000, "rt_trap"),
    ]
    .into_iter()
    .filter(|(bit, _)| flags & bit != 0)
    .map(|(_, name)| name)
    .collect();
    names.sort_unstable();
    names.join(",")
}

/// Interface indexes by name.
fn link_names(ns: &NetNs) -> BTreeMap<String, u64> {
    json(ns, &["-j", "link", "show"])
        .as_array()
        .unwrap()
        .iter()
        .map(|link| {
            (
                link["ifname"].as_str().unwrap().to_owned(),
                link["ifindex"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// `ip -N -j -d route show table all` and `ip -N -j nexthop show` in `ns`.
pub(crate) fn view_of_ip(ns: &NetNs) -> View {
    let names = link_names(ns);
    let dev = |value: &Value| {
        value
            .as_str()
            .and_then(|name| names.get(name))
            .map_or("-".to_owned(), u64::to_string)
    };
    let mut routes = Vec::new();
    for (family, flag) in [("v4", "-4"), ("v6", "-6")] {
        let full = if family == "v4" { 32 } else { 128 };
        for route in json(
            ns,
            &[flag, "-N", "-d", "-j", "route", "show", "table", "all"],
        )
        .as_array()
        .unwrap()
        {
            if route.get("encap").is_some() {
                // `ip -j` writes an `encap ip` tunnel's dst over the route's: such routes are
                // compared by their `ip -d` text only (see `View::details`).
                continue;
            }
            let dst = match route["dst"].as_str().unwrap() {
                "default" if family == "v4" => "0.0.0.0/0".to_owned(),
                "default" => "::/0".to_owned(),
                dst if dst.contains('/') => dst.to_owned(),
                dst => format!("{dst}/{full}"),
            };
            let hops = match route["nexthops"].as_array() {
                Some(hops) => hops
                    .iter()
                    .map(|hop| {
                        format!(
                            "{}@{}*{}[{}]",
                            str_or_dash(&hop["gateway"]),
                            dev(&hop["dev"]),
                            num_or(&hop["weight"], 1),
                            flag_names(&hop["flags"])
                        )
                    })
                    .collect::<Vec<_>>()
                    .join(","),
                None => "-".to_owned(),
            };
            routes.push(format!(
                "route {family} table {} {dst} type {} nhid {} via {} dev {} metric {} proto {} \
                 flags [{}] hops {hops}",
                num_or(&route["table"], 254),
                num_or(&route["type"], 1),
                route["nhid"]
                    .as_u64()
                    .map_or("-".to_owned(), |id| id.to_string()),
                str_or_dash(&route["gateway"]),
                dev(&route["dev"]),
                num_or(&route["metric"], 0),
                num_or(&route["protocol"], 3),
                flag_names(&route["flags"]),
            ));
        }
    }
    let mut nexthops = Vec::new();
    for nh in json(ns, &["-N", "-j", "nexthop", "show"])
        .as_array()
        .unwrap()
    {
        let group = match nh["group"].as_array() {
            Some(members) => members
                .iter()
                .map(|m| format!("{}*{}", m["id"], num_or(&m["weight"], 1)))
                .collect::<Vec<_>>()
                .join("/"),
            None => "-".to_owned(),
        };
        nexthops.push(format!(
            "nh {} via {} dev {} blackhole {} fdb {} scope {} proto {} flags [{}] group {group} \
             type {} buckets {}",
            nh["id"],
            str_or_dash(&nh["gateway"]),
            dev(&nh["dev"]),
            nh.get("blackhole").is_some(),
            nh.get("fdb").is_some(),
            num_or(&nh["scope"], 0),
            num_or(&nh["protocol"], 0),
            flag_names(&nh["flags"]),
            str_or_dash(&nh["type"]),
            nh["resilient_args"]["buckets"]
                .as_u64()
                .map_or("-".to_owned(), |n| n.to_string()),
        ));
    }
    View {
        routes: sorted(routes.into_iter()),
        nexthops: sorted(nexthops.into_iter()),
        details: details_of_ip(ns),
    }
}

/// The `route_line` of a route without encap (as `view_of_ip` reads them: see there).
fn reduced_line(route: &Route) -> Option<String> {
    route.encap().is_none().then(|| route_line(route))
}

pub(crate) fn route_line(route: &Route) -> String {
    let family = match route.family() {
        Family::V4 => "v4",
        Family::V6 => "v6",
    };
    let hops = if route.multipath().is_empty() {
        "-".to_owned()
    } else {
        route
            .multipath()
            .iter()
            .map(|hop| {
                format!(
                    "{}@{}*{}[{}]",
                    hop.gateway.map_or("-".to_owned(), |gw| gw.to_string()),
                    hop.ifindex,
                    u32::from(hop.hops) + 1,
                    rt_flag_names(u32::from(hop.flags))
                )
            })
            .collect::<Vec<_>>()
            .join(",")
    };
    format!(
        "route {family} table {} {}/{} type {} nhid {} via {} dev {} metric {} proto {} \
         flags [{}] hops {hops}",
        route.table().get(),
        route.dst(),
        route.dst_len(),
        route.kind().get(),
        route.nh_id().map_or("-".to_owned(), |id| id.to_string()),
        route.gateway().map_or("-".to_owned(), |gw| gw.to_string()),
        route.oif().map_or("-".to_owned(), |oif| oif.to_string()),
        route.priority(),
        route.protocol().get(),
        rt_flag_names(route.flags()),
    )
}

pub(crate) fn nexthop_line(nh: &Nexthop) -> String {
    let group = if nh.is_group() {
        nh.group()
            .iter()
            .map(|m| format!("{}*{}", m.id, m.weight))
            .collect::<Vec<_>>()
            .join("/")
    } else {
        "-".to_owned()
    };
    format!(
        "nh {} via {} dev {} blackhole {} fdb {} scope {} proto {} flags [{}] group {group} \
         type {} buckets {}",
        nh.id(),
        nh.gateway().map_or("-".to_owned(), |gw| gw.to_string()),
        nh.oif().map_or("-".to_owned(), |oif| oif.to_string()),
        nh.is_blackhole(),
        nh.is_fdb(),
        nh.scope().get(),
        nh.protocol().get(),
        rt_flag_names(nh.flags()),
        if nh.group_type() == Some(1) {
            "resilient"
        } else {
            "-"
        },
        nh.resilient()
            .and_then(|res| res.buckets)
            .map_or("-".to_owned(), |n| n.to_string()),
    )
}

#[track_caller]
fn assert_same(what: &str, actual: &View, expected: &View) {
    if actual == expected {
        return;
    }
    let diff = |a: &[String], e: &[String]| {
        let missing: Vec<_> = e.iter().filter(|x| !a.contains(x)).collect();
        let extra: Vec<_> = a.iter().filter(|x| !e.contains(x)).collect();
        format!("missing: {missing:#?}\nextra: {extra:#?}")
    };
    panic!(
        "{what} differs from ip\nroutes: {}\nnexthops: {}\nip -d route: {}",
        diff(&actual.routes, &expected.routes),
        diff(&actual.nexthops, &expected.nexthops),
        diff(&actual.details, &expected.details)
    );
}

/// Settles the cache, applies its events to `replay`, and checks both against `ip`, giving
/// the kernel's asynchronous work a few rounds.
#[track_caller]
fn check(cache: &mut Cache, replay: &mut Replay, ns: &NetNs, step: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let events = settle(cache, Duration::from_secs(20));
        replay.apply(&events);
        let expected = view_of_ip(ns);
        let actual = view_of_cache(cache);
        if actual == expected || Instant::now() > deadline {
            assert_same(&format!("the cache after `{step}`"), &actual, &expected);
            assert_same(
                &format!("the replayed events after `{step}`"),
                &replay.view(cache),
                &expected,
            );
            return;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn nexthops_and_their_silent_changes_are_followed() {
    bounded(LIMIT, || change_sequence(true));
}

/// The same without strict checking: what the cache asks again is dumped whole and filtered
/// here.
#[test]
fn nexthops_and_their_silent_changes_are_followed_without_kernel_filters() {
    bounded(LIMIT, || change_sequence(false));
}

fn change_sequence(strict: bool) {
    let ns = netns_two_pairs();
    ip(&ns, "addr add 203.0.113.1/24 dev nmx0");
    ip(&ns, "addr add 203.0.114.1/24 dev nmx0");
    let mut cache = Cache::open(config(&ns).with_strict_check(strict)).unwrap();
    let mut replay = Replay::of(&cache);
    check(&mut cache, &mut replay, &ns, "open");

    let script = [
        "nexthop add id 1 via 192.0.2.2 dev nmx0",
        "nexthop add id 2 via 198.51.100.2 dev nmy0",
        "nexthop add id 3 blackhole",
        "nexthop add id 4 via 192.0.2.3 dev nmx0 onlink proto zebra",
        "nexthop add id 10 group 1/2,3",
        "nexthop add id 11 group 2/4 type resilient buckets 8",
        "-6 nexthop add id 6 via 2001:db8:1::2 dev nmx0",
        "route add 10.60.0.0/16 nhid 10",
        "route add 10.61.0.0/16 nhid 1",
        "route add 10.62.0.0/16 nhid 3",
        "route add 10.63.0.0/16 nhid 11",
        "route add 10.64.0.0/16 nhid 2 table 100",
        "-6 route add 2001:db8:60::/64 nhid 6",
        // IPv6 groups, one with a member on nmy0.
        "-6 nexthop add id 7 via 2001:db8:1::3 dev nmx0",
        "-6 nexthop add id 8 via fe80::2 dev nmy0",
        "nexthop add id 17 group 6/7,2",
        "nexthop add id 18 group 6/8",
        "-6 route add 2001:db8:61::/64 nhid 17",
        "-6 route add 2001:db8:62::/64 nhid 18 metric 10",
        "route add 10.65.0.0/16 via 192.0.2.2 dev nmx0",
        // Metrics with locks, realms, encap, pref and weighted hops on the links that change.
        "route add 10.69.0.0/16 via 198.51.100.2 dev nmy0 mtu lock 1400 advmss 1300 initcwnd 10 congctl lock cubic realm 5/6",
        "route add 10.70.0.0/16 encap ip id 1 dst 1.2.3.4 dev nmy0",
        "route add 10.71.0.0/16 nexthop via 192.0.2.2 dev nmx0 weight 1 nexthop via 198.51.100.2 dev nmy0 weight 3 realm 7",
        "-6 route add 2001:db8:63::/64 via 2001:db8:1::2 dev nmx0 pref high mtu 1300 hoplimit 9",
        // A group member deleted: the group is announced, its routes are not.
        "nexthop del id 1",
        // Unrelated, on the link the group's first hop was on: the route on the group
        // still exists and must not be reported removed.
        "addr del 203.0.114.1/24 dev nmx0",
        // A nexthop deleted: its routes go without RTM_DELROUTE.
        "nexthop del id 3",
        "-6 nexthop del id 7",
        // A group's member replaced: the routes on the group follow it.
        "nexthop replace id 4 via 192.0.2.4 dev nmx0 onlink proto zebra",
        // Carrier loss on nmy0: its nexthops, and routes on them, go silently; groups
        // lose members (group 10 its last one).
        "link set nmy1 down",
        "link set nmy1 up",
        "nexthop add id 2 via 198.51.100.2 dev nmy0",
        "nexthop add id 12 group 2/4",
        "route add 10.66.0.0/16 nhid 12",
        "route add 10.67.0.0/16 nhid 2",
        // Link down: the same.
        "link set nmy0 down",
        "link set nmy0 up",
        "nexthop add id 2 via 198.51.100.2 dev nmy0",
        "nexthop replace id 12 group 2/4",
        "route add 10.68.0.0/16 nhid 2",
        // Link deleted: the same.
        "link del nmy0",
        // Unrelated: nothing else may change.
        "addr del 203.0.113.1/24 dev nmx0",
        // The link's last IPv4 address: plain routes via its gateway go silently, routes
        // on nexthops there stay.
        "addr del 192.0.2.1/24 dev nmx0",
    ];
    for step in script {
        ip(&ns, step);
        check(&mut cache, &mut replay, &ns, step);
    }
    assert!(cache.nexthop(4).is_some());
    let on_group = cache
        .routes()
        .find(|route| route.nh_id() == Some(12))
        .expect("the route on group 12");
    assert_eq!(
        cache.nexthop_of(on_group).map(|nh| nh.id()),
        Some(12),
        "a route's nexthop object"
    );
}

/// Routes `ip -j route show ARGS` prints, as `route_line`s of both families.
/// `table` is the table `ip` leaves out of its lines.
fn ip_route_lines(ns: &NetNs, table: u64, args: &[&str]) -> Vec<String> {
    let full = view_of_ip(ns);
    let names = link_names(ns);
    // `ip` prints no table for a filtered main-table listing, so match the selected routes
    // by prefix, table and nexthop against the complete view.
    let mut lines = Vec::new();
    for (family, flag) in [("v4", "-4"), ("v6", "-6")] {
        let mut cmd = vec![flag, "-N", "-j", "route", "show"];
        cmd.extend_from_slice(args);
        let full_len = if family == "v4" { 32 } else { 128 };
        for route in json(ns, &cmd).as_array().unwrap() {
            let dst = match route["dst"].as_str().unwrap() {
                "default" if family == "v4" => "0.0.0.0/0".to_owned(),
                "default" => "::/0".to_owned(),
                dst if dst.contains('/') => dst.to_owned(),
                dst => format!("{dst}/{full_len}"),
            };
            let table = num_or(&route["table"], table);
            let key = format!("route {family} table {table} {dst} ");
            let mut needles = vec![
                format!(" type {} ", num_or(&route["type"], 1)),
                format!(" metric {} ", num_or(&route["metric"], 0)),
            ];
            // `ip` leaves out the device it selects by.
            let selected = args
                .iter()
                .position(|word| *word == "dev")
                .map(|at| args[at + 1]);
            if let Some(dev) = route["dev"].as_str().or(selected) {
                needles.push(format!(" dev {} ", names[dev]));
            }
            if let Some(gateway) = route["gateway"].as_str() {
                needles.push(format!(" via {gateway} "));
            }
            if let Some(nhid) = route["nhid"].as_u64() {
                needles.push(format!(" nhid {nhid} "));
            }
            let matching: Vec<&String> = full
                .routes
                .iter()
                .filter(|line| line.starts_with(&key))
                .filter(|line| needles.iter().all(|needle| line.contains(needle)))
                .collect();
            assert_eq!(matching.len(), 1, "{key}: {matching:?}");
            lines.push(matching[0].clone());
        }
    }
    lines.sort();
    lines
}

#[test]
fn route_filters_select_what_ip_selects() {
    bounded(LIMIT, || {
        let ns = netns_two_pairs();
        for line in [
            "nexthop add id 1 via 192.0.2.2 dev nmx0",
            "nexthop add id 2 via 198.51.100.2 dev nmy0",
            "nexthop add id 3 blackhole",
            "nexthop add id 10 group 1/2",
            "route add 10.60.0.0/16 nhid 10",
            "route add 10.61.0.0/16 nhid 1",
            "route add 10.62.0.0/16 nhid 3",
            "route add 10.63.0.0/16 nhid 2 table 100",
            "route add blackhole 10.70.0.0/16",
            "route add unreachable 10.71.0.0/16 table 100",
            "route add 10.72.0.0/16 nexthop via 192.0.2.2 dev nmx0 nexthop via 198.51.100.2 dev nmy0",
            "route add 10.73.0.0/16 via 198.51.100.2 dev nmy0 table 100",
            "-6 route add 2001:db8:70::/64 via 2001:db8:1::2 dev nmx0",
            "-6 route add blackhole 2001:db8:71::/64",
            // IPv6 refuses to dump a table it does not have, as ip shows.
            "-6 route add unreachable 2001:db8:72::/64 table 100",
        ] {
            ip(&ns, line);
        }
        // IPv6 link-local addresses and their local routes come late: compare one-off dumps
        // only once the kernel is done.
        wait_kernel_quiet(&ns);
        for strict in [true, false] {
            let platform =
                netmirror_platform::Platform::open(config(&ns).with_strict_check(strict)).unwrap();
            let ifindex =
                |name: &str| platform.links().name(name).execute().unwrap().items[0].ifindex();
            let ours = |query: netmirror_platform::RouteQuery<'_>| {
                let mut lines: Vec<String> = query
                    .execute()
                    .unwrap()
                    .items
                    .iter()
                    .map(route_line)
                    .collect();
                lines.sort();
                lines
            };
            for (name, kind) in [
                ("unicast", 1),
                ("local", 2),
                ("broadcast", 3),
                ("multicast", 5),
                ("blackhole", 6),
                ("unreachable", 7),
            ] {
                for (table, id) in [("main", 254), ("100", 100), ("local", 255)] {
                    assert_eq!(
                        ours(
                            platform
                                .routes()
                                .table(netmirror_platform::Table(id))
                                .kind(netmirror_platform::RouteType(kind))
                        ),
                        ip_route_lines(&ns, id.into(), &["table", table, "type", name]),
                        "table {table} type {name} (strict {strict})"
                    );
                }
            }
            for dev in ["nmx0", "nmy0", "lo"] {
                assert_eq!(
                    ours(
                        platform
                            .routes()
                            .table(netmirror_platform::Table::MAIN)
                            .dev(ifindex(dev))
                    ),
                    ip_route_lines(&ns, 254, &["dev", dev]),
                    "dev {dev} (strict {strict})"
                );
            }
            for (table, id) in [("main", 254), ("100", 100), ("local", 255)] {
                assert_eq!(
                    ours(platform.routes().table(netmirror_platform::Table(id))),
                    ip_route_lines(&ns, id.into(), &["table", table]),
                    "table {table} (strict {strict})"
                );
            }
        }
        // The blackhole nexthop's route is a blackhole route, as ip says.
        assert!(
            ip_route_lines(&ns, 254, &["type", "blackhole"])
                .iter()
                .any(|line| line.contains("10.62.0.0/16"))
        );
    });
}
