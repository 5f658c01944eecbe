//! The per-topic sample sink: how a received sample is staged, committed and replayed, or,
//! replicated, proposed to the services' log and held or waited for until the log applied it.

use super::{Pending, TopicState};
#[cfg(doc)]
use crate::held::HeldAcks;
use crate::replicate::{LogWriter, PROPOSER_GRACE};
use crate::store::{Op, Outcome, StoredSample};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use tessera::rtps::types::Guid;
use tessera::{ReceivedSample, SampleSink, SinkVerdict};

/// How long after proposing a sample a sink proposes it again if the log has not applied it
/// (no leader then, a proposal lost in a leader change).
const PROPOSE_AGAIN_AFTER: Duration = Duration::from_secs(2);

/// How long a sink waits for the log to apply a sample it proposed before refusing it (its
/// writer sends it again): a commit takes a few milliseconds, a resend round trip more. Short,
/// as the reader's lock is held meanwhile.
const ACCEPT_WAIT: Duration = Duration::from_millis(50);

/// Proposals remembered per topic (to propose each sample once, not on every resend).
const MAX_IN_FLIGHT: usize = 65_536;

impl TopicState {
    /// Takes `sample` into the store; what to write to disk and replay goes to `p`.
    fn stage(&self, sample: StoredSample, p: &mut Pending) {
        let mut ops = Vec::new();
        let out = self.store.lock().insert(sample, &mut ops);
        if out == Outcome::Stored {
            if self.persist.is_some() {
                p.0.extend(ops.iter().map(|o| (self.name.clone(), o.clone())));
            }
            if let Some(Op::Put(s)) = ops.into_iter().find(|o| matches!(o, Op::Put(_))) {
                p.1.push(s);
            }
        } else if (out == Outcome::Duplicate || out == Outcome::Ignored) && self.persist.is_some() {
            // The high-water mark moved (unregister) or nothing did: nothing to commit
            // beyond it.
            p.0.extend(ops.into_iter().map(|o| (self.name.clone(), o)));
        }
    }

    /// Writes what was staged to disk (PERSISTENT) and hands its samples to the replay writer.
    fn commit(&self, (ops, samples): Pending) {
        if let Some(p) = &self.persist {
            if let Err(e) = p.apply(&ops) {
                // Acknowledged but not on disk: counted and said, the service keeps serving
                // from memory.
                self.store_errors
                    .fetch_add(samples.len() as u64, Ordering::Relaxed);
                tracing::error!(topic = %self.name, error = %e, "durability store write failed");
            }
        }
        for s in samples {
            let _ = self.replay.send(s);
        }
    }

    /// Replicated: applies samples the log delivered for this topic, in log order (the same
    /// at every service), then wakes the sinks waiting for them.
    /// Returns the writers whose acknowledgment hold can move.
    pub(super) fn apply_log(&self, samples: Vec<StoredSample>) -> Vec<Guid> {
        if samples.is_empty() {
            return Vec::new();
        }
        let writers: HashSet<Guid> = samples.iter().map(|s| s.writer).collect();
        let mut p = Pending::default();
        for s in samples {
            self.stage(s, &mut p);
        }
        self.commit(p);
        let highs: Vec<(Guid, i64)> = {
            let store = self.store.lock();
            writers
                .into_iter()
                .filter_map(|w| store.high_of(&w).map(|h| (w, h)))
                .collect()
        };
        let mut applied = self.applied.lock();
        for (w, h) in highs {
            let a = applied.entry(w).or_insert(h);
            *a = (*a).max(h);
        }
        self.applied_changed.notify_all();
        self.in_flight
            .lock()
            .retain(|(w, seq), _| applied.get(w).is_none_or(|&h| *seq > h));
        self.held_acks.lock().release_applied(&applied)
    }

    /// Replicated, for a sample whose acknowledgment the reader can hold: taken at once and
    /// proposed (by the designated service; the others propose it only if the log has not
    /// applied it after [`PROPOSER_GRACE`]), acknowledged when the log applied it. Falls
    /// back to [`Self::accept_replicated`] when too many are held.
    fn hold_replicated(&self, log: &LogWriter, sample: StoredSample) -> SinkVerdict {
        let applied = self
            .applied
            .lock()
            .get(&sample.writer)
            .is_some_and(|&h| sample.sequence_number <= h);
        if applied {
            return SinkVerdict::Accepted;
        }
        let mut held = self.held_acks.lock();
        if held.contains(&sample.writer, sample.sequence_number) {
            return SinkVerdict::Held;
        }
        if held.len() >= MAX_IN_FLIGHT {
            drop(held);
            return match self.accept_replicated(log, sample) {
                true => SinkVerdict::Accepted,
                false => SinkVerdict::Refused,
            };
        }
        // The held set, not `in_flight`, remembers what was proposed and when.
        let now = Instant::now();
        let propose = self.designated.load(Ordering::Relaxed);
        let proposal = propose.then(|| sample.clone());
        held.insert(sample, propose.then_some(now), now);
        drop(held);
        if let Some(sample) = proposal {
            log.propose(&self.name, &sample);
        }
        SinkVerdict::Held
    }

