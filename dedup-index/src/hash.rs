//! The hash of ids: hashbrown's default (foldhash) as it is, or, for an index whose id table
//! it fills badly, foldhash with other seeds and at last its result mixed once more.
//!
//! foldhash hashes a key of up to 16 bytes with one folded multiply of the key's two halves,
//! one of them XORed with a seed from the process's address-space layout. For such ids that
//! differ in a single word (same table, metric and prefix length, the destination counting
//! up, as the benches' route ids) it puts neighbouring ids' home groups nearly a constant step
//! apart. The groups are not near each other: the median step between the home groups of 1M
//! such ids in a table of 2^18 groups was 18k to 23k groups for three random seeds. But the
//! steps take only a few hundred distinct values (134 to 536). The platform's IPv4 route ids
//! are 24 bytes, and foldhash folds their first 16 bytes before it takes the rest: their steps
//! look random (70k distinct steps for 100k ids).
//!
//! For some seeds the low bits that pick the home group come out clustered: runs of groups
//! fill up and linear probing walks many of them per insert and lookup. Filling a table with
//! route ids as the index does, 90 of 1000 seeds put 100k of them more than 2 groups past
//! their home group on average at some point (one 470 groups), and 16 of 100 seeds 1M of them;
//! well-spread hashes stay under 1.2.
//!
//! The seed that decides is the process-wide one (foldhash's shared seed): another per-index
//! seed leaves nearly as many clustered (79 of the 90 seeds in 1000 that clustered 100k ids),
//! another shared seed 8. Mixing every hash spreads them for every seed, but gives up that
//! regularity (sequential lookups of the benches' ids at 1M took 132-144 ns instead of
//! 91-117). So the index hashes with foldhash alone until its id table reports that its
//! entries landed far from their home groups
//! ([`IdTable::crowded`](crate::table::IdTable::crowded)); then it takes another shared seed
//! and rebuilds the table, and mixes only after [`RESEEDS`] such seeds clustered too.

use std::hash::{BuildHasher, Hash, Hasher};

use foldhash::SharedSeed;
use foldhash::fast::{FoldHasher, SeedableRandomState};

use crate::object::Object;

/// A multiplier with its bits spread evenly (2^64 divided by the golden ratio, odd).
const SPREAD: u64 = 0x9e37_79b9_7f4a_7c15;

/// Spreads the bits of `hash` over all of its bits: the high half folded into the low, then a
/// multiply (whose high bits depend on every bit below them) and the high bits folded back. A
/// bijection: different hashes stay different.
#[inline]
fn mix(hash: u64) -> u64 {
    let x = (hash ^ (hash >> 32)).wrapping_mul(SPREAD);
    x ^ (x >> 29)
}

/// The shared seeds to try after the process's own clustered an index's ids (arbitrary
/// constants: each leaves the ids of a given shape clustered with the same small chance).
static RESEEDS: [SharedSeed; 2] = [
    SharedSeed::from_u64(0x243f_6a88_85a3_08d3),
    SharedSeed::from_u64(0x1319_8a2e_0370_7344),
];

/// Hashes ids: foldhash with a random seed (as hashbrown's default); after
/// [`rehash`](Self::rehash), with another seed, and at last with its result mixed once more.
#[derive(Debug, Clone)]
pub(crate) struct IdHasher {
    state: SeedableRandomState,
    /// How many times [`rehash`](Self::rehash) changed the hash.
    rehashes: u8,
}

impl IdHasher {
    /// foldhash with a random seed, unmixed.
    pub(crate) fn new() -> Self {
        Self {
            state: SeedableRandomState::random(),
            rehashes: 0,
        }
    }

    /// foldhash with the given seed, unmixed: for tests that need a seed known to cluster.
    #[cfg(test)]
    pub(crate) fn with_state(state: SeedableRandomState) -> Self {
        Self { state, rehashes: 0 }
    }

    /// The hash of `x`.
    ///
    /// Not inlined, and with a hasher type of its own ([`KeyHasher`]): then this is the only
    /// caller of `Q::hash` for that hasher type in the whole program, and the compiler inlines
    /// `Q::hash` into it whatever its size (inlining a function's only call costs nothing),
    /// with the hasher's state in registers. Inlined into each of the index's callers, a route
    /// id's `hash` stayed out of line (too costly for several call sites), its state in memory:
    /// 59 instructions a hash instead of about 25, and a lookup at 1M took 271 ns instead of
    /// 166 in two full bench runs (fewer instructions per lookup let the processor overlap
    /// the cache misses of more of them).
    #[inline(never)]
    pub(crate) fn hash_one<Q: Hash + ?Sized>(&self, x: &Q) -> u64 {
        let mut state: KeyHasher = Forwarding(self.state.build_hasher());
        x.hash(&mut state);
        self.finish(state.finish())
    }

