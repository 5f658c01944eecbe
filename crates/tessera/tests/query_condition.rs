//! Query conditions: read/take with a condition select only passing samples, parameters
//! change, the next-instance forms skip instances without a passing sample, and a wait set
//! wakes only when a passing sample is there.

use std::time::Duration;
use tessera::history::{InstanceStateMask, SampleState, SampleStateMask, ViewStateMask};
use tessera::qos::{DataReaderQos, DataWriterQos, History, Reliability, TopicQos};
use tessera::transport::InProcessNetwork;
use tessera::{
    DataReader, DataWriter, DomainParticipant, Error, ParticipantConfig, TopicType, WaitSet,
};

#[derive(TopicType, Debug, Clone, PartialEq)]
struct Reading {
    #[key]
    sensor: u32,
    seq: u32,
    text: String,
}

fn pair() -> (DomainParticipant, DataWriter<Reading>, DataReader<Reading>) {
    let p = DomainParticipant::with_qos(
        0,
        Default::default(),
        ParticipantConfig::with_in_process(InProcessNetwork::new()),
    )
    .unwrap();
    let t = p.create_topic::<Reading>("q", TopicQos::default()).unwrap();
    let w = p
        .create_publisher(Default::default())
        .unwrap()
        .create_datawriter(&t, DataWriterQos::default().with_history(History::KeepAll))
        .unwrap();
    let r = p
        .create_subscriber(Default::default())
        .unwrap()
        .create_datareader(
            &t,
            DataReaderQos::default()
                .with_reliability(Reliability::reliable(Duration::from_secs(1)))
                .with_history(History::KeepAll),
        )
        .unwrap();
    (p, w, r)
}

fn write(w: &DataWriter<Reading>, sensor: u32, seq: u32, text: &str) {
    w.write(&Reading {
        sensor,
        seq,
        text: text.into(),
    })
    .unwrap();
}

fn seqs(s: &[tessera::history::Sample<Reading>]) -> Vec<u32> {
    s.iter()
        .filter_map(|s| s.data.as_ref().map(|d| d.seq))
        .collect()
}

fn query(
    r: &DataReader<Reading>,
    sample: SampleStateMask,
    expr: &str,
    params: &[&str],
) -> tessera::QueryCondition {
    r.create_querycondition(
        sample,
        ViewStateMask::ANY,
        InstanceStateMask::ANY,
        expr,
        params.iter().map(|s| (*s).to_owned()).collect(),
    )
    .unwrap()
}

#[test]
fn read_and_take_with_a_query() {
    let (_p, w, r) = pair();
    for i in 0..10 {
        write(&w, 1, i, if i % 2 == 0 { "keep" } else { "skip" });
    }
    let q = query(
        &r,
        SampleStateMask::NOT_READ,
        "seq >= %0 AND text LIKE 'k%'",
        &["4"],
    );
    assert!(q.trigger_value());
    let got = r.read_w_condition(&q, 100).unwrap();
    assert_eq!(seqs(&got), vec![4, 6, 8]);
    assert!(got
        .iter()
        .all(|s| s.info.sample_state == SampleState::NotRead));
    // Read now: a NOT_READ query no longer selects them.
    assert!(!q.trigger_value());
    assert!(r.read_w_condition(&q, 100).unwrap().is_empty());
    q.set_query_parameters(vec!["0".into()]).unwrap();
    assert_eq!(seqs(&r.take_w_condition(&q, 100).unwrap()), vec![0, 2]);
    // The others stay in the reader: 4, 6, 8 (read) and the odd ones.
    assert_eq!(seqs(&r.take(100).unwrap()), vec![1, 3, 4, 5, 6, 7, 8, 9]);
    assert!(matches!(
        q.set_query_parameters(vec!["x".into()]),
        Err(Error::BadParameter(_))
    ));
    assert_eq!(q.query_parameters(), ["0"]);
}

