//! PRESENTATION at GROUP access scope on the reader side: a publisher's group coherent set
//! shown in all of a subscriber's readers together, or in none.
//!
//! A subscriber with GROUP scope and `coherent_access` has one [`GroupAssembler`] that all
//! its readers share. A sample carrying PID_GROUP_COHERENT_SET is not stored by the reader
//! that received it but handed here, into the set's *part* for its writer. A part is whole
//! when its samples came without a hole from the writer's PID_COHERENT_SET number on and the
//! writer's end marker followed. The set is complete when the end markers said how many
//! samples it has (PID_GROUP_SEQ_NUM of the marker minus the set's number, plus one) and
//! from which writers (PID_WRITER_GROUP_INFO) and the whole parts hold exactly those.
//!
//! A complete set is released into the readers' histories under all their history locks at
//! once (taken in GUID order), in the publisher's order (group sequence numbers), and a
//! publisher's sets in the order it wrote them. Release happens with no other lock held
//! (after the receive path dropped its reader's locks) and waits while the application is
//! between `begin_access` and `end_access`, so that a series of reads sees either all of a
//! set or none of it.
//!
//! Dropped and counted ([`GroupCounters`]): a set with a hole or joined late, a set one of
//! whose writers went away before it ended (abandoned), a set that does not add up, and the
//! oldest open sets when a subscriber holds more than [`MAX_GROUP_SETS`] sets or
//! [`MAX_GROUP_BYTES`] bytes (a peer cannot make it hold unbounded memory).
//!
//! Limitation: the subscriber must read every topic the set's writers write. A set whose
//! writers include one this subscriber has no reader for never completes, and is dropped
//! once later sets push it out of the bounds.

use super::ReaderEndpoint;
use crate::error::{Error, Result};
use crate::presentation::{owned, Held};
use crate::{StateMasks, Subscriber};
use parking_lot::Mutex;
use std::borrow::Cow;
use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Weak};
use tessera_rtps::fasthash::FastHashMap;
use tessera_rtps::reader::Delivered;
use tessera_rtps::types::{EntityId, Guid, GuidPrefix, SequenceNumber};
use tessera_rtps::wire::PayloadKind;
use tessera_rtps::writer::{writer_set_digest, COHERENT_SET_END};

/// Most group sets a subscriber holds open (all publishers together).
pub const MAX_GROUP_SETS: usize = 256;
/// Most payload bytes a subscriber holds in open group sets.
pub const MAX_GROUP_BYTES: usize = 64 << 20;
/// What a held sample costs besides its payload, for [`MAX_GROUP_BYTES`].
const HELD_OVERHEAD: usize = 128;
/// Sets remembered as finished, so that their stragglers are dropped.
const DEAD_SETS: usize = 1024;

/// What a subscriber counts of group coherent sets: the reader's counters, for the group.
/// `samples_dropped` also counts stragglers of sets already finished.
pub type GroupCounters = crate::presentation::CoherentCounters;

/// A group set: (writer participant, group set number). Tessera's group numbers carry the
/// publisher in their high bits, so two publishers of a participant never share a key.
type SetKey = (GuidPrefix, SequenceNumber);

/// One writer's samples of a group set.
struct Part {
    reader: Weak<ReaderEndpoint>,
    /// The writer's own coherent set number: its first sample's sequence number.
    first: SequenceNumber,
    /// The sequence number the next sample must have.
    next: SequenceNumber,
    /// The end marker arrived, with nothing missing before it.
    ended: bool,
    /// Samples with their group sequence numbers.
    samples: Vec<(SequenceNumber, Held)>,
}

#[derive(Default)]
struct OpenSet {
    parts: FastHashMap<Guid, Part>,
    /// From an end marker: the set's last group number and its writers' digest.
    expected: Option<(SequenceNumber, [u8; 4])>,
    broken: bool,
    bytes: usize,
}

impl OpenSet {
    fn len(&self) -> usize {
        self.parts.values().map(|p| p.samples.len()).sum()
    }

