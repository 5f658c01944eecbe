//! A reliable reader in the writer's own participant that refuses samples for its resource
//! limits loses none of them, as it would over the network: the writer keeps them and hands them
//! over, in order, once a `take` made room; a KEEP_ALL writer waits (up to `max_blocking_time`)
//! while what it keeps for a reader is at its bound, a KEEP_LAST one replaces old samples and
//! counts them lost. Best-effort readers still drop what they refuse.

mod support;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use support::{wait_until, Keyed, Transport};
use tessera::qos::{
    DataReaderQos, DataWriterQos, History, ReaderDataLifecycle, Reliability, ResourceLimits,
    TopicQos,
};
use tessera::{DataReader, DataReaderListener, DataWriter, DomainParticipant, Error, StateMasks};

fn limits(max_samples: u32) -> ResourceLimits {
    ResourceLimits {
        max_samples: Some(max_samples),
        max_instances: None,
        max_samples_per_instance: None,
    }
}

fn keep_all_writer(blocking: Duration) -> DataWriterQos {
    DataWriterQos::default()
        .with_reliability(Reliability::reliable(blocking))
        .with_history(History::KeepAll)
}

fn keep_all_reader(max_samples: u32) -> DataReaderQos {
    DataReaderQos::default()
        .with_reliability(Reliability::reliable(Duration::from_secs(1)))
        .with_history(History::KeepAll)
        .with_resource_limits(limits(max_samples))
}

fn writer(p: &DomainParticipant, topic: &str, qos: DataWriterQos) -> DataWriter<Keyed> {
    let t = p.create_topic::<Keyed>(topic, TopicQos::default()).unwrap();
    p.create_publisher(Default::default())
        .unwrap()
        .create_datawriter(&t, qos)
        .unwrap()
}

fn reader(p: &DomainParticipant, topic: &str, qos: DataReaderQos) -> DataReader<Keyed> {
    let t = p.create_topic::<Keyed>(topic, TopicQos::default()).unwrap();
    p.create_subscriber(Default::default())
        .unwrap()
        .create_datareader(&t, qos)
        .unwrap()
}

fn take_seqs(r: &DataReader<Keyed>) -> Vec<u32> {
    r.take(usize::MAX)
        .unwrap()
        .into_iter()
        .filter_map(|s| s.data.map(|d| d.seq))
        .collect()
}

/// 50 samples through a reader that holds 5 and takes slowly: all arrive, in order.
fn slow_reader_gets_every_sample_in_order(t: Transport) {
    let ps = t.participants(1);
    let r = reader(&ps[0], "LH_slow", keep_all_reader(5));
    let w = writer(&ps[0], "LH_slow", keep_all_writer(Duration::from_secs(10)));
    let writing = std::thread::spawn(move || {
        for seq in 0..50 {
            w.write(&Keyed { id: 1, seq }).unwrap();
        }
        w
    });
    let mut got = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    while got.len() < 50 && Instant::now() < deadline {
        got.extend(take_seqs(&r));
        std::thread::sleep(Duration::from_millis(2));
    }
    let _w = writing.join().unwrap();
    got.extend(take_seqs(&r));
    assert_eq!(got, (0..50).collect::<Vec<_>>());
    assert!(r.sample_rejected_status().total_count > 0);
    assert_eq!(r.sample_lost_status().total_count, 0);
}

/// A reader that never takes: the writer keeps what it refuses up to the writer's
/// `max_samples`, then `write` times out after `max_blocking_time`; once the reader takes,
/// everything written arrives, in order, and writing goes on.
fn keep_all_writer_times_out_then_everything_arrives(t: Transport) {
    let ps = t.participants(1);
    let r = reader(&ps[0], "LH_timeout", keep_all_reader(5));
    let w = writer(
        &ps[0],
        "LH_timeout",
        keep_all_writer(Duration::from_millis(100)).with_resource_limits(limits(4)),
    );
    // 5 taken in, 4 kept for the reader.
    for seq in 0..9 {
        w.write(&Keyed { id: 1, seq }).unwrap();
    }
    let started = Instant::now();
    let res = w.write(&Keyed { id: 1, seq: 9 });
    assert!(matches!(res, Err(Error::Timeout)), "{res:?}");
    assert!(started.elapsed() >= Duration::from_millis(90));
    let mut got = take_seqs(&r);
    assert_eq!(got, (0..5).collect::<Vec<_>>());
    got.extend(take_seqs(&r));
    assert_eq!(got, (0..9).collect::<Vec<_>>());
    w.write(&Keyed { id: 1, seq: 10 }).unwrap();
    assert_eq!(take_seqs(&r), vec![10]);
    w.wait_for_acknowledgments(Duration::ZERO).unwrap();
}

