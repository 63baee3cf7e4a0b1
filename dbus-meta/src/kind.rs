//! The kinds of values a property can hold, and the Rust types a declaration may name for them.
//!
//! A declaration names a Rust type; [`DeclaredType`] maps it to a [`Kind`] (how the value is
//! stored in a [`Value`]) and gives typed, borrowed access to a stored value.

use std::marker::PhantomData;
use std::sync::Arc;

use zbus::{ObjectPath, OwnedObjectPath, OwnedVariant, Signature, Type};

use crate::value::{SettingsDict, Value, VarDict};

/// How a property's value is stored: one variant per value shape NetworkManager uses, plus
/// [`Kind::Other`] for every other signature (kept as an owned zbus variant).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Kind {
    /// `b`
    Bool,
    /// `y`
    Byte,
    /// `n`
    I16,
    /// `q`
    U16,
    /// `i`
    I32,
    /// `u`
    U32,
    /// `x`
    I64,
    /// `t`
    U64,
    /// `d`
    F64,
    /// `s`
    Str,
    /// `o`
    ObjectPath,
    /// `as`
    StrArray,
    /// `ao`
    ObjectPathArray,
    /// `ay`
    Bytes,
    /// `aay`
    ByteArrays,
    /// `au`
    U32Array,
    /// `aau`
    U32Arrays,
    /// `a{sv}`
    VarDict,
    /// `aa{sv}`
    VarDictArray,
    /// `a{sa{sv}}`
    SettingsDict,
    /// Any other signature, kept as an owned zbus variant.
    Other,
}

impl Kind {
    /// The kind that stores values of signature `sig` (a single complete type).
    ///
    /// Unknown or uncommon signatures give [`Kind::Other`]. This is what the generic mode uses
    /// for properties nobody declared.
    pub const fn from_signature(sig: &str) -> Kind {
        match sig.as_bytes() {
            b"b" => Kind::Bool,
            b"y" => Kind::Byte,
            b"n" => Kind::I16,
            b"q" => Kind::U16,
            b"i" => Kind::I32,
            b"u" => Kind::U32,
            b"x" => Kind::I64,
            b"t" => Kind::U64,
            b"d" => Kind::F64,
            b"s" => Kind::Str,
            b"o" => Kind::ObjectPath,
            b"as" => Kind::StrArray,
            b"ao" => Kind::ObjectPathArray,
            b"ay" => Kind::Bytes,
            b"aay" => Kind::ByteArrays,
            b"au" => Kind::U32Array,
            b"aau" => Kind::U32Arrays,
            b"a{sv}" => Kind::VarDict,
            b"aa{sv}" => Kind::VarDictArray,
            b"a{sa{sv}}" => Kind::SettingsDict,
            _ => Kind::Other,
        }
    }

    /// The signature of this kind, or `None` for [`Kind::Other`].
    pub const fn signature(self) -> Option<&'static str> {
        Some(match self {
            Kind::Bool => "b",
            Kind::Byte => "y",
            Kind::I16 => "n",
            Kind::U16 => "q",
            Kind::I32 => "i",
            Kind::U32 => "u",
            Kind::I64 => "x",
            Kind::U64 => "t",
            Kind::F64 => "d",
            Kind::Str => "s",
            Kind::ObjectPath => "o",
            Kind::StrArray => "as",
            Kind::ObjectPathArray => "ao",
            Kind::Bytes => "ay",
            Kind::ByteArrays => "aay",
            Kind::U32Array => "au",
            Kind::U32Arrays => "aau",
            Kind::VarDict => "a{sv}",
            Kind::VarDictArray => "aa{sv}",
            Kind::SettingsDict => "a{sa{sv}}",
            Kind::Other => return None,
        })
    }
}

/// A Rust type that a declaration may name for a property.
///
/// The type's zbus [`Type::SIGNATURE`] must equal the declared D-Bus signature (the
/// declaration macro checks it at compile time), and [`DeclaredType::KIND`] says how its
/// values are stored. [`DeclaredType::view`] borrows a stored [`Value`] as this type's view.
///
/// Implemented for the scalars, `String`, [`OwnedObjectPath`], `Vec`s of those, `Vec<u8>`,
/// `Vec<Vec<u8>>`, `Vec<Vec<u32>>`, [`VarDict`], `Vec<VarDict>`, [`SettingsDict`], and
/// [`Opaque<T>`] for any other zbus wire type.
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no value kind: a property cannot be declared with it",
    label = "not a `DeclaredType`",
    note = "declare it as `Opaque<{Self}>` to keep its values as owned zbus variants, still checked"
)]
pub trait DeclaredType: Type {
    /// How values of this type are stored.
    const KIND: Kind;
    /// The borrowed view of a stored value.
    type View<'a>;
    /// Borrows `value` as this type's view; `None` if `value` is of another kind.
    fn view(value: &Value) -> Option<Self::View<'_>>;
}

macro_rules! declared_copy {
    ($($ty:ty => $kind:ident),* $(,)?) => {$(
        impl DeclaredType for $ty {
            const KIND: Kind = Kind::$kind;
            type View<'a> = $ty;
            fn view(value: &Value) -> Option<$ty> {
                match value {
                    Value::$kind(it) => Some(*it),
                    _ => None,
                }
            }
        }
    )*};
}

declared_copy!(
    bool => Bool, u8 => Byte, i16 => I16, u16 => U16, i32 => I32, u32 => U32, i64 => I64,
    u64 => U64, f64 => F64,
);

macro_rules! declared_ref {
    ($($ty:ty => $kind:ident: $view:ty),* $(,)?) => {$(
        impl DeclaredType for $ty {
            const KIND: Kind = Kind::$kind;
            type View<'a> = &'a $view;
            fn view(value: &Value) -> Option<&$view> {
                match value {
                    Value::$kind(it) => Some(it),
                    _ => None,
                }
            }
        }
    )*};
}

declared_ref!(
    String => Str: str,
    Vec<String> => StrArray: [Arc<str>],
    Vec<OwnedObjectPath> => ObjectPathArray: [OwnedObjectPath],
    Vec<u8> => Bytes: [u8],
    Vec<Vec<u8>> => ByteArrays: [Box<[u8]>],
    Vec<u32> => U32Array: [u32],
    Vec<Vec<u32>> => U32Arrays: [Box<[u32]>],
    VarDict => VarDict: VarDict,
    Vec<VarDict> => VarDictArray: [VarDict],
    SettingsDict => SettingsDict: SettingsDict,
);

impl DeclaredType for OwnedObjectPath {
    const KIND: Kind = Kind::ObjectPath;
    type View<'a> = &'a ObjectPath<'static>;
    fn view(value: &Value) -> Option<&ObjectPath<'static>> {
        match value {
            Value::ObjectPath(it) => Some(it),
            _ => None,
        }
    }
}

/// Declares a property of any zbus wire type `T` whose values are kept as an owned zbus
/// variant ([`Kind::Other`]), e.g. `Opaque<(u32, u32)>` for NetworkManager's `StateReason`.
///
/// The declaration is still checked: `T`'s signature must equal the declared one.
pub struct Opaque<T: ?Sized>(PhantomData<fn() -> Box<T>>);

impl<T: Type + ?Sized> Type for Opaque<T> {
    const SIGNATURE: &'static Signature = T::SIGNATURE;
}

impl<T: Type + ?Sized> DeclaredType for Opaque<T> {
    const KIND: Kind = Kind::Other;
    type View<'a> = &'a OwnedVariant;
    fn view(value: &Value) -> Option<&OwnedVariant> {
        match value {
            Value::Other(it) => Some(it),
            _ => None,
        }
    }
}
