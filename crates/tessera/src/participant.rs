//! The domain participant: the entry point of the API and the owner of the runtime.
//!
//! A participant owns its sockets, two kinds of threads and the tables that route received
//! submessages to local endpoints:
//! - one **receive thread per socket** decodes each datagram and hands every submessage to the
//!   endpoint it is for (a data reader, a data writer, or the built-in discovery endpoints),
//!   under that endpoint's own lock;
//! - one **event thread** runs the timers: SPDP announcements, lease expiry, heartbeats,
//!   delayed ACKNACKs and retransmissions.
//!
//! Application threads send the first transmission of every sample themselves (see
//! [`crate::publication`]); no queue sits between `write` and the socket.

use crate::bounds::{DropReport, ResourceBounds};
use crate::discovery_rt::{
    DiscoveryMode, DiscoveryOptions, DiscoveryRuntime, ParticipantEvent, ParticipantInfo,
};
use crate::endpoint::{LocalReader, LocalWriter};
use crate::error::{Error, Result};
use crate::publication::Publisher;
use crate::qos::{DomainParticipantQos, PublisherQos, SubscriberQos, TopicQos};
use crate::runtime::RuntimeContext;
use crate::subscription::Subscriber;
use crate::topic::{Topic, TopicInner};
use crate::transport::{
    AllowMulticast, Channel, InProcessNetwork, Receivers, ShmConfig, TransportKind, Transports,
    UdpConfig,
};
use crate::TopicType;
use parking_lot::{Condvar, Mutex, RwLock};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use tessera_rtps::fasthash::FastHashMap;
use tessera_rtps::types::{entity_kind, EntityId, Guid, GuidPrefix, Locator};
use tessera_rtps::wire::{MessageReceiver, Submessage};

/// Configuration of a participant that is not QoS: where it sends and listens.
#[derive(Debug, Clone, Default)]
pub struct ParticipantConfig {
    /// Transport settings (interface, peers, multicast). `None`: defaults for the domain with the
    /// environment applied (`TESSERA_INTERFACE`, `TESSERA_PEERS`, `TESSERA_MULTICAST`).
    pub udp: Option<UdpConfig>,
    /// The transports to open, the preferred UDP one first (`None`: `TESSERA_TRANSPORTS`, e.g.
    /// `udp4,udp6` or `udp4`, or [`crate::transport::DEFAULT_TRANSPORTS`], UDPv4 and shared
    /// memory, when it is unset). Shared memory ([`TransportKind::Shm`]) is preferred wherever
    /// it reaches.
    pub transports: Option<Vec<TransportKind>>,
    /// Settings of the shared-memory transport when it is selected (`None`: the defaults with
    /// `TESSERA_SHM_SPIN_US` and `TESSERA_SHM_SEGMENT_BYTES` applied).
    pub shm: Option<ShmConfig>,
    /// Settings of the TCP transport when it is selected ([`TransportKind::Tcp4`]; `None`: the
    /// defaults with `TESSERA_TCP_PEERS` and `TESSERA_TCP_PORT` applied).
    pub tcp: Option<crate::transport::TcpConfig>,
    /// How the user-data receive threads wait for datagrams (UDP and shared memory): `None`
    /// reads `TESSERA_WAIT` (`block`, the default; `spin:US`, `adaptive:US`, `poll`); see
    /// [`crate::transport::wait`] for what each costs.
    pub wait: Option<crate::transport::WaitStrategy>,
    /// Use this in-process network instead of UDP: no socket is opened, and only participants
    /// of the same network (and domain) are reached. For tests.
    pub in_process: Option<InProcessNetwork>,
    /// Do not match this participant's readers with its own writers (Cyclone's "ignore local
    /// participant"; `ddsperf` relies on it). Off by default: DDS delivers locally.
    pub ignore_local: bool,
    /// Bounds on what peers can make this participant hold (instances per reader, reassembly
    /// and out-of-order bytes, participant-event channels); see [`ResourceBounds`] for the
    /// defaults.
    pub limits: ResourceBounds,
    /// What multicast is used for (Cyclone's `AllowMulticast`): `None` reads
    /// `TESSERA_ALLOW_MULTICAST` (`false`, `spdp` or `true`; default `true`: discovery and
    /// user data). [`AllowMulticast::Off`] also closes the UDP multicast sockets, as
    /// `TESSERA_MULTICAST=false` does.
    pub allow_multicast: Option<AllowMulticast>,
    /// How other participants are found: `None` reads `ROS_DISCOVERY_SERVER` (a client of
    /// those discovery servers when set, standard SPDP/SEDP otherwise); see [`DiscoveryMode`].
    pub discovery: Option<DiscoveryMode>,
    /// The participant lease announced in SPDP: a peer that hears nothing from this participant
    /// for this long drops it and its endpoints (liveliness AUTOMATIC of its writers ends then
    /// too). `None`: `TESSERA_LEASE_DURATION` (seconds, e.g. `2.5`), or 10 s when it is unset.
    /// Announcements go out at least three times per lease.
    pub lease_duration: Option<Duration>,
    /// Whether endpoints announce their type's XTypes TypeInformation in SEDP and the
    /// participant serves the TypeLookup service (what lets Cyclone DDS 11 and its
    /// `cyclonedds typeof`/`subscribe` tools resolve Tessera's types). `None`:
    /// `TESSERA_TYPE_INFORMATION` (`0`/`false` or `1`/`true`), on when it is unset.
    pub type_information: Option<bool>,
    /// The QoS profiles that `*_with_profile` helpers take QoS from (see [`crate::qos_xml`]).
    /// `None`: the files named by `TESSERA_QOS_PROFILES` (`;`-separated), read once per
    /// process at the first use.
    pub qos_profiles: Option<Arc<crate::qos_xml::QosProvider>>,
    /// Attach to the host's node service (`tessera node`, see [`crate::node`]): user data over
    /// shared memory, discovery on the loopback node plane, the network reached through the
    /// node. `None`: `TESSERA_NODE` (off when unset). With no live node on the host the
    /// participant starts decentralized, as if this were off (logged).
    pub node: Option<bool>,
}

