//! The dedup index: interned objects in dense slots, one hash table from id to slot, and one
//! set of intrusive ordered lists per index type.
//!
//! Memory layout, per slot: the object's `Arc` (8 bytes, `None` for a free slot), 32 bits of
//! the hash of its id (4 bytes), one [`Link`] (two `u32`) per index type, and one dirty bit.
//! The links live in one array per index type ("lane"), so a list walk steps through one dense
//! array. The id table ([`IdTable`]) stores `u32` slot numbers beside 8-bit hash tags, six to
//! half a cache line, and costs 5.3 bytes per entry of room; it grows by re-inserting the kept
//! hashes in slot order, without touching the objects. Partitions are found again from the
//! object (index types are pure functions of immutable objects), so slots do not store them.
//! Removed slots go on a free list threaded through the first lane's links.

use std::borrow::Borrow;
use std::fmt;
use std::hash::Hash;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use crate::error::{Error, Result};
use crate::hash::IdHasher;
use crate::list::{self, Head, Lane, Link, Links, MAX_SLOTS, NIL};
use crate::object::{IndexHandle, IndexType, Object, Primary};
use crate::partitions::{Located, PartitionTable, TypedTable};
use crate::table::{IdTable, Pos, Probe, expand_short_hash, short_hash};
use crate::view::{CursorMut, Entries, Entry, Iter, PartitionIter, PartitionRef, RawIter};

#[cfg(test)]
mod tests;

/// How many objects [`DedupIndex::append_all`] looks up before it adds them.
const APPEND_BATCH: usize = 32;
const _: () = assert!(APPEND_BATCH <= 64, "the found bits are one u64");

/// An object [`DedupIndex::append_all`] or [`DedupIndex::append_all_shared`] adds: in its
/// `Arc` if it came in one or was new when looked up, else still owned (an equal one is then
/// dropped without an allocation).
enum Incoming<T> {
    Owned(T),
    Shared(Arc<T>),
}

impl<T> Incoming<T> {
    #[inline]
    fn get(&self) -> &T {
        match self {
            Incoming::Owned(obj) => obj,
            Incoming::Shared(obj) => obj,
        }
    }

    #[inline]
    fn into_arc(self) -> Arc<T> {
        match self {
            Incoming::Owned(obj) => Arc::new(obj),
            Incoming::Shared(obj) => obj,
        }
    }
}

/// Gives each dedup index its own tag, so handles of one index find nothing in another.
static NEXT_TAG: AtomicU32 = AtomicU32::new(1);

/// Where [`DedupIndex::insert`] puts a *new* entry, and whether it moves an existing one.
///
/// These are NetworkManager's `NM_DEDUP_MULTI_IDX_MODE_*`. The placement applies to the
/// entry's list in every index type that tracks it. An entry that already exists keeps its
/// position unless the mode is a `*Force` one; if a replacing object moves to another
/// partition of some index type, it is placed there as the placement says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Placement<Id> {
    /// Add new entries at the end; leave an existing entry where it is.
    Append,
    /// Add new entries at the end; move an existing entry to the end.
    AppendForce,
    /// Add new entries at the front; leave an existing entry where it is.
    Prepend,
    /// Add new entries at the front; move an existing entry to the front.
    PrependForce,
    /// Add a new entry just before the entry with this id, in every list that holds that entry
    /// in the same partition, and at the end of the other lists. An existing entry stays.
    Before(Id),
    /// Add a new entry just after the entry with this id, in every list that holds that entry
    /// in the same partition, and at the end of the other lists. An existing entry stays.
    After(Id),
}

/// Where [`DedupIndex::move_entry`] moves an entry within its list of one index type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Position<Id> {
    /// To the front of its list.
    Front,
    /// To the end of its list.
    Back,
    /// Just before the entry with this id, which must be in the same list.
    Before(Id),
    /// Just after the entry with this id, which must be in the same list.
    After(Id),
}

/// What [`DedupIndex::insert`] or [`DedupIndex::replace`] did.
///
/// The netmirror crates share one vocabulary for changes: the variants `Added`, `Replaced {
/// old, new }` (and here `Unchanged`; in netmirror-platform, `Removed`), and the accessors
/// [`old`](Self::old) (the object before, if any) and [`new`](Self::new) (the object now). An
/// insert always leaves an object in the index, so `new` here is never absent.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Change<T> {
    /// A new entry holds this object.
    Added(Arc<T>),
    /// An equal object was already held; this is that shared object, and the given one was
    /// dropped. Its dirty mark is cleared.
    Unchanged(Arc<T>),
    /// The entry with the same id now holds `new` (at the same position) instead of `old`.
    Replaced {
        /// The object the entry held before.
        old: Arc<T>,
        /// The object the entry holds now.
        new: Arc<T>,
    },
}

impl<T> Change<T> {
    /// The object the index holds now.
    pub fn obj(&self) -> &Arc<T> {
        match self {
            Change::Added(obj) | Change::Unchanged(obj) => obj,
            Change::Replaced { new, .. } => new,
        }
    }

    /// The object the index held before, if it was replaced.
    pub fn old(&self) -> Option<&Arc<T>> {
        match self {
            Change::Replaced { old, .. } => Some(old),
            Change::Added(_) | Change::Unchanged(_) => None,
        }
    }

    /// Whether the index's content changed (`Added` or `Replaced`).
    pub fn is_changed(&self) -> bool {
        !matches!(self, Change::Unchanged(_))
    }

    /// Returns the object the index holds now.
    pub fn into_obj(self) -> Arc<T> {
        match self {
            Change::Added(obj) | Change::Unchanged(obj) => obj,
            Change::Replaced { new, .. } => new,
        }
    }

    /// The object the index holds now (the same as [`obj`](Self::obj)): the name pairs with
    /// [`old`](Self::old), as in netmirror-platform's `Change`.
    #[allow(
        clippy::new_ret_no_self,
        reason = "the accessor of the `new` field, not a constructor"
    )]
    pub fn new(&self) -> &Arc<T> {
        self.obj()
    }
}

