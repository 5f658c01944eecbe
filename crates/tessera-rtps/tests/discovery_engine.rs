//! `SimpleDiscovery` engines talking to each other through an in-memory exchange, with no
//! runtime: datagrams are encoded to bytes and decoded again as a receive thread would, time is
//! a virtual clock, and a test may drop chosen datagrams.

use std::collections::VecDeque;
use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use tessera_rtps::discovery::*;
use tessera_rtps::qos::{QosPolicyId, ReaderSideQos, Reliability, WriterSideQos};
use tessera_rtps::sim::epoch;
use tessera_rtps::types::{entity_kind, EntityId, Guid, GuidPrefix, Locator};
use tessera_rtps::wire::{Data, MessageBuilder, MessageReceiver, PayloadKind, Submessage};
use tessera_rtps::writer::{OutSubmessage, Transmit};

mod support;
use support::encode;

fn spdp_group() -> Locator {
    Locator::udpv4(Ipv4Addr::new(239, 255, 0, 1), 7400)
}

fn meta_locator(i: usize) -> Locator {
    Locator::udpv4(Ipv4Addr::new(10, 0, 0, 1 + i as u8), 7410)
}

fn prefix(i: usize) -> GuidPrefix {
    GuidPrefix([1 + i as u8; 12])
}

/// A datagram in flight.
struct Datagram {
    from: usize,
    to: Locator,
    bytes: Vec<u8>,
}

/// Decides whether a datagram is lost (sender index, destination, the transmit).
type DropRule = Box<dyn FnMut(usize, &Locator, &Transmit) -> bool>;

struct Node {
    engine: SimpleDiscovery,
    /// Events polled so far.
    events: Vec<EngineEvent>,
    /// A stopped node neither sends nor receives nor runs timers (a crashed process).
    running: bool,
}

/// Engines on one virtual network: SPDP multicast reaches every other node, a metatraffic
/// locator reaches its node. Delivery is instantaneous but in order, through a queue.
struct Exchange {
    nodes: Vec<Node>,
    now: Instant,
    in_flight: VecDeque<Datagram>,
    drop_rule: DropRule,
    dropped: usize,
}

fn config(i: usize, lease: Duration) -> SimpleDiscoveryConfig {
    let mut data = SpdpParticipantData::new(prefix(i));
    data.domain_id = Some(0);
    data.lease_duration = lease;
    data.builtin_endpoints = BuiltinEndpointSet::TESSERA_DEFAULT;
    data.default_unicast_locators =
        vec![Locator::udpv4(Ipv4Addr::new(10, 0, 0, 1 + i as u8), 7411)];
    data.metatraffic_unicast_locators = vec![meta_locator(i)];
    SimpleDiscoveryConfig::new(data, vec![spdp_group()], Box::new(SelectAll))
}

impl Exchange {
    fn new(n: usize, lease: Duration) -> Exchange {
        Self::with_configs((0..n).map(|i| config(i, lease)).collect())
    }

    fn with_configs(configs: Vec<SimpleDiscoveryConfig>) -> Exchange {
        let now = epoch();
        let nodes = configs
            .into_iter()
            .map(|c| Node {
                engine: SimpleDiscovery::new(c, now),
                events: Vec::new(),
                running: true,
            })
            .collect();
        Exchange {
            nodes,
            now,
            in_flight: VecDeque::new(),
            drop_rule: Box::new(|_, _, _| false),
            dropped: 0,
        }
    }

    /// Moves node `i`'s transmits and events out (call after every input to it).
    fn collect(&mut self, i: usize) {
        let mut t = Transmit::new();
        let now = self.now;
        let node = &mut self.nodes[i];
        while node.engine.poll_transmit(now, &mut t) {
            for to in t.dest.locators().as_slice() {
                if (self.drop_rule)(i, to, &t) {
                    self.dropped += 1;
                    continue;
                }
                self.in_flight.push_back(Datagram {
                    from: i,
                    to: *to,
                    bytes: encode(prefix(i), &t),
                });
            }
        }
        while let Some(e) = node.engine.poll_event() {
            node.events.push(e);
        }
    }

