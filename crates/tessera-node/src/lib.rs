//! The node service of Tessera's federated architecture (`tessera node`): one per host, it does
//! the networking for every application of the host that runs in node mode
//! (`TESSERA_NODE=1`, [`tessera::ParticipantConfig::node`]).
//!
//! # Shape
//! The node holds two participants:
//! - a **local** one on the host's node plane ([`tessera::node`]: shared memory for data,
//!   loopback-only discovery on ports of its own), where it meets the attached applications;
//! - a **network** one, ordinary UDP (one set of sockets, one SPDP presence for the host), where
//!   it meets other hosts: their nodes, or plain decentralized participants.
//!
//! Both ignore their own endpoints (`ignore_local`), so a proxy writer never feeds the proxy
//! reader beside it. For every topic on which a local application writes, the node makes a
//! *route* local → network (a proxy reader on the local side, a proxy writer on the network
//! side); for every topic an application reads, a route network → local. Routes follow the
//! applications' endpoints alone, never the other side's, so two nodes need not wait for each
//! other (each announces what its host writes and reads). A sample only ever crosses from one
//! side to the other through a route, and neither side sees the other's proxies: nothing is
//! forwarded back.
//!
//! Types come from the applications over TypeLookup ([`tessera::DomainParticipant::discover_type`]),
//! so keyed topics keep their instances, and dispose / unregister are forwarded (the node keeps
//! each live instance's key to say which one).
//!
//! Samples going out are scheduled ([`sched`]): by TRANSPORT_PRIORITY, then LATENCY_BUDGET, of
//! the writing applications, with a token bucket per topic, and the network writers batch, so
//! samples of all applications share datagrams.
//!
//! Request/offered QoS passes through ([`route_qos`]): a route's proxy reader asks the weakest
//! of what the endpoints it serves would ask, its writer offers what every writer behind it
//! keeps (or what the most demanding reader asks), for DURABILITY (the network's durability
//! services keep a TRANSIENT application writer's data), DEADLINE, LIVELINESS (asserted by
//! the route while a writer behind is alive), OWNERSHIP (EXCLUSIVE decided on the host),
//! DESTINATION_ORDER and LIFESPAN.
//!
//! # Durability service
//! With [`NodeConfig::durability`] (`tessera node --durability`) the node also runs a
//! durability service ([`tessera_durability`]) on a participant of its own attached to the
//! node plane, like one of the host's applications: it keeps the TRANSIENT and PERSISTENT
//! data of the host's writers (and of the network's, on topics the host's applications read:
//! the routes bring them) past those writers, and serves them over shared memory to the host's
//! late-joining readers, under the original writers' names. Its replays stay on the host: a
//! route's proxy reader is never TRANSIENT, so it does not take them.
//!
//! # Limits
//! A route's QoS is set when it is made (reliable unless an application endpoint on the topic
//! is best effort; the rest as above, from the endpoints known then); samples leave the
//! node under the node's writers' names; types that dynamic types do not model are not
//! forwarded (logged). The hosted durability service is not replicated (`--replicated` is for
//! services of their own).

pub mod route;
pub mod route_qos;
pub mod sched;
mod stand_ins;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::Mutex;
use tessera::node::NodePresence;
use tessera::rtps::discovery::RemoteEndpointInfo;
use tessera::{DomainParticipant, ParticipantConfig};

pub use route::{Direction, RouteStats};
pub use sched::{Rate, SchedulerStats};

/// The node service's settings.
#[derive(Debug, Clone)]
pub struct NodeConfig {
    /// The DDS domain.
    pub domain: u32,
    /// How often the applications' endpoints are looked at for new routes.
    pub poll: Duration,
    /// How long to wait for a topic's type over TypeLookup before retrying later.
    pub type_timeout: Duration,
    /// Rate limits of topics going out (by topic name; `None` key: every other topic).
    pub rates: HashMap<Option<String>, Rate>,
    /// The network participant's configuration (`None`: the environment's, as any
    /// participant; `ignore_local` is always set).
    pub network: Option<ParticipantConfig>,
    /// How long a busy flow gathers samples into one datagram: the node plane's shared-memory
    /// gathering window (`ShmConfig::gather`: while the applications write more often than
    /// this, the node takes their unprioritised samples once per window), and twice the time
    /// a flow holds what follows a send ([`sched::Coalescer`]). Zero: each sample is sent when
    /// the flow's queue empties. Flows with a latency budget or a positive transport priority
    /// do not wait there.
    pub batch_window: Duration,
    /// Run a durability service inside the node (see the crate docs); `None`: none. Its
    /// `replicated` must be off.
    pub durability: Option<tessera_durability::ServiceConfig>,
}

