//! The traits every generated enumeration and flags type implements (see [`crate::nm`]'s
//! `State`, `DeviceState`, `RadioFlags`...): conversion from and to the D-Bus `u32`, `Display`
//! as nmcli shows the value, serde and zbus's `Type` as a `u`, and [`DeclaredType`] so that a
//! declaration may name the type for a `u` property and read it typed through its
//! [`PropertyKey`](crate::PropertyKey).
//!
//! [`DeclaredType`]: crate::DeclaredType

/// Implements the traits of an enumeration with `to_u32`, `from_u32` and `name`.
macro_rules! enum_traits {
    ($ty:ident) => {
        impl From<u32> for $ty {
            fn from(value: u32) -> $ty {
                $ty::from_u32(value)
            }
        }

        impl From<$ty> for u32 {
            fn from(value: $ty) -> u32 {
                value.to_u32()
            }
        }

        /// nmcli's name for the value; a number no member has shows as itself.
        impl std::fmt::Display for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                match self.name() {
                    Some(name) => f.pad(name),
                    None => std::fmt::Display::fmt(&self.to_u32(), f),
                }
            }
        }

        impl zbus::Type for $ty {
            const SIGNATURE: &'static zbus::Signature = &zbus::Signature::U32;
        }

        /// Serializes as the D-Bus number (`u`).
        impl serde::Serialize for $ty {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_u32(self.to_u32())
            }
        }

        /// Deserializes from the D-Bus number (`u`); any number is accepted.
        impl<'de> serde::Deserialize<'de> for $ty {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<$ty, D::Error> {
                <u32 as serde::Deserialize>::deserialize(deserializer).map($ty::from_u32)
            }
        }

        impl $crate::DeclaredType for $ty {
            const KIND: $crate::Kind = $crate::Kind::U32;
            type View<'a> = $ty;
            fn view(value: &$crate::Value) -> Option<$ty> {
                match value {
                    $crate::Value::U32(it) => Some($ty::from_u32(*it)),
                    _ => None,
                }
            }
        }
    };
}

