//! A live pair of participants keeps working while garbage arrives on every RTPS port, and the
//! runtime counts what it dropped. Over the in-process network the garbage comes from a raw node
//! of that network; over UDPv4 (in a test network namespace, `scripts/test`) from a socket.

use std::net::UdpSocket;
use std::time::{Duration, Instant};
use tessera::qos::{DataReaderQos, DataWriterQos, History, Reliability, TopicQos};
use tessera::rtps::types::Locator;
use tessera::transport::{InProcessTransport, Transport as _};
use tessera::TopicType;

#[derive(TopicType, Debug, Clone)]
struct Msg {
    seq: u32,
    body: Vec<u8>,
}

mod support;
use support::{Domain, Transport};

/// Sends raw datagrams to every RTPS port of the domain's participants.
enum Hostile {
    Udp(UdpSocket),
    /// A node of the in-process network that is no participant, and the destinations of the
    /// network's nodes: each node has a metatraffic and a user port, plus the SPDP broadcast.
    InProc(Box<InProcessTransport>, Vec<Locator>),
}

impl Hostile {
    fn new(d: &Domain) -> Hostile {
        match &d.net {
            None => Hostile::Udp(UdpSocket::bind("127.0.0.1:0").unwrap()),
            Some(net) => {
                let node = InProcessTransport::new(net, 0);
                let base = node.locators().metatraffic_unicast;
                let mut dests: Vec<Locator> = (1..=2 * net.nodes() as u32)
                    .map(|port| Locator { port, ..base })
                    .collect();
                dests.extend_from_slice(node.spdp_destinations());
                Hostile::InProc(Box::new(node), dests)
            }
        }
    }

    /// Sends `d` everywhere; returns how many datagrams went out.
    fn send(&self, d: &[u8]) -> usize {
        match self {
            Hostile::Udp(sock) => (7400..7416u16)
                .filter(|p| sock.send_to(d, ("127.0.0.1", *p)).is_ok())
                .count(),
            Hostile::InProc(node, dests) => {
                dests.iter().filter(|l| node.send_to(d, l).is_ok()).count()
            }
        }
    }
}

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

fn participants_survive_and_count_hostile_datagrams(t: Transport) {
    let d = t.domain(2);
    let (a, b) = (&d.participants[0], &d.participants[1]);
    let ta = a
        .create_topic::<Msg>("Hostile", TopicQos::default())
        .unwrap();
    let tb = b
        .create_topic::<Msg>("Hostile", TopicQos::default())
        .unwrap();
    let w = a
        .create_publisher(Default::default())
        .unwrap()
        // KEEP_ALL: every sample is promised; a KEEP_LAST 1 writer may replace a sample that
        // the garbage delayed before it is repaired.
        .create_datawriter(&ta, DataWriterQos::default().with_history(History::KeepAll))
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

    let hostile = Hostile::new(&d);
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut sent = 0;
    for round in 0..5u32 {
        for g in garbage(&mut rng) {
            sent += hostile.send(&g);
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

per_transport!(participants_survive_and_count_hostile_datagrams);
