//! Large serialized samples through shared memory: a writer whose readers are all Tessera
//! readers on this host copies a sample of [`CHUNK_MIN`] bytes or more into a chunk of its
//! own pool segment (`/dev/shm/tessera-pool-…`, layout [`CDR_LAYOUT`]) and sends them a 36-byte
//! reference instead, through the ordinary writer path (sequence numbers, history, heartbeats,
//! repairs and back-pressure unchanged, on a small payload). Each reader copies the bytes out
//! of the chunk on arrival (`loan::copy_cdr_chunk`) and goes on as with any sample.
//!
//! What it saves against sending the bytes in datagrams: the copy into the receive ring and
//! out of it into a receive buffer, the fragmentation of samples over 64 KiB (DATA_FRAGs,
//! reassembly and its copy), and the cold memory of an 8 MiB ring: the few chunks of a pool
//! are reused while still in cache.
//!
//! Who gets references: only while every matched reader announced that it resolves them
//! (PID_TESSERA_LOAN_LAYOUT's flag: reliable Tessera readers), is reached through shared
//! memory only, and is not of this participant (those share the writer's buffer already).
//! A best-effort reader is not offered them: it acknowledges nothing, so the writer could
//! reuse a chunk before the reference arrived. The decision is checked again under the core
//! lock ([`CdrChunks::for_readers`]), and a reader that cannot resolve references and is sent
//! the kept history (TRANSIENT_LOCAL) gets it copied back out of the chunks first.
//!
//! A chunk is reused once the history let its sample go and every matched reliable reader
//! acknowledged it (a reader copies the bytes out before it acknowledges; see
//! `loan::KeptChunks`). When a pool has no free chunk the sample simply goes in datagrams:
//! references never make a writer wait.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use tessera_rtps::fasthash::FastHashMap;
use tessera_rtps::types::{locator_kind, Guid, Locators, SequenceNumber};

use super::loan::KeptChunks;
use super::WriterEndpoint;
use crate::qos::History;
use crate::transport::shm::{host_identity, SHM_DIR};
use crate::transport::shm_pool::{ChunkAlloc, OwnPool, PoolGeometry, CDR_LAYOUT};

/// Smallest sample sent as a reference: below it the copies saved cost less than keeping
/// the chunk (a pool lock, a CAS, a reclaim pass that may lock the writer's core).
pub const CHUNK_MIN: usize = 16 << 10;
/// Largest sample sent as a reference (larger ones go in datagrams, fragmented).
pub const CHUNK_MAX: usize = 16 << 20;
/// Most bytes per pool (the chunk count is cut to fit, at least 2): a KEEP_ALL writer's pool
/// holds its flow-control window ([`flow_window`]: 8 MiB of samples) and the spares.
const MAX_POOL_BYTES: usize = 16 << 20;
/// Chunks beyond the KEEP_LAST depth: references still on their way, readers copying.
const SPARE_CHUNKS: u32 = 16;
/// Chunk sizes: 16 KiB, 24 KiB, 32 KiB, 48 KiB, … up to [`CHUNK_MAX`] (two per octave, so a
/// chunk wastes at most a third of itself).
const CLASSES: usize = 2 * (CHUNK_MAX.trailing_zeros() - CHUNK_MIN.trailing_zeros()) as usize + 1;

/// A writer's chunk pools and what its matched readers resolve.
#[derive(Default)]
pub(crate) struct CdrChunks {
    /// Matched readers → whether they resolve references.
    peers: Mutex<FastHashMap<Guid, bool>>,
    /// Cached for every write: some reader is matched and every one resolves references.
    all_resolve: AtomicBool,
    /// Pools by size class, made on the first sample of the class.
    pools: Mutex<[Option<Arc<CdrPool>>; CLASSES]>,
    /// The writer's domain (the pools' file names).
    domain: AtomicU32,
    /// Making a pool failed (tmpfs full, no shared memory): samples go in datagrams.
    failed: AtomicBool,
}

struct CdrPool {
    own: OwnPool,
    state: Mutex<PoolState>,
}

