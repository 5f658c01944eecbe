//! Acknowledgment handling: ACKNACK and NACK_FRAG from matched readers (acknowledged
//! cursors, RTT samples, the repair queues and their hold-off) and the queries on what every
//! reader acknowledged. The receive thread's entry points, apart from the send side.

use std::time::Instant;

use super::{WriterCore, MAX_FRAG_REPAIRS, MAX_REPAIRS};
use crate::types::{Guid, GuidPrefix, SequenceNumber};
use crate::wire::{AckNack, NackFrag};

impl WriterCore {
    /// Handles an ACKNACK from reader `(src, an.reader_id)`. Returns true when the
    /// acknowledged state advanced (history space may have been freed, `all_acked` may have
    /// become true).
    pub fn on_acknack(&mut self, src: GuidPrefix, an: &AckNack, now: Instant) -> bool {
        self.sh.counters.acknacks_received += 1;
        let guid = Guid::new(src, an.reader_id);
        let last = self.sh.last_seq;
        let cfg = &self.sh.cfg;
        let delay = cfg.nack_response_delay;
        let Some(r) = self.readers.iter_mut().find(|r| r.guid == guid) else {
            self.sh.counters.unknown_reader += 1;
            return false;
        };
        if !r.reliable || r.last_acknack_count.is_some_and(|c| an.count <= c) {
            self.sh.counters.acknacks_ignored += 1;
            return false;
        }
        r.last_acknack_count = Some(an.count);
        let newly_synced = !r.synced;
        r.synced = true;
        let set = &an.reader_sn_state;
        if newly_synced && set.base < r.acked {
            r.lead_hb = true;
        }
        if set.base <= 0 {
            // Pre-emptive ACKNACK (Fast DDS, Connext): "tell me what you have".
            r.want_hb(false);
            return newly_synced;
        }
        let base = set.base.min(last + 1);
        let progressed = base > r.acked;
        if progressed {
            r.acked = base;
            r.recheck_backoff = 0;
        }
        if r.unsent < r.acked {
            r.unsent = r.acked;
            r.unsent_frag = 0;
        }
        if let Some((probe_seq, sent)) = r.probe {
            if base > probe_seq {
                r.probe = None;
                // Data repaired after the probe went out arrived last: time from the latest
                // repair (each ends with an ACK request that the reader answers at once).
                let i = r.resent.partition_point(|e| e.0 <= probe_seq);
                let from = r
                    .resent
                    .range(..i)
                    .map(|e| e.1)
                    .chain(
                        r.frag_resent
                            .iter()
                            .filter(|e| e.0 <= probe_seq)
                            .map(|e| e.2),
                    )
                    .fold(sent, Instant::max);
                r.rtt.sample(now.saturating_duration_since(from));
            }
        }
        // Forget repairs of acknowledged numbers.
        while r.resent.front().is_some_and(|e| e.0 < r.acked) {
            r.resent.pop_front();
        }
        let acked = r.acked;
        r.frag_resent.retain(|e| e.0 >= acked);
        let holdoff = r.rtt.holdoff(cfg);
        // Merge with what is already queued: readers suppress re-requests of repairs in
        // flight, so a newer ACKNACK that omits a number does not cancel it.
        let keep_front = r.repair.front().copied();
        r.repair.retain(|&sn| sn >= acked);
        let queued = r.repair.len();
        let mut held = 0u64;
        let mut requested = 0u64;
        let mut recheck: Option<Instant> = None;
        if set.base <= last + 1 && set.num_bits <= 256 {
            let mut k = r.resent.partition_point(|e| e.0 < set.base);
            for sn in set.iter() {
                if sn < r.acked || sn >= r.unsent {
                    continue;
                }
                while r.resent.get(k).is_some_and(|e| e.0 < sn) {
                    k += 1;
                }
                if let Some(&(_, t)) = r.resent.get(k).filter(|e| e.0 == sn) {
                    let until = t + holdoff;
                    if now < until {
                        // The last copy cannot have arrived yet when the reader asked.
                        held += 1;
                        recheck = Some(recheck.map_or(until, |x| x.min(until)));
                        continue;
                    }
                }
                requested += 1;
                if r.repair.len() < MAX_REPAIRS {
                    r.repair.push_back(sn);
                }
            }
        }
        if r.repair.len() > queued && queued > 0 {
            let v = r.repair.make_contiguous();
            v.sort_unstable();
            let mut prev = None;
            r.repair.retain(|&sn| prev.replace(sn) != Some(sn));
        }
        if r.repair.front().copied() != keep_front {
            r.repair_frag = 0;
        }
        if let Some(t) = recheck {
            r.recheck_at = Some(r.recheck_at.map_or(t, |x| x.min(t)));
        }
        if !r.repair.is_empty() {
            let due = now + delay;
            r.repair_at = Some(r.repair_at.map_or(due, |t| t.min(due)));
        } else if r.frag_repairs.is_empty() {
            r.repair_at = None;
            if !an.final_flag && r.acked <= last && held == 0 {
                r.want_hb(false);
            }
        }
        self.sh.counters.repairs_held_off += held;
        self.sh.sizer.note_requests(requested);
        self.sh.watch_loss(now);
        if progressed {
            self.gc();
        }
        progressed
    }

