//! A content-filtered topic over real UDPv4 sockets (in a network namespace:
//! `scripts/netns-run cargo test -p tessera --test content_filter_udp -- --include-ignored`):
//! a writer, a filtered reliable reader and an unfiltered one on three participants. The
//! unfiltered reader may be served through the user multicast group; the filtered one is
//! served by unicast with GAPs for what its filter drops, and sees exactly what passes, also
//! after its parameters change.

mod support;

use std::time::{Duration, Instant};
use tessera::qos::{DataReaderQos, DataWriterQos, History, Reliability, TopicQos};
use tessera::transport::TransportKind;
use tessera::{DataReader, DomainParticipant, ParticipantConfig, TopicType};

#[derive(TopicType, Debug, Clone, PartialEq)]
struct Tick {
    #[key]
    id: u32,
    seq: u32,
    label: String,
}

fn participant() -> DomainParticipant {
    // UDP alone: shared memory would carry the data past the sockets this test is about.
    let config = ParticipantConfig {
        transports: Some(vec![TransportKind::Udp4]),
        ..Default::default()
    };
    DomainParticipant::with_qos(0, Default::default(), config).unwrap()
}

fn reliable_keep_all() -> DataReaderQos {
    DataReaderQos::default()
        .with_reliability(Reliability::reliable(Duration::from_secs(1)))
        .with_history(History::KeepAll)
}

/// Takes until `n` samples came; their sequence numbers sorted (`take` goes instance by
/// instance).
fn take_seqs(r: &DataReader<Tick>, n: usize) -> Vec<u32> {
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut got = Vec::new();
    while got.len() < n {
        assert!(Instant::now() < deadline, "took {got:?}, expected {n}");
        got.extend(
            r.take(1000)
                .unwrap()
                .into_iter()
                .filter_map(|s| s.data.map(|d| d.seq)),
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    got.sort_unstable();
    got
}

#[test]
#[ignore = "needs a network namespace: scripts/netns-run (scripts/test runs it)"]
fn filtered_and_plain_readers_over_udp() {
    support::require_netns();
    let (pw, pf, pa) = (participant(), participant(), participant());
    let topic = |p: &DomainParticipant| {
        p.create_topic::<Tick>("CftUdp", TopicQos::default())
            .unwrap()
    };
    let cft = pf
        .create_contentfilteredtopic(
            "CftUdpEven",
            &topic(&pf),
            "seq BETWEEN %0 AND %1 AND label LIKE 'ok%'",
            vec!["0".into(), "999".into()],
        )
        .unwrap();
    let filtered = pf
        .create_subscriber(Default::default())
        .unwrap()
        .create_datareader(&cft, reliable_keep_all())
        .unwrap();
    let all = pa
        .create_subscriber(Default::default())
        .unwrap()
        .create_datareader(&topic(&pa), reliable_keep_all())
        .unwrap();
    let w = pw
        .create_publisher(Default::default())
        .unwrap()
        .create_datawriter(
            &topic(&pw),
            DataWriterQos::default().with_history(History::KeepAll),
        )
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while w.publication_matched_status().current_count < 2 {
        assert!(Instant::now() < deadline, "no match");
        std::thread::sleep(Duration::from_millis(5));
    }
    let write = |seq: u32| {
        let label = if seq % 2 == 0 { "ok" } else { "no" };
        w.write(&Tick {
            id: seq % 3,
            seq,
            label: label.into(),
        })
        .unwrap();
    };
    for seq in 0..200 {
        write(seq);
    }
    w.wait_for_acknowledgments(Duration::from_secs(20)).unwrap();
    assert_eq!(take_seqs(&all, 200), (0..200).collect::<Vec<_>>());
    assert_eq!(
        take_seqs(&filtered, 100),
        (0..200).step_by(2).collect::<Vec<_>>()
    );
    let c = w.protocol_counters();
    assert_eq!(c.samples_filtered, 100, "{c:?}");
    assert!(c.gaps_sent > 0, "{c:?}");

    // New parameters: once the writer drops a probe that only the old ones pass, it filters
    // with them.
    cft.set_expression_parameters(vec!["1000".into(), "1100".into()])
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let before = w.protocol_counters().samples_filtered;
        write(500);
        w.wait_for_acknowledgments(Duration::from_secs(20)).unwrap();
        if w.protocol_counters().samples_filtered > before {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the writer never learnt the new parameters"
        );
    }
    for seq in 1000..1200 {
        write(seq);
    }
    w.wait_for_acknowledgments(Duration::from_secs(20)).unwrap();
    assert_eq!(
        take_seqs(&filtered, 51),
        (1000..=1100).step_by(2).collect::<Vec<_>>()
    );
    std::thread::sleep(Duration::from_millis(100));
    assert!(filtered.take(10).unwrap().is_empty());
}
