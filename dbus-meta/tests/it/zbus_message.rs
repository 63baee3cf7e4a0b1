//! Interoperability with zbus 6: values read from a real `zbus::Message` decode with the
//! declarations, both through a `Variant` the body deserialized into and straight from the
//! body's wire data with the decoder ([`Reader`]).

use std::collections::HashMap;

use netmirror_dbus_meta::{Error, Lookup, Reader, Value, nm};
use zbus::{Message, OwnedVariant, Variant};

const DEVICE_PATH: &str = "/org/freedesktop/NetworkManager/Devices/1";

/// A `PropertiesChanged` signal as NetworkManager sends it for a device.
fn properties_changed() -> Message {
    let changed = HashMap::from([
        ("State", Variant::from(100_u32)),
        ("Interface", Variant::from("eth0")),
        ("Mtu", Variant::from("not a number")),
    ]);
    Message::signal(
        DEVICE_PATH,
        "org.freedesktop.DBus.Properties",
        "PropertiesChanged",
    )
    .build(&(nm::device::IFACE_NAME, changed, Vec::<String>::new()))
    .expect("serializable body")
}

#[test]
fn a_message_body_value_decodes_with_the_declarations() {
    let message = properties_changed();
    let (iface, changed, invalidated): (String, HashMap<String, OwnedVariant>, Vec<String>) =
        message
            .body()
            .deserialize()
            .expect("PropertiesChanged body");
    assert_eq!(iface, nm::device::IFACE_NAME);
    assert!(invalidated.is_empty());

    let state = nm::device::STATE
        .property()
        .decode(&changed["State"])
        .expect("a u32 State");
    assert_eq!(state, Value::U32(100));
    assert_eq!(
        nm::device::STATE.get(&state),
        Some(nm::DeviceState::Activated)
    );

    let name = nm::device::INTERFACE
        .property()
        .decode(&changed["Interface"])
        .expect("a string Interface");
    assert_eq!(nm::device::INTERFACE.get(&name), Some("eth0"));

    let err = nm::device::MTU
        .property()
        .decode(&changed["Mtu"])
        .expect_err("a string is not a u32");
    assert!(
        matches!(err, Error::TypeMismatch { property: "Mtu", expected: "u", ref actual, .. } if actual == "s"),
        "{err}"
    );

    // The same through the registry, as a client that has only names does it.
    let decoded = nm::REGISTRY
        .decode(nm::device::IFACE_NAME, "State", &changed["State"])
        .expect("declared and well-typed");
    assert_eq!(
        decoded,
        netmirror_dbus_meta::Decoded::Declared(Value::U32(100))
    );
}

#[test]
fn a_message_body_decodes_straight_from_its_wire_data() {
    let props = HashMap::from([
        ("State", Variant::from(30_u32)),
        ("Mtu", Variant::from("wrong")),
        ("SomethingNewer", Variant::from(7_u8)),
    ]);
    let reply = Message::method_call(DEVICE_PATH, "GetAll")
        .interface("org.freedesktop.DBus.Properties")
        .build(&props)
        .expect("serializable body");
    let body = reply.body();
    assert_eq!(body.signature().to_string(), "a{sv}");
    // The one decoder reads the body in place, each value checked against its declaration.
    let mut reader = Reader::for_body(body.data());
    let end = reader.array(8).expect("an array");
    let mut seen = 0;
    while reader.more(end, 8).expect("well-formed") {
        let name = reader.str().expect("a name");
        let declared = match nm::REGISTRY.lookup(nm::device::IFACE_NAME, name) {
            Lookup::Declared { property, .. } => Some(property.signature().as_bytes()),
            _ => None,
        };
        let value = reader.variant_expect(declared).expect("well-formed");
        match name {
            "State" => assert_eq!(value, Ok(Value::U32(30))),
            "Mtu" => assert_eq!(value, Err("s".to_owned()), "a wrong type is reported"),
            "SomethingNewer" => {
                assert!(declared.is_none());
                assert_eq!(value, Ok(Value::U8(7)));
            }
            other => panic!("unexpected entry {other}"),
        }
        seen += 1;
    }
    assert_eq!(seen, 3);
    assert_eq!(
        nm::device::STATE.get(&Value::U32(30)),
        Some(nm::DeviceState::Disconnected)
    );
}
