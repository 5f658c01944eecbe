//! The TypeLookup service (DDS-XTypes 1.3 §7.6.3.3). Server side: a built-in request reader
//! and reply writer that answer `getTypes` and `getTypeDependencies` with the TypeObjects of
//! the participant's own types, by hash. Client side: a request writer and reply reader that
//! ask peers for the minimal TypeObjects of their types ([`request`](TypeLookupService::request)),
//! keep those whose hash checks out, and [`resolve`](TypeLookupService::resolve) identifiers
//! for assignability.
//!
//! Peers (Cyclone DDS, its `cyclonedds typeof`/`subscribe` tools) read our endpoints'
//! TypeInformation in SEDP and ask here for the objects behind the hashes before they match
//! or print a type. All four endpoints are keyless, reliable and volatile; they are matched
//! with a peer's counterparts when its SPDP announces them (BuiltinEndpointSet bits 12–15). A reply goes to every matched reply reader, as Cyclone's does: requesters
//! recognize theirs by the related request identity, or by the hashes.
//!
//! Sans-IO like the discovery engines: submessages and `now` in, datagrams out.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use std::time::Instant;

use super::builtin::{feed_reader, reader_input_writer, wall_clock};
use super::BuiltinEndpointSet;
use crate::reader::{ReaderConfig, ReaderCore};
use crate::types::{EntityId, Guid, GuidPrefix, Locators, Timestamp};
use crate::wire::{ReceivedSubmessage, Submessage};
use crate::writer::{HistoryKind, Transmit, WriterConfig, WriterCore};
use crate::xtypes::lookup::{Call, Reply, Request, Return, SampleIdentity};
use crate::xtypes::{TypeBundle, TypeIdentifier, TypeIdentifierWithSize, TypeObject, XTypesError};

/// Replies kept for retransmission (keep-last, the service is volatile).
const REPLY_HISTORY: u32 = 64;
/// Most distinct hashed types served (a participant registers a handful), and most peer types
/// kept.
const MAX_TYPES: usize = 4096;
/// An identifier is asked for again after this long without an answer.
const REQUEST_RETRY: Duration = Duration::from_secs(1);

/// What the service did, for logs and tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TypeLookupCounters {
    /// Requests answered.
    pub requests: u64,
    /// Type identifiers asked for that this participant does not know (left out of replies).
    pub unknown_types: u64,
    /// Requests that did not decode, or asked an unknown operation (dropped).
    pub rejected: u64,
    /// Requests we sent.
    pub requests_sent: u64,
    /// Peer TypeObjects received whose hash matched the identifier (kept).
    pub types_resolved: u64,
    /// Replies that did not decode, and received objects that did not hash to their
    /// identifier (dropped).
    pub bad_replies: u64,
}

/// One type's object and dependencies, as served.
#[derive(Debug)]
struct Served {
    object: Arc<Vec<u8>>,
    dependencies: Vec<TypeIdentifierWithSize>,
}

/// The server side of the TypeLookup service (see the module docs).
#[derive(Debug)]
pub struct TypeLookupService {
    prefix: GuidPrefix,
    request_reader: ReaderCore,
    reply_writer: WriterCore,
    request_writer: WriterCore,
    reply_reader: ReaderCore,
    /// Serialized TypeObjects by the bytes of their identifier.
    types: HashMap<Vec<u8>, Served>,
    /// Peers' TypeObjects, verified, by the bytes of their identifier.
    remote: HashMap<Vec<u8>, TypeObject>,
    /// Peers' TypeObjects of kinds Tessera does not model (unions, maps...), with why.
    unsupported: HashMap<Vec<u8>, XTypesError>,
    /// Identifiers asked for, and when.
    requested: HashMap<Vec<u8>, Instant>,
    request_seq: i64,
    /// Something was resolved since [`take_resolved`](Self::take_resolved).
    resolved: bool,
    wall_origin: (Instant, i64),
    counters: TypeLookupCounters,
}

