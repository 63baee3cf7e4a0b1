//! The hash of ids and partition keys: hashbrown's default (foldhash), its result mixed once
//! more.
//!
//! foldhash hashes a key of up to 16 bytes with one folded multiply of the key's two halves,
//! one of them XORed with a per-process seed (from address-space randomisation). For keys
//! that differ in a single word, as route ids do (same table, metric and prefix length, the
//! destination counting up), some seeds leave the hash's low bits, which pick the id table's
//! home group, far from uniform: runs of neighbouring groups fill up, and with linear
//! probing an insert or a lookup walks dozens of groups. Over 2000 random seeds, 100k route
//! ids into a table at the load it reaches before it grows (0.86) took 1.08 groups per insert
//! at the median, but more than 4 for 2.3% of the seeds and 352 at worst; callgrind caught
//! one such process inserting at 3.2 times the usual instructions. One multiply and two
//! shifts of the result spread every bit of it over the low bits and the tag, and put every
//! seed at 1.4 groups.

use std::hash::{BuildHasher, Hasher};

use hashbrown::DefaultHashBuilder;

/// A multiplier with its bits spread evenly (2^64 divided by the golden ratio, odd).
const SPREAD: u64 = 0x9e37_79b9_7f4a_7c15;

/// Builds [`MixedHasher`]s: hashbrown's default hasher (or another), mixed at the end.
#[derive(Debug, Clone, Default)]
pub(crate) struct MixedHashBuilder<S = DefaultHashBuilder>(S);

impl<S: BuildHasher> BuildHasher for MixedHashBuilder<S> {
    type Hasher = MixedHasher<S::Hasher>;

    #[inline]
    fn build_hasher(&self) -> MixedHasher<S::Hasher> {
        MixedHasher(self.0.build_hasher())
    }
}

/// A hasher whose result [`finish`](Hasher::finish) mixes once more. Every write goes to the
/// inner hasher as the same call, so it hashes exactly what it would alone.
pub(crate) struct MixedHasher<H>(H);

/// Spreads the bits of `hash` over all of its bits: the high half folded into the low, then
/// a multiply (whose high bits depend on every bit below them) and the high bits folded back.
#[inline]
fn mix(hash: u64) -> u64 {
    let x = (hash ^ (hash >> 32)).wrapping_mul(SPREAD);
    x ^ (x >> 29)
}

impl<H: Hasher> Hasher for MixedHasher<H> {
    #[inline]
    fn finish(&self) -> u64 {
        mix(self.0.finish())
    }

    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        self.0.write(bytes);
    }

    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.0.write_u8(i);
    }

    #[inline]
    fn write_u16(&mut self, i: u16) {
        self.0.write_u16(i);
    }

    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.0.write_u32(i);
    }

    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.0.write_u64(i);
    }

    #[inline]
    fn write_u128(&mut self, i: u128) {
        self.0.write_u128(i);
    }

    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.0.write_usize(i);
    }

    #[inline]
    fn write_i8(&mut self, i: i8) {
        self.0.write_i8(i);
    }

    #[inline]
    fn write_i16(&mut self, i: i16) {
        self.0.write_i16(i);
    }

    #[inline]
    fn write_i32(&mut self, i: i32) {
        self.0.write_i32(i);
    }

    #[inline]
    fn write_i64(&mut self, i: i64) {
        self.0.write_i64(i);
    }

    #[inline]
    fn write_i128(&mut self, i: i128) {
        self.0.write_i128(i);
    }

    #[inline]
    fn write_isize(&mut self, i: isize) {
        self.0.write_isize(i);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use foldhash::SharedSeed;
    use foldhash::fast::SeedableRandomState;

    /// Route-like ids: the same table, metric and prefix length, the destination counting up
    /// (the shape that foldhash alone spreads badly for some seeds).
    fn route_id(i: u32) -> (u32, u32, u32, u8, u8) {
        (254, (i << 8) ^ 0x0a00_0000, 100, 24, 0)
    }

    /// Groups visited per insert when 20k hashes fill a table of 4096 groups of six (load
    /// 0.81) by linear probing from their low bits, as the id table does.
    fn mean_probes(hashes: impl Iterator<Item = u64>) -> f64 {
        const GROUPS: usize = 4096;
        let mut fill = vec![0_u8; GROUPS];
        let (mut probes, mut n) = (0_usize, 0_usize);
        for hash in hashes {
            let mut group = hash as usize & (GROUPS - 1);
            probes += 1;
            while fill[group] == 6 {
                group = (group + 1) & (GROUPS - 1);
                probes += 1;
            }
            fill[group] += 1;
            n += 1;
        }
        probes as f64 / n as f64
    }

    #[test]
    fn the_mixed_hash_is_the_inner_hash_mixed() {
        let builder = MixedHashBuilder::<DefaultHashBuilder>::default();
        let inner = builder.0.hash_one(route_id(7));
        assert_eq!(builder.hash_one(route_id(7)), mix(inner));
        assert_ne!(mix(inner), inner);
        // Different ids stay different: the mix is a bijection (an odd multiplier between
        // two xor-shifts).
        let mut seen: Vec<u64> = (0..10_000).map(|i| builder.hash_one(route_id(i))).collect();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), 10_000);
    }

    /// The seeds of many processes (foldhash's shared seed comes from where the process is
    /// loaded): foldhash alone gives some of them long probes for route ids; mixed, none.
    #[test]
    fn route_ids_spread_over_the_groups_for_every_seed() {
        let mut worst_alone = 0.0_f64;
        for n in 0..300_u64 {
            let shared: &'static SharedSeed = Box::leak(Box::new(SharedSeed::from_u64(n)));
            let inner = SeedableRandomState::with_seed(n.wrapping_mul(SPREAD), shared);
            let alone = mean_probes((0..20_000).map(|i| inner.hash_one(route_id(i))));
            worst_alone = worst_alone.max(alone);
            let mixed = MixedHashBuilder(inner);
            let probes = mean_probes((0..20_000).map(|i| mixed.hash_one(route_id(i))));
            assert!(probes < 2.0, "seed {n}: {probes} groups per insert, mixed");
        }
        // What the mix is for: without it, some seed does far worse.
        assert!(worst_alone > 4.0, "foldhash alone: at worst {worst_alone}");
    }
}
