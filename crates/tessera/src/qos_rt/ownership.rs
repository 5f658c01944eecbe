//! OWNERSHIP EXCLUSIVE at a reader (DDS 1.4 §2.2.3.9): per instance, only the strongest live
//! writer's updates are delivered.
//!
//! An instance's owner is the writer of its accepted updates. A sample from another writer
//! takes the instance over when that writer is stronger (higher OWNERSHIP_STRENGTH; equal
//! strengths: the lower GUID wins) or when the instance has no owner; otherwise it is dropped
//! and counted. An owner gives the instance up when it unregisters it, misses the reader's
//! deadline for it, loses its liveliness or goes away ([`Ownership::release`],
//! [`Ownership::release_writer`]): the next sample of any other live writer then owns it.
//! A strength change is taken from the writer's next announcement and applies from its next
//! sample on: a weaker owner is overtaken by the next sample of a now-stronger writer.

use tessera_rtps::fasthash::FastHashMap;

/// An instance key hash.
type Key = [u8; 16];
/// A writer GUID as bytes (orders as the GUID does).
type Writer = [u8; 16];

/// The ownership state of one exclusive reader.
#[derive(Debug, Default)]
pub(crate) struct Ownership {
    strengths: FastHashMap<Writer, i32>,
    owners: FastHashMap<Key, (Writer, i32)>,
    /// Samples dropped because another writer owns their instance.
    pub dropped: u64,
}

impl Ownership {
    /// Records a matched writer's strength (also a changed one).
    pub fn set_strength(&mut self, writer: Writer, strength: i32) {
        self.strengths.insert(writer, strength);
        for o in self.owners.values_mut() {
            if o.0 == writer {
                o.1 = strength;
            }
        }
    }

    /// Whether `writer`'s update of `key` is delivered; takes the instance over when `writer`
    /// is stronger than its owner or it has none.
    pub fn admit(&mut self, key: Key, writer: Writer) -> bool {
        let strength = self.strengths.get(&writer).copied().unwrap_or(0);
        match self.owners.get_mut(&key) {
            None => {
                self.owners.insert(key, (writer, strength));
                true
            }
            Some(o) if o.0 == writer => true,
            Some(o) if strength > o.1 || (strength == o.1 && writer < o.0) => {
                *o = (writer, strength);
                true
            }
            Some(_) => {
                self.dropped += 1;
                false
            }
        }
    }

    /// The owner of `key`, if any.
    pub fn owner(&self, key: &Key) -> Option<Writer> {
        self.owners.get(key).map(|o| o.0)
    }

    /// `writer` gives up `key` (unregistered it, or missed its deadline).
    pub fn release(&mut self, key: &Key, writer: Writer) {
        if self.owners.get(key).is_some_and(|o| o.0 == writer) {
            self.owners.remove(key);
        }
    }

    /// The instance `key` is gone from the reader (purged, disposed by its owner): no owner.
    pub fn forget(&mut self, key: &Key) {
        self.owners.remove(key);
    }

    /// Keeps only the instances `keep` accepts.
    pub fn retain(&mut self, mut keep: impl FnMut(&Key) -> bool) {
        self.owners.retain(|k, _| keep(k));
    }

    /// Instances with an owner.
    pub fn len(&self) -> usize {
        self.owners.len()
    }

    /// `writer` lost its liveliness or went away: it owns nothing any more. With `gone`, its
    /// strength is forgotten too (unmatched). Visits every owned instance.
    pub fn release_writer(&mut self, writer: Writer, gone: bool) {
        self.owners.retain(|_, o| o.0 != writer);
        if gone {
            self.strengths.remove(&writer);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const K: Key = [7; 16];

    #[test]
    fn the_strongest_writer_owns_and_failover_goes_to_the_next() {
        let (weak, strong) = ([1; 16], [2; 16]);
        let mut o = Ownership::default();
        o.set_strength(weak, 10);
        o.set_strength(strong, 20);
        assert!(o.admit(K, weak), "no owner yet: the first writer owns it");
        assert!(o.admit(K, strong), "the stronger one takes over");
        assert!(!o.admit(K, weak));
        assert_eq!(o.dropped, 1);
        o.release_writer(strong, false);
        assert!(o.admit(K, weak), "failover to the weaker writer");
        assert!(o.admit(K, strong), "the stronger one comes back");
        assert_eq!(o.owner(&K), Some(strong));
    }

    #[test]
    fn ties_go_to_the_lower_guid_and_strength_changes_apply() {
        let (a, b) = ([1; 16], [2; 16]);
        let mut o = Ownership::default();
        o.set_strength(a, 5);
        o.set_strength(b, 5);
        assert!(o.admit(K, b));
        assert!(o.admit(K, a), "equal strength: the lower GUID wins");
        assert!(!o.admit(K, b));
        o.set_strength(b, 6);
        assert!(o.admit(K, b), "b is stronger now");
        o.release(&K, a);
        assert_eq!(o.owner(&K), Some(b), "only the owner can release");
        o.release(&K, b);
        assert_eq!(o.owner(&K), None);
    }
}
