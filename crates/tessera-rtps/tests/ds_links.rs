//! Linked discovery servers (`DsServerConfig::links`, `tessera discovery-server --link`):
//! clients of different servers discover each other through the link, the topic filter still
//! holds across it, goodbyes are relayed across it, and a link made from one side only is
//! served by the other. Virtual clock, every datagram encoded and decoded.

use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use tessera_rtps::discovery::ds_common::server_prefix;
use tessera_rtps::discovery::*;
use tessera_rtps::sim::epoch;
use tessera_rtps::types::{entity_kind, EntityId, Guid, GuidPrefix, Locator, Locators};
use tessera_rtps::wire::{MessageReceiver, Submessage};
use tessera_rtps::writer::Transmit;

mod support;
use support::encode;

fn server_locator(i: usize) -> Locator {
    Locator::udpv4(Ipv4Addr::LOCALHOST, 11811 + i as u16)
}

fn meta(i: usize) -> Locator {
    Locator::udpv4(Ipv4Addr::new(10, 0, 0, 1 + i as u8), 7410)
}

fn prefix(i: usize) -> GuidPrefix {
    GuidPrefix([1 + i as u8; 12])
}

fn server(i: usize, links: &[usize], now: Instant) -> DiscoveryServerEngine {
    DiscoveryServerEngine::new(
        DsServerConfig {
            id: i as u8,
            locators: vec![server_locator(i)],
            selector: Box::new(SelectAll),
            lease: Duration::from_secs(20),
            wall_clock_nanos: 0,
            backup: false,
            links: links
                .iter()
                .map(|&j| {
                    let mut l = Locators::new();
                    l.push(server_locator(j));
                    RemoteServer {
                        id: j as u8,
                        locators: l,
                    }
                })
                .collect(),
        },
        now,
    )
}

fn client(i: usize, server: usize, now: Instant) -> DiscoveryServerClient {
    let mut d = SpdpParticipantData::new(prefix(i));
    d.domain_id = Some(0);
    d.metatraffic_unicast_locators = vec![meta(i)];
    let mut l = Locators::new();
    l.push(server_locator(server));
    DiscoveryServerClient::new(
        DsClientConfig {
            participant: d,
            servers: vec![RemoteServer {
                id: server as u8,
                locators: l,
            }],
            shared_reassembly: None,
            shared_buffered: None,
            wall_clock_nanos: 0,
        },
        now,
    )
}

struct Net {
    now: Instant,
    servers: Vec<(DiscoveryServerEngine, bool)>,
    clients: Vec<DiscoveryServerClient>,
    events: Vec<Vec<EngineEvent>>,
    flight: Vec<(Locator, Vec<u8>)>,
}

impl Net {
    fn collect(&mut self) {
        let mut t = Transmit::new();
        let now = self.now;
        for (s, up) in &mut self.servers {
            if !*up {
                continue;
            }
            let me = s.prefix();
            while s.poll_transmit(now, &mut t) {
                for to in t.dest.locators().as_slice() {
                    self.flight.push((*to, encode(me, &t)));
                }
            }
        }
        for (i, c) in self.clients.iter_mut().enumerate() {
            while c.poll_transmit(now, &mut t) {
                for to in t.dest.locators().as_slice() {
                    self.flight.push((*to, encode(prefix(i), &t)));
                }
            }
            while let Some(e) = c.poll_event() {
                self.events[i].push(e);
            }
        }
    }

    fn deliver(&mut self) {
        while !self.flight.is_empty() {
            for (to, bytes) in std::mem::take(&mut self.flight) {
                for rs in MessageReceiver::new(&bytes).unwrap() {
                    let rs = rs.unwrap();
                    if let Some(k) = (0..self.servers.len()).find(|&k| server_locator(k) == to) {
                        let (s, up) = &mut self.servers[k];
                        if *up
                            && (rs.dest_prefix == GuidPrefix::UNKNOWN
                                || rs.dest_prefix == s.prefix())
                        {
                            s.handle_submessage(&rs, self.now);
                        }
                        continue;
                    }
                    let Some(i) = (0..self.clients.len()).find(|&i| meta(i) == to) else {
                        continue;
                    };
                    if rs.dest_prefix != GuidPrefix::UNKNOWN && rs.dest_prefix != prefix(i) {
                        continue;
                    }
                    let e = match &rs.submessage {
                        Submessage::Data(d) => d.writer_id,
                        Submessage::Heartbeat(h) => h.writer_id,
                        Submessage::Gap(g) => g.writer_id,
                        Submessage::AckNack(a) => a.writer_id,
                        Submessage::DataFrag(d) => d.writer_id,
                        _ => continue,
                    };
                    if self.clients[i].owns(e) {
                        self.clients[i].handle_submessage(&rs, self.now);
                    }
                }
            }
            self.collect();
        }
    }

