//! Reliability × history: reliable delivers everything in order exactly once; best effort an
//! in-order subset without stalling; KEEP_LAST n keeps the last n per instance; KEEP_ALL with
//! resource limits holds no more than the limits and, reliable, still loses nothing.

use crate::harness::*;
use crate::per_transport;
use std::time::Duration;
use tessera::qos::{DataReaderQos, DataWriterQos, History, Reliability, ResourceLimits};

fn reliable_delivers_all_in_order_exactly_once(t: Transport) {
    let d = t.domain(2);
    let ps = &d.participants;
    let (wq, rq) = (keep_all_writer(), keep_all_reader());
    let w = writer::<Keyed>(&ps[0], "R_all", wq);
    let r = reader::<Keyed>(&ps[1], "R_all", rq);
    matched(&w, &r);
    let sent: Vec<(u32, u32)> = (0..300).map(|i| (i % 3, i)).collect();
    for &(id, seq) in &sent {
        w.write(&Keyed { id, seq }).unwrap();
    }
    let got = seqs(&take_n(&r, sent.len(), 30));
    // Presentation is per instance (the default access scope): order is promised per instance,
    // and `take` returns the samples grouped by instance.
    for id in 0..3 {
        let of = |v: &[(u32, u32)]| v.iter().filter(|s| s.0 == id).copied().collect::<Vec<_>>();
        assert_eq!(of(&got), of(&sent), "instance {id}");
    }
    assert_eq!(got.len(), sent.len());
    w.wait_for_acknowledgments(Duration::from_secs(10)).unwrap();
    settle(t);
    assert!(
        r.take(usize::MAX).unwrap().is_empty(),
        "a sample came twice"
    );
    assert_lossy_network_lost(&d);
}

fn best_effort_gives_an_in_order_subset_without_stalling(t: Transport) {
    let ps = t.participants(2);
    let be = Reliability::best_effort();
    let w = writer::<Keyed>(
        &ps[0],
        "R_be",
        DataWriterQos::default().with_reliability(be),
    );
    let r = reader::<Keyed>(
        &ps[1],
        "R_be",
        DataReaderQos::default().with_history(History::KeepAll),
    );
    matched(&w, &r);
    let mut got = Vec::new();
    // Keep writing until a sample past the first 200 arrives: losses must not stall the stream.
    let mut seq = 0;
    wait_until(20, "a best-effort sample past 200", || {
        for _ in 0..10 {
            w.write(&Keyed { id: 1, seq }).unwrap();
            seq += 1;
        }
        got.extend(
            seqs(&r.take(usize::MAX).unwrap())
                .into_iter()
                .map(|(_, s)| s),
        );
        std::thread::sleep(Duration::from_millis(1));
        got.last().is_some_and(|&s| s >= 200)
    });
    settle(t);
    got.extend(
        seqs(&r.take(usize::MAX).unwrap())
            .into_iter()
            .map(|(_, s)| s),
    );
    assert!(
        got.windows(2).all(|p| p[0] < p[1]),
        "best effort delivered out of order or twice: {got:?}"
    );
    // Every number the stream skipped is counted lost, from the first sample taken on.
    let span = got[got.len() - 1] - got[0] + 1;
    assert_eq!(
        r.sample_lost_status().total_count,
        (span as usize - got.len()) as i32,
        "took {} of {span}",
        got.len()
    );
}

fn default_reliable_writer_serves_default_best_effort_reader(t: Transport) {
    let ps = t.participants(2);
    let w = writer::<Keyed>(&ps[0], "R_defaults", DataWriterQos::default());
    let r = reader::<Keyed>(&ps[1], "R_defaults", DataReaderQos::default());
    matched(&w, &r);
    assert_eq!(w.offered_incompatible_qos_status().total_count, 0);
    assert_eq!(r.requested_incompatible_qos_status().total_count, 0);
    // Reader KEEP_LAST 1: per instance the newest sample; a fresh one must arrive every time.
    for round in 0..5u32 {
        let mut last = None;
        wait_until(10, "a sample of this round", || {
            w.write(&Keyed {
                id: round,
                seq: round,
            })
            .unwrap();
            last = seqs(&r.take(usize::MAX).unwrap()).last().copied().or(last);
            last == Some((round, round))
        });
    }
}

fn keep_last_keeps_the_newest_per_instance(t: Transport) {
    let ps = t.participants(2);
    let (wq, rq) = (keep_all_writer(), keep_all_reader());
    let w = writer::<Keyed>(&ps[0], "R_last", wq);
    let r = reader::<Keyed>(&ps[1], "R_last", rq.with_history(History::KeepLast(3)));
    matched(&w, &r);
    for seq in 0..10 {
        for id in [1, 2] {
            w.write(&Keyed { id, seq }).unwrap();
        }
    }
    w.wait_for_acknowledgments(Duration::from_secs(20)).unwrap();
    // Acknowledged means in the reader's cache: exactly the last three of each instance.
    let mut got = seqs(&r.read(usize::MAX).unwrap());
    got.sort_unstable();
    assert_eq!(got, [(1, 7), (1, 8), (1, 9), (2, 7), (2, 8), (2, 9)]);
}

fn keep_all_with_resource_limits_holds_the_limit_and_loses_nothing(t: Transport) {
    const LIMIT: u32 = 5;
    let ps = t.participants(2);
    let (wq, rq) = (keep_all_writer(), keep_all_reader());
    let w = writer::<Keyed>(&ps[0], "R_limits", wq);
    let r = reader::<Keyed>(
        &ps[1],
        "R_limits",
        rq.with_resource_limits(ResourceLimits {
            max_samples: Some(LIMIT),
            max_instances: None,
            max_samples_per_instance: None,
        }),
    );
    matched(&w, &r);
    for seq in 0..20 {
        w.write(&Keyed { id: 1, seq }).unwrap();
    }
    wait_until(10, "the reader to fill up", || {
        r.read(usize::MAX).unwrap().len() == LIMIT as usize
    });
    settle(t);
    assert_eq!(
        r.read(usize::MAX).unwrap().len(),
        LIMIT as usize,
        "past max_samples"
    );
    // The refused samples are not acknowledged.
    assert!(
        w.wait_for_acknowledgments(Duration::from_millis(200))
            .is_err(),
        "the writer saw refused samples acknowledged"
    );
    // Taking makes room; the reliable writer repairs what did not fit.
    let mut got = Vec::new();
    let waited = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        wait_until(20, "all 20 samples", || {
            let batch = r.take(usize::MAX).unwrap();
            assert!(
                batch.len() <= LIMIT as usize,
                "held {} samples",
                batch.len()
            );
            got.extend(seqs(&batch));
            got.len() >= 20
        })
    }));
    assert!(
        waited.is_ok(),
        "got only {got:?}; rejected {:?}",
        r.sample_rejected_status()
    );
    assert_eq!(got, (0..20).map(|s| (1, s)).collect::<Vec<_>>());
    w.wait_for_acknowledgments(Duration::from_secs(10)).unwrap();
    // Each refused sample counts once, however often the writer offered it again.
    let rejected = r.sample_rejected_status().total_count;
    assert!((1..=15).contains(&rejected), "rejected {rejected}");
}

per_transport!(all:
    reliable_delivers_all_in_order_exactly_once,
    best_effort_gives_an_in_order_subset_without_stalling,
    default_reliable_writer_serves_default_best_effort_reader,
    keep_last_keeps_the_newest_per_instance,
    keep_all_with_resource_limits_holds_the_limit_and_loses_nothing,
);
