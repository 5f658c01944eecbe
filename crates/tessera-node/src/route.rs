//! A route: a proxy reader on one side of the node, a writer on the other, and the thread that
//! moves samples (and dispose / unregister) between them.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tessera::history::{InstanceHandle, InstanceState};
use tessera::qos::{
    DataReaderQos, DataWriterQos, Durability, History, LatencyBudget, Partition, PublisherQos,
    Reliability, ReliabilityKind, ResourceLimits, SubscriberQos, TopicQos, INFINITE,
};
use tessera::{
    Condition, GuardCondition, StatusMask, UntypedDataReader, UntypedDataWriter, WaitSet,
};

use tessera::rtps::types::GuidPrefix;

use crate::route_qos::RouteQos;
use crate::sched::{Op, Rank, Scheduler};
use crate::stand_ins::{AppWriter, StandIns};
use crate::{RouteKey, Shared, TopicUse};

/// Which way a route forwards.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Direction {
    /// From the host's applications to the network.
    ToNetwork,
    /// From the network to the host's applications.
    FromNetwork,
}

/// What a route did so far.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteStats {
    /// The topic.
    pub topic: String,
    /// Which way.
    pub direction: Direction,
    /// Samples forwarded.
    pub samples: u64,
    /// Disposes and unregistrations forwarded.
    pub lifecycle: u64,
    /// Samples the other side refused (counted, not retried).
    pub failed: u64,
    /// Samples not forwarded because they left this host through this node before (a
    /// durability service elsewhere replayed them).
    pub own: u64,
}

#[derive(Default)]
struct Counters {
    samples: AtomicU64,
    lifecycle: AtomicU64,
    failed: AtomicU64,
    own: AtomicU64,
}

/// Samples a proxy reader holds before the reliable protocol pushes back on the writers.
const PROXY_READER_SAMPLES: u32 = 4096;

/// How long a network writer may wait (for its flow-control window, or for the socket to
/// take its datagrams). Those waits pace a bulk flow to the link, so that the runtime's
/// per-destination send queue, which is FIFO across writers, stays short; past this the
/// scheduler serves other flows and comes back (see `sched`). Shorter waits made it worse:
/// with 20 ms (0), a saturated 20 Mbit/s link gave high-priority samples a p99 of 320 ms
/// (1.6 s) instead of about 90 ms, queued behind bulk datagrams in that send queue.
const NETWORK_BLOCKING: Duration = Duration::from_secs(1);

/// Instance keys kept per route (to forward dispose / unregister).
const MAX_INSTANCES: usize = 65_536;

pub(crate) struct Route {
    topic: String,
    direction: Direction,
    counters: Arc<Counters>,
    stop: Arc<AtomicBool>,
    /// Wakes the route's thread when `stop` is set (it waits on conditions, not timers).
    wake: GuardCondition,
    thread: Option<JoinHandle<()>>,
}

/// Where a route's pump sends what its reader takes.
enum Sink {
    /// To the host: on the node plane, each sample by the writer standing for the network
    /// writer that wrote it; `plane` bundles a pass's datagrams.
    Direct {
        writers: Box<StandIns>,
        plane: tessera::DomainParticipant,
    },
    /// To the network: through the scheduler, each sample by the network writer standing for
    /// the application writer that wrote it.
    Scheduled {
        sched: Arc<Scheduler>,
        flow: usize,
        stop: Arc<AtomicBool>,
        writers: Box<StandIns>,
    },
}

/// One operation a pass took: what, from which application writer, and whether it is a
/// dispose / unregister (counted apart).
struct Taken {
    source: AppWriter,
    op: Op,
    lifecycle: bool,
}

