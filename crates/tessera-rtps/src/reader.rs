//! The RTPS reader state machine ([`ReaderCore`]): ordering, duplicates, ACKNACK/NACK_FRAG,
//! reassembly.
//!
//! # Model
//! One `ReaderCore` per local reader, driven from the receive thread:
//! [`ReaderCore::on_data`], [`ReaderCore::on_data_frag`], [`ReaderCore::on_heartbeat`],
//! [`ReaderCore::on_heartbeat_frag`], [`ReaderCore::on_gap`] take decoded submessages (borrowing
//! the receive buffer) and call `deliver` for each sample that becomes deliverable (it may
//! refuse it, see [Refusal](#refusal)); then
//! [`ReaderCore::poll_transmit_into`] yields the ACKNACK/NACK_FRAG datagrams, and
//! [`ReaderCore::poll_timeout`]/[`ReaderCore::handle_timeout`] run the timers.
//!
//! # Per-writer state
//! Each matched writer has a proxy with `next` (the next sequence number to deliver) and a
//! ring of out-of-order slots indexed by `seq - next` (bounded by
//! [`ReaderConfig::max_window`]). A sample equal to `next` is delivered straight from the
//! receive buffer (`Cow::Borrowed`: no copy, no allocation); only out-of-order samples are
//! copied. A HEARTBEAT whose `first_sn` is above `next` means the samples below are gone for
//! good: they are skipped (counted as lost). A GAP marks numbers irrelevant.
//!
//! The proxy starts at sequence number 1. Samples that arrive before the writer's first
//! HEARTBEAT and are not number 1 wait in the ring; the HEARTBEAT's `first_sn` then tells
//! where this reader's stream starts (a volatile late joiner skips what came before).
//!
//! # Acknowledgements
//! A HEARTBEAT is answered when something is missing (at once if its final flag is clear,
//! after [`ReaderConfig::nack_delay`] otherwise) or when it asks for an answer (final flag
//! clear). The ACKNACK's base is `next`; its bitmap lists missing numbers up to the highest
//! known, except samples being reassembled, whose missing fragments go in NACK_FRAGs instead.
//! A number requested less than a suppression time ago is not requested again, so repairs in
//! flight are not duplicated. That time follows the measured repair round trip (from a NACK to
//! the first repaired sample that arrives: smoothed + 4 × deviation), within
//! [`ReaderConfig::nack_suppression`]..[`ReaderConfig::nack_suppression_max`]: on a congested
//! path the round trip includes the bottleneck queue, and asking again sooner only makes the
//! writer resend what is still queued.
//!
//! # Refusal
//! The `deliver` callback may answer [`Verdict::Refused`] (the application has no room, e.g. a
//! full KEEP_ALL history). From a reliable writer, a refused sample counts as not received:
//! `next` stays at it (it is neither delivered, skipped nor lost), so the ACKNACK base stays
//! at it and the writer keeps it; the sample itself is dropped (buffered ones behind it stay
//! buffered) and resent when requested. While the reader refuses, its ACKNACKs request only
//! `next` (a probe), not everything missing, and each probe the application refuses again
//! doubles the time to the next one (up to [`ReaderConfig::nack_suppression_max`]), so a
//! reader that does not take costs a few repairs a second, not a storm. [`ReaderCore::resume`] ends that when the
//! application made room: the full request goes out at once. A HEARTBEAT whose `first_sn` is
//! above a refused sample still skips it (the writer no longer has it: counted as lost).
//!
//! # Acknowledgment hold
//! An application that took a sample but may not have it acknowledged yet (a replicated
//! durability service, until its group committed the sample) holds it:
//! [`ReaderCore::hold_acknowledgment`] keeps the ACKNACK base to that writer at the lowest held
//! sample, so the writer keeps it and what follows; repairs of samples past `next` are still
//! requested (within the bitmap's 256 numbers from the held base).
//! [`ReaderCore::set_acknowledgment_hold`] moves or lifts the hold.
//!
//! Best-effort writers: a sample newer than the last delivered one is delivered at once;
//! older ones and duplicates are dropped. Nothing is ever sent to them. Once a first sample or
//! GAP from such a writer has arrived, every number it skips without a GAP is counted as lost
//! (a writer leaves numbers out on purpose only with a GAP: samples its filters drop, history it
//! no longer has); before that the stream simply starts where the first one is.

use std::borrow::Cow;
use std::collections::VecDeque;
use std::time::{Duration, Instant};

use crate::budget::{Budget, SharedBudget};
use crate::frag::{self, FragLimits, FragMeta, FragOutcome, FragReject, Reassembler};
use crate::types::{Guid, GuidPrefix, Locators, SequenceNumber, Timestamp};
use crate::wire::{
    AckNack, Data, DataFrag, Gap, Heartbeat, HeartbeatFrag, NackFrag, PayloadKind,
    SequenceNumberSet,
};
pub use crate::writer::transmit::{Destination, InlineQos, OutSubmessage, Transmit};
use crate::writer::Rtt;

