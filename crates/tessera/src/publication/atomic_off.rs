//! ATOMIC writers without the `atomic` feature: refused at creation.

use std::time::Duration;

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

    pub(crate) fn write(
        &self,
        _ep: &super::WriterEndpoint,
        _sample: super::AtomicSample<'_>,
    ) -> Result<Option<Busy>> {
        match *self {}
    }

    pub(crate) fn drain(&self, _timeout: Duration) -> Result<()> {
        match *self {}
    }

    pub(crate) fn drain_keeping_failure(&self, _timeout: Duration) -> bool {
        match *self {}
    }

    pub(crate) fn timeout(&self) -> Duration {
        match *self {}
    }
}

/// Never made in this build.
pub(crate) enum Busy {}

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
