//! How the discovery server's work grows with its clients. N Tessera discovery-server clients
//! start at once, each shaped like a ddsperf pong (one reader and N-1 writers on one topic, so
//! endpoints grow as N²), against one `DiscoveryServerEngine`, on a virtual clock with every
//! datagram encoded and decoded. Checks that every client is told exactly the endpoints it
//! needs (those of other clients on its topics; nothing of other topics), and counts the
//! server's work: (client, endpoint) pairs it considered for relaying, samples relayed,
//! datagrams written. The work must stay linear in what is relayed.
//!
//! In the `progressive` setup each client starts with its reader and one writer and adds a
//! writer for every peer it discovers (as ddsperf's pong does), and the server's output is
//! polled after every `server_batch` datagrams it received (1: a driver that sends after each
//! datagram; 64: `tessera discovery-server`, which handles what waits before sending), with or
//! without the server holding each client's relays for `RELAY_COALESCE`.
//!
//! The plain test runs small sizes; `scale_report` (ignored) prints the table for 10, 50 and
//! 100 clients: `cargo test --release -p tessera-rtps --test ds_scale -- --ignored --nocapture`.

use std::collections::{HashMap, HashSet};
use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use tessera_rtps::discovery::ds_common::server_prefix;
use tessera_rtps::discovery::*;
use tessera_rtps::qos::Partition;
use tessera_rtps::sim::epoch;
use tessera_rtps::types::{entity_kind, EntityId, Guid, GuidPrefix, Locator};
use tessera_rtps::wire::MessageReceiver;
use tessera_rtps::writer::{OutSubmessage, Transmit};

mod support;
use support::{encode, writer_of};
#[path = "support/ds.rs"]
mod ds_support;
use ds_support::{ds_client, server_locator};

fn meta(i: usize) -> Locator {
    Locator::udpv4(
        Ipv4Addr::new(10, 0, (i / 200) as u8, 1 + (i % 200) as u8),
        7410,
    )
}

fn prefix(i: usize) -> GuidPrefix {
    let mut p = [0u8; 12];
    p[..8].copy_from_slice(&(i as u64 + 1).to_be_bytes());
    p[8] = 0x7e;
    GuidPrefix(p)
}

/// How the clients' topics are laid out.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Layout {
    /// Every client on one topic, every endpoint in the default partition.
    Shared,
    /// Clients in pairs, each pair on a topic of its own.
    Pairs,
    /// ddsperf's pong: on one topic, a reader and a writer in the default partition (its data
    /// and ping endpoints), a reader in a partition named after itself, and one writer per peer
    /// in that peer's partition (its pong writers). Each client needs 4 endpoints per peer,
    /// where topic alone would give it N per peer.
    Pong,
}

impl Layout {
    fn topic(self, i: usize) -> String {
        match self {
            Layout::Shared | Layout::Pong => "pong".into(),
            Layout::Pairs => format!("pair{}", i / 2),
        }
    }
}

/// Client `i`'s own partition in the `Pong` layout.
fn own_partition(i: usize) -> Vec<String> {
    vec![format!("client{i}")]
}

/// One endpoint a client will announce: its GUID, partitions, and whether it is announced at
/// the start (else when its peer is discovered).
#[derive(Clone)]
struct Planned {
    guid: Guid,
    partitions: Vec<String>,
    at_start: bool,
}

/// One run's shape.
#[derive(Clone, Copy, Debug)]
struct Setup {
    n: usize,
    layout: Layout,
    /// Writers created as peers are discovered (else all announced at the start).
    progressive: bool,
    /// Received datagrams the server handles before its output is polled.
    server_batch: usize,
    /// How long the server holds a client's relays to send them together.
    coalesce: Duration,
}

impl Setup {
    fn upfront(n: usize, layout: Layout) -> Setup {
        Setup {
            n,
            layout,
            progressive: false,
            server_batch: usize::MAX,
            coalesce: RELAY_COALESCE,
        }
    }

