//! A deterministic simulated network for the reliability state machines.
//!
//! [`Sim`] connects one [`WriterCore`] to any number of [`ReaderCore`]s. Datagrams are the
//! cores' [`Transmit`]s (owned submessages, no bytes), delayed, lost, duplicated and reordered
//! by a seeded [`XorShift`] on a virtual clock that starts at a fixed [`epoch`]. Everything is
//! reproducible from the seed; a failing seed is a test case.
//!
//! The harness plays the runtime's part: it polls transmits after every input, routes them by
//! destination GUID, applies INFO_TS while walking a datagram, and calls `handle_timeout` when
//! a core's `poll_timeout` expires. It also enforces the MTU: datagrams larger than
//! [`NetConfig::mtu`] are counted in [`NetStats::oversize`] and dropped.
//!
//! A [`Bottleneck`] can sit on the writer → reader path: a FIFO drained at a fixed rate with a
//! byte limit (tail drop, like a `tbf` qdisc), which best-effort cross traffic keeps busy.
//! Datagrams larger than its link MTU travel as IP fragments; losing one loses the datagram.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use crate::reader::{Delivered, ReaderConfig, ReaderCore, Verdict};
use crate::types::{
    entity_kind, EntityId, Guid, GuidPrefix, Locator, Locators, SequenceNumber, Timestamp,
};
use crate::wire::{PayloadKind, Submessage};
use crate::writer::{Destination, OutSubmessage, Transmit, WriteError, WriterConfig, WriterCore};

/// A transmit as the datagram a runtime would send from participant `from` (INFO_DST first
/// when the transmit is addressed to one participant): what tests hand to `MessageReceiver`.
pub fn encode_transmit(from: GuidPrefix, t: &Transmit) -> Vec<u8> {
    let mut buf = Vec::new();
    let mut scratch = Vec::new();
    let mut m = crate::wire::MessageBuilder::new(&mut buf, from);
    if let Some(dst) = t.dest.info_dst() {
        m.submessage(&Submessage::InfoDst(dst));
    }
    for sm in &t.submessages {
        m.submessage(&sm.as_submessage(&mut scratch));
    }
    buf
}

/// The fixed origin of virtual time (captured once per process).
pub fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

/// A tiny xorshift64* generator: deterministic, no dependencies, good enough for fault
/// injection.
#[derive(Debug, Clone)]
pub struct XorShift(u64);

impl XorShift {
    /// Seeds the generator (any seed; 0 is remapped).
    pub fn new(seed: u64) -> Self {
        XorShift(seed ^ 0x9e37_79b9_7f4a_7c15 | 1)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A uniform value in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && self.unit() < p
    }

    /// A uniform value in `[0, n)` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next_u64() % n
        }
    }
}

/// Fault model of the simulated network (applied per datagram, both directions).
#[derive(Debug, Clone)]
pub struct NetConfig {
    /// Seed of the fault generator.
    pub seed: u64,
    /// Probability a datagram is lost.
    pub loss: f64,
    /// Probability a datagram is delivered twice.
    pub duplicate: f64,
    /// Probability a datagram is delayed by up to `reorder_delay` extra.
    pub reorder: f64,
    /// One-way latency.
    pub latency: Duration,
    /// Maximum extra delay of a reordered datagram.
    pub reorder_delay: Duration,
    /// Largest datagram carried; larger ones are dropped and counted.
    pub mtu: usize,
    /// A rate-limited, tail-dropping queue on the writer → reader path (`None`: no limit).
    pub bottleneck: Option<Bottleneck>,
}

/// A bandwidth-limited link with a finite FIFO, shared with best-effort cross traffic.
///
/// Datagrams (and cross-traffic packets) enter the queue if their bytes fit under
/// `queue_bytes`, else they are dropped; the queue drains at `rate` bytes per second, so a
/// datagram's delay is the backlog ahead of it. Sizes count 28 bytes of IP/UDP headers; a
/// datagram over `link_mtu` is split into IP fragments that are queued (or dropped) one by one.
#[derive(Debug, Clone)]
pub struct Bottleneck {
    /// Drain rate, bytes per second.
    pub rate: f64,
    /// Queue limit in bytes.
    pub queue_bytes: f64,
    /// Cross traffic offered to the same queue, bytes per second (0: none).
    pub cross_rate: f64,
    /// Size of one cross-traffic packet, bytes.
    pub cross_packet: f64,
    /// IP MTU of the link (fragmentation threshold).
    pub link_mtu: usize,
}

