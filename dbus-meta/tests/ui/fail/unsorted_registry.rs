//! A registry whose interfaces are not sorted by name does not compile.

netmirror_dbus_meta::interface! {
    pub mod b = "org.example.B" {
        properties {}
    }
}
netmirror_dbus_meta::interface! {
    pub mod a = "org.example.A" {
        properties {}
    }
}
netmirror_dbus_meta::registry! {
    pub static EXAMPLE = [b, a];
}

fn main() {}
