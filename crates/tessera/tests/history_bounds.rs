//! A peer that writes ever-new keys and disposes them cannot grow a reader's memory for ever:
//! instance count and live heap bytes stay bounded (counting allocator, per thread).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::time::Duration;

use tessera::history::*;

struct Counting;

thread_local! {
    /// Live heap bytes allocated by this thread (can go negative if freed elsewhere).
    static LIVE: Cell<i64> = const { Cell::new(0) };
}

fn add(n: i64) {
    let _ = LIVE.try_with(|c| c.set(c.get() + n));
}

// SAFETY: forwards to the system allocator unchanged; only counts bytes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        add(layout.size() as i64);
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        add(-(layout.size() as i64));
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        add(new_size as i64 - layout.size() as i64);
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn live() -> i64 {
    LIVE.with(Cell::get)
}

const W: WriterGuid = [7; 16];

/// The heap after many rounds is within twice what it was after the first (tables settle at
/// their working size; a leak of one instance per key would be tens of MiB here).
fn assert_bounded(first: i64, last: i64) {
    assert!(
        last <= 2 * first.max(4096),
        "live bytes grew from {first} after one round to {last}"
    );
}

fn key(n: u64) -> KeyHash {
    let mut k = [0; 16];
    k[..8].copy_from_slice(&n.to_be_bytes());
    k
}

/// Writes, disposes and unregisters `rounds × per_round` fresh keys, calling `after_round` after each round;
/// returns the live bytes after the first round and the highest instance count seen.
fn churn(
    h: &mut History<Vec<u8>>,
    rounds: u64,
    per_round: u64,
    mut after_round: impl FnMut(&mut History<Vec<u8>>, u64),
) -> (i64, i64, usize) {
    let mut first = 0;
    let mut peak = 0;
    let mut n = 0u64;
    for round in 0..rounds {
        for _ in 0..per_round {
            let t = n as i64;
            h.insert(key(n), W, vec![n as u8; 64], t, t);
            h.dispose(key(n), W, t, t);
            h.unregister(key(n), W, t, t);
            n += 1;
            peak = peak.max(h.instance_count());
        }
        after_round(h, n);
        if round == 0 {
            first = live();
        }
    }
    (first, live(), peak)
}

#[test]
fn disposed_keys_are_freed_by_take() {
    let mut h: History<Vec<u8>> = History::new(HistoryConfig::default());
    let mut out = Vec::with_capacity(256);
    let base = live();
    let (first, last, peak) = churn(&mut h, 400, 200, |h, _| {
        out.clear();
        h.take_into(&mut out, UNLIMITED);
        out.clear();
    });
    // Each key is taken once disposed; nothing should survive the take.
    assert_eq!(h.instance_count(), 0);
    assert!(peak <= 200, "peak {peak}");
    assert_bounded(first - base, last - base);
}

#[test]
fn a_reader_that_never_takes_is_capped_by_max_instances() {
    const CAP: usize = 1000;
    let mut h: History<Vec<u8>> = History::new(HistoryConfig {
        limits: ResourceLimits {
            max_instances: Some(CAP),
            ..Default::default()
        },
        ..Default::default()
    });
    let mut rejected = 0;
    let base = live();
    let (first, last, peak) = churn(&mut h, 40, 5_000, |_, _| {});
    assert_eq!(peak, CAP);
    assert_eq!(h.instance_count(), CAP);
    for i in 0..10 {
        if !h.insert(key(u64::MAX - i), W, vec![], 0, 0).is_stored() {
            rejected += 1;
        }
    }
    assert_eq!(rejected, 10, "a full cache refuses new keys");
    // After the first round the cache is full; later rounds allocate nothing that stays.
    assert_bounded(first - base, last - base);
}

#[test]
fn autopurge_keeps_a_reader_that_never_takes_bounded_and_accepting() {
    // Virtual time: one ns per key; disposed instances go after 500 ns.
    let mut h: History<Vec<u8>> = History::new(HistoryConfig {
        lifecycle: Lifecycle {
            autopurge_disposed_samples_delay: Some(Duration::from_nanos(500)),
            ..Default::default()
        },
        limits: ResourceLimits {
            max_instances: Some(1000),
            ..Default::default()
        },
        ..Default::default()
    });
    let base = live();
    let (first, last, peak) = churn(&mut h, 50, 2_000, |h, n| {
        h.purge_expired(n as i64);
    });
    assert!(peak <= 502, "peak {peak}");
    assert_eq!(h.autopurged() as usize + h.instance_count(), 100_000);
    assert_bounded(first - base, last - base);
}
