//! ATOMIC writers without the `atomic` feature: refused at creation.

use tessera_rtps::qos::{Consistency, WriterSideQos};
use tessera_rtps::types::Guid;

use crate::error::Result;
use crate::participant::ParticipantShared;

/// Never made in this build.
pub(crate) enum AtomicWriter {}

impl AtomicWriter {
    pub(crate) fn reader_matched(&self, _reader: Guid, _consensus: bool) -> bool {
        match *self {}
    }

    pub(crate) fn reader_unmatched(&self, _reader: Guid) {
        match *self {}
    }

    pub(crate) fn order(&self) -> Option<parking_lot::MutexGuard<'_, ()>> {
        match *self {}
    }

    pub(crate) fn submit(
        &self,
        _guid: Guid,
        _payload: &[u8],
        _key_hash: Option<[u8; 16]>,
        _status: u32,
        _source_ns: i64,
    ) -> Result<()> {
        match *self {}
    }
}

/// Refuses an ATOMIC writer; `None` for an EVENTUAL one.
pub(crate) fn setup(
    _p: &ParticipantShared,
    _guid: Guid,
    _topic: &str,
    side: &mut WriterSideQos,
) -> Result<Option<AtomicWriter>> {
    if side.consistency == Consistency::Atomic {
        return Err(crate::atomic::unsupported());
    }
    Ok(None)
}
