//! A reader in the writer's own participant has the sample as soon as `write` returns: no
//! network on the way, the reader's QoS applied as for any other writer.

mod support;
use std::time::Duration;
use support::{Keyed, Keyless, Transport};
use tessera::qos::{
    DataReaderQos, DataWriterQos, Durability, History, Reliability, ResourceLimits, TopicQos,
};
use tessera::{DataReader, DataWriter, DomainParticipant, InstanceState, TopicType};

fn reliable() -> Reliability {
    Reliability::reliable(Duration::from_secs(1))
}

fn pair<T: TopicType>(
    p: &DomainParticipant,
    topic: &str,
    wqos: DataWriterQos,
    rqos: DataReaderQos,
) -> (DataWriter<T>, DataReader<T>) {
    let t = p.create_topic::<T>(topic, TopicQos::default()).unwrap();
    let w = p
        .create_publisher(Default::default())
        .unwrap()
        .create_datawriter(&t, wqos)
        .unwrap();
    let r = p
        .create_subscriber(Default::default())
        .unwrap()
        .create_datareader(&t, rqos)
        .unwrap();
    (w, r)
}

/// The README's example: write, then take at once.
fn write_then_take_keyed(t: Transport) {
    let ps = t.participants(1);
    let (w, r) = pair::<Keyed>(
        &ps[0],
        "LD_keyed",
        DataWriterQos::default().with_history(History::KeepAll),
        DataReaderQos::default().with_reliability(reliable()),
    );
    w.write(&Keyed { id: 7, seq: 1 }).unwrap();
    let got = r.take(16).unwrap();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].data, Some(Keyed { id: 7, seq: 1 }));
    assert_eq!(got[0].info.instance_state, InstanceState::Alive);
    assert_eq!(r.subscription_matched_status().current_count, 1);
    assert_eq!(w.publication_matched_status().current_count, 1);
}

fn write_then_take_keyless_with_default_qos(t: Transport) {
    let ps = t.participants(1);
    let (w, r) = pair::<Keyless>(
        &ps[0],
        "LD_keyless",
        DataWriterQos::default(),
        DataReaderQos::default(),
    );
    for i in 0..3 {
        w.write(&Keyless {
            seq: i,
            text: format!("n{i}"),
        })
        .unwrap();
        let got = r.take(16).unwrap();
        assert_eq!(got.len(), 1, "sample {i}");
        assert_eq!(got[0].data.as_ref().map(|d| d.seq), Some(i));
    }
}

fn late_joining_transient_local_reader_gets_the_history_at_once(t: Transport) {
    let ps = t.participants(1);
    let t = ps[0]
        .create_topic::<Keyed>("LD_tl", TopicQos::default())
        .unwrap();
    let w = ps[0]
        .create_publisher(Default::default())
        .unwrap()
        .create_datawriter(
            &t,
            DataWriterQos::default()
                .with_durability(Durability::TransientLocal)
                .with_history(History::KeepLast(2)),
        )
        .unwrap();
    for seq in 0..9 {
        w.write(&Keyed { id: seq % 3, seq }).unwrap();
    }
    w.dispose(&Keyed { id: 2, seq: 0 }).unwrap();
    let r = ps[0]
        .create_subscriber(Default::default())
        .unwrap()
        .create_datareader(
            &t,
            DataReaderQos::default()
                .with_reliability(reliable())
                .with_durability(Durability::TransientLocal)
                .with_history(History::KeepAll),
        )
        .unwrap();
    let got = r.take(64).unwrap();
    let mut seqs: Vec<u32> = got
        .iter()
        .filter_map(|s| s.data.as_ref().map(|d| d.seq))
        .collect();
    seqs.sort_unstable();
    // KEEP_LAST 2 per instance; instance 2's newest slot holds its dispose.
    assert_eq!(seqs, vec![3, 4, 6, 7, 8], "{got:?}");
    let disposed = got
        .iter()
        .filter(|s| s.info.instance_state == InstanceState::NotAliveDisposed)
        .count();
    assert!(disposed >= 1, "{got:?}");
}

fn keep_all_reader_rejects_past_its_limits(t: Transport) {
    let ps = t.participants(1);
    let (w, r) = pair::<Keyed>(
        &ps[0],
        "LD_limits",
        DataWriterQos::default().with_history(History::KeepAll),
        DataReaderQos::default()
            .with_reliability(reliable())
            .with_history(History::KeepAll)
            .with_resource_limits(ResourceLimits {
                max_samples: Some(2),
                max_instances: None,
                max_samples_per_instance: None,
            }),
    );
    for seq in 0..3 {
        w.write(&Keyed { id: 1, seq }).unwrap();
    }
    assert_eq!(r.sample_rejected_status().total_count, 1);
    assert_eq!(r.take(16).unwrap().len(), 2);
}

fn dispose_reaches_a_local_reader_at_once(t: Transport) {
    let ps = t.participants(1);
    let (w, r) = pair::<Keyed>(
        &ps[0],
        "LD_dispose",
        DataWriterQos::default(),
        DataReaderQos::default().with_reliability(reliable()),
    );
    w.write(&Keyed { id: 4, seq: 1 }).unwrap();
    w.dispose(&Keyed { id: 4, seq: 0 }).unwrap();
    let got = r.read(16).unwrap();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].info.instance_state, InstanceState::NotAliveDisposed);
}

/// Local readers need no acknowledgment protocol: they hold every sample when `write` returns.
fn local_readers_are_never_unacknowledged(t: Transport) {
    let ps = t.participants(1);
    let (w, _r) = pair::<Keyed>(
        &ps[0],
        "LD_acks",
        DataWriterQos::default().with_history(History::KeepAll),
        DataReaderQos::default()
            .with_reliability(reliable())
            .with_history(History::KeepAll),
    );
    for seq in 0..100 {
        w.write(&Keyed { id: 1, seq }).unwrap();
    }
    w.wait_for_acknowledgments(Duration::ZERO).unwrap();
}

fn partitions_still_separate_local_endpoints(t: Transport) {
    let ps = t.participants(1);
    let t = ps[0]
        .create_topic::<Keyed>("LD_part", TopicQos::default())
        .unwrap();
    let pq = tessera::qos::PublisherQos {
        partition: tessera::qos::Partition(vec!["a".into()]),
        ..Default::default()
    };
    let sq = tessera::qos::SubscriberQos {
        partition: tessera::qos::Partition(vec!["b".into()]),
        ..Default::default()
    };
    let w = ps[0]
        .create_publisher(pq)
        .unwrap()
        .create_datawriter(&t, DataWriterQos::default())
        .unwrap();
    let r = ps[0]
        .create_subscriber(sq)
        .unwrap()
        .create_datareader(&t, DataReaderQos::default())
        .unwrap();
    w.write(&Keyed { id: 1, seq: 1 }).unwrap();
    std::thread::sleep(Duration::from_millis(100));
    assert!(r.take(16).unwrap().is_empty());
    assert_eq!(w.publication_matched_status().current_count, 0);
}

per_transport!(
    write_then_take_keyed,
    write_then_take_keyless_with_default_qos,
    late_joining_transient_local_reader_gets_the_history_at_once,
    keep_all_reader_rejects_past_its_limits,
    dispose_reaches_a_local_reader_at_once,
    local_readers_are_never_unacknowledged,
    partitions_still_separate_local_endpoints
);