impl Bottleneck {
    /// A `mbit` Mbit/s link holding `queue` worth of bytes at that rate, with no cross traffic.
    pub fn new(mbit: f64, queue: Duration) -> Self {
        let rate = mbit * 1e6 / 8.0;
        Bottleneck {
            rate,
            queue_bytes: rate * queue.as_secs_f64(),
            cross_rate: 0.0,
            cross_packet: 1500.0,
            link_mtu: 1500,
        }
    }
}

/// Dynamic state of the [`Bottleneck`] queue: the packets waiting, each with the instant it
/// leaves (and frees its room), like a byte-limited FIFO in front of a token bucket.
#[derive(Debug)]
struct Queue {
    packets: VecDeque<(Instant, f64)>,
    backlog: f64,
    last_departure: Instant,
    next_cross: Instant,
}

impl Queue {
    fn new() -> Self {
        Queue {
            packets: VecDeque::new(),
            backlog: 0.0,
            last_departure: epoch(),
            next_cross: epoch(),
        }
    }

    fn drain_to(&mut self, t: Instant) {
        while let Some(&(d, bytes)) = self.packets.front() {
            if d > t {
                break;
            }
            self.packets.pop_front();
            self.backlog -= bytes;
        }
        if self.packets.is_empty() {
            self.backlog = 0.0;
        }
    }

    /// Queues one packet at `now` if it fits; its departure.
    fn push(&mut self, b: &Bottleneck, now: Instant, bytes: f64) -> Option<Instant> {
        self.drain_to(now);
        if self.backlog + bytes > b.queue_bytes {
            return None;
        }
        let d = self.last_departure.max(now) + Duration::from_secs_f64(bytes / b.rate);
        self.last_departure = d;
        self.backlog += bytes;
        self.packets.push_back((d, bytes));
        Some(d)
    }

    /// Offers a datagram of `size` bytes of UDP payload at `now`; when every fragment fit, the
    /// instant its last fragment leaves the queue.
    fn admit(
        &mut self,
        b: &Bottleneck,
        rng: &mut XorShift,
        now: Instant,
        size: usize,
    ) -> Option<Instant> {
        if b.cross_rate > 0.0 {
            let mean = b.cross_packet / b.cross_rate;
            while self.next_cross <= now {
                let t = self.next_cross;
                self.push(b, t, b.cross_packet);
                // Spacing uniform in [0.5, 1.5) of the mean: no phase locking with the writer.
                let gap = mean * (0.5 + rng.unit());
                self.next_cross = t + Duration::from_secs_f64(gap);
            }
        }
        let per_frag = b.link_mtu.saturating_sub(20).max(8) & !7;
        let mut rest = size + 8;
        let mut last = Some(now);
        loop {
            let chunk = rest.min(per_frag);
            let d = self.push(b, now, (chunk + 20) as f64);
            last = last.and(d);
            rest -= chunk;
            if rest == 0 {
                break;
            }
        }
        last
    }
}

impl Default for NetConfig {
    fn default() -> Self {
        NetConfig {
            seed: 1,
            loss: 0.0,
            duplicate: 0.0,
            reorder: 0.0,
            latency: Duration::from_micros(50),
            reorder_delay: Duration::from_micros(500),
            mtu: 65507,
            bottleneck: None,
        }
    }
}

