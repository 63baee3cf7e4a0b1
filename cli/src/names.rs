//! The names `ip` prints for the kernel's numbers (tables, protocols, scopes, route types,
//! operational states, interface flags, hardware types), and back for `ip`-style selectors.
//!
//! These are iproute2's built-in tables (`lib/rt_names.c`, `ip/ipaddress.c`), so that
//! `netmirror --json route` says `"table": "main"` where `ip -j route` does. Like `ip`, a
//! number without a name prints as the number, and a number is accepted wherever a name is.

use std::borrow::Cow;
use std::net::IpAddr;

/// Routing tables `ip` names without reading `/etc/iproute2/rt_tables`.
const TABLES: &[(u32, &str)] = &[
    (0, "unspec"),
    (253, "default"),
    (254, "main"),
    (255, "local"),
];

/// Route protocols (`/etc/iproute2/rt_protos` of iproute2 6.1).
const PROTOCOLS: &[(u8, &str)] = &[
    (0, "unspec"),
    (1, "redirect"),
    (2, "kernel"),
    (3, "boot"),
    (4, "static"),
    (8, "gated"),
    (9, "ra"),
    (10, "mrt"),
    (11, "zebra"),
    (12, "bird"),
    (13, "dnrouted"),
    (14, "xorp"),
    (15, "ntk"),
    (16, "dhcp"),
    (17, "mrouted"),
    (18, "keepalived"),
    (42, "babel"),
    (99, "openr"),
    (186, "bgp"),
    (187, "isis"),
    (188, "ospf"),
    (189, "rip"),
    (192, "eigrp"),
];

/// Route types (`RTN_*`).
const ROUTE_TYPES: &[(u8, &str)] = &[
    (0, "none"),
    (1, "unicast"),
    (2, "local"),
    (3, "broadcast"),
    (4, "anycast"),
    (5, "multicast"),
    (6, "blackhole"),
    (7, "unreachable"),
    (8, "prohibit"),
    (9, "throw"),
    (10, "nat"),
    (11, "xresolve"),
];

/// Scopes (`RT_SCOPE_*`); 0 is `global` as `ip addr` prints it.
const SCOPES: &[(u8, &str)] = &[
    (0, "global"),
    (200, "site"),
    (253, "link"),
    (254, "host"),
    (255, "nowhere"),
];

/// Operational states (`IF_OPER_*`), as `ip link` prints them.
const OPERSTATES: &[&str] = &[
    "UNKNOWN",
    "NOTPRESENT",
    "DOWN",
    "LOWERLAYERDOWN",
    "TESTING",
    "DORMANT",
    "UP",
];

/// Interface flags in the order `ip link` prints them.
const LINK_FLAGS: &[(u32, &str)] = &[
    (0x8, "LOOPBACK"),
    (0x2, "BROADCAST"),
    (0x10, "POINTOPOINT"),
    (0x1000, "MULTICAST"),
    (0x80, "NOARP"),
    (0x200, "ALLMULTI"),
    (0x100, "PROMISC"),
    (0x400, "MASTER"),
    (0x800, "SLAVE"),
    (0x4, "DEBUG"),
    (0x8000, "DYNAMIC"),
    (0x4000, "AUTOMEDIA"),
    (0x2000, "PORTSEL"),
    (0x20, "NOTRAILERS"),
    (0x1, "UP"),
    (0x10000, "LOWER_UP"),
    (0x20000, "DORMANT"),
    (0x40000, "ECHO"),
];
const IFF_UP: u32 = 0x1;
const IFF_RUNNING: u32 = 0x40;

/// Hardware types (`ARPHRD_*`) as `ip -j link` names them in `link_type`.
const LINK_TYPES: &[(u16, &str)] = &[
    (1, "ether"),
    (24, "ieee1394"),
    (32, "infiniband"),
    (512, "ppp"),
    (768, "ipip"),
    (769, "tunnel6"),
    (772, "loopback"),
    (776, "sit"),
    (778, "gre"),
    (801, "ieee802.11"),
    (803, "ieee802.11/radiotap"),
    (823, "gre6"),
    (65534, "none"),
    (65535, "void"),
];

/// Rule actions (`FR_ACT_*`) other than "look up a table".
const RULE_ACTIONS: &[(u8, &str)] = &[
    (1, "lookup"),
    (2, "goto"),
    (3, "nop"),
    (6, "blackhole"),
    (7, "unreachable"),
    (8, "prohibit"),
];

