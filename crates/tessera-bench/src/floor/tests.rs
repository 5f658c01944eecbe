//! Tests of the UDP floor: command line, fragments and headers, and an end-to-end run of every
//! role pair inside a network namespace.

use super::wire::is_wake;
use super::*;
use crate::parse::parse_tessera_json;
use std::sync::atomic::Ordering;
use tessera_cli::testns as netns;

fn a(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[test]
fn command_line() {
    let c = parse_args(&a(&["ping"])).unwrap();
    assert_eq!(c.role, Role::Ping);
    assert_eq!(c.size, 12);
    assert_eq!(c.port, 0);
    assert_eq!(c.peer, "127.0.0.1:7700".parse().unwrap());
    assert_eq!(c.duration, None);
    let c = parse_args(&a(&[
        "udp",
        "sub",
        "--size",
        "1k",
        "--duration=2.5",
        "--port",
        "9000",
    ]))
    .unwrap();
    assert_eq!(c.role, Role::Sub);
    assert_eq!(c.size, 1024);
    assert_eq!(c.duration, Some(Duration::from_millis(2500)));
    assert_eq!(c.port, 9000);
    let c = parse_args(&a(&[
        "pub",
        "--rate",
        "1000",
        "--peer",
        "10.0.0.2:7777",
        "--warmup",
        "1",
    ]))
    .unwrap();
    assert_eq!(c.rate, Some(1000.0));
    assert_eq!(c.peer, "10.0.0.2:7777".parse().unwrap());
    assert_eq!(c.warmup, Some(Duration::from_secs(1)));
    assert_eq!(parse_args(&a(&["pong"])).unwrap().port, DEFAULT_PORT);
    for bad in [
        &[][..],
        &["pang"],
        &["ping", "--size"],
        &["ping", "--size", "x"],
        &["ping", "--size", "1G"],
        &["ping", "--rate", "0"],
        &["ping", "--peer", "nowhere"],
        &["ping", "--duration", "-1"],
        &["ping", "--bogus"],
    ] {
        assert!(parse_args(&a(bad)).is_err(), "{bad:?}");
    }
}

#[test]
fn fragments_and_headers() {
    assert_eq!(fragment_lengths(12), vec![HEADER]);
    assert_eq!(fragment_lengths(1024), vec![1024]);
    assert_eq!(fragment_lengths(65_000), vec![65_000]);
    assert_eq!(fragment_lengths(65_001), vec![65_000, HEADER]);
    assert_eq!(
        fragment_lengths(200_000),
        vec![65_000, 65_000, 65_000, 5_000]
    );
    assert_eq!(fragment_lengths(200_000).iter().sum::<usize>(), 200_000);
    let h = Header {
        frag: 2,
        nfrags: 4,
        size: 200_000,
        seq: 1 << 40,
        t_ns: 123_456_789,
    };
    let mut b = [0u8; 40];
    h.write(&mut b);
    assert_eq!(Header::read(&b), Some(h));
    assert_eq!(Header::read(&b[..HEADER - 1]), None);
    assert!(!is_wake(&b));
    assert!(is_wake(&MAGIC_WAKE.to_le_bytes()));
    assert_eq!(Header::read(&MAGIC_WAKE.to_le_bytes()), None);
    // Fragment index out of range.
    let mut bad = h;
    bad.frag = 4;
    bad.write(&mut b);
    assert_eq!(Header::read(&b), None);
}

fn run_pair(server: FloorConfig, client: FloorConfig) -> (String, i32, String, i32) {
    let stop = Arc::new(AtomicBool::new(false));
    let s2 = stop.clone();
    let srv = std::thread::spawn(move || {
        let mut out = Vec::new();
        let code = run(&server, &mut out, s2);
        (String::from_utf8(out).unwrap(), code)
    });
    std::thread::sleep(Duration::from_millis(100));
    let mut out = Vec::new();
    let code = run(&client, &mut out, Arc::new(AtomicBool::new(false)));
    stop.store(true, Ordering::Release);
    let (sout, scode) = srv.join().unwrap();
    (String::from_utf8(out).unwrap(), code, sout, scode)
}

fn cfg(args: &[&str]) -> FloorConfig {
    parse_args(&a(args)).unwrap()
}

#[test]
#[ignore = "runs inside a network namespace (see floor_end_to_end)"]
fn floor_end_to_end_inner() {
    netns::require_inside("floor_end_to_end");
    // Latency, small samples, with warm-up.
    let (out, code, pong_out, pong_code) = run_pair(
        cfg(&["pong", "--port", "7700"]),
        cfg(&["ping", "--duration", "2.2", "--warmup", "0.5"]),
    );
    assert_eq!((code, pong_code), (0, 0), "{out}\n{pong_out}");
    let p = parse_tessera_json(&out);
    assert_eq!(p.latency.len(), 2, "{out}");
    assert_eq!(p.latency[0].peer, "127.0.0.1:7700");
    assert_eq!(p.latency[0].size, 12);
    let counted: u64 = p.latency.iter().map(|l| l.summary.count).sum();
    assert!(counted > 100, "{out}");
    let in_hist: u64 = p.hist.iter().map(|h| h.1).sum();
    assert!(
        in_hist > 0 && in_hist < counted,
        "warm-up left out: {in_hist} {counted}"
    );
    assert!(p.errors.is_empty());

    // Latency, fragmented samples.
    let (out, code, _, _) = run_pair(
        cfg(&["pong", "--port", "7701"]),
        cfg(&[
            "ping",
            "--duration",
            "1.2",
            "--size",
            "150000",
            "--peer",
            "127.0.0.1:7701",
            "--rate",
            "200",
        ]),
    );
    assert_eq!(code, 0, "{out}");
    let p = parse_tessera_json(&out);
    assert_eq!(p.latency.len(), 1, "{out}");
    assert_eq!(p.latency[0].size, 150_000);
    assert!(p.latency[0].summary.count > 50, "{out}");

    // Throughput at a fixed rate, fragmented: nothing lost on loopback at 500/s.
    let (out, code, sub_out, sub_code) = run_pair(
        cfg(&["sub", "--port", "7702", "--duration", "2.6"]),
        cfg(&[
            "pub",
            "--duration",
            "2.1",
            "--size",
            "100000",
            "--peer",
            "127.0.0.1:7702",
            "--rate",
            "500",
        ]),
    );
    assert_eq!((code, sub_code), (0, 0), "{out}\n{sub_out}");
    assert!(out.contains("\"type\":\"pub\""), "{out}");
    let s = parse_tessera_json(&sub_out);
    assert!(s.subs.len() >= 2, "{sub_out}");
    let last = s.subs.last().unwrap();
    assert_eq!(last.size, 100_000);
    assert!(last.total > 800, "{sub_out}");
    assert_eq!(last.lost, 0, "{sub_out}");
    assert!((0.3..0.7).contains(&s.subs[1].rate_ksps), "{sub_out}");

    // No pong at all: exit 1 with an error line.
    let mut out = Vec::new();
    let code = run(
        &cfg(&["ping", "--duration", "1.1", "--peer", "127.0.0.1:7799"]),
        &mut out,
        Arc::new(AtomicBool::new(false)),
    );
    let out = String::from_utf8(out).unwrap();
    assert_eq!(code, 1, "{out}");
    assert_eq!(parse_tessera_json(&out).errors.len(), 1, "{out}");
}

#[test]
fn floor_end_to_end() {
    netns::run_inner("floor::tests::floor_end_to_end_inner");
}
