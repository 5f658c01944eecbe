//! SPDP/SEDP encoding and decoding: round trips, bytes shaped like Cyclone DDS's, default
//! filling, and malformed or lying input.

use std::net::Ipv4Addr;
use std::time::Duration;

use proptest::prelude::*;
use tessera_rtps::discovery::*;
use tessera_rtps::qos::*;
use tessera_rtps::types::{entity_kind, locator_kind, EntityId, Guid, GuidPrefix, Locator};
use tessera_rtps::wire::{pid, ParameterList};

// ------------------------------------------------------------------ a raw byte builder

/// Builds a PL_CDR payload by hand, independently of the encoder under test.
struct Raw {
    v: Vec<u8>,
    le: bool,
}

impl Raw {
    fn new(le: bool) -> Self {
        Raw {
            v: vec![0, if le { 3 } else { 2 }, 0, 0],
            le,
        }
    }
    fn u16b(&self, x: u16) -> [u8; 2] {
        if self.le {
            x.to_le_bytes()
        } else {
            x.to_be_bytes()
        }
    }
    fn u32b(&self, x: u32) -> [u8; 4] {
        if self.le {
            x.to_le_bytes()
        } else {
            x.to_be_bytes()
        }
    }
    /// A parameter with an explicit (possibly lying) length field.
    fn param_len(mut self, p: u16, len: u16, value: &[u8]) -> Self {
        let (a, b) = (self.u16b(p), self.u16b(len));
        self.v.extend_from_slice(&a);
        self.v.extend_from_slice(&b);
        self.v.extend_from_slice(value);
        self
    }
    fn param(self, p: u16, value: &[u8]) -> Self {
        let mut val = value.to_vec();
        while val.len() % 4 != 0 {
            val.push(0);
        }
        let len = val.len() as u16;
        self.param_len(p, len, &val)
    }
    fn u32p(self, p: u16, x: u32) -> Self {
        let b = self.u32b(x);
        self.param(p, &b)
    }
    fn string(&self, s: &str) -> Vec<u8> {
        let mut v = self.u32b(s.len() as u32 + 1).to_vec();
        v.extend_from_slice(s.as_bytes());
        v.push(0);
        v
    }
    fn str_param(self, p: u16, s: &str) -> Self {
        let v = self.string(s);
        self.param(p, &v)
    }
    fn locator(self, p: u16, kind: u32, ip: [u8; 4], port: u32) -> Self {
        let mut v = self.u32b(kind).to_vec();
        v.extend_from_slice(&self.u32b(port));
        v.extend_from_slice(&[0; 12]);
        v.extend_from_slice(&ip);
        self.param(p, &v)
    }
    fn duration(self, p: u16, secs: u32, frac: u32) -> Self {
        let mut v = self.u32b(secs).to_vec();
        v.extend_from_slice(&self.u32b(frac));
        self.param(p, &v)
    }
    fn octets(self, p: u16, b: &[u8]) -> Self {
        let mut v = self.u32b(b.len() as u32).to_vec();
        v.extend_from_slice(b);
        self.param(p, &v)
    }
    fn finish(mut self) -> Vec<u8> {
        let s = self.u16b(pid::SENTINEL);
        self.v.extend_from_slice(&s);
        self.v.extend_from_slice(&[0, 0]);
        self.v
    }
}

const PREFIX: [u8; 12] = [
    0x01, 0x10, 0x07, 0xb8, 0xd4, 0x46, 0x09, 0x24, 0x80, 0x8f, 0x73, 0xf4,
];

fn participant_guid() -> [u8; 16] {
    let mut g = [0u8; 16];
    g[..12].copy_from_slice(&PREFIX);
    g[12..].copy_from_slice(&[0, 0, 1, 0xc1]);
    g
}

fn endpoint_guid(key: u32, kind: u8) -> Guid {
    Guid::new(GuidPrefix(PREFIX), EntityId::new(key, kind))
}

/// An SPDP sample shaped like Cyclone 0.10.2's, including vendor-specific parameters and a
/// Fast DDS shared-memory locator that must be kept (the runtime decides what it can reach).
fn cyclone_spdp(le: bool) -> Vec<u8> {
    Raw::new(le)
        .param(pid::PROTOCOL_VERSION, &[2, 1])
        .param(pid::VENDOR_ID, &[0x01, 0x10])
        .param(pid::PARTICIPANT_GUID, &participant_guid())
        .u32p(pid::BUILTIN_ENDPOINT_SET, 0x0000_0c3f)
        .u32p(pid::DOMAIN_ID, 0)
        .duration(pid::PARTICIPANT_LEASE_DURATION, 10, 0)
        .locator(pid::DEFAULT_UNICAST_LOCATOR, 1, [127, 0, 0, 1], 44123)
        .locator(pid::DEFAULT_UNICAST_LOCATOR, 16, [0, 0, 0, 0], 7777)
        .locator(pid::METATRAFFIC_UNICAST_LOCATOR, 1, [127, 0, 0, 1], 44123)
        .locator(pid::DEFAULT_MULTICAST_LOCATOR, 1, [239, 255, 0, 1], 7401)
        .locator(
            pid::METATRAFFIC_MULTICAST_LOCATOR,
            1,
            [239, 255, 0, 1],
            7400,
        )
        .octets(pid::USER_DATA, b"DDSPerf:0:1234:host")
        .param(0x8007, &[0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8]) // ADLINK participant version info
        .u32p(0x8019 | pid::MUST_UNDERSTAND, 0) // vendor-specific: skipped even with MU
        .str_param(pid::ENTITY_NAME, "ddsperf")
        .finish()
}

