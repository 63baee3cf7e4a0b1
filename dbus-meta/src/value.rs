//! The typed value a property holds once decoded: a compact enum with one variant per
//! [`Kind`], heap payloads behind `Arc` so that cloning a value (e.g. for an old/new change
//! event) never copies its contents.

use std::sync::Arc;

use serde::ser::{Serialize, SerializeMap, Serializer};
use zbus::{OwnedObjectPath, OwnedVariant, Signature, Type};

use crate::error::{Error, Result};
use crate::kind::Kind;
use crate::signature;

/// A decoded property value.
///
/// Each variant matches one [`Kind`]; [`Value::Other`] holds any other signature as an owned
/// zbus variant (generic mode and rare shapes such as NetworkManager's `a(ayuay)`).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Value {
    /// `b`
    Bool(bool),
    /// `y`
    Byte(u8),
    /// `n`
    I16(i16),
    /// `q`
    U16(u16),
    /// `i`
    I32(i32),
    /// `u`
    U32(u32),
    /// `x`
    I64(i64),
    /// `t`
    U64(u64),
    /// `d`
    F64(f64),
    /// `s`
    Str(Arc<str>),
    /// `o`
    ObjectPath(OwnedObjectPath),
    /// `as`
    StrArray(Arc<[Arc<str>]>),
    /// `ao`
    ObjectPathArray(Arc<[OwnedObjectPath]>),
    /// `ay`
    Bytes(Arc<[u8]>),
    /// `aay`
    ByteArrays(Arc<[Box<[u8]>]>),
    /// `au`
    U32Array(Arc<[u32]>),
    /// `aau`
    U32Arrays(Arc<[Box<[u32]>]>),
    /// `a{sv}`
    VarDict(Arc<VarDict>),
    /// `aa{sv}`
    VarDictArray(Arc<[VarDict]>),
    /// `a{sa{sv}}`
    SettingsDict(Arc<SettingsDict>),
    /// Any other signature.
    Other(Arc<OwnedVariant>),
}

impl Value {
    /// The kind of this value.
    pub fn kind(&self) -> Kind {
        match self {
            Value::Bool(_) => Kind::Bool,
            Value::Byte(_) => Kind::Byte,
            Value::I16(_) => Kind::I16,
            Value::U16(_) => Kind::U16,
            Value::I32(_) => Kind::I32,
            Value::U32(_) => Kind::U32,
            Value::I64(_) => Kind::I64,
            Value::U64(_) => Kind::U64,
            Value::F64(_) => Kind::F64,
            Value::Str(_) => Kind::Str,
            Value::ObjectPath(_) => Kind::ObjectPath,
            Value::StrArray(_) => Kind::StrArray,
            Value::ObjectPathArray(_) => Kind::ObjectPathArray,
            Value::Bytes(_) => Kind::Bytes,
            Value::ByteArrays(_) => Kind::ByteArrays,
            Value::U32Array(_) => Kind::U32Array,
            Value::U32Arrays(_) => Kind::U32Arrays,
            Value::VarDict(_) => Kind::VarDict,
            Value::VarDictArray(_) => Kind::VarDictArray,
            Value::SettingsDict(_) => Kind::SettingsDict,
            Value::Other(_) => Kind::Other,
        }
    }

