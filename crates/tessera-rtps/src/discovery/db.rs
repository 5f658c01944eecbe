//! The sans-IO discovery database: who is out there, and which endpoints match.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;
use std::time::Instant;

use super::{DiscoveredReaderData, DiscoveredWriterData, SpdpParticipantData};
use crate::qos::{check_compatibility, partitions_match, QosPolicyId};
use crate::types::{EntityId, Guid, GuidPrefix, Locator};

/// A remote endpoint as handed to the runtime on a match: its announcement with the locators
/// filled in (an endpoint that announces no locators of its own is reached at its
/// participant's default locators).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RemoteEndpointInfo {
    /// A remote writer (matched with a local reader).
    Writer(Arc<DiscoveredWriterData>),
    /// A remote reader (matched with a local writer).
    Reader(Arc<DiscoveredReaderData>),
}

impl RemoteEndpointInfo {
    /// The remote endpoint's GUID.
    pub fn guid(&self) -> Guid {
        match self {
            RemoteEndpointInfo::Writer(w) => w.guid,
            RemoteEndpointInfo::Reader(r) => r.guid,
        }
    }

    /// Topic name.
    pub fn topic_name(&self) -> &str {
        match self {
            RemoteEndpointInfo::Writer(w) => &w.topic_name,
            RemoteEndpointInfo::Reader(r) => &r.topic_name,
        }
    }

    /// Unicast locators to reach it.
    pub fn unicast_locators(&self) -> &[Locator] {
        match self {
            RemoteEndpointInfo::Writer(w) => &w.unicast_locators,
            RemoteEndpointInfo::Reader(r) => &r.unicast_locators,
        }
    }

    /// Multicast locators to reach it.
    pub fn multicast_locators(&self) -> &[Locator] {
        match self {
            RemoteEndpointInfo::Writer(w) => &w.multicast_locators,
            RemoteEndpointInfo::Reader(r) => &r.multicast_locators,
        }
    }

    /// The writer data, if this is a writer.
    pub fn as_writer(&self) -> Option<&Arc<DiscoveredWriterData>> {
        match self {
            RemoteEndpointInfo::Writer(w) => Some(w),
            RemoteEndpointInfo::Reader(_) => None,
        }
    }

    /// The reader data, if this is a reader.
    pub fn as_reader(&self) -> Option<&Arc<DiscoveredReaderData>> {
        match self {
            RemoteEndpointInfo::Reader(r) => Some(r),
            RemoteEndpointInfo::Writer(_) => None,
        }
    }
}

/// Why a remote participant went away.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LostReason {
    /// Nothing was heard from it for its lease duration.
    LeaseExpired,
    /// It announced its deletion (SPDP dispose/unregister).
    Disposed,
}

/// What the discovery database tells its driver.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DiscoveryEvent {
    /// A new remote participant: the driver should match its built-in endpoints (and, for SPDP,
    /// answer with our own announcement).
    ParticipantDiscovered(Arc<SpdpParticipantData>),
    /// A known participant re-announced itself with different data.
    ParticipantUpdated(Arc<SpdpParticipantData>),
    /// A remote participant is gone; its endpoints have been unmatched and removed before this
    /// event.
    ParticipantLost {
        /// Its prefix.
        prefix: GuidPrefix,
        /// Lease expiry or dispose.
        reason: LostReason,
    },
    /// A remote endpoint was announced for the first time.
    RemoteEndpointDiscovered(RemoteEndpointInfo),
    /// A known remote endpoint re-announced itself with different data (QoS, locators).
    RemoteEndpointUpdated(RemoteEndpointInfo),
    /// A remote endpoint is gone (disposed, or its participant lost).
    RemoteEndpointLost {
        /// Its GUID.
        guid: Guid,
    },
    /// A local endpoint now matches a remote one.
    Matched {
        /// The local writer or reader.
        local: Guid,
        /// The remote reader or writer.
        remote: RemoteEndpointInfo,
    },
    /// A matched remote endpoint re-announced itself with different data (e.g. locators) and
    /// still matches.
    MatchUpdated {
        /// The local writer or reader.
        local: Guid,
        /// The remote's new data.
        remote: RemoteEndpointInfo,
    },
    /// A match ended.
    Unmatched {
        /// The local writer or reader.
        local: Guid,
        /// The remote reader or writer.
        remote: Guid,
    },
    /// A local and a remote endpoint on the same topic have incompatible QoS (reported once per
    /// pair and set of policies).
    IncompatibleQos {
        /// The local writer or reader.
        local: Guid,
        /// The remote reader or writer.
        remote: Guid,
        /// Every incompatible policy.
        policies: Vec<QosPolicyId>,
    },
}

