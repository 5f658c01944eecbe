//! Content-filtered topics over the in-process transport: a filtered reader beside an
//! unfiltered one on the same writer, parameters changed at run time, filtered samples taking
//! no room and waking nobody, local delivery, and the errors of a bad expression.

use std::time::{Duration, Instant};
use tessera::qos::{DataReaderQos, DataWriterQos, History, Reliability, ResourceLimits, TopicQos};
use tessera::transport::InProcessNetwork;
use tessera::{
    DataReader, DataWriter, DomainParticipant, Error, ParticipantConfig, StatusMask, Topic,
    TopicEnum, TopicType,
};

#[derive(TopicEnum, Debug, Clone, Copy, PartialEq)]
enum Level {
    Low,
    High,
}

#[derive(TopicType, Debug, Clone, PartialEq)]
struct Reading {
    #[key]
    sensor: u32,
    seq: u32,
    text: String,
    level: Level,
}

fn participant(net: &InProcessNetwork) -> DomainParticipant {
    DomainParticipant::with_qos(
        0,
        Default::default(),
        ParticipantConfig::with_in_process(net.clone()),
    )
    .unwrap()
}

fn topic(p: &DomainParticipant) -> Topic<Reading> {
    p.create_topic::<Reading>("readings", TopicQos::default())
        .unwrap()
}

fn writer(p: &DomainParticipant, reliable: bool) -> DataWriter<Reading> {
    let mut qos = DataWriterQos::default().with_history(History::KeepAll);
    if !reliable {
        qos = qos.with_reliability(Reliability::best_effort());
    }
    p.create_publisher(Default::default())
        .unwrap()
        .create_datawriter(&topic(p), qos)
        .unwrap()
}

fn reliable(history: History) -> DataReaderQos {
    DataReaderQos::default()
        .with_reliability(Reliability::reliable(Duration::from_secs(1)))
        .with_history(history)
}

fn sample(seq: u32, text: &str) -> Reading {
    Reading {
        sensor: 1,
        seq,
        text: text.into(),
        level: if seq % 2 == 0 {
            Level::Low
        } else {
            Level::High
        },
    }
}

