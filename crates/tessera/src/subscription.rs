//! Subscribers and data readers.
//!
//! Samples are delivered on the receive thread: the reader's reliability core puts them in order,
//! the payload is decoded straight from the receive buffer, inserted into the history cache under
//! the history's own lock, and waiting threads (wait sets, listeners) are woken right there.

use crate::condition::{Condition, ConditionKind, Notifier};
use crate::endpoint::{LocalOutcome, LocalReader, RemoteEndpoint};
use crate::error::{Error, Result};
use crate::history::{History, InsertOutcome, InstanceHandle, Sample, StateMasks, UpdateOutcome};
use crate::outbox;
use crate::participant::{DomainParticipant, ParticipantShared};
use crate::qos::{DataReaderQos, SubscriberQos};
use crate::status::{
    IncompatibleQosStatus, LivelinessChangedStatus, ReaderStatuses, SampleLostStatus,
    SampleRejectedStatus, StatusMask, SubscriptionMatchedStatus,
};
use crate::topic::Topic;
use crate::TopicType;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Instant;
use tessera_rtps::cdr;
use tessera_rtps::qos::ReliabilityKind;
use tessera_rtps::reader::{Delivered, ReaderConfig, ReaderCore, Verdict};
use tessera_rtps::types::{EntityId, Guid};
use tessera_rtps::wire::{PayloadKind, ReceivedSubmessage, Submessage};

/// Creates data readers; its QoS gives them their partitions.
#[derive(Debug, Clone)]
pub struct Subscriber {
    participant: DomainParticipant,
    qos: SubscriberQos,
}

impl Subscriber {
    pub(crate) fn new(participant: DomainParticipant, qos: SubscriberQos) -> Self {
        Subscriber { participant, qos }
    }

    /// The subscriber QoS.
    pub fn qos(&self) -> &SubscriberQos {
        &self.qos
    }

    /// The participant.
    pub fn participant(&self) -> &DomainParticipant {
        &self.participant
    }

    /// Creates a data reader for `topic`. Inconsistent QoS is refused with
    /// [`Error::InconsistentPolicy`].
    pub fn create_datareader<T: TopicType>(
        &self,
        topic: &Topic<T>,
        qos: DataReaderQos,
    ) -> Result<DataReader<T>> {
        qos.check_consistency()
            .map_err(|e| Error::InconsistentPolicy(e.to_string()))?;
        crate::publication::check_durability_supported(qos.durability)?;
        if !Arc::ptr_eq(topic.participant().shared(), self.participant.shared()) {
            return Err(Error::BadParameter(
                "topic belongs to another participant".into(),
            ));
        }
        let p = self.participant.shared().clone();
        let entity_id = p.new_entity_id(false, T::KEYED);
        let guid = Guid::new(p.guid_prefix, entity_id);
        // The participant's bounds: shared byte pools, and an instance cap unless the QoS has one.
        let mut core_cfg = ReaderConfig::new(guid);
        core_cfg.shared_reassembly = Some(p.budgets.reassembly.clone());
        core_cfg.shared_buffered = Some(p.budgets.out_of_order.clone());
        let mut history_cfg = outbox::history_config(&qos);
        history_cfg
            .limits
            .max_instances
            .get_or_insert(p.limits.max_instances_per_reader);
        let ep = Arc::new_cyclic(|me| ReaderEndpoint::<T> {
            me: me.clone(),
            guid,
            core: Mutex::new(ReaderCore::new(core_cfg)),
            history: Mutex::new(History::new(history_cfg)),
            statuses: Mutex::new(ReaderStatuses::default()),
            notifier: Arc::new(Notifier::default()),
            listener: Mutex::new(None),
            qos: qos.clone(),
            matched: Mutex::new(Vec::new()),
            refused: AtomicBool::new(false),
            participant: Arc::downgrade(&p),
        });
        p.endpoints
            .write()
            .readers
            .insert(entity_id, ep.clone() as Arc<dyn LocalReader>);
        let actions = p.discovery.lock().add_local_reader(
            &p,
            guid,
            crate::discovery_rt::EndpointTopic {
                topic_name: topic.name(),
                type_name: topic.type_name(),
            },
            tessera_rtps::qos::ReaderSideQos::new(topic.qos(), &self.qos, &qos),
            Instant::now(),
        );
        p.apply_discovery_events(actions, Instant::now());
        let owner = Arc::new(ReaderOwner {
            participant: self.participant.clone(),
            entity_id,
        });
        Ok(DataReader {
            ep,
            owner: Some(owner),
        })
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
}

/// The shared state of one data reader.
pub(crate) struct ReaderEndpoint<T: TopicType> {
    me: Weak<ReaderEndpoint<T>>,
    guid: Guid,
    core: Mutex<ReaderCore>,
    history: Mutex<History<T>>,
    statuses: Mutex<ReaderStatuses>,
    notifier: Arc<Notifier>,
    listener: Mutex<Option<Arc<dyn DataReaderListener<T>>>>,
    qos: DataReaderQos,
    matched: Mutex<Vec<Guid>>,
    /// The history refused a sample (resource limits) since the last `take` made room.
    refused: AtomicBool,
    /// To send the ACKNACK that asks for refused samples again ([`ReaderEndpoint::resume`]).
    participant: Weak<ParticipantShared>,
}

impl<T: TopicType> ReaderEndpoint<T> {
    /// After a `take` of `taken` samples: if the history had refused samples, the core asks
    /// their writers to resend them now rather than at its next heartbeat answer.
    fn resume(&self, taken: usize) {
        if taken == 0 || !self.refused.swap(false, Ordering::Relaxed) {
            return;
        }
        let Some(p) = self.participant.upgrade() else {
            return;
        };
        let now = Instant::now();
        let mut core = self.core.lock();
        core.resume(now);
        outbox::flush_reader(&p, &mut core, now);
        p.kick.ensure_by(core.poll_timeout());
    }