    /// The writers client `i` ends with (keys 2..): N-1 announced at once, or one at the start
    /// and one per peer.
    fn writers(&self) -> usize {
        let peers = match self.layout {
            Layout::Shared | Layout::Pong => self.n - 1,
            Layout::Pairs => 1,
        };
        if self.progressive {
            1 + peers
        } else {
            self.n - 1
        }
    }

    /// Every endpoint client `i` announces, in order.
    fn plan(&self, i: usize) -> Vec<Planned> {
        let reader = |key: u32, partitions: Vec<String>| Planned {
            guid: Guid::new(
                prefix(i),
                EntityId::new(key, entity_kind::USER_READER_WITH_KEY),
            ),
            partitions,
            at_start: true,
        };
        if self.layout == Layout::Pong {
            let mut out = vec![reader(1, vec![]), reader(2, own_partition(i))];
            out.push(Planned {
                guid: writer_guid(i, 0),
                partitions: vec![],
                at_start: true,
            });
            // The pong writer for peer j has key 3 + j, so both modes announce the same set.
            out.extend((0..self.n).filter(|&j| j != i).map(|j| Planned {
                guid: writer_guid(i, 1 + j),
                partitions: own_partition(j),
                at_start: !self.progressive,
            }));
            return out;
        }
        let at_start = if self.progressive { 1 } else { self.writers() };
        let mut out = vec![reader(1, vec![])];
        out.extend((0..self.writers()).map(|k| Planned {
            guid: writer_guid(i, k),
            partitions: vec![],
            at_start: k < at_start,
        }));
        out
    }
}

fn announce(c: &mut DiscoveryServerClient, topic: &str, e: &Planned, now: Instant) {
    if e.guid.entity_id.is_writer() {
        let mut w = DiscoveredWriterData::new(e.guid, topic, "T");
        w.qos.partition = Partition(e.partitions.clone());
        c.announce_writer(w, now);
    } else {
        let mut r = DiscoveredReaderData::new(e.guid, topic, "T");
        r.qos.partition = Partition(e.partitions.clone());
        c.announce_reader(r, now);
    }
}

fn writer_guid(i: usize, k: usize) -> Guid {
    Guid::new(
        prefix(i),
        EntityId::new(2 + k as u32, entity_kind::USER_WRITER_WITH_KEY),
    )
}

#[derive(Debug)]
struct Outcome {
    relay_checks: u64,
    relayed: u64,
    datagrams: u64,
    virtual_time: Duration,
    wall: Duration,
}

struct Net {
    setup: Setup,
    now: Instant,
    server: DiscoveryServerEngine,
    clients: Vec<DiscoveryServerClient>,
    by_locator: HashMap<Locator, usize>,
    /// Endpoints each client was told of (RemoteEndpoint events).
    told: Vec<HashSet<Guid>>,
    flight: Vec<(Locator, Vec<u8>)>,
    relayed: u64,
    datagrams: u64,
    /// Writers each client announced so far.
    announced: Vec<usize>,
    /// What each client announces (`Pong`: the writer for a discovered peer comes from here).
    plans: Vec<Vec<Planned>>,
    /// When each client starts (progressive runs start one every `STAGGER`, as processes a
    /// script launches); before that it neither sends nor receives.
    start: Vec<Instant>,
}

const STAGGER: Duration = Duration::from_millis(1);

