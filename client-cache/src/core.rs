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

use std::{
    collections::VecDeque,
    sync::Arc,
    time::{Duration, Instant},
};

use hashbrown::{HashMap, HashSet};
use smallvec::SmallVec;
use zbus::message::{Header, Message, Sequence, Type};

mod failure;
mod resync;

use resync::Shadow;

use crate::{
    Value,
    debug::{DebugConfig, Diagnostics, Reporter, WarningKind},
    error::{CallError, CallFailure},
    event::Event,
    meta::Registry,
    object::{Fetch, Interface},
    store::{ObjId, Store},
};
use netmirror_dbus_meta::wire::{Reader, WireResult};

const BUS: &str = "org.freedesktop.DBus";
const BUS_PATH: &str = "/org/freedesktop/DBus";
const OM: &str = "org.freedesktop.DBus.ObjectManager";
const PROPS: &str = "org.freedesktop.DBus.Properties";

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
}

/// What to load: everything, or only what the caller asked for (the server filters).
#[derive(Debug, Clone, PartialEq, Eq)]
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

#[derive(Debug, Clone, PartialEq, Eq)]
enum Owner {
    /// Not known yet (GetNameOwner on its way).
    Unknown,
    Absent,
    /// The unique name (empty on a peer-to-peer connection, where the peer is the owner).
    Present(Arc<str>),
}

/// Where the current (re)load is.
#[derive(Debug, Clone)]
enum Load {
    Idle,
    /// GetManagedObjects sent: signals of the owner are superseded until its reply.
    Full,
    /// A lookup or introspection is on its way.
    Resolving,
    /// GetAll calls on their way for one path: replies still expected, and the receive
    /// position of each reply so far by interface.
    ByPath {
        waiting: usize,
        deferred: Vec<Message>,
        got: Vec<(Arc<str>, Sequence)>,
    },
    Done,
    /// A call the load needs failed: nothing more happens until the owner changes.
    Failed,
}

/// Local filtering after a fallback from a server-side filter.
#[derive(Debug, Clone)]
enum LocalFilter {
    None,
    Path(String),
    Property {
        iface: String,
        prop: String,
        value: String,
    },
}

/// A recorded property change: object, interface, property, old and new value.
type PropChange = (ObjId, Arc<str>, Arc<str>, Value, Value);

/// Decoded objects of a GetManagedObjects reply.
type Decoded = Vec<(Arc<str>, SmallVec<[Interface; 2]>)>;

#[derive(Debug, Default)]
struct Batch {
    removed: Vec<Event>,
    iface_removed: Vec<(ObjId, Arc<str>)>,
    changes: Vec<PropChange>,
    refetched: Vec<(ObjId, Option<Value>)>,
    iface_added: Vec<(ObjId, Arc<str>)>,
    loaded: bool,
    failed: Option<CallError>,
    reconciled: Option<usize>,
    owner: Option<Event>,
    dirty: bool,
}

pub(crate) struct Core {
    cfg: Config,
    bus: bool,
    pub(crate) store: Store,
    pub(crate) rep: Reporter,
    names: HashSet<Arc<str>>,
    /// Prune `names` once it holds this many.
    prune_names_at: usize,
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
    rules: Vec<String>,
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
    pub(crate) loaded_events: u64,
    load_announce: bool,
}

/// The interned names are pruned when there are at least this many.
const MIN_PRUNE: usize = 1024;

fn intern(names: &mut HashSet<Arc<str>>, s: &str) -> Arc<str> {
    if let Some(a) = names.get(s) {
        return a.clone();
    }
    let a: Arc<str> = s.into();
    names.insert(a.clone());
    a
}

/// The cause of a failed call from its error reply.
fn error_reply(name: &str, msg: &Message) -> CallFailure {
    let message = msg
        .body()
        .deserialize::<(String,)>()
        .map(|t| t.0)
        .unwrap_or_default();
    CallFailure::ErrorReply {
        name: name.to_owned(),
        message,
    }
}

fn error_name(hdr: &Header<'_>) -> String {
    hdr.error_name().map(|e| e.to_string()).unwrap_or_default()
}

/// Errors a call gets when its destination left the bus.
fn owner_gone(name: &str) -> bool {
    matches!(
        name,
        "org.freedesktop.DBus.Error.ServiceUnknown"
            | "org.freedesktop.DBus.Error.NameHasNoOwner"
            | "org.freedesktop.DBus.Error.Disconnected"
    )
}

