//! Unit tests: signature matching, lookup, and decoding of every value kind NetworkManager uses
//! from a zbus variant, with correct and wrong-typed values.

use std::collections::HashMap;

use zbus::wire::LE;
use zbus::wire::serialized::{Context, Data};
use zbus::{ObjectPath, OwnedObjectPath, Type};

use crate::{Decoded, Error, Kind, Lookup, Opaque, Reader, SettingsDict, Value, VarDict, nm};

crate::interface! {
    /// One property per value kind NetworkManager uses.
    pub(crate) mod kinds = "org.example.Kinds" {
        properties {
            A_SA_SV "ASaSv": SettingsDict = "a{sa{sv}}";
            A_SV "ASv": VarDict = "a{sv}";
            AA_SV "AaSv": Vec<VarDict> = "aa{sv}";
            AAU "Aau": Vec<Vec<u32>> = "aau";
            AAY "Aay": Vec<Vec<u8>> = "aay";
            AO "Ao": Vec<OwnedObjectPath> = "ao" => "org.example.Thing";
            AS "As": Vec<String> = "as";
            AU "Au": Vec<u32> = "au";
            AY "Ay": Vec<u8> = "ay";
            AYUAY "Ayuay": Opaque<Vec<(Vec<u8>, u32, Vec<u8>)>> = "a(ayuay)";
            AYUAYU "Ayuayu": Opaque<Vec<(Vec<u8>, u32, Vec<u8>, u32)>> = "a(ayuayu)";
            B "B": bool = "b";
            D "D": f64 = "d";
            I "I": i32 = "i";
            N "N": i16 = "n";
            O "O": OwnedObjectPath = "o" => "org.example.Thing", DEPRECATED;
            Q "Q": u16 = "q";
            S "S": String = "s";
            T "T": u64 = "t";
            U "U": u32 = "u";
            UU "Uu": Opaque<(u32, u32)> = "(uu)";
            X "X": i64 = "x";
            Y "Y": u8 = "y";
        }
        methods {
            DO "Do"("a{sv}") -> "o";
        }
        signals {
            CHANGED "Changed"("uu");
        }
    }
}

fn path(text: &str) -> ObjectPath<'_> {
    ObjectPath::try_from(text).expect("valid path")
}

fn var_dict() -> HashMap<&'static str, zbus::Variant<'static>> {
    HashMap::from([
        ("answer", zbus::Variant::from(42_u32)),
        ("name", zbus::Variant::from("x")),
    ])
}

/// A correct and a wrong-typed value for each property of [`kinds`].
fn samples() -> Vec<(&'static str, zbus::Variant<'static>, zbus::Variant<'static>)> {
    use zbus::Variant as Z;
    vec![
        (
            "Aau",
            Z::from(vec![vec![1_u32, 2, 3], vec![]]),
            Z::from(vec![vec![1_i32]]),
        ),
        (
            "Aay",
            Z::from(vec![vec![1_u8, 2], vec![]]),
            Z::from(vec![vec![1_u32]]),
        ),
        (
            "AaSv",
            Z::from(vec![var_dict(), HashMap::new()]),
            Z::from(var_dict()),
        ),
        (
            "Ao",
            Z::from(vec![path("/a/1"), path("/a/2")]),
            Z::from(vec!["/a/1", "/a/2"]),
        ),
        ("As", Z::from(vec!["a", "b"]), Z::from(vec![path("/a")])),
        ("Au", Z::from(vec![1_u32, 2]), Z::from(vec![1_i32, 2])),
        ("Ay", Z::from(vec![1_u8, 2, 3]), Z::from("bytes")),
        (
            "Ayuay",
            Z::from(vec![(vec![1_u8; 16], 64_u32, vec![0_u8; 16])]),
            Z::from(vec![1_u32]),
        ),
        (
            "Ayuayu",
            Z::from(vec![(vec![1_u8; 16], 64_u32, vec![0_u8; 16], 100_u32)]),
            Z::from(vec![(vec![1_u8; 16], 64_u32, vec![0_u8; 16])]),
        ),
        (
            "ASaSv",
            Z::from(HashMap::from([("ipv4", var_dict())])),
            Z::from(var_dict()),
        ),
        (
            "ASv",
            Z::from(var_dict()),
            Z::from(HashMap::from([("a", 1_u32)])),
        ),
        ("B", Z::from(true), Z::from(1_u32)),
        ("D", Z::from(1.5_f64), Z::from(1_u64)),
        ("I", Z::from(-5_i32), Z::from(5_u32)),
        ("N", Z::from(-3_i16), Z::from(3_u16)),
        (
            "O",
            Z::from(path("/org/example/1")),
            Z::from("/org/example/1"),
        ),
        ("Q", Z::from(3_u16), Z::from(-3_i16)),
        ("S", Z::from("hello"), Z::from(path("/hello"))),
        ("T", Z::from(9_u64), Z::from(-9_i64)),
        ("U", Z::from(5_u32), Z::from(-5_i32)),
        ("Uu", Z::from((1_u32, 2_u32)), Z::from((1_u32, 2_i32))),
        ("X", Z::from(-9_i64), Z::from(9_u64)),
        ("Y", Z::from(7_u8), Z::from("y")),
    ]
}