    /// Every announced writer ended its part: (whole and adds up, or not).
    fn ended(&self, id: SequenceNumber) -> Option<bool> {
        let (last, digest) = self.expected?;
        if !self.parts.values().all(|p| p.ended) {
            return None;
        }
        let ids: Vec<EntityId> = self.parts.keys().map(|g| g.entity_id).collect();
        if writer_set_digest(&ids) != digest {
            // A writer of the set has not been heard from yet (or is not read here).
            return None;
        }
        Some(!self.broken && self.len() as i64 == last - id + 1)
    }

    fn complete(&self, id: SequenceNumber) -> bool {
        self.ended(id) == Some(true)
    }
}

/// A set ready to be shown: (reader, group number, sample).
type Ready = Vec<(Weak<ReaderEndpoint>, SequenceNumber, Held)>;

#[derive(Default)]
struct State {
    open: BTreeMap<SetKey, OpenSet>,
    ready: VecDeque<Ready>,
    bytes: usize,
    /// Finished sets (dropped or released): their late samples are dropped.
    dead: VecDeque<SetKey>,
    counters: GroupCounters,
}

/// The group coherent sets of one subscriber (see the [module docs](self)).
#[derive(Default)]
pub struct GroupAssembler {
    state: Mutex<State>,
    /// Held while sets go into histories: one set at a time, in order.
    release: Mutex<()>,
    /// `begin_access` depth: sets wait while it is not zero.
    access: AtomicU32,
}

impl std::fmt::Debug for GroupAssembler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GroupAssembler")
            .field("counters", &self.counters())
            .finish()
    }
}

impl GroupAssembler {
    pub fn counters(&self) -> GroupCounters {
        self.state.lock().counters
    }

    /// Whether `d` belongs to a group set (then [`Self::offer`] takes it).
    pub fn takes(d: &Delivered<'_>) -> bool {
        d.original.is_none() && d.group.is_some_and(|g| g.set.is_some())
    }

    /// Holds a sample of a group set that `reader` received. Called under the reader's own
    /// locks: only sorts; [`Self::flush`] shows what completed.
    pub fn offer(
        &self,
        reader: &Weak<ReaderEndpoint>,
        d: &Delivered<'_>,
        shared: Option<&Arc<Vec<u8>>>,
    ) {
        let Some(g) = d.group else { return };
        let Some(id) = g.set else { return };
        let key = (d.writer.prefix, id);
        let mut st = self.state.lock();
        if st.dead.contains(&key) {
            st.counters.samples_dropped += 1;
            return;
        }
        let marker = d.kind == PayloadKind::None && d.status_info & 0x3 == 0;
        // Each held sample also costs its bookkeeping: empty samples are bounded too.
        let len = shared.map_or(d.payload.len(), |b| b.len()) + HELD_OVERHEAD;
        let set = st.open.entry(key).or_default();
        let part = set.parts.entry(d.writer).or_insert_with(|| {
            // The writer's set number is its first sample's: a part that starts elsewhere
            // was joined late.
            let first = d
                .coherent_set
                .filter(|&s| s != COHERENT_SET_END)
                .unwrap_or(d.seq);
            Part {
                reader: reader.clone(),
                first,
                next: first,
                ended: false,
                samples: Vec::new(),
            }
        });
        if d.seq != part.next || part.ended {
            set.broken = true;
        }
        part.next = d.seq + 1;
        if marker {
            part.ended = true;
            if let Some(w) = g.writers {
                set.expected = Some((g.gsn, w));
            }
        } else if d.coherent_set != Some(part.first) || g.gsn <= 0 {
            set.broken = true;
        } else {
            part.samples.push((
                g.gsn,
                Held {
                    delivered: owned(d, shared.is_some()),
                    shared: shared.cloned(),
                },
            ));
            set.bytes += len;
            st.bytes += len;
        }
        self.settle(&mut st, key);
    }