/// An order-preserving, deduplicating multi-index over immutable objects shared as `Arc<T>`.
///
/// Each entry holds one object; entries are identified by [`Object::id`]. Every index has the
/// [`Primary`] index type (all entries, one list) and any number of user index types added with
/// [`add_index`](Self::add_index), each splitting the entries it tracks into ordered
/// partitions. All changes are O(1) amortised, except the mark and sweep operations, which
/// walk what they mark or sweep.
///
/// See the [crate documentation](crate) for an example.
pub struct DedupIndex<T: Object> {
    /// The object of each slot; `None` for a free slot.
    pub(crate) objs: Vec<Option<Arc<T>>>,
    /// The links of every slot in every lane; those of slots at or past `objs.len()` are
    /// untracked.
    pub(crate) links: Links,
    /// One dirty bit per slot.
    pub(crate) dirty: Vec<u64>,
    /// The short hash ([`short_hash`]) of each slot's id, so the id table grows without
    /// reading and rehashing every object (the objects are all over memory; this is one
    /// sequential read). Stale for a free slot.
    hashes: Vec<u32>,
    /// The slots up to which [`touch_ahead`](Self::touch_ahead) touched the spare room,
    /// and the capacity it touched it in.
    touched: (usize, usize),
    /// Slot numbers, hashed by the id of their object.
    ids: IdTable,
    /// How many times `ids` was rebuilt (wrapping): a position found in it before is still
    /// one of the same table while this is unchanged.
    ids_built: u32,
    hasher: IdHasher,
    /// One partition table per lane; lane 0 is [`Primary`].
    pub(crate) tables: Vec<Box<dyn PartitionTable<T>>>,
    /// The first free slot, or [`NIL`].
    free: u32,
    len: usize,
    tag: u32,
}

impl<T: Object> Default for DedupIndex<T> {
    fn default() -> Self {
        Self::new()
    }
}

/// Collects objects as [`insert`](DedupIndex::insert) with [`Placement::Append`] would: later
/// objects with an id already seen replace the earlier ones in place.
///
/// # Panics
///
/// Past the largest number of entries an index can address (about four billion), as a `Vec`
/// panics past its capacity.
impl<T: Object> FromIterator<T> for DedupIndex<T> {
    fn from_iter<I: IntoIterator<Item = T>>(objs: I) -> Self {
        let mut index = DedupIndex::new();
        index.extend(objs);
        index
    }
}

/// Inserts each object as [`insert`](DedupIndex::insert) with [`Placement::Append`] does.
///
/// # Panics
///
/// Past the largest number of entries an index can address, like `FromIterator`.
impl<T: Object> Extend<T> for DedupIndex<T> {
    fn extend<I: IntoIterator<Item = T>>(&mut self, objs: I) {
        let objs = objs.into_iter();
        self.reserve(objs.size_hint().0);
        for obj in objs {
            if let Err(err) = self.insert(obj, Placement::Append) {
                panic!("cannot extend the dedup index: {err}");
            }
        }
    }
}

impl<T: Object + fmt::Debug> fmt::Debug for DedupIndex<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// The partition of `obj` in `table`, the partition table of lane `lane`, created if needed
/// ([`PartitionTable::locate_or_insert`]). Lane 0 ([`Primary`]) has at most one partition,
/// number 0, which every object falls in: once it exists, it is the answer without asking
/// the index type.
#[inline]
fn locate_or_insert_in<T>(lane: usize, table: &mut dyn PartitionTable<T>, obj: &T) -> Option<u32> {
    if lane == 0 && !table.heads().is_empty() {
        return Some(0);
    }
    table.locate_or_insert(obj)
}

#[inline]
fn slot_has_id<T: Object, Q>(objs: &[Option<Arc<T>>], slot: u32, id: &Q) -> bool
where
    T::Id: Borrow<Q>,
    Q: Eq + ?Sized,
{
    matches!(objs.get(slot as usize), Some(Some(obj)) if match obj.id_ref() {
        Some(held) => held.borrow() == id,
        None => obj.id().borrow() == id,
    })
}

/// Whether the object in `slot` has the id of `obj`. The bulk append compares this way so
/// that an incoming object's id is built only when a probe meets a matching tag (rare while a
/// dump fills an empty index), not built up front and carried along with the object.
#[inline]
fn slot_has_id_of<T: Object>(objs: &[Option<Arc<T>>], slot: u32, obj: &T) -> bool {
    let Some(Some(held)) = objs.get(slot as usize) else {
        return false;
    };
    match (held.id_ref(), obj.id_ref()) {
        (Some(held), Some(id)) => held == id,
        (Some(held), None) => *held == obj.id(),
        (None, Some(id)) => held.id() == *id,
        (None, None) => held.id() == obj.id(),
    }
}

#[inline]
fn bit_of(slot: u32) -> (usize, u64) {
    ((slot / 64) as usize, 1u64 << (slot % 64))
}

impl<T: Object> DedupIndex<T> {
    /// Creates an empty index with only the [`Primary`] index type.
    pub fn new() -> Self {
        Self::with_capacity(0)
    }

    /// Creates an empty index with room for `capacity` entries.
    pub fn with_capacity(capacity: usize) -> Self {
        let objs = Vec::with_capacity(capacity);
        let tables: Vec<Box<dyn PartitionTable<T>>> =
            vec![Box::new(TypedTable::<Primary, ()>::new(Primary))];
        let mut links = Links::new(1);
        links.reserve(capacity);
        Self {
            objs,
            links,
            dirty: Vec::with_capacity(capacity.div_ceil(64)),
            hashes: Vec::with_capacity(capacity),
            touched: (0, 0),
            ids: IdTable::with_capacity(capacity),
            ids_built: 0,
            hasher: IdHasher::new(),
            tables,
            free: NIL,
            len: 0,
            tag: NEXT_TAG.fetch_add(1, Ordering::Relaxed),
        }
    }

    /// The handle of the [`Primary`] index type: every entry, in one list.
    pub fn primary(&self) -> IndexHandle<Primary> {
        IndexHandle::new(self.tag, 0)
    }

    /// Adds an index type and returns its handle. The entries already held are added to it in
    /// the order of the primary list (O(n)).
    pub fn add_index<X: IndexType<T>>(&mut self, index_type: X) -> IndexHandle<X> {
        let lane = self.tables.len();
        self.tables
            .push(Box::new(TypedTable::<X, X::Partition>::new(index_type)));
        self.links.add_lane();
        let mut raw = self.raw_primary();
        let lane_at = self.lane(lane);
        while let Some(slot) = raw.next_slot(&self.links) {
            let Some(Some(obj)) = self.objs.get(slot as usize) else {
                continue;
            };
            let table = &mut self.tables[lane];
            if let Some(p) = table.locate_or_insert(obj) {
                list::push_back(
                    &mut self.links,
                    lane_at,
                    &mut table.heads_mut()[p as usize],
                    slot,
                );
            }
        }
        IndexHandle::new(self.tag, lane as u32)
    }

    /// The index type behind a handle.
    pub fn index_type<X: IndexType<T>>(&self, index: IndexHandle<X>) -> Option<&X> {
        self.typed(index).map(|table| &table.index_type)
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the index holds no entry.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether an entry has this id (or a borrowed form of it, as `HashMap` takes keys).
    pub fn contains<Q>(&self, id: &Q) -> bool
    where
        T::Id: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.find_slot(id).is_some()
    }

