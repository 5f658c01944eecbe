//! Late joiners: a TRANSIENT_LOCAL reader of a TRANSIENT_LOCAL writer gets the writer's history
//! (its depth, per instance) and then the new samples; a VOLATILE reader gets only new samples.

use crate::harness::*;
use crate::per_transport;
use std::time::Duration;
use tessera::qos::{DataReaderQos, DataWriterQos, Durability, History};

fn transient_local_late_joiner_gets_the_history_depth(t: Transport) {
    let ps = t.participants(2);
    let w = writer::<Keyed>(
        &ps[0],
        "D_tl",
        DataWriterQos::default()
            .with_reliability(reliable())
            .with_durability(Durability::TransientLocal)
            .with_history(History::KeepLast(3)),
    );
    for seq in 0..10 {
        for id in [1, 2] {
            w.write(&Keyed { id, seq }).unwrap();
        }
    }
    let r = reader::<Keyed>(
        &ps[1],
        "D_tl",
        DataReaderQos::default()
            .with_reliability(reliable())
            .with_durability(Durability::TransientLocal)
            .with_history(History::KeepAll),
    );
    matched(&w, &r);
    let mut got = seqs(&take_n(&r, 6, 20));
    got.sort_unstable();
    assert_eq!(got, [(1, 7), (1, 8), (1, 9), (2, 7), (2, 8), (2, 9)]);
    w.write(&Keyed { id: 1, seq: 10 }).unwrap();
    assert_eq!(seqs(&take_n(&r, 1, 10)), [(1, 10)]);
    w.wait_for_acknowledgments(Duration::from_secs(10)).unwrap();
    settle(t);
    assert!(r.take(usize::MAX).unwrap().is_empty());
}

fn volatile_late_joiner_gets_only_new_samples(t: Transport) {
    let ps = t.participants(2);
    for (i, durability) in [Durability::Volatile, Durability::TransientLocal]
        .into_iter()
        .enumerate()
    {
        let topic = format!("D_volatile_{i}");
        let w = writer::<Keyed>(
            &ps[0],
            &topic,
            DataWriterQos::default()
                .with_reliability(reliable())
                .with_durability(durability)
                .with_history(History::KeepAll),
        );
        for seq in 0..5 {
            w.write(&Keyed { id: 1, seq }).unwrap();
        }
        let r = reader::<Keyed>(&ps[1], &topic, keep_all_reader());
        matched(&w, &r);
        for seq in 5..10 {
            w.write(&Keyed { id: 1, seq }).unwrap();
        }
        w.wait_for_acknowledgments(Duration::from_secs(10)).unwrap();
        let got = seqs(&take_n(&r, 5, 10));
        settle(t);
        let more = seqs(&r.take(usize::MAX).unwrap());
        assert_eq!(
            (got, more),
            ((5..10).map(|s| (1, s)).collect::<Vec<_>>(), vec![]),
            "writer {durability:?}"
        );
    }
}

per_transport!(all:
    transient_local_late_joiner_gets_the_history_depth,
    volatile_late_joiner_gets_only_new_samples,
);
