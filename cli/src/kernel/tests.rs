//! The JSON of objects carrying an attribute this version does not decode, from crafted
//! messages (no socket): every kind shows it as `unknown_attributes`, `[{"type", "data"}]`.

use netmirror_platform::{Address, Link, Nexthop, Route, Rule};
use serde_json::{Value, json};

use super::{ADDR_FIELDS, LINK_FIELDS, LinkNames, ROUTE_FIELDS, RULE_FIELDS};
use crate::render::{Cell, Field};

/// The attribute no kind decodes in these tests, and its bytes.
const KIND: u16 = 60;
const DATA: [u8; 5] = [0xde, 0xad, 0xbe, 0xef, 0x01];

/// A netlink attribute, padded to 4 bytes.
fn attr(kind: u16, data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&(4 + data.len() as u16).to_ne_bytes());
    out.extend_from_slice(&kind.to_ne_bytes());
    out.extend_from_slice(data);
    out.resize(out.len().next_multiple_of(4), 0);
    out
}

/// A payload: the fixed header, then the attributes.
fn payload(header: &[u8], attrs: &[Vec<u8>]) -> Vec<u8> {
    let mut out = header.to_vec();
    for one in attrs {
        out.extend_from_slice(one);
    }
    out
}

/// The JSON a row gives: its cells under their keys, as the printer writes them.
fn row_json(fields: &[Field], row: &[Cell]) -> Value {
    assert_eq!(fields.len(), row.len());
    Value::Object(
        fields
            .iter()
            .zip(row)
            .map(|(field, cell)| (field.key.to_owned(), cell.json()))
            .collect(),
    )
}

fn names() -> LinkNames {
    let mut names = LinkNames::from_links(&[]);
    names.insert(3u32, "v0");
    names
}

/// An ifinfomsg: AF_UNSPEC, ARPHRD_ETHER, ifindex 3, no flags.
fn link_header() -> Vec<u8> {
    let mut header = vec![0, 0];
    header.extend_from_slice(&1u16.to_ne_bytes());
    header.extend_from_slice(&3i32.to_ne_bytes());
    header.extend_from_slice(&[0; 8]);
    header
}

fn expected() -> Value {
    json!([{"type": KIND, "data": "deadbeef01"}])
}

#[test]
fn a_route_and_its_hop_show_what_is_not_decoded() {
    // rtmsg: AF_INET, /16, table main, proto boot, scope universe, unicast.
    let header = [2, 16, 0, 0, 254, 3, 0, 1, 0, 0, 0, 0];
    // One hop (rtnexthop: len, flags, hops, ifindex 3) with RTA_GATEWAY and the unknown one.
    let mut hop = Vec::new();
    let hop_attrs = [attr(5, &[10, 1, 0, 2]), attr(KIND, &DATA)];
    let hop_len = 8 + hop_attrs.iter().map(Vec::len).sum::<usize>();
    hop.extend_from_slice(&(hop_len as u16).to_ne_bytes());
    hop.extend_from_slice(&[0, 0]);
    hop.extend_from_slice(&3i32.to_ne_bytes());
    for one in &hop_attrs {
        hop.extend_from_slice(one);
    }
    let route = payload(
        &header,
        &[
            attr(15, &254u32.to_ne_bytes()),
            attr(1, &[10, 90, 0, 0]),
            attr(9, &hop),
            attr(KIND, &DATA),
        ],
    );
    let route = Route::parse(&route).unwrap().unwrap();
    let json = row_json(ROUTE_FIELDS, &super::route_row(&route, &names()));
    assert_eq!(json["dst"], "10.90.0.0/16");
    assert_eq!(json["unknown_attributes"], expected(), "{json}");
    assert_eq!(
        json["nexthops"][0]["unknown_attributes"],
        expected(),
        "{json}"
    );
}

#[test]
fn a_link_shows_what_is_not_decoded() {
    let header = link_header();
    let link = payload(&header, &[attr(3, b"v0\0"), attr(250, &DATA)]);
    let link = Link::parse(&link).unwrap().unwrap();
    let json = row_json(LINK_FIELDS, &super::link_row(&link, &names()));
    assert_eq!(json["ifname"], "v0");
    assert_eq!(
        json["unknown_attributes"],
        json!([{"type": 250, "data": "deadbeef01"}]),
        "{json}"
    );
}

#[test]
fn every_setting_a_link_may_hold_has_its_column() {
    for name in Link::setting_names() {
        assert!(super::LINK_SETTINGS.contains(&name), "{name} is not shown");
        assert!(LINK_FIELDS.iter().any(|field| field.key == name), "{name}");
    }
}

