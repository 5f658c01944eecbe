//! Redundant services kept identical by consensus ([`ServiceConfig::replicated`]).
//!
//! Replicated services on a domain share one log: an ATOMIC topic ([`LOG_TOPIC`]), so they
//! form one consensus group (`tessera-atomic`, the machinery of the Consistency QoS). A
//! service does not store what its readers receive; it proposes it to the log and stores what
//! the log delivers, in log order, like every other member. Every service therefore applies
//! the same entries in the same order to the same deterministic [`TopicStore`] rules and ends
//! with the same samples, whichever of them heard a writer. When several services propose the
//! same sample, the log holds it once per proposer and the store's per-writer high-water mark
//! drops the later copies, at every member alike.
//!
//! Of the services that follow a topic, the one with the lowest participant GUID proposes at
//! once; the others wait 10 ms for it first, so a sample usually enters the log once.
//!
//! A received sample is acknowledged to its writer only once the log applied it here and,
//! PERSISTENT, it is on disk: until then [`crate::service`]'s sink refuses it (after a short
//! wait for the commit) and the writer keeps it and sends it again. An acknowledged sample is
//! therefore kept by a majority of the services, and by every one of them that stays up.
//!
//! [`ServiceConfig::replicated`]: crate::ServiceConfig::replicated
//! [`TopicStore`]: crate::TopicStore

use crate::store::StoredSample;
use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tessera::qos::{
    Consistency, DataReaderQos, DataWriterQos, History, PublisherQos, Reliability, SubscriberQos,
    TopicQos,
};
use tessera::rtps::types::{Guid, GuidPrefix};
use tessera::{DataReader, DataWriter, DomainParticipant, TopicType};

/// How long a service that is not the designated proposer waits for the log to apply a
/// received sample before proposing it itself (the designated one may not have it yet, or be
/// gone).
pub(crate) const PROPOSER_GRACE: Duration = Duration::from_millis(10);

/// The topic of the replicated services' log (ATOMIC, keyless).
pub const LOG_TOPIC: &str = "TesseraDurabilityLog";

/// One log entry: a sample some service received, with its original writer's identity.
#[derive(TopicType, Debug, Clone, PartialEq)]
pub struct LogEntry {
    /// The topic it was written on.
    pub topic: String,
    /// The original writer's GUID (16 bytes).
    pub writer: Vec<u8>,
    /// Its sequence number.
    pub sequence_number: i64,
    /// The instance (16 bytes).
    pub key_hash: Vec<u8>,
    /// PID_STATUS_INFO flags (1 disposed, 2 unregistered).
    pub status_info: u32,
    /// Source timestamp (ns since the epoch).
    pub source_timestamp: i64,
    /// Serialized sample, or key for a dispose (encapsulation header included).
    pub payload: Vec<u8>,
}

impl LogEntry {
    /// The entry for `sample` of `topic`.
    pub fn of(topic: &str, sample: &StoredSample) -> LogEntry {
        LogEntry {
            topic: topic.to_owned(),
            writer: sample.writer.to_bytes().to_vec(),
            sequence_number: sample.sequence_number,
            key_hash: sample.key_hash.to_vec(),
            status_info: sample.status_info,
            source_timestamp: sample.source_timestamp,
            payload: sample.payload.clone(),
        }
    }

    /// The sample it carries; `None` when its GUID or key hash is not 16 bytes (not written
    /// by a service: counted and dropped by the caller).
    pub fn sample(self) -> Option<StoredSample> {
        let writer: [u8; 16] = self.writer.as_slice().try_into().ok()?;
        let key_hash: [u8; 16] = self.key_hash.as_slice().try_into().ok()?;
        Some(StoredSample {
            writer: Guid::from_bytes(writer),
            sequence_number: self.sequence_number,
            key_hash,
            status_info: self.status_info,
            source_timestamp: self.source_timestamp,
            arrival: 0,
            payload: self.payload,
        })
    }
}

/// What a replicated service counted about the log since it started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LogCounters {
    /// Samples proposed.
    pub proposed: u64,
    /// Of those, proposed again: not applied within 2 s (no leader then, a lost proposal).
    pub proposed_again: u64,
    /// Times a received sample was refused because the log had not applied it within the
    /// short wait (its writer sends it again).
    pub refused: u64,
    /// Log entries dropped: malformed, or held too long for a topic whose type was not learned.
    pub dropped: u64,
}

/// A service's side of the log: what it proposes with.
pub(crate) struct LogWriter {
    writer: DataWriter<LogEntry>,
    pub(crate) proposed: AtomicU64,
    pub(crate) proposed_again: AtomicU64,
    pub(crate) refused: AtomicU64,
}

