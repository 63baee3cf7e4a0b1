#!/usr/bin/env python3
"""Generates cli/src/nm_defaults.rs: what nmcli prints for each setting property that
NetworkManager leaves out of a profile's GetSettings answer (its default), with the settings
and properties in the order the samples showed them (nmcli's own order, which `nm connection`
follows, is in cli/src/nm_meta.rs, made by gen_nm_meta.py).

NetworkManager sends only the properties that differ from their default; nmcli (through libnm)
shows every property of every setting the profile has, the missing ones at libnm's default.
This asks nmcli itself: it adds one bare profile per connection type netmirror shows, reads
`nmcli connection show` (people's form) and `nmcli -t connection show` (terse form) for it,
and compares with the daemon's own GetSettings answer (busctl): each property nmcli shows and
the daemon did not send is a default, in both forms. A property the daemon sent in every
sample has no default here (it is always sent).

Run it against a sandboxed NetworkManager (never the host's), e.g. with
../shared/recipes/nm-sandbox.sh:

    nm-sandbox.sh up /tmp/sbx
    DBUS_SYSTEM_BUS_ADDRESS=unix:path=/tmp/sbx/bus python3 cli/tools/gen_nm_defaults.py \
        > cli/src/nm_defaults.rs
    nm-sandbox.sh down /tmp/sbx

Needs nmcli and busctl. The profiles it adds are named `nmdef-*` and deleted afterwards.
"""

import json
import os
import subprocess
import sys