#[test]
fn decodes_cyclone_spdp_le_and_be() {
    for le in [true, false] {
        let d = SpdpParticipantData::decode(&cyclone_spdp(le)).unwrap();
        assert_eq!(d.guid_prefix, GuidPrefix(PREFIX));
        assert_eq!((d.protocol_version.major, d.protocol_version.minor), (2, 1));
        assert_eq!(d.vendor_id.0, [0x01, 0x10]);
        assert_eq!(d.domain_id, Some(0));
        assert_eq!(d.lease_duration, Duration::from_secs(10));
        assert!(d.builtin_endpoints.contains(
            BuiltinEndpointSet::PARTICIPANT_ANNOUNCER
                | BuiltinEndpointSet::PUBLICATIONS_DETECTOR
                | BuiltinEndpointSet::SUBSCRIPTIONS_ANNOUNCER
                | BuiltinEndpointSet::PARTICIPANT_MESSAGE_READER
        ));
        let shm = Locator {
            kind: locator_kind::FASTDDS_SHM,
            port: 7777,
            address: [0; 16],
        };
        assert_eq!(
            d.default_unicast_locators,
            vec![Locator::udpv4(Ipv4Addr::LOCALHOST, 44123), shm],
            "the SHM locator is kept, not dropped"
        );
        assert_eq!(
            d.metatraffic_multicast_locators,
            vec![Locator::udpv4(Ipv4Addr::new(239, 255, 0, 1), 7400)]
        );
        assert_eq!(
            d.default_multicast_locators,
            vec![Locator::udpv4(Ipv4Addr::new(239, 255, 0, 1), 7401)]
        );
        assert_eq!(d.user_data, b"DDSPerf:0:1234:host");
        assert_eq!(d.entity_name.as_deref(), Some("ddsperf"));
    }
}

#[test]
fn spdp_minimal_and_defaults() {
    let b = Raw::new(true)
        .param(pid::PARTICIPANT_GUID, &participant_guid())
        .u32p(pid::BUILTIN_ENDPOINT_SET, 0x3f)
        .finish();
    let d = SpdpParticipantData::decode(&b).unwrap();
    assert_eq!(d.lease_duration, DEFAULT_PARTICIPANT_LEASE);
    assert_eq!(d.domain_id, None);
    assert!(d.user_data.is_empty());
    assert!(d.default_unicast_locators.is_empty());
}

#[test]
fn spdp_required_parameters() {
    let no_guid = Raw::new(true)
        .u32p(pid::BUILTIN_ENDPOINT_SET, 0x3f)
        .finish();
    assert_eq!(
        SpdpParticipantData::decode(&no_guid),
        Err(DiscoveryDecodeError::MissingParameter(
            pid::PARTICIPANT_GUID
        ))
    );
    let no_set = Raw::new(true)
        .param(pid::PARTICIPANT_GUID, &participant_guid())
        .finish();
    assert_eq!(
        SpdpParticipantData::decode(&no_set),
        Err(DiscoveryDecodeError::MissingParameter(
            pid::BUILTIN_ENDPOINT_SET
        ))
    );
    let mut wrong = participant_guid();
    wrong[15] = 0x02;
    let wrong_entity = Raw::new(true)
        .param(pid::PARTICIPANT_GUID, &wrong)
        .u32p(pid::BUILTIN_ENDPOINT_SET, 0x3f)
        .finish();
    assert_eq!(
        SpdpParticipantData::decode(&wrong_entity),
        Err(DiscoveryDecodeError::InvalidParameter(
            pid::PARTICIPANT_GUID
        ))
    );
}

#[test]
fn spdp_round_trip() {
    let mut d = SpdpParticipantData::new(GuidPrefix([7; 12]));
    d.domain_id = Some(3);
    d.domain_tag = "tag".into();
    d.lease_duration = Duration::from_millis(12_345);
    d.default_unicast_locators = vec![Locator::udpv4(Ipv4Addr::new(10, 0, 0, 1), 7411)];
    d.metatraffic_unicast_locators = vec![Locator::udpv4(Ipv4Addr::new(10, 0, 0, 1), 7410)];
    d.default_multicast_locators = vec![Locator::udpv4(Ipv4Addr::new(239, 255, 0, 1), 7401)];
    d.metatraffic_multicast_locators = vec![Locator::udpv4(Ipv4Addr::new(239, 255, 0, 1), 7400)];
    d.user_data = b"DDSPerf:1:42:box".to_vec();
    d.entity_name = Some("tessera".into());
    let bytes = d.to_payload();
    assert_eq!(&bytes[..4], &[0, 3, 0, 0]);
    assert_eq!(SpdpParticipantData::decode(&bytes), Ok(d));
}

fn cyclone_sedp_writer_minimal(le: bool) -> Raw {
    let g = endpoint_guid(0x107, entity_kind::USER_WRITER_WITH_KEY);
    Raw::new(le)
        .param(pid::ENDPOINT_GUID, &g.to_bytes())
        .param(pid::PARTICIPANT_GUID, &participant_guid())
        .str_param(pid::TOPIC_NAME, "DDSPerfRPingKS")
        .str_param(pid::TYPE_NAME, "KeyedSeq")
}

#[test]
fn sedp_fills_writer_and_reader_defaults() {
    let w = DiscoveredWriterData::decode(&cyclone_sedp_writer_minimal(true).finish()).unwrap();
    assert_eq!(w.topic_name, "DDSPerfRPingKS");
    assert_eq!(w.type_name, "KeyedSeq");
    assert_eq!(w.qos, WriterSideQos::default());
    assert_eq!(
        w.qos.reliability,
        Reliability::reliable(Duration::from_millis(100))
    );
    assert_eq!(w.qos.durability, Durability::Volatile);
    assert_eq!(w.qos.history, History::KeepLast(1));
    assert!(w.qos.partition.0.is_empty());
    assert_eq!(w.qos.data_representation.0, vec![data_representation::XCDR]);

    let g = endpoint_guid(0x204, entity_kind::USER_READER_WITH_KEY);
    let r = Raw::new(false)
        .param(pid::ENDPOINT_GUID, &g.to_bytes())
        .str_param(pid::TOPIC_NAME, "DDSPerfRPongKS")
        .str_param(pid::TYPE_NAME, "KeyedSeq")
        .finish();
    let r = DiscoveredReaderData::decode(&r).unwrap();
    assert_eq!(r.qos.reliability.kind, ReliabilityKind::BestEffort);
    assert_eq!(r.qos, ReaderSideQos::default());
    assert_eq!(r.participant_guid, Guid::from_bytes(participant_guid()));
    assert!(!r.expects_inline_qos);
}

