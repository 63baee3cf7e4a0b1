//! `nm general|device|connection|active|monitor`: NetworkManager through
//! `netmirror-client-cache`'s typed layer, with nmcli's column names and values.
//!
//! `nm device IFACE` asks the daemon for that one device (`GetDeviceByIpIface`, with the
//! library's fallback to loading everything) instead of loading every object.

use std::collections::HashMap;

use netmirror_client_cache::nm::{
    self as nmc, ActiveConnection, Device, NmClient, NmEvent, Profile,
};

use crate::args::{Bus, NmAction, NmArgs};
use crate::bus;
use crate::failure::Failure;
use crate::render::{self, Cell, EventKind, Field, Printer, Table};

/// Columns of `nm general`, as `nmcli general` names them.
pub(crate) const GENERAL_FIELDS: &[Field] = &[
    Field::common("STATE", "state"),
    Field::common("CONNECTIVITY", "connectivity"),
    Field::common("WIFI-HW", "wifi_hw"),
    Field::common("WIFI", "wifi"),
    Field::common("WWAN-HW", "wwan_hw"),
    Field::common("WWAN", "wwan"),
    Field::extra("NETWORKING", "networking"),
    Field::extra("VERSION", "version"),
    Field::extra("STARTUP", "startup"),
    Field::extra("METERED", "metered"),
];

/// Columns of `nm device`, as `nmcli device` names them.
pub(crate) const DEVICE_FIELDS: &[Field] = &[
    Field::common("DEVICE", "device"),
    Field::common("TYPE", "type"),
    Field::common("STATE", "state"),
    Field::common("CONNECTION", "connection"),
    Field::extra("IFINDEX", "ifindex"),
    Field::extra("HWADDR", "hwaddr"),
    Field::extra("MTU", "mtu"),
    Field::extra("DRIVER", "driver"),
    Field::extra("MANAGED", "managed"),
    Field::extra("AUTOCONNECT", "autoconnect"),
    Field::extra("REAL", "real"),
    Field::extra("CON-UUID", "con_uuid"),
    Field::extra("DBUS-PATH", "dbus_path"),
    Field::extra("CON-PATH", "con_path"),
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

/// Columns of `nm active`, as `nmcli connection show --active` names them.
pub(crate) const ACTIVE_FIELDS: &[Field] = &[
    Field::common("NAME", "name"),
    Field::common("UUID", "uuid"),
    Field::common("TYPE", "type"),
    Field::common("DEVICE", "device"),
    Field::common("STATE", "state"),
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
pub(crate) fn run(printer: &mut Printer, bus: &Bus, args: &NmArgs) -> anyhow::Result<()> {
    if let Some(done) = crate::nm_actions::run(printer, bus, args) {
        return done;
    }
    zbus::block_on(async {
        let conn = bus::connect(bus).await?;
        match &args.action {
            None | Some(NmAction::General) => {
                let nm = load(&conn, bus).await?;
                printer.table(&general_table(&nm))
            }
            Some(NmAction::Device { iface: None, .. }) => {
                let nm = load(&conn, bus).await?;
                printer.table(&device_table(&nm.devices()))
            }
            Some(NmAction::Device {
                iface: Some(iface), ..
            }) => {
                let nm =
                    NmClient::device_by_iface(&conn, iface)
                        .await
                        .map_err(|err| match &err {
                            netmirror_client_cache::Error::Remote { name, .. }
                                if name.ends_with(".UnknownDevice") =>
                            {
                                anyhow::anyhow!("device '{iface}' not found")
                            }
                            _ => bus::explain(err, bus, SERVICE_NAME),
                        })?;
                require_running(&nm, bus)?;
                let device = nm
                    .device_by_name(iface)
                    .ok_or_else(|| anyhow::anyhow!("device '{iface}' not found"))?;
                printer.properties(&device_properties(&device))
            }
            Some(NmAction::Connection { id: None, .. }) => {
                let nm = load(&conn, bus).await?;
                printer.table(&connection_table(&nm))
            }
            Some(NmAction::Connection { id: Some(id), .. }) => {
                let nm = load(&conn, bus).await?;
                let profile = nm
                    .connections()
                    .into_iter()
                    .find(|profile| profile.uuid() == id.as_str() || profile.id() == id.as_str())
                    .ok_or_else(|| anyhow::anyhow!("no connection profile '{id}'"))?;
                printer.properties(&profile_properties(&profile))
            }
            Some(NmAction::Active) => {
                let nm = load(&conn, bus).await?;
                printer.table(&active_table(&nm.active_connections()))
            }
            Some(NmAction::Monitor) => monitor(printer, &conn, bus).await,
            Some(
                NmAction::Networking { .. } | NmAction::Radio { .. } | NmAction::Checkpoint { .. },
            ) => Err(anyhow::anyhow!("a changing command reached the views")),
        }
    })
}

/// The name used in messages.
const SERVICE_NAME: &str = "NetworkManager";

/// Loads NetworkManager's state; its absence is an error.
async fn load(conn: &zbus::Connection, bus: &Bus) -> anyhow::Result<NmClient> {
    let progress = crate::progress::Progress::start("loading NetworkManager");
    let nm = NmClient::new(conn)
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

/// nmcli's name of an `NMState`.
fn state_name(state: u32) -> &'static str {
    match state {
        10 => "asleep",
        20 => "disconnected",
        30 => "disconnecting",
        40 => "connecting",
        50 => "connected (local only)",
        60 => "connected (site only)",
        70 => "connected",
        _ => "unknown",
    }
}

/// nmcli's name of an `NMConnectivityState`.
fn connectivity_name(connectivity: u32) -> &'static str {
    match connectivity {
        1 => "none",
        2 => "portal",
        3 => "limited",
        4 => "full",
        _ => "unknown",
    }
}

/// nmcli's name of an `NMActiveConnectionState`.
fn active_state_name(state: u32) -> &'static str {
    match state {
        1 => "activating",
        2 => "activated",
        3 => "deactivating",
        4 => "deactivated",
        _ => "unknown",
    }
}