    /// The object of the entry with this id (or a borrowed form of it: a `String` id is found
    /// by a `&str`).
    pub fn get<Q>(&self, id: &Q) -> Option<&Arc<T>>
    where
        T::Id: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let slot = self.find_slot(id)?;
        self.objs.get(slot as usize)?.as_ref()
    }

    /// The entry with this id (its object and dirty mark).
    pub fn get_entry<Q>(&self, id: &Q) -> Option<Entry<'_, T>>
    where
        T::Id: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.entry_at(self.find_slot(id)?)
    }

    /// The entry with this id, if the index type `index` tracks it.
    pub fn get_in<X: IndexType<T>>(
        &self,
        index: IndexHandle<X>,
        id: &T::Id,
    ) -> Option<Entry<'_, T>> {
        self.typed(index)?;
        let slot = self.find_slot(id)?;
        let lane = self.lane(index.lane as usize);
        if !self.links.get(lane.at(slot))?.is_tracked() {
            return None;
        }
        self.entry_at(slot)
    }

    /// The partition of index type `index` that holds the entry with this id.
    pub fn partition_of<X: IndexType<T>>(
        &self,
        index: IndexHandle<X>,
        id: &T::Id,
    ) -> Option<PartitionRef<'_, T, X::Partition>> {
        let table = self.typed(index)?;
        let obj = self.get(id)?;
        let key = table.index_type.partition(obj)?;
        self.partition(index, &key)
    }

    /// Whether the entry with this id is marked dirty (see [`mark_all`](Self::mark_all)).
    pub fn is_dirty(&self, id: &T::Id) -> Option<bool> {
        self.find_slot(id).map(|slot| self.dirty_bit(slot))
    }

    /// The held object equal to `obj`, if any: the interned copy.
    pub fn find_equal(&self, obj: &T) -> Option<&Arc<T>> {
        match obj.id_ref() {
            Some(id) => self.get(id),
            None => self.get(&obj.id()),
        }
        .filter(|held| ***held == *obj)
    }

    /// Returns the held object equal to `obj` if there is one, else `obj` itself. Nothing is
    /// added: this only shares an equal object that the index already holds.
    pub fn intern(&self, obj: Arc<T>) -> Arc<T> {
        match self.find_equal(&obj) {
            Some(held) => Arc::clone(held),
            None => obj,
        }
    }

    /// The objects in the order of the primary list.
    pub fn iter(&self) -> Iter<'_, T> {
        Iter::new(self, self.raw_primary())
    }

    /// The entries (object and dirty mark) in the order of the primary list.
    pub fn entries(&self) -> Entries<'_, T> {
        Entries::new(self, self.raw_primary())
    }

    /// The first object of the primary list.
    pub fn first(&self) -> Option<&Arc<T>> {
        self.iter().next()
    }

    /// The last object of the primary list.
    pub fn last(&self) -> Option<&Arc<T>> {
        self.iter().next_back()
    }

    /// The partition `key` of index type `index`, if it holds any entry.
    pub fn partition<X: IndexType<T>>(
        &self,
        index: IndexHandle<X>,
        key: &X::Partition,
    ) -> Option<PartitionRef<'_, T, X::Partition>> {
        let table = self.typed(index)?;
        let p = table.find_key(key)? as usize;
        let head = *table.typed_heads().get(p)?;
        let key = table.keys().get(p)?;
        (head.len > 0).then(|| PartitionRef::new(self, index.lane as usize, head, key))
    }

    /// The non-empty partitions of index type `index`, in no particular order. Empty for a
    /// handle of another index.
    pub fn partitions<X: IndexType<T>>(
        &self,
        index: IndexHandle<X>,
    ) -> PartitionIter<'_, T, X::Partition> {
        match self.typed(index) {
            Some(table) => {
                PartitionIter::new(self, index.lane as usize, table.keys(), table.typed_heads())
            }
            None => PartitionIter::new(self, index.lane as usize, &[], &[]),
        }
    }

    /// Adds `obj`, or updates the entry with the same id (see [`Placement`] for where).
    ///
    /// - No entry has its id: a new entry holds it ([`Change::Added`]).
    /// - The entry with its id holds an equal object: that shared object stays and is returned
    ///   ([`Change::Unchanged`]); `obj` is dropped.
    /// - The entry holds a different object: `obj` replaces it in place and the old one is
    ///   returned ([`Change::Replaced`]).
    ///
    /// Either way the entry's dirty mark is cleared. Fails, changing nothing, if the anchor of
    /// [`Placement::Before`] or [`Placement::After`] does not exist, or the index is full.
    pub fn insert(
        &mut self,
        obj: impl Into<Arc<T>>,
        placement: Placement<T::Id>,
    ) -> Result<Change<T>> {
        let obj: Arc<T> = obj.into();
        let anchor = match &placement {
            Placement::Before(id) | Placement::After(id) => {
                Some(self.find_slot(id).ok_or(Error::AnchorNotFound)?)
            }
            _ => None,
        };
        let owned_id;
        let id = match obj.id_ref() {
            Some(id) => id,
            None => {
                owned_id = obj.id();
                &owned_id
            }
        };
        let hash = self.hasher.hash_one(id);
        if self.ids.room() == 0 {
            self.grow_ids();
        }
        let objs = &self.objs;
        match self
            .ids
            .find_or_free(hash, |slot| slot_has_id(objs, slot, id))
        {
            Probe::Found(_, slot) => Ok(self.update(slot, obj, &placement, anchor)),
            Probe::Vacant(pos) => {
                let slot = self.next_slot()?;
                let pos = self.vacant(pos, hash)?;
                // Clone before writing the table: the atomic increment waits for earlier
                // stores.
                let held = Arc::clone(&obj);
                self.ids.insert_at(pos, hash, slot);
                self.alloc_slot(slot, held, hash);
                if self.ids.crowded() {
                    self.rehash_ids();
                }
                if matches!(placement, Placement::Append | Placement::AppendForce) {
                    // Appending a new entry needs no anchor: the direct path.
                    self.link_back(slot);
                } else {
                    self.link_new(slot, &obj, &placement, anchor);
                }
                Ok(Change::Added(obj))
            }
        }
    }

    /// Appends every object of `objs` in order, as [`insert`](Self::insert) with
    /// [`Placement::Append`] would, without handing back what each insert did. Returns how
    /// many entries were added or replaced.
    ///
    /// This is the fast path for loading a dump. Objects arrive by value: one equal to the
    /// held object only clears the entry's dirty mark and is dropped without ever being put
    /// in an `Arc`, and a new one is moved into its `Arc` and slot without a second handle
    /// (an `Arc` clone and drop are atomic operations, which stall each insert until its
    /// cache misses are served; without them the processor overlaps the misses of successive
    /// objects). Room for the objects the iterator announces (its lower size hint, minus the
    /// entries already held) is reserved first.
    ///
    /// Fails with [`Error::CapacityExceeded`] when the index is full; the objects before the
    /// one that failed stay added.
    pub fn append_all<I: IntoIterator<Item = T>>(&mut self, objs: I) -> Result<usize> {
        self.append_incoming(objs.into_iter().map(Incoming::Owned))
    }

    // Loader tuning for netmirror-platform: not part of the documented API.
    #[doc(hidden)]
    /// [`append_all`](Self::append_all) for objects already in their `Arc`, made elsewhere
    /// (on a thread that parses them, say, so the allocations are not this thread's work).
    /// A new object's `Arc` is kept as given; one equal to the held object is dropped.
    ///
    /// Fails with [`Error::CapacityExceeded`] when the index is full; the objects before the
    /// one that failed stay added.
    pub fn append_all_shared<I: IntoIterator<Item = Arc<T>>>(&mut self, objs: I) -> Result<usize> {
        self.append_incoming(objs.into_iter().map(Incoming::Shared))
    }

    fn append_incoming(&mut self, mut objs: impl Iterator<Item = Incoming<T>>) -> Result<usize> {
        let (lower, _) = objs.size_hint();
        self.reserve(lower.saturating_sub(self.len));
        let mut n_changed = 0;
        let mut looked_up: Vec<(Incoming<T>, u64)> = Vec::with_capacity(APPEND_BATCH);
        let mut batch: Vec<(Incoming<T>, u64)> = Vec::with_capacity(APPEND_BATCH);
        loop {
            // First look every id of a batch up (loads only, so the processor overlaps the
            // cache misses of the whole batch), then put the objects not found in their
            // `Arc`s, then add them. The allocator's lock is an atomic operation, which waits
            // for every outstanding miss: taken between lookups it would serialise them.
            // Only the hash of each id is kept: the id is built again where a probe meets a
            // matching tag ([`slot_has_id_of`]), which spares building, storing and moving it
            // for every object.
            looked_up.extend(objs.by_ref().take(APPEND_BATCH).map(|obj| {
                let hash = self.hash_of(obj.get());
                (obj, hash)
            }));
            // A loop of lookups alone: short, so many of them fit in the processor's window.
            // Each miss keeps where its object would go, so that adding it needs no second
            // probe while that place stays free ([`Self::append_one`]).
            let mut found = 0u64;
            let mut free = [None; APPEND_BATCH];
            let objs_now = &self.objs;
            for (i, (obj, hash)) in looked_up.iter().enumerate() {
                match self
                    .ids
                    .find_or_free(*hash, |slot| slot_has_id_of(objs_now, slot, obj.get()))
                {
                    Probe::Found(..) => found |= 1 << i,
                    Probe::Vacant(pos) => free[i] = pos,
                }
            }
            let built = self.ids_built;
            batch.extend(looked_up.drain(..).enumerate().map(|(i, (obj, hash))| {
                let obj = match obj {
                    Incoming::Owned(obj) if found & (1 << i) == 0 => {
                        Incoming::Shared(Arc::new(obj))
                    }
                    obj => obj,
                };
                (obj, hash)
            }));
            if batch.is_empty() {
                return Ok(n_changed);
            }
            for (i, (obj, hash)) in batch.drain(..).enumerate() {
                let free = free.get(i).copied().flatten().map(|pos| (pos, built));
                n_changed += usize::from(self.append_one(obj, hash, free)?);
            }
            // Between batches: a new hash makes the batch's hashes stale.
            if self.ids.crowded() {
                self.rehash_ids();
            }
        }
    }

    /// One object of [`append_all`](Self::append_all), with the hash of its id;
    /// true if it was added or replaced.
    ///
    /// `free` is where a lookup of this id (in the id table of that rebuild count) found no
    /// entry and would have put it. While the table is the same and that entry is still free,
    /// a probe now would end there too: the entries before it on the probe were taken then
    /// and an append takes entries without freeing any; and another object with this id
    /// added since, which a probe would find, took that very entry (the first free one of
    /// the same probe).
    #[inline]
    fn append_one(
        &mut self,
        obj: Incoming<T>,
        hash: u64,
        free: Option<(Pos, u32)>,
    ) -> Result<bool> {
        if self.ids.room() == 0 {
            self.grow_ids();
        }
        let objs = &self.objs;
        let probe = match free {
            Some((pos, built)) if built == self.ids_built && self.ids.is_free(pos) => {
                Probe::Vacant(Some(pos))
            }
            _ => self
                .ids
                .find_or_free(hash, |slot| slot_has_id_of(objs, slot, obj.get())),
        };
        match probe {
            Probe::Found(_, slot) => {
                if matches!(self.objs.get(slot as usize), Some(Some(held)) if **held == *obj.get())
                {
                    self.set_dirty(slot, false);
                    return Ok(false);
                }
                let change = self.update(slot, obj.into_arc(), &Placement::Append, None);
                Ok(change.is_changed())
            }
            Probe::Vacant(pos) => {
                let slot = self.next_slot()?;
                let pos = self.vacant(pos, hash)?;
                self.ids.insert_at(pos, hash, slot);
                self.alloc_slot(slot, obj.into_arc(), hash);
                self.link_back(slot);
                Ok(true)
            }
        }
    }

    /// Replaces the object of the entry with the same id as `obj`, keeping its position in
    /// every list (unless the new object falls in another partition of some index type, where
    /// it goes to the end). Returns [`Change::Replaced`] with the old object, or
    /// [`Change::Unchanged`] if the held object is equal. Fails with [`Error::NotFound`] if no
    /// entry has that id; then nothing is added.
    pub fn replace(&mut self, obj: impl Into<Arc<T>>) -> Result<Change<T>> {
        let obj: Arc<T> = obj.into();
        let slot = match obj.id_ref() {
            Some(id) => self.find_slot(id),
            None => self.find_slot(&obj.id()),
        }
        .ok_or(Error::NotFound)?;
        Ok(self.update(slot, obj, &Placement::Append, None))
    }

    /// Removes the entry with this id (or a borrowed form of it) and returns its object.
    pub fn remove<Q>(&mut self, id: &Q) -> Option<Arc<T>>
    where
        T::Id: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let hash = self.hasher.hash_one(id);
        let objs = &self.objs;
        let (pos, slot) = self.ids.find(hash, |slot| slot_has_id(objs, slot, id))?;
        self.ids.remove_at(pos);
        let obj = self.objs.get_mut(slot as usize)?.take()?;
        self.unlink_all(slot, &obj);
        self.free_slot(slot);
        Some(obj)
    }

    /// Removes every entry; index types and their handles stay.
    pub fn clear(&mut self) {
        self.objs.clear();
        self.links.clear();
        self.dirty.clear();
        self.hashes.clear();
        self.ids.clear();
        for table in &mut self.tables {
            table.clear();
        }
        self.free = NIL;
        self.len = 0;
    }

    /// Reserves room for `additional` more entries.
    pub fn reserve(&mut self, additional: usize) {
        let spare = self.objs.capacity() - self.objs.len();
        let free = self.objs.len() - self.len;
        let more = additional.saturating_sub(free);
        if more > spare {
            self.objs.reserve(more);
            self.links.reserve(more);
            self.dirty.reserve(more.div_ceil(64));
            self.hashes.reserve(more);
        }
        if self.ids.room() < additional {
            self.rebuild_ids(self.len + additional);
        }
    }

    // Loader tuning for netmirror-platform: not part of the documented API.
    #[doc(hidden)]
    /// Touches the reserved memory of the slots up to `ahead` past the last one in use (the
    /// slot array, the kept hashes and the links), at most `max` slots per call, so that the
    /// inserts that later take those slots do not stop for the kernel to map fresh pages.
    /// Returns how many slots it touched: 0 once that room is touched (or none is reserved).
    ///
    /// Meant for idle time: a loader that waits for the next objects can call it while it
    /// waits. It changes nothing visible; the memory was already reserved (by
    /// [`reserve`](Self::reserve) or by the growth of the index).
    pub fn touch_ahead(&mut self, ahead: usize, max: usize) -> usize {
        // A reallocation since the last call leaves the new room untouched.
        if self.touched.1 != self.objs.capacity() {
            self.touched = (self.objs.len(), self.objs.capacity());
        }
        let from = self.touched.0.max(self.objs.len());
        let to = (self.objs.len().saturating_add(ahead))
            .min(from.saturating_add(max))
            .min(self.objs.capacity());
        if to <= from {
            return 0;
        }
        list::touch_spare(&mut self.objs, from, to, || None);
        list::touch_spare(&mut self.hashes, from, to, || 0);
        self.links.touch_spare(from, to);
        self.touched.0 = to;
        to - from
    }

    /// Gives back memory the index does not need for its current slots.
    pub fn shrink_to_fit(&mut self) {
        self.objs.shrink_to_fit();
        self.links.shrink_to(self.objs.len());
        self.dirty.shrink_to_fit();
        self.hashes.shrink_to_fit();
        self.rebuild_ids(self.len);
    }

    /// Moves the entry with id `id` within its list of index type `index`. Other index types
    /// keep their order.
    ///
    /// Fails, changing nothing, with [`Error::UnknownIndex`], [`Error::NotFound`],
    /// [`Error::NotTracked`], [`Error::AnchorNotFound`] or [`Error::AnchorNotInPartition`].
    /// Moving an entry before or after itself does nothing.
    pub fn move_entry<X: IndexType<T>>(
        &mut self,
        index: IndexHandle<X>,
        id: &T::Id,
        to: Position<T::Id>,
    ) -> Result<()> {
        self.typed(index).ok_or(Error::UnknownIndex)?;
        let lane_idx = index.lane as usize;
        let lane = self.lane(lane_idx);
        let slot = self.find_slot(id).ok_or(Error::NotFound)?;
        let p = self
            .partition_number(lane_idx, slot)
            .ok_or(Error::NotTracked)?;
        let anchor = match &to {
            Position::Before(anchor_id) | Position::After(anchor_id) => {
                let anchor = self.find_slot(anchor_id).ok_or(Error::AnchorNotFound)?;
                if anchor == slot {
                    return Ok(());
                }
                if self.partition_number(lane_idx, anchor) != Some(p) {
                    return Err(Error::AnchorNotInPartition);
                }
                Some(anchor)
            }
            Position::Front | Position::Back => None,
        };
        let head = &mut self.tables[lane_idx].heads_mut()[p as usize];
        list::unlink(&mut self.links, lane, head, slot);
        match (to, anchor) {
            (Position::Before(_), Some(anchor)) => {
                list::link_before(&mut self.links, lane, head, slot, anchor)
            }
            (Position::After(_), Some(anchor)) => {
                list::link_after(&mut self.links, lane, head, slot, anchor)
            }
            (Position::Front, _) => list::push_front(&mut self.links, lane, head, slot),
            _ => list::push_back(&mut self.links, lane, head, slot),
        }
        Ok(())
    }

    /// A cursor on the first entry of the primary list, which can remove entries as it goes.
    pub fn cursor_front_mut(&mut self) -> CursorMut<'_, T> {
        let first = self.primary_head().first;
        CursorMut::new(self, 0, first)
    }

    /// A cursor on the first entry of partition `key` of index type `index`, which can remove
    /// entries as it goes. `None` if the partition holds no entry.
    pub fn cursor_mut<X: IndexType<T>>(
        &mut self,
        index: IndexHandle<X>,
        key: &X::Partition,
    ) -> Option<CursorMut<'_, T>> {
        let first = self.partition(index, key)?.first_slot();
        Some(CursorMut::new(self, index.lane as usize, first))
    }

    /// Marks every entry dirty. Re-adding an entry ([`insert`](Self::insert),
    /// [`replace`](Self::replace)) clears its mark; [`sweep`](Self::sweep) removes the rest.
    pub fn mark_all(&mut self) {
        self.dirty.fill(!0);
    }

    /// Clears every dirty mark.
    pub fn unmark_all(&mut self) {
        self.dirty.fill(0);
    }

    /// Marks dirty every entry that index type `index` tracks; returns how many.
    pub fn mark_index<X: IndexType<T>>(&mut self, index: IndexHandle<X>) -> Result<usize> {
        self.typed(index).ok_or(Error::UnknownIndex)?;
        let lane = index.lane as usize;
        if lane == 0 {
            self.mark_all();
            return Ok(self.len);
        }
        let heads: Vec<Head> = self.tables[lane].heads().to_vec();
        Ok(heads.iter().map(|head| self.mark_list(lane, *head)).sum())
    }

    /// Marks dirty every entry of partition `key` of index type `index`; returns how many
    /// (0 if the partition does not exist).
    pub fn mark_partition<X: IndexType<T>>(
        &mut self,
        index: IndexHandle<X>,
        key: &X::Partition,
    ) -> Result<usize> {
        let table = self.typed(index).ok_or(Error::UnknownIndex)?;
        let Some(p) = table.find_key(key) else {
            return Ok(0);
        };
        let head = table.typed_heads()[p as usize];
        Ok(self.mark_list(index.lane as usize, head))
    }

    /// Removes every dirty entry and returns their objects, in primary order.
    pub fn sweep(&mut self) -> Vec<Arc<T>> {
        let head = self.primary_head();
        self.sweep_list(0, head)
    }

    /// Removes every dirty entry that index type `index` tracks and returns their objects,
    /// partition by partition.
    pub fn sweep_index<X: IndexType<T>>(&mut self, index: IndexHandle<X>) -> Result<Vec<Arc<T>>> {
        self.typed(index).ok_or(Error::UnknownIndex)?;
        let lane = index.lane as usize;
        let mut removed = Vec::new();
        // From the last partition down: removing an emptied partition moves the last one,
        // which was already swept, into its place.
        for p in (0..self.tables[lane].heads().len()).rev() {
            let Some(head) = self.tables[lane].heads().get(p).copied() else {
                continue;
            };
            removed.extend(self.sweep_list(lane, head));
        }
        Ok(removed)
    }

    /// Removes every dirty entry of partition `key` of index type `index` and returns their
    /// objects, in list order.
    pub fn sweep_partition<X: IndexType<T>>(
        &mut self,
        index: IndexHandle<X>,
        key: &X::Partition,
    ) -> Result<Vec<Arc<T>>> {
        let table = self.typed(index).ok_or(Error::UnknownIndex)?;
        let Some(p) = table.find_key(key) else {
            return Ok(Vec::new());
        };
        let head = table.typed_heads()[p as usize];
        Ok(self.sweep_list(index.lane as usize, head))
    }

    // Internals.

    fn typed<X: IndexType<T>>(
        &self,
        index: IndexHandle<X>,
    ) -> Option<&TypedTable<X, X::Partition>> {
        if index.tag != self.tag {
            return None;
        }
        self.tables
            .get(index.lane as usize)?
            .as_any()
            .downcast_ref()
    }

    #[inline]
    pub(crate) fn lane(&self, lane: usize) -> Lane {
        Lane { lane }
    }

    fn primary_head(&self) -> Head {
        self.tables[0]
            .heads()
            .first()
            .copied()
            .unwrap_or(Head::EMPTY)
    }

    fn raw_primary(&self) -> RawIter {
        RawIter::new(self.lane(0), self.primary_head())
    }

    /// Rebuilds the id table with room for twice the entries, walking the slots in order.
    ///
    /// The table's own growth would rehash in bucket order, a random walk over the slots and
    /// their objects (at 1M entries, a quarter of all insert time); walking the slots in order
    /// reads their kept hashes (`hashes`) as one sequential array.
    #[cold]
    fn grow_ids(&mut self) {
        // A table at most half full has no room only because of tombstones: rebuild it at
        // the same size.
        let capacity = self.ids.capacity();
        if capacity >= 16 && self.len * 2 <= capacity {
            self.rebuild_ids(capacity);
        } else {
            self.rebuild_ids((self.len * 2).max(16));
        }
    }

    /// Rebuilds the id table with room for `capacity` entries (at least the current ones).
    fn rebuild_ids(&mut self, capacity: usize) {
        self.ids = IdTable::new();
        let mut ids = IdTable::with_capacity(capacity.max(self.len));
        if ids.short_hashes_suffice() && self.len == self.hashes.len() {
            // No free slot (as after a load): every kept hash is an entry's, and the objects
            // need not be read.
            for (slot, &short) in self.hashes.iter().enumerate() {
                ids.insert_unique(expand_short_hash(short), slot as u32);
            }
        } else if ids.short_hashes_suffice() {
            for (slot, (obj, &short)) in self.objs.iter().zip(&self.hashes).enumerate() {
                if obj.is_some() {
                    ids.insert_unique(expand_short_hash(short), slot as u32);
                }
            }
        } else {
            for (slot, obj) in self.objs.iter().enumerate() {
                if let Some(obj) = obj {
                    ids.insert_unique(self.hash_of(obj), slot as u32);
                }
            }
        }
        self.ids = ids;
        self.ids_built = self.ids_built.wrapping_add(1);
    }

    /// Changes the id hash and rebuilds the id table with it, for as long as the table reports
    /// its entries far from their home groups ([`IdTable::crowded`]) and the hasher has another
    /// hash to try ([`IdHasher::rehash`]): the process's hash seed clusters these ids. Reads
    /// every object once per try.
    #[cold]
    #[inline(never)]
    fn rehash_ids(&mut self) {
        while self.ids.crowded() && self.hasher.rehash() {
            tracing::debug!(
                entries = self.len,
                rehashes = self.hasher.rehashes(),
                mixed = self.hasher.is_mixed(),
                "dedup-index: the id hash clusters these ids; rebuilding the id table with another"
            );
            for slot in 0..self.objs.len() {
                let Some(Some(obj)) = self.objs.get(slot) else {
                    continue;
                };
                let short = short_hash(self.hash_of(obj));
                if let Some(kept) = self.hashes.get_mut(slot) {
                    *kept = short;
                }
            }
            self.rebuild_ids(self.ids.capacity());
        }
    }

    /// The slot a new entry takes: the first free one, or the next new one.
    #[inline]
    fn next_slot(&self) -> Result<u32> {
        if self.free != NIL {
            Ok(self.free)
        } else if self.objs.len() < MAX_SLOTS {
            Ok(self.objs.len() as u32)
        } else {
            Err(Error::CapacityExceeded { max: MAX_SLOTS })
        }
    }

    /// The position of the id table a new entry with `hash` takes, given what the probe found
    /// (`None`: no room, then the table grows first).
    #[inline]
    fn vacant(&mut self, pos: Option<Pos>, hash: u64) -> Result<Pos> {
        if let Some(pos) = pos {
            return Ok(pos);
        }
        self.grow_ids();
        match self.ids.find_or_free(hash, |_| false) {
            Probe::Vacant(Some(pos)) => Ok(pos),
            Probe::Vacant(None) | Probe::Found(..) => {
                Err(Error::CapacityExceeded { max: MAX_SLOTS })
            }
        }
    }

    /// The hash of the id of `obj`, as [`find_slot`](Self::find_slot) hashes that id.
    #[inline]
    fn hash_of(&self, obj: &T) -> u64 {
        match obj.id_ref() {
            Some(id) => self.hasher.hash_one(id),
            None => {
                let hash = self.hasher.hash_obj(obj);
                debug_assert_eq!(hash, self.hasher.hash_one(&obj.id()), "Object::hash_id");
                hash
            }
        }
    }

    #[inline]
    fn find_slot<Q>(&self, id: &Q) -> Option<u32>
    where
        T::Id: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let hash = self.hasher.hash_one(id);
        let objs = &self.objs;
        self.ids
            .find(hash, |slot| slot_has_id(objs, slot, id))
            .map(|(_, slot)| slot)
    }

    pub(crate) fn entry_at(&self, slot: u32) -> Option<Entry<'_, T>> {
        let obj = self.objs.get(slot as usize)?.as_ref()?;
        Some(Entry::new(obj, self.dirty_bit(slot)))
    }

    #[inline]
    pub(crate) fn dirty_bit(&self, slot: u32) -> bool {
        let (word, bit) = bit_of(slot);
        self.dirty.get(word).is_some_and(|w| w & bit != 0)
    }

    #[inline]
    fn set_dirty(&mut self, slot: u32, dirty: bool) {
        let (word, bit) = bit_of(slot);
        if let Some(w) = self.dirty.get_mut(word) {
            if dirty {
                *w |= bit;
            } else {
                *w &= !bit;
            }
        }
    }

    /// The partition number of `slot` in `lane`, if the lane tracks it.
    fn partition_number(&self, lane: usize, slot: u32) -> Option<u32> {
        if !self.links.get(self.lane(lane).at(slot))?.is_tracked() {
            return None;
        }
        let obj = self.objs.get(slot as usize)?.as_ref()?;
        match self.tables[lane].locate(obj) {
            Located::Found(p) => Some(p),
            Located::Untracked | Located::Missing => None,
        }
    }

    /// Fills slot `slot` (the first free slot, or the next new one) with `obj`.
    fn alloc_slot(&mut self, slot: u32, obj: Arc<T>, hash: u64) {
        if slot == self.free {
            self.free = self.links[self.lane(0).at(slot)].next;
            for lane in 0..self.tables.len() {
                let at = self.lane(lane).at(slot);
                self.links[at] = Link::UNTRACKED;
            }
            self.objs[slot as usize] = Some(obj);
            if let Some(short) = self.hashes.get_mut(slot as usize) {
                *short = short_hash(hash);
            }
        } else {
            self.objs.push(Some(obj));
            self.hashes.push(short_hash(hash));
            self.links.ensure(self.objs.len());
            if self.dirty.len() * 64 < self.objs.len() {
                self.dirty.push(0);
            }
        }
        self.set_dirty(slot, false);
        self.len += 1;
    }

    /// Puts slot `slot` (whose object was taken and whose lanes are unlinked, so untracked) on
    /// the free list.
    fn free_slot(&mut self, slot: u32) {
        let at = self.lane(0).at(slot);
        if let Some(link) = self.links.get_mut(at) {
            *link = Link {
                prev: list::UNTRACKED,
                next: self.free,
            };
        }
        self.free = slot;
        self.len -= 1;
    }

    /// The slot of `anchor` if it is in partition `p` of `lane` and is not `slot` itself.
    fn anchor_in(&self, lane: usize, p: u32, anchor: Option<u32>, slot: u32) -> Option<u32> {
        let anchor = anchor.filter(|&anchor| anchor != slot)?;
        (self.partition_number(lane, anchor) == Some(p)).then_some(anchor)
    }

    /// Links slot `slot` (untracked everywhere) at the end of its list in every lane, reading
    /// its object from the slot.
    #[inline]
    fn link_back(&mut self, slot: u32) {
        let Some(Some(obj)) = self.objs.get(slot as usize) else {
            return;
        };
        for (lane_idx, table) in self.tables.iter_mut().enumerate() {
            let Some(p) = locate_or_insert_in(lane_idx, table.as_mut(), obj) else {
                continue;
            };
            let lane = Lane { lane: lane_idx };
            if let Some(head) = table.heads_mut().get_mut(p as usize) {
                list::push_back(&mut self.links, lane, head, slot);
            }
        }
    }

    /// Links slot `slot` (untracked everywhere) holding `obj` into every lane.
    fn link_new(&mut self, slot: u32, obj: &T, placement: &Placement<T::Id>, anchor: Option<u32>) {
        for lane_idx in 0..self.tables.len() {
            let Some(p) = locate_or_insert_in(lane_idx, self.tables[lane_idx].as_mut(), obj) else {
                continue;
            };
            self.place(lane_idx, p, slot, placement, anchor);
        }
    }

    /// Links slot `slot` (untracked in `lane_idx`) into partition `p` as `placement` says.
    fn place(
        &mut self,
        lane_idx: usize,
        p: u32,
        slot: u32,
        placement: &Placement<T::Id>,
        anchor: Option<u32>,
    ) {
        let lane = self.lane(lane_idx);
        let anchor = match placement {
            Placement::Before(_) | Placement::After(_) => self.anchor_in(lane_idx, p, anchor, slot),
            _ => None,
        };
        let head = &mut self.tables[lane_idx].heads_mut()[p as usize];
        match (placement, anchor) {
            (Placement::Before(_), Some(anchor)) => {
                list::link_before(&mut self.links, lane, head, slot, anchor)
            }
            (Placement::After(_), Some(anchor)) => {
                list::link_after(&mut self.links, lane, head, slot, anchor)
            }
            (Placement::Prepend | Placement::PrependForce, _) => {
                list::push_front(&mut self.links, lane, head, slot)
            }
            _ => list::push_back(&mut self.links, lane, head, slot),
        }
    }

    /// Re-adds `obj` to the existing entry in slot `slot`.
    fn update(
        &mut self,
        slot: u32,
        obj: Arc<T>,
        placement: &Placement<T::Id>,
        anchor: Option<u32>,
    ) -> Change<T> {
        let Some(Some(old)) = self.objs.get(slot as usize).cloned() else {
            // The id table only names occupied slots.
            return Change::Unchanged(obj);
        };
        self.set_dirty(slot, false);
        let force = matches!(placement, Placement::AppendForce | Placement::PrependForce);
        if *old == *obj {
            if force {
                for lane_idx in 0..self.tables.len() {
                    if let Some(p) = self.partition_number(lane_idx, slot) {
                        self.relink(lane_idx, p, slot, placement);
                    }
                }
            }
            return Change::Unchanged(old);
        }
        for lane_idx in 0..self.tables.len() {
            let old_p = self.partition_number(lane_idx, slot);
            let new_p = match self.tables[lane_idx].locate(&obj) {
                Located::Found(p) => Some(p),
                Located::Untracked | Located::Missing => None,
            };
            match (old_p, new_p) {
                (Some(p), Some(q)) if p == q => {
                    if force {
                        self.relink(lane_idx, p, slot, placement);
                    }
                }
                _ => {
                    if let Some(p) = old_p {
                        self.unlink_from(lane_idx, p, slot);
                    }
                    if let Some(q) = self.tables[lane_idx].locate_or_insert(&obj) {
                        self.place(lane_idx, q, slot, placement, anchor);
                    }
                }
            }
        }
        self.objs[slot as usize] = Some(Arc::clone(&obj));
        Change::Replaced { old, new: obj }
    }

    /// Moves slot `slot` to the front (`PrependForce`) or end of its partition `p` of a lane.
    fn relink(&mut self, lane_idx: usize, p: u32, slot: u32, placement: &Placement<T::Id>) {
        let lane = self.lane(lane_idx);
        let head = &mut self.tables[lane_idx].heads_mut()[p as usize];
        list::unlink(&mut self.links, lane, head, slot);
        if matches!(placement, Placement::PrependForce) {
            list::push_front(&mut self.links, lane, head, slot);
        } else {
            list::push_back(&mut self.links, lane, head, slot);
        }
    }

    /// Unlinks slot `slot` from partition `p` of a lane, dropping the partition if emptied.
    fn unlink_from(&mut self, lane_idx: usize, p: u32, slot: u32) {
        let lane = self.lane(lane_idx);
        let table = &mut self.tables[lane_idx];
        let head = &mut table.heads_mut()[p as usize];
        list::unlink(&mut self.links, lane, head, slot);
        if head.len == 0 {
            table.remove(p);
        }
    }

    /// Unlinks slot `slot`, which held `obj`, from every lane. Each index type finds the
    /// partition from the object and reads the slot's link only in a lane that tracks it;
    /// lane 0 ([`Primary`]) has one partition, number 0, that tracks every entry, so it is
    /// unlinked without asking its index type.
    #[inline]
    fn unlink_all(&mut self, slot: u32, obj: &T) {
        if let Some(primary) = self.tables.first_mut() {
            let lane = self.links.lane_mut(0);
            if let Some(&link) = lane.get(slot as usize)
                && link.is_tracked()
                && let Some(head) = primary.heads_mut().first_mut()
            {
                list::unlink_in(lane, head, slot, link);
                if head.len == 0 {
                    primary.remove(0);
                }
            }
        }
        for (lane_idx, table) in self.tables.iter_mut().enumerate().skip(1) {
            if !table.unlink(self.links.lane_mut(lane_idx), slot, obj) {
                tracing::warn!(
                    lane = lane_idx,
                    slot,
                    "index type gave another partition for the same object"
                );
            }
        }
    }

    /// Removes the entry in slot `slot` and returns its object.
    pub(crate) fn remove_slot(&mut self, slot: u32) -> Option<Arc<T>> {
        let obj = self.objs.get_mut(slot as usize)?.take()?;
        // The id table is searched for the slot number, so the kept short hash finds it as
        // well as the id's full hash would, without building and hashing the id.
        let hash = match self.hashes.get(slot as usize) {
            Some(&short) if self.ids.short_hashes_suffice() => expand_short_hash(short),
            _ => self.hash_of(&obj),
        };
        if let Some((pos, _)) = self.ids.find(hash, |s| s == slot) {
            self.ids.remove_at(pos);
        }
        self.unlink_all(slot, &obj);
        self.free_slot(slot);
        Some(obj)
    }

    fn mark_list(&mut self, lane: usize, head: Head) -> usize {
        let mut raw = RawIter::new(self.lane(lane), head);
        let mut n_marked = 0;
        while let Some(slot) = raw.next_slot(&self.links) {
            let (word, bit) = bit_of(slot);
            if let Some(w) = self.dirty.get_mut(word) {
                *w |= bit;
                n_marked += 1;
            }
        }
        n_marked
    }

    fn sweep_list(&mut self, lane: usize, head: Head) -> Vec<Arc<T>> {
        let mut raw = RawIter::new(self.lane(lane), head);
        let mut removed = Vec::new();
        while let Some(slot) = raw.next_slot(&self.links) {
            if self.dirty_bit(slot) {
                removed.extend(self.remove_slot(slot));
            }
        }
        removed
    }
}