/// A ddsperf-style reliable KEEP_ALL data reader in a GUID-named partition, in both endiannesses.
#[test]
fn sedp_reader_with_full_qos() {
    for le in [true, false] {
        let g = endpoint_guid(0x304, entity_kind::USER_READER_WITH_KEY);
        let raw = Raw::new(le);
        let mut part = raw.u32b(2).to_vec();
        part.extend_from_slice(&raw.string("011007b8_d4460924_808f73f4_000001c1"));
        while part.len() % 4 != 0 {
            part.push(0);
        }
        part.extend_from_slice(&raw.string("x*"));
        let mut hist = raw.u32b(1).to_vec();
        hist.extend_from_slice(&raw.u32b(1));
        let mut limits = raw.u32b(10000).to_vec();
        limits.extend_from_slice(&raw.u32b(u32::MAX));
        limits.extend_from_slice(&raw.u32b(u32::MAX));
        let mut rel = raw.u32b(2).to_vec();
        rel.extend_from_slice(&raw.u32b(10));
        rel.extend_from_slice(&raw.u32b(0));
        let mut dr = raw.u32b(2).to_vec();
        dr.extend_from_slice(&raw.u16b(0));
        dr.extend_from_slice(&raw.u16b(2));
        let bytes = raw
            .param(pid::ENDPOINT_GUID, &g.to_bytes())
            .str_param(pid::TOPIC_NAME, "DDSPerfRDataKS")
            .str_param(pid::TYPE_NAME, "KeyedSeq")
            .param(pid::RELIABILITY, &rel)
            .u32p(pid::DURABILITY, 1)
            .param(pid::HISTORY, &hist)
            .param(pid::RESOURCE_LIMITS, &limits)
            .param(pid::PARTITION, &part)
            .param(pid::DATA_REPRESENTATION, &dr)
            .param(pid::TYPE_INFORMATION, &[1, 2, 3, 4, 5, 6, 7, 8])
            .locator(pid::UNICAST_LOCATOR, 1, [192, 168, 1, 2], 7411)
            .locator(pid::UNICAST_LOCATOR, 1, [192, 168, 1, 3], 7411)
            .locator(pid::MULTICAST_LOCATOR, 1, [239, 255, 0, 2], 7401)
            .param(pid::EXPECTS_INLINE_QOS, &[0])
            .param(0x0099, &[9, 9, 9, 9]) // unknown, not must-understand: skipped
            .finish();
        let r = DiscoveredReaderData::decode(&bytes).unwrap();
        assert_eq!(
            r.qos.reliability,
            Reliability::reliable(Duration::from_secs(10))
        );
        assert_eq!(r.qos.durability, Durability::TransientLocal);
        assert_eq!(r.qos.history, History::KeepAll);
        assert_eq!(
            r.qos.resource_limits,
            ResourceLimits {
                max_samples: Some(10000),
                max_instances: None,
                max_samples_per_instance: None
            }
        );
        assert_eq!(
            r.qos.partition.0,
            vec![
                "011007b8_d4460924_808f73f4_000001c1".to_string(),
                "x*".into()
            ]
        );
        assert_eq!(r.qos.data_representation.0, vec![0, 2]);
        assert_eq!(r.unicast_locators.len(), 2, "locators may repeat");
        assert_eq!(r.multicast_locators.len(), 1);
    }
}

#[test]
fn writer_and_reader_round_trip() {
    let g = endpoint_guid(0x12, entity_kind::USER_WRITER_NO_KEY);
    let qos = WriterSideQos::default()
        .with_reliability(Reliability::best_effort())
        .with_durability(Durability::TransientLocal)
        .with_deadline(Deadline {
            period: Duration::from_millis(250),
        })
        .with_latency_budget(LatencyBudget {
            duration: Duration::from_micros(3),
        })
        .with_ownership(Ownership::Exclusive)
        .with_liveliness(Liveliness {
            kind: LivelinessKind::ManualByTopic,
            lease_duration: Duration::from_secs(3),
        })
        .with_destination_order(DestinationOrder::BySourceTimestamp)
        .with_history(History::KeepLast(8))
        .with_resource_limits(ResourceLimits {
            max_samples: Some(100),
            max_instances: Some(10),
            max_samples_per_instance: Some(10),
        })
        .with_presentation(Presentation {
            access_scope: PresentationAccessScope::Group,
            coherent_access: true,
            ordered_access: true,
        })
        .with_partition(Partition::new(["a", "bb", "ccc", "dddd"]))
        .with_data_representation(DataRepresentation(vec![2, 0]));
    let mut w = DiscoveredWriterData::new(g, "T", "mod::Type").with_qos(qos);
    w.qos.durability_service = DurabilityService {
        service_cleanup_delay: Duration::from_secs(1),
        history: History::KeepAll,
        resource_limits: ResourceLimits {
            max_samples: Some(5),
            ..Default::default()
        },
    };
    w.qos.ownership_strength = OwnershipStrength(-3);
    w.qos.lifespan = Lifespan {
        duration: Duration::from_millis(1500),
    };
    w.qos.transport_priority = TransportPriority(9);
    w.qos.user_data = UserData(vec![1, 2, 3]);
    w.qos.topic_data = TopicData(vec![4]);
    w.qos.group_data = GroupData(vec![5, 6, 7, 8, 9]);
    w.unicast_locators = vec![Locator::udpv4(Ipv4Addr::new(1, 2, 3, 4), 5)];
    w.entity_name = Some("writer".into());
    assert_eq!(DiscoveredWriterData::decode(&w.to_payload()), Ok(w));

    let g = endpoint_guid(0x13, entity_kind::USER_READER_NO_KEY);
    let mut r = DiscoveredReaderData::new(g, "T", "mod::Type");
    r.qos.time_based_filter = TimeBasedFilter {
        minimum_separation: Duration::from_millis(5),
    };
    r.qos.type_consistency = TypeConsistencyEnforcement {
        kind: TypeConsistencyKind::DisallowTypeCoercion,
        ignore_member_names: true,
        ..Default::default()
    };
    r.qos.reliability = Reliability::reliable(INFINITE);
    r.expects_inline_qos = true;
    r.multicast_locators = vec![Locator::udpv4(Ipv4Addr::new(239, 1, 2, 3), 7401)];
    assert_eq!(DiscoveredReaderData::decode(&r.to_payload()), Ok(r));
}

