//! The server side of the centralized architecture: a discovery server speaking Fast DDS 2.9's
//! protocol (what `fastdds discovery` does), sans-IO. `tessera discovery-server` drives it.
//!
//! The server answers from the well-known prefix of its id with `PARTICIPANT_TYPE=SERVER` and
//! `PID_PERSISTENCE_GUID`. It keeps every client's DATA(p), DATA(w) and DATA(r) and relays to
//! each client only what that client needs: A's announcements reach B only when A and B have a
//! writer and a reader on one topic (2.9's topic filter; a `SUPER_CLIENT` gets everything).
//! Each client has its own reliable PDP and SEDP writers here (the server's entity ids, its own
//! sequence numbers), so relaying is writing the original payload, with the original sample
//! identity, into that client's writers. A peer's DATA(w/r) is written for B only after B
//! acknowledged the peer's DATA(p) (clients drop endpoints of unknown participants). A client
//! that leaves (DATA(Up)) or whose lease runs out is relayed as DATA(Up) to those that knew it.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::builtin::{feed_reader, reader_input_writer, sedp_writer_config, BuiltinSample};
use super::ds_common::{
    decode_properties, encode_participant_with_properties, participant_type, server_prefix,
    ParticipantType, ANNOUNCE_PERIOD, DS_LEASE, DS_VERSION, PROP_DS_VERSION, PROP_PARTICIPANT_TYPE,
    PROP_PERSISTENCE_GUID,
};
use super::{
    decode_dispose, BuiltinEndpointSet, BuiltinTopicKind, DiscoveredReaderData,
    DiscoveredWriterData, LocatorSelector, SpdpParticipantData, StatusInfo,
};
use crate::reader::{ReaderConfig, ReaderCore};
use crate::types::VENDOR_FASTDDS;
use crate::types::{EntityId, Guid, GuidPrefix, Locator, Locators, SequenceNumber, Timestamp};
use crate::wire::{PayloadKind, ReceivedSubmessage, Submessage};
use crate::writer::{Destination, OutSubmessage, Transmit, WriterConfig, WriterCore};

#[path = "ds_backup.rs"]
mod backup;
#[path = "ds_links.rs"]
mod links;
#[path = "ds_relay.rs"]
mod relay;
pub use backup::BackupError;

/// How long a client's relays are held after one is written, so that those of a burst go to it
/// together (several DATA and one HEARTBEAT per datagram); see
/// [`DiscoveryServerEngine::set_relay_coalesce`].
pub const RELAY_COALESCE: Duration = Duration::from_millis(5);

/// At most this many clients are served; announcements of further ones are dropped (counted).
pub const MAX_CLIENTS: usize = 1024;
/// At most this many endpoints per client are kept.
pub const MAX_ENDPOINTS_PER_CLIENT: usize = 1024;

/// What a [`DiscoveryServerEngine`] needs to start.
pub struct DsServerConfig {
    /// The server id (`-i`): its prefix is [`server_prefix`]`(id)`.
    pub id: u8,
    /// Where it listens (announced as its metatraffic unicast locators).
    pub locators: Vec<Locator>,
    /// Picks which of a client's announced locators to reach it at.
    pub selector: Box<dyn LocatorSelector>,
    /// How long a silent client is kept.
    pub lease: Duration,
    /// Wall-clock time (ns since the Unix epoch) at the `now` of
    /// [`DiscoveryServerEngine::new`].
    pub wall_clock_nanos: i64,
    /// A BACKUP server (`-b`): announced as `PARTICIPANT_TYPE=BACKUP`; its driver persists
    /// [`DiscoveryServerEngine::backup`] and restores it on start.
    pub backup: bool,
    /// Other servers to link with (each gets everything this one knows, and tells it what it
    /// knows; see the `links` module). A server that links to this one unasked is served the
    /// same way.
    pub links: Vec<super::RemoteServer>,
}

impl std::fmt::Debug for DsServerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DsServerConfig")
            .field("id", &self.id)
            .field("locators", &self.locators)
            .finish_non_exhaustive()
    }
}

