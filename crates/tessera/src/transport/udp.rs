//! The UDP/IPv4 transport: sockets on the RTPS well-known ports, locators to advertise, sending.
//!
//! # Sockets
//! | socket | bound to | purpose |
//! |---|---|---|
//! | SPDP multicast | `0.0.0.0:7400+250d`, `SO_REUSEADDR`+`SO_REUSEPORT`, group joined on the interface | discovery announcements from everyone |
//! | user multicast | `0.0.0.0:7401+250d`, likewise | user data sent to the group |
//! | metatraffic unicast | `0.0.0.0:7410+250d+2i` (exclusive) | SEDP, directed SPDP, builtin heartbeats/acknacks |
//! | user unicast | `0.0.0.0:7411+250d+2i` (exclusive) | user data, heartbeats and acknacks |
//! | send | `0.0.0.0:ephemeral` | everything we send; multicast TTL 1 on the chosen interface |
//!
//! The participant index `i` is the first for which both unicast ports bind, so several
//! participants share a host without configuration and a peer without multicast can find us by
//! probing the first few indices (as Cyclone DDS does on interfaces without multicast).
//!
//! The unicast sockets are bound to the wildcard address rather than to the interface address:
//! a peer on the same host may address us via `127.0.0.1` or via the interface address, and a
//! wildcard bind receives both while still claiming the port exclusively (no `SO_REUSEADDR`).
//! The *advertised* locators always carry the interface address — never `0.0.0.0`.
//!
//! Multicast sockets are opened only when the interface has `IFF_MULTICAST` and the group can be
//! joined; otherwise [`UdpTransport::multicast_enabled`] is false, no multicast locators are
//! advertised, multicast destinations are skipped when sending, and SPDP goes by unicast (see
//! [`UdpTransport::spdp_destinations`]). `IP_MULTICAST_ALL` is cleared so that a multicast
//! socket sees only the groups it joined itself.
//!
//! # Environment
//! Read by [`UdpConfig::new`] / [`UdpConfig::apply_env`] unless set explicitly:
//! - `TESSERA_INTERFACE`: interface name or IPv4 address.
//! - `TESSERA_PEERS`: `ip[:port],...` unicast discovery peers.
//! - `TESSERA_MULTICAST`: `0`/`false`/`off` disables multicast.
//!
//! What multicast is used for is the participant's choice
//! ([`crate::ParticipantConfig::allow_multicast`], `TESSERA_ALLOW_MULTICAST=false|spdp|true`,
//! see [`super::AllowMulticast`]); `false` there closes the multicast sockets as well.
//!
//! # Datagram size
//! A reliable writer may send datagrams up to 65,507 B
//! ([`Transport::max_datagram_size`](super::Transport::max_datagram_size)): on Ethernet they
//! leave as up to 45 IP fragments, which costs far fewer system calls and receiver wake-ups than
//! MTU-sized datagrams, and its readers' repair requests tell it when the path loses fragments
//! (it then drops to MTU-sized datagrams: see `tessera_rtps::writer`'s loss watch). A writer
//! without that feedback (best effort) keeps to
//! [`Transport::best_effort_datagram_size`](super::Transport::best_effort_datagram_size): the
//! interface's MTU less the IPv4 and UDP headers where that exceeds 14,720 B (65,507 on
//! loopback: nothing is fragmented by IP), and 14,720 B otherwise, Cyclone DDS's default (see
//! [`super::iface::MIN_DATAGRAM`]).

use std::io;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, UdpSocket};
use std::os::fd::{AsFd, AsRawFd};
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use socket2::{Domain, InterfaceIndexOrAddress, Protocol, SockAddr, SockRef, Socket, Type};
use tessera_rtps::types::{locator_kind, Locator};

use super::iface::{self, Interface, InterfaceError};
use super::ports::{PortMapping, DEFAULT_MULTICAST_GROUP};
use super::recv::{Channel, DatagramHandler, ReceiveStats, Receivers};

/// Environment variable naming the interface (name or IPv4 address).
pub const ENV_INTERFACE: &str = "TESSERA_INTERFACE";
/// Environment variable: `1` to use IPv4 broadcast instead of multicast
/// ([`UdpConfig::broadcast`]).
pub const ENV_BROADCAST: &str = "TESSERA_BROADCAST";
/// Environment variable listing unicast peers, `ip[:port],...`.
pub const ENV_PEERS: &str = "TESSERA_PEERS";
/// Environment variable naming the UDPv6 transport's interface (name or IPv6 address).
pub const ENV_INTERFACE6: &str = "TESSERA_INTERFACE6";
/// Environment variable that disables multicast when `0`, `false`, `no` or `off`.
pub const ENV_MULTICAST: &str = "TESSERA_MULTICAST";

