//! The client side of the centralized architecture: Fast DDS 2.9's discovery-server protocol
//! (`ROS_DISCOVERY_SERVER`), as a [`DiscoveryEngine`].
//!
//! No multicast and no SEDP with peers: the client pings each configured server with its
//! participant announcement (INFO_DST + HEARTBEAT + DATA(p) to the server's well-known prefix;
//! 5× at 100 ms, then every 450 ms until the server's DATA(p) is heard, then every 3 s),
//! acknowledges the server's reliable PDP writer, and once the server's DATA(p) arrived runs
//! SEDP with the server alone. The server relays the DATA(p), DATA(w) and DATA(r) of the other
//! clients this one shares a topic with, and their DATA(Up) when they leave; matching is then
//! local ([`DiscoveryDb`]) and user data flows peer to peer as with [`super::SimpleDiscovery`].
//!
//! Relayed participants hold no lease of their own here (their traffic goes to the server, not
//! to us): they go when a server relays their DATA(Up). A server that leaves or whose lease
//! runs out is pinged again from scratch, and what it relayed stays (as with Fast DDS: user data
//! keeps flowing while the server is down; a peer that dies meanwhile lingers until restarted
//! servers relay it again or the application deletes the participant).

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::builtin::{
    engine_event, feed_reader, feed_sedp_writers, reader_input_writer, BuiltinSample,
};
use super::ds_common::{
    encode_participant_with_properties, server_id, server_prefix, ParticipantType, ANNOUNCE_PERIOD,
    DS_LEASE, DS_VERSION, FAST_PINGS, FAST_PING_PERIOD, PING_PERIOD, PROP_DS_VERSION,
    PROP_PARTICIPANT_TYPE,
};
use super::{
    decode_dispose, encode_dispose_key_payload, BuiltinTopicKind, DiscoveredReaderData,
    DiscoveredWriterData, DiscoveryDb, DiscoveryEngine, DiscoveryEvent, DiscoveryStats,
    EngineEvent, LostReason, SpdpParticipantData, StatusInfo,
};
use crate::budget::SharedBudget;
use crate::reader::{ReaderConfig, ReaderCore};
use crate::types::{EntityId, Guid, GuidPrefix, Locators, Timestamp, VENDOR_FASTDDS};
use crate::wire::{Heartbeat, PayloadKind, ReceivedSubmessage, Submessage};
use crate::writer::{
    Destination, InlineQos, OutData, OutSubmessage, Transmit, WriterConfig, WriterCore,
};

/// A server a client talks to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteServer {
    /// Its id (the third byte of its well-known prefix; its position in
    /// `ROS_DISCOVERY_SERVER`).
    pub id: u8,
    /// Where it listens (metatraffic unicast).
    pub locators: Locators,
}

/// What a [`DiscoveryServerClient`] needs to start.
pub struct DsClientConfig {
    /// What we announce about ourselves. The client announces it with the vendor id Fast DDS
    /// servers require (01.0f), the [`DS_LEASE`], no multicast locators, and the properties
    /// `PARTICIPANT_TYPE=CLIENT`, `DS_VERSION`.
    pub participant: SpdpParticipantData,
    /// The servers (at least one).
    pub servers: Vec<RemoteServer>,
    /// Byte budgets the built-in readers draw from (shared with user readers).
    pub shared_reassembly: Option<SharedBudget>,
    /// See `shared_reassembly`.
    pub shared_buffered: Option<SharedBudget>,
    /// Wall-clock time (ns since the Unix epoch) at the `now` given to
    /// [`DiscoveryServerClient::new`].
    pub wall_clock_nanos: i64,
}

impl std::fmt::Debug for DsClientConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DsClientConfig")
            .field("participant", &self.participant.guid_prefix)
            .field("servers", &self.servers)
            .finish_non_exhaustive()
    }
}

/// Built-in samples a client dropped (the peer's fault).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DsClientCounters {
    /// Samples that did not decode.
    pub undecodable: u64,
    /// Disposes from neither a server nor the disposed participant.
    pub forged_disposes: u64,
}

struct Server {
    id: u8,
    prefix: GuidPrefix,
    locators: Locators,
    /// Its own DATA(p) arrived (it knows us; SEDP with it runs).
    heard: bool,
    pings: u32,
    next_ping: Instant,
}

struct SedpSample {
    publications: bool,
    source: GuidPrefix,
    payload: Vec<u8>,
    status: u32,
    key_hash: Option<[u8; 16]>,
}

