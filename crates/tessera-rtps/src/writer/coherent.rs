//! PRESENTATION coherent sets on the writer side (RTPS 2.3 §8.7.5, §9.6.4.1).
//!
//! Between `begin_coherent_set` and `end_coherent_set` every sample carries PID_COHERENT_SET
//! with the sequence number of the set's first sample. The set is ended explicitly with a
//! DATA that has neither data nor key (no D or K flag) and PID_COHERENT_SET set to
//! SEQUENCENUMBER_UNKNOWN ({-1, 0}): a reader learns that the set is complete without waiting
//! for the writer's next sample, whose different (or absent) set number would also end it.
//! The marker has a sequence number of its own, so reliability repairs it like any sample and
//! a reader knows it has every sample of the set once it has the marker in order.
//!
//! The marker is filed in the history under a reserved key hash, never sent: a KEEP_LAST
//! history then replaces old markers with new ones instead of a sample of the set.

use std::sync::Arc;
use std::time::Instant;

use super::{WriteError, WriterCore};
use crate::types::{SequenceNumber, Timestamp};

/// PID_COHERENT_SET value of the marker that ends a set: SEQUENCENUMBER_UNKNOWN.
pub const COHERENT_SET_END: SequenceNumber = -(1i64 << 32);

/// The history key of end-of-set markers (a key hash no instance has: key hashes of real
/// instances are an MD5 or a zero-padded key, and this one is never sent).
const MARKER_KEY: [u8; 16] = [0xff; 16];

/// The writer's open coherent set.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CoherentState {
    /// A set is open (between begin and end).
    open: bool,
    /// The number of its first sample, once one was written.
    start: Option<SequenceNumber>,
}

impl CoherentState {
    /// The PID_COHERENT_SET value of a sample numbered `seq` written now.
    pub(super) fn tag(&mut self, seq: SequenceNumber) -> Option<SequenceNumber> {
        if !self.open {
            return None;
        }
        Some(*self.start.get_or_insert(seq))
    }
}

impl WriterCore {
    /// Opens a coherent set: samples written from now on belong to it. Opening an open set
    /// changes nothing.
    pub fn begin_coherent_set(&mut self) {
        self.sh.coherent.open = true;
    }

    /// The open set's number (its first sample's), if a set is open and has samples.
    pub fn coherent_set(&self) -> Option<SequenceNumber> {
        self.sh.coherent.start.filter(|_| self.sh.coherent.open)
    }

    /// Closes the open set. If it has samples, writes the end-of-set marker (with
    /// `source_timestamp`) and returns its sequence number; an empty set sends nothing.
    pub fn end_coherent_set(
        &mut self,
        source_timestamp: Option<Timestamp>,
        now: Instant,
    ) -> Result<Option<SequenceNumber>, WriteError> {
        let state = std::mem::take(&mut self.sh.coherent);
        if !state.open || state.start.is_none() {
            return Ok(None);
        }
        match self.write_tagged(
            Arc::new(Vec::new()),
            Some(MARKER_KEY),
            0,
            false,
            source_timestamp,
            None,
            Some(COHERENT_SET_END),
            now,
        ) {
            Ok(seq) => Ok(Some(seq)),
            Err(e) => {
                // Still open: the caller may retry once history space frees up.
                self.sh.coherent = state;
                Err(e)
            }
        }
    }
}
