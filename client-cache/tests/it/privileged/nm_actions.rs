//! The write side against the real NetworkManager, checked in the kernel of its namespace
//! (`ip -j` there): a static profile added, activated, modified and reapplied, deactivated and
//! deleted; activations that fail with nmcli's reasons; a checkpoint rolled back.

use std::time::{Duration, Instant};

use netmirror_client_cache::{
    Error,
    nm::{NmClient, Outcome, Persist, UpdateOptions, settings::Settings},
    testing::NetworkManagerDaemon,
};

use crate::support::bounded;

const LIMIT: Duration = Duration::from_secs(180);
const WAIT: Duration = Duration::from_secs(30);

/// A daemon with a veth pair `va0`/`vb0` in its namespace, both up, and a client that holds
/// both devices.
fn sandbox() -> (NetworkManagerDaemon, zbus::Connection) {
    let nm = NetworkManagerDaemon::builder()
        .manage_devices()
        .start()
        .unwrap();
    for args in [
        &["link", "add", "va0", "type", "veth", "peer", "name", "vb0"][..],
        &["link", "set", "vb0", "up"],
    ] {
        let status = nm.netns_command("ip").args(args).status().unwrap();
        assert!(status.success(), "ip {args:?}");
    }
    let conn =
        zbus::block_on(zbus::connection::Builder::address(nm.bus_address()).build()).unwrap();
    (nm, conn)
}

async fn client_with_devices(conn: &zbus::Connection) -> NmClient {
    let mut client = NmClient::new(conn).await.unwrap();
    let held = client
        .cache_mut()
        .wait_until(
            |c| {
                ["va0", "vb0"].iter().all(|name| {
                    c.objects_with("org.freedesktop.NetworkManager.Device")
                        .any(|d| {
                            d.prop("org.freedesktop.NetworkManager.Device", "Interface")
                            .and_then(|v| v.as_str())
                            == Some(*name)
                            // Disconnected (30): managed and available.
                            && d.prop("org.freedesktop.NetworkManager.Device", "State")
                                .and_then(|v| v.as_u32())
                                == Some(30)
                        })
                })
            },
            WAIT,
        )
        .await
        .unwrap();
    assert!(held, "va0 and vb0 did not become available");
    client
}

/// `ip -j addr` and `ip -j route` of `dev` in the daemon's namespace, as `addr/prefix` and
/// `dst via gateway` words.
fn kernel(nm: &NetworkManagerDaemon, dev: &str) -> (Vec<String>, Vec<String>) {
    let out = nm
        .netns_command("ip")
        .args(["-j", "addr", "show", "dev", dev])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let mut addrs = Vec::new();
    for chunk in text.split("\"local\":\"").skip(1) {
        let local = chunk.split('"').next().unwrap_or_default();
        let prefix = chunk
            .split("\"prefixlen\":")
            .nth(1)
            .and_then(|s| s.split([',', '}']).next())
            .unwrap_or_default();
        if !local.starts_with("fe80") {
            addrs.push(format!("{local}/{prefix}"));
        }
    }
    let mut routes = Vec::new();
    for family in ["-4", "-6"] {
        let out = nm
            .netns_command("ip")
            .args(["-j", family, "route", "show", "dev", dev])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        for chunk in text.split("{\"dst\":\"").skip(1) {
            let dst = chunk.split('"').next().unwrap_or_default();
            let via = chunk
                .split("\"gateway\":\"")
                .nth(1)
                .and_then(|s| s.split('"').next());
            match via {
                Some(via) => routes.push(format!("{dst} via {via}")),
                None => routes.push(dst.to_owned()),
            }
        }
    }
    addrs.sort();
    routes.sort();
    (addrs, routes)
}

