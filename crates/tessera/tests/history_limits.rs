//! Keep-last replacement and keep-all resource limits of the reader history cache.

use tessera::history::*;

const W1: WriterGuid = [1; 16];

fn key(n: u8) -> KeyHash {
    let mut k = [0; 16];
    k[0] = n;
    k
}

fn history(history: HistoryKind, limits: ResourceLimits) -> History<u32> {
    History::new(HistoryConfig {
        history,
        limits,
        ..Default::default()
    })
}

fn data(samples: &[Sample<u32>]) -> Vec<Option<u32>> {
    samples.iter().map(|s| s.data).collect()
}

#[test]
fn default_is_keep_last_one() {
    let mut h: History<u32> = History::default();
    assert_eq!(h.config().history, HistoryKind::KeepLast(1));
    let a = h.insert(KEYLESS, W1, 1, 0, 0);
    let b = h.insert(KEYLESS, W1, 2, 0, 0);
    assert!(matches!(a, InsertOutcome::Accepted(_)));
    assert_eq!(b, InsertOutcome::Replaced(a.handle().unwrap()));
    assert_eq!(data(&h.take(UNLIMITED, StateMasks::ANY)), [Some(2)]);
}

#[test]
fn keep_last_drops_oldest_per_instance() {
    let mut h = history(HistoryKind::KeepLast(2), ResourceLimits::default());
    for v in 1..=5 {
        let out = h.insert(key(1), W1, v, 0, 0);
        assert_eq!(matches!(out, InsertOutcome::Replaced(_)), v > 2, "{v}");
    }
    h.insert(key(2), W1, 100, 0, 0);
    assert_eq!(h.len(), 3);
    assert_eq!(h.not_read_len(), 3);
    // A read sample is dropped as readily as an unread one.
    h.read(1, StateMasks::ANY);
    h.insert(key(1), W1, 6, 0, 0);
    assert_eq!(h.not_read_len(), 3, "the read sample 4 went");
    assert_eq!(
        data(&h.take(UNLIMITED, StateMasks::ANY)),
        [Some(5), Some(6), Some(100)]
    );
}

#[test]
fn keep_last_zero_depth_means_one() {
    let mut h = history(HistoryKind::KeepLast(0), ResourceLimits::default());
    h.insert(KEYLESS, W1, 1, 0, 0);
    h.insert(KEYLESS, W1, 2, 0, 0);
    assert_eq!(data(&h.take(UNLIMITED, StateMasks::ANY)), [Some(2)]);
}

#[test]
fn keep_last_depth_capped_by_max_samples_per_instance() {
    let limits = ResourceLimits {
        max_samples_per_instance: Some(2),
        ..Default::default()
    };
    let mut h = history(HistoryKind::KeepLast(10), limits);
    for v in 1..=4 {
        h.insert(KEYLESS, W1, v, 0, 0);
    }
    assert_eq!(
        data(&h.take(UNLIMITED, StateMasks::ANY)),
        [Some(3), Some(4)]
    );
}

#[test]
fn keep_last_rejects_new_samples_beyond_max_samples() {
    let limits = ResourceLimits {
        max_samples: Some(2),
        ..Default::default()
    };
    let mut h = history(HistoryKind::KeepLast(1), limits);
    h.insert(key(1), W1, 1, 0, 0);
    h.insert(key(2), W1, 2, 0, 0);
    assert_eq!(
        h.insert(key(3), W1, 3, 0, 0),
        InsertOutcome::Rejected(RejectReason::SamplesLimit)
    );
    assert_eq!(
        h.instance_count(),
        2,
        "no instance created for a rejected sample"
    );
    // Replacing within a full instance is still fine.
    assert!(matches!(
        h.insert(key(1), W1, 4, 0, 0),
        InsertOutcome::Replaced(_)
    ));
}

#[test]
fn keep_all_per_instance_limit() {
    let limits = ResourceLimits {
        max_samples_per_instance: Some(2),
        ..Default::default()
    };
    let mut h = history(HistoryKind::KeepAll, limits);
    assert!(h.insert(key(1), W1, 1, 0, 0).is_stored());
    assert!(h.insert(key(1), W1, 2, 0, 0).is_stored());
    let out = h.insert(key(1), W1, 3, 0, 0);
    assert_eq!(
        out,
        InsertOutcome::Rejected(RejectReason::SamplesPerInstanceLimit)
    );
    assert!(!out.may_acknowledge());
    assert_eq!(out.handle(), None);
    assert!(h.insert(key(2), W1, 10, 0, 0).is_stored(), "other instance");
    // Reading does not free space; taking does.
    h.read(UNLIMITED, StateMasks::ANY);
    assert!(!h.insert(key(1), W1, 3, 0, 0).is_stored());
    let handle = h.lookup_instance(&key(1)).unwrap();
    h.take_instance(handle, 1, StateMasks::ANY).unwrap();
    assert!(h.insert(key(1), W1, 3, 0, 0).is_stored());
    assert_eq!(
        data(&h.take_instance(handle, UNLIMITED, StateMasks::ANY).unwrap()),
        [Some(2), Some(3)]
    );
}