    /// Delivers everything in flight (and what that provokes).
    fn deliver_all(&mut self) {
        while let Some(d) = self.in_flight.pop_front() {
            let targets: Vec<usize> = (0..self.nodes.len())
                .filter(|&j| {
                    j != d.from
                        && self.nodes[j].running
                        && (d.to == spdp_group() || d.to == meta_locator(j))
                })
                .collect();
            for j in targets {
                self.receive(j, &d.bytes);
            }
        }
    }

    /// What a runtime's receive thread does with a datagram: decode, filter on INFO_DST, route
    /// what the engine owns.
    fn receive(&mut self, j: usize, bytes: &[u8]) {
        let rx = MessageReceiver::new(bytes).expect("valid message");
        for rs in rx {
            let rs = rs.expect("valid submessage");
            if rs.dest_prefix != GuidPrefix::UNKNOWN && rs.dest_prefix != prefix(j) {
                continue;
            }
            let entity = match &rs.submessage {
                Submessage::Data(d) => d.writer_id,
                Submessage::DataFrag(d) => d.writer_id,
                Submessage::Heartbeat(h) => h.writer_id,
                Submessage::HeartbeatFrag(h) => h.writer_id,
                Submessage::Gap(g) => g.writer_id,
                Submessage::AckNack(a) => a.writer_id,
                Submessage::NackFrag(n) => n.writer_id,
                _ => continue,
            };
            if self.nodes[j].engine.owns(entity) {
                self.nodes[j].engine.handle_submessage(&rs, self.now);
            }
        }
        self.collect(j);
    }

    /// Runs the network and every running node's timers until `self.now + d`.
    fn run_for(&mut self, d: Duration) {
        let end = self.now + d;
        loop {
            for i in 0..self.nodes.len() {
                if self.nodes[i].running {
                    self.collect(i);
                }
            }
            self.deliver_all();
            let next = self
                .nodes
                .iter()
                .filter(|n| n.running)
                .filter_map(|n| n.engine.poll_timeout())
                .min();
            match next {
                Some(t) if t <= end => {
                    self.now = self.now.max(t);
                    for i in 0..self.nodes.len() {
                        let due = self.nodes[i]
                            .engine
                            .poll_timeout()
                            .is_some_and(|t| t <= self.now);
                        if self.nodes[i].running && due {
                            self.nodes[i].engine.handle_timeout(self.now);
                        }
                    }
                }
                _ => {
                    self.now = end;
                    return;
                }
            }
        }
    }

    fn announce_writer(&mut self, i: usize, w: DiscoveredWriterData) {
        self.nodes[i].engine.announce_writer(w, self.now);
        self.collect(i);
    }

    fn announce_reader(&mut self, i: usize, r: DiscoveredReaderData) {
        self.nodes[i].engine.announce_reader(r, self.now);
        self.collect(i);
    }

    /// Announces a writer on node 0 and a reader of the same topic on node 1, then runs for `d`.
    fn writer_on_0_reader_on_1(&mut self, d: Duration) -> (Guid, Guid) {
        let (w, r) = (writer(0, 1, "T"), reader(1, 1, "T"));
        let guids = (w.guid, r.guid);
        self.announce_writer(0, w);
        self.announce_reader(1, r);
        self.run_for(d);
        guids
    }

    fn events(&self, i: usize) -> &[EngineEvent] {
        &self.nodes[i].events
    }

    fn matched(&self, i: usize, local: Guid, remote: Guid) -> bool {
        self.events(i).iter().any(|e| {
            matches!(e, EngineEvent::Matched { local: l, remote: r } if *l == local && r.guid() == remote)
        })
    }
}

fn is_sedp_data(t: &Transmit, writer: EntityId) -> bool {
    t.submessages
        .iter()
        .any(|s| matches!(s, OutSubmessage::Data(d) if d.writer_id == writer))
}

fn writer(i: usize, key: u32, topic: &str) -> DiscoveredWriterData {
    let guid = Guid::new(
        prefix(i),
        EntityId::new(key, entity_kind::USER_WRITER_WITH_KEY),
    );
    DiscoveredWriterData::new(guid, topic, "Reading")
}