/// Configuration of a [`ReaderCore`].
#[derive(Debug, Clone)]
pub struct ReaderConfig {
    /// The reader's GUID.
    pub guid: Guid,
    /// Delay before answering a HEARTBEAT that asks for an answer when nothing is missing.
    /// Default 0.
    pub ack_delay: Duration,
    /// Delay before answering a *final* HEARTBEAT that reveals missing samples (lets
    /// reordered datagrams arrive). Default 1 ms.
    pub nack_delay: Duration,
    /// A sequence number or fragment is not requested again within this time, at least (the
    /// measured repair round trip may lengthen it). Default 5 ms.
    pub nack_suppression: Duration,
    /// Longest suppression, however slow repairs are. Default 500 ms.
    pub nack_suppression_max: Duration,
    /// Out-of-order samples buffered per writer, as a window above `next`. Default 512.
    pub max_window: usize,
    /// Bytes of buffered out-of-order samples, all writers together. Default 64 MiB.
    pub max_buffered_bytes: usize,
    /// Fragment reassembly limits.
    pub frag: FragLimits,
    /// A pool the out-of-order bytes are also drawn from (shared with other readers, e.g. a
    /// whole participant's). Default none.
    pub shared_buffered: Option<SharedBudget>,
    /// A pool the reassembly bytes are also drawn from. Default none.
    pub shared_reassembly: Option<SharedBudget>,
}

impl ReaderConfig {
    /// Defaults (see the fields).
    pub fn new(guid: Guid) -> Self {
        ReaderConfig {
            guid,
            ack_delay: Duration::ZERO,
            nack_delay: Duration::from_millis(1),
            nack_suppression: Duration::from_millis(5),
            nack_suppression_max: Duration::from_millis(500),
            max_window: 8192,
            max_buffered_bytes: 64 << 20,
            frag: FragLimits::default(),
            shared_buffered: None,
            shared_reassembly: None,
        }
    }
}

/// A sample handed to the application side.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivered<'a> {
    /// The writer.
    pub writer: Guid,
    /// Its sequence number.
    pub seq: SequenceNumber,
    /// Full sample, key only, or nothing (dispose by key hash).
    pub kind: PayloadKind,
    /// The serialized payload (encapsulation header included); borrowed from the receive
    /// buffer when the sample arrived in order.
    pub payload: Cow<'a, [u8]>,
    /// PID_STATUS_INFO flags (1 disposed, 2 unregistered), 0 if absent.
    pub status_info: u32,
    /// PID_KEY_HASH if present.
    pub key_hash: Option<[u8; 16]>,
    /// Source timestamp (INFO_TS), if any.
    pub source_timestamp: Option<Timestamp>,
    /// For a sample relayed by another writer (a durability service's replay), the original
    /// writer and its sequence number (PID_ORIGINAL_WRITER_INFO); `writer`/`seq` are then the
    /// relay's.
    pub original: Option<(Guid, SequenceNumber)>,
    /// PID_COHERENT_SET: the number of the first sample of the writer's coherent set this
    /// one belongs to, or [`COHERENT_SET_END`](crate::writer::COHERENT_SET_END) on the
    /// payload-less DATA that ends a set.
    pub coherent_set: Option<SequenceNumber>,
    /// GROUP access scope: PID_GROUP_COHERENT_SET, PID_GROUP_SEQ_NUM and
    /// PID_WRITER_GROUP_INFO (see [`GroupTag`](crate::writer::GroupTag)).
    pub group: Option<crate::writer::GroupTag>,
}

/// What the application did with a [`Delivered`] sample: the delivery callback's answer.
///
/// A reliable reader treats a refused sample as not received: `next` stays at it, it is not
/// acknowledged (the ACKNACK base stays at it), and the writer resends it when asked (call
/// [`ReaderCore::resume`] once there is room). A best-effort reader drops it. Callbacks that
/// return `()` accept everything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The application took the sample.
    Accepted,
    /// The application had no room for it (e.g. a full KEEP_ALL history).
    Refused,
}

impl From<()> for Verdict {
    fn from(_: ()) -> Self {
        Verdict::Accepted
    }
}

/// Statistics of a [`ReaderCore`]; every dropped input is counted somewhere here.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReaderCounters {
    /// Samples delivered (accepted by the application).
    pub delivered: u64,
    /// Samples the application refused, each counted once however often it is resent.
    pub refused: u64,
    /// Resent samples the application refused again.
    pub refused_again: u64,
    /// Submessages from writers that are not matched.
    pub unknown_writer: u64,
    /// Samples or fragments already delivered or buffered.
    pub duplicates: u64,
    /// Samples too far ahead of `next`, or over the buffered-bytes budget.
    pub out_of_window: u64,
    /// Fragments with inconsistent sizes/numbers, or samples over the size limit.
    pub bad_fragment: u64,
    /// Fragments refused for lack of reassembly room.
    pub fragment_no_room: u64,
    /// Partial samples dropped by timeout.
    pub fragment_expired: u64,
    /// Sequence numbers skipped because the writer no longer has them.
    pub lost: u64,
    /// Malformed HEARTBEAT/GAP/DATA (e.g. sequence number 0 or above 2^62).
    pub invalid: u64,
    /// HEARTBEAT/HEARTBEAT_FRAG with a count not above the last one (duplicated or
    /// reordered datagrams).
    pub stale_heartbeats: u64,
    /// ACKNACKs sent.
    pub acknacks_sent: u64,
    /// NACK_FRAGs sent.
    pub nack_frags_sent: u64,
    /// Writers asked again at once because the application made room after refusing their
    /// samples ([`ReaderCore::resume`]), instead of at their next backed-off probe.
    pub resumed: u64,
}

