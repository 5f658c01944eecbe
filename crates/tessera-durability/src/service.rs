//! The running service: a thread that watches discovery, follows the topics of TRANSIENT and
//! PERSISTENT writers, and feeds each topic's replay writer; a [`SampleSink`] per topic that
//! stores what the topic's reader receives (and commits PERSISTENT batches before they are
//! acknowledged).

use crate::persist::{PersistError, PersistentStore, TopicRecord};
use crate::store::{Op, Outcome, StoredSample, TopicStats, TopicStore};
use parking_lot::Mutex;
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;
use tessera::qos::{
    DataReaderQos, DataWriterQos, Durability, History, Partition, PublisherQos, Reliability,
    ResourceLimits, SubscriberQos, TopicQos, WriterDataLifecycle,
};
use tessera::rtps::cdr::CdrError;
use tessera::rtps::discovery::DiscoveredWriterData;
use tessera::rtps::types::{Guid, GuidPrefix};
use tessera::{
    DomainParticipant, DynamicTypeSupport, ReceivedSample, SampleSink, TypeSupport,
    UntypedDataReader, UntypedDataWriter, UntypedTopic,
};

/// How the service runs.
#[derive(Debug, Clone)]
pub struct ServiceConfig {
    /// Where PERSISTENT topics are kept (`DIR/durability.redb`). Without it, PERSISTENT
    /// topics are kept in memory only, like TRANSIENT ones (and a warning says so).
    pub store_dir: Option<PathBuf>,
    /// Topic name patterns (`*` any run, `?` one character); empty: every topic.
    pub topics: Vec<String>,
    /// How long to wait for a writer's type over TypeLookup before keeping its samples
    /// opaque (keyed by the writer's PID_KEY_HASH).
    pub type_timeout: Duration,
    /// How often discovery is looked at and cleanup runs.
    pub period: Duration,
}

impl Default for ServiceConfig {
    fn default() -> Self {
        ServiceConfig {
            store_dir: None,
            topics: Vec::new(),
            type_timeout: Duration::from_secs(2),
            period: Duration::from_millis(50),
        }
    }
}