/// Environment variable for [`ParticipantConfig::type_information`] when it is `None`.
pub const ENV_TYPE_INFORMATION: &str = "TESSERA_TYPE_INFORMATION";

/// `TESSERA_TYPE_INFORMATION`, on when unset.
fn type_information_from_env() -> Result<bool> {
    match std::env::var(ENV_TYPE_INFORMATION) {
        Err(_) => Ok(true),
        Ok(v) => match v.trim() {
            "1" | "true" | "on" => Ok(true),
            "0" | "false" | "off" => Ok(false),
            _ => Err(Error::BadParameter(format!(
                "{ENV_TYPE_INFORMATION}={v:?}: expected 0 or 1"
            ))),
        },
    }
}

/// Environment variable for [`ParticipantConfig::lease_duration`] when it is `None`.
pub const ENV_LEASE_DURATION: &str = "TESSERA_LEASE_DURATION";

/// The shortest participant lease accepted (a shorter one could not be renewed in time).
pub const MIN_LEASE: Duration = Duration::from_millis(100);

/// `TESSERA_LEASE_DURATION` in seconds (0.1 s to a year), or the 10 s default when unset.
fn lease_from_env() -> Result<Duration> {
    let Ok(v) = std::env::var(ENV_LEASE_DURATION) else {
        return Ok(tessera_rtps::discovery::SPDP_LEASE);
    };
    match v.trim().parse::<f64>() {
        Ok(s) if (0.1..=365.0 * 86_400.0).contains(&s) => Ok(Duration::from_secs_f64(s)),
        _ => Err(Error::BadParameter(format!(
            "{ENV_LEASE_DURATION}={v:?}: expected seconds between 0.1 and 31536000"
        ))),
    }
}

impl ParticipantConfig {
    /// A configuration that uses `network` (an in-process network) instead of UDP.
    pub fn with_in_process(network: InProcessNetwork) -> ParticipantConfig {
        ParticipantConfig {
            in_process: Some(network),
            ..ParticipantConfig::default()
        }
    }
}

/// Counters of what the runtime dropped or repaired; read with
/// [`DomainParticipant::counters`].
#[derive(Debug, Default)]
pub struct RuntimeCounters {
    /// Datagrams whose header could not be decoded.
    pub malformed_messages: AtomicU64,
    /// Submessages that failed to decode (the rest of their datagram is dropped too).
    pub malformed_submessages: AtomicU64,
    /// Submessages for an entity this participant does not have.
    pub unroutable_submessages: AtomicU64,
    /// Datagrams received.
    pub datagrams_received: AtomicU64,
    /// Datagrams sent.
    pub datagrams_sent: AtomicU64,
    /// Send errors.
    pub send_errors: AtomicU64,
    /// Samples and instance updates a reader's history refused (resource limits).
    pub samples_rejected: AtomicU64,
}

/// A snapshot of the runtime's drop and traffic counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CountersSnapshot {
    /// Datagrams whose header could not be decoded.
    pub malformed_messages: u64,
    /// Submessages that failed to decode.
    pub malformed_submessages: u64,
    /// Submessages for an entity this participant does not have.
    pub unroutable_submessages: u64,
    /// Datagrams received.
    pub datagrams_received: u64,
    /// Datagrams sent.
    pub datagrams_sent: u64,
    /// Send errors.
    pub send_errors: u64,
    /// Participant events dropped because the application's channel was full
    /// ([`ResourceBounds::participant_events`]).
    pub participant_events_dropped: u64,
    /// Partial (DATA_FRAG) samples refused because the participant's reassembly bytes were
    /// spent ([`ResourceBounds::reassembly_bytes`]).
    pub reassembly_refused: u64,
    /// Out-of-order samples dropped because the participant's out-of-order bytes were spent
    /// ([`ResourceBounds::out_of_order_bytes`]).
    pub out_of_order_refused: u64,
    /// Samples and instance updates a reader's history refused: RESOURCE_LIMITS, or
    /// [`ResourceBounds::max_instances_per_reader`] (also in each reader's SAMPLE_REJECTED).
    pub samples_rejected: u64,
    /// Datagrams dropped because a slow destination's send queue was full.
    pub send_queue_drops: u64,
}

/// What one transport of a participant carried ([`DomainParticipant::transport_traffic`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TransportTraffic {
    /// The transport's name (`udp4`, `udp6`, `shm`, `inproc`).
    pub name: &'static str,
    /// Datagrams sent.
    pub datagrams_sent: u64,
    /// Bytes sent.
    pub bytes_sent: u64,
    /// Datagrams received.
    pub datagrams_received: u64,
    /// Bytes received.
    pub bytes_received: u64,
}

/// The local readers matched with one remote writer: an immutable snapshot, so that the receive
/// thread clones it (one reference count, no allocation) and runs the readers' handlers, and
/// with them their listeners, without holding the endpoints table's lock.
pub(crate) type ReaderList = Arc<[Arc<dyn LocalReader>]>;

