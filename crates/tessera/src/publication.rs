//! Publishers and data writers.
//!
//! `DataWriter::write` serializes the sample in the calling thread, hands it to the writer's
//! reliability core under the writer's own lock, and sends the first transmission from the same
//! thread. Retransmissions and heartbeats run on the participant's event thread and on the
//! receive thread (in answer to ACKNACKs).

use crate::condition::{Condition, ConditionKind, Notifier};
use crate::endpoint::{LocalHolder, LocalOutcome, LocalReader, LocalWriter, RemoteEndpoint};
use crate::error::{Error, Result};
use crate::outbox;
use crate::participant::DomainParticipant;
use crate::qos::{DataWriterQos, PublisherQos};
use crate::qos_rt::deadline::DeadlineTimers;
use crate::qos_rt::group::Group;
use crate::runtime::RuntimeContext;
use crate::status::{
    IncompatibleQosStatus, LivelinessLostStatus, OfferedDeadlineMissedStatus,
    PublicationMatchedStatus, StatusMask, WriterStatuses,
};
use crate::TopicType;
use parking_lot::{Condvar, Mutex, RwLock};
use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};
use tessera_rtps::cdr;
use tessera_rtps::qos::LivelinessKind;
use tessera_rtps::types::{EntityId, Guid, Locators, SequenceNumber, Timestamp};
use tessera_rtps::wire::{ReceivedSubmessage, Submessage};
use tessera_rtps::writer::{Refused, WriteError, WriterCore};
use tessera_rtps::Now;

#[cfg_attr(not(feature = "atomic"), path = "publication/atomic_off.rs")]
mod atomic;
mod cdr_chunks;
mod coherent;
mod core_lock;
mod filters;
mod group;
mod instances;
mod loan;
mod local;
mod policies;
mod publisher;
mod time_filter;
mod untyped;
use core_lock::{apply_acknack, CoreGuard, CoreLock};
pub use loan::Loan;
use local::{notify_local, HeldQueues, LocalPeers, LocalSample};
use policies::{budget_ns, lifespan_ns};
pub use publisher::Publisher;
pub use untyped::UntypedDataWriter;

/// A handle naming an instance (derived from its key hash).
pub use crate::history::InstanceHandle;

/// Listener for data-writer statuses; called from a runtime thread, so keep it short.
pub trait DataWriterListener<T: TopicType>: Send + Sync {
    /// A reader matched or unmatched.
    fn on_publication_matched(&self, _writer: &DataWriter<T>, _status: PublicationMatchedStatus) {}
    /// A reader with incompatible QoS was found.
    fn on_offered_incompatible_qos(&self, _writer: &DataWriter<T>, _status: IncompatibleQosStatus) {
    }
    /// An instance was not written within the DEADLINE period.
    fn on_offered_deadline_missed(
        &self,
        _writer: &DataWriter<T>,
        _status: OfferedDeadlineMissedStatus,
    ) {
    }
    /// The writer did not assert its (manual) liveliness within its lease.
    fn on_liveliness_lost(&self, _writer: &DataWriter<T>, _status: LivelinessLostStatus) {}
}

/// One sample an ATOMIC writer proposes (see [`atomic`]).
#[cfg_attr(not(feature = "atomic"), allow(dead_code))]
pub(crate) struct AtomicSample<'a> {
    pub payload: &'a Arc<Vec<u8>>,
    pub key_hash: Option<[u8; 16]>,
    pub status: u32,
    pub key_only: bool,
    pub source_ns: i64,
}

type ErasedWriterListener = Box<dyn Fn(Arc<WriterEndpoint>, StatusMask) + Send + Sync>;