/// What the simulated network did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NetStats {
    /// Datagrams handed to the network.
    pub sent: u64,
    /// Datagrams lost.
    pub lost: u64,
    /// Extra copies delivered.
    pub duplicated: u64,
    /// Datagrams delayed out of order.
    pub reordered: u64,
    /// Datagrams over the MTU (dropped).
    pub oversize: u64,
    /// Datagrams delivered.
    pub delivered: u64,
    /// Datagrams to an endpoint the network does not know.
    pub misrouted: u64,
    /// Datagrams (of those counted in `lost`) dropped by a full [`Bottleneck`] queue.
    pub congested: u64,
    /// DATA and DATA_FRAG submessages in lost datagrams (any cause).
    pub lost_data: u64,
    /// Datagrams from the writer that carried DATA or DATA_FRAG.
    pub data_datagrams: u64,
    /// Of those, the ones sent to a multicast locator (once for all its readers).
    pub multicast_data: u64,
    /// Size of the largest datagram handed to the network.
    pub largest: usize,
}

/// A sample as a simulated reader received it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Received {
    /// Sequence number.
    pub seq: SequenceNumber,
    /// Payload kind.
    pub kind: PayloadKind,
    /// Payload bytes.
    pub payload: Vec<u8>,
    /// Status info.
    pub status_info: u32,
    /// Source timestamp.
    pub source_timestamp: Option<Timestamp>,
}

/// A reader attached to the simulation, with everything it delivered.
#[derive(Debug)]
pub struct SimReader {
    /// The state machine.
    pub core: ReaderCore,
    /// Delivered samples in delivery order.
    pub received: Vec<Received>,
    /// Whether the simulation still routes datagrams to it (false: "crashed"/silent).
    pub connected: bool,
    /// Multicast locators it listens on (datagrams to them reach it).
    pub multicast: Locators,
    /// Samples the application can still take (`None`: unlimited); at 0 it refuses
    /// ([`Verdict::Refused`]). See [`Sim::give_room`].
    pub room: Option<usize>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum To {
    Writer,
    Reader(usize),
}

#[derive(Debug)]
struct InFlight {
    at: Instant,
    order: u64,
    to: To,
    from: GuidPrefix,
    subs: Vec<OutSubmessage>,
}

impl PartialEq for InFlight {
    fn eq(&self, o: &Self) -> bool {
        (self.at, self.order) == (o.at, o.order)
    }
}
impl Eq for InFlight {}
impl PartialOrd for InFlight {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for InFlight {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.at, self.order).cmp(&(o.at, o.order))
    }
}

/// One writer, N readers, a faulty network and a virtual clock.
#[derive(Debug)]
pub struct Sim {
    /// Current virtual time.
    pub now: Instant,
    /// The writer.
    pub writer: WriterCore,
    /// The readers, by index.
    pub readers: Vec<SimReader>,
    /// Network statistics.
    pub stats: NetStats,
    net: NetConfig,
    rng: XorShift,
    in_flight: BinaryHeap<Reverse<InFlight>>,
    order: u64,
    tx: Transmit,
    queue: Queue,
}

/// GUID prefix of the simulated writer's participant.
pub const WRITER_PREFIX: GuidPrefix = GuidPrefix([1; 12]);

/// A writer GUID for simulations.
pub fn writer_guid() -> Guid {
    Guid::new(
        WRITER_PREFIX,
        EntityId::new(1, entity_kind::USER_WRITER_WITH_KEY),
    )
}

/// The GUID [`Sim::add_reader`] gives reader number `i`.
pub fn reader_guid(i: usize) -> Guid {
    let mut p = [0u8; 12];
    p[..8].copy_from_slice(&(i as u64 + 2).to_be_bytes());
    Guid::new(
        GuidPrefix(p),
        EntityId::new(7, entity_kind::USER_READER_WITH_KEY),
    )
}

fn is_data(s: &OutSubmessage) -> bool {
    matches!(s, OutSubmessage::Data(_) | OutSubmessage::DataFrag(_))
}

fn locators(port: u16) -> Locators {
    std::iter::once(Locator::udpv4(std::net::Ipv4Addr::LOCALHOST, port)).collect()
}

impl Sim {
    /// A simulation of `writer` (its GUID should be [`writer_guid`]) on `net`.
    pub fn new(writer: WriterConfig, net: NetConfig) -> Self {
        Sim {
            now: epoch(),
            writer: WriterCore::new(writer),
            readers: Vec::new(),
            stats: NetStats::default(),
            rng: XorShift::new(net.seed),
            net,
            in_flight: BinaryHeap::new(),
            order: 0,
            tx: Transmit::new(),
            queue: Queue::new(),
        }
    }

