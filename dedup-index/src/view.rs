//! Borrowed views of a [`DedupIndex`]: entries, partitions, iterators and the removing cursor.

use std::fmt;
use std::iter::FusedIterator;
use std::sync::Arc;

use crate::index::DedupIndex;
use crate::list::{Head, Lane, Links, NIL};
use crate::object::Object;

/// One entry of a [`DedupIndex`]: its object and whether it is marked dirty.
pub struct Entry<'a, T> {
    obj: &'a Arc<T>,
    dirty: bool,
}

impl<'a, T> Entry<'a, T> {
    pub(crate) fn new(obj: &'a Arc<T>, dirty: bool) -> Self {
        Self { obj, dirty }
    }

    /// The object this entry holds.
    pub fn obj(&self) -> &'a Arc<T> {
        self.obj
    }

    /// Whether the entry is marked dirty: marked by a `mark_*` call and not re-added since.
    pub fn is_dirty(&self) -> bool {
        self.dirty
    }
}

impl<T> Clone for Entry<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Entry<'_, T> {}

impl<T: fmt::Debug> fmt::Debug for Entry<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Entry")
            .field("obj", self.obj)
            .field("dirty", &self.dirty)
            .finish()
    }
}

/// Walks one list by slot number, looking one entry ahead, bounded by the list's length.
#[derive(Debug, Clone)]
pub(crate) struct RawIter {
    lane: Lane,
    front: u32,
    back: u32,
    remaining: u32,
}

impl RawIter {
    pub(crate) fn new(lane: Lane, head: Head) -> Self {
        Self {
            lane,
            front: head.first,
            back: head.last,
            remaining: head.len,
        }
    }

    #[inline]
    pub(crate) fn next_slot(&mut self, links: &Links) -> Option<u32> {
        if self.remaining == 0 || self.front == NIL {
            return None;
        }
        let slot = self.front;
        self.front = links.get(self.lane.at(slot))?.next;
        self.remaining -= 1;
        Some(slot)
    }

    #[inline]
    pub(crate) fn next_slot_back(&mut self, links: &Links) -> Option<u32> {
        if self.remaining == 0 || self.back == NIL {
            return None;
        }
        let slot = self.back;
        self.back = links.get(self.lane.at(slot))?.prev;
        self.remaining -= 1;
        Some(slot)
    }
}

/// The objects of one list, in order. Made by [`DedupIndex::iter`] and
/// [`PartitionRef::iter`].
pub struct Iter<'a, T: Object> {
    index: &'a DedupIndex<T>,
    raw: RawIter,
}

impl<'a, T: Object> Iter<'a, T> {
    pub(crate) fn new(index: &'a DedupIndex<T>, raw: RawIter) -> Self {
        Self { index, raw }
    }
}

impl<T: Object> Clone for Iter<'_, T> {
    fn clone(&self) -> Self {
        Self {
            index: self.index,
            raw: self.raw.clone(),
        }
    }
}

impl<'a, T: Object> Iterator for Iter<'a, T> {
    type Item = &'a Arc<T>;

    #[inline]
    fn next(&mut self) -> Option<&'a Arc<T>> {
        let slot = self.raw.next_slot(&self.index.links)?;
        self.index.objs.get(slot as usize)?.as_ref()
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (
            self.raw.remaining as usize,
            Some(self.raw.remaining as usize),
        )
    }
}

impl<'a, T: Object> DoubleEndedIterator for Iter<'a, T> {
    #[inline]
    fn next_back(&mut self) -> Option<&'a Arc<T>> {
        let slot = self.raw.next_slot_back(&self.index.links)?;
        self.index.objs.get(slot as usize)?.as_ref()
    }
}

impl<T: Object> ExactSizeIterator for Iter<'_, T> {}

impl<T: Object> FusedIterator for Iter<'_, T> {}

/// The entries (object and dirty mark) of one list, in order. Made by
/// [`DedupIndex::entries`] and [`PartitionRef::entries`].
pub struct Entries<'a, T: Object> {
    index: &'a DedupIndex<T>,
    raw: RawIter,
}

impl<'a, T: Object> Entries<'a, T> {
    pub(crate) fn new(index: &'a DedupIndex<T>, raw: RawIter) -> Self {
        Self { index, raw }
    }
}

impl<'a, T: Object> Iterator for Entries<'a, T> {
    type Item = Entry<'a, T>;

    fn next(&mut self) -> Option<Entry<'a, T>> {
        let slot = self.raw.next_slot(&self.index.links)?;
        self.index.entry_at(slot)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (
            self.raw.remaining as usize,
            Some(self.raw.remaining as usize),
        )
    }
}

impl<'a, T: Object> DoubleEndedIterator for Entries<'a, T> {
    fn next_back(&mut self) -> Option<Entry<'a, T>> {
        let slot = self.raw.next_slot_back(&self.index.links)?;
        self.index.entry_at(slot)
    }
}

impl<T: Object> ExactSizeIterator for Entries<'_, T> {}

impl<T: Object> FusedIterator for Entries<'_, T> {}

/// One partition of one index type: a non-empty ordered list of entries.
pub struct PartitionRef<'a, T: Object, P> {
    index: &'a DedupIndex<T>,
    lane: usize,
    head: Head,
    key: &'a P,
}

impl<'a, T: Object, P> PartitionRef<'a, T, P> {
    pub(crate) fn new(index: &'a DedupIndex<T>, lane: usize, head: Head, key: &'a P) -> Self {
        Self {
            index,
            lane,
            head,
            key,
        }
    }

