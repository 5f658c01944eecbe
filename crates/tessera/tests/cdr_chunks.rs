//! Large serialized samples through shared-memory chunks (`publication/cdr_chunks.rs`): a
//! writer whose readers are all reliable Tessera readers on this host sends references to
//! chunks instead of datagrams; readers get the samples whole, in order, as values and as
//! bytes; a best-effort reader, a UDP reader and late joiners that cannot resolve references
//! get the bytes; a writer deleted right after writing still delivers; nothing is left in
//! `/dev/shm`. Needs a network namespace (discovery is UDP).

mod support;

use std::time::Duration;
use support::wait_until;
use tessera::qos::{DataReaderQos, DataWriterQos, Durability, History, Reliability, TopicQos};
use tessera::transport::TransportKind;
use tessera::{
    DataReader, DataWriter, DomainParticipant, StateMasks, TopicType, UntypedDataReader,
};

/// A keyed sample of any size.
#[derive(TopicType, Clone, Debug, PartialEq)]
struct Blob {
    #[key]
    id: u32,
    seq: u32,
    bytes: Vec<u8>,
}

/// Sizes written: under the chunk threshold, at it, around 64 KiB (where datagrams would be
/// fragmented) and well above.
const SIZES: [usize; 6] = [1000, 16 << 10, 65_000, 65_536, 100_000, 300_000];

fn blob(seq: u32) -> Blob {
    let len = SIZES[seq as usize % SIZES.len()];
    Blob {
        id: seq % 3,
        seq,
        bytes: (0..len).map(|i| (i as u32 ^ seq) as u8).collect(),
    }
}

fn check(b: &Blob) {
    assert_eq!(b, &blob(b.seq), "sample {} differs", b.seq);
}

fn participant(domain: u32, kinds: &[TransportKind]) -> DomainParticipant {
    support::participant_on(domain, kinds)
}

const SHM: [TransportKind; 2] = [TransportKind::Udp4, TransportKind::Shm];

fn pools(domain: u32) -> usize {
    support::shm_files(&format!("tessera-pool-{domain}-")).len()
}

fn writer(p: &DomainParticipant, topic: &str, qos: DataWriterQos) -> DataWriter<Blob> {
    let t = p.create_topic::<Blob>(topic, TopicQos::default()).unwrap();
    p.create_publisher(Default::default())
        .unwrap()
        .create_datawriter(&t, qos)
        .unwrap()
}

fn keep_all_writer() -> DataWriterQos {
    DataWriterQos::default()
        .with_reliability(Reliability::reliable(Duration::from_secs(5)))
        .with_history(History::KeepAll)
}

fn reader(p: &DomainParticipant, topic: &str, qos: DataReaderQos) -> DataReader<Blob> {
    let t = p.create_topic::<Blob>(topic, TopicQos::default()).unwrap();
    p.create_subscriber(Default::default())
        .unwrap()
        .create_datareader(&t, qos)
        .unwrap()
}

fn reliable() -> DataReaderQos {
    DataReaderQos::default()
        .with_reliability(Reliability::reliable(Duration::from_secs(1)))
        .with_history(History::KeepAll)
}

fn untyped_reader(p: &DomainParticipant, topic: &str, qos: DataReaderQos) -> UntypedDataReader {
    let t = p.create_topic::<Blob>(topic, TopicQos::default()).unwrap();
    p.create_subscriber(Default::default())
        .unwrap()
        .create_untyped_datareader_for(&t.untyped(), qos)
        .unwrap()
}

/// Takes from `r` until `n` samples came; their sequence numbers, sorted, each sample checked (and
/// in the instance of its key: the reader found the key in the bytes it copied out).
fn take_all(r: &DataReader<Blob>, n: usize) -> Vec<u32> {
    let mut seqs = Vec::new();
    let mut instances = std::collections::HashMap::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    wait_until(21, "every sample", || {
        assert!(
            std::time::Instant::now() < deadline,
            "got {seqs:?}, lost {:?}",
            r.sample_lost_status()
        );
        for s in r.take(64).unwrap() {
            if let Some(b) = s.data {
                check(&b);
                let first = *instances.entry(b.id).or_insert(s.info.instance_handle);
                assert_eq!(first, s.info.instance_handle, "sample {}", b.seq);
                seqs.push(b.seq);
            }
        }
        seqs.len() >= n
    });
    assert_eq!(instances.len(), n.min(3));
    // `take` hands samples out instance by instance; within one, in writing order.
    let mut by_instance = std::collections::HashMap::<u32, u32>::new();
    for seq in &seqs {
        if let Some(last) = by_instance.insert(seq % 3, *seq) {
            assert!(last < *seq, "{seqs:?}");
        }
    }
    seqs.sort_unstable();
    assert_eq!(r.undecodable_samples(), 0);
    seqs
}

fn take_all_as_bytes(r: &UntypedDataReader, n: usize) -> Vec<u32> {
    let mut seqs = Vec::new();
    wait_until(20, "every sample as bytes", || {
        for s in r.take_serialized(64, StateMasks::ANY).unwrap() {
            let bytes = s.data.unwrap();
            assert_ne!(
                &bytes.as_bytes()[..2],
                &[0x7a, 0x55],
                "a reference as bytes"
            );
            let b = bytes.decode::<Blob>().unwrap();
            check(&b);
            seqs.push(b.seq);
        }
        seqs.len() >= n
    });
    assert_eq!(r.undecodable_samples(), 0);
    seqs.sort_unstable();
    seqs
}

fn matched<T: TopicType>(w: &DataWriter<T>, n: i32) {
    wait_until(10, "match", || {
        w.publication_matched_status().current_count == n
    });
}

