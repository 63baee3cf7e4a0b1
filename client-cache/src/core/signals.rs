//! The owner's signals applied to the store (phase 1 of a batch): `InterfacesAdded`,
//! `InterfacesRemoved` and `PropertiesChanged` (invalidated properties included), noting old
//! values, removed objects and touched slots for the batch's events. Signals that arrive before
//! the pending load's reply are superseded by it (not during a reconcile, whose store is
//! complete: they apply as usual); during a load by path they wait for its `GetAll` replies.

use smallvec::SmallVec;
use zbus::message::{Header, Message};

use super::{
    BUS, Core, OM, PROPS,
    decode::{body_is, decode_props_into},
    load::{Load, LocalFilter},
};
use crate::{
    Value,
    debug::WarningKind,
    event::Event,
    object::{Fetch, Interface},
    store::ObjId,
};
use netmirror_dbus_meta::wire::Reader;

impl Core {
    /// A signal: the bus's `NameOwnerChanged` (returns whether the owner changed), or one of the
    /// owner's.
    pub(super) fn on_signal(&mut self, msg: &Message, hdr: &Header<'_>) -> bool {
        let iface = hdr.interface().map(|i| i.as_str()).unwrap_or("");
        let member = hdr.member().map(|m| m.as_str()).unwrap_or("");
        if self.bus && iface == BUS && member == "NameOwnerChanged" {
            return self.on_name_owner_changed(msg, hdr);
        }
        if self.bus && hdr.sender().is_some_and(|s| s.as_str() == BUS) {
            // NameAcquired, NameLost and the like: about us, not the service.
            return false;
        }
        if !self.sent_by_owner(hdr) {
            return false;
        }
        match &mut self.load {
            // A reconcile's store is complete and live: its signals apply as usual, and the
            // reply, authoritative, then finds only what was really lost.
            Load::Full if self.reconciling => {}
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
            _ => self.on_refresh_signal(path, iface, member),
        }
        false
    }

    /// Set the interfaces of object `id`: replace all of them (`replace`) or merge.
    pub(super) fn put_object(
        &mut self,
        id: ObjId,
        ifaces: SmallVec<[Interface; 2]>,
        replace: bool,
    ) {
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

    pub(super) fn remove_object(&mut self, id: ObjId) {
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
            Ok(s) => s,
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
            .is_some_and(|o| o.has_interface(iface_name));
        if !has {
            if !iface_name.starts_with("org.freedesktop.DBus.") {
                self.rep.warn(
                    WarningKind::UnknownObject,
                    format_args!("PropertiesChanged for {path} on interface {iface_name} it lacks"),
                );
            }
            return;
        }
        let decl = self.cfg.registry.get(iface_name).cloned();
        let iname = self.names.intern(iface_name);
        let mut update = Interface::new(iname.clone(), decl.clone());
        if let Err(e) = decode_props_into(&mut r, &mut update, &mut self.names, &mut self.rep, path)
        {
            self.rep.warn(
                WarningKind::Malformed,
                format_args!("PropertiesChanged {path}: {e}"),
            );
            return;
        }
        // Invalidated properties: the service says they changed without sending the value.
        let invalidated = match r.value(b"as") {
            Ok(Value::Strs(v)) => v,
            _ => Default::default(),
        };
        let visible = self.store.slot(id).visible;
        let mut refs_changed = false;
        let mut changes = Vec::new();
        // A change that fetches again the object this one refers to (see `RefreshOn`).
        let refresh_on = self
            .cfg
            .fetches
            .iter()
            .filter_map(|f| f.refresh_on.as_ref())
            .find(|on| on.interface == iface_name);
        let mut refetch = None;
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
                if let (Some(on), Some(p)) = (refresh_on, decl)
                    && *p.name == *on.property
                    && on.fires(&target.slots[slot], &value)
                {
                    refetch = Some(on.reference.clone());
                }
                let old = std::mem::replace(&mut target.slots[slot], value);
                if let (Some(new), Some(p)) = (new, decl) {
                    changes.push((p.name.clone(), old, new));
                }
            }
            for (name, value) in update.extra {
                let new = visible.then(|| value.clone());
                if let Some(on) = refresh_on
                    && *name == *on.property
                {
                    let old = target.extra.iter().find(|(n, _)| *n == name);
                    if on.fires(old.map_or(&Value::Unset, |(_, v)| v), &value) {
                        refetch = Some(on.reference.clone());
                    }
                }
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
            for name in invalidated.iter() {
                let slot = target.decl.as_ref().and_then(|d| d.slot(name));
                let old = match slot {
                    Some(s) => std::mem::take(&mut target.slots[s]),
                    None => match target.extra.iter().position(|(n, _)| **n == **name) {
                        Some(i) => target.extra.remove(i).1,
                        None => continue,
                    },
                };
                if visible {
                    changes.push((self.names.intern(name), old, Value::Unset));
                }
            }
        }
        for (prop, old, new) in changes {
            self.batch.changes.push((id, iname.clone(), prop, old, new));
        }
        if refs_changed {
            self.store.update_refs(id);
        }
        if let Some(reference) = refetch {
            let target = self
                .store
                .slot(id)
                .obj
                .as_ref()
                .and_then(|o| o.ifaces.iter().find(|i| i.name == iname))
                .and_then(|i| i.get(&reference))
                .and_then(|value| match value {
                    Value::Path(path) => Some(path.clone()),
                    _ => None,
                });
            if let Some(path) = target {
                self.fetch_again(&path);
            }
        }
        self.batch.dirty = true;
    }
}