/// What a server dropped or did (the peer's fault in the first four).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DsServerCounters {
    /// Announcements that did not decode.
    pub undecodable: u64,
    /// Announcements from participants that are not clients (SIMPLE, another server, an
    /// unknown `PARTICIPANT_TYPE`).
    pub not_clients: u64,
    /// Clients or endpoints refused for the bounds ([`MAX_CLIENTS`],
    /// [`MAX_ENDPOINTS_PER_CLIENT`]).
    pub over_limit: u64,
    /// Endpoint announcements or disposes about another participant's endpoints.
    pub forged: u64,
    /// Clients whose lease ran out.
    pub expired: u64,
    /// (client, endpoint) pairs considered for relaying: the server's work, which grows
    /// with what it relays, not with the square of its clients.
    pub relay_checks: u64,
}

/// What the server tells its driver (for logs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DsServerEvent {
    /// A client announced itself for the first time.
    ClientJoined(GuidPrefix),
    /// A client left (its DATA(Up)) or its lease ran out (`expired`).
    ClientLeft {
        /// Its prefix.
        prefix: GuidPrefix,
        /// Lease expiry rather than its own goodbye.
        expired: bool,
    },
}

struct Endpoint {
    topic: String,
    /// Its (publisher's or subscriber's) partitions: clients are told only of endpoints that
    /// can match one of theirs, topic and partition.
    partitions: Vec<String>,
    payload: Arc<Vec<u8>>,
    origin: (Guid, SequenceNumber),
}

struct Client {
    kind: ParticipantType,
    /// The linked server that relayed this participant (it is not our client and we never
    /// write to it); `None` for our own clients and for linked servers.
    via: Option<GuidPrefix>,
    payload: Arc<Vec<u8>>,
    origin: (Guid, SequenceNumber),
    locators: Locators,
    expires: Instant,
    endpoints: BTreeMap<Guid, Endpoint>,
    pdp: WriterCore,
    sedp_pub: WriterCore,
    sedp_sub: WriterCore,
    /// Participants written into `pdp`, with their sequence number there.
    known: HashMap<GuidPrefix, SequenceNumber>,
    /// Endpoints written into `sedp_pub`/`sedp_sub`.
    told: BTreeSet<Guid>,
    /// Endpoints it needs whose participant's DATA(p) it has not acknowledged yet, by
    /// participant.
    pending: HashMap<GuidPrefix, BTreeSet<Guid>>,
    /// Its writers' output waits while relays accumulate.
    hold: super::builtin::SedpHold,
}

/// A discovery server (see the module docs).
pub struct DiscoveryServerEngine {
    prefix: GuidPrefix,
    payload: Arc<Vec<u8>>,
    selector: Box<dyn LocatorSelector>,
    lease: Duration,
    wall_origin: (Instant, i64),
    clients: HashMap<GuidPrefix, Client>,
    /// Topic name -> endpoints on it (every client's), by kind and owner.
    topics: HashMap<String, relay::TopicIndex>,
    pdp_reader: ReaderCore,
    sedp_pub_reader: ReaderCore,
    sedp_sub_reader: ReaderCore,
    next_announce: Instant,
    out: VecDeque<Transmit>,
    events: VecDeque<DsServerEvent>,
    counters: DsServerCounters,
    left: bool,
    /// Bumped whenever a client or endpoint is added, changed or removed.
    generation: u64,
    /// The configured links (re-created when a linked server's lease runs out).
    links: Vec<super::RemoteServer>,
    /// When linked servers that have not acknowledged our DATA(p) are pinged again.
    next_link_ping: Instant,
    /// See [`RELAY_COALESCE`].
    relay_coalesce: Duration,
}

impl std::fmt::Debug for DiscoveryServerEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DiscoveryServerEngine")
            .field("prefix", &self.prefix)
            .field("clients", &self.clients.len())
            .finish_non_exhaustive()
    }
}

fn relay_writer_config(guid: Guid) -> WriterConfig {
    let mut c = sedp_writer_config(guid);
    c.send_sample_identity = true;
    c
}

fn participant_key(prefix: GuidPrefix) -> [u8; 16] {
    Guid::new(prefix, EntityId::PARTICIPANT).to_bytes()
}

fn is_server(kind: ParticipantType) -> bool {
    matches!(kind, ParticipantType::Server | ParticipantType::Backup)
}

fn is_client(kind: ParticipantType) -> bool {
    matches!(kind, ParticipantType::Client | ParticipantType::SuperClient)
}

