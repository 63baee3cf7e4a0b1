//! The kinds of values a property can hold, and the Rust types a declaration may name for them.
//!
//! A declaration names a Rust type; [`DeclaredType`] maps it to a [`Kind`] (how the value is
//! stored in a [`Value`]) and gives typed, borrowed access to a stored value.

use std::marker::PhantomData;

use zbus::{OwnedObjectPath, Signature, Type};

use crate::value::{Array, Dict, Value};

/// The shape of a property's values: one kind per value shape NetworkManager uses, plus
/// [`Kind::Other`] for every other signature. Values of every kind are held as a [`Value`].
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
    /// Any other signature.
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
/// declaration macro checks it at compile time), and [`DeclaredType::KIND`] says the shape of
/// its values. [`DeclaredType::view`] borrows a decoded [`Value`] as this type's view.
///
/// Implemented for the scalars, `String`, [`OwnedObjectPath`], `Vec`s of those, `Vec<u8>`,
/// `Vec<Vec<u8>>`, `Vec<Vec<u32>>`, [`VarDict`], `Vec<VarDict>`, [`SettingsDict`], and
/// [`Opaque<T>`] for any other zbus wire type.
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no value kind: a property cannot be declared with it",
    label = "not a `DeclaredType`",
    note = "declare it as `Opaque<{Self}>` to keep its values as they are, still checked"
)]
pub trait DeclaredType: Type {
    /// The shape of values of this type.
    const KIND: Kind;
    /// The borrowed view of a decoded value.
    type View<'a>;
    /// Borrows `value` as this type's view; `None` if `value` has another type (including
    /// [`Value::Unset`], a property the service has not sent).
    fn view(value: &Value) -> Option<Self::View<'_>>;
}

macro_rules! declared_copy {
    ($($ty:ty => $kind:ident / $variant:ident),* $(,)?) => {$(
        impl DeclaredType for $ty {
            const KIND: Kind = Kind::$kind;
            type View<'a> = $ty;
            fn view(value: &Value) -> Option<$ty> {
                match value {
                    Value::$variant(it) => Some(*it),
                    _ => None,
                }
            }
        }
    )*};
}

declared_copy!(
    bool => Bool / Bool, u8 => Byte / U8, i16 => I16 / I16, u16 => U16 / U16,
    i32 => I32 / I32, u32 => U32 / U32, i64 => I64 / I64, u64 => U64 / U64, f64 => F64 / F64,
);

macro_rules! declared_ref {
    ($($ty:ty => $kind:ident / $variant:ident: $view:ty),* $(,)?) => {$(
        impl DeclaredType for $ty {
            const KIND: Kind = Kind::$kind;
            type View<'a> = &'a $view;
            fn view(value: &Value) -> Option<&$view> {
                match value {
                    Value::$variant(it) => Some(it),
                    _ => None,
                }
            }
        }
    )*};
}

declared_ref!(
    String => Str / Str: str,
    OwnedObjectPath => ObjectPath / Path: str,
    Vec<String> => StrArray / Strs: [Box<str>],
    Vec<OwnedObjectPath> => ObjectPathArray / Paths: [Box<str>],
    Vec<u8> => Bytes / Bytes: [u8],
    Vec<u32> => U32Array / U32s: [u32],
);

/// Arrays held as a [`Value::Array`] whose element signature is `$elem`.
macro_rules! declared_array {
    ($($ty:ty => $kind:ident: $elem:literal),* $(,)?) => {$(
        impl DeclaredType for $ty {
            const KIND: Kind = Kind::$kind;
            type View<'a> = &'a Array;
            fn view(value: &Value) -> Option<&Array> {
                match value {
                    Value::Array(it) if &*it.element == $elem => Some(it),
                    _ => None,
                }
            }
        }
    )*};
}

declared_array!(
    Vec<Vec<u8>> => ByteArrays: "ay",
    Vec<Vec<u32>> => U32Arrays: "au",
    Vec<VarDict> => VarDictArray: "a{sv}",
);

/// Dictionaries held as a [`Value::Dict`] with key and value signatures `$key`, `$value`.
macro_rules! declared_dict {
    ($($ty:ty => $kind:ident: $key:literal, $value:literal),* $(,)?) => {$(
        impl DeclaredType for $ty {
            const KIND: Kind = Kind::$kind;
            type View<'a> = &'a Dict;
            fn view(value: &Value) -> Option<&Dict> {
                match value {
                    Value::Dict(it) if &*it.key == $key && &*it.value == $value => Some(it),
                    _ => None,
                }
            }
        }
    )*};
}

declared_dict!(
    VarDict => VarDict: "s", "v",
    SettingsDict => SettingsDict: "s", "a{sv}",
);

/// The type a declaration names for an `a{sv}` property (a dictionary of variants, such as a
/// device's `Ip4Config` data). It has no values of its own: a decoded one is a [`Value::Dict`]
/// (see [`Value::get`] to look a key up).
#[derive(Debug)]
pub enum VarDict {}

impl Type for VarDict {
    const SIGNATURE: &'static Signature =
        &Signature::static_dict(&Signature::Str, &Signature::Variant);
}

/// The type a declaration names for an `a{sa{sv}}` property (NetworkManager's connection
/// settings). It has no values of its own: a decoded one is a [`Value::Dict`] of
/// [`Value::Dict`]s.
#[derive(Debug)]
pub enum SettingsDict {}

impl Type for SettingsDict {
    const SIGNATURE: &'static Signature =
        &Signature::static_dict(&Signature::Str, <VarDict as Type>::SIGNATURE);
}

/// Declares a property of any zbus wire type `T` whose values are kept as the [`Value`] the
/// decoder gives for `T`'s signature ([`Kind::Other`]), e.g. `Opaque<(u32, u32)>` for
/// NetworkManager's `StateReason`, a [`Value::Struct`].
///
/// The declaration is still checked: `T`'s signature must equal the declared one.
pub struct Opaque<T: ?Sized>(PhantomData<fn() -> Box<T>>);

impl<T: Type + ?Sized> Type for Opaque<T> {
    const SIGNATURE: &'static Signature = T::SIGNATURE;
}

impl<T: Type + ?Sized> DeclaredType for Opaque<T> {
    const KIND: Kind = Kind::Other;
    type View<'a> = &'a Value;
    fn view(value: &Value) -> Option<&Value> {
        let matches =
            !value.is_unset() && crate::signature::matches(T::SIGNATURE, &value.signature());
        matches.then_some(value)
    }
}