/// Participant indices probed by unicast SPDP when a peer's port is not known (0..=8, the
/// range Cyclone DDS probes).
pub const PROBED_PARTICIPANT_IDS: std::ops::RangeInclusive<u32> = 0..=8;

/// Default requested receive socket buffer size (8 MiB).
pub const DEFAULT_SOCKET_BUFFER: usize = 8 << 20;

/// Smallest send socket buffer used when [`UdpConfig::send_buffer`] is `None` (64 KiB).
pub const MIN_SEND_BUFFER: usize = 64 << 10;

/// Default number of datagrams read per receive syscall.
pub const DEFAULT_RECV_BATCH: usize = 16;

/// Errors opening a UDP transport.
#[derive(Debug, thiserror::Error)]
pub enum TransportError {
    /// No usable interface (the caller's configuration or the host is at fault).
    #[error(transparent)]
    Interface(#[from] InterfaceError),
    /// The configuration is invalid (caller's fault).
    #[error("invalid transport configuration: {0}")]
    InvalidConfig(String),
    /// Every participant index up to the maximum has a port in use (resource exhausted).
    #[error("no free participant index in domain {domain} (tried 0..={max})")]
    NoParticipantIndex {
        /// The domain id.
        domain: u32,
        /// The highest index tried.
        max: u32,
    },
    /// A socket operation failed (the host refused a resource).
    #[error("{what}: {source}")]
    Socket {
        /// What was being done.
        what: String,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// [`UdpTransport::start`] was called twice (caller's fault).
    #[error("receive threads already started")]
    AlreadyStarted,
}

pub(super) fn sock_err(what: impl Into<String>) -> impl FnOnce(io::Error) -> TransportError {
    let what = what.into();
    move |source| TransportError::Socket { what, source }
}

/// A configured unicast peer: an address and optionally a port.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Peer {
    /// The peer's IPv4 address.
    pub addr: Ipv4Addr,
    /// A port, or `None` to probe the metatraffic ports of [`PROBED_PARTICIPANT_IDS`].
    pub port: Option<u16>,
}

impl FromStr for Peer {
    type Err = TransportError;

    fn from_str(s: &str) -> Result<Peer, TransportError> {
        let s = s.trim();
        if let Ok(a) = s.parse::<SocketAddrV4>() {
            if a.port() == 0 {
                return Err(TransportError::InvalidConfig(format!("peer {s:?}: port 0")));
            }
            return Ok(Peer {
                addr: *a.ip(),
                port: Some(a.port()),
            });
        }
        s.parse::<Ipv4Addr>()
            .map(|addr| Peer { addr, port: None })
            .map_err(|_| TransportError::InvalidConfig(format!("peer {s:?}: expected IPv4[:port]")))
    }
}

/// Parses a comma-separated peer list (`TESSERA_PEERS` syntax); empty items are skipped.
pub fn parse_peers(s: &str) -> Result<Vec<Peer>, TransportError> {
    s.split(',')
        .filter(|p| !p.trim().is_empty())
        .map(Peer::from_str)
        .collect()
}

/// Configuration of a [`UdpTransport`]. Build with [`UdpConfig::new`] and adjust fields.
#[derive(Debug, Clone)]
pub struct UdpConfig {
    /// DDS domain id (0..=232).
    pub domain_id: u32,
    /// Interface name or IPv4 address; `None` selects automatically.
    pub interface: Option<String>,
    /// A fixed participant index; `None` takes the first free one.
    pub participant_id: Option<u32>,
    /// Highest participant index tried when `participant_id` is `None`.
    pub max_participant_id: u32,
    /// Port mapping (spec defaults).
    pub ports: PortMapping,
    /// Multicast group for SPDP and user multicast.
    pub multicast_group: Ipv4Addr,
    /// Interface of the UDPv6 transport (name or IPv6 address; `None`: see
    /// [`super::iface::select_ipv6`]). Read from `TESSERA_INTERFACE6`.
    pub interface6: Option<String>,
    /// IPv6 multicast group for SPDP and user multicast (UDPv6 transport).
    pub multicast_group6: std::net::Ipv6Addr,
    /// Whether multicast may be used at all (it is also used only if the interface has it).
    pub multicast: bool,
    /// Unicast discovery peers.
    pub peers: Vec<Peer>,
    /// Requested SO_RCVBUF of the receive sockets in bytes (smaller is accepted if the host
    /// refuses).
    pub socket_buffer: usize,
    /// Requested SO_SNDBUF of the send socket in bytes; `None` (default) keeps the host's
    /// default, raised to [`MIN_SEND_BUFFER`] if it is smaller.
    ///
    /// A send buffer bounds what one socket can have queued in the interface's qdisc, so a
    /// sender on a shaped or congested link blocks instead of overflowing the queue. A large
    /// one lets the qdisc drop datagrams (silently, as `UdpSndbufErrors`), and a dropped IP
    /// fragment leaves the rest of its datagram pinning the receiver's reassembly memory.
    pub send_buffer: Option<usize>,
    /// Datagrams per receive syscall (1 disables recvmmsg).
    pub recv_batch: usize,
    /// How the user-data receive threads wait (`TESSERA_WAIT`; see [`super::wait`]).
    pub wait: super::WaitStrategy,
    /// Use the interface's IPv4 broadcast address instead of the multicast group, for
    /// discovery and user data alike (`TESSERA_BROADCAST=1`): for networks without multicast
    /// routing or IGMP snooping, and as the seeds' federated product did. Readers announce the
    /// broadcast address as their multicast locator, so a writer still sends once per subnet.
    pub broadcast: bool,
}

impl UdpConfig {
    /// Defaults for `domain_id`, with the `TESSERA_*` environment variables applied.
    pub fn new(domain_id: u32) -> Result<UdpConfig, TransportError> {
        let mut c = UdpConfig::without_env(domain_id);
        c.apply_env()?;
        Ok(c)
    }

