//! The writer's default [`HistoryStore`]: samples by sequence number, in a ring in memory.
//!
//! Sequence numbers are assigned consecutively, so the history is a `VecDeque` sorted by
//! sequence number: appending is O(1) and lookups are a binary search (O(1) for the common
//! case of the newest sample). A sample replaced under KEEP_LAST stays as a tombstone (its
//! payload dropped) until it reaches the front or tombstones outnumber live samples, when the
//! ring is compacted; readers that still want a tombstoned number get a GAP.

use crate::fasthash::FastHashMap;
use std::collections::VecDeque;

use super::store::{HistoryStore, Sample, StoreError};
use super::{HistoryKind, WriterConfig};
use crate::types::SequenceNumber;

#[derive(Debug)]
struct Slot {
    seq: SequenceNumber,
    sample: Option<Sample>,
}

/// Key used for instance bookkeeping of keyless topics.
const NO_KEY: [u8; 16] = [0; 16];

/// Where a history hands the payloads it releases, so that their buffers serve later
/// writes instead of going back to the allocator (the receiver decides what it keeps and
/// takes them out of the vector). An acknowledgment that releases thousands of samples hands
/// them over in one call: one lock of the receiver's pool, not one per sample.
pub type Recycler = std::sync::Arc<dyn Fn(&mut Vec<std::sync::Arc<Vec<u8>>>) + Send + Sync>;

/// The in-memory history every [`WriterCore`](super::WriterCore) uses unless given another
/// store.
pub struct MemoryHistory {
    slots: VecDeque<Slot>,
    live: usize,
    tombstones: usize,
    /// KEEP_LAST depth per instance; `None` for KEEP_ALL (no instance bookkeeping).
    depth: Option<usize>,
    /// Sequence numbers of each instance's live samples, oldest first (KEEP_LAST only).
    instances: FastHashMap<[u8; 16], VecDeque<SequenceNumber>>,
    recycler: Option<Recycler>,
    /// Payloads released by the operation under way, for the recycler (kept allocated).
    released: Vec<std::sync::Arc<Vec<u8>>>,
}

impl std::fmt::Debug for MemoryHistory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryHistory")
            .field("live", &self.live)
            .field("tombstones", &self.tombstones)
            .field("depth", &self.depth)
            .field("recycles", &self.recycler.is_some())
            .finish()
    }
}

impl MemoryHistory {
    /// A history keeping the last `depth` samples of each instance, or all (`None`).
    pub fn new(depth: Option<usize>) -> Self {
        MemoryHistory {
            slots: VecDeque::new(),
            live: 0,
            tombstones: 0,
            depth,
            instances: FastHashMap::default(),
            recycler: None,
            released: Vec::new(),
        }
    }

    /// Hands every payload this history releases to `recycler`.
    pub fn with_recycler(mut self, recycler: Recycler) -> Self {
        self.recycler = Some(recycler);
        self
    }

    /// Collects a released sample's payload; [`MemoryHistory::recycle_released`] hands the
    /// collection over.
    fn release(&mut self, sample: Sample) {
        if self.recycler.is_some() {
            self.released.push(sample.payload);
        }
    }

    fn recycle_released(&mut self) {
        if let Some(r) = &self.recycler {
            if !self.released.is_empty() {
                r(&mut self.released);
                // Whatever the recycler did not take goes back to the allocator.
                self.released.clear();
            }
        }
    }

    /// The history a writer with this configuration needs (its KEEP_LAST depth).
    pub fn for_config(cfg: &WriterConfig) -> Self {
        Self::new(match cfg.history {
            HistoryKind::KeepLast(n) => Some(n.max(1) as usize),
            HistoryKind::KeepAll => None,
        })
    }

    fn index_of(&self, seq: SequenceNumber) -> usize {
        // Fast path: no compaction since the front, so the index is the distance.
        if let Some(front) = self.slots.front() {
            if seq >= front.seq {
                let guess = usize::try_from(seq.wrapping_sub(front.seq)).unwrap_or(usize::MAX);
                if self.slots.get(guess).is_some_and(|s| s.seq == seq) {
                    return guess;
                }
            }
        }
        self.slots.partition_point(|s| s.seq < seq)
    }

    fn trim_front(&mut self) {
        while self.slots.front().is_some_and(|s| s.sample.is_none()) {
            self.slots.pop_front();
            self.tombstones -= 1;
        }
    }

    fn forget_instance(&mut self, seq: SequenceNumber, sample: &Sample) {
        if self.depth.is_none() {
            return;
        }
        let key = sample.key_hash.unwrap_or(NO_KEY);
        if let Some(q) = self.instances.get_mut(&key) {
            if q.front() == Some(&seq) {
                q.pop_front();
            } else if let Some(p) = q.iter().position(|&s| s == seq) {
                q.remove(p);
            }
        }
        // Empty instances are kept (no allocation churn for a keyless topic) until they
        // clearly outnumber the live samples.
        if self.instances.len() > 2 * self.live + 64 {
            self.instances.retain(|_, q| !q.is_empty());
        }
    }
}

impl HistoryStore for MemoryHistory {
    fn len(&self) -> usize {
        self.live
    }

    fn first_seq(&self) -> Option<SequenceNumber> {
        // The front slot is always live: tombstones at the front are popped eagerly.
        self.slots.front().map(|s| s.seq)
    }

