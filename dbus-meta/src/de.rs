//! Serde seeds that decode a property's variant straight from D-Bus wire data into a
//! [`Value`], driven by the property's metadata: no intermediate tree of zbus variants for
//! the kinds NetworkManager uses.
//!
//! Each seed expects a `v` (variant) at the current position, as found in `a{sv}` property
//! dictionaries. Its output is itself a [`Result`]: a value of the wrong type is consumed and
//! reported as [`Error::TypeMismatch`] without failing the surrounding message.

use std::fmt;
use std::marker::PhantomData;
use std::str::FromStr;
use std::sync::Arc;

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use zbus::{ObjectPath, OwnedObjectPath, OwnedVariant, Signature, Type};

use crate::error::{Error, Result};
use crate::interface::{Interface, Property, Registry};
use crate::kind::Kind;
use crate::value::{SettingsDict, Value, VarDict};

/// Decodes a declared property's variant, checking the wire signature against the declared one.
#[derive(Clone, Copy, Debug)]
pub struct PropertySeed {
    property: &'static Property,
}

impl PropertySeed {
    /// A seed for `property`.
    pub const fn new(property: &'static Property) -> PropertySeed {
        PropertySeed { property }
    }
}

impl<'de> DeserializeSeed<'de> for PropertySeed {
    type Value = Result<Value>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_seq(VariantVisitor {
            declared: Some(self.property),
        })
    }
}

/// Decodes any variant in generic mode: its signature picks the [`Kind`].
#[derive(Clone, Copy, Debug, Default)]
pub struct GenericSeed;

impl<'de> DeserializeSeed<'de> for GenericSeed {
    type Value = Result<Value>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_seq(VariantVisitor { declared: None })
    }
}

impl Type for PropertySeed {
    const SIGNATURE: &'static Signature = &Signature::Variant;
}

impl Type for GenericSeed {
    const SIGNATURE: &'static Signature = &Signature::Variant;
}

/// One entry of a decoded `a{sv}` property dictionary.
#[derive(Clone, Debug, PartialEq)]
pub enum PropertyEntry {
    /// A declared property: its index in [`Interface::properties`] and its checked value
    /// (`Err` when the wire type is not the declared one; the property keeps its old value).
    Declared {
        /// Index in [`Interface::properties`].
        index: usize,
        /// The checked value.
        value: std::result::Result<Value, ErrorInfo>,
    },
    /// A property the interface does not declare (or any property of an undeclared
    /// interface), decoded in generic mode.
    Unknown {
        /// The property's name.
        name: Box<str>,
        /// The value; `Err` only for values that cannot be held.
        value: std::result::Result<Value, ErrorInfo>,
    },
}

/// A cloneable, comparable summary of an [`Error`] met while decoding one entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ErrorInfo {
    message: Box<str>,
    actual_signature: Option<Box<str>>,
}

impl ErrorInfo {
    /// The error's message.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// For a type mismatch, the signature found on the wire.
    pub fn actual_signature(&self) -> Option<&str> {
        self.actual_signature.as_deref()
    }
}

impl fmt::Display for ErrorInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl From<Error> for ErrorInfo {
    fn from(err: Error) -> ErrorInfo {
        let actual_signature = match &err {
            Error::TypeMismatch { actual, .. } => Some(Box::from(actual.as_str())),
            _ => None,
        };
        ErrorInfo {
            message: err.to_string().into_boxed_str(),
            actual_signature,
        }
    }
}

/// Decodes a property dictionary (`a{sv}`, as in `GetAll`, `InterfacesAdded` or
/// `PropertiesChanged`) of one interface: declared properties are checked and decoded by
/// their declaration, others in generic mode. `interface` is `None` for an undeclared one.
#[derive(Clone, Copy, Debug)]
pub struct PropertiesSeed {
    interface: Option<&'static Interface>,
}

impl PropertiesSeed {
    /// A seed for the properties of `interface` (`None`: generic mode for all).
    pub const fn new(interface: Option<&'static Interface>) -> PropertiesSeed {
        PropertiesSeed { interface }
    }
}

impl Type for PropertiesSeed {
    const SIGNATURE: &'static Signature = <crate::VarDict as Type>::SIGNATURE;
}