/// Serializes `entries` as an `a{sv}` dictionary.
fn wire(entries: &HashMap<&str, zbus::Variant<'_>>) -> Data<'static, 'static> {
    zbus::wire::to_bytes(Context::new(LE, 0), entries).expect("serializable")
}

#[test]
fn signature_matching() {
    use crate::signature::{is_single_complete_type, is_valid, matches, type_matches};
    assert!(type_matches::<u32>("u"));
    assert!(!type_matches::<u32>("s"));
    assert!(!type_matches::<u32>("uu"));
    assert!(!type_matches::<u32>(""));
    assert!(type_matches::<Vec<OwnedObjectPath>>("ao"));
    assert!(!type_matches::<Vec<String>>("ao"));
    assert!(type_matches::<VarDict>("a{sv}"));
    assert!(!type_matches::<VarDict>("a{sv"));
    assert!(type_matches::<SettingsDict>("a{sa{sv}}"));
    assert!(type_matches::<(u32, u32)>("(uu)"));
    assert!(!type_matches::<(u32, u32)>("(uuu)"));
    assert!(type_matches::<Vec<(Vec<u8>, u32, Vec<u8>)>>("a(ayuay)"));
    assert!(matches(
        <HashMap<String, Vec<u8>> as Type>::SIGNATURE,
        "a{say}"
    ));
    assert!(is_valid("") && is_valid("sa{sv}as") && is_valid("a{sa{sv}}ooa{sv}"));
    assert!(
        !is_valid("a")
            && !is_valid("a{vs}")
            && !is_valid("()")
            && !is_valid("(u")
            && !is_valid("z")
    );
    assert!(is_single_complete_type("a(ayuayu)") && !is_single_complete_type("uu"));
    assert!(!is_valid(&"a".repeat(100)));
}

#[test]
fn kinds_match_their_signatures() {
    for property in kinds::IFACE.properties() {
        assert_eq!(
            Kind::from_signature(property.signature()),
            property.kind(),
            "{}",
            property.name()
        );
        if let Some(sig) = property.kind().signature() {
            assert_eq!(sig, property.signature());
        }
    }
}