/// nmcli's name of an `NMMetered`.
fn metered_name(metered: u32) -> &'static str {
    match metered {
        1 => "yes",
        2 => "no",
        3 => "yes (guessed)",
        4 => "no (guessed)",
        _ => "unknown",
    }
}

fn enabled(on: bool) -> Cell {
    Cell::from(if on { "enabled" } else { "disabled" })
}

fn text(value: &str) -> Cell {
    if value.is_empty() {
        Cell::Null
    } else {
        Cell::from(value.to_owned())
    }
}

/// The one row of `nm general`.
pub(crate) fn general_table(nm: &NmClient) -> Table {
    let mut table = Table::new(GENERAL_FIELDS);
    if let Some(manager) = nm.manager() {
        let flag = |name: &str| {
            manager
                .property(name)
                .and_then(|value| value.as_bool())
                .unwrap_or(false)
        };
        table.push(vec![
            state_name(manager.state()).into(),
            connectivity_name(manager.connectivity()).into(),
            enabled(flag("WirelessHardwareEnabled")),
            enabled(manager.wireless_enabled()),
            enabled(flag("WwanHardwareEnabled")),
            enabled(flag("WwanEnabled")),
            enabled(manager.networking_enabled()),
            text(manager.version()),
            manager.startup().into(),
            metered_name(manager.metered()).into(),
        ]);
    }
    table
}

/// A device's row.
fn device_row(device: &Device<'_>) -> Vec<Cell> {
    let active = device.active_connection();
    vec![
        text(device.interface()),
        device.type_name().into(),
        device.state_name().into(),
        active.map_or(Cell::Null, |active| text(active.id())),
        Cell::Int(device.ifindex().into()),
        text(device.hw_address()),
        device.mtu().into(),
        text(device.driver()),
        device.managed().into(),
        device.autoconnect().into(),
        device.real().into(),
        active.map_or(Cell::Null, |active| text(active.uuid())),
        device.path().to_owned().into(),
        active
            .and_then(|active| active.connection())
            .map_or(Cell::Null, |profile| profile.path().to_owned().into()),
    ]
}

