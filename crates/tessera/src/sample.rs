//! Samples as bytes: what the runtime needs to know about a type without naming it
//! ([`TypeSupport`]), and the serialized form readers keep in their history.
//!
//! The reader side keeps samples serialized (encapsulation header included) and decodes them
//! only at the API edge (`DataReader::<T>::take`), so one runtime serves derived types, dynamic
//! types and bindings that want bytes ([`crate::UntypedDataReader`]).

use crate::history::KeyHash;
use crate::loan::ChunkHold;
use crate::TopicType;
use parking_lot::Mutex;
use std::marker::PhantomData;
use std::sync::Arc;
use tessera_rtps::cdr::{self, CdrError};

/// What the runtime needs to know about a topic type, object-safe so that it can be chosen at
/// run time.
pub trait TypeSupport: Send + Sync + 'static {
    /// The registered type name (as sent in discovery).
    fn type_name(&self) -> &str;
    /// Whether the type has key members.
    fn is_keyed(&self) -> bool;
    /// The key hash of a serialized sample (encapsulation header included); all zeros for a
    /// keyless type.
    fn key_hash_of_sample(&self, payload: &[u8]) -> Result<KeyHash, CdrError>;
    /// The key hash of a serialized key (a dispose or unregister without PID_KEY_HASH); all
    /// zeros for a keyless type.
    fn key_hash_of_key(&self, payload: &[u8]) -> Result<KeyHash, CdrError>;
    /// The type's XTypes description (TypeObjects, identifiers, TypeInformation), if it has
    /// one: announced in SEDP and served by the TypeLookup service.
    fn type_bundle(&self) -> Option<tessera_rtps::xtypes::TypeBundle> {
        None
    }
    /// The key-only payload (what a dispose or unregister carries) of a serialized sample, in
    /// the sample's encoding: an untyped writer keeps it to unregister the instance when it is
    /// deleted. `None` when the type cannot say (the instance is then not unregistered).
    fn key_payload_of_sample(&self, _payload: &[u8]) -> Option<Vec<u8>> {
        None
    }
}

/// [`TypeSupport`] of a derived [`TopicType`].
///
/// Cost of the key hash: nothing for a keyless type; for a keyed one the sample is walked with
/// `TopicType::extract_key`, which reads the members in order but builds only the key members
/// (re-encoded as big-endian XCDR2 into a per-thread scratch buffer, so no allocation), then
/// MD5 when the key may exceed 16 bytes — cheaper than decoding the sample, as the receive
/// thread did before.
pub struct TypedSupport<T>(PhantomData<fn() -> T>);

impl<T: TopicType> TypedSupport<T> {
    /// The support of `T`.
    pub fn new() -> Self {
        TypedSupport(PhantomData)
    }

    /// The support of `T`, shareable.
    pub fn arc() -> Arc<dyn TypeSupport> {
        Arc::new(Self::new())
    }
}

impl<T: TopicType> Default for TypedSupport<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: TopicType> std::fmt::Debug for TypedSupport<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("TypedSupport").field(&T::TYPE_NAME).finish()
    }
}

impl<T: TopicType> TypeSupport for TypedSupport<T> {
    fn type_name(&self) -> &str {
        T::TYPE_NAME
    }

    fn is_keyed(&self) -> bool {
        T::KEYED
    }

    fn key_hash_of_sample(&self, payload: &[u8]) -> Result<KeyHash, CdrError> {
        cdr::key_hash_from_sample_payload::<T>(payload)
    }

    fn key_hash_of_key(&self, payload: &[u8]) -> Result<KeyHash, CdrError> {
        cdr::key_hash_from_key_payload::<T>(payload)
    }

    fn type_bundle(&self) -> Option<tessera_rtps::xtypes::TypeBundle> {
        Some(T::type_bundle())
    }

    fn key_payload_of_sample(&self, payload: &[u8]) -> Option<Vec<u8>> {
        let (encoding, _) = cdr::parse_payload_for(payload, T::EXTENSIBILITY).ok()?;
        let sample: T = cdr::deserialize_sample(payload).ok()?;
        let mut out = Vec::new();
        cdr::serialize_key(&sample, encoding, &mut out);
        Some(out)
    }
}