#[test]
fn lookup_by_name() {
    let device = nm::REGISTRY
        .interface("org.freedesktop.NetworkManager.Device")
        .expect("declared");
    assert_eq!(device.name(), nm::device::IFACE_NAME);
    let state = device.property("State").expect("declared");
    assert_eq!((state.signature(), state.kind()), ("u", Kind::U32));
    assert_eq!(
        device.property_index("State"),
        Some(nm::device::STATE.index())
    );
    assert!(device.property("Nonexistent").is_none());
    // Every property is found by name, with or without a (right or wrong) hint.
    for (idx, property) in device.properties().iter().enumerate() {
        assert_eq!(device.property_index(property.name()), Some(idx));
        assert_eq!(
            device.property_index_with_hint(property.name(), idx),
            Some(idx)
        );
        assert_eq!(
            device.property_index_with_hint(property.name(), idx + 1),
            Some(idx)
        );
        assert_eq!(
            device.property_index_with_hint(property.name(), usize::MAX),
            Some(idx)
        );
    }
    assert_eq!(device.property_index_with_hint("Nonexistent", 0), None);
    assert_eq!(device.property_index(""), None);
    assert_eq!(device.property_index("Stat"), None);
    assert_eq!(device.property_index("StateX"), None);
    assert_eq!(
        device
            .method("Disconnect")
            .map(|m| (m.inputs(), m.outputs())),
        Some(("", ""))
    );
    assert_eq!(
        device.signal("StateChanged").map(|s| s.signature()),
        Some("uuu")
    );
    assert!(
        nm::REGISTRY
            .interface("org.freedesktop.NetworkManager.Nope")
            .is_none()
    );
    assert!(nm::REGISTRY.interface("").is_none());
    assert_eq!(nm::REGISTRY.interfaces().len(), 53);

    assert!(matches!(
        nm::REGISTRY.lookup("org.freedesktop.NetworkManager.Device", "Ports"),
        Lookup::Declared { property, .. } if property.target() == Some("org.freedesktop.NetworkManager.Device")
    ));
    assert!(matches!(
        nm::REGISTRY.lookup("org.freedesktop.NetworkManager.Device", "FutureProperty"),
        Lookup::UnknownProperty(iface) if iface.name() == "org.freedesktop.NetworkManager.Device"
    ));
    assert!(matches!(
        nm::REGISTRY.lookup("org.example.Other", "State"),
        Lookup::UnknownInterface
    ));

    let o = kinds::IFACE.property("O").expect("declared");
    assert!(o.is_deprecated());
    assert_eq!(o.target(), Some("org.example.Thing"));
    assert_eq!(o.rust_type(), "OwnedObjectPath");
    assert!(
        !kinds::IFACE
            .property("S")
            .expect("declared")
            .is_deprecated()
    );
}

#[test]
fn methods_and_signals_needed_by_the_cache_and_cli() {
    let checks: &[(&crate::Interface, &str, &str, &str)] = &[
        (
            &nm::settings_connection::IFACE,
            "GetSettings",
            "",
            "a{sa{sv}}",
        ),
        (
            &nm::settings_connection::IFACE,
            "Update2",
            "a{sa{sv}}ua{sv}",
            "a{sv}",
        ),
        (&nm::settings_connection::IFACE, "Delete", "", ""),
        (&nm::network_manager::IFACE, "GetDeviceByIpIface", "s", "o"),
        (
            &nm::network_manager::IFACE,
            "ActivateConnection",
            "ooo",
            "o",
        ),
        (&nm::network_manager::IFACE, "DeactivateConnection", "o", ""),
        (
            &nm::settings::IFACE,
            "AddConnection2",
            "a{sa{sv}}ua{sv}",
            "oa{sv}",
        ),
        (&nm::device::IFACE, "Disconnect", "", ""),
    ];
    for (iface, name, inputs, outputs) in checks {
        let method = iface
            .method(name)
            .unwrap_or_else(|| panic!("{name} declared"));
        assert_eq!(
            (method.inputs(), method.outputs()),
            (*inputs, *outputs),
            "{name}"
        );
    }
    assert_eq!(nm::settings_connection::signals::UPDATED.signature(), "");
    assert_eq!(nm::device::signals::STATE_CHANGED.signature(), "uuu");
    assert_eq!(nm::device::methods::DISCONNECT.name(), "Disconnect");
}

#[test]
fn decode_every_kind_from_variant() {
    for (name, good, bad) in samples() {
        let property = kinds::IFACE.property(name).expect("declared");
        let value = property
            .decode(&good)
            .unwrap_or_else(|err| panic!("{name}: {err}"));
        assert_eq!(value.kind(), property.kind(), "{name}");
        assert_eq!(value.signature(), property.signature(), "{name}");
        // A variant around the value is unwrapped.
        let wrapped = zbus::Variant::Variant(Box::new(good.try_clone().expect("no fds")));
        assert_eq!(property.decode(&wrapped).expect("wrapped"), value, "{name}");
        // The value converts back.
        let back = value.to_variant().expect("convertible");
        assert_eq!(property.decode(&back).expect("round trip"), value, "{name}");

        match property.decode(&bad) {
            Err(Error::TypeMismatch {
                interface,
                property: prop,
                expected,
                actual,
            }) => {
                assert_eq!(
                    (interface, prop, expected),
                    ("org.example.Kinds", name, property.signature())
                );
                assert_eq!(actual, bad.value_signature().to_string());
            }
            other => panic!("{name}: wrong-typed value gave {other:?}"),
        }
    }
}

