//! First transmissions to a multicast locator shared by several readers: one datagram per
//! sample for the whole group, repairs and handshakes unicast, every reader gets every sample
//! it is meant to get exactly once and in order.

use std::time::Duration;

use tessera_rtps::reader::ReaderConfig;
use tessera_rtps::sim::{reader_guid, NetConfig, Sim};
use tessera_rtps::types::{Locator, Locators, SequenceNumber};
use tessera_rtps::writer::{HistoryKind, MulticastPolicy, WriterConfig};

fn group() -> Locators {
    std::iter::once(Locator::udpv4(
        std::net::Ipv4Addr::new(239, 255, 0, 1),
        7401,
    ))
    .collect()
}

fn payload(i: u64) -> Vec<u8> {
    let mut v = vec![0u8, 1, 0, 0];
    v.extend_from_slice(&i.to_le_bytes());
    v
}

fn net(loss: f64, seed: u64) -> NetConfig {
    NetConfig {
        seed,
        loss,
        reorder: if loss > 0.0 { 0.05 } else { 0.0 },
        ..NetConfig::default()
    }
}

fn keep_all() -> WriterConfig {
    WriterConfig {
        history: HistoryKind::KeepAll,
        max_samples: 512,
        ..Sim::writer_config()
    }
}

/// Adds a reader; `multicast`: it listens on the shared group locator.
fn add(sim: &mut Sim, reliable: bool, multicast: bool) -> usize {
    let i = sim.readers.len();
    let m = if multicast { group() } else { Locators::new() };
    sim.add_reader_multicast(ReaderConfig::new(reader_guid(i)), reliable, false, m)
}

fn write_n(sim: &mut Sim, from: u64, to: u64) {
    for i in from..=to {
        sim.write_blocking(&payload(i), Duration::from_secs(10))
            .expect("write");
        sim.run_for(Duration::from_micros(300));
    }
}

/// Reader `r` got exactly the numbers `want`, in order, with the right payloads.
fn assert_got(sim: &Sim, r: usize, want: impl Iterator<Item = SequenceNumber>) {
    let want: Vec<SequenceNumber> = want.collect();
    assert_eq!(
        sim.seqs(r),
        want,
        "reader {r}: {:?}",
        sim.readers[r].core.counters()
    );
    for s in &sim.readers[r].received {
        assert_eq!(s.payload, payload(s.seq as u64));
    }
}

/// First transmissions (DATA submessages that were not repairs).
fn first_sends(sim: &Sim) -> u64 {
    let c = sim.writer.counters();
    c.data_sent - c.retransmits
}

fn four_reliable(loss: f64, seed: u64) -> Sim {
    const N: u64 = 300;
    let mut sim = Sim::new(keep_all(), net(loss, seed));
    for _ in 0..4 {
        add(&mut sim, true, true);
    }
    assert_eq!(sim.writer.multicast_groups(), 1);
    sim.run_for(Duration::from_millis(100));
    write_n(&mut sim, 1, N);
    assert!(sim.run_until_quiescent(Duration::from_secs(60)));
    for r in 0..4 {
        assert_got(&sim, r, 1..=N as i64);
    }
    assert!(sim.writer.all_acked());
    assert_eq!(first_sends(&sim), N, "each sample multicast once");
    assert_eq!(sim.stats.multicast_data, N, "repairs are unicast");
    sim
}

#[test]
fn four_reliable_readers_share_one_datagram_per_sample() {
    let sim = four_reliable(0.0, 1);
    assert_eq!(sim.stats.data_datagrams, 300, "{:?}", sim.stats);
    assert_eq!(sim.writer.counters().retransmits, 0);
}

#[test]
fn four_reliable_readers_with_loss_are_repaired_by_unicast() {
    let sim = four_reliable(0.1, 7);
    let c = sim.writer.counters();
    assert!(c.retransmits > 0, "{c:?}");
    // Repairs went one reader at a time, never to the group.
    assert!(sim.stats.data_datagrams > sim.stats.multicast_data);
    eprintln!("{:?} {c:?}", sim.stats);
}

