//! NetworkManager's enumerations and flags by name, for any declared property: a generic
//! tool (a monitor of property changes) shows `connected` where the bus has `70`.
//!
//! The property's declared Rust type (dbus-meta's registry) says which of the generated
//! types (`State`, `ConnectivityState`, `Metered`, `RadioFlags`...) its number belongs to;
//! that type's `Display` is nmcli's name.

use netmirror_dbus_meta::nm as meta;

use crate::Value;

/// A number of one of NetworkManager's enumerations or flags types, with nmcli's name for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Named {
    /// nmcli's name (`connected`, `full`, `yes (guessed)`, `wlan-available | wwan-available`);
    /// a number no member has shows as itself.
    pub name: String,
    /// The number on the bus.
    pub value: u32,
}

/// `value` of `interface`'s `property` by nmcli's name, when NetworkManager declares the
/// property with one of its enumerations or flags types (`org.freedesktop.NetworkManager`'s
/// `State`, `Connectivity`, `Metered`, `RadioFlags`; a device's `State`...). `None` for any
/// other property (plain numbers included), and for a value of another type than declared.
pub fn named(interface: &str, property: &str, value: &Value) -> Option<Named> {
    let declared = meta::REGISTRY.interface(interface)?.property(property)?;
    let Value::U32(number) = *value else {
        return None;
    };
    let name = name_of(declared.rust_type(), number)?;
    Some(Named {
        name,
        value: number,
    })
}

/// nmcli's name for `number` as a value of the generated type called `rust_type`.
fn name_of(rust_type: &str, number: u32) -> Option<String> {
    macro_rules! by_type {
        ($($ty:ident),* $(,)?) => {
            match rust_type {
                $(stringify!($ty) => Some(meta::$ty::from(number).to_string()),)*
                _ => None,
            }
        };
    }
    by_type!(
        ActivationStateFlags,
        ActiveConnectionState,
        ActiveConnectionStateReason,
        BluetoothCapabilities,
        Capability,
        CheckpointCreateFlags,
        ConnectionMultiConnect,
        ConnectivityState,
        DeviceCapabilities,
        DeviceInterfaceFlags,
        DeviceManaged,
        DeviceManagedFlags,
        DeviceModemCapabilities,
        DeviceReapplyFlags,
        DeviceState,
        DeviceStateReason,
        DeviceType,
        DeviceWifiCapabilities,
        IpTunnelMode,
        ManagerReloadFlags,
        Metered,
        MptcpFlags,
        RadioFlags,
        SecretAgentCapabilities,
        SecretAgentGetSecretsFlags,
        SettingsAddConnection2Flags,
        SettingsConnectionFlags,
        SettingsUpdate2Flags,
        State,
        VersionInfoCapability,
        WifiApFlags,
        WifiApSecurityFlags,
        WifiMode,
        WimaxNspNetworkType,
    )
}
