//! The in-process transport: participants of one process exchange datagrams through memory,
//! with no socket, so the whole runtime runs under a plain `cargo test` (no root, no network
//! namespace) and with faults no real link on this machine can produce (there is no netem).
//!
//! An [`InProcessNetwork`] is a cheap `Clone` handle on one isolated network: participants see
//! only those on the same network (and domain), so each test makes its own and tests run in
//! parallel. Every participant is a *node* with one bounded receive queue and one receive thread
//! that calls the [`DatagramHandler`] exactly as a UDP receive thread does
//! ([`super::recv::on_receive_thread`] holds there). Unicast locators name a node's metatraffic
//! or user port; SPDP goes to a broadcast locator that reaches every other node of the same
//! domain (emulated multicast), and user data may go to the domain's user multicast locator
//! (every node joins it, as every UDP participant joins its domain's user multicast group).
//!
//! # Faults
//! [`FaultConfig`] (per network, or per destination node with
//! [`InProcessNetwork::set_node_faults`]) injects seeded loss, a fixed delay, duplication,
//! reordering and a bandwidth limit. A bandwidth-limited link holds at most
//! [`FaultConfig::link_buffer`] bytes in flight: beyond that [`Transport::try_send_to`] says
//! `WouldBlock` and [`Transport::send_to`] waits, like a UDP socket with a full send buffer in
//! front of a shaped link.
//!
//! # Locators
//! Kind [`locator_kind::TESSERA_INPROC`]; bytes 8..16 of the address hold the network id, so a
//! locator of another network is never reached. Port `2n+1` / `2n+2` is node `n`'s metatraffic /
//! user port; address byte 0 = `0xff` marks the SPDP broadcast and `0xfe` the user multicast
//! group, whose port is the domain id.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};
use tessera_rtps::types::{locator_kind, Locator};

use super::recv::{self, Channel, DatagramHandler, ReceiveStats, Receivers};
use super::udp::{TransportError, TransportLocators, TransportStats};
use super::Transport;

/// Datagrams one node's receive queue holds before further ones are dropped.
pub const QUEUE_DATAGRAMS: usize = 8192;
/// Bytes one node's receive queue holds before further datagrams are dropped (about a UDP
/// receive socket's 8 MiB buffer).
pub const QUEUE_BYTES: usize = 8 << 20;
/// The largest datagram carried (as UDP on loopback).
pub const MAX_DATAGRAM: usize = 65507;

/// Faults injected on datagrams to a node. The default injects none.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FaultConfig {
    /// Seed of the network's random generator (loss, duplication, reordering). Applied when
    /// the configuration is set with [`InProcessNetwork::set_faults`].
    pub seed: u64,
    /// Share of datagrams dropped, 0–100.
    pub loss_percent: f64,
    /// Delay added to every datagram.
    pub delay: Duration,
    /// Share of datagrams delivered twice, 0–100.
    pub duplicate_percent: f64,
    /// Share of datagrams held back by [`FaultConfig::reorder_delay`], so that later ones
    /// overtake them, 0–100.
    pub reorder_percent: f64,
    /// How long a reordered datagram is held back.
    pub reorder_delay: Duration,
    /// Link rate in bytes per second (`None`: unlimited).
    pub bandwidth: Option<u64>,
    /// Bytes a bandwidth-limited link holds in flight before senders must wait.
    pub link_buffer: usize,
}

impl Default for FaultConfig {
    fn default() -> Self {
        FaultConfig {
            seed: 1,
            loss_percent: 0.0,
            delay: Duration::ZERO,
            duplicate_percent: 0.0,
            reorder_percent: 0.0,
            reorder_delay: Duration::from_millis(2),
            bandwidth: None,
            link_buffer: 64 << 10,
        }
    }
}

/// A handle on one isolated in-process network. Cheap to clone; participants created with the
/// same network (and domain) discover each other.
#[derive(Debug, Clone)]
pub struct InProcessNetwork {
    net: Arc<Net>,
}

#[derive(Debug)]
struct Net {
    id: u64,
    nodes: Mutex<Vec<Arc<Node>>>,
    faults: Mutex<FaultConfig>,
    rng: Mutex<u64>,
    dropped: AtomicU64,
    /// Datagrams sent marked with each DSCP (the TOS byte >> 2; 0: unmarked, not counted).
    marked: [AtomicU64; 64],
}

