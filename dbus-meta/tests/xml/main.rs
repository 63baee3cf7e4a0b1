//! XML conformance: every interface, property, method and signal in NetworkManager's upstream
//! introspection files (copied into `tests/data/nm-introspection/`) is declared in
//! `netmirror_dbus_meta::nm` with the same signature, and nothing is declared that the files
//! do not have. Deprecation marks follow the files' `DEPRECATED` notes.

use std::collections::BTreeMap;
use std::path::Path;

use netmirror_dbus_meta::{Interface, nm};
use quick_xml::Reader;
use quick_xml::events::{BytesStart, Event};

#[derive(Debug, Default, PartialEq)]
struct XmlInterface {
    /// Property name to (signature, deprecated).
    properties: BTreeMap<String, (String, bool)>,
    /// Method name to (inputs, outputs).
    methods: BTreeMap<String, (String, String)>,
    /// Signal name to signature.
    signals: BTreeMap<String, String>,
}

fn attr(tag: &BytesStart<'_>, name: &str) -> Option<String> {
    let attr = tag
        .try_get_attribute(name)
        .expect("well-formed attribute")?;
    Some(
        attr.normalized_value(quick_xml::XmlVersion::Implicit1_0)
            .expect("valid value")
            .into_owned(),
    )
}

/// Parses one introspection file into its interfaces.
fn parse(path: &Path) -> BTreeMap<String, XmlInterface> {
    let text = std::fs::read_to_string(path).expect("readable test data");
    let mut reader = Reader::from_str(&text);
    let mut interfaces = BTreeMap::new();
    let mut iface: Option<(String, XmlInterface)> = None;
    // The member being read: (is_method, name, inputs, outputs).
    let mut member: Option<(bool, String, String, String)> = None;
    let mut last_comment = String::new();
    loop {
        let event = reader.read_event().expect("well-formed XML");
        let (tag, empty) = match &event {
            Event::Start(tag) => (Some(tag), false),
            Event::Empty(tag) => (Some(tag), true),
            Event::Comment(text) => {
                last_comment = AsRef::<str>::as_ref(text).to_owned();
                continue;
            }
            Event::End(tag) => {
                match tag.name().as_ref() {
                    "interface" => {
                        let (name, body) = iface.take().expect("open interface");
                        interfaces.insert(name, body);
                    }
                    "method" | "signal" => finish(&mut iface, member.take()),
                    _ => {}
                }
                continue;
            }
            Event::Eof => break,
            _ => continue,
        };
        let Some(tag) = tag else { continue };
        match tag.name().as_ref() {
            "interface" => {
                let name = attr(tag, "name").expect("name");
                if empty {
                    // An interface without members, like `Device.Loopback`.
                    interfaces.insert(name, XmlInterface::default());
                } else {
                    iface = Some((name, XmlInterface::default()));
                }
            }
            "property" => {
                let name = attr(tag, "name").expect("name");
                let sig = attr(tag, "type").expect("type");
                let deprecated = last_comment.contains("DEPRECATED");
                let (_, body) = iface.as_mut().expect("property inside interface");
                assert!(body.properties.insert(name, (sig, deprecated)).is_none());
                last_comment.clear();
            }
            kind @ ("method" | "signal") => {
                let name = attr(tag, "name").expect("name");
                member = Some((kind == "method", name, String::new(), String::new()));
                last_comment.clear();
                if empty {
                    finish(&mut iface, member.take());
                }
            }
            "arg" => {
                let (is_method, _, inputs, outputs) = member.as_mut().expect("arg inside member");
                let sig = attr(tag, "type").expect("type");
                let direction = attr(tag, "direction");
                let is_out = match direction.as_deref() {
                    Some("out") => true,
                    Some("in") => false,
                    _ => !*is_method,
                };
                if is_out { outputs } else { inputs }.push_str(&sig);
            }
            _ => {}
        }
    }
    interfaces
}