    /// Writer defaults for simulations: `WriterConfig::new(writer_guid())`.
    pub fn writer_config() -> WriterConfig {
        WriterConfig::new(writer_guid())
    }

    /// Adds and matches a reader (`reliable`, `durable` as in `WriterCore::add_reader`);
    /// returns its index. Its GUID is [`reader_guid`]`(index)`.
    pub fn add_reader(&mut self, reliable: bool, durable: bool) -> usize {
        let i = self.readers.len();
        self.add_reader_with(ReaderConfig::new(reader_guid(i)), reliable, durable)
    }

    /// Like [`Sim::add_reader`] with a custom configuration (its GUID must be
    /// [`reader_guid`]`(index)`).
    pub fn add_reader_with(&mut self, cfg: ReaderConfig, reliable: bool, durable: bool) -> usize {
        self.add_reader_multicast(cfg, reliable, durable, Locators::new())
    }

    /// Like [`Sim::add_reader_with`], for a reader that also listens on `multicast` (the
    /// writer learns it through `WriterCore::add_reader_with_locators`).
    pub fn add_reader_multicast(
        &mut self,
        cfg: ReaderConfig,
        reliable: bool,
        durable: bool,
        multicast: Locators,
    ) -> usize {
        let i = self.readers.len();
        let guid = cfg.guid;
        let mut core = ReaderCore::new(cfg);
        core.add_writer(self.writer.guid(), locators(7410), reliable, self.now);
        self.writer.add_reader_with_locators(
            guid,
            locators(7411 + i as u16),
            multicast,
            reliable,
            durable,
            self.now,
        );
        self.readers.push(SimReader {
            core,
            received: Vec::new(),
            connected: true,
            multicast,
            room: None,
        });
        self.flush();
        i
    }

    /// Writes a data sample with a source timestamp derived from the virtual clock.
    pub fn write(&mut self, payload: &[u8]) -> Result<SequenceNumber, WriteError> {
        self.write_keyed(payload, None)
    }

    /// Writes a sample of the instance with key hash `key`.
    pub fn write_keyed(
        &mut self,
        payload: &[u8],
        key: Option<[u8; 16]>,
    ) -> Result<SequenceNumber, WriteError> {
        let ts = Timestamp::from_nanos(self.now.duration_since(epoch()).as_nanos() as i64);
        let r = self.writer.write(
            Arc::new(payload.to_vec()),
            key,
            0,
            false,
            Some(ts),
            self.now,
        );
        self.flush();
        r
    }

    /// Writes, running the network while the history is full, for up to `timeout`
    /// (like a DDS writer blocking up to max_blocking_time).
    pub fn write_blocking(
        &mut self,
        payload: &[u8],
        timeout: Duration,
    ) -> Result<SequenceNumber, WriteError> {
        let end = self.now + timeout;
        loop {
            match self.write(payload) {
                Err(WriteError::HistoryFull) if self.now < end => {
                    if !self.step_until(end) {
                        self.now = end;
                    }
                }
                r => return r,
            }
        }
    }

    /// Puts `self.tx` on the network once, to every one of `targets` (several for
    /// multicast: one datagram on the wire, lost or duplicated independently per receiver).
    fn send(&mut self, from: GuidPrefix, targets: &[To]) {
        self.stats.sent += 1;
        self.stats.largest = self.stats.largest.max(self.tx.wire_len());
        if self.tx.wire_len() > self.net.mtu {
            self.stats.oversize += 1;
            return;
        }
        let mut delay = Duration::ZERO;
        let to_readers = targets.iter().any(|t| matches!(t, To::Reader(_)));
        if let (true, Some(b)) = (to_readers, &self.net.bottleneck) {
            match self
                .queue
                .admit(b, &mut self.rng, self.now, self.tx.wire_len())
            {
                Some(d) => delay = d - self.now,
                None => {
                    self.stats.congested += 1;
                    self.lose();
                    return;
                }
            }
        }
        for &to in targets {
            self.send_copy(from, to, delay);
        }
    }

