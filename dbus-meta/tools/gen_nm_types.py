#!/usr/bin/env python3
"""Writes dbus-meta/src/nm/types.rs: NetworkManager's enumerations and flags as Rust types.

Run from the crate folder with a NetworkManager source checkout (any revision with
`src/libnm-core-public/nm-dbus-interface.h` and nmcli under `src/nmcli`):

    python3 tools/gen_nm_types.py /path/to/NetworkManager > src/nm/types.rs
    cargo fmt -p netmirror-dbus-meta

The output is ordinary committed Rust; nothing runs at build time and the upstream files are
not part of this repository. Only facts go into the output: each type's members (names and
numbers, read from the header's `typedef enum` blocks) and the short strings nmcli prints for
them (read from nmcli's lookup tables). No upstream prose is copied.

How a value is shown (`Display`), in this order:
1. nmcli's own string, where nmcli has a table for the type (`NMC_TABLES` below names the
   function and the file it is in), or nmcli 1.42's where later versions renamed the value
   (`NMC_1_42_NAMES`);
2. otherwise the GLib nick libnm's `nm_utils_enum_to_str` prints: the member name without the
   type's common prefix, lower case, `_` as `-`;
3. a number no member has: the number itself (enums), `0x..` for the unnamed bits (flags).
"""

import os
import re
import sys

# C type -> Rust name. The types the D-Bus API carries; libnm-only ones (NMTernary,
# NMClientPermission...) and NMRollbackResult (skipped by upstream too) are left out.
TYPES = {
    "NMCapability": "Capability",
    "NMState": "State",
    "NMConnectivityState": "ConnectivityState",
    "NMDeviceType": "DeviceType",
    "NMDeviceCapabilities": "DeviceCapabilities",
    "NMDeviceWifiCapabilities": "DeviceWifiCapabilities",
    "NM80211ApFlags": "WifiApFlags",
    "NM80211ApSecurityFlags": "WifiApSecurityFlags",
    "NM80211Mode": "WifiMode",
    "NMBluetoothCapabilities": "BluetoothCapabilities",
    "NMDeviceModemCapabilities": "DeviceModemCapabilities",
    "NMWimaxNspNetworkType": "WimaxNspNetworkType",
    "NMDeviceState": "DeviceState",
    "NMDeviceStateReason": "DeviceStateReason",
    "NMMetered": "Metered",
    "NMConnectionMultiConnect": "ConnectionMultiConnect",
    "NMActiveConnectionState": "ActiveConnectionState",
    "NMActiveConnectionStateReason": "ActiveConnectionStateReason",
    "NMSecretAgentGetSecretsFlags": "SecretAgentGetSecretsFlags",
    "NMSecretAgentCapabilities": "SecretAgentCapabilities",
    "NMIPTunnelMode": "IpTunnelMode",
    "NMCheckpointCreateFlags": "CheckpointCreateFlags",
    "NMSettingsConnectionFlags": "SettingsConnectionFlags",
    "NMActivationStateFlags": "ActivationStateFlags",
    "NMSettingsAddConnection2Flags": "SettingsAddConnection2Flags",
    "NMSettingsUpdate2Flags": "SettingsUpdate2Flags",
    "NMDeviceReapplyFlags": "DeviceReapplyFlags",
    "NMDeviceManaged": "DeviceManaged",
    "NMDeviceManagedFlags": "DeviceManagedFlags",
    "NMManagerReloadFlags": "ManagerReloadFlags",
    "NMDeviceInterfaceFlags": "DeviceInterfaceFlags",
    "NMRadioFlags": "RadioFlags",
    "NMMptcpFlags": "MptcpFlags",
    "NMVersionInfoCapability": "VersionInfoCapability",
}

# nmcli's lookup tables (NM_UTILS_LOOKUP_STR_DEFINE): C type -> (file, function).
NMC_TABLES = {
    "NMState": ("src/nmcli/general.c", "nm_state_to_string"),
    "NMConnectivityState": ("src/nmcli/common.c", "nm_connectivity_to_string"),
    "NMDeviceState": ("src/libnmc-base/nm-client-utils.c", "nmc_device_state_to_string"),
    "NMMetered": ("src/libnmc-base/nm-client-utils.c", "nmc_device_metered_to_string"),
    "NMDeviceStateReason": ("src/libnmc-base/nm-client-utils.c", "nmc_device_reason_to_string"),
    "NMActiveConnectionState": ("src/nmcli/connections.c", "active_connection_state_to_string"),
    "NMActiveConnectionStateReason": (
        "src/libnmc-base/nm-client-utils.c",
        "nm_active_connection_state_reason_to_string",
    ),
}