    /// Defaults for `domain_id`, ignoring the environment.
    pub fn without_env(domain_id: u32) -> UdpConfig {
        let ports = PortMapping::default();
        UdpConfig {
            domain_id,
            interface: None,
            participant_id: None,
            max_participant_id: ports.max_participant_id(),
            ports,
            multicast_group: DEFAULT_MULTICAST_GROUP,
            interface6: None,
            multicast_group6: super::ports::DEFAULT_MULTICAST_GROUP_V6,
            multicast: true,
            peers: Vec::new(),
            socket_buffer: DEFAULT_SOCKET_BUFFER,
            send_buffer: None,
            recv_batch: DEFAULT_RECV_BATCH,
            wait: super::WaitStrategy::Block,
            broadcast: false,
        }
    }

    /// Applies `TESSERA_INTERFACE` and `TESSERA_INTERFACE6` (if no interface is set yet),
    /// `TESSERA_PEERS` (appended), `TESSERA_MULTICAST` and `TESSERA_WAIT`.
    pub fn apply_env(&mut self) -> Result<(), TransportError> {
        if self.interface.is_none() {
            if let Ok(v) = std::env::var(ENV_INTERFACE) {
                if !v.trim().is_empty() {
                    self.interface = Some(v.trim().to_string());
                }
            }
        }
        if self.interface6.is_none() {
            if let Ok(v) = std::env::var(ENV_INTERFACE6) {
                if !v.trim().is_empty() {
                    self.interface6 = Some(v.trim().to_string());
                }
            }
        }
        if let Ok(v) = std::env::var(ENV_BROADCAST) {
            match v.trim().to_ascii_lowercase().as_str() {
                "1" | "true" | "yes" | "on" => self.broadcast = true,
                "" | "0" | "false" | "no" | "off" => {}
                other => {
                    return Err(TransportError::InvalidConfig(format!(
                        "{ENV_BROADCAST}={other:?}: expected true or false"
                    )))
                }
            }
        }
        if let Some(w) = super::WaitStrategy::from_env()? {
            self.wait = w;
        }
        if let Ok(v) = std::env::var(ENV_PEERS) {
            self.peers.extend(parse_peers(&v)?);
        }
        if let Ok(v) = std::env::var(ENV_MULTICAST) {
            match v.trim().to_ascii_lowercase().as_str() {
                "0" | "false" | "no" | "off" => self.multicast = false,
                "" | "1" | "true" | "yes" | "on" => {}
                other => {
                    return Err(TransportError::InvalidConfig(format!(
                        "{ENV_MULTICAST}={other:?}: expected true or false"
                    )))
                }
            }
        }
        Ok(())
    }
}

/// The locators a participant advertises in SPDP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TransportLocators {
    /// `PID_METATRAFFIC_UNICAST_LOCATOR`.
    pub metatraffic_unicast: Locator,
    /// `PID_DEFAULT_UNICAST_LOCATOR`.
    pub default_unicast: Locator,
    /// `PID_METATRAFFIC_MULTICAST_LOCATOR` (only with multicast).
    pub metatraffic_multicast: Option<Locator>,
    /// `PID_DEFAULT_MULTICAST_LOCATOR` (only with multicast).
    pub default_multicast: Option<Locator>,
}

/// Counters of the send side.
#[derive(Debug, Default)]
pub struct SendStats {
    /// Datagrams sent.
    pub datagrams: AtomicU64,
    /// Bytes sent.
    pub bytes: AtomicU64,
    /// Send calls that failed.
    pub errors: AtomicU64,
    /// Destinations skipped: unknown locator kind, or multicast while multicast is off.
    pub ignored: AtomicU64,
    /// Non-blocking sends refused for lack of room (the datagram was queued by the caller).
    pub would_block: AtomicU64,
    /// Datagrams dropped by the transport itself (in-process: a full receive queue or
    /// injected loss).
    pub dropped: AtomicU64,
}

