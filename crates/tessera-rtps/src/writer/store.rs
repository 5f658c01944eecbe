//! The seam between a writer's sequence numbers and its transmissions: [`HistoryStore`].
//!
//! [`WriterCore`](super::WriterCore) keeps every sample it may still have to send — to a
//! reader that has not acknowledged it, to a late joiner of a transient-local writer — in a
//! history store. The default, [`MemoryHistory`](super::MemoryHistory), is an in-memory ring.
//! Other stores plug in with [`WriterCore::with_store`](super::WriterCore::with_store): a
//! durability service that also writes samples to disk, or a consensus ("atomic") mode that
//! accepts a sample only once a quorum holds it.
//!
//! # Contract
//! - **Sequence numbers** are assigned by the `WriterCore`, never by the store: consecutive,
//!   starting at 1, each [`push`](HistoryStore::push)ed once and greater than every number
//!   pushed before. A store never renumbers; a number it does not hold (never pushed, or
//!   released) is answered with a GAP when a reader asks for it.
//! - **Push** happens after flow control and resource checks passed and before the sample is
//!   transmitted. If it fails, [`WriterCore::write`](super::WriterCore::write) returns
//!   [`WriteError::Store`](super::WriteError::Store) and nothing happened: the number is not
//!   consumed (the next successful write gets it, so readers see no hole), no KEEP_LAST
//!   sample was replaced, nothing is sent. The caller may retry.
//! - **Release**: the core calls [`remove`](HistoryStore::remove) (a KEEP_LAST sample
//!   replaced by a newer one of its instance) and [`remove_below`](HistoryStore::remove_below)
//!   (samples every matched reader acknowledged — best-effort readers: were sent — in a
//!   volatile writer; the oldest acknowledged sample when `max_samples` is reached). Until
//!   then the store must keep returning the sample from [`get`](HistoryStore::get) and
//!   [`next_from`](HistoryStore::next_from), because a repair may need it at any time. After
//!   a release the core no longer needs the sample; what the store does with it (drop it,
//!   keep it on disk for a durability service) is the store's business, but it must no longer
//!   count it in [`len`](HistoryStore::len) nor return it.
//! - **KEEP_LAST** is the store's bookkeeping: [`keep_last_victim`](HistoryStore::keep_last_victim)
//!   names the sample a new one of the same instance would replace (`None` for KEEP_ALL or
//!   when the instance is below its depth). The core removes it once the new sample is
//!   pushed.
//! - The core calls the store only under its own lock, from whatever thread drives it: a
//!   store must be `Send`, need not be `Sync`, and must not block for long (it runs on the
//!   write path and the receive thread).

use std::fmt::Debug;
use std::sync::Arc;

use crate::types::{SequenceNumber, Timestamp};

/// One sample as the writer keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sample {
    /// The serialized sample (encapsulation header included) or, with `key_flag`, the
    /// serialized key; empty for a dispose/unregister identified by `key_hash` alone.
    pub payload: Arc<Vec<u8>>,
    /// The instance's key hash (keyed topics).
    pub key_hash: Option<[u8; 16]>,
    /// PID_STATUS_INFO: 0, or 1 (disposed) | 2 (unregistered).
    pub status_info: u32,
    /// The payload is a key only.
    pub key_flag: bool,
    /// Source timestamp.
    pub timestamp: Option<Timestamp>,
    /// How the sample travels, chosen by the core when it was written and kept for its
    /// lifetime (repairs must match the first copy): 0, whole in one DATA; otherwise the
    /// DATA_FRAG fragment size. A store that persists samples should keep it.
    pub frag_size: u32,
    /// The identity of the sample this one relays (a discovery server forwarding a client's
    /// announcement keeps the client's writer GUID and sequence number); sent as inline QoS
    /// with [`WriterConfig::send_sample_identity`](super::WriterConfig), else as
    /// PID_ORIGINAL_WRITER_INFO (a durability service's replay). None: this writer's own.
    pub origin: Option<(crate::types::Guid, SequenceNumber)>,
    /// PID_COHERENT_SET: the number of the first sample of the coherent set this sample
    /// belongs to, or [`COHERENT_SET_END`](super::COHERENT_SET_END) for the payload-less
    /// marker that ends a set. None: not in a set.
    pub coherent_set: Option<SequenceNumber>,
    /// GROUP access scope: PID_GROUP_COHERENT_SET, PID_GROUP_SEQ_NUM, PID_WRITER_GROUP_INFO.
    pub group: Option<super::GroupTag>,
}

/// Why a [`HistoryStore`] refused a sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// The store has no room; retry once samples are released.
    #[error("history store full")]
    Full,
    /// The store cannot take samples now (e.g. its disk failed, or it lost its quorum).
    #[error("history store unavailable")]
    Unavailable,
}

/// Where a [`WriterCore`](super::WriterCore) keeps its samples. See the [module
/// docs](self) for who calls what, and when.
pub trait HistoryStore: Debug + Send {
    /// Keeps `sample` as number `seq` (greater than every number pushed before).
    fn push(&mut self, seq: SequenceNumber, sample: Sample) -> Result<(), StoreError>;
    /// The held sample with this number.
    fn get(&self, seq: SequenceNumber) -> Option<&Sample>;
    /// The held sample with the lowest number ≥ `seq`.
    fn next_from(&self, seq: SequenceNumber) -> Option<(SequenceNumber, &Sample)>;
    /// Releases sample `seq`; returns whether it was held.
    fn remove(&mut self, seq: SequenceNumber) -> bool;
    /// Releases every sample numbered below `seq`; returns how many were held.
    fn remove_below(&mut self, seq: SequenceNumber) -> usize;
    /// KEEP_LAST: the sample a new sample of instance `key` (`None`: keyless) would replace.
    fn keep_last_victim(&self, key: Option<[u8; 16]>) -> Option<SequenceNumber>;
    /// Number of samples held.
    fn len(&self) -> usize;
    /// Whether no sample is held.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The lowest number held.
    fn first_seq(&self) -> Option<SequenceNumber>;
    /// Replaces the payload (and its fragment size) of the held sample `seq`; returns whether
    /// it did. A store that cannot (the default) keeps the sample as it was.
    fn replace_payload(
        &mut self,
        _seq: SequenceNumber,
        _payload: std::sync::Arc<Vec<u8>>,
        _frag_size: u32,
    ) -> bool {
        false
    }
}