impl DiscoveryServerEngine {
    /// A server with no clients; its first periodic work is due at `now`.
    pub fn new(config: DsServerConfig, now: Instant) -> Self {
        let prefix = server_prefix(config.id);
        let mut data = SpdpParticipantData::new(prefix);
        data.vendor_id = VENDOR_FASTDDS;
        data.domain_id = Some(0);
        data.lease_duration = DS_LEASE;
        data.builtin_endpoints = BuiltinEndpointSet::TESSERA_DEFAULT;
        data.metatraffic_unicast_locators = config.locators.clone();
        let hex: Vec<String> = prefix.0.iter().map(|b| format!("{b:02x}")).collect();
        let persistence = format!("{}|0.0.1.c1", hex.join("."));
        let payload = encode_participant_with_properties(
            &data,
            &[
                (PROP_PERSISTENCE_GUID, &persistence),
                (
                    PROP_PARTICIPANT_TYPE,
                    if config.backup {
                        ParticipantType::Backup.as_str()
                    } else {
                        ParticipantType::Server.as_str()
                    },
                ),
                (PROP_DS_VERSION, DS_VERSION),
            ],
        );
        let reader = |id| ReaderCore::new(ReaderConfig::new(Guid::new(prefix, id)));
        let mut engine = DiscoveryServerEngine {
            prefix,
            payload: Arc::new(payload),
            selector: config.selector,
            lease: config.lease,
            wall_origin: (now, config.wall_clock_nanos),
            clients: HashMap::new(),
            topics: HashMap::new(),
            pdp_reader: reader(EntityId::SPDP_READER),
            sedp_pub_reader: reader(EntityId::SEDP_PUBLICATIONS_READER),
            sedp_sub_reader: reader(EntityId::SEDP_SUBSCRIPTIONS_READER),
            next_announce: now + ANNOUNCE_PERIOD,
            out: VecDeque::new(),
            events: VecDeque::new(),
            counters: DsServerCounters::default(),
            left: false,
            generation: 0,
            links: Vec::new(),
            next_link_ping: now,
            relay_coalesce: RELAY_COALESCE,
        };
        for l in config.links {
            engine.add_link(l, now);
        }
        engine
    }

    /// How long a client's relays are held to go out together ([`RELAY_COALESCE`] by
    /// default; zero sends each at once).
    pub fn set_relay_coalesce(&mut self, d: Duration) {
        self.relay_coalesce = d;
    }

    /// The server's GUID prefix.
    pub fn prefix(&self) -> GuidPrefix {
        self.prefix
    }

    /// The clients served now.
    pub fn clients(&self) -> Vec<GuidPrefix> {
        self.clients.keys().copied().collect()
    }

    /// The participants relayed to `client` so far (None if it is not a client).
    pub fn relayed_to(&self, client: GuidPrefix) -> Option<Vec<GuidPrefix>> {
        self.clients.get(&client).map(|c| {
            c.known
                .keys()
                .copied()
                .filter(|p| *p != self.prefix)
                .collect()
        })
    }

    /// Counters.
    pub fn counters(&self) -> DsServerCounters {
        self.counters
    }

    /// Built-in samples dropped as the peer's fault.
    pub fn rejected(&self) -> u64 {
        let c = self.counters;
        c.undecodable + c.not_clients + c.over_limit + c.forged
    }

    /// The next event, if any.
    pub fn poll_event(&mut self) -> Option<DsServerEvent> {
        self.events.pop_front()
    }

    fn wall(&self, now: Instant) -> Timestamp {
        super::builtin::wall_clock(self.wall_origin, now)
    }

