//! Building datagrams: the writer's DATA, DATA_FRAG, GAP and HEARTBEAT emitters, and the
//! per-reader fill (handshake heartbeat, repairs, new samples, trailing heartbeat).

use std::time::Instant;

use crate::types::{EntityId, Guid, SequenceNumber, Timestamp};
use crate::wire::{FragmentNumberSet, Gap, Heartbeat, PayloadKind, SequenceNumberSet};

use super::{
    Destination, InlineQos, OutData, OutDataFrag, OutSubmessage, ReaderProxy, Sample, Shared,
    Transmit, DATAGRAM_OVERHEAD, FRAG_OVERHEAD, HB_LEN, MAX_FRAG_REPAIRS, MAX_UDP_PAYLOAD,
    MIN_RECHECK,
};

/// Where emitting into a datagram stopped.
pub(super) struct Cursor {
    pub(super) used: usize,
    pub(super) ts: Option<Timestamp>,
    /// Submessage bytes allowed in this datagram.
    pub(super) limit: usize,
}

impl Cursor {
    /// An empty datagram allowing `limit` bytes of submessages.
    pub(super) fn new(limit: usize) -> Self {
        Cursor {
            used: 0,
            ts: None,
            limit,
        }
    }
}

impl Shared {
    pub(super) fn room(&self, c: &Cursor, out: &[OutSubmessage], need: usize) -> bool {
        out.is_empty() || c.used + need <= c.limit
    }

    pub(super) fn first_available(&self, from: SequenceNumber) -> SequenceNumber {
        self.history
            .next_from(from)
            .map(|x| x.0)
            .unwrap_or(self.last_seq + 1)
    }

    pub(super) fn push_ts(
        &self,
        c: &mut Cursor,
        out: &mut Vec<OutSubmessage>,
        ts: Option<Timestamp>,
    ) {
        if c.ts != ts {
            let sm = OutSubmessage::InfoTs(ts);
            c.used += sm.wire_len();
            out.push(sm);
            c.ts = ts;
        }
    }

    pub(super) fn inline_qos(&self, seq: SequenceNumber, s: &Sample) -> InlineQos {
        InlineQos {
            // The end-of-set marker's key hash only files it in the history (see `coherent`).
            key_hash: if self.cfg.send_key_hash && s.coherent_set != Some(super::COHERENT_SET_END) {
                s.key_hash
            } else {
                None
            },
            status_info: s.status_info,
            sample_identity: if self.cfg.send_sample_identity {
                Some(s.origin.unwrap_or((self.cfg.guid, seq)))
            } else {
                None
            },
            // A relayed sample outside the discovery-server protocol (a durability service's
            // replay) names its original writer the standard way.
            original_writer: if self.cfg.send_sample_identity {
                None
            } else {
                s.origin
            },
            coherent_set: s.coherent_set,
            group: s.group,
        }
    }

    pub(super) fn is_fragmented(&self, s: &Sample) -> bool {
        s.frag_size != 0
    }

    pub(super) fn total_frags(&self, s: &Sample) -> u32 {
        // A sample is at most 4 GiB and a fragment at least 4 bytes: this fits a u32.
        u32::try_from(s.payload.len().div_ceil(s.frag_size.max(1) as usize)).unwrap_or(u32::MAX)
    }

    /// How a new sample will travel: 0 (whole, one DATA) when its DATA fits a datagram next to
    /// INFO_TS, else the fragment size.
    pub(super) fn frag_size_for(&self, len: usize, qos: &InlineQos) -> u32 {
        let data = 24 + qos.wire_len() + len.div_ceil(4) * 4;
        if data + 12 <= self.budget {
            0
        } else {
            self.frag_size as u32
        }
    }

    /// Recomputes the datagram budgets and the fragment size from the configuration.
    pub(super) fn size_datagrams(&mut self) {
        let cfg = &self.cfg;
        let budget = self
            .effective_max_message_size()
            .min(MAX_UDP_PAYLOAD)
            .saturating_sub(DATAGRAM_OVERHEAD + HB_LEN)
            .max(512);
        self.repair_budget = cfg
            .repair_message_size
            .saturating_sub(DATAGRAM_OVERHEAD + HB_LEN)
            .clamp(256, budget);
        let max_frag = (budget - FRAG_OVERHEAD).min(u16::MAX as usize) & !3;
        self.frag_size = cfg.fragment_size.clamp(4, max_frag) & !3;
        let max_repair_frag = self.repair_budget.saturating_sub(FRAG_OVERHEAD).max(4);
        self.repair_frag_size = cfg.fragment_size.clamp(4, max_repair_frag) & !3;
        self.budget = budget;
    }