#[test]
fn a_links_proto_down_reasons_are_listed_as_ip_lists_them() {
    let header = link_header();
    // IFLA_PROTO_DOWN on, IFLA_PROTO_DOWN_REASON { IFLA_PROTO_DOWN_REASON_VALUE: bits 0, 3 }.
    let reason = attr(2, &0b1001u32.to_ne_bytes());
    let link = payload(
        &header,
        &[attr(3, b"v0\0"), attr(39, &[1]), attr(55, &reason)],
    );
    let link = Link::parse(&link).unwrap().unwrap();
    let json = row_json(LINK_FIELDS, &super::link_row(&link, &names()));
    assert_eq!(json["proto_down"], 1, "{json}");
    assert_eq!(json["proto_down_reason"], json!(["0", "3"]), "{json}");
    assert_eq!(json["unknown_attributes"], json!([]), "{json}");
}

#[test]
fn an_address_shows_what_is_not_decoded() {
    // ifaddrmsg: AF_INET, /24, no flags, scope universe, ifindex 3.
    let mut header = vec![2, 24, 0, 0];
    header.extend_from_slice(&3u32.to_ne_bytes());
    let addr = payload(
        &header,
        &[
            attr(1, &[192, 0, 2, 1]),
            attr(2, &[192, 0, 2, 1]),
            attr(KIND, &DATA),
        ],
    );
    let addr = Address::parse(&addr).unwrap().unwrap();
    let json = row_json(ADDR_FIELDS, &super::addr_row(&addr, &names()));
    assert_eq!(json["local"], "192.0.2.1");
    assert_eq!(json["unknown_attributes"], expected(), "{json}");
}

#[test]
fn a_rule_shows_what_is_not_decoded() {
    // fib_rule_hdr: AF_INET, table main, FR_ACT_TO_TBL.
    let header = [2, 0, 0, 0, 254, 0, 0, 1, 0, 0, 0, 0];
    let rule = payload(
        &header,
        &[attr(6, &100u32.to_ne_bytes()), attr(KIND, &DATA)],
    );
    let rule = Rule::parse(&rule).unwrap().unwrap();
    let json = row_json(RULE_FIELDS, &super::rule_row(&rule));
    assert_eq!(json["priority"], 100);
    assert_eq!(json["unknown_attributes"], expected(), "{json}");
    assert!(
        json["rule"]
            .as_str()
            .unwrap()
            .ends_with("attr60 deadbeef01"),
        "{json}"
    );
}

#[test]
fn a_nexthop_shows_what_is_not_decoded_as_the_others_do() {
    // nhmsg: AF_UNSPEC; NHA_ID 5, NHA_BLACKHOLE.
    let header = [0, 0, 0, 0, 0, 0, 0, 0];
    let nh = payload(
        &header,
        &[
            attr(1, &5u32.to_ne_bytes()),
            attr(4, &[]),
            attr(KIND, &DATA),
        ],
    );
    let nh = Nexthop::parse(&nh).unwrap().unwrap();
    let json = row_json(
        crate::nexthop::NEXTHOP_FIELDS,
        &crate::nexthop::nexthop_row(&nh, &names()),
    );
    assert_eq!(json["id"], 5);
    assert_eq!(json["unknown_attributes"], expected(), "{json}");
}

/// Every route field's index names the field it is for.
#[test]
fn route_field_indexes_follow_route_fields() {
    use super::route_field as f;
    let keys = [
        (f::FAMILY, "family"),
        (f::TYPE, "type"),
        (f::DST, "dst"),
        (f::GATEWAY, "gateway"),
        (f::DEV, "dev"),
        (f::TABLE, "table"),
        (f::PROTOCOL, "protocol"),
        (f::SCOPE, "scope"),
        (f::METRIC, "metric"),
        (f::PREFSRC, "prefsrc"),
        (f::SRC, "src"),
        (f::TOS, "tos"),
        (f::NEXTHOPS, "nexthops"),
        (f::FLAGS, "flags"),
        (f::NHID, "nhid"),
        (f::ENCAP, "encap"),
        (f::REALMS, "flow"),
        (f::PREF, "pref"),
        (f::EXPIRES, "expires"),
        (f::MARK, "mark"),
        (f::IIF, "iif"),
        (f::TTL_PROPAGATE, "ttl_propagate"),
        (f::METRICS, "metrics"),
        (f::UNKNOWN, "unknown_attributes"),
    ];
    assert_eq!(keys.len(), ROUTE_FIELDS.len());
    for (idx, key) in keys {
        assert_eq!(ROUTE_FIELDS[idx].key, key);
    }
}

