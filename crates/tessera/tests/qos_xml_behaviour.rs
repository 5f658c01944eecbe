//! Entities created from XML QoS profiles behave as their profiles say (in-process transport,
//! so no socket is opened).

use std::sync::Arc;
use std::time::{Duration, Instant};
use tessera::qos::{History, ReliabilityKind, UserData};
use tessera::transport::{FaultConfig, InProcessNetwork};
use tessera::{
    DataReader, DataWriter, DomainParticipant, ParticipantConfig, QosProvider, TopicType,
};

#[derive(TopicType, Debug, Clone, PartialEq)]
struct Tick {
    #[key]
    id: u32,
    seq: u32,
}

const PROFILES: &str = r#"<dds>
  <qos_library name="B">
    <qos_profile name="App">
      <domain_participant_qos><user_data><value>7,7</value></user_data></domain_participant_qos>
    </qos_profile>
    <qos_profile name="ReliableAll">
      <datawriter_qos>
        <reliability><kind>RELIABLE_RELIABILITY_QOS</kind><max_blocking_time><sec>5</sec></max_blocking_time></reliability>
        <history><kind>KEEP_ALL_HISTORY_QOS</kind></history>
      </datawriter_qos>
      <datareader_qos>
        <reliability><kind>RELIABLE_RELIABILITY_QOS</kind></reliability>
        <history><kind>KEEP_ALL_HISTORY_QOS</kind></history>
      </datareader_qos>
    </qos_profile>
    <qos_profile name="Red" base_name="ReliableAll">
      <publisher_qos><partition><name><element>red</element></name></partition></publisher_qos>
      <subscriber_qos><partition><name><element>red</element></name></partition></subscriber_qos>
    </qos_profile>
    <qos_profile name="Blue" base_name="ReliableAll">
      <subscriber_qos><partition><name><element>blue</element></name></partition></subscriber_qos>
    </qos_profile>
  </qos_library>
</dds>"#;

fn participant(net: &InProcessNetwork, provider: &Arc<QosProvider>) -> DomainParticipant {
    let config = ParticipantConfig {
        qos_profiles: Some(provider.clone()),
        ..ParticipantConfig::with_in_process(net.clone())
    };
    DomainParticipant::with_profile(0, "B::App", config).unwrap()
}

fn endpoints(
    a: &DomainParticipant,
    b: &DomainParticipant,
    pub_profile: &str,
    sub_profile: &str,
) -> (DataWriter<Tick>, DataReader<Tick>) {
    let ta = a
        .create_topic_with_profile::<Tick>("Ticks", "B::ReliableAll")
        .unwrap();
    let tb = b
        .create_topic_with_profile::<Tick>("Ticks", "B::ReliableAll")
        .unwrap();
    let w = a
        .create_publisher_with_profile(pub_profile)
        .unwrap()
        .create_datawriter_with_profile(&ta, pub_profile)
        .unwrap();
    let r = b
        .create_subscriber_with_profile(sub_profile)
        .unwrap()
        .create_datareader_with_profile(&tb, sub_profile)
        .unwrap();
    (w, r)
}

fn matched_within(w: &DataWriter<Tick>, r: &DataReader<Tick>, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    while w.publication_matched_status().current_count == 0
        || r.subscription_matched_status().current_count == 0
    {
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    true
}

#[test]
fn reliable_keep_all_profile_delivers_everything_over_a_lossy_network() {
    let provider = Arc::new(QosProvider::from_str(PROFILES).unwrap());
    let net = InProcessNetwork::new();
    net.set_faults(FaultConfig {
        seed: 5,
        loss_percent: 10.0,
        ..FaultConfig::default()
    });
    let (a, b) = (participant(&net, &provider), participant(&net, &provider));
    assert_eq!(
        a.qos().user_data,
        UserData(vec![7, 7]),
        "participant QoS from its profile"
    );
    let (w, r) = endpoints(&a, &b, "B::ReliableAll", "B::ReliableAll");
    assert!(matched_within(&w, &r, Duration::from_secs(10)), "no match");
    const N: u32 = 300;
    // KEEP_ALL on both sides: nothing is replaced even when the writer runs ahead of acks.
    for seq in 0..N {
        w.write(&Tick { id: 1, seq }).unwrap();
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut got = Vec::new();
    while got.len() < N as usize {
        assert!(Instant::now() < deadline, "received {} of {N}", got.len());
        for s in r.take(512).unwrap() {
            got.extend(s.data.map(|d| d.seq));
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(got, (0..N).collect::<Vec<_>>());
    assert!(
        net.dropped() > 0,
        "nothing was lost: the test proves nothing"
    );
}

#[test]
fn partition_profiles_decide_matching() {
    let provider = Arc::new(QosProvider::from_str(PROFILES).unwrap());
    let net = InProcessNetwork::new();
    let (a, b) = (participant(&net, &provider), participant(&net, &provider));
    // A red publisher and a blue subscriber never match...
    let (w, blue) = endpoints(&a, &b, "B::Red", "B::Blue");
    assert_eq!(
        b.qos_provider()
            .unwrap()
            .datareader_qos("B::Blue")
            .unwrap()
            .history,
        History::KeepAll
    );
    // ...while a red subscriber of the same participant does: discovery itself works.
    let tb = b
        .create_topic_with_profile::<Tick>("Ticks", "B::ReliableAll")
        .unwrap();
    let red = b
        .create_subscriber_with_profile("B::Red")
        .unwrap()
        .create_datareader_with_profile(&tb, "B::Red")
        .unwrap();
    assert!(
        matched_within(&w, &red, Duration::from_secs(10)),
        "red did not match red"
    );
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        blue.subscription_matched_status().current_count,
        0,
        "blue matched red"
    );
    assert_eq!(w.publication_matched_status().current_count, 1);
    w.write(&Tick { id: 2, seq: 0 }).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while red.take(8).unwrap().is_empty() {
        assert!(Instant::now() < deadline, "red got nothing");
        std::thread::sleep(Duration::from_millis(2));
    }
    assert!(blue.take(8).unwrap().is_empty());
    assert_eq!(
        red.qos().reliability.kind,
        ReliabilityKind::Reliable,
        "reader QoS from the profile"
    );
}

#[test]
fn missing_profiles_are_typed_errors() {
    let net = InProcessNetwork::new();
    let provider = Arc::new(QosProvider::from_str(PROFILES).unwrap());
    let a = participant(&net, &provider);
    match a.create_publisher_with_profile("B::Nope") {
        Err(tessera::Error::QosProfile(tessera::QosXmlError::UnknownProfile(n))) => {
            assert_eq!(n, "B::Nope")
        }
        other => panic!("{other:?}"),
    }
    // Without a provider (and without TESSERA_QOS_PROFILES) a profile name is an error too.
    if std::env::var_os(tessera::qos_xml::ENV_QOS_PROFILES).is_none() {
        let plain = DomainParticipant::with_qos(
            0,
            Default::default(),
            ParticipantConfig::with_in_process(net.clone()),
        )
        .unwrap();
        assert!(matches!(
            plain.create_subscriber_with_profile("B::Red"),
            Err(tessera::Error::QosProfile(tessera::QosXmlError::NoProfiles))
        ));
    }
}