#[test]
fn a_readers_loan_layout_and_flags_round_trip_and_a_foreign_use_of_its_pid_is_ignored() {
    let g = endpoint_guid(0x14, entity_kind::USER_READER_NO_KEY);
    let mut r = DiscoveredReaderData::new(g, "T", "Plain");
    r.loan_layout = 0x0123_4567_89ab_cdef;
    assert_eq!(DiscoveredReaderData::decode(&r.to_payload()), Ok(r.clone()));
    r.loan_layout = 0;
    assert_eq!(DiscoveredReaderData::decode(&r.to_payload()), Ok(r.clone()));
    // A reader that resolves references to serialized samples, with or without a layout.
    r.cdr_chunks = true;
    assert_eq!(DiscoveredReaderData::decode(&r.to_payload()), Ok(r.clone()));
    r.loan_layout = 7;
    assert_eq!(DiscoveredReaderData::decode(&r.to_payload()), Ok(r));

    for le in [true, false] {
        let reader = |value: &[u8]| {
            let raw = Raw::new(le)
                .param(pid::ENDPOINT_GUID, &g.to_bytes())
                .str_param(pid::TOPIC_NAME, "T")
                .str_param(pid::TYPE_NAME, "Plain");
            let value = value.to_vec();
            DiscoveredReaderData::decode(&raw.param(pid::TESSERA_LOAN_LAYOUT, &value).finish())
        };
        let raw = Raw::new(le);
        let mut ours = b"TSRL".to_vec();
        ours.extend_from_slice(&raw.u32b(0x89ab_cdef));
        ours.extend_from_slice(&raw.u32b(0x0123_4567));
        assert_eq!(reader(&ours).unwrap().loan_layout, 0x0123_4567_89ab_cdef);
        // A value from before the flags word: no flag set.
        assert!(!reader(&ours).unwrap().cdr_chunks);
        let mut flagged = ours.clone();
        flagged.extend_from_slice(&raw.u32b(1));
        let decoded = reader(&flagged).unwrap();
        assert_eq!(
            (decoded.loan_layout, decoded.cdr_chunks),
            (0x0123_4567_89ab_cdef, true)
        );
        flagged.truncate(12);
        flagged.extend_from_slice(&raw.u32b(2));
        assert!(
            !reader(&flagged).unwrap().cdr_chunks,
            "an unknown flag alone"
        );
        // Another vendor's parameter under the same pid, and a short one: the reader stays,
        // announcing no layout (it gets serialized samples).
        assert_eq!(
            reader(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12])
                .unwrap()
                .loan_layout,
            0
        );
        assert_eq!(reader(b"TSRL\x01\x02\x03\x04").unwrap().loan_layout, 0);
    }
}

