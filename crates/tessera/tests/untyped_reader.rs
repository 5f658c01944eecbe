//! The type-erased reader path over the in-process transport (no sockets): an untyped reader
//! next to a typed one on the same topic, decode errors at the API edge, and `take_into`
//! without allocation in the taking thread; the status listener of an untyped reader.

use std::time::Duration;

use tessera::qos::{DataReaderQos, DataWriterQos, History, Reliability, TopicQos};
use tessera::rtps::cdr;
use tessera::transport::InProcessNetwork;
use tessera::{
    DataReader, DataWriter, DomainParticipant, InstanceState, ParticipantConfig, Sample,
    SampleBuffer, StateMasks, TopicType, UntypedDataReader,
};

mod counting_alloc;
use counting_alloc::allocs;

mod support;
use support::{wait_until, Transport};

#[derive(TopicType, Debug, Clone, PartialEq)]
struct Reading {
    #[key]
    sensor: u32,
    seq: u32,
    text: String,
}

/// Same type name and key as `Reading`, but without its other members: its samples match and
/// hash like `Reading`'s but do not decode as one.
#[derive(TopicType, Debug, Clone, PartialEq)]
#[topic(type_name = "Reading")]
struct KeyOnly {
    #[key]
    sensor: u32,
}

/// Keyless and fixed-size: decoding it allocates nothing.
#[derive(TopicType, Debug, Clone, Copy, PartialEq, Default)]
struct Fixed {
    seq: u32,
    value: u64,
}

/// Two participants that match on type names alone (no XTypes type information): the tests
/// of undecodable samples pair types that share a name but not a layout, which the
/// assignability check would otherwise refuse to match.
fn name_matched_pair() -> Vec<DomainParticipant> {
    let net = InProcessNetwork::new();
    (0..2)
        .map(|_| {
            let config = ParticipantConfig {
                type_information: Some(false),
                ..ParticipantConfig::with_in_process(net.clone())
            };
            DomainParticipant::with_qos(0, Default::default(), config).unwrap()
        })
        .collect()
}

fn reader_qos() -> DataReaderQos {
    DataReaderQos::default()
        .with_reliability(Reliability::reliable(Duration::from_secs(1)))
        .with_history(History::KeepAll)
}

fn writer<T: TopicType>(p: &DomainParticipant, topic: &str) -> DataWriter<T> {
    let t = p.create_topic::<T>(topic, TopicQos::default()).unwrap();
    p.create_publisher(Default::default())
        .unwrap()
        .create_datawriter(&t, DataWriterQos::default().with_history(History::KeepAll))
        .unwrap()
}

fn readers<T: TopicType>(p: &DomainParticipant, topic: &str) -> (DataReader<T>, UntypedDataReader) {
    let t = p.create_topic::<T>(topic, TopicQos::default()).unwrap();
    let s = p.create_subscriber(Default::default()).unwrap();
    let typed = s.create_datareader(&t, reader_qos()).unwrap();
    let untyped = s.create_untyped_datareader(&t, reader_qos()).unwrap();
    (typed, untyped)
}

fn wait_matched<T: TopicType, U: TopicType>(
    w: &DataWriter<T>,
    r: &DataReader<U>,
    u: &UntypedDataReader,
) {
    wait_until(10, "matches", || {
        w.publication_matched_status().current_count == 2
            && r.subscription_matched_status().current_count == 1
            && u.subscription_matched_status().current_count == 1
    });
}

fn wait_for_samples(u: &UntypedDataReader, n: usize) {
    wait_until(10, "samples", || {
        u.read_serialized(n + 1, StateMasks::ANY).unwrap().len() >= n
    });
}

