//! The send side and timers: resuming after refusals, acknowledgment holds, building the
//! ACKNACK and NACK_FRAG datagrams, and reassembly timeouts.

use std::time::Instant;

use super::proxy::{Slot, WriterProxy};
use super::{Destination, OutSubmessage, ReaderCore, Shared, Transmit};
use crate::types::{Guid, SequenceNumber};
use crate::wire::{AckNack, NackFrag, SequenceNumberSet};

impl ReaderCore {
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