fn is_refusal(name: &str) -> bool {
    matches!(
        name,
        "org.freedesktop.DBus.Error.UnknownMethod"
            | "org.freedesktop.DBus.Error.UnknownInterface"
            | "org.freedesktop.DBus.Error.UnknownObject"
            | "org.freedesktop.DBus.Error.AccessDenied"
            | "org.freedesktop.DBus.Error.NotSupported"
    )
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
            names: HashSet::new(),
            prune_names_at: MIN_PRUNE,
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
            loaded_events: 0,
            load_announce: false,
        }
    }

    pub(crate) fn diagnostics(&self) -> &Diagnostics {
        &self.rep.diag
    }

    pub(crate) fn owner(&self) -> Option<&str> {
        match &self.owner {
            Owner::Present(o) => Some(o),
            _ => None,
        }
    }

    pub(crate) fn is_loaded(&self) -> bool {
        (matches!(self.load, Load::Done) || matches!(self.owner, Owner::Absent))
            && !self.load_announce
    }

    fn call(
        &mut self,
        dest: &str,
        path: &str,
        iface: &str,
        member: &str,
        body: &(impl serde::Serialize + zbus::wire::DynamicType),
        call: Call,
    ) {
        let built = Message::method_call(path, member)
            .destination(dest)
            .interface(iface)
            .build(body);
        match built {
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
        self.call(BUS, BUS_PATH, BUS, member, &(arg,), call);
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
        let rule = format!(
            "type='signal',sender='{BUS}',path='{BUS_PATH}',interface='{BUS}',\
             member='NameOwnerChanged',arg0='{}'",
            self.cfg.service
        );
        self.call_bus("AddMatch", &rule, Call::AddMatch);
        let service = self.cfg.service.clone();
        self.call_bus("GetNameOwner", &service, Call::GetNameOwner);
    }

    /// Replaces the current match rules with `rules` (added only on a bus; a p2p peer has none).
    fn resubscribe(&mut self, rules: Vec<String>) {
        for rule in std::mem::take(&mut self.rules) {
            self.call_bus("RemoveMatch", &rule, Call::RemoveMatch);
        }
        if self.bus {
            for rule in &rules {
                self.call_bus("AddMatch", rule, Call::AddMatch);
            }
            self.rules = rules;
        }
    }

    /// Ends the current load: the batch reports it once the cache is consistent.
    fn mark_load_done(&mut self) {
        self.load = Load::Done;
        self.batch.loaded = true;
        self.batch.dirty = true;
    }

    fn owner_rules(&self, owner: &str) -> Vec<String> {
        let om = &self.cfg.manager_path;
        let mut rules = Vec::new();
        match &self.cfg.scope {
            Scope::Path(p) => {
                rules.push(format!(
                    "type='signal',sender='{owner}',interface='{OM}',path='{om}',arg0path='{p}'"
                ));
                rules.push(format!(
                    "type='signal',sender='{owner}',interface='{PROPS}',\
                     member='PropertiesChanged',path='{p}'"
                ));
            }
            _ => {
                rules.push(format!(
                    "type='signal',sender='{owner}',interface='{OM}',path='{om}'"
                ));
                let ns = if om == "/" {
                    String::new()
                } else {
                    format!(",path_namespace='{om}'")
                };
                rules.push(format!(
                    "type='signal',sender='{owner}',interface='{PROPS}',\
                     member='PropertiesChanged'{ns}"
                ));
            }
        }
        for f in &self.cfg.fetches {
            if let Some(member) = &f.refresh {
                rules.push(format!(
                    "type='signal',sender='{owner}',interface='{}',member='{member}'",
                    f.interface
                ));
            }
        }
        rules
    }

    fn set_owner(&mut self, new: Option<Arc<str>>) {
        let new_state = new.clone().map_or(Owner::Absent, Owner::Present);
        if new_state == self.owner {
            return;
        }
        let initial = self.owner == Owner::Unknown;
        self.rep.trace(format_args!(
            "owner of {}: {:?} -> {:?}",
            self.cfg.service, self.owner, new
        ));
        // Removal events for everything, from the old owner.
        let ids: Vec<ObjId> = self.store.present().collect();
        for id in ids {
            self.remove_object(id);
        }
        for rule in std::mem::take(&mut self.rules) {
            self.call_bus("RemoveMatch", &rule, Call::RemoveMatch);
        }
        self.generation += 1;
        // Replies to the old owner's calls are stale now (and the bus answers them anyway).
        self.pending
            .retain(|_, p| !matches!(p.call, Call::Fetch(..) | Call::GetAll(..)));
        self.owner = new_state;
        self.load = Load::Idle;
        self.reconciling = false;
        if !initial || new.is_none() {
            self.batch.owner = Some(Event::OwnerChanged { owner: new.clone() });
        }
        self.batch.dirty = true;
        match new {
            Some(owner) => {
                let rules = self.owner_rules(&owner);
                self.resubscribe(rules);
                self.begin_load();
            }
            None => self.batch.loaded = true,
        }
    }

    fn begin_load(&mut self) {
        let dest = self.service_dest();
        match self.cfg.scope.clone() {
            Scope::All => self.load_full(),
            Scope::Path(p) => {
                let p: Arc<str> = p.into();
                self.load = Load::Resolving;
                self.call(
                    &dest,
                    &p,
                    "org.freedesktop.DBus.Introspectable",
                    "Introspect",
                    &(),
                    Call::Introspect(p.clone()),
                );
            }
            Scope::Lookup(l) => {
                self.load = Load::Resolving;
                self.call(
                    &dest,
                    &l.path,
                    &l.interface,
                    &l.method,
                    &(l.arg.as_str(),),
                    Call::Lookup,
                );
            }
        }
    }

    /// Load everything again and compare (a signal about an object the cache does not know
    /// suggests that messages were lost, e.g. dropped by the bus at its per-connection limit).
    /// Returns whether a reconcile was started (only for a complete, unfiltered load, one at
    /// a time).
    pub(crate) fn reconcile(&mut self) -> bool {
        let unfiltered = matches!(self.cfg.scope, Scope::All)
            && matches!(self.filter, LocalFilter::None)
            && self.owner().is_some();
        if self.reconciling || !unfiltered || !matches!(self.load, Load::Done) {
            return false;
        }
        self.rep
            .trace(format_args!("reconciling with GetManagedObjects"));
        self.reconciling = true;
        self.load_full();
        true
    }

    fn load_full(&mut self) {
        let dest = self.service_dest();
        let om = self.cfg.manager_path.clone();
        self.load = Load::Full;
        self.call(
            &dest,
            &om,
            OM,
            "GetManagedObjects",
            &(),
            Call::GetManagedObjects,
        );
    }

    /// Fall back from a server-side filter to loading everything and filtering here.
    fn fall_back(&mut self, why: &str) {
        self.rep.trace(format_args!(
            "server-side filter refused ({why}): loading everything"
        ));
        self.filter = match &self.cfg.scope {
            Scope::Path(p) => LocalFilter::Path(p.clone()),
            Scope::Lookup(l) => LocalFilter::Property {
                iface: l.fallback.0.clone(),
                prop: l.fallback.1.clone(),
                value: l.arg.clone(),
            },
            Scope::All => LocalFilter::None,
        };
        if let Owner::Present(owner) = self.owner.clone() {
            // The narrow path rules do not see the other objects: subscribe broadly.
            let mut scope = Scope::All;
            std::mem::swap(&mut scope, &mut self.cfg.scope);
            let rules = self.owner_rules(&owner);
            self.cfg.scope = scope;
            self.resubscribe(rules);
        }
        self.load_full();
    }

    fn keep(&self, path: &str, ifaces: &[Interface]) -> bool {
        match &self.filter {
            LocalFilter::None => true,
            LocalFilter::Path(p) => p == path,
            LocalFilter::Property { iface, prop, value } => {
                ifaces
                    .iter()
                    .find(|i| &*i.name == iface.as_str())
                    .and_then(|i| i.get(prop))
                    .and_then(Value::as_str)
                    == Some(value.as_str())
            }
        }
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
                self.on_reply(call, generation, msg, &hdr)
            }
            Type::Signal => self.on_signal(msg, &hdr),
            Type::MethodCall => false,
        }
    }

    fn sent_by_owner(&mut self, hdr: &Header<'_>) -> bool {
        let sender = hdr.sender().map(|s| s.as_str());
        match (&self.owner, sender) {
            (Owner::Present(o), _) if o.is_empty() => true,
            (Owner::Present(o), Some(s)) if **o == *s => true,
            _ => {
                self.rep.diag.foreign_messages += 1;
                self.rep.trace(format_args!(
                    "ignoring {:?}.{:?} from {:?}: not the owner of {}",
                    hdr.interface().map(|i| i.as_str()),
                    hdr.member().map(|m| m.as_str()),
                    sender,
                    self.cfg.service
                ));
                false
            }
        }
    }

    fn on_reply(&mut self, call: Call, generation: u64, msg: &Message, hdr: &Header<'_>) -> bool {
        let is_error = msg.message_type() == Type::Error;
        let err_name = if is_error {
            error_name(hdr)
        } else {
            String::new()
        };
        let err_text = || -> String {
            let text: String = msg
                .body()
                .deserialize::<(String,)>()
                .map(|t| t.0)
                .unwrap_or_default();
            format!("{err_name}: {text}")
        };
        match call {
            Call::RemoveMatch => {
                // The bus drops rules naming a unique name that left: nothing to remove then.
                if is_error {
                    self.rep.trace(format_args!("RemoveMatch: {}", err_text()));
                }
                false
            }
            Call::AddMatch => {
                // Without its subscription the cache would not follow the service: the load
                // fails (a rule of an older owner no longer matters).
                if is_error && generation == self.generation {
                    let cause = error_reply(&err_name, msg);
                    self.fail(&call, BUS, BUS_PATH, cause);
                }
                false
            }
            Call::GetNameOwner => {
                if is_error {
                    self.set_owner(None);
                } else {
                    match msg.body().deserialize::<(String,)>() {
                        Ok((name,)) => self.set_owner(Some(name.into())),
                        Err(e) => {
                            self.rep
                                .warn(WarningKind::Malformed, format_args!("GetNameOwner: {e}"));
                            self.set_owner(None);
                        }
                    }
                }
                true
            }
            Call::GetManagedObjects => {
                if is_error && owner_gone(&err_name) {
                    // The owner went away: its NameOwnerChanged follows and decides.
                    self.rep
                        .trace(format_args!("GetManagedObjects failed: {}", err_text()));
                    self.load = Load::Idle;
                } else if is_error {
                    // The service is there but cannot be loaded (no ObjectManager, access
                    // denied, no reply): the load fails, and says why.
                    let cause = error_reply(&err_name, msg);
                    let dest = self.service_dest();
                    let om = self.cfg.manager_path.clone();
                    self.fail(&call, &dest, &om, cause);
                } else {
                    self.apply_managed_objects(msg);
                }
                false
            }
            Call::Lookup => {
                if is_error {
                    if is_refusal(&err_name) {
                        self.fall_back(&err_name);
                    } else {
                        // The service knows the method, and says there is no such object.
                        self.rep
                            .trace(format_args!("lookup found nothing: {}", err_text()));
                        self.mark_load_done();
                    }
                    return false;
                }
                match msg.body().deserialize::<(zbus::OwnedObjectPath,)>() {
                    Ok((path,)) => {
                        let p: Arc<str> = path.as_str().into();
                        let dest = self.service_dest();
                        self.cfg.scope = Scope::Path(p.to_string());
                        self.call(
                            &dest,
                            &p,
                            "org.freedesktop.DBus.Introspectable",
                            "Introspect",
                            &(),
                            Call::Introspect(p.clone()),
                        );
                        // Narrow the subscriptions to that one object.
                        if let Owner::Present(owner) = self.owner.clone()
                            && self.bus
                        {
                            let rules = self.owner_rules(&owner);
                            self.resubscribe(rules);
                        }
                    }
                    Err(e) => {
                        self.rep
                            .warn(WarningKind::Malformed, format_args!("lookup reply: {e}"));
                        self.fall_back("malformed reply");
                    }
                }
                false
            }
            Call::Introspect(path) => {
                if is_error {
                    if is_refusal(&err_name) {
                        self.fall_back(&err_name);
                    } else {
                        self.rep
                            .trace(format_args!("no object {path}: {}", err_text()));
                        self.mark_load_done();
                    }
                    return false;
                }
                if !body_is(msg, "s") {
                    let cause = CallFailure::WrongSignature {
                        got: msg.body().signature().to_string(),
                        expected: "s".into(),
                    };
                    let dest = self.service_dest();
                    self.fail(&Call::Introspect(path.clone()), &dest, &path, cause);
                    return false;
                }
                let xml = msg
                    .body()
                    .deserialize::<(String,)>()
                    .map(|t| t.0)
                    .unwrap_or_default();
                let ifaces: Vec<String> = introspected_interfaces(&xml)
                    .filter(|i| !i.starts_with("org.freedesktop.DBus."))
                    .map(str::to_owned)
                    .collect();
                if ifaces.is_empty() {
                    self.mark_load_done();
                    return false;
                }
                let dest = self.service_dest();
                for iface in &ifaces {
                    let name = intern(&mut self.names, iface);
                    self.call(
                        &dest,
                        &path,
                        PROPS,
                        "GetAll",
                        &(iface.as_str(),),
                        Call::GetAll(path.clone(), name),
                    );
                }
                self.load = Load::ByPath {
                    waiting: ifaces.len(),
                    deferred: Vec::new(),
                    got: Vec::new(),
                };
                false
            }
            Call::GetAll(path, iface) => {
                self.on_get_all(path, iface, msg, is_error);
                false
            }
            Call::Fetch(id, path) => {
                self.on_fetch(id, path, msg, is_error, &err_name);
                false
            }
        }
    }

    fn on_get_all(&mut self, path: Arc<str>, iface: Arc<str>, msg: &Message, is_error: bool) {
        let pos = seq(msg);
        if !is_error && body_is(msg, "a{sv}") {
            let body = msg.body();
            let data = body.data();
            let mut r = Reader::for_body(data);
            let decl = self.cfg.registry.get(&iface).cloned();
            let mut interface = Interface::new(iface.clone(), decl);
            match decode_props_into(
                &mut r,
                &mut interface,
                &mut self.names,
                &mut self.rep,
                &path,
            ) {
                Ok(()) => {
                    let id = self.store.ensure(&path);
                    let mut obj = self.store.slot_mut(id).obj.take().unwrap_or_default();
                    obj.ifaces.retain(|i| i.name != iface);
                    obj.ifaces.push(interface);
                    self.store.set_object(id, obj);
                    self.batch.dirty = true;
                }
                Err(e) => self.rep.warn(
                    WarningKind::Malformed,
                    format_args!("GetAll {path} {iface}: {e}"),
                ),
            }
        } else {
            let err_name = if is_error {
                error_name(&msg.header())
            } else {
                String::new()
            };
            // An interface gone since the introspection is no failure; anything else is.
            if err_name != "org.freedesktop.DBus.Error.UnknownInterface" {
                let cause = if is_error {
                    error_reply(&err_name, msg)
                } else {
                    CallFailure::WrongSignature {
                        got: msg.body().signature().to_string(),
                        expected: "a{sv}".into(),
                    }
                };
                let dest = self.service_dest();
                self.fail(&Call::GetAll(path.clone(), iface), &dest, &path, cause);
                return;
            }
            self.rep
                .trace(format_args!("GetAll {path} {iface}: interface gone"));
        }
        let mut finished = None;
        if let Load::ByPath {
            waiting,
            deferred,
            got,
            ..
        } = &mut self.load
        {
            got.push((iface, pos));
            *waiting -= 1;
            if *waiting == 0 {
                finished = Some((std::mem::take(deferred), std::mem::take(got)));
            }
        }
        if let Some((deferred, got)) = finished {
            self.mark_load_done();
            for m in deferred {
                let hdr = m.header();
                // A PropertiesChanged that arrived before its interface's GetAll reply is in it.
                let superseded = hdr.interface().is_some_and(|i| i.as_str() == PROPS)
                    && m.body()
                        .deserialize::<(String,)>()
                        .is_ok_and(|(i,)| got.iter().any(|(g, p)| **g == *i && *p > seq(&m)));
                if superseded {
                    self.rep.diag.superseded_signals += 1;
                } else {
                    self.on_signal(&m, &hdr);
                }
            }
        }
    }

    fn on_fetch(&mut self, id: ObjId, path: Arc<str>, msg: &Message, is_error: bool, err: &str) {
        let slot = self.store.slot(id);
        let serial = reply_serial(msg);
        let current =
            slot.path == path && slot.obj.as_ref().is_some_and(|o| o.fetch_serial == serial);
        if !current {
            return;
        }
        let fetched = if is_error {
            if err != "org.freedesktop.DBus.Error.AccessDenied"
                && !err.ends_with(".PermissionDenied")
            {
                self.rep.warn(
                    WarningKind::CallFailed,
                    format_args!("fetch for {path}: {err}"),
                );
            }
            Fetch::Failed(err.into())
        } else {
            let body = msg.body();
            let sig = body.signature().to_string();
            let mut r = Reader::for_body(body.data());
            match r.value(sig.as_bytes()) {
                Ok(v) => Fetch::Done(v),
                Err(e) => {
                    self.rep.warn(
                        WarningKind::Malformed,
                        format_args!("fetch for {path}: {e}"),
                    );
                    Fetch::Failed("malformed reply".into())
                }
            }
        };
        let visible = self.store.slot(id).visible;
        let Some(obj) = self.store.slot_mut(id).obj.as_mut() else {
            return;
        };
        obj.fetch_serial = 0;
        let old = std::mem::replace(&mut obj.fetch, fetched);
        let refetch = std::mem::take(&mut obj.refetch);
        if visible {
            let old = match old {
                Fetch::Done(v) => Some(v),
                _ => None,
            };
            self.batch.refetched.push((id, old));
        }
        self.store.touch(id);
        self.batch.dirty = true;
        if refetch {
            self.send_fetch(id);
        }
    }

    fn on_signal(&mut self, msg: &Message, hdr: &Header<'_>) -> bool {
        let iface = hdr.interface().map(|i| i.as_str()).unwrap_or("");
        let member = hdr.member().map(|m| m.as_str()).unwrap_or("");
        if self.bus && iface == BUS && member == "NameOwnerChanged" {
            if hdr.sender().map(|s| s.as_str()) != Some(BUS) {
                self.rep.diag.foreign_messages += 1;
                return false;
            }
            let Ok((name, _old, new)) = msg.body().deserialize::<(String, String, String)>() else {
                self.rep
                    .warn(WarningKind::Malformed, "NameOwnerChanged with a bad body");
                return false;
            };
            if name != self.cfg.service {
                return false;
            }
            if self.owner == Owner::Unknown {
                // GetNameOwner's reply is on its way and newer: it decides.
                self.rep.diag.superseded_signals += 1;
                return false;
            }
            self.set_owner((!new.is_empty()).then(|| new.into()));
            return true;
        }
        if self.bus && hdr.sender().is_some_and(|s| s.as_str() == BUS) {
            // NameAcquired, NameLost and the like: about us, not the service.
            return false;
        }
        if !self.sent_by_owner(hdr) {
            return false;
        }
        match &mut self.load {
            Load::Full | Load::Resolving | Load::Idle | Load::Failed => {
                self.rep.diag.superseded_signals += 1;
                self.rep.trace(format_args!(
                    "{iface}.{member} superseded by the pending load"
                ));
                return false;
            }
            Load::ByPath { deferred, .. } => {
                deferred.push(msg.clone());
                return false;
            }
            Load::Done => {}
        }
        self.rep.trace(format_args!(
            "signal {iface}.{member} on {:?}",
            hdr.path().map(|p| p.as_str())
        ));
        let path = hdr.path().map(|p| p.as_str()).unwrap_or("/");
        match (iface, member) {
            (OM, "InterfacesAdded") if path == self.cfg.manager_path => {
                self.on_interfaces_added(msg)
            }
            (OM, "InterfacesRemoved") if path == self.cfg.manager_path => {
                self.on_interfaces_removed(msg)
            }
            (PROPS, "PropertiesChanged") => self.on_properties_changed(path, msg),
            _ => {
                let refresh = self
                    .cfg
                    .fetches
                    .iter()
                    .any(|f| f.interface == iface && f.refresh.as_deref() == Some(member));
                if refresh
                    && let Some(id) = self
                        .store
                        .id(path)
                        .filter(|&id| self.store.slot(id).obj.is_some())
                {
                    {
                        let pending = self
                            .store
                            .slot(id)
                            .obj
                            .as_ref()
                            .is_some_and(|o| o.fetch_serial != 0);
                        if pending {
                            if let Some(o) = self.store.slot_mut(id).obj.as_mut() {
                                o.refetch = true;
                            }
                        } else {
                            self.send_fetch(id);
                        }
                    }
                }
            }
        }
        false
    }

    fn send_fetch(&mut self, id: ObjId) {
        let path = self.store.slot(id).path.clone();
        let Some(obj) = self.store.slot(id).obj.as_ref() else {
            return;
        };
        let Some(spec) = self
            .cfg
            .fetches
            .iter()
            .find(|f| obj.has_interface(&f.interface))
            .cloned()
        else {
            return;
        };
        let dest = self.service_dest();
        let before = self.out.len();
        self.call(
            &dest,
            &path,
            &spec.interface,
            &spec.method,
            &(),
            Call::Fetch(id, path.clone()),
        );
        let Some(serial) = self
            .out
            .get(before)
            .map(|m| m.primary_header().serial_num().get())
        else {
            return;
        };
        if let Some(o) = self.store.slot_mut(id).obj.as_mut() {
            o.fetch_serial = serial;
            o.refetch = false;
            // A new object waits for its data; a refreshing one keeps its old data meanwhile.
            if o.fetch == Fetch::None {
                o.fetch = Fetch::Pending;
            }
        }
    }

    fn decode_ifaces(
        &mut self,
        r: &mut Reader<'_>,
        path: &str,
    ) -> WireResult<SmallVec<[Interface; 2]>> {
        let mut ifaces = SmallVec::new();
        let end = r.array(8)?;
        while r.more(end, 8)? {
            let name = r.str()?;
            if name.starts_with("org.freedesktop.DBus.") {
                // Properties, Introspectable, Peer: no properties worth keeping.
                skip_props(r)?;
                continue;
            }
            let decl = self.cfg.registry.get(name).cloned();
            let mut iface = Interface::new(intern(&mut self.names, name), decl);
            decode_props_into(r, &mut iface, &mut self.names, &mut self.rep, path)?;
            ifaces.push(iface);
        }
        Ok(ifaces)
    }

    fn apply_managed_objects(&mut self, msg: &Message) {
        let body = msg.body();
        if !body_is(msg, "a{oa{sa{sv}}}") {
            let cause = CallFailure::WrongSignature {
                got: body.signature().to_string(),
                expected: "a{oa{sa{sv}}}".into(),
            };
            let dest = self.service_dest();
            let om = self.cfg.manager_path.clone();
            self.fail(&Call::GetManagedObjects, &dest, &om, cause);
            return;
        }
        let data = body.data();
        let mut r = Reader::for_body(data);
        let result: WireResult<Decoded> = (|| {
            let mut objects = Vec::new();
            let end = r.array(8)?;
            while r.more(end, 8)? {
                let path = r.str()?;
                let ifaces = self.decode_ifaces(&mut r, path)?;
                if self.keep(path, &ifaces) {
                    objects.push((Arc::<str>::from(path), ifaces));
                }
            }
            Ok(objects)
        })();
        let objects = match result {
            Ok(o) => o,
            Err(e) => {
                let dest = self.service_dest();
                let om = self.cfg.manager_path.clone();
                self.fail(
                    &Call::GetManagedObjects,
                    &dest,
                    &om,
                    CallFailure::Malformed(e.to_string()),
                );
                return;
            }
        };
        // The reply is authoritative: what it lacks is gone.
        let reconciling = std::mem::take(&mut self.reconciling);
        let changes = |b: &Batch| b.iface_removed.len() + b.changes.len() + b.iface_added.len();
        let before = changes(&self.batch);
        let mut new_objects = 0;
        let mut seen: HashSet<ObjId> = HashSet::with_capacity(objects.len());
        for (path, ifaces) in objects {
            let known = self
                .store
                .id(&path)
                .is_some_and(|id| self.store.slot(id).obj.is_some());
            if reconciling && !known {
                new_objects += 1;
            }
            let id = self.store.ensure(&path);
            seen.insert(id);
            self.put_object(id, ifaces, true);
        }
        let stale: Vec<ObjId> = self
            .store
            .present()
            .filter(|id| !seen.contains(id))
            .collect();
        let n_stale = stale.len();
        for id in stale {
            self.remove_object(id);
        }
        if reconciling {
            // Objects that appeared or went, and changed properties and interfaces of the
            // others.
            let differences = changes(&self.batch) - before + n_stale + new_objects;
            if differences > 0 {
                self.rep.warn(
                    WarningKind::Diverged,
                    format_args!(
                        "the cache had diverged from {}: {differences} differences found by \
                         GetManagedObjects (messages were lost, e.g. dropped by the bus)",
                        self.cfg.service
                    ),
                );
            }
            self.batch.reconciled = Some(differences);
        }
        self.mark_load_done();
    }

    /// Set the interfaces of object `id`: replace all of them (`replace`) or merge.
    fn put_object(&mut self, id: ObjId, ifaces: SmallVec<[Interface; 2]>, replace: bool) {
        let visible = self.store.slot(id).visible;
        let mut obj = self.store.slot_mut(id).obj.take().unwrap_or_default();
        if replace {
            if visible {
                for old in &obj.ifaces {
                    if !ifaces.iter().any(|i| i.name == old.name) {
                        self.batch.iface_removed.push((id, old.name.clone()));
                    }
                }
            }
            let old_ifaces = std::mem::replace(&mut obj.ifaces, ifaces);
            if visible {
                for new in obj.ifaces.iter() {
                    match old_ifaces.iter().find(|i| i.name == new.name) {
                        Some(old) => self.diff_iface(id, old, new),
                        None => self.batch.iface_added.push((id, new.name.clone())),
                    }
                }
            }
        } else {
            for new in ifaces {
                match obj.ifaces.iter_mut().find(|i| i.name == new.name) {
                    Some(old) => {
                        let old = std::mem::replace(old, new);
                        if visible {
                            let new = obj.ifaces.iter().find(|i| i.name == old.name);
                            if let Some(new) = new {
                                self.diff_iface(id, &old, new);
                            }
                        }
                    }
                    None => {
                        if visible {
                            self.batch.iface_added.push((id, new.name.clone()));
                        }
                        obj.ifaces.push(new);
                    }
                }
            }
        }
        if obj.fetch == Fetch::None
            && self
                .cfg
                .fetches
                .iter()
                .any(|f| obj.has_interface(&f.interface))
        {
            self.store.slot_mut(id).obj = Some(obj);
            self.send_fetch(id);
            let obj = self.store.slot_mut(id).obj.take().unwrap_or_default();
            self.store.set_object(id, obj);
        } else {
            self.store.set_object(id, obj);
        }
        self.batch.dirty = true;
    }

    fn diff_iface(&mut self, id: ObjId, old: &Interface, new: &Interface) {
        for (p, (a, b)) in new
            .decl
            .iter()
            .flat_map(|d| d.properties.iter())
            .zip(old.slots.iter().zip(new.slots.iter()))
        {
            if a != b {
                self.batch.changes.push((
                    id,
                    new.name.clone(),
                    p.name.clone(),
                    a.clone(),
                    b.clone(),
                ));
            }
        }
        for (name, b) in &new.extra {
            let a = old
                .extra
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.clone())
                .unwrap_or_default();
            if a != *b {
                self.batch
                    .changes
                    .push((id, new.name.clone(), name.clone(), a, b.clone()));
            }
        }
    }

    fn remove_object(&mut self, id: ObjId) {
        let visible = std::mem::take(&mut self.store.slot_mut(id).visible);
        if let Some(obj) = self.store.take_object(id)
            && visible
        {
            {
                let path = self.store.slot(id).path.clone();
                self.batch.removed.push(Event::Removed {
                    path,
                    object: Box::new(obj),
                });
            }
        }
        self.batch.dirty = true;
    }

    fn on_interfaces_added(&mut self, msg: &Message) {
        let body = msg.body();
        if !body_is(msg, "oa{sa{sv}}") {
            self.rep.warn(
                WarningKind::Malformed,
                format_args!("InterfacesAdded with {}", body.signature()),
            );
            return;
        }
        let mut r = Reader::for_body(body.data());
        let decoded = r.str().map(str::to_owned).and_then(|p| {
            let ifaces = self.decode_ifaces(&mut r, &p)?;
            Ok((p, ifaces))
        });
        match decoded {
            Ok((path, ifaces)) => {
                let known = self
                    .store
                    .id(&path)
                    .is_some_and(|id| self.store.slot(id).obj.is_some());
                if !known && !self.keep(&path, &ifaces) {
                    return;
                }
                let id = self.store.ensure(&path);
                self.put_object(id, ifaces, false);
            }
            Err(e) => self
                .rep
                .warn(WarningKind::Malformed, format_args!("InterfacesAdded: {e}")),
        }
    }

    fn on_interfaces_removed(&mut self, msg: &Message) {
        let Ok((path, names)) = msg
            .body()
            .deserialize::<(zbus::OwnedObjectPath, Vec<String>)>()
        else {
            self.rep
                .warn(WarningKind::Malformed, "InterfacesRemoved with a bad body");
            return;
        };
        let Some(id) = self
            .store
            .id(path.as_str())
            .filter(|&id| self.store.slot(id).obj.is_some())
        else {
            if matches!(self.filter, LocalFilter::None) && self.resolve {
                self.rep.warn(
                    WarningKind::UnknownObject,
                    format_args!("InterfacesRemoved for unknown {path}"),
                );
                self.reconcile();
            }
            return;
        };
        let visible = self.store.slot(id).visible;
        let all_gone = self.store.slot(id).obj.as_ref().is_some_and(|o| {
            o.ifaces.iter().all(|i| {
                names.iter().any(|n| *n == *i.name) || i.name.starts_with("org.freedesktop.DBus.")
            })
        });
        if all_gone {
            // The removal event carries the object as it last was, interfaces included.
            self.remove_object(id);
            return;
        }
        let mut obj = self.store.slot_mut(id).obj.take().unwrap_or_default();
        for name in &names {
            if let Some(pos) = obj.ifaces.iter().position(|i| &*i.name == name.as_str()) {
                let gone = obj.ifaces.remove(pos);
                if visible {
                    self.batch.iface_removed.push((id, gone.name));
                }
            }
        }
        self.store.set_object(id, obj);
        self.batch.dirty = true;
    }

    fn on_properties_changed(&mut self, path: &str, msg: &Message) {
        let body = msg.body();
        if !body_is(msg, "sa{sv}as") {
            self.rep.warn(
                WarningKind::Malformed,
                format_args!("PropertiesChanged with {}", body.signature()),
            );
            return;
        }
        let Some(id) = self
            .store
            .id(path)
            .filter(|&id| self.store.slot(id).obj.is_some())
        else {
            if matches!(self.filter, LocalFilter::None) && self.resolve {
                self.rep.warn(
                    WarningKind::UnknownObject,
                    format_args!("PropertiesChanged for unknown {path}"),
                );
                self.reconcile();
            }
            return;
        };
        let mut r = Reader::for_body(body.data());
        let iface_name = match r.str() {
            Ok(s) => s.to_owned(),
            Err(e) => {
                self.rep.warn(
                    WarningKind::Malformed,
                    format_args!("PropertiesChanged: {e}"),
                );
                return;
            }
        };
        let has = self
            .store
            .slot(id)
            .obj
            .as_ref()
            .is_some_and(|o| o.has_interface(&iface_name));
        if !has {
            if !iface_name.starts_with("org.freedesktop.DBus.") {
                self.rep.warn(
                    WarningKind::UnknownObject,
                    format_args!("PropertiesChanged for {path} on interface {iface_name} it lacks"),
                );
            }
            return;
        }
        let decl = self.cfg.registry.get(&iface_name).cloned();
        let iname = intern(&mut self.names, &iface_name);
        let mut update = Interface::new(iname.clone(), decl.clone());
        if let Err(e) = decode_props_into(&mut r, &mut update, &mut self.names, &mut self.rep, path)
        {
            self.rep.warn(
                WarningKind::Malformed,
                format_args!("PropertiesChanged {path}: {e}"),
            );
            return;
        }
        let invalidated: Vec<String> = match r.value(b"as") {
            Ok(Value::Strs(v)) => v.iter().map(|s| s.to_string()).collect(),
            _ => Vec::new(),
        };
        let visible = self.store.slot(id).visible;
        let mut refs_changed = false;
        let mut changes = Vec::new();
        {
            let Some(obj) = self.store.slot_mut(id).obj.as_mut() else {
                return;
            };
            let Some(target) = obj.ifaces.iter_mut().find(|i| i.name == iname) else {
                return;
            };
            for (slot, value) in update.slots.into_vec().into_iter().enumerate() {
                if value.is_unset() {
                    continue;
                }
                let decl = decl.as_ref().map(|d| &d.properties[slot]);
                refs_changed |= decl.is_some_and(|p| p.is_reference());
                let new = visible.then(|| value.clone());
                let old = std::mem::replace(&mut target.slots[slot], value);
                if let (Some(new), Some(p)) = (new, decl) {
                    changes.push((p.name.clone(), old, new));
                }
            }
            for (name, value) in update.extra {
                let new = visible.then(|| value.clone());
                let old = match target.extra.iter_mut().find(|(n, _)| *n == name) {
                    Some((_, v)) => std::mem::replace(v, value),
                    None => {
                        target.extra.push((name.clone(), value));
                        Value::Unset
                    }
                };
                if let Some(new) = new {
                    changes.push((name, old, new));
                }
            }
            for name in invalidated {
                let slot = target.decl.as_ref().and_then(|d| d.slot(&name));
                let old = match slot {
                    Some(s) => std::mem::take(&mut target.slots[s]),
                    None => match target.extra.iter().position(|(n, _)| **n == *name) {
                        Some(i) => target.extra.remove(i).1,
                        None => continue,
                    },
                };
                if visible {
                    changes.push((intern(&mut self.names, &name), old, Value::Unset));
                }
            }
        }
        for (prop, old, new) in changes {
            self.batch.changes.push((id, iname.clone(), prop, old, new));
        }
        if refs_changed {
            self.store.update_refs(id);
        }
        self.batch.dirty = true;
    }

    /// Phases 2 and 3: settle readiness, then queue the batch's events in order.
    pub(crate) fn commit(&mut self) {
        if !self.batch.dirty && !self.load_announce {
            return;
        }
        self.rep.diag.batches += 1;
        let batch = std::mem::take(&mut self.batch);
        let (region, n_touched) = self.store.update_readiness();
        // Dangling references are reported for objects whose references were just set; a
        // target that goes away before its referrers catch up is the service's business.
        let removed = batch.removed;
        let mut added = Vec::new();
        // Only needed to filter the batch's other events: not built for a plain load.
        let track_added = !(batch.changes.is_empty()
            && batch.refetched.is_empty()
            && batch.iface_added.is_empty());
        let mut added_ids: HashSet<ObjId> = HashSet::new();
        let mut dangling = Vec::new();
        for (i, &id) in region.iter().enumerate() {
            let touched = i < n_touched;
            let slot = self.store.slot(id);
            // Readiness gates the first appearance only: a visible object stays visible while
            // it exists, even when a reference of it waits for its target (as NMClient does).
            if !slot.visible && slot.ready {
                self.store.slot_mut(id).visible = true;
                if track_added {
                    added_ids.insert(id);
                }
                added.push(Event::Added {
                    path: self.store.slot(id).path.clone(),
                });
            }
            let slot = self.store.slot(id);
            if touched && slot.obj.is_some() && !slot.ready && self.resolve {
                for &t in &slot.refs_out {
                    if self.store.slot(t).obj.is_none() {
                        dangling.push((slot.path.clone(), self.store.slot(t).path.clone()));
                    }
                }
            }
        }
        dangling.sort();
        dangling.dedup();
        for (from, to) in dangling {
            self.rep.warn(
                WarningKind::DanglingReference,
                format_args!("{from} references missing {to}"),
            );
        }
        let mut out: Vec<Event> = Vec::new();
        out.extend(removed);
        if let Some(ev) = batch.owner {
            out.push(ev);
        }
        for (id, iface) in batch.iface_removed {
            if self.store.slot(id).visible {
                let path = self.store.slot(id).path.clone();
                out.push(Event::InterfaceRemoved {
                    path,
                    interface: iface,
                });
            }
        }
        for (id, iface, prop, old, new) in batch.changes {
            let slot = self.store.slot(id);
            if slot.visible && !added_ids.contains(&id) {
                out.push(Event::PropertyChanged {
                    path: slot.path.clone(),
                    interface: iface,
                    property: prop,
                    old,
                    new,
                });
            }
        }
        for (id, old) in batch.refetched {
            let slot = self.store.slot(id);
            if slot.visible && !added_ids.contains(&id) {
                let new = slot.obj.as_ref().and_then(|o| o.fetched().cloned());
                out.push(Event::Refetched {
                    path: slot.path.clone(),
                    old,
                    new,
                });
            }
        }
        out.extend(added);
        for (id, iface) in batch.iface_added {
            let slot = self.store.slot(id);
            if slot.visible && !added_ids.contains(&id) {
                out.push(Event::InterfaceAdded {
                    path: slot.path.clone(),
                    interface: iface,
                });
            }
        }
        if let Some(error) = batch.failed {
            out.push(Event::LoadFailed(Box::new(error)));
        }
        if let Some(differences) = batch.reconciled {
            out.push(Event::Reconciled { differences });
        }
        // A load is complete once the objects' first fetches are in too.
        self.load_announce |= batch.loaded;
        let fetching = self.load_announce
            && self
                .pending
                .values()
                .any(|p| matches!(p.call, Call::Fetch(..)));
        if self.load_announce && !fetching {
            self.load_announce = false;
            self.loaded_events += 1;
            out.push(Event::Loaded);
        }
        self.queue(out);
        self.store.collect();
        self.prune_names();
    }

    /// Free the interned names nothing uses any more (a service may announce new property
    /// names forever): amortised O(1) per name, as the set is swept only after it doubled.
    fn prune_names(&mut self) {
        if self.names.len() < self.prune_names_at {
            return;
        }
        self.names.retain(|name| Arc::strong_count(name) > 1);
        self.names.shrink_to_fit();
        self.prune_names_at = (self.names.len() * 2).max(MIN_PRUNE);
    }

    /// How many names are interned.
    pub(crate) fn interned_names(&self) -> usize {
        self.names.len()
    }
}