#[test]
fn duplicated_and_lying_parameters_are_rejected() {
    use DiscoveryDecodeError as E;
    let dup = cyclone_sedp_writer_minimal(true)
        .str_param(pid::TOPIC_NAME, "again")
        .finish();
    assert_eq!(
        DiscoveredWriterData::decode(&dup),
        Err(E::DuplicateParameter(pid::TOPIC_NAME))
    );
    let dup_qos = cyclone_sedp_writer_minimal(true)
        .u32p(pid::DURABILITY, 0)
        .u32p(pid::DURABILITY, 1)
        .finish();
    assert_eq!(
        DiscoveredWriterData::decode(&dup_qos),
        Err(E::DuplicateParameter(pid::DURABILITY))
    );
    let dup_spdp = Raw::new(true)
        .param(pid::PARTICIPANT_GUID, &participant_guid())
        .u32p(pid::BUILTIN_ENDPOINT_SET, 0x3f)
        .octets(pid::USER_DATA, b"a")
        .octets(pid::USER_DATA, b"b")
        .finish();
    assert_eq!(
        SpdpParticipantData::decode(&dup_spdp),
        Err(E::DuplicateParameter(pid::USER_DATA))
    );
    let mu = cyclone_sedp_writer_minimal(true).u32p(0x4077, 0).finish();
    assert_eq!(
        DiscoveredWriterData::decode(&mu),
        Err(E::MustUnderstand(0x4077))
    );
    let missing_type = Raw::new(true)
        .param(pid::ENDPOINT_GUID, &endpoint_guid(1, 2).to_bytes())
        .str_param(pid::TOPIC_NAME, "t")
        .finish();
    assert_eq!(
        DiscoveredWriterData::decode(&missing_type),
        Err(E::MissingParameter(pid::TYPE_NAME))
    );
    // User data claims 1000 bytes inside a 8-byte parameter.
    let raw = Raw::new(true);
    let mut ud = raw.u32b(1000).to_vec();
    ud.extend_from_slice(b"abcd");
    let lying = cyclone_sedp_writer_minimal(true)
        .param(pid::USER_DATA, &ud)
        .finish();
    assert_eq!(
        DiscoveredWriterData::decode(&lying),
        Err(E::InvalidParameter(pid::USER_DATA))
    );
    // A million partitions.
    let huge = cyclone_sedp_writer_minimal(true)
        .u32p(pid::PARTITION, 1_000_000)
        .finish();
    assert_eq!(
        DiscoveredWriterData::decode(&huge),
        Err(E::TooLarge(pid::PARTITION))
    );
    // 200 partitions announced, none present.
    let short = cyclone_sedp_writer_minimal(true)
        .u32p(pid::PARTITION, 200)
        .finish();
    assert_eq!(
        DiscoveredWriterData::decode(&short),
        Err(E::InvalidParameter(pid::PARTITION))
    );
    // A string without its NUL.
    let mut s = raw.u32b(4).to_vec();
    s.extend_from_slice(b"abcd");
    let no_nul = Raw::new(true)
        .param(pid::ENDPOINT_GUID, &endpoint_guid(1, 2).to_bytes())
        .param(pid::TOPIC_NAME, &s)
        .str_param(pid::TYPE_NAME, "t")
        .finish();
    assert_eq!(
        DiscoveredWriterData::decode(&no_nul),
        Err(E::InvalidParameter(pid::TOPIC_NAME))
    );
    // Parameter length past the end.
    let past = cyclone_sedp_writer_minimal(true)
        .param_len(pid::USER_DATA, 64, &[0; 8])
        .finish();
    assert!(matches!(
        DiscoveredWriterData::decode(&past),
        Err(E::ParameterList(_))
    ));
    // Reliability kind out of range, keep-last depth 0, unknown encapsulation, truncation.
    let raw = Raw::new(true);
    let mut rel = raw.u32b(7).to_vec();
    rel.extend_from_slice(&[0; 8]);
    let bad_rel = cyclone_sedp_writer_minimal(true)
        .param(pid::RELIABILITY, &rel)
        .finish();
    assert_eq!(
        DiscoveredWriterData::decode(&bad_rel),
        Err(E::InvalidParameter(pid::RELIABILITY))
    );
    let bad_hist = cyclone_sedp_writer_minimal(true)
        .param(pid::HISTORY, &[0, 0, 0, 0, 0, 0, 0, 0])
        .finish();
    assert_eq!(
        DiscoveredWriterData::decode(&bad_hist),
        Err(E::InvalidParameter(pid::HISTORY))
    );
    let mut cdr = cyclone_sedp_writer_minimal(true).finish();
    cdr[1] = 1;
    assert_eq!(
        DiscoveredWriterData::decode(&cdr),
        Err(E::UnsupportedEncapsulation(1))
    );
    assert_eq!(DiscoveredWriterData::decode(&[0, 3]), Err(E::Truncated));
    // A reader GUID announced as a writer.
    let wrong_kind = Raw::new(true)
        .param(
            pid::ENDPOINT_GUID,
            &endpoint_guid(1, entity_kind::USER_READER_NO_KEY).to_bytes(),
        )
        .str_param(pid::TOPIC_NAME, "t")
        .str_param(pid::TYPE_NAME, "t")
        .finish();
    assert_eq!(
        DiscoveredWriterData::decode(&wrong_kind),
        Err(E::InvalidParameter(pid::ENDPOINT_GUID))
    );
    // Inconsistent QoS: keep-last 5 with 2 samples per instance.
    let raw = Raw::new(true);
    let mut hist = raw.u32b(0).to_vec();
    hist.extend_from_slice(&raw.u32b(5));
    let mut limits = raw.u32b(u32::MAX).to_vec();
    limits.extend_from_slice(&raw.u32b(u32::MAX));
    limits.extend_from_slice(&raw.u32b(2));
    let inconsistent = cyclone_sedp_writer_minimal(true)
        .param(pid::HISTORY, &hist)
        .param(pid::RESOURCE_LIMITS, &limits)
        .finish();
    assert!(matches!(
        DiscoveredWriterData::decode(&inconsistent),
        Err(E::InconsistentQos(_))
    ));
}

#[test]
fn locator_lists_are_bounded() {
    let mut raw = cyclone_sedp_writer_minimal(true);
    for i in 0..200u32 {
        raw = raw.locator(
            pid::UNICAST_LOCATOR,
            1,
            [10, 0, (i >> 8) as u8, i as u8],
            7411,
        );
    }
    let w = DiscoveredWriterData::decode(&raw.finish()).unwrap();
    assert_eq!(w.unicast_locators.len(), MAX_LOCATORS);
}

#[test]
fn infinite_durations_both_encodings() {
    // Cyclone's infinity has fraction 0xffffffff; the "spec" one 0x7fffffff nanoseconds.
    for frac in [0xffff_ffff, 0x7fff_ffff] {
        let raw = Raw::new(true);
        let mut v = raw.u32b(0).to_vec();
        v.extend_from_slice(&raw.u32b(0x7fff_ffff));
        v.extend_from_slice(&raw.u32b(frac));
        let b = cyclone_sedp_writer_minimal(true)
            .param(pid::LIVELINESS, &v)
            .finish();
        let w = DiscoveredWriterData::decode(&b).unwrap();
        assert_eq!(w.qos.liveliness.lease_duration, INFINITE);
    }
}

