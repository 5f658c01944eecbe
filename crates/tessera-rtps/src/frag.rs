//! Reassembly of fragmented samples (DATA_FRAG), with hard bounds.
//!
//! A [`Reassembler`] holds the partially received samples of one remote writer. Everything a
//! peer controls is bounded:
//! - a sample may not exceed [`FragLimits::max_sample_size`];
//! - at most [`FragLimits::max_partial`] samples are in progress per writer (when a new one
//!   arrives at the limit, the highest-numbered one is evicted — in-order delivery needs the
//!   low ones first — or the new one is refused);
//! - the bytes of all partial samples of a reader are charged to the reader's [`Budget`]
//!   ([`FragLimits::max_total_bytes`]), which may also draw from a participant-wide
//!   [`SharedBudget`](crate::budget::SharedBudget);
//! - partial samples untouched for [`FragLimits::timeout`] are dropped.
//!
//! Buffers are allocated zeroed at the first fragment (the OS maps pages lazily), and a
//! bitmap records which fragments arrived, so duplicates and overlaps are harmless.

use std::time::{Duration, Instant};

use crate::budget::Budget;
use crate::types::{SequenceNumber, Timestamp};
use crate::wire::{DataFrag, FragmentNumberSet};

/// Hard upper bound on a reassembled sample, whatever the configuration says.
pub const HARD_MAX_SAMPLE_SIZE: u32 = 64 << 20;

/// Bounds on reassembly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FragLimits {
    /// Largest sample accepted (clamped to [`HARD_MAX_SAMPLE_SIZE`]). Default 64 MiB.
    pub max_sample_size: u32,
    /// Partial samples per writer. Default 16.
    pub max_partial: usize,
    /// Bytes of partial samples per reader, all writers together. Default 128 MiB.
    pub max_total_bytes: usize,
    /// Partial samples not advanced for this long are dropped. Default 10 s.
    pub timeout: Duration,
}

impl Default for FragLimits {
    fn default() -> Self {
        FragLimits {
            max_sample_size: HARD_MAX_SAMPLE_SIZE,
            max_partial: 16,
            max_total_bytes: 128 << 20,
            timeout: Duration::from_secs(10),
        }
    }
}

/// Why a fragment was refused (the peer's fault or a limit).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FragReject {
    /// Sizes or numbers inconsistent (zero sizes, fragment past the end, short payload,
    /// disagreement with earlier fragments of the same sample).
    Invalid,
    /// The sample is larger than allowed.
    TooLarge,
    /// No room: too many partial samples or bytes.
    NoRoom,
}

/// Metadata of a sample being reassembled, taken from the fragment that carried it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FragMeta {
    /// PID_STATUS_INFO.
    pub status_info: u32,
    /// PID_KEY_HASH.
    pub key_hash: Option<[u8; 16]>,
    /// Source timestamp (INFO_TS).
    pub source_timestamp: Option<Timestamp>,
    /// Key-only payload.
    pub key_flag: bool,
    /// PID_ORIGINAL_WRITER_INFO: the writer and sequence number a relayed sample stands for.
    pub original_writer: Option<(crate::types::Guid, crate::types::SequenceNumber)>,
    /// PID_COHERENT_SET: the coherent set the sample belongs to.
    pub coherent_set: Option<crate::types::SequenceNumber>,
    /// GROUP access scope values (PID_GROUP_COHERENT_SET and friends).
    pub group: Option<crate::writer::GroupTag>,
}

/// A completed sample.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Completed {
    /// Sequence number.
    pub seq: SequenceNumber,
    /// The reassembled payload.
    pub payload: Vec<u8>,
    /// Metadata.
    pub meta: FragMeta,
}

/// Result of [`Reassembler::insert`].
#[derive(Debug, PartialEq, Eq)]
pub enum FragOutcome {
    /// Stored; the sample is still incomplete (also for duplicates).
    Incomplete,
    /// The sample is complete.
    Complete(Completed),
    /// Refused.
    Rejected(FragReject),
}

