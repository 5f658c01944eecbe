//! Helpers shared by the node's namespace tests.
#![allow(dead_code)]

pub mod load;

use std::time::{Duration, Instant};

use tessera::qos::{DataReaderQos, DataWriterQos, History, Reliability, SubscriberQos, TopicQos};
use tessera::{DataReader, DataWriter, DomainParticipant, ParticipantConfig, TopicType};

/// Panics outside a test network namespace (`scripts/netns-run` sets `TESSERA_IN_NETNS=1`).
pub fn require_netns() {
    assert!(
        std::env::var("TESSERA_IN_NETNS").as_deref() == Ok("1"),
        "socket test outside a test network namespace: run it via scripts/netns-run"
    );
}

/// A participant of `domain`: an application attached to the host's node (`node`), or one on
/// the network standing for another host.
pub fn participant(domain: u32, node: bool) -> DomainParticipant {
    let config = ParticipantConfig {
        node: Some(node),
        ..Default::default()
    };
    DomainParticipant::with_qos(domain, Default::default(), config).unwrap()
}

/// Reliable (10 s blocking), KEEP_ALL writer QoS.
pub fn writer_qos() -> DataWriterQos {
    DataWriterQos {
        reliability: Reliability::reliable(Duration::from_secs(10)),
        history: History::KeepAll,
        ..Default::default()
    }
}

/// A writer of `topic` with `qos`.
pub fn writer<T: TopicType>(
    p: &DomainParticipant,
    topic: &str,
    qos: DataWriterQos,
) -> DataWriter<T> {
    let t = p.create_topic::<T>(topic, TopicQos::default()).unwrap();
    p.create_publisher(Default::default())
        .unwrap()
        .create_datawriter(&t, qos)
        .unwrap()
}

/// Reliable (10 s blocking), KEEP_ALL reader QoS.
pub fn reader_qos() -> DataReaderQos {
    DataReaderQos {
        reliability: Reliability::reliable(Duration::from_secs(10)),
        history: History::KeepAll,
        ..Default::default()
    }
}

/// A reliable KEEP_ALL reader of `topic`.
pub fn reader<T: TopicType>(p: &DomainParticipant, topic: &str) -> DataReader<T> {
    reader_in(p, topic, SubscriberQos::default(), reader_qos())
}

/// A reader of `topic` with `qos` in a subscriber with `sub`.
pub fn reader_in<T: TopicType>(
    p: &DomainParticipant,
    topic: &str,
    sub: SubscriberQos,
    qos: DataReaderQos,
) -> DataReader<T> {
    let t = p.create_topic::<T>(topic, TopicQos::default()).unwrap();
    p.create_subscriber(sub)
        .unwrap()
        .create_datareader(&t, qos)
        .unwrap()
}

/// Polls `f` every 20 ms until it holds; panics after `secs`.
pub fn wait_until(secs: u64, what: &str, mut f: impl FnMut() -> bool) {
    let end = Instant::now() + Duration::from_secs(secs);
    while !f() {
        assert!(Instant::now() < end, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}