/// A KEEP_LAST writer never waits: it keeps the newest `depth` samples of each instance for
/// the reader and counts the others lost.
fn keep_last_writer_replaces_and_counts_lost(t: Transport) {
    let ps = t.participants(1);
    let r = reader(&ps[0], "LH_last", keep_all_reader(2));
    let w = writer(
        &ps[0],
        "LH_last",
        DataWriterQos::default().with_history(History::KeepLast(3)),
    );
    for seq in 0..10 {
        w.write(&Keyed { id: 1, seq }).unwrap();
    }
    let mut got = Vec::new();
    for _ in 0..4 {
        got.extend(take_seqs(&r));
    }
    assert_eq!(got, vec![0, 1, 7, 8, 9]);
    assert_eq!(r.sample_lost_status().total_count, 5);
}

/// Deleting the reader drops what the writer kept for it: a writer that was full writes again.
fn deleting_the_reader_drops_the_queue(t: Transport) {
    let ps = t.participants(1);
    let r = reader(&ps[0], "LH_delete", keep_all_reader(1));
    let w = writer(
        &ps[0],
        "LH_delete",
        keep_all_writer(Duration::from_millis(50)).with_resource_limits(limits(2)),
    );
    for seq in 0..3 {
        w.write(&Keyed { id: 1, seq }).unwrap();
    }
    assert!(matches!(
        w.write(&Keyed { id: 1, seq: 3 }),
        Err(Error::Timeout)
    ));
    drop(r);
    wait_until(5, "the reader to unmatch", || {
        w.matched_subscriptions().is_empty()
    });
    w.write(&Keyed { id: 1, seq: 4 }).unwrap();
    w.wait_for_acknowledgments(Duration::ZERO).unwrap();
}

/// A best-effort reader drops what it refuses (and counts it); nothing comes later.
fn best_effort_reader_drops_and_counts(t: Transport) {
    let ps = t.participants(1);
    let r = reader(
        &ps[0],
        "LH_be",
        DataReaderQos::default()
            .with_reliability(Reliability::best_effort())
            .with_history(History::KeepAll)
            .with_resource_limits(limits(5)),
    );
    let w = writer(
        &ps[0],
        "LH_be",
        keep_all_writer(Duration::from_millis(50)).with_resource_limits(limits(2)),
    );
    for seq in 0..20 {
        w.write(&Keyed { id: 1, seq }).unwrap();
    }
    assert_eq!(r.sample_rejected_status().total_count, 15);
    assert_eq!(take_seqs(&r), (0..5).collect::<Vec<_>>());
    assert!(take_seqs(&r).is_empty());
    w.write(&Keyed { id: 1, seq: 20 }).unwrap();
    assert_eq!(take_seqs(&r), vec![20]);
}

/// Writes to `out` on every sample it is given, from the receive thread, recording each
/// write's outcome and how long it took.
struct Forwarder {
    out: DataWriter<Keyed>,
    results: Mutex<Vec<(Result<(), String>, Duration)>>,
}

impl DataReaderListener<Keyed> for Forwarder {
    fn on_data_available(&self, r: &DataReader<Keyed>) {
        for s in r.take(usize::MAX).unwrap() {
            if let Some(d) = s.data {
                let started = Instant::now();
                let res = self.out.write(&d).map_err(|e| format!("{e:?}"));
                self.results.lock().unwrap().push((res, started.elapsed()));
            }
        }
    }
}

/// A listener that writes to a writer whose local reader is full does not wait: the write
/// fails at once with `OutOfResources`; what was written arrives once the reader takes.
fn listener_write_does_not_block(t: Transport) {
    let ps = t.participants(2);
    let source = writer(&ps[0], "LH_src", keep_all_writer(Duration::from_secs(5)));
    let relayed = writer(
        &ps[1],
        "LH_relay",
        keep_all_writer(Duration::from_secs(5)).with_resource_limits(limits(2)),
    );
    let full = reader(&ps[1], "LH_relay", keep_all_reader(1));
    let forwarder = Arc::new(Forwarder {
        out: relayed,
        results: Mutex::new(Vec::new()),
    });
    let input = reader(&ps[1], "LH_src", keep_all_reader(100));
    input.set_listener(Some(forwarder.clone()));
    wait_until(10, "match", || source.matched_subscriptions().len() == 1);
    for seq in 0..8 {
        source.write(&Keyed { id: 1, seq }).unwrap();
    }
    wait_until(20, "every relay", || {
        forwarder.results.lock().unwrap().len() == 8
    });
    let results = std::mem::take(&mut *forwarder.results.lock().unwrap());
    let written: Vec<u32> = (0..8).filter(|i| results[*i as usize].0.is_ok()).collect();
    // 1 taken in, 2 kept, then refusals.
    assert_eq!(written, vec![0, 1, 2], "{results:?}");
    for (res, took) in &results[3..] {
        assert!(
            res.as_ref().is_err_and(|e| e.contains("OutOfResources")),
            "{res:?}"
        );
        assert!(
            *took < Duration::from_secs(1),
            "a listener write waited {took:?}"
        );
    }
    let mut got = Vec::new();
    for _ in 0..3 {
        got.extend(take_seqs(&full));
    }
    assert_eq!(got, written);
}

