//! A sample sink that takes samples but may not let them be acknowledged yet (a replicated
//! durability service, before its group committed them) answers `SinkVerdict::Held`: the
//! reader keeps its acknowledgments to that writer below the held samples, so the writer keeps
//! them, until the sink moves the hold. Samples from a writer of the reader's own participant
//! cannot be held (no acknowledgment protocol with it): the sink is told so.

mod support;
use parking_lot::Mutex;
use std::sync::Arc;
use std::time::Duration;
use support::{Keyed, Transport};
use tessera::qos::{DataReaderQos, DataWriterQos, History, Reliability, TopicQos};
use tessera::rtps::types::Guid;
use tessera::{Error, ReceivedSample, SampleSink, SinkVerdict};

/// Holds every sample it may hold; records (writer, sequence number, could hold).
#[derive(Default)]
struct HoldAll(Mutex<Vec<(Guid, i64, bool)>>);

impl SampleSink for HoldAll {
    fn on_sample(&self, s: &ReceivedSample<'_>) -> bool {
        self.0.lock().push((s.writer, s.sequence_number, false));
        true
    }

    fn offer(&self, s: &ReceivedSample<'_>) -> SinkVerdict {
        self.0
            .lock()
            .push((s.writer, s.sequence_number, s.can_hold));
        if s.can_hold {
            SinkVerdict::Held
        } else {
            SinkVerdict::Accepted
        }
    }
}

fn qos_pair() -> (DataWriterQos, DataReaderQos) {
    let reliable = Reliability::reliable(Duration::from_secs(1));
    (
        DataWriterQos::default()
            .with_reliability(reliable)
            .with_history(History::KeepAll),
        DataReaderQos::default()
            .with_reliability(reliable)
            .with_history(History::KeepAll),
    )
}

fn held_samples_stay_unacknowledged_until_the_sink_moves_the_hold(t: Transport) {
    let ps = t.participants(2);
    let topic = |p: &tessera::DomainParticipant| {
        p.create_topic::<Keyed>("Held", TopicQos::default())
            .unwrap()
    };
    let (wq, rq) = qos_pair();
    let w = ps[0]
        .create_publisher(Default::default())
        .unwrap()
        .create_datawriter(&topic(&ps[0]), wq)
        .unwrap();
    let sink = Arc::new(HoldAll::default());
    let r = ps[1]
        .create_subscriber(Default::default())
        .unwrap()
        .create_untyped_datareader(&topic(&ps[1]), rq)
        .unwrap();
    r.set_sample_sink(Some(sink.clone()));
    support::wait_until(10, "the match", || !w.matched_subscriptions().is_empty());

    for i in 0..20u32 {
        w.write(&Keyed { id: i % 3, seq: i }).unwrap();
    }
    support::wait_until(10, "20 samples at the sink", || sink.0.lock().len() >= 20);
    assert!(
        matches!(
            w.wait_for_acknowledgments(Duration::from_millis(500)),
            Err(Error::Timeout)
        ),
        "held samples were acknowledged"
    );
    let taken = sink.0.lock().clone();
    let seqs: Vec<i64> = taken.iter().map(|s| s.1).collect();
    assert_eq!(seqs, (1..=20).collect::<Vec<_>>(), "each once, in order");
    assert!(
        taken.iter().all(|s| s.2),
        "a remote reliable writer's samples can be held"
    );
    let writer = taken[0].0;

    // The first ten are done: the writer still waits for the rest.
    r.set_acknowledgment_hold(writer, || Some(11));
    assert!(matches!(
        w.wait_for_acknowledgments(Duration::from_millis(300)),
        Err(Error::Timeout)
    ));
    r.set_acknowledgment_hold(writer, || None);
    w.wait_for_acknowledgments(Duration::from_secs(5))
        .expect("acknowledged once the hold is lifted");
    assert_eq!(sink.0.lock().len(), 20, "nothing came twice");
}

/// A writer of the reader's own participant hands samples over directly: the sink is told it
/// cannot hold them, and one that says `Held` anyway has refused them.
fn a_local_writers_samples_cannot_be_held(t: Transport) {
    let ps = t.participants(1);
    let topic = ps[0]
        .create_topic::<Keyed>("HeldLocal", TopicQos::default())
        .unwrap();
    let (wq, rq) = qos_pair();
    let sink = Arc::new(HoldAll::default());
    let r = ps[0]
        .create_subscriber(Default::default())
        .unwrap()
        .create_untyped_datareader(&topic, rq)
        .unwrap();
    r.set_sample_sink(Some(sink.clone()));
    let w = ps[0]
        .create_publisher(Default::default())
        .unwrap()
        .create_datawriter(&topic, wq)
        .unwrap();
    w.write(&Keyed { id: 1, seq: 1 }).unwrap();
    support::wait_until(10, "the sample at the sink", || !sink.0.lock().is_empty());
    assert!(
        !sink.0.lock()[0].2,
        "a local sample was offered as holdable"
    );
    w.wait_for_acknowledgments(Duration::from_secs(5))
        .expect("a local sample the sink accepted is acknowledged");
}

per_transport!(all:
    held_samples_stay_unacknowledged_until_the_sink_moves_the_hold,
    a_local_writers_samples_cannot_be_held
);
