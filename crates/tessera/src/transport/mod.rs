//! Transports: how RTPS messages get from one participant to another.
//!
//! A [`Transport`] sends datagrams to the locator kinds it handles, advertises locators, and
//! runs receive threads that deliver datagrams straight to a [`DatagramHandler`] on the thread
//! that read them. A participant holds a [`Transports`] registry, keyed by locator kind, and
//! sends each destination locator through the transport that handles its kind.
//!
//! | transport | locator kind | module |
//! |---|---|---|
//! | UDP/IPv4 (default; interoperates with other RTPS implementations) | `UDPV4` | [`udp`] |
//! | UDP/IPv6 | `UDPV6` | [`udp`] (same code, other address family) |
//! | in-process (tests: no sockets, fault injection) | `TESSERA_INPROC` | [`inproc`] |
//! | shared memory (same host, beside UDP for discovery) | `TESSERA_SHM` | [`shm`], [`shm_ring`] |
//! | TCP/IPv4 (WAN, NAT, firewalls; Tessera's own framing) | `TESSERA_TCP4` | [`tcp`] |
//!
//! Shared pieces: well-known ports ([`ports`]), interface selection ([`iface`]), the UDP
//! receive threads ([`recv`]).
//!
//! # Sending and blocking
//! [`Transport::send_to`] may block (a full socket buffer on a shaped link): only application
//! threads call it. Receive and event threads call [`Transport::try_send_to`], which returns
//! [`std::io::ErrorKind::WouldBlock`] instead; the participant then queues the datagram (see
//! `crate::outbox`).

pub mod iface;
pub mod inproc;
pub mod ports;
pub mod recv;
pub mod shm;
mod shm_exit;
pub mod shm_pool;
pub mod shm_ring;
pub mod tcp;
mod tos;
pub mod udp;
pub mod udp6;
pub mod wait;

use std::io;
use std::sync::Arc;

pub use iface::{Interface, InterfaceError};
pub use inproc::{FaultConfig, InProcessNetwork, InProcessTransport};
pub use ports::{PortMapping, DEFAULT_MULTICAST_GROUP, DEFAULT_MULTICAST_GROUP_V6};
pub use recv::{Channel, DatagramHandler, ReceiveStats, Receivers};
pub use shm::{ShmConfig, ShmTransport};
pub use tcp::{TcpConfig, TcpTransport};
pub use udp::{
    parse_peers, Peer, SendStats, TransportError, TransportLocators, TransportStats, UdpConfig,
    UdpTransport,
};
pub use udp6::Udp6Transport;
pub use wait::WaitStrategy;

use tessera_rtps::types::{Locator, Locators};

/// Environment variable selecting the transports of a participant without an explicit
/// configuration: a comma-separated list of `udp4`, `udp6` and `shm` (default
/// [`DEFAULT_TRANSPORTS`], `udp4,shm`).
pub const ENV_TRANSPORTS: &str = "TESSERA_TRANSPORTS";

/// A socket transport a participant can use (the in-process one is chosen by its network).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TransportKind {
    /// UDP over IPv4 (the default).
    Udp4,
    /// UDP over IPv6.
    Udp6,
    /// Shared memory with participants on the same host (needs a UDP transport beside it for
    /// discovery; preferred over UDP wherever it reaches; on by default).
    Shm,
    /// TCP over IPv4 (discovery through `TESSERA_TCP_PEERS`; see [`tcp`]).
    Tcp4,
}

impl std::str::FromStr for TransportKind {
    type Err = TransportError;

    fn from_str(s: &str) -> Result<TransportKind, TransportError> {
        match s.trim().to_ascii_lowercase().as_str() {
            "udp4" | "udpv4" | "udp" => Ok(TransportKind::Udp4),
            "udp6" | "udpv6" => Ok(TransportKind::Udp6),
            "shm" => Ok(TransportKind::Shm),
            "tcp4" | "tcpv4" | "tcp" => Ok(TransportKind::Tcp4),
            other => Err(TransportError::InvalidConfig(format!(
                "unknown transport {other:?} (expected udp4, udp6, shm or tcp4)"
            ))),
        }
    }
}

