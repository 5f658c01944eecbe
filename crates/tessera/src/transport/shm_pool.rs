//! The loan pool of one writer: a second kind of shared-memory segment,
//! `/dev/shm/tessera-pool-<domain>-<id>` (0600), holding fixed-size chunks of one
//! [`Plain`](tessera_rtps::cdr::Plain) type. The writer fills a chunk in place and sends its
//! readers a [`LoanRef`] (32 bytes) instead of the sample; readers map the pool and read the
//! value where it lies. One copy in memory, however many readers.
//!
//! # Layout (native byte order)
//! ```text
//! 0    magic "TSRPOOL1" (u64; written last)
//! 8    version u32 | 12 header size u32 (2048) | 16 chunk count u32 | 20 chunk stride u32
//! 24   payload size u32 | 28 payload alignment u32 | 32 layout hash u64
//! 40   owner pid u32 | 44 flags u32 (bit 0: closed) | 48 owner start time u64
//! 56   owner pid namespace inode u64 | 64 host identity u64 | 72 domain u32 | 76 pool id u32
//! 1024 reader slots: 63 × u64 (0: free; else pid << 32 | low 32 bits of its start time)
//! 2048 chunks: stride bytes each = holders u64 | generation u64 | length u32 | pad | payload
//!      (the payload at chunk + 64, so up to 64-byte alignment holds in a page-aligned map)
//! ```
//!
//! # Who holds a chunk
//! `holders` is a bitmask: bit `s` (0..63) for the reader *process* in slot `s` (each process
//! registers once per pool and counts its own holds privately, [`Holds`]); [`WRITER_BIT`]
//! (bit 63) marks a chunk the writer is filling. A mask rather than a count, so that the bits
//! of a reader that died can be cleared ([`ChunkAlloc::clear_dead_readers`]).
//!
//! - The writer reuses a chunk only by a CAS of `holders` from 0 to [`WRITER_BIT`]: no reader
//!   holds it. It then bumps the chunk's generation, fills it, and publishes it (clears the bit)
//!   before sending the reference. Which chunks its history still keeps is the writer's own
//!   private state ([`ChunkAlloc`]): nothing read from the segment can make it hand out a chunk
//!   twice.
//! - A reader sets its bit with a `fetch_or`, then checks that [`WRITER_BIT`] was clear and the
//!   generation is the reference's. Both sides use `SeqCst`, so either the writer's CAS sees
//!   the bit (and leaves the chunk alone) or the reader sees the new generation (and refuses a
//!   stale reference, counted). Dropping the reader's sample clears its bit.
//!
//! # Untrusted contents
//! Geometry, layout hash and pool id are read and validated once, then kept privately. A
//! reference is checked against them (chunk index in range, length equal to the reader's type
//! size, layout hash equal to the reader's type and the pool's). A scribbled segment can make
//! a reader refuse a sample, or see garbage values of its plain type (every bit pattern of a
//! plain type is a valid value), never read outside the mapping. A same-user process can also
//! write into a chunk while a reader looks at it, as with any shared memory; segments are 0600.

use std::collections::{HashMap, VecDeque};
use std::io;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use super::shm::{create_file, map_file, ns_inode, owner_alive, process_start_time};
use super::shm_exit as exit_unlink;
use super::shm_ring::{Owner, OwnerAt, Region, SegmentError};

/// File name prefix of pool segments (beside the receive segments, `tessera-<domain>-<id>`).
pub const POOL_PREFIX: &str = "tessera-pool-";

/// "TSRPOOL1".
pub const POOL_MAGIC: u64 = u64::from_le_bytes(*b"TSRPOOL1");
/// Layout version.
pub const POOL_VERSION: u32 = 1;
/// Bytes before the first chunk.
pub const POOL_HEADER: usize = 2048;
/// Bytes of a chunk before its payload.
pub const CHUNK_HEADER: usize = 64;
/// Reader processes one pool tracks at once.
pub const READER_SLOTS: u32 = 63;
/// The `holders` bit of a chunk the writer is filling.
pub const WRITER_BIT: u64 = 1 << 63;
/// Largest chunk count accepted from a segment.
pub const MAX_CHUNKS: u32 = 1 << 16;
/// Largest payload accepted (a sample of up to 256 MiB).
pub const MAX_PAYLOAD: u32 = 256 << 20;
/// Largest pool accepted.
pub const MAX_POOL: u64 = 4 << 30;
/// Largest payload alignment (chunk payloads sit at 64-byte boundaries).
pub const MAX_ALIGN: u32 = 64;
/// The layout hash of a pool of serialized samples ("TSRCDR01"): its chunks hold CDR of any
/// length up to the chunk's payload size, not values of one plain type.
pub const CDR_LAYOUT: u64 = u64::from_le_bytes(*b"TSRCDR01");