#[test]
fn decoded_values() {
    let decode = |name: &str, value: zbus::Variant<'_>| {
        kinds::IFACE
            .property(name)
            .expect("declared")
            .decode(&value)
            .expect("decodes")
    };
    assert_eq!(
        kinds::U.get(&decode("U", zbus::Variant::from(5_u32))),
        Some(5)
    );
    assert_eq!(
        kinds::S.get(&decode("S", zbus::Variant::from("hi"))),
        Some("hi")
    );
    let paths = decode("Ao", zbus::Variant::from(vec![path("/a/1"), path("/a/2")]));
    let paths = kinds::AO.get(&paths).expect("ao");
    assert_eq!(
        paths.iter().map(|p| &**p).collect::<Vec<_>>(),
        ["/a/1", "/a/2"]
    );
    let strings = decode("As", zbus::Variant::from(vec!["a", "b"]));
    assert_eq!(kinds::AS.get(&strings).map(|s| s.len()), Some(2));
    let dict = decode("ASv", zbus::Variant::from(var_dict()));
    assert_eq!(dict.get("answer"), Some(&Value::U32(42)));
    let dict = kinds::A_SV.get(&dict).expect("a{sv}");
    assert_eq!(dict.entries.len(), 2);
    let settings = decode(
        "ASaSv",
        zbus::Variant::from(HashMap::from([("ipv4", var_dict())])),
    );
    assert!(kinds::A_SA_SV.get(&settings).is_some());
    assert_eq!(
        settings.get("ipv4").and_then(|s| s.get("name")),
        Some(&Value::Str("x".into()))
    );
    let reason = decode("Uu", zbus::Variant::from((3_u32, 4_u32)));
    assert_eq!(
        kinds::UU.get(&reason).map(Value::signature),
        Some("(uu)".into())
    );
    assert_eq!(kinds::UU.get(&Value::U32(3)), None);
    // Untyped accessors, for generic mode.
    assert_eq!(Value::U16(7).as_u64(), Some(7));
    assert_eq!(Value::I64(-7).as_i64(), Some(-7));
    assert_eq!(Value::Str("x".into()).as_u64(), None);
    assert_eq!(Value::Str("x".into()).as_str(), Some("x"));
    assert_eq!(Value::Bool(true).as_bool(), Some(true));
    // A view of the wrong kind is refused, and so is a property not sent yet.
    assert_eq!(kinds::U.get(&Value::Str("5".into())), None);
    assert_eq!(kinds::U.get(&Value::Unset), None);
}

#[test]
fn generic_mode() {
    for (name, good, _) in samples() {
        let value = Value::from_variant(&good).expect("generic");
        let declared = kinds::IFACE.property(name).expect("declared");
        assert_eq!(value, declared.decode(&good).expect("declared"), "{name}");
    }
    let odd = zbus::Variant::from(HashMap::from([(1_i64, "one")]));
    let value = Value::from_variant(&odd).expect("generic");
    assert_eq!(
        (value.kind(), value.signature()),
        (Kind::Other, "a{xs}".to_owned())
    );

    // The same value read from a body by the decoder.
    let odd_map = HashMap::from([("Odd", odd.try_clone().expect("no fds"))]);
    let data = wire(&odd_map);
    let body = Reader::for_body(&data)
        .value(b"a{sv}")
        .expect("well-formed");
    assert_eq!(body.get("Odd"), Some(&value));

    let device = "org.freedesktop.NetworkManager.Device";
    let state = zbus::Variant::from(100_u32);
    assert_eq!(
        nm::REGISTRY.decode(device, "State", &state).expect("ok"),
        Decoded::Declared(Value::U32(100))
    );
    assert_eq!(
        nm::REGISTRY.decode(device, "Future", &state).expect("ok"),
        Decoded::UnknownProperty(Value::U32(100))
    );
    assert_eq!(
        nm::REGISTRY
            .decode("org.example.X", "State", &state)
            .expect("ok"),
        Decoded::UnknownInterface(Value::U32(100))
    );
    assert!(matches!(
        nm::REGISTRY.decode(device, "State", &zbus::Variant::from("activated")),
        Err(Error::TypeMismatch {
            property: "State",
            expected: "u",
            ..
        })
    ));
}