/// Parses a `TESSERA_TRANSPORTS` list (`udp4,udp6,shm`); empty items are skipped, repeats
/// ignored.
pub fn parse_transports(s: &str) -> Result<Vec<TransportKind>, TransportError> {
    let mut out = Vec::new();
    for item in s.split(',').filter(|i| !i.trim().is_empty()) {
        let k: TransportKind = item.parse()?;
        if !out.contains(&k) {
            out.push(k);
        }
    }
    if out.is_empty() {
        return Err(TransportError::InvalidConfig(format!(
            "{ENV_TRANSPORTS} names no transport"
        )));
    }
    Ok(out)
}

/// The transports of a participant that names none: UDPv4, and shared memory with
/// participants on the same host (measured: fewer µs and less CPU per round trip than UDP
/// loopback; see `docs/architecture/shared-memory.md`). Where no segment can be made (no `/dev/shm`, or it is
/// full) the participant goes on with UDPv4 alone.
pub const DEFAULT_TRANSPORTS: &[TransportKind] = &[TransportKind::Udp4, TransportKind::Shm];

/// The transports selected by `TESSERA_TRANSPORTS`, or [`DEFAULT_TRANSPORTS`] when it is unset.
pub fn transports_from_env() -> Result<Vec<TransportKind>, TransportError> {
    match std::env::var(ENV_TRANSPORTS) {
        Ok(v) => parse_transports(&v),
        Err(_) => Ok(DEFAULT_TRANSPORTS.to_vec()),
    }
}

/// Environment variable for [`AllowMulticast`] when the participant's configuration leaves it
/// unset: `false`, `spdp` or `true` (default), as Cyclone DDS's `General/AllowMulticast`.
pub const ENV_ALLOW_MULTICAST: &str = "TESSERA_ALLOW_MULTICAST";

/// What multicast is used for, like Cyclone DDS's `AllowMulticast` setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum AllowMulticast {
    /// No multicast at all: SPDP goes by unicast to the configured peers and the local
    /// participant ports, user data by unicast (`TESSERA_ALLOW_MULTICAST=false`).
    Off,
    /// Multicast for participant discovery (SPDP) only: user data goes once per reader by
    /// unicast, readers announce no multicast locator and the participant no default
    /// multicast locator (`spdp`).
    SpdpOnly,
    /// Discovery and user data (the default, `true`): readers announce the participant's
    /// multicast locator, and a writer sends each new sample once to a multicast locator that
    /// several of its matched readers share (repairs stay unicast).
    #[default]
    On,
}

impl AllowMulticast {
    /// Parses a `TESSERA_ALLOW_MULTICAST` value (case-insensitive): `false`/`off`/`0`,
    /// `spdp`, `true`/`on`/`1` (empty: the default).
    pub fn parse(s: &str) -> Result<AllowMulticast, TransportError> {
        match s.trim().to_ascii_lowercase().as_str() {
            "false" | "off" | "no" | "0" => Ok(AllowMulticast::Off),
            "spdp" => Ok(AllowMulticast::SpdpOnly),
            "" | "true" | "on" | "yes" | "1" | "default" => Ok(AllowMulticast::On),
            other => Err(TransportError::InvalidConfig(format!(
                "{ENV_ALLOW_MULTICAST}={other:?}: expected false, spdp or true"
            ))),
        }
    }

    /// `TESSERA_ALLOW_MULTICAST`, or [`AllowMulticast::On`] when it is unset.
    pub fn from_env() -> Result<AllowMulticast, TransportError> {
        match std::env::var(ENV_ALLOW_MULTICAST) {
            Ok(v) => AllowMulticast::parse(&v),
            Err(_) => Ok(AllowMulticast::On),
        }
    }

    /// Whether user data may go to multicast locators.
    pub fn for_data(self) -> bool {
        self == AllowMulticast::On
    }
}

