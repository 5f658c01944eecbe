//! Real-looking profile files: an RTI Connext `USER_QOS_PROFILES.xml` and a Fast DDS 2.x
//! profiles file (fixtures in `tests/qos_xml/`), loaded where they use standard elements,
//! with one warning per vendor-specific element.

use std::time::Duration;
use tessera::qos::*;
use tessera::qos_xml::QosProvider;

fn fixture(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/qos_xml")
        .join(name)
}

fn warned(p: &QosProvider) -> Vec<String> {
    p.warnings().iter().map(|w| w.element.clone()).collect()
}

#[test]
fn rti_user_qos_profiles_load() {
    let path = fixture("rti_USER_QOS_PROFILES.xml");
    let p = QosProvider::from_file(&path).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(p.default_profile(), Some("ShapesLibrary::BaseProfile"));
    let mut w = warned(&p);
    w.sort();
    assert_eq!(
        w,
        [
            "assertions_per_lease_duration",
            "initial_samples",
            "property",
            "protocol",
            "transport_builtin"
        ],
        "{:#?}",
        p.warnings()
    );
    assert!(p
        .warnings()
        .iter()
        .all(|w| w.at.file.ends_with("rti_USER_QOS_PROFILES.xml")));

    let base = p.datawriter_qos("ShapesLibrary::BaseProfile").unwrap();
    assert_eq!(
        base.reliability,
        Reliability::reliable(Duration::from_secs(5))
    );
    assert_eq!(base.history, History::KeepLast(10));
    assert_eq!(
        p.participant_qos("ShapesLibrary::BaseProfile")
            .unwrap()
            .user_data,
        UserData(b"TS".to_vec())
    );

    let strict = p.datawriter_qos("ShapesLibrary::StrictReliable").unwrap();
    assert_eq!(strict.history, History::KeepAll);
    assert_eq!(strict.durability, Durability::TransientLocal);
    assert_eq!(strict.reliability, base.reliability, "inherited");
    assert_eq!(strict.liveliness.lease_duration, INFINITE);

    let circle = p
        .datareader_qos_for_topic("ShapesLibrary::StrictReliable", "CircleTopic")
        .unwrap();
    assert_eq!(circle.history, History::KeepLast(1));
    assert_eq!(
        circle.time_based_filter.minimum_separation,
        Duration::from_millis(500)
    );
    assert_eq!(
        circle.reliability.kind,
        ReliabilityKind::Reliable,
        "from BaseProfile"
    );
    let square = p
        .datareader_qos_for_topic("ShapesLibrary::StrictReliable", "Square")
        .unwrap();
    assert_eq!(square.history, History::KeepAll);

    let blue = p.publisher_qos("PartitionLibrary::Blue").unwrap();
    assert_eq!(blue.partition, Partition::new(["blue"]));
    assert_eq!(
        blue.presentation.access_scope,
        PresentationAccessScope::Topic,
        "from Red"
    );
    assert!(blue.presentation.ordered_access);
    assert_eq!(
        p.datawriter_qos("PartitionLibrary::Blue").unwrap(),
        strict,
        "across libraries"
    );
}

#[test]
fn fastdds_profiles_load() {
    let p =
        QosProvider::from_file(fixture("fastdds_profiles.xml")).unwrap_or_else(|e| panic!("{e}"));
    let mut w = warned(&p);
    w.sort();
    assert_eq!(
        w,
        [
            "allocated_samples",
            "announcement_period",
            "data_sharing",
            "domainId",
            "expectsInlineQos",
            "historyMemoryPolicy",
            "log",
            "name",
            "publishMode",
            "times",
            "transport_descriptors",
            "useBuiltinTransports",
        ],
        "{:#?}",
        p.warnings()
    );
    assert_eq!(p.default_profile(), Some("fastdds::participant_profile"));
    assert_eq!(
        p.participant_qos("participant_profile").unwrap().user_data,
        UserData(vec![1, 2, 10])
    );

    let w = p.datawriter_qos("reliable_writer").unwrap();
    assert_eq!(w.history, History::KeepLast(20));
    assert_eq!(
        w.resource_limits,
        ResourceLimits {
            max_samples: Some(500),
            max_instances: Some(10),
            max_samples_per_instance: Some(50)
        }
    );
    assert_eq!(w.durability, Durability::TransientLocal);
    assert_eq!(
        w.reliability,
        Reliability::reliable(Duration::new(1, 856_000))
    );
    assert_eq!(w.deadline.period, INFINITE);
    assert_eq!(w.ownership, Ownership::Exclusive);
    assert_eq!(w.ownership_strength, OwnershipStrength(50));
    assert_eq!(
        w.user_data,
        UserData(vec![0x56, 0x30, 0x61]),
        "Fast DDS octets: dotted hex, values joined"
    );
    assert_eq!(w.destination_order, DestinationOrder::BySourceTimestamp);
    // The writer profile's partition is its publisher's.
    assert_eq!(
        p.publisher_qos("fastdds::reliable_writer")
            .unwrap()
            .partition,
        Partition::new(["part1", "part2"])
    );

    let r = p.datareader_qos("best_effort_reader").unwrap();
    assert_eq!(r.history, History::KeepAll);
    assert_eq!(r.reliability.kind, ReliabilityKind::BestEffort);
    assert_eq!(
        r.liveliness,
        Liveliness {
            kind: LivelinessKind::ManualByTopic,
            lease_duration: Duration::from_secs(2)
        }
    );
    assert_eq!(
        p.subscriber_qos("best_effort_reader").unwrap().partition,
        Partition::new(["part1"])
    );

    // Octets in the standard's comma form are not Fast DDS's: an error at the <value>.
    let bad = "<profiles><data_writer profile_name=\"w\"><qos>\n<userData><value>1,2</value></userData></qos></data_writer></profiles>";
    match QosProvider::from_str(bad) {
        Err(tessera::QosXmlError::Invalid { at, element, .. }) => {
            assert_eq!((at.line, element.as_str()), (2, "value"))
        }
        other => panic!("{other:?}"),
    }
}

