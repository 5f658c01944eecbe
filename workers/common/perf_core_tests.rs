//! Tests of `perf_core.rs`: the command grammar, the statistics and the output lines.

use super::*;

fn args(s: &str) -> Vec<String> {
    s.split_whitespace().map(String::from).collect()
}

#[test]
fn the_bench_command_lines_parse() {
    let c = parse_args(&args(
        "-D 3 -Qminmatch:1 -Qinitwait:20 --warmup 0.5 ping size 4096 listener",
    ))
    .unwrap();
    assert!(c.ping && !c.pong && c.ping_size == 4096 && c.minmatch == 1);
    assert_eq!((c.duration_s, c.initwait_s, c.warmup_s), (3.0, 20.0, 0.5));
    assert_eq!(c.count, 0);
    let c = parse_args(&args("-D 60 --warmup 0.5 --count 10000 ping size 16")).unwrap();
    assert_eq!((c.count, c.duration_s), (10000, 60.0));
    assert!(parse_args(&args("--count 0 ping")).is_err());
    assert!(parse_args(&args("--count ping")).is_err());
    let c = parse_args(&args("-u -k all -n 4 -D 3 -1 sub waitset")).unwrap();
    assert!(c.best_effort && c.sub && c.sub_every_second && c.keep_last.is_none());
    assert_eq!((c.nkeys, c.read_mode.as_str()), (4, "waitset"));
    assert_eq!(c.topic("Data"), "DDSPerfUDataKS");
    let c = parse_args(&args("-k 8 pub 10kHz size 16 burst 4")).unwrap();
    assert_eq!((c.keep_last, c.pub_rate, c.burst), (Some(8), 10_000.0, 4));
    assert!(parse_args(&[]).unwrap().pong, "pong is the default mode");
    for bad in [
        "pub 5%",
        "-T K32 pong",
        "ping 10Hz",
        "-Qfoo:1 pong",
        "frob",
        "-k 0 sub",
    ] {
        assert!(parse_args(&args(bad)).is_err(), "{bad}");
    }
}

#[test]
fn count_mode_stops_after_n_measured_round_trips() {
    let p = Perf::new(Config {
        count: 3,
        ping: true,
        ..Default::default()
    });
    p.lock().pinging = true;
    let pong = |p: &Perf| {
        let seq = p.lock().cur_seq;
        p.on_pong([1; 16], "peer", seq, wall_ns());
    };
    pong(&p);
    // A stale pong (an earlier ping's) is no round trip of the current ping.
    p.on_pong([1; 16], "peer", 0, wall_ns());
    pong(&p);
    assert!(!p.stopping());
    pong(&p);
    assert!(p.stopping());
    assert_eq!(p.lock().measured, 3);
}

#[test]
fn histogram_buckets_keep_three_digits() {
    assert_eq!(Histogram::bucket(999), 999);
    assert_eq!(Histogram::bucket(123_456), 123_000);
    let mut h = Histogram::default();
    for v in [10_000, 20_000, 30_000, 40_000] {
        h.record(v);
    }
    assert_eq!(
        (h.quantile(0.0), h.quantile(0.5), h.quantile(1.0)),
        (10_000, 20_000, 40_000)
    );
    assert_eq!(h.mean(), 25_000.0);
}

#[test]
fn loss_is_counted_per_key_and_writer() {
    let mut t = SeqTracker::default();
    let w = [1; 16];
    t.record(w, 10, 0, 16, 2).unwrap();
    t.record(w, 11, 1, 16, 2).unwrap();
    // Key 0 expected 12: ddsperf counts the sequence gap (2), not the samples of the key.
    t.record(w, 14, 0, 16, 2).unwrap();
    assert_eq!((t.total, t.lost), (3, 2));
    t.record([2; 16], 0, 0, 16, 2).unwrap(); // another writer starts afresh
    assert_eq!(t.lost, 2);
    assert!(t.record(w, 15, 2, 16, 2).is_err());
}

#[test]
fn guid_partitions_are_ddsperfs() {
    let g = [
        0x01, 0x10, 0x07, 0xb8, 0xd4, 0x46, 0x09, 0x24, 0x80, 0x8f, 0x73, 0xf4, 0, 0, 1, 0xc1,
    ];
    assert_eq!(guid_partition(&g), "011007b8_d4460924_808f73f4_000001c1");
}
