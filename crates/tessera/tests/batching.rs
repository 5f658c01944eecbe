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