    /// A received submessage addressed to the server (any built-in entity).
    pub fn handle_submessage(&mut self, rs: &ReceivedSubmessage<'_>, now: Instant) {
        if self.left {
            return;
        }
        let src = rs.source_prefix;
        let lease = self.lease;
        if let Some(c) = self.clients.get_mut(&src) {
            c.expires = now + lease;
        }
        match &rs.submessage {
            Submessage::Data(d) if d.writer_id == EntityId::SPDP_WRITER => {
                self.on_client_pdp(rs, d.writer_sn, now);
            }
            Submessage::Heartbeat(h) if h.writer_id == EntityId::SPDP_WRITER => {
                let _ = feed_reader(&mut self.pdp_reader, rs, now);
            }
            Submessage::AckNack(a) => {
                let Some(c) = self.clients.get_mut(&src) else {
                    return;
                };
                let advanced = match a.writer_id {
                    EntityId::SPDP_WRITER => c.pdp.on_acknack(src, a, now),
                    EntityId::SEDP_PUBLICATIONS_WRITER => c.sedp_pub.on_acknack(src, a, now),
                    EntityId::SEDP_SUBSCRIPTIONS_WRITER => c.sedp_sub.on_acknack(src, a, now),
                    _ => false,
                };
                if advanced && a.writer_id == EntityId::SPDP_WRITER {
                    // Participants it now knows: their endpoints may go out.
                    self.release_pending(src, now);
                }
            }
            Submessage::NackFrag(n) => {
                if let Some(c) = self.clients.get_mut(&src) {
                    match n.writer_id {
                        EntityId::SPDP_WRITER => c.pdp.on_nack_frag(src, n, now),
                        EntityId::SEDP_PUBLICATIONS_WRITER => c.sedp_pub.on_nack_frag(src, n, now),
                        EntityId::SEDP_SUBSCRIPTIONS_WRITER => c.sedp_sub.on_nack_frag(src, n, now),
                        _ => {}
                    }
                }
            }
            Submessage::Data(_)
            | Submessage::DataFrag(_)
            | Submessage::Heartbeat(_)
            | Submessage::HeartbeatFrag(_)
            | Submessage::Gap(_) => self.on_sedp_input(rs, now),
            _ => {}
        }
    }

    /// A client's DATA(p) (a ping, an update, or its DATA(Up)).
    fn on_client_pdp(&mut self, rs: &ReceivedSubmessage<'_>, sn: SequenceNumber, now: Instant) {
        let Submessage::Data(d) = &rs.submessage else {
            return;
        };
        let src = rs.source_prefix;
        let status = d
            .inline_qos
            .as_ref()
            .and_then(|q| StatusInfo::from_inline_qos(q).ok())
            .unwrap_or(StatusInfo(0));
        if status.ends_instance() || d.payload_kind != PayloadKind::Data {
            let guid = decode_dispose(
                BuiltinTopicKind::Participant,
                d.inline_qos.as_ref(),
                d.payload,
            )
            .ok()
            .map(|(g, _)| g);
            match guid {
                // Only a client may say it is gone.
                Some(g) if g.prefix == src => {
                    let origin = (Guid::new(src, EntityId::SPDP_WRITER), sn);
                    self.remove_client(src, Some(origin), now);
                }
                Some(g) if self.is_link(src) => self.on_relayed_goodbye(src, g.prefix, sn, now),
                Some(_) => self.counters.forged += 1,
                None => self.counters.undecodable += 1,
            }
            return;
        }
        let data = match SpdpParticipantData::decode(d.payload) {
            Ok(x) if x.guid_prefix == src => x,
            Ok(x) if self.is_link(src) => {
                // The original writer's identity travels in the inline QoS.
                let origin = d
                    .inline_qos
                    .as_ref()
                    .and_then(|q| crate::writer::InlineQos::parse(Some(q)).sample_identity)
                    .filter(|o| o.0.prefix == x.guid_prefix)
                    .unwrap_or((Guid::new(x.guid_prefix, EntityId::SPDP_WRITER), sn));
                let _ = feed_reader(&mut self.pdp_reader, rs, now);
                self.on_relayed_participant(src, x, d.payload, origin, now);
                return;
            }
            Ok(_) => {
                self.counters.forged += 1;
                return;
            }
            Err(_) => {
                self.counters.undecodable += 1;
                return;
            }
        };
        let kind = decode_properties(d.payload)
            .ok()
            .and_then(|p| participant_type(&p));
        let kind = match kind {
            Some(k) if is_client(k) || is_server(k) => k,
            _ => {
                self.counters.not_clients += 1;
                return;
            }
        };
        // 2.9 servers match only participants with the SPDP writer and reader.
        if !data.builtin_endpoints.contains(
            BuiltinEndpointSet::PARTICIPANT_ANNOUNCER | BuiltinEndpointSet::PARTICIPANT_DETECTOR,
        ) {
            self.counters.not_clients += 1;
            return;
        }
        let payload: Arc<Vec<u8>> = Arc::new(d.payload.to_vec());
        let origin = (Guid::new(src, EntityId::SPDP_WRITER), sn);
        let locators = self.selector.select(&data.metatraffic_unicast_locators);
        if self.clients.get(&src).is_some_and(|c| c.via.is_some()) {
            // Known through a link, now talking to us itself: it becomes our client.
            if let Some(old) = self.clients.remove(&src) {
                for (g, e) in &old.endpoints {
                    self.index_remove(*g, &e.topic, &e.partitions);
                }
            }
        }
        if let Some(c) = self.clients.get_mut(&src) {
            c.expires = now + self.lease;
            let _ = feed_reader(&mut self.pdp_reader, rs, now);
            if c.payload == payload {
                return;
            }
            c.payload = payload;
            c.origin = origin;
            let kind_changed = c.kind != kind;
            c.kind = kind;
            c.locators = locators;
            self.generation += 1;
            if kind_changed {
                // A client that became a super client now needs more.
                self.sync_client(src, now);
            }
            // A changed announcement goes again to everyone who knew the old one.
            let holders: Vec<GuidPrefix> = self
                .clients
                .iter()
                .filter(|(_, b)| b.known.contains_key(&src))
                .map(|(k, _)| *k)
                .collect();
            for b in holders {
                self.write_participant(b, src, now);
            }
            return;
        }
        if self.clients.len() >= MAX_CLIENTS {
            self.counters.over_limit += 1;
            return;
        }
        self.add_client(
            src,
            kind,
            payload,
            origin,
            locators,
            data.builtin_endpoints,
            now,
        );
        let _ = feed_reader(&mut self.pdp_reader, rs, now);
        self.generation += 1;
        self.events.push_back(DsServerEvent::ClientJoined(src));
    }

