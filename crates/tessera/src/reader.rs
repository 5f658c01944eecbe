//! The application's side of a data reader: [`UntypedDataReader`] hands out samples serialized,
//! [`DataReader<T>`] decodes them into `T`.
//!
//! The history keeps samples serialized; decoding happens here, in the thread that calls
//! `read`/`take`. A sample that does not decode is dropped from the result and counted
//! ([`UntypedDataReader::undecodable_samples`]); it never panics. `take` gives the payload
//! buffers of the samples it decoded back to the reader's pool, where the receive path reuses
//! them.

use crate::condition::{Condition, ConditionKind};
use crate::error::{Error, Result};
use crate::history::{History, InstanceHandle, Sample, StateMasks};
use crate::qos::DataReaderQos;
use crate::sample::{SerializedPayload, TypeSupport};
use crate::status::{
    IncompatibleQosStatus, LivelinessChangedStatus, ReaderStatuses, RequestedDeadlineMissedStatus,
    SampleLostStatus, SampleRejectedStatus, StatusMask, SubscriptionMatchedStatus,
};
use crate::subscription::{DataReaderListener, ReaderEndpoint, ReaderOwner, TypedListener};
use crate::TopicType;
use std::marker::PhantomData;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tessera_rtps::cdr;

/// A data reader that returns samples serialized (encapsulation header included) with their
/// `SampleInfo`: for dynamic types, bindings and services that store or forward bytes. Cheap to
/// clone; the reader is deleted when the last clone (typed or not) is dropped.
#[derive(Clone)]
pub struct UntypedDataReader {
    pub(crate) ep: Arc<ReaderEndpoint>,
    /// Deletes the reader when the last handle goes (`None` in listener calls).
    _owner: Option<Arc<ReaderOwner>>,
}

impl std::fmt::Debug for UntypedDataReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UntypedDataReader")
            .field("guid", &self.ep.guid)
            .field("type", &self.ep.support().type_name())
            .finish()
    }
}

impl UntypedDataReader {
    pub(crate) fn new(ep: Arc<ReaderEndpoint>, owner: Option<Arc<ReaderOwner>>) -> Self {
        UntypedDataReader { ep, _owner: owner }
    }

    /// The reader's GUID.
    pub fn guid(&self) -> tessera_rtps::types::Guid {
        self.ep.guid
    }

    /// The reader's QoS (as `set_qos` last changed it).
    pub fn qos(&self) -> DataReaderQos {
        self.ep.current_qos.lock().clone()
    }

    /// Enables a reader created by a subscriber whose ENTITY_FACTORY does not autoenable: it
    /// is announced and matched from now on (until then it receives nothing). Enabling twice
    /// does nothing.
    pub fn enable(&self) -> Result<()> {
        match &self._owner {
            Some(o) => {
                o.enable();
                Ok(())
            }
            None => Err(Error::PreconditionNotMet(
                "enable on a listener's handle of the reader".into(),
            )),
        }
    }

    /// Whether the reader is enabled (see [`UntypedDataReader::enable`]).
    pub fn is_enabled(&self) -> bool {
        self._owner.as_ref().is_none_or(|o| o.is_enabled())
    }

    /// Changes the reader's QoS. The changeable policies (DEADLINE, LATENCY_BUDGET,
    /// TIME_BASED_FILTER, USER_DATA, READER_DATA_LIFECYCLE) take effect at once and are
    /// announced again, which re-matches the reader. Changing any other policy is refused with
    /// [`Error::ImmutablePolicy`]; an inconsistent QoS with [`Error::InconsistentPolicy`].
    pub fn set_qos(&self, qos: DataReaderQos) -> Result<()> {
        qos.check_consistency()
            .map_err(|e| Error::InconsistentPolicy(e.to_string()))?;
        let Some(owner) = &self._owner else {
            return Err(Error::PreconditionNotMet(
                "set_qos on a listener's handle of the reader".into(),
            ));
        };
        let fixed = &self.ep.qos;
        crate::qos_rt::check_immutable(
            fixed,
            &qos,
            &[(
                "TYPE_CONSISTENCY_ENFORCEMENT",
                fixed.type_consistency != qos.type_consistency,
            )],
        )?;
        self.ep.apply_qos(&qos);
        owner.reannounce(&qos);
        Ok(())
    }