/// Sequence numbers above this are refused as invalid, so that no arithmetic on peer-supplied
/// numbers can overflow.
const MAX_SN: SequenceNumber = 1 << 62;

fn valid_sn(sn: SequenceNumber) -> bool {
    (1..=MAX_SN).contains(&sn)
}

#[derive(Debug)]
enum Slot {
    Empty,
    Irrelevant,
    Sample(Buffered),
}

#[derive(Debug)]
struct Buffered {
    kind: PayloadKind,
    payload: Vec<u8>,
    meta: FragMeta,
}

#[derive(Debug)]
struct WriterProxy {
    guid: Guid,
    locators: Locators,
    reliable: bool,
    /// Next sequence number to deliver (everything below is delivered, lost or irrelevant).
    next: SequenceNumber,
    /// Out-of-order slots: `slots[i]` is `next + i`.
    slots: VecDeque<Slot>,
    /// Highest sequence number the writer is known to have. From a best-effort writer: the
    /// highest received or named by a GAP, 0 until its stream started (see
    /// [`WriterProxy::stream_started`]).
    highest_known: SequenceNumber,
    last_hb_count: Option<i32>,
    last_hbfrag_count: Option<i32>,
    ack_due: Option<Instant>,
    nack_at: Option<Instant>,
    nack_hi: SequenceNumber,
    /// A NACK went out at this instant and no requested sample has arrived since.
    nack_probe: Option<Instant>,
    /// Repair round trip: from a NACK to the first requested sample arriving.
    repair_rtt: Rtt,
    frags: Reassembler,
    /// The last sample the application refused (it is `next` until accepted or skipped).
    refused_seq: Option<SequenceNumber>,
    /// The application refused `next` and has not made room since: ACKNACKs request only
    /// `next` (a probe, like TCP's zero-window probe), not the whole missing range, so that a
    /// reader that is not taking does not cause a repair storm.
    probing: bool,
    /// Resends of `next` refused in a row: each doubles the time between probes, up to
    /// [`ReaderConfig::nack_suppression_max`] (a reader full for long costs ~2 repairs a
    /// second at the default).
    probe_backoff: u32,
    /// The lowest sample the application took but may not acknowledge yet
    /// ([`ReaderCore::hold_acknowledgment`]): the ACKNACK base stays at it, so the writer
    /// keeps it and everything after it.
    ack_hold: Option<SequenceNumber>,
}

impl WriterProxy {
    /// A best-effort writer's stream started: a sample or GAP from it arrived, so numbers it
    /// skips from now on are lost (before, the stream simply starts where the first one is).
    fn stream_started(&self) -> bool {
        self.highest_known > 0
    }

    /// A complete sample `seq` arrived at `now`: the first requested one to arrive after a
    /// NACK times the repair round trip.
    fn note_repair(&mut self, seq: SequenceNumber, now: Instant) {
        if let Some(t) = self.nack_probe {
            if seq >= self.next && seq <= self.nack_hi {
                self.nack_probe = None;
                self.repair_rtt.sample(now.saturating_duration_since(t));
            }
        }
    }

    /// How long requested numbers are not requested again (longer between probes).
    fn suppression(&self, cfg: &ReaderConfig) -> Duration {
        let d = self.repair_rtt.bound(
            cfg.nack_suppression,
            cfg.nack_suppression,
            cfg.nack_suppression_max,
        );
        if !self.probing {
            return d;
        }
        d.saturating_mul(1 << self.probe_backoff)
            .min(cfg.nack_suppression_max)
            .max(d)
    }
}

/// Reader-wide mutable state besides the proxies (split for borrowing).
#[derive(Debug)]
struct Shared {
    cfg: ReaderConfig,
    counters: ReaderCounters,
    acknack_count: i32,
    nackfrag_count: i32,
    reassembly_bytes: Budget,
    buffered_bytes: Budget,
}

/// The state machine of one RTPS reader. See the [module docs](self).
#[derive(Debug)]
pub struct ReaderCore {
    sh: Shared,
    writers: Vec<WriterProxy>,
    rr: usize,
}

fn kind_of(key_flag: bool) -> PayloadKind {
    if key_flag {
        PayloadKind::Key
    } else {
        PayloadKind::Data
    }
}

