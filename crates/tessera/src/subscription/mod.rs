//! Subscribers and data readers.
//!
//! Samples are delivered on the receive thread: the reader's reliability core puts them in order,
//! the payload is copied out of the receive buffer (into a recycled buffer) with its key hash and
//! inserted, still serialized, into the history cache under the history's own lock, and waiting
//! threads (wait sets, listeners) are woken right there. The reader endpoint does not know the
//! sample type beyond its [`TypeSupport`]: `DataReader<T>` decodes at `read`/`take` time, in the
//! application's thread (see [`crate::reader`]).

mod accept;
#[cfg_attr(not(feature = "atomic"), path = "atomic_off.rs")]
mod atomic;
mod durable;
mod flow;
mod group_coherent;
mod listener;
mod local;
mod policies;
mod scope;
mod statuses;
mod subscriber;
pub use durable::{ReceivedSample, SampleSink, SinkVerdict};
pub(crate) use group_coherent::GroupAssembler;
pub use group_coherent::ReaderRun;
pub use listener::DataReaderListener;
pub(crate) use listener::{EndpointListener, MaskListener, TypedListener};
use policies::expire_due;
#[cfg(feature = "atomic")]
pub(crate) use scope::CommittedDelivery;
pub(crate) use scope::DatagramScope;
use scope::{ReceptionClock, NOT_IN_DATAGRAM};
pub(crate) use subscriber::ReaderOwner;
pub use subscriber::Subscriber;

use crate::condition::Notifier;
use crate::content_filter::ReaderFilter;
use crate::endpoint::{LocalHolder, LocalOutcome, LocalReader, RemoteEndpoint};
use crate::history::{History, Sample};
use crate::outbox;
use crate::presentation::CoherentSets;
use crate::qos::DataReaderQos;
use crate::qos_rt::reader::{finite_ns, watched_lease, ReaderPolicies, WriterTerms};
use crate::runtime::RuntimeContext;
use crate::sample::{PayloadPool, SerializedPayload, TypeSupport};
use crate::status::{ReaderStatuses, StatusMask};
use parking_lot::Mutex;
use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::time::Instant;
use tessera_rtps::qos::{Consistency, ReliabilityKind};
use tessera_rtps::reader::{Delivered, ReaderConfig, ReaderCore, Verdict};
use tessera_rtps::types::Guid;
use tessera_rtps::wire::{ReceivedSubmessage, Submessage};

/// The shared state of one data reader; it knows its type only through `support`.
pub(crate) struct ReaderEndpoint {
    pub(crate) me: Weak<ReaderEndpoint>,
    pub(crate) guid: Guid,
    support: Arc<dyn TypeSupport>,
    pub(crate) core: Mutex<ReaderCore>,
    pub(crate) history: Mutex<History<SerializedPayload>>,
    /// Payload buffers given back by `take`, reused by the receive path.
    pub(crate) pool: PayloadPool,
    /// Samples dropped at `read`/`take` because they did not decode.
    pub(crate) undecodable: AtomicU64,
    /// Loan references whose chunk the writer had reused before this reader held it (a
    /// best-effort reader behind a fast writer): lost samples, reported as SAMPLE_LOST.
    stale_loans: AtomicU64,
    /// Reused by `take_into` for the serialized samples it decodes.
    pub(crate) scratch: Mutex<Vec<Sample<SerializedPayload>>>,
    pub(crate) statuses: Mutex<ReaderStatuses>,
    pub(crate) notifier: Arc<Notifier>,
    pub(crate) listener: Mutex<Option<Arc<dyn EndpointListener>>>,
    /// The QoS the reader was created with: its immutable policies.
    pub(crate) qos: DataReaderQos,
    /// The QoS now (`set_qos` changes the changeable policies).
    pub(crate) current_qos: Mutex<DataReaderQos>,
    pub(crate) matched: Mutex<Vec<Guid>>,
    /// The history refused a sample (resource limits) since a `take` or a purge last made room.
    refused: AtomicBool,
    /// Writers of this participant that keep samples the history refused (see
    /// [`LocalReader::deliver_local`]); recorded under the history lock, called back by
    /// [`ReaderEndpoint::resume`] with no lock held. At most one entry per writer.
    holders: Mutex<Vec<Weak<dyn LocalHolder>>>,
    /// `holders` is not empty (checked without its lock by every `take`).
    held: AtomicBool,
    /// For the ACKNACK that a `take` in an application thread sends to ask for refused samples
    /// again ([`ReaderEndpoint::resume`]); the receive and event threads pass theirs.
    ctx: Arc<RuntimeContext>,
    /// DEADLINE, OWNERSHIP, TIME_BASED_FILTER, writers' LIFESPAN and leases. Locked (after the
    /// history lock, never before it) only while `policies_on`.
    pub(crate) policies: Mutex<ReaderPolicies>,
    /// Some policy of `policies` is in use: read on every sample, so that a reader with none
    /// pays one load.
    pub(crate) policies_on: AtomicBool,
    /// TRANSIENT and PERSISTENT readers: the (original writer, sequence number) pairs
    /// delivered, so that a sample from the live writer and from a durability service is
    /// delivered once. `None` for other readers, which drop relayed samples.
    delivered: Option<Mutex<durable::Delivered>>,
    /// Takes samples instead of the history (a durability service's reader).
    sink: parking_lot::RwLock<Option<Arc<dyn SampleSink>>>,
    /// `sink` is set: one load per sample otherwise.
    sink_on: AtomicBool,
    /// The content filter of a reader made from a content-filtered topic (set once, before
    /// the reader is enabled).
    pub(crate) content_filter: OnceLock<ReaderFilter>,
    /// How loan references become CDR for whoever asks for bytes (`take_serialized`, a
    /// sample sink); set for readers that announce a loan layout (see `create_reader`).
    pub(crate) loans: OnceLock<crate::loan::LoanResolver>,
    /// PRESENTATION `coherent_access`: the writers' open coherent sets, held back until
    /// complete (set once, before the reader is enabled; see [`crate::presentation`]).
    pub(crate) coherent: OnceLock<Mutex<CoherentSets>>,
    /// PRESENTATION GROUP scope with `coherent_access`: the subscriber's group sets
    /// (see [`group_coherent`]).
    pub(crate) group: OnceLock<Arc<GroupAssembler>>,
}