#[test]
fn untyped_reader_gets_the_bytes_a_typed_reader_decodes() {
    let ps = Transport::InProc.participants(2);
    let (pa, pb) = (&ps[0], &ps[1]);
    let w = writer::<Reading>(pa, "erased");
    let (r, u) = readers::<Reading>(pb, "erased");
    wait_matched(&w, &r, &u);
    assert_eq!(u.type_support().type_name(), "Reading");
    assert!(u.type_support().is_keyed());

    let sent: Vec<Reading> = (0..6)
        .map(|i| Reading {
            sensor: i % 2,
            seq: i,
            text: format!("reading {i}"),
        })
        .collect();
    for s in &sent {
        w.write(s).unwrap();
    }
    w.dispose(&sent[0]).unwrap();

    // Take from both until each has the six samples and has seen the dispose (as an invalid
    // sample, or as the state of a sample not yet read when it came).
    let disposed =
        |info: &tessera::SampleInfo| info.instance_state == InstanceState::NotAliveDisposed;
    let (mut typed, mut bytes) = (Vec::new(), Vec::new());
    wait_until(10, "all samples and the dispose in both readers", || {
        typed.extend(r.take(16).unwrap());
        bytes.extend(u.take_serialized(16, StateMasks::ANY).unwrap());
        let valid = |n: usize| n == 6;
        valid(typed.iter().filter(|s| s.data.is_some()).count())
            && valid(bytes.iter().filter(|s| s.data.is_some()).count())
            && typed.iter().any(|s| disposed(&s.info))
            && bytes.iter().any(|s| disposed(&s.info))
    });
    let mut got = Vec::new();
    for b in &bytes {
        let Some(p) = &b.data else {
            assert!(disposed(&b.info));
            continue;
        };
        let decoded: Reading = cdr::deserialize_sample(p.as_bytes()).unwrap();
        assert_eq!(p.decode::<Reading>().unwrap(), decoded);
        let kh = u.type_support().key_hash_of_sample(p.as_bytes()).unwrap();
        assert_eq!(kh, cdr::key_hash(&decoded));
        // The typed reader has the same sample from the same writer at the same source time.
        let t = typed
            .iter()
            .find(|t| t.data.as_ref() == Some(&decoded))
            .expect("typed reader has the sample");
        assert_eq!(t.info.publication_handle, b.info.publication_handle);
        assert_eq!(t.info.source_timestamp, b.info.source_timestamp);
        got.push(decoded);
    }
    got.sort_by_key(|s| s.seq);
    assert_eq!(got, sent);
    assert_eq!(r.undecodable_samples(), 0);
}

#[test]
fn keyed_samples_without_a_key_are_counted_and_dropped_on_arrival() {
    let ps = name_matched_pair();
    let (pa, pb) = (&ps[0], &ps[1]);
    let w = writer::<KeyOnly>(pa, "short");
    let (r, u) = readers::<Reading>(pb, "short");
    wait_matched(&w, &r, &u);
    for sensor in 0..3 {
        w.write(&KeyOnly { sensor }).unwrap();
    }
    // Their key hash cannot be computed (the payload ends before Reading's members do): both
    // readers drop them before the history and count them.
    wait_until(10, "drops", || {
        r.undecodable_samples() == 3 && u.undecodable_samples() == 3
    });
    assert!(r.take(8).unwrap().is_empty());
    assert!(u.take_serialized(8, StateMasks::ANY).unwrap().is_empty());
}

/// Same type name as `Fixed`, too short to decode as one.
#[derive(TopicType, Debug, Clone, PartialEq)]
#[topic(type_name = "Fixed")]
struct ShortFixed {
    seq: u32,
}

#[test]
fn undecodable_samples_are_counted_and_dropped_at_take() {
    let ps = name_matched_pair();
    let (pa, pb) = (&ps[0], &ps[1]);
    let w = writer::<ShortFixed>(pa, "short-fixed");
    let (r, u) = readers::<Fixed>(pb, "short-fixed");
    wait_matched(&w, &r, &u);
    for seq in 0..3 {
        w.write(&ShortFixed { seq }).unwrap();
    }
    // Keyless: no key to compute, so both histories take them as they come.
    wait_for_samples(&u, 3);
    wait_for_samples(r.untyped(), 3);
    // The typed reader cannot decode them: dropped, counted, no panic.
    assert!(r.take(8).unwrap().is_empty());
    assert_eq!(r.undecodable_samples(), 3);
    // The untyped reader hands them out as they came.
    let bytes = u.take_serialized(8, StateMasks::ANY).unwrap();
    let seqs: Vec<u32> = bytes
        .iter()
        .map(|b| b.data.as_ref().unwrap().decode::<ShortFixed>().unwrap().seq)
        .collect();
    assert_eq!(seqs, [0, 1, 2]);
    assert_eq!(u.undecodable_samples(), 0);
}

