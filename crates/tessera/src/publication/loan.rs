//! Zero-copy loans, writer side: `DataWriter::loan` and `write_loan` for plain types.
//!
//! Each writer that loans gets a pool segment on its first loan
//! ([`crate::transport::shm_pool`]): chunks sized for `T`, as many as its history can keep
//! plus [`SPARE_CHUNKS`] (at most [`POOL_BYTES`] in all). `write_loan` publishes the chunk and
//! submits a 36-byte reference ([`crate::loan`]) as the sample's payload, so the writer
//! history, reliability, heartbeats and repairs work unchanged on that small payload; the
//! writer keeps the reference's buffer and reuses the chunk once nothing else shares it (the
//! history dropped it: KEEP_LAST replaced it, or it was acknowledged) and no reader process
//! holds it.
//!
//! References go only where every reader can resolve them: when each matched remote reader is
//! reached through shared memory (a Tessera participant on this host) and the type is
//! keyless. Otherwise — a UDP reader, another vendor, a keyed type — `write_loan` serializes
//! the value from the chunk as `write` would (one copy) and frees the chunk at once. A reader
//! that matches later than a reference was written (TRANSIENT_LOCAL over UDP) cannot resolve
//! it and counts it undecodable.

use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use tessera_rtps::cdr::{Plain, TopicType};
use tessera_rtps::fasthash::FastHashMap;
use tessera_rtps::types::{locator_kind, Guid, Locators, SequenceNumber};

use super::{now_nanos, DataWriter, WriterEndpoint};
use crate::error::{Error, Result};
use crate::qos::History;
use crate::transport::shm::{host_identity, SHM_DIR};
use crate::transport::shm_pool::{reader_alive, ChunkAlloc, OwnPool, PoolGeometry};

/// Chunks beyond what the history keeps: room for readers still holding older samples, and
/// for references still on their way when the history lets a sample go.
pub const SPARE_CHUNKS: u32 = 16;
/// The most memory one writer's pool takes (the chunk count is cut to fit, at least 2).
pub const POOL_BYTES: usize = 256 << 20;
/// KEEP_ALL writers without a `max_samples` limit get this many chunks.
const KEEP_ALL_CHUNKS: u32 = 256;
/// How often a writer whose pool is exhausted looks for reader processes that died.
const DEAD_READER_CHECK: Duration = Duration::from_millis(100);

/// What a writer endpoint knows for loans: its pool (made on the first loan) and whether each
/// matched remote reader is reached through shared memory.
#[derive(Default)]
pub(crate) struct WriterLoans {
    pool: OnceLock<Arc<WriterPool>>,
    /// Matched remote readers → reached through shared memory only.
    peers: Mutex<FastHashMap<Guid, bool>>,
    /// Cached: some entry of `peers` is false (false for an empty map, so `write_loan` reads
    /// one atomic and takes no lock).
    some_not_shm: AtomicBool,
}

impl WriterLoans {
    /// A remote reader matched with these (selected) unicast locators.
    pub(crate) fn matched(&self, reader: Guid, unicast: &Locators) {
        let shm = !unicast.is_empty()
            && unicast
                .as_slice()
                .iter()
                .all(|l| l.kind == locator_kind::TESSERA_SHM);
        let mut p = self.peers.lock();
        p.insert(reader, shm);
        self.some_not_shm
            .store(p.values().any(|s| !*s), Ordering::Relaxed);
    }

    /// A remote reader went away.
    pub(crate) fn unmatched(&self, reader: Guid) {
        let mut p = self.peers.lock();
        p.remove(&reader);
        self.some_not_shm
            .store(p.values().any(|s| !*s), Ordering::Relaxed);
    }

    /// Every matched remote reader is reached through shared memory (true with none: no
    /// reader yet, or only readers of this participant).
    fn all_shm(&self) -> bool {
        !self.some_not_shm.load(Ordering::Relaxed)
    }
}

/// A writer's pool and its private bookkeeping.
struct WriterPool {
    own: OwnPool,
    state: Mutex<PoolState>,
}

struct PoolState {
    alloc: ChunkAlloc,
    /// Published chunks, see [`Kept`].
    kept: Vec<Kept>,
    dead_check: Instant,
}

/// A published chunk: the reference buffer the history shares, and the sample's sequence
/// number once `submit` gave it.
struct Kept {
    payload: Arc<Vec<u8>>,
    chunk: u32,
    seq: Option<SequenceNumber>,
}

