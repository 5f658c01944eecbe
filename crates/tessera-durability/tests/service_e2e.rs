//! The durability service end to end over the in-process network: a TRANSIENT writer's data
//! outlives it; PERSISTENT data outlives the service; duplicates from the writer and the
//! service (or two services) are delivered once; disposed instances are cleaned up.

use std::time::Duration;
use tessera::qos::Durability;
use tessera::transport::InProcessNetwork;
use tessera::DataWriter;
use tessera_durability::{DurabilityService as Service, ServiceConfig};

mod common;
use common::{join, reader, take_n, wait_until, writer, Reading};

fn service(net: &InProcessNetwork, store: Option<&std::path::Path>) -> Service {
    Service::start(
        join(net),
        ServiceConfig {
            store_dir: store.map(|p| p.to_path_buf()),
            period: Duration::from_millis(10),
            ..ServiceConfig::default()
        },
    )
    .expect("service")
}

fn stored(s: &Service, topic: &str) -> usize {
    s.stats()
        .iter()
        .find(|(t, _)| t == topic)
        .map_or(0, |(_, st)| st.samples)
}

/// Once the service matched: values 0..10 to sensor 1 and 100..110 to sensor 2, interleaved,
/// acknowledged.
fn write_two_sensors(w: &DataWriter<Reading>) {
    wait_until(10, "the service follows the topic", || {
        !w.matched_subscriptions().is_empty()
    });
    for value in 0..10 {
        w.write(&Reading { sensor: 1, value }).unwrap();
        w.write(&Reading {
            sensor: 2,
            value: 100 + value,
        })
        .unwrap();
    }
    w.wait_for_acknowledgments(Duration::from_secs(10)).unwrap();
}

#[test]
fn transient_data_outlives_its_writer() {
    let net = InProcessNetwork::new();
    let svc = service(&net, None);
    let wp = join(&net);
    let w = writer(&wp, "Transient", Durability::Transient, 5, 5);
    write_two_sensors(&w);
    let writer_guid = w.guid();
    drop(w);
    drop(wp);
    let rp = join(&net);
    let r = reader(&rp, "Transient", Durability::Transient);
    wait_until(10, "the service matched", || {
        !r.matched_publications().is_empty()
    });
    r.wait_for_historical_data(Duration::from_secs(10)).unwrap();
    let got = take_n(&r, 10);
    let of = |sensor: u32| -> Vec<u32> {
        got.iter()
            .filter_map(|s| s.data.as_ref())
            .filter(|d| d.sensor == sensor)
            .map(|d| d.value)
            .collect()
    };
    assert_eq!(of(1), vec![5, 6, 7, 8, 9], "depth 5, in order, once");
    assert_eq!(of(2), vec![105, 106, 107, 108, 109]);
    for s in &got {
        assert_eq!(
            s.info.publication_handle,
            writer_guid.to_bytes(),
            "the original writer"
        );
    }
    assert_eq!(stored(&svc, "Transient"), 10);
}

#[test]
fn writer_and_service_both_answering_deliver_each_sample_once() {
    let net = InProcessNetwork::new();
    let svc = service(&net, None);
    let wp = join(&net);
    let w = writer(&wp, "Both", Durability::Transient, 20, 20);
    wait_until(10, "the service follows the topic", || {
        !w.matched_subscriptions().is_empty()
    });
    for value in 0..20 {
        w.write(&Reading { sensor: 1, value }).unwrap();
    }
    w.wait_for_acknowledgments(Duration::from_secs(10)).unwrap();
    wait_until(10, "stored", || stored(&svc, "Both") == 20);
    let rp = join(&net);
    let r = reader(&rp, "Both", Durability::Transient);
    wait_until(10, "both matched", || r.matched_publications().len() == 2);
    r.wait_for_historical_data(Duration::from_secs(10)).unwrap();
    let got = take_n(&r, 20);
    let mut values: Vec<u32> = got
        .iter()
        .filter_map(|s| s.data.as_ref().map(|d| d.value))
        .collect();
    values.sort();
    assert_eq!(values, (0..20).collect::<Vec<_>>());
    assert_eq!(
        r.duplicates_dropped(),
        20,
        "each sample came twice, delivered once"
    );
}