    /// What the reader knows of its type.
    pub fn type_support(&self) -> &Arc<dyn TypeSupport> {
        self.ep.support()
    }

    /// Samples dropped by `read`/`take` (typed) because their payload did not decode.
    pub fn undecodable_samples(&self) -> u64 {
        self.ep.undecodable.load(Ordering::Relaxed)
    }

    /// Samples the reader's content filter kept out of its history (0 for a reader made from
    /// a plain topic).
    pub fn filtered_out(&self) -> u64 {
        self.ep
            .content_filter
            .get()
            .map_or(0, |f| f.dropped.load(Ordering::Relaxed))
    }

    /// Coherent sets delivered and dropped (incomplete, abandoned by their writer, too
    /// large); all zero unless the subscriber's PRESENTATION has `coherent_access`.
    pub fn coherent_set_counters(&self) -> crate::presentation::CoherentCounters {
        self.ep
            .coherent
            .get()
            .map_or_else(Default::default, |c| c.lock().counters)
    }

    /// The reliability protocol's counters for this reader: samples delivered, refused at
    /// the resource limits, lost, duplicates, ACKNACKs sent, writers asked again after a
    /// `take` made room, ...
    pub fn protocol_counters(&self) -> tessera_rtps::reader::ReaderCounters {
        self.ep.core.lock().counters()
    }

    fn after_access(&self) {
        let mut s = self.ep.statuses.lock();
        s.changes.0 &= !StatusMask::DATA_AVAILABLE.0;
    }

    /// Runs `f`, which reads, on the history (autopurged first), then resets DATA_AVAILABLE.
    pub(crate) fn access<R>(&self, f: impl FnOnce(&mut History<SerializedPayload>) -> R) -> R {
        let out = self.ep.with_history(|h| (f(h), 0));
        self.after_access();
        out
    }

    /// Runs `f`, which takes, on the history (autopurged first), then resets DATA_AVAILABLE.
    /// `taken` tells how many samples `f`'s result removed: room made for samples the history
    /// refused, which their writers are then asked for again (every take path comes here).
    pub(crate) fn take_access<R>(
        &self,
        f: impl FnOnce(&mut History<SerializedPayload>) -> R,
        taken: impl FnOnce(&R) -> usize,
    ) -> R {
        let out = self.ep.with_history(|h| {
            let out = f(h);
            let n = taken(&out);
            (out, n)
        });
        self.after_access();
        out
    }

    /// Reads up to `max` samples whose states match `masks`, serialized, leaving them in the
    /// reader (marked READ). The bytes are shared with the reader, not copied (a sample that
    /// came as a zero-copy loan is serialized from shared memory).
    pub fn read_serialized(
        &self,
        max: usize,
        masks: StateMasks,
    ) -> Result<Vec<Sample<SerializedPayload>>> {
        let mut v = self.read_held(max, masks);
        self.serialize_loans(&mut v, 0);
        Ok(v)
    }

    /// Takes up to `max` samples whose states match `masks`, serialized.
    pub fn take_serialized(
        &self,
        max: usize,
        masks: StateMasks,
    ) -> Result<Vec<Sample<SerializedPayload>>> {
        let mut v = self.take_held(max, masks);
        self.serialize_loans(&mut v, 0);
        Ok(v)
    }

    /// Takes up to `max` samples into `out` (appending), serialized; returns how many. No
    /// allocation when `out` has room.
    pub fn take_serialized_into(
        &self,
        out: &mut Vec<Sample<SerializedPayload>>,
        max: usize,
    ) -> usize {
        let start = out.len();
        self.take_access(|h| h.take_into(out, max), |n| *n);
        self.serialize_loans(out, start);
        out.len() - start
    }

    /// [`Self::read_serialized`] with loaned samples still referencing their chunks (their
    /// payload is the reference, the hold keeps the chunk).
    pub(crate) fn read_held(
        &self,
        max: usize,
        masks: StateMasks,
    ) -> Vec<Sample<SerializedPayload>> {
        self.access(|h| h.read(max, masks))
    }

