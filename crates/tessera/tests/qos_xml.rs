//! XML QoS profiles (DDS-XML): every policy element, inheritance, topic filters, defaults,
//! and errors with their positions.

use std::time::Duration;
use tessera::qos::*;
use tessera::qos_xml::{QosProvider, QosXmlError};

fn load(xml: &str) -> QosProvider {
    QosProvider::from_str_named("test.xml", xml).unwrap_or_else(|e| panic!("{e}"))
}

fn doc(profiles: &str) -> String {
    format!("<dds xmlns=\"http://www.omg.org/spec/DDS-XML\">\n<qos_library name=\"L\">\n{profiles}\n</qos_library>\n</dds>")
}

const D: fn(u64, u32) -> Duration = Duration::new;

/// One profile that sets every policy of every entity away from its default.
const EVERY_POLICY: &str = r#"
<qos_profile name="All">
  <domain_participant_qos>
    <user_data><value>1,2,3</value></user_data>
    <entity_factory><autoenable_created_entities>false</autoenable_created_entities></entity_factory>
  </domain_participant_qos>
  <topic_qos>
    <topic_data><value>QUJD</value></topic_data>
    <durability><kind>TRANSIENT_LOCAL_DURABILITY_QOS</kind></durability>
    <durability_service>
      <service_cleanup_delay><sec>3</sec><nanosec>0</nanosec></service_cleanup_delay>
      <history_kind>KEEP_LAST_HISTORY_QOS</history_kind><history_depth>5</history_depth>
      <max_samples>100</max_samples><max_instances>10</max_instances>
      <max_samples_per_instance>10</max_samples_per_instance>
    </durability_service>
    <deadline><period><sec>2</sec><nanosec>0</nanosec></period></deadline>
    <latency_budget><duration><sec>0</sec><nanosec>1000</nanosec></duration></latency_budget>
    <liveliness><kind>MANUAL_BY_TOPIC_LIVELINESS_QOS</kind><lease_duration><sec>4</sec></lease_duration></liveliness>
    <reliability><kind>RELIABLE_RELIABILITY_QOS</kind><max_blocking_time><sec>0</sec><nanosec>5000000</nanosec></max_blocking_time></reliability>
    <destination_order><kind>BY_SOURCE_TIMESTAMP_DESTINATIONORDER_QOS</kind></destination_order>
    <history><kind>KEEP_ALL_HISTORY_QOS</kind></history>
    <resource_limits><max_samples>1000</max_samples><max_instances>LENGTH_UNLIMITED</max_instances><max_samples_per_instance>-1</max_samples_per_instance></resource_limits>
    <transport_priority><value>7</value></transport_priority>
    <lifespan><duration><sec>60</sec></duration></lifespan>
    <ownership><kind>EXCLUSIVE_OWNERSHIP_QOS</kind></ownership>
    <representation><value><element>XCDR2_DATA_REPRESENTATION</element></value></representation>
    <consistency><kind>ATOMIC_CONSISTENCY_QOS</kind></consistency>
  </topic_qos>
  <publisher_qos>
    <presentation><access_scope>GROUP_PRESENTATION_QOS</access_scope><coherent_access>true</coherent_access><ordered_access>1</ordered_access></presentation>
    <partition><name><element>a</element><element>b*</element></name></partition>
    <group_data><value>0x10,0x20</value></group_data>
    <entity_factory><autoenable_created_entities>false</autoenable_created_entities></entity_factory>
  </publisher_qos>
  <subscriber_qos>
    <presentation><access_scope>TOPIC_PRESENTATION_QOS</access_scope></presentation>
    <partition><name><element>c</element></name></partition>
    <group_data><value>9</value></group_data>
    <entity_factory><autoenable_created_entities>FALSE</autoenable_created_entities></entity_factory>
  </subscriber_qos>
  <datawriter_qos>
    <durability><kind>PERSISTENT_DURABILITY_QOS</kind></durability>
    <durability_service><history_kind>KEEP_ALL_HISTORY_QOS</history_kind></durability_service>
    <deadline><period><sec>1</sec><nanosec>500</nanosec></period></deadline>
    <latency_budget><duration><nanosec>20</nanosec></duration></latency_budget>
    <liveliness><kind>MANUAL_BY_PARTICIPANT_LIVELINESS_QOS</kind><lease_duration><sec>9</sec></lease_duration></liveliness>
    <reliability><kind>BEST_EFFORT_RELIABILITY_QOS</kind><max_blocking_time><sec>DURATION_INFINITY</sec></max_blocking_time></reliability>
    <destination_order><kind>BY_SOURCE_TIMESTAMP_DESTINATIONORDER_QOS</kind></destination_order>
    <history><kind>KEEP_LAST_HISTORY_QOS</kind><depth>8</depth></history>
    <resource_limits><max_samples>80</max_samples><max_instances>4</max_instances><max_samples_per_instance>20</max_samples_per_instance></resource_limits>
    <transport_priority><value>-3</value></transport_priority>
    <lifespan><duration><sec>5</sec></duration></lifespan>
    <user_data><value>ZCBzdHJpbmcgZXhhbXBsZQ==</value></user_data>
    <ownership><kind>EXCLUSIVE_OWNERSHIP_QOS</kind></ownership>
    <ownership_strength><value>42</value></ownership_strength>
    <writer_data_lifecycle><autodispose_unregistered_instances>false</autodispose_unregistered_instances></writer_data_lifecycle>
    <data_representation><id><element>XCDR2</element><element>XCDR1</element></id></data_representation>
    <consistency><kind>ATOMIC_CONSISTENCY_QOS</kind></consistency>
  </datawriter_qos>
  <datareader_qos>
    <durability><kind>TRANSIENT_DURABILITY_QOS</kind></durability>
    <deadline><period><sec>3</sec></period></deadline>
    <latency_budget><duration><sec>1</sec></duration></latency_budget>
    <liveliness><kind>MANUAL_BY_TOPIC_LIVELINESS_QOS</kind></liveliness>
    <reliability><kind>RELIABLE_RELIABILITY_QOS</kind></reliability>
    <destination_order><kind>BY_SOURCE_TIMESTAMP_DESTINATIONORDER_QOS</kind></destination_order>
    <history><kind>KEEP_ALL_HISTORY_QOS</kind></history>
    <resource_limits><max_samples_per_instance>30</max_samples_per_instance></resource_limits>
    <user_data><value>4,5</value></user_data>
    <ownership><kind>EXCLUSIVE_OWNERSHIP_QOS</kind></ownership>
    <time_based_filter><minimum_separation><sec>0</sec><nanosec>100000000</nanosec></minimum_separation></time_based_filter>
    <reader_data_lifecycle>
      <autopurge_nowriter_samples_delay><sec>10</sec></autopurge_nowriter_samples_delay>
      <autopurge_disposed_samples_delay><sec>11</sec></autopurge_disposed_samples_delay>
    </reader_data_lifecycle>
    <representation><value><element>XCDR_DATA_REPRESENTATION</element><element>XCDR2_DATA_REPRESENTATION</element></value></representation>
    <type_consistency><kind>DISALLOW_TYPE_COERCION</kind><ignore_sequence_bounds>false</ignore_sequence_bounds><ignore_string_bounds>false</ignore_string_bounds><ignore_member_names>true</ignore_member_names><prevent_type_widening>true</prevent_type_widening><force_type_validation>true</force_type_validation></type_consistency>
    <consistency><kind>ATOMIC_CONSISTENCY_QOS</kind></consistency>
  </datareader_qos>
