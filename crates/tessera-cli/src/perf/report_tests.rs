//! Formatting tests. Every expected string below is a line captured from ddsperf 0.10.2 runs
//! (ping/pong, pub/sub, -l, -c, -d, -X, failing -Q criteria) in a network namespace.
#![allow(clippy::excessive_precision)]

use super::*;
use crate::perf::protocol::CpuStatThread;

fn st(pid: u32, t: f64) -> Stamp {
    Stamp { pid, t }
}

fn lat(cnt: u32, mean: f64, min: i64, p50: i64, p90: i64, p99: i64, max: i64) -> LatencySummary {
    LatencySummary {
        cnt,
        mean_ns: mean,
        min_ns: min,
        p50_ns: p50,
        p90_ns: p90,
        p99_ns: p99,
        max_ns: max,
    }
}

#[test]
fn fmt_g_matches_c_printf() {
    // (value, "%5.3g", "%4.3g") produced by glibc printf.
    let table: &[(f64, &str, &str)] = &[
        (0.0, "    0", "   0"),
        (1.0, "    1", "   1"),
        (6.0, "    6", "   6"),
        (10.0, "   10", "  10"),
        (99.950000000000003, "  100", " 100"),
        (99.948999999999998, " 99.9", "99.9"),
        (101.0, "  101", " 101"),
        (999.0, "  999", " 999"),
        (999.49000000000001, "  999", " 999"),
        (1.0004, "    1", "   1"),
        (1.0049999999999999, "    1", "   1"),
        (1.0048999999999999, "    1", "   1"),
        (1.0149999999999999, " 1.01", "1.01"),
        (2.1899999999999999, " 2.19", "2.19"),
        (20.050000000000001, " 20.1", "20.1"),
        (20.149999999999999, " 20.1", "20.1"),
        (20.25, " 20.2", "20.2"),
        (3.7850000000000001, " 3.79", "3.79"),
        (9.9949999999999992, " 9.99", "9.99"),
        (9.9948999999999995, " 9.99", "9.99"),
        (12.5, " 12.5", "12.5"),
        (0.5, "  0.5", " 0.5"),
        (0.00012344999999999999, "0.000123", "0.000123"),
        (123456.0, "1.23e+05", "1.23e+05"),
        (1.0000000000000001e-05, "1e-05", "1e-05"),
        (0.0001, "0.0001", "0.0001"),
        (1234.5, "1.23e+03", "1.23e+03"),
        (999.5, "1e+03", "1e+03"),
        (3.1315899999999999, " 3.13", "3.13"),
        (45.649999999999999, " 45.6", "45.6"),
        (45.75, " 45.8", "45.8"),
    ];
    for &(v, w5, w4) in table {
        assert_eq!(fmt_g(v, 5, 3), w5, "{v}");
        assert_eq!(fmt_g(v, 4, 3), w4, "{v}");
    }
}

#[test]
fn latency_lines() {
    let l = ReportLine::Latency {
        stamp: st(8873, 2.0),
        sublat: false,
        peer: PeerLabel::HostPid {
            host: "vm".into(),
            pid: 8872,
        },
        size: 12,
        stats: lat(17707, 28150.0, 7155, 32953, 41982, 60881, 1_035_484),
    };
    assert_eq!(
        l.to_text().unwrap(),
        "[8873] 2.000  vm:8872 size 12 mean 28.150us min 7.155us 50% 32.953us 90% 41.982us 99% 60.881us max 1035.484us cnt 17707"
    );
    let l = ReportLine::Latency {
        stamp: st(10085, 4.0),
        sublat: true,
        peer: PeerLabel::Handle(0x70cd5fc60743904),
        size: 100,
        stats: lat(301, 16869.0, 8873, 15724, 23526, 55182, 85097),
    };
    assert_eq!(
        l.to_text().unwrap(),
        "[10085] 4.000  sublat 70cd5fc60743904 size 100 mean 16.869us min 8.873us 50% 15.724us 90% 23.526us 99% 55.182us max 85.097us cnt 301"
    );
    let l = ReportLine::Latency {
        stamp: st(10085, 1.0),
        sublat: true,
        peer: PeerLabel::HostPid {
            host: "vm".into(),
            pid: 10114,
        },
        size: 100,
        stats: lat(698, 25944.0, 8623, 19399, 46991, 73270, 182_181),
    };
    assert_eq!(
        l.to_text().unwrap(),
        "[10085] 1.000  sublat vm:10114 size 100 mean 25.944us min 8.623us 50% 19.399us 90% 46.991us 99% 73.270us max 182.181us cnt 698"
    );
}