#[test]
fn values_and_owned_variants_convert_both_ways() {
    for (name, good, _) in samples() {
        let owned = good.try_to_owned().expect("no fds");
        let property = kinds::IFACE.property(name).expect("declared");
        let declared = property.decode(&owned).expect("well-typed");
        // Generic mode through `TryFrom` gives the same value as the declaration.
        let generic = Value::try_from(&owned).expect("generic");
        assert_eq!(generic, declared, "{name}");
        // Value -> OwnedVariant -> Value.
        let back = zbus::OwnedVariant::try_from(&declared).expect("convertible");
        assert_eq!(
            back, owned,
            "{name}: the variant converts back to what it was"
        );
        assert_eq!(Value::try_from(back).expect("generic"), declared, "{name}");
        // By value, too.
        let moved = zbus::OwnedVariant::try_from(declared.clone()).expect("convertible");
        assert_eq!(
            Value::try_from(&*moved).expect("generic"),
            declared,
            "{name}"
        );
    }
}

#[test]
fn a_value_serializes_as_its_variant() {
    for (name, good, _) in samples() {
        let owned = good.try_to_owned().expect("no fds");
        let value = Value::try_from(&owned).expect("generic");
        // On the wire: byte for byte the variant's encoding, and it reads back.
        let ours = zbus::wire::to_bytes(Context::new(LE, 0), &value).expect("serializable");
        let theirs = zbus::wire::to_bytes(Context::new(LE, 0), &owned).expect("serializable");
        assert_eq!(ours.bytes(), theirs.bytes(), "{name}");
        let read = Reader::for_body(&ours).value(b"v").expect("well-formed");
        assert_eq!(read, Value::Variant(Box::new(value.clone())), "{name}");
        // In JSON: the variant's form, signature and contents.
        assert_eq!(
            serde_json::to_value(&value).expect("json"),
            serde_json::to_value(&owned).expect("json"),
            "{name}"
        );
    }
    let json = serde_json::to_value(Value::U32(100)).expect("json");
    assert_eq!(json, serde_json::json!({"signature": "u", "value": 100}));
    let json = serde_json::to_value(Value::Strs(vec!["a".into()].into())).expect("json");
    assert_eq!(json, serde_json::json!({"signature": "as", "value": ["a"]}));
}

#[test]
fn values_go_into_a_message_body() {
    // `Value` is a `v`, so a map of them is an `a{sv}` that decodes back through the
    // declarations.
    let props = HashMap::from([
        ("U", Value::U32(5)),
        ("S", Value::Str("hi".into())),
        ("B", Value::Bool(true)),
    ]);
    assert_eq!(
        <HashMap<&str, Value> as Type>::SIGNATURE.to_string(),
        "a{sv}"
    );
    let data = zbus::wire::to_bytes(Context::new(LE, 0), &props).expect("serializable");
    let body = Reader::for_body(&data)
        .value(b"a{sv}")
        .expect("well-formed");
    for (name, value) in &props {
        assert!(kinds::IFACE.property(name).is_some(), "{name}");
        assert_eq!(body.get(name), Some(value), "{name}");
    }
}

/// Every number from 0 to `max` and a few far ones survives `From<u32>` and back.
fn round_trips<T: From<u32> + Copy + std::fmt::Debug>(max: u32)
where
    u32: From<T>,
{
    for value in (0..=max).chain([u32::MAX - 1, u32::MAX]) {
        let typed = T::from(value);
        assert_eq!(u32::from(typed), value, "{typed:?}");
    }
}

#[test]
fn nm_enums_round_trip_every_number() {
    use nm::*;
    round_trips::<Capability>(300);
    round_trips::<State>(300);
    round_trips::<ConnectivityState>(300);
    round_trips::<DeviceType>(300);
    round_trips::<WifiMode>(300);
    round_trips::<WimaxNspNetworkType>(300);
    round_trips::<DeviceState>(300);
    round_trips::<DeviceStateReason>(300);
    round_trips::<Metered>(300);
    round_trips::<ConnectionMultiConnect>(300);
    round_trips::<ActiveConnectionState>(300);
    round_trips::<ActiveConnectionStateReason>(300);
    round_trips::<IpTunnelMode>(300);
    round_trips::<DeviceManaged>(300);
    round_trips::<VersionInfoCapability>(300);
    round_trips::<RadioFlags>(300);
    round_trips::<DeviceInterfaceFlags>(300);
    round_trips::<WifiApSecurityFlags>(300);
    round_trips::<SettingsConnectionFlags>(300);
    round_trips::<ActivationStateFlags>(300);
}

