//! `objects --service NAME` and `objects monitor`: any ObjectManager service through
//! `netmirror-client-cache`'s generic mode (NetworkManager's interfaces are typed by its
//! declarations; other services' values are kept as they come).
//!
//! One row per property: `PATH INTERFACE PROPERTY VALUE`. `--path` loads one object, asked of
//! the server with one `GetAll` per interface; `--interface` keeps one interface.

use netmirror_client_cache::{Event, ObjectCache, ObjectRef, Registry, nm as nmc};

use crate::args::{Bus, ObjectsAction, ObjectsArgs, ObjectsTarget, usage_error};
use crate::bus;
use crate::failure::Failure;
use crate::render::{self, Cell, EventKind, Field, Printer, Table};

/// Columns of `objects`.
const OBJECT_FIELDS: &[Field] = &[
    Field::common("PATH", "path"),
    Field::common("INTERFACE", "interface"),
    Field::common("PROPERTY", "property"),
    Field::common("VALUE", "value"),
    Field::extra("SIGNATURE", "signature"),
    Field::extra("DECLARED", "declared"),
];

/// Runs `objects` or `objects monitor`.
pub(crate) fn run(printer: &mut Printer, bus: &Bus, args: &ObjectsArgs) -> anyhow::Result<()> {
    let (target, monitor) = match &args.action {
        Some(ObjectsAction::Monitor { target }) => (merge(&args.target, target), true),
        None => (args.target.clone(), false),
    };
    let Some(service) = target.service.clone() else {
        return Err(usage_error("`objects` needs --service NAME").into());
    };
    zbus::block_on(async {
        let conn = bus::connect(bus).await?;
        let mut builder = ObjectCache::builder(service.as_str());
        if service == nmc::SERVICE {
            builder = builder
                .manager_path(nmc::MANAGER_PATH)
                .registry(Registry::network_manager());
        }
        if let Some(manager) = &target.manager {
            builder = builder.manager_path(manager.as_str());
        }
        if let Some(path) = &target.path {
            builder = builder.only_path(path.as_str());
        }
        let progress = crate::progress::Progress::start("loading objects");
        let mut cache = builder
            .build_loaded(&conn)
            .await
            .map_err(|err| bus::explain(err, bus, &service))?;
        drop(progress);
        if cache.owner().is_none() && !monitor {
            return Err(Failure::ServiceAbsent {
                service: service.clone(),
                bus: bus.to_string(),
            }
            .into());
        }
        if !monitor {
            let mut table = Table::new(OBJECT_FIELDS);
            for object in cache.objects() {
                push_rows(&mut table, object, target.interface.as_deref());
            }
            return printer.table(&table);
        }
        // The initial load's additions are the state, not changes: drop them.
        let n_initial = cache.take_events().len();
        tracing::debug!(n_objects = cache.len(), n_initial, "monitor ready");
        let wanted = |interface: &str| {
            target
                .interface
                .as_deref()
                .is_none_or(|wanted| wanted == interface)
        };
        while let Some(event) = cache.next_event().await {
            match event {
                Event::Added { path } => {
                    if let Some(object) = cache.object(&path) {
                        let interfaces = interfaces_of(
                            object.object().interfaces().map(|iface| iface.name()),
                            &wanted,
                        );
                        if !interfaces.is_empty() {
                            let row = object_row(&path, interfaces);
                            emit(printer, "object", EventKind::Added, None, Some(row))?;
                        }
                    }
                }
                Event::Removed { path, object } => {
                    let interfaces =
                        interfaces_of(object.interfaces().map(|iface| iface.name()), &wanted);
                    if !interfaces.is_empty() {
                        emit(
                            printer,
                            "object",
                            EventKind::Removed,
                            Some(object_row(&path, interfaces)),
                            None,
                        )?;
                    }
                }
                Event::PropertyChanged {
                    path,
                    interface,
                    property,
                    old,
                    new,
                } if wanted(&interface) => {
                    let row = |value| property_row(&path, &interface, &property, value, None);
                    emit(
                        printer,
                        "property",
                        EventKind::Changed,
                        Some(row(&old)),
                        Some(row(&new)),
                    )?;
                }
                Event::InterfaceAdded { path, interface } if wanted(&interface) => {
                    let row = object_row(&path, vec![interface.to_string()]);
                    emit(printer, "interface", EventKind::Added, None, Some(row))?;
                }
                Event::InterfaceRemoved { path, interface } if wanted(&interface) => {
                    let row = object_row(&path, vec![interface.to_string()]);
                    emit(printer, "interface", EventKind::Removed, Some(row), None)?;
                }
                Event::OwnerChanged { owner } => {
                    let (event, text) = match owner {
                        Some(_) => ("appeared", format!("{service} appeared on the {bus}")),
                        None => ("vanished", format!("{service} left the {bus}")),
                    };
                    printer.status(
                        &serde_json::json!({"object": "service", "event": event, "service": service}),
                        &format!("[SERVICE] {text}"),
                    )?;
                }
                other => tracing::trace!(?other, "event not shown"),
            }
        }
        Ok(())
    })
}

/// `objects monitor`'s own options, or else those given before `monitor`.
fn merge(outer: &ObjectsTarget, inner: &ObjectsTarget) -> ObjectsTarget {
    ObjectsTarget {
        service: inner.service.clone().or_else(|| outer.service.clone()),
        path: inner.path.clone().or_else(|| outer.path.clone()),
        interface: inner.interface.clone().or_else(|| outer.interface.clone()),
        manager: inner.manager.clone().or_else(|| outer.manager.clone()),
    }
}

fn interfaces_of<'a>(
    names: impl Iterator<Item = &'a str>,
    wanted: &dyn Fn(&str) -> bool,
) -> Vec<String> {
    names
        .filter(|name| wanted(name))
        .map(str::to_owned)
        .collect()
}

/// One row per property of `object` (of `interface` only, when given).
fn push_rows(table: &mut Table, object: ObjectRef<'_>, interface: Option<&str>) {
    for iface in object.object().interfaces() {
        if interface.is_some_and(|wanted| wanted != iface.name()) {
            continue;
        }
        for (property, value) in iface.properties() {
            table.push(property_row(
                object.path(),
                iface.name(),
                property,
                value,
                Some(iface.is_declared()),
            ));
        }
    }
}

fn property_row(
    path: &str,
    interface: &str,
    property: &str,
    value: &netmirror_client_cache::Value,
    declared: Option<bool>,
) -> Vec<Cell> {
    vec![
        path.to_owned().into(),
        interface.to_owned().into(),
        property.to_owned().into(),
        bus::cell(value),
        Cell::opt_text(Some(value.signature()).filter(|signature| !signature.is_empty())),
        declared.map_or(Cell::Null, Cell::Bool),
    ]
}

/// An object as a whole (added or removed): its path and interfaces.
fn object_row(path: &str, interfaces: Vec<String>) -> Vec<Cell> {
    vec![
        path.to_owned().into(),
        Cell::List(interfaces),
        Cell::Null,
        Cell::Null,
        Cell::Null,
        Cell::Null,
    ]
}

fn emit(
    printer: &mut Printer,
    object: &str,
    kind: EventKind,
    old: Option<Vec<Cell>>,
    new: Option<Vec<Cell>>,
) -> anyhow::Result<()> {
    printer.event(&render::Event {
        object,
        kind,
        fields: OBJECT_FIELDS,
        old,
        new,
    })
}