    pub(crate) fn first_slot(&self) -> u32 {
        self.head.first
    }

    /// The partition's key.
    pub fn key(&self) -> &'a P {
        self.key
    }

    /// The number of entries in the partition (never 0: empty partitions are dropped).
    pub fn len(&self) -> usize {
        self.head.len as usize
    }

    /// Whether the partition holds no entry (always false, see [`len`](Self::len)).
    pub fn is_empty(&self) -> bool {
        self.head.len == 0
    }

    /// The objects of the partition, in order.
    pub fn iter(&self) -> Iter<'a, T> {
        Iter::new(
            self.index,
            RawIter::new(self.index.lane(self.lane), self.head),
        )
    }

    /// The entries (object and dirty mark) of the partition, in order.
    pub fn entries(&self) -> Entries<'a, T> {
        Entries::new(
            self.index,
            RawIter::new(self.index.lane(self.lane), self.head),
        )
    }

    /// The first object of the partition.
    pub fn first(&self) -> Option<&'a Arc<T>> {
        self.iter().next()
    }

    /// The last object of the partition.
    pub fn last(&self) -> Option<&'a Arc<T>> {
        self.iter().next_back()
    }
}

impl<T: Object, P> Clone for PartitionRef<'_, T, P> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T: Object, P> Copy for PartitionRef<'_, T, P> {}

impl<'a, T: Object, P> IntoIterator for PartitionRef<'a, T, P> {
    type Item = &'a Arc<T>;
    type IntoIter = Iter<'a, T>;

    fn into_iter(self) -> Iter<'a, T> {
        self.iter()
    }
}

impl<T: Object + fmt::Debug, P: fmt::Debug> fmt::Debug for PartitionRef<'_, T, P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PartitionRef")
            .field("key", self.key)
            .field("len", &self.head.len)
            .finish()
    }
}

/// The non-empty partitions of one index type. Made by [`DedupIndex::partitions`].
pub struct PartitionIter<'a, T: Object, P> {
    index: &'a DedupIndex<T>,
    lane: usize,
    keys: &'a [P],
    heads: &'a [Head],
    pos: usize,
}

impl<'a, T: Object, P> PartitionIter<'a, T, P> {
    pub(crate) fn new(
        index: &'a DedupIndex<T>,
        lane: usize,
        keys: &'a [P],
        heads: &'a [Head],
    ) -> Self {
        Self {
            index,
            lane,
            keys,
            heads,
            pos: 0,
        }
    }
}

impl<'a, T: Object, P> Iterator for PartitionIter<'a, T, P> {
    type Item = PartitionRef<'a, T, P>;

    fn next(&mut self) -> Option<PartitionRef<'a, T, P>> {
        loop {
            let key = self.keys.get(self.pos)?;
            let head = *self.heads.get(self.pos)?;
            self.pos += 1;
            if head.len > 0 {
                return Some(PartitionRef::new(self.index, self.lane, head, key));
            }
        }
    }
}

impl<T: Object, P> FusedIterator for PartitionIter<'_, T, P> {}

/// A position in one list that can remove the entry it stands on and go on: iteration that
/// tolerates removal. Made by [`DedupIndex::cursor_front_mut`] and [`DedupIndex::cursor_mut`].
///
/// ```
/// # use netmirror_dedup_index::{DedupIndex, Object, Placement};
/// # #[derive(PartialEq, Eq)] struct N(u32);
/// # impl Object for N { type Id = u32; fn id(&self) -> u32 { self.0 } }
/// let mut index = DedupIndex::new();
/// for n in 0..6 {
///     index.insert(N(n), Placement::Append)?;
/// }
/// let mut cursor = index.cursor_front_mut();
/// while let Some(entry) = cursor.current() {
///     if entry.obj().0 % 2 == 0 {
///         cursor.remove_current();
///     } else {
///         cursor.move_next();
///     }
/// }
/// assert_eq!(index.iter().map(|n| n.0).collect::<Vec<_>>(), [1, 3, 5]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct CursorMut<'a, T: Object> {
    index: &'a mut DedupIndex<T>,
    lane: usize,
    current: u32,
}

impl<'a, T: Object> CursorMut<'a, T> {
    pub(crate) fn new(index: &'a mut DedupIndex<T>, lane: usize, current: u32) -> Self {
        Self {
            index,
            lane,
            current,
        }
    }

    /// The entry under the cursor, or `None` past the end.
    pub fn current(&self) -> Option<Entry<'_, T>> {
        if self.current == NIL {
            return None;
        }
        self.index.entry_at(self.current)
    }

    /// Moves to the next entry of the list (past the end after the last one).
    pub fn move_next(&mut self) {
        self.current = self.next_slot();
    }

    /// Removes the entry under the cursor from the index (from every index type) and moves to
    /// the next entry. Returns the removed object, or `None` past the end.
    pub fn remove_current(&mut self) -> Option<Arc<T>> {
        if self.current == NIL {
            return None;
        }
        let next = self.next_slot();
        let removed = self.index.remove_slot(self.current);
        self.current = next;
        removed
    }

    fn next_slot(&self) -> u32 {
        if self.current == NIL {
            return NIL;
        }
        let lane = self.index.lane(self.lane);
        self.index
            .links
            .get(lane.at(self.current))
            .map_or(NIL, |link| link.next)
    }
}