/// A reader whose one instance slot holds a disposed instance refuses a new instance; the
/// autopurge that frees the slot hands it over. `arrived` polls for it: with `read` (which may
/// purge) or with a read condition (which does not: the event thread must).
fn autopurge_hands_over_the_refused_instance(
    t: Transport,
    topic: &str,
    arrived: impl Fn(&DataReader<Keyed>) -> bool,
) {
    let ps = t.participants(1);
    let r = reader(
        &ps[0],
        topic,
        keep_all_reader(100)
            .with_resource_limits(ResourceLimits {
                max_samples: None,
                max_instances: Some(1),
                max_samples_per_instance: None,
            })
            .with_reader_data_lifecycle(ReaderDataLifecycle {
                autopurge_disposed_samples_delay: Duration::from_millis(200),
                ..Default::default()
            }),
    );
    let w = writer(&ps[0], topic, keep_all_writer(Duration::from_secs(1)));
    w.write(&Keyed { id: 0, seq: 0 }).unwrap();
    w.dispose(&Keyed { id: 0, seq: 0 }).unwrap();
    w.write(&Keyed { id: 1, seq: 1 }).unwrap();
    assert_eq!(r.sample_rejected_status().total_count, 1);
    wait_until(10, "the refused instance", || arrived(&r));
}

fn autopurge_in_read_hands_over(t: Transport) {
    autopurge_hands_over_the_refused_instance(t, "LH_purge_read", |r| {
        r.read(usize::MAX)
            .unwrap()
            .iter()
            .any(|s| s.data.as_ref().is_some_and(|d| d.id == 1))
    });
}

fn autopurge_on_the_event_thread_hands_over(t: Transport) {
    autopurge_hands_over_the_refused_instance(t, "LH_purge_event", |r| {
        r.create_readcondition(StateMasks::NOT_READ).trigger_value()
            && r.read_with(usize::MAX, StateMasks::NOT_READ)
                .unwrap()
                .iter()
                .any(|s| s.data.as_ref().is_some_and(|d| d.id == 1))
    });
}

/// Takes everything it is told about, from whatever thread tells it.
#[derive(Default)]
struct Taker {
    seqs: Mutex<Vec<u32>>,
}

impl DataReaderListener<Keyed> for Taker {
    fn on_data_available(&self, r: &DataReader<Keyed>) {
        let got = take_seqs(r);
        self.seqs.lock().unwrap().extend(got);
    }
}

/// A redelivery raises DATA_AVAILABLE, whose listener takes and so makes room for the next
/// redelivery: the whole queue comes through the listener, in order.
fn a_taking_listener_drains_the_queue(t: Transport) {
    let ps = t.participants(1);
    let r = reader(&ps[0], "LH_chain", keep_all_reader(2));
    let w = writer(
        &ps[0],
        "LH_chain",
        keep_all_writer(Duration::from_secs(1)).with_resource_limits(limits(100)),
    );
    for seq in 0..50 {
        w.write(&Keyed { id: 1, seq }).unwrap();
    }
    let taker = Arc::new(Taker::default());
    r.set_listener(Some(taker.clone()));
    let mut got = take_seqs(&r);
    got.extend(std::mem::take(&mut *taker.seqs.lock().unwrap()));
    assert_eq!(got, (0..50).collect::<Vec<_>>());
    w.wait_for_acknowledgments(Duration::ZERO).unwrap();
}

per_transport!(
    a_taking_listener_drains_the_queue,
    autopurge_in_read_hands_over,
    autopurge_on_the_event_thread_hands_over,
    slow_reader_gets_every_sample_in_order,
    keep_all_writer_times_out_then_everything_arrives,
    keep_last_writer_replaces_and_counts_lost,
    deleting_the_reader_drops_the_queue,
    best_effort_reader_drops_and_counts,
    listener_write_does_not_block
);
