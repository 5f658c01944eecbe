//! Zero-copy loans, reader side: what a loaned sample's payload is, how a reader process
//! takes hold of the chunk it names, and [`DataReader::take_loaned`].
//!
//! A writer that publishes a loan (`DataWriter::loan`, `write_loan`; see
//! `publication/loan.rs`) sends a 36-byte payload instead of the sample: the encapsulation id
//! [`LOAN_ENCAPSULATION`] (vendor-specific, never sent to other vendors' readers), two octets
//! of options, and a [`LoanRef`]. On arrival (receive thread, or `write` for readers of the
//! same participant) the reader's process takes hold of the chunk ([`ChunkHold`]), which the
//! history's [`SerializedPayload`] then carries: the writer does not reuse the chunk until
//! every such payload is dropped (taken and released, or overwritten). `take` copies the value
//! out (one copy, no decoding); `take_loaned` hands out a reference into the pool.
//!
//! Each process attaches once per pool (a reader slot of the pool, see
//! [`crate::transport::shm_pool`]) and counts its holds privately; pools live in `/dev/shm`.

use std::collections::HashMap;
use std::ops::Deref;
use std::path::Path;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;
use tessera_rtps::cdr::{CdrError, Plain, TopicType};

use crate::error::Result;
use crate::history::{Sample, StateMasks};
use crate::reader::DataReader;
use crate::sample::SerializedPayload;
use crate::transport::shm::SHM_DIR;
use crate::transport::shm_pool::{
    open_pool, own_reader_tag, Holds, LoanRef, Pool, Refused, CDR_LAYOUT,
};

/// The encapsulation id of a loan reference ("zT"): outside the ids RTPS and XTypes assign.
pub const LOAN_ENCAPSULATION: u16 = 0x7a54;
/// The encapsulation id of a reference to a serialized sample in a writer's chunk ("zU"):
/// the reader copies the CDR out on arrival (see `publication/cdr_chunks.rs`).
pub const CDR_CHUNK_ENCAPSULATION: u16 = 0x7a55;
/// Bytes of a loan payload: encapsulation header and reference.
pub const LOAN_PAYLOAD_LEN: usize = 4 + LoanRef::LEN;
/// Pools one process keeps attached at most (each costs a mapping and a reader slot).
const MAX_ATTACHED: usize = 256;

/// Loan references this process refused (malformed, stale, pool gone, no reader slot).
static REFUSED: AtomicU64 = AtomicU64::new(0);

/// Loan references this process refused so far (each also counts as an undecodable sample of
/// the reader it was for).
pub fn refused_loans() -> u64 {
    REFUSED.load(Ordering::Relaxed)
}

/// Whether `payload` is a loan reference rather than CDR.
pub(crate) fn is_loan_payload(payload: &[u8]) -> bool {
    payload.len() >= 2 && u16::from_be_bytes([payload[0], payload[1]]) == LOAN_ENCAPSULATION
}

/// Whether `payload` is a reference to a serialized sample in a writer's chunk.
pub(crate) fn is_cdr_chunk_payload(payload: &[u8]) -> bool {
    payload.len() >= 2 && u16::from_be_bytes([payload[0], payload[1]]) == CDR_CHUNK_ENCAPSULATION
}

/// The payload a writer sends for `r`.
pub(crate) fn loan_payload(r: &LoanRef) -> Vec<u8> {
    reference_payload(LOAN_ENCAPSULATION, r)
}

/// The payload a writer sends for `r`, a chunk holding a serialized sample.
pub(crate) fn cdr_chunk_payload(r: &LoanRef) -> Vec<u8> {
    reference_payload(CDR_CHUNK_ENCAPSULATION, r)
}

fn reference_payload(encapsulation: u16, r: &LoanRef) -> Vec<u8> {
    let mut v = Vec::with_capacity(LOAN_PAYLOAD_LEN);
    v.extend_from_slice(&encapsulation.to_be_bytes());
    v.extend_from_slice(&[0, 0]);
    v.extend_from_slice(&r.encode());
    v
}

