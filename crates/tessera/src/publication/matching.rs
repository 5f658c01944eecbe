//! Matching and statuses: what the runtime's threads call on a writer ([`LocalWriter`]):
//! readers matched and unmatched (and the datagram size their paths allow), ACKNACKs and
//! NACK_FRAGs from the receive thread, the event thread's pass; and the statuses these raise.

use super::core_lock::apply_acknack;
use super::WriterEndpoint;
use crate::condition::{Condition, ConditionKind};
use crate::endpoint::{LocalReader, LocalWriter, RemoteEndpoint};
use crate::outbox;
use crate::runtime::RuntimeContext;
use crate::status::{IncompatibleQosStatus, PublicationMatchedStatus, StatusMask};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;
use tessera_rtps::qos::LivelinessKind;
use tessera_rtps::types::{Guid, Locators};
use tessera_rtps::wire::{ReceivedSubmessage, Submessage};
use tessera_rtps::writer::WriterCore;

impl WriterEndpoint {
    /// A condition that is true while any status in `mask` has changed and not been read.
    pub(crate) fn status_condition(self: &Arc<Self>, mask: StatusMask) -> Condition {
        let ep = Arc::downgrade(self);
        Condition::new(ConditionKind::Status, self.notifier.clone(), move || {
            ep.upgrade()
                .map(|e| e.statuses.lock().changes.intersects(mask))
                .unwrap_or(false)
        })
    }

    fn status_changed(&self, mask: StatusMask) {
        self.statuses.lock().changes |= mask;
        self.notifier.notify();
        let l = self.listener.lock().clone();
        if let (Some(l), Some(me)) = (l, self.me.upgrade()) {
            l(me, mask);
        }
    }

    /// PUBLICATION_MATCHED, resetting its change counts.
    pub(super) fn take_publication_matched(&self) -> PublicationMatchedStatus {
        let mut s = self.statuses.lock();
        let out = s.publication_matched;
        s.publication_matched.total_count_change = 0;
        s.publication_matched.current_count_change = 0;
        s.changes.0 &= !StatusMask::PUBLICATION_MATCHED.0;
        out
    }

    /// OFFERED_INCOMPATIBLE_QOS, resetting its change count.
    pub(super) fn take_offered_incompatible_qos(&self) -> IncompatibleQosStatus {
        let mut s = self.statuses.lock();
        let out = s.offered_incompatible_qos.clone();
        s.offered_incompatible_qos.total_count_change = 0;
        s.changes.0 &= !StatusMask::OFFERED_INCOMPATIBLE_QOS.0;
        out
    }

    /// Records a remote reader's path size (`add`) or forgets one (`remove`), and sizes the
    /// core's datagrams for the smallest path left: large datagrams while every reader is
    /// reached over a path that takes them (loopback), back to an Ethernet frame as soon as
    /// one is not. With no remote reader the size stays as it was.
    fn set_path_size(
        &self,
        core: &mut WriterCore,
        add: Option<(Guid, usize)>,
        remove: Option<Guid>,
    ) {
        let mut sizes = self.path_sizes.lock();
        if let Some(g) = remove {
            sizes.retain(|(r, _)| *r != g);
        }
        if let Some((g, n)) = add {
            match sizes.iter_mut().find(|(r, _)| *r == g) {
                Some(e) => e.1 = n,
                None => sizes.push((g, n)),
            }
        }
        if let Some(min) = sizes.iter().map(|(_, n)| *n).min() {
            if min != core.config().max_message_size {
                core.set_max_message_size(min);
            }
        }
    }

    /// The largest datagram this writer sends now (for tests and diagnostics).
    pub(crate) fn max_message_size(&self) -> usize {
        self.lock_core().max_message_size()
    }

    /// The event thread's pass over this writer, under its core lock: protocol timers, the
    /// batch, and the policy timers, whose statuses are added to `raise`.
    fn timeout_locked(
        &self,
        ctx: &RuntimeContext,
        now: Instant,
        raise: &mut StatusMask,
    ) -> Option<Instant> {
        let mut core = self.lock_core();
        let policy_next = if self.deadline_on.load(Ordering::Relaxed)
            || self.lease.is_some()
            || self.lifespan_ns.load(Ordering::Relaxed) != 0
        {
            self.policy_timeout(&mut core, now, raise)
        } else {
            None
        };
        let earliest = |a: Option<Instant>| match (a, policy_next) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let started = self.batch_started.load(Ordering::Relaxed);
        if started != 0 {
            let due = ctx.kick.instant_of(started) + self.batch_delay();
            if now < due {
                // A batch is filling: only run the protocol timers, keep the batch.
                core.handle_timeout(now);
                return earliest(Some(core.poll_timeout().map_or(due, |d| d.min(due))));
            }
        }
        core.handle_timeout(now);
        if started != 0 {
            // The batch did not fill in time: writes age the next one themselves.
            self.batches_fill.store(false, Ordering::Relaxed);
        }
        outbox::flush_writer(ctx, &mut core, now, self.tos());
        core.sent();
        self.unflushed.store(0, Ordering::Relaxed);
        self.unflushed_samples.store(0, Ordering::Relaxed);
        self.batch_started.store(0, Ordering::Relaxed);
        earliest(core.poll_timeout())
    }

    pub(super) fn wake_waiters(&self) {
        if self.waiting.load(Ordering::Acquire) > 0 {
            self.space.notify_all();
        }
    }
}