/// Why a writer and a reader on the same topic do not match although their QoS is compatible.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoMatchReason {
    /// No partition in common.
    Partition,
    /// Different type names.
    TypeName,
    /// One entity kind says keyed, the other keyless.
    KeyKind,
    /// The types' XTypes identifiers differ where the reader's TYPE_CONSISTENCY_ENFORCEMENT
    /// says they must be equal (DISALLOW_TYPE_COERCION), or a side sent no type information
    /// and the reader forces type validation.
    TypeMismatch,
}

/// The result of comparing a writer with a reader.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MatchOutcome {
    /// Different topics: no relation at all.
    OtherTopic,
    /// Same topic, incompatible QoS (reported to the application).
    Incompatible(Vec<QosPolicyId>),
    /// Same topic and compatible QoS, but no match (not reported as an error).
    NoMatch(NoMatchReason),
    /// They match.
    Match,
}

/// Compares a writer and a reader as Cyclone DDS does: topic name, then QoS compatibility
/// (every policy), then partitions, then the type (XTypes identifiers or type name, see
/// `type_mismatch`), then the keyed/keyless kind of the user entity ids when both are known.
pub fn evaluate_match(w: &DiscoveredWriterData, r: &DiscoveredReaderData) -> MatchOutcome {
    if w.topic_name != r.topic_name {
        return MatchOutcome::OtherTopic;
    }
    if let Err(policies) = check_compatibility(&w.qos, &r.qos) {
        return MatchOutcome::Incompatible(policies);
    }
    if !partitions_match(&w.qos.partition.0, &r.qos.partition.0) {
        return MatchOutcome::NoMatch(NoMatchReason::Partition);
    }
    if let Some(reason) = type_mismatch(w, r) {
        return MatchOutcome::NoMatch(reason);
    }
    if let (Some(a), Some(b)) = (keyed(w.guid.entity_id), keyed(r.guid.entity_id)) {
        if a != b {
            return MatchOutcome::NoMatch(NoMatchReason::KeyKind);
        }
    }
    MatchOutcome::Match
}

/// The type check, as Cyclone DDS does it: when both sides announce TypeInformation, equal
/// minimal identifiers match whatever the type names, and DISALLOW_TYPE_COERCION requires
/// them equal; otherwise the type names must be equal (and a reader that forces type
/// validation refuses a side without type information). Assignability of different
/// identifiers would need the peer's TypeObjects, which Tessera does not request yet: such
/// types are compared by name.
fn type_mismatch(w: &DiscoveredWriterData, r: &DiscoveredReaderData) -> Option<NoMatchReason> {
    use crate::qos::TypeConsistencyKind::DisallowTypeCoercion;
    let tce = &r.qos.type_consistency;
    match (&w.type_information, &r.type_information) {
        (Some(wi), Some(ri)) => {
            let (wid, rid) = (
                &wi.minimal.typeid_with_size.type_id,
                &ri.minimal.typeid_with_size.type_id,
            );
            if wid == rid {
                None
            } else if tce.kind == DisallowTypeCoercion {
                Some(NoMatchReason::TypeMismatch)
            } else {
                (w.type_name != r.type_name).then_some(NoMatchReason::TypeName)
            }
        }
        _ if tce.force_type_validation => Some(NoMatchReason::TypeMismatch),
        _ => (w.type_name != r.type_name).then_some(NoMatchReason::TypeName),
    }
}

/// Keyedness of a user-defined entity kind; `None` for built-in or vendor-specific kinds.
fn keyed(e: EntityId) -> Option<bool> {
    match e.kind() {
        0x02 | 0x07 => Some(true),
        0x03 | 0x04 => Some(false),
        _ => None,
    }
}

/// Inputs the database ignored (not errors: normal on a busy network).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DiscoveryStats {
    /// Our own announcements heard back (multicast loopback).
    pub ignored_own: u64,
    /// SPDP from another domain id or domain tag.
    pub ignored_other_domain: u64,
    /// SEDP for a participant we have not discovered (SPDP must come first).
    pub sedp_unknown_participant: u64,
    /// SEDP whose GUID is not of the announced endpoint kind.
    pub sedp_wrong_kind: u64,
    /// New participants refused because [`MAX_REMOTE_PARTICIPANTS`] were known.
    pub participants_over_limit: u64,
    /// New remote endpoints refused because [`MAX_REMOTE_ENDPOINTS`] were known.
    pub endpoints_over_limit: u64,
}

