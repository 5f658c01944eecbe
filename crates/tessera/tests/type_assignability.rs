//! Two participants whose topic types share a name but differ: with type information on, each
//! side fetches the other's TypeObjects over the TypeLookup service, and a match made on the
//! type name ends unless the reader's type is assignable from the writer's (DDS-XTypes 7.2.4);
//! with it off, names decide.

use std::time::{Duration, Instant};
use tessera::qos::{DataReaderQos, DataWriterQos, History, Reliability, TopicQos};
use tessera::transport::InProcessNetwork;
use tessera::{DataReader, DataWriter, DomainParticipant, ParticipantConfig, TopicType};

/// The writer's type: `@appendable struct V { long a; long b; }`.
#[derive(TopicType, Debug, Clone, PartialEq)]
#[topic(type_name = "V", extensibility = "appendable")]
struct V2 {
    a: i32,
    b: i32,
}

/// Assignable from V2: a prefix of it.
#[derive(TopicType, Debug, Clone, PartialEq)]
#[topic(type_name = "V", extensibility = "appendable")]
struct V1 {
    a: i32,
}

/// Not assignable from V2: member `a` has another type.
#[derive(TopicType, Debug, Clone, PartialEq)]
#[topic(type_name = "V", extensibility = "appendable")]
struct VShort {
    a: i16,
}

fn participant(net: &InProcessNetwork, type_information: bool) -> DomainParticipant {
    let config = ParticipantConfig {
        type_information: Some(type_information),
        ..ParticipantConfig::with_in_process(net.clone())
    };
    DomainParticipant::with_qos(0, Default::default(), config).unwrap()
}

fn writer(p: &DomainParticipant) -> DataWriter<V2> {
    let t = p.create_topic::<V2>("T", TopicQos::default()).unwrap();
    p.create_publisher(Default::default())
        .unwrap()
        .create_datawriter(&t, DataWriterQos::default().with_history(History::KeepAll))
        .unwrap()
}

fn reader<T: TopicType>(p: &DomainParticipant) -> DataReader<T> {
    let t = p.create_topic::<T>("T", TopicQos::default()).unwrap();
    let qos = DataReaderQos::default()
        .with_reliability(Reliability::reliable(Duration::from_secs(1)))
        .with_history(History::KeepAll);
    p.create_subscriber(Default::default())
        .unwrap()
        .create_datareader(&t, qos)
        .unwrap()
}

/// Whether the reader matches within `secs`.
fn matches<T: TopicType>(r: &DataReader<T>, secs: f64) -> bool {
    let deadline = Instant::now() + Duration::from_secs_f64(secs);
    while Instant::now() < deadline {
        if r.subscription_matched_status().current_count > 0 {
            return true;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    false
}

#[test]
fn an_assignable_reader_matches_after_fetching_the_writers_type() {
    let net = InProcessNetwork::new();
    let (pw, pr) = (participant(&net, true), participant(&net, true));
    let w = writer(&pw);
    let r = reader::<V1>(&pr);
    assert!(matches(&r, 5.0));
    w.write(&V2 { a: 7, b: 8 }).unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut got = Vec::new();
    while got.is_empty() && Instant::now() < deadline {
        got = r.take(10).unwrap();
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(got[0].data.as_ref(), Some(&V1 { a: 7 }));
    // Still matched once the types were compared.
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(r.subscription_matched_status().current_count, 1);
}

#[test]
fn a_reader_whose_type_is_not_assignable_does_not_stay_matched() {
    let net = InProcessNetwork::new();
    let (pw, pr) = (participant(&net, true), participant(&net, true));
    let w = writer(&pw);
    let r = reader::<VShort>(&pr);
    // Matched on the name at first, the match ends once the writer's type has arrived.
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(r.subscription_matched_status().current_count, 0);
    assert_eq!(w.publication_matched_status().current_count, 0);
    w.write(&V2 { a: 1, b: 2 }).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        r.take(10).unwrap().is_empty(),
        "received a type it cannot read"
    );
}

#[test]
fn without_type_information_names_decide() {
    let net = InProcessNetwork::new();
    let (pw, pr) = (participant(&net, false), participant(&net, false));
    let _w = writer(&pw);
    let r = reader::<VShort>(&pr);
    assert!(matches(&r, 5.0));
}
