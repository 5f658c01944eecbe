//! A fast, per-process-seeded hasher for the maps on the data path (GUIDs, key hashes).
//!
//! std's SipHash costs more than the rest of a small sample's receive path. The keys here are
//! short fixed-size byte strings, so a multiply-rotate hash over 8-byte words with a final
//! avalanche is enough; the seed is drawn from std's random source once per process, so a
//! remote peer cannot precompute colliding keys, and every such map is bounded in size anyway.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasher, Hasher};
use std::sync::OnceLock;

/// A `HashMap` using [`FastBuildHasher`].
pub type FastHashMap<K, V> = HashMap<K, V, FastBuildHasher>;
/// A `HashSet` using [`FastBuildHasher`].
pub type FastHashSet<K> = HashSet<K, FastBuildHasher>;

const K: u64 = 0x9e37_79b9_7f4a_7c15;

fn process_seed() -> u64 {
    static SEED: OnceLock<u64> = OnceLock::new();
    *SEED.get_or_init(|| {
        std::collections::hash_map::RandomState::new().hash_one(0x07e5_5e7a_u64) | 1
    })
}

/// Builds [`FastHasher`]s seeded once per process.
#[derive(Debug, Clone, Copy)]
pub struct FastBuildHasher {
    seed: u64,
}

impl Default for FastBuildHasher {
    fn default() -> Self {
        FastBuildHasher {
            seed: process_seed(),
        }
    }
}

impl BuildHasher for FastBuildHasher {
    type Hasher = FastHasher;
    fn build_hasher(&self) -> FastHasher {
        FastHasher { h: self.seed }
    }
}

/// The hasher: rotate, xor, multiply per 8-byte word; avalanche in `finish`.
#[derive(Debug, Clone, Copy)]
pub struct FastHasher {
    h: u64,
}

impl FastHasher {
    #[inline]
    fn mix(&mut self, word: u64) {
        self.h = (self.h.rotate_left(26) ^ word).wrapping_mul(K);
    }
}

impl Hasher for FastHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.mix(u64::from_le_bytes(w));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut w = [0u8; 8];
            w[..rest.len()].copy_from_slice(rest);
            self.mix(u64::from_le_bytes(w) ^ ((rest.len() as u64) << 56));
        }
    }

    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.mix(i as u64);
    }

    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.mix(i as u64);
    }

    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.mix(i);
    }

    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.mix(i as u64);
    }

    #[inline]
    fn finish(&self) -> u64 {
        // murmur3's finalizer: every input bit affects every output bit.
        let mut x = self.h;
        x ^= x >> 33;
        x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
        x ^= x >> 33;
        x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        x ^ (x >> 33)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distinct_guids_spread_over_buckets() {
        let b = FastBuildHasher::default();
        let mut low_bits = HashSet::new();
        for i in 0u32..4096 {
            let mut g = [0u8; 16];
            g[12..].copy_from_slice(&i.to_be_bytes());
            low_bits.insert(b.hash_one(g) & 0xfff);
        }
        // 4096 keys into 4096 buckets: a decent hash fills well over half of them.
        assert!(low_bits.len() > 2400, "{}", low_bits.len());
    }

    #[test]
    fn map_works() {
        let mut m: FastHashMap<[u8; 16], u32> = FastHashMap::default();
        for i in 0..1000u32 {
            let mut k = [7u8; 16];
            k[..4].copy_from_slice(&i.to_le_bytes());
            m.insert(k, i);
        }
        assert_eq!(m.len(), 1000);
        let mut k = [7u8; 16];
        k[..4].copy_from_slice(&500u32.to_le_bytes());
        assert_eq!(m.get(&k), Some(&500));
    }
}
