//! The names iproute2 gives the kernel's numbers (routing tables, route protocols, scopes,
//! route types, operational states, interface flags, hardware types, rule actions), in both
//! directions, so that a program can print and read them as `ip` does.
//!
//! The fixed tables are iproute2 6.1's built-in ones (`lib/rt_names.c`, `ip/ipaddress.c`).
//! Routing tables can also be named by the administrator: [`RouteTables`] reads
//! `rt_tables` and `rt_tables.d/*.conf` as iproute2 does, and [`table_name`] and
//! [`parse_table`] use the system's files, read once. Like `ip`, a number without a name
//! prints as the number, and a number is accepted wherever a name is.
//!
//! ```
//! use netmirror_platform::names;
//!
//! assert_eq!(names::protocol(4), "static");
//! assert_eq!(names::parse_route_type("blackhole"), Some(6));
//! assert_eq!(names::link_flags(0x1 | 0x40 | 0x10000), ["UP", "LOWER_UP"]);
//!
//! let tables = names::RouteTables::builtin().with_text("100 isp1\n# a comment\n0x65 isp2\n");
//! assert_eq!(tables.name(101), "isp2");
//! assert_eq!(tables.id("isp1"), Some(100));
//! assert_eq!(tables.id("main"), Some(254));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::borrow::Cow;
use std::io;
use std::net::{IpAddr, Ipv6Addr};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::link::IFF_UP;

/// Where iproute2 looks for its configuration: the administrator's directory first, then the
/// distribution's defaults.
pub const CONFIG_DIRS: &[&str] = &["/etc/iproute2", "/usr/share/iproute2"];

/// Routing tables `ip` names without reading any file.
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

/// Rule actions (`FR_ACT_*`).
const RULE_ACTIONS: &[(u8, &str)] = &[
    (1, "lookup"),
    (2, "goto"),
    (3, "nop"),
    (6, "blackhole"),
    (7, "unreachable"),
    (8, "prohibit"),
];

/// `(number, name)` definitions as iproute2 keeps them for `rt_tables` and `rt_protos`, in
/// the order they were defined and searched from the end, so a later definition of a number
/// renames it and a name defined twice means the later number.
#[derive(Debug, Clone, PartialEq, Eq)]
struct NameFile {
    /// `rt_tables`, `rt_protos` or `rt_dsfield`: the file the definitions come from.
    base: &'static str,
    /// Whether `BASE.d/*.conf` files add to it (`rt_dsfield` has none).
    conf_dir: bool,
    entries: Vec<(u32, String)>,
}

impl NameFile {
    fn builtin(base: &'static str, names: impl Iterator<Item = (u32, &'static str)>) -> Self {
        let entries = names.map(|(id, name)| (id, name.to_owned())).collect();
        NameFile {
            base,
            conf_dir: true,
            entries,
        }
    }

    /// Without `BASE.d/*.conf` files: `ip` reads `rt_dsfield` and `rt_realms` alone.
    fn alone(mut self) -> Self {
        self.conf_dir = false;
        self
    }

    fn load_from(mut self, dirs: &[&Path]) -> Self {
        load_name_files(&mut self.entries, self.base, self.conf_dir, dirs);
        self
    }

    /// The number a name was last defined as.
    fn named(&self, text: &str) -> Option<u32> {
        self.entries
            .iter()
            .rev()
            .find(|(_, name)| name == text)
            .map(|(id, _)| *id)
    }

    /// The name `id` was last given.
    fn name_of(&self, id: u32) -> Option<&str> {
        self.entries
            .iter()
            .rev()
            .find(|(number, _)| *number == id)
            .map(|(_, name)| name.as_str())
    }

    fn with_text(mut self, text: &str) -> Self {
        add_name_text(&mut self.entries, text, Path::new("-"));
        self
    }

    /// The name of `id`, or its number when it has none.
    fn name(&self, id: u32) -> Cow<'_, str> {
        self.name_of(id)
            .map_or_else(|| Cow::Owned(id.to_string()), Cow::Borrowed)
    }

    /// The number of a name no greater than `max`, or a number written out (decimal or
    /// `0x` hex).
    fn id(&self, text: &str, max: u32) -> Option<u32> {
        self.entries
            .iter()
            .rev()
            .find(|(number, name)| name == text && *number <= max)
            .map(|(id, _)| *id)
            .or_else(|| parse_u32(text).filter(|id| *id <= max))
    }
}

/// The system's configuration directories as paths, most important first.
fn config_dirs() -> Vec<&'static Path> {
    CONFIG_DIRS.iter().map(Path::new).collect()
}

/// Routing table names: iproute2's built-in ones plus those of `rt_tables` files.
///
/// A later definition of a number renames it, and a name defined twice means the later
/// number, as when iproute2 reads the same files in the same order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteTables(NameFile);

impl Default for RouteTables {
    fn default() -> Self {
        Self::builtin()
    }
}

impl RouteTables {
    /// Only the names iproute2 knows without files: `unspec`, `default`, `main`, `local`.
    pub fn builtin() -> Self {
        RouteTables(NameFile::builtin("rt_tables", TABLES.iter().copied()))
    }

