//! Record and replay: a cache's recorded conversation replayed without a bus gives the live
//! cache's objects and events; conversations recorded from the real NetworkManager (a load, an
//! activation, a restart; `tests/data/replay/`) replay to what `GetManagedObjects` returned
//! then; a corrupt or cut recording is refused with a clear error; recording changes nothing.

use std::{
    collections::{BTreeMap, HashMap},
    path::{Path, PathBuf},
    time::Duration,
};

use netmirror_client_cache::{
    DebugConfig, Error, Event, Object, ObjectCache, Value,
    nm::NmClient,
    replay::{Replay, ReplayError, Replayed},
    testing::{Answer, HostileService, PrivateBus},
};
use zbus::{
    OwnedObjectPath, OwnedVariant,
    wire::{LE, serialized},
};

use crate::{
    mock::{self, Mock, NODE, Props, SERVICE, node, v},
    support::bounded,
};

const LIMIT: Duration = Duration::from_secs(60);
const QUIET: Duration = Duration::from_millis(500);

/// Where the recordings of the real NetworkManager are kept.
pub(crate) fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/replay")
}

/// What `GetManagedObjects` returns.
pub(crate) type Managed = HashMap<OwnedObjectPath, HashMap<String, HashMap<String, OwnedVariant>>>;

/// A `GetManagedObjects` reply's body, stored as its D-Bus bytes (little-endian, as received).
pub(crate) fn read_managed(path: &Path) -> Managed {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let data = serialized::Data::new(bytes, serialized::Context::new(LE, 0));
    let ((objects,), _): ((Managed,), usize) = data.deserialize().expect("a{oa{sa{sv}}}");
    objects
}

/// A value as text, with every dictionary's entries in key order: a service (NetworkManager,
/// through GLib) may send the same dictionary in another order in a signal and in
/// `GetManagedObjects`.
pub(crate) fn canon(value: &Value) -> String {
    match value {
        Value::Dict(d) => {
            let mut entries: Vec<String> = d
                .entries
                .iter()
                .map(|(k, v)| format!("{}: {}", canon(k), canon(v)))
                .collect();
            entries.sort();
            format!("{{{}}} {{{}}}", d.key, entries.join(", "))
        }
        Value::Array(a) => {
            let items: Vec<String> = a.items.iter().map(canon).collect();
            format!("[{}] {}", items.join(", "), a.element)
        }
        Value::Struct(fields) => {
            let fields: Vec<String> = fields.iter().map(canon).collect();
            format!("({})", fields.join(", "))
        }
        Value::Variant(v) => format!("<{}>", canon(v)),
        other => format!("{other:?}"),
    }
}

/// Objects as comparable text: path → interface → property → value (see [`canon`]), without
/// the standard `org.freedesktop.DBus.*` interfaces the cache skips.
pub(crate) type Flat = BTreeMap<String, BTreeMap<String, BTreeMap<String, String>>>;

pub(crate) fn flat_managed(objects: &Managed) -> Flat {
    objects
        .iter()
        .map(|(path, ifaces)| {
            let ifaces = ifaces
                .iter()
                .filter(|(name, _)| !name.starts_with("org.freedesktop.DBus."))
                .map(|(name, props)| {
                    let props = props
                        .iter()
                        .map(|(prop, value)| {
                            let value = Value::try_from(value).expect("a value of D-Bus");
                            (prop.clone(), canon(&value))
                        })
                        .collect();
                    (name.clone(), props)
                })
                .collect();
            (path.to_string(), ifaces)
        })
        .collect()
}

pub(crate) fn flat_object(object: &Object) -> BTreeMap<String, BTreeMap<String, String>> {
    object
        .interfaces()
        .map(|iface| {
            let props = iface
                .properties()
                .map(|(prop, value)| (prop.to_owned(), canon(value)))
                .collect();
            (iface.name().to_owned(), props)
        })
        .collect()
}

