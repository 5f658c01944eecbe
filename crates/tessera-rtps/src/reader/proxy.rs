//! Per-writer state: the proxy of each matched writer, with its ring of out-of-order slots,
//! and the bounds on the sequence numbers a reader accepts.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use super::ReaderConfig;
use crate::frag::{FragMeta, Reassembler};
use crate::types::{Guid, Locators, SequenceNumber};
use crate::wire::PayloadKind;
use crate::writer::Rtt;

// The docs here link to `ReaderCore`.
#[cfg(doc)]
use super::ReaderCore;

/// Sequence numbers above this are refused as invalid, so that no arithmetic on peer-supplied
/// numbers can overflow.
pub(super) const MAX_SN: SequenceNumber = 1 << 62;

pub(super) fn valid_sn(sn: SequenceNumber) -> bool {
    (1..=MAX_SN).contains(&sn)
}

#[derive(Debug)]
pub(super) enum Slot {
    Empty,
    Irrelevant,
    Sample(Buffered),
}

#[derive(Debug)]
pub(super) struct Buffered {
    pub(super) kind: PayloadKind,
    pub(super) payload: Vec<u8>,
    pub(super) meta: FragMeta,
}

#[derive(Debug)]
pub(super) struct WriterProxy {
    pub(super) guid: Guid,
    pub(super) locators: Locators,
    pub(super) reliable: bool,
    /// Next sequence number to deliver (everything below is delivered, lost or irrelevant).
    pub(super) next: SequenceNumber,
    /// Out-of-order slots: `slots[i]` is `next + i`.
    pub(super) slots: VecDeque<Slot>,
    /// Highest sequence number the writer is known to have. From a best-effort writer: the
    /// highest received or named by a GAP, 0 until its stream started (see
    /// [`WriterProxy::stream_started`]).
    pub(super) highest_known: SequenceNumber,
    pub(super) last_hb_count: Option<i32>,
    pub(super) last_hbfrag_count: Option<i32>,
    pub(super) ack_due: Option<Instant>,
    pub(super) nack_at: Option<Instant>,
    pub(super) nack_hi: SequenceNumber,
    /// A NACK went out at this instant and no requested sample has arrived since.
    pub(super) nack_probe: Option<Instant>,
    /// Repair round trip: from a NACK to the first requested sample arriving.
    pub(super) repair_rtt: Rtt,
    pub(super) frags: Reassembler,
    /// The last sample the application refused (it is `next` until accepted or skipped).
    pub(super) refused_seq: Option<SequenceNumber>,
    /// The application refused `next` and has not made room since: ACKNACKs request only
    /// `next` (a probe, like TCP's zero-window probe), not the whole missing range, so that a
    /// reader that is not taking does not cause a repair storm.
    pub(super) probing: bool,
    /// Resends of `next` refused in a row: each doubles the time between probes, up to
    /// [`ReaderConfig::nack_suppression_max`] (a reader full for long costs ~2 repairs a
    /// second at the default).
    pub(super) probe_backoff: u32,
    /// The lowest sample the application took but may not acknowledge yet
    /// ([`ReaderCore::hold_acknowledgment`]): the ACKNACK base stays at it, so the writer
    /// keeps it and everything after it.
    pub(super) ack_hold: Option<SequenceNumber>,
}

impl WriterProxy {
    /// A best-effort writer's stream started: a sample or GAP from it arrived, so numbers it
    /// skips from now on are lost (before, the stream simply starts where the first one is).
    pub(super) fn stream_started(&self) -> bool {
        self.highest_known > 0
    }

    /// A complete sample `seq` arrived at `now`: the first requested one to arrive after a
    /// NACK times the repair round trip.
    pub(super) fn note_repair(&mut self, seq: SequenceNumber, now: Instant) {
        if let Some(t) = self.nack_probe {
            if seq >= self.next && seq <= self.nack_hi {
                self.nack_probe = None;
                self.repair_rtt.sample(now.saturating_duration_since(t));
            }
        }
    }

    /// How long requested numbers are not requested again (longer between probes).
    pub(super) fn suppression(&self, cfg: &ReaderConfig) -> Duration {
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
