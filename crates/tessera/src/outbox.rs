//! The glue between the sans-IO reliability cores and the sockets: QoS → core configuration,
//! draining a core's transmits into datagrams, and the per-destination send queues.
//!
//! # Who may wait for the network
//! Every send is non-blocking ([`crate::transport::Transport::try_send_to`]). A datagram that a
//! destination cannot take now (a full socket buffer in front of a slow or shaped link) goes
//! into that destination's bounded queue in [`SendQueues`], and later sends to the same
//! destination queue behind it, so order is kept. Receive and event threads therefore never
//! block on the network: one slow peer cannot stall ACKNACK processing, repairs or SPDP
//! replies for the others. Queues are drained by the event thread (non-blocking, every pass
//! while anything is queued) and by application threads after a `write`, which — holding no
//! endpoint lock by then — wait for the blocked destinations to take their datagrams
//! ([`wait_sent`]): that is the writer's backpressure, and only the writing thread feels it.

use crate::endpoint::{send_datagram, send_datagram_parts, with_send_buf};
use crate::history::HistoryConfig;
use crate::qos::{DataReaderQos, DataWriterQos};
use crate::runtime::RuntimeContext;
use parking_lot::Mutex;
use std::cell::RefCell;
use std::collections::VecDeque;
use std::io;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tessera_rtps::fasthash::FastHashMap;
use tessera_rtps::qos::{DestinationOrder, Durability, History, ReliabilityKind};
use tessera_rtps::reader::ReaderCore;
use tessera_rtps::types::{Guid, GuidPrefix, Locator, Locators};
use tessera_rtps::wire::{spliced_parts, MessageBuilder, Splice, Submessage, HEADER_LEN};
use tessera_rtps::writer::{
    HistoryKind, MulticastPolicy, OutSubmessage, Transmit, WriterConfig, WriterCore,
};
use tessera_rtps::Now;

thread_local! {
    static TRANSMIT: RefCell<(Transmit, Vec<u8>)> = RefCell::new((Transmit::new(), Vec::with_capacity(64)));
    /// The datagrams being bundled on this thread ([`Bundle`]), if one is open.
    static BUNDLE: RefCell<Option<Bundled>> = const { RefCell::new(None) };
}

/// Largest datagram a bundle grows to (the writers' default largest message, Cyclone's).
const BUNDLE_LIMIT: usize = 14_720;

/// While open, the transmits that this thread's writers of one participant produce are not
/// sent one datagram each: those going to the same destinations (locators, INFO_DST, traffic
/// class) share datagrams up to [`BUNDLE_LIMIT`], sent when the bundle closes (dropped) or
/// fills. A node service forwarding the samples of many application writers, each through a
/// network writer of its own, sends them in as few datagrams as one writer's batch would.
/// Transmits of other participants go as usual. Not `Send`: it is this thread's.
pub(crate) struct Bundle {
    _thread_bound: std::marker::PhantomData<*const ()>,
}

/// One datagram being filled.
struct Pending {
    locators: Locators,
    info_dst: Option<GuidPrefix>,
    tos: u8,
    buf: Vec<u8>,
}

struct Bundled {
    /// The participant whose transmits are bundled.
    ctx: Arc<RuntimeContext>,
    pending: Vec<Pending>,
    /// Nested opens on this thread: the outermost close sends.
    depth: usize,
}

impl Bundled {
    fn send_all(self) {
        for p in self.pending {
            send_datagram(&self.ctx, &p.buf, p.locators.as_slice(), p.tos);
        }
    }

