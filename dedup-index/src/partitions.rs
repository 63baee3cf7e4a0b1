//! The partition table of one index type, with its key type erased.
//!
//! [`TypedTable`] maps partition keys to dense partition numbers (a `Vec` of keys, a parallel
//! `Vec` of list heads and a hash table of `u32` positions, the indexmap layout), with an array
//! by [`IndexType::dense_key`] in front of the hash table for small integer keys. The index
//! talks to it through the object-safe [`PartitionTable`], so that index types with different
//! key types live side by side in one `Vec`.

use std::any::Any;
use std::hash::{BuildHasher, Hash};

use hashbrown::{DefaultHashBuilder, HashTable};

use crate::list::{self, Head, Link};
use crate::object::{DENSE_KEYS, IndexType};

/// Where an object falls in one index type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Located {
    /// The index type does not track the object.
    Untracked,
    /// The object's partition does not exist yet.
    Missing,
    /// The object's partition has this number.
    Found(u32),
}

/// The object-safe face of one index type's partitions.
pub(crate) trait PartitionTable<T>: Send + Sync {
    /// Finds the partition of `obj` without creating it.
    fn locate(&self, obj: &T) -> Located;
    /// Finds the partition of `obj`, creating it (with an empty head) if needed.
    fn locate_or_insert(&mut self, obj: &T) -> Option<u32>;
    /// Unlinks `slot`, which holds `obj`, from its list in this index type (`lane` being the
    /// links of its lane) and removes the partition if that emptied it. When the index type
    /// does not track `obj`, the slot's link is not even read. Returns false if the slot was
    /// linked but its partition was not found (an index type that broke its contract); the
    /// slot is then only marked untracked.
    fn unlink(&mut self, lane: &mut [Link], slot: u32, obj: &T) -> bool;
    /// The list heads, by partition number.
    fn heads(&self) -> &[Head];
    /// The list heads, by partition number.
    fn heads_mut(&mut self) -> &mut [Head];
    /// Removes partition `p` (whose list must be empty); the last partition takes its number.
    fn remove(&mut self, p: u32);
    /// Removes every partition.
    fn clear(&mut self);
    /// Gives the concrete [`TypedTable`] for downcasting.
    fn as_any(&self) -> &dyn Any;
}

/// The partitions of index type `X`, whose key type is `P`.
pub(crate) struct TypedTable<X, P> {
    pub(crate) index_type: X,
    keys: Vec<P>,
    heads: Vec<Head>,
    table: HashTable<u32>,
    hasher: DefaultHashBuilder,
    /// Partition number + 1 by [`IndexType::dense_key`] (0: none), for the keys that have one.
    dense: Vec<u32>,
    /// The partition [`find_or_insert_key`](Self::find_or_insert_key) found last: objects
    /// arriving in kernel order often fall in the same partition as the one before (always,
    /// for an index type with a single list), and comparing one key is cheaper than hashing.
    last: u32,
}

impl<X, P: Hash + Eq> TypedTable<X, P> {
    pub(crate) fn new(index_type: X) -> Self {
        Self {
            index_type,
            keys: Vec::new(),
            heads: Vec::new(),
            table: HashTable::new(),
            hasher: DefaultHashBuilder::default(),
            dense: Vec::new(),
            last: 0,
        }
    }

    /// The partition number of `key`.
    pub(crate) fn find_key(&self, key: &P) -> Option<u32> {
        if self.keys.get(self.last as usize) == Some(key) {
            return Some(self.last);
        }
        let hash = self.hasher.hash_one(key);
        let keys = &self.keys;
        self.table
            .find(hash, |&p| keys.get(p as usize) == Some(key))
            .copied()
    }

    pub(crate) fn keys(&self) -> &[P] {
        &self.keys
    }

    pub(crate) fn typed_heads(&self) -> &[Head] {
        &self.heads
    }

    /// The partition numbered `n` by [`IndexType::dense_key`], if it holds `key`.
    #[inline]
    fn find_dense(&self, key: &P, n: Option<usize>) -> Option<u32> {
        let p = self.dense.get(n?)?.checked_sub(1)?;
        (self.keys.get(p as usize) == Some(key)).then_some(p)
    }

    /// The partition of `key` (whose dense number is `n`), created if needed.
    #[inline]
    fn find_or_insert_key(&mut self, key: P, n: Option<usize>) -> u32 {
        if self.keys.get(self.last as usize) == Some(&key) {
            return self.last;
        }
        if let Some(p) = self.find_dense(&key, n) {
            self.last = p;
            return p;
        }
        // Every key is in the hash table too: a number shared by two keys leads to one of
        // them only.
        let p = self.find_or_insert_key_hashed(key);
        if let Some(n) = n {
            if self.dense.len() <= n {
                self.dense.resize(n + 1, 0);
            }
            if self.dense[n] == 0 {
                self.dense[n] = p + 1;
            }
        }
        self.last = p;
        p
    }

