//! The shared-memory segment of [`super::shm`]: a header and a bounded ring of datagram slots
//! that any number of processes write into and one process (the owner) reads from.
//!
//! # Layout (native byte order; every process on one host shares it)
//! ```text
//! 0    magic  "TSRSHM01" (u64; written last, so an attacher never sees half a header)
//! 8    version u32 | 12 header size u32 (512) | 16 slot count u32 (power of two)
//! 20   slot stride u32 (multiple of 64) | 24 owner pid u32 | 28 flags u32 (bit 0: closed)
//! 32   owner start time u64 (/proc/<pid>/stat field 22) | 40 owner pid namespace inode u64
//! 48   host identity u64 | 56 domain id u32
//! 128  head u64: the next position a writer claims (its own cache line)
//! 256  futex word u32 | 260 "reader sleeping" flag u32 | 264 "reader wakes by" u64 (CLOCK_MONOTONIC ns)
//! 512  slots: stride bytes each = seq u64 | length u32 | pad u32 | payload (stride - 16)
//! ```
//!
//! # Protocol (a bounded multi-producer, single-consumer queue after D. Vyukov)
//! Slot `pos % count` is free for the writer of position `pos` when its `seq` is `pos`. A
//! writer reads `head`, checks that slot's `seq`, and claims the position with a CAS on `head`;
//! it copies the datagram in and commits with a CAS of `seq` from `pos` to `pos + 1`. The reader
//! takes position `pos` when `seq == pos + 1`, copies the datagram out and frees the slot for
//! the next lap (`seq = pos + count`). Nothing is ever locked: a process killed with -9 can at
//! worst leave one claimed slot uncommitted. The reader skips such a slot once it has waited
//! [`ShmConfig::stall_timeout`](super::shm::ShmConfig) for it (a CAS of `seq` from `pos` to
//! `pos + count`); a writer that was only slow then fails its commit CAS and counts its datagram
//! as lost. (Its late copy may still land in the slot after a newer writer claimed it; the
//! reader then decodes a torn datagram, which the RTPS decoder treats like any bad input.)
//!
//! The reader sleeps on the futex word after a bounded spin: it raises the sleeping flag,
//! re-checks the ring, and waits; a writer that sees the flag after its commit lowers it and,
//! if it was the one to lower it, bumps the word and wakes the reader. Both sides separate
//! their store from their load with a `SeqCst` fence, so at least one of them sees the other
//! (no lost wake-up); the wait also has a timeout, so even a scribbled flag delays a datagram
//! by at most that long. Lowering the flag matters for fast streams: a woken reader takes tens
//! of microseconds to run here, and every write meanwhile made a wake-up syscall of its own
//! while the flag stayed up (a tenth of a 16 B publisher's time).
//!
//! A *gathering* reader (the node service's, [`ShmConfig::gather`](super::shm::ShmConfig)) that
//! finds its ring busy sleeps for a fixed short time instead, and says until when in "reader
//! wakes by" (0 otherwise). A writer of an unmarked datagram ([`Ring::push_deferrable`]) then
//! skips the wake-up when that time is near: the reader takes a window's datagrams in one
//! wake-up, and no writer makes a syscall. Marked datagrams (a TRANSPORT_PRIORITY) always wake
//! it. A writer trusts the time only up to [`MAX_GATHER`] ahead, so a scribbled one costs at most
//! the reader's own timeout.
//!
//! # Untrusted contents
//! Another process of the same user can write anything into a segment. Geometry is read once,
//! validated ([`Ring::attach`]), and kept in the process's own memory; afterwards only the
//! per-slot words, `head` and the futex words are read from the segment, and every length is
//! checked against the slot's capacity before use. Bytes are copied out into a private buffer
//! before anyone parses them, and no reference to shared bytes is ever formed (only atomics and
//! raw copies). A bad slot is dropped and counted ([`RingStats`]), never a panic. What this
//! cannot defend against: a same-user process that truncates the file makes accesses fault
//! (SIGBUS); segments are created 0600 for that reason.

