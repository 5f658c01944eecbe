//! Fuzzes the loan pool's reader side: pool contents and the references readers are sent are
//! untrusted (any process of the same user can write them).
//!
//! Odd first byte: the rest is a raw pool image, which `Pool::attach` must validate (or
//! refuse). Even: a valid pool of a geometry taken from the next bytes, whose chunk headers and
//! reader slots are then overwritten with the rest of the input. Either way, references decoded
//! from the input are acquired and released against it, and the writer's allocator runs over
//! it: nothing may panic, loop without bound, or touch memory outside the image, and a chunk
//! handed out by the allocator is never one a reader holds.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tessera::transport::shm_pool::{
    reader_tag, ChunkAlloc, Holds, LoanRef, Pool, PoolGeometry, POOL_HEADER,
};
use tessera::transport::shm_ring::{Owner, Region};

/// Where the reader slots start: what lies before is the geometry, validated on attach.
const SHARED_WORDS: usize = 1024;

fn pool_from(data: &[u8]) -> Option<(Pool, &[u8])> {
    let (&mode, rest) = data.split_first()?;
    if mode & 1 == 1 {
        let (image, refs) = rest.split_at_checked(rest.len().min(POOL_HEADER + 4096))?;
        return Pool::attach(Region::from_bytes(image))
            .ok()
            .map(|p| (p, refs));
    }
    let (geo_bytes, scribble) = rest.split_at_checked(3)?;
    let chunks = 1 + u32::from(geo_bytes[0] % 8);
    let payload = usize::from(u16::from_le_bytes([geo_bytes[1], geo_bytes[2]]) % 512);
    let geo = PoolGeometry::new(chunks, payload, 8)?;
    let pool = Pool::init(Region::heap(geo.total_len()), geo, Owner::default(), 1, 99).ok()?;
    let mut image = vec![0u8; geo.total_len()];
    pool.copy_to(&mut image);
    let n = scribble.len().min(image.len() - SHARED_WORDS);
    image[SHARED_WORDS..SHARED_WORDS + n].copy_from_slice(&scribble[..n]);
    let pool = Pool::attach(Region::from_bytes(&image)).ok()?;
    Some((pool, scribble))
}

fuzz_target!(|data: &[u8]| {
    let Some((pool, refs)) = pool_from(data) else {
        return;
    };
    let size = pool.geometry().payload();
    let layout = pool.layout();
    let mut holds = Holds::default();
    let slot = pool.register_reader(reader_tag(1, 1));
    let mut held = Vec::new();
    if let Some(slot) = slot {
        for chunk in refs.chunks(LoanRef::LEN).take(64) {
            let Some(r) = LoanRef::decode(chunk) else {
                break;
            };
            if holds.acquire(&pool, slot, &r, size, layout).is_ok() {
                assert!(r.chunk < pool.geometry().chunks());
                // Read the value where it lies, as a loaned sample does.
                let p = pool.payload_ptr(r.chunk);
                // SAFETY: `payload_ptr` checked the chunk's `size` bytes are in the image.
                let bytes = unsafe { std::slice::from_raw_parts(p.as_ptr(), size) };
                std::hint::black_box(bytes.iter().fold(0u8, |a, b| a ^ b));
                held.push(r.chunk);
            }
        }
    }
    // The writer's allocator over the same (scribbled) pool never hands out a held chunk.
    let mut alloc = ChunkAlloc::new(pool.geometry().chunks());
    while let Some(c) = alloc.loan(&pool) {
        assert!(!held.contains(&c), "chunk {c} handed out while held");
        let r = alloc.publish(&pool, c);
        assert_eq!(r.chunk, c);
    }
    alloc.clear_dead_readers(&pool, |_| false);
    if let Some(slot) = slot {
        for c in held {
            holds.release(&pool, slot, c);
        }
    }
    let _ = (pool.owner(), pool.is_closed());
});
