//! Unit tests of the dedup index: every operation and the edges the issue lists, each checked
//! against a rendering of all lists and against the internal invariants.

use std::sync::Arc;

use expect_test::{Expect, expect};

use crate::{Change, DedupIndex, Error, IndexHandle, IndexType, Object, Placement, Position};

/// A small route-like object: `id` is its identity, `part` its partition in [`ByPart`] (0 is
/// not tracked), `def` whether [`Defaults`] tracks it, `v` a field that is neither.
#[derive(Debug, Clone, PartialEq, Eq)]
struct R {
    id: u32,
    part: u32,
    def: bool,
    v: u32,
}

fn r(id: u32, part: u32) -> R {
    R {
        id,
        part,
        def: false,
        v: 0,
    }
}

fn d(id: u32, part: u32) -> R {
    R {
        id,
        part,
        def: true,
        v: 0,
    }
}

impl Object for R {
    type Id = u32;

    fn id(&self) -> u32 {
        self.id
    }
}

struct ByPart;

impl IndexType<R> for ByPart {
    type Partition = u32;

    fn partition(&self, obj: &R) -> Option<u32> {
        (obj.part != 0).then_some(obj.part)
    }

    /// Shared by keys 8 apart (1 and 9, ...) and none past [`crate::DENSE_KEYS`]: the index
    /// must tell keys apart behind a number and fall back to hashing.
    fn dense_key(&self, key: &u32) -> Option<usize> {
        Some(if *key >= 1000 {
            crate::DENSE_KEYS + *key as usize
        } else {
            (*key % 8) as usize
        })
    }
}

struct Defaults;

impl IndexType<R> for Defaults {
    type Partition = ();

    fn partition(&self, obj: &R) -> Option<()> {
        obj.def.then_some(())
    }
}

struct Fixture {
    index: DedupIndex<R>,
    by_part: IndexHandle<ByPart>,
    defaults: IndexHandle<Defaults>,
}

impl Fixture {
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

    /// A fixture holding `objs`, appended in order.
    fn with(objs: &[R]) -> Self {
        let mut fx = Self::new();
        for obj in objs {
            fx.add(obj.clone(), Placement::Append);
        }
        fx
    }

    fn add(&mut self, obj: R, placement: Placement<u32>) -> Change<R> {
        self.index.insert(obj, placement).unwrap()
    }
}

fn ids<'a>(objs: impl Iterator<Item = &'a Arc<R>>) -> Vec<u32> {
    objs.map(|obj| obj.id).collect()
}

/// Renders every list: the primary one, each partition of `ByPart` by key, and `Defaults`.
/// A `*` marks a dirty entry, `'` an entry whose `v` is not 0.
fn render(fx: &Fixture) -> String {
    let index = &fx.index;
    let show = |entries: crate::Entries<'_, R>| {
        entries
            .map(|entry| {
                let obj = entry.obj();
                format!(
                    "{}{}{}",
                    obj.id,
                    if obj.v != 0 { "'" } else { "" },
                    if entry.is_dirty() { "*" } else { "" }
                )
            })
            .collect::<Vec<_>>()
            .join(" ")
    };
    let mut out = format!("all: {}\n", show(index.entries()));
    let mut parts: Vec<_> = index.partitions(fx.by_part).collect();
    parts.sort_by_key(|part| *part.key());
    for part in parts {
        assert_eq!(part.len(), part.iter().count());
        out += &format!("part {}: {}\n", part.key(), show(part.entries()));
    }
    if let Some(defaults) = index.partition(fx.defaults, &()) {
        out += &format!("defaults: {}\n", show(defaults.entries()));
    }
    out
}

#[track_caller]
fn check(fx: &Fixture, expect: Expect) {
    fx.index.validate().unwrap();
    expect.assert_eq(&render(fx));
}

