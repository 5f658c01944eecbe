//! The runtime side of discovery: a thin adapter over a sans-IO
//! [`DiscoveryEngine`](tessera_rtps::discovery::DiscoveryEngine).
//!
//! The protocol (SPDP announcements, the SEDP endpoints, leases, matching decisions) lives in
//! the engine, [`SimpleDiscovery`] by default. This module feeds it received built-in
//! submessages and timeouts, sends its datagrams through the participant's transports
//! (non-blocking, via [`outbox`]), keeps the participant-discovery watchers, matches the
//! participant's own endpoints with each other ([`LocalMatcher`]), and turns both's events into
//! [`MatchAction`]s on local endpoints. It runs under the participant's discovery lock, never on
//! the per-sample data path, and knows nothing of `Topic<T>` or user types.

use crate::bounds::{Budgets, EventFanout};
use crate::builtin::{BuiltinNotify, Discovered, Ignore};
use crate::endpoint::RemoteEndpoint;
use crate::outbox;
use crate::participant::ParticipantShared;
use crate::qos::DomainParticipantQos;
use crate::transport::{AllowMulticast, Transports};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;
use tessera_rtps::discovery::ds_common::{parse_server_list, ServerHost};
use tessera_rtps::discovery::{
    BuiltinEndpointSet, DiscoveredReaderData, DiscoveredWriterData, DiscoveryEngine,
    DiscoveryServerClient, DsClientConfig, EngineEvent, LocalMatcher, LocatorSelector,
    RemoteEndpointInfo, RemoteServer, SimpleDiscovery, SimpleDiscoveryConfig, SpdpParticipantData,
    TypeLookupService,
};
use tessera_rtps::qos::{
    Consistency, Durability, ReaderSideQos, ReliabilityKind, TypeConsistencyEnforcement,
    WriterSideQos,
};
use tessera_rtps::types::{EntityId, Guid, GuidPrefix, Locator, Locators};
use tessera_rtps::wire::ReceivedSubmessage;
use tessera_rtps::xtypes::{assignable, Assignability, TypeBundle, TypeInformation};

/// What a local endpoint must do because of discovery.
#[derive(Debug, Clone)]
pub(crate) enum MatchAction {
    MatchWriter {
        local: Guid,
        remote: RemoteEndpoint,
    },
    UnmatchWriter {
        local: Guid,
        remote: Guid,
    },
    MatchReader {
        local: Guid,
        remote: RemoteEndpoint,
    },
    UnmatchReader {
        local: Guid,
        remote: Guid,
        lost: bool,
    },
    WriterIncompatible {
        local: Guid,
        policies: Vec<u32>,
    },
    ReaderIncompatible {
        local: Guid,
        policies: Vec<u32>,
    },
    /// A remote participant asserted its MANUAL_BY_PARTICIPANT (`manual`) or AUTOMATIC
    /// writers alive.
    LivelinessAsserted {
        prefix: GuidPrefix,
        manual: bool,
    },
    /// A built-in reader's history changed: wake its conditions and listener.
    Builtin(BuiltinNotify),
}

/// Participant settings that change what discovery announces and matches.
#[derive(Debug, Clone, Copy)]
pub(crate) struct DiscoveryOptions {
    /// Do not match local readers with local writers.
    pub ignore_local: bool,
    /// Whether readers announce (and writers use) multicast locators for user data.
    pub allow_multicast: AllowMulticast,
    /// The participant lease we announce.
    pub lease: std::time::Duration,
    /// Announce TypeInformation in SEDP and serve the TypeLookup service.
    pub type_information: bool,
}

/// The shortest steady-state SPDP period, however short the lease.
const MIN_SPDP_PERIOD: std::time::Duration = std::time::Duration::from_millis(100);

/// How a participant finds the others (`ParticipantConfig::discovery`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum DiscoveryMode {
    /// Standard SPDP/SEDP: multicast announcements, every participant talks to every other.
    #[default]
    Simple,
    /// A client of discovery servers (Fast DDS 2.9's protocol; `tessera discovery-server` or
    /// `fastdds discovery`): no multicast, discovery only with the servers, which relay what
    /// this participant needs; user data still goes peer to peer.
    Client(Vec<DiscoveryServer>),
}

/// A discovery server a client uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DiscoveryServer {
    /// Its id (0..=255): the third byte of its well-known GUID prefix, `fastdds discovery -i`.
    pub id: u8,
    /// Where it listens.
    pub address: std::net::SocketAddr,
}

impl DiscoveryMode {
    /// Reads `ROS_DISCOVERY_SERVER` (`;`-separated servers, position = id, port 11811 by
    /// default, e.g. `127.0.0.1:11811` or `;10.0.0.2` for id 1 alone): a client of those servers,
    /// or [`DiscoveryMode::Simple`] when the variable is unset or empty.
    pub fn from_env() -> crate::Result<DiscoveryMode> {
        match std::env::var("ROS_DISCOVERY_SERVER") {
            Ok(v) if !v.trim().is_empty() => Self::parse(&v),
            _ => Ok(DiscoveryMode::Simple),
        }
    }

