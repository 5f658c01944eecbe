//! Fuzzes the shared-memory segment reader: segment contents are untrusted (any process of the
//! same user can write them).
//!
//! Odd first byte: the rest is a raw segment image, which `Ring::attach` must validate (or
//! refuse) before any slot is read. Even: a valid ring of a geometry taken from the next bytes,
//! whose shared words and slots (everything from the head on) are then overwritten with the
//! rest of the input. Either way, reading every slot, writing into the ring and reading again
//! must never panic, loop without bound, or touch memory outside the image.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};
use tessera::transport::shm_ring::{
    Consumer, Geometry, Owner, Polled, Region, Ring, RingStats, HEADER_SIZE,
};

/// Byte offset of the head word: what lies before it is the geometry, validated on attach.
const SHARED_WORDS: usize = 128;

fn ring_from(data: &[u8]) -> Option<(Ring, u64)> {
    let (&mode, rest) = data.split_first()?;
    if mode & 1 == 1 {
        let pos = u64::from(*rest.first()?);
        return Ring::attach(Region::from_bytes(rest))
            .ok()
            .map(|r| (r, pos));
    }
    let (geo_bytes, scribble) = rest.split_at_checked(3)?;
    let slots = 2usize << (geo_bytes[0] % 6);
    let max = usize::from(u16::from_le_bytes([geo_bytes[1], geo_bytes[2]]) % 2048);
    let geo = Geometry::for_size(slots * (max + 16).next_multiple_of(64), max)?;
    let ring = Ring::init(Region::heap(geo.total_len()), geo, Owner::default()).ok()?;
    // Rebuild it as an image with the input written over its shared part.
    let mut image = vec![0u8; geo.total_len()];
    ring.copy_to(&mut image);
    let n = scribble.len().min(image.len() - SHARED_WORDS);
    image[SHARED_WORDS..SHARED_WORDS + n].copy_from_slice(&scribble[..n]);
    let pos = u64::from(scribble.first().copied().unwrap_or(0));
    Ring::attach(Region::from_bytes(&image))
        .ok()
        .map(|r| (r, pos))
}

fuzz_target!(|data: &[u8]| {
    let Some((ring, pos)) = ring_from(data) else {
        return;
    };
    assert!(ring.geometry().total_len() >= HEADER_SIZE);
    let stats = RingStats::default();
    let mut buf = vec![0u8; ring.geometry().capacity()];
    let laps = 2 * ring.geometry().slot_count() as usize + 4;
    let now = Instant::now();
    for start in [pos, 0] {
        let mut c = Consumer::at(start, Duration::ZERO);
        for _ in 0..laps {
            match c.poll(&ring, &mut buf, &stats, now) {
                Polled::Datagram(n) => assert!(n <= buf.len()),
                Polled::Empty => break,
                Polled::Stalled | Polled::Dropped => {}
            }
        }
        for i in 0..4u8 {
            let _ = ring.push(&[i; 7]);
        }
        c.wait(&ring, Duration::ZERO, now, &AtomicBool::new(false));
        for _ in 0..laps {
            if c.poll(&ring, &mut buf, &stats, now) == Polled::Empty {
                break;
            }
        }
    }
    let _ = (ring.owner(), ring.is_closed());
});
