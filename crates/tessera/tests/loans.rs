//! Zero-copy loans between participants on shared memory: references instead of samples,
//! chunks reused only when released, KEEP_LAST and KEEP_ALL, a UDP reader among shm readers,
//! and nothing left in `/dev/shm`. Needs a network namespace (discovery is UDP).

mod support;

use std::time::Duration;
use support::wait_until;
use tessera::qos::{DataReaderQos, DataWriterQos, History, Reliability, TopicQos};
use tessera::transport::TransportKind;
use tessera::{
    DataReader, DataWriter, DomainParticipant, StateMasks, TopicType, UntypedDataReader, WaitSet,
};

/// A 64 KiB plain sample.
#[derive(TopicType, Clone, Copy, Debug, PartialEq)]
#[repr(C)]
struct Frame {
    seq: u64,
    fill: [u8; 65528],
}

fn participant(domain: u32, kinds: &[TransportKind]) -> DomainParticipant {
    support::participant_on(domain, kinds)
}

const SHM: [TransportKind; 2] = [TransportKind::Udp4, TransportKind::Shm];

fn pools(domain: u32) -> Vec<String> {
    support::shm_files(&format!("tessera-pool-{domain}-"))
}

fn writer(
    p: &DomainParticipant,
    topic: &str,
    history: History,
    max_samples: Option<u32>,
) -> DataWriter<Frame> {
    let t = p.create_topic::<Frame>(topic, TopicQos::default()).unwrap();
    let mut qos = DataWriterQos::default()
        .with_reliability(Reliability::reliable(Duration::from_secs(2)))
        .with_history(history);
    qos.resource_limits.max_samples = max_samples;
    p.create_publisher(Default::default())
        .unwrap()
        .create_datawriter(&t, qos)
        .unwrap()
}

fn reader(p: &DomainParticipant, topic: &str) -> DataReader<Frame> {
    let t = p.create_topic::<Frame>(topic, TopicQos::default()).unwrap();
    p.create_subscriber(Default::default())
        .unwrap()
        .create_datareader(
            &t,
            DataReaderQos::default()
                .with_reliability(Reliability::reliable(Duration::from_secs(1)))
                .with_history(History::KeepAll),
        )
        .unwrap()
}

fn write_frame(w: &DataWriter<Frame>, seq: u64) {
    let mut loan = w.loan().unwrap();
    loan.seq = seq;
    loan.fill = [seq as u8; 65528];
    w.write_loan(loan).unwrap();
}

fn check(f: &Frame) {
    assert!(
        f.fill.iter().all(|b| *b == f.seq as u8),
        "torn frame {}",
        f.seq
    );
}

fn matched(w: &DataWriter<Frame>, readers: &[&DataReader<Frame>]) {
    wait_until(10, "match", || {
        w.publication_matched_status().current_count == readers.len() as i32
            && readers
                .iter()
                .all(|r| r.subscription_matched_status().current_count == 1)
    });
}