#[test]
fn nm_enums_show_as_nmcli_does() {
    use nm::*;
    let shown = |value: &dyn std::fmt::Display| value.to_string();
    // Device states (nmc_device_state_to_string).
    assert_eq!(DeviceState::from(100), DeviceState::Activated);
    assert_eq!(shown(&DeviceState::from(100)), "connected");
    assert_eq!(shown(&DeviceState::from(10)), "unmanaged");
    assert_eq!(
        shown(&DeviceState::from(70)),
        "connecting (getting IP configuration)"
    );
    assert_eq!(shown(&DeviceState::from(120)), "connection failed");
    assert_eq!(DeviceState::from(0), DeviceState::Unknown(0));
    assert_eq!(shown(&DeviceState::from(0)), "unknown");
    // A number no member has is kept and shown as is, never as a name.
    assert_eq!(DeviceState::from(130), DeviceState::Unknown(130));
    assert_eq!(shown(&DeviceState::from(130)), "130");
    assert_eq!(DeviceState::Unknown(130).name(), None);
    // A device whose active connection is external (nmc_device_state_to_string_with_external).
    assert_eq!(
        DeviceState::Activated.name_external(),
        Some("connected (externally)")
    );
    assert_eq!(
        DeviceState::Failed.name_external(),
        Some("deactivating (externally)")
    );
    assert_eq!(DeviceState::Disconnected.name_external(), None);
    // Device types (libnm's type description).
    assert_eq!(shown(&DeviceType::from(1)), "ethernet");
    assert_eq!(shown(&DeviceType::from(20)), "ethernet");
    assert_eq!(DeviceType::from(20), DeviceType::Veth);
    assert_eq!(shown(&DeviceType::from(2)), "wifi");
    assert_eq!(shown(&DeviceType::from(6)), "olpcmesh");
    assert_eq!(shown(&DeviceType::from(17)), "iptunnel");
    assert_eq!(shown(&DeviceType::from(25)), "ovs-port");
    assert_eq!(shown(&DeviceType::from(28)), "6lowpan");
    assert_eq!(shown(&DeviceType::from(30)), "wifi-p2p");
    assert_eq!(shown(&DeviceType::from(32)), "loopback");
    assert_eq!(shown(&DeviceType::from(35)), "geneve");
    // The manager (nmcli general).
    assert_eq!(shown(&State::from(70)), "connected");
    assert_eq!(shown(&State::from(60)), "connected (site only)");
    assert_eq!(shown(&State::from(50)), "connected (local only)");
    // nmcli 1.42's name; later versions say "network off".
    assert_eq!(shown(&State::from(10)), "asleep");
    assert_eq!(shown(&ConnectivityState::from(4)), "full");
    assert_eq!(shown(&ConnectivityState::from(2)), "portal");
    assert_eq!(shown(&Metered::from(3)), "yes (guessed)");
    assert_eq!(shown(&Metered::from(0)), "unknown");
    // Active connections and reasons.
    assert_eq!(shown(&ActiveConnectionState::from(2)), "activated");
    assert_eq!(shown(&ActiveConnectionState::from(4)), "deactivated");
    assert_eq!(
        shown(&ActiveConnectionStateReason::from(2)),
        "Disconnected by user"
    );
    assert_eq!(shown(&DeviceStateReason::from(0)), "No reason given");
    assert_eq!(shown(&DeviceStateReason::from(1)), "Unknown error");
    assert_eq!(shown(&DeviceStateReason::from(2)), "Device is now managed");
    // Wi-Fi modes: nmcli's names where its AP list has them, the nick otherwise.
    assert_eq!(shown(&WifiMode::from(2)), "Infra");
    assert_eq!(shown(&WifiMode::from(1)), "Ad-Hoc");
    assert_eq!(shown(&WifiMode::from(3)), "ap");
    // Enumerations nmcli has no table for: libnm's nick.
    assert_eq!(shown(&Capability::from(1)), "team");
    assert_eq!(shown(&IpTunnelMode::from(1)), "ipip");
    // Padding applies to names and numbers alike.
    assert_eq!(format!("[{:<11}]", DeviceState::from(30)), "[disconnected]");
    assert_eq!(format!("[{:>5}]", DeviceState::from(130)), "[  130]");
}

