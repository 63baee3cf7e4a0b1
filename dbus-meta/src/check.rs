//! `const fn` helpers the declaration macros evaluate at compile time: string comparison and
//! the order and uniqueness checks on name tables. Hidden from the docs; not a stable API.

/// Whether `a == b`.
pub const fn str_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut idx = 0;
    while idx < a.len() {
        if a[idx] != b[idx] {
            return false;
        }
        idx += 1;
    }
    true
}

/// Whether `a < b` in byte order (the order of `str::cmp`, which lookups use).
pub const fn str_lt(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut idx = 0;
    while idx < a.len() && idx < b.len() {
        if a[idx] != b[idx] {
            return a[idx] < b[idx];
        }
        idx += 1;
    }
    a.len() < b.len()
}

/// Whether a name appears twice.
pub const fn has_duplicate(names: &[&str]) -> bool {
    let mut i = 0;
    while i < names.len() {
        let mut j = i + 1;
        while j < names.len() {
            if str_eq(names[i], names[j]) {
                return true;
            }
            j += 1;
        }
        i += 1;
    }
    false
}

/// Whether the names are in strictly increasing byte order.
pub const fn is_sorted(names: &[&str]) -> bool {
    let mut i = 1;
    while i < names.len() {
        if !str_lt(names[i - 1], names[i]) {
            return false;
        }
        i += 1;
    }
    true
}

/// Whether an `o`/`ao` target may be given for signature `sig`.
pub const fn may_have_target(sig: &str) -> bool {
    str_eq(sig, "o") || str_eq(sig, "ao")
}
