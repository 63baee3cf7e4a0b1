//! A Rust type without a value kind must be wrapped in `Opaque` (here a map of `a{sv}`).

use std::collections::HashMap;

use netmirror_dbus_meta::zvariant::OwnedValue;

netmirror_dbus_meta::interface! {
    pub mod thing = "org.example.Thing" {
        properties {
            OPTIONS "Options": HashMap<String, OwnedValue> = "a{sv}";
        }
    }
}

fn main() {}
