//! End-to-end smoke tests, two participants in one process, over the in-process transport and
//! over UDPv4 (only inside a network namespace made for the test run: `scripts/test`).

use std::time::{Duration, Instant};
use tessera::qos::{DataReaderQos, DataWriterQos, History, Reliability, TopicQos};
use tessera::{DomainParticipant, TopicType};

#[derive(TopicType, Debug, Clone, PartialEq)]
struct Reading {
    #[key]
    sensor: u32,
    seq: u32,
    text: String,
}

mod support;
use support::Transport;

fn reliable_keep_all_between_two_participants(t: Transport) {
    let mut ps = t.participants(2).into_iter();
    let (a, b) = (ps.next().unwrap(), ps.next().unwrap());
    let ta = a
        .create_topic::<Reading>("Smoke", TopicQos::default())
        .unwrap();
    let tb = b
        .create_topic::<Reading>("Smoke", TopicQos::default())
        .unwrap();
    let wqos = DataWriterQos::default().with_history(History::KeepAll);
    let rqos = DataReaderQos::default()
        .with_reliability(Reliability::reliable(Duration::from_secs(1)))
        .with_history(History::KeepAll);
    let w = a
        .create_publisher(Default::default())
        .unwrap()
        .create_datawriter(&ta, wqos)
        .unwrap();
    let r = b
        .create_subscriber(Default::default())
        .unwrap()
        .create_datareader(&tb, rqos)
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while w.publication_matched_status().current_count == 0 {
        assert!(Instant::now() < deadline, "no match");
        std::thread::sleep(Duration::from_millis(10));
    }
    const N: u32 = 1000;
    for i in 0..N {
        w.write(&Reading {
            sensor: i % 7,
            seq: i,
            text: format!("sample {i}"),
        })
        .unwrap();
    }
    let mut got = Vec::new();
    while got.len() < N as usize {
        assert!(Instant::now() < deadline, "received {} of {N}", got.len());
        for s in r.take(256).unwrap() {
            if let Some(d) = s.data {
                got.push(d.seq);
            }
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    got.sort_unstable();
    assert_eq!(got, (0..N).collect::<Vec<_>>());
}

fn writer_and_reader_in_one_participant_match_unless_ignore_local(t: Transport) {
    for ignore_local in [false, true] {
        let config = tessera::ParticipantConfig {
            ignore_local,
            ..t.domain(0).config()
        };
        let p = DomainParticipant::with_qos(0, Default::default(), config).unwrap();
        let t = p
            .create_topic::<Reading>("Local", TopicQos::default())
            .unwrap();
        let rqos = DataReaderQos::default()
            .with_reliability(Reliability::reliable(Duration::from_secs(1)));
        let r = p
            .create_subscriber(Default::default())
            .unwrap()
            .create_datareader(&t, rqos)
            .unwrap();
        let w = p
            .create_publisher(Default::default())
            .unwrap()
            .create_datawriter(&t, DataWriterQos::default())
            .unwrap();
        let matched = w.publication_matched_status().current_count;
        assert_eq!(
            matched,
            if ignore_local { 0 } else { 1 },
            "ignore_local {ignore_local}"
        );
        if ignore_local {
            continue;
        }
        w.write(&Reading {
            sensor: 1,
            seq: 42,
            text: "local".into(),
        })
        .unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let got = r.take(10).unwrap();
            if let Some(s) = got.iter().find_map(|s| s.data.as_ref()) {
                assert_eq!(s.seq, 42);
                break;
            }
            assert!(Instant::now() < deadline, "local sample not delivered");
            std::thread::sleep(Duration::from_millis(5));
        }
        drop(w);
        assert_eq!(
            r.subscription_matched_status().current_count,
            0,
            "deleting the writer unmatches"
        );
    }
}

per_transport!(
    reliable_keep_all_between_two_participants,
    writer_and_reader_in_one_participant_match_unless_ignore_local
);