use std::io;
use std::ptr::NonNull;
use std::sync::atomic::{fence, AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// "TSRSHM01".
pub const MAGIC: u64 = u64::from_le_bytes(*b"TSRSHM01");
/// Layout version.
pub const VERSION: u32 = 1;
/// Bytes before the first slot.
pub const HEADER_SIZE: usize = 512;
/// Bytes of a slot before its payload.
pub const SLOT_HEADER: usize = 16;
/// Largest slot count accepted from a segment.
pub const MAX_SLOTS: u32 = 1 << 20;
/// Largest slot stride accepted from a segment (a datagram of up to 16 MiB).
pub const MAX_STRIDE: u32 = 16 << 20;
/// Furthest ahead a writer trusts a gathering reader's wake-up time (see the module docs).
pub const MAX_GATHER: Duration = Duration::from_millis(10);
/// Largest segment accepted.
pub const MAX_SEGMENT: u64 = 1 << 30;
/// How long the slot at the read position must have looked empty before [`Consumer::poll`]
/// reads `head` to tell an empty slot from one claimed and not yet committed (at most the
/// stall timeout). Every writer's claim is a CAS on `head`: a reader that looked at it after
/// each datagram pulled that cache line over to its core and made the next claim pull it back,
/// two cross-core transfers per datagram on a stream that keeps the ring nearly empty.
pub const EMPTY_RECHECK: Duration = Duration::from_micros(20);

const OFF_MAGIC: usize = 0;
const OFF_SLOT_COUNT: usize = 16;
const OFF_STRIDE: usize = 20;
const OFF_OWNER_PID: usize = 24;
const OFF_FLAGS: usize = 28;
const OFF_OWNER_START: usize = 32;
const OFF_OWNER_PIDNS: usize = 40;
const OFF_HOST: usize = 48;
const OFF_DOMAIN: usize = 56;
const OWNER_AT: OwnerAt = OwnerAt {
    pid: OFF_OWNER_PID,
    start_time: OFF_OWNER_START,
    pid_ns: OFF_OWNER_PIDNS,
    host: OFF_HOST,
    domain: OFF_DOMAIN,
};
const OFF_HEAD: usize = 128;
const OFF_FUTEX: usize = 256;
const OFF_SLEEPING: usize = 260;
const OFF_WAKE_BY: usize = 264;

const FLAG_CLOSED: u32 = 1;

/// Why a segment (a receive ring or a loan pool) was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SegmentError {
    /// Smaller than its header or its slots.
    #[error("segment too small")]
    TooSmall,
    /// Not a Tessera segment, or not yet initialised.
    #[error("bad magic")]
    BadMagic,
    /// Another layout version.
    #[error("layout version {0}")]
    Version(u32),
    /// Slot count, stride or header size out of range.
    #[error("bad geometry")]
    Geometry,
}

/// Who owns a segment and where it belongs; written by the owner at creation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Owner {
    /// Process id of the owner.
    pub pid: u32,
    /// The owner's start time (clock ticks since boot), so a reused pid is told apart.
    pub start_time: u64,
    /// Inode of the owner's pid namespace: pids are only compared within one.
    pub pid_ns: u64,
    /// Host identity (see [`super::shm::host_identity`]).
    pub host: u64,
    /// DDS domain id.
    pub domain: u32,
}

/// Slot count and stride: the geometry every position computation uses. Kept in private
/// memory, never re-read from the segment after validation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geometry {
    slot_count: u32,
    stride: u32,
}

impl Geometry {
    /// The largest ring of slots carrying `max_datagram` bytes each whose slots fit
    /// `segment_bytes` (the header comes on top; slot count rounded down to a power of two,
    /// at least 2). `None` when out of range.
    pub fn for_size(segment_bytes: usize, max_datagram: usize) -> Option<Geometry> {
        let stride = (SLOT_HEADER + max_datagram).checked_next_multiple_of(64)?;
        let stride = u32::try_from(stride).ok().filter(|s| *s <= MAX_STRIDE)?;
        let fit = segment_bytes / stride as usize;
        let count = u32::try_from(fit.max(2))
            .unwrap_or(MAX_SLOTS)
            .min(MAX_SLOTS);
        let count = if count.is_power_of_two() {
            count
        } else {
            count.next_power_of_two() / 2
        };
        let g = Geometry {
            slot_count: count,
            stride,
        };
        g.valid().then_some(g)
    }

    fn valid(&self) -> bool {
        self.slot_count.is_power_of_two()
            && (2..=MAX_SLOTS).contains(&self.slot_count)
            && self.stride % 64 == 0
            && (64..=MAX_STRIDE).contains(&self.stride)
            && self.total_len() as u64 <= MAX_SEGMENT
    }

