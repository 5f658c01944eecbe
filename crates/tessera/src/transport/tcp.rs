//! TCP/IPv4 transport: RTPS messages over TCP connections, for networks UDP does not cross
//! (WANs, NATs, firewalls that pass one TCP port) and for links where the kernel's congestion
//! control is wanted.
//!
//! # Wire format (Tessera's own; Fast DDS's RTCP framing and its logical-port protocol are not
//! spoken, so the locators carry a vendor-specific kind, `TESSERA_TCP4`)
//! - The side that opens a connection first sends a 16-byte *hello*: `"TSTCP001"`, the IPv4
//!   address (4 bytes) and port (u16, big-endian) it listens on, and 2 zero bytes. The accepting
//!   side then sends what it has for that listening address through this connection, so a peer
//!   that cannot be connected to (behind a NAT) is still reached.
//! - Then both directions carry *frames*: a u32 big-endian length (1 to [`MAX_FRAME`]) and one
//!   RTPS message.
//!
//! A bad hello or frame length closes the connection and is counted ([`TcpStats`]); nothing from
//! the network can make a buffer grow beyond one frame per connection, and at most
//! [`MAX_CONNECTIONS`] connections are kept.
//!
//! # Threads
//! Senders write on their own thread, straight into the socket when its queue is empty (no
//! hand-off on the latency path); what the socket does not take waits in the connection's
//! bounded queue ([`TcpConfig::queue_bytes`]). One I/O thread per transport polls the listener
//! and every connection: it accepts, completes connects, drains queues and reads frames, which
//! it delivers to the participant in arrival order. A full queue makes `try_send_to` return
//! `WouldBlock` (the caller queues the datagram) and `send_to` wait for room.
//!
//! # Discovery
//! TCP has no multicast: SPDP goes to the configured peers (`TESSERA_TCP_PEERS=ip[:port],...`;
//! without a port, the listening ports of participant indexes 0..=8 are tried). A participant
//! listens on `TESSERA_TCP_PORT` or, by default, on its metatraffic unicast port number
//! (7410 + 250·domain + 2·index), which is free for TCP whatever UDP does with it.

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};
use tessera_rtps::types::{locator_kind, Locator};

use super::iface;
use super::ports::PortMapping;
use super::recv::{Channel, DatagramHandler, Receivers};
use super::udp::{parse_peers, Peer, PROBED_PARTICIPANT_IDS};
use super::{Transport, TransportError, TransportLocators, TransportStats};

/// Environment variable: TCP discovery peers, `ip[:port],...`.
pub const ENV_TCP_PEERS: &str = "TESSERA_TCP_PEERS";
/// Environment variable: the TCP port to listen on (default: by participant index).
pub const ENV_TCP_PORT: &str = "TESSERA_TCP_PORT";
/// First bytes of a hello.
pub const HELLO_MAGIC: [u8; 8] = *b"TSTCP001";
/// Length of a hello.
pub const HELLO_LEN: usize = 16;
/// Largest RTPS message in one frame.
pub const MAX_FRAME: usize = 65536;
/// Most connections kept (accepted and opened together).
pub const MAX_CONNECTIONS: usize = 256;
/// Default bound of a connection's send queue.
pub const DEFAULT_QUEUE_BYTES: usize = 4 << 20;
/// How long `send_to` waits for room in a full queue before dropping the message (reliable
/// writers repair it).
const BLOCK_TIMEOUT: Duration = Duration::from_secs(1);
/// Bytes the I/O thread reads from one connection before looking at the others.
const READ_QUANTUM: usize = 256 << 10;

/// Configuration of a [`TcpTransport`].
#[derive(Debug, Clone)]
pub struct TcpConfig {
    /// DDS domain id.
    pub domain_id: u32,
    /// Interface name or IPv4 address whose address is announced; `None` selects as UDP does.
    pub interface: Option<String>,
    /// A fixed participant index; `None` takes the first index whose port is free.
    pub participant_id: Option<u32>,
    /// A fixed listening port (overrides the participant index's port).
    pub port: Option<u16>,
    /// Port numbering (spec defaults).
    pub ports: PortMapping,
    /// Discovery peers.
    pub peers: Vec<Peer>,
    /// Bound of each connection's send queue in bytes.
    pub queue_bytes: usize,
}

