//! Instance lifecycle of the reader history: reclaiming empty not-alive instances and the
//! READER_DATA_LIFECYCLE autopurge delays, on a virtual clock (the cache takes every time as an
//! argument).

use std::time::Duration;

use tessera::history::*;

const W1: WriterGuid = [1; 16];
const W2: WriterGuid = [2; 16];

fn key(n: u32) -> KeyHash {
    let mut k = [0; 16];
    k[..4].copy_from_slice(&n.to_be_bytes());
    k
}

fn with_lifecycle(nowriter: Option<u64>, disposed: Option<u64>) -> History<u32> {
    History::new(HistoryConfig {
        history: HistoryKind::KeepLast(4),
        lifecycle: Lifecycle {
            autopurge_nowriter_samples_delay: nowriter.map(Duration::from_nanos),
            autopurge_disposed_samples_delay: disposed.map(Duration::from_nanos),
        },
        ..Default::default()
    })
}

#[test]
fn taking_the_last_sample_of_a_disposed_instance_frees_it_once_no_writer_is_left() {
    let mut h = with_lifecycle(None, None);
    h.insert(key(1), W1, 1, 10, 10);
    h.dispose(key(1), W1, 11, 11);
    assert_eq!(h.instance_count(), 1);
    // While W1 is registered the reader keeps the instance (DDS: its states must be computed
    // for W1's next sample), even with nothing left to read.
    h.insert(key(1), W1, 2, 12, 12);
    h.dispose(key(1), W1, 13, 13);
    assert_eq!(h.take(UNLIMITED, StateMasks::ANY).len(), 2);
    assert_eq!(h.instance_count(), 1, "W1 still registered");
    h.insert(key(1), W1, 3, 14, 14);
    h.dispose(key(1), W1, 15, 15);
    h.unregister(key(1), W1, 16, 16);
    let s = h.take(1, StateMasks::ANY);
    assert_eq!(s.len(), 1);
    assert_eq!(s[0].info.instance_state, InstanceState::NotAliveDisposed);
    assert_eq!(h.instance_count(), 0);
    assert_eq!(h.instance_status(s[0].info.instance_handle), None);
}

#[test]
fn reading_does_not_free_and_partial_take_keeps_the_instance() {
    let mut h = with_lifecycle(None, None);
    for v in 0..3 {
        h.insert(key(1), W1, v, v as i64, v as i64);
    }
    h.dispose(key(1), W1, 5, 5);
    h.unregister(key(1), W1, 6, 6);
    assert_eq!(h.read(UNLIMITED, StateMasks::ANY).len(), 3);
    assert_eq!(h.instance_count(), 1, "read samples are still held");
    assert_eq!(h.take(2, StateMasks::ANY).len(), 2);
    assert_eq!(h.instance_count(), 1, "one sample left");
    assert_eq!(h.take(1, StateMasks::ANY).len(), 1);
    assert_eq!(h.instance_count(), 0);
}

#[test]
fn alive_empty_instances_are_kept() {
    let mut h = with_lifecycle(None, None);
    h.insert(key(1), W1, 1, 0, 0);
    h.take(UNLIMITED, StateMasks::ANY);
    assert_eq!(h.instance_count(), 1, "alive: its handle must stay valid");
}

#[test]
fn infinite_delays_never_purge() {
    let mut h = with_lifecycle(None, None);
    h.insert(key(1), W1, 1, 0, 0);
    h.insert(key(2), W2, 2, 0, 0);
    h.dispose(key(1), W1, 1, 1);
    h.unregister(key(2), W2, 1, 1);
    assert_eq!(h.next_purge(), None);
    assert_eq!(h.purge_expired(i64::MAX), 0);
    assert_eq!(h.instance_count(), 2);
    assert_eq!(h.len(), 2, "unread samples carry the state changes");
}

#[test]
fn disposed_instance_is_purged_with_unread_samples_after_the_delay() {
    let mut h = with_lifecycle(None, Some(50));
    h.insert(key(1), W1, 1, 0, 90);
    h.insert(key(1), W1, 2, 0, 95);
    h.insert(key(2), W1, 3, 0, 95);
    h.dispose(key(1), W1, 0, 100);
    assert_eq!(h.next_purge(), Some(150));
    assert_eq!(h.purge_expired(149), 0);
    assert_eq!(h.instance_count(), 2);
    assert_eq!(h.purge_expired(150), 1);
    assert_eq!(h.autopurged(), 1);
    assert_eq!(h.lookup_instance(&key(1)), None);
    // The cache's counters followed: only key 2's sample is left.
    assert_eq!((h.len(), h.valid_len(), h.not_read_len()), (1, 1, 1));
    assert_eq!(h.next_purge(), None);
    let s = h.take(UNLIMITED, StateMasks::ANY);
    assert_eq!(s.len(), 1);
    assert_eq!(s[0].data, Some(3));
}

#[test]
fn no_writers_instance_is_purged_after_the_delay() {
    let mut h = with_lifecycle(Some(30), None);
    h.insert(key(1), W1, 1, 0, 0);
    h.insert(key(2), W2, 2, 0, 0);
    h.insert(key(3), W1, 3, 0, 0);
    h.insert(key(3), W2, 4, 0, 0);
    assert!(h.unregister(key(1), W1, 5, 10).is_changed());
    assert_eq!(h.writer_lost(W2, 20), 1, "key 2 loses its only writer");
    // Key 3 keeps W1: alive, never scheduled.
    assert_eq!(h.next_purge(), Some(40));
    assert_eq!(h.purge_expired(45), 1);
    assert_eq!(h.lookup_instance(&key(1)), None);
    assert!(h.lookup_instance(&key(2)).is_some());
    assert_eq!(h.purge_expired(50), 1);
    assert_eq!(h.lookup_instance(&key(2)), None);
    assert!(h.lookup_instance(&key(3)).is_some());
    assert_eq!(h.instance_count(), 1);
}

