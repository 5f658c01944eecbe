//! The write path: [`WriterEndpoint::submit_with`] takes a serialized sample into the
//! writer's history (waiting for room as KEEP_ALL does), hands it to local readers and sends
//! it, at once or batched; and what sends a batch or waits for acknowledgments.

use super::core_lock::CoreGuard;
use super::local::{notify_local, LocalSample};
use super::{cdr_chunks, far_deadline, flow_window, AtomicSample, WriterEndpoint};
use super::{STATUS_DISPOSED, STATUS_UNREGISTERED};
use crate::endpoint::LocalOutcome;
use crate::error::{Error, Result};
use crate::outbox;
use crate::runtime::RuntimeContext;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tessera_rtps::types::{Guid, SequenceNumber, Timestamp};
use tessera_rtps::writer::{Refused, WriteError, WriterCore};
use tessera_rtps::Now;

/// How long a batched sample may wait for company before it is sent anyway.
pub(super) const BATCH_DELAY: Duration = Duration::from_micros(500);
/// Leave this much of the path's largest datagram for RTPS headers and submessage framing
/// when deciding that a batch is full.
const BATCH_HEADROOM: usize = 2048;
/// A batch is full at no less than this many payload bytes, whatever the path.
const MIN_BATCH_BYTES: usize = 1024;
/// Most samples one batch carries. Acknowledgments release history (and flow-control credit)
/// a datagram at a time: with 64 KiB datagrams a batch of 64-byte samples held ~900 of them,
/// and a 1-to-N writer across hosts stalled on acknowledgments at half its rate with
/// 14,720 B ones (~150 per datagram).
const MAX_BATCH_SAMPLES: usize = 128;

impl WriterEndpoint {
    /// Writes one sample (or, with `key_only`, a dispose/unregister) and sends it.
    pub(crate) fn submit(
        &self,
        payload: Arc<Vec<u8>>,
        key_hash: Option<[u8; 16]>,
        status: u32,
        key_only: bool,
        source_ns: i64,
    ) -> Result<()> {
        self.submit_with(payload, key_hash, status, key_only, source_ns, None, None)
            .map(drop)
    }

    /// `filtered_out` plus the remote readers whose TIME_BASED_FILTER drops this sample (a
    /// dispose or unregister goes to all, and the instance's next sample too).
    fn time_filtered(
        &self,
        filtered_out: Option<Arc<[Guid]>>,
        key_hash: Option<[u8; 16]>,
        status: u32,
        key_only: bool,
        source_ns: i64,
    ) -> Option<Arc<[Guid]>> {
        if status != 0 || key_only {
            if let Some(k) = key_hash {
                self.time_filters.forget(k);
            }
            return filtered_out;
        }
        let mut readers = Vec::new();
        self.time_filters
            .dropping(key_hash, source_ns, &mut readers);
        if readers.is_empty() {
            return filtered_out;
        }
        for g in filtered_out.iter().flat_map(|f| f.iter()) {
            if !readers.contains(g) {
                readers.push(*g);
            }
        }
        Some(readers.into())
    }

