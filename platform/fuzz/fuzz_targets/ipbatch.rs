//! Fuzz target: a file given to `netmirror batch`, read as `ip -batch` lines; every item a
//! line becomes is encoded as the batch sends it and must parse back with the same identity.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // The CLI reads lines that are not UTF-8 as errors, before parsing.
    if let Ok(text) = std::str::from_utf8(data) {
        netmirror_platform::fuzzing::parse_batch(text);
    }
});