    fn send_copy(&mut self, from: GuidPrefix, to: To, delay: Duration) {
        if self.rng.chance(self.net.loss) {
            self.lose();
            return;
        }
        let copies = if self.rng.chance(self.net.duplicate) {
            self.stats.duplicated += 1;
            2
        } else {
            1
        };
        for _ in 0..copies {
            let mut at = self.now + delay + self.net.latency;
            if self.rng.chance(self.net.reorder) {
                self.stats.reordered += 1;
                at += Duration::from_nanos(
                    self.rng.below(self.net.reorder_delay.as_nanos() as u64 + 1),
                );
            }
            self.order += 1;
            self.in_flight.push(Reverse(InFlight {
                at,
                order: self.order,
                to,
                from,
                subs: self.tx.submessages.clone(),
            }));
        }
    }

    fn lose(&mut self) {
        self.stats.lost += 1;
        self.stats.lost_data += self.tx.submessages.iter().filter(|s| is_data(s)).count() as u64;
    }

    /// Collects every transmit the cores have now and puts it on the network.
    pub fn flush(&mut self) {
        let now = self.now;
        loop {
            let mut tx = std::mem::take(&mut self.tx);
            let more = self.writer.poll_transmit_into(now, &mut tx);
            self.tx = tx;
            if !more {
                break;
            }
            if self.tx.submessages.iter().any(is_data) {
                self.stats.data_datagrams += 1;
                if self.tx.dest.guid().is_none() {
                    self.stats.multicast_data += 1;
                }
            }
            let targets: Vec<To> = match self.tx.dest {
                Destination::Endpoint { guid, .. } => self
                    .readers
                    .iter()
                    .position(|r| r.core.guid() == guid && r.connected)
                    .map(To::Reader)
                    .into_iter()
                    .collect(),
                Destination::Locators(ls) => (0..self.readers.len())
                    .filter(|&i| {
                        let r = &self.readers[i];
                        r.connected
                            && r.multicast
                                .as_slice()
                                .iter()
                                .any(|l| ls.as_slice().contains(l))
                    })
                    .map(To::Reader)
                    .collect(),
            };
            if targets.is_empty() {
                self.stats.misrouted += 1;
            } else {
                self.send(WRITER_PREFIX, &targets);
            }
        }
        for i in 0..self.readers.len() {
            loop {
                let mut tx = std::mem::take(&mut self.tx);
                let more = self.readers[i].core.poll_transmit_into(now, &mut tx);
                self.tx = tx;
                if !more {
                    break;
                }
                if !self.readers[i].connected {
                    continue;
                }
                if self.tx.dest.guid() == Some(self.writer.guid()) {
                    let from = self.readers[i].core.guid().prefix;
                    self.send(from, &[To::Writer]);
                } else {
                    self.stats.misrouted += 1;
                }
            }
        }
    }

