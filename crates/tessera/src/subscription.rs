//! Subscribers and data readers.
//!
//! Samples are delivered on the receive thread: the reader's reliability core puts them in order,
//! the payload is copied out of the receive buffer (into a recycled buffer) with its key hash and
//! inserted, still serialized, into the history cache under the history's own lock, and waiting
//! threads (wait sets, listeners) are woken right there. The reader endpoint does not know the
//! sample type beyond its [`TypeSupport`]: `DataReader<T>` decodes at `read`/`take` time, in the
//! application's thread (see [`crate::reader`]).

#[cfg_attr(not(feature = "atomic"), path = "subscription/atomic_off.rs")]
mod atomic;
mod durable;
mod group_coherent;
mod local;
mod policies;
mod scope;
pub use durable::{ReceivedSample, SampleSink, SinkVerdict};
pub(crate) use group_coherent::GroupAssembler;
pub use group_coherent::ReaderRun;
use policies::expire_due;
#[cfg(feature = "atomic")]
pub(crate) use scope::CommittedDelivery;
pub(crate) use scope::DatagramScope;
use scope::{committed_delivery, ReceptionClock, NOT_IN_DATAGRAM};

use crate::condition::Notifier;
use crate::content_filter::{CftShared, ReaderFilter, TopicDescription};
use crate::endpoint::{LocalHolder, LocalOutcome, LocalReader, RemoteEndpoint};
use crate::error::{Error, Result};
use crate::history::{History, InsertOutcome, Sample, UpdateOutcome};
use crate::outbox;
use crate::participant::DomainParticipant;
use crate::presentation::CoherentSets;
use crate::qos::{DataReaderQos, SubscriberQos};
use crate::qos_rt::group::Group;
use crate::qos_rt::reader::{finite_ns, watched_lease, Admission, ReaderPolicies, WriterTerms};
use crate::reader::{DataReader, UntypedDataReader};
use crate::runtime::RuntimeContext;
use crate::sample::{PayloadPool, SerializedPayload, SerializedSample, TypeSupport, TypedSupport};
use crate::status::{
    IncompatibleQosStatus, LivelinessChangedStatus, ReaderStatuses, RequestedDeadlineMissedStatus,
    SampleLostStatus, SampleRejectedStatus, StatusMask, SubscriptionMatchedStatus,
};
use crate::TopicType;
use parking_lot::Mutex;
use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::time::Instant;
use tessera_rtps::qos::{Consistency, ReliabilityKind};
use tessera_rtps::reader::{Delivered, ReaderConfig, ReaderCore, Verdict};
use tessera_rtps::types::{EntityId, Guid};
use tessera_rtps::wire::{PayloadKind, ReceivedSubmessage, Submessage};

/// Creates data readers; its QoS gives them their partitions.
#[derive(Debug, Clone)]
pub struct Subscriber {
    participant: DomainParticipant,
    group: Arc<Group<SubscriberQos, ReaderOwner>>,
    /// Nesting depth of `begin_access` (see [`crate::presentation`]).
    pub(crate) access: Arc<Mutex<u32>>,
    /// PRESENTATION GROUP scope: the group sets (with `coherent_access`) and the arrival
    /// counter its readers share (with `ordered_access`).
    pub(crate) group_sets: Option<Arc<GroupAssembler>>,
    pub(crate) group_order: Option<Arc<AtomicU64>>,
}

impl Subscriber {
    pub(crate) fn new(participant: DomainParticipant, qos: SubscriberQos) -> Self {
        let p = &qos.presentation;
        let group_scope = p.access_scope == crate::qos::PresentationAccessScope::Group;
        Subscriber {
            participant,
            access: Arc::new(Mutex::new(0)),
            group_sets: (group_scope && p.coherent_access).then(Default::default),
            group_order: (group_scope && p.ordered_access).then(Default::default),
            group: Group::new(qos),
        }
    }

    /// The subscriber QoS (as `set_qos` last changed it).
    pub fn qos(&self) -> SubscriberQos {
        self.group.qos()
    }