    /// Parses a `ROS_DISCOVERY_SERVER` value (host names are resolved here).
    pub fn parse(list: &str) -> crate::Result<DiscoveryMode> {
        use std::net::{SocketAddr, ToSocketAddrs};
        let bad = |e: String| crate::Error::BadParameter(format!("ROS_DISCOVERY_SERVER: {e}"));
        let mut out = Vec::new();
        for e in parse_server_list(list).map_err(|e| bad(e.to_string()))? {
            let address = match &e.host {
                ServerHost::Ip(ip) => SocketAddr::new(*ip, e.port),
                ServerHost::Name(n) => (n.as_str(), e.port)
                    .to_socket_addrs()
                    .map_err(|err| bad(format!("{n}: {err}")))?
                    .min_by_key(|a| a.is_ipv6())
                    .ok_or_else(|| bad(format!("{n}: no address")))?,
            };
            out.push(DiscoveryServer { id: e.id, address });
        }
        Ok(DiscoveryMode::Client(out))
    }
}

/// What a remote participant announced about itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParticipantInfo {
    /// Its GUID.
    pub guid: Guid,
    /// Its vendor id.
    pub vendor: tessera_rtps::types::VendorId,
    /// Its USER_DATA QoS.
    pub user_data: Vec<u8>,
}

/// A change in the set of discovered remote participants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParticipantEvent {
    /// A participant was discovered.
    Discovered(ParticipantInfo),
    /// A participant left (it said so, or its lease expired).
    Lost(Guid),
}

/// The engine picks peers' locators the way user endpoints do: those of our most preferred
/// transport that reaches any.
impl LocatorSelector for Transports {
    fn select(&self, announced: &[Locator]) -> Locators {
        Transports::select(self, announced)
    }
}

/// What a local endpoint announces besides its GUID: plain data, no `Topic<T>`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct EndpointTopic<'a> {
    pub topic_name: &'a str,
    pub type_name: &'a str,
    /// A reader's content filter (PID_CONTENT_FILTER_PROPERTY).
    pub content_filter: Option<&'a tessera_rtps::discovery::ContentFilterProperty>,
    /// A reader's plain layout for zero-copy loans (PID_TESSERA_LOAN_LAYOUT; 0: none).
    pub loan_layout: u64,
    /// A reader that resolves references to serialized samples in shared memory.
    pub cdr_chunks: bool,
}

pub(crate) struct DiscoveryRuntime {
    prefix: GuidPrefix,
    engine: Box<dyn DiscoveryEngine>,
    /// The participant's own writers and readers, matched with each other here (the engine
    /// matches only local against remote). `None` with `ignore_local`.
    local: Option<LocalMatcher>,
    /// The remote participants discovered, for `participants()` and new watchers.
    participants: HashMap<GuidPrefix, ParticipantInfo>,
    /// Subscribers to participant discovery events (bounded channels).
    watchers: EventFanout<ParticipantEvent>,
    /// The unicast locators our endpoints announce.
    default_unicast: Vec<Locator>,
    /// Local pairs go through the first (preferred) transport only: one copy each.
    own_locators: Locators,
    /// The default multicast locators our readers announce (empty unless multicast is
    /// allowed for data).
    reader_multicast: Vec<Locator>,
    allow_multicast: AllowMulticast,
    /// Picks remote endpoints' locators (a clone of the participant's registry).
    transport: Transports,
    /// The TypeInformation of each registered type name (announced with its endpoints).
    types: HashMap<String, Arc<TypeInformation>>,
    /// Serves our TypeObjects and fetches peers'; `None` when type information is off.
    type_lookup: Option<TypeLookupService>,
    /// The type and (readers) type consistency policy of each local endpoint with type
    /// information, for the assignability check.
    local_types: HashMap<Guid, (Arc<TypeInformation>, TypeConsistencyEnforcement)>,
    /// Matches made on the type name while the peer's TypeObjects are asked for:
    /// (local, remote) → the remote's data and when the match was made.
    pending: HashMap<(Guid, Guid), (RemoteEndpointInfo, Instant)>,
    /// Matches refused (or ended) because the types are not assignable; their unmatch is
    /// not passed on.
    refused: std::collections::HashSet<(Guid, Guid)>,
    /// Local AUTOMATIC writers with a finite lease: the engine asserts them for the shortest.
    automatic_leases: Vec<(Guid, std::time::Duration)>,
    /// Remote announcements, ignored entities, the built-in readers (`builtin`).
    seen: Discovered,
}

/// The action ending a local endpoint's match with a remote one (not a liveliness loss).
fn unmatch(local: Guid, remote: Guid) -> MatchAction {
    if local.entity_id.is_writer() {
        MatchAction::UnmatchWriter { local, remote }
    } else {
        MatchAction::UnmatchReader {
            local,
            remote,
            lost: false,
        }
    }
}

/// How long a match made on the type name waits for the peer's TypeObjects before the
/// assignability check is given up (a peer that does not answer TypeLookup, or answers with
/// objects that do not hash to their identifiers).
const TYPE_RESOLUTION_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