const OFF_MAGIC: usize = 0;
const OFF_CHUNKS: usize = 16;
const OFF_STRIDE: usize = 20;
const OFF_PAYLOAD: usize = 24;
const OFF_ALIGN: usize = 28;
const OFF_LAYOUT: usize = 32;
const OFF_OWNER_PID: usize = 40;
const OFF_FLAGS: usize = 44;
const OFF_OWNER_START: usize = 48;
const OFF_OWNER_PIDNS: usize = 56;
const OFF_HOST: usize = 64;
const OFF_DOMAIN: usize = 72;
const OFF_POOL_ID: usize = 76;
const OFF_READERS: usize = 1024;
const OWNER_AT: OwnerAt = OwnerAt {
    pid: OFF_OWNER_PID,
    start_time: OFF_OWNER_START,
    pid_ns: OFF_OWNER_PIDNS,
    host: OFF_HOST,
    domain: OFF_DOMAIN,
};

const FLAG_CLOSED: u32 = 1;

/// Chunk count, stride, payload size and alignment; kept privately once validated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolGeometry {
    chunks: u32,
    stride: u32,
    payload: u32,
    align: u32,
}

impl PoolGeometry {
    /// `chunks` chunks of a `payload`-byte value aligned to `align`; `None` when out of range
    /// (alignment above [`MAX_ALIGN`] or not a power of two, too many or too large chunks).
    pub fn new(chunks: u32, payload: usize, align: usize) -> Option<PoolGeometry> {
        let stride = (CHUNK_HEADER + payload.max(1)).checked_next_multiple_of(64)?;
        let g = PoolGeometry {
            chunks,
            stride: u32::try_from(stride).ok()?,
            payload: u32::try_from(payload).ok()?,
            align: u32::try_from(align).ok()?,
        };
        g.valid().then_some(g)
    }

    fn valid(&self) -> bool {
        (1..=MAX_CHUNKS).contains(&self.chunks)
            && self.payload <= MAX_PAYLOAD
            && self.align.is_power_of_two()
            && self.align <= MAX_ALIGN
            && self.stride % 64 == 0
            && self.stride as u64 >= CHUNK_HEADER as u64 + self.payload.max(1) as u64
            && self.stride as u64 <= CHUNK_HEADER as u64 + MAX_PAYLOAD as u64 + 64
            && self.total_len() as u64 <= MAX_POOL
    }

    /// Chunks in the pool.
    pub fn chunks(&self) -> u32 {
        self.chunks
    }

    /// Bytes of the value each chunk holds.
    pub fn payload(&self) -> usize {
        self.payload as usize
    }

    /// The segment's size in bytes.
    pub fn total_len(&self) -> usize {
        // At most 2^16 chunks of under 2^29 bytes: no overflow on 64-bit targets.
        POOL_HEADER + self.chunks as usize * self.stride as usize
    }

    fn chunk_offset(&self, i: u32) -> usize {
        POOL_HEADER + i as usize * self.stride as usize
    }
}

/// What a reader is sent instead of a sample: where the value lies and what it must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoanRef {
    /// The DDS domain of the pool (its file name).
    pub domain: u32,
    /// The pool's id (its file name).
    pub pool: u32,
    /// Chunk index.
    pub chunk: u32,
    /// The chunk's generation when the sample was published.
    pub generation: u64,
    /// Bytes of the value.
    pub len: u32,
    /// Layout hash of the value's type ([`tessera_rtps::cdr::Plain::LAYOUT`]).
    pub layout: u64,
}

impl LoanRef {
    /// Encoded size.
    pub const LEN: usize = 32;

