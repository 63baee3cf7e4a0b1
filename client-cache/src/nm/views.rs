//! Typed views of NetworkManager's objects: thin, `Copy` wrappers over [`ObjectRef`].

use netmirror_dbus_meta::nm::{
    ActivationStateFlags, ActiveConnectionState, ConnectivityState, DeviceCapabilities,
    DeviceInterfaceFlags, DeviceState, DeviceStateReason, DeviceType, Metered, RadioFlags, State,
};

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
    (@ty DeviceState) => { DeviceState };
    (@ty DeviceType) => { DeviceType };
    (@ty State) => { State };
    (@ty ConnectivityState) => { ConnectivityState };
    (@ty Metered) => { Metered };
    (@ty ActiveConnectionState) => { ActiveConnectionState };
    (@ty RadioFlags) => { RadioFlags };
    (@ty DeviceCapabilities) => { DeviceCapabilities };
    (@ty DeviceInterfaceFlags) => { DeviceInterfaceFlags };
    (@ty ActivationStateFlags) => { ActivationStateFlags };
    (@get str, $v:expr) => { $v.and_then(Value::as_str).unwrap_or("") };
    (@get u32, $v:expr) => { $v.and_then(Value::as_u32).unwrap_or(0) };
    (@get u64, $v:expr) => { $v.and_then(Value::as_u64).unwrap_or(0) };
    (@get i32, $v:expr) => { $v.and_then(Value::as_i64).and_then(|v| i32::try_from(v).ok()).unwrap_or(0) };
    (@get bool, $v:expr) => { $v.and_then(Value::as_bool).unwrap_or(false) };
    (@get strs, $v:expr) => { $v.and_then(Value::as_strs).unwrap_or(&[]) };
    (@get bytes, $v:expr) => { $v.and_then(Value::as_bytes).unwrap_or(&[]) };
    (@get RadioFlags, $v:expr) => { RadioFlags::from_bits($v.and_then(Value::as_u32).unwrap_or(0)) };
    (@get DeviceCapabilities, $v:expr) => { DeviceCapabilities::from_bits($v.and_then(Value::as_u32).unwrap_or(0)) };
    (@get DeviceInterfaceFlags, $v:expr) => { DeviceInterfaceFlags::from_bits($v.and_then(Value::as_u32).unwrap_or(0)) };
    (@get ActivationStateFlags, $v:expr) => { ActivationStateFlags::from_bits($v.and_then(Value::as_u32).unwrap_or(0)) };
    (@get $e:ident, $v:expr) => { $e::from_u32($v.and_then(Value::as_u32).unwrap_or(0)) };
}

