//! Reliability over the simulated network: loss, reordering, duplication, fragmentation,
//! durability, history limits.

use std::time::Duration;

use tessera_rtps::reader::ReaderConfig;
use tessera_rtps::sim::{reader_guid, NetConfig, Sim};
use tessera_rtps::writer::{HistoryKind, WriteError, WriterConfig};

fn payload(i: u64, len: usize) -> Vec<u8> {
    // CDR_LE encapsulation header, then a pattern derived from i.
    let mut v = vec![0u8, 1, 0, 0];
    v.extend((0..len.saturating_sub(4)).map(|k| (i as usize * 31 + k * 7) as u8));
    v.extend_from_slice(&i.to_le_bytes()[..4.min(len)]);
    v
}

fn lossy(seed: u64, loss: f64) -> NetConfig {
    NetConfig {
        seed,
        loss,
        duplicate: 0.05,
        reorder: 0.1,
        mtu: 14720,
        ..NetConfig::default()
    }
}

fn keep_all(max_samples: usize) -> WriterConfig {
    WriterConfig {
        history: HistoryKind::KeepAll,
        max_samples,
        ..Sim::writer_config()
    }
}

fn assert_exact(sim: &Sim, reader: usize, n: u64, len: usize) {
    let r = &sim.readers[reader];
    assert_eq!(
        r.received.len() as u64,
        n,
        "reader {reader}: {:?}",
        r.core.counters()
    );
    for (k, s) in r.received.iter().enumerate() {
        assert_eq!(s.seq, k as i64 + 1, "reader {reader} order");
        assert_eq!(
            s.payload,
            payload(s.seq as u64, len),
            "reader {reader} payload {}",
            s.seq
        );
    }
}

fn reliable_keep_all(loss: f64, seed: u64) {
    const N: u64 = 10_000;
    let mut sim = Sim::new(keep_all(1000), lossy(seed, loss));
    for _ in 0..3 {
        sim.add_reader(true, false);
    }
    for i in 1..=N {
        sim.write_blocking(&payload(i, 64), Duration::from_secs(10))
            .expect("write");
        sim.run_for(Duration::from_micros(20));
    }
    assert!(
        sim.run_until_quiescent(Duration::from_secs(60)),
        "not quiescent"
    );
    for r in 0..3 {
        assert_exact(&sim, r, N, 64);
    }
    assert!(sim.writer.all_acked());
    assert_eq!(
        sim.writer.history_len(),
        0,
        "volatile keep-all releases acked samples"
    );
    assert_eq!(sim.stats.oversize, 0);
    assert!(sim.stats.lost > 0 && sim.stats.duplicated > 0 && sim.stats.reordered > 0);
    let c = sim.writer.counters();
    assert!(c.retransmits > 0, "{c:?}");
    eprintln!(
        "loss {loss}: {:?} {c:?} {:?}",
        sim.stats,
        sim.readers[0].core.counters()
    );
}

#[test]
fn reliable_keep_all_10k_samples_10_percent_loss() {
    reliable_keep_all(0.10, 11);
}

#[test]
fn reliable_keep_all_10k_samples_30_percent_loss() {
    reliable_keep_all(0.30, 33);
}

#[test]
fn bursts_without_pacing_still_arrive_in_order() {
    // Everything written at one instant: the out-of-order window is exceeded and recovered.
    let mut sim = Sim::new(keep_all(5000), lossy(5, 0.2));
    sim.add_reader(true, false);
    for i in 1..=3000 {
        sim.write(&payload(i, 32)).unwrap();
    }
    assert!(sim.run_until_quiescent(Duration::from_secs(60)));
    assert_exact(&sim, 0, 3000, 32);
}