    /// Little-endian encoding: pool, chunk, generation, length, domain, layout.
    pub fn encode(&self) -> [u8; LoanRef::LEN] {
        let mut b = [0u8; LoanRef::LEN];
        b[0..4].copy_from_slice(&self.pool.to_le_bytes());
        b[4..8].copy_from_slice(&self.chunk.to_le_bytes());
        b[8..16].copy_from_slice(&self.generation.to_le_bytes());
        b[16..20].copy_from_slice(&self.len.to_le_bytes());
        b[20..24].copy_from_slice(&self.domain.to_le_bytes());
        b[24..32].copy_from_slice(&self.layout.to_le_bytes());
        b
    }

    /// Decodes [`LoanRef::encode`]'s bytes; `None` when too short.
    pub fn decode(b: &[u8]) -> Option<LoanRef> {
        let b: &[u8; LoanRef::LEN] = b.get(..LoanRef::LEN)?.try_into().ok()?;
        let u32_at = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        let u64_at = |i: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&b[i..i + 8]);
            u64::from_le_bytes(w)
        };
        Some(LoanRef {
            pool: u32_at(0),
            chunk: u32_at(4),
            generation: u64_at(8),
            len: u32_at(16),
            domain: u32_at(20),
            layout: u64_at(24),
        })
    }
}

/// Why a reader refused a reference (each is counted by its caller).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    /// Another pool's reference.
    #[error("reference to another pool")]
    WrongPool,
    /// Chunk index beyond the pool.
    #[error("chunk index out of range")]
    ChunkRange,
    /// Length differs from the reader's type or exceeds the chunk.
    #[error("length does not match the type")]
    Length,
    /// Layout hash differs from the reader's type or the pool's.
    #[error("layout hash mismatch")]
    Layout,
    /// The writer has reused the chunk since (or is filling it).
    #[error("stale reference")]
    Stale,
}

/// A pool segment over a [`Region`], geometry, layout hash and id kept privately.
#[derive(Debug)]
pub struct Pool {
    region: Region,
    geo: PoolGeometry,
    layout: u64,
    id: u32,
    domain: u32,
}

impl Pool {
    /// Initialises a fresh pool in `region` (zeroed, at least `geo.total_len()` bytes) for
    /// `owner`, values of layout hash `layout`. The magic is written last.
    pub fn init(
        region: Region,
        geo: PoolGeometry,
        owner: Owner,
        id: u32,
        layout: u64,
    ) -> Result<Pool, SegmentError> {
        if !geo.valid() {
            return Err(SegmentError::Geometry);
        }
        if region.len() < geo.total_len() {
            return Err(SegmentError::TooSmall);
        }
        let p = Pool {
            region,
            geo,
            layout,
            id,
            domain: owner.domain,
        };
        let h = &p.region;
        h.write_prologue(POOL_VERSION, POOL_HEADER);
        h.u32_at(OFF_CHUNKS).store(geo.chunks, Ordering::Relaxed);
        h.u32_at(OFF_STRIDE).store(geo.stride, Ordering::Relaxed);
        h.u32_at(OFF_PAYLOAD).store(geo.payload, Ordering::Relaxed);
        h.u32_at(OFF_ALIGN).store(geo.align, Ordering::Relaxed);
        h.u64_at(OFF_LAYOUT).store(layout, Ordering::Relaxed);
        h.u32_at(OFF_FLAGS).store(0, Ordering::Relaxed);
        OWNER_AT.store(h, &owner);
        h.u32_at(OFF_POOL_ID).store(id, Ordering::Relaxed);
        h.u64_at(OFF_MAGIC).store(POOL_MAGIC, Ordering::Release);
        Ok(p)
    }

    /// Attaches to a pool someone else initialised, validating its header.
    pub fn attach(region: Region) -> Result<Pool, SegmentError> {
        region.check_prologue(POOL_MAGIC, POOL_VERSION, POOL_HEADER)?;
        let geo = PoolGeometry {
            chunks: region.u32_at(OFF_CHUNKS).load(Ordering::Relaxed),
            stride: region.u32_at(OFF_STRIDE).load(Ordering::Relaxed),
            payload: region.u32_at(OFF_PAYLOAD).load(Ordering::Relaxed),
            align: region.u32_at(OFF_ALIGN).load(Ordering::Relaxed),
        };
        if !geo.valid() {
            return Err(SegmentError::Geometry);
        }
        if region.len() < geo.total_len() {
            return Err(SegmentError::TooSmall);
        }
        let layout = region.u64_at(OFF_LAYOUT).load(Ordering::Relaxed);
        let id = region.u32_at(OFF_POOL_ID).load(Ordering::Relaxed);
        let domain = region.u32_at(OFF_DOMAIN).load(Ordering::Relaxed);
        Ok(Pool {
            region,
            geo,
            layout,
            id,
            domain,
        })
    }

