//! Load scope and fallback: what is loaded ([`Scope`]) and how. Everything with one
//! `GetManagedObjects`; one object by `Introspect` and a `GetAll` per interface; or the object
//! a server-side lookup names. A service that refuses the narrow calls (it does not know the
//! method, or denies it) gets the broad one instead, and the cache filters locally. Also the
//! reconcile: a full reload compared with the cache.

use std::sync::Arc;

use hashbrown::HashSet;
use zbus::message::{Message, Sequence};

use super::{
    Call, Core, INTROSPECTABLE, OM, PROPS, Scope,
    decode::{Decoded, ErrorReply, body_is, decode_props_into, first_str},
    owner::Owner,
    settle::Batch,
};
use crate::{Value, debug::WarningKind, error::CallFailure, object::Interface, store::ObjId};
use netmirror_dbus_meta::wire::{Reader, WireResult};

/// Where the current (re)load is.
#[derive(Debug, Clone)]
pub(super) enum Load {
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
pub(super) enum LocalFilter {
    None,
    Path(String),
    Property {
        iface: String,
        prop: String,
        value: String,
    },
}

/// The interfaces an introspection document declares, the standard `org.freedesktop.DBus.*`
/// ones left out (parsed with `zbus_xml`).
fn introspected_interfaces(xml: &str) -> Result<Vec<String>, zbus_xml::Error> {
    let node = zbus_xml::Node::try_from(xml)?;
    Ok(node
        .interfaces()
        .iter()
        .map(|i| i.name().to_string())
        .filter(|name| !name.starts_with("org.freedesktop.DBus."))
        .collect())
}

impl Core {
    /// Ends the current load: the batch reports it once the cache is consistent.
    pub(super) fn mark_load_done(&mut self) {
        self.load = Load::Done;
        self.batch.loaded = true;
        self.batch.dirty = true;
    }

    pub(super) fn begin_load(&mut self) {
        let dest = self.service_dest();
        match self.cfg.scope.clone() {
            Scope::All => self.load_full(),
            Scope::Path(p) => {
                let p: Arc<str> = p.into();
                self.load = Load::Resolving;
                self.introspect(&dest, p);
            }
            Scope::Lookup(l) => {
                self.load = Load::Resolving;
                self.call(
                    &dest,
                    &l.path,
                    &l.interface,
                    &l.method,
                    &[&l.arg],
                    Call::Lookup,
                );
            }
        }
    }

