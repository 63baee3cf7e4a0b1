//! `nm general|device|connection|active|monitor`: NetworkManager through
//! `netmirror-client-cache`'s typed layer, with nmcli's column names and values.
//!
//! `nm device IFACE` loads everything: nmcli's sections follow the device's references.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use netmirror_client_cache::nm::{
    self as nmc, ActiveConnection, Device, DeviceCapabilities, DeviceInterfaceFlags, NmClient,
    NmEvent, Profile, RadioFlags,
};
use netmirror_client_cache::{CacheBuilder, Event};

use crate::args::{Bus, KernelArgs, NmAction, NmArgs};
use crate::bus;
use crate::failure::{self, Failure};
use crate::pipe::{self, Pipe};
use crate::render::{self, Cell, EventKind, Field, ModalCell, Printer, Prop, Table, TypedCell};

/// Columns of `nm general`, as `nmcli general` names them, in the order of its `-f all`
/// (METERED, which nmcli does not show, last).
pub(crate) const GENERAL_FIELDS: &[Field] = &[
    Field::extra("RUNNING", "running"),
    Field::extra("VERSION", "version"),
    Field::common("STATE", "state"),
    Field::extra("STARTUP", "startup"),
    Field::common("CONNECTIVITY", "connectivity"),
    Field::extra("NETWORKING", "networking"),
    Field::common("WIFI-HW", "wifi_hw"),
    Field::common("WIFI", "wifi"),
    Field::common("WWAN-HW", "wwan_hw"),
    Field::common("WWAN", "wwan"),
    Field::extra("METERED", "metered"),
];

/// Columns of `nm device`, as `nmcli device` names them.
pub(crate) const DEVICE_FIELDS: &[Field] = &[
    Field::common("DEVICE", "device"),
    Field::common("TYPE", "type"),
    Field::common("STATE", "state"),
    Field::extra("IP4-CONNECTIVITY", "ip4_connectivity"),
    Field::extra("IP6-CONNECTIVITY", "ip6_connectivity"),
    Field::extra("DBUS-PATH", "dbus_path"),
    Field::common("CONNECTION", "connection"),
    Field::extra("CON-UUID", "con_uuid"),
    Field::extra("CON-PATH", "con_path"),
    // netmirror's own, after nmcli's.
    Field::extra("IFINDEX", "ifindex"),
    Field::extra("HWADDR", "hwaddr"),
    Field::extra("MTU", "mtu"),
    Field::extra("DRIVER", "driver"),
    Field::extra("MANAGED", "managed"),
    Field::extra("AUTOCONNECT", "autoconnect"),
    Field::extra("REAL", "real"),
];

/// Columns of `nm connection`, as `nmcli connection` names them.
pub(crate) const CONNECTION_FIELDS: &[Field] = &[
    Field::common("NAME", "name"),
    Field::common("UUID", "uuid"),
    Field::common("TYPE", "type"),
    Field::common("DEVICE", "device"),
    Field::extra("INTERFACE", "interface_name"),
    Field::extra("ACTIVE", "active"),
    Field::extra("FILENAME", "filename"),
    Field::extra("DBUS-PATH", "dbus_path"),
];

/// Columns of `nm active`: by default those of `nmcli connection show --active`; the others
/// as its GENERAL section names them (DBUS-PATH the active connection's path, CON-PATH its
/// profile's: `nmcli connection show --active` calls them ACTIVE-PATH and DBUS-PATH).
pub(crate) const ACTIVE_FIELDS: &[Field] = &[
    Field::common("NAME", "name"),
    Field::common("UUID", "uuid"),
    Field::common("TYPE", "type"),
    Field::common("DEVICE", "device"),
    Field::extra("STATE", "state"),
    Field::extra("DEFAULT", "default"),
    Field::extra("DEFAULT6", "default6"),
    Field::extra("VPN", "vpn"),
    Field::extra("DBUS-PATH", "dbus_path"),
    Field::extra("CON-PATH", "con_path"),
];

/// Columns of a property change that is not about a device, profile or active connection.
const PROPERTY_FIELDS: &[Field] = &[
    Field::common("PATH", "path"),
    Field::common("INTERFACE", "interface"),
    Field::common("PROPERTY", "property"),
    Field::common("VALUE", "value"),
];

/// Runs `nm ...`.
pub(crate) fn run(
    printer: &mut Printer,
    bus: &Bus,
    timeout: Duration,
    kernel: &KernelArgs,
    args: &NmArgs,
) -> anyhow::Result<()> {
    if let Some(done) = crate::nm_actions::run(printer, bus, args) {
        return done;
    }
    zbus::block_on(async {
        let conn = bus::connect(bus).await?;
        match &args.action {
            None | Some(NmAction::General) => {
                let nm = load(&conn, bus, lean(timeout)).await?;
                let printed = printer.table(&general_table(&nm));
                finish(printer, printed)
            }
            Some(NmAction::Device { iface: None, .. }) => {
                let mut nm = load(&conn, bus, lean(timeout)).await?;
                let shared = SharedProfiles::read(&mut nm).await?;
                let printed = printer.table(&device_table(&nm.devices(), &shared));
                finish(printer, printed)
            }
            Some(NmAction::Device {
                iface: Some(iface),
                kernel: with_kernel,
                ..
            }) => {
                // Everything is loaded, not only the device (`NmClient::device_by_iface`):
                // nmcli's sections follow the device's references (active connection,
                // profile, IP and DHCP configurations, available profiles).
                let nm = load(&conn, bus, full(timeout)).await?;
                // Realized devices only, as nmcli: a bond or VLAN profile gives the daemon an
                // unrealized placeholder device (in `AllDevices`), which `nmcli device show`
                // does not find either.
                let device = nm
                    .devices()
                    .into_iter()
                    .find(|device| device.interface() == Some(iface.as_str()))
                    .ok_or_else(|| match nm.device_by_name(iface) {
                        Some(_) => anyhow::anyhow!(
                            "device '{iface}' not found (NetworkManager has it only as an \
                             unrealized placeholder for a profile, not in the kernel)"
                        ),
                        None => anyhow::anyhow!("device '{iface}' not found"),
                    })?;
                let mut props = device_properties(&device);
                if *with_kernel {
                    props.extend(kernel_section(kernel, &device)?);
                }
                let printed = printer.props(&props);
                finish(printer, printed)
            }
            Some(NmAction::Connection { id: None, .. }) => {
                let nm = load(&conn, bus, listing(timeout)).await?;
                let printed = printer.table(&connection_table(&nm));
                finish(printer, printed)
            }
            Some(NmAction::Connection {
                id: Some(id),
                show_secrets,
                ..
            }) => {
                let mut nm = load(&conn, bus, full(timeout)).await?;
                let (path, settings) = nm
                    .connections()
                    .into_iter()
                    .find(|p| p.uuid() == id.as_str() || p.id() == id.as_str())
                    .map(|p| (p.path().to_owned(), setting_names(&p)))
                    .ok_or_else(|| anyhow::anyhow!("no connection profile '{id}'"))?;
                let secrets = match show_secrets {
                    true => Some(profile_secrets(&mut nm, id, &path, &settings).await?),
                    false => None,
                };
                // Found again: reading the secrets needed the client.
                let profile = nm
                    .connections()
                    .into_iter()
                    .find(|p| p.path() == path)
                    .ok_or_else(|| anyhow::anyhow!("no connection profile '{id}'"))?;
                let printed = printer.props(&profile_properties(&nm, &profile, secrets.as_ref()));
                finish(printer, printed)
            }
            Some(NmAction::Active) => {
                let mut nm = load(&conn, bus, lean(timeout)).await?;
                let shared = SharedProfiles::read(&mut nm).await?;
                let printed = printer.table(&active_table(&nm.active_connections(), &shared));
                finish(printer, printed)
            }
            Some(NmAction::Monitor) => monitor(printer, &conn, bus, timeout).await,
            Some(
                NmAction::Networking { .. } | NmAction::Radio { .. } | NmAction::Checkpoint { .. },
            ) => Err(anyhow::anyhow!("a changing command reached the views")),
        }
    })
}

/// The name used in messages.
const SERVICE_NAME: &str = "NetworkManager";

/// Ends the process once a view is printed (flushed), with the status `printed` calls for.
/// Returning would free the cache object by object and end the runtime while the connection
/// lives (its driving handed to a new thread): about a sixth of a view's CPU, for nothing.
fn finish(printer: &mut Printer, printed: anyhow::Result<()>) -> ! {
    let done = printed.and_then(|()| printer.flush());
    let status = match &done {
        Ok(()) => 0,
        Err(err) => failure::report_status(err),
    };
    std::process::exit(i32::from(status))
}

/// Everything, the profiles' settings too: for the views that show profiles.
fn full(timeout: Duration) -> CacheBuilder {
    NmClient::builder().timeout(timeout)
}

/// Everything, of the profiles' settings only those a list of them shows and sorts by
/// ([`nmc::LISTED_SETTINGS`]): for `nm connection`. With 551 profiles their whole settings
/// are about a fifth of the command's peak memory.
fn listing(timeout: Duration) -> CacheBuilder {
    NmClient::builder_for_listing().timeout(timeout)
}

/// Everything but the profiles' settings: for the views that show none (the manager, devices,
/// active connections). With 551 profiles their decoded settings are most of a full load's
/// memory; the few settings those views rank by come from [`SharedProfiles::read`].
fn lean(timeout: Duration) -> CacheBuilder {
    NmClient::builder_without_settings().timeout(timeout)
}

