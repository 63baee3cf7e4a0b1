//! Cache any D-Bus ObjectManager service generically (no declarations): print its objects with
//! their properties, then every change, on async-io's executor.
//!
//! ```text
//! cargo run -p netmirror-client-cache --example any_service -- SERVICE [MANAGER_PATH]
//!     [--session] [--events N] [--seconds S]
//! ```
//!
//! For example `any_service org.freedesktop.UDisks2 /org/freedesktop/UDisks2` or
//! `any_service org.freedesktop.NetworkManager /org/freedesktop`. The manager path is `/`
//! unless given. The bus is the system bus (`DBUS_SYSTEM_BUS_ADDRESS` when set), or the session
//! bus with `--session`. Output: for each object a line `object PATH`, then
//! `  INTERFACE.PROPERTY = VALUE` for each of its properties; a line `watching`; then one line
//! per change: `+ PATH`, `- PATH`, `~ PATH INTERFACE.PROPERTY: OLD -> NEW`, `+ PATH INTERFACE`,
//! `- PATH INTERFACE`, or what happened to the service. It runs until interrupted, or until it
//! printed `--events N` changes, or for `--seconds S`.

use std::io::Write;
use std::time::{Duration, Instant};

use netmirror_client_cache::{Event, ObjectCache};

type Error = Box<dyn std::error::Error>;

struct Args {
    service: String,
    manager: String,
    session: bool,
    events: Option<usize>,
    until: Option<Instant>,
}

const USAGE: &str =
    "usage: any_service SERVICE [MANAGER_PATH] [--session] [--events N] [--seconds S]";

fn parse_args() -> Result<Args, Error> {
    let mut positional = Vec::new();
    let (mut session, mut events, mut until) = (false, None, None);
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{arg} needs a value"));
        match arg.as_str() {
            "--session" => session = true,
            "--events" => events = Some(value()?.parse()?),
            "--seconds" => until = Some(Instant::now() + Duration::from_secs(value()?.parse()?)),
            option if option.starts_with("--") => {
                return Err(format!("unknown option `{option}`\n{USAGE}").into());
            }
            _ => positional.push(arg),
        }
    }
    let mut positional = positional.into_iter();
    let service = positional.next().ok_or(USAGE)?;
    let manager = positional.next().unwrap_or_else(|| "/".into());
    if positional.next().is_some() {
        return Err(USAGE.into());
    }
    Ok(Args {
        service,
        manager,
        session,
        events,
        until,
    })
}

fn main() {
    // Errors are reported as a message and a failure status, never a panic.
    if let Err(e) = async_io::block_on(run()) {
        eprintln!("any_service: {e}");
        std::process::exit(1);
    }
}

async fn run() -> Result<(), Error> {
    // Written with `writeln!`, so a closed stdout (`| head`) ends the program with an error
    // message instead of a panic.
    let mut out = std::io::stdout().lock();
    let args = parse_args()?;
    let conn = if args.session {
        zbus::Connection::session().await?
    } else {
        zbus::Connection::system().await?
    };
    // Loaded: subscribed to the service's signals, then one GetManagedObjects.
    let mut cache = ObjectCache::builder(args.service.as_str())
        .manager_path(args.manager.as_str())
        .build_loaded(&conn)
        .await?;
    if cache.owner().is_none() {
        writeln!(out, "{} is not on the bus (waiting for it)", args.service)?;
    }
    for object in cache.objects() {
        writeln!(out, "object {}", object.path())?;
        for interface in object.object().interfaces() {
            for (property, value) in interface.properties() {
                writeln!(out, "  {}.{property} = {value}", interface.name())?;
            }
        }
    }
    // The load's own events (every object added, then `Loaded`) are what was just printed.
    cache.take_events();
    writeln!(out, "watching")?;
    let mut printed = 0;
    while args.events.is_none_or(|n| printed < n) {
        let event = match args.until {
            Some(until) => {
                let left = until.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    break;
                }
                match cache.next_event_timeout(left).await {
                    Some(event) => event,
                    None if Instant::now() >= until => break,
                    None => return Err("the connection to the bus closed".into()),
                }
            }
            None => cache
                .next_event()
                .await
                .ok_or("the connection to the bus closed")?,
        };
        match event {
            Event::Added { path } => writeln!(out, "+ {path}")?,
            Event::Removed { path, .. } => writeln!(out, "- {path}")?,
            Event::PropertyChanged {
                path,
                interface,
                property,
                old,
                new,
            } => writeln!(out, "~ {path} {interface}.{property}: {old} -> {new}")?,
            Event::InterfaceAdded { path, interface } => writeln!(out, "+ {path} {interface}")?,
            Event::InterfaceRemoved { path, interface } => writeln!(out, "- {path} {interface}")?,
            Event::OwnerChanged { owner: None } => writeln!(out, "{} left the bus", args.service)?,
            Event::OwnerChanged { owner: Some(owner) } => {
                writeln!(out, "{} is now {owner}", args.service)?;
            }
            Event::LoadFailed(error) => writeln!(out, "loading failed: {error}")?,
            // The consumer fell behind: what follows up to `Resynced` catches it up.
            Event::Overrun { missed } => writeln!(out, "fell behind by {missed} events")?,
            // Loaded, Resynced, Reconciled, Refetched: nothing to show here.
            _ => continue,
        }
        printed += 1;
    }
    Ok(())
}