#[test]
fn nm_flags_keep_every_bit_and_show_their_names() {
    use nm::*;
    // nmcli's AP security names, in its order, space-separated; OWE and OWE-TM are one name.
    let wpa = WifiApSecurityFlags::from(0x188);
    assert!(wpa.contains(WifiApSecurityFlags::PAIR_CCMP | WifiApSecurityFlags::KEY_MGMT_PSK));
    assert_eq!(wpa.to_string(), "pair_ccmp group_ccmp psk");
    assert_eq!(WifiApSecurityFlags::from(0).to_string(), "(none)");
    assert_eq!(WifiApSecurityFlags::KEY_MGMT_OWE_TM.to_string(), "owe");
    assert_eq!(WifiApSecurityFlags::from(0x1800).to_string(), "owe");
    // Bits no name covers are kept and shown raw.
    let odd = WifiApSecurityFlags::from(0x8_0000 | 0x100);
    assert_eq!(odd.bits(), 0x8_0100);
    assert_eq!(odd.unknown_bits(), 0x8_0000);
    assert_eq!(odd.to_string(), "psk 0x80000");
    // Other flags: libnm's nicks, comma-separated.
    let radio = RadioFlags::from(0x9);
    assert!(radio.contains(RadioFlags::WLAN_AVAILABLE));
    assert!(!radio.intersects(RadioFlags::WWAN_AVAILABLE));
    assert_eq!(radio.to_string(), "wlan-available, 0x8");
    assert_eq!(format!("{radio:?}"), "RadioFlags(WLAN_AVAILABLE | 0x8)");
    assert_eq!(format!("{:?}", RadioFlags::NONE), "RadioFlags(NONE)");
    assert_eq!(RadioFlags::NONE.to_string(), "none");
    let iface =
        DeviceInterfaceFlags::UP | DeviceInterfaceFlags::LOWER_UP | DeviceInterfaceFlags::CARRIER;
    assert_eq!(iface.bits(), 0x1_0003);
    assert_eq!(iface.to_string(), "up, lower-up, carrier");
    assert_eq!(
        (iface - DeviceInterfaceFlags::UP).to_string(),
        "lower-up, carrier"
    );
    assert_eq!(
        ActivationStateFlags::from(0x80 | 0x8).to_string(),
        "ip4-ready, external"
    );
    assert_eq!(SettingsConnectionFlags::from(0x1).to_string(), "unsaved");
}

#[test]
fn nm_enums_travel_as_u32() {
    use nm::*;
    let ctx = || Context::new(LE, 0);
    let typed = zbus::wire::to_bytes(ctx(), &DeviceState::Activated).expect("serializable");
    let plain = zbus::wire::to_bytes(ctx(), &100_u32).expect("serializable");
    assert_eq!(typed.bytes(), plain.bytes());
    let (back, _): (DeviceState, _) = plain.deserialize().expect("a u32");
    assert_eq!(back, DeviceState::Activated);
    let flags = zbus::wire::to_bytes(ctx(), &RadioFlags::from(0x9)).expect("serializable");
    let (back, _): (RadioFlags, _) = flags.deserialize().expect("a u32");
    assert_eq!(back.bits(), 0x9);
    assert_eq!(serde_json::to_value(DeviceType::Bridge).expect("json"), 13);
}

