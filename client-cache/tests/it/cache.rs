//! The generic cache against the mock ObjectManager service on a private dbus-daemon.

use std::{collections::BTreeMap, time::Duration};

use netmirror_client_cache::{
    BlockingCache, DebugConfig, Event, ObjectCache, Value, WarningKind, testing::PrivateBus,
};

use crate::{
    mock::{self, Ifaces, Mock, NODE, OTHER, Props, SERVICE, node, path, v},
    support::bounded,
};

const LIMIT: Duration = Duration::from_secs(60);
const WAIT: Duration = Duration::from_secs(10);

fn objects(list: &[(&str, Ifaces)]) -> BTreeMap<String, Ifaces> {
    list.iter()
        .map(|(p, i)| (p.to_string(), i.clone()))
        .collect()
}

async fn connect(bus: &PrivateBus) -> zbus::Connection {
    zbus::connection::Builder::address(bus.address())
        .build()
        .await
        .expect("connect")
}

fn builder() -> netmirror_client_cache::CacheBuilder {
    ObjectCache::builder(SERVICE).registry(mock::registry())
}

/// Collect events until `done` says so (or the wait runs out).
async fn events_until(
    cache: &mut ObjectCache,
    mut done: impl FnMut(&[Event]) -> bool,
) -> Vec<Event> {
    let mut events = cache.take_events();
    while !done(&events) {
        match cache.next_event_timeout(WAIT).await {
            Some(ev) => events.push(ev),
            None => break,
        }
    }
    events
}

fn kinds(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .map(|e| match e {
            Event::Removed { path, .. } => format!("removed {path}"),
            Event::Added { path } => format!("added {path}"),
            Event::PropertyChanged { path, property, .. } => format!("changed {path} {property}"),
            Event::InterfaceAdded { path, interface } => format!("iface+ {path} {interface}"),
            Event::InterfaceRemoved { path, interface } => format!("iface- {path} {interface}"),
            Event::Loaded => "loaded".into(),
            Event::OwnerChanged { owner } => format!("owner {}", owner.is_some()),
            other => format!("{other:?}"),
        })
        .collect()
}

#[test_log::test]
fn loads_declared_and_undeclared_interfaces_with_typed_slots() {
    bounded(LIMIT, || {
        let bus = PrivateBus::start().unwrap();
        let mut a = node("a", Some("/b"), &[]);
        let mut other = Props::new();
        other.insert("Free".into(), v(vec![1u8, 2]));
        a.insert(OTHER.into(), other);
        let _mock = Mock::start(
            bus.address(),
            objects(&[("/a", a), ("/b", node("b", None, &[]))]),
        );
        zbus::block_on(async {
            let conn = connect(&bus).await;
            // The undeclared interface is reported (once), so not in fatal mode.
            let mut cache = builder()
                .debug(DebugConfig::tolerant())
                .build_loaded(&conn)
                .await
                .unwrap();
            let ev = kinds(&cache.take_events());
            assert_eq!(ev.last().map(String::as_str), Some("loaded"));
            assert!(
                ev.contains(&"added /a".into()) && ev.contains(&"added /b".into()),
                "{ev:?}"
            );
            let a = cache.object("/a").unwrap();
            assert_eq!(a.prop(NODE, "Name"), Some(&Value::Str("a".into())));
            assert_eq!(
                a.prop(NODE, "Peers"),
                Some(&Value::Unset),
                "declared, never sent"
            );
            assert!(a.interface(NODE).unwrap().is_declared());
            let free = a.interface(OTHER).unwrap();
            assert!(!free.is_declared());
            assert_eq!(free.get("Free"), Some(&Value::Bytes(vec![1, 2].into())));
            assert_eq!(a.target(NODE, "Peer").map(|b| b.path()), Some("/b"));
            let b = cache.object("/b").unwrap();
            assert_eq!(b.referrers().map(|r| r.path()).collect::<Vec<_>>(), ["/a"]);
            assert_eq!(cache.diagnostics().warnings, 1);
            assert_eq!(cache.diagnostics().count(WarningKind::UnknownInterface), 1);
        });
    });
}