/// The local endpoints, by entity id, and which local readers each remote writer feeds.
#[derive(Default)]
pub(crate) struct Endpoints {
    pub writers: FastHashMap<EntityId, Arc<dyn LocalWriter>>,
    pub readers: FastHashMap<EntityId, Arc<dyn LocalReader>>,
    /// Remote writer → the local readers matched with it.
    readers_of_remote_writer: FastHashMap<Guid, ReaderList>,
    /// Bumped (under the table's write lock) by every change of `readers_of_remote_writer`:
    /// a receive thread keeps the last list it looked up while this stays the same
    /// ([`RouteCache`]), and looks at it without the table's lock
    /// ([`ParticipantShared::routes_generation`]).
    routes_generation: Arc<AtomicU64>,
}

/// The last route a receive thread looked up: a datagram of 16-byte samples carries hundreds
/// of DATA submessages from one writer, and each would otherwise hash the writer's GUID and
/// count a reference to its reader list.
#[derive(Default)]
pub(crate) struct RouteCache(Option<(Guid, u64, Option<ReaderList>)>);

impl RouteCache {
    /// Whether the cache holds `remote`'s route as of routes generation `generation`.
    fn is_fresh(&self, remote: &Guid, generation: u64) -> bool {
        matches!(&self.0, Some((g, gen, _)) if g == remote && *gen == generation)
    }

    /// The readers of the writer last routed through this cache.
    fn readers(&self) -> Option<&ReaderList> {
        self.0.as_ref().and_then(|(_, _, l)| l.as_ref())
    }
}

impl Endpoints {
    /// The readers `remote` feeds (a snapshot; see [`ReaderList`]).
    pub fn readers_of(&self, remote: &Guid) -> Option<ReaderList> {
        self.readers_of_remote_writer.get(remote).cloned()
    }

    /// Points `cache` at the readers `remote` feeds, looking them up only when it holds
    /// another writer's or a route changed since. Returns the snapshot it displaced: drop it
    /// after releasing the lock, like [`Endpoints::remove_reader_of`]'s.
    #[must_use]
    pub fn route_through(
        &self,
        remote: &Guid,
        cache: &mut RouteCache,
    ) -> Option<(Guid, u64, Option<ReaderList>)> {
        let generation = self.routes_generation.load(Ordering::Relaxed);
        if cache.is_fresh(remote, generation) {
            return None;
        }
        cache
            .0
            .replace((*remote, generation, self.readers_of(remote)))
    }

    /// Routes `remote`'s submessages to `r` too.
    pub fn add_reader_of(&mut self, remote: Guid, r: Arc<dyn LocalReader>) {
        let list = self.readers_of_remote_writer.entry(remote).or_default();
        if !list.iter().any(|x| Arc::ptr_eq(x, &r)) {
            *list = list.iter().cloned().chain(std::iter::once(r)).collect();
            self.routes_generation.fetch_add(1, Ordering::Release);
        }
    }

    /// Stops routing `remote`'s submessages to the reader `reader`. Returns the replaced list:
    /// drop it after releasing the lock, since it may hold the last reference to an endpoint
    /// whose listener owns entities (their deletion takes this lock).
    #[must_use]
    pub fn remove_reader_of(&mut self, remote: &Guid, reader: Guid) -> Option<ReaderList> {
        let list = self.readers_of_remote_writer.get_mut(remote)?;
        if !list.iter().any(|x| x.guid() == reader) {
            return None;
        }
        let rest: ReaderList = list
            .iter()
            .filter(|x| x.guid() != reader)
            .cloned()
            .collect();
        self.routes_generation.fetch_add(1, Ordering::Release);
        if rest.is_empty() {
            self.readers_of_remote_writer.remove(remote)
        } else {
            Some(std::mem::replace(list, rest))
        }
    }

    /// Stops routing anything to the reader `reader` (it is being deleted). Returns the
    /// replaced lists, to drop after releasing the lock.
    #[must_use]
    pub fn remove_reader_everywhere(&mut self, reader: Guid) -> Vec<ReaderList> {
        let remotes: Vec<Guid> = self
            .readers_of_remote_writer
            .iter()
            .filter(|(_, l)| l.iter().any(|x| x.guid() == reader))
            .map(|(g, _)| *g)
            .collect();
        remotes
            .iter()
            .filter_map(|g| self.remove_reader_of(g, reader))
            .collect()
    }
}

/// Wakes the event thread early when an endpoint's next deadline moved forward.
///
/// `scheduled` is the earliest time anyone needs the event thread: while it sleeps, its wake-up
/// time; while it runs a pass, [`EventKick::RUNNING`] lowered by every deadline requested during
/// the pass (the pass may already have looked at that endpoint). A requester lowers it with
/// `fetch_min` and kicks only when it did lower it; the thread's next sleep ends no later than
/// the lowest value, so no request is lost, whenever it comes.
#[derive(Debug)]
pub(crate) struct EventKick {
    epoch: Instant,
    /// ns since `epoch`, as above.
    scheduled: AtomicU64,
    lock: Mutex<bool>,
    cv: Condvar,
}

impl EventKick {
    /// `scheduled` while a pass runs and nothing was requested during it.
    const RUNNING: u64 = u64::MAX;

    pub(crate) fn new() -> Self {
        EventKick {
            epoch: Instant::now(),
            // The event thread starts with a pass.
            scheduled: AtomicU64::new(Self::RUNNING),
            lock: Mutex::new(false),
            cv: Condvar::new(),
        }
    }

    fn to_ns(&self, t: Instant) -> u64 {
        (t.saturating_duration_since(self.epoch).as_nanos() as u64).min(Self::RUNNING - 1)
    }

    /// `t` as ns since this participant's epoch (for compact atomics).
    pub fn ns_of(&self, t: Instant) -> u64 {
        self.to_ns(t)
    }

    /// The instant `ns` after this participant's epoch.
    pub fn instant_of(&self, ns: u64) -> Instant {
        self.epoch + Duration::from_nanos(ns)
    }