fn name_of<T: Copy + PartialEq + ToString>(
    table: &[(T, &'static str)],
    value: T,
) -> Cow<'static, str> {
    table
        .iter()
        .find(|(number, _)| *number == value)
        .map_or_else(
            || Cow::Owned(value.to_string()),
            |(_, name)| Cow::Borrowed(*name),
        )
}

fn number_of<T: Copy + std::str::FromStr>(table: &[(T, &str)], text: &str) -> Option<T> {
    table
        .iter()
        .find(|(_, name)| *name == text)
        .map(|(number, _)| *number)
        .or_else(|| text.parse().ok())
}

/// A routing table's name (`main`) or number.
pub(crate) fn table(id: u32) -> Cow<'static, str> {
    name_of(TABLES, id)
}

/// A table from its name or number.
pub(crate) fn parse_table(text: &str) -> Option<u32> {
    number_of(TABLES, text)
}

/// A route protocol's name (`kernel`) or number.
pub(crate) fn protocol(id: u8) -> Cow<'static, str> {
    name_of(PROTOCOLS, id)
}

/// A protocol from its name or number.
pub(crate) fn parse_protocol(text: &str) -> Option<u8> {
    number_of(PROTOCOLS, text)
}

/// A route type's name (`unicast`).
pub(crate) fn route_type(id: u8) -> Cow<'static, str> {
    name_of(ROUTE_TYPES, id)
}

/// A route type from its name or number.
pub(crate) fn parse_route_type(text: &str) -> Option<u8> {
    number_of(ROUTE_TYPES, text)
}

/// A scope's name (`link`).
pub(crate) fn scope(id: u8) -> Cow<'static, str> {
    name_of(SCOPES, id)
}

/// An operational state's name (`UP`).
pub(crate) fn operstate(id: u8) -> Cow<'static, str> {
    OPERSTATES
        .get(usize::from(id))
        .map_or_else(|| Cow::Owned(id.to_string()), |name| Cow::Borrowed(*name))
}

/// A hardware type's name (`ether`).
pub(crate) fn link_type(id: u16) -> Cow<'static, str> {
    name_of(LINK_TYPES, id)
}

/// A rule action's name.
pub(crate) fn rule_action(id: u8) -> Cow<'static, str> {
    name_of(RULE_ACTIONS, id)
}

/// Interface flags as `ip` lists them: `NO-CARRIER` first when up without carrier, then the
/// named flags in `ip`'s order, then any unnamed rest in hex.
pub(crate) fn link_flags(flags: u32) -> Vec<String> {
    let mut names = Vec::new();
    if flags & IFF_UP != 0 && flags & IFF_RUNNING == 0 {
        names.push("NO-CARRIER".to_owned());
    }
    let mut rest = flags & !IFF_RUNNING;
    for &(bit, name) in LINK_FLAGS {
        if flags & bit != 0 {
            names.push(name.to_owned());
            rest &= !bit;
        }
    }
    if rest != 0 {
        names.push(format!("{rest:#x}"));
    }
    names
}

/// A hardware address as colon-separated hex (`02:fc:00:00:00:01`); none when empty.
pub(crate) fn hw_address(bytes: &[u8]) -> Option<String> {
    if bytes.is_empty() {
        return None;
    }
    Some(
        bytes
            .iter()
            .map(|byte| format!("{byte:02x}"))
            .collect::<Vec<_>>()
            .join(":"),
    )
}

/// A prefix as `ip` prints a route's destination: `default` for a zero-length prefix, the bare
/// address for a host route, `ADDR/LEN` otherwise.
pub(crate) fn route_prefix(addr: IpAddr, len: u8) -> String {
    let full = if addr.is_ipv4() { 32 } else { 128 };
    match len {
        0 => "default".to_owned(),
        len if len == full => addr.to_string(),
        len => format!("{addr}/{len}"),
    }
}

/// A rule's source or destination as `ip rule` prints it: `all` when absent.
pub(crate) fn rule_prefix(prefix: Option<(IpAddr, u8)>) -> String {
    match prefix {
        None => "all".to_owned(),
        Some((addr, len)) => route_prefix(addr, len).replace("default", "all"),
    }
}

#[cfg(test)]
mod tests;