    fn introspect(&mut self, dest: &str, path: Arc<str>) {
        self.call(
            dest,
            &path,
            INTROSPECTABLE,
            "Introspect",
            &[],
            Call::Introspect(path.clone()),
        );
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
            &[],
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

    /// Whether an object passes the local filter (after a fallback).
    pub(super) fn keep(&self, path: &str, ifaces: &[Interface]) -> bool {
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

    /// The reply to `GetManagedObjects`.
    pub(super) fn on_managed_objects(&mut self, msg: &Message, error: Option<&ErrorReply>) {
        match error {
            None => self.apply_managed_objects(msg),
            Some(e) if e.owner_gone() => {
                // The owner went away: its NameOwnerChanged follows and decides.
                self.rep
                    .trace(format_args!("GetManagedObjects failed: {e}"));
                self.load = Load::Idle;
            }
            Some(e) => {
                // The service is there but cannot be loaded (no ObjectManager, access
                // denied): the load fails, and says why.
                self.fail_managed_objects(e.cause());
            }
        }
    }

    fn fail_managed_objects(&mut self, cause: CallFailure) {
        let dest = self.service_dest();
        let om = self.cfg.manager_path.clone();
        self.fail(&Call::GetManagedObjects, &dest, &om, cause);
    }

    /// An error reply to a one-object load's call: a refusal (the method is not there) falls
    /// back to the whole load; anything else means the object is not there, and the load is
    /// done with nothing.
    fn refused_or_absent(&mut self, e: &ErrorReply, absent: std::fmt::Arguments<'_>) {
        if e.is_refusal() {
            self.fall_back(&e.name);
        } else {
            self.rep.trace(absent);
            self.mark_load_done();
        }
    }

    /// The reply to the lookup: the object to load, or nothing.
    pub(super) fn on_lookup(&mut self, msg: &Message, error: Option<&ErrorReply>) {
        if let Some(e) = error {
            // Else the service knows the method, and says there is no such object.
            self.refused_or_absent(e, format_args!("lookup found nothing: {e}"));
            return;
        }
        match msg.body().deserialize::<(zbus::OwnedObjectPath,)>() {
            Ok((path,)) => {
                let p: Arc<str> = path.as_str().into();
                let dest = self.service_dest();
                self.cfg.scope = Scope::Path(p.to_string());
                self.introspect(&dest, p);
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
    }

    /// The reply to `Introspect` of the one object to load: a `GetAll` per interface.
    pub(super) fn on_introspect(
        &mut self,
        path: Arc<str>,
        msg: &Message,
        error: Option<&ErrorReply>,
    ) {
        if let Some(e) = error {
            self.refused_or_absent(e, format_args!("no object {path}: {e}"));
            return;
        }
        let dest = self.service_dest();
        if !body_is(msg, "s") {
            let cause = CallFailure::WrongSignature {
                got: msg.body().signature().to_string(),
                expected: "s".into(),
            };
            self.fail(&Call::Introspect(path.clone()), &dest, &path, cause);
            return;
        }
        let xml = first_str(msg).unwrap_or_default();
        let ifaces = match introspected_interfaces(&xml) {
            Ok(ifaces) => ifaces,
            Err(e) => {
                let cause = CallFailure::Malformed(format!("introspection data: {e}"));
                self.fail(&Call::Introspect(path.clone()), &dest, &path, cause);
                return;
            }
        };
        if ifaces.is_empty() {
            self.mark_load_done();
            return;
        }
        for iface in &ifaces {
            let name = self.names.intern(iface);
            self.call(
                &dest,
                &path,
                PROPS,
                "GetAll",
                &[iface],
                Call::GetAll(path.clone(), name),
            );
        }
        self.load = Load::ByPath {
            waiting: ifaces.len(),
            deferred: Vec::new(),
            got: Vec::new(),
        };
    }

    /// The reply to one `GetAll` of a load by path; the last one completes the load and applies
    /// the signals deferred meanwhile (those its replies do not already hold).
    pub(super) fn on_get_all(
        &mut self,
        path: Arc<str>,
        iface: Arc<str>,
        msg: &Message,
        error: Option<&ErrorReply>,
    ) {
        let pos = msg.recv_position();
        if error.is_none() && body_is(msg, "a{sv}") {
            let body = msg.body();
            let mut r = Reader::for_body(body.data());
            let decl = self.declaration(&iface, &path);
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
        } else if error.is_some_and(ErrorReply::unknown_interface) {
            // An interface gone since the introspection is no failure; anything else is.
            self.rep
                .trace(format_args!("GetAll {path} {iface}: interface gone"));
        } else {
            let cause = match error {
                Some(e) => e.cause(),
                None => CallFailure::WrongSignature {
                    got: msg.body().signature().to_string(),
                    expected: "a{sv}".into(),
                },
            };
            let dest = self.service_dest();
            self.fail(&Call::GetAll(path.clone(), iface), &dest, &path, cause);
            return;
        }
        let mut finished = None;
        if let Load::ByPath {
            waiting,
            deferred,
            got,
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
                    && m.body().deserialize::<(&str,)>().is_ok_and(|(i,)| {
                        got.iter().any(|(g, p)| **g == *i && *p > m.recv_position())
                    });
                if superseded {
                    self.rep.diag.superseded_signals += 1;
                } else {
                    self.on_signal(&m, &hdr);
                }
            }
        }
    }

    fn apply_managed_objects(&mut self, msg: &Message) {
        if !body_is(msg, "a{oa{sa{sv}}}") {
            self.fail_managed_objects(CallFailure::WrongSignature {
                got: msg.body().signature().to_string(),
                expected: "a{oa{sa{sv}}}".into(),
            });
            return;
        }
        let body = msg.body();
        let mut r = Reader::for_body(body.data());
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
                self.fail_managed_objects(CallFailure::Malformed(e.to_string()));
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::{Lookup, test_support::*};

    #[test]
    fn an_error_reply_to_get_managed_objects_fails_the_load_with_its_name() {
        let mut core = bus_core(config());
        core.start();
        answer_name_owner(&mut core, OWNER);
        let call = take_call(&mut core, "GetManagedObjects");
        core.handle(&error_to(
            &call,
            OWNER,
            "org.freedesktop.DBus.Error.UnknownMethod",
        ));
        core.commit();
        let failure = core.failure.take().expect("the load failed");
        assert_eq!(failure.method, "ObjectManager.GetManagedObjects");
        assert_eq!(
            failure.error_name(),
            Some("org.freedesktop.DBus.Error.UnknownMethod")
        );
        assert!(failure.service.contains(OWNER), "{failure}");
        assert!(matches!(
            drain(&mut core).as_slice(),
            [Event::LoadFailed(_)]
        ));
        assert!(!core.is_loaded());
    }

    #[test]
    fn get_managed_objects_failing_because_the_owner_left_waits_for_name_owner_changed() {
        let mut core = bus_core(config());
        core.start();
        answer_name_owner(&mut core, OWNER);
        let call = take_call(&mut core, "GetManagedObjects");
        core.handle(&error_to(
            &call,
            "org.freedesktop.DBus",
            "org.freedesktop.DBus.Error.ServiceUnknown",
        ));
        core.commit();
        assert!(core.failure.is_none());
        assert!(drain(&mut core).is_empty());
        assert!(core.handle(&name_owner_changed(SERVICE, OWNER, "")));
        core.commit();
        assert_eq!(
            drain(&mut core),
            [Event::OwnerChanged { owner: None }, Event::Loaded]
        );
    }

    #[test]
    fn a_reply_of_the_wrong_signature_fails_the_load() {
        let mut core = bus_core(config());
        core.start();
        answer_name_owner(&mut core, OWNER);
        let call = take_call(&mut core, "GetManagedObjects");
        core.handle(&reply_to(&call).build(&("not objects",)).unwrap());
        core.commit();
        let failure = core.failure.take().expect("the load failed");
        assert_eq!(
            failure.cause,
            CallFailure::WrongSignature {
                got: "s".into(),
                expected: "a{oa{sa{sv}}}".into()
            }
        );
    }

    #[test]
    fn signals_before_the_reply_are_superseded_by_it() {
        let mut core = bus_core(config());
        core.start();
        answer_name_owner(&mut core, OWNER);
        // Sent by the service before it built the reply: the reply holds their effect.
        core.handle(&properties_changed_from(
            OWNER,
            "/o/1",
            "org.example.I",
            &[("A", 9)],
            &[],
        ));
        answer_managed_objects(&mut core, &[("/o/1", &[("org.example.I", &[("A", 2)])])]);
        core.commit();
        assert_eq!(core.diagnostics().superseded_signals, 1);
        assert_eq!(prop(&core, "/o/1", "org.example.I", "A"), Some(2));
        assert_eq!(
            drain(&mut core),
            [
                Event::Added {
                    path: "/o/1".into()
                },
                Event::Loaded
            ]
        );
    }

    #[test]
    fn a_refused_lookup_falls_back_to_loading_everything_and_filtering() {
        let mut cfg = config();
        cfg.scope = Scope::Lookup(Lookup {
            path: "/".into(),
            interface: "org.example.Finder".into(),
            method: "Find".into(),
            arg: "eth0".into(),
            fallback: ("org.example.Dev".into(), "Name".into()),
        });
        let mut core = bus_core(cfg);
        core.start();
        answer_name_owner(&mut core, OWNER);
        let find = take_call(&mut core, "Find");
        core.handle(&error_to(
            &find,
            OWNER,
            "org.freedesktop.DBus.Error.UnknownMethod",
        ));
        core.commit();
        assert!(core.failure.is_none());
        // Loads everything, and keeps the object whose Name is the argument.
        let call = take_call(&mut core, "GetManagedObjects");
        let objects = managed_objects(&[]);
        let mut objects: std::collections::HashMap<_, _> = objects;
        for (path, name) in [("/d/1", "eth0"), ("/d/2", "eth1")] {
            let mut props = std::collections::HashMap::new();
            props.insert("Name".to_owned(), zbus::Variant::from(name));
            let mut ifaces = std::collections::HashMap::new();
            ifaces.insert("org.example.Dev".to_owned(), props);
            objects.insert(zbus::ObjectPath::try_from(path).unwrap(), ifaces);
        }
        core.handle(&reply_to(&call).build(&(objects,)).unwrap());
        core.commit();
        assert_eq!(
            drain(&mut core),
            [
                Event::Added {
                    path: "/d/1".into()
                },
                Event::Loaded
            ]
        );
        assert!(
            core.store
                .id("/d/2")
                .is_none_or(|id| core.store.slot(id).obj.is_none())
        );
        // And no reconcile on a filtered load.
        assert!(!core.reconcile());
    }

    #[test]
    fn a_lookup_argument_that_d_bus_cannot_carry_fails_the_load_and_sends_nothing() {
        let mut cfg = config();
        cfg.scope = Scope::Lookup(Lookup {
            path: "/".into(),
            interface: "org.example.Finder".into(),
            method: "Find".into(),
            arg: "eth\0".into(),
            fallback: ("org.example.Dev".into(), "Name".into()),
        });
        let mut core = bus_core(cfg);
        core.start();
        answer_name_owner(&mut core, OWNER);
        core.commit();
        assert!(!queued_members(&core).contains(&"Find".to_owned()));
        let failure = core.failure.clone().expect("the load failed");
        assert!(
            matches!(&failure.cause, crate::error::CallFailure::Unsendable(why) if why.contains("NUL")),
            "{failure}"
        );
    }

    #[test]
    fn a_load_by_path_introspects_then_gets_every_interface() {
        let mut cfg = config();
        cfg.scope = Scope::Path("/o/7".into());
        let mut core = bus_core(cfg);
        core.start();
        answer_name_owner(&mut core, OWNER);
        let introspect = take_call(&mut core, "Introspect");
        let xml = r#"<!DOCTYPE node PUBLIC "-//freedesktop//DTD D-BUS Object Introspection 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd">
<node>
  <interface name="org.freedesktop.DBus.Properties"/>
  <interface name="org.example.A"><property name="X" type="u" access="read"/></interface>
  <interface name="org.example.B"/>
  <node name="child"/>
</node>"#;
        core.handle(&reply_to(&introspect).build(&(xml,)).unwrap());
        let get_a = take_call(&mut core, "GetAll");
        let get_b = take_call(&mut core, "GetAll");
        assert!(
            core.out
                .iter()
                .all(|m| m.header().member().is_none_or(|m| m != "GetAll"))
        );
        let a: std::collections::HashMap<String, zbus::Variant<'_>> =
            [("X".to_owned(), zbus::Variant::from(5u32))].into();
        core.handle(&reply_to(&get_a).build(&(a,)).unwrap());
        assert!(!core.is_loaded(), "one GetAll is still on its way");
        // B is gone since the introspection: no failure.
        core.handle(&error_to(
            &get_b,
            OWNER,
            "org.freedesktop.DBus.Error.UnknownInterface",
        ));
        core.commit();
        assert!(core.failure.is_none());
        assert_eq!(prop(&core, "/o/7", "org.example.A", "X"), Some(5));
        assert_eq!(
            drain(&mut core),
            [
                Event::Added {
                    path: "/o/7".into()
                },
                Event::Loaded
            ]
        );
    }

    #[test]
    fn malformed_introspection_data_fails_the_load() {
        let mut cfg = config();
        cfg.scope = Scope::Path("/o/7".into());
        let mut core = bus_core(cfg);
        core.start();
        answer_name_owner(&mut core, OWNER);
        let introspect = take_call(&mut core, "Introspect");
        core.handle(&reply_to(&introspect).build(&("<node><interface")).unwrap());
        core.commit();
        let failure = core.failure.take().expect("the load failed");
        assert_eq!(failure.method, "Introspectable.Introspect");
        assert!(
            matches!(failure.cause, CallFailure::Malformed(_)),
            "{failure}"
        );
    }

    #[test]
    fn reconcile_reports_the_differences() {
        let mut core = loaded_core(&[
            ("/o/1", &[("org.example.I", &[("A", 1)])]),
            ("/o/2", &[("org.example.I", &[("A", 1)])]),
        ]);
        drain(&mut core);
        assert!(core.reconcile());
        assert!(!core.reconcile(), "one at a time");
        // /o/1 changed, /o/2 is gone, /o/3 is new: three differences.
        answer_managed_objects(
            &mut core,
            &[
                ("/o/1", &[("org.example.I", &[("A", 2)])]),
                ("/o/3", &[("org.example.I", &[("A", 1)])]),
            ],
        );
        core.commit();
        let events = drain(&mut core);
        let n = events.len();
        assert!(n >= 2, "{events:?}");
        assert_eq!(
            events[n - 2..],
            [Event::Reconciled { differences: 3 }, Event::Loaded]
        );
        assert_eq!(core.diagnostics().count(crate::WarningKind::Diverged), 1);
    }

    #[test]
    fn signals_during_a_reconcile_apply_and_are_no_differences() {
        let mut core = loaded_core(&[
            ("/o/1", &[("org.example.I", &[("A", 1)])]),
            ("/o/2", &[("org.example.I", &[("A", 1)])]),
        ]);
        drain(&mut core);
        assert!(core.reconcile());
        // Changes the service makes before it answers: signalled first, then in the reply.
        core.handle(&properties_changed_from(
            OWNER,
            "/o/1",
            "org.example.I",
            &[("A", 2)],
            &[],
        ));
        core.handle(&interfaces_added("/o/3", &[("org.example.I", &[("A", 3)])]));
        core.handle(&interfaces_removed("/o/2", &["org.example.I"]));
        core.commit();
        assert_eq!(prop(&core, "/o/1", "org.example.I", "A"), Some(2));
        assert_eq!(prop(&core, "/o/3", "org.example.I", "A"), Some(3));
        assert_eq!(prop(&core, "/o/2", "org.example.I", "A"), None);
        let events = drain(&mut core);
        assert!(
            events.contains(&Event::Added {
                path: "/o/3".into()
            }),
            "{events:?}"
        );
        answer_managed_objects(
            &mut core,
            &[
                ("/o/1", &[("org.example.I", &[("A", 2)])]),
                ("/o/3", &[("org.example.I", &[("A", 3)])]),
            ],
        );
        core.commit();
        let events = drain(&mut core);
        assert_eq!(
            events,
            [Event::Reconciled { differences: 0 }, Event::Loaded],
            "the signals left nothing to mend"
        );
        assert_eq!(core.diagnostics().count(crate::WarningKind::Diverged), 0);
        assert_eq!(core.diagnostics().superseded_signals, 0);
    }
}