#[test]
fn new_data_cancels_a_pending_purge() {
    let mut h = with_lifecycle(Some(10), Some(10));
    h.insert(key(1), W1, 1, 0, 0);
    h.dispose(key(1), W1, 1, 5);
    assert_eq!(h.next_purge(), Some(15));
    h.insert(key(1), W1, 2, 2, 8); // alive again
    assert_eq!(h.next_purge(), None);
    assert_eq!(h.purge_expired(100), 0);
    assert_eq!(h.instance_count(), 1);
}

#[test]
fn a_later_state_change_restarts_the_delay() {
    let mut h = with_lifecycle(Some(100), Some(10));
    h.insert(key(1), W1, 1, 0, 0);
    h.unregister(key(1), W1, 1, 5); // no writers: due at 105
    assert_eq!(h.next_purge(), Some(105));
    h.dispose(key(1), W2, 2, 7); // now disposed: due at 17
    assert_eq!(h.next_purge(), Some(17));
    h.insert(key(1), W2, 2, 3, 8);
    h.dispose(key(1), W2, 4, 12); // disposed again: due at 22, not 17
    assert_eq!(h.next_purge(), Some(22));
    assert_eq!(h.purge_expired(21), 0);
    assert_eq!(h.purge_expired(22), 1);
}

#[test]
fn inputs_purge_what_is_due() {
    let mut h = with_lifecycle(None, Some(10));
    h.insert(key(1), W1, 1, 0, 0);
    h.dispose(key(1), W1, 1, 1);
    // Any input at or after the deadline purges first: here an insert of another key.
    h.insert(key(2), W1, 2, 20, 20);
    assert_eq!(h.lookup_instance(&key(1)), None);
    assert_eq!(h.autopurged(), 1);
    // A dispose of an unknown key creates it in the disposed state and schedules it too.
    h.dispose(key(3), W1, 21, 21);
    assert_eq!(h.next_purge(), Some(31));
    h.unregister(key(2), W1, 40, 40);
    assert_eq!(h.lookup_instance(&key(3)), None);
}

#[test]
fn taken_instances_leave_the_purge_queue() {
    let mut h = with_lifecycle(None, Some(10));
    for k in 0..100 {
        h.insert(key(k), W1, k, 0, 0);
        h.dispose(key(k), W1, 1, 1);
        h.unregister(key(k), W1, 1, 1);
    }
    assert_eq!(h.next_purge(), Some(11));
    h.take(UNLIMITED, StateMasks::ANY);
    assert_eq!(h.instance_count(), 0);
    assert_eq!(h.next_purge(), None, "reclaimed instances are unscheduled");
    assert_eq!(h.purge_expired(i64::MAX), 0);
    assert_eq!(h.autopurged(), 0);
}

/// The purge clock of `delays_are_measured_on_the_purge_clock_not_on_wall_clock_times`.
static MONO: std::sync::atomic::AtomicI64 = std::sync::atomic::AtomicI64::new(0);

fn mono() -> i64 {
    MONO.load(std::sync::atomic::Ordering::SeqCst)
}

/// With a monotonic purge clock (as a DataReader's cache has), the wall-clock reception times
/// the state changes come with no longer decide the delays: a wall clock stepped an hour
/// forward purges nothing early, one stepped an hour back delays nothing.
#[test]
fn delays_are_measured_on_the_purge_clock_not_on_wall_clock_times() {
    use std::sync::atomic::Ordering::SeqCst;
    const S: i64 = 1_000_000_000;
    let wall = 1_700_000_000 * S;
    let mut h = with_lifecycle(Some(10 * S as u64), Some(10 * S as u64));
    MONO.store(5 * S, SeqCst);
    h.set_purge_clock(mono);
    h.insert(key(1), W1, 1, wall, wall);
    h.dispose(key(1), W1, wall, wall);
    h.insert(key(2), W2, 2, wall, wall);
    assert_eq!(
        h.next_purge(),
        Some(15 * S),
        "the delay counts from the purge clock"
    );

    // The wall clock steps an hour forward: the next input's reception time is far past the
    // delay, yet only 1 s passed.
    MONO.store(6 * S, SeqCst);
    h.insert(key(3), W1, 3, wall + 3600 * S, wall + 3600 * S);
    assert_eq!(h.purge_expired(mono()), 0);
    assert_eq!(h.instance_count(), 3, "nothing purged early");

    // Then an hour back: key 2 loses its writer at a reception time before key 1's dispose.
    h.unregister(key(2), W2, wall - 3600 * S, wall - 3600 * S);
    MONO.store(15 * S, SeqCst);
    assert_eq!(h.purge_expired(mono()), 1, "key 1, 10 s after its dispose");
    assert_eq!(h.lookup_instance(&key(1)), None);
    assert!(h.lookup_instance(&key(2)).is_some());
    MONO.store(16 * S, SeqCst);
    assert_eq!(
        h.purge_expired(mono()),
        1,
        "key 2, 10 s after it lost its writer"
    );
    assert_eq!(h.lookup_instance(&key(2)), None);
    assert!(h.lookup_instance(&key(3)).is_some());
}
