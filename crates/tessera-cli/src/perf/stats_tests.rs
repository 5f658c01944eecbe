use super::*;

#[test]
fn latency_percentile_rule() {
    let mut l = LatencyStats::new();
    for v in (1..=10).rev() {
        l.record(v * 1000);
    }
    let s = l.take_interval().unwrap();
    assert_eq!(s.cnt, 10);
    assert_eq!(s.min_ns, 1000);
    assert_eq!(s.max_ns, 10_000);
    assert_eq!(s.mean_ns, 5500.0);
    assert_eq!(s.p50_ns, 6000); // raw[10 - 5]
    assert_eq!(s.p90_ns, 10_000); // raw[10 - 1]
    assert_eq!(s.p99_ns, 10_000);
    assert_eq!(l.take_interval(), None);
    assert_eq!(l.total_count(), 10);

    // 9 samples: 90% and 99% are the maximum (as in ddsperf's 10 Hz ping output).
    for v in 1..=9 {
        l.record(v);
    }
    let s = l.take_interval().unwrap();
    assert_eq!((s.p50_ns, s.p90_ns, s.p99_ns, s.max_ns), (5, 9, 9, 9));

    // 1000 samples.
    for v in 1..=1000 {
        l.record(v);
    }
    let s = l.take_interval().unwrap();
    assert_eq!((s.p50_ns, s.p90_ns, s.p99_ns), (501, 901, 991));
    assert_eq!(l.total_count(), 1019);
    let o = l.overall().unwrap();
    assert_eq!(o.cnt, 1019);
    assert_eq!(o.min_ns, 1);
}

#[test]
fn latency_raw_capacity() {
    let mut l = LatencyStats::new();
    // Only the first RAW_CAPACITY go into the percentiles; all count for max/mean.
    for _ in 0..RAW_CAPACITY {
        l.record(10);
    }
    for _ in 0..100 {
        l.record(1_000_000);
    }
    let s = l.take_interval().unwrap();
    assert_eq!(s.cnt as usize, RAW_CAPACITY + 100);
    assert_eq!(s.p99_ns, 10);
    assert_eq!(s.max_ns, 1_000_000);
}

/// Latencies beyond ±2^31 ns are kept at full width apart from the others; the percentiles
/// stay exactly those of ddsperf's rule over the sorted samples.
#[test]
fn latency_percentiles_with_values_beyond_i32() {
    let big = i64::from(i32::MAX);
    let sets: [&[i64]; 4] = [
        &[
            5,
            -7,
            big + 1,
            3,
            i64::from(i32::MIN) - 1,
            9_000_000_000,
            -big * 4,
            0,
            12,
            1,
        ],
        &[big + 10, big + 5, big + 20],
        &[-big * 3, -big * 2, 4, 4],
        &[i64::from(i32::MIN), big, 0],
    ];
    for set in sets {
        let mut l = LatencyStats::new();
        for &v in set {
            l.record(v);
        }
        let s = l.take_interval().unwrap();
        let mut sorted = set.to_vec();
        sorted.sort_unstable();
        let n = sorted.len();
        let at = |k: usize| sorted[n - k];
        assert_eq!(
            (s.p50_ns, s.p90_ns, s.p99_ns),
            (at(n.div_ceil(2)), at(n.div_ceil(10)), at(n.div_ceil(100))),
            "{set:?}"
        );
        assert_eq!((s.min_ns, s.max_ns), (sorted[0], sorted[n - 1]));
        let mut raw = RawSamples::default();
        for &v in set {
            raw.push(v);
        }
        raw.sort();
        let all: Vec<Option<i64>> = (0..=n).map(|i| raw.sorted_at(i)).collect();
        let want: Vec<Option<i64>> = sorted.iter().copied().map(Some).chain([None]).collect();
        assert_eq!(all, want, "{set:?}");
    }
}

#[test]
fn pub_hist() {
    let mut h = PubHist::default();
    h.record(0);
    h.record(999);
    h.record(1000);
    h.record(29_999);
    h.record(30_000);
    assert_eq!(h.bins[0], 2);
    assert_eq!(h.bins[1], 1);
    assert_eq!(h.bins[29], 1);
    assert_eq!(h.over, 1);
    assert_eq!(h.count(), 5);
    let t = h.take();
    assert_eq!((t.min, t.max), (0, 30_000));
    assert_eq!(h, PubHist::default());
}