    /// Slots in the ring.
    pub fn slot_count(&self) -> u32 {
        self.slot_count
    }

    /// The largest datagram a slot holds.
    pub fn capacity(&self) -> usize {
        self.stride as usize - SLOT_HEADER
    }

    /// The segment's size in bytes.
    pub fn total_len(&self) -> usize {
        // Bounded by MAX_SLOTS × MAX_STRIDE < 2^45: no overflow on 64-bit targets.
        HEADER_SIZE + self.slot_count as usize * self.stride as usize
    }

    fn slot_offset(&self, pos: u64) -> usize {
        let i = (pos & (self.slot_count as u64 - 1)) as usize;
        HEADER_SIZE + i * self.stride as usize
    }
}

enum Backing {
    Map,
    Heap(#[allow(dead_code)] Vec<u64>),
}

/// A region of memory a ring lives in: a shared mapping, or (tests, fuzzing) private memory.
pub struct Region {
    ptr: NonNull<u8>,
    len: usize,
    backing: Backing,
}

// SAFETY: the region is only accessed through atomics and raw copies (see the module docs);
// moving or sharing the handle between threads is as safe as sharing the mapping itself.
unsafe impl Send for Region {}
// SAFETY: as above: no method hands out references to the memory that assume exclusivity.
unsafe impl Sync for Region {}

impl std::fmt::Debug for Region {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Region").field("len", &self.len).finish()
    }
}

impl Region {
    /// `len` zeroed bytes of private memory, 8-byte aligned.
    pub fn heap(len: usize) -> Region {
        let mut v = vec![0u64; len.div_ceil(8)];
        let ptr = NonNull::new(v.as_mut_ptr().cast::<u8>()).unwrap_or(NonNull::dangling());
        Region {
            ptr,
            len,
            backing: Backing::Heap(v),
        }
    }

    /// Private memory holding a copy of `bytes` (e.g. a fuzzer's input as a segment image).
    pub fn from_bytes(bytes: &[u8]) -> Region {
        let r = Region::heap(bytes.len());
        // SAFETY: `r` owns `bytes.len()` writable bytes at `ptr`, distinct from `bytes`.
        unsafe {
            tessera_rtps::copy::copy_nonoverlapping(bytes.as_ptr(), r.ptr.as_ptr(), bytes.len())
        };
        r
    }

