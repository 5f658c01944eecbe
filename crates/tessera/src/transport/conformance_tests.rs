//! One behaviour suite run against every transport: the in-process one under a plain
//! `cargo test`, the UDP ones (`#[ignore]`d) inside a network namespace. Then the in-process
//! transport's fault injection.

use super::test_support::require_netns;
use super::*;
use crossbeam_channel::{unbounded, Receiver};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// What a handler saw: payload, source, channel, and whether it ran on a receive thread.
type Got = (Vec<u8>, Locator, Channel, bool);

fn collector() -> (Arc<dyn DatagramHandler>, Receiver<Got>) {
    let (tx, rx) = unbounded();
    let h = move |d: &[u8], from: Locator, ch: Channel| {
        let _ = tx.send((d.to_vec(), from, ch, recv::on_receive_thread()));
    };
    (Arc::new(h), rx)
}

/// The next datagram with `payload` within 3 s (others, e.g. looped-back multicast, skipped).
fn expect(rx: &Receiver<Got>, payload: &[u8]) -> Got {
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        match rx.recv_deadline(deadline) {
            Ok(g) if g.0 == payload => return g,
            Ok(_) => continue,
            Err(_) => panic!(
                "no datagram {:?} within 3 s",
                String::from_utf8_lossy(payload)
            ),
        }
    }
}

/// The behaviour every transport shares, checked on two of its instances in one domain.
fn conformance(a: Arc<dyn Transport>, b: Arc<dyn Transport>) {
    let (ha, rxa) = collector();
    let (hb, rxb) = collector();
    let ra = a.start(ha).unwrap();
    let _rb = b.start(hb.clone()).unwrap();
    assert!(matches!(b.start(hb), Err(TransportError::AlreadyStarted)));
    let (la, lb) = (a.locators(), b.locators());
    for l in [la.metatraffic_unicast, la.default_unicast] {
        assert!(
            a.kinds().contains(&l.kind),
            "{} advertises its own kind",
            a.name()
        );
        assert!(b.reaches(&l));
    }
    assert!(a.max_datagram_size() >= 1472);
    assert!(
        (1472..=a.max_datagram_size()).contains(&a.best_effort_datagram_size()),
        "{}: best-effort datagrams within 1472..=max",
        a.name()
    );

    // Unicast to each port arrives on the matching channel, on a receive thread, with a source
    // of the sender's kind.
    a.send_to(b"meta", &lb.metatraffic_unicast).unwrap();
    let (_, from, ch, on_rx) = expect(&rxb, b"meta");
    assert_eq!(ch, Channel::MetatrafficUnicast);
    assert_eq!(from.kind, la.metatraffic_unicast.kind);
    assert!(on_rx, "handlers run on a receive thread");
    b.try_send_to(b"user", &la.default_unicast).unwrap();
    assert_eq!(expect(&rxa, b"user").2, Channel::UserUnicast);

    // SPDP reaches the other participant of the domain.
    for d in a.spdp_destinations() {
        a.send_to(b"spdp", d).unwrap();
    }
    let ch = expect(&rxb, b"spdp").2;
    assert!(matches!(
        ch,
        Channel::SpdpMulticast | Channel::MetatrafficUnicast
    ));

    // A locator of a kind the transport does not handle is skipped, not an error.
    let foreign = Locator {
        kind: tessera_rtps::types::locator_kind::FASTDDS_SHM,
        port: 1,
        address: [0; 16],
    };
    assert!(!a.reaches(&foreign));
    let ignored = a.stats().send.ignored.load(Ordering::Relaxed);
    a.send_to(b"x", &foreign).unwrap();
    a.try_send_to(b"x", &foreign).unwrap();
    assert_eq!(a.stats().send.ignored.load(Ordering::Relaxed), ignored + 2);

    // A datagram handed over in parts arrives as one, marked or not, and counts once.
    let sent = a.stats().send.datagrams.load(Ordering::Relaxed);
    let big: Vec<u8> = (0..3000u32).map(|i| (i % 251) as u8).collect();
    let parts: [&[u8]; 4] = [b"head:", &big, b"", b":tail"];
    let whole = parts.concat();
    for tos in [0, 0xb8] {
        a.try_send_parts_marked(&parts, &lb.default_unicast, tos)
            .unwrap();
        assert_eq!(expect(&rxb, &whole).2, Channel::UserUnicast, "tos {tos}");
    }
    a.try_send_parts_marked(&[b"one part"], &lb.default_unicast, 0)
        .unwrap();
    expect(&rxb, b"one part");
    assert_eq!(a.stats().send.datagrams.load(Ordering::Relaxed), sent + 3);

    // A burst arrives complete and in order.
    for i in 0..200u32 {
        a.send_to(&i.to_le_bytes(), &lb.default_unicast).unwrap();
    }
    let mut next = 0u32;
    let deadline = Instant::now() + Duration::from_secs(3);
    while next < 200 {
        let (d, ..) = rxb.recv_deadline(deadline).expect("burst incomplete");
        if d.len() == 4 {
            assert_eq!(u32::from_le_bytes(d.try_into().unwrap()), next);
            next += 1;
        }
    }
    assert!(b.stats().recv.datagrams.load(Ordering::Relaxed) >= 205);

    // Stopping is prompt and ends delivery.
    let t0 = Instant::now();
    drop(ra);
    assert!(t0.elapsed() < Duration::from_millis(500));
}

