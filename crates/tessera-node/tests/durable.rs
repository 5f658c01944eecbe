//! Durable data through the node: TRANSIENT endpoints on either side of it, the durability
//! service the node hosts, and a network service's replays of what left the host. In one
//! network namespace (`scripts/netns-run cargo test -p tessera-node -- --include-ignored`).

mod support;

use std::time::Duration;

use support::{participant, reader_in, require_netns, wait_until, writer};
use tessera::qos::{
    DataReaderQos, DataWriterQos, Durability, DurabilityService, History, Reliability,
    WriterDataLifecycle,
};
use tessera::{DataReader, DataWriter, DomainParticipant, TopicType};
use tessera_durability::ServiceConfig;
use tessera_node::{Direction, Node, NodeConfig};

#[derive(TopicType, Debug, Clone, PartialEq)]
struct Reading {
    #[key]
    sensor: u32,
    value: u32,
}

fn transient_writer_qos() -> DataWriterQos {
    DataWriterQos {
        reliability: Reliability::reliable(Duration::from_secs(10)),
        durability: Durability::Transient,
        durability_service: DurabilityService {
            history: History::KeepLast(10),
            ..Default::default()
        },
        history: History::KeepLast(10),
        // Leaving does not dispose the instances: disposed instances without a writer are
        // cleaned up by the service (service_cleanup_delay 0), as the specification says.
        writer_data_lifecycle: WriterDataLifecycle {
            autodispose_unregistered_instances: false,
        },
        ..Default::default()
    }
}

fn transient_reader(p: &DomainParticipant, topic: &str) -> DataReader<Reading> {
    let qos = DataReaderQos {
        reliability: Reliability::reliable(Duration::from_secs(10)),
        durability: Durability::Transient,
        history: History::KeepAll,
        ..Default::default()
    };
    reader_in(p, topic, Default::default(), qos)
}

/// Takes from `r` for `settle` after `n` samples arrived (so that duplicates would show);
/// returns every (sensor, value) and the writer handles seen.
fn take_settled(r: &DataReader<Reading>, n: usize, what: &str) -> (Vec<(u32, u32)>, Vec<[u8; 16]>) {
    let mut got = Vec::new();
    let mut writers = Vec::new();
    let mut take = |got: &mut Vec<(u32, u32)>| {
        for s in r.take(64).unwrap() {
            if let Some(d) = s.data {
                got.push((d.sensor, d.value));
                if !writers.contains(&s.info.publication_handle) {
                    writers.push(s.info.publication_handle);
                }
            }
        }
    };
    wait_until(20, what, || {
        take(&mut got);
        got.len() >= n
    });
    std::thread::sleep(Duration::from_millis(700));
    take(&mut got);
    got.sort();
    (got, writers)
}

/// Ten samples, values 0..10, of two instances (sensor 0 the even values, 1 the odd).
fn write_ten(w: &DataWriter<Reading>) {
    for i in 0..10 {
        w.write(&Reading {
            sensor: i % 2,
            value: i,
        })
        .unwrap();
    }
}

/// What [`write_ten`] wrote, sorted.
fn expected() -> Vec<(u32, u32)> {
    let mut v: Vec<_> = (0..10).map(|i| (i % 2, i)).collect();
    v.sort();
    v
}

#[test]
#[ignore = "needs a network namespace: scripts/netns-run (scripts/test runs it)"]
fn a_transient_reader_behind_the_node_gets_a_remote_transient_writers_history() {
    require_netns();
    let domain = 91;
    let _node = Node::start(NodeConfig::new(domain)).unwrap();
    let remote = participant(domain, false);
    let w = writer::<Reading>(&remote, "RemoteState", transient_writer_qos());
    write_ten(&w);
    // Joins after the samples were written: only the writer's history has them, and the node
    // must both ask for it and offer a TRANSIENT reader what it asks.
    let app = participant(domain, true);
    assert!(app.attached_to_node());
    let r = transient_reader(&app, "RemoteState");
    let (got, _) = take_settled(&r, 10, "the remote writer's history at the host reader");
    assert_eq!(got, expected());
}

#[test]
#[ignore = "needs a network namespace: scripts/netns-run (scripts/test runs it)"]
fn the_nodes_durability_service_keeps_the_hosts_data_past_its_writer() {
    require_netns();
    let domain = 92;
    let mut config = NodeConfig::new(domain);
    config.durability = Some(ServiceConfig::default());
    let node = Node::start(config).unwrap();
    assert!(node.durability().is_some());
    let writer_guid;
    {
        let app = participant(domain, true);
        let w = writer::<Reading>(&app, "HostState", transient_writer_qos());
        writer_guid = w.guid().to_bytes();
        // The node's service matches the writer before the samples are written.
        wait_until(10, "the node's durability service", || {
            w.publication_matched_status().current_count >= 1
        });
        write_ten(&w);
        w.wait_for_acknowledgments(Duration::from_secs(10)).unwrap();
        wait_until(10, "the service to keep the samples", || {
            node.durability()
                .unwrap()
                .stats()
                .iter()
                .any(|(t, s)| t == "HostState" && s.samples == 10)
        });
    } // The writing application leaves.

    // A late joiner on the host: the service replays, under the original writer's name.
    let late = participant(domain, true);
    let r = transient_reader(&late, "HostState");
    r.wait_for_historical_data(Duration::from_secs(10)).unwrap();
    let (got, writers) = take_settled(&r, 10, "the node service's replay at the host reader");
    assert_eq!(got, expected());
    assert_eq!(
        writers,
        vec![writer_guid],
        "delivered as the original writer's"
    );

    // A late joiner on another host: the node's network writer still stands for the topic
    // (the service's replay writer keeps the route open) and kept its history.
    let remote = participant(domain, false);
    let r = transient_reader(&remote, "HostState");
    let (got, _) = take_settled(&r, 10, "the route's history at the remote reader");
    assert_eq!(got, expected());
}

#[test]
#[ignore = "needs a network namespace: scripts/netns-run (scripts/test runs it)"]
fn a_network_services_replay_of_the_hosts_own_samples_is_not_brought_back() {
    require_netns();
    let domain = 93;
    let node = Node::start(NodeConfig::new(domain)).unwrap();
    // A durability service on the network (another host's, say).
    let service = tessera_durability::DurabilityService::start(
        participant(domain, false),
        ServiceConfig::default(),
    )
    .unwrap();
    let app = participant(domain, true);
    let w = writer::<Reading>(&app, "Echo", transient_writer_qos());
    wait_until(15, "the route to the network service", || {
        service.stats().iter().any(|(t, _)| t == "Echo")
    });
    wait_until(10, "the node's network writer matched", || {
        w.publication_matched_status().current_count >= 1
    });
    std::thread::sleep(Duration::from_millis(300));
    write_ten(&w);
    wait_until(15, "the network service to keep the samples", || {
        service
            .stats()
            .iter()
            .any(|(t, s)| t == "Echo" && s.samples == 10)
    });
    // A late joiner on the host gets the writer's history directly; the network service
    // replays the same samples under the node's name, and the node must not bring them back.
    let late = participant(domain, true);
    let r = transient_reader(&late, "Echo");
    let (got, writers) = take_settled(&r, 10, "the writer's history at the late host reader");
    assert_eq!(got, expected(), "each sample once");
    assert_eq!(writers, vec![w.guid().to_bytes()]);
    wait_until(10, "the replays seen and dropped", || {
        node.routes()
            .iter()
            .any(|r| r.topic == "Echo" && r.direction == Direction::FromNetwork && r.own >= 10)
    });
}