#[test]
fn dispose_forms() {
    let g = endpoint_guid(0x107, entity_kind::USER_WRITER_WITH_KEY);
    let mut q = Vec::new();
    encode_dispose_inline_qos(g, StatusInfo::DISPOSED_UNREGISTERED, &mut q);
    let mut k = Vec::new();
    encode_dispose_key_payload(BuiltinTopicKind::Endpoint, g, &mut k);
    let ql = ParameterList::parse(&q, true).unwrap();
    let (guid, st) = decode_dispose(BuiltinTopicKind::Endpoint, Some(&ql), &k).unwrap();
    assert_eq!(guid, g);
    assert!(st.is_disposed() && st.is_unregistered() && st.ends_instance());
    // Key hash only, no payload.
    let (guid, _) = decode_dispose(BuiltinTopicKind::Endpoint, Some(&ql), &[]).unwrap();
    assert_eq!(guid, g);
    // Participant dispose with a key payload in big-endian and no inline QoS.
    let pg = Guid::from_bytes(participant_guid());
    let be = Raw::new(false)
        .param(pid::PARTICIPANT_GUID, &pg.to_bytes())
        .finish();
    let (guid, st) = decode_dispose(BuiltinTopicKind::Participant, None, &be).unwrap();
    assert_eq!(guid, pg);
    assert!(!st.ends_instance());
    // A full SEDP sample also yields its key.
    let full = cyclone_sedp_writer_minimal(true).finish();
    let (guid, _) = decode_dispose(BuiltinTopicKind::Endpoint, None, &full).unwrap();
    assert_eq!(
        guid.entity_id,
        EntityId::new(0x107, entity_kind::USER_WRITER_WITH_KEY)
    );
    // Nothing to go on.
    assert_eq!(
        decode_dispose(BuiltinTopicKind::Endpoint, None, &[]),
        Err(DiscoveryDecodeError::MissingParameter(pid::ENDPOINT_GUID))
    );
    // Unregister-only status from a hand-built inline QoS.
    let raw = [0x71, 0x00, 0x04, 0x00, 0, 0, 0, 2, 0x01, 0x00, 0x00, 0x00];
    let ql = ParameterList::parse(&raw, true).unwrap();
    let st = StatusInfo::from_inline_qos(&ql).unwrap();
    assert!(st.is_unregistered() && !st.is_disposed());
}

// ------------------------------------------------------------------ real Cyclone bytes

/// Payloads captured from Debian's Cyclone DDS 0.10.2 `ddsperf ping` on loopback (SPDP; the
/// DDSPerfRDataKS writer; the DDSPerfRPongKS reader in its own-GUID partition). They include
/// PID_PROPERTY_LIST, PID_TYPE_INFORMATION and vendor-specific parameters that must be skipped.
const CYCLONE_SPDP: &[&str] = &[
    "000300002c00180011000000444453506572663a303a343133353a766d00000059005800030000000e0000005f5f5072",
    "6f636573734e616d65000000080000006464737065726600060000005f5f506964000000050000003431333500000000",
    "0b0000005f5f486f73746e616d65000003000000766d0000000000001500040002010000160004000110000002000800",
    "0a00000000000000500010000110cd3fe670d22cee1d3450000001c1580004003ffc00000f0004000000000031001800",
    "01000000c7d200000000000000000000000000007f0000014800180001000000e91c0000000000000000000000000000",
    "efff00013200180001000000c7d200000000000000000000000000007f0000013300180001000000e81c000000000000",
    "0000000000000000efff000107803000000000002c00000000000000000000000000000016000000766d2f302e31302e",
    "322f4c696e75782f4c696e7578000000198004000000200001000000",
];
const CYCLONE_DATA_WRITER: &[&str] = &[
    "00030000050014000f0000004444535065726652446174614b53000007001000090000004b6579656453657100000000",
    "1a000c00020000000a0000000000000040000800010000000100000041000c0010270000ffffffffffffffff73000800",
    "0200000000000200750064006000000001100040280000002400000014000000f1fa0413693f17171633962dcd81a200",
    "4c00000000000000040000000000000002100040280000002400000014000000f2c6e6285a68c8f6cd7c4203c46cb200",
    "7a000000000000000400000000000000150004000201000016000400011000005a0010000110cd3fe670d22cee1d3450",
    "00000b020c8004000100000001000000",
];
const CYCLONE_PONG_READER: &[&str] = &[
    "00030000050014000f0000004444535065726652506f6e674b53000007001000090000004b6579656453657100000000",
    "1a000c00020000000a0000000000000040000800010000000100000041000c0010270000ffffffffffffffff29002c00",
    "010000002400000030313130636433665f65363730643232635f65653164333435305f30303030303163310073000800",
    "0200000000000200750064006000000001100040280000002400000014000000f1fa0413693f17171633962dcd81a200",
    "4c00000000000000040000000000000002100040280000002400000014000000f2c6e6285a68c8f6cd7c4203c46cb200",
    "7a000000000000000400000000000000150004000201000016000400011000005a0010000110cd3fe670d22cee1d3450",
    "00000c070c8004000100000001000000",
];

