//! The outside user's tests: each library through its documented API.

use std::net::Ipv4Addr;

use netmirror_outside_user::{Neighbour, moves, neighbours_per_interface};

#[test]
fn dedup_index_partitions_a_users_own_type() {
    let n = |last: u8, ifindex| Neighbour {
        address: Ipv4Addr::new(192, 0, 2, last),
        ifindex,
    };
    // The second entry for .1 replaces the first (same id) and moves it to interface 3.
    let counts = neighbours_per_interface(vec![n(1, 2), n(2, 2), n(1, 3)], &[2, 3, 4]);
    assert_eq!(counts, [1, 1, 0]);
}

#[test]
fn dedup_index_changes_name_old_and_new() {
    let n = |last: u8, ifindex| Neighbour {
        address: Ipv4Addr::new(192, 0, 2, last),
        ifindex,
    };
    let a = Ipv4Addr::new(192, 0, 2, 1);
    // An equal sighting is unchanged (no old object); a move replaces it.
    assert_eq!(moves(vec![n(1, 2), n(1, 2), n(2, 2), n(1, 3)]), [(a, 2, 3)]);
}

#[test]
fn platform_changes_name_old_and_new() {
    use std::sync::Arc;

    use netmirror_platform::{Change, Route, Table};
    let before = Arc::new(Route::new("10.3.0.0".parse().unwrap(), 16));
    let after = Arc::new(Route::new("10.3.0.0".parse().unwrap(), 16).with_table(Table(100)));
    let replaced = Change::Replaced {
        old: Arc::clone(&before),
        new: Arc::clone(&after),
    };
    assert_eq!(replaced.old(), Some(&before));
    assert_eq!(replaced.new(), Some(&after));
    assert_eq!(Change::Removed(before).new(), None);
}

#[test]
fn platform_routes_are_built_and_identified_without_a_socket() {
    use netmirror_platform::{Family, Protocol, Route, Table};
    let route = Route::new("10.3.0.0".parse().unwrap(), 16)
        .with_gateway("10.2.0.2".parse().unwrap())
        .with_table(Table(100));
    assert_eq!(route.family(), Family::V4);
    assert_eq!(route.table(), Table(100));
    assert_eq!(route.table().to_string(), "100");
    assert_eq!(Table::MAIN.to_string(), "main");
    assert_eq!(
        route.id(),
        route.clone().with_protocol(Protocol::STATIC).id()
    );
}

/// One light of the user's own service, served with zbus.
struct Light {
    brightness: u32,
}

#[zbus::interface(name = "org.example.Light")]
impl Light {
    #[zbus(property)]
    fn brightness(&self) -> u32 {
        self.brightness
    }

    #[zbus(property)]
    fn on(&self) -> bool {
        self.brightness > 0
    }
}

