//! State transitions, sample info and access of the reader history cache.

use tessera::history::*;

const W1: WriterGuid = [1; 16];
const W2: WriterGuid = [2; 16];

fn key(n: u8) -> KeyHash {
    let mut k = [0; 16];
    k[3] = n;
    k
}

fn keep_all() -> History<u32> {
    History::new(HistoryConfig {
        history: HistoryKind::KeepAll,
        ..Default::default()
    })
}

fn data(samples: &[Sample<u32>]) -> Vec<Option<u32>> {
    samples.iter().map(|s| s.data).collect()
}

fn masks(s: SampleStateMask, v: ViewStateMask, i: InstanceStateMask) -> StateMasks {
    StateMasks::new(s, v, i)
}

#[test]
fn keyless_insert_and_take_in_order() {
    let mut h = keep_all();
    for (i, v) in [10u32, 11, 12].into_iter().enumerate() {
        let out = h.insert(KEYLESS, W1, v, 100 + i as i64, 200 + i as i64);
        assert!(matches!(out, InsertOutcome::Accepted(_)));
        assert!(out.is_stored() && out.may_acknowledge());
    }
    assert_eq!(h.len(), 3);
    assert_eq!(h.instance_count(), 1);
    let handle = h.lookup_instance(&KEYLESS).unwrap();
    assert_eq!(h.key_value(handle), Some(KEYLESS));

    let s = h.take(UNLIMITED, StateMasks::ANY);
    assert_eq!(data(&s), [Some(10), Some(11), Some(12)]);
    for (i, x) in s.iter().enumerate() {
        let info = x.info;
        assert_eq!(info.sample_state, SampleState::NotRead);
        assert_eq!(info.view_state, ViewState::New);
        assert_eq!(info.instance_state, InstanceState::Alive);
        assert_eq!(info.source_timestamp, 100 + i as i64);
        assert_eq!(info.reception_timestamp, 200 + i as i64);
        assert_eq!(info.instance_handle, handle);
        assert_eq!(info.publication_handle, W1);
        assert_eq!(info.sample_rank, 2 - i as u32);
        assert_eq!(info.generation_rank, 0);
        assert_eq!(info.absolute_generation_rank, 0);
        assert_eq!(info.disposed_generation_count, 0);
        assert_eq!(info.no_writers_generation_count, 0);
        assert!(info.valid_data);
    }
    assert!(h.is_empty());
    assert!(!h.has_unread());
    // The instance stays (alive, with a writer), now NOT_NEW.
    let st = h.instance_status(handle).unwrap();
    assert_eq!(st.view_state, ViewState::NotNew);
    assert_eq!(st.samples, 0);
    assert_eq!(st.writers, 1);
}

#[test]
fn read_marks_read_and_not_new() {
    let mut h = keep_all();
    h.insert(KEYLESS, W1, 1, 0, 0);
    h.insert(KEYLESS, W1, 2, 0, 0);
    assert!(h.has_unread());

    let first = h.read(1, StateMasks::ANY);
    assert_eq!(data(&first), [Some(1)]);
    assert_eq!(first[0].info.sample_state, SampleState::NotRead);
    assert_eq!(first[0].info.view_state, ViewState::New);
    assert_eq!(
        first[0].info.sample_rank, 0,
        "only one sample of it in the collection"
    );

    let second = h.read(UNLIMITED, StateMasks::ANY);
    assert_eq!(data(&second), [Some(1), Some(2)]);
    assert_eq!(second[0].info.sample_state, SampleState::Read);
    assert_eq!(second[1].info.sample_state, SampleState::NotRead);
    assert!(second
        .iter()
        .all(|s| s.info.view_state == ViewState::NotNew));
    assert_eq!(h.len(), 2, "read does not remove");
    assert!(!h.has_unread());
    assert!(h.read(UNLIMITED, StateMasks::NOT_READ).is_empty());

    h.insert(KEYLESS, W1, 3, 0, 0);
    let fresh = h.read(UNLIMITED, StateMasks::NOT_READ);
    assert_eq!(data(&fresh), [Some(3)]);
    assert_eq!(fresh[0].info.view_state, ViewState::NotNew);

    let read_only = masks(
        SampleStateMask::READ,
        ViewStateMask::ANY,
        InstanceStateMask::ANY,
    );
    assert_eq!(
        data(&h.take(UNLIMITED, read_only)),
        [Some(1), Some(2), Some(3)]
    );
    assert!(h.is_empty());
}

