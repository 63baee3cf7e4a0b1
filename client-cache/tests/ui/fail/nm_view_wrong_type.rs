//! A NetworkManager property read through a view as another Rust type does not compile:
//! `Device.State` is a `DeviceState`, not a bare `u32`; `DeviceType` is not a string; a key
//! of another type cannot stand for a `u32` one.

use netmirror_client_cache::nm::Device;
use netmirror_dbus_meta::{PropertyKey, nm};

fn state_number(device: Device<'_>) -> Option<u32> {
    device.state()
}

fn type_name<'a>(device: Device<'a>) -> Option<&'a str> {
    device.get(nm::device::DEVICE_TYPE)
}

fn read_number(device: Device<'_>, key: PropertyKey<u32>) -> Option<u32> {
    device.get(key)
}

fn main() {
    let _ = (state_number, type_name, read_number);
    let _mtu = |device: Device<'_>| read_number(device, nm::device::STATE);
}