#[test]
fn latency_line_from_stats() {
    // End to end: record, take the interval, format.
    let mut s = crate::perf::stats::LatencyStats::new();
    for v in [74586, 137555, 220193, 582483, 100000] {
        s.record(v);
    }
    let l = ReportLine::Latency {
        stamp: Stamp::new(9846, 1_000_000_000, 0),
        sublat: false,
        peer: PeerLabel::HostPid {
            host: "vm".into(),
            pid: 9833,
        },
        size: 12,
        stats: s.take_interval().unwrap(),
    };
    assert_eq!(
        l.to_text().unwrap(),
        "[9846] 1.000  vm:9833 size 12 mean 222.963us min 74.586us 50% 137.555us 90% 582.483us 99% 582.483us max 582.483us cnt 5"
    );
}

fn sub(last_size: u32, total: u64, lost: u64, delta: u64, dlost: u64, d10: u64) -> SubInterval {
    SubInterval {
        last_size,
        total,
        total_lost: lost,
        delta,
        delta_lost: dlost,
        delta_bytes: delta * u64::from(last_size),
        delta10: d10,
        delta10_bytes: d10 * u64::from(last_size),
    }
}

#[test]
fn sub_lines() {
    let cases = [
        (
            8942,
            1.0,
            sub(12, 9979, 0, 9979, 0, 9979),
            1_000_000_000,
            "[8942] 1.000  size 12 total 9979 lost 0 delta 9979 lost 0 rate 9.98 kS/s 0.96 Mb/s (1.00 kS/s 0.10 Mb/s)",
        ),
        (
            8942,
            2.0,
            sub(12, 29964, 0, 19985, 0, 29964),
            999_990_000,
            "[8942] 2.000  size 12 total 29964 lost 0 delta 19985 lost 0 rate 19.99 kS/s 1.92 Mb/s (3.00 kS/s 0.29 Mb/s)",
        ),
        (
            10218,
            1.0,
            sub(1024, 34891, 0, 34891, 0, 34891),
            1_000_095_000,
            "[10218] 1.000  size 1024 total 34891 lost 0 delta 34891 lost 0 rate 34.89 kS/s 285.80 Mb/s (3.49 kS/s 28.58 Mb/s)",
        ),
        (
            10460,
            1.0,
            sub(12, 1035223, 1350264, 1035223, 1350264, 1035223),
            1_000_090_000,
            "[10460] 1.000  size 12 total 1035223 lost 1350264 delta 1035223 lost 1350264 rate 1035.13 kS/s 99.37 Mb/s (103.51 kS/s 9.94 Mb/s)",
        ),
        (
            9900,
            3.0,
            sub(0, 0, 0, 0, 0, 0),
            1_000_000_000,
            "[9900] 3.000  size 0 total 0 lost 0 delta 0 lost 0 rate 0.00 kS/s 0.00 Mb/s (0.00 kS/s 0.00 Mb/s)",
        ),
    ];
    for (pid, t, counts, dt_ns, want) in cases {
        let l = ReportLine::Sub {
            stamp: st(pid, t),
            counts,
            dt_ns,
        };
        assert_eq!(l.to_text().unwrap(), want);
    }
}

