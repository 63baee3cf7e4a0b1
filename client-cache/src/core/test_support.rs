//! Synthetic messages for the core's unit tests: calls taken from what the core sends, replies
//! and signals built with zbus's message builders, no bus.

use std::collections::HashMap;

use zbus::{Message, ObjectPath, Variant as ZValue, message::Builder};

use super::{BUS, Config, Core, DEFAULT_MAX_EVENTS, DEFAULT_TIMEOUT, OM, PROPS, Scope};
use crate::{debug::DebugConfig, meta::Registry};

pub(crate) use crate::event::Event;

/// The service's well-known name.
pub(crate) const SERVICE: &str = "org.example.Service";
/// Its owner's unique name.
pub(crate) const OWNER: &str = ":1.5";

/// One object: path, and interfaces with `u32` properties.
pub(crate) type Obj<'a> = (&'a str, &'a [(&'a str, &'a [(&'a str, u32)])]);

/// A generic cache of [`SERVICE`] at `/`, whose warnings are counted, not fatal.
pub(crate) fn config() -> Config {
    Config {
        service: SERVICE.into(),
        manager_path: "/".into(),
        registry: Registry::generic(),
        fetches: Vec::new(),
        keep_fetched: None,
        scope: Scope::All,
        debug: DebugConfig::tolerant(),
        timeout: DEFAULT_TIMEOUT,
        max_events: DEFAULT_MAX_EVENTS,
    }
}

pub(crate) fn bus_core(cfg: Config) -> Core {
    Core::new(cfg, true)
}

/// The members of the calls the core queued (taken from its queue).
pub(crate) fn sent_members(core: &mut Core) -> Vec<String> {
    core.out
        .drain(..)
        .map(|m| {
            m.header()
                .member()
                .map(|m| m.to_string())
                .unwrap_or_default()
        })
        .collect()
}

/// The members of the calls the core queued (left in its queue).
pub(crate) fn queued_members(core: &Core) -> Vec<String> {
    core.out
        .iter()
        .map(|m| {
            m.header()
                .member()
                .map(|m| m.to_string())
                .unwrap_or_default()
        })
        .collect()
}

/// Takes the first queued call of `member`.
pub(crate) fn take_call(core: &mut Core, member: &str) -> Message {
    let at = core
        .out
        .iter()
        .position(|m| m.header().member().is_some_and(|m| m == member))
        .unwrap_or_else(|| panic!("no {member} call queued in {:?}", core.out));
    core.out.remove(at)
}

/// A reply to `call`, from its destination.
pub(crate) fn reply_to(call: &Message) -> Builder<'static> {
    let hdr = call.header();
    let dest = hdr.destination().map(|d| d.to_string());
    let b = Message::method_return(&hdr);
    match dest {
        Some(d) if d == BUS || d.starts_with(':') => {
            b.sender(zbus::names::UniqueName::try_from(d).unwrap())
        }
        _ => b.sender(OWNER),
    }
}

/// An error reply `name` to `call`, from `sender`.
pub(crate) fn error_to(call: &Message, sender: &str, name: &str) -> Message {
    Message::error(&call.header(), name)
        .sender(sender)
        .build(&("synthetic failure",))
        .unwrap()
}

pub(crate) fn signal(path: &str, iface: &str, member: &str) -> Builder<'static> {
    Message::signal(
        ObjectPath::try_from(path).unwrap().into_owned(),
        zbus::names::InterfaceName::try_from(iface)
            .unwrap()
            .into_owned(),
        zbus::names::MemberName::try_from(member)
            .unwrap()
            .into_owned(),
    )
}

pub(crate) fn name_owner_changed(name: &str, old: &str, new: &str) -> Message {
    signal("/org/freedesktop/DBus", BUS, "NameOwnerChanged")
        .sender(BUS)
        .build(&(name, old, new))
        .unwrap()
}

fn props(props: &[(&str, u32)]) -> HashMap<String, ZValue<'static>> {
    props
        .iter()
        .map(|(n, v)| (n.to_string(), ZValue::from(*v)))
        .collect()
}

fn ifaces(ifaces: &[(&str, &[(&str, u32)])]) -> HashMap<String, HashMap<String, ZValue<'static>>> {
    ifaces
        .iter()
        .map(|(i, p)| (i.to_string(), props(p)))
        .collect()
}

pub(crate) fn properties_changed_from(
    sender: &str,
    path: &str,
    iface: &str,
    changed: &[(&str, u32)],
    invalidated: &[&str],
) -> Message {
    signal(path, PROPS, "PropertiesChanged")
        .sender(sender.to_owned())
        .build(&(iface, props(changed), invalidated))
        .unwrap()
}

pub(crate) fn interfaces_added(path: &str, added: &[(&str, &[(&str, u32)])]) -> Message {
    signal("/", OM, "InterfacesAdded")
        .sender(OWNER)
        .build(&(ObjectPath::try_from(path).unwrap(), ifaces(added)))
        .unwrap()
}

pub(crate) fn interfaces_removed(path: &str, names: &[&str]) -> Message {
    signal("/", OM, "InterfacesRemoved")
        .sender(OWNER)
        .build(&(ObjectPath::try_from(path).unwrap(), names))
        .unwrap()
}

/// The body of a `GetManagedObjects` reply holding `objects`.
pub(crate) fn managed_objects(
    objects: &[Obj<'_>],
) -> HashMap<ObjectPath<'static>, HashMap<String, HashMap<String, ZValue<'static>>>> {
    objects
        .iter()
        .map(|(p, i)| (ObjectPath::try_from(*p).unwrap().into_owned(), ifaces(i)))
        .collect()
}

/// Answers the queued `GetNameOwner` with `owner`, and commits.
pub(crate) fn answer_name_owner(core: &mut Core, owner: &str) {
    let call = take_call(core, "GetNameOwner");
    assert!(core.handle(&reply_to(&call).build(&(owner,)).unwrap()));
    core.commit();
}

/// Answers the queued `GetManagedObjects` with `objects` (not committed).
pub(crate) fn answer_managed_objects(core: &mut Core, objects: &[Obj<'_>]) {
    let call = take_call(core, "GetManagedObjects");
    let reply = reply_to(&call).build(&(managed_objects(objects),)).unwrap();
    core.handle(&reply);
}

/// A core on a bus, owner [`OWNER`], loaded with `objects` (its events queued, its sent
/// calls taken).
pub(crate) fn loaded_core(objects: &[Obj<'_>]) -> Core {
    let mut core = bus_core(config());
    core.start();
    answer_name_owner(&mut core, OWNER);
    answer_managed_objects(&mut core, objects);
    core.commit();
    core.out.clear();
    assert!(core.is_loaded());
    core
}

/// Every queued event.
pub(crate) fn drain(core: &mut Core) -> Vec<Event> {
    std::iter::from_fn(|| core.pop_event()).collect()
}

/// The `u32` property `iface.prop` of the object at `path`, as the cache holds it.
pub(crate) fn prop(core: &Core, path: &str, iface: &str, prop: &str) -> Option<u32> {
    let id = core.store.id(path)?;
    match core.store.slot(id).obj.as_ref()?.get(iface, prop)? {
        crate::Value::U32(v) => Some(*v),
        _ => None,
    }
}