    /// The string of an `s` value.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(it) => Some(it),
            _ => None,
        }
    }

    /// The number of an unsigned or signed integer value of any width, widened to `i128`.
    pub fn as_integer(&self) -> Option<i128> {
        Some(match *self {
            Value::Byte(it) => it.into(),
            Value::I16(it) => it.into(),
            Value::U16(it) => it.into(),
            Value::I32(it) => it.into(),
            Value::U32(it) => it.into(),
            Value::I64(it) => it.into(),
            Value::U64(it) => it.into(),
            _ => return None,
        })
    }

    /// The flag of a `b` value.
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(it) => Some(*it),
            _ => None,
        }
    }

    /// The path of an `o` value; `None` also for `"/"`, which means "no object".
    pub fn as_object_path(&self) -> Option<&OwnedObjectPath> {
        match self {
            Value::ObjectPath(it) if it.as_str() != "/" => Some(it),
            _ => None,
        }
    }

    /// The paths of an `ao` value.
    pub fn as_object_paths(&self) -> Option<&[OwnedObjectPath]> {
        match self {
            Value::ObjectPathArray(it) => Some(it),
            _ => None,
        }
    }

    /// The D-Bus signature of this value, as text.
    pub fn signature(&self) -> String {
        match self.kind().signature() {
            Some(sig) => sig.to_owned(),
            None => match self {
                Value::Other(value) => value.value_signature().to_string(),
                _ => String::new(),
            },
        }
    }

    /// Decodes `value` in generic mode: its own signature picks the kind.
    ///
    /// This is how objects of services nobody declared are held. It fails only for values
    /// that cannot be owned (file descriptors that cannot be duplicated).
    pub fn from_variant(value: &zbus::Variant<'_>) -> Result<Value> {
        let value = unwrap_variant(value);
        let sig = value.value_signature();
        let kind = kind_of(sig);
        match convert(kind, value) {
            Some(decoded) => Ok(decoded),
            None => other(value),
        }
    }

    /// Decodes `value` as `kind` after checking that its signature is `expected`.
    ///
    /// `interface` and `property` only name the property in the error.
    pub(crate) fn from_variant_checked(
        kind: Kind,
        expected: &'static str,
        interface: &'static str,
        property: &'static str,
        value: &zbus::Variant<'_>,
    ) -> Result<Value> {
        let value = unwrap_variant(value);
        let sig = value.value_signature();
        if !signature::matches(sig, expected) {
            return Err(Error::TypeMismatch {
                interface,
                property,
                expected,
                actual: sig.to_string(),
            });
        }
        match convert(kind, value) {
            Some(decoded) => Ok(decoded),
            None if kind == Kind::Other => other(value),
            // The signature matched, so the shape matches the kind; this is unreachable for
            // well-formed zbus variants but is still reported instead of panicking.
            None => Err(Error::TypeMismatch {
                interface,
                property,
                expected,
                actual: sig.to_string(),
            }),
        }
    }

    /// Converts this value back into an owned zbus variant (e.g. to send it).
    pub fn to_variant(&self) -> Result<OwnedVariant> {
        let value = match self {
            Value::Bool(it) => zbus::Variant::from(*it),
            Value::Byte(it) => zbus::Variant::from(*it),
            Value::I16(it) => zbus::Variant::from(*it),
            Value::U16(it) => zbus::Variant::from(*it),
            Value::I32(it) => zbus::Variant::from(*it),
            Value::U32(it) => zbus::Variant::from(*it),
            Value::I64(it) => zbus::Variant::from(*it),
            Value::U64(it) => zbus::Variant::from(*it),
            Value::F64(it) => zbus::Variant::from(*it),
            Value::Str(it) => zbus::Variant::from(&**it),
            Value::ObjectPath(it) => zbus::Variant::from(it.as_ref()),
            Value::StrArray(it) => zbus::Variant::from(it.iter().map(|s| &**s).collect::<Vec<_>>()),
            Value::ObjectPathArray(it) => {
                zbus::Variant::from(it.iter().map(|p| p.as_ref()).collect::<Vec<_>>())
            }
            Value::Bytes(it) => zbus::Variant::from(it.to_vec()),
            Value::ByteArrays(it) => {
                zbus::Variant::from(it.iter().map(|b| b.to_vec()).collect::<Vec<_>>())
            }
            Value::U32Array(it) => zbus::Variant::from(it.to_vec()),
            Value::U32Arrays(it) => {
                zbus::Variant::from(it.iter().map(|b| b.to_vec()).collect::<Vec<_>>())
            }
            Value::VarDict(it) => zbus::Variant::from(it.to_dict()?),
            Value::VarDictArray(it) => {
                let mut array = zbus::Array::new(&VAR_DICT_SIGNATURE);
                for dict in it.iter() {
                    array.append(zbus::Variant::from(dict.to_dict()?))?;
                }
                zbus::Variant::from(array)
            }
            Value::SettingsDict(it) => {
                let mut outer = zbus::Dict::new(&Signature::Str, &VAR_DICT_SIGNATURE);
                for (name, dict) in it.iter() {
                    outer.append(
                        zbus::Variant::from(name),
                        zbus::Variant::from(dict.to_dict()?),
                    )?;
                }
                zbus::Variant::from(outer)
            }
            Value::Other(it) => return Ok(it.try_clone()?),
        };
        Ok(value.try_into_owned()?)
    }
}