#[test]
fn seq_single_key() {
    let mut t = SeqTracker::new(1, false);
    assert_eq!(t.on_sample(7, 100, 0, 12, 0, || Some(1)), Ok(true));
    assert_eq!(t.on_sample(7, 101, 0, 12, 0, || None), Ok(true));
    assert_eq!(t.on_sample(7, 105, 0, 12, 0, || None), Ok(false));
    assert_eq!(t.total_lost(), 3);
    assert_eq!(t.publishers()[0].participant, Some(1));
    let i = t.interval();
    assert_eq!(
        i,
        SubInterval {
            last_size: 12,
            total: 3,
            total_lost: 3,
            delta: 3,
            delta_lost: 3,
            delta_bytes: 36,
            delta10: 3,
            delta10_bytes: 36
        }
    );
    assert!(t.all_received_at_least(3));
    assert!(!t.all_received_at_least(4));
}

#[test]
fn seq_duplicate_wraps_like_ddsperf() {
    let mut t = SeqTracker::new(1, false);
    t.on_sample(1, 10, 0, 12, 0, || None).unwrap();
    // A repeated sequence number adds (seq - expected) mod 2^32 to the loss count.
    t.on_sample(1, 10, 0, 12, 0, || None).unwrap();
    assert_eq!(t.total_lost(), u64::from(u32::MAX));
}

#[test]
fn seq_multi_key() {
    // Publisher cycles keys 0,1,2 with a global sequence; subscriber joins at seq 7 (key 1).
    let mut t = SeqTracker::new(3, false);
    for seq in 7..30u32 {
        let key = seq % 3;
        assert_eq!(t.on_sample(1, seq, key, 32, 0, || None), Ok(true), "{seq}");
    }
    assert_eq!(t.total_lost(), 0);
    // Drop seq 30 (key 0) and 31 (key 1).
    t.on_sample(1, 32, 2, 32, 0, || None).unwrap();
    t.on_sample(1, 33, 0, 32, 0, || None).unwrap();
    t.on_sample(1, 34, 1, 32, 0, || None).unwrap();
    assert_eq!(t.total_lost(), 6); // 3 per missed sample of a key's stream (stride 3)
    assert_eq!(
        t.on_sample(1, 35, 3, 32, 0, || None),
        Err(KeyOutOfRange { key: 3, nkeys: 3 })
    );
    assert_eq!(
        KeyOutOfRange { key: 2, nkeys: 2 }.to_string(),
        "received key 2 >= nkeys 2"
    );
}

#[test]
fn seq_windows() {
    let mut t = SeqTracker::new(1, false);
    let mut seq = 0;
    let mut lines = Vec::new();
    for _second in 0..12 {
        for _ in 0..100 {
            t.on_sample(1, seq, 0, 10, 0, || None).unwrap();
            seq += 1;
        }
        lines.push(t.interval());
    }
    assert_eq!(lines[0].delta, 100);
    assert_eq!(lines[0].delta10, 100);
    assert_eq!(lines[9].delta10, 1000);
    // From the 11th report on, the window is 10 reports wide.
    assert_eq!(lines[10].delta10, 1000);
    assert_eq!(lines[11].delta10, 1000);
    assert_eq!(lines[11].total, 1200);
    // Nothing received: deltas are 0 but the totals stay.
    let idle = t.interval();
    assert_eq!((idle.delta, idle.total, idle.delta10), (0, 1200, 900));
}

#[test]
fn seq_latency_tracking() {
    let mut t = SeqTracker::new(1, true);
    t.on_sample(1, 0, 0, 12, 500, || None).unwrap();
    t.on_sample(1, 1, 0, 12, 1500, || None).unwrap();
    let l = t.publishers_mut()[0].latency.as_mut().unwrap();
    let s = l.take_interval().unwrap();
    assert_eq!((s.cnt, s.min_ns, s.max_ns), (2, 500, 1500));
}

#[test]
fn pacer_bursts() {
    // 1 burst/s of 3 samples: the first burst goes at once, the second at 0.995 s.
    let mut p = PubPacer::new(Some(1.0), 3, 0);
    assert!(!p.after_write());
    assert!(!p.after_write());
    assert!(p.after_write());
    assert!(p.must_wait(0));
    assert!(p.must_wait(994_000_000));
    assert!(!p.must_wait(995_000_000));
    // Unlimited and burst 0 never wait.
    let mut u = PubPacer::new(None, 1, 0);
    assert!(!u.after_write());
    assert!(!u.must_wait(0));
    let mut z = PubPacer::new(Some(1.0), 0, 0);
    for _ in 0..10 {
        assert!(!z.after_write());
    }
    assert!(!z.must_wait(0));
    assert_eq!(z.written(), 10);
}

#[test]
fn clock_decimator_adapts() {
    let mut c = ClockDecimator::default();
    assert!(c.read_clock_now());
    // Fast writes: the interval grows to 10.
    let mut reads = 0;
    for _ in 0..200 {
        let read = c.read_clock_now();
        reads += usize::from(read);
        c.after_write(if read { 100 } else { 0 });
    }
    assert!(reads < 40, "{reads}");
    // A slow write (>10 us) drops back to reading every time.
    while !c.read_clock_now() {
        c.after_write(0);
    }
    c.after_write(20_000);
    assert!(c.read_clock_now());
    c.after_write(20_000);
    assert!(c.read_clock_now());
    c.reset();
    assert!(c.read_clock_now());
}

