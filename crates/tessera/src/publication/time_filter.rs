//! TIME_BASED_FILTER applied at the writer: a remote reader that announced a minimum
//! separation (PID_TIME_BASED_FILTER) is not sent the samples of an instance written sooner
//! than that after the last one it was sent. A reliable one gets a GAP for them instead
//! (`WriterCore::filter_out`, as for content filters), so it neither waits for them nor asks
//! for them again. Readers still filter for themselves (on reception time): the writer only
//! spares the network and the reader's CPU what the reader would drop anyway.
//!
//! Cost: a writer no reader asked for a separation pays one atomic load per write. Memory: a
//! time per (reader, instance), at most [`MAX_INSTANCES`] per reader; instances beyond it are
//! sent unfiltered (the reader filters them).

use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tessera_rtps::fasthash::FastHashMap;
use tessera_rtps::qos::is_infinite;
use tessera_rtps::types::Guid;

/// Instances remembered per reader.
pub(crate) const MAX_INSTANCES: usize = 65_536;

/// The minimum separations matched remote readers asked for.
#[derive(Default)]
pub(crate) struct WriterTimeFilters {
    readers: Mutex<Vec<ReaderSeparation>>,
    /// `readers` is not empty (read by every write).
    on: AtomicBool,
}

struct ReaderSeparation {
    reader: Guid,
    min_ns: i64,
    /// The source time of the last sample sent to the reader, per instance (key hash; zeros
    /// for a keyless topic).
    last_sent: FastHashMap<[u8; 16], i64>,
}

impl WriterTimeFilters {
    /// Records the separation `reader` announced (zero: none, or no longer); a changed
    /// separation starts afresh. Returns whether the writer filters for it.
    pub(crate) fn set(&self, reader: Guid, separation: Duration) -> bool {
        if separation.is_zero() && !self.on.load(Ordering::Relaxed) {
            return false;
        }
        let min_ns = if is_infinite(separation) {
            i64::MAX
        } else {
            i64::try_from(separation.as_nanos()).unwrap_or(i64::MAX)
        };
        let mut readers = self.readers.lock();
        match readers.iter().position(|r| r.reader == reader) {
            Some(i) if min_ns == 0 => {
                readers.swap_remove(i);
            }
            Some(i) if readers[i].min_ns != min_ns => {
                readers[i].min_ns = min_ns;
                readers[i].last_sent.clear();
            }
            Some(_) => {}
            None if min_ns > 0 => readers.push(ReaderSeparation {
                reader,
                min_ns,
                last_sent: FastHashMap::default(),
            }),
            None => {}
        }
        self.on.store(!readers.is_empty(), Ordering::Relaxed);
        min_ns > 0
    }

    /// Forgets an unmatched reader.
    pub(crate) fn remove(&self, reader: Guid) {
        if self.on.load(Ordering::Relaxed) {
            let mut readers = self.readers.lock();
            readers.retain(|r| r.reader != reader);
            self.on.store(!readers.is_empty(), Ordering::Relaxed);
        }
    }

    /// The readers that must not be sent a sample of instance `key` (`None`: keyless) written
    /// at `source_ns`; records it as sent to the others. Appends to `out`.
    pub(crate) fn dropping(&self, key: Option<[u8; 16]>, source_ns: i64, out: &mut Vec<Guid>) {
        if !self.on.load(Ordering::Relaxed) {
            return;
        }
        let key = key.unwrap_or([0; 16]);
        for r in self.readers.lock().iter_mut() {
            let room = r.last_sent.len() < MAX_INSTANCES;
            match r.last_sent.get_mut(&key) {
                // A clock stepping back is not a reason to drop.
                Some(last) if source_ns >= *last && source_ns - *last < r.min_ns => {
                    out.push(r.reader);
                }
                Some(last) => *last = source_ns,
                None if room => {
                    r.last_sent.insert(key, source_ns);
                }
                None => {}
            }
        }
    }

    /// Forgets the instance `key` (unregistered or disposed): its next sample goes to every
    /// reader.
    pub(crate) fn forget(&self, key: [u8; 16]) {
        if self.on.load(Ordering::Relaxed) {
            for r in self.readers.lock().iter_mut() {
                r.last_sent.remove(&key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tessera_rtps::types::{EntityId, GuidPrefix};

    fn guid(n: u8) -> Guid {
        Guid {
            prefix: GuidPrefix([n; 12]),
            entity_id: EntityId([0, 0, 1, 7]),
        }
    }

    fn dropping(f: &WriterTimeFilters, key: u8, t_ms: i64) -> Vec<Guid> {
        let mut out = Vec::new();
        f.dropping(Some([key; 16]), t_ms * 1_000_000, &mut out);
        out
    }

    #[test]
    fn each_reader_gets_at_most_one_sample_per_instance_and_separation() {
        let f = WriterTimeFilters::default();
        let (slow, fast) = (guid(1), guid(2));
        f.set(slow, Duration::from_millis(100));
        f.set(fast, Duration::from_millis(10));
        f.set(guid(3), Duration::ZERO);
        // Every 5 ms for 200 ms on one instance.
        let mut sent = [0, 0];
        for t in (0..200).step_by(5) {
            let d = dropping(&f, 1, t);
            sent[0] += usize::from(!d.contains(&slow));
            sent[1] += usize::from(!d.contains(&fast));
            assert!(!d.contains(&guid(3)));
        }
        assert_eq!(sent, [2, 20]);
        // Another instance has its own clock.
        assert!(dropping(&f, 2, 199).is_empty());
        // Unmatched or separation withdrawn: sent everything.
        f.remove(slow);
        f.set(fast, Duration::ZERO);
        assert!(dropping(&f, 1, 201).is_empty());
        assert!(!f.on.load(Ordering::Relaxed));
    }

    #[test]
    fn a_changed_separation_restarts_and_forgetting_an_instance_resends() {
        let f = WriterTimeFilters::default();
        let r = guid(1);
        f.set(r, Duration::from_millis(100));
        assert!(dropping(&f, 1, 0).is_empty());
        assert_eq!(dropping(&f, 1, 50), vec![r]);
        f.set(r, Duration::from_millis(20));
        assert!(dropping(&f, 1, 60).is_empty());
        assert_eq!(dropping(&f, 1, 70), vec![r]);
        f.forget([1; 16]);
        assert!(dropping(&f, 1, 71).is_empty());
        // A clock that steps back does not drop.
        assert!(dropping(&f, 1, 10).is_empty());
    }

    #[test]
    fn instances_beyond_the_bound_are_sent_unfiltered() {
        let f = WriterTimeFilters::default();
        let r = guid(1);
        f.set(r, Duration::from_secs(1));
        let mut out = Vec::new();
        for i in 0..MAX_INSTANCES as u32 + 10 {
            let mut k = [0u8; 16];
            k[..4].copy_from_slice(&i.to_le_bytes());
            f.dropping(Some(k), 0, &mut out);
            f.dropping(Some(k), 1, &mut out);
        }
        // Every remembered instance's second sample was dropped; the 10 beyond were not.
        assert_eq!(out.len(), MAX_INSTANCES);
        assert_eq!(f.readers.lock()[0].last_sent.len(), MAX_INSTANCES);
    }
}