impl SendStats {
    /// Counts the outcome of one send of `len` bytes (a full buffer is `would_block`, not an
    /// error) and passes it on.
    pub fn record(&self, r: io::Result<usize>, len: usize) -> io::Result<()> {
        match r {
            Ok(_) => {
                self.record_sent(len);
                Ok(())
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                self.would_block.fetch_add(1, Ordering::Relaxed);
                Err(e)
            }
            Err(e) => {
                self.errors.fetch_add(1, Ordering::Relaxed);
                Err(e)
            }
        }
    }

    /// Counts one datagram of `len` bytes sent.
    pub fn record_sent(&self, len: usize) {
        self.datagrams.fetch_add(1, Ordering::Relaxed);
        self.bytes.fetch_add(len as u64, Ordering::Relaxed);
    }
}

/// Counters of one transport.
#[derive(Debug, Default)]
pub struct TransportStats {
    /// Send side.
    pub send: SendStats,
    /// Receive side (all receive threads).
    pub recv: Arc<ReceiveStats>,
}

/// A UDP/IPv4 RTPS transport. See the module docs.
///
/// All methods take `&self`; sending is safe from any number of threads at once.
#[derive(Debug)]
pub struct UdpTransport {
    domain_id: u32,
    participant_id: u32,
    interface: Interface,
    multicast: bool,
    /// The largest datagram for writers without loss feedback ([`iface::max_udp4_payload`];
    /// see the module docs).
    best_effort_datagram: usize,
    locators: TransportLocators,
    spdp_destinations: Vec<Locator>,
    send: UdpSocket,
    spdp_mc: Option<Arc<Socket>>,
    user_mc: Option<Arc<Socket>>,
    meta_uc: Arc<Socket>,
    user_uc: Arc<Socket>,
    recv_batch: usize,
    wait: super::WaitStrategy,
    started: AtomicBool,
    stats: TransportStats,
}

fn new_udp_socket() -> io::Result<Socket> {
    Socket::new(Domain::IPV4, Type::DGRAM, Some(Protocol::UDP))
}

