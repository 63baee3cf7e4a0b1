//! Connection profiles as NetworkManager takes them (`a{sa{sv}}`), built from typed values or
//! from nmcli's `setting.property value` words.
//!
//! [`Settings`] is the profile a caller sends with `AddConnection2` or `Update2`. Its
//! [`Settings::set_text`] takes nmcli's syntax (`ipv4.addresses 192.0.2.1/24`, the aliases
//! `ifname`, `con-name`, `type`, `ip4`, `gw4`, `ip6`, `gw6`, `autoconnect`, ..., and `+prop` /
//! `-prop` for lists) and converts the text by the property's declared kind ([`PROPERTIES`]):
//! addresses become `address-data` (`aa{sv}`, which NetworkManager 1.42 prefers to the legacy
//! `addresses`), routes `route-data`, IPv4 DNS servers `au` and IPv6 ones `aay`, MAC addresses
//! `ay`, enumerations and booleans by name. A wrong property or value is an
//! [`Error::InvalidSetting`] with a one-line message, before anything is sent.

use std::{
    collections::BTreeMap,
    net::{IpAddr, Ipv4Addr, Ipv6Addr},
};

use zbus::{Array, OwnedVariant, Variant};

use crate::{Error, Result};

/// A profile's settings as sent on the wire: setting name → property → value.
pub type SettingsMap = BTreeMap<String, BTreeMap<String, OwnedVariant>>;

/// How a property's text is converted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Kind {
    /// `s`
    Str,
    /// `b`: `yes`/`no`, `true`/`false`, `on`/`off`, `1`/`0`.
    Bool,
    /// `u`
    U32,
    /// `i`
    I32,
    /// `i` with names (`-1`, or a name from the list).
    EnumI32(&'static [(&'static str, i32)]),
    /// `s` restricted to these names.
    Choice(&'static [&'static str]),
    /// `ay`: a MAC address `aa:bb:cc:dd:ee:ff`.
    Mac,
    /// `as`: a comma-separated list.
    Strs,
    /// `aa{sv}` `address-data` of this IP family (4 or 6): `addr/prefix, ...`.
    Addresses(u8),
    /// `aa{sv}` `route-data` of this family: `dest/prefix [next-hop] [metric], ...`.
    Routes(u8),
    /// An IP address of this family as `s` (a gateway).
    Ip(u8),
    /// DNS servers: `au` for IPv4, `aay` for IPv6.
    Dns(u8),
    /// `a{ss}` `key=value, ...` (bond options).
    StrDict,
}

/// One property that [`Settings::set_text`] knows: its setting, name and kind.
#[derive(Debug, Clone, Copy)]
pub struct PropertySpec {
    /// The setting (`ipv4`).
    pub setting: &'static str,
    /// The property (`addresses`; sent as `address-data` for addresses).
    pub name: &'static str,
    /// How its text is converted.
    pub kind: Kind,
}

const fn p(setting: &'static str, name: &'static str, kind: Kind) -> PropertySpec {
    PropertySpec {
        setting,
        name,
        kind,
    }
}

const IP4_METHODS: &[&str] = &["auto", "link-local", "manual", "shared", "disabled"];
const IP6_METHODS: &[&str] = &[
    "ignore",
    "auto",
    "dhcp",
    "link-local",
    "manual",
    "shared",
    "disabled",
];
const TERNARY: &[(&str, i32)] = &[
    ("default", -1),
    ("false", 0),
    ("no", 0),
    ("true", 1),
    ("yes", 1),
];
const ADDR_GEN_MODES: &[(&str, i32)] = &[
    ("eui64", 0),
    ("stable-privacy", 1),
    ("default-or-eui64", 2),
    ("default", 3),
];
const IP6_PRIVACY: &[(&str, i32)] = &[
    ("unknown", -1),
    ("disabled", 0),
    ("enabled-prefer-public-addr", 1),
    ("enabled-prefer-temp-addr", 2),
];

