//! ATOMIC consistency when `tessera` is built without its `atomic` feature: nothing to run, and
//! ATOMIC endpoints are refused (see `publication/atomic_off.rs`).

use tessera_rtps::types::{Guid, GuidPrefix};

use crate::endpoint::RemoteEndpoint;

/// Stands in for the participant's consensus service.
pub(crate) struct AtomicService;

impl AtomicService {
    pub(crate) fn new(_prefix: GuidPrefix) -> Self {
        AtomicService
    }

    pub(crate) fn matched(&self, _local: Guid, _remote: &RemoteEndpoint) {}

    pub(crate) fn unmatched(&self, _local: Guid, _remote: Guid) {}

    pub(crate) fn close(&self) {}
}

/// The refusal of an ATOMIC endpoint in this build.
pub(crate) fn unsupported() -> crate::error::Error {
    crate::error::Error::Unsupported(
        "ATOMIC consistency: this build of tessera lacks its `atomic` feature".into(),
    )
}