    /// Changes the subscriber's QoS: PARTITION, GROUP_DATA and ENTITY_FACTORY are changeable
    /// (its readers are announced again, which re-matches them with writers of the new
    /// partitions); PRESENTATION is not ([`Error::ImmutablePolicy`]).
    pub fn set_qos(&self, qos: SubscriberQos) -> Result<()> {
        qos.check_consistency()
            .map_err(|e| Error::InconsistentPolicy(e.to_string()))?;
        if qos.presentation != self.group.qos().presentation {
            return Err(Error::ImmutablePolicy("PRESENTATION".into()));
        }
        for r in self.group.set(qos) {
            let rq = r.ep.current_qos.lock().clone();
            r.reannounce(&rq);
        }
        Ok(())
    }

    /// The participant.
    pub fn participant(&self) -> &DomainParticipant {
        &self.participant
    }

    /// Creates a data reader for `topic`. Inconsistent QoS is refused with
    /// [`Error::InconsistentPolicy`].
    ///
    /// `topic` is a [`Topic`](crate::Topic) or a [`ContentFilteredTopic`](crate::ContentFilteredTopic),
    /// whose filter the reader applies to every arriving sample.
    pub fn create_datareader<T: TopicType>(
        &self,
        topic: &impl TopicDescription<T>,
        qos: DataReaderQos,
    ) -> Result<DataReader<T>> {
        let raw = self.create_reader(
            &topic.topic().inner,
            TypedSupport::<T>::arc(),
            qos,
            topic.content_filter().cloned(),
            crate::loan::LoanResolver::of::<T>(),
        )?;
        Ok(DataReader::from_raw(raw))
    }

    /// Creates a data reader for `topic` that hands out samples serialized, with their
    /// `SampleInfo`, without decoding them. It matches writers exactly like a typed reader.
    pub fn create_untyped_datareader<T: TopicType>(
        &self,
        topic: &impl TopicDescription<T>,
        qos: DataReaderQos,
    ) -> Result<UntypedDataReader> {
        self.create_reader(
            &topic.topic().inner,
            TypedSupport::<T>::arc(),
            qos,
            topic.content_filter().cloned(),
            crate::loan::LoanResolver::of::<T>(),
        )
    }

    /// A reader endpoint for `topic` of the type `support` describes (typed, untyped and
    /// dynamic readers), filtered by `content_filter` if it comes from a content-filtered topic.
    /// `loans`: how it resolves zero-copy loan references (a reader made from a keyless plain
    /// Rust type); it then announces that it does, unless it filters content (its filter reads
    /// serialized samples) or is best-effort, and loaning writers send it references. A
    /// best-effort reader gets copies: the chunks its history would hold make a loaning
    /// writer wait in `loan`, and a best-effort reader must never slow its writer down.
    pub(crate) fn create_reader(
        &self,
        topic: &crate::topic::TopicInner,
        support: Arc<dyn TypeSupport>,
        qos: DataReaderQos,
        content_filter: Option<Arc<CftShared>>,
        loans: Option<crate::loan::LoanResolver>,
    ) -> Result<UntypedDataReader> {
        let subscriber_qos = self.group.qos();
        qos.check_consistency()
            .map_err(|e| Error::InconsistentPolicy(e.to_string()))?;
        if !Arc::ptr_eq(topic.participant.shared(), self.participant.shared()) {
            return Err(Error::BadParameter(
                "topic belongs to another participant".into(),
            ));
        }
        let p = self.participant.shared().clone();
        let entity_id = p.new_entity_id(false, support.is_keyed());
        let guid = Guid::new(p.guid_prefix, entity_id);
        let ep = ReaderEndpoint::new(p.ctx.clone(), guid, support, &qos);
        if let Some(cf) = &content_filter {
            // Set before the reader is enabled: no sample arrives unfiltered.
            let _ = ep.content_filter.set(ReaderFilter::new(cf.clone()));
        }
        let loans = loans.filter(|_| {
            content_filter.is_none() && qos.reliability.kind == ReliabilityKind::Reliable
        });
        if let Some(l) = loans {
            let _ = ep.loans.set(l);
        }
        crate::presentation::setup_reader(&ep, &subscriber_qos.presentation);
        if let Some(g) = &self.group_sets {
            let _ = ep.group.set(g.clone());
        }
        if let Some(c) = &self.group_order {
            ep.history.lock().set_order_counter(c.clone());
        }
        let mut side = tessera_rtps::qos::ReaderSideQos::new(&topic.qos, &subscriber_qos, &qos);
        atomic::setup(
            &p,
            guid,
            &topic.name,
            &mut side,
            &(ep.clone() as Arc<dyn LocalReader>),
        )?;
        let owner = Arc::new(ReaderOwner {
            ep: ep.clone(),
            enabled: AtomicBool::new(false),
            participant: self.participant.clone(),
            entity_id,
            topic_name: topic.name.clone(),
            type_name: topic.type_name.clone(),
            topic_qos: topic.qos.clone(),
            subscriber: self.group.clone(),
            consensus: side.consensus_endpoint,
            content_filter,
            loan_layout: loans.map_or(0, |l| l.layout),
        });
        if let Some(cf) = &owner.content_filter {
            cf.add_reader(&owner);
        }
        self.group.add(&owner);
        // ENTITY_FACTORY: a subscriber that does not autoenable leaves `enable` to the caller.
        if subscriber_qos.entity_factory.autoenable_created_entities {
            owner.enable();
        }
        Ok(UntypedDataReader::new(ep, Some(owner)))
    }
}

