//! `PrivateBus`: a private `dbus-daemon` starts, serves clients, keeps them apart from other
//! buses, and leaves nothing behind. No root needed.

use std::time::Duration;

use netmirror_client_cache::testing::{MARKER, PrivateBus};

use crate::support::{bounded, process_exists};

const LIMIT: Duration = Duration::from_secs(30);

/// Connects to `bus` with zbus and claims `name`.
fn claim(address: &str, name: &'static str) -> zbus::Connection {
    zbus::block_on(async {
        let conn = zbus::connection::Builder::address(address)
            .build()
            .await
            .expect("connect to the private bus");
        conn.request_name(name).await.expect("claim a name");
        conn
    })
}

#[test]
fn serves_clients_on_a_socket_in_a_marked_temp_dir() {
    bounded(LIMIT, || {
        let bus = PrivateBus::start().unwrap();
        assert!(bus.socket_path().exists(), "{:?}", bus.socket_path());
        assert!(bus.dir().to_string_lossy().contains(MARKER));
        assert!(
            bus.address()
                .starts_with(&format!("unix:path={}", bus.socket_path().display())),
            "{}",
            bus.address()
        );

        let conn = claim(bus.address(), "org.netmirror.Test");
        assert!(bus.name_has_owner("org.netmirror.Test").unwrap());
        assert!(!bus.name_has_owner("org.netmirror.Other").unwrap());

        // Tools run with `command` talk to this bus as their system bus.
        let listing = bus
            .command("busctl")
            .args(["--system", "list", "--no-pager"])
            .output()
            .unwrap();
        assert!(listing.status.success(), "{listing:?}");
        assert!(String::from_utf8_lossy(&listing.stdout).contains("org.netmirror.Test"));

        drop(conn);
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while bus.name_has_owner("org.netmirror.Test").unwrap() {
            assert!(
                std::time::Instant::now() < deadline,
                "name outlived its owner"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    });
}

#[test]
fn buses_are_independent() {
    bounded(LIMIT, || {
        let first = PrivateBus::start().unwrap();
        let second = PrivateBus::start().unwrap();
        assert_ne!(first.address(), second.address());
        let _conn = claim(first.address(), "org.netmirror.OnlyOnFirst");
        assert!(first.name_has_owner("org.netmirror.OnlyOnFirst").unwrap());
        assert!(!second.name_has_owner("org.netmirror.OnlyOnFirst").unwrap());
    });
}

#[test]
fn drop_kills_the_daemon_and_removes_its_dir() {
    bounded(LIMIT, || {
        let bus = PrivateBus::start().unwrap();
        let pid = bus.pid();
        let dir = bus.dir().to_owned();
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap();
        assert!(
            String::from_utf8_lossy(&cmdline).contains(MARKER),
            "the daemon's command line carries the marker"
        );
        drop(bus);
        assert!(!process_exists(pid), "dbus-daemon {pid} is still there");
        assert!(!dir.exists(), "{dir:?} is still there");
    });
}
