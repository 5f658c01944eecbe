//! Take and the shared access path of read and take: state-mask selection, ordered or
//! per-instance traversal, and the `SampleInfo` of each returned sample.

use std::ops::Bound;

use super::instance::Stored;
use super::query::Query;
use super::*;

impl<T> History<T> {
    /// Takes up to `max` samples of any state, appending them to `out`: the fast path of the
    /// common "take everything" loop. Allocates nothing when `out` has room. Returns how many
    /// samples were appended.
    pub fn take_into(&mut self, out: &mut Vec<Sample<T>>, max: usize) -> usize {
        self.access_all(out, max, StateMasks::ANY, Mode::Take)
    }

    /// Takes up to `max` samples matching `masks` from the instances `selection` names,
    /// appending them to `out`; returns how many.
    pub fn take_selected_into(
        &mut self,
        out: &mut Vec<Sample<T>>,
        selection: Selection,
        max: usize,
        masks: StateMasks,
    ) -> Result<usize, HistoryError> {
        self.access(out, selection, max, masks, Mode::Take)
    }

    /// Takes up to `max` samples matching `masks` (DDS `take`).
    pub fn take(&mut self, max: usize, masks: StateMasks) -> Vec<Sample<T>> {
        let mut out = Vec::new();
        self.access_all(&mut out, max, masks, Mode::Take);
        out
    }

    /// Takes up to `max` samples of one instance (DDS `take_instance`).
    pub fn take_instance(
        &mut self,
        handle: InstanceHandle,
        max: usize,
        masks: StateMasks,
    ) -> Result<Vec<Sample<T>>, HistoryError> {
        let mut out = Vec::new();
        self.access(
            &mut out,
            Selection::Instance(handle),
            max,
            masks,
            Mode::Take,
        )?;
        Ok(out)
    }

    /// Takes up to `max` samples of the next instance after `prev` in handle order that has
    /// matching samples (DDS `take_next_instance`; start with [`InstanceHandle::NIL`]).
    pub fn take_next_instance(
        &mut self,
        prev: InstanceHandle,
        max: usize,
        masks: StateMasks,
    ) -> Vec<Sample<T>> {
        let mut out = Vec::new();
        self.access_next(&mut out, prev, max, masks, Mode::Take, &mut None);
        out
    }

    pub(super) fn access(
        &mut self,
        out: &mut Vec<Sample<T>>,
        selection: Selection,
        max: usize,
        masks: StateMasks,
        mode: Mode<T>,
    ) -> Result<usize, HistoryError> {
        self.access_query(out, selection, max, masks, mode, &mut None)
    }

    /// [`History::access`] keeping only the samples with data that pass `query` (a query
    /// condition's expression) when there is one.
    pub(super) fn access_query(
        &mut self,
        out: &mut Vec<Sample<T>>,
        selection: Selection,
        max: usize,
        masks: StateMasks,
        mode: Mode<T>,
        query: &mut Query<'_, T>,
    ) -> Result<usize, HistoryError> {
        match selection {
            Selection::All => Ok(self.access_all_query(out, max, masks, mode, query)),
            Selection::Instance(h) => match self.by_handle.get(&h) {
                Some(&slot) => Ok(self.access_instance(slot, out, max, masks, mode, query)),
                None => Err(HistoryError::UnknownInstance(h)),
            },
            Selection::NextInstance(prev) => {
                Ok(self.access_next(out, prev, max, masks, mode, query))
            }
        }
    }

    pub(super) fn access_all(
        &mut self,
        out: &mut Vec<Sample<T>>,
        max: usize,
        masks: StateMasks,
        mode: Mode<T>,
    ) -> usize {
        self.access_all_query(out, max, masks, mode, &mut None)
    }

    fn access_all_query(
        &mut self,
        out: &mut Vec<Sample<T>>,
        max: usize,
        masks: StateMasks,
        mode: Mode<T>,
        query: &mut Query<'_, T>,
    ) -> usize {
        if self.order.on {
            return self.access_ordered(out, max, masks, mode, query);
        }
        self.access_by_instance(out, max, masks, mode, query)
    }

    /// Every instance in turn, up to `max` samples.
    pub(super) fn access_by_instance(
        &mut self,
        out: &mut Vec<Sample<T>>,
        max: usize,
        masks: StateMasks,
        mode: Mode<T>,
        query: &mut Query<'_, T>,
    ) -> usize {
        let mut n = 0;
        let mut cur = self.head;
        while cur != NONE && n < max {
            let next = self.inst(cur).map_or(NONE, |i| i.next);
            n += self.access_instance(cur, out, max - n, masks, mode, query);
            cur = next;
        }
        n
    }

