//! Typed views of NetworkManager's objects: thin, `Copy` wrappers over [`ObjectRef`].
//!
//! Every property a view reads is named by the generated [`PropertyKey`] constant of
//! [`netmirror_dbus_meta::nm`] (`device::STATE` is a `PropertyKey<DeviceState>`), never by a
//! string: a misspelt key does not compile, and neither does an accessor declared with another
//! Rust type than the metadata's. A property the daemon has not sent (or sent with another
//! type, which the cache rejects with a warning) reads as `None`, never as a made-up `0`,
//! `false` or `""`.

use netmirror_dbus_meta::nm::{
    self as meta, ActivationStateFlags, ActiveConnectionState, ConnectivityState,
    DeviceCapabilities, DeviceInterfaceFlags, DeviceState, DeviceStateReason, DeviceType, Metered,
    RadioFlags, SettingsConnectionFlags, State, WifiMode,
};
use netmirror_dbus_meta::{DeclaredType, PropertyKey};
use zbus::OwnedObjectPath;

use crate::{ObjectRef, Value};

macro_rules! view {
    ($(#[$m:meta])* $name:ident = $module:ident; {
        $( $(#[$fm:meta])* $f:ident: $ty:ty = $key:ident; )*
    }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy)]
        pub struct $name<'a>(pub(crate) ObjectRef<'a>);

        impl<'a> $name<'a> {
            /// The interface this view reads.
            pub const INTERFACE: &'static str = meta::$module::IFACE_NAME;

            /// The view of `object`, if it has this view's interface.
            pub fn new(object: ObjectRef<'a>) -> Option<$name<'a>> {
                object.object().has_interface(Self::INTERFACE).then_some($name(object))
            }

            /// The object's path.
            pub fn path(&self) -> &'a str {
                self.0.path()
            }

            /// The underlying cached object.
            pub fn object(&self) -> ObjectRef<'a> {
                self.0
            }

            /// A property of this interface by its generated key
            /// (`netmirror_dbus_meta::nm::device::STATE`...), typed as declared; `None` when
            /// the daemon has not sent it, or for a key of another interface.
            pub fn get<T: DeclaredType + ?Sized>(&self, key: PropertyKey<T>) -> Option<T::View<'a>> {
                if key.property().interface() != Self::INTERFACE {
                    return None;
                }
                self.0.get(key)
            }

            /// A property of this interface as the cache holds it (generic tools: the value
            /// exactly as decoded); `None` for a key of another interface.
            pub fn raw<T: DeclaredType + ?Sized>(&self, key: PropertyKey<T>) -> Option<&'a Value> {
                if key.property().interface() != Self::INTERFACE {
                    return None;
                }
                self.0.prop(Self::INTERFACE, key.name()).filter(|v| !v.is_unset())
            }

            $(
                $(#[$fm])*
                pub fn $f(&self) -> Option<<$ty as DeclaredType>::View<'a>> {
                    // The declared type must be `$ty`: another one does not compile.
                    const KEY: PropertyKey<$ty> = meta::$module::$key;
                    self.0.get(KEY)
                }
            )*
        }
    };
}

view! {
    /// The NetworkManager object (`/org/freedesktop/NetworkManager`).
    NetworkManager = network_manager; {
        /// The daemon's version.
        version: String = VERSION;
        /// `NMState`.
        state: State = STATE;
        /// Whether the daemon is still starting up.
        startup: bool = STARTUP;
        /// Whether networking is enabled.
        networking_enabled: bool = NETWORKING_ENABLED;
        /// Whether Wi-Fi is enabled.
        wireless_enabled: bool = WIRELESS_ENABLED;
        /// `NMConnectivityState`.
        connectivity: ConnectivityState = CONNECTIVITY;
        /// `NMMetered`.
        metered: Metered = METERED;
        /// Which radios exist (`NMRadioFlags`, NetworkManager 1.38 and later).
        radio_flags: RadioFlags = RADIO_FLAGS;
        /// Whether the Wi-Fi hardware is enabled (rfkill).
        wireless_hardware_enabled: bool = WIRELESS_HARDWARE_ENABLED;
        /// Whether WWAN is enabled.
        wwan_enabled: bool = WWAN_ENABLED;
        /// Whether the WWAN hardware is enabled (rfkill).
        wwan_hardware_enabled: bool = WWAN_HARDWARE_ENABLED;
        /// Type of the primary connection.
        primary_connection_type: String = PRIMARY_CONNECTION_TYPE;
    }
}

