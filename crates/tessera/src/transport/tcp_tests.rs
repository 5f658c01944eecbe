use super::*;
use std::sync::mpsc;
use std::time::Instant;

fn inb(bytes: &[u8], want_hello: bool) -> InBuf {
    InBuf {
        buf: bytes.to_vec(),
        want_hello,
    }
}

fn frame(payload: &[u8]) -> Vec<u8> {
    let mut v = (payload.len() as u32).to_be_bytes().to_vec();
    v.extend_from_slice(payload);
    v
}

#[test]
fn hello_round_trips_and_rejects_garbage() {
    let a = SocketAddrV4::new(Ipv4Addr::new(10, 1, 2, 3), 7410);
    let h = encode_hello(a);
    assert_eq!(decode_hello(&h), Some(a));
    let mut bad = h;
    bad[0] = b'X';
    assert_eq!(decode_hello(&bad), None);
    let mut bad = h;
    bad[15] = 1;
    assert_eq!(decode_hello(&bad), None, "reserved bytes must be zero");
    let zero_port = encode_hello(SocketAddrV4::new(Ipv4Addr::new(10, 1, 2, 3), 0));
    assert_eq!(decode_hello(&zero_port), None);
    let mc = encode_hello(SocketAddrV4::new(Ipv4Addr::new(239, 255, 0, 1), 7400));
    assert_eq!(decode_hello(&mc), None);
    assert_eq!(decode_hello(&h[..15]), None);
}

#[test]
fn frames_split_across_reads_are_delivered_whole_and_in_order() {
    let a = SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 9), 7412);
    let mut stream = encode_hello(a).to_vec();
    stream.extend(frame(b"first"));
    stream.extend(frame(&[7u8; 3000]));
    stream.extend(frame(b"x"));
    // Feed the stream in awkward pieces.
    let mut b = inb(&[], true);
    let mut got: Vec<Vec<u8>> = Vec::new();
    let mut peer = None;
    for chunk in stream.chunks(7) {
        b.buf.extend_from_slice(chunk);
        if let Some(p) = take_hello(&mut b).unwrap() {
            peer = Some(p);
        }
        parse_frames(&mut b, |f| got.push(f.to_vec())).unwrap();
    }
    assert_eq!(peer, Some(a));
    assert_eq!(got.len(), 3);
    assert_eq!(got[0], b"first");
    assert_eq!(got[1], vec![7u8; 3000]);
    assert_eq!(got[2], b"x");
    assert!(b.buf.is_empty());
}

#[test]
fn bad_lengths_and_hellos_close_the_connection() {
    // A zero-length frame.
    let mut b = inb(&[0, 0, 0, 0], false);
    assert!(parse_frames(&mut b, |_| panic!("nothing to deliver")).is_err());
    // A frame longer than MAX_FRAME is refused from its header alone (nothing is buffered
    // waiting for it).
    let mut b = inb(&((MAX_FRAME as u32) + 1).to_be_bytes(), false);
    assert!(parse_frames(&mut b, |_| panic!("nothing to deliver")).is_err());
    // Not a hello.
    let mut b = inb(b"GET / HTTP/1.1\r\n\r\n", true);
    assert!(take_hello(&mut b).is_err());
    // Frames wait for the hello of an accepted connection.
    let mut b = inb(&frame(b"early"), true);
    assert!(parse_frames(&mut b, |_| panic!("no frame before the hello")).is_ok());
}

fn config(port: u16) -> TcpConfig {
    let mut c = TcpConfig::without_env(0);
    c.interface = Some("127.0.0.1".into());
    c.port = Some(port);
    c
}

type Received = mpsc::Receiver<(Vec<u8>, Locator)>;

fn started(t: &TcpTransport) -> (Receivers, Received) {
    let (tx, rx) = mpsc::channel();
    let tx = Mutex::new(tx);
    let r = t
        .start(Arc::new(move |buf: &[u8], from: Locator, _c: Channel| {
            let _ = tx.lock().send((buf.to_vec(), from));
        }))
        .unwrap();
    (r, rx)
}

