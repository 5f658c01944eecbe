//! PRESENTATION coherent sets on the writer side (RTPS 2.3 §8.7.5, §9.6.4.1).
//!
//! Between `begin_coherent_set` and `end_coherent_set` every sample carries PID_COHERENT_SET
//! with the sequence number of the set's first sample. The set is ended explicitly with a
//! DATA that has neither data nor key (no D or K flag) and PID_COHERENT_SET set to
//! SEQUENCENUMBER_UNKNOWN ({-1, 0}): a reader learns that the set is complete without waiting
//! for the writer's next sample, whose different (or absent) set number would also end it.
//! The marker has a sequence number of its own, so reliability repairs it like any sample and
//! a reader knows it has every sample of the set once it has the marker in order.
//!
//! The marker is filed in the history under a reserved key hash, never sent: a KEEP_LAST
//! history then replaces old markers with new ones instead of a sample of the set.
//!
//! GROUP access scope (RTPS 2.5 §8.7.6, §9.6.4.2-4): the writers of one publisher share a
//! [`GroupSequence`]. Each of their samples then also carries PID_GROUP_SEQ_NUM (its number
//! in the publisher, one counter for all its writers) and, inside a group coherent set,
//! PID_GROUP_COHERENT_SET (the group number of the set's first sample). Each writer's own
//! PID_COHERENT_SET and end marker stay as above, so a reader still sees every writer's part
//! whole; the end marker of a group set adds PID_GROUP_COHERENT_SET, PID_GROUP_SEQ_NUM = the
//! group number of the set's *last* sample (the set holds `last - first + 1` samples) and
//! PID_WRITER_GROUP_INFO (the digest of the writers with samples in the set, see
//! [`writer_set_digest`]): a reader knows how many samples to expect and from which writers.
//!
//! Tessera numbers each publisher's group samples from `publisher key << 32` (see
//! [`GroupSequence::new`]): a reader can then tell the publishers of one participant apart
//! by the numbers alone.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use super::{WriteError, WriterCore};
use crate::types::{SequenceNumber, Timestamp};

/// PID_COHERENT_SET value of the marker that ends a set: SEQUENCENUMBER_UNKNOWN.
pub const COHERENT_SET_END: SequenceNumber = -(1i64 << 32);

/// The history key of end-of-set markers (a key hash no instance has: key hashes of real
/// instances are an MD5 or a zero-padded key, and this one is never sent).
const MARKER_KEY: [u8; 16] = [0xff; 16];

/// The GROUP-scope inline QoS of a sample (RTPS 2.5 §9.6.4.2-4).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GroupTag {
    /// PID_GROUP_COHERENT_SET: the group number of the first sample of the group coherent
    /// set this sample belongs to (None: not in a group set).
    pub set: Option<SequenceNumber>,
    /// PID_GROUP_SEQ_NUM: the sample's number in its publisher (0: not sent); on a group
    /// set's end marker, the number of the set's last sample.
    pub gsn: SequenceNumber,
    /// PID_WRITER_GROUP_INFO (end markers only): the digest of the writers of the set.
    pub writers: Option<[u8; 4]>,
}

/// The GroupDigest_t (four octets, RTPS 2.5) Tessera sends for a set of writers: the first
/// four bytes of the MD5 of their entity ids, sorted and without duplicates, so that every
/// writer of the set computes the same value. Only Tessera readers interpret it.
pub fn writer_set_digest(writers: &[crate::types::EntityId]) -> [u8; 4] {
    let mut ids: Vec<[u8; 4]> = writers.iter().map(|e| e.0).collect();
    ids.sort_unstable();
    ids.dedup();
    let d = md5::compute(ids.concat());
    [d[0], d[1], d[2], d[3]]
}

/// A publisher's group sequence numbers and its open group coherent set, shared by its
/// writers' cores (GROUP access scope). A leaf lock: taken under a writer's core lock only.
#[derive(Debug)]
pub struct GroupSequence {
    inner: Mutex<GroupInner>,
}

#[derive(Debug, Default)]
struct GroupInner {
    /// The last number handed out.
    last: SequenceNumber,
    /// A group set is open.
    open: bool,
    /// The open set's first number, once a sample was written in it.
    first: Option<SequenceNumber>,
}