fn large_samples(size: usize, count: u64, loss: f64) {
    let mut sim = Sim::new(keep_all(100), lossy(17, loss));
    sim.add_reader(true, false);
    for i in 1..=count {
        sim.write_blocking(&payload(i, size), Duration::from_secs(10))
            .unwrap();
        sim.run_for(Duration::from_millis(1));
    }
    assert!(sim.run_until_quiescent(Duration::from_secs(120)));
    assert_exact(&sim, 0, count, size);
    let w = sim.writer.counters();
    let r = sim.readers[0].core.counters();
    assert!(w.data_frag_sent > 0);
    assert_eq!(sim.stats.oversize, 0);
    assert_eq!(sim.readers[0].core.buffered_bytes(), 0);
    eprintln!("{size} B: {:?} {w:?} {r:?}", sim.stats);
}

#[test]
fn fragmented_100k_samples_under_loss() {
    large_samples(100 * 1024, 20, 0.2);
}

#[test]
fn fragmented_16m_sample_under_loss() {
    large_samples(16 << 20, 2, 0.1);
}

#[test]
fn repairs_of_fragmented_samples_use_nack_frag() {
    let mut sim = Sim::new(keep_all(100), lossy(3, 0.1));
    sim.add_reader(true, false);
    sim.write(&payload(1, 1 << 20)).unwrap();
    assert!(sim.run_until_quiescent(Duration::from_secs(30)));
    assert_exact(&sim, 0, 1, 1 << 20);
    let r = sim.readers[0].core.counters();
    assert!(r.nack_frags_sent > 0, "{r:?}");
    // Only a fraction of the ~781 fragments should have been resent.
    let w = sim.writer.counters();
    assert!(w.data_frag_sent < 200, "{w:?}");
}

#[test]
fn keep_last_writer_sends_gaps_to_a_slow_reader() {
    let cfg = WriterConfig {
        history: HistoryKind::KeepLast(1),
        ..Sim::writer_config()
    };
    let mut sim = Sim::new(cfg, NetConfig::default());
    sim.add_reader(true, false);
    sim.write(&payload(1, 16)).unwrap();
    sim.run_for(Duration::from_millis(10));
    assert_eq!(sim.seqs(0), vec![1]);
    // The reader stops hearing anything for a while.
    sim.readers[0].connected = false;
    for i in 2..=50 {
        sim.write(&payload(i, 16)).unwrap();
    }
    sim.run_for(Duration::from_millis(50));
    sim.readers[0].connected = true;
    assert!(sim.run_until_quiescent(Duration::from_secs(10)));
    assert_eq!(sim.seqs(0), vec![1, 50]);
    assert!(sim.writer.counters().gaps_sent > 0 || sim.readers[0].core.counters().lost > 0);
    assert!(sim.writer.all_acked());
}

#[test]
fn keep_last_keeps_depth_per_instance() {
    let cfg = WriterConfig {
        history: HistoryKind::KeepLast(2),
        transient_local: true,
        ..Sim::writer_config()
    };
    let mut sim = Sim::new(cfg, NetConfig::default());
    for i in 1..=30u64 {
        let key = [(i % 3) as u8; 16];
        sim.write_keyed(&payload(i, 16), Some(key)).unwrap();
    }
    assert_eq!(sim.writer.history_len(), 6);
    sim.add_reader(true, true);
    assert!(sim.run_until_quiescent(Duration::from_secs(10)));
    assert_eq!(sim.seqs(0), vec![25, 26, 27, 28, 29, 30]);
}

#[test]
fn transient_local_late_joiner_gets_history() {
    let cfg = WriterConfig {
        transient_local: true,
        ..keep_all(1000)
    };
    let mut sim = Sim::new(cfg, lossy(8, 0.2));
    sim.add_reader(true, true);
    for i in 1..=100 {
        sim.write(&payload(i, 100)).unwrap();
        sim.run_for(Duration::from_micros(100));
    }
    assert!(sim.run_until_quiescent(Duration::from_secs(10)));
    assert_eq!(
        sim.writer.history_len(),
        100,
        "transient-local keeps history"
    );
    let late = sim.add_reader(true, true);
    let volatile = sim.add_reader(true, false);
    for i in 101..=120 {
        sim.write(&payload(i, 100)).unwrap();
    }
    assert!(sim.run_until_quiescent(Duration::from_secs(10)));
    assert_exact(&sim, 0, 120, 100);
    assert_exact(&sim, late, 120, 100);
    assert_eq!(sim.seqs(volatile), (101..=120).collect::<Vec<_>>());
}