impl Default for InProcessNetwork {
    fn default() -> Self {
        Self::new()
    }
}

impl InProcessNetwork {
    /// A new network, isolated from every other.
    pub fn new() -> InProcessNetwork {
        static NEXT_ID: AtomicU64 = AtomicU64::new(1);
        let f = FaultConfig::default();
        InProcessNetwork {
            net: Arc::new(Net {
                id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
                nodes: Mutex::new(Vec::new()),
                faults: Mutex::new(f),
                rng: Mutex::new(f.seed),
                dropped: AtomicU64::new(0),
                marked: std::array::from_fn(|_| AtomicU64::new(0)),
            }),
        }
    }

    /// Datagrams sent so far marked with DSCP `dscp` (1..=63: a writer's TRANSPORT_PRIORITY,
    /// see [`super::tos_of_priority`]), as a router would see them.
    pub fn marked_datagrams(&self, dscp: u8) -> u64 {
        self.net
            .marked
            .get(usize::from(dscp))
            .map_or(0, |c| c.load(Ordering::Relaxed))
    }

    /// Sets the faults of every link (except nodes with their own) and reseeds the generator.
    pub fn set_faults(&self, f: FaultConfig) {
        *self.net.faults.lock() = f;
        *self.net.rng.lock() = f.seed;
    }

    /// Sets the faults of datagrams *to* node `node` (nodes are numbered from 0 in the order
    /// their transports were created). Returns false if there is no such node.
    pub fn set_node_faults(&self, node: usize, f: FaultConfig) -> bool {
        match self.net.nodes.lock().get(node) {
            Some(n) => {
                *n.faults.lock() = Some(f);
                true
            }
            None => false,
        }
    }

    /// Datagrams dropped on this network (injected loss and full receive queues).
    pub fn dropped(&self) -> u64 {
        self.net.dropped.load(Ordering::Relaxed)
    }

    /// The number of nodes created on this network so far.
    pub fn nodes(&self) -> usize {
        self.net.nodes.lock().len()
    }
}

/// One participant's end of the network: its receive queue.
#[derive(Debug)]
struct Node {
    domain: u32,
    faults: Mutex<Option<FaultConfig>>,
    queue: Mutex<Queue>,
    cv: Condvar,
    closed: AtomicBool,
    stats: Arc<ReceiveStats>,
}

#[derive(Debug, Default)]
struct Queue {
    heap: BinaryHeap<Reverse<Pending>>,
    bytes: usize,
    seq: u64,
    /// When a bandwidth-limited link finishes sending what it holds.
    link_free_at: Option<Instant>,
}

#[derive(Debug)]
struct Pending {
    at: Instant,
    seq: u64,
    data: Vec<u8>,
    from: Locator,
    channel: Channel,
}

impl PartialEq for Pending {
    fn eq(&self, o: &Self) -> bool {
        (self.at, self.seq) == (o.at, o.seq)
    }
}
impl Eq for Pending {}
impl PartialOrd for Pending {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Pending {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.at, self.seq).cmp(&(o.at, o.seq))
    }
}