fn reader(i: usize, key: u32, topic: &str) -> DiscoveredReaderData {
    let guid = Guid::new(
        prefix(i),
        EntityId::new(key, entity_kind::USER_READER_WITH_KEY),
    );
    DiscoveredReaderData::new(guid, topic, "Reading")
}

const LEASE: Duration = Duration::from_secs(10);

#[test]
fn two_engines_discover_each_other_and_match_a_writer_with_a_reader() {
    let mut x = Exchange::new(2, LEASE);
    let (wg, rg) = x.writer_on_0_reader_on_1(Duration::from_millis(50));
    for (i, other) in [(0, 1), (1, 0)] {
        let found = x.events(i).iter().any(
            |e| matches!(e, EngineEvent::ParticipantDiscovered(p) if p.guid_prefix == prefix(other)),
        );
        assert!(found, "node {i} did not discover node {other}");
        assert_eq!(
            x.nodes[i]
                .engine
                .peer_locators(prefix(other))
                .map(|l| l.as_slice().to_vec()),
            Some(vec![meta_locator(other)])
        );
    }
    assert!(x.matched(0, wg, rg), "writer side: {:?}", x.events(0));
    assert!(x.matched(1, rg, wg), "reader side: {:?}", x.events(1));
    // The reader learned the writer's locators from its participant (it announced none).
    let remote = x.events(1).iter().find_map(|e| match e {
        EngineEvent::Matched { remote, .. } => Some(remote.clone()),
        _ => None,
    });
    assert_eq!(
        remote.unwrap().unicast_locators(),
        &[Locator::udpv4(Ipv4Addr::new(10, 0, 0, 1), 7411)]
    );
}

#[test]
fn a_lost_sedp_announcement_is_repaired() {
    let mut x = Exchange::new(2, LEASE);
    // Discover first, so that the announcement below goes to a known peer.
    x.run_for(Duration::from_millis(50));
    let mut lost_once = false;
    x.drop_rule = Box::new(move |from, _, t| {
        let hit = from == 0 && !lost_once && is_sedp_data(t, EntityId::SEDP_PUBLICATIONS_WRITER);
        lost_once |= hit;
        hit
    });
    let (w, r) = (writer(0, 1, "T"), reader(1, 1, "T"));
    let (wg, rg) = (w.guid, r.guid);
    x.announce_reader(1, r);
    x.announce_writer(0, w);
    // Announcements are held for SEDP_COALESCE to go out together.
    x.run_for(SEDP_COALESCE);
    assert_eq!(x.dropped, 1);
    assert!(
        !x.matched(1, rg, wg),
        "matched although the announcement was lost"
    );
    // The SEDP writer's heartbeat, the reader's ACKNACK and the repair bring it.
    x.run_for(Duration::from_secs(3));
    assert!(x.matched(1, rg, wg), "not repaired: {:?}", x.events(1));
    assert!(x.matched(0, wg, rg));
}

#[test]
fn incompatible_qos_is_reported_on_both_sides_with_the_policy() {
    let mut x = Exchange::new(2, LEASE);
    let w = writer(0, 1, "T")
        .with_qos(WriterSideQos::default().with_reliability(Reliability::best_effort()));
    let r = reader(1, 1, "T").with_qos(
        ReaderSideQos::default().with_reliability(Reliability::reliable(Duration::from_secs(1))),
    );
    let (wg, rg) = (w.guid, r.guid);
    x.announce_writer(0, w);
    x.announce_reader(1, r);
    x.run_for(Duration::from_millis(100));
    for (i, local, remote) in [(0, wg, rg), (1, rg, wg)] {
        let policies = x.events(i).iter().find_map(|e| match e {
            EngineEvent::IncompatibleQos {
                local: l,
                remote: r,
                policies,
            } if *l == local && *r == remote => Some(policies.clone()),
            _ => None,
        });
        assert_eq!(policies, Some(vec![QosPolicyId::Reliability]), "node {i}");
        assert!(!x.matched(i, local, remote));
    }
}