/// Waits (a few seconds at most) until `f` holds for the kernel state of `dev`.
fn kernel_until(
    nm: &NetworkManagerDaemon,
    dev: &str,
    f: impl Fn(&[String], &[String]) -> bool,
) -> (Vec<String>, Vec<String>) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (addrs, routes) = kernel(nm, dev);
        if f(&addrs, &routes) || Instant::now() > deadline {
            return (addrs, routes);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn static_profile(id: &str, ifname: &str) -> Settings {
    let mut settings = Settings::profile("ethernet", id).unwrap();
    settings
        .set_words(&[
            "ifname",
            ifname,
            "autoconnect",
            "no",
            "ip4",
            "192.0.2.1/24",
            "gw4",
            "192.0.2.254",
            "ipv4.routes",
            "198.51.100.0/24 192.0.2.2",
            "ip6",
            "2001:db8:1::1/64",
        ])
        .unwrap();
    settings
}

#[test_log::test]
fn a_static_profile_is_added_activated_modified_deactivated_and_deleted() {
    bounded(LIMIT, || {
        let (nm, conn) = sandbox();
        zbus::block_on(async {
            let mut client = client_with_devices(&conn).await;
            let settings = static_profile("static-a", "va0");
            let path = client
                .add_profile(settings.map(), Persist::Disk, WAIT)
                .await
                .unwrap();
            let profile = client.connections().into_iter().find(|p| p.path() == path);
            assert_eq!(
                profile.map(|p| p.id().to_owned()).as_deref(),
                Some("static-a")
            );
            let keyfile = nm.keyfile_dir().join("static-a.nmconnection");
            assert!(keyfile.exists(), "{keyfile:?}");

            let activation = client.activate("static-a", None, WAIT).await.unwrap();
            assert_eq!(activation.outcome, Outcome::Activated, "{activation:?}");
            assert_eq!(activation.device.as_deref(), Some("va0"));
            // The cache shows it at once: the active connection, activated, on va0.
            let active = client
                .active_connections()
                .into_iter()
                .find(|a| a.path() == activation.active)
                .map(|a| a.connection().map(|p| p.id().to_owned()));
            assert_eq!(active, Some(Some("static-a".to_owned())));

            let (addrs, routes) = kernel_until(&nm, "va0", |a, _| a.len() == 2);
            assert_eq!(addrs, ["192.0.2.1/24", "2001:db8:1::1/64"]);
            assert!(
                routes.contains(&"198.51.100.0/24 via 192.0.2.2".to_owned()),
                "{routes:?}"
            );
            assert!(
                routes.contains(&"default via 192.0.2.254".to_owned()),
                "{routes:?}"
            );
            assert!(routes.contains(&"192.0.2.0/24".to_owned()), "{routes:?}");

            // Modify (Update2), then reapply: the kernel follows.
            let mut settings =
                Settings::from_map(client.profile_settings("static-a").await.unwrap());
            settings
                .set_text("+ipv4.addresses", "192.0.2.7/24")
                .unwrap();
            client
                .update_profile("static-a", settings.map(), UpdateOptions::default(), WAIT)
                .await
                .unwrap();
            client.reapply_device("va0").await.unwrap();
            let (addrs, _) = kernel_until(&nm, "va0", |a, _| a.len() == 3);
            assert_eq!(addrs, ["192.0.2.1/24", "192.0.2.7/24", "2001:db8:1::1/64"]);

            let down = client.deactivate("static-a", WAIT).await.unwrap();
            assert_eq!(down.outcome, Outcome::Deactivated, "{down:?}");
            assert!(
                client
                    .active_connections()
                    .iter()
                    .all(|a| a.path() != down.active)
            );
            let (addrs, routes) = kernel_until(&nm, "va0", |a, _| a.is_empty());
            assert!(addrs.is_empty(), "{addrs:?}");
            assert!(
                !routes.iter().any(|r| r.contains("198.51.100")),
                "{routes:?}"
            );

            client.delete_profile("static-a", WAIT).await.unwrap();
            assert!(client.connections().iter().all(|p| p.path() != path));
            assert!(!keyfile.exists());
            let unknown = client.delete_profile("static-a", WAIT).await.unwrap_err();
            assert!(
                matches!(
                    unknown,
                    Error::NotFound {
                        kind: "profile",
                        ..
                    }
                ),
                "{unknown}"
            );
        });
    });
}

#[test_log::test]
fn activation_failures_carry_nmclis_reasons() {
    bounded(LIMIT, || {
        let (nm, conn) = sandbox();
        zbus::block_on(async {
            let mut client = client_with_devices(&conn).await;

            // A profile for a device that does not exist: NetworkManager refuses at once.
            let missing = static_profile("missing-dev", "nothere0");
            client
                .add_profile(missing.map(), Persist::Memory, WAIT)
                .await
                .unwrap();
            let err = client
                .activate("missing-dev", None, WAIT)
                .await
                .unwrap_err();
            let Error::Call(call) = &err else {
                panic!("{err:?}");
            };
            let netmirror_client_cache::CallFailure::ErrorReply { name, message } = &call.cause
            else {
                panic!("{err:?}");
            };
            assert!(
                name.starts_with("org.freedesktop.NetworkManager."),
                "{name}"
            );
            let out = nm
                .nmcli()
                .args(["connection", "up", "missing-dev"])
                .output()
                .unwrap();
            assert!(!out.status.success());
            let nmcli = String::from_utf8_lossy(&out.stderr);
            assert!(
                nmcli.contains(message.as_str()),
                "nmcli: {nmcli}\nours: {message}"
            );

            // DHCP that nobody answers, with a short timeout: activation fails with the
            // device's reason, as nmcli says it.
            let mut dhcp = Settings::profile("ethernet", "dhcp-a").unwrap();
            dhcp.set_words(&[
                "ifname",
                "va0",
                "autoconnect",
                "no",
                "ipv4.method",
                "auto",
                "ipv4.dhcp-timeout",
                "3",
                "ipv4.may-fail",
                "no",
                "ipv6.method",
                "disabled",
            ])
            .unwrap();
            client
                .add_profile(dhcp.map(), Persist::Memory, WAIT)
                .await
                .unwrap();
            let failed = client.activate("dhcp-a", None, WAIT).await.unwrap();
            assert_eq!(failed.outcome, Outcome::Failed, "{failed:?}");
            assert_eq!(
                failed.reason(),
                "IP configuration could not be reserved (no available address, timeout, etc.)"
            );
            let out = nm
                .nmcli()
                .args(["connection", "up", "dhcp-a"])
                .output()
                .unwrap();
            assert!(!out.status.success());
            let nmcli = String::from_utf8_lossy(&out.stderr);
            assert!(
                nmcli.contains(&format!(
                    "Connection activation failed: {}",
                    failed.reason()
                )),
                "nmcli: {nmcli}"
            );

            // A timeout shorter than the DHCP one is a timeout, not a result.
            let err = client
                .activate("dhcp-a", None, Duration::from_millis(500))
                .await
                .unwrap_err();
            assert!(matches!(err, Error::Timeout(_)), "{err:?}");
        });
    });
}

#[test_log::test]
fn a_checkpoint_rolls_the_kernel_back() {
    bounded(LIMIT, || {
        let (nm, conn) = sandbox();
        zbus::block_on(async {
            let mut client = client_with_devices(&conn).await;
            let settings = static_profile("static-c", "va0");
            client
                .add_profile(settings.map(), Persist::Disk, WAIT)
                .await
                .unwrap();
            let up = client.activate("static-c", None, WAIT).await.unwrap();
            assert_eq!(up.outcome, Outcome::Activated);
            let before = kernel_until(&nm, "va0", |a, _| a.len() == 2);

            let checkpoint = client.checkpoint_create(&["va0"], 0).await.unwrap();
            assert_eq!(client.checkpoints(), std::slice::from_ref(&checkpoint));

            // Break it: a new address reapplied and the old one gone.
            let mut broken = Settings::from_map(client.profile_settings("static-c").await.unwrap());
            broken.set_text("ipv4.addresses", "203.0.113.9/24").unwrap();
            broken.set_text("ipv4.gateway", "").unwrap();
            broken.set_text("ipv4.routes", "").unwrap();
            client
                .update_profile("static-c", broken.map(), UpdateOptions::default(), WAIT)
                .await
                .unwrap();
            client.reapply_device("va0").await.unwrap();
            let (addrs, _) = kernel_until(&nm, "va0", |a, _| a.contains(&"203.0.113.9/24".into()));
            assert!(addrs.contains(&"203.0.113.9/24".to_owned()), "{addrs:?}");

            let results = client.checkpoint_rollback(&checkpoint).await.unwrap();
            assert_eq!(results.len(), 1, "{results:?}");
            assert_eq!(results[0].1, 0, "{results:?}");
            let after = kernel_until(&nm, "va0", |a, r| (a, r) == (&before.0[..], &before.1[..]));
            assert_eq!(after, before);
            // Rolled back, the checkpoint is gone.
            let gone = client
                .cache_mut()
                .wait_until(
                    |c| {
                        c.object_any("/org/freedesktop/NetworkManager")
                            .and_then(|o| o.prop("org.freedesktop.NetworkManager", "Checkpoints"))
                            .and_then(|v| v.as_strs())
                            .is_some_and(<[_]>::is_empty)
                    },
                    WAIT,
                )
                .await
                .unwrap();
            assert!(gone);

            // Create and destroy leaves the kernel as it is.
            let checkpoint = client.checkpoint_create(&[], 0).await.unwrap();
            client.checkpoint_destroy(&checkpoint).await.unwrap();
            assert_eq!(kernel(&nm, "va0"), before);
        });
    });
}

#[test_log::test]
fn device_and_global_switches_show_in_the_cache() {
    bounded(LIMIT, || {
        let (nm, conn) = sandbox();
        zbus::block_on(async {
            let mut client = client_with_devices(&conn).await;

            // Add and activate in one call: the profile is in the cache, the kernel has it.
            let settings = static_profile("both-at-once", "vb0");
            let up = client
                .add_and_activate(settings.map(), Some("vb0"), WAIT)
                .await
                .unwrap();
            assert_eq!(up.outcome, Outcome::Activated, "{up:?}");
            assert_eq!(up.device.as_deref(), Some("vb0"));
            assert!(
                client
                    .connections()
                    .iter()
                    .any(|p| p.id() == "both-at-once")
            );
            let (addrs, _) = kernel_until(&nm, "vb0", |a, _| a.len() == 2);
            assert_eq!(addrs, ["192.0.2.1/24", "2001:db8:1::1/64"]);
            client.deactivate("both-at-once", WAIT).await.unwrap();

            let device = |c: &NmClient, prop: netmirror_dbus_meta::PropertyKey<bool>| {
                c.device_by_name("vb0").and_then(|d| d.get(prop))
            };
            client.set_autoconnect("vb0", false, WAIT).await.unwrap();
            assert_eq!(
                device(&client, netmirror_dbus_meta::nm::device::AUTOCONNECT),
                Some(false)
            );
            client.set_managed("vb0", false, WAIT).await.unwrap();
            assert_eq!(
                device(&client, netmirror_dbus_meta::nm::device::MANAGED),
                Some(false)
            );
            let out = nm
                .nmcli()
                .args(["-t", "-f", "DEVICE,STATE", "device"])
                .output()
                .unwrap();
            assert!(
                String::from_utf8_lossy(&out.stdout).contains("vb0:unmanaged"),
                "{}",
                String::from_utf8_lossy(&out.stdout)
            );
            client.set_managed("vb0", true, WAIT).await.unwrap();
            assert_eq!(
                device(&client, netmirror_dbus_meta::nm::device::MANAGED),
                Some(true)
            );

            let enabled = |c: &NmClient| c.manager().and_then(|m| m.networking_enabled());
            client.set_networking(false, WAIT).await.unwrap();
            assert_eq!(enabled(&client), Some(false));
            client.set_networking(true, WAIT).await.unwrap();
            assert_eq!(enabled(&client), Some(true));

            let err = client
                .disconnect_device("nothere0", WAIT)
                .await
                .unwrap_err();
            assert_eq!(err.to_string(), "device \"nothere0\" not found");
        });
    });
}

#[test_log::test]
fn five_hundred_modifies_end_with_the_last_value() {
    bounded(LIMIT, || {
        let (nm, conn) = sandbox();
        zbus::block_on(async {
            let mut client = client_with_devices(&conn).await;
            let settings = static_profile("many", "va0");
            client
                .add_profile(settings.map(), Persist::Disk, WAIT)
                .await
                .unwrap();
            let mut profile = Settings::from_map(client.profile_settings("many").await.unwrap());
            let started = Instant::now();
            for i in 0..500u32 {
                profile
                    .set_text("ipv4.route-metric", &i.to_string())
                    .unwrap();
                client
                    .update_profile("many", profile.map(), UpdateOptions::default(), WAIT)
                    .await
                    .unwrap();
            }
            let ours = started.elapsed();
            let out = nm
                .nmcli()
                .args(["-g", "ipv4.route-metric", "connection", "show", "many"])
                .output()
                .unwrap();
            assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "499");
            // nmcli, one process per change, for comparison (reported, never asserted).
            let started = Instant::now();
            for i in 0..50u32 {
                let status = nm
                    .nmcli()
                    .args(["connection", "modify", "many", "ipv4.route-metric"])
                    .arg(i.to_string())
                    .status()
                    .unwrap();
                assert!(status.success());
            }
            let theirs = started.elapsed();
            eprintln!(
                "500 modifies through the library: {ours:?} ({:.0}/s); 50 nmcli connection modify \
                 processes: {theirs:?} ({:.0}/s)",
                500.0 / ours.as_secs_f64(),
                50.0 / theirs.as_secs_f64()
            );
        });
    });
}
