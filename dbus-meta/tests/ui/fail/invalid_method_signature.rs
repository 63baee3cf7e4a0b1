//! A method whose argument signature is not valid D-Bus does not compile.

netmirror_dbus_meta::interface! {
    pub mod thing = "org.example.Thing" {
        properties {}
        methods {
            RENAME "Rename"("a{vs}") -> "";
        }
    }
}

fn main() {}
