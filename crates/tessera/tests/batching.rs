//! Write batching (`DataWriter::set_batching`): a batch fills at most one datagram and carries
//! at most 128 samples, so tiny samples still leave in many datagrams whose acknowledgments
//! release history (and flow-control credit) at a fine grain. Before the sample cap, 1,000
//! 16-byte samples left in one or two 64 KiB datagrams and a 1-to-N writer across hosts ran at
//! half its rate.

use std::time::Duration;
use tessera::qos::{DataReaderQos, DataWriterQos, History, Reliability, TopicQos};

mod support;
use support::{Keyed, Transport};

/// A reliable KEEP_ALL writer on `ps[0]` and reader on `ps[1]`, matched.
fn keep_all_pair(
    ps: &[tessera::DomainParticipant],
    topic: &str,
) -> (tessera::DataWriter<Keyed>, tessera::DataReader<Keyed>) {
    let ta = ps[0]
        .create_topic::<Keyed>(topic, TopicQos::default())
        .unwrap();
    let tb = ps[1]
        .create_topic::<Keyed>(topic, TopicQos::default())
        .unwrap();
    let w = ps[0]
        .create_publisher(Default::default())
        .unwrap()
        .create_datawriter(&ta, DataWriterQos::default().with_history(History::KeepAll))
        .unwrap();
    let r = ps[1]
        .create_subscriber(Default::default())
        .unwrap()
        .create_datareader(
            &tb,
            DataReaderQos::default()
                .with_reliability(Reliability::reliable(Duration::from_secs(1)))
                .with_history(History::KeepAll),
        )
        .unwrap();
    support::wait_until(10, "match", || {
        w.publication_matched_status().current_count == 1
    });
    (w, r)
}

#[test]
fn a_batch_carries_at_most_128_samples() {
    let ps = Transport::InProc.participants(2);
    let a = &ps[0];
    let (w, r) = keep_all_pair(&ps, "Batch");
    w.set_batching(true);
    std::thread::sleep(Duration::from_millis(100));
    let before = a.counters().datagrams_sent;
    const N: u32 = 1024;
    for seq in 0..N {
        w.write(&Keyed { id: 1, seq }).unwrap();
    }
    w.flush();
    let got = support::take_until_each_has(std::slice::from_ref(&r), N as usize, |d| d.seq);
    assert_eq!(got[0].len(), N as usize);
    let sent = a.counters().datagrams_sent - before;
    // The data alone needs 1024 / 128 = 8 datagrams (acknowledgment traffic adds a few more).
    assert!(sent >= 8, "{sent} datagrams for {N} samples");
}

