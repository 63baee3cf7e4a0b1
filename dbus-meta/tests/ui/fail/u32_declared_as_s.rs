//! A `u32` declared with signature `s` does not compile.

netmirror_dbus_meta::interface! {
    pub mod thing = "org.example.Thing" {
        properties {
            MTU "Mtu": u32 = "s";
        }
    }
}

fn main() {}
