//! Many instances, and a randomized check of the cache's invariants.

use std::time::{Duration, Instant};

use tessera::history::*;

const W1: WriterGuid = [1; 16];

fn key(n: u32) -> KeyHash {
    let mut k = [0; 16];
    k[..4].copy_from_slice(&n.to_be_bytes());
    k
}

#[test]
fn seventy_thousand_instances() {
    const N: u32 = 70_000;
    let start = Instant::now();
    let mut h: History<u32> = History::new(HistoryConfig::default());
    for i in 0..N {
        assert!(h.insert(key(i), W1, i, i as i64, 0).is_stored());
    }
    assert_eq!(h.instance_count(), N as usize);
    assert_eq!(h.len(), N as usize);
    for i in (0..N).step_by(7) {
        let handle = h.lookup_instance(&key(i)).unwrap();
        assert_eq!(h.key_value(handle), Some(key(i)));
    }
    // A second sample per instance replaces the first (keep-last 1).
    for i in 0..N {
        assert!(matches!(
            h.insert(key(i), W1, i + N, 0, 0),
            InsertOutcome::Replaced(_)
        ));
    }

    // Walk every instance by handle with read_next_instance.
    let mut prev = InstanceHandle::NIL;
    let mut count = 0u32;
    loop {
        let s = h.read_next_instance(prev, UNLIMITED, StateMasks::ANY);
        let Some(first) = s.first() else { break };
        assert!(first.info.instance_handle > prev);
        assert_eq!(s.len(), 1);
        assert_eq!(first.data, Some(count + N), "handles follow creation order");
        assert_eq!(first.info.view_state, ViewState::New);
        prev = first.info.instance_handle;
        count += 1;
    }
    assert_eq!(count, N);
    assert!(!h.has_unread());
    assert!(h.instance_handles().is_sorted());

    // Unread samples in a few instances are found without visiting the rest.
    for i in (0..N).step_by(10_000) {
        h.insert(key(i), W1, i, 0, 0);
    }
    let s = h.take(UNLIMITED, StateMasks::NOT_READ);
    assert_eq!(s.len(), 7);

    // Lose the writer: every instance goes NOT_ALIVE_NO_WRITERS.
    assert_eq!(h.writer_lost(W1, 0), N as usize);
    // Read samples do not carry the news: every instance gets an invalid sample.
    assert_eq!(h.len(), 2 * N as usize - 7);
    assert_eq!(h.not_read_len(), N as usize);
    let mut out = Vec::new();
    assert_eq!(h.take_into(&mut out, UNLIMITED), 2 * N as usize - 7);
    assert!(out
        .iter()
        .all(|s| s.info.instance_state == InstanceState::NotAliveNoWriters));
    assert_eq!(h.instance_count(), 0, "all purged");
    assert!(h.is_empty());

    // Slots are reused.
    for i in 0..N {
        h.insert(key(i), W1, i, 0, 0);
    }
    assert_eq!(h.instance_count(), N as usize);
    assert_eq!(
        h.take_next_instance(InstanceHandle::NIL, 1, StateMasks::ANY)[0].data,
        Some(0)
    );
    eprintln!("70k instances: {:?}", start.elapsed());
}

/// A small xorshift generator, so the test is deterministic without dependencies.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn masks(&mut self) -> StateMasks {
        StateMasks::new(
            SampleStateMask::from_bits_truncate(self.below(4) as u32),
            ViewStateMask::from_bits_truncate(self.below(4) as u32),
            InstanceStateMask::from_bits_truncate(self.below(8) as u32),
        )
        .max_any(self.below(3) == 0)
    }
}

trait MaxAny {
    fn max_any(self, any: bool) -> Self;
}

impl MaxAny for StateMasks {
    fn max_any(self, any: bool) -> StateMasks {
        if any {
            StateMasks::ANY
        } else {
            self
        }
    }
}

fn check_invariants(h: &History<u64>, cfg: &HistoryConfig, rng: &mut Rng) {
    // Counters agree with what a take of everything returns.
    let mut c = h.clone();
    let all = c.take(UNLIMITED, StateMasks::ANY);
    assert_eq!(all.len(), h.len());
    assert_eq!(
        all.iter().filter(|s| s.info.valid_data).count(),
        h.valid_len()
    );
    assert_eq!(
        all.iter()
            .filter(|s| s.info.sample_state == SampleState::NotRead)
            .count(),
        h.not_read_len()
    );
    if let Some(m) = cfg.limits.max_samples {
        assert!(h.valid_len() <= m);
    }
    // Per instance: contiguous, ranks consistent, at most one invalid sample and last.
    let mut i = 0;
    while i < all.len() {
        let handle = all[i].info.instance_handle;
        let mut j = i;
        while j < all.len() && all[j].info.instance_handle == handle {
            j += 1;
        }
        let group = &all[i..j];
        let status = h
            .instance_status(handle)
            .expect("instance of a sample exists");
        assert_eq!(status.samples, group.len());
        for (n, s) in group.iter().enumerate() {
            assert_eq!(s.info.sample_rank as usize, group.len() - 1 - n);
            assert_eq!(s.data.is_some(), s.info.valid_data);
            assert_eq!(s.info.instance_state, status.instance_state);
            if !s.info.valid_data {
                assert_eq!(n, group.len() - 1, "invalid sample is last");
                assert!(!s.info.instance_state.is_alive());
            }
            // Samples of a newer generation may have been taken already, so the instance can be
            // ahead of every sample left.
            assert!(s.info.generation_rank <= s.info.absolute_generation_rank);
            if n == group.len() - 1 {
                assert_eq!(s.info.generation_rank, 0);
            }
            if n > 0 {
                assert!(s.info.generation_rank <= group[n - 1].info.generation_rank);
            }
        }
        if let HistoryKind::KeepLast(d) = cfg.history {
            assert!(group.iter().filter(|s| s.info.valid_data).count() <= d.max(1) as usize);
        }
        if let Some(m) = cfg.limits.max_samples_per_instance {
            assert!(group.iter().filter(|s| s.info.valid_data).count() <= m.max(1));
        }
        assert!(j == all.len() || !all[j..].iter().any(|s| s.info.instance_handle == handle));
        i = j;
    }
    // Every instance: alive implies writers; not-alive ones are purged once empty and
    // without writers.
    let handles: Vec<_> = h.instance_handles().collect();
    assert_eq!(handles.len(), h.instance_count());
    let mut survivors = 0;
    for &hd in &handles {
        let st = h.instance_status(hd).unwrap();
        if st.instance_state.is_alive() {
            assert!(st.writers > 0);
        }
        assert!(st.samples > 0 || st.instance_state.is_alive() || st.writers > 0);
        assert_eq!(h.lookup_instance(&st.key_hash), Some(hd));
        if st.instance_state.is_alive() || st.writers > 0 {
            survivors += 1;
        }
    }
    assert_eq!(c.instance_count(), survivors);
    // has_matching agrees with read.
    for _ in 0..3 {
        let m = rng.masks();
        let mut c = h.clone();
        assert_eq!(h.has_matching(m), !c.read(UNLIMITED, m).is_empty(), "{m:?}");
    }
}

