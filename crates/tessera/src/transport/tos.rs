//! Sending a UDP datagram with a traffic class of its own: the IPv4 TOS byte or the IPv6
//! traffic class as ancillary data of `sendmsg`, so that one socket serves writers of every
//! TRANSPORT_PRIORITY (a `setsockopt(IP_TOS)` would mark every datagram of the socket).

use std::io;
use std::net::{SocketAddrV4, SocketAddrV6};
use std::os::fd::RawFd;

/// Sends `buf` to `to` from socket `fd` with TOS byte `tos` and `flags` (`MSG_DONTWAIT` …).
pub(crate) fn send_marked(
    fd: RawFd,
    buf: &[u8],
    to: SocketAddrV4,
    tos: u8,
    flags: libc::c_int,
) -> io::Result<usize> {
    let addr = libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: to.port().to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from(*to.ip()).to_be(),
        },
        sin_zero: [0; 8],
    };
    send_with_class(fd, buf, &addr, (libc::IPPROTO_IP, libc::IP_TOS), tos, flags)
}

/// [`send_marked`] for UDP/IPv6: `tclass` is the traffic class byte (DSCP << 2, as IPv4's TOS).
pub(crate) fn send_marked6(
    fd: RawFd,
    buf: &[u8],
    to: SocketAddrV6,
    tclass: u8,
    flags: libc::c_int,
) -> io::Result<usize> {
    let addr = libc::sockaddr_in6 {
        sin6_family: libc::AF_INET6 as libc::sa_family_t,
        sin6_port: to.port().to_be(),
        sin6_flowinfo: to.flowinfo().to_be(),
        sin6_addr: libc::in6_addr {
            s6_addr: to.ip().octets(),
        },
        sin6_scope_id: to.scope_id(),
    };
    let class = (libc::IPPROTO_IPV6, libc::IPV6_TCLASS);
    send_with_class(fd, buf, &addr, class, tclass, flags)
}

