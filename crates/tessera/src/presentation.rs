//! PRESENTATION on the reader side: coherent sets held back until complete.
//!
//! A reader whose subscriber requests `coherent_access` gets each writer's coherent set all
//! at once or not at all. Samples arrive from the reliability core in the writer's order
//! (`ReaderCore` delivers in sequence order and buffers what comes early), so a set is
//! complete when its samples arrived *without a hole* from its first number on and something
//! ended it:
//! - the writer's end-of-set marker (a DATA without payload whose PID_COHERENT_SET is
//!   SEQUENCENUMBER_UNKNOWN, what Tessera sends, see `tessera_rtps::writer::coherent`), or
//! - a later sample of the same writer with another set number or none (RTPS 2.3 §8.7.5: how
//!   a writer that sends no marker ends a set).
//!
//! A set with a hole (a sample the writer replaced and answered with a GAP, a best-effort
//! loss, a set already under way when the reader matched) is dropped whole, as is the open
//! set of a writer that goes away, and a set larger than [`MAX_SET_SAMPLES`] or
//! [`MAX_SET_BYTES`] (a peer cannot make the reader hold unbounded memory). Each is counted
//! ([`CoherentCounters::sets_dropped`]). Readers without `coherent_access` never build this
//! and see every sample as it arrives (markers are skipped).
//!
//! Scope: per writer, which is what TOPIC scope promises and more than INSTANCE scope needs.
//! GROUP scope (a set across the writers of one publisher, PID_GROUP_COHERENT_SET) is the
//! subscriber's: samples of a group set bypass this and go to the subscriber's group
//! assembler (`subscription/group_coherent.rs`), which shows the set in all readers at once.

use crate::error::{Error, Result};
use crate::history::History;
use crate::qos::{Presentation, PresentationAccessScope};
use crate::sample::SerializedPayload;
use crate::subscription::ReaderEndpoint;
use crate::Subscriber;
use parking_lot::Mutex;
use std::borrow::Cow;
use std::sync::Arc;
use tessera_rtps::fasthash::FastHashMap;
use tessera_rtps::reader::Delivered;
use tessera_rtps::types::{Guid, SequenceNumber};
use tessera_rtps::wire::PayloadKind;
use tessera_rtps::writer::COHERENT_SET_END;

/// Gives a new reader what its subscriber's PRESENTATION asks for: coherent sets held back
/// until complete, and ordered access (TOPIC or GROUP scope: `read`/`take` return samples in
/// the order they arrived, across instances; see [`crate::history`]).
pub(crate) fn setup_reader(ep: &ReaderEndpoint, p: &Presentation) {
    if p.coherent_access {
        let _ = ep.coherent.set(Mutex::new(CoherentSets::default()));
    }
    if p.ordered_access && p.access_scope >= PresentationAccessScope::Topic {
        ep.history.lock().set_ordered(true);
    }
}

impl ReaderEndpoint {
    /// Puts one delivered sample, still serialized, in the history: a copy of its payload, or
    /// the writer's own buffer when `shared` (local delivery). A reader with coherent access
    /// holds the samples of a coherent set back and stores the whole set, under this one
    /// history lock, when it is complete. Returns whether the history changed in a way
    /// readers should hear about.
    pub(crate) fn accept(
        &self,
        d: &Delivered<'_>,
        shared: Option<&Arc<Vec<u8>>>,
        history: &mut History<SerializedPayload>,
        rejected: &mut u32,
    ) -> bool {
        if let Some(g) = self.group.get() {
            if crate::subscription::GroupAssembler::takes(d) {
                // Shown by the subscriber once the whole group set is here.
                g.offer(&self.me, d, shared);
                return false;
            }
        }
        if let Some(sets) = self.coherent.get() {
            let offer = sets.lock().offer(d, shared);
            match offer {
                Offer::Pass => {}
                Offer::Held => return false,
                Offer::Release { samples, then_pass } => {
                    let mut changed = false;
                    for h in samples {
                        let mut held = h.delivered;
                        if let Some(b) = &h.shared {
                            held.payload = Cow::Borrowed(b.as_slice());
                        }
                        changed |= self.accept_one(&held, h.shared.as_ref(), history, rejected);
                    }
                    if then_pass {
                        changed |= self.accept_one(d, shared, history, rejected);
                    }
                    return changed;
                }
            }
        }
        self.accept_one(d, shared, history, rejected)
    }
}