pub(crate) fn flat_replayed(replayed: &Replayed) -> Flat {
    replayed
        .objects()
        .map(|(path, object)| (path.to_owned(), flat_object(object)))
        .collect()
}

pub(crate) fn flat_cache(cache: &ObjectCache) -> Flat {
    cache
        .objects()
        .map(|o| (o.path().to_owned(), flat_object(o.object())))
        .collect()
}

/// Every object's fetched data (NetworkManager's profile settings), as text.
pub(crate) fn fetched_replayed(replayed: &Replayed) -> BTreeMap<String, String> {
    replayed
        .objects()
        .filter_map(|(path, o)| Some((path.to_owned(), canon(o.fetched()?))))
        .collect()
}

#[cfg(feature = "privileged")]
pub(crate) fn fetched_cache(cache: &ObjectCache) -> BTreeMap<String, String> {
    cache
        .objects()
        .filter_map(|o| Some((o.path().to_owned(), canon(o.fetched()?))))
        .collect()
}

/// Replays a recording of NetworkManager's cache (recorded with `NmClient::builder()`).
pub(crate) fn replay_nm(path: &Path) -> Replayed {
    let replay = Replay::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    replay
        .run(NmClient::builder())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The `State` of the device `ifname` through the events, starting from its state when it was
/// added (or first seen).
fn device_states(replayed: &Replayed, ifname: &str) -> Vec<u32> {
    const DEVICE: &str = "org.freedesktop.NetworkManager.Device";
    let (path, _) = replayed
        .objects()
        .find(|(_, o)| o.get(DEVICE, "Interface").and_then(Value::as_str) == Some(ifname))
        .unwrap_or_else(|| panic!("no device {ifname}"));
    replayed
        .events()
        .iter()
        .filter_map(|ev| match ev {
            Event::PropertyChanged {
                path: p,
                interface,
                property,
                old,
                new,
            } if &**p == path && &**interface == DEVICE && &**property == "State" => {
                Some((old.as_u32()?, new.as_u32()?))
            }
            _ => None,
        })
        .fold(Vec::new(), |mut states, (old, new)| {
            if states.is_empty() {
                states.push(old);
            }
            assert_eq!(states.last(), Some(&old), "changes chain up");
            states.push(new);
            states
        })
}

#[test]
fn a_recorded_load_of_network_manager_replays_to_its_managed_objects() {
    let dir = data_dir();
    let replayed = replay_nm(&dir.join("load.nmrec"));
    let truth = read_managed(&dir.join("load.managed"));
    assert!(truth.len() > 5, "a load of a few profiles and devices");
    assert_eq!(flat_replayed(&replayed), flat_managed(&truth));
    // The events: every object added, then the load completed, once.
    let events = replayed.events();
    assert_eq!(events.last(), Some(&Event::Loaded));
    let added = events
        .iter()
        .filter(|e| matches!(e, Event::Added { .. }))
        .count();
    assert_eq!(added, truth.len());
    assert_eq!(events.len(), added + 1, "{events:?}");
    assert!(replayed.is_loaded());
    assert_eq!(replayed.diagnostics().warnings, 0);
    // Every profile's settings were fetched.
    let profiles = truth
        .values()
        .filter(|i| i.contains_key("org.freedesktop.NetworkManager.Settings.Connection"))
        .count();
    assert!(profiles >= 2);
    assert_eq!(fetched_replayed(&replayed).len(), profiles);
}

#[test]
fn a_recorded_activation_replays_the_device_state_sequence() {
    let dir = data_dir();
    let replayed = replay_nm(&dir.join("activation.nmrec"));
    let truth = read_managed(&dir.join("activation.managed"));
    assert_eq!(flat_replayed(&replayed), flat_managed(&truth));
    // `nmcli connection up` of a static profile on va0: from disconnected (30) through prepare
    // (40), config (50), ip-config (70), ip-check (80) and secondaries (90) to activated (100),
    // each once and in order.
    let states = device_states(&replayed, "va0");
    assert_eq!(states, [30, 40, 50, 70, 80, 90, 100]);
    // An active connection appeared, activated (2) at the end.
    const ACTIVE: &str = "org.freedesktop.NetworkManager.Connection.Active";
    let active: Vec<&Object> = replayed
        .objects()
        .map(|(_, o)| o)
        .filter(|o| o.get(ACTIVE, "Id").and_then(Value::as_str) == Some("static-va0"))
        .collect();
    assert_eq!(active.len(), 1);
    assert_eq!(
        active[0].get(ACTIVE, "State").and_then(Value::as_u32),
        Some(2)
    );
    assert_eq!(replayed.diagnostics().warnings, 0);
}

#[test]
fn a_recorded_restart_replays_removals_and_a_clean_reload() {
    let dir = data_dir();
    let replayed = replay_nm(&dir.join("restart.nmrec"));
    let truth = read_managed(&dir.join("restart.managed"));
    assert_eq!(flat_replayed(&replayed), flat_managed(&truth));
    let events = replayed.events();
    // The first load, then everything removed, the owner gone, a new owner, everything added
    // again, loaded.
    let first = events.iter().position(|e| *e == Event::Loaded).unwrap();
    let before = events[..first]
        .iter()
        .filter(|e| matches!(e, Event::Added { .. }))
        .count();
    let rest = &events[first + 1..];
    let removed = rest
        .iter()
        .take_while(|e| matches!(e, Event::Removed { .. }))
        .count();
    assert_eq!(removed, before, "every object of the first owner removed");
    let owners: Vec<bool> = rest
        .iter()
        .filter_map(|e| match e {
            Event::OwnerChanged { owner } => Some(owner.is_some()),
            _ => None,
        })
        .collect();
    assert_eq!(owners, [false, true], "gone, then back");
    let added = rest
        .iter()
        .filter(|e| matches!(e, Event::Added { .. }))
        .count();
    assert_eq!(added, truth.len());
    let back = rest
        .iter()
        .position(|e| matches!(e, Event::OwnerChanged { owner: Some(_) }))
        .unwrap();
    assert!(rest[back..].contains(&Event::Loaded), "reloaded");
    assert!(replayed.owner().is_some());
}

/// Every prefix of a recording (cut anywhere) and every single flipped byte of its header is
/// refused with an error, never a panic.
#[test]
fn a_corrupt_or_cut_recording_is_refused_with_a_clear_error() {
    let bytes = std::fs::read(data_dir().join("load.nmrec")).unwrap();
    assert!(Replay::from_bytes(&bytes).is_ok());
    // Cut: within the header, and at many points of the records.
    let step = (bytes.len() / 997).max(1);
    let mut cuts = 0;
    for len in (0..bytes.len()).step_by(step) {
        match Replay::from_bytes(&bytes[..len]) {
            Ok(r) => {
                // A cut exactly between records is a shorter recording: it must replay
                // without panicking, to whatever the first records say.
                let _ = r.run(tolerant());
            }
            Err(ReplayError::Truncated { .. } | ReplayError::NotARecording) => cuts += 1,
            Err(other) => panic!("cut at {len}: {other}"),
        }
    }
    assert!(cuts > 900, "most cuts fall inside a record: {cuts}");
    let err = Replay::from_bytes(&bytes[..bytes.len() - 3]).unwrap_err();
    assert!(
        err.to_string().starts_with("recording truncated at byte"),
        "{err}"
    );
    // Not a recording at all.
    assert!(matches!(
        Replay::from_bytes(b"hello, world"),
        Err(ReplayError::NotARecording)
    ));
    // Every byte flipped in turn: a clear error or a replay that says it diverged, never a
    // panic (nor a hang).
    let mut refused = 0;
    for at in (0..bytes.len()).step_by(step) {
        let mut bad = bytes.clone();
        bad[at] ^= 0x5a;
        match Replay::from_bytes(&bad) {
            Err(e) => {
                assert!(!e.to_string().is_empty());
                refused += 1;
            }
            Ok(r) => {
                if r.run(tolerant()).is_err() {
                    refused += 1;
                }
            }
        }
    }
    assert!(refused > 0);
    // A record of an unknown kind, right after the header.
    let mut bad = bytes.clone();
    let first = header_len(&bytes);
    bad[first] = b'Z';
    let err = Replay::from_bytes(&bad).unwrap_err();
    assert!(
        matches!(err, ReplayError::Corrupt { offset, .. } if offset == first),
        "{err}"
    );
    assert!(
        err.to_string().contains("unknown record kind 0x5a"),
        "{err}"
    );
}

/// A damaged count of handed-out events (four billion `pop`s where the live consumer made a
/// few) replays at once: the pops past the last event change nothing and are not made. Found
/// by the `replay` fuzz target (`client-cache/fuzz`), which timed out on it.
#[test]
fn a_damaged_count_of_pops_replays_at_once() {
    let bytes = std::fs::read(data_dir().join("load.nmrec")).unwrap();
    // Walk the records (a kind byte, a little-endian u32 length, the payload) to the pops.
    let mut bad = bytes.clone();
    let mut at = header_len(&bytes);
    let mut damaged = 0;
    while at + 5 <= bytes.len() {
        let len = u32::from_le_bytes(bytes[at + 1..at + 5].try_into().unwrap()) as usize;
        if bytes[at] == b'P' {
            assert_eq!(len, 4);
            bad[at + 5..at + 9].copy_from_slice(&u32::MAX.to_le_bytes());
            damaged += 1;
        }
        at += 5 + len;
    }
    assert!(damaged > 0, "the recording has pop records");
    let live = Replay::from_bytes(&bytes).unwrap().run(tolerant()).unwrap();
    let started = std::time::Instant::now();
    let replayed = Replay::from_bytes(&bad).unwrap().run(tolerant()).unwrap();
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    // Events taken earlier than live, never others: the same objects in the end.
    assert_eq!(replayed.paths(), live.paths());
}

/// NetworkManager's configuration, whose warnings (a flipped byte makes plenty) do not panic.
fn tolerant() -> netmirror_client_cache::CacheBuilder {
    NmClient::builder().debug(DebugConfig::tolerant())
}

/// Where the header of a recording ends: where its first record (`S`, the start) is.
fn header_len(bytes: &[u8]) -> usize {
    (0..bytes.len())
        .find(|&at| {
            bytes[at] == b'S' && bytes[at + 1..at + 5] == [0, 0, 0, 0] && bytes[at + 5] == b'O'
        })
        .expect("a start record followed by a call")
}

#[test]
fn a_replay_with_another_configuration_or_a_changed_call_is_refused() {
    let bytes = std::fs::read(data_dir().join("load.nmrec")).unwrap();
    let replay = Replay::from_bytes(&bytes).unwrap();
    // Without NetworkManager's declarations: they would decode otherwise.
    let err = replay.run(replay.builder()).unwrap_err();
    assert!(
        matches!(&err, ReplayError::Config(what) if what.starts_with("interface declarations")),
        "{err}"
    );
    // Another ObjectManager path.
    let err = replay
        .run(NmClient::builder().manager_path("/"))
        .unwrap_err();
    assert!(matches!(err, ReplayError::Config(_)), "{err}");
    // The recorded GetManagedObjects call made for another path: the replay's call differs.
    let from = b"GetManagedObjects";
    let at = bytes
        .windows(from.len())
        .position(|w| w == from)
        .expect("the call is recorded");
    let mut bad = bytes.clone();
    bad[at..at + from.len()].copy_from_slice(b"GetManagedObjectZ");
    let err = Replay::from_bytes(&bad)
        .unwrap()
        .run(NmClient::builder())
        .unwrap_err();
    assert!(
        matches!(&err, ReplayError::Diverged { what, .. } if what.contains("member")),
        "{err}"
    );
}

/// Runs a small conversation with the mock on a private bus, with a recording cache and a
/// plain one side by side: both see the same, and the replay sees it too.
#[test_log::test]
fn recording_changes_nothing_and_the_replay_equals_the_live_cache() {
    bounded(LIMIT, || {
        let bus = PrivateBus::start().unwrap();
        let file = bus.dir().join("mock.nmrec");
        let mut objects = BTreeMap::new();
        objects.insert("/a".to_owned(), node("a", Some("/b"), &[]));
        objects.insert("/b".to_owned(), node("b", None, &[]));
        let service = Mock::start(bus.address(), objects);
        let builder = || ObjectCache::builder(SERVICE).registry(mock::registry());
        zbus::block_on(async {
            let connect = || async {
                zbus::connection::Builder::address(bus.address())
                    .build()
                    .await
                    .unwrap()
            };
            let (c1, c2) = (connect().await, connect().await);
            let mut recorded = builder().record_to(&file).build_loaded(&c1).await.unwrap();
            let mut plain = builder().build_loaded(&c2).await.unwrap();
            let mut live = (recorded.take_events(), plain.take_events());
            // Changes, and objects that reference others.
            let mut props = Props::new();
            props.insert("Count".into(), v(7u32));
            service.change("/a", NODE, props);
            service.add("/d", node("d", None, &["/a", "/b"]));
            service.add("/c", node("c", Some("/d"), &[]));
            service.add("/e", node("e", None, &[]));
            let mut props = Props::new();
            props.insert("Name".into(), v("renamed"));
            service.change("/a", NODE, props);
            for (cache, events) in [(&mut recorded, &mut live.0), (&mut plain, &mut live.1)] {
                while let Some(ev) = cache.next_event_timeout(QUIET).await {
                    events.push(ev);
                }
            }
            // Asked to reconcile: same in both.
            assert!(recorded.reconcile());
            assert!(plain.reconcile());
            for (cache, events) in [(&mut recorded, &mut live.0), (&mut plain, &mut live.1)] {
                while let Some(ev) = cache.next_event_timeout(QUIET).await {
                    events.push(ev);
                }
            }
            recorded.finish_recording().unwrap();
            // The two caches get their own replies (the mock orders a reply's objects as it
            // likes) and their own batches (as messages arrive): the same events, in an order
            // that may differ within a batch.
            let sorted = |events: &[Event]| {
                let mut v: Vec<String> = events.iter().map(|e| format!("{e:?}")).collect();
                v.sort();
                v
            };
            assert_eq!(
                sorted(&live.0),
                sorted(&live.1),
                "recording changed the events"
            );
            assert_eq!(flat_cache(&recorded), flat_cache(&plain));
            assert!(live.0.contains(&Event::Reconciled { differences: 0 }));

            let replay = Replay::open(&file).unwrap();
            assert_eq!(replay.config().service, SERVICE);
            let replayed = replay.run(builder()).unwrap();
            assert_eq!(replayed.events(), &live.0[..]);
            assert_eq!(flat_replayed(&replayed), flat_cache(&recorded));
            assert_eq!(replayed.owner(), recorded.owner());
            assert_eq!(replayed.unsent_calls(), 0);
        });
        drop(service);
    });
}

/// A load whose `GetManagedObjects` is never answered times out; the replay times out the same
/// call and fails the same way.
#[test_log::test]
fn a_recorded_timeout_replays_as_the_same_failure() {
    bounded(LIMIT, || {
        const HOSTILE: &str = "org.example.Hostile";
        let bus = PrivateBus::start().unwrap();
        let service = HostileService::start(bus.address(), HOSTILE, "/").unwrap();
        service.answer("GetManagedObjects", Answer::Never);
        let file = bus.dir().join("timeout.nmrec");
        let builder = || {
            ObjectCache::builder(HOSTILE)
                .timeout(Duration::from_millis(300))
                .debug(DebugConfig::tolerant())
        };
        let live = zbus::block_on(async {
            let conn = zbus::connection::Builder::address(bus.address())
                .build()
                .await
                .unwrap();
            builder().record_to(&file).build_loaded(&conn).await
        });
        let Err(Error::Call(live)) = live else {
            panic!("the load did not fail: {live:?}");
        };
        assert!(live.to_string().contains("timed out"), "{live}");
        let replayed = Replay::open(&file).unwrap().run(builder()).unwrap();
        let failures: Vec<String> = replayed
            .pending_events()
            .filter_map(|e| match e {
                Event::LoadFailed(error) => Some(error.to_string()),
                _ => None,
            })
            .collect();
        assert_eq!(failures, [live.to_string()]);
        assert!(!replayed.is_loaded());
        assert_eq!(replayed.len(), 0);
    });
}

/// A load of one object (Introspect, then one GetAll per interface), then a change: the replay
/// equals the live cache.
#[test_log::test]
fn a_recorded_load_of_one_object_replays() {
    bounded(LIMIT, || {
        let bus = PrivateBus::start().unwrap();
        let file = bus.dir().join("path.nmrec");
        let mut objects = BTreeMap::new();
        objects.insert("/a".to_owned(), node("a", None, &[]));
        objects.insert("/b".to_owned(), node("b", None, &[]));
        let service = Mock::start(bus.address(), objects);
        let builder = || {
            ObjectCache::builder(SERVICE)
                .registry(mock::registry())
                .only_path("/b")
        };
        zbus::block_on(async {
            let conn = zbus::connection::Builder::address(bus.address())
                .build()
                .await
                .unwrap();
            let mut cache = builder()
                .record_to(&file)
                .build_loaded(&conn)
                .await
                .unwrap();
            let mut events = cache.take_events();
            let mut props = Props::new();
            props.insert("Count".into(), v(9u32));
            service.change("/b", NODE, props);
            while let Some(ev) = cache.next_event_timeout(QUIET).await {
                events.push(ev);
            }
            cache.finish_recording().unwrap();
            assert_eq!(cache.len(), 1);
            assert!(
                events
                    .iter()
                    .any(|e| matches!(e, Event::PropertyChanged { .. }))
            );
            let replayed = Replay::open(&file).unwrap().run(builder()).unwrap();
            assert_eq!(replayed.events(), &events[..]);
            assert_eq!(flat_replayed(&replayed), flat_cache(&cache));
        });
    });
}

/// A long recording (over a thousand calls, so the recorder forgets the answered ones as it
/// goes) replays to the same events.
#[test_log::test]
fn a_long_recording_of_many_calls_replays() {
    bounded(Duration::from_secs(180), || {
        let bus = PrivateBus::start().unwrap();
        let file = bus.dir().join("long.nmrec");
        let mut objects = BTreeMap::new();
        objects.insert("/a".to_owned(), node("a", None, &[]));
        let _service = Mock::start(bus.address(), objects);
        let builder = || ObjectCache::builder(SERVICE).registry(mock::registry());
        zbus::block_on(async {
            let conn = zbus::connection::Builder::address(bus.address())
                .build()
                .await
                .unwrap();
            let mut cache = builder()
                .record_to(&file)
                .build_loaded(&conn)
                .await
                .unwrap();
            let mut events = cache.take_events();
            for _ in 0..1100 {
                assert!(cache.reconcile());
                loop {
                    let ev = cache.next_event().await.expect("open");
                    let done = matches!(ev, Event::Reconciled { .. });
                    events.push(ev);
                    if done {
                        break;
                    }
                }
            }
            cache.finish_recording().unwrap();
            let replayed = Replay::open(&file).unwrap().run(builder()).unwrap();
            assert_eq!(replayed.events(), &events[..]);
            assert_eq!(
                replayed
                    .events()
                    .iter()
                    .filter(|e| **e == Event::Reconciled { differences: 0 })
                    .count(),
                1100
            );
        });
    });
}
