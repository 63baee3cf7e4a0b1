//! The changing `nm` commands against the real NetworkManager (managing a veth pair in its
//! sandbox): their text and `--json`, what nmcli and the kernel (`ip -j` in the sandbox) see
//! afterwards, the same `add` done by nmcli, and bad input refused before anything is sent.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use netmirror_client_cache::testing::NetworkManagerDaemon;

use super::nm_parity::settings_of;
use crate::support::{Run, netmirror, run};

/// A daemon managing the veth pair `va0`/`vb0`, both available.
pub(super) fn daemon() -> NetworkManagerDaemon {
    let nm = NetworkManagerDaemon::builder()
        .manage_devices()
        .start()
        .expect("start NetworkManager");
    for args in [
        &["link", "add", "va0", "type", "veth", "peer", "name", "vb0"][..],
        &["link", "set", "vb0", "up"],
    ] {
        assert!(
            nm.netns_command("ip")
                .args(args)
                .status()
                .unwrap()
                .success()
        );
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let devices = nmcli(&nm, &["-t", "-f", "DEVICE,STATE", "device"]);
        if devices.contains("va0:disconnected") && devices.contains("vb0:disconnected") {
            return nm;
        }
        assert!(Instant::now() < deadline, "{devices:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn nmcli(nm: &NetworkManagerDaemon, args: &[&str]) -> BTreeSet<String> {
    let out = nm.nmcli().args(args).output().expect("nmcli");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .collect()
}

fn ours(nm: &NetworkManagerDaemon, args: &[&str]) -> Run {
    let mut full = vec!["--bus", nm.bus_address()];
    full.extend_from_slice(args);
    run(netmirror(&full))
}

/// The non-link-local addresses of `dev` in the sandbox, as `addr/prefix`.
fn addresses(nm: &NetworkManagerDaemon, dev: &str) -> BTreeSet<String> {
    let out = nm
        .netns_command("ip")
        .args(["-j", "addr", "show", "dev", dev])
        .output()
        .unwrap();
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    json.as_array()
        .into_iter()
        .flatten()
        .flat_map(|link| link["addr_info"].as_array().cloned().unwrap_or_default())
        .filter(|a| a["scope"] != "link")
        .map(|a| format!("{}/{}", a["local"].as_str().unwrap_or(""), a["prefixlen"]))
        .collect()
}

fn addresses_until(nm: &NetworkManagerDaemon, dev: &str, want: &[&str]) -> BTreeSet<String> {
    let want: BTreeSet<String> = want.iter().map(|s| (*s).to_owned()).collect();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let got = addresses(nm, dev);
        if got == want || Instant::now() > deadline {
            return got;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The profile's settings as nmcli shows them, without what differs between any two profiles.
fn profile_fields(nm: &NetworkManagerDaemon, id: &str) -> BTreeSet<String> {
    nmcli(
        nm,
        &[
            "-t",
            "-f",
            "connection,802-3-ethernet,ipv4,ipv6",
            "connection",
            "show",
            id,
        ],
    )
    .into_iter()
    .filter(|line| {
        ![
            "connection.id:",
            "connection.uuid:",
            "connection.timestamp:",
        ]
        .iter()
        .any(|skip| line.starts_with(skip))
    })
    .collect()
}

const STATIC: &[&str] = &[
    "type",
    "ethernet",
    "ifname",
    "va0",
    "autoconnect",
    "no",
    "ip4",
    "192.0.2.1/24",
    "gw4",
    "192.0.2.254",
    "ip6",
    "2001:db8:1::1/64",
    "ipv4.dns",
    "192.0.2.53",
    "ipv4.routes",
    "198.51.100.0/24 192.0.2.2",
];

#[test]
fn connection_commands_print_as_nmcli_and_change_nm_and_the_kernel() {
    let nm = daemon();

    // add: nmcli's message, and the same profile nmcli makes from the same words.
    let mut args = vec!["nm", "connection", "add"];
    args.extend_from_slice(STATIC);
    args.extend_from_slice(&["con-name", "s1"]);
    let added = ours(&nm, &args);
    let uuid = nmcli(&nm, &["-g", "connection.uuid", "connection", "show", "s1"]);
    let uuid = uuid.first().expect("s1 exists");
    assert_eq!(
        added.ok(),
        format!("Connection 's1' ({uuid}) successfully added.\n")
    );
    let mut args = vec!["connection", "add"];
    args.extend_from_slice(STATIC);
    args.extend_from_slice(&["con-name", "n1"]);
    let out = nm.nmcli().args(&args).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let fields = profile_fields(&nm, "s1");
    for want in [
        "ipv4.addresses:192.0.2.1/24",
        "ipv4.gateway:192.0.2.254",
        "ipv4.dns:192.0.2.53",
        "ipv4.method:manual",
        "ipv6.addresses:2001:db8:1::1/64",
        "connection.interface-name:va0",
        "connection.autoconnect:no",
    ] {
        assert!(fields.contains(want), "{want} not in {fields:#?}");
    }
    assert_eq!(settings_of(&nm, "s1"), settings_of(&nm, "n1"));
    assert!(nm.keyfile_dir().join("s1.nmconnection").exists());

    // up: nmcli's message; the kernel has the addresses.
    let up = ours(&nm, &["nm", "connection", "up", "s1"]);
    assert!(
        up.ok()
            .starts_with("Connection successfully activated (D-Bus active path: /org/freedesktop/NetworkManager/ActiveConnection/"),
        "{up:?}"
    );
    assert_eq!(
        addresses_until(&nm, "va0", &["192.0.2.1/24", "2001:db8:1::1/64"]),
        BTreeSet::from(["192.0.2.1/24".to_owned(), "2001:db8:1::1/64".to_owned()])
    );
    assert!(
        nmcli(
            &nm,
            &["-t", "-f", "NAME,DEVICE", "connection", "show", "--active"]
        )
        .contains("s1:va0")
    );

    // modify + reapply: nmcli and the kernel follow.
    ours(
        &nm,
        &[
            "nm",
            "connection",
            "modify",
            "s1",
            "+ipv4.addresses",
            "192.0.2.9/24",
        ],
    )
    .ok();
    assert_eq!(
        nmcli(&nm, &["-g", "ipv4.addresses", "connection", "show", "s1"]),
        BTreeSet::from(["192.0.2.1/24, 192.0.2.9/24".to_owned()])
    );
    let reapplied = ours(&nm, &["nm", "device", "reapply", "va0"]);
    assert_eq!(
        reapplied.ok(),
        "Connection successfully reapplied to device 'va0'.\n"
    );
    assert_eq!(
        addresses_until(
            &nm,
            "va0",
            &["192.0.2.1/24", "192.0.2.9/24", "2001:db8:1::1/64"]
        )
        .len(),
        3
    );

    // down --json: the result, the active path, the device and nmcli's reasons.
    let down = ours(&nm, &["--json", "nm", "connection", "down", "s1"]).json();
    assert_eq!(down["result"], "deactivated", "{down}");
    assert_eq!(down["device"], "va0");
    assert!(
        down["active"]
            .as_str()
            .unwrap()
            .starts_with("/org/freedesktop/NetworkManager/ActiveConnection/")
    );
    assert_eq!(
        down["device_state_reason"],
        "Device disconnected by user or client"
    );
    assert!(addresses_until(&nm, "va0", &[]).is_empty());

    // up --json on a named device.
    let up = ours(
        &nm,
        &["--json", "nm", "connection", "up", "s1", "ifname", "va0"],
    )
    .json();
    assert_eq!(up["result"], "activated", "{up}");
    assert_eq!(up["device"], "va0");

    // delete: nmcli's message; the profile and its keyfile are gone.
    let deleted = ours(&nm, &["nm", "connection", "delete", "s1", "n1"]);
    assert_eq!(
        deleted.ok().lines().next().unwrap(),
        format!("Connection 's1' ({uuid}) successfully deleted.")
    );
    assert!(!nmcli(&nm, &["-t", "-f", "NAME", "connection"]).contains("s1"));
    assert!(!nm.keyfile_dir().join("s1.nmconnection").exists());
    assert!(addresses_until(&nm, "va0", &[]).is_empty());

    ours(&nm, &["nm", "connection", "reload"]).ok();
}

#[test]
fn bad_input_and_failed_activations_exit_1_with_one_line_and_change_nothing() {
    let nm = daemon();
    ours(
        &nm,
        &[
            "nm",
            "connection",
            "add",
            "type",
            "ethernet",
            "ifname",
            "va0",
            "con-name",
            "keep",
        ],
    )
    .ok();
    let before = nmcli(&nm, &["-t", "-f", "NAME,UUID,TYPE,DEVICE", "connection"]);
    let settings_before = profile_fields(&nm, "keep");

    let cases: &[(&[&str], &str)] = &[
        (
            &[
                "nm",
                "connection",
                "add",
                "type",
                "ethernet",
                "ipv4.adresses",
                "192.0.2.1/24",
            ],
            "netmirror: invalid property 'ipv4.adresses': setting 'ipv4' has no property 'adresses'\n",
        ),
        (
            &[
                "nm",
                "connection",
                "add",
                "type",
                "ethernet",
                "foo.bar",
                "1",
            ],
            "netmirror: invalid property 'foo.bar': unknown setting 'foo'\n",
        ),
        (
            &[
                "nm",
                "connection",
                "add",
                "type",
                "ethernet",
                "ip4",
                "192.0.2.300/24",
            ],
            "netmirror: invalid value '192.0.2.300/24' for 'ipv4.addresses': '192.0.2.300/24' \
             is not an IPv4 address with a prefix (192.0.2.1/24)\n",
        ),
        (
            &[
                "nm",
                "connection",
                "modify",
                "keep",
                "ip4",
                "192.0.2.1/24",
                "ipv4.method",
                "static",
            ],
            "netmirror: invalid value 'static' for 'ipv4.method': expected one of auto, \
             link-local, manual, shared, disabled\n",
        ),
        (
            &[
                "nm",
                "connection",
                "modify",
                "nosuch",
                "ipv4.method",
                "auto",
            ],
            "netmirror: profile \"nosuch\" not found\n",
        ),
        (
            &["nm", "connection", "up", "nosuch"],
            "netmirror: profile \"nosuch\" not found\n",
        ),
        (
            &["nm", "connection", "delete", "keep", "nosuch"],
            "netmirror: profile \"nosuch\" not found\n",
        ),
        (
            &["nm", "device", "disconnect", "nothere0"],
            "netmirror: device \"nothere0\" not found\n",
        ),
    ];
    for (args, message) in cases {
        let res = ours(&nm, args);
        assert_eq!(res.fails(1), *message, "{args:?}");
    }
    assert_eq!(
        nmcli(&nm, &["-t", "-f", "NAME,UUID,TYPE,DEVICE", "connection"]),
        before
    );
    assert_eq!(profile_fields(&nm, "keep"), settings_before);

    // A profile for a missing device: NetworkManager's reason, as nmcli prints it.
    ours(
        &nm,
        &[
            "nm",
            "connection",
            "add",
            "type",
            "ethernet",
            "ifname",
            "nothere0",
            "con-name",
            "miss",
            "autoconnect",
            "no",
        ],
    )
    .ok();
    let ours_failed = ours(&nm, &["nm", "connection", "up", "miss"]);
    let message = ours_failed
        .fails(1)
        .trim_start_matches("netmirror: ")
        .trim_end()
        .to_owned();
    let out = nm
        .nmcli()
        .args(["connection", "up", "miss"])
        .output()
        .unwrap();
    let theirs = String::from_utf8_lossy(&out.stderr);
    assert!(
        message.starts_with("Connection activation failed: No suitable device found"),
        "{message}"
    );
    assert!(
        theirs.contains(&message),
        "nmcli: {theirs}\nours: {message}"
    );

    // DHCP that nobody answers: `failed`, with the device's reason nmcli gives; exit 1.
    ours(
        &nm,
        &[
            "nm",
            "connection",
            "add",
            "type",
            "ethernet",
            "ifname",
            "va0",
            "con-name",
            "dhcp",
            "autoconnect",
            "no",
            "ipv4.dhcp-timeout",
            "3",
            "ipv4.may-fail",
            "no",
            "ipv6.method",
            "disabled",
        ],
    )
    .ok();
    let failed = ours(
        &nm,
        &["--json", "nm", "connection", "up", "dhcp", "-w", "30"],
    );
    assert_eq!(failed.code(), 1, "{failed:?}");
    let json: serde_json::Value = serde_json::from_str(&failed.stdout).unwrap();
    assert_eq!(json["result"], "failed", "{json}");
    assert_eq!(json["device"], "va0");
    let reason = "IP configuration could not be reserved (no available address, timeout, etc.)";
    assert_eq!(json["device_state_reason"], reason);
    assert_eq!(
        failed.stderr,
        format!("netmirror: Connection activation failed: {reason}\n")
    );
    let out = nm
        .nmcli()
        .args(["connection", "up", "dhcp"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains(reason));
}

#[test]
fn device_global_and_checkpoint_commands() {
    let nm = daemon();
    ours(
        &nm,
        &[
            "nm",
            "connection",
            "add",
            "type",
            "ethernet",
            "ifname",
            "va0",
            "con-name",
            "c1",
            "autoconnect",
            "no",
            "ip4",
            "192.0.2.1/24",
        ],
    )
    .ok();
    ours(&nm, &["nm", "connection", "up", "c1"]).ok();
    let up = addresses_until(&nm, "va0", &["192.0.2.1/24"]);

    // A checkpoint, a disconnect that takes the address away, and the rollback brings it back.
    let created = ours(&nm, &["--json", "nm", "checkpoint", "create", "va0"]).json();
    let checkpoint = created["checkpoint"].as_str().unwrap().to_owned();
    assert!(checkpoint.starts_with("/org/freedesktop/NetworkManager/Checkpoint/"));
    assert_eq!(
        ours(&nm, &["nm", "device", "disconnect", "va0"]).ok(),
        "Device 'va0' successfully disconnected.\n"
    );
    assert!(addresses_until(&nm, "va0", &[]).is_empty());
    let rolled = ours(&nm, &["--json", "nm", "checkpoint", "rollback"]).json();
    assert_eq!(rolled["checkpoint"], checkpoint.as_str());
    assert_eq!(rolled["devices"].as_object().unwrap().len(), 1, "{rolled}");
    assert_eq!(addresses_until(&nm, "va0", &["192.0.2.1/24"]), up);

    // device connect picks the profile again.
    ours(&nm, &["nm", "device", "disconnect", "va0"]).ok();
    let connected = ours(&nm, &["--json", "nm", "device", "connect", "va0"]).json();
    assert_eq!(connected["result"], "activated", "{connected}");

    ours(&nm, &["nm", "device", "set", "vb0", "managed", "no"]).ok();
    assert!(nmcli(&nm, &["-t", "-f", "DEVICE,STATE", "device"]).contains("vb0:unmanaged"));
    ours(
        &nm,
        &[
            "nm",
            "device",
            "set",
            "vb0",
            "managed",
            "yes",
            "autoconnect",
            "no",
        ],
    )
    .ok();
    assert!(!nmcli(&nm, &["-t", "-f", "DEVICE,STATE", "device"]).contains("vb0:unmanaged"));

    ours(&nm, &["nm", "networking", "off"]).ok();
    assert_eq!(
        nmcli(&nm, &["networking"]),
        BTreeSet::from(["disabled".to_owned()])
    );
    ours(&nm, &["nm", "networking", "on"]).ok();
    assert_eq!(
        nmcli(&nm, &["networking"]),
        BTreeSet::from(["enabled".to_owned()])
    );

    ours(&nm, &["nm", "radio", "wifi", "off"]).ok();
    assert_eq!(
        nmcli(&nm, &["radio", "wifi"]),
        BTreeSet::from(["disabled".to_owned()])
    );
    ours(&nm, &["nm", "radio", "wifi", "on"]).ok();
    assert_eq!(
        nmcli(&nm, &["radio", "wifi"]),
        BTreeSet::from(["enabled".to_owned()])
    );

    // Create and destroy.
    let created = ours(&nm, &["nm", "checkpoint", "create"]);
    let path = created.ok().trim().to_owned();
    ours(&nm, &["nm", "checkpoint", "destroy", &path]).ok();
    assert_eq!(
        ours(&nm, &["nm", "checkpoint", "destroy"]).fails(1),
        "netmirror: NetworkManager holds no checkpoint\n"
    );
}

#[test]
fn a_refusal_by_networkmanager_reads_not_authorized() {
    // Without polkit, `root-only` lets only root change anything: another user is refused
    // with NetworkManager's PermissionDenied.
    let nm = NetworkManagerDaemon::builder()
        .config("[main]\nauth-polkit=root-only")
        .start()
        .expect("start NetworkManager");
    // The bus's socket is in a private temp dir: let the other user reach it.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(nm.bus().dir(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut command = std::process::Command::new("setpriv");
    command
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(env!("CARGO_BIN_EXE_netmirror"))
        .args(["--bus", nm.bus_address(), "nm", "networking", "off"])
        .env_remove("RUST_LOG")
        .env("NO_COLOR", "1");
    let refused = run(command);
    let message = refused.fails(1);
    assert!(
        message.starts_with("netmirror: not authorized to disable networking: "),
        "{message}"
    );
    // Nothing changed; root may.
    assert_eq!(
        nmcli(&nm, &["networking"]),
        BTreeSet::from(["enabled".to_owned()])
    );
    ours(&nm, &["nm", "networking", "off"]).ok();
    assert_eq!(
        nmcli(&nm, &["networking"]),
        BTreeSet::from(["disabled".to_owned()])
    );
}

#[test]
fn add_gives_the_profile_nmcli_gives_for_bridge_bond_vlan_and_port() {
    let nm = NetworkManagerDaemon::start().expect("start NetworkManager");
    let cases: &[&[&str]] = &[
        &[
            "type",
            "bridge",
            "ifname",
            "br9",
            "bridge.stp",
            "no",
            "bridge.priority",
            "4096",
            "autoconnect",
            "no",
        ],
        &[
            "type",
            "bond",
            "ifname",
            "bond9",
            "bond.options",
            "mode=active-backup,miimon=100",
            "ipv4.method",
            "disabled",
            "ipv6.method",
            "ignore",
        ],
        &[
            "type",
            "vlan",
            "ifname",
            "vlan9",
            "dev",
            "bond9",
            "id",
            "9",
            "ip4",
            "198.51.100.1/24",
            "ipv6.method",
            "disabled",
            "autoconnect",
            "no",
        ],
        &[
            "type",
            "ethernet",
            "ifname",
            "port9",
            "master",
            "br9",
            "slave-type",
            "bridge",
            "bridge-port.path-cost",
            "50",
            "802-3-ethernet.mac-address",
            "02:00:00:00:00:09",
            "ethernet.mtu",
            "1400",
        ],
    ];
    for (i, words) in cases.iter().enumerate() {
        let ours_id = format!("ours-{i}");
        let theirs_id = format!("theirs-{i}");
        let mut args = vec!["nm", "connection", "add"];
        args.extend_from_slice(words);
        args.extend_from_slice(&["con-name", &ours_id]);
        self::ours(&nm, &args).ok();
        let mut args = vec!["connection", "add"];
        args.extend_from_slice(words);
        args.extend_from_slice(&["con-name", &theirs_id]);
        let out = nm.nmcli().args(&args).output().unwrap();
        assert!(out.status.success(), "nmcli {args:?}: {out:?}");
        let settings = settings_of(&nm, &ours_id);
        assert!(settings.as_object().unwrap().len() >= 3, "{settings}");
        assert_eq!(settings, settings_of(&nm, &theirs_id), "{words:?}");
    }

    // modify, with `+` and `-` on lists: the same change as nmcli's.
    let change = [
        "+ipv4.addresses",
        "192.0.2.5/24",
        "-ipv4.addresses",
        "198.51.100.1/24",
        "ipv4.gateway",
        "192.0.2.254",
        "+ipv4.dns",
        "192.0.2.53",
        "ipv4.dns-search",
        "example.test",
        "ipv6.method",
        "manual",
        "ipv6.addresses",
        "2001:db8::9/64",
        "ipv6.addr-gen-mode",
        "eui64",
    ];
    let mut args = vec!["nm", "connection", "modify", "ours-2"];
    args.extend_from_slice(&change);
    self::ours(&nm, &args).ok();
    let mut args = vec!["connection", "modify", "theirs-2"];
    args.extend_from_slice(&change);
    let out = nm.nmcli().args(&args).output().unwrap();
    assert!(out.status.success(), "nmcli {args:?}: {out:?}");
    let addresses = nmcli(
        &nm,
        &["-g", "ipv4.addresses", "connection", "show", "ours-2"],
    );
    assert!(
        addresses.iter().any(|a| a.contains("192.0.2.5/24")),
        "{addresses:?}"
    );
    assert_eq!(settings_of(&nm, "ours-2"), settings_of(&nm, "theirs-2"));
}