/// A discovery-server client (see the module docs).
pub struct DiscoveryServerClient {
    prefix: GuidPrefix,
    db: DiscoveryDb,
    pdp_payload: Arc<Vec<u8>>,
    pdp_seq: i64,
    hb_count: i32,
    wall_origin: (Instant, i64),
    servers: Vec<Server>,
    pdp_reader: ReaderCore,
    sedp_pub_writer: WriterCore,
    sedp_sub_writer: WriterCore,
    sedp_pub_reader: ReaderCore,
    sedp_sub_reader: ReaderCore,
    /// Local announcements wait a moment to go out together.
    sedp_hold: super::builtin::SedpHold,
    /// Participants the servers told us of, with the id of the server that did.
    relayed: HashMap<GuidPrefix, u8>,
    /// Our announced endpoints (disposed when we leave).
    local: HashSet<Guid>,
    /// PDP datagrams (go first).
    pdp_out: VecDeque<Transmit>,
    /// The leaving DATA(Up): after the SEDP disposes.
    late_out: VecDeque<Transmit>,
    events: VecDeque<EngineEvent>,
    counters: DsClientCounters,
    left: bool,
}

impl std::fmt::Debug for DiscoveryServerClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DiscoveryServerClient")
            .field("prefix", &self.prefix)
            .field("servers", &self.servers.len())
            .field("relayed", &self.relayed.len())
            .finish_non_exhaustive()
    }
}

fn sedp_writer_config(guid: Guid) -> WriterConfig {
    let mut c = super::builtin::sedp_writer_config(guid);
    // Fast DDS servers compare EDP updates by the sample identity.
    c.send_sample_identity = true;
    c
}

impl DiscoveryServerClient {
    /// A client of `config.servers`; its first pings are due at `now`.
    pub fn new(config: DsClientConfig, now: Instant) -> Self {
        let prefix = config.participant.guid_prefix;
        let domain_id = config.participant.domain_id.unwrap_or(0);
        let mut data = config.participant;
        data.vendor_id = VENDOR_FASTDDS;
        data.lease_duration = DS_LEASE;
        data.metatraffic_multicast_locators.clear();
        let payload = encode_participant_with_properties(
            &data,
            &[
                (PROP_PARTICIPANT_TYPE, ParticipantType::Client.as_str()),
                (PROP_DS_VERSION, DS_VERSION),
            ],
        );
        let reader = |id| {
            let mut cfg = ReaderConfig::new(Guid::new(prefix, id));
            cfg.shared_reassembly = config.shared_reassembly.clone();
            cfg.shared_buffered = config.shared_buffered.clone();
            ReaderCore::new(cfg)
        };
        let mut pdp_reader = reader(EntityId::SPDP_READER);
        let servers: Vec<Server> = config
            .servers
            .iter()
            .map(|s| Server {
                id: s.id,
                prefix: server_prefix(s.id),
                locators: s.locators,
                heard: false,
                pings: 0,
                next_ping: now,
            })
            .collect();
        for s in &servers {
            // Reliable from the start: the server's heartbeats are acknowledged at once.
            pdp_reader.add_writer(
                Guid::new(s.prefix, EntityId::SPDP_WRITER),
                s.locators,
                true,
                now,
            );
        }
        let writer = |id| WriterCore::new(sedp_writer_config(Guid::new(prefix, id)));
        DiscoveryServerClient {
            prefix,
            // Discovery servers ignore domain ids: so does the client (see `on_pdp`).
            db: DiscoveryDb::new(prefix, domain_id).with_domain_tag(data.domain_tag.clone()),
            pdp_payload: Arc::new(payload),
            pdp_seq: 1,
            hb_count: 0,
            wall_origin: (now, config.wall_clock_nanos),
            servers,
            pdp_reader,
            sedp_pub_writer: writer(EntityId::SEDP_PUBLICATIONS_WRITER),
            sedp_sub_writer: writer(EntityId::SEDP_SUBSCRIPTIONS_WRITER),
            sedp_pub_reader: reader(EntityId::SEDP_PUBLICATIONS_READER),
            sedp_sub_reader: reader(EntityId::SEDP_SUBSCRIPTIONS_READER),
            sedp_hold: Default::default(),
            relayed: HashMap::new(),
            local: HashSet::new(),
            pdp_out: VecDeque::new(),
            late_out: VecDeque::new(),
            events: VecDeque::new(),
            counters: DsClientCounters::default(),
            left: false,
        }
    }