/// The shared state of one data writer.
pub(crate) struct WriterEndpoint {
    me: Weak<WriterEndpoint>,
    guid: Guid,
    /// For the calls from application threads (`write`, `flush`, waits); the receive and
    /// event threads pass theirs.
    ctx: Arc<RuntimeContext>,
    /// The reliability core, behind its lock (see [`core_lock`]).
    core: CoreLock,
    /// Signalled when acknowledgments free history space or complete.
    space: Condvar,
    waiting: AtomicUsize,
    statuses: Mutex<WriterStatuses>,
    notifier: Arc<Notifier>,
    listener: Mutex<Option<Arc<ErasedWriterListener>>>,
    max_blocking: Duration,
    xcdr2: bool,
    /// The QoS the writer was created with: its immutable policies.
    qos: DataWriterQos,
    /// The QoS now (`set_qos` changes the changeable policies).
    current_qos: Mutex<DataWriterQos>,
    /// Write batching: samples accumulate in the core until a datagram is nearly full, an
    /// explicit `flush`, or the batch delay passes ([`BATCH_DELAY`], or LATENCY_BUDGET).
    batching: AtomicBool,
    /// LATENCY_BUDGET in ns (0: none): a writer with a budget batches, and a batch waits up
    /// to the budget for company.
    budget_ns: AtomicU64,
    /// Bytes written since the last flush, and when the first of them was written (ns since
    /// the participant's epoch; 0 = nothing pending). Only changed under the core lock.
    unflushed: AtomicUsize,
    /// Samples in the batch being filled.
    unflushed_samples: AtomicUsize,
    batch_started: AtomicU64,
    /// The last batch filled before its delay: writes do not age the next one (see
    /// `to_history_with`).
    batches_fill: AtomicBool,
    matched: Mutex<Vec<Guid>>,
    /// Remote readers and the largest datagram their path carries: the writer's datagrams
    /// are sized for the smallest (taken under the core lock, after it).
    path_sizes: Mutex<Vec<(Guid, usize)>>,
    /// Matched readers of this participant: `write` hands them each sample directly (a
    /// snapshot, cloned under the core lock without allocating).
    local_readers: RwLock<LocalPeers>,
    /// `local_readers.len()`, set under its write lock: `write` looks at it first.
    local_count: AtomicUsize,
    /// Samples reliable local readers refused, kept for them (see [`local`]); changed only
    /// under the core lock.
    held: Mutex<HeldQueues>,
    /// `held` has a queue: checked without its lock by every `write`.
    holding: AtomicBool,
    /// This writer as local readers call it back when they made room.
    holder: Weak<dyn LocalHolder>,
    /// RELIABILITY is RELIABLE.
    reliable: bool,
    /// A keyless writer wrote or registered its single instance (unregistered at deletion).
    keyless_registered: AtomicBool,
    /// The instances this writer registered or wrote and has not unregistered: key hash →
    /// serialized key, to unregister them when the writer is deleted.
    instances: instances::WrittenInstances,
    /// WRITER_DATA_LIFECYCLE `autodispose_unregistered_instances`.
    autodispose: AtomicBool,
    /// Size of the last serialized sample: the capacity to allocate for the next one.
    size_hint: AtomicUsize,
    /// HISTORY is KEEP_ALL (flow control applies).
    keep_all: bool,
    /// Set for an ATOMIC writer: samples go to its consensus group instead (see [`atomic`]).
    atomic: std::sync::OnceLock<atomic::AtomicWriter>,
    /// ENTITY_FACTORY: the writer was enabled (announced); writes fail before.
    enabled: AtomicBool,
    /// Offered DEADLINE per instance; locked only while `deadline_on`.
    deadline: Mutex<DeadlineTimers>,
    deadline_on: AtomicBool,
    /// LIFESPAN in ns (0: infinite), and the retained samples to drop when theirs runs out
    /// (wall-clock ns, sequence number), in write order; changed under the core lock.
    lifespan_ns: AtomicU64,
    expiring: Mutex<std::collections::VecDeque<(i64, SequenceNumber)>>,
    /// The lease of a MANUAL_BY_PARTICIPANT / MANUAL_BY_TOPIC writer (`None`: AUTOMATIC or
    /// infinite), its last assertion (ns since the participant's epoch) and whether it is
    /// alive.
    lease: Option<Duration>,
    liveliness_kind: LivelinessKind,
    last_assert: AtomicU64,
    alive: AtomicBool,
    /// Matched remote readers' unicast locators: where a liveliness HEARTBEAT goes.
    reader_locators: Mutex<Vec<(Guid, Locators)>>,
    /// Matched remote readers' content filters, evaluated at `write` (see [`filters`]).
    pub(crate) filters: filters::WriterFilters,
    /// Remote readers' TIME_BASED_FILTER, applied before sending.
    time_filters: time_filter::WriterTimeFilters,
    /// The traffic class (IP TOS byte) of this writer's datagrams, from TRANSPORT_PRIORITY.
    tos: AtomicU8,
    /// Matched remote readers without coherent access: a GAP for each end-of-set marker.
    without_coherent_access: Mutex<Vec<Guid>>,
    /// The publisher offers coherent access (PRESENTATION), so this writer may write sets.
    pub(crate) coherent_publisher: AtomicBool,
    /// GROUP access scope: the publisher's shared numbering (see [`group`]).
    group: std::sync::OnceLock<Arc<group::PublisherGroup>>,
    /// The loan pool and which remote readers can resolve loans (see [`loan`]).
    loans: loan::WriterLoans,
}

/// An instance a writer unregisters: its key hash (none for a keyless topic) and serialized key.
type InstanceKey = (Option<[u8; 16]>, Arc<Vec<u8>>);

/// How long a deleted writer waits at most for reliable readers to acknowledge the
/// unregistration of its instances.
const WRITER_LINGER: Duration = Duration::from_secs(1);