/// At most this many remote participants are tracked; more are refused (and counted) until
/// leases expire, so a flood of forged announcements cannot grow memory without bound.
pub const MAX_REMOTE_PARTICIPANTS: usize = 4096;
/// At most this many remote writers plus readers are tracked.
pub const MAX_REMOTE_ENDPOINTS: usize = 65536;

#[derive(Debug)]
struct Participant {
    data: Arc<SpdpParticipantData>,
    expires: Option<Instant>,
}

#[derive(Debug)]
struct Remote<D> {
    announced: D,
    effective: Arc<D>,
}

const ENTITY_MIN: EntityId = EntityId([0; 4]);
const ENTITY_MAX: EntityId = EntityId([0xff; 4]);
const GUID_MIN: Guid = Guid::new(GuidPrefix([0; 12]), ENTITY_MIN);
const GUID_MAX: Guid = Guid::new(GuidPrefix([0xff; 12]), ENTITY_MAX);

fn prefix_range(p: GuidPrefix) -> std::ops::RangeInclusive<Guid> {
    Guid::new(p, ENTITY_MIN)..=Guid::new(p, ENTITY_MAX)
}

/// Applies the participant's default locators to an endpoint that announced none.
fn fill_locators(uni: &mut Vec<Locator>, multi: &mut Vec<Locator>, p: &SpdpParticipantData) {
    if uni.is_empty() && multi.is_empty() {
        uni.clone_from(&p.default_unicast_locators);
        multi.clone_from(&p.default_multicast_locators);
    }
}

fn effective_writer(d: &DiscoveredWriterData, p: &SpdpParticipantData) -> DiscoveredWriterData {
    let mut e = d.clone();
    fill_locators(&mut e.unicast_locators, &mut e.multicast_locators, p);
    e
}

fn effective_reader(d: &DiscoveredReaderData, p: &SpdpParticipantData) -> DiscoveredReaderData {
    let mut e = d.clone();
    fill_locators(&mut e.unicast_locators, &mut e.multicast_locators, p);
    e
}

/// The sans-IO discovery database.
///
/// Feed it local endpoints and received SPDP/SEDP data, call [`handle_timeout`] by
/// [`poll_timeout`], and drain [`poll_event`]. Everything is deterministic: collections are
/// ordered, and time only enters through the `now` arguments.
///
/// [`handle_timeout`]: DiscoveryDb::handle_timeout
/// [`poll_timeout`]: DiscoveryDb::poll_timeout
/// [`poll_event`]: DiscoveryDb::poll_event
#[derive(Debug)]
pub struct DiscoveryDb {
    local_prefix: GuidPrefix,
    domain_id: u32,
    domain_tag: String,
    local_writers: BTreeMap<Guid, Arc<DiscoveredWriterData>>,
    local_readers: BTreeMap<Guid, Arc<DiscoveredReaderData>>,
    participants: BTreeMap<GuidPrefix, Participant>,
    remote_writers: BTreeMap<Guid, Remote<DiscoveredWriterData>>,
    remote_readers: BTreeMap<Guid, Remote<DiscoveredReaderData>>,
    /// (local, remote) pairs that match.
    matched: BTreeSet<(Guid, Guid)>,
    /// (local, remote) pairs last found incompatible, with the policies reported.
    incompatible: BTreeMap<(Guid, Guid), Vec<QosPolicyId>>,
    events: VecDeque<DiscoveryEvent>,
    stats: DiscoveryStats,
}

impl DiscoveryDb {
    /// An empty database for the participant `local_prefix` in domain `domain_id` (empty
    /// domain tag).
    pub fn new(local_prefix: GuidPrefix, domain_id: u32) -> Self {
        DiscoveryDb {
            local_prefix,
            domain_id,
            domain_tag: String::new(),
            local_writers: BTreeMap::new(),
            local_readers: BTreeMap::new(),
            participants: BTreeMap::new(),
            remote_writers: BTreeMap::new(),
            remote_readers: BTreeMap::new(),
            matched: BTreeSet::new(),
            incompatible: BTreeMap::new(),
            events: VecDeque::new(),
            stats: DiscoveryStats::default(),
        }
    }

