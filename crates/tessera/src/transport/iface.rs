//! IPv4 network interface enumeration and selection.
//!
//! Uses `getifaddrs(3)`; one [`Interface`] per IPv4 address. Selection order when nothing is
//! configured: the first interface that is up, not loopback and multicast-capable; then the
//! first that is up and not loopback; then loopback. That is also what Cyclone DDS does, so a
//! Tessera process and a Cyclone process on the same host pick the same interface.

use std::ffi::CStr;
use std::io;
use std::net::{Ipv4Addr, Ipv6Addr};

/// One IPv4 address of a network interface.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interface {
    /// Interface name (`eth0`, `lo`).
    pub name: String,
    /// Kernel interface index (0 if unknown).
    pub index: u32,
    /// The interface's IPv4 address.
    pub addr: Ipv4Addr,
    /// Netmask of that address.
    pub netmask: Ipv4Addr,
    /// `IFF_UP`.
    pub up: bool,
    /// `IFF_LOOPBACK`.
    pub loopback: bool,
    /// `IFF_MULTICAST`: whether IP multicast can be used on it.
    pub multicast: bool,
    /// `IFF_POINTOPOINT`.
    pub point_to_point: bool,
}

/// The MTU of the interface `name` (from `/sys/class/net/NAME/mtu`), or `None` when the
/// kernel does not say (no sysfs, a name that is not a plain file name).
pub fn mtu(name: &str) -> Option<usize> {
    if name.is_empty() || name.contains('/') || name.starts_with('.') {
        return None;
    }
    let s = std::fs::read_to_string(format!("/sys/class/net/{name}/mtu")).ok()?;
    s.trim().parse().ok().filter(|m| *m >= 68)
}

/// The IPv4 broadcast address of `itf` (its address with every host bit set); `None` for a
/// point-to-point link or a /31 or /32 address, which have none.
pub fn broadcast_addr(itf: &Interface) -> Option<Ipv4Addr> {
    let mask = u32::from(itf.netmask);
    if itf.point_to_point || mask >= 0xffff_fffe {
        return None;
    }
    Some(Ipv4Addr::from(u32::from(itf.addr) | !mask))
}

/// The largest UDP/IPv4 payload: what a reliable writer may send (IP fragments it).
pub const MAX_UDP4_PAYLOAD: usize = 65507;

/// The smallest largest-datagram a best-effort writer uses, whatever the MTU: Cyclone DDS's
/// default `MaxMessageSize`. On Ethernet such a datagram leaves as ten IP fragments; sending ten
/// times fewer datagrams than MTU-sized ones costs ten times fewer system calls and receiver
/// wake-ups, which decides throughput (measured across namespace hosts: MTU-sized datagrams ran
/// at 0.2–0.6× Cyclone). A lost fragment loses its datagram, which reliability repairs.
pub const MIN_DATAGRAM: usize = 14720;

/// The largest UDP/IPv4 payload one datagram on `itf` carries unfragmented: its MTU minus
/// the IPv4 (20) and UDP (8) headers, at most 65,507. Without a known MTU: 1,472 (Ethernet),
/// or 65,507 on loopback.
pub fn unfragmented_udp4_payload(itf: &Interface) -> usize {
    match mtu(&itf.name) {
        Some(m) => (m - 28).min(65507),
        None if itf.loopback => 65507,
        None => 1472,
    }
}

/// The largest datagram writers send on `itf`: the unfragmented payload where the MTU allows
/// more than [`MIN_DATAGRAM`] (65,507 on loopback), else [`MIN_DATAGRAM`].
pub fn max_udp4_payload(itf: &Interface) -> usize {
    unfragmented_udp4_payload(itf).max(MIN_DATAGRAM)
}