impl ReaderEndpoint {
    /// A reader endpoint for the type `support` describes, with `qos`, run by `ctx`: its core
    /// draws from the context's shared byte budgets, and its history is capped at the
    /// context's instances per reader unless the QoS sets `max_instances`.
    pub(crate) fn new(
        ctx: Arc<RuntimeContext>,
        guid: Guid,
        support: Arc<dyn TypeSupport>,
        qos: &DataReaderQos,
    ) -> Arc<Self> {
        let mut core_cfg = ReaderConfig::new(guid);
        core_cfg.shared_reassembly = Some(ctx.budgets.reassembly.clone());
        core_cfg.shared_buffered = Some(ctx.budgets.out_of_order.clone());
        let mut history_cfg = outbox::history_config(qos);
        history_cfg
            .limits
            .max_instances
            .get_or_insert(ctx.limits.max_instances_per_reader);
        Arc::new_cyclic(|me| ReaderEndpoint {
            me: me.clone(),
            guid,
            support,
            pool: PayloadPool::default(),
            undecodable: AtomicU64::new(0),
            stale_loans: AtomicU64::new(0),
            scratch: Mutex::new(Vec::new()),
            core: Mutex::new(ReaderCore::new(core_cfg)),
            history: Mutex::new({
                let mut h = History::new(history_cfg);
                h.set_purge_clock(monotonic_nanos);
                h
            }),
            statuses: Mutex::new(ReaderStatuses::default()),
            notifier: Arc::new(Notifier::default()),
            listener: Mutex::new(None),
            qos: qos.clone(),
            current_qos: Mutex::new(qos.clone()),
            matched: Mutex::new(Vec::new()),
            refused: AtomicBool::new(false),
            holders: Mutex::new(Vec::new()),
            held: AtomicBool::new(false),
            ctx,
            policies: Mutex::new(ReaderPolicies::new(qos)),
            policies_on: AtomicBool::new(ReaderPolicies::in_use(qos)),
            delivered: (qos.durability >= crate::qos::Durability::Transient)
                .then(|| Mutex::new(durable::Delivered::default())),
            sink: parking_lot::RwLock::new(None),
            sink_on: AtomicBool::new(false),
            content_filter: OnceLock::new(),
            loans: OnceLock::new(),
            coherent: OnceLock::new(),
            group: OnceLock::new(),
        })
    }

    /// Installs (or removes) the [`SampleSink`] that takes this reader's samples.
    pub(crate) fn set_sink(&self, sink: Option<Arc<dyn SampleSink>>) {
        self.sink_on.store(sink.is_some(), Ordering::Relaxed);
        *self.sink.write() = sink;
    }

    /// Samples dropped because the same original writer and sequence number was delivered
    /// before (from the live writer or another durability service).
    pub(crate) fn duplicates_dropped(&self) -> u64 {
        self.delivered.as_ref().map_or(0, |d| d.lock().duplicates)
    }

    /// The type support the reader was made with.
    pub(crate) fn support(&self) -> &Arc<dyn TypeSupport> {
        &self.support
    }

    /// Counts (and logs) a sample dropped at the API edge because it did not decode.
    pub(crate) fn count_undecodable(&self, e: &dyn std::fmt::Display) {
        self.undecodable.fetch_add(1, Ordering::Relaxed);
        tracing::debug!(reader = ?self.guid, error = %e, "dropped undecodable sample");
    }

    /// Runs `f` on the history with the instances whose autopurge delay ran out purged first
    /// (the clock is read only when a purge is scheduled); `f` returns its result and how many
    /// samples it removed. With the lock released, resumes refused samples if the purge or
    /// `f` made room.
    pub(crate) fn with_history<R>(
        &self,
        f: impl FnOnce(&mut History<SerializedPayload>) -> (R, usize),
    ) -> R {
        let (out, freed) = {
            let mut h = self.history.lock();
            let purged = purge_due(&mut h) + expire_due(&mut h);
            let (out, taken) = f(&mut h);
            (out, purged + taken)
        };
        self.resume(freed);
        out
    }
}

/// Purges the instances whose autopurge delay ran out; returns how many. Reads the clock only
/// when a purge is scheduled.
fn purge_due(h: &mut History<SerializedPayload>) -> usize {
    if h.next_purge().is_some() {
        h.purge_expired(monotonic_nanos())
    } else {
        0
    }
}

/// Nanoseconds on the monotonic clock (since its first reading in this process): what a
/// reader's autopurge delays and TIME_BASED_FILTER separations are measured on, so a
/// wall-clock step neither hastens nor postpones them.
pub(crate) fn monotonic_nanos() -> i64 {
    static BASE: OnceLock<Instant> = OnceLock::new();
    let ns = BASE.get_or_init(Instant::now).elapsed().as_nanos();
    i64::try_from(ns).unwrap_or(i64::MAX)
}
