//! ATOMIC readers without the `atomic` feature: refused at creation.

use std::sync::Arc;

use tessera_rtps::qos::{Consistency, ReaderSideQos};
use tessera_rtps::types::Guid;

use crate::endpoint::LocalReader;
use crate::error::Result;
use crate::participant::ParticipantShared;

/// Refuses an ATOMIC reader; nothing for an EVENTUAL one.
pub(crate) fn setup(
    _p: &ParticipantShared,
    _guid: Guid,
    _topic: &str,
    side: &mut ReaderSideQos,
    _reader: &Arc<dyn LocalReader>,
) -> Result<()> {
    if side.consistency == Consistency::Atomic {
        return Err(crate::atomic::unsupported());
    }
    Ok(())
}