impl<'de> DeserializeSeed<'de> for PropertiesSeed {
    type Value = Vec<PropertyEntry>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for PropertiesSeed {
    type Value = Vec<PropertyEntry>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a dictionary of properties")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut entries = Vec::with_capacity(map.size_hint().unwrap_or(0).min(256));
        let mut hint = 0;
        while let Some(name) = map.next_key_seed(CowStrSeed)? {
            let declared = self.interface.and_then(|iface| {
                let index = iface.property_index_with_hint(&name, hint)?;
                hint = index + 1;
                Some((index, &iface.properties()[index]))
            });
            entries.push(match declared {
                Some((index, property)) => PropertyEntry::Declared {
                    index,
                    value: map
                        .next_value_seed(PropertySeed::new(property))?
                        .map_err(ErrorInfo::from),
                },
                None => PropertyEntry::Unknown {
                    name: name.into_owned().into_boxed_str(),
                    value: map.next_value_seed(GenericSeed)?.map_err(ErrorInfo::from),
                },
            });
        }
        Ok(entries)
    }
}

/// The decoded interfaces of one object (`a{sa{sv}}`, as in `InterfacesAdded` and each
/// object of `GetManagedObjects`).
#[derive(Clone, Debug, PartialEq)]
pub struct InterfaceEntry {
    /// The interface's name.
    pub name: Box<str>,
    /// Its declaration, if the registry has one.
    pub interface: Option<&'static Interface>,
    /// Its properties.
    pub properties: Vec<PropertyEntry>,
}

/// Decodes an object's interfaces and their properties (`a{sa{sv}}`) through a [`Registry`].
#[derive(Clone, Copy, Debug)]
pub struct InterfacesSeed {
    registry: &'static Registry,
}

impl InterfacesSeed {
    /// A seed looking interfaces up in `registry`.
    pub const fn new(registry: &'static Registry) -> InterfacesSeed {
        InterfacesSeed { registry }
    }
}

impl Type for InterfacesSeed {
    const SIGNATURE: &'static Signature = <crate::SettingsDict as Type>::SIGNATURE;
}

impl<'de> DeserializeSeed<'de> for InterfacesSeed {
    type Value = Vec<InterfaceEntry>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for InterfacesSeed {
    type Value = Vec<InterfaceEntry>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a dictionary of interfaces")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut entries = Vec::with_capacity(map.size_hint().unwrap_or(0).min(64));
        while let Some(name) = map.next_key_seed(CowStrSeed)? {
            let interface = self.registry.interface(&name);
            let properties = map.next_value_seed(PropertiesSeed::new(interface))?;
            entries.push(InterfaceEntry {
                name: name.into_owned().into_boxed_str(),
                interface,
                properties,
            });
        }
        Ok(entries)
    }
}

/// Decodes a whole `GetManagedObjects` reply (`a{oa{sa{sv}}}`) through a [`Registry`]: one
/// pass over the wire data into typed values, objects in wire order.
#[derive(Clone, Copy, Debug)]
pub struct ManagedObjectsSeed {
    registry: &'static Registry,
}

impl ManagedObjectsSeed {
    /// A seed looking interfaces up in `registry`.
    pub const fn new(registry: &'static Registry) -> ManagedObjectsSeed {
        ManagedObjectsSeed { registry }
    }
}

impl Type for ManagedObjectsSeed {
    const SIGNATURE: &'static Signature = &Signature::static_dict(
        &Signature::ObjectPath,
        <crate::SettingsDict as Type>::SIGNATURE,
    );
}

impl<'de> DeserializeSeed<'de> for ManagedObjectsSeed {
    type Value = Vec<(OwnedObjectPath, Vec<InterfaceEntry>)>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for ManagedObjectsSeed {
    type Value = Vec<(OwnedObjectPath, Vec<InterfaceEntry>)>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a dictionary of objects")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut objects = Vec::with_capacity(map.size_hint().unwrap_or(0).min(65536));
        while let Some(path) = map.next_key_seed(PathSeed)? {
            let interfaces = map.next_value_seed(InterfacesSeed::new(self.registry))?;
            objects.push((path, interfaces));
        }
        Ok(objects)
    }
}

/// A string key, borrowed from the wire data when the deserializer allows it.
#[derive(Clone, Copy)]
struct CowStrSeed;

impl<'de> DeserializeSeed<'de> for CowStrSeed {
    type Value = std::borrow::Cow<'de, str>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for CowStrSeed {
    type Value = std::borrow::Cow<'de, str>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }

    fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Self::Value, E> {
        Ok(std::borrow::Cow::Borrowed(s))
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
        Ok(std::borrow::Cow::Owned(s.to_owned()))
    }
}

struct VariantVisitor {
    declared: Option<&'static Property>,
}

impl<'de> Visitor<'de> for VariantVisitor {
    type Value = Result<Value>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a D-Bus variant")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let sig_text: &'de str = seq
            .next_element()?
            .ok_or_else(|| de::Error::invalid_length(0, &"a variant's signature"))?;
        let kind = match self.declared {
            Some(property) => {
                if !crate::check::str_eq(sig_text, property.signature()) {
                    // Consume the value so the message stays readable, then reject it.
                    let _: Option<IgnoredAny> = seq.next_element()?;
                    return Ok(Err(Error::TypeMismatch {
                        interface: property.interface(),
                        property: property.name(),
                        expected: property.signature(),
                        actual: sig_text.to_owned(),
                    }));
                }
                property.kind()
            }
            None => Kind::from_signature(sig_text),
        };
        let value = match kind {
            Kind::Other => {
                let sig = Signature::from_str(sig_text).map_err(de::Error::custom)?;
                let value = seq
                    .next_element_seed(ZvariantSeed {
                        sig: &sig,
                        marker: PhantomData,
                    })?
                    .ok_or_else(|| de::Error::invalid_length(1, &"a variant's value"))?;
                value.and_then(|value| {
                    let owned = value.try_into_owned()?;
                    Ok(Value::Other(Arc::new(owned)))
                })
            }
            kind => Ok::<_, Error>(
                seq.next_element_seed(KindSeed(kind))?
                    .ok_or_else(|| de::Error::invalid_length(1, &"a variant's value"))?,
            ),
        };
        Ok(value)
    }
}

/// Decodes the (unwrapped) value of a known, non-[`Kind::Other`] kind.
#[derive(Clone, Copy)]
struct KindSeed(Kind);

impl<'de> DeserializeSeed<'de> for KindSeed {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        Ok(match self.0 {
            Kind::Bool => Value::Bool(bool::deserialize(d)?),
            Kind::Byte => Value::Byte(u8::deserialize(d)?),
            Kind::I16 => Value::I16(i16::deserialize(d)?),
            Kind::U16 => Value::U16(u16::deserialize(d)?),
            Kind::I32 => Value::I32(i32::deserialize(d)?),
            Kind::U32 => Value::U32(u32::deserialize(d)?),
            Kind::I64 => Value::I64(i64::deserialize(d)?),
            Kind::U64 => Value::U64(u64::deserialize(d)?),
            Kind::F64 => Value::F64(f64::deserialize(d)?),
            Kind::Str => Value::Str(ArcStrSeed.deserialize(d)?),
            Kind::ObjectPath => Value::ObjectPath(PathSeed.deserialize(d)?),
            Kind::StrArray => Value::StrArray(d.deserialize_seq(SeqVisitor(ArcStrSeed))?.into()),
            Kind::ObjectPathArray => {
                Value::ObjectPathArray(d.deserialize_seq(SeqVisitor(PathSeed))?.into())
            }
            Kind::Bytes => Value::Bytes(BytesSeed.deserialize(d)?.into()),
            Kind::ByteArrays => Value::ByteArrays(d.deserialize_seq(SeqVisitor(BytesSeed))?.into()),
            Kind::U32Array => Value::U32Array(U32sSeed.deserialize(d)?.into()),
            Kind::U32Arrays => Value::U32Arrays(d.deserialize_seq(SeqVisitor(U32sSeed))?.into()),
            Kind::VarDict => Value::VarDict(Arc::new(VarDictSeed.deserialize(d)?)),
            Kind::VarDictArray => {
                Value::VarDictArray(d.deserialize_seq(SeqVisitor(VarDictSeed))?.into())
            }
            Kind::SettingsDict => Value::SettingsDict(Arc::new(SettingsDictSeed.deserialize(d)?)),
            Kind::Other => return Err(de::Error::custom("no typed decoder for this kind")),
        })
    }
}

/// Collects a sequence of seeded elements into a boxed slice.
struct SeqVisitor<S>(S);