#[test]
fn sub_line_from_tracker() {
    let mut t = crate::perf::stats::SeqTracker::new(3, false);
    for seq in 0..700u32 {
        t.on_sample(1, seq, seq % 3, 32, 0, || None).unwrap();
    }
    let l = ReportLine::Sub {
        stamp: st(10527, 1.0),
        counts: t.interval(),
        dt_ns: 1_000_000_000,
    };
    assert_eq!(
        l.to_text().unwrap(),
        "[10527] 1.000  size 32 total 700 lost 0 delta 700 lost 0 rate 0.70 kS/s 0.18 Mb/s (0.07 kS/s 0.02 Mb/s)"
    );
}

fn hist(bins: &[(usize, u64)], over: u64, min: u64, max: u64) -> PubHist {
    let mut h = PubHist::default();
    for &(i, n) in bins {
        h.bins[i] = n;
    }
    h.over = over;
    h.min = min;
    h.max = max;
    h
}

#[test]
fn pub_lines() {
    // All samples above 30 us (2 MiB samples at 1 Hz, burst 3).
    let h = hist(&[], 6, 39_000, 6_000_000);
    let l = ReportLine::Pub {
        stamp: st(9234, 1.0),
        hist: h,
        dt_ns: 1_000_000_000,
    };
    assert_eq!(
        l.to_text().unwrap(),
        "[9234] 1.000     6/s  39u |                              | 100%   6m"
    );

    // 20 kHz: peak in the first bin, a gradient after it.
    let mut bins = vec![(0, 18_000), (1, 1_900), (2, 1_900), (3, 500)];
    for i in 4..14 {
        bins.push((i, 10));
    }
    for i in [15, 16, 17, 18, 19, 21, 22, 23] {
        bins.push((i, 1));
    }
    let h = hist(&bins, 0, 0, 77_600);
    let n = h.count(); // 22408
    let l = ReportLine::Pub {
        stamp: st(8953, 1.0),
        hist: h,
        dt_ns: (n as f64 / 20_100.0 * 1e9) as i64,
    };
    assert_eq!(
        l.to_text().unwrap(),
        "[8953] 1.000 20.1k/s   0n |@--_.......... ..... ...      |   0%  78u"
    );

    // Half over 30 us: the over-percentage rounds to 100 (ddsperf's integer arithmetic).
    let h = hist(&[(4, 25), (29, 25)], 50, 4_000, 86_000);
    let l = ReportLine::Pub {
        stamp: st(10578, 3.0),
        hist: h,
        dt_ns: 1_000_000_000,
    };
    assert_eq!(
        l.to_text().unwrap(),
        "[10578] 3.000   100/s   4u |    @                        @| 100%  86u"
    );

    // Rates with k and M suffixes; an empty interval.
    let big = hist(&[(0, 3_780_000)], 0, 0, 342_000);
    assert!(ReportLine::Pub {
        stamp: st(11918, 1.0),
        hist: big,
        dt_ns: 1_000_000_000
    }
    .to_text()
    .unwrap()
    .starts_with("[11918] 1.000 3.78M/s   0n |@"));
    let k = hist(&[(0, 1000)], 0, 0, 1_000_000);
    assert_eq!(
        ReportLine::Pub {
            stamp: st(1, 1.0),
            hist: k,
            dt_ns: 1_000_000_000
        }
        .to_text()
        .unwrap(),
        "[1] 1.000    1k/s   0n |@                             |   0%   1m"
    );
    let empty = PubHist::default();
    assert_eq!(
        ReportLine::Pub {
            stamp: st(1, 1.0),
            hist: empty,
            dt_ns: 1_000_000_000
        }
        .to_text()
        .unwrap(),
        "[1] 1.000     0/s  inf |                              |   0%   0n"
    );
}

