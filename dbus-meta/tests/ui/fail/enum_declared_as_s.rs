//! A NetworkManager enumeration is a `u`: declaring it with another signature does not compile.

use netmirror_dbus_meta::nm::DeviceState;

netmirror_dbus_meta::interface! {
    pub mod thing = "org.example.Thing" {
        properties {
            STATE "State": DeviceState = "s";
        }
    }
}

fn main() {}