#[test_log::test]
fn wrong_typed_properties_are_rejected_and_reported() {
    bounded(LIMIT, || {
        let bus = PrivateBus::start().unwrap();
        let mut bad = node("bad", None, &[]);
        bad.get_mut(NODE)
            .unwrap()
            .insert("Count".into(), v("not a number"));
        let mock = Mock::start(bus.address(), objects(&[("/bad", bad)]));
        zbus::block_on(async {
            let conn = connect(&bus).await;
            let mut cache = builder()
                .debug(DebugConfig::tolerant())
                .build_loaded(&conn)
                .await
                .unwrap();
            let _ = cache.take_events();
            assert_eq!(cache.diagnostics().count(WarningKind::WrongType), 1);
            let o = cache.object("/bad").unwrap();
            assert_eq!(
                o.prop(NODE, "Count"),
                Some(&Value::Unset),
                "rejected, default kept"
            );
            assert_eq!(o.prop(NODE, "Name"), Some(&Value::Str("bad".into())));
            // A change with one good and one wrong-typed value: the good one applies.
            let mut props = Props::new();
            props.insert("Count".into(), v(7u32));
            props.insert("Name".into(), v(5u32));
            mock.change("/bad", NODE, props);
            let ev = events_until(&mut cache, |e| !e.is_empty()).await;
            assert_eq!(kinds(&ev), ["changed /bad Count"]);
            assert!(matches!(
                &ev[0],
                Event::PropertyChanged {
                    old: Value::Unset,
                    new: Value::U32(7),
                    ..
                }
            ));
            assert_eq!(cache.diagnostics().count(WarningKind::WrongType), 2);
            assert_eq!(
                cache.object("/bad").unwrap().prop(NODE, "Name"),
                Some(&Value::Str("bad".into()))
            );
        });
    });
}

#[test_log::test]
fn dangling_references_wait_for_late_targets_and_cycles_resolve() {
    bounded(LIMIT, || {
        let bus = PrivateBus::start().unwrap();
        let mock = Mock::start(
            bus.address(),
            objects(&[
                ("/a", node("a", Some("/late"), &[])),
                ("/c", node("c", Some("/d"), &[])),
                ("/d", node("d", None, &["/c", "/c"])),
            ]),
        );
        zbus::block_on(async {
            let conn = connect(&bus).await;
            let mut cache = builder()
                .debug(DebugConfig::tolerant())
                .build_loaded(&conn)
                .await
                .unwrap();
            let _ = cache.take_events();
            assert!(cache.object("/a").is_none(), "waits for /late");
            assert!(cache.object_any("/a").is_some());
            assert!(
                cache.object("/c").is_some() && cache.object("/d").is_some(),
                "a cycle is ready"
            );
            assert_eq!(cache.diagnostics().count(WarningKind::DanglingReference), 1);
            mock.add("/late", node("late", None, &[]));
            let ev = events_until(&mut cache, |e| e.len() >= 2).await;
            assert_eq!(kinds(&ev), ["added /late", "added /a"]);
            // Once visible, a referrer stays visible when its target goes away.
            mock.remove("/late", &[NODE]);
            let ev = events_until(&mut cache, |e| !e.is_empty()).await;
            assert_eq!(kinds(&ev), ["removed /late"]);
            assert!(cache.object("/a").is_some());
            assert!(cache.object("/a").unwrap().target(NODE, "Peer").is_none());
        });
    });
}