    /// [`Self::take_serialized`] with loaned samples still referencing their chunks.
    pub(crate) fn take_held(
        &self,
        max: usize,
        masks: StateMasks,
    ) -> Vec<Sample<SerializedPayload>> {
        self.take_access(|h| h.take(max, masks), Vec::len)
    }

    /// Replaces each loan reference in `samples[from..]` by the sample's CDR: whoever asks
    /// for bytes gets bytes any reader of the type decodes, never a reference into this
    /// process's mappings. A reference the reader cannot resolve is dropped and counted
    /// undecodable (only readers that resolve references are sent them).
    fn serialize_loans(&self, samples: &mut Vec<Sample<SerializedPayload>>, from: usize) {
        if !samples[from..]
            .iter()
            .any(|s| s.data.as_ref().is_some_and(|p| p.loan().is_some()))
        {
            return;
        }
        let mut i = from;
        while i < samples.len() {
            let cdr = match samples[i].data.as_ref().and_then(|p| p.loan()) {
                None => {
                    i += 1;
                    continue;
                }
                Some(hold) => match self.ep.loans.get() {
                    Some(r) => r.serialize(hold),
                    None => Err(crate::loan::ChunkHold::unresolvable()),
                },
            };
            match cdr {
                Ok(bytes) => {
                    samples[i].data = Some(SerializedPayload::new(bytes));
                    i += 1;
                }
                Err(e) => {
                    self.ep.count_undecodable(&e);
                    samples.remove(i);
                }
            }
        }
    }

    /// Gives payloads that the caller is done with back to the reader, which reuses their
    /// buffers for arriving samples (optional; dropping them is fine).
    pub fn recycle(&self, payloads: impl IntoIterator<Item = SerializedPayload>) {
        for p in payloads {
            self.ep.pool.recycle(p);
        }
    }

    /// Sends every sample to `sink` (on the receive thread, with its writer's GUID and
    /// sequence number: the original ones for a sample a durability service relayed) instead
    /// of the history; `None` goes back to the history. What a durability service stores.
    pub fn set_sample_sink(&self, sink: Option<Arc<dyn crate::SampleSink>>) {
        self.ep.set_sink(sink);
    }

    /// Moves the acknowledgment hold on `writer` (the GUID of the writer that sent the samples
    /// a sink answered [`SinkVerdict::Held`](crate::SinkVerdict::Held) for) to the sequence
    /// number `hold` returns, or lifts it (`None`): what is below it is acknowledged to the
    /// writer at once. `hold` runs under the reader's protocol lock, the one the sink's
    /// `offer` runs under, so it sees every sample held so far; it must not block.
    pub fn set_acknowledgment_hold(
        &self,
        writer: tessera_rtps::types::Guid,
        hold: impl FnOnce() -> Option<tessera_rtps::types::SequenceNumber>,
    ) {
        self.ep.set_acknowledgment_hold(writer, hold);
    }

    /// Asks the writers of samples this reader refused (its sink returned `false`, or its
    /// history had no room) to send them again now rather than at their next heartbeat: a
    /// sink calls it once it can take them.
    pub fn request_refused_samples(&self) {
        self.ep.resume(1);
    }

    /// Samples dropped because the same original writer and sequence number was delivered
    /// before (TRANSIENT and PERSISTENT readers: from the live writer and a durability
    /// service, or from two services).
    pub fn duplicates_dropped(&self) -> u64 {
        self.ep.duplicates_dropped()
    }

    /// Waits until the historical data of the writers matched so far is in: every reliable
    /// matched writer (a durability service's included) announced its history with a
    /// HEARTBEAT and every sample it announced was received (or is known lost). Returns at
    /// once when no writer is matched. [`Error::Timeout`] after `timeout`.
    pub fn wait_for_historical_data(&self, timeout: std::time::Duration) -> Result<()> {
        let start = std::time::Instant::now();
        let deadline = crate::publication::far_deadline(start, timeout);
        loop {
            if self.ep.core.lock().historical_data_received() {
                return Ok(());
            }
            let now = std::time::Instant::now();
            if now >= deadline {
                return Err(crate::Error::Timeout);
            }
            std::thread::sleep(std::time::Duration::from_millis(2).min(deadline - now));
        }
    }