impl Sink {
    /// Forwards what one pass took, in order, as one batch: the scheduler queues all of it
    /// before serving, the host-side writer sends it in shared datagrams (one wake-up of a
    /// reader per batch instead of per sample). Counts into `counters`.
    fn send_all(&mut self, ops: Vec<Taken>, counters: &Counters) {
        match self {
            Sink::Scheduled {
                sched,
                flow,
                stop,
                writers,
            } => {
                let (mut samples, mut lifecycle) = (0, 0);
                let mut queued = Vec::with_capacity(ops.len());
                for t in ops {
                    // A dispose or unregister from a writer that has left: its network writer
                    // left too, which unregistered its instances beyond the node.
                    if t.lifecycle && !writers.has(&t.source) {
                        continue;
                    }
                    match writers.get(t.source) {
                        Ok(w) => queued.push((w, t.op)),
                        Err(e) => {
                            tracing::debug!(%e, "node: no network writer");
                            counters.failed.fetch_add(1, Ordering::Relaxed);
                            continue;
                        }
                    }
                    if t.lifecycle {
                        lifecycle += 1;
                    } else {
                        samples += 1;
                    }
                }
                if sched.push_all(*flow, queued, stop) {
                    counters.samples.fetch_add(samples, Ordering::Relaxed);
                    counters.lifecycle.fetch_add(lifecycle, Ordering::Relaxed);
                } else {
                    counters
                        .failed
                        .fetch_add(samples + lifecycle, Ordering::Relaxed);
                }
            }
            Sink::Direct { writers, plane } => {
                let mut written: Vec<UntypedDataWriter> = Vec::new();
                for t in ops {
                    if t.lifecycle && !writers.has(&t.source) {
                        continue;
                    }
                    let w = match writers.get(t.source) {
                        Ok(w) => w,
                        Err(e) => {
                            tracing::debug!(%e, "node: no writer on the plane");
                            counters.failed.fetch_add(1, Ordering::Relaxed);
                            continue;
                        }
                    };
                    let r = match t.op {
                        Op::Write(b, ts) => w.write_serialized_with_timestamp(&b, ts),
                        Op::Dispose(k) => w.dispose_serialized(&k),
                        Op::Unregister(k) => w.unregister_serialized(&k),
                    };
                    let counter = match r {
                        Ok(()) if t.lifecycle => &counters.lifecycle,
                        Ok(()) => &counters.samples,
                        Err(e) => {
                            tracing::debug!(%e, "node: forwarding failed");
                            &counters.failed
                        }
                    };
                    counter.fetch_add(1, Ordering::Relaxed);
                    if !written.iter().any(|x| x.guid() == w.guid()) {
                        written.push(w);
                    }
                }
                let _bundle = plane.bundle_sends();
                for w in &written {
                    w.flush();
                }
            }
        }
    }

    /// Asserts the liveliness of the writers standing for `alive` (the writers whose
    /// liveliness holds at the proxy reader): one that stops asserting itself is lost beyond
    /// the node too, while the others stay.
    fn assert_liveliness(&self, alive: &[tessera::rtps::types::Guid]) {
        let (Sink::Direct { writers, .. } | Sink::Scheduled { writers, .. }) = self;
        for w in writers.standing_for(alive) {
            let _ = w.assert_liveliness();
        }
    }

    /// The proxy reader's writers now: stand-ins for new ones, those of writers that left go.
    fn sync_writers(&mut self, live: &[tessera::rtps::types::Guid]) {
        let (Sink::Direct { writers, .. } | Sink::Scheduled { writers, .. }) = self;
        let gone = writers.sync(live);
        if gone > 0 {
            tracing::debug!(gone, left = writers.len(), "node: writers left");
        }
    }
}

fn reliability(best_effort: bool) -> Reliability {
    if best_effort {
        Reliability::best_effort()
    } else {
        Reliability::reliable(Duration::from_secs(1))
    }
}

