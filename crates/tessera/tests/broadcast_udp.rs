//! `TESSERA_BROADCAST` / `UdpConfig::broadcast`: three participants that use the interface's
//! broadcast address instead of multicast (no group is joined) discover each other and deliver
//! reliable data from one writer to two readers, which announce the broadcast address as their
//! multicast locator.

use std::time::Duration;
use tessera::qos::{DataReaderQos, DataWriterQos, History, Reliability, TopicQos};
use tessera::transport::{TransportKind, UdpConfig};
use tessera::{DomainParticipant, ParticipantConfig};

mod support;
use support::Keyed;

#[test]
#[ignore = "needs a network namespace: scripts/netns-run (scripts/test runs it)"]
fn broadcast_discovery_and_one_to_two_delivery() {
    support::require_netns();
    const DOMAIN: u32 = 7;
    let participant = || {
        let mut udp = UdpConfig::new(DOMAIN).unwrap();
        udp.broadcast = true;
        let config = ParticipantConfig {
            udp: Some(udp),
            transports: Some(vec![TransportKind::Udp4]),
            ..Default::default()
        };
        DomainParticipant::with_qos(DOMAIN, Default::default(), config).unwrap()
    };
    let (a, b, c) = (participant(), participant(), participant());
    let wt = a
        .create_topic::<Keyed>("Bcast", TopicQos::default())
        .unwrap();
    let w = a
        .create_publisher(Default::default())
        .unwrap()
        .create_datawriter(&wt, DataWriterQos::default().with_history(History::KeepAll))
        .unwrap();
    let readers: Vec<_> = [&b, &c]
        .iter()
        .map(|p| {
            let t = p
                .create_topic::<Keyed>("Bcast", TopicQos::default())
                .unwrap();
            p.create_subscriber(Default::default())
                .unwrap()
                .create_datareader(
                    &t,
                    DataReaderQos::default()
                        .with_reliability(Reliability::reliable(Duration::from_secs(1)))
                        .with_history(History::KeepAll),
                )
                .unwrap()
        })
        .collect();
    support::wait_until(15, "both readers matched", || {
        w.publication_matched_status().current_count == 2
    });
    const N: u32 = 300;
    for seq in 0..N {
        w.write(&Keyed { id: seq % 3, seq }).unwrap();
    }
    for got in support::take_until_each_has(&readers, N as usize, |d| d.seq) {
        let mut got = got;
        got.sort_unstable();
        assert_eq!(got, (0..N).collect::<Vec<_>>(), "each sample once");
    }
}