#[test]
fn readers_without_the_locator_get_unicast() {
    const N: u64 = 200;
    let mut sim = Sim::new(keep_all(), net(0.1, 3));
    for k in 0..5 {
        add(&mut sim, true, k % 2 == 0);
    }
    sim.run_for(Duration::from_millis(100));
    write_n(&mut sim, 1, N);
    assert!(sim.run_until_quiescent(Duration::from_secs(60)));
    for r in 0..5 {
        assert_got(&sim, r, 1..=N as i64);
    }
    // Three readers share one multicast copy; two get their own.
    assert_eq!(first_sends(&sim), 3 * N);
    assert_eq!(sim.stats.multicast_data, N);
}

#[test]
fn a_lone_reader_on_a_locator_gets_unicast() {
    let mut sim = Sim::new(keep_all(), net(0.0, 1));
    add(&mut sim, true, true);
    add(&mut sim, true, false);
    assert_eq!(sim.writer.multicast_groups(), 0);
    sim.run_for(Duration::from_millis(100));
    write_n(&mut sim, 1, 20);
    assert!(sim.run_until_quiescent(Duration::from_secs(10)));
    assert_got(&sim, 0, 1..=20);
    assert_eq!(sim.stats.multicast_data, 0);
}

#[test]
fn policy_off_and_threshold() {
    for (policy, groups) in [
        (MulticastPolicy::Off, 0),
        (MulticastPolicy::Shared { min_readers: 5 }, 0),
        (MulticastPolicy::Shared { min_readers: 4 }, 1),
    ] {
        let cfg = WriterConfig {
            multicast: policy,
            ..keep_all()
        };
        let mut sim = Sim::new(cfg, net(0.0, 1));
        for _ in 0..4 {
            add(&mut sim, true, true);
        }
        assert_eq!(sim.writer.multicast_groups(), groups, "{policy:?}");
        sim.run_for(Duration::from_millis(100));
        write_n(&mut sim, 1, 10);
        assert!(sim.run_until_quiescent(Duration::from_secs(10)));
        for r in 0..4 {
            assert_got(&sim, r, 1..=10);
        }
        let per_sample = if groups == 1 { 1 } else { 4 };
        assert_eq!(first_sends(&sim), 10 * per_sample, "{policy:?}");
    }
    // The policy can change while matched.
    let mut sim = Sim::new(keep_all(), net(0.0, 1));
    for _ in 0..3 {
        add(&mut sim, true, true);
    }
    sim.run_for(Duration::from_millis(100));
    write_n(&mut sim, 1, 10);
    sim.writer.set_multicast_policy(MulticastPolicy::Off);
    write_n(&mut sim, 11, 20);
    sim.writer
        .set_multicast_policy(MulticastPolicy::Shared { min_readers: 2 });
    write_n(&mut sim, 21, 30);
    assert!(sim.run_until_quiescent(Duration::from_secs(10)));
    for r in 0..3 {
        assert_got(&sim, r, 1..=30);
    }
    assert_eq!(first_sends(&sim), 10 + 30 + 10);
}

#[test]
fn late_joiner_in_the_group_gets_its_stream_once() {
    for seed in 1..=5 {
        let mut sim = Sim::new(keep_all(), net(0.1, seed));
        for _ in 0..3 {
            add(&mut sim, true, true);
        }
        sim.run_for(Duration::from_millis(100));
        write_n(&mut sim, 1, 100);
        // Joins while the group is busy: it sees multicast data during its handshake.
        let late = add(&mut sim, true, true);
        write_n(&mut sim, 101, 200);
        assert!(sim.run_until_quiescent(Duration::from_secs(60)));
        for r in 0..3 {
            assert_got(&sim, r, 1..=200);
        }
        assert_got(&sim, late, 101..=200);
        assert_eq!(sim.readers[late].core.counters().lost, 0, "seed {seed}");
        assert!(sim.writer.all_acked());
    }
}