    /// The geometry.
    pub fn geometry(&self) -> PoolGeometry {
        self.geo
    }

    /// The layout hash of the values (as validated at attach).
    pub fn layout(&self) -> u64 {
        self.layout
    }

    /// The pool's id.
    pub fn id(&self) -> u32 {
        self.id
    }

    /// The pool's domain (as validated at attach).
    pub fn domain(&self) -> u32 {
        self.domain
    }

    /// The owner recorded in the header (untrusted: for liveness checks only).
    pub fn owner(&self) -> Owner {
        OWNER_AT.load(&self.region)
    }

    /// Marks the pool closed: its writer is going away (readers keep their mappings).
    pub fn close(&self) {
        self.region
            .u32_at(OFF_FLAGS)
            .fetch_or(FLAG_CLOSED, Ordering::Release);
    }

    /// Whether the writer closed the pool.
    pub fn is_closed(&self) -> bool {
        self.region.u32_at(OFF_FLAGS).load(Ordering::Acquire) & FLAG_CLOSED != 0
    }

    fn holders(&self, chunk: u32) -> &AtomicU64 {
        self.region.u64_at(self.geo.chunk_offset(chunk))
    }

    fn generation(&self, chunk: u32) -> &AtomicU64 {
        self.region.u64_at(self.geo.chunk_offset(chunk) + 8)
    }

    fn reader_slot(&self, slot: u32) -> &AtomicU64 {
        self.region.u64_at(OFF_READERS + 8 * slot as usize)
    }

    /// The payload of `chunk` (< `geometry().chunks()`), `geometry().payload()` bytes aligned
    /// to the pool's alignment.
    pub fn payload_ptr(&self, chunk: u32) -> NonNull<u8> {
        assert!(chunk < self.geo.chunks, "chunk {chunk} outside the pool");
        self.region.ptr_at(
            self.geo.chunk_offset(chunk) + CHUNK_HEADER,
            self.geo.payload(),
        )
    }

    /// Takes a free reader slot for the process `tag` (see [`reader_tag`]); `None` when all
    /// [`READER_SLOTS`] are taken.
    pub fn register_reader(&self, tag: u64) -> Option<u32> {
        if tag == 0 {
            return None;
        }
        (0..READER_SLOTS).find(|&s| {
            self.reader_slot(s)
                .compare_exchange(0, tag, Ordering::SeqCst, Ordering::Relaxed)
                .is_ok()
        })
    }

    /// Gives back a slot: clears its bit in every chunk, then frees it.
    pub fn unregister_reader(&self, slot: u32, tag: u64) {
        if slot >= READER_SLOTS {
            return;
        }
        let bit = 1u64 << slot;
        for c in 0..self.geo.chunks {
            self.holders(c).fetch_and(!bit, Ordering::SeqCst);
        }
        let _ =
            self.reader_slot(slot)
                .compare_exchange(tag, 0, Ordering::SeqCst, Ordering::Relaxed);
    }

    /// Reader side: takes hold of the chunk `r` names for the reader in `slot`, whose type is
    /// `size` bytes with layout hash `layout` ([`CDR_LAYOUT`]: serialized bytes of any length
    /// up to the chunk's, `size` unused). On success the reader's bit is set; the caller
    /// reads the value at [`Pool::payload_ptr`] and later calls [`Pool::release`].
    /// `already_held`: this process holds the chunk already (its bit stays set either way).
    pub fn acquire(
        &self,
        r: &LoanRef,
        slot: u32,
        size: usize,
        layout: u64,
        already_held: bool,
    ) -> Result<(), Refused> {
        if r.pool != self.id || r.domain != self.domain {
            return Err(Refused::WrongPool);
        }
        if r.chunk >= self.geo.chunks || slot >= READER_SLOTS {
            return Err(Refused::ChunkRange);
        }
        // Generations start at 1: a chunk never published has none a reference may name.
        if r.generation == 0 {
            return Err(Refused::Stale);
        }
        let length_ok = if layout == CDR_LAYOUT {
            r.len as usize <= self.geo.payload()
        } else {
            r.len as usize == size && size == self.geo.payload()
        };
        if !length_ok {
            return Err(Refused::Length);
        }
        if r.layout != layout || layout != self.layout {
            return Err(Refused::Layout);
        }
        let bit = 1u64 << slot;
        let prev = self.holders(r.chunk).fetch_or(bit, Ordering::SeqCst);
        let generation = self.generation(r.chunk).load(Ordering::SeqCst);
        if prev & WRITER_BIT != 0 || generation != r.generation {
            if !already_held {
                self.holders(r.chunk).fetch_and(!bit, Ordering::SeqCst);
            }
            return Err(Refused::Stale);
        }
        Ok(())
    }