    /// Makes sure the event thread wakes no later than `deadline`. One atomic load when the
    /// thread is already due earlier (the common case on the write path).
    pub fn ensure_by(&self, deadline: Option<Instant>) {
        if let Some(d) = deadline {
            let ns = self.to_ns(d);
            if ns < self.scheduled.load(Ordering::Acquire)
                && ns < self.scheduled.fetch_min(ns, Ordering::AcqRel)
            {
                self.kick();
            }
        }
    }

    /// Ends a pass: sleeps until `deadline` or the earliest deadline requested meanwhile,
    /// whichever comes first, then begins the next pass.
    fn sleep_until(&self, deadline: Instant) {
        // Every kick so far lowered `scheduled` before it set the flag: the flag adds nothing
        // that the `fetch_min` below does not see.
        *self.lock.lock() = false;
        let ns = self.to_ns(deadline);
        let target = ns.min(self.scheduled.fetch_min(ns, Ordering::AcqRel));
        let mut kicked = self.lock.lock();
        if !*kicked {
            let _ = self.cv.wait_until(&mut kicked, self.instant_of(target));
        }
        *kicked = false;
        drop(kicked);
        // The pass that follows reads every endpoint's deadline after this store; requests
        // made from here on lower `scheduled` again and shorten the next sleep.
        self.scheduled.store(Self::RUNNING, Ordering::Release);
    }

    /// The earliest wake-up requested since the last call (for tests, which run no event
    /// thread).
    #[cfg(test)]
    pub(crate) fn take_scheduled(&self) -> Option<Instant> {
        let ns = self.scheduled.swap(Self::RUNNING, Ordering::AcqRel);
        (ns != Self::RUNNING).then(|| self.instant_of(ns))
    }

    /// Wakes the event thread now, whatever it is doing (shutdown): a plain kick could land
    /// between the end of a pass and its sleep and be cleared there.
    fn wake_now(&self) {
        self.scheduled.store(0, Ordering::Release);
        self.kick();
    }

    fn kick(&self) {
        *self.lock.lock() = true;
        self.cv.notify_one();
    }
}

/// Everything the participant's threads and entities share: the endpoint tables and discovery,
/// around the [`RuntimeContext`] its endpoints run with. It dereferences to that context, so
/// that code holding the participant (the receive and event threads, discovery) passes it where
/// a context is wanted; endpoints get only the context.
pub(crate) struct ParticipantShared {
    pub domain_id: u32,
    pub qos: DomainParticipantQos,
    /// What endpoints see of the participant: GUID prefix, transports, send queues, event kick,
    /// counters, bounds and budgets, multicast use (see [`ParticipantConfig::allow_multicast`]).
    pub ctx: Arc<RuntimeContext>,
    pub endpoints: RwLock<Endpoints>,
    /// The endpoints table's routes generation, read by receive threads without its lock: a
    /// read lock per submessage cost a 16 B stream's receive thread ~5 % of its time.
    routes_generation: Arc<AtomicU64>,
    pub discovery: Mutex<DiscoveryRuntime>,
    /// Consensus groups of ATOMIC endpoints (started with the first one).
    pub atomic: crate::atomic::AtomicService,
    next_entity_key: AtomicU32,
    /// [`ParticipantConfig::qos_profiles`].
    pub qos_profiles: Option<Arc<crate::qos_xml::QosProvider>>,
    /// Whether the participant joined the host's node plane ([`ParticipantConfig::node`]).
    pub node_attached: bool,
}

impl std::ops::Deref for ParticipantShared {
    type Target = RuntimeContext;

    fn deref(&self) -> &RuntimeContext {
        &self.ctx
    }
}

impl std::fmt::Debug for ParticipantShared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ParticipantShared")
            .field("guid_prefix", &self.guid_prefix)
            .field("domain_id", &self.domain_id)
            .finish()
    }
}

/// Owns the threads; dropping the last [`DomainParticipant`] handle stops them.
struct ParticipantOwner {
    shared: Arc<ParticipantShared>,
    receivers: Mutex<Option<Receivers>>,
    events: Mutex<Option<JoinHandle<()>>>,
}

impl Drop for ParticipantOwner {
    fn drop(&mut self) {
        self.shared.discovery.lock().announce_leaving(&self.shared);
        self.shared.atomic.close();
        self.shared.ctx.close();
        self.shared.kick.wake_now();
        drop(self.receivers.lock().take());
        if let Some(t) = self.events.lock().take() {
            let _ = t.join();
        }
    }
}

/// A DDS domain participant: creates topics, publishers and subscribers in one domain.
/// Cheap to clone; the runtime stops when the last clone (and every entity) is dropped.
#[derive(Clone)]
pub struct DomainParticipant {
    owner: Arc<ParticipantOwner>,
}

/// What [`DomainParticipant::bundle_sends`] returns: while it lives, the calling thread's
/// sends of that participant share datagrams; dropping it sends them. Bound to its thread.
#[must_use = "the bundle sends when dropped: keep it while writing"]
pub struct SendBundle {
    _inner: crate::outbox::Bundle,
}

impl std::fmt::Debug for SendBundle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SendBundle")
    }
}

impl std::fmt::Debug for DomainParticipant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DomainParticipant")
            .field("guid_prefix", &self.owner.shared.guid_prefix)
            .field("domain_id", &self.owner.shared.domain_id)
            .finish()
    }
}

impl DomainParticipant {
    /// Creates a participant in `domain_id` with default QoS and configuration.
    pub fn new(domain_id: u32) -> Result<DomainParticipant> {
        Self::with_qos(
            domain_id,
            DomainParticipantQos::default(),
            ParticipantConfig::default(),
        )
    }