#[test]
fn randomized_operations_keep_invariants() {
    let configs = [
        HistoryConfig::default(),
        HistoryConfig {
            history: HistoryKind::KeepLast(3),
            limits: ResourceLimits {
                max_samples: Some(12),
                ..Default::default()
            },
            destination_order: DestinationOrder::BySourceTimestamp,
            ..Default::default()
        },
        HistoryConfig {
            history: HistoryKind::KeepAll,
            limits: ResourceLimits {
                max_samples: Some(20),
                max_instances: Some(5),
                max_samples_per_instance: Some(6),
            },
            ..Default::default()
        },
        HistoryConfig {
            history: HistoryKind::KeepAll,
            ..Default::default()
        },
        HistoryConfig {
            history: HistoryKind::KeepLast(2),
            lifecycle: Lifecycle {
                autopurge_nowriter_samples_delay: Some(Duration::from_nanos(5)),
                autopurge_disposed_samples_delay: Some(Duration::from_nanos(9)),
            },
            ..Default::default()
        },
    ];
    for (ci, cfg) in configs.iter().enumerate() {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ ci as u64);
        let mut h: History<u64> = History::new(*cfg);
        let mut ts = 0i64;
        let mut out = Vec::new();
        for step in 0..3000u64 {
            ts += rng.below(3) as i64 - 1 + 1;
            let k = key(rng.below(8) as u32);
            let w = [rng.below(3) as u8 + 1; 16];
            let src = ts - rng.below(2) as i64;
            match rng.below(12) {
                0..=4 => {
                    h.insert(k, w, step, src, ts);
                }
                5 => {
                    h.dispose(k, w, src, src);
                }
                6 => {
                    h.unregister(k, w, src, src);
                }
                7 => match rng.below(4) {
                    0 => {
                        h.writer_lost(w, ts);
                    }
                    1 => {
                        h.purge_expired(ts);
                        assert!(h.next_purge().is_none_or(|t| t > ts));
                    }
                    _ => {}
                },
                8 => {
                    let m = rng.masks();
                    h.read(rng.below(6) as usize, m);
                }
                9 => {
                    let m = rng.masks();
                    h.take(rng.below(6) as usize, m);
                }
                10 => {
                    let prev = InstanceHandle::from_raw(rng.below(20));
                    let m = rng.masks();
                    if rng.below(2) == 0 {
                        h.read_next_instance(prev, rng.below(4) as usize, m);
                    } else {
                        h.take_next_instance(prev, rng.below(4) as usize, m);
                    }
                }
                _ => {
                    out.clear();
                    h.take_into(&mut out, rng.below(4) as usize);
                }
            }
            check_invariants(&h, cfg, &mut rng);
        }
        if cfg.lifecycle != Lifecycle::default() {
            assert!(h.autopurged() > 0, "the autopurge path was exercised");
        }
    }
}

/// Prints the cost of insert + take; run with
/// `cargo test --release -p tessera --test history_scale -- --ignored --nocapture`.
#[test]
#[ignore]
fn measure_throughput() {
    let mut h: History<[u8; 16]> = History::new(HistoryConfig {
        history: HistoryKind::KeepAll,
        ..Default::default()
    });
    let mut out = Vec::with_capacity(64);
    const N: u32 = 10_000_000;
    let start = Instant::now();
    for i in 0..N {
        h.insert(KEYLESS, W1, [i as u8; 16], i as i64, i as i64);
        out.clear();
        h.take_into(&mut out, UNLIMITED);
    }
    let per = start.elapsed() / N;
    eprintln!("keyless insert + take_into: {per:?} per sample");

    let start = Instant::now();
    for i in 0..N {
        h.insert(key(i % 1000), W1, [i as u8; 16], i as i64, i as i64);
        if i % 64 == 63 {
            out.clear();
            h.take_into(&mut out, UNLIMITED);
        }
    }
    let per = start.elapsed() / N;
    eprintln!("1000 instances, insert + take_into per 64: {per:?} per sample");
}