impl PoolState {
    /// Gives back the chunks nothing needs any more: the history let the sample go (KEEP_LAST
    /// replaced it, or it was acknowledged) and every matched reliable reader acknowledged it.
    ///
    /// The second condition closes a race: KEEP_LAST drops a sample from the history as soon
    /// as a newer one replaces it, while its reference may still be on its way to a reader
    /// that has not taken hold of the chunk yet. Reused then, the reference would arrive stale.
    /// A reliable reader takes hold when the reference arrives, before it acknowledges it, so
    /// an acknowledged chunk is either held (and the allocator skips it) or never referenced
    /// again. Best-effort readers acknowledge nothing: they may still see a stale reference,
    /// which they count as undecodable.
    fn reclaim(&mut self, own: &OwnPool, ep: &WriterEndpoint) {
        let alloc = &mut self.alloc;
        // The writer's core is locked once, and only when some chunk is otherwise free.
        let mut core = None;
        self.kept.retain(|k| {
            if Arc::strong_count(&k.payload) > 1 {
                return true;
            }
            if let Some(seq) = k.seq {
                let core = core.get_or_insert_with(|| ep.core.lock());
                if !core.is_acked_by_all(seq) {
                    return true;
                }
            }
            alloc.release(own.pool(), k.chunk);
            false
        });
    }
}

fn pool_chunks(history: History, max_samples: Option<u32>, size: usize) -> u32 {
    let wanted = match history {
        History::KeepLast(d) => d.saturating_add(SPARE_CHUNKS),
        History::KeepAll => max_samples
            .map_or(KEEP_ALL_CHUNKS, |m| m.saturating_add(SPARE_CHUNKS))
            .min(KEEP_ALL_CHUNKS * 4),
    };
    let fit = (POOL_BYTES / size.max(64)).max(2);
    wanted.min(u32::try_from(fit).unwrap_or(u32::MAX)).max(2)
}

impl WriterEndpoint {
    fn loan_pool<T: Plain>(&self, domain: u32) -> Result<Arc<WriterPool>> {
        if let Some(p) = self.loans.pool.get() {
            return Ok(p.clone());
        }
        let size = std::mem::size_of::<T>();
        let chunks = pool_chunks(self.qos.history, self.qos.resource_limits.max_samples, size);
        let geo = PoolGeometry::new(chunks, size, std::mem::align_of::<T>()).ok_or_else(|| {
            Error::Unsupported(format!(
                "a loan of {size} bytes aligned to {} does not fit a pool",
                std::mem::align_of::<T>()
            ))
        })?;
        let own = OwnPool::create(
            std::path::Path::new(SHM_DIR),
            domain,
            host_identity(false),
            geo,
            T::LAYOUT,
        )?;
        // A chunk comes back only once reliable readers acknowledged its sample (see
        // `PoolState::reclaim`): ask for acknowledgments well before the pool runs dry.
        self.core
            .lock()
            .ack_at_least_every((chunks / 4).max(1) as usize);
        let pool = Arc::new(WriterPool {
            own,
            state: Mutex::new(PoolState {
                alloc: ChunkAlloc::new(chunks),
                kept: Vec::new(),
                dead_check: Instant::now(),
            }),
        });
        // Two threads racing for the first loan: one pool wins, the other is dropped (and
        // its file removed).
        Ok(self.loans.pool.get_or_init(|| pool).clone())
    }
}

/// A sample slot in shared memory, lent by [`DataWriter::loan`]: fill it through `DerefMut`
/// and publish it with [`DataWriter::write_loan`]; dropping it unwritten gives the slot back.
/// It starts with whatever the slot held before (a plain type has no invalid values), so
/// write every member.
pub struct Loan<T: Plain> {
    pool: Arc<WriterPool>,
    chunk: u32,
    written: bool,
    _type: std::marker::PhantomData<T>,
}

impl<T: Plain> std::fmt::Debug for Loan<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Loan").field("chunk", &self.chunk).finish()
    }
}

impl<T: Plain> Deref for Loan<T> {
    type Target = T;

    fn deref(&self) -> &T {
        // SAFETY: the chunk is `size_of::<T>()` bytes aligned for `T` (the pool was made for
        // `T`), claimed by this loan alone (WRITER_BIT: no reader takes hold of it and the
        // allocator does not hand it out again), and any bit pattern is a valid `T`.
        unsafe {
            self.pool
                .own
                .pool()
                .payload_ptr(self.chunk)
                .cast::<T>()
                .as_ref()
        }
    }
}

