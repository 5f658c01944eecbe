//! Request/offered QoS through the node: a reader on one side of it matches the writers on the
//! other as it would without the node (DEADLINE, LIVELINESS, OWNERSHIP, DESTINATION_ORDER), and
//! EXCLUSIVE ownership among a host's writers is decided before the samples leave it. In one
//! network namespace (`scripts/netns-run cargo test -p tessera-node -- --include-ignored`).

mod support;

use std::time::Duration;

use support::{participant, reader_in, require_netns, wait_until, writer};
use tessera::qos::{
    DataReaderQos, DataWriterQos, Deadline, DestinationOrder, History, Liveliness, LivelinessKind,
    Ownership, OwnershipStrength, Reliability,
};
use tessera::{DataReader, TopicType};
use tessera_node::{Node, NodeConfig};

#[derive(TopicType, Debug, Clone, PartialEq)]
struct Track {
    #[key]
    id: u32,
    from: u32,
    seq: u32,
}

/// A writer offering more than the reader below asks: a 100 ms deadline, manual-by-topic
/// liveliness (lease 2 s), EXCLUSIVE ownership with `strength`, source-timestamp order.
fn demanding_writer_qos(strength: i32) -> DataWriterQos {
    DataWriterQos {
        reliability: Reliability::reliable(Duration::from_secs(5)),
        history: History::KeepAll,
        deadline: Deadline {
            period: Duration::from_millis(100),
        },
        liveliness: Liveliness {
            kind: LivelinessKind::ManualByTopic,
            lease_duration: Duration::from_secs(2),
        },
        ownership: Ownership::Exclusive,
        ownership_strength: OwnershipStrength(strength),
        destination_order: DestinationOrder::BySourceTimestamp,
        ..Default::default()
    }
}

/// [`demanding_writer_qos`] with a 600 ms lease: liveliness tests see it lost within seconds.
fn short_lease_writer_qos() -> DataWriterQos {
    let mut qos = demanding_writer_qos(3);
    qos.liveliness.lease_duration = Duration::from_millis(600);
    qos
}

/// A reader asking for a 1 s deadline, manual-by-participant liveliness within 5 s, EXCLUSIVE
/// ownership and source-timestamp order: each writer above satisfies it directly.
fn demanding_reader(p: &tessera::DomainParticipant, topic: &str) -> DataReader<Track> {
    let qos = DataReaderQos {
        reliability: Reliability::reliable(Duration::from_secs(5)),
        history: History::KeepAll,
        deadline: Deadline {
            period: Duration::from_secs(1),
        },
        liveliness: Liveliness {
            kind: LivelinessKind::ManualByParticipant,
            lease_duration: Duration::from_secs(5),
        },
        ownership: Ownership::Exclusive,
        destination_order: DestinationOrder::BySourceTimestamp,
        ..Default::default()
    };
    reader_in(p, topic, Default::default(), qos)
}