    /// The built-in names plus the system's files: see [`RouteTables::load_from`] with
    /// [`CONFIG_DIRS`].
    pub fn load() -> Self {
        Self::builtin().load_from(&config_dirs())
    }

    /// Adds the names of the `rt_tables` files under `dirs` (most important first), as
    /// iproute2 reads them: the first `rt_tables` that exists, then every
    /// `rt_tables.d/*.conf` of every directory, the least important directory's first and
    /// each directory's files in name order.
    ///
    /// A file that cannot be read is skipped with a warning (a missing one silently); a line
    /// that is not `NUMBER NAME` is skipped with a warning.
    pub fn load_from(self, dirs: &[&Path]) -> Self {
        RouteTables(self.0.load_from(dirs))
    }

    /// Adds the names of one `rt_tables` text (`NUMBER NAME` lines, `#` comments).
    pub fn with_text(self, text: &str) -> Self {
        RouteTables(self.0.with_text(text))
    }

    /// A table's name, or its number when it has none.
    pub fn name(&self, id: u32) -> Cow<'_, str> {
        self.0.name(id)
    }

    /// A table from its name or number (decimal or `0x` hex).
    pub fn id(&self, text: &str) -> Option<u32> {
        self.0.id(text, u32::MAX)
    }
}

/// Reads `BASE` (the first that exists among `dirs`) and, with `conf_dir`, every
/// `BASE.d/*.conf`, as iproute2 reads `rt_tables` and `rt_protos` (and `rt_dsfield`, alone).
fn load_name_files(entries: &mut Vec<(u32, String)>, base: &str, conf_dir: bool, dirs: &[&Path]) {
    for dir in dirs {
        let path = dir.join(base);
        match std::fs::read_to_string(&path) {
            Ok(text) => {
                add_name_text(entries, &text, &path);
                break;
            }
            Err(err) if err.kind() == io::ErrorKind::NotFound => {}
            Err(err) => tracing::warn!(path = %path.display(), %err, "cannot read"),
        }
    }
    for dir in dirs.iter().rev().filter(|_| conf_dir) {
        for path in conf_files(&dir.join(format!("{base}.d"))) {
            match std::fs::read_to_string(&path) {
                Ok(text) => add_name_text(entries, &text, &path),
                Err(err) => tracing::warn!(path = %path.display(), %err, "cannot read"),
            }
        }
    }
}

/// Adds the `NUMBER NAME` lines of one file (`#` comments).
fn add_name_text(entries: &mut Vec<(u32, String)>, text: &str, path: &Path) {
    for (idx, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut words = line.split_whitespace();
        let id = words.next().and_then(parse_u32);
        let name = words.next().filter(|name| !name.starts_with('#'));
        match (id, name) {
            (Some(id), Some(name)) => entries.push((id, name.to_owned())),
            _ => tracing::warn!(
                path = %path.display(),
                line = idx + 1,
                text = line,
                "not a NUMBER NAME definition"
            ),
        }
    }
}

/// Route protocol names: iproute2's built-in ones plus those of `rt_protos` and
/// `rt_protos.d/*.conf`, read as [`RouteTables`] reads `rt_tables`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteProtocols(NameFile);

impl Default for RouteProtocols {
    fn default() -> Self {
        Self::builtin()
    }
}

impl RouteProtocols {
    /// Only the names iproute2 6.1 knows without files.
    pub fn builtin() -> Self {
        let names = PROTOCOLS.iter().map(|&(id, name)| (u32::from(id), name));
        RouteProtocols(NameFile::builtin("rt_protos", names))
    }

    /// The built-in names plus the system's files under [`CONFIG_DIRS`].
    pub fn load() -> Self {
        Self::builtin().load_from(&config_dirs())
    }

    /// Adds the names of the `rt_protos` files under `dirs` (most important first): the
    /// first `rt_protos` that exists, then every `rt_protos.d/*.conf`.
    pub fn load_from(self, dirs: &[&Path]) -> Self {
        RouteProtocols(self.0.load_from(dirs))
    }

    /// Adds the names of one `rt_protos` text.
    pub fn with_text(self, text: &str) -> Self {
        RouteProtocols(self.0.with_text(text))
    }

    /// A protocol's name, or its number when it has none.
    pub fn name(&self, id: u8) -> Cow<'_, str> {
        self.0.name(u32::from(id))
    }

    /// A protocol from its name or number.
    pub fn id(&self, text: &str) -> Option<u8> {
        self.0
            .id(text, u32::from(u8::MAX))
            .and_then(|id| u8::try_from(id).ok())
    }
}

/// The system's route protocol names, read on first use.
pub fn route_protocols() -> &'static RouteProtocols {
    static PROTOS: OnceLock<RouteProtocols> = OnceLock::new();
    PROTOS.get_or_init(RouteProtocols::load)
}