/// The properties [`Settings::set_text`] converts, by setting: connection, ipv4, ipv6,
/// 802-3-ethernet, bridge, bridge-port, bond, vlan, loopback.
pub const PROPERTIES: &[PropertySpec] = &[
    p("802-3-ethernet", "auto-negotiate", Kind::Bool),
    p("802-3-ethernet", "cloned-mac-address", Kind::Str),
    p("802-3-ethernet", "mac-address", Kind::Mac),
    p("802-3-ethernet", "mtu", Kind::U32),
    p("802-3-ethernet", "speed", Kind::U32),
    p("bond", "options", Kind::StrDict),
    p("bridge", "ageing-time", Kind::U32),
    p("bridge", "forward-delay", Kind::U32),
    p("bridge", "hello-time", Kind::U32),
    p("bridge", "mac-address", Kind::Mac),
    p("bridge", "max-age", Kind::U32),
    p("bridge", "priority", Kind::U32),
    p("bridge", "stp", Kind::Bool),
    p("bridge", "vlan-filtering", Kind::Bool),
    p("bridge-port", "hairpin-mode", Kind::Bool),
    p("bridge-port", "path-cost", Kind::U32),
    p("bridge-port", "priority", Kind::U32),
    p("connection", "autoconnect", Kind::Bool),
    p("connection", "autoconnect-priority", Kind::I32),
    p("connection", "autoconnect-retries", Kind::I32),
    p("connection", "autoconnect-slaves", Kind::EnumI32(TERNARY)),
    p("connection", "id", Kind::Str),
    p("connection", "interface-name", Kind::Str),
    p("connection", "master", Kind::Str),
    p("connection", "slave-type", Kind::Str),
    p("connection", "type", Kind::Str),
    p("connection", "uuid", Kind::Str),
    p("connection", "zone", Kind::Str),
    p("ipv4", "addresses", Kind::Addresses(4)),
    p("ipv4", "dhcp-timeout", Kind::I32),
    p("ipv4", "dns", Kind::Dns(4)),
    p("ipv4", "dns-search", Kind::Strs),
    p("ipv4", "gateway", Kind::Ip(4)),
    p("ipv4", "ignore-auto-dns", Kind::Bool),
    p("ipv4", "ignore-auto-routes", Kind::Bool),
    p("ipv4", "may-fail", Kind::Bool),
    p("ipv4", "method", Kind::Choice(IP4_METHODS)),
    p("ipv4", "never-default", Kind::Bool),
    p("ipv4", "route-metric", Kind::I32),
    p("ipv4", "route-table", Kind::U32),
    p("ipv4", "routes", Kind::Routes(4)),
    p("ipv6", "addr-gen-mode", Kind::EnumI32(ADDR_GEN_MODES)),
    p("ipv6", "addresses", Kind::Addresses(6)),
    p("ipv6", "dhcp-timeout", Kind::I32),
    p("ipv6", "dns", Kind::Dns(6)),
    p("ipv6", "dns-search", Kind::Strs),
    p("ipv6", "gateway", Kind::Ip(6)),
    p("ipv6", "ignore-auto-dns", Kind::Bool),
    p("ipv6", "ignore-auto-routes", Kind::Bool),
    p("ipv6", "ip6-privacy", Kind::EnumI32(IP6_PRIVACY)),
    p("ipv6", "may-fail", Kind::Bool),
    p("ipv6", "method", Kind::Choice(IP6_METHODS)),
    p("ipv6", "never-default", Kind::Bool),
    p("ipv6", "route-metric", Kind::I32),
    p("ipv6", "route-table", Kind::U32),
    p("ipv6", "routes", Kind::Routes(6)),
    p("loopback", "mtu", Kind::U32),
    p("vlan", "flags", Kind::U32),
    p("vlan", "id", Kind::U32),
    p("vlan", "parent", Kind::Str),
];

