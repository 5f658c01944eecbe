//! Publishers and data writers.
//!
//! `DataWriter::write` serializes the sample in the calling thread, hands it to the writer's
//! reliability core under the writer's own lock, and sends the first transmission from the same
//! thread. Retransmissions and heartbeats run on the participant's event thread and on the
//! receive thread (in answer to ACKNACKs).

use crate::condition::Notifier;
use crate::endpoint::LocalHolder;
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
use tessera_rtps::qos::LivelinessKind;
use tessera_rtps::types::{EntityId, Guid, Locators, SequenceNumber};
use tessera_rtps::writer::WriterCore;

#[cfg_attr(not(feature = "atomic"), path = "publication/atomic_off.rs")]
mod atomic;
mod cdr_chunks;
mod coherent;
mod core_lock;
mod data_writer;
mod deletion;
mod filters;
mod group;
mod instances;
mod loan;
mod local;
mod matching;
mod policies;
mod publisher;
mod time_filter;
mod untyped;
mod write_path;
use core_lock::CoreLock;
pub use loan::Loan;
use local::{HeldQueues, LocalPeers};
use policies::{budget_ns, lifespan_ns};
pub use publisher::Publisher;
pub use untyped::UntypedDataWriter;
use write_path::BATCH_DELAY;

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

impl WriterEndpoint {
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

/// A typed data writer. Cheap to clone; the writer is deleted when the last clone is dropped.
pub struct DataWriter<T: TopicType> {
    ep: Arc<WriterEndpoint>,
    owner: Option<Arc<WriterOwner>>,
    _type: PhantomData<fn(&T)>,
}

/// Status-info bits of a DATA (RTPS PID_STATUS_INFO).
const STATUS_DISPOSED: u32 = 1;
const STATUS_UNREGISTERED: u32 = 2;

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