#[test]
fn inproc_conformance() {
    let net = InProcessNetwork::new();
    let a = Arc::new(InProcessTransport::new(&net, 3));
    let b = Arc::new(InProcessTransport::new(&net, 3));
    // Another domain on the same network, and another network: neither hears SPDP.
    let other_domain = InProcessTransport::new(&net, 4);
    let other_net = InProcessTransport::new(&InProcessNetwork::new(), 3);
    let (hd, rxd) = collector();
    let (hn, rxn) = collector();
    let _rd = other_domain.start(hd).unwrap();
    let _rn = other_net.start(hn).unwrap();
    conformance(a, b);
    assert!(rxd.try_recv().is_err() && rxn.try_recv().is_err());
}

#[test]
#[ignore = "needs a network namespace: scripts/netns-run (scripts/test runs it)"]
fn udp4_conformance() {
    require_netns();
    let cfg = |d| {
        let mut c = UdpConfig::without_env(d);
        c.interface = Some("lo".into());
        c
    };
    let a = Arc::new(UdpTransport::new(cfg(25)).unwrap());
    let b = Arc::new(UdpTransport::new(cfg(25)).unwrap());
    conformance(a, b);
}

/// Sends `n` numbered datagrams from a fresh node to another under `f`; returns what arrived
/// within `wait`, in arrival order.
fn through_faults(f: FaultConfig, n: u32, wait: Duration) -> Vec<u32> {
    let net = InProcessNetwork::new();
    net.set_faults(f);
    let a = InProcessTransport::new(&net, 0);
    let b = InProcessTransport::new(&net, 0);
    let (hb, rxb) = collector();
    let _rb = b.start(hb).unwrap();
    for i in 0..n {
        a.send_to(&i.to_le_bytes(), &b.locators().default_unicast)
            .unwrap();
    }
    let deadline = Instant::now() + wait;
    let mut got = Vec::new();
    while let Ok((d, ..)) = rxb.recv_deadline(deadline) {
        got.push(u32::from_le_bytes(d.try_into().unwrap()));
    }
    got
}

#[test]
fn inproc_loss_is_seeded_and_counted() {
    let f = FaultConfig {
        seed: 42,
        loss_percent: 30.0,
        ..FaultConfig::default()
    };
    let a = through_faults(f, 1000, Duration::from_millis(300));
    let b = through_faults(f, 1000, Duration::from_millis(300));
    assert_eq!(a, b, "same seed, same losses");
    assert!((600..800).contains(&a.len()), "{} of 1000 arrived", a.len());
    let c = through_faults(
        FaultConfig { seed: 43, ..f },
        1000,
        Duration::from_millis(300),
    );
    assert_ne!(a, c, "another seed, other losses");
}