impl Subscriber {
    /// Marks the start of a series of reads or takes of this subscriber's readers (DDS
    /// `begin_access`). Calls nest. At GROUP access scope with `coherent_access`, group sets
    /// that complete in between are shown only at the outermost
    /// [`Subscriber::end_access`], so the series sees each set in all readers or in none;
    /// per-writer sets are handed out whole whether or not reads are bracketed.
    pub fn begin_access(&self) -> Result<()> {
        *self.access.lock() += 1;
        if let Some(g) = &self.group_sets {
            g.begin_access();
        }
        Ok(())
    }

    /// Ends the series of accesses begun with [`Subscriber::begin_access`];
    /// [`Error::PreconditionNotMet`] without a matching `begin_access`.
    pub fn end_access(&self) -> Result<()> {
        let mut depth = self.access.lock();
        if *depth == 0 {
            return Err(Error::PreconditionNotMet(
                "end_access without begin_access".into(),
            ));
        }
        *depth -= 1;
        drop(depth);
        if let Some(g) = &self.group_sets {
            g.end_access();
        }
        Ok(())
    }
}

/// Most samples one held coherent set may have; a larger set is dropped.
pub const MAX_SET_SAMPLES: usize = 65_536;
/// Most payload bytes one reader holds in open coherent sets, all writers together.
pub const MAX_SET_BYTES: usize = 64 << 20;

/// What a reader counts of coherent sets.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CoherentCounters {
    /// Sets delivered whole.
    pub sets_delivered: u64,
    /// Sets dropped: incomplete (a hole, or started before the reader matched), abandoned
    /// by a writer that went away, or over the size bounds.
    pub sets_dropped: u64,
    /// Samples of the dropped sets.
    pub samples_dropped: u64,
}

/// A held sample: what the history needs, owned.
pub(crate) struct Held {
    pub delivered: Delivered<'static>,
    /// The local writer's buffer (delivery without the network shares it).
    pub shared: Option<Arc<Vec<u8>>>,
}

struct OpenSet {
    /// The set's number (its first sample's).
    id: SequenceNumber,
    /// The number the next sample of the set must have.
    next: SequenceNumber,
    /// A sample is missing: the set is dropped when it ends.
    broken: bool,
    samples: Vec<Held>,
}

/// What to do with a delivered sample.
pub(crate) enum Offer {
    /// Not part of a set: store it now.
    Pass,
    /// Held (or dropped) as part of an open set; nothing to store now.
    Held,
    /// A set ended complete: store these, in order, under one history lock. `then_pass`: the
    /// sample offered (the one that ended the set) is to be stored after them.
    Release { samples: Vec<Held>, then_pass: bool },
}

/// The open coherent sets of one reader, per writer.
#[derive(Default)]
pub(crate) struct CoherentSets {
    open: FastHashMap<Guid, OpenSet>,
    bytes: usize,
    pub counters: CoherentCounters,
}

impl CoherentSets {
    /// Sorts a delivered sample: held in its writer's open set, passed on, or the end of a
    /// set whose samples are released.
    pub(crate) fn offer(&mut self, d: &Delivered<'_>, shared: Option<&Arc<Vec<u8>>>) -> Offer {
        // A relayed sample (durability service) stands for another writer: not grouped.
        if d.original.is_some() {
            return Offer::Pass;
        }
        let marker = d.kind == PayloadKind::None && d.status_info & 0x3 == 0;
        match d.coherent_set {
            Some(COHERENT_SET_END) if marker => {
                let released = self.close(d.writer, d.seq);
                self.released(released, false)
            }
            Some(id) if id != COHERENT_SET_END && !marker => self.hold(d, id, shared),
            // No set (or a malformed mix): it ends the writer's open set, if any.
            _ => {
                let released = self.close(d.writer, d.seq);
                self.released(released, true)
            }
        }
    }