/// The profiles of the active connections whose `ipv4.method` or `ipv6.method` is `shared`:
/// what nmcli's orders of devices and active connections read of the profiles
/// ([`nmc::cmp_active_by`]), for a cache loaded without the profiles' settings ([`lean`]).
pub(crate) struct SharedProfiles(HashSet<(String, &'static str)>);

impl SharedProfiles {
    /// Asks the daemon for the settings of each active connection's profile (`GetSettings`,
    /// one by one: there are few). A profile whose settings the daemon refuses (one hidden from
    /// the user) counts as not shared, as in a full cache, where it has no settings; so does
    /// one whose call fails otherwise, with a warning, as a full cache's failed fetch.
    pub(crate) async fn read(nm: &mut NmClient) -> anyhow::Result<Self> {
        let mut paths: Vec<String> = nm
            .active_connections()
            .iter()
            .filter_map(|active| active.connection())
            .map(|profile| profile.path().to_owned())
            .collect();
        paths.sort_unstable();
        paths.dedup();
        let mut shared = HashSet::new();
        for path in paths {
            let settings = match nm.settings_at(&path).await {
                Ok(settings) => settings,
                Err(err) => {
                    if !is_denied(&err) {
                        tracing::warn!("fetch for {path}: {err}");
                    }
                    continue;
                }
            };
            for setting in ["ipv4", "ipv6"] {
                let method = settings.get(setting).and_then(|props| props.get("method"));
                if method.is_some_and(
                    |v| matches!(&**v, zbus::Variant::Str(s) if s.as_str() == "shared"),
                ) {
                    shared.insert((path.clone(), setting));
                }
            }
        }
        Ok(Self(shared))
    }

    /// Whether the profile of `active` has `setting.method` `shared`.
    fn shared(&self, active: &ActiveConnection<'_>, setting: &str) -> bool {
        active.connection().is_some_and(|profile| {
            self.0
                .iter()
                .any(|(path, s)| path == profile.path() && *s == setting)
        })
    }
}

/// Whether the daemon refused a call for want of permission.
fn is_denied(err: &netmirror_client_cache::Error) -> bool {
    match err {
        netmirror_client_cache::Error::NotAuthorized { .. } => true,
        netmirror_client_cache::Error::Call(call) => call
            .error_name()
            .is_some_and(|name| name.ends_with(".PermissionDenied")),
        _ => false,
    }
}

/// Loads NetworkManager's state; its absence is an error.
async fn load(
    conn: &zbus::Connection,
    bus: &Bus,
    builder: CacheBuilder,
) -> anyhow::Result<NmClient> {
    let progress = crate::progress::Progress::start("loading NetworkManager");
    let nm = NmClient::from_builder(conn, builder)
        .await
        .map_err(|err| bus::explain(err, bus, SERVICE_NAME))?;
    drop(progress);
    require_running(&nm, bus)?;
    Ok(nm)
}

fn require_running(nm: &NmClient, bus: &Bus) -> anyhow::Result<()> {
    if nm.is_running() {
        Ok(())
    } else {
        Err(Failure::ServiceAbsent {
            service: SERVICE_NAME.to_owned(),
            bus: bus.to_string(),
        }
        .into())
    }
}

fn enabled(on: bool) -> Cell {
    Cell::from(if on { "enabled" } else { "disabled" })
}

/// A text the daemon sent; `--` when it sent none or an empty one, as nmcli shows both.
fn text(value: Option<&str>) -> Cell {
    match value {
        Some(value) if !value.is_empty() => Cell::from(value.to_owned()),
        _ => Cell::Null,
    }
}

/// A value the daemon sent; `--` when it sent none.
fn opt<T: Into<Cell>>(value: Option<T>) -> Cell {
    value.map_or(Cell::Null, Into::into)
}

/// A typed value by the name nmcli gives it; `--` when the daemon sent none.
fn named<T: std::fmt::Display>(value: Option<T>) -> Cell {
    value.map_or(Cell::Null, |value| value.to_string().into())
}

/// WIFI-HW or WWAN-HW as nmcli shows it: `missing` when the daemon says the radio does not
/// exist (`RadioFlags`, NetworkManager 1.38 and later), else whether rfkill lets it on.
fn radio_hw(flags: Option<RadioFlags>, radio: RadioFlags, hw_enabled: Option<bool>) -> Cell {
    if flags.is_some_and(|flags| !flags.contains(radio)) {
        Cell::from("missing")
    } else {
        hw_enabled.map_or(Cell::Null, enabled)
    }
}

/// The one row of `nm general`.
pub(crate) fn general_table(nm: &NmClient) -> Table {
    let mut table = Table::new(GENERAL_FIELDS);
    if let Some(manager) = nm.manager() {
        // A flag the daemon did not send, or sent with the wrong type (rejected, with a
        // warning), is shown as missing, not as "disabled".
        let flag_cell = |on: Option<bool>| on.map_or(Cell::Null, enabled);
        // RUNNING and STARTUP read as nmcli's words, booleans in JSON.
        let word = |on: bool, yes: &str, no: &str| {
            Cell::from(TypedCell {
                text: (if on { yes } else { no }).to_owned(),
                json: serde_json::Value::Bool(on),
            })
        };
        table.push(vec![
            word(nm.is_running(), "running", "not running"),
            text(manager.version()),
            named(manager.state()),
            manager
                .startup()
                .map_or(Cell::Null, |on| word(on, "starting", "started")),
            named(manager.connectivity()),
            flag_cell(manager.networking_enabled()),
            radio_hw(
                manager.radio_flags(),
                RadioFlags::WLAN_AVAILABLE,
                manager.wireless_hardware_enabled(),
            ),
            flag_cell(manager.wireless_enabled()),
            radio_hw(
                manager.radio_flags(),
                RadioFlags::WWAN_AVAILABLE,
                manager.wwan_hardware_enabled(),
            ),
            flag_cell(manager.wwan_enabled()),
            named(manager.metered()),
        ]);
    }
    table
}

/// A device's row.
fn device_row(device: &Device<'_>) -> Vec<Cell> {
    let active = device.active_connection();
    vec![
        text(device.interface()),
        opt(device.type_name()),
        opt(device.state_text()),
        named(device.ip4_connectivity()),
        named(device.ip6_connectivity()),
        device.path().to_owned().into(),
        text(active.and_then(|active| active.id())),
        text(active.and_then(|active| active.uuid())),
        active.map_or(Cell::Null, |active| active.path().to_owned().into()),
        // NetworkManager's D-Bus API has no interface index (libnm reads it from the
        // kernel's netlink, which is not on the bus): `--`, not a made-up 0.
        Cell::Null,
        text(device.hw_address()),
        opt(device.mtu()),
        text(device.driver()),
        opt(device.managed()),
        opt(device.autoconnect()),
        opt(device.real()),
    ]
}

/// `nm device`: the realized devices, in nmcli's order.
pub(crate) fn device_table(devices: &[Device<'_>], shared: &SharedProfiles) -> Table {
    let mut devices = devices.to_vec();
    devices.sort_by(|a, b| {
        nmc::cmp_devices_by(a, b, &|active, setting| shared.shared(active, setting))
    });
    let mut table = Table::new(DEVICE_FIELDS);
    for device in &devices {
        table.push(device_row(device));
    }
    table
}

/// `yes`/`no` as nmcli's properties show a flag.
fn yes_no(on: Option<bool>) -> Cell {
    on.map_or(Cell::Null, Cell::Bool)
}

/// `N (name)`, as nmcli shows a state, reason or connectivity in `device show`.
fn numbered<T: Copy + Into<u32> + std::fmt::Display>(value: Option<T>) -> Cell {
    match value {
        Some(value) => format!("{} ({value})", value.into()).into(),
        None => Cell::Null,
    }
}

/// `SECTION.FIELD[1]`, `[2]`... for each item (nothing when there is none).
fn indexed(
    props: &mut Vec<Prop>,
    name: &str,
    items: impl IntoIterator<Item = String>,
    common: bool,
) {
    for (idx, item) in items.into_iter().enumerate() {
        props.push(if common {
            Prop::common(format!("{name}[{}]", idx + 1), item.into())
        } else {
            Prop::extra(format!("{name}[{}]", idx + 1), item.into())
        });
    }
}

/// A route as nmcli shows it: `dst = 198.51.100.0/24, nh = 192.0.2.254, mt = 50`, then any
/// other attribute as `name=value`.
fn route_text(route: &nmc::IpRoute, ipv6: bool) -> String {
    let none = if ipv6 { "::" } else { "0.0.0.0" };
    let mut text = format!(
        "dst = {}/{}, nh = {}",
        route.dest,
        route.prefix,
        route.next_hop.as_deref().unwrap_or(none)
    );
    if let Some(metric) = route.metric {
        text.push_str(&format!(", mt = {metric}"));
    }
    for (name, value) in &route.attributes {
        text.push_str(&format!(", {name}={}", bus::cell(value).text()));
    }
    text
}

/// What an IP4 or IP6 section shows.
struct IpSection<'a> {
    /// `IP4` or `IP6`.
    name: &'static str,
    ipv6: bool,
    addresses: Vec<String>,
    gateway: Option<&'a str>,
    routes: Vec<nmc::IpRoute>,
    dns: Vec<String>,
    domains: Option<&'a [Box<str>]>,
    searches: Option<&'a [Box<str>]>,
    wins: Vec<String>,
}

/// The IP4 or IP6 section of a device or an active connection.
fn ip_section(props: &mut Vec<Prop>, ip: IpSection<'_>) {
    let section = ip.name;
    indexed(props, &format!("{section}.ADDRESS"), ip.addresses, true);
    props.push(Prop::common(format!("{section}.GATEWAY"), text(ip.gateway)));
    indexed(
        props,
        &format!("{section}.ROUTE"),
        ip.routes.iter().map(|r| route_text(r, ip.ipv6)),
        true,
    );
    indexed(props, &format!("{section}.DNS"), ip.dns, true);
    indexed(
        props,
        &format!("{section}.DOMAIN"),
        ip.domains.unwrap_or_default().iter().map(|d| d.to_string()),
        true,
    );
    indexed(
        props,
        &format!("{section}.SEARCHES"),
        ip.searches
            .unwrap_or_default()
            .iter()
            .map(|d| d.to_string()),
        true,
    );
    indexed(props, &format!("{section}.WINS"), ip.wins, true);
}

/// The IP4, DHCP4, IP6 and DHCP6 sections of a device or an active connection (nmcli shows
/// the DHCP sections by default for a connection, only when asked for a device).
fn ip_sections(
    props: &mut Vec<Prop>,
    dhcp_common: bool,
    ip4: Option<nmc::Ip4Config<'_>>,
    dhcp4: Option<nmc::Dhcp4Config<'_>>,
    ip6: Option<nmc::Ip6Config<'_>>,
    dhcp6: Option<nmc::Dhcp6Config<'_>>,
) {
    if let Some(ip4) = ip4 {
        ip_section(
            props,
            IpSection {
                name: "IP4",
                ipv6: false,
                addresses: ip4.addresses(),
                gateway: ip4.gateway(),
                routes: ip4.routes(),
                dns: ip4.nameservers(),
                domains: ip4.domains(),
                searches: ip4.searches(),
                wins: ip4.wins_servers(),
            },
        );
    }
    if let Some(dhcp4) = dhcp4 {
        dhcp_section(props, "DHCP4", dhcp4.options(), dhcp_common);
    }
    if let Some(ip6) = ip6 {
        ip_section(
            props,
            IpSection {
                name: "IP6",
                ipv6: true,
                addresses: ip6.addresses(),
                gateway: ip6.gateway(),
                routes: ip6.routes(),
                dns: ip6.nameservers(),
                domains: ip6.domains(),
                searches: ip6.searches(),
                wins: Vec::new(),
            },
        );
    }
    if let Some(dhcp6) = dhcp6 {
        dhcp_section(props, "DHCP6", dhcp6.options(), dhcp_common);
    }
}

/// `DHCP4.OPTION[n]: name = value`, sorted by name as nmcli sorts them.
fn dhcp_section(
    props: &mut Vec<Prop>,
    section: &str,
    options: Option<&netmirror_client_cache::Dict>,
    common: bool,
) {
    let mut options: Vec<(String, String)> = match options {
        Some(dict) => dict
            .entries
            .iter()
            .filter_map(|(k, v)| {
                let value = v.unwrap_variant();
                let value = match value.as_str() {
                    Some(s) => s.to_owned(),
                    None => bus::cell(value).text().into_owned(),
                };
                Some((k.as_str()?.to_owned(), value))
            })
            .collect(),
        None => Vec::new(),
    };
    options.sort();
    indexed(
        props,
        &format!("{section}.OPTION"),
        options.into_iter().map(|(k, v)| format!("{k} = {v}")),
        common,
    );
}

/// Whether libnm, in this process's place, finds no vendor and no product for interface
/// `iface` (nmcli's `GENERAL.VENDOR`, `GENERAL.PRODUCT`: not on the bus; libnm reads them
/// from udev's database for the interface of that name in the client's own namespace). A
/// virtual interface (no `device` link in sysfs: veth, bridge, bond, vlan, lo) has no
/// hardware database entry, and a name this namespace does not have (a daemon in another
/// namespace) has no udev device at all: nmcli shows `--` for both. A hardware device's
/// vendor and product are left out: libnm shortens udev's strings by rules
/// (`nm_utils_fixup_vendor_string`) that netmirror does not reproduce.
fn has_no_udev_vendor(iface: &str) -> bool {
    if iface.is_empty() || iface.contains('/') || iface == "." || iface == ".." {
        return false;
    }
    let dir = std::path::Path::new("/sys/class/net").join(iface);
    !dir.exists() || !dir.join("device").exists()
}

/// `nm device IFACE`: one device, as `nmcli device show` names its properties, in its order:
/// the common ones by default, every section with `--fields all`.
fn device_properties(device: &Device<'_>) -> Vec<Prop> {
    let active = device.active_connection();
    let reason = device.state_reason().map(|(_, reason)| reason);
    let caps = device.capabilities();
    let flags = device.interface_flags();
    let mut props = vec![
        Prop::common("GENERAL.DEVICE", text(device.interface())),
        Prop::common("GENERAL.TYPE", opt(device.type_name())),
        Prop::extra("GENERAL.NM-TYPE", Cell::opt_text(device.nm_type())),
        Prop::extra("GENERAL.DBUS-PATH", device.path().to_owned().into()),
    ];
    if device.interface().is_some_and(has_no_udev_vendor) {
        props.push(Prop::extra("GENERAL.VENDOR", Cell::Null));
        props.push(Prop::extra("GENERAL.PRODUCT", Cell::Null));
    }
    props.extend([
        Prop::extra("GENERAL.DRIVER", text(device.driver())),
        Prop::extra("GENERAL.DRIVER-VERSION", text(device.driver_version())),
        Prop::extra("GENERAL.FIRMWARE-VERSION", text(device.firmware_version())),
        Prop::common("GENERAL.HWADDR", text(device.hw_address())),
        Prop::common("GENERAL.MTU", opt(device.mtu())),
        Prop::common(
            "GENERAL.STATE",
            match (device.state(), device.state_text()) {
                (Some(state), Some(name)) => format!("{} ({name})", state.to_u32()).into(),
                _ => Cell::Null,
            },
        ),
        Prop::extra("GENERAL.REASON", numbered(reason)),
        Prop::extra(
            "GENERAL.IP4-CONNECTIVITY",
            numbered(device.ip4_connectivity()),
        ),
        Prop::extra(
            "GENERAL.IP6-CONNECTIVITY",
            numbered(device.ip6_connectivity()),
        ),
        Prop::extra("GENERAL.UDI", text(device.udi())),
        Prop::extra("GENERAL.PATH", text(device.path_())),
        Prop::extra("GENERAL.IP-IFACE", text(device.ip_interface())),
        Prop::extra(
            "GENERAL.IS-SOFTWARE",
            yes_no(caps.map(|caps| caps.contains(DeviceCapabilities::IS_SOFTWARE))),
        ),
        Prop::extra("GENERAL.NM-MANAGED", yes_no(device.managed())),
        Prop::extra("GENERAL.AUTOCONNECT", yes_no(device.autoconnect())),
        Prop::extra(
            "GENERAL.FIRMWARE-MISSING",
            yes_no(device.firmware_missing()),
        ),
        Prop::extra(
            "GENERAL.NM-PLUGIN-MISSING",
            yes_no(device.nm_plugin_missing()),
        ),
        Prop::extra("GENERAL.PHYS-PORT-ID", text(device.physical_port_id())),
        Prop::common(
            "GENERAL.CONNECTION",
            text(active.and_then(|active| active.id())),
        ),
        Prop::extra(
            "GENERAL.CON-UUID",
            text(active.and_then(|active| active.uuid())),
        ),
        Prop::common(
            "GENERAL.CON-PATH",
            active.map_or(Cell::Null, |active| active.path().to_owned().into()),
        ),
        Prop::extra("GENERAL.METERED", named(device.metered())),
        Prop::extra(
            "CAPABILITIES.CARRIER-DETECT",
            yes_no(caps.map(|caps| caps.contains(DeviceCapabilities::CARRIER_DETECT))),
        ),
        Prop::extra(
            "CAPABILITIES.SPEED",
            match device.speed() {
                Some(speed) if speed > 0 => format!("{speed} Mb/s").into(),
                _ => "unknown".into(),
            },
        ),
        Prop::extra(
            "CAPABILITIES.IS-SOFTWARE",
            yes_no(caps.map(|caps| caps.contains(DeviceCapabilities::IS_SOFTWARE))),
        ),
        Prop::extra(
            "CAPABILITIES.SRIOV",
            yes_no(caps.map(|caps| caps.contains(DeviceCapabilities::SRIOV))),
        ),
        Prop::extra(
            "INTERFACE-FLAGS.UP",
            yes_no(flags.map(|flags| flags.contains(DeviceInterfaceFlags::UP))),
        ),
        Prop::extra(
            "INTERFACE-FLAGS.LOWER-UP",
            yes_no(flags.map(|flags| flags.contains(DeviceInterfaceFlags::LOWER_UP))),
        ),
        Prop::extra(
            "INTERFACE-FLAGS.CARRIER",
            yes_no(flags.map(|flags| flags.contains(DeviceInterfaceFlags::CARRIER))),
        ),
        Prop::extra(
            "INTERFACE-FLAGS.PROMISC",
            yes_no(flags.map(|flags| flags.contains(DeviceInterfaceFlags::PROMISC))),
        ),
    ]);
    if let Some(carrier) = device.carrier() {
        props.push(Prop::common(
            "WIRED-PROPERTIES.CARRIER",
            Cell::from(if carrier { "on" } else { "off" }),
        ));
    }
    ip_sections(
        &mut props,
        false,
        device.ip4_config(),
        device.dhcp4_config(),
        device.ip6_config(),
        device.dhcp6_config(),
    );
    if device.device_type() == Some(nmc::DeviceType::Bridge) {
        // nmcli joins the ports' interface names with spaces; none is an empty text.
        let ports: Vec<&str> = device
            .ports()
            .iter()
            .filter_map(|port| port.interface())
            .collect();
        props.push(Prop::extra("BRIDGE.SLAVES", text(Some(&ports.join(" ")))));
    }
    let available = device.available_connections();
    props.push(Prop::extra(
        "CONNECTIONS.AVAILABLE-CONNECTION-PATHS",
        if available.is_empty() {
            Cell::Null
        } else {
            available
                .iter()
                .map(|p| p.path())
                .collect::<Vec<_>>()
                .join(",")
                .into()
        },
    ));
    for (idx, profile) in available.iter().enumerate() {
        props.push(Prop::extra(
            format!("CONNECTIONS.AVAILABLE-CONNECTIONS[{}]", idx + 1),
            format!("{} | {}", profile.uuid(), profile.id()).into(),
        ));
    }
    props
}

/// `nm device IFACE --kernel`: the kernel's addresses and routes on the interface (by its
/// name; routes with a next hop on it, multipath ones too; the kernel's own local and
/// broadcast routes left out, as NetworkManager leaves them out), each marked
/// `(not in NM)` where NetworkManager's IP4/IP6 configuration lacks it, then what
/// NetworkManager has that the kernel lacks, marked `(not in kernel)`.
fn kernel_section(kernel: &KernelArgs, device: &Device<'_>) -> anyhow::Result<Vec<Prop>> {
    let platform = crate::kernel::open(kernel)?;
    let names = crate::kernel::LinkNames::load(&platform)?;
    let ifname = match device.ip_interface() {
        Some(ip) if !ip.is_empty() => ip,
        _ => device.interface().ok_or_else(|| {
            anyhow::anyhow!("{}: NetworkManager sent no interface name", device.path())
        })?,
    };
    let ifindex = names.index(ifname)?;
    let addresses = platform
        .addresses()
        .ifindex(ifindex)
        .execute()
        .map_err(|err| crate::kernel::explain(err, "dump addresses"))?
        .items;
    // Every route with a way out through the interface: its own or one of its next hops (a
    // multipath route has no interface of its own).
    let routes: Vec<_> = platform
        .routes()
        .execute()
        .map_err(|err| crate::kernel::explain(err, "dump routes"))?
        .items
        .into_iter()
        .filter(|route| route.ifindexes().any(|i| i == ifindex))
        .collect();
    let mut nm_addresses: Vec<String> = Vec::new();
    // (destination, next hop, metric, table): NetworkManager's `table` attribute, else main.
    type RouteKey = (String, Option<String>, Option<u32>, u32);
    let mut nm_routes: Vec<RouteKey> = Vec::new();
    let table_of = |r: &nmc::IpRoute| {
        r.attributes
            .iter()
            .find(|(name, _)| name == "table")
            .and_then(|(_, value)| value.as_u32())
            .unwrap_or(netmirror_platform::Table::MAIN.get())
    };
    let none4 = "0.0.0.0";
    if let Some(ip4) = device.ip4_config() {
        nm_addresses.extend(ip4.addresses());
        nm_routes.extend(ip4.routes().into_iter().map(|r| {
            let table = table_of(&r);
            (
                format!("{}/{}", r.dest, r.prefix),
                r.next_hop.filter(|nh| nh != none4),
                r.metric,
                table,
            )
        }));
    }
    if let Some(ip6) = device.ip6_config() {
        nm_addresses.extend(ip6.addresses());
        nm_routes.extend(ip6.routes().into_iter().map(|r| {
            let table = table_of(&r);
            (
                format!("{}/{}", r.dest, r.prefix),
                r.next_hop.filter(|nh| nh != "::"),
                r.metric,
                table,
            )
        }));
    }
    let mut props = Vec::new();
    props.push(Prop::common(
        "KERNEL.IFINDEX",
        Cell::Int(i64::from(u32::from(ifindex))),
    ));
    let mut kernel_addresses = Vec::new();
    for (idx, addr) in addresses.iter().enumerate() {
        let text = format!("{}/{}", addr.address(), addr.prefix_len());
        let mark = if nm_addresses.contains(&text) {
            ""
        } else {
            " (not in NM)"
        };
        props.push(Prop::common(
            format!("KERNEL.ADDRESS[{}]", idx + 1),
            format!("{text}{mark}").into(),
        ));
        kernel_addresses.push(text);
    }
    let mut kernel_routes = Vec::new();
    let mut n_route = 0;
    for route in &routes {
        // The kernel's own local and broadcast routes, which NetworkManager leaves out; a
        // unicast route someone put in the local table is kept, as NetworkManager keeps it.
        if route.table() == netmirror_platform::Table::LOCAL
            && route.kind() != netmirror_platform::RouteType::UNICAST
        {
            continue;
        }
        n_route += 1;
        let dst = format!("{}/{}", route.dst(), route.dst_len());
        let gateway = route.gateway().map(|g| g.to_string());
        let metric = route.priority();
        let table = route.table().get();
        let none = if route.dst().is_ipv6() { "::" } else { none4 };
        // A multipath route: each hop's next hop (NetworkManager 1.42 keeps only one).
        let hops: Vec<String> = route
            .multipath()
            .iter()
            .map(|hop| {
                hop.gateway
                    .map_or_else(|| none.to_owned(), |g| g.to_string())
            })
            .collect();
        let nh = if hops.is_empty() {
            gateway.clone().unwrap_or_else(|| none.to_owned())
        } else {
            hops.join(" + ")
        };
        let mut text = format!("dst = {dst}, nh = {nh}, mt = {metric}");
        if route.table() != netmirror_platform::Table::MAIN {
            text.push_str(&format!(", table={table}"));
        }
        let known = hops.is_empty()
            && nm_routes.iter().any(|(d, nh, mt, t)| {
                *d == dst && *nh == gateway && mt.is_none_or(|mt| mt == metric) && *t == table
            });
        if !known {
            text.push_str(" (not in NM)");
        }
        props.push(Prop::common(
            format!("KERNEL.ROUTE[{n_route}]"),
            text.into(),
        ));
        // A multipath route stands for none of NetworkManager's single-hop routes.
        if hops.is_empty() {
            kernel_routes.push((dst, gateway, metric, table));
        }
    }
    let mut n_missing = 0;
    for address in &nm_addresses {
        if !kernel_addresses.contains(address) {
            n_missing += 1;
            props.push(Prop::common(
                format!("KERNEL.MISSING[{n_missing}]"),
                format!("address {address} (not in kernel)").into(),
            ));
        }
    }
    for (dst, nh, mt, table) in &nm_routes {
        let present = kernel_routes
            .iter()
            .any(|(d, g, m, t)| d == dst && g == nh && mt.is_none_or(|mt| mt == *m) && t == table);
        if !present {
            n_missing += 1;
            props.push(Prop::common(
                format!("KERNEL.MISSING[{n_missing}]"),
                format!(
                    "route {dst} via {} (not in kernel)",
                    nh.as_deref().unwrap_or("--")
                )
                .into(),
            ));
        }
    }
    Ok(props)
}

/// The devices each profile is active on.
fn active_devices(nm: &NmClient) -> HashMap<String, Vec<String>> {
    let mut devices: HashMap<String, Vec<String>> = HashMap::new();
    for active in nm.active_connections() {
        if let Some(profile) = active.connection() {
            devices
                .entry(profile.path().to_owned())
                .or_default()
                .extend(
                    active
                        .devices()
                        .iter()
                        .filter_map(|device| device.interface().map(str::to_owned)),
                );
        }
    }
    // A profile being activated again has two active connections on the same device for a
    // moment (the old one deactivating): the device is named once.
    for names in devices.values_mut() {
        let mut seen = std::collections::HashSet::new();
        names.retain(|name| seen.insert(name.clone()));
    }
    devices
}

/// A profile type as nmcli shows it: its short name for people (`ethernet`), the setting's
/// name in terse output and JSON (`802-3-ethernet`), as `nmcli -t` writes it.
fn type_cell(setting: Option<&str>) -> Cell {
    let Some(setting) = setting.filter(|s| !s.is_empty()) else {
        return Cell::Null;
    };
    Cell::from(ModalCell {
        text: nmc::type_alias(setting).to_owned(),
        terse: setting.to_owned(),
        json: serde_json::Value::String(setting.to_owned()),
    })
}

/// A profile's row.
fn profile_row(profile: &Profile<'_>, devices: &HashMap<String, Vec<String>>) -> Vec<Cell> {
    let on = devices.get(profile.path());
    vec![
        text(Some(profile.id())),
        text(Some(profile.uuid())),
        type_cell(Some(profile.connection_type())),
        on.map_or(Cell::Null, |names| Cell::List(names.clone())),
        text(profile.interface_name()),
        on.is_some().into(),
        text(profile.filename()),
        profile.path().to_owned().into(),
    ]
}

/// `nm connection`: the visible profiles, in nmcli's order: active ones first, the more
/// important first, then by name and path.
pub(crate) fn connection_table(nm: &NmClient) -> Table {
    let devices = active_devices(nm);
    let actives = nm.active_connections();
    let active_of = |profile: &Profile<'_>| {
        actives
            .iter()
            .copied()
            .filter(|ac| ac.connection().is_some_and(|p| p.path() == profile.path()))
            .max_by(|a, b| nmc::cmp_active(Some(*a), Some(*b)))
    };
    // Each profile's active connection and id found once, not at every comparison (a scan
    // of the active connections and a settings lookup each: 13 % of the command's
    // instructions at 551 profiles).
    let mut profiles: Vec<_> = nm
        .connections()
        .into_iter()
        .map(|profile| (active_of(&profile), profile.id(), profile))
        .collect();
    profiles.sort_by(|(active_a, id_a, a), (active_b, id_b, b)| {
        nmc::cmp_active(*active_b, *active_a)
            .then_with(|| id_a.cmp(id_b))
            .then_with(|| a.path().cmp(b.path()))
    });
    let mut table = Table::new(CONNECTION_FIELDS);
    for (_, _, profile) in profiles {
        table.push(profile_row(&profile, &devices));
    }
    table
}

/// Keys whose values are secrets: never shown (the daemon does not send them with
/// `GetSettings`; were one there, it stays hidden as nmcli hides it without `--show-secrets`).
const SECRET_KEYS: &[&str] = &[
    "password",
    "psk",
    "wep-key0",
    "wep-key1",
    "wep-key2",
    "wep-key3",
    "leap-password",
    "pin",
    "puk",
    "private-key",
    "preshared-key",
    "secrets",
    "private-key-password",
    "phase2-private-key-password",
    "pac-file-password",
    "ca-cert-password",
    "client-cert-password",
    "phase2-ca-cert-password",
    "phase2-client-cert-password",
];

/// The 802.1X properties that hold a certificate or key (nmcli's `_pt_cert_8021x`).
const CERT_KEYS: &[&str] = &[
    "ca-cert",
    "client-cert",
    "private-key",
    "phase2-ca-cert",
    "phase2-client-cert",
    "phase2-private-key",
];

/// A byte string as nmcli shows it: a hardware address (`AA:BB:CC:DD:EE:FF`) where nmcli's
/// table has one (or, in a setting it does not know, under a key naming one); an SSID as
/// text (libnm's `nm_utils_ssid_to_utf8`: UTF-8 as it is, other bytes as ISO-8859-1, which
/// is what it falls back to without a language); an 802.1X certificate
/// or key by its path or PKCS#11 URI, `<hidden>` when the profile holds the data itself;
/// nmcli's plain bytes (`wfd-ies`) in hex; in a setting nmcli does not know, printable text
/// as itself, else hex bytes joined by spaces.
fn bytes_text(setting: &str, key: &str, bytes: &[u8]) -> String {
    let hex = |sep: &str| {
        bytes
            .iter()
            .map(|b| format!("{b:02X}"))
            .collect::<Vec<_>>()
            .join(sep)
    };
    if crate::nm_meta::MAC_PROPERTIES.contains(&(setting, key))
        || (key.contains("mac-address")
            && !crate::nm_meta::SETTINGS.iter().any(|(s, _)| *s == setting))
    {
        return hex(":");
    }
    if key == "ssid" {
        return match std::str::from_utf8(bytes) {
            Ok(text) if !text.contains('\0') => text.to_owned(),
            // Latin-1 is each byte's own code point; the C string ends at a NUL.
            _ => bytes
                .iter()
                .take_while(|b| **b != 0)
                .map(|b| char::from(*b))
                .collect(),
        };
    }
    if setting == "802-1x" && CERT_KEYS.contains(&key) {
        // libnm's schemes: `file://PATH` and `pkcs11:URI`, each NUL-terminated; else a blob.
        let text = bytes
            .strip_suffix(&[0])
            .and_then(|b| std::str::from_utf8(b).ok());
        return match text {
            Some(text) if text.starts_with("file://") => text["file://".len()..].to_owned(),
            Some(text) if text.starts_with("pkcs11:") => text.to_owned(),
            _ => "<hidden>".to_owned(),
        };
    }
    if key == "wfd-ies" {
        return hex("");
    }
    match std::str::from_utf8(bytes) {
        Ok(text) if !text.chars().any(char::is_control) => text.to_owned(),
        _ => hex(" "),
    }
}

/// A `tc` handle as libnm writes it: `MAJOR:` or `MAJOR:MINOR`, in hex.
fn tc_handle(handle: u32) -> String {
    match handle & 0xffff {
        0 => format!("{:x}:", handle >> 16),
        minor => format!("{:x}:{minor:x}", handle >> 16),
    }
}

/// An object's attributes as libnm formats them (`_nm_utils_format_variant_attributes`):
/// sorted by name, `name` `kv` `value` (only the name for a flag of `spec`), separated by
/// `sep`, both separators and backslashes escaped; where `spec` is given, only the names it
/// lists; numbers, booleans (`true`/`false`) and text only, as libnm.
fn variant_attributes(
    dict: &netmirror_client_cache::Value,
    skip: &[&str],
    spec: Option<&[(&str, bool)]>,
    sep: char,
    kv: char,
) -> String {
    use netmirror_client_cache::Value as V;
    let escape = |text: &str| {
        let mut out = String::with_capacity(text.len());
        for c in text.chars() {
            if c == sep || c == kv || c == '\\' {
                out.push('\\');
            }
            out.push(c);
        }
        out
    };
    let V::Dict(dict) = dict else {
        return String::new();
    };
    let mut attrs: Vec<(&str, String)> = dict
        .entries
        .iter()
        .filter_map(|(key, value)| {
            let key = key.as_str()?;
            if skip.contains(&key) {
                return None;
            }
            let flag = match spec {
                Some(spec) => spec.iter().find(|(name, _)| *name == key)?.1,
                None => false,
            };
            let value = match value.unwrap_variant() {
                V::U32(n) => n.to_string(),
                V::I32(n) => n.to_string(),
                V::U64(n) => n.to_string(),
                V::U8(n) => n.to_string(),
                V::Bool(b) => b.to_string(),
                V::Str(text) => text.to_string(),
                V::Bytes(bytes) => {
                    String::from_utf8_lossy(bytes.split(|b| *b == 0).next()?).into_owned()
                }
                _ => return None,
            };
            let text = if flag {
                escape(key)
            } else {
                format!("{}{kv}{}", escape(key), escape(&value))
            };
            Some((key, text))
        })
        .collect();
    attrs.sort_by(|a, b| a.0.cmp(b.0));
    attrs
        .into_iter()
        .map(|(_, text)| text)
        .collect::<Vec<_>>()
        .join(&sep.to_string())
}

/// A `tc.qdiscs` or `tc.tfilters` value as nmcli shows it (libnm's `nm_utils_tc_qdisc_to_str`
/// and `nm_utils_tc_tfilter_to_str`, joined with `, `): `root`, `parent MAJ:MIN` (nothing for
/// ingress), `handle MAJ:MIN`, the kind and its attributes, a filter's action.
fn tc_text(key: &str, value: &netmirror_client_cache::Value) -> Option<String> {
    const ROOT: u32 = 0xffff_ffff;
    const INGRESS: u32 = 0xffff_fff1;
    let netmirror_client_cache::Value::Array(array) = value else {
        return None;
    };
    let qdisc = key == "qdiscs";
    let mut texts = Vec::new();
    for item in &array.items {
        let item = item.unwrap_variant();
        let number = |name: &str| {
            item.get(name)
                .and_then(|v| v.unwrap_variant().as_u32())
                .unwrap_or(0)
        };
        let kind = item.get("kind")?.unwrap_variant().as_str()?;
        let mut text = match number("parent") {
            ROOT => "root ".to_owned(),
            INGRESS => String::new(),
            parent => format!("parent {} ", tc_handle(parent)),
        };
        let handle = number("handle");
        if handle != 0 && !(qdisc && matches!(kind, "ingress" | "clsact")) {
            text.push_str(&format!("handle {} ", tc_handle(handle)));
        }
        text.push_str(kind);
        let rest = if qdisc {
            variant_attributes(item, &["kind", "handle", "parent"], None, ' ', ' ')
        } else if let Some(action) = item.get("action").map(|a| a.unwrap_variant()) {
            let action_kind = action.get("kind")?.unwrap_variant().as_str()?;
            text.push_str(" action ");
            text.push_str(action_kind);
            let spec: Option<&[(&str, bool)]> = match action_kind {
                "simple" => Some(&[("sdata", false)]),
                "mirred" => Some(&[
                    ("egress", true),
                    ("ingress", true),
                    ("mirror", true),
                    ("redirect", true),
                    ("dev", false),
                ]),
                _ => None,
            };
            variant_attributes(action, &["kind"], spec, ' ', ' ')
        } else {
            String::new()
        };
        if !rest.is_empty() {
            text.push(' ');
            text.push_str(&rest);
        }
        texts.push(text);
    }
    Some(texts.join(", "))
}

/// The dictionaries of an `aa{sv}` value.
fn dicts(value: &netmirror_client_cache::Value) -> Vec<&netmirror_client_cache::Value> {
    match value.unwrap_variant() {
        netmirror_client_cache::Value::Array(array) => array
            .items
            .iter()
            .map(netmirror_client_cache::Value::unwrap_variant)
            .filter(|item| matches!(item, netmirror_client_cache::Value::Dict(_)))
            .collect(),
        _ => Vec::new(),
    }
}

/// A number, whatever its integer type.
fn value_i64(value: &netmirror_client_cache::Value) -> Option<i64> {
    let value = value.unwrap_variant();
    value
        .as_i64()
        .or_else(|| value.as_u64().and_then(|n| i64::try_from(n).ok()))
}

/// A number of a dictionary, whatever its integer type.
fn dict_number(dict: &netmirror_client_cache::Value, key: &str) -> Option<i64> {
    value_i64(dict.get(key)?)
}

/// Text in a list as nmcli escapes it (libnm's `nm_utils_escaped_tokens_escape_full` with a
/// backslash as needed and leading and trailing spaces): a backslash before each of
/// `delimiters`, before a space that starts or ends the text, and before a backslash that
/// would otherwise escape the next character (one of `delimiters` or `as_needed`, a space,
/// or the end).
fn escape_tokens(text: &str, delimiters: &str, as_needed: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    for (i, &c) in chars.iter().enumerate() {
        let edge = i == 0 || i + 1 == chars.len();
        let escape = delimiters.contains(c)
            || (c.is_ascii_whitespace() && edge)
            || (c == '\\'
                && chars.get(i + 1).is_none_or(|next| {
                    delimiters.contains(*next)
                        || as_needed.contains(*next)
                        || next.is_ascii_whitespace()
                }));
        if escape {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// A `key=value` list's key or value as nmcli escapes it (libnm's
/// `nm_utils_escaped_tokens_options_escape_key`/`_val`).
fn escape_option(text: &str, key: bool) -> String {
    if key {
        escape_tokens(text, ",=", "")
    } else {
        escape_tokens(text, ",", "=")
    }
}

/// `ipv4.routing-rules`/`ipv6.routing-rules` as nmcli shows them (libnm's
/// `nm_ip_routing_rule_to_string`, joined with `, `).
fn routing_rules_text(value: &netmirror_client_cache::Value) -> String {
    const FR_ACT_TO_TBL: i64 = 1;
    let rules: Vec<String> = dicts(value)
        .into_iter()
        .map(|rule| {
            let number = |key: &str| dict_number(rule, key);
            let text = |key: &str| rule.get(key).and_then(|v| v.unwrap_variant().as_str());
            let v4 = number("family") != Some(10);
            let mut words: Vec<String> = Vec::new();
            if let Some(priority) = number("priority") {
                words.push(format!("priority {priority}"));
            }
            if rule
                .get("invert")
                .and_then(|v| v.unwrap_variant().as_bool())
                == Some(true)
            {
                words.push("not".to_owned());
            }
            let full = if v4 { 32 } else { 128 };
            let to = text("to").map(|addr| (addr, number("to-len").unwrap_or(0)));
            let from = text("from").map(|addr| (addr, number("from-len").unwrap_or(0)));
            for (word, addr, required) in [("from", from, to.is_none()), ("to", to, false)] {
                match addr {
                    Some((addr, len)) if len != 0 => words.push(if len == full {
                        format!("{word} {addr}")
                    } else {
                        format!("{word} {addr}/{len}")
                    }),
                    _ if required => {
                        words.push(format!("{word} {}/0", if v4 { "0.0.0.0" } else { "::" }));
                    }
                    _ => {}
                }
            }
            if let Some(tos) = number("tos").filter(|n| *n != 0) {
                words.push(format!("tos 0x{tos:02x}"));
            }
            if let Some(ipproto) = number("ipproto").filter(|n| *n != 0) {
                words.push(format!("ipproto {ipproto}"));
            }
            let (mark, mask) = (number("fwmark").unwrap_or(0), number("fwmask").unwrap_or(0));
            if mark != 0 || mask != 0 {
                let mut word = if mark == 0 {
                    "fwmark 0".to_owned()
                } else {
                    format!("fwmark 0x{mark:x}")
                };
                match mask {
                    0xffff_ffff => {}
                    0 => word.push_str("/0"),
                    mask => word.push_str(&format!("/0x{mask:x}")),
                }
                words.push(word);
            }
            // libnm takes a range without its end as the one value.
            for name in ["sport", "dport"] {
                let start = number(&format!("{name}-start")).unwrap_or(0);
                let end = number(&format!("{name}-end")).unwrap_or(start);
                if start != 0 || end != 0 {
                    words.push(if start == end {
                        format!("{name} {start}")
                    } else {
                        format!("{name} {start}-{end}")
                    });
                }
            }
            for (key, word) in [("iifname", "iif"), ("oifname", "oif")] {
                if let Some(name) = text(key) {
                    words.push(format!("{word} {}", escape_tokens(name, " \t\n", "")));
                }
            }
            if let Some(start) = number("uid-range-start") {
                let end = number("uid-range-end").unwrap_or(start);
                words.push(format!("uidrange {start}-{end}"));
            }
            if let Some(length) = number("suppress-prefixlength").filter(|n| *n != -1) {
                words.push(format!("suppress_prefixlength {length}"));
            }
            let action = number("action").unwrap_or(FR_ACT_TO_TBL);
            let table = number("table").unwrap_or(0);
            if table != 0 || action == FR_ACT_TO_TBL {
                words.push(format!("table {table}"));
            }
            if action != FR_ACT_TO_TBL {
                // The rule's action is named as a route type (`blackhole`, `prohibit`, ...).
                words.push(match u8::try_from(action) {
                    Ok(action) => format!("type {}", netmirror_platform::names::route_type(action)),
                    Err(_) => format!("type {action}"),
                });
            }
            escape_tokens(&words.join(" "), ",", "")
        })
        .collect();
    rules.join(", ")
}

/// The text nmcli shows for the structured properties it prints with printers of its own,
/// the same in both forms: bond options, VPN data, VLAN priority maps, routing rules, bridge
/// VLANs, OVS trunks and SR-IOV VFs. `None` for any other property.
fn structured_text(
    setting: &str,
    key: &str,
    value: &netmirror_client_cache::Value,
) -> Option<String> {
    use netmirror_client_cache::Value as V;
    let value = value.unwrap_variant();
    let pairs = |value: &V| -> Vec<(String, String)> {
        let V::Dict(dict) = value else {
            return Vec::new();
        };
        let mut pairs: Vec<(String, String)> = dict
            .entries
            .iter()
            .filter_map(|(k, v)| {
                Some((
                    k.as_str()?.to_owned(),
                    v.unwrap_variant().as_str()?.to_owned(),
                ))
            })
            .collect();
        pairs.sort();
        pairs
    };
    Some(match (setting, key) {
        ("bond", "options") => {
            let mut options = pairs(value);
            // libnm puts `mode` first.
            options.sort_by_key(|(k, _)| k != "mode");
            options
                .iter()
                .map(|(k, v)| {
                    let v = if k == "arp_ip_target" {
                        v.replace(',', " ")
                    } else {
                        v.clone()
                    };
                    format!("{}={}", escape_option(k, true), escape_option(&v, false))
                })
                .collect::<Vec<_>>()
                .join(",")
        }
        ("vpn", "data" | "secrets") => pairs(value)
            .iter()
            .map(|(k, v)| format!("{} = {}", escape_option(k, true), escape_option(v, false)))
            .collect::<Vec<_>>()
            .join(", "),
        ("vlan", "ingress-priority-map" | "egress-priority-map") => value.as_strs()?.join(" "),
        // nmcli's `0x%04x`; `default` for -1 (the daemon leaves that out).
        ("infiniband", "p-key") => format!("0x{:04x}", value_i64(value)?),
        // `user:NAME:` on D-Bus (the last part is reserved), `user:NAME` in nmcli.
        ("connection", "permissions") => value
            .as_strs()?
            .iter()
            .map(|p| p.strip_suffix(':').unwrap_or(p))
            .collect::<Vec<_>>()
            .join(","),
        ("ipv4" | "ipv6", "routing-rules") => routing_rules_text(value),
        ("bridge" | "bridge-port", "vlans") => dicts(value)
            .into_iter()
            .map(|vlan| {
                let start = dict_number(vlan, "vid-start").unwrap_or(0);
                let end = dict_number(vlan, "vid-end").unwrap_or(start);
                let mut text = if start == end {
                    start.to_string()
                } else {
                    format!("{start}-{end}")
                };
                for flag in ["pvid", "untagged"] {
                    if vlan.get(flag).and_then(|v| v.unwrap_variant().as_bool()) == Some(true) {
                        text.push(' ');
                        text.push_str(flag);
                    }
                }
                text
            })
            .collect::<Vec<_>>()
            .join(", "),
        ("ovs-port", "trunks") => dicts(value)
            .into_iter()
            .map(|range| {
                let start = dict_number(range, "start").unwrap_or(0);
                let end = dict_number(range, "end").unwrap_or(start);
                if start == end {
                    start.to_string()
                } else {
                    format!("{start}-{end}")
                }
            })
            .collect::<Vec<_>>()
            .join(", "),
        ("sriov", "vfs") => dicts(value)
            .into_iter()
            .map(|vf| {
                let mut text = dict_number(vf, "index").unwrap_or(0).to_string();
                let attributes = variant_attributes(vf, &["index", "vlans"], None, ' ', '=');
                if !attributes.is_empty() {
                    text.push(' ');
                    text.push_str(&attributes);
                }
                let mut vlans: Vec<(i64, i64, i64)> = vf
                    .get("vlans")
                    .map(dicts)
                    .unwrap_or_default()
                    .into_iter()
                    .map(|vlan| {
                        (
                            dict_number(vlan, "id").unwrap_or(0),
                            dict_number(vlan, "qos").unwrap_or(0),
                            dict_number(vlan, "protocol").unwrap_or(0),
                        )
                    })
                    .collect();
                vlans.sort_unstable();
                if !vlans.is_empty() {
                    text.push_str(" vlans");
                }
                for (i, (id, qos, protocol)) in vlans.into_iter().enumerate() {
                    text.push(if i == 0 { '=' } else { ';' });
                    text.push_str(&id.to_string());
                    if qos != 0 || protocol != 0 {
                        text.push_str(&format!(".{qos}{}", if protocol == 0 { "" } else { ".ad" }));
                    }
                }
                escape_tokens(&text, ",", "")
            })
            .collect::<Vec<_>>()
            .join(", "),
        _ => return None,
    })
}

/// An `ipv4.addresses`/`ipv6.addresses` value from the setting's `address-data`.
fn setting_addresses(values: &netmirror_client_cache::Value) -> Option<String> {
    let data = values.get("address-data")?;
    let items: Vec<String> = match data.unwrap_variant() {
        netmirror_client_cache::Value::Array(array) => array
            .items
            .iter()
            .filter_map(|d| {
                Some(format!(
                    "{}/{}",
                    d.get("address")?.as_str()?,
                    d.get("prefix")?.as_u32()?
                ))
            })
            .collect(),
        _ => return None,
    };
    Some(items.join(", "))
}

/// An `ipv4.routes`/`ipv6.routes` value from the setting's `route-data`, as nmcli shows it:
/// `{ ip = 198.51.100.0/24, nh = 192.0.2.254, mt = 50 }` joined by `; ` for people,
/// `198.51.100.0/24 192.0.2.254 50` joined by `,` in terse output (attributes as
/// `name=value` in both).
fn setting_routes(values: &netmirror_client_cache::Value) -> Option<(String, String)> {
    let data = values.get("route-data")?;
    let netmirror_client_cache::Value::Array(array) = data.unwrap_variant() else {
        return None;
    };
    let mut human = Vec::new();
    let mut terse = Vec::new();
    for d in &array.items {
        if !matches!(d.unwrap_variant(), netmirror_client_cache::Value::Dict(_)) {
            continue;
        }
        let (Some(dest), Some(prefix)) = (
            d.get("dest").and_then(|v| v.as_str()),
            d.get("prefix").and_then(|v| v.as_u32()),
        ) else {
            continue;
        };
        let mut text = format!("{{ ip = {dest}/{prefix}");
        let mut short = format!("{dest}/{prefix}");
        let nh = d.get("next-hop").and_then(|v| v.as_str());
        if let Some(nh) = nh {
            text.push_str(&format!(", nh = {nh}"));
            short.push_str(&format!(" {nh}"));
        }
        if let Some(mt) = d.get("metric").and_then(|v| v.as_u32()) {
            text.push_str(&format!(", mt = {mt}"));
            short.push_str(&format!(" {mt}"));
        }
        let attributes =
            variant_attributes(d, &["dest", "prefix", "next-hop", "metric"], None, ' ', '=');
        if !attributes.is_empty() {
            text.push(' ');
            text.push_str(&attributes);
            short.push(' ');
            short.push_str(&attributes);
        }
        text.push_str(" }");
        human.push(text);
        terse.push(short);
    }
    Some((human.join("; "), terse.join(", ")))
}

/// `ipv4.dns` (`au` in network byte order, or `dns-data`) and `ipv6.dns` (`aay`) as addresses.
fn setting_dns(setting: &str, values: &netmirror_client_cache::Value) -> Option<String> {
    use netmirror_client_cache::Value as V;
    if let Some(V::Strs(data)) = values.get("dns-data") {
        return Some(data.join(","));
    }
    let items: Vec<String> = match values.get("dns")? {
        V::U32s(v) if setting == "ipv4" => v
            .iter()
            .map(|n| std::net::Ipv4Addr::from(u32::from_be(*n)).to_string())
            .collect(),
        V::Array(array) => array
            .items
            .iter()
            .filter_map(|b| {
                let bytes: [u8; 16] = b.unwrap_variant().as_bytes()?.try_into().ok()?;
                Some(std::net::Ipv6Addr::from(bytes).to_string())
            })
            .collect(),
        _ => return None,
    };
    Some(items.join(","))
}

/// One setting's value as nmcli shows it; `None` for the D-Bus-only forms nmcli folds into
/// another property (`address-data` is `addresses`, `route-data` is `routes`, `dns-data` is
/// `dns`).
fn setting_cell(
    setting: &str,
    key: &str,
    value: &netmirror_client_cache::Value,
    values: &netmirror_client_cache::Value,
) -> Option<Cell> {
    if SECRET_KEYS.contains(&key) && !(setting == "802-1x" && CERT_KEYS.contains(&key)) {
        return Some("<hidden>".into());
    }
    value_cell(setting, key, value, values)
}

/// A secret's value as `nmcli --show-secrets` shows it: as any other value of its type (VPN
/// secrets as `key = value` pairs, as VPN data).
fn secret_cell(
    setting: &str,
    key: &str,
    value: &netmirror_client_cache::Value,
    values: &netmirror_client_cache::Value,
) -> Cell {
    value_cell(setting, key, value, values).unwrap_or(Cell::Null)
}

/// [`setting_cell`] without hiding secrets.
fn value_cell(
    setting: &str,
    key: &str,
    value: &netmirror_client_cache::Value,
    values: &netmirror_client_cache::Value,
) -> Option<Cell> {
    use netmirror_client_cache::Value as V;
    let ip = matches!(setting, "ipv4" | "ipv6");
    if ip && matches!(key, "address-data" | "route-data" | "dns-data") {
        return None;
    }
    let decoded = |text: Option<String>| match text {
        Some(text) if text.is_empty() => Cell::Null,
        Some(text) => Cell::from(TypedCell {
            text,
            json: bus::json(value),
        }),
        None => bus::cell(value),
    };
    let value = value.unwrap_variant();
    let number = match value {
        V::U32(n) => Some(i64::from(*n)),
        V::I32(n) => Some(i64::from(*n)),
        _ => None,
    };
    if let (Some(n), Some(names)) = (number, setting_value_names(setting, key)) {
        let (text, terse) = names.texts(n);
        return Some(Cell::from(ModalCell {
            text,
            terse,
            json: bus::json(value),
        }));
    }
    if let Some(text) = structured_text(setting, key, value) {
        return Some(decoded(Some(text)));
    }
    Some(match (key, value) {
        ("addresses", _) if ip => decoded(setting_addresses(values)),
        ("routes", _) if ip => match setting_routes(values) {
            Some((text, _)) if text.is_empty() => Cell::Null,
            Some((text, terse)) => Cell::from(ModalCell {
                text,
                terse,
                json: bus::json(value),
            }),
            None => bus::cell(value),
        },
        ("dns", _) if ip => decoded(setting_dns(setting, values)),
        ("qdiscs" | "tfilters", _) if setting == "tc" => decoded(tc_text(key, value)),
        ("metered", V::I32(n)) if setting == "connection" => Cell::from(TypedCell {
            text: nmc::Metered::from_u32(u32::try_from(*n).unwrap_or(0)).to_string(),
            json: bus::json(value),
        }),
        ("apn", V::Str(apn)) if setting == "gsm" => Cell::from(ModalCell {
            text: format!("\"{apn}\""),
            terse: apn.to_string(),
            json: bus::json(value),
        }),
        // An ethtool feature or pause setting: nmcli says `on`/`off`.
        (_, V::Bool(on)) if setting == "ethtool" => Cell::from(TypedCell {
            text: if *on { "on" } else { "off" }.to_owned(),
            json: bus::json(value),
        }),
        (_, V::Bool(on)) => Cell::from(TypedCell {
            text: if *on { "yes" } else { "no" }.to_owned(),
            json: bus::json(value),
        }),
        (_, V::Bytes(bytes)) => decoded(Some(bytes_text(setting, key, bytes))),
        (_, V::Strs(items)) => decoded(Some(items.join(","))),
        (_, V::Dict(dict)) if dict.entries.is_empty() => Cell::Null,
        (_, V::Array(array)) if array.items.is_empty() => Cell::Null,
        (_, V::U32s(items)) if items.is_empty() => Cell::Null,
        _ => bus::cell(value),
    })
}

/// How nmcli shows a number in one form (people's or terse): the number (in hex or not), its
/// name, or `number (name)`, which is what it shows when it has both and they differ.
#[derive(Clone, Copy)]
pub(crate) struct Mode {
    pub(crate) number: bool,
    pub(crate) hex: bool,
    pub(crate) name: bool,
}

/// How nmcli names the numbers of a setting property (the rows of
/// [`crate::nm_meta::VALUE_NAMES`], generated from nmcli's own property table).
pub(crate) enum Names {
    /// A number with names for some values: `N (name)` for people, `N` terse.
    Number {
        hex: bool,
        names: &'static [(i64, &'static str)],
    },
    /// An enumeration: the names nmcli puts `first`, then the type's `own`.
    Enum {
        first: &'static [(i64, &'static str)],
        own: &'static [(i64, &'static str)],
        people: Mode,
        terse: Mode,
    },
    /// Flags, named as libnm names them: the names nmcli puts `first`, then the type's
    /// `own` in their order, each taking its bits; bits without a name (an empty name is one
    /// libnm does not print) are the rest in hex. The names are joined with `, `.
    Flags {
        first: &'static [(i64, &'static str)],
        own: &'static [(i64, &'static str)],
        people: Mode,
        terse: Mode,
    },
    /// Flags as nmcli's own printers of secret, VLAN and DCB flags show them: `N (A, B)`
    /// with the names of the known bits (the others left out), `0 (none)`, `N (unknown)`
    /// where no bit is known; terse `N`, or the same text where `terse_names`.
    Listed {
        none: &'static str,
        names: &'static [(i64, &'static str)],
        terse_names: bool,
    },
}

