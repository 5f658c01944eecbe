//! Writer identity through the node: every application writer behind a node is a writer of its
//! own beyond it (its own GUID under the node's participant, sequence numbers, ownership
//! strength, lifetime), not one writer per topic standing for all of them. Needs a network
//! namespace (`scripts/netns-run cargo test -p tessera-node -- --include-ignored`).

mod support;

use std::collections::BTreeMap;

use support::writer_qos;
use support::{participant, reader, reader_in, reader_qos, require_netns, wait_until, writer};
use tessera::history::InstanceState;
use tessera::qos::{Ownership, OwnershipStrength};
use tessera::rtps::discovery::RemoteEndpointInfo;
use tessera::TopicType;
use tessera_node::{Node, NodeConfig};

#[derive(TopicType, Debug, Clone, PartialEq)]
struct Tagged {
    #[key]
    id: u32,
    seq: u32,
}

#[test]
#[ignore = "needs a network namespace: scripts/netns-run (scripts/test runs it)"]
fn each_application_writer_is_a_writer_of_its_own_beyond_the_node() {
    require_netns();
    let domain = 99;
    let node = Node::start(NodeConfig::new(domain)).unwrap();
    let (a, b) = (participant(domain, true), participant(domain, true));
    let remote = participant(domain, false);
    let r = reader::<Tagged>(&remote, "Ident");
    let wa = writer::<Tagged>(&a, "Ident", writer_qos());
    let wb = writer::<Tagged>(&b, "Ident", writer_qos());
    wait_until(15, "two writers beyond the node", || {
        r.matched_publications().len() == 2
    });
    wait_until(10, "the route's proxy reader", || {
        wa.publication_matched_status().current_count >= 1
            && wb.publication_matched_status().current_count >= 1
    });
    for seq in 0..20 {
        wa.write(&Tagged { id: 0, seq }).unwrap();
        wb.write(&Tagged { id: 1, seq }).unwrap();
    }
    let mut by_writer: BTreeMap<[u8; 16], Vec<(u32, u32)>> = BTreeMap::new();
    let mut n = 0;
    wait_until(15, "40 samples", || {
        for s in r.take(64).unwrap() {
            if let Some(d) = s.data {
                by_writer
                    .entry(s.info.publication_handle)
                    .or_default()
                    .push((d.id, d.seq));
                n += 1;
            }
        }
        n >= 40
    });
    assert_eq!(by_writer.len(), 2, "one writer per application writer");
    let net_prefix = node.network().guid().prefix.0;
    for (guid, got) in &by_writer {
        assert_eq!(guid[..12], net_prefix, "a writer of the node's participant");
        let id = got[0].0;
        let expect: Vec<(u32, u32)> = (0..20).map(|seq| (id, seq)).collect();
        assert_eq!(got, &expect, "one application writer's samples, in order");
    }

    // One application's writer leaves: so does its writer beyond the node.
    drop(wa);
    drop(a);
    wait_until(15, "one writer left beyond the node", || {
        r.matched_publications().len() == 1
    });
    let mut states = Vec::new();
    wait_until(10, "the leaving writer's instance", || {
        for s in r.take(64).unwrap() {
            if s.data.is_none() {
                states.push(s.info.instance_state);
            }
        }
        !states.is_empty()
    });
    // Deleted with the default WRITER_DATA_LIFECYCLE, the application's writer disposed its
    // instance first, as it would without the node.
    assert!(
        states.contains(&InstanceState::NotAliveDisposed),
        "{states:?}"
    );
}

#[test]
#[ignore = "needs a network namespace: scripts/netns-run (scripts/test runs it)"]
fn each_writer_offers_its_own_ownership_strength_beyond_the_node() {
    require_netns();
    let domain = 90;
    let _node = Node::start(NodeConfig::new(domain)).unwrap();
    let (a, b) = (participant(domain, true), participant(domain, true));
    let remote = participant(domain, false);
    let exclusive = |strength| tessera::qos::DataWriterQos {
        ownership: Ownership::Exclusive,
        ownership_strength: OwnershipStrength(strength),
        ..writer_qos()
    };
    let r = reader_in::<Tagged>(
        &remote,
        "Strong",
        Default::default(),
        tessera::qos::DataReaderQos {
            ownership: Ownership::Exclusive,
            ..reader_qos()
        },
    );
    let _weak = writer::<Tagged>(&a, "Strong", exclusive(5));
    let _strong = writer::<Tagged>(&b, "Strong", exclusive(10));
    wait_until(15, "two writers beyond the node", || {
        r.matched_publications().len() == 2
    });
    let mut strengths: Vec<i32> = remote
        .discovered_endpoints()
        .into_iter()
        .filter_map(|e| match e {
            RemoteEndpointInfo::Writer(w) if w.topic_name == "Strong" => {
                Some(w.qos.ownership_strength.0)
            }
            _ => None,
        })
        .collect();
    strengths.sort_unstable();
    assert_eq!(
        strengths,
        vec![5, 10],
        "each application writer's own strength"
    );
}
