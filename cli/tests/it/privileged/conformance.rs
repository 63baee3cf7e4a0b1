//! Conformance: a wide set of real kernel objects in throwaway namespaces (routes of every
//! type in several tables, one above 2^31, multipath v4/v6 with weights, every metric with
//! locks, realms, pref, expires, encap, via inet6, onlink; rules with every selector, five at
//! one priority; a veth peer in another namespace, a bridge and its port, altnames; addresses
//! with every flag the kernel lets us set, and lifetimes; every other link kind this kernel
//! makes: macvlan, macvtap, VXLAN, IFB, TUN and TAP), and netmirror's `--json` compared
//! with `ip -j -d` field by field, after normalising what netmirror names or shapes
//! differently.
//!
//! The differences are decisions (README, "JSON compared with ip"), each normalised here:
//! - `gateway` holds an `RTA_VIA` gateway too (`ip -j` has `via: {family, host}`);
//! - `encap` is one nested object (`ip -j` writes its fields beside the route's, and its `dst`
//!   overwrites the route's `dst`);
//! - `metrics` values are the kernel's (`ip` divides `rtt` by 8 and `rttvar` by 4), `features`
//!   is the number (`ip` writes `ecn`), and locked metrics are listed in `lock`;
//! - an address's flags are one `flags` list (`ip -j` has one boolean key per flag);
//! - a TOS is its number (`ip -j` writes its `rt_dsfield` name, or hex);
//! - a rule's realms are `realms: "FROM/TO"` (`ip -j` has `flow_from` and `flow_to`), port
//!   ranges are `"A-B"` text (`ip -j` has `sport` or `sport_start`/`sport_end`), `not`,
//!   `l3mdev` and `unresolved` are booleans (`ip -j` prints them as `null` when set);
//! - link kind data keeps the kernel's numbers (`ip -j` turns some into booleans and names:
//!   a bridge port's `state`, a VXLAN's `df` and device `link`), a VXLAN's `port_range` is a
//!   list of the two ports (`ip -j` has `{low, high}`).

use std::collections::{BTreeMap, BTreeSet};

use netmirror_platform::testing::{NetNs, Veth};
use serde_json::{Value, json};

use crate::support::nm;

/// Runs `ip` in `ns` with `args`, panicking with the command on failure.
fn ip(ns: &NetNs, line: &str) {
    let args: Vec<&str> = line.split_whitespace().collect();
    ns.ip(&args)
        .unwrap_or_else(|err| panic!("ip {line}: {err}"));
}

/// Runs `line` in `ns`: `sysctl KEY=VALUE` writes a sysctl there, `tc ...` runs `tc`,
/// `? ARGS` runs `ip ARGS` where the kernel supports what it makes (a kernel option not every
/// kernel has), anything else is `ip`'s.
fn step(ns: &NetNs, line: &str) {
    if let Some(line) = line.strip_prefix("? ") {
        let args: Vec<&str> = line.split_whitespace().collect();
        ns.ip_where_supported(&args)
            .unwrap_or_else(|err| panic!("ip {line}: {err}"));
        return;
    }
    let status = if let Some(setting) = line.strip_prefix("sysctl ") {
        ns.command("sysctl").args(["-qw", setting]).status()
    } else if let Some(args) = line.strip_prefix("tc ") {
        ns.command("tc").args(args.split_whitespace()).status()
    } else {
        return ip(ns, line);
    };
    assert!(status.expect(line).success(), "{line}");
}

/// Every route, rule, link and address kind this kernel lets a test make.
fn world() -> (NetNs, NetNs) {
    let other = NetNs::new().expect("second namespace");
    let ns = NetNs::builder()
        .veth(
            Veth::new("v0", "v1")
                .address("10.1.0.1/24")
                .address("2001:db8::1/64"),
        )
        .veth(Veth::new("p0", "p1").peer_in(&other))
        .start()
        .expect("make a namespace");
    for line in [
        "link add br0 type bridge",
        "link set v1 master br0",
        "link set br0 up",
        "link set br0 type bridge no_linklocal_learn 1",
        "link add br1 type bridge",
        // Every other kind this kernel can make: macvlan and macvtap on v0, a VXLAN, an IFB,
        // a TAP and a multiqueue TUN.
        "link add mv0 link v0 type macvlan mode bridge",
        "link add mvt0 link v0 type macvtap mode vepa",
        // A source-mode macvlan and the addresses it takes (`macaddr_data`).
        "link add mvs0 link v0 type macvlan mode source",
        "link set mvs0 type macvlan macaddr add 00:11:22:33:44:55",
        "link set mvs0 type macvlan macaddr add 00:11:22:33:44:66",
        "link add vx0 type vxlan id 42 dstport 4789 local 10.1.0.1 dev v0 ttl 5 ageing 120",
        "link add ifb0 type ifb",
        "tuntap add tap0 mode tap",
        "tuntap add tun0 mode tun multi_queue",
        "link set mv0 up",
        "link set vx0 up",
        // Protocol down, with two reasons.
        "link set vx0 protodown_reason 2 on",
        "link set vx0 protodown_reason 9 on",
        "link set vx0 protodown on",
        "addr add 10.3.0.1/24 dev mv0",
        "link property add dev v0 altname conformance-alt0",
        "link property add dev v0 altname conformance-alt1",
        // Every IPv6 address generation mode (v0's stable_secret needs a secret first).
        "link set br0 addrgenmode random",
        "link set br1 addrgenmode none",
        "sysctl net.ipv6.conf.v0.stable_secret=2001:db8::5ec:1",
        "link set v0 addrgenmode stable_secret",
        // Addresses: lifetimes, noprefixroute, a secondary, autojoin; IPv6 flags; br1 stays
        // down, so its addresses stay tentative (one optimistic).
        "addr add 10.9.0.1/24 dev br0 valid_lft 3000 preferred_lft 2000 noprefixroute",
        "addr add 10.9.0.2/24 dev br0",
        "addr add 10.13.0.1/24 dev br0 metric 33",
        "addr add 10.99.7.5 peer 10.99.7.6/32 dev br0",
        "-6 addr add 2001:db8:b::1/64 dev br0 nodad metric 44",
        "addr add 239.1.1.1/32 dev br0 autojoin",
        "-6 addr add 2001:db8:9::1/64 dev br0 nodad home mngtmpaddr",
        "-6 addr add 2001:db8:9::3/64 dev br0 nodad preferred_lft 0 valid_lft 4000",
        // The kernel keeps `optimistic` only where optimistic DAD is on.
        "sysctl net.ipv6.conf.br1.optimistic_dad=1",
        "-6 addr add 2001:db8:a::1/64 dev br1 optimistic",
        "-6 addr add 2001:db8:a::2/64 dev br1",
        // Routes of every type, in several tables, one above 2^31.
        "route add 10.85.0.0/16 via 10.1.0.2 dev v0 table 3000000000",
        "route add 10.80.0.0/16 via inet6 fe80::1 dev v0",
        "route add 10.81.0.0/16 encap ip id 1 dst 1.2.3.4 dev v0",
        "route add 10.83.0.0/16 nexthop via 10.1.0.2 dev v0 weight 1 nexthop via 10.1.0.3 dev v0 weight 3",
        "route add 10.84.0.0/16 via 10.1.0.2 dev v0 mtu lock 1400 advmss 1300 window 1000 rtt 10 rttvar 5 ssthresh 3 cwnd 4 hoplimit 33 initcwnd 10 initrwnd 20 quickack 1 congctl lock cubic features ecn reordering 3 fastopen_no_cookie 1 rto_min 20 realm 5/6",
        "route add 10.86.0.0/16 via 10.99.0.1 dev v0 onlink",
        "route add 10.87.0.0/16 nexthop via inet6 fe80::1 dev v0 weight 2 nexthop via 10.1.0.3 dev v0",
        "route add 10.88.0.0/16 nexthop via 10.1.0.2 dev v0 realm 7 nexthop via 10.1.0.3 dev v0 onlink",
        "route add 10.89.0.0/16 via 10.1.0.2 dev v0 metric 50 proto static realm 9",
        "route add local 10.77.0.1 dev v0 table 100",
        "route add broadcast 10.77.0.255 dev v0 table 100",
        "route add multicast 224.1.0.0/16 dev v0 table 100",
        "route add anycast 10.74.0.0/16 dev v0 table 100",
        "route add throw 10.78.0.0/16 table 100",
        "route add prohibit 10.79.0.0/16 table 100",
        "route add blackhole 10.79.0.0/16 table 200",
        "route add unreachable 10.76.0.0/16 table 200",
        // TOS routes: a DS field with a name in rt_dsfield, and ones without.
        "route add 10.92.0.0/16 dev v0 tos AF11 table 201",
        "route add 10.93.0.0/16 dev v0 tos 0x8 table 201",
        "route add 10.93.0.0/16 dev v0 tos 0x4 table 201",
        // A realm named in rt_realms (0 is `cosmos` in Debian's).
        "route add 10.95.0.0/16 via 10.1.0.2 dev v0 realms 5/0 table 202",
        // seg6 needs CONFIG_IPV6_SEG6_LWTUNNEL.
        "? -6 route add 2001:db8:5::/64 encap seg6 mode encap segs 2001:db8::9,2001:db8::a dev v0",
        "-6 route add 2001:db8:6::/64 via 2001:db8::2 dev v0 pref high expires 600",
        "-6 route add 2001:db8:7::/64 nexthop via 2001:db8::2 dev v0 weight 2 nexthop via 2001:db8::3 dev v0 weight 5",
        "-6 route add 2001:db8:8::/64 via 2001:db8::2 dev v0 pref low mtu 1300 hoplimit 9 table 100",
        "-6 route add anycast 2001:db8:74::/64 dev v0 table 100",
        "-6 route add unreachable 2001:db8:75::/64 table 100",
        "-6 route add prohibit 2001:db8:76::/64 table 3000000000",
        // Rules with every selector; five at priority 200.
        "rule add not fwmark 0xca6c table 51820 pref 100",
        "rule add uidrange 100-200 table 5 pref 101",
        "rule add ipproto tcp sport 80-90 dport 443 table 6 pref 102",
        "rule add from all lookup main suppress_prefixlength 0 pref 103",
        "rule add l3mdev pref 104",
        "rule add iif v0 oif v1 fwmark 0x10/0xff realms 3/4 table 7 pref 105 proto 77",
        "rule add tun_id 9 goto 200 pref 106",
        "rule add suppress_ifgroup 5 table 8 pref 107",
        "rule add suppress_ifgroup default table 8 pref 108",
        "rule add tos 0x10 prohibit pref 109",
        "rule add not from 10.0.0.0/8 to 10.1.0.0/16 table 52 pref 110",
        "rule add iif nosuch0 table 53 pref 111",
        "rule add from 10.2.0.0/16 table 60 pref 200",
        "rule add not fwmark 0x2 table 60 pref 200",
        "rule add to 10.2.0.0/16 table 60 pref 200",
        "rule add fwmark 0x1 table 60 pref 200",
        "rule add ipproto udp dport 53 table 60 pref 200",
        "-6 rule add from 2001:db8::/32 ipproto tcp dport 22 blackhole pref 300",
        "rule add tos 0x8 table 9 pref 112",
        "rule add fwmark 0x20 realms 3/0 table 9 pref 113",
        // A mark of 0 under a mask: the kernel reports the mask alone.
        "rule add fwmark 0/0xff table 10 pref 114",
        "-6 rule add tos AF11 table 9 pref 301",
        "-6 rule add tos 0x4 table 9 pref 302",
    ] {
        step(&ns, line);
    }
    settle(&ns);
    (ns, other)
}

