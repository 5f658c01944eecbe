//! PRESENTATION at GROUP access scope on the writer side: one coherent set and one order
//! across all the writers of a publisher.
//!
//! A publisher whose PRESENTATION has GROUP scope and `coherent_access` or `ordered_access`
//! gives each of its writers' cores one shared [`GroupSequence`]: every sample then carries
//! its number in the publisher (PID_GROUP_SEQ_NUM) and, inside a group coherent set, the
//! set's number (PID_GROUP_COHERENT_SET). `end_coherent_changes` closes the group set first
//! (its first and last numbers), then each writer's own set with an end marker carrying
//! them and the digest of the set's writers (PID_WRITER_GROUP_INFO): a reader knows how many
//! samples the set has and from which writers (see `tessera_rtps::writer::coherent`).

use super::WriterEndpoint;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use tessera_rtps::types::EntityId;
use tessera_rtps::writer::{writer_set_digest, GroupSequence, GroupTag};

/// Tells the publishers of a process apart in their group numbers (see
/// [`GroupSequence::new`]); only uniqueness within a participant matters.
static NEXT_KEY: AtomicU32 = AtomicU32::new(1);

/// A GROUP-scope publisher's shared numbering.
#[derive(Debug)]
pub(crate) struct PublisherGroup {
    pub seq: Arc<GroupSequence>,
    /// Writers deleted while they had samples in the open group set: still writers of the
    /// set (a reader must not take the set as complete without their part).
    abandoned: Mutex<Vec<EntityId>>,
}

impl PublisherGroup {
    pub fn new() -> Arc<Self> {
        let key = NEXT_KEY.fetch_add(1, Ordering::Relaxed) & 0x00ff_ffff;
        Arc::new(PublisherGroup {
            seq: Arc::new(GroupSequence::new(key)),
            abandoned: Mutex::new(Vec::new()),
        })
    }

    /// Joins a new writer to the group.
    pub fn join(self: &Arc<Self>, ep: &WriterEndpoint) {
        ep.lock_core().set_group(Some(self.seq.clone()));
        let _ = ep.group.set(self.clone());
    }

    /// A writer is being deleted: if it wrote in the open group set, the set stays its.
    pub fn leaving(&self, ep: &WriterEndpoint) {
        if ep.lock_core().coherent_set().is_some() {
            self.abandoned.lock().push(ep.guid.entity_id);
        }
    }

    /// Closes the open group set: the group values for the end markers of `writers` (the
    /// publisher's live writers), or None if the set has no samples.
    pub fn end_set(&self, writers: &[&WriterEndpoint]) -> Option<GroupTag> {
        let range = self.seq.end_set();
        let mut ids = std::mem::take(&mut *self.abandoned.lock());
        let (first, last) = range?;
        ids.extend(
            writers
                .iter()
                .filter(|w| w.lock_core().coherent_set().is_some())
                .map(|w| w.guid.entity_id),
        );
        Some(GroupTag {
            set: Some(first),
            gsn: last,
            writers: Some(writer_set_digest(&ids)),
        })
    }
}