#[test]
fn dispose_then_write_starts_a_new_generation() {
    let mut h = keep_all();
    let k = key(1);
    h.insert(k, W1, 1, 10, 10);
    assert_eq!(h.take(UNLIMITED, StateMasks::ANY).len(), 1);

    let out = h.dispose(k, W1, 20, 20);
    let handle = h.lookup_instance(&k).unwrap();
    assert_eq!(out, UpdateOutcome::Changed(handle));
    // Nothing unread, so an invalid sample announces the dispose.
    let s = h.read(UNLIMITED, StateMasks::ANY);
    assert_eq!(s.len(), 1);
    assert!(!s[0].info.valid_data);
    assert_eq!(s[0].data, None);
    assert_eq!(s[0].info.instance_state, InstanceState::NotAliveDisposed);
    assert_eq!(s[0].info.view_state, ViewState::NotNew);
    assert_eq!(s[0].info.source_timestamp, 20);
    assert_eq!(s[0].info.publication_handle, W1);
    assert_eq!(h.valid_len(), 0);

    // Disposing again changes nothing.
    assert_eq!(h.dispose(k, W1, 21, 21), UpdateOutcome::Unchanged(handle));
    assert_eq!(h.len(), 1);

    // New data: alive again, NEW, disposed generation 1; the read invalid sample is superseded.
    assert!(h.insert(k, W1, 2, 30, 30).is_stored());
    assert_eq!(h.lookup_instance(&k), Some(handle), "same instance");
    let s = h.take(UNLIMITED, StateMasks::ANY);
    assert_eq!(data(&s), [Some(2)]);
    let info = s[0].info;
    assert_eq!(info.instance_state, InstanceState::Alive);
    assert_eq!(info.view_state, ViewState::New);
    assert_eq!(info.disposed_generation_count, 1);
    assert_eq!(info.no_writers_generation_count, 0);
    assert_eq!(info.absolute_generation_rank, 0);
    let st = h.instance_status(handle).unwrap();
    assert_eq!(st.disposed_generation_count, 1);
    assert_eq!(st.view_state, ViewState::NotNew);
}

#[test]
fn dispose_with_unread_sample_adds_no_invalid_sample() {
    let mut h = keep_all();
    h.insert(key(1), W1, 7, 0, 0);
    assert!(h.dispose(key(1), W1, 1, 1).is_changed());
    assert_eq!(h.len(), 1);
    let s = h.take(UNLIMITED, StateMasks::ANY);
    assert_eq!(data(&s), [Some(7)]);
    assert_eq!(s[0].info.instance_state, InstanceState::NotAliveDisposed);
    // Disposed, empty, but W1 is still registered: kept until W1 unregisters.
    assert_eq!(h.instance_count(), 1);
    assert_eq!(
        h.unregister(key(1), W1, 2, 2),
        UpdateOutcome::Unchanged(s[0].info.instance_handle)
    );
    assert_eq!(h.instance_count(), 0, "purged");
    assert_eq!(h.lookup_instance(&key(1)), None);
}

#[test]
fn dispose_after_read_replaces_read_invalid_sample() {
    let mut h = keep_all();
    h.insert(key(1), W1, 7, 0, 0);
    h.take(UNLIMITED, StateMasks::ANY);
    h.unregister(key(1), W1, 1, 1); // NO_WRITERS + invalid sample
    assert_eq!(h.read(UNLIMITED, StateMasks::ANY).len(), 1);
    h.dispose(key(1), W2, 2, 2); // NO_WRITERS -> DISPOSED: a fresh invalid sample
    let s = h.read(UNLIMITED, StateMasks::ANY);
    assert_eq!(s.len(), 1);
    assert_eq!(s[0].info.sample_state, SampleState::NotRead);
    assert_eq!(s[0].info.instance_state, InstanceState::NotAliveDisposed);
    assert_eq!(s[0].info.publication_handle, W2);
    assert_eq!(h.len(), 1);
}