# (name, nmcli connection add arguments): a bare profile of each type netmirror shows, and
# the port and security settings that only appear with a controller, a key management or
# 802.1X.
SAMPLES = [
    # Nothing set but the type: the daemon leaves out autoconnect and interface-name too
    # (the others say `autoconnect no`, so that nothing activates).
    ("bare", ["type", "ethernet"]),
    ("ethernet", ["type", "ethernet", "ifname", "nmdef0"]),
    ("bridge", ["type", "bridge", "ifname", "nmdefbr0"]),
    ("bond", ["type", "bond", "ifname", "nmdefbond0"]),
    ("vlan", ["type", "vlan", "ifname", "nmdefvlan0", "dev", "nmdef0", "id", "10"]),
    ("loopback", ["type", "loopback", "ifname", "lo"]),
    ("dummy", ["type", "dummy", "ifname", "nmdefd0"]),
    ("veth", ["type", "veth", "ifname", "nmdefv0", "veth.peer", "nmdefv1"]),
    ("wifi", ["type", "wifi", "ifname", "nmdefw0", "ssid", "nmdef"]),
    ("wifi-psk", ["type", "wifi", "ifname", "nmdefw1", "ssid", "nmdef",
                  "wifi-sec.key-mgmt", "wpa-psk", "wifi-sec.psk", "nmdef-secret"]),
    ("bridge-port", ["type", "ethernet", "ifname", "nmdefp0", "master", "nmdefbr0",
                     "slave-type", "bridge"]),
    ("bond-port", ["type", "ethernet", "ifname", "nmdefp1", "master", "nmdefbond0",
                   "slave-type", "bond"]),
    # 802.1X on a wired profile (the password is a secret: nmcli shows `<hidden>`).
    ("ethernet-8021x", ["type", "ethernet", "ifname", "nmdef8", "802-1x.eap", "peap",
                        "802-1x.identity", "nmdef", "802-1x.phase2-auth", "mschapv2",
                        "802-1x.password", "nmdef-secret"]),
    ("ethernet-8021x-md5", ["type", "ethernet", "ifname", "nmdef9", "802-1x.eap", "md5",
                            "802-1x.identity", "nmdef"]),
    # The other types NetworkManager can hold without hardware or a plugin.
    ("tun", ["type", "tun", "ifname", "nmdeft0", "mode", "tap"]),
    ("tun-default", ["type", "tun", "ifname", "nmdeft1"]),
    ("macvlan", ["type", "macvlan", "ifname", "nmdefm0", "dev", "nmdef0", "mode", "bridge"]),
    ("vxlan", ["type", "vxlan", "ifname", "nmdefx0", "id", "5", "remote", "192.0.2.2"]),
    ("ip-tunnel", ["type", "ip-tunnel", "ifname", "nmdefg0", "mode", "gre", "remote",
                   "192.0.2.2"]),
    ("wireguard", ["type", "wireguard", "ifname", "nmdefwg0"]),
    ("vrf", ["type", "vrf", "ifname", "nmdefvrf0", "table", "10"]),
    ("infiniband", ["type", "infiniband", "ifname", "nmdefib0"]),
    ("team", ["type", "team", "ifname", "nmdefteam0"]),
    ("gsm", ["type", "gsm", "ifname", "nmdefgsm0", "apn", "internet"]),
    ("cdma", ["type", "cdma", "ifname", "nmdefcdma0"]),
    # Settings a profile of any type may have, each in two samples that set different
    # properties (a property set in one is a default in the other).
    ("hostname", ["type", "ethernet", "ifname", "nmdefh0", "hostname.from-dhcp", "0"]),
    ("hostname-priority", ["type", "ethernet", "ifname", "nmdefh1", "hostname.priority", "5"]),
    ("extras", ["type", "ethernet", "ifname", "nmdefe0", "match.interface-name", "nmdefe0",
                "ethtool.feature-rx", "on", "sriov.total-vfs", "2", "tc.qdiscs",
                "root pfifo_fast", "dcb.app-fcoe-flags", "1"]),
    ("extras-2", ["type", "ethernet", "ifname", "nmdefe1", "match.driver", "e1000",
                  "ethtool.ring-rx", "10", "sriov.autoprobe-drivers", "1", "tc.tfilters",
                  "parent ffff: matchall action drop", "dcb.app-iscsi-flags", "1"]),
    ("team-port", ["type", "ethernet", "ifname", "nmdefp2", "master", "nmdefteam0",
                   "slave-type", "team"]),
    ("macsec", ["type", "macsec", "ifname", "nmdefmacsec0", "dev", "nmdef0", "mode", "psk",
                "macsec.mka-cak", "0123456789abcdef0123456789abcdef", "macsec.mka-ckn",
                "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"]),
    ("macsec-eap", ["type", "macsec", "ifname", "nmdefmacsec1", "dev", "nmdef0", "mode", "eap",
                    "802-1x.eap", "peap", "802-1x.identity", "nmdef", "802-1x.phase2-auth",
                    "mschapv2", "802-1x.password", "nmdef-secret"]),
    ("6lowpan", ["type", "6lowpan", "ifname", "nmdef6lp0", "dev", "nmdef0"]),
    ("wpan", ["type", "wpan", "ifname", "nmdefwpan0", "wpan.mac-address",
              "11:22:33:44:55:66:77:88", "wpan.pan-id", "0x1234", "wpan.short-address",
              "0x4321"]),
    ("pppoe", ["type", "pppoe", "ifname", "nmdefpppoe0", "username", "nmdef", "password",
               "nmdef-secret", "pppoe.parent", "nmdef0"]),
    ("bluetooth", ["type", "bluetooth", "ifname", "nmdefbt0", "addr", "00:11:22:33:44:55",
                   "bt-type", "panu"]),
    ("bluetooth-dun", ["type", "bluetooth", "ifname", "nmdefbt1", "addr",
                       "00:11:22:33:44:56", "bt-type", "dun", "gsm.apn", "internet"]),
    ("adsl", ["type", "adsl", "ifname", "nmdefadsl0", "username", "nmdef", "protocol",
              "pppoa"]),
    ("olpc-mesh", ["type", "olpc-mesh", "ifname", "nmdefmesh0", "ssid", "nmdef"]),
    ("wifi-p2p", ["type", "wifi-p2p", "ifname", "nmdefp2p0", "peer", "00:11:22:33:44:55"]),
    ("ovs-bridge", ["type", "ovs-bridge", "ifname", "nmdefovsbr0"]),
    ("ovs-port", ["type", "ovs-port", "ifname", "nmdefovsp0", "master", "nmdefovsbr0"]),
    ("ovs-interface", ["type", "ovs-interface", "ifname", "nmdefovsi0", "master",
                       "nmdefovsp0", "ovs-interface.type", "internal"]),
    ("ovs-patch", ["type", "ovs-interface", "ifname", "nmdefovsi1", "master", "nmdefovsp0",
                   "ovs-interface.type", "patch", "ovs-patch.peer", "nmdef"]),
    ("ovs-dpdk", ["type", "ovs-interface", "ifname", "nmdefovsi2", "master", "nmdefovsp0",
                  "ovs-interface.type", "dpdk", "ovs-dpdk.devargs", "nmdef"]),
    ("vpn", ["type", "vpn", "vpn-type", "openvpn"]),
    ("gsm-ppp", ["type", "gsm", "ifname", "nmdefgsm1", "apn", "internet", "serial.baud",
                 "9600", "ppp.mtu", "1000"]),
    ("gsm-ppp-2", ["type", "gsm", "ifname", "nmdefgsm2", "apn", "internet",
                   "serial.send-delay", "5", "ppp.lcp-echo-interval", "5"]),
]