impl Shared {
    /// Offers sample `seq` of `w` to the application; true if it took it. Refusals are
    /// counted once per sample (a resent sample refused again is `refused_again`).
    fn emit<F: FnMut(Delivered<'_>) -> R, R: Into<Verdict>>(
        &mut self,
        w: &mut WriterProxy,
        seq: SequenceNumber,
        kind: PayloadKind,
        payload: Cow<'_, [u8]>,
        meta: &FragMeta,
        deliver: &mut F,
    ) -> bool {
        let verdict = deliver(Delivered {
            writer: w.guid,
            seq,
            kind,
            payload,
            status_info: meta.status_info,
            key_hash: meta.key_hash,
            source_timestamp: meta.source_timestamp,
            original: meta.original_writer,
            coherent_set: meta.coherent_set,
            group: meta.group,
        })
        .into();
        match verdict {
            Verdict::Accepted => {
                self.counters.delivered += 1;
                w.probing = false;
                w.probe_backoff = 0;
                true
            }
            Verdict::Refused => {
                if w.refused_seq == Some(seq) {
                    self.counters.refused_again += 1;
                    w.probe_backoff = (w.probe_backoff + 1).min(16);
                } else {
                    self.counters.refused += 1;
                    w.refused_seq = Some(seq);
                }
                w.probing = w.reliable;
                false
            }
        }
    }

    /// Delivers consecutive buffered samples from the front of the ring. A refused one is
    /// dropped (its slot emptied, to be resent) and stops the drain: `next` stays at it.
    fn drain<F: FnMut(Delivered<'_>) -> R, R: Into<Verdict>>(
        &mut self,
        w: &mut WriterProxy,
        deliver: &mut F,
    ) {
        while matches!(w.slots.front(), Some(Slot::Sample(_) | Slot::Irrelevant)) {
            if let Some(Slot::Sample(b)) = w.slots.pop_front() {
                self.buffered_bytes.refund(b.payload.len());
                let seq = w.next;
                if !self.emit(w, seq, b.kind, Cow::Owned(b.payload), &b.meta, deliver) {
                    w.slots.push_front(Slot::Empty);
                    break;
                }
            }
            w.next += 1;
        }
        w.frags.drop_below(w.next, &mut self.reassembly_bytes);
    }

    /// Moves `next` up to `target`: buffered samples below it are delivered (`deliver_below`)
    /// or dropped; missing ones are counted as lost if `count_lost`.
    fn skip_to<F: FnMut(Delivered<'_>) -> R, R: Into<Verdict>>(
        &mut self,
        w: &mut WriterProxy,
        target: SequenceNumber,
        deliver_below: bool,
        count_lost: bool,
        deliver: &mut F,
    ) {
        while w.next < target {
            let Some(slot) = w.slots.pop_front() else {
                if count_lost {
                    self.counters.lost += (target - w.next) as u64;
                }
                w.next = target;
                break;
            };
            match slot {
                Slot::Sample(b) => {
                    self.buffered_bytes.refund(b.payload.len());
                    // The writer no longer has these: one refused now is lost for good.
                    if deliver_below {
                        let seq = w.next;
                        if !self.emit(w, seq, b.kind, Cow::Owned(b.payload), &b.meta, deliver) {
                            self.counters.lost += 1;
                        }
                    }
                }
                Slot::Empty if count_lost => self.counters.lost += 1,
                _ => {}
            }
            w.next += 1;
        }
        self.drain(w, deliver);
    }

    /// A complete sample `seq` from writer `w`: deliver, buffer or drop.
    fn accept<F: FnMut(Delivered<'_>) -> R, R: Into<Verdict>>(
        &mut self,
        w: &mut WriterProxy,
        seq: SequenceNumber,
        kind: PayloadKind,
        payload: Cow<'_, [u8]>,
        meta: FragMeta,
        deliver: &mut F,
    ) {
        if seq < w.next {
            self.counters.duplicates += 1;
            return;
        }
        if !w.reliable {
            // Best effort: numbers skipped since the stream started never come (lost); a
            // refused sample is simply dropped.
            if w.stream_started() && seq > w.next {
                self.counters.lost += (seq - w.next) as u64;
            }
            w.highest_known = seq;
            w.next = seq + 1;
            self.emit(w, seq, kind, payload, &meta, deliver);
            w.frags.drop_below(w.next, &mut self.reassembly_bytes);
            return;
        }
        w.highest_known = w.highest_known.max(seq);
        if seq == w.next {
            if !w.frags.is_empty() {
                w.frags.remove(seq, &mut self.reassembly_bytes);
            }
            if !self.emit(w, seq, kind, payload, &meta, deliver) {
                // Not acknowledged: the writer keeps it and resends it when asked.
                return;
            }
            w.next += 1;
            if !w.slots.is_empty() {
                w.slots.pop_front();
                self.drain(w, deliver);
            }
            return;
        }
        let idx = (seq - w.next) as u64;
        if idx >= self.cfg.max_window as u64 {
            self.counters.out_of_window += 1;
            return;
        }
        let idx = idx as usize;
        if !matches!(w.slots.get(idx), None | Some(Slot::Empty)) {
            self.counters.duplicates += 1;
            return;
        }
        // Over this reader's limit or the shared pool's: dropped; a reliable writer resends.
        if !self
            .buffered_bytes
            .try_charge(payload.len(), self.cfg.max_buffered_bytes)
        {
            self.counters.out_of_window += 1;
            return;
        }
        while w.slots.len() <= idx {
            w.slots.push_back(Slot::Empty);
        }
        w.slots[idx] = Slot::Sample(Buffered {
            kind,
            payload: payload.into_owned(),
            meta,
        });
        if !w.frags.is_empty() {
            w.frags.remove(seq, &mut self.reassembly_bytes);
        }
    }
}

