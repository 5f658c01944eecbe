//! SEDP writer and reader data: defaults filled in, a reader with full QoS, round trips, loan
//! layouts and both encodings of an infinite duration.

use super::{cyclone_sedp_writer_minimal, endpoint_guid, participant_guid, Raw};
use std::net::Ipv4Addr;
use std::time::Duration;

use tessera_rtps::discovery::*;
use tessera_rtps::qos::*;
use tessera_rtps::types::{entity_kind, Guid, Locator};
use tessera_rtps::wire::pid;

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
