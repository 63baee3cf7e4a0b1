//! Owned, compact D-Bus values: the one value type of the workspace, what the decoder
//! ([`crate::wire::Reader`]) produces and what a client cache stores for each property.
//!
//! A [`Value`] is 24 bytes. Common arrays (`ay`, `as`, `ao`, `au`) have flat variants so that a
//! device's list of paths is one allocation, not one per element. A value converts to and from
//! a zbus [`OwnedVariant`](struct@OwnedVariant) and serializes as that variant would.

use std::fmt;

use serde::ser::{Error as _, Serialize, SerializeMap, SerializeSeq, SerializeStruct, Serializer};
use zbus::OwnedVariant;
use zbus::wire::serialized::{Context, Data};
use zbus::wire::{Endian, Signature, Type};

use crate::error::{Error, Result};
use crate::wire::Reader;

/// An owned D-Bus value.
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub enum Value {
    /// A declared property the service has not sent (yet): the property's default.
    #[default]
    Unset,
    /// `b`
    Bool(bool),
    /// `y`
    U8(u8),
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
    Str(Box<str>),
    /// `o`
    Path(Box<str>),
    /// `g`
    Signature(Box<str>),
    /// `h` (the index into the message's file descriptors; the cache does not keep fds)
    Fd(u32),
    /// `ay`
    Bytes(Box<[u8]>),
    /// `as`
    Strs(Box<[Box<str>]>),
    /// `ao`
    Paths(Box<[Box<str>]>),
    /// `au`
    U32s(Box<[u32]>),
    /// Any other array.
    Array(Box<Array>),
    /// `a{..}`
    Dict(Box<Dict>),
    /// `(..)`
    Struct(Box<[Value]>),
    /// `v`
    Variant(Box<Value>),
    /// An `av` whose every element is a `y` variant, kept as one byte per element (the same
    /// value as an [`Array`] of [`Value::Variant`]s of [`Value::U8`], without a boxed variant
    /// per byte). Never empty: an empty `av` is an empty [`Value::Array`].
    VariantBytes(Box<[u8]>),
}

/// An array other than `ay`, `as`, `ao`, `au`.
#[derive(Debug, Clone, PartialEq)]
pub struct Array {
    /// The element signature.
    pub element: Box<str>,
    /// The elements.
    pub items: Vec<Value>,
}

/// A dictionary (`a{kv}`), in wire order.
#[derive(Debug, Clone, PartialEq)]
pub struct Dict {
    /// Signature of the keys.
    pub key: Box<str>,
    /// Signature of the values.
    pub value: Box<str>,
    /// The entries, in the order the service sent them.
    pub entries: Vec<(Value, Value)>,
}