/// A serialized sample as a reader's history keeps it: the payload with its encapsulation
/// header. Cloning shares the bytes (what `read` does); the history's `SampleInfo` carries the
/// writer, the instance and the timestamps.
///
/// A loaned sample's payload is a reference into a writer's loan pool ([`crate::loan`]) and
/// carries this process's hold on the chunk, released when the last clone is dropped.
#[derive(Clone)]
pub struct SerializedPayload(Bytes, Option<Arc<ChunkHold>>);

/// The bytes of a [`SerializedPayload`]: a small payload is kept inline, a larger one in a
/// shared buffer.
///
/// Inline, a small sample costs the receive thread a copy of a few dozen bytes and no locked
/// instruction: a pooled buffer costs five (the pool's lock and unlock when it is taken, the
/// uniqueness check, the lock and unlock when it is given back), which were ~15 % of the
/// receive thread's time in a 16 B shared-memory stream.
#[derive(Clone)]
enum Bytes {
    Inline { len: u8, bytes: [u8; INLINE_MAX] },
    Shared(Arc<Vec<u8>>),
}

/// Payloads of up to this many bytes (encapsulation header included) are kept inline: 40
/// bytes with the length and the variant's tag, the size of a 16 B sample of ddsperf's
/// `KeyedSeq` type (32 bytes) with room to spare.
const INLINE_MAX: usize = 38;

impl Bytes {
    fn as_slice(&self) -> &[u8] {
        match self {
            // `len` is at most INLINE_MAX (see `SerializedPayload::inline`).
            Bytes::Inline { len, bytes } => &bytes[..usize::from(*len).min(INLINE_MAX)],
            Bytes::Shared(b) => b,
        }
    }
}

impl PartialEq for SerializedPayload {
    fn eq(&self, other: &Self) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl Eq for SerializedPayload {}

impl SerializedPayload {
    /// Wraps bytes (encapsulation header included).
    pub fn new(bytes: Vec<u8>) -> Self {
        SerializedPayload(Bytes::Shared(Arc::new(bytes)), None)
    }

    /// Shares a buffer (a local writer's) without copying it.
    pub fn shared(bytes: Arc<Vec<u8>>) -> Self {
        SerializedPayload(Bytes::Shared(bytes), None)
    }

    /// A copy of `bytes` kept inline, if they are few enough.
    fn inline(bytes: &[u8]) -> Option<Self> {
        let len = u8::try_from(bytes.len())
            .ok()
            .filter(|&n| usize::from(n) <= INLINE_MAX)?;
        let mut inline = [0; INLINE_MAX];
        inline[..bytes.len()].copy_from_slice(bytes);
        Some(SerializedPayload(
            Bytes::Inline { len, bytes: inline },
            None,
        ))
    }

    /// A loan reference's bytes with the hold taken on its chunk.
    pub(crate) fn loaned(bytes: Arc<Vec<u8>>, hold: ChunkHold) -> Self {
        SerializedPayload(Bytes::Shared(bytes), Some(Arc::new(hold)))
    }

    /// The bytes, encapsulation header included.
    pub fn as_bytes(&self) -> &[u8] {
        self.0.as_slice()
    }

    /// The hold on a loaned sample's chunk.
    pub(crate) fn loan(&self) -> Option<&Arc<ChunkHold>> {
        self.1.as_ref()
    }

    /// Decodes the sample (a loaned one is copied out of its chunk).
    pub fn decode<T: TopicType>(&self) -> Result<T, CdrError> {
        match &self.1 {
            Some(h) => h.read::<T>(),
            None => cdr::deserialize_sample(self.as_bytes()),
        }
    }

