//! A consumer that falls behind: the snapshot of what the consumer knows once its bounded
//! event queue (see [`events`](super::events)) is full, and the resync that takes the consumer from there to the cache's
//! state ([`Event::Overrun`], the differences, [`Event::Resynced`]).

use std::sync::Arc;

use hashbrown::HashMap;

use super::{Core, owner::Owner};
use crate::{Value, error::CallError, event::Event, object::Object, store::ObjId};

/// The consumer's view of the cache, kept from the moment its event queue filled up: the
/// visible objects and the owner as its queued events leave them.
#[derive(Debug)]
pub(super) struct Shadow {
    objects: HashMap<Arc<str>, Object>,
    owner: Option<Arc<str>>,
    /// Events not queued since.
    missed: u64,
    loaded: bool,
    failed: Option<Box<CallError>>,
}

impl Shadow {
    /// An event the consumer does not get: counted, and the load's outcome kept.
    pub(super) fn miss(&mut self, ev: Event) {
        self.missed += 1;
        match ev {
            Event::Loaded => self.loaded = true,
            Event::LoadFailed(e) => self.failed = Some(e),
            _ => {}
        }
    }

    /// How many events the consumer missed.
    pub(super) fn missed(&self) -> u64 {
        self.missed
    }
}

impl Core {
    /// Called before each batch: once the consumer's queue is full, keep what the consumer
    /// will know after it (the visible objects now, as every applied batch's events are
    /// queued) and queue nothing more until it has caught up (see [`Core::pop_event`]).
    pub(crate) fn begin_batch(&mut self) {
        if self.shadow.is_some() || self.events.len() < self.cfg.max_events {
            return;
        }
        let objects = self
            .store
            .present()
            .filter(|&id| self.store.slot(id).visible)
            .filter_map(|id| {
                let slot = self.store.slot(id);
                Some((slot.path.clone(), slot.obj.clone()?))
            })
            .collect();
        let owner = match &self.owner {
            Owner::Present(o) => Some(o.clone()),
            _ => None,
        };
        self.rep.diag.overruns += 1;
        self.shadow = Some(Shadow {
            objects,
            owner,
            missed: 0,
            loaded: false,
            failed: None,
        });
    }

    pub(super) fn resync(&mut self, shadow: Shadow) {
        let Shadow {
            mut objects,
            owner,
            missed,
            loaded,
            failed,
        } = shadow;
        let mut removed = Vec::new();
        let mut changed = Vec::new();
        let mut added = Vec::new();
        let mut now: Vec<ObjId> = self
            .store
            .present()
            .filter(|&id| self.store.slot(id).visible)
            .collect();
        now.sort_by(|a, b| self.store.slot(*a).path.cmp(&self.store.slot(*b).path));
        for id in now {
            let slot = self.store.slot(id);
            let Some(new) = slot.obj.as_ref() else {
                continue;
            };
            match objects.remove(&slot.path) {
                Some(old) => diff_object(
                    &slot.path,
                    &old,
                    new,
                    &mut removed,
                    &mut changed,
                    &mut added,
                ),
                None => added.push(Event::Added {
                    path: slot.path.clone(),
                }),
            }
        }
        let mut gone: Vec<(Arc<str>, Object)> = objects.into_iter().collect();
        gone.sort_by(|a, b| a.0.cmp(&b.0));
        let mut out: Vec<Event> = gone
            .into_iter()
            .map(|(path, object)| Event::Removed {
                path,
                object: Box::new(object),
            })
            .collect();
        out.append(&mut removed);
        let owner_now = self.owner().map(Arc::<str>::from);
        if owner_now != owner && !matches!(self.owner, Owner::Unknown) {
            out.push(Event::OwnerChanged { owner: owner_now });
        }
        out.append(&mut changed);
        out.append(&mut added);
        let changes = out.len();
        if loaded {
            out.push(Event::Loaded);
        }
        if let Some(error) = failed {
            out.push(Event::LoadFailed(error));
        }
        out.push(Event::Resynced { changes });
        self.rep.trace(format_args!(
            "consumer resynced: {missed} events missed, {changes} changes"
        ));
        self.events.push_back(Event::Overrun { missed });
        self.events.extend(out);
    }
}

/// The events that take a consumer from `old` to `new` (one object at `path`).
fn diff_object(
    path: &Arc<str>,
    old: &Object,
    new: &Object,
    removed: &mut Vec<Event>,
    changed: &mut Vec<Event>,
    added: &mut Vec<Event>,
) {
    for o in old.ifaces.iter() {
        let Some(n) = new.ifaces.iter().find(|n| n.name == o.name) else {
            removed.push(Event::InterfaceRemoved {
                path: path.clone(),
                interface: o.name.clone(),
            });
            continue;
        };
        let mut change = |property: Arc<str>, a: &Value, b: &Value| {
            if a != b {
                changed.push(Event::PropertyChanged {
                    path: path.clone(),
                    interface: n.name.clone(),
                    property,
                    old: a.clone(),
                    new: b.clone(),
                });
            }
        };
        if let Some(decl) = &n.decl {
            for (i, p) in decl.properties.iter().enumerate() {
                let unset = Value::Unset;
                let a = o.slots.get(i).unwrap_or(&unset);
                let b = n.slots.get(i).unwrap_or(&unset);
                change(p.name.clone(), a, b);
            }
        }
        for (name, a) in &o.extra {
            let b = n
                .extra
                .iter()
                .find(|(m, _)| m == name)
                .map_or(&Value::Unset, |(_, b)| b);
            change(name.clone(), a, b);
        }
        for (name, b) in &n.extra {
            if !o.extra.iter().any(|(m, _)| m == name) {
                change(name.clone(), &Value::Unset, b);
            }
        }
    }
    if old.fetched() != new.fetched() {
        changed.push(Event::Refetched {
            path: path.clone(),
            old: old.fetched().cloned(),
            new: new.fetched().cloned(),
        });
    }
    for n in new.ifaces.iter() {
        if !old.ifaces.iter().any(|o| o.name == n.name) {
            added.push(Event::InterfaceAdded {
                path: path.clone(),
                interface: n.name.clone(),
            });
        }
    }
}