/// Routes of every shape the route writers handle: plain IPv4 and IPv6 routes, one on an
/// unknown link, one with a preferred source and a name to escape, a multipath one, one with
/// rare attributes, IPv6 ones with each kind of router preference, one of another table and
/// protocol with a metric (with [`sample_names`]).
pub(crate) fn sample_routes() -> Vec<Route> {
    // rtmsg: family, dst_len, src_len, tos, table, proto, scope, type, flags.
    let v4 = [2, 24, 0, 0, 254, 3, 0, 1, 0, 0, 0, 0];
    let v6 = [10, 48, 0, 0, 254, 3, 0, 1, 0, 0, 0, 0];
    let mut hop = Vec::new();
    let hop_attrs = [attr(5, &[10, 1, 0, 2])];
    let hop_len = 8 + hop_attrs.iter().map(Vec::len).sum::<usize>();
    hop.extend_from_slice(&(hop_len as u16).to_ne_bytes());
    hop.extend_from_slice(&[0, 0]);
    hop.extend_from_slice(&3i32.to_ne_bytes());
    for one in &hop_attrs {
        hop.extend_from_slice(one);
    }
    let mut v6_gateway = [0u8; 16];
    v6_gateway[..4].copy_from_slice(&[0x20, 0x01, 0x0d, 0xb8]);
    v6_gateway[15] = 2;
    let mut v6_dst = [0u8; 16];
    v6_dst[..2].copy_from_slice(&[0x2a, 0x00]);
    let table = attr(15, &254u32.to_ne_bytes());
    let payloads = [
        payload(
            &v4,
            &[
                table.clone(),
                attr(1, &[16, 0, 1, 0]),
                attr(5, &[192, 0, 2, 2]),
                attr(4, &3u32.to_ne_bytes()),
            ],
        ),
        payload(
            &v4,
            &[
                table.clone(),
                attr(1, &[16, 0, 2, 0]),
                attr(4, &9u32.to_ne_bytes()),
                attr(7, &[192, 0, 2, 1]),
                attr(6, &100u32.to_ne_bytes()),
            ],
        ),
        payload(
            &v4,
            &[
                table.clone(),
                attr(1, &[16, 0, 3, 0]),
                attr(4, &4u32.to_ne_bytes()),
            ],
        ),
        payload(
            &v4,
            &[table.clone(), attr(1, &[10, 90, 0, 0]), attr(9, &hop)],
        ),
        payload(
            &v4,
            &[
                table.clone(),
                attr(1, &[10, 91, 0, 0]),
                attr(4, &3u32.to_ne_bytes()),
                attr(16, &7u32.to_ne_bytes()),
                attr(KIND, &DATA),
            ],
        ),
        payload(
            &v6,
            &[
                table.clone(),
                attr(1, &v6_dst),
                attr(5, &v6_gateway),
                attr(4, &3u32.to_ne_bytes()),
                attr(20, &[0]),
            ],
        ),
        // Router preferences by name (high) and by number (2 has none).
        payload(&v6, &[table.clone(), attr(1, &v6_dst), attr(20, &[1])]),
        payload(&v6, &[table.clone(), attr(1, &v6_dst), attr(20, &[2])]),
    ];
    let other_table = [2, 24, 0, 0, 252, 4, 0, 1, 0, 0, 0, 0];
    let payloads = payloads.into_iter().chain([payload(
        &other_table,
        &[
            attr(15, &100u32.to_ne_bytes()),
            attr(1, &[10, 92, 0, 0]),
            attr(5, &[192, 0, 2, 3]),
            attr(4, &3u32.to_ne_bytes()),
            attr(6, &200u32.to_ne_bytes()),
        ],
    )]);
    payloads
        .map(|payload| Route::parse(&payload).unwrap().unwrap())
        .collect()
}

/// The link names of [`sample_routes`].
pub(crate) fn sample_names() -> LinkNames {
    let mut names = names();
    names.insert(4u32, "odd\tname");
    names
}

/// What `route show` writes of a route without making its cells is what its cells give, for
/// people and for scripts, for each of [`sample_routes`]; each written twice, so the second
/// comes from the memo.
#[test]
fn a_route_row_writes_what_its_cells_write() {
    use super::{NameMemo, RouteRow, route_cell};
    use crate::render::{LazyRow, push_json_cell};
    let routes = sample_routes();
    let names = sample_names();
    let mut memo = NameMemo::default();
    for route in routes.iter().chain(&routes) {
        for (idx, field) in ROUTE_FIELDS.iter().enumerate() {
            let cell = route_cell(route, &names, &mut NameMemo::default(), idx);
            let mut row = RouteRow {
                route,
                names: &names,
                memo: &mut memo,
            };
            let (mut text, mut lazy_text) = (String::new(), String::new());
            cell.push_text(&mut text);
            row.push_text(idx, &mut lazy_text);
            assert_eq!(lazy_text, text, "{} of {route:?}", field.key);
            let (mut json, mut lazy_json) = (String::new(), String::new());
            push_json_cell(&mut json, &cell);
            row.push_json(idx, &mut lazy_json);
            assert_eq!(lazy_json, json, "{} of {route:?}", field.key);
            // A fixed value is what the row writes for it (on a monitor's one line).
            let mut compact = String::new();
            row.push_json_compact(idx, &mut compact);
            if let Some(fixed) = row.json_fixed(idx) {
                assert_eq!(fixed, compact, "{} of {route:?}", field.key);
            }
            // A monitor's line for people: the text when the field is shown, else nothing.
            let mut shown_text = String::new();
            let shown = row.push_shown_text(idx, &mut shown_text);
            assert_eq!(
                shown,
                crate::render::shown(&cell),
                "{} of {route:?}",
                field.key
            );
            let expected = if shown { text.as_str() } else { "" };
            assert_eq!(shown_text, expected, "{} of {route:?}", field.key);
        }
    }
}