impl Names {
    /// nmcli's text for `n`: (for people, terse).
    fn texts(&self, n: i64) -> (String, String) {
        match self {
            Names::Number { hex, names } => {
                let number = if *hex {
                    format!("0x{n:x}")
                } else {
                    n.to_string()
                };
                let people = match names.iter().find(|(value, _)| *value == n) {
                    Some((_, name)) => format!("{number} ({name})"),
                    None => number.clone(),
                };
                (people, number)
            }
            Names::Enum {
                people,
                terse,
                first,
                own,
            } => {
                let name = || {
                    first
                        .iter()
                        .chain(own.iter())
                        .find(|(value, _)| *value == n)
                        .map_or_else(|| n.to_string(), |(_, name)| (*name).to_owned())
                };
                (people.show(n, name), terse.show(n, name))
            }
            Names::Flags {
                people,
                terse,
                first,
                own,
            } => {
                let name = || flag_names(first, own, n);
                (people.show(n, name), terse.show(n, name))
            }
            Names::Listed {
                none,
                names,
                terse_names,
            } => {
                let set: Vec<&str> = names
                    .iter()
                    .filter(|(bit, _)| n & bit != 0)
                    .map(|(_, name)| *name)
                    .collect();
                let people = match (n, set.is_empty()) {
                    (0, _) => format!("0 ({none})"),
                    (_, true) => format!("{n} (unknown)"),
                    (_, false) => format!("{n} ({})", set.join(", ")),
                };
                let terse = if *terse_names {
                    people.clone()
                } else {
                    n.to_string()
                };
                (people, terse)
            }
        }
    }
}