#[test_log::test]
fn signals_from_a_stranger_change_nothing() {
    bounded(LIMIT, || {
        let bus = PrivateBus::start().unwrap();
        let mock = Mock::start(bus.address(), objects(&[("/a", node("a", None, &[]))]));
        zbus::block_on(async {
            let conn = connect(&bus).await;
            let mut cache = builder().build_loaded(&conn).await.unwrap();
            let _ = cache.take_events();
            let me = conn.unique_name().unwrap().to_string();
            let stranger = connect(&bus).await;
            let mut props = Props::new();
            props.insert("Name".into(), v("hijacked"));
            // Broadcast (filtered by the bus: our rules name the owner) and unicast to us (delivered).
            for dest in [None, Some(me.as_str())] {
                stranger
                    .emit_signal(
                        dest,
                        "/a",
                        "org.freedesktop.DBus.Properties",
                        "PropertiesChanged",
                        &(NODE, props.clone(), Vec::<String>::new()),
                    )
                    .await
                    .unwrap();
                stranger
                    .emit_signal(
                        dest,
                        "/",
                        "org.freedesktop.DBus.ObjectManager",
                        "InterfacesAdded",
                        &(path("/evil"), node("evil", None, &[])),
                    )
                    .await
                    .unwrap();
            }
            // A round trip makes sure the bus has routed the stranger's messages before ours.
            stranger
                .call_method(
                    Some("org.freedesktop.DBus"),
                    "/org/freedesktop/DBus",
                    Some("org.freedesktop.DBus"),
                    "GetId",
                    &(),
                )
                .await
                .unwrap();
            let mut marker = Props::new();
            marker.insert("Count".into(), v(2u32));
            mock.change("/a", NODE, marker);
            let ev = events_until(&mut cache, |e| !e.is_empty()).await;
            assert_eq!(kinds(&ev), ["changed /a Count"]);
            assert_eq!(
                cache.object("/a").unwrap().prop(NODE, "Name"),
                Some(&Value::Str("a".into()))
            );
            assert!(cache.object_any("/evil").is_none());
            assert!(
                cache.diagnostics().foreign_messages >= 2,
                "{:?}",
                cache.diagnostics()
            );
        });
    });
}

#[test_log::test]
fn a_burst_of_changes_then_removal_yields_one_removal_with_the_last_state() {
    bounded(LIMIT, || {
        let bus = PrivateBus::start().unwrap();
        let mock = Mock::start(
            bus.address(),
            objects(&[("/a", node("a", None, &[])), ("/b", node("b", None, &[]))]),
        );
        zbus::block_on(async {
            let conn = connect(&bus).await;
            let mut cache = builder().build_loaded(&conn).await.unwrap();
            let _ = cache.take_events();
            let batches = cache.diagnostics().batches;
            let mut props = Props::new();
            props.insert("Count".into(), v(9u32));
            mock.change("/b", NODE, props.clone());
            mock.change("/a", NODE, props);
            mock.remove("/a", &[NODE]);
            mock.add("/n", node("n", None, &[]));
            // Let all of them queue up before the cache looks: a round trip of the mock's
            // connection proves the bus routed its signals, then zbus's reader needs a moment.
            // The reader is a task on this thread's runtime (zruntime, inside `block_on`), so
            // the moment is an async sleep that lets it run: a blocking one would leave
            // whatever it had not read yet during the round trip in the socket, for a batch
            // of its own.
            mock.conn
                .call_method(
                    Some("org.freedesktop.DBus"),
                    "/org/freedesktop/DBus",
                    Some("org.freedesktop.DBus"),
                    "GetId",
                    &(),
                )
                .await
                .unwrap();
            zruntime::SharedRuntime::current()
                .unwrap()
                .sleep(Duration::from_millis(500))
                .await;
            let ev = events_until(&mut cache, |e| e.len() >= 3).await;
            assert_eq!(kinds(&ev), ["removed /a", "changed /b Count", "added /n"]);
            let Event::Removed { object, .. } = &ev[0] else {
                unreachable!()
            };
            assert_eq!(
                object.get(NODE, "Count"),
                Some(&Value::U32(9)),
                "the removal carries the last state"
            );
            assert_eq!(
                cache.diagnostics().batches,
                batches + 1,
                "the burst is one batch"
            );
        });
    });
}

