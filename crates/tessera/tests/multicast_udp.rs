//! Multicast user data over UDPv4 (in a network namespace: `scripts/netns-run`): one writer,
//! four reader participants. With multicast the writer's participant sends about one datagram
//! per sample (to the user multicast group every reader participant joined); with
//! `TESSERA_ALLOW_MULTICAST=spdp` one per reader. Every reader gets every sample once.

mod support;

use std::time::{Duration, Instant};
use tessera::qos::{DataReaderQos, DataWriterQos, History, Reliability, TopicQos};
use tessera::transport::TransportKind;
use tessera::TopicType;
use tessera::{AllowMulticast, DataReader, DomainParticipant, ParticipantConfig};

#[derive(TopicType, Debug, Clone, PartialEq)]
struct Blob {
    #[key]
    id: u32,
    seq: u32,
    data: Vec<u8>,
}

const SAMPLES: u32 = 300;
/// Set in the child process that `spdp_env_sends_one_copy_per_reader` starts.
const CHILD: &str = "TESSERA_TEST_MCAST_CHILD";

/// Returns the writer participant's datagrams per sample.
fn measure(domain: u32, allow: Option<AllowMulticast>) -> f64 {
    let make = || {
        // UDP alone: shared memory (on by default) would carry the data past the multicast
        // group this test counts on.
        let config = ParticipantConfig {
            allow_multicast: allow,
            transports: Some(vec![TransportKind::Udp4]),
            ..Default::default()
        };
        DomainParticipant::with_qos(domain, Default::default(), config).unwrap()
    };
    let wp = make();
    let t = wp
        .create_topic::<Blob>("McUdp", TopicQos::default())
        .unwrap();
    let w = wp
        .create_publisher(Default::default())
        .unwrap()
        .create_datawriter(&t, DataWriterQos::default().with_history(History::KeepAll))
        .unwrap();
    let rps: Vec<DomainParticipant> = (0..4).map(|_| make()).collect();
    let readers: Vec<DataReader<Blob>> = rps
        .iter()
        .map(|p| {
            let t = p
                .create_topic::<Blob>("McUdp", TopicQos::default())
                .unwrap();
            let qos = DataReaderQos::default()
                .with_reliability(Reliability::reliable(Duration::from_secs(1)))
                .with_history(History::KeepAll);
            p.create_subscriber(Default::default())
                .unwrap()
                .create_datareader(&t, qos)
                .unwrap()
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(15);
    while w.publication_matched_status().current_count < 4
        || readers
            .iter()
            .any(|r| r.subscription_matched_status().current_count == 0)
    {
        assert!(Instant::now() < deadline, "no full match within 15 s");
        std::thread::sleep(Duration::from_millis(5));
    }
    // Loopback takes 65,507-byte datagrams (MTU 65,536 less the headers).
    assert_eq!(w.max_message_size(), 65507);
    std::thread::sleep(Duration::from_millis(500));
    let before = wp.counters().datagrams_sent;
    for i in 0..SAMPLES {
        w.write(&Blob {
            id: i % 8,
            seq: i,
            data: vec![i as u8; 200],
        })
        .unwrap();
        w.flush();
    }
    w.wait_for_acknowledgments(Duration::from_secs(20)).unwrap();
    let sent = wp.counters().datagrams_sent - before;
    let got = support::take_until_each_has(&readers, SAMPLES as usize, |b| b.seq);
    for g in &got {
        let mut sorted = g.clone();
        sorted.sort_unstable();
        assert_eq!(
            sorted,
            (0..SAMPLES).collect::<Vec<_>>(),
            "missed or duplicated"
        );
    }
    let per_sample = sent as f64 / SAMPLES as f64;
    println!("datagrams per sample: {per_sample:.2}");
    per_sample
}

#[test]
#[ignore = "needs a network namespace: scripts/netns-run (scripts/test runs it)"]
fn multicast_sends_about_one_datagram_per_sample() {
    support::require_netns();
    let per_sample = measure(61, Some(AllowMulticast::On));
    assert!(per_sample < 1.6, "{per_sample} datagrams per sample");
}

#[test]
#[ignore = "needs a network namespace: scripts/netns-run (scripts/test runs it)"]
fn spdp_env_sends_one_copy_per_reader() {
    support::require_netns();
    if std::env::var(CHILD).is_ok() {
        // The configuration leaves it to TESSERA_ALLOW_MULTICAST=spdp.
        let per_sample = measure(62, None);
        assert!(per_sample >= 4.0, "{per_sample} datagrams per sample");
        return;
    }
    // The variable is read at participant creation: set it only in a child process, so that
    // the other tests of this binary do not see it.
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "spdp_env_sends_one_copy_per_reader",
            "--exact",
            "--include-ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("TESSERA_ALLOW_MULTICAST", "spdp")
        .env(CHILD, "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "child failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