impl Route {
    /// Opens the route of `topic` in direction `dir` for what the applications have on it.
    /// Errors are reasons to log and retry later.
    pub(crate) fn open(node: &Shared, key: &RouteKey, uses: &TopicUse) -> Result<Route, String> {
        let (topic, dir, partitions) = (key.0.as_str(), key.1, &key.2);
        let ty = node
            .local
            .discover_type(topic, node.config.type_timeout)
            .map_err(|e| format!("type of {topic} ({}): {e}", uses.type_name))?;
        let err = |e: tessera::Error| format!("{topic}: {e}");
        let local_topic = node
            .local
            .create_dynamic_topic(topic, ty.clone(), TopicQos::default())
            .map_err(err)?;
        let net_topic = node
            .net
            .create_dynamic_topic(topic, ty, TopicQos::default())
            .map_err(err)?;
        let (from, to, from_topic, to_topic) = match dir {
            Direction::ToNetwork => (&node.local, &node.net, &local_topic, &net_topic),
            Direction::FromNetwork => (&node.net, &node.local, &net_topic, &local_topic),
        };
        // The reader must match every writer it forwards from (best effort if any of them is),
        // and the writer offers what the readers beyond it may ask.
        let remote_writers: Vec<_> = node
            .net
            .discovered_endpoints()
            .into_iter()
            .filter_map(|e| match e {
                tessera::rtps::discovery::RemoteEndpointInfo::Writer(w)
                    if w.topic_name == topic =>
                {
                    Some(w)
                }
                _ => None,
            })
            .collect();
        let reader_best_effort = match dir {
            Direction::ToNetwork => uses
                .writers
                .iter()
                .any(|w| w.qos.reliability.kind == ReliabilityKind::BestEffort),
            Direction::FromNetwork => remote_writers
                .iter()
                .any(|w| w.qos.reliability.kind == ReliabilityKind::BestEffort),
        };
        let terms = match dir {
            Direction::ToNetwork => RouteQos::to_network(&uses.writers),
            Direction::FromNetwork => RouteQos::from_network(&uses.readers, &remote_writers),
        };
        let reader_qos = DataReaderQos {
            reliability: reliability(reader_best_effort),
            durability: terms.reader.durability,
            deadline: terms.reader.deadline,
            liveliness: terms.reader.liveliness,
            ownership: terms.reader.ownership,
            destination_order: terms.reader.destination_order,
            // Accepts every writer's budget (a reader asking less matches fewer writers).
            latency_budget: LatencyBudget { duration: INFINITE },
            history: History::KeepAll,
            resource_limits: ResourceLimits {
                max_samples: Some(PROXY_READER_SAMPLES),
                ..ResourceLimits::UNLIMITED
            },
            ..DataReaderQos::default()
        };
        // The writers' most urgent ranking (the scheduler's order; the network writer offers
        // that budget, and batches within it).
        let rank = Rank {
            priority: uses
                .writers
                .iter()
                .map(|w| w.qos.transport_priority.0)
                .max()
                .unwrap_or(0),
            latency_budget: uses
                .writers
                .iter()
                .map(|w| w.qos.latency_budget.duration)
                .min()
                .unwrap_or(Duration::ZERO),
        };
        let writer_durable = terms.writer.durability != Durability::Volatile;
        let writer_qos = DataWriterQos {
            // The scheduler's writers wait briefly (NETWORK_BLOCKING); the local side's longer.
            reliability: match dir {
                Direction::ToNetwork => Reliability::reliable(NETWORK_BLOCKING),
                Direction::FromNetwork => reliability(false),
            },
            durability: terms.writer.durability,
            durability_service: terms.writer.durability_service,
            history: terms.writer.history,
            resource_limits: terms.writer.resource_limits,
            deadline: terms.writer.deadline,
            liveliness: terms.writer.liveliness,
            ownership: terms.writer.ownership,
            ownership_strength: terms.writer.ownership_strength,
            destination_order: terms.writer.destination_order,
            lifespan: terms.writer.lifespan,
            latency_budget: LatencyBudget {
                duration: match dir {
                    Direction::ToNetwork => rank.latency_budget,
                    Direction::FromNetwork => Duration::ZERO,
                },
            },
            ..DataWriterQos::default()
        };
        // Both proxies in the applications' partitions, so they match the same peers.
        let partition = Partition(partitions.clone());
        let (from, from_topic) = (from.clone(), from_topic.untyped().clone());
        let sub_qos = SubscriberQos {
            partition: partition.clone(),
            ..Default::default()
        };
        let make_reader = move || {
            from.create_subscriber(sub_qos.clone())
                .and_then(|s| s.create_untyped_datareader_for(&from_topic, reader_qos.clone()))
        };
        let publisher = to
            .create_publisher(PublisherQos {
                partition,
                ..Default::default()
            })
            .map_err(err)?;
        let stop = Arc::new(AtomicBool::new(false));
        // A volatile topic goes to the network only once a reader there wants it: until then
        // the node has no proxy reader, so the applications' samples are not copied to it
        // (local traffic stays between the applications). A durable one is read at once, so
        // that the network writers' histories serve late joiners.
        let (sink, source) = match dir {
            Direction::ToNetwork => {
                // A network writer per application writer, made now for those known (so
                // that readers beyond the node match them before they write) and later for
                // those that come.
                let mut writers = StandIns::new(
                    publisher,
                    to_topic.untyped().clone(),
                    node.local.clone(),
                    writer_qos,
                    true,
                );
                writers.make_all(&uses.writers).map_err(err)?;
                let source = if writer_durable {
                    ReaderSource::Ready(make_reader().map_err(err)?)
                } else {
                    ReaderSource::WhenMatched {
                        make: Box::new(make_reader),
                        watch: writers.all().cloned().collect(),
                    }
                };
                let flow = node.sched.add_flow(topic, rank);
                let sink = Sink::Scheduled {
                    sched: node.sched.clone(),
                    flow,
                    stop: stop.clone(),
                    writers: Box::new(writers),
                };
                (sink, source)
            }
            Direction::FromNetwork => {
                // A writer on the plane per network writer, made as their samples come, with
                // the terms the host's readers asked for (and each writer's strength).
                let writers = StandIns::new(
                    publisher,
                    to_topic.untyped().clone(),
                    node.net.clone(),
                    writer_qos,
                    false,
                );
                (
                    Sink::Direct {
                        writers: Box::new(writers),
                        plane: node.local.clone(),
                    },
                    ReaderSource::Ready(make_reader().map_err(err)?),
                )
            }
        };
        // A manual-liveliness stand-in is alive while the writer it stands for is.
        let asserter = terms.asserts_liveliness().then(|| terms.assert_period());
        let counters = Arc::new(Counters::default());
        let wake = GuardCondition::new();
        let (c, s, w) = (counters.clone(), stop.clone(), wake.condition());
        // What left this host through this node may come back as a durability service's
        // replay (under the node's network writer's name); the host has it already.
        let own_prefix = match dir {
            Direction::FromNetwork => Some(node.net.guid().prefix),
            Direction::ToNetwork => None,
        };
        let thread = std::thread::Builder::new()
            .name(format!("tessera-node-{topic}"))
            .spawn(move || {
                if let Some(reader) = source.reader(&s, &w) {
                    let forward = Forward {
                        sink,
                        skip: own_prefix,
                        asserter,
                    };
                    pump(reader, forward, &c, (&s, &w));
                }
            })
            .map_err(|e| format!("{topic}: {e}"))?;
        Ok(Route {
            topic: topic.to_owned(),
            direction: dir,
            counters,
            stop,
            wake,
            thread: Some(thread),
        })
    }