/// nmcli's aliases: a word for `setting.property`. Where several settings have a property under
/// the same alias (`mac`, `mtu`), the connection type decides: the alias names the property
/// of the one setting that type can have, and is ambiguous (an error, as in nmcli) where the
/// type can have several ([`lookup_for`]).
const ALIASES: &[(&str, &[&str])] = &[
    ("autoconnect", &["connection.autoconnect"]),
    ("con-name", &["connection.id"]),
    ("controller", &["connection.master"]),
    ("dev", &["vlan.parent"]),
    ("gw4", &["ipv4.gateway"]),
    ("gw6", &["ipv6.gateway"]),
    ("id", &["vlan.id"]),
    ("ifname", &["connection.interface-name"]),
    ("ip4", &["ipv4.addresses"]),
    ("ip6", &["ipv6.addresses"]),
    ("mac", &["802-3-ethernet.mac-address", "bridge.mac-address"]),
    ("master", &["connection.master"]),
    ("mtu", &["802-3-ethernet.mtu", "loopback.mtu"]),
    ("port-type", &["connection.slave-type"]),
    ("slave-type", &["connection.slave-type"]),
    ("type", &["connection.type"]),
];

/// The settings (besides `connection`, `ipv4`, `ipv6` and the port settings) a profile of
/// connection type `kind` may have, as libnm's table of valid settings says; `None` for a
/// type this module does not describe.
fn type_settings(kind: &str) -> Option<&'static [&'static str]> {
    Some(match kind {
        "802-3-ethernet" => &["802-3-ethernet"],
        "bridge" => &["bridge", "802-3-ethernet"],
        "bond" => &["bond", "802-3-ethernet"],
        "vlan" => &["vlan", "802-3-ethernet"],
        "loopback" => &["loopback"],
        _ => return None,
    })
}

/// Whether a profile of type `kind` may have setting `setting`.
fn type_has(kind: &str, setting: &str) -> bool {
    matches!(
        setting,
        "connection" | "ipv4" | "ipv6" | "bridge-port" | "team-port"
    ) || type_settings(kind).is_none_or(|s| s.contains(&setting))
}

/// nmcli's short names of settings (and of `connection.type` values).
const SETTING_ALIASES: &[(&str, &str)] = &[
    ("con", "connection"),
    ("eth", "802-3-ethernet"),
    ("ethernet", "802-3-ethernet"),
    ("wifi", "802-11-wireless"),
];

/// The full setting name of `name` (`ethernet` → `802-3-ethernet`).
pub fn setting_name(name: &str) -> &str {
    SETTING_ALIASES
        .iter()
        .find(|(alias, _)| *alias == name)
        .map_or(name, |(_, full)| full)
}

/// The property `key` names (`ip4`, `ipv4.addresses`, `ethernet.mtu`), if known. An alias
/// that several settings share (`mac`) names the first: see [`lookup_for`] to resolve it by
/// the profile's type, as nmcli does.
pub fn lookup(key: &str) -> Result<&'static PropertySpec> {
    lookup_for(None, key)
}

/// The property `key` names in a profile of connection type `kind` (`None`: not known yet).
/// An alias resolves among the settings that type may have: to none, it is invalid (`id` on
/// an Ethernet profile); to several, ambiguous (`mac` on a bridge, which may have both
/// `802-3-ethernet.mac-address` and `bridge.mac-address`); both errors in nmcli's words.
pub fn lookup_for(kind: Option<&str>, key: &str) -> Result<&'static PropertySpec> {
    let full = match ALIASES.iter().find(|(alias, _)| *alias == key) {
        None => key,
        Some((_, candidates)) => {
            let Some(kind) = kind.map(setting_name) else {
                return lookup_full(key, candidates[0]);
            };
            let valid: Vec<&'static str> = candidates
                .iter()
                .copied()
                .filter(|c| type_has(kind, c.split_once('.').map_or(*c, |(s, _)| s)))
                .collect();
            match valid.as_slice() {
                [] => return Err(invalid(format!("invalid <setting>.<property> '{key}'"))),
                [one] => *one,
                several => {
                    let names: Vec<String> = several
                        .iter()
                        .map(|c| format!("{}.{key}", c.split_once('.').map_or(*c, |(s, _)| s)))
                        .collect();
                    return Err(invalid(format!(
                        "'{key}' is ambiguous ({})",
                        names.join(" or ")
                    )));
                }
            }
        }
    };
    lookup_full(key, full)
}