impl Net {
    fn new(setup: Setup) -> (Net, Vec<Vec<Planned>>) {
        let Setup { n, layout, .. } = setup;
        let now = epoch();
        let mut server = DiscoveryServerEngine::new(
            DsServerConfig {
                id: 0,
                locators: vec![server_locator()],
                selector: Box::new(SelectAll),
                lease: Duration::from_secs(20),
                wall_clock_nanos: 0,
                backup: false,
                links: vec![],
            },
            now,
        );
        server.set_relay_coalesce(setup.coalesce);
        let mut clients = Vec::new();
        let mut plans = Vec::new();
        for i in 0..n {
            let mut d = SpdpParticipantData::new(prefix(i));
            d.domain_id = Some(0);
            d.metatraffic_unicast_locators = vec![meta(i)];
            let mut c = ds_client(d, now);
            let plan = setup.plan(i);
            for e in plan.iter().filter(|e| e.at_start) {
                announce(&mut c, &layout.topic(i), e, now);
            }
            clients.push(c);
            plans.push(plan);
        }
        let stagger = if setup.progressive {
            STAGGER
        } else {
            Duration::ZERO
        };
        let net = Net {
            start: (0..n).map(|i| now + stagger * i as u32).collect(),
            setup,
            announced: vec![
                if setup.progressive {
                    1
                } else {
                    setup.writers()
                };
                n
            ],
            now,
            server,
            clients,
            by_locator: (0..n).map(|i| (meta(i), i)).collect(),
            told: vec![HashSet::new(); n],
            flight: Vec::new(),
            relayed: 0,
            datagrams: 0,
            plans: plans.clone(),
        };
        (net, plans)
    }

    /// The client with `p`, if any.
    fn by_prefix(&self, p: GuidPrefix) -> Option<usize> {
        (0..self.clients.len()).find(|&j| prefix(j) == p)
    }

    fn collect(&mut self) {
        self.collect_server();
        let mut t = Transmit::new();
        let now = self.now;
        for i in 0..self.clients.len() {
            if self.start[i] > now {
                continue;
            }
            while self.clients[i].poll_transmit(now, &mut t) {
                for to in t.dest.locators().as_slice() {
                    self.flight.push((*to, encode(prefix(i), &t)));
                }
            }
            while let Some(e) = self.clients[i].poll_event() {
                match e {
                    EngineEvent::RemoteEndpoint(info) => {
                        self.told[i].insert(info.guid());
                    }
                    EngineEvent::ParticipantDiscovered(p)
                        if self.setup.progressive
                            && self.setup.layout == Layout::Pong
                            && p.guid_prefix != server_prefix(0) =>
                    {
                        // The pong writer for the new peer, in its partition.
                        let topic = self.setup.layout.topic(i);
                        let j = self.by_prefix(p.guid_prefix);
                        let planned = self.plans[i]
                            .iter()
                            .find(|e| j.is_some_and(|j| e.guid == writer_guid(i, 1 + j)))
                            .cloned();
                        if let Some(e) = planned {
                            announce(&mut self.clients[i], &topic, &e, now);
                        }
                    }
                    EngineEvent::ParticipantDiscovered(p)
                        if self.setup.progressive && p.guid_prefix != server_prefix(0) =>
                    {
                        // The pong's writer for the new peer.
                        let k = self.announced[i];
                        if k < self.setup.writers() {
                            self.announced[i] += 1;
                            let w = DiscoveredWriterData::new(
                                writer_guid(i, k),
                                self.setup.layout.topic(i),
                                "T",
                            );
                            self.clients[i].announce_writer(w, now);
                        }
                    }
                    _ => {}
                }
            }
        }
    }

    fn collect_server(&mut self) {
        let mut t = Transmit::new();
        let now = self.now;
        while self.server.poll_transmit(now, &mut t) {
            let data = t
                .submessages
                .iter()
                .filter(|s| matches!(s, OutSubmessage::Data(_) | OutSubmessage::DataFrag(_)))
                .count() as u64;
            for to in t.dest.locators().as_slice() {
                self.datagrams += 1;
                self.relayed += data;
                self.flight.push((*to, encode(server_prefix(0), &t)));
            }
        }
    }