    #[allow(clippy::too_many_arguments)]
    fn add_client(
        &mut self,
        p: GuidPrefix,
        kind: ParticipantType,
        payload: Arc<Vec<u8>>,
        origin: (Guid, SequenceNumber),
        locators: Locators,
        eps: BuiltinEndpointSet,
        now: Instant,
    ) {
        use BuiltinEndpointSet as B;
        let me = self.prefix;
        let w = |id| WriterCore::new(relay_writer_config(Guid::new(me, id)));
        let mut c = Client {
            kind,
            via: None,
            payload,
            origin,
            locators,
            expires: now + self.lease,
            endpoints: BTreeMap::new(),
            pdp: w(EntityId::SPDP_WRITER),
            sedp_pub: w(EntityId::SEDP_PUBLICATIONS_WRITER),
            sedp_sub: w(EntityId::SEDP_SUBSCRIPTIONS_WRITER),
            known: HashMap::new(),
            told: BTreeSet::new(),
            pending: HashMap::new(),
            hold: Default::default(),
        };
        let g = |e| Guid::new(p, e);
        c.pdp
            .add_reader(g(EntityId::SPDP_READER), locators, true, true, now);
        if eps.contains(B::PUBLICATIONS_DETECTOR) {
            c.sedp_pub.add_reader(
                g(EntityId::SEDP_PUBLICATIONS_READER),
                locators,
                true,
                true,
                now,
            );
        }
        if eps.contains(B::SUBSCRIPTIONS_DETECTOR) {
            c.sedp_sub.add_reader(
                g(EntityId::SEDP_SUBSCRIPTIONS_READER),
                locators,
                true,
                true,
                now,
            );
        }
        // The server's own DATA(p) first: the client then starts EDP with us.
        let ts = Some(self.wall(now));
        if let Ok(sn) = c.pdp.write(
            self.payload.clone(),
            Some(participant_key(me)),
            0,
            false,
            ts,
            now,
        ) {
            c.known.insert(me, sn);
        }
        self.clients.insert(p, c);
        if kind == ParticipantType::SuperClient || is_server(kind) {
            // It needs every endpoint known so far.
            self.sync_client(p, now);
        }
        self.pdp_reader
            .add_writer(g(EntityId::SPDP_WRITER), locators, true, now);
        if eps.contains(B::PUBLICATIONS_ANNOUNCER) {
            self.sedp_pub_reader.add_writer(
                g(EntityId::SEDP_PUBLICATIONS_WRITER),
                locators,
                true,
                now,
            );
        }
        if eps.contains(B::SUBSCRIPTIONS_ANNOUNCER) {
            self.sedp_sub_reader.add_writer(
                g(EntityId::SEDP_SUBSCRIPTIONS_WRITER),
                locators,
                true,
                now,
            );
        }
    }

