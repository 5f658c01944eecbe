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
//! References go only where every reader can resolve them: when each matched reader is
//! reached through shared memory (of this participant, or a Tessera participant on this host)
//! and announced that it resolves this type's layout (PID_TESSERA_LOAN_LAYOUT: typed readers
//! of a keyless plain type without a content filter), and the type is keyless. Otherwise — a
//! UDP reader, another vendor, an untyped or dynamic reader, a durability service, a node's
//! proxy reader, a keyed type — `write_loan` serializes the value from the chunk as `write`
//! would (one copy) and frees the chunk at once. A reader that matches later than a
//! reference was written (TRANSIENT_LOCAL) and cannot resolve it counts it undecodable.

use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
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

/// What a writer endpoint knows for loans: its pool (made on the first loan) and, for each
/// matched reader, the plain layout it resolves references of (0: it cannot resolve them).
#[derive(Default)]
pub(crate) struct WriterLoans {
    pool: OnceLock<Arc<WriterPool>>,
    /// Matched readers (remote and of this participant) → the layout they resolve.
    peers: Mutex<FastHashMap<Guid, u64>>,
    /// Cached for `write_loan` (two atomic loads, no lock): the layout every matched reader
    /// resolves, 0 when they differ or one resolves none; meaningless while `no_peer`.
    common_layout: AtomicU64,
    no_peer: AtomicBool,
    /// Large serialized samples sent as references to shared-memory chunks.
    pub(super) cdr: super::cdr_chunks::CdrChunks,
}

impl WriterLoans {
    /// Removes the files of the writer's pools (loans and chunks) when the writer is
    /// deleted; mappings stay until the last sample that references them goes.
    pub(crate) fn unlink_pools(&self) {
        if let Some(p) = self.pool.get() {
            p.own.unlink();
        }
        self.cdr.unlink_pools();
    }

    /// A remote reader matched with these (selected) unicast locators, announcing `layout`
    /// (PID_TESSERA_LOAN_LAYOUT; 0 when it announced none). It can resolve a reference only
    /// if it reaches the pool (every locator is shared memory: a Tessera participant on this
    /// host) and said it resolves this type's layout: an untyped, dynamic or content-filtered
    /// reader, a durability service or a node's proxy reader hands bytes on and announces none.
    /// `cdr_chunks`: it announced that it resolves references to serialized samples.
    pub(crate) fn matched(&self, reader: Guid, unicast: &Locators, layout: u64, cdr_chunks: bool) {
        self.cdr.matched(reader, unicast, cdr_chunks, false);
        let shm = !unicast.is_empty()
            && unicast
                .as_slice()
                .iter()
                .all(|l| l.kind == locator_kind::TESSERA_SHM);
        self.set(reader, if shm { layout } else { 0 });
    }

    /// A reader of this participant matched (it maps the pool as the writer does).
    pub(crate) fn matched_local(&self, reader: Guid, layout: u64) {
        self.cdr.matched(reader, &Locators::new(), false, true);
        self.set(reader, layout);
    }

    fn set(&self, reader: Guid, layout: u64) {
        let mut p = self.peers.lock();
        p.insert(reader, layout);
        self.cache(&p);
    }

    /// A reader went away.
    pub(crate) fn unmatched(&self, reader: Guid) {
        self.cdr.unmatched(reader);
        let mut p = self.peers.lock();
        p.remove(&reader);
        self.cache(&p);
    }

    fn cache(&self, peers: &FastHashMap<Guid, u64>) {
        let mut layouts = peers.values();
        let first = layouts.next().copied().unwrap_or(0);
        let common = if layouts.all(|l| *l == first) {
            first
        } else {
            0
        };
        self.common_layout.store(common, Ordering::Relaxed);
        self.no_peer.store(peers.is_empty(), Ordering::Relaxed);
    }

    /// Every matched reader resolves references of `layout` (true with none matched yet).
    fn all_resolve(&self, layout: u64) -> bool {
        self.no_peer.load(Ordering::Relaxed)
            || (layout != 0 && self.common_layout.load(Ordering::Relaxed) == layout)
    }

