//! Batching and settle: a batch records what its messages changed (phase 1, see
//! [`signals`](super::signals) and [`load`](super::load)); its commit recomputes readiness for
//! the touched objects and what references them (phase 2) and queues the events in order
//! (phase 3): removals, owner change, removed interfaces, property changes, refetches,
//! additions, added interfaces, then the load's outcome. However many messages a batch holds,
//! each object appears once, when it is ready, and a property changed by several signals is
//! reported in the order they came.

use std::sync::Arc;

use hashbrown::HashSet;

use super::{Call, Core};
use crate::{Value, debug::WarningKind, error::CallError, event::Event, store::ObjId};

/// A recorded property change: object, interface, property, old and new value.
pub(super) type PropChange = (ObjId, Arc<str>, Arc<str>, Value, Value);

/// What the messages of one batch changed, waiting for the commit.
#[derive(Debug, Default)]
pub(super) struct Batch {
    pub(super) removed: Vec<Event>,
    pub(super) iface_removed: Vec<(ObjId, Arc<str>)>,
    pub(super) changes: Vec<PropChange>,
    pub(super) refetched: Vec<(ObjId, Option<Value>)>,
    pub(super) iface_added: Vec<(ObjId, Arc<str>)>,
    pub(super) loaded: bool,
    pub(super) failed: Option<CallError>,
    pub(super) reconciled: Option<usize>,
    pub(super) owner: Option<Event>,
    pub(super) dirty: bool,
}

impl Core {
    /// Phases 2 and 3: settle readiness, then queue the batch's events in order.
    pub(crate) fn commit(&mut self) {
        if !self.batch.dirty && !self.load_announce {
            return;
        }
        self.rep.diag.batches += 1;
        let batch = std::mem::take(&mut self.batch);
        let (region, n_touched) = self.store.update_readiness();
        // Dangling references are reported for objects whose references were just set; a
        // target that goes away before its referrers catch up is the service's business, also
        // when a referrer changes in between for another reason (NetworkManager removes an
        // active connection, and may change the manager's other properties, before it
        // updates `ActiveConnections`).
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
                    let target = self.store.slot(t);
                    if target.obj.is_none() && !target.gone {
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
        self.names.prune();
    }
}

#[cfg(test)]
mod tests {
    use crate::core::test_support::*;

    const I: &str = "org.example.I";

