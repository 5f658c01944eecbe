//! The runtime side of discovery: SPDP announcements, the SEDP built-in endpoints, and turning
//! the discovery database's decisions into actions on local endpoints.
//!
//! The decisions themselves (who matches whom, lease expiry) are made by the sans-IO
//! [`DiscoveryDb`]; this module moves its inputs and outputs over the network. It runs under the
//! participant's discovery lock, never on the per-sample data path.

use crate::bounds::{Budgets, EventFanout};
use crate::endpoint::{send_datagram, with_send_buf, RemoteEndpoint};
use crate::outbox;
use crate::participant::ParticipantShared;
use crate::qos::{DataReaderQos, DataWriterQos, DomainParticipantQos, PublisherQos, SubscriberQos};
use crate::topic::Topic;
use crate::transport::{AllowMulticast, Transports};
use crate::TopicType;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tessera_rtps::discovery::{
    decode_dispose, encode_dispose_inline_qos, encode_dispose_key_payload, evaluate_match,
    BuiltinEndpointSet, BuiltinTopicKind, DiscoveredReaderData, DiscoveredWriterData, DiscoveryDb,
    DiscoveryEvent, LostReason, MatchOutcome, RemoteEndpointInfo, SpdpParticipantData, StatusInfo,
};
use tessera_rtps::qos::{Durability, ReaderSideQos, ReliabilityKind, WriterSideQos};
use tessera_rtps::reader::{Delivered, ReaderConfig, ReaderCore};
use tessera_rtps::types::{EntityId, Guid, GuidPrefix, Locator, Locators, Timestamp};
use tessera_rtps::wire::{
    Data, MessageBuilder, ParameterList, PayloadKind, ReceivedSubmessage, Submessage,
};
use tessera_rtps::writer::WriterCore;

/// A received SEDP sample: (publications?, sending participant, payload, status info, key hash).
type SedpSample = (bool, GuidPrefix, Vec<u8>, u32, Option<[u8; 16]>);

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
}

/// How often SPDP is announced in steady state, and the lease we announce.
const SPDP_PERIOD: Duration = Duration::from_secs(3);
const LEASE: Duration = Duration::from_secs(10);
/// Quick re-announcements right after start, so peers that started at the same moment (and
/// missed the first one) find us within tens of milliseconds rather than a period.
const STARTUP_ANNOUNCEMENTS: [Duration; 4] = [
    Duration::from_millis(20),
    Duration::from_millis(100),
    Duration::from_millis(300),
    Duration::from_secs(1),
];

/// Participant settings that change what discovery announces and matches.
#[derive(Debug, Clone, Copy)]
pub(crate) struct DiscoveryOptions {
    /// Do not match local readers with local writers.
    pub ignore_local: bool,
    /// Whether readers announce (and writers use) multicast locators for user data.
    pub allow_multicast: AllowMulticast,
}