/// Why an interface could not be selected.
#[derive(Debug, thiserror::Error)]
pub enum InterfaceError {
    /// `getifaddrs` failed.
    #[error("cannot list network interfaces: {0}")]
    List(#[source] io::Error),
    /// The configured name or address matches no up IPv4 interface.
    #[error("no up IPv4 interface matches {0:?}")]
    NotFound(String),
    /// The host has no up IPv4 interface at all.
    #[error("no up IPv4 interface")]
    NoneUp,
}

/// Calls `f` with every address entry of every interface: the entry, its address family, its
/// name, its kernel index and its flags.
fn for_each_ifaddr(
    mut f: impl FnMut(&libc::ifaddrs, i32, String, u32, u32),
) -> Result<(), InterfaceError> {
    let mut head: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: `head` is a valid out-pointer; on success the list is freed below.
    if unsafe { libc::getifaddrs(&mut head) } != 0 {
        return Err(InterfaceError::List(io::Error::last_os_error()));
    }
    let mut cur = head;
    while !cur.is_null() {
        // SAFETY: `cur` is a node of the list returned by getifaddrs, alive until freeifaddrs.
        let ifa = unsafe { &*cur };
        cur = ifa.ifa_next;
        if ifa.ifa_addr.is_null() || ifa.ifa_name.is_null() {
            continue;
        }
        // SAFETY: ifa_addr is non-null and points to a sockaddr of at least sa_family's size.
        let family = i32::from(unsafe { (*ifa.ifa_addr).sa_family });
        // SAFETY: ifa_name is a NUL-terminated string owned by the list.
        let cname = unsafe { CStr::from_ptr(ifa.ifa_name) };
        // SAFETY: cname is a valid NUL-terminated string.
        let index = unsafe { libc::if_nametoindex(cname.as_ptr()) };
        f(
            ifa,
            family,
            cname.to_string_lossy().into_owned(),
            index,
            ifa.ifa_flags,
        );
    }
    // SAFETY: `head` came from a successful getifaddrs and is freed exactly once.
    unsafe { libc::freeifaddrs(head) };
    Ok(())
}

/// Lists the IPv4 addresses of all interfaces (up or not), in the kernel's order.
pub fn list_ipv4() -> Result<Vec<Interface>, InterfaceError> {
    let mut out = Vec::new();
    for_each_ifaddr(|ifa, family, name, index, flags| {
        if family != libc::AF_INET {
            return;
        }
        // SAFETY: family is AF_INET, so the address is a sockaddr_in.
        let addr = unsafe { sockaddr_in_to_ip(ifa.ifa_addr) };
        let netmask = if ifa.ifa_netmask.is_null() {
            Ipv4Addr::UNSPECIFIED
        } else {
            // SAFETY: the netmask of an AF_INET entry is a sockaddr_in.
            unsafe { sockaddr_in_to_ip(ifa.ifa_netmask) }
        };
        out.push(Interface {
            name,
            index,
            addr,
            netmask,
            up: flags & libc::IFF_UP as u32 != 0,
            loopback: flags & libc::IFF_LOOPBACK as u32 != 0,
            multicast: flags & libc::IFF_MULTICAST as u32 != 0,
            point_to_point: flags & libc::IFF_POINTOPOINT as u32 != 0,
        });
    })?;
    Ok(out)
}

/// One IPv6 address of a network interface.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interface6 {
    /// Interface name.
    pub name: String,
    /// Kernel interface index (the scope id of link-local addresses).
    pub index: u32,
    /// The address.
    pub addr: Ipv6Addr,
    /// `IFF_UP`.
    pub up: bool,
    /// `IFF_LOOPBACK`.
    pub loopback: bool,
    /// `IFF_MULTICAST`.
    pub multicast: bool,
}

impl Interface6 {
    /// Whether the address is link-local (`fe80::/10`): usable only with the interface index.
    pub fn link_local(&self) -> bool {
        self.addr.segments()[0] & 0xffc0 == 0xfe80
    }
}

/// Lists the IPv6 addresses of all interfaces (up or not), in the kernel's order.
pub fn list_ipv6() -> Result<Vec<Interface6>, InterfaceError> {
    let mut out = Vec::new();
    for_each_ifaddr(|ifa, family, name, index, flags| {
        if family != libc::AF_INET6 {
            return;
        }
        // SAFETY: family is AF_INET6, so the address is a sockaddr_in6 (read unaligned: the
        // list gives no alignment guarantee).
        let sin6 = unsafe { std::ptr::read_unaligned(ifa.ifa_addr.cast::<libc::sockaddr_in6>()) };
        out.push(Interface6 {
            name,
            index,
            addr: Ipv6Addr::from(sin6.sin6_addr.s6_addr),
            up: flags & libc::IFF_UP as u32 != 0,
            loopback: flags & libc::IFF_LOOPBACK as u32 != 0,
            multicast: flags & libc::IFF_MULTICAST as u32 != 0,
        });
    })?;
    Ok(out)
}

/// Picks the IPv6 interface: `wanted` (a name or an address) if given; otherwise the first up
/// non-loopback multicast interface with a global address, then one with a link-local
/// address, then loopback (`::1`, which carries unicast only: Linux does not loop IPv6
/// multicast back on `lo`).
pub fn select_ipv6(
    list: &[Interface6],
    wanted: Option<&str>,
) -> Result<Interface6, InterfaceError> {
    let up = || list.iter().filter(|i| i.up);
    if let Some(w) = wanted {
        let by_addr = w.parse::<Ipv6Addr>().ok();
        // Several addresses per interface: prefer a global one.
        let mut m: Vec<&Interface6> = up()
            .filter(|i| i.name == w || Some(i.addr) == by_addr)
            .collect();
        m.sort_by_key(|i| i.link_local());
        return m
            .first()
            .map(|i| (*i).clone())
            .ok_or_else(|| InterfaceError::NotFound(w.to_string()));
    }
    let normal = |ll: bool| up().find(|i| !i.loopback && i.multicast && i.link_local() == ll);
    normal(false)
        .or_else(|| normal(true))
        .or_else(|| up().find(|i| i.loopback))
        .cloned()
        .ok_or(InterfaceError::NoneUp)
}