fn finish(
    iface: &mut Option<(String, XmlInterface)>,
    member: Option<(bool, String, String, String)>,
) {
    let (Some((_, body)), Some((is_method, name, inputs, outputs))) = (iface.as_mut(), member)
    else {
        return;
    };
    if is_method {
        body.methods.insert(name, (inputs, outputs));
    } else {
        body.signals.insert(name, outputs);
    }
}

fn all_xml() -> BTreeMap<String, XmlInterface> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/nm-introspection");
    let mut all = BTreeMap::new();
    for entry in std::fs::read_dir(&dir).expect("test data present") {
        let path = entry.expect("readable dir").path();
        if path.extension().is_some_and(|ext| ext == "xml") {
            for (name, body) in parse(&path) {
                assert!(all.insert(name.clone(), body).is_none(), "{name} twice");
            }
        }
    }
    all
}

fn declared(iface: &Interface) -> XmlInterface {
    XmlInterface {
        properties: iface
            .properties()
            .iter()
            .map(|p| {
                (
                    p.name().to_owned(),
                    (p.signature().to_owned(), p.is_deprecated()),
                )
            })
            .collect(),
        methods: iface
            .methods()
            .iter()
            .map(|m| {
                (
                    m.name().to_owned(),
                    (m.inputs().to_owned(), m.outputs().to_owned()),
                )
            })
            .collect(),
        signals: iface
            .signals()
            .iter()
            .map(|s| (s.name().to_owned(), s.signature().to_owned()))
            .collect(),
    }
}

#[test]
fn every_xml_interface_is_declared_alike() {
    let xml = all_xml();
    assert_eq!(xml.len(), 53, "the upstream revision has 53 interfaces");
    let mut n_properties = 0;
    for (name, from_xml) in &xml {
        let iface = nm::REGISTRY
            .interface(name)
            .unwrap_or_else(|| panic!("{name} not declared"));
        let ours = declared(iface);
        for (prop, (sig, deprecated)) in &from_xml.properties {
            let declared = iface
                .property(prop)
                .unwrap_or_else(|| panic!("{name}.{prop} not declared"));
            assert_eq!(declared.signature(), sig, "{name}.{prop}");
            assert_eq!(
                declared.is_deprecated(),
                *deprecated,
                "{name}.{prop} deprecation"
            );
            n_properties += 1;
        }
        assert_eq!(ours, *from_xml, "{name}");
    }
    assert_eq!(n_properties, 276);
}

#[test]
fn every_declaration_is_in_the_xml() {
    let xml = all_xml();
    assert_eq!(nm::REGISTRY.interfaces().len(), xml.len());
    for iface in nm::REGISTRY.interfaces() {
        let from_xml = xml
            .get(iface.name())
            .unwrap_or_else(|| panic!("{} not in the XML", iface.name()));
        for property in iface.properties() {
            let (sig, _) = from_xml
                .properties
                .get(property.name())
                .unwrap_or_else(|| panic!("{}.{} not in the XML", iface.name(), property.name()));
            assert_eq!(property.signature(), sig);
        }
        for method in iface.methods() {
            assert!(
                from_xml.methods.contains_key(method.name()),
                "{}.{}",
                iface.name(),
                method.name()
            );
        }
        for signal in iface.signals() {
            assert!(
                from_xml.signals.contains_key(signal.name()),
                "{}.{}",
                iface.name(),
                signal.name()
            );
        }
    }
}

#[test]
fn object_path_properties_name_declared_targets() {
    let mut n_paths = 0;
    for iface in nm::REGISTRY.interfaces() {
        for property in iface.properties() {
            let is_path = matches!(property.signature(), "o" | "ao");
            match property.target() {
                Some(target) => {
                    assert!(is_path, "{}.{} has a target", iface.name(), property.name());
                    assert!(
                        nm::REGISTRY.interface(target).is_some(),
                        "{target} undeclared"
                    );
                }
                None => assert!(
                    !is_path || property.name() == "SpecificObject",
                    "{}.{} lacks a target",
                    iface.name(),
                    property.name()
                ),
            }
            n_paths += usize::from(is_path);
        }
    }
    assert_eq!(n_paths, 45);
}