    /// The handle of the instance with this key hash, if the reader knows it.
    pub fn lookup_instance_by_key_hash(&self, key_hash: &[u8; 16]) -> Option<InstanceHandle> {
        self.ep.with_history(|h| (h.lookup_instance(key_hash), 0))
    }

    /// GUIDs of the writers currently matched.
    pub fn matched_publications(&self) -> Vec<tessera_rtps::types::Guid> {
        self.ep.matched.lock().clone()
    }

    /// GUIDs of the matched writers whose liveliness holds now (LIVELINESS_CHANGED's
    /// `alive_count`, writer by writer): a manual writer that let its lease run out is matched
    /// but not alive until it asserts itself again.
    pub fn alive_publications(&self) -> Vec<tessera_rtps::types::Guid> {
        let matched = self.ep.matched.lock().clone();
        let policies = self.ep.policies.lock();
        matched
            .into_iter()
            .filter(|g| policies.writer_alive(&g.to_bytes()))
            .collect()
    }

    /// The participant, unless this is a listener's or a built-in reader's handle.
    pub(crate) fn owning_participant(&self) -> Option<&crate::DomainParticipant> {
        self._owner.as_ref().map(|o| o.participant())
    }

    /// Installs (or with `None` removes) a listener told which statuses changed, on the
    /// thread that changed them (a receive thread, or a local writer's). The type-erased
    /// counterpart of [`DataReader::set_listener`], for bindings (Python's) whose listeners
    /// fetch the statuses and samples themselves.
    pub fn set_status_listener(&self, listener: Option<Arc<dyn Fn(StatusMask) + Send + Sync>>) {
        *self.ep.listener.lock() =
            listener.map(|l| Arc::new(crate::subscription::MaskListener(l)) as _);
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

    /// Runs `f` on the statuses and clears the change flag of `mask`.
    fn read_status<R>(&self, mask: StatusMask, f: impl FnOnce(&mut ReaderStatuses) -> R) -> R {
        let mut s = self.ep.statuses.lock();
        s.changes.0 &= !mask.0;
        f(&mut s)
    }

    /// SUBSCRIPTION_MATCHED; reading it resets the change counts.
    pub fn subscription_matched_status(&self) -> SubscriptionMatchedStatus {
        self.read_status(StatusMask::SUBSCRIPTION_MATCHED, |s| {
            let st = &mut s.subscription_matched;
            let out = *st;
            (st.total_count_change, st.current_count_change) = (0, 0);
            out
        })
    }

    /// REQUESTED_INCOMPATIBLE_QOS; reading it resets the change count.
    pub fn requested_incompatible_qos_status(&self) -> IncompatibleQosStatus {
        self.read_status(StatusMask::REQUESTED_INCOMPATIBLE_QOS, |s| {
            let out = s.requested_incompatible_qos.clone();
            s.requested_incompatible_qos.total_count_change = 0;
            out
        })
    }

    /// LIVELINESS_CHANGED; reading it resets the change counts.
    pub fn liveliness_changed_status(&self) -> LivelinessChangedStatus {
        self.read_status(StatusMask::LIVELINESS_CHANGED, |s| {
            let st = &mut s.liveliness_changed;
            let out = *st;
            (st.alive_count_change, st.not_alive_count_change) = (0, 0);
            out
        })
    }

    /// SAMPLE_LOST; reading it resets the change count.
    pub fn sample_lost_status(&self) -> SampleLostStatus {
        self.read_status(StatusMask::SAMPLE_LOST, |s| {
            let out = s.sample_lost;
            s.sample_lost.total_count_change = 0;
            out
        })
    }

    /// SAMPLE_REJECTED; reading it resets the change count.
    pub fn sample_rejected_status(&self) -> SampleRejectedStatus {
        self.read_status(StatusMask::SAMPLE_REJECTED, |s| {
            let out = s.sample_rejected;
            s.sample_rejected.total_count_change = 0;
            out
        })
    }

    /// REQUESTED_DEADLINE_MISSED; reading it resets the change count.
    pub fn requested_deadline_missed_status(&self) -> RequestedDeadlineMissedStatus {
        self.read_status(StatusMask::REQUESTED_DEADLINE_MISSED, |s| {
            let out = s.requested_deadline_missed;
            s.requested_deadline_missed.total_count_change = 0;
            out
        })
    }

    /// Samples the QoS policies kept out of the history: (expired on arrival under the
    /// writer's LIFESPAN, dropped because another writer owns the instance under exclusive
    /// OWNERSHIP, dropped by the TIME_BASED_FILTER).
    pub fn policy_drops(&self) -> PolicyDrops {
        let p = self.ep.policies.lock();
        PolicyDrops {
            expired: p.expired,
            not_owner: p.not_owner_drops(),
            filtered: p.filtered,
        }
    }

    /// Decodes `src` (drained) into `out`; undecodable samples are counted and left out. With
    /// `recycle` (take), payload buffers go back to the pool.
    fn decode_into<T: TopicType>(
        &self,
        src: impl Iterator<Item = Sample<SerializedPayload>>,
        out: &mut Vec<Sample<T>>,
        recycle: bool,
    ) -> usize {
        let mut n = 0;
        for Sample { data, info } in src {
            let data = match data {
                None => None,
                Some(p) => {
                    let decoded = p.decode::<T>();
                    if recycle {
                        self.ep.pool.recycle(p);
                    }
                    match decoded {
                        Ok(t) => Some(t),
                        Err(e) => {
                            self.ep.count_undecodable(&e);
                            continue;
                        }
                    }
                }
            };
            out.push(Sample { data, info });
            n += 1;
        }
        n
    }

    /// [`Self::decode_into`] over the samples `out` holds: the `i`-th taken sample is decoded
    /// into `out[i]` where there is one (its sequences and strings keep their buffers), pushed
    /// otherwise; returns how many were taken (the valid prefix of `out`). Payload buffers go
    /// back to the pool.
    fn decode_reusing<T: TopicType>(
        &self,
        src: impl Iterator<Item = Sample<SerializedPayload>>,
        out: &mut Vec<Sample<T>>,
    ) -> usize {
        let mut n = 0;
        for Sample { data, info } in src {
            let Some(p) = data else {
                // A dispose or unregister without data: nothing to reuse.
                put_at(out, n, Sample { data: None, info });
                n += 1;
                continue;
            };
            let decoded = match out.get_mut(n) {
                Some(Sample {
                    data: Some(old),
                    info: slot_info,
                }) => p.decode_in_place(old).map(|()| *slot_info = info),
                _ => p.decode::<T>().map(|t| {
                    put_at(
                        out,
                        n,
                        Sample {
                            data: Some(t),
                            info,
                        },
                    )
                }),
            };
            self.ep.pool.recycle(p);
            match decoded {
                Ok(()) => n += 1,
                // The slot is overwritten by the next sample or left past the valid prefix.
                Err(e) => self.ep.count_undecodable(&e),
            }
        }
        n
    }

    pub(crate) fn decoded<T: TopicType>(
        &self,
        src: Vec<Sample<SerializedPayload>>,
        recycle: bool,
    ) -> Vec<Sample<T>> {
        let mut out = Vec::with_capacity(src.len());
        self.decode_into(src.into_iter(), &mut out, recycle);
        out
    }
}

/// A typed data reader: decodes samples at `read`/`take` time. Cheap to clone; the reader is
/// deleted when the last clone is dropped.
pub struct DataReader<T: TopicType> {
    pub(crate) raw: UntypedDataReader,
    _type: PhantomData<fn() -> T>,
}

impl<T: TopicType> Clone for DataReader<T> {
    fn clone(&self) -> Self {
        DataReader::from_raw(self.raw.clone())
    }
}

impl<T: TopicType> std::fmt::Debug for DataReader<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DataReader")
            .field("guid", &self.raw.ep.guid)
            .finish()
    }
}

