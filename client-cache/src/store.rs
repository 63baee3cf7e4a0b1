//! The object store: paths to slots, reverse reference index, and readiness.
//!
//! Every path the cache has seen, as an object or as the target of a reference, has a slot; a
//! slot without an object is a placeholder that its referrers wait on. References are kept in
//! both directions (`refs_out` per object, a counted `refs_in` per slot), so that when an object
//! appears or goes away only the objects that (transitively) reference it are looked at again:
//! no rescans of the whole cache.

use std::sync::Arc;

use hashbrown::HashMap;

use crate::object::Object;

/// Index of a slot.
pub(crate) type ObjId = u32;

/// Up to this many referrers are kept inline; beyond, in a hash map.
const INLINE_REFERRERS: usize = 8;

/// The referrers of a slot, with counts: inline for the usual handful (no allocation for one or
/// two), a hash map for hubs, so that adding or dropping a referrer stays O(1) either way.
#[derive(Debug, Default)]
pub(crate) enum RefsIn {
    #[default]
    None,
    Few(smallvec::SmallVec<[(ObjId, u32); 2]>),
    Many(HashMap<ObjId, u32>),
}

impl RefsIn {
    pub(crate) fn is_empty(&self) -> bool {
        match self {
            Self::None => true,
            Self::Few(v) => v.is_empty(),
            Self::Many(m) => m.is_empty(),
        }
    }

    #[cfg(test)]
    pub(crate) fn count(&self, id: ObjId) -> Option<u32> {
        match self {
            Self::None => None,
            Self::Few(v) => v.iter().find(|(r, _)| *r == id).map(|(_, n)| *n),
            Self::Many(m) => m.get(&id).copied(),
        }
    }

    fn add(&mut self, id: ObjId) {
        match self {
            Self::None => *self = Self::Few(smallvec::smallvec![(id, 1)]),
            Self::Few(v) => match v.iter().position(|(r, _)| *r == id) {
                Some(i) => v[i].1 += 1,
                None if v.len() < INLINE_REFERRERS => v.push((id, 1)),
                None => {
                    let mut m: HashMap<ObjId, u32> = v.drain(..).collect();
                    m.insert(id, 1);
                    *self = Self::Many(m);
                }
            },
            Self::Many(m) => *m.entry(id).or_insert(0) += 1,
        }
    }

    fn remove(&mut self, id: ObjId) {
        match self {
            Self::None => {}
            Self::Few(v) => {
                if let Some(i) = v.iter().position(|(r, _)| *r == id) {
                    v[i].1 -= 1;
                    if v[i].1 == 0 {
                        v.swap_remove(i);
                    }
                }
            }
            Self::Many(m) => {
                if let Some(n) = m.get_mut(&id) {
                    *n -= 1;
                    if *n == 0 {
                        m.remove(&id);
                    }
                }
            }
        }
    }

    /// The referrers (each once).
    pub(crate) fn ids(&self) -> impl Iterator<Item = ObjId> + '_ {
        let (few, many) = match self {
            Self::None => (&[][..], None),
            Self::Few(v) => (&v[..], None),
            Self::Many(m) => (&[][..], Some(m.keys())),
        };
        few.iter()
            .map(|(r, _)| *r)
            .chain(many.into_iter().flatten().copied())
    }
}

#[derive(Debug, Default)]
pub(crate) struct Slot {
    pub(crate) path: Arc<str>,
    pub(crate) obj: Option<Object>,
    /// Targets of this object's references (a multiset, in property order).
    pub(crate) refs_out: Vec<ObjId>,
    /// Objects that reference this slot, with how many times.
    pub(crate) refs_in: RefsIn,
    /// All references resolve, transitively, and any fetch is settled.
    pub(crate) ready: bool,
    /// The user has been told about this object (an `Added` without a `Removed` since).
    pub(crate) visible: bool,
    /// The slot held an object that the service removed, and stays as a placeholder while
    /// something still references it: a target that went away before its referrers caught
    /// up, not a reference to an object that never was (no `DanglingReference` for it).
    pub(crate) gone: bool,
    mark: u32,
}

#[derive(Debug, Default)]
pub(crate) struct Store {
    ids: HashMap<Arc<str>, ObjId>,
    pub(crate) slots: Vec<Slot>,
    free: Vec<ObjId>,
    epoch: u32,
    /// Slots whose object or references changed since the last readiness update.
    touched: Vec<ObjId>,
    touch_epoch: u32,
    /// Placeholders that may be unreferenced now.
    maybe_free: Vec<ObjId>,
    /// Whether references are resolved (off when only part of the service is loaded).
    pub(crate) resolve: bool,
}

impl Store {
    pub(crate) fn id(&self, path: &str) -> Option<ObjId> {
        self.ids.get(path).copied()
    }

    pub(crate) fn slot(&self, id: ObjId) -> &Slot {
        &self.slots[id as usize]
    }

    pub(crate) fn slot_mut(&mut self, id: ObjId) -> &mut Slot {
        &mut self.slots[id as usize]
    }

    pub(crate) fn len_present(&self) -> usize {
        self.slots.iter().filter(|s| s.obj.is_some()).count()
    }

    /// The slot for `path`, created as a placeholder if new.
    pub(crate) fn ensure(&mut self, path: &str) -> ObjId {
        if let Some(&id) = self.ids.get(path) {
            return id;
        }
        let path: Arc<str> = path.into();
        let slot = Slot {
            path: path.clone(),
            ..Slot::default()
        };
        let id = match self.free.pop() {
            Some(id) => {
                self.slots[id as usize] = slot;
                id
            }
            None => {
                self.slots.push(slot);
                (self.slots.len() - 1) as ObjId
            }
        };
        self.ids.insert(path, id);
        id
    }