/// The system's routing table names, read on first use.
pub fn route_tables() -> &'static RouteTables {
    static TABLES: OnceLock<RouteTables> = OnceLock::new();
    TABLES.get_or_init(RouteTables::load)
}

/// A routing table's name (`main`, or one from `rt_tables`) or number.
pub fn table_name(id: u32) -> Cow<'static, str> {
    route_tables().name(id)
}

/// A routing table from its name (built-in or from `rt_tables`) or number.
pub fn parse_table(text: &str) -> Option<u32> {
    route_tables().id(text)
}

/// A route protocol's name (`kernel`, or one from `rt_protos`) or number.
pub fn protocol(id: u8) -> Cow<'static, str> {
    route_protocols().name(id)
}

/// A route protocol from its name (built-in or from `rt_protos`) or number.
pub fn parse_protocol(text: &str) -> Option<u8> {
    route_protocols().id(text)
}

/// Route and next-hop flags (`rtm_flags`, `rtnh_flags`) as `ip route` prints them, in its
/// order; an unnamed rest in hex.
pub fn route_flags(flags: u32) -> Vec<String> {
    const NAMES: &[(u32, &str)] = &[
        (0x1, "dead"),
        (0x4, "onlink"),
        (0x2, "pervasive"),
        (0x8, "offload"),
        (0x40, "trap"),
        (0x100, "notify"),
        (0x10, "linkdown"),
        (0x20, "unresolved"),
        (0x4000, "rt_offload"),
        (0x8000, "rt_trap"),
        (0x2000_0000, "rt_offload_failed"),
    ];
    named_bits(NAMES, flags)
}

/// `flags` as the names of `table`'s bits in its order, then any unnamed rest in hex.
fn named_bits(table: &[(u32, &str)], flags: u32) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = flags;
    for &(bit, name) in table {
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

/// Parses a route flag name (`onlink`, `pervasive`) to its bit.
pub fn parse_route_flag(text: &str) -> Option<u32> {
    match text {
        "onlink" => Some(0x4),
        "pervasive" => Some(0x2),
        _ => None,
    }
}

/// The address flags (`IFA_F_*`) and their names, in `ip addr`'s order.
const ADDRESS_FLAGS: &[(u32, &str)] = &[
    (0x01, "secondary"),
    (0x02, "nodad"),
    (0x04, "optimistic"),
    (0x08, "dadfailed"),
    (0x10, "home"),
    (0x20, "deprecated"),
    (0x40, "tentative"),
    (0x80, "permanent"),
    (0x100, "mngtmpaddr"),
    (0x200, "noprefixroute"),
    (0x400, "autojoin"),
    (0x800, "stable-privacy"),
];

/// The bit of the address flag `ip addr` names `name` (`secondary`, `tentative`, ...).
pub fn address_flag_bit(name: &str) -> Option<u32> {
    ADDRESS_FLAGS
        .iter()
        .find(|(_, flag)| *flag == name)
        .map(|(bit, _)| *bit)
}

/// Address flags (`IFA_F_*`) as `ip addr` prints them, in its order: `dynamic` for an address
/// without `permanent`, `temporary` for an IPv6 `secondary`; an unnamed rest in hex.
pub fn address_flags(flags: u32, v6: bool) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = flags;
    for &(bit, name) in ADDRESS_FLAGS {
        rest &= !bit;
        match (bit, flags & bit != 0) {
            (0x80, false) => names.push("dynamic".to_owned()),
            (0x80, true) => {}
            (0x01, true) if v6 => names.push("temporary".to_owned()),
            (_, true) => names.push(name.to_owned()),
            (_, false) => {}
        }
    }
    if rest != 0 {
        names.push(format!("{rest:#x}"));
    }
    names
}

/// DS field (TOS) names: those of the `rt_dsfield` iproute2 ships (`CS1`, `AF11`, `EF`, ...),
/// plus the definitions of the system's `rt_dsfield` (the first of [`CONFIG_DIRS`] that has
/// one), read as iproute2 reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DsFields(NameFile);

impl Default for DsFields {
    fn default() -> Self {
        Self::builtin()
    }
}

/// The definitions of the `rt_dsfield` iproute2 ships.
const DS_FIELDS: &[(u8, &str)] = &[
    (0x00, "default"),
    (0x28, "AF11"),
    (0x30, "AF12"),
    (0x38, "AF13"),
    (0x48, "AF21"),
    (0x50, "AF22"),
    (0x58, "AF23"),
    (0x68, "AF31"),
    (0x70, "AF32"),
    (0x78, "AF33"),
    (0x88, "AF41"),
    (0x90, "AF42"),
    (0x98, "AF43"),
    (0x20, "CS1"),
    (0x40, "CS2"),
    (0x60, "CS3"),
    (0x80, "CS4"),
    (0xa0, "CS5"),
    (0xc0, "CS6"),
    (0xe0, "CS7"),
    (0xb8, "EF"),
];

impl DsFields {
    /// The names of the `rt_dsfield` iproute2 ships, without reading any file.
    pub fn builtin() -> Self {
        let names = DS_FIELDS.iter().map(|&(id, name)| (u32::from(id), name));
        DsFields(NameFile::builtin("rt_dsfield", names).alone())
    }