#[test_log::test]
fn the_owner_vanishing_during_the_load_then_a_new_owner_reloads() {
    bounded(LIMIT, || {
        let bus = PrivateBus::start().unwrap();
        let first = Mock::start_with(
            bus.address(),
            mock::State {
                objects: objects(&[("/old", node("old", None, &[]))]),
                vanish_on_load: true,
                ..Default::default()
            },
        );
        zbus::block_on(async {
            let conn = connect(&bus).await;
            let mut cache = builder().build(&conn).await.unwrap();
            // The first owner releases the name before its (late) reply: the cache must end up
            // empty and unowned, ignoring the stale reply.
            let ev =
                events_until(&mut cache, |e| e.iter().any(|e| matches!(e, Event::Loaded))).await;
            assert_eq!(kinds(&ev), ["owner false", "loaded"]);
            assert!(cache.is_empty() && cache.owner().is_none());
            let second = Mock::start(bus.address(), objects(&[("/new", node("new", None, &[]))]));
            let ev =
                events_until(&mut cache, |e| e.iter().any(|e| matches!(e, Event::Loaded))).await;
            assert_eq!(kinds(&ev), ["owner true", "added /new", "loaded"]);
            assert_eq!(cache.owner(), Some(second.unique_name().as_str()));
            // A restart: removals for everything, then a clean reload.
            second.stop();
            let ev =
                events_until(&mut cache, |e| e.iter().any(|e| matches!(e, Event::Loaded))).await;
            assert_eq!(kinds(&ev), ["removed /new", "owner false", "loaded"]);
            let _third = Mock::start(bus.address(), objects(&[("/x", node("x", None, &[]))]));
            let ev =
                events_until(&mut cache, |e| e.iter().any(|e| matches!(e, Event::Loaded))).await;
            assert_eq!(kinds(&ev), ["owner true", "added /x", "loaded"]);
            assert_eq!(cache.diagnostics().warnings, 0);
            drop(first);
        });
    });
}

#[test_log::test]
fn a_signal_sent_before_the_load_reply_is_neither_lost_nor_applied_twice() {
    bounded(LIMIT, || {
        let bus = PrivateBus::start().unwrap();
        let _mock = Mock::start_with(
            bus.address(),
            mock::State {
                objects: objects(&[("/a", node("a", None, &[]))]),
                signal_before_reply: true,
                ..Default::default()
            },
        );
        zbus::block_on(async {
            let conn = connect(&bus).await;
            let mut cache = builder().build_loaded(&conn).await.unwrap();
            assert_eq!(kinds(&cache.take_events()), ["added /a", "loaded"]);
            assert_eq!(
                cache.object("/a").unwrap().prop(NODE, "Count"),
                Some(&Value::U32(42))
            );
            assert_eq!(
                cache.diagnostics().superseded_signals,
                1,
                "the reply already holds it"
            );
            assert!(
                cache
                    .next_event_timeout(Duration::from_millis(300))
                    .await
                    .is_none()
            );
        });
    });
}

#[test_log::test]
fn loads_one_path_without_get_managed_objects() {
    bounded(LIMIT, || {
        let bus = PrivateBus::start().unwrap();
        let mock = Mock::start(
            bus.address(),
            objects(&[("/a", node("a", None, &[])), ("/b", node("b", None, &[]))]),
        );
        zbus::block_on(async {
            let conn = connect(&bus).await;
            let mut cache = builder().only_path("/b").build_loaded(&conn).await.unwrap();
            assert_eq!(kinds(&cache.take_events()), ["added /b", "loaded"]);
            assert_eq!(cache.len(), 1);
            assert_eq!(mock.state.lock().unwrap().loads, 0, "no GetManagedObjects");
            let mut props = Props::new();
            props.insert("Count".into(), v(3u32));
            mock.change("/a", NODE, props.clone());
            mock.change("/b", NODE, props);
            let ev = events_until(&mut cache, |e| !e.is_empty()).await;
            assert_eq!(kinds(&ev), ["changed /b Count"]);
        });
    });
}

