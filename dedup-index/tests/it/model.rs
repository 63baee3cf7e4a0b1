//! Model tests: long random sequences of every operation (insert in every placement, replace,
//! remove, move, cursor removal, mark and sweep of the whole index, one index type or one
//! partition), applied both to a [`DedupIndex`] and to a naive model made of `Vec`s, compared
//! step by step: every return value, and after each step every list, partition, lookup and
//! dirty mark.

use std::collections::HashMap;
use std::sync::Arc;

use netmirror_dedup_index::{
    Change, DedupIndex, Error, IndexHandle, IndexType, Object, Placement, Position,
};
use proptest::prelude::*;

/// The ids are few, so that inserts often hit an existing entry (unchanged or replaced).
const N_IDS: u8 = 16;

#[derive(Debug, Clone, PartialEq, Eq)]
struct Obj {
    id: u8,
    /// Partition in [`ByPart`]; 0 is not tracked.
    part: u8,
    /// Tracked by [`Defaults`].
    def: bool,
    /// Neither id nor partition: only makes objects differ.
    v: u8,
}

impl Object for Obj {
    type Id = u8;

    fn id(&self) -> u8 {
        self.id
    }
}

struct ByPart;

impl IndexType<Obj> for ByPart {
    type Partition = u8;

    fn partition(&self, obj: &Obj) -> Option<u8> {
        (obj.part != 0).then_some(obj.part)
    }

    /// Keys 4 apart share a number, so the model also checks keys told apart behind one.
    fn dense_key(&self, key: &u8) -> Option<usize> {
        Some(usize::from(*key % 4))
    }
}

struct Defaults;

impl IndexType<Obj> for Defaults {
    type Partition = ();

    fn partition(&self, obj: &Obj) -> Option<()> {
        obj.def.then_some(())
    }
}

/// The model's lanes: 0 is the primary list, 1 is `ByPart`, 2 is `Defaults`.
const N_LANES: usize = 3;

fn key(lane: usize, obj: &Obj) -> Option<u8> {
    match lane {
        0 => Some(0),
        1 => (obj.part != 0).then_some(obj.part),
        _ => obj.def.then_some(0),
    }
}

/// The naive model: objects by id, and per lane a list of (key, ids in order) partitions.
#[derive(Debug, Default)]
struct Model {
    objs: HashMap<u8, Obj>,
    dirty: HashMap<u8, bool>,
    lanes: [Vec<(u8, Vec<u8>)>; N_LANES],
}

#[derive(Debug, PartialEq)]
enum Outcome {
    Added(Obj),
    Unchanged(Obj),
    Replaced(Obj, Obj),
}

fn outcome(change: Change<Obj>) -> Outcome {
    match change {
        Change::Added(obj) => Outcome::Added((*obj).clone()),
        Change::Unchanged(obj) => Outcome::Unchanged((*obj).clone()),
        Change::Replaced { old, new } => Outcome::Replaced((*old).clone(), (*new).clone()),
        _ => unreachable!("no other change exists"),
    }
}

impl Model {
    fn list(&mut self, lane: usize, key: u8) -> &mut Vec<u8> {
        let lists = &mut self.lanes[lane];
        let pos = match lists.iter().position(|(k, _)| *k == key) {
            Some(pos) => pos,
            None => {
                lists.push((key, Vec::new()));
                lists.len() - 1
            }
        };
        &mut lists[pos].1
    }