impl NodeConfig {
    /// Defaults for `domain`: looks every 100 ms, no rate limit, a 1 ms batch window.
    pub fn new(domain: u32) -> NodeConfig {
        NodeConfig {
            domain,
            poll: Duration::from_millis(100),
            type_timeout: Duration::from_secs(2),
            rates: HashMap::new(),
            network: None,
            batch_window: sched::BATCH_WINDOW,
            durability: None,
        }
    }
}

/// Errors starting the node.
#[derive(Debug, thiserror::Error)]
pub enum NodeError {
    /// Another node serves this domain in this network namespace, or the presence file could
    /// not be written (a resource or a second node: the caller's environment).
    #[error("node presence: {0}")]
    Presence(#[source] std::io::Error),
    /// A participant could not be created.
    #[error(transparent)]
    Dds(#[from] tessera::Error),
    /// The hosted durability service could not start (its store, or its endpoints).
    #[error(transparent)]
    Durability(#[from] tessera_durability::ServiceError),
    /// The configuration asks for something the node does not do.
    #[error("node configuration: {0}")]
    Config(String),
}

/// A running node service; stopped (routes, participants, presence file) when dropped.
pub struct Node {
    /// Leaves first (its participant says goodbye while the node still carries it).
    durability: Option<tessera_durability::DurabilityService>,
    shared: Arc<Shared>,
    manager: Option<JoinHandle<()>>,
    _presence: NodePresence,
}

struct Shared {
    config: NodeConfig,
    local: DomainParticipant,
    net: DomainParticipant,
    routes: Mutex<HashMap<RouteKey, route::Route>>,
    /// Topics whose type could not be had yet, and why (retried every poll).
    pending: Mutex<HashMap<String, String>>,
    sched: Arc<sched::Scheduler>,
    stop: AtomicBool,
}

impl Node {
    /// Starts the node of `config.domain`: both participants, then the route manager.
    pub fn start(config: NodeConfig) -> Result<Node, NodeError> {
        if config.durability.as_ref().is_some_and(|d| d.replicated) {
            return Err(NodeError::Config(
                "a durability service inside the node is not replicated; run \
                 `tessera durability --replicated` beside it"
                    .into(),
            ));
        }
        // Opened before anything joins the domain: a store that cannot be opened (locked by
        // another service, unreadable) stops the node before it is announced.
        let durable_store = match &config.durability {
            Some(d) => tessera_durability::DurabilityService::open_store(d)?,
            None => None,
        };
        let presence = NodePresence::announce(config.domain).map_err(NodeError::Presence)?;
        let mut local_cfg = tessera::node::node_plane_config(config.domain)?;
        local_cfg.ignore_local = true;
        // The applications' unmarked samples wait for the node's receive thread to come round
        // (one wake-up per window while busy) instead of each waking it: the scheduler holds
        // busy flows this long anyway.
        local_cfg.shm = Some(tessera::transport::shm::ShmConfig {
            gather: config.batch_window,
            ..local_cfg.shm.take().unwrap_or_default()
        });
        let local = DomainParticipant::with_qos(config.domain, Default::default(), local_cfg)?;
        let mut net_cfg = config.network.clone().unwrap_or_default();
        net_cfg.ignore_local = true;
        net_cfg.node = Some(false);
        let net = DomainParticipant::with_qos(config.domain, Default::default(), net_cfg)?;
        let sched = sched::Scheduler::start(config.rates.clone(), config.batch_window, net.clone());
        let shared = Arc::new(Shared {
            config,
            local,
            net,
            routes: Mutex::new(HashMap::new()),
            pending: Mutex::new(HashMap::new()),
            sched,
            stop: AtomicBool::new(false),
        });
        let s = shared.clone();
        let manager = std::thread::Builder::new()
            .name("tessera-node".into())
            .spawn(move || s.manage())
            .map_err(|e| NodeError::Dds(tessera::Error::Io(e)))?;
        let mut node = Node {
            durability: None,
            shared,
            manager: Some(manager),
            _presence: presence,
        };
        if let Some(service_config) = node.shared.config.durability.clone() {
            // An application of this node, like any other of the host's.
            let attached = ParticipantConfig {
                node: Some(true),
                ..Default::default()
            };
            let participant = DomainParticipant::with_qos(
                node.shared.config.domain,
                Default::default(),
                attached,
            )?;
            if !participant.attached_to_node() {
                return Err(NodeError::Config(
                    "the durability service did not attach to the node".into(),
                ));
            }
            node.durability = Some(tessera_durability::DurabilityService::start_with_store(
                participant,
                service_config,
                durable_store,
            )?);
        }
        Ok(node)
    }

    /// The durability service the node runs, if any.
    pub fn durability(&self) -> Option<&tessera_durability::DurabilityService> {
        self.durability.as_ref()
    }

    /// The local (node-plane) participant.
    pub fn local(&self) -> &DomainParticipant {
        &self.shared.local
    }

    /// The network participant.
    pub fn network(&self) -> &DomainParticipant {
        &self.shared.net
    }

    /// What each route forwarded so far.
    pub fn routes(&self) -> Vec<RouteStats> {
        let mut v: Vec<RouteStats> = self
            .shared
            .routes
            .lock()
            .values()
            .map(|r| r.stats())
            .collect();
        v.sort_by(|a, b| (&a.topic, a.direction).cmp(&(&b.topic, b.direction)));
        v
    }

    /// Topics not routed yet, with the reason (their type is not known yet, or unsupported).
    pub fn pending(&self) -> Vec<(String, String)> {
        let mut v: Vec<_> = self.shared.pending.lock().clone().into_iter().collect();
        v.sort();
        v
    }

    /// The outgoing scheduler's counters.
    pub fn scheduler(&self) -> SchedulerStats {
        self.shared.sched.stats()
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        drop(self.durability.take());
        self.shared.stop.store(true, Ordering::Relaxed);
        if let Some(m) = self.manager.take() {
            let _ = m.join();
        }
        // The scheduler first: a route waiting for room in its queue then gives up at once.
        self.shared.sched.stop();
        let routes: Vec<_> = self.shared.routes.lock().drain().collect();
        drop(routes);
    }
}

/// A route: the topic, the way, and the partitions of the application endpoints it serves.
pub(crate) type RouteKey = (String, Direction, Vec<String>);

/// What the applications have on one topic in one set of partitions.
#[derive(Default)]
struct TopicUse {
    type_name: String,
    writers: Vec<Arc<tessera::rtps::discovery::DiscoveredWriterData>>,
    readers: Vec<Arc<tessera::rtps::discovery::DiscoveredReaderData>>,
}

impl Shared {
    fn manage(&self) {
        // Routes no application needed at the last look: closed if still unneeded now (an
        // endpoint may be between its SEDP withdrawal and its replacement).
        let mut idle: Vec<RouteKey> = Vec::new();
        while !self.stop.load(Ordering::Relaxed) {
            idle = self.update_routes(&idle);
            std::thread::sleep(self.config.poll);
        }
    }

    /// Makes the routes the applications' endpoints call for and closes those no longer
    /// needed twice in a row; returns the routes unneeded this time.
    fn update_routes(&self, idle_before: &[RouteKey]) -> Vec<RouteKey> {
        let mut uses: HashMap<RouteKey, TopicUse> = HashMap::new();
        for e in self.local.discovered_endpoints() {
            match e {
                RemoteEndpointInfo::Writer(w) => {
                    let key = (
                        w.topic_name.clone(),
                        Direction::ToNetwork,
                        w.qos.partition.0.clone(),
                    );
                    let t = uses.entry(key).or_default();
                    t.type_name = w.type_name.clone();
                    t.writers.push(w);
                }
                RemoteEndpointInfo::Reader(r) => {
                    let key = (
                        r.topic_name.clone(),
                        Direction::FromNetwork,
                        r.qos.partition.0.clone(),
                    );
                    let t = uses.entry(key).or_default();
                    t.type_name = r.type_name.clone();
                    t.readers.push(r);
                }
            }
        }
        let idle: Vec<RouteKey> = self
            .routes
            .lock()
            .keys()
            .filter(|k| !uses.contains_key(*k))
            .cloned()
            .collect();
        for key in idle.iter().filter(|k| idle_before.contains(k)) {
            if let Some(r) = self.routes.lock().remove(key) {
                tracing::info!(topic = key.0, dir = ?key.1, "node: route closed");
                drop(r);
            }
        }
        for (key, uses) in uses {
            if self.routes.lock().contains_key(&key) {
                continue;
            }
            let topic = &key.0;
            match route::Route::open(self, &key, &uses) {
                Ok(r) => {
                    tracing::info!(topic, dir = ?key.1, "node: route opened");
                    self.pending.lock().remove(topic);
                    self.routes.lock().insert(key, r);
                }
                Err(why) => {
                    tracing::debug!(topic, why, "node: route not opened yet");
                    self.pending.lock().insert(topic.clone(), why);
                }
            }
        }
        idle.into_iter()
            .filter(|k| self.routes.lock().contains_key(k))
            .collect()
    }
}