impl Mode {
    /// The text of `n` in this form, `name` giving its name (libnm's `enum_to_str`).
    fn show(self, n: i64, name: impl Fn() -> String) -> String {
        let number = if self.hex {
            format!("0x{n:x}")
        } else {
            n.to_string()
        };
        if !self.name {
            return number;
        }
        let name = name();
        if !self.number || name == number {
            name
        } else {
            format!("{number} ({name})")
        }
    }
}

/// libnm's names of a set of flags: `first`'s that are wholly set (a zero-valued one only for
/// zero), then `own`'s, first match first, until every bit is named or one has no name.
fn flag_names(first: &[(i64, &str)], own: &[(i64, &str)], n: i64) -> String {
    // The bits as libnm holds them (`unsigned`): cutting to 32 bits is the point.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let mut bits = n as u32;
    let was_zero = bits == 0;
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let as_bits = |value: i64| value as u32;
    let mut names: Vec<String> = Vec::new();
    for &(value, name) in first {
        let value = as_bits(value);
        let takes = if bits == 0 {
            value == 0 && was_zero
        } else {
            value != 0 && bits & value == value
        };
        if takes {
            names.push(name.to_owned());
            bits &= !value;
            if bits == 0 {
                return names.join(", ");
            }
        }
    }
    loop {
        let found = own
            .iter()
            .map(|&(value, name)| (as_bits(value), name))
            .find(|&(value, _)| {
                if bits == 0 {
                    value == 0
                } else {
                    value != 0 && bits & value == value
                }
            });
        match found {
            Some((value, name)) if !name.is_empty() => {
                names.push(name.to_owned());
                bits &= !value;
            }
            _ => {
                if bits != 0 {
                    names.push(format!("0x{bits:x}"));
                }
                break;
            }
        }
        if bits == 0 {
            break;
        }
    }
    names.join(", ")
}

