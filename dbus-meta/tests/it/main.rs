//! Integration tests of `netmirror-dbus-meta`: conformance of the NetworkManager declarations
//! with the upstream introspection XML, and the compile-fail tests of the declaration macro.

mod ui;
mod xml;
mod zbus_message;
