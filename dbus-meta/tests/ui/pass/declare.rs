//! A declaration using every kind of Rust type, targets, flags, methods, signals and a registry.

use netmirror_dbus_meta::zbus::OwnedObjectPath;
use netmirror_dbus_meta::{Opaque, SettingsDict, VarDict, interface, registry};

interface! {
    /// An interface of a service nobody else declares.
    pub mod thing = "org.example.Thing" {
        properties {
            ADDRESSES "Addresses": Vec<Vec<u32>> = "aau", DEPRECATED;
            CHILDREN "Children": Vec<OwnedObjectPath> = "ao" => "org.example.Thing";
            ENABLED "Enabled": bool = "b";
            NAME "Name": String = "s";
            OPTIONS "Options": VarDict = "a{sv}";
            PARENT "Parent": OwnedObjectPath = "o" => "org.example.Thing";
            REASON "Reason": Opaque<(u32, u32)> = "(uu)";
            SETTINGS "Settings": SettingsDict = "a{sa{sv}}";
            SPEED "Speed": u64 = "t", IGNORED;
        }
        methods {
            RENAME "Rename"("s") -> "";
            SPLIT "Split"("a{sv}u") -> "aoa{sv}";
        }
        signals {
            RENAMED "Renamed"("ss");
        }
    }
}

interface! {
    pub mod empty = "org.example.Empty" {
        properties {}
    }
}

registry! {
    /// The example service.
    pub static EXAMPLE = [empty, thing];
}

fn main() {
    assert_eq!(thing::IFACE.properties().len(), 9);
    assert_eq!(thing::SPEED.index(), 8);
    assert!(thing::IFACE.property("Addresses").is_some_and(|p| p.is_deprecated()));
    assert_eq!(thing::methods::SPLIT.outputs(), "aoa{sv}");
    assert_eq!(thing::signals::RENAMED.signature(), "ss");
    assert!(EXAMPLE.interface("org.example.Empty").is_some());
}
