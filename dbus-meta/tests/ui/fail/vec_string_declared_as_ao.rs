//! A `Vec<String>` declared with signature `ao` does not compile.

netmirror_dbus_meta::interface! {
    pub mod thing = "org.example.Thing" {
        properties {
            CHILDREN "Children": Vec<String> = "ao" => "org.example.Thing";
        }
    }
}

fn main() {}