#[test]
fn two_services_deliver_each_sample_once() {
    let net = InProcessNetwork::new();
    let a = service(&net, None);
    let b = service(&net, None);
    let wp = join(&net);
    let w = writer(&wp, "Redundant", Durability::Transient, 10, 10);
    wait_until(10, "both services follow the topic", || {
        w.matched_subscriptions().len() == 2
    });
    for value in 0..10 {
        w.write(&Reading { sensor: 3, value }).unwrap();
    }
    w.wait_for_acknowledgments(Duration::from_secs(10)).unwrap();
    wait_until(10, "both stored", || {
        stored(&a, "Redundant") == 10 && stored(&b, "Redundant") == 10
    });
    drop(w);
    drop(wp);
    let rp = join(&net);
    let r = reader(&rp, "Redundant", Durability::Transient);
    wait_until(10, "both services matched", || {
        r.matched_publications().len() == 2
    });
    let got = take_n(&r, 10);
    let values: Vec<u32> = got
        .iter()
        .filter_map(|s| s.data.as_ref().map(|d| d.value))
        .collect();
    let mut sorted = values.clone();
    sorted.sort();
    assert_eq!(sorted, (0..10).collect::<Vec<_>>(), "{values:?}");
    assert_eq!(r.duplicates_dropped(), 10);
}

#[test]
fn a_service_that_learns_the_topic_from_another_service_keeps_as_deep() {
    let net = InProcessNetwork::new();
    let first = service(&net, None);
    let wp = join(&net);
    let w = writer(&wp, "Deep", Durability::Transient, 5, 5);
    write_two_sensors(&w);
    drop(w);
    drop(wp);
    // The second service sees only the first one's replay writer: it must keep depth 5 per
    // instance as well (the replay writer announces it), not the default 1.
    let second = service(&net, None);
    wait_until(
        10,
        "the second service holds both instances' samples",
        || stored(&second, "Deep") == 10,
    );
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(stored(&second, "Deep"), 10);
    assert_eq!(stored(&first, "Deep"), 10);
}

#[test]
fn persistent_data_outlives_the_service() {
    let dir = tempfile::tempdir().unwrap();
    let net = InProcessNetwork::new();
    let writer_guid;
    {
        let svc = service(&net, Some(dir.path()));
        let wp = join(&net);
        let w = writer(&wp, "Persistent", Durability::Persistent, 3, 3);
        wait_until(10, "the service follows the topic", || {
            !w.matched_subscriptions().is_empty()
        });
        for value in 0..6 {
            w.write(&Reading { sensor: 9, value }).unwrap();
        }
        // Acknowledged means on disk: the service commits before it acknowledges.
        w.wait_for_acknowledgments(Duration::from_secs(10)).unwrap();
        writer_guid = w.guid();
        drop(svc);
    }
    let svc = service(&net, Some(dir.path()));
    assert_eq!(stored(&svc, "Persistent"), 3, "reloaded");
    let rp = join(&net);
    let r = reader(&rp, "Persistent", Durability::Persistent);
    wait_until(10, "the service matched", || {
        !r.matched_publications().is_empty()
    });
    r.wait_for_historical_data(Duration::from_secs(10)).unwrap();
    let got = take_n(&r, 3);
    let values: Vec<u32> = got
        .iter()
        .filter_map(|s| s.data.as_ref().map(|d| d.value))
        .collect();
    assert_eq!(values, vec![3, 4, 5]);
    assert!(got
        .iter()
        .all(|s| s.info.publication_handle == writer_guid.to_bytes()));
}

#[test]
fn disposed_instances_without_writers_are_cleaned_up() {
    let net = InProcessNetwork::new();
    let svc = service(&net, None);
    let wp = join(&net);
    let w = writer(&wp, "Cleanup", Durability::Transient, 4, 4);
    wait_until(10, "the service follows the topic", || {
        !w.matched_subscriptions().is_empty()
    });
    w.write(&Reading {
        sensor: 1,
        value: 1,
    })
    .unwrap();
    w.write(&Reading {
        sensor: 2,
        value: 2,
    })
    .unwrap();
    w.dispose(&Reading {
        sensor: 1,
        value: 1,
    })
    .unwrap();
    w.wait_for_acknowledgments(Duration::from_secs(10)).unwrap();
    wait_until(10, "stored", || stored(&svc, "Cleanup") == 3);
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(
        stored(&svc, "Cleanup"),
        3,
        "a live writer keeps its disposed instance"
    );
    drop(w);
    drop(wp);
    // The writer's participant is gone when its lease runs out or it says goodbye.
    wait_until(20, "the disposed instance cleaned up", || {
        stored(&svc, "Cleanup") == 1
    });
    let rp = join(&net);
    let r = reader(&rp, "Cleanup", Durability::Transient);
    wait_until(10, "the service matched", || {
        !r.matched_publications().is_empty()
    });
    let got = take_n(&r, 1);
    let values: Vec<(u32, u32)> = got
        .iter()
        .filter_map(|s| s.data.as_ref().map(|d| (d.sensor, d.value)))
        .collect();
    assert_eq!(values, vec![(2, 2)], "the undisposed instance stays");
}