impl<T: Plain> DerefMut for Loan<T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in `deref`; `&mut self` makes this the only reference.
        unsafe {
            self.pool
                .own
                .pool()
                .payload_ptr(self.chunk)
                .cast::<T>()
                .as_mut()
        }
    }
}

impl<T: Plain> Drop for Loan<T> {
    fn drop(&mut self) {
        if !self.written {
            self.pool
                .state
                .lock()
                .alloc
                .release(self.pool.own.pool(), self.chunk);
        }
    }
}

impl<T: Plain + TopicType> DataWriter<T> {
    /// Lends a sample slot in this writer's shared-memory pool (made on the first loan, in
    /// `/dev/shm`, 0600). Only plain types can be loaned (`T: Plain`: `#[repr(C)]`, `Copy`,
    /// integers, floats and arrays or structs of them; `#[derive(TopicType)]` decides).
    ///
    /// When every slot is in use — kept by the history, or held by readers that have not
    /// released their samples — it waits up to the reliability's `max_blocking_time`, then
    /// fails with [`Error::Timeout`]. Slots held by reader processes that died are freed.
    pub fn loan(&self) -> Result<Loan<T>> {
        let domain = self.owning_participant().map_or(0, |p| p.domain_id());
        let pool = self.ep.loan_pool::<T>(domain)?;
        let deadline = super::far_deadline(Instant::now(), self.ep.max_blocking);
        loop {
            {
                let mut st = pool.state.lock();
                st.reclaim(&pool.own, &self.ep);
                if let Some(chunk) = st.alloc.loan(pool.own.pool()) {
                    return Ok(Loan {
                        pool: pool.clone(),
                        chunk,
                        written: false,
                        _type: std::marker::PhantomData,
                    });
                }
                let now = Instant::now();
                if now.duration_since(st.dead_check) >= DEAD_READER_CHECK {
                    st.dead_check = now;
                    if st.alloc.clear_dead_readers(pool.own.pool(), reader_alive) > 0 {
                        tracing::info!("freed the loans of a reader process that died");
                        continue;
                    }
                }
                if now >= deadline {
                    return Err(Error::Timeout);
                }
            }
            std::thread::sleep(Duration::from_micros(50));
        }
    }

    /// Publishes a loaned sample: readers reached through shared memory get a reference to
    /// the slot (no copy); others, or all when some reader is not reached that way or `T` is
    /// keyed, get the value serialized from the slot (see the module docs).
    pub fn write_loan(&self, loan: Loan<T>) -> Result<()> {
        self.write_loan_with_timestamp(loan, now_nanos())
    }

    /// [`Self::write_loan`] with an explicit source timestamp (ns since the Unix epoch), as
    /// [`DataWriter::write_with_timestamp`].
    pub fn write_loan_with_timestamp(&self, mut loan: Loan<T>, source_ns: i64) -> Result<()> {
        if T::KEYED || !self.ep.loans.all_shm() || self.ep.filters.dropping(&*loan).is_some() {
            return self.write_with_timestamp(&loan, source_ns);
        }
        let pool = loan.pool.clone();
        let payload = {
            let mut st = pool.state.lock();
            let r = st.alloc.publish(pool.own.pool(), loan.chunk);
            let payload = Arc::new(crate::loan::loan_payload(&r));
            st.kept.push(Kept {
                payload: payload.clone(),
                chunk: loan.chunk,
                seq: None,
            });
            payload
        };
        loan.written = true;
        self.ep.track_keyless();
        // On failure the history did not take the payload: the chunk is reclaimed by the
        // next loan. On success its sequence number is recorded while `payload` still keeps
        // the chunk from being reclaimed.
        let seq = self
            .ep
            .submit_with(payload.clone(), None, 0, false, source_ns, None, None)?;
        if seq.is_some() {
            let mut st = pool.state.lock();
            if let Some(k) = st.kept.iter_mut().rev().find(|k| k.chunk == loan.chunk) {
                k.seq = seq;
            }
        }
        drop(payload);
        Ok(())
    }

    /// Chunks of this writer's loan pool in use (kept by the history, lent, or held by
    /// readers); 0 before the first loan.
    pub fn loans_in_use(&self) -> usize {
        self.ep.loans.pool.get().map_or(0, |p| {
            let mut st = p.state.lock();
            st.reclaim(&p.own, &self.ep);
            st.alloc.in_use()
        })
    }
}