#[test]
fn ranks_across_generations() {
    let mut h = keep_all();
    let k = key(9);
    h.insert(k, W1, 0, 0, 0);
    h.dispose(k, W1, 1, 1); // A unread: no invalid sample
    h.insert(k, W1, 1, 2, 2); // disposed generation 1
    h.unregister(k, W1, 3, 3); // alive -> no writers; unread samples carry it
    h.insert(k, W2, 2, 4, 4); // no-writers generation 1
    assert_eq!(h.len(), 3);

    let s = h.read(2, StateMasks::ANY);
    assert_eq!(data(&s), [Some(0), Some(1)]);
    assert_eq!(
        (
            s[0].info.sample_rank,
            s[0].info.generation_rank,
            s[0].info.absolute_generation_rank
        ),
        (1, 1, 2)
    );
    assert_eq!(
        (
            s[1].info.sample_rank,
            s[1].info.generation_rank,
            s[1].info.absolute_generation_rank
        ),
        (0, 0, 1)
    );

    let s = h.take(UNLIMITED, StateMasks::ANY);
    let ranks: Vec<_> = s
        .iter()
        .map(|x| {
            (
                x.info.sample_rank,
                x.info.generation_rank,
                x.info.absolute_generation_rank,
                x.info.disposed_generation_count,
                x.info.no_writers_generation_count,
            )
        })
        .collect();
    assert_eq!(ranks, [(2, 2, 2, 0, 0), (1, 1, 1, 1, 0), (0, 0, 0, 1, 1)]);
    assert!(s
        .iter()
        .all(|x| x.info.instance_state == InstanceState::Alive));
    assert_eq!(
        s[2].info.view_state,
        ViewState::NotNew,
        "read before in this generation"
    );
}

#[test]
fn no_writers_when_last_writer_lost() {
    let mut h = keep_all();
    let k = key(1);
    h.insert(k, W1, 1, 0, 0);
    h.insert(k, W2, 2, 0, 0);
    let handle = h.lookup_instance(&k).unwrap();
    assert_eq!(h.unregister(k, W1, 5, 5), UpdateOutcome::Unchanged(handle));
    assert_eq!(
        h.unregister(k, W1, 5, 5),
        UpdateOutcome::Unchanged(handle),
        "twice"
    );
    assert_eq!(
        h.instance_status(handle).unwrap().instance_state,
        InstanceState::Alive
    );
    assert_eq!(h.writer_lost([9; 16], 6), 0, "unknown writer");
    assert_eq!(h.writer_lost(W2, 6), 1);
    let st = h.instance_status(handle).unwrap();
    assert_eq!(st.instance_state, InstanceState::NotAliveNoWriters);
    assert_eq!(st.writers, 0);
    assert_eq!(h.len(), 2, "the unread samples carry the state change");

    let s = h.take(UNLIMITED, StateMasks::ANY);
    assert!(s
        .iter()
        .all(|x| x.info.instance_state == InstanceState::NotAliveNoWriters));
    assert_eq!(
        h.instance_count(),
        0,
        "empty, not alive, no writers: purged"
    );
    assert_eq!(
        h.read_instance(handle, UNLIMITED, StateMasks::ANY),
        Err(HistoryError::UnknownInstance(handle))
    );

    // Written again: a new instance with a new handle.
    h.insert(k, W1, 3, 0, 0);
    let again = h.lookup_instance(&k).unwrap();
    assert!(again > handle);
    let st = h.instance_status(again).unwrap();
    assert_eq!(st.view_state, ViewState::New);
    assert_eq!(st.no_writers_generation_count, 0);
}

