//! Entity helpers of the behaviour suite. Waits are bounded (a stuck promise fails the test);
//! absence is checked only after a positive control shows the news would have arrived.

use std::time::{Duration, Instant};
use tessera::qos::{
    DataReaderQos, DataWriterQos, History, PublisherQos, Reliability, SubscriberQos, TopicQos,
};
use tessera::{DataReader, DataWriter, DomainParticipant, InstanceState, Sample, TopicType};

pub use crate::support::{wait_until, Domain, Keyed, Transport};

/// A keyless sample with a body of any size (for fragmentation).
#[derive(TopicType, Debug, Clone, PartialEq)]
pub struct Blob {
    pub seq: u32,
    pub body: Vec<u8>,
}

/// Reliable, with a blocking time long enough for the lossy network.
pub fn reliable() -> Reliability {
    Reliability::reliable(Duration::from_secs(10))
}

/// Reliable KEEP_ALL: every sample written is promised to every matched reliable reader.
pub fn keep_all_writer() -> DataWriterQos {
    DataWriterQos::default()
        .with_reliability(reliable())
        .with_history(History::KeepAll)
}

/// Reliable KEEP_ALL on the reader side.
pub fn keep_all_reader() -> DataReaderQos {
    DataReaderQos::default()
        .with_reliability(reliable())
        .with_history(History::KeepAll)
}

pub fn writer<T: TopicType>(
    p: &DomainParticipant,
    topic: &str,
    qos: DataWriterQos,
) -> DataWriter<T> {
    writer_in(p, topic, PublisherQos::default(), qos)
}

pub fn writer_in<T: TopicType>(
    p: &DomainParticipant,
    topic: &str,
    publisher: PublisherQos,
    qos: DataWriterQos,
) -> DataWriter<T> {
    let t = p.create_topic::<T>(topic, TopicQos::default()).unwrap();
    p.create_publisher(publisher)
        .unwrap()
        .create_datawriter(&t, qos)
        .unwrap()
}

pub fn reader<T: TopicType>(
    p: &DomainParticipant,
    topic: &str,
    qos: DataReaderQos,
) -> DataReader<T> {
    reader_in(p, topic, SubscriberQos::default(), qos)
}

pub fn reader_in<T: TopicType>(
    p: &DomainParticipant,
    topic: &str,
    subscriber: SubscriberQos,
    qos: DataReaderQos,
) -> DataReader<T> {
    let t = p.create_topic::<T>(topic, TopicQos::default()).unwrap();
    p.create_subscriber(subscriber)
        .unwrap()
        .create_datareader(&t, qos)
        .unwrap()
}

/// Waits until `w` and `r` have matched each other.
pub fn matched<W: TopicType, R: TopicType>(w: &DataWriter<W>, r: &DataReader<R>) {
    wait_until(10, "writer and reader to match", || {
        w.publication_matched_status().current_count >= 1
            && r.subscription_matched_status().current_count >= 1
    });
}

/// Takes samples with data until `n` arrived (panics after `secs`); returns them in order.
pub fn take_n<T: TopicType + Clone>(r: &DataReader<T>, n: usize, secs: u64) -> Vec<Sample<T>> {
    let deadline = Instant::now() + Duration::from_secs(secs);
    let mut got = Vec::new();
    while got.len() < n {
        assert!(
            Instant::now() < deadline,
            "took {} of {n} samples in {secs} s",
            got.len()
        );
        got.extend(
            r.take(usize::MAX)
                .unwrap()
                .into_iter()
                .filter(|s| s.data.is_some()),
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    got
}

/// The `seq` fields of keyed samples, in order.
pub fn seqs(samples: &[Sample<Keyed>]) -> Vec<(u32, u32)> {
    samples
        .iter()
        .filter_map(|s| s.data.as_ref().map(|d| (d.id, d.seq)))
        .collect()
}

/// Time for anything still in flight to arrive (for checks that nothing more comes).
pub fn settle(t: Transport) {
    let ms = if t.lossy() { 400 } else { 150 };
    std::thread::sleep(Duration::from_millis(ms));
}

/// Over the lossy network, proves that it lost something: otherwise a reliable test there proves
/// no more than over the clean one.
pub fn assert_lossy_network_lost(d: &Domain) {
    if let (true, Some(net)) = (d.transport.lossy(), &d.net) {
        assert!(net.dropped() > 0, "the lossy network lost nothing");
    }
}

/// Asserts that the newest sample `r` holds (read, left in place) shows instance state `want`.
pub fn assert_newest_state<T: TopicType + Clone>(r: &DataReader<T>, want: InstanceState) {
    let states: Vec<_> = r
        .read(usize::MAX)
        .unwrap()
        .into_iter()
        .map(|s| s.info.instance_state)
        .collect();
    assert_eq!(states.last(), Some(&want), "{states:?}");
}