/// Listener for data-reader statuses; called from a runtime thread (the receive thread for
/// data), so keep it short.
pub trait DataReaderListener<T: TopicType>: Send + Sync {
    /// New data arrived.
    fn on_data_available(&self, _reader: &DataReader<T>) {}
    /// A writer matched or unmatched.
    fn on_subscription_matched(&self, _reader: &DataReader<T>, _status: SubscriptionMatchedStatus) {
    }
    /// A writer with incompatible QoS was found.
    fn on_requested_incompatible_qos(
        &self,
        _reader: &DataReader<T>,
        _status: IncompatibleQosStatus,
    ) {
    }
    /// A matched writer's liveliness changed.
    fn on_liveliness_changed(&self, _reader: &DataReader<T>, _status: LivelinessChangedStatus) {}
    /// Samples were lost.
    fn on_sample_lost(&self, _reader: &DataReader<T>, _status: SampleLostStatus) {}
    /// Samples were rejected by resource limits.
    fn on_sample_rejected(&self, _reader: &DataReader<T>, _status: SampleRejectedStatus) {}
    /// An instance received no sample within the DEADLINE period.
    fn on_requested_deadline_missed(
        &self,
        _reader: &DataReader<T>,
        _status: RequestedDeadlineMissedStatus,
    ) {
    }
}

/// A listener as the (type-erased) reader endpoint calls it.
pub(crate) trait EndpointListener: Send + Sync {
    /// The statuses in `mask` changed.
    fn on_status(&self, ep: Arc<ReaderEndpoint>, mask: StatusMask);
}

/// Adapts a typed listener: builds the `DataReader<T>` it is called with.
pub(crate) struct TypedListener<T: TopicType>(pub Arc<dyn DataReaderListener<T>>);

