//! Tests of the UDP transport. Those that open sockets are `#[ignore]`d: they run inside a
//! network namespace (`scripts/netns-run cargo test -- --include-ignored`, as `scripts/test`
//! does) and fail outside one. Each uses its own domain
//! id so that tests running in parallel do not see each other's multicast.

use super::*;
use crate::transport::test_support::require_netns;
use crossbeam_channel::{unbounded, Receiver as ChanRx};
use std::time::{Duration, Instant};

type Got = (Vec<u8>, Locator, Channel);

fn collector() -> (Arc<dyn DatagramHandler>, ChanRx<Got>) {
    let (tx, rx) = unbounded();
    let h = move |d: &[u8], from: Locator, ch: Channel| {
        let _ = tx.send((d.to_vec(), from, ch));
    };
    (Arc::new(h), rx)
}

/// Waits for a datagram with `payload`, ignoring others (e.g. our own looped-back multicast).
fn expect(rx: &ChanRx<Got>, payload: &[u8]) -> Got {
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(g) if g.0 == payload => return g,
            Ok(_) => continue,
            Err(_) => panic!(
                "no datagram {:?} within 3 s",
                String::from_utf8_lossy(payload)
            ),
        }
    }
}

fn lo_config(domain: u32) -> UdpConfig {
    let mut c = UdpConfig::without_env(domain);
    c.interface = Some("lo".into());
    c
}

fn itf(addr: [u8; 4], lo: bool) -> Interface {
    Interface {
        name: if lo { "lo".into() } else { "eth0".into() },
        index: 1,
        addr: Ipv4Addr::from(addr),
        netmask: Ipv4Addr::new(255, 0, 0, 0),
        up: true,
        loopback: lo,
        multicast: true,
        point_to_point: false,
    }
}

#[test]
fn peers_parse() {
    let p = parse_peers(" 10.0.0.1, 10.0.0.2:7412,,").unwrap();
    assert_eq!(
        p,
        vec![
            Peer {
                addr: Ipv4Addr::new(10, 0, 0, 1),
                port: None
            },
            Peer {
                addr: Ipv4Addr::new(10, 0, 0, 2),
                port: Some(7412)
            },
        ]
    );
    assert!(parse_peers("").unwrap().is_empty());
    assert!(parse_peers("host.example").is_err());
    assert!(parse_peers("10.0.0.1:0").is_err());
    assert!(parse_peers("10.0.0.1:70000").is_err());
    assert!(parse_peers("::1").is_err());
}

#[test]
fn spdp_destinations_with_multicast() {
    let mut c = UdpConfig::without_env(1);
    c.peers = parse_peers("10.1.1.1:9999,10.1.1.2").unwrap();
    let d = spdp_destinations(
        &c,
        DEFAULT_MULTICAST_GROUP,
        &itf([192, 168, 0, 5], false),
        true,
        7660,
    );
    assert_eq!(d[0], Locator::udpv4(DEFAULT_MULTICAST_GROUP, 7650));
    assert_eq!(d[1], Locator::udpv4(Ipv4Addr::new(10, 1, 1, 1), 9999));
    let probes: Vec<u16> = d[2..]
        .iter()
        .map(|l| l.to_socket_addr_v4().unwrap().port())
        .collect();
    assert_eq!(probes, (0..=8).map(|i| 7660 + 2 * i).collect::<Vec<u16>>());
    assert_eq!(d.len(), 11);
}

#[test]
fn spdp_destinations_without_multicast_probe_own_host_but_not_self() {
    let c = UdpConfig::without_env(0);
    let d = spdp_destinations(
        &c,
        DEFAULT_MULTICAST_GROUP,
        &itf([127, 0, 0, 1], true),
        false,
        7412,
    );
    let ports: Vec<u16> = d
        .iter()
        .map(|l| l.to_socket_addr_v4().unwrap().port())
        .collect();
    assert_eq!(
        ports,
        vec![7410, 7414, 7416, 7418, 7420, 7422, 7424, 7426],
        "own port 7412 is skipped"
    );
    assert!(d.iter().all(|l| !l.is_multicast()));
}

#[test]
fn unknown_domain_and_group_are_config_errors() {
    let c = UdpConfig::without_env(233);
    assert!(matches!(
        UdpTransport::new(c),
        Err(TransportError::InvalidConfig(_))
    ));
    let mut c = UdpConfig::without_env(0);
    c.multicast_group = Ipv4Addr::new(10, 0, 0, 1);
    assert!(matches!(
        UdpTransport::new(c),
        Err(TransportError::InvalidConfig(_))
    ));
    let mut c = UdpConfig::without_env(0);
    c.interface = Some("no-such-interface0".into());
    assert!(matches!(
        UdpTransport::new(c),
        Err(TransportError::Interface(InterfaceError::NotFound(_)))
    ));
}

