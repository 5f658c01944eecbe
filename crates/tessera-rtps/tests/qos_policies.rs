//! QoS defaults, consistency rules, request/offered compatibility and partition matching.

use std::time::Duration;

use tessera_rtps::qos::*;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

#[test]
fn spec_defaults() {
    let w = DataWriterQos::default();
    assert_eq!(w.reliability.kind, ReliabilityKind::Reliable);
    assert_eq!(w.reliability.max_blocking_time, ms(100));
    assert_eq!(w.durability, Durability::Volatile);
    assert_eq!(w.history, History::KeepLast(1));
    assert_eq!(w.resource_limits, ResourceLimits::UNLIMITED);
    assert_eq!(w.deadline.period, INFINITE);
    assert_eq!(w.latency_budget.duration, Duration::ZERO);
    assert_eq!(w.liveliness.kind, LivelinessKind::Automatic);
    assert_eq!(w.liveliness.lease_duration, INFINITE);
    assert_eq!(w.lifespan.duration, INFINITE);
    assert_eq!(w.ownership, Ownership::Shared);
    assert_eq!(w.ownership_strength, OwnershipStrength(0));
    assert_eq!(w.destination_order, DestinationOrder::ByReceptionTimestamp);
    assert_eq!(w.data_representation.0, vec![data_representation::XCDR]);
    assert!(w.writer_data_lifecycle.autodispose_unregistered_instances);

    let r = DataReaderQos::default();
    assert_eq!(r.reliability.kind, ReliabilityKind::BestEffort);
    assert_eq!(r.history, History::KeepLast(1));
    assert_eq!(r.time_based_filter.minimum_separation, Duration::ZERO);
    assert_eq!(
        r.reader_data_lifecycle.autopurge_disposed_samples_delay,
        INFINITE
    );
    assert_eq!(
        r.type_consistency.kind,
        TypeConsistencyKind::AllowTypeCoercion
    );

    assert_eq!(
        TopicQos::default().reliability.kind,
        ReliabilityKind::BestEffort
    );
    let p = PublisherQos::default();
    assert!(p.partition.is_default());
    assert_eq!(
        p.presentation.access_scope,
        PresentationAccessScope::Instance
    );
    assert!(p.entity_factory.autoenable_created_entities);
    assert!(DomainParticipantQos::default().user_data.0.is_empty());

    assert_eq!(
        WriterSideQos::default().reliability,
        Reliability::WRITER_DEFAULT
    );
    assert_eq!(
        ReaderSideQos::default().reliability,
        Reliability::READER_DEFAULT
    );
    for q in [
        DataWriterQos::default().check_consistency(),
        DataReaderQos::default().check_consistency(),
        TopicQos::default().check_consistency(),
        PublisherQos::default().check_consistency(),
        SubscriberQos::default().check_consistency(),
        DomainParticipantQos::default().check_consistency(),
        WriterSideQos::default().check_consistency(),
        ReaderSideQos::default().check_consistency(),
    ] {
        assert_eq!(q, Ok(()));
    }
}

#[test]
fn policy_ids_follow_the_spec() {
    assert_eq!(QosPolicyId::UserData.id(), 1);
    assert_eq!(QosPolicyId::Durability.id(), 2);
    assert_eq!(QosPolicyId::Presentation.id(), 3);
    assert_eq!(QosPolicyId::Deadline.id(), 4);
    assert_eq!(QosPolicyId::LatencyBudget.id(), 5);
    assert_eq!(QosPolicyId::Ownership.id(), 6);
    assert_eq!(QosPolicyId::Liveliness.id(), 8);
    assert_eq!(QosPolicyId::Partition.id(), 10);
    assert_eq!(QosPolicyId::Reliability.id(), 11);
    assert_eq!(QosPolicyId::DestinationOrder.id(), 12);
    assert_eq!(QosPolicyId::History.id(), 13);
    assert_eq!(QosPolicyId::ResourceLimits.id(), 14);
    assert_eq!(QosPolicyId::DurabilityService.id(), 22);
    assert_eq!(QosPolicyId::DataRepresentation.id(), 23);
    assert_eq!(QosPolicyId::TypeConsistencyEnforcement.id(), 24);
}

#[test]
fn builders_and_topic_copy() {
    let t = TopicQos::default()
        .with_durability(Durability::TransientLocal)
        .with_reliability(Reliability::reliable(Duration::from_secs(10)))
        .with_history(History::KeepAll);
    let w = DataWriterQos::from_topic(&t).with_ownership_strength(OwnershipStrength(5));
    assert_eq!(w.durability, Durability::TransientLocal);
    assert_eq!(w.reliability.max_blocking_time, Duration::from_secs(10));
    assert_eq!(w.history, History::KeepAll);
    assert_eq!(w.ownership_strength.0, 5);
    let r = DataReaderQos::from_topic(&t);
    assert_eq!(r.reliability.kind, ReliabilityKind::Reliable);
    let pubq = PublisherQos::default().with_partition(Partition::new(["a", "b*"]));
    let side = WriterSideQos::new(&t, &pubq, &w);
    assert_eq!(side.partition.0, vec!["a".to_string(), "b*".to_string()]);
    assert_eq!(side.durability, Durability::TransientLocal);
}