impl TypeLookupService {
    /// The service of participant `prefix`; `wall_clock_nanos` is the wall-clock time at `now`
    /// (source timestamps derive from it).
    pub fn new(prefix: GuidPrefix, wall_clock_nanos: i64, now: Instant) -> Self {
        let mut wc = WriterConfig::new(Guid::new(prefix, EntityId::TL_SVC_REPLY_WRITER));
        wc.reliable = true;
        wc.transient_local = false;
        wc.history = HistoryKind::KeepLast(REPLY_HISTORY);
        let rc = ReaderConfig::new(Guid::new(prefix, EntityId::TL_SVC_REQUEST_READER));
        let mut qc = WriterConfig::new(Guid::new(prefix, EntityId::TL_SVC_REQUEST_WRITER));
        qc.reliable = true;
        qc.transient_local = false;
        qc.history = HistoryKind::KeepLast(REPLY_HISTORY);
        let pc = ReaderConfig::new(Guid::new(prefix, EntityId::TL_SVC_REPLY_READER));
        TypeLookupService {
            prefix,
            request_reader: ReaderCore::new(rc),
            reply_writer: WriterCore::new(wc),
            request_writer: WriterCore::new(qc),
            reply_reader: ReaderCore::new(pc),
            types: HashMap::new(),
            remote: HashMap::new(),
            unsupported: HashMap::new(),
            requested: HashMap::new(),
            request_seq: 0,
            resolved: false,
            wall_origin: (now, wall_clock_nanos),
            counters: TypeLookupCounters::default(),
        }
    }

    /// What the service did so far.
    pub fn counters(&self) -> TypeLookupCounters {
        self.counters
    }

    /// Serves the TypeObjects of `bundle` (the type and everything it depends on).
    pub fn register(&mut self, bundle: &TypeBundle) {
        for (key, (id, object)) in &bundle.objects {
            if self.types.len() >= MAX_TYPES && !self.types.contains_key(key) {
                return;
            }
            self.types.entry(key.clone()).or_insert_with(|| Served {
                object: object.clone(),
                dependencies: bundle.dependencies_of(id),
            });
        }
    }

    /// Whether the service knows the object of this identifier (its bytes).
    pub fn knows(&self, id: &crate::xtypes::TypeIdentifier) -> bool {
        self.types.contains_key(&id.to_bytes())
    }

    /// Whether submessages of or for the built-in endpoint `entity` (a writer id) are the
    /// service's: a peer's request writer, or our reply writer.
    pub fn owns(entity: EntityId) -> bool {
        entity == EntityId::TL_SVC_REQUEST_WRITER || entity == EntityId::TL_SVC_REPLY_WRITER
    }

    /// A peer announced itself (SPDP): match its request writer and reply reader.
    pub fn add_peer(
        &mut self,
        prefix: GuidPrefix,
        endpoints: BuiltinEndpointSet,
        meta: Locators,
        now: Instant,
    ) {
        if endpoints.contains(BuiltinEndpointSet::TYPE_LOOKUP_REQUEST_WRITER) {
            let g = Guid::new(prefix, EntityId::TL_SVC_REQUEST_WRITER);
            self.request_reader.add_writer(g, meta, true, now);
        }
        if endpoints.contains(BuiltinEndpointSet::TYPE_LOOKUP_REPLY_READER) {
            let g = Guid::new(prefix, EntityId::TL_SVC_REPLY_READER);
            self.reply_writer.add_reader(g, meta, true, false, now);
        }
        if endpoints.contains(BuiltinEndpointSet::TYPE_LOOKUP_REQUEST_READER) {
            let g = Guid::new(prefix, EntityId::TL_SVC_REQUEST_READER);
            self.request_writer.add_reader(g, meta, true, false, now);
        }
        if endpoints.contains(BuiltinEndpointSet::TYPE_LOOKUP_REPLY_WRITER) {
            let g = Guid::new(prefix, EntityId::TL_SVC_REPLY_WRITER);
            self.reply_reader.add_writer(g, meta, true, now);
        }
    }