    /// [`Self::decode`] into `out`, keeping the buffers of its sequences and strings. After an
    /// error `out` holds some valid value.
    pub fn decode_in_place<T: TopicType>(&self, out: &mut T) -> Result<(), CdrError> {
        match &self.1 {
            Some(h) => {
                *out = h.read::<T>()?;
                Ok(())
            }
            None => cdr::deserialize_sample_into(self.as_bytes(), out),
        }
    }
}

impl AsRef<[u8]> for SerializedPayload {
    fn as_ref(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl std::fmt::Debug for SerializedPayload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SerializedPayload")
            .field("len", &self.as_bytes().len())
            .finish()
    }
}

/// A sample on its way from the receive path into a reader's history.
#[derive(Debug, Clone)]
pub struct SerializedSample {
    /// The payload, encapsulation header included.
    pub payload: SerializedPayload,
    /// Its instance's key hash (all zeros for keyless types).
    pub key_hash: KeyHash,
    /// The writer's GUID.
    pub writer: [u8; 16],
    /// Source timestamp (ns), 0 if the writer sent none.
    pub source_ts: i64,
    /// Reception timestamp (ns, the runtime's clock).
    pub reception_ts: i64,
}

/// What a kept buffer costs beyond its capacity (the `Arc` and `Vec` headers, the
/// allocator's), counted against a pool's byte bound.
const BUFFER_OVERHEAD: usize = 64;

/// Buffers kept for reuse, so that a steady stream of samples allocates none per sample.
/// Bounded in count, in the capacity of a kept buffer and in the bytes kept; only buffers
/// nothing else shares are kept.
pub(crate) struct BufferPool {
    free: Mutex<KeptBuffers>,
    max_buffers: usize,
    max_capacity: usize,
    max_bytes: usize,
}

#[derive(Default)]
struct KeptBuffers {
    buffers: Vec<Arc<Vec<u8>>>,
    bytes: usize,
}

impl KeptBuffers {
    /// Keeps `buf`, which costs `cost` bytes, if `pool`'s bounds allow.
    fn keep(&mut self, buf: Arc<Vec<u8>>, cost: usize, pool: &BufferPool) {
        if self.buffers.len() < pool.max_buffers && self.bytes + cost <= pool.max_bytes {
            self.bytes += cost;
            self.buffers.push(buf);
        }
    }
}

impl BufferPool {
    pub(crate) fn new(max_buffers: usize, max_capacity: usize, max_bytes: usize) -> BufferPool {
        BufferPool {
            free: Mutex::new(KeptBuffers::default()),
            max_buffers,
            max_capacity,
            max_bytes,
        }
    }

    /// An empty buffer of at least `capacity` bytes nothing else shares: a kept one when
    /// there is one.
    pub(crate) fn buffer(&self, capacity: usize) -> Arc<Vec<u8>> {
        self.filled(capacity, |_| ()).0
    }

    /// A buffer nothing else shares, filled by `fill` (a kept one when there is one), and what
    /// `fill` returned. Filled here rather than by the caller through [`Arc::make_mut`]: its
    /// uniqueness check would be one more locked instruction per written sample, and a new
    /// buffer is filled before it is put in its `Arc`.
    pub(crate) fn filled<R>(
        &self,
        capacity: usize,
        fill: impl FnOnce(&mut Vec<u8>) -> R,
    ) -> (Arc<Vec<u8>>, R) {
        if capacity <= self.max_capacity {
            if let Some(mut buf) = self.take_kept() {
                if let Some(v) = Arc::get_mut(&mut buf) {
                    v.clear();
                    v.reserve(capacity);
                    let r = fill(v);
                    return (buf, r);
                }
            }
        }
        let mut v = Vec::with_capacity(capacity);
        let r = fill(&mut v);
        (Arc::new(v), r)
    }

    /// The buffer given back last, if one is kept.
    fn take_kept(&self) -> Option<Arc<Vec<u8>>> {
        let mut free = self.free.lock();
        let b = free.buffers.pop();
        if let Some(b) = &b {
            free.bytes -= b.capacity() + BUFFER_OVERHEAD;
        }
        b
    }

    /// A buffer holding a copy of `bytes` that nothing else shares: a kept one when there is
    /// one.
    pub(crate) fn copy_of(&self, bytes: &[u8]) -> Arc<Vec<u8>> {
        self.filled(bytes.len(), |v| tessera_rtps::copy::extend_bytes(v, bytes))
            .0
    }

    /// Takes back a buffer no longer needed.
    pub(crate) fn give_back(&self, buf: Arc<Vec<u8>>) {
        if let Some(cap) = self.keepable(&buf) {
            self.free.lock().keep(buf, cap, self);
        }
    }

    /// Takes back the buffers in `bufs` (leaving it empty) under one lock.
    pub(crate) fn give_back_all(&self, bufs: &mut Vec<Arc<Vec<u8>>>) {
        let mut free = self.free.lock();
        for buf in bufs.drain(..) {
            if let Some(cap) = self.keepable(&buf) {
                free.keep(buf, cap, self);
            }
        }
    }