impl<'a> NetworkManager<'a> {
    /// Realized devices.
    pub fn devices(&self) -> Vec<Device<'a>> {
        self.0
            .targets_of(meta::network_manager::DEVICES)
            .map(Device)
            .collect()
    }
    /// All devices, realized or not.
    pub fn all_devices(&self) -> Vec<Device<'a>> {
        self.0
            .targets_of(meta::network_manager::ALL_DEVICES)
            .map(Device)
            .collect()
    }
    /// Active connections.
    pub fn active_connections(&self) -> Vec<ActiveConnection<'a>> {
        self.0
            .targets_of(meta::network_manager::ACTIVE_CONNECTIONS)
            .map(ActiveConnection)
            .collect()
    }
    /// The primary active connection.
    pub fn primary_connection(&self) -> Option<ActiveConnection<'a>> {
        self.0
            .target_of(meta::network_manager::PRIMARY_CONNECTION)
            .map(ActiveConnection)
    }
}

view! {
    /// A device (`org.freedesktop.NetworkManager.Device`); type-specific interfaces are read
    /// with [`Device::typed`] and [`ObjectRef::get`].
    Device = device; {
        /// Interface name.
        interface: String = INTERFACE;
        /// IP interface name, if different.
        ip_interface: String = IP_INTERFACE;
        /// `NMDeviceType`.
        device_type: DeviceType = DEVICE_TYPE;
        /// `NMDeviceState`.
        state: DeviceState = STATE;
        /// `NMMetered`.
        metered: Metered = METERED;
        /// IPv4 connectivity.
        ip4_connectivity: ConnectivityState = IP4_CONNECTIVITY;
        /// IPv6 connectivity.
        ip6_connectivity: ConnectivityState = IP6_CONNECTIVITY;
        /// `NMDeviceCapabilities`.
        capabilities: DeviceCapabilities = CAPABILITIES;
        /// `NMDeviceInterfaceFlags`.
        interface_flags: DeviceInterfaceFlags = INTERFACE_FLAGS;
        /// Driver version.
        driver_version: String = DRIVER_VERSION;
        /// Firmware version.
        firmware_version: String = FIRMWARE_VERSION;
        /// Whether firmware is missing.
        firmware_missing: bool = FIRMWARE_MISSING;
        /// Whether NetworkManager's plugin for the device is missing.
        nm_plugin_missing: bool = NM_PLUGIN_MISSING;
        /// Physical port id.
        physical_port_id: String = PHYSICAL_PORT_ID;
        /// Driver.
        driver: String = DRIVER;
        /// Hardware address.
        hw_address: String = HW_ADDRESS;
        /// MTU.
        mtu: u32 = MTU;
        /// Whether the device is managed.
        managed: bool = MANAGED;
        /// Whether the device may autoconnect.
        autoconnect: bool = AUTOCONNECT;
        /// Whether the device exists in the kernel.
        real: bool = REAL;
        /// udev path.
        udi: String = UDI;
        /// Device path (sysfs).
        path_: String = PATH;
        /// The state and the reason of its last change (`StateReason`).
        state_reason_: (DeviceState, DeviceStateReason) = STATE_REASON;
    }
}