/// How long a batched sample may wait for company before it is sent anyway.
const BATCH_DELAY: Duration = Duration::from_micros(500);
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
    /// A condition that is true while any status in `mask` has changed and not been read.
    pub(crate) fn status_condition(self: &Arc<Self>, mask: StatusMask) -> Condition {
        let ep = Arc::downgrade(self);
        Condition::new(ConditionKind::Status, self.notifier.clone(), move || {
            ep.upgrade()
                .map(|e| e.statuses.lock().changes.intersects(mask))
                .unwrap_or(false)
        })
    }

    /// A writer endpoint with `qos`, run by `ctx`; it sends nothing until readers match.
    pub(crate) fn new(ctx: Arc<RuntimeContext>, guid: Guid, qos: &DataWriterQos) -> Arc<Self> {
        let config = outbox::writer_config(guid, qos, ctx.allow_multicast);
        let created = ctx.kick.ns_of(Instant::now());
        // What the history releases (acknowledged, replaced) serves the participant's next
        // writes.
        let released = ctx.write_buffers.clone();
        let recycler: tessera_rtps::writer::Recycler =
            Arc::new(move |bufs| released.give_back_all(bufs));
        Arc::new_cyclic(|me| WriterEndpoint {
            me: me.clone(),
            guid,
            ctx,
            core: CoreLock::new(WriterCore::recycling(config, recycler)),
            space: Condvar::new(),
            waiting: AtomicUsize::new(0),
            statuses: Mutex::new(WriterStatuses::default()),
            notifier: Arc::new(Notifier::default()),
            listener: Mutex::new(None),
            max_blocking: qos.reliability.max_blocking_time,
            xcdr2: outbox::prefers_xcdr2(qos),
            qos: qos.clone(),
            current_qos: Mutex::new(qos.clone()),
            batching: AtomicBool::new(budget_ns(qos) != 0),
            budget_ns: AtomicU64::new(budget_ns(qos)),
            unflushed: AtomicUsize::new(0),
            unflushed_samples: AtomicUsize::new(0),
            batch_started: AtomicU64::new(0),
            batches_fill: AtomicBool::new(false),
            matched: Mutex::new(Vec::new()),
            path_sizes: Mutex::new(Vec::new()),
            local_readers: RwLock::new(Vec::new().into()),
            local_count: AtomicUsize::new(0),
            held: Mutex::new(HeldQueues::default()),
            holding: AtomicBool::new(false),
            holder: me.clone() as Weak<dyn LocalHolder>,
            reliable: qos.reliability.kind == tessera_rtps::qos::ReliabilityKind::Reliable,
            keyless_registered: AtomicBool::new(false),
            instances: instances::WrittenInstances::default(),
            autodispose: AtomicBool::new(
                qos.writer_data_lifecycle.autodispose_unregistered_instances,
            ),
            size_hint: AtomicUsize::new(64),
            keep_all: qos.history == crate::qos::History::KeepAll,
            atomic: std::sync::OnceLock::new(),
            // Endpoints run without a participant are enabled; `create_datawriter` enables
            // through its owner.
            enabled: AtomicBool::new(true),
            deadline: Mutex::new(DeadlineTimers::new(qos.deadline.period)),
            deadline_on: AtomicBool::new(!tessera_rtps::qos::is_infinite(qos.deadline.period)),
            lifespan_ns: AtomicU64::new(lifespan_ns(qos.lifespan.duration)),
            expiring: Mutex::new(Default::default()),
            lease: crate::qos_rt::reader::watched_lease(
                qos.liveliness.kind,
                qos.liveliness.lease_duration,
            ),
            liveliness_kind: qos.liveliness.kind,
            last_assert: AtomicU64::new(created),
            alive: AtomicBool::new(true),
            reader_locators: Mutex::new(Vec::new()),
            filters: Default::default(),
            time_filters: Default::default(),
            tos: AtomicU8::new(crate::transport::tos_of_priority(qos.transport_priority.0)),
            without_coherent_access: Mutex::new(Vec::new()),
            coherent_publisher: AtomicBool::new(false),
            group: std::sync::OnceLock::new(),
            loans: Default::default(),
        })
    }

    /// The traffic class of this writer's datagrams (IP TOS byte; 0: unmarked).
    pub(crate) fn tos(&self) -> u8 {
        self.tos.load(Ordering::Relaxed)
    }

    fn status_changed(&self, mask: StatusMask) {
        self.statuses.lock().changes |= mask;
        self.notifier.notify();
        let l = self.listener.lock().clone();
        if let (Some(l), Some(me)) = (l, self.me.upgrade()) {
            l(me, mask);
        }
    }

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
    fn to_history_with(
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

    /// Records a remote reader's path size (`add`) or forgets one (`remove`), and sizes the
    /// core's datagrams for the smallest path left: large datagrams while every reader is
    /// reached over a path that takes them (loopback), back to an Ethernet frame as soon as
    /// one is not. With no remote reader the size stays as it was.
    fn set_path_size(
        &self,
        core: &mut WriterCore,
        add: Option<(Guid, usize)>,
        remove: Option<Guid>,
    ) {
        let mut sizes = self.path_sizes.lock();
        if let Some(g) = remove {
            sizes.retain(|(r, _)| *r != g);
        }
        if let Some((g, n)) = add {
            match sizes.iter_mut().find(|(r, _)| *r == g) {
                Some(e) => e.1 = n,
                None => sizes.push((g, n)),
            }
        }
        if let Some(min) = sizes.iter().map(|(_, n)| *n).min() {
            if min != core.config().max_message_size {
                core.set_max_message_size(min);
            }
        }
    }

    /// Waits up to 10 ms (and at most until `deadline`), with the core lock released, for
    /// acknowledgments to free history space; returns the time then.
    fn wait_space(&self, core: &mut CoreGuard<'_>, now: Instant, deadline: Instant) -> Instant {
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
    fn flush_batch(&self) {
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
    fn send_all(&self, ctx: &RuntimeContext, core: &mut WriterCore, now: impl Into<Now>) {
        outbox::flush_writer(ctx, core, now, self.tos());
        self.unflushed.store(0, Ordering::Relaxed);
        self.unflushed_samples.store(0, Ordering::Relaxed);
        self.batch_started.store(0, Ordering::Relaxed);
    }

    /// PUBLICATION_MATCHED, resetting its change counts.
    fn take_publication_matched(&self) -> PublicationMatchedStatus {
        let mut s = self.statuses.lock();
        let out = s.publication_matched;
        s.publication_matched.total_count_change = 0;
        s.publication_matched.current_count_change = 0;
        s.changes.0 &= !StatusMask::PUBLICATION_MATCHED.0;
        out
    }

    /// OFFERED_INCOMPATIBLE_QOS, resetting its change count.
    fn take_offered_incompatible_qos(&self) -> IncompatibleQosStatus {
        let mut s = self.statuses.lock();
        let out = s.offered_incompatible_qos.clone();
        s.offered_incompatible_qos.total_count_change = 0;
        s.changes.0 &= !StatusMask::OFFERED_INCOMPATIBLE_QOS.0;
        out
    }

    /// The largest datagram this writer sends now (for tests and diagnostics).
    pub(crate) fn max_message_size(&self) -> usize {
        self.lock_core().max_message_size()
    }

    /// Blocks until every matched reliable reader acknowledged everything written (a local one:
    /// took every sample it refused), or `timeout`.
    fn wait_acked(&self, timeout: Duration) -> Result<()> {
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

    /// Remembers that a keyless writer wrote or registered its single instance (a load, and
    /// a store only the first time).
    fn track_keyless(&self) {
        if !self.keyless_registered.load(Ordering::Relaxed) {
            self.keyless_registered.store(true, Ordering::Relaxed);
        }
    }

    /// The instances to unregister when the writer is deleted (key hash, serialized key),
    /// forgotten here: those it registered or wrote and did not unregister; for a keyless
    /// topic the single instance (no key hash; its key is an empty payload).
    fn take_instances(&self) -> Vec<InstanceKey> {
        let mut out: Vec<_> = self
            .instances
            .take_all()
            .into_iter()
            .map(|(kh, key)| (Some(kh), key))
            .collect();
        if self.keyless_registered.swap(false, Ordering::Relaxed) {
            let encoding = if self.xcdr2 {
                cdr::Encoding::XCDR2_LE
            } else {
                cdr::Encoding::XCDR1_LE
            };
            let mut key = Vec::with_capacity(4);
            let at = cdr::begin_payload(&mut key, encoding);
            cdr::finish_payload(&mut key, at);
            out.push((None, Arc::new(key)));
        }
        out
    }

    /// The status bits of an unregistration: it disposes too when autodispose is on.
    fn unregister_status(&self) -> u32 {
        if self.autodispose.load(Ordering::Relaxed) {
            STATUS_UNREGISTERED | STATUS_DISPOSED
        } else {
            STATUS_UNREGISTERED
        }
    }

    /// The event thread's pass over this writer, under its core lock: protocol timers, the
    /// batch, and the policy timers, whose statuses are added to `raise`.
    fn timeout_locked(
        &self,
        ctx: &RuntimeContext,
        now: Instant,
        raise: &mut StatusMask,
    ) -> Option<Instant> {
        let mut core = self.lock_core();
        let policy_next = if self.deadline_on.load(Ordering::Relaxed)
            || self.lease.is_some()
            || self.lifespan_ns.load(Ordering::Relaxed) != 0
        {
            self.policy_timeout(&mut core, now, raise)
        } else {
            None
        };
        let earliest = |a: Option<Instant>| match (a, policy_next) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let started = self.batch_started.load(Ordering::Relaxed);
        if started != 0 {
            let due = ctx.kick.instant_of(started) + self.batch_delay();
            if now < due {
                // A batch is filling: only run the protocol timers, keep the batch.
                core.handle_timeout(now);
                return earliest(Some(core.poll_timeout().map_or(due, |d| d.min(due))));
            }
        }
        core.handle_timeout(now);
        if started != 0 {
            // The batch did not fill in time: writes age the next one themselves.
            self.batches_fill.store(false, Ordering::Relaxed);
        }
        outbox::flush_writer(ctx, &mut core, now, self.tos());
        core.sent();
        self.unflushed.store(0, Ordering::Relaxed);
        self.unflushed_samples.store(0, Ordering::Relaxed);
        self.batch_started.store(0, Ordering::Relaxed);
        earliest(core.poll_timeout())
    }

    fn wake_waiters(&self) {
        if self.waiting.load(Ordering::Acquire) > 0 {
            self.space.notify_all();
        }
    }
}

impl LocalWriter for WriterEndpoint {
    fn handle(&self, ctx: &RuntimeContext, rs: &ReceivedSubmessage<'_>, now: Instant) {
        let mut core = match &rs.submessage {
            Submessage::AckNack(a) => {
                // Left for the lock's holder if the lock is taken (see `core_lock`).
                let Some(mut core) = self.lock_core_or_leave(rs.source_prefix, a, now) else {
                    return;
                };
                apply_acknack(&mut core, rs.source_prefix, a, now);
                core
            }
            Submessage::NackFrag(n) => {
                let mut core = self.lock_core();
                core.on_nack_frag(rs.source_prefix, n, now);
                core
            }
            _ => return,
        };
        outbox::flush_writer(ctx, &mut core, now, self.tos());
        core.sent();
        let next = core.poll_timeout();
        core.send_and_unlock();
        self.wake_waiters();
        ctx.kick.ensure_by(next);
    }

    fn on_timeout(&self, ctx: &RuntimeContext, now: Instant) -> Option<Instant> {
        let mut raise = StatusMask::NONE;
        let next = self.timeout_locked(ctx, now, &mut raise);
        // Statuses (and their listeners, which may write) only once the core lock is released.
        if raise != StatusMask::NONE {
            self.status_changed(raise);
        }
        next
    }

    fn assert_participant_liveliness(&self) {
        if self.liveliness_kind == LivelinessKind::ManualByParticipant {
            self.assert_locally(Instant::now());
        }
    }

    fn matched(
        &self,
        ctx: &RuntimeContext,
        remote: &RemoteEndpoint,
        local: Option<Arc<dyn LocalReader>>,
        now: Instant,
    ) {
        let rtps = self
            .atomic
            .get()
            .is_none_or(|a| a.reader_matched(remote.guid, remote.consensus.is_some()));
        if !rtps {
            // An ATOMIC reader of an ATOMIC writer: served by its consensus member.
        } else if remote.guid.prefix == self.guid.prefix {
            if let Some(reader) = local {
                self.loans.matched_local(remote.guid, remote.loan_layout);
                if remote.durable {
                    self.loans
                        .serialize_history(&mut self.lock_core(), self.xcdr2);
                }
                self.matched_local(ctx, reader, remote.reliable, remote.durable);
            }
        } else {
            // A reader the writer filters for (content, or time-based) is served alone: a
            // multicast group gets every sample (its members filter for themselves).
            let filtered = self
                .filters
                .set(remote.guid, remote.content_filter.as_ref())
                | self.time_filters.set(remote.guid, remote.min_separation);
            // Under a coherent publisher, a reader without coherent access is served alone
            // too: it gets a GAP for each set's end marker.
            let marker_gap =
                !remote.coherent_access && self.coherent_publisher.load(Ordering::Relaxed);
            let filtered = filtered | marker_gap;
            {
                let mut nc = self.without_coherent_access.lock();
                nc.retain(|g| *g != remote.guid);
                if marker_gap {
                    nc.push(remote.guid);
                }
            }
            self.loans.matched(
                remote.guid,
                &remote.locators,
                remote.loan_layout,
                remote.cdr_chunks,
            );
            let multicast = if filtered {
                Locators::new()
            } else {
                remote.multicast
            };
            let mut core = self.lock_core();
            if remote.durable {
                self.loans.serialize_history(&mut core, self.xcdr2);
            }
            // Also a re-announcement: the core then takes the new unicast locators and
            // regroups the reader by its new multicast ones (`set_reader_multicast`).
            core.add_reader_with_locators(
                remote.guid,
                remote.locators,
                multicast,
                remote.reliable,
                remote.durable,
                now,
            );
            let size = ctx.transport.path_datagram_size(
                remote
                    .locators
                    .as_slice()
                    .iter()
                    .chain(multicast.as_slice()),
                self.reliable,
            );
            self.set_path_size(&mut core, Some((remote.guid, size)), None);
            outbox::flush_writer(ctx, &mut core, now, self.tos());
            drop(core);
            if self.liveliness_kind != LivelinessKind::Automatic {
                let mut rl = self.reader_locators.lock();
                rl.retain(|(g, _)| *g != remote.guid);
                rl.push((remote.guid, remote.locators));
            }
        }
        {
            let mut m = self.matched.lock();
            if m.contains(&remote.guid) {
                // A re-announcement: the core took the new locators; not a new match.
                return;
            }
            m.push(remote.guid);
        }
        {
            let mut s = self.statuses.lock();
            let st = &mut s.publication_matched;
            st.total_count += 1;
            st.total_count_change += 1;
            st.current_count += 1;
            st.current_count_change += 1;
            st.last_subscription_handle = Some(remote.guid);
        }
        self.status_changed(StatusMask::PUBLICATION_MATCHED);
    }

    fn unmatched(&self, remote: Guid) {
        if let Some(a) = self.atomic.get() {
            a.reader_unmatched(remote);
        }
        self.loans.unmatched(remote);
        if remote.prefix == self.guid.prefix {
            let old = self.unmatched_local(remote);
            // The last reference to a deleted reader may go here: not under our lock.
            drop(old);
        } else {
            self.filters.remove(remote);
            self.time_filters.remove(remote);
            self.without_coherent_access.lock().retain(|g| *g != remote);
            let mut core = self.lock_core();
            core.remove_reader(remote);
            self.set_path_size(&mut core, None, Some(remote));
            drop(core);
            self.reader_locators.lock().retain(|(g, _)| *g != remote);
        }
        self.matched.lock().retain(|g| *g != remote);
        self.wake_waiters();
        {
            let mut s = self.statuses.lock();
            let st = &mut s.publication_matched;
            st.current_count -= 1;
            st.current_count_change -= 1;
            st.last_subscription_handle = Some(remote);
        }
        self.status_changed(StatusMask::PUBLICATION_MATCHED);
    }

    fn incompatible(&self, policies: &[u32]) {
        self.statuses
            .lock()
            .offered_incompatible_qos
            .record(policies);
        self.status_changed(StatusMask::OFFERED_INCOMPATIBLE_QOS);
    }
}

/// Removes the writer from its participant when the last handle goes.
struct WriterOwner {
    ep: Arc<WriterEndpoint>,
    participant: DomainParticipant,
    entity_id: EntityId,
    /// What the writer is announced with, for re-announcements (`set_qos`).
    topic_name: String,
    type_name: String,
    topic_qos: crate::qos::TopicQos,
    publisher: Arc<Group<PublisherQos, WriterOwner>>,
    /// An ATOMIC writer's consensus address, announced with it (see [`atomic`]).
    consensus: Option<tessera_rtps::types::Locator>,
}

impl Drop for WriterOwner {
    fn drop(&mut self) {
        if !self.ep.enabled.load(Ordering::Acquire) {
            return; // never announced
        }
        // DDS: deleting a writer unregisters every instance it still has (and so, with
        // autodispose, disposes them), before the writer itself goes away.
        let instances = self.ep.take_instances();
        let status = self.ep.unregister_status();
        let unregistered = !instances.is_empty();
        for (key_hash, key) in instances {
            if let Err(e) = self.ep.submit(key, key_hash, status, true, now_nanos()) {
                tracing::debug!(error = %e, "unregister on writer deletion failed");
            }
        }
        // An ATOMIC writer's pipelined samples (and those unregistrations) commit before it
        // goes, within the linger: its committer thread fails what is left once it is gone.
        if let Some(a) = self.ep.atomic.get() {
            if !a.drain_keeping_failure(WRITER_LINGER) {
                tracing::warn!(writer = %self.ep.guid, "ATOMIC writer deleted with samples not yet committed");
            }
        }
        if let Some(g) = self.ep.group.get() {
            g.leaving(&self.ep);
        }
        // Linger (as Cyclone's writer does) until reliable readers have the unregistrations:
        // the SEDP dispose that follows travels on another socket and could overtake them,
        // leaving the instances NOT_ALIVE_NO_WRITERS instead of disposed. Not on a receive
        // thread, where the acknowledgments would arrive. Likewise for references to chunks
        // (`cdr_chunks`): a reader that has not opened the pool yet could not once the
        // writer's pools are unlinked.
        let references = self.ep.loans.cdr.has_pools();
        if (unregistered || references) && !crate::transport::recv::on_receive_thread() {
            let _ = self.ep.wait_acked(WRITER_LINGER);
        }
        let p = self.participant.shared();
        // Dropped after the lock is released (see `ReaderOwner::drop`).
        let removed = p.endpoints.write().writers.remove(&self.entity_id);
        drop(removed);
        // The endpoint may outlive this for a moment (an event pass or a receive thread
        // holds it); its segment files must not.
        self.ep.loans.unlink_pools();
        let now = Instant::now();
        let actions = p.discovery.lock().remove_local_endpoint(
            p,
            Guid::new(p.guid_prefix, self.entity_id),
            now,
        );
        p.apply_discovery_events(actions, now);
    }
}

/// A typed data writer. Cheap to clone; the writer is deleted when the last clone is dropped.
pub struct DataWriter<T: TopicType> {
    ep: Arc<WriterEndpoint>,
    owner: Option<Arc<WriterOwner>>,
    _type: PhantomData<fn(&T)>,
}

impl<T: TopicType> Clone for DataWriter<T> {
    fn clone(&self) -> Self {
        DataWriter {
            ep: self.ep.clone(),
            owner: self.owner.clone(),
            _type: PhantomData,
        }
    }
}

impl<T: TopicType> std::fmt::Debug for DataWriter<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DataWriter")
            .field("guid", &self.ep.guid)
            .finish()
    }
}

/// Status-info bits of a DATA (RTPS PID_STATUS_INFO).
const STATUS_DISPOSED: u32 = 1;
const STATUS_UNREGISTERED: u32 = 2;

impl<T: TopicType> DataWriter<T> {
    /// A handle on `ep` that does not own it (listener calls, endpoints run by a context
    /// built without a participant).
    pub(crate) fn from_endpoint(ep: Arc<WriterEndpoint>) -> Self {
        DataWriter {
            ep,
            owner: None,
            _type: PhantomData,
        }
    }

    /// The writer's GUID.
    pub fn guid(&self) -> Guid {
        self.ep.guid
    }

    /// Publishes a sample stamped with the current time.
    pub fn write(&self, sample: &T) -> Result<()> {
        self.write_with_timestamp(sample, now_nanos())
    }

    /// Publishes a sample with an explicit source timestamp (ns since the Unix epoch).
    pub fn write_with_timestamp(&self, sample: &T, source_ns: i64) -> Result<()> {
        // Serialized straight into the buffer the writer history keeps: no second copy.
        let hint = self.ep.size_hint.load(Ordering::Relaxed);
        let (payload, key_hash) = self.ep.ctx.write_buffers.filled(hint, |buf| {
            let key_hash = if T::KEYED {
                // Read back from the bytes just written where the key lies at fixed offsets.
                Some(cdr::serialize_sample_keyed(sample, self.encoding(), buf))
            } else {
                cdr::serialize_sample(sample, self.encoding(), buf);
                None
            };
            self.ep.size_hint.store(buf.len(), Ordering::Relaxed);
            key_hash
        });
        match key_hash {
            Some(kh) => self.track_instance(kh, sample),
            None => self.ep.track_keyless(),
        }
        let filtered_out = self.ep.filters.dropping(sample);
        self.ep
            .submit_with(payload, key_hash, 0, false, source_ns, filtered_out, None)
            .map(drop)
    }

    /// Remembers an instance this writer registered or wrote (one hash lookup when known).
    fn track_instance(&self, key_hash: [u8; 16], sample: &T) {
        self.ep.instances.note(key_hash, || {
            let mut key = Vec::new();
            cdr::serialize_key(sample, self.encoding(), &mut key);
            Arc::new(key)
        });
    }

    /// Disposes the instance of `sample`'s key.
    pub fn dispose(&self, sample: &T) -> Result<()> {
        self.write_key_only(sample, STATUS_DISPOSED)
    }

    /// Unregisters the instance of `sample`'s key; with WRITER_DATA_LIFECYCLE
    /// `autodispose_unregistered_instances` (the default) this disposes it too.
    pub fn unregister_instance(&self, sample: &T) -> Result<()> {
        self.write_key_only(sample, self.ep.unregister_status())?;
        if T::KEYED {
            self.ep.instances.remove(&cdr::key_hash(sample));
        }
        Ok(())
    }

    /// Registers the instance of `sample`'s key and returns its handle (no data is sent).
    pub fn register_instance(&self, sample: &T) -> Result<InstanceHandle> {
        let kh = if T::KEYED {
            let kh = cdr::key_hash(sample);
            self.track_instance(kh, sample);
            kh
        } else {
            self.ep.track_keyless();
            [0; 16]
        };
        Ok(instance_handle(&kh))
    }

    fn write_key_only(&self, sample: &T, status: u32) -> Result<()> {
        if !T::KEYED {
            return Err(Error::PreconditionNotMet(
                "dispose/unregister on a keyless topic".into(),
            ));
        }
        let mut buf = Vec::new();
        cdr::serialize_key(sample, self.encoding(), &mut buf);
        let payload = Arc::new(buf);
        self.ep.submit(
            payload,
            Some(cdr::key_hash(sample)),
            status,
            true,
            now_nanos(),
        )
    }

    fn encoding(&self) -> cdr::Encoding {
        if self.ep.xcdr2 {
            cdr::Encoding::XCDR2_LE
        } else {
            cdr::Encoding::XCDR1_LE
        }
    }

    /// Turns write batching on or off. With batching, several samples share a datagram: a
    /// batch is sent when it nearly fills a datagram, on [`DataWriter::flush`], by the first
    /// write more than 0.5 ms after the batch began, or else by the participant's event thread
    /// (within its timer period, at most 100 ms; 0.5 ms while batches fill, when writes do not
    /// read the clock). Call `flush` when a sample must go now.
    /// Off by default (lowest latency). A writer with a LATENCY_BUDGET batches from the start,
    /// and its batches wait up to the budget (at most 1 s), sent by the event thread when it
    /// runs out.
    pub fn set_batching(&self, on: bool) {
        self.ep.batching.store(on, Ordering::Relaxed);
        if !on {
            self.flush();
        }
    }

    /// Sends every batched sample now.
    pub fn flush(&self) {
        self.ep.flush_batch();
    }

    /// Samples (or runs of fragments of one sample) this writer has sent again because a
    /// reliable reader asked for them (ACKNACK or NACK_FRAG), since it was created.
    pub fn retransmitted_samples(&self) -> u64 {
        self.ep.lock_core().counters().retransmits
    }

    /// The RTPS protocol counters of this writer: data and fragments sent, retransmissions,
    /// ACKNACKs received and ignored, repairs held off, datagram-size reductions under loss.
    pub fn protocol_counters(&self) -> tessera_rtps::writer::WriterCounters {
        self.ep.lock_core().counters()
    }

    /// GUIDs of the readers currently matched.
    pub fn matched_subscriptions(&self) -> Vec<Guid> {
        self.ep.matched.lock().clone()
    }

    /// The participant, unless this is a listener's handle (see [`crate::builtin`]).
    pub(crate) fn owning_participant(&self) -> Option<&DomainParticipant> {
        self.owner.as_ref().map(|o| &o.participant)
    }

    /// The handle of the instance of `sample`'s key, if this writer registered or wrote it
    /// (and has not unregistered it).
    pub fn lookup_instance(&self, sample: &T) -> Option<InstanceHandle> {
        let kh = if T::KEYED {
            cdr::key_hash(sample)
        } else {
            [0; 16]
        };
        let known = self.ep.instances.contains(&kh);
        known.then(|| instance_handle(&kh))
    }

    /// The largest datagram (RTPS header included) this writer sends now: the transport's
    /// largest datagram on the smallest path to a matched remote reader (loopback: 65,507; an
    /// Ethernet interface: 14,720, IP-fragmented). Larger samples go as DATA_FRAGs; repairs
    /// never exceed it.
    pub fn max_message_size(&self) -> usize {
        self.ep.max_message_size()
    }

    /// Blocks until every matched reliable reader acknowledged every sample written so far.
    pub fn wait_for_acknowledgments(&self, timeout: Duration) -> Result<()> {
        self.ep.wait_acked(timeout)
    }

    /// PUBLICATION_MATCHED; reading it resets the change counts.
    pub fn publication_matched_status(&self) -> PublicationMatchedStatus {
        self.ep.take_publication_matched()
    }

    /// OFFERED_INCOMPATIBLE_QOS; reading it resets the change count.
    pub fn offered_incompatible_qos_status(&self) -> IncompatibleQosStatus {
        self.ep.take_offered_incompatible_qos()
    }

    /// A condition that is true while any status in `mask` has changed and not been read.
    pub fn status_condition(&self, mask: StatusMask) -> Condition {
        self.ep.status_condition(mask)
    }

    /// Installs (or with `None` removes) a listener.
    pub fn set_listener(&self, listener: Option<Arc<dyn DataWriterListener<T>>>) {
        let erased: Option<Arc<ErasedWriterListener>> = listener.map(|l| {
            let f: ErasedWriterListener =
                Box::new(move |ep: Arc<WriterEndpoint>, mask: StatusMask| {
                    let w = DataWriter::<T>::from_endpoint(ep);
                    if mask.intersects(StatusMask::PUBLICATION_MATCHED) {
                        l.on_publication_matched(&w, w.publication_matched_status());
                    }
                    if mask.intersects(StatusMask::OFFERED_INCOMPATIBLE_QOS) {
                        l.on_offered_incompatible_qos(&w, w.offered_incompatible_qos_status());
                    }
                    if mask.intersects(StatusMask::OFFERED_DEADLINE_MISSED) {
                        l.on_offered_deadline_missed(&w, w.offered_deadline_missed_status());
                    }
                    if mask.intersects(StatusMask::LIVELINESS_LOST) {
                        l.on_liveliness_lost(&w, w.liveliness_lost_status());
                    }
                });
            Arc::new(f)
        });
        *self.ep.listener.lock() = erased;
    }
}

/// The handle a writer gives the instance of `key_hash` (as `register_instance` returns it).
fn instance_handle(key_hash: &[u8; 16]) -> InstanceHandle {
    let mut raw = [0u8; 8];
    raw.copy_from_slice(&key_hash[..8]);
    InstanceHandle::from_raw(u64::from_be_bytes(raw) | 1)
}

/// Nanoseconds since the Unix epoch, made even: ddsperf treats an odd timestamp as a ping.
pub(crate) fn now_nanos() -> i64 {
    let ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0);
    ns & !1
}

/// `now + d`, saturating at a year for "infinite" durations.
pub(crate) fn far_deadline(now: Instant, d: Duration) -> Instant {
    now.checked_add(d.min(Duration::from_secs(365 * 86_400)))
        .unwrap_or(now)
}

/// Bytes a reliable writer may have in flight (written, not yet acknowledged by every reliable
/// reader) before `write` waits. Without such a bound an unpaced writer overruns the receiver's
/// socket buffer and then spends its time repairing what the kernel dropped.
const FLOW_WINDOW_BYTES: usize = 4 << 20;

/// The flow-control window in samples for samples of `size` bytes.
pub(crate) fn flow_window(size: usize) -> usize {
    (FLOW_WINDOW_BYTES / size.max(1)).clamp(16, 8192)
}