/// Requests `size` bytes of socket buffer, first with the `*FORCE` option (works as root,
/// beyond `net.core.[rw]mem_max`), then the ordinary option. Returns the size granted.
pub(super) fn set_buffer(sock: &Socket, size: usize, recv: bool) -> usize {
    let (force, plain) = if recv {
        (libc::SO_RCVBUFFORCE, libc::SO_RCVBUF)
    } else {
        (libc::SO_SNDBUFFORCE, libc::SO_SNDBUF)
    };
    let val = libc::c_int::try_from(size).unwrap_or(libc::c_int::MAX);
    for opt in [force, plain] {
        // SAFETY: valid descriptor; the option value is a c_int whose size is passed.
        let r = unsafe {
            libc::setsockopt(
                sock.as_raw_fd(),
                libc::SOL_SOCKET,
                opt,
                (&val as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        if r == 0 {
            break;
        }
    }
    let got = if recv {
        sock.recv_buffer_size()
    } else {
        sock.send_buffer_size()
    };
    let got = got.unwrap_or(0);
    // Linux reports twice the requested size (bookkeeping overhead).
    if got < size {
        tracing::debug!(
            requested = size,
            granted = got,
            "socket {} buffer smaller than requested",
            if recv { "receive" } else { "send" }
        );
    }
    got
}

/// Sizes the send buffer per [`UdpConfig::send_buffer`]: `Some(n)` asks for `n` bytes; `None`
/// keeps the host's default, raised to [`MIN_SEND_BUFFER`] if smaller, so that a sender on a slow
/// or shaped link blocks instead of overfilling the queue in front of it.
pub(super) fn size_send_buffer(sock: &Socket, send: Option<usize>) {
    match send {
        Some(size) => {
            set_buffer(sock, size, false);
        }
        None => {
            if sock.send_buffer_size().unwrap_or(0) < MIN_SEND_BUFFER {
                set_buffer(sock, MIN_SEND_BUFFER, false);
            }
        }
    }
}

/// Sizes any UDP socket's buffers the way this transport sizes its own: `recv` bytes of
/// receive buffer (forced beyond `net.core.rmem_max` when privileged) and the send buffer per
/// `send`, as [`UdpConfig::send_buffer`]. For tools that must match Tessera's socket setup
/// (the benchmark's raw UDP floor).
pub fn size_socket_buffers<S: AsFd>(sock: &S, recv: usize, send: Option<usize>) {
    let sock = SockRef::from(sock);
    set_buffer(&sock, recv, true);
    size_send_buffer(&sock, send);
}

/// A receive socket for broadcasts to `port` (shared with the host's other participants).
fn open_broadcast_rx(port: u16, buffer: usize) -> io::Result<Socket> {
    let s = new_udp_socket()?;
    s.set_reuse_address(true)?;
    s.set_reuse_port(true)?;
    s.bind(&SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, port).into())?;
    set_buffer(&s, buffer, true);
    Ok(s)
}

fn open_multicast(
    port: u16,
    group: Ipv4Addr,
    itf: &Interface,
    buffer: usize,
) -> io::Result<Socket> {
    let s = new_udp_socket()?;
    s.set_reuse_address(true)?;
    s.set_reuse_port(true)?;
    s.bind(&SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, port).into())?;
    let which = if itf.index != 0 {
        InterfaceIndexOrAddress::Index(itf.index)
    } else {
        InterfaceIndexOrAddress::Address(itf.addr)
    };
    s.join_multicast_v4_n(&group, &which)?;
    // Only the groups joined on this socket, not those joined by other sockets of the host.
    s.set_multicast_all_v4(false)?;
    s.set_multicast_loop_v4(true)?;
    set_buffer(&s, buffer, true);
    Ok(s)
}

/// The unicast sockets of a participant (UDPv4 or UDPv6, opened by `open`): the first
/// participant index — the configured one, or 0 up to `max_participant_id` — whose metatraffic
/// and user ports both bind. A port already in use moves on to the next index. Returns the index,
/// the two ports and their sockets.
pub(super) fn bind_unicast_pair(
    c: &UdpConfig,
    family: &str,
    open: impl Fn(u16, usize) -> io::Result<Socket>,
) -> Result<(u32, u16, u16, Socket, Socket), TransportError> {
    let (d, ports) = (c.domain_id, &c.ports);
    let ids = match c.participant_id {
        Some(i) => i..=i,
        None => 0..=c.max_participant_id,
    };
    for pid in ids.clone() {
        let (Some(mp), Some(up)) = (
            ports.metatraffic_unicast(d, pid),
            ports.user_unicast(d, pid),
        ) else {
            break;
        };
        let bind = |p| match open(p, c.socket_buffer) {
            Ok(s) => Ok(Some(s)),
            Err(e) if e.kind() == io::ErrorKind::AddrInUse => Ok(None),
            Err(e) => Err(sock_err(format!("bind {family} port {p}"))(e)),
        };
        if let Some(meta) = bind(mp)? {
            if let Some(user) = bind(up)? {
                return Ok((pid, mp, up, meta, user));
            }
        }
    }
    Err(TransportError::NoParticipantIndex {
        domain: d,
        max: *ids.end(),
    })
}

fn open_unicast(port: u16, buffer: usize) -> io::Result<Socket> {
    let s = new_udp_socket()?;
    s.bind(&SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, port).into())?;
    set_buffer(&s, buffer, true);
    Ok(s)
}

fn invalid(msg: String) -> TransportError {
    TransportError::InvalidConfig(msg)
}

impl UdpTransport {
    /// Selects the interface, binds all sockets and computes the locators.
    pub fn new(config: UdpConfig) -> Result<UdpTransport, TransportError> {
        let c = &config;
        let ports = &c.ports;
        let d = c.domain_id;
        let spdp_port = ports
            .spdp_multicast(d)
            .ok_or_else(|| invalid(format!("domain id {d} out of range")))?;
        let user_mc_port = ports
            .user_multicast(d)
            .ok_or_else(|| invalid(format!("domain id {d} out of range")))?;
        if !c.multicast_group.is_multicast() {
            return Err(invalid(format!(
                "{} is not a multicast address",
                c.multicast_group
            )));
        }

        let list = iface::list_ipv4()?;
        let itf = iface::select(&list, c.interface.as_deref())?;

        // With broadcast, the interface's broadcast address stands in for the group.
        let group = if c.broadcast {
            iface::broadcast_addr(&itf).ok_or_else(|| {
                invalid(format!(
                    "{} ({}/{}) has no broadcast address",
                    itf.name, itf.addr, itf.netmask
                ))
            })?
        } else {
            c.multicast_group
        };

        // Multicast sockets first: a failure here only disables multicast.
        let mut multicast = c.multicast && (itf.multicast || c.broadcast);
        let mut spdp_mc = None;
        let mut user_mc = None;
        if c.broadcast {
            let r = open_broadcast_rx(spdp_port, c.socket_buffer)
                .and_then(|a| Ok((a, open_broadcast_rx(user_mc_port, c.socket_buffer)?)));
            let (a, b) = r.map_err(sock_err("bind broadcast ports"))?;
            spdp_mc = Some(Arc::new(a));
            user_mc = Some(Arc::new(b));
        } else if multicast {
            let r =
                open_multicast(spdp_port, c.multicast_group, &itf, c.socket_buffer).and_then(|a| {
                    let b = open_multicast(user_mc_port, c.multicast_group, &itf, c.socket_buffer)?;
                    Ok((a, b))
                });
            match r {
                Ok((a, b)) => {
                    spdp_mc = Some(Arc::new(a));
                    user_mc = Some(Arc::new(b));
                }
                Err(e) => {
                    tracing::warn!(
                        interface = %itf.name,
                        "multicast unusable ({e}); falling back to unicast discovery"
                    );
                    multicast = false;
                }
            }
        }

        // Unicast sockets: the first participant index for which both ports bind.
        let (pid, meta_port, user_port, meta_uc, user_uc) =
            bind_unicast_pair(c, "UDP", open_unicast)?;

        // Send socket.
        let send = new_udp_socket().map_err(sock_err("create send socket"))?;
        send.bind(&SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 0).into())
            .map_err(sock_err("bind send socket"))?;
        size_send_buffer(&send, c.send_buffer);
        if c.broadcast {
            send.set_broadcast(true)
                .map_err(sock_err("set SO_BROADCAST"))?;
        } else if multicast {
            send.set_multicast_if_v4(&itf.addr)
                .map_err(sock_err("set IP_MULTICAST_IF"))?;
            send.set_multicast_ttl_v4(1)
                .map_err(sock_err("set IP_MULTICAST_TTL"))?;
            send.set_multicast_loop_v4(true)
                .map_err(sock_err("set IP_MULTICAST_LOOP"))?;
        }
        let send: UdpSocket = send.into();