    /// Sets the domain tag; participants announcing another tag are ignored.
    #[must_use]
    pub fn with_domain_tag(mut self, tag: impl Into<String>) -> Self {
        self.domain_tag = tag.into();
        self
    }

    /// Our participant's prefix.
    pub fn local_prefix(&self) -> GuidPrefix {
        self.local_prefix
    }

    // ------------------------------------------------------------------ local endpoints

    /// Adds a local writer (its QoS includes its publisher's partition), or replaces one with the
    /// same GUID, and matches it against every known remote reader.
    pub fn add_local_writer(&mut self, data: DiscoveredWriterData) {
        let guid = data.guid;
        self.local_writers.insert(guid, Arc::new(data));
        let remotes: Vec<Guid> = self.remote_readers.keys().copied().collect();
        for r in remotes {
            self.evaluate_pair(guid, r, false);
        }
    }

    /// Adds a local reader (its QoS includes its subscriber's partition), or replaces one with the
    /// same GUID, and matches it against every known remote writer.
    pub fn add_local_reader(&mut self, data: DiscoveredReaderData) {
        let guid = data.guid;
        self.local_readers.insert(guid, Arc::new(data));
        let remotes: Vec<Guid> = self.remote_writers.keys().copied().collect();
        for w in remotes {
            self.evaluate_pair(guid, w, false);
        }
    }

    /// Removes a local writer, unmatching it from everything. Returns whether it existed.
    pub fn remove_local_writer(&mut self, guid: Guid) -> bool {
        let existed = self.local_writers.remove(&guid).is_some();
        if existed {
            self.drop_local(guid);
        }
        existed
    }

    /// Removes a local reader, unmatching it from everything. Returns whether it existed.
    pub fn remove_local_reader(&mut self, guid: Guid) -> bool {
        let existed = self.local_readers.remove(&guid).is_some();
        if existed {
            self.drop_local(guid);
        }
        existed
    }

    fn drop_local(&mut self, local: Guid) {
        let pairs: Vec<(Guid, Guid)> = self
            .matched
            .range((local, GUID_MIN)..=(local, GUID_MAX))
            .copied()
            .collect();
        for pair in pairs {
            self.matched.remove(&pair);
            self.events.push_back(DiscoveryEvent::Unmatched {
                local,
                remote: pair.1,
            });
        }
        self.incompatible.retain(|k, _| k.0 != local);
    }

    // ------------------------------------------------------------------ participants

    /// A received SPDP announcement: discovers a new participant, or renews the lease of (and
    /// updates) a known one. Our own announcements and other domains are ignored.
    pub fn on_spdp(&mut self, data: SpdpParticipantData, now: Instant) {
        let prefix = data.guid_prefix;
        if prefix == self.local_prefix {
            self.stats.ignored_own += 1;
            return;
        }
        if data.domain_id.is_some_and(|d| d != self.domain_id) || data.domain_tag != self.domain_tag
        {
            self.stats.ignored_other_domain += 1;
            return;
        }
        let expires = now.checked_add(data.lease_duration);
        match self.participants.get_mut(&prefix) {
            Some(p) => {
                p.expires = expires;
                if *p.data == data {
                    return;
                }
                let locators_changed = p.data.default_unicast_locators
                    != data.default_unicast_locators
                    || p.data.default_multicast_locators != data.default_multicast_locators;
                p.data = Arc::new(data);
                let d = p.data.clone();
                self.events
                    .push_back(DiscoveryEvent::ParticipantUpdated(d.clone()));
                if locators_changed {
                    self.refresh_endpoints_of(&d);
                }
            }
            None => {
                if self.participants.len() >= MAX_REMOTE_PARTICIPANTS {
                    self.stats.participants_over_limit += 1;
                    return;
                }
                let data = Arc::new(data);
                self.participants.insert(
                    prefix,
                    Participant {
                        data: data.clone(),
                        expires,
                    },
                );
                self.events
                    .push_back(DiscoveryEvent::ParticipantDiscovered(data));
            }
        }
    }

    /// Any traffic from a participant renews its lease.
    pub fn on_participant_alive(&mut self, prefix: GuidPrefix, now: Instant) {
        if let Some(p) = self.participants.get_mut(&prefix) {
            p.expires = now.checked_add(p.data.lease_duration);
        }
    }