#[test]
fn transient_local_late_joiner_catches_up_by_unicast() {
    let cfg = WriterConfig {
        transient_local: true,
        ..keep_all()
    };
    let mut sim = Sim::new(cfg, net(0.1, 9));
    for _ in 0..3 {
        add(&mut sim, true, true);
    }
    sim.run_for(Duration::from_millis(100));
    write_n(&mut sim, 1, 100);
    let late = sim.readers.len();
    sim.add_reader_multicast(ReaderConfig::new(reader_guid(late)), true, true, group());
    write_n(&mut sim, 101, 200);
    assert!(sim.run_until_quiescent(Duration::from_secs(60)));
    for r in 0..=late {
        assert_got(&sim, r, 1..=200);
    }
    // Samples 101..=200 went to the group once; the history went to the late joiner alone.
    assert_eq!(sim.stats.multicast_data, 200, "{:?}", sim.stats);
    assert!(first_sends(&sim) >= 300, "{:?}", sim.writer.counters());
}

#[test]
fn keep_last_group_never_duplicates_or_reorders() {
    let cfg = WriterConfig {
        history: HistoryKind::KeepLast(1),
        ..Sim::writer_config()
    };
    let mut sim = Sim::new(cfg, net(0.1, 5));
    for _ in 0..4 {
        add(&mut sim, true, true);
    }
    sim.run_for(Duration::from_millis(100));
    let mut last_of = [0i64; 3];
    for i in 1..=300u64 {
        let key = (i % 3) as u8;
        let seq = sim.write_keyed(&payload(i), Some([key; 16])).unwrap();
        last_of[key as usize] = seq;
        if i % 7 == 0 {
            sim.run_for(Duration::from_micros(300));
        }
    }
    assert!(sim.run_until_quiescent(Duration::from_secs(60)));
    for r in 0..4 {
        let got = sim.seqs(r);
        assert!(got.windows(2).all(|w| w[0] < w[1]), "reader {r}: {got:?}");
        for &l in &last_of {
            assert!(got.contains(&l), "reader {r} misses the last sample {l}");
        }
        for s in &sim.readers[r].received {
            assert_eq!(s.payload, payload(s.seq as u64));
        }
    }
    assert!(sim.writer.all_acked());
}

#[test]
fn best_effort_readers_in_the_group() {
    const N: u64 = 200;
    for loss in [0.0, 0.1] {
        let mut sim = Sim::new(keep_all(), net(loss, 4));
        add(&mut sim, true, true);
        add(&mut sim, false, true);
        add(&mut sim, true, true);
        add(&mut sim, false, true);
        sim.run_for(Duration::from_millis(100));
        write_n(&mut sim, 1, N);
        assert!(sim.run_until_quiescent(Duration::from_secs(60)));
        for r in [0, 2] {
            assert_got(&sim, r, 1..=N as i64);
        }
        for r in [1, 3] {
            let got = sim.seqs(r);
            assert!(got.windows(2).all(|w| w[0] < w[1]), "{got:?}");
            if loss == 0.0 {
                assert_eq!(got.len() as u64, N);
            } else {
                assert!(got.len() as u64 > N / 2, "{}", got.len());
            }
        }
        assert_eq!(first_sends(&sim), N, "loss {loss}");
        assert_eq!(sim.stats.multicast_data, N);
    }
}

#[test]
fn group_dissolves_and_forms_again_as_readers_come_and_go() {
    let mut sim = Sim::new(keep_all(), net(0.1, 2));
    add(&mut sim, true, true);
    add(&mut sim, true, true);
    sim.run_for(Duration::from_millis(100));
    write_n(&mut sim, 1, 50);
    // Reader 1 leaves: reader 0 alone is served by unicast, from where the group was.
    assert!(sim.writer.remove_reader(reader_guid(1)));
    sim.readers[1].connected = false;
    assert_eq!(sim.writer.multicast_groups(), 0);
    write_n(&mut sim, 51, 100);
    // A new reader on the locator: the group forms again.
    let late = add(&mut sim, true, true);
    assert_eq!(sim.writer.multicast_groups(), 1);
    write_n(&mut sim, 101, 150);
    assert!(sim.run_until_quiescent(Duration::from_secs(60)));
    assert_got(&sim, 0, 1..=150);
    assert_got(&sim, late, 101..=150);
    assert!(sim.writer.all_acked());
}

