//! Fuzz target: a datagram applied to a real cache's indexes as the event socket's receive
//! path applies it (the cache is opened read-only in the caller's namespace, and resynced
//! after each input so every input starts from the same state).
#![no_main]

use std::sync::Mutex;

use libfuzzer_sys::fuzz_target;
use netmirror_platform::fuzzing::Receiver;

static RECEIVER: Mutex<Option<Receiver>> = Mutex::new(None);

fuzz_target!(|data: &[u8]| {
    let mut receiver = RECEIVER.lock().unwrap_or_else(|poison| poison.into_inner());
    let receiver = receiver.get_or_insert_with(|| Receiver::open().expect("open a cache"));
    // A resync failure is the kernel's answer, not a parser bug: only panics count.
    let _ = receiver.receive(data);
});