#[test]
fn take_into_allocates_nothing_in_steady_state() {
    const N: usize = 64;
    let ps = Transport::InProc.participants(2);
    let (pa, pb) = (&ps[0], &ps[1]);
    let w = writer::<Fixed>(pa, "fixed");
    let (r, u) = readers::<Fixed>(pb, "fixed");
    wait_matched(&w, &r, &u);
    let mut out: Vec<Sample<Fixed>> = Vec::with_capacity(N);
    let mut seq = 0;
    let mut round = || {
        for _ in 0..N {
            w.write(&Fixed {
                seq,
                value: u64::from(seq) * 3,
            })
            .unwrap();
            seq += 1;
        }
        wait_for_samples(r.untyped(), N);
        out.clear();
        let before = allocs();
        let n = r.take_into(&mut out, N);
        let spent = allocs() - before;
        assert_eq!(n, N);
        assert!(out
            .iter()
            .all(|s| s.data.is_some_and(|d| d.value == u64::from(d.seq) * 3)));
        spent
    };
    // The first round grows the scratch vector and the payload pool to their working size.
    round();
    for _ in 0..3 {
        assert_eq!(round(), 0, "take_into allocated");
    }
}

#[test]
fn take_reusing_decodes_into_the_buffers_of_earlier_takes() {
    const N: usize = 16;
    let ps = Transport::InProc.participants(2);
    let (pa, pb) = (&ps[0], &ps[1]);
    let w = writer::<Reading>(pa, "reused");
    let (r, u) = readers::<Reading>(pb, "reused");
    wait_matched(&w, &r, &u);
    let mut buf = SampleBuffer::new();
    let mut seq = 0;
    // Texts of 40 octets, then shorter ones: every later take fits the first one's buffers.
    let mut round = |len: usize, n: usize| {
        let sent: Vec<Reading> = (0..n)
            .map(|i| {
                seq += 1;
                Reading {
                    sensor: i as u32,
                    seq,
                    text: "x".repeat(len - i % 3),
                }
            })
            .collect();
        for s in &sent {
            w.write(s).unwrap();
        }
        wait_for_samples(&u, n);
        u.take_serialized(n, StateMasks::ANY).unwrap();
        let before = allocs();
        let taken = r.take_reusing(&mut buf, N);
        let spent = allocs() - before;
        assert_eq!(taken, n);
        assert_eq!(buf.len(), n);
        let got: Vec<&Reading> = buf.iter().map(|s| s.data.as_ref().unwrap()).collect();
        assert_eq!(got, sent.iter().collect::<Vec<_>>());
        spent
    };
    round(40, N);
    for _ in 0..3 {
        assert_eq!(round(20, N), 0, "take_reusing allocated");
    }
    // A smaller take shows only its samples; the buffer keeps the rest for the next one.
    assert_eq!(round(10, 4), 0);
    assert_eq!(round(30, N), 0);
    // Nothing to take: an empty view.
    assert_eq!(r.take_reusing(&mut buf, N), 0);
    assert!(buf.is_empty());
    // A dispose without data (the instance's sample already taken) takes a slot like any
    // sample, in place of a decoded one.
    let sample = Reading {
        sensor: 1,
        seq: 0,
        text: "last".into(),
    };
    w.write(&sample).unwrap();
    wait_for_samples(&u, 1);
    u.take_serialized(8, StateMasks::ANY).unwrap();
    assert_eq!(r.take_reusing(&mut buf, N), 1);
    assert_eq!(buf[0].data.as_ref(), Some(&sample));
    w.dispose(&sample).unwrap();
    wait_for_samples(&u, 1);
    assert_eq!(r.take_reusing(&mut buf, N), 1);
    assert!(buf[0].data.is_none());
    assert_eq!(buf[0].info.instance_state, InstanceState::NotAliveDisposed);
    assert_eq!(r.undecodable_samples(), 0);
}

#[test]
fn take_reusing_leaves_undecodable_samples_out() {
    let ps = name_matched_pair();
    let (pa, pb) = (&ps[0], &ps[1]);
    let w = writer::<ShortFixed>(pa, "short-reused");
    let (r, u) = readers::<Fixed>(pb, "short-reused");
    wait_matched(&w, &r, &u);
    for seq in 0..3 {
        w.write(&ShortFixed { seq }).unwrap();
    }
    wait_for_samples(r.untyped(), 3);
    let mut buf = SampleBuffer::new();
    assert_eq!(r.take_reusing(&mut buf, 8), 0);
    assert!(buf.is_empty());
    assert_eq!(r.undecodable_samples(), 3);
}

