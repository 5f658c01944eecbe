//! The node service end to end in one network namespace: two applications attached to the node,
//! one ordinary participant beside them standing for another host. Needs a network namespace
//! (`scripts/netns-run cargo test -p tessera-node -- --include-ignored`).

mod support;

use std::time::Duration;

use support::{
    participant, reader, reader_in, reader_qos, require_netns, wait_until, writer, writer_qos,
};
use tessera::history::InstanceState;
use tessera::{DataReader, DomainParticipant, TopicType};
use tessera_node::{Direction, Node, NodeConfig};

#[derive(TopicType, Debug, Clone, PartialEq)]
struct Keyed {
    #[key]
    id: u32,
    seq: u32,
}

/// Takes from `r` until `n` samples with data arrived; returns their seqs (instance by instance,
/// as `take` hands them out, after checking that each instance's come in order) and the
/// instance states seen.
fn take_n(r: &DataReader<Keyed>, n: usize) -> (Vec<u32>, Vec<InstanceState>) {
    let (mut seqs, states) = take_raw(r, n);
    let mut last = std::collections::HashMap::new();
    for (id, seq) in &seqs {
        let prev = last.insert(*id, *seq);
        assert!(
            prev.is_none_or(|p| p < *seq),
            "instance {id} out of order: {seqs:?}"
        );
    }
    seqs.sort_by_key(|&(_, seq)| seq);
    (seqs.into_iter().map(|(_, s)| s).collect(), states)
}

fn take_raw(r: &DataReader<Keyed>, n: usize) -> (Vec<(u32, u32)>, Vec<InstanceState>) {
    let mut seqs = Vec::new();
    let mut states = Vec::new();
    wait_until(15, "samples", || {
        for s in r.take(64).unwrap() {
            match s.data {
                Some(k) => seqs.push((k.id, k.seq)),
                None => states.push(s.info.instance_state),
            }
        }
        seqs.len() >= n
    });
    (seqs, states)
}

#[test]
#[ignore = "needs a network namespace: scripts/netns-run (scripts/test runs it)"]
fn an_application_without_a_node_starts_decentralized() {
    require_netns();
    let p = participant(71, true);
    assert!(!p.attached_to_node());
}

#[test]
#[ignore = "needs a network namespace: scripts/netns-run (scripts/test runs it)"]
fn data_flows_both_ways_through_the_node() {
    require_netns();
    let domain = 72;
    let node = Node::start(NodeConfig::new(domain)).unwrap();
    let a = participant(domain, true);
    let b = participant(domain, true);
    assert!(a.attached_to_node() && b.attached_to_node());
    let remote = participant(domain, false);
    assert!(!remote.attached_to_node());

    // Out: app A writes, the remote host reads (and app B, directly over shared memory).
    let wa = writer::<Keyed>(&a, "Out", writer_qos());
    let r_remote = reader::<Keyed>(&remote, "Out");
    let r_b = reader::<Keyed>(&b, "Out");
    // In: the remote host writes, app B reads.
    let w_remote = writer::<Keyed>(&remote, "In", writer_qos());
    let rb_in = reader::<Keyed>(&b, "In");
    wait_until(20, "the node's routes", || {
        let routes = node.routes();
        routes
            .iter()
            .any(|r| r.topic == "Out" && r.direction == Direction::ToNetwork)
            && routes
                .iter()
                .any(|r| r.topic == "In" && r.direction == Direction::FromNetwork)
    });
    wait_until(10, "matches through the node", || {
        wa.publication_matched_status().current_count >= 2
            && w_remote.publication_matched_status().current_count >= 1
    });
    // The applications stay off the network: the remote side sees only the node.
    let seen: Vec<_> = remote
        .discovered_participants()
        .into_iter()
        .map(|p| p.guid)
        .collect();
    assert!(seen.contains(&node.network().guid()));
    assert!(!seen.contains(&a.guid()) && !seen.contains(&b.guid()));

    for seq in 0..50 {
        wa.write(&Keyed { id: seq % 3, seq }).unwrap();
        w_remote.write(&Keyed { id: 7, seq }).unwrap();
    }
    let (got, _) = take_n(&r_remote, 50);
    assert_eq!(
        got,
        (0..50).collect::<Vec<_>>(),
        "A -> remote, in order, once"
    );
    let (got, _) = take_n(&r_b, 50);
    assert_eq!(got, (0..50).collect::<Vec<_>>(), "A -> B locally, once");
    let (got, _) = take_n(&rb_in, 50);
    assert_eq!(
        got,
        (0..50).collect::<Vec<_>>(),
        "remote -> B, in order, once"
    );

    // Dispose crosses the node too.
    wa.dispose(&Keyed { id: 1, seq: 0 }).unwrap();
    wait_until(10, "the dispose", || {
        r_remote
            .take(16)
            .unwrap()
            .iter()
            .any(|s| s.info.instance_state == InstanceState::NotAliveDisposed)
    });
    // Nothing came back: B got A's samples once (no echo through the node).
    std::thread::sleep(Duration::from_millis(300));
    assert!(r_b.take(64).unwrap().iter().all(|s| s.data.is_none()));
    let out = node
        .routes()
        .into_iter()
        .find(|r| r.topic == "Out" && r.direction == Direction::ToNetwork)
        .unwrap();
    assert_eq!(out.samples, 50);
    assert_eq!(out.lifecycle, 1);
}