    /// The discovery database (known participants and endpoints, matches).
    pub fn db(&self) -> &DiscoveryDb {
        &self.db
    }

    /// Counters of ignored discovery inputs.
    pub fn stats(&self) -> DiscoveryStats {
        self.db.stats()
    }

    /// Built-in samples dropped as the peer's fault.
    pub fn counters(&self) -> DsClientCounters {
        self.counters
    }

    /// Whether server `id`'s DATA(p) was heard (SEDP with it runs).
    pub fn server_heard(&self, id: u8) -> bool {
        self.servers.iter().any(|s| s.id == id && s.heard)
    }

    fn wall(&self, now: Instant) -> Timestamp {
        super::builtin::wall_clock(self.wall_origin, now)
    }

    fn pdp_data(&self, sn: i64, dispose: bool) -> OutData {
        let guid = Guid::new(self.prefix, EntityId::PARTICIPANT);
        OutData {
            reader_id: EntityId::SPDP_READER,
            writer_id: EntityId::SPDP_WRITER,
            writer_sn: sn,
            inline_qos: InlineQos {
                key_hash: Some(guid.to_bytes()),
                status_info: if dispose { 3 } else { 0 },
                sample_identity: Some((Guid::new(self.prefix, EntityId::SPDP_WRITER), sn)),
                original_writer: None,
                coherent_set: None,
                group: None,
            },
            payload_kind: if dispose {
                PayloadKind::None
            } else {
                PayloadKind::Data
            },
            payload: if dispose {
                Arc::new(Vec::new())
            } else {
                self.pdp_payload.clone()
            },
        }
    }

    /// INFO_DST + INFO_TS + HEARTBEAT + DATA(p) to server `i`, as Fast DDS clients ping.
    fn ping(&mut self, i: usize, now: Instant) {
        self.hb_count = self.hb_count.wrapping_add(1);
        let s = &self.servers[i];
        let mut t = Transmit::new();
        t.dest = Destination::Endpoint {
            guid: Guid::new(s.prefix, EntityId::SPDP_READER),
            locators: s.locators,
        };
        t.submessages.push(OutSubmessage::Heartbeat(Heartbeat {
            reader_id: EntityId::SPDP_READER,
            writer_id: EntityId::SPDP_WRITER,
            first_sn: 1,
            last_sn: self.pdp_seq,
            count: self.hb_count,
            final_flag: false,
            liveliness_flag: false,
        }));
        t.submessages
            .push(OutSubmessage::InfoTs(Some(self.wall(now))));
        t.submessages
            .push(OutSubmessage::Data(self.pdp_data(self.pdp_seq, false)));
        self.pdp_out.push_back(t);
    }

    fn schedule_ping(s: &mut Server, now: Instant) {
        s.pings += 1;
        s.next_ping = now
            + if s.heard {
                ANNOUNCE_PERIOD
            } else if s.pings < FAST_PINGS {
                FAST_PING_PERIOD
            } else {
                PING_PERIOD
            };
    }

    fn server_index(&self, prefix: GuidPrefix) -> Option<usize> {
        self.servers.iter().position(|s| s.prefix == prefix)
    }

    /// A PDP sample from a server's PDP writer (its own DATA(p), or a relayed one).
    fn on_pdp(&mut self, source: GuidPrefix, s: BuiltinSample, now: Instant) {
        let Some(si) = self.server_index(source) else {
            return;
        };
        if StatusInfo(s.status).ends_instance() || s.kind != PayloadKind::Data {
            let guid = decode_dispose(BuiltinTopicKind::Participant, None, &s.payload)
                .ok()
                .map(|(g, _)| g)
                .or_else(|| s.key_hash.map(Guid::from_bytes));
            if let Some(g) = guid {
                if g.prefix == source {
                    self.server_lost(si, LostReason::Disposed, now);
                } else if self.relayed.remove(&g.prefix).is_some() {
                    self.db.on_participant_disposed(g.prefix);
                }
            }
            return;
        }
        let mut data = match SpdpParticipantData::decode(&s.payload) {
            Ok(d) => d,
            Err(_) => {
                self.counters.undecodable += 1;
                return;
            }
        };
        if data.guid_prefix == self.prefix {
            return;
        }
        // The discovery-server protocol ignores domain ids.
        data.domain_id = None;
        if data.guid_prefix == source {
            let first = !self.servers[si].heard;
            self.servers[si].heard = true;
            if first {
                self.add_server_proxies(si, now);
                let srv = &mut self.servers[si];
                srv.next_ping = now + ANNOUNCE_PERIOD;
            }
        } else {
            // A relayed participant has no lease here (see the module docs).
            data.lease_duration = Duration::MAX;
            let id = self.servers[si].id;
            if !self.relayed.contains_key(&data.guid_prefix)
                && self.relayed.len() >= super::MAX_REMOTE_PARTICIPANTS
            {
                self.db.on_spdp(data, now); // counted there
                return;
            }
            self.relayed.insert(data.guid_prefix, id);
        }
        self.db.on_spdp(data, now);
    }