impl DiscoveryRuntime {
    /// Discovery as `mode` says (standard SPDP/SEDP, or a discovery-server client) for a
    /// participant with these transports.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        prefix: GuidPrefix,
        domain_id: u32,
        qos: &DomainParticipantQos,
        transport: &Transports,
        options: DiscoveryOptions,
        mode: &DiscoveryMode,
        budgets: &Budgets,
        now: Instant,
    ) -> Self {
        let allow_multicast = options.allow_multicast;
        let mut data = SpdpParticipantData::new(prefix);
        data.domain_id = Some(domain_id);
        for l in transport.locators() {
            data.default_unicast_locators.push(l.default_unicast);
            // Without multicast data, peers must not send user data to our group either.
            if allow_multicast.for_data() {
                data.default_multicast_locators.extend(l.default_multicast);
            }
            data.metatraffic_unicast_locators
                .push(l.metatraffic_unicast);
            data.metatraffic_multicast_locators
                .extend(l.metatraffic_multicast);
        }
        data.lease_duration = options.lease;
        // Only what we implement: SPDP and the SEDP publication/subscription endpoints, and the
        // server half of the TypeLookup service when we announce type information.
        data.builtin_endpoints = BuiltinEndpointSet::TESSERA_DEFAULT;
        if options.type_information {
            data.builtin_endpoints.0 |= BuiltinEndpointSet::TYPE_LOOKUP_ALL;
        }
        data.user_data = qos.user_data.0.clone();
        if let DiscoveryMode::Client(servers) = mode {
            let config = DsClientConfig {
                participant: data,
                servers: servers
                    .iter()
                    .map(|s| RemoteServer {
                        id: s.id,
                        locators: [match s.address {
                            std::net::SocketAddr::V4(a) => Locator::udpv4(*a.ip(), a.port()),
                            std::net::SocketAddr::V6(a) => Locator::udpv6(*a.ip(), a.port()),
                        }]
                        .into_iter()
                        .collect(),
                    })
                    .collect(),
                shared_reassembly: Some(budgets.reassembly.clone()),
                shared_buffered: Some(budgets.out_of_order.clone()),
                wall_clock_nanos: crate::publication::now_nanos(),
            };
            let engine = Box::new(DiscoveryServerClient::new(config, now));
            return Self::with_engine(prefix, engine, transport, options, budgets);
        }
        let mut config = SimpleDiscoveryConfig::new(
            data,
            transport.spdp_destinations(),
            Box::new(transport.clone()),
        );
        // The SEDP readers draw from the participant's byte pools like user readers do.
        config.shared_reassembly = Some(budgets.reassembly.clone());
        config.shared_buffered = Some(budgets.out_of_order.clone());
        config.wall_clock_nanos = crate::publication::now_nanos();
        // Three announcements per lease at least, so one lost datagram does not end it.
        config.period = config.period.min(options.lease / 3).max(MIN_SPDP_PERIOD);
        // The start-up burst must not leave a longer gap than the period either.
        let period = config.period;
        let mut previous = std::time::Duration::ZERO;
        config.startup = config
            .startup
            .iter()
            .copied()
            .take_while(|&at| {
                let fits = at.saturating_sub(previous) <= period;
                previous = at;
                fits
            })
            .collect();
        let engine = Box::new(SimpleDiscovery::new(config, now));
        Self::with_engine(prefix, engine, transport, options, budgets)
    }

    /// The adapter over any engine (a discovery-server client plugs in here).
    pub fn with_engine(
        prefix: GuidPrefix,
        engine: Box<dyn DiscoveryEngine>,
        transport: &Transports,
        options: DiscoveryOptions,
        budgets: &Budgets,
    ) -> Self {
        let allow_multicast = options.allow_multicast;
        DiscoveryRuntime {
            prefix,
            engine,
            local: (!options.ignore_local).then(LocalMatcher::new),
            participants: HashMap::new(),
            watchers: EventFanout::new(budgets.events_dropped.clone()),
            default_unicast: transport.default_unicast(),
            own_locators: transport.default_unicast().into_iter().take(1).collect(),
            reader_multicast: if allow_multicast.for_data() {
                transport
                    .locators()
                    .iter()
                    .filter_map(|l| l.default_multicast)
                    .collect()
            } else {
                Vec::new()
            },
            allow_multicast,
            transport: transport.clone(),
            automatic_leases: Vec::new(),
            types: HashMap::new(),
            type_lookup: options.type_information.then(|| {
                TypeLookupService::new(prefix, crate::publication::now_nanos(), Instant::now())
            }),
            local_types: HashMap::new(),
            pending: HashMap::new(),
            refused: Default::default(),
            seen: Discovered::default(),
        }
    }

    /// Remote announcements, ignored entities and the built-in readers.
    pub fn discovered_mut(&mut self) -> &mut Discovered {
        &mut self.seen
    }

    /// The TypeObjects of `ids` known now (ours, or peers' received and verified); those
    /// not known are asked of every peer (again after a second) and come later. `None` when
    /// type information is off.
    pub fn fetch_types(
        &mut self,
        p: &ParticipantShared,
        ids: &[tessera_rtps::xtypes::TypeIdentifier],
        now: Instant,
    ) -> Option<Vec<Option<tessera_rtps::xtypes::TypeObject>>> {
        let tl = self.type_lookup.as_mut()?;
        let found: Vec<_> = ids.iter().map(|id| tl.resolve(id)).collect();
        let missing: Vec<_> = ids
            .iter()
            .zip(&found)
            .filter(|(_, f)| f.is_none())
            .map(|(id, _)| id.clone())
            .collect();
        if !missing.is_empty() && tl.request(&missing, now) {
            self.flush(p, now);
        }
        Some(found)
    }

    /// What a remote endpoint, or one of this participant's, announced.
    pub fn endpoint_data(&self, guid: Guid) -> Option<RemoteEndpointInfo> {
        if let Some(i) = self.seen.remote_endpoint(guid) {
            return Some(i.clone());
        }
        let m = self.local.as_ref()?;
        if guid.entity_id.is_writer() {
            m.writer(guid).cloned().map(RemoteEndpointInfo::Writer)
        } else {
            m.reader(guid).cloned().map(RemoteEndpointInfo::Reader)
        }
    }

    /// `ignore_*`: the entity is forgotten and its matches end (the engine's own unmatch of
    /// them, if it comes, is then not passed on).
    pub fn ignore(&mut self, which: Ignore, out: &mut Vec<MatchAction>) {
        for (local, remote) in self.seen.ignore(which, out) {
            self.pending.remove(&(local, remote));
            self.refused.insert((local, remote));
            out.push(unmatch(local, remote));
        }
    }

    /// Registers the XTypes description of type `name` (built by `bundle` the first time
    /// only): its endpoints announce the TypeInformation and the TypeLookup service serves
    /// its TypeObjects. Does nothing when type information is off.
    pub fn register_type(&mut self, name: &str, bundle: impl FnOnce() -> Option<TypeBundle>) {
        let Some(svc) = &mut self.type_lookup else {
            return;
        };
        if self.types.contains_key(name) {
            return;
        }
        if let Some(b) = bundle() {
            svc.register(&b);
            self.types.insert(name.to_owned(), Arc::new(b.information));
        }
    }

    /// The type name and TypeInformation of each remote writer and reader on `topic`, writers
    /// first (`DomainParticipant::discover_type`).
    pub fn remote_endpoints(&self) -> Vec<RemoteEndpointInfo> {
        self.engine.remote_endpoints()
    }

    pub fn remote_types_on_topic(
        &self,
        topic: &str,
    ) -> Vec<(String, Option<Arc<TypeInformation>>)> {
        self.engine
            .remote_endpoints_on_topic(topic)
            .into_iter()
            .map(|e| match e {
                RemoteEndpointInfo::Writer(w) => (w.type_name.clone(), w.type_information.clone()),
                RemoteEndpointInfo::Reader(r) => (r.type_name.clone(), r.type_information.clone()),
            })
            .collect()
    }

    /// Every remote writer discovery knows (`DomainParticipant::discovered_writers`).
    pub fn remote_writers(&self) -> Vec<Arc<tessera_rtps::discovery::DiscoveredWriterData>> {
        self.engine.remote_writers()
    }

    /// Asks peers for the TypeObjects of `ids` not yet known (each at most once a second).
    /// Returns false when type information is off (no TypeLookup service).
    pub fn request_types(
        &mut self,
        p: &ParticipantShared,
        ids: &[tessera_rtps::xtypes::TypeIdentifier],
    ) -> bool {
        let now = Instant::now();
        let Some(t) = &mut self.type_lookup else {
            return false;
        };
        t.request(ids, now);
        self.flush(p, now);
        true
    }

    /// The TypeObject of a hashed identifier: ours, or a peer's received and verified.
    pub fn resolve_type(
        &self,
        id: &tessera_rtps::xtypes::TypeIdentifier,
    ) -> Option<tessera_rtps::xtypes::TypeObject> {
        self.type_lookup.as_ref().and_then(|t| t.resolve(id))
    }

    /// Why a peer's TypeObject of `id` arrived but was not kept (a kind Tessera does not
    /// model), if so.
    pub fn unsupported_type(
        &self,
        id: &tessera_rtps::xtypes::TypeIdentifier,
    ) -> Option<tessera_rtps::xtypes::XTypesError> {
        self.type_lookup.as_ref().and_then(|t| t.unsupported(id))
    }

    /// `DomainParticipant::assert_liveliness`: the engine tells the peers.
    pub fn assert_manual_liveliness(&mut self, p: &ParticipantShared, now: Instant) {
        self.engine.assert_manual_liveliness(now);
        self.flush(p, now);
    }

    /// Keeps the engine's AUTOMATIC assertions at the shortest lease of the local writers.
    fn automatic_lease_changed(&mut self, now: Instant) {
        let min = self.automatic_leases.iter().map(|(_, l)| *l).min();
        self.engine.set_automatic_liveliness(min, now);
    }

    pub fn participants(&self) -> Vec<ParticipantInfo> {
        self.participants.values().cloned().collect()
    }

    /// A channel of at most `capacity` participant events, starting with every participant
    /// known now; events that find it full are dropped and counted (`Budgets::events_dropped`).
    pub fn watch(&mut self, capacity: usize) -> crossbeam_channel::Receiver<ParticipantEvent> {
        let known = self
            .participants
            .values()
            .map(|info| ParticipantEvent::Discovered(info.clone()));
        self.watchers.watch(capacity, known)
    }

    /// Tells peers we are leaving, so they unmatch at once rather than after the lease.
    pub fn announce_leaving(&mut self, p: &ParticipantShared) {
        let now = Instant::now();
        self.engine.shutdown(now);
        self.flush(p, now);
    }

    pub fn next_deadline(&self) -> Option<Instant> {
        let held = self
            .pending
            .values()
            .map(|(_, since)| *since + TYPE_RESOLUTION_WAIT)
            .min();
        let tl = [
            self.type_lookup.as_ref().and_then(|t| t.poll_timeout()),
            held,
        ]
        .into_iter()
        .flatten()
        .min();
        match (self.engine.poll_timeout(), tl) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Runs the engine's timers (announcements, leases, SEDP heartbeats and repairs).
    pub fn on_timeout(&mut self, p: &ParticipantShared, now: Instant) -> Vec<MatchAction> {
        self.engine.handle_timeout(now);
        if let Some(t) = &mut self.type_lookup {
            t.handle_timeout(now);
        }
        let mut out = Vec::new();
        self.drain_engine(&mut out);
        self.decide_pending(now, &mut out);
        self.flush(p, now);
        out
    }

    /// A submessage from or to the built-in endpoint `entity` (its writer id).
    pub fn handle(
        &mut self,
        p: &ParticipantShared,
        entity: EntityId,
        rs: &ReceivedSubmessage<'_>,
        now: Instant,
    ) -> Vec<MatchAction> {
        if let Some(t) = &mut self.type_lookup {
            if TypeLookupService::owns(entity) {
                let before = t.counters();
                t.handle_submessage(rs, now);
                let after = t.counters();
                if after.rejected > before.rejected || after.bad_replies > before.bad_replies {
                    tracing::debug!(from = ?rs.source_prefix, "dropped an undecodable TypeLookup sample or a TypeObject that does not hash to its identifier");
                }
                let mut out = Vec::new();
                if t.take_resolved() {
                    self.decide_pending(now, &mut out);
                }
                self.flush(p, now);
                return out;
            }
        }
        if !self.engine.owns(entity) {
            return Vec::new();
        }
        let rejected = self.engine.rejected();
        self.engine.handle_submessage(rs, now);
        if self.engine.rejected() > rejected {
            tracing::debug!(from = ?rs.source_prefix, "dropped an undecodable or forged built-in sample");
        }
        self.flush(p, now);
        let mut out = Vec::new();
        self.drain_engine(&mut out);
        out
    }

    /// Registers a local writer: announces it and matches it with known readers.
    pub fn add_local_writer(
        &mut self,
        p: &ParticipantShared,
        guid: Guid,
        topic: EndpointTopic<'_>,
        qos: WriterSideQos,
        now: Instant,
    ) -> Vec<MatchAction> {
        let l = qos.liveliness;
        // Also a re-announcement (`set_qos`): the writer keeps one entry.
        self.automatic_leases.retain(|(g, _)| *g != guid);
        if l.kind == tessera_rtps::qos::LivelinessKind::Automatic
            && !tessera_rtps::qos::is_infinite(l.lease_duration)
        {
            self.automatic_leases.push((guid, l.lease_duration));
            self.automatic_lease_changed(now);
        }
        let mut data =
            DiscoveredWriterData::new(guid, topic.topic_name, topic.type_name).with_qos(qos);
        data.unicast_locators.clone_from(&self.default_unicast);
        data.type_information = self.types.get(topic.type_name).cloned();
        if let Some(t) = &data.type_information {
            self.local_types
                .insert(guid, (t.clone(), TypeConsistencyEnforcement::default()));
        }
        let local = data.clone();
        self.local_change(
            p,
            now,
            |m, ev| m.add_writer(local, ev),
            |e| e.announce_writer(data, now),
        )
    }

    /// Registers a local reader: announces it and matches it with known writers.
    pub fn add_local_reader(
        &mut self,
        p: &ParticipantShared,
        guid: Guid,
        topic: EndpointTopic<'_>,
        qos: ReaderSideQos,
        now: Instant,
    ) -> Vec<MatchAction> {
        let mut data =
            DiscoveredReaderData::new(guid, topic.topic_name, topic.type_name).with_qos(qos);
        data.unicast_locators.clone_from(&self.default_unicast);
        data.content_filter = topic.content_filter.cloned();
        data.loan_layout = topic.loan_layout;
        data.cdr_chunks = topic.cdr_chunks;
        data.type_information = self.types.get(topic.type_name).cloned();
        if let Some(t) = &data.type_information {
            self.local_types
                .insert(guid, (t.clone(), data.qos.type_consistency));
        }
        // As Cyclone's readers do: writers that share our group send each sample once to it.
        data.multicast_locators.clone_from(&self.reader_multicast);
        let local = data.clone();
        self.local_change(
            p,
            now,
            |m, ev| m.add_reader(local, ev),
            |e| e.announce_reader(data, now),
        )
    }

    /// Unannounces a deleted local endpoint and ends its local matches.
    pub fn remove_local_endpoint(
        &mut self,
        p: &ParticipantShared,
        guid: Guid,
        now: Instant,
    ) -> Vec<MatchAction> {
        self.local_types.remove(&guid);
        self.pending.retain(|(l, _), _| *l != guid);
        self.refused.retain(|(l, _)| *l != guid);
        let before = self.automatic_leases.len();
        self.automatic_leases.retain(|(g, _)| *g != guid);
        if self.automatic_leases.len() != before {
            self.automatic_lease_changed(now);
        }
        self.local_change(
            p,
            now,
            |m, ev| m.remove(guid, ev),
            |e| e.withdraw(guid, now),
        )
    }

    /// A local endpoint changed: the local matches first (they need no network), then the
    /// engine's announcement and whatever it decided at once.
    fn local_change(
        &mut self,
        p: &ParticipantShared,
        now: Instant,
        local: impl FnOnce(&mut LocalMatcher, &mut Vec<EngineEvent>),
        engine: impl FnOnce(&mut dyn DiscoveryEngine),
    ) -> Vec<MatchAction> {
        let mut out = Vec::new();
        if let Some(m) = &mut self.local {
            let mut events = Vec::new();
            local(m, &mut events);
            self.apply(events, &mut out);
        }
        engine(self.engine.as_mut());
        self.flush(p, now);
        self.drain_engine(&mut out);
        out
    }

    /// Sends every datagram the engine has ready.
    fn flush(&mut self, p: &ParticipantShared, now: Instant) {
        let engine = &mut self.engine;
        outbox::drain(p, |t| engine.poll_transmit(now, t));
        if let Some(tl) = &mut self.type_lookup {
            outbox::drain(p, |t| tl.poll_transmit(now, t));
        }
    }

    fn drain_engine(&mut self, out: &mut Vec<MatchAction>) {
        let mut events = Vec::new();
        while let Some(ev) = self.engine.poll_event() {
            events.push(ev);
        }
        self.apply(events, out);
    }

    /// Turns engine (or local matcher) events into endpoint actions and participant events.
    fn apply(&mut self, events: Vec<EngineEvent>, out: &mut Vec<MatchAction>) {
        for ev in events {
            match ev {
                EngineEvent::ParticipantDiscovered(data) => {
                    tracing::debug!(peer = ?data.guid_prefix, "discovered participant");
                    if !self.seen.participant(&data, out) {
                        continue;
                    }
                    let info = ParticipantInfo {
                        guid: Guid::new(data.guid_prefix, EntityId::PARTICIPANT),
                        vendor: data.vendor_id,
                        user_data: data.user_data.clone(),
                    };
                    self.participants.insert(data.guid_prefix, info.clone());
                    self.watchers.send(&ParticipantEvent::Discovered(info));
                    if let Some(t) = &mut self.type_lookup {
                        let meta = if data.metatraffic_unicast_locators.is_empty() {
                            self.transport.select(&data.metatraffic_multicast_locators)
                        } else {
                            self.transport.select(&data.metatraffic_unicast_locators)
                        };
                        t.add_peer(
                            data.guid_prefix,
                            data.builtin_endpoints,
                            meta,
                            Instant::now(),
                        );
                    }
                }
                // Kept current for `participants()`, as before; watchers hear only of arrivals
                // and departures.
                EngineEvent::ParticipantUpdated(data) => {
                    if !self.seen.participant(&data, out) {
                        continue;
                    }
                    if let Some(info) = self.participants.get_mut(&data.guid_prefix) {
                        info.vendor = data.vendor_id;
                        info.user_data.clone_from(&data.user_data);
                    }
                }
                EngineEvent::ParticipantLost { prefix, reason } => {
                    tracing::debug!(peer = ?prefix, ?reason, "participant lost");
                    self.seen.participant_lost(prefix, out);
                    if let Some(t) = &mut self.type_lookup {
                        t.remove_peer(prefix);
                    }
                    if self.participants.remove(&prefix).is_some() {
                        let guid = Guid::new(prefix, EntityId::PARTICIPANT);
                        self.watchers.send(&ParticipantEvent::Lost(guid));
                    }
                }
                // A re-announced remote (SEDP update, or its participant's default locators
                // moved) goes the same way: `matched` of a remote the endpoint already has only
                // refreshes its locators and counts nothing.
                EngineEvent::Matched { local, remote }
                | EngineEvent::MatchUpdated { local, remote } => {
                    let key = (local, remote.guid());
                    if self.seen.refuses(&remote) {
                        continue;
                    }
                    match self.type_verdict(local, &remote) {
                        Assignability::Assignable => {
                            self.pending.remove(&key);
                            self.refused.remove(&key);
                        }
                        Assignability::NotAssignable => {
                            tracing::debug!(?local, remote = ?key.1, "types not assignable: no match");
                            if self.pending.remove(&key).is_some() {
                                self.seen.record_match(local, key.1, false);
                                out.push(unmatch(local, key.1));
                            }
                            self.refused.insert(key);
                            continue;
                        }
                        // Matched on the name at once, as before type information (peers do
                        // not all answer TypeLookup, and a held match would stall a writer
                        // that already sends to us); ended if the types prove not assignable.
                        Assignability::Unresolved(missing) => {
                            if let Some(t) = &mut self.type_lookup {
                                t.request(&missing, Instant::now());
                            }
                            let since = self.pending.get(&key).map_or_else(Instant::now, |p| p.1);
                            self.pending.insert(key, (remote.clone(), since));
                        }
                    }
                    let r = self.remote_endpoint(local, &remote);
                    self.seen.record_match(local, key.1, true);
                    out.push(if local.entity_id.is_writer() {
                        MatchAction::MatchWriter { local, remote: r }
                    } else {
                        MatchAction::MatchReader { local, remote: r }
                    });
                }
                EngineEvent::Unmatched {
                    local,
                    remote,
                    lost,
                } if self.refused.remove(&(local, remote)) => {
                    // Not matched on the endpoint's side (any more): nothing to undo.
                    let _ = lost;
                }
                EngineEvent::Unmatched {
                    local,
                    remote,
                    lost,
                } => {
                    self.pending.remove(&(local, remote));
                    self.seen.record_match(local, remote, false);
                    out.push(if local.entity_id.is_writer() {
                        MatchAction::UnmatchWriter { local, remote }
                    } else {
                        MatchAction::UnmatchReader {
                            local,
                            remote,
                            lost,
                        }
                    })
                }
                EngineEvent::RemoteEndpoint(info) => {
                    self.seen.endpoint(&info, out);
                }
                EngineEvent::RemoteEndpointLost(guid) => self.seen.endpoint_lost(guid, out),
                EngineEvent::LivelinessAsserted { prefix, manual } => {
                    tracing::trace!(peer = ?prefix, manual, "participant asserted liveliness");
                    out.push(MatchAction::LivelinessAsserted { prefix, manual });
                }
                EngineEvent::IncompatibleQos {
                    local, policies, ..
                } => {
                    let policies = policies.iter().map(|p| p.id()).collect();
                    out.push(if local.entity_id.is_writer() {
                        MatchAction::WriterIncompatible { local, policies }
                    } else {
                        MatchAction::ReaderIncompatible { local, policies }
                    });
                }
            }
        }
    }

    /// Whether local endpoint `local` and a matched remote one have assignable types: only
    /// asked when both announced type information with different minimal identifiers (equal
    /// ones, and DISALLOW_TYPE_COERCION, were decided by the engine's matching), and decided
    /// on the minimal TypeObjects (ours, and the peer's fetched over TypeLookup).
    fn type_verdict(&self, local: Guid, remote: &RemoteEndpointInfo) -> Assignability {
        let (Some(svc), Some((ours, tce))) = (&self.type_lookup, self.local_types.get(&local))
        else {
            return Assignability::Assignable;
        };
        let theirs = match remote {
            RemoteEndpointInfo::Writer(w) => w.type_information.clone(),
            RemoteEndpointInfo::Reader(r) => r.type_information.clone(),
        };
        let Some(theirs) = theirs else {
            return Assignability::Assignable;
        };
        let ours_id = &ours.minimal.typeid_with_size.type_id;
        let theirs_id = &theirs.minimal.typeid_with_size.type_id;
        if ours_id == theirs_id {
            return Assignability::Assignable;
        }
        let resolve = |id: &tessera_rtps::xtypes::TypeIdentifier| svc.resolve(id);
        match remote {
            // A remote writer: our reader's policy; a remote reader: its policy.
            RemoteEndpointInfo::Writer(_) => assignable(ours_id, theirs_id, tce, &resolve),
            RemoteEndpointInfo::Reader(r) => {
                assignable(theirs_id, ours_id, &r.qos.type_consistency, &resolve)
            }
        }
    }

    /// Checks again the matches made on the type name (a peer's type arrived, or time
    /// passed): those whose types prove not assignable end; the others stay.
    fn decide_pending(&mut self, now: Instant, out: &mut Vec<MatchAction>) {
        if self.pending.is_empty() {
            return;
        }
        let held: Vec<_> = self.pending.drain().collect();
        for (key, (remote, since)) in held {
            match self.type_verdict(key.0, &remote) {
                Assignability::Unresolved(missing) if now < since + TYPE_RESOLUTION_WAIT => {
                    if let Some(t) = &mut self.type_lookup {
                        t.request(&missing, now);
                    }
                    self.pending.insert(key, (remote, since));
                }
                Assignability::NotAssignable => {
                    tracing::debug!(local = ?key.0, remote = ?key.1, "types not assignable: match ended");
                    self.seen.record_match(key.0, key.1, false);
                    out.push(unmatch(key.0, key.1));
                    self.refused.insert(key);
                }
                Assignability::Unresolved(_) => {
                    tracing::debug!(local = ?key.0, remote = ?key.1, "peer type not resolved: the type name decided");
                }
                Assignability::Assignable => {}
            }
        }
    }

    /// What local endpoint `local` needs to know of a matched endpoint.
    fn remote_endpoint(&self, local: Guid, info: &RemoteEndpointInfo) -> RemoteEndpoint {
        let durable = |d: Durability| d != Durability::Volatile;
        let consensus = match info {
            RemoteEndpointInfo::Writer(w) => (w.qos.consistency == Consistency::Atomic)
                .then_some(w.qos.consensus_endpoint)
                .flatten(),
            RemoteEndpointInfo::Reader(r) => (r.qos.consistency == Consistency::Atomic)
                .then_some(r.qos.consensus_endpoint)
                .flatten(),
        };
        if info.guid().prefix == self.prefix {
            // One of our own: reached at our own unicast locator, and the pair's reliability is
            // the reader's (matching guarantees the writer offers at least that).
            let reader = match info {
                RemoteEndpointInfo::Reader(r) => Some(r.clone()),
                RemoteEndpointInfo::Writer(_) => {
                    self.local.as_ref().and_then(|m| m.reader(local)).cloned()
                }
            };
            let reliable =
                reader.is_some_and(|r| r.qos.reliability.kind == ReliabilityKind::Reliable);
            let durable = match info {
                RemoteEndpointInfo::Writer(w) => durable(w.qos.durability),
                RemoteEndpointInfo::Reader(r) => durable(r.qos.durability),
            };
            return RemoteEndpoint {
                guid: info.guid(),
                reliable,
                durable,
                locators: self.own_locators,
                multicast: Locators::new(),
                consensus,
                writer_terms: writer_terms(info),
                content_filter: None,
                min_separation: std::time::Duration::ZERO,
                coherent_access: true,
                loan_layout: match info {
                    RemoteEndpointInfo::Reader(r) => r.loan_layout,
                    RemoteEndpointInfo::Writer(_) => 0,
                },
                // A reader of this participant gets the writer's own buffer.
                cdr_chunks: false,
            };
        }
        let locators = self.transport.select(info.unicast_locators());
        // The engine already replaced an endpoint's empty locator lists by its participant's
        // defaults. Only readers' multicast locators matter (we never send to a writer's).
        let multicast = match info {
            RemoteEndpointInfo::Reader(r) if self.allow_multicast.for_data() => self
                .transport
                .select_multicast(&locators, &r.multicast_locators),
            _ => Locators::new(),
        };
        let (reliable, durable) = match info {
            RemoteEndpointInfo::Writer(w) => (
                w.qos.reliability.kind == ReliabilityKind::Reliable,
                durable(w.qos.durability),
            ),
            RemoteEndpointInfo::Reader(r) => (
                r.qos.reliability.kind == ReliabilityKind::Reliable,
                durable(r.qos.durability),
            ),
        };
        RemoteEndpoint {
            guid: info.guid(),
            reliable,
            durable,
            locators,
            multicast,
            consensus,
            writer_terms: writer_terms(info),
            content_filter: match info {
                RemoteEndpointInfo::Reader(r) => r.content_filter.clone(),
                RemoteEndpointInfo::Writer(_) => None,
            },
            min_separation: match info {
                RemoteEndpointInfo::Reader(r) => r.qos.time_based_filter.minimum_separation,
                RemoteEndpointInfo::Writer(_) => std::time::Duration::ZERO,
            },
            coherent_access: match info {
                RemoteEndpointInfo::Reader(r) => r.qos.presentation.coherent_access,
                RemoteEndpointInfo::Writer(_) => true,
            },
            loan_layout: match info {
                RemoteEndpointInfo::Reader(r) => r.loan_layout,
                RemoteEndpointInfo::Writer(_) => 0,
            },
            cdr_chunks: match info {
                RemoteEndpointInfo::Reader(r) => r.cdr_chunks,
                RemoteEndpointInfo::Writer(_) => false,
            },
        }
    }
}