impl TcpConfig {
    /// Defaults for `domain_id`, ignoring the environment.
    pub fn without_env(domain_id: u32) -> TcpConfig {
        TcpConfig {
            domain_id,
            interface: None,
            participant_id: None,
            port: None,
            ports: PortMapping::default(),
            peers: Vec::new(),
            queue_bytes: DEFAULT_QUEUE_BYTES,
        }
    }

    /// Defaults with `TESSERA_INTERFACE`, `TESSERA_TCP_PEERS` and `TESSERA_TCP_PORT` applied.
    pub fn new(domain_id: u32) -> Result<TcpConfig, TransportError> {
        let mut c = TcpConfig::without_env(domain_id);
        if let Ok(v) = std::env::var(super::udp::ENV_INTERFACE) {
            if !v.trim().is_empty() {
                c.interface = Some(v.trim().to_string());
            }
        }
        if let Ok(v) = std::env::var(ENV_TCP_PEERS) {
            c.peers = parse_peers(&v)?;
        }
        if let Ok(v) = std::env::var(ENV_TCP_PORT) {
            let p: u16 = v.trim().parse().map_err(|_| {
                TransportError::InvalidConfig(format!("{ENV_TCP_PORT}={v:?}: not a port number"))
            })?;
            c.port = Some(p);
        }
        Ok(c)
    }
}

/// Counters of the TCP transport beyond [`TransportStats`].
#[derive(Debug, Default)]
pub struct TcpStats {
    /// Connections opened to peers.
    pub opened: AtomicU64,
    /// Connections accepted from peers.
    pub accepted: AtomicU64,
    /// Connections closed (by either side, or after an error).
    pub closed: AtomicU64,
    /// Connections refused or not opened because [`MAX_CONNECTIONS`] were open.
    pub refused: AtomicU64,
    /// Connections closed for a bad hello or frame length.
    pub bad_input: AtomicU64,
}

/// A connection's pending output.
#[derive(Debug, Default)]
struct Out {
    buf: Vec<u8>,
    start: usize,
    closed: bool,
}

impl Out {
    fn pending(&self) -> usize {
        self.buf.len() - self.start
    }

    /// Writes what the socket takes now; false when the connection failed.
    fn flush(&mut self, mut stream: &TcpStream) -> bool {
        while self.start < self.buf.len() {
            match stream.write(&self.buf[self.start..]) {
                Ok(0) => return false,
                Ok(n) => self.start += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return false,
            }
        }
        if self.start == self.buf.len() {
            self.buf.clear();
            self.start = 0;
        } else if self.start >= MAX_FRAME {
            self.buf.drain(..self.start);
            self.start = 0;
        }
        true
    }
}

#[derive(Debug)]
struct Conn {
    id: u64,
    stream: TcpStream,
    /// Where the peer listens: known when we opened the connection, from its hello otherwise.
    peer: Mutex<Option<SocketAddrV4>>,
    out: Mutex<Out>,
    room: Condvar,
    connected: AtomicBool,
}

#[derive(Debug, Default)]
struct Table {
    all: HashMap<u64, Arc<Conn>>,
    by_peer: HashMap<SocketAddrV4, Arc<Conn>>,
    next_id: u64,
}

#[derive(Debug)]
struct Inner {
    listener: TcpListener,
    own: SocketAddrV4,
    table: Mutex<Table>,
    wake: OwnedFd,
    queue_bytes: usize,
    stats: TransportStats,
    tcp: TcpStats,
    stop: Arc<AtomicBool>,
}

/// The TCP/IPv4 transport. See the module docs.
#[derive(Debug)]
pub struct TcpTransport {
    inner: Arc<Inner>,
    participant_id: u32,
    locators: TransportLocators,
    spdp_destinations: Vec<Locator>,
    started: AtomicBool,
}

fn sock_err(what: &str) -> impl FnOnce(io::Error) -> TransportError + '_ {
    move |source| TransportError::Socket {
        what: what.to_string(),
        source,
    }
}