    fn deliver(&mut self, d: InFlight) {
        self.stats.delivered += 1;
        let now = self.now;
        let mut scratch = Vec::new();
        let mut ts = None;
        match d.to {
            To::Writer => {
                for sm in &d.subs {
                    match sm.as_submessage(&mut scratch) {
                        Submessage::AckNack(a) => {
                            self.writer.on_acknack(d.from, &a, now);
                        }
                        Submessage::NackFrag(n) => self.writer.on_nack_frag(d.from, &n, now),
                        _ => {}
                    }
                }
            }
            To::Reader(i) => {
                let SimReader {
                    core,
                    received,
                    connected,
                    room,
                    ..
                } = &mut self.readers[i];
                if !*connected {
                    return;
                }
                let mut cb = |s: Delivered<'_>| {
                    match room {
                        Some(0) => return Verdict::Refused,
                        Some(n) => *n -= 1,
                        None => {}
                    }
                    received.push(Received {
                        seq: s.seq,
                        kind: s.kind,
                        payload: s.payload.into_owned(),
                        status_info: s.status_info,
                        source_timestamp: s.source_timestamp,
                    });
                    Verdict::Accepted
                };
                for sm in &d.subs {
                    match sm.as_submessage(&mut scratch) {
                        Submessage::InfoTs(t) => ts = t,
                        Submessage::Data(x) => core.on_data(d.from, &x, ts, now, &mut cb),
                        Submessage::DataFrag(x) => core.on_data_frag(d.from, &x, ts, now, &mut cb),
                        Submessage::Heartbeat(x) => core.on_heartbeat(d.from, &x, now, &mut cb),
                        Submessage::HeartbeatFrag(x) => core.on_heartbeat_frag(d.from, &x, now),
                        Submessage::Gap(x) => core.on_gap(d.from, &x, now, &mut cb),
                        _ => {}
                    }
                }
            }
        }
    }

    fn next_event(&self) -> Option<Instant> {
        let net = self.in_flight.peek().map(|r| r.0.at);
        let w = self.writer.poll_timeout();
        let r = self
            .readers
            .iter()
            .filter_map(|r| r.core.poll_timeout())
            .min();
        [net, w, r].into_iter().flatten().min()
    }

    /// Processes the next event if it is due no later than `limit`; false when there is none.
    pub fn step_until(&mut self, limit: Instant) -> bool {
        self.flush();
        let Some(t) = self.next_event() else {
            return false;
        };
        if t > limit {
            return false;
        }
        self.now = self.now.max(t);
        let now = self.now;
        while self.in_flight.peek().is_some_and(|r| r.0.at <= now) {
            if let Some(Reverse(d)) = self.in_flight.pop() {
                self.deliver(d);
                self.flush();
            }
        }
        if self.writer.poll_timeout().is_some_and(|t| t <= now) {
            self.writer.handle_timeout(now);
        }
        for r in &mut self.readers {
            if r.core.poll_timeout().is_some_and(|t| t <= now) {
                r.core.handle_timeout(now);
            }
        }
        self.flush();
        true
    }

    /// Runs for `d` of virtual time.
    pub fn run_for(&mut self, d: Duration) {
        let end = self.now + d;
        while self.step_until(end) {}
        self.now = self.now.max(end);
    }

    /// Runs until nothing is in flight and no timer is pending, or `limit` of virtual time
    /// passed; true when quiescent.
    pub fn run_until_quiescent(&mut self, limit: Duration) -> bool {
        let end = self.now + limit;
        while self.step_until(end) {}
        self.next_event().is_none()
    }

    /// Lets reader `i` take `n` more samples (see [`SimReader::room`]) and tells its core
    /// ([`ReaderCore::resume`]), as a runtime does after the application takes samples.
    pub fn give_room(&mut self, i: usize, n: usize) {
        let r = &mut self.readers[i];
        r.room = Some(r.room.unwrap_or(0) + n);
        r.core.resume(self.now);
        self.flush();
    }

    /// Sequence numbers reader `i` received, in delivery order.
    pub fn seqs(&self, i: usize) -> Vec<SequenceNumber> {
        self.readers[i].received.iter().map(|r| r.seq).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xorshift_is_deterministic_and_roughly_uniform() {
        let mut a = XorShift::new(7);
        let mut b = XorShift::new(7);
        let mut hits = 0;
        for _ in 0..10_000 {
            assert_eq!(a.next_u64(), b.next_u64());
            if a.chance(0.3) {
                hits += 1;
            }
            b.chance(0.3);
        }
        assert!((2700..3300).contains(&hits), "{hits}");
    }

    #[test]
    fn lossless_reliable_delivery() {
        let mut sim = Sim::new(Sim::writer_config(), NetConfig::default());
        sim.add_reader(true, false);
        // Let the reader answer the first heartbeat (the writer holds data until it does:
        // with KEEP_LAST 1 it would otherwise replace samples before sending them).
        assert!(sim.run_until_quiescent(Duration::from_secs(1)));
        for i in 0..10u8 {
            sim.write(&[0, 1, 0, 0, i]).unwrap();
        }
        assert!(sim.run_until_quiescent(Duration::from_secs(5)));
        assert_eq!(sim.seqs(0), (1..=10).collect::<Vec<_>>());
        assert!(sim.writer.all_acked());
        assert_eq!(sim.stats.oversize, 0);
    }
}