/// The serialized sample a CDR-chunk reference names, copied out of its pool into a buffer
/// `buffer` gives for its length (unshared, empty; the chunk is held only for the copy).
/// Refused like a loan reference: malformed, pool gone, stale (the writer reused the chunk:
/// counted as lost by the caller), or not a pool of serialized samples.
pub(crate) fn copy_cdr_chunk(
    payload: &[u8],
    buffer: impl FnOnce(usize) -> Arc<Vec<u8>>,
) -> std::result::Result<Arc<Vec<u8>>, LoanError> {
    let r = match payload.get(2..4) {
        Some([0, 0]) => LoanRef::decode(&payload[4..]).ok_or(LoanError::Malformed)?,
        _ => return Err(LoanError::Malformed),
    };
    if r.layout != CDR_LAYOUT {
        return Err(LoanError::Refused(Refused::Layout));
    }
    let hold = ChunkHold::take(payload)?;
    let mut out = buffer(hold.len);
    let v = Arc::make_mut(&mut out);
    v.clear();
    hold.pool.pool.append_payload(hold.chunk, hold.len, v);
    Ok(out)
}

/// One pool as this process reads it: mapped once, one reader slot, the holds of every reader
/// of the process.
#[derive(Debug)]
struct Attached {
    pool: Pool,
    slot: u32,
    tag: u64,
    holds: Mutex<Holds>,
}

impl Drop for Attached {
    fn drop(&mut self) {
        self.pool.unregister_reader(self.slot, self.tag);
    }
}

/// The pools this process has attached, by domain and pool id.
type AttachedPools = Mutex<HashMap<(u32, u32), Arc<Attached>>>;

fn attached_pools() -> &'static AttachedPools {
    static POOLS: OnceLock<AttachedPools> = OnceLock::new();
    POOLS.get_or_init(Default::default)
}

/// Why a loan reference could not be resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum LoanError {
    /// Too short, or options this version does not know.
    #[error("malformed loan reference")]
    Malformed,
    /// The pool does not open (gone, not ours, bad header).
    #[error("loan pool does not open")]
    NoPool,
    /// Every reader slot of the pool is taken.
    #[error("no free reader slot in the loan pool")]
    NoSlot,
    /// The pool refused the reference.
    #[error(transparent)]
    Refused(#[from] Refused),
}

fn attach(domain: u32, id: u32) -> std::result::Result<Arc<Attached>, LoanError> {
    let mut pools = attached_pools().lock();
    if let Some(a) = pools.get(&(domain, id)) {
        return Ok(a.clone());
    }
    // A new pool: first forget those no sample holds any more whose writer has gone (their
    // last sample may have been dropped before the writer closed the pool).
    pools.retain(|_, a| Arc::strong_count(a) > 1 || !a.pool.is_closed());
    if pools.len() >= MAX_ATTACHED {
        return Err(LoanError::NoSlot);
    }
    let pool = open_pool(Path::new(SHM_DIR), domain, id).map_err(|_| LoanError::NoPool)?;
    let tag = own_reader_tag();
    let slot = pool.register_reader(tag).ok_or(LoanError::NoSlot)?;
    let a = Arc::new(Attached {
        pool,
        slot,
        tag,
        holds: Mutex::new(Holds::default()),
    });
    pools.insert((domain, id), a.clone());
    Ok(a)
}

/// This process's hold on one published chunk: the chunk is not reused while it lives.
#[derive(Debug)]
pub struct ChunkHold {
    pool: Arc<Attached>,
    chunk: u32,
    len: usize,
    layout: u64,
}

impl Drop for ChunkHold {
    fn drop(&mut self) {
        let a = &self.pool;
        let idle = {
            let mut holds = a.holds.lock();
            holds.release(&a.pool, a.slot, self.chunk);
            holds.is_empty()
        };
        // The writer is gone and this was the last sample of its pool: unmap it, or the
        // unlinked file's memory would stay allocated as long as this process runs.
        if idle && a.pool.is_closed() {
            let mut pools = attached_pools().lock();
            let key = (a.pool.domain(), a.pool.id());
            if pools.get(&key).is_some_and(|p| Arc::ptr_eq(p, a)) {
                pools.remove(&key);
            }
        }
    }
}