/// Implements the methods and traits of a flags newtype with `NAMES`, `CONSTS`, `SEPARATOR`
/// and `EMPTY`.
macro_rules! flags_traits {
    ($ty:ident) => {
        impl $ty {
            /// The flags of D-Bus number `bits`; bits without a name are kept.
            pub const fn from_bits(bits: u32) -> $ty {
                $ty(bits)
            }

            /// The D-Bus number.
            pub const fn bits(self) -> u32 {
                self.0
            }

            /// The bits this version has a name for.
            pub const fn known_bits() -> u32 {
                let mut bits = 0;
                let mut idx = 0;
                while idx < $ty::CONSTS.len() {
                    bits |= $ty::CONSTS[idx].1;
                    idx += 1;
                }
                bits
            }

            /// The bits set that this version has no name for.
            pub const fn unknown_bits(self) -> u32 {
                self.0 & !$ty::known_bits()
            }

            /// Whether no bit is set.
            pub const fn is_empty(self) -> bool {
                self.0 == 0
            }

            /// Whether every bit of `other` is set.
            pub const fn contains(self, other: $ty) -> bool {
                self.0 & other.0 == other.0
            }

            /// Whether any bit of `other` is set.
            pub const fn intersects(self, other: $ty) -> bool {
                self.0 & other.0 != 0
            }

            /// The bits of both.
            pub const fn union(self, other: $ty) -> $ty {
                $ty(self.0 | other.0)
            }

            /// The bits of `self` that are not in `other`.
            pub const fn difference(self, other: $ty) -> $ty {
                $ty(self.0 & !other.0)
            }

            /// The names of the bits set, in nmcli's order, then any unnamed bits as `0x..`.
            pub fn names(self) -> impl Iterator<Item = std::borrow::Cow<'static, str>> {
                let mut rest = self.0;
                let mut names = Vec::new();
                for &(name, bits) in $ty::NAMES {
                    if bits != 0 && self.0 & bits != 0 {
                        names.push(std::borrow::Cow::Borrowed(name));
                        rest &= !bits;
                    }
                }
                if rest != 0 {
                    names.push(std::borrow::Cow::Owned(format!("{rest:#x}")));
                }
                names.into_iter()
            }
        }

        impl std::ops::BitOr for $ty {
            type Output = $ty;
            fn bitor(self, other: $ty) -> $ty {
                self.union(other)
            }
        }

        impl std::ops::BitOrAssign for $ty {
            fn bitor_assign(&mut self, other: $ty) {
                *self = self.union(other);
            }
        }

        impl std::ops::BitAnd for $ty {
            type Output = $ty;
            fn bitand(self, other: $ty) -> $ty {
                $ty(self.0 & other.0)
            }
        }

        impl std::ops::Sub for $ty {
            type Output = $ty;
            fn sub(self, other: $ty) -> $ty {
                self.difference(other)
            }
        }

        impl From<u32> for $ty {
            fn from(bits: u32) -> $ty {
                $ty(bits)
            }
        }

        impl From<$ty> for u32 {
            fn from(flags: $ty) -> u32 {
                flags.0
            }
        }

        /// The names of the bits set as nmcli shows them, unnamed bits as `0x..`.
        impl std::fmt::Display for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                if self.0 == 0 {
                    return f.pad($ty::EMPTY);
                }
                let names: Vec<_> = self.names().collect();
                f.pad(&names.join($ty::SEPARATOR))
            }
        }

        /// The Rust names of the bits set, e.g. `RadioFlags(WLAN_AVAILABLE | 0x8)`.
        impl std::fmt::Debug for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                let mut parts = Vec::new();
                let mut rest = self.0;
                for &(name, bits) in $ty::CONSTS {
                    if bits == 0 {
                        if self.0 == 0 {
                            parts.push(name.to_owned());
                        }
                    } else if self.0 & bits == bits {
                        parts.push(name.to_owned());
                        rest &= !bits;
                    }
                }
                if rest != 0 || parts.is_empty() {
                    parts.push(format!("{rest:#x}"));
                }
                write!(f, "{}({})", stringify!($ty), parts.join(" | "))
            }
        }

        impl zbus::Type for $ty {
            const SIGNATURE: &'static zbus::Signature = &zbus::Signature::U32;
        }

        /// Serializes as the D-Bus number (`u`).
        impl serde::Serialize for $ty {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_u32(self.0)
            }
        }

        /// Deserializes from the D-Bus number (`u`); every bit is kept.
        impl<'de> serde::Deserialize<'de> for $ty {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<$ty, D::Error> {
                <u32 as serde::Deserialize>::deserialize(deserializer).map($ty)
            }
        }

        impl $crate::DeclaredType for $ty {
            const KIND: $crate::Kind = $crate::Kind::U32;
            type View<'a> = $ty;
            fn view(value: &$crate::Value) -> Option<$ty> {
                match value {
                    $crate::Value::U32(it) => Some($ty(*it)),
                    _ => None,
                }
            }
        }
    };
}

pub(crate) use {enum_traits, flags_traits};

/// A device's `StateReason` (`(uu)`): its state and the reason it is in it, kept as the
/// structure the decoder read ([`Kind::Other`](crate::Kind::Other), a
/// [`Value::Struct`](crate::Value::Struct)) and read typed.
impl crate::DeclaredType for (crate::nm::DeviceState, crate::nm::DeviceStateReason) {
    const KIND: crate::Kind = crate::Kind::Other;
    type View<'a> = (crate::nm::DeviceState, crate::nm::DeviceStateReason);
    fn view(value: &crate::Value) -> Option<Self::View<'_>> {
        let crate::Value::Struct(fields) = value else {
            return None;
        };
        match &**fields {
            [crate::Value::U32(state), crate::Value::U32(reason)] => {
                Some(((*state).into(), (*reason).into()))
            }
            _ => None,
        }
    }
}

/// The manager's `Capabilities` (`au`): each number read as a [`Capability`], without
/// copying the array.
///
/// [`Capability`]: crate::nm::Capability
impl crate::DeclaredType for Vec<crate::nm::Capability> {
    const KIND: crate::Kind = crate::Kind::U32Array;
    type View<'a> = std::iter::Map<std::slice::Iter<'a, u32>, fn(&u32) -> crate::nm::Capability>;
    fn view(value: &crate::Value) -> Option<Self::View<'_>> {
        match value {
            crate::Value::U32s(items) => {
                let typed: fn(&u32) -> crate::nm::Capability = |it| (*it).into();
                Some(items.iter().map(typed))
            }
            _ => None,
        }
    }
}
