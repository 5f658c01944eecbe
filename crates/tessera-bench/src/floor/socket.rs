//! The floor's socket: binding it with Tessera's buffer sizing, and the watchdog that ends a
//! blocking receive with a wake-up datagram when the loop must look at the clock.

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Arc;

use super::clock::mono_ns;
use super::{FloorConfig, Role, MAGIC_WAKE, SOCKET_BUFFER, WATCH_PERIOD};

/// The loopback address of the bound socket, for wake-up datagrams.
fn wake_addr(sock: &UdpSocket) -> io::Result<SocketAddr> {
    let local = sock.local_addr()?;
    let ip = match local.ip() {
        IpAddr::V4(a) if a.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(a) if a.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        ip => ip,
    };
    Ok(SocketAddr::new(ip, local.port()))
}

/// Ends blocking receives when the loop must look at the clock: at the end of the run, or when
/// the loop has not run for `idle_ns` (a report or a ping timeout may be due).
pub(super) struct Watchdog {
    done: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Watchdog {
    pub(super) fn start(
        sock: &UdpSocket,
        stop: Arc<AtomicBool>,
        deadline: Option<i64>,
        last_loop: Arc<AtomicI64>,
        idle_ns: i64,
    ) -> io::Result<Watchdog> {
        let sock = sock.try_clone()?;
        let to = wake_addr(&sock)?;
        let done = Arc::new(AtomicBool::new(false));
        let d = done.clone();
        let thread = std::thread::Builder::new()
            .name("watchdog".into())
            .spawn(move || {
                let wake = MAGIC_WAKE.to_le_bytes();
                while !d.load(Ordering::Acquire) {
                    std::thread::sleep(WATCH_PERIOD);
                    let now = mono_ns();
                    let ending =
                        stop.load(Ordering::Acquire) || deadline.is_some_and(|dl| now >= dl);
                    if ending || now - last_loop.load(Ordering::Acquire) >= idle_ns {
                        let _ = sock.send_to(&wake, to);
                    }
                }
            })?;
        Ok(Watchdog {
            done,
            thread: Some(thread),
        })
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.done.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

pub(super) fn bind(cfg: &FloorConfig) -> io::Result<UdpSocket> {
    let any: IpAddr = match cfg.peer {
        SocketAddr::V6(_) if matches!(cfg.role, Role::Ping | Role::Pub) => {
            Ipv6Addr::UNSPECIFIED.into()
        }
        _ => Ipv4Addr::UNSPECIFIED.into(),
    };
    let sock = UdpSocket::bind(SocketAddr::new(any, cfg.port))?;
    // Same socket sizing as Tessera's transport, so the floor is measured like the DDS.
    tessera::transport::udp::size_socket_buffers(&sock, SOCKET_BUFFER, None);
    Ok(sock)
}
