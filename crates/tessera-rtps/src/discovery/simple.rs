//! Standard discovery, as the RTPS spec and Cyclone DDS do it: SPDP (best-effort participant
//! announcements, leases) and SEDP (reliable, transient-local publications and subscriptions).

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::builtin::sedp_writer_config;
use super::liveliness::{ParticipantMessages, PMD_MANUAL};
use super::{
    decode_dispose, encode_dispose_key_payload, BuiltinEndpointSet, BuiltinTopicKind,
    DiscoveredReaderData, DiscoveredWriterData, DiscoveryDb, DiscoveryEngine, DiscoveryEvent,
    DiscoveryStats, EngineEvent, LocatorSelector, LostReason, SpdpParticipantData, StatusInfo,
    MAX_REMOTE_PARTICIPANTS,
};
use crate::budget::SharedBudget;
use crate::reader::{ReaderConfig, ReaderCore};
use crate::types::{EntityId, Guid, GuidPrefix, Locator, Locators, Timestamp};
use crate::wire::{Data, PayloadKind, ReceivedSubmessage, Submessage};
use crate::writer::{Destination, InlineQos, OutData, OutSubmessage, Transmit, WriterCore};

/// How often SPDP is announced in steady state.
pub const SPDP_PERIOD: Duration = Duration::from_secs(3);
/// The lease Tessera announces (a peer that hears nothing from us for this long forgets us).
pub const SPDP_LEASE: Duration = Duration::from_secs(10);
/// Quick re-announcements after start (offsets from it), so that peers that started at the same
/// moment, and missed the first one, find us within tens of milliseconds rather than a period.
pub const STARTUP_ANNOUNCEMENTS: [Duration; 4] = [
    Duration::from_millis(20),
    Duration::from_millis(100),
    Duration::from_millis(300),
    Duration::from_secs(1),
];

/// What a [`SimpleDiscovery`] needs to start.
pub struct SimpleDiscoveryConfig {
    /// What we announce about ourselves (prefix, domain, locators, lease, user data, built-in
    /// endpoints). Serialized once: it does not change.
    pub participant: SpdpParticipantData,
    /// Where periodic SPDP announcements go (multicast groups, configured peers).
    pub spdp_destinations: Vec<Locator>,
    /// Chooses which of a peer's metatraffic locators to use.
    pub selector: Box<dyn LocatorSelector>,
    /// Steady-state announcement period.
    pub period: Duration,
    /// Announcements right after start, as offsets from it (then every `period`).
    pub startup: Vec<Duration>,
    /// Byte budgets the SEDP readers draw from for reassembly and out-of-order samples, shared
    /// with the participant's user readers.
    pub shared_reassembly: Option<SharedBudget>,
    /// See `shared_reassembly`.
    pub shared_buffered: Option<SharedBudget>,
    /// The wall-clock time (nanoseconds since the Unix epoch) at `now` of
    /// [`SimpleDiscovery::new`]: source timestamps are derived from it and the `now`s given.
    pub wall_clock_nanos: i64,
}

impl std::fmt::Debug for SimpleDiscoveryConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimpleDiscoveryConfig")
            .field("participant", &self.participant.guid_prefix)
            .field("spdp_destinations", &self.spdp_destinations)
            .finish_non_exhaustive()
    }
}

impl SimpleDiscoveryConfig {
    /// The defaults: [`SPDP_PERIOD`], [`STARTUP_ANNOUNCEMENTS`], no shared budgets, wall clock
    /// at 0.
    pub fn new(
        participant: SpdpParticipantData,
        spdp_destinations: Vec<Locator>,
        selector: Box<dyn LocatorSelector>,
    ) -> Self {
        SimpleDiscoveryConfig {
            participant,
            spdp_destinations,
            selector,
            period: SPDP_PERIOD,
            startup: STARTUP_ANNOUNCEMENTS.to_vec(),
            shared_reassembly: None,
            shared_buffered: None,
            wall_clock_nanos: 0,
        }
    }
}

/// A received SEDP sample, copied out of the reader core's delivery callback.
struct SedpSample {
    publications: bool,
    source: GuidPrefix,
    payload: Vec<u8>,
    status: u32,
    key_hash: Option<[u8; 16]>,
}