    /// The built-in names plus the system's file under [`CONFIG_DIRS`].
    pub fn load() -> Self {
        Self::builtin().load_from(&config_dirs())
    }

    /// Adds the definitions of the first `rt_dsfield` under `dirs` (most important first).
    pub fn load_from(self, dirs: &[&Path]) -> Self {
        DsFields(self.0.load_from(dirs))
    }

    /// Adds the definitions of one `rt_dsfield` text (`0x28 AF11` lines, `#` comments).
    pub fn with_text(self, text: &str) -> Self {
        DsFields(self.0.with_text(text))
    }

    /// A DS field's name, or `0x%02x` as `ip` prints one without a name.
    pub fn name(&self, id: u8) -> Cow<'_, str> {
        self.0
            .name_of(u32::from(id))
            .map_or_else(|| Cow::Owned(format!("{id:#04x}")), Cow::Borrowed)
    }

    /// A DS field from its name or number, read as hexadecimal (`10` is 0x10) as `ip`
    /// reads it.
    pub fn id(&self, text: &str) -> Option<u8> {
        if let Some(id) = self.0.named(text) {
            return u8::try_from(id).ok();
        }
        let digits = text
            .strip_prefix("0x")
            .or_else(|| text.strip_prefix("0X"))
            .unwrap_or(text);
        u8::from_str_radix(digits, 16).ok()
    }
}

/// The system's DS field names, read on first use.
pub fn ds_fields() -> &'static DsFields {
    static FIELDS: OnceLock<DsFields> = OnceLock::new();
    FIELDS.get_or_init(DsFields::load)
}

/// A TOS (DS field) as `ip route` and `ip rule` print it: its name (`AF11`, from
/// `rt_dsfield`) or `0x%02x`.
pub fn dsfield(id: u8) -> Cow<'static, str> {
    ds_fields().name(id)
}

/// A TOS (DS field) value as `ip route` takes it: a name from `rt_dsfield` (`CS1`, `AF11`,
/// `EF`, ...) or a number, read as hexadecimal (`10` is 0x10) as `ip` reads it.
pub fn parse_dsfield(text: &str) -> Option<u8> {
    ds_fields().id(text)
}

/// A DSCP (a DS field's upper six bits) as `ip rule` prints `dscp`: the name of its DS field
/// when it has one (46 is `EF`), else the number; 0 is `0`.
pub fn dscp(id: u8) -> Cow<'static, str> {
    match id {
        0 => Cow::Borrowed("0"),
        id => ds_fields()
            .0
            .name_of(u32::from(id) << 2)
            .map_or_else(|| Cow::Owned(id.to_string()), Cow::Borrowed),
    }
}

/// Parses an address flag as `ip addr add` takes it.
pub fn parse_address_flag(text: &str) -> Option<u32> {
    match text {
        "home" => Some(0x10),
        "nodad" => Some(0x02),
        "optimistic" => Some(0x04),
        "mngtmpaddr" => Some(0x100),
        "noprefixroute" => Some(0x200),
        "autojoin" => Some(0x400),
        _ => None,
    }
}

/// Route metrics (`RTAX_*`) as `ip route` names them.
const METRICS: &[(u16, &str)] = &[
    (1, "lock"),
    (2, "mtu"),
    (3, "window"),
    (4, "rtt"),
    (5, "rttvar"),
    (6, "ssthresh"),
    (7, "cwnd"),
    (8, "advmss"),
    (9, "reordering"),
    (10, "hoplimit"),
    (11, "initcwnd"),
    (12, "features"),
    (13, "rto_min"),
    (14, "initrwnd"),
    (15, "quickack"),
    (16, "congctl"),
    (17, "fastopen_no_cookie"),
];

/// A route metric's name (`mtu`, `advmss`, ...; `congctl` for `RTAX_CC_ALGO`) or `metricN`.
pub fn metric(kind: u16) -> Cow<'static, str> {
    METRICS
        .iter()
        .find(|(number, _)| *number == kind)
        .map_or_else(
            || Cow::Owned(format!("metric{kind}")),
            |(_, name)| Cow::Borrowed(*name),
        )
}

/// A route metric from its name.
pub fn parse_metric(text: &str) -> Option<u16> {
    METRICS
        .iter()
        .find(|(_, name)| *name == text)
        .map(|(number, _)| *number)
}

/// An IPv6 router preference (`RTA_PREF`) as `ip` prints it: `medium`, `high`, `low`.
pub fn pref(value: u8) -> Cow<'static, str> {
    match value {
        0 => Cow::Borrowed("medium"),
        1 => Cow::Borrowed("high"),
        3 => Cow::Borrowed("low"),
        other => Cow::Owned(other.to_string()),
    }
}

/// A router preference from its name.
pub fn parse_pref(text: &str) -> Option<u8> {
    match text {
        "medium" => Some(0),
        "high" => Some(1),
        "low" => Some(3),
        _ => None,
    }
}