impl TcpTransport {
    /// Opens the listening socket (see the module docs for the port).
    pub fn new(cfg: TcpConfig) -> Result<TcpTransport, TransportError> {
        let list = iface::list_ipv4()?;
        let itf = iface::select(&list, cfg.interface.as_deref())?;
        let (listener, participant_id) = match (cfg.port, cfg.participant_id) {
            (Some(p), pid) => (
                bind(p).map_err(sock_err("bind TCP port"))?,
                pid.unwrap_or(0),
            ),
            (None, Some(pid)) => {
                let p = tcp_port(&cfg.ports, cfg.domain_id, pid)?;
                (bind(p).map_err(sock_err("bind TCP port"))?, pid)
            }
            (None, None) => {
                let max = cfg.ports.max_participant_id();
                let mut found = None;
                for pid in 0..=max {
                    let p = tcp_port(&cfg.ports, cfg.domain_id, pid)?;
                    match bind(p) {
                        Ok(l) => {
                            found = Some((l, pid));
                            break;
                        }
                        Err(e) if e.kind() == io::ErrorKind::AddrInUse => continue,
                        Err(e) => return Err(sock_err("bind TCP port")(e)),
                    }
                }
                found.ok_or(TransportError::NoParticipantIndex {
                    domain: cfg.domain_id,
                    max,
                })?
            }
        };
        listener
            .set_nonblocking(true)
            .map_err(sock_err("TCP listener non-blocking"))?;
        let port = listener
            .local_addr()
            .map_err(sock_err("TCP listener address"))?
            .port();
        let own = SocketAddrV4::new(itf.addr, port);
        // SAFETY: eventfd has no memory-safety preconditions; the result is checked.
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(sock_err("eventfd")(io::Error::last_os_error()));
        }
        // SAFETY: `fd` is a fresh descriptor owned by nothing else.
        let wake = unsafe { OwnedFd::from_raw_fd(fd) };
        let mut spdp_destinations = Vec::new();
        for peer in &cfg.peers {
            match peer.port {
                Some(p) => spdp_destinations.push(Locator::tcpv4(peer.addr, p)),
                None => {
                    for pid in PROBED_PARTICIPANT_IDS {
                        if let Ok(p) = tcp_port(&cfg.ports, cfg.domain_id, pid) {
                            spdp_destinations.push(Locator::tcpv4(peer.addr, p));
                        }
                    }
                }
            }
        }
        let me = Locator::tcpv4(*own.ip(), own.port());
        spdp_destinations.retain(|l| *l != me);
        tracing::info!(listen = %own, peers = spdp_destinations.len(), "TCP transport open");
        Ok(TcpTransport {
            inner: Arc::new(Inner {
                listener,
                own,
                table: Mutex::new(Table::default()),
                wake,
                queue_bytes: cfg.queue_bytes.max(MAX_FRAME + 4),
                stats: TransportStats::default(),
                tcp: TcpStats::default(),
                stop: Arc::new(AtomicBool::new(false)),
            }),
            participant_id,
            locators: TransportLocators {
                metatraffic_unicast: me,
                default_unicast: me,
                metatraffic_multicast: None,
                default_multicast: None,
            },
            spdp_destinations,
            started: AtomicBool::new(false),
        })
    }

    /// The participant index whose port this transport listens on.
    pub fn participant_id(&self) -> u32 {
        self.participant_id
    }

    /// The address this transport listens on (as announced).
    pub fn listen_addr(&self) -> SocketAddrV4 {
        self.inner.own
    }

    /// Connection counters.
    pub fn tcp_stats(&self) -> &TcpStats {
        &self.inner.tcp
    }

    /// Connections currently open.
    pub fn connections(&self) -> usize {
        self.inner.table.lock().all.len()
    }

    fn send(&self, buf: &[u8], dest: &Locator, block: bool) -> io::Result<()> {
        let inner = &self.inner;
        let Some(addr) = dest.to_tcp_addr_v4() else {
            inner.stats.send.ignored.fetch_add(1, Ordering::Relaxed);
            return Ok(());
        };
        if buf.is_empty() || buf.len() > MAX_FRAME {
            inner.stats.send.errors.fetch_add(1, Ordering::Relaxed);
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("TCP frame of {} bytes (1..={MAX_FRAME})", buf.len()),
            ));
        }
        let Some(conn) = inner.conn_for(addr) else {
            inner.stats.send.dropped.fetch_add(1, Ordering::Relaxed);
            return Ok(());
        };
        let mut out = conn.out.lock();
        loop {
            if out.closed {
                inner.stats.send.dropped.fetch_add(1, Ordering::Relaxed);
                return Ok(());
            }
            if out.pending() + 4 + buf.len() <= inner.queue_bytes {
                break;
            }
            if !block {
                inner.stats.send.would_block.fetch_add(1, Ordering::Relaxed);
                return Err(io::ErrorKind::WouldBlock.into());
            }
            if conn.room.wait_for(&mut out, BLOCK_TIMEOUT).timed_out() {
                inner.stats.send.dropped.fetch_add(1, Ordering::Relaxed);
                return Ok(());
            }
        }
        out.buf.extend_from_slice(&(buf.len() as u32).to_be_bytes());
        out.buf.extend_from_slice(buf);
        let connected = conn.connected.load(Ordering::Acquire);
        let mut failed = false;
        if connected && out.pending() == buf.len() + 4 {
            failed = !out.flush(&conn.stream);
        }
        let left = out.pending() > 0;
        drop(out);
        inner.stats.send.record_sent(buf.len());
        if failed || (connected && left) {
            // The I/O thread closes a failed connection and drains a partial write.
            inner.wake();
        }
        Ok(())
    }
}

