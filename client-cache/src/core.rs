//! The cache's protocol state machine: no I/O, no runtime.
//!
//! [`Core`] is fed the connection's messages in the order they arrived and answers with
//! messages to send and events to hand out. Each batch of messages goes through three phases:
//!
//! 1. **record**: decode each message straight into typed slots (through the interface
//!    declarations) and apply it to the store, noting old values, removed objects and touched
//!    slots, without telling anyone;
//! 2. **settle**: once the whole batch is in, recompute readiness for the touched objects and
//!    what references them, and send the fetches new objects need;
//! 3. **emit**: queue the collected events: removals, then property changes, then additions.
//!
//! ## Signals that arrive before the load's reply
//!
//! The subscriptions (match rules bound to the owner's unique name) are sent before the
//! `GetManagedObjects` call, on the same connection, so the bus daemon installs them first.
//! One sender's messages reach us in the order it sent them, so any signal of the owner that
//! arrives **before** the reply was sent before the service built the reply, and its effect is
//! already in the reply: such signals are dropped (counted as superseded). Every signal that
//! arrives **after** the reply is newer and applied. Nothing is lost and nothing applied twice.
//! A load by path (per-interface `GetAll` replies) uses the same rule per interface, by the
//! messages' receive positions.
//!
//! ## Modules, by concern
//!
//! - [`owner`]: who owns the service's name (`GetNameOwner`, `NameOwnerChanged`), and which
//!   messages come from that owner; a new owner means everything is removed and loaded again.
//! - [`subscribe`]: the match rules bound to the owner (built with zbus's `MatchRule` builder).
//! - [`load`]: what is loaded ([`Scope`]): `GetManagedObjects`, or one object by introspection
//!   and `GetAll`, or a server-side lookup, and the fallback to loading everything and filtering
//!   here when the service refuses the narrow calls; reconciling.
//! - [`signals`]: the owner's `InterfacesAdded`, `InterfacesRemoved` and `PropertiesChanged`
//!   applied to the store (phase 1).
//! - [`fetch`]: per-object calls ([`FetchSpec`]) and their refresh signals.
//! - [`settle`]: the batch, and its commit (phases 2 and 3).
//! - [`events`] and [`resync`]: the consumer's bounded event queue, and the resync of a consumer
//!   that fell behind.
//! - [`failure`]: calls that fail or time out.
//! - [`intern`]: the interface and property names shared by every object.
//! - [`decode`]: reading bodies (through dbus-meta's wire reader) and classifying error replies
//!   (through zbus's typed `fdo::Error`).

use std::{
    collections::VecDeque,
    sync::Arc,
    time::{Duration, Instant},
};

use hashbrown::{HashMap, HashSet};
use zbus::message::{Message, Type};

pub(crate) mod decode;
pub(crate) mod encode;
mod events;
mod failure;
mod fetch;
mod intern;
mod load;
mod owner;
mod resync;
mod settle;
mod signals;
mod subscribe;
#[cfg(test)]
mod test_support;

use decode::ErrorReply;
use intern::Names;
use load::{Load, LocalFilter};
use owner::Owner;
use resync::Shadow;
use settle::Batch;
use subscribe::Rule;

use crate::{
    debug::{DebugConfig, Diagnostics, Reporter, WarningKind},
    error::{CallError, CallFailure},
    event::Event,
    meta::Registry,
    store::{ObjId, Store},
};
use netmirror_dbus_meta::Value;

const BUS: &str = "org.freedesktop.DBus";
const BUS_PATH: &str = "/org/freedesktop/DBus";
const OM: &str = "org.freedesktop.DBus.ObjectManager";
const PROPS: &str = "org.freedesktop.DBus.Properties";
const INTROSPECTABLE: &str = "org.freedesktop.DBus.Introspectable";

/// A per-object call whose reply the cache keeps with the object (NetworkManager's
/// `Settings.Connection.GetSettings` is one): made for every object with `interface`, before the
/// object becomes visible, and again on every `refresh` signal of that object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchSpec {
    /// The interface whose objects need the call.
    pub interface: String,
    /// The method to call (with no arguments).
    pub method: String,
    /// A signal of `interface` after which to fetch again.
    pub refresh: Option<String>,
    /// A property of other objects whose change fetches again the object they refer to: for
    /// data the service changes without the `refresh` signal.
    pub refresh_on: Option<RefreshOn>,
}

