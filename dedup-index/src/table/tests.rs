//! Unit tests of the id table: random inserts and removals checked against a `HashMap`, with
//! good hashes and with hashes so poor that every entry shares a few groups and tags.

use std::collections::HashMap;

use proptest::prelude::*;

use super::{GROUP, Group, IdTable, Probe};

/// A table of keys: the slot number of key `k` is its position in `keys`.
struct Harness {
    table: IdTable,
    keys: Vec<Option<u64>>,
    hash: fn(u64) -> u64,
}

fn good_hash(key: u64) -> u64 {
    key.wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(29) ^ key
}

/// Four hash values in all: long probe sequences, equal tags, many tombstones.
fn poor_hash(key: u64) -> u64 {
    (key % 4) << 62 | (key % 4)
}

impl Harness {
    fn new(hash: fn(u64) -> u64, capacity: usize) -> Self {
        Self {
            table: IdTable::with_capacity(capacity),
            keys: Vec::new(),
            hash,
        }
    }

    fn find(&self, key: u64) -> Option<u32> {
        let keys = &self.keys;
        self.table
            .find((self.hash)(key), |slot| keys[slot as usize] == Some(key))
            .map(|(_, slot)| slot)
    }

    fn rebuild(&mut self, capacity: usize) {
        let mut table = IdTable::with_capacity(capacity.max(self.table.len()));
        for (slot, key) in self.keys.iter().enumerate() {
            if let Some(key) = key {
                table.insert_unique((self.hash)(*key), slot as u32);
            }
        }
        self.table = table;
    }

    /// Inserts `key` unless present; true if it was added.
    fn insert(&mut self, key: u64) -> bool {
        if self.table.room() == 0 {
            let capacity = self.table.capacity();
            self.rebuild(if capacity >= 16 && self.table.len() * 2 <= capacity {
                capacity
            } else {
                (self.table.len() * 2).max(16)
            });
        }
        let hash = (self.hash)(key);
        let keys = &self.keys;
        match self
            .table
            .find_or_free(hash, |slot| keys[slot as usize] == Some(key))
        {
            Probe::Found(..) => false,
            Probe::Vacant(pos) => {
                let pos = pos.expect("room was made");
                let slot = self.keys.len() as u32;
                self.keys.push(Some(key));
                self.table.insert_at(pos, hash, slot);
                true
            }
        }
    }

    fn remove(&mut self, key: u64) -> bool {
        let keys = &self.keys;
        let Some((pos, slot)) = self
            .table
            .find((self.hash)(key), |slot| keys[slot as usize] == Some(key))
        else {
            return false;
        };
        self.table.remove_at(pos);
        self.keys[slot as usize] = None;
        true
    }
}

fn check(ops: &[(bool, u64)], hash: fn(u64) -> u64, capacity: usize) {
    let mut harness = Harness::new(hash, capacity);
    let mut model: HashMap<u64, ()> = HashMap::new();
    for &(insert, key) in ops {
        if insert {
            assert_eq!(
                harness.insert(key),
                model.insert(key, ()).is_none(),
                "insert {key}"
            );
        } else {
            assert_eq!(
                harness.remove(key),
                model.remove(&key).is_some(),
                "remove {key}"
            );
        }
        assert_eq!(harness.table.len(), model.len());
    }
    for key in 0..64 {
        assert_eq!(
            harness.find(key).is_some(),
            model.contains_key(&key),
            "find {key}"
        );
    }
}

proptest! {
    #[test]
    fn matching_finds_exactly_the_equal_tags(tags in prop::array::uniform8(any::<u8>()), tag: u8) {
        let group = Group { tags, slots: [0; GROUP] };
        let found: Vec<usize> = group.matching(tag).collect();
        let expected: Vec<usize> = (0..GROUP).filter(|&i| tags[i] == tag).collect();
        prop_assert_eq!(found, expected);
    }

    #[test]
    fn matches_a_hash_map(ops in prop::collection::vec((any::<bool>(), 0u64..64), 0..400)) {
        check(&ops, good_hash, 0);
    }

    #[test]
    fn matches_a_hash_map_with_poor_hashes(
        ops in prop::collection::vec((any::<bool>(), 0u64..64), 0..400),
    ) {
        check(&ops, poor_hash, 0);
    }
}

#[test]
fn empty_table_finds_nothing_and_has_no_room() {
    let table = IdTable::new();
    assert_eq!(table.find(7, |_| true), None);
    assert_eq!(table.find_or_free(7, |_| true), Probe::Vacant(None));
    assert_eq!(table.room(), 0);
}

#[test]
fn churn_in_full_groups_reuses_tombstones_without_growing() {
    // One group's worth of entries with the same hash, then endless replacement: the
    // removed entries become tombstones that later inserts take.
    let mut harness = Harness::new(|_| 0, GROUP * 4);
    let capacity = harness.table.capacity();
    for key in 0..(GROUP as u64 * 3) {
        assert!(harness.insert(key));
    }
    for round in 0..1000u64 {
        let old = round;
        let new = round + GROUP as u64 * 3;
        assert!(harness.remove(old));
        assert!(harness.insert(new));
        assert_eq!(harness.find(new), Some(harness.keys.len() as u32 - 1));
        assert_eq!(harness.find(old), None);
    }
    assert_eq!(harness.table.len(), GROUP * 3);
    assert_eq!(harness.table.capacity(), capacity);
}

#[test]
fn capacity_is_seven_in_eight_of_whole_groups() {
    let table = IdTable::with_capacity(1_000_000);
    assert!(table.capacity() >= 1_000_000);
    assert_eq!(table.capacity() % 7, 0);
    assert_eq!(table.room(), table.capacity());
}

/// Adds `keys` one by one to a table that grows as the index's does ([`Harness::insert`]); true
/// if it ever reported itself crowded.
fn ever_crowded(hash: fn(u64) -> u64, keys: std::ops::Range<u64>) -> bool {
    let mut harness = Harness::new(hash, 0);
    keys.fold(false, |crowded, key| {
        harness.insert(key);
        crowded || harness.table.crowded()
    })
}

/// Well-spread hashes of keys counting by a large odd step.
fn spread_hash(key: u64) -> u64 {
    good_hash(key.wrapping_mul(0x9e37_79b9_7f4a_7c15))
}

/// Hashes whose low bits fall in one group of 64: runs of neighbouring groups fill up.
fn clustered_hash(key: u64) -> u64 {
    good_hash(key) & !0xffff_ffc0
}

/// Hashes whose low bits fall in one group of 4.
fn tightly_clustered_hash(key: u64) -> u64 {
    good_hash(key) & !0xffff_fffc
}

/// Well-spread hashes, up to the most each size of table holds before it grows (where even
/// they land 2.3 groups past their home group on average), never look crowded; hashes
/// clustered in their low bits do, as soon as their displacement is past the floor.
#[test]
fn only_clustered_hashes_look_crowded() {
    for run in 0..3 {
        assert!(!ever_crowded(
            spread_hash,
            run * 300_000..(run + 1) * 300_000
        ));
    }
    assert!(ever_crowded(clustered_hash, 0..20_000));
    // Clustered, but too few to matter: a probe of a small table reads it whole anyway.
    assert!(!ever_crowded(tightly_clustered_hash, 0..100));
}