    /// Encodes `t` into the datagram for its destination, sending that one first if `t` does
    /// not fit any more.
    fn add(&mut self, t: &Transmit, tos: u8, qos_scratch: &mut Vec<u8>) {
        let info_dst = t.dest.info_dst();
        let locators = t.dest.locators();
        let at = self
            .pending
            .iter()
            .position(|p| p.tos == tos && p.info_dst == info_dst && p.locators == *locators);
        // INFO_TS(None) in front: a DATA of this transmit without its own INFO_TS must not take
        // the timestamp of another writer's DATA before it.
        let need = t.wire_len() - HEADER_LEN + 4;
        let i = match at {
            Some(i) if self.pending[i].buf.len() + need <= BUNDLE_LIMIT => i,
            _ => {
                if let Some(i) = at {
                    let full = self.pending.swap_remove(i);
                    send_datagram(&self.ctx, &full.buf, full.locators.as_slice(), full.tos);
                }
                let mut buf = Vec::with_capacity(BUNDLE_LIMIT.min(t.wire_len() * 4));
                let mut m = MessageBuilder::new(&mut buf, self.ctx.guid_prefix);
                if let Some(dst) = info_dst {
                    m.submessage(&Submessage::InfoDst(dst));
                }
                self.pending.push(Pending {
                    locators: *locators,
                    info_dst,
                    tos,
                    buf,
                });
                self.pending.len() - 1
            }
        };
        let p = &mut self.pending[i];
        let fresh = p.buf.len() == HEADER_LEN + if info_dst.is_some() { 16 } else { 0 };
        let mut m = MessageBuilder::resume(&mut p.buf);
        if !fresh && !matches!(t.submessages.first(), Some(OutSubmessage::InfoTs(_))) {
            m.submessage(&Submessage::InfoTs(None));
        }
        for sm in &t.submessages {
            m.submessage(&sm.as_submessage(qos_scratch));
        }
    }
}

impl Bundle {
    /// Opens a bundle for `ctx`'s transmits on this thread; nested opens for the same
    /// participant join the outer one. A thread bundles one participant at a time: opening
    /// one for another participant first sends what the open one holds.
    pub(crate) fn open(ctx: &Arc<RuntimeContext>) -> Bundle {
        let earlier = BUNDLE.with(|b| {
            let mut b = b.borrow_mut();
            match b.as_mut() {
                Some(open) if Arc::ptr_eq(&open.ctx, ctx) => {
                    open.depth += 1;
                    None
                }
                _ => b.replace(Bundled {
                    ctx: ctx.clone(),
                    pending: Vec::new(),
                    depth: 1,
                }),
            }
        });
        if let Some(earlier) = earlier {
            earlier.send_all();
        }
        Bundle {
            _thread_bound: std::marker::PhantomData,
        }
    }
}

impl Drop for Bundle {
    fn drop(&mut self) {
        let done = BUNDLE.with(|b| {
            let mut b = b.borrow_mut();
            match b.as_mut() {
                Some(open) if open.depth > 1 => {
                    open.depth -= 1;
                    None
                }
                _ => b.take(),
            }
        });
        if let Some(done) = done {
            done.send_all();
        }
    }
}

/// Encodes and sends everything `poll` yields, one datagram per transmit.
pub(crate) fn drain(ctx: &RuntimeContext, poll: impl FnMut(&mut Transmit) -> bool) {
    drain_marked(ctx, 0, poll)
}

