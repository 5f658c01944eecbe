//! The running service: a thread that watches discovery, follows the topics of TRANSIENT and
//! PERSISTENT writers, and feeds each topic's replay writer; a [`SampleSink`] per topic that
//! stores what the topic's reader receives (and commits PERSISTENT batches before they are
//! acknowledged) or, replicated, proposes it to the services' log and waits until the log
//! applied it ([`crate::replicate`]); and, replicated, a thread that applies the log.

mod follow;
mod log_thread;
mod sink;
#[cfg(test)]
mod tests;

pub use follow::matches_pattern;

use crate::held::HeldAcks;
use crate::persist::{PersistError, PersistentStore};
use crate::replicate::{LogCounters, LogWriter};
use crate::store::{Op, StoredSample, TopicStats, TopicStore};
use follow::OpaqueSupport;
use parking_lot::{Condvar, Mutex};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use tessera::qos::{Durability, Partition};
use tessera::rtps::types::{Guid, GuidPrefix};
#[cfg(doc)]
use tessera::SampleSink;
use tessera::{DomainParticipant, TypeSupport, UntypedDataReader, UntypedDataWriter, UntypedTopic};

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
    /// Keep the samples in step with the other replicated services of the domain through
    /// consensus ([`crate::replicate`]): every one of them keeps the same samples, and a
    /// sample is acknowledged to its writer once the group committed it. Off: each service
    /// keeps what it received itself (best-effort redundancy).
    pub replicated: bool,
}

impl Default for ServiceConfig {
    fn default() -> Self {
        ServiceConfig {
            store_dir: None,
            topics: Vec::new(),
            type_timeout: Duration::from_secs(2),
            period: Duration::from_millis(50),
            replicated: false,
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
    threads: Vec<JoinHandle<()>>,
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
    /// Set when the service stops.
    stop: Arc<AtomicBool>,
    /// Replicated: the services' log.
    log: Option<Arc<LogWriter>>,
    /// Replicated: log entries of topics not followed yet (their type is being learned), in
    /// log order, and their payload bytes (bounded by [`MAX_HELD_BYTES`]).
    held: Mutex<(HashMap<String, Vec<StoredSample>>, usize)>,
    /// Replicated: log entries dropped (malformed, or over [`MAX_HELD_BYTES`]).
    log_dropped: AtomicU64,
}

/// Payload bytes of log entries held for topics whose type is not known yet.
const MAX_HELD_BYTES: usize = 64 << 20;

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

/// Work on a topic's reader that takes its protocol lock, done by the resend thread (the
/// reader's receive thread may hold that lock while it waits for the log thread).
enum ReaderJob {
    /// Ask the writers of refused samples to send them again.
    Resend(UntypedDataReader),
    /// Move the acknowledgment hold on a writer to its lowest sample still held.
    MoveHold(UntypedDataReader, Arc<TopicState>, Guid),
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
    /// Replicated: the services' log, where received samples are proposed instead of stored.
    log: Option<Arc<LogWriter>>,
    /// Replicated: samples proposed and not applied yet, with when they were proposed.
    in_flight: Mutex<HashMap<(Guid, i64), Instant>>,
    /// Replicated: samples taken but not acknowledged until the log applies them (see
    /// [`crate::held`]). Locked after the topic reader's protocol lock, never before.
    held_acks: Mutex<HeldAcks>,
    /// Replicated: per original writer, the highest number the log applied here (and wrote
    /// to disk, PERSISTENT); a sample is accepted, and so acknowledged, only at or below it.
    applied: Mutex<HashMap<Guid, i64>>,
    applied_changed: Condvar,
    /// The topic's reader is being replaced: a sink waiting for the log gives up.
    closed: AtomicBool,
    /// Replicated: the sink refused a sample since its writers were last asked to resend.
    refused: AtomicBool,
    /// Replicated: this service proposes the topic's samples at once
    /// ([`crate::replicate::designated`]).
    designated: AtomicBool,
    stop: Arc<AtomicBool>,
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
        let (log, log_reader) = if config.replicated {
            let (w, r) = crate::replicate::open(&participant)?;
            (Some(Arc::new(w)), Some(r))
        } else {
            (None, None)
        };
        let shared = Arc::new(Shared {
            participant,
            config,
            persist,
            topics: Mutex::new(HashMap::new()),
            store_errors: Arc::new(AtomicU64::new(0)),
            type_tries: Mutex::new(HashMap::new()),
            stop: Arc::new(AtomicBool::new(false)),
            log,
            held: Mutex::new((HashMap::new(), 0)),
            log_dropped: AtomicU64::new(0),
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
        let spawn = |name: &str, f: Box<dyn FnOnce() + Send>| {
            std::thread::Builder::new()
                .name(name.into())
                .spawn(f)
                .map_err(|e| tessera::Error::OutOfResources(e.to_string()))
        };
        // Dropped on an early return, the service stops and joins what it started.
        let mut service = DurabilityService {
            shared: shared.clone(),
            threads: Vec::new(),
        };
        let main = shared.clone();
        service.threads.push(spawn(
            "tessera-durability",
            Box::new(move || {
                while !main.stop.load(Ordering::Relaxed) {
                    main.tick();
                    std::thread::sleep(main.config.period);
                }
            }),
        )?);
        if let Some(reader) = log_reader {
            let s = shared.clone();
            service.threads.push(spawn(
                "tessera-dur-log",
                Box::new(move || s.follow_log(&reader)),
            )?);
        }
        Ok(service)
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

    /// The samples kept for `topic`, in the order they were stored (for a replicated service:
    /// log order, the same at every service).
    pub fn samples(&self, topic: &str) -> Vec<StoredSample> {
        self.shared
            .topics
            .lock()
            .get(topic)
            .map(|f| {
                f.state
                    .store
                    .lock()
                    .samples()
                    .into_iter()
                    .cloned()
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Replicated: what the service counted about the log (zeros when not replicated).
    pub fn log_counters(&self) -> LogCounters {
        let mut c = LogCounters {
            dropped: self.shared.log_dropped.load(Ordering::Relaxed),
            ..LogCounters::default()
        };
        if let Some(l) = &self.shared.log {
            c.proposed = l.proposed.load(Ordering::Relaxed);
            c.proposed_again = l.proposed_again.load(Ordering::Relaxed);
            c.refused = l.refused.load(Ordering::Relaxed);
        }
        c
    }
}

impl Drop for DurabilityService {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

impl Drop for Followed {
    fn drop(&mut self) {
        // A sink waiting for the log on the receive thread lets go first.
        self.state.closed.store(true, Ordering::Relaxed);
        self.reader.set_sample_sink(None);
    }
}