# Where the nmcli of the source revision renamed a value, the name nmcli 1.42 prints (the
# nmcli the CLI's parity tests compare with, and the version of the CLI's defaults table):
# C member -> name. NM_STATE_ASLEEP became NM_STATE_DISABLED, "network off" in later nmcli.
NMC_1_42_NAMES = {"NM_STATE_DISABLED": "asleep"}

# nmcli's names for the states of a device whose active connection is external.
NMC_EXTERNAL_TABLE = ("src/libnmc-base/nm-client-utils.c", "_device_state_externally_to_string")

# The type nmcli's device list shows is libnm's type description: its device class's name in
# lower case (`NMDeviceOlpcMesh` -> "olpcmesh"), a veth shown as "ethernet", and the names the
# OVS and Wi-Fi P2P classes give themselves. A generic device shows its own TypeDescription
# and a modem "gsm" or "cdma" by its capabilities; without the object, these are the names.
DEVICE_TYPE_NAMES = {
    "UNKNOWN": "unknown",
    "UNUSED1": "unknown",
    "UNUSED2": "unknown",
    "VETH": "ethernet",
    "OVS_INTERFACE": "ovs-interface",
    "OVS_PORT": "ovs-port",
    "OVS_BRIDGE": "ovs-bridge",
    "WIFI_P2P": "wifi-p2p",
}

# nmcli's AP list shows these modes by name; the others by their nick.
WIFI_MODE_NAMES = {"ADHOC": "Ad-Hoc", "INFRA": "Infra", "MESH": "Mesh"}

# Rust names for members whose nick starts with a digit.
DIGIT_NAMES = {"NM_DEVICE_TYPE_6LOWPAN": "Lowpan6"}


def read(root, rel):
    with open(os.path.join(root, rel), encoding="utf-8") as f:
        return f.read()


def strip_comments(text):
    return re.sub(r"/\*.*?\*/", "", text, flags=re.S)


def parse_header(text):
    """C type -> (is_flags, [(member, value)]) for every `typedef enum` block."""
    out = {}
    for m in re.finditer(r"typedef enum\s*(/\*<(?P<ann>[^>]*)>\*/)?\s*\{(?P<body>.*?)\}\s*(?P<name>\w+);", text, re.S):
        ann = m.group("ann") or ""
        body = m.group("body")
        # Per-member `skip` marks (`/*< skip >*/`, also written `/* <skip> */`).
        skipped = set(re.findall(r"(NM_\w+)\s*=[^,]*,?\s*/\*\s*<\s*skip\s*>\s*\*/", body))
        body = strip_comments(body)
        members = []
        for entry in body.split(","):
            entry = entry.strip()
            if not entry:
                continue
            em = re.fullmatch(r"(NM_\w+)\s*(=\s*(.+))?", entry, re.S)
            if not em:
                sys.exit(f"cannot read enum entry {entry!r} of {m.group('name')}")
            name, expr = em.group(1), (em.group(3) or "").strip()
            if name in skipped or name.endswith("_LAST"):
                continue
            if re.fullmatch(r"0x[0-9a-fA-F]+|\d+", expr):
                members.append((name, int(expr, 0)))
            elif re.fullmatch(r"-\d+", expr):
                members.append((name, int(expr)))
            elif expr == "":
                members.append((name, members[-1][1] + 1 if members else 0))
            else:
                sys.exit(f"unsupported value {expr!r} for {name}")
        out[m.group("name")] = ("flags" in ann, members)
    return out


def common_prefix(names):
    words = [n.split("_") for n in names]
    prefix = []
    for parts in zip(*words):
        if len(set(parts)) != 1:
            break
        prefix.append(parts[0])
    # Keep at least one word of every name.
    if any(len(w) == len(prefix) for w in words):
        prefix = prefix[:-1]
    return "_".join(prefix) + "_" if prefix else ""


def c_string(text):
    """Joins adjacent C string literals inside an `N_(...)` call."""
    parts = re.findall(r'"((?:[^"\\]|\\.)*)"', text)
    return "".join(parts).encode().decode("unicode_escape")


def parse_lookup(source, function):
    """Member -> string, and the default, of one NM_UTILS_LOOKUP_STR_DEFINE table."""
    m = re.search(r"NM_UTILS_LOOKUP_STR_DEFINE\(\s*" + function + r"\s*,(.*?)\);", source, re.S)
    if not m:
        sys.exit(f"no lookup table {function}")
    body = strip_comments(m.group(1))
    default = re.search(r"NM_UTILS_LOOKUP_DEFAULT\(N_\((.*?)\)\)", body, re.S)
    items = {}
    for im in re.finditer(r"NM_UTILS_LOOKUP_ITEM\(\s*(NM_\w+)\s*,\s*N_\((.*?)\)\s*\)", body, re.S):
        items[im.group(1)] = c_string(im.group(2))
    return items, c_string(default.group(1)) if default else None