impl LocalWriter for WriterEndpoint {
    fn handle(&self, ctx: &RuntimeContext, rs: &ReceivedSubmessage<'_>, now: Instant) {
        let mut core = match &rs.submessage {
            Submessage::AckNack(a) => {
                // Left for the lock's holder if the lock is taken (see `core_lock`).
                let Some(mut core) = self.lock_core_or_leave(rs.source_prefix, a, now) else {
                    return;
                };
                apply_acknack(&mut core, rs.source_prefix, a, now);
                core
            }
            Submessage::NackFrag(n) => {
                let mut core = self.lock_core();
                core.on_nack_frag(rs.source_prefix, n, now);
                core
            }
            _ => return,
        };
        outbox::flush_writer(ctx, &mut core, now, self.tos());
        core.sent();
        let next = core.poll_timeout();
        core.send_and_unlock();
        self.wake_waiters();
        ctx.kick.ensure_by(next);
    }

    fn on_timeout(&self, ctx: &RuntimeContext, now: Instant) -> Option<Instant> {
        let mut raise = StatusMask::NONE;
        let next = self.timeout_locked(ctx, now, &mut raise);
        // Statuses (and their listeners, which may write) only once the core lock is released.
        if raise != StatusMask::NONE {
            self.status_changed(raise);
        }
        next
    }

    fn assert_participant_liveliness(&self) {
        if self.liveliness_kind == LivelinessKind::ManualByParticipant {
            self.assert_locally(Instant::now());
        }
    }

    fn matched(
        &self,
        ctx: &RuntimeContext,
        remote: &RemoteEndpoint,
        local: Option<Arc<dyn LocalReader>>,
        now: Instant,
    ) {
        let rtps = self
            .atomic
            .get()
            .is_none_or(|a| a.reader_matched(remote.guid, remote.consensus.is_some()));
        if !rtps {
            // An ATOMIC reader of an ATOMIC writer: served by its consensus member.
        } else if remote.guid.prefix == self.guid.prefix {
            if let Some(reader) = local {
                self.loans.matched_local(remote.guid, remote.loan_layout);
                if remote.durable {
                    self.loans
                        .serialize_history(&mut self.lock_core(), self.xcdr2);
                }
                self.matched_local(ctx, reader, remote.reliable, remote.durable);
            }
        } else {
            // A reader the writer filters for (content, or time-based) is served alone: a
            // multicast group gets every sample (its members filter for themselves).
            let filtered = self
                .filters
                .set(remote.guid, remote.content_filter.as_ref())
                | self.time_filters.set(remote.guid, remote.min_separation);
            // Under a coherent publisher, a reader without coherent access is served alone
            // too: it gets a GAP for each set's end marker.
            let marker_gap =
                !remote.coherent_access && self.coherent_publisher.load(Ordering::Relaxed);
            let filtered = filtered | marker_gap;
            {
                let mut nc = self.without_coherent_access.lock();
                nc.retain(|g| *g != remote.guid);
                if marker_gap {
                    nc.push(remote.guid);
                }
            }
            self.loans.matched(
                remote.guid,
                &remote.locators,
                remote.loan_layout,
                remote.cdr_chunks,
            );
            let multicast = if filtered {
                Locators::new()
            } else {
                remote.multicast
            };
            let mut core = self.lock_core();
            if remote.durable {
                self.loans.serialize_history(&mut core, self.xcdr2);
            }
            // Also a re-announcement: the core then takes the new unicast locators and
            // regroups the reader by its new multicast ones (`set_reader_multicast`).
            core.add_reader_with_locators(
                remote.guid,
                remote.locators,
                multicast,
                remote.reliable,
                remote.durable,
                now,
            );
            let size = ctx.transport.path_datagram_size(
                remote
                    .locators
                    .as_slice()
                    .iter()
                    .chain(multicast.as_slice()),
                self.reliable,
            );
            self.set_path_size(&mut core, Some((remote.guid, size)), None);
            outbox::flush_writer(ctx, &mut core, now, self.tos());
            drop(core);
            if self.liveliness_kind != LivelinessKind::Automatic {
                let mut rl = self.reader_locators.lock();
                rl.retain(|(g, _)| *g != remote.guid);
                rl.push((remote.guid, remote.locators));
            }
        }
        {
            let mut m = self.matched.lock();
            if m.contains(&remote.guid) {
                // A re-announcement: the core took the new locators; not a new match.
                return;
            }
            m.push(remote.guid);
        }
        {
            let mut s = self.statuses.lock();
            let st = &mut s.publication_matched;
            st.total_count += 1;
            st.total_count_change += 1;
            st.current_count += 1;
            st.current_count_change += 1;
            st.last_subscription_handle = Some(remote.guid);
        }
        self.status_changed(StatusMask::PUBLICATION_MATCHED);
    }

    fn unmatched(&self, remote: Guid) {
        if let Some(a) = self.atomic.get() {
            a.reader_unmatched(remote);
        }
        self.loans.unmatched(remote);
        if remote.prefix == self.guid.prefix {
            let old = self.unmatched_local(remote);
            // The last reference to a deleted reader may go here: not under our lock.
            drop(old);
        } else {
            self.filters.remove(remote);
            self.time_filters.remove(remote);
            self.without_coherent_access.lock().retain(|g| *g != remote);
            let mut core = self.lock_core();
            core.remove_reader(remote);
            self.set_path_size(&mut core, None, Some(remote));
            drop(core);
            self.reader_locators.lock().retain(|(g, _)| *g != remote);
        }
        self.matched.lock().retain(|g| *g != remote);
        self.wake_waiters();
        {
            let mut s = self.statuses.lock();
            let st = &mut s.publication_matched;
            st.current_count -= 1;
            st.current_count_change -= 1;
            st.last_subscription_handle = Some(remote);
        }
        self.status_changed(StatusMask::PUBLICATION_MATCHED);
    }

    fn incompatible(&self, policies: &[u32]) {
        self.statuses
            .lock()
            .offered_incompatible_qos
            .record(policies);
        self.status_changed(StatusMask::OFFERED_INCOMPATIBLE_QOS);
    }
}