    /// Replicated: proposes the held samples that are due (see [`HeldAcks::due`]).
    pub(super) fn propose_held(&self, log: &LogWriter) {
        let due = self
            .held_acks
            .lock()
            .due(Instant::now(), PROPOSER_GRACE, PROPOSE_AGAIN_AFTER);
        for (sample, repeat) in due {
            if repeat {
                log.proposed_again.fetch_add(1, Ordering::Relaxed);
                tracing::info!(topic = %self.name, seq = sample.sequence_number,
                    "held sample not in the log yet: proposed again");
            }
            log.propose(&self.name, &sample);
        }
    }

    /// The sample as this service keeps it, or `None` for our own replay writer's.
    fn stored_of(&self, s: &ReceivedSample<'_>) -> Option<StoredSample> {
        if s.writer.prefix == self.own || s.relayed_by.is_some_and(|r| r.prefix == self.own) {
            return None;
        }
        Some(StoredSample {
            writer: s.writer,
            sequence_number: s.sequence_number,
            key_hash: s.key_hash,
            status_info: s.status_info & 3,
            source_timestamp: s.source_timestamp,
            arrival: 0,
            payload: s.payload.to_vec(),
        })
    }

    /// Replicated: whether `sample` may be acknowledged: once the log applied it here. Else
    /// it is proposed (once, again after [`PROPOSE_AGAIN_AFTER`]) and waited for a little; not
    /// applied by then, it is refused and its writer sends it again (the log thread asks for
    /// it as soon as it applied it). Nothing here waits on the log for longer than
    /// [`ACCEPT_WAIT`]: the reader's lock is held, and the participant's event thread needs it.
    fn accept_replicated(&self, log: &LogWriter, sample: StoredSample) -> bool {
        let done = |a: &HashMap<Guid, i64>| {
            a.get(&sample.writer)
                .is_some_and(|&h| sample.sequence_number <= h)
        };
        if done(&self.applied.lock()) {
            return true;
        }
        let now = Instant::now();
        if !self.designated.load(Ordering::Relaxed) {
            // Most likely proposed by the designated service already: a little time for it.
            let mut applied = self.applied.lock();
            let grace = now + PROPOSER_GRACE;
            while !done(&applied) {
                if self
                    .applied_changed
                    .wait_until(&mut applied, grace)
                    .timed_out()
                {
                    break;
                }
            }
            if done(&applied) {
                return true;
            }
        }
        {
            let mut in_flight = self.in_flight.lock();
            let key = (sample.writer, sample.sequence_number);
            match in_flight.get(&key) {
                Some(at) if now.duration_since(*at) < PROPOSE_AGAIN_AFTER => {}
                again => {
                    if again.is_some() {
                        log.proposed_again.fetch_add(1, Ordering::Relaxed);
                        tracing::info!(topic = %self.name, seq = sample.sequence_number,
                            "not in the log yet: proposed again");
                    } else if in_flight.len() >= MAX_IN_FLIGHT {
                        in_flight.clear();
                    }
                    in_flight.insert(key, now);
                    log.propose(&self.name, &sample);
                }
            }
        }
        let deadline = now + ACCEPT_WAIT;
        let mut applied = self.applied.lock();
        loop {
            if done(&applied) {
                return true;
            }
            if self.closed.load(Ordering::Relaxed)
                || self.stop.load(Ordering::Relaxed)
                || self
                    .applied_changed
                    .wait_until(&mut applied, deadline)
                    .timed_out()
            {
                let ok = done(&applied);
                if !ok {
                    log.refused.fetch_add(1, Ordering::Relaxed);
                    self.refused.store(true, Ordering::Relaxed);
                }
                return ok;
            }
        }
    }
}

impl SampleSink for TopicState {
    fn on_sample(&self, s: &ReceivedSample<'_>) -> bool {
        let Some(sample) = self.stored_of(s) else {
            // Our own replay writer, delivered locally.
            return true;
        };
        if let Some(log) = &self.log {
            // Replicated: stored when the log delivers it, at every service alike.
            return self.accept_replicated(log, sample);
        }
        self.stage(sample, &mut self.pending.lock());
        true
    }

    fn offer(&self, s: &ReceivedSample<'_>) -> SinkVerdict {
        match &self.log {
            Some(log) if s.can_hold => match self.stored_of(s) {
                Some(sample) => self.hold_replicated(log, sample),
                None => SinkVerdict::Accepted,
            },
            _ => match self.on_sample(s) {
                true => SinkVerdict::Accepted,
                false => SinkVerdict::Refused,
            },
        }
    }

    fn end_of_batch(&self) {
        if self.log.is_some() {
            return;
        }
        let pending = std::mem::take(&mut *self.pending.lock());
        self.commit(pending);
    }
}
