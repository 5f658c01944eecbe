//! A writer's run-time QoS: offered DEADLINE, LIFESPAN, its own liveliness lease and
//! `assert_liveliness`, LATENCY_BUDGET batching, `set_qos` and ENTITY_FACTORY `enable`. The
//! timers run from [`WriterEndpoint`]'s `on_timeout` on the event thread.

use super::instance_handle;
use super::{now_nanos, DataWriter, WriterEndpoint, WriterOwner, BATCH_DELAY};
use crate::endpoint::LocalWriter;
use crate::error::{Error, Result};
use crate::qos::DataWriterQos;
use crate::status::{LivelinessLostStatus, OfferedDeadlineMissedStatus, StatusMask};
use crate::TopicType;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tessera_rtps::qos::LivelinessKind;
use tessera_rtps::types::Guid;
use tessera_rtps::wire::Submessage;
use tessera_rtps::writer::WriterCore;

impl WriterEndpoint {
    /// OFFERED_DEADLINE_MISSED, resetting its change count.
    pub(crate) fn take_offered_deadline_missed(&self) -> OfferedDeadlineMissedStatus {
        let mut s = self.statuses.lock();
        let out = s.offered_deadline_missed;
        s.offered_deadline_missed.total_count_change = 0;
        s.changes.0 &= !StatusMask::OFFERED_DEADLINE_MISSED.0;
        out
    }

    /// LIVELINESS_LOST, resetting its change count.
    pub(crate) fn take_liveliness_lost(&self) -> LivelinessLostStatus {
        let mut s = self.statuses.lock();
        let out = s.liveliness_lost;
        s.liveliness_lost.total_count_change = 0;
        s.changes.0 &= !StatusMask::LIVELINESS_LOST.0;
        out
    }

    /// Whether no run-time policy is armed: no deadline, lifespan, lease or latency budget,
    /// nothing queued for them (what a writer with default QoS must look like).
    #[cfg(test)]
    pub(crate) fn policies_idle(&self) -> bool {
        !self.deadline_on.load(Ordering::Relaxed)
            && self.deadline.lock().len() == 0
            && self.lifespan_ns.load(Ordering::Relaxed) == 0
            && self.expiring.lock().is_empty()
            && self.lease.is_none()
            && self.budget_ns.load(Ordering::Relaxed) == 0
    }

    /// How long a batch waits for company: the LATENCY_BUDGET, or [`BATCH_DELAY`].
    pub(super) fn batch_delay(&self) -> Duration {
        match self.budget_ns.load(Ordering::Relaxed) {
            0 => BATCH_DELAY,
            ns => Duration::from_nanos(ns),
        }
    }

    /// Takes the changeable policies of `qos`: DEADLINE, LIFESPAN, LATENCY_BUDGET,
    /// WRITER_DATA_LIFECYCLE (the others only change what is announced).
    pub(super) fn apply_qos(&self, qos: &DataWriterQos) {
        let budget = budget_ns(qos);
        let before = self.budget_ns.swap(budget, Ordering::Relaxed);
        if budget != 0 {
            self.batching.store(true, Ordering::Relaxed);
        } else if before != 0 {
            // Batching came with the budget: it goes with it (the event thread sends what
            // is pending).
            self.batching.store(false, Ordering::Relaxed);
        }
        let period = qos.deadline.period;
        self.deadline.lock().set_period(period);
        self.deadline_on
            .store(!tessera_rtps::qos::is_infinite(period), Ordering::Relaxed);
        self.ctx.kick.ensure_by(Some(Instant::now()));
        let _core = self.lock_core();
        self.lifespan_ns
            .store(lifespan_ns(qos.lifespan.duration), Ordering::Relaxed);
        self.autodispose.store(
            qos.writer_data_lifecycle.autodispose_unregistered_instances,
            Ordering::Relaxed,
        );
        self.tos.store(
            crate::transport::tos_of_priority(qos.transport_priority.0),
            Ordering::Relaxed,
        );
    }

    /// The liveliness of this writer was asserted at `now` (a write, or `assert_liveliness`).
    pub(super) fn asserted(&self, now: Instant) {
        if self.lease.is_some() {
            self.last_assert
                .store(self.ctx.kick.ns_of(now), Ordering::Relaxed);
            self.alive.store(true, Ordering::Relaxed);
        }
    }

    /// Renews the lease and tells the local readers (MANUAL_BY_PARTICIPANT: the participant
    /// tells remote ones by a ParticipantMessageData).
    pub(super) fn assert_locally(&self, now: Instant) {
        self.asserted(now);
        let locals = self.local_readers.read().clone();
        for p in locals.iter() {
            p.reader.writer_asserted(self.guid, now);
        }
    }

