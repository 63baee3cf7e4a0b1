#!/usr/bin/env python3
"""Writes dbus-meta/src/nm.rs from the NetworkManager introspection XML in tests/data.

Run from the crate folder: `python3 tools/gen_nm.py > src/nm.rs && cargo fmt -p netmirror-dbus-meta`.
The output is ordinary committed Rust source; nothing runs at build time. Only names, signatures,
deprecation marks and the hand-kept object-path targets below go into it (no upstream prose).
"""

import glob
import os
import re
import sys

PREFIX = "org.freedesktop.NetworkManager"

RUST_TYPES = {
    "b": "bool",
    "y": "u8",
    "n": "i16",
    "q": "u16",
    "i": "i32",
    "u": "u32",
    "x": "i64",
    "t": "u64",
    "d": "f64",
    "s": "String",
    "o": "OwnedObjectPath",
    "as": "Vec<String>",
    "ao": "Vec<OwnedObjectPath>",
    "ay": "Vec<u8>",
    "aay": "Vec<Vec<u8>>",
    "au": "Vec<u32>",
    "aau": "Vec<Vec<u32>>",
    "a{sv}": "VarDict",
    "aa{sv}": "Vec<VarDict>",
    "a{sa{sv}}": "SettingsDict",
    "(uu)": "Opaque<(u32, u32)>",
    "a(ayuay)": "Opaque<Vec<(Vec<u8>, u32, Vec<u8>)>>",
    "a(ayuayu)": "Opaque<Vec<(Vec<u8>, u32, Vec<u8>, u32)>>",
}

ACTIVE = PREFIX + ".Connection.Active"
DEVICE = PREFIX + ".Device"
# The interface an `o`/`ao` property's target implements, from the upstream documentation.
# `SpecificObject` names an access point, a WiMAX NSP or nothing, so it has no single target.
TARGETS = {
    ("Checkpoint", "Devices"): DEVICE,
    ("Connection.Active", "Connection"): PREFIX + ".Settings.Connection",
    ("Connection.Active", "SpecificObject"): None,
    ("Connection.Active", "Devices"): DEVICE,
    ("Connection.Active", "Ip4Config"): PREFIX + ".IP4Config",
    ("Connection.Active", "Dhcp4Config"): PREFIX + ".DHCP4Config",
    ("Connection.Active", "Ip6Config"): PREFIX + ".IP6Config",
    ("Connection.Active", "Dhcp6Config"): PREFIX + ".DHCP6Config",
    ("Connection.Active", "Controller"): DEVICE,
    ("Connection.Active", "Master"): DEVICE,
    ("Device.Bond", "Slaves"): DEVICE,
    ("Device.Bridge", "Slaves"): DEVICE,
    ("Device.Hsr", "Port1"): DEVICE,
    ("Device.Hsr", "Port2"): DEVICE,
    ("Device.IPTunnel", "Parent"): DEVICE,
    ("Device.Ipvlan", "Parent"): DEVICE,
    ("Device.Lowpan", "Parent"): DEVICE,
    ("Device.Macsec", "Parent"): DEVICE,
    ("Device.Macvlan", "Parent"): DEVICE,
    ("Device.OlpcMesh", "Companion"): DEVICE,
    ("Device.OvsBridge", "Slaves"): DEVICE,
    ("Device.OvsPort", "Slaves"): DEVICE,
    ("Device.Team", "Slaves"): DEVICE,
    ("Device.Veth", "Peer"): DEVICE,
    ("Device.Vlan", "Parent"): DEVICE,
    ("Device.Vxlan", "Parent"): DEVICE,
    ("Device.WiMax", "Nsps"): PREFIX + ".WiMax.Nsp",
    ("Device.WiMax", "ActiveNsp"): PREFIX + ".WiMax.Nsp",
    ("Device.WifiP2P", "Peers"): PREFIX + ".WifiP2PPeer",
    ("Device.Wireless", "AccessPoints"): PREFIX + ".AccessPoint",
    ("Device.Wireless", "ActiveAccessPoint"): PREFIX + ".AccessPoint",
    ("Device", "ActiveConnection"): ACTIVE,
    ("Device", "Ip4Config"): PREFIX + ".IP4Config",
    ("Device", "Dhcp4Config"): PREFIX + ".DHCP4Config",
    ("Device", "Ip6Config"): PREFIX + ".IP6Config",
    ("Device", "Dhcp6Config"): PREFIX + ".DHCP6Config",
    ("Device", "AvailableConnections"): PREFIX + ".Settings.Connection",
    ("Device", "Ports"): DEVICE,
    ("Settings", "Connections"): PREFIX + ".Settings.Connection",
    ("", "Devices"): DEVICE,
    ("", "AllDevices"): DEVICE,
    ("", "Checkpoints"): PREFIX + ".Checkpoint",
    ("", "ActiveConnections"): ACTIVE,
    ("", "PrimaryConnection"): ACTIVE,
    ("", "ActivatingConnection"): ACTIVE,
}

