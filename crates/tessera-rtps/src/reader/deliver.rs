//! In-order delivery to the application: offering samples, draining the out-of-order ring,
//! skipping numbers that will never come, and buffering samples that arrive early.

use std::borrow::Cow;

use super::proxy::{Buffered, Slot, WriterProxy};
use super::{Delivered, Shared, Verdict};
use crate::frag::FragMeta;
use crate::types::SequenceNumber;
use crate::wire::PayloadKind;

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
    pub(super) fn drain<F: FnMut(Delivered<'_>) -> R, R: Into<Verdict>>(
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
    pub(super) fn skip_to<F: FnMut(Delivered<'_>) -> R, R: Into<Verdict>>(
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
    pub(super) fn accept<F: FnMut(Delivered<'_>) -> R, R: Into<Verdict>>(
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