    /// Maps `len` bytes of the file `fd` shared and writable.
    pub(crate) fn map(fd: libc::c_int, len: usize) -> io::Result<Region> {
        if len == 0 {
            return Err(io::Error::from(io::ErrorKind::InvalidInput));
        }
        // SAFETY: a fresh shared mapping of an open descriptor; no existing memory is affected.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let ptr = NonNull::new(p.cast::<u8>()).ok_or_else(io::Error::last_os_error)?;
        Ok(Region {
            ptr,
            len,
            backing: Backing::Map,
        })
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the region is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The atomic at byte `off`. Callers pass offsets derived from a validated geometry (or the
    /// fixed header offsets), so the check below never fails in practice; it keeps a logic
    /// error from becoming an out-of-bounds access.
    pub(crate) fn u64_at(&self, off: usize) -> &AtomicU64 {
        assert!(
            off % 8 == 0 && off + 8 <= self.len,
            "offset {off} outside the region"
        );
        // SAFETY: in bounds and 8-aligned (the base is page- or 8-aligned); the memory lives as
        // long as `self`, and is only ever accessed atomically or by raw copies.
        unsafe { &*self.ptr.as_ptr().add(off).cast::<AtomicU64>() }
    }

    pub(crate) fn u32_at(&self, off: usize) -> &AtomicU32 {
        assert!(
            off % 4 == 0 && off + 4 <= self.len,
            "offset {off} outside the region"
        );
        // SAFETY: as in `u64_at`, with 4-byte alignment.
        unsafe { &*self.ptr.as_ptr().add(off).cast::<AtomicU32>() }
    }

    /// A raw pointer to `len` bytes at `off` (bounds checked like `u64_at`): for a loaned
    /// chunk, which its user reads or writes as a plain value.
    pub(crate) fn ptr_at(&self, off: usize, len: usize) -> NonNull<u8> {
        assert!(
            off.checked_add(len).is_some_and(|end| end <= self.len),
            "range at {off} outside the region"
        );
        // SAFETY: `off` is in bounds of the mapping (checked above), so the result is non-null.
        unsafe { NonNull::new_unchecked(self.ptr.as_ptr().add(off)) }
    }

    /// Copies `src` to byte `off`.
    pub(crate) fn write(&self, off: usize, src: &[u8]) {
        assert!(off + src.len() <= self.len, "write outside the region");
        // SAFETY: in bounds; the destination is shared memory that no reference covers, so a
        // concurrent writer can only corrupt the bytes (which the reader validates).
        unsafe {
            tessera_rtps::copy::copy_nonoverlapping(
                src.as_ptr(),
                self.ptr.as_ptr().add(off),
                src.len(),
            )
        };
    }

    /// Appends the `len` bytes at `off` to `out` (no zeroing of the room first).
    pub(crate) fn append_to(&self, off: usize, len: usize, out: &mut Vec<u8>) {
        assert!(
            off.checked_add(len).is_some_and(|end| end <= self.len),
            "read outside the region"
        );
        out.reserve(len);
        // SAFETY: in bounds; the destination is `out`'s spare capacity (reserved above), which
        // the copy initialises before `set_len` exposes it. A concurrent scribbler can only
        // make the copied bytes garbage, which the caller treats as untrusted.
        unsafe {
            tessera_rtps::copy::copy_nonoverlapping(
                self.ptr.as_ptr().add(off),
                out.as_mut_ptr().add(out.len()),
                len,
            );
            out.set_len(out.len() + len);
        }
    }

    /// Copies bytes from `off` into `dst`.
    pub(crate) fn read(&self, off: usize, dst: &mut [u8]) {
        assert!(off + dst.len() <= self.len, "read outside the region");
        // SAFETY: in bounds; `dst` is private memory. A concurrent scribbler can only make the
        // copied bytes garbage, which the caller treats as untrusted.
        unsafe {
            tessera_rtps::copy::copy_nonoverlapping(
                self.ptr.as_ptr().add(off),
                dst.as_mut_ptr(),
                dst.len(),
            )
        };
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        if let Backing::Map = self.backing {
            // SAFETY: `ptr`/`len` are exactly the mapping made in `map`, unmapped once here;
            // nothing borrows it any more (borrows are tied to `&self`).
            unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.len) };
        }
    }
}

/// Where a segment header keeps its [`Owner`]: receive rings and loan pools lay their headers
/// out differently but record the same owner fields.
#[derive(Debug, Clone, Copy)]
pub(crate) struct OwnerAt {
    pub pid: usize,
    pub start_time: usize,
    pub pid_ns: usize,
    pub host: usize,
    pub domain: usize,
}

impl OwnerAt {
    pub(crate) fn store(&self, r: &Region, o: &Owner) {
        r.u32_at(self.pid).store(o.pid, Ordering::Relaxed);
        r.u64_at(self.start_time)
            .store(o.start_time, Ordering::Relaxed);
        r.u64_at(self.pid_ns).store(o.pid_ns, Ordering::Relaxed);
        r.u64_at(self.host).store(o.host, Ordering::Relaxed);
        r.u32_at(self.domain).store(o.domain, Ordering::Relaxed);
    }

    pub(crate) fn load(&self, r: &Region) -> Owner {
        Owner {
            pid: r.u32_at(self.pid).load(Ordering::Relaxed),
            start_time: r.u64_at(self.start_time).load(Ordering::Relaxed),
            pid_ns: r.u64_at(self.pid_ns).load(Ordering::Relaxed),
            host: r.u64_at(self.host).load(Ordering::Relaxed),
            domain: r.u32_at(self.domain).load(Ordering::Relaxed),
        }
    }
}

impl Region {
    /// Writes version and header size (the magic comes last, once the header is complete).
    pub(crate) fn write_prologue(&self, version: u32, header: usize) {
        self.u32_at(8).store(version, Ordering::Relaxed);
        self.u32_at(12).store(header as u32, Ordering::Relaxed);
    }

