//! The timer pass: when the writer next needs a wake-up, the periodic and recheck heartbeats
//! run at that time, and the back-off towards readers that have not answered yet. Separate
//! from the input handlers (write, acknowledgments), which only arm these timers.

use std::time::{Duration, Instant};

use super::{WriterCore, MIN_RECHECK};

/// First heartbeat period towards a reliable reader that has not answered yet; it doubles
/// with each unanswered heartbeat up to the configured period. A reader usually answers
/// at once (it matched us first) or asks on its own when it matches us (its pre-emptive
/// ACKNACK); a flat 10 ms towards every reader its participant has not yet matched made
/// hundreds of writers in a starting system heartbeat a hundred times a second.
const UNSYNCED_HEARTBEAT_PERIOD: Duration = Duration::from_millis(10);

/// The heartbeat period towards a reader that left `unanswered` heartbeats unanswered.
pub(super) fn unsynced_period(unanswered: u32, configured: Duration) -> Duration {
    (UNSYNCED_HEARTBEAT_PERIOD * (1u32 << unanswered.min(8))).min(configured)
}

impl WriterCore {
    /// The next instant [`WriterCore::handle_timeout`] (or a repair in `poll_transmit`) is due.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.readers
            .iter()
            .filter_map(|r| r.repair_at)
            .chain(self.readers.iter().filter_map(|r| r.recheck_at))
            .chain(self.next_hb)
            .min()
    }

    /// Runs timers: the periodic heartbeat to readers with unacknowledged samples.
    pub fn handle_timeout(&mut self, now: Instant) {
        let last = self.sh.last_seq;
        let cfg = &self.sh.cfg;
        for r in self.readers.iter_mut() {
            if r.recheck_at.is_some_and(|t| t <= now) {
                // Learn what is still missing now that repairs had time to arrive.
                r.recheck_at = None;
                if r.reliable && r.acked <= last {
                    r.want_hb(false);
                    if r.resent.back().is_some_and(|e| e.0 >= r.acked) {
                        // Repairs still unacknowledged: keep asking, less and less often.
                        let d = (r.rtt.holdoff(cfg).max(MIN_RECHECK)
                            * (1 << r.recheck_backoff.min(16)))
                        .min(cfg.heartbeat_period.max(MIN_RECHECK));
                        r.recheck_backoff = r.recheck_backoff.saturating_add(1);
                        r.recheck_at = Some(now + d);
                    }
                }
            }
        }
        let Some(t) = self.next_hb else { return };
        if t > now {
            return;
        }
        let period = self.sh.cfg.heartbeat_period;
        let mut next = None::<Instant>;
        for r in self.readers.iter_mut().filter(|r| r.reliable) {
            if !r.synced {
                // A reader that has not answered yet: asked soon after it matched, then
                // less and less often.
                if r.unsynced_next <= now {
                    r.want_hb(false);
                    r.unsynced_hbs = r.unsynced_hbs.saturating_add(1);
                    r.unsynced_next = now + unsynced_period(r.unsynced_hbs, period);
                }
                next = Some(next.map_or(r.unsynced_next, |t| t.min(r.unsynced_next)));
            } else if r.acked <= last {
                // Unacknowledged data: ask again.
                r.want_hb(false);
                next = Some(next.map_or(now + period, |t| t.min(now + period)));
            }
        }
        self.next_hb = next;
    }
}