#[test]
#[ignore = "needs a network namespace: scripts/netns-run (scripts/test runs it)"]
fn keep_all_loans_arrive_by_reference_and_chunks_come_back() {
    support::require_netns();
    let domain = 61;
    let (a, b) = (participant(domain, &SHM), participant(domain, &SHM));
    let w = writer(&a, "Loans", History::KeepAll, None);
    let r = reader(&b, "Loans");
    matched(&w, &[&r]);
    assert_eq!(pools(domain).len(), 0, "no pool before the first loan");
    let n = 300u64;
    let mut got = Vec::new();
    for seq in 0..n {
        write_frame(&w, seq);
        // Take as we go, so the pool (256 chunks) never runs dry.
        got.extend(r.take_loaned(64).unwrap());
        got.retain(|s| s.data.is_some());
        if got.len() > 32 {
            for s in got.drain(..) {
                let f = s.data.unwrap();
                assert!(f.is_loaned(), "sample {} was copied", f.seq);
                check(&f);
            }
        }
    }
    assert_eq!(pools(domain).len(), 1);
    let mut seqs: Vec<u64> = got
        .drain(..)
        .filter_map(|s| s.data)
        .inspect(|f| check(f))
        .map(|f| f.seq)
        .collect();
    wait_until(10, "every sample", || {
        for s in r.take_loaned(64).unwrap() {
            if let Some(f) = s.data {
                assert!(f.is_loaned());
                check(&f);
                seqs.push(f.seq);
            }
        }
        seqs.last() == Some(&(n - 1))
    });
    // Acknowledged, taken and dropped: the chunks are free again (the writer's history
    // may keep the newest sample, and with it its chunk).
    w.wait_for_acknowledgments(Duration::from_secs(5)).unwrap();
    wait_until(5, "chunks back", || w.loans_in_use() <= 1);
    assert_eq!(r.undecodable_samples(), 0);

    // A reader that does not ask for loans gets copies of the same references.
    write_frame(&w, 7);
    let mut copies = Vec::new();
    wait_until(5, "a copy", || {
        copies.extend(r.take(8).unwrap().into_iter().filter_map(|s| s.data));
        !copies.is_empty()
    });
    assert_eq!(copies[0].seq, 7);
    check(&copies[0]);
    // A sample still held when the writer goes keeps the pool mapped; dropping it unmaps it
    // (the file is gone already: its memory would stay allocated while the mapping lives).
    write_frame(&w, 8);
    let mut last = Vec::new();
    wait_until(5, "one more", || {
        last.extend(r.take_loaned(8).unwrap().into_iter().filter_map(|s| s.data));
        !last.is_empty()
    });
    drop((w, copies));
    wait_until(5, "the pool file removed", || pools(domain).is_empty());
    assert_eq!(last[0].seq, 8);
    check(&last[0]);
    assert!(mapped_pools(domain) > 0);
    drop(last);
    // The writer closed its pool when `delete` returned, so the reader unmaps it with its
    // last sample; the writer's own mapping goes with the last reference to its endpoint,
    // which an event pass or a receive thread may hold a moment longer.
    wait_until(5, "the pool unmapped", || mapped_pools(domain) == 0);
    drop((r, a, b));
}

/// Mappings of this process of `domain`'s pool files.
fn mapped_pools(domain: u32) -> usize {
    std::fs::read_to_string("/proc/self/maps")
        .unwrap()
        .lines()
        .filter(|l| l.contains(&format!("/tessera-pool-{domain}-")))
        .count()
}

#[test]
#[ignore = "needs a network namespace: scripts/netns-run (scripts/test runs it)"]
fn keep_last_reuses_chunks_and_readers_never_see_a_torn_sample() {
    support::require_netns();
    let domain = 62;
    let (a, b) = (participant(domain, &SHM), participant(domain, &SHM));
    let w = writer(&a, "LoansLast", History::KeepLast(2), None);
    let r = reader(&b, "LoansLast");
    matched(&w, &[&r]);
    // The reader takes on its own thread: samples it has not taken hold their chunks, and a
    // writer whose every chunk is held waits in `loan` (a taker on the writer's thread would
    // wait with it).
    let taker = {
        let r = r.clone();
        std::thread::spawn(move || {
            let t0 = std::time::Instant::now();
            let mut last = None;
            while last != Some(199) && t0.elapsed() < Duration::from_secs(10) {
                let got = r.take_loaned(8).unwrap();
                if got.is_empty() {
                    std::thread::sleep(Duration::from_micros(200));
                }
                for s in got {
                    if let Some(f) = s.data {
                        check(&f);
                        last = Some(f.seq);
                    }
                }
            }
            last
        })
    };
    // More samples than the pool has chunks (2 + 16): the writer reuses released ones.
    for seq in 0..200u64 {
        write_frame(&w, seq);
    }
    assert_eq!(taker.join().unwrap(), Some(199), "the last sample");
    assert!(w.loans_in_use() <= 2 + 16);
    // A reliable reader never gets a reference to a chunk the writer reused before the
    // reader had it: no sample is refused as stale.
    assert_eq!(r.undecodable_samples(), 0);
}

