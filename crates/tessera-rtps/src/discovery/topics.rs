//! The data of the DDS built-in topics (DDS 1.4 §2.2.5): `DCPSParticipant`, `DCPSTopic`,
//! `DCPSPublication` and `DCPSSubscription`, built from what SPDP and SEDP decoded.
//!
//! Each type is a [`TopicType`] so that the runtime keeps its samples in an ordinary reader
//! history (instances, states, listeners). The serialized form is Tessera's own and never
//! travels: the 16-byte key (a GUID) then, as an octet sequence, the announcement in its SPDP
//! or SEDP parameter-list encoding, so that every policy announced is kept as it came.

use std::sync::Arc;

use super::{
    DiscoveredReaderData, DiscoveredWriterData, DiscoveryDecodeError, SpdpParticipantData,
};
use crate::cdr::{CdrError, CdrReader, CdrType, CdrWriter, KeyExtent, TopicType};
use crate::qos::{ReaderSideQos, TopicQos, WriterSideQos};
use crate::types::{Guid, Locator};
use crate::xtypes::{Extensibility, MemberDesc, Primitive, StructDesc, TypeDesc, TypeInformation};

/// A remote participant (`DCPSParticipant`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParticipantBuiltinTopicData {
    /// Its GUID (the built-in topic key).
    pub key: Guid,
    /// Its USER_DATA.
    pub user_data: Vec<u8>,
    /// Everything else it announced: vendor, locators, lease, name, built-in endpoints.
    pub announced: SpdpParticipantData,
}

impl From<&SpdpParticipantData> for ParticipantBuiltinTopicData {
    fn from(d: &SpdpParticipantData) -> Self {
        ParticipantBuiltinTopicData {
            key: d.guid(),
            user_data: d.user_data.clone(),
            announced: d.clone(),
        }
    }
}

/// A topic seen in discovery (`DCPSTopic`): announced by the first endpoint on it, with that
/// endpoint's topic-level policies (a reader does not announce DURABILITY_SERVICE,
/// TRANSPORT_PRIORITY and LIFESPAN: their defaults then). Standard RTPS sends no topic
/// announcements of its own, so this is what every vendor's DCPSTopic shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicBuiltinTopicData {
    /// A hash of the topic and type names (see [`TopicBuiltinTopicData::key_of`]).
    pub key: [u8; 16],
    /// Topic name.
    pub name: String,
    /// Type name.
    pub type_name: String,
    /// The topic-level policies as the endpoint announced them.
    pub qos: TopicQos,
}

impl TopicBuiltinTopicData {
    /// The key of topic `name` of type `type_name`: the MD5 of both names (NUL-separated),
    /// its last byte set to a writer entity kind so that it is also a well-formed writer GUID
    /// (the form it is stored in).
    pub fn key_of(name: &str, type_name: &str) -> [u8; 16] {
        let mut input = Vec::with_capacity(name.len() + type_name.len() + 1);
        input.extend_from_slice(name.as_bytes());
        input.push(0);
        input.extend_from_slice(type_name.as_bytes());
        let mut k = md5::compute(&input).0;
        k[15] = 0x02;
        k
    }

    /// The topic as a writer announces it.
    pub fn from_writer(w: &DiscoveredWriterData) -> Self {
        let q = &w.qos;
        TopicBuiltinTopicData {
            key: Self::key_of(&w.topic_name, &w.type_name),
            name: w.topic_name.clone(),
            type_name: w.type_name.clone(),
            qos: TopicQos {
                consistency: q.consistency,
                topic_data: q.topic_data.clone(),
                durability: q.durability,
                durability_service: q.durability_service,
                deadline: q.deadline,
                latency_budget: q.latency_budget,
                liveliness: q.liveliness,
                reliability: q.reliability,
                destination_order: q.destination_order,
                history: q.history,
                resource_limits: q.resource_limits,
                transport_priority: q.transport_priority,
                lifespan: q.lifespan,
                ownership: q.ownership,
                data_representation: q.data_representation.clone(),
            },
        }
    }

    /// The topic as a reader announces it.
    pub fn from_reader(r: &DiscoveredReaderData) -> Self {
        let q = &r.qos;
        TopicBuiltinTopicData {
            key: Self::key_of(&r.topic_name, &r.type_name),
            name: r.topic_name.clone(),
            type_name: r.type_name.clone(),
            qos: TopicQos {
                consistency: q.consistency,
                topic_data: q.topic_data.clone(),
                durability: q.durability,
                deadline: q.deadline,
                latency_budget: q.latency_budget,
                liveliness: q.liveliness,
                reliability: q.reliability,
                destination_order: q.destination_order,
                history: q.history,
                resource_limits: q.resource_limits,
                ownership: q.ownership,
                data_representation: q.data_representation.clone(),
                ..TopicQos::default()
            },
        }
    }