    fn list_of(&self, lane: usize, key: u8) -> Option<&Vec<u8>> {
        self.lanes[lane]
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, list)| list)
    }

    fn unlink(&mut self, lane: usize, key: u8, id: u8) {
        let lists = &mut self.lanes[lane];
        if let Some(pos) = lists.iter().position(|(k, _)| *k == key) {
            lists[pos].1.retain(|&x| x != id);
            if lists[pos].1.is_empty() {
                lists.remove(pos);
            }
        }
    }

    fn place(&mut self, lane: usize, key: u8, id: u8, placement: &Placement<u8>) {
        let list = self.list(lane, key);
        let anchor_pos = |anchor: u8| {
            (anchor != id)
                .then(|| list.iter().position(|&x| x == anchor))
                .flatten()
        };
        match *placement {
            Placement::Prepend | Placement::PrependForce => list.insert(0, id),
            Placement::Before(anchor) => match anchor_pos(anchor) {
                Some(pos) => list.insert(pos, id),
                None => list.push(id),
            },
            Placement::After(anchor) => match anchor_pos(anchor) {
                Some(pos) => list.insert(pos + 1, id),
                None => list.push(id),
            },
            _ => list.push(id),
        }
    }

    fn relink(&mut self, lane: usize, key: u8, id: u8, placement: &Placement<u8>) {
        let list = self.list(lane, key);
        list.retain(|&x| x != id);
        if matches!(placement, Placement::PrependForce) {
            list.insert(0, id);
        } else {
            list.push(id);
        }
    }

    fn insert(&mut self, obj: Obj, placement: Placement<u8>) -> Result<Outcome, Error> {
        if let Placement::Before(anchor) | Placement::After(anchor) = placement
            && !self.objs.contains_key(&anchor)
        {
            return Err(Error::AnchorNotFound);
        }
        let id = obj.id;
        let force = matches!(placement, Placement::AppendForce | Placement::PrependForce);
        self.dirty.insert(id, false);
        let Some(old) = self.objs.get(&id).cloned() else {
            for lane in 0..N_LANES {
                if let Some(k) = key(lane, &obj) {
                    self.place(lane, k, id, &placement);
                }
            }
            self.objs.insert(id, obj.clone());
            return Ok(Outcome::Added(obj));
        };
        if old == obj {
            if force {
                for lane in 0..N_LANES {
                    if let Some(k) = key(lane, &old) {
                        self.relink(lane, k, id, &placement);
                    }
                }
            }
            return Ok(Outcome::Unchanged(old));
        }
        for lane in 0..N_LANES {
            let (old_key, new_key) = (key(lane, &old), key(lane, &obj));
            if old_key.is_some() && old_key == new_key {
                if force {
                    self.relink(lane, old_key.unwrap_or_default(), id, &placement);
                }
                continue;
            }
            if let Some(k) = old_key {
                self.unlink(lane, k, id);
            }
            if let Some(k) = new_key {
                self.place(lane, k, id, &placement);
            }
        }
        self.objs.insert(id, obj.clone());
        Ok(Outcome::Replaced(old, obj))
    }

    fn replace(&mut self, obj: Obj) -> Result<Outcome, Error> {
        if !self.objs.contains_key(&obj.id) {
            return Err(Error::NotFound);
        }
        self.insert(obj, Placement::Append)
    }

    fn remove(&mut self, id: u8) -> Option<Obj> {
        let obj = self.objs.remove(&id)?;
        self.dirty.remove(&id);
        for lane in 0..N_LANES {
            if let Some(k) = key(lane, &obj) {
                self.unlink(lane, k, id);
            }
        }
        Some(obj)
    }

    fn move_entry(&mut self, lane: usize, id: u8, to: Position<u8>) -> Result<(), Error> {
        let obj = self.objs.get(&id).ok_or(Error::NotFound)?;
        let k = key(lane, obj).ok_or(Error::NotTracked)?;
        if let Position::Before(anchor) | Position::After(anchor) = to {
            let anchor_obj = self.objs.get(&anchor).ok_or(Error::AnchorNotFound)?;
            if anchor == id {
                return Ok(());
            }
            if key(lane, anchor_obj) != Some(k) {
                return Err(Error::AnchorNotInPartition);
            }
        }
        let list = self.list(lane, k);
        list.retain(|&x| x != id);
        match to {
            Position::Front => list.insert(0, id),
            Position::Before(anchor) => {
                let pos = list.iter().position(|&x| x == anchor).unwrap_or(list.len());
                list.insert(pos, id);
            }
            Position::After(anchor) => {
                let pos = list
                    .iter()
                    .position(|&x| x == anchor)
                    .map_or(list.len(), |pos| pos + 1);
                list.insert(pos, id);
            }
            _ => list.push(id),
        }
        Ok(())
    }

    fn ids_in(&self, lane: usize) -> Vec<u8> {
        self.lanes[lane]
            .iter()
            .flat_map(|(_, list)| list.iter().copied())
            .collect()
    }

    fn mark(&mut self, ids: Vec<u8>) -> usize {
        for id in &ids {
            self.dirty.insert(*id, true);
        }
        ids.len()
    }

    fn sweep(&mut self, ids: Vec<u8>) -> Vec<Obj> {
        let dirty: Vec<u8> = ids
            .into_iter()
            .filter(|id| self.dirty.get(id) == Some(&true))
            .collect();
        dirty.into_iter().filter_map(|id| self.remove(id)).collect()
    }

    fn primary(&self) -> Vec<u8> {
        self.list_of(0, 0).cloned().unwrap_or_default()
    }
}

#[derive(Debug, Clone)]
enum Op {
    Insert(Obj, Placement<u8>),
    /// `append_all` of these objects: each as an insert with `Placement::Append`.
    AppendAll(Vec<Obj>),
    Replace(Obj),
    Remove(u8),
    Move(usize, u8, Position<u8>),
    /// Walks partition `.0` of `ByPart` with a cursor, removing entries whose `v` is odd.
    CursorRemoveOdd(u8),
    MarkAll,
    UnmarkAll,
    MarkIndex(usize),
    MarkPartition(u8),
    Sweep,
    SweepIndex(usize),
    SweepPartition(u8),
}