struct PoolState {
    alloc: ChunkAlloc,
    kept: KeptChunks,
}

/// The size class of a `len`-byte sample and its chunks' payload size.
fn class_of(len: usize) -> Option<(usize, usize)> {
    if !(CHUNK_MIN..=CHUNK_MAX).contains(&len) {
        return None;
    }
    let octave = usize::BITS - 1 - len.leading_zeros();
    let base = 1usize << octave;
    let first = (octave - CHUNK_MIN.trailing_zeros()) as usize * 2;
    if len == base {
        Some((first, base))
    } else if len <= base + base / 2 {
        Some((first + 1, base + base / 2))
    } else {
        Some((first + 2, base * 2))
    }
}

impl CdrChunks {
    /// Sets the domain the writer's pools are made in.
    pub(crate) fn set_domain(&self, domain: u32) {
        self.domain.store(domain, Ordering::Relaxed);
    }

    /// Whether the writer made a pool (it may have sent references).
    pub(crate) fn has_pools(&self) -> bool {
        self.pools.lock().iter().any(Option::is_some)
    }

    /// Removes the pools' files (the writer is being deleted and its readers acknowledged
    /// everything): they go at once even if the endpoint outlives its owner for a moment.
    pub(crate) fn unlink_pools(&self) {
        for p in self.pools.lock().iter().flatten() {
            p.own.unlink();
        }
    }

    /// A reader matched: a remote one with its selected unicast locators and whether it
    /// announced that it resolves references; `local` for a reader of this participant.
    pub(crate) fn matched(&self, reader: Guid, unicast: &Locators, announced: bool, local: bool) {
        let shm = !unicast.is_empty()
            && unicast
                .as_slice()
                .iter()
                .all(|l| l.kind == locator_kind::TESSERA_SHM);
        let mut p = self.peers.lock();
        p.insert(reader, announced && shm && !local);
        self.cache(&p);
    }

    /// A reader went away.
    pub(crate) fn unmatched(&self, reader: Guid) {
        let mut p = self.peers.lock();
        p.remove(&reader);
        self.cache(&p);
    }

    fn cache(&self, peers: &FastHashMap<Guid, bool>) {
        let all = !peers.is_empty() && peers.values().all(|r| *r);
        self.all_resolve.store(all, Ordering::Relaxed);
    }

    /// A reference to `payload` copied into a chunk, when every matched reader resolves
    /// references and a chunk of its size is free; `None` to send the payload itself.
    /// Called without the core lock (the copy is not made under it).
    pub(crate) fn to_chunk(&self, ep: &WriterEndpoint, payload: &[u8]) -> Option<Chunked> {
        if payload.len() < CHUNK_MIN
            || !self.all_resolve.load(Ordering::Relaxed)
            || self.failed.load(Ordering::Relaxed)
        {
            return None;
        }
        let pool = self.pool_for(ep, payload.len())?;
        let mut st = pool.state.lock();
        let PoolState { alloc, kept } = &mut *st;
        kept.reclaim_oldest(alloc, pool.own.pool(), ep);
        let chunk = match alloc.loan_recent(pool.own.pool()) {
            Some(c) => c,
            None => {
                // Out of order (a write that failed, a sample a newer one replaced while the
                // oldest waits for an acknowledgment): look at every chunk once before giving up.
                kept.reclaim(alloc, pool.own.pool(), ep);
                alloc.loan_recent(pool.own.pool())?
            }
        };
        pool.own.pool().fill(chunk, payload);
        let len = u32::try_from(payload.len()).expect("at most CHUNK_MAX");
        let r = alloc.publish_len(pool.own.pool(), chunk, len);
        let reference = Arc::new(crate::loan::cdr_chunk_payload(&r));
        kept.push(reference.clone(), chunk);
        drop(st);
        Some(Chunked {
            reference,
            pool,
            chunk,
        })
    }

