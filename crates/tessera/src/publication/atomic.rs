//! ATOMIC writers (Consistency QoS): `write` proposes the serialized sample to the topic's
//! consensus group and returns once it is committed; nothing goes through the writer's RTPS
//! history (the group's log is the history; readers get entries from their own member).

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tessera_atomic::{Entry, EntryKind};
use tessera_rtps::qos::{is_wildcard, Consistency, WriterSideQos};
use tessera_rtps::types::Guid;

use crate::atomic::{group_name, Group, ATOMIC_WRITE_TIMEOUT};
use crate::error::{Error, Result};
use crate::participant::ParticipantShared;

/// The consensus side of one ATOMIC writer.
pub(crate) struct AtomicWriter {
    group: Arc<Group>,
    /// The writer's own sequence numbers: a failed or indeterminate write uses one up, so a late
    /// commit of it can never be delivered after a newer sample (apply drops it).
    next_sn: AtomicI64,
    timeout: Duration,
}

impl AtomicWriter {
    /// Proposes one sample (or dispose/unregister) and waits for its commit.
    pub(crate) fn submit(
        &self,
        guid: Guid,
        payload: &[u8],
        key_hash: Option<[u8; 16]>,
        status: u32,
        source_ns: i64,
    ) -> Result<()> {
        let kind = match status & 3 {
            0 => EntryKind::Write,
            1 => EntryKind::Dispose,
            2 => EntryKind::Unregister,
            _ => EntryKind::DisposeUnregister,
        };
        let entry = Entry {
            writer: guid.to_bytes(),
            sn: self.next_sn.fetch_add(1, Ordering::Relaxed),
            key_hash: key_hash.unwrap_or([0; 16]),
            timestamp_ns: source_ns,
            payload: payload.to_vec(),
            kind,
        };
        self.group.propose(entry, self.timeout).map(|_| ())
    }
}

/// For an ATOMIC writer: joins its group, puts the consensus address into what SEDP announces,
/// and returns the writer's consensus side. `None` for an EVENTUAL writer.
pub(crate) fn setup(
    p: &ParticipantShared,
    guid: Guid,
    topic: &str,
    side: &mut WriterSideQos,
) -> Result<Option<AtomicWriter>> {
    if side.consistency != Consistency::Atomic {
        return Ok(None);
    }
    if side.partition.0.iter().any(|n| is_wildcard(n)) {
        return Err(Error::Unsupported(
            "ATOMIC consistency with wildcard partitions".into(),
        ));
    }
    let name = group_name(p.domain_id, &side.partition.0, topic);
    let (group, endpoint) = p.atomic.join(&p.ctx, guid, name)?;
    side.consensus_endpoint = Some(endpoint);
    Ok(Some(AtomicWriter {
        group,
        next_sn: AtomicI64::new(1),
        timeout: side.reliability.max_blocking_time.max(ATOMIC_WRITE_TIMEOUT),
    }))
}