    /// The datagram size limit in force: the configured one, or the repair (path MTU) size
    /// while the loss watch says the path drops fragments.
    pub(super) fn effective_max_message_size(&self) -> usize {
        if self.sizer.reduced() {
            self.cfg.max_message_size.min(self.cfg.repair_message_size)
        } else {
            self.cfg.max_message_size
        }
    }

    /// Feeds the loss watch; resizes datagrams when it changes its mind.
    pub(super) fn watch_loss(&mut self, now: Instant) {
        if self.cfg.max_message_size <= self.cfg.repair_message_size {
            return; // Datagrams are path-sized already: nothing to adapt.
        }
        let sent = self.counters.data_sent + self.counters.data_frag_sent;
        if self.sizer.tick(now, sent) {
            if self.sizer.reduced() {
                self.counters.datagram_reductions += 1;
            }
            self.size_datagrams();
        }
    }

    /// `s` as its repairs travel: a whole sample whose DATA does not fit a repair datagram is
    /// resent as DATA_FRAGs of `repair_frag_size` (always the same size for one sample, so a
    /// reader can reassemble fragments of several repairs). A reader that lost the whole DATA
    /// holds no fragment of it, so the change of form is safe.
    pub(super) fn repair_view(&self, seq: SequenceNumber, mut s: Sample) -> Sample {
        if s.frag_size == 0 {
            let data = 24 + self.inline_qos(seq, &s).wire_len() + s.payload.len().div_ceil(4) * 4;
            if data + 12 > self.repair_budget {
                s.frag_size = self.repair_frag_size as u32;
            }
        }
        s
    }

    /// Emits a whole unfragmented sample; false when there is no room.
    pub(super) fn emit_data(
        &mut self,
        reader_id: EntityId,
        seq: SequenceNumber,
        s: &Sample,
        c: &mut Cursor,
        out: &mut Vec<OutSubmessage>,
    ) -> bool {
        let sm = self.data_submessage(reader_id, seq, s);
        self.push_data(sm, s.timestamp, c, out)
    }

    /// The DATA submessage carrying sample `seq` whole (it shares the payload).
    pub(super) fn data_submessage(
        &self,
        reader_id: EntityId,
        seq: SequenceNumber,
        s: &Sample,
    ) -> OutSubmessage {
        OutSubmessage::Data(OutData {
            reader_id,
            writer_id: self.cfg.guid.entity_id,
            writer_sn: seq,
            inline_qos: self.inline_qos(seq, s),
            payload_kind: if s.payload.is_empty() {
                PayloadKind::None
            } else if s.key_flag {
                PayloadKind::Key
            } else {
                PayloadKind::Data
            },
            payload: s.payload.clone(),
        })
    }

    /// Appends `sm` (a DATA with source timestamp `ts`) if the message has room.
    fn push_data(
        &mut self,
        sm: OutSubmessage,
        ts: Option<Timestamp>,
        c: &mut Cursor,
        out: &mut Vec<OutSubmessage>,
    ) -> bool {
        let ts_len = if c.ts != ts { 12 } else { 0 };
        let len = sm.wire_len();
        if !self.room(c, out, len + ts_len) {
            return false;
        }
        self.push_ts(c, out, ts);
        c.used += len;
        out.push(sm);
        self.counters.data_sent += 1;
        true
    }