/// # Safety
/// `sa` must point to a valid `sockaddr_in`.
unsafe fn sockaddr_in_to_ip(sa: *const libc::sockaddr) -> Ipv4Addr {
    // SAFETY: guaranteed by the caller; read_unaligned because getifaddrs gives no alignment
    // promise for the embedded structures.
    let sin = unsafe { std::ptr::read_unaligned(sa as *const libc::sockaddr_in) };
    Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr))
}

/// Picks an interface from `list`.
///
/// `wanted` is an interface name or an IPv4 address; when given, the first up interface with
/// that name or address is returned. Otherwise see the module docs for the order.
pub fn select(list: &[Interface], wanted: Option<&str>) -> Result<Interface, InterfaceError> {
    let up = || list.iter().filter(|i| i.up);
    if let Some(w) = wanted.map(str::trim).filter(|w| !w.is_empty()) {
        let ip: Option<Ipv4Addr> = w.parse().ok();
        return up()
            .find(|i| i.name == w || Some(i.addr) == ip)
            .cloned()
            .ok_or_else(|| InterfaceError::NotFound(w.to_string()));
    }
    up().find(|i| !i.loopback && i.multicast)
        .or_else(|| up().find(|i| !i.loopback))
        .or_else(|| up().find(|i| i.loopback))
        .cloned()
        .ok_or(InterfaceError::NoneUp)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn itf(name: &str, addr: [u8; 4], up: bool, lo: bool, mc: bool) -> Interface {
        Interface {
            name: name.into(),
            index: 1,
            addr: Ipv4Addr::from(addr),
            netmask: Ipv4Addr::new(255, 0, 0, 0),
            up,
            loopback: lo,
            multicast: mc,
            point_to_point: false,
        }
    }

    #[test]
    fn loopback_mtu_gives_large_datagrams_and_unknown_names_none() {
        let list = list_ipv4().unwrap();
        let lo = list.iter().find(|i| i.loopback).unwrap();
        // Linux loopback MTU is 65536 (older kernels: 16436); either exceeds an Ethernet frame.
        assert!(unfragmented_udp4_payload(lo) > 1472, "{lo:?}");
        assert!(max_udp4_payload(lo) > MIN_DATAGRAM, "{lo:?}");
        assert!(max_udp4_payload(lo) <= 65507);
        assert_eq!(mtu("../lo"), None);
        assert_eq!(mtu("no-such-interface-xyz"), None);
        let mut eth = itf("eth-none", [10, 0, 0, 1], true, false, true);
        eth.name = "no-such-interface-xyz".into();
        assert_eq!(unfragmented_udp4_payload(&eth), 1472);
        assert_eq!(max_udp4_payload(&eth), MIN_DATAGRAM);
    }

    #[test]
    fn listing_works_and_has_loopback() {
        let l = list_ipv4().unwrap();
        // Every Linux network namespace has `lo` with 127.0.0.1 once it is up; it may be down
        // in a fresh namespace, but it is listed as long as it has an address.
        assert!(l.iter().all(|i| !i.name.is_empty()));
    }

    #[test]
    fn prefers_multicast_non_loopback() {
        let l = vec![
            itf("lo", [127, 0, 0, 1], true, true, true),
            itf("tun0", [10, 8, 0, 2], true, false, false),
            itf("eth1", [10, 0, 0, 2], false, false, true),
            itf("eth0", [192, 168, 1, 5], true, false, true),
        ];
        assert_eq!(select(&l, None).unwrap().name, "eth0");
        assert_eq!(select(&l[..2], None).unwrap().name, "tun0");
        assert_eq!(select(&l[..1], None).unwrap().name, "lo");
        assert!(matches!(
            select(&l[2..3], None),
            Err(InterfaceError::NoneUp)
        ));
    }

    #[test]
    fn explicit_by_name_or_address() {
        let l = vec![
            itf("lo", [127, 0, 0, 1], true, true, true),
            itf("eth0", [192, 168, 1, 5], true, false, true),
            itf("eth1", [10, 0, 0, 2], false, false, true),
        ];
        assert_eq!(select(&l, Some("lo")).unwrap().name, "lo");
        assert_eq!(select(&l, Some("192.168.1.5")).unwrap().name, "eth0");
        assert_eq!(select(&l, Some(" eth0 ")).unwrap().name, "eth0");
        assert!(matches!(
            select(&l, Some("eth1")),
            Err(InterfaceError::NotFound(_))
        ));
        assert!(matches!(
            select(&l, Some("wlan0")),
            Err(InterfaceError::NotFound(_))
        ));
        // An empty setting means "automatic".
        assert_eq!(select(&l, Some("")).unwrap().name, "eth0");
    }
}