    /// MANUAL_BY_TOPIC `assert_liveliness`: renews the lease and tells the readers: remote
    /// ones by a HEARTBEAT with the liveliness flag, local ones directly.
    pub(crate) fn assert_liveliness(&self) -> Result<()> {
        if self.ctx.is_closed() {
            return Err(Error::AlreadyDeleted);
        }
        let now = Instant::now();
        self.assert_locally(now);
        if self.liveliness_kind == LivelinessKind::Automatic {
            return Ok(());
        }
        let hb = self.lock_core().liveliness_heartbeat();
        let mut dests: Vec<tessera_rtps::types::Locator> = Vec::new();
        for (_, ls) in self.reader_locators.lock().iter() {
            for l in ls.as_slice() {
                if !dests.contains(l) {
                    dests.push(*l);
                }
            }
        }
        if !dests.is_empty() {
            crate::endpoint::with_send_buf(|buf| {
                let mut m = tessera_rtps::wire::MessageBuilder::new(buf, self.ctx.guid_prefix);
                m.submessage(&Submessage::Heartbeat(hb));
                crate::endpoint::send_datagram(&self.ctx, buf, &dests, self.tos());
            });
        }
        Ok(())
    }

    /// The policy timers (event thread, under the core lock): missed offered deadlines, a lost
    /// lease, expired samples. Adds the statuses to raise to `raise` (the caller raises them
    /// once the lock is released: a listener may write) and returns the next time they need
    /// the thread.
    pub(super) fn policy_timeout(
        &self,
        core: &mut WriterCore,
        now: Instant,
        raise: &mut StatusMask,
    ) -> Option<Instant> {
        let mut next: Option<Instant> = None;
        let mut at = |t: Option<Instant>| {
            if let Some(t) = t {
                next = Some(next.map_or(t, |n: Instant| n.min(t)));
            }
        };
        let mut mask = StatusMask::NONE;
        if self.deadline_on.load(Ordering::Relaxed) {
            let mut missed = Vec::new();
            let due = {
                let mut d = self.deadline.lock();
                d.expire(now, &mut missed);
                d.next()
            };
            at(due);
            if let Some(last) = missed.last() {
                let mut s = self.statuses.lock();
                let st = &mut s.offered_deadline_missed;
                let n = i32::try_from(missed.len()).unwrap_or(i32::MAX);
                st.total_count = st.total_count.saturating_add(n);
                st.total_count_change = st.total_count_change.saturating_add(n);
                st.last_instance_handle = Some(instance_handle(last));
                mask |= StatusMask::OFFERED_DEADLINE_MISSED;
            }
        }
        if let Some(lease) = self.lease {
            let due = self
                .ctx
                .kick
                .instant_of(self.last_assert.load(Ordering::Relaxed))
                + lease;
            if self.alive.load(Ordering::Relaxed) {
                if now >= due {
                    self.alive.store(false, Ordering::Relaxed);
                    let mut s = self.statuses.lock();
                    s.liveliness_lost.total_count += 1;
                    s.liveliness_lost.total_count_change += 1;
                    mask |= StatusMask::LIVELINESS_LOST;
                } else {
                    at(Some(due));
                }
            }
        }
        if self.lifespan_ns.load(Ordering::Relaxed) != 0 {
            let now_ns = now_nanos();
            let mut q = self.expiring.lock();
            while let Some(&(exp, seq)) = q.front() {
                if exp > now_ns {
                    let wait = Duration::from_nanos((exp - now_ns) as u64);
                    at(Some(now + wait));
                    break;
                }
                q.pop_front();
                core.remove_retained(seq);
            }
        }
        *raise |= mask;
        next
    }
}

impl WriterOwner {
    /// Enables the writer: it joins the participant's endpoints and is announced (matched).
    pub(super) fn enable(&self) {
        if self.ep.enabled.swap(true, Ordering::AcqRel) {
            return;
        }
        let p = self.participant.shared();
        p.endpoints
            .write()
            .writers
            .insert(self.entity_id, self.ep.clone() as Arc<dyn LocalWriter>);
        let qos = self.ep.current_qos.lock().clone();
        self.reannounce(&qos);
    }

    /// Announces the writer (again) with `qos`, which (re-)matches it with every reader; an
    /// entity not enabled yet is announced by `enable`.
    pub(super) fn reannounce(&self, qos: &DataWriterQos) {
        if !self.ep.enabled.load(Ordering::Acquire) {
            return;
        }
        let p = self.participant.shared();
        let now = Instant::now();
        let actions = p.discovery.lock().add_local_writer(
            p,
            Guid::new(p.guid_prefix, self.entity_id),
            crate::discovery_rt::EndpointTopic {
                topic_name: &self.topic_name,
                type_name: &self.type_name,
                content_filter: None,
                loan_layout: 0,
                cdr_chunks: false,
            },
            {
                let mut side = tessera_rtps::qos::WriterSideQos::new(
                    &self.topic_qos,
                    &self.publisher.qos(),
                    qos,
                );
                side.consensus_endpoint = self.consensus;
                side
            },
            now,
        );
        p.apply_discovery_events(actions, now);
    }
}

