//! Typed views of NetworkManager's objects: thin, `Copy` wrappers over [`ObjectRef`].

use crate::{ObjectRef, Value};

use super::iface;

macro_rules! view {
    ($(#[$m:meta])* $name:ident = $iface:expr; {
        $( $(#[$fm:meta])* $f:ident: $kind:ident = $prop:literal; )*
    }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy)]
        pub struct $name<'a>(pub ObjectRef<'a>);

        impl<'a> $name<'a> {
            /// The interface this view reads.
            pub const INTERFACE: &'static str = $iface;

            /// The object's path.
            pub fn path(&self) -> &'a str {
                self.0.path()
            }

            /// The underlying cached object.
            pub fn object(&self) -> ObjectRef<'a> {
                self.0
            }

            /// Any property of this interface, by name.
            pub fn property(&self, name: &str) -> Option<&'a Value> {
                self.0.prop($iface, name)
            }

            $(
                $(#[$fm])*
                pub fn $f(&self) -> view!(@ty $kind) {
                    view!(@get $kind, self.0.prop($iface, $prop))
                }
            )*
        }
    };
    (@ty str) => { &'a str };
    (@ty u32) => { u32 };
    (@ty u64) => { u64 };
    (@ty i32) => { i32 };
    (@ty bool) => { bool };
    (@ty strs) => { &'a [Box<str>] };
    (@ty bytes) => { &'a [u8] };
    (@get str, $v:expr) => { $v.and_then(Value::as_str).unwrap_or("") };
    (@get u32, $v:expr) => { $v.and_then(Value::as_u32).unwrap_or(0) };
    (@get u64, $v:expr) => { $v.and_then(Value::as_u64).unwrap_or(0) };
    (@get i32, $v:expr) => { $v.and_then(Value::as_i64).and_then(|v| i32::try_from(v).ok()).unwrap_or(0) };
    (@get bool, $v:expr) => { $v.and_then(Value::as_bool).unwrap_or(false) };
    (@get strs, $v:expr) => { $v.and_then(Value::as_strs).unwrap_or(&[]) };
    (@get bytes, $v:expr) => { $v.and_then(Value::as_bytes).unwrap_or(&[]) };
}

view! {
    /// The NetworkManager object (`/org/freedesktop/NetworkManager`).
    NetworkManager = iface::NM; {
        /// The daemon's version.
        version: str = "Version";
        /// `NMState`.
        state: u32 = "State";
        /// Whether the daemon is still starting up.
        startup: bool = "Startup";
        /// Whether networking is enabled.
        networking_enabled: bool = "NetworkingEnabled";
        /// Whether Wi-Fi is enabled.
        wireless_enabled: bool = "WirelessEnabled";
        /// `NMConnectivityState`.
        connectivity: u32 = "Connectivity";
        /// `NMMetered`.
        metered: u32 = "Metered";
        /// Type of the primary connection.
        primary_connection_type: str = "PrimaryConnectionType";
    }
}

impl<'a> NetworkManager<'a> {
    /// Realized devices.
    pub fn devices(&self) -> Vec<Device<'a>> {
        self.0.targets(iface::NM, "Devices").map(Device).collect()
    }
    /// All devices, realized or not.
    pub fn all_devices(&self) -> Vec<Device<'a>> {
        self.0
            .targets(iface::NM, "AllDevices")
            .map(Device)
            .collect()
    }
    /// Active connections.
    pub fn active_connections(&self) -> Vec<ActiveConnection<'a>> {
        self.0
            .targets(iface::NM, "ActiveConnections")
            .map(ActiveConnection)
            .collect()
    }
    /// The primary active connection.
    pub fn primary_connection(&self) -> Option<ActiveConnection<'a>> {
        self.0
            .target(iface::NM, "PrimaryConnection")
            .map(ActiveConnection)
    }
}

view! {
    /// A device (`org.freedesktop.NetworkManager.Device`); type-specific interfaces are read
    /// with [`Device::typed`].
    Device = iface::DEVICE; {
        /// Interface name.
        interface: str = "Interface";
        /// IP interface name, if different.
        ip_interface: str = "IpInterface";
        /// `NMDeviceType`.
        device_type: u32 = "DeviceType";
        /// `NMDeviceState`.
        state: u32 = "State";
        /// Driver.
        driver: str = "Driver";
        /// Hardware address.
        hw_address: str = "HwAddress";
        /// MTU.
        mtu: u32 = "Mtu";
        /// Whether the device is managed.
        managed: bool = "Managed";
        /// Whether the device may autoconnect.
        autoconnect: bool = "Autoconnect";
        /// Whether the device exists in the kernel.
        real: bool = "Real";
        /// Kernel interface index.
        ifindex: i32 = "Ifindex";
        /// udev path.
        udi: str = "Udi";
        /// Device path.
        path_: str = "Path";
    }
}