    /// Reader side: lets go of `chunk` (the process's last hold of it).
    pub fn release(&self, chunk: u32, slot: u32) {
        if chunk < self.geo.chunks && slot < READER_SLOTS {
            self.holders(chunk)
                .fetch_and(!(1u64 << slot), Ordering::SeqCst);
        }
    }

    /// Appends the first `len` bytes of `chunk`'s payload to `out` (a serialized sample the
    /// caller holds; `len` was checked against the payload size by [`Pool::acquire`]).
    pub fn append_payload(&self, chunk: u32, len: usize, out: &mut Vec<u8>) {
        assert!(
            chunk < self.geo.chunks && len <= self.geo.payload(),
            "chunk {chunk} outside the pool"
        );
        self.region
            .append_to(self.geo.chunk_offset(chunk) + CHUNK_HEADER, len, out);
    }

    /// Copies `bytes` into `chunk`'s payload (a chunk the caller claimed for filling).
    pub fn fill(&self, chunk: u32, bytes: &[u8]) {
        assert!(
            chunk < self.geo.chunks && bytes.len() <= self.geo.payload(),
            "chunk {chunk} outside the pool"
        );
        self.region
            .write(self.geo.chunk_offset(chunk) + CHUNK_HEADER, bytes);
    }

    /// Copies the segment's bytes into `out` (as much as fits): an image for tests and fuzzing.
    pub fn copy_to(&self, out: &mut [u8]) {
        let n = out.len().min(self.region.len());
        self.region.read(0, &mut out[..n]);
    }
}

/// The tag a reader process registers under: its pid and the low 32 bits of its start time,
/// in one word so that a slot is claimed (and judged) atomically.
pub fn reader_tag(pid: u32, start_time: u64) -> u64 {
    (u64::from(pid) << 32) | (start_time & 0xffff_ffff)
}

/// The writer's private bookkeeping of its pool: which chunks its history keeps and the
/// generation each chunk was last given. Nothing here is read back from the segment, so a
/// scribbled segment cannot make the writer hand out a chunk twice; at worst a forged reader
/// bit keeps a chunk busy until its slot's process is found dead.
#[derive(Debug)]
pub struct ChunkAlloc {
    generations: Vec<u64>,
    /// Chunks the writer does not hold (candidates: readers may still hold some).
    free: VecDeque<u32>,
    held: Vec<bool>,
}

impl ChunkAlloc {
    /// Bookkeeping for a fresh pool of `chunks` chunks.
    pub fn new(chunks: u32) -> ChunkAlloc {
        ChunkAlloc {
            generations: vec![0; chunks as usize],
            free: (0..chunks).collect(),
            held: vec![false; chunks as usize],
        }
    }

    /// Chunks the writer holds (loaned out or kept by its history).
    pub fn in_use(&self) -> usize {
        self.held.iter().filter(|h| **h).count()
    }

    /// A chunk no one holds, claimed for filling (its `holders` is [`WRITER_BIT`], its
    /// generation bumped); `None` when every chunk is held by the writer or some reader.
    pub fn loan(&mut self, pool: &Pool) -> Option<u32> {
        for _ in 0..self.free.len() {
            let c = self.free.pop_front()?;
            if self.claim(pool, c) {
                return Some(c);
            }
            self.free.push_back(c);
        }
        None
    }

    /// Claims free chunk `c` for filling if no reader holds it.
    fn claim(&mut self, pool: &Pool, c: u32) -> bool {
        let claimed = pool
            .holders(c)
            .compare_exchange(0, WRITER_BIT, Ordering::SeqCst, Ordering::Relaxed)
            .is_ok();
        if claimed {
            let g = &mut self.generations[c as usize];
            *g = g.wrapping_add(1);
            pool.generation(c).store(*g, Ordering::SeqCst);
            self.held[c as usize] = true;
        }
        claimed
    }