def parse_security_names(source):
    """(mask members, name) in nmcli's order, from its AP security flags printer."""
    m = re.search(r"ap_wpa_rsn_flags_to_string\(.*?\n\}", source, re.S)
    if not m:
        sys.exit("no ap_wpa_rsn_flags_to_string in devices.c")
    out = []
    for im in re.finditer(
        r"if \((?:flags & (NM_\w+)|NM_FLAGS_ANY\(flags, ([^)]*)\))\)\s*flags_str\[i\+\+\] = \"([^\"]+)\";",
        m.group(0),
    ):
        masks = [im.group(1)] if im.group(1) else [s.strip() for s in im.group(2).split("|")]
        out.append((masks, im.group(3)))
    return out


def camel(word):
    return "".join(p[:1].upper() + p[1:].lower() for p in word.split("_") if p)


def rust_str(text):
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: gen_nm_types.py NETWORKMANAGER_SOURCE_DIR")
    root = sys.argv[1]
    header = parse_header(read(root, "src/libnm-core-public/nm-dbus-interface.h"))
    security = parse_security_names(read(root, "src/nmcli/devices.c"))
    out = []
    w = out.append
    w("//! NetworkManager's enumerations and flags, as typed values.")
    w("//!")
    w("//! Generated by `tools/gen_nm_types.py` from NetworkManager's `nm-dbus-interface.h` (the")
    w("//! members and their numbers) and nmcli's lookup tables (how nmcli shows them); committed.")
    w("//! Each enumeration keeps numbers it has no member for in `Unknown(u32)`; each flags type")
    w("//! keeps unnamed bits. `Display` shows a value as nmcli does where nmcli has a table for the")
    w("//! type, as libnm's `nm_utils_enum_to_str` does (the member's nick) otherwise; a number with")
    w("//! no member shows as itself, unnamed bits as `0x..`.")
    w("")
    for ctype, rname in TYPES.items():
        if ctype not in header:
            sys.exit(f"{ctype} is not in the header")
        is_flags, members = header[ctype]
        if any(v < 0 or v > 0xFFFFFFFF for _, v in members):
            sys.exit(f"{ctype} has a value outside u32")
        prefix = common_prefix([n for n, _ in members])
        nick = {n: n[len(prefix):].lower().replace("_", "-") for n, _ in members}
        if is_flags:
            emit_flags(w, ctype, rname, prefix, members, nick, security)
        else:
            emit_enum(w, root, ctype, rname, prefix, members, nick)
    print("\n".join(out))


