//! Not an example to copy: the private bus `cargo xtask ci` runs the other examples against
//! (`nm_devices`, `any_service`, `blocking`), built from the `testing` fixtures.
//!
//! `ci_bus lights`: starts a private `dbus-daemon` ([`PrivateBus`]) and serves
//! `org.example.Lights` on it, an ObjectManager at `/org/example/Lights` with the objects
//! `kitchen` (`On` true, `Brightness` 80) and `hall` (`On` false) of interface
//! `org.example.Light`. It prints the bus address as its first line, then obeys one command a
//! line on stdin: `toggle NAME` (flips `On`, with `PropertiesChanged`), `add NAME` (a new light,
//! off), `remove NAME`, each answered `done` (or `error: ...`). It exits when stdin closes.
//!
//! `ci_bus nm` (root): starts the real NetworkManager daemon sandboxed on a private bus
//! ([`NetworkManagerDaemon`], managing the links made in its namespace), prints the bus
//! address, then obeys `veth NAME` (adds a veth pair `NAME`/`NAME-peer` in the daemon's
//! namespace, which the daemon takes over) and `delete NAME`, each answered `done`.
//!
//! `cargo run -p netmirror-client-cache --example ci_bus -- lights`

use std::io::{BufRead, Write};

use netmirror_client_cache::testing::{NetworkManagerDaemon, PrivateBus};

type Error = Box<dyn std::error::Error>;

/// The lights service's bus name, manager path and interface.
const SERVICE: &str = "org.example.Lights";
const MANAGER: &str = "/org/example/Lights";

/// One light.
struct Light {
    on: bool,
    brightness: u32,
}

#[zbus::interface(name = "org.example.Light")]
impl Light {
    #[zbus(property)]
    fn on(&self) -> bool {
        self.on
    }

    #[zbus(property)]
    fn brightness(&self) -> u32 {
        self.brightness
    }
}

fn main() -> Result<(), Error> {
    let mode = std::env::args().nth(1).unwrap_or_default();
    match mode.as_str() {
        "lights" => lights(),
        "nm" => network_manager(),
        _ => Err("usage: ci_bus lights | ci_bus nm".into()),
    }
}

/// Prints `line` and flushes (the reader waits for it).
fn say(line: &str) -> Result<(), Error> {
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{line}")?;
    stdout.flush()?;
    Ok(())
}

/// Runs `command` on every line of stdin, answering `done` or the error, until stdin closes.
fn obey(mut command: impl FnMut(&str, &str) -> Result<(), Error>) -> Result<(), Error> {
    for line in std::io::stdin().lock().lines() {
        let line = line?;
        let (verb, name) = line.trim().split_once(' ').unwrap_or((line.trim(), ""));
        match command(verb, name) {
            Ok(()) => say("done")?,
            Err(e) => say(&format!("error: {e}"))?,
        }
    }
    Ok(())
}

fn lights() -> Result<(), Error> {
    let bus = PrivateBus::start()?;
    let conn = zbus::block_on(async {
        zbus::connection::Builder::address(bus.address())
            .serve_at(
                format!("{MANAGER}/kitchen"),
                Light {
                    on: true,
                    brightness: 80,
                },
            )
            .serve_at(
                format!("{MANAGER}/hall"),
                Light {
                    on: false,
                    brightness: 0,
                },
            )
            .serve_at(MANAGER, zbus::fdo::ObjectManager)
            .name(SERVICE)
            .build()
            .await
    })?;
    say(bus.address())?;
    obey(|verb, name| {
        let path = format!("{MANAGER}/{name}");
        zbus::block_on(async {
            let server = conn.object_server();
            match verb {
                "toggle" => {
                    let light = server.interface::<_, Light>(path.as_str()).await?;
                    let mut state = light.get_mut().await;
                    state.on = !state.on;
                    state.on_changed(light.signal_emitter()).await?;
                }
                "add" => {
                    server
                        .at(
                            path.as_str(),
                            Light {
                                on: false,
                                brightness: 0,
                            },
                        )
                        .await?;
                }
                "remove" => {
                    if !server.remove::<Light, _>(path.as_str()).await? {
                        return Err(format!("no light {path}").into());
                    }
                }
                _ => return Err(format!("unknown command `{verb}`").into()),
            }
            Ok(())
        })
    })
}

fn network_manager() -> Result<(), Error> {
    let nm = NetworkManagerDaemon::builder().manage_devices().start()?;
    say(nm.bus_address())?;
    obey(|verb, name| {
        let mut ip = nm.netns_command("ip");
        match verb {
            "veth" => ip.args(["link", "add", name, "type", "veth", "peer", "name"]),
            "delete" => ip.args(["link", "delete", name]),
            _ => return Err(format!("unknown command `{verb}`").into()),
        };
        if verb == "veth" {
            ip.arg(format!("{name}-peer"));
        }
        let status = ip.status()?;
        if !status.success() {
            return Err(format!("ip {verb} {name}: {status}").into());
        }
        Ok(())
    })
}
