//! The NetworkManager layer against the real daemon (seeded with 30 bond and 465 vlan profiles):
//! the cache equals `nmcli -t` on the same bus, nmcli's edits give the expected events, and a
//! restart of the daemon gives removals and a clean reload.

use std::{process::Command, time::Duration};

use netmirror_client_cache::{
    nm::{NmClient, NmEvent},
    testing::NetworkManagerDaemon,
};

use crate::support::bounded;

const LIMIT: Duration = Duration::from_secs(240);

fn lines(mut cmd: Command) -> Vec<String> {
    let out = cmd.output().expect("run nmcli");
    assert!(
        out.status.success(),
        "{:?}: {}",
        cmd,
        String::from_utf8_lossy(&out.stderr)
    );
    let mut v: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .collect();
    v.sort();
    v
}

fn nmcli(nm: &NetworkManagerDaemon, args: &[&str]) -> Vec<String> {
    let mut cmd = nm.nmcli();
    cmd.args(args);
    lines(cmd)
}

fn cache_profiles(c: &NmClient) -> Vec<String> {
    let mut v: Vec<String> = c
        .connections()
        .iter()
        .map(|p| format!("{}:{}:{}", p.id(), p.uuid(), p.connection_type()))
        .collect();
    v.sort();
    v
}

fn cache_devices(c: &NmClient) -> Vec<String> {
    let mut v: Vec<String> = c
        .devices()
        .iter()
        .map(|d| {
            format!(
                "{}:{}:{}",
                d.interface().unwrap_or("--"),
                d.type_name().unwrap_or_default(),
                d.state_text().unwrap_or_default()
            )
        })
        .collect();
    v.sort();
    v
}

/// Events until `quiet` passes without any.
async fn settle(c: &mut NmClient, quiet: Duration) -> Vec<NmEvent> {
    let mut v = Vec::new();
    while let Some(ev) = c.next_event_timeout(quiet).await {
        v.push(ev);
    }
    v
}

fn count(ev: &[NmEvent], f: impl Fn(&NmEvent) -> bool) -> usize {
    ev.iter().filter(|e| f(e)).count()
}