    fn deliver(&mut self) {
        let mut to_server = 0;
        while !self.flight.is_empty() {
            for (to, bytes) in std::mem::take(&mut self.flight) {
                let rx = MessageReceiver::new(&bytes).unwrap();
                if to == server_locator() {
                    for rs in rx {
                        self.server.handle_submessage(&rs.unwrap(), self.now);
                    }
                    to_server += 1;
                    if to_server % self.setup.server_batch == 0 {
                        self.collect_server();
                    }
                    continue;
                }
                for rs in rx {
                    let rs = rs.unwrap();
                    let Some(&i) = self.by_locator.get(&to) else {
                        continue;
                    };
                    if self.start[i] > self.now {
                        continue;
                    }
                    if rs.dest_prefix != GuidPrefix::UNKNOWN && rs.dest_prefix != prefix(i) {
                        continue;
                    }
                    let Some(e) = writer_of(&rs.submessage) else {
                        continue;
                    };
                    if self.clients[i].owns(e) {
                        self.clients[i].handle_submessage(&rs, self.now);
                    }
                }
            }
            self.collect();
        }
    }

    /// Runs every due timer once after delivering everything in flight; false when nothing is
    /// due before `end`.
    fn step(&mut self, end: Instant) -> bool {
        self.collect();
        self.deliver();
        let now = self.now;
        let next = self
            .clients
            .iter()
            .zip(&self.start)
            .filter_map(|(c, s)| if *s > now { Some(*s) } else { c.poll_timeout() })
            .chain(self.server.poll_timeout())
            .min();
        let Some(t) = next.filter(|t| *t <= end) else {
            self.now = end;
            return false;
        };
        self.now = self.now.max(t);
        let now = self.now;
        if self.server.poll_timeout().is_some_and(|t| t <= now) {
            self.server.handle_timeout(now);
        }
        for (c, s) in self.clients.iter_mut().zip(&self.start) {
            if *s <= now && c.poll_timeout().is_some_and(|t| t <= now) {
                c.handle_timeout(now);
            }
        }
        true
    }
}

/// What client `i` must be told: every endpoint of every other client on its topic that one of
/// its own endpoints of the other kind can match by partition. The layouts use exact names
/// only, so lists match when they share a name (the default partition is the empty list).
fn expected(layout: Layout, plans: &[Vec<Planned>], i: usize) -> HashSet<Guid> {
    let meet = |a: &[String], b: &[String]| {
        (a.is_empty() && b.is_empty()) || a.iter().any(|x| b.contains(x))
    };
    (0..plans.len())
        .filter(|&j| j != i && layout.topic(j) == layout.topic(i))
        .flat_map(|j| plans[j].iter())
        .filter(|h| {
            plans[i].iter().any(|g| {
                g.guid.entity_id.is_writer() != h.guid.entity_id.is_writer()
                    && meet(&g.partitions, &h.partitions)
            })
        })
        .map(|h| h.guid)
        .collect()
}

fn run(setup: Setup) -> Outcome {
    let Setup { n, layout, .. } = setup;
    let started = Instant::now();
    let (mut net, endpoints) = Net::new(setup);
    let want: Vec<HashSet<Guid>> = (0..n).map(|i| expected(layout, &endpoints, i)).collect();
    let start = net.now;
    let limit = start + Duration::from_secs(60);
    loop {
        let more = net.step(limit);
        if (0..n).all(|i| net.told[i].len() >= want[i].len()) || !more {
            break;
        }
    }
    for (i, (want, told)) in want.iter().zip(&net.told).enumerate() {
        let missing = want.difference(told).count();
        let extra: Vec<&Guid> = told.difference(want).collect();
        assert!(
            !want.is_empty(),
            "{layout:?} n={n}: client {i} needs nothing"
        );
        assert_eq!(
            missing, 0,
            "{layout:?} n={n}: client {i} missed {missing} endpoints"
        );
        assert!(
            extra.is_empty(),
            "{layout:?} n={n}: client {i} was told of unrelated endpoints {extra:?}"
        );
    }
    let o = Outcome {
        relay_checks: net.server.counters().relay_checks,
        relayed: net.relayed,
        datagrams: net.datagrams,
        virtual_time: net.now - start,
        wall: started.elapsed(),
    };
    println!(
        "{layout:?} n={n} progressive={} server batch={} coalesce={:?}: pairs to tell {}, relay checks {}, DATA written {}, datagrams {}, \
         virtual {:?}, wall {:?}",
        setup.progressive,
        if setup.server_batch == usize::MAX {
            "all".to_string()
        } else {
            setup.server_batch.to_string()
        },
        setup.coalesce,
        net.told.iter().map(|w| w.len()).sum::<usize>(),
        o.relay_checks,
        o.relayed,
        o.datagrams,
        o.virtual_time,
        o.wall
    );
    o
}