def emit_enum(w, root, ctype, rname, prefix, members, nick):
    # A number given twice (a deprecated alias): the later name is the current one.
    by_value = {}
    for name, value in members:
        by_value[value] = name
    names = {}
    for name, _ in members:
        if by_value[next(v for n, v in members if n == name)] != name:
            continue
        short = name[len(prefix):]
        variant = DIGIT_NAMES.get(name) or camel(short)
        if not variant[0].isalpha():
            sys.exit(f"no Rust name for {name}: add it to DIGIT_NAMES")
        names[name] = variant
    shown = {name: nick[name] for name in names}
    if ctype in NMC_TABLES:
        path, function = NMC_TABLES[ctype]
        items, default = parse_lookup(read(root, path), function)
        for name in names:
            if name in items:
                shown[name] = items[name]
            elif default is not None:
                # nmcli has no line for it and falls back to its default word.
                shown[name] = default
    for name in names:
        if name in NMC_1_42_NAMES:
            shown[name] = NMC_1_42_NAMES[name]
    if ctype == "NMDeviceType":
        for name in names:
            short = name[len(prefix):]
            shown[name] = DEVICE_TYPE_NAMES.get(short, nick[name].replace("-", ""))
    if ctype == "NM80211Mode":
        for name in names:
            shown[name] = WIFI_MODE_NAMES.get(name[len(prefix):], nick[name])
    # NetworkManager's own `*_UNKNOWN` member is the catch-all `Unknown(u32)` with its number.
    unknown = [n for n in names if n[len(prefix):] == "UNKNOWN"]
    unknown_value = next(v for n, v in members if n == unknown[0]) if unknown else None
    for name in unknown:
        del names[name]
    value_of = {n: v for n, v in members}
    w(f"/// NetworkManager's `{ctype}`.")
    w("#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]")
    w("#[non_exhaustive]")
    w(f"pub enum {rname} {{")
    for name, variant in names.items():
        w(f"    /// `{name}` ({value_of[name]}).")
        w(f"    {variant},")
    if unknown:
        w(f"    /// `{unknown[0]}` ({unknown_value}), or a number this version does not name, kept")
        w("    /// as sent.")
    else:
        w("    /// A number this version does not name, kept as sent.")
    w("    Unknown(u32),")
    w("}")
    w("")
    w(f"impl {rname} {{")
    w("    /// Every member with a variant of its own, in the header's order.")
    w(f"    pub const ALL: &'static [{rname}] = &[")
    for name, variant in names.items():
        w(f"        {rname}::{variant},")
    w("    ];")
    w("")
    w("    /// The D-Bus number of this value.")
    w("    pub const fn to_u32(self) -> u32 {")
    w("        match self {")
    for name, variant in names.items():
        w(f"            {rname}::{variant} => {value_of[name]},")
    w(f"            {rname}::Unknown(value) => value,")
    w("        }")
    w("    }")
    w("")
    w("    /// The value of D-Bus number `value`.")
    w(f"    pub const fn from_u32(value: u32) -> {rname} {{")
    w("        match value {")
    for name, variant in names.items():
        w(f"            {value_of[name]} => {rname}::{variant},")
    w(f"            other => {rname}::Unknown(other),")
    w("        }")
    w("    }")
    w("")
    w("    /// How nmcli shows this value; `None` for a number no member has.")
    w("    pub const fn name(self) -> Option<&'static str> {")
    w("        Some(match self {")
    for name, variant in names.items():
        w(f"            {rname}::{variant} => {rust_str(shown[name])},")
    if unknown:
        w(f"            {rname}::Unknown({unknown_value}) => {rust_str(shown[unknown[0]])},")
    w(f"            {rname}::Unknown(_) => return None,")
    w("        })")
    w("    }")
    if ctype == "NMDeviceState":
        path, function = NMC_EXTERNAL_TABLE
        items, _ = parse_lookup(read(root, path), function)
        w("")
        w("    /// How nmcli shows this state for a device whose active connection is external")
        w("    /// ([`ActivationStateFlags::EXTERNAL`]); `None` where it shows [`Self::name`].")
        w("    pub const fn name_external(self) -> Option<&'static str> {")
        w("        Some(match self {")
        for name, variant in names.items():
            if name in items:
                w(f"            {rname}::{variant} => {rust_str(items[name])},")
        w("            _ => return None,")
        w("        })")
        w("    }")
    w("}")
    w("")
    w(f"crate::typed::enum_traits!({rname});")
    w("")


def emit_flags(w, ctype, rname, prefix, members, nick, security):
    w(f"/// NetworkManager's `{ctype}` (flags; bits without a name are kept).")
    w("#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]")
    w(f"pub struct {rname}(u32);")
    w("")
    w(f"impl {rname} {{")
    consts = []
    for name, value in members:
        const = name[len(prefix):]
        if not const[0].isalpha():
            const = "_" + const
        consts.append((name, const, value))
        w(f"    /// `{name}` ({value:#x}).")
        w(f"    pub const {const}: {rname} = {rname}({value:#x});")
    w("")
    if ctype == "NM80211ApSecurityFlags":
        # nmcli's own names, in its order, several bits may share one name.
        table = []
        for masks, text in security:
            bits = 0
            for mask in masks:
                hit = [v for n, c, v in consts if n == mask]
                if not hit:
                    sys.exit(f"nmcli names unknown flag {mask}")
                bits |= hit[0]
            table.append((bits, text))
        sep, empty = " ", "(none)"
    else:
        table = [(v, nick[n]) for n, c, v in consts if v != 0]
        zero = [nick[n] for n, c, v in consts if v == 0]
        sep, empty = ", ", zero[0] if zero else ""
    w("    /// The names nmcli (or libnm) shows, each with the bits it stands for, in order.")
    w("    pub const NAMES: &'static [(&'static str, u32)] = &[")
    for bits, text in table:
        w(f"        ({rust_str(text)}, {bits:#x}),")
    w("    ];")
    w("    /// Every member: its Rust name and bits (for `Debug` and the known-bits mask).")
    w("    const CONSTS: &'static [(&'static str, u32)] = &[")
    for name, const, value in consts:
        w(f"        ({rust_str(const)}, {value:#x}),")
    w("    ];")
    w("    const SEPARATOR: &'static str = " + rust_str(sep) + ";")
    w("    const EMPTY: &'static str = " + rust_str(empty) + ";")
    w("}")
    w("")
    w(f"crate::typed::flags_traits!({rname});")
    w("")


if __name__ == "__main__":
    main()