#[test]
fn consistency_rules() {
    let limits = |s, i, p| ResourceLimits {
        max_samples: s,
        max_instances: i,
        max_samples_per_instance: p,
    };
    let w = DataWriterQos::default()
        .with_history(History::KeepLast(5))
        .with_resource_limits(limits(None, None, Some(2)));
    let e = w.check_consistency().unwrap_err();
    assert_eq!(
        e,
        InconsistentQos::HistoryDepthExceedsLimit {
            depth: 5,
            max_samples_per_instance: 2
        }
    );
    assert_eq!(e.policy(), QosPolicyId::History);

    let w = DataWriterQos::default().with_history(History::KeepLast(0));
    assert_eq!(
        w.check_consistency(),
        Err(InconsistentQos::HistoryDepthZero)
    );

    let r = DataReaderQos::default()
        .with_history(History::KeepAll)
        .with_resource_limits(limits(Some(3), None, Some(10)));
    let e = r.check_consistency().unwrap_err();
    assert_eq!(
        e,
        InconsistentQos::MaxSamplesBelowPerInstance {
            max_samples: 3,
            max_samples_per_instance: 10
        }
    );
    assert_eq!(e.policy(), QosPolicyId::ResourceLimits);

    let r = DataReaderQos::default().with_resource_limits(limits(Some(0), None, None));
    assert_eq!(
        r.check_consistency(),
        Err(InconsistentQos::ResourceLimitZero)
    );

    // KEEP_ALL ignores depth; limits fine.
    let r = DataReaderQos::default()
        .with_history(History::KeepAll)
        .with_resource_limits(limits(Some(10000), None, None));
    assert_eq!(r.check_consistency(), Ok(()));

    let r = DataReaderQos::default()
        .with_deadline(Deadline { period: ms(10) })
        .with_time_based_filter(TimeBasedFilter {
            minimum_separation: ms(20),
        });
    let e = r.check_consistency().unwrap_err();
    assert_eq!(e, InconsistentQos::DeadlineBelowMinimumSeparation);
    assert_eq!(e.policy(), QosPolicyId::Deadline);
    let ok = r.with_deadline(Deadline { period: ms(20) });
    assert_eq!(ok.check_consistency(), Ok(()));

    let w = DataWriterQos::default().with_durability_service(DurabilityService {
        history: History::KeepLast(0),
        ..Default::default()
    });
    assert_eq!(
        w.check_consistency().map_err(|e| e.policy()),
        Err(QosPolicyId::DurabilityService)
    );
    let p = PublisherQos::default().with_partition(Partition::new(["a\0b"]));
    assert_eq!(p.check_consistency(), Err(InconsistentQos::PartitionName));
}

#[test]
fn defaults_are_compatible() {
    assert_eq!(
        check_compatibility(&WriterSideQos::default(), &ReaderSideQos::default()),
        Ok(())
    );
}

#[test]
fn reliability_and_durability_order() {
    let be_writer = WriterSideQos::default().with_reliability(Reliability::best_effort());
    let rel_reader = ReaderSideQos::default().with_reliability(Reliability::reliable(ms(1)));
    assert_eq!(
        check_compatibility(&be_writer, &rel_reader),
        Err(vec![QosPolicyId::Reliability])
    );
    // A reliable writer serves a best-effort reader.
    assert_eq!(
        check_compatibility(&WriterSideQos::default(), &ReaderSideQos::default()),
        Ok(())
    );
    let kinds = [
        Durability::Volatile,
        Durability::TransientLocal,
        Durability::Transient,
        Durability::Persistent,
    ];
    for (i, o) in kinds.iter().enumerate() {
        for (j, r) in kinds.iter().enumerate() {
            let res = check_compatibility(
                &WriterSideQos::default().with_durability(*o),
                &ReaderSideQos::default().with_durability(*r),
            );
            assert_eq!(res.is_ok(), i >= j, "{o:?} vs {r:?}");
        }
    }
}

#[test]
fn every_incompatible_policy_is_listed() {
    let w = WriterSideQos::default()
        .with_reliability(Reliability::best_effort())
        .with_presentation(Presentation {
            access_scope: PresentationAccessScope::Instance,
            coherent_access: false,
            ordered_access: false,
        })
        .with_deadline(Deadline { period: ms(200) })
        .with_latency_budget(LatencyBudget { duration: ms(50) })
        .with_ownership(Ownership::Exclusive)
        .with_liveliness(Liveliness {
            kind: LivelinessKind::Automatic,
            lease_duration: Duration::from_secs(10),
        })
        .with_data_representation(DataRepresentation(vec![data_representation::XCDR2]));
    let r = ReaderSideQos::default()
        .with_reliability(Reliability::reliable(ms(100)))
        .with_durability(Durability::TransientLocal)
        .with_presentation(Presentation {
            access_scope: PresentationAccessScope::Topic,
            coherent_access: true,
            ordered_access: false,
        })
        .with_deadline(Deadline { period: ms(100) })
        .with_latency_budget(LatencyBudget { duration: ms(10) })
        .with_liveliness(Liveliness {
            kind: LivelinessKind::ManualByParticipant,
            lease_duration: Duration::from_secs(5),
        })
        .with_destination_order(DestinationOrder::BySourceTimestamp);
    assert_eq!(
        check_compatibility(&w, &r),
        Err(vec![
            QosPolicyId::Reliability,
            QosPolicyId::Durability,
            QosPolicyId::Presentation,
            QosPolicyId::Deadline,
            QosPolicyId::LatencyBudget,
            QosPolicyId::Ownership,
            QosPolicyId::Liveliness,
            QosPolicyId::DestinationOrder,
            QosPolicyId::DataRepresentation,
        ])
    );
}

