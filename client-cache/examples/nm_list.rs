//! Load NetworkManager's full state (every profile's settings included) and print profiles and
//! devices like `nmcli -t connection show` / `nmcli -t device`: the whole-process comparison
//! with nmcli. The bus is `DBUS_SYSTEM_BUS_ADDRESS` (or the system bus).
//!
//! `cargo run --release -p netmirror-client-cache --example nm_list [connection|device|all]`

use std::io::Write;

use netmirror_client_cache::nm::NmClient;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let what = std::env::args().nth(1).unwrap_or_else(|| "all".into());
    zbus::block_on(async {
        let conn = match std::env::var("DBUS_SYSTEM_BUS_ADDRESS") {
            Ok(addr) => {
                zbus::connection::Builder::address(addr.as_str())
                    .build()
                    .await?
            }
            Err(_) => zbus::Connection::system().await?,
        };
        let nm = NmClient::new(&conn).await?;
        let mut out = std::io::BufWriter::new(std::io::stdout().lock());
        if what == "connection" || what == "all" {
            for c in nm.connections() {
                let device = nm
                    .active_connections()
                    .into_iter()
                    .find(|a| a.connection().is_some_and(|p| p.path() == c.path()))
                    .and_then(|a| a.devices().first().and_then(|d| d.interface()))
                    .unwrap_or_default();
                writeln!(
                    out,
                    "{}:{}:{}:{}",
                    c.id(),
                    c.uuid(),
                    c.connection_type(),
                    device
                )?;
            }
        }
        if what == "device" || what == "all" {
            for d in nm.devices() {
                let con = d
                    .active_connection()
                    .and_then(|a| a.id())
                    .unwrap_or_default();
                writeln!(
                    out,
                    "{}:{}:{}:{}",
                    d.interface().unwrap_or_default(),
                    d.type_name().unwrap_or_default(),
                    d.state_text().unwrap_or_default(),
                    con
                )?;
            }
        }
        out.flush()?;
        Ok::<_, Box<dyn std::error::Error>>(())
    })
}
