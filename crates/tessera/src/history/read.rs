//! The read side of [`History`] (samples copied out, marked READ).

use super::*;

impl<T: Clone> History<T> {
    /// Reads up to `max` samples matching `masks` (DDS `read`), marking them READ.
    pub fn read(&mut self, max: usize, masks: StateMasks) -> Vec<Sample<T>> {
        let mut out = Vec::new();
        self.access_all(&mut out, max, masks, Mode::Read(T::clone));
        out
    }

    /// Reads up to `max` samples matching `masks` from the instances `selection` names,
    /// appending them to `out`; returns how many.
    pub fn read_into(
        &mut self,
        out: &mut Vec<Sample<T>>,
        selection: Selection,
        max: usize,
        masks: StateMasks,
    ) -> Result<usize, HistoryError> {
        self.access(out, selection, max, masks, Mode::Read(T::clone))
    }

    /// Reads up to `max` samples of one instance (DDS `read_instance`).
    pub fn read_instance(
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
            Mode::Read(T::clone),
        )?;
        Ok(out)
    }

    /// Reads up to `max` samples of the next instance after `prev` in handle order that has
    /// matching samples (DDS `read_next_instance`; start with [`InstanceHandle::NIL`]).
    pub fn read_next_instance(
        &mut self,
        prev: InstanceHandle,
        max: usize,
        masks: StateMasks,
    ) -> Vec<Sample<T>> {
        let mut out = Vec::new();
        self.access_next(&mut out, prev, max, masks, Mode::Read(T::clone), &mut None);
        out
    }
}