/// `sendmsg` to the socket address `addr` (a `sockaddr_in` or `sockaddr_in6`) with one int
/// control message `(level, type) = value`.
fn send_with_class<A>(
    fd: RawFd,
    buf: &[u8],
    addr: &A,
    (level, kind): (libc::c_int, libc::c_int),
    value: u8,
    flags: libc::c_int,
) -> io::Result<usize> {
    let mut iov = libc::iovec {
        iov_base: buf.as_ptr() as *mut libc::c_void,
        iov_len: buf.len(),
    };
    // Room for one control message carrying an int, aligned for `cmsghdr`.
    let mut control = [0u64; 4];
    // SAFETY: every pointer in `msg` points into locals that outlive the `sendmsg` call; the
    // control buffer is 32 bytes, more than CMSG_SPACE(sizeof(int)) (24 on 64-bit Linux), and
    // 8-byte aligned, so CMSG_FIRSTHDR returns a header inside it that we fully initialize.
    unsafe {
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_name = std::ptr::from_ref(addr) as *mut libc::c_void;
        msg.msg_namelen = std::mem::size_of::<A>() as libc::socklen_t;
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = libc::CMSG_SPACE(std::mem::size_of::<libc::c_int>() as u32) as _;
        let c = libc::CMSG_FIRSTHDR(&msg);
        if c.is_null() {
            return Err(io::Error::other(
                "no room for the traffic class control message",
            ));
        }
        (*c).cmsg_level = level;
        (*c).cmsg_type = kind;
        (*c).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<libc::c_int>() as u32) as _;
        std::ptr::write_unaligned(
            libc::CMSG_DATA(c).cast::<libc::c_int>(),
            libc::c_int::from(value),
        );
        let n = libc::sendmsg(fd, &msg, flags | libc::MSG_NOSIGNAL);
        if n < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(n as usize)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, Ipv6Addr, UdpSocket};
    use std::os::fd::AsRawFd;

    /// Receives one datagram on `sock` with the receive option `(level, recv_opt)` on and
    /// returns the byte of the control message `(level, kind)` (IPv4: IP_RECVTOS / IP_TOS;
    /// IPv6: IPV6_RECVTCLASS / IPV6_TCLASS, an int).
    fn recv_class(
        sock: &UdpSocket,
        level: libc::c_int,
        recv_opt: libc::c_int,
        kind: libc::c_int,
    ) -> u8 {
        let fd = sock.as_raw_fd();
        let mut data = [0u8; 256];
        let mut iov = libc::iovec {
            iov_base: data.as_mut_ptr().cast(),
            iov_len: data.len(),
        };
        let mut control = [0u64; 8];
        // SAFETY: as in `send_with_class`: locals outlive the call; CMSG_* stay inside `control`.
        unsafe {
            let on: libc::c_int = 1;
            let r = libc::setsockopt(
                fd,
                level,
                recv_opt,
                std::ptr::addr_of!(on).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            );
            assert_eq!(r, 0);
            let mut msg: libc::msghdr = std::mem::zeroed();
            msg.msg_iov = &mut iov;
            msg.msg_iovlen = 1;
            msg.msg_control = control.as_mut_ptr().cast();
            msg.msg_controllen = std::mem::size_of_val(&control) as _;
            assert!(libc::recvmsg(fd, &mut msg, 0) > 0);
            let mut c = libc::CMSG_FIRSTHDR(&msg);
            while !c.is_null() {
                if (*c).cmsg_level == level && (*c).cmsg_type == kind {
                    // IPv4's TOS is one byte, IPv6's traffic class an int (little-endian
                    // here: its low byte first).
                    return *libc::CMSG_DATA(c);
                }
                c = libc::CMSG_NXTHDR(&msg, c);
            }
        }
        panic!("no traffic class control message");
    }

    fn recv_tos(sock: &UdpSocket) -> u8 {
        recv_class(sock, libc::IPPROTO_IP, libc::IP_RECVTOS, libc::IP_TOS)
    }

    #[test]
    #[ignore = "needs a network namespace: scripts/netns-run (scripts/test runs it)"]
    fn ipv6_datagrams_carry_the_traffic_class_they_were_sent_with() {
        crate::transport::test_support::require_netns();
        let rx = UdpSocket::bind((Ipv6Addr::LOCALHOST, 0)).unwrap();
        let to = match rx.local_addr().unwrap() {
            std::net::SocketAddr::V6(a) => a,
            other => panic!("{other}"),
        };
        let tx = UdpSocket::bind((Ipv6Addr::LOCALHOST, 0)).unwrap();
        let recv = |s: &UdpSocket| {
            recv_class(
                s,
                libc::IPPROTO_IPV6,
                libc::IPV6_RECVTCLASS,
                libc::IPV6_TCLASS,
            )
        };
        for tclass in [46u8 << 2, 0, 8 << 2] {
            let n = send_marked6(tx.as_raw_fd(), b"hello", to, tclass, 0).unwrap();
            assert_eq!(n, 5);
            assert_eq!(recv(&rx), tclass);
        }
        tx.send_to(b"plain", to).unwrap();
        assert_eq!(recv(&rx), 0);
    }

    #[test]
    #[ignore = "needs a network namespace: scripts/netns-run (scripts/test runs it)"]
    fn datagrams_carry_the_tos_they_were_sent_with() {
        crate::transport::test_support::require_netns();
        let rx = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let to = match rx.local_addr().unwrap() {
            std::net::SocketAddr::V4(a) => a,
            other => panic!("{other}"),
        };
        let tx = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        // The socket's own default (0) between two marked datagrams: marks do not stick.
        for tos in [46u8 << 2, 0, 8 << 2] {
            let n = send_marked(tx.as_raw_fd(), b"hello", to, tos, 0).unwrap();
            assert_eq!(n, 5);
            assert_eq!(recv_tos(&rx), tos);
        }
        tx.send_to(b"plain", to).unwrap();
        assert_eq!(recv_tos(&rx), 0);
    }
}