/// The server considers each (client, endpoint) pair it must relay a bounded number of times.
fn assert_linear(n: usize, layout: Layout) {
    let o = run(Setup::upfront(n, layout));
    let pairs = match layout {
        Layout::Shared => n * (n - 1) * n,
        Layout::Pairs => n * n,
        Layout::Pong => 4 * n * (n - 1),
    } as u64;
    assert!(
        o.relay_checks <= 3 * pairs,
        "{layout:?} n={n}: {} relay checks for {pairs} pairs to tell",
        o.relay_checks
    );
}

#[test]
fn server_work_is_linear_in_what_it_relays() {
    assert_linear(12, Layout::Shared);
    assert_linear(24, Layout::Shared);
    assert_linear(24, Layout::Pairs);
    assert_linear(24, Layout::Pong);
}

/// ddsperf's pong shape, with writers created as peers are discovered: each client is told of
/// the 4 endpoints per peer it can match (checked in `run`), not the N per peer on its topic, so
/// the server writes a small fraction of what the same clients without partitions cost.
#[test]
fn partitions_keep_what_clients_are_told_linear() {
    let setup = |layout| Setup {
        n: 24,
        layout,
        progressive: true,
        server_batch: 64,
        coalesce: RELAY_COALESCE,
    };
    let pong = run(setup(Layout::Pong));
    let shared = run(setup(Layout::Shared));
    assert!(
        pong.relayed * 3 < shared.relayed,
        "partitioned clients were written {} samples, the same clients without partitions {}",
        pong.relayed,
        shared.relayed
    );
}

/// Clients starting a millisecond apart, writers created one per discovered peer: a server that
/// holds a client's relays for RELAY_COALESCE writes fewer, fuller datagrams (a third fewer at least) than
/// one that sends them at once, even polled after every datagram it receives.
#[test]
fn a_busy_server_batches_its_relays() {
    let setup = |server_batch, coalesce| Setup {
        n: 16,
        layout: Layout::Shared,
        progressive: true,
        server_batch,
        coalesce,
    };
    let each = run(setup(1, Duration::ZERO));
    let batched = run(setup(1, RELAY_COALESCE));
    assert!(
        batched.datagrams * 3 < each.datagrams * 2,
        "batched {} datagrams, unbatched {}",
        batched.datagrams,
        each.datagrams
    );
}

#[test]
#[ignore = "a report: run in release with --nocapture"]
fn scale_report() {
    for n in [10, 50, 100] {
        run(Setup::upfront(n, Layout::Pairs));
        run(Setup::upfront(n, Layout::Shared));
        run(Setup::upfront(n, Layout::Pong));
        run(Setup {
            n,
            layout: Layout::Pong,
            progressive: true,
            server_batch: 64,
            coalesce: RELAY_COALESCE,
        });
        for (server_batch, coalesce) in [
            (1, Duration::ZERO),
            (1, RELAY_COALESCE),
            (64, RELAY_COALESCE),
        ] {
            run(Setup {
                n,
                layout: Layout::Shared,
                progressive: true,
                server_batch,
                coalesce,
            });
        }
    }
}