/// Routing realm names: iproute2's one built-in name (0 is `unknown`) plus the definitions of
/// the system's `rt_realms` (the first of [`CONFIG_DIRS`] that has one; Debian's names 0
/// `cosmos`), read as iproute2 reads it. Realms from 256 on have no names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteRealms(NameFile);

impl Default for RouteRealms {
    fn default() -> Self {
        Self::builtin()
    }
}

impl RouteRealms {
    /// The built-in name alone.
    pub fn builtin() -> Self {
        RouteRealms(NameFile::builtin("rt_realms", [(0, "unknown")].into_iter()).alone())
    }

    /// The built-in name plus the system's file under [`CONFIG_DIRS`].
    pub fn load() -> Self {
        Self::builtin().load_from(&config_dirs())
    }

    /// Adds the definitions of the first `rt_realms` under `dirs` (most important first).
    pub fn load_from(self, dirs: &[&Path]) -> Self {
        RouteRealms(self.0.load_from(dirs))
    }

    /// Adds the definitions of one `rt_realms` text (`NUMBER NAME` lines, `#` comments).
    pub fn with_text(self, text: &str) -> Self {
        RouteRealms(self.0.with_text(text))
    }

    /// A realm's name, or its number when it has none.
    pub fn name(&self, id: u16) -> Cow<'_, str> {
        match id {
            0..=255 => self.0.name(u32::from(id)),
            _ => Cow::Owned(id.to_string()),
        }
    }

    /// A realm from its name or number (decimal or `0x` hex, up to 255, as `ip` reads it).
    pub fn id(&self, text: &str) -> Option<u16> {
        self.0.id(text, 255).and_then(|id| u16::try_from(id).ok())
    }
}

/// The system's realm names, read on first use.
pub fn route_realms() -> &'static RouteRealms {
    static REALMS: OnceLock<RouteRealms> = OnceLock::new();
    REALMS.get_or_init(RouteRealms::load)
}

/// A realm's name (from `rt_realms`) or number.
pub fn realm(id: u16) -> Cow<'static, str> {
    route_realms().name(id)
}

/// Realms (`RTA_FLOW`, `FRA_FLOW`) as `ip` prints them: `TO`, or `FROM/TO` when `FROM` is set,
/// each named from `rt_realms` when it has a name.
pub fn realms(flow: u32) -> String {
    let (from, to) = ((flow >> 16) as u16, (flow & 0xffff) as u16);
    if from == 0 {
        realm(to).into_owned()
    } else {
        format!("{}/{}", realm(from), realm(to))
    }
}

/// Realms as `ip` reads them: `TO`, `FROM/TO` or `FROM/`, each a name from `rt_realms` or a
/// number up to 255; else the whole as one raw 32-bit number (`0x50006`).
pub fn parse_realms(text: &str) -> Option<u32> {
    let realm = |text: &str| route_realms().id(text).map(u32::from);
    let named = match text.split_once('/') {
        Some((from, "")) => realm(from).map(|from| from << 16),
        Some((from, to)) => realm(from)
            .zip(realm(to))
            .map(|(from, to)| (from << 16) | to),
        None => realm(text),
    };
    named.or_else(|| parse_u32(text))
}

/// The bits of realms `text` (as [`parse_realms`] reads it, giving `realms`) that a route's
/// must equal, as `ip route show realms` compares them: the `TO` half unless `text` leaves it
/// empty (`FROM/`), the `FROM` half unless `text` names none (`TO`, `/TO`). A half that is
/// not 0 always counts.
pub fn realms_mask(text: &str, realms: u32) -> u32 {
    let mut mask = u32::MAX;
    if realms & 0xffff == 0 && text.ends_with('/') {
        mask &= !0xffff;
    }
    if realms & 0xffff_0000 == 0 && (!text.contains('/') || text.starts_with('/')) {
        mask &= !0xffff_0000;
    }
    mask
}

/// Device group names (a link's `group`, a rule's `suppress_ifgroup`): iproute2's one built-in
/// name (0 is `default`) plus the definitions of the system's `group` file (the first of
/// [`CONFIG_DIRS`] that has one; there is no `group.d`), read as iproute2 reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceGroups(NameFile);

impl Default for DeviceGroups {
    fn default() -> Self {
        Self::builtin()
    }
}

impl DeviceGroups {
    /// The built-in name alone.
    pub fn builtin() -> Self {
        DeviceGroups(NameFile::builtin("group", [(0, "default")].into_iter()).alone())
    }

    /// The built-in name plus the system's file under [`CONFIG_DIRS`].
    pub fn load() -> Self {
        Self::builtin().load_from(&config_dirs())
    }

    /// Adds the definitions of the first `group` file under `dirs` (most important first).
    pub fn load_from(self, dirs: &[&Path]) -> Self {
        DeviceGroups(self.0.load_from(dirs))
    }

    /// Adds the definitions of one `group` text (`NUMBER NAME` lines, `#` comments).
    pub fn with_text(self, text: &str) -> Self {
        DeviceGroups(self.0.with_text(text))
    }

