//! `objects --service NAME` and `objects monitor`: any ObjectManager service through
//! `netmirror-client-cache`'s generic mode (NetworkManager's interfaces are typed by its
//! declarations; other services' values are kept as they come).
//!
//! One row per property: `PATH INTERFACE PROPERTY VALUE`. `--path` loads one object, asked of
//! the server with one `GetAll` per interface; `--interface` keeps one interface.

use netmirror_client_cache::{self as client, Event, ObjectCache, ObjectRef, Registry, nm as nmc};

use crate::args::{Bus, ObjectsAction, ObjectsArgs, ObjectsTarget, usage_error};
use crate::bus;
use crate::failure::Failure;
use crate::pipe::{self, Pipe};
use crate::render::{self, Cell, EventKind, Field, Printer, Table, TypedCell};

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
pub(crate) fn run(
    printer: &mut Printer,
    bus: &Bus,
    timeout: std::time::Duration,
    args: &ObjectsArgs,
) -> anyhow::Result<()> {
    let (target, monitor) = match &args.action {
        Some(ObjectsAction::Monitor { target }) => (merge(&args.target, target), true),
        None => (args.target.clone(), false),
    };
    if let Some(file) = &target.replay {
        if monitor {
            return Err(usage_error(
                "`objects monitor` does not replay: `objects --replay FILE` lists a recording's objects",
            )
            .into());
        }
        return replay(printer, file, target.interface.as_deref());
    }
    let Some(service) = target.service.clone() else {
        return Err(usage_error("`objects` needs --service NAME").into());
    };
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
    if monitor {
        builder = builder.max_queued_events(pipe::MAX_QUEUED_EVENTS);
    }
    if let Some(file) = &target.record {
        builder = builder.record_to(file);
    }
    let builder = bus::prepare(builder, timeout)?;
    zbus::block_on(async {
        let conn = bus::connect(bus).await?;
        // Where the service's ObjectManager is: the path given, `/`, the path its name gives,
        // or the first one found by introspection (the builder above was checked with the
        // path given or NetworkManager's, and keeps it when nothing better is found).
        let mut builder = builder;
        // What to say when the service turns out to have no ObjectManager at all.
        let mut none_found = None;
        match find_manager(&conn, &service, target.manager.as_deref(), timeout).await {
            Ok(Some((path, how))) => {
                tracing::info!(%service, manager = %path, how, "ObjectManager found");
                builder = builder.manager_path(path.as_str());
            }
            // Not on the bus (yet): the cache says so, or the monitor waits for it.
            Ok(None) => {}
            // Introspection is not proof (a service may not describe what it serves): ask at
            // `/` anyway, and say there is none only when the service says so too.
            Err(NoManager::Nowhere(text) | NoManager::NotAt(text)) => {
                tracing::info!(%service, "no ObjectManager in the introspection data; asking anyway");
                none_found = Some(text);
            }
        }
        let progress = crate::progress::Progress::start("loading objects");
        let mut cache =
            builder
                .build_loaded(&conn)
                .await
                .map_err(|err| match (&none_found, &err) {
                    (Some(text), client::Error::Call(call))
                        if call.error_name().is_some_and(|name| {
                            name.ends_with(".UnknownMethod")
                                || name.ends_with(".UnknownInterface")
                                || name.ends_with(".UnknownObject")
                        }) =>
                    {
                        let name = call.error_name().unwrap_or_default();
                        anyhow::anyhow!("{text} (it answered {} with {name})", call.method)
                    }
                    _ => bus::explain(err, bus, &service),
                })?;
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
                push_rows(
                    &mut table,
                    object.path(),
                    object.object(),
                    target.interface.as_deref(),
                );
            }
            finish_recording(&mut cache, target.record.as_deref())?;
            return printer.table(&table);
        }
        // The initial load's additions are the state, not changes: drop them.
        let n_initial = cache.take_events().len();
        let interrupt = crate::signals::Interrupt::install()?;
        tracing::debug!(n_objects = cache.len(), n_initial, "monitor ready");
        let wanted = |interface: &str| {
            target
                .interface
                .as_deref()
                .is_none_or(|wanted| wanted == interface)
        };
        let mut out = Pipe::start(printer)?;
        loop {
            let event = match crate::signals::next_or_signal(cache.next_event(), &interrupt).await {
                crate::signals::Next::Event(event) => event,
                crate::signals::Next::Closed => break,
                crate::signals::Next::Interrupted(signal) => {
                    crate::signals::print_stopped(printer, signal)?;
                    break;
                }
            };
            match event {
                Event::Added { path } => {
                    if let Some(object) = cache.object(&path) {
                        let interfaces = interfaces_of(
                            object.object().interfaces().map(|iface| iface.name()),
                            &wanted,
                        );
                        if !interfaces.is_empty() {
                            let mut row = object_row(&path, interfaces);
                            row[3] = properties_cell(object, &wanted);
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
                    let declared = cache
                        .object(&path)
                        .and_then(|o| o.object().interface(&interface).map(|i| i.is_declared()));
                    let row = |value| property_row(&path, &interface, &property, value, declared);
                    emit(
                        printer,
                        "property",
                        EventKind::Changed,
                        Some(row(&old)),
                        Some(row(&new)),
                    )?;
                }
                Event::InterfaceAdded { path, interface } if wanted(&interface) => {
                    // With its properties, as `InterfacesAdded` carries them.
                    let mut row = object_row(&path, vec![interface.to_string()]);
                    if let Some(object) = cache.object(&path) {
                        row[3] = properties_cell(object, &|name| name == &*interface);
                    }
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
                Event::LoadFailed(error) => {
                    printer.status(
                        &serde_json::json!({
                            "object": "service", "event": "load-failed",
                            "service": service, "error": error.to_string(),
                        }),
                        &format!("[SERVICE] cannot load {service}: {error}"),
                    )?;
                }
                Event::Overrun { missed } => pipe::print_overrun(printer, missed)?,
                Event::Resynced { changes } => pipe::print_resynced(printer, changes)?,
                Event::Reconciled { differences } => {
                    pipe::print_reconciled(printer, differences)?;
                }
                other => tracing::trace!(?other, "event not shown"),
            }
            out.send(&mut cache).await?;
        }
        out.finish().await?;
        finish_recording(&mut cache, target.record.as_deref())
    })
}

/// Ends the recording asked for with `--record`, saying why it is incomplete if it is.
fn finish_recording(cache: &mut ObjectCache, file: Option<&std::path::Path>) -> anyhow::Result<()> {
    match (cache.finish_recording(), file) {
        (Err(err), Some(file)) => Err(anyhow::anyhow!(
            "cannot record to {}: {err}",
            file.display()
        )),
        _ => Ok(()),
    }
}

/// `objects --replay FILE`: the objects the recorded cache held at the end of the recording,
/// from a replay of it without a bus, with the declarations it was recorded with (none, or
/// NetworkManager's).
fn replay(
    printer: &mut Printer,
    file: &std::path::Path,
    interface: Option<&str>,
) -> anyhow::Result<()> {
    use netmirror_client_cache::replay::Replay;
    let replay = Replay::open(file)?;
    let builder = replay.builder();
    let builder = if replay.config().service == nmc::SERVICE {
        builder.registry(Registry::network_manager())
    } else {
        builder
    };
    let replayed = match replay.run(builder.clone()) {
        // Recorded generically (`objects` declares NetworkManager's interfaces only for it).
        Err(client::replay::ReplayError::Config(_)) if replay.config().registry.1 == 0 => {
            replay.run(builder.registry(Registry::generic()))?
        }
        other => other?,
    };
    tracing::info!(
        service = %replay.config().service,
        objects = replayed.len(),
        events = replayed.events().len(),
        "replayed"
    );
    let mut objects: Vec<_> = replayed.objects().collect();
    objects.sort_by(|a, b| a.0.cmp(b.0));
    let mut table = Table::new(OBJECT_FIELDS);
    for (path, object) in objects {
        push_rows(&mut table, path, object, interface);
    }
    printer.table(&table)
}

/// `objects monitor`'s own options, or else those given before `monitor`.
fn merge(outer: &ObjectsTarget, inner: &ObjectsTarget) -> ObjectsTarget {
    ObjectsTarget {
        service: inner.service.clone().or_else(|| outer.service.clone()),
        path: inner.path.clone().or_else(|| outer.path.clone()),
        interface: inner.interface.clone().or_else(|| outer.interface.clone()),
        manager: inner.manager.clone().or_else(|| outer.manager.clone()),
        record: inner.record.clone().or_else(|| outer.record.clone()),
        replay: inner.replay.clone().or_else(|| outer.replay.clone()),
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
fn push_rows(
    table: &mut Table,
    path: &str,
    object: &netmirror_client_cache::Object,
    interface: Option<&str>,
) {
    for iface in object.interfaces() {
        if interface.is_some_and(|wanted| wanted != iface.name()) {
            continue;
        }
        let mut any = false;
        for (property, value) in iface.properties() {
            any = true;
            table.push(property_row(
                path,
                iface.name(),
                property,
                value,
                Some(iface.is_declared()),
            ));
        }
        if !any {
            // An interface without properties (NetworkManager's AgentManager, a loopback
            // device's `Device.Loopback`) is still part of the object: one row without one.
            table.push(vec![
                path.to_owned().into(),
                iface.name().to_owned().into(),
                Cell::Null,
                Cell::Null,
                Cell::Null,
                Cell::Bool(iface.is_declared()),
            ]);
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

/// An added object's properties: `interface.Property=value` for people, and in JSON an object
/// of interfaces, each an object of its properties.
fn properties_cell(object: ObjectRef<'_>, wanted: &dyn Fn(&str) -> bool) -> Cell {
    let mut json = serde_json::Map::new();
    let mut text = Vec::new();
    for iface in object.object().interfaces() {
        if !wanted(iface.name()) {
            continue;
        }
        let mut props = serde_json::Map::new();
        for (property, value) in iface.properties() {
            props.insert(property.to_owned(), bus::json(value));
            text.push(format!(
                "{}.{property}={}",
                short_name(iface.name()),
                bus::cell(value).text()
            ));
        }
        json.insert(iface.name().to_owned(), serde_json::Value::Object(props));
    }
    Cell::from(TypedCell {
        text: text.join(" "),
        json: serde_json::Value::Object(json),
    })
}

/// The last part of an interface name (`Block` of `org.freedesktop.UDisks2.Block`).
fn short_name(interface: &str) -> &str {
    interface.rsplit('.').next().unwrap_or(interface)
}

/// Whether `path` of `service` implements `org.freedesktop.DBus.ObjectManager`, and the
/// names of its children, from its introspection data (`None` when it cannot be read).
async fn introspect(
    conn: &zbus::Connection,
    service: &str,
    path: &str,
    deadline: std::time::Instant,
) -> Option<(bool, Vec<String>)> {
    let path = zbus::ObjectPath::try_from(path).ok()?;
    let call = conn.call_method(
        Some(service),
        path,
        Some("org.freedesktop.DBus.Introspectable"),
        "Introspect",
        &(),
    );
    // Like every call, bounded: a service that never answers does not hang the walk.
    let timer = async {
        // zbus's own runtime, which `conn` runs on (no second reactor, no thread).
        match zruntime::SharedRuntime::current() {
            Ok(runtime) => runtime.sleep_until(deadline).await,
            Err(_) => std::future::pending().await,
        }
        None
    };
    let reply = futures_util::future::select(Box::pin(async { Some(call.await) }), Box::pin(timer))
        .await
        .factor_first()
        .0?
        .ok()?;
    let xml: String = reply.body().deserialize().ok()?;
    // Unreadable introspection data is no data: the walk goes on without this object.
    let node = zbus_xml::Node::try_from(xml.as_str()).ok()?;
    Some(node_manager_and_children(&node))
}

/// Whether `node` implements `org.freedesktop.DBus.ObjectManager`, and its children's names.
fn node_manager_and_children(node: &zbus_xml::Node<'_>) -> (bool, Vec<String>) {
    let manager = <zbus::fdo::ObjectManager as zbus::object_server::Interface>::name();
    let has = node.interfaces().iter().any(|i| i.name() == manager);
    let children = node
        .nodes()
        .iter()
        .filter_map(|child| child.name())
        .map(str::to_owned)
        .collect();
    (has, children)
}

/// How many objects the walk for an ObjectManager introspects at most.
const WALK_LIMIT: usize = 2000;

/// Finds `service`'s ObjectManager: at `given` (which must have one), else at `/`, else at
/// the path its well-known name names (`/org/freedesktop/UDisks2`), else the first one met
/// walking its objects from `/` (breadth first). `Ok(None)` when the service is not on the
/// bus; an error when it has none.
async fn find_manager(
    conn: &zbus::Connection,
    service: &str,
    given: Option<&str>,
    timeout: std::time::Duration,
) -> Result<Option<(String, &'static str)>, NoManager> {
    // The whole search shares one deadline, the calls' own.
    let deadline = std::time::Instant::now() + timeout;
    let Some((root_has, root_children)) = introspect(conn, service, "/", deadline).await else {
        return Ok(None);
    };
    if let Some(given) = given {
        return match introspect(conn, service, given, deadline).await {
            Some((true, _)) => Ok(Some((given.to_owned(), "given"))),
            _ => Err(NoManager::NotAt(format!(
                "{service} has no ObjectManager at {given}"
            ))),
        };
    }
    if service == nmc::SERVICE {
        return Ok(Some((nmc::MANAGER_PATH.to_owned(), "NetworkManager's")));
    }
    if root_has {
        return Ok(Some(("/".to_owned(), "at /")));
    }
    let derived = format!("/{}", service.replace('.', "/"));
    if let Some((true, _)) = introspect(conn, service, &derived, deadline).await {
        return Ok(Some((derived, "from the service's name")));
    }
    let mut queue: std::collections::VecDeque<String> = root_children
        .into_iter()
        .map(|child| format!("/{child}"))
        .collect();
    let mut visited = 1;
    while let Some(path) = queue.pop_front() {
        if visited >= WALK_LIMIT {
            break;
        }
        visited += 1;
        if std::time::Instant::now() >= deadline {
            break;
        }
        let Some((has, children)) = introspect(conn, service, &path, deadline).await else {
            continue;
        };
        if has {
            return Ok(Some((path, "walking the objects from /")));
        }
        queue.extend(children.into_iter().map(|child| format!("{path}/{child}")));
    }
    Err(NoManager::Nowhere(format!(
        "{service} has no ObjectManager (looked at /, {derived} and {visited} objects under /)"
    )))
}

/// Why [`find_manager`] found no ObjectManager in the introspection data, with the sentence
/// for the user should the service confirm it (a `GetManagedObjects` it does not know).
enum NoManager {
    /// Not at the path given (which is then asked all the same).
    NotAt(String),
    /// Nowhere its introspection data shows (`/` is then asked all the same).
    Nowhere(String),
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

#[cfg(test)]
mod tests {
    use super::node_manager_and_children;

    #[test]
    fn introspection_data_names_the_manager_and_the_children() {
        let xml = r#"<!DOCTYPE node PUBLIC "-//freedesktop//DTD D-BUS Object Introspection 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd">
<node>
  <interface name="org.freedesktop.DBus.ObjectManager">
    <method name="GetManagedObjects">
      <arg type="a{oa{sa{sv}}}" name="objects" direction="out"/>
    </method>
  </interface>
  <interface name="org.example.NotTheManager"/>
  <node name="block_devices"/>
  <node name="drives"/>
</node>"#;
        let node = zbus_xml::Node::try_from(xml).unwrap();
        assert_eq!(
            node_manager_and_children(&node),
            (true, vec!["block_devices".to_owned(), "drives".to_owned()])
        );
        // A name that merely contains the manager's, in a comment or an attribute value
        // elsewhere, is not the interface (the old substring search took it).
        let xml = r#"<node><!-- "org.freedesktop.DBus.ObjectManager" -->
  <interface name="org.example.I">
    <annotation name="x" value="org.freedesktop.DBus.ObjectManager"/>
  </interface>
</node>"#;
        let node = zbus_xml::Node::try_from(xml).unwrap();
        assert_eq!(node_manager_and_children(&node), (false, vec![]));
    }
}