fn bind(port: u16) -> io::Result<TcpListener> {
    let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)?;
    // A restarted participant can take its port back while old connections linger.
    s.set_reuse_address(true)?;
    s.bind(&SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, port)).into())?;
    s.listen(64)?;
    Ok(s.into())
}

fn tcp_port(ports: &PortMapping, domain: u32, pid: u32) -> Result<u16, TransportError> {
    ports.metatraffic_unicast(domain, pid).ok_or_else(|| {
        TransportError::InvalidConfig(format!(
            "participant index {pid} of domain {domain} has no TCP port"
        ))
    })
}

/// The hello a connecting side sends: magic, listening address, 2 zero bytes.
pub fn encode_hello(listen: SocketAddrV4) -> [u8; HELLO_LEN] {
    let mut h = [0u8; HELLO_LEN];
    h[..8].copy_from_slice(&HELLO_MAGIC);
    h[8..12].copy_from_slice(&listen.ip().octets());
    h[12..14].copy_from_slice(&listen.port().to_be_bytes());
    h
}

/// The listening address in a hello; `None` if it is not one.
pub fn decode_hello(h: &[u8]) -> Option<SocketAddrV4> {
    if h.len() != HELLO_LEN || h[..8] != HELLO_MAGIC || h[14..] != [0, 0] {
        return None;
    }
    let ip = Ipv4Addr::new(h[8], h[9], h[10], h[11]);
    let port = u16::from_be_bytes([h[12], h[13]]);
    (port != 0 && !ip.is_unspecified() && !ip.is_multicast() && !ip.is_broadcast())
        .then_some(SocketAddrV4::new(ip, port))
}

/// What the reader of one connection expects next.
#[derive(Debug)]
struct InBuf {
    buf: Vec<u8>,
    /// An accepted connection's first bytes are a hello.
    want_hello: bool,
}

/// Takes an accepted connection's hello off the front of `inb` once it is complete: the
/// peer's listening address. Err(()) when it is not a hello (the connection must be closed).
fn take_hello(inb: &mut InBuf) -> Result<Option<SocketAddrV4>, ()> {
    if !inb.want_hello || inb.buf.len() < HELLO_LEN {
        return Ok(None);
    }
    let a = decode_hello(&inb.buf[..HELLO_LEN]).ok_or(())?;
    inb.buf.drain(..HELLO_LEN);
    inb.want_hello = false;
    Ok(Some(a))
}