impl<'a> Device<'a> {
    /// The active connection on this device.
    pub fn active_connection(&self) -> Option<ActiveConnection<'a>> {
        self.0
            .target_of(meta::device::ACTIVE_CONNECTION)
            .map(ActiveConnection)
    }
    /// Profiles that could be activated on this device (hidden ones included, as in NMClient).
    pub fn available_connections(&self) -> Vec<Profile<'a>> {
        self.0
            .targets_of(meta::device::AVAILABLE_CONNECTIONS)
            .map(Profile)
            .collect()
    }
    /// The ports of a controller (bridge, bond...), in the daemon's order.
    pub fn ports(&self) -> Vec<Device<'a>> {
        self.0.targets_of(meta::device::PORTS).map(Device).collect()
    }
    /// IPv4 configuration.
    pub fn ip4_config(&self) -> Option<Ip4Config<'a>> {
        self.0.target_of(meta::device::IP4_CONFIG).map(Ip4Config)
    }
    /// IPv6 configuration.
    pub fn ip6_config(&self) -> Option<Ip6Config<'a>> {
        self.0.target_of(meta::device::IP6_CONFIG).map(Ip6Config)
    }
    /// DHCPv4 configuration.
    pub fn dhcp4_config(&self) -> Option<Dhcp4Config<'a>> {
        self.0
            .target_of(meta::device::DHCP4_CONFIG)
            .map(Dhcp4Config)
    }
    /// DHCPv6 configuration.
    pub fn dhcp6_config(&self) -> Option<Dhcp6Config<'a>> {
        self.0
            .target_of(meta::device::DHCP6_CONFIG)
            .map(Dhcp6Config)
    }
    /// The type-specific interface (e.g. `org.freedesktop.NetworkManager.Device.Vlan`), if any.
    pub fn typed(&self) -> Option<&'a crate::Interface> {
        self.0.object().interfaces().find(|i| {
            i.name()
                .starts_with("org.freedesktop.NetworkManager.Device.")
                && i.name() != meta::device_statistics::IFACE_NAME
        })
    }
    /// The state and the reason of its last change; the state alone with reason `none` when
    /// the daemon sent no `StateReason`.
    pub fn state_reason(&self) -> Option<(DeviceState, DeviceStateReason)> {
        self.state_reason_()
            .or_else(|| Some((self.state()?, DeviceStateReason::from_u32(0))))
    }
    /// The state as nmcli shows it: `connected (externally)` where the active connection is
    /// external (NetworkManager only follows what someone else configured, as on `lo`).
    pub fn state_text(&self) -> Option<String> {
        let state = self.state()?;
        let external = self.active_connection().is_some_and(|ac| {
            ac.state_flags()
                .is_some_and(|f| f.contains(ActivationStateFlags::EXTERNAL))
        });
        Some(match state.name_external() {
            Some(name) if external => name.to_owned(),
            _ => state.to_string(),
        })
    }
    /// libnm's class of the device (nmcli's `GENERAL.NM-TYPE`: `NMDeviceVeth`,
    /// `NMDeviceEthernet`, `NMDeviceLoopback`...), from its most specific type interface.
    pub fn nm_type(&self) -> Option<String> {
        let prefix = "org.freedesktop.NetworkManager.Device.";
        let names: Vec<&str> = self
            .0
            .object()
            .interfaces()
            .filter(|i| i.name() != meta::device_statistics::IFACE_NAME)
            .filter_map(|i| i.name().strip_prefix(prefix))
            .collect();
        let wired = meta::device_wired::IFACE_NAME.strip_prefix(prefix);
        let wireless = meta::device_wireless::IFACE_NAME.strip_prefix(prefix);
        let name = names
            .iter()
            .find(|n| Some(**n) != wired)
            .or(names.first())?;
        let class = if Some(*name) == wired {
            "Ethernet"
        } else if Some(*name) == wireless {
            "Wifi"
        } else {
            name
        };
        Some(format!("NMDevice{class}"))
    }
    /// nmcli's name of the device type (`ethernet`, `bond`, `vlan`, ...).
    pub fn type_name(&self) -> Option<String> {
        self.device_type().map(|t| t.to_string())
    }
    /// The carrier of a wired device (`org.freedesktop.NetworkManager.Device.Wired`).
    pub fn carrier(&self) -> Option<bool> {
        self.0.get(meta::device_wired::CARRIER)
    }
    /// The speed in Mb/s of a wired device (0: unknown).
    pub fn speed(&self) -> Option<u32> {
        self.0.get(meta::device_wired::SPEED)
    }
    /// Access points seen (Wi-Fi devices).
    pub fn access_points(&self) -> Vec<AccessPoint<'a>> {
        self.0
            .targets_of(meta::device_wireless::ACCESS_POINTS)
            .map(AccessPoint)
            .collect()
    }
}