#[test]
fn local_readers_get_the_writers_bytes() {
    // Same participant: the samples are handed over in the writer's thread (the buffer shared,
    // not copied) rather than sent.
    let ps = Transport::InProc.participants(1);
    let p = &ps[0];
    let w = writer::<Reading>(p, "local");
    let (r, u) = readers::<Reading>(p, "local");
    wait_matched(&w, &r, &u);
    let sent = Reading {
        sensor: 4,
        seq: 9,
        text: "here".into(),
    };
    w.write(&sent).unwrap();
    let typed = r.take(4).unwrap();
    let bytes = u.take_serialized(4, StateMasks::ANY).unwrap();
    assert_eq!(typed.len(), 1, "delivered when write returns");
    assert_eq!(typed[0].data.as_ref(), Some(&sent));
    let p = bytes[0].data.as_ref().unwrap();
    assert_eq!(p.decode::<Reading>().unwrap(), sent);
    let mut expected = Vec::new();
    cdr::serialize_sample(&sent, cdr::Encoding::XCDR1_LE, &mut expected);
    assert_eq!(p.as_bytes(), &expected[..]);
}

#[test]
fn keep_last_replacement_hands_back_the_old_data() {
    use tessera::history::{History, HistoryConfig, HistoryKind, InsertOutcome};
    let mut h = History::new(HistoryConfig {
        history: HistoryKind::KeepLast(1),
        ..Default::default()
    });
    let mut replaced = None;
    let first = h.insert_reclaiming([1; 16], [7; 16], vec![1u8], 1, 1, &mut replaced);
    assert!(matches!(first, InsertOutcome::Accepted(_)));
    assert_eq!(replaced, None);
    let second = h.insert_reclaiming([1; 16], [7; 16], vec![2u8], 2, 2, &mut replaced);
    assert!(matches!(second, InsertOutcome::Replaced(_)));
    assert_eq!(replaced, Some(vec![1u8]));
    // Another instance has room of its own: nothing replaced.
    let mut replaced = None;
    h.insert_reclaiming([2; 16], [7; 16], vec![3u8], 3, 3, &mut replaced);
    assert_eq!(replaced, None);
}

/// `UntypedDataReader::set_status_listener` (what the Python binding's listeners use): told of
/// the match and of each sample, on the thread that raised it; silent once removed.
#[test]
fn status_listener_of_an_untyped_reader() {
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::sync::Arc;
    use tessera::StatusMask;

    let ps = Transport::InProc.participants(2);
    let (pa, pb) = (&ps[0], &ps[1]);
    let (_r, u) = readers::<Reading>(pb, "listened");
    let seen = Arc::new(AtomicU32::new(0));
    let data = Arc::new(AtomicU32::new(0));
    let (s, d) = (seen.clone(), data.clone());
    u.set_status_listener(Some(Arc::new(move |mask: StatusMask| {
        s.fetch_or(mask.0, Ordering::SeqCst);
        if mask.intersects(StatusMask::DATA_AVAILABLE) {
            d.fetch_add(1, Ordering::SeqCst);
        }
    })));
    let w = writer::<Reading>(pa, "listened");
    wait_until(10, "the match, heard", || {
        seen.load(Ordering::SeqCst) & StatusMask::SUBSCRIPTION_MATCHED.0 != 0
    });
    // Matching is not symmetric in time: a volatile writer that has not matched the reader
    // yet would write its first sample to nobody (seen once in CI, under load).
    wait_until(10, "the writer's match", || {
        w.publication_matched_status().current_count >= 1
    });
    let sample = |seq| Reading {
        sensor: 1,
        seq,
        text: String::new(),
    };
    w.write(&sample(0)).unwrap();
    wait_until(10, "DATA_AVAILABLE, heard", || {
        data.load(Ordering::SeqCst) >= 1
    });
    u.take_serialized(16, StateMasks::ANY).unwrap();

    u.set_status_listener(None);
    let heard = data.load(Ordering::SeqCst);
    w.write(&sample(1)).unwrap();
    wait_for_samples(&u, 1);
    assert_eq!(
        data.load(Ordering::SeqCst),
        heard,
        "a removed listener was called"
    );
}
