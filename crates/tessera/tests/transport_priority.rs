//! TRANSPORT_PRIORITY marks a writer's datagrams with a traffic class (the IP TOS byte,
//! DSCP = the priority up to 63): checked on the in-process network, which counts marked
//! datagrams as a router would see them (the UDP marking itself is tested in
//! `transport/tos.rs`, inside a network namespace).

use std::time::{Duration, Instant};
use tessera::qos::{
    DataReaderQos, DataWriterQos, History, Reliability, TopicQos, TransportPriority,
};
use tessera::transport::InProcessNetwork;
use tessera::{DataReader, DataWriter, DomainParticipant, ParticipantConfig, TopicType};

#[derive(TopicType, Debug, Clone, PartialEq)]
struct Level {
    value: u32,
}

fn participant(net: &InProcessNetwork) -> DomainParticipant {
    DomainParticipant::with_qos(
        0,
        Default::default(),
        ParticipantConfig::with_in_process(net.clone()),
    )
    .unwrap()
}

fn writer(p: &DomainParticipant, topic: &str, priority: i32) -> DataWriter<Level> {
    let t = p.create_topic::<Level>(topic, TopicQos::default()).unwrap();
    let qos = DataWriterQos {
        transport_priority: TransportPriority(priority),
        ..DataWriterQos::default().with_history(History::KeepAll)
    };
    p.create_publisher(Default::default())
        .unwrap()
        .create_datawriter(&t, qos)
        .unwrap()
}

fn reader(p: &DomainParticipant, topic: &str) -> DataReader<Level> {
    let t = p.create_topic::<Level>(topic, TopicQos::default()).unwrap();
    p.create_subscriber(Default::default())
        .unwrap()
        .create_datareader(
            &t,
            DataReaderQos::default()
                .with_reliability(Reliability::reliable(Duration::from_secs(1)))
                .with_history(History::KeepAll),
        )
        .unwrap()
}

fn wait_for(r: &DataReader<Level>, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut got = 0;
    while got < n {
        got += r.take(usize::MAX).unwrap().len();
        assert!(Instant::now() < deadline, "{got} of {n} samples");
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn wait_matched(w: &DataWriter<Level>) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while w.matched_subscriptions().is_empty() {
        assert!(Instant::now() < deadline, "no match");
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn marked(net: &InProcessNetwork) -> Vec<(u8, u64)> {
    (1..64)
        .map(|d| (d, net.marked_datagrams(d)))
        .filter(|(_, n)| *n > 0)
        .collect()
}

#[test]
fn a_writers_priority_marks_its_datagrams_and_follows_set_qos() {
    let net = InProcessNetwork::new();
    let (pw, pr) = (participant(&net), participant(&net));
    let urgent = writer(&pw, "Urgent", 46);
    let plain = writer(&pw, "Plain", 0);
    let (ru, rp) = (reader(&pr, "Urgent"), reader(&pr, "Plain"));
    wait_matched(&urgent);
    wait_matched(&plain);
    // Discovery and the unprioritized writer send nothing marked.
    let before = marked(&net);
    for value in 0..20 {
        plain.write(&Level { value }).unwrap();
    }
    plain
        .wait_for_acknowledgments(Duration::from_secs(10))
        .unwrap();
    wait_for(&rp, 20);
    assert_eq!(marked(&net), before, "unmarked writer");
    for value in 0..20 {
        urgent.write(&Level { value }).unwrap();
    }
    urgent
        .wait_for_acknowledgments(Duration::from_secs(10))
        .unwrap();
    wait_for(&ru, 20);
    let ef = net.marked_datagrams(46);
    assert!(ef >= 20, "{:?}", marked(&net));
    assert!(marked(&net).iter().all(|(d, _)| *d == 46));
    // TRANSPORT_PRIORITY is changeable; above 63 is DSCP 63.
    urgent
        .set_qos(DataWriterQos {
            transport_priority: TransportPriority(1000),
            ..urgent.qos()
        })
        .unwrap();
    for value in 0..5 {
        urgent.write(&Level { value }).unwrap();
    }
    wait_for(&ru, 5);
    assert!(net.marked_datagrams(63) >= 5, "{:?}", marked(&net));
}