    fn find_or_insert_key_hashed(&mut self, key: P) -> u32 {
        let hash = self.hasher.hash_one(&key);
        let keys = &self.keys;
        let hasher = &self.hasher;
        match self.table.entry(
            hash,
            |&p| keys.get(p as usize) == Some(&key),
            |&p| keys.get(p as usize).map_or(0, |k| hasher.hash_one(k)),
        ) {
            hashbrown::hash_table::Entry::Occupied(entry) => *entry.get(),
            hashbrown::hash_table::Entry::Vacant(entry) => {
                // Partition numbers stay far below u32::MAX: every partition holds a slot.
                let p = self.keys.len() as u32;
                entry.insert(p);
                self.keys.push(key);
                self.heads.push(Head::EMPTY);
                p
            }
        }
    }
}

/// The number [`IndexType::dense_key`] gives `key`, if it is below [`DENSE_KEYS`].
#[inline]
fn dense_number<T, X: IndexType<T>>(index_type: &X, key: &X::Partition) -> Option<usize> {
    index_type.dense_key(key).filter(|&n| n < DENSE_KEYS)
}

impl<T, X, P> PartitionTable<T> for TypedTable<X, P>
where
    X: IndexType<T, Partition = P>,
    P: Hash + Eq + Send + Sync + 'static,
{
    #[inline]
    fn locate(&self, obj: &T) -> Located {
        let Some(key) = self.index_type.partition(obj) else {
            return Located::Untracked;
        };
        let dense = dense_number::<T, X>(&self.index_type, &key);
        match self.find_dense(&key, dense).or_else(|| self.find_key(&key)) {
            None => Located::Missing,
            Some(p) => Located::Found(p),
        }
    }

    #[inline]
    fn locate_or_insert(&mut self, obj: &T) -> Option<u32> {
        let key = self.index_type.partition(obj)?;
        let dense = dense_number::<T, X>(&self.index_type, &key);
        Some(self.find_or_insert_key(key, dense))
    }

    #[inline]
    fn unlink(&mut self, lane: &mut [Link], slot: u32, obj: &T) -> bool {
        // The contract: a slot is linked in this lane exactly when `partition` gives a key.
        let Some(key) = self.index_type.partition(obj) else {
            return true;
        };
        let Some(&link) = lane.get(slot as usize) else {
            return true;
        };
        if !link.is_tracked() {
            return true;
        }
        let dense = dense_number::<T, X>(&self.index_type, &key);
        let Some(p) = self.find_dense(&key, dense).or_else(|| self.find_key(&key)) else {
            if let Some(link) = lane.get_mut(slot as usize) {
                *link = Link::UNTRACKED;
            }
            return false;
        };
        let Some(head) = self.heads.get_mut(p as usize) else {
            return false;
        };
        list::unlink_in(lane, head, slot, link);
        if head.len == 0 {
            PartitionTable::<T>::remove(self, p);
        }
        true
    }

    fn heads(&self) -> &[Head] {
        &self.heads
    }

    fn heads_mut(&mut self) -> &mut [Head] {
        &mut self.heads
    }

    fn remove(&mut self, p: u32) {
        let Some(key) = self.keys.get(p as usize) else {
            return;
        };
        let last = self.keys.len() as u32 - 1;
        // The dense numbers that name `p` and the last partition, which takes its number.
        let dense_of = |q: u32| {
            let key = self.keys.get(q as usize)?;
            let n = dense_number::<T, X>(&self.index_type, key)?;
            (self.dense.get(n) == Some(&(q + 1))).then_some(n)
        };
        let (dense_p, dense_last) = (dense_of(p), dense_of(last));
        if let Some(n) = dense_p {
            self.dense[n] = 0;
        }
        if let Some(n) = dense_last.filter(|_| p != last) {
            self.dense[n] = p + 1;
        }
        let hash = self.hasher.hash_one(key);
        if let Ok(entry) = self.table.find_entry(hash, |&q| q == p) {
            entry.remove();
        }
        if p != last {
            let hash = self.hasher.hash_one(&self.keys[last as usize]);
            if let Some(q) = self.table.find_mut(hash, |&q| q == last) {
                *q = p;
            }
        }
        self.keys.swap_remove(p as usize);
        self.heads.swap_remove(p as usize);
    }

    fn clear(&mut self) {
        self.keys.clear();
        self.heads.clear();
        self.table.clear();
        self.dense.clear();
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
