//! A NetworkManager property read as another type does not compile: `Device.State` is a
//! `DeviceState`, not a bare `u32`, and not a string.

use netmirror_dbus_meta::{PropertyKey, Value, nm};

fn read_mtu(key: PropertyKey<u32>, value: &Value) -> Option<u32> {
    key.get(value)
}

fn main() {
    let value = Value::U32(100);
    let _number: Option<u32> = nm::device::STATE.get(&value);
    let _name: Option<&str> = nm::device::DEVICE_TYPE.get(&value);
    let _mtu = read_mtu(nm::device::STATE, &value);
}
