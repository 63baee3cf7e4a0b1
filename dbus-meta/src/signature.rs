//! Compile-time comparison of a parsed zbus [`Signature`] with a signature string, and
//! validation of signature strings, all as `const fn`, so that a declaration whose Rust type
//! and D-Bus signature disagree fails to compile.

use zbus::Signature;
use zbus::wire::signature::Fields;

/// Whether the parsed signature `sig` spells exactly the single complete type `text`.
///
/// This is a `const fn` and allocates nothing, so it serves both the declaration macro (inside
/// `const _: () = assert!(...)`) and the wire check at run time.
///
/// ```
/// use netmirror_dbus_meta::signature::matches;
/// use zbus::Type;
///
/// assert!(matches(<Vec<u32> as Type>::SIGNATURE, "au"));
/// assert!(!matches(<Vec<String> as Type>::SIGNATURE, "ao"));
/// ```
pub const fn matches(sig: &Signature, text: &str) -> bool {
    let bytes = text.as_bytes();
    match match_at(sig, bytes, 0) {
        Some(end) => end == bytes.len(),
        None => false,
    }
}

/// Whether the Rust type `T` has the D-Bus signature `text` (see [`matches()`]).
pub const fn type_matches<T: zbus::Type + ?Sized>(text: &str) -> bool {
    matches(T::SIGNATURE, text)
}

/// Whether `text` is exactly one complete D-Bus type (what a property or variant carries).
pub const fn is_single_complete_type(text: &str) -> bool {
    let bytes = text.as_bytes();
    match complete_type_end(bytes, 0, 0) {
        Some(end) => end == bytes.len(),
        None => false,
    }
}

/// Whether `text` is a valid D-Bus signature: zero or more complete types (a method's
/// arguments or a signal's body), at most 255 bytes long.
pub const fn is_valid(text: &str) -> bool {
    let bytes = text.as_bytes();
    if bytes.len() > 255 {
        return false;
    }
    let mut pos = 0;
    while pos < bytes.len() {
        match complete_type_end(bytes, pos, 0) {
            Some(end) => pos = end,
            None => return false,
        }
    }
    true
}

/// Matches `sig` against `bytes` from `pos`; returns the position after the match.
const fn match_at(sig: &Signature, bytes: &[u8], pos: usize) -> Option<usize> {
    if pos >= bytes.len() {
        return None;
    }
    let code = bytes[pos];
    let basic = match sig {
        Signature::U8 => Some(b'y'),
        Signature::Bool => Some(b'b'),
        Signature::I16 => Some(b'n'),
        Signature::U16 => Some(b'q'),
        Signature::I32 => Some(b'i'),
        Signature::U32 => Some(b'u'),
        Signature::I64 => Some(b'x'),
        Signature::U64 => Some(b't'),
        Signature::F64 => Some(b'd'),
        Signature::Str => Some(b's'),
        Signature::Signature => Some(b'g'),
        Signature::ObjectPath => Some(b'o'),
        Signature::Variant => Some(b'v'),
        Signature::Fd => Some(b'h'),
        _ => None,
    };
    if let Some(basic) = basic {
        return if code == basic { Some(pos + 1) } else { None };
    }
    match sig {
        Signature::Array(child) => {
            if code != b'a' {
                return None;
            }
            match_at(child.signature(), bytes, pos + 1)
        }
        Signature::Dict { key, value } => {
            if code != b'a' || pos + 1 >= bytes.len() || bytes[pos + 1] != b'{' {
                return None;
            }
            let after_key = match match_at(key.signature(), bytes, pos + 2) {
                Some(end) => end,
                None => return None,
            };
            let after_value = match match_at(value.signature(), bytes, after_key) {
                Some(end) => end,
                None => return None,
            };
            if after_value < bytes.len() && bytes[after_value] == b'}' {
                Some(after_value + 1)
            } else {
                None
            }
        }
        Signature::Structure(fields) => {
            if code != b'(' {
                return None;
            }
            let mut at = pos + 1;
            let mut idx = 0;
            while idx < fields.len() {
                let field = match fields {
                    Fields::Static { fields } => fields[idx],
                    Fields::Dynamic { fields } => &fields[idx],
                };
                at = match match_at(field, bytes, at) {
                    Some(end) => end,
                    None => return None,
                };
                idx += 1;
            }
            if at < bytes.len() && bytes[at] == b')' {
                Some(at + 1)
            } else {
                None
            }
        }
        _ => None,
    }
}

/// Maximum nesting of arrays and structures together (the D-Bus limit is 32 each).
const MAX_DEPTH: usize = 64;

/// Finds the end of the complete type starting at `pos`.
const fn complete_type_end(bytes: &[u8], pos: usize, depth: usize) -> Option<usize> {
    if pos >= bytes.len() || depth > MAX_DEPTH {
        return None;
    }
    match bytes[pos] {
        b'y' | b'b' | b'n' | b'q' | b'i' | b'u' | b'x' | b't' | b'd' | b's' | b'o' | b'g'
        | b'v' | b'h' => Some(pos + 1),
        b'a' => {
            if pos + 1 < bytes.len() && bytes[pos + 1] == b'{' {
                if pos + 2 >= bytes.len() || !is_basic(bytes[pos + 2]) {
                    return None;
                }
                let after_value = match complete_type_end(bytes, pos + 3, depth + 1) {
                    Some(end) => end,
                    None => return None,
                };
                if after_value < bytes.len() && bytes[after_value] == b'}' {
                    Some(after_value + 1)
                } else {
                    None
                }
            } else {
                complete_type_end(bytes, pos + 1, depth + 1)
            }
        }
        b'(' => {
            let mut at = pos + 1;
            let mut n_fields = 0;
            while at < bytes.len() && bytes[at] != b')' {
                at = match complete_type_end(bytes, at, depth + 1) {
                    Some(end) => end,
                    None => return None,
                };
                n_fields += 1;
            }
            if at < bytes.len() && n_fields > 0 {
                Some(at + 1)
            } else {
                None
            }
        }
        _ => None,
    }
}

const fn is_basic(code: u8) -> bool {
    matches!(
        code,
        b'y' | b'b' | b'n' | b'q' | b'i' | b'u' | b'x' | b't' | b'd' | b's' | b'o' | b'g' | b'h'
    )
}