impl Value {
    /// The value as a string (`s`, `o` or `g`).
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Self::Str(s) | Self::Path(s) | Self::Signature(s) => Some(s),
            _ => None,
        }
    }

    /// The value as an unsigned integer (`y`, `q`, `u`, `t`).
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            Self::U8(v) => Some(v.into()),
            Self::U16(v) => Some(v.into()),
            Self::U32(v) => Some(v.into()),
            Self::U64(v) => Some(v),
            _ => None,
        }
    }

    /// The value as a `u32` (`y`, `q`, `u`).
    pub fn as_u32(&self) -> Option<u32> {
        self.as_u64().and_then(|v| u32::try_from(v).ok())
    }

    /// The value as a signed integer (`n`, `i`, `x`).
    pub fn as_i64(&self) -> Option<i64> {
        match *self {
            Self::I16(v) => Some(v.into()),
            Self::I32(v) => Some(v.into()),
            Self::I64(v) => Some(v),
            _ => None,
        }
    }

    /// The value as a boolean.
    pub fn as_bool(&self) -> Option<bool> {
        match *self {
            Self::Bool(b) => Some(b),
            _ => None,
        }
    }

    /// The value as a list of strings (`as` or `ao`).
    pub fn as_strs(&self) -> Option<&[Box<str>]> {
        match self {
            Self::Strs(v) | Self::Paths(v) => Some(v),
            _ => None,
        }
    }

    /// The value as bytes (`ay`).
    pub fn as_bytes(&self) -> Option<&[u8]> {
        match self {
            Self::Bytes(b) => Some(b),
            _ => None,
        }
    }

    /// The value of a variant, or the value itself.
    pub fn unwrap_variant(&self) -> &Self {
        match self {
            Self::Variant(v) => v.unwrap_variant(),
            other => other,
        }
    }

    /// Look `key` up in an `a{s..}` dictionary (through a variant if needed).
    pub fn get(&self, key: &str) -> Option<&Value> {
        match self.unwrap_variant() {
            Self::Dict(d) => d
                .entries
                .iter()
                .find(|(k, _)| k.as_str() == Some(key))
                .map(|(_, v)| v.unwrap_variant()),
            _ => None,
        }
    }

    /// The bytes this value holds on the heap (its own 24 bytes not included; allocator
    /// overhead not included either): what caching it costs beyond its slot.
    pub fn heap_size(&self) -> usize {
        const SLOT: usize = std::mem::size_of::<Value>();
        const BOXED_STR: usize = std::mem::size_of::<Box<str>>();
        match self {
            Self::Unset
            | Self::Bool(_)
            | Self::U8(_)
            | Self::I16(_)
            | Self::U16(_)
            | Self::I32(_)
            | Self::U32(_)
            | Self::I64(_)
            | Self::U64(_)
            | Self::F64(_)
            | Self::Fd(_) => 0,
            Self::Str(s) | Self::Path(s) | Self::Signature(s) => s.len(),
            Self::Bytes(b) | Self::VariantBytes(b) => b.len(),
            Self::Strs(v) | Self::Paths(v) => {
                v.len() * BOXED_STR + v.iter().map(|s| s.len()).sum::<usize>()
            }
            Self::U32s(v) => v.len() * 4,
            Self::Array(a) => {
                std::mem::size_of::<Array>()
                    + a.element.len()
                    + a.items.capacity() * SLOT
                    + a.items.iter().map(Value::heap_size).sum::<usize>()
            }
            Self::Dict(d) => {
                std::mem::size_of::<Dict>()
                    + d.key.len()
                    + d.value.len()
                    + d.entries.capacity() * 2 * SLOT
                    + d.entries
                        .iter()
                        .map(|(k, v)| k.heap_size() + v.heap_size())
                        .sum::<usize>()
            }
            Self::Struct(fields) => {
                fields.len() * SLOT + fields.iter().map(Value::heap_size).sum::<usize>()
            }
            Self::Variant(v) => SLOT + v.heap_size(),
        }
    }

    /// The kind of value this is ([`Kind::Other`](crate::Kind::Other) for the shapes without
    /// a kind of their own, and for [`Value::Unset`]).
    pub fn kind(&self) -> crate::Kind {
        crate::Kind::from_signature(&self.signature())
    }

    /// Whether this is [`Value::Unset`].
    pub fn is_unset(&self) -> bool {
        matches!(self, Self::Unset)
    }

    /// The D-Bus signature of this value (empty for [`Value::Unset`]).
    pub fn signature(&self) -> String {
        let mut s = String::new();
        self.write_signature(&mut s);
        s
    }

    fn write_signature(&self, s: &mut String) {
        let code = match self {
            Self::Unset => "",
            Self::Bool(_) => "b",
            Self::U8(_) => "y",
            Self::I16(_) => "n",
            Self::U16(_) => "q",
            Self::I32(_) => "i",
            Self::U32(_) => "u",
            Self::I64(_) => "x",
            Self::U64(_) => "t",
            Self::F64(_) => "d",
            Self::Str(_) => "s",
            Self::Path(_) => "o",
            Self::Signature(_) => "g",
            Self::Fd(_) => "h",
            Self::Bytes(_) => "ay",
            Self::Strs(_) => "as",
            Self::Paths(_) => "ao",
            Self::U32s(_) => "au",
            Self::Variant(_) => "v",
            Self::VariantBytes(_) => "av",
            Self::Array(a) => {
                s.push('a');
                s.push_str(&a.element);
                return;
            }
            Self::Dict(d) => {
                s.push_str("a{");
                s.push_str(&d.key);
                s.push_str(&d.value);
                s.push('}');
                return;
            }
            Self::Struct(fields) => {
                s.push('(');
                for f in fields.iter() {
                    f.write_signature(s);
                }
                s.push(')');
                return;
            }
        };
        s.push_str(code);
    }
}

