//! Owned, compact D-Bus values: what the cache stores for each property.
//!
//! A [`Value`] is 24 bytes. Common arrays (`ay`, `as`, `ao`, `au`) have flat variants so that a
//! device's list of paths is one allocation, not one per element.

use std::fmt;

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
