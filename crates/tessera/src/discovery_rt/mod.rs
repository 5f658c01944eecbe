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

mod engine;
mod local;
mod mode;
mod remote;
mod setup;
#[cfg(test)]
mod tests;
mod types;

pub use mode::{DiscoveryMode, DiscoveryServer};

use crate::bounds::EventFanout;
use crate::builtin::{BuiltinNotify, Discovered, Ignore};
use crate::endpoint::RemoteEndpoint;
#[cfg(doc)]
use crate::outbox;
use crate::transport::{AllowMulticast, Transports};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;
#[cfg(doc)]
use tessera_rtps::discovery::SimpleDiscovery;
use tessera_rtps::discovery::{
    DiscoveryEngine, LocalMatcher, RemoteEndpointInfo, TypeLookupService,
};
use tessera_rtps::qos::TypeConsistencyEnforcement;
use tessera_rtps::types::{Guid, GuidPrefix, Locator, Locators};
use tessera_rtps::xtypes::TypeInformation;

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
    /// Remote announcements, ignored entities and the built-in readers.
    pub fn discovered_mut(&mut self) -> &mut Discovered {
        &mut self.seen
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

    /// Every remote writer and reader discovery knows, matched or not (for bridges and node
    /// services, which forward whatever topics appear).
    pub fn remote_endpoints(&self) -> Vec<RemoteEndpointInfo> {
        self.engine.remote_endpoints()
    }

    /// The type name and TypeInformation of each remote writer and reader on `topic`, writers
    /// first (`DomainParticipant::discover_type`).
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
}
