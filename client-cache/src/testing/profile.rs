//! [`Profile`]: a NetworkManager connection profile written as a keyfile before the daemon
//! starts, and the benchmark's set of profiles.

use std::fmt::Write as _;
use std::fs;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// A keyfile connection profile (`<id>.nmconnection`) for [`NetworkManagerDaemon`] to load.
///
/// Every profile is `autoconnect=false` with `ipv4.method=disabled` and `ipv6.method=ignore`, so
/// the daemon never activates it: software profiles (bond, vlan, bridge) give *unrealized*
/// devices, which need no kernel module.
///
/// [`NetworkManagerDaemon`]: super::NetworkManagerDaemon
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Profile {
    id: String,
    kind: String,
    interface_name: String,
    /// The type's own section (`[bond]`, `[vlan]` ...), without the header.
    type_settings: String,
}

impl Profile {
    /// A profile of NetworkManager type `kind` (the keyfile's `connection.type`, e.g. `bond`),
    /// named `id`, for the interface `interface_name`, with an empty `[kind]` section.
    pub fn new(id: &str, kind: &str, interface_name: &str) -> Self {
        Self {
            id: id.to_owned(),
            kind: kind.to_owned(),
            interface_name: interface_name.to_owned(),
            type_settings: String::new(),
        }
    }

    /// A round-robin bond.
    pub fn bond(id: &str, interface_name: &str) -> Self {
        Self::new(id, "bond", interface_name).with_setting("mode", "balance-rr")
    }

    /// A VLAN with id `vlan_id` on the interface `parent`.
    pub fn vlan(id: &str, interface_name: &str, parent: &str, vlan_id: u16) -> Self {
        Self::new(id, "vlan", interface_name)
            .with_setting("id", &vlan_id.to_string())
            .with_setting("parent", parent)
    }

    /// A bridge without STP.
    pub fn bridge(id: &str, interface_name: &str) -> Self {
        Self::new(id, "bridge", interface_name).with_setting("stp", "false")
    }

    /// An Ethernet profile bound to an interface name.
    pub fn ethernet(id: &str, interface_name: &str) -> Self {
        Self::new(id, "ethernet", interface_name)
    }

    /// Adds `key=value` to the type's own section (`[bond]`, `[vlan]` ...).
    pub fn with_setting(mut self, key: &str, value: &str) -> Self {
        // Writing to a `String` cannot fail.
        let _ = writeln!(self.type_settings, "{key}={value}");
        self
    }

    /// The profile's name (`connection.id`), also its keyfile's name.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The NetworkManager type (`connection.type`).
    pub fn kind(&self) -> &str {
        &self.kind
    }

    /// The interface the profile is for (`connection.interface-name`).
    pub fn interface_name(&self) -> &str {
        &self.interface_name
    }

    /// The profile's UUID: derived from its id, so the same profile always has the same one.
    pub fn uuid(&self) -> String {
        let high = fnv1a(0xcbf2_9ce4_8422_2325, self.id.as_bytes());
        let low = fnv1a(high ^ 0x9e37_79b9_7f4a_7c15, self.id.as_bytes());
        // Version 8 (custom), variant 1 (RFC 9562).
        let high = (high & !0xf000) | 0x8000;
        let low = (low & !(0b11 << 62)) | (0b10 << 62);
        format!(
            "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
            high >> 32,
            (high >> 16) & 0xffff,
            high & 0xffff,
            low >> 48,
            low & 0xffff_ffff_ffff
        )
    }

    /// The keyfile's text.
    pub fn keyfile(&self) -> String {
        format!(
            "[connection]\nid={id}\nuuid={uuid}\ntype={kind}\ninterface-name={ifname}\n\
             autoconnect=false\n\n[{kind}]\n{settings}\n[ipv4]\nmethod=disabled\n\n\
             [ipv6]\nmethod=ignore\n",
            id = self.id,
            uuid = self.uuid(),
            kind = self.kind,
            ifname = self.interface_name,
            settings = self.type_settings,
        )
    }

    /// The keyfile's name in a keyfile directory.
    pub fn keyfile_name(&self) -> String {
        format!("{}.nmconnection", self.id)
    }

    /// Writes the keyfile into `dir`, readable by its owner only (NetworkManager ignores
    /// keyfiles others can read), and returns its path.
    pub fn write_keyfile(&self, dir: &Path) -> io::Result<PathBuf> {
        let path = dir.join(self.keyfile_name());
        fs::write(&path, self.keyfile())?;
        fs::set_permissions(&path, fs::Permissions::from_mode(0o600))?;
        Ok(path)
    }
}

/// The first `n_profiles` profiles of the benchmark's shape, in this order: 30 bonds
/// `c-bond-<i>` (interface `bond-<i>`), each followed by its VLANs `c-vlan-<i>-<j>` with ids
/// `j = i..=30` (interface `vlan-<i>-<j>`): 495 profiles; then 19 bridges `c-br-<k>` and as many
/// Ethernet profiles `c-eth-<k>` as needed.
pub fn benchmark_profiles(n_profiles: usize) -> Vec<Profile> {
    let mut profiles = Vec::with_capacity(n_profiles);
    'bonds: for bond_idx in 1..=30u16 {
        if profiles.len() == n_profiles {
            break 'bonds;
        }
        let bond = format!("bond-{bond_idx}");
        profiles.push(Profile::bond(&format!("c-{bond}"), &bond));
        for vlan_id in bond_idx..=30 {
            if profiles.len() == n_profiles {
                break 'bonds;
            }
            let vlan = format!("vlan-{bond_idx}-{vlan_id}");
            profiles.push(Profile::vlan(&format!("c-{vlan}"), &vlan, &bond, vlan_id));
        }
    }
    for bridge_idx in 1..=19 {
        if profiles.len() == n_profiles {
            break;
        }
        let bridge = format!("br-{bridge_idx}");
        profiles.push(Profile::bridge(&format!("c-{bridge}"), &bridge));
    }
    let mut eth_idx = 1;
    while profiles.len() < n_profiles {
        let eth = format!("eth-{eth_idx}");
        profiles.push(Profile::ethernet(&format!("c-{eth}"), &eth));
        eth_idx += 1;
    }
    profiles
}

/// 64-bit FNV-1a of `bytes`, from `seed`.
fn fnv1a(seed: u64, bytes: &[u8]) -> u64 {
    bytes.iter().fold(seed, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3)
    })
}
