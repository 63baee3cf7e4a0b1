//! List NetworkManager's devices with their typed state, then print each state change as the
//! daemon makes it, on a Tokio runtime.
//!
//! ```text
//! cargo run -p netmirror-client-cache --example nm_devices [-- --events N] [--seconds S]
//! ```
//!
//! The bus is the system bus (`DBUS_SYSTEM_BUS_ADDRESS` when set, as for `nmcli`). Output: one
//! line `device IFACE TYPE STATE` per device (as `nmcli -t -f DEVICE,TYPE,STATE device` shows
//! it), a line `watching`, then one line per change:
//! `IFACE: OLD -> NEW (REASON)` for a state change, `added IFACE` / `removed PATH` for a device.
//! It runs until interrupted, or until it printed `--events N` changes, or for `--seconds S`.

use std::collections::HashMap;
use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};

use netmirror_client_cache::nm::{Device, NmClient, NmEvent};

type Error = Box<dyn std::error::Error>;

/// When to stop watching: after so many changes, or at a deadline, or never.
#[derive(Default)]
struct Bounds {
    events: Option<usize>,
    until: Option<Instant>,
}

fn parse_args() -> Result<Bounds, Error> {
    let mut bounds = Bounds::default();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{arg} needs a value"));
        match arg.as_str() {
            "--events" => bounds.events = Some(value()?.parse()?),
            "--seconds" => {
                bounds.until = Some(Instant::now() + Duration::from_secs(value()?.parse()?));
            }
            _ => {
                return Err(format!("unknown argument `{arg}`: [--events N] [--seconds S]").into());
            }
        }
    }
    Ok(bounds)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    // Errors are reported as a message and a failure status, never a panic.
    if let Err(e) = run().await {
        eprintln!("nm_devices: {e}");
        std::process::exit(1);
    }
}

async fn run() -> Result<(), Error> {
    // Written with `writeln!`, so a closed stdout (`| head`) ends the program with an error
    // message instead of a panic.
    let mut out = std::io::stdout().lock();
    let bounds = parse_args()?;
    let conn = zbus::Connection::system().await?;
    let mut nm = NmClient::new(&conn).await?;
    if !nm.is_running() {
        writeln!(out, "NetworkManager is not running (waiting for it)")?;
    }
    // Events name devices by path: keep each one's interface name, to print it when it goes.
    let mut names: HashMap<Arc<str>, String> = HashMap::new();
    for device in nm.devices() {
        writeln!(
            out,
            "device {} {} {}",
            or_dashes(device.interface()),
            or_dashes(device.type_name()),
            // The typed state (`device.state()`, a `DeviceState`) as nmcli words it, with
            // `(externally)` where NetworkManager only follows someone else's configuration.
            or_dashes(device.state_text())
        )?;
        let name = device
            .interface()
            .map_or_else(|| device.path().to_owned(), str::to_owned);
        names.insert(device.object().path_arc(), name);
    }
    // The load's own events (each object added, then `Loaded`) describe what is printed above.
    nm.cache_mut().take_events();
    writeln!(out, "watching")?;
    let mut printed = 0;
    while bounds.events.is_none_or(|n| printed < n) {
        let event = match bounds.until {
            Some(until) => {
                let left = until.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    break;
                }
                match nm.next_event_timeout(left).await {
                    Some(event) => event,
                    None if Instant::now() >= until => break,
                    None => return Err("the connection to the bus closed".into()),
                }
            }
            None => nm
                .next_event()
                .await
                .ok_or("the connection to the bus closed")?,
        };
        // A device's interface name: from the cache, or as it was when last seen there (a
        // removed device is gone from the cache), or its path.
        let name = |path: &Arc<str>, names: &HashMap<Arc<str>, String>| {
            device_at(&nm, path)
                .and_then(|device| device.interface().map(str::to_owned))
                .or_else(|| names.get(path).cloned())
                .unwrap_or_else(|| path.to_string())
        };
        match event {
            NmEvent::DeviceAdded(path) => {
                let Some(device) = device_at(&nm, &path) else {
                    continue;
                };
                // The state changes below come from `StateReason`, which NetworkManager may
                // send in another message than `State`: the state shown here is
                // `StateReason`'s too, so that the next change starts from it.
                let state = device.state_reason().map(|(state, _)| state);
                let iface = device.interface().map(str::to_owned);
                writeln!(
                    out,
                    "added {} {}",
                    or_dashes(iface.as_deref()),
                    or_dashes(state)
                )?;
                names.insert(path.clone(), iface.unwrap_or_else(|| path.to_string()));
            }
            NmEvent::DeviceRemoved(path) => {
                writeln!(out, "removed {}", name(&path, &names))?;
                names.remove(&path);
            }
            NmEvent::DeviceStateChanged {
                path,
                old,
                new,
                reason,
            } => writeln!(out, "{}: {old} -> {new} ({reason})", name(&path, &names))?,
            NmEvent::OwnerChanged(None) => writeln!(out, "NetworkManager left the bus")?,
            NmEvent::OwnerChanged(Some(_)) => writeln!(out, "NetworkManager is back")?,
            // Profiles, active connections and other properties: not this example's topic.
            _ => continue,
        }
        printed += 1;
    }
    Ok(())
}

/// A property's value, or `--` (as nmcli prints it) when the daemon has not sent it.
fn or_dashes<T: std::fmt::Display>(value: Option<T>) -> String {
    value.map_or_else(|| "--".to_owned(), |value| value.to_string())
}

/// The device at `path`, looked up by its path: the manager's `Devices` list may name a new
/// device only in a later message than the one that added it.
fn device_at<'a>(nm: &'a NmClient, path: &str) -> Option<Device<'a>> {
    nm.cache().object(path).and_then(Device::new)
}
