//! The instances a writer registered or wrote and has not unregistered, kept so that deleting
//! the writer unregisters them.

use std::sync::atomic::{fence, AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use tessera_rtps::fasthash::FastHashMap;

/// Key hash → serialized key of each live instance, with the one written last remembered
/// apart, readable without the map's lock: a writer that keeps writing one instance (the common
/// stream) finds it with one comparison and no locked instruction (the lock and unlock cost a
/// 16 B write ~4 % of its time).
#[derive(Default)]
pub(super) struct WrittenInstances {
    keys: Mutex<FastHashMap<[u8; 16], Arc<Vec<u8>>>>,
    /// Known to be in `keys`; changed only under its lock.
    last: LastWritten,
}

impl WrittenInstances {
    /// Remembers instance `key_hash`; `key` serializes its key the first time.
    pub(super) fn note(&self, key_hash: [u8; 16], key: impl FnOnce() -> Arc<Vec<u8>>) {
        if self.last.is(&key_hash) {
            return;
        }
        let mut keys = self.keys.lock();
        keys.entry(key_hash).or_insert_with(key);
        self.last.set(Some(&key_hash));
    }

    /// Forgets instance `key_hash` (unregistered).
    pub(super) fn remove(&self, key_hash: &[u8; 16]) {
        let mut keys = self.keys.lock();
        keys.remove(key_hash);
        if self.last.is(key_hash) {
            self.last.set(None);
        }
    }

    pub(super) fn contains(&self, key_hash: &[u8; 16]) -> bool {
        self.last.is(key_hash) || self.keys.lock().contains_key(key_hash)
    }

    /// Every instance, forgotten here.
    pub(super) fn take_all(&self) -> FastHashMap<[u8; 16], Arc<Vec<u8>>> {
        let mut keys = self.keys.lock();
        self.last.set(None);
        std::mem::take(&mut *keys)
    }
}

/// A key hash (or none) behind a sequence lock: one writer at a time (the caller serializes
/// them), readers that never wait and retry nothing — a reader that overlaps a change answers
/// "not it" and takes the slow path.
#[derive(Default)]
struct LastWritten {
    /// Odd while a change is under way.
    seq: AtomicU64,
    valid: AtomicBool,
    halves: [AtomicU64; 2],
}

impl LastWritten {
    fn is(&self, key_hash: &[u8; 16]) -> bool {
        let (lo, hi) = halves(key_hash);
        let before = self.seq.load(Ordering::Acquire);
        if before & 1 == 1 {
            return false;
        }
        let valid = self.valid.load(Ordering::Relaxed);
        let a = self.halves[0].load(Ordering::Relaxed);
        let b = self.halves[1].load(Ordering::Relaxed);
        fence(Ordering::Acquire);
        let after = self.seq.load(Ordering::Relaxed);
        before == after && valid && a == lo && b == hi
    }

    /// Changes the remembered hash; callers hold the lock that serializes changes.
    fn set(&self, key_hash: Option<&[u8; 16]>) {
        let s = self.seq.load(Ordering::Relaxed);
        self.seq.store(s.wrapping_add(1), Ordering::Relaxed);
        fence(Ordering::Release);
        let (lo, hi) = key_hash.map_or((0, 0), halves);
        self.valid.store(key_hash.is_some(), Ordering::Relaxed);
        self.halves[0].store(lo, Ordering::Relaxed);
        self.halves[1].store(hi, Ordering::Relaxed);
        self.seq.store(s.wrapping_add(2), Ordering::Release);
    }
}

fn halves(key_hash: &[u8; 16]) -> (u64, u64) {
    let mut lo = [0; 8];
    let mut hi = [0; 8];
    lo.copy_from_slice(&key_hash[..8]);
    hi.copy_from_slice(&key_hash[8..]);
    (u64::from_le_bytes(lo), u64::from_le_bytes(hi))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_instance_stays_known_until_removed_or_taken() {
        let w = WrittenInstances::default();
        let mut serialized = 0;
        for kh in [[1; 16], [1; 16], [2; 16], [1; 16]] {
            w.note(kh, || {
                serialized += 1;
                Arc::new(vec![kh[0]])
            });
        }
        assert_eq!(serialized, 2, "each key serialized once");
        assert!(w.contains(&[1; 16]) && w.contains(&[2; 16]));
        w.remove(&[1; 16]);
        assert!(!w.contains(&[1; 16]));
        w.note([1; 16], || Arc::new(vec![1]));
        assert!(w.contains(&[1; 16]), "noted again after its removal");
        assert_eq!(w.take_all().len(), 2);
        assert!(!w.contains(&[1; 16]) && !w.contains(&[2; 16]));
        w.note([1; 16], || Arc::new(vec![1]));
        assert!(w.contains(&[1; 16]), "noted again after take_all");
    }

    /// A reader racing a change never sees half of one hash and half of another: with the
    /// hashes `x` and `y` alternating, their mixture is never taken for the last one written.
    #[test]
    fn a_racing_reader_never_matches_a_torn_hash() {
        let last = LastWritten::default();
        let (x, y) = ([1; 16], [2; 16]);
        let mut torn = [1; 16];
        torn[8..].copy_from_slice(&[2; 8]);
        let stop = AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| {
                for i in 0..200_000u32 {
                    last.set(Some(if i % 2 == 0 { &x } else { &y }));
                }
                stop.store(true, Ordering::Relaxed);
            });
            while !stop.load(Ordering::Relaxed) {
                assert!(!last.is(&torn), "a torn hash matched");
            }
        });
        last.set(None);
        assert!(!last.is(&x) && !last.is(&y));
        last.set(Some(&y));
        assert!(last.is(&y));
    }
}
