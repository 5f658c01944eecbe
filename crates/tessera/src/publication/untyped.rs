//! [`UntypedDataWriter`]: a writer of serialized samples (encapsulation header included), for
//! services that forward or replay samples of any type (durability, per-node services) and
//! for the dynamic writer built on it.

use super::{instance_handle, now_nanos, Publisher, WriterEndpoint, WriterOwner, STATUS_DISPOSED};
use crate::error::{Error, Result};
use crate::history::InstanceHandle;
use crate::qos::DataWriterQos;
use crate::sample::TypeSupport;
use crate::status::PublicationMatchedStatus;
use crate::topic::UntypedTopic;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tessera_rtps::cdr;
use tessera_rtps::types::Guid;

/// A data writer that takes samples already serialized, with their encapsulation header. It
/// matches readers like a typed writer of the same topic; the key hash of each sample comes
/// from the topic's [`TypeSupport`]. Cheap to clone; the writer is deleted when the last clone
/// is dropped.
///
/// The bytes are sent as given: the caller picks the encoding ([`encoding`](Self::encoding)
/// tells the one the writer's DATA_REPRESENTATION announces, which readers of other vendors
/// expect).
#[derive(Clone)]
pub struct UntypedDataWriter {
    pub(crate) ep: Arc<WriterEndpoint>,
    owner: Option<Arc<WriterOwner>>,
    support: Arc<dyn TypeSupport>,
}

impl std::fmt::Debug for UntypedDataWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UntypedDataWriter")
            .field("guid", &self.ep.guid)
            .field("type", &self.support.type_name())
            .finish()
    }
}

impl Publisher {
    /// Creates a writer of serialized samples for `topic` (a typed topic's
    /// [`untyped`](crate::Topic::untyped) view, or a dynamic topic's).
    pub fn create_untyped_datawriter(
        &self,
        topic: &UntypedTopic,
        qos: DataWriterQos,
    ) -> Result<UntypedDataWriter> {
        let (ep, owner) = self.create_writer(&topic.inner, topic.support.is_keyed(), qos)?;
        Ok(UntypedDataWriter {
            ep,
            owner: Some(owner),
            support: topic.support.clone(),
        })
    }
}

impl UntypedDataWriter {
    /// The writer's GUID.
    pub fn guid(&self) -> Guid {
        self.ep.guid
    }

    /// What the writer knows of its type.
    pub fn type_support(&self) -> &Arc<dyn TypeSupport> {
        &self.support
    }

    /// The encoding the writer's DATA_REPRESENTATION announces (XCDR2 if it lists XCDR2
    /// first, else XCDR1), little-endian: what to serialize samples in.
    pub fn encoding(&self) -> cdr::Encoding {
        if self.ep.xcdr2 {
            cdr::Encoding::XCDR2_LE
        } else {
            cdr::Encoding::XCDR1_LE
        }
    }

    /// Publishes a serialized sample (encapsulation header included), stamped now.
    pub fn write_serialized(&self, payload: &[u8]) -> Result<()> {
        self.write_serialized_with_timestamp(payload, now_nanos())
    }

    /// Publishes a serialized sample with an explicit source timestamp (ns since the Unix
    /// epoch). A payload whose key cannot be read is refused with [`Error::BadParameter`].
    pub fn write_serialized_with_timestamp(&self, payload: &[u8], source_ns: i64) -> Result<()> {
        let key_hash = self.track(payload)?;
        self.ep.submit(
            Arc::new(tessera_rtps::copy::to_vec(payload)),
            key_hash,
            0,
            false,
            source_ns,
        )
    }

    /// Publishes a sample on behalf of its original writer `original` (GUID and sequence
    /// number), as a durability service replays what it stored: the DATA carries
    /// PID_ORIGINAL_WRITER_INFO, and TRANSIENT/PERSISTENT readers deliver it as the original
    /// writer's, once. `status_info` 0 publishes `payload` as a sample; 1 (disposed) and/or 2
    /// (unregistered) send `payload` as the instance's serialized key (`key_hash` names the
    /// instance and is trusted: the service computed it when it stored the sample).
    pub fn write_relayed(
        &self,
        payload: &[u8],
        key_hash: [u8; 16],
        status_info: u32,
        source_ns: i64,
        original: (Guid, tessera_rtps::types::SequenceNumber),
    ) -> Result<()> {
        if original.1 < 1 || !original.0.entity_id.is_writer() {
            return Err(Error::BadParameter(
                "original writer info needs a writer GUID and a sequence number from 1".into(),
            ));
        }
        if status_info & !3 != 0 {
            return Err(Error::BadParameter(format!("status info {status_info:#x}")));
        }
        let key = self.support.is_keyed().then_some(key_hash);
        self.ep
            .submit_with(
                Arc::new(tessera_rtps::copy::to_vec(payload)),
                key,
                status_info,
                status_info != 0,
                source_ns,
                None,
                Some(original),
            )
            .map(drop)
    }

