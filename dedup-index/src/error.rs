//! Errors produced by the dedup index.

/// Everything that can go wrong when changing a [`DedupIndex`](crate::DedupIndex).
///
/// Lookups never fail: a missing entry is an `Option`. Errors only come from changes whose
/// precondition does not hold; a failed change leaves the index as it was.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The index already holds the largest number of entries it can address.
    #[error("the dedup index is full ({max} entries)")]
    CapacityExceeded {
        /// The largest number of entries an index can hold.
        max: usize,
    },
    /// No entry has the id that was asked for.
    #[error("no entry has that id")]
    NotFound,
    /// No entry has the id of the anchor of a [`Placement::Before`](crate::Placement::Before),
    /// [`Placement::After`](crate::Placement::After), [`Position::Before`](crate::Position::Before)
    /// or [`Position::After`](crate::Position::After).
    #[error("no entry has the anchor's id")]
    AnchorNotFound,
    /// The anchor of a move is not in the same partition of that index type as the entry.
    #[error("the anchor is not in the same partition as the entry")]
    AnchorNotInPartition,
    /// The entry exists, but the index type does not track it.
    #[error("the entry is not tracked by this index type")]
    NotTracked,
    /// The [`IndexHandle`](crate::IndexHandle) was made by another dedup index.
    #[error("the index handle belongs to another dedup index")]
    UnknownIndex,
}

/// A `Result` whose error is this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