    fn pool_for(&self, ep: &WriterEndpoint, len: usize) -> Option<Arc<CdrPool>> {
        let (class, size) = class_of(len)?;
        let mut pools = self.pools.lock();
        if let Some(p) = &pools[class] {
            return Some(p.clone());
        }
        let chunks = pool_chunks(ep.qos.history, size);
        let made = PoolGeometry::new(chunks, size, 8)
            .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidInput, "chunk geometry"));
        let made = made.and_then(|geo| {
            OwnPool::create(
                std::path::Path::new(SHM_DIR),
                self.domain.load(Ordering::Relaxed),
                host_identity(false),
                geo,
                CDR_LAYOUT,
            )
        });
        match made {
            Ok(own) => {
                // A chunk comes back only once reliable readers acknowledged its sample: ask
                // for acknowledgments well before the pool runs dry.
                ep.lock_core()
                    .ack_at_least_every((chunks / 4).max(1) as usize);
                let p = Arc::new(CdrPool {
                    own,
                    state: Mutex::new(PoolState {
                        alloc: ChunkAlloc::new(chunks),
                        kept: KeptChunks::default(),
                    }),
                });
                pools[class] = Some(p.clone());
                Some(p)
            }
            Err(e) => {
                self.failed.store(true, Ordering::Relaxed);
                tracing::warn!(writer = ?ep.guid, error = %e,
                    "no shared-memory pool for large samples; they go in datagrams");
                None
            }
        }
    }

    /// What the history keeps and sends for `payload`: a reference only while every matched
    /// reader still resolves references, else the sample's bytes copied back out of its
    /// chunk. Called under the core lock, where a reader matched after [`Self::to_chunk`]
    /// decided is already known (`matched` records readers before they take that lock).
    pub(crate) fn for_readers(&self, payload: Arc<Vec<u8>>) -> Arc<Vec<u8>> {
        if !crate::loan::is_cdr_chunk_payload(&payload) || self.all_resolve.load(Ordering::Relaxed)
        {
            return payload;
        }
        self.copy_out(&payload).map_or(payload, Arc::new)
    }

    /// Replaces the references the history keeps by the samples' bytes when some matched
    /// reader cannot resolve them: a late joiner that is sent the history gets samples.
    pub(crate) fn serialize_history(&self, core: &mut tessera_rtps::writer::WriterCore) {
        if self.all_resolve.load(Ordering::Relaxed) || self.pools.lock().iter().all(Option::is_none)
        {
            return;
        }
        let n = core.rewrite_payloads(|s| {
            if !crate::loan::is_cdr_chunk_payload(&s.payload) {
                return None;
            }
            self.copy_out(&s.payload).map(Arc::new)
        });
        if n > 0 {
            tracing::debug!(samples = n, "chunk references copied out for a late joiner");
        }
    }

    /// The bytes a reference of one of these pools names; `None` for another's.
    fn copy_out(&self, reference: &[u8]) -> Option<Vec<u8>> {
        let r = crate::transport::shm_pool::LoanRef::decode(reference.get(4..)?)?;
        let pools = self.pools.lock();
        let pool = pools
            .iter()
            .flatten()
            .find(|p| p.own.pool().id() == r.pool)?;
        let p = pool.own.pool();
        let len = r.len as usize;
        (r.chunk < p.geometry().chunks() && len <= p.geometry().payload()).then(|| {
            let mut out = Vec::with_capacity(len);
            p.append_payload(r.chunk, len, &mut out);
            out
        })
    }
}

/// A sample copied into a chunk: its reference, and where to record its sequence number.
pub(crate) struct Chunked {
    pub reference: Arc<Vec<u8>>,
    pool: Arc<CdrPool>,
    chunk: u32,
}

impl Chunked {
    /// The history took the sample as `seq` (`None`: it did not; the chunk is reclaimed).
    pub(crate) fn submitted(self, seq: Option<SequenceNumber>) {
        if seq.is_some() {
            self.pool.state.lock().kept.submitted(self.chunk, seq);
        }
    }
}