/// The run-time terms of a writer (defaults for a reader).
fn writer_terms(info: &RemoteEndpointInfo) -> crate::endpoint::WriterQosTerms {
    match info {
        RemoteEndpointInfo::Writer(w) => crate::endpoint::WriterQosTerms::of(&w.qos),
        RemoteEndpointInfo::Reader(_) => Default::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::SocketAddr;

    #[test]
    fn ros_discovery_server_values() {
        let a = |s: &str| s.parse::<SocketAddr>().unwrap();
        assert_eq!(
            DiscoveryMode::parse("127.0.0.1:11811").unwrap(),
            DiscoveryMode::Client(vec![DiscoveryServer {
                id: 0,
                address: a("127.0.0.1:11811")
            }])
        );
        assert_eq!(
            DiscoveryMode::parse(";0.0.0.0;[::1]:7000").unwrap(),
            DiscoveryMode::Client(vec![
                DiscoveryServer {
                    id: 1,
                    address: a("127.0.0.1:11811")
                },
                DiscoveryServer {
                    id: 2,
                    address: a("[::1]:7000")
                },
            ])
        );
        let DiscoveryMode::Client(l) = DiscoveryMode::parse("localhost:7400").unwrap() else {
            panic!("a client")
        };
        assert!(l[0].address.ip().is_loopback());
        assert!(matches!(
            DiscoveryMode::parse(";;"),
            Err(crate::Error::BadParameter(_))
        ));
        assert!(DiscoveryMode::parse("1.2.3.4:99999").is_err());
    }
}