#[derive(Debug)]
struct Partial {
    seq: SequenceNumber,
    sample_size: u32,
    fragment_size: u16,
    total: u32,
    received: u32,
    bitmap: Vec<u64>,
    /// The sample's bytes as far as fragments have come: allocated for the whole sample but
    /// filled as they arrive (in order, the usual case, nothing is written twice; a gap is
    /// zero-filled until its fragments come), not zeroed first.
    data: Vec<u8>,
    meta: FragMeta,
    have_meta: bool,
    touched: Instant,
    nacked_at: Option<Instant>,
}

impl Partial {
    fn has(&self, n: u32) -> bool {
        let i = (n - 1) as usize;
        self.bitmap
            .get(i / 64)
            .is_some_and(|w| w & (1u64 << (i % 64)) != 0)
    }

    /// Writes `src` at `start` (within the sample: `geometry` checked it).
    fn write(&mut self, start: usize, src: &[u8]) {
        if start > self.data.len() {
            self.data.resize(start, 0);
        }
        let written = (start + src.len()).min(self.data.len()) - start;
        let (over, beyond) = src.split_at(written);
        crate::copy::copy_bytes(&mut self.data[start..start + written], over);
        crate::copy::extend_bytes(&mut self.data, beyond);
    }

    fn set(&mut self, n: u32) -> bool {
        let i = (n - 1) as usize;
        match self.bitmap.get_mut(i / 64) {
            Some(w) if *w & (1u64 << (i % 64)) == 0 => {
                *w |= 1u64 << (i % 64);
                true
            }
            _ => false,
        }
    }
}

/// Validated geometry of a DATA_FRAG: the byte range its fragments cover.
fn geometry(df: &DataFrag<'_>, limits: &FragLimits) -> Result<(u32, usize, usize), FragReject> {
    let fs = df.fragment_size as usize;
    let size = df.sample_size as usize;
    if fs == 0 || size == 0 || df.fragment_starting_num == 0 || df.fragments_in_submessage == 0 {
        return Err(FragReject::Invalid);
    }
    if df.sample_size > limits.max_sample_size.min(HARD_MAX_SAMPLE_SIZE) {
        return Err(FragReject::TooLarge);
    }
    let total = size.div_ceil(fs) as u64;
    let first = df.fragment_starting_num as u64;
    let last = first + df.fragments_in_submessage as u64 - 1;
    if last > total {
        return Err(FragReject::Invalid);
    }
    let start = (first as usize - 1) * fs;
    let end = (last as usize * fs).min(size);
    if df.payload.len() < end - start {
        return Err(FragReject::Invalid);
    }
    Ok((total as u32, start, end))
}

/// Whether `df` carries a whole sample by itself (no reassembly needed); checked like
/// [`Reassembler::insert`] would.
pub fn whole_sample<'a>(df: &DataFrag<'a>, limits: &FragLimits) -> Option<&'a [u8]> {
    let (_, start, end) = geometry(df, limits).ok()?;
    if start == 0 && end == df.sample_size as usize {
        df.payload.get(..end)
    } else {
        None
    }
}

/// Partial samples of one remote writer.
#[derive(Debug, Default)]
pub struct Reassembler {
    partials: Vec<Partial>,
}

impl Reassembler {
    /// An empty reassembler.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of samples in progress.
    pub fn len(&self) -> usize {
        self.partials.len()
    }

    /// Whether nothing is in progress.
    pub fn is_empty(&self) -> bool {
        self.partials.is_empty()
    }

    /// Bytes held by partial samples.
    pub fn bytes(&self) -> usize {
        self.partials.iter().map(|p| p.sample_size as usize).sum()
    }

    /// Whether sample `seq` is in progress.
    pub fn contains(&self, seq: SequenceNumber) -> bool {
        self.partials.iter().any(|p| p.seq == seq)
    }