    /// Emits fragments `from..to` (0-based) of a fragmented sample in chunks as room allows;
    /// returns the first fragment not emitted.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn emit_frags(
        &mut self,
        reader_id: EntityId,
        seq: SequenceNumber,
        s: &Sample,
        from: u32,
        to: u32,
        c: &mut Cursor,
        out: &mut Vec<OutSubmessage>,
    ) -> u32 {
        let total = self.total_frags(s);
        let to = to.min(total);
        let fs = s.frag_size.max(1) as usize;
        let mut f = from;
        while f < to {
            // As many fragments as the room left allows (at least one).
            let room = c.limit.saturating_sub(c.used + FRAG_OVERHEAD);
            let fit = u32::try_from((room / fs).clamp(1, u16::MAX as usize)).unwrap_or(1);
            let n = (to - f).min(fit);
            let start = f as usize * fs;
            let end = (f as usize + n as usize)
                .saturating_mul(fs)
                .min(s.payload.len());
            let sm = OutSubmessage::DataFrag(OutDataFrag {
                reader_id,
                writer_id: self.cfg.guid.entity_id,
                writer_sn: seq,
                fragment_starting_num: f + 1,
                fragments_in_submessage: u16::try_from(n).unwrap_or(u16::MAX),
                fragment_size: u16::try_from(fs).unwrap_or(u16::MAX),
                sample_size: u32::try_from(s.payload.len()).unwrap_or(u32::MAX),
                inline_qos: self.inline_qos(seq, s),
                key_flag: s.key_flag,
                payload: s.payload.clone(),
                range: start..end,
            });
            let ts_len = if c.ts != s.timestamp { 12 } else { 0 };
            if !self.room(c, out, sm.wire_len() + ts_len) {
                break;
            }
            self.push_ts(c, out, s.timestamp);
            c.used += sm.wire_len();
            out.push(sm);
            self.counters.data_frag_sent += 1;
            f += n;
        }
        f
    }

    /// Emits the first transmission of `seq` from fragment `*frag` on, or a GAP up to the next
    /// live sample (at most `limit + 1`) when `seq` is gone. Best-effort readers get GAPs too:
    /// without one, a number they never see counts as a sample lost.
    /// Returns the number after what it covered and whether that was data, or `None` when the
    /// datagram is full (`*frag` then says how far a fragmented sample got).
    /// `for_reader`: the one reader this datagram serves (not a multicast group), whose
    /// content filter may drop samples (then a GAP).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn emit_new(
        &mut self,
        reader_id: EntityId,
        for_reader: Option<Guid>,
        seq: SequenceNumber,
        frag: &mut u32,
        limit: SequenceNumber,
        c: &mut Cursor,
        out: &mut Vec<OutSubmessage>,
    ) -> Option<(SequenceNumber, bool)> {
        if let Some(g) = for_reader.filter(|g| *frag == 0 && self.filtered_for(seq, *g)) {
            // The whole run this reader's filter drops, in one GAP.
            let mut end = seq + 1;
            while end <= limit.min(self.last_seq) && self.filtered_for(end, g) {
                end += 1;
            }
            if !self.emit_gap(reader_id, seq, end, c, out) {
                return None;
            }
            self.counters.samples_filtered += u64::try_from(end - seq).unwrap_or(0);
            return Some((end, false));
        }
        /// What the history holds at `seq`, owned so that the `&mut self` calls below can
        /// follow the lookup: a whole sample as its DATA already (sharing the payload, no copy
        /// of the history entry), a fragmented one as a copy of its entry.
        enum Next {
            Whole(OutSubmessage, Option<Timestamp>),
            Fragmented(Sample),
            GapTo(SequenceNumber),
        }
        let next = match self.history.next_from(seq) {
            Some((s, x)) if s == seq && !self.is_fragmented(x) => {
                Next::Whole(self.data_submessage(reader_id, seq, x), x.timestamp)
            }
            Some((s, x)) if s == seq => Next::Fragmented(x.clone()),
            other => Next::GapTo(other.map_or(self.last_seq + 1, |x| x.0).min(limit + 1)),
        };
        let done = match next {
            Next::Whole(sm, ts) => {
                if !self.push_data(sm, ts, c, out) {
                    return None;
                }
                (seq + 1, true)
            }
            Next::Fragmented(sample) => {
                let total = self.total_frags(&sample);
                let f = self.emit_frags(reader_id, seq, &sample, *frag, total, c, out);
                if f < total {
                    *frag = f;
                    return None;
                }
                (seq + 1, true)
            }
            Next::GapTo(end) => {
                if !self.emit_gap(reader_id, seq, end, c, out) {
                    return None;
                }
                (end, false)
            }
        };
        *frag = 0;
        Some(done)
    }

    /// Whether reader `g`'s content filter drops sample `seq` (writer-side filtering).
    pub(super) fn filtered_for(&self, seq: SequenceNumber, g: Guid) -> bool {
        !self.filtered_out.is_empty() && self.filtered_out.get(&seq).is_some_and(|r| r.contains(&g))
    }

    pub(super) fn emit_gap(
        &mut self,
        reader_id: EntityId,
        from: SequenceNumber,
        to: SequenceNumber,
        c: &mut Cursor,
        out: &mut Vec<OutSubmessage>,
    ) -> bool {
        let sm = OutSubmessage::Gap(Gap {
            reader_id,
            writer_id: self.cfg.guid.entity_id,
            gap_start: from,
            gap_list: SequenceNumberSet::empty(to),
        });
        if !self.room(c, out, sm.wire_len()) {
            return false;
        }
        c.used += sm.wire_len();
        out.push(sm);
        self.counters.gaps_sent += 1;
        true
    }

    pub(super) fn heartbeat(&mut self, r: &ReaderProxy, final_flag: bool) -> Heartbeat {
        self.heartbeat_from(r.guid.entity_id, r.start, final_flag)
    }

    /// A HEARTBEAT to a reader whose stream starts at `start`.
    pub(super) fn heartbeat_from(
        &mut self,
        reader_id: EntityId,
        start: SequenceNumber,
        final_flag: bool,
    ) -> Heartbeat {
        self.hb_count = self.hb_count.wrapping_add(1);
        self.counters.heartbeats_sent += 1;
        let first = start
            .max(self.history.first_seq().unwrap_or(self.last_seq + 1))
            .min(self.last_seq + 1);
        Heartbeat {
            reader_id,
            writer_id: self.cfg.guid.entity_id,
            first_sn: first,
            last_sn: self.last_seq,
            count: self.hb_count,
            final_flag,
            liveliness_flag: false,
        }
    }

    /// Whether a new sample fits: history room (KEEP_ALL / max_samples) and the flow-control
    /// window over `reliable_floor`, the lowest sequence number some reliable reader still needs.
    pub(super) fn can_accept(
        &self,
        min_needed: SequenceNumber,
        reliable_floor: Option<SequenceNumber>,
    ) -> bool {
        let in_flight_ok =
            reliable_floor.is_none_or(|floor| self.last_seq + 1 - floor < self.flow_window);
        in_flight_ok
            && (self.history.len() < self.cfg.max_samples
                || self.history.first_seq().is_some_and(|f| f < min_needed))
    }

    /// Fills `out` with what reader `r` needs now; false if nothing. New samples go up to
    /// `limit` (below its group's cursor for a group member); `defer_hb`: a heartbeat alone is
    /// left for the group.
    pub(super) fn fill(
        &mut self,
        r: &mut ReaderProxy,
        now: &crate::Now,
        full_history: bool,
        limit: SequenceNumber,
        defer_hb: bool,
        out: &mut Transmit,
    ) -> bool {
        out.dest = Destination::Endpoint {
            guid: r.guid,
            locators: r.locators,
        };
        let subs = &mut out.submessages;
        subs.clear();
        let mut c = Cursor::new(self.budget);
        let rid = r.guid.entity_id;
        let mut full = false;

        // 0. A freshly synced reader first learns where its stream starts.
        if r.lead_hb && r.reliable {
            r.lead_hb = false;
            let hb = self.heartbeat(r, true);
            c.used += OutSubmessage::Heartbeat(hb).wire_len();
            subs.push(OutSubmessage::Heartbeat(hb));
        }

        // 1. Repairs.
        if r.reliable && r.repair_at.is_some_and(|t| t <= now.get()) {
            c.limit = self.repair_budget;
            while !full && !r.frag_repairs.is_empty() {
                let (seq, mut set) = r.frag_repairs[0];
                let base = set.base;
                if seq < r.acked || seq >= r.unsent {
                    r.frag_repairs.remove(0);
                    continue;
                }
                let Some(sample) = self
                    .history
                    .get(seq)
                    .cloned()
                    .map(|x| self.repair_view(seq, x))
                else {
                    r.frag_repairs.remove(0);
                    if !r.repair.contains(&seq) {
                        let p = r.repair.partition_point(|&x| x < seq);
                        r.repair.insert(p, seq);
                    }
                    continue;
                };
                let total = if self.is_fragmented(&sample) {
                    self.total_frags(&sample)
                } else {
                    1
                };
                // Serve the set run by run.
                loop {
                    let first = set.iter().find(|&n| n >= 1 && n <= total);
                    let Some(a) = first else { break };
                    let mut b = a;
                    while b < total && set.contains(b + 1) {
                        b += 1;
                    }
                    let next = if self.is_fragmented(&sample) {
                        self.emit_frags(rid, seq, &sample, a - 1, b, &mut c, subs) + 1
                    } else if self.emit_data(rid, seq, &sample, &mut c, subs) {
                        b + 1
                    } else {
                        a
                    };
                    if next > a {
                        self.counters.retransmits += 1;
                        note_frag_resent(&mut r.frag_resent, seq, base, now.get());
                    }
                    for n in a..next {
                        fns_remove(&mut set, n);
                    }
                    if next <= b {
                        full = true;
                        break;
                    }
                }
                if full {
                    r.frag_repairs[0].1 = set;
                } else {
                    r.frag_repairs.remove(0);
                }
            }
            while !full {
                let Some(&seq) = r.repair.front() else { break };
                if seq < r.acked || seq >= r.unsent {
                    r.repair.pop_front();
                    r.repair_frag = 0;
                    continue;
                }
                if r.repair_frag == 0 && self.filtered_for(seq, r.guid) {
                    // Asked for a sample its filter drops (the first GAP was lost): GAP again.
                    if !self.emit_gap(rid, seq, seq + 1, &mut c, subs) {
                        full = true;
                        break;
                    }
                    r.repair.pop_front();
                    continue;
                }
                match self
                    .history
                    .get(seq)
                    .cloned()
                    .map(|x| self.repair_view(seq, x))
                {
                    None => {
                        let end = self.first_available(seq).min(r.unsent);
                        if !self.emit_gap(rid, seq, end, &mut c, subs) {
                            full = true;
                            break;
                        }
                        while r.repair.front().is_some_and(|&x| x < end) {
                            r.repair.pop_front();
                        }
                        r.repair_frag = 0;
                    }
                    Some(sample) if self.is_fragmented(&sample) => {
                        let total = self.total_frags(&sample);
                        let next =
                            self.emit_frags(rid, seq, &sample, r.repair_frag, total, &mut c, subs);
                        if next > r.repair_frag && r.repair_frag == 0 {
                            self.counters.retransmits += 1;
                        }
                        if next > r.repair_frag {
                            r.note_resent(seq, now.get());
                        }
                        if next < total {
                            r.repair_frag = next;
                            full = true;
                        } else {
                            r.repair.pop_front();
                            r.repair_frag = 0;
                        }
                    }
                    Some(sample) => {
                        if !self.emit_data(rid, seq, &sample, &mut c, subs) {
                            full = true;
                        } else {
                            self.counters.retransmits += 1;
                            r.note_resent(seq, now.get());
                            r.repair.pop_front();
                        }
                    }
                }
            }
            if r.repair.is_empty() && r.frag_repairs.is_empty() {
                r.repair_at = None;
                // Ask the reader what is still missing, and again once these repairs had time
                // to arrive: if this datagram is lost, nothing else would prompt the reader
                // before the next periodic heartbeat.
                r.want_hb(false);
                let t = now.get() + r.rtt.holdoff(&self.cfg).max(MIN_RECHECK);
                r.recheck_at = Some(r.recheck_at.map_or(t, |x| x.min(t)));
            }
            if subs.is_empty() {
                c.limit = self.budget;
            }
        }
        let mut sent_new = false;

        // 2. New samples.
        if !full && r.synced && (self.cfg.push_mode || !r.reliable) && r.unsent <= limit {
            while r.unsent <= limit {
                let seq = r.unsent;
                let frag = &mut r.unsent_frag;
                let Some((end, data)) =
                    self.emit_new(rid, Some(r.guid), seq, frag, limit, &mut c, subs)
                else {
                    break;
                };
                sent_new |= data;
                r.unsent = end;
            }
            if !r.reliable {
                r.acked = r.unsent;
                self.gc_needed = true;
            } else if r.unsent > self.last_seq {
                let want_ack = self.last_seq - r.ack_req_seq >= self.ack_every || full_history;
                r.want_hb(!want_ack);
            }
        }

        // 3. Heartbeat (room for it is always reserved).
        if r.reliable && !(defer_hb && subs.is_empty()) {
            if let Some(final_flag) = r.hb_due.take() {
                let hb = self.heartbeat(r, final_flag);
                if !final_flag {
                    r.ack_req_seq = self.last_seq;
                    if sent_new && r.probe.is_none() && r.unsent > self.last_seq {
                        // The first ACKNACK acknowledging this data times the round trip.
                        r.probe = Some((self.last_seq, now.get()));
                    }
                }
                subs.push(OutSubmessage::Heartbeat(hb));
            }
        } else if !r.reliable {
            r.hb_due = None;
        }
        !subs.is_empty()
    }
}

/// Notes that fragments requested by a NACK_FRAG `(seq, base)` were resent at `now`.
pub(super) fn note_frag_resent(
    v: &mut Vec<(SequenceNumber, u32, Instant)>,
    seq: SequenceNumber,
    base: u32,
    now: Instant,
) {
    if let Some(e) = v.iter_mut().find(|e| e.0 == seq && e.1 == base) {
        e.2 = now;
    } else if v.len() < 4 * MAX_FRAG_REPAIRS {
        v.push((seq, base, now));
    } else if let Some(oldest) = v.iter_mut().min_by_key(|e| e.2) {
        *oldest = (seq, base, now);
    }
}

fn fns_remove(set: &mut FragmentNumberSet, n: u32) {
    if n < set.base || n - set.base >= set.num_bits {
        return;
    }
    let off = (n - set.base) as usize;
    if let Some(w) = set.bitmap.get_mut(off / 32) {
        *w &= !(1u32 << (31 - off % 32));
    }
}