view! {
    /// The Settings object.
    Settings = settings; {
        /// The host name.
        hostname: String = HOSTNAME;
        /// Whether profiles can be modified.
        can_modify: bool = CAN_MODIFY;
    }
}

impl<'a> Settings<'a> {
    /// All profiles, hidden ones included.
    pub fn connections(&self) -> Vec<Profile<'a>> {
        self.0
            .targets_of(meta::settings::CONNECTIONS)
            .map(Profile)
            .collect()
    }
}

/// The settings (setting, then its properties) that a listing of profiles reads:
/// [`Profile::id`], [`Profile::uuid`], [`Profile::connection_type`] and
/// [`Profile::interface_name`] (`connection.id`, `uuid`, `type`, `interface-name`), and the
/// orders of [`cmp_active`] and [`cmp_devices`] (`ipv4.method`, `ipv6.method`). What
/// [`NmClient::builder_for_listing`](super::NmClient::builder_for_listing) keeps of each
/// profile's settings.
pub const LISTED_SETTINGS: &[(&str, &[&str])] = &[
    ("connection", &["id", "interface-name", "type", "uuid"]),
    ("ipv4", &["method"]),
    ("ipv6", &["method"]),
];

view! {
    /// A profile (`org.freedesktop.NetworkManager.Settings.Connection`) with its settings.
    Profile = settings_connection; {
        /// Whether the profile has unsaved changes.
        unsaved: bool = UNSAVED;
        /// `NMSettingsConnectionFlags`.
        flags: SettingsConnectionFlags = FLAGS;
        /// The file the profile is stored in.
        filename: String = FILENAME;
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
    /// A text setting; `""` when absent. The cache shows a profile only once its settings
    /// are fetched, and NetworkManager rejects a profile without `connection.id`,
    /// `connection.uuid` or `connection.type`, so those three are never absent in a visible
    /// profile.
    fn setting_text(&self, setting: &str, key: &str) -> &'a str {
        self.setting(setting, key)
            .and_then(Value::as_str)
            .unwrap_or("")
    }
    /// `connection.id`.
    pub fn id(&self) -> &'a str {
        self.setting_text("connection", "id")
    }
    /// `connection.uuid`.
    pub fn uuid(&self) -> &'a str {
        self.setting_text("connection", "uuid")
    }
    /// `connection.type`.
    pub fn connection_type(&self) -> &'a str {
        self.setting_text("connection", "type")
    }
    /// `connection.type` by nmcli's short name (`ethernet` for `802-3-ethernet`, `wifi`...).
    pub fn type_name(&self) -> &'a str {
        type_alias(self.connection_type())
    }
    /// `connection.interface-name`, when the profile is bound to one.
    pub fn interface_name(&self) -> Option<&'a str> {
        self.setting("connection", "interface-name")
            .and_then(Value::as_str)
    }
}

view! {
    /// An active connection.
    ActiveConnection = connection_active; {
        /// The profile's id.
        id: String = ID;
        /// The profile's UUID.
        uuid: String = UUID;
        /// The profile's type.
        connection_type: String = TYPE;
        /// `NMActiveConnectionState`.
        state: ActiveConnectionState = STATE;
        /// `NMActivationStateFlags`.
        state_flags: ActivationStateFlags = STATE_FLAGS;
        /// Whether this is the default IPv4 route's connection.
        default4: bool = DEFAULT;
        /// Whether this is the default IPv6 route's connection.
        default6: bool = DEFAULT6;
        /// Whether this is a VPN.
        vpn: bool = VPN;
        /// The specific object (an access point...), if any (`/` is none).
        specific_object: OwnedObjectPath = SPECIFIC_OBJECT;
    }
}