    fn released(&self, samples: Option<Vec<Held>>, then_pass: bool) -> Offer {
        match samples {
            Some(samples) => Offer::Release { samples, then_pass },
            None if then_pass => Offer::Pass,
            None => Offer::Held,
        }
    }

    fn hold(
        &mut self,
        d: &Delivered<'_>,
        id: SequenceNumber,
        shared: Option<&Arc<Vec<u8>>>,
    ) -> Offer {
        let mut released = None;
        if self.open.get(&d.writer).is_some_and(|s| s.id != id) {
            // A new set number ends the previous set.
            released = self.close(d.writer, d.seq);
        }
        let set = self.open.entry(d.writer).or_insert_with(|| OpenSet {
            id,
            next: id,
            broken: false,
            samples: Vec::new(),
        });
        if d.seq != set.next {
            // A hole (or a set we joined late): the set cannot be complete.
            set.broken = true;
        }
        set.next = d.seq + 1;
        let len = shared.map_or(d.payload.len(), |b| b.len());
        if set.broken
            || set.samples.len() >= MAX_SET_SAMPLES
            || self.bytes.saturating_add(len) > MAX_SET_BYTES
        {
            if !set.broken {
                set.broken = true;
            }
            self.bytes -= set.samples.iter().map(held_len).sum::<usize>();
            self.counters.samples_dropped += set.samples.len() as u64 + 1;
            set.samples.clear();
        } else {
            self.bytes += len;
            set.samples.push(Held {
                delivered: owned(d, shared.is_some()),
                shared: shared.cloned(),
            });
        }
        match released {
            Some(samples) => Offer::Release {
                samples,
                then_pass: false,
            },
            None => Offer::Held,
        }
    }

    /// Ends `writer`'s open set at sample `seq` (a marker or a sample outside the set):
    /// its samples if it is complete, else counts it dropped.
    fn close(&mut self, writer: Guid, seq: SequenceNumber) -> Option<Vec<Held>> {
        let set = self.open.remove(&writer)?;
        self.bytes -= set.samples.iter().map(held_len).sum::<usize>();
        if set.broken || seq != set.next {
            self.counters.sets_dropped += 1;
            self.counters.samples_dropped += set.samples.len() as u64;
            return None;
        }
        self.counters.sets_delivered += 1;
        Some(set.samples)
    }

    /// The writer went away (unmatched, lost, deleted): its open set is dropped.
    pub(crate) fn writer_gone(&mut self, writer: Guid) {
        if let Some(set) = self.open.remove(&writer) {
            self.bytes -= set.samples.iter().map(held_len).sum::<usize>();
            self.counters.sets_dropped += 1;
            self.counters.samples_dropped += set.samples.len() as u64;
        }
    }
}

fn held_len(h: &Held) -> usize {
    h.shared
        .as_ref()
        .map_or(h.delivered.payload.len(), |b| b.len())
}