        let locators = TransportLocators {
            metatraffic_unicast: Locator::udpv4(itf.addr, meta_port),
            default_unicast: Locator::udpv4(itf.addr, user_port),
            metatraffic_multicast: multicast.then(|| Locator::udpv4(group, spdp_port)),
            default_multicast: multicast.then(|| Locator::udpv4(group, user_mc_port)),
        };
        let spdp_destinations = spdp_destinations(c, group, &itf, multicast, meta_port);

        tracing::info!(
            interface = %itf.name,
            addr = %itf.addr,
            multicast,
            broadcast = c.broadcast,
            participant_id = pid,
            meta_port,
            user_port,
            "UDP transport open"
        );
        Ok(UdpTransport {
            domain_id: d,
            participant_id: pid,
            best_effort_datagram: iface::max_udp4_payload(&itf),
            interface: itf,
            multicast,
            locators,
            spdp_destinations,
            send,
            spdp_mc,
            user_mc,
            meta_uc: Arc::new(meta_uc),
            user_uc: Arc::new(user_uc),
            recv_batch: c.recv_batch,
            wait: c.wait,
            started: AtomicBool::new(false),
            stats: TransportStats::default(),
        })
    }

    /// The domain id.
    pub fn domain_id(&self) -> u32 {
        self.domain_id
    }

    /// The participant index whose unicast ports this transport holds.
    pub fn participant_id(&self) -> u32 {
        self.participant_id
    }

    /// The interface in use.
    pub fn interface(&self) -> &Interface {
        &self.interface
    }

    /// Whether multicast is in use (interface has `IFF_MULTICAST`, config allows it, the group
    /// was joined).
    pub fn multicast_enabled(&self) -> bool {
        self.multicast
    }

    /// The locators to advertise.
    pub fn locators(&self) -> &TransportLocators {
        &self.locators
    }

    /// Where to send SPDP announcements: the SPDP multicast group (with multicast); each
    /// configured peer (its port, or the metatraffic ports of participant indices 0..=8); and
    /// without multicast also this host's own address on those ports (other participants on
    /// the same host), except our own port.
    pub fn spdp_destinations(&self) -> &[Locator] {
        &self.spdp_destinations
    }

    /// Counters.
    pub fn stats(&self) -> &TransportStats {
        &self.stats
    }

    /// The address a locator is sent to, or `None` for locators this transport skips.
    fn dest(&self, l: &Locator) -> Option<SocketAddr> {
        if l.kind != locator_kind::UDPV4 {
            return None;
        }
        let a = l.to_socket_addr_v4()?;
        if a.ip().is_unspecified() || (!self.multicast && a.ip().is_multicast()) {
            return None;
        }
        Some(SocketAddr::V4(a))
    }

    /// Sends one datagram; blocks while the send buffer is full. Unknown locator kinds (UDPv6,
    /// shared memory, ...) and multicast while multicast is off are skipped and return `Ok`.
    pub fn send_to(&self, buf: &[u8], dest: &Locator) -> io::Result<()> {
        self.send_with(buf, dest, 0, 0)
    }

    /// Like [`UdpTransport::send_to`] but never blocks: a full send buffer is
    /// [`io::ErrorKind::WouldBlock`] (counted as `would_block`, not as an error).
    pub fn try_send_to(&self, buf: &[u8], dest: &Locator) -> io::Result<()> {
        self.send_with(buf, dest, libc::MSG_DONTWAIT, 0)
    }

    /// Sends with IP TOS byte `tos` (0: the socket's default), `flags` as `sendmsg`'s.
    fn send_with(&self, buf: &[u8], dest: &Locator, flags: libc::c_int, tos: u8) -> io::Result<()> {
        let Some(a) = self.dest(dest) else {
            self.stats.send.ignored.fetch_add(1, Ordering::Relaxed);
            return Ok(());
        };
        let r = if let (SocketAddr::V4(v4), true) = (a, tos != 0) {
            super::tos::send_marked(self.send.as_raw_fd(), buf, v4, tos, flags)
        } else if flags == 0 {
            self.send.send_to(buf, a)
        } else {
            SockRef::from(&self.send).send_to_with_flags(buf, &SockAddr::from(a), flags)
        };
        self.stats.send.record(r, buf.len())
    }

    /// Sends one datagram to each destination (with `sendmmsg`, in one syscall per 16
    /// destinations). Every destination is tried; the first error is returned.
    pub fn send_to_many(&self, buf: &[u8], dests: &[Locator]) -> io::Result<()> {
        const CHUNK: usize = 16;
        let mut first_err = None;
        let mut addrs: [Option<SockAddr>; CHUNK] = Default::default();
        let mut n = 0;
        for l in dests {
            match self.dest(l) {
                Some(a) => {
                    addrs[n] = Some(SockAddr::from(a));
                    n += 1;
                }
                None => {
                    self.stats.send.ignored.fetch_add(1, Ordering::Relaxed);
                }
            }
            if n == CHUNK {
                self.sendmmsg_same(buf, &addrs[..n], &mut first_err);
                n = 0;
            }
        }
        if n > 0 {
            self.sendmmsg_same(buf, &addrs[..n], &mut first_err);
        }
        first_err.map_or(Ok(()), Err)
    }

    /// Sends `buf` to every address in `addrs` (all `Some`), recording the first error.
    fn sendmmsg_same(
        &self,
        buf: &[u8],
        addrs: &[Option<SockAddr>],
        first_err: &mut Option<io::Error>,
    ) {
        const CHUNK: usize = 16;
        debug_assert!(addrs.len() <= CHUNK);
        let mut iov = libc::iovec {
            iov_base: buf.as_ptr() as *mut libc::c_void,
            iov_len: buf.len(),
        };
        let iov_ptr: *mut libc::iovec = &mut iov;
        // SAFETY: all-zero is a valid mmsghdr.
        let mut msgs: [libc::mmsghdr; CHUNK] = unsafe { std::mem::zeroed() };
        let mut count = 0;
        for (m, a) in msgs.iter_mut().zip(addrs.iter().flatten()) {
            m.msg_hdr.msg_name = a.as_ptr() as *mut libc::c_void;
            m.msg_hdr.msg_namelen = a.len();
            m.msg_hdr.msg_iov = iov_ptr;
            m.msg_hdr.msg_iovlen = 1;
            count += 1;
        }
        let fd = self.send.as_raw_fd();
        let mut done = 0usize;
        while done < count {
            // SAFETY: msgs[done..count] point to live addresses and to `iov`, which points to
            // `buf`; the kernel only reads them.
            let r = unsafe {
                libc::sendmmsg(
                    fd,
                    msgs.as_mut_ptr().add(done),
                    (count - done) as libc::c_uint,
                    0,
                )
            };
            if r > 0 {
                let r = r as usize;
                self.stats
                    .send
                    .datagrams
                    .fetch_add(r as u64, Ordering::Relaxed);
                self.stats
                    .send
                    .bytes
                    .fetch_add((r * buf.len()) as u64, Ordering::Relaxed);
                done += r;
                continue;
            }
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            // The datagram at `done` failed: record it and go on with the rest.
            self.stats.send.errors.fetch_add(1, Ordering::Relaxed);
            first_err.get_or_insert(e);
            done += 1;
        }
    }

    /// Starts the receive threads (one per socket), delivering to `handler`. May be called
    /// once. Dropping the returned [`Receivers`] stops and joins the threads; the sockets can
    /// then no longer receive.
    pub fn start(&self, handler: Arc<dyn DatagramHandler>) -> Result<Receivers, TransportError> {
        if self.started.swap(true, Ordering::SeqCst) {
            return Err(TransportError::AlreadyStarted);
        }
        let mut socks = vec![
            (self.meta_uc.clone(), Channel::MetatrafficUnicast),
            (self.user_uc.clone(), Channel::UserUnicast),
        ];
        if let Some(s) = &self.spdp_mc {
            socks.push((s.clone(), Channel::SpdpMulticast));
        }
        if let Some(s) = &self.user_mc {
            socks.push((s.clone(), Channel::UserMulticast));
        }
        let prefix = format!("d{}p{}", self.domain_id, self.participant_id);
        Receivers::spawn(
            socks,
            handler,
            self.stats.recv.clone(),
            self.recv_batch,
            self.wait,
            &prefix,
        )
        .map_err(sock_err("start receive threads"))
    }
}

