//! Content-filtered topics over the in-process transport: a filtered reader beside an
//! unfiltered one on the same writer, parameters changed at run time, filtered samples taking
//! no room and waking nobody, local delivery, and the errors of a bad expression.

use std::time::{Duration, Instant};
use tessera::qos::{DataReaderQos, DataWriterQos, History, Reliability, ResourceLimits, TopicQos};
use tessera::transport::InProcessNetwork;
use tessera::{
    ContentFilteredTopic, DataReader, DataWriter, DomainParticipant, Error, ParticipantConfig,
    StatusMask, Topic, TopicEnum, TopicType,
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

/// Samples dropped for `r`: by its own filter, or for it by the writer (writer-side
/// filtering; `w` has no other filtered reader).
fn dropped(w: &DataWriter<Reading>, r: &DataReader<Reading>) -> u64 {
    r.filtered_out() + w.protocol_counters().samples_filtered
}

/// Writes `probe` until `r` receives it: the writer then filters with what `r` announced
/// last (a writer that filters for a reader knows its parameters only from its SEDP
/// announcement, so samples written before it arrives meet the old ones). Returns how many
/// probes it wrote.
fn until_received(w: &DataWriter<Reading>, r: &DataReader<Reading>, probe: Reading) -> u64 {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut n = 0;
    loop {
        w.write(&probe).unwrap();
        n += 1;
        settle(w);
        std::thread::sleep(Duration::from_millis(5));
        if !r.take(100).unwrap().is_empty() {
            return n;
        }
        assert!(Instant::now() < deadline, "the probe never arrived");
    }
}

/// Waits until the writer's samples are acknowledged by every reader.
fn settle(w: &DataWriter<Reading>) {
    w.wait_for_acknowledgments(Duration::from_secs(10)).unwrap();
}

/// The participants (kept alive), the content-filtered topic, the writer, the filtered
/// reader and the plain one.
type FilteredAndPlain = (
    Vec<DomainParticipant>,
    ContentFilteredTopic<Reading>,
    DataWriter<Reading>,
    DataReader<Reading>,
    DataReader<Reading>,
);

/// A reliable writer on one participant; on another, a reliable KEEP_LAST 1 reader of a
/// content-filtered topic and a reliable KEEP_ALL reader of the plain topic, all matched.
fn filtered_and_plain(expr: &str, params: &[&str]) -> FilteredAndPlain {
    let net = InProcessNetwork::new();
    let (pw, pr) = (participant(&net), participant(&net));
    let t = topic(&pr);
    let params = params.iter().map(|p| (*p).to_owned()).collect();
    let cft = pr
        .create_contentfilteredtopic("filtered", &t, expr, params)
        .unwrap();
    let sub = pr.create_subscriber(Default::default()).unwrap();
    let filtered = sub
        .create_datareader(&cft, reliable(History::KeepLast(1)))
        .unwrap();
    let all = sub
        .create_datareader(&t, reliable(History::KeepAll))
        .unwrap();
    let w = writer(&pw, true);
    wait_matched(&w, 2);
    (vec![pw, pr], cft, w, filtered, all)
}

#[test]
fn filtered_reader_beside_an_unfiltered_one() {
    // KEEP_LAST 1 on one instance: a non-matching newer sample must not push out the last
    // matching one.
    let (_ps, _cft, w, filtered, all) =
        filtered_and_plain("seq >= %0 AND text LIKE 'keep%' AND level = High", &["4"]);
    for i in 0..20 {
        let text = if i % 3 == 0 { "drop" } else { "keep" };
        w.write(&sample(i, text)).unwrap();
    }
    settle(&w);
    assert_eq!(take_n(&all, 20), (0..20).collect::<Vec<_>>());
    // Passing: seq >= 4, odd, not a multiple of 3: 5 7 11 13 17 19; KEEP_LAST 1 keeps 19.
    assert_eq!(filtered.read(10).unwrap().len(), 1);
    assert_eq!(take_n(&filtered, 1), vec![19]);
    assert_eq!(dropped(&w, &filtered), 14);
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
    let probes = until_received(&w, &r, sample(13, "probe"));
    for i in 10..20 {
        w.write(&sample(i, "x")).unwrap();
    }
    settle(&w);
    assert_eq!(take_n(&r, 2), vec![12, 13]);
    std::thread::sleep(Duration::from_millis(50));
    assert!(r.take(10).unwrap().is_empty());
    // 7 of the first ten, 8 of the second, and the probes that met the old parameters
    // (dropped here or at the writer).
    assert_eq!(dropped(&w, &r), 15 + probes - 1);
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
    assert_eq!(dropped(&w, &r), 10);
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

/// Writer-side filtering: the writer knows the remote reader's filter from SEDP, sends it
/// GAPs for what it drops, and the reliable reader neither stalls nor sees those samples
/// (its own filter has nothing left to drop). The unfiltered reader beside it gets all.
#[test]
fn writer_filters_for_remote_readers_and_gaps_keep_reliable_ones_going() {
    let (_ps, cft, w, filtered, all) = filtered_and_plain("seq >= %0", &["10"]);
    for i in 0..20 {
        w.write(&sample(i, "x")).unwrap();
    }
    settle(&w);
    assert_eq!(take_n(&all, 20).len(), 20);
    assert_eq!(take_n(&filtered, 1), vec![19]);
    let c = w.protocol_counters();
    assert_eq!(c.samples_filtered, 10, "{c:?}");
    assert!(c.gaps_sent >= 1, "{c:?}");
    assert_eq!(filtered.filtered_out(), 0, "the writer filtered them all");
    // New parameters reach the writer with the reader's next announcement.
    cft.set_expression_parameters(vec!["25".into()]).unwrap();
    // A probe the old parameters pass and the new ones drop: once the writer drops it, it
    // knows the new parameters (until then the reader drops it).
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let before = w.protocol_counters().samples_filtered;
        w.write(&sample(15, "probe")).unwrap();
        settle(&w);
        if w.protocol_counters().samples_filtered > before {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the writer never learnt the new parameters"
        );
    }
    let before = w.protocol_counters().samples_filtered;
    for i in 20..30 {
        w.write(&sample(i, "x")).unwrap();
    }
    settle(&w);
    assert_eq!(w.protocol_counters().samples_filtered - before, 5);
    let got: Vec<u32> = filtered
        .take(100)
        .unwrap()
        .into_iter()
        .filter_map(|s| s.data.map(|d| d.seq))
        .collect();
    assert_eq!(got.last(), Some(&29));
}

/// A best-effort filtered reader of a reliable writer: it gets GAPs for the samples the writer
/// drops for it, so it counts none of them as lost, and a reliable unfiltered reader beside it
/// is unaffected.
#[test]
fn asymmetric_reliabilities() {
    let net = InProcessNetwork::new();
    let (pw, pr) = (participant(&net), participant(&net));
    let t = topic(&pr);
    let cft = pr
        .create_contentfilteredtopic("odd", &t, "level = High", vec![])
        .unwrap();
    let sub = pr.create_subscriber(Default::default()).unwrap();
    let be = sub
        .create_datareader(
            &cft,
            DataReaderQos::default()
                .with_reliability(Reliability::best_effort())
                .with_history(History::KeepAll),
        )
        .unwrap();
    let rel = sub
        .create_datareader(&t, reliable(History::KeepAll))
        .unwrap();
    let w = writer(&pw, true);
    wait_matched(&w, 2);
    // A best-effort reader may miss the first samples while its writer proxy settles.
    std::thread::sleep(Duration::from_millis(100));
    for i in 0..10 {
        w.write(&sample(i, "x")).unwrap();
    }
    settle(&w);
    assert_eq!(take_n(&rel, 10), (0..10).collect::<Vec<_>>());
    assert_eq!(take_n(&be, 5), vec![1, 3, 5, 7, 9]);
    let c = w.protocol_counters();
    assert_eq!(c.samples_filtered, 5, "{c:?}");
    assert!(c.gaps_sent >= 1, "{c:?}");
    assert_eq!(be.filtered_out(), 0);
    assert_eq!(
        be.sample_lost_status().total_count,
        0,
        "filtered is not lost"
    );
}
