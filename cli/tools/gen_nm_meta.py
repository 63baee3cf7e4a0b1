#!/usr/bin/env python3
"""Generates cli/src/nm_meta.rs from nmcli's own tables: which settings `nmcli connection show`
prints and in what order, each setting's properties in nmcli's order (and those it hides while
they hold their default), and how nmcli names the numbers of the properties that are
enumerations, flags, or numbers with named values (`0x6 (enabled, also-without-sysctl)`,
`1 (true)`, `-1 (default)`, `phy`).

The settings nmcli prints come from `NMC_FIELDS_SETTINGS_NAMES_ALL` (nmcli/connections.c);
the properties from the property table (libnmc-setting/nm-meta-setting-desc.c).

nmcli decides this per property in its property table (libnmc-setting/nm-meta-setting-desc.c):
the property's type (`_pt_gobject_enum`, `_pt_gobject_ternary`, `_pt_gobject_int`), the GType
whose values it names, the names it adds or puts first (`value_infos`), the base of a number,
and whether people's and the terse form show the number, the name or both. This reads that
table from NetworkManager's source at the release of the installed nmcli, resolves the
constants from libnm's public headers, and reads each enumeration's and flags type's values
and names from the installed libnm itself (through GObject's type system, with ctypes), so
that the names are the ones nmcli prints.

    git -C NM_REPO archive 1.42.4 src/libnm-core-public src/libnm-base src/libnmc-setting src/nmcli \
        | tar -x -C /tmp/nm
    python3 cli/tools/gen_nm_meta.py /tmp/nm > cli/src/nm_meta.rs
    cargo fmt --all

Needs libnm.so.0 and libgobject-2.0.so.0 (Debian's libnm0, installed with network-manager).
`connection_show_equals_nmcli_for_every_type` compares the result with nmcli.
"""

import ctypes
import glob
import os
import re
import sys

SRC = sys.argv[1] if len(sys.argv) > 1 else "."
DESC = os.path.join(SRC, "src/libnmc-setting/nm-meta-setting-desc.c")
CONNECTIONS = os.path.join(SRC, "src/nmcli/connections.c")
HEADERS = glob.glob(os.path.join(SRC, "src/libnm-core-public/*.h")) + [
    os.path.join(SRC, "src/libnm-base/nm-ethtool-utils-base.h")]

# Constants: `#define NAME value` of the public headers (strings and numbers), and GLib's.
DEFINES = {"G_MAXINT32": "2147483647", "G_MAXUINT16": "65535", "G_MAXUINT32": "4294967295"}
for header in HEADERS:
    for name, value in re.findall(r"^#define\s+(\w+)\s+(?:\\\n\s*)?(\"[^\"]*\"|-?\w+)\s*$",
                                  open(header).read(), re.M):
        DEFINES.setdefault(name, value)


def string(name):
    value = DEFINES.get(name, "")
    if not value.startswith('"'):
        sys.exit(f"no string for {name}")
    return value.strip('"')


def number(token):
    seen = set()
    while not re.fullmatch(r"-?(0x[0-9a-fA-F]+|\d+)", token):
        if token in seen or token not in DEFINES:
            return None
        seen.add(token)
        token = DEFINES[token]
    return int(token, 0)


gobject = ctypes.CDLL("libgobject-2.0.so.0")
libnm = ctypes.CDLL("libnm.so.0")
gobject.g_type_class_ref.restype = ctypes.c_void_p
gobject.g_type_class_ref.argtypes = [ctypes.c_size_t]
gobject.g_type_fundamental.restype = ctypes.c_size_t
gobject.g_type_fundamental.argtypes = [ctypes.c_size_t]
gobject.g_object_class_find_property.restype = ctypes.c_void_p
gobject.g_object_class_find_property.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
G_TYPE_ENUM = 12 << 2
G_TYPE_FLAGS = 13 << 2


class EnumValue(ctypes.Structure):
    _fields_ = [("value", ctypes.c_int), ("name", ctypes.c_char_p), ("nick", ctypes.c_char_p)]


class EnumClass(ctypes.Structure):
    _fields_ = [("g_type", ctypes.c_size_t), ("minimum", ctypes.c_int),
                ("maximum", ctypes.c_int), ("n_values", ctypes.c_uint),
                ("values", ctypes.POINTER(EnumValue))]