/// Writes `n` samples of instance 1 from `from`, 20 ms apart (within the deadline).
fn write_track(w: &tessera::DataWriter<Track>, from: u32, n: u32) {
    for seq in 0..n {
        w.write(&Track { id: 1, from, seq }).unwrap();
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Takes until `n` samples arrived; returns their `from` fields.
fn take_from(r: &DataReader<Track>, n: usize) -> Vec<u32> {
    let mut got = Vec::new();
    wait_until(15, "samples through the node", || {
        got.extend(
            r.take(64)
                .unwrap()
                .into_iter()
                .filter_map(|s| s.data.map(|d| d.from)),
        );
        got.len() >= n
    });
    got
}

/// A demanding writer on one side of the node (`writer_on_host`: the host's, else the
/// network's) and a demanding reader on the other: they match and the samples arrive.
fn matches_as_directly(domain: u32, topic: &str, writer_on_host: bool) {
    let _node = Node::start(NodeConfig::new(domain)).unwrap();
    let (host, remote) = (participant(domain, true), participant(domain, false));
    let (wp, rp) = if writer_on_host {
        (&host, &remote)
    } else {
        (&remote, &host)
    };
    let w = writer::<Track>(wp, topic, demanding_writer_qos(3));
    let r = demanding_reader(rp, topic);
    wait_until(15, "the reader matched through the node", || {
        r.subscription_matched_status().current_count >= 1
            && w.publication_matched_status().current_count >= 1
    });
    std::thread::sleep(Duration::from_millis(200));
    write_track(&w, 7, 10);
    assert_eq!(take_from(&r, 10), vec![7; 10]);
    assert_eq!(r.requested_incompatible_qos_status().total_count, 0);
}

#[test]
#[ignore = "needs a network namespace: scripts/netns-run (scripts/test runs it)"]
fn a_remote_reader_matches_a_host_writer_as_directly() {
    require_netns();
    matches_as_directly(94, "Out", true);
}

#[test]
#[ignore = "needs a network namespace: scripts/netns-run (scripts/test runs it)"]
fn a_host_reader_matches_a_remote_writer_as_directly() {
    require_netns();
    matches_as_directly(95, "In", false);
}

#[test]
#[ignore = "needs a network namespace: scripts/netns-run (scripts/test runs it)"]
fn only_the_strongest_host_writer_of_an_exclusive_instance_reaches_the_network() {
    require_netns();
    let domain = 96;
    let _node = Node::start(NodeConfig::new(domain)).unwrap();
    let (a, b) = (participant(domain, true), participant(domain, true));
    let weak = writer::<Track>(&a, "Owned", demanding_writer_qos(1));
    let strong = writer::<Track>(&b, "Owned", demanding_writer_qos(9));
    let remote = participant(domain, false);
    let r = demanding_reader(&remote, "Owned");
    wait_until(15, "the remote reader matched through the node", || {
        r.subscription_matched_status().current_count >= 1
    });
    std::thread::sleep(Duration::from_millis(300));
    // Both write the same instance, interleaved. The weak writer's first sample may pass (it
    // owns the instance until the strong one writes it, directly as well); once the strong
    // one wrote, the remote reader must see the strong one's only.
    for seq in 0..10 {
        weak.write(&Track {
            id: 1,
            from: 1,
            seq,
        })
        .unwrap();
        strong
            .write(&Track {
                id: 1,
                from: 9,
                seq,
            })
            .unwrap();
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut got = take_from(&r, 10);
    std::thread::sleep(Duration::from_millis(300));
    got.extend(
        r.take(64)
            .unwrap()
            .into_iter()
            .filter_map(|s| s.data.map(|d| d.from)),
    );
    let first_strong = got
        .iter()
        .position(|&f| f == 9)
        .expect("the strong writer's samples");
    assert!(
        got[first_strong..].iter().all(|&f| f == 9) && got.len() - first_strong == 10,
        "the weak writer's samples crossed the node once the strong one owned: {got:?}"
    );
}

#[test]
#[ignore = "needs a network namespace: scripts/netns-run (scripts/test runs it)"]
fn a_manual_writer_behind_the_node_that_only_asserts_stays_alive_beyond_it() {
    require_netns();
    let domain = 97;
    let _node = Node::start(NodeConfig::new(domain)).unwrap();
    let app = participant(domain, true);
    let w = writer::<Track>(&app, "Alive", short_lease_writer_qos());
    let remote = participant(domain, false);
    let r = demanding_reader(&remote, "Alive");
    wait_until(15, "the remote reader matched through the node", || {
        r.subscription_matched_status().current_count >= 1
    });
    w.write(&Track {
        id: 1,
        from: 7,
        seq: 0,
    })
    .unwrap();
    wait_until(5, "the writer alive beyond the node", || {
        r.liveliness_changed_status().alive_count == 1
    });
    // Three leases of asserting without writing: still alive beyond the node.
    for _ in 0..18 {
        w.assert_liveliness().unwrap();
        std::thread::sleep(Duration::from_millis(100));
    }
    let s = r.liveliness_changed_status();
    assert_eq!((s.alive_count, s.not_alive_count), (1, 0), "{s:?}");
    // Silent for three leases: lost beyond the node too.
    wait_until(5, "the writer's liveliness lost beyond the node", || {
        r.liveliness_changed_status().not_alive_count == 1
    });
}

#[test]
#[ignore = "needs a network namespace: scripts/netns-run (scripts/test runs it)"]
fn each_manual_writer_behind_the_node_keeps_its_own_liveliness_beyond_it() {
    require_netns();
    let domain = 89;
    let _node = Node::start(NodeConfig::new(domain)).unwrap();
    let app = participant(domain, true);
    let talker = writer::<Track>(&app, "Pair", short_lease_writer_qos());
    let quitter = writer::<Track>(&app, "Pair", short_lease_writer_qos());
    let remote = participant(domain, false);
    let r = demanding_reader(&remote, "Pair");
    wait_until(15, "the remote reader matched both writers", || {
        r.subscription_matched_status().current_count >= 2
    });
    for (i, w) in [&talker, &quitter].into_iter().enumerate() {
        w.write(&Track {
            id: i as u32,
            from: i as u32,
            seq: 0,
        })
        .unwrap();
    }
    wait_until(5, "both writers alive beyond the node", || {
        r.liveliness_changed_status().alive_count == 2
    });
    // One keeps asserting, the other goes silent: only the silent one is lost beyond the node
    // (one stand-in per writer, each asserted while its own writer is alive).
    let assert_for = |w: &tessera::DataWriter<Track>, rounds: u32| {
        for _ in 0..rounds {
            w.assert_liveliness().unwrap();
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    assert_for(&talker, 30);
    let s = r.liveliness_changed_status();
    assert_eq!((s.alive_count, s.not_alive_count), (1, 1), "{s:?}");
    // The silent one asserts again: alive beyond the node again.
    quitter.assert_liveliness().unwrap();
    let mut revived = false;
    for _ in 0..30 {
        talker.assert_liveliness().unwrap();
        quitter.assert_liveliness().unwrap();
        std::thread::sleep(Duration::from_millis(100));
        let s = r.liveliness_changed_status();
        if (s.alive_count, s.not_alive_count) == (2, 0) {
            revived = true;
            break;
        }
    }
    assert!(revived, "{:?}", r.liveliness_changed_status());
}

#[test]
#[ignore = "needs a network namespace: scripts/netns-run (scripts/test runs it)"]
fn default_writers_reach_best_effort_readers_through_the_node_both_ways() {
    require_netns();
    let domain = 98;
    let _node = Node::start(NodeConfig::new(domain)).unwrap();
    let (host, remote) = (participant(domain, true), participant(domain, false));
    // What users write: a default writer (RELIABLE) and a reader asking BEST_EFFORT.
    let best_effort = DataReaderQos {
        reliability: Reliability::best_effort(),
        history: History::KeepLast(100),
        ..Default::default()
    };
    let w_out = writer::<Track>(&host, "AsymOut", DataWriterQos::default());
    let r_out: DataReader<Track> =
        reader_in(&remote, "AsymOut", Default::default(), best_effort.clone());
    let w_in = writer::<Track>(&remote, "AsymIn", DataWriterQos::default());
    let r_in: DataReader<Track> = reader_in(&host, "AsymIn", Default::default(), best_effort);
    // Matched on both sides of the node: the readers to the node's writers, the writers to
    // its proxy readers (a best-effort reader gets nothing written before).
    wait_until(15, "both flows matched through the node", || {
        r_out.subscription_matched_status().current_count >= 1
            && r_in.subscription_matched_status().current_count >= 1
            && w_out.publication_matched_status().current_count >= 1
            && w_in.publication_matched_status().current_count >= 1
    });
    std::thread::sleep(Duration::from_millis(300));
    write_track(&w_out, 1, 10);
    write_track(&w_in, 2, 10);
    assert_eq!(take_from(&r_out, 10), vec![1; 10]);
    assert_eq!(take_from(&r_in, 10), vec![2; 10]);
}
