//! What TRANSIENT and PERSISTENT durability add to a reader: samples relayed by a durability
//! service are delivered as their original writer's (PID_ORIGINAL_WRITER_INFO), once even when
//! the live writer and one or more services all send them; and a service's own reader can
//! take every sample with its writer's identity and sequence number ([`SampleSink`]).

use std::collections::{BTreeSet, HashMap};
use tessera_rtps::types::{Guid, SequenceNumber};

/// Sequence numbers remembered above a writer's contiguous floor before the oldest gap is
/// given up (counted as seen): bounds the table whatever a peer sends.
const MAX_ABOVE_FLOOR: usize = 4096;
/// Writers remembered per reader; beyond it the table is cleared (a duplicate may then
/// come through once, never a loss).
const MAX_WRITERS: usize = 4096;

/// Which (writer, sequence number) pairs a reader delivered, by original writer: the
/// dedupe rule is "at most once per original writer and sequence number", whoever sends it.
#[derive(Debug, Default)]
pub(crate) struct Delivered {
    writers: HashMap<Guid, Seen>,
    /// Samples dropped as already delivered.
    pub(crate) duplicates: u64,
}

#[derive(Debug, Default)]
struct Seen {
    /// Every number up to it was delivered (or given up).
    floor: SequenceNumber,
    above: BTreeSet<SequenceNumber>,
}

impl Delivered {
    /// Records `seq` of `writer`; false if it was delivered before (a duplicate).
    pub(crate) fn first_time(&mut self, writer: Guid, seq: SequenceNumber) -> bool {
        if !self.writers.contains_key(&writer) && self.writers.len() >= MAX_WRITERS {
            self.writers.clear();
        }
        let s = self.writers.entry(writer).or_default();
        if seq <= s.floor || !s.above.insert(seq) {
            self.duplicates += 1;
            return false;
        }
        while s.above.first() == Some(&(s.floor + 1)) {
            s.above.pop_first();
            s.floor += 1;
        }
        while s.above.len() > MAX_ABOVE_FLOOR {
            if let Some(first) = s.above.pop_first() {
                s.floor = first;
            }
        }
        true
    }

    /// Undoes [`Self::first_time`] for a sample the history refused (it will come again).
    pub(crate) fn forget(&mut self, writer: Guid, seq: SequenceNumber) {
        let Some(s) = self.writers.get_mut(&writer) else {
            return;
        };
        if s.above.remove(&seq) || seq > s.floor || seq < 1 {
            return;
        }
        // `seq` closed a gap and the floor moved past it: reopen the gap at `seq` (bounded:
        // the floor moved over numbers that were above it, at most MAX_ABOVE_FLOOR + 1).
        let top = s.floor.min(seq + MAX_ABOVE_FLOOR as i64);
        s.above.extend(seq + 1..=top);
        s.floor = seq - 1;
    }
}

/// A sample as a [`SampleSink`] receives it.
#[derive(Debug, Clone, Copy)]
pub struct ReceivedSample<'a> {
    /// The writer: the original one for a relayed sample.
    pub writer: Guid,
    /// Its sequence number, in the original writer's numbering for a relayed sample.
    pub sequence_number: SequenceNumber,
    /// The relay (a durability service's writer) that sent it, if it was relayed.
    pub relayed_by: Option<Guid>,
    /// Serialized sample, or serialized key when `key_only` (encapsulation header included);
    /// may be empty for a dispose or unregister identified by its key hash.
    pub payload: &'a [u8],
    /// The payload is a key only.
    pub key_only: bool,
    /// The instance (all zeros for a keyless type).
    pub key_hash: [u8; 16],
    /// PID_STATUS_INFO flags: 1 disposed, 2 unregistered.
    pub status_info: u32,
    /// Source timestamp (ns since the epoch), 0 if none.
    pub source_timestamp: i64,
    /// Whether [`SampleSink::offer`] may answer [`SinkVerdict::Held`]: the sample came from
    /// a reliable writer through the protocol (not from a writer of this participant, nor
    /// relayed by a durability service).
    pub can_hold: bool,
}

/// What a [`SampleSink`] did with a sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SinkVerdict {
    /// Taken: the reader acknowledges it to its writer.
    Accepted,
    /// Not taken: the writer resends it later, as with a full history.
    Refused,
    /// Taken, but not to be acknowledged yet (only when [`ReceivedSample::can_hold`]): the
    /// writer keeps it, and everything it wrote after it, until the sink moves the hold with
    /// [`UntypedDataReader::set_acknowledgment_hold`](crate::UntypedDataReader::set_acknowledgment_hold).
    /// A sink that stores a sample only once a group committed it takes many at once this
    /// way, instead of refusing each until the commit.
    Held,
}

