//! Multicast user data end to end over the in-process transport (which emulates the domain's
//! user multicast group): readers announce the group, a writer with several matched readers
//! sends each new sample once to it, every reader — including two readers of one participant
//! sharing a datagram — gets every sample exactly once, and `AllowMulticast::SpdpOnly` goes back
//! to one unicast copy per reader. Plain `cargo test`: no socket.

mod support;

use std::time::{Duration, Instant};
use tessera::qos::{DataReaderQos, DataWriterQos, History, Reliability, TopicQos};
use tessera::transport::{FaultConfig, InProcessNetwork};
use tessera::TopicType;
use tessera::{AllowMulticast, DataReader, DataWriter, DomainParticipant, ParticipantConfig};

#[derive(TopicType, Debug, Clone, PartialEq)]
struct Blob {
    #[key]
    id: u32,
    seq: u32,
    data: Vec<u8>,
}

fn participant(net: &InProcessNetwork, allow: AllowMulticast) -> DomainParticipant {
    let config = ParticipantConfig {
        allow_multicast: Some(allow),
        ..ParticipantConfig::with_in_process(net.clone())
    };
    DomainParticipant::with_qos(0, Default::default(), config).unwrap()
}

fn writer(p: &DomainParticipant) -> DataWriter<Blob> {
    let t = p.create_topic::<Blob>("Mc", TopicQos::default()).unwrap();
    p.create_publisher(Default::default())
        .unwrap()
        .create_datawriter(&t, DataWriterQos::default().with_history(History::KeepAll))
        .unwrap()
}

fn reader(p: &DomainParticipant) -> DataReader<Blob> {
    let t = p.create_topic::<Blob>("Mc", TopicQos::default()).unwrap();
    let qos = DataReaderQos::default()
        .with_reliability(Reliability::reliable(Duration::from_secs(1)))
        .with_history(History::KeepAll);
    p.create_subscriber(Default::default())
        .unwrap()
        .create_datareader(&t, qos)
        .unwrap()
}

/// 1 writer participant; reader participants: three with one reader, one with two readers
/// (five readers that share the group). Returns (datagrams sent by the writer's participant per
/// sample, samples each reader took).
fn run(
    allow_readers: AllowMulticast,
    allow_writer: AllowMulticast,
    faults: FaultConfig,
) -> (f64, Vec<Vec<u32>>) {
    let net = InProcessNetwork::new();
    let wp = participant(&net, allow_writer);
    let w = writer(&wp);
    let rps: Vec<DomainParticipant> = (0..4).map(|_| participant(&net, allow_readers)).collect();
    let mut readers: Vec<DataReader<Blob>> = rps.iter().map(reader).collect();
    readers.push(reader(&rps[3]));
    let deadline = Instant::now() + Duration::from_secs(10);
    while w.publication_matched_status().current_count < readers.len() as i32
        || readers
            .iter()
            .any(|r| r.subscription_matched_status().current_count == 0)
    {
        assert!(Instant::now() < deadline, "no full match within 10 s");
        std::thread::sleep(Duration::from_millis(2));
    }
    // Discovery is done: let its last datagrams (SEDP acknowledgments) go out first.
    std::thread::sleep(Duration::from_millis(300));
    net.set_faults(faults);
    let n = 200u32;
    let before = wp.counters().datagrams_sent;
    for i in 0..n {
        w.write(&Blob {
            id: i % 4,
            seq: i,
            data: vec![i as u8; 100],
        })
        .unwrap();
        w.flush();
    }
    w.wait_for_acknowledgments(Duration::from_secs(20)).unwrap();
    let sent = wp.counters().datagrams_sent - before;
    // Exactly once per reader: the helper also takes what arrives late.
    let got = support::take_until_each_has(&readers, n as usize, |b| b.seq);
    (sent as f64 / n as f64, got)
}

