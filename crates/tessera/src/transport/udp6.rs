//! The UDP/IPv6 transport: the same sockets, ports and receive threads as UDP/IPv4
//! ([`super::udp`]), for the `UDPV6` locator kind.
//!
//! - Ports follow the RTPS mapping as for IPv4; a participant with both transports uses the
//!   same participant index (and so the same port numbers) on both.
//! - Every socket is `IPV6_V6ONLY`, so its wildcard bind does not take the IPv4 port too.
//! - SPDP multicast goes to [`super::ports::DEFAULT_MULTICAST_GROUP_V6`] (Cyclone DDS's
//!   default) with hop limit 1, joined on the chosen interface. Linux does not loop IPv6
//!   multicast back on `lo`, so on a loopback-only interface multicast is off and SPDP goes by
//!   unicast to this host's metatraffic ports (as UDPv4 does without multicast).
//! - Link-local destinations get the interface's index as scope id.
//!
//! Configured peers (`TESSERA_PEERS`) are IPv4 only and ignored here.

use std::io;
use std::net::{Ipv6Addr, SocketAddr, SocketAddrV6, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use socket2::{Domain, Protocol, SockAddr, SockRef, Socket, Type};
use tessera_rtps::types::{locator_kind, Locator};

use super::iface::{self, Interface6};
use super::recv::{Channel, DatagramHandler, Receivers};
use super::udp::{
    bind_unicast_pair, set_buffer, size_send_buffer, sock_err, TransportError, TransportLocators,
    TransportStats, UdpConfig, PROBED_PARTICIPANT_IDS,
};
use super::Transport;

/// The largest UDP/IPv6 payload without jumbograms (65535 − 8 bytes UDP header).
pub const MAX_UDP6_PAYLOAD: usize = 65527;

/// A UDP/IPv6 RTPS transport. See the module docs.
#[derive(Debug)]
pub struct Udp6Transport {
    domain_id: u32,
    participant_id: u32,
    interface: Interface6,
    multicast: bool,
    locators: TransportLocators,
    spdp_destinations: Vec<Locator>,
    send: UdpSocket,
    /// (socket, channel) for the receive threads.
    sockets: Vec<(Arc<Socket>, Channel)>,
    recv_batch: usize,
    wait: super::WaitStrategy,
    started: AtomicBool,
    stats: TransportStats,
}

fn new_socket() -> io::Result<Socket> {
    let s = Socket::new(Domain::IPV6, Type::DGRAM, Some(Protocol::UDP))?;
    s.set_only_v6(true)?;
    Ok(s)
}

fn any(port: u16) -> SockAddr {
    SocketAddrV6::new(Ipv6Addr::UNSPECIFIED, port, 0, 0).into()
}

fn open_multicast(
    port: u16,
    group: &Ipv6Addr,
    itf: &Interface6,
    buffer: usize,
) -> io::Result<Socket> {
    let s = new_socket()?;
    s.set_reuse_address(true)?;
    s.set_reuse_port(true)?;
    s.bind(&any(port))?;
    s.join_multicast_v6(group, itf.index)?;
    // Only the groups joined on this socket (best effort: IPV6_MULTICAST_ALL needs Linux 4.20).
    let _ = s.set_multicast_all_v6(false);
    s.set_multicast_loop_v6(true)?;
    set_buffer(&s, buffer, true);
    Ok(s)
}

fn open_unicast(port: u16, buffer: usize) -> io::Result<Socket> {
    let s = new_socket()?;
    s.bind(&any(port))?;
    set_buffer(&s, buffer, true);
    Ok(s)
}

impl Udp6Transport {
    /// Selects the interface (`config.interface6`), binds all sockets, computes the locators.
    pub fn new(config: &UdpConfig) -> Result<Udp6Transport, TransportError> {
        let c = config;
        let (ports, d) = (&c.ports, c.domain_id);
        let bad_domain = || TransportError::InvalidConfig(format!("domain id {d} out of range"));
        let spdp_port = ports.spdp_multicast(d).ok_or_else(bad_domain)?;
        let user_mc_port = ports.user_multicast(d).ok_or_else(bad_domain)?;
        if !c.multicast_group6.is_multicast() {
            return Err(TransportError::InvalidConfig(format!(
                "{} is not a multicast address",
                c.multicast_group6
            )));
        }
        let itf = iface::select_ipv6(&iface::list_ipv6()?, c.interface6.as_deref())?;

        let mut sockets = Vec::new();
        let mut multicast = c.multicast && itf.multicast && !itf.loopback;
        if multicast {
            let g = &c.multicast_group6;
            let r = open_multicast(spdp_port, g, &itf, c.socket_buffer)
                .and_then(|a| Ok((a, open_multicast(user_mc_port, g, &itf, c.socket_buffer)?)));
            match r {
                Ok((a, b)) => {
                    sockets.push((Arc::new(a), Channel::SpdpMulticast));
                    sockets.push((Arc::new(b), Channel::UserMulticast));
                }
                Err(e) => {
                    tracing::warn!(interface = %itf.name, "IPv6 multicast unusable ({e})");
                    multicast = false;
                }
            }
        }

        let (pid, meta_port, user_port, meta, user) = bind_unicast_pair(c, "UDPv6", open_unicast)?;
        sockets.push((Arc::new(meta), Channel::MetatrafficUnicast));
        sockets.push((Arc::new(user), Channel::UserUnicast));

        let send = new_socket().map_err(sock_err("create UDPv6 send socket"))?;
        send.bind(&any(0))
            .map_err(sock_err("bind UDPv6 send socket"))?;
        size_send_buffer(&send, c.send_buffer);
        if multicast {
            send.set_multicast_if_v6(itf.index)
                .map_err(sock_err("set IPV6_MULTICAST_IF"))?;
            send.set_multicast_hops_v6(1)
                .map_err(sock_err("set IPV6_MULTICAST_HOPS"))?;
            send.set_multicast_loop_v6(true)
                .map_err(sock_err("set IPV6_MULTICAST_LOOP"))?;
        }

        let group = |p| Locator::udpv6(c.multicast_group6, p);
        let locators = TransportLocators {
            metatraffic_unicast: Locator::udpv6(itf.addr, meta_port),
            default_unicast: Locator::udpv6(itf.addr, user_port),
            metatraffic_multicast: multicast.then(|| group(spdp_port)),
            default_multicast: multicast.then(|| group(user_mc_port)),
        };
        let spdp_destinations = if multicast {
            vec![group(spdp_port)]
        } else {
            PROBED_PARTICIPANT_IDS
                .filter_map(|i| ports.metatraffic_unicast(d, i))
                .filter(|p| *p != meta_port)
                .map(|p| Locator::udpv6(itf.addr, p))
                .collect()
        };
        tracing::info!(interface = %itf.name, addr = %itf.addr, multicast, participant_id = pid,
            meta_port, user_port, "UDPv6 transport open");
        Ok(Udp6Transport {
            domain_id: d,
            participant_id: pid,
            interface: itf,
            multicast,
            locators,
            spdp_destinations,
            send: send.into(),
            sockets,
            recv_batch: c.recv_batch,
            wait: c.wait,
            started: AtomicBool::new(false),
            stats: TransportStats::default(),
        })
    }

    /// The participant index whose unicast ports this transport holds.
    pub fn participant_id(&self) -> u32 {
        self.participant_id
    }

    /// Whether IPv6 multicast is in use.
    pub fn multicast_enabled(&self) -> bool {
        self.multicast
    }

    /// The address a locator is sent to, or `None` for locators this transport skips.
    fn dest(&self, l: &Locator) -> Option<SocketAddr> {
        if l.kind != locator_kind::UDPV6 {
            return None;
        }
        let SocketAddr::V6(mut a) = l.to_socket_addr()? else {
            return None;
        };
        if a.ip().is_unspecified() || (!self.multicast && a.ip().is_multicast()) {
            return None;
        }
        // Link-local unicast and link-scope multicast need the interface.
        let seg0 = a.ip().segments()[0];
        if seg0 & 0xffc0 == 0xfe80 || seg0 & 0xff0f == 0xff02 {
            a.set_scope_id(self.interface.index);
        }
        Some(SocketAddr::V6(a))
    }

    /// Sends with traffic class `tclass` (0: the socket's default), `flags` as `sendmsg`'s.
    fn send_with(
        &self,
        buf: &[u8],
        dest: &Locator,
        flags: libc::c_int,
        tclass: u8,
    ) -> io::Result<()> {
        let Some(a) = self.dest(dest) else {
            self.stats.send.ignored.fetch_add(1, Ordering::Relaxed);
            return Ok(());
        };
        let r = match a {
            SocketAddr::V6(v6) if tclass != 0 => {
                super::tos::send_marked6(self.send.as_raw_fd(), buf, v6, tclass, flags)
            }
            _ => SockRef::from(&self.send).send_to_with_flags(buf, &SockAddr::from(a), flags),
        };
        self.stats.send.record(r, buf.len())
    }
}

impl Transport for Udp6Transport {
    fn name(&self) -> &'static str {
        "udp6"
    }

    fn kinds(&self) -> &[i32] {
        &[locator_kind::UDPV6]
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
        self.send_with(buf, dest, 0, 0)
    }

    fn try_send_to(&self, buf: &[u8], dest: &Locator) -> io::Result<()> {
        self.send_with(buf, dest, libc::MSG_DONTWAIT, 0)
    }

    fn send_to_marked(&self, buf: &[u8], dest: &Locator, tclass: u8) -> io::Result<()> {
        self.send_with(buf, dest, 0, tclass)
    }

    fn try_send_to_marked(&self, buf: &[u8], dest: &Locator, tclass: u8) -> io::Result<()> {
        self.send_with(buf, dest, libc::MSG_DONTWAIT, tclass)
    }

    fn start(&self, handler: Arc<dyn DatagramHandler>) -> Result<Receivers, TransportError> {
        if self.started.swap(true, Ordering::SeqCst) {
            return Err(TransportError::AlreadyStarted);
        }
        let prefix = format!("d{}p{}v6", self.domain_id, self.participant_id);
        Receivers::spawn(
            self.sockets.clone(),
            handler,
            self.stats.recv.clone(),
            self.recv_batch,
            self.wait,
            &prefix,
        )
        .map_err(sock_err("start UDPv6 receive threads"))
    }

    fn max_datagram_size(&self) -> usize {
        MAX_UDP6_PAYLOAD
    }

    fn stats(&self) -> &TransportStats {
        &self.stats
    }
}