impl<'a> ActiveConnection<'a> {
    /// The profile's type by nmcli's short name (`ethernet` for `802-3-ethernet`, ...).
    pub fn type_name(&self) -> Option<&'a str> {
        self.connection_type().map(type_alias)
    }
    /// The profile (even a hidden one, as in NMClient).
    pub fn connection(&self) -> Option<Profile<'a>> {
        self.0
            .target_of(meta::connection_active::CONNECTION)
            .map(Profile)
    }
    /// The controller device (a bridge or bond this connection is a port of).
    pub fn controller(&self) -> Option<Device<'a>> {
        self.0
            .target_of(meta::connection_active::CONTROLLER)
            .map(Device)
    }
    /// The controller's path as sent (`/` when none), for nmcli's `MASTER-PATH`.
    pub fn controller_path(&self) -> Option<&'a str> {
        self.0.get(meta::connection_active::CONTROLLER)
    }
    /// The devices.
    pub fn devices(&self) -> Vec<Device<'a>> {
        self.0
            .targets_of(meta::connection_active::DEVICES)
            .map(Device)
            .collect()
    }
    /// IPv4 configuration.
    pub fn ip4_config(&self) -> Option<Ip4Config<'a>> {
        self.0
            .target_of(meta::connection_active::IP4_CONFIG)
            .map(Ip4Config)
    }
    /// IPv6 configuration.
    pub fn ip6_config(&self) -> Option<Ip6Config<'a>> {
        self.0
            .target_of(meta::connection_active::IP6_CONFIG)
            .map(Ip6Config)
    }
    /// DHCPv4 lease.
    pub fn dhcp4_config(&self) -> Option<Dhcp4Config<'a>> {
        self.0
            .target_of(meta::connection_active::DHCP4_CONFIG)
            .map(Dhcp4Config)
    }
    /// DHCPv6 lease.
    pub fn dhcp6_config(&self) -> Option<Dhcp6Config<'a>> {
        self.0
            .target_of(meta::connection_active::DHCP6_CONFIG)
            .map(Dhcp6Config)
    }
}

view! {
    /// An IPv4 configuration.
    Ip4Config = ip4_config; {
        /// The gateway.
        gateway: String = GATEWAY;
        /// Search domains.
        domains: Vec<String> = DOMAINS;
        /// Searches.
        searches: Vec<String> = SEARCHES;
    }
}

view! {
    /// An IPv6 configuration.
    Ip6Config = ip6_config; {
        /// The gateway.
        gateway: String = GATEWAY;
        /// Search domains.
        domains: Vec<String> = DOMAINS;
        /// Searches.
        searches: Vec<String> = SEARCHES;
    }
}

view! {
    /// A DHCPv4 lease.
    Dhcp4Config = dhcp4_config; {
        /// The lease's options, as the DHCP client gave them.
        options: netmirror_dbus_meta::VarDict = OPTIONS;
    }
}

view! {
    /// A DHCPv6 lease.
    Dhcp6Config = dhcp6_config; {
        /// The lease's options, as the DHCP client gave them.
        options: netmirror_dbus_meta::VarDict = OPTIONS;
    }
}

impl<'a> Dhcp4Config<'a> {
    /// One DHCP option.
    pub fn option(&self, name: &str) -> Option<&'a Value> {
        self.raw(meta::dhcp4_config::OPTIONS)?.get(name)
    }
}

impl<'a> Dhcp6Config<'a> {
    /// One DHCP option.
    pub fn option(&self, name: &str) -> Option<&'a Value> {
        self.raw(meta::dhcp6_config::OPTIONS)?.get(name)
    }
}