/// The IP TOS byte a writer's TRANSPORT_PRIORITY marks its datagrams with: a value in 1..=63
/// is the DSCP itself (46: expedited forwarding, 34: AF41, 8: CS1 …), shifted into the TOS
/// byte; above 63 is 63; 0 and below leave datagrams unmarked. Linux also derives the
/// datagram's queueing priority from it (`rt_tos2priority`), so local queueing disciplines
/// see the class too.
pub fn tos_of_priority(priority: i32) -> u8 {
    if priority <= 0 {
        0
    } else {
        (priority.min(63) as u8) << 2
    }
}

/// One way of moving datagrams between participants. Object-safe: a participant holds
/// `Arc<dyn Transport>`s in a [`Transports`] registry.
pub trait Transport: Send + Sync + std::fmt::Debug {
    /// A short name for logs (`udp4`, `udp6`, `inproc`).
    fn name(&self) -> &'static str;

    /// The locator kinds this transport sends to (each kind belongs to one transport).
    fn kinds(&self) -> &[i32];

    /// Whether this transport can send to `l` (its kind, and e.g. multicast only when enabled,
    /// the same in-process network only).
    fn reaches(&self, l: &Locator) -> bool {
        self.kinds().contains(&l.kind)
    }

    /// The locators to advertise in SPDP.
    fn locators(&self) -> TransportLocators;

    /// Where to send SPDP announcements.
    fn spdp_destinations(&self) -> &[Locator];

    /// Sends one datagram; may block until the transport has room (application threads only).
    /// A locator the transport does not reach is skipped and returns `Ok`.
    fn send_to(&self, buf: &[u8], dest: &Locator) -> io::Result<()>;

    /// Sends one datagram without blocking: [`io::ErrorKind::WouldBlock`] when the transport
    /// has no room now (the caller queues it). Unreachable locators are skipped (`Ok`).
    fn try_send_to(&self, buf: &[u8], dest: &Locator) -> io::Result<()>;

    /// [`Transport::send_to`] for a datagram of traffic class `tos` (the IP TOS byte: DSCP
    /// << 2, from the writer's TRANSPORT_PRIORITY, see [`tos_of_priority`]; 0: unmarked).
    /// Transports without classes ignore it.
    fn send_to_marked(&self, buf: &[u8], dest: &Locator, tos: u8) -> io::Result<()> {
        let _ = tos;
        self.send_to(buf, dest)
    }

    /// [`Transport::try_send_to`] for a datagram of traffic class `tos`.
    fn try_send_to_marked(&self, buf: &[u8], dest: &Locator, tos: u8) -> io::Result<()> {
        let _ = tos;
        self.try_send_to(buf, dest)
    }

    /// [`Transport::try_send_to_marked`] (or [`Transport::try_send_to`] for `tos` 0) of the
    /// datagram made of `parts` one after the other: a writer hands a large payload over
    /// where it lies rather than copying it next to its headers. By default the parts are
    /// joined in a buffer of this thread's; a transport that can copy them where they go
    /// (the shared-memory ring) does so.
    fn try_send_parts_marked(&self, parts: &[&[u8]], dest: &Locator, tos: u8) -> io::Result<()> {
        joined(parts, |buf| {
            if tos != 0 {
                self.try_send_to_marked(buf, dest, tos)
            } else {
                self.try_send_to(buf, dest)
            }
        })
    }

    /// Starts the receive threads, delivering to `handler`. Called once; dropping the returned
    /// [`Receivers`] stops and joins the threads.
    fn start(&self, handler: Arc<dyn DatagramHandler>) -> Result<Receivers, TransportError>;

    /// The largest datagram this transport carries, in bytes (RTPS header included): what a
    /// reliable writer, which learns of losses from its readers, may send.
    fn max_datagram_size(&self) -> usize;

    /// The largest datagram a writer without loss feedback (best effort) should send: where
    /// large datagrams are split into IP fragments, a lost fragment loses the whole datagram,
    /// so this is smaller than [`Transport::max_datagram_size`]. Defaults to that.
    fn best_effort_datagram_size(&self) -> usize {
        self.max_datagram_size()
    }

    /// Counters.
    fn stats(&self) -> &TransportStats;
}

