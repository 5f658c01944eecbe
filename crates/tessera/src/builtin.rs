//! The DDS built-in topics (`DCPSParticipant`, `DCPSTopic`, `DCPSPublication`,
//! `DCPSSubscription`), `ignore_*`, `get_matched_*_data`, `get_key_value`, and fetching a
//! peer's type (`find_type`): what discovery knows of remote entities, for the application.
//!
//! Built-in readers are ordinary reader endpoints (history, instance states, listeners, status
//! and read conditions) that no network feeds: discovery inserts their samples itself, under
//! its lock and in the order it learns things, and their listeners run after that lock is
//! released, so a listener may create or delete entities. They are made by the first
//! [`DomainParticipant::get_builtin_subscriber`]; until then a participant only keeps a map of
//! the remote participants and endpoints (shared `Arc`s of what the engine already holds), and
//! nothing touches the data path.
//!
//! They show remote entities only (this participant's own are known to the application), each
//! instance keyed by the entity's GUID; an entity that leaves (disposed, or its participant
//! lost) becomes NOT_ALIVE_DISPOSED. A topic is alive while some remote endpoint uses it.
//!
//! Entity handles are GUIDs, as in `matched_publications` and the built-in samples' keys.
//! Ignoring an entity ends its matches at once and refuses new ones; its announcements are
//! dropped and counted ([`DomainParticipant::ignored_count`]), and what its writers still send
//! finds no reader (counted as unroutable submessages).

use crate::discovery_rt::MatchAction;
use crate::endpoint::{LocalOutcome, LocalReader};
use crate::error::{Error, Result};
use crate::history::InstanceHandle;
use crate::participant::DomainParticipant;
use crate::publication::DataWriter;
use crate::qos::{DataReaderQos, Durability, Reliability};
use crate::reader::{DataReader, UntypedDataReader};
use crate::runtime::RuntimeContext;
use crate::sample::TypedSupport;
use crate::subscription::ReaderEndpoint;
use crate::TopicType;
use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;
use tessera_rtps::cdr::{serialize_sample, Encoding};
use tessera_rtps::discovery::{
    ParticipantBuiltinTopicData, PublicationBuiltinTopicData, RemoteEndpointInfo,
    SpdpParticipantData, SubscriptionBuiltinTopicData, TopicBuiltinTopicData,
};
use tessera_rtps::reader::Delivered;
use tessera_rtps::types::{EntityId, Guid, GuidPrefix};
use tessera_rtps::wire::PayloadKind;
use tessera_rtps::xtypes::idl_print::dependencies;
use tessera_rtps::xtypes::{TypeIdentifier, TypeObject};

/// The built-in topics' names.
pub const DCPS_PARTICIPANT: &str = "DCPSParticipant";
/// See [`DCPS_PARTICIPANT`].
pub const DCPS_TOPIC: &str = "DCPSTopic";
/// See [`DCPS_PARTICIPANT`].
pub const DCPS_PUBLICATION: &str = "DCPSPublication";
/// See [`DCPS_PARTICIPANT`].
pub const DCPS_SUBSCRIPTION: &str = "DCPSSubscription";

/// The built-in subscriber: the four built-in readers of a participant. Cheap to clone; the
/// readers live as long as their participant.
#[derive(Clone)]
pub struct BuiltinSubscriber {
    readers: Arc<BuiltinReaders>,
}

impl std::fmt::Debug for BuiltinSubscriber {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BuiltinSubscriber").finish_non_exhaustive()
    }
}

impl BuiltinSubscriber {
    /// The `DCPSParticipant` reader: remote participants.
    pub fn participant_reader(&self) -> DataReader<ParticipantBuiltinTopicData> {
        typed(&self.readers.participant)
    }

    /// The `DCPSTopic` reader: topics remote endpoints use.
    pub fn topic_reader(&self) -> DataReader<TopicBuiltinTopicData> {
        typed(&self.readers.topic)
    }

    /// The `DCPSPublication` reader: remote writers.
    pub fn publication_reader(&self) -> DataReader<PublicationBuiltinTopicData> {
        typed(&self.readers.publication)
    }

    /// The `DCPSSubscription` reader: remote readers.
    pub fn subscription_reader(&self) -> DataReader<SubscriptionBuiltinTopicData> {
        typed(&self.readers.subscription)
    }