    /// What the history keeps and sends for `payload`: the loan reference itself while every
    /// matched reader resolves it, else the sample serialized from its chunk. Called under
    /// the writer's core lock, where a reader matched after `write_loan` decided to send a
    /// reference is already known (`matched` records readers before it takes that lock).
    pub(crate) fn for_readers(&self, payload: Arc<Vec<u8>>, xcdr2: bool) -> Arc<Vec<u8>> {
        let payload = self.cdr.for_readers(payload);
        // Every write passes here: a writer that never lent stops at the first load.
        match self.pool.get() {
            Some(pool)
                if crate::loan::is_loan_payload(&payload) && !self.all_resolve(pool.layout) =>
            {
                pool.serialize(&payload, xcdr2).map_or(payload, Arc::new)
            }
            _ => payload,
        }
    }

    /// Serializes the references the history keeps when some matched reader cannot resolve
    /// them: a late joiner that is sent the history (TRANSIENT_LOCAL) gets samples it reads.
    /// Readers that resolved the references hold their chunks as before.
    pub(crate) fn serialize_history(
        &self,
        core: &mut tessera_rtps::writer::WriterCore,
        xcdr2: bool,
    ) {
        self.cdr.serialize_history(core);
        let Some(pool) = self.pool.get() else {
            return;
        };
        if self.all_resolve(pool.layout) {
            return;
        }
        let n = core.rewrite_payloads(|s| {
            if !crate::loan::is_loan_payload(&s.payload) {
                return None;
            }
            pool.serialize(&s.payload, xcdr2).map(Arc::new)
        });
        if n > 0 {
            tracing::debug!(samples = n, "loan references serialized for a late joiner");
        }
    }
}

/// A writer's pool and its private bookkeeping.
struct WriterPool {
    own: OwnPool,
    state: Mutex<PoolState>,
    /// The lent type's layout hash ([`Plain::LAYOUT`]).
    layout: u64,
    /// Serializes the value in a chunk (XCDR2 or XCDR1), for readers that cannot resolve
    /// references; monomorphized for the lent type when the pool is made.
    chunk_cdr: fn(&crate::transport::shm_pool::Pool, u32, bool) -> Vec<u8>,
}

impl WriterPool {
    /// The sample a reference of this pool names, serialized; `None` for a reference that
    /// is not this pool's.
    fn serialize(&self, reference: &[u8], xcdr2: bool) -> Option<Vec<u8>> {
        let r = crate::transport::shm_pool::LoanRef::decode(reference.get(4..)?)?;
        let pool = self.own.pool();
        (r.pool == pool.id() && r.chunk < pool.geometry().chunks())
            .then(|| (self.chunk_cdr)(pool, r.chunk, xcdr2))
    }
}

fn chunk_cdr<T: Plain + TopicType>(
    pool: &crate::transport::shm_pool::Pool,
    chunk: u32,
    xcdr2: bool,
) -> Vec<u8> {
    // SAFETY: the pool was made for `T` (chunk payloads of `size_of::<T>()` bytes aligned
    // for it) and the chunk is in range; it is published and kept (the history shares its
    // reference), so the writer does not refill it and readers only read it; any bit
    // pattern is a valid `T`.
    let value: T = unsafe { pool.payload_ptr(chunk).cast::<T>().read() };
    let encoding = if xcdr2 {
        tessera_rtps::cdr::Encoding::XCDR2_LE
    } else {
        tessera_rtps::cdr::Encoding::XCDR1_LE
    };
    let mut out = Vec::new();
    tessera_rtps::cdr::serialize_sample(&value, encoding, &mut out);
    out
}

struct PoolState {
    alloc: ChunkAlloc,
    kept: KeptChunks,
    dead_check: Instant,
}

impl PoolState {
    fn reclaim(&mut self, own: &OwnPool, ep: &WriterEndpoint) {
        self.kept.reclaim(&mut self.alloc, own.pool(), ep);
    }
}

