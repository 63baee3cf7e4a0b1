//! Only `o` and `ao` properties may name a target interface.

netmirror_dbus_meta::interface! {
    pub mod thing = "org.example.Thing" {
        properties {
            NAME "Name": String = "s" => "org.example.Thing";
        }
    }
}

fn main() {}