impl<T: TopicType> DataReader<T> {
    pub(crate) fn from_raw(raw: UntypedDataReader) -> Self {
        DataReader {
            raw,
            _type: PhantomData,
        }
    }

    /// The same reader, untyped: its samples as bytes.
    pub fn untyped(&self) -> &UntypedDataReader {
        &self.raw
    }

    /// The reader's GUID.
    pub fn guid(&self) -> tessera_rtps::types::Guid {
        self.raw.guid()
    }

    /// The reader's QoS (as `set_qos` last changed it).
    pub fn qos(&self) -> DataReaderQos {
        self.raw.qos()
    }

    /// Enables the reader (see [`UntypedDataReader::enable`]).
    pub fn enable(&self) -> Result<()> {
        self.raw.enable()
    }

    /// Whether the reader is enabled.
    pub fn is_enabled(&self) -> bool {
        self.raw.is_enabled()
    }

    /// Changes the reader's QoS (see [`UntypedDataReader::set_qos`]).
    pub fn set_qos(&self, qos: DataReaderQos) -> Result<()> {
        self.raw.set_qos(qos)
    }

    /// Samples dropped by `read`/`take` because their payload did not decode as `T`.
    pub fn undecodable_samples(&self) -> u64 {
        self.raw.undecodable_samples()
    }

