//! The writer's datagram size (`WriterConfig::max_message_size`): samples that fit go whole in
//! one DATA, larger ones as DATA_FRAGs filling datagrams of at most that size, repairs included.

use std::sync::Arc;
use std::time::Duration;

use tessera_rtps::sim::{epoch, reader_guid, NetConfig, Sim};
use tessera_rtps::types::Locators;
use tessera_rtps::wire::{AckNack, SequenceNumberSet};
use tessera_rtps::writer::{HistoryKind, OutSubmessage, Transmit, WriterConfig, WriterCore};

fn payload(i: u64, len: usize) -> Vec<u8> {
    let mut v = vec![0u8, 1, 0, 0];
    v.extend((0..len.saturating_sub(4)).map(|k| (i as usize * 13 + k * 5) as u8));
    v.truncate(len);
    v
}

/// Writes samples of `sizes` through a network carrying at most `max` bytes per datagram, with
/// `loss`; every sample must arrive exactly once, in order, and no datagram may exceed `max`.
fn run(max: usize, sizes: &[usize], loss: f64, seed: u64) -> Sim {
    let cfg = WriterConfig {
        history: HistoryKind::KeepAll,
        max_samples: 64,
        max_message_size: max,
        ..Sim::writer_config()
    };
    let net = NetConfig {
        seed,
        loss,
        reorder: if loss > 0.0 { 0.05 } else { 0.0 },
        mtu: max,
        ..NetConfig::default()
    };
    let mut sim = Sim::new(cfg, net);
    sim.add_reader(true, false);
    sim.run_for(Duration::from_millis(50));
    for (i, &len) in sizes.iter().enumerate() {
        let i = i as u64 + 1;
        sim.write_blocking(&payload(i, len), Duration::from_secs(10))
            .expect("write");
        sim.run_for(Duration::from_micros(200));
    }
    assert!(sim.run_until_quiescent(Duration::from_secs(120)));
    let got = &sim.readers[0].received;
    assert_eq!(
        got.len(),
        sizes.len(),
        "{:?}",
        sim.readers[0].core.counters()
    );
    for (k, s) in got.iter().enumerate() {
        assert_eq!(s.seq, k as i64 + 1);
        assert_eq!(
            s.payload,
            payload(s.seq as u64, sizes[k]),
            "sample {}",
            s.seq
        );
    }
    assert_eq!(sim.stats.oversize, 0, "a datagram exceeded {max}");
    assert!(sim.stats.largest <= max, "{}", sim.stats.largest);
    sim
}

#[test]
fn ethernet_sized_datagrams() {
    let sizes: Vec<usize> = [100, 1300, 1380, 1400, 5000, 70_000]
        .iter()
        .cycle()
        .take(120)
        .copied()
        .collect();
    let sim = run(1472, &sizes, 0.1, 3);
    let w = sim.writer.counters();
    assert!(w.retransmits > 0 && w.data_frag_sent > 0, "{w:?}");
    assert!(
        sim.stats.largest > 1400,
        "datagrams are filled: {}",
        sim.stats.largest
    );
    // Lossless: the 100 and 1300 B samples go whole, the others in fragments.
    let sim = run(1472, &sizes, 0.0, 3);
    assert_eq!(sim.writer.counters().data_sent, 40);
}

#[test]
fn loopback_sized_datagrams() {
    let sizes: Vec<usize> = [100, 16_384, 60_000, 64_000, 65_536, 1 << 20]
        .iter()
        .cycle()
        .take(60)
        .copied()
        .collect();
    let sim = run(65_000, &sizes, 0.1, 4);
    assert!(sim.writer.counters().retransmits > 0);
    // Lossless: samples up to 64,000 B go whole (one DATA each), the larger ones in DATA_FRAGs
    // of about 64 KB (one per datagram).
    let sim = run(65_000, &sizes, 0.0, 5);
    let w = sim.writer.counters();
    assert_eq!(w.data_sent, 40, "{w:?}");
    let frags_65k = 65_536usize.div_ceil(sim.writer.fragment_size());
    let per_dgram = (65_000 - 200) / sim.writer.fragment_size();
    let frag_1m = (1usize << 20).div_ceil(sim.writer.fragment_size());
    let want = 10 * (frags_65k.div_ceil(per_dgram) + frag_1m.div_ceil(per_dgram));
    assert!(w.data_frag_sent as usize <= want, "{w:?} > {want}");
    assert!(sim.stats.largest > 60_000);
}