    pub(crate) fn stats(&self) -> RouteStats {
        RouteStats {
            topic: self.topic.clone(),
            direction: self.direction,
            samples: self.counters.samples.load(Ordering::Relaxed),
            lifecycle: self.counters.lifecycle.load(Ordering::Relaxed),
            failed: self.counters.failed.load(Ordering::Relaxed),
            own: self.counters.own.load(Ordering::Relaxed),
        }
    }
}

impl Drop for Route {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        self.wake.set_trigger_value(true);
        if let Some(t) = self.thread.take() {
            // The pump owns the sink: its flow leaves the scheduler when the pump ends.
            let _ = t.join();
        }
    }
}

impl Drop for Sink {
    fn drop(&mut self) {
        if let Sink::Scheduled { sched: s, flow, .. } = self {
            s.close_flow(*flow);
        }
    }
}

/// Where a route reads from: a proxy reader made at once, or once one of the route's network
/// writers matches a reader.
enum ReaderSource {
    Ready(UntypedDataReader),
    WhenMatched {
        make: Box<dyn Fn() -> tessera::Result<UntypedDataReader> + Send>,
        /// The network writers made when the route opened.
        watch: Vec<UntypedDataWriter>,
    },
}

/// The longest a route's thread waits without news (its stop and its conditions wake it; this
/// only bounds a missed wake-up).
const IDLE_WAIT: Duration = Duration::from_secs(1);