impl GroupSequence {
    /// Numbers for the publisher with entity key `publisher_key` (24 bits): the first is
    /// `publisher_key << 32 | 1`, so two publishers of a participant never share a number.
    pub fn new(publisher_key: u32) -> Self {
        GroupSequence {
            inner: Mutex::new(GroupInner {
                last: i64::from(publisher_key & 0x00ff_ffff) << 32,
                ..GroupInner::default()
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, GroupInner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Opens a group coherent set (opening an open one changes nothing).
    pub fn begin_set(&self) {
        self.lock().open = true;
    }

    /// Closes the open group set: its first and last numbers, if it has samples.
    pub fn end_set(&self) -> Option<(SequenceNumber, SequenceNumber)> {
        let mut g = self.lock();
        g.open = false;
        let first = g.first.take()?;
        Some((first, g.last))
    }

    /// The tag of a sample written now.
    fn next(&self) -> GroupTag {
        let mut g = self.lock();
        g.last += 1;
        let gsn = g.last;
        let set = if g.open {
            Some(*g.first.get_or_insert(gsn))
        } else {
            None
        };
        GroupTag {
            set,
            gsn,
            writers: None,
        }
    }
}

/// The writer's open coherent set.
#[derive(Debug, Clone, Default)]
pub struct CoherentState {
    /// A set is open (between begin and end).
    open: bool,
    /// The number of its first sample, once one was written.
    start: Option<SequenceNumber>,
    /// The publisher's group numbering (GROUP access scope), kept across sets.
    group: Option<Arc<GroupSequence>>,
    /// The group values of the last sample written (for local delivery).
    last_group: Option<GroupTag>,
}

impl PartialEq for CoherentState {
    fn eq(&self, o: &Self) -> bool {
        self.open == o.open && self.start == o.start
    }
}

impl CoherentState {
    /// The PID_COHERENT_SET and group values of a sample numbered `seq` written now.
    pub(super) fn tag(
        &mut self,
        seq: SequenceNumber,
    ) -> (Option<SequenceNumber>, Option<GroupTag>) {
        let group = self.group.as_ref().map(|g| g.next());
        self.last_group = group;
        if !self.open {
            return (None, group);
        }
        (Some(*self.start.get_or_insert(seq)), group)
    }
}

impl WriterCore {
    /// Makes this writer one of a publisher's group (GROUP access scope): its samples carry
    /// `group`'s numbers from now on. None: back to per-writer numbering only.
    pub fn set_group(&mut self, group: Option<Arc<GroupSequence>>) {
        self.sh.coherent.group = group;
    }

    /// Opens a coherent set: samples written from now on belong to it. Opening an open set
    /// changes nothing.
    pub fn begin_coherent_set(&mut self) {
        self.sh.coherent.open = true;
    }

    /// The group values of the sample written last (None without a group).
    pub fn last_group_tag(&self) -> Option<GroupTag> {
        self.sh.coherent.last_group
    }

    /// The open set's number (its first sample's), if a set is open and has samples.
    pub fn coherent_set(&self) -> Option<SequenceNumber> {
        self.sh.coherent.start.filter(|_| self.sh.coherent.open)
    }

    /// Closes the open set. If it has samples, writes the end-of-set marker (with
    /// `source_timestamp`, and `group`: the group set's number, last number and writers)
    /// and returns its sequence number; an empty set sends nothing.
    pub fn end_coherent_set(
        &mut self,
        source_timestamp: Option<Timestamp>,
        group: Option<GroupTag>,
        now: Instant,
    ) -> Result<Option<SequenceNumber>, WriteError> {
        let state = CoherentState {
            group: self.sh.coherent.group.clone(),
            ..CoherentState::default()
        };
        let state = std::mem::replace(&mut self.sh.coherent, state);
        if !state.open || state.start.is_none() {
            return Ok(None);
        }
        match self.write_tagged(
            Arc::new(Vec::new()),
            Some(MARKER_KEY),
            0,
            false,
            source_timestamp,
            None,
            (Some(COHERENT_SET_END), group),
            &now.into(),
        ) {
            Ok(seq) => Ok(Some(seq)),
            Err(refused) => {
                // Still open: the caller may retry once history space frees up.
                self.sh.coherent = state;
                Err(refused.error)
            }
        }
    }
}