view! {
    /// A Wi-Fi access point.
    AccessPoint = access_point; {
        /// The SSID.
        ssid: Vec<u8> = SSID;
        /// The BSSID.
        hw_address: String = HW_ADDRESS;
        /// Frequency in MHz.
        frequency: u32 = FREQUENCY;
        /// Signal strength in percent.
        strength: u8 = STRENGTH;
        /// `NM80211Mode`.
        mode: WifiMode = MODE;
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
#[non_exhaustive]
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
    ($name:ident, $module:ident) => {
        impl<'a> $name<'a> {
            /// The addresses, `address/prefix`, in the daemon's order.
            pub fn addresses(&self) -> Vec<String> {
                addresses(self.raw(meta::$module::ADDRESS_DATA))
            }
            /// The routes, in the daemon's order.
            pub fn routes(&self) -> Vec<IpRoute> {
                routes(self.raw(meta::$module::ROUTE_DATA))
            }
        }
    };
}
ip_config!(Ip4Config, ip4_config);
ip_config!(Ip6Config, ip6_config);

impl<'a> Ip4Config<'a> {
    /// The DNS servers (`NameserverData`'s addresses; the deprecated `Nameservers` otherwise).
    pub fn nameservers(&self) -> Vec<String> {
        let data: Vec<String> = dicts(self.raw(meta::ip4_config::NAMESERVER_DATA))
            .filter_map(|d| d.get("address")?.as_str().map(str::to_owned))
            .collect();
        if !data.is_empty() {
            return data;
        }
        match self
            .raw(meta::ip4_config::NAMESERVERS)
            .map(Value::unwrap_variant)
        {
            Some(Value::U32s(v)) => v
                .iter()
                .map(|n| std::net::Ipv4Addr::from(u32::from_be(*n)).to_string())
                .collect(),
            _ => Vec::new(),
        }
    }
    /// The WINS servers.
    pub fn wins_servers(&self) -> Vec<String> {
        self.get(meta::ip4_config::WINS_SERVER_DATA)
            .map(|v| v.iter().map(|s| s.to_string()).collect())
            .unwrap_or_default()
    }
}

impl<'a> Ip6Config<'a> {
    /// The DNS servers (`Nameservers`, `aay` of 16 bytes each).
    pub fn nameservers(&self) -> Vec<String> {
        let items: &[Value] = match self
            .raw(meta::ip6_config::NAMESERVERS)
            .map(Value::unwrap_variant)
        {
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
    cmp_active_by(a, b, &profile_shared)
}

/// Whether the profile of `ac`, as the cache holds it, has `setting.method` `shared`.
fn profile_shared(ac: &ActiveConnection<'_>, setting: &str) -> bool {
    ac.connection()
        .is_some_and(|p| p.setting(setting, "method").and_then(Value::as_str) == Some("shared"))
}

/// [`cmp_active`] with the profiles' `ipv4.method`/`ipv6.method` from `shared` (whether the
/// profile of an active connection has `setting.method` `shared`) instead of the cache: for a
/// cache built without the profiles' settings
/// ([`NmClient::builder_without_settings`](super::NmClient::builder_without_settings)).
pub fn cmp_active_by(
    a: Option<ActiveConnection<'_>>,
    b: Option<ActiveConnection<'_>>,
    shared: &dyn Fn(&ActiveConnection<'_>, &str) -> bool,
) -> std::cmp::Ordering {
    let (a, b) = match (a, b) {
        (None, None) => return std::cmp::Ordering::Equal,
        (None, Some(_)) => return std::cmp::Ordering::Less,
        (Some(_), None) => return std::cmp::Ordering::Greater,
        (Some(a), Some(b)) => (a, b),
    };
    let n_addresses = |ac: &ActiveConnection<'_>| {
        ac.ip4_config().map_or(0, |c| c.addresses().len())
            + ac.ip6_config().map_or(0, |c| c.addresses().len())
    };
    let key = |ac: &ActiveConnection<'_>| {
        (
            ac.state().map(ActiveConnectionState::to_u32),
            shared(ac, "ipv6"),
            shared(ac, "ipv4"),
            ac.vpn() == Some(true),
            ac.default4() == Some(true),
            ac.default6() == Some(true),
            n_addresses(ac),
        )
    };
    key(&a).cmp(&key(&b))
}

/// nmcli's order of devices (`nmcli device`): higher state first, then the more important
/// active connection, then type name, interface name and path.
pub fn cmp_devices(a: &Device<'_>, b: &Device<'_>) -> std::cmp::Ordering {
    cmp_devices_by(a, b, &profile_shared)
}

/// [`cmp_devices`] with the active connections ranked by [`cmp_active_by`] with `shared`.
pub fn cmp_devices_by(
    a: &Device<'_>,
    b: &Device<'_>,
    shared: &dyn Fn(&ActiveConnection<'_>, &str) -> bool,
) -> std::cmp::Ordering {
    let state = |d: &Device<'_>| d.state().map(DeviceState::to_u32);
    state(b)
        .cmp(&state(a))
        .then_with(|| cmp_active_by(b.active_connection(), a.active_connection(), shared))
        .then_with(|| a.type_name().cmp(&b.type_name()))
        .then_with(|| a.interface().cmp(&b.interface()))
        .then_with(|| a.path().cmp(b.path()))
}
