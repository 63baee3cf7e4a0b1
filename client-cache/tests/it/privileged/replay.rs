//! Recording the real NetworkManager's conversations (a load, an activation, a restart): the
//! replay of each equals the live cache (objects, fetched settings, events), and the live
//! cache equals `GetManagedObjects` on a second connection. With
//! `NETMIRROR_WRITE_REPLAY_DATA=1` the recordings and those `GetManagedObjects` replies are
//! written to `tests/data/replay/`, where the unprivileged replay tests read them.

use std::{
    path::{Path, PathBuf},
    time::Duration,
};

use netmirror_client_cache::{
    Event, ObjectCache,
    nm::NmClient,
    replay::Replay,
    testing::{NetworkManagerDaemon, Profile},
};
use zbus::wire::LE;

use crate::{
    replay::{
        data_dir, fetched_cache, fetched_replayed, flat_cache, flat_managed, flat_replayed,
        read_managed,
    },
    support::bounded,
};

const LIMIT: Duration = Duration::from_secs(240);
/// How long without a message counts as settled.
const QUIET: Duration = Duration::from_secs(2);

/// Events until `QUIET` passes without any.
async fn settle(cache: &mut ObjectCache, events: &mut Vec<Event>) {
    events.extend(cache.take_events());
    while let Some(ev) = cache.next_event_timeout(QUIET).await {
        events.push(ev);
    }
}

/// Writes the body of a `GetManagedObjects` reply from a second connection to `path`.
async fn write_managed(address: &str, path: &Path) {
    let conn = zbus::connection::Builder::address(address)
        .build()
        .await
        .expect("connect");
    let reply = super::get_managed_objects(&conn).await;
    let body = reply.body();
    assert_eq!(
        body.data().context().endian(),
        LE,
        "stored as little-endian"
    );
    std::fs::write(path, body.data().bytes()).expect("write the reply");
}

/// Records one conversation: a cache loaded with `NmClient::builder()`, then `act`, then
/// events until quiet; `GetManagedObjects` then. Checks live == GetManagedObjects and
/// replay == live; returns the files.
fn record(
    nm: &mut NetworkManagerDaemon,
    dir: &Path,
    name: &str,
    act: impl FnOnce(&mut NetworkManagerDaemon),
) -> (PathBuf, PathBuf) {
    let file = dir.join(format!("{name}.nmrec"));
    let managed = dir.join(format!("{name}.managed"));
    let address = nm.bus_address().to_owned();
    let conn = zbus::block_on(zbus::connection::Builder::address(address.as_str()).build())
        .expect("connect");
    let mut cache = zbus::block_on(NmClient::builder().record_to(&file).build_loaded(&conn))
        .expect("load NetworkManager");
    let mut events = Vec::new();
    zbus::block_on(settle(&mut cache, &mut events));
    act(nm);
    zbus::block_on(async {
        settle(&mut cache, &mut events).await;
        write_managed(&address, &managed).await;
        // Whatever was on its way when GetManagedObjects was answered.
        settle(&mut cache, &mut events).await;
    });
    cache.finish_recording().expect("recorded");
    let truth = read_managed(&managed);
    assert_eq!(flat_cache(&cache), flat_managed(&truth), "{name}: live");
    assert_eq!(cache.diagnostics().warnings, 0, "{name}");

    let replayed = Replay::open(&file)
        .and_then(|r| r.run(NmClient::builder()))
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(replayed.events(), &events[..], "{name}: events");
    assert_eq!(
        flat_replayed(&replayed),
        flat_cache(&cache),
        "{name}: objects"
    );
    assert_eq!(fetched_replayed(&replayed), fetched_cache(&cache), "{name}");
    assert_eq!(replayed.owner(), cache.owner());
    assert_eq!(
        replayed.diagnostics().messages,
        cache.diagnostics().messages
    );
    eprintln!(
        "{name}: {} bytes, {} events, {} objects",
        std::fs::metadata(&file).map(|m| m.len()).unwrap_or(0),
        events.len(),
        cache.len()
    );
    (file, managed)
}

fn run(nm: &NetworkManagerDaemon, program: &str, args: &[&str]) {
    let out = if program == "nmcli" {
        nm.nmcli().args(args).output()
    } else {
        nm.netns_command(program).args(args).output()
    }
    .expect("run");
    assert!(
        out.status.success(),
        "{program} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test_log::test]
fn recordings_of_a_load_an_activation_and_a_restart_replay_to_the_live_cache() {
    bounded(LIMIT, || {
        let mut nm = NetworkManagerDaemon::builder()
            .manage_devices()
            .profile(Profile::bridge("rec-bridge", "rbr0"))
            .start()
            .unwrap();
        run(
            &nm,
            "ip",
            &["link", "add", "va0", "type", "veth", "peer", "name", "vb0"],
        );
        run(&nm, "ip", &["link", "set", "vb0", "up"]);
        run(
            &nm,
            "nmcli",
            &[
                "connection",
                "add",
                "type",
                "ethernet",
                "ifname",
                "va0",
                "con-name",
                "static-va0",
                "autoconnect",
                "no",
                "ipv4.method",
                "manual",
                "ipv4.addresses",
                "192.0.2.1/24",
                "ipv6.method",
                "disabled",
            ],
        );
        // Until va0 is available (disconnected, 30) to activate.
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        loop {
            let out = nm
                .nmcli()
                .args(["-t", "-f", "DEVICE,STATE", "device"])
                .output()
                .unwrap();
            if String::from_utf8_lossy(&out.stdout).contains("va0:disconnected") {
                break;
            }
            assert!(std::time::Instant::now() < deadline, "va0 not available");
            std::thread::sleep(Duration::from_millis(200));
        }
        let dir = nm.dir().join("recordings");
        std::fs::create_dir_all(&dir).unwrap();
        let mut files = Vec::new();
        files.push(record(&mut nm, &dir, "load", |_| {}));
        files.push(record(&mut nm, &dir, "activation", |nm| {
            run(
                nm,
                "nmcli",
                &["--wait", "20", "connection", "up", "static-va0"],
            );
        }));
        files.push(record(&mut nm, &dir, "restart", |nm| {
            nm.stop().unwrap();
            nm.start_again().unwrap();
        }));
        if std::env::var("NETMIRROR_WRITE_REPLAY_DATA").is_ok_and(|v| v == "1") {
            let out = data_dir();
            std::fs::create_dir_all(&out).unwrap();
            for (file, managed) in files {
                for f in [file, managed] {
                    std::fs::copy(&f, out.join(f.file_name().unwrap())).unwrap();
                }
            }
            eprintln!("recordings written to {}", out.display());
        }
    });
}