/// The property `full` (`setting.property`) that the user wrote as `key`.
fn lookup_full(key: &str, full: &str) -> Result<&'static PropertySpec> {
    let Some((setting, name)) = full.split_once('.') else {
        return Err(invalid(format!(
            "invalid property '{key}': not setting.property"
        )));
    };
    let setting = setting_name(setting);
    if !PROPERTIES.iter().any(|s| s.setting == setting) {
        return Err(invalid(format!(
            "invalid property '{key}': unknown setting '{setting}'"
        )));
    }
    PROPERTIES
        .iter()
        .find(|s| s.setting == setting && s.name == name)
        .ok_or_else(|| {
            invalid(format!(
                "invalid property '{key}': setting '{setting}' has no property '{name}'"
            ))
        })
}

/// How `+prop` / `-prop` / `prop` change a property.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// Replace the value.
    Set,
    /// Append to a list.
    Append,
    /// Remove from a list.
    Remove,
}

/// A connection profile to send: setting → property → value.
#[derive(Debug, Default)]
pub struct Settings {
    map: SettingsMap,
    explicit_method: [bool; 2],
}

impl Settings {
    /// An empty profile.
    pub fn new() -> Self {
        Self::default()
    }

    /// A new profile of `kind` (`802-3-ethernet`, `bridge`, ...; nmcli's `ethernet` works)
    /// named `id`, with a fresh UUID.
    pub fn profile(kind: &str, id: &str) -> Result<Self> {
        let mut s = Self::new();
        let kind = setting_name(kind);
        s.set("connection", "type", Variant::from(kind))?;
        s.set("connection", "id", Variant::from(id))?;
        s.set("connection", "uuid", Variant::from(new_uuid()?))?;
        s.map.entry(kind.to_owned()).or_default();
        if kind == "vlan" {
            // libnm's default (reorder-headers), which nmcli sends; the daemon's is 0.
            s.set("vlan", "flags", Variant::from(1u32))?;
        }
        Ok(s)
    }

    /// The settings a daemon sent (`GetSettings`), to change and send back.
    pub fn from_map(map: SettingsMap) -> Self {
        Self {
            map,
            explicit_method: [true; 2],
        }
    }

    /// Set `setting.property` to `value` as is.
    pub fn set(&mut self, setting: &str, property: &str, value: Variant<'_>) -> Result<&mut Self> {
        let value = value
            .try_into_owned()
            .map_err(|e| invalid(format!("{setting}.{property}: {e}")))?;
        self.map
            .entry(setting.to_owned())
            .or_default()
            .insert(property.to_owned(), value);
        Ok(self)
    }

    /// The value of `setting.property`, if set.
    pub fn get(&self, setting: &str, property: &str) -> Option<&OwnedVariant> {
        self.map.get(setting)?.get(property)
    }

    /// The map to send.
    pub fn map(&self) -> &SettingsMap {
        &self.map
    }

    /// The map to send, taken.
    pub fn into_map(self) -> SettingsMap {
        self.map
    }

    /// Apply nmcli's `[+|-]setting.property value` (or an alias such as `ip4`), converting
    /// `value` by the property's kind. An empty `value` clears the property.
    pub fn set_text(&mut self, key: &str, value: &str) -> Result<&mut Self> {
        let (op, bare) = match key.as_bytes().first() {
            Some(b'+') => (Op::Append, &key[1..]),
            Some(b'-') => (Op::Remove, &key[1..]),
            _ => (Op::Set, key),
        };
        let kind = self.get("connection", "type").and_then(|v| match &**v {
            Variant::Str(s) => Some(s.as_str().to_owned()),
            _ => None,
        });
        let spec = lookup_for(kind.as_deref(), bare)?;
        self.apply(spec, op, value)
    }

    /// Apply a list of nmcli words: `key value key value ...`.
    pub fn set_words<S: AsRef<str>>(&mut self, words: &[S]) -> Result<&mut Self> {
        let mut it = words.iter();
        while let Some(key) = it.next() {
            let key = key.as_ref();
            let Some(value) = it.next() else {
                return Err(invalid(format!("value for '{key}' is missing")));
            };
            self.set_text(key, value.as_ref())?;
        }
        Ok(self)
    }