#[test]
#[ignore = "needs a network namespace: scripts/netns-run (scripts/test runs it)"]
fn keep_all_waits_for_readers_that_hold_loans() {
    support::require_netns();
    let domain = 63;
    let (a, b) = (participant(domain, &SHM), participant(domain, &SHM));
    // max_samples 4: a pool of 4 + 16 chunks.
    let t = a
        .create_topic::<Frame>("LoansHeld", TopicQos::default())
        .unwrap();
    let mut qos = DataWriterQos::default()
        .with_reliability(Reliability::reliable(Duration::from_millis(300)))
        .with_history(History::KeepAll);
    qos.resource_limits.max_samples = Some(4);
    let w = a
        .create_publisher(Default::default())
        .unwrap()
        .create_datawriter(&t, qos)
        .unwrap();
    let r = reader(&b, "LoansHeld");
    matched(&w, &[&r]);
    let mut held = Vec::new();
    for seq in 0..20u64 {
        write_frame(&w, seq);
        wait_until(5, "the sample", || {
            held.extend(r.take_loaned(1).unwrap().into_iter().filter_map(|s| s.data));
            held.len() as u64 == seq + 1
        });
    }
    w.wait_for_acknowledgments(Duration::from_secs(5)).unwrap();
    // Every chunk is held by the reader: the next loan waits max_blocking_time, then fails.
    let t0 = std::time::Instant::now();
    assert!(matches!(w.loan(), Err(tessera::Error::Timeout)));
    assert!(t0.elapsed() >= Duration::from_millis(250));
    // The reader lets one go: the writer can loan again.
    held.remove(0);
    write_frame(&w, 20);
    assert!(held.iter().enumerate().all(|(i, f)| f.seq == i as u64 + 1));
    held.iter().for_each(|f| check(f));
}

#[test]
#[ignore = "needs a network namespace: scripts/netns-run (scripts/test runs it)"]
fn a_udp_reader_among_shm_readers_gets_every_sample_as_cdr() {
    support::require_netns();
    let domain = 64;
    let a = participant(domain, &SHM);
    let b = participant(domain, &SHM);
    let c = participant(domain, &[TransportKind::Udp4]);
    let w = writer(&a, "LoansMixed", History::KeepAll, None);
    let (rb, rc) = (reader(&b, "LoansMixed"), reader(&c, "LoansMixed"));
    matched(&w, &[&rb, &rc]);
    let n = 40u64;
    for seq in 0..n {
        write_frame(&w, seq);
    }
    for r in [&rb, &rc] {
        let mut seqs = Vec::new();
        wait_until(10, "every sample", || {
            for s in r.take_loaned(64).unwrap() {
                if let Some(f) = s.data {
                    check(&f);
                    seqs.push(f.seq);
                }
            }
            seqs.len() as u64 == n
        });
        assert_eq!(seqs, (0..n).collect::<Vec<_>>());
        assert_eq!(r.undecodable_samples(), 0);
    }
    // Serialized from the chunk, which was freed at once.
    assert_eq!(w.loans_in_use(), 0);
}

#[test]
#[ignore = "needs a network namespace: scripts/netns-run (scripts/test runs it)"]
fn loans_reach_a_reader_of_the_same_participant() {
    support::require_netns();
    let a = participant(65, &SHM);
    let w = writer(&a, "LoansLocal", History::KeepAll, None);
    let r = reader(&a, "LoansLocal");
    matched(&w, &[&r]);
    write_frame(&w, 3);
    let s = r
        .take_loaned(1)
        .unwrap()
        .pop()
        .and_then(|s| s.data)
        .unwrap();
    assert!(s.is_loaned());
    assert_eq!(s.seq, 3);
    check(&s);
}

/// Two participants on shared memory, a KEEP_ALL writer in the first matched with a typed
/// reader in the second.
fn shm_pair(
    domain: u32,
    topic: &str,
) -> (
    DomainParticipant,
    DomainParticipant,
    DataWriter<Frame>,
    DataReader<Frame>,
) {
    let (a, b) = (participant(domain, &SHM), participant(domain, &SHM));
    let w = writer(&a, topic, History::KeepAll, None);
    let r = reader(&b, topic);
    matched(&w, &[&r]);
    (a, b, w, r)
}

/// An untyped reader of `topic` made from the topic's type support, as a node, the Python
/// binding or a durability service makes one: it takes bytes.
fn untyped_reader(p: &DomainParticipant, topic: &str, qos: DataReaderQos) -> UntypedDataReader {
    let t = p.create_topic::<Frame>(topic, TopicQos::default()).unwrap();
    p.create_subscriber(Default::default())
        .unwrap()
        .create_untyped_datareader_for(&t.untyped(), qos)
        .unwrap()
}

/// Takes `n` samples from `r` as bytes (each must be CDR of a whole frame); their numbers.
fn take_frames_as_bytes(r: &UntypedDataReader, n: usize) -> Vec<u64> {
    let mut seqs = Vec::new();
    wait_until(10, "every sample as bytes", || {
        for s in r.take_serialized(64, StateMasks::ANY).unwrap() {
            let f = frame_of(s.data.unwrap().as_bytes());
            check(&f);
            seqs.push(f.seq);
        }
        seqs.len() >= n
    });
    assert_eq!(r.undecodable_samples(), 0);
    seqs
}