#[test]
fn a_silent_participant_is_lost_when_its_lease_expires() {
    let mut x = Exchange::new(2, Duration::from_secs(2));
    let (wg, rg) = x.writer_on_0_reader_on_1(Duration::from_millis(100));
    assert!(x.matched(1, rg, wg));
    // Node 0 crashes: no dispose, nothing more on the network.
    x.nodes[0].running = false;
    x.run_for(Duration::from_millis(1900));
    assert!(
        !x.events(1)
            .iter()
            .any(|e| matches!(e, EngineEvent::ParticipantLost { .. })),
        "lost before the lease ran out"
    );
    x.run_for(Duration::from_secs(1));
    let tail: Vec<_> = x
        .events(1)
        .iter()
        .filter(|e| {
            matches!(
                e,
                EngineEvent::Unmatched { .. } | EngineEvent::ParticipantLost { .. }
            )
        })
        .cloned()
        .collect();
    assert_eq!(
        tail,
        vec![
            EngineEvent::Unmatched {
                local: rg,
                remote: wg,
                lost: true
            },
            EngineEvent::ParticipantLost {
                prefix: prefix(0),
                reason: LostReason::LeaseExpired
            },
        ]
    );
    assert!(x.nodes[1].engine.peer_locators(prefix(0)).is_none());
}

#[test]
fn a_participant_that_leaves_is_unmatched_at_once() {
    let mut x = Exchange::new(2, LEASE);
    let (wg, rg) = x.writer_on_0_reader_on_1(Duration::from_millis(100));
    x.nodes[0].engine.shutdown(x.now);
    x.collect(0);
    x.deliver_all();
    assert!(x.events(1).contains(&EngineEvent::Unmatched {
        local: rg,
        remote: wg,
        lost: false
    }));
    assert!(x.events(1).contains(&EngineEvent::ParticipantLost {
        prefix: prefix(0),
        reason: LostReason::Disposed
    }));
    // A participant that left announces itself no more.
    let later = x.now + Duration::from_secs(5);
    x.nodes[0].engine.handle_timeout(later);
    let mut t = Transmit::new();
    while x.nodes[0].engine.poll_transmit(later, &mut t) {
        assert!(
            !is_sedp_data(&t, EntityId::SPDP_WRITER),
            "announced after leaving"
        );
    }
}

/// A datagram from `from` carrying one built-in dispose of `victim`.
fn dispose(
    from: GuidPrefix,
    victim: Guid,
    writer_id: EntityId,
    reader_id: EntityId,
    sn: i64,
) -> Vec<u8> {
    let kind = if victim.entity_id == EntityId::PARTICIPANT {
        BuiltinTopicKind::Participant
    } else {
        BuiltinTopicKind::Endpoint
    };
    let mut payload = Vec::new();
    encode_dispose_key_payload(kind, victim, &mut payload);
    let mut qos = Vec::new();
    encode_dispose_inline_qos(victim, StatusInfo(3), &mut qos);
    let mut buf = Vec::new();
    let mut m = MessageBuilder::new(&mut buf, from);
    m.submessage(&Submessage::Data(Data {
        reader_id,
        writer_id,
        writer_sn: sn,
        inline_qos: tessera_rtps::wire::ParameterList::parse(&qos, true).ok(),
        payload_kind: PayloadKind::Key,
        payload: &payload,
    }));
    buf
}

