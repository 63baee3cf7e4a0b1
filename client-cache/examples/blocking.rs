//! The cache from synchronous code: a [`BlockingCache`] built with its builder (a bounded event
//! channel) runs the async cache on a thread of its own; this program only blocks.
//!
//! ```text
//! cargo run -p netmirror-client-cache --example blocking -- SERVICE [MANAGER_PATH]
//!     [--address ADDRESS] [--events N] [--seconds S]
//! ```
//!
//! The bus is `--address`, else `DBUS_SYSTEM_BUS_ADDRESS`, else the system bus's socket. It
//! prints `N objects` and `object PATH (INTERFACES)` for each, then `watching` and one line per
//! change (`+ PATH`, `- PATH`, `~ PATH INTERFACE.PROPERTY = NEW`), until it printed
//! `--events N` changes, or for `--seconds S` (60 by default).

use std::io::Write;
use std::time::{Duration, Instant};

use netmirror_client_cache::{BlockingCache, Event, ObjectCache};

type Error = Box<dyn std::error::Error>;

/// The system bus's address when `DBUS_SYSTEM_BUS_ADDRESS` is not set.
const SYSTEM_BUS: &str = "unix:path=/run/dbus/system_bus_socket";

const USAGE: &str = "usage: blocking SERVICE [MANAGER_PATH] [--address ADDRESS] [--events N] \
                     [--seconds S]";

struct Args {
    service: String,
    manager: String,
    address: String,
    events: Option<usize>,
    seconds: u64,
}

fn parse_args() -> Result<Args, Error> {
    let mut positional = Vec::new();
    let mut address =
        std::env::var("DBUS_SYSTEM_BUS_ADDRESS").unwrap_or_else(|_| SYSTEM_BUS.into());
    let (mut events, mut seconds) = (None, 60);
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{arg} needs a value"));
        match arg.as_str() {
            "--address" => address = value()?,
            "--events" => events = Some(value()?.parse()?),
            "--seconds" => seconds = value()?.parse()?,
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
        address,
        events,
        seconds,
    })
}

fn main() {
    // Errors are reported as a message and a failure status, never a panic.
    if let Err(e) = run() {
        eprintln!("blocking: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), Error> {
    // Written with `writeln!`, so a closed stdout (`| head`) ends the program with an error
    // message instead of a panic.
    let mut out = std::io::stdout().lock();
    let args = parse_args()?;
    // Returns once the cache is loaded. When the program reads slower than the service
    // changes, 64 events wait in the channel and the cache's own queue takes more; past both,
    // the program gets `Event::Overrun` and then the changes that catch it up (up to
    // `Event::Resynced`): nothing is lost silently.
    let cache = BlockingCache::builder(
        ObjectCache::builder(args.service.as_str()).manager_path(args.manager.as_str()),
    )
    .event_channel(64)
    .connect(&args.address)?;

    // Queries run on the cache's thread, between batches: they see a consistent cache.
    let objects = cache.with(|cache| {
        cache
            .objects()
            .map(|object| {
                let interfaces: Vec<String> = object
                    .object()
                    .interfaces()
                    .map(|interface| interface.name().to_owned())
                    .collect();
                (object.path().to_owned(), interfaces)
            })
            .collect::<Vec<_>>()
    })?;
    writeln!(out, "{} objects", objects.len())?;
    for (path, interfaces) in objects {
        writeln!(out, "object {path} ({})", interfaces.join(", "))?;
    }
    // The load's own events (each object added, then `Loaded`) describe what is printed above.
    while let Some(event) = cache.recv_event(Duration::from_millis(500)) {
        if matches!(event, Event::Loaded) {
            break;
        }
    }
    writeln!(out, "watching")?;

    let until = Instant::now() + Duration::from_secs(args.seconds);
    let mut printed = 0;
    while args.events.is_none_or(|n| printed < n) {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        let Some(event) = cache.recv_event(left) else {
            continue;
        };
        match event {
            Event::Added { path } => writeln!(out, "+ {path}")?,
            Event::Removed { path, .. } => writeln!(out, "- {path}")?,
            Event::PropertyChanged {
                path,
                interface,
                property,
                new,
                ..
            } => writeln!(out, "~ {path} {interface}.{property} = {new}")?,
            Event::Overrun { missed } => writeln!(out, "fell behind by {missed} events")?,
            Event::OwnerChanged { owner } => {
                writeln!(
                    out,
                    "{} owner: {}",
                    args.service,
                    owner.as_deref().unwrap_or("none")
                )?;
            }
            _ => continue,
        }
        printed += 1;
    }
    Ok(())
}