#[test]
#[ignore = "needs a network namespace: scripts/netns-run (scripts/test runs it)"]
fn two_transports_exchange_unicast_and_multicast() {
    require_netns();
    let a = UdpTransport::new(lo_config(20)).unwrap();
    let b = UdpTransport::new(lo_config(20)).unwrap();
    assert_eq!(a.participant_id(), 0);
    assert_eq!(b.participant_id(), 1);
    assert_eq!(a.interface().name, "lo");
    let la = *a.locators();
    let lb = *b.locators();
    assert_eq!(
        la.metatraffic_unicast,
        Locator::udpv4(Ipv4Addr::LOCALHOST, 12410)
    );
    assert_eq!(
        la.default_unicast,
        Locator::udpv4(Ipv4Addr::LOCALHOST, 12411)
    );
    assert_eq!(
        lb.metatraffic_unicast,
        Locator::udpv4(Ipv4Addr::LOCALHOST, 12412)
    );
    assert_eq!(
        lb.default_unicast,
        Locator::udpv4(Ipv4Addr::LOCALHOST, 12413)
    );
    if !a.multicast_enabled() {
        eprintln!("SKIP multicast part: lo has no multicast in this namespace");
    }

    let (ha, rxa) = collector();
    let (hb, rxb) = collector();
    let _ra = a.start(ha).unwrap();
    let _rb = b.start(hb).unwrap();

    a.send_to(b"meta", &lb.metatraffic_unicast).unwrap();
    let (_, from, ch) = expect(&rxb, b"meta");
    assert_eq!(ch, Channel::MetatrafficUnicast);
    assert_eq!(
        from.to_socket_addr_v4().map(|a| *a.ip()),
        Some(Ipv4Addr::LOCALHOST)
    );
    b.send_to(b"user", &la.default_unicast).unwrap();
    assert_eq!(expect(&rxa, b"user").2, Channel::UserUnicast);

    if a.multicast_enabled() {
        assert!(b.multicast_enabled());
        let spdp = la.metatraffic_multicast.unwrap();
        assert_eq!(spdp, Locator::udpv4(DEFAULT_MULTICAST_GROUP, 12400));
        assert_eq!(a.spdp_destinations()[0], spdp);
        a.send_to(b"spdp", &spdp).unwrap();
        // Both receive it: the other participant and (multicast loop) the sender itself.
        assert_eq!(expect(&rxb, b"spdp").2, Channel::SpdpMulticast);
        assert_eq!(expect(&rxa, b"spdp").2, Channel::SpdpMulticast);
        let user = lb.default_multicast.unwrap();
        b.send_to(b"umc", &user).unwrap();
        assert_eq!(expect(&rxa, b"umc").2, Channel::UserMulticast);
        assert_eq!(expect(&rxb, b"umc").2, Channel::UserMulticast);
    }

    // Many destinations in one call; unknown kinds are skipped.
    let mut shm = lb.default_unicast;
    shm.kind = locator_kind::FASTDDS_SHM;
    let ignored0 = a.stats().send.ignored.load(Ordering::Relaxed);
    a.send_to_many(
        b"many",
        &[
            lb.default_unicast,
            shm,
            lb.metatraffic_unicast,
            la.default_unicast,
        ],
    )
    .unwrap();
    assert_eq!(a.stats().send.ignored.load(Ordering::Relaxed), ignored0 + 1);
    let got: Vec<Channel> = (0..2).map(|_| expect(&rxb, b"many").2).collect();
    assert!(got.contains(&Channel::UserUnicast) && got.contains(&Channel::MetatrafficUnicast));
    assert_eq!(expect(&rxa, b"many").2, Channel::UserUnicast);
    assert!(b.stats().recv.datagrams.load(Ordering::Relaxed) >= 3);
}

#[test]
fn broadcast_addresses_of_interfaces() {
    let mut i = itf([192, 168, 7, 20], false);
    i.netmask = Ipv4Addr::new(255, 255, 255, 0);
    assert_eq!(
        iface::broadcast_addr(&i),
        Some(Ipv4Addr::new(192, 168, 7, 255))
    );
    i.netmask = Ipv4Addr::new(255, 255, 255, 255);
    assert_eq!(iface::broadcast_addr(&i), None, "a /32 has no broadcast");
    i.netmask = Ipv4Addr::new(255, 255, 0, 0);
    i.point_to_point = true;
    assert_eq!(
        iface::broadcast_addr(&i),
        None,
        "nor does a point-to-point link"
    );
}