    /// Checks magic, version and header size of a segment someone else initialised.
    pub(crate) fn check_prologue(
        &self,
        magic: u64,
        version: u32,
        header: usize,
    ) -> Result<(), SegmentError> {
        if self.len() < header {
            return Err(SegmentError::TooSmall);
        }
        if self.u64_at(0).load(Ordering::Acquire) != magic {
            return Err(SegmentError::BadMagic);
        }
        let v = self.u32_at(8).load(Ordering::Relaxed);
        if v != version {
            return Err(SegmentError::Version(v));
        }
        if self.u32_at(12).load(Ordering::Relaxed) as usize != header {
            return Err(SegmentError::Geometry);
        }
        Ok(())
    }
}

/// What a write into the ring came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pushed {
    /// Committed; `woke` when the reader was asleep and got a futex wake.
    Sent {
        /// Whether a wake-up syscall was made.
        woke: bool,
        /// The reader was asleep and not woken: it gathers and wakes by itself soon.
        deferred: bool,
    },
    /// No free slot now.
    Full,
    /// Larger than a slot.
    TooLarge,
    /// The reader gave up on the slot before the commit (the writer stalled too long).
    Lost,
}

/// Drop counters of one ring's reader.
#[derive(Debug, Default)]
pub struct RingStats {
    /// Datagrams taken.
    pub datagrams: AtomicU64,
    /// Slots with a length beyond their capacity (scribbled): dropped.
    pub bad_length: AtomicU64,
    /// Slots skipped after waiting the stall timeout (a writer died or stalled mid-write, or
    /// a scribbled sequence word).
    pub skipped: AtomicU64,
}

/// A ring over a [`Region`], with the geometry kept privately.
#[derive(Debug)]
pub struct Ring {
    region: Region,
    geo: Geometry,
}

impl Ring {
    /// Initialises a fresh ring in `region` (zeroed, at least `geo.total_len()` bytes) for
    /// `owner`. The magic is written last.
    pub fn init(region: Region, geo: Geometry, owner: Owner) -> Result<Ring, SegmentError> {
        if !geo.valid() {
            return Err(SegmentError::Geometry);
        }
        if region.len() < geo.total_len() {
            return Err(SegmentError::TooSmall);
        }
        let r = Ring { region, geo };
        let h = &r.region;
        h.write_prologue(VERSION, HEADER_SIZE);
        h.u32_at(OFF_SLOT_COUNT)
            .store(geo.slot_count, Ordering::Relaxed);
        h.u32_at(OFF_STRIDE).store(geo.stride, Ordering::Relaxed);
        h.u32_at(OFF_FLAGS).store(0, Ordering::Relaxed);
        OWNER_AT.store(h, &owner);
        h.u64_at(OFF_HEAD).store(0, Ordering::Relaxed);
        for i in 0..geo.slot_count as u64 {
            r.seq(i).store(i, Ordering::Relaxed);
        }
        h.u64_at(OFF_MAGIC).store(MAGIC, Ordering::Release);
        Ok(r)
    }

    /// Attaches to a ring someone else initialised, validating its header.
    pub fn attach(region: Region) -> Result<Ring, SegmentError> {
        region.check_prologue(MAGIC, VERSION, HEADER_SIZE)?;
        let geo = Geometry {
            slot_count: region.u32_at(OFF_SLOT_COUNT).load(Ordering::Relaxed),
            stride: region.u32_at(OFF_STRIDE).load(Ordering::Relaxed),
        };
        if !geo.valid() {
            return Err(SegmentError::Geometry);
        }
        if region.len() < geo.total_len() {
            return Err(SegmentError::TooSmall);
        }
        Ok(Ring { region, geo })
    }

    /// The geometry.
    pub fn geometry(&self) -> Geometry {
        self.geo
    }

    /// The owner recorded in the header (untrusted: for liveness checks and filtering only).
    pub fn owner(&self) -> Owner {
        OWNER_AT.load(&self.region)
    }

    /// Marks the ring closed: its owner is going away, writers should forget it.
    pub fn close(&self) {
        self.region
            .u32_at(OFF_FLAGS)
            .fetch_or(FLAG_CLOSED, Ordering::Release);
        self.wake();
    }

    /// Whether the owner closed the ring.
    pub fn is_closed(&self) -> bool {
        self.region.u32_at(OFF_FLAGS).load(Ordering::Acquire) & FLAG_CLOSED != 0
    }