impl ReaderCore {
    /// A reader with no matched writers.
    pub fn new(cfg: ReaderConfig) -> Self {
        let reassembly_bytes = Budget::new(cfg.shared_reassembly.clone());
        let buffered_bytes = Budget::new(cfg.shared_buffered.clone());
        ReaderCore {
            sh: Shared {
                cfg,
                counters: ReaderCounters::default(),
                acknack_count: 0,
                nackfrag_count: 0,
                reassembly_bytes,
                buffered_bytes,
            },
            writers: Vec::new(),
            rr: 0,
        }
    }

    /// The reader's GUID.
    pub fn guid(&self) -> Guid {
        self.sh.cfg.guid
    }

    /// The configuration.
    pub fn config(&self) -> &ReaderConfig {
        &self.sh.cfg
    }

    /// Whether every reliable matched writer has announced its history (a HEARTBEAT was
    /// heard) and everything it announced was delivered, lost or skipped: the historical data
    /// it offers is in (`wait_for_historical_data`). Best-effort writers send no history.
    pub fn historical_data_received(&self) -> bool {
        self.writers
            .iter()
            .all(|w| !w.reliable || (w.last_hb_count.is_some() && w.next > w.highest_known))
    }

    /// Statistics.
    pub fn counters(&self) -> ReaderCounters {
        self.sh.counters
    }

    /// Number of matched writers.
    pub fn matched_writers(&self) -> usize {
        self.writers.len()
    }

    /// Whether `guid` is a matched writer.
    pub fn has_writer(&self, guid: Guid) -> bool {
        self.writers.iter().any(|w| w.guid == guid)
    }

    /// Bytes held for out-of-order samples and partial fragmented samples.
    pub fn buffered_bytes(&self) -> usize {
        self.sh.buffered_bytes.used() + self.sh.reassembly_bytes.used()
    }

    /// Next sequence number expected from `writer` (everything below was delivered or
    /// skipped).
    pub fn next_expected(&self, writer: Guid) -> Option<SequenceNumber> {
        self.writers
            .iter()
            .find(|w| w.guid == writer)
            .map(|w| w.next)
    }

    /// Matches a writer (`reliable`: the match is reliable). Re-matching updates locators.
    pub fn add_writer(&mut self, guid: Guid, locators: Locators, reliable: bool, now: Instant) {
        if let Some(w) = self.writers.iter_mut().find(|w| w.guid == guid) {
            w.locators = locators;
            return;
        }
        self.writers.push(WriterProxy {
            guid,
            locators,
            reliable,
            next: 1,
            slots: VecDeque::new(),
            highest_known: 0,
            last_hb_count: None,
            last_hbfrag_count: None,
            // A reliable match starts with a pre-emptive ACKNACK (as Cyclone's and Fast DDS's
            // readers send): a writer that matched us earlier learns at once that we listen,
            // instead of on its next heartbeat.
            ack_due: reliable.then_some(now),
            nack_at: None,
            nack_hi: 0,
            nack_probe: None,
            repair_rtt: Rtt::default(),
            frags: Reassembler::new(),
            refused_seq: None,
            probing: false,
            probe_backoff: 0,
            ack_hold: None,
        });
    }

    /// Unmatches a writer, dropping its buffered samples; returns whether it was matched.
    pub fn remove_writer(&mut self, guid: Guid) -> bool {
        let Some(i) = self.writers.iter().position(|w| w.guid == guid) else {
            return false;
        };
        let mut w = self.writers.swap_remove(i);
        for s in w.slots.drain(..) {
            if let Slot::Sample(b) = s {
                self.sh.buffered_bytes.refund(b.payload.len());
            }
        }
        w.frags
            .drop_below(SequenceNumber::MAX, &mut self.sh.reassembly_bytes);
        true
    }

    fn find(&mut self, guid: Guid) -> Option<usize> {
        let i = self.writers.iter().position(|w| w.guid == guid);
        if i.is_none() {
            self.sh.counters.unknown_writer += 1;
        }
        i
    }

    /// Handles a DATA from participant `src` (INFO_TS `timestamp` in force).
    pub fn on_data<F: FnMut(Delivered<'_>) -> R, R: Into<Verdict>>(
        &mut self,
        src: GuidPrefix,
        d: &Data<'_>,
        timestamp: Option<Timestamp>,
        now: Instant,
        deliver: &mut F,
    ) {
        let _ = now;
        let Some(i) = self.find(Guid::new(src, d.writer_id)) else {
            return;
        };
        if !valid_sn(d.writer_sn) {
            self.sh.counters.invalid += 1;
            return;
        }
        let q = InlineQos::parse(d.inline_qos.as_ref());
        let meta = FragMeta {
            status_info: q.status_info,
            key_hash: q.key_hash,
            source_timestamp: timestamp,
            key_flag: d.payload_kind == PayloadKind::Key,
            original_writer: q.original_writer,
            coherent_set: q.coherent_set,
            group: q.group,
        };
        let payload: &[u8] = match d.payload_kind {
            PayloadKind::None => &[],
            _ => d.payload,
        };
        let w = &mut self.writers[i];
        w.note_repair(d.writer_sn, now);
        self.sh.accept(
            w,
            d.writer_sn,
            d.payload_kind,
            Cow::Borrowed(payload),
            meta,
            deliver,
        );
    }

