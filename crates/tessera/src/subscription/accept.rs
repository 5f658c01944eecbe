//! Storing what the receive path delivers: duplicate and sink checks, loan and shared-memory
//! references, key hashes, policies and the insertion into the history.

use super::scope::{committed_delivery, DatagramScope};
use super::{durable, ReaderEndpoint, ReceivedSample, SampleSink, SinkVerdict};
use crate::history::{History, InsertOutcome, UpdateOutcome};
use crate::qos_rt::reader::Admission;
use crate::sample::{SerializedPayload, SerializedSample};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;
use tessera_rtps::qos::Consistency;
use tessera_rtps::reader::Delivered;
use tessera_rtps::wire::PayloadKind;

impl ReaderEndpoint {
    /// Hands `d` to the sink; returns whether the sink took it (`rejected` counts a refusal).
    fn to_sink(&self, sink: &dyn SampleSink, d: &Delivered<'_>, rejected: &mut u32) -> bool {
        let (writer, seq, relay) = durable::effective_origin(d);
        // A sink stores or forwards bytes: a loan reference is serialized first.
        let serialized;
        let payload: &[u8] = if crate::loan::is_loan_payload(&d.payload) {
            match self.loan_to_cdr(&d.payload) {
                Ok(bytes) => {
                    serialized = bytes;
                    &serialized
                }
                Err(e) => {
                    self.count_undecodable(&e);
                    return false;
                }
            }
        } else {
            &d.payload
        };
        let key_only = d.status_info & 0x3 != 0 || d.kind == PayloadKind::Key;
        // A type the sink cannot decode (an opaque one) falls back to the writer's
        // PID_KEY_HASH.
        let key_hash = match (d.key_hash, key_only) {
            (Some(k), true) => Ok(k),
            (_, true) => self.support.key_hash_of_key(payload),
            (inline, false) => self
                .support
                .key_hash_of_sample(payload)
                .or_else(|e| inline.ok_or(e)),
        };
        let key_hash = match key_hash {
            Ok(k) => k,
            Err(e) => {
                self.count_undecodable(&e);
                return false;
            }
        };
        let s = ReceivedSample {
            writer,
            sequence_number: seq,
            relayed_by: relay,
            payload,
            key_only: d.kind != PayloadKind::Data,
            key_hash,
            status_info: d.status_info,
            source_timestamp: d.source_timestamp.map(|t| t.to_nanos()).unwrap_or(0),
            can_hold: relay.is_none()
                && durable::HoldScope::holds_for(self as *const ReaderEndpoint as usize),
        };
        match sink.offer(&s) {
            SinkVerdict::Accepted => true,
            SinkVerdict::Held if s.can_hold => {
                durable::HoldScope::record(d.writer, d.seq);
                true
            }
            SinkVerdict::Held | SinkVerdict::Refused => {
                *rejected += 1;
                false
            }
        }
    }

    /// The CDR of the sample a loan reference names, if this reader resolves references.
    fn loan_to_cdr(
        &self,
        reference: &[u8],
    ) -> std::result::Result<Vec<u8>, tessera_rtps::cdr::CdrError> {
        let resolver = self
            .loans
            .get()
            .ok_or_else(crate::loan::ChunkHold::unresolvable)?;
        let hold =
            crate::loan::ChunkHold::take(reference).map_err(crate::loan::ChunkHold::refused)?;
        resolver.serialize(&hold)
    }

    /// The serialized sample a CDR-chunk reference names, copied out of the writer's pool;
    /// `None` when refused: a stale reference counts as a lost sample, any other refusal as an
    /// undecodable one (both logged).
    pub(super) fn resolve_cdr_chunk(&self, reference: &[u8]) -> Option<Arc<Vec<u8>>> {
        match crate::loan::copy_cdr_chunk(reference, |len| self.pool.large_buffer(len)) {
            Ok(bytes) => Some(bytes),
            Err(crate::loan::LoanError::Refused(crate::transport::shm_pool::Refused::Stale)) => {
                self.stale_loans.fetch_add(1, Ordering::Relaxed);
                tracing::debug!(reader = ?self.guid, "stale reference to a serialized sample");
                None
            }
            Err(e) => {
                self.count_undecodable(&crate::loan::ChunkHold::refused(e));
                None
            }
        }
    }