pub(crate) struct DiscoveryRuntime {
    prefix: GuidPrefix,
    db: DiscoveryDb,
    /// Our SPDP payload (serialized once; our data does not change).
    spdp_payload: Arc<Vec<u8>>,
    spdp_seq: i64,
    spdp_destinations: Vec<Locator>,
    started: Instant,
    next_announce: Instant,
    startup_step: usize,
    sedp_pub_writer: WriterCore,
    sedp_sub_writer: WriterCore,
    sedp_pub_reader: ReaderCore,
    sedp_sub_reader: ReaderCore,
    /// Remote participants' metatraffic locators (for SEDP) and what they announced.
    participants: HashMap<GuidPrefix, (Locators, ParticipantInfo)>,
    /// Subscribers to participant discovery events (bounded channels).
    watchers: EventFanout<ParticipantEvent>,
    /// This participant's own endpoints, matched with each other here (the database matches
    /// only local against remote). Empty maps when `ignore_local` is set.
    local_writers: HashMap<Guid, DiscoveredWriterData>,
    local_readers: HashMap<Guid, DiscoveredReaderData>,
    ignore_local: bool,
    own_locators: Locators,
    /// The default multicast locators our readers announce (empty unless multicast is
    /// allowed for data).
    reader_multicast: Vec<Locator>,
    allow_multicast: AllowMulticast,
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

impl DiscoveryRuntime {
    pub fn new(
        prefix: GuidPrefix,
        domain_id: u32,
        qos: &DomainParticipantQos,
        transport: &Transports,
        options: DiscoveryOptions,
        budgets: &Budgets,
        now: Instant,
    ) -> Self {
        let DiscoveryOptions {
            ignore_local,
            allow_multicast,
        } = options;
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
        data.lease_duration = LEASE;
        // Only what we implement: SPDP and the SEDP publication/subscription endpoints.
        data.builtin_endpoints = BuiltinEndpointSet::TESSERA_DEFAULT;
        data.user_data = qos.user_data.0.clone();
        let mut payload = Vec::new();
        data.encode(&mut payload);
        let sedp_writer =
            |id| WriterCore::new(outbox::builtin_writer_config(Guid::new(prefix, id)));
        // The SEDP readers draw from the participant's byte pools like user readers do.
        let sedp_reader = |id| {
            let mut cfg = ReaderConfig::new(Guid::new(prefix, id));
            cfg.shared_reassembly = Some(budgets.reassembly.clone());
            cfg.shared_buffered = Some(budgets.out_of_order.clone());
            ReaderCore::new(cfg)
        };
        DiscoveryRuntime {
            prefix,
            db: DiscoveryDb::new(prefix, domain_id),
            spdp_payload: payload.into(),
            spdp_seq: 0,
            spdp_destinations: transport.spdp_destinations(),
            started: now,
            next_announce: now,
            startup_step: 0,
            sedp_pub_writer: sedp_writer(EntityId::SEDP_PUBLICATIONS_WRITER),
            sedp_sub_writer: sedp_writer(EntityId::SEDP_SUBSCRIPTIONS_WRITER),
            sedp_pub_reader: sedp_reader(EntityId::SEDP_PUBLICATIONS_READER),
            sedp_sub_reader: sedp_reader(EntityId::SEDP_SUBSCRIPTIONS_READER),
            participants: HashMap::new(),
            watchers: EventFanout::new(budgets.events_dropped.clone()),
            local_writers: HashMap::new(),
            local_readers: HashMap::new(),
            ignore_local,
            // Local pairs go through the first (preferred) transport only: one copy each.
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
        }
    }

    pub fn participants(&self) -> Vec<ParticipantInfo> {
        self.participants.values().map(|(_, i)| i.clone()).collect()
    }

    /// A channel of at most `capacity` participant events, starting with every participant
    /// known now; events that find it full are dropped and counted (`Budgets::events_dropped`).
    pub fn watch(&mut self, capacity: usize) -> crossbeam_channel::Receiver<ParticipantEvent> {
        let known = self
            .participants
            .values()
            .map(|(_, info)| ParticipantEvent::Discovered(info.clone()));
        self.watchers.watch(capacity, known)
    }

    fn notify(&mut self, ev: ParticipantEvent) {
        self.watchers.send(&ev);
    }

    /// Sends our SPDP sample to `dests` now.
    fn send_spdp(&mut self, p: &ParticipantShared, dests: &[Locator]) {
        self.spdp_seq += 1;
        let data = Data {
            reader_id: EntityId::SPDP_READER,
            writer_id: EntityId::SPDP_WRITER,
            writer_sn: self.spdp_seq,
            inline_qos: None,
            payload_kind: PayloadKind::Data,
            payload: &self.spdp_payload,
        };
        with_send_buf(|buf| {
            let mut m = MessageBuilder::new(buf, self.prefix);
            m.info_ts(Some(Timestamp::from_nanos(crate::publication::now_nanos())));
            m.submessage(&Submessage::Data(data));
            send_datagram(p, buf, dests);
        });
    }

    pub fn announce_now(&mut self, p: &ParticipantShared, now: Instant) {
        let dests = std::mem::take(&mut self.spdp_destinations);
        self.send_spdp(p, &dests);
        self.spdp_destinations = dests;
        self.schedule_next_announce(now);
    }

    fn schedule_next_announce(&mut self, now: Instant) {
        self.next_announce = match STARTUP_ANNOUNCEMENTS.get(self.startup_step) {
            Some(d) => {
                self.startup_step += 1;
                self.started + *d
            }
            None => now + SPDP_PERIOD,
        };
    }