/// The frame in a serialized sample, which must be CDR (never a loan reference).
fn frame_of(bytes: &[u8]) -> Frame {
    assert_ne!(
        &bytes[..2],
        &[0x7a, 0x54],
        "a loan reference handed out as bytes"
    );
    tessera::SerializedPayload::new(bytes.to_vec())
        .decode::<Frame>()
        .unwrap()
}

#[test]
#[ignore = "needs a network namespace: scripts/netns-run (scripts/test runs it)"]
fn readers_that_take_bytes_are_sent_cdr_not_loan_references() {
    support::require_netns();
    let domain = 81;
    let (a, b, c) = (
        participant(domain, &SHM),
        participant(domain, &SHM),
        participant(domain, &SHM),
    );
    let w = writer(&a, "LoansBytes", History::KeepAll, None);
    let typed = reader(&c, "LoansBytes");
    let qos = DataReaderQos::default()
        .with_reliability(Reliability::reliable(Duration::from_secs(1)))
        .with_history(History::KeepAll);
    // Untyped readers on shared memory (another participant) and in the writer's own one.
    let (remote, local) = (
        untyped_reader(&b, "LoansBytes", qos.clone()),
        untyped_reader(&a, "LoansBytes", qos),
    );
    wait_until(10, "match", || {
        w.publication_matched_status().current_count == 3
            && [&remote, &local]
                .iter()
                .all(|r| r.subscription_matched_status().current_count == 1)
            && typed.subscription_matched_status().current_count == 1
    });
    let n = 40u64;
    for seq in 0..n {
        write_frame(&w, seq);
    }
    for r in [&remote, &local] {
        assert_eq!(
            take_frames_as_bytes(r, n as usize),
            (0..n).collect::<Vec<_>>()
        );
    }
    let mut seqs = Vec::new();
    wait_until(10, "every sample at the typed reader", || {
        for s in typed.take_loaned(64).unwrap() {
            let f = s.data.unwrap();
            assert!(
                !f.is_loaned(),
                "serialized for all once one reader cannot resolve"
            );
            check(&f);
            seqs.push(f.seq);
        }
        seqs.len() as u64 == n
    });
    assert_eq!(w.loans_in_use(), 0);
}

#[test]
#[ignore = "needs a network namespace: scripts/netns-run (scripts/test runs it)"]
fn a_typed_reader_hands_out_loaned_samples_as_cdr_when_asked_for_bytes() {
    support::require_netns();
    let (_a, _b, w, r) = shm_pair(82, "LoansAsBytes");
    let n = 20u64;
    for seq in 0..n {
        write_frame(&w, seq);
    }
    // References were sent: the writer's chunks are held until the samples are taken.
    wait_until(10, "references held", || w.loans_in_use() > 0);
    assert_eq!(
        take_frames_as_bytes(r.untyped(), n as usize),
        (0..n).collect::<Vec<_>>()
    );
}