    /// [`Self::submit`] with what only some writes have: the remote readers whose content
    /// filters drop the sample (`filtered_out`: they get a GAP or nothing for it), and the
    /// original writer and sequence number a durability service's replay stands for
    /// (`origin`, sent with PID_ORIGINAL_WRITER_INFO). Returns the sample's sequence number
    /// (`None`: a write of a coherent set, numbered when the set ends).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn submit_with(
        &self,
        payload: Arc<Vec<u8>>,
        key_hash: Option<[u8; 16]>,
        status: u32,
        key_only: bool,
        source_ns: i64,
        filtered_out: Option<Arc<[Guid]>>,
        origin: Option<(Guid, tessera_rtps::types::SequenceNumber)>,
    ) -> Result<Option<SequenceNumber>> {
        if self.ctx.is_closed() {
            return Err(Error::AlreadyDeleted);
        }
        if !self.enabled.load(Ordering::Relaxed) {
            return Err(Error::NotEnabled);
        }
        // ATOMIC: commit first; then, for EVENTUAL readers only, on through the history
        // (in commit order: the writer stays busy to the end).
        let _busy = match self.atomic.get() {
            Some(a) => {
                let sample = AtomicSample {
                    payload: &payload,
                    key_hash,
                    status,
                    key_only,
                    source_ns,
                };
                match a.write(self, sample)? {
                    Some(busy) => Some(busy),
                    None => return Ok(None),
                }
            }
            None => None,
        };
        // A large sample for readers on this host: into a shared-memory chunk, a reference
        // sent instead (not for ATOMIC writers: their samples went through consensus above).
        let chunked = if _busy.is_none() {
            self.loans.cdr.to_chunk(self, &payload)
        } else {
            None
        };
        let Some(chunked) = chunked else {
            return self.to_history_with(
                payload,
                (key_hash, status, key_only, source_ns),
                filtered_out,
                origin,
            );
        };
        drop(payload);
        let seq = self.to_history_with(
            chunked.reference.clone(),
            (key_hash, status, key_only, source_ns),
            filtered_out,
            origin,
        );
        chunked.submitted(seq.as_ref().ok().copied().flatten());
        seq
    }

    /// The RTPS side of [`Self::submit_with`]: the sample into the history (waiting for room
    /// as KEEP_ALL does), to local readers, and out, batched or not.
    pub(super) fn to_history_with(
        &self,
        payload: Arc<Vec<u8>>,
        (key_hash, status, key_only, source_ns): (Option<[u8; 16]>, u32, bool, i64),
        filtered_out: Option<Arc<[Guid]>>,
        origin: Option<(Guid, tessera_rtps::types::SequenceNumber)>,
    ) -> Result<Option<SequenceNumber>> {
        let filtered_out = self.time_filtered(filtered_out, key_hash, status, key_only, source_ns);
        let p = &*self.ctx;
        let ts = Timestamp::from_nanos(source_ns);
        // Read from the clock only if something below needs the time: a KEEP_ALL stream with
        // room, no deadline, lease, lifespan or batching, does not.
        let mut now = Now::lazy(Instant::now);
        let mut deadline = None;
        let mut core = self.lock_core();
        let payload = self.loans.for_readers(payload, self.xcdr2);
        // A write from a listener runs on a receive thread, which must never wait: the
        // acknowledgments it would wait for arrive on that same thread.
        let may_wait = !crate::transport::recv::on_receive_thread();
        if self.keep_all && may_wait {
            // Only KEEP_ALL writers wait for acknowledgments; a KEEP_LAST writer replaces old
            // samples instead and never blocks on a slow or silent reader.
            // A reference to a chunk stands for the sample it names (see `cdr_chunks`).
            let window = match cdr_chunks::referenced_len(&payload) {
                Some(len) => cdr_chunks::flow_window(len),
                None => flow_window(payload.len()),
            };
            core.set_flow_window(window);
        }
        let len = payload.len();
        // Local readers share the payload: a reference is kept only when there are some.
        // Otherwise the payload moves into the history, and a refusal for room hands it back
        // for the next try (no reference-count round trip per write).
        let mut for_locals =
            (self.local_count.load(Ordering::Acquire) != 0).then(|| payload.clone());
        let mut sample = payload;
        let seq = loop {
            // A local reader that refused samples gets them again when it makes room; a
            // KEEP_ALL writer waits while what it keeps for one is at its bound (one atomic
            // load when nothing is kept).
            let full = if self.keep_all && self.local_hold_full(len) {
                "a local reader's queue of refused samples is full"
            } else {
                match core.try_write_relayed(
                    sample,
                    key_hash,
                    status,
                    key_only,
                    Some(ts),
                    origin,
                    &now,
                ) {
                    Ok(seq) => {
                        // Inside a coherent set a GAP would be a hole that makes the
                        // reader drop the whole set: such samples go to every reader,
                        // whose own filter drops them (see `crate::presentation`).
                        if let Some(readers) =
                            filtered_out.filter(|_| core.coherent_set().is_none())
                        {
                            core.filter_out(seq, readers);
                        }
                        break seq;
                    }
                    Err(Refused {
                        error: WriteError::HistoryFull,
                        payload: Some(back),
                    }) => {
                        sample = back;
                        "history full"
                    }
                    Err(refused) => return Err(Error::OutOfResources(refused.error.to_string())),
                }
            };
            if !may_wait {
                return Err(Error::OutOfResources(format!(
                    "{full}; a write from a listener does not wait"
                )));
            }
            let by = *deadline.get_or_insert_with(|| far_deadline(now.get(), self.max_blocking));
            if now.get() >= by {
                return Err(Error::Timeout);
            }
            now = self.wait_space(&mut core, now.get(), by).into();
        };
        let life = self.lifespan_ns.load(Ordering::Relaxed);
        if life != 0 {
            let exp = source_ns.saturating_add(life as i64);
            let mut q = self.expiring.lock();
            // Samples the history no longer holds (replaced, acknowledged and dropped) leave
            // the queue too: it never outgrows the history's span of sequence numbers.
            let first = core.store().first_seq();
            while q
                .front()
                .is_some_and(|&(_, s)| s != seq && first.is_none_or(|f| s < f))
            {
                q.pop_front();
            }
            if q.is_empty() {
                p.kick
                    .ensure_by(Some(now.get() + Duration::from_nanos(life)));
            }
            q.push_back((exp, seq));
        }
        if self.deadline_on.load(Ordering::Relaxed) {
            let key = key_hash.unwrap_or([0; 16]);
            let mut d = self.deadline.lock();
            if status & STATUS_UNREGISTERED != 0 || status & STATUS_DISPOSED != 0 {
                d.remove(&key);
            } else if let Some(due) = d.renew(key, now.get()) {
                p.kick.ensure_by(Some(due));
            }
        }
        if self.lease.is_some() {
            self.asserted(now.get());
        }
        // Local readers have the sample when `write` returns; their statuses are raised once
        // the core lock is released. Nothing is allocated when there are none.
        // Without local readers (the common case) no lock or reference count is touched: each
        // such atomic operation costs a write of 16 B ~3 % of its time.
        let locals = if self.local_count.load(Ordering::Acquire) == 0 {
            None
        } else {
            Some(self.local_readers.read().clone())
        };
        let locals = locals.as_deref().unwrap_or_default();
        let mut outcomes = Vec::new();
        if !locals.is_empty() && for_locals.is_none() {
            // A local reader matched during this write: it shares the stored sample (which a
            // TRANSIENT_LOCAL history always keeps; a volatile one may miss it, as it would
            // had it matched a moment later).
            for_locals = core.store().get(seq).map(|s| s.payload.clone());
        }
        if let Some(payload) = for_locals.as_ref().filter(|_| !locals.is_empty()) {
            outcomes.resize(locals.len(), LocalOutcome::default());
            self.deliver_local(
                locals,
                &mut outcomes,
                LocalSample {
                    seq,
                    payload,
                    shared: Some(payload),
                    key_hash,
                    status,
                    key_only,
                    timestamp: Some(ts),
                    coherent_set: core.coherent_set(),
                    group: core.last_group_tag(),
                },
            );
        }
        if self.batching.load(Ordering::Relaxed) {
            // Changed only under the core lock (here, `send_all`, the event thread's pass):
            // a load and a store, not a locked read-modify-write.
            let pending = self.unflushed.load(Ordering::Relaxed) + len;
            self.unflushed.store(pending, Ordering::Relaxed);
            let pending_samples = self.unflushed_samples.load(Ordering::Relaxed) + 1;
            self.unflushed_samples
                .store(pending_samples, Ordering::Relaxed);
            // A batch fills one datagram of the path (MTU-sized: 64 KiB on loopback), so a
            // multicast fan-out wakes each reader once per full datagram.
            let room = core
                .max_message_size()
                .saturating_sub(BATCH_HEADROOM)
                .max(MIN_BATCH_BYTES);
            let full = pending >= room || pending_samples >= MAX_BATCH_SAMPLES;
            // A batch that does not fill goes out with the first write after its delay, or on
            // the event thread's next pass. While batches fill in time, writes do not read the
            // clock to age them (a clock read costs as much as the rest of a small write on a
            // VM): the event thread is armed instead, and sends a batch that stops filling.
            let filling = self.batches_fill.load(Ordering::Relaxed);
            let started = self.batch_started.load(Ordering::Relaxed);
            let delay = self.batch_delay();
            let stale = !filling && started != 0 && now.get() >= p.kick.instant_of(started) + delay;
            if full && !filling {
                self.batches_fill.store(true, Ordering::Relaxed);
            }
            if !full && !stale {
                if started == 0 {
                    self.batch_started
                        .store(p.kick.ns_of(now.get()).max(1), Ordering::Relaxed);
                    // A latency budget is a promise: the event thread sends the batch when it
                    // runs out. Arming it costs a wake-up at most once per delay (`ensure_by`
                    // only brings the wake-up forward), not one per batch.
                    if filling || self.budget_ns.load(Ordering::Relaxed) != 0 {
                        p.kick.ensure_by(Some(now.get() + delay));
                    }
                }
                drop(core);
                notify_local(p, locals, &outcomes);
                return Ok(Some(seq));
            }
        }
        self.send_all(p, &mut core, &now);
        core.sent();
        let next = core.poll_timeout();
        core.send_and_unlock();
        p.kick.ensure_by(next);
        notify_local(p, locals, &outcomes);
        if self.lease.is_some() {
            for l in locals.iter() {
                l.reader.writer_asserted(self.guid, now.get());
            }
        }
        // Backpressure, with the lock released: wait for slow destinations (see outbox).
        outbox::wait_sent(p, || {
            deadline.unwrap_or_else(|| far_deadline(now.get(), self.max_blocking))
        });
        Ok(Some(seq))
    }

    /// Waits up to 10 ms (and at most until `deadline`), with the core lock released, for
    /// acknowledgments to free history space; returns the time then.
    pub(super) fn wait_space(
        &self,
        core: &mut CoreGuard<'_>,
        now: Instant,
        deadline: Instant,
    ) -> Instant {
        // Let the event thread resend heartbeats so readers ack promptly.
        self.ctx.kick.ensure_by(Some(now));
        core.wait_until(deadline.min(now + Duration::from_millis(10)));
        Instant::now()
    }

    /// A batch is filling and, since batches fill in time, the event thread is armed to send
    /// it when it is due.
    pub(crate) fn batch_open_and_armed(&self) -> bool {
        self.batches_fill.load(Ordering::SeqCst) && self.batch_started.load(Ordering::SeqCst) != 0
    }

    /// Sends every batched sample now.
    pub(super) fn flush_batch(&self) {
        // An ATOMIC writer's pipelined samples reach the history once committed. A failure
        // stays for the next write or wait_for_acknowledgments to report.
        if let Some(a) = self.atomic.get() {
            let _ = a.drain_keeping_failure(a.timeout());
        }
        // Read only if a heartbeat, a round-trip probe or a repair needs it.
        let now = Now::lazy(Instant::now);
        let mut core = self.lock_core();
        self.send_all(&self.ctx, &mut core, now);
    }

    /// Sends what the core holds (under its lock) and starts a new batch.
    pub(super) fn send_all(
        &self,
        ctx: &RuntimeContext,
        core: &mut WriterCore,
        now: impl Into<Now>,
    ) {
        outbox::flush_writer(ctx, core, now, self.tos());
        self.unflushed.store(0, Ordering::Relaxed);
        self.unflushed_samples.store(0, Ordering::Relaxed);
        self.batch_started.store(0, Ordering::Relaxed);
    }

    /// Blocks until every matched reliable reader acknowledged everything written (a local one:
    /// took every sample it refused), or `timeout`.
    pub(super) fn wait_acked(&self, timeout: Duration) -> Result<()> {
        let deadline = far_deadline(Instant::now(), timeout);
        if let Some(a) = self.atomic.get() {
            // Committed first: pipelined samples are acknowledged by their commit.
            a.drain(deadline.saturating_duration_since(Instant::now()))?;
        }
        let mut core = self.lock_core();
        let all_acked =
            |core: &WriterCore| core.all_acked() && !self.holding.load(Ordering::Relaxed);
        while !all_acked(&core) {
            self.ctx.kick.ensure_by(Some(Instant::now()));
            core.wait_until(deadline.min(Instant::now() + Duration::from_millis(20)));
            if Instant::now() >= deadline && !all_acked(&core) {
                return Err(Error::Timeout);
            }
        }
        Ok(())
    }
}
