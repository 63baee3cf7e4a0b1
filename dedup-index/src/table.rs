//! The id table: slot numbers found by the hash of their object's id, in cache-line groups.
//!
//! An open-addressing table of `u32` slot numbers, in groups of [`GROUP`] entries that fill half
//! a 64-byte cache line: the entries' 8-bit hash tags first, then their slot numbers. The tags
//! of a group are compared all at once, as one `u64` (SWAR: SIMD within a register). A probe
//! reads one line to learn both which entries may match and their slot numbers, and an insert
//! writes the line it has just read. (A table with its control bytes apart from its entries,
//! as `hashbrown`'s, touches two lines per probe; at a million entries both miss the cache.)
//!
//! The table stores no full hash: growing it re-inserts every entry, which the caller does by
//! walking its slots in memory order with 32 bits of each hash it keeps beside them
//! ([`short_hash`], [`IdTable::insert_unique`]). Probing is linear over groups and
//! stops at the first group with an empty entry, as in a Swiss table; a removal leaves a
//! tombstone only in a group without an empty entry, so no probe ever stops too early.

/// Entries per group: six tags (in 8 bytes) and six slot numbers (24 bytes).
pub(crate) const GROUP: usize = 6;

/// The tag of an entry never used since the last rebuild: a probe stops at its group.
const EMPTY: u8 = 0;
/// The tag of a removed entry: free for an insert, but a probe goes past its group.
const DELETED: u8 = 1;

/// The lowest bit of every byte.
const LSB: u64 = u64::MAX / 0xff;
/// The low seven bits of every byte.
const LOW7: u64 = LSB * 0x7f;
/// The high bit of every byte that holds a tag (the first [`GROUP`] bytes).
const HIGH: u64 = (LSB * 0x80) & ((1 << (8 * GROUP)) - 1);

/// Half a cache line of the table; tag bytes past [`GROUP`] are unused.
#[derive(Debug, Clone, Copy)]
#[repr(C, align(32))]
struct Group {
    tags: [u8; 8],
    slots: [u32; GROUP],
}

const _: () = assert!(size_of::<Group>() == 32, "two groups to a cache line");

#[cfg(test)]
mod tests;

impl Group {
    const EMPTY: Group = Group {
        tags: [EMPTY; 8],
        slots: [0; GROUP],
    };

    /// The entries whose tag is `tag`: the high bit of their byte set, nothing else.
    ///
    /// A byte of `x` is zero exactly when adding 0x7f to its low seven bits leaves its high
    /// bit clear and its own high bit is clear; no carry crosses bytes.
    #[inline]
    fn matching(&self, tag: u8) -> Matches {
        let x = u64::from_le_bytes(self.tags) ^ (LSB * u64::from(tag));
        Matches(!(((x & LOW7) + LOW7) | x) & HIGH)
    }

    #[inline]
    fn has_empty(&self) -> bool {
        self.matching(EMPTY).0 != 0
    }
}

/// Entries of one group, as the high bits of their tag bytes.
#[derive(Debug, Clone, Copy)]
struct Matches(u64);

impl Iterator for Matches {
    type Item = usize;

    #[inline]
    fn next(&mut self) -> Option<usize> {
        if self.0 == 0 {
            return None;
        }
        let entry = self.0.trailing_zeros() as usize / 8;
        self.0 &= self.0 - 1;
        Some(entry)
    }
}

/// The tag stored for `hash`: its top 8 bits, moved off the two reserved values.
#[inline]
fn tag_of(hash: u64) -> u8 {
    ((hash >> 56) as u8).max(2)
}

/// The bits of a hash that the table reads while it has at most [`SHORT_GROUPS`] groups (the
/// tag and the home group), in 32 bits: what the index keeps per slot to rebuild the table.
#[inline]
pub(crate) fn short_hash(hash: u64) -> u32 {
    (((hash >> 56) as u32) << 24) | (hash as u32 & 0x00ff_ffff)
}

/// A hash that [`short_hash`] maps to `short`: it has the same tag and, in a table of at most
/// [`SHORT_GROUPS`] groups, the same home group as every hash `short` came from.
#[inline]
pub(crate) fn expand_short_hash(short: u32) -> u64 {
    (u64::from(short >> 24) << 56) | u64::from(short & 0x00ff_ffff)
}

/// The most groups a table may have for [`short_hash`] to place entries: 2^24 (88 million
/// entries).
const SHORT_GROUPS: usize = 1 << 24;