/// Generic-mode decoding of a borrowed variant (see [`Value::from_variant`]).
impl TryFrom<&zbus::Variant<'_>> for Value {
    type Error = Error;

    fn try_from(value: &zbus::Variant<'_>) -> Result<Value> {
        Value::from_variant(value)
    }
}

/// Generic-mode decoding of a variant (see [`Value::from_variant`]).
impl TryFrom<zbus::Variant<'_>> for Value {
    type Error = Error;

    fn try_from(value: zbus::Variant<'_>) -> Result<Value> {
        Value::from_variant(&value)
    }
}

/// Generic-mode decoding of a borrowed owned variant (see [`Value::from_variant`]).
impl TryFrom<&OwnedVariant> for Value {
    type Error = Error;

    fn try_from(value: &OwnedVariant) -> Result<Value> {
        Value::from_variant(value)
    }
}

/// Generic-mode decoding of an owned variant (see [`Value::from_variant`]).
impl TryFrom<OwnedVariant> for Value {
    type Error = Error;

    fn try_from(value: OwnedVariant) -> Result<Value> {
        Value::from_variant(&value)
    }
}

/// The value as an owned zbus variant (see [`Value::to_variant`]).
impl TryFrom<&Value> for OwnedVariant {
    type Error = Error;

    fn try_from(value: &Value) -> Result<OwnedVariant> {
        value.to_variant()
    }
}

/// The value as an owned zbus variant (see [`Value::to_variant`]).
impl TryFrom<Value> for OwnedVariant {
    type Error = Error;

    fn try_from(value: Value) -> Result<OwnedVariant> {
        value.to_variant()
    }
}

/// A [`Value`] travels as a D-Bus variant (`v`): it carries its own signature.
impl Type for Value {
    const SIGNATURE: &'static Signature = &Signature::Variant;
}

/// Serializes the value as a D-Bus variant, exactly as the equal
/// [`OwnedVariant`](struct@OwnedVariant) would be: its signature, then its contents. In a D-Bus
/// body that is a `v` (so a `Value` can be sent as is, e.g. in an `a{sv}`); in a
/// self-describing format such as JSON it is
/// `{"signature": "u", "value": 100}`, so no type information is lost.
impl Serialize for Value {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;

        let signature = match self {
            // An owned variant already serializes as a variant.
            Value::Other(it) => return it.serialize(serializer),
            Value::Bool(_) => <bool as Type>::SIGNATURE,
            Value::Byte(_) => <u8 as Type>::SIGNATURE,
            Value::I16(_) => <i16 as Type>::SIGNATURE,
            Value::U16(_) => <u16 as Type>::SIGNATURE,
            Value::I32(_) => <i32 as Type>::SIGNATURE,
            Value::U32(_) => <u32 as Type>::SIGNATURE,
            Value::I64(_) => <i64 as Type>::SIGNATURE,
            Value::U64(_) => <u64 as Type>::SIGNATURE,
            Value::F64(_) => <f64 as Type>::SIGNATURE,
            Value::Str(_) => <String as Type>::SIGNATURE,
            Value::ObjectPath(_) => <OwnedObjectPath as Type>::SIGNATURE,
            Value::StrArray(_) => <Vec<String> as Type>::SIGNATURE,
            Value::ObjectPathArray(_) => <Vec<OwnedObjectPath> as Type>::SIGNATURE,
            Value::Bytes(_) => <Vec<u8> as Type>::SIGNATURE,
            Value::ByteArrays(_) => <Vec<Vec<u8>> as Type>::SIGNATURE,
            Value::U32Array(_) => <Vec<u32> as Type>::SIGNATURE,
            Value::U32Arrays(_) => <Vec<Vec<u32>> as Type>::SIGNATURE,
            Value::VarDict(_) => <VarDict as Type>::SIGNATURE,
            Value::VarDictArray(_) => <Vec<VarDict> as Type>::SIGNATURE,
            Value::SettingsDict(_) => <SettingsDict as Type>::SIGNATURE,
        };
        let mut variant = serializer.serialize_struct("Variant", 2)?;
        variant.serialize_field("signature", signature)?;
        variant.serialize_field("value", &Contents(self))?;
        variant.end()
    }
}

