//! Holding writers back and letting them go again: acknowledgment holds, and samples the
//! history refused asked for again (or redelivered by local writers) once room is made.

use super::ReaderEndpoint;
use crate::endpoint::LocalHolder;
use crate::outbox;
use crate::runtime::RuntimeContext;
use std::sync::atomic::Ordering;
use std::sync::Weak;
use std::time::Instant;
use tessera_rtps::types::Guid;

impl ReaderEndpoint {
    /// Moves the acknowledgment hold on `writer` to what `hold` says, computed under the
    /// protocol core's lock (which the sink's `offer` also runs under, so a sample held
    /// meanwhile is never left out), and acknowledges what it releases at once.
    pub(crate) fn set_acknowledgment_hold(
        &self,
        writer: Guid,
        hold: impl FnOnce() -> Option<tessera_rtps::types::SequenceNumber>,
    ) {
        let now = Instant::now();
        let mut core = self.core.lock();
        core.set_acknowledgment_hold(writer, hold(), now);
        outbox::flush_reader(&self.ctx, &mut core, now);
        self.ctx.kick.ensure_by(core.poll_timeout());
    }

    /// After a `take` or an autopurge freed `freed` samples or instances: if the history had
    /// refused samples, the core asks their writers to resend them now rather than at its
    /// next heartbeat answer. Called with neither the core nor the history lock held.
    pub(crate) fn resume(&self, freed: usize) {
        if freed == 0 {
            return;
        }
        self.resume_local(&self.ctx);
        if !self.refused.swap(false, Ordering::Relaxed) {
            return;
        }
        let now = Instant::now();
        let mut core = self.core.lock();
        core.resume(now);
        outbox::flush_reader(&self.ctx, &mut core, now);
        self.ctx.kick.ensure_by(core.poll_timeout());
    }

    /// After room was made: the local writers that keep samples this history refused hand
    /// them over again. Called with no lock held. A redelivery raises DATA_AVAILABLE, whose
    /// listener may `take` and so come back here: such nested calls only queue their work for
    /// the outermost one on this thread, which keeps the stack flat however long the chain.
    pub(super) fn resume_local(&self, ctx: &RuntimeContext) {
        if !self.held.swap(false, Ordering::AcqRel) {
            return;
        }
        let holders = std::mem::take(&mut *self.holders.lock());
        let nested = REDELIVERIES.with(|p| {
            let mut p = p.borrow_mut();
            let nested = p.is_some();
            p.get_or_insert_with(Vec::new).push((self.guid, holders));
            nested
        });
        if nested {
            return;
        }
        // Clears the queue however this ends, so that a panicking listener does not leave
        // later calls on this thread queueing work nobody runs.
        struct Draining;
        impl Drop for Draining {
            fn drop(&mut self) {
                REDELIVERIES.with(|p| *p.borrow_mut() = None);
            }
        }
        let _draining = Draining;
        while let Some((reader, holders)) =
            REDELIVERIES.with(|p| p.borrow_mut().as_mut().and_then(Vec::pop))
        {
            for h in holders.iter().filter_map(Weak::upgrade) {
                h.redeliver(ctx, reader);
            }
        }
    }

    /// Records a local writer that keeps a sample the history refused; runs under the history
    /// lock.
    pub(super) fn hold(&self, holder: &Weak<dyn LocalHolder>) {
        let mut hs = self.holders.lock();
        if !hs.iter().any(|h| Weak::ptr_eq(h, holder)) {
            // Deleted writers leave: the list stays as long as the live writers at most.
            hs.retain(|h| h.strong_count() > 0);
            hs.push(holder.clone());
        }
        self.held.store(true, Ordering::Release);
    }
}

/// A reader and the local writers to call back for it.
type Redelivery = (Guid, Vec<Weak<dyn LocalHolder>>);

thread_local! {
    /// The redeliveries this thread still has to run (`Some` while it runs them): see
    /// [`ReaderEndpoint::resume_local`].
    static REDELIVERIES: std::cell::RefCell<Option<Vec<Redelivery>>> =
        const { std::cell::RefCell::new(None) };
}