/// A remote participant as SPDP/SEDP needs it.
struct Peer {
    /// Where its SEDP endpoints are reached.
    meta: Locators,
}

/// SPDP + SEDP discovery (see the module docs).
///
/// Leases and matching decisions are the [`DiscoveryDb`]'s; this adds the announcement schedule,
/// the four reliable SEDP endpoints (proxies for each peer's built-in endpoints), building and
/// parsing built-in DATA, and the checks that only a participant may dispose itself and its
/// own endpoints.
pub struct SimpleDiscovery {
    prefix: GuidPrefix,
    domain_id: u32,
    domain_tag: String,
    db: DiscoveryDb,
    selector: Box<dyn LocatorSelector>,
    /// Our SPDP payload (serialized once).
    spdp_payload: Arc<Vec<u8>>,
    spdp_seq: i64,
    spdp_destinations: Vec<Locator>,
    period: Duration,
    startup: Vec<Duration>,
    started: Instant,
    next_announce: Instant,
    startup_step: usize,
    wall_origin: (Instant, i64),
    sedp_pub_writer: WriterCore,
    sedp_sub_writer: WriterCore,
    sedp_pub_reader: ReaderCore,
    sedp_sub_reader: ReaderCore,
    /// Local announcements wait a moment to go out together.
    sedp_hold: super::builtin::SedpHold,
    /// The writer liveliness protocol's endpoints.
    pmd: ParticipantMessages,
    peers: HashMap<GuidPrefix, Peer>,
    /// SPDP datagrams waiting for `poll_transmit` (sent before any SEDP traffic).
    spdp_out: VecDeque<Transmit>,
    events: VecDeque<EngineEvent>,
    counters: SimpleDiscoveryCounters,
    left: bool,
}

/// Built-in samples a [`SimpleDiscovery`] dropped (the peer's fault; the runtime logs them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SimpleDiscoveryCounters {
    /// SPDP or SEDP samples that did not decode.
    pub undecodable: u64,
    /// Disposes of a participant or endpoint sent by another participant (ignored: only a
    /// participant may dispose itself and its endpoints).
    pub forged_disposes: u64,
    /// SEDP samples whose PID_TYPE_INFORMATION did not decode (the sample itself is kept, the
    /// type information ignored; Fast DDS 2.9 sends such values).
    pub undecodable_type_information: u64,
}

impl std::fmt::Debug for SimpleDiscovery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimpleDiscovery")
            .field("prefix", &self.prefix)
            .field("peers", &self.peers.len())
            .finish_non_exhaustive()
    }
}

