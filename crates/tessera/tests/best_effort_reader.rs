//! A reader with default QoS (BEST_EFFORT) of a writer with default QoS (RELIABLE): the pair is
//! best effort, so the reader must deliver what arrives without waiting for sequence number 1 or
//! for repairs the writer never sends.

mod support;
use std::time::Duration;
use support::{wait_until, Keyed, Transport};
use tessera::qos::{DataReaderQos, DataWriterQos, TopicQos};
use tessera::{DataReader, DataWriter, DomainParticipant};

fn writer(p: &DomainParticipant, topic: &str) -> DataWriter<Keyed> {
    let t = p.create_topic::<Keyed>(topic, TopicQos::default()).unwrap();
    p.create_publisher(Default::default())
        .unwrap()
        .create_datawriter(&t, DataWriterQos::default())
        .unwrap()
}

fn reader(p: &DomainParticipant, topic: &str) -> DataReader<Keyed> {
    let t = p.create_topic::<Keyed>(topic, TopicQos::default()).unwrap();
    p.create_subscriber(Default::default())
        .unwrap()
        .create_datareader(&t, DataReaderQos::default())
        .unwrap()
}

/// Writes `n` keyed samples at 10 Hz starting at `first`, then waits for the reader to have
/// received at least `want` of them.
fn stream(w: &DataWriter<Keyed>, r: &DataReader<Keyed>, first: u32, n: u32, want: usize) {
    let mut got = Vec::new();
    for i in first..first + n {
        w.write(&Keyed { id: i % 3, seq: i }).unwrap();
        std::thread::sleep(Duration::from_millis(100));
        got.extend(r.take(64).unwrap().into_iter().filter_map(|s| s.data));
    }
    wait_until(2, "samples at a best-effort reader", || {
        got.extend(r.take(64).unwrap().into_iter().filter_map(|s| s.data));
        got.len() >= want
    });
    assert!(got.iter().all(|s| s.seq >= first && s.seq < first + n));
}

fn matched(w: &DataWriter<Keyed>, r: &DataReader<Keyed>) {
    wait_until(10, "match", || {
        w.matched_subscriptions().len() == 1 && r.matched_publications().len() == 1
    });
}

fn reader_first_then_writer(t: Transport) {
    let ps = t.participants(2);
    const T: &str = "BE_reader_first_then_writer";
    let r = reader(&ps[1], T);
    let w = writer(&ps[0], T);
    matched(&w, &r);
    stream(&w, &r, 0, 10, 9);
}

fn writer_first_then_reader(t: Transport) {
    let ps = t.participants(2);
    const T: &str = "BE_writer_first_then_reader";
    let w = writer(&ps[0], T);
    let r = reader(&ps[1], T);
    matched(&w, &r);
    stream(&w, &r, 0, 10, 9);
}

fn late_joining_reader_of_a_writer_past_sequence_one(t: Transport) {
    let ps = t.participants(2);
    const T: &str = "BE_late_joining_reader_of_a_writer_past_sequence_one";
    let w = writer(&ps[0], T);
    for i in 0..20 {
        w.write(&Keyed { id: i % 3, seq: i }).unwrap();
    }
    let r = reader(&ps[1], T);
    matched(&w, &r);
    stream(&w, &r, 100, 10, 9);
}

per_transport!(
    reader_first_then_writer,
    writer_first_then_reader,
    late_joining_reader_of_a_writer_past_sequence_one
);
