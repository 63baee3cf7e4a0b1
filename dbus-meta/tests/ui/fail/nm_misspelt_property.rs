//! A misspelt NetworkManager property is not a key: it does not compile.

use netmirror_dbus_meta::{Value, nm};

fn main() {
    let value = Value::U32(100);
    let _state = nm::device::STAET.get(&value);
}