    /// Creates a participant with the given QoS and configuration.
    pub fn with_qos(
        domain_id: u32,
        qos: DomainParticipantQos,
        config: ParticipantConfig,
    ) -> Result<DomainParticipant> {
        if domain_id > 232 {
            return Err(Error::BadParameter(format!(
                "domain id {domain_id} is above 232 (port mapping limit)"
            )));
        }
        if config
            .udp
            .as_ref()
            .is_some_and(|u| u.domain_id != domain_id)
        {
            return Err(Error::BadParameter(
                "transport configuration is for another domain".into(),
            ));
        }
        let mut config = config;
        let attach = match config.node {
            Some(on) => on,
            None => crate::node::node_from_env()?,
        } && config.in_process.is_none();
        let node_attached = attach && crate::node::node_running(domain_id).is_some();
        if node_attached {
            let plane = crate::node::node_plane_config(domain_id)?;
            config.udp = plane.udp;
            config.transports = plane.transports;
            config.allow_multicast = plane.allow_multicast;
        } else if attach {
            tracing::warn!(
                domain_id,
                "{}: no node service runs on this host; starting decentralized",
                crate::node::ENV_NODE
            );
        }
        let discovery_mode = match config.discovery {
            Some(m) => m,
            None => DiscoveryMode::from_env()?,
        };
        let allow_multicast = match config.allow_multicast {
            Some(a) => a,
            None => AllowMulticast::from_env()?,
        };
        let mut udp = config.udp;
        if allow_multicast == AllowMulticast::Off && config.in_process.is_none() {
            let mut c = match udp {
                Some(c) => c,
                None => UdpConfig::new(domain_id)?,
            };
            c.multicast = false;
            udp = Some(c);
        }
        let mut shm = config.shm;
        if let (Some(w), None) = (config.wait, &config.in_process) {
            let mut c = match udp {
                Some(c) => c,
                None => UdpConfig::new(domain_id)?,
            };
            c.wait = w;
            udp = Some(c);
            let mut s = match shm {
                Some(s) => s,
                None => crate::transport::ShmConfig::from_env()?,
            };
            s.wait = Some(w);
            shm = Some(s);
        }
        let transport = Transports::open(
            domain_id,
            udp,
            config.transports.as_deref(),
            config.in_process.as_ref(),
            shm,
            config.tcp,
        )?;
        let guid_prefix = new_guid_prefix();
        let now = Instant::now();
        let ctx = RuntimeContext::new(guid_prefix, transport, config.limits, allow_multicast);
        let discovery = DiscoveryRuntime::new(
            guid_prefix,
            domain_id,
            &qos,
            &ctx.transport,
            DiscoveryOptions {
                ignore_local: config.ignore_local,
                allow_multicast,
                lease: match config.lease_duration {
                    Some(d) if d < MIN_LEASE => {
                        return Err(Error::BadParameter(format!(
                            "lease_duration {d:?} is shorter than {MIN_LEASE:?}"
                        )))
                    }
                    Some(d) => d,
                    None => lease_from_env()?,
                },
                type_information: match config.type_information {
                    Some(on) => on,
                    None => type_information_from_env()?,
                },
            },
            &discovery_mode,
            &ctx.budgets,
            now,
        );
        let endpoints = Endpoints::default();
        let routes_generation = endpoints.routes_generation.clone();
        let shared = Arc::new(ParticipantShared {
            domain_id,
            qos,
            ctx: Arc::new(ctx),
            endpoints: RwLock::new(endpoints),
            routes_generation,
            discovery: Mutex::new(discovery),
            atomic: crate::atomic::AtomicService::new(guid_prefix),
            next_entity_key: AtomicU32::new(1),
            qos_profiles: config.qos_profiles,
            node_attached,
        });
        // The receive threads hold the participant weakly so that dropping it stops them.
        let weak = Arc::downgrade(&shared);
        let handler = move |buf: &[u8], _from: Locator, channel: Channel| {
            if let Some(s) = weak.upgrade() {
                s.handle_datagram(buf, channel);
            }
        };
        let receivers = shared.transport.start(Arc::new(handler))?;
        let s = shared.clone();
        let events = std::thread::Builder::new()
            .name("tessera-events".into())
            .spawn(move || s.event_loop())
            .map_err(Error::Io)?;
        // First announcement right away so peers discover us without waiting a period.
        let actions = shared.discovery.lock().on_timeout(&shared, now);
        shared.apply_discovery_events(actions, now);
        Ok(DomainParticipant {
            owner: Arc::new(ParticipantOwner {
                shared,
                receivers: Mutex::new(Some(receivers)),
                events: Mutex::new(Some(events)),
            }),
        })
    }

    pub(crate) fn shared(&self) -> &Arc<ParticipantShared> {
        &self.owner.shared
    }

    /// Whether this participant is attached to the host's node service (it asked to, through
    /// [`ParticipantConfig::node`] or `TESSERA_NODE`, and a node was running when it started).
    pub fn attached_to_node(&self) -> bool {
        self.owner.shared.node_attached
    }

    /// The remote writers and readers discovered (what a bridge or a node service forwards
    /// between, and what tools list).
    pub fn discovered_endpoints(&self) -> Vec<tessera_rtps::discovery::RemoteEndpointInfo> {
        self.owner.shared.discovery.lock().remote_endpoints()
    }

    /// The domain id.
    pub fn domain_id(&self) -> u32 {
        self.owner.shared.domain_id
    }