    /// Samples the reader's content filter kept out of its history.
    pub fn filtered_out(&self) -> u64 {
        self.raw.filtered_out()
    }

    /// Coherent sets delivered and dropped (see
    /// [`UntypedDataReader::coherent_set_counters`]).
    pub fn coherent_set_counters(&self) -> crate::presentation::CoherentCounters {
        self.raw.coherent_set_counters()
    }

    /// The reliability protocol's counters for this reader (see
    /// [`UntypedDataReader::protocol_counters`]).
    pub fn protocol_counters(&self) -> tessera_rtps::reader::ReaderCounters {
        self.raw.protocol_counters()
    }

    /// Reads up to `max` samples in any state, leaving them in the reader (marked READ).
    pub fn read(&self, max: usize) -> Result<Vec<Sample<T>>> {
        self.read_with(max, StateMasks::ANY)
    }

    /// Takes up to `max` samples in any state, removing them from the reader.
    pub fn take(&self, max: usize) -> Result<Vec<Sample<T>>> {
        self.take_with(max, StateMasks::ANY)
    }

    /// Reads samples whose states match `masks`.
    pub fn read_with(&self, max: usize, masks: StateMasks) -> Result<Vec<Sample<T>>> {
        let s = self.raw.read_serialized(max, masks)?;
        Ok(self.raw.decoded(s, false))
    }

    /// Takes samples whose states match `masks`.
    pub fn take_with(&self, max: usize, masks: StateMasks) -> Result<Vec<Sample<T>>> {
        let s = self.raw.take_serialized(max, masks)?;
        Ok(self.raw.decoded(s, true))
    }

    /// Takes up to `max` samples into `out` (appending); returns how many. No allocation when
    /// `out` has room beyond what decoding `T` itself allocates (its sequences and strings):
    /// the serialized samples pass through a scratch vector the reader reuses, and their
    /// buffers go back to the reader's pool. The fast path for high-rate readers.
    pub fn take_into(&self, out: &mut Vec<Sample<T>>, max: usize) -> usize {
        self.take_scratch(max, |raw, taken| raw.decode_into(taken, out, true))
    }

    /// Takes up to `max` samples into `buf`, replacing what it held; returns how many. The
    /// samples are decoded into the ones `buf` kept from earlier takes, so their sequences and
    /// strings keep their buffers: a reader that takes into the same buffer over and over
    /// allocates nothing once those have grown to the samples' sizes. [`Self::take_into`]
    /// appends to a `Vec` instead.
    pub fn take_reusing(&self, buf: &mut SampleBuffer<T>, max: usize) -> usize {
        buf.len = self.take_scratch(max, |raw, taken| raw.decode_reusing(taken, &mut buf.items));
        buf.len
    }