    pub(crate) fn touch(&mut self, id: ObjId) {
        let epoch = self.touch_epoch;
        let slot = &mut self.slots[id as usize];
        if slot.mark != epoch.wrapping_add(1) {
            // `mark` doubles as the touched flag between updates: touch_epoch + 1 = touched.
            slot.mark = epoch.wrapping_add(1);
            self.touched.push(id);
        }
    }

    /// Put `obj` into slot `id` (replacing what was there) and update its references.
    pub(crate) fn set_object(&mut self, id: ObjId, obj: Object) -> Option<Object> {
        let old = self.slots[id as usize].obj.replace(obj);
        self.slots[id as usize].gone = false;
        self.update_refs(id);
        self.touch(id);
        old
    }

    /// Take the object out of slot `id`, leaving a placeholder (or nothing, once unreferenced).
    pub(crate) fn take_object(&mut self, id: ObjId) -> Option<Object> {
        let old = self.slots[id as usize].obj.take();
        if old.is_some() {
            self.slots[id as usize].gone = true;
            self.update_refs(id);
            self.touch(id);
            self.maybe_free.push(id);
        }
        old
    }

    /// Recompute slot `id`'s outgoing references from its object's reference properties.
    pub(crate) fn update_refs(&mut self, id: ObjId) {
        let mut new: Vec<ObjId> = Vec::new();
        if !self.resolve {
            return;
        }
        if let Some(obj) = self.slots[id as usize].obj.take() {
            for path in obj.referenced_paths() {
                new.push(self.ensure(path));
            }
            self.slots[id as usize].obj = Some(obj);
        }
        let old = std::mem::take(&mut self.slots[id as usize].refs_out);
        if old == new {
            self.slots[id as usize].refs_out = old;
            return;
        }
        for &t in &old {
            self.slots[t as usize].refs_in.remove(id);
            self.maybe_free.push(t);
        }
        for &t in &new {
            self.slots[t as usize].refs_in.add(id);
        }
        self.slots[id as usize].refs_out = new;
        self.touch(id);
    }

    /// Recompute readiness of everything touched and of everything that (transitively)
    /// references it. Returns the region, in a stable order (touched first), and how many of
    /// it were touched.
    ///
    /// Ready is the greatest fixpoint of: present, fetch settled, and every target present and
    /// ready. Within the region every present object starts ready; those with a missing or
    /// unready target are knocked out and the knock-out spreads back along `refs_in`. Cycles of
    /// present objects therefore stay ready, and the cost is linear in the region's edges.
    pub(crate) fn update_readiness(&mut self) -> (Vec<ObjId>, usize) {
        self.epoch = self.epoch.wrapping_add(2);
        let touched = std::mem::take(&mut self.touched);
        self.touch_epoch = self.epoch;
        let in_region = self.epoch;
        let mut region = Vec::with_capacity(touched.len());
        for id in touched {
            let slot = &mut self.slots[id as usize];
            if slot.mark != in_region {
                slot.mark = in_region;
                region.push(id);
            }
        }
        let n_touched = region.len();
        let mut referrers: Vec<ObjId> = Vec::new();
        let mut i = 0;
        while i < region.len() {
            let id = region[i];
            i += 1;
            referrers.clear();
            referrers.extend(self.slots[id as usize].refs_in.ids());
            for &r in &referrers {
                let slot = &mut self.slots[r as usize];
                if slot.mark != in_region {
                    slot.mark = in_region;
                    region.push(r);
                }
            }
        }
        let mut knocked = Vec::new();
        for &id in &region {
            let slot = &mut self.slots[id as usize];
            slot.ready = slot.obj.as_ref().is_some_and(Object::fetch_settled);
        }
        for &id in &region {
            if !self.slots[id as usize].ready {
                knocked.push(id);
                continue;
            }
            let blocked = self.slots[id as usize].refs_out.iter().any(|&t| {
                let target = &self.slots[t as usize];
                target.obj.is_none() || (target.mark != in_region && !target.ready)
            });
            if blocked {
                self.slots[id as usize].ready = false;
                knocked.push(id);
            }
        }
        while let Some(id) = knocked.pop() {
            referrers.clear();
            referrers.extend(self.slots[id as usize].refs_in.ids());
            for &r in &referrers {
                let slot = &mut self.slots[r as usize];
                if slot.mark == in_region && slot.ready {
                    slot.ready = false;
                    knocked.push(r);
                }
            }
        }
        (region, n_touched)
    }

    /// Drop placeholders nobody references any more.
    pub(crate) fn collect(&mut self) {
        for id in std::mem::take(&mut self.maybe_free) {
            let slot = &self.slots[id as usize];
            if slot.obj.is_none() && slot.refs_in.is_empty() && !slot.path.is_empty() {
                self.ids.remove(&slot.path);
                self.slots[id as usize] = Slot {
                    mark: self.slots[id as usize].mark,
                    ..Slot::default()
                };
                self.free.push(id);
            }
        }
    }

    /// Every present object's id, in slot order.
    pub(crate) fn present(&self) -> impl Iterator<Item = ObjId> + '_ {
        self.slots
            .iter()
            .enumerate()
            .filter(|(_, s)| s.obj.is_some())
            .map(|(i, _)| i as ObjId)
    }
}

#[cfg(test)]
mod tests;