#[test]
#[ignore = "needs a network namespace: scripts/netns-run (scripts/test runs it)"]
fn large_samples_go_by_reference_to_typed_and_untyped_readers() {
    support::require_netns();
    let domain = 91;
    let (a, b) = (participant(domain, &SHM), participant(domain, &SHM));
    let w = writer(&a, "ChunksPair", keep_all_writer());
    let typed = reader(&b, "ChunksPair", reliable());
    let bytes = untyped_reader(&b, "ChunksPair", reliable());
    matched(&w, 2);
    let n = 60u32;
    for seq in 0..n {
        w.write(&blob(seq)).unwrap();
    }
    assert_eq!(take_all(&typed, n as usize), (0..n).collect::<Vec<_>>());
    assert_eq!(
        take_all_as_bytes(&bytes, n as usize),
        (0..n).collect::<Vec<_>>()
    );
    // Every sample over 64 KiB would have been fragmented in datagrams: none was.
    let c = w.protocol_counters();
    assert_eq!(c.data_frag_sent, 0, "{c:?}");
    assert!(pools(domain) >= 1, "no pool made");
    drop(w);
    wait_until(5, "pools removed", || pools(domain) == 0);
    drop((a, b));
}

#[test]
#[ignore = "needs a network namespace: scripts/netns-run (scripts/test runs it)"]
fn a_best_effort_reader_or_a_udp_reader_makes_the_writer_send_datagrams() {
    support::require_netns();
    let domain = 92;
    let (a, b, c) = (
        participant(domain, &SHM),
        participant(domain, &SHM),
        participant(domain, &[TransportKind::Udp4]),
    );
    // The default reader is BEST_EFFORT, the default writer RELIABLE (KEEP_ALL here, so that
    // taking the samples later loses none).
    let w = writer(&a, "ChunksMixed", keep_all_writer());
    let best_effort = reader(
        &b,
        "ChunksMixed",
        DataReaderQos::default().with_history(History::KeepAll),
    );
    let shm = reader(&b, "ChunksMixed", reliable());
    matched(&w, 2);
    // Spaced out: the best-effort reader drops nothing on a quiet path.
    for seq in 0..12 {
        w.write(&blob(seq)).unwrap();
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(take_all(&shm, 12), (0..12).collect::<Vec<_>>());
    assert_eq!(take_all(&best_effort, 12), (0..12).collect::<Vec<_>>());
    assert!(w.protocol_counters().data_frag_sent > 0);
    drop(best_effort);
    // With the best-effort reader gone, references again; then a UDP reader joins.
    matched(&w, 1);
    for seq in 12..24 {
        w.write(&blob(seq)).unwrap();
    }
    assert_eq!(take_all(&shm, 12), (12..24).collect::<Vec<_>>());
    let udp = reader(&c, "ChunksMixed", reliable());
    matched(&w, 2);
    for seq in 24..36 {
        w.write(&blob(seq)).unwrap();
    }
    assert_eq!(take_all(&shm, 12), (24..36).collect::<Vec<_>>());
    assert_eq!(take_all(&udp, 12), (24..36).collect::<Vec<_>>());
}

#[test]
#[ignore = "needs a network namespace: scripts/netns-run (scripts/test runs it)"]
fn late_joiners_that_cannot_resolve_references_get_the_kept_history() {
    support::require_netns();
    let domain = 93;
    let (a, b, c) = (
        participant(domain, &SHM),
        participant(domain, &SHM),
        participant(domain, &[TransportKind::Udp4]),
    );
    let qos = DataWriterQos::default()
        .with_reliability(Reliability::reliable(Duration::from_secs(5)))
        .with_history(History::KeepLast(6))
        .with_durability(Durability::TransientLocal);
    let w = writer(&a, "ChunksLate", qos);
    let early = reader(&b, "ChunksLate", reliable());
    matched(&w, 1);
    for seq in 0..6 {
        w.write(&blob(seq)).unwrap();
    }
    assert_eq!(take_all(&early, 6), (0..6).collect::<Vec<_>>());
    let late = reliable().with_durability(Durability::TransientLocal);
    // A shared-memory late joiner resolves the kept references; one over UDP and one of the
    // writer's own participant get the bytes.
    let late_shm = reader(&b, "ChunksLate", late.clone());
    let late_udp = reader(&c, "ChunksLate", late.clone());
    let late_local = reader(&a, "ChunksLate", late);
    for r in [&late_shm, &late_udp, &late_local] {
        assert_eq!(take_all(r, 6), (0..6).collect::<Vec<_>>());
    }
}

#[test]
#[ignore = "needs a network namespace: scripts/netns-run (scripts/test runs it)"]
fn a_writer_deleted_right_after_writing_still_delivers() {
    support::require_netns();
    let domain = 94;
    let (a, b) = (participant(domain, &SHM), participant(domain, &SHM));
    let r = reader(&b, "ChunksGone", reliable());
    for round in 0..3u32 {
        let w = writer(&a, "ChunksGone", keep_all_writer());
        matched(&w, 1);
        for seq in 0..4 {
            w.write(&blob(round * 4 + seq)).unwrap();
        }
        drop(w);
        // The deletion lingered until the reader had copied every sample out; the files
        // go before it returns, even while an event pass still holds the endpoint.
        assert_eq!(pools(domain), 0, "round {round}");
        let want: Vec<u32> = (round * 4..round * 4 + 4).collect();
        assert_eq!(take_all(&r, 4), want);
    }
    assert_eq!(pools(domain), 0);
}