#[test]
fn keep_all_zero_per_instance_rejects_without_creating() {
    let limits = ResourceLimits {
        max_samples_per_instance: Some(0),
        ..Default::default()
    };
    let mut h = history(HistoryKind::KeepAll, limits);
    assert_eq!(
        h.insert(key(1), W1, 1, 0, 0),
        InsertOutcome::Rejected(RejectReason::SamplesPerInstanceLimit)
    );
    assert_eq!(h.instance_count(), 0);
}

#[test]
fn keep_all_total_limit() {
    let limits = ResourceLimits {
        max_samples: Some(3),
        ..Default::default()
    };
    let mut h = history(HistoryKind::KeepAll, limits);
    for k in 1..=3 {
        assert!(h.insert(key(k), W1, k as u32, 0, 0).is_stored());
    }
    assert_eq!(
        h.insert(key(1), W1, 9, 0, 0),
        InsertOutcome::Rejected(RejectReason::SamplesLimit)
    );
    assert_eq!(
        h.insert(key(4), W1, 9, 0, 0),
        InsertOutcome::Rejected(RejectReason::SamplesLimit)
    );
    assert_eq!(h.take(1, StateMasks::ANY).len(), 1);
    assert!(h.insert(key(4), W1, 4, 0, 0).is_stored());
}

#[test]
fn rejected_sample_changes_nothing() {
    let limits = ResourceLimits {
        max_samples: Some(1),
        ..Default::default()
    };
    let mut h = history(HistoryKind::KeepAll, limits);
    h.insert(key(1), W1, 1, 0, 0);
    h.dispose(key(1), W1, 1, 1);
    let handle = h.lookup_instance(&key(1)).unwrap();
    let before = h.instance_status(handle).unwrap();
    assert!(!h.insert(key(1), W1, 2, 2, 2).is_stored());
    assert_eq!(h.instance_status(handle).unwrap(), before);
    assert_eq!(before.instance_state, InstanceState::NotAliveDisposed);
}

#[test]
fn invalid_samples_do_not_count_against_limits() {
    let limits = ResourceLimits {
        max_samples: Some(1),
        max_samples_per_instance: Some(1),
        ..Default::default()
    };
    let mut h = history(HistoryKind::KeepAll, limits);
    h.insert(key(1), W1, 1, 0, 0);
    h.take(UNLIMITED, StateMasks::ANY);
    assert!(h.dispose(key(1), W1, 1, 1).is_changed());
    assert_eq!((h.len(), h.valid_len()), (1, 0));
    assert!(h.insert(key(2), W1, 2, 0, 0).is_stored());
    // Key 1: its pending invalid sample gives way to new data only if the limit allows.
    assert!(!h.insert(key(1), W1, 3, 0, 0).is_stored());
    assert_eq!(h.len(), 2);
}

#[test]
fn instance_limit() {
    let limits = ResourceLimits {
        max_instances: Some(2),
        ..Default::default()
    };
    let mut h = history(HistoryKind::KeepAll, limits);
    h.insert(key(1), W1, 1, 0, 0);
    h.insert(key(2), W1, 2, 0, 0);
    assert_eq!(
        h.insert(key(3), W1, 3, 0, 0),
        InsertOutcome::Rejected(RejectReason::InstancesLimit)
    );
    let out = h.dispose(key(3), W1, 0, 0);
    assert_eq!(out, UpdateOutcome::Rejected(RejectReason::InstancesLimit));
    assert!(!out.may_acknowledge());
    assert!(
        h.insert(key(1), W1, 4, 0, 0).is_stored(),
        "existing instance"
    );

    // Free an instance: unregister its only writer and take its samples.
    h.unregister(key(2), W1, 0, 0);
    let handle = h.lookup_instance(&key(2)).unwrap();
    h.take_instance(handle, UNLIMITED, StateMasks::ANY).unwrap();
    assert_eq!(h.instance_count(), 1);
    assert!(h.insert(key(3), W1, 3, 0, 0).is_stored());
}
