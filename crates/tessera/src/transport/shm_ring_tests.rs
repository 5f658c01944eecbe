//! The ring on private memory: order, fullness, many writers, stalled and scribbled slots.

use super::*;
use std::sync::Arc;

const OWNER: Owner = Owner {
    pid: 1,
    start_time: 2,
    pid_ns: 3,
    host: 4,
    domain: 5,
};

fn ring(slots: usize, max: usize) -> Ring {
    let geo = Geometry::for_size(slots * (max + SLOT_HEADER).next_multiple_of(64), max).unwrap();
    assert_eq!(geo.slot_count() as usize, slots);
    Ring::init(Region::heap(geo.total_len()), geo, OWNER).unwrap()
}

fn take(c: &mut Consumer, r: &Ring, stats: &RingStats) -> Option<Vec<u8>> {
    let mut buf = vec![0u8; r.geometry().capacity()];
    match c.poll(r, &mut buf, stats, Instant::now()) {
        Polled::Datagram(n) => Some(buf[..n].to_vec()),
        _ => None,
    }
}

/// Byte offset of slot `i`'s sequence word, for scribbling.
fn slot_off(r: &Ring, i: u64) -> usize {
    r.geo.slot_offset(i)
}

#[test]
fn geometry_rounds_down_to_a_power_of_two_and_refuses_nonsense() {
    let g = Geometry::for_size(8 << 20, 65472).unwrap();
    assert_eq!(g.slot_count(), 128);
    assert_eq!(g.capacity(), 65520);
    assert_eq!(g.total_len(), (8 << 20) + HEADER_SIZE);
    assert_eq!(
        Geometry::for_size((8 << 20) - 1, 65472)
            .unwrap()
            .slot_count(),
        64
    );
    // Too small for even two slots still gives two (the configured size is a budget, and two
    // slots are the least a ring can work with).
    assert_eq!(Geometry::for_size(0, 1000).unwrap().slot_count(), 2);
    assert!(Geometry::for_size(1 << 20, 64 << 20).is_none());
}

#[test]
fn datagrams_come_out_in_order_and_a_full_ring_refuses() {
    let r = ring(4, 100);
    let stats = RingStats::default();
    let mut c = Consumer::new(Duration::from_secs(1));
    assert_eq!(
        c.poll(&r, &mut [0; 128], &stats, Instant::now()),
        Polled::Empty
    );
    for i in 0..4u8 {
        assert!(matches!(r.push(&[i; 10]), Pushed::Sent { .. }));
    }
    assert_eq!(r.push(b"x"), Pushed::Full);
    assert_eq!(r.push(&[0; 200]), Pushed::TooLarge);
    for i in 0..4u8 {
        assert_eq!(take(&mut c, &r, &stats).unwrap(), vec![i; 10]);
    }
    assert!(take(&mut c, &r, &stats).is_none());
    // Wraps around for many laps.
    for i in 0..1000u32 {
        assert!(matches!(r.push(&i.to_le_bytes()), Pushed::Sent { .. }));
        assert_eq!(take(&mut c, &r, &stats).unwrap(), i.to_le_bytes());
    }
    assert_eq!(stats.datagrams.load(Ordering::Relaxed), 1004);
}

#[test]
fn attach_sees_the_owner_and_geometry_and_refuses_bad_headers() {
    let r = ring(8, 256);
    assert_eq!(r.owner(), OWNER);
    let mut good = vec![0u8; r.geometry().total_len()];
    r.copy_to(&mut good);
    let a = Ring::attach(Region::from_bytes(&good)).unwrap();
    assert_eq!(a.geometry(), r.geometry());
    assert_eq!(a.owner(), OWNER);
    let bad = |off: usize, val: &[u8]| {
        let mut v = good.clone();
        v[off..off + val.len()].copy_from_slice(val);
        Ring::attach(Region::from_bytes(&v)).unwrap_err()
    };
    assert_eq!(bad(0, b"NOTASEGM"), SegmentError::BadMagic);
    assert_eq!(bad(8, &7u32.to_ne_bytes()), SegmentError::Version(7));
    assert_eq!(bad(12, &64u32.to_ne_bytes()), SegmentError::Geometry);
    assert_eq!(bad(16, &3u32.to_ne_bytes()), SegmentError::Geometry);
    assert_eq!(bad(16, &(1u32 << 30).to_ne_bytes()), SegmentError::Geometry);
    assert_eq!(bad(20, &100u32.to_ne_bytes()), SegmentError::Geometry);
    // A slot count larger than the mapping holds.
    assert_eq!(bad(16, &16u32.to_ne_bytes()), SegmentError::TooSmall);
    assert_eq!(
        Ring::attach(Region::from_bytes(&good[..100])).unwrap_err(),
        SegmentError::TooSmall
    );
}