    /// What keeping `buf` costs against the byte bound, if it may be kept: nothing else
    /// shares it and its capacity is within bounds.
    fn keepable(&self, buf: &Arc<Vec<u8>>) -> Option<usize> {
        let cap = buf.capacity();
        // `Arc::get_mut` would need `&mut`; the counts say the same for an owned `Arc`.
        (Arc::strong_count(buf) == 1 && Arc::weak_count(buf) == 0 && cap <= self.max_capacity)
            .then_some(cap + BUFFER_OVERHEAD)
    }
}

/// Payload buffers a reader recycles: the receive thread copies each sample into one, and a
/// `take` that decoded the sample gives it back, so a reader in steady state allocates no
/// payload buffer per sample. Bounded in count, in the size of a kept buffer and in bytes; small
/// and large buffers are kept apart, so that a few large samples do not crowd out the many
/// small ones.
pub(crate) struct PayloadPool {
    small: BufferPool,
    /// Large samples (copied out of shared-memory chunks, reassembled, or sent whole): freeing
    /// and allocating one per sample costs more than the copy — the allocator returns the
    /// memory to the kernel and every page faults in again, zeroed (64 KiB reliable
    /// throughput over shared memory 19k samples/s with 55 µs of CPU each, most of it in page
    /// faults, before large buffers were kept).
    large: BufferPool,
}

impl Default for PayloadPool {
    fn default() -> Self {
        PayloadPool {
            small: BufferPool::new(
                POOL_BUFFERS,
                POOL_MAX_CAPACITY,
                POOL_BUFFERS * POOL_MAX_CAPACITY,
            ),
            large: BufferPool::new(LARGE_BUFFERS, LARGE_MAX_CAPACITY, LARGE_BYTES),
        }
    }
}

/// Small buffers kept at most (per reader).
const POOL_BUFFERS: usize = 256;
/// Buffers larger than this are large.
const POOL_MAX_CAPACITY: usize = 4096;
/// Large buffers kept at most (per reader).
const LARGE_BUFFERS: usize = 128;
/// Larger buffers are freed rather than kept.
const LARGE_MAX_CAPACITY: usize = 1 << 20;
/// Bytes of large buffers kept at most (per reader).
const LARGE_BYTES: usize = 8 << 20;

impl PayloadPool {
    /// A payload holding a copy of `bytes`, in a recycled buffer when one is free.
    pub fn copy_of(&self, bytes: &[u8]) -> SerializedPayload {
        if let Some(inline) = SerializedPayload::inline(bytes) {
            return inline;
        }
        let buf = if bytes.len() <= POOL_MAX_CAPACITY {
            self.small.copy_of(bytes)
        } else {
            self.large.copy_of(bytes)
        };
        SerializedPayload(Bytes::Shared(buf), None)
    }

    /// An empty buffer for a large sample of `len` bytes that nothing else shares: a kept one
    /// when there is one.
    pub fn large_buffer(&self, len: usize) -> Arc<Vec<u8>> {
        self.large.buffer(len)
    }

    /// Whether a payload of `len` bytes is copied into a kept buffer; a larger one gets a
    /// buffer of its own, which the pool would not keep.
    pub fn pools(len: usize) -> bool {
        len <= POOL_MAX_CAPACITY
    }