#[test]
#[ignore = "needs a network namespace: scripts/netns-run (scripts/test runs it)"]
fn broadcast_carries_discovery_and_user_data() {
    require_netns();
    let mut c = lo_config(23);
    c.broadcast = true;
    let a = UdpTransport::new(c.clone()).unwrap();
    let b = UdpTransport::new(c).unwrap();
    let la = a.locators();
    let bcast = Ipv4Addr::new(127, 255, 255, 255);
    let spdp = la.metatraffic_multicast.unwrap();
    assert_eq!(spdp.to_socket_addr_v4().unwrap().ip(), &bcast);
    assert_eq!(a.spdp_destinations()[0], spdp);
    assert_eq!(
        la.default_multicast
            .unwrap()
            .to_socket_addr_v4()
            .unwrap()
            .ip(),
        &bcast
    );
    let (ha, rxa) = collector();
    let (hb, rxb) = collector();
    let _ra = a.start(ha).unwrap();
    let _rb = b.start(hb).unwrap();
    a.send_to(b"spdp", &spdp).unwrap();
    assert_eq!(expect(&rxb, b"spdp").2, Channel::SpdpMulticast);
    assert_eq!(expect(&rxa, b"spdp").2, Channel::SpdpMulticast);
    b.send_to(b"umc", &la.default_multicast.unwrap()).unwrap();
    assert_eq!(expect(&rxa, b"umc").2, Channel::UserMulticast);
}

#[test]
#[ignore = "needs a network namespace: scripts/netns-run (scripts/test runs it)"]
fn unicast_discovery_without_multicast() {
    require_netns();
    let mut c = lo_config(21);
    c.multicast = false;
    let a = UdpTransport::new(c.clone()).unwrap();
    let b = UdpTransport::new(c).unwrap();
    assert!(!a.multicast_enabled());
    assert_eq!(a.locators().metatraffic_multicast, None);
    assert_eq!(a.locators().default_multicast, None);
    let (hb, rxb) = collector();
    let _rb = b.start(hb).unwrap();
    // A does not know B: probing its own host reaches B's metatraffic port.
    a.send_to_many(b"hello", a.spdp_destinations()).unwrap();
    assert_eq!(expect(&rxb, b"hello").2, Channel::MetatrafficUnicast);
    // Multicast destinations are skipped, not sent via the unicast route.
    let ignored0 = a.stats().send.ignored.load(Ordering::Relaxed);
    a.send_to(b"x", &Locator::udpv4(DEFAULT_MULTICAST_GROUP, 12650))
        .unwrap();
    assert_eq!(a.stats().send.ignored.load(Ordering::Relaxed), ignored0 + 1);
}

#[test]
#[ignore = "needs a network namespace: scripts/netns-run (scripts/test runs it)"]
fn fixed_participant_index_conflict() {
    require_netns();
    let mut c = lo_config(22);
    c.participant_id = Some(3);
    let a = UdpTransport::new(c.clone()).unwrap();
    assert_eq!(a.participant_id(), 3);
    assert_eq!(
        a.locators().metatraffic_unicast.port,
        7400 + 250 * 22 + 10 + 6
    );
    assert!(matches!(
        UdpTransport::new(c),
        Err(TransportError::NoParticipantIndex { domain: 22, max: 3 })
    ));
    // Automatic selection skips the taken index.
    let mut c = lo_config(22);
    c.max_participant_id = 5;
    let ids: Vec<u32> = (0..5)
        .map(|_| UdpTransport::new(c.clone()).unwrap())
        .map(|t| {
            let id = t.participant_id();
            std::mem::forget(t); // keep the ports taken for the rest of the test
            id
        })
        .collect();
    assert_eq!(ids, vec![0, 1, 2, 4, 5]);
    assert!(matches!(
        UdpTransport::new(c),
        Err(TransportError::NoParticipantIndex { .. })
    ));
}

#[test]
#[ignore = "needs a network namespace: scripts/netns-run (scripts/test runs it)"]
fn start_twice_fails_and_stop_is_prompt() {
    require_netns();
    for batch in [1, 16] {
        let mut c = lo_config(23);
        c.recv_batch = batch;
        let t = UdpTransport::new(c).unwrap();
        let (h, _rx) = collector();
        let r = t.start(h.clone()).unwrap();
        assert!(matches!(t.start(h), Err(TransportError::AlreadyStarted)));
        std::thread::sleep(Duration::from_millis(50)); // let the threads block in recv
        let t0 = Instant::now();
        drop(r);
        let took = t0.elapsed();
        // Well under the receive timeout: shutdown(SHUT_RD) woke the threads.
        assert!(took < Duration::from_millis(150), "stop took {took:?}");
    }
}