impl LogWriter {
    /// Queues `sample` for the log (the writer batches: this does not wait for the commit).
    /// A failure is logged; the caller proposes again if the sample is not applied in time.
    pub(crate) fn propose(&self, topic: &str, sample: &StoredSample) {
        self.proposed.fetch_add(1, Ordering::Relaxed);
        if let Err(e) = self.writer.write(&LogEntry::of(topic, sample)) {
            tracing::debug!(topic, error = %e, "log proposal failed (proposed again later)");
        }
    }
}

/// The participants of the replicated services `reader` (the log's) knows, this one included.
pub(crate) fn services(reader: &DataReader<LogEntry>, own: GuidPrefix) -> HashSet<GuidPrefix> {
    reader
        .matched_publications()
        .into_iter()
        .map(|g| g.prefix)
        .chain(std::iter::once(own))
        .collect()
}

/// Whether this service (`own`) is the designated proposer of `topic`: the lowest participant
/// among the replicated `services` that follow it (their replay writers on it are in
/// `writers`). The others give it [`PROPOSER_GRACE`] before proposing a sample themselves, so a
/// sample usually enters the log once rather than once per service.
pub(crate) fn designated(
    topic: &str,
    own: GuidPrefix,
    services: &HashSet<GuidPrefix>,
    writers: &[std::sync::Arc<tessera::rtps::discovery::DiscoveredWriterData>],
) -> bool {
    writers
        .iter()
        .filter(|w| w.topic_name == topic && services.contains(&w.guid.prefix))
        .all(|w| w.guid.prefix >= own)
}

/// Joins the services' log on `participant`: its writer (batching, so proposals from one
/// received datagram go as one group commit) and its reader.
pub(crate) fn open(
    participant: &DomainParticipant,
) -> Result<(LogWriter, DataReader<LogEntry>), tessera::Error> {
    let qos = TopicQos::default()
        .with_consistency(Consistency::Atomic)
        .with_reliability(Reliability::reliable(Duration::from_secs(1)));
    let topic = participant.create_topic::<LogEntry>(LOG_TOPIC, qos)?;
    let writer = participant
        .create_publisher(PublisherQos::default())?
        .create_datawriter(
            &topic,
            DataWriterQos::from_topic(topic.qos()).with_history(History::KeepAll),
        )?;
    writer.set_batching(true);
    let reader = participant
        .create_subscriber(SubscriberQos::default())?
        .create_datareader(
            &topic,
            DataReaderQos::from_topic(topic.qos()).with_history(History::KeepAll),
        )?;
    Ok((
        LogWriter {
            writer,
            proposed: AtomicU64::new(0),
            proposed_again: AtomicU64::new(0),
            refused: AtomicU64::new(0),
        },
        reader,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> StoredSample {
        StoredSample {
            writer: Guid::from_bytes([7; 16]),
            sequence_number: 42,
            key_hash: [3; 16],
            status_info: 1,
            source_timestamp: 1_700_000_000_000_000_000,
            arrival: 9,
            payload: vec![0, 1, 0, 0, 5],
        }
    }

    #[test]
    fn an_entry_carries_the_sample_whole() {
        let s = sample();
        let back = LogEntry::of("T", &s).sample().expect("well formed");
        assert_eq!(back, StoredSample { arrival: 0, ..s });
    }

    #[test]
    fn the_lowest_service_following_a_topic_proposes_it() {
        use std::sync::Arc;
        use tessera::rtps::discovery::DiscoveredWriterData;
        use tessera::rtps::types::EntityId;
        let p = |n: u8| GuidPrefix([n; 12]);
        let w = |n: u8, topic: &str| {
            Arc::new(DiscoveredWriterData::new(
                Guid::new(p(n), EntityId([0, 0, 1, 2])),
                topic,
                "T",
            ))
        };
        let services: HashSet<GuidPrefix> = [p(1), p(2), p(3)].into();
        // Service 1 follows only A; 2 and 3 follow B; 0 is an application writer of B.
        let writers = vec![w(1, "A"), w(2, "B"), w(3, "B"), w(0, "B")];
        assert!(designated("A", p(1), &services, &writers));
        assert!(!designated("A", p(2), &services, &writers));
        assert!(
            designated("B", p(2), &services, &writers),
            "1 does not follow B"
        );
        assert!(!designated("B", p(3), &services, &writers));
        assert!(
            designated("C", p(3), &services, &writers),
            "nobody else follows C"
        );
    }

    #[test]
    fn an_entry_with_a_short_guid_is_refused() {
        let mut e = LogEntry::of("T", &sample());
        e.writer.truncate(15);
        assert!(e.sample().is_none());
    }
}