class FlagsValue(ctypes.Structure):
    _fields_ = [("value", ctypes.c_uint), ("name", ctypes.c_char_p), ("nick", ctypes.c_char_p)]


class FlagsClass(ctypes.Structure):
    _fields_ = [("g_type", ctypes.c_size_t), ("mask", ctypes.c_uint),
                ("n_values", ctypes.c_uint), ("values", ctypes.POINTER(FlagsValue))]


class ParamSpec(ctypes.Structure):
    _fields_ = [("g_class", ctypes.c_void_p), ("name", ctypes.c_char_p),
                ("flags", ctypes.c_int), ("value_type", ctypes.c_size_t)]


def get_type(function):
    f = getattr(libnm, function)
    f.restype = ctypes.c_size_t
    return f()


def pspec_type(setting_type, prop):
    """The GType of a setting property's value, as libnm declares it."""
    klass = gobject.g_type_class_ref(get_type(f"nm_setting_{setting_type.lower()}_get_type"))
    pspec = gobject.g_object_class_find_property(klass, prop.encode())
    if not pspec:
        sys.exit(f"no property {prop} in {setting_type}")
    return ctypes.cast(pspec, ctypes.POINTER(ParamSpec)).contents.value_type


def values_of(gtype):
    """(is flags, [(value, name, nick)]) in declaration order."""
    fundamental = gobject.g_type_fundamental(gtype)
    klass = gobject.g_type_class_ref(gtype)
    if fundamental == G_TYPE_ENUM:
        c = ctypes.cast(klass, ctypes.POINTER(EnumClass)).contents
    elif fundamental == G_TYPE_FLAGS:
        c = ctypes.cast(klass, ctypes.POINTER(FlagsClass)).contents
    else:
        sys.exit(f"type {gtype} is neither an enumeration nor flags")
    values = [(c.values[i].value, c.values[i].name.decode(), c.values[i].nick.decode())
              for i in range(c.n_values)]
    return fundamental == G_TYPE_FLAGS, values


def is_number(text, signed):
    body = text[1:] if signed and text.startswith("-") else text
    return bool(re.fullmatch(r"\d+", body)) or bool(re.fullmatch(r"0[xX][0-9a-fA-F]+", body))


def valid_enum_nick(nick):
    return nick and not re.search(r"\s", nick) and not is_number(nick, True)


def valid_flags_nick(nick):
    # libnm's flags separators: space, tab, comma, `|`.
    return nick and not re.search(r"[\s,|]", nick) and not is_number(nick, False)


def infos(body, key, resolve):
    """The `{ .value = X, .nick = "n" }` entries of `.key = ENUM_VALUE_INFOS (...)`."""
    m = re.search(r"\." + key + r"\s*=\s*(?:ENUM|INT)_VALUE_INFOS\s*\(", body)
    if not m:
        return None
    depth, i = 1, m.end()
    while depth:
        depth += {"(": 1, ")": -1}.get(body[i], 0)
        i += 1
    entries = re.findall(r"\.value(?:\.\w+)?\s*=\s*([-\w]+),\s*\.nick\s*=\s*\"([^\"]*)\"",
                         body[m.end():i])
    return [(resolve(value), nick) for value, nick in entries]


TYP_FLAG = "NM_META_PROPERTY_TYP_FLAG_ENUM_GET_"


def modes(flags):
    """nmcli's (people's, terse) choice of number, hex and name, as _get_fcn_gobject_enum
    makes it: (numeric, hex, hex where the type is flags, text)."""
    pretty = [f for f in flags if f.startswith("PRETTY_")]
    parsable = [f for f in flags if f.startswith("PARSABLE_")]
    if pretty:
        hex_ = "PRETTY_NUMERIC_HEX" in pretty
        people = (hex_ or "PRETTY_NUMERIC" in pretty, hex_, False,
                  "PRETTY_TEXT" in pretty or "PRETTY_TEXT_L10N" in pretty)
    else:
        people = (True, False, True, True)
    if parsable:
        # nmcli computes the terse number from a flag that is still false here, so the
        # terse form of such a property never has the number.
        terse = (False, "PARSABLE_NUMERIC_HEX" in parsable, False, "PARSABLE_TEXT" in parsable)
    else:
        terse = (True, False, True, False)
    return people, terse


def rust_str(text):
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