#[test]
fn no_writers_invalid_sample_then_rebirth() {
    let mut h = keep_all();
    let k = key(2);
    h.insert(k, W1, 1, 0, 0);
    h.take(UNLIMITED, StateMasks::ANY);
    let handle = h.lookup_instance(&k).unwrap();
    assert_eq!(h.unregister(k, W1, 9, 9), UpdateOutcome::Changed(handle));
    let s = h.read(UNLIMITED, StateMasks::ANY);
    assert_eq!(s.len(), 1);
    assert!(!s[0].info.valid_data);
    assert_eq!(s[0].info.instance_state, InstanceState::NotAliveNoWriters);
    assert_eq!(s[0].info.source_timestamp, 9);

    h.insert(k, W2, 2, 10, 10);
    let st = h.instance_status(handle).unwrap();
    assert_eq!(st.instance_state, InstanceState::Alive);
    assert_eq!(st.view_state, ViewState::New);
    assert_eq!(st.no_writers_generation_count, 1);
    assert_eq!(st.samples, 1, "invalid sample dropped");
    let s = h.take(UNLIMITED, StateMasks::ANY);
    assert_eq!(s[0].info.no_writers_generation_count, 1);
    assert_eq!(s[0].info.view_state, ViewState::New);
}

#[test]
fn disposed_stays_disposed_when_writers_go() {
    let mut h = keep_all();
    let k = key(3);
    h.insert(k, W1, 1, 0, 0);
    h.dispose(k, W1, 1, 1);
    assert_eq!(h.writer_lost(W1, 2), 0);
    let handle = h.lookup_instance(&k).unwrap();
    assert_eq!(
        h.instance_status(handle).unwrap().instance_state,
        InstanceState::NotAliveDisposed
    );
    h.take(UNLIMITED, StateMasks::ANY);
    assert_eq!(h.instance_count(), 0);
}

#[test]
fn dispose_of_unknown_instance_creates_it() {
    let mut h = keep_all();
    let out = h.dispose(key(4), W1, 3, 3);
    let handle = h.lookup_instance(&key(4)).unwrap();
    assert_eq!(out, UpdateOutcome::Changed(handle));
    let s = h.take(UNLIMITED, StateMasks::ANY);
    assert_eq!(s.len(), 1);
    assert!(!s[0].info.valid_data);
    assert_eq!(s[0].info.view_state, ViewState::New);
    assert_eq!(s[0].info.instance_state, InstanceState::NotAliveDisposed);
    assert_eq!(
        h.unregister(key(4), W2, 4, 4),
        UpdateOutcome::Unchanged(handle)
    );
    assert_eq!(h.instance_count(), 1, "W1 still registered");
    h.writer_lost(W1, 5);
    assert_eq!(h.instance_count(), 0);
    assert_eq!(
        h.unregister(key(4), W1, 6, 6),
        UpdateOutcome::UnknownInstance
    );
}

#[test]
fn state_masks_select_instances_and_samples() {
    let mut h = keep_all();
    h.insert(key(1), W1, 1, 0, 0); // stays alive
    h.insert(key(2), W1, 2, 0, 0); // disposed below
    h.insert(key(3), W2, 3, 0, 0); // no writers below
    h.dispose(key(2), W1, 1, 1);
    h.writer_lost(W2, 1);

    let only = |i| masks(SampleStateMask::ANY, ViewStateMask::ANY, i);
    assert_eq!(
        data(&h.read(UNLIMITED, only(InstanceStateMask::ALIVE))),
        [Some(1)]
    );
    assert_eq!(
        data(&h.read(UNLIMITED, only(InstanceStateMask::NOT_ALIVE_DISPOSED))),
        [Some(2)]
    );
    assert_eq!(
        data(&h.read(UNLIMITED, only(InstanceStateMask::NOT_ALIVE_NO_WRITERS))),
        [Some(3)]
    );
    assert!(h.read(UNLIMITED, only(InstanceStateMask::NONE)).is_empty());

    // All three are NOT_NEW now; a fourth instance is NEW.
    h.insert(key(5), W1, 5, 0, 0);
    let new_only = masks(
        SampleStateMask::ANY,
        ViewStateMask::NEW,
        InstanceStateMask::ANY,
    );
    assert!(h.has_matching(new_only));
    assert_eq!(data(&h.read(UNLIMITED, new_only)), [Some(5)]);
    assert!(!h.has_matching(new_only));
    assert!(h.read(UNLIMITED, new_only).is_empty());

    let not_alive_read = masks(
        SampleStateMask::READ,
        ViewStateMask::NOT_NEW,
        InstanceStateMask::NOT_ALIVE,
    );
    let mut got = data(&h.take(UNLIMITED, not_alive_read));
    got.sort();
    assert_eq!(got, [Some(2), Some(3)]);
    assert_eq!(h.instance_count(), 3, "key 3 purged; key 2 keeps W1");
}