/// `nm device`: the realized devices, in the daemon's order.
pub(crate) fn device_table(devices: &[Device<'_>]) -> Table {
    let mut table = Table::new(DEVICE_FIELDS);
    for device in devices {
        table.push(device_row(device));
    }
    table
}

/// `nm device IFACE`: one device, as `nmcli device show` names its properties.
fn device_properties(device: &Device<'_>) -> Vec<(String, Cell)> {
    let active = device.active_connection();
    let mut props = vec![
        ("GENERAL.DEVICE".to_owned(), text(device.interface())),
        ("GENERAL.TYPE".to_owned(), device.type_name().into()),
        ("GENERAL.HWADDR".to_owned(), text(device.hw_address())),
        ("GENERAL.MTU".to_owned(), device.mtu().into()),
        (
            "GENERAL.STATE".to_owned(),
            format!("{} ({})", device.state(), device.state_name()).into(),
        ),
        (
            "GENERAL.CONNECTION".to_owned(),
            active.map_or(Cell::Null, |active| text(active.id())),
        ),
        (
            "GENERAL.CON-PATH".to_owned(),
            active
                .and_then(|active| active.connection())
                .map_or(Cell::Null, |profile| profile.path().to_owned().into()),
        ),
        ("GENERAL.DRIVER".to_owned(), text(device.driver())),
        ("GENERAL.MANAGED".to_owned(), device.managed().into()),
        ("GENERAL.REAL".to_owned(), device.real().into()),
        (
            "GENERAL.DBUS-PATH".to_owned(),
            device.path().to_owned().into(),
        ),
    ];
    if let Some(ip4) = device.ip4_config() {
        props.push(("IP4.GATEWAY".to_owned(), text(ip4.gateway())));
    }
    if let Some(ip6) = device.ip6_config() {
        props.push(("IP6.GATEWAY".to_owned(), text(ip6.gateway())));
    }
    props
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
                        .map(|device| device.interface().to_owned()),
                );
        }
    }
    devices
}

/// A profile's row.
fn profile_row(profile: &Profile<'_>, devices: &HashMap<String, Vec<String>>) -> Vec<Cell> {
    let on = devices.get(profile.path());
    vec![
        text(profile.id()),
        text(profile.uuid()),
        text(profile.connection_type()),
        on.map_or(Cell::Null, |names| Cell::List(names.clone())),
        text(profile.interface_name()),
        on.is_some().into(),
        text(profile.filename()),
        profile.path().to_owned().into(),
    ]
}

/// `nm connection`: the visible profiles, in the daemon's order.
pub(crate) fn connection_table(nm: &NmClient) -> Table {
    let devices = active_devices(nm);
    let mut table = Table::new(CONNECTION_FIELDS);
    for profile in nm.connections() {
        table.push(profile_row(&profile, &devices));
    }
    table
}

/// `nm connection ID`: every setting the daemon returned, named `setting.key` as nmcli does.
fn profile_properties(profile: &Profile<'_>) -> Vec<(String, Cell)> {
    let mut props = Vec::new();
    if let Some(netmirror_client_cache::Value::Dict(settings)) =
        profile.settings().map(|value| value.unwrap_variant())
    {
        for (setting, values) in &settings.entries {
            let Some(setting) = setting.as_str() else {
                continue;
            };
            if let netmirror_client_cache::Value::Dict(values) = values.unwrap_variant() {
                for (key, value) in &values.entries {
                    let Some(key) = key.as_str() else { continue };
                    props.push((
                        format!("{setting}.{key}"),
                        bus::cell(value.unwrap_variant()),
                    ));
                }
            }
        }
    }
    props.push(("DBUS-PATH".to_owned(), profile.path().to_owned().into()));
    props
}

/// An active connection's row.
fn active_row(active: &ActiveConnection<'_>) -> Vec<Cell> {
    let devices: Vec<String> = active
        .devices()
        .iter()
        .map(|device| device.interface().to_owned())
        .collect();
    vec![
        text(active.id()),
        text(active.uuid()),
        text(active.connection_type()),
        if devices.is_empty() {
            Cell::Null
        } else {
            Cell::List(devices)
        },
        active_state_name(active.state()).into(),
        active.default4().into(),
        active.default6().into(),
        active.vpn().into(),
        active.path().to_owned().into(),
        active
            .connection()
            .map_or(Cell::Null, |profile| profile.path().to_owned().into()),
    ]
}

