//! A live pair of participants keeps working while garbage arrives on every RTPS port, and the
//! runtime counts what it dropped. Ignored by a plain `cargo test`: runs inside a test network
//! namespace (`scripts/test`).

use std::net::UdpSocket;
use std::time::{Duration, Instant};
use tessera::qos::{DataReaderQos, History, Reliability, TopicQos};
use tessera::{DomainParticipant, TopicType};

#[derive(TopicType, Debug, Clone)]
struct Msg {
    seq: u32,
    body: Vec<u8>,
}

mod common;
use common::require_netns;

/// A tiny deterministic generator (no extra dependency).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

fn header() -> Vec<u8> {
    let mut h = b"RTPS".to_vec();
    h.extend_from_slice(&[2, 3, 0x01, 0x0f]);
    h.extend_from_slice(&[0xee; 12]);
    h
}

/// Hostile datagrams: random bytes, truncated headers, lying lengths, absurd fragments,
/// parameter lists that lie, sequence numbers out of range.
fn garbage(rng: &mut Rng) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for n in [0, 1, 4, 19, 20, 64, 1400] {
        out.push(rng.bytes(n));
    }
    out.push(b"RTPS".to_vec());
    let mut h = header();
    h.extend_from_slice(&[0x15, 0x01, 0xff, 0xff]); // DATA claiming 65535 bytes
    out.push(h);
    let mut h = header();
    // DATA_FRAG: sample size 4 GiB, fragment size 0
    h.extend_from_slice(&[0x16, 0x01, 36, 0]);
    h.extend_from_slice(&[0, 0, 16, 0, 0, 0, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 1, 0, 0, 0]);
    h.extend_from_slice(&[1, 0, 0, 0, 1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff]);
    out.push(h);
    let mut h = header();
    // SPDP DATA whose parameter list lies about its length
    h.extend_from_slice(&[0x15, 0x05, 40, 0]);
    h.extend_from_slice(&[
        0, 0, 16, 0, 0, 1, 0, 0xc7, 0, 1, 0, 0xc2, 0, 0, 0, 0, 1, 0, 0, 0,
    ]);
    h.extend_from_slice(&[0, 3, 0, 0, 0x50, 0, 0xf0, 0xff, 1, 2, 3, 4, 5, 6, 7, 8]);
    out.push(h);
    let mut h = header();
    // HEARTBEAT with first > last + 1 and a huge ACKNACK bitmap count
    h.extend_from_slice(&[0x07, 0x01, 28, 0]);
    h.extend_from_slice(&[0; 8]);
    h.extend_from_slice(&[0, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0]);
    h.extend_from_slice(&[0x06, 0x01, 24, 0]);
    h.extend_from_slice(&[0; 8]);
    h.extend_from_slice(&[0, 0, 0, 0, 1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff]);
    out.push(h);
    for _ in 0..200 {
        let mut h = header();
        let len = (rng.next() % 600) as usize;
        h.extend(rng.bytes(len));
        out.push(h);
    }
    out
}

#[test]
#[ignore = "needs a network namespace: scripts/netns-run (scripts/test runs it)"]
fn participants_survive_and_count_hostile_datagrams() {
    require_netns();
    let a = DomainParticipant::new(0).unwrap();
    let b = DomainParticipant::new(0).unwrap();
    let ta = a
        .create_topic::<Msg>("Hostile", TopicQos::default())
        .unwrap();
    let tb = b
        .create_topic::<Msg>("Hostile", TopicQos::default())
        .unwrap();
    let w = a
        .create_publisher(Default::default())
        .unwrap()
        .create_datawriter(&ta, Default::default())
        .unwrap();
    let rqos = DataReaderQos::default()
        .with_reliability(Reliability::reliable(Duration::from_secs(1)))
        .with_history(History::KeepAll);
    let r = b
        .create_subscriber(Default::default())
        .unwrap()
        .create_datareader(&tb, rqos)
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while w.publication_matched_status().current_count == 0 {
        assert!(Instant::now() < deadline, "no match");
        std::thread::sleep(Duration::from_millis(10));
    }

    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let ports: Vec<u16> = (7400..7416).collect();
    let mut sent = 0;
    for round in 0..5u32 {
        for d in garbage(&mut rng) {
            for p in &ports {
                if sock.send_to(&d, ("127.0.0.1", *p)).is_ok() {
                    sent += 1;
                }
            }
        }
        // Real traffic keeps flowing in between.
        w.write(&Msg {
            seq: round,
            body: vec![round as u8; 3000],
        })
        .unwrap();
    }
    let mut got = Vec::new();
    while got.len() < 5 {
        assert!(
            Instant::now() < deadline,
            "data stopped flowing: got {got:?}"
        );
        got.extend(
            r.take(10)
                .unwrap()
                .into_iter()
                .filter_map(|s| s.data.map(|d| d.seq)),
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(got, vec![0, 1, 2, 3, 4]);
    let (ca, cb) = (a.counters(), b.counters());
    let dropped = ca.malformed_messages
        + ca.malformed_submessages
        + cb.malformed_messages
        + cb.malformed_submessages;
    eprintln!("sent {sent} hostile datagrams; counters a {ca:?} b {cb:?}");
    assert!(dropped > 100, "drops were not counted: {ca:?} {cb:?}");
}