view! {
    /// The NetworkManager object (`/org/freedesktop/NetworkManager`).
    NetworkManager = iface::NM; {
        /// The daemon's version.
        version: str = "Version";
        /// `NMState`.
        state: State = "State";
        /// Whether the daemon is still starting up.
        startup: bool = "Startup";
        /// Whether networking is enabled.
        networking_enabled: bool = "NetworkingEnabled";
        /// Whether Wi-Fi is enabled.
        wireless_enabled: bool = "WirelessEnabled";
        /// `NMConnectivityState`.
        connectivity: ConnectivityState = "Connectivity";
        /// `NMMetered`.
        metered: Metered = "Metered";
        /// Which radios exist (`NMRadioFlags`).
        radio_flags: RadioFlags = "RadioFlags";
        /// Whether the Wi-Fi hardware is enabled (rfkill).
        wireless_hardware_enabled: bool = "WirelessHardwareEnabled";
        /// Whether WWAN is enabled.
        wwan_enabled: bool = "WwanEnabled";
        /// Whether the WWAN hardware is enabled (rfkill).
        wwan_hardware_enabled: bool = "WwanHardwareEnabled";
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
        device_type: DeviceType = "DeviceType";
        /// `NMDeviceState`.
        state: DeviceState = "State";
        /// `NMMetered`.
        metered: Metered = "Metered";
        /// IPv4 connectivity.
        ip4_connectivity: ConnectivityState = "Ip4Connectivity";
        /// IPv6 connectivity.
        ip6_connectivity: ConnectivityState = "Ip6Connectivity";
        /// `NMDeviceCapabilities`.
        capabilities: DeviceCapabilities = "Capabilities";
        /// `NMDeviceInterfaceFlags`.
        interface_flags: DeviceInterfaceFlags = "InterfaceFlags";
        /// Driver version.
        driver_version: str = "DriverVersion";
        /// Firmware version.
        firmware_version: str = "FirmwareVersion";
        /// Whether firmware is missing.
        firmware_missing: bool = "FirmwareMissing";
        /// Whether NetworkManager's plugin for the device is missing.
        nm_plugin_missing: bool = "NmPluginMissing";
        /// Physical port id.
        physical_port_id: str = "PhysicalPortId";
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
    /// The kernel's interface index, when the daemon publishes it (`Ifindex`, NetworkManager
    /// 1.48 and later); `None` otherwise, never a made-up 0.
    pub fn ifindex(&self) -> Option<i32> {
        self.property("Ifindex")
            .and_then(Value::as_i64)
            .and_then(|v| i32::try_from(v).ok())
    }
    /// The state and the reason of its last change (`StateReason`).
    pub fn state_reason(&self) -> (DeviceState, DeviceStateReason) {
        state_reason(self.property("StateReason"))
            .unwrap_or((self.state(), DeviceStateReason::from_u32(0)))
    }
    /// The state as nmcli shows it: `connected (externally)` where the active connection is
    /// external (NetworkManager only follows what someone else configured, as on `lo`).
    pub fn state_text(&self) -> String {
        let state = self.state();
        let external = self
            .active_connection()
            .is_some_and(|ac| ac.state_flags().contains(ActivationStateFlags::EXTERNAL));
        match state.name_external() {
            Some(name) if external => name.to_owned(),
            _ => state.to_string(),
        }
    }
    /// libnm's class of the device (nmcli's `GENERAL.NM-TYPE`: `NMDeviceVeth`,
    /// `NMDeviceEthernet`, `NMDeviceLoopback`...), from its most specific type interface.
    pub fn nm_type(&self) -> Option<String> {
        let prefix = "org.freedesktop.NetworkManager.Device.";
        let names: Vec<&str> = self
            .0
            .object()
            .interfaces()
            .filter_map(|i| i.name().strip_prefix(prefix))
            .filter(|n| *n != "Statistics")
            .collect();
        let name = names.iter().find(|n| **n != "Wired").or(names.first())?;
        let class = match *name {
            "Wired" => "Ethernet",
            "Wireless" => "Wifi",
            other => other,
        };
        Some(format!("NMDevice{class}"))
    }
    /// nmcli's name of the device type (`ethernet`, `bond`, `vlan`, ...).
    pub fn type_name(&self) -> String {
        self.device_type().to_string()
    }
    /// The carrier of a wired device (`org.freedesktop.NetworkManager.Device.Wired`).
    pub fn carrier(&self) -> Option<bool> {
        self.0
            .prop("org.freedesktop.NetworkManager.Device.Wired", "Carrier")
            .and_then(Value::as_bool)
    }
    /// The speed in Mb/s of a wired device (0: unknown).
    pub fn speed(&self) -> Option<u32> {
        self.0
            .prop("org.freedesktop.NetworkManager.Device.Wired", "Speed")
            .and_then(Value::as_u32)
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
    /// `connection.type` by nmcli's short name (`ethernet` for `802-3-ethernet`, `wifi`...).
    pub fn type_name(&self) -> &'a str {
        type_alias(self.connection_type())
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
        state: ActiveConnectionState = "State";
        /// `NMActivationStateFlags`.
        state_flags: ActivationStateFlags = "StateFlags";
        /// Whether this is the default IPv4 route's connection.
        default4: bool = "Default";
        /// Whether this is the default IPv6 route's connection.
        default6: bool = "Default6";
        /// Whether this is a VPN.
        vpn: bool = "Vpn";
    }
}

impl<'a> ActiveConnection<'a> {
    /// The profile's type by nmcli's short name (`ethernet` for `802-3-ethernet`, ...).
    pub fn type_name(&self) -> &'a str {
        type_alias(self.connection_type())
    }
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
    /// DHCPv4 lease.
    pub fn dhcp4_config(&self) -> Option<Dhcp4Config<'a>> {
        self.0.target(iface::ACTIVE, "Dhcp4Config").map(Dhcp4Config)
    }
    /// DHCPv6 lease.
    pub fn dhcp6_config(&self) -> Option<Dhcp6Config<'a>> {
        self.0.target(iface::ACTIVE, "Dhcp6Config").map(Dhcp6Config)
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