#[test]
fn finer_rules() {
    // Deadline: offered period must be <= requested; infinite offered fails a finite request.
    let r = ReaderSideQos::default().with_deadline(Deadline { period: ms(100) });
    assert!(check_compatibility(&WriterSideQos::default(), &r).is_err());
    let w = WriterSideQos::default().with_deadline(Deadline { period: ms(100) });
    assert!(check_compatibility(&w, &r).is_ok());
    // Liveliness: a stronger kind with a shorter lease satisfies the reader.
    let w = WriterSideQos::default().with_liveliness(Liveliness {
        kind: LivelinessKind::ManualByTopic,
        lease_duration: ms(500),
    });
    let r = ReaderSideQos::default().with_liveliness(Liveliness {
        kind: LivelinessKind::ManualByParticipant,
        lease_duration: ms(1000),
    });
    assert!(check_compatibility(&w, &r).is_ok());
    // Presentation: group scope with ordered access satisfies a topic-scope ordered request.
    let w = WriterSideQos::default().with_presentation(Presentation {
        access_scope: PresentationAccessScope::Group,
        coherent_access: false,
        ordered_access: true,
    });
    let r = ReaderSideQos::default().with_presentation(Presentation {
        access_scope: PresentationAccessScope::Topic,
        coherent_access: false,
        ordered_access: true,
    });
    assert!(check_compatibility(&w, &r).is_ok());
    // Ownership: exclusive reader, shared writer.
    let r = ReaderSideQos::default().with_ownership(Ownership::Exclusive);
    assert_eq!(
        check_compatibility(&WriterSideQos::default(), &r),
        Err(vec![QosPolicyId::Ownership])
    );
}

#[test]
fn data_representation_uses_the_writers_first_id() {
    let xcdr2_first =
        DataRepresentation(vec![data_representation::XCDR2, data_representation::XCDR]);
    let w = WriterSideQos::default().with_data_representation(xcdr2_first.clone());
    // Default reader accepts only XCDR.
    assert_eq!(
        check_compatibility(&w, &ReaderSideQos::default()),
        Err(vec![QosPolicyId::DataRepresentation])
    );
    let r = ReaderSideQos::default().with_data_representation(DataRepresentation(vec![
        data_representation::XCDR,
        data_representation::XCDR2,
    ]));
    assert_eq!(check_compatibility(&w, &r), Ok(()));
    // Empty lists mean XCDR on both sides.
    let w = WriterSideQos::default().with_data_representation(DataRepresentation(vec![]));
    let r = ReaderSideQos::default().with_data_representation(DataRepresentation(vec![]));
    assert_eq!(check_compatibility(&w, &r), Ok(()));
}

fn p(names: &[&str]) -> Vec<String> {
    names.iter().map(|s| s.to_string()).collect()
}

#[test]
fn partitions() {
    assert!(partitions_match(&[], &[]));
    assert!(partitions_match(&[], &p(&[""])));
    assert!(partitions_match(&p(&[""]), &[]));
    assert!(!partitions_match(&p(&["a"]), &[]));
    assert!(partitions_match(&p(&["a", "b"]), &p(&["c", "b"])));
    assert!(!partitions_match(&p(&["a", "b"]), &p(&["c", "d"])));
    // Wildcards on either side.
    assert!(partitions_match(&p(&["sensors/*"]), &p(&["sensors/temp"])));
    assert!(partitions_match(&p(&["sensors/temp"]), &p(&["sensors/*"])));
    assert!(partitions_match(&p(&["room?"]), &p(&["room1"])));
    assert!(!partitions_match(&p(&["room?"]), &p(&["room12"])));
    assert!(partitions_match(&p(&["[ab]x"]), &p(&["bx"])));
    // `*` matches the default partition too (fnmatch("*", "")).
    assert!(partitions_match(&p(&["*"]), &[]));
    // Two patterns never match, even identical ones.
    assert!(!partitions_match(&p(&["a*"]), &p(&["a*"])));
    assert!(!partitions_match(&p(&["*"]), &p(&["?"])));
    // ddsperf's GUID partitions are plain names.
    let g = "011007b8_d4460924_808f73f4_000001c1";
    assert!(partitions_match(&p(&[g]), &p(&[g])));
    assert!(is_wildcard("a*") && is_wildcard("a?") && is_wildcard("[a]") && !is_wildcard(g));
}
