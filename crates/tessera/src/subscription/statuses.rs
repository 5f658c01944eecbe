//! Raising a reader's status changes (conditions and listeners) and counting them, saturating.

use super::ReaderEndpoint;
use crate::status::StatusMask;

impl ReaderEndpoint {
    pub(super) fn status_changed(&self, mask: StatusMask) {
        self.statuses.lock().changes |= mask;
        self.notifier.notify();
        let l = self.listener.lock().clone();
        if let (Some(l), Some(ep)) = (l, self.me.upgrade()) {
            l.on_status(ep, mask);
        }
    }

    /// Records what a delivery did and raises the matching statuses (and listener calls).
    pub(super) fn raise(
        &self,
        counters: &crate::participant::RuntimeCounters,
        available: bool,
        rejected: u32,
        lost: u64,
    ) {
        let mut mask = StatusMask::NONE;
        if available {
            mask |= StatusMask::DATA_AVAILABLE;
        }
        if lost > 0 {
            let mut s = self.statuses.lock();
            add_count(&mut s.sample_lost.total_count, lost);
            add_count(&mut s.sample_lost.total_count_change, lost);
            mask |= StatusMask::SAMPLE_LOST;
        }
        if rejected > 0 {
            counters
                .samples_rejected
                .fetch_add(rejected.into(), std::sync::atomic::Ordering::Relaxed);
            tracing::debug!(reader = ?self.guid, rejected, "history refused samples (resource limits)");
            let mut s = self.statuses.lock();
            add_count(&mut s.sample_rejected.total_count, rejected.into());
            add_count(&mut s.sample_rejected.total_count_change, rejected.into());
            mask |= StatusMask::SAMPLE_REJECTED;
        }
        if mask != StatusMask::NONE {
            self.status_changed(mask);
        }
    }

    /// A group coherent set was shown in this reader: its statuses, with no lock held.
    pub(crate) fn group_shown(&self, available: bool, rejected: u32) {
        self.raise(&self.ctx.counters, available, rejected, 0);
    }
}

/// Adds `n` events to a DDS status count (`i32` in the DDS API), saturating: one peer
/// HEARTBEAT can declare up to 2^62 samples lost, which must neither wrap nor overflow.
pub(super) fn add_count(count: &mut i32, n: u64) {
    let n = i32::try_from(n).unwrap_or(i32::MAX);
    *count = count.saturating_add(n);
}

#[cfg(test)]
mod count_tests {
    use super::add_count;

    #[test]
    fn status_counts_saturate() {
        let mut c = 5;
        add_count(&mut c, 3);
        assert_eq!(c, 8);
        // 2^62 - 3 lost samples (a HEARTBEAT with firstSN 2^62) truncated to -3 before.
        add_count(&mut c, (1u64 << 62) - 3);
        assert_eq!(c, i32::MAX);
        add_count(&mut c, 1);
        assert_eq!(c, i32::MAX);
    }
}
