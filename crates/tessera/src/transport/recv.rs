//! Receive threads: one blocking thread per socket, delivering datagrams to a handler.
//!
//! Each thread owns one reusable buffer of `batch × 64 KiB` and reads with `recvmmsg(2)` using
//! `MSG_WAITFORONE`: the call blocks until one datagram is there and then also returns whatever
//! else is already queued (up to `batch`), so a burst costs one syscall per batch while a lone
//! datagram is delivered without waiting for company. The handler runs on the receive thread
//! (no hand-off to another thread, see `docs/performance.md`), and gets a call to
//! [`DatagramHandler::on_batch_end`] after every batch so it can flush coalesced replies.
//!
//! Measured (`measure_recv_batching`, loopback, 2-core VM shared with other work): the receive
//! thread spends ≈1.7–2.0 µs CPU per datagram with or without `recvmmsg`, for 64 B and 1 KiB,
//! with single sends or `sendmmsg` bursts of 16 — the receiver keeps up, so batches average
//! only 2–4 datagrams and the wake-up dominates. `recvmmsg` costs nothing when idle (same
//! latency thanks to `MSG_WAITFORONE`) and amortises the syscall once the thread falls behind,
//! so it stays on (batch 16) by default; `UdpConfig::recv_batch = 1` switches it off.
//!
//! Shutdown: [`Receivers::stop`] (or drop) raises a flag and calls `shutdown(SHUT_RD)` on each
//! socket, which on Linux wakes a thread blocked in `recvmsg`/`recvmmsg` at once, even on an
//! unconnected UDP socket (a test checks it). There is deliberately no receive timeout
//! (`SO_RCVTIMEO`): with one, every blocking receive arms and cancels a kernel timer, which
//! measurably lengthens a small-sample round trip. A wake-up datagram was rejected: on
//! `SO_REUSEPORT` multicast sockets a unicast datagram reaches only one socket of the group,
//! possibly another participant's.
//!
//! Batching is adaptive: while traffic is sparse each wake-up reads one datagram with plain
//! `recvmsg` (the cheapest path); once a call finds datagrams already queued, the thread
//! switches to `recvmmsg` for whole batches until the backlog is gone.

use std::io;
use std::net::Ipv4Addr;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::wait::{Spinner, WaitStrategy};
use socket2::Socket;
use tessera_rtps::types::Locator;

/// Size of one receive buffer: the largest possible UDP datagram fits.
pub const MAX_DATAGRAM: usize = 65536;

/// Which socket a datagram arrived on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Channel {
    /// SPDP (discovery) multicast, port 7400 + 250·domain.
    SpdpMulticast,
    /// User data multicast, port 7401 + 250·domain.
    UserMulticast,
    /// This participant's metatraffic (discovery) unicast port.
    MetatrafficUnicast,
    /// This participant's user data unicast port.
    UserUnicast,
}

impl Channel {
    /// Whether the channel carries user data (and may wait by polling, see [`super::wait`]).
    pub fn carries_user_data(self) -> bool {
        matches!(self, Channel::UserUnicast | Channel::UserMulticast)
    }

    /// A short name, also used for the thread name.
    pub fn name(self) -> &'static str {
        match self {
            Channel::SpdpMulticast => "spdp-mc",
            Channel::UserMulticast => "user-mc",
            Channel::MetatrafficUnicast => "meta-uc",
            Channel::UserUnicast => "user-uc",
        }
    }
}

/// Receives datagrams on the receive threads.
///
/// Implemented for every `Fn(&[u8], Locator, Channel) + Send + Sync`. Calls for one
/// channel come from one thread, in arrival order; different channels call concurrently.
/// The slice is only valid during the call. The source is transport-neutral: a UDPv4 or UDPv6
/// locator for UDP, an in-process locator for [`super::inproc`].
pub trait DatagramHandler: Send + Sync + 'static {
    /// One datagram from `from`.
    fn on_datagram(&self, data: &[u8], from: Locator, channel: Channel);

    /// Called after each batch of datagrams read by one syscall (at least one datagram).
    fn on_batch_end(&self, _channel: Channel) {}
}

impl<F> DatagramHandler for F
where
    F: Fn(&[u8], Locator, Channel) + Send + Sync + 'static,
{
    fn on_datagram(&self, data: &[u8], from: Locator, channel: Channel) {
        self(data, from, channel)
    }
}