    /// Handles a NACK_FRAG: queues the named fragments for resending.
    pub fn on_nack_frag(&mut self, src: GuidPrefix, nf: &NackFrag, now: Instant) {
        self.sh.counters.nack_frags_received += 1;
        let guid = Guid::new(src, nf.reader_id);
        let delay = self.sh.cfg.nack_response_delay;
        let Some(r) = self.readers.iter_mut().find(|r| r.guid == guid) else {
            self.sh.counters.unknown_reader += 1;
            return;
        };
        if !r.reliable || r.last_nackfrag_count.is_some_and(|c| nf.count <= c) {
            self.sh.counters.acknacks_ignored += 1;
            return;
        }
        r.last_nackfrag_count = Some(nf.count);
        let seq = nf.writer_sn;
        let set = nf.fragment_number_state;
        if seq < r.acked
            || seq >= r.unsent
            || set.num_bits == 0
            || set.num_bits > 256
            || set.base == 0
            || set.base > u32::MAX - 256
        {
            return;
        }
        let holdoff = r.rtt.holdoff(&self.sh.cfg);
        if let Some(&(_, _, t)) = r.frag_resent.iter().find(|e| e.0 == seq && e.1 == set.base) {
            let until = t + holdoff;
            if now < until {
                // Those fragments were just resent; ask again once they had time to arrive.
                self.sh.counters.repairs_held_off += 1;
                r.recheck_at = Some(r.recheck_at.map_or(until, |x| x.min(until)));
                return;
            }
        }
        if let Some(e) = r
            .frag_repairs
            .iter_mut()
            .find(|e| e.0 == seq && e.1.base == set.base)
        {
            e.1 = set;
        } else if r.frag_repairs.len() < MAX_FRAG_REPAIRS {
            r.frag_repairs.push((seq, set));
        } else {
            return;
        }
        let due = now + delay;
        r.repair_at = Some(r.repair_at.map_or(due, |t| t.min(due)));
        self.sh.sizer.note_requests(1);
        self.sh.watch_loss(now);
    }

    /// Whether every matched reliable reader acknowledged `seq`.
    pub fn is_acked_by_all(&self, seq: SequenceNumber) -> bool {
        self.readers
            .iter()
            .filter(|r| r.reliable)
            .all(|r| r.acked > seq)
    }

    /// Whether every sample written so far is acknowledged by every reliable reader
    /// (`wait_for_acknowledgments`).
    pub fn all_acked(&self) -> bool {
        self.is_acked_by_all(self.sh.last_seq)
    }
}