    #[test]
    fn many_signals_settle_into_one_commit_in_order() {
        let mut core = loaded_core(&[("/o/1", &[(I, &[("A", 0)])]), ("/o/2", &[(I, &[])])]);
        drain(&mut core);
        let batches = core.diagnostics().batches;
        // One batch: 100 changes of A, an object added and removed again, another removed,
        // another added.
        for v in 1..=100 {
            core.handle(&properties_changed_from(OWNER, "/o/1", I, &[("A", v)], &[]));
        }
        core.handle(&interfaces_added("/o/3", &[(I, &[])]));
        core.handle(&interfaces_removed("/o/3", &[I]));
        core.handle(&interfaces_removed("/o/2", &[I]));
        core.handle(&interfaces_added("/o/4", &[(I, &[("A", 4)])]));
        assert_eq!(core.queued(), 0, "nothing is handed out before the commit");
        core.commit();
        assert_eq!(core.diagnostics().batches, batches + 1);
        let events = drain(&mut core);
        assert_eq!(events.len(), 102, "{events:?}");
        // Removals first, then the changes in the order sent, then additions; /o/3 never
        // became visible, so nothing is said of it.
        assert!(matches!(&events[0], Event::Removed { path, .. } if &**path == "/o/2"));
        for (i, ev) in events[1..101].iter().enumerate() {
            let want = i as u32 + 1;
            match ev {
                Event::PropertyChanged { path, old, new, .. } => {
                    assert_eq!(&**path, "/o/1");
                    assert_eq!(old, &crate::Value::U32(want - 1));
                    assert_eq!(new, &crate::Value::U32(want));
                }
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(
            events[101],
            Event::Added {
                path: "/o/4".into()
            }
        );
        assert_eq!(prop(&core, "/o/1", I, "A"), Some(100));
    }

    #[test]
    fn an_empty_batch_commits_nothing() {
        let mut core = loaded_core(&[]);
        drain(&mut core);
        let batches = core.diagnostics().batches;
        core.commit();
        assert_eq!(core.diagnostics().batches, batches);
        assert!(drain(&mut core).is_empty());
    }

    #[test]
    fn changes_of_an_object_added_in_the_same_batch_are_in_its_addition() {
        let mut core = loaded_core(&[]);
        drain(&mut core);
        core.handle(&interfaces_added("/o/1", &[(I, &[("A", 1)])]));
        core.handle(&properties_changed_from(OWNER, "/o/1", I, &[("A", 2)], &[]));
        core.commit();
        assert_eq!(
            drain(&mut core),
            [Event::Added {
                path: "/o/1".into()
            }]
        );
        assert_eq!(prop(&core, "/o/1", I, "A"), Some(2));
    }

    /// A referrer declared with two `o` properties, `Peer` and `Other`, and a `u32` `A`.
    mod references {
        use std::collections::HashMap;

        use zbus::{ObjectPath, Variant};

        use super::*;
        use crate::debug::WarningKind;
        use crate::meta::{InterfaceDecl, Registry};

        const R: &str = "org.example.Ref";

        fn props(a: u32, refs: &[(&str, &str)]) -> HashMap<String, Variant<'static>> {
            let mut props = HashMap::from([("A".to_owned(), Variant::from(a))]);
            for (name, path) in refs {
                let path = ObjectPath::try_from(*path).unwrap().into_owned();
                props.insert((*name).to_owned(), Variant::from(path));
            }
            props
        }

        /// Loaded with `/m` (whose `Peer` is `/t`, `Other` none) and `/t`.
        fn core() -> crate::core::Core {
            let mut cfg = config();
            cfg.registry = Registry::generic().with(InterfaceDecl::new(
                R,
                [("A", "u", None), ("Other", "o", None), ("Peer", "o", None)],
            ));
            let mut core = bus_core(cfg);
            core.start();
            answer_name_owner(&mut core, OWNER);
            let call = take_call(&mut core, "GetManagedObjects");
            let m = props(0, &[("Peer", "/t"), ("Other", "/")]);
            let objects: HashMap<ObjectPath<'static>, HashMap<String, _>> = [
                ("/m", HashMap::from([(R.to_owned(), m)])),
                ("/t", HashMap::from([(R.to_owned(), props(0, &[]))])),
            ]
            .into_iter()
            .map(|(p, i)| (ObjectPath::try_from(p).unwrap().into_owned(), i))
            .collect();
            core.handle(&reply_to(&call).build(&(objects,)).unwrap());
            core.commit();
            assert!(core.is_loaded());
            assert_eq!(core.diagnostics().count(WarningKind::DanglingReference), 0);
            drain(&mut core);
            core
        }

        fn changed(path: &str, a: u32, refs: &[(&str, &str)]) -> zbus::Message {
            signal(path, "org.freedesktop.DBus.Properties", "PropertiesChanged")
                .sender(OWNER)
                .build(&(R, props(a, refs), &[] as &[&str]))
                .unwrap()
        }

        #[test]
        fn a_target_removed_before_its_referrer_catches_up_is_not_dangling() {
            let mut core = core();
            // The service removes /t, then changes another reference of /m before it updates
            // /m's Peer (NetworkManager: an active connection removed, the manager's
            // PrimaryConnection changed, then its ActiveConnections), in batches of their
            // own, as a reader may hand them over.
            core.handle(&interfaces_removed("/t", &[R]));
            core.commit();
            core.handle(&changed("/m", 1, &[("Other", "/m")]));
            core.commit();
            assert_eq!(core.diagnostics().count(WarningKind::DanglingReference), 0);
            core.handle(&changed("/m", 2, &[("Peer", "/")]));
            core.commit();
            assert_eq!(core.diagnostics().count(WarningKind::DanglingReference), 0);
            assert!(
                drain(&mut core)
                    .iter()
                    .any(|ev| matches!(ev, Event::Removed { path, .. } if &**path == "/t"))
            );
        }

        #[test]
        fn a_reference_to_an_object_that_never_was_is_dangling() {
            let mut core = core();
            core.handle(&changed("/m", 1, &[("Other", "/never")]));
            core.commit();
            assert_eq!(core.diagnostics().count(WarningKind::DanglingReference), 1);
            // A target that was removed and comes back is an object again: no warning.
            core.handle(&interfaces_removed("/t", &[R]));
            core.handle(&interfaces_added("/t", &[(R, &[("A", 5)])]));
            core.handle(&changed("/m", 2, &[("Other", "/t")]));
            core.commit();
            assert_eq!(core.diagnostics().count(WarningKind::DanglingReference), 1);
        }
    }
}
