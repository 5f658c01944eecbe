//! Per-instance storage: the set of registered writers and the queue of samples.

use std::collections::VecDeque;

use super::types::{
    InstanceHandle, InstanceState, KeyHash, SampleStateMask, ViewState, WriterGuid,
};

/// Index of an instance slot; `NONE` is the end of a list.
pub(super) type Slot = u32;
pub(super) const NONE: Slot = Slot::MAX;

/// The writers registered with an instance. One writer per instance is by far the common case,
/// so it is kept inline without allocation.
#[derive(Clone, Debug, Default)]
pub(super) enum WriterSet {
    #[default]
    Empty,
    One(WriterGuid),
    Many(Vec<WriterGuid>),
}

impl WriterSet {
    pub(super) fn insert(&mut self, w: WriterGuid) {
        match self {
            WriterSet::Empty => *self = WriterSet::One(w),
            WriterSet::One(a) => {
                if *a != w {
                    *self = WriterSet::Many(vec![*a, w]);
                }
            }
            WriterSet::Many(v) => {
                if !v.contains(&w) {
                    v.push(w);
                }
            }
        }
    }

    /// Removes `w`; returns whether it was present.
    pub(super) fn remove(&mut self, w: &WriterGuid) -> bool {
        match self {
            WriterSet::Empty => false,
            WriterSet::One(a) => {
                if a == w {
                    *self = WriterSet::Empty;
                    true
                } else {
                    false
                }
            }
            WriterSet::Many(v) => match v.iter().position(|x| x == w) {
                Some(i) => {
                    v.swap_remove(i);
                    true
                }
                None => false,
            },
        }
    }

    pub(super) fn contains(&self, w: &WriterGuid) -> bool {
        match self {
            WriterSet::Empty => false,
            WriterSet::One(a) => a == w,
            WriterSet::Many(v) => v.contains(w),
        }
    }

    pub(super) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub(super) fn len(&self) -> usize {
        match self {
            WriterSet::Empty => 0,
            WriterSet::One(_) => 1,
            WriterSet::Many(v) => v.len(),
        }
    }
}

/// A stored sample. `data == None` marks an invalid sample (a state-change notification).
#[derive(Clone, Debug)]
pub(super) struct Stored<T> {
    pub(super) data: Option<T>,
    pub(super) source_ts: i64,
    pub(super) reception_ts: i64,
    pub(super) writer: WriterGuid,
    pub(super) disposed_gen: u32,
    pub(super) no_writers_gen: u32,
    pub(super) read: bool,
    /// Set while a take is removing the sample.
    pub(super) taken: bool,
    /// When its LIFESPAN runs out (ns, the caller's clock); `i64::MAX`: never.
    pub(super) expires: i64,
    /// Arrival order in the whole cache (ordered access sorts by it).
    pub(super) order: u64,
}

impl<T> Stored<T> {
    pub(super) fn generation(&self) -> u32 {
        self.disposed_gen.wrapping_add(self.no_writers_gen)
    }
}

/// One instance.
///
/// Invariants: an invalid sample, if any, is the last in `samples` (`has_invalid`);
/// `valid_len` counts the others; `not_read` counts samples (valid or not) with `read == false`;
/// an alive instance has at least one registered writer; the instance is on the cache's list of
/// non-empty instances (`linked`) exactly when `samples` is not empty.
#[derive(Clone, Debug)]
pub(super) struct Instance<T> {
    pub(super) key: KeyHash,
    pub(super) handle: InstanceHandle,
    pub(super) state: InstanceState,
    pub(super) view: ViewState,
    pub(super) disposed_gen: u32,
    pub(super) no_writers_gen: u32,
    pub(super) writers: WriterSet,
    pub(super) samples: VecDeque<Stored<T>>,
    pub(super) valid_len: usize,
    pub(super) not_read: usize,
    pub(super) has_invalid: bool,
    /// Source timestamp of the newest accepted update (by-source-timestamp order).
    pub(super) last_source_ts: Option<i64>,
    pub(super) linked: bool,
    pub(super) prev: Slot,
    pub(super) next: Slot,
    /// When the instance is due for autopurge (its entry in the cache's purge queue).
    pub(super) purge_at: Option<i64>,
}

impl<T> Instance<T> {
    pub(super) fn new(key: KeyHash, handle: InstanceHandle, state: InstanceState) -> Instance<T> {
        Instance {
            key,
            handle,
            state,
            view: ViewState::New,
            disposed_gen: 0,
            no_writers_gen: 0,
            writers: WriterSet::Empty,
            samples: VecDeque::new(),
            valid_len: 0,
            not_read: 0,
            has_invalid: false,
            last_source_ts: None,
            linked: false,
            prev: NONE,
            next: NONE,
            purge_at: None,
        }
    }

    pub(super) fn generation(&self) -> u32 {
        self.disposed_gen.wrapping_add(self.no_writers_gen)
    }

    /// Samples (valid or not) already read.
    pub(super) fn read_count(&self) -> usize {
        self.samples.len() - self.not_read
    }

    /// How many samples have a sample state in `mask`.
    pub(super) fn selectable(&self, mask: SampleStateMask) -> usize {
        let mut n = 0;
        if mask.contains(SampleStateMask::READ) {
            n += self.read_count();
        }
        if mask.contains(SampleStateMask::NOT_READ) {
            n += self.not_read;
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writer_set() {
        let mut s = WriterSet::default();
        assert!(s.is_empty());
        s.insert([1; 16]);
        s.insert([1; 16]);
        assert_eq!(s.len(), 1);
        s.insert([2; 16]);
        s.insert([3; 16]);
        assert_eq!(s.len(), 3);
        assert!(!s.remove(&[4; 16]));
        assert!(s.remove(&[2; 16]));
        assert!(s.remove(&[1; 16]));
        assert!(s.remove(&[3; 16]));
        assert!(s.is_empty());
        assert!(!s.remove(&[3; 16]));
    }
}