</qos_profile>"#;

#[test]
fn every_policy_is_parsed() {
    let p = load(&doc(EVERY_POLICY));
    assert!(p.warnings().is_empty(), "{:?}", p.warnings());
    let (pa, t, pu, su, w, r) = (
        p.participant_qos("L::All").unwrap(),
        p.topic_qos("L::All").unwrap(),
        p.publisher_qos("L::All").unwrap(),
        p.subscriber_qos("L::All").unwrap(),
        p.datawriter_qos("L::All").unwrap(),
        p.datareader_qos("L::All").unwrap(),
    );
    let limits = |s, i, per| ResourceLimits {
        max_samples: s,
        max_instances: i,
        max_samples_per_instance: per,
    };
    // (what, parsed, expected): each expected value differs from the default.
    let table: Vec<(&str, String, String)> = vec![
        (
            "participant user_data",
            format!("{:?}", pa.user_data),
            format!("{:?}", UserData(vec![1, 2, 3])),
        ),
        (
            "participant entity_factory",
            format!("{:?}", pa.entity_factory.autoenable_created_entities),
            "false".into(),
        ),
        (
            "topic topic_data",
            format!("{:?}", t.topic_data),
            format!("{:?}", TopicData(b"ABC".to_vec())),
        ),
        (
            "topic durability",
            format!("{:?}", t.durability),
            format!("{:?}", Durability::TransientLocal),
        ),
        (
            "topic durability_service",
            format!("{:?}", t.durability_service),
            format!(
                "{:?}",
                DurabilityService {
                    service_cleanup_delay: D(3, 0),
                    history: History::KeepLast(5),
                    resource_limits: limits(Some(100), Some(10), Some(10)),
                }
            ),
        ),
        (
            "topic deadline",
            format!("{:?}", t.deadline.period),
            format!("{:?}", D(2, 0)),
        ),
        (
            "topic latency_budget",
            format!("{:?}", t.latency_budget.duration),
            format!("{:?}", D(0, 1000)),
        ),
        (
            "topic liveliness",
            format!("{:?}", t.liveliness),
            format!(
                "{:?}",
                Liveliness {
                    kind: LivelinessKind::ManualByTopic,
                    lease_duration: D(4, 0)
                }
            ),
        ),
        (
            "topic reliability",
            format!("{:?}", t.reliability),
            format!("{:?}", Reliability::reliable(Duration::from_millis(5))),
        ),
        (
            "topic destination_order",
            format!("{:?}", t.destination_order),
            format!("{:?}", DestinationOrder::BySourceTimestamp),
        ),
        (
            "topic history",
            format!("{:?}", t.history),
            format!("{:?}", History::KeepAll),
        ),
        (
            "topic resource_limits",
            format!("{:?}", t.resource_limits),
            format!("{:?}", limits(Some(1000), None, None)),
        ),
        (
            "topic transport_priority",
            format!("{:?}", t.transport_priority),
            format!("{:?}", TransportPriority(7)),
        ),
        (
            "topic lifespan",
            format!("{:?}", t.lifespan.duration),
            format!("{:?}", D(60, 0)),
        ),
        (
            "topic ownership",
            format!("{:?}", t.ownership),
            format!("{:?}", Ownership::Exclusive),
        ),
        (
            "topic representation",
            format!("{:?}", t.data_representation),
            format!("{:?}", DataRepresentation(vec![2])),
        ),
        (
            "topic consistency",
            format!("{:?}", t.consistency),
            format!("{:?}", Consistency::Atomic),
        ),
        (
            "publisher presentation",
            format!("{:?}", pu.presentation),
            format!(
                "{:?}",
                Presentation {
                    access_scope: PresentationAccessScope::Group,
                    coherent_access: true,
                    ordered_access: true
                }
            ),
        ),
        (
            "publisher partition",
            format!("{:?}", pu.partition),
            format!("{:?}", Partition::new(["a", "b*"])),
        ),
        (
            "publisher group_data",
            format!("{:?}", pu.group_data),
            format!("{:?}", GroupData(vec![0x10, 0x20])),
        ),
        (
            "publisher entity_factory",
            format!("{:?}", pu.entity_factory.autoenable_created_entities),
            "false".into(),
        ),
        (
            "subscriber presentation",
            format!("{:?}", su.presentation.access_scope),
            format!("{:?}", PresentationAccessScope::Topic),
        ),
        (
            "subscriber partition",
            format!("{:?}", su.partition),
            format!("{:?}", Partition::new(["c"])),
        ),
        (
            "subscriber group_data",
            format!("{:?}", su.group_data),
            format!("{:?}", GroupData(vec![9])),
        ),
        (
            "subscriber entity_factory",
            format!("{:?}", su.entity_factory.autoenable_created_entities),
            "false".into(),
        ),
        (
            "writer durability",
            format!("{:?}", w.durability),
            format!("{:?}", Durability::Persistent),
        ),
        (
            "writer durability_service",
            format!("{:?}", w.durability_service.history),
            format!("{:?}", History::KeepAll),
        ),
        (
            "writer deadline",
            format!("{:?}", w.deadline.period),
            format!("{:?}", D(1, 500)),
        ),
        (
            "writer latency_budget",
            format!("{:?}", w.latency_budget.duration),
            format!("{:?}", D(0, 20)),
        ),
        (
            "writer liveliness",
            format!("{:?}", w.liveliness),
            format!(
                "{:?}",
                Liveliness {
                    kind: LivelinessKind::ManualByParticipant,
                    lease_duration: D(9, 0)
                }
            ),
        ),
        (
            "writer reliability",
            format!("{:?}", w.reliability),
            format!(
                "{:?}",
                Reliability {
                    kind: ReliabilityKind::BestEffort,
                    max_blocking_time: INFINITE
                }
            ),
        ),
        (
            "writer destination_order",
            format!("{:?}", w.destination_order),
            format!("{:?}", DestinationOrder::BySourceTimestamp),
        ),
        (
            "writer history",
            format!("{:?}", w.history),
            format!("{:?}", History::KeepLast(8)),
        ),
        (
            "writer resource_limits",
            format!("{:?}", w.resource_limits),
            format!("{:?}", limits(Some(80), Some(4), Some(20))),
        ),
        (
            "writer transport_priority",
            format!("{:?}", w.transport_priority),
            format!("{:?}", TransportPriority(-3)),
        ),
        (
            "writer lifespan",
            format!("{:?}", w.lifespan.duration),
            format!("{:?}", D(5, 0)),
        ),
        (
            "writer user_data",
            format!("{:?}", w.user_data),
            format!("{:?}", UserData(b"d string example".to_vec())),
        ),
        (
            "writer ownership",
            format!("{:?}", w.ownership),
            format!("{:?}", Ownership::Exclusive),
        ),
        (
            "writer ownership_strength",
            format!("{:?}", w.ownership_strength),
            format!("{:?}", OwnershipStrength(42)),
        ),
        (
            "writer writer_data_lifecycle",
            format!(
                "{:?}",
                w.writer_data_lifecycle.autodispose_unregistered_instances
            ),
            "false".into(),
        ),
        (
            "writer data_representation",
            format!("{:?}", w.data_representation),
            format!("{:?}", DataRepresentation(vec![2, 0])),
        ),
        (
            "writer consistency",
            format!("{:?}", w.consistency),
            format!("{:?}", Consistency::Atomic),
        ),
        (
            "reader durability",
            format!("{:?}", r.durability),
            format!("{:?}", Durability::Transient),
        ),
        (
            "reader deadline",
            format!("{:?}", r.deadline.period),
            format!("{:?}", D(3, 0)),
        ),
        (
            "reader latency_budget",
            format!("{:?}", r.latency_budget.duration),
            format!("{:?}", D(1, 0)),
        ),
        (
            "reader liveliness",
            format!("{:?}", r.liveliness),
            format!(
                "{:?}",
                Liveliness {
                    kind: LivelinessKind::ManualByTopic,
                    lease_duration: INFINITE
                }
            ),
        ),
        (
            "reader reliability",
            format!("{:?}", r.reliability),
            format!(
                "{:?}",
                Reliability {
                    kind: ReliabilityKind::Reliable,
                    ..Reliability::READER_DEFAULT
                }
            ),
        ),
        (
            "reader destination_order",
            format!("{:?}", r.destination_order),
            format!("{:?}", DestinationOrder::BySourceTimestamp),
        ),
        (
            "reader history",
            format!("{:?}", r.history),
            format!("{:?}", History::KeepAll),
        ),
        (
            "reader resource_limits",
            format!("{:?}", r.resource_limits),
            format!("{:?}", limits(None, None, Some(30))),
        ),
        (
            "reader user_data",
            format!("{:?}", r.user_data),
            format!("{:?}", UserData(vec![4, 5])),
        ),
        (
            "reader ownership",
            format!("{:?}", r.ownership),
            format!("{:?}", Ownership::Exclusive),
        ),
        (
            "reader time_based_filter",
            format!("{:?}", r.time_based_filter.minimum_separation),
            format!("{:?}", Duration::from_millis(100)),
        ),
        (
            "reader reader_data_lifecycle",
            format!("{:?}", r.reader_data_lifecycle),
            format!(
                "{:?}",
                ReaderDataLifecycle {
                    autopurge_nowriter_samples_delay: D(10, 0),
                    autopurge_disposed_samples_delay: D(11, 0)
                }
            ),
        ),
        (
            "reader representation",
            format!("{:?}", r.data_representation),
            format!("{:?}", DataRepresentation(vec![0, 2])),
        ),
        (
            "reader type_consistency",
            format!("{:?}", r.type_consistency),
            format!(
                "{:?}",
                TypeConsistencyEnforcement {
                    kind: TypeConsistencyKind::DisallowTypeCoercion,
                    ignore_sequence_bounds: false,
                    ignore_string_bounds: false,
                    ignore_member_names: true,
                    prevent_type_widening: true,
                    force_type_validation: true
                }
            ),
        ),
        (
            "reader consistency",
            format!("{:?}", r.consistency),
            format!("{:?}", Consistency::Atomic),
        ),
    ];
    let wrong: Vec<String> = table
        .iter()
        .filter(|(_, got, want)| got != want)
        .map(|(what, got, want)| format!("{what}: got {got}, want {want}"))
        .collect();
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    // Every row is a change from the default, so a policy silently left alone shows up.
    assert_ne!(w, DataWriterQos::default());
    assert_ne!(r, DataReaderQos::default());
    assert_ne!(t, TopicQos::default());
}