    /// Adds the fragments of `df`. `budget` is the reader-wide account of bytes in partial
    /// samples; it is charged for new buffers (and may refuse them: [`FragReject::NoRoom`])
    /// and refunded when they complete or go.
    pub fn insert(
        &mut self,
        df: &DataFrag<'_>,
        meta: FragMeta,
        now: Instant,
        limits: &FragLimits,
        budget: &mut Budget,
    ) -> FragOutcome {
        let (total, start, end) = match geometry(df, limits) {
            Ok(g) => g,
            Err(e) => return FragOutcome::Rejected(e),
        };
        let seq = df.writer_sn;
        let idx = match self.partials.iter().position(|p| p.seq == seq) {
            Some(i) => {
                let p = &self.partials[i];
                if p.sample_size != df.sample_size || p.fragment_size != df.fragment_size {
                    return FragOutcome::Rejected(FragReject::Invalid);
                }
                i
            }
            None => {
                let size = df.sample_size as usize;
                if self.partials.len() >= limits.max_partial.max(1) {
                    // Keep the lowest numbers: evict the highest if it is above `seq`.
                    let (hi, hi_seq) = self
                        .partials
                        .iter()
                        .enumerate()
                        .map(|(i, p)| (i, p.seq))
                        .max_by_key(|x| x.1)
                        .unwrap_or((0, SequenceNumber::MIN));
                    if hi_seq < seq {
                        return FragOutcome::Rejected(FragReject::NoRoom);
                    }
                    let p = self.partials.swap_remove(hi);
                    budget.refund(p.sample_size as usize);
                }
                if !budget.try_charge(size, limits.max_total_bytes) {
                    return FragOutcome::Rejected(FragReject::NoRoom);
                }
                self.partials.push(Partial {
                    seq,
                    sample_size: df.sample_size,
                    fragment_size: df.fragment_size,
                    total,
                    received: 0,
                    bitmap: vec![0; (total as usize).div_ceil(64)],
                    data: Vec::with_capacity(size),
                    meta,
                    have_meta: false,
                    touched: now,
                    nacked_at: None,
                });
                self.partials.len() - 1
            }
        };
        let p = &mut self.partials[idx];
        p.touched = now;
        if !p.have_meta && (meta.status_info != 0 || meta.key_hash.is_some()) {
            p.meta = meta;
            p.have_meta = true;
        }
        if p.meta.source_timestamp.is_none() {
            p.meta.source_timestamp = meta.source_timestamp;
        }
        let first = df.fragment_starting_num;
        let mut fresh = false;
        for n in first..first + df.fragments_in_submessage as u32 {
            if p.set(n) {
                p.received += 1;
                fresh = true;
            }
        }
        if fresh {
            if let Some(src) = df.payload.get(..end - start) {
                p.write(start, src);
            }
        }
        if p.received == p.total {
            let p = self.partials.swap_remove(idx);
            debug_assert_eq!(p.data.len(), p.sample_size as usize);
            budget.refund(p.sample_size as usize);
            return FragOutcome::Complete(Completed {
                seq,
                payload: p.data,
                meta: p.meta,
            });
        }
        FragOutcome::Incomplete
    }

    /// The first (up to 256) missing fragments of sample `seq`, starting at the first
    /// missing one, or `None` if it is not in progress or complete.
    pub fn missing(&self, seq: SequenceNumber) -> Option<FragmentNumberSet> {
        self.missing_from(seq, 1)
    }

    /// Like [`Reassembler::missing`], considering fragments numbered `from` and above.
    pub fn missing_from(&self, seq: SequenceNumber, from: u32) -> Option<FragmentNumberSet> {
        let p = self.partials.iter().find(|p| p.seq == seq)?;
        let first = (from.max(1)..=p.total).find(|&n| !p.has(n))?;
        let mut set = FragmentNumberSet::empty(first);
        for n in first..=p.total.min(first + 255) {
            if !p.has(n) {
                set.insert(n);
            }
        }
        Some(set)
    }