# The forms a number takes, by (number, hex, name), as constants of the generated file.
MODES = {
    (True, False, False): "NUMBER",
    (True, True, False): "HEX",
    (False, False, True): "NAME",
    (True, False, True): "NUMBER_NAME",
    (True, True, True): "HEX_NAME",
}


def rust_mode(mode, is_flags):
    numeric, hex_, hex_flags, text = mode
    return MODES[(numeric, hex_ or (hex_flags and is_flags), text)]


# Name tables that several properties share, as constants (by their text).
tables = {}


def rust_table(entries, user):
    text = "&[" + ", ".join(f"({value}, {rust_str(nick)})" for value, nick in entries) + "]"
    if text == "&[]":
        return text
    # Named after its first property; nmcli's ternary (`NMTernary`) by what it is.
    name = "TERNARY" if entries == [(-1, "default"), (0, "false"), (1, "true")] else \
        "NAMES_" + f"{user[0]}_{user[1]}".upper().replace("-", "_")
    known = tables.setdefault(text, [name, 0])
    known[1] += 1
    return "\0" + text + "\0"


src = open(DESC).read()
entries = []  # (setting name, property, rust expression)
properties = {}  # setting name -> [(property, hidden while default)], nmcli's order
known = []  # every setting nmcli's table has
macs = []  # (setting, property) of the hardware addresses nmcli prints as `AA:BB:...`
current = None
for m in re.finditer(r"#define _CURRENT_NM_META_SETTING_TYPE NM_META_SETTING_TYPE_(\w+)|"
                     r"PROPERTY_INFO(?:_WITH_DESC|_INIT|(_ETHTOOL))?\s*\(\s*(\w+)\s*,?", src):
    if m.group(1):
        current = m.group(1)
        known.append(string(f"NM_SETTING_{current}_SETTING_NAME"))
        continue
    name = f"NM_ETHTOOL_OPTNAME_{m.group(3)}" if m.group(2) else m.group(3)
    # (The definitions of the macros themselves name no property.)
    if not current or not re.fullmatch(r"NM_(SETTING|ETHTOOL_OPTNAME)_\w*[A-Z0-9]", name) \
            or m.group(3) == "xname":
        continue
    rest = src[m.end():]
    following = re.search(r"PROPERTY_INFO|#undef\s+_CURRENT_NM_META_SETTING_TYPE", rest)
    body = rest[:following.start() if following else len(rest)]
    setting = string(f"NM_SETTING_{current}_SETTING_NAME")
    prop = string(name)
    hidden = bool(m.group(2)) or bool(re.search(r"\.hide_if_default\s*=\s*TRUE", body))
    properties.setdefault(setting, []).append((prop, hidden))
    if re.search(r"\.property_type\s*=\s*&_pt_gobject_mac\b", body):
        macs.append((setting, prop))
    kind = re.search(r"\.property_type\s*=\s*&_pt_gobject_(enum|ternary|int)\b", body)
    if not kind:
        continue
    kind = kind.group(1)
    if kind == "int":
        names = infos(body, "value_infos", number)
        base = re.search(r"\.base\s*=\s*(\d+)", body)
        hex_ = bool(base and base.group(1) == "16")
        if not names and not hex_:
            continue
        names = names or []
        if any(value is None for value, _ in names):
            sys.exit(f"unresolved value in {setting}.{prop}")
        table = rust_table(names, (setting, prop))
        entries.append((setting, prop, f"Names::Number {{ hex: {str(hex_).lower()}, "
                                       f"names: {table} }}"))
        continue
    gtype_fn = re.search(r"\.get_gtype\s*=\s*(\w+)", body)
    gtype = get_type(gtype_fn.group(1)) if gtype_fn else pspec_type(current, prop)
    is_flags, values = values_of(gtype)
    by_name = {name: value for value, name, _ in values}

    def resolve(token):
        if token in by_name:
            return by_name[token]
        value = number(token)
        if value is None:
            sys.exit(f"unresolved value {token} in {setting}.{prop}")
        return value

    get_infos = re.search(r"\.value_infos_get\s*=\s*(\w+)", body)
    if get_infos and get_infos.group(1) == "GOBJECT_ENUM_VALUE_INFOS_GET_FROM_SETTER":
        first = infos(body, "value_infos", resolve)
    else:
        first = infos(body, "value_infos_get", resolve) or []
    flags = [f[len(TYP_FLAG):] for f in re.findall(TYP_FLAG + r"\w+", body)]
    people, terse = modes(flags)
    if is_flags:
        # g_flags_get_first_value's candidates, in declaration order; a name libnm would not
        # print (empty, or a number) ends the names with the rest in hex.
        own = [(value, nick if valid_flags_nick(nick) else "") for value, _, nick in values]
    else:
        # g_enum_get_value's: the first of each value; a name libnm would not print leaves
        # the number.
        own, seen = [], set()
        for value, _, nick in values:
            if value in seen:
                continue
            seen.add(value)
            if valid_enum_nick(nick):
                own.append((value, nick))
    first_table = rust_table(first, (setting, prop))
    own_table = rust_table(own, (setting, prop))
    entries.append((setting, prop,
                    f"Names::{'Flags' if is_flags else 'Enum'} {{ "
                    f"first: {first_table}, own: {own_table}, "
                    f"people: {rust_mode(people, is_flags)}, "
                    f"terse: {rust_mode(terse, is_flags)} }}"))