    /// Stored as a writer announcement carrying exactly the topic's policies.
    fn as_writer(&self) -> DiscoveredWriterData {
        let q = &self.qos;
        let qos = WriterSideQos {
            consistency: q.consistency,
            topic_data: q.topic_data.clone(),
            durability: q.durability,
            durability_service: q.durability_service,
            deadline: q.deadline,
            latency_budget: q.latency_budget,
            liveliness: q.liveliness,
            reliability: q.reliability,
            destination_order: q.destination_order,
            history: q.history,
            resource_limits: q.resource_limits,
            transport_priority: q.transport_priority,
            lifespan: q.lifespan,
            ownership: q.ownership,
            data_representation: q.data_representation.clone(),
            ..WriterSideQos::default()
        };
        DiscoveredWriterData::new(Guid::from_bytes(self.key), &*self.name, &*self.type_name)
            .with_qos(qos)
    }
}

/// A remote writer (`DCPSPublication`): its announcement, every policy as announced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublicationBuiltinTopicData {
    /// The writer's GUID (the built-in topic key).
    pub key: Guid,
    /// Its participant's GUID.
    pub participant_key: Guid,
    /// Topic name.
    pub topic_name: String,
    /// Type name.
    pub type_name: String,
    /// Every policy it offers, with its publisher's (partition, presentation, group data)
    /// and its topic's (topic data).
    pub qos: WriterSideQos,
    /// Its type's XTypes TypeInformation, if announced.
    pub type_information: Option<Arc<TypeInformation>>,
    /// Where it is reached (its participant's defaults when it announced none).
    pub unicast_locators: Vec<Locator>,
    /// Its multicast locators.
    pub multicast_locators: Vec<Locator>,
    /// Its entity name, if any.
    pub entity_name: Option<String>,
}

impl From<&DiscoveredWriterData> for PublicationBuiltinTopicData {
    fn from(w: &DiscoveredWriterData) -> Self {
        PublicationBuiltinTopicData {
            key: w.guid,
            participant_key: w.participant_guid,
            topic_name: w.topic_name.clone(),
            type_name: w.type_name.clone(),
            qos: w.qos.clone(),
            type_information: w.type_information.clone(),
            unicast_locators: w.unicast_locators.clone(),
            multicast_locators: w.multicast_locators.clone(),
            entity_name: w.entity_name.clone(),
        }
    }
}

impl From<&PublicationBuiltinTopicData> for DiscoveredWriterData {
    fn from(p: &PublicationBuiltinTopicData) -> Self {
        DiscoveredWriterData {
            guid: p.key,
            participant_guid: p.participant_key,
            topic_name: p.topic_name.clone(),
            type_name: p.type_name.clone(),
            qos: p.qos.clone(),
            unicast_locators: p.unicast_locators.clone(),
            multicast_locators: p.multicast_locators.clone(),
            entity_name: p.entity_name.clone(),
            type_information: p.type_information.clone(),
            type_information_rejected: false,
        }
    }
}

/// A remote reader (`DCPSSubscription`): its announcement, every policy as announced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubscriptionBuiltinTopicData {
    /// The reader's GUID (the built-in topic key).
    pub key: Guid,
    /// Its participant's GUID.
    pub participant_key: Guid,
    /// Topic name.
    pub topic_name: String,
    /// Type name.
    pub type_name: String,
    /// Every policy it requests, with its subscriber's (partition, presentation, group data)
    /// and its topic's (topic data).
    pub qos: ReaderSideQos,
    /// Its type's XTypes TypeInformation, if announced.
    pub type_information: Option<Arc<TypeInformation>>,
    /// Where it is reached (its participant's defaults when it announced none).
    pub unicast_locators: Vec<Locator>,
    /// Its multicast locators.
    pub multicast_locators: Vec<Locator>,
    /// Whether it expects inline QoS.
    pub expects_inline_qos: bool,
    /// Its entity name, if any.
    pub entity_name: Option<String>,
    /// The content filter it announced (a reader of a content-filtered topic), if any.
    pub content_filter: Option<super::ContentFilterProperty>,
    /// A Tessera reader's plain layout hash for zero-copy loans (0: it takes serialized
    /// samples only).
    pub loan_layout: u64,
    /// A Tessera reader that resolves references to serialized samples in shared memory.
    pub cdr_chunks: bool,
}