impl ReaderSource {
    /// The proxy reader, waiting for a network reader first if need be; `None` when stopped.
    /// Waits on the writer's PUBLICATION_MATCHED and `stopped`, not on a timer: a node carries
    /// a route per topic and direction, mostly idle (ddsperf alone opens about 20), and polling
    /// them every 20 ms was a thousand wake-ups a second of a node that forwards nothing.
    fn reader(self, stop: &AtomicBool, stopped: &Condition) -> Option<UntypedDataReader> {
        match self {
            ReaderSource::Ready(r) => Some(r),
            ReaderSource::WhenMatched { make, watch } => {
                let mut ws = WaitSet::new();
                for w in &watch {
                    ws.attach(&w.status_condition(StatusMask::PUBLICATION_MATCHED));
                }
                ws.attach(stopped);
                while !stop.load(Ordering::Relaxed) {
                    // Reading the status resets its trigger; the look at the matches comes
                    // after, so a match between the two is not missed.
                    let mut matched = false;
                    for w in &watch {
                        let _ = w.publication_matched_status();
                        matched |= !w.matched_subscriptions().is_empty();
                    }
                    if matched {
                        match make() {
                            Ok(r) => return Some(r),
                            Err(e) => {
                                tracing::debug!(%e, "node: proxy reader not created");
                                std::thread::sleep(Duration::from_millis(20));
                                continue;
                            }
                        }
                    }
                    let _ = ws.wait(Some(IDLE_WAIT));
                }
                None
            }
        }
    }
}

/// Where a route's pump sends what its reader takes.
struct Forward {
    sink: Sink,
    /// Samples written by a writer of this participant are not forwarded.
    skip: Option<GuidPrefix>,
    /// How often to assert the sink's writers (manual liveliness), each while the reader sees
    /// the writer it stands for alive.
    asserter: Option<Duration>,
}

/// Moves everything the reader receives to the sink until stopped (see [`Forward`]), a pass
/// (what one take returns) at a time.
fn pump(
    reader: UntypedDataReader,
    forward: Forward,
    counters: &Counters,
    (stop, stopped): (&AtomicBool, &Condition),
) {
    let Forward {
        mut sink,
        skip,
        asserter,
    } = forward;
    let mut next_assert = Instant::now();
    let wait = asserter.map_or(IDLE_WAIT, |period| period.min(IDLE_WAIT));
    let support = reader.type_support().clone();
    let cond: Condition = reader.status_condition(StatusMask::DATA_AVAILABLE);
    let matched: Condition = reader.status_condition(StatusMask::SUBSCRIPTION_MATCHED);
    let mut ws = WaitSet::new();
    ws.attach(&cond);
    ws.attach(&matched);
    ws.attach(stopped);
    // The key of every live instance, to name it in a dispose or unregister.
    let mut keys: HashMap<InstanceHandle, Vec<u8>> = HashMap::new();
    let mut samples = Vec::new();
    sink.sync_writers(&reader.matched_publications());
    while !stop.load(Ordering::Relaxed) {
        let _ = ws.wait(Some(wait));
        if let Some(period) = asserter {
            let now = Instant::now();
            if now >= next_assert {
                next_assert = now + period;
                sink.assert_liveliness(&reader.alive_publications());
            }
        }
        while !stop.load(Ordering::Relaxed) {
            samples.clear();
            let n = reader.take_serialized_into(&mut samples, 256);
            if n == 0 {
                break;
            }
            let mut ops = Vec::with_capacity(n);
            for s in samples.drain(..) {
                if skip.is_some_and(|p| s.info.publication_handle[..12] == p.0) {
                    counters.own.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
                let handle = s.info.instance_handle;
                let (op, lifecycle) = match s.data {
                    Some(p) => {
                        if support.is_keyed()
                            && keys.len() < MAX_INSTANCES
                            && !keys.contains_key(&handle)
                        {
                            if let Some(k) = support.key_payload_of_sample(p.as_bytes()) {
                                keys.insert(handle, k);
                            }
                        }
                        (
                            Op::Write(p.as_bytes().to_vec(), s.info.source_timestamp),
                            false,
                        )
                    }
                    None => {
                        let Some(k) = keys.remove(&handle) else {
                            continue;
                        };
                        match s.info.instance_state {
                            InstanceState::NotAliveDisposed => (Op::Dispose(k), true),
                            InstanceState::NotAliveNoWriters => (Op::Unregister(k), true),
                            InstanceState::Alive => continue,
                        }
                    }
                };
                ops.push(Taken {
                    source: s.info.publication_handle,
                    op,
                    lifecycle,
                });
            }
            if !ops.is_empty() {
                sink.send_all(ops, counters);
            }
        }
        // After taking what the reader holds, so that a writer's last samples go before its
        // network writer does.
        if matched.trigger_value() {
            let _ = reader.subscription_matched_status();
            sink.sync_writers(&reader.matched_publications());
        }
    }
}