/// [`drain`] for datagrams of traffic class `tos` (the IP TOS byte, from a writer's
/// TRANSPORT_PRIORITY; 0: unmarked).
pub(crate) fn drain_marked(
    ctx: &RuntimeContext,
    tos: u8,
    mut poll: impl FnMut(&mut Transmit) -> bool,
) {
    TRANSMIT.with(|cell| {
        let (t, qos_scratch) = &mut *cell.borrow_mut();
        while poll(t) {
            let bundled = BUNDLE.with(|b| match b.borrow_mut().as_mut() {
                Some(open) if std::ptr::eq(Arc::as_ptr(&open.ctx), ctx) => {
                    open.add(t, tos, qos_scratch);
                    true
                }
                _ => false,
            });
            if bundled {
                continue;
            }
            with_send_buf(|buf| {
                let mut m = MessageBuilder::new(buf, ctx.guid_prefix);
                if let Some(dst) = t.dest.info_dst() {
                    m.submessage(&Submessage::InfoDst(dst));
                }
                // Large payloads stay where they are (the history's buffers); the transport
                // copies them once, into the datagram's destination. At most MAX_SPLICES per
                // datagram (a batch's further payloads are copied), on the stack.
                let mut splices: [Splice<'_>; MAX_SPLICES] = [(0, &[]); MAX_SPLICES];
                let mut n = 0;
                for sm in &t.submessages {
                    let sub = sm.as_submessage(qos_scratch);
                    let min = if n < MAX_SPLICES {
                        SPLICE_MIN
                    } else {
                        usize::MAX
                    };
                    if let Some(at) = m.submessage_spliced(&sub, min) {
                        splices[n] = (at, sm.payload());
                        n += 1;
                    }
                }
                let dests = t.dest.locators();
                if n == 0 {
                    send_datagram(ctx, buf, dests.as_slice(), tos);
                } else {
                    let mut parts: [&[u8]; 2 * MAX_SPLICES + 1] = [&[]; 2 * MAX_SPLICES + 1];
                    let mut k = 0;
                    spliced_parts(buf, &splices[..n], |p| {
                        parts[k] = p;
                        k += 1;
                    });
                    send_datagram_parts(ctx, &parts[..k], dests.as_slice(), tos);
                }
            });
        }
        // The last datagram's DATA submessages share their samples' payloads: kept in this
        // thread's transmit until it sends again, they would keep a loan's chunk in use after
        // the history let the sample go.
        t.clear();
    });
}

/// Payloads at least this large are handed to the transport where they lie rather than copied
/// into the send buffer first ([`MessageBuilder::submessage_spliced`]): below it, an extra part
/// costs about what the copy does.
const SPLICE_MIN: usize = 1024;
/// Payloads left out of one datagram at most: its parts then fit one `sendmsg` (UDP takes up to
/// 16 without joining them) and an array on the stack.
const MAX_SPLICES: usize = 7;

/// Sends every datagram a writer core has ready, in traffic class `tos`.
pub(crate) fn flush_writer(
    ctx: &RuntimeContext,
    core: &mut WriterCore,
    now: impl Into<Now>,
    tos: u8,
) {
    let now = now.into();
    drain_marked(ctx, tos, |t| core.poll_transmit_into(&now, t));
}

/// Sends every datagram (ACKNACK, NACK_FRAG) a reader core has ready.
pub(crate) fn flush_reader(ctx: &RuntimeContext, core: &mut ReaderCore, now: Instant) {
    if core.transmit_due(now) {
        drain(ctx, |t| core.poll_transmit_into(now, t));
    }
}

/// Datagrams one destination's send queue holds; further ones are dropped (and repaired by
/// the reliability protocol like any other loss).
pub const SEND_QUEUE_DATAGRAMS: usize = 1024;
/// Bytes one destination's send queue holds.
pub const SEND_QUEUE_BYTES: usize = 4 << 20;

/// Datagrams waiting for destinations that could not take them without blocking. See the
/// module docs.
#[derive(Debug, Default)]
pub(crate) struct SendQueues {
    /// Datagrams queued over all destinations: the fast path (nothing queued) takes no lock.
    queued: AtomicUsize,
    dests: Mutex<FastHashMap<Locator, DestQueue>>,
    /// Datagrams dropped because their destination's queue was full.
    pub dropped: AtomicU64,
}

#[derive(Debug, Default)]
struct DestQueue {
    /// Datagrams and their traffic classes, in the order they were sent.
    q: VecDeque<(Box<[u8]>, u8)>,
    /// How many of `q` are marked (a class above 0): while none is, `q` is a plain FIFO.
    marked: usize,
    bytes: usize,
    /// An application thread is sending this queue's head with a blocking send: others queue
    /// behind it instead of overtaking.
    busy: bool,
    /// Drops since the queue was created (the first is logged at warn level).
    dropped: u64,
}

/// What a non-blocking send attempt came to.
enum Attempt {
    Sent,
    WouldBlock,
    Failed,
}

fn attempt(ctx: &RuntimeContext, parts: &[&[u8]], dest: &Locator, tos: u8) -> Attempt {
    match ctx.transport.try_send_parts_marked(parts, dest, tos) {
        Ok(()) => {
            ctx.counters.datagrams_sent.fetch_add(1, Ordering::Relaxed);
            Attempt::Sent
        }
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => Attempt::WouldBlock,
        Err(e) => {
            fail(ctx, dest, &e);
            Attempt::Failed
        }
    }
}

fn fail(ctx: &RuntimeContext, dest: &Locator, e: &io::Error) {
    ctx.counters.send_errors.fetch_add(1, Ordering::Relaxed);
    tracing::debug!(error = %e, ?dest, "send failed");
}

impl SendQueues {
    /// Sends the datagram made of `parts` (traffic class `tos`) to `dest` without blocking, or
    /// queues it (joined) behind what `dest` already has.
    pub fn send(&self, ctx: &RuntimeContext, parts: &[&[u8]], dest: &Locator, tos: u8) {
        if self.queued.load(Ordering::Acquire) == 0 {
            match attempt(ctx, parts, dest, tos) {
                Attempt::Sent | Attempt::Failed => return,
                Attempt::WouldBlock => {}
            }
            let mut dests = self.dests.lock();
            self.push(&mut dests, *dest, parts, tos);
            return;
        }
        let mut dests = self.dests.lock();
        if let Some(d) = dests.get_mut(dest) {
            // Older datagrams for this destination go first.
            if !d.busy {
                self.drain_one(ctx, *dest, d);
            }
            if !d.q.is_empty() || d.busy {
                self.push(&mut dests, *dest, parts, tos);
                return;
            }
            dests.remove(dest);
        }
        if let Attempt::WouldBlock = attempt(ctx, parts, dest, tos) {
            self.push(&mut dests, *dest, parts, tos);
        }
    }

    fn push(
        &self,
        dests: &mut FastHashMap<Locator, DestQueue>,
        dest: Locator,
        parts: &[&[u8]],
        tos: u8,
    ) {
        let d = dests.entry(dest).or_default();
        let len: usize = parts.iter().map(|p| p.len()).sum();
        if d.q.len() >= SEND_QUEUE_DATAGRAMS || d.bytes + len > SEND_QUEUE_BYTES {
            self.dropped.fetch_add(1, Ordering::Relaxed);
            d.dropped += 1;
            if d.dropped == 1 {
                tracing::warn!(
                    ?dest,
                    "send queue full: dropping datagrams to a slow destination"
                );
            } else {
                tracing::debug!(?dest, dropped = d.dropped, "send queue full");
            }
            return;
        }
        d.bytes += len;
        d.marked += usize::from(tos != 0);
        d.q.push_back((parts.concat().into_boxed_slice(), tos));
        self.queued.fetch_add(1, Ordering::Release);
    }

    /// Which queued datagram goes next: the oldest of the highest class. Datagrams of one
    /// writer share a class, so each writer's order is kept; a marked (higher-priority)
    /// writer's datagrams pass unmarked ones queued before them.
    fn next(d: &DestQueue) -> Option<usize> {
        if d.marked == 0 {
            return (!d.q.is_empty()).then_some(0);
        }
        let top = d.q.iter().map(|e| e.1).max()?;
        d.q.iter().position(|e| e.1 == top)
    }

    fn pop(&self, d: &mut DestQueue) -> Option<(Box<[u8]>, u8)> {
        let e = d.q.remove(Self::next(d)?)?;
        d.bytes -= e.0.len();
        d.marked -= usize::from(e.1 != 0);
        self.queued.fetch_sub(1, Ordering::Release);
        Some(e)
    }

    /// Sends `d`'s datagrams until the destination would block again.
    fn drain_one(&self, ctx: &RuntimeContext, dest: Locator, d: &mut DestQueue) {
        while let Some(i) = Self::next(d) {
            let (b, tos) = &d.q[i];
            match attempt(ctx, &[b], &dest, *tos) {
                Attempt::WouldBlock => return,
                Attempt::Sent | Attempt::Failed => {
                    let _ = self.pop(d);
                }
            }
        }
    }

    /// Whether anything is queued.
    pub fn is_empty(&self) -> bool {
        self.queued.load(Ordering::Acquire) == 0
    }

    /// Sends what the destinations take now, without blocking (the event thread, each pass).
    /// Returns whether datagrams remain queued.
    pub fn drain_ready(&self, ctx: &RuntimeContext) -> bool {
        if self.is_empty() {
            return false;
        }
        let mut dests = self.dests.lock();
        dests.retain(|dest, d| {
            if !d.busy {
                self.drain_one(ctx, *dest, d);
            }
            d.busy || !d.q.is_empty()
        });
        !self.is_empty()
    }

    /// Sends everything queued with blocking sends, until the queues are empty or `deadline`
    /// passes. For application threads holding no endpoint lock.
    fn drain_blocking(&self, ctx: &RuntimeContext, deadline: Instant) {
        while !self.is_empty() && Instant::now() < deadline {
            let next = {
                let mut dests = self.dests.lock();
                let found = dests.iter_mut().find(|(_, d)| !d.busy && !d.q.is_empty());
                match found {
                    Some((dest, d)) => {
                        d.busy = true;
                        let b = self.pop(d);
                        b.map(|b| (*dest, b))
                    }
                    None => None,
                }
            };
            let Some((dest, (b, tos))) = next else {
                // Every backlog is being sent by another application thread.
                std::thread::sleep(Duration::from_micros(200));
                continue;
            };
            match ctx.transport.send_to_marked(&b, &dest, tos) {
                Ok(()) => {
                    ctx.counters.datagrams_sent.fetch_add(1, Ordering::Relaxed);
                }
                Err(e) => fail(ctx, &dest, &e),
            }
            let mut dests = self.dests.lock();
            if let Some(d) = dests.get_mut(&dest) {
                d.busy = false;
                if d.q.is_empty() {
                    dests.remove(&dest);
                }
            }
        }
    }
}

/// Called by an application thread after a `write`, with no endpoint lock held: waits until
/// every queued datagram is sent (or the deadline), sending them itself. Never waits on a
/// receive thread. The deadline is asked for only when something is queued (it may cost a
/// clock read). See the module docs.
pub(crate) fn wait_sent(ctx: &RuntimeContext, deadline: impl FnOnce() -> Instant) {
    if ctx.send_queues.is_empty() || crate::transport::recv::on_receive_thread() {
        return;
    }
    ctx.send_queues.drain_blocking(ctx, deadline());
}

/// The reliability core's configuration for a user writer with this QoS.
/// `allow` decides whether new samples may go to multicast locators that several matched
/// readers share (from two readers, as Cyclone's address sets) or always once per reader.
pub(crate) fn writer_config(
    guid: Guid,
    qos: &DataWriterQos,
    allow: crate::transport::AllowMulticast,
) -> WriterConfig {
    let mut c = WriterConfig::new(guid);
    c.multicast = if allow.for_data() {
        MulticastPolicy::default()
    } else {
        MulticastPolicy::Off
    };
    // Readers derive keys from the payload (as Cyclone's do); an inline PID_KEY_HASH on every
    // sample would only cost bytes and parsing.
    c.send_key_hash = false;
    c.reliable = qos.reliability.kind == ReliabilityKind::Reliable;
    c.transient_local = qos.durability != Durability::Volatile;
    c.history = match qos.history {
        History::KeepLast(n) => HistoryKind::KeepLast(n.max(1)),
        History::KeepAll => HistoryKind::KeepAll,
    };
    if let Some(max) = qos.resource_limits.max_samples {
        c.max_samples = max as usize;
    }
    c
}

/// The history cache configuration of a reader with this QoS.
pub(crate) fn history_config(qos: &DataReaderQos) -> HistoryConfig {
    let limit = |v: Option<u32>| v.map(|n| n as usize);
    HistoryConfig {
        history: match qos.history {
            History::KeepLast(n) => crate::history::HistoryKind::KeepLast(n),
            History::KeepAll => crate::history::HistoryKind::KeepAll,
        },
        limits: crate::history::ResourceLimits {
            max_samples: limit(qos.resource_limits.max_samples),
            max_instances: limit(qos.resource_limits.max_instances),
            max_samples_per_instance: limit(qos.resource_limits.max_samples_per_instance),
        },
        destination_order: match qos.destination_order {
            DestinationOrder::BySourceTimestamp => {
                crate::history::DestinationOrder::BySourceTimestamp
            }
            _ => crate::history::DestinationOrder::ByReceptionTimestamp,
        },
        lifecycle: crate::history::Lifecycle {
            autopurge_nowriter_samples_delay: finite(
                qos.reader_data_lifecycle.autopurge_nowriter_samples_delay,
            ),
            autopurge_disposed_samples_delay: finite(
                qos.reader_data_lifecycle.autopurge_disposed_samples_delay,
            ),
        },
    }
}

/// `None` for the DDS infinite duration.
fn finite(d: std::time::Duration) -> Option<std::time::Duration> {
    (!tessera_rtps::qos::is_infinite(d)).then_some(d)
}

/// Whether a writer with this QoS serializes as XCDR2 (its first data representation).
pub(crate) fn prefers_xcdr2(qos: &DataWriterQos) -> bool {
    qos.data_representation.offered() == tessera_rtps::qos::data_representation::XCDR2
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_queue_sends_marked_datagrams_first_and_each_class_in_order() {
        let queues = SendQueues::default();
        let mut dests = FastHashMap::default();
        let dest = Locator::udpv4(std::net::Ipv4Addr::LOCALHOST, 7411);
        let ef = crate::transport::tos_of_priority(46);
        for (b, tos) in [(b"a", 0), (b"b", 0), (b"c", ef), (b"d", 0), (b"e", ef)] {
            queues.push(&mut dests, dest, &[b], tos);
        }
        let d = dests.get_mut(&dest).unwrap();
        let mut order = Vec::new();
        while let Some((b, _)) = queues.pop(d) {
            order.push(b[0]);
        }
        assert_eq!(order, b"ceabd".to_vec());
        assert!(queues.is_empty());
        assert_eq!((d.bytes, d.marked), (0, 0));
    }
}
