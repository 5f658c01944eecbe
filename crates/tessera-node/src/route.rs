//! A route: a proxy reader on one side of the node, a writer on the other, and the thread that
//! moves samples (and dispose / unregister) between them.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use tessera::history::{InstanceHandle, InstanceState};
use tessera::qos::{
    DataReaderQos, DataWriterQos, Durability, DurabilityService, History, LatencyBudget, Partition,
    PublisherQos, Reliability, ReliabilityKind, ResourceLimits, SubscriberQos, TopicQos,
    WriterSideQos, INFINITE,
};
use tessera::rtps::discovery::{DiscoveredReaderData, DiscoveredWriterData};
use tessera::{Condition, StatusMask, UntypedDataReader, UntypedDataWriter, WaitSet};

use crate::sched::{Op, Rank, Scheduler};
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
    thread: Option<JoinHandle<()>>,
}

enum Sink {
    Direct(UntypedDataWriter),
    Scheduled(Arc<Scheduler>, usize, Arc<AtomicBool>),
}

impl Sink {
    fn send(&self, op: Op) -> tessera::Result<()> {
        match self {
            Sink::Scheduled(s, flow, stop) => {
                if s.push(*flow, op, stop) {
                    Ok(())
                } else {
                    Err(tessera::Error::PreconditionNotMet("node stopping".into()))
                }
            }
            Sink::Direct(w) => match op {
                Op::Write(b, ts) => w.write_serialized_with_timestamp(&b, ts),
                Op::Dispose(k) => w.dispose_serialized(&k),
                Op::Unregister(k) => w.unregister_serialized(&k),
            },
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

/// What a route's endpoints ask and offer of DURABILITY, so that the node is as transparent
/// to it as a network is: a durable application writer stays as durable on the network (a
/// TRANSIENT one is kept by the durability services there), and an application reader gets
/// the history its request entitles it to.
struct DurableQos {
    /// The proxy reader's request.
    reader: Durability,
    /// The forwarding writer's offer, and what it keeps (a durable writer's history serves
    /// late joiners; the DURABILITY_SERVICE tells a service how much to keep).
    writer: Durability,
    history: History,
    resource_limits: ResourceLimits,
    service: DurabilityService,
}

/// What a durable forwarding writer keeps when no writer it stands for says more.
const DEFAULT_DURABLE_DEPTH: u32 = 16;

impl DurableQos {
    /// A non-durable route's QoS: asks for no history, offers none, keeps everything until
    /// it is sent.
    fn volatile() -> DurableQos {
        DurableQos {
            reader: Durability::Volatile,
            writer: Durability::Volatile,
            history: History::KeepAll,
            resource_limits: ResourceLimits::default(),
            service: DurabilityService::default(),
        }
    }

    /// Local applications' writers to the network. The network writer offers the strongest
    /// durability among them, with that writer's history and DURABILITY_SERVICE. The proxy
    /// reader asks TRANSIENT_LOCAL when every writer offers at least that (it then takes the
    /// history they kept before the route opened) and never more: a durability service's
    /// replays (relayed samples) are for TRANSIENT readers, so the host's own service's
    /// replays do not leave the host again as the node's samples.
    fn to_network(writers: &[Arc<DiscoveredWriterData>]) -> DurableQos {
        let mut q = Self::volatile();
        let Some(model) = writers.iter().max_by_key(|w| durable_rank(&w.qos)) else {
            return q;
        };
        if model.qos.durability != Durability::Volatile {
            q.writer = model.qos.durability;
            q.history = model.qos.history;
            q.resource_limits = model.qos.resource_limits;
            q.service = model.qos.durability_service;
        }
        let weakest = writers.iter().map(|w| w.qos.durability).min();
        q.reader = weakest.map_or(Durability::Volatile, |d| d.min(Durability::TransientLocal));
        q
    }

    /// The network's writers to local applications' readers. The proxy reader asks what every
    /// local reader asks at least (it matches every remote writer each of them would, and
    /// TRANSIENT readers receive the durability services' replays); the local writer offers
    /// what the most demanding reader asks, keeping the history and DURABILITY_SERVICE of the
    /// strongest remote writer known when the route opens (16 samples per instance if none).
    fn from_network(
        readers: &[Arc<DiscoveredReaderData>],
        remote_writers: &[Arc<DiscoveredWriterData>],
    ) -> DurableQos {
        let mut q = Self::volatile();
        q.reader = readers
            .iter()
            .map(|r| r.qos.durability)
            .min()
            .unwrap_or(Durability::Volatile);
        let strongest = readers.iter().map(|r| r.qos.durability).max();
        let strongest = strongest.unwrap_or(Durability::Volatile);
        if strongest == Durability::Volatile {
            return q;
        }
        q.writer = strongest;
        match remote_writers.iter().max_by_key(|w| durable_rank(&w.qos)) {
            Some(model) if model.qos.durability != Durability::Volatile => {
                q.history = model.qos.history;
                q.resource_limits = model.qos.resource_limits;
                q.service = model.qos.durability_service;
            }
            _ => q.history = History::KeepLast(DEFAULT_DURABLE_DEPTH),
        }
        q
    }
}

/// Orders writers by how much they keep for late joiners: durability first, then history.
fn durable_rank(q: &WriterSideQos) -> (Durability, u64) {
    let depth = match q.history {
        History::KeepAll => u64::MAX,
        History::KeepLast(n) => u64::from(n),
    };
    (q.durability, depth)
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
        let durable = match dir {
            Direction::ToNetwork => DurableQos::to_network(&uses.writers),
            Direction::FromNetwork => DurableQos::from_network(&uses.readers, &remote_writers),
        };
        let reader_qos = DataReaderQos {
            reliability: reliability(reader_best_effort),
            durability: durable.reader,
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
        let writer_durable = durable.writer != Durability::Volatile;
        let writer_qos = DataWriterQos {
            // The scheduler's writers wait briefly (NETWORK_BLOCKING); the local side's longer.
            reliability: match dir {
                Direction::ToNetwork => Reliability::reliable(NETWORK_BLOCKING),
                Direction::FromNetwork => reliability(false),
            },
            durability: durable.writer,
            durability_service: durable.service,
            history: durable.history,
            resource_limits: durable.resource_limits,
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
        let writer = to
            .create_publisher(PublisherQos {
                partition,
                ..Default::default()
            })
            .and_then(|p| p.create_untyped_datawriter(to_topic.untyped(), writer_qos))
            .map_err(err)?;
        // A volatile topic goes to the network only once a reader there wants it: until then
        // the node has no proxy reader, so the applications' samples are not copied to it
        // (local traffic stays between the applications). A durable one is read at once, so
        // that the network writer's history serves late joiners.
        let source = if dir == Direction::ToNetwork && !writer_durable {
            Source::WhenMatched {
                make: Box::new(make_reader),
                watch: writer.clone(),
            }
        } else {
            Source::Ready(make_reader().map_err(err)?)
        };
        let stop = Arc::new(AtomicBool::new(false));
        let sink = match dir {
            Direction::ToNetwork => {
                let flow = node.sched.add_flow(topic, rank, writer);
                Sink::Scheduled(node.sched.clone(), flow, stop.clone())
            }
            Direction::FromNetwork => Sink::Direct(writer),
        };
        let counters = Arc::new(Counters::default());
        let (c, s) = (counters.clone(), stop.clone());
        // What left this host through this node may come back as a durability service's
        // replay (under the node's network writer's name); the host has it already.
        let own_prefix = match dir {
            Direction::FromNetwork => Some(node.net.guid().to_bytes()),
            Direction::ToNetwork => None,
        };
        let thread = std::thread::Builder::new()
            .name(format!("tessera-node-{topic}"))
            .spawn(move || {
                if let Some(reader) = source.reader(&s) {
                    pump(reader, sink, own_prefix, &c, &s);
                }
            })
            .map_err(|e| format!("{topic}: {e}"))?;
        Ok(Route {
            topic: topic.to_owned(),
            direction: dir,
            counters,
            stop,
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
        if let Some(t) = self.thread.take() {
            // The pump owns the sink: its flow leaves the scheduler when the pump ends.
            let _ = t.join();
        }
    }
}

impl Drop for Sink {
    fn drop(&mut self) {
        if let Sink::Scheduled(s, flow, _) = self {
            s.close_flow(*flow);
        }
    }
}

/// Where a route reads from: a proxy reader made at once, or once the route's network writer
/// matches a reader.
enum Source {
    Ready(UntypedDataReader),
    WhenMatched {
        make: Box<dyn Fn() -> tessera::Result<UntypedDataReader> + Send>,
        watch: UntypedDataWriter,
    },
}

/// How often a route without its proxy reader looks for a matched network reader.
const MATCH_POLL: Duration = Duration::from_millis(20);

impl Source {
    /// The proxy reader, waiting for a network reader first if need be; `None` when stopped.
    fn reader(self, stop: &AtomicBool) -> Option<UntypedDataReader> {
        match self {
            Source::Ready(r) => Some(r),
            Source::WhenMatched { make, watch } => {
                while !stop.load(Ordering::Relaxed) {
                    if !watch.matched_subscriptions().is_empty() {
                        match make() {
                            Ok(r) => return Some(r),
                            Err(e) => tracing::debug!(%e, "node: proxy reader not created"),
                        }
                    }
                    std::thread::sleep(MATCH_POLL);
                }
                None
            }
        }
    }
}

/// Moves everything the reader receives to the sink until stopped, except samples written by
/// a writer of the participant `skip` names (the first 12 bytes, its GUID prefix).
fn pump(
    reader: UntypedDataReader,
    sink: Sink,
    skip: Option<[u8; 16]>,
    counters: &Counters,
    stop: &AtomicBool,
) {
    let support = reader.type_support().clone();
    let cond: Condition = reader.status_condition(StatusMask::DATA_AVAILABLE);
    let mut ws = WaitSet::new();
    ws.attach(&cond);
    // The key of every live instance, to name it in a dispose or unregister.
    let mut keys: HashMap<InstanceHandle, Vec<u8>> = HashMap::new();
    let mut samples = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        let _ = ws.wait(Some(Duration::from_millis(100)));
        while !stop.load(Ordering::Relaxed) {
            samples.clear();
            let n = reader.take_serialized_into(&mut samples, 256);
            if n == 0 {
                break;
            }
            for s in samples.drain(..) {
                if skip.is_some_and(|p| s.info.publication_handle[..12] == p[..12]) {
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
                match sink.send(op) {
                    Ok(()) if lifecycle => counters.lifecycle.fetch_add(1, Ordering::Relaxed),
                    Ok(()) => counters.samples.fetch_add(1, Ordering::Relaxed),
                    Err(e) => {
                        tracing::debug!(%e, "node: forwarding failed");
                        counters.failed.fetch_add(1, Ordering::Relaxed)
                    }
                };
            }
        }
    }
}