#[test]
fn volatile_late_joiner_gets_only_new_samples() {
    let mut sim = Sim::new(keep_all(1000), lossy(9, 0.2));
    sim.add_reader(true, false);
    for i in 1..=50 {
        sim.write(&payload(i, 20)).unwrap();
    }
    // Joins while samples are still unacknowledged by reader 0.
    let late = sim.add_reader(true, true);
    for i in 51..=80 {
        sim.write(&payload(i, 20)).unwrap();
        sim.run_for(Duration::from_micros(200));
    }
    assert!(sim.run_until_quiescent(Duration::from_secs(10)));
    assert_exact(&sim, 0, 80, 20);
    assert_eq!(sim.seqs(late), (51..=80).collect::<Vec<_>>());
    assert_eq!(sim.readers[late].core.counters().lost, 0);
}

#[test]
fn best_effort_never_duplicates_or_reorders() {
    let cfg = WriterConfig {
        reliable: false,
        ..Sim::writer_config()
    };
    let mut sim = Sim::new(
        cfg,
        NetConfig {
            duplicate: 0.2,
            reorder: 0.3,
            ..lossy(4, 0.3)
        },
    );
    sim.add_reader(false, false);
    for i in 1..=2000 {
        sim.write(&payload(i, 40)).unwrap();
        sim.run_for(Duration::from_micros(50));
    }
    assert!(sim.run_until_quiescent(Duration::from_secs(10)));
    let seqs = sim.seqs(0);
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "strictly increasing");
    assert!(seqs.len() > 1000 && seqs.len() < 2000, "{}", seqs.len());
    // Every number skipped between the first and the last delivered one is counted lost.
    let span = (seqs[seqs.len() - 1] - seqs[0] + 1) as u64;
    assert_eq!(
        sim.readers[0].core.counters().lost,
        span - seqs.len() as u64
    );
    for s in &sim.readers[0].received {
        assert_eq!(s.payload, payload(s.seq as u64, 40));
    }
    assert_eq!(sim.writer.counters().heartbeats_sent, 0);
    assert_eq!(sim.readers[0].core.counters().acknacks_sent, 0);
    assert_eq!(sim.writer.history_len(), 0);
}

#[test]
fn reliable_writer_with_best_effort_reader_sends_once() {
    let mut sim = Sim::new(keep_all(100), lossy(6, 0.3));
    sim.add_reader(false, false);
    let rel = sim.add_reader(true, false);
    for i in 1..=300 {
        sim.write_blocking(&payload(i, 40), Duration::from_secs(5))
            .unwrap();
        sim.run_for(Duration::from_micros(100));
    }
    assert!(sim.run_until_quiescent(Duration::from_secs(10)));
    assert_exact(&sim, rel, 300, 40);
    let be = sim.seqs(0);
    assert!(be.windows(2).all(|w| w[0] < w[1]) && be.len() < 300);
}

#[test]
fn keep_all_writer_blocks_until_acknowledged() {
    let mut sim = Sim::new(keep_all(10), NetConfig::default());
    sim.add_reader(true, false);
    sim.readers[0].connected = false;
    for i in 1..=10 {
        sim.write(&payload(i, 8)).unwrap();
    }
    assert_eq!(sim.write(&payload(11, 8)), Err(WriteError::HistoryFull));
    assert!(!sim.writer.can_accept());
    // Blocking while the reader is silent times out.
    assert_eq!(
        sim.write_blocking(&payload(11, 8), Duration::from_millis(300)),
        Err(WriteError::HistoryFull)
    );
    sim.readers[0].connected = true;
    assert_eq!(
        sim.write_blocking(&payload(11, 8), Duration::from_secs(1)),
        Ok(11)
    );
    assert!(sim.run_until_quiescent(Duration::from_secs(5)));
    assert_exact(&sim, 0, 11, 8);
    assert!(sim.writer.all_acked() && sim.writer.can_accept());
}

