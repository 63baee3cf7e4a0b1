//! The typed reads that must compile: each accessor's declared type, and `get` with a key.

use netmirror_client_cache::nm::{ActiveConnection, Device, NetworkManager};
use netmirror_dbus_meta::nm;

fn device(device: Device<'_>) -> (Option<nm::DeviceState>, Option<u32>, Option<&str>) {
    let state: Option<nm::DeviceState> = device.get(nm::device::STATE);
    assert_eq!(state.is_some(), device.state().is_some());
    (device.state(), device.mtu(), device.interface())
}

fn manager(manager: NetworkManager<'_>) -> Option<nm::RadioFlags> {
    manager.radio_flags()
}

fn active(active: ActiveConnection<'_>) -> Option<nm::ActiveConnectionState> {
    active.get(nm::connection_active::STATE)
}

fn main() {
    let _ = (device, manager, active);
}