    fn seq(&self, pos: u64) -> &AtomicU64 {
        self.region.u64_at(self.geo.slot_offset(pos))
    }

    fn len_word(&self, pos: u64) -> &AtomicU32 {
        self.region.u32_at(self.geo.slot_offset(pos) + 8)
    }

    /// Copies the segment's bytes into `out` (as much as fits): an image for tests and fuzzing.
    pub fn copy_to(&self, out: &mut [u8]) {
        let n = out.len().min(self.region.len());
        self.region.read(0, &mut out[..n]);
    }

    /// Claims the next position without writing it, as a writer killed right after its claim
    /// leaves it (tests of the stall timeout).
    #[doc(hidden)]
    pub fn claim_and_abandon(&self) -> u64 {
        self.head().fetch_add(1, Ordering::SeqCst)
    }

    fn head(&self) -> &AtomicU64 {
        self.region.u64_at(OFF_HEAD)
    }

    fn futex(&self) -> &AtomicU32 {
        self.region.u32_at(OFF_FUTEX)
    }

    fn sleeping(&self) -> &AtomicU32 {
        self.region.u32_at(OFF_SLEEPING)
    }

    fn wake_by(&self) -> &AtomicU64 {
        self.region.u64_at(OFF_WAKE_BY)
    }

    /// Claims a slot, copies `data` in and commits it. Never blocks: [`Pushed::Full`] when the
    /// reader is a lap behind (or the shared words are scribbled so that no slot looks free).
    pub fn push(&self, data: &[u8]) -> Pushed {
        self.push_deferrable(data, false)
    }

    /// [`Ring::push`]; with `may_defer`, a sleeping reader that gathers and wakes within
    /// [`MAX_GATHER`] is left to wake by itself (no syscall).
    pub fn push_deferrable(&self, data: &[u8], may_defer: bool) -> Pushed {
        self.push_parts(&[data], may_defer)
    }

    /// [`Ring::push_deferrable`] of the datagram made of `parts` one after the other, each
    /// copied straight into the slot (a large payload need not be copied next to its headers
    /// first).
    pub fn push_parts(&self, parts: &[&[u8]], may_defer: bool) -> Pushed {
        let len: usize = parts.iter().map(|p| p.len()).sum();
        if len > self.geo.capacity() {
            return Pushed::TooLarge;
        }
        // Bounded: contention costs a retry, but a scribbled head never makes us loop for ever.
        for _ in 0..256 {
            let pos = self.head().load(Ordering::Relaxed);
            let seq = self.seq(pos).load(Ordering::Acquire);
            let diff = seq.wrapping_sub(pos) as i64;
            if diff < 0 {
                return Pushed::Full;
            }
            if diff > 0 {
                // Another writer claimed `pos` since we read head.
                std::hint::spin_loop();
                continue;
            }
            if self
                .head()
                .compare_exchange_weak(
                    pos,
                    pos.wrapping_add(1),
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                )
                .is_err()
            {
                continue;
            }
            let mut off = self.geo.slot_offset(pos) + SLOT_HEADER;
            for p in parts {
                self.region.write(off, p);
                off += p.len();
            }
            self.len_word(pos).store(len as u32, Ordering::Relaxed);
            if self
                .seq(pos)
                .compare_exchange(
                    pos,
                    pos.wrapping_add(1),
                    Ordering::Release,
                    Ordering::Relaxed,
                )
                .is_err()
            {
                return Pushed::Lost;
            }
            fence(Ordering::SeqCst);
            let asleep = self.sleeping().load(Ordering::Relaxed) != 0;
            // The reader stores its wake-up time before it raises the flag: seeing this sleep's
            // flag, we see this sleep's time.
            let deferred = asleep && may_defer && self.reader_wakes_soon();
            // Of the writers that see the flag before the woken reader runs, one wakes it.
            let woke = asleep && !deferred && self.sleeping().swap(0, Ordering::SeqCst) != 0;
            if woke {
                self.wake();
            }
            return Pushed::Sent { woke, deferred };
        }
        Pushed::Full
    }

    /// The sleeping reader gathers and wakes by itself within [`MAX_GATHER`].
    fn reader_wakes_soon(&self) -> bool {
        let by = self.wake_by().load(Ordering::SeqCst);
        if by == 0 {
            return false;
        }
        let now = monotonic_ns();
        by > now && by - now <= MAX_GATHER.as_nanos() as u64
    }