#[test_log::test]
fn the_cache_equals_nmcli_follows_edits_and_survives_a_restart() {
    bounded(LIMIT, || {
        let mut nm = NetworkManagerDaemon::builder()
            .seed_benchmark_profiles(495)
            .start()
            .unwrap();
        let address = nm.bus_address().to_owned();
        let conn =
            zbus::block_on(zbus::connection::Builder::address(address.as_str()).build()).unwrap();
        let mut client = zbus::block_on(NmClient::new(&conn)).unwrap();
        let _ = client.cache_mut().take_events();

        let profiles = nmcli(&nm, &["-t", "-f", "NAME,UUID,TYPE", "connection", "show"]);
        assert_eq!(profiles.len(), 495);
        let profiles: Vec<String> = profiles
            .into_iter()
            .map(|l| l.replace("802-3-ethernet", "ethernet"))
            .collect();
        let ours: Vec<String> = cache_profiles(&client);
        // nmcli prints the type's alias; compare names and UUIDs exactly and types by alias.
        let strip = |v: &[String]| {
            v.iter()
                .map(|l| l.rsplit_once(':').unwrap().0.to_owned())
                .collect::<Vec<_>>()
        };
        assert_eq!(strip(&ours), strip(&profiles));
        assert!(
            ours.iter()
                .all(|l| l.ends_with(":bond") || l.ends_with(":vlan"))
        );
        assert_eq!(
            cache_devices(&client),
            nmcli(&nm, &["-t", "-f", "DEVICE,TYPE,STATE", "device"])
        );
        assert_eq!(
            client.all_devices().len(),
            1 + 495,
            "lo plus one unrealized device per profile"
        );
        assert_eq!(client.cache().diagnostics().warnings, 0);

        // Add, modify, delete a profile with nmcli: exactly the expected events.
        nmcli(
            &nm,
            &[
                "connection",
                "add",
                "type",
                "bond",
                "con-name",
                "t-edit",
                "ifname",
                "t-edit",
                "autoconnect",
                "no",
            ],
        );
        let ev = zbus::block_on(settle(&mut client, Duration::from_millis(1500)));
        assert_eq!(
            count(&ev, |e| matches!(e, NmEvent::ProfileAdded(_))),
            1,
            "{ev:?}"
        );
        assert_eq!(
            count(&ev, |e| matches!(
                e,
                NmEvent::ProfileRemoved(_) | NmEvent::DeviceRemoved(_)
            )),
            0,
            "{ev:?}"
        );
        let added = client
            .connections()
            .into_iter()
            .find(|p| p.id() == "t-edit")
            .expect("listed")
            .path()
            .to_owned();
        let at = ev
            .iter()
            .position(|e| matches!(e, NmEvent::ProfileAdded(p) if **p == *added))
            .unwrap();
        let connections_changed = ev.iter().position(|e| {
            matches!(e, NmEvent::PropertyChanged { property, .. } if &**property == "Connections")
        });
        assert!(
            connections_changed.is_some_and(|c| c < at),
            "Settings.Connections changes before the profile shows: {ev:?}"
        );

        nmcli(
            &nm,
            &[
                "connection",
                "modify",
                "t-edit",
                "connection.autoconnect-priority",
                "7",
            ],
        );
        let ev = zbus::block_on(settle(&mut client, Duration::from_millis(1500)));
        assert_eq!(
            count(
                &ev,
                |e| matches!(e, NmEvent::ProfileUpdated(p) if **p == *added)
            ),
            1,
            "{ev:?}"
        );
        assert_eq!(
            count(&ev, |e| matches!(
                e,
                NmEvent::ProfileAdded(_) | NmEvent::ProfileRemoved(_)
            )),
            0,
            "{ev:?}"
        );
        let prio = client
            .connections()
            .into_iter()
            .find(|p| p.id() == "t-edit")
            .unwrap();
        assert_eq!(
            prio.setting("connection", "autoconnect-priority")
                .and_then(|v| v.as_i64()),
            Some(7)
        );

        nmcli(&nm, &["connection", "delete", "t-edit"]);
        let ev = zbus::block_on(settle(&mut client, Duration::from_millis(1500)));
        assert_eq!(
            count(
                &ev,
                |e| matches!(e, NmEvent::ProfileRemoved(p) if **p == *added)
            ),
            1,
            "{ev:?}"
        );
        assert_eq!(
            count(&ev, |e| matches!(e, NmEvent::ProfileAdded(_))),
            0,
            "{ev:?}"
        );
        assert_eq!(cache_profiles(&client).len(), 495);

        // A profile with permissions for another user: the daemon still shows root its
        // settings, so NMClient (and nmcli) list it, and so do we.
        let args = [
            "connection",
            "add",
            "type",
            "bond",
            "con-name",
            "t-perm",
            "ifname",
            "t-perm",
        ];
        let mut add: Vec<&str> = args.to_vec();
        add.extend(["autoconnect", "no", "connection.permissions", "user:nobody"]);
        nmcli(&nm, &add);
        let ev = zbus::block_on(settle(&mut client, Duration::from_millis(1500)));
        assert_eq!(
            count(&ev, |e| matches!(e, NmEvent::ProfileAdded(_))),
            1,
            "{ev:?}"
        );
        let listed = nmcli(&nm, &["-t", "-f", "NAME,UUID,TYPE", "connection", "show"]);
        assert_eq!(strip(&cache_profiles(&client)), strip(&listed));
        nmcli(&nm, &["connection", "delete", "t-perm"]);
        let ev = zbus::block_on(settle(&mut client, Duration::from_millis(1500)));
        assert_eq!(
            count(&ev, |e| matches!(e, NmEvent::ProfileRemoved(_))),
            1,
            "{ev:?}"
        );

        // Restart: removals for everything, then a clean reload.
        let before = client.cache().len();
        nm.stop().unwrap();
        let ev = zbus::block_on(settle(&mut client, Duration::from_millis(1500)));
        let removed = count(&ev, |e| {
            matches!(
                e,
                NmEvent::DeviceRemoved(_) | NmEvent::ProfileRemoved(_) | NmEvent::ActiveRemoved(_)
            ) || matches!(
                e,
                NmEvent::Other(netmirror_client_cache::Event::Removed { .. })
            )
        });
        assert_eq!(removed, before, "{:?}", &ev[..ev.len().min(5)]);
        assert!(ev.iter().any(|e| matches!(e, NmEvent::OwnerChanged(None))));
        assert!(client.cache().is_empty());
        nm.start_again().unwrap();
        zbus::block_on(async {
            while client.cache().len() < before || !client.cache().is_loaded() {
                if client
                    .next_event_timeout(Duration::from_secs(30))
                    .await
                    .is_none()
                {
                    break;
                }
            }
        });
        assert_eq!(strip(&cache_profiles(&client)), strip(&profiles));
        assert_eq!(client.cache().diagnostics().warnings, 0);
    });
}

#[test_log::test]
fn one_device_is_loaded_by_asking_the_daemon() {
    bounded(LIMIT, || {
        let nm = NetworkManagerDaemon::builder()
            .seed_benchmark_profiles(30)
            .start()
            .unwrap();
        let address = nm.bus_address().to_owned();
        zbus::block_on(async {
            let conn = zbus::connection::Builder::address(address.as_str())
                .build()
                .await
                .unwrap();
            let client = NmClient::device_by_iface(&conn, "lo").await.unwrap();
            let devices: Vec<String> = client
                .cache()
                .objects()
                .map(|o| o.path().to_owned())
                .collect();
            assert_eq!(
                devices.len(),
                1,
                "only the device, not the whole daemon: {devices:?}"
            );
            let lo = client.device_by_name("lo").expect("lo");
            assert_eq!(lo.type_name().as_deref(), Some("loopback"));
            assert_eq!(client.cache().len_all(), 1);
            let none = NmClient::device_by_iface(&conn, "no-such-device")
                .await
                .unwrap();
            assert!(none.cache().is_empty());
            assert_eq!(client.cache().diagnostics().warnings, 0);
        });
    });
}
