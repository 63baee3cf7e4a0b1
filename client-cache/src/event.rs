//! What a cache tells its user, batch after batch.

use std::sync::Arc;

use crate::{Value, error::CallError, object::Object};

/// One change of the cache, delivered once the cache is consistent.
///
/// Within one batch, events come in this order: every removal (objects, then interfaces), then
/// every property change (in the order the service sent them), then every addition (objects,
/// then interfaces), then [`Event::Loaded`] if the batch completed a load. The cache's state,
/// while the events of a batch are handed out, is the state after the whole batch.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Event {
    /// An object is no longer visible: it was removed, or its service went away (or restarted).
    /// Carries the object as it last was.
    Removed {
        /// The object's path.
        path: Arc<str>,
        /// The object as it was when removed.
        object: Box<Object>,
    },
    /// A visible object lost an interface (the object stays).
    InterfaceRemoved {
        /// The object's path.
        path: Arc<str>,
        /// The interface that went away.
        interface: Arc<str>,
    },
    /// A property of a visible object changed.
    PropertyChanged {
        /// The object's path.
        path: Arc<str>,
        /// The property's interface.
        interface: Arc<str>,
        /// The property's name.
        property: Arc<str>,
        /// The value before.
        old: Value,
        /// The value after.
        new: Value,
    },
    /// The fetched data of a visible object (e.g. a NetworkManager profile's settings after its
    /// `Updated` signal) was refreshed.
    Refetched {
        /// The object's path.
        path: Arc<str>,
        /// The data before.
        old: Option<Value>,
        /// The data after.
        new: Option<Value>,
    },
    /// An object became visible: it and everything it references are in the cache. Look it up
    /// with [`ObjectCache::object`](crate::ObjectCache::object): it is there when this event is
    /// handed out. (A consumer that lags behind the cache is not told of an object that was
    /// added and removed again meanwhile: neither its addition nor anything after, up to its
    /// removal.)
    Added {
        /// The object's path.
        path: Arc<str>,
    },
    /// A visible object gained an interface.
    InterfaceAdded {
        /// The object's path.
        path: Arc<str>,
        /// The new interface.
        interface: Arc<str>,
    },
    /// A (re)load from the service's current owner is complete.
    Loaded,
    /// A (re)load cannot finish: a call it needs failed (no reply within the deadline, an error
    /// reply, a reply of the wrong signature). The cache stays as it is (empty after an owner
    /// change) until the service's owner changes again.
    LoadFailed(Box<CallError>),
    /// The consumer fell behind: its queue of events was full (see
    /// [`CacheBuilder::max_queued_events`](crate::CacheBuilder::max_queued_events)), and the
    /// cache kept applying the service's changes without queueing their events. What follows,
    /// up to [`Event::Resynced`], are the changes from the consumer's last state (after the
    /// events it was handed before this one) to the cache's: removals, owner, property changes
    /// and refetches, additions (then [`Event::Loaded`] or [`Event::LoadFailed`] if a load
    /// ended meanwhile). Nothing is lost; intermediate states are skipped.
    Overrun {
        /// How many events were not queued.
        missed: u64,
    },
    /// A reconcile (a second `GetManagedObjects`, made when a signal named an object the
    /// cache did not know, or asked for with
    /// [`ObjectCache::reconcile`](crate::ObjectCache::reconcile)) is complete: the events
    /// before it (after its [`Event::Loaded`]) brought the cache back to the service's state.
    /// `differences` above 0 means messages had been lost (a bus drops messages for a
    /// connection whose queue is over its limit).
    Reconciled {
        /// How many differences the reconcile found.
        differences: usize,
    },
    /// The end of the changes after an [`Event::Overrun`]: the consumer's view equals the
    /// cache again.
    Resynced {
        /// How many changes the resync found.
        changes: usize,
    },
    /// The service's owner changed: `None` when the service left the bus. The removals of all
    /// objects precede this event; a reload follows when there is a new owner.
    OwnerChanged {
        /// The new unique name, if any.
        owner: Option<Arc<str>>,
    },
}

impl Event {
    /// The path of the object this event is about, if any.
    pub fn path(&self) -> Option<&str> {
        match self {
            Self::Removed { path, .. }
            | Self::InterfaceRemoved { path, .. }
            | Self::PropertyChanged { path, .. }
            | Self::Refetched { path, .. }
            | Self::Added { path }
            | Self::InterfaceAdded { path, .. } => Some(path),
            Self::Loaded
            | Self::OwnerChanged { .. }
            | Self::LoadFailed(_)
            | Self::Overrun { .. }
            | Self::Resynced { .. }
            | Self::Reconciled { .. } => None,
        }
    }
}
