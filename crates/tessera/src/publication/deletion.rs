//! Deleting a writer: when its last handle goes, [`WriterOwner`] unregisters the instances
//! the writer still has (with autodispose, disposing them), lets ATOMIC samples commit and
//! reliable readers acknowledge, and removes the writer from its participant.

use super::{now_nanos, WriterEndpoint, WriterOwner, STATUS_DISPOSED, STATUS_UNREGISTERED};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tessera_rtps::cdr;
use tessera_rtps::types::Guid;

/// An instance a writer unregisters: its key hash (none for a keyless topic) and serialized key.
type InstanceKey = (Option<[u8; 16]>, Arc<Vec<u8>>);

/// How long a deleted writer waits at most for reliable readers to acknowledge the
/// unregistration of its instances.
const WRITER_LINGER: Duration = Duration::from_secs(1);

impl WriterEndpoint {
    /// Remembers that a keyless writer wrote or registered its single instance (a load, and
    /// a store only the first time).
    pub(super) fn track_keyless(&self) {
        if !self.keyless_registered.load(Ordering::Relaxed) {
            self.keyless_registered.store(true, Ordering::Relaxed);
        }
    }

    /// The instances to unregister when the writer is deleted (key hash, serialized key),
    /// forgotten here: those it registered or wrote and did not unregister; for a keyless
    /// topic the single instance (no key hash; its key is an empty payload).
    fn take_instances(&self) -> Vec<InstanceKey> {
        let mut out: Vec<_> = self
            .instances
            .take_all()
            .into_iter()
            .map(|(kh, key)| (Some(kh), key))
            .collect();
        if self.keyless_registered.swap(false, Ordering::Relaxed) {
            let encoding = if self.xcdr2 {
                cdr::Encoding::XCDR2_LE
            } else {
                cdr::Encoding::XCDR1_LE
            };
            let mut key = Vec::with_capacity(4);
            let at = cdr::begin_payload(&mut key, encoding);
            cdr::finish_payload(&mut key, at);
            out.push((None, Arc::new(key)));
        }
        out
    }

    /// The status bits of an unregistration: it disposes too when autodispose is on.
    pub(super) fn unregister_status(&self) -> u32 {
        if self.autodispose.load(Ordering::Relaxed) {
            STATUS_UNREGISTERED | STATUS_DISPOSED
        } else {
            STATUS_UNREGISTERED
        }
    }
}

impl Drop for WriterOwner {
    fn drop(&mut self) {
        if !self.ep.enabled.load(Ordering::Acquire) {
            return; // never announced
        }
        // DDS: deleting a writer unregisters every instance it still has (and so, with
        // autodispose, disposes them), before the writer itself goes away.
        let instances = self.ep.take_instances();
        let status = self.ep.unregister_status();
        let unregistered = !instances.is_empty();
        for (key_hash, key) in instances {
            if let Err(e) = self.ep.submit(key, key_hash, status, true, now_nanos()) {
                tracing::debug!(error = %e, "unregister on writer deletion failed");
            }
        }
        // An ATOMIC writer's pipelined samples (and those unregistrations) commit before it
        // goes, within the linger: its committer thread fails what is left once it is gone.
        if let Some(a) = self.ep.atomic.get() {
            if !a.drain_keeping_failure(WRITER_LINGER) {
                tracing::warn!(writer = %self.ep.guid, "ATOMIC writer deleted with samples not yet committed");
            }
        }
        if let Some(g) = self.ep.group.get() {
            g.leaving(&self.ep);
        }
        // Linger (as Cyclone's writer does) until reliable readers have the unregistrations:
        // the SEDP dispose that follows travels on another socket and could overtake them,
        // leaving the instances NOT_ALIVE_NO_WRITERS instead of disposed. Not on a receive
        // thread, where the acknowledgments would arrive. Likewise for references to chunks
        // (`cdr_chunks`): a reader that has not opened the pool yet could not once the
        // writer's pools are unlinked.
        let references = self.ep.loans.cdr.has_pools();
        if (unregistered || references) && !crate::transport::recv::on_receive_thread() {
            let _ = self.ep.wait_acked(WRITER_LINGER);
        }
        let p = self.participant.shared();
        // Dropped after the lock is released (see `ReaderOwner::drop`).
        let removed = p.endpoints.write().writers.remove(&self.entity_id);
        drop(removed);
        // The endpoint may outlive this for a moment (an event pass or a receive thread
        // holds it); its segment files must not.
        self.ep.loans.unlink_pools();
        let now = Instant::now();
        let actions = p.discovery.lock().remove_local_endpoint(
            p,
            Guid::new(p.guid_prefix, self.entity_id),
            now,
        );
        p.apply_discovery_events(actions, now);
    }
}