/// See [`UdpTransport::spdp_destinations`].
fn spdp_destinations(
    c: &UdpConfig,
    group: Ipv4Addr,
    itf: &Interface,
    multicast: bool,
    own_port: u16,
) -> Vec<Locator> {
    let d = c.domain_id;
    let probe = |addr: Ipv4Addr, out: &mut Vec<Locator>| {
        for i in PROBED_PARTICIPANT_IDS {
            if let Some(p) = c.ports.metatraffic_unicast(d, i) {
                out.push(Locator::udpv4(addr, p));
            }
        }
    };
    let mut out = Vec::new();
    if multicast {
        if let Some(p) = c.ports.spdp_multicast(d) {
            out.push(Locator::udpv4(group, p));
        }
    }
    for peer in &c.peers {
        match peer.port {
            Some(p) => out.push(Locator::udpv4(peer.addr, p)),
            None => probe(peer.addr, &mut out),
        }
    }
    if !multicast {
        probe(itf.addr, &mut out);
    }
    let is_self = |l: &Locator| {
        l.to_socket_addr_v4()
            .is_some_and(|a| a.port() == own_port && (*a.ip() == itf.addr || a.ip().is_loopback()))
    };
    let mut seen = std::collections::HashSet::new();
    out.retain(|l| !is_self(l) && seen.insert(*l));
    out
}