/// Splits the complete frames off the front of `inb` (after the hello, if one is expected)
/// and passes each to `deliver`. Err(()) on a bad frame length (the connection must be closed).
fn parse_frames(inb: &mut InBuf, mut deliver: impl FnMut(&[u8])) -> Result<(), ()> {
    if inb.want_hello {
        return Ok(());
    }
    let mut at = 0;
    while inb.buf.len() - at >= 4 {
        let len = u32::from_be_bytes([
            inb.buf[at],
            inb.buf[at + 1],
            inb.buf[at + 2],
            inb.buf[at + 3],
        ]) as usize;
        if len == 0 || len > MAX_FRAME {
            return Err(());
        }
        if inb.buf.len() - at - 4 < len {
            break;
        }
        deliver(&inb.buf[at + 4..at + 4 + len]);
        at += 4 + len;
    }
    inb.buf.drain(..at);
    Ok(())
}

impl Inner {
    fn wake(&self) {
        let one = 1u64.to_ne_bytes();
        // SAFETY: writes 8 bytes from a live buffer to our eventfd.
        let _ = unsafe { libc::write(self.wake.as_raw_fd(), one.as_ptr().cast(), 8) };
    }

    /// The open connection to `addr`, or a new one (connect started, hello queued); `None`
    /// when no more connections may be opened or the socket could not be made.
    fn conn_for(&self, addr: SocketAddrV4) -> Option<Arc<Conn>> {
        let mut t = self.table.lock();
        if let Some(c) = t.by_peer.get(&addr) {
            return Some(c.clone());
        }
        if t.all.len() >= MAX_CONNECTIONS {
            self.tcp.refused.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        let stream = match start_connect(addr) {
            Ok(s) => s,
            Err(e) => {
                tracing::debug!(peer = %addr, error = %e, "TCP connect failed");
                self.stats.send.errors.fetch_add(1, Ordering::Relaxed);
                return None;
            }
        };
        t.next_id += 1;
        let conn = Arc::new(Conn {
            id: t.next_id,
            stream,
            peer: Mutex::new(Some(addr)),
            out: Mutex::new(Out {
                buf: encode_hello(self.own).to_vec(),
                start: 0,
                closed: false,
            }),
            room: Condvar::new(),
            connected: AtomicBool::new(false),
        });
        t.all.insert(conn.id, conn.clone());
        t.by_peer.insert(addr, conn.clone());
        drop(t);
        self.tcp.opened.fetch_add(1, Ordering::Relaxed);
        self.wake();
        Some(conn)
    }

    fn close(&self, conn: &Conn, inbufs: &mut HashMap<u64, InBuf>) {
        {
            let mut out = conn.out.lock();
            out.closed = true;
            out.buf = Vec::new();
            out.start = 0;
        }
        conn.room.notify_all();
        let mut t = self.table.lock();
        if t.all.remove(&conn.id).is_some() {
            self.tcp.closed.fetch_add(1, Ordering::Relaxed);
        }
        if let Some(p) = *conn.peer.lock() {
            if t.by_peer.get(&p).is_some_and(|c| c.id == conn.id) {
                t.by_peer.remove(&p);
            }
        }
        drop(t);
        let _ = conn.stream.shutdown(std::net::Shutdown::Both);
        inbufs.remove(&conn.id);
    }

    fn accept_all(&self, inbufs: &mut HashMap<u64, InBuf>) {
        loop {
            match self.listener.accept() {
                Ok((stream, from)) => {
                    let mut t = self.table.lock();
                    if t.all.len() >= MAX_CONNECTIONS {
                        self.tcp.refused.fetch_add(1, Ordering::Relaxed);
                        tracing::debug!(%from, "TCP connection refused: too many connections");
                        continue;
                    }
                    if stream.set_nonblocking(true).is_err() {
                        continue;
                    }
                    let _ = stream.set_nodelay(true);
                    t.next_id += 1;
                    let conn = Arc::new(Conn {
                        id: t.next_id,
                        stream,
                        peer: Mutex::new(None),
                        out: Mutex::new(Out::default()),
                        room: Condvar::new(),
                        connected: AtomicBool::new(true),
                    });
                    inbufs.insert(
                        conn.id,
                        InBuf {
                            buf: Vec::new(),
                            want_hello: true,
                        },
                    );
                    t.all.insert(conn.id, conn);
                    self.tcp.accepted.fetch_add(1, Ordering::Relaxed);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    // EMFILE and the like: try again on the next poll round.
                    tracing::debug!(error = %e, "TCP accept failed");
                    self.stats.recv.errors.fetch_add(1, Ordering::Relaxed);
                    return;
                }
            }
        }
    }

    /// Reads what `conn` has and delivers its complete frames; false when it must be closed.
    fn read_from(
        &self,
        conn: &Conn,
        inb: &mut InBuf,
        scratch: &mut [u8],
        handler: &dyn DatagramHandler,
    ) -> bool {
        let mut total = 0;
        loop {
            // Never hold more than one frame (and its header, or a hello) per connection.
            let room = (HELLO_LEN + 4 + MAX_FRAME).saturating_sub(inb.buf.len());
            let cap = room.min(scratch.len());
            let n = match (&conn.stream).read(&mut scratch[..cap]) {
                Ok(0) => return false,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return true,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => return false,
            };
            inb.buf.extend_from_slice(&scratch[..n]);
            total += n;
            let r = take_hello(inb).and_then(|hello| {
                if let Some(a) = hello {
                    *conn.peer.lock() = Some(a);
                    let mut t = self.table.lock();
                    // Replies for that listening address go through this connection unless
                    // one is open already.
                    if let Some(c) = t.all.get(&conn.id).cloned() {
                        t.by_peer.entry(a).or_insert(c);
                    }
                }
                let from = match *conn.peer.lock() {
                    Some(a) => Locator::tcpv4(*a.ip(), a.port()),
                    None => Locator::tcpv4(Ipv4Addr::UNSPECIFIED, 0),
                };
                parse_frames(inb, |frame| self.deliver(handler, frame, from))
            });
            if r.is_err() {
                self.tcp.bad_input.fetch_add(1, Ordering::Relaxed);
                tracing::debug!(conn = conn.id, "TCP connection closed: bad hello or frame");
                return false;
            }
            if total >= READ_QUANTUM {
                return true;
            }
        }
    }

    fn deliver(&self, handler: &dyn DatagramHandler, frame: &[u8], from: Locator) {
        let r = &self.stats.recv;
        r.datagrams.fetch_add(1, Ordering::Relaxed);
        r.bytes.fetch_add(frame.len() as u64, Ordering::Relaxed);
        r.batches.fetch_add(1, Ordering::Relaxed);
        let ok = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            handler.on_datagram(frame, from, Channel::UserUnicast);
            handler.on_batch_end(Channel::UserUnicast);
        }));
        if ok.is_err() {
            r.handler_panics.fetch_add(1, Ordering::Relaxed);
            tracing::error!(?from, "datagram handler panicked");
        }
    }

    /// The I/O thread: see the module docs.
    fn run(self: Arc<Self>, handler: Arc<dyn DatagramHandler>) {
        let mut inbufs: HashMap<u64, InBuf> = HashMap::new();
        let mut scratch = vec![0u8; 64 << 10];
        let mut fds: Vec<libc::pollfd> = Vec::new();
        let mut conns: Vec<Arc<Conn>> = Vec::new();
        while !self.stop.load(Ordering::Relaxed) {
            conns.clear();
            conns.extend(self.table.lock().all.values().cloned());
            fds.clear();
            let pfd = |fd, events| libc::pollfd {
                fd,
                events,
                revents: 0,
            };
            fds.push(pfd(self.wake.as_raw_fd(), libc::POLLIN));
            fds.push(pfd(self.listener.as_raw_fd(), libc::POLLIN));
            for c in &conns {
                let mut ev = libc::POLLIN;
                if !c.connected.load(Ordering::Acquire) || c.out.lock().pending() > 0 {
                    ev |= libc::POLLOUT;
                }
                fds.push(pfd(c.stream.as_raw_fd(), ev));
            }
            // SAFETY: `fds` is a live array of `fds.len()` pollfd structures.
            let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, -1) };
            if n < 0 {
                let e = io::Error::last_os_error();
                if e.kind() != io::ErrorKind::Interrupted {
                    self.stats.recv.errors.fetch_add(1, Ordering::Relaxed);
                    std::thread::sleep(Duration::from_millis(10));
                }
                continue;
            }
            if fds[0].revents != 0 {
                let mut b = [0u8; 8];
                // SAFETY: reads at most 8 bytes into a live buffer from our eventfd.
                let _ = unsafe { libc::read(self.wake.as_raw_fd(), b.as_mut_ptr().cast(), 8) };
            }
            if fds[1].revents != 0 {
                self.accept_all(&mut inbufs);
            }
            for (c, fd) in conns.iter().zip(&fds[2..]) {
                let ev = fd.revents;
                if ev == 0 {
                    continue;
                }
                let mut alive = ev & libc::POLLNVAL == 0;
                if alive && !c.connected.load(Ordering::Acquire) {
                    if ev & (libc::POLLOUT | libc::POLLERR | libc::POLLHUP) != 0 {
                        match c.stream.take_error() {
                            Ok(None) if ev & libc::POLLOUT != 0 => {
                                c.connected.store(true, Ordering::Release);
                                inbufs.insert(
                                    c.id,
                                    InBuf {
                                        buf: Vec::new(),
                                        want_hello: false,
                                    },
                                );
                            }
                            _ => alive = false,
                        }
                    }
                    if !alive || !c.connected.load(Ordering::Acquire) {
                        if !alive {
                            self.close(c, &mut inbufs);
                        }
                        continue;
                    }
                }
                if alive && ev & (libc::POLLOUT | libc::POLLERR | libc::POLLHUP) != 0 {
                    let mut out = c.out.lock();
                    alive = out.flush(&c.stream);
                    drop(out);
                    c.room.notify_all();
                }
                if alive && ev & (libc::POLLIN | libc::POLLHUP | libc::POLLERR) != 0 {
                    let inb = inbufs.entry(c.id).or_insert_with(|| InBuf {
                        buf: Vec::new(),
                        want_hello: false,
                    });
                    alive = self.read_from(c, inb, &mut scratch, &*handler);
                }
                if !alive {
                    self.close(c, &mut inbufs);
                }
            }
            // Connections a sender saw fail are closed here (their queue reports `closed`).
        }
        let all: Vec<Arc<Conn>> = self.table.lock().all.values().cloned().collect();
        for c in all {
            self.close(&c, &mut inbufs);
        }
    }
}