#[test]
fn ping_as_fast_as_possible() {
    let s0 = 1_000_000_000_000i64;
    let mut p = PingScheduler::new(PingInterval::AsFastAsPossible);
    assert_eq!(p.first_deadline(s0), Some(s0 + 1_000_000_000));
    p.peers_changed(1, s0);
    let a = p.on_timer(s0 + 1_000_000_000);
    assert_eq!(a.send_seq, Some(1));
    assert_eq!(a.next_deadline, Some(s0 + 2_000_000_000));
    assert_eq!(a.warn_timeouts, None);
    // The pong for seq 1 triggers ping 2 right away.
    assert_eq!(p.on_pong(true, 1, s0 + 1_000_050_000), Some(2));
    // A pong for an old ping or a data pong does nothing.
    assert_eq!(p.on_pong(true, 1, s0 + 1_000_060_000), None);
    assert_eq!(p.on_pong(false, 2, s0 + 1_000_060_000), None);
    // Timer fires before a second has passed since the last ping: no new ping.
    let a = p.on_timer(s0 + 2_000_000_000);
    assert_eq!(a.send_seq, None);
    assert_eq!(a.next_deadline, Some(s0 + 2_000_050_000));
    // Pong 2 never arrives: after a second, a new ping; warning suppressed (within 3.333 s of
    // the peer change), then printed. (The very first ping counted as a timeout too: no pong
    // had been seen when it was sent.)
    let a = p.on_timer(s0 + 2_000_050_000);
    assert_eq!((a.send_seq, a.warn_timeouts), (Some(3), None));
    let a = p.on_timer(s0 + 3_500_000_000);
    assert_eq!((a.send_seq, a.warn_timeouts), (Some(4), Some(3)));
    assert_eq!(p.timeouts(), 3);
}

#[test]
fn ping_periodic() {
    let mut p = PingScheduler::new(PingInterval::Period(100_000_000));
    assert_eq!(p.first_deadline(0), Some(100_000_000));
    p.peers_changed(2, 0);
    let a = p.on_timer(100_000_000);
    assert_eq!(a.send_seq, Some(1));
    assert_eq!(a.next_deadline, Some(200_000_000));
    assert_eq!(p.on_pong(true, 1, 100_100_000), None);
    assert_eq!(p.on_pong(true, 1, 100_200_000), None);
    let a = p.on_timer(200_000_000);
    assert_eq!(a.send_seq, Some(2));
    assert_eq!(a.warn_timeouts, None);
    // A very late wake-up re-bases the schedule on now.
    let a = p.on_timer(900_000_000);
    assert_eq!(a.send_seq, Some(3));
    assert_eq!(a.next_deadline, Some(1_000_000_000));
    assert_eq!(
        PingScheduler::new(PingInterval::Never).first_deadline(0),
        None
    );
}

#[test]
fn overall_histogram_and_warmup() {
    let mut l = LatencyStats::new();
    // Warm-up samples count in the interval but not in the whole-run histogram.
    l.record_with(1_000_000, false);
    assert!(l.overall().is_none());
    for v in [1000, 1000, 2000, 5000] {
        l.record(v);
    }
    let s = l.take_interval().unwrap();
    assert_eq!(s.cnt, 5);
    assert_eq!(s.max_ns, 1_000_000);
    assert_eq!(l.total_count(), 5);
    let o = l.overall().unwrap();
    assert_eq!(o.cnt, 4);
    assert!((5000..5010).contains(&o.max_ns), "{o:?}");
    let total: u64 = o.hist.iter().map(|&(_, c)| c).sum();
    assert_eq!(total, 4);
    assert_eq!(o.hist.len(), 3);
    assert!(o.hist.windows(2).all(|w| w[0].0 < w[1].0));
    assert_eq!(o.hist[0], (1000, 2));
    assert_eq!(o.hist[2].1, 1);
    // Rebuilding from the buckets gives the same quantiles.
    let mut h = hdrhistogram::Histogram::<u64>::new(3).unwrap();
    for &(v, c) in &o.hist {
        h.record_n(v, c).unwrap();
    }
    assert_eq!(h.value_at_quantile(0.5), o.p50_ns);
    assert_eq!(h.max(), o.max_ns);

    // Large values are not clamped to the histogram's initial range.
    let mut l = LatencyStats::new();
    l.record(20_000);
    l.record(3_000_000_000);
    let o = l.overall().unwrap();
    assert!((19_990..=20_010).contains(&o.min_ns), "{o:?}");
    assert!(o.max_ns >= 2_990_000_000, "{o:?}");
}