#[test]
fn many_writers_lose_nothing_and_keep_each_writers_order() {
    let r = Arc::new(ring(16, 64));
    let writers: Vec<_> = (0..4u8)
        .map(|w| {
            let r = r.clone();
            std::thread::spawn(move || {
                for i in 0..5000u32 {
                    let mut msg = [w; 5];
                    msg[1..].copy_from_slice(&i.to_le_bytes());
                    while r.push(&msg) == Pushed::Full {
                        std::thread::yield_now();
                    }
                }
            })
        })
        .collect();
    let stats = RingStats::default();
    let mut c = Consumer::new(Duration::from_secs(5));
    let mut next = [0u32; 4];
    let deadline = Instant::now() + Duration::from_secs(30);
    while next.iter().sum::<u32>() < 20_000 {
        assert!(Instant::now() < deadline, "stuck at {next:?}");
        match take(&mut c, &r, &stats) {
            Some(m) => {
                let w = m[0] as usize;
                let i = u32::from_le_bytes(m[1..5].try_into().unwrap());
                assert_eq!(i, next[w], "writer {w} out of order");
                next[w] += 1;
            }
            None => std::thread::yield_now(),
        }
    }
    for w in writers {
        w.join().unwrap();
    }
    assert_eq!(stats.skipped.load(Ordering::Relaxed), 0);
    assert_eq!(stats.bad_length.load(Ordering::Relaxed), 0);
}

/// A writer that claimed a slot and died (simulated: head advanced, slot never committed) holds
/// the reader up for the stall timeout only; later datagrams then flow, and the ring keeps
/// going round.
#[test]
fn a_slot_claimed_by_a_dead_writer_is_skipped_after_the_stall_timeout() {
    let r = ring(4, 64);
    let stats = RingStats::default();
    let timeout = Duration::from_millis(50);
    let mut c = Consumer::new(timeout);
    // The dead writer's claim.
    r.head().fetch_add(1, Ordering::SeqCst);
    assert!(matches!(r.push(b"after"), Pushed::Sent { .. }));
    let t0 = Instant::now();
    // A first look at the slot does not read `head` (EMPTY_RECHECK): it looks empty.
    assert_eq!(c.poll(&r, &mut [0; 128], &stats, t0), Polled::Empty);
    // `wait` looks at `head`, finds the claim, and sleeps (no busy loop) but not past the
    // timeout.
    c.wait(&r, Duration::from_secs(5), t0, &AtomicBool::new(false));
    let waited = t0.elapsed();
    assert!(
        waited >= Duration::from_millis(40),
        "did not sleep: {waited:?}"
    );
    assert!(
        waited < Duration::from_secs(2),
        "slept past the stall timeout: {waited:?}"
    );
    assert_eq!(
        c.poll(&r, &mut [0; 128], &stats, t0 + timeout),
        Polled::Dropped
    );
    assert_eq!(stats.skipped.load(Ordering::Relaxed), 1);
    assert_eq!(take(&mut c, &r, &stats).unwrap(), b"after");
    for i in 0..20u8 {
        assert!(matches!(r.push(&[i]), Pushed::Sent { .. }));
        assert_eq!(take(&mut c, &r, &stats).unwrap(), [i]);
    }
}

/// A reader that finds the slot at its position empty does not look at `head` (the line every
/// claim writes) until the slot has looked empty for `EMPTY_RECHECK`; a claim is then seen as a
/// stall, and a commit meanwhile is taken as usual.
#[test]
fn a_claim_is_looked_for_only_once_the_slot_has_looked_empty_for_a_while() {
    let r = ring(4, 64);
    let stats = RingStats::default();
    let mut c = Consumer::new(Duration::from_secs(5));
    let t0 = Instant::now();
    assert_eq!(c.poll(&r, &mut [0; 128], &stats, t0), Polled::Empty);
    // A writer claims position 0 and is still copying.
    let pos = r.head().fetch_add(1, Ordering::SeqCst);
    assert_eq!(c.poll(&r, &mut [0; 128], &stats, t0), Polled::Empty);
    let later = t0 + EMPTY_RECHECK;
    assert_eq!(c.poll(&r, &mut [0; 128], &stats, later), Polled::Stalled);
    // Its commit, as `push` makes it: taken at once.
    r.seq(pos).store(pos + 1, Ordering::Release);
    assert!(matches!(
        c.poll(&r, &mut [0; 128], &stats, later),
        Polled::Datagram(_)
    ));
    // At the next position the wait starts again from the first look.
    assert_eq!(c.poll(&r, &mut [0; 128], &stats, later), Polled::Empty);
    r.head().fetch_add(1, Ordering::SeqCst);
    assert_eq!(c.poll(&r, &mut [0; 128], &stats, later), Polled::Empty);
    assert_eq!(
        c.poll(&r, &mut [0; 128], &stats, later + EMPTY_RECHECK),
        Polled::Stalled
    );
    assert_eq!(stats.skipped.load(Ordering::Relaxed), 0);
}