/// Counters of the receive side, shared by all receive threads of one transport.
#[derive(Debug, Default)]
pub struct ReceiveStats {
    /// Datagrams handed to the handler.
    pub datagrams: AtomicU64,
    /// Bytes handed to the handler.
    pub bytes: AtomicU64,
    /// Receive syscalls that returned data (datagrams / batches = mean batch size).
    pub batches: AtomicU64,
    /// Datagrams dropped because they were larger than the buffer.
    pub truncated: AtomicU64,
    /// Datagrams dropped because their source address was of no known family.
    pub bad_source: AtomicU64,
    /// Receive errors other than timeouts and interrupts.
    pub errors: AtomicU64,
    /// Handler calls that panicked (the datagram is lost, reception goes on).
    pub handler_panics: AtomicU64,
}

/// A set of running receive threads. Dropping it stops and joins them.
pub struct Receivers {
    stop: Arc<AtomicBool>,
    /// Wakes threads blocked in a receive call once `stop` is raised.
    wake: Vec<Box<dyn Fn() + Send + Sync>>,
    threads: Vec<Option<JoinHandle<()>>>,
}

impl std::fmt::Debug for Receivers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Receivers")
            .field("threads", &self.threads.len())
            .finish()
    }
}

impl Receivers {
    /// Starts one receive thread per socket. `batch` is the number of datagrams read per
    /// syscall (1 uses plain `recvfrom`). Threads are named `tessera-<prefix>-<channel>`.
    pub(crate) fn spawn(
        sockets: Vec<(Arc<Socket>, Channel)>,
        handler: Arc<dyn DatagramHandler>,
        stats: Arc<ReceiveStats>,
        batch: usize,
        wait: WaitStrategy,
        prefix: &str,
    ) -> io::Result<Receivers> {
        let stop = Arc::new(AtomicBool::new(false));
        let mut r = Receivers::new(stop.clone());
        for (socket, channel) in sockets {
            // No timeout: see the module docs (shutdown wakes the thread).
            socket.set_read_timeout(None)?;
            let ctx = RecvLoop {
                socket: socket.clone(),
                channel,
                handler: handler.clone(),
                stats: stats.clone(),
                stop: stop.clone(),
                batch: batch.clamp(1, 64),
                wait: if channel.carries_user_data() {
                    wait
                } else {
                    WaitStrategy::Block
                },
            };
            let name = format!("tessera-{prefix}-{}", channel.name());
            // On error `r` is dropped, which stops the threads started so far.
            let h = std::thread::Builder::new()
                .name(name)
                .spawn(move || ctx.run())?;
            r.wake.push(Box::new(move || {
                // SAFETY: the descriptor is valid while `socket` is alive (this closure owns a
                // reference). shutdown(SHUT_RD) on an unconnected UDP socket returns ENOTCONN
                // but still wakes blocked readers on Linux; the result is deliberately ignored.
                unsafe { libc::shutdown(socket.as_raw_fd(), libc::SHUT_RD) };
            }));
            r.threads.push(Some(h));
        }
        Ok(r)
    }

    /// An empty set whose threads (added with [`Receivers::add`]) watch `stop`; for transports
    /// other than UDP.
    pub(crate) fn new(stop: Arc<AtomicBool>) -> Receivers {
        Receivers {
            stop,
            wake: Vec::new(),
            threads: Vec::new(),
        }
    }

    /// Adds a thread that ends soon after `stop` is raised and `wake` is called.
    pub(crate) fn add(&mut self, thread: JoinHandle<()>, wake: Box<dyn Fn() + Send + Sync>) {
        self.threads.push(Some(thread));
        self.wake.push(wake);
    }

    /// Joins another set into this one (a participant with several transports).
    pub fn merge(&mut self, mut other: Receivers) {
        let stop = other.stop.clone();
        self.wake
            .push(Box::new(move || stop.store(true, Ordering::SeqCst)));
        self.wake.append(&mut other.wake);
        self.threads.append(&mut other.threads);
        // `other`'s threads now belong to `self`; its drop has nothing left to stop.
    }

    /// Stops and joins the threads (same as dropping).
    pub fn stop(self) {}