/// Direct writer: the size follows `set_max_message_size` for samples written after the call;
/// a sample keeps its form (and its repairs their fragment size) for its lifetime.
#[test]
fn set_max_message_size_affects_later_samples_only() {
    let now = epoch();
    let mut cfg = Sim::writer_config();
    cfg.history = HistoryKind::KeepAll;
    let mut w = WriterCore::new(cfg);
    assert_eq!(w.max_message_size(), 14_720);
    let r = reader_guid(0);
    w.add_reader(r, Locators::new(), true, false, now);
    let wid = w.guid().entity_id;
    let ack = |base: i64, missing: &[i64], count: i32| {
        let mut s = SequenceNumberSet::empty(base);
        for &m in missing {
            s.insert(m);
        }
        AckNack {
            reader_id: r.entity_id,
            writer_id: wid,
            reader_sn_state: s,
            count,
            final_flag: false,
        }
    };
    let sync = ack(1, &[], 1);
    w.on_acknack(r.prefix, &sync, now);
    let mut t = Transmit::new();
    let mut sent = |w: &mut WriterCore| {
        let mut out = Vec::new();
        while w.poll_transmit_into(now, &mut t) {
            assert!(t.wire_len() <= w.max_message_size(), "{}", t.wire_len());
            for s in &t.submessages {
                match s {
                    OutSubmessage::Data(d) => out.push((d.writer_sn, 0)),
                    OutSubmessage::DataFrag(d) => out.push((d.writer_sn, d.fragment_size)),
                    _ => {}
                }
            }
        }
        out
    };
    let big = Arc::new(payload(1, 10_000));
    w.write(big.clone(), None, 0, false, None, now).unwrap();
    assert_eq!(sent(&mut w), vec![(1, 0)], "10 kB fits a 14,720 B datagram");
    w.set_max_message_size(1472);
    assert_eq!(w.max_message_size(), 1472);
    w.write(big.clone(), None, 0, false, None, now).unwrap();
    let s2 = sent(&mut w);
    assert!(
        s2.len() >= 8 && s2.iter().all(|&(sn, fs)| sn == 2 && fs > 0),
        "{s2:?}"
    );
    let fs2 = s2[0].1;
    // Back to large datagrams: sample 2 is repaired with its own fragment size; sample 1,
    // whole at first, too large for a repair datagram, is repaired as fragments of one size.
    w.set_max_message_size(65_000);
    w.write(Arc::new(payload(3, 60_000)), None, 0, false, None, now)
        .unwrap();
    assert_eq!(sent(&mut w), vec![(3, 0)]);
    let nack = ack(1, &[1, 2], 2);
    w.on_acknack(r.prefix, &nack, now);
    let rep = sent(&mut w);
    let rep1: Vec<u16> = rep.iter().filter(|x| x.0 == 1).map(|x| x.1).collect();
    assert!(
        !rep1.is_empty() && rep1.iter().all(|&fs| fs > 0 && fs == rep1[0]),
        "{rep:?}"
    );
    assert!(
        rep.iter().filter(|x| x.0 == 2).all(|x| x.1 == fs2),
        "{rep:?}"
    );
    // Out of range sizes are clamped.
    w.set_max_message_size(1 << 20);
    assert_eq!(w.max_message_size(), 65_507);
    w.set_max_message_size(0);
    assert!(w.max_message_size() >= 512);
}