#[cfg(test)]
mod tests {
    use crate::core::test_support::*;

    const I: &str = "org.example.I";

    #[test]
    fn interfaces_added_to_a_new_object_adds_it() {
        let mut core = loaded_core(&[]);
        drain(&mut core);
        core.handle(&interfaces_added("/o/1", &[(I, &[("A", 1)])]));
        core.commit();
        assert_eq!(
            drain(&mut core),
            [Event::Added {
                path: "/o/1".into()
            }]
        );
        assert_eq!(prop(&core, "/o/1", I, "A"), Some(1));
    }

    #[test]
    fn interfaces_added_to_a_known_object_adds_the_interface() {
        let mut core = loaded_core(&[("/o/1", &[(I, &[("A", 1)])])]);
        drain(&mut core);
        core.handle(&interfaces_added("/o/1", &[("org.example.J", &[("B", 2)])]));
        core.commit();
        assert_eq!(
            drain(&mut core),
            [Event::InterfaceAdded {
                path: "/o/1".into(),
                interface: "org.example.J".into()
            }]
        );
        assert_eq!(prop(&core, "/o/1", "org.example.J", "B"), Some(2));
        assert_eq!(prop(&core, "/o/1", I, "A"), Some(1));
    }

    #[test]
    fn interfaces_removed_removes_the_interface_then_the_object() {
        let mut core = loaded_core(&[("/o/1", &[(I, &[("A", 1)]), ("org.example.J", &[])])]);
        drain(&mut core);
        core.handle(&interfaces_removed("/o/1", &["org.example.J"]));
        core.commit();
        assert_eq!(
            drain(&mut core),
            [Event::InterfaceRemoved {
                path: "/o/1".into(),
                interface: "org.example.J".into()
            }]
        );
        // The last interface (the standard ones do not count): the object goes, and its
        // removal carries it as it last was.
        core.handle(&interfaces_removed(
            "/o/1",
            &[I, "org.freedesktop.DBus.Properties"],
        ));
        core.commit();
        match drain(&mut core).as_slice() {
            [Event::Removed { path, object }] => {
                assert_eq!(&**path, "/o/1");
                assert_eq!(object.get(I, "A"), Some(&crate::Value::U32(1)));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(core.store.len_present(), 0);
    }

    #[test]
    fn properties_changed_with_invalidated_properties() {
        let mut core = loaded_core(&[("/o/1", &[(I, &[("A", 1), ("B", 2)])])]);
        drain(&mut core);
        core.handle(&properties_changed_from(
            OWNER,
            "/o/1",
            I,
            &[("A", 5)],
            &["B"],
        ));
        core.commit();
        assert_eq!(
            drain(&mut core),
            [
                Event::PropertyChanged {
                    path: "/o/1".into(),
                    interface: I.into(),
                    property: "A".into(),
                    old: crate::Value::U32(1),
                    new: crate::Value::U32(5),
                },
                Event::PropertyChanged {
                    path: "/o/1".into(),
                    interface: I.into(),
                    property: "B".into(),
                    old: crate::Value::U32(2),
                    new: crate::Value::Unset,
                },
            ]
        );
        assert_eq!(prop(&core, "/o/1", I, "A"), Some(5));
        assert_eq!(prop(&core, "/o/1", I, "B"), None);
    }

    #[test]
    fn properties_changed_of_an_unknown_object_reconciles() {
        let mut core = loaded_core(&[("/o/1", &[(I, &[("A", 1)])])]);
        drain(&mut core);
        core.handle(&properties_changed_from(OWNER, "/o/9", I, &[("A", 5)], &[]));
        core.commit();
        assert_eq!(
            core.diagnostics().count(crate::WarningKind::UnknownObject),
            1
        );
        assert_eq!(sent_members(&mut core), ["GetManagedObjects"]);
        // On an interface the object lacks: a warning, nothing applied.
        let mut core = loaded_core(&[("/o/1", &[(I, &[("A", 1)])])]);
        drain(&mut core);
        core.handle(&properties_changed_from(
            OWNER,
            "/o/1",
            "org.example.Z",
            &[("A", 5)],
            &[],
        ));
        core.commit();
        assert!(drain(&mut core).is_empty());
        assert_eq!(
            core.diagnostics().count(crate::WarningKind::UnknownObject),
            1
        );
    }

    #[test]
    fn a_malformed_signal_is_a_warning_and_changes_nothing() {
        let mut core = loaded_core(&[("/o/1", &[(I, &[("A", 1)])])]);
        drain(&mut core);
        let bad = signal("/o/1", crate::core::PROPS, "PropertiesChanged")
            .sender(OWNER)
            .build(&(I, 7u32))
            .unwrap();
        core.handle(&bad);
        let bad = signal("/", crate::core::OM, "InterfacesAdded")
            .sender(OWNER)
            .build(&("/o/2",))
            .unwrap();
        core.handle(&bad);
        core.commit();
        assert!(drain(&mut core).is_empty());
        assert_eq!(core.diagnostics().count(crate::WarningKind::Malformed), 2);
        assert_eq!(prop(&core, "/o/1", I, "A"), Some(1));
    }
}
