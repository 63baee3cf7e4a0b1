//! Loads a namespace's links, addresses, routes and rules, prints how many there are, then
//! prints each route change as `ip monitor route` would, for a while.
//!
//! ```text
//! cargo run -p netmirror-platform --example watch_routes -- [--netns NAME] [--seconds N]
//! ```
#![allow(clippy::print_stdout)] // An example talks to its user.

use std::error::Error;
use std::time::{Duration, Instant};

use netmirror_platform::{Cache, Change, Config, Event, Netns};

fn main() -> Result<(), Box<dyn Error>> {
    let (netns, seconds) = args()?;
    let mut cache = Cache::open(Config::new().with_netns(netns))?;
    println!(
        "{} links, {} addresses, {} routes, {} rules",
        cache.links().count(),
        cache.addresses().count(),
        cache.routes().count(),
        cache.rules().count(),
    );

    let until = Instant::now() + Duration::from_secs(seconds);
    let mut events = Vec::new();
    // `poll` waits for the kernel at most until `until`, then hands over what it applied.
    while let Some(left) = until.checked_duration_since(Instant::now()) {
        cache.poll(Some(left), &mut events)?;
        for event in events.drain(..) {
            print_event(&event);
        }
    }
    Ok(())
}

/// Prints route changes (`+` added, `-` removed, `~` replaced) and the cache's own news.
fn print_event(event: &Event) {
    match event {
        Event::Route(Change::Added(route)) => println!("+ {route}"),
        Event::Route(Change::Removed(route)) => println!("- {route}"),
        Event::Route(Change::Replaced { new, .. }) => println!("~ {new}"),
        Event::Overrun => println!("! events lost: a resync follows"),
        Event::Resynced { n_changes, .. } => println!("! resynced, {n_changes} changes found"),
        // Links, addresses, rules and nexthops change too.
        _ => {}
    }
}

/// `--netns NAME` (default: this process's namespace) and `--seconds N` (default 10).
fn args() -> Result<(Netns, u64), Box<dyn Error>> {
    let (mut netns, mut seconds) = (Netns::Current, 10);
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let value = args.next().ok_or(format!("{arg} needs a value"))?;
        match arg.as_str() {
            "--netns" => netns = Netns::name(value),
            "--seconds" => seconds = value.parse()?,
            _ => return Err(format!("unknown argument {arg}").into()),
        }
    }
    Ok((netns, seconds))
}