    /// Takes back a payload no longer needed; kept only if nothing else shares it.
    pub fn recycle(&self, p: SerializedPayload) {
        if let (Bytes::Shared(buf), None) = (p.0, p.1) {
            if buf.capacity() <= POOL_MAX_CAPACITY {
                self.small.give_back(buf);
            } else {
                self.large.give_back(buf);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_buffer_pool_reuses_unshared_buffers_within_its_bounds() {
        let pool = BufferPool::new(4, 1024, 1024 + 2 * BUFFER_OVERHEAD);
        let a = pool.buffer(100);
        let a_ptr = a.as_ptr();
        let shared = a.clone();
        pool.give_back(a);
        // Still shared: not kept.
        assert_ne!(pool.buffer(10).as_ptr(), a_ptr);
        pool.give_back(shared);
        let again = pool.buffer(10);
        assert_eq!(again.as_ptr(), a_ptr, "the unshared buffer is reused");
        assert!(again.is_empty());
        // Too large to keep, and the byte bound: 1024 bytes at most.
        pool.give_back(Arc::new(Vec::with_capacity(2048)));
        for _ in 0..4 {
            pool.give_back(Arc::new(Vec::with_capacity(400)));
        }
        let free = pool.free.lock();
        assert_eq!(free.buffers.len(), 2);
        assert!(free.bytes <= 1024 + 2 * BUFFER_OVERHEAD);
    }

    #[test]
    fn a_copy_goes_into_a_kept_buffer_when_there_is_one() {
        let pool = BufferPool::new(4, 1024, usize::MAX);
        let a = pool.copy_of(b"first");
        let a_ptr = a.as_ptr();
        pool.give_back(a);
        let b = pool.copy_of(b"again");
        assert_eq!(b.as_ptr(), a_ptr, "the kept buffer is reused");
        assert_eq!(b.as_slice(), b"again");
        // Shared buffers are not kept; bytes beyond the largest kept capacity get their own.
        let shared = b.clone();
        pool.give_back(b);
        assert_ne!(pool.copy_of(b"third").as_ptr(), a_ptr);
        assert_eq!(shared.as_slice(), b"again");
        assert_eq!(pool.copy_of(&[7; 2000]).as_slice(), [7; 2000]);
    }

    #[test]
    fn small_payloads_are_kept_inline_and_larger_ones_in_pooled_buffers() {
        let pool = PayloadPool::default();
        let small = pool.copy_of(&[1; INLINE_MAX]);
        assert!(matches!(small.0, Bytes::Inline { .. }));
        assert_eq!(small.as_bytes(), [1; INLINE_MAX]);
        assert_eq!(small.clone(), small);
        // The same bytes compare equal however they are kept.
        assert_eq!(small, SerializedPayload::new(vec![1; INLINE_MAX]));
        assert_eq!(pool.copy_of(&[]).as_bytes(), [0u8; 0]);
        let larger = pool.copy_of(&[2; INLINE_MAX + 1]);
        assert!(matches!(larger.0, Bytes::Shared(_)));
        assert_eq!(larger.as_bytes(), [2; INLINE_MAX + 1]);
        // Recycling an inline payload keeps nothing; a pooled buffer comes back.
        pool.recycle(small);
        assert!(pool.small.free.lock().buffers.is_empty());
        pool.recycle(larger);
        assert_eq!(pool.small.free.lock().buffers.len(), 1);
        assert!(std::mem::size_of::<SerializedPayload>() <= 48);
    }

    #[test]
    fn a_filled_buffer_is_a_kept_one_when_there_is_one_and_a_new_one_otherwise() {
        let pool = BufferPool::new(4, 1024, usize::MAX);
        let (a, n) = pool.filled(8, |v| {
            v.extend_from_slice(b"first");
            v.len()
        });
        assert_eq!((a.as_slice(), n), (&b"first"[..], 5));
        let a_ptr = a.as_ptr();
        pool.give_back(a);
        let (b, ()) = pool.filled(8, |v| {
            assert!(v.is_empty(), "a kept buffer comes back cleared");
            v.extend_from_slice(b"again");
        });
        assert_eq!(b.as_ptr(), a_ptr, "the kept buffer is reused");
        assert_eq!(b.as_slice(), b"again");
        // Beyond the largest kept capacity: a buffer of its own, the kept one stays.
        pool.give_back(b);
        let (big, ()) = pool.filled(4096, |v| v.resize(4096, 7));
        assert_ne!(big.as_ptr(), a_ptr);
        assert_eq!(big.len(), 4096);
        assert_eq!(pool.free.lock().buffers.len(), 1);
    }

    #[test]
    fn buffers_given_back_together_are_kept_within_the_same_bounds() {
        let pool = BufferPool::new(3, 1024, usize::MAX);
        let shared = Arc::new(Vec::with_capacity(100));
        let _other_owner = shared.clone();
        let mut bufs = vec![
            shared,
            Arc::new(Vec::with_capacity(2048)),
            Arc::new(Vec::with_capacity(100)),
            Arc::new(Vec::with_capacity(200)),
            Arc::new(Vec::with_capacity(300)),
            Arc::new(Vec::with_capacity(400)),
        ];
        pool.give_back_all(&mut bufs);
        assert!(bufs.is_empty());
        // Neither the shared nor the oversized one; then three at most.
        let free = pool.free.lock();
        let caps: Vec<usize> = free.buffers.iter().map(|b| b.capacity()).collect();
        assert_eq!(caps, [100, 200, 300]);
        assert_eq!(free.bytes, 600 + 3 * BUFFER_OVERHEAD);
    }
}