    /// The history, locked, with the instances whose autopurge delay ran out purged first
    /// (the clock is read only when a purge is scheduled).
    fn history_purged(&self) -> parking_lot::MutexGuard<'_, History<T>> {
        let mut h = self.history.lock();
        if h.next_purge().is_some() {
            h.purge_expired(crate::publication::now_nanos());
        }
        h
    }

    fn status_changed(&self, mask: StatusMask) {
        self.statuses.lock().changes |= mask;
        self.notifier.notify();
        let l = self.listener.lock().clone();
        if let (Some(l), Some(ep)) = (l, self.me.upgrade()) {
            let r = DataReader { ep, owner: None };
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

    /// Decodes one delivered sample and puts it in the history. Returns whether the history
    /// changed in a way readers should hear about.
    fn accept(&self, d: &Delivered<'_>, history: &mut History<T>, rejected: &mut u32) -> bool {
        let writer = d.writer.to_bytes();
        let ts = d.source_timestamp.map(|t| t.to_nanos()).unwrap_or(0);
        let reception = crate::publication::now_nanos();
        if d.status_info & 0x3 != 0 || d.kind == PayloadKind::Key {
            let key_hash = match d.key_hash {
                Some(k) => k,
                None if !T::KEYED => [0; 16],
                None => match cdr::key_hash_from_key_payload::<T>(&d.payload) {
                    Ok(k) => k,
                    Err(_) => return false,
                },
            };
            let mut changed = false;
            if d.status_info & 1 != 0 {
                let out = history.dispose(key_hash, writer, ts, reception);
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
        let sample: T = match cdr::deserialize_sample(&d.payload) {
            Ok(s) => s,
            Err(e) => {
                tracing::debug!(error = %e, "dropped undecodable sample");
                return false;
            }
        };
        let key_hash = if T::KEYED {
            cdr::key_hash(&sample)
        } else {
            [0; 16]
        };
        match history.insert(key_hash, writer, sample, ts, reception) {
            InsertOutcome::Rejected(_) => {
                *rejected += 1;
                false
            }
            _ => true,
        }
    }
}

impl<T: TopicType> LocalReader for ReaderEndpoint<T> {
    fn guid(&self) -> Guid {
        self.guid
    }

    fn handle(&self, p: &ParticipantShared, rs: &ReceivedSubmessage<'_>, now: Instant) {
        let mut available = false;
        let rejected;
        let lost_before;
        let lost_after;
        {
            let mut core = self.core.lock();
            lost_before = core.counters().lost;
            let refused_before = core.counters().refused;
            // Locked only when a sample is actually delivered: a piggy-backed HEARTBEAT (on
            // nearly every datagram) then costs no history lock.
            let mut history = None;
            let mut deliver = |d: Delivered<'_>| {
                let h = history.get_or_insert_with(|| self.history.lock());
                let mut refused = 0;
                available |= self.accept(&d, h, &mut refused);
                if refused == 0 {
                    return Verdict::Accepted;
                }
                // A resource limit: a reliable writer keeps the sample unacknowledged and
                // resends it once a `take` made room (a best-effort one's is dropped).
                self.refused.store(true, Ordering::Relaxed);
                Verdict::Refused
            };
            match &rs.submessage {
                Submessage::Data(d) => {
                    core.on_data(rs.source_prefix, d, rs.timestamp, now, &mut deliver)
                }
                Submessage::DataFrag(d) => {
                    core.on_data_frag(rs.source_prefix, d, rs.timestamp, now, &mut deliver)
                }
                Submessage::Heartbeat(h) => {
                    core.on_heartbeat(rs.source_prefix, h, now, &mut deliver)
                }
                Submessage::HeartbeatFrag(h) => core.on_heartbeat_frag(rs.source_prefix, h, now),
                Submessage::Gap(g) => core.on_gap(rs.source_prefix, g, now, &mut deliver),
                _ => {}
            }
            drop(history);
            lost_after = core.counters().lost;
            // SAMPLE_REJECTED counts each sample once, not each resend of it.
            rejected = (core.counters().refused - refused_before) as u32;
            outbox::flush_reader(p, &mut core, now);
            p.kick.ensure_by(core.poll_timeout());
        }
        self.raise(
            &p.counters,
            available,
            rejected,
            lost_after.saturating_sub(lost_before),
        );
    }

    fn deliver_local(&self, sample: &Delivered<'_>) -> LocalOutcome {
        let mut history = self.history.lock();
        let mut rejected = 0;
        let available = self.accept(sample, &mut history, &mut rejected);
        LocalOutcome {
            available,
            rejected,
        }
    }

    fn notify_local(&self, p: &ParticipantShared, o: LocalOutcome) {
        self.raise(&p.counters, o.available, o.rejected, 0);
    }

    fn on_timeout(&self, p: &ParticipantShared, now: Instant) -> Option<Instant> {
        // Autopurge runs here too, so an application that never reads still frees memory
        // (within the event thread's period, at most 100 ms late).
        drop(self.history_purged());
        let mut core = self.core.lock();
        core.handle_timeout(now);
        outbox::flush_reader(p, &mut core, now);
        core.poll_timeout()
    }

    fn matched(&self, p: &ParticipantShared, remote: &RemoteEndpoint, now: Instant) {
        {
            // The pair is reliable only when this reader asks for it: a reliable writer treats
            // a best-effort reader as best effort (no HEARTBEAT, no GAP), so a reliable proxy
            // here would wait for ever for sequence numbers it will never be told about.
            let reliable =
                remote.reliable && self.qos.reliability.kind == ReliabilityKind::Reliable;
            // A writer of this participant hands its samples over directly
            // (`deliver_local`): no reliability protocol with it.
            if remote.guid.prefix != self.guid.prefix {
                let mut core = self.core.lock();
                core.add_writer(remote.guid, remote.locators, reliable, now);
                outbox::flush_reader(p, &mut core, now);
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
            let st = &mut s.subscription_matched;
            st.total_count += 1;
            st.total_count_change += 1;
            st.current_count += 1;
            st.current_count_change += 1;
            st.last_publication_handle = Some(remote.guid);
            let l = &mut s.liveliness_changed;
            l.alive_count += 1;
            l.alive_count_change += 1;
            l.last_publication_handle = Some(remote.guid);
        }
        self.status_changed(StatusMask::SUBSCRIPTION_MATCHED | StatusMask::LIVELINESS_CHANGED);
    }

    fn unmatched(&self, remote: Guid, lost: bool) {
        tracing::debug!(reader = ?self.guid, writer = ?remote, lost, "writer unmatched");
        self.core.lock().remove_writer(remote);
        self.matched.lock().retain(|g| *g != remote);
        let data_changed = self
            .history
            .lock()
            .writer_lost(remote.to_bytes(), crate::publication::now_nanos())
            > 0;
        {
            let mut s = self.statuses.lock();
            let st = &mut s.subscription_matched;
            st.current_count -= 1;
            st.current_count_change -= 1;
            st.last_publication_handle = Some(remote);
            // Every matched writer is alive: liveliness is the participant's lease, and a
            // lease that runs out removes the writer too (`lost`). A removed writer leaves the
            // counts altogether; `not_alive_count` counts only writers still matched but not
            // alive, of which there are none.
            let l = &mut s.liveliness_changed;
            l.alive_count -= 1;
            l.alive_count_change -= 1;
            l.last_publication_handle = Some(remote);
        }
        let mut mask = StatusMask::SUBSCRIPTION_MATCHED | StatusMask::LIVELINESS_CHANGED;
        if data_changed {
            mask |= StatusMask::DATA_AVAILABLE;
        }
        self.status_changed(mask);
    }

    fn incompatible(&self, policies: &[u32]) {
        self.statuses
            .lock()
            .requested_incompatible_qos
            .record(policies);
        self.status_changed(StatusMask::REQUESTED_INCOMPATIBLE_QOS);
    }
}

/// Removes the reader from its participant when the last handle goes.
struct ReaderOwner {
    participant: DomainParticipant,
    entity_id: EntityId,
}

impl Drop for ReaderOwner {
    fn drop(&mut self) {
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

/// A typed data reader. Cheap to clone; the reader is deleted when the last clone is dropped.
pub struct DataReader<T: TopicType> {
    ep: Arc<ReaderEndpoint<T>>,
    owner: Option<Arc<ReaderOwner>>,
}

impl<T: TopicType> Clone for DataReader<T> {
    fn clone(&self) -> Self {
        DataReader {
            ep: self.ep.clone(),
            owner: self.owner.clone(),
        }
    }
}

impl<T: TopicType> std::fmt::Debug for DataReader<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DataReader")
            .field("guid", &self.ep.guid)
            .finish()
    }
}

impl<T: TopicType> DataReader<T> {
    /// The reader's GUID.
    pub fn guid(&self) -> Guid {
        self.ep.guid
    }

    /// The reader's QoS.
    pub fn qos(&self) -> &DataReaderQos {
        &self.ep.qos
    }

    fn after_access(&self) {
        let mut s = self.ep.statuses.lock();
        s.changes.0 &= !StatusMask::DATA_AVAILABLE.0;
    }

    /// Reads up to `max` samples in any state, leaving them in the reader (marked READ).
    pub fn read(&self, max: usize) -> Result<Vec<Sample<T>>>
    where
        T: Clone,
    {
        self.read_with(max, StateMasks::ANY)
    }

    /// Takes up to `max` samples in any state, removing them from the reader.
    pub fn take(&self, max: usize) -> Result<Vec<Sample<T>>> {
        self.take_with(max, StateMasks::ANY)
    }

    /// Reads samples whose states match `masks`.
    pub fn read_with(&self, max: usize, masks: StateMasks) -> Result<Vec<Sample<T>>>
    where
        T: Clone,
    {
        let out = self.ep.history_purged().read(max, masks);
        self.after_access();
        Ok(out)
    }

    /// Takes samples whose states match `masks`.
    pub fn take_with(&self, max: usize, masks: StateMasks) -> Result<Vec<Sample<T>>> {
        let out = self.ep.history_purged().take(max, masks);
        self.after_access();
        self.ep.resume(out.len());
        Ok(out)
    }

    /// Takes up to `max` samples into `out` (appending); returns how many. No allocation when
    /// `out` has room: the fast path for high-rate readers.
    pub fn take_into(&self, out: &mut Vec<Sample<T>>, max: usize) -> usize {
        let n = self.ep.history_purged().take_into(out, max);
        self.after_access();
        self.ep.resume(n);
        n
    }

    /// Reads the samples of one instance.
    pub fn read_instance(
        &self,
        handle: InstanceHandle,
        max: usize,
        masks: StateMasks,
    ) -> Result<Vec<Sample<T>>>
    where
        T: Clone,
    {
        let out = self
            .ep
            .history_purged()
            .read_instance(handle, max, masks)
            .map_err(|_| Error::UnknownInstance)?;
        self.after_access();
        Ok(out)
    }

    /// Takes the samples of one instance.
    pub fn take_instance(
        &self,
        handle: InstanceHandle,
        max: usize,
        masks: StateMasks,
    ) -> Result<Vec<Sample<T>>> {
        let out = self
            .ep
            .history_purged()
            .take_instance(handle, max, masks)
            .map_err(|_| Error::UnknownInstance)?;
        self.after_access();
        self.ep.resume(out.len());
        Ok(out)
    }

    /// Reads the samples of the next instance after `previous` (by handle order).
    pub fn read_next_instance(
        &self,
        previous: Option<InstanceHandle>,
        max: usize,
        masks: StateMasks,
    ) -> Result<Vec<Sample<T>>>
    where
        T: Clone,
    {
        let out = self.ep.history_purged().read_next_instance(
            previous.unwrap_or(InstanceHandle::NIL),
            max,
            masks,
        );
        self.after_access();
        Ok(out)
    }

    /// Takes the samples of the next instance after `previous` (by handle order).
    pub fn take_next_instance(
        &self,
        previous: Option<InstanceHandle>,
        max: usize,
        masks: StateMasks,
    ) -> Result<Vec<Sample<T>>> {
        let out = self.ep.history_purged().take_next_instance(
            previous.unwrap_or(InstanceHandle::NIL),
            max,
            masks,
        );
        self.after_access();
        self.ep.resume(out.len());
        Ok(out)
    }

    /// GUIDs of the writers currently matched.
    pub fn matched_publications(&self) -> Vec<Guid> {
        self.ep.matched.lock().clone()
    }

    /// The handle of the instance with `sample`'s key, if the reader knows it.
    pub fn lookup_instance(&self, sample: &T) -> Option<InstanceHandle> {
        let kh = if T::KEYED {
            cdr::key_hash(sample)
        } else {
            [0; 16]
        };
        self.ep.history_purged().lookup_instance(&kh)
    }

    /// A condition that is true while the reader holds samples matching `masks`.
    pub fn create_readcondition(&self, masks: StateMasks) -> Condition {
        let ep = Arc::downgrade(&self.ep);
        Condition::new(ConditionKind::Read, self.ep.notifier.clone(), move || {
            ep.upgrade()
                .map(|e| e.history.lock().has_matching(masks))
                .unwrap_or(false)
        })
    }

    /// A condition that is true while any status in `mask` has changed and not been read
    /// (DATA_AVAILABLE is reset by read/take).
    pub fn status_condition(&self, mask: StatusMask) -> Condition {
        let ep = Arc::downgrade(&self.ep);
        Condition::new(ConditionKind::Status, self.ep.notifier.clone(), move || {
            ep.upgrade()
                .map(|e| e.statuses.lock().changes.intersects(mask))
                .unwrap_or(false)
        })
    }

    /// Installs (or with `None` removes) a listener.
    pub fn set_listener(&self, listener: Option<Arc<dyn DataReaderListener<T>>>) {
        *self.ep.listener.lock() = listener;
    }

    /// SUBSCRIPTION_MATCHED; reading it resets the change counts.
    pub fn subscription_matched_status(&self) -> SubscriptionMatchedStatus {
        let mut s = self.ep.statuses.lock();
        let out = s.subscription_matched;
        s.subscription_matched.total_count_change = 0;
        s.subscription_matched.current_count_change = 0;
        s.changes.0 &= !StatusMask::SUBSCRIPTION_MATCHED.0;
        out
    }

    /// REQUESTED_INCOMPATIBLE_QOS; reading it resets the change count.
    pub fn requested_incompatible_qos_status(&self) -> IncompatibleQosStatus {
        let mut s = self.ep.statuses.lock();
        let out = s.requested_incompatible_qos.clone();
        s.requested_incompatible_qos.total_count_change = 0;
        s.changes.0 &= !StatusMask::REQUESTED_INCOMPATIBLE_QOS.0;
        out
    }

    /// LIVELINESS_CHANGED; reading it resets the change counts.
    pub fn liveliness_changed_status(&self) -> LivelinessChangedStatus {
        let mut s = self.ep.statuses.lock();
        let out = s.liveliness_changed;
        s.liveliness_changed.alive_count_change = 0;
        s.liveliness_changed.not_alive_count_change = 0;
        s.changes.0 &= !StatusMask::LIVELINESS_CHANGED.0;
        out
    }

    /// SAMPLE_LOST; reading it resets the change count.
    pub fn sample_lost_status(&self) -> SampleLostStatus {
        let mut s = self.ep.statuses.lock();
        let out = s.sample_lost;
        s.sample_lost.total_count_change = 0;
        s.changes.0 &= !StatusMask::SAMPLE_LOST.0;
        out
    }

    /// SAMPLE_REJECTED; reading it resets the change count.
    pub fn sample_rejected_status(&self) -> SampleRejectedStatus {
        let mut s = self.ep.statuses.lock();
        let out = s.sample_rejected;
        s.sample_rejected.total_count_change = 0;
        s.changes.0 &= !StatusMask::SAMPLE_REJECTED.0;
        out
    }
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