fn assert_all_once(got: &[Vec<u32>]) {
    for g in got {
        let mut sorted = g.clone();
        sorted.sort_unstable();
        assert_eq!(
            sorted,
            (0..200).collect::<Vec<_>>(),
            "a reader missed or duplicated samples"
        );
    }
}

#[test]
fn writer_sends_each_sample_once_to_the_shared_group() {
    let (per_sample, got) = run(
        AllowMulticast::On,
        AllowMulticast::On,
        FaultConfig::default(),
    );
    assert_all_once(&got);
    // One multicast datagram per sample, plus heartbeats and acknowledgment traffic.
    assert!(per_sample < 1.6, "{per_sample} datagrams per sample");
}

#[test]
fn spdp_only_sends_one_copy_per_reader_participant() {
    let (per_sample, got) = run(
        AllowMulticast::SpdpOnly,
        AllowMulticast::SpdpOnly,
        FaultConfig::default(),
    );
    assert_all_once(&got);
    // Four reader participants, one unicast copy each (the participant with two readers
    // gets one datagram per reader: two).
    assert!(per_sample >= 4.0, "{per_sample} datagrams per sample");
}

#[test]
fn readers_without_multicast_get_unicast_from_a_multicast_writer() {
    // The readers announce no group: a writer that may multicast must not use it.
    let (per_sample, got) = run(
        AllowMulticast::SpdpOnly,
        AllowMulticast::On,
        FaultConfig::default(),
    );
    assert_all_once(&got);
    assert!(per_sample >= 4.0, "{per_sample} datagrams per sample");
}

#[test]
fn multicast_losses_are_repaired_by_unicast() {
    let faults = FaultConfig {
        seed: 7,
        loss_percent: 10.0,
        ..FaultConfig::default()
    };
    let (_, got) = run(AllowMulticast::On, AllowMulticast::On, faults);
    assert_all_once(&got);
}

#[test]
fn datagram_size_follows_the_transport() {
    // The in-process transport carries 65,507-byte datagrams: a 60 kB sample goes whole, not as
    // five fragments of the 14,720-byte default. Best effort, so that no heartbeat or repair
    // adds datagrams to the count.
    let net = InProcessNetwork::new();
    let wp = participant(&net, AllowMulticast::On);
    let t = wp.create_topic::<Blob>("Big", TopicQos::default()).unwrap();
    let w = wp
        .create_publisher(Default::default())
        .unwrap()
        .create_datawriter(
            &t,
            DataWriterQos::default().with_reliability(Reliability::best_effort()),
        )
        .unwrap();
    let rp = participant(&net, AllowMulticast::On);
    let t = rp.create_topic::<Blob>("Big", TopicQos::default()).unwrap();
    let r = rp
        .create_subscriber(Default::default())
        .unwrap()
        .create_datareader(
            &t,
            DataReaderQos::default().with_reliability(Reliability::best_effort()),
        )
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while w.publication_matched_status().current_count == 0
        || r.subscription_matched_status().current_count == 0
    {
        assert!(Instant::now() < deadline, "no match within 10 s");
        std::thread::sleep(Duration::from_millis(2));
    }
    assert_eq!(w.max_message_size(), 65507);
    // Past the quick SPDP announcements of the first second: only a periodic one (every 3 s)
    // may fall into the count.
    std::thread::sleep(Duration::from_millis(1200));
    let before = wp.counters().datagrams_sent;
    w.write(&Blob {
        id: 1,
        seq: 1,
        data: vec![7; 60_000],
    })
    .unwrap();
    w.flush();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let s = r.take(1).unwrap();
        if let Some(d) = s.into_iter().find_map(|s| s.data) {
            assert_eq!(d.data.len(), 60_000);
            break;
        }
        assert!(Instant::now() < deadline, "the large sample did not arrive");
        std::thread::sleep(Duration::from_millis(2));
    }
    let sent = wp.counters().datagrams_sent - before;
    // One DATA (and perhaps an SPDP announcement); 14,720-byte datagrams: five DATA_FRAGs.
    assert!(sent <= 2, "{sent} datagrams");
}