    /// The built-in reader of the topic named `topic_name` (`"DCPSPublication"`, ...),
    /// untyped; `None` for another name.
    pub fn lookup_datareader(&self, topic_name: &str) -> Option<UntypedDataReader> {
        let ep = match topic_name {
            DCPS_PARTICIPANT => &self.readers.participant,
            DCPS_TOPIC => &self.readers.topic,
            DCPS_PUBLICATION => &self.readers.publication,
            DCPS_SUBSCRIPTION => &self.readers.subscription,
            _ => return None,
        };
        Some(UntypedDataReader::new(ep.clone(), None))
    }
}

fn typed<T: TopicType>(ep: &Arc<ReaderEndpoint>) -> DataReader<T> {
    DataReader::from_raw(UntypedDataReader::new(ep.clone(), None))
}

/// A built-in reader's listeners and conditions to wake once the discovery lock is released.
#[derive(Clone)]
pub(crate) struct BuiltinNotify {
    pub reader: Arc<ReaderEndpoint>,
    pub outcome: LocalOutcome,
}

impl std::fmt::Debug for BuiltinNotify {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BuiltinNotify")
            .field("reader", &self.reader.guid)
            .field("outcome", &self.outcome)
            .finish()
    }
}

impl BuiltinNotify {
    pub fn run(self, ctx: &RuntimeContext) {
        self.reader.notify_local(ctx, self.outcome);
    }
}

pub(crate) struct BuiltinReaders {
    participant: Arc<ReaderEndpoint>,
    topic: Arc<ReaderEndpoint>,
    publication: Arc<ReaderEndpoint>,
    subscription: Arc<ReaderEndpoint>,
    /// The writer the DCPSTopic samples come from (topics are no one participant's).
    topic_writer: Guid,
}

/// The QoS of the built-in readers (DDS 1.4 §2.2.5: reliable, transient-local, keep-last 1).
fn builtin_qos() -> DataReaderQos {
    DataReaderQos {
        reliability: Reliability::reliable(Duration::from_millis(100)),
        durability: Durability::TransientLocal,
        ..DataReaderQos::default()
    }
}

impl BuiltinReaders {
    fn new(ctx: &Arc<RuntimeContext>, prefix: GuidPrefix) -> Self {
        let qos = builtin_qos();
        let ep = |entity: EntityId, support| {
            ReaderEndpoint::new(ctx.clone(), Guid::new(prefix, entity), support, &qos)
        };
        BuiltinReaders {
            participant: ep(
                EntityId::SPDP_READER,
                TypedSupport::<ParticipantBuiltinTopicData>::arc(),
            ),
            topic: ep(
                EntityId([0, 0, 2, 0xc7]),
                TypedSupport::<TopicBuiltinTopicData>::arc(),
            ),
            publication: ep(
                EntityId::SEDP_PUBLICATIONS_READER,
                TypedSupport::<PublicationBuiltinTopicData>::arc(),
            ),
            subscription: ep(
                EntityId::SEDP_SUBSCRIPTIONS_READER,
                TypedSupport::<SubscriptionBuiltinTopicData>::arc(),
            ),
            topic_writer: Guid::new(prefix, EntityId([0, 0, 2, 0xc2])),
        }
    }

    /// Inserts `sample` (or disposes `key` when `sample` is `None`) into `reader`'s history as
    /// written by `writer`; its listener is queued in `out`.
    fn deliver<T: TopicType>(
        reader: &Arc<ReaderEndpoint>,
        writer: Guid,
        key: [u8; 16],
        sample: Option<&T>,
        out: &mut Vec<MatchAction>,
    ) {
        let mut payload = Vec::new();
        if let Some(s) = sample {
            serialize_sample(s, Encoding::XCDR1_LE, &mut payload);
        }
        let d = Delivered {
            writer,
            seq: 1,
            kind: if sample.is_some() {
                PayloadKind::Data
            } else {
                PayloadKind::Key
            },
            payload: Cow::Borrowed(&payload),
            status_info: if sample.is_some() { 0 } else { 1 },
            key_hash: Some(key),
            source_timestamp: None,
            original: None,
            coherent_set: None,
            group: None,
        };
        let outcome = reader.deliver_local(&d, None, None);
        if outcome.available || outcome.rejected > 0 {
            out.push(MatchAction::Builtin(BuiltinNotify {
                reader: reader.clone(),
                outcome,
            }));
        }
    }