    /// The live sample with this number.
    fn get(&self, seq: SequenceNumber) -> Option<&Sample> {
        let i = self.index_of(seq);
        match self.slots.get(i) {
            Some(s) if s.seq == seq => s.sample.as_ref(),
            _ => None,
        }
    }

    /// The first live sample with number ≥ `seq`.
    fn next_from(&self, seq: SequenceNumber) -> Option<(SequenceNumber, &Sample)> {
        let mut i = self.index_of(seq);
        while let Some(s) = self.slots.get(i) {
            if let Some(x) = &s.sample {
                return Some((s.seq, x));
            }
            i += 1;
        }
        None
    }

    /// The instance whose oldest sample `write` of `key` would replace, if it is at depth.
    fn keep_last_victim(&self, key: Option<[u8; 16]>) -> Option<SequenceNumber> {
        let depth = self.depth?;
        let q = self.instances.get(&key.unwrap_or(NO_KEY))?;
        if q.len() >= depth {
            q.front().copied()
        } else {
            None
        }
    }

    /// Appends a sample; `seq` must be greater than every number held.
    fn push(&mut self, seq: SequenceNumber, sample: Sample) -> Result<(), StoreError> {
        if self.depth.is_some() {
            let key = sample.key_hash.unwrap_or(NO_KEY);
            self.instances.entry(key).or_default().push_back(seq);
        }
        self.slots.push_back(Slot {
            seq,
            sample: Some(sample),
        });
        self.live += 1;
        Ok(())
    }

    fn replace_payload(
        &mut self,
        seq: SequenceNumber,
        payload: std::sync::Arc<Vec<u8>>,
        frag: u32,
    ) -> bool {
        let i = self.index_of(seq);
        match self.slots.get_mut(i) {
            Some(Slot {
                seq: s,
                sample: Some(sample),
            }) if *s == seq => {
                // The old payload is not recycled: whoever asked for the change may share it.
                sample.payload = payload;
                sample.frag_size = frag;
                true
            }
            _ => false,
        }
    }

    /// Drops the sample with this number (tombstone); returns whether it was live.
    fn remove(&mut self, seq: SequenceNumber) -> bool {
        let i = self.index_of(seq);
        let Some(slot) = self.slots.get_mut(i) else {
            return false;
        };
        if slot.seq != seq {
            return false;
        }
        let Some(sample) = slot.sample.take() else {
            return false;
        };
        self.live -= 1;
        self.tombstones += 1;
        self.forget_instance(seq, &sample);
        self.release(sample);
        self.recycle_released();
        self.trim_front();
        if self.tombstones > 64 && self.tombstones > self.live {
            self.slots.retain(|s| s.sample.is_some());
            self.tombstones = 0;
        }
        true
    }

    /// Drops every sample with a number below `seq`; returns how many live samples went.
    fn remove_below(&mut self, seq: SequenceNumber) -> usize {
        let mut n = 0;
        while let Some(front) = self.slots.front() {
            if front.seq >= seq {
                break;
            }
            if let Some(slot) = self.slots.pop_front() {
                if let Some(sample) = slot.sample {
                    self.live -= 1;
                    n += 1;
                    self.forget_instance(slot.seq, &sample);
                    self.release(sample);
                } else {
                    self.tombstones -= 1;
                }
            }
        }
        self.recycle_released();
        self.trim_front();
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn s(key: u8) -> Sample {
        Sample {
            payload: Arc::new(vec![key]),
            key_hash: Some([key; 16]),
            status_info: 0,
            key_flag: false,
            timestamp: None,
            frag_size: 0,
            coherent_set: None,
            group: None,
            origin: None,
        }
    }

    #[test]
    fn keep_last_tombstones_and_compaction() {
        let mut h = MemoryHistory::new(Some(1));
        h.push(1, s(1)).unwrap();
        for seq in 2..1000 {
            let victim = h.keep_last_victim(Some([2; 16]));
            if let Some(v) = victim {
                assert!(h.remove(v));
            }
            h.push(seq, s(2)).unwrap();
        }
        assert_eq!(h.len(), 2);
        assert!(h.slots.len() < 200, "compacted: {}", h.slots.len());
        assert_eq!(h.first_seq(), Some(1));
        assert_eq!(h.next_from(2).map(|x| x.0), Some(999));
        assert!(h.get(500).is_none());
        assert_eq!(h.remove_below(999), 1);
        assert_eq!(h.first_seq(), Some(999));
    }

    #[test]
    fn released_payloads_go_to_the_recycler() {
        let got = Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = got.clone();
        let mut h = MemoryHistory::new(Some(1)).with_recycler(Arc::new(move |ps| {
            sink.lock().unwrap().extend(ps.drain(..).map(|p| p[0]))
        }));
        for (seq, key) in [(1, 1), (2, 2), (3, 3)] {
            h.push(seq, s(key)).unwrap();
        }
        // Replaced under KEEP_LAST, then acknowledged: each payload is handed over once.
        let victim = h.keep_last_victim(Some([2; 16])).unwrap();
        assert!(h.remove(victim));
        h.push(4, s(2)).unwrap();
        assert_eq!(*got.lock().unwrap(), vec![2]);
        assert_eq!(h.remove_below(4), 2);
        assert_eq!(*got.lock().unwrap(), vec![2, 1, 3]);
    }
}
