//! The instances a writer registered or wrote and has not unregistered, kept so that deleting
//! the writer unregisters them.

use std::sync::Arc;

use tessera_rtps::fasthash::FastHashMap;

/// Key hash → serialized key of each live instance, with the one written last remembered
/// apart: a writer that keeps writing one instance (the common stream) finds it with one
/// comparison instead of a hash lookup per write.
#[derive(Default)]
pub(super) struct WrittenInstances {
    keys: FastHashMap<[u8; 16], Arc<Vec<u8>>>,
    /// Known to be in `keys`.
    last: Option<[u8; 16]>,
}

impl WrittenInstances {
    /// Remembers instance `key_hash`; `key` serializes its key the first time.
    pub(super) fn note(&mut self, key_hash: [u8; 16], key: impl FnOnce() -> Arc<Vec<u8>>) {
        if self.last == Some(key_hash) {
            return;
        }
        self.keys.entry(key_hash).or_insert_with(key);
        self.last = Some(key_hash);
    }

    /// Forgets instance `key_hash` (unregistered).
    pub(super) fn remove(&mut self, key_hash: &[u8; 16]) {
        self.keys.remove(key_hash);
        if self.last.as_ref() == Some(key_hash) {
            self.last = None;
        }
    }

    pub(super) fn contains(&self, key_hash: &[u8; 16]) -> bool {
        self.keys.contains_key(key_hash)
    }

    /// Every instance, forgotten here.
    pub(super) fn take_all(&mut self) -> FastHashMap<[u8; 16], Arc<Vec<u8>>> {
        self.last = None;
        std::mem::take(&mut self.keys)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_instance_stays_known_until_removed_or_taken() {
        let mut w = WrittenInstances::default();
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
}