/// The secrets' flags properties (`NMSettingSecretFlags`), in every setting that has them.
const SECRET_FLAG_KEYS: &[&str] = &[
    "ca-cert-password-flags",
    "client-cert-password-flags",
    "leap-password-flags",
    "password-flags",
    "password-raw-flags",
    "phase2-ca-cert-password-flags",
    "phase2-client-cert-password-flags",
    "phase2-private-key-password-flags",
    "pin-flags",
    "private-key-flags",
    "private-key-password-flags",
    "psk-flags",
    "wep-key-flags",
];

/// Secret flags (nmcli's `secret_flags_to_string`).
const SECRET_FLAGS: Names = Names::Listed {
    none: "none",
    names: &[(1, "agent-owned"), (2, "not saved"), (4, "not required")],
    terse_names: false,
};

/// DCB's flags (nmcli's `dcb_flags_to_string`, the same text in both forms).
const DCB_FLAGS: Names = Names::Listed {
    none: "disabled",
    names: &[(1, "enabled"), (2, "advertise"), (4, "willing")],
    terse_names: true,
};

/// `vlan.flags` (nmcli's `vlan_flags_to_string`).
const VLAN_FLAGS: Names = Names::Listed {
    none: "NONE",
    names: &[
        (1, "REORDER_HEADERS"),
        (2, "GVRP"),
        (4, "LOOSE_BINDING"),
        (8, "MVRP"),
    ],
    terse_names: false,
};