/// A writer that was only slow (claimed, then committed after the reader skipped its slot)
/// learns that its datagram was lost, and does not disturb the ring.
#[test]
fn a_writer_slower_than_the_stall_timeout_loses_its_datagram_only() {
    let r = ring(4, 64);
    let stats = RingStats::default();
    let mut c = Consumer::new(Duration::ZERO);
    let pos = r.head().fetch_add(1, Ordering::SeqCst);
    let now = Instant::now();
    assert_eq!(c.poll(&r, &mut [0; 128], &stats, now), Polled::Dropped);
    // The late commit, as `push` makes it.
    assert!(r
        .seq(pos)
        .compare_exchange(pos, pos + 1, Ordering::Release, Ordering::Relaxed)
        .is_err());
    assert!(matches!(r.push(b"next"), Pushed::Sent { .. }));
    assert_eq!(take(&mut c, &r, &stats).unwrap(), b"next");
}

/// Scribbled lengths and sequence words are counted drops; nothing panics and the ring goes on.
#[test]
fn scribbled_slots_are_dropped_and_counted() {
    let r = ring(4, 64);
    let stats = RingStats::default();
    let mut c = Consumer::new(Duration::ZERO);
    let cap = r.geometry().capacity() as u32;
    // A committed slot whose length is past the slot.
    assert!(matches!(r.push(b"one"), Pushed::Sent { .. }));
    r.region
        .u32_at(slot_off(&r, 0) + 8)
        .store(cap + 1, Ordering::Relaxed);
    assert_eq!(
        c.poll(&r, &mut [0; 128], &stats, Instant::now()),
        Polled::Dropped
    );
    assert_eq!(stats.bad_length.load(Ordering::Relaxed), 1);
    // A length of u32::MAX, and a buffer shorter than the slot.
    assert!(matches!(r.push(b"two"), Pushed::Sent { .. }));
    r.region
        .u32_at(slot_off(&r, 1) + 8)
        .store(u32::MAX, Ordering::Relaxed);
    assert_eq!(
        c.poll(&r, &mut [0; 128], &stats, Instant::now()),
        Polled::Dropped
    );
    assert!(matches!(r.push(b"three"), Pushed::Sent { .. }));
    assert_eq!(
        c.poll(&r, &mut [0; 2], &stats, Instant::now()),
        Polled::Dropped
    );
    assert_eq!(stats.bad_length.load(Ordering::Relaxed), 3);
    // A sequence word the protocol never writes: skipped (timeout zero here).
    r.seq(3).store(0xdead_beef, Ordering::Relaxed);
    assert_eq!(
        c.poll(&r, &mut [0; 128], &stats, Instant::now()),
        Polled::Dropped
    );
    assert_eq!(stats.skipped.load(Ordering::Relaxed), 1);
    // A head far in the past or future: writers get Full (bounded), never a hang or a panic.
    r.head().store(u64::MAX - 1, Ordering::Relaxed);
    assert_eq!(r.push(b"x"), Pushed::Full);
    r.head().store(4, Ordering::Relaxed);
    assert!(matches!(r.push(b"four"), Pushed::Sent { .. }));
    assert_eq!(take(&mut c, &r, &stats).unwrap(), b"four");
}

/// A sleeping reader is woken by a writer's commit, long before its timeout.
#[test]
fn a_commit_wakes_the_sleeping_reader() {
    let r = Arc::new(ring(4, 64));
    let stats = RingStats::default();
    let mut c = Consumer::new(Duration::from_secs(1));
    let w = {
        let r = r.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            r.push(b"wake")
        })
    };
    let t0 = Instant::now();
    let got = loop {
        if let Some(m) = take(&mut c, &r, &stats) {
            break m;
        }
        c.wait(
            &r,
            Duration::from_secs(10),
            Instant::now(),
            &AtomicBool::new(false),
        );
        assert!(t0.elapsed() < Duration::from_secs(5), "never woken");
    };
    assert_eq!(got, b"wake");
    assert_eq!(
        w.join().unwrap(),
        Pushed::Sent {
            woke: true,
            deferred: false
        }
    );
}