#[test_log::test]
fn a_refused_server_side_filter_falls_back_to_loading_and_filtering() {
    bounded(LIMIT, || {
        let bus = PrivateBus::start().unwrap();
        let mock = Mock::start(
            bus.address(),
            objects(&[("/a", node("a", None, &[])), ("/b", node("b", None, &[]))]),
        );
        zbus::block_on(async {
            let conn = connect(&bus).await;
            let lookup = netmirror_client_cache::Lookup {
                path: "/".into(),
                interface: "org.example.Lookup".into(),
                method: "FindByName".into(),
                arg: "b".into(),
                fallback: (NODE.into(), "Name".into()),
            };
            let mut cache = builder().lookup(lookup).build_loaded(&conn).await.unwrap();
            assert_eq!(kinds(&cache.take_events()), ["added /b", "loaded"]);
            assert_eq!(
                mock.state.lock().unwrap().loads,
                1,
                "fell back to GetManagedObjects"
            );
        });
    });
}

#[test_log::test]
fn hundred_thousand_objects() {
    bounded(Duration::from_secs(240), || {
        let bus = PrivateBus::start().unwrap();
        let n = 100_000;
        let list: BTreeMap<String, Ifaces> = (0..n)
            .map(|i| {
                let peer = format!("/n/{}", (i + 1) % n);
                (format!("/n/{i}"), node(&format!("n{i}"), Some(&peer), &[]))
            })
            .collect();
        let _mock = Mock::start(bus.address(), list);
        zbus::block_on(async {
            let conn = connect(&bus).await;
            let mut cache = builder().build_loaded(&conn).await.unwrap();
            let ev = cache.take_events();
            assert_eq!(ev.len(), n + 1);
            assert_eq!(cache.len(), n, "one big reference cycle, all ready");
        });
    });
}

fn load_on_any_executor(bus: &PrivateBus) -> impl std::future::Future<Output = usize> + use<> {
    let address = bus.address().to_owned();
    async move {
        let conn = zbus::connection::Builder::address(address.as_str())
            .build()
            .await
            .unwrap();
        let cache = builder().build_loaded(&conn).await.unwrap();
        cache.len()
    }
}

#[test_log::test]
fn runs_on_tokio_current_thread_multi_thread_and_async_io() {
    bounded(LIMIT, || {
        let bus = PrivateBus::start().unwrap();
        let _mock = Mock::start(bus.address(), objects(&[("/a", node("a", None, &[]))]));
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        assert_eq!(rt.block_on(load_on_any_executor(&bus)), 1);
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        assert_eq!(
            rt.block_on(async { tokio::spawn(load_on_any_executor(&bus)).await.unwrap() }),
            1
        );
        assert_eq!(async_io::block_on(load_on_any_executor(&bus)), 1);
    });
}

#[test_log::test]
fn the_blocking_facade_runs_the_cache_on_its_own_thread() {
    bounded(LIMIT, || {
        let bus = PrivateBus::start().unwrap();
        let mock = Mock::start(bus.address(), objects(&[("/a", node("a", None, &[]))]));
        let cache = BlockingCache::connect(bus.address(), builder()).unwrap();
        assert_eq!(cache.with(|c| c.len()).unwrap(), 1);
        let mut seen = Vec::new();
        while let Some(ev) = cache.recv_event(Duration::from_millis(200)) {
            seen.push(ev);
        }
        mock.add("/b", node("b", None, &[]));
        let ev = cache.recv_event(WAIT).unwrap();
        assert_eq!(kinds(&[ev]), ["added /b"]);
        assert_eq!(
            cache
                .with(|c| c.object("/b").map(|o| o.path().to_owned()))
                .unwrap()
                .as_deref(),
            Some("/b")
        );
    });
}

