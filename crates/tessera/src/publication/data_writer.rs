//! [`DataWriter`]'s typed API: writing, disposing and registering instances, batching,
//! acknowledgments, statuses and the listener.

use super::{instance_handle, now_nanos, DataWriter, DataWriterListener};
use super::{ErasedWriterListener, InstanceHandle, WriterEndpoint, STATUS_DISPOSED};
use crate::condition::Condition;
use crate::error::{Error, Result};
use crate::participant::DomainParticipant;
use crate::status::{IncompatibleQosStatus, PublicationMatchedStatus, StatusMask};
use crate::TopicType;
use std::marker::PhantomData;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tessera_rtps::cdr;
use tessera_rtps::types::Guid;

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