/// Waits until duplicate address detection is over on the links that are up, so that the
/// `tentative` flags do not change between the two reads (br1 is down: its addresses stay
/// tentative).
fn settle(ns: &NetNs) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let text = ns.ip(&["-j", "-6", "addr", "show"]).expect("ip addr");
        let links: Value = serde_json::from_str(&text).expect("JSON");
        let busy = links.as_array().unwrap().iter().any(|link| {
            link["ifname"] != "br1"
                && link["addr_info"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|addr| addr.get("tentative").is_some())
        });
        if !busy {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "DAD still running: {text}"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

/// An object with its keys sorted (key order is not compared).
fn sorted(value: &Value) -> Value {
    match value.as_object() {
        Some(object) => json!(object.iter().collect::<BTreeMap<_, _>>()),
        None => value.clone(),
    }
}

/// `ip -j -d ARGS` in `ns`, parsed.
fn ip_json(ns: &NetNs, args: &[&str]) -> Vec<Value> {
    let mut full = vec!["-j", "-d"];
    full.extend_from_slice(args);
    let text = ns.ip(&full).expect("ip -j -d");
    match serde_json::from_str(&text).expect("ip -j prints JSON") {
        Value::Array(items) => items,
        other => panic!("ip -j printed {other}"),
    }
}

/// `netmirror --json --netns NS ARGS`, parsed.
fn our_json(ns: &NetNs, args: &[&str]) -> Vec<Value> {
    let mut full = vec!["--json", "--netns", ns.name()];
    full.extend_from_slice(args);
    match nm(&full).json() {
        Value::Array(items) => items,
        other => panic!("netmirror --json printed {other}"),
    }
}

/// An object with only the keys whose values are set (not null, not an empty list), so that
/// "absent in ip" and "null in netmirror" compare equal.
fn compact(map: BTreeMap<&str, Value>) -> Value {
    Value::Object(
        map.into_iter()
            .filter(|(_, value)| !value.is_null() && value != &json!([]) && value != &json!({}))
            .map(|(key, value)| (key.to_owned(), value))
            .collect(),
    )
}

fn get(object: &Value, key: &str) -> Value {
    object.get(key).cloned().unwrap_or(Value::Null)
}

/// A number as text, or text as it is: ip prints some numbers as strings (`"table": "100"`).
fn text_of(value: &Value) -> Value {
    match value {
        Value::Number(number) => Value::String(number.to_string()),
        other => other.clone(),
    }
}

/// A TOS as `ip -j` writes it (a name from the system's rt_dsfield, or hex), as a number.
fn dsfield(text: &str) -> u8 {
    netmirror_platform::names::parse_dsfield(text)
        .unwrap_or_else(|| panic!("ip printed tos {text:?}"))
}

/// The keys of `ip -j -d route` that [`ip_route`] compares, and `nh_info`: the nexthop
/// object a route is on, which `Objects::nh_info_mismatches` compares as a nexthop with
/// `route show -d --json`'s.
const ROUTE_KEYS: [&str; 25] = [
    "type", "dst", "gateway", "via", "dev", "table", "metric", "protocol", "scope", "prefsrc",
    "pref", "flags", "flow", "tos", "expires", "encap", "id", "src", "ttl", "mode", "segs",
    "metrics", "nexthops", "nhid", "nh_info",
];

/// A route from `ip -j -d`, in the shape compared.
fn ip_route(route: &Value) -> Value {
    // Each key ip prints is compared below.
    for key in route.as_object().into_iter().flatten().map(|(key, _)| key) {
        assert!(
            ROUTE_KEYS.contains(&key.as_str()),
            "ip printed {key}, which is not compared: {route}"
        );
    }
    let mut map: BTreeMap<&str, Value> = BTreeMap::new();
    for key in [
        "type", "dev", "protocol", "scope", "prefsrc", "pref", "flags",
    ] {
        map.insert(key, get(route, key));
    }
    map.insert("table", text_of(&get(route, "table")));
    map.insert("metric", get(route, "metric"));
    map.insert("dst", get(route, "dst"));
    map.insert("nhid", get(route, "nhid"));
    map.insert(
        "gateway",
        match route.get("via") {
            Some(via) => get(via, "host"),
            None => get(route, "gateway"),
        },
    );
    if let Some(flow) = route.get("flow") {
        map.insert("flow", flow.clone());
    }
    if let Some(tos) = route.get("tos").and_then(Value::as_str) {
        // A name from rt_dsfield or hex: netmirror's JSON has the number.
        map.insert("tos", json!(dsfield(tos)));
    }
    if let Some(expires) = route.get("expires").and_then(Value::as_i64) {
        // A countdown (negative once past its end): compared to the ten seconds.
        map.insert("expires", json!(expires.div_euclid(10)));
    }
    if let Some(kind) = route.get("encap") {
        let mut encap = serde_json::Map::new();
        encap.insert("type".to_owned(), kind.clone());
        let fields: &[&str] = match kind.as_str() {
            Some("ip") => &["id", "src", "ttl", "tos"],
            Some("seg6") => &["mode", "segs"],
            _ => &[],
        };
        for key in fields {
            encap.insert((*key).to_owned(), get(route, key));
        }
        if kind == "ip" {
            // ip -j writes the encapsulation's dst over the route's.
            encap.insert("dst".to_owned(), get(route, "dst"));
            map.remove("dst");
        }
        map.insert("encap", sorted(&Value::Object(encap)));
    }
    if let Some(Value::Array(metrics)) = route.get("metrics") {
        let mut object = serde_json::Map::new();
        for (key, value) in metrics[0].as_object().unwrap() {
            match key.as_str() {
                "ecn" => object.insert("features".to_owned(), json!(1)),
                _ => object.insert(key.clone(), value.clone()),
            };
        }
        map.insert("metrics", json!([object]));
    }
    if let Some(Value::Array(hops)) = route.get("nexthops") {
        let hops: Vec<Value> = hops
            .iter()
            .map(|hop| {
                let mut hop_map: BTreeMap<&str, Value> = BTreeMap::new();
                for key in ["dev", "weight", "flags", "flow"] {
                    hop_map.insert(key, get(hop, key));
                }
                hop_map.insert(
                    "gateway",
                    match hop.get("via") {
                        Some(via) => get(via, "host"),
                        None => get(hop, "gateway"),
                    },
                );
                compact(hop_map)
            })
            .collect();
        map.insert("nexthops", Value::Array(hops));
    }
    compact(map)
}

/// A route from netmirror's JSON, in the shape compared.
fn our_route(route: &Value) -> Value {
    let mut map: BTreeMap<&str, Value> = BTreeMap::new();
    for key in [
        "type", "dev", "protocol", "scope", "prefsrc", "pref", "flags", "gateway", "flow", "nhid",
    ] {
        map.insert(key, get(route, key));
    }
    map.insert("table", get(route, "table"));
    map.insert("dst", get(route, "dst"));
    if route["tos"] != json!(0) {
        map.insert("tos", get(route, "tos"));
    }
    // ip prints a metric for IPv6 routes, and for IPv4 ones only when it is set.
    let metric = get(route, "metric");
    if route["family"] == "inet6" || metric != json!(0) {
        map.insert("metric", metric);
    }
    if let Some(expires) = route.get("expires").and_then(Value::as_i64) {
        map.insert("expires", json!(expires.div_euclid(10)));
    }
    if let Some(encap) = route.get("encap").filter(|encap| !encap.is_null()) {
        let mut encap = encap.clone();
        let object = encap.as_object_mut().unwrap();
        object.remove("flags");
        if object["type"] == "ip" {
            map.remove("dst");
        }
        map.insert("encap", sorted(&encap));
    }
    if let Some(Value::Array(metrics)) = route.get("metrics")
        && let Some(first) = metrics.first()
    {
        let mut object = first.as_object().unwrap().clone();
        object.remove("lock");
        // ip prints rtt and rttvar divided by 8 and 4 (decision: netmirror keeps the kernel's).
        for (key, div) in [("rtt", 8), ("rttvar", 4)] {
            if let Some(value) = object.get(key).and_then(Value::as_u64) {
                object.insert(key.to_owned(), json!(value / div));
            }
        }
        map.insert("metrics", json!([object]));
    }
    if let Some(Value::Array(hops)) = route.get("nexthops") {
        let hops: Vec<Value> = hops
            .iter()
            .map(|hop| {
                let mut hop_map: BTreeMap<&str, Value> = BTreeMap::new();
                for key in ["dev", "weight", "flags", "flow", "gateway"] {
                    hop_map.insert(key, get(hop, key));
                }
                compact(hop_map)
            })
            .collect();
        map.insert("nexthops", Value::Array(hops));
    }
    compact(map)
}

fn lines(values: impl IntoIterator<Item = Value>) -> BTreeSet<String> {
    values.into_iter().map(|value| value.to_string()).collect()
}

#[test]
fn routes_match_ip_field_by_field() {
    let (ns, _other) = world();
    for family in ["-4", "-6"] {
        let theirs = lines(
            ip_json(&ns, &[family, "route", "show", "table", "all"])
                .iter()
                .map(ip_route),
        );
        let ours = lines(
            our_json(&ns, &[family, "route", "show", "table", "all"])
                .iter()
                .map(our_route),
        );
        let only_ip: Vec<&String> = theirs.difference(&ours).collect();
        let only_us: Vec<&String> = ours.difference(&theirs).collect();
        assert!(
            only_ip.is_empty() && only_us.is_empty(),
            "{family}: only in ip: {only_ip:#?}\nonly in netmirror: {only_us:#?}"
        );
        assert!(theirs.len() > 10, "{theirs:#?}");
    }
    // What ip -j leaves out: the locks.
    let ours = our_json(&ns, &["route", "show"]);
    let metrics = ours
        .iter()
        .find(|route| route["dst"] == "10.84.0.0/16")
        .map(|route| route["metrics"][0].clone())
        .expect("the route with metrics");
    assert_eq!(metrics["lock"], json!(["mtu", "rto_min", "congestion"]));
    assert_eq!(metrics["rtt"], json!(10));
}

/// `link show` and `addr show` select what `ip -o link show` and `ip -o addr show` select,
/// for every selector `ip` takes: devices by state, master, kind, port kind and group;
/// addresses by scope, prefix, label pattern and flag (also negated), and by their link's.
#[test]
fn link_and_address_selectors_select_what_ip_selects() {
    let (ns, _other) = world();
    for line in [
        "link set group 5 dev mv0",
        "addr add 10.9.0.7/24 dev br0 label br0:x",
    ] {
        let args: Vec<&str> = line.split_whitespace().collect();
        ns.ip(&args).expect(line);
    }
    // `INDEX: NAME` of each link line, `INDEX: NAME FAMILY ADDRESS` of each address line.
    let keys = |text: &str, words: usize| -> Vec<String> {
        text.lines()
            .map(|line| {
                line.split_whitespace()
                    .take(words)
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect()
    };
    let links: [&[&str]; 10] = [
        &[],
        &["up"],
        &["type", "bridge"],
        &["type", "macvlan"],
        &["type", "bridge_slave"],
        &["master", "br0"],
        &["nomaster"],
        &["group", "5"],
        &["group", "default", "up"],
        &["dev", "v0"],
    ];
    for selection in links {
        let theirs = ns
            .ip(&[&["-o", "link", "show"], selection].concat())
            .expect("ip -o link");
        let ours = nm(&[&["-d", "--netns", ns.name(), "link", "show"], selection].concat())
            .ok()
            .to_owned();
        assert!(!theirs.is_empty(), "{selection:?}");
        // `ip` names a veth's peer in another namespace with `@`; the key is the index.
        let index = |keys: Vec<String>| -> Vec<String> {
            keys.into_iter()
                .map(|k| k.split('@').next().unwrap_or_default().to_owned())
                .collect()
        };
        assert_eq!(
            index(keys(&ours, 2)),
            index(keys(&theirs, 2)),
            "link {selection:?}"
        );
    }
    let addrs: [&[&str]; 15] = [
        &[],
        &["up"],
        &["scope", "global"],
        &["scope", "link"],
        &["to", "10.9.0.0/16"],
        &["to", "2001:db8::/32"],
        &["label", "br0:*"],
        &["label", "br[0-9]"],
        &["secondary"],
        &["primary", "dev", "br0"],
        &["dynamic"],
        &["-tentative"],
        &["tentative", "-optimistic"],
        &["type", "bridge", "nodad"],
        &["master", "br0"],
    ];
    for selection in addrs {
        let theirs = ns
            .ip(&[&["-o", "addr", "show"], selection].concat())
            .expect("ip -o addr");
        let ours = nm(&[&["-d", "--netns", ns.name(), "addr", "show"], selection].concat())
            .ok()
            .to_owned();
        assert!(!theirs.is_empty(), "{selection:?}");
        assert_eq!(keys(&ours, 4), keys(&theirs, 4), "addr {selection:?}");
    }
}

/// `-d rule show` with each of `ip rule show`'s selectors prints the lines `ip -d rule show`
/// prints; `protocol`, which `ip` reads but does not apply when it shows rules, selects the
/// rules of that protocol.
#[test]
fn rule_selectors_select_what_ip_selects() {
    let (ns, _other) = world();
    // (`from 10.2.0.0/24` selects none: a rule's prefix must be as long as the selector's.)
    let selections: [(&str, &[&str]); 23] = [
        ("-4", &[]),
        ("-4", &["pref", "200"]),
        ("-4", &["not"]),
        ("-4", &["from", "10.2.0.0/16"]),
        ("-4", &["from", "10.0.0.0/8"]),
        ("-4", &["from", "10.2.0.0/15"]),
        ("-4", &["from", "10.2.0.0/24"]),
        ("-4", &["to", "10.1.0.0/16"]),
        ("-4", &["from", "all"]),
        ("-4", &["table", "60"]),
        ("-4", &["lookup", "main"]),
        ("-4", &["fwmark", "0x10/0xff"]),
        ("-4", &["fwmark", "0x1"]),
        ("-4", &["iif", "v0"]),
        ("-4", &["oif", "v1"]),
        ("-4", &["tos", "0x10"]),
        ("-4", &["ipproto", "tcp"]),
        ("-4", &["sport", "80-90"]),
        ("-4", &["dport", "53"]),
        ("-4", &["uidrange", "100-200"]),
        ("-4", &["tun_id", "9"]),
        ("-4", &["l3mdev"]),
        ("-6", &["from", "2001:db8::/16"]),
    ];
    let mut selected = 0;
    for (family, selection) in selections {
        let theirs = ns
            .ip(&[&["-d", family, "rule", "show"], selection].concat())
            .expect("ip -d rule");
        let ours = nm(&[
            &["-d", "--netns", ns.name(), family, "rule", "show"],
            selection,
        ]
        .concat())
        .ok()
        .to_owned();
        selected += usize::from(!theirs.is_empty());
        assert_eq!(ours, theirs, "{family} {selection:?}");
    }
    assert_eq!(selected, selections.len() - 1);
    let ours = nm(&[
        "-d",
        "--netns",
        ns.name(),
        "-4",
        "rule",
        "show",
        "protocol",
        "77",
    ])
    .ok()
    .to_owned();
    assert_eq!(ours.lines().count(), 1, "{ours}");
    assert!(ours.starts_with("105:"), "{ours}");
}

#[test]
fn route_details_print_hops_and_attributes_as_ip_does() {
    let (ns, _other) = world();
    let out = nm(&["-d", "--netns", ns.name(), "route", "show"])
        .ok()
        .to_owned();
    for expected in [
        "unicast 10.83.0.0/16 proto boot scope global\n\tnexthop via 10.1.0.2 dev v0 weight 1\n\tnexthop via 10.1.0.3 dev v0 weight 3\n",
        "unicast 10.80.0.0/16 via inet6 fe80::1 dev v0 proto boot scope global\n",
        "\tnexthop via inet6 fe80::1 dev v0 weight 2\n",
        "\tnexthop via 10.1.0.2 realm 7 dev v0 weight 1\n\tnexthop via 10.1.0.3 dev v0 weight 1 onlink\n",
        "unicast 10.81.0.0/16 encap ip id 1 src 0.0.0.0 dst 1.2.3.4 ttl 0 tos 0 dev v0",
        "via 10.99.0.1 dev v0 proto boot scope global onlink\n",
        "realms 5/6 mtu lock 1400 window 1000 rtt 1ms rttvar 1ms ssthresh 3 cwnd 4 advmss 1300 reordering 3 hoplimit 33 initcwnd 10 features ecn rto_min lock 20ms initrwnd 20 quickack 1 congctl lock cubic fastopen_no_cookie 1\n",
    ] {
        assert!(out.contains(expected), "{expected:?} not in\n{out}");
    }
    // Line for line what `ip -d route` prints (blanks squeezed; the countdown of `expires`
    // read at two moments is left out), for every table (which names each route's table),
    // the main one (the default, which names none), another one, and a device and a
    // protocol (whose words ip leaves out too).
    let selections: [&[&str]; 5] = [
        &["table", "all"],
        &[],
        &["table", "local"],
        &["table", "all", "dev", "v0"],
        &["table", "all", "proto", "kernel"],
    ];
    // And by destination, as `ip route show [to] [exact|root|match] PREFIX` selects.
    let destinations: [(&str, &[&str]); 35] = [
        ("-4", &["root", "10.80.0.0/12"]),
        ("-4", &["to", "root", "10.8/13"]),
        ("-4", &["match", "10.83.1.1"]),
        ("-4", &["10.84.0.0/16"]),
        ("-4", &["table", "all", "exact", "10.1.0.0/24"]),
        ("-4", &["to", "10.89.0.0/16"]),
        ("-4", &["table", "all", "root", "10.0.0.0/8"]),
        ("-4", &["table", "100", "match", "10.77.0.1"]),
        ("-6", &["root", "2001:db8::/32"]),
        ("-6", &["match", "2001:db8:6::1"]),
        ("-6", &["table", "all", "root", "2001:db8:70::/44"]),
        ("-6", &["2001:db8:7::/64"]),
        // And by gateway, preferred source, scope, TOS and source prefix (ip leaves out the
        // gateway and source it is narrowed to, and the scope and TOS).
        ("-4", &["via", "10.1.0.2"]),
        ("-4", &["via", "10.1.0.0/24"]),
        ("-4", &["via", "inet6", "fe80::1"]),
        ("-4", &["src", "10.1.0.1"]),
        ("-4", &["table", "all", "src", "10.1.0.0/16"]),
        ("-4", &["scope", "link"]),
        ("-4", &["table", "all", "scope", "host"]),
        ("-4", &["table", "201", "tos", "0x8"]),
        ("-4", &["proto", "static", "via", "10.1.0.2"]),
        ("-6", &["via", "2001:db8::2"]),
        ("-6", &["scope", "global"]),
        ("-6", &["from", "::/0"]),
        // And by metric, realms and mark (ip leaves out the metric, and the realms when
        // both halves are given).
        ("-4", &["metric", "50"]),
        ("-4", &["table", "all", "priority", "33"]),
        ("-6", &["preference", "0x2c"]),
        ("-6", &["metric", "256"]),
        ("-4", &["realms", "6"]),
        ("-4", &["table", "all", "realms", "5/"]),
        ("-4", &["realm", "5/6"]),
        ("-4", &["table", "all", "realms", "5/0"]),
        ("-4", &["realms", "9"]),
        ("-4", &["mark", "0"]),
        ("-4", &["table", "all", "realms", "0"]),
    ];
    for (family, selection) in ["-4", "-6"]
        .into_iter()
        .flat_map(|family| selections.map(|selection| (family, selection)))
        .chain(destinations)
    {
        let normal = |text: &str| -> Vec<String> {
            text.lines()
                .map(|line| {
                    let words: Vec<&str> = line.split_whitespace().collect();
                    let mut kept = Vec::new();
                    let mut skip = false;
                    for word in words {
                        if skip {
                            skip = false;
                            continue;
                        }
                        if word == "expires" {
                            skip = true;
                            continue;
                        }
                        kept.push(word);
                    }
                    let indent = if line.starts_with('\t') { "\t" } else { "" };
                    format!("{indent}{}", kept.join(" "))
                })
                .collect()
        };
        let theirs = ns
            .ip(&[&["-d", family, "route", "show"], selection].concat())
            .expect("ip -d route");
        let ours = nm(&[
            &["-d", "--netns", ns.name(), family, "route", "show"],
            selection,
        ]
        .concat())
        .ok()
        .to_owned();
        assert!(!theirs.is_empty(), "{family} {selection:?}");
        assert_eq!(normal(&ours), normal(&theirs), "{family} {selection:?}");
    }
    // Selections that select nothing, in ip as here: a route dump has no input interface
    // and no mark, and no route has realms 0/6.
    for selection in [
        &["iif", "v0"][..],
        &["table", "all", "mark", "7"],
        &["table", "all", "realms", "cosmos/6"],
    ] {
        let theirs = ns
            .ip(&[&["-d", "route", "show"], selection].concat())
            .expect("ip -d route");
        let ours = nm(&[
            &["-d", "--netns", ns.name(), "-4", "route", "show"],
            selection,
        ]
        .concat())
        .ok()
        .to_owned();
        assert_eq!((ours.as_str(), theirs.as_str()), ("", ""), "{selection:?}");
    }
    // The table view: a multipath route lists its hops, never `-- --`.
    let out = nm(&["--netns", ns.name(), "route", "show"]).ok().to_owned();
    let row = out
        .lines()
        .find(|line| line.contains("10.83.0.0/16"))
        .expect("the multipath route");
    assert!(
        row.contains("10.1.0.2,10.1.0.3") && row.contains("v0,v0"),
        "{row}"
    );
    let out = nm(&["-d", "--netns", ns.name(), "-6", "route", "show"])
        .ok()
        .to_owned();
    // Where the kernel made the seg6 route (it needs a kernel option).
    let made = !ns
        .ip(&["-6", "route", "show", "2001:db8:5::/64"])
        .expect("ip route show")
        .trim()
        .is_empty();
    assert_eq!(
        made,
        out.contains("encap seg6 mode encap segs 2 [ 2001:db8::9 2001:db8::a ] dev v0"),
        "{out}"
    );
    // The overview's multipath default route shows its hops, not `-- --`.
    ip(
        &ns,
        "route add default nexthop via 10.1.0.2 dev v0 weight 2 nexthop via 10.1.0.3 dev v0",
    );
    let out = nm(&["--netns", ns.name()]).ok().to_owned();
    let row = out
        .lines()
        .skip_while(|line| !line.contains("Default routes"))
        .find(|line| line.contains("default"))
        .unwrap_or_else(|| panic!("no default route row in\n{out}"));
    assert!(
        row.contains("10.1.0.2,10.1.0.3") && row.contains("v0,v0"),
        "{row}"
    );
    let overview = nm(&["--json", "--netns", ns.name()]).json();
    assert_eq!(
        overview["default_routes"][0]["nexthops"],
        json!([
            {"gateway": "10.1.0.2", "dev": "v0", "weight": 2, "flags": []},
            {"gateway": "10.1.0.3", "dev": "v0", "weight": 1, "flags": []}
        ])
    );
}

/// The keys of `ip -j rule` that [`ip_rule`] compares.
const RULE_KEYS: [&str; 33] = [
    "priority",
    "src",
    "srclen",
    "dst",
    "dstlen",
    "iif",
    "oif",
    "fwmark",
    "fwmask",
    "tun_id",
    "goto",
    "uid_start",
    "uid_end",
    "ipproto",
    "suppress_prefixlen",
    "suppress_ifgroup",
    "table",
    "protocol",
    "action",
    "tos",
    "not",
    "l3mdev",
    "unresolved",
    "iif_detached",
    "oif_detached",
    "sport",
    "sport_start",
    "sport_end",
    "dport",
    "dport_start",
    "dport_end",
    "flow_from",
    "flow_to",
];

/// A rule from `ip -j -d`, in the shape compared.
fn ip_rule(rule: &Value) -> Value {
    // Each key ip prints is compared below.
    for key in rule.as_object().into_iter().flatten().map(|(key, _)| key) {
        assert!(
            RULE_KEYS.contains(&key.as_str()),
            "ip printed {key}, which is not compared: {rule}"
        );
    }
    let mut map: BTreeMap<&str, Value> = BTreeMap::new();
    for key in [
        "priority",
        "src",
        "dst",
        "iif",
        "oif",
        "fwmark",
        "fwmask",
        "tun_id",
        "goto",
        "uid_start",
        "uid_end",
        "ipproto",
        "suppress_prefixlen",
        "suppress_ifgroup",
    ] {
        map.insert(key, get(rule, key));
    }
    map.insert("table", text_of(&get(rule, "table")));
    map.insert("protocol", get(rule, "protocol"));
    map.insert("action", get(rule, "action"));
    if let Some(tos) = rule.get("tos").and_then(Value::as_str) {
        map.insert("tos", json!(dsfield(tos)));
    }
    for flag in [
        "not",
        "l3mdev",
        "unresolved",
        "iif_detached",
        "oif_detached",
    ] {
        if rule.get(flag).is_some() {
            map.insert(flag, json!(true));
        }
    }
    for port in ["sport", "dport"] {
        let start = format!("{port}_start");
        let end = format!("{port}_end");
        if let Some(single) = rule.get(port) {
            map.insert(port, json!(single.to_string()));
        } else if let (Some(start), Some(end)) = (rule.get(&start), rule.get(&end)) {
            map.insert(port, json!(format!("{start}-{end}")));
        }
    }
    if let (Some(from), Some(to)) = (rule.get("flow_from"), rule.get("flow_to")) {
        map.insert(
            "realms",
            json!(format!(
                "{}/{}",
                from.as_str().unwrap(),
                to.as_str().unwrap()
            )),
        );
    } else if let Some(to) = rule.get("flow_to") {
        map.insert("realms", to.clone());
    }
    // ip's src and dst carry the prefix length as srclen/dstlen.
    for (key, len) in [("src", "srclen"), ("dst", "dstlen")] {
        if let (Some(addr), Some(len)) = (rule.get(key).and_then(Value::as_str), rule.get(len)) {
            map.insert(key, json!(format!("{addr}/{len}")));
        }
    }
    compact(map)
}

/// A rule from netmirror's JSON, in the shape compared.
fn our_rule(rule: &Value) -> Value {
    let mut map: BTreeMap<&str, Value> = BTreeMap::new();
    for key in [
        "priority",
        "src",
        "dst",
        "iif",
        "oif",
        "fwmark",
        "fwmask",
        "tun_id",
        "goto",
        "table",
        "protocol",
        "uid_start",
        "uid_end",
        "ipproto",
        "suppress_prefixlen",
        "suppress_ifgroup",
        "sport",
        "dport",
        "realms",
    ] {
        map.insert(key, get(rule, key));
    }
    if rule["tos"] != json!(0) {
        map.insert("tos", get(rule, "tos"));
    }
    if rule["action"] != "lookup" && rule["action"] != "goto" {
        map.insert("action", get(rule, "action"));
    }
    if let Some(tun_id) = rule.get("tun_id").and_then(Value::as_str) {
        map.insert("tun_id", json!(tun_id.parse::<u64>().unwrap()));
    }
    for flag in [
        "not",
        "l3mdev",
        "unresolved",
        "iif_detached",
        "oif_detached",
    ] {
        if rule[flag] == json!(true) {
            map.insert(flag, json!(true));
        }
    }
    compact(map)
}

#[test]
fn rules_match_ip_field_by_field() {
    let (ns, _other) = world();
    for family in ["-4", "-6"] {
        let theirs = lines(ip_json(&ns, &[family, "rule", "show"]).iter().map(ip_rule));
        let ours_json = our_json(&ns, &[family, "rule", "show"]);
        let ours = lines(ours_json.iter().map(our_rule));
        let only_ip: Vec<&String> = theirs.difference(&ours).collect();
        let only_us: Vec<&String> = ours.difference(&theirs).collect();
        assert!(
            only_ip.is_empty() && only_us.is_empty(),
            "{family}: only in ip: {only_ip:#?}\nonly in netmirror: {only_us:#?}"
        );
    }
    // The `-d` text of each rule is `ip -d rule`'s (`proto` always), and five rules at one
    // priority are five rows.
    let text = ns.ip(&["-d", "rule", "show"]).expect("ip -d rule");
    let theirs: Vec<String> = text
        .lines()
        .map(|line| line.trim_end().to_owned())
        .collect();
    let out = nm(&["-d", "--netns", ns.name(), "-4", "rule"])
        .ok()
        .to_owned();
    let ours: Vec<String> = out.lines().map(str::to_owned).collect();
    assert_eq!(ours, theirs);
    for expected in [
        "100:\tnot from all fwmark 0xca6c lookup 51820 proto unspec",
        "104:\tfrom all lookup [l3mdev-table] proto unspec",
        "101:\tfrom all uidrange 100-200 lookup 5 proto unspec",
        "102:\tfrom all ipproto tcp sport 80-90 dport 443 lookup 6 proto unspec",
        "103:\tfrom all lookup main suppress_prefixlength 0 proto unspec",
    ] {
        assert!(
            ours.iter().any(|line| line == expected),
            "{expected:?} in {ours:#?}"
        );
    }
    assert_eq!(
        ours.iter().filter(|line| line.starts_with("200:")).count(),
        5
    );
}

/// The keys of `ip -j -d link` compared as they are.
const LINK_KEYS: [&str; 12] = [
    "ifindex",
    "link",
    "link_index",
    "link_netnsid",
    "master",
    "mtu",
    "address",
    "broadcast",
    "link_type",
    "txqlen",
    "operstate",
    "flags",
];

/// The keys of a link's settings, compared where ip prints them.
const LINK_SETTINGS: [&str; 16] = [
    "qdisc",
    "allmulti",
    "num_tx_queues",
    "num_rx_queues",
    "gso_max_size",
    "gso_max_segs",
    "tso_max_size",
    "tso_max_segs",
    "gro_max_size",
    "gso_ipv4_max_size",
    "gro_ipv4_max_size",
    "linkmode",
    "promiscuity",
    "min_mtu",
    "max_mtu",
    "permaddr",
];

/// The other keys of `ip -j -d link` compared, each in a way of its own.
const LINK_OTHER_KEYS: [&str; 8] = [
    "ifname",
    "proto_down",
    "proto_down_reason",
    "inet6_addr_gen_mode",
    "altnames",
    "group",
    "ifalias",
    "linkinfo",
];

/// How `our` link differs from `ip -j -d`'s `ip_link`, key by key (empty when equal; a key ip
/// prints that is not compared is a difference too), and how many of the settings and kind
/// data keys ip printed were compared.
fn link_mismatches(ip_link: &Value, our: &Value, ip_links: &[Value]) -> (Vec<String>, usize) {
    let ifname = ip_link["ifname"].as_str().unwrap_or("?");
    let mut mismatches = Vec::new();
    let mut compared = 0;
    let mut check = |what: String, ours: Value, theirs: Value| {
        if ours != theirs {
            mismatches.push(format!("{ifname}: {what}: netmirror {ours}, ip {theirs}"));
        }
    };
    for key in LINK_KEYS {
        check(key.to_owned(), get(our, key), get(ip_link, key));
    }
    // ip 6.1 reads the reasons as 8 bits (`rta_getattr_u8`): it leaves out those from 8 up,
    // which the kernel holds (32 bits) and netmirror shows.
    let our_reasons = get(our, "proto_down_reason");
    let low_reasons = our_reasons.as_array().map(|reasons| {
        reasons
            .iter()
            .filter(|bit| bit.as_str().and_then(|bit| bit.parse::<u8>().ok()) < Some(8))
            .cloned()
            .collect::<Vec<_>>()
    });
    check(
        "proto_down_reason".to_owned(),
        json!(low_reasons),
        get(ip_link, "proto_down_reason"),
    );
    // ip prints `proto_down` only when it is on.
    check(
        "proto_down".to_owned(),
        get(our, "proto_down"),
        json!(u64::from(ip_link.get("proto_down") == Some(&json!(true)))),
    );
    // The link's other settings, where ip prints them (ip 6.1 knows no IPv4 GSO/GRO
    // sizes, headroom or tailroom).
    for key in LINK_SETTINGS {
        if let Some(theirs) = ip_link.get(key) {
            check(key.to_owned(), get(our, key), theirs.clone());
            compared += 1;
        }
    }
    // No IPv6 state (below IPv6's MTU, say): ip leaves the key out, netmirror has null.
    check(
        "inet6_addr_gen_mode".to_owned(),
        get(our, "inet6_addr_gen_mode"),
        get(ip_link, "inet6_addr_gen_mode"),
    );
    check(
        "altnames".to_owned(),
        get(our, "altnames"),
        ip_link.get("altnames").cloned().unwrap_or(json!([])),
    );
    check("group".to_owned(), get(our, "group"), get(ip_link, "group"));
    check(
        "ifalias".to_owned(),
        get(our, "ifalias"),
        get(ip_link, "ifalias"),
    );
    let (ip_info, our_info) = (get(ip_link, "linkinfo"), get(our, "linkinfo"));
    for key in ["info_kind", "info_slave_kind"] {
        check(key.to_owned(), get(&our_info, key), get(&ip_info, key));
    }
    // Kind data: every key ip prints but the timers that count down (left out, as the
    // statistics are), with ip's booleans as 0/1, its hex strings and port state names as
    // the kernel's numbers.
    for section in ["info_data", "info_slave_data"] {
        let (ip_data, our_data) = (get(&ip_info, section), get(&our_info, section));
        let Some(ip_data) = ip_data.as_object() else {
            continue;
        };
        for (key, theirs) in ip_data {
            if key.ends_with("_timer") || key == "group_fwd_mask_str" {
                continue;
            }
            let theirs = match (key.as_str(), theirs) {
                (_, Value::Bool(yes)) => json!(u64::from(*yes)),
                ("state", Value::String(name)) => {
                    let states = [
                        "disabled",
                        "listening",
                        "learning",
                        "forwarding",
                        "blocking",
                    ];
                    match states.iter().position(|state| state == name) {
                        Some(number) => json!(number),
                        None => json!(name),
                    }
                }
                // A VXLAN's device: ip names it.
                ("link", Value::String(name)) => ip_links
                    .iter()
                    .find(|link| link["ifname"] == *name)
                    .map_or_else(|| json!(name), |link| link["ifindex"].clone()),
                ("df", Value::String(name)) => {
                    match ["unset", "set", "inherit"].iter().position(|df| df == name) {
                        Some(number) => json!(number),
                        None => json!(name),
                    }
                }
                // A VXLAN's source ports: netmirror's list of the two.
                ("port_range", Value::Object(range)) => json!([
                    range.get("low").map(ToString::to_string),
                    range.get("high").map(ToString::to_string)
                ]),
                (_, Value::String(text)) => {
                    let number = match text.strip_prefix("0x") {
                        Some(hex) => u64::from_str_radix(hex, 16).ok(),
                        None if key == "group_fwd_mask" => text.parse::<u64>().ok(),
                        None => None,
                    };
                    number.map_or_else(|| json!(text), |number| json!(number))
                }
                (_, other) => other.clone(),
            };
            check(format!("{section}.{key}"), get(&our_data, key), theirs);
            compared += 1;
        }
    }
    // Each key ip printed is compared above.
    for key in ip_link
        .as_object()
        .into_iter()
        .flatten()
        .map(|(key, _)| key)
    {
        if !LINK_KEYS
            .iter()
            .chain(&LINK_SETTINGS)
            .chain(&LINK_OTHER_KEYS)
            .any(|known| known == key)
        {
            mismatches.push(format!("{ifname}: {key}: printed by ip, not compared"));
        }
    }
    (mismatches, compared)
}

/// How netmirror's links (`ours`) differ from `ip -j -d link show`'s (`theirs`).
fn links_mismatches(theirs: &[Value], ours: &[Value]) -> (Vec<String>, usize) {
    let mut mismatches = Vec::new();
    let mut compared = 0;
    if theirs.len() != ours.len() {
        let names = |links: &[Value]| -> Vec<Value> {
            links.iter().map(|link| link["ifname"].clone()).collect()
        };
        mismatches.push(format!(
            "links: netmirror {:?}, ip {:?}",
            names(ours),
            names(theirs)
        ));
    }
    for ip_link in theirs {
        let ifname = ip_link["ifname"].as_str().unwrap_or("?");
        match ours.iter().find(|link| link["ifname"] == ifname) {
            Some(our) => {
                let (more, n) = link_mismatches(ip_link, our, theirs);
                mismatches.extend(more);
                compared += n;
            }
            None => mismatches.push(format!("{ifname}: not in netmirror's links")),
        }
    }
    (mismatches, compared)
}

#[test]
fn links_match_ip_field_by_field() {
    let (ns, other) = world();
    let theirs = ip_json(&ns, &["link", "show"]);
    let ours = our_json(&ns, &["link"]);
    let (mismatches, compared) = links_mismatches(&theirs, &ours);
    assert!(mismatches.is_empty(), "{mismatches:#?}");
    assert!(compared > 15, "kind data compared: {compared}");
    let vx0 = ours.iter().find(|link| link["ifname"] == "vx0").unwrap();
    assert_eq!(vx0["proto_down_reason"], json!(["2", "9"]), "{vx0}");
    // The peer in the other namespace: by index and netnsid, never by a local name.
    let p0 = ours.iter().find(|link| link["ifname"] == "p0").unwrap();
    let peer_index = other
        .ip(&["-j", "link", "show", "p1"])
        .map(|text| serde_json::from_str::<Value>(&text).unwrap()[0]["ifindex"].clone())
        .unwrap();
    assert_eq!(p0["link_index"], peer_index);
    assert!(p0["link"].is_null(), "{p0}");
    assert!(p0["link_netnsid"].is_number(), "{p0}");
    let text = nm(&["-d", "--netns", ns.name(), "link", "show", "p0"])
        .ok()
        .to_owned();
    assert!(text.contains(&format!("p0@if{peer_index}:")), "{text}");
    // The `-d` line of each link starts with `ip link`'s first line, word for word: the
    // parent, flags, MTU, qdisc, master, state, link mode, group and queue length.
    let ours = nm(&["-d", "--netns", ns.name(), "link", "show"])
        .ok()
        .to_owned();
    let ours: Vec<&str> = ours
        .lines()
        .map(|line| line.split(" link/").next().unwrap_or(line))
        .collect();
    let theirs = ns.ip(&["-d", "link", "show"]).expect("ip -d link");
    let theirs: Vec<&str> = theirs
        .lines()
        .filter(|line| !line.starts_with(' '))
        .map(str::trim_end)
        .collect();
    assert!(theirs.len() > 10, "{theirs:#?}");
    assert_eq!(ours, theirs);
    // `link show ALTNAME` resolves it as ip does.
    let by_alt = our_json(&ns, &["link", "show", "conformance-alt1"]);
    assert_eq!(by_alt.len(), 1);
    assert_eq!(by_alt[0]["ifname"], "v0");
    assert_eq!(
        by_alt[0]["altnames"],
        json!(["conformance-alt0", "conformance-alt1"])
    );
}

/// ip's flag keys of an address, in ip's order.
const ADDRESS_FLAGS: &[&str] = &[
    "secondary",
    "temporary",
    "nodad",
    "optimistic",
    "dadfailed",
    "home",
    "deprecated",
    "tentative",
    "dynamic",
    "mngtmpaddr",
    "noprefixroute",
    "autojoin",
    "stable-privacy",
];

/// The keys of an address of `ip -j -d addr show` compared (its flags aside), the
/// countdowns last.
const ADDRESS_KEYS: [&str; 10] = [
    "family",
    "local",
    "prefixlen",
    "scope",
    "label",
    "broadcast",
    "address",
    "metric",
    "valid_life_time",
    "preferred_life_time",
];

/// `ip -j -d addr show`'s addresses, one line each in the shape compared.
fn ip_addresses(ns: &NetNs) -> BTreeSet<String> {
    let mut theirs = BTreeSet::new();
    for link in ip_json(ns, &["addr", "show"]) {
        for addr in link["addr_info"].as_array().into_iter().flatten() {
            // Each key ip prints is compared below.
            for key in addr.as_object().into_iter().flatten().map(|(key, _)| key) {
                assert!(
                    ADDRESS_KEYS.contains(&key.as_str()) || ADDRESS_FLAGS.contains(&key.as_str()),
                    "ip printed {key}, which is not compared: {addr}"
                );
            }
            let flags: Vec<&str> = ADDRESS_FLAGS
                .iter()
                .copied()
                .filter(|flag| addr.get(*flag) == Some(&json!(true)))
                .collect();
            let mut map: BTreeMap<&str, Value> = BTreeMap::new();
            map.insert("ifname", get(&link, "ifname"));
            for key in &ADDRESS_KEYS[..8] {
                map.insert(key, get(addr, key));
            }
            map.insert("flags", json!(flags));
            for key in ["valid_life_time", "preferred_life_time"] {
                // Countdowns: compared to the hundred seconds.
                map.insert(key, json!(addr[key].as_u64().unwrap() / 100));
            }
            theirs.insert(compact(map).to_string());
        }
    }
    theirs
}

/// An address of netmirror's JSON, as one line in the shape compared.
fn our_address(addr: &Value) -> String {
    let mut map: BTreeMap<&str, Value> = BTreeMap::new();
    for key in [
        "ifname",
        "family",
        "local",
        "prefixlen",
        "scope",
        "label",
        "broadcast",
        "address",
        "metric",
        "flags",
    ] {
        map.insert(key, get(addr, key));
    }
    for key in ["valid_life_time", "preferred_life_time"] {
        map.insert(key, json!(addr[key].as_u64().unwrap() / 100));
    }
    compact(map).to_string()
}

#[test]
fn addresses_match_ip_field_by_field() {
    let (ns, _other) = world();
    let theirs = ip_addresses(&ns);
    let ours: BTreeSet<String> = our_json(&ns, &["addr", "show"])
        .iter()
        .map(our_address)
        .collect();
    assert_eq!(ours, theirs);
    for flag in [
        "noprefixroute",
        "secondary",
        "autojoin",
        "nodad",
        "home",
        "mngtmpaddr",
        "deprecated",
        "optimistic",
        "tentative",
        "dynamic",
    ] {
        assert!(
            ours.iter()
                .any(|line| line.contains(&format!("\"{flag}\""))),
            "{flag} in {ours:#?}"
        );
    }
}

/// The route lines `batch` takes beyond the plain ones, applied by `netmirror batch` in one
/// namespace and by `ip route add` in another: both kernels hold the same routes.
#[test]
fn batch_route_keywords_make_what_ip_route_add_makes() {
    const LINES: &[&str] = &[
        "route add 10.84.0.0/16 via 10.1.0.2 dev v0 onlink mtu lock 1400 advmss 1300 window 1000 rtt 10ms rttvar 5 ssthresh 3 cwnd 4 hoplimit 33 initcwnd 10 initrwnd 20 quickack 1 congctl lock cubic features ecn reordering 3 fastopen_no_cookie 1 rto_min 20 realm 5/6",
        "route add 10.80.0.0/16 via inet6 fe80::1 dev v0",
        "route add 10.83.0.0/16 nexthop via 10.1.0.2 dev v0 weight 1 nexthop via 10.1.0.3 dev v0 weight 3 realm 7",
        "route add 10.87.0.0/16 nexthop via inet6 fe80::1 dev v0 weight 2 nexthop via 10.1.0.3 dev v0 onlink",
        "route add 10.81.0.0/16 encap ip id 1 dst 1.2.3.4 ttl 9 dev v0",
        "route add 10.82.0.0/16 via 10.1.0.2 dev v0 table 3000000000 realm 9",
        "route add 2001:db8:6::/64 via 2001:db8::2 dev v0 pref high expires 600",
        "route add 2001:db8:8::/64 via 2001:db8::2 dev v0 pref low mtu 1300 hoplimit 9",
        "route add 2001:db8:7::/64 nexthop via 2001:db8::2 dev v0 weight 2 nexthop via 2001:db8::3 dev v0 weight 5",
    ];
    let make = || {
        NetNs::builder()
            .veth(
                Veth::new("v0", "v1")
                    .address("10.1.0.1/24")
                    .address("2001:db8::1/64"),
            )
            .start()
            .expect("make a namespace")
    };
    let (by_ip, by_us) = (make(), make());
    for line in LINES {
        ip(&by_ip, line);
    }
    let dir = tempfile::Builder::new()
        .prefix("netmirror-test-conformance")
        .tempdir()
        .expect("temp dir");
    let path = dir.path().join("routes.batch");
    std::fs::write(&path, LINES.join("\n")).expect("write the batch");
    let run = nm(&[
        "--netns",
        by_us.name(),
        "batch",
        &path.display().to_string(),
    ]);
    assert_eq!(run.ok(), format!("{0} of {0} lines applied\n", LINES.len()));
    for family in ["-4", "-6"] {
        let routes = |ns: &NetNs| {
            lines(
                ip_json(ns, &[family, "route", "show", "table", "all"])
                    .iter()
                    // Link-local addresses differ between the namespaces.
                    .filter(|route| !route["dst"].as_str().unwrap_or("").starts_with("fe80"))
                    .map(ip_route),
            )
        };
        assert_eq!(routes(&by_us), routes(&by_ip), "{family}");
    }
}

/// A monitor's lines name the hops of a multipath route, and a change of weights or metrics
/// alone prints what changed (it printed old and new alike).
#[test]
fn monitor_lines_show_hops_weights_and_metrics() {
    let ns = NetNs::builder()
        .veth(Veth::new("v0", "v1").address("10.1.0.1/24"))
        .start()
        .expect("make a namespace");
    let mut command = crate::support::netmirror(&["--netns", ns.name(), "monitor", "route"]);
    command.env("RUST_LOG", "netmirror::monitor=debug");
    let mut monitor = crate::support::Monitor::start(command, "monitor ready");
    let timeout = std::time::Duration::from_secs(10);
    ip(
        &ns,
        "route add 10.83.0.0/16 nexthop via 10.1.0.2 dev v0 weight 1 nexthop via 10.1.0.3 dev v0 weight 1",
    );
    let line = monitor.expect_line(timeout, |line| line.contains("10.83.0.0/16"));
    assert!(
        line.contains("added") && line.contains("gateway 10.1.0.2,10.1.0.3"),
        "{line}"
    );
    ip(
        &ns,
        "route replace 10.83.0.0/16 nexthop via 10.1.0.2 dev v0 weight 1 nexthop via 10.1.0.3 dev v0 weight 3",
    );
    let line = monitor.expect_line(timeout, |line| line.contains("10.83.0.0/16"));
    assert!(
        line.contains("changed")
            && line.contains(
                "nexthops via 10.1.0.2 dev v0 weight 1; via 10.1.0.3 dev v0 weight 1 \u{2192} \
                 via 10.1.0.2 dev v0 weight 1; via 10.1.0.3 dev v0 weight 3"
            ),
        "{line}"
    );
    ip(&ns, "route add 10.84.0.0/16 via 10.1.0.2 dev v0 mtu 1400");
    monitor.expect_line(timeout, |line| line.contains("10.84.0.0/16"));
    ip(
        &ns,
        "route replace 10.84.0.0/16 via 10.1.0.2 dev v0 mtu lock 1300",
    );
    let line = monitor.expect_line(timeout, |line| line.contains("10.84.0.0/16"));
    assert!(
        line.contains("metrics mtu 1400 \u{2192} mtu lock 1300"),
        "{line}"
    );
}

/// The keys of `ip -j -d nexthop` that [`ip_nexthop`] compares.
const NEXTHOP_KEYS: [&str; 11] = [
    "id",
    "gateway",
    "dev",
    "group",
    "type",
    "resilient_args",
    "flags",
    "scope",
    "protocol",
    "blackhole",
    "fdb",
];

/// A nexthop from `ip -j -d nexthop`, in the shape compared.
fn ip_nexthop(nh: &Value) -> Value {
    // Each key ip prints is compared below.
    for key in nh.as_object().into_iter().flatten().map(|(key, _)| key) {
        assert!(
            NEXTHOP_KEYS.contains(&key.as_str()),
            "ip printed {key}, which is not compared: {nh}"
        );
    }
    let mut map: BTreeMap<&str, Value> = BTreeMap::new();
    for key in [
        "id",
        "gateway",
        "dev",
        "group",
        "type",
        "resilient_args",
        "flags",
        "scope",
    ] {
        map.insert(key, get(nh, key));
    }
    map.insert(
        "protocol",
        nh.get("protocol").cloned().unwrap_or(json!("unspec")),
    );
    for flag in ["blackhole", "fdb"] {
        if nh.get(flag).is_some() {
            map.insert(flag, json!(true));
        }
    }
    compact(map)
}

/// A nexthop from netmirror's JSON, in the shape compared.
fn our_nexthop(nh: &Value) -> Value {
    let mut map: BTreeMap<&str, Value> = BTreeMap::new();
    for key in [
        "id",
        "gateway",
        "dev",
        "group",
        "resilient_args",
        "flags",
        "scope",
        "protocol",
    ] {
        map.insert(key, get(nh, key));
    }
    // ip prints the type of a resilient group only (`mpath` is its default).
    if nh["group"].is_array() && nh["type"] != "mpath" {
        map.insert("type", get(nh, "type"));
    }
    for flag in ["blackhole", "fdb"] {
        if nh[flag] == json!(true) {
            map.insert(flag, json!(true));
        }
    }
    compact(map)
}

/// What the kernel keys an object by, from its JSON.
type Identity = fn(&Value) -> Value;

/// Routes (both families, every table), nexthops, links, addresses and rules, as
/// netmirror's JSON has them.
#[derive(Debug, Clone, Default)]
struct Objects {
    routes: Vec<Value>,
    nexthops: Vec<Value>,
    links: Vec<Value>,
    addresses: Vec<Value>,
    rules: Vec<Value>,
}

impl Objects {
    /// A fresh load: `netmirror --json` of each kind.
    fn load(ns: &NetNs) -> Objects {
        // With -d, a route on a nexthop object has it as `nh_info` (see `nh_info_mismatches`).
        let mut routes = our_json(ns, &["-d", "route", "show", "table", "all"]);
        let mut addresses = our_json(ns, &["addr", "show"]);
        routes.iter_mut().for_each(countdowns_to_deadlines);
        addresses.iter_mut().for_each(countdowns_to_deadlines);
        Objects {
            routes,
            nexthops: our_json(ns, &["nexthop"]),
            links: our_json(ns, &["link"]),
            addresses,
            rules: our_json(ns, &["rule", "show"]),
        }
    }

    /// The list of `object` (a monitor's `object` key) and the identity of one of its
    /// objects: what the kernel keys it by.
    fn kind(&mut self, object: &str) -> Option<(&mut Vec<Value>, Identity)> {
        Some(match object {
            "route" => (&mut self.routes, |route: &Value| {
                let mut id = vec![
                    get(route, "family"),
                    get(route, "table"),
                    get(route, "dst"),
                    get(route, "tos"),
                    get(route, "metric"),
                ];
                if route["family"] == "inet6" {
                    // IPv6 keeps one route per device where the rest is equal.
                    id.push(get(route, "dev"));
                    id.push(get(route, "type"));
                }
                json!(id)
            }),
            "nexthop" => (&mut self.nexthops, |nh: &Value| get(nh, "id")),
            "link" => (&mut self.links, |link: &Value| get(link, "ifindex")),
            "addr" => (&mut self.addresses, |addr: &Value| {
                json!([
                    get(addr, "ifindex"),
                    get(addr, "family"),
                    get(addr, "local"),
                    get(addr, "prefixlen"),
                    get(addr, "address")
                ])
            }),
            "rule" => (&mut self.rules, |rule: &Value| {
                json!([
                    get(rule, "family"),
                    get(rule, "priority"),
                    get(rule, "rule")
                ])
            }),
            _ => return None,
        })
    }

    /// Applies one line of `netmirror --json monitor`, as a program following it would:
    /// `old` replaced by `new`; a link renamed renames the devices of what sits on it.
    fn apply(&mut self, line: &str) {
        let event: Value = serde_json::from_str(line).expect("monitor JSON");
        let (old, new) = (&event["old"], &event["new"]);
        if event["object"] == "link"
            && let (Some(from), Some(to)) = (old["ifname"].as_str(), new["ifname"].as_str())
            && from != to
        {
            self.rename(from, to);
        }
        let object = event["object"].as_str().unwrap_or("?").to_owned();
        let Some((list, identity)) = self.kind(&object) else {
            return;
        };
        if !old.is_null() {
            // The object itself first: IPv4 routes that differ only in their device or
            // gateway share the kernel's key. A link's `old` is exactly its row as last
            // shown.
            let at = list
                .iter()
                .position(|known| known == old)
                .or_else(|| {
                    (object != "link")
                        .then(|| {
                            list.iter()
                                .position(|known| identity(known) == identity(old))
                        })
                        .flatten()
                })
                .unwrap_or_else(|| {
                    panic!("an event for an object the monitor did not show: {line}")
                });
            list.remove(at);
        }
        if !new.is_null() {
            let mut new = new.clone();
            countdowns_to_deadlines(&mut new);
            list.push(new);
        }
    }

    fn rename(&mut self, from: &str, to: &str) {
        let rename = |value: &mut Value, key: &str| {
            if value[key] == from {
                value[key] = json!(to);
            }
        };
        for route in &mut self.routes {
            rename(route, "dev");
            for hop in route["nexthops"].as_array_mut().into_iter().flatten() {
                rename(hop, "dev");
            }
        }
        for nh in &mut self.nexthops {
            rename(nh, "dev");
        }
        for addr in &mut self.addresses {
            rename(addr, "ifname");
        }
    }

    /// How these objects differ from `ip -j -d`'s, field by field, as the load tests compare
    /// them.
    fn mismatches(&self, theirs: &IpObjects) -> Vec<String> {
        let mut mismatches = Vec::new();
        let mut compare = |what: &str, ours: BTreeSet<String>, theirs: &BTreeSet<String>| {
            mismatches.extend(set_mismatch(what, &ours, theirs));
        };
        let now = |values: &[Value]| -> Vec<Value> {
            values
                .iter()
                .cloned()
                .map(deadlines_to_countdowns)
                .collect()
        };
        compare(
            "routes",
            lines(now(&self.routes).iter().map(our_route)),
            &theirs.routes,
        );
        compare(
            "nexthops",
            lines(self.nexthops.iter().map(our_nexthop)),
            &theirs.nexthops,
        );
        compare(
            "rules",
            lines(self.rules.iter().map(our_rule)),
            &theirs.rules,
        );
        compare(
            "addresses",
            now(&self.addresses).iter().map(our_address).collect(),
            &theirs.addresses,
        );
        mismatches.extend(links_mismatches(&theirs.links, &self.links).0);
        mismatches
    }

    /// What differs between the nexthop objects shown with the routes on them (`nh_info`
    /// of `route show -d --json`, in a fresh load) and ip's, route by route. A monitor's
    /// events carry no `nh_info`: only a load is compared.
    fn nh_info_mismatches(&self, theirs: &IpObjects) -> Vec<String> {
        let ours: BTreeSet<String> = self
            .routes
            .iter()
            .cloned()
            .map(deadlines_to_countdowns)
            .filter(|route| route.get("nh_info").is_some())
            .map(|route| json!([our_route(&route), our_nexthop(&route["nh_info"])]).to_string())
            .collect();
        set_mismatch("routes' nh_info", &ours, &theirs.nh_infos)
            .into_iter()
            .collect()
    }
}

/// What is only in ip's or only in netmirror's set of `what`, if anything.
fn set_mismatch(what: &str, ours: &BTreeSet<String>, theirs: &BTreeSet<String>) -> Option<String> {
    let only_ip: Vec<&String> = theirs.difference(ours).collect();
    let only_us: Vec<&String> = ours.difference(theirs).collect();
    (!only_ip.is_empty() || !only_us.is_empty())
        .then(|| format!("{what}: only in ip: {only_ip:#?}\nonly in netmirror: {only_us:#?}"))
}

/// What `ip -j -d` shows, in the shapes [`Objects::mismatches`] compares, read once for the
/// fresh load and the monitor's objects alike.
struct IpObjects {
    routes: BTreeSet<String>,
    /// The routes on a nexthop object, each with that object (`nh_info`) as a nexthop.
    nh_infos: BTreeSet<String>,
    nexthops: BTreeSet<String>,
    rules: BTreeSet<String>,
    addresses: BTreeSet<String>,
    links: Vec<Value>,
}

impl IpObjects {
    fn read(ns: &NetNs) -> IpObjects {
        let mut routes = ip_json(ns, &["-4", "route", "show", "table", "all"]);
        routes.extend(ip_json(ns, &["-6", "route", "show", "table", "all"]));
        let mut rules = ip_json(ns, &["-4", "rule", "show"]);
        rules.extend(ip_json(ns, &["-6", "rule", "show"]));
        let nh_infos = routes
            .iter()
            .filter_map(|route| {
                let nh = route.get("nh_info")?;
                Some(json!([ip_route(route), ip_nexthop(nh)]).to_string())
            })
            .collect();
        IpObjects {
            routes: lines(routes.iter().map(ip_route)),
            nh_infos,
            nexthops: lines(ip_json(ns, &["nexthop", "show"]).iter().map(ip_nexthop)),
            rules: lines(rules.iter().map(ip_rule)),
            addresses: ip_addresses(ns),
            links: ip_json(ns, &["link", "show"]),
        }
    }
}

/// The countdowns of a route (`expires`) or an address (its lifetimes, unless forever).
const COUNTDOWNS: [&str; 3] = ["expires", "valid_life_time", "preferred_life_time"];

/// Seconds on a clock of this test process.
fn clock() -> f64 {
    static START: std::sync::LazyLock<std::time::Instant> =
        std::sync::LazyLock::new(std::time::Instant::now);
    START.elapsed().as_secs_f64()
}

/// Turns the countdowns of an object read now into deadlines on [`clock`], as a program
/// following the monitor would keep them: the kernel counts them down without events.
fn countdowns_to_deadlines(object: &mut Value) {
    for key in COUNTDOWNS {
        if let Some(left) = object.get(key).and_then(Value::as_i64)
            && left != i64::from(u32::MAX)
        {
            object[key] = json!(clock() + left as f64);
        }
    }
}

/// The countdowns left now of an object kept with deadlines ([`countdowns_to_deadlines`]).
fn deadlines_to_countdowns(mut object: Value) -> Value {
    for key in COUNTDOWNS {
        if let Some(deadline) = object.get(key).and_then(Value::as_f64)
            && object[key].is_f64()
        {
            // An address's lifetime stops at 0; a route's `expires` goes on below.
            let left = (deadline - clock()).floor();
            object[key] = match key {
                "expires" => json!(left as i64),
                _ => json!(left.max(0.0) as u64),
            };
        }
    }
    object
}

/// Compares a fresh load and what the monitor printed so far (applied to `followed`) with
/// `ip -j -d`, giving the kernel's asynchronous work (DAD, the cache's resyncs) a few rounds.
#[track_caller]
fn check_step(
    ns: &NetNs,
    monitor: &mut crate::support::Monitor,
    followed: &mut Objects,
    step: &str,
) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    loop {
        // Until the monitor is quiet; a comparison made too early only comes round again.
        while let Some(line) = monitor.try_line(std::time::Duration::from_millis(100)) {
            followed.apply(&line);
        }
        let theirs = IpObjects::read(ns);
        let load = Objects::load(ns);
        let mut loaded = load.mismatches(&theirs);
        loaded.extend(load.nh_info_mismatches(&theirs));
        let live = followed.mismatches(&theirs);
        if loaded.is_empty() && live.is_empty() {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "after `{step}`:\na fresh load differs from ip: {loaded:#?}\nthe monitor's \
             events applied to its first load differ from ip: {live:#?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(300));
    }
}

/// The "after every step of a scripted change sequence": routes with every kind of
/// attribute (metrics with locks, realms, encap, pref, multipath weights, nexthop objects and
/// groups), rules, links and addresses, compared field by field with `ip -j -d` after the
/// load and after each change, including each change the kernel makes without telling: a
/// nexthop deleted takes its routes, a group member deleted changes the group and its
/// routes, carrier loss, link down and link deletion take the nexthops on the link and their
/// routes (and mark or drop multipath hops), a rename changes the peer that names the link,
/// a link that is down changes its settings unannounced, a sysctl changes an up or down
/// link's IPv6 address generation mode unannounced (the cache reads links again every 5 s),
/// and a link's new MTU changes its IPv6 routes' `mtu` metric unannounced.
/// Both a fresh `netmirror --json` load and a `netmirror --json monitor` running since the
/// start (its events applied to its first load) must equal ip at every step. The monitor is
/// stopped while each step runs, so that the step's events reach it in one read.
#[test]
fn every_step_of_a_change_sequence_matches_ip_field_by_field() {
    let ns = NetNs::builder()
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
        .expect("make a namespace");
    for line in [
        "link add br5 type bridge",
        "addr add 203.0.113.1/24 dev nmx0",
        "nexthop add id 1 via 192.0.2.2 dev nmx0",
        "nexthop add id 2 via 198.51.100.2 dev nmy0",
        "nexthop add id 3 blackhole",
        "nexthop add id 4 via 192.0.2.3 dev nmx0 onlink proto zebra",
        "nexthop add id 10 group 1/2,3",
        "nexthop add id 11 group 2/4 type resilient buckets 8",
        "route add 10.60.0.0/16 nhid 10",
        "route add 10.61.0.0/16 nhid 1",
        "route add 10.62.0.0/16 nhid 3",
        "route add 10.63.0.0/16 nhid 11",
        "route add 10.64.0.0/16 nhid 2 table 100",
        "route add 10.70.0.0/16 nexthop via 192.0.2.2 dev nmx0 weight 1 nexthop via 198.51.100.2 dev nmy0 weight 3 realm 7",
        "route add 10.71.0.0/16 via 198.51.100.2 dev nmy0 mtu lock 1400 advmss 1300 hoplimit 9 realm 5/6",
        "route add 10.72.0.0/16 encap ip id 1 dst 1.2.3.4 dev nmy0",
        "route add 10.73.0.0/16 via 192.0.2.2 dev nmx0 metric 50 proto static initcwnd 10 congctl lock cubic",
        "-6 route add 2001:db8:6::/64 via 2001:db8:1::2 dev nmx0 pref high mtu 1300",
        "-6 route add 2001:db8:7::/64 nexthop via 2001:db8:1::2 dev nmx0 weight 2 nexthop via 2001:db8:1::3 dev nmx0 weight 5",
        // IPv6 multipath routes with a hop on nmy0, first and later: its hop's flags follow
        // nmy0's carrier and state silently.
        "-6 route add 2001:db8:c::/64 nexthop via 2001:db8:1::2 dev nmx0 nexthop via fe80::2 dev nmy0",
        "-6 route add 2001:db8:e::/64 nexthop via fe80::2 dev nmy0 nexthop via 2001:db8:1::2 dev nmx0",
        "rule add not fwmark 0xca6c table 51820 pref 100",
        "rule add iif nmy1 ipproto tcp dport 443 table 6 pref 102",
    ] {
        ip(&ns, line);
    }
    settle(&ns);
    let mut command = crate::support::netmirror(&["--netns", ns.name(), "--json", "monitor"]);
    command.env("RUST_LOG", "netmirror::monitor=debug");
    let mut monitor = crate::support::Monitor::start(command, "monitor ready");
    let mut followed = Objects::load(&ns);
    check_step(&ns, &mut monitor, &mut followed, "the load");
    for step in [
        "nexthop replace id 2 via 198.51.100.3 dev nmy0",
        "nexthop replace id 10 group 1,4/2",
        "nexthop replace id 1 via 192.0.2.4 dev nmx0",
        // A group member deleted: the group and the route on it change, silently.
        "nexthop del id 1",
        // Unrelated, on the link the member was on.
        "addr del 203.0.113.1/24 dev nmx0",
        // A nexthop deleted: its route goes without RTM_DELROUTE.
        "nexthop del id 3",
        "route change 10.73.0.0/16 via 192.0.2.2 dev nmx0 metric 50 proto static initcwnd 12 congctl lock cubic",
        "route append 10.73.0.0/16 via 198.51.100.2 dev nmy0 metric 50 proto static",
        "route add 10.80.0.0/16 tos 0x10 via 192.0.2.2 dev nmx0",
        "route add 10.80.0.0/16 via 192.0.2.2 dev nmx0",
        "-6 route append 2001:db8:7::/64 via 2001:db8:1::4 dev nmx0",
        "-6 route del 2001:db8:7::/64 via 2001:db8:1::2 dev nmx0",
        "-6 route append 2001:db8:6::/64 via 2001:db8:1::5 dev nmx0 pref high mtu 1300",
        // Carrier loss on nmy0: its nexthops and the routes on them go, hops are marked.
        // Without the carrier, `ignore_routes_with_linkdown` marks the hops there `dead`
        // too, or no longer; only a netconf notification tells.
        "link set nmy1 down",
        "sysctl net.ipv4.conf.nmy0.ignore_routes_with_linkdown=1",
        "sysctl net.ipv6.conf.all.ignore_routes_with_linkdown=1",
        "sysctl net.ipv6.conf.all.ignore_routes_with_linkdown=0",
        "sysctl net.ipv4.conf.nmy0.ignore_routes_with_linkdown=0",
        "link set nmy1 up",
        "nexthop add id 2 via 198.51.100.2 dev nmy0",
        "nexthop replace id 11 group 2/4 type resilient buckets 8",
        "route add 10.65.0.0/16 nhid 2",
        // Link down: the same, and routes through nmy0 go.
        "link set nmy0 down",
        "link set nmy0 up",
        "nexthop add id 2 via 198.51.100.2 dev nmy0",
        "route add 10.66.0.0/16 nhid 2",
        "route add 10.74.0.0/16 via 198.51.100.2 dev nmy0 mtu 1300 realm 8",
        // A link's MTU: the unlocked `mtu` metric of its IPv6 routes follows it, silently
        // (2001:db8:6::/64 goes to 1280, and back to 1500 with the link); IPv4's stays.
        "route add 10.75.0.0/16 via 192.0.2.2 dev nmx0 mtu 1400",
        "link set nmx0 mtu 1280",
        "link set nmx0 mtu 1500",
        // An IPv6 address's new lifetime becomes its prefix route's expiry, silently (on
        // kernel 6.18 one past its end: negative, as ip prints it); a new metric makes a new
        // prefix route.
        "-6 addr change 2001:db8:1::1/64 dev nmx0 valid_lft 600 preferred_lft 300",
        "-6 addr change 2001:db8:1::1/64 dev nmx0 valid_lft 900 preferred_lft 800",
        "-6 addr change 2001:db8:1::1/64 dev nmx0",
        "-6 addr change 2001:db8:1::1/64 dev nmx0 metric 77",
        "-6 addr change 2001:db8:1::1/64 dev nmx0 noprefixroute",
        // Below IPv6's 1280 the link loses IPv6, its addresses and routes.
        "-6 nexthop add id 21 via fe80::2 dev nmx0",
        "-6 route add 2001:db8:b::/64 nhid 21",
        "link set nmx0 mtu 1200",
        "link set nmx0 mtu 1500",
        "sysctl net.ipv6.conf.nmx0.mtu=1400",
        "link set nmx0 address 02:00:00:00:00:07",
        "sysctl net.ipv6.conf.nmx0.disable_ipv6=1",
        "sysctl net.ipv6.conf.nmx0.disable_ipv6=0",
        // Forwarding joins and leaves the subnet-router anycast address.
        "-6 addr add 2001:db8:1::1/64 dev nmx0 nodad",
        "sysctl net.ipv6.conf.nmx0.forwarding=1",
        "sysctl net.ipv6.conf.nmx0.forwarding=0",
        // A route's preferred source goes with its address; the secondaries go with the
        // primary (no promotion here); the first address again brings the dead hop of
        // 10.70.0.0/16 back to life, silently.
        "addr add 192.0.2.77/24 dev nmx0",
        "route add 10.76.0.0/16 via 192.0.2.2 dev nmx0 src 192.0.2.77",
        "addr del 192.0.2.77/24 dev nmx0",
        "addr add 192.0.2.78/24 dev nmx0",
        "addr del 192.0.2.1/24 dev nmx0",
        "addr add 192.0.2.1/24 dev nmx0",
        "sysctl net.ipv4.conf.nmx0.promote_secondaries=1",
        "addr add 192.0.2.5/24 dev nmx0",
        "addr add 192.0.2.6/24 dev nmx0",
        "route add 10.77.0.0/16 via 192.0.2.2 dev nmx0 src 192.0.2.1",
        "route add 10.78.0.0/16 via 192.0.2.2 dev nmx0 src 192.0.2.6",
        "addr del 192.0.2.1/24 dev nmx0",
        "addr add 192.0.2.1/24 dev nmx0",
        "addr del 192.0.2.5/24 dev nmx0",
        "sysctl net.ipv4.conf.nmx0.promote_secondaries=0",
        "addr change 192.0.2.1/24 dev nmx0 metric 5",
        "addr change 192.0.2.1/24 dev nmx0 noprefixroute",
        "link set nmx0 master br5",
        "link set br5 up",
        "link set nmx0 type bridge_slave cost 7 priority 3 learning off",
        "link set br5 type bridge stp_state 0 ageing_time 1000",
        "link set br5 down",
        "link set nmx0 type bridge_slave cost 9",
        "link set nmx0 nomaster",
        "link set nmx0 multicast off",
        "link set nmx0 multicast on",
        "link set nmx0 arp off",
        "link set nmx0 arp on",
        "addr add 192.0.2.99/24 dev nmx0 valid_lft 3 preferred_lft 1",
        "-6 addr add 2001:db8:1::99/64 dev nmx0 valid_lft 3 preferred_lft 1 nodad",
        "link set nmx0 promisc on",
        // IPv6 routes and addresses of a link that goes down, one keeping its addresses.
        "-6 route add 2001:db8:9::/64 dev nmy0",
        "sysctl net.ipv6.conf.nmy0.keep_addr_on_down=1",
        "link set nmy0 down",
        "link set nmy0 up",
        // Changes to a link that is down, which the kernel does not announce: a bridge's
        // settings (a boolean option among them), a group, an alias.
        "link set br5 type bridge no_linklocal_learn 1 hello_time 300",
        "link set br5 type bridge no_linklocal_learn 0 stp_state 1",
        "link set br5 group 7 alias spare",
        "link set br5 addrgenmode random",
        // A sysctl write changes the address generation mode of any link, up or down,
        // without a notification.
        "sysctl net.ipv6.conf.nmx0.addr_gen_mode=1",
        "sysctl net.ipv6.conf.br5.addr_gen_mode=0",
        // A rename: the veth peer names the link anew, so does the rule on it.
        "link set nmy1 down",
        "link set nmy1 name nmz1",
        "link set nmz1 up",
        // A macvlan and a VXLAN on nmx0 follow its MTU, carrier and deletion.
        "link add mvz0 link nmx0 type macvlan mode bridge",
        "link add vxz0 type vxlan id 7 dstport 4789 dev nmx0",
        "link set mvz0 up",
        "link set vxz0 up",
        "link set nmx0 mtu 1400",
        "link set nmx0 mtu 1500",
        "link set nmx1 down",
        "link set nmx1 up",
        "link set mvz0 type macvlan mode vepa",
        "link set mvz0 protodown_reason 1 on",
        "link set mvz0 protodown on",
        "link set mvz0 protodown_reason 1 off",
        "link add nmw0 type veth peer name nmw1",
        "link add br6 type bridge",
        "link set nmw0 master br6",
        "link set nmw1 up",
        "link set nmw0 up",
        "link set br6 up",
        "addr add 203.0.113.9/24 dev br6",
        "addr add 10.99.0.1 peer 10.99.0.2/32 dev nmw1",
        "route add 10.90.0.0/16 via 203.0.113.10 dev br6",
        "link set nmw0 txqueuelen 500",
        "link set nmw0 gso_max_size 32000",
        "link set nmw1 gso_max_segs 100",
        "link set nmw0 mtu 9000",
        "link set br6 type bridge group_fwd_mask 0x4000",
        "link set nmw0 type bridge_slave mcast_flood off neigh_suppress on",
        "link del br6",
        // A new root queueing discipline is the link's `qdisc`; only `tc`'s group hears.
        "tc qdisc replace dev nmw0 root bfifo",
        "tc qdisc replace dev nmw0 root pfifo",
        "tc qdisc del dev nmw0 root",
        "link set nmw1 down",
        "link del nmw0",
        // Link deletion: the same as link down, with the peer.
        "link del nmy0",
    ] {
        // With the monitor stopped: a step's events (a veth pair's two ends, what a link
        // going down takes) reach it in one read, as on a busy host.
        monitor.signal("STOP");
        self::step(&ns, step);
        monitor.signal("CONT");
        check_step(&ns, &mut monitor, &mut followed, step);
    }
    // A veth end moved to another namespace: the kernel announces its deletion here, and
    // nothing of the peer that stays, whose parent is now in another namespace
    // (`link_netnsid`, `link_index`) while that end is down.
    let other = NetNs::new().expect("second namespace");
    let step = format!("link set nmx1 netns {}", other.name());
    ip(&ns, &step);
    check_step(&ns, &mut monitor, &mut followed, &step);
}

/// `link -d`'s lines are `ip -d -o link`'s, on every link of the world (veth ends, one with
/// its peer in another namespace and one whose peer is down, bridges and a port, macvlan,
/// macvtap, VXLAN with protodown reasons, IFB, TAP, multiqueue TUN, loopback), an alias and
/// altnames, the peer's namespace by name (`link-netns NAME`): every word, in `ip`'s order, once `ip`'s line breaks (`\`) are spaces.
///
/// Not compared, as the README says: the countdown timers (`hello_timer 0.00`, not kept);
/// protodown reasons from 8 up,
/// which ip 6.1 drops (it reads the reasons as 8 bits); and the words later iproute2
/// releases print that the installed one may not (`gso_ipv4_max_size`, a bridge's
/// `fdb_max_learned`, ...), which are left out of ours only when `ip`'s line lacks them.
#[test]
fn link_detail_lines_are_ip_d_o_link() {
    const TIMERS: &[&str] = &[
        "hello_timer",
        "tcn_timer",
        "topology_change_timer",
        "gc_timer",
        "hold_timer",
        "message_age_timer",
        "forward_delay_timer",
    ];
    const NEWER: &[&str] = &[
        "gso_ipv4_max_size",
        "gro_ipv4_max_size",
        "fdb_max_learned",
        "mst_enabled",
        "mdb_offload_fail_notification",
        "fdb_local_vlan_0",
        "neigh_vlan_suppress",
        "mab",
        "backup_nhid",
        "bclim",
        "reserved_bits",
    ];
    let (ns, other) = world();
    // A veth end up whose peer is down: `M-DOWN`.
    ns.ip(&["link", "add", "md0", "type", "veth", "peer", "name", "md1"])
        .expect("ip link add");
    ns.ip(&["link", "set", "md0", "up"]).expect("ip link set");
    ns.ip(&["link", "set", "md0", "alias", "an alias"])
        .expect("ip link set alias");
    // Beside the world's defaults, the values that change the words: a bridge and a port with
    // every switch turned, VXLANs with a multicast group, IPv6 ends, `external`, and the
    // flags; macvlans in the other modes; a TAP with an owner and a group (named from the
    // user and group files).
    for line in [
        "link add nmxbr type bridge stp_state 1 group_fwd_mask 0x4000 mcast_querier 1 \
         mcast_snooping 0 ageing_time 1000 nf_call_iptables 1 mcast_stats_enabled 1 \
         mcast_igmp_version 3 mcast_mld_version 2",
        "link add nmxp0 type veth peer name nmxp1",
        "link add nmxq0 type veth peer name nmxq1",
        "link set nmxp1 master nmxbr",
        "link set nmxq1 master nmxbr",
        "link set nmxp1 type bridge_slave hairpin on guard on root_block on fastleave on \
         learning off flood off proxy_arp on mcast_flood off mcast_to_unicast on \
         neigh_suppress on group_fwd_mask 0x4004 vlan_tunnel on isolated on cost 7 \
         priority 3 mcast_router 2 bcast_flood off locked on backup_port nmxq1",
        "link add nmxvx1 type vxlan id 7 group 239.1.1.1 dev nmxp0 dstport 0 nolearning \
         tos inherit ttl inherit df set maxaddr 5 noudpcsum remcsumtx remcsumrx gbp proxy \
         rsc l2miss l3miss srcport 1000 2000",
        "link add nmxvx2 type vxlan id 8 remote 2001:db8::2 local 2001:db8::1 dstport 4790 \
         ttl 64 tos 0x10 flowlabel 0x12 udp6zerocsumtx udp6zerocsumrx",
        "link add nmxvx3 type vxlan external dstport 4791",
        "link add nmxmv1 link nmxp0 type macvlan mode source",
        "link add nmxmv2 link nmxq0 type macvlan mode passthru nopromisc",
        "link add nmxmv3 link nmxp0 type macvlan mode private bcqueuelen 50",
        "tuntap add nmxtap mode tap user 1 group 1 pi vnet_hdr",
    ] {
        let words: Vec<&str> = line.split_whitespace().collect();
        ns.ip(&words)
            .unwrap_or_else(|err| panic!("ip {line}: {err}"));
    }
    let text = ns.ip(&["-d", "-o", "link"]).expect("ip -d -o link");
    let theirs: Vec<Vec<String>> = text
        .lines()
        .map(|line| without_pairs(&line.replace('\\', " "), |word| TIMERS.contains(&word)))
        .collect();
    let out = nm(&["-d", "--netns", ns.name(), "link"]).ok().to_owned();
    let ours: Vec<Vec<String>> = out
        .lines()
        .zip(&theirs)
        .map(|(line, theirs)| {
            let mut kept = without_pairs(line, |word| {
                NEWER.contains(&word) && !theirs.iter().any(|w| w == word)
            });
            // As in the JSON comparison: ip reads the reasons as 8 bits.
            if let Some(at) = kept.iter().position(|word| word == "protodown_reason")
                && let Some(reasons) = kept.get_mut(at + 1)
            {
                let low: Vec<&str> = reasons
                    .trim_matches(['<', '>'])
                    .split(',')
                    .filter(|bit| bit.parse::<u8>().is_ok_and(|bit| bit < 8))
                    .collect();
                *reasons = format!("<{}>", low.join(","));
            }
            kept
        })
        .collect();
    assert_eq!(out.lines().count(), theirs.len(), "{out}");
    for (ours, theirs) in ours.iter().zip(&theirs) {
        assert_eq!(ours.join(" "), theirs.join(" "));
    }
    let all = out.replace('\n', " ");
    let in_other = format!(" link-netns {} ", other.name());
    assert!(all.contains(&in_other), "{in_other} in {out}");
    for word in [
        ",M-DOWN>",
        " bridge_slave state ",
        " vxlan id 42 ",
        " protodown on protodown_reason <2,9> ",
        " macvtap mode vepa ",
        " tun type tun pi off vnet_hdr off multi_queue ",
        " alias an alias",
        " altname conformance-alt0 altname conformance-alt1",
        " bridge_slave state disabled priority 3 cost 7 hairpin on guard on ",
        " backup_port nmxq1 ",
        " group_fwd_mask_str lacp,lldp ",
        " vxlan id 7 group 239.1.1.1 dev nmxp0 srcport 1000 2000 ",
        " tos inherit ttl inherit df set ",
        " remote 2001:db8::2 local 2001:db8::1 ",
        " vxlan external ",
        " macvlan mode source bcqueuelen 1000 usedbcqueuelen 1000 remotes (2) \
         00:11:22:33:44:55 00:11:22:33:44:66 ",
        " macvlan mode passthru nopromisc ",
        " tun type tap pi on vnet_hdr on persist on user ",
    ] {
        assert!(all.contains(word), "{word} in {out}");
    }
}

/// The words of `line` without each `name value` pair whose name `drop` picks.
fn without_pairs(line: &str, drop: impl Fn(&str) -> bool) -> Vec<String> {
    let mut words = line.split_whitespace();
    let mut kept = Vec::new();
    while let Some(word) = words.next() {
        if drop(word) {
            words.next();
        } else {
            kept.push(word.to_owned());
        }
    }
    kept
}

/// `addr -d`'s lines are `ip -d -o addr`'s, once `ip`'s line breaks (`\`) are spaces, on every
/// address of the world: both families, lifetimes, `noprefixroute`, a secondary, a peer,
/// `autojoin`, `nodad`, `home`, `mngtmpaddr`, metrics, deprecated, tentative and optimistic
/// ones, and the link-local addresses the kernel made; link by link, as `ip` lists them.
#[test]
fn address_detail_lines_are_ip_d_o_addr() {
    let (ns, _other) = world();
    let words = |line: &str| {
        line.replace('\\', " ")
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    let theirs: Vec<String> = ns
        .ip(&["-d", "-o", "addr"])
        .expect("ip -d -o addr")
        .lines()
        .map(words)
        .collect();
    let out = nm(&["-d", "--netns", ns.name(), "addr"]).ok().to_owned();
    // An address's `proto` (`kernel_ll` for a link-local one), which iproute2 prints from 6.2:
    // left out of ours only where `ip`'s line lacks it.
    let ours: Vec<String> = out
        .lines()
        .zip(&theirs)
        .map(|(line, theirs)| {
            let line = words(line);
            match line.split_once(" proto ") {
                Some((head, tail)) if !theirs.contains(" proto ") => {
                    let rest = tail.split_once(' ').map_or("", |(_, rest)| rest);
                    format!("{head} {rest}")
                }
                _ => line,
            }
        })
        .collect();
    assert_eq!(out.lines().count(), theirs.len(), "{out}");
    assert!(out.contains(" proto kernel_ll "), "{out}");
    // Lifetimes count down between the two dumps: within 2 s of each other.
    crate::support::assert_lines_but_lifetimes(&ours, &theirs, 2);
    let all = ours.join("\n");
    for word in [
        " secondary ",
        " noprefixroute",
        " peer 10.99.7.6/32 ",
        " autojoin",
        " nodad ",
        " home ",
        " mngtmpaddr ",
        " deprecated ",
        " tentative ",
        " optimistic ",
        " valid_lft 29",
    ] {
        assert!(all.contains(word), "{word} in {all}");
    }
}