    /// Writes participant `a`'s current DATA(p) into client `b`'s PDP writer.
    fn write_participant(&mut self, b: GuidPrefix, a: GuidPrefix, now: Instant) {
        let ts = Some(self.wall(now));
        let Some((payload, origin)) = self.clients.get(&a).map(|c| (c.payload.clone(), c.origin))
        else {
            return;
        };
        if let Some(c) = self.clients.get_mut(&b) {
            if let Ok(sn) = c.pdp.write_relayed(
                payload,
                Some(participant_key(a)),
                0,
                false,
                ts,
                Some(origin),
                now,
            ) {
                c.known.insert(a, sn);
                c.hold.announced(now, self.relay_coalesce);
            }
        }
    }

    fn on_sedp_input(&mut self, rs: &ReceivedSubmessage<'_>, now: Instant) {
        let Some(writer_id) = reader_input_writer(&rs.submessage) else {
            return;
        };
        let samples = match writer_id {
            EntityId::SEDP_PUBLICATIONS_WRITER => feed_reader(&mut self.sedp_pub_reader, rs, now),
            EntityId::SEDP_SUBSCRIPTIONS_WRITER => feed_reader(&mut self.sedp_sub_reader, rs, now),
            _ => return,
        };
        for s in samples {
            self.on_endpoint(s, writer_id == EntityId::SEDP_PUBLICATIONS_WRITER, now);
        }
    }

    /// A client's DATA(w)/DATA(r) or its dispose.
    fn on_endpoint(&mut self, s: BuiltinSample, publication: bool, now: Instant) {
        let owner = s.writer.prefix;
        if StatusInfo(s.status).ends_instance() || s.kind != PayloadKind::Data {
            let guid = decode_dispose(BuiltinTopicKind::Endpoint, None, &s.payload)
                .ok()
                .map(|(g, _)| g)
                .or_else(|| s.key_hash.map(Guid::from_bytes));
            let relayed_by = |g: &Guid| {
                self.clients
                    .get(&g.prefix)
                    .is_some_and(|c| c.via == Some(owner))
            };
            match guid {
                Some(g) if g.prefix == owner || relayed_by(&g) => {
                    self.remove_endpoint(g, (s.writer, s.seq), now);
                }
                Some(_) => self.counters.forged += 1,
                None => self.counters.undecodable += 1,
            }
            return;
        }
        let decoded = if publication {
            DiscoveredWriterData::decode(&s.payload)
                .map(|w| (w.guid, w.topic_name, w.qos.partition.0))
        } else {
            DiscoveredReaderData::decode(&s.payload)
                .map(|r| (r.guid, r.topic_name, r.qos.partition.0))
        };
        let (guid, topic, partitions) = match decoded {
            Ok(x) => x,
            Err(_) => {
                self.counters.undecodable += 1;
                return;
            }
        };
        let relayed = guid.prefix != owner
            && self
                .clients
                .get(&guid.prefix)
                .is_some_and(|c| c.via == Some(owner));
        if (guid.prefix != owner && !relayed) || guid.entity_id.is_writer() != publication {
            self.counters.forged += 1;
            return;
        }
        let Some(c) = self.clients.get_mut(&guid.prefix) else {
            return;
        };
        if !c.endpoints.contains_key(&guid) && c.endpoints.len() >= MAX_ENDPOINTS_PER_CLIENT {
            self.counters.over_limit += 1;
            return;
        }
        let payload = Arc::new(s.payload);
        let old = c.endpoints.insert(
            guid,
            Endpoint {
                topic: topic.clone(),
                partitions: partitions.clone(),
                payload: payload.clone(),
                origin: (s.writer, s.seq),
            },
        );
        let moved = old.as_ref().is_some_and(|o| o.topic != topic);
        if let Some(old) = old.as_ref() {
            self.index_remove(guid, &old.topic, &old.partitions);
        }
        self.index_add(guid, &topic, &partitions);
        self.generation += 1;
        // An update goes again to those told of the old version.
        if old.is_some() {
            let ts = Some(self.wall(now));
            for c in self.clients.values_mut() {
                if c.told.contains(&guid) {
                    let core = if publication {
                        &mut c.sedp_pub
                    } else {
                        &mut c.sedp_sub
                    };
                    let _ = core.write_relayed(
                        payload.clone(),
                        Some(guid.to_bytes()),
                        0,
                        false,
                        ts,
                        Some((s.writer, s.seq)),
                        now,
                    );
                }
            }
        }
        if old.is_none() || moved || old.as_ref().is_some_and(|o| o.partitions != partitions) {
            // New, or now matching others: tell whoever it may match that was not told.
            self.endpoint_arrived(guid, &topic, now);
        }
    }