/// nmcli's short name of a profile type (a base setting's name): its alias where the setting
/// has one (`802-3-ethernet` is `ethernet`, `802-11-wireless` is `wifi`, `802-11-olpc-mesh`
/// is `olpc-mesh`), else the name itself.
pub fn type_alias(setting: &str) -> &str {
    match setting {
        "802-3-ethernet" => "ethernet",
        "802-11-wireless" => "wifi",
        "802-11-olpc-mesh" => "olpc-mesh",
        "802-11-wireless-security" => "wifi-sec",
        other => other,
    }
}

/// `(state, reason)` from a `StateReason` value (`(uu)`).
pub fn state_reason(value: Option<&Value>) -> Option<(DeviceState, DeviceStateReason)> {
    match value?.unwrap_variant() {
        Value::Struct(fields) => match &fields[..] {
            [state, reason] => Some((
                DeviceState::from_u32(state.as_u32()?),
                DeviceStateReason::from_u32(reason.as_u32()?),
            )),
            _ => None,
        },
        _ => None,
    }
}

/// An address of an IP configuration (`AddressData`), shown `192.0.2.1/24` as nmcli does.
fn addresses(value: Option<&Value>) -> Vec<String> {
    dicts(value)
        .filter_map(|d| {
            let address = d.get("address")?.as_str()?;
            let prefix = d.get("prefix")?.as_u32()?;
            Some(format!("{address}/{prefix}"))
        })
        .collect()
}

/// The dictionaries of an `aa{sv}` value.
fn dicts(value: Option<&Value>) -> impl Iterator<Item = &Value> {
    let items: &[Value] = match value.map(Value::unwrap_variant) {
        Some(Value::Array(array)) => &array.items,
        _ => &[],
    };
    items.iter().map(Value::unwrap_variant)
}

/// A route of an IP configuration (`RouteData`).
#[derive(Debug, Clone, PartialEq)]
pub struct IpRoute {
    /// Destination address.
    pub dest: String,
    /// Destination prefix length.
    pub prefix: u32,
    /// Next hop, if any.
    pub next_hop: Option<String>,
    /// Metric, if any.
    pub metric: Option<u32>,
    /// Every other attribute (`table`, ...), as sent.
    pub attributes: Vec<(String, Value)>,
}

fn routes(value: Option<&Value>) -> Vec<IpRoute> {
    dicts(value)
        .filter_map(|d| {
            let Value::Dict(dict) = d else { return None };
            let mut route = IpRoute {
                dest: d.get("dest")?.as_str()?.to_owned(),
                prefix: d.get("prefix")?.as_u32()?,
                next_hop: d.get("next-hop").and_then(Value::as_str).map(str::to_owned),
                metric: d.get("metric").and_then(Value::as_u32),
                attributes: Vec::new(),
            };
            for (k, v) in &dict.entries {
                let Some(k) = k.as_str() else { continue };
                if !matches!(k, "dest" | "prefix" | "next-hop" | "metric") {
                    route
                        .attributes
                        .push((k.to_owned(), v.unwrap_variant().clone()));
                }
            }
            Some(route)
        })
        .collect()
}