impl<'a> Device<'a> {
    /// The active connection on this device.
    pub fn active_connection(&self) -> Option<ActiveConnection<'a>> {
        self.0
            .target(iface::DEVICE, "ActiveConnection")
            .map(ActiveConnection)
    }
    /// Profiles that could be activated on this device (hidden ones included, as in NMClient).
    pub fn available_connections(&self) -> Vec<Profile<'a>> {
        self.0
            .targets(iface::DEVICE, "AvailableConnections")
            .map(Profile)
            .collect()
    }
    /// IPv4 configuration.
    pub fn ip4_config(&self) -> Option<Ip4Config<'a>> {
        self.0.target(iface::DEVICE, "Ip4Config").map(Ip4Config)
    }
    /// IPv6 configuration.
    pub fn ip6_config(&self) -> Option<Ip6Config<'a>> {
        self.0.target(iface::DEVICE, "Ip6Config").map(Ip6Config)
    }
    /// DHCPv4 configuration.
    pub fn dhcp4_config(&self) -> Option<Dhcp4Config<'a>> {
        self.0.target(iface::DEVICE, "Dhcp4Config").map(Dhcp4Config)
    }
    /// DHCPv6 configuration.
    pub fn dhcp6_config(&self) -> Option<Dhcp6Config<'a>> {
        self.0.target(iface::DEVICE, "Dhcp6Config").map(Dhcp6Config)
    }
    /// The type-specific interface (e.g. `org.freedesktop.NetworkManager.Device.Vlan`), if any.
    pub fn typed(&self) -> Option<&'a crate::Interface> {
        self.0.object().interfaces().find(|i| {
            i.name()
                .starts_with("org.freedesktop.NetworkManager.Device.")
                && i.name() != "org.freedesktop.NetworkManager.Device.Statistics"
        })
    }
    /// nmcli's name of the device type (`ethernet`, `bond`, `vlan`, ...).
    pub fn type_name(&self) -> &'static str {
        device_type_name(self.device_type())
    }
    /// nmcli's name of the device state (`connected`, `unavailable`, ...).
    pub fn state_name(&self) -> &'static str {
        device_state_name(self.state())
    }
    /// Access points seen (Wi-Fi devices).
    pub fn access_points(&self) -> Vec<AccessPoint<'a>> {
        self.0
            .targets(
                "org.freedesktop.NetworkManager.Device.Wireless",
                "AccessPoints",
            )
            .map(AccessPoint)
            .collect()
    }
}

view! {
    /// The Settings object.
    Settings = iface::SETTINGS; {
        /// The host name.
        hostname: str = "Hostname";
        /// Whether profiles can be modified.
        can_modify: bool = "CanModify";
    }
}

impl<'a> Settings<'a> {
    /// All profiles, hidden ones included.
    pub fn connections(&self) -> Vec<Profile<'a>> {
        self.0
            .targets(iface::SETTINGS, "Connections")
            .map(Profile)
            .collect()
    }
}

view! {
    /// A profile (`org.freedesktop.NetworkManager.Settings.Connection`) with its settings.
    Profile = iface::CONNECTION; {
        /// Whether the profile has unsaved changes.
        unsaved: bool = "Unsaved";
        /// `NMSettingsConnectionFlags`.
        flags: u32 = "Flags";
        /// The file the profile is stored in.
        filename: str = "Filename";
    }
}

impl<'a> Profile<'a> {
    /// The settings (`a{sa{sv}}`, from `GetSettings`), once fetched.
    pub fn settings(&self) -> Option<&'a Value> {
        self.0.object().fetched()
    }
    /// A setting's value, e.g. `("connection", "id")`.
    pub fn setting(&self, setting: &str, key: &str) -> Option<&'a Value> {
        self.settings()?.get(setting)?.get(key)
    }
    /// `connection.id`.
    pub fn id(&self) -> &'a str {
        self.setting("connection", "id")
            .and_then(Value::as_str)
            .unwrap_or("")
    }
    /// `connection.uuid`.
    pub fn uuid(&self) -> &'a str {
        self.setting("connection", "uuid")
            .and_then(Value::as_str)
            .unwrap_or("")
    }
    /// `connection.type`.
    pub fn connection_type(&self) -> &'a str {
        self.setting("connection", "type")
            .and_then(Value::as_str)
            .unwrap_or("")
    }
    /// `connection.interface-name`.
    pub fn interface_name(&self) -> &'a str {
        self.setting("connection", "interface-name")
            .and_then(Value::as_str)
            .unwrap_or("")
    }
}

view! {
    /// An active connection.
    ActiveConnection = iface::ACTIVE; {
        /// The profile's id.
        id: str = "Id";
        /// The profile's UUID.
        uuid: str = "Uuid";
        /// The profile's type.
        connection_type: str = "Type";
        /// `NMActiveConnectionState`.
        state: u32 = "State";
        /// Whether this is the default IPv4 route's connection.
        default4: bool = "Default";
        /// Whether this is the default IPv6 route's connection.
        default6: bool = "Default6";
        /// Whether this is a VPN.
        vpn: bool = "Vpn";
    }
}

