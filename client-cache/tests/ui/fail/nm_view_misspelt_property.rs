//! A misspelt NetworkManager property read through a view does not compile: views read by
//! the generated keys, and `STAET` is not one.

use netmirror_client_cache::nm::Device;
use netmirror_dbus_meta::nm;

fn state(device: Device<'_>) -> Option<nm::DeviceState> {
    device.get(nm::device::STAET)
}

fn main() {}