    fn participant(&self, data: &SpdpParticipantData, out: &mut Vec<MatchAction>) {
        let s = ParticipantBuiltinTopicData::from(data);
        let w = Guid::new(data.guid_prefix, EntityId::SPDP_WRITER);
        Self::deliver(&self.participant, w, s.key.to_bytes(), Some(&s), out);
    }

    fn participant_lost(&self, prefix: GuidPrefix, out: &mut Vec<MatchAction>) {
        let w = Guid::new(prefix, EntityId::SPDP_WRITER);
        let key = Guid::new(prefix, EntityId::PARTICIPANT).to_bytes();
        Self::deliver::<ParticipantBuiltinTopicData>(&self.participant, w, key, None, out);
    }

    fn endpoint(&self, info: &RemoteEndpointInfo, out: &mut Vec<MatchAction>) {
        let guid = info.guid();
        match info {
            RemoteEndpointInfo::Writer(w) => {
                let s = PublicationBuiltinTopicData::from(&**w);
                let from = Guid::new(guid.prefix, EntityId::SEDP_PUBLICATIONS_WRITER);
                Self::deliver(&self.publication, from, guid.to_bytes(), Some(&s), out);
            }
            RemoteEndpointInfo::Reader(r) => {
                let s = SubscriptionBuiltinTopicData::from(&**r);
                let from = Guid::new(guid.prefix, EntityId::SEDP_SUBSCRIPTIONS_WRITER);
                Self::deliver(&self.subscription, from, guid.to_bytes(), Some(&s), out);
            }
        }
    }

    fn endpoint_lost(&self, guid: Guid, out: &mut Vec<MatchAction>) {
        if guid.entity_id.is_writer() {
            let from = Guid::new(guid.prefix, EntityId::SEDP_PUBLICATIONS_WRITER);
            Self::deliver::<PublicationBuiltinTopicData>(
                &self.publication,
                from,
                guid.to_bytes(),
                None,
                out,
            );
        } else {
            let from = Guid::new(guid.prefix, EntityId::SEDP_SUBSCRIPTIONS_WRITER);
            Self::deliver::<SubscriptionBuiltinTopicData>(
                &self.subscription,
                from,
                guid.to_bytes(),
                None,
                out,
            );
        }
    }

    fn topic(&self, t: Option<&TopicBuiltinTopicData>, key: [u8; 16], out: &mut Vec<MatchAction>) {
        Self::deliver(&self.topic, self.topic_writer, key, t, out);
    }
}

/// The topic an endpoint uses, and its key.
fn topic_of(info: &RemoteEndpointInfo) -> TopicBuiltinTopicData {
    match info {
        RemoteEndpointInfo::Writer(w) => TopicBuiltinTopicData::from_writer(w),
        RemoteEndpointInfo::Reader(r) => TopicBuiltinTopicData::from_reader(r),
    }
}

fn topic_key(info: &RemoteEndpointInfo) -> [u8; 16] {
    let (name, ty) = match info {
        RemoteEndpointInfo::Writer(w) => (&w.topic_name, &w.type_name),
        RemoteEndpointInfo::Reader(r) => (&r.topic_name, &r.type_name),
    };
    TopicBuiltinTopicData::key_of(name, ty)
}

/// Counts one more endpoint on `info`'s topic; its first announces the topic.
fn topic_used(
    users: &mut HashMap<[u8; 16], u32>,
    r: &BuiltinReaders,
    info: &RemoteEndpointInfo,
    out: &mut Vec<MatchAction>,
) {
    let n = users.entry(topic_key(info)).or_insert(0);
    *n += 1;
    if *n == 1 {
        let t = topic_of(info);
        r.topic(Some(&t), t.key, out);
    }
}

/// What discovery knows of remote entities beyond matching: their announcements (for the
/// built-in topics and `get_matched_*_data`), the entities the application ignores, the
/// matches made (so that ignoring one ends them), and the built-in readers once made.
#[derive(Default)]
pub(crate) struct Discovered {
    participants: HashMap<GuidPrefix, Arc<SpdpParticipantData>>,
    endpoints: HashMap<Guid, RemoteEndpointInfo>,
    ignored_participants: HashSet<GuidPrefix>,
    ignored_endpoints: HashSet<Guid>,
    ignored_topics: HashSet<[u8; 16]>,
    /// Announcements and matches dropped because they concern an ignored entity.
    ignored_drops: u64,
    /// (local, remote) pairs matched on the endpoints' side.
    matched: HashSet<(Guid, Guid)>,
    readers: Option<Arc<BuiltinReaders>>,
    /// Remote endpoints per topic key (kept while built-in readers exist).
    topic_users: HashMap<[u8; 16], u32>,
}