fn obj() -> impl Strategy<Value = Obj> {
    (0..N_IDS, 0..4u8, any::<bool>(), 0..3u8).prop_map(|(id, part, def, v)| Obj {
        id,
        part,
        def,
        v,
    })
}

fn placement() -> impl Strategy<Value = Placement<u8>> {
    prop_oneof![
        Just(Placement::Append),
        Just(Placement::AppendForce),
        Just(Placement::Prepend),
        Just(Placement::PrependForce),
        (0..N_IDS + 1).prop_map(Placement::Before),
        (0..N_IDS + 1).prop_map(Placement::After),
    ]
}

fn position() -> impl Strategy<Value = Position<u8>> {
    prop_oneof![
        Just(Position::Front),
        Just(Position::Back),
        (0..N_IDS + 1).prop_map(Position::Before),
        (0..N_IDS + 1).prop_map(Position::After),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => (obj(), placement()).prop_map(|(obj, placement)| Op::Insert(obj, placement)),
        2 => proptest::collection::vec(obj(), 0..6).prop_map(Op::AppendAll),
        2 => obj().prop_map(Op::Replace),
        3 => (0..N_IDS + 1).prop_map(Op::Remove),
        3 => (0..N_LANES, 0..N_IDS, position()).prop_map(|(lane, id, to)| Op::Move(lane, id, to)),
        1 => (0..4u8).prop_map(Op::CursorRemoveOdd),
        1 => Just(Op::MarkAll),
        1 => Just(Op::UnmarkAll),
        1 => (0..N_LANES).prop_map(Op::MarkIndex),
        1 => (0..4u8).prop_map(Op::MarkPartition),
        1 => Just(Op::Sweep),
        1 => (0..N_LANES).prop_map(Op::SweepIndex),
        1 => (0..4u8).prop_map(Op::SweepPartition),
    ]
}

struct Real {
    index: DedupIndex<Obj>,
    by_part: IndexHandle<ByPart>,
    defaults: IndexHandle<Defaults>,
}

fn unwrap_objs(objs: Vec<Arc<Obj>>) -> Vec<Obj> {
    objs.into_iter().map(|obj| (*obj).clone()).collect()
}

fn sorted(mut objs: Vec<Obj>) -> Vec<Obj> {
    objs.sort_by_key(|obj| obj.id);
    objs
}

impl Real {
    fn new() -> Self {
        let mut index = DedupIndex::new();
        let by_part = index.add_index(ByPart);
        let defaults = index.add_index(Defaults);
        Self {
            index,
            by_part,
            defaults,
        }
    }

    /// Runs `op` on the index and the model and compares what they return.
    fn apply(&mut self, model: &mut Model, op: Op) -> Result<(), TestCaseError> {
        let index = &mut self.index;
        match op {
            Op::Insert(obj, placement) => {
                let real = index.insert(obj.clone(), placement).map(outcome);
                prop_assert_eq!(real, model.insert(obj, placement));
            }
            Op::AppendAll(objs) => {
                let real = index.append_all(objs.iter().cloned());
                let mut n_changed = 0;
                for obj in objs {
                    if let Ok(Outcome::Added(_) | Outcome::Replaced(..)) =
                        model.insert(obj, Placement::Append)
                    {
                        n_changed += 1;
                    }
                }
                prop_assert_eq!(real, Ok(n_changed));
            }
            Op::Replace(obj) => {
                let real = index.replace(obj.clone()).map(outcome);
                prop_assert_eq!(real, model.replace(obj));
            }
            Op::Remove(id) => {
                let real = index.remove(&id).map(|obj| (*obj).clone());
                prop_assert_eq!(real, model.remove(id));
            }
            Op::Move(lane, id, to) => {
                let real = match lane {
                    0 => index.move_entry(index.primary(), &id, to),
                    1 => index.move_entry(self.by_part, &id, to),
                    _ => index.move_entry(self.defaults, &id, to),
                };
                prop_assert_eq!(real, model.move_entry(lane, id, to));
            }
            Op::CursorRemoveOdd(part) => {
                let mut removed = Vec::new();
                if let Some(mut cursor) = index.cursor_mut(self.by_part, &part) {
                    while let Some(entry) = cursor.current() {
                        if entry.obj().v % 2 == 1 {
                            removed.extend(cursor.remove_current().map(|obj| (*obj).clone()));
                        } else {
                            cursor.move_next();
                        }
                    }
                }
                let list = model.list_of(1, part).cloned().unwrap_or_default();
                let odd: Vec<u8> = list
                    .into_iter()
                    .filter(|id| model.objs[id].v % 2 == 1)
                    .collect();
                let expected: Vec<Obj> =
                    odd.into_iter().filter_map(|id| model.remove(id)).collect();
                prop_assert_eq!(removed, expected);
            }
            Op::MarkAll => {
                index.mark_all();
                let ids = model.objs.keys().copied().collect();
                model.mark(ids);
            }
            Op::UnmarkAll => {
                index.unmark_all();
                model.dirty.values_mut().for_each(|dirty| *dirty = false);
            }
            Op::MarkIndex(lane) => {
                let real = match lane {
                    0 => index.mark_index(index.primary()),
                    1 => index.mark_index(self.by_part),
                    _ => index.mark_index(self.defaults),
                };
                prop_assert_eq!(real, Ok(model.mark(model.ids_in(lane))));
            }
            Op::MarkPartition(part) => {
                let real = index.mark_partition(self.by_part, &part);
                let ids = model.list_of(1, part).cloned().unwrap_or_default();
                prop_assert_eq!(real, Ok(model.mark(ids)));
            }
            Op::Sweep => {
                let real = unwrap_objs(index.sweep());
                prop_assert_eq!(real, model.sweep(model.primary()));
            }
            Op::SweepIndex(lane) => {
                let real = match lane {
                    0 => index.sweep_index(index.primary()),
                    1 => index.sweep_index(self.by_part),
                    _ => index.sweep_index(self.defaults),
                };
                let real = sorted(unwrap_objs(
                    real.map_err(|err| TestCaseError::fail(err.to_string()))?,
                ));
                prop_assert_eq!(real, sorted(model.sweep(model.ids_in(lane))));
            }
            Op::SweepPartition(part) => {
                let real = index.sweep_partition(self.by_part, &part).map(unwrap_objs);
                let ids = model.list_of(1, part).cloned().unwrap_or_default();
                prop_assert_eq!(real, Ok(model.sweep(ids)));
            }
        }
        Ok(())
    }