#[test]
fn append_and_prepend() {
    let mut fx = Fixture::new();
    fx.add(r(1, 1), Placement::Append);
    fx.add(d(2, 2), Placement::Append);
    fx.add(r(3, 1), Placement::Prepend);
    fx.add(d(4, 0), Placement::PrependForce);
    fx.add(r(5, 1), Placement::AppendForce);
    check(
        &fx,
        expect![[r#"
            all: 4 3 1 2 5
            part 1: 3 1 5
            part 2: 2
            defaults: 4 2
        "#]],
    );
    assert_eq!(fx.index.len(), 5);
}

#[test]
fn re_adding_without_force_keeps_position() {
    let mut fx = Fixture::with(&[r(1, 1), r(2, 1), r(3, 1)]);
    let change = fx.add(r(1, 1), Placement::Append);
    assert!(matches!(change, Change::Unchanged(_)));
    fx.add(r(3, 1), Placement::Prepend);
    check(
        &fx,
        expect![[r#"
            all: 1 2 3
            part 1: 1 2 3
        "#]],
    );
}

#[test]
fn force_moves_existing_entries_in_every_list() {
    let mut fx = Fixture::with(&[d(1, 1), d(2, 1), d(3, 2)]);
    fx.add(d(1, 1), Placement::AppendForce);
    check(
        &fx,
        expect![[r#"
            all: 2 3 1
            part 1: 2 1
            part 2: 3
            defaults: 2 3 1
        "#]],
    );
    fx.add(d(3, 2), Placement::PrependForce);
    check(
        &fx,
        expect![[r#"
            all: 3 2 1
            part 1: 2 1
            part 2: 3
            defaults: 3 2 1
        "#]],
    );
}

#[test]
fn insert_before_and_after_an_anchor() {
    let mut fx = Fixture::with(&[r(1, 1), r(2, 2), r(3, 1)]);
    // Same partition as the anchor in `ByPart`: placed next to it; the primary list too.
    fx.add(r(4, 1), Placement::Before(3));
    fx.add(r(5, 1), Placement::After(1));
    // Another partition than the anchor's: appended there, placed in the primary list.
    fx.add(r(6, 2), Placement::Before(1));
    check(
        &fx,
        expect![[r#"
            all: 6 1 5 2 4 3
            part 1: 1 5 4 3
            part 2: 2 6
        "#]],
    );
    // An existing entry stays where it is.
    fx.add(r(6, 2), Placement::After(3));
    assert_eq!(ids(fx.index.iter()), [6, 1, 5, 2, 4, 3]);
}

#[test]
fn insert_with_missing_anchor_changes_nothing() {
    let mut fx = Fixture::with(&[r(1, 1)]);
    assert_eq!(
        fx.index.insert(r(2, 1), Placement::Before(9)),
        Err(Error::AnchorNotFound)
    );
    assert_eq!(
        fx.index.insert(r(2, 1), Placement::After(9)),
        Err(Error::AnchorNotFound)
    );
    check(
        &fx,
        expect![[r#"
            all: 1
            part 1: 1
        "#]],
    );
}

#[test]
fn replace_keeps_position_and_returns_old() {
    let mut fx = Fixture::with(&[r(1, 1), r(2, 1), r(3, 1)]);
    let change = fx.index.replace(R { v: 7, ..r(2, 1) }).unwrap();
    let Change::Replaced { old, new } = change else {
        panic!("not a replace: {change:?}");
    };
    assert_eq!((old.v, new.v), (0, 7));
    check(
        &fx,
        expect![[r#"
            all: 1 2' 3
            part 1: 1 2' 3
        "#]],
    );
    assert!(Arc::ptr_eq(fx.index.get(&2).unwrap(), &new));
}

#[test]
fn replace_with_an_equal_object_keeps_the_held_one() {
    let mut fx = Fixture::with(&[r(1, 1)]);
    let held = Arc::clone(fx.index.get(&1).unwrap());
    let change = fx.index.replace(r(1, 1)).unwrap();
    assert!(matches!(&change, Change::Unchanged(obj) if Arc::ptr_eq(obj, &held)));
    assert!(!change.is_changed());
    assert_eq!(change.old(), None);
    // The caller's copy was dropped: only the index and `held` own the object.
    assert_eq!(Arc::strong_count(&held), 3);
    drop(change);
    assert_eq!(Arc::strong_count(&held), 2);
}

#[test]
fn replace_of_a_missing_id_adds_nothing() {
    let mut fx = Fixture::with(&[r(1, 1)]);
    assert_eq!(fx.index.replace(r(2, 1)), Err(Error::NotFound));
    assert_eq!(fx.index.len(), 1);
}

#[test]
fn replace_moving_to_another_partition() {
    let mut fx = Fixture::with(&[r(1, 1), d(2, 1), r(3, 2), r(4, 1)]);
    // Partition 1 to 2: appended to partition 2, and leaves `Defaults`.
    fx.add(r(2, 2), Placement::Append);
    check(
        &fx,
        expect![[r#"
            all: 1 2 3 4
            part 1: 1 4
            part 2: 3 2
        "#]],
    );
    // A prepending replace puts it at the front of its new lists.
    fx.add(d(1, 2), Placement::Prepend);
    // Leaving `ByPart` (partition 0 is not tracked).
    fx.add(r(4, 0), Placement::Append);
    check(
        &fx,
        expect![[r#"
            all: 1 2 3 4
            part 2: 1 3 2
            defaults: 1
        "#]],
    );
    // Before an anchor that is in the new partition.
    fx.add(r(4, 2), Placement::Before(3));
    check(
        &fx,
        expect![[r#"
            all: 1 2 3 4
            part 2: 1 4 3 2
            defaults: 1
        "#]],
    );
}

#[test]
fn remove_entries_and_the_last_of_a_partition() {
    let mut fx = Fixture::with(&[r(1, 1), d(2, 2), r(3, 1)]);
    assert_eq!(fx.index.remove(&2).map(|obj| obj.id), Some(2));
    assert_eq!(fx.index.remove(&2), None);
    check(
        &fx,
        expect![[r#"
            all: 1 3
            part 1: 1 3
        "#]],
    );
    assert!(fx.index.partition(fx.by_part, &2).is_none());
    assert!(fx.index.partition(fx.defaults, &()).is_none());
    fx.index.remove(&1);
    fx.index.remove(&3);
    check(
        &fx,
        expect![[r#"
        all: 
    "#]],
    );
    assert!(fx.index.is_empty());
    assert_eq!(fx.index.partitions(fx.by_part).count(), 0);
    assert_eq!(fx.index.first(), None);
}

#[test]
fn removed_slots_are_reused() {
    let mut fx = Fixture::with(&[r(1, 1), r(2, 1), r(3, 1)]);
    fx.index.remove(&2);
    fx.index.remove(&1);
    fx.add(r(4, 1), Placement::Append);
    fx.add(r(5, 1), Placement::Prepend);
    fx.add(r(6, 1), Placement::Append);
    assert_eq!(fx.index.objs.len(), 4);
    check(
        &fx,
        expect![[r#"
            all: 5 3 4 6
            part 1: 5 3 4 6
        "#]],
    );
}

#[test]
fn move_within_a_list() {
    let mut fx = Fixture::with(&[r(1, 1), r(2, 1), r(3, 1), r(4, 1)]);
    let by_part = fx.by_part;
    fx.index.move_entry(by_part, &1, Position::Back).unwrap();
    fx.index.move_entry(by_part, &3, Position::Front).unwrap();
    check(
        &fx,
        expect![[r#"
            all: 1 2 3 4
            part 1: 3 2 4 1
        "#]],
    );
    fx.index
        .move_entry(by_part, &1, Position::Before(2))
        .unwrap();
    fx.index
        .move_entry(by_part, &3, Position::After(4))
        .unwrap();
    fx.index
        .move_entry(by_part, &4, Position::After(4))
        .unwrap();
    check(
        &fx,
        expect![[r#"
            all: 1 2 3 4
            part 1: 1 2 4 3
        "#]],
    );
    let primary = fx.index.primary();
    fx.index.move_entry(primary, &4, Position::Front).unwrap();
    fx.index
        .move_entry(primary, &1, Position::After(3))
        .unwrap();
    check(
        &fx,
        expect![[r#"
            all: 4 2 3 1
            part 1: 1 2 4 3
        "#]],
    );
}

#[test]
fn move_errors_change_nothing() {
    let mut fx = Fixture::with(&[r(1, 1), r(2, 2), r(3, 0)]);
    let by_part = fx.by_part;
    assert_eq!(
        fx.index.move_entry(by_part, &9, Position::Front),
        Err(Error::NotFound)
    );
    assert_eq!(
        fx.index.move_entry(by_part, &3, Position::Front),
        Err(Error::NotTracked)
    );
    assert_eq!(
        fx.index.move_entry(by_part, &1, Position::Before(9)),
        Err(Error::AnchorNotFound)
    );
    assert_eq!(
        fx.index.move_entry(by_part, &1, Position::After(2)),
        Err(Error::AnchorNotInPartition)
    );
    let other = Fixture::new();
    assert_eq!(
        fx.index.move_entry(other.by_part, &1, Position::Front),
        Err(Error::UnknownIndex)
    );
    check(
        &fx,
        expect![[r#"
            all: 1 2 3
            part 1: 1
            part 2: 2
        "#]],
    );
}

#[test]
fn lookups_by_id_in_any_index() {
    let fx = Fixture::with(&[r(1, 1), d(2, 0)]);
    let index = &fx.index;
    assert!(index.contains(&1));
    assert!(!index.contains(&3));
    assert_eq!(index.get(&2).map(|obj| obj.part), Some(0));
    assert!(index.get_in(fx.by_part, &1).is_some());
    assert!(index.get_in(fx.by_part, &2).is_none());
    assert!(index.get_in(fx.defaults, &2).is_some());
    assert!(index.get_in(index.primary(), &2).is_some());
    assert_eq!(
        index.partition_of(fx.by_part, &1).map(|p| *p.key()),
        Some(1)
    );
    assert!(index.partition_of(fx.by_part, &2).is_none());
    assert_eq!(
        index.get_entry(&1).map(|entry| entry.is_dirty()),
        Some(false)
    );
    assert!(index.index_type(fx.by_part).is_some());
    // Handles of another index find nothing.
    let other = Fixture::with(&[r(1, 1)]);
    assert!(index.get_in(other.by_part, &1).is_none());
    assert!(index.partition(other.by_part, &1).is_none());
    assert_eq!(index.partitions(other.by_part).count(), 0);
}

#[test]
fn iteration_in_both_directions() {
    let fx = Fixture::with(&[r(1, 1), r(2, 2), r(3, 1), r(4, 1)]);
    let iter = fx.index.iter();
    assert_eq!(iter.len(), 4);
    assert_eq!(ids(iter.rev()), [4, 3, 2, 1]);
    let part = fx.index.partition(fx.by_part, &1).unwrap();
    assert_eq!(ids(part.iter().rev()), [4, 3, 1]);
    let mut both = part.iter();
    assert_eq!(both.next().map(|obj| obj.id), Some(1));
    assert_eq!(both.next_back().map(|obj| obj.id), Some(4));
    assert_eq!(ids(both), [3]);
    assert_eq!((part.first().unwrap().id, part.last().unwrap().id), (1, 4));
    assert_eq!(fx.index.last().map(|obj| obj.id), Some(4));
}

#[test]
fn cursor_removes_while_iterating() {
    let mut fx = Fixture::with(&[r(1, 1), r(2, 2), r(3, 1), r(4, 1), r(5, 2), r(6, 1)]);
    let mut cursor = fx.index.cursor_mut(fx.by_part, &1).unwrap();
    let mut removed = Vec::new();
    while let Some(entry) = cursor.current() {
        if entry.obj().id != 3 {
            removed.extend(cursor.remove_current().map(|obj| obj.id));
        } else {
            cursor.move_next();
        }
    }
    assert_eq!(cursor.remove_current(), None);
    assert_eq!(removed, [1, 4, 6]);
    check(
        &fx,
        expect![[r#"
            all: 2 3 5
            part 1: 3
            part 2: 2 5
        "#]],
    );
    // Removing everything, the last entry of its partition included.
    let mut cursor = fx.index.cursor_front_mut();
    while cursor.remove_current().is_some() {}
    check(
        &fx,
        expect![[r#"
        all: 
    "#]],
    );
    assert!(fx.index.cursor_mut(fx.by_part, &1).is_none());
}

#[test]
fn mark_all_then_re_add_keeps_position_and_sweep_returns_the_rest() {
    let mut fx = Fixture::with(&[r(1, 1), r(2, 2), r(3, 1), r(4, 2)]);
    fx.index.mark_all();
    fx.add(r(3, 1), Placement::Append);
    fx.add(R { v: 1, ..r(1, 1) }, Placement::Append);
    check(
        &fx,
        expect![[r#"
            all: 1' 2* 3 4*
            part 1: 1' 3
            part 2: 2* 4*
        "#]],
    );
    assert_eq!(ids(fx.index.sweep().iter()), [2, 4]);
    assert!(fx.index.sweep().is_empty());
    check(
        &fx,
        expect![[r#"
            all: 1' 3
            part 1: 1' 3
        "#]],
    );
}

#[test]
fn new_entries_are_clean_even_in_reused_slots() {
    let mut fx = Fixture::with(&[r(1, 1), r(2, 1)]);
    fx.index.mark_all();
    fx.index.remove(&1);
    fx.add(r(3, 1), Placement::Append);
    assert_eq!(fx.index.is_dirty(&3), Some(false));
    assert_eq!(fx.index.is_dirty(&2), Some(true));
    assert_eq!(fx.index.is_dirty(&1), None);
    fx.index.unmark_all();
    assert_eq!(fx.index.is_dirty(&2), Some(false));
}

#[test]
fn mark_and_sweep_one_partition() {
    let mut fx = Fixture::with(&[r(1, 1), r(2, 2), r(3, 1), r(4, 2)]);
    assert_eq!(fx.index.mark_partition(fx.by_part, &2), Ok(2));
    assert_eq!(fx.index.mark_partition(fx.by_part, &7), Ok(0));
    fx.add(r(4, 2), Placement::Append);
    assert_eq!(
        ids(fx.index.sweep_partition(fx.by_part, &1).unwrap().iter()),
        [0u32; 0]
    );
    assert_eq!(
        ids(fx.index.sweep_partition(fx.by_part, &2).unwrap().iter()),
        [2]
    );
    assert!(fx.index.sweep_partition(fx.by_part, &7).unwrap().is_empty());
    check(
        &fx,
        expect![[r#"
            all: 1 3 4
            part 1: 1 3
            part 2: 4
        "#]],
    );
    // Sweeping a whole partition away drops it.
    fx.index.mark_partition(fx.by_part, &2).unwrap();
    assert_eq!(
        ids(fx.index.sweep_partition(fx.by_part, &2).unwrap().iter()),
        [4]
    );
    assert!(fx.index.partition(fx.by_part, &2).is_none());
}

#[test]
fn mark_and_sweep_one_index_type() {
    let mut fx = Fixture::with(&[d(1, 1), r(2, 2), d(3, 3), r(4, 0), d(5, 3)]);
    assert_eq!(fx.index.mark_index(fx.defaults), Ok(3));
    fx.add(d(3, 3), Placement::Append);
    let mut swept = ids(fx.index.sweep_index(fx.defaults).unwrap().iter());
    swept.sort_unstable();
    assert_eq!(swept, [1, 5]);
    assert_eq!(fx.index.mark_index(fx.by_part), Ok(2));
    let mut swept = ids(fx.index.sweep_index(fx.by_part).unwrap().iter());
    swept.sort_unstable();
    assert_eq!(swept, [2, 3]);
    check(
        &fx,
        expect![[r#"
        all: 4
    "#]],
    );
    let primary = fx.index.primary();
    assert_eq!(fx.index.mark_index(primary), Ok(1));
    assert_eq!(ids(fx.index.sweep_index(primary).unwrap().iter()), [4]);
    let other = Fixture::new();
    assert_eq!(fx.index.mark_index(other.by_part), Err(Error::UnknownIndex));
    assert_eq!(
        fx.index.sweep_index(other.by_part),
        Err(Error::UnknownIndex)
    );
    assert_eq!(
        fx.index.mark_partition(other.by_part, &1),
        Err(Error::UnknownIndex)
    );
    assert_eq!(
        fx.index.sweep_partition(other.by_part, &1),
        Err(Error::UnknownIndex)
    );
}

#[test]
fn the_same_object_is_shared_by_every_index_type() {
    let fx = Fixture::with(&[d(1, 1)]);
    let in_part = fx.index.partition(fx.by_part, &1).unwrap().first().unwrap();
    let in_defaults = fx
        .index
        .partition(fx.defaults, &())
        .unwrap()
        .first()
        .unwrap();
    let in_primary = fx.index.get_in(fx.index.primary(), &1).unwrap().obj();
    assert!(Arc::ptr_eq(in_part, in_defaults));
    assert!(Arc::ptr_eq(in_part, in_primary));
    assert_eq!(Arc::strong_count(in_part), 1);
}

#[test]
fn interning_without_adding() {
    let fx = Fixture::with(&[r(1, 1)]);
    let held = fx.index.get(&1).unwrap();
    let copy = Arc::new(r(1, 1));
    assert!(Arc::ptr_eq(&fx.index.intern(copy), held));
    let other = Arc::new(r(1, 2));
    assert!(Arc::ptr_eq(&fx.index.intern(Arc::clone(&other)), &other));
    assert!(fx.index.find_equal(&r(1, 1)).is_some());
    assert!(fx.index.find_equal(&r(1, 2)).is_none());
    assert_eq!(fx.index.len(), 1);
}

#[test]
fn inserting_an_outside_arc_keeps_sharing_it() {
    let mut fx = Fixture::new();
    let outside = Arc::new(r(1, 1));
    let change = fx
        .index
        .insert(Arc::clone(&outside), Placement::Append)
        .unwrap();
    assert!(Arc::ptr_eq(change.obj(), &outside));
    let again = fx.index.insert(r(1, 1), Placement::Append).unwrap();
    assert!(Arc::ptr_eq(again.obj(), &outside));
}

#[test]
fn dropping_the_index_leaves_outside_handles_alive() {
    let fx = Fixture::with(&[r(1, 1), d(2, 2)]);
    let kept: Vec<Arc<R>> = fx.index.iter().cloned().collect();
    assert!(kept.iter().all(|obj| Arc::strong_count(obj) == 2));
    drop(fx);
    assert!(kept.iter().all(|obj| Arc::strong_count(obj) == 1));
    assert_eq!(ids(kept.iter()), [1, 2]);
}

#[test]
fn an_index_type_added_later_indexes_what_is_held() {
    let mut index = DedupIndex::new();
    for obj in [r(1, 2), d(2, 1), r(3, 2), r(4, 0)] {
        index.insert(obj, Placement::Append).unwrap();
    }
    let by_part = index.add_index(ByPart);
    let defaults = index.add_index(Defaults);
    let fx = Fixture {
        index,
        by_part,
        defaults,
    };
    check(
        &fx,
        expect![[r#"
            all: 1 2 3 4
            part 1: 2
            part 2: 1 3
            defaults: 2
        "#]],
    );
}

#[test]
fn clear_reserve_and_shrink() {
    let mut fx = Fixture::with(&[r(1, 1), r(2, 2)]);
    fx.index.reserve(100);
    assert!(fx.index.objs.capacity() >= 102);
    fx.index.shrink_to_fit();
    fx.index.validate().unwrap();
    fx.index.clear();
    check(
        &fx,
        expect![[r#"
        all: 
    "#]],
    );
    fx.add(r(3, 1), Placement::Append);
    check(
        &fx,
        expect![[r#"
            all: 3
            part 1: 3
        "#]],
    );
}

#[test]
fn many_entries_grow_shrink_and_keep_their_lists() {
    // Enough slots for the link arrays to be reallocated several times.
    let n = 12_305;
    let mut fx = Fixture::new();
    let added = fx
        .index
        .append_all((0..n).map(|id| R {
            id,
            part: [1, 9, 1000, 1001, 0][id as usize % 5],
            def: id % 7 == 0,
            v: 0,
        }))
        .unwrap();
    assert_eq!(added, n as usize);
    fx.index.validate().unwrap();
    for id in (0..n).step_by(3) {
        assert!(fx.index.remove(&id).is_some());
    }
    fx.index.validate().unwrap();
    let in_part = |fx: &Fixture, key: u32| fx.index.partition(fx.by_part, &key).map(|p| p.len());
    let expected = |key_of: u32| (0..n).filter(|id| id % 3 != 0 && id % 5 == key_of).count();
    assert_eq!(in_part(&fx, 1), Some(expected(0)));
    assert_eq!(in_part(&fx, 9), Some(expected(1)));
    assert_eq!(in_part(&fx, 1000), Some(expected(2)));
    assert_eq!(in_part(&fx, 1001), Some(expected(3)));
    // Emptying partition 9 moves the last partition into its number.
    let nines: Vec<u32> = (0..n).filter(|id| id % 3 != 0 && id % 5 == 1).collect();
    for id in &nines {
        fx.index.remove(id);
    }
    fx.index.validate().unwrap();
    assert_eq!(in_part(&fx, 9), None);
    assert_eq!(in_part(&fx, 1), Some(expected(0)));
    assert_eq!(in_part(&fx, 1001), Some(expected(3)));
    fx.add(r(n + 1, 9), Placement::Append);
    assert_eq!(in_part(&fx, 9), Some(1));
    // Keep only the first few slots' worth of entries, then give the rest back.
    for id in n / 8..n + 2 {
        fx.index.remove(&id);
    }
    fx.index.shrink_to_fit();
    fx.index.validate().unwrap();
    let late = fx.index.add_index(Defaults);
    fx.index.validate().unwrap();
    let defaults = |fx: &Fixture, handle| fx.index.partition(handle, &()).map(|p| p.len());
    assert_eq!(defaults(&fx, late), defaults(&fx, fx.defaults));
    fx.index.clear();
    fx.index.validate().unwrap();
    assert_eq!(fx.index.len(), 0);
}

#[test]
fn touching_room_ahead_changes_nothing_and_ends() {
    let mut fx = Fixture::with(&[r(1, 1), d(2, 2)]);
    fx.index.reserve(10_000);
    let room = fx.index.objs.capacity() - fx.index.objs.len();
    // Only as far ahead as asked, in steps of at most `max`.
    assert_eq!(fx.index.touch_ahead(100, 64), 64);
    assert_eq!(fx.index.touch_ahead(100, 64), 36);
    assert_eq!(fx.index.touch_ahead(100, 64), 0);
    let mut touched = 100;
    loop {
        let n = fx.index.touch_ahead(usize::MAX, 4096);
        assert!(n <= 4096);
        if n == 0 {
            break;
        }
        touched += n;
    }
    assert_eq!(touched, room);
    fx.index.validate().unwrap();
    assert_eq!(
        fx.index.append_all((3..10_003).map(|id| r(id, id % 3))),
        Ok(10_000)
    );
    fx.index.validate().unwrap();
    // Growing past the reserve gives new room to touch.
    fx.index.reserve(100_000);
    assert!(fx.index.touch_ahead(usize::MAX, usize::MAX) > 0);
    assert_eq!(fx.index.touch_ahead(usize::MAX, usize::MAX), 0);
    fx.index.validate().unwrap();
    assert_eq!(fx.index.len(), 10_002);
}

#[test]
fn debug_and_change_accessors() {
    let mut fx = Fixture::with(&[r(1, 1)]);
    let change = fx.add(R { v: 2, ..r(1, 1) }, Placement::Append);
    assert!(change.is_changed());
    assert_eq!(change.old().map(|old| old.v), Some(0));
    assert_eq!(change.into_obj().v, 2);
    expect![[r#"[R { id: 1, part: 1, def: false, v: 2 }]"#]].assert_eq(&format!("{:?}", fx.index));
}

#[test]
fn the_index_is_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<DedupIndex<R>>();
    check::<IndexHandle<ByPart>>();
    check::<Change<R>>();
}

/// An index type that breaks its contract: its partition changes from one call to the next.
struct Fickle(std::sync::atomic::AtomicU32);

impl IndexType<R> for Fickle {
    type Partition = u32;

    fn partition(&self, obj: &R) -> Option<u32> {
        let n = self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        (!n.is_multiple_of(5)).then_some(obj.id % 3 + n % 2)
    }
}

#[test]
fn a_contract_breaking_index_type_gives_wrong_answers_but_no_panic() {
    let mut index = DedupIndex::new();
    let fickle = index.add_index(Fickle(std::sync::atomic::AtomicU32::new(0)));
    for round in 0..50u32 {
        for id in 0..20 {
            let placement = match (round + id) % 4 {
                0 => Placement::Append,
                1 => Placement::PrependForce,
                2 => Placement::Before((id + 1) % 20),
                _ => Placement::After((id + 3) % 20),
            };
            let _ = index.insert(
                R {
                    v: round % 3,
                    ..r(id, 1)
                },
                placement,
            );
            let _ = index.move_entry(fickle, &((id * 7) % 20), Position::Front);
            if (round + id) % 3 == 0 {
                index.remove(&((id * 3) % 20));
            }
        }
        for part in 0..4 {
            let _ = index.mark_partition(fickle, &part);
            let _ = index.sweep_partition(fickle, &part);
            if let Some(mut cursor) = index.cursor_mut(fickle, &part) {
                cursor.move_next();
                cursor.remove_current();
            }
        }
        let _ = index.sweep_index(fickle);
        let n_walked = index
            .partitions(fickle)
            .map(|part| part.iter().count())
            .sum::<usize>();
        assert!(n_walked <= 20 * 50);
        assert!(index.iter().count() <= index.len());
    }
}

mod random {
    //! Random operation sequences checked against the internal invariants after every step.

    use proptest::prelude::*;

    use super::{Fixture, R};
    use crate::{Placement, Position};

    #[derive(Debug, Clone)]
    enum Op {
        Insert(R, u8, u32),
        Remove(u32),
        Move(bool, u32, u8, u32),
        MarkPartition(u32),
        SweepAll,
        SweepIndex,
        CursorRemove(u32),
    }

    fn op() -> impl Strategy<Value = Op> {
        let obj = (0..12u32, 0..4u32, any::<bool>(), 0..2u32).prop_map(|(id, part, def, v)| R {
            id,
            part,
            def,
            v,
        });
        prop_oneof![
            4 => (obj, 0..6u8, 0..12u32).prop_map(|(obj, how, anchor)| Op::Insert(obj, how, anchor)),
            2 => (0..12u32).prop_map(Op::Remove),
            2 => (any::<bool>(), 0..12u32, 0..4u8, 0..12u32).prop_map(|(p, id, how, a)| Op::Move(p, id, how, a)),
            1 => (0..4u32).prop_map(Op::MarkPartition),
            1 => Just(Op::SweepAll),
            1 => Just(Op::SweepIndex),
            1 => (0..4u32).prop_map(Op::CursorRemove),
        ]
    }

    proptest! {
        /// With an index type that breaks its contract nothing holds, except that nothing
        /// panics and every walk ends.
        #[test]
        fn a_contract_breaking_index_type_never_panics(ops in proptest::collection::vec(op(), 1..300)) {
            let mut index = crate::DedupIndex::new();
            let fickle = index.add_index(super::Fickle(std::sync::atomic::AtomicU32::new(0)));
            for op in ops {
                match op {
                    Op::Insert(obj, how, anchor) => {
                        let placement = match how {
                            0 => Placement::Append,
                            1 => Placement::AppendForce,
                            2 => Placement::Prepend,
                            3 => Placement::PrependForce,
                            4 => Placement::Before(anchor),
                            _ => Placement::After(anchor),
                        };
                        let _ = index.insert(obj, placement);
                    }
                    Op::Remove(id) => {
                        index.remove(&id);
                    }
                    Op::Move(_, id, how, anchor) => {
                        let to = match how {
                            0 => Position::Front,
                            1 => Position::Back,
                            2 => Position::Before(anchor),
                            _ => Position::After(anchor),
                        };
                        let _ = index.move_entry(fickle, &id, to);
                    }
                    Op::MarkPartition(part) => {
                        let _ = index.mark_partition(fickle, &part);
                    }
                    Op::SweepAll => {
                        index.sweep();
                    }
                    Op::SweepIndex => {
                        let _ = index.sweep_index(fickle);
                    }
                    Op::CursorRemove(part) => {
                        if let Some(mut cursor) = index.cursor_mut(fickle, &part) {
                            cursor.move_next();
                            cursor.remove_current();
                        }
                    }
                }
                let walked: usize = index.partitions(fickle).map(|part| part.iter().count()).sum();
                prop_assert!(walked <= 1 << 20);
                prop_assert!(index.iter().count() <= index.len());
            }
        }

        #[test]
        fn invariants_hold(ops in proptest::collection::vec(op(), 1..200)) {
            let mut fx = Fixture::new();
            for op in ops {
                match op {
                    Op::Insert(obj, how, anchor) => {
                        let placement = match how {
                            0 => Placement::Append,
                            1 => Placement::AppendForce,
                            2 => Placement::Prepend,
                            3 => Placement::PrependForce,
                            4 => Placement::Before(anchor),
                            _ => Placement::After(anchor),
                        };
                        let _ = fx.index.insert(obj, placement);
                    }
                    Op::Remove(id) => {
                        fx.index.remove(&id);
                    }
                    Op::Move(primary, id, how, anchor) => {
                        let to = match how {
                            0 => Position::Front,
                            1 => Position::Back,
                            2 => Position::Before(anchor),
                            _ => Position::After(anchor),
                        };
                        let _ = if primary {
                            fx.index.move_entry(fx.index.primary(), &id, to)
                        } else {
                            fx.index.move_entry(fx.by_part, &id, to)
                        };
                    }
                    Op::MarkPartition(part) => {
                        fx.index.mark_partition(fx.by_part, &part).unwrap();
                    }
                    Op::SweepAll => {
                        fx.index.sweep();
                    }
                    Op::SweepIndex => {
                        fx.index.sweep_index(fx.by_part).unwrap();
                    }
                    Op::CursorRemove(part) => {
                        if let Some(mut cursor) = fx.index.cursor_mut(fx.by_part, &part) {
                            cursor.move_next();
                            cursor.remove_current();
                        }
                    }
                }
                prop_assert_eq!(fx.index.validate(), Ok(()));
            }
        }
    }
}

#[test]
fn append_all_adds_re_adds_and_replaces_like_append() {
    let mut fx = Fixture::with(&[r(1, 1), d(2, 2), r(3, 1)]);
    let held = Arc::clone(fx.index.get(&1).unwrap());
    fx.index.remove(&3);
    fx.index.mark_all();
    // 1 is equal (kept, unmarked), 2 changes partition (replaced), 4 and 5 are new (4 takes
    // the free slot of 3), and 2 again is equal to what was just put in.
    let changed = fx.index.append_all([
        r(1, 1),
        R { v: 1, ..d(2, 1) },
        r(4, 2),
        d(5, 0),
        R { v: 1, ..d(2, 1) },
    ]);
    assert_eq!(changed, Ok(3));
    assert!(Arc::ptr_eq(fx.index.get(&1).unwrap(), &held));
    check(
        &fx,
        expect![[r#"
            all: 1 2' 4 5
            part 1: 1 2'
            part 2: 4
            defaults: 2' 5
        "#]],
    );
    assert_eq!(fx.index.append_all(Vec::new()), Ok(0));
}

#[test]
fn append_all_shared_keeps_new_arcs_and_drops_equal_ones() {
    let mut fx = Fixture::with(&[r(1, 1), d(2, 2)]);
    let held = Arc::clone(fx.index.get(&1).unwrap());
    fx.index.mark_all();
    let (equal, changed, new) = (
        Arc::new(r(1, 1)),
        Arc::new(R { v: 1, ..d(2, 1) }),
        Arc::new(r(3, 2)),
    );
    let n =
        fx.index
            .append_all_shared([Arc::clone(&equal), Arc::clone(&changed), Arc::clone(&new)]);
    assert_eq!(n, Ok(2));
    // The equal one was dropped: the held object stays, and only the caller holds `equal`.
    assert!(Arc::ptr_eq(fx.index.get(&1).unwrap(), &held));
    assert_eq!(Arc::strong_count(&equal), 1);
    // The others are kept as given, not copied.
    assert!(Arc::ptr_eq(fx.index.get(&2).unwrap(), &changed));
    assert!(Arc::ptr_eq(fx.index.get(&3).unwrap(), &new));
    check(
        &fx,
        expect![[r#"
            all: 1 2' 3
            part 1: 1 2'
            part 2: 3
            defaults: 2'
        "#]],
    );
}

#[test]
fn append_all_grows_from_empty_past_reserved_room() {
    let mut fx = Fixture::new();
    // The size hint is only 1: the rest grows the slots and the id table as it goes.
    let objs = (0..1000).map(|i| r(i, i % 7)).filter(|obj| obj.id != 500);
    assert_eq!(fx.index.append_all(objs), Ok(999));
    fx.index.validate().unwrap();
    assert_eq!(fx.index.len(), 999);
    let on_3: Vec<u32> = ids(fx.index.partition(fx.by_part, &3).unwrap().iter());
    let expected: Vec<u32> = (0..1000).filter(|i| i % 7 == 3 && *i != 500).collect();
    assert_eq!(on_3, expected);
}

#[test]
fn append_all_finds_a_new_id_added_earlier_in_the_same_batch() {
    // Both copies of each new id miss the lookup of their batch and are offered the same
    // free entry: the later one must find the earlier one instead, also across tombstones
    // (the removed ids) and across the growth of the id table within a batch.
    let mut fx = Fixture::with(&(0..40).map(|i| r(i, 1)).collect::<Vec<_>>());
    for i in 0..40 {
        fx.index.remove(&i);
    }
    let objs: Vec<R> = (100..400)
        .flat_map(|i| [r(i, 1), R { v: 1, ..r(i, 2) }])
        .collect();
    assert_eq!(fx.index.append_all(objs), Ok(600));
    fx.index.validate().unwrap();
    assert_eq!(fx.index.len(), 300);
    for i in 100..400 {
        assert_eq!(fx.index.get(&i).map(|obj| obj.v), Some(1));
    }
}

/// A route-like object: the same table, metric and prefix length, the destination counting
/// up, the shape for which some foldhash seeds cluster the hashes' low bits.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Rt((u32, u32, u32, u8, u8));

impl Object for Rt {
    type Id = (u32, u32, u32, u8, u8);

    fn id(&self) -> Self::Id {
        self.0
    }
}

fn rt(i: u32) -> Rt {
    Rt((254, (i << 8) ^ 0x0a00_0000, 100, 24, 0))
}

/// foldhash seeded as the process `n` of many would be (its shared seed from where the
/// process is loaded, the per-hasher one from the stack).
fn seeded(n: u64) -> crate::hash::IdHasher {
    use foldhash::SharedSeed;
    use foldhash::fast::SeedableRandomState;
    let shared: &'static SharedSeed = Box::leak(Box::new(SharedSeed::from_u64(n)));
    crate::hash::IdHasher::with_state(SeedableRandomState::with_seed(
        n.wrapping_mul(0x9e37_79b9_7f4a_7c15),
        shared,
    ))
}

/// For the seeds of 40 processes, 30k route ids inserted one by one or appended in batches:
/// where the process's seed clusters them, the index changes its hash and ends with its
/// entries near their home groups; where it does not, the hash stays foldhash's alone (which
/// keeps ids counting up in neighbouring groups). Every id is found either way.
#[test]
fn an_id_hash_that_clusters_the_ids_is_changed_and_one_that_does_not_is_kept() {
    const N: u32 = 30_000;
    let mut rehashed = Vec::new();
    for n in 0..40_u64 {
        let mut index = DedupIndex::with_hasher(seeded(n));
        if n % 2 == 0 {
            for i in 0..N {
                index.insert(rt(i), Placement::Append).unwrap();
            }
        } else {
            assert_eq!(index.append_all((0..N).map(rt)).unwrap(), N as usize);
        }
        let (rehashes, crowded) = index.id_hash_state();
        assert!(
            !crowded,
            "seed {n}: still crowded after {rehashes} rehashes"
        );
        assert!(index.validate().is_ok(), "seed {n}: {:?}", index.validate());
        assert_eq!(index.len(), N as usize);
        assert!((0..N).all(|i| index.get(&rt(i).0) == Some(&Arc::new(rt(i)))));
        assert!(index.remove(&rt(7).0).is_some());
        assert!(index.get(&rt(7).0).is_none());
        if rehashes > 0 {
            rehashed.push(n);
        }
    }
    // What the rehash is for: some process seeds cluster these ids (each about one in ten).
    assert!(!rehashed.is_empty(), "no seed of 40 clustered the ids");
    assert!(
        rehashed.len() <= 12,
        "seeds {rehashed:?} rehashed: the hash changes too often"
    );
}

/// Ids whose hashes collide whatever the seed (every hash the same): the hash is changed
/// three times, then left mixed; the index still finds every id and does not try again.
#[test]
fn ids_that_collide_under_every_hash_are_rehashed_a_bounded_number_of_times() {
    #[derive(Debug, Clone, PartialEq, Eq)]
    struct Same(u32);
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    struct SameId(u32);
    impl std::hash::Hash for SameId {
        fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
            state.write_u8(0);
        }
    }
    impl Object for Same {
        type Id = SameId;
        fn id(&self) -> SameId {
            SameId(self.0)
        }
    }
    let mut index = DedupIndex::new();
    for i in 0..3000 {
        index.insert(Same(i), Placement::Append).unwrap();
    }
    let (rehashes, crowded) = index.id_hash_state();
    assert_eq!(rehashes, 3);
    assert!(crowded);
    assert!((0..3000).all(|i| index.get(&SameId(i)).is_some()));
    assert!(index.validate().is_ok(), "{:?}", index.validate());
}