impl<T: TopicType> DataWriter<T> {
    /// The writer's QoS (as `set_qos` last changed it).
    pub fn qos(&self) -> DataWriterQos {
        self.ep.current_qos.lock().clone()
    }

    /// Enables a writer created by a publisher whose ENTITY_FACTORY does not autoenable: it is
    /// announced and matched from now on, and may write. Enabling twice does nothing.
    pub fn enable(&self) -> Result<()> {
        match &self.owner {
            Some(o) => {
                o.enable();
                Ok(())
            }
            None => Err(Error::PreconditionNotMet(
                "enable on a listener's handle of the writer".into(),
            )),
        }
    }

    /// Whether the writer is enabled (see [`DataWriter::enable`]).
    pub fn is_enabled(&self) -> bool {
        self.ep.enabled.load(Ordering::Acquire)
    }

    /// Changes the writer's QoS. The changeable policies (DEADLINE, LATENCY_BUDGET,
    /// OWNERSHIP_STRENGTH, LIFESPAN, TRANSPORT_PRIORITY, USER_DATA, WRITER_DATA_LIFECYCLE)
    /// take effect at once and are announced again, which re-matches the writer (a reader
    /// whose requested deadline the new one no longer meets unmatches, and a stronger strength
    /// wins instances from the next sample on). Changing any other policy is refused with
    /// [`Error::ImmutablePolicy`]; an inconsistent QoS with [`Error::InconsistentPolicy`].
    pub fn set_qos(&self, qos: DataWriterQos) -> Result<()> {
        qos.check_consistency()
            .map_err(|e| Error::InconsistentPolicy(e.to_string()))?;
        let Some(owner) = &self.owner else {
            return Err(Error::PreconditionNotMet(
                "set_qos on a listener's handle of the writer".into(),
            ));
        };
        let fixed = &self.ep.qos;
        crate::qos_rt::check_immutable(
            fixed,
            &qos,
            &[(
                "DURABILITY_SERVICE",
                fixed.durability_service != qos.durability_service,
            )],
        )?;
        self.ep.apply_qos(&qos);
        *self.ep.current_qos.lock() = qos.clone();
        owner.reannounce(&qos);
        Ok(())
    }

    /// OFFERED_DEADLINE_MISSED; reading it resets the change count.
    pub fn offered_deadline_missed_status(&self) -> OfferedDeadlineMissedStatus {
        self.ep.take_offered_deadline_missed()
    }

    /// LIVELINESS_LOST; reading it resets the change count.
    pub fn liveliness_lost_status(&self) -> LivelinessLostStatus {
        self.ep.take_liveliness_lost()
    }

    /// Asserts this writer's liveliness (DDS `assert_liveliness`): needed only by
    /// MANUAL_BY_TOPIC and MANUAL_BY_PARTICIPANT writers that do not write within their lease
    /// (every write asserts too). A MANUAL_BY_TOPIC writer's readers hear of it by a HEARTBEAT
    /// with the liveliness flag; a MANUAL_BY_PARTICIPANT writer asserts its whole participant
    /// ([`crate::DomainParticipant::assert_liveliness`]), whose readers hear of it by a
    /// ParticipantMessageData.
    pub fn assert_liveliness(&self) -> Result<()> {
        assert_writer_liveliness(self.owner.as_deref(), &self.ep)
    }
}

/// `assert_liveliness` of a writer (typed or not): MANUAL_BY_PARTICIPANT asserts the whole
/// participant, the other kinds the writer itself.
pub(super) fn assert_writer_liveliness(
    owner: Option<&WriterOwner>,
    ep: &WriterEndpoint,
) -> Result<()> {
    match (owner, ep.liveliness_kind) {
        (Some(o), LivelinessKind::ManualByParticipant) => o.participant.assert_liveliness(),
        _ => ep.assert_liveliness(),
    }
}

/// The LATENCY_BUDGET in ns, at most a second; 0 for none.
pub(super) fn budget_ns(qos: &DataWriterQos) -> u64 {
    let d = qos.latency_budget.duration.min(Duration::from_secs(1));
    u64::try_from(d.as_nanos()).unwrap_or(0)
}

/// A LIFESPAN duration in ns; 0 for infinite.
pub(super) fn lifespan_ns(d: Duration) -> u64 {
    if tessera_rtps::qos::is_infinite(d) {
        0
    } else {
        u64::try_from(d.as_nanos()).unwrap_or(u64::MAX).max(1)
    }
}
