//! The state of a namespace as plain lines, built two ways: from `ip -j` (the reference) and
//! from the platform's objects, so tests can compare them with one `assert_eq!`.

use std::collections::BTreeMap;
use std::net::IpAddr;

use netmirror_platform::testing::NetNs;
use netmirror_platform::{Address, Cache, Family, Link, Route, Rule};
use serde_json::Value;

/// Links, addresses, routes (all tables, both families) and rules, one sorted line each.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Snapshot {
    pub(crate) links: Vec<String>,
    pub(crate) addresses: Vec<String>,
    pub(crate) routes: Vec<String>,
    pub(crate) rules: Vec<String>,
}

impl Snapshot {
    fn sorted(mut self) -> Self {
        self.links.sort();
        self.addresses.sort();
        self.routes.sort();
        self.rules.sort();
        self
    }

    /// What the cache holds.
    pub(crate) fn of_cache(cache: &Cache) -> Self {
        Snapshot {
            links: cache.links().map(|link| link_line(link)).collect(),
            addresses: cache.addresses().map(|addr| addr_line(addr)).collect(),
            routes: cache.routes().map(|route| route_line(route)).collect(),
            rules: cache.rules().map(|rule| rule_line(rule)).collect(),
        }
        .sorted()
    }

    /// What `ip -j` shows in `ns`.
    pub(crate) fn of_ip(ns: &NetNs) -> Self {
        let links = json(ns, &["-d", "-j", "link", "show"]);
        let names: BTreeMap<String, u64> = links
            .as_array()
            .unwrap()
            .iter()
            .map(|link| (str_of(&link["ifname"]), link["ifindex"].as_u64().unwrap()))
            .collect();
        let mut snap = Snapshot::default();
        for link in links.as_array().unwrap() {
            let up = link["flags"]
                .as_array()
                .unwrap()
                .iter()
                .any(|flag| flag == "UP");
            snap.links.push(format!(
                "link {} {} mtu {} up {} kind {}",
                link["ifindex"],
                str_of(&link["ifname"]),
                link["mtu"],
                up,
                link["linkinfo"]["info_kind"].as_str().unwrap_or("-"),
            ));
        }
        for link in json(ns, &["-j", "addr", "show"]).as_array().unwrap() {
            for info in link["addr_info"].as_array().into_iter().flatten() {
                snap.addresses.push(format!(
                    "addr {} {}/{}",
                    link["ifindex"],
                    str_of(&info["local"]),
                    info["prefixlen"]
                ));
            }
        }
        for (family, flag) in [("v4", "-4"), ("v6", "-6")] {
            let routes = json(
                ns,
                &[flag, "-N", "-d", "-j", "route", "show", "table", "all"],
            );
            for route in routes.as_array().unwrap() {
                snap.routes.push(ip_route_line(family, route, &names));
            }
            let rules = json(ns, &[flag, "-N", "-j", "rule", "show"]);
            for rule in rules.as_array().unwrap() {
                snap.rules.push(format!(
                    "rule {family} prio {} table {}",
                    rule["priority"].as_u64().unwrap_or(0),
                    num_or(&rule["table"], 0),
                ));
            }
        }
        snap.sorted()
    }
}

fn json(ns: &NetNs, args: &[&str]) -> Value {
    let out = ns.ip(args).unwrap();
    if out.trim().is_empty() {
        return Value::Array(Vec::new());
    }
    serde_json::from_str(&out).unwrap_or_else(|err| panic!("ip {args:?}: {err}: {out}"))
}

fn str_of(value: &Value) -> String {
    value.as_str().map(str::to_owned).unwrap_or_default()
}

/// A JSON number or numeric string (`ip -N` prints numbers as strings), or `default`.
fn num_or(value: &Value, default: u64) -> u64 {
    match value {
        Value::Number(n) => n.as_u64().unwrap_or(default),
        Value::String(s) => s.parse().unwrap_or(default),
        _ => default,
    }
}

fn ip_route_line(family: &str, route: &Value, names: &BTreeMap<String, u64>) -> String {
    let full = if family == "v4" { 32 } else { 128 };
    let dst = match route["dst"].as_str().unwrap() {
        "default" if family == "v4" => "0.0.0.0/0".to_owned(),
        "default" => "::/0".to_owned(),
        dst if dst.contains('/') => dst.to_owned(),
        dst => format!("{dst}/{full}"),
    };
    let dev = |value: &Value| {
        value
            .as_str()
            .and_then(|name| names.get(name))
            .map_or("-".to_owned(), |i| i.to_string())
    };
    let hops = match route["nexthops"].as_array() {
        Some(hops) => hops
            .iter()
            .map(|hop| format!("{}@{}", str_of(&hop["gateway"]), dev(&hop["dev"])))
            .collect::<Vec<_>>()
            .join(","),
        None => "-".to_owned(),
    };
    format!(
        "route {family} table {} {dst} via {} dev {} metric {} type {} proto {} hops {hops}",
        num_or(&route["table"], 254),
        route["gateway"].as_str().unwrap_or("-"),
        dev(&route["dev"]),
        num_or(&route["metric"], 0),
        num_or(&route["type"], 1),
        num_or(&route["protocol"], 3),
    )
}

pub(crate) fn link_line(link: &Link) -> String {
    format!(
        "link {} {} mtu {} up {} kind {}",
        link.ifindex(),
        link.name(),
        link.mtu(),
        link.is_up(),
        link.kind().unwrap_or("-")
    )
}

pub(crate) fn addr_line(addr: &Address) -> String {
    format!(
        "addr {} {}/{}",
        addr.ifindex(),
        addr.local(),
        addr.prefix_len()
    )
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
                    "{}@{}",
                    hop.gateway.map(|gw| gw.to_string()).unwrap_or_default(),
                    hop.ifindex
                )
            })
            .collect::<Vec<_>>()
            .join(",")
    };
    format!(
        "route {family} table {} {}/{} via {} dev {} metric {} type {} proto {} hops {hops}",
        route.table().get(),
        route.dst(),
        route.dst_len(),
        route
            .gateway()
            .map_or("-".to_owned(), |gw: IpAddr| gw.to_string()),
        route.oif().map_or("-".to_owned(), |oif| oif.to_string()),
        route.priority(),
        route.kind().get(),
        route.protocol().get(),
    )
}

pub(crate) fn rule_line(rule: &Rule) -> String {
    let family = match rule.family() {
        Family::V4 => "v4",
        Family::V6 => "v6",
    };
    format!(
        "rule {family} prio {} table {}",
        rule.priority(),
        rule.table().get()
    )
}
