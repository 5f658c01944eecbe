//! A reader's run-time QoS: requested DEADLINE, writers' liveliness leases, LIFESPAN expiry
//! in the history, and `set_qos`. The per-sample decisions (ownership, filter, lifespan on
//! arrival) are [`crate::qos_rt::reader::ReaderPolicies::admit`], called from `accept`; the
//! timers run from the endpoint's `on_timeout` on the event thread.

use super::statuses::add_count;
use super::ReaderEndpoint;
use crate::history::History;
use crate::outbox;
use crate::qos::DataReaderQos;
use crate::qos_rt::reader::ReaderPolicies;
use crate::sample::SerializedPayload;
use crate::status::StatusMask;
use std::sync::atomic::Ordering;
use std::time::Instant;
use tessera_rtps::types::Guid;

impl ReaderEndpoint {
    /// Whether no run-time policy is in use: the sample path skips them all (what a reader
    /// with default QoS matched with default writers must look like).
    #[cfg(test)]
    pub(crate) fn policies_idle(&self) -> bool {
        !self.policies_on.load(Ordering::Relaxed)
            && self.policies.lock().instance_entries() == 0
            && self.history.lock().next_expiry().is_none()
    }

    /// Takes the changeable policies of `qos`: DEADLINE, TIME_BASED_FILTER,
    /// READER_DATA_LIFECYCLE (the others only change what is announced).
    pub(crate) fn apply_qos(&self, qos: &DataReaderQos) {
        self.history
            .lock()
            .set_lifecycle(outbox::history_config(qos).lifecycle);
        self.policies.lock().apply_qos(qos);
        if ReaderPolicies::in_use(qos) {
            self.policies_on.store(true, Ordering::Relaxed);
        }
        self.ctx.kick.ensure_by(Some(Instant::now()));
        *self.current_qos.lock() = qos.clone();
    }

    /// The liveliness of `writer` was asserted (any message from it, or a local writer's
    /// `assert_liveliness`); raises LIVELINESS_CHANGED when it comes back.
    pub(crate) fn writer_seen(&self, writer: Guid, now: Instant) {
        if !self.policies_on.load(Ordering::Relaxed) {
            return;
        }
        if self.policies.lock().writer_seen(&writer.to_bytes(), now) {
            self.revived(&[writer.to_bytes()]);
        }
    }

    /// Raises LIVELINESS_CHANGED for writers that came back alive.
    pub(super) fn revived(&self, writers: &[[u8; 16]]) {
        if writers.is_empty() {
            return;
        }
        {
            let mut s = self.statuses.lock();
            let l = &mut s.liveliness_changed;
            for w in writers {
                l.alive_count += 1;
                l.alive_count_change += 1;
                l.not_alive_count -= 1;
                l.not_alive_count_change -= 1;
                l.last_publication_handle = Some(Guid::from_bytes(*w));
            }
        }
        self.status_changed(StatusMask::LIVELINESS_CHANGED);
    }

    /// The policy timers (event thread): missed deadlines, writers whose lease ran out, expired
    /// samples. Returns the next time they need the thread.
    pub(super) fn policy_timeout(&self, now: Instant) -> Option<Instant> {
        let mut missed = Vec::new();
        let mut lost = Vec::new();
        {
            let mut p = self.policies.lock();
            p.deadline.expire(now, &mut missed);
            p.expire_leases(now, &mut lost);
        }
        let mut mask = StatusMask::NONE;
        let mut misses = Vec::new();
        let mut changed = false;
        let next_expiry;
        {
            let mut h = self.history.lock();
            for key in &missed {
                // Only alive instances expect data: a disposed or writerless one is forgotten.
                let alive = h
                    .lookup_instance(key)
                    .and_then(|i| h.instance_status(i))
                    .filter(|st| st.instance_state.is_alive());
                misses.push((*key, alive.map(|st| st.handle)));
            }
            let now_ns = crate::publication::now_nanos();
            for w in &lost {
                changed |= h.writer_lost(*w, now_ns) > 0;
            }
            changed |= expire_due(&mut h) > 0;
            next_expiry = h.next_expiry();
            // Per-instance policy entries of purged instances go (bounded memory).
            let instances = h.instance_count();
            let mut p = self.policies.lock();
            if p.instance_entries() > 2 * instances + 64 {
                p.prune(|k| h.lookup_instance(k).is_some());
            }
        }
        let mut last = None;
        let mut count = 0u64;
        if !misses.is_empty() {
            let mut p = self.policies.lock();
            for (key, handle) in &misses {
                match handle {
                    Some(h) => {
                        p.deadline_missed(key);
                        count += 1;
                        last = Some(*h);
                    }
                    None => p.deadline.remove(key),
                }
            }
        }
        if count > 0 {
            let mut s = self.statuses.lock();
            let st = &mut s.requested_deadline_missed;
            add_count(&mut st.total_count, count);
            add_count(&mut st.total_count_change, count);
            st.last_instance_handle = last;
            mask |= StatusMask::REQUESTED_DEADLINE_MISSED;
        }
        if !lost.is_empty() {
            tracing::debug!(reader = ?self.guid, writers = lost.len(), "writer liveliness lost");
            let mut s = self.statuses.lock();
            let l = &mut s.liveliness_changed;
            for w in &lost {
                l.alive_count -= 1;
                l.alive_count_change -= 1;
                l.not_alive_count += 1;
                l.not_alive_count_change += 1;
                l.last_publication_handle = Some(Guid::from_bytes(*w));
            }
            mask |= StatusMask::LIVELINESS_CHANGED;
        }
        if changed {
            mask |= StatusMask::DATA_AVAILABLE;
        }
        if mask != StatusMask::NONE {
            self.status_changed(mask);
        }
        let p = self.policies.lock();
        let expiry = next_expiry.map(|at| {
            let wait = at.saturating_sub(crate::publication::now_nanos()).max(0);
            now + std::time::Duration::from_nanos(wait as u64)
        });
        [p.deadline.next(), p.next_lease(), expiry]
            .into_iter()
            .flatten()
            .min()
    }
}

/// Removes the samples whose lifespan ran out; returns how many. Reads the clock only when a
/// sample can expire.
pub(super) fn expire_due(h: &mut History<SerializedPayload>) -> usize {
    if h.next_expiry().is_some() {
        h.drop_expired(crate::publication::now_nanos())
    } else {
        0
    }
}