#[test]
#[ignore = "needs a network namespace: scripts/netns-run (scripts/test runs it)"]
fn a_late_joiner_that_takes_bytes_gets_the_kept_history_as_cdr() {
    support::require_netns();
    let domain = 83;
    let (a, b, c) = (
        participant(domain, &SHM),
        participant(domain, &SHM),
        participant(domain, &[TransportKind::Udp4]),
    );
    let durable =
        |qos: DataWriterQos| qos.with_durability(tessera::qos::Durability::TransientLocal);
    let t = a
        .create_topic::<Frame>("LoansLate", TopicQos::default())
        .unwrap();
    let w = a
        .create_publisher(Default::default())
        .unwrap()
        .create_datawriter(
            &t,
            durable(
                DataWriterQos::default()
                    .with_reliability(Reliability::reliable(Duration::from_secs(2)))
                    .with_history(History::KeepLast(8)),
            ),
        )
        .unwrap();
    let early = reader(&b, "LoansLate");
    matched(&w, &[&early]);
    for seq in 0..8 {
        write_frame(&w, seq);
    }
    // References went to the early reader, which holds their chunks until it takes them.
    wait_until(10, "references held", || w.loans_in_use() >= 8);
    let late_qos = DataReaderQos::default()
        .with_reliability(Reliability::reliable(Duration::from_secs(1)))
        .with_history(History::KeepAll)
        .with_durability(tessera::qos::Durability::TransientLocal);
    // Late joiners that take bytes: untyped on shared memory (another participant) and in
    // the writer's participant; and a typed reader over UDP.
    let (late_shm, late_local) = (
        untyped_reader(&b, "LoansLate", late_qos.clone()),
        untyped_reader(&a, "LoansLate", late_qos.clone()),
    );
    let tc = c
        .create_topic::<Frame>("LoansLate", TopicQos::default())
        .unwrap();
    let late_udp = c
        .create_subscriber(Default::default())
        .unwrap()
        .create_datareader(&tc, late_qos.clone())
        .unwrap();
    for r in [&late_shm, &late_local] {
        assert_eq!(take_frames_as_bytes(r, 8), (0..8).collect::<Vec<_>>());
    }
    let mut seqs = Vec::new();
    wait_until(10, "the kept history over UDP", || {
        for s in late_udp.take(64).unwrap() {
            let f = s.data.unwrap();
            check(&f);
            seqs.push(f.seq);
        }
        seqs.len() == 8
    });
    assert_eq!(seqs, (0..8).collect::<Vec<_>>());
    assert_eq!(late_udp.undecodable_samples(), 0);
    // The early reader still resolves what it was sent.
    let got: Vec<u64> = early
        .take_loaned(64)
        .unwrap()
        .into_iter()
        .filter_map(|s| s.data)
        .inspect(|f| check(f))
        .map(|f| f.seq)
        .collect();
    assert_eq!(got, (0..8).collect::<Vec<_>>());
}

const CHILD_DOMAIN: &str = "TESSERA_LOANS_TEST_CHILD_DOMAIN";

/// Not a test of its own: the reader process of the kill -9 test. It takes loans until it
/// holds `HOLD` of them, says so, and waits to be killed. Without the parent's variable it
/// returns at once.
#[test]
#[ignore = "child process of a_reader_killed_while_holding_loans_does_not_wedge_the_writer"]
fn child_reader_holds_loans() {
    let Ok(domain) = std::env::var(CHILD_DOMAIN) else {
        return;
    };
    let p = participant(domain.parse().unwrap(), &SHM);
    // Reliable (a best-effort reader gets copies, never loans); it takes every sample, so the
    // writer's history is acknowledged and only the loans it keeps hold the writer up.
    let r = reader(&p, "LoansKill");
    let mut held = Vec::new();
    while held.len() < HOLD {
        held.extend(r.take_loaned(8).unwrap().into_iter().filter_map(|s| s.data));
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(held.iter().all(|f| f.is_loaned()));
    println!("holding");
    std::thread::sleep(Duration::from_secs(60));
}

const LEAK_DOMAIN: &str = "TESSERA_LOANS_TEST_LEAK_DOMAIN";

/// Not a test of its own: the process of `a_pool_is_unlinked_at_exit_even_if_its_writer_leaks`.
/// It publishes a loan and exits with its writer (and so its pool) never dropped, as when a
/// thread still holds the writer when `main` returns. Without the parent's variable it returns
/// at once.
#[test]
#[ignore = "child process of a_pool_is_unlinked_at_exit_even_if_its_writer_leaks"]
fn child_leaks_its_writer() {
    let Ok(domain) = std::env::var(LEAK_DOMAIN) else {
        return;
    };
    let p = participant(domain.parse().unwrap(), &SHM);
    let w = writer(&p, "LoansLeak", History::KeepLast(1), None);
    write_frame(&w, 1);
    println!("pools: {:?}", pools(domain.parse().unwrap()));
    std::mem::forget(w);
    std::mem::forget(p);
}

#[test]
#[ignore = "needs a network namespace: scripts/netns-run (scripts/test runs it)"]
fn a_pool_is_unlinked_at_exit_even_if_its_writer_leaks() {
    support::require_netns();
    let domain = 75;
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "child_leaks_its_writer",
            "--exact",
            "--ignored",
            "--nocapture",
        ])
        .env(LEAK_DOMAIN, domain.to_string())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    // The child had a pool while it ran, and none is left.
    assert!(stdout.contains("pools: [\"tessera-pool-75-"), "{stdout}");
    assert_eq!(pools(domain), Vec::<String>::new());
}