def run(*args):
    return subprocess.run(args, check=True, capture_output=True, text=True).stdout


def nmcli_lines(*args):
    """(name, value) for each `name:value` line."""
    out = []
    for line in run("nmcli", *args).splitlines():
        name, _, value = line.partition(":")
        out.append((name, value))
    return out


def sample(name, add):
    con = f"nmdef-{name}"
    quiet = [] if name == "bare" else ["autoconnect", "no"]
    run("nmcli", "connection", "add", "con-name", con, *quiet, *add)
    try:
        terse = nmcli_lines("-t", "connection", "show", con)
        pretty = [(n, v.strip()) for n, v in nmcli_lines("connection", "show", con)]
        # The profile's path (GENERAL.DBUS-PATH is the active connection's, if it is active).
        path = next(p for n, p in nmcli_lines("-t", "-f", "NAME,DBUS-PATH", "connection")
                    if n == con)
        reply = json.loads(run(
            "busctl", "--system", "--json=short", "call", "org.freedesktop.NetworkManager",
            path, "org.freedesktop.NetworkManager.Settings.Connection", "GetSettings"))
        sent = {(s, k) for s, keys in reply["data"][0].items() for k in keys}
        settings = list(reply["data"][0])
    finally:
        run("nmcli", "connection", "delete", con)
    assert [n for n, _ in terse] == [n for n, _ in pretty], name
    props = []
    for (full, t), (_, p) in zip(terse, pretty):
        setting, _, key = full.partition(".")
        if not key or setting != setting.lower():
            continue  # GENERAL, IP4...: an active connection's sections
        props.append((setting, key, (setting, key) in sent, p, t))
    return props, settings


def rust_str(text):
    return json.dumps(text, ensure_ascii=False)


def main():
    if "DBUS_SYSTEM_BUS_ADDRESS" not in os.environ:
        sys.exit("set DBUS_SYSTEM_BUS_ADDRESS to a sandboxed NetworkManager's bus")
    # setting -> ordered keys; (setting, key) -> (pretty, terse) when left out somewhere
    order = []
    keys = {}
    defaults = {}
    for name, add in SAMPLES:
        props, _ = sample(name, add)
        prev = None
        for setting, key, sent, pretty, terse in props:
            if setting not in keys:
                keys[setting] = []
                at = order.index(prev) + 1 if prev in order else len(order)
                order.insert(at, setting)
            prev = setting
            if key not in keys[setting]:
                keys[setting].append(key)
            if sent:
                continue
            old = defaults.setdefault((setting, key), (pretty, terse))
            if old != (pretty, terse):
                sys.exit(f"{setting}.{key}: nmcli shows two defaults, {old} and "
                         f"{(pretty, terse)} (sample {name})")
    version = run("nmcli", "--version").strip().rsplit(" ", 1)[-1]
    print("//! nmcli's defaults for the setting properties NetworkManager leaves out of a")
    print("//! profile, in the order nmcli showed them in the samples (`nm_meta.rs` has")
    print("//! nmcli's own order).")
    print("//!")
    print(f"//! Generated by `cli/tools/gen_nm_defaults.py` from nmcli {version} and committed;")
    print("//! do not edit. `(people's form, terse form)`; `None` where the daemon always sent")
    print("//! the property.")
    print()
    print("/// One setting: its name and its properties, each with nmcli's text for it when")
    print("/// the daemon leaves it out.")
    print("pub(crate) type Setting = (&'static str, &'static [Property]);")
    print()
    print("/// A property's name and its default as nmcli prints it (people's form, terse form).")
    print("pub(crate) type Property = (&'static str, Option<(&'static str, &'static str)>);")
    print()
    print("/// The settings the samples had.")
    print("pub(crate) const SETTINGS: &[Setting] = &[")
    for setting in order:
        print(f"    (\n        {rust_str(setting)},\n        &[")
        for key in keys[setting]:
            d = defaults.get((setting, key))
            val = "None" if d is None else f"Some(({rust_str(d[0])}, {rust_str(d[1])}))"
            print(f"            ({rust_str(key)}, {val}),")
        print("        ],\n    ),")
    print("];")


if __name__ == "__main__":
    main()