/// A published chunk: the reference buffer the history shares, and the sample's sequence
/// number once `submit` gave it.
struct Kept {
    payload: Arc<Vec<u8>>,
    chunk: u32,
    seq: Option<SequenceNumber>,
}

/// The published chunks of one pool (loans, or serialized samples: `cdr_chunks.rs`), until
/// nothing needs them.
#[derive(Default)]
pub(super) struct KeptChunks(Vec<Kept>);

impl KeptChunks {
    /// `chunk` was published as `payload` (the reference the history will share).
    pub(super) fn push(&mut self, payload: Arc<Vec<u8>>, chunk: u32) {
        self.0.push(Kept {
            payload,
            chunk,
            seq: None,
        });
    }

    /// The history took the sample of `chunk` as `seq`.
    pub(super) fn submitted(&mut self, chunk: u32, seq: Option<SequenceNumber>) {
        if let Some(k) = self.0.iter_mut().rev().find(|k| k.chunk == chunk) {
            k.seq = seq;
        }
    }

    /// [`Self::reclaim`] for chunks published in the order their samples are let go and
    /// acknowledged (samples copied out on arrival, `cdr_chunks`): looks at the oldest only,
    /// and stops at the first still needed, so that a write does not touch every chunk's
    /// reference count.
    pub(super) fn reclaim_oldest(
        &mut self,
        alloc: &mut ChunkAlloc,
        pool: &crate::transport::shm_pool::Pool,
        ep: &WriterEndpoint,
    ) {
        let mut core = None;
        let mut done = 0;
        for k in &self.0 {
            if Arc::strong_count(&k.payload) > 1 {
                break;
            }
            if let Some(seq) = k.seq {
                let core = core.get_or_insert_with(|| ep.lock_core());
                if !core.is_acked_by_all(seq) {
                    break;
                }
            }
            alloc.release(pool, k.chunk);
            done += 1;
        }
        self.0.drain(..done);
    }

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
    pub(super) fn reclaim(
        &mut self,
        alloc: &mut ChunkAlloc,
        pool: &crate::transport::shm_pool::Pool,
        ep: &WriterEndpoint,
    ) {
        // The writer's core is locked once, and only when some chunk is otherwise free.
        let mut core = None;
        self.0.retain(|k| {
            if Arc::strong_count(&k.payload) > 1 {
                return true;
            }
            if let Some(seq) = k.seq {
                let core = core.get_or_insert_with(|| ep.lock_core());
                if !core.is_acked_by_all(seq) {
                    return true;
                }
            }
            alloc.release(pool, k.chunk);
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
    fn loan_pool<T: Plain + TopicType>(&self, domain: u32) -> Result<Arc<WriterPool>> {
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
        self.lock_core()
            .ack_at_least_every((chunks / 4).max(1) as usize);
        let pool = Arc::new(WriterPool {
            own,
            state: Mutex::new(PoolState {
                alloc: ChunkAlloc::new(chunks),
                kept: KeptChunks::default(),
                dead_check: Instant::now(),
            }),
            layout: T::LAYOUT,
            chunk_cdr: chunk_cdr::<T>,
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
        // An ATOMIC writer's samples go through its consensus group, whose members are
        // not loan readers: they get CDR.
        if T::KEYED
            || self.ep.atomic.get().is_some()
            || !self.ep.loans.all_resolve(T::PLAIN_LAYOUT)
            || self.ep.filters.dropping(&*loan).is_some()
        {
            return self.write_with_timestamp(&loan, source_ns);
        }
        let pool = loan.pool.clone();
        let payload = {
            let mut st = pool.state.lock();
            let r = st.alloc.publish(pool.own.pool(), loan.chunk);
            let payload = Arc::new(crate::loan::loan_payload(&r));
            st.kept.push(payload.clone(), loan.chunk);
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
            pool.state.lock().kept.submitted(loan.chunk, seq);
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