fn seq(msg: &Message) -> Sequence {
    msg.recv_position()
}

/// Whether `msg`'s body has signature `want` (zbus shows a body of several values as a struct).
fn body_is(msg: &Message, want: &str) -> bool {
    let sig = msg.body().signature().to_string();
    sig == want
        || (sig.len() == want.len() + 2
            && sig.starts_with('(')
            && sig.ends_with(')')
            && &sig[1..sig.len() - 1] == want)
}

fn reply_serial(msg: &Message) -> u32 {
    msg.header().reply_serial().map_or(0, |s| s.get())
}

/// Skip an `a{sv}`.
fn skip_props(r: &mut Reader<'_>) -> WireResult<()> {
    let end = r.array(8)?;
    while r.more(end, 8)? {
        r.str()?;
        let _ = r.variant_expect(None)?;
    }
    Ok(())
}

/// Decode an `a{sv}` into `iface`'s slots (declared, type-checked) and extras.
fn decode_props_into(
    r: &mut Reader<'_>,
    iface: &mut Interface,
    names: &mut HashSet<Arc<str>>,
    rep: &mut Reporter,
    path: &str,
) -> WireResult<()> {
    let end = r.array(8)?;
    while r.more(end, 8)? {
        let name = r.str()?;
        let decl = iface
            .decl
            .as_ref()
            .and_then(|d| d.slot(name).map(|s| (s, &d.properties[s])));
        match decl {
            Some((slot, p)) => match r.variant_expect(Some(p.signature.as_bytes()))? {
                Ok(v) => iface.slots[slot] = v,
                Err(actual) => rep.warn(
                    WarningKind::WrongType,
                    format_args!(
                        "{path} {}.{name}: got type {actual}, declared {}; value rejected",
                        iface.name, p.signature
                    ),
                ),
            },
            None => {
                if let Ok(v) = r.variant_expect(None)? {
                    let name = intern(names, name);
                    iface.extra.push((name, v));
                }
            }
        }
    }
    Ok(())
}

/// The interface names in an introspection document.
fn introspected_interfaces(xml: &str) -> impl Iterator<Item = &str> {
    xml.split("<interface").skip(1).filter_map(|rest| {
        let start = rest.find("name=\"")? + 6;
        let len = rest[start..].find('"')?;
        Some(&rest[start..start + len])
    })
}
