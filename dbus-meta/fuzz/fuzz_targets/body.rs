//! Fuzz target: a message body from a hostile service, read by the body reader as the type
//! the input names, by value, by skipping and as a variant.
//!
//! Input: one byte of flags (bit 0: little-endian), one byte giving the signature's length
//! `n`, `n` bytes of signature, then the body.
//!
//! Besides "no panic, no hang", one property: where reading a value succeeds, skipping it
//! succeeds too and ends at the same place (skipping checks less, never more).
#![no_main]

use libfuzzer_sys::fuzz_target;
use netmirror_dbus_meta::wire::Reader;

fuzz_target!(|data: &[u8]| {
    let [flags, n, rest @ ..] = data else {
        return;
    };
    let little = flags & 1 == 1;
    let n = usize::from(*n).min(rest.len());
    let (sig, body) = rest.split_at(n);

    let mut by_value = Reader::new(body, little);
    let mut by_skip = Reader::new(body, little);
    // A body is a sequence of values: read as many as the signature's complete types.
    let mut sig_rest = sig;
    while !sig_rest.is_empty() {
        let Ok(len) = netmirror_dbus_meta::wire::single_type_len(sig_rest) else {
            break;
        };
        let one = &sig_rest[..len];
        let value = by_value.value(one);
        let skipped = by_skip.skip(one);
        if value.is_ok() {
            assert!(
                skipped.is_ok(),
                "skip failed where value succeeded: {skipped:?}"
            );
            assert_eq!(by_value.pos(), by_skip.pos(), "value and skip end apart");
        }
        if value.is_err() || skipped.is_err() {
            break;
        }
        sig_rest = &sig_rest[len..];
    }

    let _ = Reader::new(body, little).variant_expect(None);
    let _ = Reader::new(body, little).variant_expect(Some(sig));
});