    /// After a change to set `key`: drops it if broken, moves complete sets of its publisher
    /// to the ready queue in order, and enforces the bounds.
    fn settle(&self, st: &mut State, key: SetKey) {
        // Broken, or all its writers' parts ended but the count does not add up.
        let failed = st.open.get(&key).is_some_and(|s| {
            (s.broken && s.parts.values().all(|p| p.ended)) || s.ended(key.1) == Some(false)
        });
        if failed {
            drop_set(st, key);
        }
        // A publisher's sets go out in order: the complete ones before the first open one.
        let publisher = |k: &SetKey| (k.0, k.1 >> 32);
        while let Some(first) = st
            .open
            .iter()
            .find(|(k, _)| publisher(k) == publisher(&key))
            .filter(|(k, set)| set.complete(k.1))
            .map(|(k, _)| *k)
        {
            let Some(set) = st.open.remove(&first) else {
                break;
            };
            st.bytes -= set.bytes;
            let mut samples: Ready = set
                .parts
                .into_values()
                .flat_map(|p| {
                    let r = p.reader;
                    p.samples
                        .into_iter()
                        .map(move |(gsn, h)| (r.clone(), gsn, h))
                })
                .collect();
            samples.sort_by_key(|s| s.1);
            st.counters.sets_delivered += 1;
            st.ready.push_back(samples);
            remember(st, first);
        }
        while st.open.len() > MAX_GROUP_SETS || st.bytes > MAX_GROUP_BYTES {
            let Some((&oldest, _)) = st.open.iter().next() else {
                break;
            };
            drop_set(st, oldest);
        }
    }

    /// A writer went away: the open sets it had a part in are dropped (it will never end
    /// them). Then shows whatever this unblocked.
    pub fn writer_gone(&self, writer: Guid) {
        {
            let mut st = self.state.lock();
            let keys: Vec<SetKey> = st
                .open
                .iter()
                .filter(|(_, s)| s.parts.get(&writer).is_some_and(|p| !p.ended))
                .map(|(k, _)| *k)
                .collect();
            for k in keys {
                drop_set(&mut st, k);
                self.settle(&mut st, k);
            }
        }
        self.flush();
    }

    pub fn begin_access(&self) {
        self.access.fetch_add(1, Ordering::AcqRel);
    }

    /// Ends an access; the last one shows the sets that completed meanwhile.
    pub fn end_access(&self) {
        if self.access.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.flush();
        }
    }

    /// Shows the complete sets: each one's samples go into its readers' histories under all
    /// their locks at once. Called with no reader lock held. The readers' statuses are
    /// raised after the release lock is dropped: a listener may read, write or end an access.
    pub fn flush(&self) {
        let mut shown = Vec::new();
        {
            let _one = self.release.lock();
            while self.access.load(Ordering::Acquire) == 0 {
                let Some(set) = self.state.lock().ready.pop_front() else {
                    break;
                };
                show(set, &mut shown);
            }
        }
        for (r, available, rejected) in shown {
            r.group_shown(available, rejected);
        }
    }
}

/// What showing a set did to one reader: DATA_AVAILABLE, samples refused.
type Shown = (Arc<ReaderEndpoint>, bool, u32);

/// Stores one set in its readers' histories, all locked together; appends to `shown` what
/// each reader is to be told.
fn show(set: Ready, shown: &mut Vec<Shown>) {
    let mut readers: Vec<Arc<ReaderEndpoint>> = Vec::new();
    for (r, _, _) in &set {
        if let Some(r) = r.upgrade() {
            if !readers.iter().any(|x| Arc::ptr_eq(x, &r)) {
                readers.push(r);
            }
        }
    }
    readers.sort_by_key(|r| r.guid);
    let mut outcomes = vec![(false, 0u32); readers.len()];
    {
        let mut locks: Vec<_> = readers.iter().map(|r| r.history.lock()).collect();
        for (r, _, h) in &set {
            let Some(i) = readers
                .iter()
                .position(|x| Weak::ptr_eq(r, &Arc::downgrade(x)))
            else {
                continue;
            };
            let mut d = h.delivered.clone();
            if let Some(b) = &h.shared {
                d.payload = Cow::Borrowed(b.as_slice());
            }
            let (avail, rejected) = &mut outcomes[i];
            *avail |= readers[i].accept_one(&d, h.shared.as_ref(), &mut locks[i], rejected);
        }
    }
    for (r, (avail, rejected)) in readers.into_iter().zip(outcomes) {
        shown.push((r, avail, rejected));
    }
}