    /// An endpoint is gone: DATA(Uw/Ur) to every client told of it.
    fn remove_endpoint(&mut self, g: Guid, origin: (Guid, SequenceNumber), now: Instant) {
        let Some(e) = self
            .clients
            .get_mut(&g.prefix)
            .and_then(|c| c.endpoints.remove(&g))
        else {
            return;
        };
        self.generation += 1;
        self.index_remove(g, &e.topic, &e.partitions);
        let ts = Some(self.wall(now));
        let mut key_payload = Vec::new();
        super::encode_dispose_key_payload(BuiltinTopicKind::Endpoint, g, &mut key_payload);
        let key_payload = Arc::new(key_payload);
        for c in self.clients.values_mut() {
            if c.told.remove(&g) {
                let core = if g.entity_id.is_writer() {
                    &mut c.sedp_pub
                } else {
                    &mut c.sedp_sub
                };
                let _ = core.write_relayed(
                    key_payload.clone(),
                    Some(g.to_bytes()),
                    3,
                    true,
                    ts,
                    Some(origin),
                    now,
                );
            }
        }
    }

    /// A client is gone: its endpoints are withdrawn and DATA(Up) goes to every client that
    /// knew it, with the client's own sample identity when it said goodbye (`origin`), the
    /// server's when its lease ran out.
    fn remove_client(
        &mut self,
        p: GuidPrefix,
        origin: Option<(Guid, SequenceNumber)>,
        now: Instant,
    ) {
        let Some(c) = self.clients.remove(&p) else {
            return;
        };
        self.generation += 1;
        for (g, e) in &c.endpoints {
            self.index_remove(*g, &e.topic, &e.partitions);
        }
        let g = |e| Guid::new(p, e);
        self.pdp_reader.remove_writer(g(EntityId::SPDP_WRITER));
        self.sedp_pub_reader
            .remove_writer(g(EntityId::SEDP_PUBLICATIONS_WRITER));
        self.sedp_sub_reader
            .remove_writer(g(EntityId::SEDP_SUBSCRIPTIONS_WRITER));
        let ts = Some(self.wall(now));
        let mut key_payload = Vec::new();
        super::encode_dispose_key_payload(
            BuiltinTopicKind::Participant,
            Guid::new(p, EntityId::PARTICIPANT),
            &mut key_payload,
        );
        let key_payload = Arc::new(key_payload);
        for b in self.clients.values_mut() {
            b.pending.remove(&p);
            for eg in c.endpoints.keys() {
                b.told.remove(eg);
            }
            if b.known.remove(&p).is_some() {
                let _ = b.pdp.write_relayed(
                    key_payload.clone(),
                    Some(participant_key(p)),
                    3,
                    true,
                    ts,
                    origin,
                    now,
                );
            }
        }
        self.events.push_back(DsServerEvent::ClientLeft {
            prefix: p,
            expired: origin.is_none(),
        });
    }

    /// Runs what is due: lease expiry, the 3 s DATA(p) to every client, the writers' and
    /// readers' heartbeats and repairs.
    pub fn handle_timeout(&mut self, now: Instant) {
        if self.left {
            return;
        }
        let expired: Vec<GuidPrefix> = self
            .clients
            .iter()
            .filter(|(_, c)| c.via.is_none() && c.expires <= now)
            .map(|(k, _)| *k)
            .collect();
        for p in expired {
            self.counters.expired += 1;
            let kind = self.clients.get(&p).map(|c| c.kind);
            self.remove_client(p, None, now);
            if kind.is_some_and(is_server) {
                self.link_lost(p, now);
            }
        }
        if now >= self.next_announce {
            self.next_announce = now + ANNOUNCE_PERIOD;
            self.announce(now);
        }
        if now >= self.next_link_ping {
            self.next_link_ping = now + super::ds_common::PING_PERIOD;
            self.ping_links(now);
        }
        for c in self.clients.values_mut() {
            c.pdp.handle_timeout(now);
            c.sedp_pub.handle_timeout(now);
            c.sedp_sub.handle_timeout(now);
        }
        self.pdp_reader.handle_timeout(now);
        self.sedp_pub_reader.handle_timeout(now);
        self.sedp_sub_reader.handle_timeout(now);
    }