/// The [`Names`] of a setting property's numbers, where nmcli has them: the generated table
/// of nmcli's enumerations, flags and named numbers, and the two kinds nmcli prints with
/// printers of their own.
fn setting_value_names(setting: &str, key: &str) -> Option<&'static Names> {
    if SECRET_FLAG_KEYS.contains(&key) {
        return Some(&SECRET_FLAGS);
    }
    if (setting, key) == ("vlan", "flags") {
        return Some(&VLAN_FLAGS);
    }
    if setting == "dcb" && key.ends_with("-flags") {
        return Some(&DCB_FLAGS);
    }
    crate::nm_meta::VALUE_NAMES
        .iter()
        .find(|(s, k, _)| *s == setting && *k == key)
        .map(|(_, _, names)| names)
}

/// A profile's secrets, by setting and key, as `GetSecrets` answered.
type Secrets = std::collections::HashMap<
    String,
    std::collections::HashMap<String, netmirror_client_cache::Value>,
>;

/// The names of the settings `profile` has.
fn setting_names(profile: &Profile<'_>) -> Vec<String> {
    match profile.settings().map(|value| value.unwrap_variant()) {
        Some(netmirror_client_cache::Value::Dict(settings)) => settings
            .entries
            .iter()
            .filter_map(|(setting, _)| setting.as_str().map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    }
}

/// The secrets of each of `settings` of the profile `id` at `path` (`GetSecrets` for each,
/// as nmcli asks them with `--show-secrets`). A setting the daemon has no secrets for
/// answers nothing, or an error reply that is logged and skipped, as nmcli skips it; a
/// refusal (no permission), a timeout or a malformed answer is an error.
async fn profile_secrets(
    nm: &mut NmClient,
    id: &str,
    path: &str,
    settings: &[String],
) -> anyhow::Result<Secrets> {
    let mut secrets = Secrets::new();
    for setting in settings {
        let body = match nm.secrets_at(path, setting).await {
            Ok(body) => body,
            // An error reply: the setting has no secrets to give.
            Err(err @ netmirror_client_cache::Error::Call(_)) => {
                tracing::debug!(setting, %err, "no secrets");
                continue;
            }
            Err(err @ netmirror_client_cache::Error::NotAuthorized { .. }) => {
                anyhow::bail!("NetworkManager refused the secrets of '{id}': {err}");
            }
            Err(err) => return Err(err.into()),
        };
        for (name, values) in body {
            let entry = secrets.entry(name).or_default();
            for (key, value) in values {
                let value = netmirror_client_cache::Value::from_variant(&value)
                    .map_err(|err| anyhow::anyhow!("GetSecrets answered something else: {err}"))?;
                entry.insert(key, value);
            }
        }
    }
    Ok(secrets)
}

/// nmcli's text for a property the daemon left out (its default, from the generated table).
fn default_cell((text, terse): (&'static str, &'static str)) -> Cell {
    if terse.is_empty() && text == "--" {
        Cell::Null
    } else {
        // JSON as the daemon's own values of the same kinds: flags and numbers as numbers,
        // `yes`/`no` as booleans, the rest as text.
        let json = if let Ok(number) = terse.parse::<i64>() {
            serde_json::Value::from(number)
        } else if let Some(Ok(number)) = terse
            .strip_prefix("0x")
            .map(|hex| u64::from_str_radix(hex, 16))
        {
            serde_json::Value::from(number)
        } else if terse == "yes" || terse == "no" {
            serde_json::Value::Bool(terse == "yes")
        } else {
            serde_json::Value::String(terse.to_owned())
        };
        Cell::from(ModalCell {
            text: text.to_owned(),
            terse: terse.to_owned(),
            json,
        })
    }
}

/// The properties of one setting of a profile, in nmcli's order ([`crate::nm_meta`]): each
/// property nmcli shows, the daemon's value where it sent one, nmcli's default (from
/// [`crate::nm_defaults`]) where it left it out, except the properties nmcli hides while
/// they hold their default. nmcli shows no other property of a setting it knows (the daemon
/// also sends D-Bus-only and deprecated forms, such as `bridge.interface-name`), and nothing
/// of the settings its table has but does not print (`loopback`); of a setting its table
/// does not have, every property the daemon sent is shown.
fn setting_props(
    props: &mut Vec<Prop>,
    setting: &str,
    values: &netmirror_client_cache::Value,
    secrets: Option<&std::collections::HashMap<String, netmirror_client_cache::Value>>,
    reveal: bool,
) {
    let sent = |key: &str| values.get(key).map(|value| value.unwrap_variant());
    let secret = |key: &str| secrets.and_then(|s| s.get(key)).map(|v| v.unwrap_variant());
    let mut push = |key: &str, cell: Cell| {
        props.push(Prop::common(format!("{setting}.{key}"), cell).in_group("profile"));
    };
    if crate::nm_meta::UNSHOWN_SETTINGS.contains(&setting) {
        return;
    }
    // nmcli's default text of a property the daemon left out, where the table has one.
    let defaults = crate::nm_defaults::SETTINGS
        .iter()
        .find(|(name, _)| *name == setting)
        .map_or(&[][..], |(_, keys)| *keys);
    let default_of = |key: &str| {
        defaults
            .iter()
            .find(|(name, _)| *name == key)
            .and_then(|(_, default)| *default)
    };
    let Some((_, known)) = crate::nm_meta::SETTINGS
        .iter()
        .find(|(name, _)| *name == setting)
    else {
        if let netmirror_client_cache::Value::Dict(dict) = values {
            for (key, value) in &dict.entries {
                let Some(key) = key.as_str() else { continue };
                if let Some(cell) = setting_cell(setting, key, value.unwrap_variant(), values) {
                    push(key, cell);
                }
            }
        }
        return;
    };
    for &(key, hidden_if_default) in *known {
        // libnm takes `cloned-mac-address` from the D-Bus-only `assigned-mac-address` where
        // the daemon sent it (the bytes cannot say `stable` or `random`), empty as unset.
        if key == "cloned-mac-address"
            && let Some(assigned) = sent("assigned-mac-address").and_then(|v| v.as_str())
        {
            push(
                key,
                if assigned.is_empty() {
                    Cell::Null
                } else {
                    Cell::from(assigned.to_owned())
                },
            );
            continue;
        }
        let cell = match (secret(key), sent(key)) {
            // A secret asked for (`--show-secrets`) is shown as the value it is.
            (Some(value), _) => Some(secret_cell(setting, key, value, values)),
            (None, Some(value)) => setting_cell(setting, key, value, values),
            (None, None) if hidden_if_default => None,
            (None, None) => match default_of(key) {
                // Shown, a secret the daemon has none of is unset, not hidden.
                Some(("<hidden>", _)) if reveal => Some(Cell::Null),
                default => default.map(default_cell),
            },
        };
        if let Some(cell) = cell {
            push(key, cell);
        }
    }
}

/// `nm connection ID`: every setting of the profile, named `setting.key` and shown as nmcli
/// shows it, the settings and their properties in nmcli's order, with nmcli's defaults for
/// the properties the daemon left out; then, for an active profile, its active connection's
/// GENERAL, IP4, DHCP4, IP6 and DHCP6 sections.
fn profile_properties(
    nm: &NmClient,
    profile: &Profile<'_>,
    secrets: Option<&Secrets>,
) -> Vec<Prop> {
    let mut props = Vec::new();
    if let Some(netmirror_client_cache::Value::Dict(settings)) =
        profile.settings().map(|value| value.unwrap_variant())
    {
        let rank = |setting: &str| {
            crate::nm_meta::SETTINGS
                .iter()
                .position(|(name, _)| *name == setting)
                .unwrap_or(usize::MAX)
        };
        let mut settings: Vec<(&str, &netmirror_client_cache::Value)> = settings
            .entries
            .iter()
            .filter_map(|(setting, values)| Some((setting.as_str()?, values.unwrap_variant())))
            .collect();
        // A stable sort: settings the table does not know keep the daemon's order, last.
        settings.sort_by_key(|(setting, _)| rank(setting));
        for (setting, values) in settings {
            setting_props(
                &mut props,
                setting,
                values,
                secrets.and_then(|s| s.get(setting)),
                secrets.is_some(),
            );
        }
    }
    props.push(Prop::extra("DBUS-PATH", profile.path().to_owned().into()).not_in_all());
    let settings_end = props.len();
    let active = nm
        .active_connections()
        .into_iter()
        .find(|ac| ac.connection().is_some_and(|p| p.path() == profile.path()));
    if let Some(active) = active {
        let devices: Vec<String> = active
            .devices()
            .iter()
            .filter_map(|d| d.interface().map(str::to_owned))
            .collect();
        let ip_ifaces: Vec<String> = active
            .devices()
            .iter()
            .filter_map(|d| match d.ip_interface() {
                Some(ip) if !ip.is_empty() => Some(ip.to_owned()),
                _ => d.interface().map(str::to_owned),
            })
            .collect();
        let path_or_null = |value: Option<&str>| match value {
            None | Some("/") => Cell::Null,
            Some(path) => path.to_owned().into(),
        };
        props.extend([
            Prop::common("GENERAL.NAME", text(active.id())),
            Prop::common("GENERAL.UUID", text(active.uuid())),
            Prop::common("GENERAL.DEVICES", text(Some(&devices.join(",")))),
            Prop::common("GENERAL.IP-IFACE", text(Some(&ip_ifaces.join(",")))),
            Prop::common("GENERAL.STATE", named(active.state())),
            Prop::common("GENERAL.DEFAULT", yes_no(active.default4())),
            Prop::common("GENERAL.DEFAULT6", yes_no(active.default6())),
            Prop::common(
                "GENERAL.SPEC-OBJECT",
                path_or_null(active.specific_object()),
            ),
            Prop::common("GENERAL.VPN", yes_no(active.vpn())),
            Prop::common("GENERAL.DBUS-PATH", active.path().to_owned().into()),
            Prop::common(
                "GENERAL.CON-PATH",
                active
                    .connection()
                    .map_or(Cell::Null, |p| p.path().to_owned().into()),
            ),
            Prop::common(
                "GENERAL.ZONE",
                text(
                    profile
                        .setting("connection", "zone")
                        .and_then(|v| v.as_str()),
                ),
            ),
            Prop::common(
                "GENERAL.MASTER-PATH",
                path_or_null(active.controller_path()),
            ),
        ]);
        ip_sections(
            &mut props,
            true,
            active.ip4_config(),
            active.dhcp4_config(),
            active.ip6_config(),
            active.dhcp6_config(),
        );
    }
    // The active connection's sections: nmcli's `active` group, not part of `-f all`.
    for prop in &mut props[settings_end..] {
        prop.group = Some("active");
        prop.in_all = false;
    }
    props
}

/// An active connection's row.
fn active_row(active: &ActiveConnection<'_>) -> Vec<Cell> {
    let devices: Vec<String> = active
        .devices()
        .iter()
        .filter_map(|device| device.interface().map(str::to_owned))
        .collect();
    vec![
        text(active.id()),
        text(active.uuid()),
        type_cell(active.connection_type()),
        if devices.is_empty() {
            Cell::Null
        } else {
            Cell::List(devices)
        },
        named(active.state()),
        opt(active.default4()),
        opt(active.default6()),
        opt(active.vpn()),
        active.path().to_owned().into(),
        active
            .connection()
            .map_or(Cell::Null, |profile| profile.path().to_owned().into()),
    ]
}

/// `nm active`, in nmcli's order: the more important first, then by name and path.
pub(crate) fn active_table(actives: &[ActiveConnection<'_>], shared: &SharedProfiles) -> Table {
    let mut actives = actives.to_vec();
    let shared = |active: &ActiveConnection<'_>, setting: &str| shared.shared(active, setting);
    actives.sort_by(|a, b| {
        nmc::cmp_active_by(Some(*b), Some(*a), &shared)
            .then_with(|| a.id().cmp(&b.id()))
            .then_with(|| a.path().cmp(b.path()))
    });
    let mut table = Table::new(ACTIVE_FIELDS);
    for active in &actives {
        table.push(active_row(active));
    }
    table
}

/// What the overview shows of NetworkManager.
pub(crate) enum Overview {
    /// It runs: its general state and its devices.
    Running {
        /// `nm general`.
        general: Table,
        /// `nm device`.
        devices: Table,
    },
    /// It is not there; the sentence says why.
    Absent(String),
    /// It is there but could not be loaded (no answer within the deadline, an error reply);
    /// the sentence says why.
    Failed(String),
}

/// NetworkManager's part of the overview, from the system bus; its absence is not an error.
pub(crate) fn overview(timeout: Duration) -> Overview {
    let bus = Bus::System;
    let result: anyhow::Result<Overview> = zbus::block_on(async {
        let conn = bus::connect(&bus).await?;
        let mut nm = NmClient::from_builder(&conn, lean(timeout))
            .await
            .map_err(|err| bus::explain(err, &bus, SERVICE_NAME))?;
        if !nm.is_running() {
            return Ok(Overview::Absent(format!(
                "NetworkManager is not running on the {bus}"
            )));
        }
        let shared = SharedProfiles::read(&mut nm).await?;
        let overview = Overview::Running {
            general: general_table(&nm),
            devices: device_table(&nm.devices(), &shared),
        };
        // The process ends soon after the overview is printed: freeing the cache object by
        // object here would cost about a sixth of the command's CPU for nothing.
        std::mem::forget(nm);
        Ok(overview)
    });
    result.unwrap_or_else(|err| {
        tracing::debug!(error = %format!("{err:#}"), "no NetworkManager for the overview");
        Overview::Failed(format!("NetworkManager is not available: {err:#}"))
    })
}

/// Columns of a device in `nm monitor`: `nm device`'s, then the reason of the last state
/// change.
const MONITOR_DEVICE_FIELDS: &[Field] = &[
    Field::common("DEVICE", "device"),
    Field::common("TYPE", "type"),
    Field::common("STATE", "state"),
    Field::extra("IP4-CONNECTIVITY", "ip4_connectivity"),
    Field::extra("IP6-CONNECTIVITY", "ip6_connectivity"),
    Field::extra("DBUS-PATH", "dbus_path"),
    Field::common("CONNECTION", "connection"),
    Field::extra("CON-UUID", "con_uuid"),
    Field::extra("CON-PATH", "con_path"),
    Field::extra("IFINDEX", "ifindex"),
    Field::extra("HWADDR", "hwaddr"),
    Field::extra("MTU", "mtu"),
    Field::extra("DRIVER", "driver"),
    Field::extra("MANAGED", "managed"),
    Field::extra("AUTOCONNECT", "autoconnect"),
    Field::extra("REAL", "real"),
    Field::common("REASON", "reason"),
];

/// Index of STATE in the device rows.
const DEVICE_STATE: usize = 2;

/// An enumeration's value: its name for people, `{"name": .., "value": n}` in JSON.
fn enum_cell(name: impl std::fmt::Display, number: u32) -> Cell {
    let name = name.to_string();
    Cell::from(TypedCell {
        json: serde_json::json!({"name": name, "value": number}),
        text: name,
    })
}

/// The state as nmcli shows it for `device`, when the state is `state`.
fn state_text(device: &Device<'_>, state: nmc::DeviceState) -> String {
    let external = device.active_connection().is_some_and(|ac| {
        ac.state_flags()
            .is_some_and(|flags| flags.contains(nmc::ActivationStateFlags::EXTERNAL))
    });
    match state.name_external() {
        Some(name) if external => name.to_owned(),
        _ => state.to_string(),
    }
}

/// What the monitor knows of an object, to print it when it changes or goes away.
struct Known {
    object: &'static str,
    fields: &'static [Field],
    row: Vec<Cell>,
}

/// A device's state as the monitor last reported it (the cache holds the batch's last one).
type States = HashMap<String, (nmc::DeviceState, nmc::DeviceStateReason)>;

/// The row of the object at `path`, if it is a device, visible profile or active connection.
fn describe(
    nm: &NmClient,
    path: &str,
    devices: &HashMap<String, Vec<String>>,
    states: &States,
) -> Option<Known> {
    let cache = nm.cache();
    let object = cache.object(path)?;
    if object.object().has_interface(nmc::iface::DEVICE) {
        let device = Device::new(object)?;
        let mut row = device_row(&device);
        match states.get(path).copied().or_else(|| device.state_reason()) {
            Some((state, reason)) => {
                row[DEVICE_STATE] = enum_cell(state_text(&device, state), state.to_u32());
                row.push(enum_cell(reason, reason.to_u32()));
            }
            None => row.push(Cell::Null),
        }
        return Some(Known {
            object: "device",
            fields: MONITOR_DEVICE_FIELDS,
            row,
        });
    }
    if object.object().has_interface(nmc::iface::CONNECTION) {
        let profile = Profile::new(object)?;
        if !nm.is_visible(&profile) {
            return None;
        }
        return Some(Known {
            object: "connection",
            fields: CONNECTION_FIELDS,
            row: profile_row(&profile, devices),
        });
    }
    if object.object().has_interface(nmc::iface::ACTIVE) {
        let active = ActiveConnection::new(object)?;
        let mut row = active_row(&active);
        if let Some(state) = active.state() {
            row[4] = enum_cell(state, state.to_u32());
        }
        return Some(Known {
            object: "active",
            fields: ACTIVE_FIELDS,
            row,
        });
    }
    None
}

/// The monitor's state: the rows last printed.
struct Monitor {
    known: HashMap<String, Known>,
    states: States,
}

impl Monitor {
    /// Forgets everything and describes every object again (after a load).
    fn refresh_all(&mut self, nm: &NmClient) {
        self.known.clear();
        self.states = nm
            .all_devices()
            .iter()
            .filter_map(|device| Some((device.path().to_owned(), device.state_reason()?)))
            .collect();
        let devices = active_devices(nm);
        let paths: Vec<String> = nm
            .all_devices()
            .iter()
            .map(|device| device.path().to_owned())
            .chain(
                nm.connections()
                    .iter()
                    .map(|profile| profile.path().to_owned()),
            )
            .chain(
                nm.active_connections()
                    .iter()
                    .map(|active| active.path().to_owned()),
            )
            .collect();
        for path in paths {
            if let Some(entry) = describe(nm, &path, &devices, &self.states) {
                self.known.insert(path, entry);
            }
        }
    }

    /// Prints a change of a known object when its row changed.
    fn changed(&mut self, printer: &mut Printer, nm: &NmClient, path: &str) -> anyhow::Result<()> {
        let devices = active_devices(nm);
        self.changed_with(printer, nm, path, &devices)
    }

    fn changed_with(
        &mut self,
        printer: &mut Printer,
        nm: &NmClient,
        path: &str,
        devices: &HashMap<String, Vec<String>>,
    ) -> anyhow::Result<()> {
        let Some(entry) = describe(nm, path, devices, &self.states) else {
            return Ok(());
        };
        if let Some(before) = self.known.get(path)
            && before.row != entry.row
        {
            print(
                printer,
                &entry,
                EventKind::Changed,
                Some(before.row.clone()),
                Some(entry.row.clone()),
            )?;
        }
        self.known.insert(path.to_owned(), entry);
        Ok(())
    }

    /// Profile rows follow their references: a profile's `device` and `active` change when a
    /// connection is activated or goes away, without any event on the profile itself.
    fn follow_references(&mut self, printer: &mut Printer, nm: &NmClient) -> anyhow::Result<()> {
        let devices = active_devices(nm);
        let profiles: Vec<String> = self
            .known
            .iter()
            .filter(|(_, k)| k.object == "connection")
            .map(|(path, _)| path.clone())
            .collect();
        let mut profiles = profiles;
        profiles.sort();
        for path in profiles {
            self.changed_with(printer, nm, &path, &devices)?;
        }
        Ok(())
    }
}

/// `nm monitor`: devices, profiles and active connections as they are added, changed and
/// removed, and any other property change; runs until interrupted.
async fn monitor(
    printer: &mut Printer,
    conn: &zbus::Connection,
    bus: &Bus,
    timeout: Duration,
) -> anyhow::Result<()> {
    let builder = NmClient::builder()
        .timeout(timeout)
        .max_queued_events(pipe::MAX_QUEUED_EVENTS);
    let mut nm = NmClient::from_builder(conn, builder)
        .await
        .map_err(|err| bus::explain(err, bus, SERVICE_NAME))?;
    let mut state = Monitor {
        known: HashMap::new(),
        states: HashMap::new(),
    };
    // The initial load's additions are the state, not changes: drop them.
    let n_initial = nm.cache_mut().take_events().len();
    tracing::trace!(n_initial, "initial events dropped");
    state.refresh_all(&nm);
    if !nm.is_running() {
        printer.status(
            &serde_json::json!({"object": "networkmanager", "event": "absent"}),
            &format!("[NM] NetworkManager is not running on the {bus}; waiting for it"),
        )?;
    }
    let interrupt = crate::signals::Interrupt::install()?;
    tracing::debug!(n_objects = state.known.len(), "monitor ready");
    let mut out = Pipe::start(printer)?;
    loop {
        let event = match crate::signals::next_or_signal(nm.next_event(), &interrupt).await {
            crate::signals::Next::Event(event) => event,
            crate::signals::Next::Closed => break,
            crate::signals::Next::Interrupted(signal) => {
                crate::signals::print_stopped(printer, signal)?;
                break;
            }
        };
        match event {
            NmEvent::DeviceAdded(path)
            | NmEvent::ProfileAdded(path)
            | NmEvent::ActiveAdded(path) => {
                if let Some(reason) = nm
                    .cache()
                    .object(&path)
                    .and_then(Device::new)
                    .and_then(|device| device.state_reason())
                {
                    state.states.insert(path.to_string(), reason);
                }
                if let Some(entry) = describe(&nm, &path, &active_devices(&nm), &state.states) {
                    print(
                        printer,
                        &entry,
                        EventKind::Added,
                        None,
                        Some(entry.row.clone()),
                    )?;
                    state.known.insert(path.to_string(), entry);
                }
                state.follow_references(printer, &nm)?;
            }
            NmEvent::DeviceRemoved(path)
            | NmEvent::ProfileRemoved(path)
            | NmEvent::ActiveRemoved(path) => {
                state.states.remove(path.as_ref());
                if let Some(entry) = state.known.remove(path.as_ref()) {
                    print(
                        printer,
                        &entry,
                        EventKind::Removed,
                        Some(entry.row.clone()),
                        None,
                    )?;
                }
                state.follow_references(printer, &nm)?;
            }
            NmEvent::ProfileUpdated(path) => {
                state.changed(printer, &nm, &path)?;
                if let Some(entry) = state.known.get(path.as_ref()) {
                    // Settings changed: said even when no column of the row shows it.
                    print(
                        printer,
                        entry,
                        EventKind::Updated,
                        None,
                        Some(entry.row.clone()),
                    )?;
                }
            }
            NmEvent::DeviceStateChanged {
                path,
                old,
                new,
                reason,
            } => {
                tracing::trace!(%path, %old, %new, %reason, "device state");
                state.states.insert(path.to_string(), (new, reason));
                state.changed(printer, &nm, &path)?;
                state.follow_references(printer, &nm)?;
            }
            NmEvent::PropertyChanged {
                path,
                interface,
                property,
                old,
                new,
            } => {
                if state.known.contains_key(path.as_ref()) {
                    state.changed(printer, &nm, &path)?;
                    state.follow_references(printer, &nm)?;
                } else if old != new {
                    // (The daemon sends some properties again unchanged: not a change.)
                    // An enumeration or flags value (the manager's State, Connectivity,
                    // Metered...) by nmcli's name, its number kept next to it in JSON.
                    let row = |value| {
                        let value = match nmc::named(&interface, &property, value) {
                            Some(named) => enum_cell(named.name, named.value),
                            None => bus::cell(value),
                        };
                        vec![
                            path.to_string().into(),
                            interface.to_string().into(),
                            property.to_string().into(),
                            value,
                        ]
                    };
                    printer.event(&render::Event {
                        object: "property",
                        kind: EventKind::Changed,
                        fields: PROPERTY_FIELDS,
                        old: Some(row(&old)),
                        new: Some(row(&new)),
                    })?;
                }
            }
            NmEvent::OwnerChanged(owner) => {
                let (event, text) = match owner {
                    Some(_) => ("appeared", "NetworkManager appeared on the bus"),
                    None => ("vanished", "NetworkManager left the bus"),
                };
                printer.status(
                    &serde_json::json!({"object": "networkmanager", "event": event}),
                    &format!("[NM] {text}"),
                )?;
            }
            NmEvent::Loaded => state.refresh_all(&nm),
            NmEvent::Other(Event::LoadFailed(error)) => {
                printer.status(
                    &serde_json::json!({
                        "object": "networkmanager", "event": "load-failed",
                        "error": error.to_string(),
                    }),
                    &format!("[NM] cannot load NetworkManager: {error}"),
                )?;
            }
            NmEvent::Other(Event::Overrun { missed }) => pipe::print_overrun(printer, missed)?,
            NmEvent::Other(Event::Resynced { changes }) => {
                pipe::print_resynced(printer, changes)?;
            }
            NmEvent::Other(Event::Reconciled { differences }) => {
                pipe::print_reconciled(printer, differences)?;
            }
            other => tracing::trace!(?other, "event not shown"),
        }
        out.send(nm.cache_mut()).await?;
    }
    out.finish().await
}

fn print(
    printer: &mut Printer,
    entry: &Known,
    kind: EventKind,
    old: Option<Vec<Cell>>,
    new: Option<Vec<Cell>>,
) -> anyhow::Result<()> {
    printer.event(&render::Event {
        object: entry.object,
        kind,
        fields: entry.fields,
        old,
        new,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use netmirror_client_cache::Value as V;

    fn names(setting: &str, key: &str) -> &'static Names {
        setting_value_names(setting, key).expect("a property nmcli names")
    }

    #[test]
    fn numbers_are_named_as_nmcli_names_them() {
        let text = |setting, key, n| names(setting, key).texts(n);
        // Flags: the name nmcli puts first for zero, the type's names, hex in both forms.
        assert_eq!(
            text("connection", "mptcp-flags", 0),
            ("0x0 (default)".into(), "0x0".into())
        );
        assert_eq!(
            text("connection", "mptcp-flags", 6),
            ("0x6 (enabled, also-without-sysctl)".into(), "0x6".into())
        );
        // Bits without a name are the rest, in hex.
        assert_eq!(
            text("ipv4", "dhcp-hostname-flags", 0x31),
            ("0x31 (fqdn-serv-update, 0x30)".into(), "0x31".into())
        );
        // Names only, in both forms (terse with the names too where nmcli's table says so).
        assert_eq!(
            text("802-3-ethernet", "wake-on-lan", 0x42),
            ("phy, magic".into(), "phy, magic".into())
        );
        assert_eq!(
            text("802-1x", "phase1-auth-flags", 5),
            (
                "0x5 (tls-1-0-disable, tls-1-2-disable)".into(),
                "tls-1-0-disable, tls-1-2-disable".into()
            )
        );
        // Enumerations: a value without a name is the number alone.
        assert_eq!(
            text("ipv4", "auto-route-ext-gw", 0),
            ("0 (false)".into(), "0".into())
        );
        assert_eq!(
            text("ipv4", "auto-route-ext-gw", 7),
            ("7".into(), "7".into())
        );
        assert_eq!(
            text("ipv6", "ip6-privacy", 1),
            ("1 (enabled, prefer public IP)".into(), "1".into())
        );
        assert_eq!(
            text("ipv6", "addr-gen-mode", 0),
            ("eui64".into(), "eui64".into())
        );
        // Numbers with names for some values.
        assert_eq!(
            text("ipv4", "route-table", 254),
            ("254 (main)".into(), "254".into())
        );
        assert_eq!(text("ipv4", "route-table", 7), ("7".into(), "7".into()));
        assert_eq!(
            text("wpan", "pan-id", 0xffff),
            ("0xffff (unset)".into(), "0xffff".into())
        );
        // nmcli's own printers: known bits only, `unknown` without one.
        assert_eq!(
            text("802-11-wireless-security", "psk-flags", 9),
            ("9 (agent-owned)".into(), "9".into())
        );
        assert_eq!(
            text("vlan", "flags", 16),
            ("16 (unknown)".into(), "16".into())
        );
        assert_eq!(
            text("dcb", "app-fcoe-flags", 0),
            ("0 (disabled)".into(), "0 (disabled)".into())
        );
        assert!(setting_value_names("connection", "id").is_none());
    }

    fn dict(entries: &[(&str, V)]) -> V {
        V::Dict(Box::new(netmirror_client_cache::Dict {
            key: "s".into(),
            value: "v".into(),
            entries: entries
                .iter()
                .map(|(k, v)| (V::Str((*k).into()), V::Variant(Box::new(v.clone()))))
                .collect(),
        }))
    }

    fn array(items: Vec<V>) -> V {
        V::Array(Box::new(netmirror_client_cache::Array {
            element: "a{sv}".into(),
            items,
        }))
    }

    #[test]
    fn structured_values_are_printed_as_libnm_prints_them() {
        let rules = array(vec![
            dict(&[
                ("family", V::I32(2)),
                ("priority", V::U32(5)),
                ("to", V::Str("10.0.0.1".into())),
                ("to-len", V::U8(32)),
                ("dport-start", V::U16(80)),
                ("fwmask", V::U32(3)),
                ("action", V::U8(6)),
            ]),
            dict(&[("family", V::I32(10)), ("table", V::U32(7))]),
        ]);
        assert_eq!(
            structured_text("ipv4", "routing-rules", &rules).as_deref(),
            Some(
                "priority 5 to 10.0.0.1 fwmark 0/0x3 dport 80 type blackhole, \
                 from ::/0 table 7"
            )
        );
        let qdiscs = array(vec![dict(&[
            ("kind", V::Str("fq_codel".into())),
            ("handle", V::U32(0x1234_0000)),
            ("parent", V::U32(0xffff_ffff)),
            ("limit", V::U32(100)),
            ("ecn", V::Bool(true)),
        ])]);
        assert_eq!(
            tc_text("qdiscs", &qdiscs).as_deref(),
            Some("root handle 1234: fq_codel ecn true limit 100")
        );
        let options = dict(&[
            ("miimon", V::Str("100".into())),
            ("arp_ip_target", V::Str("192.0.2.1,192.0.2.2".into())),
            ("mode", V::Str("active-backup".into())),
        ]);
        assert_eq!(
            structured_text("bond", "options", &options).as_deref(),
            Some("mode=active-backup,arp_ip_target=192.0.2.1 192.0.2.2,miimon=100")
        );
        assert_eq!(escape_tokens(r"a,b\ c\", ",", "="), r"a\,b\\ c\\");
        assert_eq!(escape_tokens(" x ", ",", ""), r"\ x\ ");
    }

    #[test]
    fn byte_strings_are_printed_as_nmcli_prints_them() {
        // An SSID: UTF-8 as it is, other bytes as ISO-8859-1, up to a NUL.
        assert_eq!(
            bytes_text("802-11-wireless", "ssid", "café".as_bytes()),
            "café"
        );
        assert_eq!(
            bytes_text("802-11-wireless", "ssid", b"\xffab\0cd"),
            "\u{ff}ab"
        );
        // Certificates: a path, a PKCS#11 URI, or data the profile holds.
        assert_eq!(
            bytes_text("802-1x", "ca-cert", b"file:///etc/ca.pem\0"),
            "/etc/ca.pem"
        );
        assert_eq!(
            bytes_text("802-1x", "private-key", b"pkcs11:token=a\0"),
            "pkcs11:token=a"
        );
        assert_eq!(
            bytes_text("802-1x", "client-cert", b"-----BEGIN"),
            "<hidden>"
        );
        assert_eq!(bytes_text("wifi-p2p", "wfd-ies", &[0x0a, 0xbc]), "0ABC");
        assert_eq!(
            bytes_text("bluetooth", "bdaddr", &[0, 0x11, 0x22, 0x33, 0x44, 0x55]),
            "00:11:22:33:44:55"
        );
        assert_eq!(
            structured_text("infiniband", "p-key", &V::I32(0x8001)).as_deref(),
            Some("0x8001")
        );
    }
}