#[test]
fn every_nm_enum_member_has_a_number_and_a_name() {
    use nm::*;
    fn check<T>(
        all: &[T],
        to_u32: fn(T) -> u32,
        from_u32: fn(u32) -> T,
        name: fn(T) -> Option<&'static str>,
    ) where
        T: Copy + PartialEq + std::fmt::Debug,
    {
        let mut numbers = std::collections::HashSet::new();
        for &member in all {
            let number = to_u32(member);
            assert!(
                numbers.insert(number),
                "{member:?}: number {number} given twice"
            );
            assert_eq!(from_u32(number), member);
            assert!(name(member).is_some_and(|n| !n.is_empty()), "{member:?}");
        }
        assert!(!all.is_empty());
    }
    check(
        DeviceState::ALL,
        DeviceState::to_u32,
        DeviceState::from_u32,
        DeviceState::name,
    );
    check(
        DeviceType::ALL,
        DeviceType::to_u32,
        DeviceType::from_u32,
        DeviceType::name,
    );
    check(
        DeviceStateReason::ALL,
        DeviceStateReason::to_u32,
        DeviceStateReason::from_u32,
        DeviceStateReason::name,
    );
    check(State::ALL, State::to_u32, State::from_u32, State::name);
    check(
        ConnectivityState::ALL,
        ConnectivityState::to_u32,
        ConnectivityState::from_u32,
        ConnectivityState::name,
    );
    check(
        ActiveConnectionState::ALL,
        ActiveConnectionState::to_u32,
        ActiveConnectionState::from_u32,
        ActiveConnectionState::name,
    );
    check(
        ActiveConnectionStateReason::ALL,
        ActiveConnectionStateReason::to_u32,
        ActiveConnectionStateReason::from_u32,
        ActiveConnectionStateReason::name,
    );
    check(
        Metered::ALL,
        Metered::to_u32,
        Metered::from_u32,
        Metered::name,
    );
    check(
        WifiMode::ALL,
        WifiMode::to_u32,
        WifiMode::from_u32,
        WifiMode::name,
    );
    check(
        Capability::ALL,
        Capability::to_u32,
        Capability::from_u32,
        Capability::name,
    );
    // NetworkManager's own "unknown" member is `Unknown` with its number, and has nmcli's name.
    assert_eq!(DeviceState::Unknown(0).name(), Some("unknown"));
    assert!(!DeviceState::ALL.contains(&DeviceState::Unknown(0)));
    // Every reason has a line in nmcli's table: none falls back to its default word.
    assert!(DeviceStateReason::ALL.len() > 60);
    assert!(
        DeviceStateReason::ALL
            .iter()
            .all(|r| r.name() != Some("Unknown"))
    );
}

#[test]
fn a_device_state_reason_reads_typed() {
    use nm::{DeviceState, DeviceStateReason};
    let key = nm::device::STATE_REASON;
    let value = key
        .property()
        .decode(&zbus::Variant::from((120_u32, 36_u32)))
        .expect("a (uu)");
    assert_eq!(value.kind(), Kind::Other);
    let (state, reason) = key.get(&value).expect("typed");
    assert_eq!(state, DeviceState::Failed);
    assert_eq!(reason, DeviceStateReason::from(36));
    assert_eq!(
        (state.to_string(), reason.to_string()),
        (
            "connection failed".to_owned(),
            "The device was removed".to_owned()
        )
    );
    // From wire data, and with numbers this version does not name.
    let data = wire(&HashMap::from([(
        "StateReason",
        zbus::Variant::from((100_u32, 9999_u32)),
    )]));
    let body = Reader::for_body(&data)
        .value(b"a{sv}")
        .expect("well-formed");
    let value = body.get(key.name()).expect("sent");
    assert_eq!(
        key.get(value),
        Some((DeviceState::Activated, DeviceStateReason::Unknown(9999)))
    );
    // Another kind of value is not read as one.
    assert_eq!(key.get(&Value::U32(100)), None);
    // A (uu) of the wrong shape is rejected by the declaration.
    assert!(
        key.property()
            .decode(&zbus::Variant::from((1_u32, 2_i32)))
            .is_err()
    );
}

#[test]
fn the_manager_capabilities_read_typed() {
    use nm::Capability;
    let key = nm::network_manager::CAPABILITIES;
    let value = key
        .property()
        .decode(&zbus::Variant::from(vec![1_u32, 2, 77]))
        .expect("an au");
    let typed: Vec<Capability> = key.get(&value).expect("typed").collect();
    assert_eq!(
        typed,
        [Capability::Team, Capability::Ovs, Capability::Unknown(77)]
    );
    let shown: Vec<String> = typed.iter().map(ToString::to_string).collect();
    assert_eq!(shown, ["team", "ovs", "77"]);
    assert!(key.get(&Value::U32(1)).is_none());
}