/// Loans the child holds: every chunk of a pool of `max_samples` 4 (4 + 16).
const HOLD: usize = 20;

#[test]
#[ignore = "needs a network namespace: scripts/netns-run (scripts/test runs it)"]
fn a_reader_killed_while_holding_loans_does_not_wedge_the_writer() {
    use std::io::BufRead;
    support::require_netns();
    let domain = 66;
    let a = participant(domain, &SHM);
    let t = a
        .create_topic::<Frame>("LoansKill", TopicQos::default())
        .unwrap();
    // KEEP_LAST: the writer's history never waits for the (reliable) reader's
    // acknowledgments, so only the loans it keeps can hold the writer up.
    let mut qos = DataWriterQos::default()
        .with_reliability(Reliability::reliable(Duration::from_millis(500)))
        .with_history(History::KeepLast(4));
    qos.resource_limits.max_samples = Some(4);
    let w = a
        .create_publisher(Default::default())
        .unwrap()
        .create_datawriter(&t, qos)
        .unwrap();
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "child_reader_holds_loans",
            "--exact",
            "--ignored",
            "--nocapture",
        ])
        .env(CHILD_DOMAIN, domain.to_string())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_until(20, "the child's reader", || {
        w.publication_matched_status().current_count == 1
    });
    // Write until the child says it holds every chunk.
    let lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for l in lines.map_while(|l| l.ok()) {
            if l.starts_with("holding") {
                let _ = tx.send(());
            }
        }
    });
    let mut seq = 0;
    while rx.try_recv().is_err() {
        match w.loan() {
            Ok(mut l) => {
                l.seq = seq;
                w.write_loan(l).unwrap();
                seq += 1;
            }
            Err(tessera::Error::Timeout) => {}
            Err(e) => panic!("{e}"),
        }
        assert!(seq < 10_000, "the child never held {HOLD} loans");
        std::thread::sleep(Duration::from_millis(2));
    }
    // Every chunk is held by a live reader: no loan.
    assert!(matches!(w.loan(), Err(tessera::Error::Timeout)));

    // SAFETY: kill has no memory preconditions; the pid is our own child's, not yet reaped.
    assert_eq!(
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGKILL) },
        0
    );
    child.wait().unwrap();
    // The dead reader's holds are cleared: loans work again, within max_blocking_time.
    for _ in 0..HOLD {
        let l = w.loan().unwrap();
        w.write_loan(l).unwrap();
    }
}

macro_rules! blob {
    ($name:ident, $len:expr) => {
        /// A plain sample of `$len` bytes after its sequence number.
        #[derive(TopicType, Clone, Copy)]
        #[repr(C)]
        struct $name {
            seq: u64,
            fill: [u8; $len],
        }
    };
}
blob!(Blob16, 8);
blob!(Blob64k, 65528);
blob!(Blob4m, 4194296);