/// How many groups past their home group the entries inserted since the last rebuild may
/// have landed on average before [`IdTable::crowded`] reports it. Well-spread hashes land 0.5
/// groups past it on average over a fill from empty to the most a table holds (a growth's
/// rebuild fills the new table to half of that, and then inserts go on), and their running
/// mean stayed under 1.2 in fills of up to 4M; foldhash's for ids counting up land far less,
/// except for the seeds that cluster them.
const CROWDED_MEAN: usize = 2;

/// How many groups past their home groups inserts may land in all before [`IdTable::crowded`]
/// looks at their mean: a small table is read whole by a few probes anyway.
const CROWDED_MIN: usize = 4096;

/// Where an entry is (or goes): group and entry within it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Pos {
    group: usize,
    entry: usize,
}

/// What [`IdTable::find_or_free`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Probe {
    /// An entry matched; its position and slot number.
    Found(Pos, u32),
    /// No entry matched; where [`IdTable::insert_at`] should put a new one (`None` when the
    /// table has no room and must grow first).
    Vacant(Option<Pos>),
}

/// Slot numbers by the hash of their id.
#[derive(Debug, Clone)]
pub(crate) struct IdTable {
    groups: Vec<Group>,
    /// `groups.len() - 1` (the number of groups is a power of two), or 0 without groups.
    mask: usize,
    items: usize,
    /// How many more entries may take an empty entry before the table must be rebuilt, so
    /// that at least one entry in eight stays empty and every probe ends.
    growth_left: usize,
    /// The entries inserted since the table was built, and how many groups past their home
    /// group they landed in all.
    inserted: usize,
    displaced: usize,
}

/// The number of entries a table of `n_groups` groups may hold: seven in eight.
fn capacity_of(n_groups: usize) -> usize {
    n_groups * GROUP / 8 * 7
}

impl IdTable {
    /// An empty table with no memory.
    pub(crate) fn new() -> Self {
        Self {
            groups: Vec::new(),
            mask: 0,
            items: 0,
            growth_left: 0,
            inserted: 0,
            displaced: 0,
        }
    }

    /// An empty table with room for at least `capacity` entries.
    pub(crate) fn with_capacity(capacity: usize) -> Self {
        if capacity == 0 {
            return Self::new();
        }
        let mut n_groups = 1;
        while capacity_of(n_groups) < capacity {
            n_groups *= 2;
        }
        Self {
            groups: vec![Group::EMPTY; n_groups],
            mask: n_groups - 1,
            items: 0,
            growth_left: capacity_of(n_groups),
            inserted: 0,
            displaced: 0,
        }
    }