    /// Tells peers we are leaving (SPDP dispose), so they unmatch at once rather than after
    /// the lease.
    pub fn announce_leaving(&mut self, p: &ParticipantShared) {
        let guid = Guid::new(self.prefix, EntityId::PARTICIPANT);
        let mut payload = Vec::new();
        encode_dispose_key_payload(BuiltinTopicKind::Participant, guid, &mut payload);
        let mut qos = Vec::new();
        encode_dispose_inline_qos(guid, StatusInfo(3), &mut qos);
        self.spdp_seq += 1;
        let mut dests = self.spdp_destinations.clone();
        for (l, _) in self.participants.values() {
            dests.extend_from_slice(l.as_slice());
        }
        with_send_buf(|buf| {
            let mut m = MessageBuilder::new(buf, self.prefix);
            m.submessage(&Submessage::Data(Data {
                reader_id: EntityId::SPDP_READER,
                writer_id: EntityId::SPDP_WRITER,
                writer_sn: self.spdp_seq,
                inline_qos: ParameterList::parse(&qos, true).ok(),
                payload_kind: PayloadKind::Key,
                payload: &payload,
            }));
            send_datagram(p, buf, &dests);
        });
    }

    pub fn next_deadline(&self) -> Option<Instant> {
        let mut d = Some(self.next_announce);
        for t in [
            self.db.poll_timeout(),
            self.sedp_pub_writer.poll_timeout(),
            self.sedp_sub_writer.poll_timeout(),
            self.sedp_pub_reader.poll_timeout(),
            self.sedp_sub_reader.poll_timeout(),
        ]
        .into_iter()
        .flatten()
        {
            d = Some(d.map_or(t, |x: Instant| x.min(t)));
        }
        d
    }

    pub fn on_timeout(&mut self, p: &ParticipantShared, now: Instant) -> Vec<MatchAction> {
        if now >= self.next_announce {
            self.announce_now(p, now);
        }
        self.db.handle_timeout(now);
        for core in [&mut self.sedp_pub_writer, &mut self.sedp_sub_writer] {
            core.handle_timeout(now);
            outbox::flush_writer(p, core, now);
        }
        for core in [&mut self.sedp_pub_reader, &mut self.sedp_sub_reader] {
            core.handle_timeout(now);
            outbox::flush_reader(p, core, now);
        }
        self.drain_events(p, now)
    }

