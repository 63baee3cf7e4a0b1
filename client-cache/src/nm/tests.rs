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
fn device_types_are_named_as_nmcli_1_42_names_them() {
    use super::device_type_name;
    // A veth is an Ethernet device to libnm (`NMDeviceVeth` derives from `NMDeviceEthernet`).
    assert_eq!(device_type_name(20), "ethernet");
    assert_eq!(device_type_name(1), "ethernet");
    assert_eq!(device_type_name(17), "iptunnel");
    assert_eq!(device_type_name(6), "olpcmesh");
    assert_eq!(device_type_name(13), "bridge");
    assert_eq!(device_type_name(32), "loopback");
    assert_eq!(device_type_name(24), "ovs-interface");
    assert_eq!(device_type_name(999), "unknown");
}
