//! Reads and takes that keep only samples whose data passes a predicate: what a query
//! condition's expression needs ([`crate::QueryCondition`]). Invalid samples (dispose and
//! unregister notices) carry no data and never pass.

use super::*;

/// A predicate over sample data, or none (every sample the state masks select).
pub(super) type Query<'q, T> = Option<&'q mut dyn FnMut(&T) -> bool>;

impl<T> History<T> {
    /// Whether some sample selected by `masks` has data that passes `query` (the trigger of a
    /// query condition). Visits the non-empty instances and their samples.
    pub fn has_matching_query(&self, masks: StateMasks, query: &mut dyn FnMut(&T) -> bool) -> bool {
        let want_read = masks.sample.contains(SampleStateMask::READ);
        let want_unread = masks.sample.contains(SampleStateMask::NOT_READ);
        let mut cur = self.head;
        while let Some(i) = self.inst(cur) {
            if masks.selects_instance(i.view, i.state)
                && i.samples.iter().any(|s| {
                    (if s.read { want_read } else { want_unread })
                        && s.data.as_ref().is_some_and(&mut *query)
                })
            {
                return true;
            }
            cur = i.next;
        }
        false
    }

    /// Takes up to `max` samples selected by `masks` whose data passes `query`, from the
    /// instances `selection` names, appending them to `out`; returns how many.
    pub fn take_query_into(
        &mut self,
        out: &mut Vec<Sample<T>>,
        selection: Selection,
        max: usize,
        masks: StateMasks,
        query: &mut dyn FnMut(&T) -> bool,
    ) -> Result<usize, HistoryError> {
        self.access_query(out, selection, max, masks, Mode::Take, &mut Some(query))
    }
}

impl<T: Clone> History<T> {
    /// Reads (marking READ) up to `max` samples selected by `masks` whose data passes
    /// `query`, from the instances `selection` names, appending them to `out`; returns how
    /// many.
    pub fn read_query_into(
        &mut self,
        out: &mut Vec<Sample<T>>,
        selection: Selection,
        max: usize,
        masks: StateMasks,
        query: &mut dyn FnMut(&T) -> bool,
    ) -> Result<usize, HistoryError> {
        self.access_query(
            out,
            selection,
            max,
            masks,
            Mode::Read(T::clone),
            &mut Some(query),
        )
    }
}