    /// A submessage from or to a built-in endpoint.
    pub fn handle(
        &mut self,
        p: &ParticipantShared,
        rs: &ReceivedSubmessage<'_>,
        now: Instant,
    ) -> Vec<MatchAction> {
        self.db.on_participant_alive(rs.source_prefix, now);
        match &rs.submessage {
            Submessage::Data(d) if d.writer_id == EntityId::SPDP_WRITER => {
                self.on_spdp(p, rs.source_prefix, d, now)
            }
            Submessage::AckNack(a) => {
                let core = match a.writer_id {
                    EntityId::SEDP_PUBLICATIONS_WRITER => &mut self.sedp_pub_writer,
                    EntityId::SEDP_SUBSCRIPTIONS_WRITER => &mut self.sedp_sub_writer,
                    _ => return Vec::new(),
                };
                core.on_acknack(rs.source_prefix, a, now);
                outbox::flush_writer(p, core, now);
            }
            Submessage::NackFrag(n) => {
                let core = match n.writer_id {
                    EntityId::SEDP_PUBLICATIONS_WRITER => &mut self.sedp_pub_writer,
                    EntityId::SEDP_SUBSCRIPTIONS_WRITER => &mut self.sedp_sub_writer,
                    _ => return Vec::new(),
                };
                core.on_nack_frag(rs.source_prefix, n, now);
                outbox::flush_writer(p, core, now);
            }
            sm => {
                let writer_id = match sm {
                    Submessage::Data(d) => d.writer_id,
                    Submessage::DataFrag(d) => d.writer_id,
                    Submessage::Heartbeat(h) => h.writer_id,
                    Submessage::HeartbeatFrag(h) => h.writer_id,
                    Submessage::Gap(g) => g.writer_id,
                    _ => return Vec::new(),
                };
                let publications = match writer_id {
                    EntityId::SEDP_PUBLICATIONS_WRITER => true,
                    EntityId::SEDP_SUBSCRIPTIONS_WRITER => false,
                    _ => return Vec::new(),
                };
                let mut received: Vec<SedpSample> = Vec::new();
                let core = if publications {
                    &mut self.sedp_pub_reader
                } else {
                    &mut self.sedp_sub_reader
                };
                let mut deliver = |d: Delivered<'_>| {
                    received.push((
                        publications,
                        d.writer.prefix,
                        d.payload.to_vec(),
                        d.status_info,
                        d.key_hash,
                    ));
                };
                match sm {
                    Submessage::Data(d) => {
                        core.on_data(rs.source_prefix, d, rs.timestamp, now, &mut deliver)
                    }
                    Submessage::DataFrag(d) => {
                        core.on_data_frag(rs.source_prefix, d, rs.timestamp, now, &mut deliver)
                    }
                    Submessage::Heartbeat(h) => {
                        core.on_heartbeat(rs.source_prefix, h, now, &mut deliver)
                    }
                    Submessage::HeartbeatFrag(h) => {
                        core.on_heartbeat_frag(rs.source_prefix, h, now)
                    }
                    Submessage::Gap(g) => core.on_gap(rs.source_prefix, g, now, &mut deliver),
                    _ => {}
                }
                outbox::flush_reader(p, core, now);
                for (publications, source, payload, status, key_hash) in received {
                    self.on_sedp(publications, source, &payload, status, key_hash);
                }
            }
        }
        self.drain_events(p, now)
    }