/// SplitMix64: small, seedable, good enough for fault decisions.
fn next_random(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl Net {
    /// True with probability `percent`/100.
    fn chance(&self, percent: f64) -> bool {
        if percent <= 0.0 {
            return false;
        }
        let r = next_random(&mut self.rng.lock());
        (r >> 11) as f64 / (1u64 << 53) as f64 * 100.0 < percent
    }

    fn locator(&self, port: u32) -> Locator {
        let mut address = [0u8; 16];
        address[8..].copy_from_slice(&self.id.to_be_bytes());
        Locator {
            kind: locator_kind::TESSERA_INPROC,
            port,
            address,
        }
    }

    fn broadcast(&self, domain: u32) -> Locator {
        let mut l = self.locator(domain);
        l.address[0] = 0xff;
        l
    }

    fn user_multicast(&self, domain: u32) -> Locator {
        let mut l = self.locator(domain);
        l.address[0] = 0xfe;
        l
    }

    fn owns(&self, l: &Locator) -> bool {
        l.kind == locator_kind::TESSERA_INPROC && l.address[8..] == self.id.to_be_bytes()
    }
}

/// A participant's in-process transport. See the module docs.
#[derive(Debug)]
pub struct InProcessTransport {
    net: Arc<Net>,
    node: Arc<Node>,
    index: usize,
    locators: TransportLocators,
    spdp: [Locator; 1],
    started: AtomicBool,
    stats: TransportStats,
}

impl InProcessTransport {
    fn count_mark(&self, tos: u8) {
        if let Some(c) = self
            .net
            .marked
            .get(usize::from(tos >> 2))
            .filter(|_| tos >> 2 != 0)
        {
            c.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Joins `network` as a new node in `domain`.
    pub fn new(network: &InProcessNetwork, domain: u32) -> InProcessTransport {
        let net = network.net.clone();
        let node = Arc::new(Node {
            domain,
            faults: Mutex::new(None),
            queue: Mutex::new(Queue::default()),
            cv: Condvar::new(),
            closed: AtomicBool::new(false),
            stats: Arc::new(ReceiveStats::default()),
        });
        let index = {
            let mut nodes = net.nodes.lock();
            nodes.push(node.clone());
            nodes.len() - 1
        };
        let meta = 2 * index as u32 + 1;
        let locators = TransportLocators {
            metatraffic_unicast: net.locator(meta),
            default_unicast: net.locator(meta + 1),
            metatraffic_multicast: None,
            default_multicast: Some(net.user_multicast(domain)),
        };
        let spdp = [net.broadcast(domain)];
        let stats = TransportStats {
            recv: node.stats.clone(),
            ..TransportStats::default()
        };
        InProcessTransport {
            net,
            node,
            index,
            locators,
            spdp,
            started: AtomicBool::new(false),
            stats,
        }
    }

    /// This node's number on its network (see [`InProcessNetwork::set_node_faults`]).
    pub fn node_index(&self) -> usize {
        self.index
    }

    fn send(&self, buf: &[u8], dest: &Locator, block: bool) -> io::Result<()> {
        if !self.net.owns(dest) {
            self.stats.send.ignored.fetch_add(1, Ordering::Relaxed);
            return Ok(());
        }
        if buf.len() > MAX_DATAGRAM {
            self.stats.send.errors.fetch_add(1, Ordering::Relaxed);
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "datagram larger than the in-process maximum",
            ));
        }
        if dest.address[0] == 0xff || dest.address[0] == 0xfe {
            // Emulated multicast: every other live node of the domain (SPDP, or user data on
            // the group every node joined).
            let (channel, from) = if dest.address[0] == 0xff {
                (Channel::SpdpMulticast, self.locators.metatraffic_unicast)
            } else {
                (Channel::UserMulticast, self.locators.default_unicast)
            };
            let targets: Vec<Arc<Node>> = self
                .net
                .nodes
                .lock()
                .iter()
                .filter(|n| n.domain == dest.port && !Arc::ptr_eq(n, &self.node))
                .cloned()
                .collect();
            for n in targets {
                // Multicast never waits for a shaped link (nor does IP multicast).
                let _ = self.deliver(&n, buf, from, channel, false, true);
            }
            return self.sent(buf);
        }
        let Some(index) = (dest.port as usize).checked_sub(1).map(|p| p / 2) else {
            self.stats.send.ignored.fetch_add(1, Ordering::Relaxed);
            return Ok(());
        };
        let Some(node) = self.net.nodes.lock().get(index).cloned() else {
            self.stats.send.ignored.fetch_add(1, Ordering::Relaxed);
            return Ok(());
        };
        let (channel, from) = if dest.port % 2 == 1 {
            (
                Channel::MetatrafficUnicast,
                self.locators.metatraffic_unicast,
            )
        } else {
            (Channel::UserUnicast, self.locators.default_unicast)
        };
        self.deliver(&node, buf, from, channel, block, false)?;
        self.sent(buf)
    }

    fn sent(&self, buf: &[u8]) -> io::Result<()> {
        self.stats.send.record_sent(buf.len());
        Ok(())
    }

    fn drop_one(&self, why: &str) {
        self.stats.send.dropped.fetch_add(1, Ordering::Relaxed);
        self.net.dropped.fetch_add(1, Ordering::Relaxed);
        tracing::debug!(network = self.net.id, why, "in-process datagram dropped");
    }

    /// Puts `buf` in `node`'s queue under the link's faults. With a bandwidth limit, a full
    /// link waits (`block`), says `WouldBlock`, or (`force`, multicast) drops the datagram.
    fn deliver(
        &self,
        node: &Node,
        buf: &[u8],
        from: Locator,
        channel: Channel,
        block: bool,
        force: bool,
    ) -> io::Result<()> {
        if node.closed.load(Ordering::Acquire) {
            // Nobody listens any more: lost, as on a closed port.
            return Ok(());
        }
        let f = node
            .faults
            .lock()
            .unwrap_or_else(|| *self.net.faults.lock());
        if self.net.chance(f.loss_percent) {
            self.drop_one("injected loss");
            return Ok(());
        }
        let copies = if self.net.chance(f.duplicate_percent) {
            2
        } else {
            1
        };
        let reorder = self.net.chance(f.reorder_percent);
        let mut q = loop {
            let q = node.queue.lock();
            let now = Instant::now();
            let Some(bw) = f.bandwidth.filter(|b| *b > 0) else {
                break q;
            };
            let backlog = q
                .link_free_at
                .map_or(Duration::ZERO, |t| t.saturating_duration_since(now));
            // As a UDP socket's send buffer: a datagram of any size is taken while the buffer
            // is not full (so small datagrams cannot starve a large one).
            let held = backlog.as_secs_f64() * bw as f64;
            if held < f.link_buffer as f64 {
                break q;
            }
            if force {
                // Multicast waits for no receiver: what a full link cannot take is lost there
                // (as at a switch port), rather than queued for an ever later delivery.
                drop(q);
                self.drop_one("multicast to a full link");
                return Ok(());
            }
            if !block {
                self.stats.send.would_block.fetch_add(1, Ordering::Relaxed);
                return Err(io::ErrorKind::WouldBlock.into());
            }
            // Wait until the link has drained below its buffer.
            let excess = held - f.link_buffer as f64;
            drop(q);
            std::thread::sleep(Duration::from_secs_f64((excess / bw as f64).max(1e-4)));
        };
        let now = Instant::now();
        let mut at = now + f.delay;
        if let Some(bw) = f.bandwidth.filter(|b| *b > 0) {
            let start = q.link_free_at.map_or(now, |t| t.max(now));
            let done = start + Duration::from_secs_f64(buf.len() as f64 / bw as f64);
            q.link_free_at = Some(done);
            at = done + f.delay;
        }
        if reorder {
            at += f.reorder_delay;
        }
        for _ in 0..copies {
            if q.heap.len() >= QUEUE_DATAGRAMS || q.bytes + buf.len() > QUEUE_BYTES {
                drop(q);
                self.drop_one("receive queue full");
                return Ok(());
            }
            q.seq += 1;
            let seq = q.seq;
            q.bytes += buf.len();
            q.heap.push(Reverse(Pending {
                at,
                seq,
                data: buf.to_vec(),
                from,
                channel,
            }));
        }
        drop(q);
        node.cv.notify_one();
        Ok(())
    }
}

impl Drop for InProcessTransport {
    fn drop(&mut self) {
        self.node.closed.store(true, Ordering::Release);
        let mut q = self.node.queue.lock();
        q.heap.clear();
        q.bytes = 0;
    }
}

impl Transport for InProcessTransport {
    fn name(&self) -> &'static str {
        "inproc"
    }

    fn kinds(&self) -> &[i32] {
        &[locator_kind::TESSERA_INPROC]
    }

    fn reaches(&self, l: &Locator) -> bool {
        self.net.owns(l)
    }

    fn locators(&self) -> TransportLocators {
        self.locators
    }

    fn spdp_destinations(&self) -> &[Locator] {
        &self.spdp
    }

    fn send_to(&self, buf: &[u8], dest: &Locator) -> io::Result<()> {
        self.send(buf, dest, true)
    }

    fn try_send_to(&self, buf: &[u8], dest: &Locator) -> io::Result<()> {
        self.send(buf, dest, false)
    }

    fn send_to_marked(&self, buf: &[u8], dest: &Locator, tos: u8) -> io::Result<()> {
        self.count_mark(tos);
        self.send(buf, dest, true)
    }

    fn try_send_to_marked(&self, buf: &[u8], dest: &Locator, tos: u8) -> io::Result<()> {
        let r = self.send(buf, dest, false);
        if r.is_ok() {
            self.count_mark(tos);
        }
        r
    }

    fn start(&self, handler: Arc<dyn DatagramHandler>) -> Result<Receivers, TransportError> {
        if self.started.swap(true, Ordering::SeqCst) {
            return Err(TransportError::AlreadyStarted);
        }
        let stop = Arc::new(AtomicBool::new(false));
        let mut r = Receivers::new(stop.clone());
        let node = self.node.clone();
        let h = std::thread::Builder::new()
            .name(format!("tessera-inproc{}-{}", self.net.id, self.index))
            .spawn(move || receive_loop(&node, &*handler, &stop))
            .map_err(|source| TransportError::Socket {
                what: "start in-process receive thread".into(),
                source,
            })?;
        let node = self.node.clone();
        r.add(
            h,
            Box::new(move || {
                // Under the lock, so the thread is either before its stop check or waiting.
                let _q = node.queue.lock();
                node.cv.notify_all();
            }),
        );
        Ok(r)
    }

    fn max_datagram_size(&self) -> usize {
        MAX_DATAGRAM
    }

    fn stats(&self) -> &TransportStats {
        &self.stats
    }
}