/// Calls `f` with `parts` as one slice: the only part itself, or the parts joined in a buffer of
/// this thread's.
pub(crate) fn joined<R>(parts: &[&[u8]], f: impl FnOnce(&[u8]) -> R) -> R {
    thread_local! {
        static JOINED: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    if let [only] = parts {
        return f(only);
    }
    let join = |buf: &mut Vec<u8>| {
        buf.clear();
        for p in parts {
            tessera_rtps::copy::extend_bytes(buf, p);
        }
    };
    JOINED.with(|cell| match cell.try_borrow_mut() {
        Ok(mut buf) => {
            join(&mut buf);
            f(&buf)
        }
        // Re-entered from `f`: a buffer of its own.
        Err(_) => {
            let mut buf = Vec::new();
            join(&mut buf);
            f(&buf)
        }
    })
}

/// The transports of one participant, keyed by locator kind.
#[derive(Debug, Clone)]
pub struct Transports {
    list: Vec<Arc<dyn Transport>>,
    /// Locator kind → index in `list`; a handful of entries, searched linearly.
    by_kind: Vec<(i32, usize)>,
}

impl Transports {
    /// A registry of `list`. Fails if it is empty or two transports claim the same kind.
    pub fn new(list: Vec<Arc<dyn Transport>>) -> Result<Transports, TransportError> {
        if list.is_empty() {
            return Err(TransportError::InvalidConfig(
                "no transport selected".into(),
            ));
        }
        let mut by_kind: Vec<(i32, usize)> = Vec::new();
        for (i, t) in list.iter().enumerate() {
            for &k in t.kinds() {
                if by_kind.iter().any(|(kk, _)| *kk == k) {
                    return Err(TransportError::InvalidConfig(format!(
                        "two transports handle locator kind {k}"
                    )));
                }
                by_kind.push((k, i));
            }
        }
        Ok(Transports { list, by_kind })
    }

    /// The transports of a participant in `domain`: the in-process transport on `in_process`
    /// if given (and nothing else: no socket is opened), otherwise the UDP transports `kinds`
    /// (`None`: [`transports_from_env`]) configured by `udp` (`None`: the defaults with the
    /// environment applied). The first UDP kind is the preferred one (see
    /// [`Transports::select`]); shared memory (`shm`, configured by `shm`, `None`:
    /// [`ShmConfig::from_env`]) comes before both wherever it reaches, and needs a UDP
    /// or TCP transport beside it for discovery; TCP (`tcp`, `None`: [`TcpConfig::new`]) takes
    /// the participant index UDPv4 found. With both UDP transports, UDPv6 takes the
    /// participant index UDPv4 found.
    pub fn open(
        domain: u32,
        udp: Option<UdpConfig>,
        kinds: Option<&[TransportKind]>,
        in_process: Option<&InProcessNetwork>,
        shm: Option<ShmConfig>,
        tcp: Option<TcpConfig>,
    ) -> Result<Transports, TransportError> {
        if let Some(net) = in_process {
            return Transports::new(vec![Arc::new(InProcessTransport::new(net, domain))]);
        }
        let mut udp = match udp {
            Some(c) => c,
            None => UdpConfig::new(domain)?,
        };
        // Shared memory asked for by name must work; by default it is only a preference.
        let shm_required = kinds.is_some() || std::env::var_os(ENV_TRANSPORTS).is_some();
        let kinds = match kinds {
            Some(k) => k.to_vec(),
            None => transports_from_env()?,
        };
        let mut list: Vec<Arc<dyn Transport>> = Vec::new();
        if kinds.contains(&TransportKind::Shm) {
            if !kinds.iter().any(|k| *k != TransportKind::Shm) {
                return Err(TransportError::InvalidConfig(
                    "shm needs udp4, udp6 or tcp4 beside it (for discovery)".into(),
                ));
            }
            let c = match shm {
                Some(c) => c,
                None => ShmConfig::from_env()?,
            };
            match ShmTransport::new(domain, c) {
                Ok(t) => list.push(Arc::new(t)),
                Err(e) if !shm_required => {
                    tracing::warn!(error = %e, "no shared-memory transport; peers on this host are reached by UDP");
                }
                Err(e) => return Err(e),
            }
        }
        let mut v4 = None;
        if kinds.contains(&TransportKind::Udp4) {
            let t = UdpTransport::new(udp.clone())?;
            udp.participant_id = Some(t.participant_id());
            v4 = Some(Arc::new(t));
        }
        for k in kinds {
            match k {
                TransportKind::Udp4 => list.extend(v4.take().map(|t| t as Arc<dyn Transport>)),
                TransportKind::Udp6 => list.push(Arc::new(Udp6Transport::new(&udp)?)),
                TransportKind::Shm => {}
                TransportKind::Tcp4 => {
                    let mut c = match tcp.clone() {
                        Some(c) => c,
                        None => TcpConfig::new(domain)?,
                    };
                    if c.interface.is_none() {
                        c.interface = udp.interface.clone();
                    }
                    if c.participant_id.is_none() {
                        c.participant_id = udp.participant_id;
                    }
                    let t = TcpTransport::new(c)?;
                    udp.participant_id = Some(t.participant_id());
                    list.push(Arc::new(t));
                }
            }
        }
        Transports::new(list)
    }

    /// The transports, in configuration order.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<dyn Transport>> {
        self.list.iter()
    }

    /// The transport that handles `l`'s kind.
    pub fn for_locator(&self, l: &Locator) -> Option<&dyn Transport> {
        self.by_kind
            .iter()
            .find(|(k, _)| *k == l.kind)
            .map(|(_, i)| &*self.list[*i])
    }

    /// Whether one of our transports can send to `l`.
    pub fn reaches(&self, l: &Locator) -> bool {
        self.for_locator(l).is_some_and(|t| t.reaches(l))
    }

    /// The locators of a remote endpoint to send to: those one of our transports reaches, of
    /// the most preferred transport (configuration order) that reaches any, so that a
    /// dual-stack peer gets each datagram once, not once per address family. Unknown kinds are
    /// never chosen (but stay in the discovery data).
    pub fn select(&self, announced: &[Locator]) -> Locators {
        for t in &self.list {
            let mine: Locators = announced
                .iter()
                .filter(|l| t.kinds().contains(&l.kind) && t.reaches(l))
                .copied()
                .collect();
            if !mine.is_empty() {
                return mine;
            }
        }
        Locators::new()
    }

    /// The multicast locators of a remote reader to send to, given the unicast locators
    /// [`Transports::select`] chose for it: none when those belong to another transport (a
    /// reader reached by shared memory gets its datagrams there, not by UDP multicast).
    pub fn select_multicast(&self, unicast: &Locators, announced: &[Locator]) -> Locators {
        let mc = self.select(announced);
        let index = |l: &Locator| self.by_kind.iter().find(|(k, _)| *k == l.kind).map(|e| e.1);
        match (unicast.as_slice().first(), mc.as_slice().first()) {
            (Some(u), Some(m)) if index(u) != index(m) => Locators::new(),
            _ => mc,
        }
    }

    /// Sends through the transport that handles `dest` (may block; application threads only).
    /// A locator of no transport's kind is skipped (`Ok`).
    pub fn send_to(&self, buf: &[u8], dest: &Locator) -> io::Result<()> {
        match self.for_locator(dest) {
            Some(t) => t.send_to(buf, dest),
            None => Ok(()),
        }
    }

    /// Sends without blocking ([`io::ErrorKind::WouldBlock`] when there is no room now).
    pub fn try_send_to(&self, buf: &[u8], dest: &Locator) -> io::Result<()> {
        match self.for_locator(dest) {
            Some(t) => t.try_send_to(buf, dest),
            None => Ok(()),
        }
    }

    /// [`Transports::send_to`] for traffic class `tos` ([`Transport::send_to_marked`]).
    pub fn send_to_marked(&self, buf: &[u8], dest: &Locator, tos: u8) -> io::Result<()> {
        match self.for_locator(dest) {
            Some(t) if tos != 0 => t.send_to_marked(buf, dest, tos),
            Some(t) => t.send_to(buf, dest),
            None => Ok(()),
        }
    }

    /// [`Transports::try_send_to`] of the datagram made of `parts` (often just one), in traffic
    /// class `tos` ([`Transport::try_send_parts_marked`]).
    pub fn try_send_parts_marked(
        &self,
        parts: &[&[u8]],
        dest: &Locator,
        tos: u8,
    ) -> io::Result<()> {
        match self.for_locator(dest) {
            Some(t) => t.try_send_parts_marked(parts, dest, tos),
            None => Ok(()),
        }
    }

    /// Every transport's advertised locators.
    pub fn locators(&self) -> Vec<TransportLocators> {
        self.list.iter().map(|t| t.locators()).collect()
    }

    /// The default (user data) unicast locators of all transports.
    pub fn default_unicast(&self) -> Vec<Locator> {
        self.list
            .iter()
            .map(|t| t.locators().default_unicast)
            .collect()
    }

    /// The SPDP destinations of all transports.
    pub fn spdp_destinations(&self) -> Vec<Locator> {
        self.list
            .iter()
            .flat_map(|t| t.spdp_destinations().iter().copied())
            .collect()
    }

    /// The largest datagram every transport carries (the writer sizes datagrams by it).
    pub fn max_datagram_size(&self) -> usize {
        self.list
            .iter()
            .map(|t| t.max_datagram_size())
            .min()
            .unwrap_or(1472)
    }

    /// The largest datagram a writer sends to all of `locators`: the smallest of their
    /// transports' [`Transport::max_datagram_size`] for a `reliable` writer,
    /// [`Transport::best_effort_datagram_size`] otherwise; the registry's
    /// [`Transports::max_datagram_size`] when none is ours.
    pub fn path_datagram_size<'a>(
        &self,
        locators: impl IntoIterator<Item = &'a Locator>,
        reliable: bool,
    ) -> usize {
        locators
            .into_iter()
            .filter_map(|l| self.for_locator(l))
            .map(|t| {
                if reliable {
                    t.max_datagram_size()
                } else {
                    t.best_effort_datagram_size()
                }
            })
            .min()
            .unwrap_or_else(|| self.max_datagram_size())
    }

    /// Starts every transport's receive threads.
    pub fn start(&self, handler: Arc<dyn DatagramHandler>) -> Result<Receivers, TransportError> {
        let mut all: Option<Receivers> = None;
        for t in &self.list {
            let r = t.start(handler.clone())?;
            match &mut all {
                Some(a) => a.merge(r),
                None => all = Some(r),
            }
        }
        all.ok_or_else(|| TransportError::InvalidConfig("no transport selected".into()))
    }
}