#[test]
fn has_matching_and_unread() {
    let mut h = keep_all();
    assert!(!h.has_matching(StateMasks::ANY));
    assert!(!h.has_unread());
    h.insert(KEYLESS, W1, 1, 0, 0);
    assert!(h.has_matching(StateMasks::ANY));
    assert!(h.has_matching(StateMasks::NOT_READ));
    let read_only = masks(
        SampleStateMask::READ,
        ViewStateMask::ANY,
        InstanceStateMask::ANY,
    );
    assert!(!h.has_matching(read_only));
    h.read(UNLIMITED, StateMasks::ANY);
    assert!(!h.has_unread());
    assert!(!h.has_matching(StateMasks::NOT_READ));
    assert!(h.has_matching(read_only));
    let disposed = masks(
        SampleStateMask::ANY,
        ViewStateMask::ANY,
        InstanceStateMask::NOT_ALIVE_DISPOSED,
    );
    assert!(!h.has_matching(disposed));
    h.dispose(KEYLESS, W1, 0, 0);
    assert!(h.has_matching(disposed));
    assert!(h.has_unread(), "invalid sample");
}

#[test]
fn take_not_read_leaves_read_samples() {
    let mut h = keep_all();
    for v in 1..=4 {
        h.insert(KEYLESS, W1, v, 0, 0);
    }
    h.read(1, StateMasks::ANY); // 1 is READ
    let s = h.take(2, StateMasks::NOT_READ);
    assert_eq!(data(&s), [Some(2), Some(3)]);
    assert_eq!((s[0].info.sample_rank, s[1].info.sample_rank), (1, 0));
    assert_eq!(h.len(), 2);
    assert_eq!(h.not_read_len(), 1);
    assert_eq!(
        data(&h.read(UNLIMITED, StateMasks::ANY)),
        [Some(1), Some(4)]
    );
}

#[test]
fn instance_access_and_next_instance_order() {
    let mut h = keep_all();
    // Created in order 5, 1, 3: handles follow creation order.
    for k in [5u8, 1, 3] {
        h.insert(key(k), W1, k as u32 * 10, 0, 0);
        h.insert(key(k), W1, k as u32 * 10 + 1, 0, 0);
    }
    let hs: Vec<_> = [5u8, 1, 3]
        .iter()
        .map(|&k| h.lookup_instance(&key(k)).unwrap())
        .collect();
    assert!(hs[0] < hs[1] && hs[1] < hs[2]);
    assert!(!hs[0].is_nil());

    let s = h.read_instance(hs[1], 1, StateMasks::ANY).unwrap();
    assert_eq!(data(&s), [Some(10)]);
    assert!(h
        .read_instance(InstanceHandle::from_raw(999), UNLIMITED, StateMasks::ANY)
        .is_err());

    // read_next_instance walks by handle.
    let mut prev = InstanceHandle::NIL;
    let mut seen = Vec::new();
    loop {
        let s = h.read_next_instance(prev, UNLIMITED, StateMasks::ANY);
        if s.is_empty() {
            break;
        }
        assert!(s
            .iter()
            .all(|x| x.info.instance_handle == s[0].info.instance_handle));
        prev = s[0].info.instance_handle;
        seen.push(data(&s));
    }
    assert_eq!(
        seen,
        [
            vec![Some(50), Some(51)],
            vec![Some(10), Some(11)],
            vec![Some(30), Some(31)]
        ]
    );

    // Only the instance with unread samples left after the first.
    h.insert(key(3), W1, 32, 0, 0);
    let s = h.take_next_instance(InstanceHandle::NIL, UNLIMITED, StateMasks::NOT_READ);
    assert_eq!(data(&s), [Some(32)]);
    // A handle that does not exist any more still works as a starting point.
    let s = h.take_instance(hs[0], UNLIMITED, StateMasks::ANY).unwrap();
    assert_eq!(s.len(), 2);
    h.unregister(key(5), W1, 0, 0);
    let s = h.take_instance(hs[0], UNLIMITED, StateMasks::ANY).unwrap();
    assert_eq!(s.len(), 1, "the no-writers notification");
    assert_eq!(h.lookup_instance(&key(5)), None);
    let s = h.read_next_instance(hs[0], UNLIMITED, StateMasks::ANY);
    assert_eq!(s[0].info.instance_handle, hs[1]);
    assert!(h
        .read_next_instance(hs[2], UNLIMITED, StateMasks::ANY)
        .is_empty());
}