#[test]
fn inproc_delay_duplication_and_reordering() {
    let net = InProcessNetwork::new();
    net.set_faults(FaultConfig {
        delay: Duration::from_millis(50),
        ..FaultConfig::default()
    });
    let a = InProcessTransport::new(&net, 0);
    let b = InProcessTransport::new(&net, 0);
    let (hb, rxb) = collector();
    let _rb = b.start(hb).unwrap();
    let t0 = Instant::now();
    a.send_to(b"late", &b.locators().default_unicast).unwrap();
    expect(&rxb, b"late");
    assert!(t0.elapsed() >= Duration::from_millis(50));

    let dup = through_faults(
        FaultConfig {
            duplicate_percent: 100.0,
            ..FaultConfig::default()
        },
        10,
        Duration::from_millis(200),
    );
    assert_eq!(dup, (0..10).flat_map(|i| [i, i]).collect::<Vec<_>>());

    let reordered = through_faults(
        FaultConfig {
            seed: 7,
            reorder_percent: 20.0,
            reorder_delay: Duration::from_millis(20),
            ..FaultConfig::default()
        },
        200,
        Duration::from_millis(300),
    );
    let mut sorted = reordered.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, (0..200).collect::<Vec<_>>(), "nothing lost");
    assert_ne!(reordered, sorted, "some overtaken");
}

#[test]
fn inproc_bandwidth_limit_blocks_or_refuses() {
    let net = InProcessNetwork::new();
    let a = InProcessTransport::new(&net, 0);
    let b = InProcessTransport::new(&net, 0);
    let fast = InProcessTransport::new(&net, 0);
    // 100 kB/s towards b only, 10 kB in flight at most.
    assert!(net.set_node_faults(
        b.node_index(),
        FaultConfig {
            bandwidth: Some(100_000),
            link_buffer: 10_000,
            ..FaultConfig::default()
        }
    ));
    let (hb, rxb) = collector();
    let _rb = b.start(hb).unwrap();
    let (hf, rxf) = collector();
    let _rf = fast.start(hf).unwrap();
    let chunk = [0u8; 1000];
    let dest = b.locators().default_unicast;
    let mut accepted = 0;
    while a.try_send_to(&chunk, &dest).is_ok() {
        accepted += 1;
        assert!(accepted <= 40, "the link buffer is not enforced");
    }
    // 10 fit; a few more if the link drained while this thread was preempted.
    assert!(
        (9..=16).contains(&accepted),
        "{accepted} datagrams accepted"
    );
    let e = a.try_send_to(&chunk, &dest).unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::WouldBlock);
    // Another destination is not shaped.
    a.try_send_to(b"fast", &fast.locators().default_unicast)
        .unwrap();
    expect(&rxf, b"fast");
    // A blocking send waits for the link: 10 more kB at 100 kB/s take about 0.1 s.
    let t0 = Instant::now();
    for _ in 0..10 {
        a.send_to(&chunk, &dest).unwrap();
    }
    assert!(
        t0.elapsed() >= Duration::from_millis(70),
        "{:?}",
        t0.elapsed()
    );
    let deadline = Instant::now() + Duration::from_secs(3);
    for _ in 0..accepted + 10 {
        rxb.recv_deadline(deadline)
            .expect("shaped datagrams arrive");
    }
}

#[test]
#[ignore = "needs a network namespace: scripts/netns-run (scripts/test runs it)"]
fn udp6_conformance() {
    require_netns();
    let cfg = UdpConfig::new(26).unwrap();
    let a = Arc::new(Udp6Transport::new(&cfg).unwrap());
    let b = Arc::new(Udp6Transport::new(&cfg).unwrap());
    assert!(
        a.multicast_enabled(),
        "netns-run provides an IPv6 multicast interface (TESSERA_INTERFACE6)"
    );
    assert_eq!(
        a.spdp_destinations(),
        &[Locator::udpv6(DEFAULT_MULTICAST_GROUP_V6, 7400 + 250 * 26)]
    );
    conformance(a, b);
}

