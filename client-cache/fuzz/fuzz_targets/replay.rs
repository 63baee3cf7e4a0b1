//! Fuzz target: a recording file, read and replayed through a fresh cache core with
//! NetworkManager's declarations.
//!
//! Seeded with recordings of the real NetworkManager (`../tests/data/replay`), mutations reach
//! both the file's own framing (a damaged or hostile file) and the messages in it: replies and
//! signals a hostile service could send, fed to the core's decoding, its object graph and its
//! reconciliation. Every outcome is allowed (a refused file, a diverged replay, warnings, a
//! cache that holds whatever the messages said) except a panic or a hang.
#![no_main]

use std::fmt::Write;

use libfuzzer_sys::fuzz_target;
use netmirror_client_cache::{DebugConfig, Registry, replay::Replay};

fuzz_target!(|data: &[u8]| {
    let Ok(replay) = Replay::from_bytes(data) else {
        return;
    };
    let builder = replay
        .builder()
        .registry(Registry::network_manager())
        .debug(DebugConfig::tolerant());
    if let Ok(replayed) = replay.run(builder) {
        // Walk and print what the cache holds, as a consumer would.
        let mut out = String::new();
        for (path, object) in replayed.objects() {
            for iface in object.interfaces() {
                for (name, value) in iface.properties() {
                    out.clear();
                    let _ = write!(out, "{path} {} {name} {value} {value:?}", iface.name());
                }
            }
            if let Some(fetched) = object.fetched() {
                let _ = write!(out, "{fetched}");
            }
        }
        for event in replayed.events() {
            let _ = write!(out, "{event:?}");
        }
    }
});