fn cpu(maxrss: f64, vcsw: u32, ivcsw: u32, threads: &[(&str, i32, i32)]) -> CpuStatsSample {
    CpuStatsSample {
        hostname: "vm".into(),
        pid: 1,
        maxrss,
        vcsw,
        ivcsw,
        some_above: !threads.is_empty(),
        cpu: threads
            .iter()
            .map(|&(n, u, s)| CpuStatThread {
                name: n.into(),
                u_pct: u,
                s_pct: s,
            })
            .collect(),
    }
}

#[test]
fn cpu_lines() {
    let l = ReportLine::Cpu {
        stamp: st(8873, 2.0),
        remote: None,
        stale: false,
        stats: cpu(7.5 * 1_048_576.0, 15068, 2672, &[("recvUC", 5, 35)]),
    };
    assert_eq!(
        l.to_text().unwrap(),
        "[8873] 2.000  rss:7.5MB vcsw:15068 ivcsw:2672 recvUC:5%+35%"
    );
    let l = ReportLine::Cpu {
        stamp: st(8942, 4.0),
        remote: None,
        stale: false,
        stats: cpu(
            7.2 * 1_048_576.0,
            1159,
            269,
            &[("tev", 0, 1), ("recvUC", 2, 0)],
        ),
    };
    assert_eq!(
        l.to_text().unwrap(),
        "[8942] 4.000  rss:7.2MB vcsw:1159 ivcsw:269 tev:0%+1% recvUC:2%+0%"
    );
    let l = ReportLine::Cpu {
        stamp: st(10125, 2.0),
        remote: Some(("vm".into(), 10136)),
        stale: false,
        stats: cpu(7.4 * 1_048_576.0, 928, 256, &[("pub", 0, 3)]),
    };
    assert_eq!(
        l.to_text().unwrap(),
        "[10125] 2.000  @vm:10136 rss:7.4MB vcsw:928 ivcsw:256 pub:0%+3%"
    );
    let l = ReportLine::Cpu {
        stamp: st(1, 2.0),
        remote: Some(("h".into(), 2)),
        stale: true,
        stats: cpu(900_000.0, 1, 2, &[("others", 1, 0)]),
    };
    assert_eq!(
        l.to_text().unwrap(),
        "[1] 2.000  (stale) @h:2 rss:879kB vcsw:1 ivcsw:2 others:1%+0%"
    );
    // Nothing above the threshold: no line at all.
    let quiet = ReportLine::Cpu {
        stamp: st(1, 1.0),
        remote: None,
        stale: false,
        stats: cpu(7e6, 1, 0, &[]),
    };
    assert_eq!(quiet.to_text(), None);
    assert_eq!(quiet.to_json(), None);
}

#[test]
fn netload_and_extended_lines() {
    let l = ReportLine::Netload {
        stamp: st(10218, 1.0),
        reading: NetloadReading {
            device: "lo".into(),
            xmit_bps: 0.30e9,
            recv_bps: 0.304e9,
            bandwidth: 1e9,
            obytes: 38892846,
            ibytes: 38892846,
        },
    };
    assert_eq!(
        l.to_text().unwrap(),
        "[10218] 1.000  lo: xmit 30% recv 30% [38892846 38892846]"
    );
    let l = ReportLine::Netload {
        stamp: st(10229, 1.0),
        reading: NetloadReading {
            device: "lo".into(),
            xmit_bps: 427.24e6,
            recv_bps: 427.244e6,
            bandwidth: 0.0,
            obytes: 55106294,
            ibytes: 55106294,
        },
    };
    assert_eq!(
        l.to_text().unwrap(),
        "[10229] 1.000  lo: xmit 427.24 Mb/s recv 427.24 Mb/s [55106294 55106294]"
    );
    let l = ReportLine::Extended {
        stamp: st(10251, 1.0),
        stats: ExtendedStats {
            discarded: 0,
            rexmit: 16,
            t_rexmit: 166359,
            t_throttle: 0,
            n_throttle: 0,
        },
    };
    assert_eq!(
        l.to_text().unwrap(),
        "[10251] 1.000  discarded 0 rexmit 16 Trexmit 166359 Tthrottle 0 Nthrottle 0"
    );
}