fn wait_matched(w: &DataWriter<Reading>, readers: usize) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while w.publication_matched_status().current_count < readers as i32 {
        assert!(Instant::now() < deadline, "no match within 10 s");
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Takes until `n` samples came (or 10 s passed); returns their sequence numbers.
fn take_n(r: &DataReader<Reading>, n: usize) -> Vec<u32> {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut got = Vec::new();
    while got.len() < n {
        assert!(Instant::now() < deadline, "took {got:?}, expected {n}");
        for s in r.take(256).unwrap() {
            got.extend(s.data.map(|d| d.seq));
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    got
}

/// Waits until the writer's samples are acknowledged by every reader.
fn settle(w: &DataWriter<Reading>) {
    w.wait_for_acknowledgments(Duration::from_secs(10)).unwrap();
}

#[test]
fn filtered_reader_beside_an_unfiltered_one() {
    let net = InProcessNetwork::new();
    let (pw, pr) = (participant(&net), participant(&net));
    let t = topic(&pr);
    let cft = pr
        .create_contentfilteredtopic(
            "readings_high",
            &t,
            "seq >= %0 AND text LIKE 'keep%' AND level = High",
            vec!["4".into()],
        )
        .unwrap();
    let sub = pr.create_subscriber(Default::default()).unwrap();
    // KEEP_LAST 1 on one instance: a non-matching newer sample must not push out the last
    // matching one.
    let filtered = sub
        .create_datareader(&cft, reliable(History::KeepLast(1)))
        .unwrap();
    let all = sub
        .create_datareader(&t, reliable(History::KeepAll))
        .unwrap();
    let w = writer(&pw, true);
    wait_matched(&w, 2);
    for i in 0..20 {
        let text = if i % 3 == 0 { "drop" } else { "keep" };
        w.write(&sample(i, text)).unwrap();
    }
    settle(&w);
    assert_eq!(take_n(&all, 20), (0..20).collect::<Vec<_>>());
    // Passing: seq >= 4, odd, not a multiple of 3: 5 7 11 13 17 19; KEEP_LAST 1 keeps 19.
    assert_eq!(filtered.read(10).unwrap().len(), 1);
    assert_eq!(take_n(&filtered, 1), vec![19]);
    assert_eq!(filtered.filtered_out(), 14);
    assert_eq!(all.filtered_out(), 0);
    assert_eq!(filtered.untyped().protocol_counters().refused, 0);
}

#[test]
fn parameters_change_at_run_time() {
    let net = InProcessNetwork::new();
    let (pw, pr) = (participant(&net), participant(&net));
    let t = topic(&pr);
    let cft = pr
        .create_contentfilteredtopic(
            "window",
            &t,
            "seq BETWEEN %0 AND %1",
            vec!["0".into(), "2".into()],
        )
        .unwrap();
    let r = pr
        .create_subscriber(Default::default())
        .unwrap()
        .create_datareader(&cft, reliable(History::KeepAll))
        .unwrap();
    let w = writer(&pw, true);
    wait_matched(&w, 1);
    for i in 0..10 {
        w.write(&sample(i, "x")).unwrap();
    }
    settle(&w);
    assert_eq!(take_n(&r, 3), vec![0, 1, 2]);
    // A bad set is refused whole and the old parameters stay.
    assert!(matches!(
        cft.set_expression_parameters(vec!["7".into(), "eight".into()]),
        Err(Error::BadParameter(_))
    ));
    assert_eq!(cft.expression_parameters(), ["0", "2"]);
    cft.set_expression_parameters(vec!["12".into(), "13".into()])
        .unwrap();
    for i in 10..20 {
        w.write(&sample(i, "x")).unwrap();
    }
    settle(&w);
    assert_eq!(take_n(&r, 2), vec![12, 13]);
    std::thread::sleep(Duration::from_millis(50));
    assert!(r.take(10).unwrap().is_empty());
    assert_eq!(r.filtered_out(), 15);
}

#[test]
fn filtered_samples_take_no_room_and_wake_nobody() {
    let net = InProcessNetwork::new();
    let (pw, pr) = (participant(&net), participant(&net));
    let t = topic(&pr);
    let cft = pr
        .create_contentfilteredtopic("only_keep", &t, "text = 'keep'", vec![])
        .unwrap();
    let mut qos = reliable(History::KeepAll);
    qos.resource_limits = ResourceLimits {
        max_samples: Some(2),
        max_instances: None,
        max_samples_per_instance: Some(2),
    };
    let r = pr
        .create_subscriber(Default::default())
        .unwrap()
        .create_datareader(&cft, qos)
        .unwrap();
    let data = r.status_condition(StatusMask::DATA_AVAILABLE);
    let w = writer(&pw, true);
    wait_matched(&w, 1);
    for i in 0..10 {
        w.write(&sample(i, "drop")).unwrap();
    }
    // Acknowledged although dropped: the reliable writer does not wait for them.
    settle(&w);
    assert!(
        !data.trigger_value(),
        "dropped samples raised DATA_AVAILABLE"
    );
    assert_eq!(r.filtered_out(), 10);
    w.write(&sample(10, "keep")).unwrap();
    w.write(&sample(11, "keep")).unwrap();
    settle(&w);
    assert!(data.trigger_value());
    assert_eq!(take_n(&r, 2), vec![10, 11]);
    assert_eq!(r.sample_rejected_status().total_count, 0);
}

#[test]
fn local_readers_filter_too() {
    let net = InProcessNetwork::new();
    let p = participant(&net);
    let t = topic(&p);
    let cft = p
        .create_contentfilteredtopic("odd", &t, "level = 'High'", vec![])
        .unwrap();
    let r = p
        .create_subscriber(Default::default())
        .unwrap()
        .create_datareader(&cft, reliable(History::KeepAll))
        .unwrap();
    let w = writer(&p, true);
    wait_matched(&w, 1);
    for i in 0..6 {
        w.write(&sample(i, "x")).unwrap();
    }
    assert_eq!(take_n(&r, 3), vec![1, 3, 5]);
    assert_eq!(r.filtered_out(), 3);
}

#[test]
fn bad_expressions_are_refused_with_their_column() {
    let net = InProcessNetwork::new();
    let p = participant(&net);
    let t = topic(&p);
    for (expr, needle) in [
        ("seqq > 1", "column 1: unknown member `seqq`"),
        ("seq > 'a'", "column 7"),
        ("seq >", "column 6"),
        ("level = Medium", "Medium"),
    ] {
        match p.create_contentfilteredtopic("bad", &t, expr, vec![]) {
            Err(Error::BadParameter(m)) => assert!(m.contains(needle), "{expr}: {m}"),
            other => panic!("{expr}: {other:?}"),
        }
    }
    assert!(matches!(
        p.create_contentfilteredtopic("bad", &t, "seq = %1", vec!["1".into()]),
        Err(Error::BadParameter(_))
    ));
}