#[cfg(test)]
impl<T: Object> DedupIndex<T> {
    /// The index with its ids hashed by `hasher` (empty, as new): for tests that need a seed
    /// known to cluster.
    pub(crate) fn with_hasher(hasher: IdHasher) -> Self {
        Self {
            hasher,
            ..Self::new()
        }
    }

    /// How many times the id hash changed because it clustered, and whether the id table now
    /// has its entries far from their home groups.
    pub(crate) fn id_hash_state(&self) -> (u8, bool) {
        (self.hasher.rehashes(), self.ids.crowded())
    }

    /// Checks every internal invariant; returns the first one broken.
    pub(crate) fn validate(&self) -> std::result::Result<(), String> {
        let stride = self.tables.len();
        if self.links.len() < self.objs.len() {
            return Err("slots without links".into());
        }
        for lane_idx in 0..stride {
            let lane = self.lane(lane_idx);
            if (self.objs.len()..self.links.len())
                .any(|slot| self.links[lane.at(slot as u32)] != Link::UNTRACKED)
            {
                return Err(format!("lane {lane_idx} links a slot past the end"));
            }
        }
        let occupied = self.objs.iter().filter(|obj| obj.is_some()).count();
        if occupied != self.len || self.ids.len() != self.len {
            return Err(format!(
                "len {} occupied {occupied} ids {}",
                self.len,
                self.ids.len()
            ));
        }
        for (slot, obj) in self.objs.iter().enumerate() {
            let Some(obj) = obj else { continue };
            if self.find_slot(&obj.id()) != Some(slot as u32) {
                return Err(format!("slot {slot} not found by its id"));
            }
            if self.hashes.get(slot).copied() != Some(short_hash(self.hasher.hash_one(&obj.id()))) {
                return Err(format!("slot {slot} keeps a wrong hash"));
            }
            for lane_idx in 0..stride {
                let tracked = self.links[self.lane(lane_idx).at(slot as u32)].is_tracked();
                let located = self.tables[lane_idx].locate(obj);
                if tracked != matches!(located, Located::Found(_)) {
                    return Err(format!(
                        "slot {slot} lane {lane_idx}: tracked {tracked}, located {located:?}"
                    ));
                }
            }
        }
        let mut free = self.free;
        let mut n_free = 0;
        while free != NIL {
            if self.objs.get(free as usize).is_none_or(|obj| obj.is_some()) {
                return Err(format!("free list names slot {free}"));
            }
            free = self.links[self.lane(0).at(free)].next;
            n_free += 1;
        }
        if n_free + self.len != self.objs.len() {
            return Err("free list misses slots".into());
        }
        for lane_idx in 0..stride {
            let lane = self.lane(lane_idx);
            let mut n_linked = 0;
            for (p, head) in self.tables[lane_idx].heads().iter().enumerate() {
                if head.len == 0 {
                    return Err(format!("lane {lane_idx} keeps empty partition {p}"));
                }
                let mut prev = NIL;
                let mut slot = head.first;
                let mut n = 0;
                while slot != NIL {
                    let link = self.links[lane.at(slot)];
                    let obj = self.objs[slot as usize]
                        .as_ref()
                        .ok_or("list names a free slot")?;
                    if link.prev != prev
                        || self.tables[lane_idx].locate(obj) != Located::Found(p as u32)
                    {
                        return Err(format!(
                            "lane {lane_idx} partition {p}: bad link at slot {slot}"
                        ));
                    }
                    prev = slot;
                    slot = link.next;
                    n += 1;
                    if n > head.len {
                        return Err(format!(
                            "lane {lane_idx} partition {p} is longer than its len"
                        ));
                    }
                }
                if prev != head.last || n != head.len {
                    return Err(format!("lane {lane_idx} partition {p}: last or len wrong"));
                }
                n_linked += n;
            }
            let n_tracked = (0..self.objs.len())
                .filter(|&slot| self.links[self.lane(lane_idx).at(slot as u32)].is_tracked())
                .count();
            if n_linked as usize != n_tracked {
                return Err(format!(
                    "lane {lane_idx}: {n_linked} linked, {n_tracked} tracked"
                ));
            }
        }
        Ok(())
    }
}