#[test]
#[ignore = "needs a network namespace: scripts/netns-run (scripts/test runs it)"]
fn routes_follow_partitions_and_close_when_the_applications_leave() {
    require_netns();
    let domain = 73;
    let node = Node::start(NodeConfig::new(domain)).unwrap();
    let a = participant(domain, true);
    let remote = participant(domain, false);
    let in_p = |p: &DomainParticipant, part: &str| {
        let t = p
            .create_topic::<Keyed>("Parted", Default::default())
            .unwrap();
        let pubq = tessera::qos::PublisherQos {
            partition: tessera::qos::Partition::new([part]),
            ..Default::default()
        };
        let subq = tessera::qos::SubscriberQos {
            partition: tessera::qos::Partition::new([part]),
            ..Default::default()
        };
        (t, pubq, subq)
    };
    let (ta, pubq, _) = in_p(&a, "p1");
    let w = a
        .create_publisher(pubq)
        .unwrap()
        .create_datawriter(&ta, writer_qos())
        .unwrap();
    let (_, _, subq) = in_p(&remote, "p1");
    let r = reader_in::<Keyed>(&remote, "Parted", subq, reader_qos());
    // A reader in another partition stays unmatched.
    let (_, _, other) = in_p(&remote, "p2");
    let r_other = reader_in::<Keyed>(&remote, "Parted", other, Default::default());
    wait_until(20, "the partitioned route", || {
        w.publication_matched_status().current_count >= 1
            && r.subscription_matched_status().current_count >= 1
    });
    for seq in 0..10 {
        w.write(&Keyed { id: 1, seq }).unwrap();
    }
    let (got, _) = take_n(&r, 10);
    assert_eq!(got, (0..10).collect::<Vec<_>>());
    assert_eq!(r_other.subscription_matched_status().current_count, 0);
    let key = node.routes();
    assert_eq!(key.len(), 1, "{key:?}");

    // The application's writer goes: its route closes, and the remote reader loses the node's
    // proxy writer.
    drop(w);
    wait_until(10, "the route to close", || node.routes().is_empty());
    wait_until(10, "the proxy writer to go", || {
        r.subscription_matched_status().current_count == 0
    });
}

