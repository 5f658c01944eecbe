//! ATOMIC writers (Consistency QoS): `write` proposes the serialized sample to the topic's
//! consensus group and returns once it is committed. ATOMIC readers get entries from their own
//! member (the group's log is their history), never over RTPS.
//!
//! EVENTUAL readers of the topic (no consensus address in their SEDP data) are not members:
//! after the commit the writer sends the sample to them through its RTPS history, as an
//! EVENTUAL writer would, so they receive committed samples only, each writer's in its commit
//! order (one write at a time per writer from proposal to history). A write that ended
//! indeterminate is not sent, even if it commits later: they may miss such a sample, never get
//! an uncommitted one. Samples of different writers are ordered per writer only (as EVENTUAL
//! promises); the total order is for members.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
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
    /// The matched EVENTUAL readers (remote and local), served over RTPS after each commit.
    eventual: parking_lot::Mutex<BTreeSet<Guid>>,
    /// `eventual`'s length: one load per write.
    eventual_count: AtomicUsize,
    /// Held from proposal to history, so that EVENTUAL readers get this writer's samples in
    /// commit order even when several threads write.
    order: parking_lot::Mutex<()>,
}

impl AtomicWriter {
    /// A reader matched: true when it is EVENTUAL (served over RTPS); an ATOMIC one (with a
    /// consensus address) gets the log from its own member and nothing over RTPS.
    pub(crate) fn reader_matched(&self, reader: Guid, consensus: bool) -> bool {
        if consensus {
            return false;
        }
        let mut e = self.eventual.lock();
        e.insert(reader);
        self.eventual_count.store(e.len(), Ordering::Relaxed);
        true
    }

    /// A reader unmatched.
    pub(crate) fn reader_unmatched(&self, reader: Guid) {
        let mut e = self.eventual.lock();
        e.remove(&reader);
        self.eventual_count.store(e.len(), Ordering::Relaxed);
    }

    /// Whether a committed sample must also go through the writer's RTPS history.
    pub(crate) fn has_eventual_readers(&self) -> bool {
        self.eventual_count.load(Ordering::Relaxed) > 0
    }

    /// Serializes this writer's writes while EVENTUAL readers are matched (see the module).
    pub(crate) fn order(&self) -> Option<parking_lot::MutexGuard<'_, ()>> {
        self.has_eventual_readers().then(|| self.order.lock())
    }

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
        eventual: parking_lot::Mutex::new(BTreeSet::new()),
        eventual_count: AtomicUsize::new(0),
        order: parking_lot::Mutex::new(()),
    }))
}