impl<'a> ActiveConnection<'a> {
    /// The profile (even a hidden one, as in NMClient).
    pub fn connection(&self) -> Option<Profile<'a>> {
        self.0.target(iface::ACTIVE, "Connection").map(Profile)
    }
    /// The devices.
    pub fn devices(&self) -> Vec<Device<'a>> {
        self.0
            .targets(iface::ACTIVE, "Devices")
            .map(Device)
            .collect()
    }
    /// IPv4 configuration.
    pub fn ip4_config(&self) -> Option<Ip4Config<'a>> {
        self.0.target(iface::ACTIVE, "Ip4Config").map(Ip4Config)
    }
    /// IPv6 configuration.
    pub fn ip6_config(&self) -> Option<Ip6Config<'a>> {
        self.0.target(iface::ACTIVE, "Ip6Config").map(Ip6Config)
    }
}

view! {
    /// An IPv4 configuration.
    Ip4Config = iface::IP4; {
        /// The gateway.
        gateway: str = "Gateway";
        /// Search domains.
        domains: strs = "Domains";
        /// Searches.
        searches: strs = "Searches";
    }
}

view! {
    /// An IPv6 configuration.
    Ip6Config = iface::IP6; {
        /// The gateway.
        gateway: str = "Gateway";
        /// Search domains.
        domains: strs = "Domains";
        /// Searches.
        searches: strs = "Searches";
    }
}

view! {
    /// A DHCPv4 lease.
    Dhcp4Config = iface::DHCP4; {}
}

view! {
    /// A DHCPv6 lease.
    Dhcp6Config = iface::DHCP6; {}
}

impl<'a> Dhcp4Config<'a> {
    /// One DHCP option.
    pub fn option(&self, name: &str) -> Option<&'a Value> {
        self.property("Options")?.get(name)
    }
}

impl<'a> Dhcp6Config<'a> {
    /// One DHCP option.
    pub fn option(&self, name: &str) -> Option<&'a Value> {
        self.property("Options")?.get(name)
    }
}

view! {
    /// A Wi-Fi access point.
    AccessPoint = iface::AP; {
        /// The SSID.
        ssid: bytes = "Ssid";
        /// The BSSID.
        hw_address: str = "HwAddress";
        /// Frequency in MHz.
        frequency: u32 = "Frequency";
        /// Signal strength in percent.
        strength_: u32 = "Strength";
        /// `NM80211Mode`.
        mode: u32 = "Mode";
    }
}

/// nmcli's name of an `NMDeviceType`: the type description libnm gives the device.
///
/// libnm describes a device by its class name without the `NMDevice` prefix, lowercased, so
/// a veth (`NMDeviceVeth`, a kind of Ethernet device) is `ethernet`, an IP tunnel
/// (`NMDeviceIPTunnel`) is `iptunnel` and an OLPC mesh (`NMDeviceOlpcMesh`) is `olpcmesh`;
/// the OVS devices name themselves (`ovs-interface`, ...). A modem says `gsm` or `cdma` by
/// its capabilities and a generic device says its own `TypeDescription`; this table has only
/// the type to go by and gives `gsm` and `generic`.
pub fn device_type_name(t: u32) -> &'static str {
    match t {
        1 | 20 => "ethernet",
        2 => "wifi",
        5 => "bt",
        6 => "olpcmesh",
        7 => "wimax",
        8 => "gsm",
        9 => "infiniband",
        10 => "bond",
        11 => "vlan",
        12 => "adsl",
        13 => "bridge",
        14 => "generic",
        15 => "team",
        16 => "tun",
        17 => "iptunnel",
        18 => "macvlan",
        19 => "vxlan",
        21 => "macsec",
        22 => "dummy",
        23 => "ppp",
        24 => "ovs-interface",
        25 => "ovs-port",
        26 => "ovs-bridge",
        27 => "wpan",
        28 => "6lowpan",
        29 => "wireguard",
        30 => "wifi-p2p",
        31 => "vrf",
        32 => "loopback",
        33 => "hsr",
        34 => "ipvlan",
        _ => "unknown",
    }
}

/// nmcli's name of an `NMDeviceState`.
pub fn device_state_name(s: u32) -> &'static str {
    match s {
        10 => "unmanaged",
        20 => "unavailable",
        30 => "disconnected",
        40 => "connecting (prepare)",
        50 => "connecting (configuring)",
        60 => "connecting (need authentication)",
        70 => "connecting (getting IP configuration)",
        80 => "connecting (checking IP connectivity)",
        90 => "connecting (starting secondary connections)",
        100 => "connected",
        110 => "deactivating",
        120 => "connection failed",
        _ => "unknown",
    }
}