/// Chunks for a writer keeping `history`, of `size` bytes each: a KEEP_LAST writer's depth,
/// a KEEP_ALL writer's flow-control window (it waits for acknowledgments before it would run
/// out), plus spares; at most [`MAX_POOL_BYTES`].
fn pool_chunks(history: History, size: usize) -> u32 {
    let kept = match history {
        History::KeepLast(d) => d as usize,
        // The window of the class's smallest samples (a class spans a third of its size).
        History::KeepAll => flow_window((size * 2 / 3).max(CHUNK_MIN)),
    };
    let fit = MAX_POOL_BYTES / size.max(64);
    let chunks = (kept + SPARE_CHUNKS as usize).min(fit).max(2);
    u32::try_from(chunks).unwrap_or(u32::MAX)
}

/// The flow-control window (samples written and not yet acknowledged by every reliable
/// reader) of a KEEP_ALL writer sending references to samples of `len` bytes: twice that of
/// samples sent in datagrams. The window keeps a writer from overrunning its readers' receive
/// buffers; references take little room there, and with the datagrams' window a 64 KiB stream
/// stalled on acknowledgments (52k samples/s with both processes half idle, against 100–118k
/// with this one and 145–159k for datagrams; 4 times the window reached no more).
pub(crate) fn flow_window(len: usize) -> usize {
    2 * super::flow_window(len)
}

/// The length of the sample a chunk reference names; `None` for any other payload.
pub(crate) fn referenced_len(payload: &[u8]) -> Option<usize> {
    if !crate::loan::is_cdr_chunk_payload(payload) {
        return None;
    }
    let r = crate::transport::shm_pool::LoanRef::decode(payload.get(4..)?)?;
    Some(r.len as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_classes_cover_every_length_with_at_most_a_third_wasted() {
        assert_eq!(class_of(CHUNK_MIN - 1), None);
        assert_eq!(class_of(CHUNK_MAX + 1), None);
        assert_eq!(class_of(CHUNK_MIN), Some((0, 16 << 10)));
        assert_eq!(class_of((16 << 10) + 1), Some((1, 24 << 10)));
        assert_eq!(class_of(65_540), Some((5, 96 << 10)));
        assert_eq!(class_of(CHUNK_MAX), Some((CLASSES - 1, CHUNK_MAX)));
        let mut last = 0;
        for len in (CHUNK_MIN..=CHUNK_MAX).step_by(4093).chain([CHUNK_MAX]) {
            let (class, size) = class_of(len).unwrap();
            assert!(class < CLASSES && class >= last, "{len}");
            assert!(size >= len && size * 2 <= len * 3 + 3, "{len} in {size}");
            last = class;
        }
    }

    #[test]
    fn pools_hold_the_history_or_the_flow_window_within_their_bound() {
        assert_eq!(pool_chunks(History::KeepLast(1), 96 << 10), 17);
        // The window of 64 KiB samples (the smallest in 96 KiB chunks), and spares.
        assert_eq!(pool_chunks(History::KeepAll, 96 << 10), 128 + 16);
        // 512 + 16 chunks of 24 KiB is over 12 MiB: within 16 MiB.
        assert_eq!(pool_chunks(History::KeepAll, 24 << 10), 512 + 16);
        // A window of 1 MiB samples is 32 (the datagrams' is at least 16), cut to fit.
        assert_eq!(pool_chunks(History::KeepAll, 2 << 20), 8);
        assert_eq!(pool_chunks(History::KeepAll, CHUNK_MAX), 2);
        assert_eq!(pool_chunks(History::KeepLast(1000), 1 << 20), 16);
    }

    #[test]
    fn a_reference_stands_for_the_length_of_its_sample() {
        let r = crate::transport::shm_pool::LoanRef {
            domain: 1,
            pool: 2,
            chunk: 3,
            generation: 4,
            len: 65_540,
            layout: CDR_LAYOUT,
        };
        assert_eq!(
            referenced_len(&crate::loan::cdr_chunk_payload(&r)),
            Some(65_540)
        );
        assert_eq!(referenced_len(&crate::loan::loan_payload(&r)), None);
        assert_eq!(referenced_len(&[0x7a, 0x55, 0, 0, 1]), None);
        assert_eq!(referenced_len(&[0, 1, 0, 0]), None);
    }
}