#[test]
fn take_w_condition_honours_max_and_keeps_the_rest() {
    let (_p, w, r) = pair();
    for i in 0..6 {
        write(&w, 1, i, "x");
    }
    let q = query(&r, SampleStateMask::ANY, "seq <> 2", &[]);
    assert_eq!(seqs(&r.take_w_condition(&q, 2).unwrap()), vec![0, 1]);
    assert_eq!(seqs(&r.take_w_condition(&q, 10).unwrap()), vec![3, 4, 5]);
    assert_eq!(seqs(&r.take(10).unwrap()), vec![2]);
}

#[test]
fn next_instance_forms_skip_instances_without_a_passing_sample() {
    let (_p, w, r) = pair();
    for sensor in 1..=3 {
        for i in 0..3 {
            write(&w, sensor, sensor * 10 + i, "x");
        }
    }
    let q = query(&r, SampleStateMask::ANY, "seq > 20 OR seq = 10", &[]);
    let first = r.read_next_instance_w_condition(None, &q, 10).unwrap();
    assert_eq!(seqs(&first), vec![10]);
    let h = first[0].info.instance_handle;
    // Instance 2 (20, 21, 22) has 21 and 22; instance 3 has all three.
    let second = r.take_next_instance_w_condition(Some(h), &q, 10).unwrap();
    assert_eq!(seqs(&second), vec![21, 22]);
    let h2 = second[0].info.instance_handle;
    let third = r.take_next_instance_w_condition(Some(h2), &q, 10).unwrap();
    assert_eq!(seqs(&third), vec![30, 31, 32]);
    let h3 = third[0].info.instance_handle;
    assert!(r
        .read_next_instance_w_condition(Some(h3), &q, 10)
        .unwrap()
        .is_empty());
    // With 10 only (instance 1), the next after instance 1 is none.
    let q10 = query(&r, SampleStateMask::ANY, "seq = 10", &[]);
    assert!(r
        .take_next_instance_w_condition(Some(h), &q10, 10)
        .unwrap()
        .is_empty());
}

#[test]
fn wait_set_wakes_only_for_a_passing_sample() {
    let (_p, w, r) = pair();
    let q = query(&r, SampleStateMask::NOT_READ, "text = %0", &["wanted"]);
    let mut ws = WaitSet::new();
    ws.attach(&q.condition());
    write(&w, 1, 0, "other");
    write(&w, 1, 1, "other");
    assert!(matches!(
        ws.wait(Some(Duration::from_millis(100))),
        Err(Error::Timeout)
    ));
    let w2 = w.clone();
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(50));
        write(&w2, 1, 2, "other");
        std::thread::sleep(Duration::from_millis(50));
        write(&w2, 2, 3, "wanted");
    });
    let active = ws.wait(Some(Duration::from_secs(10))).unwrap();
    assert_eq!(active, vec![q.condition()]);
    t.join().unwrap();
    assert_eq!(seqs(&r.take_w_condition(&q, 10).unwrap()), vec![3]);
    assert!(!q.trigger_value());
    // Changing the parameters wakes the wait set again: "other" samples are there.
    q.set_query_parameters(vec!["other".into()]).unwrap();
    assert_eq!(ws.wait(Some(Duration::from_secs(1))).unwrap().len(), 1);
}

#[test]
fn misuse_is_refused() {
    let (_p, _w, r) = pair();
    let (_p2, _w2, r2) = pair();
    let q = query(&r, SampleStateMask::ANY, "seq = 1", &[]);
    assert!(matches!(
        r2.read_w_condition(&q, 1),
        Err(Error::BadParameter(_))
    ));
    match r.create_querycondition(
        SampleStateMask::ANY,
        ViewStateMask::ANY,
        InstanceStateMask::ANY,
        "sensor = 'x'",
        vec![],
    ) {
        Err(Error::BadParameter(m)) => assert!(m.contains("column 10"), "{m}"),
        other => panic!("{other:?}"),
    }
}