    /// Takes up to `max` serialized samples into the reader's scratch vector and hands them,
    /// drained, to `decode`.
    fn take_scratch(
        &self,
        max: usize,
        decode: impl FnOnce(&UntypedDataReader, std::vec::Drain<'_, Sample<SerializedPayload>>) -> usize,
    ) -> usize {
        let ep = &self.raw.ep;
        // Concurrent takers on clones of one reader: the second one uses its own vector.
        let mut own = Vec::new();
        let mut guard = ep.scratch.try_lock();
        let scratch = match guard.as_deref_mut() {
            Some(s) => s,
            None => &mut own,
        };
        scratch.clear();
        self.raw.take_serialized_into(scratch, max);
        decode(&self.raw, scratch.drain(..))
    }

    /// Reads the samples of one instance.
    pub fn read_instance(
        &self,
        handle: InstanceHandle,
        max: usize,
        masks: StateMasks,
    ) -> Result<Vec<Sample<T>>> {
        let s = self
            .raw
            .access(|h| h.read_instance(handle, max, masks))
            .map_err(|_| Error::UnknownInstance)?;
        Ok(self.raw.decoded(s, false))
    }

    /// Takes the samples of one instance.
    pub fn take_instance(
        &self,
        handle: InstanceHandle,
        max: usize,
        masks: StateMasks,
    ) -> Result<Vec<Sample<T>>> {
        let s = self
            .raw
            .take_access(
                |h| h.take_instance(handle, max, masks),
                |r| r.as_ref().map_or(0, Vec::len),
            )
            .map_err(|_| Error::UnknownInstance)?;
        Ok(self.raw.decoded(s, true))
    }

    /// Reads the samples of the next instance after `previous` (by handle order).
    pub fn read_next_instance(
        &self,
        previous: Option<InstanceHandle>,
        max: usize,
        masks: StateMasks,
    ) -> Result<Vec<Sample<T>>> {
        let prev = previous.unwrap_or(InstanceHandle::NIL);
        let s = self.raw.access(|h| h.read_next_instance(prev, max, masks));
        Ok(self.raw.decoded(s, false))
    }

    /// Takes the samples of the next instance after `previous` (by handle order).
    pub fn take_next_instance(
        &self,
        previous: Option<InstanceHandle>,
        max: usize,
        masks: StateMasks,
    ) -> Result<Vec<Sample<T>>> {
        let prev = previous.unwrap_or(InstanceHandle::NIL);
        let s = self
            .raw
            .take_access(|h| h.take_next_instance(prev, max, masks), Vec::len);
        Ok(self.raw.decoded(s, true))
    }

    /// See [`UntypedDataReader::wait_for_historical_data`].
    pub fn wait_for_historical_data(&self, timeout: std::time::Duration) -> Result<()> {
        self.raw.wait_for_historical_data(timeout)
    }

    /// See [`UntypedDataReader::duplicates_dropped`].
    pub fn duplicates_dropped(&self) -> u64 {
        self.raw.duplicates_dropped()
    }

    /// GUIDs of the writers currently matched.
    pub fn matched_publications(&self) -> Vec<tessera_rtps::types::Guid> {
        self.raw.matched_publications()
    }

    /// See [`UntypedDataReader::alive_publications`].
    pub fn alive_publications(&self) -> Vec<tessera_rtps::types::Guid> {
        self.raw.alive_publications()
    }

    /// The handle of the instance with `sample`'s key, if the reader knows it.
    pub fn lookup_instance(&self, sample: &T) -> Option<InstanceHandle> {
        self.raw.lookup_instance_by_key_hash(&cdr::key_hash(sample))
    }

    /// A condition that is true while the reader holds samples matching `masks`.
    pub fn create_readcondition(&self, masks: StateMasks) -> Condition {
        self.raw.create_readcondition(masks)
    }

    /// A condition that is true while any status in `mask` has changed and not been read
    /// (DATA_AVAILABLE is reset by read/take).
    pub fn status_condition(&self, mask: StatusMask) -> Condition {
        self.raw.status_condition(mask)
    }

    /// Installs (or with `None` removes) a listener.
    pub fn set_listener(&self, listener: Option<Arc<dyn DataReaderListener<T>>>) {
        *self.raw.ep.listener.lock() = listener.map(|l| Arc::new(TypedListener(l)) as _);
    }

    /// SUBSCRIPTION_MATCHED; reading it resets the change counts.
    pub fn subscription_matched_status(&self) -> SubscriptionMatchedStatus {
        self.raw.subscription_matched_status()
    }

    /// REQUESTED_INCOMPATIBLE_QOS; reading it resets the change count.
    pub fn requested_incompatible_qos_status(&self) -> IncompatibleQosStatus {
        self.raw.requested_incompatible_qos_status()
    }

    /// LIVELINESS_CHANGED; reading it resets the change counts.
    pub fn liveliness_changed_status(&self) -> LivelinessChangedStatus {
        self.raw.liveliness_changed_status()
    }

    /// SAMPLE_LOST; reading it resets the change count.
    pub fn sample_lost_status(&self) -> SampleLostStatus {
        self.raw.sample_lost_status()
    }

    /// SAMPLE_REJECTED; reading it resets the change count.
    pub fn sample_rejected_status(&self) -> SampleRejectedStatus {
        self.raw.sample_rejected_status()
    }

    /// REQUESTED_DEADLINE_MISSED; reading it resets the change count.
    pub fn requested_deadline_missed_status(&self) -> RequestedDeadlineMissedStatus {
        self.raw.requested_deadline_missed_status()
    }

    /// Samples the QoS policies kept out of the history (see
    /// [`UntypedDataReader::policy_drops`]).
    pub fn policy_drops(&self) -> PolicyDrops {
        self.raw.policy_drops()
    }
}

/// Samples a reader's QoS policies kept out of its history
/// ([`UntypedDataReader::policy_drops`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PolicyDrops {
    /// Expired on arrival (LIFESPAN).
    pub expired: u64,
    /// Another writer owned the instance (exclusive OWNERSHIP).
    pub not_owner: u64,
    /// Within the TIME_BASED_FILTER minimum separation.
    pub filtered: u64,
}

