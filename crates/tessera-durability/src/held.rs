//! Replicated services: samples taken from their writers but not acknowledged yet.
//!
//! A replicated service acknowledges a sample only once the services' log applied it. Rather
//! than refusing each sample until its commit (one commit round trip per sample), the sink
//! takes it, proposes it and answers [`tessera::SinkVerdict::Held`]: the reader keeps its
//! acknowledgments to that writer below the lowest held sample, so the writer keeps the
//! sample (and what it wrote after) while many proposals are in flight at once. When the log
//! applies them, the hold moves up ([`HeldAcks::release_applied`]); a held sample the log has
//! not applied in time is proposed again ([`HeldAcks::due`]).

use crate::store::StoredSample;
use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};
use tessera::rtps::types::Guid;

/// Samples a topic's sink holds, by writer and sequence number.
#[derive(Default)]
pub(crate) struct HeldAcks {
    by_writer: HashMap<Guid, BTreeMap<i64, Held>>,
    count: usize,
}

struct Held {
    sample: StoredSample,
    /// When this service proposed it (`None`: not yet, another service is expected to).
    proposed: Option<Instant>,
    /// When it was taken.
    since: Instant,
}

impl HeldAcks {
    /// Samples held over all writers.
    pub(crate) fn len(&self) -> usize {
        self.count
    }

    /// Whether `seq` of `writer` is held.
    pub(crate) fn contains(&self, writer: &Guid, seq: i64) -> bool {
        self.by_writer
            .get(writer)
            .is_some_and(|m| m.contains_key(&seq))
    }

    /// Holds `sample`, proposed at `proposed` (or not yet).
    pub(crate) fn insert(&mut self, sample: StoredSample, proposed: Option<Instant>, now: Instant) {
        let m = self.by_writer.entry(sample.writer).or_default();
        let seq = sample.sequence_number;
        let held = Held {
            sample,
            proposed,
            since: now,
        };
        if m.insert(seq, held).is_none() {
            self.count += 1;
        }
    }

    /// The lowest sample of `writer` still held: where its reader's acknowledgments stop.
    pub(crate) fn lowest(&self, writer: &Guid) -> Option<i64> {
        self.by_writer
            .get(writer)
            .and_then(|m| m.first_key_value().map(|(s, _)| *s))
    }

    /// Lets go of the samples the log applied (per writer, everything at or below its mark in
    /// `applied`); returns the writers whose lowest held sample moved.
    pub(crate) fn release_applied(&mut self, applied: &HashMap<Guid, i64>) -> Vec<Guid> {
        let mut moved = Vec::new();
        self.by_writer.retain(|w, m| {
            let Some(&high) = applied.get(w) else {
                return true;
            };
            let before = m.len();
            *m = m.split_off(&(high + 1));
            if m.len() != before {
                self.count -= before - m.len();
                moved.push(*w);
            }
            !m.is_empty()
        });
        moved
    }

    /// The held samples to propose now: those not proposed by this service and held longer
    /// than `grace` (the designated service did not get them into the log), and those
    /// proposed longer than `again` ago (no leader then, a proposal lost in a leader change).
    /// Each is marked proposed at `now`; the flag says whether it is a repeat.
    pub(crate) fn due(
        &mut self,
        now: Instant,
        grace: Duration,
        again: Duration,
    ) -> Vec<(StoredSample, bool)> {
        let mut out = Vec::new();
        for h in self.by_writer.values_mut().flat_map(|m| m.values_mut()) {
            let repeat = match h.proposed {
                None if now.duration_since(h.since) >= grace => false,
                Some(t) if now.duration_since(t) >= again => true,
                _ => continue,
            };
            h.proposed = Some(now);
            out.push((h.sample.clone(), repeat));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tessera::rtps::types::{EntityId, GuidPrefix};

    fn writer(n: u8) -> Guid {
        Guid::new(GuidPrefix([n; 12]), EntityId::new(1, 2))
    }

    fn sample(w: Guid, seq: i64) -> StoredSample {
        StoredSample {
            writer: w,
            sequence_number: seq,
            key_hash: [0; 16],
            status_info: 0,
            source_timestamp: 0,
            arrival: 0,
            payload: vec![0, 1, 0, 0],
        }
    }

    #[test]
    fn the_hold_moves_as_the_log_applies_and_lifts_when_nothing_is_left() {
        let t0 = Instant::now();
        let (a, b) = (writer(1), writer(2));
        let mut h = HeldAcks::default();
        for seq in 3..=6 {
            h.insert(sample(a, seq), Some(t0), t0);
        }
        h.insert(sample(b, 9), Some(t0), t0);
        assert_eq!((h.len(), h.lowest(&a), h.lowest(&b)), (5, Some(3), Some(9)));
        assert!(h.contains(&a, 4) && !h.contains(&a, 7));

        let applied = HashMap::from([(a, 4), (b, 2)]);
        assert_eq!(h.release_applied(&applied), vec![a]);
        assert_eq!((h.len(), h.lowest(&a), h.lowest(&b)), (3, Some(5), Some(9)));

        let applied = HashMap::from([(a, 6), (b, 9)]);
        let mut moved = h.release_applied(&applied);
        moved.sort_by_key(|g| g.prefix.0[0]);
        assert_eq!(moved, vec![a, b]);
        assert_eq!((h.len(), h.lowest(&a), h.lowest(&b)), (0, None, None));
    }

    #[test]
    fn unproposed_samples_are_due_after_the_grace_and_proposed_ones_after_the_retry_time() {
        let t0 = Instant::now();
        let w = writer(1);
        let mut h = HeldAcks::default();
        h.insert(sample(w, 1), None, t0);
        h.insert(sample(w, 2), Some(t0), t0);
        let grace = Duration::from_millis(10);
        let again = Duration::from_secs(2);
        assert!(h.due(t0, grace, again).is_empty());
        let first = h.due(t0 + grace, grace, again);
        assert_eq!(first.len(), 1);
        assert_eq!((first[0].0.sequence_number, first[0].1), (1, false));
        assert!(h.due(t0 + grace, grace, again).is_empty(), "proposed once");
        let repeats = h.due(t0 + grace + again, grace, again);
        let mut seqs: Vec<(i64, bool)> = repeats
            .iter()
            .map(|(s, r)| (s.sequence_number, *r))
            .collect();
        seqs.sort();
        assert_eq!(seqs, vec![(1, true), (2, true)]);
    }
}