#[test]
fn reader_that_knows_the_writer_before_the_writer_knows_it() {
    // Discovery is not symmetric: the reader may match the writer, and hear the group's data
    // and heartbeats, well before the writer matches the reader.
    let mut sim = Sim::new(keep_all(), net(0.1, 8));
    for _ in 0..3 {
        add(&mut sim, true, true);
    }
    sim.run_for(Duration::from_millis(100));
    write_n(&mut sim, 1, 50);
    let early = add(&mut sim, true, true);
    let guid = reader_guid(early);
    assert!(sim.writer.remove_reader(guid));
    write_n(&mut sim, 51, 100);
    let unicast = std::iter::once(Locator::udpv4(std::net::Ipv4Addr::LOCALHOST, 9000)).collect();
    let now = sim.now;
    sim.writer
        .add_reader_with_locators(guid, unicast, group(), true, false, now);
    write_n(&mut sim, 101, 150);
    assert!(sim.run_until_quiescent(Duration::from_secs(60)));
    for r in 0..3 {
        assert_got(&sim, r, 1..=150);
    }
    // It may have seen some samples from before the writer matched it, but never one twice,
    // never out of order, and nothing it was meant to get is missing.
    let got = sim.seqs(early);
    assert!(got.windows(2).all(|w| w[0] < w[1]), "{got:?}");
    assert!((101..=150).all(|s| got.contains(&s)), "{got:?}");
    for s in &sim.readers[early].received {
        assert_eq!(s.payload, payload(s.seq as u64));
    }
}

fn big(i: u64, len: usize) -> Vec<u8> {
    let mut v = payload(i);
    v.extend((0..len - v.len()).map(|k| (k as u64 * 7 + i) as u8));
    v
}

#[test]
fn fragmented_samples_to_the_group_over_many_seeds() {
    const N: u64 = 40;
    const LEN: usize = 20_000;
    for seed in 1..=6 {
        let mut n = net(0.1, seed);
        n.duplicate = 0.05;
        let mut sim = Sim::new(keep_all(), n);
        for k in 0..5 {
            add(&mut sim, k != 3, k != 4);
        }
        sim.run_for(Duration::from_millis(100));
        for i in 1..=N {
            sim.write_blocking(&big(i, LEN), Duration::from_secs(10))
                .unwrap();
            sim.run_for(Duration::from_micros(500));
            if i == N / 2 {
                let late = sim.readers.len();
                sim.add_reader_multicast(ReaderConfig::new(reader_guid(late)), true, true, group());
            }
        }
        assert!(
            sim.run_until_quiescent(Duration::from_secs(60)),
            "seed {seed}"
        );
        for r in [0, 1, 2, 4] {
            let got = &sim.readers[r].received;
            assert_eq!(got.len() as u64, N, "seed {seed} reader {r}");
            for (k, s) in got.iter().enumerate() {
                assert_eq!(s.seq, k as i64 + 1);
                assert_eq!(s.payload, big(s.seq as u64, LEN));
            }
        }
        // Best effort in the group: in order, intact, no duplicates.
        let be = &sim.readers[3].received;
        assert!(be.windows(2).all(|w| w[0].seq < w[1].seq));
        assert!(be.iter().all(|s| s.payload == big(s.seq as u64, LEN)));
        // The late joiner (volatile) gets everything written after it matched.
        let late = sim.seqs(5);
        assert_eq!(
            late,
            ((N / 2 + 1) as i64..=N as i64).collect::<Vec<_>>(),
            "seed {seed}"
        );
        assert_eq!(sim.stats.oversize, 0);
        assert!(sim.writer.counters().data_frag_sent > 0);
    }
}