    /// A peer is gone.
    pub fn remove_peer(&mut self, prefix: GuidPrefix) {
        self.request_reader
            .remove_writer(Guid::new(prefix, EntityId::TL_SVC_REQUEST_WRITER));
        self.reply_writer
            .remove_reader(Guid::new(prefix, EntityId::TL_SVC_REPLY_READER));
        self.request_writer
            .remove_reader(Guid::new(prefix, EntityId::TL_SVC_REQUEST_READER));
        self.reply_reader
            .remove_writer(Guid::new(prefix, EntityId::TL_SVC_REPLY_WRITER));
    }

    /// A submessage for an entity the service [`owns`](Self::owns).
    pub fn handle_submessage(&mut self, rs: &ReceivedSubmessage<'_>, now: Instant) {
        let src = rs.source_prefix;
        match &rs.submessage {
            Submessage::AckNack(a) => {
                match a.writer_id {
                    EntityId::TL_SVC_REPLY_WRITER => self.reply_writer.on_acknack(src, a, now),
                    EntityId::TL_SVC_REQUEST_WRITER => self.request_writer.on_acknack(src, a, now),
                    _ => false,
                };
            }
            Submessage::NackFrag(n) => match n.writer_id {
                EntityId::TL_SVC_REPLY_WRITER => self.reply_writer.on_nack_frag(src, n, now),
                EntityId::TL_SVC_REQUEST_WRITER => self.request_writer.on_nack_frag(src, n, now),
                _ => {}
            },
            sm => match reader_input_writer(sm) {
                Some(EntityId::TL_SVC_REQUEST_WRITER) => {
                    for s in feed_reader(&mut self.request_reader, rs, now) {
                        if s.status == 0 {
                            self.on_request(&s.payload, now);
                        }
                    }
                }
                Some(EntityId::TL_SVC_REPLY_WRITER) => {
                    for s in feed_reader(&mut self.reply_reader, rs, now) {
                        if s.status == 0 {
                            self.on_reply(&s.payload);
                        }
                    }
                }
                _ => {}
            },
        }
    }

    /// Asks every matched peer for the minimal TypeObjects of `ids` that are neither known
    /// nor asked for in the last second. Returns whether a request went out.
    pub fn request(&mut self, ids: &[TypeIdentifier], now: Instant) -> bool {
        let mut ask = Vec::new();
        for id in ids {
            let key = id.to_bytes();
            let recent = self
                .requested
                .get(&key)
                .is_some_and(|t| now.saturating_duration_since(*t) < REQUEST_RETRY);
            if id.is_hash() && !recent && self.resolve(id).is_none() && !ask.contains(id) {
                ask.push(id.clone());
            }
        }
        if ask.is_empty() {
            return false;
        }
        if self.requested.len() >= MAX_TYPES {
            self.requested.clear();
        }
        for id in &ask {
            self.requested.insert(id.to_bytes(), now);
        }
        self.request_seq += 1;
        let writer = Guid::new(self.prefix, EntityId::TL_SVC_REQUEST_WRITER);
        let req = Request {
            id: SampleIdentity {
                writer,
                seq: self.request_seq,
            },
            instance_name: format!("dds.builtin.TOS.{}", hex(&writer.to_bytes())),
            call: Call::GetTypes(ask),
        };
        let ts = self.wall(now);
        let _ =
            self.request_writer
                .write(Arc::new(req.to_payload()), None, 0, false, Some(ts), now);
        self.counters.requests_sent += 1;
        true
    }

    /// A reply from a peer: the objects whose canonical form hashes to their identifier are
    /// kept (a peer cannot make us believe a type is another).
    fn on_reply(&mut self, payload: &[u8]) {
        let Ok(reply) = Reply::decode(payload) else {
            self.counters.bad_replies += 1;
            return;
        };
        let Return::Types {
            types, unsupported, ..
        } = reply.result
        else {
            return;
        };
        for (id, e) in unsupported {
            // Kept so that a tool asking for this type learns why it is not there.
            if self.unsupported.len() < MAX_TYPES {
                self.unsupported.insert(id.to_bytes(), e);
            }
            self.counters.bad_replies += 1;
        }
        for (id, bytes) in types {
            let key = id.to_bytes();
            if self.remote.contains_key(&key) || self.types.contains_key(&key) {
                continue;
            }
            match TypeObject::from_bytes(&bytes) {
                Ok(obj) if obj.identifier() == id && self.remote.len() < MAX_TYPES => {
                    self.remote.insert(key, obj);
                    self.counters.types_resolved += 1;
                    self.resolved = true;
                }
                _ => self.counters.bad_replies += 1,
            }
        }
    }

