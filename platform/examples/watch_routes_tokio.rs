//! `watch_routes` on tokio: loads a namespace's links, addresses, routes and rules off the
//! executor, prints how many there are, then prints each route change from the cache's
//! `Stream` of events, for a while.
//!
//! ```text
//! cargo run -p netmirror-platform --features tokio --example watch_routes_tokio -- \
//!     [--netns NAME] [--seconds N]
//! ```
#![allow(clippy::print_stdout)] // An example talks to its user.

use std::error::Error;
use std::time::Duration;

use futures_util::StreamExt;
use netmirror_platform::{Change, Config, Event, Netns, TokioCache};

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let (netns, seconds) = args()?;
    let mut cache = TokioCache::open(Config::new().with_netns(netns)).await?;
    if let Some(cache) = cache.get() {
        println!(
            "{} links, {} addresses, {} routes, {} rules",
            cache.links().count(),
            cache.addresses().count(),
            cache.routes().count(),
            cache.rules().count(),
        );
    }

    let stop = tokio::time::sleep(Duration::from_secs(seconds));
    tokio::pin!(stop);
    loop {
        tokio::select! {
            () = &mut stop => break,
            // Dropping an unfinished `next()` loses nothing: the next call goes on.
            event = cache.next() => match event {
                Some(event) => print_event(&event?),
                None => break,
            },
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