fn unhex(parts: &[&str]) -> Vec<u8> {
    let s: String = parts.concat();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

#[test]
fn decodes_captured_cyclone_payloads() {
    let p = SpdpParticipantData::decode(&unhex(CYCLONE_SPDP)).unwrap();
    assert_eq!(p.vendor_id.0, [0x01, 0x10]);
    assert_eq!(p.lease_duration, Duration::from_secs(10));
    assert_eq!(p.domain_id, Some(0));
    assert!(p.user_data.starts_with(b"DDSPerf:0:"));
    assert!(p.builtin_endpoints.contains(0x3f | 0xc00));
    assert_eq!(
        p.default_multicast_locators,
        vec![Locator::udpv4(Ipv4Addr::new(239, 255, 0, 1), 7401)]
    );
    assert_eq!(p.metatraffic_unicast_locators.len(), 1);

    let w = DiscoveredWriterData::decode(&unhex(CYCLONE_DATA_WRITER)).unwrap();
    assert_eq!(w.guid.prefix, p.guid_prefix);
    assert_eq!(w.topic_name, "DDSPerfRDataKS");
    assert_eq!(w.type_name, "KeyedSeq");
    assert_eq!(
        w.qos.reliability,
        Reliability::reliable(Duration::from_secs(10))
    );
    assert_eq!(w.qos.history, History::KeepAll);
    assert_eq!(w.qos.resource_limits.max_samples, Some(10000));
    assert_eq!(w.qos.data_representation.0, vec![0, 2]);
    assert!(w.unicast_locators.is_empty());
    // Cyclone 0.10.2's TypeInformation for KeyedSeq decodes (and re-encodes to the same bytes).
    let ti = w.type_information.as_ref().expect("type information");
    assert!(!w.type_information_rejected);
    assert_eq!(ti.minimal.typeid_with_size.size, 0x4c);
    assert_eq!(ti.complete.typeid_with_size.size, 0x7a);
    assert_eq!(
        ti.minimal.typeid_with_size.type_id.to_bytes(),
        unhex(&["f1fa0413693f17171633962dcd81a2"])
    );
    let again = DiscoveredWriterData::decode(&w.to_payload()).unwrap();
    assert_eq!(again.type_information, w.type_information);

    let r = DiscoveredReaderData::decode(&unhex(CYCLONE_PONG_READER)).unwrap();
    assert_eq!(r.topic_name, "DDSPerfRPongKS");
    let own = Guid::new(p.guid_prefix, EntityId::PARTICIPANT).to_partition_string();
    assert_eq!(r.qos.partition.0, vec![own.clone()]);
    assert_eq!(r.qos.reliability.kind, ReliabilityKind::Reliable);

    // Tessera's default reader takes Cyclone's data writer; a Tessera pong writer in the
    // partition named after the Cyclone participant matches Cyclone's pong reader.
    let ours = DiscoveredReaderData::new(
        Guid::new(
            GuidPrefix([9; 12]),
            EntityId::new(1, entity_kind::USER_READER_WITH_KEY),
        ),
        "DDSPerfRDataKS",
        "KeyedSeq",
    );
    assert_eq!(evaluate_match(&w, &ours), MatchOutcome::Match);
    let mut pong = DiscoveredWriterData::new(
        Guid::new(
            GuidPrefix([9; 12]),
            EntityId::new(2, entity_kind::USER_WRITER_WITH_KEY),
        ),
        "DDSPerfRPongKS",
        "KeyedSeq",
    );
    pong.qos.reliability = Reliability::reliable(Duration::from_secs(10));
    assert_eq!(
        evaluate_match(&pong, &r),
        MatchOutcome::NoMatch(NoMatchReason::Partition)
    );
    pong.qos.partition = Partition::new([own]);
    assert_eq!(evaluate_match(&pong, &r), MatchOutcome::Match);
}

// ------------------------------------------------------------------ property tests

fn arb_duration() -> impl Strategy<Value = Duration> {
    prop_oneof![
        Just(INFINITE),
        (0u64..0x7fff_fffe, 0u32..1_000_000_000).prop_map(|(s, n)| Duration::new(s, n)),
    ]
}

fn arb_locator() -> impl Strategy<Value = Locator> {
    (any::<[u8; 4]>(), any::<u16>()).prop_map(|(ip, port)| Locator::udpv4(Ipv4Addr::from(ip), port))
}

fn arb_name() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9_*?/:]{0,40}"
}

prop_compose! {
    fn arb_writer()(
        key in 0u32..0xffffff,
        keyed in any::<bool>(),
        topic in arb_name(),
        ty in arb_name(),
        reliable in any::<bool>(),
        mbt in arb_duration(),
        durability in 0usize..4,
        deadline in arb_duration(),
        lease in arb_duration(),
        depth in proptest::option::of(1u32..1000),
        partition in proptest::collection::vec(arb_name(), 0..5),
        user_data in proptest::collection::vec(any::<u8>(), 0..64),
        dr in proptest::collection::vec(0i16..3, 0..4),
        uni in proptest::collection::vec(arb_locator(), 0..4),
        multi in proptest::collection::vec(arb_locator(), 0..2),
    ) -> DiscoveredWriterData {
        let kind = if keyed { entity_kind::USER_WRITER_WITH_KEY } else { entity_kind::USER_WRITER_NO_KEY };
        let mut w = DiscoveredWriterData::new(
            Guid::new(GuidPrefix([3; 12]), EntityId::new(key, kind)), topic, ty);
        w.qos.reliability = Reliability {
            kind: if reliable { ReliabilityKind::Reliable } else { ReliabilityKind::BestEffort },
            max_blocking_time: mbt,
        };
        w.qos.durability = [Durability::Volatile, Durability::TransientLocal,
            Durability::Transient, Durability::Persistent][durability];
        w.qos.deadline = Deadline { period: deadline };
        w.qos.liveliness.lease_duration = lease;
        w.qos.history = depth.map_or(History::KeepAll, History::KeepLast);
        w.qos.partition = Partition(partition);
        w.qos.user_data = UserData(user_data);
        w.qos.data_representation = DataRepresentation(dr);
        let dedup = |v: Vec<Locator>| {
            let mut out: Vec<Locator> = Vec::new();
            for l in v { if !out.contains(&l) { out.push(l) } }
            out
        };
        w.unicast_locators = dedup(uni);
        w.multicast_locators = dedup(multi);
        w
    }
}

