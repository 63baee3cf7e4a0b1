//! A Rust type without a value kind must be wrapped in `Opaque` (here a map of `a{sv}`).

use std::collections::HashMap;

use netmirror_dbus_meta::zbus::OwnedVariant;

netmirror_dbus_meta::interface! {
    pub mod thing = "org.example.Thing" {
        properties {
            OPTIONS "Options": HashMap<String, OwnedVariant> = "a{sv}";
        }
    }
}

fn main() {}