#[test_log::test]
fn a_blocking_cache_builds_on_a_connection_the_program_has() {
    bounded(LIMIT, || {
        let bus = PrivateBus::start().unwrap();
        let mock = Mock::start(bus.address(), objects(&[("/a", node("a", None, &[]))]));
        let conn = zbus::block_on(connect(&bus));
        let cache = BlockingCache::builder(builder())
            .event_channel(1)
            .build(&conn)
            .unwrap();
        assert_eq!(cache.with(|c| c.len()).unwrap(), 1);
        while cache.recv_event(Duration::from_millis(200)).is_some() {}
        // More changes than the one-event channel holds: each arrives, in order.
        for name in ["b", "c", "d"] {
            mock.add(&format!("/{name}"), node(name, None, &[]));
        }
        let mut seen = Vec::new();
        while seen.len() < 3 {
            let ev = cache.recv_event(WAIT).expect("an event");
            seen.push(ev);
        }
        assert_eq!(kinds(&seen), ["added /b", "added /c", "added /d"]);
        // The program's connection is still its own to use.
        let reply = zbus::block_on(conn.call_method(
            Some("org.freedesktop.DBus"),
            "/org/freedesktop/DBus",
            Some("org.freedesktop.DBus"),
            "GetId",
            &(),
        ))
        .expect("the connection still works");
        assert!(!reply.body().deserialize::<String>().unwrap().is_empty());
    });
}

#[test_log::test]
fn a_service_without_an_object_manager_fails_the_load_with_the_error_reply() {
    bounded(LIMIT, || {
        let bus = PrivateBus::start().unwrap();
        let _mock = Mock::start(bus.address(), objects(&[("/a", node("a", None, &[]))]));
        zbus::block_on(async {
            let conn = connect(&bus).await;
            let err = builder()
                .manager_path("/nowhere")
                .build_loaded(&conn)
                .await
                .expect_err("no ObjectManager there");
            let netmirror_client_cache::Error::Call(call) = &err else {
                panic!("{err:?}")
            };
            assert_eq!(
                call.error_name(),
                Some("org.freedesktop.DBus.Error.UnknownMethod"),
                "{err}"
            );
            assert_eq!(call.path, "/nowhere");
        });
    });
}

/// Asserts that the cache holds exactly what `GetManagedObjects` says now: called on the cache's
/// own connection through [`ObjectCache::drive`], so that every signal the service sent before
/// its reply is in the cache when it is compared.
async fn assert_cache_equals_get_managed_objects(cache: &mut ObjectCache) {
    let conn = cache.connection().clone();
    let call = conn.call_method(
        Some(SERVICE),
        "/",
        Some("org.freedesktop.DBus.ObjectManager"),
        "GetManagedObjects",
        &(),
    );
    let reply = cache.drive(call).await.unwrap().unwrap();
    // What the cache handled before that reply may have started a reload of its own (a
    // reconcile, after a signal about an unknown object): the signals after it are superseded
    // by its reply, so the cache is whole only once that reply is in. The service changes
    // nothing more, so that reply holds what `truth` holds.
    assert!(
        cache.wait_until(|c| c.is_loaded(), LIMIT).await.unwrap(),
        "the cache's own reload ends"
    );
    let (truth,): (std::collections::HashMap<zbus::OwnedObjectPath, Ifaces>,) =
        reply.body().deserialize().unwrap();
    let mut cached: Vec<&str> = cache.objects().map(|o| o.path()).collect();
    cached.sort_unstable();
    let mut want: Vec<&str> = truth.keys().map(|p| p.as_str()).collect();
    want.sort_unstable();
    assert_eq!(cached, want, "the same objects");
    for (path, ifaces) in &truth {
        let object = cache.object(path.as_str()).unwrap();
        let mut names: Vec<&str> = object.interfaces().map(|i| i.name()).collect();
        names.sort_unstable();
        assert_eq!(
            names,
            ifaces.keys().map(String::as_str).collect::<Vec<_>>(),
            "{path}"
        );
        for (iface, props) in ifaces {
            for (name, value) in props {
                let want = Value::try_from(value).unwrap();
                assert_eq!(
                    object.prop(iface, name),
                    Some(&want),
                    "{path} {iface}.{name}"
                );
            }
        }
    }
}