/// The contents of a typed (non-[`Value::Other`]) value, without the variant around them.
struct Contents<'a>(&'a Value);

impl Serialize for Contents<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        match self.0 {
            Value::Bool(it) => serializer.serialize_bool(*it),
            Value::Byte(it) => serializer.serialize_u8(*it),
            Value::I16(it) => serializer.serialize_i16(*it),
            Value::U16(it) => serializer.serialize_u16(*it),
            Value::I32(it) => serializer.serialize_i32(*it),
            Value::U32(it) => serializer.serialize_u32(*it),
            Value::I64(it) => serializer.serialize_i64(*it),
            Value::U64(it) => serializer.serialize_u64(*it),
            Value::F64(it) => serializer.serialize_f64(*it),
            Value::Str(it) => serializer.serialize_str(it),
            Value::ObjectPath(it) => it.serialize(serializer),
            Value::StrArray(it) => serializer.collect_seq(it.iter().map(|s| &**s)),
            Value::ObjectPathArray(it) => serializer.collect_seq(it.iter()),
            Value::Bytes(it) => serializer.collect_seq(it.iter()),
            Value::ByteArrays(it) => serializer.collect_seq(it.iter()),
            Value::U32Array(it) => serializer.collect_seq(it.iter()),
            Value::U32Arrays(it) => serializer.collect_seq(it.iter()),
            Value::VarDict(it) => it.serialize(serializer),
            Value::VarDictArray(it) => serializer.collect_seq(it.iter()),
            Value::SettingsDict(it) => it.serialize(serializer),
            Value::Other(it) => it.serialize(serializer),
        }
    }
}

const VAR_DICT_SIGNATURE: Signature = Signature::static_dict(&Signature::Str, &Signature::Variant);

/// Entries sorted by key for lookup by binary search; if a key repeats, the first entry wins.
#[derive(Debug, PartialEq)]
struct SortedEntries<V> {
    entries: Box<[(Box<str>, V)]>,
}

impl<V> SortedEntries<V> {
    fn new(mut entries: Vec<(Box<str>, V)>) -> SortedEntries<V> {
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        entries.dedup_by(|later, earlier| later.0 == earlier.0);
        SortedEntries {
            entries: entries.into_boxed_slice(),
        }
    }

    fn get(&self, key: &str) -> Option<&V> {
        let idx = self
            .entries
            .binary_search_by(|(k, _)| (**k).cmp(key))
            .ok()?;
        Some(&self.entries[idx].1)
    }

    fn iter(&self) -> impl ExactSizeIterator<Item = (&str, &V)> {
        self.entries.iter().map(|(k, v)| (&**k, v))
    }

    fn len(&self) -> usize {
        self.entries.len()
    }
}

impl<V> Default for SortedEntries<V> {
    fn default() -> SortedEntries<V> {
        SortedEntries {
            entries: Box::default(),
        }
    }
}

/// A `a{sv}` dictionary: entries sorted by key for lookup, values as owned zbus variants.
#[derive(Debug, PartialEq, Default)]
pub struct VarDict {
    entries: SortedEntries<OwnedVariant>,
}

impl VarDict {
    /// Builds a dictionary from its entries; if a key repeats, the first entry wins.
    pub fn new(entries: Vec<(Box<str>, OwnedVariant)>) -> VarDict {
        VarDict {
            entries: SortedEntries::new(entries),
        }
    }

    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<&OwnedVariant> {
        self.entries.get(key)
    }

