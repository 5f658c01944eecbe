//! What the durability service's end-to-end tests share.

#![allow(dead_code)] // each test file uses part of it

use std::time::{Duration, Instant};
use tessera::qos::{
    DataReaderQos, DataWriterQos, Durability, DurabilityService, History, Reliability,
    ResourceLimits, TopicQos, WriterDataLifecycle,
};
use tessera::transport::InProcessNetwork;
use tessera::{DataReader, DataWriter, DomainParticipant, ParticipantConfig, TopicType};

/// A keyed sample: `sensor` is the instance.
#[derive(TopicType, Debug, Clone, PartialEq)]
pub struct Reading {
    #[key]
    pub sensor: u32,
    pub value: u32,
}

/// A participant on the in-process network.
pub fn join(net: &InProcessNetwork) -> DomainParticipant {
    DomainParticipant::with_qos(
        0,
        Default::default(),
        ParticipantConfig::with_in_process(net.clone()),
    )
    .expect("participant")
}

/// Polls `f` until it holds; fails the test naming `what` after `secs`.
pub fn wait_until(secs: u64, what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A writer whose own history keeps `own` samples per instance, and whose service keeps
/// `depth`. `own` ≥ `depth`: a reliable reader matched just before the writes gets them from
/// the writer's history once the handshake is done, whatever was written meanwhile.
pub fn writer(
    p: &DomainParticipant,
    topic: &str,
    kind: Durability,
    depth: u32,
    own: u32,
) -> DataWriter<Reading> {
    let t = p
        .create_topic::<Reading>(topic, TopicQos::default())
        .unwrap();
    p.create_publisher(Default::default())
        .unwrap()
        .create_datawriter(
            &t,
            DataWriterQos::default()
                .with_durability(kind)
                .with_history(History::KeepLast(own))
                .with_durability_service(DurabilityService {
                    service_cleanup_delay: Duration::ZERO,
                    history: History::KeepLast(depth),
                    resource_limits: ResourceLimits::UNLIMITED,
                })
                .with_writer_data_lifecycle(WriterDataLifecycle {
                    autodispose_unregistered_instances: false,
                }),
        )
        .unwrap()
}

pub fn reader(p: &DomainParticipant, topic: &str, kind: Durability) -> DataReader<Reading> {
    let t = p
        .create_topic::<Reading>(topic, TopicQos::default())
        .unwrap();
    p.create_subscriber(Default::default())
        .unwrap()
        .create_datareader(
            &t,
            DataReaderQos::default()
                .with_durability(kind)
                .with_reliability(Reliability::reliable(Duration::from_secs(1)))
                .with_history(History::KeepAll),
        )
        .unwrap()
}

/// Takes until `n` samples arrived (then 200 ms more, to catch duplicates); fails after 20 s.
pub fn take_n(r: &DataReader<Reading>, n: usize) -> Vec<tessera::Sample<Reading>> {
    let mut got = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    while got.len() < n {
        got.extend(
            r.take(100)
                .unwrap()
                .into_iter()
                .filter(|s| s.data.is_some()),
        );
        assert!(
            Instant::now() < deadline,
            "{} of {n} samples: {:?}",
            got.len(),
            got.iter().map(|s| s.data.clone()).collect::<Vec<_>>()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(Duration::from_millis(200));
    got.extend(
        r.take(100)
            .unwrap()
            .into_iter()
            .filter(|s| s.data.is_some()),
    );
    got
}
