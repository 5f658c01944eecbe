//! Autopurge (READER_DATA_LIFECYCLE): scheduling, measuring and carrying out the removal of
//! not-alive instances, and freeing the slots of instances that are gone.

use std::time::Duration;

use super::{slot_mut, History, Slot};

impl<T> History<T> {
    /// Measures autopurge delays on `clock` (ns, monotonic) from now on, instead of on the
    /// timestamps given with the state changes: those are wall-clock times, and a wall clock
    /// stepped forward would purge early (backward: late). Set before anything is scheduled;
    /// [`History::purge_expired`] and [`History::next_purge`] are then on `clock` too.
    pub fn set_purge_clock(&mut self, clock: fn() -> i64) {
        self.purge_clock = Some(clock);
    }

    /// The purge clock's time: its own reading, else `given` (the caller's timestamp).
    fn purge_now(&self, given: i64) -> i64 {
        self.purge_clock.map_or(given, |c| c())
    }

    /// [`History::purge_expired`] at the caller's timestamp `given` or the purge clock's time;
    /// reads the clock only when a purge is pending (this runs on every insert).
    pub(super) fn purge_due(&mut self, given: i64) -> usize {
        if self.purge_queue.is_empty() {
            return 0;
        }
        self.purge_expired(self.purge_now(given))
    }

    /// The earliest time (ns, the purge clock) at which a not-alive instance is due for
    /// autopurge, if any is scheduled.
    pub fn next_purge(&self) -> Option<i64> {
        self.purge_queue.first().map(|&(t, _)| t)
    }

    /// Purges every not-alive instance whose autopurge delay has run out at `now` (ns, the
    /// purge clock: see [`History::set_purge_clock`]), with all its samples. Returns how many.
    pub fn purge_expired(&mut self, now: i64) -> usize {
        let mut n = 0;
        while let Some(&(at, handle)) = self.purge_queue.first() {
            if at > now {
                break;
            }
            self.purge_queue.pop_first();
            if let Some(&slot) = self.by_handle.get(&handle) {
                if let Some(i) = slot_mut(&mut self.slots, slot) {
                    i.purge_at = None;
                }
                self.remove_instance(slot);
                n += 1;
            }
        }
        self.autopurged += n as u64;
        n
    }

    /// Removes an instance that holds no sample, is not alive and has no registered writer.
    pub(super) fn purge_if_dead(&mut self, slot: Slot) {
        let dead = self.inst(slot).is_some_and(|i| {
            i.samples.is_empty() && !i.state.is_alive() && i.writers.is_empty() && !i.linked
        });
        if dead {
            self.free_slot(slot);
        }
    }

    /// (Re)schedules the autopurge of a not-alive instance `delay` after `now` (the caller's
    /// timestamp; the purge clock's time when the cache has one); `None`
    /// (infinite) cancels any pending one.
    pub(super) fn schedule_purge(&mut self, slot: Slot, now: i64, delay: Option<Duration>) {
        // No clock read for an infinite delay (the DDS default).
        let now = if delay.is_some() {
            self.purge_now(now)
        } else {
            now
        };
        let Some(inst) = slot_mut(&mut self.slots, slot) else {
            return;
        };
        if let Some(at) = inst.purge_at.take() {
            self.purge_queue.remove(&(at, inst.handle));
        }
        if let Some(d) = delay {
            let at = now.saturating_add(i64::try_from(d.as_nanos()).unwrap_or(i64::MAX));
            inst.purge_at = Some(at);
            self.purge_queue.insert((at, inst.handle));
        }
    }

    /// Drops an instance with all its samples, read or not.
    fn remove_instance(&mut self, slot: Slot) {
        let Some(inst) = slot_mut(&mut self.slots, slot) else {
            return;
        };
        self.total -= inst.samples.len();
        self.valid_total -= inst.valid_len;
        self.not_read_total -= inst.not_read;
        inst.samples.clear();
        inst.valid_len = 0;
        inst.not_read = 0;
        inst.has_invalid = false;
        self.unlink_if_empty(slot);
        self.free_slot(slot);
    }

    /// Frees an instance's slot (its samples must already be gone from the totals).
    fn free_slot(&mut self, slot: Slot) {
        if let Some(inst) = self.slots.get_mut(slot as usize).and_then(Option::take) {
            self.by_key.remove(&inst.key);
            self.by_handle.remove(&inst.handle);
            if let Some(at) = inst.purge_at {
                self.purge_queue.remove(&(at, inst.handle));
            }
            self.free.push(slot);
        }
    }
}