fn drop_set(st: &mut State, key: SetKey) {
    if let Some(set) = st.open.remove(&key) {
        st.bytes -= set.bytes;
        st.counters.sets_dropped += 1;
        st.counters.samples_dropped += set.len() as u64;
        remember(st, key);
    }
}

fn remember(st: &mut State, key: SetKey) {
    if st.dead.len() >= DEAD_SETS {
        st.dead.pop_front();
    }
    st.dead.push_back(key);
}

/// One entry of [`Subscriber::get_datareaders`]: a reader and how many of the selected
/// samples, in order, to read or take from it before moving to the next entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReaderRun {
    /// The reader ([`DataReader::guid`](crate::DataReader::guid)).
    pub reader: Guid,
    /// The samples of this run: with GROUP ordered access, the reader's next samples in the
    /// publishers' order up to the next entry's; otherwise all of the reader's selected
    /// samples.
    pub samples: usize,
}

impl Subscriber {
    /// The readers of this subscriber that have samples `masks` selects (DDS
    /// `get_datareaders`). With PRESENTATION GROUP scope and `ordered_access` the list is
    /// in the order the samples arrived across all the readers (for a group coherent set:
    /// the publisher's write order across its topics); a reader appears once per run of
    /// consecutive samples, so reading each entry's `samples` from its reader in list order
    /// reads everything in that order. Otherwise each reader appears once.
    ///
    /// At GROUP scope with `ordered_access` it must be called between
    /// [`Subscriber::begin_access`] and [`Subscriber::end_access`]
    /// ([`Error::PreconditionNotMet`] otherwise, as DDS specifies).
    pub fn get_datareaders(&self, masks: StateMasks) -> Result<Vec<ReaderRun>> {
        if self.group_order.is_some() && *self.access.lock() == 0 {
            return Err(Error::PreconditionNotMet(
                "get_datareaders with GROUP ordered access outside begin_access/end_access".into(),
            ));
        }
        let per: Vec<(Guid, Vec<u64>)> = self
            .readers()
            .into_iter()
            .map(|ep| (ep.guid, ep.history.lock().arrival_numbers(masks)))
            .filter(|(_, o)| !o.is_empty())
            .collect();
        if self.group_order.is_none() {
            return Ok(per
                .into_iter()
                .map(|(reader, o)| ReaderRun {
                    reader,
                    samples: o.len(),
                })
                .collect());
        }
        Ok(runs(per))
    }

    fn readers(&self) -> Vec<Arc<ReaderEndpoint>> {
        self.group
            .members()
            .into_iter()
            .map(|o| o.ep.clone())
            .collect()
    }

    /// Group coherent sets shown, dropped (incomplete, abandoned, over the bounds) and their
    /// samples, for a subscriber with GROUP scope and `coherent_access` (zeros otherwise).
    pub fn group_coherent_set_counters(&self) -> GroupCounters {
        self.group_sets
            .as_ref()
            .map_or_else(GroupCounters::default, |g| g.counters())
    }
}