    /// Bundles what this thread's writers of this participant send until the returned guard
    /// is dropped: transmits to the same destination share datagrams (up to 14,720 bytes)
    /// instead of leaving one datagram per writer, across writers and topics. Samples still
    /// leave no later than the guard's drop. For services that write through many writers at
    /// once (a node service forwarding many applications); a single writer batches with
    /// [`crate::DataWriter::set_batching`].
    pub fn bundle_sends(&self) -> SendBundle {
        SendBundle {
            _inner: crate::outbox::Bundle::open(&self.owner.shared.ctx),
        }
    }

    /// The participant's GUID.
    pub fn guid(&self) -> Guid {
        Guid::new(self.owner.shared.guid_prefix, EntityId::PARTICIPANT)
    }

    /// The participant QoS.
    pub fn qos(&self) -> &DomainParticipantQos {
        &self.owner.shared.qos
    }

    /// Creates a topic of type `T`. The QoS is checked for consistency.
    pub fn create_topic<T: TopicType>(&self, name: &str, qos: TopicQos) -> Result<Topic<T>> {
        if name.is_empty() || name.len() > 256 {
            return Err(Error::BadParameter(
                "topic name must be 1..=256 bytes".into(),
            ));
        }
        qos.check_consistency()
            .map_err(|e| Error::InconsistentPolicy(e.to_string()))?;
        self.owner
            .shared
            .discovery
            .lock()
            .register_type(T::TYPE_NAME, || Some(T::type_bundle()));
        Ok(Topic::new(Arc::new(TopicInner {
            name: name.to_string(),
            type_name: T::TYPE_NAME.to_string(),
            qos,
            participant: self.clone(),
        })))
    }

    /// Creates a publisher (its QoS carries the partitions of its writers).
    pub fn create_publisher(&self, qos: PublisherQos) -> Result<Publisher> {
        Ok(Publisher::new(self.clone(), qos))
    }

    /// Creates a subscriber (its QoS carries the partitions of its readers).
    pub fn create_subscriber(&self, qos: SubscriberQos) -> Result<Subscriber> {
        Ok(Subscriber::new(self.clone(), qos))
    }

    /// Every remote writer discovery knows, matched or not, with its topic, type, offered QoS
    /// (DURABILITY, DURABILITY_SERVICE, ...) and TypeInformation: what a durability service
    /// watches. Empty with a discovery engine that keeps no endpoint table.
    pub fn discovered_writers(
        &self,
    ) -> Vec<std::sync::Arc<tessera_rtps::discovery::DiscoveredWriterData>> {
        self.shared().discovery.lock().remote_writers()
    }

    /// The remote participants currently discovered.
    pub fn discovered_participants(&self) -> Vec<ParticipantInfo> {
        self.owner.shared.discovery.lock().participants()
    }

    /// A channel that receives an event whenever a remote participant is discovered or lost,
    /// starting with a `Discovered` event for every participant known at the time of the call.
    /// It holds at most [`ResourceBounds::participant_events`] events: when the application
    /// does not keep up, further events are dropped and counted
    /// ([`CountersSnapshot::participant_events_dropped`]);
    /// [`DomainParticipant::discovered_participants`] always has the current set.
    pub fn participant_events(&self) -> crossbeam_channel::Receiver<ParticipantEvent> {
        let capacity = self.owner.shared.limits.participant_events;
        self.owner.shared.discovery.lock().watch(capacity)
    }

    /// Asserts the liveliness of every MANUAL_BY_PARTICIPANT writer of this participant
    /// (DDS `assert_liveliness`); each of them tells its readers.
    pub fn assert_liveliness(&self) -> Result<()> {
        if self.owner.shared.is_closed() {
            return Err(Error::AlreadyDeleted);
        }
        let writers: Vec<_> = self
            .owner
            .shared
            .endpoints
            .read()
            .writers
            .values()
            .cloned()
            .collect();
        for w in writers {
            w.assert_participant_liveliness();
        }
        let shared = &self.owner.shared;
        shared
            .discovery
            .lock()
            .assert_manual_liveliness(shared, Instant::now());
        Ok(())
    }

    /// A snapshot of the runtime's drop and traffic counters.
    pub fn counters(&self) -> CountersSnapshot {
        self.owner.shared.counters_snapshot()
    }

    /// What each transport carried, in preference order: e.g. whether peers are reached by
    /// shared memory or by UDP.
    pub fn transport_traffic(&self) -> Vec<TransportTraffic> {
        self.owner
            .shared
            .transport
            .iter()
            .map(|t| {
                let s = t.stats();
                TransportTraffic {
                    name: t.name(),
                    datagrams_sent: s.send.datagrams.load(Ordering::Relaxed),
                    bytes_sent: s.send.bytes.load(Ordering::Relaxed),
                    datagrams_received: s.recv.datagrams.load(Ordering::Relaxed),
                    bytes_received: s.recv.bytes.load(Ordering::Relaxed),
                }
            })
            .collect()
    }
}

impl ParticipantShared {
    fn counters_snapshot(&self) -> CountersSnapshot {
        let c = &self.counters;
        CountersSnapshot {
            malformed_messages: c.malformed_messages.load(Ordering::Relaxed),
            malformed_submessages: c.malformed_submessages.load(Ordering::Relaxed),
            unroutable_submessages: c.unroutable_submessages.load(Ordering::Relaxed),
            datagrams_received: c.datagrams_received.load(Ordering::Relaxed),
            datagrams_sent: c.datagrams_sent.load(Ordering::Relaxed),
            send_errors: c.send_errors.load(Ordering::Relaxed),
            participant_events_dropped: self.budgets.events_dropped.load(Ordering::Relaxed),
            reassembly_refused: self.budgets.reassembly.refused(),
            out_of_order_refused: self.budgets.out_of_order.refused(),
            samples_rejected: c.samples_rejected.load(Ordering::Relaxed),
            send_queue_drops: self.send_queues.dropped.load(Ordering::Relaxed),
        }
    }

