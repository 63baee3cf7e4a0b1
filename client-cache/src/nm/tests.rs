//! Unit tests of NMClient's visibility rule for profiles and of nmcli's names.

use super::object_visible;
use crate::{Object, Value, object::Fetch};

#[test]
fn a_profile_is_visible_once_its_settings_could_be_read() {
    let pending = Object {
        fetch: Fetch::Pending,
        ..Object::default()
    };
    assert!(!object_visible(&pending));
    let denied = Object {
        fetch: Fetch::Failed("org.freedesktop.NetworkManager.Settings.PermissionDenied".into()),
        ..Object::default()
    };
    assert!(!object_visible(&denied), "the daemon hid it from us");
    let read = Object {
        fetch: Fetch::Done(Value::Unset),
        ..Object::default()
    };
    assert!(object_visible(&read));
}

#[test]
fn device_types_are_named_by_dbus_meta_as_nmcli_names_them() {
    use super::DeviceType;
    // A veth is an Ethernet device to libnm (`NMDeviceVeth` derives from `NMDeviceEthernet`).
    assert_eq!(DeviceType::from_u32(20).to_string(), "ethernet");
    assert_eq!(DeviceType::from_u32(1).to_string(), "ethernet");
    assert_eq!(DeviceType::from_u32(32).to_string(), "loopback");
    // The two the old table had wrong.
    assert_eq!(DeviceType::from_u32(35).to_string(), "geneve");
    assert_ne!(DeviceType::from_u32(8).to_string(), "gsm");
    // A number no version names shows as itself, never as a made-up name.
    assert_eq!(DeviceType::from_u32(999).to_string(), "999");
}

#[test]
fn state_reason_reads_the_state_and_its_reason() {
    use super::{DeviceState, DeviceStateReason, state_reason};
    let value = Value::Struct(vec![Value::U32(40), Value::U32(0)].into_boxed_slice());
    assert_eq!(
        state_reason(Some(&value)),
        Some((DeviceState::Prepare, DeviceStateReason::None))
    );
    let wrapped = Value::Variant(Box::new(value));
    assert_eq!(
        state_reason(Some(&wrapped)).map(|(s, _)| s.to_u32()),
        Some(40)
    );
    assert_eq!(state_reason(Some(&Value::U32(40))), None);
    assert_eq!(state_reason(None), None);
}

#[test]
fn profile_types_have_nmcli_short_names() {
    use super::type_alias;
    assert_eq!(type_alias("802-3-ethernet"), "ethernet");
    assert_eq!(type_alias("802-11-wireless"), "wifi");
    assert_eq!(type_alias("bond"), "bond");
}

#[test]
fn declared_enumerations_and_flags_are_named_as_nmcli_names_them() {
    use super::{Named, iface, named};
    let check = |interface: &str, property: &str, value: Value, expect: Option<(&str, u32)>| {
        let expect = expect.map(|(name, value)| Named {
            name: name.to_owned(),
            value,
        });
        assert_eq!(named(interface, property, &value), expect, "{property}");
    };
    check(iface::NM, "State", Value::U32(70), Some(("connected", 70)));
    check(
        iface::NM,
        "State",
        Value::U32(20),
        Some(("disconnected", 20)),
    );
    check(iface::NM, "Connectivity", Value::U32(4), Some(("full", 4)));
    check(
        iface::NM,
        "Metered",
        Value::U32(3),
        Some(("yes (guessed)", 3)),
    );
    check(iface::NM, "RadioFlags", Value::U32(0), Some(("none", 0)));
    check(
        iface::DEVICE,
        "State",
        Value::U32(100),
        Some(("connected", 100)),
    );
    // A number no member has is itself; plain numbers, other types and unknown names: none.
    check(iface::NM, "State", Value::U32(77), Some(("77", 77)));
    check(iface::DEVICE, "Mtu", Value::U32(1500), None);
    check(iface::NM, "State", Value::Str("70".into()), None);
    check(iface::NM, "Nope", Value::U32(1), None);
    check("org.example.Nope", "State", Value::U32(1), None);
}

#[test]
fn every_enumeration_or_flags_property_has_names() {
    use netmirror_dbus_meta::Kind;
    for interface in netmirror_dbus_meta::nm::REGISTRY.interfaces() {
        for property in interface.properties() {
            if property.kind() != Kind::U32 || property.rust_type() == "u32" {
                continue;
            }
            assert!(
                super::named(interface.name(), property.name(), &Value::U32(1)).is_some(),
                "{}.{} ({}) has no names",
                interface.name(),
                property.name(),
                property.rust_type()
            );
        }
    }
}