/// A stop request raised (and woken) just before the reader goes to sleep is not lost: the
/// reader returns at once instead of sleeping its whole timeout.
#[test]
fn an_interrupt_before_the_sleep_is_not_lost() {
    let r = ring(4, 64);
    let mut c = Consumer::new(Duration::from_secs(1));
    let stop = AtomicBool::new(true);
    r.wake();
    let t0 = Instant::now();
    c.wait(&r, Duration::from_secs(5), t0, &stop);
    assert!(
        t0.elapsed() < Duration::from_secs(1),
        "slept {:?}",
        t0.elapsed()
    );
}

/// Waits (bounded) until the reader thread has raised its sleeping flag.
fn until_asleep(r: &Ring) {
    let t0 = Instant::now();
    while r.sleeping().load(Ordering::SeqCst) == 0 {
        assert!(
            t0.elapsed() < Duration::from_secs(5),
            "the reader never slept"
        );
        std::thread::yield_now();
    }
}

/// A gathering reader is not woken by deferrable writes (it takes them when its window ends),
/// but a plain (marked) write wakes it at once.
#[test]
fn a_gathering_reader_is_left_to_wake_by_itself_except_for_marked_writes() {
    let r = Arc::new(ring(8, 64));
    let window = MAX_GATHER - Duration::from_millis(2);
    let reader = {
        let r = r.clone();
        std::thread::spawn(move || {
            let mut c = Consumer::new(Duration::from_secs(1));
            let t0 = Instant::now();
            c.gather(&r, window, t0, &AtomicBool::new(false));
            t0.elapsed()
        })
    };
    until_asleep(&r);
    assert_eq!(
        r.push_deferrable(b"bulk", true),
        Pushed::Sent {
            woke: false,
            deferred: true
        }
    );
    let slept = reader.join().unwrap();
    assert!(
        slept >= window - Duration::from_millis(5),
        "woken after {slept:?}"
    );

    let reader = {
        let r = r.clone();
        std::thread::spawn(move || {
            let mut c = Consumer::at(1, Duration::from_secs(1));
            let t0 = Instant::now();
            c.gather(&r, Duration::from_secs(5), t0, &AtomicBool::new(false));
            t0.elapsed()
        })
    };
    until_asleep(&r);
    // Not deferrable (a TRANSPORT_PRIORITY): it wakes the gathering reader.
    assert_eq!(
        r.push_deferrable(b"urgent", false),
        Pushed::Sent {
            woke: true,
            deferred: false
        }
    );
    assert!(reader.join().unwrap() < Duration::from_secs(4));
}

/// A plain sleep says nothing about when the reader wakes, so every write wakes it; and a
/// scribbled wake-up time further ahead than [`MAX_GATHER`] is not trusted.
#[test]
fn deferrable_writes_wake_a_plain_sleeper_and_distrust_a_far_wake_up_time() {
    let r = Arc::new(ring(8, 64));
    let reader = {
        let r = r.clone();
        std::thread::spawn(move || {
            let mut c = Consumer::new(Duration::from_secs(1));
            c.wait(
                &r,
                Duration::from_secs(5),
                Instant::now(),
                &AtomicBool::new(false),
            );
        })
    };
    until_asleep(&r);
    assert!(matches!(
        r.push_deferrable(b"a", true),
        Pushed::Sent { woke: true, .. }
    ));
    reader.join().unwrap();
    // Scribbled: asleep, "wakes" in an hour.
    r.sleeping().store(1, Ordering::SeqCst);
    r.wake_by()
        .store(monotonic_ns() + 3_600_000_000_000, Ordering::SeqCst);
    assert!(matches!(
        r.push_deferrable(b"b", true),
        Pushed::Sent { woke: true, .. }
    ));
    // The wake-up lowered the flag: the next write does not wake again.
    assert!(matches!(
        r.push_deferrable(b"c", true),
        Pushed::Sent { woke: false, .. }
    ));
    // Overdue (the reader should be up already): woken too.
    r.sleeping().store(1, Ordering::SeqCst);
    r.wake_by().store(monotonic_ns() - 1, Ordering::SeqCst);
    assert!(matches!(
        r.push_deferrable(b"d", true),
        Pushed::Sent { woke: true, .. }
    ));
}