fn start_connect(addr: SocketAddrV4) -> io::Result<TcpStream> {
    let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)?;
    s.set_nonblocking(true)?;
    s.set_tcp_nodelay(true)?;
    match s.connect(&SocketAddr::V4(addr).into()) {
        Ok(()) => {}
        Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => {}
        Err(e) => return Err(e),
    }
    Ok(s.into())
}

impl Transport for TcpTransport {
    fn name(&self) -> &'static str {
        "tcp4"
    }

    fn kinds(&self) -> &[i32] {
        &[locator_kind::TESSERA_TCP4]
    }

    fn reaches(&self, l: &Locator) -> bool {
        l.to_tcp_addr_v4().is_some()
    }

    fn locators(&self) -> TransportLocators {
        self.locators
    }

    fn spdp_destinations(&self) -> &[Locator] {
        &self.spdp_destinations
    }

    fn send_to(&self, buf: &[u8], dest: &Locator) -> io::Result<()> {
        self.send(buf, dest, true)
    }

    fn try_send_to(&self, buf: &[u8], dest: &Locator) -> io::Result<()> {
        self.send(buf, dest, false)
    }

    fn start(&self, handler: Arc<dyn DatagramHandler>) -> Result<Receivers, TransportError> {
        if self.started.swap(true, Ordering::SeqCst) {
            return Err(TransportError::AlreadyStarted);
        }
        let mut r = Receivers::new(self.inner.stop.clone());
        let inner = self.inner.clone();
        let h = std::thread::Builder::new()
            .name(format!("tessera-tcp-{}", self.inner.own.port()))
            .spawn(move || inner.run(handler))
            .map_err(sock_err("start TCP I/O thread"))?;
        let inner = self.inner.clone();
        r.add(h, Box::new(move || inner.wake()));
        Ok(r)
    }

    fn max_datagram_size(&self) -> usize {
        MAX_FRAME
    }

    fn stats(&self) -> &TransportStats {
        &self.inner.stats
    }
}

#[cfg(test)]
#[path = "tcp_tests.rs"]
mod tests;