#[test]
fn event_lines() {
    let new_self = ReportLine::ParticipantNew {
        pid: 8873,
        host: "vm".into(),
        peer_pid: 8873,
        is_self: true,
    };
    assert_eq!(
        new_self.to_text().unwrap(),
        "[8873] participant vm:8873: new (self)"
    );
    let new = ReportLine::ParticipantNew {
        pid: 8873,
        host: "vm".into(),
        peer_pid: 8872,
        is_self: false,
    };
    assert_eq!(new.to_text().unwrap(), "[8873] participant vm:8872: new");
    let gone = ReportLine::ParticipantGone {
        pid: 8872,
        host: "vm".into(),
        peer_pid: 8873,
    };
    assert_eq!(gone.to_text().unwrap(), "[8872] participant vm:8873: gone");
    let mt = ReportLine::MatchTimeout {
        pid: 10262,
        host: "vm".into(),
        peer_pid: 10273,
        secs: 5.0,
    };
    assert_eq!(
        mt.to_text().unwrap(),
        "[10262] participant vm:10273: failed to match in 5.000s"
    );
    assert_eq!(
        ReportLine::PingTimeout { pid: 5, total: 7 }
            .to_text()
            .unwrap(),
        "[5] ping timed out (total 7 times) ... sending new ping"
    );
    assert_eq!(
        ReportLine::KeyOutOfRange(KeyOutOfRange { key: 2, nkeys: 2 })
            .to_text()
            .unwrap(),
        "received key 2 >= nkeys 2"
    );
    assert_eq!(
        ReportLine::WriteError { code: -10 }.to_text().unwrap(),
        "write error: -10"
    );
}

#[test]
fn verdicts() {
    let ok = VerdictInput {
        pid: 1,
        roundtrips_ok: true,
        samples_ok: true,
        ..Default::default()
    };
    assert_eq!(verdict(&ok), (vec![], 0));

    let bad = VerdictInput {
        pid: 10273,
        unmatched: vec![
            ("vm".into(), 10262, MatchMask::expected(true, false)),
            ("vm".into(), 5, MatchMask(0)),
        ],
        match_count: 1,
        min_match: 2,
        lost: 3,
        loss_is_error: true,
        roundtrips_ok: false,
        samples_ok: false,
        rss: Some((
            RssCriterion {
                factor: 1.0,
                term: 0.0,
            },
            1.0,
            2.0,
        )),
    };
    let (lines, code) = verdict(&bad);
    assert_eq!(code, 1);
    let text: Vec<String> = lines.iter().filter_map(|l| l.to_text()).collect();
    assert_eq!(
        text,
        vec![
            "[10273] error: vm:10262 failed to match data reader, ping reader, pong reader, ping writer, pong writer",
            "[10273] error: too few matching participants (1)",
            "[10273] error: 3 samples lost",
            "[10273] error: too few roundtrips for some peers",
            "[10273] error: too few samples received from some peers",
            "[10273] error: RSS grew too much (1.000000 -> 2.000000)",
        ]
    );
    // Loss is not an error for best-effort or keep-last.
    let be = VerdictInput {
        lost: 10,
        loss_is_error: false,
        ..ok.clone()
    };
    assert_eq!(verdict(&be).1, 0);
}

