//! The traits a user implements: [`Object`] for what the index stores, [`IndexType`] for each
//! way of grouping it, and [`IndexHandle`], the typed name of one index type inside one index.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::marker::PhantomData;

/// An immutable value stored in a [`DedupIndex`](crate::DedupIndex).
///
/// The *id* says which objects are "the same entry" (a route's table, destination, prefix
/// length, metric, ...); the full equality (`Eq`) compares every field and decides whether a new
/// object is only a copy of the held one (then the held, shared object is kept) or an update
/// (then it replaces the held one, keeping its position).
///
/// Contract: `a == b` must imply `a.id() == b.id()`, and `id()` must be a pure function of the
/// object. Breaking it is a logic error: the index stays memory-safe but may answer wrongly.
///
/// An object that holds its id as a field (a `String` name, say) can also lend it with
/// [`id_ref`](Self::id_ref), so that inserts and lookups need not build (allocate) a new id:
///
/// ```
/// use netmirror_dedup_index::{DedupIndex, Object, Placement};
///
/// #[derive(PartialEq, Eq)]
/// struct Device {
///     name: String,
///     mtu: u32,
/// }
///
/// impl Object for Device {
///     type Id = String;
///     fn id(&self) -> String {
///         self.name.clone()
///     }
///     fn id_ref(&self) -> Option<&String> {
///         Some(&self.name)
///     }
/// }
///
/// let mut devices = DedupIndex::new();
/// devices.insert(Device { name: "eth0".into(), mtu: 1500 }, Placement::Append)?;
/// assert_eq!(devices.get("eth0").map(|device| device.mtu), Some(1500));
/// # Ok::<(), netmirror_dedup_index::Error>(())
/// ```
pub trait Object: Eq {
    /// The identity of an entry. Usually a small `Copy` struct built from a few fields.
    type Id: Hash + Eq;

    /// Returns the identity of this object.
    fn id(&self) -> Self::Id;

    /// The identity of this object by reference, when the object holds it: then the index
    /// compares and hashes it in place instead of calling [`id`](Self::id), which builds a
    /// new one. `None` (the default) means "call `id`".
    ///
    /// Contract: when it returns `Some(id)`, `id` equals what [`id`](Self::id) returns.
    fn id_ref(&self) -> Option<&Self::Id> {
        None
    }

    /// Feeds the identity of this object to `state`, as `self.id().hash(state)` does (the
    /// default), but without building the id where the object can write it from its own
    /// fields: the index hashes the id of every object it adds. Used only when
    /// [`id_ref`](Self::id_ref) returns `None`.
    ///
    /// Contract: the same writes to `state` as [`Hash::hash`] of [`id`](Self::id).
    fn hash_id<H: Hasher>(&self, state: &mut H) {
        self.id().hash(state);
    }
}

/// One way of grouping the objects of a [`DedupIndex`](crate::DedupIndex) into ordered lists.
///
/// Every object of the index is in exactly one list (a *partition*) of each index type that
/// tracks it: [`partition`](Self::partition) returns its partition key, or `None` when this
/// index type does not track the object (for example an index of default routes skips every
/// other route). An index type with a single list uses `()` as its key.
///
/// All index types of one index share its identity ([`Object::id`]), so an entry can be looked
/// up by id in any of them. `partition` must be a pure function of the object (objects never
/// change), otherwise the index may give wrong answers (never undefined behaviour).
///
/// ```
/// use netmirror_dedup_index::IndexType;
///
/// # struct Route { ifindex: u32, plen: u8 }
/// /// Routes by outgoing interface; routes without one are not tracked.
/// struct ByIfindex;
///
/// impl IndexType<Route> for ByIfindex {
///     type Partition = u32;
///     fn partition(&self, route: &Route) -> Option<u32> {
///         (route.ifindex != 0).then_some(route.ifindex)
///     }
/// }
/// ```
pub trait IndexType<T>: Send + Sync + 'static {
    /// The key of a partition (one ordered list) of this index type.
    type Partition: Hash + Eq + Send + Sync + 'static;

    /// Returns the partition `obj` belongs to, or `None` if this index type does not track it.
    fn partition(&self, obj: &T) -> Option<Self::Partition>;

    /// A small number for `key`, if it has one: the partition is then found in an array by
    /// that number instead of by hashing the key, which pays for small integer keys such as
    /// interface indexes or bucket numbers. Numbers from [`DENSE_KEYS`] up are ignored.
    ///
    /// Distinct keys should give distinct numbers; if two share one, the index stays correct
    /// (it checks the key it finds) and only loses the shortcut for one of them.
    #[doc(hidden)]
    fn dense_key(&self, _key: &Self::Partition) -> Option<usize> {
        None
    }
}

/// The numbers [`IndexType::dense_key`] may give: below 65536 (an array of that many `u32` is
/// 256 KiB; it grows only as far as the largest number seen).
#[doc(hidden)]
pub const DENSE_KEYS: usize = 1 << 16;

/// The index type every [`DedupIndex`](crate::DedupIndex) has: all objects in one list, in the
/// order of the index. Its handle is [`DedupIndex::primary`](crate::DedupIndex::primary).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Primary;

impl<T> IndexType<T> for Primary {
    type Partition = ();

    fn partition(&self, _obj: &T) -> Option<()> {
        Some(())
    }
}

/// The typed name of one index type inside one [`DedupIndex`](crate::DedupIndex), returned by
/// [`DedupIndex::add_index`](crate::DedupIndex::add_index) and
/// [`DedupIndex::primary`](crate::DedupIndex::primary).
///
/// It is small and `Copy`. Used with another dedup index it finds nothing (lookups give `None`,
/// changes give [`Error::UnknownIndex`](crate::Error::UnknownIndex)).
pub struct IndexHandle<X> {
    pub(crate) tag: u32,
    pub(crate) lane: u32,
    marker: PhantomData<fn() -> X>,
}

impl<X> IndexHandle<X> {
    pub(crate) fn new(tag: u32, lane: u32) -> Self {
        Self {
            tag,
            lane,
            marker: PhantomData,
        }
    }
}

impl<X> Clone for IndexHandle<X> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<X> Copy for IndexHandle<X> {}

impl<X> PartialEq for IndexHandle<X> {
    fn eq(&self, other: &Self) -> bool {
        self.tag == other.tag && self.lane == other.lane
    }
}

impl<X> Eq for IndexHandle<X> {}

impl<X> Hash for IndexHandle<X> {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.tag.hash(state);
        self.lane.hash(state);
    }
}

impl<X> fmt::Debug for IndexHandle<X> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IndexHandle")
            .field("index", &self.tag)
            .field("lane", &self.lane)
            .field("type", &std::any::type_name::<X>())
            .finish()
    }
}