    fn on_spdp(&mut self, p: &ParticipantShared, source: GuidPrefix, d: &Data<'_>, now: Instant) {
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
                    self.forget_participant(guid.prefix);
                    self.db.on_participant_disposed(guid.prefix);
                } else {
                    tracing::debug!(from = ?source, victim = ?guid, "ignored SPDP dispose of another participant");
                }
            }
            return;
        }
        let data = match SpdpParticipantData::decode(d.payload) {
            Ok(data) => data,
            Err(e) => {
                tracing::debug!(error = %e, "dropped undecodable SPDP sample");
                return;
            }
        };
        if data.guid_prefix == self.prefix {
            return;
        }
        if data.domain_id.is_some_and(|id| id != p.domain_id) {
            return;
        }
        let is_new = !self.participants.contains_key(&data.guid_prefix);
        if is_new && self.participants.len() >= tessera_rtps::discovery::MAX_REMOTE_PARTICIPANTS {
            // Bounded like the database (which counts it); a forged flood cannot grow memory.
            self.db.on_spdp(data, now);
            return;
        }
        let meta: Locators = if data.metatraffic_unicast_locators.is_empty() {
            p.transport.select(&data.metatraffic_multicast_locators)
        } else {
            p.transport.select(&data.metatraffic_unicast_locators)
        };
        let info = ParticipantInfo {
            guid: Guid::new(data.guid_prefix, EntityId::PARTICIPANT),
            vendor: data.vendor_id,
            user_data: data.user_data.clone(),
        };
        let old_meta = self
            .participants
            .insert(data.guid_prefix, (meta, info.clone()))
            .map(|(m, _)| m);
        if is_new {
            self.notify(ParticipantEvent::Discovered(info));
            tracing::debug!(peer = ?data.guid_prefix, "discovered participant");
        }
        // A known participant that moved its metatraffic locators: the SEDP proxies below
        // already exist, and adding them again only gives them the new locators.
        if is_new || old_meta.is_some_and(|m| m != meta) {
            let prefix = data.guid_prefix;
            let eps = data.builtin_endpoints;
            if eps.contains(BuiltinEndpointSet::PUBLICATIONS_DETECTOR) {
                self.sedp_pub_writer.add_reader(
                    Guid::new(prefix, EntityId::SEDP_PUBLICATIONS_READER),
                    meta,
                    true,
                    true,
                    now,
                );
            }
            if eps.contains(BuiltinEndpointSet::SUBSCRIPTIONS_DETECTOR) {
                self.sedp_sub_writer.add_reader(
                    Guid::new(prefix, EntityId::SEDP_SUBSCRIPTIONS_READER),
                    meta,
                    true,
                    true,
                    now,
                );
            }
            if eps.contains(BuiltinEndpointSet::PUBLICATIONS_ANNOUNCER) {
                self.sedp_pub_reader.add_writer(
                    Guid::new(prefix, EntityId::SEDP_PUBLICATIONS_WRITER),
                    meta,
                    true,
                    now,
                );
            }
            if eps.contains(BuiltinEndpointSet::SUBSCRIPTIONS_ANNOUNCER) {
                self.sedp_sub_reader.add_writer(
                    Guid::new(prefix, EntityId::SEDP_SUBSCRIPTIONS_WRITER),
                    meta,
                    true,
                    now,
                );
            }
        }
        if is_new {
            // Answer at once so the peer need not wait for our next periodic announcement.
            self.send_spdp(p, meta.as_slice());
            for core in [&mut self.sedp_pub_writer, &mut self.sedp_sub_writer] {
                outbox::flush_writer(p, core, now);
            }
            for core in [&mut self.sedp_pub_reader, &mut self.sedp_sub_reader] {
                outbox::flush_reader(p, core, now);
            }
        }
        self.db.on_spdp(data, now);
    }

    fn forget_participant(&mut self, prefix: GuidPrefix) {
        if self.participants.remove(&prefix).is_some() {
            self.notify(ParticipantEvent::Lost(Guid::new(
                prefix,
                EntityId::PARTICIPANT,
            )));
            self.sedp_pub_writer
                .remove_reader(Guid::new(prefix, EntityId::SEDP_PUBLICATIONS_READER));
            self.sedp_sub_writer
                .remove_reader(Guid::new(prefix, EntityId::SEDP_SUBSCRIPTIONS_READER));
            self.sedp_pub_reader
                .remove_writer(Guid::new(prefix, EntityId::SEDP_PUBLICATIONS_WRITER));
            self.sedp_sub_reader
                .remove_writer(Guid::new(prefix, EntityId::SEDP_SUBSCRIPTIONS_WRITER));
        }
    }

    fn on_sedp(
        &mut self,
        publications: bool,
        source: GuidPrefix,
        payload: &[u8],
        status: u32,
        key_hash: Option<[u8; 16]>,
    ) {
        if StatusInfo(status).ends_instance() {
            let guid = decode_dispose(BuiltinTopicKind::Endpoint, None, payload)
                .ok()
                .map(|(g, _)| g)
                .or_else(|| key_hash.map(Guid::from_bytes));
            match guid {
                // An endpoint is disposed only by its own participant.
                Some(g) if g.prefix == source => {
                    self.db.on_remote_endpoint_disposed(g);
                }
                Some(g) => {
                    tracing::debug!(from = ?source, victim = ?g, "ignored SEDP dispose of another participant's endpoint");
                }
                None => {}
            }
            return;
        }
        if publications {
            match DiscoveredWriterData::decode(payload) {
                Ok(w) => self.db.on_sedp_writer(w),
                Err(e) => tracing::debug!(error = %e, "dropped undecodable SEDP publication"),
            }
        } else {
            match DiscoveredReaderData::decode(payload) {
                Ok(r) => self.db.on_sedp_reader(r),
                Err(e) => tracing::debug!(error = %e, "dropped undecodable SEDP subscription"),
            }
        }
    }

    /// Turns database events into endpoint actions.
    fn drain_events(&mut self, p: &ParticipantShared, _now: Instant) -> Vec<MatchAction> {
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
        let mut out = Vec::new();
        for ev in events {
            match ev {
                DiscoveryEvent::ParticipantLost { prefix, reason } => {
                    tracing::debug!(peer = ?prefix, ?reason, "participant lost");
                    self.forget_participant(prefix);
                }
                // A re-announced remote (SEDP update, or its participant's default locators
                // moved) goes the same way: `matched` of a remote the endpoint already has only
                // refreshes its locators and counts nothing.
                DiscoveryEvent::Matched { local, remote }
                | DiscoveryEvent::MatchUpdated { local, remote } => {
                    let r = remote_endpoint(&remote, &p.transport, self.allow_multicast);
                    if local.entity_id.is_writer() {
                        out.push(MatchAction::MatchWriter { local, remote: r });
                    } else {
                        out.push(MatchAction::MatchReader { local, remote: r });
                    }
                }
                DiscoveryEvent::Unmatched { local, remote } => {
                    if local.entity_id.is_writer() {
                        out.push(MatchAction::UnmatchWriter { local, remote });
                    } else {
                        let lost = expired.contains(&remote.prefix);
                        out.push(MatchAction::UnmatchReader {
                            local,
                            remote,
                            lost,
                        });
                    }
                }
                DiscoveryEvent::IncompatibleQos {
                    local, policies, ..
                } => {
                    let ids = policies.iter().map(|p| p.id()).collect();
                    if local.entity_id.is_writer() {
                        out.push(MatchAction::WriterIncompatible {
                            local,
                            policies: ids,
                        });
                    } else {
                        out.push(MatchAction::ReaderIncompatible {
                            local,
                            policies: ids,
                        });
                    }
                }
                _ => {}
            }
        }
        out
    }

    /// Registers a local writer: announces it over SEDP and matches it with known readers.
    pub fn add_local_writer<T: TopicType>(
        &mut self,
        p: &ParticipantShared,
        guid: Guid,
        topic: &Topic<T>,
        pub_qos: &PublisherQos,
        qos: &DataWriterQos,
        now: Instant,
    ) -> Vec<MatchAction> {
        let mut data = DiscoveredWriterData::new(guid, topic.name(), topic.type_name())
            .with_qos(WriterSideQos::new(topic.qos(), pub_qos, qos));
        data.unicast_locators = p.transport.default_unicast();
        let payload = data.to_payload();
        let _ = self.sedp_pub_writer.write(
            payload.into(),
            Some(guid.to_bytes()),
            0,
            false,
            Some(now_ts()),
            now,
        );
        outbox::flush_writer(p, &mut self.sedp_pub_writer, now);
        let mut actions = Vec::new();
        if !self.ignore_local {
            for r in self.local_readers.values() {
                self.match_local(&data, r, &mut actions);
            }
            self.local_writers.insert(guid, data.clone());
        }
        self.db.add_local_writer(data);
        actions.extend(self.drain_events(p, now));
        actions
    }

    /// Registers a local reader: announces it over SEDP and matches it with known writers.
    pub fn add_local_reader<T: TopicType>(
        &mut self,
        p: &ParticipantShared,
        guid: Guid,
        topic: &Topic<T>,
        sub_qos: &SubscriberQos,
        qos: &DataReaderQos,
        now: Instant,
    ) -> Vec<MatchAction> {
        let mut data = DiscoveredReaderData::new(guid, topic.name(), topic.type_name())
            .with_qos(ReaderSideQos::new(topic.qos(), sub_qos, qos));
        data.unicast_locators = p.transport.default_unicast();
        // As Cyclone's readers do: writers that share our group send each sample once to it.
        data.multicast_locators.clone_from(&self.reader_multicast);
        let payload = data.to_payload();
        let _ = self.sedp_sub_writer.write(
            payload.into(),
            Some(guid.to_bytes()),
            0,
            false,
            Some(now_ts()),
            now,
        );
        outbox::flush_writer(p, &mut self.sedp_sub_writer, now);
        let mut actions = Vec::new();
        if !self.ignore_local {
            for w in self.local_writers.values() {
                self.match_local(w, &data, &mut actions);
            }
            self.local_readers.insert(guid, data.clone());
        }
        self.db.add_local_reader(data);
        actions.extend(self.drain_events(p, now));
        actions
    }

    /// Matches a writer and a reader of this participant with each other; they exchange data
    /// over the participant's own unicast locator, like any other pair.
    fn match_local(
        &self,
        w: &DiscoveredWriterData,
        r: &DiscoveredReaderData,
        out: &mut Vec<MatchAction>,
    ) {
        match evaluate_match(w, r) {
            MatchOutcome::Match => {
                let reliable = r.qos.reliability.kind == ReliabilityKind::Reliable;
                let as_reader = RemoteEndpoint {
                    guid: r.guid,
                    reliable,
                    durable: r.qos.durability != Durability::Volatile,
                    locators: self.own_locators,
                    multicast: Locators::new(),
                };
                // Matching guarantees the writer offers at least what the reader requests; the
                // pair's reliability is the reader's.
                let as_writer = RemoteEndpoint {
                    guid: w.guid,
                    reliable,
                    durable: w.qos.durability != Durability::Volatile,
                    locators: self.own_locators,
                    multicast: Locators::new(),
                };
                out.push(MatchAction::MatchWriter {
                    local: w.guid,
                    remote: as_reader,
                });
                out.push(MatchAction::MatchReader {
                    local: r.guid,
                    remote: as_writer,
                });
            }
            MatchOutcome::Incompatible(policies) => {
                let ids: Vec<u32> = policies.iter().map(|p| p.id()).collect();
                out.push(MatchAction::WriterIncompatible {
                    local: w.guid,
                    policies: ids.clone(),
                });
                out.push(MatchAction::ReaderIncompatible {
                    local: r.guid,
                    policies: ids,
                });
            }
            _ => {}
        }
    }

    /// Unannounces a deleted local endpoint and ends its local matches.
    pub fn remove_local_endpoint(
        &mut self,
        p: &ParticipantShared,
        guid: Guid,
        now: Instant,
    ) -> Vec<MatchAction> {
        let mut actions = Vec::new();
        if guid.entity_id.is_writer() {
            if let Some(w) = self.local_writers.remove(&guid) {
                for r in self.local_readers.values() {
                    if evaluate_match(&w, r) == MatchOutcome::Match {
                        actions.push(MatchAction::UnmatchReader {
                            local: r.guid,
                            remote: guid,
                            lost: false,
                        });
                    }
                }
            }
        } else if let Some(r) = self.local_readers.remove(&guid) {
            for w in self.local_writers.values() {
                if evaluate_match(w, &r) == MatchOutcome::Match {
                    actions.push(MatchAction::UnmatchWriter {
                        local: w.guid,
                        remote: guid,
                    });
                }
            }
        }
        let mut payload = Vec::new();
        encode_dispose_key_payload(BuiltinTopicKind::Endpoint, guid, &mut payload);
        let core = if guid.entity_id.is_writer() {
            &mut self.sedp_pub_writer
        } else {
            &mut self.sedp_sub_writer
        };
        let _ = core.write(
            payload.into(),
            Some(guid.to_bytes()),
            3,
            true,
            Some(now_ts()),
            now,
        );
        outbox::flush_writer(p, core, now);
        if guid.entity_id.is_writer() {
            self.db.remove_local_writer(guid);
        } else {
            self.db.remove_local_reader(guid);
        }
        actions.extend(self.drain_events(p, now));
        actions
    }
}

fn now_ts() -> Timestamp {
    Timestamp::from_nanos(crate::publication::now_nanos())
}

/// What a local endpoint needs to know of a matched remote one.
fn remote_endpoint(
    info: &RemoteEndpointInfo,
    transport: &Transports,
    allow: AllowMulticast,
) -> RemoteEndpoint {
    let locators = transport.select(info.unicast_locators());
    // The database already replaced an endpoint's empty locator lists by its participant's
    // defaults. Only readers' multicast locators matter (we never send to a writer's).
    let multicast = match info {
        RemoteEndpointInfo::Reader(r) if allow.for_data() => {
            transport.select_multicast(&locators, &r.multicast_locators)
        }
        _ => Locators::new(),
    };
    let (reliable, durable) = match info {
        RemoteEndpointInfo::Writer(w) => (
            w.qos.reliability.kind == ReliabilityKind::Reliable,
            w.qos.durability != Durability::Volatile,
        ),
        RemoteEndpointInfo::Reader(r) => (
            r.qos.reliability.kind == ReliabilityKind::Reliable,
            r.qos.durability != Durability::Volatile,
        ),
    };
    RemoteEndpoint {
        guid: info.guid(),
        reliable,
        durable,
        locators,
        multicast,
    }
}