    fn apply(&mut self, spec: &PropertySpec, op: Op, text: &str) -> Result<&mut Self> {
        let key = format!("{}.{}", spec.setting, spec.name);
        let wire_name = match spec.kind {
            Kind::Addresses(_) => "address-data",
            Kind::Routes(_) => "route-data",
            _ => spec.name,
        };
        if spec.name == "method" {
            self.explicit_method[usize::from(spec.setting == "ipv6")] = true;
        }
        let is_list = matches!(
            spec.kind,
            Kind::Addresses(_) | Kind::Routes(_) | Kind::Dns(_) | Kind::Strs
        );
        if op != Op::Set && !is_list {
            return Err(invalid(format!(
                "'{key}' is not a list: '+' and '-' need one"
            )));
        }
        if op == Op::Set && text.trim().is_empty() {
            // nmcli: an empty value resets the property to its default.
            let setting = self.map.entry(spec.setting.to_owned()).or_default();
            setting.remove(wire_name);
            setting.remove(spec.name);
            return Ok(self);
        }
        let value = convert(spec, &key, text)?;
        let setting = self.map.entry(spec.setting.to_owned()).or_default();
        match spec.kind {
            // The legacy forms would compete with the ones we send.
            Kind::Addresses(_) => {
                setting.remove("addresses");
            }
            Kind::Routes(_) => {
                setting.remove("routes");
            }
            _ => {}
        }
        let value = match (op, setting.get(wire_name)) {
            (Op::Set, _) | (Op::Append, None) => value,
            (Op::Remove, None) => return Ok(self),
            (Op::Append, Some(old)) => {
                let (Variant::Array(old), Variant::Array(new)) = (&**old, &*value) else {
                    return Err(invalid(format!("'{key}' is not a list")));
                };
                let mut merged = old.try_clone().map_err(|e| invalid(e.to_string()))?;
                for item in new.inner() {
                    if !old.inner().contains(item) {
                        merged
                            .append(item.try_clone().map_err(|e| invalid(e.to_string()))?)
                            .map_err(|e| invalid(e.to_string()))?;
                    }
                }
                own(Variant::Array(merged))?
            }
            (Op::Remove, Some(old)) => {
                let (Variant::Array(old), Variant::Array(gone)) = (&**old, &*value) else {
                    return Err(invalid(format!("'{key}' is not a list")));
                };
                let mut kept = Array::new(old.element_signature());
                for item in old.inner() {
                    if !gone.inner().iter().any(|g| same_item(g, item)) {
                        kept.append(item.try_clone().map_err(|e| invalid(e.to_string()))?)
                            .map_err(|e| invalid(e.to_string()))?;
                    }
                }
                own(Variant::Array(kept))?
            }
        };
        setting.insert(wire_name.to_owned(), value);
        // As nmcli: an IP setting without a method is `auto` (NetworkManager refuses it
        // without one).
        if matches!(spec.setting, "ipv4" | "ipv6") && !setting.contains_key("method") {
            setting.insert("method".to_owned(), own(Variant::from("auto"))?);
        }
        // nmcli: addresses without an explicit method mean `manual`.
        if let Kind::Addresses(family) = spec.kind {
            let idx = usize::from(family == 6);
            if !self.explicit_method[idx] && op != Op::Remove && !text.trim().is_empty() {
                let setting = self.map.entry(spec.setting.to_owned()).or_default();
                setting.insert("method".to_owned(), own(Variant::from("manual"))?);
            }
        }
        Ok(self)
    }
}

/// Whether list item `gone` (built from the caller's text) names `item` (from the daemon):
/// equal, or for `a{sv}` items, equal in every key `gone` has.
fn same_item(gone: &Variant<'_>, item: &Variant<'_>) -> bool {
    if gone == item {
        return true;
    }
    let (Variant::Dict(g), Variant::Dict(i)) = (gone, item) else {
        return false;
    };
    g.iter()
        .all(|(k, v)| i.iter().any(|(ik, iv)| ik == k && strip(iv) == strip(v)))
}

fn strip<'a, 'b>(v: &'a Variant<'b>) -> &'a Variant<'b> {
    match v {
        Variant::Variant(inner) => inner,
        other => other,
    }
}