/// Why the service could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    /// The persistent store could not be opened or read.
    #[error(transparent)]
    Store(#[from] PersistError),
    /// Creating the service's endpoints failed.
    #[error("durability service: {0}")]
    Dds(#[from] tessera::Error),
}

/// A durability service on a participant. Stops (and joins its thread) when dropped.
pub struct DurabilityService {
    shared: Arc<Shared>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

struct Shared {
    participant: DomainParticipant,
    config: ServiceConfig,
    persist: Option<Arc<PersistentStore>>,
    topics: Mutex<HashMap<String, Followed>>,
    /// Samples not stored because the disk write failed.
    store_errors: Arc<AtomicU64>,
    /// Type lookups that failed, by topic.
    type_tries: Mutex<HashMap<String, u32>>,
}

/// Failed type lookups after which a topic whose writers announce type information is
/// followed with an opaque type anyway.
const OPAQUE_AFTER: u32 = 5;

/// A topic the service follows.
struct Followed {
    state: Arc<TopicState>,
    topic: UntypedTopic,
    /// Whether `topic` carries the writers' type (else opaque).
    typed: bool,
    reader: UntypedDataReader,
    writer: UntypedDataWriter,
    partition: Partition,
    /// TRANSIENT, or PERSISTENT (on disk when the service has a store).
    kind: Durability,
    replay: crossbeam_channel::Receiver<StoredSample>,
}

/// Disk changes (by topic) and samples to replay of the datagram being received.
type Pending = (Vec<(String, Op)>, Vec<StoredSample>);

/// What the topic's sink shares with the service thread.
struct TopicState {
    name: String,
    own: GuidPrefix,
    persist: Option<Arc<PersistentStore>>,
    store: Mutex<TopicStore>,
    /// Changes and samples of the datagram being received, committed at its end.
    pending: Mutex<Pending>,
    replay: crossbeam_channel::Sender<StoredSample>,
    store_errors: Arc<AtomicU64>,
}

impl SampleSink for TopicState {
    fn on_sample(&self, s: &ReceivedSample<'_>) -> bool {
        if s.writer.prefix == self.own {
            // Our own replay writer, delivered locally.
            return true;
        }
        let sample = StoredSample {
            writer: s.writer,
            sequence_number: s.sequence_number,
            key_hash: s.key_hash,
            status_info: s.status_info & 3,
            source_timestamp: s.source_timestamp,
            arrival: 0,
            payload: s.payload.to_vec(),
        };
        let mut ops = Vec::new();
        let out = self.store.lock().insert(sample, &mut ops);
        if out == Outcome::Stored {
            let mut p = self.pending.lock();
            if self.persist.is_some() {
                p.0.extend(ops.iter().map(|o| (self.name.clone(), o.clone())));
            }
            if let Some(Op::Put(s)) = ops.into_iter().find(|o| matches!(o, Op::Put(_))) {
                p.1.push(s);
            }
        } else if out == Outcome::Duplicate || out == Outcome::Ignored {
            // The high-water mark moved (unregister) or nothing did: nothing to commit
            // beyond it.
            if self.persist.is_some() {
                let mut p = self.pending.lock();
                p.0.extend(ops.into_iter().map(|o| (self.name.clone(), o)));
            }
        }
        true
    }

    fn end_of_batch(&self) {
        let (ops, samples) = std::mem::take(&mut *self.pending.lock());
        if let Some(p) = &self.persist {
            if let Err(e) = p.apply(&ops) {
                // Acknowledged but not on disk: counted and said, the service keeps serving
                // from memory.
                self.store_errors
                    .fetch_add(samples.len() as u64, Ordering::Relaxed);
                tracing::error!(topic = %self.name, error = %e, "durability store write failed");
            }
        }
        for s in samples {
            let _ = self.replay.send(s);
        }
    }
}

/// A type known by name only: samples are keyed by the writer's PID_KEY_HASH (the reader
/// falls back to it when the support cannot compute the key).
struct OpaqueSupport {
    name: String,
    keyed: bool,
}

impl TypeSupport for OpaqueSupport {
    fn type_name(&self) -> &str {
        &self.name
    }

    fn is_keyed(&self) -> bool {
        self.keyed
    }

    fn key_hash_of_sample(&self, _payload: &[u8]) -> Result<[u8; 16], CdrError> {
        if self.keyed {
            Err(CdrError::Truncated)
        } else {
            Ok([0; 16])
        }
    }

    fn key_hash_of_key(&self, _payload: &[u8]) -> Result<[u8; 16], CdrError> {
        if self.keyed {
            Err(CdrError::Truncated)
        } else {
            Ok([0; 16])
        }
    }
}

/// Whether `name` matches the glob `pattern` (`*`, `?`).
pub fn matches_pattern(pattern: &str, name: &str) -> bool {
    let (p, n): (Vec<char>, Vec<char>) = (pattern.chars().collect(), name.chars().collect());
    // Iterative glob with backtracking to the last star: linear in practice.
    let (mut i, mut j, mut star, mut mark) = (0, 0, None, 0);
    while j < n.len() {
        if i < p.len() && (p[i] == '?' || p[i] == n[j]) {
            i += 1;
            j += 1;
        } else if i < p.len() && p[i] == '*' {
            star = Some(i);
            mark = j;
            i += 1;
        } else if let Some(s) = star {
            i = s + 1;
            mark += 1;
            j = mark;
        } else {
            return false;
        }
    }
    p[i..].iter().all(|&c| c == '*')
}

impl DurabilityService {
    /// Starts a service on `participant`: opens and reloads the store (PERSISTENT topics
    /// are served again at once), then follows discovery on a thread of its own.
    pub fn start(
        participant: DomainParticipant,
        config: ServiceConfig,
    ) -> Result<DurabilityService, ServiceError> {
        let store = Self::open_store(&config)?;
        Self::start_with_store(participant, config, store)
    }

    /// Opens the store `config` names, if any (to check it before joining a domain).
    pub fn open_store(config: &ServiceConfig) -> Result<Option<PersistentStore>, ServiceError> {
        Ok(match &config.store_dir {
            Some(d) => Some(PersistentStore::open(d)?),
            None => None,
        })
    }

    /// [`Self::start`] with the store already opened by [`Self::open_store`].
    pub fn start_with_store(
        participant: DomainParticipant,
        config: ServiceConfig,
        store: Option<PersistentStore>,
    ) -> Result<DurabilityService, ServiceError> {
        let persist = store.map(Arc::new);
        let shared = Arc::new(Shared {
            participant,
            config,
            persist,
            topics: Mutex::new(HashMap::new()),
            store_errors: Arc::new(AtomicU64::new(0)),
            type_tries: Mutex::new(HashMap::new()),
        });
        if let Some(p) = &shared.persist {
            for t in p.load()? {
                let mut store = TopicStore::new(t.record.policy);
                for (w, h) in &t.high {
                    store.restore_high(*w, *h);
                }
                for s in t.samples {
                    store.reload(s);
                }
                let support: Arc<dyn TypeSupport> = Arc::new(OpaqueSupport {
                    name: t.record.type_name.clone(),
                    keyed: t.record.keyed,
                });
                shared.follow(
                    &t.record.name,
                    support,
                    false,
                    Durability::Persistent,
                    Partition::default(),
                    store,
                )?;
            }
        }
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (shared, stop) = (shared.clone(), stop.clone());
            std::thread::Builder::new()
                .name("tessera-durability".into())
                .spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        shared.tick();
                        std::thread::sleep(shared.config.period);
                    }
                })
                .map_err(|e| tessera::Error::OutOfResources(e.to_string()))?
        };
        Ok(DurabilityService {
            shared,
            stop,
            thread: Some(thread),
        })
    }

    /// The participant the service runs on.
    pub fn participant(&self) -> &DomainParticipant {
        &self.shared.participant
    }

    /// The topics followed and their statistics.
    pub fn stats(&self) -> Vec<(String, TopicStats)> {
        let mut v: Vec<_> = self
            .shared
            .topics
            .lock()
            .iter()
            .map(|(n, f)| (n.clone(), f.state.store.lock().stats()))
            .collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    }

    /// Samples acknowledged but not written to disk (a failing store).
    pub fn store_errors(&self) -> u64 {
        self.shared.store_errors.load(Ordering::Relaxed)
    }
}