/// `d` owning its payload (none when the local writer's shared buffer stands for it).
pub(crate) fn owned(d: &Delivered<'_>, shared: bool) -> Delivered<'static> {
    Delivered {
        writer: d.writer,
        seq: d.seq,
        kind: d.kind,
        payload: if shared {
            Cow::Owned(Vec::new())
        } else {
            Cow::Owned(d.payload.to_vec())
        },
        status_info: d.status_info,
        key_hash: d.key_hash,
        source_timestamp: d.source_timestamp,
        original: d.original,
        coherent_set: d.coherent_set,
        group: d.group,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tessera_rtps::types::{EntityId, GuidPrefix};

    fn w(n: u8) -> Guid {
        Guid::new(GuidPrefix([n; 12]), EntityId::new(1, 0x03))
    }

    fn sample(
        writer: Guid,
        seq: SequenceNumber,
        set: Option<SequenceNumber>,
    ) -> Delivered<'static> {
        Delivered {
            writer,
            seq,
            kind: PayloadKind::Data,
            payload: Cow::Owned(vec![seq as u8; 8]),
            status_info: 0,
            key_hash: None,
            source_timestamp: None,
            original: None,
            coherent_set: set,
            group: None,
        }
    }

    fn marker(writer: Guid, seq: SequenceNumber) -> Delivered<'static> {
        Delivered {
            kind: PayloadKind::None,
            payload: Cow::Owned(Vec::new()),
            ..sample(writer, seq, Some(COHERENT_SET_END))
        }
    }

    fn seqs(o: Offer) -> Option<(Vec<SequenceNumber>, bool)> {
        match o {
            Offer::Release { samples, then_pass } => {
                Some((samples.iter().map(|h| h.delivered.seq).collect(), then_pass))
            }
            _ => None,
        }
    }

    #[test]
    fn a_set_is_released_whole_at_its_marker_or_at_the_next_set() {
        let mut c = CoherentSets::default();
        assert!(matches!(c.offer(&sample(w(1), 1, None), None), Offer::Pass));
        assert!(matches!(
            c.offer(&sample(w(1), 2, Some(2)), None),
            Offer::Held
        ));
        assert!(matches!(
            c.offer(&sample(w(1), 3, Some(2)), None),
            Offer::Held
        ));
        assert_eq!(
            seqs(c.offer(&marker(w(1), 4), None)),
            Some((vec![2, 3], false))
        );
        // A writer that sends no marker: the next set ends this one, a sample outside any
        // set ends the next.
        assert!(matches!(
            c.offer(&sample(w(1), 5, Some(5)), None),
            Offer::Held
        ));
        assert_eq!(
            seqs(c.offer(&sample(w(1), 6, Some(6)), None)),
            Some((vec![5], false))
        );
        assert_eq!(
            seqs(c.offer(&sample(w(1), 7, None), None)),
            Some((vec![6], true))
        );
        assert_eq!(c.counters.sets_delivered, 3);
        assert_eq!(c.counters.sets_dropped, 0);
    }

    #[test]
    fn a_set_with_a_hole_or_joined_late_is_dropped() {
        let mut c = CoherentSets::default();
        // Joined late: the set began at 10.
        assert!(matches!(
            c.offer(&sample(w(1), 11, Some(10)), None),
            Offer::Held
        ));
        assert!(matches!(c.offer(&marker(w(1), 12), None), Offer::Held));
        // A hole: 21 skipped (a GAP).
        c.offer(&sample(w(1), 20, Some(20)), None);
        c.offer(&sample(w(1), 22, Some(20)), None);
        assert!(matches!(c.offer(&marker(w(1), 23), None), Offer::Held));
        // The marker itself missing: the next set's first sample is not the next number.
        c.offer(&sample(w(1), 30, Some(30)), None);
        assert!(matches!(
            c.offer(&sample(w(1), 32, None), None),
            Offer::Pass
        ));
        assert_eq!(c.counters.sets_dropped, 3);
        assert_eq!(c.counters.sets_delivered, 0);
        assert_eq!(c.bytes, 0);
    }

    #[test]
    fn writers_have_sets_of_their_own_and_a_lost_writer_loses_its_open_set() {
        let mut c = CoherentSets::default();
        c.offer(&sample(w(1), 1, Some(1)), None);
        c.offer(&sample(w(2), 1, Some(1)), None);
        c.offer(&sample(w(1), 2, Some(1)), None);
        assert_eq!(
            seqs(c.offer(&marker(w(2), 2), None)),
            Some((vec![1], false))
        );
        c.writer_gone(w(1));
        assert_eq!(c.counters.sets_dropped, 1);
        assert_eq!(c.counters.samples_dropped, 2);
        assert!(matches!(c.offer(&marker(w(1), 3), None), Offer::Held));
        assert_eq!(c.bytes, 0);
    }
}