    fn stop_all(&mut self) {
        if self.threads.is_empty() {
            // Nothing to stop (or merged into another set, whose drop stops the threads).
            return;
        }
        self.stop.store(true, Ordering::SeqCst);
        for w in &self.wake {
            w();
        }
        let me = std::thread::current().id();
        for h in &mut self.threads {
            if let Some(h) = h.take() {
                // A handler may drop the last reference to us from a receive thread; never
                // join oneself.
                if h.thread().id() != me {
                    let _ = h.join();
                }
            }
        }
    }
}

impl Drop for Receivers {
    fn drop(&mut self) {
        self.stop_all();
    }
}

struct RecvLoop {
    socket: Arc<Socket>,
    channel: Channel,
    handler: Arc<dyn DatagramHandler>,
    stats: Arc<ReceiveStats>,
    stop: Arc<AtomicBool>,
    batch: usize,
    /// How the thread waits (user-data channels only; see [`super::wait`]).
    wait: WaitStrategy,
}

/// The source of a datagram as a locator (UDPv4 or UDPv6; the buffer is a
/// `sockaddr_storage`-sized `sockaddr_in6`, big enough for both families).
fn locator_from_sockaddr(sa: &libc::sockaddr_in6) -> Option<Locator> {
    match i32::from(sa.sin6_family) {
        libc::AF_INET => {
            // SAFETY: an AF_INET address was written; sockaddr_in is smaller than sockaddr_in6
            // and has no stricter alignment.
            let sin: &libc::sockaddr_in = unsafe { &*(sa as *const libc::sockaddr_in6).cast() };
            Some(Locator::udpv4(
                Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr)),
                u16::from_be(sin.sin_port),
            ))
        }
        libc::AF_INET6 => Some(Locator::udpv6(
            std::net::Ipv6Addr::from(sa.sin6_addr.s6_addr),
            u16::from_be(sa.sin6_port),
        )),
        _ => None,
    }
}