/// Stores `v` at `out[n]`, `n` being at most `out.len()`.
fn put_at<V>(out: &mut Vec<V>, n: usize, v: V) {
    match out.get_mut(n) {
        Some(slot) => *slot = v,
        None => out.push(v),
    }
}

/// Samples taken with [`DataReader::take_reusing`], in memory kept from one take to the next: it
/// dereferences to the samples of the last take, and keeps the values of earlier, larger takes
/// (with their sequence and string buffers) to decode the next ones into.
pub struct SampleBuffer<T> {
    items: Vec<Sample<T>>,
    len: usize,
}

impl<T> SampleBuffer<T> {
    /// An empty buffer; it grows to the largest take made into it.
    pub fn new() -> Self {
        SampleBuffer {
            items: Vec::new(),
            len: 0,
        }
    }

    /// Forgets the samples of the last take (their memory is kept for the next one).
    pub fn clear(&mut self) {
        self.len = 0;
    }

    /// Frees the memory kept beyond the samples of the last take.
    pub fn shrink(&mut self) {
        self.items.truncate(self.len);
        self.items.shrink_to_fit();
    }
}

impl<T> From<Vec<Sample<T>>> for SampleBuffer<T> {
    fn from(items: Vec<Sample<T>>) -> Self {
        let len = items.len();
        SampleBuffer { items, len }
    }
}

impl<T> Default for SampleBuffer<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> std::ops::Deref for SampleBuffer<T> {
    type Target = [Sample<T>];
    fn deref(&self) -> &[Sample<T>] {
        &self.items[..self.len]
    }
}

impl<T> std::ops::DerefMut for SampleBuffer<T> {
    fn deref_mut(&mut self) -> &mut [Sample<T>] {
        &mut self.items[..self.len]
    }
}

impl<'a, T> IntoIterator for &'a SampleBuffer<T> {
    type Item = &'a Sample<T>;
    type IntoIter = std::slice::Iter<'a, Sample<T>>;
    fn into_iter(self) -> Self::IntoIter {
        self[..].iter()
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for SampleBuffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}