impl fmt::Display for Value {
    /// A compact, nmcli-like rendering: lists joined by `,`, dictionaries as `k=v`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fn list<T: fmt::Display>(f: &mut fmt::Formatter<'_>, items: &[T]) -> fmt::Result {
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    f.write_str(",")?;
                }
                write!(f, "{item}")?;
            }
            Ok(())
        }
        match self {
            Self::Unset => Ok(()),
            Self::Bool(v) => write!(f, "{}", if *v { "yes" } else { "no" }),
            Self::U8(v) => write!(f, "{v}"),
            Self::I16(v) => write!(f, "{v}"),
            Self::U16(v) => write!(f, "{v}"),
            Self::I32(v) => write!(f, "{v}"),
            Self::U32(v) => write!(f, "{v}"),
            Self::I64(v) => write!(f, "{v}"),
            Self::U64(v) => write!(f, "{v}"),
            Self::F64(v) => write!(f, "{v}"),
            Self::Str(v) | Self::Path(v) | Self::Signature(v) => f.write_str(v),
            Self::Fd(v) => write!(f, "fd#{v}"),
            Self::Bytes(v) => {
                for b in v.iter() {
                    write!(f, "{b:02x}")?;
                }
                Ok(())
            }
            Self::Strs(v) | Self::Paths(v) => list(f, v),
            Self::U32s(v) => list(f, v),
            Self::VariantBytes(v) => list(f, v),
            Self::Array(a) => list(f, &a.items),
            Self::Dict(d) => {
                for (i, (k, v)) in d.entries.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    write!(f, "{k}={v}")?;
                }
                Ok(())
            }
            Self::Struct(v) => {
                f.write_str("(")?;
                list(f, v)?;
                f.write_str(")")
            }
            Self::Variant(v) => write!(f, "{v}"),
        }
    }
}

/// The little-endian context values are converted through.
fn context() -> Context {
    Context::new(Endian::Little, 0)
}

impl Value {
    /// Decodes `value` in generic mode: its own signature picks the variant. The variant is
    /// written to wire bytes and read back with the one decoder ([`Reader`]), so a value that
    /// came through zbus and one read from a body are equal.
    pub fn from_variant(value: &zbus::Variant<'_>) -> Result<Value> {
        let data = zbus::wire::to_bytes(context(), value)?;
        let decoded = Reader::new(data.bytes(), true)
            .value(b"v")
            .map_err(|e| Error::Wire(e.to_string()))?;
        // The outer variant is the one `to_bytes` wrote around the value; nested ones stay.
        Ok(match decoded {
            Value::Variant(inner) => *inner,
            other => other,
        })
    }

    /// Converts this value into an owned zbus variant (e.g. to send it). Fails for
    /// [`Value::Unset`] and [`Value::Fd`] (the cache keeps no file descriptors).
    pub fn to_variant(&self) -> Result<OwnedVariant> {
        let data: Data<'static, 'static> =
            zbus::wire::to_bytes_for_signature(context(), Signature::Variant, self)?;
        let (variant, _) = data.deserialize::<zbus::Variant<'_>>()?;
        Ok(variant.try_into_owned()?)
    }

