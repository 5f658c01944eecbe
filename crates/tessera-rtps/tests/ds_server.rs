//! Tessera's discovery server engine with Tessera discovery-server clients, on a virtual clock
//! through an in-memory exchange (every datagram encoded and decoded again): matching through
//! the server, the topic filter, goodbyes and lease expiry.

use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use tessera_rtps::discovery::ds_common::server_prefix;
use tessera_rtps::discovery::*;
use tessera_rtps::qos::Partition;
use tessera_rtps::sim::epoch;
use tessera_rtps::types::{entity_kind, EntityId, Guid, GuidPrefix, Locator};
use tessera_rtps::wire::{MessageReceiver, Submessage};
use tessera_rtps::writer::Transmit;

mod support;
use support::encode;
#[path = "support/ds.rs"]
mod ds_support;
use ds_support::{ds_client, server_locator};

fn meta(i: usize) -> Locator {
    Locator::udpv4(Ipv4Addr::new(10, 0, 0, 1 + i as u8), 7410)
}

fn prefix(i: usize) -> GuidPrefix {
    GuidPrefix([1 + i as u8; 12])
}

struct Net {
    now: Instant,
    server: DiscoveryServerEngine,
    server_up: bool,
    clients: Vec<DiscoveryServerClient>,
    up: Vec<bool>,
    events: Vec<Vec<EngineEvent>>,
    /// Datagrams in flight: (from, to, bytes).
    flight: Vec<(GuidPrefix, Locator, Vec<u8>)>,
}

impl Net {
    fn new(n: usize) -> Net {
        let now = epoch();
        let server = fresh_server(now, false);
        let clients = (0..n)
            .map(|i| {
                let mut d = SpdpParticipantData::new(prefix(i));
                d.domain_id = Some(0);
                d.default_unicast_locators =
                    vec![Locator::udpv4(Ipv4Addr::new(10, 0, 0, 1 + i as u8), 7411)];
                d.metatraffic_unicast_locators = vec![meta(i)];
                ds_client(d, now)
            })
            .collect();
        Net {
            now,
            server,
            server_up: true,
            clients,
            up: vec![true; n],
            events: vec![Vec::new(); n],
            flight: Vec::new(),
        }
    }

    fn collect(&mut self) {
        let mut t = Transmit::new();
        let now = self.now;
        if self.server_up {
            while self.server.poll_transmit(now, &mut t) {
                for to in t.dest.locators().as_slice() {
                    self.flight
                        .push((server_prefix(0), *to, encode(server_prefix(0), &t)));
                }
            }
        }
        for i in 0..self.clients.len() {
            if !self.up[i] {
                continue;
            }
            while self.clients[i].poll_transmit(now, &mut t) {
                for to in t.dest.locators().as_slice() {
                    self.flight.push((prefix(i), *to, encode(prefix(i), &t)));
                }
            }
            while let Some(e) = self.clients[i].poll_event() {
                self.events[i].push(e);
            }
        }
    }

