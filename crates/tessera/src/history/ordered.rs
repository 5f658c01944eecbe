//! PRESENTATION ordered access (TOPIC and GROUP scope): `read`/`take` of the whole cache
//! return samples in the order they were stored — the writers' order, since each writer's
//! samples arrive in sequence — across instances, instead of instance by instance.
//!
//! Every stored sample gets an arrival number. An ordered access finds the `max` lowest
//! numbers among the samples it may return, accesses the instances as usual with that
//! cut-off (so a `take` with a limit removes exactly the samples it returns), and sorts what
//! it appended by arrival. `SampleInfo::sample_rank` and the generation ranks stay per
//! instance, as DDS defines them. Per-instance accesses (`take_instance`,
//! `take_next_instance`) are unchanged: within an instance the order is already the
//! arrival order.

use super::query::Query;
use super::{History, Mode, Sample, StateMasks, NONE};
use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};
use std::sync::Arc;

/// Ordered-access state of a history.
#[derive(Clone, Debug)]
pub(super) struct Order {
    /// Ordered access is on.
    pub on: bool,
    /// The next arrival number.
    next: u64,
    /// During an ordered access: samples with higher numbers are left alone.
    pub ceiling: u64,
    /// During an ordered access: the numbers of the samples appended, in append order.
    pub emitted: Vec<u64>,
    /// GROUP access scope: the numbers come from a counter all the subscriber's readers
    /// share, so that they order samples across readers too.
    shared: Option<Arc<AtomicU64>>,
}

impl Default for Order {
    fn default() -> Self {
        Order {
            on: false,
            next: 0,
            ceiling: u64::MAX,
            emitted: Vec::new(),
            shared: None,
        }
    }
}

impl Order {
    /// The arrival number of a sample stored now.
    pub(super) fn next(&mut self) -> u64 {
        if let Some(s) = &self.shared {
            return s.fetch_add(1, AtomicOrdering::Relaxed) + 1;
        }
        self.next += 1;
        self.next
    }
}

impl<T> History<T> {
    /// Turns ordered access on or off (the reader's subscriber asks for PRESENTATION
    /// `ordered_access` with TOPIC or GROUP scope).
    pub fn set_ordered(&mut self, on: bool) {
        self.order.on = on;
    }

    /// Numbers stored samples from `counter`, shared with other histories (GROUP access
    /// scope: one order across a subscriber's readers).
    pub fn set_order_counter(&mut self, counter: Arc<AtomicU64>) {
        self.order.shared = Some(counter);
    }

    /// The arrival numbers of the samples `masks` select, lowest first.
    pub fn arrival_numbers(&self, masks: StateMasks) -> Vec<u64> {
        let mut orders = self.selected_orders(masks);
        orders.sort_unstable();
        orders
    }

    fn selected_orders(&self, masks: StateMasks) -> Vec<u64> {
        let mut orders = Vec::new();
        let mut cur = self.head;
        while cur != NONE {
            let Some(inst) = self.inst(cur) else { break };
            if masks.selects_instance(inst.view, inst.state) {
                let want_read = masks.sample.contains(super::SampleStateMask::READ);
                let want_unread = masks.sample.contains(super::SampleStateMask::NOT_READ);
                orders.extend(
                    inst.samples
                        .iter()
                        .filter(|s| if s.read { want_read } else { want_unread })
                        .map(|s| s.order),
                );
            }
            cur = inst.next;
        }
        orders
    }

    /// `read`/`take` of up to `max` samples in arrival order, across instances.
    pub(super) fn access_ordered(
        &mut self,
        out: &mut Vec<Sample<T>>,
        max: usize,
        masks: StateMasks,
        mode: Mode<T>,
        query: &mut Query<'_, T>,
    ) -> usize {
        if max == 0 {
            return 0;
        }
        // The cut-off: the max-th lowest arrival number among the samples the masks select
        // (a query may then pass fewer).
        let mut orders = self.selected_orders(masks);
        if orders.len() > max {
            let (_, &mut nth, _) = orders.select_nth_unstable(max - 1);
            self.order.ceiling = nth;
        }
        let start = out.len();
        self.order.emitted.clear();
        let n = self.access_by_instance(out, max, masks, mode, query);
        self.order.ceiling = u64::MAX;
        // Sort the appended samples by arrival (a permutation applied in place).
        let emitted = std::mem::take(&mut self.order.emitted);
        let mut tail: Vec<(u64, Sample<T>)> =
            emitted.iter().copied().zip(out.drain(start..)).collect();
        tail.sort_by_key(|(o, _)| *o);
        out.extend(tail.into_iter().map(|(_, s)| s));
        self.order.emitted = emitted;
        n
    }
}

#[cfg(test)]
mod tests {
    use super::super::{HistoryConfig, HistoryKind, KeyHash, StateMasks};
    use super::*;

    fn key(k: u8) -> KeyHash {
        [k; 16]
    }

    fn filled(ordered: bool) -> History<u32> {
        let mut h: History<u32> = History::new(HistoryConfig {
            history: HistoryKind::KeepAll,
            ..HistoryConfig::default()
        });
        h.set_ordered(ordered);
        // Written round-robin over three instances: value = write order.
        for v in 0..9u32 {
            h.insert(key((v % 3) as u8), [1; 16], v, v as i64, v as i64);
        }
        h
    }

    fn values(s: &[Sample<u32>]) -> Vec<u32> {
        s.iter().filter_map(|s| s.data).collect()
    }

    #[test]
    fn ordered_access_returns_samples_in_arrival_order_across_instances() {
        let mut h = filled(false);
        assert_eq!(
            values(&h.read(usize::MAX, StateMasks::ANY)),
            [0, 3, 6, 1, 4, 7, 2, 5, 8]
        );
        let mut h2 = filled(true);
        assert_eq!(
            values(&h2.read(usize::MAX, StateMasks::ANY)),
            [0, 1, 2, 3, 4, 5, 6, 7, 8]
        );
        // With a limit: the oldest samples, whichever instances they belong to; a take
        // removes exactly those.
        assert_eq!(values(&h2.take(4, StateMasks::ANY)), [0, 1, 2, 3]);
        assert_eq!(
            values(&h2.take(usize::MAX, StateMasks::ANY)),
            [4, 5, 6, 7, 8]
        );
        assert!(h2.is_empty());
        // Unread only, after a partial read.
        let mut h3 = filled(true);
        assert_eq!(values(&h3.read(2, StateMasks::ANY)), [0, 1]);
        assert_eq!(values(&h3.read(3, StateMasks::NOT_READ)), [2, 3, 4]);
        h.set_ordered(true);
        assert_eq!(
            values(&h.take(usize::MAX, StateMasks::ANY)),
            [0, 1, 2, 3, 4, 5, 6, 7, 8]
        );
    }
}