fn invalid(message: String) -> Error {
    Error::InvalidSetting(message)
}

fn own(v: Variant<'_>) -> Result<OwnedVariant> {
    v.try_into_owned().map_err(|e| invalid(e.to_string()))
}

/// Convert `text` as `spec` says.
pub fn convert(spec: &PropertySpec, key: &str, text: &str) -> Result<OwnedVariant> {
    let text = text.trim();
    let bad = |what: &str| invalid(format!("invalid value '{text}' for '{key}': {what}"));
    let items = || {
        text.split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>()
    };
    let v: Variant<'static> = match spec.kind {
        // `type ethernet` is `802-3-ethernet`, as in nmcli.
        Kind::Str if spec.setting == "connection" && spec.name == "type" => {
            Variant::from(setting_name(text).to_owned())
        }
        Kind::Str => Variant::from(text.to_owned()),
        Kind::Bool => Variant::from(parse_bool(text).ok_or_else(|| bad("expected yes or no"))?),
        Kind::U32 => Variant::from(
            text.parse::<u32>()
                .map_err(|_| bad("expected a number from 0 to 4294967295"))?,
        ),
        Kind::I32 => Variant::from(text.parse::<i32>().map_err(|_| bad("expected a number"))?),
        Kind::EnumI32(names) => {
            let n = match names.iter().find(|(n, _)| *n == text) {
                Some((_, v)) => *v,
                None => text.parse::<i32>().map_err(|_| {
                    let all: Vec<&str> = names.iter().map(|(n, _)| *n).collect();
                    bad(&format!("expected one of {}", all.join(", ")))
                })?,
            };
            Variant::from(n)
        }
        Kind::Choice(names) => {
            if !names.contains(&text) {
                return Err(bad(&format!("expected one of {}", names.join(", "))));
            }
            Variant::from(text.to_owned())
        }
        Kind::Mac => Variant::from(parse_mac(text).ok_or_else(|| bad("expected a MAC address"))?),
        Kind::Strs => Variant::from(items().into_iter().map(str::to_owned).collect::<Vec<_>>()),
        Kind::StrDict => {
            let mut dict = BTreeMap::new();
            for item in items() {
                let (k, v) = item
                    .split_once('=')
                    .ok_or_else(|| bad("expected key=value"))?;
                dict.insert(k.trim().to_owned(), v.trim().to_owned());
            }
            Variant::from(dict)
        }
        Kind::Ip(family) => {
            if text.is_empty() {
                Variant::from(String::new())
            } else {
                let ip = parse_ip(text, family).ok_or_else(|| bad(family_word(family)))?;
                Variant::from(ip.to_string())
            }
        }
        Kind::Dns(4) => {
            let mut v = Vec::new();
            for item in items() {
                let ip: Ipv4Addr = item.parse().map_err(|_| bad("expected IPv4 addresses"))?;
                v.push(u32::from_ne_bytes(ip.octets()));
            }
            Variant::from(v)
        }
        Kind::Dns(_) => {
            let mut v = Vec::new();
            for item in items() {
                let ip: Ipv6Addr = item.parse().map_err(|_| bad("expected IPv6 addresses"))?;
                v.push(ip.octets().to_vec());
            }
            Variant::from(v)
        }
        Kind::Addresses(family) => {
            let mut v: Vec<BTreeMap<String, Variant<'static>>> = Vec::new();
            for item in items() {
                let (ip, prefix) = parse_prefix(item, family, true)
                    .ok_or_else(|| bad(&format!("'{item}' is not an {}", cidr_word(family))))?;
                let mut entry = BTreeMap::new();
                entry.insert("address".to_owned(), Variant::from(ip.to_string()));
                entry.insert("prefix".to_owned(), Variant::from(prefix));
                v.push(entry);
            }
            Variant::from(v)
        }
        Kind::Routes(family) => {
            let mut v: Vec<BTreeMap<String, Variant<'static>>> = Vec::new();
            for item in items() {
                let mut words = item.split_whitespace();
                let dest = words.next().unwrap_or_default();
                let (ip, prefix) = parse_prefix(dest, family, false)
                    .ok_or_else(|| bad(&format!("'{dest}' is not an {}", cidr_word(family))))?;
                let mut entry = BTreeMap::new();
                entry.insert("dest".to_owned(), Variant::from(ip.to_string()));
                entry.insert("prefix".to_owned(), Variant::from(prefix));
                for word in words {
                    if let Some(hop) = parse_ip(word, family) {
                        if entry.contains_key("next-hop") {
                            return Err(bad("two next hops"));
                        }
                        entry.insert("next-hop".to_owned(), Variant::from(hop.to_string()));
                    } else if let Ok(metric) = word.parse::<u32>() {
                        entry.insert("metric".to_owned(), Variant::from(metric));
                    } else {
                        return Err(bad(&format!("'{word}' is neither a next hop nor a metric")));
                    }
                }
                v.push(entry);
            }
            Variant::from(v)
        }
    };
    own(v)
}

