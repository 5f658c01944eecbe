//! The running service: a thread that watches discovery, follows the topics of TRANSIENT and
//! PERSISTENT writers, and feeds each topic's replay writer; a [`SampleSink`] per topic that
//! stores what the topic's reader receives (and commits PERSISTENT batches before they are
//! acknowledged) or, replicated, proposes it to the services' log and waits until the log
//! applied it ([`crate::replicate`]); and, replicated, a thread that applies the log.

use crate::held::HeldAcks;
use crate::persist::{PersistError, PersistentStore, TopicRecord};
use crate::replicate::{LogCounters, LogEntry, LogWriter, PROPOSER_GRACE};
use crate::store::{Op, Outcome, StoredSample, TopicStats, TopicStore};
use parking_lot::{Condvar, Mutex};
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use tessera::qos::{
    DataReaderQos, DataWriterQos, Durability, History, Partition, PublisherQos, Reliability,
    ResourceLimits, SubscriberQos, TopicQos, WriterDataLifecycle,
};
use tessera::rtps::cdr::CdrError;
use tessera::rtps::discovery::DiscoveredWriterData;
use tessera::rtps::types::{Guid, GuidPrefix};
use tessera::{
    DataReader, DomainParticipant, DynamicTypeSupport, ReceivedSample, SampleSink, SinkVerdict,
    StateMasks, TypeSupport, UntypedDataReader, UntypedDataWriter, UntypedTopic, WaitSet,
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

/// How long after proposing a sample a sink proposes it again if the log has not applied it
/// (no leader then, a proposal lost in a leader change).
const PROPOSE_AGAIN_AFTER: Duration = Duration::from_secs(2);

/// How long a sink waits for the log to apply a sample it proposed before refusing it (its
/// writer sends it again): a commit takes a few milliseconds, a resend round trip more. Short,
/// as the reader's lock is held meanwhile.
const ACCEPT_WAIT: Duration = Duration::from_millis(50);

/// Proposals remembered per topic (to propose each sample once, not on every resend).
const MAX_IN_FLIGHT: usize = 65_536;

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

impl TopicState {
    /// Takes `sample` into the store; what to write to disk and replay goes to `p`.
    fn stage(&self, sample: StoredSample, p: &mut Pending) {
        let mut ops = Vec::new();
        let out = self.store.lock().insert(sample, &mut ops);
        if out == Outcome::Stored {
            if self.persist.is_some() {
                p.0.extend(ops.iter().map(|o| (self.name.clone(), o.clone())));
            }
            if let Some(Op::Put(s)) = ops.into_iter().find(|o| matches!(o, Op::Put(_))) {
                p.1.push(s);
            }
        } else if (out == Outcome::Duplicate || out == Outcome::Ignored) && self.persist.is_some() {
            // The high-water mark moved (unregister) or nothing did: nothing to commit
            // beyond it.
            p.0.extend(ops.into_iter().map(|o| (self.name.clone(), o)));
        }
    }

    /// Writes what was staged to disk (PERSISTENT) and hands its samples to the replay writer.
    fn commit(&self, (ops, samples): Pending) {
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

    /// Replicated: applies samples the log delivered for this topic, in log order (the same
    /// at every service), then wakes the sinks waiting for them.
    /// Returns the writers whose acknowledgment hold can move.
    fn apply_log(&self, samples: Vec<StoredSample>) -> Vec<Guid> {
        if samples.is_empty() {
            return Vec::new();
        }
        let writers: HashSet<Guid> = samples.iter().map(|s| s.writer).collect();
        let mut p = Pending::default();
        for s in samples {
            self.stage(s, &mut p);
        }
        self.commit(p);
        let highs: Vec<(Guid, i64)> = {
            let store = self.store.lock();
            writers
                .into_iter()
                .filter_map(|w| store.high_of(&w).map(|h| (w, h)))
                .collect()
        };
        let mut applied = self.applied.lock();
        for (w, h) in highs {
            let a = applied.entry(w).or_insert(h);
            *a = (*a).max(h);
        }
        self.applied_changed.notify_all();
        self.in_flight
            .lock()
            .retain(|(w, seq), _| applied.get(w).is_none_or(|&h| *seq > h));
        self.held_acks.lock().release_applied(&applied)
    }

    /// Replicated, for a sample whose acknowledgment the reader can hold: taken at once and
    /// proposed (by the designated service; the others propose it only if the log has not
    /// applied it after [`PROPOSER_GRACE`]), acknowledged when the log applied it. Falls
    /// back to [`Self::accept_replicated`] when too many are held.
    fn hold_replicated(&self, log: &LogWriter, sample: StoredSample) -> SinkVerdict {
        let applied = self
            .applied
            .lock()
            .get(&sample.writer)
            .is_some_and(|&h| sample.sequence_number <= h);
        if applied {
            return SinkVerdict::Accepted;
        }
        let mut held = self.held_acks.lock();
        if held.contains(&sample.writer, sample.sequence_number) {
            return SinkVerdict::Held;
        }
        if held.len() >= MAX_IN_FLIGHT {
            drop(held);
            return match self.accept_replicated(log, sample) {
                true => SinkVerdict::Accepted,
                false => SinkVerdict::Refused,
            };
        }
        // The held set, not `in_flight`, remembers what was proposed and when.
        let now = Instant::now();
        let propose = self.designated.load(Ordering::Relaxed);
        let proposal = propose.then(|| sample.clone());
        held.insert(sample, propose.then_some(now), now);
        drop(held);
        if let Some(sample) = proposal {
            log.propose(&self.name, &sample);
        }
        SinkVerdict::Held
    }

    /// Replicated: proposes the held samples that are due (see [`HeldAcks::due`]).
    fn propose_held(&self, log: &LogWriter) {
        let due = self
            .held_acks
            .lock()
            .due(Instant::now(), PROPOSER_GRACE, PROPOSE_AGAIN_AFTER);
        for (sample, repeat) in due {
            if repeat {
                log.proposed_again.fetch_add(1, Ordering::Relaxed);
                tracing::info!(topic = %self.name, seq = sample.sequence_number,
                    "held sample not in the log yet: proposed again");
            }
            log.propose(&self.name, &sample);
        }
    }

    /// The sample as this service keeps it, or `None` for our own replay writer's.
    fn stored_of(&self, s: &ReceivedSample<'_>) -> Option<StoredSample> {
        if s.writer.prefix == self.own || s.relayed_by.is_some_and(|r| r.prefix == self.own) {
            return None;
        }
        Some(StoredSample {
            writer: s.writer,
            sequence_number: s.sequence_number,
            key_hash: s.key_hash,
            status_info: s.status_info & 3,
            source_timestamp: s.source_timestamp,
            arrival: 0,
            payload: s.payload.to_vec(),
        })
    }

    /// Replicated: whether `sample` may be acknowledged: once the log applied it here. Else
    /// it is proposed (once, again after [`PROPOSE_AGAIN_AFTER`]) and waited for a little; not
    /// applied by then, it is refused and its writer sends it again (the log thread asks for
    /// it as soon as it applied it). Nothing here waits on the log for longer than
    /// [`ACCEPT_WAIT`]: the reader's lock is held, and the participant's event thread needs it.
    fn accept_replicated(&self, log: &LogWriter, sample: StoredSample) -> bool {
        let done = |a: &HashMap<Guid, i64>| {
            a.get(&sample.writer)
                .is_some_and(|&h| sample.sequence_number <= h)
        };
        if done(&self.applied.lock()) {
            return true;
        }
        let now = Instant::now();
        if !self.designated.load(Ordering::Relaxed) {
            // Most likely proposed by the designated service already: a little time for it.
            let mut applied = self.applied.lock();
            let grace = now + PROPOSER_GRACE;
            while !done(&applied) {
                if self
                    .applied_changed
                    .wait_until(&mut applied, grace)
                    .timed_out()
                {
                    break;
                }
            }
            if done(&applied) {
                return true;
            }
        }
        {
            let mut in_flight = self.in_flight.lock();
            let key = (sample.writer, sample.sequence_number);
            match in_flight.get(&key) {
                Some(at) if now.duration_since(*at) < PROPOSE_AGAIN_AFTER => {}
                again => {
                    if again.is_some() {
                        log.proposed_again.fetch_add(1, Ordering::Relaxed);
                        tracing::info!(topic = %self.name, seq = sample.sequence_number,
                            "not in the log yet: proposed again");
                    } else if in_flight.len() >= MAX_IN_FLIGHT {
                        in_flight.clear();
                    }
                    in_flight.insert(key, now);
                    log.propose(&self.name, &sample);
                }
            }
        }
        let deadline = now + ACCEPT_WAIT;
        let mut applied = self.applied.lock();
        loop {
            if done(&applied) {
                return true;
            }
            if self.closed.load(Ordering::Relaxed)
                || self.stop.load(Ordering::Relaxed)
                || self
                    .applied_changed
                    .wait_until(&mut applied, deadline)
                    .timed_out()
            {
                let ok = done(&applied);
                if !ok {
                    log.refused.fetch_add(1, Ordering::Relaxed);
                    self.refused.store(true, Ordering::Relaxed);
                }
                return ok;
            }
        }
    }
}

impl SampleSink for TopicState {
    fn on_sample(&self, s: &ReceivedSample<'_>) -> bool {
        let Some(sample) = self.stored_of(s) else {
            // Our own replay writer, delivered locally.
            return true;
        };
        if let Some(log) = &self.log {
            // Replicated: stored when the log delivers it, at every service alike.
            return self.accept_replicated(log, sample);
        }
        self.stage(sample, &mut self.pending.lock());
        true
    }

    fn offer(&self, s: &ReceivedSample<'_>) -> SinkVerdict {
        match &self.log {
            Some(log) if s.can_hold => match self.stored_of(s) {
                Some(sample) => self.hold_replicated(log, sample),
                None => SinkVerdict::Accepted,
            },
            _ => match self.on_sample(s) {
                true => SinkVerdict::Accepted,
                false => SinkVerdict::Refused,
            },
        }
    }

    fn end_of_batch(&self) {
        if self.log.is_some() {
            return;
        }
        let pending = std::mem::take(&mut *self.pending.lock());
        self.commit(pending);
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

fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0)
}

impl Shared {
    /// Replicated: applies the log as it commits, until the service stops.
    fn follow_log(&self, reader: &DataReader<LogEntry>) {
        let (resend, asks) = crossbeam_channel::unbounded::<ReaderJob>();
        let resender = std::thread::Builder::new()
            .name("tessera-dur-resend".into())
            .spawn(move || {
                for job in asks {
                    match job {
                        ReaderJob::Resend(r) => r.request_refused_samples(),
                        ReaderJob::MoveHold(r, state, writer) => {
                            r.set_acknowledgment_hold(writer, || {
                                state.held_acks.lock().lowest(&writer)
                            });
                        }
                    }
                }
            });
        if let Err(e) = &resender {
            // Refused samples then come again at their writers' next heartbeat.
            tracing::warn!(error = %e, "no resend thread");
        }
        let mut waitset = WaitSet::new();
        waitset.attach(&reader.create_readcondition(StateMasks::ANY));
        while !self.stop.load(Ordering::Relaxed) {
            let _ = waitset.wait(Some(Duration::from_millis(100)));
            self.elect(reader);
            loop {
                let taken = match reader.take(4096) {
                    Ok(t) => t,
                    Err(e) => {
                        tracing::error!(error = %e, "reading the services' log");
                        break;
                    }
                };
                let more = taken.len() == 4096;
                self.apply_log(taken.into_iter().filter_map(|s| s.data).collect(), &resend);
                if !more {
                    break;
                }
            }
            // Entries held for a topic whose type was learned since.
            self.apply_log(Vec::new(), &resend);
            if let Some(log) = &self.log {
                let states: Vec<Arc<TopicState>> = self
                    .topics
                    .lock()
                    .values()
                    .map(|f| f.state.clone())
                    .collect();
                for st in states {
                    st.propose_held(log);
                }
            }
        }
        drop(resend);
        if let Ok(t) = resender {
            let _ = t.join();
        }
    }

    /// Replicated: which topics this service proposes at once (see
    /// [`crate::replicate::designated`]).
    fn elect(&self, reader: &DataReader<LogEntry>) {
        let own = self.participant.guid().prefix;
        let services = crate::replicate::services(reader, own);
        let writers = self.participant.discovered_writers();
        for (name, f) in self.topics.lock().iter() {
            let d = crate::replicate::designated(name, own, &services, &writers);
            f.state.designated.store(d, Ordering::Relaxed);
        }
    }

    /// Applies log entries (in log order) to the topics they belong to; entries of a topic
    /// not followed yet wait for it (in order, bounded).
    fn apply_log(&self, entries: Vec<LogEntry>, resend: &crossbeam_channel::Sender<ReaderJob>) {
        let mut by_topic: HashMap<String, Vec<StoredSample>> = HashMap::new();
        for e in entries {
            if !self.wanted(&e.topic) {
                continue;
            }
            let topic = e.topic.clone();
            match e.sample() {
                Some(s) => by_topic.entry(topic).or_default().push(s),
                None => {
                    self.log_dropped.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(topic, "malformed log entry dropped");
                }
            }
        }
        let mut held = self.held.lock();
        let topics = self.topics.lock();
        let ready: Vec<String> = held
            .0
            .keys()
            .filter(|t| topics.contains_key(*t))
            .cloned()
            .collect();
        // Readers that refused samples, maybe applied now: their writers are asked to send them
        // again, by the resend thread (asking takes the reader's lock, which its receive thread
        // may hold while it waits for this thread to apply an entry).
        // The same thread moves acknowledgment holds the log released.
        let mut resume: Vec<ReaderJob> = Vec::new();
        let mut after = |f: &Followed, released: Vec<Guid>| {
            if f.state.refused.swap(false, Ordering::Relaxed) {
                resume.push(ReaderJob::Resend(f.reader.clone()));
            }
            for w in released {
                resume.push(ReaderJob::MoveHold(f.reader.clone(), f.state.clone(), w));
            }
        };
        for t in ready {
            let mut samples = held.0.remove(&t).unwrap_or_default();
            held.1 -= samples.iter().map(|s| s.payload.len()).sum::<usize>();
            samples.extend(by_topic.remove(&t).unwrap_or_default());
            let f = &topics[&t];
            let released = f.state.apply_log(samples);
            after(f, released);
        }
        for (t, samples) in by_topic {
            if let Some(f) = topics.get(&t) {
                let released = f.state.apply_log(samples);
                after(f, released);
                continue;
            }
            let bytes: usize = samples.iter().map(|s| s.payload.len()).sum();
            if held.1 + bytes > MAX_HELD_BYTES {
                // This service would miss what the others keep: said loudly, counted.
                self.log_dropped
                    .fetch_add(samples.len() as u64, Ordering::Relaxed);
                tracing::error!(
                    topic = t,
                    samples = samples.len(),
                    "log entries dropped: the topic's type is still unknown here"
                );
                continue;
            }
            held.1 += bytes;
            held.0.entry(t).or_default().extend(samples);
        }
        drop(topics);
        drop(held);
        for r in resume {
            let _ = resend.send(r);
        }
    }

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

impl Drop for Followed {
    fn drop(&mut self) {
        // A sink waiting for the log on the receive thread lets go first.
        self.state.closed.store(true, Ordering::Relaxed);
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