impl Discovered {
    /// A participant discovered or re-announced; false if it is ignored.
    pub fn participant(
        &mut self,
        data: &Arc<SpdpParticipantData>,
        out: &mut Vec<MatchAction>,
    ) -> bool {
        if self.ignored_participants.contains(&data.guid_prefix) {
            self.ignored_drops += 1;
            return false;
        }
        self.participants.insert(data.guid_prefix, data.clone());
        if let Some(r) = &self.readers {
            r.participant(data, out);
        }
        true
    }

    pub fn participant_lost(&mut self, prefix: GuidPrefix, out: &mut Vec<MatchAction>) {
        if self.participants.remove(&prefix).is_some() {
            if let Some(r) = &self.readers {
                r.participant_lost(prefix, out);
            }
        }
    }

    fn is_ignored(&self, info: &RemoteEndpointInfo) -> bool {
        let guid = info.guid();
        self.ignored_participants.contains(&guid.prefix)
            || self.ignored_endpoints.contains(&guid)
            || (!self.ignored_topics.is_empty() && self.ignored_topics.contains(&topic_key(info)))
    }

    /// A remote endpoint announced or re-announced; false if it is ignored (nothing of it
    /// is kept, and it must not match).
    pub fn endpoint(&mut self, info: &RemoteEndpointInfo, out: &mut Vec<MatchAction>) -> bool {
        if self.is_ignored(info) {
            self.ignored_drops += 1;
            return false;
        }
        let new = self.endpoints.insert(info.guid(), info.clone()).is_none();
        if let Some(r) = &self.readers {
            r.endpoint(info, out);
            if new {
                topic_used(&mut self.topic_users, r, info, out);
            }
        }
        true
    }

    pub fn endpoint_lost(&mut self, guid: Guid, out: &mut Vec<MatchAction>) {
        let Some(info) = self.endpoints.remove(&guid) else {
            return;
        };
        if let Some(r) = &self.readers {
            r.endpoint_lost(guid, out);
            let key = topic_key(&info);
            if let Some(n) = self.topic_users.get_mut(&key) {
                *n -= 1;
                if *n == 0 {
                    self.topic_users.remove(&key);
                    r.topic(None, key, out);
                }
            }
        }
    }

    /// Whether a match with `remote` must not be made (an ignored entity).
    pub fn refuses(&mut self, remote: &RemoteEndpointInfo) -> bool {
        let refused = self.is_ignored(remote);
        if refused {
            self.ignored_drops += 1;
        }
        refused
    }

    /// Records a match made (or, with `matched` false, ended) on the endpoints' side.
    pub fn record_match(&mut self, local: Guid, remote: Guid, matched: bool) {
        if matched {
            self.matched.insert((local, remote));
        } else {
            self.matched.remove(&(local, remote));
        }
    }

    /// The announcement of a remote endpoint.
    pub fn remote_endpoint(&self, guid: Guid) -> Option<&RemoteEndpointInfo> {
        self.endpoints.get(&guid)
    }

    pub fn ignored_drops(&self) -> u64 {
        self.ignored_drops
    }

    /// Ignores the entities `which` selects from now on: they leave the built-in readers
    /// (disposed), and their matches end. Returns the (local, remote) pairs to unmatch.
    pub fn ignore(&mut self, which: Ignore, out: &mut Vec<MatchAction>) -> Vec<(Guid, Guid)> {
        match which {
            Ignore::Participant(p) => {
                self.ignored_participants.insert(p);
                self.participant_lost(p, out);
            }
            Ignore::Endpoint(g) => {
                self.ignored_endpoints.insert(g);
            }
            Ignore::Topic(k) => {
                self.ignored_topics.insert(k);
            }
        }
        let gone: HashSet<Guid> = self
            .endpoints
            .values()
            .filter(|i| self.is_ignored(i))
            .map(|i| i.guid())
            .collect();
        for g in &gone {
            self.endpoint_lost(*g, out);
        }
        let pairs: Vec<(Guid, Guid)> = self
            .matched
            .iter()
            .filter(|(_, r)| {
                gone.contains(r)
                    || self.ignored_participants.contains(&r.prefix)
                    || self.ignored_endpoints.contains(r)
            })
            .copied()
            .collect();
        for p in &pairs {
            self.matched.remove(p);
        }
        pairs
    }