    /// The entries, sorted by key.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&str, &OwnedVariant)> {
        self.entries.iter()
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are no entries.
    pub fn is_empty(&self) -> bool {
        self.entries.len() == 0
    }

    /// A copy as a zbus dictionary.
    pub fn to_dict(&self) -> Result<zbus::Dict<'static, 'static>> {
        let mut dict = zbus::Dict::new(&Signature::Str, &Signature::Variant);
        for (key, value) in self.iter() {
            let inner = zbus::Variant::from(value.try_clone()?);
            dict.append(
                zbus::Variant::from(key.to_owned()),
                zbus::Variant::Variant(Box::new(inner)),
            )?;
        }
        Ok(dict)
    }
}

impl Type for VarDict {
    const SIGNATURE: &'static Signature = &VAR_DICT_SIGNATURE;
}

impl Serialize for VarDict {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.entries.len()))?;
        for (key, value) in self.iter() {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

/// A `a{sa{sv}}` dictionary (NetworkManager's connection settings): setting names sorted for
/// lookup, each with its [`VarDict`].
#[derive(Debug, PartialEq, Default)]
pub struct SettingsDict {
    entries: SortedEntries<VarDict>,
}

impl SettingsDict {
    /// Builds a dictionary from its entries; if a name repeats, the first entry wins.
    pub fn new(entries: Vec<(Box<str>, VarDict)>) -> SettingsDict {
        SettingsDict {
            entries: SortedEntries::new(entries),
        }
    }

    /// The setting called `name`.
    pub fn get(&self, name: &str) -> Option<&VarDict> {
        self.entries.get(name)
    }

    /// The settings, sorted by name.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&str, &VarDict)> {
        self.entries.iter()
    }

    /// The number of settings.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are no settings.
    pub fn is_empty(&self) -> bool {
        self.entries.len() == 0
    }
}

impl Type for SettingsDict {
    const SIGNATURE: &'static Signature =
        &Signature::static_dict(&Signature::Str, <VarDict as Type>::SIGNATURE);
}

impl Serialize for SettingsDict {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.entries.len()))?;
        for (key, value) in self.iter() {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

/// Strips variant wrappers (`v` inside `v`) so that a value read with `Get` and one found in a
/// dictionary compare alike.
fn unwrap_variant<'a, 'v>(mut value: &'a zbus::Variant<'v>) -> &'a zbus::Variant<'v> {
    while let zbus::Variant::Variant(inner) = value {
        value = inner;
    }
    value
}

/// The kind for a parsed signature (see [`Kind::from_signature`]), without allocating.
pub(crate) fn kind_of(sig: &Signature) -> Kind {
    const KINDS: [Kind; 20] = [
        Kind::Bool,
        Kind::Byte,
        Kind::I16,
        Kind::U16,
        Kind::I32,
        Kind::U32,
        Kind::I64,
        Kind::U64,
        Kind::F64,
        Kind::Str,
        Kind::ObjectPath,
        Kind::StrArray,
        Kind::ObjectPathArray,
        Kind::Bytes,
        Kind::ByteArrays,
        Kind::U32Array,
        Kind::U32Arrays,
        Kind::VarDict,
        Kind::VarDictArray,
        Kind::SettingsDict,
    ];
    for kind in KINDS {
        if let Some(text) = kind.signature()
            && signature::matches(sig, text)
        {
            return kind;
        }
    }
    Kind::Other
}

fn other(value: &zbus::Variant<'_>) -> Result<Value> {
    Ok(Value::Other(Arc::new(value.try_to_owned()?)))
}

fn str_of(value: &zbus::Variant<'_>) -> Option<Arc<str>> {
    match value {
        zbus::Variant::Str(s) => Some(Arc::from(s.as_str())),
        _ => None,
    }
}

fn path_of(value: &zbus::Variant<'_>) -> Option<OwnedObjectPath> {
    match value {
        zbus::Variant::ObjectPath(p) => Some(OwnedObjectPath::from(p.to_owned())),
        _ => None,
    }
}

fn array_of<'a, 'v>(value: &'a zbus::Variant<'v>) -> Option<&'a [zbus::Variant<'v>]> {
    match value {
        zbus::Variant::Array(a) => Some(a.inner()),
        _ => None,
    }
}