/// Merges the readers' arrival numbers into runs: one entry per stretch of consecutive
/// numbers that belong to the same reader.
fn runs(per: Vec<(Guid, Vec<u64>)>) -> Vec<ReaderRun> {
    let mut all: Vec<(u64, Guid)> = per
        .into_iter()
        .flat_map(|(g, o)| o.into_iter().map(move |n| (n, g)))
        .collect();
    all.sort_unstable_by_key(|x| x.0);
    let mut out: Vec<ReaderRun> = Vec::new();
    for (_, g) in all {
        match out.last_mut() {
            Some(r) if r.reader == g => r.samples += 1,
            _ => out.push(ReaderRun {
                reader: g,
                samples: 1,
            }),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use tessera_rtps::writer::GroupTag;

    fn w(n: u8) -> Guid {
        Guid::new(GuidPrefix([7; 12]), EntityId::new(n.into(), 0x03))
    }

    /// Sample `seq` of writer `n`, whose own set began at `first`, group number `gsn` in
    /// group set `set`.
    fn sample(n: u8, seq: i64, first: i64, set: i64, gsn: i64) -> Delivered<'static> {
        Delivered {
            writer: w(n),
            seq,
            kind: PayloadKind::Data,
            payload: Cow::Owned(vec![1; 8]),
            status_info: 0,
            key_hash: None,
            source_timestamp: None,
            original: None,
            coherent_set: Some(first),
            group: Some(GroupTag {
                set: Some(set),
                gsn,
                writers: None,
            }),
        }
    }

    fn marker(n: u8, seq: i64, set: i64, last: i64, writers: &[u8]) -> Delivered<'static> {
        let ids: Vec<EntityId> = writers.iter().map(|&n| w(n).entity_id).collect();
        Delivered {
            kind: PayloadKind::None,
            payload: Cow::Owned(Vec::new()),
            coherent_set: Some(COHERENT_SET_END),
            group: Some(GroupTag {
                set: Some(set),
                gsn: last,
                writers: Some(writer_set_digest(&ids)),
            }),
            ..sample(n, seq, 0, set, 0)
        }
    }

    fn ready(g: &GroupAssembler) -> Vec<Vec<SequenceNumber>> {
        let st = g.state.lock();
        st.ready
            .iter()
            .map(|s| s.iter().map(|x| x.1).collect())
            .collect()
    }

    #[test]
    fn a_set_is_ready_once_every_writer_ended_its_part_and_the_count_adds_up() {
        let g = GroupAssembler::default();
        let r = Weak::new();
        // Writer 1: group numbers 10, 12; writer 2: 11.
        g.offer(&r, &sample(1, 1, 1, 10, 10), None);
        g.offer(&r, &sample(2, 1, 1, 10, 11), None);
        g.offer(&r, &sample(1, 2, 1, 10, 12), None);
        g.offer(&r, &marker(1, 3, 10, 12, &[1, 2]), None);
        assert!(ready(&g).is_empty(), "writer 2's part has not ended");
        g.offer(&r, &marker(2, 2, 10, 12, &[1, 2]), None);
        assert_eq!(ready(&g), [vec![10, 11, 12]]);
        assert_eq!(g.counters().sets_delivered, 1);
        // A straggler of the finished set is dropped.
        g.offer(&r, &sample(1, 2, 1, 10, 12), None);
        assert_eq!(g.counters().samples_dropped, 1);
    }

    #[test]
    fn a_hole_a_missing_writer_or_a_wrong_count_never_makes_a_set() {
        let g = GroupAssembler::default();
        let r = Weak::new();
        // A hole in writer 1's part (seq 2 missing).
        g.offer(&r, &sample(1, 1, 1, 10, 10), None);
        g.offer(&r, &sample(1, 3, 1, 10, 12), None);
        g.offer(&r, &marker(1, 4, 10, 12, &[1]), None);
        // The digest names writer 2, which this subscriber never heard from.
        g.offer(&r, &sample(1, 5, 5, 20, 20), None);
        g.offer(&r, &marker(1, 6, 20, 21, &[1, 2]), None);
        // The count does not add up (13 samples announced, 1 came).
        g.offer(&r, &sample(3, 1, 1, 30, 30), None);
        g.offer(&r, &marker(3, 2, 30, 42, &[3]), None);
        assert!(ready(&g).is_empty());
        assert_eq!(
            g.counters().sets_dropped,
            2,
            "the holed and the miscounted set"
        );
        // Writer 2 goes away: nothing of it was held, set 20 stays until pushed out.
        g.writer_gone(w(2));
        assert_eq!(g.state.lock().open.len(), 1);
    }

    #[test]
    fn open_sets_are_bounded() {
        let g = GroupAssembler::default();
        let r = Weak::new();
        // Sets that never end, each from its own writer part.
        for i in 0..(MAX_GROUP_SETS as i64 + 10) {
            g.offer(&r, &sample(1, i + 1, i + 1, 100 + i, 100 + i), None);
        }
        let st = g.state.lock();
        assert!(st.open.len() <= MAX_GROUP_SETS);
        assert_eq!(st.counters.sets_dropped, 10);
        assert!(st.bytes <= MAX_GROUP_BYTES);
    }
}