/// `DomainParticipant::bundle_sends`: the samples of many writers (two topics, four writers)
/// to one reader participant leave in one datagram, each still under its own writer's GUID,
/// with its own sequence numbers and, as here, its own source timestamp or none.
#[test]
fn a_send_bundle_puts_many_writers_samples_in_one_datagram() {
    let ps = Transport::InProc.participants(2);
    let (a, b) = (&ps[0], &ps[1]);
    let mut pairs = Vec::new();
    for topic in ["BundleA", "BundleB"] {
        let ta = a.create_topic::<Keyed>(topic, TopicQos::default()).unwrap();
        let tb = b.create_topic::<Keyed>(topic, TopicQos::default()).unwrap();
        let reader = b
            .create_subscriber(Default::default())
            .unwrap()
            .create_datareader(&tb, DataReaderQos::default().with_history(History::KeepAll))
            .unwrap();
        let writers: Vec<_> = (0..2)
            .map(|_| {
                a.create_publisher(Default::default())
                    .unwrap()
                    .create_datawriter(&ta, DataWriterQos::default().with_history(History::KeepAll))
                    .unwrap()
            })
            .collect();
        support::wait_until(10, "match", || {
            writers
                .iter()
                .all(|w| w.publication_matched_status().current_count == 1)
        });
        pairs.push((writers, reader));
    }
    // Let discovery and the first heartbeats settle before counting.
    std::thread::sleep(Duration::from_millis(200));
    let before = a.counters().datagrams_sent;
    {
        let _bundle = a.bundle_sends();
        for (t, (writers, _)) in pairs.iter().enumerate() {
            for (i, w) in writers.iter().enumerate() {
                let sample = Keyed {
                    id: i as u32,
                    seq: t as u32,
                };
                if i == 0 {
                    w.write_with_timestamp(&sample, 1_000_000_000 * (t as i64 + 1))
                        .unwrap();
                } else {
                    w.write(&sample).unwrap();
                }
            }
        }
        assert_eq!(
            a.counters().datagrams_sent,
            before,
            "sent before the bundle closed"
        );
    }
    let sent = a.counters().datagrams_sent - before;
    assert_eq!(sent, 1, "{sent} datagrams for 4 writers' samples");
    for (t, (writers, reader)) in pairs.iter().enumerate() {
        let mut got = Vec::new();
        support::wait_until(10, "both samples", || {
            got.extend(
                reader
                    .take(16)
                    .unwrap()
                    .into_iter()
                    .filter(|s| s.info.valid_data),
            );
            got.len() >= 2
        });
        let mut from: Vec<_> = got
            .iter()
            .map(|s| (s.info.publication_handle, s.data.as_ref().unwrap().id))
            .collect();
        from.sort();
        let mut expect: Vec<_> = writers
            .iter()
            .enumerate()
            .map(|(i, w)| (w.guid().to_bytes(), i as u32))
            .collect();
        expect.sort();
        assert_eq!(from, expect, "topic {t}: each sample under its own writer");
        for s in &got {
            let stamped = s.info.source_timestamp == 1_000_000_000 * (t as i64 + 1);
            assert_eq!(stamped, s.data.as_ref().unwrap().id == 0, "{:?}", s.info);
        }
    }
}

/// A listener hears DATA_AVAILABLE once per run of DATA in a datagram, not once per sample: a
/// batch of 100 samples is at most one call per datagram, whose `take` gets them all (in
/// order, with the reception timestamps of the datagrams they arrived in).
#[test]
fn a_batch_raises_data_available_once() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};
    use tessera::{DataReader, DataReaderListener};

    #[derive(Default)]
    struct Counting {
        calls: AtomicUsize,
        taken: Mutex<Vec<(u32, i64)>>,
    }
    impl DataReaderListener<Keyed> for Counting {
        fn on_data_available(&self, r: &DataReader<Keyed>) {
            self.calls.fetch_add(1, Ordering::Relaxed);
            let got = r.take(usize::MAX).unwrap();
            let mut t = self.taken.lock().unwrap();
            t.extend(
                got.iter()
                    .filter_map(|s| Some((s.data.as_ref()?.seq, s.info.reception_timestamp))),
            );
        }
    }

    let ps = Transport::InProc.participants(2);
    let (w, r) = keep_all_pair(&ps, "BatchListener");
    let l = Arc::new(Counting::default());
    r.set_listener(Some(l.clone()));
    w.set_batching(true);
    std::thread::sleep(Duration::from_millis(100));
    let sent_before = ps[0].counters().datagrams_sent;
    const N: u32 = 100;
    for seq in 0..N {
        w.write(&Keyed { id: 1, seq }).unwrap();
    }
    w.flush();
    support::wait_until(10, "every sample taken", || {
        l.taken.lock().unwrap().len() == N as usize
    });
    let datagrams = ps[0].counters().datagrams_sent - sent_before;
    let calls = l.calls.load(Ordering::Relaxed);
    assert!(
        calls as u64 <= datagrams,
        "{calls} listener calls for {N} samples in {datagrams} datagrams"
    );
    let taken = l.taken.lock().unwrap();
    let seqs: Vec<u32> = taken.iter().map(|t| t.0).collect();
    assert_eq!(seqs, (0..N).collect::<Vec<_>>());
    assert!(taken.windows(2).all(|p| p[0].1 <= p[1].1));
}
