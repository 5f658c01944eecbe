//! ATOMIC readers (Consistency QoS): committed entries come from the participant's member of the
//! topic's consensus group, in log order, through the reader's local-delivery path.

use std::sync::{Arc, Weak};

use tessera_rtps::qos::{is_wildcard, Consistency, ReaderSideQos};
use tessera_rtps::types::Guid;

use crate::atomic::group_name;
use crate::endpoint::LocalReader;
use crate::error::{Error, Result};
use crate::participant::ParticipantShared;

/// For an ATOMIC reader: joins its group, registers the reader for deliveries and puts the
/// consensus address into what SEDP announces. Nothing for an EVENTUAL reader.
pub(crate) fn setup(
    p: &ParticipantShared,
    guid: Guid,
    topic: &str,
    side: &mut ReaderSideQos,
    reader: &Arc<dyn LocalReader>,
) -> Result<()> {
    if side.consistency != Consistency::Atomic {
        return Ok(());
    }
    if side.partition.0.iter().any(|n| is_wildcard(n)) {
        return Err(Error::Unsupported(
            "ATOMIC consistency with wildcard partitions".into(),
        ));
    }
    let name = group_name(p.domain_id, &side.partition.0, topic);
    let (group, endpoint) = p.atomic.join(&p.ctx, guid, name)?;
    p.atomic
        .add_reader(&group, Arc::downgrade(reader) as Weak<dyn LocalReader>);
    side.consensus_endpoint = Some(endpoint);
    Ok(())
}