impl From<&DiscoveredReaderData> for SubscriptionBuiltinTopicData {
    fn from(r: &DiscoveredReaderData) -> Self {
        SubscriptionBuiltinTopicData {
            key: r.guid,
            participant_key: r.participant_guid,
            topic_name: r.topic_name.clone(),
            type_name: r.type_name.clone(),
            qos: r.qos.clone(),
            type_information: r.type_information.clone(),
            unicast_locators: r.unicast_locators.clone(),
            multicast_locators: r.multicast_locators.clone(),
            expects_inline_qos: r.expects_inline_qos,
            entity_name: r.entity_name.clone(),
            content_filter: r.content_filter.clone(),
            loan_layout: r.loan_layout,
            cdr_chunks: r.cdr_chunks,
        }
    }
}

impl From<&SubscriptionBuiltinTopicData> for DiscoveredReaderData {
    fn from(s: &SubscriptionBuiltinTopicData) -> Self {
        DiscoveredReaderData {
            guid: s.key,
            participant_guid: s.participant_key,
            topic_name: s.topic_name.clone(),
            type_name: s.type_name.clone(),
            qos: s.qos.clone(),
            unicast_locators: s.unicast_locators.clone(),
            multicast_locators: s.multicast_locators.clone(),
            expects_inline_qos: s.expects_inline_qos,
            entity_name: s.entity_name.clone(),
            type_information: s.type_information.clone(),
            type_information_rejected: false,
            content_filter: s.content_filter.clone(),
            loan_layout: s.loan_layout,
            cdr_chunks: s.cdr_chunks,
        }
    }
}

/// How a built-in topic sample is stored: its key, and its announcement as a parameter list.
trait Stored: Sized {
    fn key_bytes(&self) -> [u8; 16];
    fn parameter_list(&self) -> Vec<u8>;
    fn from_parameter_list(key: [u8; 16], pl: &[u8]) -> Result<Self, DiscoveryDecodeError>;
}

impl Stored for ParticipantBuiltinTopicData {
    fn key_bytes(&self) -> [u8; 16] {
        self.key.to_bytes()
    }
    fn parameter_list(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(256);
        self.announced.encode(&mut v);
        v
    }
    fn from_parameter_list(_key: [u8; 16], pl: &[u8]) -> Result<Self, DiscoveryDecodeError> {
        SpdpParticipantData::decode(pl).map(|d| (&d).into())
    }
}

impl Stored for TopicBuiltinTopicData {
    fn key_bytes(&self) -> [u8; 16] {
        self.key
    }
    fn parameter_list(&self) -> Vec<u8> {
        self.as_writer().to_payload()
    }
    fn from_parameter_list(key: [u8; 16], pl: &[u8]) -> Result<Self, DiscoveryDecodeError> {
        let mut t = Self::from_writer(&DiscoveredWriterData::decode(pl)?);
        t.key = key;
        Ok(t)
    }
}

impl Stored for PublicationBuiltinTopicData {
    fn key_bytes(&self) -> [u8; 16] {
        self.key.to_bytes()
    }
    fn parameter_list(&self) -> Vec<u8> {
        DiscoveredWriterData::from(self).to_payload()
    }
    fn from_parameter_list(_key: [u8; 16], pl: &[u8]) -> Result<Self, DiscoveryDecodeError> {
        DiscoveredWriterData::decode(pl).map(|d| (&d).into())
    }
}

impl Stored for SubscriptionBuiltinTopicData {
    fn key_bytes(&self) -> [u8; 16] {
        self.key.to_bytes()
    }
    fn parameter_list(&self) -> Vec<u8> {
        DiscoveredReaderData::from(self).to_payload()
    }
    fn from_parameter_list(_key: [u8; 16], pl: &[u8]) -> Result<Self, DiscoveryDecodeError> {
        DiscoveredReaderData::decode(pl).map(|d| (&d).into())
    }
}

/// The XTypes description of the stored form: `@final struct NAME { @key octet key[16];
/// sequence<octet> announcement; }` (never announced: built-in readers are local).
fn stored_desc(name: &str) -> TypeDesc {
    TypeDesc::Struct(Arc::new(StructDesc {
        name: name.into(),
        extensibility: Extensibility::Final,
        members: vec![
            MemberDesc::new("key", 0, <[u8; 16]>::type_desc()).key(),
            MemberDesc::new(
                "announcement",
                1,
                TypeDesc::Sequence {
                    element: Box::new(TypeDesc::Primitive(Primitive::Byte)),
                    bound: 0,
                },
            ),
        ],
    }))
}