/// A settled route table copies the part of a line that shows what the line before showed
/// ([`RouteRow`]'s `same_tail`), and JSON the fields that have the values of the row before:
/// what it writes is what writing every cell writes, for routes that mostly repeat the one
/// before and routes that do not, with any fields.
#[test]
fn a_route_stream_copying_from_the_line_before_writes_what_its_cells_write() {
    use super::{NameMemo, RouteRow, route_bounds, route_row};
    use crate::render::LOOKAHEAD_ROWS;
    use crate::render::tests::printer_with;
    let routes = sample_routes();
    let names = sample_names();
    // Runs of one route (every third row steps slowly), and the routes in turn.
    let order: Vec<&Route> = (0..LOOKAHEAD_ROWS + 40 * routes.len())
        .map(|n| &routes[if n % 3 == 0 { n / 7 } else { n } % routes.len()])
        .collect();
    let fields: [&[&str]; 5] = [
        &[],
        &["all"],
        &["dst", "metric", "gateway"],
        &["type"],
        &["dst", "flags", "pref"],
    ];
    for (fields, json) in fields.into_iter().flat_map(|f| [(f, false), (f, true)]) {
        let write = |lazy: bool| {
            let (mut printer, buffer) = printer_with(json, false, fields, false);
            let mut stream = printer.rows(ROUTE_FIELDS, &route_bounds(None)).unwrap();
            let mut memo = NameMemo::default();
            for &route in &order {
                if lazy {
                    let mut row = RouteRow {
                        route,
                        names: &names,
                        memo: &mut memo,
                    };
                    stream.lazy_row(&mut row).unwrap();
                } else {
                    stream.row(&route_row(route, &names)).unwrap();
                }
            }
            stream.finish().unwrap();
            let bytes = buffer.lock().unwrap().clone();
            String::from_utf8(bytes).unwrap()
        };
        let (copied, whole) = (write(true), write(false));
        if !json {
            assert_eq!(copied.lines().count(), order.len() + 1);
        }
        assert_eq!(copied, whole, "{fields:?} json={json}");
    }
}

#[test]
fn a_memo_of_recent_values_gives_each_key_its_own() {
    use std::net::IpAddr;
    // Both families, more addresses than the memo holds.
    let addrs: Vec<IpAddr> = (0..super::RECENT as u8 + 3)
        .flat_map(|i| {
            [
                IpAddr::from([192, 0, 2, i]),
                IpAddr::from([0x2001, 0xdb8, 0, 0, 0, 0, 0, u16::from(i)]),
            ]
        })
        .collect();
    // Each in turn three times over, two taking turns, the same one again, then all backwards.
    let turns = [addrs[0], addrs[5]];
    let order: Vec<IpAddr> = addrs
        .iter()
        .cycle()
        .take(3 * addrs.len())
        .chain(turns.iter().cycle().take(10))
        .chain(std::iter::repeat_n(&addrs[7], 3))
        .chain(addrs.iter().rev())
        .copied()
        .collect();
    let mut memo = super::Recent::default();
    let mut made = 0;
    for &addr in &order {
        let mut want = String::new();
        super::push_address(&mut want, addr);
        let got = memo.get(addr, |addr, text| {
            made += 1;
            super::address_text(addr, text);
        });
        assert_eq!(got, &want, "{addr}");
    }
    // Made again only when not held: the two in turn and the one repeated cost nothing more.
    assert!(made < order.len() - 12, "made {made} of {}", order.len());
    // A device memo forgets its names (a link renamed keeps its index).
    let mut names = super::NameMemo::default();
    let cell = |name: &'static str| move |_| Cell::from(name);
    assert_eq!(super::memo_named(&mut names.dev, 3, cell("v0")).text, "v0");
    assert_eq!(
        super::memo_named(&mut names.dev, 3, cell("other")).text,
        "v0"
    );
    names.forget_devices();
    assert_eq!(super::memo_named(&mut names.dev, 3, cell("v1")).text, "v1");
}