/// A loaned ping-pong between two participants of this process: the pinger loans, the ponger
/// takes the loan and answers with one. Returns the median round trip. Never holds a sample
/// by value (a 4 MiB one would not fit a thread's stack).
fn loaned_round_trips<T: tessera::Plain + TopicType>(
    domain: u32,
    seq_of: fn(&T) -> u64,
    set_seq: fn(&mut T, u64),
    n: usize,
) -> RoundTrips {
    let (a, b) = (participant(domain, &SHM), participant(domain, &SHM));
    let qos_w = || {
        DataWriterQos::default()
            .with_reliability(Reliability::reliable(Duration::from_secs(2)))
            .with_history(History::KeepLast(1))
    };
    let qos_r = || {
        DataReaderQos::default()
            .with_reliability(Reliability::reliable(Duration::from_secs(2)))
            .with_history(History::KeepLast(1))
    };
    let ping_w = {
        let t = a.create_topic::<T>("Ping", TopicQos::default()).unwrap();
        a.create_publisher(Default::default())
            .unwrap()
            .create_datawriter(&t, qos_w())
            .unwrap()
    };
    let pong_r = {
        let t = a.create_topic::<T>("Pong", TopicQos::default()).unwrap();
        a.create_subscriber(Default::default())
            .unwrap()
            .create_datareader(&t, qos_r())
            .unwrap()
    };
    let ping_r = {
        let t = b.create_topic::<T>("Ping", TopicQos::default()).unwrap();
        b.create_subscriber(Default::default())
            .unwrap()
            .create_datareader(&t, qos_r())
            .unwrap()
    };
    let pong_w = {
        let t = b.create_topic::<T>("Pong", TopicQos::default()).unwrap();
        b.create_publisher(Default::default())
            .unwrap()
            .create_datawriter(&t, qos_w())
            .unwrap()
    };
    wait_until(10, "match", || {
        ping_w.publication_matched_status().current_count == 1
            && pong_w.publication_matched_status().current_count == 1
    });
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    // Both sides block in a wait set until data is there. Polling `take_loaned` in a loop
    // instead kept both cores of a 2-core machine busy, and the receive threads that deliver
    // the samples (woken on time, every sample sent once) waited for a core until a
    // scheduler tick: round trips of 4, 8, 12 ms, half of them in some runs.
    let ponger = {
        let stop = stop.clone();
        let pong_w = pong_w.clone();
        std::thread::spawn(move || {
            let cpu0 = thread_cpu();
            let ws = wait_set(&ping_r);
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                if ws.wait(Some(Duration::from_millis(20))).is_err() {
                    continue;
                }
                for s in ping_r.take_loaned(1).unwrap() {
                    let Some(ping) = s.data else { continue };
                    assert!(ping.is_loaned());
                    let mut l = pong_w.loan().unwrap();
                    set_seq(&mut l, seq_of(&ping));
                    pong_w.write_loan(l).unwrap();
                }
            }
            (ping_r, thread_cpu() - cpu0)
        })
    };
    let ws = wait_set(&pong_r);
    let cpu0 = thread_cpu();
    let mut rtts = Vec::with_capacity(n);
    for seq in 0..n as u64 {
        let t0 = std::time::Instant::now();
        let mut l = ping_w.loan().unwrap();
        set_seq(&mut l, seq);
        ping_w.write_loan(l).unwrap();
        'wait: loop {
            let left = Duration::from_secs(5).saturating_sub(t0.elapsed());
            assert!(!left.is_zero(), "pong {seq} lost");
            if ws.wait(Some(left)).is_err() {
                continue;
            }
            for s in pong_r.take_loaned(1).unwrap() {
                if s.data.as_ref().is_some_and(|p| seq_of(p) == seq) {
                    break 'wait;
                }
            }
        }
        rtts.push(t0.elapsed());
    }
    let pinger_cpu = thread_cpu() - cpu0;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let (ping_r, ponger_cpu) = ponger.join().unwrap();
    rtts.sort();
    RoundTrips {
        median: rtts[n / 2],
        repairs: ping_w.retransmitted_samples() + pong_w.retransmitted_samples(),
        undecodable: ping_r.undecodable_samples() + pong_r.undecodable_samples(),
        cpu_per_round_trip: pinger_cpu.max(ponger_cpu) / n as u32,
    }
}

/// CPU time of the calling thread so far.
fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec to write; the clock id is a constant the kernel knows.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0);
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// A wait set that wakes when `r` has a sample not yet read.
fn wait_set<T: TopicType>(r: &DataReader<T>) -> WaitSet {
    let mut ws = WaitSet::new();
    ws.attach(&r.create_readcondition(StateMasks::NOT_READ));
    ws
}

/// What a loaned ping-pong measured and counted.
#[derive(Debug)]
struct RoundTrips {
    median: Duration,
    /// Samples either writer sent again (a reader asked for a repair).
    repairs: u64,
    /// Samples either reader could not use (a loan reference refused as stale counts here;
    /// the process-wide `refused_loans` would also count other tests' references).
    undecodable: u64,
    /// CPU time of the pinger's or the ponger's thread (the larger) per round trip: a few
    /// µs when it waits for data, the whole round trip when it polls.
    cpu_per_round_trip: Duration,
}

/// Not a benchmark (a debug build, a shared machine): checks that 16 B, 64 KiB and 4 MiB loans
/// make round trips, and prints the medians.
#[test]
#[ignore = "needs a network namespace: scripts/netns-run (scripts/test runs it)"]
fn loaned_round_trips_of_16_bytes_64_kib_and_4_mib() {
    support::require_netns();
    let small = loaned_round_trips::<Blob16>(67, |b| b.seq, |b, s| b.seq = s, 200).median;
    let mid = loaned_round_trips::<Blob64k>(68, |b| b.seq, |b, s| b.seq = s, 200).median;
    let big = loaned_round_trips::<Blob4m>(69, |b| b.seq, |b, s| b.seq = s, 200).median;
    eprintln!("loaned round trip medians: 16 B {small:?}, 64 KiB {mid:?}, 4 MiB {big:?}");
}

