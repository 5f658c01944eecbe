//! The receive thread's entry points: DATA, DATA_FRAG, HEARTBEAT, HEARTBEAT_FRAG and GAP from
//! matched writers.

use std::borrow::Cow;
use std::time::Instant;

use super::proxy::{valid_sn, Slot, WriterProxy, MAX_SN};
use super::{Delivered, InlineQos, ReaderCore, Shared, Verdict};
use crate::frag::{self, FragMeta, FragOutcome, FragReject};
use crate::types::{Guid, GuidPrefix, SequenceNumber, Timestamp};
use crate::wire::{Data, DataFrag, Gap, Heartbeat, HeartbeatFrag, PayloadKind};

fn kind_of(key_flag: bool) -> PayloadKind {
    if key_flag {
        PayloadKind::Key
    } else {
        PayloadKind::Data
    }
}

impl ReaderCore {
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
}