    /// [`Self::accept`] for one sample that is not (or no longer) held in a coherent set.
    pub(crate) fn accept_one(
        &self,
        d: &Delivered<'_>,
        shared: Option<&Arc<Vec<u8>>>,
        history: &mut History<SerializedPayload>,
        rejected: &mut u32,
    ) -> bool {
        if d.kind == PayloadKind::None && d.status_info & 0x3 == 0 {
            // Nothing to store: an end-of-coherent-set marker (or an empty DATA).
            return false;
        }
        if d.original.is_some() && self.delivered.is_none() {
            // A durability service's replay is for TRANSIENT and PERSISTENT readers only.
            return false;
        }
        let Some(table) = &self.delivered else {
            return self.accept_new(d, shared, history, rejected);
        };
        let (writer, seq, _) = durable::effective_origin(d);
        if !table.lock().first_time(writer, seq) {
            return false;
        }
        let before = *rejected;
        let changed = self.accept_new(d, shared, history, rejected);
        if *rejected != before {
            // Refused: it will come again (resent, or from the other source).
            table.lock().forget(writer, seq);
        }
        changed
    }

    /// [`Self::accept`] for a sample not delivered before.
    fn accept_new(
        &self,
        d: &Delivered<'_>,
        shared: Option<&Arc<Vec<u8>>>,
        history: &mut History<SerializedPayload>,
        rejected: &mut u32,
    ) -> bool {
        if self.sink_on.load(Ordering::Relaxed) {
            if let Some(sink) = self.sink.read().clone() {
                self.to_sink(&*sink, d, rejected);
                return false;
            }
        }
        // A relayed sample is delivered as its original writer's.
        let writer = d.original.map_or(d.writer, |(w, _)| w).to_bytes();
        let ts = d.source_timestamp.map(|t| t.to_nanos()).unwrap_or(0);
        let reception = DatagramScope::reception();
        // An ATOMIC reader's samples from an ATOMIC writer are committed log entries: the log
        // order is one order every member agrees on, which is what BY_SOURCE_TIMESTAMP is for.
        // Dropping an entry whose source timestamp is older than the instance's newest (a
        // writer whose clock lags) would drop an acknowledged write at every member, so they
        // keep log order. EVENTUAL readers of the writer keep the policy.
        let in_log_order = self.qos.consistency == Consistency::Atomic && committed_delivery();
        if d.status_info & 0x3 != 0 || d.kind == PayloadKind::Key {
            let key_hash = match d.key_hash {
                Some(k) => k,
                None => match self.support.key_hash_of_key(&d.payload) {
                    Ok(k) => k,
                    Err(_) => return false,
                },
            };
            if self.policies_on.load(Ordering::Relaxed) {
                let mut p = self.policies.lock();
                let unregister = d.status_info & 2 != 0;
                if !p.admit_update(key_hash, writer, unregister) {
                    return false;
                }
                if d.status_info & 1 != 0 {
                    // A disposed instance expects no more samples: no deadline.
                    p.deadline.remove(&key_hash);
                }
            }
            let mut changed = false;
            if d.status_info & 1 != 0 {
                let out = if in_log_order {
                    history.dispose_in_order(key_hash, writer, ts, reception)
                } else {
                    history.dispose(key_hash, writer, ts, reception)
                };
                if matches!(out, UpdateOutcome::Rejected(_)) {
                    *rejected += 1;
                }
                changed |= out.is_changed();
            }
            if d.status_info & 2 != 0 {
                changed |= history
                    .unregister(key_hash, writer, ts, reception)
                    .is_changed();
            }
            return changed;
        }
        if let Some(f) = self.content_filter.get() {
            // Before anything is stored or counted: a sample the filter drops takes no room
            // and wakes nobody, yet is acknowledged (the caller sees it accepted).
            match f.passes(&d.payload) {
                Ok(true) => {}
                Ok(false) => return false,
                Err(e) => {
                    self.count_undecodable(&e);
                    return false;
                }
            }
        }
        // A loaned sample: take hold of its chunk now, so the writer keeps it until the
        // sample is taken (see `crate::loan`). Only keyless types are loaned.
        let loan = if crate::loan::is_loan_payload(&d.payload) {
            let hold = if self.support.is_keyed() {
                Err(Some(tessera_rtps::cdr::CdrError::UnsupportedEncapsulation(
                    crate::loan::LOAN_ENCAPSULATION,
                )))
            } else {
                crate::loan::ChunkHold::take(&d.payload).map_err(|e| {
                    if matches!(
                        e,
                        crate::loan::LoanError::Refused(crate::transport::shm_pool::Refused::Stale)
                    ) {
                        self.stale_loans.fetch_add(1, Ordering::Relaxed);
                        return None;
                    }
                    Some(crate::loan::ChunkHold::refused(e))
                })
            };
            match hold {
                Ok(h) => Some(h),
                Err(Some(e)) => {
                    self.count_undecodable(&e);
                    return false;
                }
                // Stale: counted as lost by the caller.
                Err(None) => return false,
            }
        } else {
            None
        };
        // The key hash comes from the payload, not from PID_KEY_HASH: a peer's hash is not
        // trusted to name the instance the data belongs to.
        let key_hash = if loan.is_some() {
            [0; 16]
        } else {
            match self.support.key_hash_of_sample(&d.payload) {
                Ok(k) => k,
                Err(e) => {
                    self.count_undecodable(&e);
                    return false;
                }
            }
        };
        let mut expires = None;
        let policies = self.policies_on.load(Ordering::Relaxed);
        if policies {
            match self.policies.lock().admit(key_hash, writer, ts, reception) {
                Admission::Deliver { expires: e } => expires = e,
                Admission::Expired | Admission::NotOwner | Admission::Filtered => return false,
            }
        }
        let s = SerializedSample {
            payload: match (shared, loan) {
                (Some(b), Some(h)) => SerializedPayload::loaned(b.clone(), h),
                (None, Some(h)) => {
                    SerializedPayload::loaned(Arc::new(tessera_rtps::copy::to_vec(&d.payload)), h)
                }
                (Some(b), None) => SerializedPayload::shared(b.clone()),
                (None, None) => self.pool.copy_of(&d.payload),
            },
            key_hash,
            writer,
            source_ts: ts,
            reception_ts: reception,
        };
        // A keep-last reader that overwrites samples gives their buffers back to the pool.
        let mut replaced = None;
        let insert = if in_log_order {
            History::insert_reclaiming_in_order
        } else {
            History::insert_reclaiming
        };
        let out = insert(
            history,
            s.key_hash,
            s.writer,
            s.payload,
            s.source_ts,
            s.reception_ts,
            &mut replaced,
        );
        if let Some(old) = replaced {
            self.pool.recycle(old);
        }
        match out {
            InsertOutcome::Rejected(_) => {
                *rejected += 1;
                false
            }
            InsertOutcome::Outdated(_) => true,
            InsertOutcome::Accepted(h) | InsertOutcome::Replaced(h) => {
                if policies {
                    if let Some(e) = expires {
                        history.set_newest_expiry(h, e);
                    }
                    let due = self
                        .policies
                        .lock()
                        .deadline
                        .renew(key_hash, Instant::now());
                    if due.is_some() || expires.is_some() {
                        // A newly watched instance or an expiring sample: make sure the event
                        // thread comes by then.
                        self.ctx.kick.ensure_by(due.or(Some(Instant::now())));
                    }
                }
                true
            }
        }
    }
}