#[test_log::test]
fn next_event_is_cancel_safe_when_dropped_mid_way() {
    use std::sync::atomic::{AtomicBool, Ordering};

    use futures_util::future::{Either, select};

    bounded(Duration::from_secs(180), || {
        let bus = PrivateBus::start().unwrap();
        let list: Vec<(String, Ifaces)> = (0..20)
            .map(|i| (format!("/n{i}"), node(&format!("n{i}"), None, &[])))
            .collect();
        let mock = Mock::start(bus.address(), list.into_iter().collect());
        let done = AtomicBool::new(false);
        std::thread::scope(|s| {
            let (mock, done) = (&mock, &done);
            let changer = s.spawn(move || {
                for round in 0..600u32 {
                    let mut props = Props::new();
                    props.insert("Count".into(), v(round));
                    mock.change(&format!("/n{}", round % 20), NODE, props);
                    match round % 60 {
                        // Objects come and go.
                        10 => mock.add(&format!("/x{round}"), node("x", None, &[])),
                        40 => mock.remove(&format!("/x{}", round - 30), &[NODE]),
                        // A signal about an object the cache does not know: the cache
                        // reconciles, which sends a call while the test keeps dropping its
                        // futures.
                        50 => mock.change(&format!("/ghost{round}"), NODE, Props::new()),
                        _ => {}
                    }
                }
                done.store(true, Ordering::SeqCst);
            });
            zbus::block_on(async {
                let conn = connect(&bus).await;
                let mut cache = builder()
                    .debug(DebugConfig::tolerant())
                    .build_loaded(&conn)
                    .await
                    .unwrap();
                cache.take_events();
                let (mut taken, mut dropped) = (0u32, 0u32);
                let mut i = 0u64;
                while !done.load(Ordering::SeqCst) || i < 200 {
                    i += 1;
                    // From nothing to a third of a millisecond: the future is dropped while it
                    // waits for a message, or while it sends.
                    let timer = async_io::Timer::after(Duration::from_micros(i % 300));
                    let next = cache.next_event();
                    match select(std::pin::pin!(next), std::pin::pin!(timer)).await {
                        Either::Left((Some(_), _)) => taken += 1,
                        Either::Left((None, _)) => panic!("the connection closed"),
                        Either::Right(_) => dropped += 1,
                    }
                }
                changer.join().unwrap();
                assert!(dropped > 100, "next_event was dropped {dropped} times");
                assert!(taken > 100, "{taken} events taken");
                assert!(
                    cache
                        .diagnostics()
                        .recent
                        .iter()
                        .any(|w| w.kind == WarningKind::UnknownObject),
                    "the ghost signals made the cache reconcile"
                );
                assert_cache_equals_get_managed_objects(&mut cache).await;
                // And the events still add up: nothing lost, the queue drains.
                let _ = cache.take_events();
            });
        });
        drop(mock);
    });
}

#[test_log::test]
fn the_cache_is_a_stream_of_its_events() {
    use futures_util::StreamExt;

    bounded(LIMIT, || {
        let bus = PrivateBus::start().unwrap();
        let mock = Mock::start(bus.address(), objects(&[("/a", node("a", None, &[]))]));
        zbus::block_on(async {
            let conn = connect(&bus).await;
            let mut cache = builder().build(&conn).await.unwrap();
            let first: Vec<Event> = (&mut cache).take(2).collect().await;
            assert_eq!(kinds(&first), ["added /a", "loaded"]);
            mock.change("/a", NODE, [("Count".to_owned(), v(5u32))].into());
            let next = cache.next().await;
            assert!(
                matches!(&next, Some(Event::PropertyChanged { property, new: Value::U32(5), .. }) if &**property == "Count"),
                "{next:?}"
            );
            assert_cache_equals_get_managed_objects(&mut cache).await;
            mock.stop();
        });
    });
}