/// Ports from an ephemeral listener's range: bind 0, read the port, let it go.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
#[ignore = "opens sockets: run in a network namespace (scripts/netns-run)"]
fn messages_flow_both_ways_and_replies_reuse_the_accepted_connection() {
    let a = TcpTransport::new(config(free_port())).unwrap();
    let b = TcpTransport::new(config(free_port())).unwrap();
    let (_ra, rx_a) = started(&a);
    let (_rb, rx_b) = started(&b);
    let la = a.locators().default_unicast;
    let lb = b.locators().default_unicast;
    assert_eq!(la.kind, locator_kind::TESSERA_TCP4);
    // A opens the connection; B learns A's listening address from the hello.
    for i in 0..100u32 {
        a.send_to(&i.to_be_bytes(), &lb).unwrap();
    }
    for i in 0..100u32 {
        let (m, from) = rx_b.recv_timeout(Duration::from_secs(5)).unwrap();
        assert_eq!(m, i.to_be_bytes(), "in order");
        assert_eq!(from, la, "source is A's listening locator");
    }
    // B answers A over the accepted connection: no second connection.
    b.send_to(b"reply", &la).unwrap();
    let (m, from) = rx_a.recv_timeout(Duration::from_secs(5)).unwrap();
    assert_eq!(m, b"reply");
    assert_eq!(from, lb);
    assert_eq!(a.tcp_stats().opened.load(Ordering::Relaxed), 1);
    assert_eq!(b.tcp_stats().opened.load(Ordering::Relaxed), 0);
    assert_eq!(b.tcp_stats().accepted.load(Ordering::Relaxed), 1);
    // A large message (a full frame) arrives whole.
    let big = vec![0xabu8; MAX_FRAME];
    a.send_to(&big, &lb).unwrap();
    let (m, _) = rx_b.recv_timeout(Duration::from_secs(5)).unwrap();
    assert_eq!(m, big);
    // Too large: a typed error, nothing sent.
    let e = a.send_to(&vec![0u8; MAX_FRAME + 1], &lb).unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
}

#[test]
#[ignore = "opens sockets: run in a network namespace (scripts/netns-run)"]
fn garbage_from_a_client_closes_only_its_connection() {
    let b = TcpTransport::new(config(free_port())).unwrap();
    let (_rb, rx_b) = started(&b);
    let lb = b.listen_addr();
    let mut s = TcpStream::connect(lb).unwrap();
    s.write_all(b"not a hello, not at all").unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while b.tcp_stats().bad_input.load(Ordering::Relaxed) == 0 {
        assert!(Instant::now() < deadline, "bad hello not counted");
        std::thread::sleep(Duration::from_millis(5));
    }
    // The transport still serves well-behaved peers.
    let a = TcpTransport::new(config(free_port())).unwrap();
    let (_ra, _rx_a) = started(&a);
    a.send_to(b"ok", &b.locators().default_unicast).unwrap();
    let (m, _) = rx_b.recv_timeout(Duration::from_secs(5)).unwrap();
    assert_eq!(m, b"ok");
    assert_eq!(b.connections(), 1, "the bad connection was closed");
}

#[test]
#[ignore = "opens sockets: run in a network namespace (scripts/netns-run)"]
fn a_peer_that_is_down_costs_nothing_and_is_reached_once_it_is_up() {
    let port = free_port();
    let a = TcpTransport::new(config(free_port())).unwrap();
    let (_ra, _rx_a) = started(&a);
    let dest = Locator::tcpv4(Ipv4Addr::LOCALHOST, port);
    // Nobody listens: the message is dropped (counted), the caller does not block.
    let t0 = Instant::now();
    a.send_to(b"lost", &dest).unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while a.connections() != 0 {
        assert!(Instant::now() < deadline, "refused connection not closed");
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(t0.elapsed() < Duration::from_secs(2));
    // The peer comes up: the next send opens a new connection.
    let b = TcpTransport::new(config(port)).unwrap();
    let (_rb, rx_b) = started(&b);
    a.send_to(b"found", &dest).unwrap();
    let (m, _) = rx_b.recv_timeout(Duration::from_secs(5)).unwrap();
    assert_eq!(m, b"found");
}

#[test]
#[ignore = "opens sockets: run in a network namespace (scripts/netns-run)"]
fn a_peer_that_does_not_read_fills_the_bounded_queue_then_would_block() {
    let mut cfg = config(free_port());
    cfg.queue_bytes = 256 << 10;
    let a = TcpTransport::new(cfg).unwrap();
    let (_ra, _rx_a) = started(&a);
    // A listener that accepts nothing: the kernel buffers fill, then our queue.
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = match silent.local_addr().unwrap() {
        SocketAddr::V4(a) => a,
        SocketAddr::V6(_) => unreachable!(),
    };
    let dest = Locator::tcpv4(*addr.ip(), addr.port());
    let msg = vec![1u8; 60_000];
    let mut blocked = false;
    for _ in 0..10_000 {
        match a.try_send_to(&msg, &dest) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                blocked = true;
                break;
            }
            Err(e) => panic!("{e}"),
        }
    }
    assert!(blocked, "a bounded queue must push back");
    assert!(a.stats().send.would_block.load(Ordering::Relaxed) >= 1);
}