#[test]
#[ignore = "needs a network namespace: scripts/netns-run (scripts/test runs it)"]
fn samples_with_a_latency_budget_share_datagrams() {
    require_netns();
    let domain = 76;
    let node = Node::start(NodeConfig::new(domain)).unwrap();
    let apps = [participant(domain, true), participant(domain, true)];
    let remote = participant(domain, false);
    let qos = tessera::qos::DataWriterQos {
        latency_budget: tessera::qos::LatencyBudget {
            duration: Duration::from_millis(20),
        },
        ..writer_qos()
    };
    let writers: Vec<_> = apps
        .iter()
        .map(|a| writer::<Keyed>(a, "Bundled", qos.clone()))
        .collect();
    // A reader accepts the applications' budget (it would not match a writer offering more).
    let rq = tessera::qos::DataReaderQos {
        latency_budget: qos.latency_budget,
        ..reader_qos()
    };
    let r = reader_in::<Keyed>(&remote, "Bundled", Default::default(), rq);
    wait_until(20, "matches through the node", || {
        writers
            .iter()
            .all(|w| w.publication_matched_status().current_count >= 1)
            && r.subscription_matched_status().current_count >= 1
    });
    let sent = || -> u64 {
        node.network()
            .transport_traffic()
            .iter()
            .map(|t| t.datagrams_sent)
            .sum()
    };
    let before = sent();
    // Two applications, a sample each every 0.5 ms: the node's queue empties between them.
    let n = 300u32;
    for seq in 0..n {
        for (id, w) in writers.iter().enumerate() {
            w.write(&Keyed { id: id as u32, seq }).unwrap();
        }
        std::thread::sleep(Duration::from_micros(500));
    }
    let mut got = 0;
    wait_until(15, "every sample", || {
        got += r
            .take(256)
            .unwrap()
            .iter()
            .filter(|s| s.data.is_some())
            .count();
        got >= 2 * n as usize
    });
    let datagrams = sent() - before;
    eprintln!("{} samples in {datagrams} datagrams", 2 * n);
    // Flushed whenever the node's queue emptied they took about 95; batched within the
    // budget about 15.
    assert!(
        datagrams * 10 <= u64::from(2 * n),
        "{datagrams} datagrams for {} samples",
        2 * n
    );
}

/// A volatile topic with readers only on the node's own host costs the node nothing: its proxy
/// reader comes when a reader beyond the node appears, so until then the applications' samples
/// go only to each other (no copy to the node), and after it they are forwarded.
#[test]
#[ignore = "needs a network namespace: scripts/netns-run (scripts/test runs it)"]
fn a_topic_is_read_by_the_node_only_once_the_network_wants_it() {
    require_netns();
    let domain = 76;
    let node = Node::start(NodeConfig::new(domain)).unwrap();
    let a = participant(domain, true);
    let b = participant(domain, true);
    let wa = writer::<Keyed>(&a, "Local", writer_qos());
    let r_b = reader::<Keyed>(&b, "Local");
    wait_until(20, "the node's route", || {
        node.routes()
            .iter()
            .any(|r| r.topic == "Local" && r.direction == Direction::ToNetwork)
    });
    wait_until(10, "the local match", || {
        wa.publication_matched_status().current_count >= 1
    });
    for seq in 0..20 {
        wa.write(&Keyed { id: 1, seq }).unwrap();
    }
    let (got, _) = take_n(&r_b, 20);
    assert_eq!(got, (0..20).collect::<Vec<_>>());
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        wa.publication_matched_status().current_count,
        1,
        "the node read a topic nobody beyond it wants"
    );
    let forwarded = |node: &Node| {
        node.routes()
            .into_iter()
            .find(|r| r.topic == "Local" && r.direction == Direction::ToNetwork)
            .map_or(0, |r| r.samples)
    };
    assert_eq!(forwarded(&node), 0);

    // Another host's reader appears: the node now reads and forwards.
    let remote = participant(domain, false);
    let r_remote = reader::<Keyed>(&remote, "Local");
    wait_until(10, "the node's proxy reader", || {
        wa.publication_matched_status().current_count >= 2
    });
    for seq in 20..30 {
        wa.write(&Keyed { id: 1, seq }).unwrap();
    }
    let (got, _) = take_n(&r_remote, 10);
    assert_eq!(got, (20..30).collect::<Vec<_>>());
    assert_eq!(forwarded(&node), 10);
}