    /// [`ChunkAlloc::loan`], the most recently released chunk first: its memory is the most
    /// likely to be in cache (the last reader just copied out of it). For chunks whose
    /// readers copy out on arrival; loans keep first-released-first (a reader may hold a
    /// loan for long, and a stale reference is less likely the later a chunk is reused).
    pub fn loan_recent(&mut self, pool: &Pool) -> Option<u32> {
        for _ in 0..self.free.len() {
            let c = self.free.pop_back()?;
            if self.claim(pool, c) {
                return Some(c);
            }
            self.free.push_front(c);
        }
        None
    }

    /// Publishes a filled chunk: readers may take hold of it from now on. The writer keeps
    /// holding it (history) until [`ChunkAlloc::release`].
    pub fn publish(&mut self, pool: &Pool, chunk: u32) -> LoanRef {
        self.publish_len(pool, chunk, pool.geo.payload)
    }

    /// [`ChunkAlloc::publish`] for a chunk holding `len` bytes (a pool of [`CDR_LAYOUT`]).
    pub fn publish_len(&mut self, pool: &Pool, chunk: u32, len: u32) -> LoanRef {
        pool.holders(chunk).fetch_and(!WRITER_BIT, Ordering::SeqCst);
        LoanRef {
            domain: pool.domain,
            pool: pool.id,
            chunk,
            generation: self.generations[chunk as usize],
            len: len.min(pool.geo.payload),
            layout: pool.layout,
        }
    }

    /// The writer no longer needs `chunk` (its history let the sample go, or a loan was
    /// dropped unwritten): it is reused once no reader holds it.
    pub fn release(&mut self, pool: &Pool, chunk: u32) {
        let Some(h) = self.held.get_mut(chunk as usize) else {
            return;
        };
        if std::mem::take(h) {
            pool.holders(chunk).fetch_and(!WRITER_BIT, Ordering::SeqCst);
            self.free.push_back(chunk);
        }
    }

    /// Frees the slots (and clears the bits) of reader processes that `alive` says are gone.
    /// Returns how many slots were freed.
    pub fn clear_dead_readers(&mut self, pool: &Pool, alive: impl Fn(u64) -> bool) -> u32 {
        let mut freed = 0;
        for s in 0..READER_SLOTS {
            let tag = pool.reader_slot(s).load(Ordering::SeqCst);
            if tag != 0 && !alive(tag) {
                pool.unregister_reader(s, tag);
                freed += 1;
            }
        }
        freed
    }
}

/// A reader process's private count of its holds on one pool's chunks, so that several
/// samples (of one or several readers) can hold one chunk while the shared bit is set once.
#[derive(Debug, Default)]
pub struct Holds {
    counts: HashMap<u32, u32>,
}

impl Holds {
    /// Takes hold of the chunk `r` names (see [`Pool::acquire`]).
    pub fn acquire(
        &mut self,
        pool: &Pool,
        slot: u32,
        r: &LoanRef,
        size: usize,
        layout: u64,
    ) -> Result<(), Refused> {
        let already = self.counts.get(&r.chunk).copied().unwrap_or(0) > 0;
        pool.acquire(r, slot, size, layout, already)?;
        *self.counts.entry(r.chunk).or_insert(0) += 1;
        Ok(())
    }

    /// Lets go of one hold of `chunk`; the shared bit is cleared with the last.
    pub fn release(&mut self, pool: &Pool, slot: u32, chunk: u32) {
        let Some(n) = self.counts.get_mut(&chunk) else {
            return;
        };
        *n -= 1;
        if *n == 0 {
            self.counts.remove(&chunk);
            pool.release(chunk, slot);
        }
    }

    /// Chunks held.
    pub fn len(&self) -> usize {
        self.counts.len()
    }

    /// Whether no chunk is held.
    pub fn is_empty(&self) -> bool {
        self.counts.is_empty()
    }
}

/// The file name of pool `id` of `domain`.
pub fn pool_name(domain: u32, id: u32) -> String {
    format!("{POOL_PREFIX}{domain}-{id:08x}")
}