impl<'de, S: DeserializeSeed<'de> + Copy> Visitor<'de> for SeqVisitor<S> {
    type Value = Vec<S::Value>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(item) = seq.next_element_seed(self.0)? {
            items.push(item);
        }
        Ok(items)
    }
}

#[derive(Clone, Copy)]
struct ArcStrSeed;

impl<'de> DeserializeSeed<'de> for ArcStrSeed {
    type Value = Arc<str>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Arc<str>, D::Error> {
        d.deserialize_str(self)
    }
}

impl Visitor<'_> for ArcStrSeed {
    type Value = Arc<str>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<Arc<str>, E> {
        Ok(Arc::from(s))
    }
}

#[derive(Clone, Copy)]
struct PathSeed;

impl<'de> DeserializeSeed<'de> for PathSeed {
    type Value = OwnedObjectPath;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<OwnedObjectPath, D::Error> {
        let path = ObjectPath::deserialize(d)?;
        // "/" means "no object" and is by far the most common path: share a static one.
        if path.as_str() == "/" {
            return Ok(OwnedObjectPath::from(
                ObjectPath::from_static_str_unchecked("/"),
            ));
        }
        Ok(OwnedObjectPath::from(path.into_owned()))
    }
}

#[derive(Clone, Copy)]
struct BytesSeed;

impl<'de> DeserializeSeed<'de> for BytesSeed {
    type Value = Box<[u8]>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Box<[u8]>, D::Error> {
        d.deserialize_bytes(self)
    }
}

impl<'de> Visitor<'de> for BytesSeed {
    type Value = Box<[u8]>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a byte array")
    }

    fn visit_bytes<E: de::Error>(self, bytes: &[u8]) -> Result<Box<[u8]>, E> {
        Ok(Box::from(bytes))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Box<[u8]>, A::Error> {
        let mut bytes = Vec::new();
        while let Some(byte) = seq.next_element::<u8>()? {
            bytes.push(byte);
        }
        Ok(bytes.into_boxed_slice())
    }
}

#[derive(Clone, Copy)]
struct U32sSeed;

impl<'de> DeserializeSeed<'de> for U32sSeed {
    type Value = Box<[u32]>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Box<[u32]>, D::Error> {
        Ok(Vec::<u32>::deserialize(d)?.into_boxed_slice())
    }
}

#[derive(Clone, Copy)]
struct VarDictSeed;

impl<'de> DeserializeSeed<'de> for VarDictSeed {
    type Value = VarDict;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<VarDict, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for VarDictSeed {
    type Value = VarDict;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a dictionary of variants")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<VarDict, A::Error> {
        let mut entries = Vec::with_capacity(map.size_hint().unwrap_or(0).min(4096));
        while let Some(key) = map.next_key_seed(BoxStrSeed)? {
            let value: OwnedVariant = map.next_value()?;
            entries.push((key, value));
        }
        Ok(VarDict::new(entries))
    }
}

#[derive(Clone, Copy)]
struct SettingsDictSeed;

impl<'de> DeserializeSeed<'de> for SettingsDictSeed {
    type Value = SettingsDict;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<SettingsDict, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for SettingsDictSeed {
    type Value = SettingsDict;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a dictionary of settings")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<SettingsDict, A::Error> {
        let mut entries = Vec::new();
        while let Some(key) = map.next_key_seed(BoxStrSeed)? {
            let value = map.next_value_seed(VarDictSeed)?;
            entries.push((key, value));
        }
        Ok(SettingsDict::new(entries))
    }
}

#[derive(Clone, Copy)]
struct BoxStrSeed;

impl<'de> DeserializeSeed<'de> for BoxStrSeed {
    type Value = Box<str>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Box<str>, D::Error> {
        d.deserialize_str(self)
    }
}

impl Visitor<'_> for BoxStrSeed {
    type Value = Box<str>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<Box<str>, E> {
        Ok(Box::from(s))
    }
}

/// Builds a zbus variant of a known signature (the generic path, for [`Kind::Other`]).
///
/// Its output is a `Result` so that a value zbus refuses to build (e.g. a file descriptor)
/// is reported instead of failing the surrounding message.
struct ZvariantSeed<'s, 'de> {
    sig: &'s Signature,
    marker: PhantomData<&'de ()>,
}

impl<'s, 'de> ZvariantSeed<'s, 'de> {
    fn child(sig: &'s Signature) -> Self {
        ZvariantSeed {
            sig,
            marker: PhantomData,
        }
    }
}