    /// The hash of `obj`'s id, fed by [`Object::hash_id`]: the same as
    /// [`hash_one`](Self::hash_one) of its id. Not inlined, with a hasher type of its own
    /// ([`ObjHasher`]), for the same reason.
    #[inline(never)]
    pub(crate) fn hash_obj<T: Object>(&self, obj: &T) -> u64 {
        let mut state: ObjHasher = Forwarding(self.state.build_hasher());
        obj.hash_id(&mut state);
        self.finish(state.finish())
    }

    /// The hash from what a foldhash hasher finished with.
    #[inline(always)]
    fn finish(&self, inner: u64) -> u64 {
        if self.is_mixed() { mix(inner) } else { inner }
    }

    /// Whether results are mixed.
    #[inline(always)]
    pub(crate) fn is_mixed(&self) -> bool {
        usize::from(self.rehashes) > RESEEDS.len()
    }

    /// How many times [`rehash`](Self::rehash) changed the hash.
    pub(crate) fn rehashes(&self) -> u8 {
        self.rehashes
    }

    /// Changes the hash, for ids it clustered: the next of [`RESEEDS`] (with a random
    /// per-hasher seed), then the mix. Every hash taken before is stale. False, changing
    /// nothing, once the hash is mixed: no change is left to try.
    pub(crate) fn rehash(&mut self) -> bool {
        if self.is_mixed() {
            return false;
        }
        if let Some(shared) = RESEEDS.get(usize::from(self.rehashes)) {
            // A random per-hasher seed, as the process's own state would give.
            let per_hasher = SeedableRandomState::random().hash_one(self.rehashes);
            self.state = SeedableRandomState::with_seed(per_hasher, shared);
        }
        self.rehashes += 1;
        true
    }
}

/// foldhash's hasher under a type of the index's own, one type per way the index feeds it
/// (`WAY`): every call goes to foldhash's as the same call.
pub(crate) struct Forwarding<const WAY: u8>(FoldHasher<'static>);

/// The hasher [`IdHasher::hash_one`] alone uses.
pub(crate) type KeyHasher = Forwarding<0>;

/// The hasher [`IdHasher::hash_obj`] alone uses.
pub(crate) type ObjHasher = Forwarding<1>;

impl<const WAY: u8> Hasher for Forwarding<WAY> {
    #[inline(always)]
    fn finish(&self) -> u64 {
        self.0.finish()
    }

    #[inline(always)]
    fn write(&mut self, bytes: &[u8]) {
        self.0.write(bytes);
    }

    #[inline(always)]
    fn write_u8(&mut self, i: u8) {
        self.0.write_u8(i);
    }

    #[inline(always)]
    fn write_u16(&mut self, i: u16) {
        self.0.write_u16(i);
    }

    #[inline(always)]
    fn write_u32(&mut self, i: u32) {
        self.0.write_u32(i);
    }

    #[inline(always)]
    fn write_u64(&mut self, i: u64) {
        self.0.write_u64(i);
    }

    #[inline(always)]
    fn write_u128(&mut self, i: u128) {
        self.0.write_u128(i);
    }

    #[inline(always)]
    fn write_usize(&mut self, i: usize) {
        self.0.write_usize(i);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq, Eq)]
    struct Route {
        dst: u32,
        table: u32,
    }

    impl Object for Route {
        type Id = (u32, u32);

        fn id(&self) -> (u32, u32) {
            (self.table, self.dst)
        }

        fn hash_id<H: Hasher>(&self, state: &mut H) {
            self.table.hash(state);
            self.dst.hash(state);
        }
    }

    #[test]
    fn each_rehash_changes_the_hash_and_the_last_mixes_it() {
        let route = Route { dst: 7, table: 254 };
        let mut hasher = IdHasher::new();
        let plain = hasher.hash_one(&(254_u32, 7_u32));
        assert_eq!(hasher.hash_obj(&route), plain);
        assert_eq!(
            plain,
            hasher.state.hash_one((254_u32, 7_u32)),
            "foldhash's own"
        );
        assert!(hasher.rehash());
        let reseeded = hasher.hash_one(&(254_u32, 7_u32));
        assert_ne!(reseeded, plain);
        assert_eq!(hasher.hash_obj(&route), reseeded);
        assert!(!hasher.is_mixed());
        assert!(hasher.rehash());
        assert!(hasher.rehash());
        assert!(hasher.is_mixed());
        assert!(!hasher.rehash(), "nothing left to try");
        assert_eq!(hasher.rehashes(), 3);
        let inner = hasher.state.hash_one((254_u32, 7_u32));
        assert_eq!(hasher.hash_one(&(254_u32, 7_u32)), mix(inner));
        assert_eq!(hasher.hash_obj(&route), mix(inner));
        assert_ne!(mix(inner), inner);
        let mut seen: Vec<u64> = (0..10_000_u32).map(|i| hasher.hash_one(&i)).collect();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), 10_000);
    }
}