    /// A new entity id for a user endpoint.
    pub fn new_entity_id(&self, writer: bool, keyed: bool) -> EntityId {
        let key = self.next_entity_key.fetch_add(1, Ordering::Relaxed);
        let kind = match (writer, keyed) {
            (true, true) => entity_kind::USER_WRITER_WITH_KEY,
            (true, false) => entity_kind::USER_WRITER_NO_KEY,
            (false, true) => entity_kind::USER_READER_WITH_KEY,
            (false, false) => entity_kind::USER_READER_NO_KEY,
        };
        EntityId::new(key, kind)
    }

    /// Decodes one datagram and routes its submessages. Runs on a receive thread.
    fn handle_datagram(&self, buf: &[u8], channel: Channel) {
        self.counters
            .datagrams_received
            .fetch_add(1, Ordering::Relaxed);
        let rx = match MessageReceiver::new(buf) {
            Ok(rx) => rx,
            Err(e) => {
                self.counters
                    .malformed_messages
                    .fetch_add(1, Ordering::Relaxed);
                tracing::debug!(error = %e, len = buf.len(), "dropped malformed RTPS message");
                return;
            }
        };
        if rx.header().guid_prefix == self.guid_prefix
            && matches!(channel, Channel::SpdpMulticast | Channel::UserMulticast)
        {
            // Our own multicast, looped back. (Unicast from ourselves is local delivery.)
            return;
        }
        // The receive loop's reading from when it found the datagram, if it took one.
        let now = crate::transport::recv::take_arrival().unwrap_or_else(Instant::now);
        let scope = crate::subscription::DatagramScope::start(now);
        let mut routes = RouteCache::default();
        for item in rx {
            let rs = match item {
                Ok(rs) => rs,
                Err(e) => {
                    self.counters
                        .malformed_submessages
                        .fetch_add(1, Ordering::Relaxed);
                    tracing::debug!(error = %e, "dropped malformed submessage and the rest of its message");
                    break;
                }
            };
            if rs.dest_prefix != GuidPrefix::UNKNOWN && rs.dest_prefix != self.guid_prefix {
                continue;
            }
            if !matches!(rs.submessage, Submessage::Data(_) | Submessage::DataFrag(_)) {
                scope.flush();
            }
            let (writer_side, entity, to) = match &rs.submessage {
                Submessage::Data(d) => (false, d.writer_id, d.reader_id),
                Submessage::DataFrag(d) => (false, d.writer_id, d.reader_id),
                Submessage::Heartbeat(h) => (false, h.writer_id, h.reader_id),
                Submessage::HeartbeatFrag(h) => (false, h.writer_id, h.reader_id),
                Submessage::Gap(g) => (false, g.writer_id, g.reader_id),
                Submessage::AckNack(a) => (true, a.writer_id, a.reader_id),
                Submessage::NackFrag(n) => (true, n.writer_id, n.reader_id),
                _ => continue,
            };
            if entity.is_builtin() {
                let events = self.discovery.lock().handle(self, entity, &rs, now);
                self.apply_discovery_events(events, now);
                continue;
            }
            if writer_side {
                let w = self.endpoints.read().writers.get(&entity).cloned();
                match w {
                    Some(w) => w.handle(&self.ctx, &rs, now),
                    None => {
                        self.counters
                            .unroutable_submessages
                            .fetch_add(1, Ordering::Relaxed);
                    }
                }
            } else {
                let remote = Guid::new(rs.source_prefix, entity);
                // The lock is released before any handler (and listener) runs: a listener may
                // create or delete entities, which takes it for writing.
                let generation = self.routes_generation.load(Ordering::Acquire);
                if !routes.is_fresh(&remote, generation) {
                    let displaced = self.endpoints.read().route_through(&remote, &mut routes);
                    drop(displaced);
                }
                match routes.readers() {
                    Some(readers) => {
                        // A submessage addressed to one reader is for it alone: a GAP of
                        // writer-side content filtering must not reach the reader beside it.
                        for r in readers
                            .iter()
                            .filter(|r| to == EntityId::UNKNOWN || r.guid().entity_id == to)
                        {
                            r.handle(&self.ctx, &rs, now);
                        }
                    }
                    None => {
                        self.counters
                            .unroutable_submessages
                            .fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
        }
        scope.finish();
    }

    /// Applies what discovery decided (matches, unmatches, incompatibilities) to endpoints.
    pub fn apply_discovery_events(
        &self,
        events: Vec<crate::discovery_rt::MatchAction>,
        now: Instant,
    ) {
        use crate::discovery_rt::MatchAction;
        if events.is_empty() {
            // The event thread calls this on every pass: a kick here would make it kick itself
            // with a deadline already past and spin.
            return;
        }
        for ev in events {
            match ev {
                MatchAction::MatchWriter { local, remote } => {
                    self.atomic.matched(local, &remote);
                    let (w, local_reader) = {
                        let eps = self.endpoints.read();
                        let r = if remote.guid.prefix == self.guid_prefix {
                            eps.readers.get(&remote.guid.entity_id).cloned()
                        } else {
                            None
                        };
                        (eps.writers.get(&local.entity_id).cloned(), r)
                    };
                    if let Some(w) = w {
                        w.matched(&self.ctx, &remote, local_reader, now);
                    }
                }
                MatchAction::UnmatchWriter { local, remote } => {
                    self.atomic.unmatched(local, remote);
                    let w = self.endpoints.read().writers.get(&local.entity_id).cloned();
                    if let Some(w) = w {
                        w.unmatched(remote);
                    }
                }
                MatchAction::MatchReader { local, remote } => {
                    self.atomic.matched(local, &remote);
                    let r = self.endpoints.read().readers.get(&local.entity_id).cloned();
                    if let Some(r) = r {
                        r.matched(&self.ctx, &remote, now);
                        // A local writer delivers directly; nothing of it comes by the network.
                        if remote.guid.prefix != self.guid_prefix {
                            self.endpoints.write().add_reader_of(remote.guid, r);
                        }
                    }
                }
                MatchAction::UnmatchReader {
                    local,
                    remote,
                    lost,
                } => {
                    self.atomic.unmatched(local, remote);
                    let r = self.endpoints.read().readers.get(&local.entity_id).cloned();
                    if let Some(r) = r {
                        let old = self.endpoints.write().remove_reader_of(&remote, local);
                        drop(old);
                        r.unmatched(remote, lost);
                    }
                }
                MatchAction::WriterIncompatible { local, policies } => {
                    let w = self.endpoints.read().writers.get(&local.entity_id).cloned();
                    if let Some(w) = w {
                        w.incompatible(&policies);
                    }
                }
                MatchAction::ReaderIncompatible { local, policies } => {
                    let r = self.endpoints.read().readers.get(&local.entity_id).cloned();
                    if let Some(r) = r {
                        r.incompatible(&policies);
                    }
                }
                MatchAction::Builtin(n) => n.run(&self.ctx),
                MatchAction::LivelinessAsserted { prefix, manual } => {
                    let readers: Vec<_> = self.endpoints.read().readers.values().cloned().collect();
                    for r in readers {
                        r.participant_asserted(prefix, manual, now);
                    }
                }
            }
        }
        // A match may have queued transmissions (e.g. history for a late joiner).
        self.kick.ensure_by(Some(now));
    }

    /// The event thread: timers of discovery and of every endpoint.
    fn event_loop(self: Arc<Self>) {
        const MAX_SLEEP: Duration = Duration::from_millis(100);
        let mut drops = DropReport::new(Duration::from_secs(1));
        while !self.is_closed() {
            let now = Instant::now();
            if drops.due(now) {
                drops.report(now, self.counters_snapshot());
            }
            let mut next = now + MAX_SLEEP;
            let (events, d) = {
                let mut disc = self.discovery.lock();
                let ev = disc.on_timeout(&self, now);
                (ev, disc.next_deadline())
            };
            self.apply_discovery_events(events, now);
            if let Some(d) = d {
                next = next.min(d);
            }
            let (writers, readers): (Vec<_>, Vec<_>) = {
                let eps = self.endpoints.read();
                (
                    eps.writers.values().cloned().collect(),
                    eps.readers.values().cloned().collect(),
                )
            };
            for w in &writers {
                if let Some(d) = w.on_timeout(&self.ctx, now) {
                    next = next.min(d);
                }
            }
            for r in &readers {
                if let Some(d) = r.on_timeout(&self.ctx, now) {
                    next = next.min(d);
                }
            }
            drop((writers, readers));
            if self.send_queues.drain_ready(&self.ctx) {
                // A destination is still blocked: try again soon (never blocking here).
                next = next.min(now + Duration::from_millis(1));
            }
            self.kick
                .sleep_until(next.max(now + Duration::from_micros(50)));
        }
    }
}

/// A GUID prefix unique to this process and participant: vendor id, host hash, process id,
/// a per-process counter and a time-derived salt.
fn new_guid_prefix() -> GuidPrefix {
    use std::sync::atomic::AtomicU32;
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let pid = std::process::id();
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let host_hash = host.bytes().fold(0x811c_9dc5u32, |h, b| {
        (h ^ b as u32).wrapping_mul(0x0100_0193)
    });
    let salt = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let mut p = [0u8; 12];
    p[0..2].copy_from_slice(&tessera_rtps::types::VENDOR_TESSERA.0);
    p[2..4].copy_from_slice(&(host_hash as u16 ^ (salt >> 16) as u16).to_be_bytes());
    p[4..8].copy_from_slice(&pid.to_be_bytes());
    p[8..12].copy_from_slice(&(n ^ (salt & 0xffff) << 16).to_be_bytes());
    GuidPrefix(p)
}

#[cfg(test)]
mod tests {
    use super::EventKick;
    use std::time::{Duration, Instant};

    /// The event thread's protocol, driven on one thread: a deadline requested while the thread
    /// runs a pass (between two `sleep_until`s) must cut the next sleep short.
    #[test]
    fn a_deadline_requested_during_a_pass_is_honoured() {
        let kick = EventKick::new();
        // A pass ends at once and the next one begins.
        kick.sleep_until(Instant::now());
        // During that pass, an endpoint asks to be served in 5 ms.
        let asked = Instant::now();
        kick.ensure_by(Some(asked + Duration::from_millis(5)));
        // The pass, which had already looked at that endpoint, plans to sleep 2 s.
        kick.sleep_until(asked + Duration::from_secs(2));
        let slept = asked.elapsed();
        assert!(
            slept < Duration::from_secs(1),
            "the request was lost: slept {slept:?}"
        );
    }

    /// A request for a later deadline than the planned wake-up costs nothing and changes nothing.
    #[test]
    fn a_later_deadline_does_not_wake_early() {
        let kick = EventKick::new();
        kick.sleep_until(Instant::now());
        let t = Instant::now();
        kick.ensure_by(Some(t + Duration::from_secs(5)));
        kick.sleep_until(t + Duration::from_millis(30));
        let slept = t.elapsed();
        assert!(slept >= Duration::from_millis(30), "woke early: {slept:?}");
        assert!(
            slept < Duration::from_secs(4),
            "slept to the later deadline: {slept:?}"
        );
    }
}