TOKEN = re.compile(
    r"<!--(?P<comment>.*?)-->"
    r"|<interface\s+name=\"(?P<iface>[^\"]+)\""
    r"|<property\s+name=\"(?P<prop>[^\"]+)\"\s+type=\"(?P<ptype>[^\"]+)\""
    r"|<(?P<member>method|signal)\s+name=\"(?P<mname>[^\"]+)\"(?P<selfclosing>\s*/>)?"
    r"|<arg\s+(?P<arg>[^>]*)>"
    r"|</(?P<end>method|signal)>",
    re.S,
)


def screaming(name):
    out = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name)
    return out.upper()


def module_name(iface):
    short = iface[len(PREFIX):].lstrip(".")
    if not short:
        return "network_manager"
    short = short.replace("WiMax", "Wimax").replace("WifiP2P", "WifiP2p")
    parts = []
    for part in short.split("."):
        part = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", part)
        parts.append(part.lower())
    return "_".join(parts)


def parse(path):
    text = open(path, encoding="utf-8").read()
    iface = None
    props, methods, signals = [], [], []
    last_comment = ""
    current = None
    for m in TOKEN.finditer(text):
        if m.group("comment") is not None:
            last_comment = m.group("comment")
        elif m.group("iface"):
            iface = m.group("iface")
        elif m.group("prop"):
            deprecated = "DEPRECATED" in last_comment
            props.append((m.group("prop"), m.group("ptype"), deprecated))
            last_comment = ""
        elif m.group("member"):
            current = {"kind": m.group("member"), "name": m.group("mname"), "in": "", "out": ""}
            if m.group("selfclosing"):
                (methods if current["kind"] == "method" else signals).append(current)
                current = None
            last_comment = ""
        elif m.group("arg") is not None and current is not None:
            attrs = dict(re.findall(r"(\w+)=\"([^\"]*)\"", m.group("arg")))
            direction = attrs.get("direction", "in" if current["kind"] == "method" else "out")
            current["out" if direction == "out" else "in"] += attrs["type"]
        elif m.group("end") and current is not None:
            (methods if current["kind"] == "method" else signals).append(current)
            current = None
    return iface, props, methods, signals


def main():
    data = os.path.join(os.path.dirname(__file__), "..", "tests", "data", "nm-introspection")
    parsed = [parse(p) for p in glob.glob(os.path.join(data, "*.xml"))]
    parsed.sort(key=lambda it: it[0])
    out = []
    w = out.append
    w("//! NetworkManager's whole D-Bus API (the 53 interfaces of its `introspection/` folder,")
    w("//! revision 355bc902994f): every property with its signature, Rust type and object-path")
    w("//! target, and every method and signal.")
    w("//!")
    w("//! Generated by `tools/gen_nm.py` from `tests/data/nm-introspection/` and committed; the")
    w("//! XML conformance test checks it against those files. A target of `\"/\"` means no object.")
    w("//!")
    w("//! One module per interface, named after the part of the interface name that follows")
    w("//! `org.freedesktop.NetworkManager.` in snake case (`device_bond` for `Device.Bond`,")
    w("//! `settings_connection`, `ip4_config`, `wimax_nsp`); the root interface is")
    w("//! [`network_manager`]. Each holds `IFACE`, a `PropertyKey` per property (`device::STATE`),")
    w("//! and `methods`/`signals` submodules.")
    w("")
    w("use zbus::OwnedObjectPath;")
    w("")
    w("use crate::{Opaque, VarDict};")
    w("")
    w("mod types;")
    w("pub use types::*;")
    w("")
    for iface, props, methods, signals in parsed:
        short = iface[len(PREFIX):].lstrip(".")
        w("crate::interface! {")
        w(f"    pub mod {module_name(iface)} = \"{iface}\" {{")
        w("        properties {")
        for name, sig, deprecated in sorted(props, key=lambda p: p[0]):
            rust = RUST_TYPES[sig]
            line = f"            {screaming(name)} \"{name}\": {rust} = \"{sig}\""
            if sig in ("o", "ao"):
                key = (short, name)
                if key not in TARGETS:
                    sys.exit(f"no target for {iface}.{name}")
                if TARGETS[key]:
                    line += f" => \"{TARGETS[key]}\""
            if deprecated:
                line += ", DEPRECATED"
            w(line + ";")
        w("        }")
        if methods:
            w("        methods {")
            for m in sorted(methods, key=lambda m: m["name"]):
                w(f"            {screaming(m['name'])} \"{m['name']}\"(\"{m['in']}\") -> \"{m['out']}\";")
            w("        }")
        if signals:
            w("        signals {")
            for s in sorted(signals, key=lambda s: s["name"]):
                w(f"            {screaming(s['name'])} \"{s['name']}\"(\"{s['out']}\");")
            w("        }")
        w("    }")
        w("}")
        w("")
    w("crate::registry! {")
    w("    /// Every NetworkManager interface, sorted by name.")
    w("    pub static REGISTRY = [")
    for iface, *_ in parsed:
        w(f"        {module_name(iface)},")
    w("    ];")
    w("}")
    print("\n".join(out))


if __name__ == "__main__":
    main()