#[test]
fn client_cache_and_dbus_meta_follow_a_users_own_service() {
    use std::time::Duration;

    use netmirror_client_cache::{Event, Value, testing::PrivateBus};
    use netmirror_dbus_meta::Error;
    use netmirror_outside_user::lights::{self, MANAGER, SERVICE};

    let kitchen = format!("{MANAGER}/kitchen");
    // The private bus of client-cache's `testing` fixtures: a dbus-daemon of this test's own.
    let bus = PrivateBus::start().expect("dbus-daemon");
    zbus::block_on(async {
        let service = zbus::connection::Builder::address(bus.address())
            .serve_at(kitchen.as_str(), Light { brightness: 80 })
            .serve_at(MANAGER, zbus::fdo::ObjectManager)
            .name(SERVICE)
            .build()
            .await
            .expect("the service");
        let conn = zbus::connection::Builder::address(bus.address())
            .build()
            .await
            .expect("a client connection");

        // Loaded: the object and its declared, typed property.
        let mut cache = lights::cache().build_loaded(&conn).await.expect("load");
        let loaded = cache.take_events();
        assert_eq!(
            loaded,
            [
                Event::Added {
                    path: kitchen.as_str().into()
                },
                Event::Loaded
            ]
        );
        assert_eq!(lights::cached_brightness(&cache, &kitchen), Some(80));
        let object = cache.object(&kitchen).expect("cached");
        assert!(
            object
                .object()
                .interface("org.example.Light")
                .unwrap()
                .is_declared()
        );
        assert_eq!(
            object.prop("org.example.Light", "On"),
            Some(&Value::Bool(true))
        );

        // A property read from a zbus::Message, decoded with the dbus-meta declaration; a
        // value of another type is refused, naming both signatures.
        assert_eq!(
            lights::ask_brightness(&conn, &kitchen, "Brightness")
                .await
                .expect("Brightness"),
            80
        );
        let err = lights::ask_brightness(&conn, &kitchen, "On")
            .await
            .expect_err("On is a boolean, not Brightness's u32");
        let err = err.downcast::<Error>().expect("a dbus-meta error");
        assert!(
            matches!(*err, Error::TypeMismatch { property: "Brightness", expected: "u", ref actual, .. } if actual == "b"),
            "{err}"
        );

        // A change: the service dims the light; the cache says so, with both values.
        let light = service
            .object_server()
            .interface::<_, Light>(kitchen.as_str())
            .await
            .expect("served");
        light.get_mut().await.brightness = 30;
        light
            .get()
            .await
            .brightness_changed(light.signal_emitter())
            .await
            .expect("PropertiesChanged sent");
        let event = cache
            .next_event_timeout(Duration::from_secs(10))
            .await
            .expect("a change within 10 s");
        assert_eq!(
            event,
            Event::PropertyChanged {
                path: kitchen.as_str().into(),
                interface: "org.example.Light".into(),
                property: "Brightness".into(),
                old: Value::U32(80),
                new: Value::U32(30),
            }
        );
        assert_eq!(lights::cached_brightness(&cache, &kitchen), Some(30));
    });
}

/// The platform's tokio cache, from the packaged crate with its `tokio` feature, in a
/// throwaway namespace of the `testing` fixtures: loaded off the executor, then following a
/// route the user adds, and the sync `Cache` seeing the same.
#[cfg(feature = "privileged")]
#[test]
fn platform_tokio_cache_follows_a_route_in_a_throwaway_namespace() {
    use std::net::IpAddr;
    use std::time::Duration;

    use futures_util::StreamExt;
    use netmirror_platform::testing::{NetNs, Veth};
    use netmirror_platform::{Cache, Change, Config, Event, Netns, Route, TokioCache};

    let ns = NetNs::builder()
        .veth(Veth::new("out0", "out1").address("192.0.2.1/24"))
        .start()
        .expect("a throwaway namespace (root)");
    let config = || Config::new().with_netns(Netns::name(ns.name()));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    // The route the test adds, as the kernel reports it.
    let gateway: IpAddr = "192.0.2.2".parse().unwrap();
    let is_added = |route: &Route| {
        route.dst() == "10.9.0.0".parse::<IpAddr>().unwrap()
            && route.dst_len() == 16
            && route.gateway() == Some(gateway)
    };
    runtime.block_on(async {
        let mut cache = TokioCache::open(config()).await.expect("loaded");
        let loaded = cache.get().expect("loaded cache");
        let out0 = loaded.link_by_name("out0").expect("out0").ifindex();
        let connected: IpAddr = "192.0.2.0".parse().unwrap();
        assert!(
            loaded.routes().any(|route| route.dst() == connected
                && route.dst_len() == 24
                && route.oif() == Some(out0)),
            "the connected route in {:?}",
            loaded.routes().map(ToString::to_string).collect::<Vec<_>>()
        );

        ns.ip(&["route", "add", "10.9.0.0/16", "via", "192.0.2.2"])
            .expect("ip route add");
        let added = tokio::time::timeout(Duration::from_secs(10), async {
            while let Some(event) = cache.next().await {
                if let Event::Route(Change::Added(route)) = event.expect("an event") {
                    if is_added(&route) {
                        return true;
                    }
                }
            }
            false
        })
        .await
        .expect("the route within 10 s");
        assert!(added);
    });

    let cache = Cache::open(config()).expect("the sync cache");
    let route = cache
        .routes()
        .find(|route| is_added(route))
        .expect("the route");
    // `Display` prints a route as `ip` does, with the interface by index (no names at hand).
    assert_eq!(
        route.to_string(),
        format!(
            "10.9.0.0/16 via 192.0.2.2 dev if{}",
            route.oif().expect("a device").0
        )
    );
}