    /// The built-in readers, made (and given what is known now) by the first call.
    pub fn builtin_readers(
        &mut self,
        ctx: &Arc<RuntimeContext>,
        prefix: GuidPrefix,
        out: &mut Vec<MatchAction>,
    ) -> Arc<BuiltinReaders> {
        if let Some(r) = &self.readers {
            return r.clone();
        }
        let r = Arc::new(BuiltinReaders::new(ctx, prefix));
        for p in self.participants.values() {
            r.participant(p, out);
        }
        for info in self.endpoints.values() {
            r.endpoint(info, out);
            topic_used(&mut self.topic_users, &r, info, out);
        }
        self.readers = Some(r.clone());
        r
    }
}

/// What `ignore_*` names.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Ignore {
    Participant(GuidPrefix),
    Endpoint(Guid),
    Topic([u8; 16]),
}

impl DomainParticipant {
    /// The built-in subscriber and its four readers. The first call makes them and fills them
    /// with every remote participant, topic, writer and reader known at that time.
    pub fn get_builtin_subscriber(&self) -> BuiltinSubscriber {
        let p = self.shared();
        let mut out = Vec::new();
        let readers =
            p.discovery
                .lock()
                .discovered_mut()
                .builtin_readers(&p.ctx, p.guid_prefix, &mut out);
        p.apply_discovery_events(out, std::time::Instant::now());
        BuiltinSubscriber { readers }
    }

    /// Ignores a remote participant (its GUID, as in `DCPSParticipant`'s key): none of its
    /// writers and readers matches ours from now on (matches made end), so its data is
    /// dropped (counted as unroutable), and the built-in readers forget it.
    pub fn ignore_participant(&self, handle: Guid) -> Result<()> {
        if handle.prefix == self.shared().guid_prefix {
            return Err(Error::BadParameter("cannot ignore this participant".into()));
        }
        self.ignore(Ignore::Participant(handle.prefix))
    }

    /// Ignores a remote writer (its GUID, as in `DCPSPublication`'s key); see
    /// [`DomainParticipant::ignore_participant`].
    pub fn ignore_publication(&self, handle: Guid) -> Result<()> {
        if !handle.entity_id.is_writer() {
            return Err(Error::BadParameter(format!("{handle:?} is not a writer")));
        }
        self.ignore(Ignore::Endpoint(handle))
    }

    /// Ignores a remote reader (its GUID, as in `DCPSSubscription`'s key); see
    /// [`DomainParticipant::ignore_participant`].
    pub fn ignore_subscription(&self, handle: Guid) -> Result<()> {
        if !handle.entity_id.is_reader() {
            return Err(Error::BadParameter(format!("{handle:?} is not a reader")));
        }
        self.ignore(Ignore::Endpoint(handle))
    }

    /// Ignores a topic (its `DCPSTopic` key, [`TopicBuiltinTopicData::key_of`] its names):
    /// remote endpoints on it are ignored.
    pub fn ignore_topic(&self, key: [u8; 16]) -> Result<()> {
        self.ignore(Ignore::Topic(key))
    }

    fn ignore(&self, which: Ignore) -> Result<()> {
        let p = self.shared();
        if p.is_closed() {
            return Err(Error::AlreadyDeleted);
        }
        let mut out = Vec::new();
        p.discovery.lock().ignore(which, &mut out);
        p.apply_discovery_events(out, std::time::Instant::now());
        Ok(())
    }

