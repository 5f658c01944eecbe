//! Listeners and wait sets: DATA_AVAILABLE, SUBSCRIPTION_MATCHED and PUBLICATION_MATCHED reach
//! both, with the statuses the DDS specification defines.

use crate::harness::*;
use crate::per_transport;
use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tessera::qos::{DataReaderQos, DataWriterQos, History};
use tessera::status::{PublicationMatchedStatus, SubscriptionMatchedStatus};
use tessera::{DataReader, DataReaderListener, DataWriter, DataWriterListener, StateMasks};
use tessera::{StatusMask, WaitSet};

#[derive(Default)]
struct Heard {
    data: AtomicUsize,
    taken: AtomicUsize,
    /// The last `current_count` a matched callback reported.
    current: AtomicI32,
    matched_calls: AtomicUsize,
}

impl DataReaderListener<Keyed> for Heard {
    fn on_data_available(&self, r: &DataReader<Keyed>) {
        self.data.fetch_add(1, Ordering::SeqCst);
        let n = r
            .take(usize::MAX)
            .unwrap()
            .iter()
            .filter(|s| s.data.is_some())
            .count();
        self.taken.fetch_add(n, Ordering::SeqCst);
    }
    fn on_subscription_matched(&self, _: &DataReader<Keyed>, s: SubscriptionMatchedStatus) {
        self.current.store(s.current_count, Ordering::SeqCst);
        self.matched_calls.fetch_add(1, Ordering::SeqCst);
    }
}

impl DataWriterListener<Keyed> for Heard {
    fn on_publication_matched(&self, _: &DataWriter<Keyed>, s: PublicationMatchedStatus) {
        self.current.store(s.current_count, Ordering::SeqCst);
        self.matched_calls.fetch_add(1, Ordering::SeqCst);
    }
}

fn reliable_reader_qos() -> DataReaderQos {
    keep_all_reader()
}

fn listeners_hear_matches_and_data(t: Transport) {
    let ps = t.participants(2);
    // Each listener is set before its remote counterpart exists, so no callback can be missed.
    let r = reader::<Keyed>(&ps[1], "LS_listeners", reliable_reader_qos());
    let rl = Arc::new(Heard::default());
    r.set_listener(Some(rl.clone()));
    let w = writer::<Keyed>(&ps[0], "LS_listeners_back", DataWriterQos::default());
    let wl = Arc::new(Heard::default());
    w.set_listener(Some(wl.clone()));
    let w2 = writer::<Keyed>(
        &ps[0],
        "LS_listeners",
        DataWriterQos::default().with_history(History::KeepAll),
    );
    let r2 = reader::<Keyed>(&ps[1], "LS_listeners_back", DataReaderQos::default());
    wait_until(10, "SUBSCRIPTION_MATCHED", || {
        rl.current.load(Ordering::SeqCst) == 1
    });
    wait_until(10, "PUBLICATION_MATCHED", || {
        wl.current.load(Ordering::SeqCst) == 1
    });
    for seq in 0..20 {
        w2.write(&Keyed { id: 1, seq }).unwrap();
    }
    wait_until(20, "DATA_AVAILABLE for every sample", || {
        rl.taken.load(Ordering::SeqCst) == 20
    });
    assert!(rl.data.load(Ordering::SeqCst) >= 1);
    // Unmatching is heard too: current_count back to 0.
    drop(w2);
    drop(r2);
    wait_until(10, "reader unmatched", || {
        rl.current.load(Ordering::SeqCst) == 0
    });
    wait_until(10, "writer unmatched", || {
        wl.current.load(Ordering::SeqCst) == 0
    });
    assert_eq!(rl.matched_calls.load(Ordering::SeqCst), 2);
    assert_eq!(wl.matched_calls.load(Ordering::SeqCst), 2);
}

fn wait_sets_wake_on_matches_and_data(t: Transport) {
    let ps = t.participants(2);
    let r = reader::<Keyed>(&ps[1], "LS_waitset", reliable_reader_qos());
    let w = writer::<Keyed>(&ps[0], "LS_waitset", DataWriterQos::default());
    let mut ws = WaitSet::new();
    let sub_matched = r.status_condition(StatusMask::SUBSCRIPTION_MATCHED);
    let pub_matched = w.status_condition(StatusMask::PUBLICATION_MATCHED);
    ws.attach(&sub_matched);
    ws.attach(&pub_matched);
    let mut seen = (false, false);
    while !(seen.0 && seen.1) {
        let active = ws.wait(Some(Duration::from_secs(10))).unwrap();
        assert!(!active.is_empty(), "no match within 10 s");
        seen.0 |= active.contains(&sub_matched);
        seen.1 |= active.contains(&pub_matched);
        // Reading the status resets it (the condition stops triggering).
        if active.contains(&sub_matched) {
            assert_eq!(r.subscription_matched_status().current_count, 1);
        }
        if active.contains(&pub_matched) {
            assert_eq!(w.publication_matched_status().current_count, 1);
        }
    }

    let mut ws = WaitSet::new();
    let data = r.status_condition(StatusMask::DATA_AVAILABLE);
    let unread = r.create_readcondition(StateMasks::NOT_READ);
    ws.attach(&data);
    ws.attach(&unread);
    assert!(!unread.trigger_value());
    w.write(&Keyed { id: 3, seq: 1 }).unwrap();
    let active = ws.wait(Some(Duration::from_secs(10))).unwrap();
    assert!(!active.is_empty(), "the write woke nobody");
    wait_until(5, "both conditions", || {
        data.trigger_value() && unread.trigger_value()
    });
    assert_eq!(seqs(&r.take(usize::MAX).unwrap()), [(3, 1)]);
    assert!(!unread.trigger_value(), "nothing unread is left");
}

per_transport!(all: listeners_hear_matches_and_data, wait_sets_wake_on_matches_and_data);