#[test]
fn transport_lists_parse() {
    use TransportKind::*;
    assert_eq!(
        parse_transports("udp4, udp6,udp4").unwrap(),
        vec![Udp4, Udp6]
    );
    assert_eq!(parse_transports("UDPv6").unwrap(), vec![Udp6]);
    assert_eq!(parse_transports("udp4,shm").unwrap(), vec![Udp4, Shm]);
    assert_eq!(parse_transports("tcp4,udp4").unwrap(), vec![Tcp4, Udp4]);
    assert!(parse_transports("udp4,sctp").is_err());
    assert!(parse_transports(" , ").is_err());
}

/// A registry of in-process transports of two networks stands in for a dual-stack host:
/// `select` keeps only what one of our transports reaches, and of those only the preferred
/// transport's locators.
#[test]
fn registry_routes_by_kind_and_selects_reachable_locators() {
    let (n1, n2) = (InProcessNetwork::new(), InProcessNetwork::new());
    let ours = Arc::new(InProcessTransport::new(&n1, 0));
    let peer = InProcessTransport::new(&n1, 0);
    let elsewhere = InProcessTransport::new(&n2, 0);
    let reg = Transports::new(vec![ours.clone()]).unwrap();
    assert!(
        Transports::new(vec![ours.clone(), ours.clone()]).is_err(),
        "kind claimed twice"
    );
    assert!(Transports::new(vec![]).is_err());
    let v4 = Locator::udpv4(std::net::Ipv4Addr::LOCALHOST, 7411);
    let announced = [
        v4,
        elsewhere.locators().default_unicast,
        peer.locators().default_unicast,
    ];
    assert_eq!(
        reg.select(&announced).as_slice(),
        &[peer.locators().default_unicast]
    );
    assert!(reg.reaches(&peer.locators().metatraffic_unicast));
    assert!(!reg.reaches(&v4));
    assert_eq!(reg.max_datagram_size(), inproc::MAX_DATAGRAM);
    // A kind no transport handles is skipped by the registry itself.
    reg.try_send_to(b"x", &v4).unwrap();
    assert_eq!(ours.stats().send.ignored.load(Ordering::Relaxed), 0);
}

/// DCPS over UDPv6 alone, and a dual-stack participant talking to a v6-only one.
#[test]
#[ignore = "needs a network namespace: scripts/netns-run (scripts/test runs it)"]
fn dcps_over_udp6_and_dual_stack() {
    use crate::qos::{DataReaderQos, DataWriterQos, History, Reliability, TopicQos};
    require_netns();
    #[derive(crate::TopicType, Debug, Clone, PartialEq)]
    #[topic(cdr_path = "::tessera_rtps::cdr")]
    struct Num {
        n: u32,
    }
    let make = |kinds: Vec<TransportKind>| {
        let config = crate::ParticipantConfig {
            transports: Some(kinds),
            ..Default::default()
        };
        crate::DomainParticipant::with_qos(27, Default::default(), config).unwrap()
    };
    let a = make(vec![TransportKind::Udp4, TransportKind::Udp6]);
    let b = make(vec![TransportKind::Udp6]);
    let ta = a.create_topic::<Num>("V6", TopicQos::default()).unwrap();
    let tb = b.create_topic::<Num>("V6", TopicQos::default()).unwrap();
    let w = a
        .create_publisher(Default::default())
        .unwrap()
        .create_datawriter(&ta, DataWriterQos::default().with_history(History::KeepAll))
        .unwrap();
    let r = b
        .create_subscriber(Default::default())
        .unwrap()
        .create_datareader(
            &tb,
            DataReaderQos::default()
                .with_reliability(Reliability::reliable(Duration::from_secs(1)))
                .with_history(History::KeepAll),
        )
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while w.publication_matched_status().current_count == 0 {
        assert!(Instant::now() < deadline, "no match over UDPv6");
        std::thread::sleep(Duration::from_millis(5));
    }
    for n in 0..50 {
        w.write(&Num { n }).unwrap();
    }
    let mut got = Vec::new();
    while got.len() < 50 {
        assert!(Instant::now() < deadline, "received {} of 50", got.len());
        got.extend(
            r.take(64)
                .unwrap()
                .into_iter()
                .filter_map(|s| s.data.map(|d| d.n)),
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    assert_eq!(got, (0..50).collect::<Vec<_>>());
}
