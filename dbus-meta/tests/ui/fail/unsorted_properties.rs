//! Properties not sorted by name do not compile (lookup is a binary search).

netmirror_dbus_meta::interface! {
    pub mod thing = "org.example.Thing" {
        properties {
            STATE "State": u32 = "u";
            MTU "Mtu": u32 = "u";
        }
    }
}

fn main() {}