/// A node's receive thread: delivers each datagram when it is due, in due order.
fn receive_loop(node: &Node, handler: &dyn DatagramHandler, stop: &AtomicBool) {
    recv::mark_receive_thread();
    let mut q = node.queue.lock();
    loop {
        if stop.load(Ordering::SeqCst) {
            return;
        }
        let now = Instant::now();
        let due = match q.heap.peek() {
            Some(Reverse(p)) if p.at <= now => true,
            Some(Reverse(p)) => {
                let at = p.at;
                node.cv.wait_until(&mut q, at);
                false
            }
            None => {
                node.cv.wait(&mut q);
                false
            }
        };
        if !due {
            continue;
        }
        let mut channel = None;
        while let Some(Reverse(p)) = q.heap.peek() {
            if p.at > now || channel.is_some_and(|c| c != p.channel) {
                break;
            }
            let Some(Reverse(p)) = q.heap.pop() else {
                break;
            };
            q.bytes -= p.data.len();
            channel = Some(p.channel);
            drop(q);
            node.stats.datagrams.fetch_add(1, Ordering::Relaxed);
            node.stats
                .bytes
                .fetch_add(p.data.len() as u64, Ordering::Relaxed);
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                handler.on_datagram(&p.data, p.from, p.channel)
            }));
            if r.is_err() {
                node.stats.handler_panics.fetch_add(1, Ordering::Relaxed);
                tracing::error!("datagram handler panicked (in-process)");
            }
            q = node.queue.lock();
        }
        if let Some(c) = channel {
            node.stats.batches.fetch_add(1, Ordering::Relaxed);
            drop(q);
            handler.on_batch_end(c);
            q = node.queue.lock();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_is_seeded() {
        let (mut a, mut b) = (7u64, 7u64);
        let x: Vec<u64> = (0..4).map(|_| next_random(&mut a)).collect();
        let y: Vec<u64> = (0..4).map(|_| next_random(&mut b)).collect();
        assert_eq!(x, y);
        assert_ne!(x[0], x[1]);
    }

    #[test]
    fn networks_are_isolated() {
        let (n1, n2) = (InProcessNetwork::new(), InProcessNetwork::new());
        let a = InProcessTransport::new(&n1, 0);
        let b = InProcessTransport::new(&n2, 0);
        assert!(a.reaches(&a.locators().default_unicast));
        assert!(!a.reaches(&b.locators().default_unicast));
        assert!(!a.reaches(&Locator::udpv4(std::net::Ipv4Addr::LOCALHOST, 7411)));
        // A send to another network's locator is skipped, not delivered.
        a.send_to(b"x", &b.locators().default_unicast).unwrap();
        assert_eq!(a.stats().send.ignored.load(Ordering::Relaxed), 1);
        assert_eq!(b.node.queue.lock().heap.len(), 0);
    }
}
