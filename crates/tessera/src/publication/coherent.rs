//! PRESENTATION on the writer side: a writer's part of its publisher's coherent set.
//!
//! `Publisher::begin_coherent_changes` opens a set in each of its writers' cores; from then on
//! every sample carries PID_COHERENT_SET (the core tags it). `end_coherent_changes` closes it:
//! the core writes the end-of-set marker (a DATA without payload, see
//! `tessera_rtps::writer::coherent`), which goes to remote readers like any sample and to
//! local readers here, so both kinds learn that the set is complete at once.

use super::local::{notify_local, LocalSample};
use super::{far_deadline, now_nanos, WriterEndpoint};
use crate::endpoint::LocalOutcome;
use crate::error::{Error, Result};
use crate::outbox;
use std::time::Instant;
use tessera_rtps::types::Timestamp;
use tessera_rtps::writer::{GroupTag, WriteError, COHERENT_SET_END};

impl WriterEndpoint {
    /// Opens a coherent set: this writer's samples belong to it until [`Self::end_coherent`].
    pub(crate) fn begin_coherent(&self) {
        self.lock_core().begin_coherent_set();
    }

    /// Closes the open coherent set and sends its end marker (nothing for an empty set). A
    /// KEEP_ALL writer whose history is full waits for room like `write`.
    /// `group`: the group set's values for the marker (GROUP access scope).
    pub(crate) fn end_coherent(&self, group: Option<GroupTag>) -> Result<()> {
        if self.ctx.is_closed() {
            return Err(Error::AlreadyDeleted);
        }
        let p = &*self.ctx;
        let mut now = Instant::now();
        let deadline = far_deadline(now, self.max_blocking);
        let ts = Timestamp::from_nanos(now_nanos());
        let may_wait = !crate::transport::recv::on_receive_thread();
        let mut core = self.lock_core();
        let seq = loop {
            match core.end_coherent_set(Some(ts), group, now) {
                Ok(Some(seq)) => {
                    // Readers that do not assemble sets have no use for the marker (a payload-
                    // less DATA that some vendors deliver as a sample): a GAP instead, to those
                    // the writer serves alone (a multicast group gets it; Tessera readers
                    // ignore it).
                    let nc = self.without_coherent_access.lock();
                    if !nc.is_empty() {
                        core.filter_out(seq, nc.as_slice().into());
                    }
                    break seq;
                }
                Ok(None) => return Ok(()),
                Err(WriteError::HistoryFull) if may_wait && now < deadline => {
                    now = self.wait_space(&mut core, now, deadline);
                }
                Err(WriteError::HistoryFull) if may_wait => return Err(Error::Timeout),
                Err(e) => return Err(Error::OutOfResources(e.to_string())),
            }
        };
        let locals = self.local_readers.read().clone();
        let mut outcomes = vec![LocalOutcome::default(); locals.len()];
        if !locals.is_empty() {
            self.deliver_local(
                &locals,
                &mut outcomes,
                LocalSample {
                    seq,
                    payload: &[],
                    shared: None,
                    key_hash: None,
                    status: 0,
                    key_only: false,
                    timestamp: Some(ts),
                    coherent_set: Some(COHERENT_SET_END),
                    group,
                },
            );
        }
        // The marker completes the set: send it, and whatever a batch still holds, now.
        self.send_all(p, &mut core, now);
        let next = core.poll_timeout();
        drop(core);
        p.kick.ensure_by(next);
        notify_local(p, &locals, &outcomes);
        outbox::wait_sent(p, || deadline);
        Ok(())
    }
}
