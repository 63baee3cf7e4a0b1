//! A property name declared twice does not compile.

netmirror_dbus_meta::interface! {
    pub mod thing = "org.example.Thing" {
        properties {
            NAME "Name": String = "s";
            NAME_AGAIN "Name": String = "s";
        }
    }
}

fn main() {}