/// Maps a pool file and validates its header (our uid, mode 0600 only).
pub fn map_pool(path: &Path) -> io::Result<Pool> {
    let region = map_file(path, MAX_POOL)?;
    Pool::attach(region).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

/// Opens pool `id` of `domain` in `dir` (a reader, on its first reference to it).
pub fn open_pool(dir: &Path, domain: u32, id: u32) -> io::Result<Pool> {
    let p = map_pool(&dir.join(pool_name(domain, id)))?;
    if p.id() != id || p.domain() != domain {
        return Err(io::Error::from(io::ErrorKind::InvalidData));
    }
    Ok(p)
}

/// This process's reader tag ([`reader_tag`] of its pid and start time).
pub fn own_reader_tag() -> u64 {
    let pid = std::process::id();
    reader_tag(pid, process_start_time(pid).unwrap_or(0))
}

/// Whether the reader process of `tag` still runs (in our pid namespace; a tag naming no
/// process, or a process started at another time, is dead).
pub fn reader_alive(tag: u64) -> bool {
    let pid = (tag >> 32) as u32;
    pid != 0 && process_start_time(pid).is_some_and(|t| t & 0xffff_ffff == tag & 0xffff_ffff)
}

/// A writer's own pool: created with the segment file, closed and unlinked when dropped
/// (readers that still map it keep their mapping until they let go).
#[derive(Debug)]
pub struct OwnPool {
    pool: Pool,
    path: PathBuf,
    /// The file was removed already ([`OwnPool::unlink`]): never remove it twice, since by
    /// then the name may be another pool's.
    unlinked: AtomicBool,
}

impl OwnPool {
    /// Creates a pool file in `dir` for `domain` (after the dead segments there were
    /// reclaimed by the transport) with `geo` and values of layout hash `layout`. Every page
    /// is allocated now, so that a full tmpfs fails here rather than with a SIGBUS later.
    pub fn create(
        dir: &Path,
        domain: u32,
        host: u64,
        geo: PoolGeometry,
        layout: u64,
    ) -> io::Result<OwnPool> {
        let (id, path, fd) = create_file(dir, |id| pool_name(domain, id))?;
        let pid = std::process::id();
        let owner = Owner {
            pid,
            start_time: process_start_time(pid).unwrap_or(0),
            pid_ns: ns_inode("pid"),
            host,
            domain,
        };
        let setup = || -> io::Result<Pool> {
            let len = geo.total_len();
            // SAFETY: `fd` is open for writing; the call only extends and allocates the file.
            let rc = unsafe { libc::posix_fallocate(fd.as_raw_fd(), 0, len as libc::off_t) };
            if rc != 0 {
                return Err(io::Error::from_raw_os_error(rc));
            }
            let region = Region::map(fd.as_raw_fd(), len)?;
            Pool::init(region, geo, owner, id, layout).map_err(io::Error::other)
        };
        match setup() {
            Ok(pool) => {
                exit_unlink::remember(&path);
                Ok(OwnPool {
                    pool,
                    path,
                    unlinked: AtomicBool::new(false),
                })
            }
            Err(e) => {
                let _ = std::fs::remove_file(&path);
                Err(e)
            }
        }
    }

    /// The pool.
    pub fn pool(&self) -> &Pool {
        &self.pool
    }

    /// The segment file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Closes the pool and removes the segment file now, while this process keeps its
    /// mapping: for a writer that is deleted while something else (an event pass, a receive
    /// thread) still holds its endpoint for a moment. Readers that opened the pool keep their
    /// mappings; no one can open it any more. Closed at once too: a reader that lets go of
    /// its last sample of the pool after this unmaps it (see `loan::ChunkHold`'s drop); had
    /// the pool been closed only with the endpoint's last reference, a reader that let go in
    /// between kept it mapped until it attached another pool.
    pub fn unlink(&self) {
        self.pool.close();
        if !self.unlinked.swap(true, Ordering::AcqRel) {
            let _ = std::fs::remove_file(&self.path);
            exit_unlink::forget(&self.path);
        }
    }
}

impl Drop for OwnPool {
    fn drop(&mut self) {
        self.unlink();
    }
}

/// Whether the writer of `pool` is alive as far as this process can tell.
pub fn pool_owner_alive(pool: &Pool) -> bool {
    owner_alive(&pool.owner(), ns_inode("pid"))
}

#[cfg(test)]
#[path = "shm_pool_tests.rs"]
mod tests;