impl Drop for DurabilityService {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0)
}

impl Shared {
    fn wanted(&self, topic: &str) -> bool {
        self.config.topics.is_empty()
            || self.config.topics.iter().any(|p| matches_pattern(p, topic))
    }

    /// One look at discovery, the replay queues and cleanup.
    fn tick(&self) {
        let own = self.participant.guid().prefix;
        let writers = self.participant.discovered_writers();
        let alive: HashSet<Guid> = writers.iter().map(|w| w.guid).collect();
        for w in &writers {
            if w.guid.prefix == own
                || w.qos.durability < Durability::Transient
                || !self.wanted(&w.topic_name)
            {
                continue;
            }
            let (known, typed) = match self.topics.lock().get(&w.topic_name) {
                Some(f) => (true, f.typed),
                None => (false, false),
            };
            if known && (typed || w.type_information.is_none()) {
                continue;
            }
            if let Err(e) = self.follow_writer(w, known) {
                tracing::warn!(topic = %w.topic_name, error = %e, "cannot follow topic");
            }
        }
        let now = now_ns();
        let mut topics = self.topics.lock();
        for f in topics.values_mut() {
            for s in f.replay.try_iter() {
                replay(&f.writer, &s);
            }
            let mut ops = Vec::new();
            let removed = f
                .state
                .store
                .lock()
                .cleanup(now, &|g| alive.contains(g), &mut ops);
            if removed > 0 {
                if let Some(p) = &self.persist {
                    let batch: Vec<_> =
                        ops.into_iter().map(|o| (f.state.name.clone(), o)).collect();
                    if let Err(e) = p.apply(&batch) {
                        tracing::error!(topic = %f.state.name, error = %e, "cleanup not written");
                    }
                }
                // The replay writer still holds the removed instances: a new one replaces it.
                match self.replay_writer(&f.topic, &f.state, f.partition.clone(), f.kind) {
                    Ok(w) => f.writer = w,
                    Err(e) => tracing::warn!(topic = %f.state.name, error = %e, "replay writer"),
                }
            }
        }
    }

    /// Follows the topic of writer `w` (or, `known`, gives the followed topic its type).
    fn follow_writer(&self, w: &DiscoveredWriterData, known: bool) -> Result<(), ServiceError> {
        let mut typed = false;
        let support: Arc<dyn TypeSupport> = match w.type_information {
            Some(_) => match self
                .participant
                .discover_type(&w.topic_name, self.config.type_timeout)
            {
                Ok(ty) => {
                    typed = true;
                    Arc::new(DynamicTypeSupport::new(ty))
                }
                Err(e) => {
                    // Followed opaque, a sample without PID_KEY_HASH could not be kept: wait
                    // for the type (the writer keeps its own history meanwhile), up to
                    // OPAQUE_AFTER lookups.
                    let tries = {
                        let mut p = self.type_tries.lock();
                        let n = p.entry(w.topic_name.clone()).or_insert(0);
                        *n += 1;
                        *n
                    };
                    if known || tries < OPAQUE_AFTER {
                        tracing::debug!(topic = %w.topic_name, error = %e, "type not known yet");
                        return Ok(());
                    }
                    tracing::info!(topic = %w.topic_name, error = %e, "type unknown: kept opaque");
                    self.opaque(w)
                }
            },
            None => self.opaque(w),
        };
        if known {
            // Keep the store, replace the endpoints by typed ones.
            let old = self.topics.lock().remove(&w.topic_name);
            if let Some(old) = old {
                let store = std::mem::replace(
                    &mut *old.state.store.lock(),
                    TopicStore::new(Default::default()),
                );
                let kind = old.kind;
                drop(old);
                return self.follow(
                    &w.topic_name,
                    support,
                    typed,
                    kind,
                    w.qos.partition.clone(),
                    store,
                );
            }
        }
        let kind = w.qos.durability;
        if kind == Durability::Persistent && self.persist.is_none() {
            tracing::warn!(topic = %w.topic_name, "PERSISTENT topic kept in memory: no --store");
        }
        if let Some(p) = &self.persist {
            if kind == Durability::Persistent {
                p.save_topic(&TopicRecord {
                    name: w.topic_name.clone(),
                    type_name: w.type_name.clone(),
                    keyed: w.guid.entity_id.0[3] == 0x02,
                    policy: w.qos.durability_service,
                })?;
            }
        }
        self.follow(
            &w.topic_name,
            support,
            typed,
            kind,
            w.qos.partition.clone(),
            TopicStore::new(w.qos.durability_service),
        )
    }