    /// Bumps the futex word and wakes the reader (a stop request, a close, a commit).
    pub fn wake(&self) {
        self.futex().fetch_add(1, Ordering::SeqCst);
        futex_wake(self.futex());
    }
}

/// What one [`Consumer::poll`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Polled {
    /// A datagram of this many bytes, copied to the start of the buffer.
    Datagram(usize),
    /// Nothing written (or claimed) at the read position.
    Empty,
    /// The slot at the read position is claimed but not committed (or its sequence word is
    /// not what the protocol allows): waiting, up to the stall timeout.
    Stalled,
    /// A slot was dropped (bad length) or skipped (stalled too long); counted.
    Dropped,
}

/// The reading side of a ring: its position lives in private memory (a scribbled segment cannot
/// move it).
#[derive(Debug)]
pub struct Consumer {
    pos: u64,
    /// Since when the slot at `pos` is stalled, and the sequence word seen then.
    stalled: Option<(Instant, u64)>,
    /// Since when the slot at `pos` has looked empty without a look at `head`.
    empty_since: Option<Instant>,
    stall_timeout: Duration,
}

impl Consumer {
    /// A reader at position 0 of a fresh ring, skipping a stalled slot after `stall_timeout`.
    pub fn new(stall_timeout: Duration) -> Consumer {
        Consumer::at(0, stall_timeout)
    }

    /// A reader at position `pos` (tests and fuzzing).
    pub fn at(pos: u64, stall_timeout: Duration) -> Consumer {
        Consumer {
            pos,
            stalled: None,
            empty_since: None,
            stall_timeout,
        }
    }

    /// The read position.
    pub fn position(&self) -> u64 {
        self.pos
    }

