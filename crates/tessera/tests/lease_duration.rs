//! `ParticipantConfig::lease_duration`: the lease a participant announces decides how soon
//! peers drop it when it falls silent (a crash, a cut link), and announcements keep a short
//! lease alive while it is not silent.

mod support;
use std::time::{Duration, Instant};
use support::{reliable_reader, wait_until, Keyed};
use tessera::transport::{FaultConfig, InProcessNetwork};
use tessera::{DomainParticipant, ParticipantConfig};

fn participant(net: &InProcessNetwork, lease: Option<Duration>) -> DomainParticipant {
    let config = ParticipantConfig {
        lease_duration: lease,
        ..ParticipantConfig::with_in_process(net.clone())
    };
    DomainParticipant::with_qos(0, Default::default(), config).unwrap()
}

fn writer(p: &DomainParticipant, topic: &str) -> tessera::DataWriter<Keyed> {
    let t = p.create_topic::<Keyed>(topic, Default::default()).unwrap();
    p.create_publisher(Default::default())
        .unwrap()
        .create_datawriter(&t, Default::default())
        .unwrap()
}

/// The writer's participant (node 0) announces a 600 ms lease; the link to the reader's
/// participant (node 1) is then cut. The reader must drop the writer within a few leases —
/// well before the 10 s default would have let it go.
#[test]
fn a_silent_participant_with_a_short_lease_is_dropped_soon() {
    let net = InProcessNetwork::new();
    let a = participant(&net, Some(Duration::from_millis(600)));
    let b = participant(&net, None);
    let _w = writer(&a, "Lease");
    let r = reliable_reader(&b, "Lease");
    wait_until(10, "match", || r.matched_publications().len() == 1);
    // Alive while announcing: three leases with the link up keep the match.
    std::thread::sleep(Duration::from_millis(1800));
    assert_eq!(r.matched_publications().len(), 1, "dropped while alive");
    net.set_node_faults(
        1,
        FaultConfig {
            loss_percent: 100.0,
            ..FaultConfig::default()
        },
    );
    let cut = Instant::now();
    wait_until(5, "the lease to expire", || {
        r.matched_publications().is_empty()
    });
    assert!(cut.elapsed() < Duration::from_secs(5));
}

#[test]
fn a_lease_shorter_than_the_minimum_is_refused() {
    let net = InProcessNetwork::new();
    let config = ParticipantConfig {
        lease_duration: Some(Duration::from_millis(10)),
        ..ParticipantConfig::with_in_process(net)
    };
    let e = DomainParticipant::with_qos(0, Default::default(), config).unwrap_err();
    assert!(matches!(e, tessera::Error::BadParameter(_)), "{e:?}");
}