    /// Registers the instance of a serialized sample and returns its handle (no data sent).
    pub fn register_serialized(&self, payload: &[u8]) -> Result<InstanceHandle> {
        Ok(instance_handle(&self.track(payload)?.unwrap_or([0; 16])))
    }

    /// The key hash of `payload`, remembering its instance to unregister at deletion.
    fn track(&self, payload: &[u8]) -> Result<Option<[u8; 16]>> {
        cdr::parse_payload(payload).map_err(|e| Error::BadParameter(e.to_string()))?;
        if !self.support.is_keyed() {
            self.ep.track_keyless();
            return Ok(None);
        }
        let kh = self
            .support
            .key_hash_of_sample(payload)
            .map_err(|e| Error::BadParameter(format!("key of the sample: {e}")))?;
        let known = self.ep.instances.contains(&kh);
        if !known {
            if let Some(key) = self.support.key_payload_of_sample(payload) {
                self.ep.instances.note(kh, || Arc::new(key));
            }
        }
        Ok(Some(kh))
    }

    /// Disposes the instance of a serialized key (a key-only payload, encapsulation header
    /// included, as a dispose carries it).
    pub fn dispose_serialized(&self, key_payload: &[u8]) -> Result<()> {
        self.write_key_only(key_payload, STATUS_DISPOSED).map(drop)
    }

    /// Unregisters the instance of a serialized key; with WRITER_DATA_LIFECYCLE
    /// `autodispose_unregistered_instances` (the default) this disposes it too.
    pub fn unregister_serialized(&self, key_payload: &[u8]) -> Result<()> {
        let kh = self.write_key_only(key_payload, self.ep.unregister_status())?;
        self.ep.instances.remove(&kh);
        Ok(())
    }

    fn write_key_only(&self, key_payload: &[u8], status: u32) -> Result<[u8; 16]> {
        if !self.support.is_keyed() {
            return Err(Error::PreconditionNotMet(
                "dispose/unregister on a keyless topic".into(),
            ));
        }
        let kh = self
            .support
            .key_hash_of_key(key_payload)
            .map_err(|e| Error::BadParameter(format!("key payload: {e}")))?;
        self.ep.submit(
            Arc::new(key_payload.to_vec()),
            Some(kh),
            status,
            true,
            now_nanos(),
        )?;
        Ok(kh)
    }

    /// Batches samples into shared datagrams, as [`DataWriter::set_batching`] does (a node
    /// service bundles the samples of many applications this way).
    ///
    /// [`DataWriter::set_batching`]: crate::DataWriter::set_batching
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

    /// GUIDs of the readers currently matched.
    pub fn matched_subscriptions(&self) -> Vec<Guid> {
        self.ep.matched.lock().clone()
    }

    /// Asserts this writer's liveliness, as [`crate::DataWriter::assert_liveliness`] does
    /// (MANUAL_BY_PARTICIPANT asserts the whole participant).
    pub fn assert_liveliness(&self) -> Result<()> {
        super::policies::assert_writer_liveliness(self.owner.as_deref(), &self.ep)
    }

    /// Blocks until every matched reliable reader acknowledged every sample written so far.
    pub fn wait_for_acknowledgments(&self, timeout: Duration) -> Result<()> {
        self.ep.wait_acked(timeout)
    }

    /// A condition that is true while any status in `mask` has changed and not been read,
    /// as [`crate::DataWriter::status_condition`].
    pub fn status_condition(&self, mask: crate::StatusMask) -> crate::Condition {
        self.ep.status_condition(mask)
    }

    /// PUBLICATION_MATCHED; reading it resets the change counts.
    pub fn publication_matched_status(&self) -> PublicationMatchedStatus {
        self.ep.take_publication_matched()
    }

    /// OFFERED_INCOMPATIBLE_QOS; reading it resets the change count.
    pub fn offered_incompatible_qos_status(&self) -> crate::status::IncompatibleQosStatus {
        self.ep.take_offered_incompatible_qos()
    }

    /// OFFERED_DEADLINE_MISSED; reading it resets the change count.
    pub fn offered_deadline_missed_status(&self) -> crate::status::OfferedDeadlineMissedStatus {
        self.ep.take_offered_deadline_missed()
    }

    /// LIVELINESS_LOST; reading it resets the change count.
    pub fn liveliness_lost_status(&self) -> crate::status::LivelinessLostStatus {
        self.ep.take_liveliness_lost()
    }

    /// Whether the writer is enabled (ENTITY_FACTORY).
    pub fn is_enabled(&self) -> bool {
        self.ep.enabled.load(Ordering::Relaxed)
    }
}