impl ChunkHold {
    /// Takes hold of the chunk a loan payload names (validated against the pool).
    pub(crate) fn take(payload: &[u8]) -> std::result::Result<ChunkHold, LoanError> {
        let r = match payload.get(2..4) {
            Some([0, 0]) => LoanRef::decode(&payload[4..]).ok_or(LoanError::Malformed)?,
            _ => return Err(LoanError::Malformed),
        };
        let a = attach(r.domain, r.pool)?;
        let len = r.len as usize;
        a.holds.lock().acquire(&a.pool, a.slot, &r, len, r.layout)?;
        Ok(ChunkHold {
            pool: a,
            chunk: r.chunk,
            len,
            layout: r.layout,
        })
    }

    /// The error of a reference that a reader without this type's layout was given.
    pub(crate) fn unresolvable() -> CdrError {
        CdrError::UnsupportedEncapsulation(LOAN_ENCAPSULATION)
    }

    /// Counts a reference that could not be resolved, as what a reader counts it.
    pub(crate) fn refused(e: LoanError) -> CdrError {
        REFUSED.fetch_add(1, Ordering::Relaxed);
        tracing::debug!(error = %e, "loan reference refused");
        CdrError::UnsupportedEncapsulation(LOAN_ENCAPSULATION)
    }

    /// The value as a `&T`, when `T` is the chunk's type (layout hash and size).
    fn value<T: TopicType>(&self) -> Option<&T> {
        if T::PLAIN_LAYOUT == 0
            || T::PLAIN_LAYOUT != self.layout
            || std::mem::size_of::<T>() != self.len
        {
            return None;
        }
        let p: NonNull<T> = self.pool.pool.payload_ptr(self.chunk).cast();
        if !p.as_ptr().is_aligned() {
            return None;
        }
        // SAFETY: the chunk holds `size_of::<T>()` bytes (the pool validated the length against
        // its payload size), aligned for `T`, mapped while `self.pool` lives; the writer does
        // not write into it while this process holds it; `T::PLAIN_LAYOUT != 0` says every
        // bit pattern is a valid `T`. Only a same-user process scribbling over the segment
        // could change the bytes under the reference (segments are 0600).
        Some(unsafe { p.as_ref() })
    }

    /// A copy of the value, when `T` is the chunk's type.
    pub(crate) fn read<T: TopicType>(&self) -> std::result::Result<T, CdrError> {
        let v = self
            .value::<T>()
            .ok_or(CdrError::UnsupportedEncapsulation(LOAN_ENCAPSULATION))?;
        // SAFETY: `v` is a valid `T` (see `value`); a plain type has no drop glue that a
        // bitwise copy could run twice in a way that matters (no pointers, no resources).
        Ok(unsafe { std::ptr::read(v) })
    }
}

/// How a reader of a keyless plain type turns a loan reference into CDR, for whoever wants
/// the sample's bytes (`take_serialized`, a sample sink) rather than the value in place.
#[derive(Clone, Copy)]
pub(crate) struct LoanResolver {
    /// The type's layout hash, announced as PID_TESSERA_LOAN_LAYOUT.
    pub layout: u64,
    serialize: fn(&ChunkHold) -> std::result::Result<Vec<u8>, CdrError>,
}

impl LoanResolver {
    /// The resolver of `T`, if writers can lend it (keyless and plain).
    pub(crate) fn of<T: TopicType>() -> Option<LoanResolver> {
        (!T::KEYED && T::PLAIN_LAYOUT != 0).then_some(LoanResolver {
            layout: T::PLAIN_LAYOUT,
            serialize: cdr_of::<T>,
        })
    }

    /// The sample `hold` references, serialized as `write` would (XCDR1, little-endian, the
    /// representation every peer reads).
    pub(crate) fn serialize(&self, hold: &ChunkHold) -> std::result::Result<Vec<u8>, CdrError> {
        (self.serialize)(hold)
    }
}

fn cdr_of<T: TopicType>(hold: &ChunkHold) -> std::result::Result<Vec<u8>, CdrError> {
    let value: T = hold.read()?;
    let mut out = Vec::new();
    tessera_rtps::cdr::serialize_sample(&value, tessera_rtps::cdr::Encoding::XCDR1_LE, &mut out);
    Ok(out)
}