/// What to do after a failed receive call.
fn on_error(stats: &ReceiveStats, e: &io::Error) {
    match e.kind() {
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted => {}
        _ => {
            stats.errors.fetch_add(1, Ordering::Relaxed);
            tracing::debug!("udp receive error: {e}");
            // Avoid a hot loop on a persistent error.
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

thread_local! {
    static ON_RECEIVE_THREAD: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// When the receive loop found the datagram it is handing over (see [`with_arrival`]).
    static ARRIVAL: std::cell::Cell<Option<Instant>> = const { std::cell::Cell::new(None) };
}

/// Runs `deliver` (the handler's call for one datagram) telling it the loop's own clock
/// reading from when the datagram was found, so that the handler need not read the clock again
/// (a read costs 20–35 ns on this VM kind, a few per cent of a spinning round trip's hop).
pub(crate) fn with_arrival<R>(found: Instant, deliver: impl FnOnce() -> R) -> R {
    ARRIVAL.with(|a| a.set(Some(found)));
    let r = deliver();
    ARRIVAL.with(|a| a.set(None));
    r
}

/// The arrival time the receive loop gave for the datagram being handled, once (a second call,
/// or a nested datagram's handling, gets `None` and reads the clock itself).
pub(crate) fn take_arrival() -> Option<Instant> {
    ARRIVAL.with(std::cell::Cell::take)
}

/// Marks the calling thread as a receive thread (for transports other than UDP, whose receive
/// threads must behave the same way).
pub(crate) fn mark_receive_thread() {
    ON_RECEIVE_THREAD.with(|f| f.set(true));
}

/// Whether the calling thread is one of the transport's receive threads (listeners run there).
/// Code that would wait for network progress must not wait on it: the progress it waits for
/// (e.g. ACKNACKs) is delivered by this very thread.
pub fn on_receive_thread() -> bool {
    ON_RECEIVE_THREAD.with(|f| f.get())
}

/// A receive call that returns faster than this found its datagram already queued: the thread is
/// behind, so the next call asks for a whole batch.
const BACKLOG_THRESHOLD: Duration = Duration::from_micros(3);

impl RecvLoop {
    fn run(self) {
        mark_receive_thread();
        crate::condition::defer_wakes();
        if self.batch <= 1 {
            self.run_single()
        } else {
            self.run_batched()
        }
    }

    fn deliver(&self, data: &[u8], sin: &libc::sockaddr_in6, flags: i32) {
        if flags & libc::MSG_TRUNC != 0 {
            self.stats.truncated.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let Some(from) = locator_from_sockaddr(sin) else {
            self.stats.bad_source.fetch_add(1, Ordering::Relaxed);
            return;
        };
        self.stats.datagrams.fetch_add(1, Ordering::Relaxed);
        self.stats
            .bytes
            .fetch_add(data.len() as u64, Ordering::Relaxed);
        // A panicking handler is a bug, but it must not silently end reception for the whole
        // participant: count it, log it and go on with the next datagram.
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            self.handler.on_datagram(data, from, self.channel)
        }));
        if r.is_err() {
            self.stats.handler_panics.fetch_add(1, Ordering::Relaxed);
            tracing::error!(
                channel = self.channel.name(),
                ?from,
                "datagram handler panicked"
            );
        }
    }

    /// Polls the socket for up to the spinner's budget before the caller's blocking receive;
    /// returns when the wait began (`None` under [`WaitStrategy::Block`]: nothing measured).
    fn spin(&self, spinner: &Spinner) -> Option<std::time::Instant> {
        if self.wait == WaitStrategy::Block {
            return None;
        }
        let start = std::time::Instant::now();
        let budget = spinner.budget();
        if budget == Some(std::time::Duration::ZERO) {
            return Some(start);
        }
        let mut p = libc::pollfd {
            fd: self.socket.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        loop {
            // SAFETY: `p` is one live pollfd; a zero timeout never blocks.
            if unsafe { libc::poll(&mut p, 1, 0) } != 0 || self.stop.load(Ordering::Relaxed) {
                break;
            }
            if budget.is_some_and(|b| start.elapsed() >= b) {
                break;
            }
            std::hint::spin_loop();
        }
        Some(start)
    }

    fn run_single(self) {
        let fd = self.socket.as_raw_fd();
        let mut buf = vec![0u8; MAX_DATAGRAM];
        let mut spinner = Spinner::new(self.wait);
        while !self.stop.load(Ordering::Relaxed) {
            let idle = self.spin(&spinner);
            // SAFETY: all-zero is a valid sockaddr_in6.
            let mut sin: libc::sockaddr_in6 = unsafe { std::mem::zeroed() };
            let mut iov = libc::iovec {
                iov_base: buf.as_mut_ptr().cast(),
                iov_len: buf.len(),
            };
            // SAFETY: all-zero is a valid msghdr; the pointers set below outlive the call.
            let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
            msg.msg_name = (&mut sin as *mut libc::sockaddr_in6).cast();
            msg.msg_namelen = std::mem::size_of::<libc::sockaddr_in6>() as libc::socklen_t;
            msg.msg_iov = &mut iov;
            msg.msg_iovlen = 1;
            // SAFETY: `msg` describes valid, writable memory for the duration of the call.
            let n = unsafe { libc::recvmsg(fd, &mut msg, 0) };
            if self.stop.load(Ordering::Relaxed) {
                break;
            }
            if let Some(t) = idle {
                spinner.record_wait(t.elapsed());
            }
            if n < 0 {
                on_error(&self.stats, &io::Error::last_os_error());
                continue;
            }
            let len = (n as usize).min(buf.len());
            self.stats.batches.fetch_add(1, Ordering::Relaxed);
            self.deliver(&buf[..len], &sin, msg.msg_flags);
            self.handler.on_batch_end(self.channel);
            crate::condition::flush_deferred_wakes();
        }
    }

    fn run_batched(self) {
        let fd = self.socket.as_raw_fd();
        let batch = self.batch;
        let mut buf = vec![0u8; batch * MAX_DATAGRAM];
        // SAFETY: all-zero is a valid sockaddr_in6 / mmsghdr.
        let mut names: Vec<libc::sockaddr_in6> = vec![unsafe { std::mem::zeroed() }; batch];
        // All accesses to `buf` and `names` below go through these two base pointers (the
        // kernel writes through pointers derived from them), so no reference to either is
        // alive while the kernel writes.
        let base = buf.as_mut_ptr();
        let names_base = names.as_mut_ptr();
        let mut iovs: Vec<libc::iovec> = (0..batch)
            .map(|i| libc::iovec {
                // SAFETY: i * MAX_DATAGRAM < buf.len(), inside the allocation.
                iov_base: unsafe { base.add(i * MAX_DATAGRAM) }.cast(),
                iov_len: MAX_DATAGRAM,
            })
            .collect();
        let iovs_base = iovs.as_mut_ptr();
        // SAFETY: as above.
        let mut msgs: Vec<libc::mmsghdr> = vec![unsafe { std::mem::zeroed() }; batch];
        for (i, m) in msgs.iter_mut().enumerate() {
            // SAFETY: i < batch, the length of `iovs` and `names`.
            m.msg_hdr.msg_iov = unsafe { iovs_base.add(i) };
            m.msg_hdr.msg_iovlen = 1;
            // SAFETY: as above.
            m.msg_hdr.msg_name = unsafe { names_base.add(i) }.cast();
        }
        // Adaptive batch: ask for one datagram while traffic is sparse (recvmmsg with room for
        // more makes one more, futile, attempt per wake-up: latency on a ping-pong), and for a
        // full batch once datagrams are found already waiting (a backlog worth amortising).
        let mut vlen = 1usize;
        let mut spinner = Spinner::new(self.wait);
        while !self.stop.load(Ordering::Relaxed) {
            let idle = self.spin(&spinner);
            for m in msgs.iter_mut().take(vlen) {
                m.msg_hdr.msg_namelen =
                    std::mem::size_of::<libc::sockaddr_in6>() as libc::socklen_t;
                m.msg_hdr.msg_flags = 0;
                m.msg_len = 0;
            }
            // SAFETY: `msgs` holds `batch` headers whose name and iovec pointers refer to
            // `names`, `iovs` and `buf`, all alive and not otherwise borrowed during the call.
            let called = Instant::now();
            let n = if vlen == 1 {
                // Plain recvmsg: the cheapest kernel path for one datagram.
                // SAFETY: msgs[0]'s header points into `names`, `iovs` and `buf` (see above).
                let r = unsafe { libc::recvmsg(fd, &mut msgs[0].msg_hdr, 0) };
                if r >= 0 {
                    msgs[0].msg_len = r as libc::c_uint;
                    1
                } else {
                    -1
                }
            } else {
                // SAFETY: as for recvmsg, for the first `vlen` headers.
                unsafe {
                    libc::recvmmsg(
                        fd,
                        msgs.as_mut_ptr(),
                        vlen as libc::c_uint,
                        libc::MSG_WAITFORONE,
                        std::ptr::null_mut(),
                    )
                }
            };
            let returned = Instant::now();
            let waited = returned.duration_since(called) > BACKLOG_THRESHOLD;
            if self.stop.load(Ordering::Relaxed) {
                break;
            }
            if let Some(t) = idle {
                spinner.record_wait(t.elapsed());
            }
            if n < 0 {
                on_error(&self.stats, &io::Error::last_os_error());
                continue;
            }
            let n = (n as usize).min(vlen);
            if n == 0 {
                continue;
            }
            vlen = if n >= 2 || (vlen == 1 && !waited) {
                batch
            } else {
                1
            };
            self.stats.batches.fetch_add(1, Ordering::Relaxed);
            for (i, m) in msgs.iter().enumerate().take(n) {
                let len = (m.msg_len as usize).min(MAX_DATAGRAM);
                // The first datagram came when the call returned; the others' handlers read
                // the clock themselves (handling those before them took time).
                let found = (i == 0).then_some(returned);
                let flags = m.msg_hdr.msg_flags;
                // SAFETY: i < batch; the kernel has finished writing; `len` ≤ MAX_DATAGRAM so
                // the slice stays inside datagram i's part of `buf`, which nothing writes to
                // until the next recvmmsg call.
                let (sin, data) = unsafe {
                    (
                        std::ptr::read(names_base.add(i)),
                        std::slice::from_raw_parts(base.add(i * MAX_DATAGRAM), len),
                    )
                };
                match found {
                    Some(t) => with_arrival(t, || self.deliver(data, &sin, flags)),
                    None => self.deliver(data, &sin, flags),
                }
            }
            self.handler.on_batch_end(self.channel);
            crate::condition::flush_deferred_wakes();
        }
        // Keep the storage alive (and unmoved) until the loop has ended.
        drop((msgs, iovs, names, buf));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_arrival_is_taken_once_and_only_while_its_datagram_is_handled() {
        assert_eq!(take_arrival(), None);
        let found = Instant::now();
        let (first, second) = with_arrival(found, || (take_arrival(), take_arrival()));
        assert_eq!(first, Some(found));
        assert_eq!(second, None, "a second read reads the clock itself");
        // Not taken by the handler: gone once the datagram's handling is over.
        with_arrival(found, || ());
        assert_eq!(take_arrival(), None);
    }
}