    /// The signature of this value as a zbus [`Signature`].
    fn zbus_signature(&self) -> std::result::Result<Signature, String> {
        let text = self.signature();
        text.parse::<Signature>()
            .map_err(|e| format!("no valid signature for this value ({text:?}): {e}"))
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

/// Serializes the value as a D-Bus variant, exactly as the equal [`OwnedVariant`](struct@OwnedVariant) would be:
/// its signature, then its contents. In a D-Bus body that is a `v` (so a `Value` can be sent
/// as is, e.g. in an `a{sv}`); in a self-describing format such as JSON it is
/// `{"signature": "u", "value": 100}`, so no type information is lost. [`Value::Unset`] and
/// [`Value::Fd`] cannot be serialized.
impl Serialize for Value {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        let signature = self.zbus_signature().map_err(S::Error::custom)?;
        let mut variant = serializer.serialize_struct("Variant", 2)?;
        variant.serialize_field("signature", &signature)?;
        variant.serialize_field("value", &Contents(self))?;
        variant.end()
    }
}

/// The contents of a value, without the variant around them.
struct Contents<'a>(&'a Value);

impl Serialize for Contents<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        match self.0 {
            Value::Unset => Err(S::Error::custom("an unset property has no value to send")),
            Value::Fd(_) => Err(S::Error::custom(
                "a file descriptor is not kept, only its index: it cannot be sent",
            )),
            Value::Bool(it) => serializer.serialize_bool(*it),
            Value::U8(it) => serializer.serialize_u8(*it),
            Value::I16(it) => serializer.serialize_i16(*it),
            Value::U16(it) => serializer.serialize_u16(*it),
            Value::I32(it) => serializer.serialize_i32(*it),
            Value::U32(it) => serializer.serialize_u32(*it),
            Value::I64(it) => serializer.serialize_i64(*it),
            Value::U64(it) => serializer.serialize_u64(*it),
            Value::F64(it) => serializer.serialize_f64(*it),
            Value::Str(it) => serializer.serialize_str(it),
            Value::Path(it) => match zbus::ObjectPath::try_from(&**it) {
                Ok(path) => path.serialize(serializer),
                Err(e) => Err(S::Error::custom(e)),
            },
            Value::Signature(it) => match it.parse::<Signature>() {
                Ok(sig) => sig.serialize(serializer),
                Err(e) => Err(S::Error::custom(e)),
            },
            Value::Bytes(it) => serializer.collect_seq(it.iter()),
            Value::Strs(it) => serializer.collect_seq(it.iter().map(|s| &**s)),
            Value::Paths(it) => {
                let mut seq = serializer.serialize_seq(Some(it.len()))?;
                for path in it.iter() {
                    seq.serialize_element(&Contents(&Value::Path(path.clone())))?;
                }
                seq.end()
            }
            Value::U32s(it) => serializer.collect_seq(it.iter()),
            Value::VariantBytes(it) => {
                let mut seq = serializer.serialize_seq(Some(it.len()))?;
                for byte in it.iter() {
                    seq.serialize_element(&Value::U8(*byte))?;
                }
                seq.end()
            }
            Value::Array(a) => {
                let mut seq = serializer.serialize_seq(Some(a.items.len()))?;
                for item in &a.items {
                    seq.serialize_element(&Contents(item))?;
                }
                seq.end()
            }
            Value::Dict(d) => {
                let mut map = serializer.serialize_map(Some(d.entries.len()))?;
                for (k, v) in &d.entries {
                    map.serialize_entry(&Contents(k), &Contents(v))?;
                }
                map.end()
            }
            Value::Struct(fields) => {
                use serde::ser::SerializeTuple;
                let mut tuple = serializer.serialize_tuple(fields.len())?;
                for field in fields.iter() {
                    tuple.serialize_element(&Contents(field))?;
                }
                tuple.end()
            }
            Value::Variant(inner) => inner.serialize(serializer),
        }
    }
}