#[test]
#[ignore = "needs a network namespace: scripts/netns-run (scripts/test runs it)"]
fn oversized_and_burst_delivery() {
    require_netns();
    let a = UdpTransport::new(lo_config(24)).unwrap();
    let b = UdpTransport::new(lo_config(24)).unwrap();
    let (h, rx) = collector();
    let _r = b.start(h).unwrap();
    let dst = b.locators().default_unicast;
    // The largest UDP/IPv4 payload arrives whole.
    let big = vec![0xa5u8; 65507];
    a.send_to(&big, &dst).unwrap();
    assert_eq!(expect(&rx, &big).0.len(), 65507);
    // A burst arrives complete and in order.
    for i in 0u32..2000 {
        a.send_to(&i.to_le_bytes(), &dst).unwrap();
    }
    for i in 0u32..2000 {
        let (d, _, _) = rx.recv_timeout(Duration::from_secs(3)).unwrap();
        assert_eq!(d, i.to_le_bytes());
    }
}

/// Measures the receive thread's CPU time per datagram with and without recvmmsg (run with
/// `--ignored --nocapture` inside a namespace). CPU time, not wall time: the sender is the
/// bottleneck on loopback and the machine is shared.
#[test]
#[ignore]
fn measure_recv_batching() {
    require_netns();
    struct Meter {
        count: AtomicU64,
        cpu_ns: AtomicU64,
    }
    fn thread_cpu_ns() -> u64 {
        // SAFETY: all-zero timespec is valid; clock_gettime writes it.
        let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
        // SAFETY: valid clock id and out-pointer.
        unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
        ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
    }
    impl DatagramHandler for Meter {
        fn on_datagram(&self, _: &[u8], _: Locator, _: Channel) {
            self.count.fetch_add(1, Ordering::Relaxed);
        }
        fn on_batch_end(&self, _: Channel) {
            self.cpu_ns.store(thread_cpu_ns(), Ordering::Relaxed);
        }
    }
    const N: u64 = 200_000;
    for (size, burst) in [(64usize, 1usize), (64, 16), (1024, 1), (1024, 16)] {
        for batch in [1usize, 4, 16, 32] {
            let a = UdpTransport::new(lo_config(25)).unwrap();
            let mut c = lo_config(25);
            c.recv_batch = batch;
            let b = UdpTransport::new(c).unwrap();
            let m = Arc::new(Meter {
                count: AtomicU64::new(0),
                cpu_ns: AtomicU64::new(0),
            });
            let r = b.start(m.clone()).unwrap();
            let dst = b.locators().default_unicast;
            let buf = vec![0u8; size];
            // Warm-up datagram: the receive thread's CPU time before the run.
            a.send_to(&buf, &dst).unwrap();
            while m.count.load(Ordering::Relaxed) == 0 {
                std::thread::yield_now();
            }
            let cpu0 = m.cpu_ns.load(Ordering::Relaxed);
            // Bursts of `burst` datagrams sent by one sendmmsg call.
            let dsts = vec![dst; burst];
            for _ in 0..N / burst as u64 {
                a.send_to_many(&buf, &dsts).unwrap();
            }
            std::thread::sleep(Duration::from_millis(300));
            drop(r);
            let got = m.count.load(Ordering::Relaxed) - 1;
            let n = N / burst as u64 * burst as u64;
            let cpu = m.cpu_ns.load(Ordering::Relaxed) - cpu0;
            let st = &b.stats().recv;
            let batches = st.batches.load(Ordering::Relaxed).max(1);
            eprintln!(
                "size {size:5} sender burst {burst:2} recv batch {batch:2}: received {got}/{n}, receive thread {:.0} ns CPU per datagram, mean batch {:.2}",
                cpu as f64 / got.max(1) as f64,
                (got + 1) as f64 / batches as f64,
            );
        }
    }
}

#[test]
fn transport_is_shareable_across_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<UdpTransport>();
    assert_send_sync::<Receivers>();
}

#[test]
#[ignore = "needs a network namespace: scripts/netns-run (scripts/test runs it)"]
fn handler_panic_does_not_stop_reception() {
    require_netns();
    let a = UdpTransport::new(lo_config(26)).unwrap();
    let b = UdpTransport::new(lo_config(26)).unwrap();
    let (tx, rx) = unbounded();
    let h = move |d: &[u8], _: Locator, _: Channel| {
        if d == b"boom" {
            panic!("test panic");
        }
        let _ = tx.send(d.to_vec());
    };
    let _r = b.start(Arc::new(h)).unwrap();
    let dst = b.locators().default_unicast;
    a.send_to(b"boom", &dst).unwrap();
    a.send_to(b"after", &dst).unwrap();
    assert_eq!(rx.recv_timeout(Duration::from_secs(3)).unwrap(), b"after");
    assert_eq!(b.stats().recv.handler_panics.load(Ordering::Relaxed), 1);
}