    /// Why a peer's TypeObject of `id` was received but not kept: a kind Tessera does not model
    /// (the error names it). `None` if it was not received, or was kept.
    pub fn unsupported(&self, id: &TypeIdentifier) -> Option<XTypesError> {
        self.unsupported.get(&id.to_bytes()).copied()
    }

    /// The TypeObject of a hashed identifier: one of ours, or a peer's received and verified.
    pub fn resolve(&self, id: &TypeIdentifier) -> Option<TypeObject> {
        let key = id.to_bytes();
        if let Some(o) = self.remote.get(&key) {
            return Some(o.clone());
        }
        self.types
            .get(&key)
            .and_then(|s| TypeObject::from_bytes(&s.object).ok())
    }

    /// Whether a peer's type was resolved since the last call (then pending matches are worth
    /// deciding again).
    pub fn take_resolved(&mut self) -> bool {
        std::mem::take(&mut self.resolved)
    }

    fn on_request(&mut self, payload: &[u8], now: Instant) {
        let req = match Request::decode(payload) {
            Ok(r) => r,
            Err(_) => {
                self.counters.rejected += 1;
                return;
            }
        };
        let result = match req.call {
            Call::GetTypes(ids) => {
                let mut types = Vec::new();
                for id in ids {
                    match self.types.get(&id.to_bytes()) {
                        Some(s) => types.push((id, s.object.clone())),
                        None => self.counters.unknown_types += 1,
                    }
                }
                Return::Types {
                    types,
                    complete_to_minimal: Vec::new(),
                    unsupported: Vec::new(),
                }
            }
            Call::GetTypeDependencies { type_ids, .. } => {
                // Everything at once: no continuation point.
                let mut deps: Vec<TypeIdentifierWithSize> = Vec::new();
                for id in type_ids {
                    match self.types.get(&id.to_bytes()) {
                        Some(s) => {
                            for d in &s.dependencies {
                                if !deps.contains(d) {
                                    deps.push(d.clone());
                                }
                            }
                        }
                        None => self.counters.unknown_types += 1,
                    }
                }
                Return::Dependencies {
                    dependent_typeids: deps,
                    continuation_point: Vec::new(),
                }
            }
            Call::Unknown(_) => {
                self.counters.rejected += 1;
                return;
            }
        };
        self.counters.requests += 1;
        let reply = Reply {
            related: req.id,
            remote_ex: 0,
            result,
        };
        let ts = self.wall(now);
        let _ =
            self.reply_writer
                .write(Arc::new(reply.to_payload()), None, 0, false, Some(ts), now);
    }

    fn wall(&self, now: Instant) -> Timestamp {
        wall_clock(self.wall_origin, now)
    }

    /// Heartbeats, repairs and acknowledgments due at `now`.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.reply_writer.handle_timeout(now);
        self.request_reader.handle_timeout(now);
        self.request_writer.handle_timeout(now);
        self.reply_reader.handle_timeout(now);
    }

    /// When [`handle_timeout`](Self::handle_timeout) next has work.
    pub fn poll_timeout(&self) -> Option<Instant> {
        [
            self.reply_writer.poll_timeout(),
            self.request_reader.poll_timeout(),
            self.request_writer.poll_timeout(),
            self.reply_reader.poll_timeout(),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// The next datagram to send, if any (see `DiscoveryEngine::poll_transmit`).
    pub fn poll_transmit(&mut self, now: Instant, out: &mut Transmit) -> bool {
        self.reply_writer.poll_transmit_into(now, out)
            || self.request_reader.poll_transmit_into(now, out)
            || self.request_writer.poll_transmit_into(now, out)
            || self.reply_reader.poll_transmit_into(now, out)
    }

    /// The participant this service belongs to.
    pub fn prefix(&self) -> GuidPrefix {
        self.prefix
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