impl<T: TopicType> EndpointListener for TypedListener<T> {
    fn on_status(&self, ep: Arc<ReaderEndpoint>, mask: StatusMask) {
        let l = &self.0;
        let r = DataReader::<T>::from_raw(UntypedDataReader::new(ep, None));
        if mask.intersects(StatusMask::DATA_AVAILABLE) {
            l.on_data_available(&r);
        }
        if mask.intersects(StatusMask::SUBSCRIPTION_MATCHED) {
            l.on_subscription_matched(&r, r.subscription_matched_status());
        }
        if mask.intersects(StatusMask::REQUESTED_INCOMPATIBLE_QOS) {
            l.on_requested_incompatible_qos(&r, r.requested_incompatible_qos_status());
        }
        if mask.intersects(StatusMask::LIVELINESS_CHANGED) {
            l.on_liveliness_changed(&r, r.liveliness_changed_status());
        }
        if mask.intersects(StatusMask::SAMPLE_LOST) {
            l.on_sample_lost(&r, r.sample_lost_status());
        }
        if mask.intersects(StatusMask::SAMPLE_REJECTED) {
            l.on_sample_rejected(&r, r.sample_rejected_status());
        }
        if mask.intersects(StatusMask::REQUESTED_DEADLINE_MISSED) {
            l.on_requested_deadline_missed(&r, r.requested_deadline_missed_status());
        }
    }
}

/// A listener of a type-erased reader (a binding's): told which statuses changed.
pub(crate) struct MaskListener(pub Arc<dyn Fn(StatusMask) + Send + Sync>);

