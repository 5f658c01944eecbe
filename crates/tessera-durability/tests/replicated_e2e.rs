//! Replicated durability services (`ServiceConfig::replicated`) end to end: RTPS over the
//! in-process network, the services' consensus log over TCP on loopback. Three services keep
//! the same samples in the same order while one of them goes away mid-stream; a service that
//! starts later catches up to the same samples; a late reader gets each sample once. Opens TCP
//! sockets: run it in a namespace,
//! `scripts/netns-run cargo test -p tessera-durability --test replicated_e2e -- --include-ignored`.

use std::time::{Duration, Instant};
use tessera::qos::Durability;
use tessera::transport::InProcessNetwork;
use tessera::DataWriter;
use tessera_durability::{DurabilityService as Service, ServiceConfig, StoredSample};

mod common;
use common::{join, reader, take_n, wait_until, writer, Reading};

const TOPIC: &str = "Replicated";

fn replicated(net: &InProcessNetwork) -> Service {
    Service::start(
        join(net),
        ServiceConfig {
            period: Duration::from_millis(10),
            replicated: true,
            ..ServiceConfig::default()
        },
    )
    .expect("service")
}

/// What a service keeps, in its storing order, without the service-local arrival number.
fn kept(s: &Service) -> Vec<([u8; 16], i64, Vec<u8>)> {
    s.samples(TOPIC)
        .into_iter()
        .map(|s: StoredSample| (s.writer.to_bytes(), s.sequence_number, s.payload))
        .collect()
}

fn write_range(w: &DataWriter<Reading>, values: std::ops::Range<u32>) {
    for value in values {
        w.write(&Reading {
            sensor: value % 10,
            value,
        })
        .unwrap();
    }
}

#[test]
#[ignore = "opens TCP sockets (consensus): run in a network namespace"]
fn replicated_services_keep_the_same_samples_through_a_departure_and_a_late_start() {
    let net = InProcessNetwork::new();
    let services: Vec<Service> = (0..3).map(|_| replicated(&net)).collect();
    let wp = join(&net);
    let w = writer(&wp, TOPIC, Durability::Transient, 1000, 1000);
    wait_until(20, "the three services follow the topic", || {
        w.matched_subscriptions().len() == 3
    });
    write_range(&w, 0..150);
    w.wait_for_acknowledgments(Duration::from_secs(30))
        .expect("acknowledged by the three services");
    // Acknowledged means applied by the log here, so every service has it.
    for s in &services {
        assert_eq!(
            kept(s).len(),
            150,
            "each service applied what it acknowledged"
        );
    }

    // One service goes away; the other two go on (a majority of the group).
    let mut services = services;
    drop(services.pop());
    write_range(&w, 150..300);
    w.wait_for_acknowledgments(Duration::from_secs(30))
        .expect("acknowledged by the two services left");
    wait_until(20, "both services keep 300 samples", || {
        services.iter().all(|s| kept(s).len() == 300)
    });
    assert_eq!(
        kept(&services[0]),
        kept(&services[1]),
        "the same samples in the same order"
    );

    // A service started now catches up from the log (and its peers' replays) to the same set.
    let late = replicated(&net);
    let deadline = Instant::now() + Duration::from_secs(30);
    while kept(&late).len() != 300 {
        assert!(
            Instant::now() < deadline,
            "the late service keeps {} of 300 samples (log: {:?})",
            kept(&late).len(),
            late.log_counters()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let mut a = kept(&services[0]);
    let mut b = kept(&late);
    a.sort();
    b.sort();
    assert_eq!(a, b, "the late service keeps the same samples");
    for s in services.iter().chain(std::iter::once(&late)) {
        assert_eq!(s.log_counters().dropped, 0, "no log entry dropped");
    }

    // The writer leaves; a late reader gets every sample once, as the writer's.
    let writer_guid = w.guid();
    drop(w);
    drop(wp);
    let rp = join(&net);
    let r = reader(&rp, TOPIC, Durability::Transient);
    wait_until(20, "the services matched", || {
        r.matched_publications().len() == 3
    });
    r.wait_for_historical_data(Duration::from_secs(20)).unwrap();
    let got = take_n(&r, 300);
    let mut values: Vec<u32> = got.iter().map(|s| s.data.as_ref().unwrap().value).collect();
    values.sort_unstable();
    assert_eq!(values, (0..300).collect::<Vec<_>>(), "every sample once");
    assert!(got
        .iter()
        .all(|s| s.info.publication_handle == writer_guid.to_bytes()));
}
