//! Fuzz target: a datagram split into netlink messages, each parsed as every kind of object
//! and as an error, parsed routes and addresses re-encoded and parsed again.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    netmirror_platform::fuzzing::parse_datagram(data);
});