    /// A group's name, or its number as `ip` prints one without a name: as a C `int`, so a
    /// group from 2^31 on (which only netlink, not `ip`, can set) is negative.
    pub fn name(&self, id: u32) -> Cow<'_, str> {
        self.0
            .name_of(id)
            .map_or_else(|| Cow::Owned((id as i32).to_string()), Cow::Borrowed)
    }

    /// A group from its name or number (decimal, `0x` hex or `0` octal, up to 2^31 - 1, as
    /// `ip` reads it).
    pub fn id(&self, text: &str) -> Option<u32> {
        self.0
            .named(text)
            .or_else(|| c_number(text))
            .filter(|id| i32::try_from(*id).is_ok())
    }
}

/// The system's device group names, read on first use.
pub fn device_groups() -> &'static DeviceGroups {
    static GROUPS: OnceLock<DeviceGroups> = OnceLock::new();
    GROUPS.get_or_init(DeviceGroups::load)
}

/// A device group's name (`default`, or one from `group`) or number, as `ip` prints it.
pub fn group(id: u32) -> Cow<'static, str> {
    device_groups().name(id)
}

/// A device group from its name (built-in or from `group`) or number, as `ip` reads it.
pub fn parse_group(text: &str) -> Option<u32> {
    device_groups().id(text)
}

/// A lightweight tunnel type's name (`LWTUNNEL_ENCAP_*`) as `ip` prints it, or its number.
pub fn encap_type(kind: u16) -> Cow<'static, str> {
    const NAMES: &[(u16, &str)] = &[
        (1, "mpls"),
        (2, "ip"),
        (3, "ila"),
        (4, "ip6"),
        (5, "seg6"),
        (6, "bpf"),
        (7, "seg6local"),
        (8, "rpl"),
        (9, "ioam6"),
        (10, "xfrm"),
    ];
    name_of(NAMES, kind)
}

/// A seg6 tunnel mode as `ip` prints it.
pub fn seg6_mode(mode: u32) -> Cow<'static, str> {
    const NAMES: &[(u32, &str)] = &[
        (0, "inline"),
        (1, "encap"),
        (2, "l2encap"),
        (3, "encap.red"),
        (4, "l2encap.red"),
    ];
    name_of(NAMES, mode)
}

/// An IP protocol's name as `ip rule` prints `ipproto` (`tcp`, `udp`, ...), or its number.
pub fn ip_proto(proto: u8) -> Cow<'static, str> {
    name_of(IP_PROTOS, proto)
}

/// An IP protocol from its name (`tcp`, `udp`, ... as in `/etc/protocols`) or decimal number,
/// as `ip rule ... ipproto P` takes it.
pub fn parse_ip_proto(text: &str) -> Option<u8> {
    number_of(IP_PROTOS, text)
}

/// IP protocols by the names `/etc/protocols` gives them.
const IP_PROTOS: &[(u8, &str)] = &[
    (1, "icmp"),
    (2, "igmp"),
    (6, "tcp"),
    (17, "udp"),
    (33, "dccp"),
    (41, "ipv6"),
    (47, "gre"),
    (50, "esp"),
    (51, "ah"),
    (58, "ipv6-icmp"),
    (132, "sctp"),
    (136, "udplite"),
];

/// An address's protocol (`IFA_PROTO`) as `ip addr` prints it (`kernel_lo`, `kernel_ra`,
/// `kernel_ll`), or its number.
pub fn address_proto(proto: u8) -> Cow<'static, str> {
    name_of(ADDRESS_PROTOS, proto)
}

/// An address's protocol from its name (`kernel_lo`, `kernel_ra`, `kernel_ll`) or number, as
/// `ip addr add ... proto P` takes it.
pub fn parse_address_proto(text: &str) -> Option<u8> {
    number_of(ADDRESS_PROTOS, text)
}

/// The name of user `uid` in `/etc/passwd`, as `ip` prints a TUN device's owner (`user
/// root`); `None` when the file has none, where `ip` prints the number. (`ip` asks the name
/// service, which may know users of other databases too; this reads the file, once.)
pub fn user_name(uid: u32) -> Option<&'static str> {
    static USERS: OnceLock<Vec<(u32, String)>> = OnceLock::new();
    id_name(USERS.get_or_init(|| id_file("/etc/passwd")), uid)
}

/// The name of group `gid` in `/etc/group`, as `ip` prints a TUN device's group; `None` when
/// the file has none. Read once, like [`user_name`].
pub fn group_name(gid: u32) -> Option<&'static str> {
    static GROUPS: OnceLock<Vec<(u32, String)>> = OnceLock::new();
    id_name(GROUPS.get_or_init(|| id_file("/etc/group")), gid)
}