    /// Takes the datagram at the read position into `buf` (at least the ring's capacity long;
    /// shorter buffers get [`Polled::Dropped`] for every datagram that does not fit).
    pub fn poll(&mut self, ring: &Ring, buf: &mut [u8], stats: &RingStats, now: Instant) -> Polled {
        let pos = self.pos;
        let next_lap = pos.wrapping_add(ring.geo.slot_count as u64);
        let seq = ring.seq(pos).load(Ordering::Acquire);
        if seq == pos.wrapping_add(1) {
            let len = ring.len_word(pos).load(Ordering::Relaxed) as usize;
            let ok = len <= ring.geo.capacity() && len <= buf.len();
            if ok {
                ring.region
                    .read(ring.geo.slot_offset(pos) + SLOT_HEADER, &mut buf[..len]);
            }
            // Free the slot before the datagram is handled: writers get room sooner.
            ring.seq(pos).store(next_lap, Ordering::Release);
            self.advance();
            if ok {
                stats.datagrams.fetch_add(1, Ordering::Relaxed);
                return Polled::Datagram(len);
            }
            stats.bad_length.fetch_add(1, Ordering::Relaxed);
            return Polled::Dropped;
        }
        if seq == pos && self.stalled.is_none() {
            // Empty, or claimed and not committed yet: `head` tells which, but it is read
            // only once the slot has looked empty for a while (or by `sleep`, which looks
            // anyway): see [`EMPTY_RECHECK`]. A claim by a writer still alive ends in a
            // commit soon; one by a dead writer is found at the latest that much later.
            let since = *self.empty_since.get_or_insert(now);
            if now.saturating_duration_since(since) < EMPTY_RECHECK.min(self.stall_timeout) {
                return Polled::Empty;
            }
            let head = ring.head().load(Ordering::Acquire);
            if (head.wrapping_sub(pos) as i64) <= 0 {
                self.empty_since = Some(now);
                return Polled::Empty;
            }
        }
        // Claimed and not committed, or a sequence word the protocol never produces.
        let (since, _) = *self.stalled.get_or_insert((now, seq));
        self.stalled = Some((since, seq));
        if now.saturating_duration_since(since) < self.stall_timeout {
            return Polled::Stalled;
        }
        if ring
            .seq(pos)
            .compare_exchange(seq, next_lap, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
        {
            self.advance();
            stats.skipped.fetch_add(1, Ordering::Relaxed);
            return Polled::Dropped;
        }
        // The writer committed just now: take it on the next poll.
        Polled::Stalled
    }

    /// Whether the next slot changed since the last poll (a datagram committed or being
    /// written): one load of its sequence word, for spinning between polls.
    pub fn next_changed(&self, ring: &Ring) -> bool {
        ring.seq(self.pos).load(Ordering::Relaxed) != self.pos
    }

    fn advance(&mut self) {
        self.pos = self.pos.wrapping_add(1);
        self.stalled = None;
        self.empty_since = None;
    }

    /// Sleeps on the ring's futex until a writer wakes it or `timeout` passes, unless there is
    /// news at the read position: a datagram or a claim after [`Polled::Empty`], a commit (any
    /// change of the sequence word) after [`Polled::Stalled`]. While stalled, the sleep ends in
    /// time for the stall timeout. Returns at once if the ring is closed or `interrupt` is
    /// raised (raise it, then [`Ring::wake`]: a wake that comes before the sleep is not lost).
    /// A claimed slot found here counts as stalled from `now`, as [`Consumer::poll`] would
    /// have found it.
    pub fn wait(&mut self, ring: &Ring, timeout: Duration, now: Instant, interrupt: &AtomicBool) {
        self.sleep(ring, timeout, false, now, interrupt);
    }

    /// [`Consumer::wait`] for exactly `window` (or until a marked datagram's wake-up), telling
    /// writers of unmarked datagrams not to wake it: the gathering sleep of the module docs.
    pub fn gather(&mut self, ring: &Ring, window: Duration, now: Instant, interrupt: &AtomicBool) {
        self.sleep(ring, window, true, now, interrupt);
    }

    fn sleep(
        &mut self,
        ring: &Ring,
        timeout: Duration,
        gathering: bool,
        now: Instant,
        interrupt: &AtomicBool,
    ) {
        let seen = ring.futex().load(Ordering::SeqCst);
        if interrupt.load(Ordering::SeqCst) {
            return;
        }
        let wake_by = if gathering {
            monotonic_ns().saturating_add(timeout.as_nanos() as u64)
        } else {
            0
        };
        ring.wake_by().store(wake_by, Ordering::SeqCst);
        ring.sleeping().store(1, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        let pos = self.pos;
        let seq = ring.seq(pos).load(Ordering::Acquire);
        if self.stalled.is_none()
            && seq == pos
            && (ring.head().load(Ordering::Acquire).wrapping_sub(pos) as i64) > 0
        {
            // Claimed, not committed: sleep until the commit (its writer wakes us, having
            // seen the flag) or the stall timeout, rather than poll it meanwhile.
            self.stalled = Some((now, seq));
        }
        let (ready, timeout) = match self.stalled {
            Some((since, stalled_seq)) => {
                let left = self
                    .stall_timeout
                    .saturating_sub(now.saturating_duration_since(since));
                (seq != stalled_seq || left.is_zero(), timeout.min(left))
            }
            None => (seq != pos, timeout),
        };
        if !ready && !ring.is_closed() {
            futex_wait(ring.futex(), seen, timeout);
        }
        ring.sleeping().store(0, Ordering::Relaxed);
    }
}

/// CLOCK_MONOTONIC in ns: one clock for every process of the host (unlike [`Instant`], whose
/// value cannot be shared).
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec to write; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(ts.tv_nsec as u64)
}

fn futex_wait(word: &AtomicU32, expected: u32, timeout: Duration) {
    let ts = libc::timespec {
        tv_sec: timeout.as_secs().min(i32::MAX as u64) as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    // SAFETY: `word` is a valid, aligned u32 for the duration of the call and `ts` a valid
    // timespec. FUTEX_WAIT (not _PRIVATE): the word is in a mapping shared between processes.
    // The result (woken, EAGAIN, ETIMEDOUT, EINTR) does not matter: the caller re-checks.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT,
            expected,
            &ts as *const libc::timespec,
            std::ptr::null::<u32>(),
            0u32,
        )
    };
}

fn futex_wake(word: &AtomicU32) {
    // SAFETY: `word` is a valid, aligned u32; FUTEX_WAKE only reads its address.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE,
            i32::MAX,
            std::ptr::null::<libc::timespec>(),
            std::ptr::null::<u32>(),
            0u32,
        )
    };
}

#[cfg(test)]
#[path = "shm_ring_tests.rs"]
mod tests;
