//! Samples relayed with PID_ORIGINAL_WRITER_INFO (what a durability service sends): a
//! TRANSIENT reader delivers them as the original writer's and drops the ones it already has
//! (from the live writer or another relay); a VOLATILE reader ignores them; a sample sink sees
//! each with its original writer and sequence number.

mod support;
use parking_lot::Mutex;
use std::sync::Arc;
use std::time::Duration;
use support::{Keyed, Transport};
use tessera::qos::{DataReaderQos, DataWriterQos, Durability, History, Reliability, TopicQos};
use tessera::{ReceivedSample, SampleSink};

fn reader_qos(d: Durability) -> DataReaderQos {
    DataReaderQos::default()
        .with_durability(d)
        .with_reliability(Reliability::reliable(Duration::from_secs(1)))
        .with_history(History::KeepAll)
}

#[derive(Default)]
struct Collect(
    Mutex<
        Vec<(
            tessera::rtps::types::Guid,
            i64,
            Option<tessera::rtps::types::Guid>,
        )>,
    >,
);

impl SampleSink for Collect {
    fn on_sample(&self, s: &ReceivedSample<'_>) -> bool {
        self.0
            .lock()
            .push((s.writer, s.sequence_number, s.relayed_by));
        true
    }
}

fn relayed_samples_are_the_original_writers_once(t: Transport) {
    let ps = t.participants(3);
    let (origin_p, relay_p, reader_p) = (&ps[0], &ps[1], &ps[2]);
    let topic = |p: &tessera::DomainParticipant| {
        p.create_topic::<Keyed>("Relayed", TopicQos::default())
            .unwrap()
    };
    let w = origin_p
        .create_publisher(Default::default())
        .unwrap()
        .create_datawriter(
            &topic(origin_p),
            DataWriterQos::default()
                .with_durability(Durability::Transient)
                .with_history(History::KeepAll),
        )
        .unwrap();
    let sub = reader_p.create_subscriber(Default::default()).unwrap();
    let durable = sub
        .create_datareader(&topic(reader_p), reader_qos(Durability::Transient))
        .unwrap();
    let volatile = sub
        .create_datareader(&topic(reader_p), reader_qos(Durability::Volatile))
        .unwrap();
    let sink = Arc::new(Collect::default());
    let tapped = sub
        .create_untyped_datareader(&topic(reader_p), reader_qos(Durability::Transient))
        .unwrap();
    tapped.set_sample_sink(Some(sink.clone()));
    let relay = relay_p
        .create_publisher(Default::default())
        .unwrap()
        .create_untyped_datawriter(
            &topic(relay_p).untyped(),
            DataWriterQos::default()
                .with_durability(Durability::Transient)
                .with_history(History::KeepAll),
        )
        .unwrap();
    support::wait_until(10, "all matched", || {
        durable.matched_publications().len() == 2
            && volatile.matched_publications().len() == 2
            && w.matched_subscriptions().len() == 3
            && relay.matched_subscriptions().len() == 3
    });
    // The live writer sends 1..=4; the relay sends 3..=6 of the same writer.
    for seq in 1..=4u32 {
        w.write(&Keyed { id: 7, seq }).unwrap();
    }
    let enc = tessera::rtps::cdr::Encoding::XCDR1_LE;
    for seq in 3..=6u32 {
        let sample = Keyed { id: 7, seq };
        let mut payload = Vec::new();
        tessera::rtps::cdr::serialize_sample(&sample, enc, &mut payload);
        let kh = tessera::rtps::cdr::key_hash(&sample);
        relay
            .write_relayed(&payload, kh, 0, 1, (w.guid(), i64::from(seq)))
            .unwrap();
    }
    let got = support::take_until_each_has(std::slice::from_ref(&durable), 6, |k| k.seq);
    let mut seqs = got[0].clone();
    seqs.sort();
    assert_eq!(seqs, vec![1, 2, 3, 4, 5, 6], "each once: {:?}", got[0]);
    assert_eq!(durable.duplicates_dropped(), 2);
    let vol = support::take_until_each_has(std::slice::from_ref(&volatile), 4, |k| k.seq);
    assert_eq!(
        vol[0],
        vec![1, 2, 3, 4],
        "a volatile reader ignores relayed samples"
    );
    support::wait_until(10, "the sink's six", || sink.0.lock().len() >= 6);
    let mut seen = sink.0.lock().clone();
    seen.sort_by_key(|s| s.1);
    assert_eq!(seen.len(), 6, "{seen:?}");
    for (i, (writer, sn, by)) in seen.iter().enumerate() {
        assert_eq!(*writer, w.guid());
        assert_eq!(*sn, i as i64 + 1);
        // 1 and 2 came only from the writer, 5 and 6 only from the relay; 3 and 4 from
        // whichever was first.
        if *sn <= 2 || *sn >= 5 {
            assert_eq!(by.is_some(), *sn >= 5, "{seen:?}");
        }
    }
}

fn sample_info_names_the_original_writer(t: Transport) {
    let ps = t.participants(2);
    let tr = ps[1]
        .create_topic::<Keyed>("Named", TopicQos::default())
        .unwrap();
    let r = ps[1]
        .create_subscriber(Default::default())
        .unwrap()
        .create_datareader(&tr, reader_qos(Durability::Persistent))
        .unwrap();
    let relay = ps[0]
        .create_publisher(Default::default())
        .unwrap()
        .create_untyped_datawriter(
            &ps[0]
                .create_topic::<Keyed>("Named", TopicQos::default())
                .unwrap()
                .untyped(),
            DataWriterQos::default().with_durability(Durability::Persistent),
        )
        .unwrap();
    support::wait_until(10, "matched", || !r.matched_publications().is_empty());
    let original = tessera::rtps::types::Guid::from_bytes([
        1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 0, 0, 9, 0x02,
    ]);
    let sample = Keyed { id: 1, seq: 42 };
    let mut payload = Vec::new();
    tessera::rtps::cdr::serialize_sample(
        &sample,
        tessera::rtps::cdr::Encoding::XCDR1_LE,
        &mut payload,
    );
    relay
        .write_relayed(
            &payload,
            tessera::rtps::cdr::key_hash(&sample),
            0,
            5,
            (original, 77),
        )
        .unwrap();
    // Not a writer, or number 0: refused.
    assert!(relay
        .write_relayed(
            &payload,
            [0; 16],
            0,
            5,
            (tessera::rtps::types::Guid::from_bytes([1; 16]), 1)
        )
        .is_err());
    assert!(relay
        .write_relayed(&payload, [0; 16], 0, 5, (original, 0))
        .is_err());
    let mut got = Vec::new();
    support::wait_until(10, "the relayed sample", || {
        got.extend(r.take(10).unwrap());
        !got.is_empty()
    });
    assert_eq!(got[0].data, Some(sample));
    assert_eq!(got[0].info.publication_handle, original.to_bytes());
    assert_ne!(original, relay.guid());
}

per_transport!(
    relayed_samples_are_the_original_writers_once,
    sample_info_names_the_original_writer
);