fn id_name(entries: &'static [(u32, String)], id: u32) -> Option<&'static str> {
    entries
        .iter()
        .find(|(held, _)| *held == id)
        .map(|(_, name)| name.as_str())
}

/// The names and ids of `/etc/passwd` or `/etc/group` (`name:password:id:...`), in file order;
/// empty when it cannot be read.
fn id_file(path: &str) -> Vec<(u32, String)> {
    std::fs::read_to_string(path)
        .map(|text| id_entries(&text))
        .unwrap_or_default()
}

fn id_entries(text: &str) -> Vec<(u32, String)> {
    text.lines()
        .filter_map(|line| {
            let mut fields = line.split(':');
            let name = fields.next()?;
            let id = fields.nth(1)?.parse().ok()?;
            (!name.is_empty() && !name.starts_with('#')).then(|| (id, name.to_owned()))
        })
        .collect()
}

/// Address protocols (`IFA_PROTO`) as iproute2 names them.
const ADDRESS_PROTOS: &[(u8, &str)] = &[(1, "kernel_lo"), (2, "kernel_ra"), (3, "kernel_ll")];

/// A number in hex as C's `%#x` writes it, as `ip` prints marks and masks: `0x` before it,
/// except for 0, which is `0`.
pub fn c_hex(value: u64) -> String {
    if value == 0 {
        "0".to_owned()
    } else {
        format!("{value:#x}")
    }
}

/// Bytes in lowercase hex without separators.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// A route type's name (`unicast`) or number.
pub fn route_type(id: u8) -> Cow<'static, str> {
    name_of(ROUTE_TYPES, id)
}

/// A route type from its name or number.
pub fn parse_route_type(text: &str) -> Option<u8> {
    number_of(ROUTE_TYPES, text)
}

/// A scope's name (`link`) or number.
pub fn scope(id: u8) -> Cow<'static, str> {
    name_of(SCOPES, id)
}

/// A scope from its name (`universe` too, as `ip route` accepts it) or number.
pub fn parse_scope(text: &str) -> Option<u8> {
    match text {
        "universe" => Some(0),
        text => number_of(SCOPES, text),
    }
}

/// An operational state's name (`UP`) or number.
pub fn operstate(id: u8) -> Cow<'static, str> {
    OPERSTATES
        .get(usize::from(id))
        .map_or_else(|| Cow::Owned(id.to_string()), |name| Cow::Borrowed(*name))
}

/// A link mode's name as `ip` prints it (`DEFAULT`, `DORMANT`, `TESTING`) or number.
pub fn link_mode(id: u8) -> Cow<'static, str> {
    match id {
        0 => Cow::Borrowed("DEFAULT"),
        1 => Cow::Borrowed("DORMANT"),
        2 => Cow::Borrowed("TESTING"),
        other => Cow::Owned(other.to_string()),
    }
}

/// A hardware type's name (`ether`) or number.
pub fn link_type(id: u16) -> Cow<'static, str> {
    name_of(LINK_TYPES, id)
}

/// A rule action's name (`lookup`) or number.
pub fn rule_action(id: u8) -> Cow<'static, str> {
    name_of(RULE_ACTIONS, id)
}