    /// Compares everything observable with the model.
    fn compare(&self, model: &Model) -> Result<(), TestCaseError> {
        let index = &self.index;
        let ids =
            |objs: &mut dyn Iterator<Item = &Arc<Obj>>| objs.map(|obj| obj.id).collect::<Vec<_>>();
        prop_assert_eq!(index.len(), model.objs.len());
        prop_assert_eq!(index.is_empty(), model.objs.is_empty());
        let primary = model.primary();
        prop_assert_eq!(ids(&mut index.iter()), primary.clone());
        let mut backwards = primary.clone();
        backwards.reverse();
        prop_assert_eq!(ids(&mut index.iter().rev()), backwards);
        let dirty: Vec<bool> = primary.iter().map(|id| model.dirty[id]).collect();
        prop_assert_eq!(
            index
                .entries()
                .map(|entry| entry.is_dirty())
                .collect::<Vec<_>>(),
            dirty
        );

        let mut real_parts: Vec<(u8, Vec<u8>)> = index
            .partitions(self.by_part)
            .map(|part| {
                assert_eq!(part.len(), part.iter().len());
                (*part.key(), ids(&mut part.iter()))
            })
            .collect();
        real_parts.sort();
        let mut model_parts = model.lanes[1].clone();
        model_parts.sort();
        prop_assert_eq!(real_parts, model_parts);
        let defaults = index
            .partition(self.defaults, &())
            .map(|part| ids(&mut part.iter()));
        prop_assert_eq!(defaults, model.list_of(2, 0).cloned());
        prop_assert_eq!(
            index.partitions(self.defaults).count(),
            model.lanes[2].len()
        );

        for id in 0..=N_IDS {
            let obj = model.objs.get(&id);
            prop_assert_eq!(index.get(&id).map(|obj| &**obj), obj);
            prop_assert_eq!(index.contains(&id), obj.is_some());
            prop_assert_eq!(index.is_dirty(&id), model.dirty.get(&id).copied());
            let tracked = obj.and_then(|obj| key(1, obj));
            prop_assert_eq!(index.get_in(self.by_part, &id).is_some(), tracked.is_some());
            prop_assert_eq!(
                index
                    .partition_of(self.by_part, &id)
                    .map(|part| *part.key()),
                tracked
            );
            let tracked = obj.and_then(|obj| key(2, obj));
            prop_assert_eq!(
                index.get_in(self.defaults, &id).is_some(),
                tracked.is_some()
            );
            if let Some(obj) = obj {
                prop_assert!(index.find_equal(obj).is_some());
            }
        }
        Ok(())
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn index_matches_the_model(ops in proptest::collection::vec(op(), 1..400)) {
        let mut real = Real::new();
        let mut model = Model::default();
        for op in ops {
            real.apply(&mut model, op)?;
            real.compare(&model)?;
        }
    }
}