    /// Handles a DATA_FRAG: reassembles, then treats the complete sample like a DATA.
    pub fn on_data_frag<F: FnMut(Delivered<'_>) -> R, R: Into<Verdict>>(
        &mut self,
        src: GuidPrefix,
        df: &DataFrag<'_>,
        timestamp: Option<Timestamp>,
        now: Instant,
        deliver: &mut F,
    ) {
        let Some(i) = self.find(Guid::new(src, df.writer_id)) else {
            return;
        };
        let seq = df.writer_sn;
        let sh = &mut self.sh;
        let w = &mut self.writers[i];
        if !valid_sn(seq) {
            sh.counters.invalid += 1;
            return;
        }
        if seq < w.next {
            sh.counters.duplicates += 1;
            return;
        }
        if w.reliable && (seq - w.next) as u64 >= sh.cfg.max_window as u64 {
            sh.counters.out_of_window += 1;
            return;
        }
        if w.reliable {
            w.highest_known = w.highest_known.max(seq);
            if matches!(
                w.slots.get((seq - w.next) as usize),
                Some(Slot::Sample(_) | Slot::Irrelevant)
            ) {
                sh.counters.duplicates += 1;
                return;
            }
        }
        let q = InlineQos::parse(df.inline_qos.as_ref());
        let meta = FragMeta {
            status_info: q.status_info,
            key_hash: q.key_hash,
            source_timestamp: timestamp,
            key_flag: df.key_flag,
            original_writer: q.original_writer,
            coherent_set: q.coherent_set,
            group: q.group,
        };
        let kind = kind_of(df.key_flag);
        if let Some(whole) = frag::whole_sample(df, &sh.cfg.frag) {
            sh.accept(w, seq, kind, Cow::Borrowed(whole), meta, deliver);
            return;
        }
        let limits = sh.cfg.frag;
        match w
            .frags
            .insert(df, meta, now, &limits, &mut sh.reassembly_bytes)
        {
            FragOutcome::Incomplete => {}
            FragOutcome::Complete(c) => {
                w.note_repair(seq, now);
                sh.accept(w, seq, kind, Cow::Owned(c.payload), c.meta, deliver);
            }
            FragOutcome::Rejected(FragReject::NoRoom) => sh.counters.fragment_no_room += 1,
            FragOutcome::Rejected(_) => sh.counters.bad_fragment += 1,
        }
    }

    /// Handles a HEARTBEAT: skips samples the writer no longer has, schedules an ACKNACK.
    pub fn on_heartbeat<F: FnMut(Delivered<'_>) -> R, R: Into<Verdict>>(
        &mut self,
        src: GuidPrefix,
        hb: &Heartbeat,
        now: Instant,
        deliver: &mut F,
    ) {
        let Some(i) = self.find(Guid::new(src, hb.writer_id)) else {
            return;
        };
        let sh = &mut self.sh;
        let w = &mut self.writers[i];
        if !w.reliable {
            return;
        }
        if !valid_sn(hb.first_sn) || hb.last_sn < hb.first_sn - 1 || hb.last_sn > MAX_SN {
            sh.counters.invalid += 1;
            return;
        }
        if w.last_hb_count.is_some_and(|c| hb.count <= c) {
            sh.counters.stale_heartbeats += 1;
            return;
        }
        // The first HEARTBEAT tells where this reader's stream starts: skipping up to it is
        // not a loss (a volatile late joiner never was meant to get the earlier samples).
        let first_hb = w.last_hb_count.is_none();
        w.last_hb_count = Some(hb.count);
        w.highest_known = w.highest_known.max(hb.last_sn);
        if hb.first_sn > w.next {
            sh.skip_to(w, hb.first_sn, true, !first_hb, deliver);
        }
        let missing = w.next <= w.highest_known;
        let due = if missing {
            Some(if hb.final_flag {
                now + sh.cfg.nack_delay
            } else {
                now
            })
        } else if !hb.final_flag {
            Some(now + sh.cfg.ack_delay)
        } else {
            None
        };
        if let Some(due) = due {
            w.ack_due = Some(w.ack_due.map_or(due, |t| t.min(due)));
        }
    }

    /// Handles a HEARTBEAT_FRAG: schedules a NACK_FRAG if fragments of that sample are missing.
    pub fn on_heartbeat_frag(&mut self, src: GuidPrefix, hb: &HeartbeatFrag, now: Instant) {
        let Some(i) = self.find(Guid::new(src, hb.writer_id)) else {
            return;
        };
        let sh = &mut self.sh;
        let w = &mut self.writers[i];
        if !w.reliable {
            return;
        }
        if !valid_sn(hb.writer_sn) {
            sh.counters.invalid += 1;
            return;
        }
        if w.last_hbfrag_count.is_some_and(|c| hb.count <= c) {
            sh.counters.stale_heartbeats += 1;
            return;
        }
        w.last_hbfrag_count = Some(hb.count);
        if w.frags.contains(hb.writer_sn) {
            w.highest_known = w.highest_known.max(hb.writer_sn);
            let due = now + sh.cfg.nack_delay;
            w.ack_due = Some(w.ack_due.map_or(due, |t| t.min(due)));
        }
    }