fn family_word(family: u8) -> &'static str {
    if family == 4 {
        "expected an IPv4 address"
    } else {
        "expected an IPv6 address"
    }
}

fn cidr_word(family: u8) -> &'static str {
    if family == 4 {
        "IPv4 address with a prefix (192.0.2.1/24)"
    } else {
        "IPv6 address with a prefix (2001:db8::1/64)"
    }
}

/// `yes`/`no` and nmcli's other spellings.
pub fn parse_bool(text: &str) -> Option<bool> {
    match text.to_ascii_lowercase().as_str() {
        "yes" | "true" | "on" | "1" => Some(true),
        "no" | "false" | "off" | "0" => Some(false),
        _ => None,
    }
}

fn parse_mac(text: &str) -> Option<Vec<u8>> {
    let bytes: Vec<u8> = text
        .split([':', '-'])
        .map(|b| {
            (b.len() == 2)
                .then(|| u8::from_str_radix(b, 16).ok())
                .flatten()
        })
        .collect::<Option<_>>()?;
    (bytes.len() == 6).then_some(bytes)
}

fn parse_ip(text: &str, family: u8) -> Option<IpAddr> {
    let ip: IpAddr = text.parse().ok()?;
    (ip.is_ipv4() == (family == 4)).then_some(ip)
}

/// `addr/prefix` (without a prefix: a host address, as nmcli).
fn parse_prefix(text: &str, family: u8, _host: bool) -> Option<(IpAddr, u32)> {
    let (ip, prefix) = match text.split_once('/') {
        Some((ip, prefix)) => (ip, Some(prefix.parse::<u32>().ok()?)),
        None => (text, None),
    };
    let ip = parse_ip(ip, family)?;
    let max = if family == 4 { 32 } else { 128 };
    let prefix = prefix.unwrap_or(max);
    (prefix <= max).then_some((ip, prefix))
}