    fn run_for(&mut self, d: Duration) {
        let end = self.now + d;
        loop {
            self.collect();
            self.deliver();
            let mut next: Option<Instant> = None;
            let mut take = |t: Option<Instant>| {
                if let Some(t) = t {
                    next = Some(next.map_or(t, |n: Instant| n.min(t)));
                }
            };
            for (s, up) in &self.servers {
                if *up {
                    take(s.poll_timeout());
                }
            }
            for c in &self.clients {
                take(c.poll_timeout());
            }
            match next {
                Some(t) if t <= end => {
                    self.now = self.now.max(t);
                    let now = self.now;
                    for (s, up) in &mut self.servers {
                        if *up && s.poll_timeout().is_some_and(|t| t <= now) {
                            s.handle_timeout(now);
                        }
                    }
                    for c in &mut self.clients {
                        if c.poll_timeout().is_some_and(|t| t <= now) {
                            c.handle_timeout(now);
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

    fn endpoint(&mut self, i: usize, topic: &str, writer: bool) -> Guid {
        let kind = if writer {
            entity_kind::USER_WRITER_WITH_KEY
        } else {
            entity_kind::USER_READER_WITH_KEY
        };
        let g = Guid::new(prefix(i), EntityId::new(1, kind));
        if writer {
            self.clients[i].announce_writer(DiscoveredWriterData::new(g, topic, "T"), self.now);
        } else {
            self.clients[i].announce_reader(DiscoveredReaderData::new(g, topic, "T"), self.now);
        }
        g
    }

    fn discovered(&self, i: usize) -> Vec<GuidPrefix> {
        self.events[i]
            .iter()
            .filter_map(|e| match e {
                EngineEvent::ParticipantDiscovered(p) => Some(p.guid_prefix),
                _ => None,
            })
            .filter(|p| p.0[..2] != [0x44, 0x53])
            .collect()
    }

    fn matched(&self, i: usize, local: Guid, remote: Guid) -> bool {
        self.events[i].iter().any(|e| {
            matches!(e, EngineEvent::Matched { local: l, remote: r } if *l == local && r.guid() == remote)
        })
    }

    fn lost(&self, i: usize, p: GuidPrefix) -> bool {
        self.events[i]
            .iter()
            .any(|e| matches!(e, EngineEvent::ParticipantLost { prefix, .. } if *prefix == p))
    }
}

fn net(links_of_0: &[usize], homes: &[usize]) -> Net {
    let now = epoch();
    Net {
        now,
        servers: vec![
            (server(0, links_of_0, now), true),
            (server(1, &[], now), true),
        ],
        clients: homes
            .iter()
            .enumerate()
            .map(|(i, &s)| client(i, s, now))
            .collect(),
        events: vec![Vec::new(); homes.len()],
        flight: Vec::new(),
    }
}

#[test]
fn clients_of_linked_servers_discover_each_other_and_the_filter_holds() {
    // Server 0 links to server 1 (server 1 is not told of server 0: it accepts the link).
    // Clients 0 and 2 use server 0, client 1 server 1.
    let mut n = net(&[1], &[0, 1, 0]);
    let w = n.endpoint(0, "Square", true);
    let r = n.endpoint(1, "Square", false);
    let _c = n.endpoint(2, "Circle", false);
    // Well within the 3 s re-announcement: the link pings until it is acknowledged.
    n.run_for(Duration::from_secs(1));
    assert!(n.matched(0, w, r), "{:?}", n.events[0]);
    assert!(n.matched(1, r, w), "{:?}", n.events[1]);
    assert_eq!(n.discovered(0), [prefix(1)]);
    assert_eq!(n.discovered(1), [prefix(0)]);
    assert!(
        n.discovered(2).is_empty(),
        "topic filter: {:?}",
        n.events[2]
    );
    assert_eq!(n.servers[1].0.linked_servers(), [server_prefix(0)]);
    assert_eq!(n.servers[0].0.linked_servers(), [server_prefix(1)]);
    assert!(n.servers[0]
        .0
        .relayed_participants()
        .contains(&(prefix(1), server_prefix(1))));
    // Client 0 leaves: its goodbye crosses the link.
    n.clients[0].shutdown(n.now);
    n.run_for(Duration::from_secs(1));
    assert!(n.lost(1, prefix(0)), "{:?}", n.events[1]);
}

#[test]
fn without_a_link_clients_of_different_servers_stay_apart() {
    let mut n = net(&[], &[0, 1]);
    let w = n.endpoint(0, "Square", true);
    let r = n.endpoint(1, "Square", false);
    n.run_for(Duration::from_secs(3));
    assert!(!n.matched(0, w, r));
    assert!(n.discovered(0).is_empty() && n.discovered(1).is_empty());
}

#[test]
fn a_linked_server_that_comes_back_is_linked_again() {
    let mut n = net(&[1], &[0, 1]);
    let w = n.endpoint(0, "Square", true);
    n.run_for(Duration::from_secs(2));
    // Server 1 is down for longer than its lease, then back (empty).
    n.servers[1].1 = false;
    n.run_for(Duration::from_secs(25));
    n.servers[1] = (server(1, &[], n.now), true);
    n.clients[1] = client(1, 1, n.now);
    n.events[1].clear();
    let r = n.endpoint(1, "Square", false);
    n.run_for(Duration::from_secs(4));
    assert!(n.matched(1, r, w), "{:?}", n.events[1]);
}