    /// Handles a GAP: the listed numbers will never come.
    pub fn on_gap<F: FnMut(Delivered<'_>) -> R, R: Into<Verdict>>(
        &mut self,
        src: GuidPrefix,
        gap: &Gap,
        now: Instant,
        deliver: &mut F,
    ) {
        let _ = now;
        let Some(i) = self.find(Guid::new(src, gap.writer_id)) else {
            return;
        };
        let sh = &mut self.sh;
        let w = &mut self.writers[i];
        let list = &gap.gap_list;
        // The bitmap must name only numbers a reader accepts (≤ MAX_SN), or `next` could be
        // moved past every valid number.
        if !valid_sn(gap.gap_start)
            || list.base < gap.gap_start
            || list.num_bits > 256
            || list.base > MAX_SN + 1 - list.num_bits as i64
        {
            sh.counters.invalid += 1;
            return;
        }
        if !w.reliable {
            Self::best_effort_gap(sh, w, gap);
            return;
        }
        // [gap_start, list.base) first.
        if gap.gap_start <= w.next {
            if list.base > w.next {
                sh.skip_to(w, list.base, false, false, deliver);
            }
        } else {
            Self::mark_irrelevant(sh, w, gap.gap_start, list.base);
        }
        let mut hi = list.base - 1;
        for sn in list.iter() {
            hi = sn;
            if sn == w.next {
                sh.skip_to(w, sn + 1, false, false, deliver);
            } else {
                Self::mark_irrelevant(sh, w, sn, sn + 1);
            }
        }
        w.highest_known = w.highest_known.max(hi);
        sh.drain(w, deliver);
    }

    /// A GAP from a best-effort writer: the numbers it names from its start on (the range,
    /// then the bitmap's leading run) are irrelevant, numbers skipped before its start lost.
    fn best_effort_gap(sh: &mut Shared, w: &mut WriterProxy, gap: &Gap) {
        let mut end = gap.gap_list.base;
        for sn in gap.gap_list.iter() {
            if sn != end {
                break;
            }
            end += 1;
        }
        if end <= w.next {
            return;
        }
        if w.stream_started() && gap.gap_start > w.next {
            sh.counters.lost += (gap.gap_start - w.next) as u64;
        }
        w.highest_known = w.highest_known.max(end - 1);
        w.next = end;
        w.frags.drop_below(w.next, &mut sh.reassembly_bytes);
    }

    fn mark_irrelevant(
        sh: &mut Shared,
        w: &mut WriterProxy,
        from: SequenceNumber,
        to: SequenceNumber,
    ) {
        let from = from.max(w.next);
        let window_end = w.next.saturating_add(sh.cfg.max_window as i64);
        for sn in from..to.min(window_end) {
            let idx = (sn - w.next) as usize;
            while w.slots.len() <= idx {
                w.slots.push_back(Slot::Empty);
            }
            if let Slot::Sample(b) = &w.slots[idx] {
                sh.buffered_bytes.refund(b.payload.len());
            }
            w.slots[idx] = Slot::Irrelevant;
            w.frags.remove(sn, &mut sh.reassembly_bytes);
        }
    }

    /// The application has room again after refusing samples: writers whose samples were
    /// refused get an ACKNACK now that requests everything missing. Cheap when nothing was
    /// refused.
    pub fn resume(&mut self, now: Instant) {
        for w in self.writers.iter_mut().filter(|w| w.probing) {
            self.sh.counters.resumed += 1;
            w.probing = false;
            w.probe_backoff = 0;
            // The probe's request must not hold back the full one.
            w.nack_at = None;
            w.ack_due = Some(now);
        }
    }

    /// Whether [`ReaderCore::poll_transmit_into`] has a datagram to build at `now`: lets a
    /// receive thread skip preparing a send after each of the many DATA that ask for none.
    pub fn transmit_due(&self, now: Instant) -> bool {
        self.writers
            .iter()
            .any(|w| w.ack_due.is_some_and(|t| t <= now))
    }

    /// The application took `seq` of `writer` but its writer may not count it as
    /// acknowledged yet (a durability service that stores it only once its group committed
    /// it): ACKNACKs to that writer acknowledge nothing from `seq` on until
    /// [`ReaderCore::set_acknowledgment_hold`] moves or lifts the hold. No effect for a
    /// best-effort or unknown writer.
    pub fn hold_acknowledgment(&mut self, writer: Guid, seq: SequenceNumber) {
        if let Some(w) = self
            .writers
            .iter_mut()
            .find(|w| w.guid == writer && w.reliable)
        {
            w.ack_hold = Some(w.ack_hold.map_or(seq, |h| h.min(seq)));
        }
    }