/// Interface flags as `ip` lists them: `NO-CARRIER` first when up without carrier, then the
/// named flags in `ip`'s order, then any unnamed rest in hex.
pub fn link_flags(flags: u32) -> Vec<String> {
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
pub fn hw_address(bytes: &[u8]) -> Option<String> {
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
/// address for a host route, `ADDR/LEN` otherwise; addresses as `inet_ntop` writes them: IPv6
/// in lowercase hex with the first longest run of zero groups as `::`, and an IPv4 address
/// carried in IPv6 dotted (`::ffff:192.0.2.1`, and `::1.2.3.4` where `Display` writes
/// `::102:304`).
pub fn route_prefix(addr: IpAddr, len: u8) -> String {
    let mut text = String::with_capacity(if addr.is_ipv4() { 18 } else { 43 });
    push_route_prefix(&mut text, addr, len);
    text
}

/// An address as `ip` prints it, gateways and sources included: `inet_ntop`'s text, as
/// [`route_prefix`] writes a host route's destination.
pub fn address(addr: IpAddr) -> String {
    let full = if addr.is_ipv4() { 32 } else { 128 };
    route_prefix(addr, full)
}

/// Appends [`route_prefix`]'s text to `text` (a printer writing a million routes reuses one
/// buffer).
pub fn push_route_prefix(text: &mut String, addr: IpAddr, len: u8) {
    let full = if addr.is_ipv4() { 32 } else { 128 };
    match (addr, len) {
        (_, 0) => text.push_str("default"),
        // Written by hand: `Display` through `format!` costs several times more, which shows
        // when `ip route show` prints a million routes.
        (IpAddr::V4(v4), len) => {
            push_ipv4(text, v4.octets());
            if len != full {
                text.push('/');
                push_decimal(text, len);
            }
        }
        (IpAddr::V6(v6), len) => {
            push_ipv6(text, &v6);
            if len != full {
                text.push('/');
                push_decimal(text, len);
            }
        }
    }
}

/// Appends an IPv4 address in dotted decimal.
fn push_ipv4(text: &mut String, octets: [u8; 4]) {
    for (idx, octet) in octets.into_iter().enumerate() {
        if idx > 0 {
            text.push('.');
        }
        push_decimal(text, octet);
    }
}

/// Appends an IPv6 address as `inet_ntop`, and so `ip`, writes it: lowercase hex without
/// leading zeros, the first longest run of two or more zero groups as `::` (RFC 5952, as
/// `Display` too), and an IPv4 address carried in IPv6 with its last 32 bits dotted:
/// `::ffff:a.b.c.d` (mapped, as `Display` too) and `::a.b.c.d` (compatible: the first six
/// groups zero and the seventh not, where `Display` writes `::102:304`). Without the
/// formatting machinery, which costs several times more per address.
fn push_ipv6(text: &mut String, addr: &Ipv6Addr) {
    let groups = addr.segments();
    let [.., a, b, c, d] = addr.octets();
    match groups {
        [0, 0, 0, 0, 0, 0xffff, _, _] => {
            text.push_str("::ffff:");
            return push_ipv4(text, [a, b, c, d]);
        }
        [0, 0, 0, 0, 0, 0, seventh, _] if seventh != 0 => {
            text.push_str("::");
            return push_ipv4(text, [a, b, c, d]);
        }
        _ => {}
    }
    let (mut best_at, mut best_len, mut run_at, mut run_len) = (0, 0, 0, 0);
    for (at, group) in groups.iter().enumerate() {
        if *group == 0 {
            if run_len == 0 {
                run_at = at;
            }
            run_len += 1;
            if run_len > best_len {
                (best_at, best_len) = (run_at, run_len);
            }
        } else {
            run_len = 0;
        }
    }
    let zeros = if best_len >= 2 {
        best_at..best_at + best_len
    } else {
        0..0
    };
    let mut at = 0;
    while at < groups.len() {
        if at == zeros.start && !zeros.is_empty() {
            text.push_str("::");
            at = zeros.end;
            continue;
        }
        if at > 0 && at != zeros.end {
            text.push(':');
        }
        push_hex(text, groups[at]);
        at += 1;
    }
}

/// Appends a 16-bit group in lowercase hex without leading zeros.
fn push_hex(text: &mut String, group: u16) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut started = false;
    for shift in [12u16, 8, 4, 0] {
        let digit = (group >> shift) & 0xf;
        if digit != 0 || started || shift == 0 {
            text.push(char::from(DIGITS[usize::from(digit)]));
            started = true;
        }
    }
}

/// Appends a byte in decimal.
fn push_decimal(text: &mut String, value: u8) {
    if value >= 100 {
        text.push(char::from(b'0' + value / 100));
    }
    if value >= 10 {
        text.push(char::from(b'0' + value / 10 % 10));
    }
    text.push(char::from(b'0' + value % 10));
}

/// A rule's source or destination as `ip rule` prints it: `all` when absent.
pub fn rule_prefix(prefix: Option<(IpAddr, u8)>) -> String {
    match prefix {
        None => "all".to_owned(),
        Some((addr, len)) => route_prefix(addr, len).replace("default", "all"),
    }
}

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

/// A number as `ip` reads most (`strtoul` with base 0): `0x` hex, a leading `0` octal, else
/// decimal; no sign.
pub fn c_number<T: TryFrom<u64>>(text: &str) -> Option<T> {
    let (digits, radix) =
        if let Some(hex) = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
            (hex, 16)
        } else if text.len() > 1 && text.starts_with('0') {
            (&text[1..], 8)
        } else {
            (text, 10)
        };
    if digits.is_empty() || digits.starts_with(['+', '-']) {
        return None;
    }
    T::try_from(u64::from_str_radix(digits, radix).ok()?).ok()
}

/// A number as iproute2 reads one in `rt_tables`: decimal or `0x` hex.
fn parse_u32(text: &str) -> Option<u32> {
    match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u32::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    }
}

/// The `*.conf` files of a directory in name order; none when it cannot be read.
fn conf_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "conf") && path.is_file())
        .collect();
    files.sort();
    files
}

/// A prefix as `ip` reads one: `ADDR/LEN`, or a bare address (a host prefix), an IPv4 one
/// also with its trailing zero parts left out (`10/8`).
pub fn parse_prefix(text: &str) -> Option<(std::net::IpAddr, u8)> {
    crate::ipbatch::parse_prefix(text).ok()
}

/// Whether the first `len` bits of `a` and `b` are the same (never for two families): `a`
/// is in the prefix `b/len`.
pub fn same_bits(a: std::net::IpAddr, b: std::net::IpAddr, len: u8) -> bool {
    use std::net::IpAddr;
    let (a, b, width) = match (a, b) {
        (IpAddr::V4(a), IpAddr::V4(b)) => (u128::from(u32::from(a)), u128::from(u32::from(b)), 32),
        (IpAddr::V6(a), IpAddr::V6(b)) => (u128::from(a), u128::from(b), 128),
        _ => return false,
    };
    let len = u32::from(len).min(width);
    if len == 0 {
        return true;
    }
    let shift = width - len;
    (a >> shift) == (b >> shift)
}

#[cfg(test)]
mod tests;