/// What the fuzz target (`fuzz/fuzz_targets/qos_xml.rs`) checks, run in `cargo test` over
/// every truncation and a deterministic set of byte mutations of both fixtures, and over a
/// few hand-made hostile documents: the loader returns profiles or an error, never panics,
/// and whatever loaded resolves.
#[test]
fn hostile_input_never_panics() {
    let check = |text: &str| {
        if let Ok(p) = QosProvider::from_str(text) {
            for name in p.profile_names() {
                p.datawriter_qos_for_topic(&name, "CircleTopic").unwrap();
                p.datareader_qos(&name).unwrap();
                p.participant_qos(&name).unwrap();
                p.topic_qos(&name).unwrap();
            }
        }
    };
    for f in ["rti_USER_QOS_PROFILES.xml", "fastdds_profiles.xml"] {
        let bytes = std::fs::read(fixture(f)).unwrap();
        for cut in (0..bytes.len()).step_by(7) {
            check(&String::from_utf8_lossy(&bytes[..cut]));
        }
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..400 {
            let mut m = bytes.clone();
            for _ in 0..3 {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                let at = (seed % m.len() as u64) as usize;
                m[at] = b"<>/=\"&;x0-: "[(seed >> 32) as usize % 12];
            }
            check(&String::from_utf8_lossy(&m));
        }
    }
    let laughs = r#"<?xml version="1.0"?><!DOCTYPE dds [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;">]><dds><qos_library name="L"><qos_profile name="&b;"/></qos_library></dds>"#;
    assert!(
        QosProvider::from_str(laughs).is_err(),
        "custom entities are not expanded"
    );
    for hostile in [
        "<dds>".repeat(10_000),
        format!("<dds>{}</dds>", "<qos_library name=\"x\"/>".repeat(50_000)),
        "<dds><qos_library name=\"L\"><qos_profile name=\"P\"><datawriter_qos><history><depth>99999999999999999999999</depth></history></datawriter_qos></qos_profile></qos_library></dds>".into(),
        "<dds><qos_library name=\"L\"><qos_profile name=\"P\" base_name=\"::\"/></qos_library></dds>".into(),
        "\u{feff}<dds/>".into(),
    ] {
        check(&hostile);
    }
}

#[test]
fn cyclone_system_definition_loads() {
    let p = QosProvider::from_file(fixture("cyclone_sysdef.xml")).unwrap_or_else(|e| panic!("{e}"));
    let mut w = warned(&p);
    w.sort();
    assert_eq!(
        w,
        ["domain_library", "types", "writer_batching"],
        "{:#?}",
        p.warnings()
    );
    let r = p.datareader_qos("QosLib::DerivedProfile").unwrap();
    assert_eq!(r.durability, Durability::TransientLocal);
    assert_eq!(r.reliability, Reliability::reliable(Duration::new(9, 10)));
    assert_eq!(r.user_data, UserData(b"ABC".to_vec()));
    assert_eq!(
        r.data_representation,
        DataRepresentation(vec![data_representation::XCDR, data_representation::XCDR2])
    );
    assert!(r.type_consistency.force_type_validation);
    let w = p.datawriter_qos("QosLib::DerivedProfile").unwrap();
    assert_eq!(w.lifespan.duration, INFINITE);
    assert_eq!(w.transport_priority, TransportPriority(20));
    assert_eq!(w.user_data, UserData::default());
    assert_eq!(
        p.participant_qos("QosLib::DerivedProfile")
            .unwrap()
            .user_data,
        UserData(b"JSL".to_vec())
    );
}