#[test]
fn absent_elements_leave_the_defaults() {
    let p = load(&doc(r#"
      <qos_profile name="Empty"><datawriter_qos/><datareader_qos></datareader_qos></qos_profile>
      <qos_profile name="OnlyBlocking">
        <datawriter_qos><reliability><max_blocking_time><sec>2</sec></max_blocking_time></reliability></datawriter_qos>
        <datareader_qos><history><depth>4</depth></history></datareader_qos>
      </qos_profile>"#));
    assert_eq!(
        p.datawriter_qos("L::Empty").unwrap(),
        DataWriterQos::default()
    );
    assert_eq!(
        p.datareader_qos("L::Empty").unwrap(),
        DataReaderQos::default()
    );
    assert_eq!(p.topic_qos("L::Empty").unwrap(), TopicQos::default());
    assert_eq!(
        p.publisher_qos("L::Empty").unwrap(),
        PublisherQos::default()
    );
    assert_eq!(
        p.participant_qos("L::Empty").unwrap(),
        DomainParticipantQos::default()
    );
    // One field of a policy changes; the other keeps the entity's default (writers are
    // reliable by default, readers best effort).
    let w = p.datawriter_qos("L::OnlyBlocking").unwrap();
    assert_eq!(w.reliability, Reliability::reliable(D(2, 0)));
    assert_eq!(
        w.with_reliability(Reliability::WRITER_DEFAULT),
        DataWriterQos::default()
    );
    let r = p.datareader_qos("L::OnlyBlocking").unwrap();
    assert_eq!(r.history, History::KeepLast(4));
    assert_eq!(r.reliability, Reliability::READER_DEFAULT);
}

#[test]
fn inheritance_across_libraries_and_per_entity_bases() {
    let xml = r#"<dds>
      <qos_library name="Base">
        <qos_profile name="Reliable">
          <datawriter_qos>
            <reliability><kind>RELIABLE_RELIABILITY_QOS</kind><max_blocking_time><sec>3</sec></max_blocking_time></reliability>
            <history><kind>KEEP_LAST_HISTORY_QOS</kind><depth>5</depth></history>
          </datawriter_qos>
          <datareader_qos><reliability><kind>RELIABLE_RELIABILITY_QOS</kind></reliability></datareader_qos>
          <publisher_qos><partition><name><element>base</element></name></partition></publisher_qos>
        </qos_profile>
        <qos_profile name="Durable">
          <datareader_qos><durability><kind>TRANSIENT_LOCAL_DURABILITY_QOS</kind></durability></datareader_qos>
        </qos_profile>
      </qos_library>
      <qos_library name="App">
        <qos_profile name="Child" base_name="Base::Reliable">
          <datawriter_qos><history><depth>9</depth></history></datawriter_qos>
        </qos_profile>
        <qos_profile name="GrandChild" base_name="Child">
          <datawriter_qos><lifespan><duration><sec>1</sec></duration></lifespan></datawriter_qos>
          <datareader_qos base_name="Base::Durable"/>
        </qos_profile>
      </qos_library>
    </dds>"#;
    let p = load(xml);
    let w = p.datawriter_qos("App::GrandChild").unwrap();
    assert_eq!(
        w.reliability,
        Reliability::reliable(D(3, 0)),
        "from Base::Reliable"
    );
    assert_eq!(
        w.history,
        History::KeepLast(9),
        "depth from Child, kind from Base"
    );
    assert_eq!(w.lifespan.duration, D(1, 0), "its own");
    // Publisher QoS: not in Child or GrandChild, so Base::Reliable's.
    assert_eq!(
        p.publisher_qos("App::GrandChild").unwrap().partition,
        Partition::new(["base"])
    );
    // The reader element names its own base, which replaces the profile's.
    let r = p.datareader_qos("App::GrandChild").unwrap();
    assert_eq!(r.durability, Durability::TransientLocal);
    assert_eq!(r.reliability, Reliability::READER_DEFAULT);
    // A bare name works when one library has it; profile names list every profile.
    assert_eq!(p.datawriter_qos("GrandChild").unwrap(), w);
    assert_eq!(p.profile_names().len(), 4);
    // Across documents too.
    let mut two = QosProvider::from_str_named("a.xml", &doc(r#"<qos_profile name="A"><datawriter_qos><ownership_strength><value>3</value></ownership_strength></datawriter_qos></qos_profile>"#)).unwrap();
    two.load_str("b.xml", r#"<dds><qos_library name="M"><qos_profile name="B" base_name="L::A"/></qos_library></dds>"#).unwrap();
    assert_eq!(
        two.datawriter_qos("M::B").unwrap().ownership_strength,
        OwnershipStrength(3)
    );
}

#[test]
fn base_cycles_and_unknown_bases_are_refused() {
    let cycle = doc(
        r#"<qos_profile name="A" base_name="C"/><qos_profile name="B" base_name="A"/><qos_profile name="C" base_name="B"/>"#,
    );
    match QosProvider::from_str_named("c.xml", &cycle) {
        Err(QosXmlError::BaseCycle { chain, at }) => {
            assert!(
                chain.contains("L::A") && chain.contains("L::B") && chain.contains("L::C"),
                "{chain}"
            );
            assert_eq!(&*at.file, "c.xml");
        }
        other => panic!("{other:?}"),
    }
    let own = doc(r#"<qos_profile name="A"><datawriter_qos base_name="A"/></qos_profile>"#);
    assert!(matches!(
        QosProvider::from_str(&own),
        Err(QosXmlError::BaseCycle { .. })
    ));
    let unknown = doc(r#"<qos_profile name="A" base_name="Nope::X"/>"#);
    match QosProvider::from_str(&unknown) {
        Err(QosXmlError::UnknownBase { base, .. }) => assert_eq!(base, "Nope::X"),
        other => panic!("{other:?}"),
    }
    let twice = doc(r#"<qos_profile name="A"/><qos_profile name="A"/>"#);
    assert!(matches!(
        QosProvider::from_str(&twice),
        Err(QosXmlError::DuplicateProfile { .. })
    ));
    // A failed load leaves the provider as it was.
    let mut p = load(&doc(r#"<qos_profile name="Ok"/>"#));
    assert!(p.load_str("bad.xml", &cycle).is_err());
    assert_eq!(p.profile_names(), vec!["L::Ok".to_string()]);
}

/// RTI's rule: elements with a topic_filter are tried in document order and take precedence
/// over the element without one, wherever that stands; lookups without a topic see only the
/// element without a filter.
#[test]
fn topic_filters_take_precedence_in_document_order() {
    let p = load(&doc(r#"<qos_profile name="P">
        <datareader_qos><history><depth>4</depth></history></datareader_qos>
        <datareader_qos topic_filter="Sensor*"><history><depth>2</depth></history></datareader_qos>
        <datareader_qos topic_filter="Sensor?Special, Other"><history><depth>3</depth></history></datareader_qos>
      </qos_profile>
      <qos_profile name="Q" base_name="P">
        <datareader_qos topic_filter="Q*"><history><depth>5</depth></history></datareader_qos>
      </qos_profile>"#));
    let depth = |profile: &str, topic: Option<&str>| match topic {
        Some(t) => p.datareader_qos_for_topic(profile, t).unwrap().history,
        None => p.datareader_qos(profile).unwrap().history,
    };
    assert_eq!(
        depth("L::P", Some("SensorTemp")),
        History::KeepLast(2),
        "filtered beats unfiltered"
    );
    assert_eq!(
        depth("L::P", Some("SensorXSpecial")),
        History::KeepLast(2),
        "first filter wins"
    );
    assert_eq!(depth("L::P", Some("Other")), History::KeepLast(3));
    assert_eq!(depth("L::P", Some("Pressure")), History::KeepLast(4));
    assert_eq!(depth("L::P", None), History::KeepLast(4));
    assert_eq!(depth("L::Q", Some("Quux")), History::KeepLast(5));
    assert_eq!(
        depth("L::Q", Some("SensorTemp")),
        History::KeepLast(2),
        "inherited filter"
    );
    assert_eq!(depth("L::Q", None), History::KeepLast(4));
}

#[test]
fn default_profile_and_unknown_profiles() {
    let p = load(&doc(
        r#"<qos_profile name="A"/><qos_profile name="B" is_default_qos="true"/>"#,
    ));
    assert_eq!(p.default_profile(), Some("L::B"));
    assert!(matches!(p.datawriter_qos("L::C"), Err(QosXmlError::UnknownProfile(n)) if n == "L::C"));
    assert_eq!(
        load(&doc(r#"<qos_profile name="A"/>"#)).default_profile(),
        None
    );
}

fn error_of(xml: &str) -> QosXmlError {
    match QosProvider::from_str_named("bad.xml", xml) {
        Err(e) => e,
        Ok(_) => panic!("accepted: {xml}"),
    }
}

#[test]
fn errors_name_file_line_and_element() {
    let xml = doc("<qos_profile name=\"P\">\n  <datawriter_qos>\n    <reliability><kind>VERY_RELIABLE</kind></reliability>\n  </datawriter_qos>\n</qos_profile>");
    match error_of(&xml) {
        QosXmlError::Invalid {
            at,
            element,
            message,
        } => {
            assert_eq!((&*at.file, at.line, at.column), ("bad.xml", 5, 18));
            assert_eq!(element, "kind");
            assert!(
                message.contains("VERY_RELIABLE") && message.contains("RELIABLE_RELIABILITY_QOS"),
                "{message}"
            );
        }
        other => panic!("{other:?}"),
    }
    let e = error_of(&doc("<qos_profile name=\"P\"><datareader_qos><history><depth>-4</depth></history></datareader_qos></qos_profile>"));
    assert!(
        e.to_string().starts_with("bad.xml:3:") && e.to_string().contains("<depth>"),
        "{e}"
    );
    for (xml, want) in [
        ("<dds><qos_library name=\"L\">\n<qos_profile name=\"P\">\n</qos_library></dds>", 3),
        (&doc("<qos_profile/>") as &str, 3),
        (&doc("<qos_profile name=\"P\"><datawriter_qos><deadline><period><sec>1</sec><nanosec>1000000000</nanosec></period></deadline></datawriter_qos></qos_profile>"), 3),
        (&doc("<qos_profile name=\"P\"><publisher_qos><group_data><value>not base64!</value></group_data></publisher_qos></qos_profile>"), 3),
        (&doc("<qos_profile name=\"P\" is_default_qos=\"maybe\"/>"), 3),
    ] {
        let e = error_of(xml);
        let line = match &e {
            QosXmlError::Syntax { at, .. } | QosXmlError::Invalid { at, .. } => at.line,
            other => panic!("{other:?}"),
        };
        assert_eq!(line, want, "{e}");
    }
    assert!(
        matches!(error_of("<html/>"), QosXmlError::NotQosDocument { element, .. } if element == "html")
    );
    match QosProvider::from_file("/nonexistent/qos.xml") {
        Err(QosXmlError::Io { file, .. }) => assert_eq!(file, "/nonexistent/qos.xml"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn unknown_elements_are_one_warning_each() {
    let p = load(&doc(r#"<qos_profile name="P" vendor_attr="1">
      <datawriter_qos>
        <reliability><kind>RELIABLE_RELIABILITY_QOS</kind><acknowledgment_kind>X</acknowledgment_kind></reliability>
        <writer_resource_limits><max_batches>3</max_batches></writer_resource_limits>
        <partition><name><element>p</element></name></partition>
      </datawriter_qos>
      <participant_factory_qos/>
    </qos_profile>"#));
    let mut names: Vec<String> = p.warnings().iter().map(|w| w.element.clone()).collect();
    names.sort();
    assert_eq!(
        names,
        [
            "acknowledgment_kind",
            "participant_factory_qos",
            "partition",
            "qos_profile@vendor_attr",
            "writer_resource_limits"
        ]
    );
    let partition = p
        .warnings()
        .into_iter()
        .find(|w| w.element == "partition")
        .unwrap();
    assert!(
        partition
            .message
            .contains("does not apply to <datawriter_qos>"),
        "{partition}"
    );
    assert_eq!(partition.at.line, 7);
    // The ignored parts do not stop the rest.
    assert_eq!(
        p.datawriter_qos("L::P").unwrap().reliability.kind,
        ReliabilityKind::Reliable
    );
}

#[test]
fn env_variable_names_the_files() {
    let dir = std::env::temp_dir().join(format!("tessera-qos-env-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (a, b) = (dir.join("a.xml"), dir.join("b.xml"));
    std::fs::write(&a, doc(r#"<qos_profile name="A"><datawriter_qos><ownership_strength><value>1</value></ownership_strength></datawriter_qos></qos_profile>"#)).unwrap();
    std::fs::write(&b, r#"<dds><qos_library name="M"><qos_profile name="B" base_name="L::A"/></qos_library></dds>"#).unwrap();
    // The only test in this binary that touches the variable.
    std::env::set_var(
        tessera::qos_xml::ENV_QOS_PROFILES,
        format!("{}; {};", a.display(), b.display()),
    );
    let p = QosProvider::from_env().unwrap().expect("variable set");
    assert_eq!(
        p.datawriter_qos("M::B").unwrap().ownership_strength,
        OwnershipStrength(1)
    );
    std::env::set_var(tessera::qos_xml::ENV_QOS_PROFILES, "");
    assert!(QosProvider::from_env().unwrap().is_none());
    std::env::remove_var(tessera::qos_xml::ENV_QOS_PROFILES);
    std::fs::remove_dir_all(&dir).unwrap();
}
