//! Participants with the shared-memory transport (beside UDPv4 for discovery): they reach each
//! other through shared memory, still reach UDP-only participants by UDP, and leave nothing in
//! `/dev/shm` when dropped. Needs a network namespace (discovery is UDP).

mod support;

use std::time::Duration;
use support::{reliable_reader, take_until_each_has, wait_until, Keyed};
use tessera::qos::{DataWriterQos, History, Reliability, TopicQos};
use tessera::transport::TransportKind;
use tessera::{DomainParticipant, ParticipantConfig, TransportTraffic};

fn participant(domain: u32, kinds: &[TransportKind]) -> DomainParticipant {
    support::participant_on(domain, kinds)
}

/// Our segments of `domain` in /dev/shm.
fn segments(domain: u32) -> Vec<String> {
    support::shm_files(&format!("tessera-{domain}-"))
}

fn traffic(p: &DomainParticipant, name: &str) -> TransportTraffic {
    p.transport_traffic()
        .into_iter()
        .find(|t| t.name == name)
        .expect("transport")
}

/// Sends `n` reliable samples from `a` to `b` and waits for all of them.
fn exchange(a: &DomainParticipant, b: &DomainParticipant, topic: &str, n: u32) {
    let ta = a.create_topic::<Keyed>(topic, TopicQos::default()).unwrap();
    let w = a
        .create_publisher(Default::default())
        .unwrap()
        .create_datawriter(
            &ta,
            DataWriterQos::default()
                .with_reliability(Reliability::reliable(Duration::from_secs(5)))
                .with_history(History::KeepAll),
        )
        .unwrap();
    let r = reliable_reader(b, topic);
    wait_until(10, "match", || {
        w.publication_matched_status().current_count == 1
            && r.subscription_matched_status().current_count == 1
    });
    for seq in 0..n {
        w.write(&Keyed { id: 1, seq }).unwrap();
    }
    let got = take_until_each_has(&[r], n as usize, |k| k.seq);
    assert_eq!(got[0], (0..n).collect::<Vec<_>>());
}

#[test]
#[ignore = "needs a network namespace: scripts/netns-run (scripts/test runs it)"]
fn same_host_participants_talk_through_shared_memory_and_clean_up() {
    support::require_netns();
    let domain = 41;
    let kinds = [TransportKind::Udp4, TransportKind::Shm];
    let a = participant(domain, &kinds);
    let b = participant(domain, &kinds);
    assert_eq!(segments(domain).len(), 2);
    exchange(&a, &b, "ShmPair", 2000);
    let (a_shm, b_shm, a_udp) = (traffic(&a, "shm"), traffic(&b, "shm"), traffic(&a, "udp4"));
    // The samples, SEDP and heartbeats went by shared memory; UDP carried SPDP only. (Counted
    // in bytes: samples sent before the reliable handshake completes go packed, several to a
    // datagram.)
    assert!(a_shm.bytes_sent >= 2000 * 8, "shm: {a_shm:?}");
    assert!(b_shm.bytes_received >= 2000 * 8, "shm: {b_shm:?}");
    assert!(a_udp.bytes_sent < a_shm.bytes_sent / 4, "udp4: {a_udp:?}");
    drop((a, b));
    assert!(
        segments(domain).is_empty(),
        "left behind: {:?}",
        segments(domain)
    );
}

/// A participant with shared memory still reaches a UDP-only one (by UDP), in both directions.
#[test]
#[ignore = "needs a network namespace: scripts/netns-run (scripts/test runs it)"]
fn shared_memory_and_udp_only_participants_still_talk() {
    support::require_netns();
    let domain = 42;
    let shm = participant(domain, &[TransportKind::Udp4, TransportKind::Shm]);
    let udp = participant(domain, &[TransportKind::Udp4]);
    exchange(&shm, &udp, "Mixed1", 300);
    exchange(&udp, &shm, "Mixed2", 300);
    let (shm_t, udp_t) = (traffic(&shm, "shm"), traffic(&shm, "udp4"));
    assert_eq!((shm_t.datagrams_sent, shm_t.datagrams_received), (0, 0));
    assert!(
        udp_t.bytes_sent >= 300 * 8 && udp_t.bytes_received >= 300 * 8,
        "{udp_t:?}"
    );
}

#[test]
fn shm_alone_is_refused() {
    let config = ParticipantConfig {
        transports: Some(vec![TransportKind::Shm]),
        ..Default::default()
    };
    let e = DomainParticipant::with_qos(43, Default::default(), config).unwrap_err();
    assert!(
        e.to_string().contains("shm needs udp4, udp6 or tcp4"),
        "{e}"
    );
    assert!(segments(43).is_empty());
}