#[test]
fn removing_the_only_slow_reader_frees_the_history() {
    let mut sim = Sim::new(keep_all(10), NetConfig::default());
    sim.add_reader(true, false);
    sim.readers[0].connected = false;
    for i in 1..=10 {
        sim.write(&payload(i, 8)).unwrap();
    }
    assert!(!sim.writer.can_accept());
    assert!(sim.writer.remove_reader(reader_guid(0)));
    assert!(sim.writer.can_accept());
    assert_eq!(sim.writer.history_len(), 0);
}

#[test]
fn tiny_reader_window_still_converges() {
    let mut sim = Sim::new(keep_all(2000), lossy(21, 0.25));
    let mut cfg = ReaderConfig::new(reader_guid(0));
    cfg.max_window = 8;
    sim.add_reader_with(cfg, true, false);
    for i in 1..=1000 {
        sim.write(&payload(i, 16)).unwrap();
    }
    assert!(sim.run_until_quiescent(Duration::from_secs(60)));
    assert_exact(&sim, 0, 1000, 16);
}

#[test]
fn many_seeds_mixed_sizes() {
    for seed in 1..=24u64 {
        let loss = 0.05 + (seed % 8) as f64 * 0.05;
        let net = NetConfig {
            duplicate: 0.1,
            reorder: 0.2,
            ..lossy(seed * 7919, loss)
        };
        let mut sim = Sim::new(keep_all(200), net);
        sim.add_reader(true, false);
        sim.add_reader(true, false);
        let size = |i: u64| if i % 50 == 0 { 5000 } else { 24 };
        for i in 1..=500u64 {
            sim.write_blocking(&payload(i, size(i)), Duration::from_secs(10))
                .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
            sim.run_for(Duration::from_micros(30));
        }
        assert!(
            sim.run_until_quiescent(Duration::from_secs(60)),
            "seed {seed}"
        );
        for r in 0..2 {
            let got = &sim.readers[r].received;
            assert_eq!(got.len(), 500, "seed {seed} reader {r}");
            for (k, s) in got.iter().enumerate() {
                assert_eq!(s.seq, k as i64 + 1, "seed {seed}");
                assert_eq!(s.payload, payload(s.seq as u64, size(s.seq as u64)));
            }
        }
        assert!(sim.writer.all_acked(), "seed {seed}");
        assert_eq!(sim.stats.oversize, 0);
    }
}

#[test]
fn flow_window_bounds_unacknowledged_samples_and_reopens_on_acks() {
    // An unlimited KEEP_ALL history, but at most 32 samples in flight.
    let mut sim = Sim::new(keep_all(usize::MAX), lossy(5, 0.1));
    sim.add_reader(true, false);
    sim.writer.set_flow_window(32);
    sim.readers[0].connected = false;
    for i in 1..=32 {
        sim.write(&payload(i, 100)).unwrap();
    }
    assert_eq!(sim.writer.unacked_samples(), 32);
    assert_eq!(sim.write(&payload(33, 100)), Err(WriteError::HistoryFull));
    assert!(sim.writer.counters().flow_blocked >= 1);
    sim.readers[0].connected = true;
    // With acknowledgments flowing, 5,000 samples pass through the 32-sample window.
    for i in 33..=5000 {
        assert_eq!(
            sim.write_blocking(&payload(i, 100), Duration::from_secs(5)),
            Ok(i as i64)
        );
        assert!(sim.writer.unacked_samples() <= 32);
    }
    assert!(sim.run_until_quiescent(Duration::from_secs(10)));
    assert_exact(&sim, 0, 5000, 100);
}