    /// The TypeObject of `id` and of every type it depends on (root first), asked of the
    /// peers over the TypeLookup service when not known here; waits up to `timeout` for
    /// their replies. Objects that do not hash to their identifier are never accepted.
    /// [`Error::Timeout`] when some stay missing, [`Error::NotEnabled`] when the participant's
    /// type information is off (`TESSERA_TYPE_INFORMATION=0`).
    pub fn find_type(&self, id: &TypeIdentifier, timeout: Duration) -> Result<Vec<TypeObject>> {
        let p = self.shared();
        let deadline = std::time::Instant::now() + timeout;
        let mut known: Vec<TypeObject> = Vec::new();
        let mut wanted = vec![id.clone()];
        loop {
            let now = std::time::Instant::now();
            let found = p
                .discovery
                .lock()
                .fetch_types(p, &wanted, now)
                .ok_or(Error::NotEnabled)?;
            let mut still = Vec::new();
            for (id, f) in wanted.into_iter().zip(found) {
                match f {
                    Some(o) => {
                        for dep in dependencies(&o) {
                            let seen = known.iter().any(|k| k.identifier() == dep)
                                || still.contains(&dep)
                                || dep == id;
                            if !seen {
                                still.push(dep);
                            }
                        }
                        if known.len() < tessera_rtps::xtypes::MAX_DEPTH * 64 {
                            known.push(o);
                        }
                    }
                    None => still.push(id),
                }
            }
            if still.is_empty() {
                return Ok(known);
            }
            if now >= deadline {
                return Err(Error::Timeout);
            }
            wanted = still;
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Announcements and matches dropped because they concern an ignored entity.
    pub fn ignored_count(&self) -> u64 {
        self.shared()
            .discovery
            .lock()
            .discovered_mut()
            .ignored_drops()
    }
}

impl<T: TopicType> DataWriter<T> {
    /// What matched reader `handle` (a GUID of [`DataWriter::matched_subscriptions`])
    /// announced. [`Error::BadParameter`] if it is not matched; [`Error::PreconditionNotMet`]
    /// on a listener's handle of the writer.
    pub fn get_matched_subscription_data(
        &self,
        handle: Guid,
    ) -> Result<SubscriptionBuiltinTopicData> {
        if !self.matched_subscriptions().contains(&handle) {
            return Err(Error::BadParameter(format!("{handle:?} is not matched")));
        }
        match endpoint_data(self.owning_participant(), handle)? {
            RemoteEndpointInfo::Reader(r) => Ok((&*r).into()),
            RemoteEndpointInfo::Writer(_) => Err(Error::BadParameter("not a reader".into())),
        }
    }
}

impl UntypedDataReader {
    /// What matched writer `handle` (a GUID of [`UntypedDataReader::matched_publications`])
    /// announced. [`Error::BadParameter`] if it is not matched; [`Error::PreconditionNotMet`]
    /// on a listener's or a built-in reader's handle.
    pub fn get_matched_publication_data(
        &self,
        handle: Guid,
    ) -> Result<PublicationBuiltinTopicData> {
        if !self.matched_publications().contains(&handle) {
            return Err(Error::BadParameter(format!("{handle:?} is not matched")));
        }
        match endpoint_data(self.owning_participant(), handle)? {
            RemoteEndpointInfo::Writer(w) => Ok((&*w).into()),
            RemoteEndpointInfo::Reader(_) => Err(Error::BadParameter("not a writer".into())),
        }
    }
}

impl<T: TopicType> DataReader<T> {
    /// A sample of instance `handle` whose key members are the instance's key (DDS
    /// `get_key_value`): the newest sample the reader keeps of it, not marked read; its other
    /// members are that sample's. [`Error::BadParameter`] for an instance the reader does not
    /// hold, [`Error::NoData`] when it keeps no sample of it (all taken).
    pub fn get_key_value(&self, handle: InstanceHandle) -> Result<T> {
        let ep = &self.untyped().ep;
        let (known, newest) = ep.with_history(|h| {
            let known = h.key_value(handle).is_some();
            ((known, h.newest_data(handle).cloned()), 0)
        });
        if !known {
            return Err(Error::BadParameter(format!("unknown instance {handle:?}")));
        }
        let payload = newest.ok_or(Error::NoData)?;
        payload.decode::<T>().map_err(|e| {
            ep.count_undecodable(&e);
            Error::NoData
        })
    }

    /// See [`UntypedDataReader::get_matched_publication_data`].
    pub fn get_matched_publication_data(
        &self,
        handle: Guid,
    ) -> Result<PublicationBuiltinTopicData> {
        self.untyped().get_matched_publication_data(handle)
    }
}

fn endpoint_data(p: Option<&DomainParticipant>, handle: Guid) -> Result<RemoteEndpointInfo> {
    let p = p.ok_or_else(|| {
        Error::PreconditionNotMet("matched data on a handle without its participant".into())
    })?;
    p.shared()
        .discovery
        .lock()
        .endpoint_data(handle)
        .ok_or_else(|| Error::BadParameter(format!("{handle:?} is not known")))
}