    /// SEDP with server `i` (after its DATA(p)): the server relays everything else.
    fn add_server_proxies(&mut self, i: usize, now: Instant) {
        let (p, loc) = (self.servers[i].prefix, self.servers[i].locators);
        let g = |e| Guid::new(p, e);
        self.sedp_pub_writer.add_reader(
            g(EntityId::SEDP_PUBLICATIONS_READER),
            loc,
            true,
            true,
            now,
        );
        self.sedp_sub_writer.add_reader(
            g(EntityId::SEDP_SUBSCRIPTIONS_READER),
            loc,
            true,
            true,
            now,
        );
        self.sedp_pub_reader
            .add_writer(g(EntityId::SEDP_PUBLICATIONS_WRITER), loc, true, now);
        self.sedp_sub_reader
            .add_writer(g(EntityId::SEDP_SUBSCRIPTIONS_WRITER), loc, true, now);
    }

    /// Server `i` left or its lease ran out: forget it (not what it relayed: those peers and
    /// their matches stay, as with Fast DDS, so user data keeps flowing while the server is
    /// down) and ping it again.
    fn server_lost(&mut self, i: usize, reason: LostReason, now: Instant) {
        let s = &mut self.servers[i];
        let p = s.prefix;
        let was_heard = s.heard;
        s.heard = false;
        s.pings = 0;
        s.next_ping = now;
        let g = |e| Guid::new(p, e);
        self.sedp_pub_writer
            .remove_reader(g(EntityId::SEDP_PUBLICATIONS_READER));
        self.sedp_sub_writer
            .remove_reader(g(EntityId::SEDP_SUBSCRIPTIONS_READER));
        self.sedp_pub_reader
            .remove_writer(g(EntityId::SEDP_PUBLICATIONS_WRITER));
        self.sedp_sub_reader
            .remove_writer(g(EntityId::SEDP_SUBSCRIPTIONS_WRITER));
        // A fresh PDP stream from the restarted server starts at 1 again.
        self.pdp_reader.remove_writer(g(EntityId::SPDP_WRITER));
        let loc = self.servers[i].locators;
        self.pdp_reader
            .add_writer(g(EntityId::SPDP_WRITER), loc, true, now);
        if was_heard && reason == LostReason::Disposed {
            self.db.on_participant_disposed(p);
        }
    }
}

impl DiscoveryServerClient {
    /// DATA, DATA_FRAG, HEARTBEAT(_FRAG) or GAP from a server's PDP writer.
    fn on_pdp_input(&mut self, rs: &ReceivedSubmessage<'_>, now: Instant) {
        for s in feed_reader(&mut self.pdp_reader, rs, now) {
            self.on_pdp(rs.source_prefix, s, now);
        }
    }

    /// DATA, DATA_FRAG, HEARTBEAT(_FRAG) or GAP from a server's SEDP writer.
    fn on_sedp_input(&mut self, rs: &ReceivedSubmessage<'_>, writer_id: EntityId, now: Instant) {
        let publications = match writer_id {
            EntityId::SEDP_PUBLICATIONS_WRITER => true,
            EntityId::SEDP_SUBSCRIPTIONS_WRITER => false,
            _ => return,
        };
        let core = if publications {
            &mut self.sedp_pub_reader
        } else {
            &mut self.sedp_sub_reader
        };
        let received: Vec<SedpSample> = feed_reader(core, rs, now)
            .into_iter()
            .map(|d| SedpSample {
                publications,
                source: d.writer.prefix,
                payload: d.payload,
                status: d.status,
                key_hash: d.key_hash,
            })
            .collect();
        for s in received {
            self.on_sedp(s);
        }
    }