    /// Sequence numbers in progress, with when fragments were last requested.
    pub fn in_progress(&self) -> impl Iterator<Item = (SequenceNumber, Option<Instant>)> + '_ {
        self.partials.iter().map(|p| (p.seq, p.nacked_at))
    }

    /// Records that missing fragments of `seq` were requested at `now`.
    pub fn mark_nacked(&mut self, seq: SequenceNumber, now: Instant) {
        if let Some(p) = self.partials.iter_mut().find(|p| p.seq == seq) {
            p.nacked_at = Some(now);
        }
    }

    /// Drops samples numbered below `seq` (delivered or irrelevant).
    pub fn drop_below(&mut self, seq: SequenceNumber, budget: &mut Budget) {
        self.partials.retain(|p| {
            if p.seq < seq {
                budget.refund(p.sample_size as usize);
                false
            } else {
                true
            }
        });
    }

    /// Drops sample `seq`.
    pub fn remove(&mut self, seq: SequenceNumber, budget: &mut Budget) {
        self.partials.retain(|p| {
            if p.seq == seq {
                budget.refund(p.sample_size as usize);
                false
            } else {
                true
            }
        });
    }

    /// Drops samples untouched since `now - timeout`; returns how many.
    pub fn expire(&mut self, now: Instant, timeout: Duration, budget: &mut Budget) -> usize {
        let before = self.partials.len();
        self.partials.retain(|p| {
            if now.saturating_duration_since(p.touched) >= timeout {
                budget.refund(p.sample_size as usize);
                false
            } else {
                true
            }
        });
        before - self.partials.len()
    }

    /// When the oldest partial sample expires.
    pub fn next_expiry(&self, timeout: Duration) -> Option<Instant> {
        self.partials.iter().map(|p| p.touched + timeout).min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::EntityId;

    fn frag(seq: i64, start: u32, n: u16, fs: u16, size: u32, payload: &[u8]) -> DataFrag<'_> {
        DataFrag {
            reader_id: EntityId::UNKNOWN,
            writer_id: EntityId::UNKNOWN,
            writer_sn: seq,
            fragment_starting_num: start,
            fragments_in_submessage: n,
            fragment_size: fs,
            sample_size: size,
            inline_qos: None,
            key_flag: false,
            payload,
        }
    }

    #[test]
    fn reassembles_out_of_order_with_duplicates() {
        let data: Vec<u8> = (0..250u32).map(|x| x as u8).collect();
        let mut r = Reassembler::new();
        let mut budget = Budget::default();
        let l = FragLimits::default();
        let now = Instant::now();
        let m = FragMeta::default();
        // fragments of 100: 3 fragments, last one 50 bytes (+ padding)
        let mut last = data[200..].to_vec();
        last.extend_from_slice(&[0, 0]);
        assert_eq!(
            r.insert(&frag(1, 3, 1, 100, 250, &last), m, now, &l, &mut budget),
            FragOutcome::Incomplete
        );
        assert_eq!(budget.used(), 250);
        assert_eq!(r.missing(1).unwrap().iter().collect::<Vec<_>>(), vec![1, 2]);
        assert_eq!(
            r.insert(&frag(1, 3, 1, 100, 250, &last), m, now, &l, &mut budget),
            FragOutcome::Incomplete
        );
        assert_eq!(
            r.insert(
                &frag(1, 1, 1, 100, 250, &data[..100]),
                m,
                now,
                &l,
                &mut budget
            ),
            FragOutcome::Incomplete
        );
        match r.insert(
            &frag(1, 2, 1, 100, 250, &data[100..200]),
            m,
            now,
            &l,
            &mut budget,
        ) {
            FragOutcome::Complete(c) => assert_eq!(c.payload, data),
            other => panic!("{other:?}"),
        }
        assert_eq!(budget.used(), 0);
        assert!(r.is_empty());
    }

    /// Fragments in order fill the sample as they come; one that repeats part of what came
    /// (a repair carrying fragments 2 and 3 after 2 arrived) writes the new part only, and a
    /// gap is filled when its fragment comes.
    #[test]
    fn overlapping_and_gapped_fragment_ranges_give_the_sample() {
        let data: Vec<u8> = (0..400u32).map(|x| (x * 7) as u8).collect();
        let l = FragLimits::default();
        let now = Instant::now();
        let m = FragMeta::default();
        let insert = |r: &mut Reassembler, b: &mut Budget, first: u32, n: u16| {
            let start = (first as usize - 1) * 100;
            let end = (start + n as usize * 100).min(400);
            r.insert(
                &frag(1, first, n, 100, 400, &data[start..end]),
                m,
                now,
                &l,
                b,
            )
        };
        let mut r = Reassembler::new();
        let mut b = Budget::default();
        assert_eq!(insert(&mut r, &mut b, 1, 1), FragOutcome::Incomplete);
        assert_eq!(insert(&mut r, &mut b, 2, 1), FragOutcome::Incomplete);
        assert_eq!(insert(&mut r, &mut b, 2, 2), FragOutcome::Incomplete);
        assert_eq!(r.bytes(), 400);
        match insert(&mut r, &mut b, 4, 1) {
            FragOutcome::Complete(c) => assert_eq!(c.payload, data),
            other => panic!("{other:?}"),
        }
        assert_eq!(b.used(), 0);
        // The last fragment first, then the rest as one submessage.
        let mut r = Reassembler::new();
        assert_eq!(insert(&mut r, &mut b, 4, 1), FragOutcome::Incomplete);
        match insert(&mut r, &mut b, 1, 3) {
            FragOutcome::Complete(c) => assert_eq!(c.payload, data),
            other => panic!("{other:?}"),
        }
        assert_eq!(b.used(), 0);
    }

    #[test]
    fn rejects_lies_and_bounds_memory() {
        let mut r = Reassembler::new();
        let mut budget = Budget::default();
        let l = FragLimits {
            max_partial: 2,
            max_total_bytes: 1 << 20,
            ..FragLimits::default()
        };
        let now = Instant::now();
        let m = FragMeta::default();
        let p = [0u8; 64];
        let bad = [
            frag(1, 0, 1, 16, 64, &p),       // fragment 0
            frag(1, 1, 1, 0, 64, &p),        // zero size
            frag(1, 4, 2, 16, 64, &p),       // past the end
            frag(1, 1, 1, 16, 0, &p),        // empty sample
            frag(1, 1, 4, 16, 64, &p[..10]), // short payload
        ];
        for f in &bad {
            assert_eq!(
                r.insert(f, m, now, &l, &mut budget),
                FragOutcome::Rejected(FragReject::Invalid)
            );
        }
        assert_eq!(
            r.insert(&frag(1, 1, 1, 16, u32::MAX, &p), m, now, &l, &mut budget),
            FragOutcome::Rejected(FragReject::TooLarge)
        );
        // budget: a 2 MiB sample does not fit in 1 MiB
        assert_eq!(
            r.insert(&frag(1, 1, 1, 16, 2 << 20, &p), m, now, &l, &mut budget),
            FragOutcome::Rejected(FragReject::NoRoom)
        );
        // max_partial: 2 in progress; a higher third is refused, a lower one evicts the highest
        for seq in [10, 20] {
            assert_eq!(
                r.insert(&frag(seq, 1, 1, 16, 64, &p), m, now, &l, &mut budget),
                FragOutcome::Incomplete
            );
        }
        assert_eq!(
            r.insert(&frag(30, 1, 1, 16, 64, &p), m, now, &l, &mut budget),
            FragOutcome::Rejected(FragReject::NoRoom)
        );
        assert_eq!(
            r.insert(&frag(5, 1, 1, 16, 64, &p), m, now, &l, &mut budget),
            FragOutcome::Incomplete
        );
        assert!(r.contains(5) && r.contains(10) && !r.contains(20));
        assert_eq!(budget.used(), 128);
        // inconsistent sizes for a sample in progress
        assert_eq!(
            r.insert(&frag(5, 2, 1, 16, 80, &p), m, now, &l, &mut budget),
            FragOutcome::Rejected(FragReject::Invalid)
        );
        assert_eq!(
            r.expire(now + Duration::from_secs(11), l.timeout, &mut budget),
            2
        );
        assert_eq!(budget.used(), 0);
    }
}