/// When to fetch an object again (see [`FetchSpec::refresh_on`]): when `property` of an
/// object with `interface` enters or leaves one of `values`, the object whose path that
/// object's `reference` property holds is fetched again.
///
/// NetworkManager writes a profile's `connection.timestamp` when an active connection of it
/// enters or leaves `ACTIVATED`, and sends no `Updated` for it: [`NmClient`]'s cache fetches
/// the profile's settings again then, so a long-lived cache shows what `GetSettings` does.
///
/// [`NmClient`]: crate::nm::NmClient
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefreshOn {
    /// The interface of the objects whose property changes.
    pub interface: String,
    /// The property that changes (a `u32`).
    pub property: String,
    /// The property of the same interface holding the path of the object to fetch again.
    pub reference: String,
    /// The values of `property` whose entering or leaving fetches again; empty for every
    /// change.
    pub values: Vec<u32>,
}

impl RefreshOn {
    /// Whether a change of the property from `old` to `new` fetches again.
    pub(crate) fn fires(&self, old: &Value, new: &Value) -> bool {
        if old == new {
            return false;
        }
        let named = |value: &Value| match value {
            Value::U32(number) => self.values.contains(number),
            _ => false,
        };
        self.values.is_empty() || named(old) || named(new)
    }
}

/// The entries of a fetch's reply that the cache keeps (see
/// [`CacheBuilder::keep_fetched`](crate::CacheBuilder::keep_fetched)): outer key, then the
/// inner keys kept under it.
pub(crate) type KeepFetched = Arc<KeptEntries>;

/// The entries kept of a fetch's reply: each outer key with its inner keys.
pub(crate) type KeptEntries = [(Box<str>, Box<[Box<str>]>)];

/// What to load: everything, or only what the caller asked for (the server filters).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Scope {
    /// Everything under the ObjectManager (one `GetManagedObjects`).
    All,
    /// One object: its interfaces (from `Introspect`) and their properties (`GetAll`), without
    /// loading anything else. References are not resolved in this mode.
    Path(String),
    /// Ask the service which object: call `method(arg)` (returning `o`) on `path`/`interface`,
    /// then load that object as [`Scope::Path`] does. When the service does not know the method
    /// (or refuses it), load everything and keep the objects whose `fallback` property equals
    /// `arg`.
    Lookup(Lookup),
}

/// A server-side lookup, see [`Scope::Lookup`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lookup {
    /// Path of the object offering the method.
    pub path: String,
    /// Interface of the method.
    pub interface: String,
    /// The method, taking one string and returning one object path.
    pub method: String,
    /// The argument.
    pub arg: String,
    /// Interface and property compared with `arg` when filtering locally instead.
    pub fallback: (String, String),
}

/// Everything a [`Core`] is configured with.
#[derive(Debug, Clone)]
pub(crate) struct Config {
    pub(crate) service: String,
    pub(crate) manager_path: String,
    pub(crate) registry: Registry,
    pub(crate) fetches: Vec<FetchSpec>,
    /// Which entries of the fetches' replies to keep (`None`: all of them).
    pub(crate) keep_fetched: Option<KeepFetched>,
    pub(crate) scope: Scope,
    pub(crate) debug: DebugConfig,
    /// How long a call may wait for its reply.
    pub(crate) timeout: Duration,
    /// How many events may wait for the consumer before it is resynced instead.
    pub(crate) max_events: usize,
}

/// The default bound of the event queue.
pub(crate) const DEFAULT_MAX_EVENTS: usize = 1 << 16;

/// The default deadline of every call: libdbus's and libnm's 25 s.
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(25);

/// A call on its way: what it is for, and who must answer it.
#[derive(Debug)]
struct Pending {
    generation: u64,
    call: Call,
    /// The destination's unique name (or the bus's name): only it may reply.
    dest: Arc<str>,
    path: Arc<str>,
}