    fn on_sedp(&mut self, s: SedpSample) {
        if StatusInfo(s.status).ends_instance() {
            let guid = decode_dispose(BuiltinTopicKind::Endpoint, None, &s.payload)
                .ok()
                .map(|(g, _)| g)
                .or_else(|| s.key_hash.map(Guid::from_bytes));
            match guid {
                // A server relays disposes on behalf of its clients.
                Some(g) if g.prefix == s.source || server_id(s.source).is_some() => {
                    self.db.on_remote_endpoint_disposed(g);
                }
                Some(_) => self.counters.forged_disposes += 1,
                None => {}
            }
            return;
        }
        if s.publications {
            match DiscoveredWriterData::decode(&s.payload) {
                Ok(w) => self.db.on_sedp_writer(w),
                Err(_) => self.counters.undecodable += 1,
            }
        } else {
            match DiscoveredReaderData::decode(&s.payload) {
                Ok(r) => self.db.on_sedp_reader(r),
                Err(_) => self.counters.undecodable += 1,
            }
        }
    }

    /// Moves the database's decisions to the event queue; a server whose lease ran out is
    /// pinged again.
    fn drain_db(&mut self, now: Instant) {
        loop {
            let mut events = Vec::new();
            while let Some(ev) = self.db.poll_event() {
                events.push(ev);
            }
            if events.is_empty() {
                return;
            }
            let mut lost_servers = Vec::new();
            for ev in &events {
                if let DiscoveryEvent::ParticipantLost { prefix, reason } = ev {
                    if let Some(i) = self.server_index(*prefix) {
                        lost_servers.push((i, *reason));
                    }
                }
            }
            let expired: Vec<GuidPrefix> = events
                .iter()
                .filter_map(|e| match e {
                    DiscoveryEvent::ParticipantLost { prefix, reason } => {
                        (*reason == LostReason::LeaseExpired).then_some(*prefix)
                    }
                    _ => None,
                })
                .collect();
            for ev in events {
                if let DiscoveryEvent::ParticipantLost { prefix, .. } = &ev {
                    self.relayed.remove(prefix);
                }
                let Some(out) = engine_event(ev, &expired) else {
                    continue;
                };
                self.events.push_back(out);
            }
            for (i, reason) in lost_servers {
                self.server_lost(i, reason, now);
            }
        }
    }

    fn write_sedp(&mut self, guid: Guid, payload: Vec<u8>, dispose: bool, now: Instant) {
        let ts = self.wall(now);
        super::builtin::write_sedp(
            &mut self.sedp_pub_writer,
            &mut self.sedp_sub_writer,
            guid,
            payload,
            dispose,
            ts,
            now,
        );
    }
}

impl DiscoveryEngine for DiscoveryServerClient {
    fn remote_endpoints_on_topic(&self, topic: &str) -> Vec<super::RemoteEndpointInfo> {
        self.db.remote_endpoints_on_topic(topic)
    }

    fn remote_endpoints(&self) -> Vec<super::RemoteEndpointInfo> {
        self.db.remote_endpoints()
    }

    fn owns(&self, entity: EntityId) -> bool {
        entity.is_builtin()
    }

    fn announce_writer(&mut self, data: DiscoveredWriterData, now: Instant) {
        self.local.insert(data.guid);
        self.write_sedp(data.guid, data.to_payload(), false, now);
        self.sedp_hold.announced(now, super::builtin::SEDP_COALESCE);
        self.db.add_local_writer(data);
        self.drain_db(now);
    }

    fn announce_reader(&mut self, data: DiscoveredReaderData, now: Instant) {
        self.local.insert(data.guid);
        self.write_sedp(data.guid, data.to_payload(), false, now);
        self.sedp_hold.announced(now, super::builtin::SEDP_COALESCE);
        self.db.add_local_reader(data);
        self.drain_db(now);
    }

    fn withdraw(&mut self, guid: Guid, now: Instant) {
        self.local.remove(&guid);
        let mut payload = Vec::new();
        encode_dispose_key_payload(BuiltinTopicKind::Endpoint, guid, &mut payload);
        self.write_sedp(guid, payload, true, now);
        self.sedp_hold.release();
        if guid.entity_id.is_writer() {
            self.db.remove_local_writer(guid);
        } else {
            self.db.remove_local_reader(guid);
        }
        self.drain_db(now);
    }