/// Takes a reader's samples on the receive thread instead of its history, each with its
/// writer's identity and sequence number: what a durability service stores. Installed with
/// [`UntypedDataReader::set_sample_sink`](crate::UntypedDataReader::set_sample_sink).
pub trait SampleSink: Send + Sync + 'static {
    /// One sample; `false` refuses it (a reliable writer then resends it later, as with a
    /// full history). Called under the reader's lock: no blocking on other readers.
    fn on_sample(&self, sample: &ReceivedSample<'_>) -> bool;

    /// [`SampleSink::on_sample`] with a third answer, [`SinkVerdict::Held`]. What the reader
    /// calls; by default the answer of `on_sample`.
    fn offer(&self, sample: &ReceivedSample<'_>) -> SinkVerdict {
        if self.on_sample(sample) {
            SinkVerdict::Accepted
        } else {
            SinkVerdict::Refused
        }
    }

    /// Called after the samples of one received datagram, before the reader acknowledges
    /// them: a sink that batches commits here (a store that must keep what was acknowledged).
    fn end_of_batch(&self) {}
}

/// The original writer and number of a delivered sample.
pub(crate) fn effective_origin(
    d: &tessera_rtps::reader::Delivered<'_>,
) -> (Guid, SequenceNumber, Option<Guid>) {
    match d.original {
        Some((w, s)) => (w, s, Some(d.writer)),
        None => (d.writer, d.seq, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g(n: u8) -> Guid {
        Guid::from_bytes([n; 16])
    }

    #[test]
    fn each_pair_passes_once_in_any_order() {
        let mut d = Delivered::default();
        for s in [3, 1, 2, 5] {
            assert!(d.first_time(g(1), s));
        }
        for s in [1, 2, 3, 5] {
            assert!(!d.first_time(g(1), s));
        }
        assert!(d.first_time(g(1), 4));
        assert!(
            d.first_time(g(2), 1),
            "another writer's numbers are its own"
        );
        // A refused sample is forgotten, and passes when it comes again.
        d.forget(g(1), 4);
        assert!(d.first_time(g(1), 4));
        assert_eq!(d.duplicates, 4);
    }

    #[test]
    fn memory_stays_bounded_under_gaps() {
        let mut d = Delivered::default();
        for s in 0..(3 * MAX_ABOVE_FLOOR as i64) {
            d.first_time(g(1), 2 + 2 * s);
        }
        let s = &d.writers[&g(1)];
        assert!(s.above.len() <= MAX_ABOVE_FLOOR);
        assert!(s.floor > 0);
    }
}

thread_local! {
    /// The reader whose protocol core is delivering on this thread (its address; 0: none), and
    /// the samples its sink held meanwhile, by writer and sequence number: `handle` applies
    /// them to the core once the delivery returns (the sink runs under the core's lock).
    static HOLD_SCOPE: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    static HELD: std::cell::RefCell<Vec<(Guid, SequenceNumber)>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Marks `reader` as delivering from its protocol core on this thread until dropped (the
/// previous scope comes back: a listener may deliver to another reader meanwhile).
pub(crate) struct HoldScope {
    previous: usize,
    held_from: usize,
}

impl HoldScope {
    pub(crate) fn enter(reader: usize) -> HoldScope {
        HoldScope {
            previous: HOLD_SCOPE.with(|c| c.replace(reader)),
            held_from: HELD.with(|h| h.borrow().len()),
        }
    }

    /// Whether a sample `reader`'s sink gets now came from its protocol core.
    pub(crate) fn holds_for(reader: usize) -> bool {
        reader != 0 && HOLD_SCOPE.with(|c| c.get()) == reader
    }

    pub(crate) fn record(writer: Guid, seq: SequenceNumber) {
        HELD.with(|h| h.borrow_mut().push((writer, seq)));
    }

    /// The holds recorded in this scope.
    pub(crate) fn take_held(&self) -> Vec<(Guid, SequenceNumber)> {
        HELD.with(|h| {
            let mut h = h.borrow_mut();
            if h.len() <= self.held_from {
                return Vec::new();
            }
            h.split_off(self.held_from)
        })
    }
}

impl Drop for HoldScope {
    fn drop(&mut self) {
        HOLD_SCOPE.with(|c| c.set(self.previous));
    }
}