#[test]
fn json_lines() {
    let l = ReportLine::Latency {
        stamp: st(8873, 2.0),
        sublat: false,
        peer: PeerLabel::HostPid {
            host: "vm".into(),
            pid: 8872,
        },
        size: 12,
        stats: lat(17707, 28150.0, 7155, 32953, 41982, 60881, 1_035_484),
    };
    let v = l.to_json().unwrap();
    assert_eq!(v["type"], "latency");
    assert_eq!(v["peer"], "vm:8872");
    assert_eq!(v["cnt"], 17707);
    assert_eq!(v["p50_us"], 32.953);
    assert_eq!(v["t"], 2.0);

    let s = ReportLine::Sub {
        stamp: st(1, 1.0),
        counts: sub(12, 10, 1, 10, 1, 10),
        dt_ns: 1_000_000_000,
    };
    let v = s.to_json().unwrap();
    assert_eq!(v["type"], "sub");
    assert_eq!(v["rate_ksps"], 0.01);
    assert_eq!(v["lost"], 1);

    let mut out = Vec::new();
    {
        let mut r = Reporter::new(&mut out, true);
        assert!(r.emit(&l).unwrap());
        assert!(r.emit(&s).unwrap());
        let summary = ReportLine::Summary {
            pid: 1,
            latency: vec![],
            answers: None,
            received: 10,
            lost: 1,
            exit_code: 0,
        };
        assert!(r.emit(&summary).unwrap());
        r.flush().unwrap();
    }
    let text = String::from_utf8(out).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3);
    for line in lines {
        let v: Value = serde_json::from_str(line).unwrap();
        assert!(v["type"].is_string());
    }

    // Text mode skips the JSON-only summary.
    let mut out = Vec::new();
    let mut r = Reporter::new(&mut out, false);
    assert!(!r
        .emit(&ReportLine::Summary {
            pid: 1,
            latency: vec![],
            answers: None,
            received: 0,
            lost: 0,
            exit_code: 0
        })
        .unwrap());
}

#[test]
fn event_lines_get_a_time_and_summary_carries_the_histogram() {
    let mut out = Vec::new();
    {
        let mut r = Reporter::new(&mut out, true);
        let new = ReportLine::ParticipantNew {
            pid: 1,
            host: "vm".into(),
            peer_pid: 2,
            is_self: false,
        };
        assert!(r.emit_at(&new, 0.12345).unwrap());
        // A stamped line keeps its own time.
        let ext = ReportLine::Extended {
            stamp: st(1, 2.0),
            stats: ExtendedStats::default(),
        };
        assert!(r.emit_at(&ext, 9.0).unwrap());
        let o = OverallLatency {
            cnt: 3,
            mean_ns: 1333.0,
            min_ns: 1000,
            p50_ns: 1000,
            p90_ns: 2000,
            p99_ns: 2000,
            p999_ns: 2000,
            max_ns: 2000,
            hist: vec![(1000, 2), (2000, 1)],
        };
        let summary = ReportLine::Summary {
            pid: 1,
            latency: vec![(PeerLabel::Handle(0xab), o.clone())],
            answers: Some(PingAnswers {
                pings: 3,
                first: Some(o.clone()),
                all: Some(OverallLatency { max_ns: 4000, ..o }),
            }),
            received: 0,
            lost: 0,
            exit_code: 0,
        };
        assert!(r.emit_at(&summary, 3.0).unwrap());
    }
    let text = String::from_utf8(out).unwrap();
    let v: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(v[0]["type"], "participant");
    assert_eq!(v[0]["t"], 0.123);
    assert_eq!(v[1]["t"], 2.0);
    assert_eq!(v[2]["t"], 3.0);
    assert_eq!(
        v[2]["latency"][0]["hist"],
        serde_json::json!([[1000, 2], [2000, 1]])
    );
    assert_eq!(v[2]["latency"][0]["peer"], "ab");
    // A pinger's first and all answers per ping.
    assert_eq!(v[2]["pings"], 3);
    assert_eq!(v[2]["first"]["hist"], v[2]["latency"][0]["hist"]);
    assert_eq!(v[2]["all"]["max_us"], 4.0);

    // Text mode is unchanged by the time.
    let mut out = Vec::new();
    let mut r = Reporter::new(&mut out, false);
    r.emit_at(
        &ReportLine::ParticipantGone {
            pid: 1,
            host: "vm".into(),
            peer_pid: 2,
        },
        1.0,
    )
    .unwrap();
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "[1] participant vm:2: gone\n"
    );
}