/// A random (version 4) UUID, from the kernel's random source.
fn new_uuid() -> Result<String> {
    let mut b = [0u8; 16];
    let mut f = std::fs::File::open("/dev/urandom")
        .map_err(|e| invalid(format!("cannot make a UUID: {e}")))?;
    std::io::Read::read_exact(&mut f, &mut b)
        .map_err(|e| invalid(format!("cannot make a UUID: {e}")))?;
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    Ok(format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn err(key: &str, value: &str) -> String {
        Settings::new()
            .set_text(key, value)
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn aliases_and_kinds_convert() {
        let mut s = Settings::profile("ethernet", "x").unwrap();
        s.set_words(&[
            "ifname",
            "veth0",
            "ip4",
            "192.0.2.1/24",
            "gw4",
            "192.0.2.254",
            "ipv6.dns",
            "2001:db8::53",
            "ipv4.dns",
            "192.0.2.53",
            "autoconnect",
            "no",
            "mac",
            "02:00:00:00:00:01",
            "ipv4.routes",
            "198.51.100.0/24 192.0.2.2 10",
        ])
        .unwrap();
        assert_eq!(
            s.get("connection", "type").unwrap().to_string(),
            "\"802-3-ethernet\""
        );
        assert_eq!(s.get("ipv4", "method").unwrap().to_string(), "\"manual\"");
        assert_eq!(
            s.get("ipv4", "address-data").unwrap().to_string(),
            "[{\"address\": <\"192.0.2.1\">, \"prefix\": <uint32 24>}]"
        );
        assert_eq!(
            s.get("ipv4", "dns").unwrap().to_string(),
            "[uint32 889323712]"
        );
        assert_eq!(
            s.get("connection", "autoconnect").unwrap().to_string(),
            "false"
        );
        assert_eq!(
            s.get("802-3-ethernet", "mac-address").unwrap().to_string(),
            "[byte 0x02, 0x00, 0x00, 0x00, 0x00, 0x01]"
        );
        assert!(
            s.get("ipv4", "route-data")
                .unwrap()
                .to_string()
                .contains("next-hop")
        );
        assert!(s.get("connection", "uuid").is_some());
    }

    #[test]
    fn shared_aliases_resolve_by_the_connection_type() {
        let key = |kind: &str, alias: &str| {
            lookup_for(Some(kind), alias).map(|s| format!("{}.{}", s.setting, s.name))
        };
        assert_eq!(
            key("ethernet", "mac").unwrap(),
            "802-3-ethernet.mac-address"
        );
        assert_eq!(key("bond", "mac").unwrap(), "802-3-ethernet.mac-address");
        assert_eq!(key("loopback", "mtu").unwrap(), "loopback.mtu");
        assert_eq!(key("bridge", "mtu").unwrap(), "802-3-ethernet.mtu");
        assert_eq!(key("vlan", "id").unwrap(), "vlan.id");
        assert_eq!(
            key("bridge", "mac").unwrap_err().to_string(),
            "'mac' is ambiguous (802-3-ethernet.mac or bridge.mac)"
        );
        assert_eq!(
            key("ethernet", "id").unwrap_err().to_string(),
            "invalid <setting>.<property> 'id'"
        );
        // The full name is never ambiguous; a profile's own type decides in set_text.
        assert_eq!(
            key("bridge", "bridge.mac-address").unwrap(),
            "bridge.mac-address"
        );
        let mut bridge = Settings::profile("bridge", "b").unwrap();
        assert!(bridge.set_text("mac", "02:00:00:00:00:01").is_err());
        assert!(bridge.get("bridge", "mac-address").is_none());
        assert!(bridge.get("802-3-ethernet", "mac-address").is_none());
    }

    #[test]
    fn lists_take_plus_and_minus() {
        let mut s = Settings::new();
        s.set_text("ipv4.addresses", "192.0.2.1/24, 192.0.2.2/24")
            .unwrap();
        s.set_text("+ipv4.addresses", "192.0.2.3/24").unwrap();
        s.set_text("-ipv4.addresses", "192.0.2.1/24").unwrap();
        let v = s.get("ipv4", "address-data").unwrap().to_string();
        assert!(!v.contains("192.0.2.1\""), "{v}");
        assert!(v.contains("192.0.2.2") && v.contains("192.0.2.3"), "{v}");
    }

    #[test]
    fn bad_input_is_one_line() {
        assert_eq!(
            err("ipv4.adresses", "x"),
            "invalid property 'ipv4.adresses': setting 'ipv4' has no property 'adresses'"
        );
        assert_eq!(
            err("foo.bar", "x"),
            "invalid property 'foo.bar': unknown setting 'foo'"
        );
        assert_eq!(
            err("ip4", "192.0.2.300/24"),
            "invalid value '192.0.2.300/24' for 'ipv4.addresses': '192.0.2.300/24' is not an \
             IPv4 address with a prefix (192.0.2.1/24)"
        );
        assert_eq!(
            err("ipv4.method", "static"),
            "invalid value 'static' for 'ipv4.method': expected one of auto, link-local, \
             manual, shared, disabled"
        );
        assert_eq!(
            err("autoconnect", "maybe"),
            "invalid value 'maybe' for 'connection.autoconnect': expected yes or no"
        );
        assert_eq!(
            err("+ifname", "x"),
            "'connection.interface-name' is not a list: '+' and '-' need one"
        );
        assert_eq!(err("ip6", "192.0.2.1/24").lines().count(), 1);
    }
}