#[test]
fn max_limits_across_instances() {
    let mut h = keep_all();
    for k in 1..=3 {
        for v in 0..3 {
            h.insert(key(k), W1, k as u32 * 10 + v, 0, 0);
        }
    }
    let s = h.take(4, StateMasks::ANY);
    assert_eq!(data(&s), [Some(10), Some(11), Some(12), Some(20)]);
    assert_eq!(s[3].info.sample_rank, 0);
    assert_eq!(s[0].info.sample_rank, 2);
    assert!(h.take(0, StateMasks::ANY).is_empty());
    let mut out = Vec::with_capacity(16);
    assert_eq!(h.take_into(&mut out, UNLIMITED), 5);
    assert_eq!(
        data(&out),
        [Some(21), Some(22), Some(30), Some(31), Some(32)]
    );
    assert!(h.is_empty());
}

#[test]
fn instances_come_in_order_of_becoming_non_empty() {
    let mut h = keep_all();
    h.insert(key(1), W1, 1, 0, 0);
    h.insert(key(2), W1, 2, 0, 0);
    h.take_instance(
        h.lookup_instance(&key(1)).unwrap(),
        UNLIMITED,
        StateMasks::ANY,
    )
    .unwrap();
    h.insert(key(1), W1, 3, 0, 0);
    h.insert(key(2), W1, 4, 0, 0);
    assert_eq!(
        data(&h.take(UNLIMITED, StateMasks::ANY)),
        [Some(2), Some(4), Some(3)]
    );
}

#[test]
fn selection_api() {
    let mut h = keep_all();
    h.insert(key(1), W1, 1, 0, 0);
    h.insert(key(2), W1, 2, 0, 0);
    let h1 = h.lookup_instance(&key(1)).unwrap();
    let mut out = Vec::new();
    assert_eq!(
        h.read_into(
            &mut out,
            Selection::Instance(h1),
            UNLIMITED,
            StateMasks::ANY
        ),
        Ok(1)
    );
    assert_eq!(
        h.read_into(
            &mut out,
            Selection::NextInstance(h1),
            UNLIMITED,
            StateMasks::ANY
        ),
        Ok(1)
    );
    assert_eq!(
        h.read_into(&mut out, Selection::All, UNLIMITED, StateMasks::ANY),
        Ok(2)
    );
    assert_eq!(data(&out), [Some(1), Some(2), Some(1), Some(2)]);
    out.clear();
    assert_eq!(
        h.take_selected_into(&mut out, Selection::All, UNLIMITED, StateMasks::NOT_READ),
        Ok(0)
    );
    assert_eq!(
        h.take_selected_into(
            &mut out,
            Selection::Instance(InstanceHandle::NIL),
            UNLIMITED,
            StateMasks::ANY
        ),
        Err(HistoryError::UnknownInstance(InstanceHandle::NIL))
    );
}