impl EndpointListener for MaskListener {
    fn on_status(&self, _ep: Arc<ReaderEndpoint>, mask: StatusMask) {
        (self.0)(mask);
    }
}

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
    fn resolve_cdr_chunk(&self, reference: &[u8]) -> Option<Arc<Vec<u8>>> {
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

    /// The type support the reader was made with.
    pub(crate) fn support(&self) -> &Arc<dyn TypeSupport> {
        &self.support
    }

    /// Counts (and logs) a sample dropped at the API edge because it did not decode.
    pub(crate) fn count_undecodable(&self, e: &dyn std::fmt::Display) {
        self.undecodable.fetch_add(1, Ordering::Relaxed);
        tracing::debug!(reader = ?self.guid, error = %e, "dropped undecodable sample");
    }

    /// Moves the acknowledgment hold on `writer` to what `hold` says, computed under the
    /// protocol core's lock (which the sink's `offer` also runs under, so a sample held
    /// meanwhile is never left out), and acknowledges what it releases at once.
    pub(crate) fn set_acknowledgment_hold(
        &self,
        writer: Guid,
        hold: impl FnOnce() -> Option<tessera_rtps::types::SequenceNumber>,
    ) {
        let now = Instant::now();
        let mut core = self.core.lock();
        core.set_acknowledgment_hold(writer, hold(), now);
        outbox::flush_reader(&self.ctx, &mut core, now);
        self.ctx.kick.ensure_by(core.poll_timeout());
    }

    /// After a `take` or an autopurge freed `freed` samples or instances: if the history had
    /// refused samples, the core asks their writers to resend them now rather than at its
    /// next heartbeat answer. Called with neither the core nor the history lock held.
    pub(crate) fn resume(&self, freed: usize) {
        if freed == 0 {
            return;
        }
        self.resume_local(&self.ctx);
        if !self.refused.swap(false, Ordering::Relaxed) {
            return;
        }
        let now = Instant::now();
        let mut core = self.core.lock();
        core.resume(now);
        outbox::flush_reader(&self.ctx, &mut core, now);
        self.ctx.kick.ensure_by(core.poll_timeout());
    }

    /// After room was made: the local writers that keep samples this history refused hand
    /// them over again. Called with no lock held. A redelivery raises DATA_AVAILABLE, whose
    /// listener may `take` and so come back here: such nested calls only queue their work for
    /// the outermost one on this thread, which keeps the stack flat however long the chain.
    fn resume_local(&self, ctx: &RuntimeContext) {
        if !self.held.swap(false, Ordering::AcqRel) {
            return;
        }
        let holders = std::mem::take(&mut *self.holders.lock());
        let nested = REDELIVERIES.with(|p| {
            let mut p = p.borrow_mut();
            let nested = p.is_some();
            p.get_or_insert_with(Vec::new).push((self.guid, holders));
            nested
        });
        if nested {
            return;
        }
        // Clears the queue however this ends, so that a panicking listener does not leave
        // later calls on this thread queueing work nobody runs.
        struct Draining;
        impl Drop for Draining {
            fn drop(&mut self) {
                REDELIVERIES.with(|p| *p.borrow_mut() = None);
            }
        }
        let _draining = Draining;
        while let Some((reader, holders)) =
            REDELIVERIES.with(|p| p.borrow_mut().as_mut().and_then(Vec::pop))
        {
            for h in holders.iter().filter_map(Weak::upgrade) {
                h.redeliver(ctx, reader);
            }
        }
    }

    /// Records a local writer that keeps a sample the history refused; runs under the history
    /// lock.
    fn hold(&self, holder: &Weak<dyn LocalHolder>) {
        let mut hs = self.holders.lock();
        if !hs.iter().any(|h| Weak::ptr_eq(h, holder)) {
            // Deleted writers leave: the list stays as long as the live writers at most.
            hs.retain(|h| h.strong_count() > 0);
            hs.push(holder.clone());
        }
        self.held.store(true, Ordering::Release);
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

    fn status_changed(&self, mask: StatusMask) {
        self.statuses.lock().changes |= mask;
        self.notifier.notify();
        let l = self.listener.lock().clone();
        if let (Some(l), Some(ep)) = (l, self.me.upgrade()) {
            l.on_status(ep, mask);
        }
    }

    /// Records what a delivery did and raises the matching statuses (and listener calls).
    fn raise(
        &self,
        counters: &crate::participant::RuntimeCounters,
        available: bool,
        rejected: u32,
        lost: u64,
    ) {
        let mut mask = StatusMask::NONE;
        if available {
            mask |= StatusMask::DATA_AVAILABLE;
        }
        if lost > 0 {
            let mut s = self.statuses.lock();
            add_count(&mut s.sample_lost.total_count, lost);
            add_count(&mut s.sample_lost.total_count_change, lost);
            mask |= StatusMask::SAMPLE_LOST;
        }
        if rejected > 0 {
            counters
                .samples_rejected
                .fetch_add(rejected.into(), std::sync::atomic::Ordering::Relaxed);
            tracing::debug!(reader = ?self.guid, rejected, "history refused samples (resource limits)");
            let mut s = self.statuses.lock();
            add_count(&mut s.sample_rejected.total_count, rejected.into());
            add_count(&mut s.sample_rejected.total_count_change, rejected.into());
            mask |= StatusMask::SAMPLE_REJECTED;
        }
        if mask != StatusMask::NONE {
            self.status_changed(mask);
        }
    }

    /// A group coherent set was shown in this reader: its statuses, with no lock held.
    pub(crate) fn group_shown(&self, available: bool, rejected: u32) {
        self.raise(&self.ctx.counters, available, rejected, 0);
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

/// Removes the reader from its participant when the last handle goes.
pub(crate) struct ReaderOwner {
    ep: Arc<ReaderEndpoint>,
    /// ENTITY_FACTORY: the reader was enabled (announced, matched).
    enabled: AtomicBool,
    participant: DomainParticipant,
    entity_id: EntityId,
    /// What the reader is announced with, for re-announcements (`set_qos`).
    topic_name: String,
    type_name: String,
    topic_qos: crate::qos::TopicQos,
    subscriber: Arc<Group<SubscriberQos, ReaderOwner>>,
    /// An ATOMIC reader's consensus address, announced with it (see [`atomic`]).
    consensus: Option<tessera_rtps::types::Locator>,
    /// The content-filtered topic the reader was made from, announced with it.
    content_filter: Option<Arc<CftShared>>,
    /// The plain layout whose loan references it resolves, announced with it (0: none).
    loan_layout: u64,
}

impl ReaderOwner {
    /// Enables the reader: it joins the participant's endpoints and is announced (matched).
    pub(crate) fn enable(&self) {
        if self.enabled.swap(true, Ordering::AcqRel) {
            return;
        }
        self.participant
            .shared()
            .endpoints
            .write()
            .readers
            .insert(self.entity_id, self.ep.clone() as Arc<dyn LocalReader>);
        let qos = self.ep.current_qos.lock().clone();
        self.reannounce(&qos);
    }

    pub(crate) fn participant(&self) -> &DomainParticipant {
        &self.participant
    }

    /// Whether the reader is enabled.
    pub(crate) fn is_enabled(&self) -> bool {
        self.enabled.load(Ordering::Acquire)
    }

    /// Announces the reader again with its current QoS (its filter's parameters changed).
    pub(crate) fn reannounce_current(&self) {
        let qos = self.ep.current_qos.lock().clone();
        self.reannounce(&qos);
    }

    /// Announces the reader (again) with `qos`, which (re-)matches it with every writer; a
    /// reader not enabled yet is announced by `enable`.
    pub(crate) fn reannounce(&self, qos: &DataReaderQos) {
        if !self.is_enabled() {
            return;
        }
        let p = self.participant.shared();
        let now = Instant::now();
        let content_filter = self.content_filter.as_ref().map(|c| c.property());
        let actions = p.discovery.lock().add_local_reader(
            p,
            Guid::new(p.guid_prefix, self.entity_id),
            crate::discovery_rt::EndpointTopic {
                topic_name: &self.topic_name,
                type_name: &self.type_name,
                content_filter: content_filter.as_ref(),
                loan_layout: self.loan_layout,
                // Every reader copies such samples out on arrival (`resolve_cdr_chunk`); a
                // best-effort one is not offered them, see `publication/cdr_chunks.rs`.
                cdr_chunks: qos.reliability.kind == ReliabilityKind::Reliable,
            },
            {
                let mut side = tessera_rtps::qos::ReaderSideQos::new(
                    &self.topic_qos,
                    &self.subscriber.qos(),
                    qos,
                );
                side.consensus_endpoint = self.consensus;
                side
            },
            now,
        );
        p.apply_discovery_events(actions, now);
    }
}

impl Drop for ReaderOwner {
    fn drop(&mut self) {
        if !self.is_enabled() {
            return; // never announced
        }
        let p = self.participant.shared();
        let guid = Guid::new(p.guid_prefix, self.entity_id);
        // What leaves the table is dropped after the lock is released: the last reference to
        // the reader drops its listener, which may own entities whose deletion takes the lock.
        let removed = {
            let mut eps = p.endpoints.write();
            (
                eps.readers.remove(&self.entity_id),
                eps.remove_reader_everywhere(guid),
            )
        };
        drop(removed);
        let now = Instant::now();
        let actions = p.discovery.lock().remove_local_endpoint(p, guid, now);
        p.apply_discovery_events(actions, now);
    }
}

/// A reader and the local writers to call back for it.
type Redelivery = (Guid, Vec<Weak<dyn LocalHolder>>);

thread_local! {
    /// The redeliveries this thread still has to run (`Some` while it runs them): see
    /// [`ReaderEndpoint::resume_local`].
    static REDELIVERIES: std::cell::RefCell<Option<Vec<Redelivery>>> =
        const { std::cell::RefCell::new(None) };
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

/// Adds `n` events to a DDS status count (`i32` in the DDS API), saturating: one peer
/// HEARTBEAT can declare up to 2^62 samples lost, which must neither wrap nor overflow.
fn add_count(count: &mut i32, n: u64) {
    let n = i32::try_from(n).unwrap_or(i32::MAX);
    *count = count.saturating_add(n);
}

#[cfg(test)]
mod count_tests {
    use super::add_count;

    #[test]
    fn status_counts_saturate() {
        let mut c = 5;
        add_count(&mut c, 3);
        assert_eq!(c, 8);
        // 2^62 - 3 lost samples (a HEARTBEAT with firstSN 2^62) truncated to -3 before.
        add_count(&mut c, (1u64 << 62) - 3);
        assert_eq!(c, i32::MAX);
        add_count(&mut c, 1);
        assert_eq!(c, i32::MAX);
    }
}