type Built<'de> = Result<zbus::Variant<'de>>;

impl<'de> DeserializeSeed<'de> for ZvariantSeed<'_, 'de> {
    type Value = Built<'de>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Built<'de>, D::Error> {
        use zbus::Variant as Z;
        Ok(Ok(match self.sig {
            Signature::U8 => Z::U8(u8::deserialize(d)?),
            Signature::Bool => Z::Bool(bool::deserialize(d)?),
            Signature::I16 => Z::I16(i16::deserialize(d)?),
            Signature::U16 => Z::U16(u16::deserialize(d)?),
            Signature::I32 => Z::I32(i32::deserialize(d)?),
            Signature::U32 => Z::U32(u32::deserialize(d)?),
            Signature::I64 => Z::I64(i64::deserialize(d)?),
            Signature::U64 => Z::U64(u64::deserialize(d)?),
            Signature::F64 => Z::F64(f64::deserialize(d)?),
            Signature::Str => Z::from(<&'de str>::deserialize(d)?),
            Signature::Signature => Z::Signature(Signature::deserialize(d)?),
            Signature::ObjectPath => Z::ObjectPath(ObjectPath::deserialize(d)?),
            Signature::Variant => Z::Variant(Box::new(zbus::Variant::deserialize(d)?)),
            Signature::Array(child) => return d.deserialize_seq(ArrayVisitor { child }),
            Signature::Dict { key, value } => {
                return d.deserialize_map(DictVisitor {
                    key: key.signature(),
                    value: value.signature(),
                });
            }
            Signature::Structure(_) => return d.deserialize_seq(StructVisitor { sig: self.sig }),
            other => {
                let _ = IgnoredAny::deserialize(d)?;
                return Ok(Err(Error::InvalidSignature(other.to_string())));
            }
        }))
    }
}

struct ArrayVisitor<'s> {
    child: &'s zbus::wire::signature::Child,
}

impl<'de> Visitor<'de> for ArrayVisitor<'_> {
    type Value = Built<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Built<'de>, A::Error> {
        let mut array = zbus::Array::new(self.child.signature());
        let mut failure = None;
        while let Some(item) = seq.next_element_seed(ZvariantSeed::child(self.child.signature()))? {
            match item.and_then(|item| array.append(item).map_err(Error::from)) {
                Ok(()) => {}
                Err(err) => failure = failure.or(Some(err)),
            }
        }
        Ok(match failure {
            Some(err) => Err(err),
            None => Ok(zbus::Variant::Array(array)),
        })
    }
}

struct DictVisitor<'s> {
    key: &'s Signature,
    value: &'s Signature,
}

impl<'de> Visitor<'de> for DictVisitor<'_> {
    type Value = Built<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a dictionary")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Built<'de>, A::Error> {
        let mut dict = zbus::Dict::new(self.key, self.value);
        let mut failure = None;
        while let Some(key) = map.next_key_seed(ZvariantSeed::child(self.key))? {
            let value = map.next_value_seed(ZvariantSeed::child(self.value))?;
            let res = key.and_then(|key| value.and_then(|value| Ok(dict.append(key, value)?)));
            if let Err(err) = res {
                failure = failure.or(Some(err));
            }
        }
        Ok(match failure {
            Some(err) => Err(err),
            None => Ok(zbus::Variant::Dict(dict)),
        })
    }
}

struct StructVisitor<'s> {
    sig: &'s Signature,
}

impl<'de> Visitor<'de> for StructVisitor<'_> {
    type Value = Built<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a structure")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Built<'de>, A::Error> {
        let Signature::Structure(fields) = self.sig else {
            return Err(de::Error::custom(
                "structure visitor without structure signature",
            ));
        };
        let mut builder = zbus::wire::StructureBuilder::new();
        let mut failure = None;
        for field_sig in fields.iter() {
            let field = seq
                .next_element_seed(ZvariantSeed::child(field_sig))?
                .ok_or_else(|| de::Error::custom("structure ended early"))?;
            match field {
                Ok(field) => builder = builder.append_field(field),
                Err(err) => failure = failure.or(Some(err)),
            }
        }
        Ok(match failure {
            Some(err) => Err(err),
            None => builder
                .build()
                .map(zbus::Variant::Structure)
                .map_err(Error::from),
        })
    }
}