    fn deliver(&mut self) {
        while !self.flight.is_empty() {
            let batch = std::mem::take(&mut self.flight);
            for (_, to, bytes) in batch {
                let rx = MessageReceiver::new(&bytes).unwrap();
                for rs in rx {
                    let rs = rs.unwrap();
                    if to == server_locator() {
                        if self.server_up {
                            self.server.handle_submessage(&rs, self.now);
                        }
                        continue;
                    }
                    let Some(i) = (0..self.clients.len()).find(|&i| meta(i) == to) else {
                        continue;
                    };
                    if !self.up[i]
                        || (rs.dest_prefix != GuidPrefix::UNKNOWN && rs.dest_prefix != prefix(i))
                    {
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
            let mut next: Option<Instant> = if self.server_up {
                self.server.poll_timeout()
            } else {
                None
            };
            for i in 0..self.clients.len() {
                if self.up[i] {
                    if let Some(t) = self.clients[i].poll_timeout() {
                        next = Some(next.map_or(t, |n| n.min(t)));
                    }
                }
            }
            match next {
                Some(t) if t <= end => {
                    self.now = self.now.max(t);
                    if self.server_up && self.server.poll_timeout().is_some_and(|t| t <= self.now) {
                        self.server.handle_timeout(self.now);
                    }
                    for i in 0..self.clients.len() {
                        if self.up[i]
                            && self.clients[i]
                                .poll_timeout()
                                .is_some_and(|t| t <= self.now)
                        {
                            self.clients[i].handle_timeout(self.now);
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

    fn writer(&mut self, i: usize, topic: &str) -> Guid {
        let g = Guid::new(
            prefix(i),
            EntityId::new(1, entity_kind::USER_WRITER_WITH_KEY),
        );
        self.clients[i].announce_writer(DiscoveredWriterData::new(g, topic, "T"), self.now);
        g
    }

    fn reader(&mut self, i: usize, topic: &str) -> Guid {
        let g = Guid::new(
            prefix(i),
            EntityId::new(2, entity_kind::USER_READER_WITH_KEY),
        );
        self.clients[i].announce_reader(DiscoveredReaderData::new(g, topic, "T"), self.now);
        g
    }

    /// A reader of client `i` (entity key `key`) in `partitions`; announced again with other
    /// partitions, it is an update of the same reader.
    fn reader_in(&mut self, i: usize, key: u32, topic: &str, partitions: &[&str]) -> Guid {
        let g = Guid::new(
            prefix(i),
            EntityId::new(key, entity_kind::USER_READER_WITH_KEY),
        );
        let mut r = DiscoveredReaderData::new(g, topic, "T");
        r.qos.partition = Partition::new(partitions.iter().copied());
        self.clients[i].announce_reader(r, self.now);
        g
    }

    fn discovered(&self, i: usize) -> Vec<GuidPrefix> {
        self.events[i]
            .iter()
            .filter_map(|e| match e {
                EngineEvent::ParticipantDiscovered(p) => Some(p.guid_prefix),
                _ => None,
            })
            .filter(|p| *p != server_prefix(0))
            .collect()
    }

    fn matched(&self, i: usize, local: Guid, remote: Guid) -> bool {
        self.events[i].iter().any(|e| {
            matches!(e, EngineEvent::Matched { local: l, remote: r } if *l == local && r.guid() == remote)
        })
    }

    fn lost(&self, i: usize, p: GuidPrefix) -> Option<LostReason> {
        self.events[i].iter().find_map(|e| match e {
            EngineEvent::ParticipantLost { prefix, reason } if *prefix == p => Some(*reason),
            _ => None,
        })
    }
}

#[test]
fn clients_match_through_the_server_and_the_topic_filter_holds() {
    let mut n = Net::new(3);
    let w = n.writer(0, "Square");
    let r = n.reader(1, "Square");
    let _other = n.reader(2, "Circle");
    n.run_for(Duration::from_secs(2));
    assert!(n.matched(0, w, r), "{:?}", n.events[0]);
    assert!(n.matched(1, r, w), "{:?}", n.events[1]);
    assert_eq!(n.discovered(0), [prefix(1)]);
    assert_eq!(n.discovered(1), [prefix(0)]);
    assert!(
        n.discovered(2).is_empty(),
        "topic filter: {:?}",
        n.events[2]
    );
    assert_eq!(n.server.clients().len(), 3);
    assert_eq!(n.server.relayed_to(prefix(2)), Some(vec![]));
    // A late joiner on Circle's other side learns of client 2 only.
    n.clients.push(Net::new(4).clients.pop().unwrap());
    n.up.push(true);
    n.events.push(Vec::new());
    let w3 = n.writer(3, "Circle");
    n.run_for(Duration::from_secs(2));
    assert_eq!(n.discovered(3), [prefix(2)]);
    assert_eq!(n.discovered(2), [prefix(3)]);
    assert!(n.matched(3, w3, _other));
    assert_eq!(n.discovered(0), [prefix(1)]);
}

/// Clients are told only of endpoints they can match by topic and partition (a pattern
/// included), and an endpoint whose partitions change is relayed to the clients it now matches.
#[test]
fn the_partition_filter_holds_and_follows_a_change() {
    let mut n = Net::new(3);
    let w = {
        let g = Guid::new(
            prefix(0),
            EntityId::new(1, entity_kind::USER_WRITER_WITH_KEY),
        );
        let mut d = DiscoveredWriterData::new(g, "Square", "T");
        d.qos.partition = Partition::new(["sensors"]);
        n.clients[0].announce_writer(d, n.now);
        g
    };
    let r1 = n.reader_in(1, 2, "Square", &["actuators"]);
    let r2 = n.reader_in(2, 2, "Square", &["sens*"]);
    n.run_for(Duration::from_secs(2));
    assert!(n.matched(0, w, r2), "{:?}", n.events[0]);
    assert!(n.matched(2, r2, w), "{:?}", n.events[2]);
    assert_eq!(n.server.relayed_to(prefix(1)), Some(vec![]));
    assert!(n.discovered(1).is_empty(), "{:?}", n.events[1]);
    // Client 1's reader moves to the writer's partition: now both are told of each other.
    n.reader_in(1, 2, "Square", &["sensors"]);
    n.run_for(Duration::from_secs(2));
    assert!(n.matched(1, r1, w), "{:?}", n.events[1]);
    assert!(n.matched(0, w, r1), "{:?}", n.events[0]);
    // Client 1 and 2 have no writer: neither was told of the other's reader.
    assert!(!n.discovered(2).contains(&prefix(1)));
}

#[test]
fn a_goodbye_and_a_lease_expiry_are_relayed() {
    let mut n = Net::new(3);
    let w = n.writer(0, "Square");
    let r1 = n.reader(1, "Square");
    let _r2 = n.reader(2, "Square");
    n.run_for(Duration::from_secs(2));
    assert!(n.matched(0, w, r1));
    // Client 1 leaves politely.
    n.clients[1].shutdown(n.now);
    n.run_for(Duration::from_millis(500));
    n.up[1] = false;
    assert_eq!(n.lost(0, prefix(1)), Some(LostReason::Disposed));
    assert_eq!(
        n.lost(2, prefix(1)),
        None,
        "client 2 never knew client 1 (two readers)"
    );
    assert!(n
        .events[0]
        .iter()
        .any(|e| matches!(e, EngineEvent::Unmatched { local, remote, .. } if *local == w && *remote == r1)));
    // Client 2 crashes: the server relays its DATA(Up) once its 20 s lease ran out.
    n.up[2] = false;
    n.run_for(Duration::from_secs(17));
    assert_eq!(n.lost(0, prefix(2)), None);
    n.run_for(Duration::from_secs(6));
    assert_eq!(n.lost(0, prefix(2)), Some(LostReason::Disposed));
    assert_eq!(n.server.counters().expired, 1);
    assert_eq!(n.server.clients(), [prefix(0)]);
    // Client 0 keeps its server: the server's DATA(p) every 3 s renews its lease there.
    assert_eq!(n.lost(0, server_prefix(0)), None);
}

#[test]
fn server_restart_is_found_again() {
    let mut n = Net::new(2);
    let w = n.writer(0, "Square");
    let r = n.reader(1, "Square");
    n.run_for(Duration::from_secs(1));
    assert!(n.matched(0, w, r));
    n.server_up = false;
    n.run_for(Duration::from_secs(25));
    assert_eq!(n.lost(0, server_prefix(0)), Some(LostReason::LeaseExpired));
    // What the server relayed stays while it is down.
    assert_eq!(n.lost(0, prefix(1)), None);
    n.server = fresh_server(n.now, false);
    n.server_up = true;
    n.run_for(Duration::from_secs(2));
    assert_eq!(n.server.clients().len(), 2);
    assert!(n.clients[0].server_heard(0) && n.clients[1].server_heard(0));
    // A client that joins now still finds client 0 (re-announced its endpoints).
    n.clients.push(Net::new(3).clients.pop().unwrap());
    n.up.push(true);
    n.events.push(Vec::new());
    let r2 = n.reader(2, "Square");
    n.run_for(Duration::from_secs(2));
    assert!(n.matched(2, r2, w), "{:?}", n.events[2]);
}

fn fresh_server(now: Instant, backup: bool) -> DiscoveryServerEngine {
    DiscoveryServerEngine::new(
        DsServerConfig {
            id: 0,
            locators: vec![server_locator()],
            selector: Box::new(SelectAll),
            lease: Duration::from_secs(20),
            wall_clock_nanos: 0,
            backup,
            links: vec![],
        },
        now,
    )
}

/// A server that comes back within its clients' lease is not re-announced to (Fast DDS
/// clients keep their EDP state, eProsima/Fast-DDS#2534). Restored from its backup, it serves
/// a new client everything at once, even about a client that stays silent; without the backup
/// the new client learns nothing.
#[test]
fn a_backup_server_restarted_serves_what_it_knew() {
    for restore in [true, false] {
        let mut n = Net::new(2);
        let w = n.writer(0, "Square");
        n.run_for(Duration::from_secs(1));
        let saved = n.server.backup();
        assert!(n.server.generation() > 0);
        // The server restarts; client 0 is silent from now on.
        n.up[0] = false;
        n.server = fresh_server(n.now, true);
        if restore {
            assert_eq!(n.server.restore(&saved, n.now), Ok(2));
            assert_eq!(n.server.backup(), saved, "a restored backup saves the same");
        }
        n.clients.push(Net::new(3).clients.pop().unwrap());
        n.up.push(true);
        n.events.push(Vec::new());
        let r = n.reader(2, "Square");
        n.run_for(Duration::from_secs(2));
        if restore {
            assert_eq!(n.discovered(2), [prefix(0)]);
            assert!(n.matched(2, r, w), "{:?}", n.events[2]);
        } else {
            assert!(n.discovered(2).is_empty(), "{:?}", n.events[2]);
        }
    }
}

#[test]
fn a_damaged_backup_is_refused_whole() {
    let mut n = Net::new(2);
    n.writer(0, "Square");
    n.run_for(Duration::from_secs(1));
    let saved = n.server.backup();
    let mut flipped = saved.clone();
    flipped[40] ^= 1;
    let now = n.now;
    let mut s = fresh_server(now, true);
    assert_eq!(s.restore(&flipped, now), Err(BackupError::Checksum));
    assert_eq!(
        s.restore(&saved[..saved.len() / 2], now),
        Err(BackupError::Checksum)
    );
    assert_eq!(
        s.restore(b"not a backup", now),
        Err(BackupError::NotABackup)
    );
    assert!(s.clients().is_empty());
    // Every prefix of a valid backup is refused, never a panic.
    for k in 0..saved.len() {
        assert!(s.restore(&saved[..k], now).is_err());
    }
    assert_eq!(s.restore(&saved, now), Ok(2));
}