    /// The number of entries.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.items
    }

    /// How many more entries fit before the table must be rebuilt.
    pub(crate) fn room(&self) -> usize {
        self.growth_left
    }

    /// Whether [`expand_short_hash`] places an entry where its full hash would.
    pub(crate) fn short_hashes_suffice(&self) -> bool {
        self.groups.len() <= SHORT_GROUPS
    }

    /// The number of entries the table holds at most (without tombstones).
    pub(crate) fn capacity(&self) -> usize {
        capacity_of(self.groups.len())
    }

    /// Removes every entry, keeping the memory.
    pub(crate) fn clear(&mut self) {
        self.groups.fill(Group::EMPTY);
        self.items = 0;
        self.growth_left = capacity_of(self.groups.len());
        self.inserted = 0;
        self.displaced = 0;
    }

    /// Whether the entries inserted since the table was built landed far past their home
    /// groups on average ([`CROWDED_MEAN`]): their hashes cluster in the low bits, and probes
    /// walk long runs of full groups.
    #[inline]
    pub(crate) fn crowded(&self) -> bool {
        self.displaced > CROWDED_MIN && self.displaced > self.inserted * CROWDED_MEAN
    }

    /// Counts an insert that landed `past` groups after its home group.
    #[inline]
    fn note_insert(&mut self, past: usize) {
        self.inserted += 1;
        self.displaced += past;
    }

    /// The positions a probe for `hash` visits: its home group, then the next ones.
    #[inline]
    fn probe_seq(&self, hash: u64) -> impl Iterator<Item = usize> + use<> {
        let mask = self.mask;
        let home = hash as usize & mask;
        (0..self.groups.len()).map(move |i| (home + i) & mask)
    }

    /// Finds the entry whose tag matches `hash` and whose slot satisfies `eq`.
    #[inline]
    pub(crate) fn find(&self, hash: u64, mut eq: impl FnMut(u32) -> bool) -> Option<(Pos, u32)> {
        let tag = tag_of(hash);
        for g in self.probe_seq(hash) {
            let group = self.groups.get(g)?;
            for entry in group.matching(tag) {
                let Some(&slot) = group.slots.get(entry) else {
                    continue;
                };
                if eq(slot) {
                    return Some((Pos { group: g, entry }, slot));
                }
            }
            if group.has_empty() {
                return None;
            }
        }
        None
    }

    /// Finds the entry like [`find`](Self::find), or else where a new entry with this hash
    /// goes: the first free entry of the probe.
    #[inline]
    pub(crate) fn find_or_free(&self, hash: u64, mut eq: impl FnMut(u32) -> bool) -> Probe {
        let tag = tag_of(hash);
        let mut free = None;
        for g in self.probe_seq(hash) {
            let Some(group) = self.groups.get(g) else {
                break;
            };
            for entry in group.matching(tag) {
                let Some(&slot) = group.slots.get(entry) else {
                    continue;
                };
                if eq(slot) {
                    return Probe::Found(Pos { group: g, entry }, slot);
                }
            }
            let empty = group.matching(EMPTY);
            if free.is_none() {
                free = Matches(empty.0 | group.matching(DELETED).0)
                    .next()
                    .map(|entry| Pos { group: g, entry });
            }
            if empty.0 != 0 {
                break;
            }
        }
        // Taking an empty entry needs room; a deleted one is always free to take.
        match free {
            Some(pos) if self.growth_left > 0 || self.tag_at(pos) == DELETED => {
                Probe::Vacant(Some(pos))
            }
            _ => Probe::Vacant(None),
        }
    }

    /// Whether an insert may take the entry at `pos` as [`find_or_free`](Self::find_or_free)
    /// would offer it: deleted, or empty while the table has room.
    #[inline]
    pub(crate) fn is_free(&self, pos: Pos) -> bool {
        match self.groups.get(pos.group).map(|g| g.tags[pos.entry]) {
            Some(DELETED) => true,
            Some(EMPTY) => self.growth_left > 0,
            _ => false,
        }
    }

    fn tag_at(&self, pos: Pos) -> u8 {
        self.groups
            .get(pos.group)
            .map_or(EMPTY, |g| g.tags[pos.entry])
    }

    /// Puts `slot` with `hash` at `pos`, a vacant position [`find_or_free`](Self::find_or_free)
    /// returned for the same hash, with no change to the table in between.
    #[inline]
    pub(crate) fn insert_at(&mut self, pos: Pos, hash: u64, slot: u32) {
        let Some(group) = self.groups.get_mut(pos.group) else {
            return;
        };
        if group.tags[pos.entry] == EMPTY {
            self.growth_left = self.growth_left.saturating_sub(1);
        }
        group.tags[pos.entry] = tag_of(hash);
        group.slots[pos.entry] = slot;
        self.items += 1;
        self.note_insert(pos.group.wrapping_sub(hash as usize) & self.mask);
    }

    /// Adds `slot` with `hash`, known not to be in the table, without comparing it with any
    /// entry: for filling a new table (from [`with_capacity`](Self::with_capacity), with room
    /// for every entry and no tombstones). Without room (a sizing mistake) nothing is added.
    #[inline]
    pub(crate) fn insert_unique(&mut self, hash: u64, slot: u32) {
        if self.growth_left == 0 {
            return;
        }
        let tag = tag_of(hash);
        for (past, g) in self.probe_seq(hash).enumerate() {
            let Some(group) = self.groups.get_mut(g) else {
                return;
            };
            // Only called on a table without tombstones: the first empty entry is the place.
            if let Some(entry) = group.matching(EMPTY).next() {
                group.tags[entry] = tag;
                group.slots[entry] = slot;
                self.growth_left -= 1;
                self.items += 1;
                self.note_insert(past);
                return;
            }
        }
    }

    /// Removes the entry at `pos`.
    #[inline]
    pub(crate) fn remove_at(&mut self, pos: Pos) {
        let Some(group) = self.groups.get_mut(pos.group) else {
            return;
        };
        if group.tags[pos.entry] < 2 {
            return;
        }
        // A probe passes this group only if it had no empty entry; if it has one now, it had
        // one since the last rebuild, so no probe passes it and the entry can become empty.
        if group.has_empty() {
            group.tags[pos.entry] = EMPTY;
            self.growth_left += 1;
        } else {
            group.tags[pos.entry] = DELETED;
        }
        self.items -= 1;
    }
}