fn collect<T, C: FromIterator<T>>(
    items: &[zbus::Variant<'_>],
    f: impl Fn(&zbus::Variant<'_>) -> Option<T>,
) -> Option<C> {
    items.iter().map(f).collect()
}

fn bytes_of(value: &zbus::Variant<'_>) -> Option<Box<[u8]>> {
    collect(array_of(value)?, |v| match v {
        zbus::Variant::U8(b) => Some(*b),
        _ => None,
    })
}

fn u32s_of(value: &zbus::Variant<'_>) -> Option<Box<[u32]>> {
    collect(array_of(value)?, |v| match v {
        zbus::Variant::U32(n) => Some(*n),
        _ => None,
    })
}

fn var_dict_of(value: &zbus::Variant<'_>) -> Option<VarDict> {
    let zbus::Variant::Dict(dict) = value else {
        return None;
    };
    let mut entries = Vec::new();
    for (key, value) in dict.iter() {
        let zbus::Variant::Str(key) = key else {
            return None;
        };
        let owned = unwrap_variant(value).try_to_owned().ok()?;
        entries.push((Box::from(key.as_str()), owned));
    }
    Some(VarDict::new(entries))
}

fn settings_dict_of(value: &zbus::Variant<'_>) -> Option<SettingsDict> {
    let zbus::Variant::Dict(dict) = value else {
        return None;
    };
    let mut entries = Vec::new();
    for (key, value) in dict.iter() {
        let zbus::Variant::Str(key) = key else {
            return None;
        };
        entries.push((Box::from(key.as_str()), var_dict_of(value)?));
    }
    Some(SettingsDict::new(entries))
}

/// Converts a zbus variant whose signature is known to fit `kind`; `None` for
/// [`Kind::Other`] or a value that does not have the shape.
fn convert(kind: Kind, value: &zbus::Variant<'_>) -> Option<Value> {
    use zbus::Variant as Z;
    Some(match (kind, value) {
        (Kind::Bool, Z::Bool(it)) => Value::Bool(*it),
        (Kind::Byte, Z::U8(it)) => Value::Byte(*it),
        (Kind::I16, Z::I16(it)) => Value::I16(*it),
        (Kind::U16, Z::U16(it)) => Value::U16(*it),
        (Kind::I32, Z::I32(it)) => Value::I32(*it),
        (Kind::U32, Z::U32(it)) => Value::U32(*it),
        (Kind::I64, Z::I64(it)) => Value::I64(*it),
        (Kind::U64, Z::U64(it)) => Value::U64(*it),
        (Kind::F64, Z::F64(it)) => Value::F64(*it),
        (Kind::Str, _) => Value::Str(str_of(value)?),
        (Kind::ObjectPath, _) => Value::ObjectPath(path_of(value)?),
        (Kind::StrArray, _) => Value::StrArray(collect(array_of(value)?, str_of)?),
        (Kind::ObjectPathArray, _) => Value::ObjectPathArray(collect(array_of(value)?, path_of)?),
        (Kind::Bytes, _) => Value::Bytes(Arc::from(bytes_of(value)?)),
        (Kind::ByteArrays, _) => Value::ByteArrays(collect(array_of(value)?, bytes_of)?),
        (Kind::U32Array, _) => Value::U32Array(Arc::from(u32s_of(value)?)),
        (Kind::U32Arrays, _) => Value::U32Arrays(collect(array_of(value)?, u32s_of)?),
        (Kind::VarDict, _) => Value::VarDict(Arc::new(var_dict_of(value)?)),
        (Kind::VarDictArray, _) => Value::VarDictArray(collect(array_of(value)?, var_dict_of)?),
        (Kind::SettingsDict, _) => Value::SettingsDict(Arc::new(settings_dict_of(value)?)),
        _ => return None,
    })
}