/// `nm active`.
pub(crate) fn active_table(actives: &[ActiveConnection<'_>]) -> Table {
    let mut table = Table::new(ACTIVE_FIELDS);
    for active in actives {
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
}

/// NetworkManager's part of the overview, from the system bus; its absence is not an error.
pub(crate) fn overview() -> Overview {
    let bus = Bus::System;
    let result: anyhow::Result<Overview> = zbus::block_on(async {
        let conn = bus::connect(&bus).await?;
        let nm = NmClient::new(&conn)
            .await
            .map_err(|err| bus::explain(err, &bus, SERVICE_NAME))?;
        if !nm.is_running() {
            return Ok(Overview::Absent(format!(
                "NetworkManager is not running on the {bus}"
            )));
        }
        Ok(Overview::Running {
            general: general_table(&nm),
            devices: device_table(&nm.devices()),
        })
    });
    result.unwrap_or_else(|err| {
        tracing::debug!(error = %format!("{err:#}"), "no NetworkManager for the overview");
        Overview::Absent(format!("NetworkManager is not available: {err:#}"))
    })
}

/// What the monitor knows of an object, to print it when it changes or goes away.
struct Known {
    object: &'static str,
    fields: &'static [Field],
    row: Vec<Cell>,
}

/// The row of the object at `path`, if it is a device, visible profile or active connection.
fn describe(nm: &NmClient, path: &str, devices: &HashMap<String, Vec<String>>) -> Option<Known> {
    let cache = nm.cache();
    let object = cache.object(path)?;
    if object.object().has_interface(nmc::iface::DEVICE) {
        return Some(Known {
            object: "device",
            fields: DEVICE_FIELDS,
            row: device_row(&Device(object)),
        });
    }
    if object.object().has_interface(nmc::iface::CONNECTION) {
        let profile = Profile(object);
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
        return Some(Known {
            object: "active",
            fields: ACTIVE_FIELDS,
            row: active_row(&ActiveConnection(object)),
        });
    }
    None
}

/// `nm monitor`: devices, profiles and active connections as they are added, changed and
/// removed, and any other property change; runs until interrupted.
async fn monitor(printer: &mut Printer, conn: &zbus::Connection, bus: &Bus) -> anyhow::Result<()> {
    let mut nm = NmClient::new(conn)
        .await
        .map_err(|err| bus::explain(err, bus, SERVICE_NAME))?;
    let mut known: HashMap<String, Known> = HashMap::new();
    let refresh_all = |nm: &NmClient, known: &mut HashMap<String, Known>| {
        known.clear();
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
            if let Some(entry) = describe(nm, &path, &devices) {
                known.insert(path, entry);
            }
        }
    };
    // The initial load's additions are the state, not changes: drop them.
    let n_initial = nm.cache_mut().take_events().len();
    tracing::trace!(n_initial, "initial events dropped");
    refresh_all(&nm, &mut known);
    if !nm.is_running() {
        printer.status(
            &serde_json::json!({"object": "networkmanager", "event": "absent"}),
            &format!("[NM] NetworkManager is not running on the {bus}; waiting for it"),
        )?;
    }
    tracing::debug!(n_objects = known.len(), "monitor ready");
    while let Some(event) = nm.next_event().await {
        match event {
            NmEvent::DeviceAdded(path)
            | NmEvent::ProfileAdded(path)
            | NmEvent::ActiveAdded(path) => {
                if let Some(entry) = describe(&nm, &path, &active_devices(&nm)) {
                    print(
                        printer,
                        &entry,
                        EventKind::Added,
                        None,
                        Some(entry.row.clone()),
                    )?;
                    known.insert(path.to_string(), entry);
                }
            }
            NmEvent::DeviceRemoved(path)
            | NmEvent::ProfileRemoved(path)
            | NmEvent::ActiveRemoved(path) => {
                if let Some(entry) = known.remove(path.as_ref()) {
                    print(
                        printer,
                        &entry,
                        EventKind::Removed,
                        Some(entry.row.clone()),
                        None,
                    )?;
                }
            }
            NmEvent::ProfileUpdated(path) => {
                changed(printer, &nm, &mut known, &path, &active_devices(&nm))?;
            }
            NmEvent::PropertyChanged {
                path,
                interface,
                property,
                old,
                new,
            } => {
                if known.contains_key(path.as_ref()) {
                    changed(printer, &nm, &mut known, &path, &active_devices(&nm))?;
                } else {
                    let row = |value| {
                        vec![
                            path.to_string().into(),
                            interface.to_string().into(),
                            property.to_string().into(),
                            bus::cell(value),
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
            NmEvent::Loaded => refresh_all(&nm, &mut known),
            other => tracing::trace!(?other, "event not shown"),
        }
    }
    Ok(())
}

/// Prints a change of a known object when its row changed.
fn changed(
    printer: &mut Printer,
    nm: &NmClient,
    known: &mut HashMap<String, Known>,
    path: &str,
    devices: &HashMap<String, Vec<String>>,
) -> anyhow::Result<()> {
    let Some(entry) = describe(nm, path, devices) else {
        return Ok(());
    };
    if let Some(before) = known.get(path)
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
    known.insert(path.to_owned(), entry);
    Ok(())
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