# The settings nmcli's table has without properties it prints (`SETTING_INFO_EMPTY`).
for name in re.findall(r"SETTING_INFO_EMPTY\s*\(\s*([A-Z0-9_]+)", src):
    known.append(string(f"NM_SETTING_{name}_SETTING_NAME"))

# The settings `nmcli connection show` prints, in its order.
fields = re.search(r"#define NMC_FIELDS_SETTINGS_NAMES_ALL(.*?)\n\n", open(CONNECTIONS).read(),
                   re.S).group(1)
fields = re.sub(r"/\*.*?\*/", "", fields, flags=re.S)
shown = [string(name) for name in re.findall(r"NM_SETTING_\w+_SETTING_NAME", fields)]

print("//! What `nmcli connection show` prints of a profile, from nmcli's own tables.")
print("//!")
print("//! Generated by `cli/tools/gen_nm_meta.py` from NetworkManager's nmcli/connections.c")
print("//! and libnmc-setting/nm-meta-setting-desc.c, with the names of values read from the")
print("//! installed libnm's types, and committed; do not edit.")
print()
print("use crate::nm::{Mode, Names};")
print()
print("/// The settings nmcli prints, in its order, each with its properties in nmcli's order:")
print("/// (property, hidden while it holds its default).")
print("pub(crate) const SETTINGS: &[(&str, &[(&str, bool)])] = &[")
for setting in shown:
    props = ", ".join(f"({rust_str(p)}, {str(h).lower()})" for p, h in properties[setting])
    print(f"    ({rust_str(setting)}, &[{props}]),")
print("];")
print()
print("/// The settings nmcli's table has and `nmcli connection show` does not print.")
hidden_settings = ", ".join(rust_str(s) for s in known if s not in shown)
print(f"pub(crate) const UNSHOWN_SETTINGS: &[&str] = &[{hidden_settings}];")
print()
print("/// The hardware addresses, which nmcli prints as `AA:BB:CC:DD:EE:FF` (`_pt_gobject_mac`).")
print("pub(crate) const MAC_PROPERTIES: &[(&str, &str)] = &[")
for setting, prop in macs:
    print(f"    ({rust_str(setting)}, {rust_str(prop)}),")
print("];")
print()
print("/// How nmcli names the numbers of each property that is an enumeration, flags, or a")
print("/// number with named values: (setting, property, names), in nmcli's table order.")
print("pub(crate) const VALUE_NAMES: &[(&str, &str, Names)] = &[")
for setting, prop, expr in entries:
    # A table several properties share is its constant, the others inline.
    parts = expr.split("\0")
    for i in range(1, len(parts), 2):
        name, uses = tables[parts[i]]
        parts[i] = name if uses > 1 else parts[i]
    print(f"    ({rust_str(setting)}, {rust_str(prop)}, {''.join(parts)}),")
print("];")
print()
print("const NUMBER: Mode = Mode { number: true, hex: false, name: false };")
print("const HEX: Mode = Mode { number: true, hex: true, name: false };")
print("const NAME: Mode = Mode { number: false, hex: false, name: true };")
print("const NUMBER_NAME: Mode = Mode { number: true, hex: false, name: true };")
print("const HEX_NAME: Mode = Mode { number: true, hex: true, name: true };")
for text, (name, uses) in tables.items():
    if uses > 1:
        print()
        print(f"const {name}: &[(i64, &str)] = {text};")