#[derive(Debug, Clone)]
enum Call {
    AddMatch,
    RemoveMatch,
    GetNameOwner,
    GetManagedObjects,
    Lookup,
    Introspect(Arc<str>),
    GetAll(Arc<str>, Arc<str>),
    Fetch(ObjId, Arc<str>),
}

impl Call {
    /// The method called, for messages.
    fn method(&self, fetches: &[FetchSpec]) -> String {
        match self {
            Self::AddMatch => "DBus.AddMatch".into(),
            Self::RemoveMatch => "DBus.RemoveMatch".into(),
            Self::GetNameOwner => "DBus.GetNameOwner".into(),
            Self::GetManagedObjects => "ObjectManager.GetManagedObjects".into(),
            Self::Lookup => "lookup".into(),
            Self::Introspect(_) => "Introspectable.Introspect".into(),
            Self::GetAll(_, iface) => format!("Properties.GetAll({iface})"),
            Self::Fetch(..) => fetches
                .first()
                .map_or_else(|| "fetch".into(), |f| f.method.clone()),
        }
    }
}

pub(crate) struct Core {
    cfg: Config,
    bus: bool,
    pub(crate) store: Store,
    pub(crate) rep: Reporter,
    names: Names,
    owner: Owner,
    generation: u64,
    pending: HashMap<u32, Pending>,
    /// Serials in the order sent, with their deadlines (all calls have the same timeout, so
    /// this is also deadline order); entries whose call was answered are skipped lazily.
    deadlines: VecDeque<(Instant, u32)>,
    /// The failure that ended the last load, until the caller takes it.
    pub(crate) failure: Option<CallError>,
    load: Load,
    filter: LocalFilter,
    resolve: bool,
    rules: Vec<Rule>,
    pub(crate) out: Vec<Message>,
    batch: Batch,
    events: VecDeque<Event>,
    /// What the consumer knows while its queue is full (see [`Core::begin_batch`]).
    shadow: Option<Shadow>,
    /// Objects whose addition was skipped (gone by the time the consumer took it): their
    /// later events are skipped too, up to their removal.
    unseen: HashSet<Arc<str>>,
    /// A reconciling GetManagedObjects is on its way.
    reconciling: bool,
    /// Interfaces the registry does not declare, reported once each.
    undeclared: HashSet<Arc<str>>,
    pub(crate) loaded_events: u64,
    load_announce: bool,
}

impl Core {
    pub(crate) fn new(cfg: Config, bus: bool) -> Self {
        let resolve = matches!(cfg.scope, Scope::All);
        let rep = Reporter::new(cfg.debug);
        let mut store = Store::default();
        store.resolve = resolve;
        Self {
            cfg,
            bus,
            store,
            rep,
            names: Names::default(),
            owner: Owner::Unknown,
            generation: 0,
            pending: HashMap::new(),
            deadlines: VecDeque::new(),
            failure: None,
            load: Load::Idle,
            filter: LocalFilter::None,
            resolve,
            rules: Vec::new(),
            out: Vec::new(),
            batch: Batch::default(),
            events: VecDeque::new(),
            shadow: None,
            unseen: HashSet::new(),
            reconciling: false,
            undeclared: HashSet::new(),
            loaded_events: 0,
            load_announce: false,
        }
    }

    pub(crate) fn diagnostics(&self) -> &Diagnostics {
        &self.rep.diag
    }

    pub(crate) fn is_loaded(&self) -> bool {
        (matches!(self.load, Load::Done) || matches!(self.owner, Owner::Absent))
            && !self.load_announce
    }

    /// Queue a call to `dest`, remembering what it is for; a call that cannot be built fails
    /// as its reply would.
    fn call(
        &mut self,
        dest: &str,
        path: &str,
        iface: &str,
        member: &str,
        args: &[&str],
        call: Call,
    ) {
        match encode::method_call(dest, path, iface, member, args) {
            Ok(msg) => {
                let serial = msg.primary_header().serial_num().get();
                self.pending.insert(
                    serial,
                    Pending {
                        generation: self.generation,
                        call,
                        dest: dest.into(),
                        path: path.into(),
                    },
                );
                self.deadlines
                    .push_back((Instant::now() + self.cfg.timeout, serial));
                self.out.push(msg);
            }
            Err(e) => {
                let cause = CallFailure::Unsendable(e.to_string());
                match call {
                    Call::AddMatch | Call::RemoveMatch => self.rep.warn(
                        WarningKind::CallFailed,
                        format_args!("cannot build {iface}.{member} for {path}: {e}"),
                    ),
                    Call::Fetch(id, p) => self.fetch_failed(id, p, cause),
                    other => self.fail(&other, dest, path, cause),
                }
            }
        }
    }