macro_rules! builtin_topic_type {
    ($t:ty, $name:literal) => {
        impl CdrType for $t {
            const MIN_SIZE: usize = 20;
            const KEY_EXTENT: KeyExtent = <[u8; 16] as CdrType>::KEY_EXTENT;
            fn type_desc() -> TypeDesc {
                stored_desc($name)
            }
            fn write_cdr(&self, w: &mut CdrWriter<'_>) {
                self.key_bytes().write_cdr(w);
                self.parameter_list().write_cdr(w);
            }
            fn read_cdr(r: &mut CdrReader<'_>) -> Result<Self, CdrError> {
                let key = <[u8; 16]>::read_cdr(r)?;
                let pl = Vec::<u8>::read_cdr(r)?;
                // Only ever written by this process: a failure here is a bug, reported as
                // a malformed member rather than a panic.
                <$t as Stored>::from_parameter_list(key, &pl).map_err(|_| CdrError::BadMemberHeader)
            }
            fn write_cdr_key(&self, w: &mut CdrWriter<'_>) {
                self.key_bytes().write_cdr(w)
            }
            fn transcode_cdr_key(
                r: &mut CdrReader<'_>,
                w: &mut CdrWriter<'_>,
            ) -> Result<(), CdrError> {
                <[u8; 16]>::transcode_cdr_key(r, w)
            }
            fn extract_cdr_key(
                r: &mut CdrReader<'_>,
                w: &mut CdrWriter<'_>,
            ) -> Result<(), CdrError> {
                <[u8; 16]>::transcode_cdr_key(r, w)?;
                Vec::<u8>::skip_cdr(r)
            }
        }

        impl TopicType for $t {
            const TYPE_NAME: &'static str = $name;
            const KEYED: bool = true;
        }
    };
}

builtin_topic_type!(
    ParticipantBuiltinTopicData,
    "DDS::ParticipantBuiltinTopicData"
);
builtin_topic_type!(TopicBuiltinTopicData, "DDS::TopicBuiltinTopicData");
builtin_topic_type!(
    PublicationBuiltinTopicData,
    "DDS::PublicationBuiltinTopicData"
);
builtin_topic_type!(
    SubscriptionBuiltinTopicData,
    "DDS::SubscriptionBuiltinTopicData"
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cdr::{
        deserialize_sample, key_hash, key_hash_from_sample_payload, serialize_sample, Encoding,
    };
    use crate::qos::{Deadline, Durability, Partition, ReliabilityKind};
    use crate::types::{EntityId, GuidPrefix};
    use std::time::Duration;

    fn round_trip<T: TopicType + PartialEq + std::fmt::Debug>(v: &T) {
        let mut out = Vec::new();
        serialize_sample(v, Encoding::XCDR1_LE, &mut out);
        assert_eq!(&deserialize_sample::<T>(&out).unwrap(), v);
        assert_eq!(
            key_hash_from_sample_payload::<T>(&out).unwrap(),
            key_hash(v)
        );
    }

    #[test]
    fn every_builtin_topic_sample_round_trips_with_its_guid_as_key_hash() {
        let prefix = GuidPrefix([7; 12]);
        let mut p = SpdpParticipantData::new(prefix);
        p.user_data = b"hello".to_vec();
        p.lease_duration = Duration::from_secs(3);
        p.default_unicast_locators
            .push(Locator::udpv4([10, 0, 0, 1].into(), 7411));
        let pd = ParticipantBuiltinTopicData::from(&p);
        round_trip(&pd);
        assert_eq!(key_hash(&pd), pd.key.to_bytes());

        let wq = WriterSideQos {
            partition: Partition(vec!["a*".into()]),
            deadline: Deadline {
                period: Duration::from_millis(250),
            },
            durability: Durability::TransientLocal,
            ..WriterSideQos::default()
        };
        let w = DiscoveredWriterData::new(Guid::new(prefix, EntityId::new(3, 2)), "T", "Ty")
            .with_qos(wq);
        let pubd = PublicationBuiltinTopicData::from(&w);
        round_trip(&pubd);
        assert_eq!(key_hash(&pubd), w.guid.to_bytes());
        assert_eq!(pubd.participant_key, p.guid());

        let mut r = DiscoveredReaderData::new(Guid::new(prefix, EntityId::new(4, 7)), "T", "Ty");
        r.qos.reliability.kind = ReliabilityKind::Reliable;
        let subd = SubscriptionBuiltinTopicData::from(&r);
        round_trip(&subd);

        let t = TopicBuiltinTopicData::from_writer(&w);
        round_trip(&t);
        assert_eq!(t.qos.durability, Durability::TransientLocal);
        // The same names give the same topic whoever announces it.
        assert_eq!(TopicBuiltinTopicData::from_reader(&r).key, t.key);
        assert_ne!(TopicBuiltinTopicData::key_of("T", "Other"), t.key);
    }
}