#[test]
fn by_source_timestamp_drops_older_updates() {
    let mut h: History<u32> = History::new(HistoryConfig {
        history: HistoryKind::KeepAll,
        destination_order: DestinationOrder::BySourceTimestamp,
        ..Default::default()
    });
    let k = key(1);
    assert!(h.insert(k, W1, 1, 10, 0).is_stored());
    let handle = h.lookup_instance(&k).unwrap();
    let out = h.insert(k, W2, 2, 5, 1);
    assert_eq!(out, InsertOutcome::Outdated(handle));
    assert!(out.may_acknowledge() && !out.is_stored());
    assert!(
        h.insert(k, W2, 3, 10, 2).is_stored(),
        "equal timestamps are kept"
    );
    assert_eq!(h.dispose(k, W1, 9, 9), UpdateOutcome::Outdated(handle));
    assert!(h.dispose(k, W1, 11, 11).is_changed());
    assert_eq!(h.insert(k, W1, 4, 10, 3), InsertOutcome::Outdated(handle));
    // Other instances are independent.
    assert!(h.insert(key(2), W1, 5, 1, 4).is_stored());
    assert_eq!(
        data(&h.take(UNLIMITED, StateMasks::ANY)),
        [Some(1), Some(3), Some(5)]
    );

    // Reception order keeps everything.
    let mut r: History<u32> = keep_all();
    r.insert(k, W1, 1, 10, 0);
    assert!(r.insert(k, W1, 2, 5, 0).is_stored());
}

/// The `_in_order` inputs (an ATOMIC writer's committed entries at an ATOMIC reader) keep what
/// BY_SOURCE_TIMESTAMP would drop, and still count as the instance's newest update.
#[test]
fn in_order_inputs_are_kept_under_by_source_timestamp() {
    let mut h: History<u32> = History::new(HistoryConfig {
        history: HistoryKind::KeepAll,
        destination_order: DestinationOrder::BySourceTimestamp,
        ..Default::default()
    });
    let k = key(1);
    let mut replaced = None;
    assert!(h.insert(k, W1, 1, 10, 0).is_stored());
    assert!(h
        .insert_reclaiming_in_order(k, W1, 2, 5, 1, &mut replaced)
        .is_stored());
    assert!(h.dispose_in_order(k, W1, 4, 2).is_changed());
    assert!(h
        .insert_reclaiming_in_order(k, W1, 3, 3, 3, &mut replaced)
        .is_stored());
    let handle = h.lookup_instance(&k).unwrap();
    assert_eq!(h.insert(k, W2, 4, 9, 4), InsertOutcome::Outdated(handle));
    assert_eq!(
        data(&h.take(UNLIMITED, StateMasks::ANY)),
        [Some(1), Some(2), Some(3)]
    );
}

#[test]
fn masks_behave_like_bitflags() {
    assert_eq!(
        SampleStateMask::READ | SampleStateMask::NOT_READ,
        SampleStateMask::ANY
    );
    assert_eq!(
        InstanceStateMask::NOT_ALIVE_DISPOSED | InstanceStateMask::NOT_ALIVE_NO_WRITERS,
        InstanceStateMask::NOT_ALIVE
    );
    assert_eq!(InstanceStateMask::ANY.bits(), 7);
    assert_eq!(
        ViewStateMask::from_bits_truncate(0xffff),
        ViewStateMask::ANY
    );
    assert!(InstanceStateMask::NOT_ALIVE.contains(InstanceState::NotAliveDisposed.mask()));
    assert!(!InstanceStateMask::NOT_ALIVE.intersects(InstanceStateMask::ALIVE));
    assert!((SampleStateMask::READ & SampleStateMask::NOT_READ).is_empty());
    assert_eq!(StateMasks::default(), StateMasks::ANY);
    let mut m = ViewStateMask::NONE;
    m |= ViewStateMask::NEW;
    assert_eq!(m.union(ViewStateMask::NOT_NEW), ViewStateMask::ANY);
}