    fn call_bus(&mut self, member: &str, arg: &str, call: Call) {
        self.call(BUS, BUS_PATH, BUS, member, &[arg], call);
    }

    fn service_dest(&self) -> String {
        match &self.owner {
            Owner::Present(o) if !o.is_empty() => o.to_string(),
            _ => self.cfg.service.clone(),
        }
    }

    /// Start: subscribe and find the owner (bus), or load right away (peer-to-peer).
    pub(crate) fn start(&mut self) {
        if !self.bus {
            self.owner = Owner::Present("".into());
            self.begin_load();
            return;
        }
        match subscribe::name_owner_rule(&self.cfg.service) {
            Ok(rule) => self.call_bus("AddMatch", &rule.to_string(), Call::AddMatch),
            Err(e) => {
                let cause = CallFailure::Unsendable(e.to_string());
                self.fail(&Call::AddMatch, BUS, BUS_PATH, cause);
                return;
            }
        }
        let service = self.cfg.service.clone();
        self.call_bus("GetNameOwner", &service, Call::GetNameOwner);
    }

    /// Handle one message (phase 1). Returns whether the batch must be committed right now
    /// (the owner changed).
    pub(crate) fn handle(&mut self, msg: &Message) -> bool {
        self.rep.diag.messages += 1;
        let hdr = msg.header();
        match msg.message_type() {
            Type::MethodReturn | Type::Error => {
                let Some(serial) = hdr.reply_serial() else {
                    return false;
                };
                let Some(p) = self.pending.get(&serial.get()) else {
                    return false;
                };
                // Only the destination may answer (the bus may answer with an error on its
                // behalf): on a bus whose policy lets anyone send replies, anything else is a
                // forgery, and the call stays on its way.
                let sender = hdr.sender().map(|s| s.as_str());
                let genuine = !self.bus
                    || sender == Some(&*p.dest)
                    || (msg.message_type() == Type::Error && sender == Some(BUS));
                if !genuine {
                    self.rep.diag.foreign_messages += 1;
                    self.rep.trace(format_args!(
                        "ignoring a reply to {:?} from {sender:?}: not its destination {}",
                        p.call, p.dest
                    ));
                    return false;
                }
                let Some(Pending {
                    generation, call, ..
                }) = self.pending.remove(&serial.get())
                else {
                    return false;
                };
                if generation != self.generation
                    && !matches!(call, Call::AddMatch | Call::RemoveMatch)
                {
                    self.rep
                        .trace(format_args!("stale reply to {call:?} ignored"));
                    return false;
                }
                self.on_reply(call, generation, msg)
            }
            Type::Signal => self.on_signal(msg, &hdr),
            Type::MethodCall => false,
        }
    }

    /// A reply to one of our calls, handed to the concern that made the call.
    fn on_reply(&mut self, call: Call, generation: u64, msg: &Message) -> bool {
        let error = ErrorReply::of(msg);
        match call {
            Call::AddMatch | Call::RemoveMatch => {
                self.on_match_reply(&call, generation, error.as_ref());
                false
            }
            Call::GetNameOwner => {
                self.on_name_owner(msg, error.as_ref());
                true
            }
            Call::GetManagedObjects => {
                self.on_managed_objects(msg, error.as_ref());
                false
            }
            Call::Lookup => {
                self.on_lookup(msg, error.as_ref());
                false
            }
            Call::Introspect(path) => {
                self.on_introspect(path, msg, error.as_ref());
                false
            }
            Call::GetAll(path, iface) => {
                self.on_get_all(path, iface, msg, error.as_ref());
                false
            }
            Call::Fetch(id, path) => {
                self.on_fetch(id, path, msg, error.as_ref());
                false
            }
        }
    }
}