/// Helpers for tests that open sockets.
#[cfg(test)]
pub(crate) mod test_support {
    /// Panics unless running inside a private network namespace prepared by
    /// `scripts/netns-run` (`TESSERA_IN_NETNS=1`): an ignored socket test run with
    /// `--include-ignored` outside one must fail loudly, never send on real interfaces.
    pub(crate) fn require_netns() {
        assert_eq!(
            std::env::var("TESSERA_IN_NETNS").as_deref(),
            Ok("1"),
            "this test opens sockets: run it via scripts/netns-run"
        );
    }
}

#[cfg(test)]
mod conformance_tests;

#[cfg(test)]
mod allow_multicast_tests {
    use super::AllowMulticast;

    #[test]
    fn parses_cyclone_style_values() {
        assert_eq!(AllowMulticast::parse("false").unwrap(), AllowMulticast::Off);
        assert_eq!(
            AllowMulticast::parse(" SPDP ").unwrap(),
            AllowMulticast::SpdpOnly
        );
        assert_eq!(AllowMulticast::parse("true").unwrap(), AllowMulticast::On);
        assert_eq!(AllowMulticast::parse("").unwrap(), AllowMulticast::On);
        assert!(AllowMulticast::parse("asm").is_err());
        assert!(AllowMulticast::On.for_data());
        assert!(!AllowMulticast::SpdpOnly.for_data());
        assert!(!AllowMulticast::Off.for_data());
    }
}