    /// A participant announced its deletion (SPDP dispose/unregister). Returns whether it was
    /// known.
    pub fn on_participant_disposed(&mut self, prefix: GuidPrefix) -> bool {
        self.remove_participant(prefix, LostReason::Disposed)
    }

    /// Expires every participant whose lease has passed at `now`, with its endpoints.
    pub fn handle_timeout(&mut self, now: Instant) {
        let expired: Vec<GuidPrefix> = self
            .participants
            .iter()
            .filter(|(_, p)| p.expires.is_some_and(|e| e <= now))
            .map(|(k, _)| *k)
            .collect();
        for p in expired {
            self.remove_participant(p, LostReason::LeaseExpired);
        }
    }

    /// When [`handle_timeout`](Self::handle_timeout) next has work: the earliest lease expiry.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.participants.values().filter_map(|p| p.expires).min()
    }

    fn remove_participant(&mut self, prefix: GuidPrefix, reason: LostReason) -> bool {
        if self.participants.remove(&prefix).is_none() {
            return false;
        }
        let writers: Vec<Guid> = self
            .remote_writers
            .range(prefix_range(prefix))
            .map(|(g, _)| *g)
            .collect();
        for g in writers {
            self.remove_remote_writer(g);
        }
        let readers: Vec<Guid> = self
            .remote_readers
            .range(prefix_range(prefix))
            .map(|(g, _)| *g)
            .collect();
        for g in readers {
            self.remove_remote_reader(g);
        }
        self.events
            .push_back(DiscoveryEvent::ParticipantLost { prefix, reason });
        true
    }

    /// Recomputes the effective locators of a participant's endpoints after its default
    /// locators changed, telling the driver about matches whose locators moved.
    fn refresh_endpoints_of(&mut self, p: &SpdpParticipantData) {
        let range = prefix_range(p.guid_prefix);
        let mut changed_writers = Vec::new();
        for (g, e) in self.remote_writers.range_mut(range.clone()) {
            let eff = effective_writer(&e.announced, p);
            if eff != *e.effective {
                e.effective = Arc::new(eff);
                changed_writers.push(*g);
            }
        }
        let mut changed_readers = Vec::new();
        for (g, e) in self.remote_readers.range_mut(range) {
            let eff = effective_reader(&e.announced, p);
            if eff != *e.effective {
                e.effective = Arc::new(eff);
                changed_readers.push(*g);
            }
        }
        let locals: Vec<Guid> = self.local_readers.keys().copied().collect();
        for w in changed_writers {
            for l in &locals {
                self.evaluate_pair(*l, w, true);
            }
        }
        let locals: Vec<Guid> = self.local_writers.keys().copied().collect();
        for r in changed_readers {
            for l in &locals {
                self.evaluate_pair(*l, r, true);
            }
        }
    }

    // ------------------------------------------------------------------ remote endpoints

    /// A received SEDP publication. Ignored (and counted) if its participant is unknown.
    pub fn on_sedp_writer(&mut self, data: DiscoveredWriterData) {
        let guid = data.guid;
        let Some(eff) = self.admit_remote(guid, guid.entity_id.is_writer()) else {
            return;
        };
        let effective = Arc::new(effective_writer(&data, &eff));
        let updated = match self.remote_writers.get_mut(&guid) {
            Some(e) if e.announced == data => return,
            Some(e) => {
                e.announced = data;
                e.effective = effective.clone();
                self.events.push_back(DiscoveryEvent::RemoteEndpointUpdated(
                    RemoteEndpointInfo::Writer(effective),
                ));
                true
            }
            None => {
                if self.remote_writers.len() + self.remote_readers.len() >= MAX_REMOTE_ENDPOINTS {
                    self.stats.endpoints_over_limit += 1;
                    return;
                }
                self.remote_writers.insert(
                    guid,
                    Remote {
                        announced: data,
                        effective: effective.clone(),
                    },
                );
                self.events
                    .push_back(DiscoveryEvent::RemoteEndpointDiscovered(
                        RemoteEndpointInfo::Writer(effective),
                    ));
                false
            }
        };
        let locals: Vec<Guid> = self.local_readers.keys().copied().collect();
        for l in locals {
            self.evaluate_pair(l, guid, updated);
        }
    }

    /// A received SEDP subscription. Ignored (and counted) if its participant is unknown.
    pub fn on_sedp_reader(&mut self, data: DiscoveredReaderData) {
        let guid = data.guid;
        let Some(eff) = self.admit_remote(guid, guid.entity_id.is_reader()) else {
            return;
        };
        let effective = Arc::new(effective_reader(&data, &eff));
        let updated = match self.remote_readers.get_mut(&guid) {
            Some(e) if e.announced == data => return,
            Some(e) => {
                e.announced = data;
                e.effective = effective.clone();
                self.events.push_back(DiscoveryEvent::RemoteEndpointUpdated(
                    RemoteEndpointInfo::Reader(effective),
                ));
                true
            }
            None => {
                if self.remote_writers.len() + self.remote_readers.len() >= MAX_REMOTE_ENDPOINTS {
                    self.stats.endpoints_over_limit += 1;
                    return;
                }
                self.remote_readers.insert(
                    guid,
                    Remote {
                        announced: data,
                        effective: effective.clone(),
                    },
                );
                self.events
                    .push_back(DiscoveryEvent::RemoteEndpointDiscovered(
                        RemoteEndpointInfo::Reader(effective),
                    ));
                false
            }
        };
        let locals: Vec<Guid> = self.local_writers.keys().copied().collect();
        for l in locals {
            self.evaluate_pair(l, guid, updated);
        }
    }

    /// Checks that SEDP for `guid` may be accepted and returns its participant's data.
    fn admit_remote(&mut self, guid: Guid, right_kind: bool) -> Option<Arc<SpdpParticipantData>> {
        if guid.prefix == self.local_prefix {
            self.stats.ignored_own += 1;
            return None;
        }
        if !right_kind {
            self.stats.sedp_wrong_kind += 1;
            return None;
        }
        match self.participants.get(&guid.prefix) {
            Some(p) => Some(p.data.clone()),
            None => {
                self.stats.sedp_unknown_participant += 1;
                None
            }
        }
    }

    /// A remote endpoint was disposed/unregistered via SEDP. Returns whether it was known.
    pub fn on_remote_endpoint_disposed(&mut self, guid: Guid) -> bool {
        if self.remote_writers.contains_key(&guid) {
            self.remove_remote_writer(guid);
            true
        } else if self.remote_readers.contains_key(&guid) {
            self.remove_remote_reader(guid);
            true
        } else {
            false
        }
    }

    fn remove_remote_writer(&mut self, guid: Guid) {
        self.remote_writers.remove(&guid);
        let locals: Vec<Guid> = self.local_readers.keys().copied().collect();
        self.unmatch_remote(guid, &locals);
    }

    fn remove_remote_reader(&mut self, guid: Guid) {
        self.remote_readers.remove(&guid);
        let locals: Vec<Guid> = self.local_writers.keys().copied().collect();
        self.unmatch_remote(guid, &locals);
    }

    fn unmatch_remote(&mut self, remote: Guid, locals: &[Guid]) {
        for &local in locals {
            if self.matched.remove(&(local, remote)) {
                self.events
                    .push_back(DiscoveryEvent::Unmatched { local, remote });
            }
            self.incompatible.remove(&(local, remote));
        }
        self.events
            .push_back(DiscoveryEvent::RemoteEndpointLost { guid: remote });
    }

    // ------------------------------------------------------------------ matching

    /// Re-evaluates one (local, remote) pair and emits what changed. `remote_changed` asks for a
    /// `MatchUpdated` when a match persists.
    fn evaluate_pair(&mut self, local: Guid, remote: Guid, remote_changed: bool) {
        let (outcome, info) = if let Some(w) = self.local_writers.get(&local) {
            let Some(r) = self.remote_readers.get(&remote) else {
                return;
            };
            (
                evaluate_match(w, &r.effective),
                RemoteEndpointInfo::Reader(r.effective.clone()),
            )
        } else if let Some(r) = self.local_readers.get(&local) {
            let Some(w) = self.remote_writers.get(&remote) else {
                return;
            };
            (
                evaluate_match(&w.effective, r),
                RemoteEndpointInfo::Writer(w.effective.clone()),
            )
        } else {
            return;
        };
        let key = (local, remote);
        let was_matched = self.matched.contains(&key);
        match outcome {
            MatchOutcome::Match => {
                self.incompatible.remove(&key);
                if !was_matched {
                    self.matched.insert(key);
                    self.events.push_back(DiscoveryEvent::Matched {
                        local,
                        remote: info,
                    });
                } else if remote_changed {
                    self.events.push_back(DiscoveryEvent::MatchUpdated {
                        local,
                        remote: info,
                    });
                }
            }
            MatchOutcome::Incompatible(policies) => {
                if was_matched {
                    self.matched.remove(&key);
                    self.events
                        .push_back(DiscoveryEvent::Unmatched { local, remote });
                }
                if self.incompatible.get(&key) != Some(&policies) {
                    self.incompatible.insert(key, policies.clone());
                    self.events.push_back(DiscoveryEvent::IncompatibleQos {
                        local,
                        remote,
                        policies,
                    });
                }
            }
            MatchOutcome::OtherTopic | MatchOutcome::NoMatch(_) => {
                self.incompatible.remove(&key);
                if was_matched {
                    self.matched.remove(&key);
                    self.events
                        .push_back(DiscoveryEvent::Unmatched { local, remote });
                }
            }
        }
    }

    // ------------------------------------------------------------------ outputs and queries

    /// The next event, if any.
    pub fn poll_event(&mut self) -> Option<DiscoveryEvent> {
        self.events.pop_front()
    }

    /// Counters of ignored inputs.
    pub fn stats(&self) -> DiscoveryStats {
        self.stats
    }

    /// A known remote participant.
    pub fn participant(&self, prefix: GuidPrefix) -> Option<&Arc<SpdpParticipantData>> {
        self.participants.get(&prefix).map(|p| &p.data)
    }

    /// All known remote participants, ordered by prefix.
    pub fn participants(&self) -> impl Iterator<Item = &Arc<SpdpParticipantData>> {
        self.participants.values().map(|p| &p.data)
    }

    /// When a participant's lease expires (`None` if unknown or infinite).
    pub fn participant_lease_expiry(&self, prefix: GuidPrefix) -> Option<Instant> {
        self.participants.get(&prefix).and_then(|p| p.expires)
    }

    /// A known remote writer, with effective locators.
    pub fn remote_writer(&self, guid: Guid) -> Option<&Arc<DiscoveredWriterData>> {
        self.remote_writers.get(&guid).map(|e| &e.effective)
    }

    /// A known remote reader, with effective locators.
    pub fn remote_reader(&self, guid: Guid) -> Option<&Arc<DiscoveredReaderData>> {
        self.remote_readers.get(&guid).map(|e| &e.effective)
    }

    /// The remote writers and readers announced on `topic` (what a tool that knows only the
    /// topic name asks: their type names and TypeInformation).
    pub fn remote_endpoints_on_topic(&self, topic: &str) -> Vec<RemoteEndpointInfo> {
        let writers = self
            .remote_writers
            .values()
            .filter(|e| e.effective.topic_name == topic)
            .map(|e| RemoteEndpointInfo::Writer(e.effective.clone()));
        let readers = self
            .remote_readers
            .values()
            .filter(|e| e.effective.topic_name == topic)
            .map(|e| RemoteEndpointInfo::Reader(e.effective.clone()));
        writers.chain(readers).collect()
    }

    /// Every remote writer and reader known.
    pub fn remote_endpoints(&self) -> Vec<RemoteEndpointInfo> {
        let writers = self
            .remote_writers
            .values()
            .map(|e| RemoteEndpointInfo::Writer(e.effective.clone()));
        let readers = self
            .remote_readers
            .values()
            .map(|e| RemoteEndpointInfo::Reader(e.effective.clone()));
        writers.chain(readers).collect()
    }

    /// A local writer.
    pub fn local_writer(&self, guid: Guid) -> Option<&Arc<DiscoveredWriterData>> {
        self.local_writers.get(&guid)
    }

    /// A local reader.
    pub fn local_reader(&self, guid: Guid) -> Option<&Arc<DiscoveredReaderData>> {
        self.local_readers.get(&guid)
    }

    /// Whether a local and a remote endpoint are matched.
    pub fn is_matched(&self, local: Guid, remote: Guid) -> bool {
        self.matched.contains(&(local, remote))
    }

    /// The remote endpoints matched with a local one, ordered by GUID.
    pub fn matched_remotes(&self, local: Guid) -> impl Iterator<Item = Guid> + '_ {
        self.matched
            .range((local, GUID_MIN)..=(local, GUID_MAX))
            .map(|(_, r)| *r)
    }
}
