//! Integration tests of `netmirror-dbus-meta` that ship with the package: the compile-fail
//! tests of the declaration macro and of the typed NetworkManager keys, and decoding values
//! from real zbus messages. The XML conformance test is its own target (`tests/xml/`), left
//! out of the package with the GPL introspection files it reads.

mod ui;
mod zbus_message;
