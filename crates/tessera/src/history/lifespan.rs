//! LIFESPAN in the reader's cache (and the changeable READER_DATA_LIFECYCLE, at the end): samples whose writer's lifespan ran out are removed, read or
//! not, and never handed out.
//!
//! The cache keeps only the earliest expiry set since its last sweep; a sweep (when that time
//! has come) visits the non-empty instances once and computes the next one. A cache whose
//! writers have no lifespan pays one comparison per access.

use super::{History, Slot, NONE};

impl<T> History<T> {
    /// Gives the newest sample of instance `handle` (the one just inserted) an expiry time
    /// `at` (ns, the caller's clock).
    pub fn set_newest_expiry(&mut self, handle: super::InstanceHandle, at: i64) {
        let Some(&slot) = self.by_handle.get(&handle) else {
            return;
        };
        let Some(s) = super::slot_mut(&mut self.slots, slot).and_then(|i| i.samples.back_mut())
        else {
            return;
        };
        s.expires = at;
        self.next_expiry = Some(self.next_expiry.map_or(at, |n| n.min(at)));
    }

    /// The earliest time (ns) at which a sample may expire, if one can.
    pub fn next_expiry(&self) -> Option<i64> {
        self.next_expiry
    }

    /// Removes every sample whose lifespan ran out at `now` (ns); returns how many.
    pub fn drop_expired(&mut self, now: i64) -> usize {
        if self.next_expiry.is_none_or(|n| n > now) {
            return 0;
        }
        let mut removed = 0;
        let mut next: Option<i64> = None;
        let mut cur: Slot = self.head;
        while cur != NONE {
            let Some(inst) = super::slot_mut(&mut self.slots, cur) else {
                break;
            };
            let following = inst.next;
            let before = inst.samples.len();
            let (mut valid, mut unread) = (0usize, 0usize);
            inst.samples.retain(|s| {
                if s.expires > now {
                    if s.expires != i64::MAX {
                        next = Some(next.map_or(s.expires, |n| n.min(s.expires)));
                    }
                    return true;
                }
                valid += usize::from(s.data.is_some());
                unread += usize::from(!s.read);
                false
            });
            let gone = before - inst.samples.len();
            if gone > 0 {
                inst.valid_len -= valid;
                inst.not_read -= unread;
                self.valid_total -= valid;
                self.not_read_total -= unread;
                self.total -= gone;
                removed += gone;
                self.unlink_if_empty(cur);
                self.purge_if_dead(cur);
            }
            cur = following;
        }
        self.next_expiry = next;
        removed
    }
}

impl<T> History<T> {
    /// Changes the autopurge delays (READER_DATA_LIFECYCLE is changeable): they apply to the
    /// instances that become not alive from now on.
    pub fn set_lifecycle(&mut self, lifecycle: super::Lifecycle) {
        self.config.lifecycle = lifecycle;
    }
}

#[cfg(test)]
mod tests {
    use super::super::{History, HistoryConfig, HistoryKind, StateMasks};

    #[test]
    fn expired_samples_are_removed_read_or_not() {
        let mut h: History<u32> = History::new(HistoryConfig {
            history: HistoryKind::KeepAll,
            ..HistoryConfig::default()
        });
        let a = h.insert([1; 16], [9; 16], 1, 0, 10).handle().unwrap();
        h.set_newest_expiry(a, 100);
        h.insert([1; 16], [9; 16], 2, 0, 20);
        let b = h.insert([2; 16], [9; 16], 3, 0, 30).handle().unwrap();
        h.set_newest_expiry(b, 50);
        assert_eq!(h.next_expiry(), Some(50));
        assert_eq!(h.read(1, StateMasks::ANY).len(), 1);
        assert_eq!(h.drop_expired(49), 0);
        assert_eq!(h.drop_expired(60), 1);
        assert_eq!(h.next_expiry(), Some(100));
        assert_eq!(h.drop_expired(100), 1);
        assert_eq!(h.next_expiry(), None);
        let left: Vec<u32> = h
            .take(usize::MAX, StateMasks::ANY)
            .into_iter()
            .filter_map(|s| s.data)
            .collect();
        assert_eq!(left, vec![2]);
    }
}
