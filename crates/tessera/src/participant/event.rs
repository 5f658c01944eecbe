//! The event thread: [`EventKick`], which wakes it early when a deadline moves forward, and
//! its loop over the timers of discovery and of every endpoint.

use super::ParticipantShared;
use crate::bounds::DropReport;
use parking_lot::{Condvar, Mutex};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Wakes the event thread early when an endpoint's next deadline moved forward.
///
/// `scheduled` is the earliest time anyone needs the event thread: while it sleeps, its wake-up
/// time; while it runs a pass, [`EventKick::RUNNING`] lowered by every deadline requested during
/// the pass (the pass may already have looked at that endpoint). A requester lowers it with
/// `fetch_min` and kicks only when it did lower it; the thread's next sleep ends no later than
/// the lowest value, so no request is lost, whenever it comes.
#[derive(Debug)]
pub(crate) struct EventKick {
    epoch: Instant,
    /// ns since `epoch`, as above.
    scheduled: AtomicU64,
    lock: Mutex<bool>,
    cv: Condvar,
}

impl EventKick {
    /// `scheduled` while a pass runs and nothing was requested during it.
    const RUNNING: u64 = u64::MAX;

    pub(crate) fn new() -> Self {
        EventKick {
            epoch: Instant::now(),
            // The event thread starts with a pass.
            scheduled: AtomicU64::new(Self::RUNNING),
            lock: Mutex::new(false),
            cv: Condvar::new(),
        }
    }

    fn to_ns(&self, t: Instant) -> u64 {
        (t.saturating_duration_since(self.epoch).as_nanos() as u64).min(Self::RUNNING - 1)
    }

    /// `t` as ns since this participant's epoch (for compact atomics).
    pub fn ns_of(&self, t: Instant) -> u64 {
        self.to_ns(t)
    }

    /// The instant `ns` after this participant's epoch.
    pub fn instant_of(&self, ns: u64) -> Instant {
        self.epoch + Duration::from_nanos(ns)
    }

    /// Makes sure the event thread wakes no later than `deadline`. One atomic load when the
    /// thread is already due earlier (the common case on the write path).
    pub fn ensure_by(&self, deadline: Option<Instant>) {
        if let Some(d) = deadline {
            let ns = self.to_ns(d);
            if ns < self.scheduled.load(Ordering::Acquire)
                && ns < self.scheduled.fetch_min(ns, Ordering::AcqRel)
            {
                self.kick();
            }
        }
    }

    /// Ends a pass: sleeps until `deadline` or the earliest deadline requested meanwhile,
    /// whichever comes first, then begins the next pass.
    fn sleep_until(&self, deadline: Instant) {
        // Every kick so far lowered `scheduled` before it set the flag: the flag adds nothing
        // that the `fetch_min` below does not see.
        *self.lock.lock() = false;
        let ns = self.to_ns(deadline);
        let target = ns.min(self.scheduled.fetch_min(ns, Ordering::AcqRel));
        let mut kicked = self.lock.lock();
        if !*kicked {
            let _ = self.cv.wait_until(&mut kicked, self.instant_of(target));
        }
        *kicked = false;
        drop(kicked);
        // The pass that follows reads every endpoint's deadline after this store; requests
        // made from here on lower `scheduled` again and shorten the next sleep.
        self.scheduled.store(Self::RUNNING, Ordering::Release);
    }

    /// The earliest wake-up requested since the last call (for tests, which run no event
    /// thread).
    #[cfg(test)]
    pub(crate) fn take_scheduled(&self) -> Option<Instant> {
        let ns = self.scheduled.swap(Self::RUNNING, Ordering::AcqRel);
        (ns != Self::RUNNING).then(|| self.instant_of(ns))
    }

    /// Wakes the event thread now, whatever it is doing (shutdown): a plain kick could land
    /// between the end of a pass and its sleep and be cleared there.
    pub(super) fn wake_now(&self) {
        self.scheduled.store(0, Ordering::Release);
        self.kick();
    }

    fn kick(&self) {
        *self.lock.lock() = true;
        self.cv.notify_one();
    }
}

impl ParticipantShared {
    /// The event thread: timers of discovery and of every endpoint.
    pub(super) fn event_loop(self: Arc<Self>) {
        const MAX_SLEEP: Duration = Duration::from_millis(100);
        let mut drops = DropReport::new(Duration::from_secs(1));
        while !self.is_closed() {
            let now = Instant::now();
            if drops.due(now) {
                drops.report(now, self.counters_snapshot());
            }
            let mut next = now + MAX_SLEEP;
            let (events, d) = {
                let mut disc = self.discovery.lock();
                let ev = disc.on_timeout(&self, now);
                (ev, disc.next_deadline())
            };
            self.apply_discovery_events(events, now);
            if let Some(d) = d {
                next = next.min(d);
            }
            let (writers, readers): (Vec<_>, Vec<_>) = {
                let eps = self.endpoints.read();
                (
                    eps.writers.values().cloned().collect(),
                    eps.readers.values().cloned().collect(),
                )
            };
            for w in &writers {
                if let Some(d) = w.on_timeout(&self.ctx, now) {
                    next = next.min(d);
                }
            }
            for r in &readers {
                if let Some(d) = r.on_timeout(&self.ctx, now) {
                    next = next.min(d);
                }
            }
            drop((writers, readers));
            if self.send_queues.drain_ready(&self.ctx) {
                // A destination is still blocked: try again soon (never blocking here).
                next = next.min(now + Duration::from_millis(1));
            }
            self.kick
                .sleep_until(next.max(now + Duration::from_micros(50)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::EventKick;
    use std::time::{Duration, Instant};

    /// The event thread's protocol, driven on one thread: a deadline requested while the thread
    /// runs a pass (between two `sleep_until`s) must cut the next sleep short.
    #[test]
    fn a_deadline_requested_during_a_pass_is_honoured() {
        let kick = EventKick::new();
        // A pass ends at once and the next one begins.
        kick.sleep_until(Instant::now());
        // During that pass, an endpoint asks to be served in 5 ms.
        let asked = Instant::now();
        kick.ensure_by(Some(asked + Duration::from_millis(5)));
        // The pass, which had already looked at that endpoint, plans to sleep 2 s.
        kick.sleep_until(asked + Duration::from_secs(2));
        let slept = asked.elapsed();
        assert!(
            slept < Duration::from_secs(1),
            "the request was lost: slept {slept:?}"
        );
    }

    /// A request for a later deadline than the planned wake-up costs nothing and changes nothing.
    #[test]
    fn a_later_deadline_does_not_wake_early() {
        let kick = EventKick::new();
        kick.sleep_until(Instant::now());
        let t = Instant::now();
        kick.ensure_by(Some(t + Duration::from_secs(5)));
        kick.sleep_until(t + Duration::from_millis(30));
        let slept = t.elapsed();
        assert!(slept >= Duration::from_millis(30), "woke early: {slept:?}");
        assert!(
            slept < Duration::from_secs(4),
            "slept to the later deadline: {slept:?}"
        );
    }
}