/// Short loaned ping-pongs, one after another: none may have a typical round trip of a
/// scheduler tick (4 ms) or more. Each sample is sent once (no repair), arrives by reference
/// and is resolved (nothing refused as stale); both sides wait for data, using a few µs of CPU
/// per round trip (polling used a whole core each and starved the receive threads of a
/// 2-core machine: medians of 4-12 ms with every counter at 0).
#[test]
#[ignore = "needs a network namespace: scripts/netns-run (scripts/test runs it)"]
fn short_loaned_ping_pongs_never_stall() {
    support::require_netns();
    for round in 0..8u32 {
        let rt = loaned_round_trips::<Blob64k>(70 + round, |b| b.seq, |b, s| b.seq = s, 100);
        assert_eq!(
            (rt.repairs, rt.undecodable),
            (0, 0),
            "ping-pong {round}: {rt:?}"
        );
        assert!(
            rt.cpu_per_round_trip < Duration::from_millis(1),
            "ping-pong {round} polled: {rt:?}"
        );
        assert!(
            rt.median < Duration::from_millis(4),
            "ping-pong {round} stalled: {rt:?}"
        );
    }
}

/// Acknowledged and released samples give every chunk back, the last one written included:
/// nothing outside the history (such as a thread's reused datagram, which kept the `Arc`
/// of the last DATA it carried until that thread sent again) may keep a loan's payload.
#[test]
#[ignore = "needs a network namespace: scripts/netns-run (scripts/test runs it)"]
fn acknowledged_loans_leave_no_chunk_in_use() {
    support::require_netns();
    let domain = 80;
    let (a, b) = (participant(domain, &SHM), participant(domain, &SHM));
    let w = writer(&a, "LoansBack", History::KeepAll, None);
    let r = reader(&b, "LoansBack");
    matched(&w, &[&r]);
    let n = 5u64;
    for seq in 0..n {
        write_frame(&w, seq);
    }
    let mut got = 0;
    wait_until(10, "every sample", || {
        got += r.take_loaned(8).unwrap().len();
        got as u64 == n
    });
    w.wait_for_acknowledgments(Duration::from_secs(5)).unwrap();
    wait_until(5, "every chunk back", || w.loans_in_use() == 0);
}

/// A best-effort reader never slows a writer down, loans or not: it does not announce that it
/// resolves loans, so it gets copies and holds none of the writer's chunks (one holding them in
/// a history it does not take from made `loan` time out), and what it takes later is intact.
#[test]
#[ignore = "needs a network namespace: scripts/netns-run (scripts/test runs it)"]
fn a_best_effort_reader_that_does_not_take_never_blocks_a_loaning_writer() {
    support::require_netns();
    let domain = 69;
    let (a, b) = (participant(domain, &SHM), participant(domain, &SHM));
    let w = writer(&a, "LoansBestEffort", History::KeepLast(2), None);
    let t = b
        .create_topic::<Frame>("LoansBestEffort", TopicQos::default())
        .unwrap();
    let r = b
        .create_subscriber(Default::default())
        .unwrap()
        .create_datareader(
            &t,
            DataReaderQos::default()
                .with_reliability(Reliability::best_effort())
                .with_history(History::KeepAll),
        )
        .unwrap();
    matched(&w, &[&r]);
    let t0 = std::time::Instant::now();
    for seq in 0..200u64 {
        write_frame(&w, seq);
    }
    assert!(
        t0.elapsed() < Duration::from_secs(5),
        "200 loans took {:?} beside a best-effort reader that does not take",
        t0.elapsed()
    );
    std::thread::sleep(Duration::from_millis(200));
    let got: Vec<_> = r
        .take_loaned(1000)
        .unwrap()
        .into_iter()
        .filter_map(|s| s.data)
        .collect();
    assert!(!got.is_empty(), "the best-effort reader got nothing");
    // Copies, not references: none refused as stale, none undecodable.
    assert_eq!(r.sample_lost_status().total_count, 0);
    assert_eq!(r.undecodable_samples(), 0);
    got.iter().for_each(|f| check(f));
    assert!(got.windows(2).all(|p| p[0].seq < p[1].seq), "out of order");
}