    pub(super) fn access_next(
        &mut self,
        out: &mut Vec<Sample<T>>,
        prev: InstanceHandle,
        max: usize,
        masks: StateMasks,
        mode: Mode<T>,
        query: &mut Query<'_, T>,
    ) -> usize {
        if max == 0 {
            return 0;
        }
        let mut from = prev;
        loop {
            let found = self
                .by_handle
                .range((Bound::Excluded(from), Bound::Unbounded))
                .map(|(&h, &s)| (h, s))
                .find(|&(_, s)| {
                    self.inst(s).is_some_and(|i| {
                        i.selectable(masks.sample) > 0 && masks.selects_instance(i.view, i.state)
                    })
                });
            let Some((handle, slot)) = found else {
                return 0;
            };
            // With a query the instance may hold no passing sample: then the next one.
            let n = self.access_instance(slot, out, max, masks, mode, query);
            if n > 0 || query.is_none() {
                return n;
            }
            from = handle;
        }
    }

    /// Reads or takes up to `max` matching samples of one instance; the heart of every access.
    fn access_instance(
        &mut self,
        slot: Slot,
        out: &mut Vec<Sample<T>>,
        max: usize,
        masks: StateMasks,
        mode: Mode<T>,
        query: &mut Query<'_, T>,
    ) -> usize {
        // Ordered access with a limit: only samples up to the cut-off (see `ordered`).
        let ceiling = self.order.ceiling;
        let Some(inst) = slot_mut(&mut self.slots, slot) else {
            return 0;
        };
        if !masks.selects_instance(inst.view, inst.state) {
            return 0;
        }
        let want_read = masks.sample.contains(SampleStateMask::READ);
        let want_unread = masks.sample.contains(SampleStateMask::NOT_READ);
        // A query is evaluated once per sample (it may decode it); invalid samples never pass.
        let passed: Option<Vec<bool>> = query.as_mut().map(|q| {
            inst.samples
                .iter()
                .map(|s| s.data.as_ref().is_some_and(&mut *q))
                .collect()
        });
        let selected = |idx: usize, s: &Stored<T>| {
            (if s.read { want_read } else { want_unread })
                && passed.as_ref().is_none_or(|p| p[idx])
                && s.order <= ceiling
        };
        let n = match &passed {
            None if ceiling == u64::MAX => inst.selectable(masks.sample),
            None => inst
                .samples
                .iter()
                .enumerate()
                .filter(|(i, s)| selected(*i, s))
                .count(),
            Some(_) => inst
                .samples
                .iter()
                .enumerate()
                .filter(|(i, s)| selected(*i, s))
                .count(),
        }
        .min(max);
        if n == 0 {
            return 0;
        }
        // The most recent sample of the instance in the returned collection is the n-th selected.
        let mrsic_gen = if want_read && want_unread && passed.is_none() && ceiling == u64::MAX {
            inst.samples.get(n - 1).map_or(0, |s| s.generation())
        } else {
            inst.samples
                .iter()
                .enumerate()
                .filter(|(i, s)| selected(*i, s))
                .nth(n - 1)
                .map_or(0, |(_, s)| s.generation())
        };
        let inst_gen = inst.generation();
        let (view, state, handle) = (inst.view, inst.state, inst.handle);
        let take = matches!(mode, Mode::Take);

        let mut emitted = 0usize;
        let mut valid_taken = 0usize;
        let mut newly_read = 0usize;
        let mut last_index = 0usize;
        for (idx, s) in inst.samples.iter_mut().enumerate() {
            if emitted == n {
                break;
            }
            if !selected(idx, s) {
                continue;
            }
            let valid = s.data.is_some();
            let generation = s.generation();
            let info = SampleInfo {
                sample_state: if s.read {
                    SampleState::Read
                } else {
                    SampleState::NotRead
                },
                view_state: view,
                instance_state: state,
                source_timestamp: s.source_ts,
                reception_timestamp: s.reception_ts,
                instance_handle: handle,
                publication_handle: s.writer,
                disposed_generation_count: s.disposed_gen,
                no_writers_generation_count: s.no_writers_gen,
                sample_rank: (n - 1 - emitted) as u32,
                generation_rank: mrsic_gen.wrapping_sub(generation),
                absolute_generation_rank: inst_gen.wrapping_sub(generation),
                valid_data: valid,
            };
            let data = match mode {
                Mode::Read(copy) => s.data.as_ref().map(copy),
                Mode::Take => s.data.take(),
            };
            out.push(Sample { data, info });
            if self.order.on {
                self.order.emitted.push(s.order);
            }
            if !s.read {
                s.read = true;
                newly_read += 1;
            }
            if take {
                s.taken = true;
                if valid {
                    valid_taken += 1;
                }
            }
            emitted += 1;
            last_index = idx;
        }
        inst.not_read -= newly_read;
        self.not_read_total -= newly_read;
        inst.view = ViewState::NotNew;
        if take {
            if last_index + 1 == n {
                // The taken samples are a prefix (always so with an ANY sample mask).
                inst.samples.drain(..n);
            } else {
                inst.samples.retain(|s| !s.taken);
            }
            if n - valid_taken > 0 {
                inst.has_invalid = false;
            }
            inst.valid_len -= valid_taken;
            self.valid_total -= valid_taken;
            self.total -= n;
            self.unlink_if_empty(slot);
            self.purge_if_dead(slot);
        }
        emitted
    }
}