#[test]
fn disposes_from_another_participant_are_ignored() {
    let mut x = Exchange::new(3, LEASE);
    let (wg, rg) = x.writer_on_0_reader_on_1(Duration::from_millis(100));
    assert!(x.matched(1, rg, wg));
    let before = x.events(1).len();

    let p0 = Guid::new(prefix(0), EntityId::PARTICIPANT);
    let spdp = |from| dispose(from, p0, EntityId::SPDP_WRITER, EntityId::SPDP_READER, 99);
    // Node 2 says that node 0 left (SPDP dispose of node 0, from node 2's prefix) ...
    x.receive(1, &spdp(prefix(2)));
    // ... and, over its own (matched, reliable) SEDP writer, that node 0's writer is gone.
    let sedp = dispose(
        prefix(2),
        wg,
        EntityId::SEDP_PUBLICATIONS_WRITER,
        EntityId::SEDP_PUBLICATIONS_READER,
        1,
    );
    x.receive(1, &sedp);

    assert_eq!(x.nodes[1].engine.counters().forged_disposes, 2);
    assert_eq!(x.nodes[1].engine.rejected(), 2);
    assert_eq!(x.events(1).len(), before, "{:?}", &x.events(1)[before..]);
    assert!(x.nodes[1].engine.db().is_matched(rg, wg));
    assert!(x.nodes[1].engine.peer_locators(prefix(0)).is_some());

    // The owner's own word is obeyed.
    x.receive(1, &spdp(prefix(0)));
    assert!(!x.nodes[1].engine.db().is_matched(rg, wg));
    assert!(x.events(1).contains(&EngineEvent::ParticipantLost {
        prefix: prefix(0),
        reason: LostReason::Disposed
    }));
}

#[test]
fn startup_announcements_then_the_period() {
    let mut x = Exchange::new(1, LEASE);
    let mut sent = Vec::new();
    let start = x.now;
    for _ in 0..7 {
        let t = x.nodes[0].engine.poll_timeout().unwrap();
        x.now = t;
        x.nodes[0].engine.handle_timeout(t);
        let mut tr = Transmit::new();
        while x.nodes[0].engine.poll_transmit(t, &mut tr) {
            if is_sedp_data(&tr, EntityId::SPDP_WRITER) {
                sent.push(t - start);
            }
        }
    }
    let ms = |v: u64| Duration::from_millis(v);
    assert_eq!(
        sent,
        vec![
            ms(0),
            ms(20),
            ms(100),
            ms(300),
            ms(1000),
            ms(4000),
            ms(7000)
        ]
    );
}

#[test]
fn the_local_matcher_pairs_a_participants_own_endpoints() {
    let mut m = LocalMatcher::new();
    let mut out = Vec::new();
    let (w, r) = (writer(0, 1, "T"), reader(0, 2, "T"));
    let (wg, rg) = (w.guid, r.guid);
    let other = reader(0, 3, "U");
    let strict = reader(0, 4, "T").with_qos(
        ReaderSideQos::default().with_reliability(Reliability::reliable(Duration::from_secs(1))),
    );
    let sg = strict.guid;
    m.add_reader(r, &mut out);
    m.add_reader(other, &mut out);
    assert!(out.is_empty());
    m.add_writer(
        w.with_qos(WriterSideQos::default().with_reliability(Reliability::best_effort())),
        &mut out,
    );
    m.add_reader(strict, &mut out);
    let summary: Vec<_> = out
        .iter()
        .map(|e| match e {
            EngineEvent::Matched { local, remote } => ("match", *local, remote.guid()),
            EngineEvent::IncompatibleQos { local, remote, .. } => ("incompatible", *local, *remote),
            e => panic!("unexpected {e:?}"),
        })
        .collect();
    assert_eq!(
        summary,
        vec![
            ("match", wg, rg),
            ("match", rg, wg),
            ("incompatible", wg, sg),
            ("incompatible", sg, wg),
        ]
    );
    out.clear();
    m.remove(wg, &mut out);
    assert_eq!(
        out,
        vec![EngineEvent::Unmatched {
            local: rg,
            remote: wg,
            lost: false
        }]
    );
    assert!(m.writer(wg).is_none() && m.reader(rg).is_some());
}

#[test]
fn an_undecodable_spdp_sample_is_counted_and_changes_nothing() {
    let mut x = Exchange::new(2, LEASE);
    let mut buf = Vec::new();
    let mut m = MessageBuilder::new(&mut buf, prefix(1));
    m.submessage(&Submessage::Data(Data {
        reader_id: EntityId::SPDP_READER,
        writer_id: EntityId::SPDP_WRITER,
        writer_sn: 1,
        inline_qos: None,
        payload_kind: PayloadKind::Data,
        payload: &[0, 3, 0, 0, 0xff, 0xff, 0xff],
    }));
    x.receive(0, &buf);
    assert_eq!(x.nodes[0].engine.counters().undecodable, 1);
    assert!(x.events(0).is_empty());
    assert!(x.nodes[0].engine.peer_locators(prefix(1)).is_none());
}

