//! The D-Bus half of `cargo xtask soak`: a private bus with a churning ObjectManager service on
//! it, and a plain client that reads the service's `GetManagedObjects`.
//!
//! `soak_service serve`: starts a private `dbus-daemon` ([`PrivateBus`]), prints its address as
//! the first line of stdout, and serves `org.example.Soak` (a [`HostileService`] that behaves)
//! with manager `/` and no objects. A line `start` on stdin starts the churn: an object
//! `/anchor/0`, then rounds, each adding 200 objects `/soak/rN/0..200` (one `InterfacesAdded`
//! each), removing those of the round before the last (one `InterfacesRemoved` each) and
//! announcing 2,000 new property names on `/anchor/0` (100 per `PropertiesChanged`, each
//! invalidating the previous ones). A line `stop` ends the churn: it prints `quiet N rounds`
//! and keeps serving until stdin closes.
//!
//! `soak_service managed ADDRESS`: prints the paths `GetManagedObjects` of `org.example.Soak`
//! returns, sorted, one per line, then `interfaces N` (how many interfaces they hold in all).
//!
//! `cargo run -p netmirror-client-cache --example soak_service -- serve`

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::time::Duration;

use netmirror_client_cache::testing::{HostileService, Ifaces, PrivateBus, Props};
use zbus::{OwnedObjectPath, OwnedVariant};

/// The service's bus name.
const SERVICE: &str = "org.example.Soak";
const NODE: &str = "org.example.Node";
/// Objects added (and later removed) per round.
const OBJECTS_PER_ROUND: usize = 200;
/// Property names announced per round, and per signal.
const NAMES_PER_ROUND: usize = 2_000;
const NAMES_PER_SIGNAL: usize = 100;

type Error = Box<dyn std::error::Error>;

fn main() -> Result<(), Error> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["serve"] => serve(),
        ["managed", address] => managed(address),
        _ => Err("usage: soak_service serve | soak_service managed ADDRESS".into()),
    }
}

fn node(name: &str) -> Result<Ifaces, Error> {
    let mut props = Props::new();
    props.insert(
        "Name".into(),
        OwnedVariant::try_from(zbus::Variant::from(name))?,
    );
    let mut ifaces = Ifaces::new();
    ifaces.insert(NODE.into(), props);
    Ok(ifaces)
}

fn serve() -> Result<(), Error> {
    let bus = PrivateBus::start()?;
    let service = HostileService::start(bus.address(), SERVICE, "/")?;
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{}", bus.address())?;
    stdout.flush()?;

    // stdin: `start` starts the churn, `stop` ends it, its end ends the program.
    let stop = Arc::new(AtomicBool::new(false));
    let (started_tx, started) = mpsc::channel::<()>();
    let (closed_tx, closed) = mpsc::channel::<()>();
    {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            for line in std::io::stdin().lock().lines().map_while(Result::ok) {
                match line.trim() {
                    "start" => {
                        let _ = started_tx.send(());
                    }
                    "stop" => stop.store(true, Ordering::SeqCst),
                    _ => {}
                }
            }
            stop.store(true, Ordering::SeqCst);
            drop(started_tx);
            let _ = closed_tx.send(());
        });
    }

    if started.recv().is_err() {
        return Ok(());
    }
    service.flood_added("/anchor", 1, &node("anchor")?)?;
    let ifaces = node("churn")?;
    let mut round = 0usize;
    while !stop.load(Ordering::SeqCst) {
        service.flood_added(&format!("/soak/r{round}"), OBJECTS_PER_ROUND, &ifaces)?;
        if round >= 2 {
            let old: Vec<String> = (0..OBJECTS_PER_ROUND)
                .map(|i| format!("/soak/r{}/{i}", round - 2))
                .collect();
            service.flood_removed(&old)?;
        }
        service.churn_property_name_batches(
            "/anchor/0",
            NODE,
            &format!("Churn{round}_"),
            NAMES_PER_ROUND,
            NAMES_PER_SIGNAL,
        )?;
        round += 1;
        // Leave the other core some air.
        std::thread::sleep(Duration::from_millis(20));
    }
    writeln!(stdout, "quiet {round} rounds")?;
    stdout.flush()?;
    let _ = closed.recv();
    service.stop();
    drop(bus);
    Ok(())
}

type Managed = HashMap<OwnedObjectPath, BTreeMap<String, HashMap<String, OwnedVariant>>>;

fn managed(address: &str) -> Result<(), Error> {
    let objects: Managed = zbus::block_on(async {
        let conn = zbus::connection::Builder::address(address).build().await?;
        let reply = conn
            .call_method(
                Some(SERVICE),
                "/",
                Some("org.freedesktop.DBus.ObjectManager"),
                "GetManagedObjects",
                &(),
            )
            .await?;
        reply.body().deserialize::<Managed>()
    })?;
    let mut paths: Vec<&str> = objects.keys().map(|p| p.as_str()).collect();
    paths.sort_unstable();
    let mut stdout = std::io::stdout().lock();
    for path in paths {
        writeln!(stdout, "{path}")?;
    }
    let interfaces: usize = objects.values().map(BTreeMap::len).sum();
    writeln!(stdout, "interfaces {interfaces}")?;
    Ok(())
}