    fn opaque(&self, w: &DiscoveredWriterData) -> Arc<dyn TypeSupport> {
        Arc::new(OpaqueSupport {
            name: w.type_name.clone(),
            // User writers of keyed topics have entity kind 0x02 (0x03: no key).
            keyed: w.guid.entity_id.0[3] == 0x02,
        })
    }

    /// A writer that replays `state`'s samples with their original identity.
    fn replay_writer(
        &self,
        topic: &UntypedTopic,
        state: &TopicState,
        partition: Partition,
        kind: Durability,
    ) -> Result<UntypedDataWriter, ServiceError> {
        let policy = *state.store.lock().policy();
        let publisher = self.participant.create_publisher(PublisherQos {
            partition,
            ..Default::default()
        })?;
        let w = publisher.create_untyped_datawriter(
            topic,
            DataWriterQos::default()
                .with_durability(kind)
                .with_reliability(Reliability::reliable(Duration::from_secs(1)))
                .with_history(match policy.history {
                    History::KeepLast(d) => History::KeepLast(d.max(1)),
                    History::KeepAll => History::KeepAll,
                })
                .with_resource_limits(ResourceLimits::UNLIMITED)
                .with_writer_data_lifecycle(WriterDataLifecycle {
                    autodispose_unregistered_instances: false,
                }),
        )?;
        for s in state.store.lock().samples() {
            replay(&w, s);
        }
        Ok(w)
    }

    fn follow(
        &self,
        name: &str,
        support: Arc<dyn TypeSupport>,
        typed: bool,
        kind: Durability,
        partition: Partition,
        store: TopicStore,
    ) -> Result<(), ServiceError> {
        let topic = self
            .participant
            .create_untyped_topic(name, support, TopicQos::default())?;
        let (tx, rx) = crossbeam_channel::unbounded();
        let state = Arc::new(TopicState {
            name: name.to_owned(),
            own: self.participant.guid().prefix,
            persist: (kind == Durability::Persistent)
                .then(|| self.persist.clone())
                .flatten(),
            store: Mutex::new(store),
            pending: Mutex::new((Vec::new(), Vec::new())),
            replay: tx,
            store_errors: self.store_errors.clone(),
        });
        let writer = self.replay_writer(&topic, &state, partition.clone(), kind)?;
        let subscriber = self.participant.create_subscriber(SubscriberQos {
            partition: partition.clone(),
            ..Default::default()
        })?;
        // TRANSIENT: matches the TRANSIENT and PERSISTENT writers (and other services'
        // replays), not the TRANSIENT_LOCAL or VOLATILE ones.
        let reader = subscriber.create_untyped_datareader_for(
            &topic,
            DataReaderQos::default()
                .with_durability(Durability::Transient)
                .with_reliability(Reliability::reliable(Duration::from_secs(1)))
                .with_history(History::KeepAll),
        )?;
        reader.set_sample_sink(Some(state.clone()));
        tracing::info!(topic = name, ?kind, typed, "following");
        self.topics.lock().insert(
            name.to_owned(),
            Followed {
                state,
                topic,
                typed,
                reader,
                writer,
                partition,
                kind,
                replay: rx,
            },
        );
        Ok(())
    }
}

fn replay(w: &UntypedDataWriter, s: &StoredSample) {
    if let Err(e) = w.write_relayed(
        &s.payload,
        s.key_hash,
        s.status_info,
        s.source_timestamp,
        (s.writer, s.sequence_number),
    ) {
        tracing::warn!(error = %e, "replay write failed");
    }
}

impl Drop for Followed {
    fn drop(&mut self) {
        self.reader.set_sample_sink(None);
    }
}

#[cfg(test)]
mod tests {
    use super::matches_pattern;

    #[test]
    fn patterns() {
        assert!(matches_pattern("*", "anything"));
        assert!(matches_pattern("Sensor*", "SensorTemp"));
        assert!(matches_pattern("S?n*p", "SensorTemp"));
        assert!(!matches_pattern("Sensor*", "Actuator"));
        assert!(matches_pattern("a*b*c", "aXbYbZc"));
        assert!(!matches_pattern("a*b*c", "aXbYbZ"));
        assert!(matches_pattern("", ""));
        assert!(!matches_pattern("", "x"));
    }
}