impl SimpleDiscovery {
    /// An engine for the participant `config.participant` describes; its first announcement is
    /// due at `now`.
    pub fn new(config: SimpleDiscoveryConfig, now: Instant) -> Self {
        let prefix = config.participant.guid_prefix;
        let domain_id = config.participant.domain_id.unwrap_or(0);
        let (shared_reassembly, shared_buffered) = (
            config.shared_reassembly.clone(),
            config.shared_buffered.clone(),
        );
        let mut participant = config.participant;
        participant.builtin_endpoints.0 |= ParticipantMessages::ENDPOINTS;
        let mut payload = Vec::new();
        participant.encode(&mut payload);
        let writer = |id| WriterCore::new(sedp_writer_config(Guid::new(prefix, id)));
        let reader = |id| {
            let mut cfg = ReaderConfig::new(Guid::new(prefix, id));
            cfg.shared_reassembly = shared_reassembly.clone();
            cfg.shared_buffered = shared_buffered.clone();
            ReaderCore::new(cfg)
        };
        SimpleDiscovery {
            prefix,
            domain_id,
            domain_tag: participant.domain_tag.clone(),
            db: DiscoveryDb::new(prefix, domain_id).with_domain_tag(participant.domain_tag.clone()),
            sedp_pub_writer: writer(EntityId::SEDP_PUBLICATIONS_WRITER),
            sedp_sub_writer: writer(EntityId::SEDP_SUBSCRIPTIONS_WRITER),
            sedp_pub_reader: reader(EntityId::SEDP_PUBLICATIONS_READER),
            sedp_sub_reader: reader(EntityId::SEDP_SUBSCRIPTIONS_READER),
            sedp_hold: Default::default(),
            pmd: ParticipantMessages::new(prefix),
            selector: config.selector,
            spdp_payload: Arc::new(payload),
            spdp_seq: 0,
            spdp_destinations: config.spdp_destinations,
            period: config.period,
            startup: config.startup,
            started: now,
            next_announce: now,
            startup_step: 0,
            wall_origin: (now, config.wall_clock_nanos),
            peers: HashMap::new(),
            spdp_out: VecDeque::new(),
            events: VecDeque::new(),
            counters: SimpleDiscoveryCounters::default(),
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
    pub fn counters(&self) -> SimpleDiscoveryCounters {
        self.counters
    }

    /// The metatraffic locators used for a known peer.
    pub fn peer_locators(&self, prefix: GuidPrefix) -> Option<Locators> {
        self.peers.get(&prefix).map(|p| p.meta)
    }

    fn wall(&self, now: Instant) -> Timestamp {
        super::builtin::wall_clock(self.wall_origin, now)
    }

    /// Queues one SPDP DATA to `dests` (several datagrams when they exceed one `Locators`).
    fn queue_spdp(&mut self, dests: &[Locator], data: OutData, ts: Option<Timestamp>) {
        for chunk in dests.chunks(Locators::CAPACITY) {
            let mut t = Transmit::new();
            t.dest = Destination::Locators(chunk.iter().copied().collect());
            if ts.is_some() {
                t.submessages.push(OutSubmessage::InfoTs(ts));
            }
            t.submessages.push(OutSubmessage::Data(data.clone()));
            self.spdp_out.push_back(t);
        }
    }

    /// Our SPDP sample to `dests`.
    fn send_spdp(&mut self, dests: &[Locator], now: Instant) {
        self.spdp_seq += 1;
        let data = OutData {
            reader_id: EntityId::SPDP_READER,
            writer_id: EntityId::SPDP_WRITER,
            writer_sn: self.spdp_seq,
            inline_qos: InlineQos::default(),
            payload_kind: PayloadKind::Data,
            payload: self.spdp_payload.clone(),
        };
        self.queue_spdp(dests, data, Some(self.wall(now)));
    }

    fn schedule_next_announce(&mut self, now: Instant) {
        self.next_announce = match self.startup.get(self.startup_step) {
            Some(d) => {
                self.startup_step += 1;
                self.started + *d
            }
            None => now + self.period,
        };
    }

    fn on_spdp(&mut self, source: GuidPrefix, d: &Data<'_>, now: Instant) {
        let status = d
            .inline_qos
            .as_ref()
            .and_then(|q| StatusInfo::from_inline_qos(q).ok())
            .unwrap_or(StatusInfo(0));
        if status.ends_instance() || d.payload_kind == PayloadKind::Key {
            if let Ok((guid, _)) = decode_dispose(
                BuiltinTopicKind::Participant,
                d.inline_qos.as_ref(),
                d.payload,
            ) {
                // Only a participant may say that it is gone: anyone else's word would let any
                // host unmatch any participant.
                if guid.prefix == source {
                    self.forget_participant(guid.prefix, LostReason::Disposed);
                    self.db.on_participant_disposed(guid.prefix);
                } else {
                    self.counters.forged_disposes += 1;
                }
            }
            return;
        }
        let data = match SpdpParticipantData::decode(d.payload) {
            Ok(data) => data,
            Err(_) => {
                self.counters.undecodable += 1;
                return;
            }
        };
        // Another domain (id or tag) is not ours: the database ignores it too, and a peer known
        // here but not there would never expire.
        let other_domain = data.domain_id.is_some_and(|id| id != self.domain_id)
            || data.domain_tag != self.domain_tag;
        if data.guid_prefix == self.prefix || other_domain {
            return;
        }
        let is_new = !self.peers.contains_key(&data.guid_prefix);
        if is_new && self.peers.len() >= MAX_REMOTE_PARTICIPANTS {
            // Bounded like the database (which counts it); a forged flood cannot grow memory.
            self.db.on_spdp(data, now);
            return;
        }
        let meta = if data.metatraffic_unicast_locators.is_empty() {
            self.selector.select(&data.metatraffic_multicast_locators)
        } else {
            self.selector.select(&data.metatraffic_unicast_locators)
        };
        let old_meta = self
            .peers
            .insert(data.guid_prefix, Peer { meta })
            .map(|p| p.meta);
        if is_new {
            self.events
                .push_back(EngineEvent::ParticipantDiscovered(Arc::new(data.clone())));
        }
        // A known participant that moved its metatraffic locators: the SEDP proxies below
        // already exist, and adding them again only gives them the new locators.
        if is_new || old_meta.is_some_and(|m| m != meta) {
            self.add_proxies(data.guid_prefix, data.builtin_endpoints, meta, now);
        }
        if is_new {
            // Answer at once so the peer need not wait for our next periodic announcement.
            self.send_spdp(meta.as_slice(), now);
        }
        self.db.on_spdp(data, now);
    }

    /// Matches our SEDP endpoints with the peer's (reliable, and our writers durable).
    fn add_proxies(
        &mut self,
        prefix: GuidPrefix,
        eps: BuiltinEndpointSet,
        meta: Locators,
        now: Instant,
    ) {
        use BuiltinEndpointSet as B;
        if eps.contains(B::PUBLICATIONS_DETECTOR) {
            let g = Guid::new(prefix, EntityId::SEDP_PUBLICATIONS_READER);
            self.sedp_pub_writer.add_reader(g, meta, true, true, now);
        }
        if eps.contains(B::SUBSCRIPTIONS_DETECTOR) {
            let g = Guid::new(prefix, EntityId::SEDP_SUBSCRIPTIONS_READER);
            self.sedp_sub_writer.add_reader(g, meta, true, true, now);
        }
        if eps.contains(B::PUBLICATIONS_ANNOUNCER) {
            let g = Guid::new(prefix, EntityId::SEDP_PUBLICATIONS_WRITER);
            self.sedp_pub_reader.add_writer(g, meta, true, now);
        }
        if eps.contains(B::SUBSCRIPTIONS_ANNOUNCER) {
            let g = Guid::new(prefix, EntityId::SEDP_SUBSCRIPTIONS_WRITER);
            self.sedp_sub_reader.add_writer(g, meta, true, now);
        }
        self.pmd.add_peer(prefix, eps, meta, now);
    }

    fn forget_participant(&mut self, prefix: GuidPrefix, reason: LostReason) {
        if self.peers.remove(&prefix).is_none() {
            return;
        }
        self.events
            .push_back(EngineEvent::ParticipantLost { prefix, reason });
        self.sedp_pub_writer
            .remove_reader(Guid::new(prefix, EntityId::SEDP_PUBLICATIONS_READER));
        self.sedp_sub_writer
            .remove_reader(Guid::new(prefix, EntityId::SEDP_SUBSCRIPTIONS_READER));
        self.sedp_pub_reader
            .remove_writer(Guid::new(prefix, EntityId::SEDP_PUBLICATIONS_WRITER));
        self.sedp_sub_reader
            .remove_writer(Guid::new(prefix, EntityId::SEDP_SUBSCRIPTIONS_WRITER));
        self.pmd.remove_peer(prefix);
    }

    fn on_sedp(&mut self, s: SedpSample) {
        if StatusInfo(s.status).ends_instance() {
            let guid = decode_dispose(BuiltinTopicKind::Endpoint, None, &s.payload)
                .ok()
                .map(|(g, _)| g)
                .or_else(|| s.key_hash.map(Guid::from_bytes));
            match guid {
                // An endpoint is disposed only by its own participant.
                Some(g) if g.prefix == s.source => {
                    self.db.on_remote_endpoint_disposed(g);
                }
                Some(_) => {
                    self.counters.forged_disposes += 1;
                }
                None => {}
            }
            return;
        }
        if s.publications {
            match DiscoveredWriterData::decode(&s.payload) {
                Ok(w) => {
                    self.counters.undecodable_type_information +=
                        u64::from(w.type_information_rejected);
                    self.db.on_sedp_writer(w)
                }
                Err(_) => self.counters.undecodable += 1,
            }
        } else {
            match DiscoveredReaderData::decode(&s.payload) {
                Ok(r) => {
                    self.counters.undecodable_type_information +=
                        u64::from(r.type_information_rejected);
                    self.db.on_sedp_reader(r)
                }
                Err(_) => self.counters.undecodable += 1,
            }
        }
    }

    /// DATA, DATA_FRAG, HEARTBEAT(_FRAG) or GAP from a peer's SEDP writer.
    fn on_sedp_reader_input(
        &mut self,
        rs: &ReceivedSubmessage<'_>,
        writer_id: EntityId,
        now: Instant,
    ) {
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
        let mut received = Vec::new();
        for d in super::builtin::feed_reader(core, rs, now) {
            received.push(SedpSample {
                publications,
                source: d.writer.prefix,
                payload: d.payload,
                status: d.status,
                key_hash: d.key_hash,
            });
        }
        for s in received {
            self.on_sedp(s);
        }
    }

    /// Moves the database's decisions to the event queue, dropping SEDP proxies of lost peers.
    fn drain_db(&mut self) {
        let mut events = Vec::new();
        while let Some(ev) = self.db.poll_event() {
            events.push(ev);
        }
        // The database reports a lost participant after unmatching its endpoints; those
        // unmatches are liveliness losses rather than deletions.
        let expired: Vec<GuidPrefix> = events
            .iter()
            .filter_map(|e| match e {
                DiscoveryEvent::ParticipantLost {
                    prefix,
                    reason: LostReason::LeaseExpired,
                } => Some(*prefix),
                _ => None,
            })
            .collect();
        for ev in events {
            if let DiscoveryEvent::ParticipantLost { prefix, reason } = ev {
                // Reported by `forget_participant`, which also drops the SEDP proxies.
                self.forget_participant(prefix, reason);
                continue;
            }
            let Some(out) = super::builtin::engine_event(ev, &expired) else {
                continue;
            };
            self.events.push_back(out);
        }
    }

    /// Writes one SEDP sample (an announcement, or a dispose when `dispose`).
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

impl DiscoveryEngine for SimpleDiscovery {
    fn remote_endpoints_on_topic(&self, topic: &str) -> Vec<super::RemoteEndpointInfo> {
        self.db.remote_endpoints_on_topic(topic)
    }

    fn remote_endpoints(&self) -> Vec<super::RemoteEndpointInfo> {
        self.db.remote_endpoints()
    }

    /// The whole built-in entity id space: traffic for built-in endpoints that are not
    /// implemented (e.g. a peer's participant-message writer) still renews the peer's lease.
    fn owns(&self, entity: EntityId) -> bool {
        entity.is_builtin()
    }

    fn announce_writer(&mut self, data: DiscoveredWriterData, now: Instant) {
        self.write_sedp(data.guid, data.to_payload(), false, now);
        self.sedp_hold.announced(now, super::builtin::SEDP_COALESCE);
        self.db.add_local_writer(data);
        self.drain_db();
    }

    fn announce_reader(&mut self, data: DiscoveredReaderData, now: Instant) {
        self.write_sedp(data.guid, data.to_payload(), false, now);
        self.sedp_hold.announced(now, super::builtin::SEDP_COALESCE);
        self.db.add_local_reader(data);
        self.drain_db();
    }

    fn withdraw(&mut self, guid: Guid, now: Instant) {
        let mut payload = Vec::new();
        encode_dispose_key_payload(BuiltinTopicKind::Endpoint, guid, &mut payload);
        self.write_sedp(guid, payload, true, now);
        self.sedp_hold.release();
        if guid.entity_id.is_writer() {
            self.db.remove_local_writer(guid);
        } else {
            self.db.remove_local_reader(guid);
        }
        self.drain_db();
    }

    fn handle_submessage(&mut self, rs: &ReceivedSubmessage<'_>, now: Instant) {
        self.db.on_participant_alive(rs.source_prefix, now);
        let src = rs.source_prefix;
        match &rs.submessage {
            Submessage::Data(d) if d.writer_id == EntityId::SPDP_WRITER => {
                self.on_spdp(src, d, now)
            }
            _ if self.pmd.handle(rs, now) => {
                while let Some((prefix, manual)) = self.pmd.poll_asserted() {
                    self.events
                        .push_back(EngineEvent::LivelinessAsserted { prefix, manual });
                }
            }
            _ if super::builtin::feed_sedp_writers(
                &mut self.sedp_pub_writer,
                &mut self.sedp_sub_writer,
                rs,
                now,
            ) => {}
            sm => {
                if let Some(w) = super::builtin::reader_input_writer(sm) {
                    self.on_sedp_reader_input(rs, w, now);
                }
            }
        }
        self.drain_db();
    }

    fn handle_timeout(&mut self, now: Instant) {
        if !self.left && now >= self.next_announce {
            let dests = std::mem::take(&mut self.spdp_destinations);
            self.send_spdp(&dests, now);
            self.spdp_destinations = dests;
            self.schedule_next_announce(now);
        }
        self.db.handle_timeout(now);
        self.sedp_pub_writer.handle_timeout(now);
        self.sedp_sub_writer.handle_timeout(now);
        self.sedp_pub_reader.handle_timeout(now);
        self.sedp_sub_reader.handle_timeout(now);
        if !self.left {
            let ts = self.wall(now);
            self.pmd.handle_timeout(now, ts);
        }
        self.drain_db();
    }

    fn poll_timeout(&self) -> Option<Instant> {
        let announce = (!self.left).then_some(self.next_announce);
        [
            announce,
            self.db.poll_timeout(),
            self.sedp_pub_writer.poll_timeout(),
            self.sedp_sub_writer.poll_timeout(),
            self.sedp_hold.poll_timeout(),
            self.sedp_pub_reader.poll_timeout(),
            self.sedp_sub_reader.poll_timeout(),
            self.pmd.poll_timeout().filter(|_| !self.left),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// An SPDP dispose to the SPDP destinations and to every known peer's metatraffic locators.
    fn shutdown(&mut self, now: Instant) {
        let _ = now;
        self.left = true;
        self.sedp_hold.release();
        let guid = Guid::new(self.prefix, EntityId::PARTICIPANT);
        let mut payload = Vec::new();
        encode_dispose_key_payload(BuiltinTopicKind::Participant, guid, &mut payload);
        self.spdp_seq += 1;
        let data = OutData {
            reader_id: EntityId::SPDP_READER,
            writer_id: EntityId::SPDP_WRITER,
            writer_sn: self.spdp_seq,
            inline_qos: InlineQos {
                key_hash: Some(guid.to_bytes()),
                status_info: 3,
                sample_identity: None,
                original_writer: None,
                coherent_set: None,
                group: None,
            },
            payload_kind: PayloadKind::Key,
            payload: Arc::new(payload),
        };
        let mut dests = self.spdp_destinations.clone();
        for p in self.peers.values() {
            dests.extend_from_slice(p.meta.as_slice());
        }
        self.queue_spdp(&dests, data, None);
    }

    fn poll_transmit(&mut self, now: Instant, out: &mut Transmit) -> bool {
        if let Some(t) = self.spdp_out.pop_front() {
            *out = t;
            return true;
        }
        let held = self.sedp_hold.holding(now);
        (!held
            && (self.sedp_pub_writer.poll_transmit_into(now, out)
                || self.sedp_sub_writer.poll_transmit_into(now, out)))
            || self.sedp_pub_reader.poll_transmit_into(now, out)
            || self.sedp_sub_reader.poll_transmit_into(now, out)
            || self.pmd.poll_transmit(now, out)
    }

    fn poll_event(&mut self) -> Option<EngineEvent> {
        self.events.pop_front()
    }

    fn rejected(&self) -> u64 {
        self.counters.undecodable + self.counters.forged_disposes + self.pmd.rejected
    }

    fn assert_manual_liveliness(&mut self, now: Instant) {
        let ts = self.wall(now);
        self.pmd.write(PMD_MANUAL, ts, now);
    }

    fn set_automatic_liveliness(&mut self, lease: Option<Duration>, now: Instant) {
        self.pmd.set_automatic_lease(lease, now);
    }
}