    /// The server's DATA(p) (sequence number 1 of each client's PDP stream) again to every
    /// client: it renews the server's lease there.
    fn announce(&mut self, now: Instant) {
        let all: Vec<GuidPrefix> = self.clients.keys().copied().collect();
        for p in all {
            self.announce_to(p, now);
        }
    }

    /// The server's DATA(p) to `p` directly (outside the reliable stream, which a linked
    /// server that does not know us yet would never acknowledge).
    pub(super) fn announce_to(&mut self, p: GuidPrefix, now: Instant) {
        let ts = self.wall(now);
        if let Some(c) = self.clients.get(&p) {
            let Some(sn) = c.known.get(&self.prefix) else {
                return;
            };
            let mut t = Transmit::new();
            t.dest = Destination::Endpoint {
                guid: Guid::new(p, EntityId::SPDP_READER),
                locators: c.locators,
            };
            t.submessages.push(OutSubmessage::InfoTs(Some(ts)));
            t.submessages
                .push(OutSubmessage::Data(crate::writer::OutData {
                    reader_id: EntityId::SPDP_READER,
                    writer_id: EntityId::SPDP_WRITER,
                    writer_sn: *sn,
                    inline_qos: crate::writer::InlineQos {
                        key_hash: Some(participant_key(self.prefix)),
                        status_info: 0,
                        sample_identity: Some((Guid::new(self.prefix, EntityId::SPDP_WRITER), *sn)),
                        original_writer: None,
                        coherent_set: None,
                        group: None,
                    },
                    payload_kind: PayloadKind::Data,
                    payload: self.payload.clone(),
                }));
            self.out.push_back(t);
        }
    }

    /// When [`handle_timeout`](Self::handle_timeout) next has work.
    pub fn poll_timeout(&self) -> Option<Instant> {
        if self.left {
            return None;
        }
        let mut t = Some(self.next_announce.min(self.next_link_ping));
        let mut min = |x: Option<Instant>| {
            if let Some(x) = x {
                t = Some(t.map_or(x, |t| t.min(x)));
            }
        };
        for c in self.clients.values() {
            if c.via.is_none() {
                min(Some(c.expires));
            }
            min(c.hold.poll_timeout());
            min(c.pdp.poll_timeout());
            min(c.sedp_pub.poll_timeout());
            min(c.sedp_sub.poll_timeout());
        }
        min(self.pdp_reader.poll_timeout());
        min(self.sedp_pub_reader.poll_timeout());
        min(self.sedp_sub_reader.poll_timeout());
        t
    }

    /// The server is stopping: its DATA(Up) to every client.
    pub fn shutdown(&mut self, now: Instant) {
        if self.left {
            return;
        }
        let me = self.prefix;
        let ts = Some(self.wall(now));
        let mut key_payload = Vec::new();
        super::encode_dispose_key_payload(
            BuiltinTopicKind::Participant,
            Guid::new(me, EntityId::PARTICIPANT),
            &mut key_payload,
        );
        let key_payload = Arc::new(key_payload);
        for c in self.clients.values_mut() {
            c.hold.release();
            let _ = c.pdp.write(
                key_payload.clone(),
                Some(participant_key(me)),
                3,
                true,
                ts,
                now,
            );
        }
        self.left = true;
    }

    /// Fills `out` with the next datagram to send; false when nothing is ready.
    pub fn poll_transmit(&mut self, now: Instant, out: &mut Transmit) -> bool {
        if let Some(t) = self.out.pop_front() {
            *out = t;
            return true;
        }
        for c in self.clients.values_mut() {
            if c.hold.holding(now) {
                continue;
            }
            if c.pdp.poll_transmit_into(now, out)
                || c.sedp_pub.poll_transmit_into(now, out)
                || c.sedp_sub.poll_transmit_into(now, out)
            {
                return true;
            }
        }
        self.pdp_reader.poll_transmit_into(now, out)
            || self.sedp_pub_reader.poll_transmit_into(now, out)
            || self.sedp_sub_reader.poll_transmit_into(now, out)
    }
}
