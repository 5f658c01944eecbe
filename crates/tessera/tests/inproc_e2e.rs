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

/// Regression test for the send path: a writer whose link to one reader is shaped (a
/// bandwidth-limited in-process link stands in for a slow or shaped UDP link) must not stall
/// the participant's receive and event threads. Before the fix, the application thread held
/// the writer's lock across a blocking send to the slow reader, and receive threads blocked on
/// that lock (or sent to the slow reader themselves), so a new participant's SPDP went
/// unanswered for seconds.
#[test]
fn a_shaped_destination_does_not_stall_discovery_or_acknowledgments() {
    let net = InProcessNetwork::new();
    let a = participant(&net); // node 0: the writer
    let b = participant(&net); // node 1: the slow reader
    let c = participant(&net); // node 2: a healthy reader
    let w = writer(&a, "Shaped");
    let (rb, rc) = (reader(&b, "Shaped"), reader(&c, "Shaped"));
    wait_matched(&w, &rb);
    wait_matched(&w, &rc);
    let deadline = Instant::now() + Duration::from_secs(10);
    while w.publication_matched_status().current_count < 2 {
        assert!(
            Instant::now() < deadline,
            "writer never matched both readers"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    // 5 kB/s towards b: one 8 kB sample takes 1.6 s on that link.
    assert!(net.set_node_faults(
        1,
        FaultConfig {
            bandwidth: Some(5_000),
            link_buffer: 4096,
            ..FaultConfig::default()
        }
    ));
    /// Stops the writing thread however the test ends (a failed assertion included).
    struct StopOnDrop(std::sync::Arc<std::sync::atomic::AtomicBool>);
    impl Drop for StopOnDrop {
        fn drop(&mut self) {
            self.0.store(true, std::sync::atomic::Ordering::Relaxed);
        }
    }
    let stop = StopOnDrop(Default::default());
    let writing = {
        let stop = stop.0.clone();
        std::thread::spawn(move || {
            let mut i = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let _ = w.write(&Reading {
                    sensor: 1,
                    seq: i,
                    text: "x".repeat(8000),
                });
                i += 1;
            }
        })
    };
    std::thread::sleep(Duration::from_millis(500));

    // A newcomer is discovered (SPDP received, answered, SEDP exchanged) and matched with
    // the busy writer promptly, and the healthy reader keeps receiving.
    let t0 = Instant::now();
    let d = participant(&net);
    let wd = writer(&d, "Other");
    let rd = reader(&d, "Shaped");
    let ra = reader(&a, "Other");
    while ra.subscription_matched_status().current_count == 0
        || rd.subscription_matched_status().current_count == 0
        || !a
            .discovered_participants()
            .iter()
            .any(|p| p.guid == d.guid())
    {
        assert!(
            t0.elapsed() < Duration::from_secs(2),
            "the writer's participant took over 2 s to discover a newcomer while one link is slow"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    drop(wd);
    let before = rc.take(1000).unwrap().len();
    std::thread::sleep(Duration::from_millis(600));
    let during = rc.take(1000).unwrap().len();
    drop(stop);
    writing.join().unwrap();
    assert!(
        before + during > 0,
        "the healthy reader received nothing while the writer ran"
    );
}

/// A writer that may not block (max_blocking_time 0) towards a shaped reader: `write` returns
/// at once, what the link cannot take waits in a bounded per-destination queue, the overflow
/// is dropped and counted, and what arrives arrives in order.
#[test]
fn a_non_blocking_writer_queues_in_order_and_counts_drops() {
    let net = InProcessNetwork::new();
    let (a, b) = (participant(&net), participant(&net));
    let t = a
        .create_topic::<Reading>("Queued", TopicQos::default())
        .unwrap();
    let wqos = DataWriterQos::default().with_reliability(Reliability {
        kind: tessera::qos::ReliabilityKind::BestEffort,
        max_blocking_time: Duration::ZERO,
    });
    let w = a
        .create_publisher(Default::default())
        .unwrap()
        .create_datawriter(&t, wqos)
        .unwrap();
    let tb = b
        .create_topic::<Reading>("Queued", TopicQos::default())
        .unwrap();
    let r = b
        .create_subscriber(Default::default())
        .unwrap()
        .create_datareader(&tb, DataReaderQos::default().with_history(History::KeepAll))
        .unwrap();
    wait_matched(&w, &r);
    assert!(net.set_node_faults(
        1,
        FaultConfig {
            bandwidth: Some(100_000),
            link_buffer: 4096,
            ..FaultConfig::default()
        }
    ));
    let t0 = Instant::now();
    for i in 0..3000 {
        w.write(&Reading {
            sensor: 1,
            seq: i,
            text: "y".repeat(1000),
        })
        .unwrap();
    }
    // 3 MB at 100 kB/s would take 30 s if `write` waited for the link.
    assert!(t0.elapsed() < Duration::from_secs(3), "{:?}", t0.elapsed());
    let drops = a.counters().send_queue_drops;
    assert!(
        drops > 0,
        "the queue is bounded: 3000 datagrams cannot all wait"
    );
    std::thread::sleep(Duration::from_millis(500));
    let got: Vec<u32> = r
        .take(5000)
        .unwrap()
        .into_iter()
        .filter_map(|s| s.data.map(|d| d.seq))
        .collect();
    assert!(!got.is_empty());
    assert!(got.windows(2).all(|p| p[0] < p[1]), "out of order: {got:?}");
}