    fn handle_submessage(&mut self, rs: &ReceivedSubmessage<'_>, now: Instant) {
        let src = rs.source_prefix;
        // Only servers talk discovery with a client; other traffic to built-in ids (a peer's
        // liveliness messages) is not ours to act on.
        if self.server_index(src).is_none() {
            return;
        }
        self.db.on_participant_alive(src, now);
        match &rs.submessage {
            // Our PDP "writer" is the ping (re-sent on its schedule): its ACKNACKs need nothing.
            _ if feed_sedp_writers(
                &mut self.sedp_pub_writer,
                &mut self.sedp_sub_writer,
                rs,
                now,
            ) => {}
            Submessage::Data(d) if d.writer_id == EntityId::SPDP_WRITER => {
                self.on_pdp_input(rs, now)
            }
            Submessage::DataFrag(d) if d.writer_id == EntityId::SPDP_WRITER => {
                self.on_pdp_input(rs, now)
            }
            Submessage::Heartbeat(h) if h.writer_id == EntityId::SPDP_WRITER => {
                self.on_pdp_input(rs, now)
            }
            Submessage::Gap(g) if g.writer_id == EntityId::SPDP_WRITER => {
                self.on_pdp_input(rs, now)
            }
            sm => {
                if let Some(w) = reader_input_writer(sm) {
                    self.on_sedp_input(rs, w, now);
                }
            }
        }
        self.drain_db(now);
    }

    fn handle_timeout(&mut self, now: Instant) {
        if !self.left {
            for i in 0..self.servers.len() {
                if self.servers[i].next_ping <= now {
                    self.ping(i, now);
                    Self::schedule_ping(&mut self.servers[i], now);
                }
            }
        }
        self.db.handle_timeout(now);
        self.pdp_reader.handle_timeout(now);
        self.sedp_pub_writer.handle_timeout(now);
        self.sedp_sub_writer.handle_timeout(now);
        self.sedp_pub_reader.handle_timeout(now);
        self.sedp_sub_reader.handle_timeout(now);
        self.drain_db(now);
    }

    fn poll_timeout(&self) -> Option<Instant> {
        let ping = if self.left {
            None
        } else {
            self.servers.iter().map(|s| s.next_ping).min()
        };
        [
            ping,
            self.db.poll_timeout(),
            self.pdp_reader.poll_timeout(),
            self.sedp_pub_writer.poll_timeout(),
            self.sedp_sub_writer.poll_timeout(),
            self.sedp_hold.poll_timeout(),
            self.sedp_pub_reader.poll_timeout(),
            self.sedp_sub_reader.poll_timeout(),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// DATA(Uw)/DATA(Ur) for every endpoint still announced, then DATA(Up) to every server.
    fn shutdown(&mut self, now: Instant) {
        if self.left {
            return;
        }
        let local: Vec<Guid> = self.local.drain().collect();
        for g in local {
            let mut payload = Vec::new();
            encode_dispose_key_payload(BuiltinTopicKind::Endpoint, g, &mut payload);
            self.write_sedp(g, payload, true, now);
        }
        self.left = true;
        self.sedp_hold.release();
        self.pdp_seq += 1;
        for s in &self.servers {
            let mut t = Transmit::new();
            t.dest = Destination::Endpoint {
                guid: Guid::new(s.prefix, EntityId::SPDP_READER),
                locators: s.locators,
            };
            t.submessages
                .push(OutSubmessage::Data(self.pdp_data(self.pdp_seq, true)));
            self.late_out.push_back(t);
        }
    }

    fn poll_transmit(&mut self, now: Instant, out: &mut Transmit) -> bool {
        if let Some(t) = self.pdp_out.pop_front() {
            *out = t;
            return true;
        }
        let held = self.sedp_hold.holding(now);
        if self.pdp_reader.poll_transmit_into(now, out)
            || (!held
                && (self.sedp_pub_writer.poll_transmit_into(now, out)
                    || self.sedp_sub_writer.poll_transmit_into(now, out)))
            || self.sedp_pub_reader.poll_transmit_into(now, out)
            || self.sedp_sub_reader.poll_transmit_into(now, out)
        {
            return true;
        }
        match self.late_out.pop_front() {
            Some(t) => {
                *out = t;
                true
            }
            None => false,
        }
    }

    fn poll_event(&mut self) -> Option<EngineEvent> {
        self.events.pop_front()
    }

    fn rejected(&self) -> u64 {
        self.counters.undecodable + self.counters.forged_disposes
    }
}
