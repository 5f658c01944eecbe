//! Zero-copy loans behind the node: an application that loans samples to a reader of its host
//! and to the node's proxy reader (which forwards bytes to the network). The proxy reader
//! cannot resolve a loan reference, so the writer must serialize for it; a reference forwarded
//! to another host would be undecodable there. In one network namespace
//! (`scripts/netns-run cargo test -p tessera-node -- --include-ignored`).

mod support;

use support::{participant, reader, require_netns, wait_until, writer, writer_qos};
use tessera::{DataReader, TopicType};
use tessera_node::{Node, NodeConfig};

/// A keyless plain sample that writers can lend.
#[derive(TopicType, Clone, Copy, Debug, PartialEq)]
#[repr(C)]
struct Reading {
    seq: u32,
    values: [u32; 7],
}

fn take_all(r: &DataReader<Reading>, n: u32, what: &str) -> Vec<Reading> {
    let mut got = Vec::new();
    wait_until(20, what, || {
        got.extend(r.take(64).unwrap().into_iter().filter_map(|s| s.data));
        got.len() as u32 >= n
    });
    got
}

#[test]
#[ignore = "needs a network namespace: scripts/netns-run (scripts/test runs it)"]
fn loaned_samples_reach_readers_beyond_the_node_as_values() {
    require_netns();
    let domain = 71;
    let _node = Node::start(NodeConfig::new(domain)).unwrap();
    let (app, neighbour) = (participant(domain, true), participant(domain, true));
    let remote = participant(domain, false);
    let beyond = reader::<Reading>(&remote, "Loaned");
    let local = reader::<Reading>(&neighbour, "Loaned");
    let w = writer::<Reading>(&app, "Loaned", writer_qos());
    wait_until(15, "the remote reader sees the writer", || {
        beyond.matched_publications().len() == 1
    });
    wait_until(10, "the neighbour and the node's proxy reader", || {
        w.publication_matched_status().current_count >= 2
            && local.subscription_matched_status().current_count == 1
    });
    let n = 200;
    for seq in 0..n {
        let mut loan = w.loan().unwrap();
        loan.seq = seq;
        loan.values = [seq * 3; 7];
        w.write_loan(loan).unwrap();
    }
    for (r, what) in [
        (&beyond, "200 samples beyond the node"),
        (&local, "200 samples on the host"),
    ] {
        let got = take_all(r, n, what);
        let seqs: Vec<u32> = got.iter().map(|s| s.seq).collect();
        assert_eq!(seqs, (0..n).collect::<Vec<_>>(), "{what}");
        assert!(got.iter().all(|s| s.values == [s.seq * 3; 7]), "{what}");
        assert_eq!(r.undecodable_samples(), 0, "{what}");
    }
}