impl super::Transport for UdpTransport {
    fn name(&self) -> &'static str {
        "udp4"
    }

    fn kinds(&self) -> &[i32] {
        &[locator_kind::UDPV4]
    }

    fn reaches(&self, l: &Locator) -> bool {
        self.dest(l).is_some()
    }

    fn locators(&self) -> TransportLocators {
        self.locators
    }

    fn spdp_destinations(&self) -> &[Locator] {
        &self.spdp_destinations
    }

    fn send_to(&self, buf: &[u8], dest: &Locator) -> io::Result<()> {
        UdpTransport::send_to(self, buf, dest)
    }

    fn try_send_to(&self, buf: &[u8], dest: &Locator) -> io::Result<()> {
        UdpTransport::try_send_to(self, buf, dest)
    }

    fn send_to_marked(&self, buf: &[u8], dest: &Locator, tos: u8) -> io::Result<()> {
        self.send_with(buf, dest, 0, tos)
    }

    fn try_send_to_marked(&self, buf: &[u8], dest: &Locator, tos: u8) -> io::Result<()> {
        self.send_with(buf, dest, libc::MSG_DONTWAIT, tos)
    }

    /// Unmarked datagrams of a few parts go out with one `sendmsg` over the parts (the kernel
    /// copies each from where it lies); a whole datagram, and marked ones (which carry their
    /// class in a control message), as by `try_send_to_marked`, joined first if in parts.
    fn try_send_parts_marked(&self, parts: &[&[u8]], dest: &Locator, tos: u8) -> io::Result<()> {
        const MAX_PARTS: usize = 16;
        if tos != 0 || parts.len() == 1 || parts.len() > MAX_PARTS {
            return super::joined(parts, |buf| {
                self.send_with(buf, dest, libc::MSG_DONTWAIT, tos)
            });
        }
        let Some(a) = self.dest(dest) else {
            self.stats.send.ignored.fetch_add(1, Ordering::Relaxed);
            return Ok(());
        };
        let mut iov = [io::IoSlice::new(&[]); MAX_PARTS];
        for (slot, p) in iov.iter_mut().zip(parts) {
            *slot = io::IoSlice::new(p);
        }
        let r = SockRef::from(&self.send).send_to_vectored_with_flags(
            &iov[..parts.len()],
            &SockAddr::from(a),
            libc::MSG_DONTWAIT,
        );
        self.stats
            .send
            .record(r, parts.iter().map(|p| p.len()).sum())
    }

    fn start(&self, handler: Arc<dyn DatagramHandler>) -> Result<Receivers, TransportError> {
        UdpTransport::start(self, handler)
    }

    fn max_datagram_size(&self) -> usize {
        iface::MAX_UDP4_PAYLOAD
    }

    fn best_effort_datagram_size(&self) -> usize {
        self.best_effort_datagram
    }

    fn stats(&self) -> &TransportStats {
        &self.stats
    }
}

/// The largest UDP/IPv4 payload (65535 − 20 bytes IP header − 8 bytes UDP header). Datagrams
/// beyond one Ethernet frame are fragmented by IP; the writer keeps its own, smaller sizes
/// for data and repairs.
pub const MAX_UDP_PAYLOAD: usize = 65507;

#[cfg(test)]
#[path = "udp_tests.rs"]
mod tests;