    /// Moves the acknowledgment hold of `writer` to `hold` (`None`: lifted), and sends an
    /// ACKNACK at once when that acknowledges more.
    pub fn set_acknowledgment_hold(
        &mut self,
        writer: Guid,
        hold: Option<SequenceNumber>,
        now: Instant,
    ) {
        if let Some(w) = self.writers.iter_mut().find(|w| w.guid == writer) {
            let before = w.ack_hold.unwrap_or(SequenceNumber::MAX);
            w.ack_hold = hold.filter(|_| w.reliable);
            if w.ack_hold.unwrap_or(SequenceNumber::MAX) > before {
                w.ack_due = Some(now);
            }
        }
    }

    /// Where an ACKNACK to `w` starts: its next sample, or the hold below it.
    fn ack_base(w: &WriterProxy) -> SequenceNumber {
        w.ack_hold.map_or(w.next, |h| h.min(w.next))
    }

    /// Builds the next ACKNACK/NACK_FRAG datagram into `out`; false when nothing is due.
    pub fn poll_transmit_into(&mut self, now: Instant, out: &mut Transmit) -> bool {
        let n = self.writers.len();
        for k in 0..n {
            let i = (self.rr + k) % n;
            if self.writers[i].ack_due.is_some_and(|t| t <= now) {
                self.rr = (i + 1) % n;
                let w = &mut self.writers[i];
                Self::build_ack(&mut self.sh, w, now, out);
                return true;
            }
        }
        false
    }

    /// Like [`ReaderCore::poll_transmit_into`], allocating a new [`Transmit`].
    pub fn poll_transmit(&mut self, now: Instant) -> Option<Transmit> {
        let mut t = Transmit::new();
        self.poll_transmit_into(now, &mut t).then_some(t)
    }

    fn build_ack(sh: &mut Shared, w: &mut WriterProxy, now: Instant, out: &mut Transmit) {
        w.ack_due = None;
        out.dest = Destination::Endpoint {
            guid: w.guid,
            locators: w.locators,
        };
        out.submessages.clear();
        let suppression = w.suppression(&sh.cfg);
        let suppressing = w.nack_at.is_some_and(|t| now < t + suppression);
        let mut set = SequenceNumberSet::empty(Self::ack_base(w));
        let hi = if w.probing {
            w.next.min(w.highest_known)
        } else {
            w.highest_known.min(w.next + 255)
        };
        let mut nacked_hi = None;
        for sn in w.next..=hi {
            let idx = (sn - w.next) as usize;
            let have = matches!(w.slots.get(idx), Some(Slot::Sample(_) | Slot::Irrelevant));
            if have || w.frags.contains(sn) || (suppressing && sn <= w.nack_hi) {
                continue;
            }
            // Beyond the bitmap of a held base: asked for once the hold moves.
            if !set.insert(sn) {
                break;
            }
            nacked_hi = Some(sn);
        }
        if let Some(h) = nacked_hi {
            if !suppressing {
                w.nack_at = Some(now);
                w.nack_probe = Some(now);
            }
            w.nack_hi = w.nack_hi.max(h);
        }
        sh.acknack_count = sh.acknack_count.wrapping_add(1);
        sh.counters.acknacks_sent += 1;
        out.submessages.push(OutSubmessage::AckNack(AckNack {
            reader_id: sh.cfg.guid.entity_id,
            writer_id: w.guid.entity_id,
            reader_sn_state: set,
            count: sh.acknack_count,
            final_flag: set.num_bits == 0,
        }));
        // NACK_FRAGs for announced samples being reassembled: up to 4 × 256 fragments each.
        let frag_seqs: Vec<(SequenceNumber, Option<Instant>)> = if w.frags.is_empty() {
            Vec::new()
        } else {
            w.frags.in_progress().collect()
        };
        for (seq, nacked) in frag_seqs {
            let probe_skips = w.probing && seq != w.next;
            if seq > w.highest_known || probe_skips || nacked.is_some_and(|t| now < t + suppression)
            {
                continue;
            }
            let mut from = 1;
            for _ in 0..4 {
                let Some(set) = w.frags.missing_from(seq, from) else {
                    break;
                };
                from = set.base + 256;
                sh.nackfrag_count = sh.nackfrag_count.wrapping_add(1);
                sh.counters.nack_frags_sent += 1;
                out.submessages.push(OutSubmessage::NackFrag(NackFrag {
                    reader_id: sh.cfg.guid.entity_id,
                    writer_id: w.guid.entity_id,
                    writer_sn: seq,
                    fragment_number_state: set,
                    count: sh.nackfrag_count,
                }));
            }
            w.frags.mark_nacked(seq, now);
        }
    }

    /// The next instant something is due (an ACKNACK, a reassembly timeout).
    pub fn poll_timeout(&self) -> Option<Instant> {
        let t = self.sh.cfg.frag.timeout;
        self.writers
            .iter()
            .filter_map(|w| w.ack_due)
            .chain(self.writers.iter().filter_map(|w| w.frags.next_expiry(t)))
            .min()
    }

    /// Runs timers: drops partial samples that stopped making progress.
    pub fn handle_timeout(&mut self, now: Instant) {
        let t = self.sh.cfg.frag.timeout;
        for w in &mut self.writers {
            let n = w.frags.expire(now, t, &mut self.sh.reassembly_bytes);
            self.sh.counters.fragment_expired += n as u64;
        }
    }
}

#[cfg(test)]
mod tests;
