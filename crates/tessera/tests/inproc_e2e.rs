//! DCPS end to end over the in-process transport: no socket, no root, no namespace, so these
//! run under a plain `cargo test`. Each test makes its own network (tests run in parallel).

use std::time::{Duration, Instant};
use tessera::qos::{DataReaderQos, DataWriterQos, History, Reliability, TopicQos};
use tessera::transport::{FaultConfig, InProcessNetwork};
use tessera::{DataReader, DataWriter, DomainParticipant, ParticipantConfig, TopicType};

#[derive(TopicType, Debug, Clone, PartialEq)]
struct Reading {
    #[key]
    sensor: u32,
    seq: u32,
    text: String,
}

fn participant(net: &InProcessNetwork) -> DomainParticipant {
    DomainParticipant::with_qos(
        0,
        Default::default(),
        ParticipantConfig::with_in_process(net.clone()),
    )
    .unwrap()
}

fn writer(p: &DomainParticipant, topic: &str) -> DataWriter<Reading> {
    let t = p
        .create_topic::<Reading>(topic, TopicQos::default())
        .unwrap();
    p.create_publisher(Default::default())
        .unwrap()
        .create_datawriter(&t, DataWriterQos::default().with_history(History::KeepAll))
        .unwrap()
}

fn reader(p: &DomainParticipant, topic: &str) -> DataReader<Reading> {
    let t = p
        .create_topic::<Reading>(topic, TopicQos::default())
        .unwrap();
    let qos = DataReaderQos::default()
        .with_reliability(Reliability::reliable(Duration::from_secs(1)))
        .with_history(History::KeepAll);
    p.create_subscriber(Default::default())
        .unwrap()
        .create_datareader(&t, qos)
        .unwrap()
}

fn wait_matched(w: &DataWriter<Reading>, r: &DataReader<Reading>) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while w.publication_matched_status().current_count == 0
        || r.subscription_matched_status().current_count == 0
    {
        assert!(Instant::now() < deadline, "no match within 10 s");
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Writes `n` samples and returns the sequence numbers taken, in order of arrival.
fn send_and_take(w: &DataWriter<Reading>, r: &DataReader<Reading>, n: u32) -> Vec<u32> {
    for i in 0..n {
        w.write(&Reading {
            sensor: 1,
            seq: i,
            text: format!("sample {i}"),
        })
        .unwrap();
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut got = Vec::new();
    while got.len() < n as usize {
        assert!(Instant::now() < deadline, "received {} of {n}", got.len());
        for s in r.take(256).unwrap() {
            got.extend(s.data.map(|d| d.seq));
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    got
}

#[test]
fn hundred_reliable_samples_in_order() {
    let net = InProcessNetwork::new();
    let (a, b) = (participant(&net), participant(&net));
    let (w, r) = (writer(&a, "Readings"), reader(&b, "Readings"));
    wait_matched(&w, &r);
    assert_eq!(send_and_take(&w, &r, 100), (0..100).collect::<Vec<_>>());
    assert_eq!(a.discovered_participants().len(), 1);
    assert_eq!(a.counters().send_errors, 0);
}

#[test]
fn reliable_samples_survive_loss_duplication_and_reordering() {
    let net = InProcessNetwork::new();
    net.set_faults(FaultConfig {
        seed: 11,
        loss_percent: 10.0,
        duplicate_percent: 5.0,
        reorder_percent: 5.0,
        delay: Duration::from_micros(200),
        ..FaultConfig::default()
    });
    let (a, b) = (participant(&net), participant(&net));
    let (w, r) = (writer(&a, "Lossy"), reader(&b, "Lossy"));
    wait_matched(&w, &r);
    assert_eq!(send_and_take(&w, &r, 100), (0..100).collect::<Vec<_>>());
    assert!(
        net.dropped() > 0,
        "the network lost nothing: the test proves nothing"
    );
}

#[test]
fn networks_are_isolated() {
    let (n1, n2) = (InProcessNetwork::new(), InProcessNetwork::new());
    let (a, b) = (participant(&n1), participant(&n2));
    let c = participant(&n1);
    let deadline = Instant::now() + Duration::from_secs(10);
    while a.discovered_participants().is_empty() {
        assert!(Instant::now() < deadline, "a never found c");
        std::thread::sleep(Duration::from_millis(2));
    }
    std::thread::sleep(Duration::from_millis(100));
    let found: Vec<_> = a.discovered_participants().iter().map(|p| p.guid).collect();
    assert_eq!(found, vec![c.guid()]);
    assert!(b.discovered_participants().is_empty());
}