proptest! {
    #[test]
    fn writer_round_trips(w in arb_writer()) {
        prop_assert_eq!(DiscoveredWriterData::decode(&w.to_payload()), Ok(w));
    }

    #[test]
    fn reader_round_trips(w in arb_writer(), expects in any::<bool>(), tbf in 0u64..1000) {
        let kind = if w.guid.entity_id.is_keyed() {
            entity_kind::USER_READER_WITH_KEY
        } else {
            entity_kind::USER_READER_NO_KEY
        };
        let mut r = DiscoveredReaderData::new(
            Guid::new(w.guid.prefix, EntityId::new(5, kind)), w.topic_name, w.type_name);
        r.qos.reliability = w.qos.reliability;
        r.qos.partition = w.qos.partition;
        r.qos.history = w.qos.history;
        r.qos.deadline = Deadline { period: INFINITE };
        r.qos.time_based_filter = TimeBasedFilter { minimum_separation: Duration::from_millis(tbf) };
        r.expects_inline_qos = expects;
        r.unicast_locators = w.unicast_locators;
        prop_assert_eq!(DiscoveredReaderData::decode(&r.to_payload()), Ok(r));
    }

    #[test]
    fn spdp_round_trips(
        prefix in any::<[u8; 12]>(),
        lease in arb_duration(),
        set in any::<u32>(),
        ud in proptest::collection::vec(any::<u8>(), 0..100),
        uni in proptest::collection::vec(arb_locator(), 0..4),
        name in proptest::option::of(arb_name()),
        domain in proptest::option::of(0u32..232),
    ) {
        let mut d = SpdpParticipantData::new(GuidPrefix(prefix));
        d.lease_duration = lease;
        d.builtin_endpoints = BuiltinEndpointSet(set);
        d.user_data = ud;
        let mut seen: Vec<Locator> = Vec::new();
        for l in uni { if !seen.contains(&l) { seen.push(l) } }
        d.default_unicast_locators = seen;
        d.entity_name = name;
        d.domain_id = domain;
        prop_assert_eq!(SpdpParticipantData::decode(&d.to_payload()), Ok(d));
    }

    /// Arbitrary bytes never panic any decoder.
    #[test]
    fn garbage_never_panics(mut bytes in proptest::collection::vec(any::<u8>(), 0..512), le in any::<bool>()) {
        if bytes.len() >= 2 {
            bytes[0] = 0;
            bytes[1] = if le { 3 } else { 2 };
        }
        let _ = SpdpParticipantData::decode(&bytes);
        let _ = DiscoveredWriterData::decode(&bytes);
        let _ = DiscoveredReaderData::decode(&bytes);
        let _ = decode_dispose(BuiltinTopicKind::Endpoint, None, &bytes);
    }

    /// Corrupting bytes of valid payloads never panics either.
    #[test]
    fn mutations_never_panic(
        w in arb_writer(),
        flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
    ) {
        let mut bytes = w.to_payload();
        let mut spdp = cyclone_spdp(true);
        for (i, b) in &flips {
            let n = bytes.len();
            bytes[i.index(n)] = *b;
            let n = spdp.len();
            spdp[i.index(n)] = *b;
        }
        let _ = DiscoveredWriterData::decode(&bytes);
        let _ = DiscoveredReaderData::decode(&bytes);
        let _ = SpdpParticipantData::decode(&spdp);
    }
}

// ------------------------------------------------------------------ content filters

/// PID_CONTENT_FILTER_PROPERTY built by hand: four strings and a string sequence, each
/// string 4-aligned from the value's start.
fn content_filter_value(raw: &Raw, params: &[&str]) -> Vec<u8> {
    let mut v = Vec::new();
    let pad = |v: &mut Vec<u8>| {
        while v.len() % 4 != 0 {
            v.push(0);
        }
    };
    for s in ["cft_a", "Square", "DDSSQL", "x > %0 AND color = 'RED'"] {
        v.extend_from_slice(&raw.string(s));
        pad(&mut v);
    }
    v.extend_from_slice(&raw.u32b(params.len() as u32));
    for p in params {
        v.extend_from_slice(&raw.string(p));
        pad(&mut v);
    }
    v
}

fn reader_with_filter(le: bool, value: impl FnOnce(&Raw) -> Vec<u8>) -> Vec<u8> {
    let g = endpoint_guid(0x207, entity_kind::USER_READER_WITH_KEY);
    let raw = Raw::new(le)
        .param(pid::ENDPOINT_GUID, &g.to_bytes())
        .str_param(pid::TOPIC_NAME, "Square")
        .str_param(pid::TYPE_NAME, "ShapeType");
    let v = value(&raw);
    raw.param(pid::CONTENT_FILTER_PROPERTY, &v).finish()
}

#[test]
fn content_filter_property_both_byte_orders_and_round_trip() {
    for le in [true, false] {
        let bytes = reader_with_filter(le, |r| content_filter_value(r, &["10", "'x'"]));
        let d = DiscoveredReaderData::decode(&bytes).unwrap();
        let cf = d.content_filter.clone().expect("filter decoded");
        assert_eq!(cf.content_filtered_topic_name, "cft_a");
        assert_eq!(cf.related_topic_name, "Square");
        assert_eq!(cf.filter_class_name, "DDSSQL");
        assert_eq!(cf.filter_expression, "x > %0 AND color = 'RED'");
        assert_eq!(cf.expression_parameters, ["10", "'x'"]);
        // Ours encodes little-endian with the same layout.
        let again = DiscoveredReaderData::decode(&d.to_payload()).unwrap();
        assert_eq!(again.content_filter, Some(cf));
        if le {
            let ours = d.to_payload();
            let theirs = content_filter_value(&Raw::new(true), &["10", "'x'"]);
            assert!(
                ours.windows(theirs.len()).any(|w| w == theirs.as_slice()),
                "our value is laid out as the hand-built one"
            );
        }
    }
    let none = reader_with_filter(true, |r| content_filter_value(r, &[]));
    let d = DiscoveredReaderData::decode(&none).unwrap();
    assert_eq!(d.content_filter.unwrap().expression_parameters.len(), 0);
}

#[test]
fn malformed_content_filter_is_ignored_not_the_reader() {
    let cases: [fn(&Raw) -> Vec<u8>; 3] = [
        // a string whose length runs past the value
        |r: &Raw| {
            let mut v = r.u32b(1000).to_vec();
            v.extend_from_slice(b"abc\0");
            v
        },
        // too many parameters
        |r: &Raw| {
            let mut v = content_filter_value(r, &[]);
            let n = v.len() - 4;
            v[n..].copy_from_slice(&r.u32b(1_000_000));
            v
        },
        // truncated before the parameter count
        |r: &Raw| r.string("only one"),
    ];
    for (i, c) in cases.into_iter().enumerate() {
        let bytes = reader_with_filter(true, c);
        let d = DiscoveredReaderData::decode(&bytes).unwrap_or_else(|e| panic!("case {i}: {e}"));
        assert_eq!(d.content_filter, None, "case {i}");
        assert_eq!(d.topic_name, "Square");
    }
}