/// The DerechoDDS-style experiment in miniature: a 2000 Hz reliable KEEP_ALL flow of 128-byte
/// samples (8,000 of them) through a 20 Mbit/s link with a 50 ms queue that best-effort cross
/// traffic keeps full (`cross` × the link rate). `eager` configures the cores much as they
/// were before repairs were paced: no writer hold-off, a fixed 5 ms reader suppression,
/// repairs in 14 KiB datagrams and a 512-sample reader window.
fn bottleneck_run(seed: u64, cross: f64, eager: bool) -> (Sim, Duration) {
    use tessera_rtps::sim::Bottleneck;
    let mut link = Bottleneck::new(20.0, Duration::from_millis(50));
    link.cross_rate = link.rate * cross;
    let net = NetConfig {
        seed,
        latency: Duration::from_micros(100),
        bottleneck: Some(link),
        ..NetConfig::default()
    };
    let mut wc = keep_all(usize::MAX);
    let mut rc = ReaderConfig::new(reader_guid(0));
    if eager {
        wc.repair_holdoff_min = Duration::ZERO;
        wc.repair_holdoff_max = Duration::ZERO;
        wc.repair_message_size = wc.max_message_size;
        rc.nack_suppression_max = rc.nack_suppression;
        rc.max_window = 512;
    }
    let mut sim = Sim::new(wc, net);
    sim.add_reader_with(rc, true, false);
    sim.writer.set_flow_window(8192);
    assert!(sim.run_until_quiescent(Duration::from_secs(1)));
    let start = sim.now;
    for i in 1..=8000u64 {
        sim.write_blocking(&payload(i, 128), Duration::from_secs(10))
            .unwrap();
        sim.run_for(Duration::from_micros(500));
    }
    let end = start + Duration::from_secs(30);
    while !sim.writer.all_acked() && sim.step_until(end) {}
    let took = sim.now - start;
    let c = sim.writer.counters();
    eprintln!(
        "seed {seed} cross {cross} eager {eager}: {took:?}, received {}, retransmits {}, \
         held off {}, lost data {}, congested {} of {} datagrams",
        sim.readers[0].received.len(),
        c.retransmits,
        c.repairs_held_off,
        sim.stats.lost_data,
        sim.stats.congested,
        sim.stats.sent,
    );
    (sim, took)
}

#[test]
fn congested_bottleneck_does_not_cause_a_retransmit_storm() {
    // Before: every ACKNACK resent everything missing again while earlier copies were still
    // queued. With the link just saturated, half the repairs were redundant copies...
    let (sim, _) = bottleneck_run(1, 1.0, true);
    let storm = sim.writer.counters().retransmits;
    let lost = sim.stats.lost_data;
    assert!(2 * storm > 3 * lost, "{storm} retransmits for {lost} lost");
    // ...and with more cross traffic the copies, in large datagrams, collapsed the flow.
    let (sim, _) = bottleneck_run(2, 1.5, true);
    assert!(sim.readers[0].received.len() < 4000);
    assert!(sim.writer.counters().retransmits > 8000);
    // Now: a sample is resent again only when its previous copy had time to arrive, so
    // retransmissions stay close to what the bottleneck actually dropped, and every run
    // completes.
    for (seed, cross) in [(1u64, 1.0f64), (2, 1.5), (3, 2.0)] {
        let (sim, took) = bottleneck_run(seed, cross, false);
        let c = sim.writer.counters();
        assert_exact(&sim, 0, 8000, 128);
        assert!(
            sim.stats.lost_data > 100,
            "the link must actually drop data"
        );
        assert!(
            c.retransmits <= 2 * sim.stats.lost_data,
            "seed {seed}: {} retransmits for {} lost transmissions",
            c.retransmits,
            sim.stats.lost_data
        );
        assert!(c.repairs_held_off > 0);
        assert!(took < Duration::from_secs(20), "seed {seed}: {took:?}");
    }
}