macro_rules! ip_config {
    ($name:ident) => {
        impl<'a> $name<'a> {
            /// The addresses, `address/prefix`, in the daemon's order.
            pub fn addresses(&self) -> Vec<String> {
                addresses(self.property("AddressData"))
            }
            /// The routes, in the daemon's order.
            pub fn routes(&self) -> Vec<IpRoute> {
                routes(self.property("RouteData"))
            }
        }
    };
}
ip_config!(Ip4Config);
ip_config!(Ip6Config);

impl<'a> Ip4Config<'a> {
    /// The DNS servers (`NameserverData`'s addresses; the deprecated `Nameservers` otherwise).
    pub fn nameservers(&self) -> Vec<String> {
        let data: Vec<String> = dicts(self.property("NameserverData"))
            .filter_map(|d| d.get("address")?.as_str().map(str::to_owned))
            .collect();
        if !data.is_empty() {
            return data;
        }
        match self.property("Nameservers").map(Value::unwrap_variant) {
            Some(Value::U32s(v)) => v
                .iter()
                .map(|n| std::net::Ipv4Addr::from(u32::from_be(*n)).to_string())
                .collect(),
            _ => Vec::new(),
        }
    }
    /// The WINS servers.
    pub fn wins_servers(&self) -> Vec<String> {
        self.property("WinsServerData")
            .and_then(Value::as_strs)
            .map(|v| v.iter().map(|s| s.to_string()).collect())
            .unwrap_or_default()
    }
}

impl<'a> Ip6Config<'a> {
    /// The DNS servers (`Nameservers`, `aay` of 16 bytes each).
    pub fn nameservers(&self) -> Vec<String> {
        let items: &[Value] = match self.property("Nameservers").map(Value::unwrap_variant) {
            Some(Value::Array(array)) => &array.items,
            _ => &[],
        };
        items
            .iter()
            .filter_map(|v| {
                let bytes: [u8; 16] = v.unwrap_variant().as_bytes()?.try_into().ok()?;
                Some(std::net::Ipv6Addr::from(bytes).to_string())
            })
            .collect()
    }
}

/// How nmcli ranks two active connections (libnmc's `nmc_active_connection_cmp`): none
/// below any, then by state, shared (hotspot) profiles (IPv6, then IPv4), VPN-ness, default
/// route (IPv4, then IPv6) and number of IP addresses, the more important one greater.
pub fn cmp_active(
    a: Option<ActiveConnection<'_>>,
    b: Option<ActiveConnection<'_>>,
) -> std::cmp::Ordering {
    let (a, b) = match (a, b) {
        (None, None) => return std::cmp::Ordering::Equal,
        (None, Some(_)) => return std::cmp::Ordering::Less,
        (Some(_), None) => return std::cmp::Ordering::Greater,
        (Some(a), Some(b)) => (a, b),
    };
    let shared = |ac: &ActiveConnection<'_>, setting: &str| {
        ac.connection()
            .is_some_and(|p| p.setting(setting, "method").and_then(Value::as_str) == Some("shared"))
    };
    let n_addresses = |ac: &ActiveConnection<'_>| {
        ac.ip4_config().map_or(0, |c| c.addresses().len())
            + ac.ip6_config().map_or(0, |c| c.addresses().len())
    };
    let key = |ac: &ActiveConnection<'_>| {
        (
            ac.state().to_u32(),
            shared(ac, "ipv6"),
            shared(ac, "ipv4"),
            ac.vpn(),
            ac.default4(),
            ac.default6(),
            n_addresses(ac),
        )
    };
    key(&a).cmp(&key(&b))
}

/// nmcli's order of devices (`nmcli device`): higher state first, then the more important
/// active connection, then type name, interface name and path.
pub fn cmp_devices(a: &Device<'_>, b: &Device<'_>) -> std::cmp::Ordering {
    b.state()
        .to_u32()
        .cmp(&a.state().to_u32())
        .then_with(|| cmp_active(b.active_connection(), a.active_connection()))
        .then_with(|| a.type_name().cmp(&b.type_name()))
        .then_with(|| a.interface().cmp(b.interface()))
        .then_with(|| a.path().cmp(b.path()))
}
