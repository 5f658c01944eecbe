//! Following topics: the service thread's look at discovery, learning a topic's type (or
//! keeping it opaque), creating its reader and replay writer, replaying and cleaning up.

use super::{Followed, ServiceError, Shared, TopicState};
use crate::held::HeldAcks;
use crate::persist::TopicRecord;
use crate::store::{StoredSample, TopicStore};
use parking_lot::{Condvar, Mutex};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;
use tessera::qos::{
    DataReaderQos, DataWriterQos, Durability, History, Partition, PublisherQos, Reliability,
    ResourceLimits, SubscriberQos, TopicQos, WriterDataLifecycle,
};
use tessera::rtps::cdr::CdrError;
use tessera::rtps::discovery::DiscoveredWriterData;
use tessera::rtps::types::Guid;
use tessera::{DynamicTypeSupport, TypeSupport, UntypedDataWriter, UntypedTopic};

/// Failed type lookups after which a topic whose writers announce type information is
/// followed with an opaque type anyway.
const OPAQUE_AFTER: u32 = 5;

impl Shared {
    pub(super) fn wanted(&self, topic: &str) -> bool {
        self.config.topics.is_empty()
            || self.config.topics.iter().any(|p| matches_pattern(p, topic))
    }

    /// One look at discovery, the replay queues and cleanup.
    pub(super) fn tick(&self) {
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
        // Replays are written after the topics' lock is released: a write delivers to this
        // participant's own reader too, whose lock a receive thread may hold while it waits
        // for the log thread, which needs the topics' lock.
        let mut replays: Vec<(UntypedDataWriter, Vec<StoredSample>)> = Vec::new();
        let mut topics = self.topics.lock();
        for f in topics.values_mut() {
            let due: Vec<StoredSample> = f.replay.try_iter().collect();
            if !due.is_empty() {
                replays.push((f.writer.clone(), due));
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
        drop(topics);
        for (w, samples) in replays {
            for s in &samples {
                replay(&w, s);
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
                // What the service keeps, announced: another service that learns of the topic
                // from this writer first keeps as much (the default would keep 1 per instance).
                .with_durability_service(policy)
                .with_writer_data_lifecycle(WriterDataLifecycle {
                    autodispose_unregistered_instances: false,
                }),
        )?;
        for s in state.store.lock().samples() {
            replay(&w, s);
        }
        Ok(w)
    }

    pub(super) fn follow(
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
        let applied = store.highs().collect();
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
            log: self.log.clone(),
            in_flight: Mutex::new(HashMap::new()),
            held_acks: Mutex::new(HeldAcks::default()),
            applied: Mutex::new(applied),
            applied_changed: Condvar::new(),
            closed: AtomicBool::new(false),
            refused: AtomicBool::new(false),
            designated: AtomicBool::new(true),
            stop: self.stop.clone(),
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

fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0)
}

/// A type known by name only: samples are keyed by the writer's PID_KEY_HASH (the reader
/// falls back to it when the support cannot compute the key).
pub(super) struct OpaqueSupport {
    pub(super) name: String,
    pub(super) keyed: bool,
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
