//! Writer-side content filtering: which samples some readers' filters drop
//! ([`WriterCore::filter_out`]); the emitters send those readers a GAP for them.

use std::sync::Arc;

use super::WriterCore;
use crate::types::{Guid, SequenceNumber};

impl WriterCore {
    /// Writer-side content filtering: sample `seq` (just written, before the next
    /// [`WriterCore::poll_transmit_into`]) is not for `readers`, whose filters drop it. Each
    /// such reader that the writer serves alone gets a GAP instead (best-effort ones too, or
    /// they would count the number as a sample lost); a reader reached through a multicast
    /// group still gets the DATA (readers filter for themselves anyway). Entries go when their
    /// sample leaves the history.
    pub fn filter_out(&mut self, seq: SequenceNumber, readers: Arc<[Guid]>) {
        let sh = &mut self.sh;
        match sh.history.first_seq() {
            Some(f)
                if sh
                    .filtered_out
                    .first_key_value()
                    .is_some_and(|(k, _)| *k < f) =>
            {
                sh.filtered_out = sh.filtered_out.split_off(&f);
            }
            None => sh.filtered_out.clear(),
            _ => {}
        }
        if !readers.is_empty() && sh.history.get(seq).is_some() {
            sh.filtered_out.insert(seq, readers);
        }
        // KEEP_LAST replaces samples in the middle of the history (an old instance may keep
        // the first number low): sweep out the entries of samples gone once they are as many
        // as those held, so the map stays within twice the history (amortized O(1)).
        if sh.filtered_out.len() > 2 * sh.history.len() + 64 {
            let history = &sh.history;
            sh.filtered_out.retain(|s, _| history.get(*s).is_some());
        }
    }
}