/// A sample taken with [`DataReader::take_loaned`]: the value where the writer put it, in
/// shared memory (`is_loaned`), or, for a sample that came as CDR (a remote writer over UDP, a
/// writer that did not loan), a decoded copy. Dropping it lets the writer reuse the chunk.
#[derive(Debug)]
pub struct Loaned<T: Plain> {
    inner: Inner<T>,
}

#[derive(Debug)]
enum Inner<T> {
    /// The hold, and the value in its chunk (checked by `ChunkHold::value`).
    Shared {
        /// Kept for its `Drop`: the chunk stays ours while the sample lives.
        _hold: Arc<ChunkHold>,
        value: NonNull<T>,
    },
    /// Boxed: a large plain type must not make every sample (and vector of them) its size.
    Owned(Box<T>),
}

// SAFETY: the pointer is into a chunk that the hold keeps mapped and unchanged; `T` is plain
// (`Send + Sync`), and `ChunkHold` is `Send + Sync`: moving or sharing the sample across
// threads is as safe as moving or sharing a `T`.
unsafe impl<T: Plain> Send for Loaned<T> {}
// SAFETY: as above; the sample only ever gives out `&T`.
unsafe impl<T: Plain> Sync for Loaned<T> {}

impl<T: Plain> Loaned<T> {
    /// Whether the value is read in place in shared memory (no copy was made).
    pub fn is_loaned(&self) -> bool {
        matches!(self.inner, Inner::Shared { .. })
    }
}

impl<T: Plain> Deref for Loaned<T> {
    type Target = T;

    fn deref(&self) -> &T {
        match &self.inner {
            // SAFETY: `value` came from `ChunkHold::value::<T>` on the hold kept beside it, which
            // keeps the chunk mapped and unchanged for as long as this sample lives.
            Inner::Shared { value, .. } => unsafe { value.as_ref() },
            Inner::Owned(v) => v,
        }
    }
}

impl<T: Plain + TopicType> DataReader<T> {
    /// Takes up to `max` samples, each referencing the writer's chunk in shared memory when it
    /// came as a loan (see [`Loaned`]). A loan whose type does not match `T` (layout hash or
    /// size) is dropped and counted as undecodable.
    pub fn take_loaned(&self, max: usize) -> Result<Vec<Sample<Loaned<T>>>> {
        self.loaned(self.raw.take_held(max, StateMasks::ANY))
    }

    /// Reads up to `max` samples (leaving them in the reader), as [`Self::take_loaned`].
    pub fn read_loaned(&self, max: usize) -> Result<Vec<Sample<Loaned<T>>>> {
        self.loaned(self.raw.read_held(max, StateMasks::ANY))
    }

    fn loaned(&self, src: Vec<Sample<SerializedPayload>>) -> Result<Vec<Sample<Loaned<T>>>> {
        let mut out = Vec::with_capacity(src.len());
        for Sample { data, info } in src {
            let data = match data {
                None => None,
                Some(p) => {
                    let inner = match p.loan() {
                        Some(h) => match h.value::<T>() {
                            Some(v) => Ok(Inner::Shared {
                                _hold: h.clone(),
                                value: NonNull::from(v),
                            }),
                            None => Err(CdrError::UnsupportedEncapsulation(LOAN_ENCAPSULATION)),
                        },
                        None => decode_boxed::<T>(&p).map(Inner::Owned),
                    };
                    match inner {
                        Ok(inner) => Some(Loaned { inner }),
                        Err(e) => {
                            self.raw.ep.count_undecodable(&e);
                            continue;
                        }
                    }
                }
            };
            out.push(Sample { data, info });
        }
        Ok(out)
    }
}

/// Decodes a CDR sample into a box. Apart (and never inlined) so that the frame of
/// [`DataReader::take_loaned`] does not hold a `T` by value: a multi-megabyte plain type would
/// overflow a thread's stack even when every sample comes as a loan.
#[inline(never)]
fn decode_boxed<T: TopicType>(p: &SerializedPayload) -> std::result::Result<Box<T>, CdrError> {
    p.decode::<T>().map(Box::new)
}
