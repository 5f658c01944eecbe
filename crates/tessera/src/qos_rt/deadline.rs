//! Per-instance DEADLINE timers (DDS 1.4 §2.2.3.7).
//!
//! Each tracked instance is due one period after its last update; an instance that stays
//! silent past its due time counts one missed deadline and is re-armed for the next period, so
//! a silent instance counts one miss per period, as Cyclone and RTI count them.
//!
//! Updates are O(1): they only move the instance's due time in a hash map. The ordered queue
//! holds at most a few entries per instance, each no later than the instance's real due time;
//! an entry that comes up early is put back at the real time (lazy rescheduling).

use std::collections::BTreeSet;
use std::time::{Duration, Instant};
use tessera_rtps::fasthash::FastHashMap;

/// An instance key hash (all zeros for a keyless topic).
pub(crate) type Key = [u8; 16];

/// The DEADLINE timers of one writer or reader.
#[derive(Debug, Default)]
pub(crate) struct DeadlineTimers {
    /// `None`: the period is infinite and nothing is tracked.
    period: Option<Duration>,
    due: FastHashMap<Key, Instant>,
    queue: BTreeSet<(Instant, Key)>,
}

impl DeadlineTimers {
    /// Timers with `period` ([`tessera_rtps::qos::INFINITE`] tracks nothing).
    pub fn new(period: Duration) -> DeadlineTimers {
        let mut t = DeadlineTimers::default();
        t.set_period(period);
        t
    }

    /// Changes the period (DEADLINE is changeable): instances already tracked keep their due
    /// time and take the new period from their next update or miss; an infinite period stops
    /// all tracking.
    pub fn set_period(&mut self, period: Duration) {
        if tessera_rtps::qos::is_infinite(period) {
            self.period = None;
            self.due.clear();
            self.queue.clear();
        } else {
            self.period = Some(period.max(Duration::from_micros(100)));
        }
    }

    /// Instance `key` was updated at `now`. Returns its new due time when the instance was not
    /// tracked before (the caller makes sure its event thread wakes by then).
    pub fn renew(&mut self, key: Key, now: Instant) -> Option<Instant> {
        let period = self.period?;
        let at = now + period;
        match self.due.insert(key, at) {
            Some(_) => None,
            None => {
                self.queue.insert((at, key));
                Some(at)
            }
        }
    }

    /// Stops tracking `key` (unregistered, disposed, or no longer alive).
    pub fn remove(&mut self, key: &Key) {
        self.due.remove(key);
    }

    /// Keeps only the instances `keep` accepts.
    pub fn retain(&mut self, mut keep: impl FnMut(&Key) -> bool) {
        self.due.retain(|k, _| keep(k));
        self.queue.retain(|(_, k)| keep(k));
    }

    /// Instances tracked.
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> usize {
        self.due.len()
    }

    /// The instances whose deadline passed by `now`, appended to `missed` (one entry per
    /// missed period), each re-armed for its next period.
    pub fn expire(&mut self, now: Instant, missed: &mut Vec<Key>) {
        let Some(period) = self.period else {
            return;
        };
        while let Some(&(at, key)) = self.queue.first() {
            if at > now {
                break;
            }
            self.queue.pop_first();
            let Some(due) = self.due.get_mut(&key) else {
                continue; // no longer tracked
            };
            if *due > at {
                // Updated since this entry was queued: wait for its real due time.
                let real = *due;
                self.queue.insert((real, key));
                continue;
            }
            // Missed (possibly several periods in a row when the thread was late).
            let mut next = *due;
            while next <= now {
                missed.push(key);
                next += period;
            }
            *due = next;
            self.queue.insert((next, key));
        }
    }

    /// When [`DeadlineTimers::expire`] next has work (possibly early: an entry may be moved).
    pub fn next(&self) -> Option<Instant> {
        self.queue.first().map(|&(t, _)| t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn infinite_tracks_nothing() {
        let mut t = DeadlineTimers::new(tessera_rtps::qos::INFINITE);
        let now = Instant::now();
        assert_eq!(t.renew([1; 16], now), None);
        assert_eq!(t.len(), 0);
        assert_eq!(t.next(), None);
    }

    #[test]
    fn a_silent_instance_misses_once_per_period() {
        let p = Duration::from_millis(10);
        let mut t = DeadlineTimers::new(p);
        let t0 = Instant::now();
        assert_eq!(t.renew([1; 16], t0), Some(t0 + p));
        t.renew([2; 16], t0);
        let mut missed = Vec::new();
        t.expire(t0 + Duration::from_millis(5), &mut missed);
        assert!(missed.is_empty());
        // Instance 2 is updated at 8 ms: only instance 1 misses at 10 ms.
        assert_eq!(t.renew([2; 16], t0 + Duration::from_millis(8)), None);
        t.expire(t0 + p, &mut missed);
        assert_eq!(missed, vec![[1; 16]]);
        missed.clear();
        // At 35 ms: instance 1 missed at 20 and 30, instance 2 at 18 and 28.
        t.expire(t0 + Duration::from_millis(35), &mut missed);
        missed.sort();
        assert_eq!(missed, vec![[1; 16], [1; 16], [2; 16], [2; 16]]);
        t.remove(&[1; 16]);
        missed.clear();
        t.expire(t0 + Duration::from_millis(100), &mut missed);
        assert!(missed.iter().all(|k| *k == [2; 16]));
        assert_eq!(t.len(), 1);
    }
}