#[test]
fn participants_of_another_domain_tag_are_not_discovered() {
    let mut tagged = config(1, LEASE);
    tagged.participant.domain_tag = "lab".into();
    let mut x = Exchange::with_configs(vec![config(0, LEASE), tagged]);
    x.run_for(Duration::from_millis(500));
    for i in 0..2 {
        assert!(x.events(i).is_empty(), "node {i}: {:?}", x.events(i));
        assert!(x.nodes[i].engine.peer_locators(prefix(1 - i)).is_none());
    }
}

#[test]
fn a_changed_participant_announcement_is_reported() {
    let mut x = Exchange::new(2, LEASE);
    x.run_for(Duration::from_millis(50));
    let mut changed = config(1, LEASE);
    changed.participant.user_data = b"v2".to_vec();
    x.nodes[1].engine = SimpleDiscovery::new(changed, x.now);
    x.run_for(Duration::from_millis(50));
    let updated = x.events(0).iter().find_map(|e| match e {
        EngineEvent::ParticipantUpdated(p) => Some(p.user_data.clone()),
        _ => None,
    });
    assert_eq!(updated, Some(b"v2".to_vec()));
}

/// Every remote endpoint reaches the runtime (the built-in topics), matched or not: before its
/// match, again when re-announced, and as lost after its unmatch.
#[test]
fn remote_endpoints_are_reported_whether_or_not_they_match() {
    let mut x = Exchange::new(2, LEASE);
    let (wg, rg) = x.writer_on_0_reader_on_1(Duration::from_millis(100));
    let ev = x.events(1).to_vec();
    let announced = ev
        .iter()
        .position(|e| matches!(e, EngineEvent::RemoteEndpoint(i) if i.guid() == wg))
        .expect("the remote writer reported");
    let matched = ev
        .iter()
        .position(|e| matches!(e, EngineEvent::Matched { remote, .. } if remote.guid() == wg))
        .expect("matched");
    assert!(announced < matched);
    // The writer's node hears of the reader too.
    assert!(x
        .events(0)
        .iter()
        .any(|e| matches!(e, EngineEvent::RemoteEndpoint(i) if i.guid() == rg)));
    x.nodes[0].engine.shutdown(x.now);
    x.collect(0);
    x.deliver_all();
    let ev = x.events(1).to_vec();
    let unmatched = ev
        .iter()
        .position(|e| matches!(e, EngineEvent::Unmatched { remote, .. } if *remote == wg))
        .expect("unmatched");
    let lost = ev
        .iter()
        .position(|e| *e == EngineEvent::RemoteEndpointLost(wg))
        .expect("the remote writer reported lost");
    assert!(unmatched < lost);
}

/// Endpoints announced in a burst reach a peer together (SEDP_COALESCE): several DATA(w) per
/// datagram, not one datagram per endpoint.
#[test]
fn a_burst_of_announcements_is_batched() {
    const N: u32 = 60;
    let mut x = Exchange::new(2, LEASE);
    x.run_for(Duration::from_millis(50));
    let datagrams = std::rc::Rc::new(std::cell::Cell::new(0usize));
    let seen = datagrams.clone();
    x.drop_rule = Box::new(move |from, _, t| {
        if from == 0 && is_sedp_data(t, EntityId::SEDP_PUBLICATIONS_WRITER) {
            seen.set(seen.get() + 1);
        }
        false
    });
    let r = reader(1, 1, "T");
    let rg = r.guid;
    x.announce_reader(1, r);
    let mut writers = Vec::new();
    for k in 0..N {
        let w = writer(0, 10 + k, "T");
        writers.push(w.guid);
        x.announce_writer(0, w);
    }
    x.run_for(Duration::from_millis(100));
    for wg in &writers {
        assert!(x.matched(1, rg, *wg), "writer {wg:?} not matched");
    }
    assert!(
        datagrams.get() <= 3,
        "{N} announcements took {} datagrams",
        datagrams.get()
    );
}
