//! NetworkManager's properties read through their typed keys.

use netmirror_dbus_meta::nm::{self, DeviceInterfaceFlags, DeviceState, DeviceType};
use netmirror_dbus_meta::{PropertyKey, Value};

fn main() {
    let state: PropertyKey<DeviceState> = nm::device::STATE;
    assert_eq!(state.get(&Value::U32(100)), Some(DeviceState::Activated));
    let kind: Option<DeviceType> = nm::device::DEVICE_TYPE.get(&Value::U32(13));
    assert_eq!(kind.map(|k| k.to_string()).as_deref(), Some("bridge"));
    let flags = nm::device::INTERFACE_FLAGS.get(&Value::U32(0x10003));
    assert!(flags.is_some_and(|f| f.contains(DeviceInterfaceFlags::CARRIER)));
    let mtu: Option<u32> = nm::device::MTU.get(&Value::U32(1500));
    assert_eq!(mtu, Some(1500));
}
