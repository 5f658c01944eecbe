//! The writer core's lock, and the ACKNACKs that arrive while someone holds it.
//!
//! Why: a saturating writer holds its core lock through each send, and an ACKNACK arriving
//! meanwhile on a receive thread used to spin and yield for the lock (6.5 % of a 16 B stream's
//! publisher time went to `sched_yield`). Now an ACKNACK that finds the lock taken is left in a
//! short inbox and the receive thread moves on; the inbox is applied by the next thread to take
//! the lock, or by the holder as it unlocks.
//!
//! Why nothing is left behind:
//! - every [`CoreGuard`] applies the inbox when it is created;
//! - whoever leaves an ACKNACK raises `pending`, and whoever unlocks looks at `pending`, each
//!   after a `SeqCst` fence: at least one of the two sees the other and takes the lock (with
//!   `try_lock`; a failure means a newer holder, who will look again as it unlocks);
//! - a thread about to sleep on the writer's condition variable (which unlocks without this
//!   module's help) registers in `waiting` before its last look at the inbox, and a receive
//!   thread that sees a waiter takes the lock itself instead of leaving its ACKNACK behind;
//! - while a writer's batches fill, ACKNACKs are left even when the lock is free (a receive
//!   thread taking it would make the saturating writer sleep on it: 770–1,080 times a second at
//!   16 B over shared memory, 400 with this): the writer locks again within the batch, or the
//!   event thread, armed for the batch, when it is due. The receive thread checks again after
//!   leaving it (the same fence pairing as `pending`) and applies the inbox if the batch closed.
//!
//! What applied ACKNACKs make due (heartbeats, repairs) is sent by the sites that send anyway
//! (the write path, the receive and event threads) before they unlock; elsewhere a guard's drop
//! asks the event thread for a pass instead of sending under whatever locks its caller holds.

use super::WriterEndpoint;
use crate::outbox;
use parking_lot::{Mutex, MutexGuard};
use std::mem::ManuallyDrop;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{fence, AtomicBool, Ordering};
use std::time::Instant;
use tessera_rtps::types::GuidPrefix;
use tessera_rtps::wire::AckNack;
use tessera_rtps::writer::WriterCore;

/// ACKNACKs kept for the lock's holder at most; a receive thread that finds the inbox full
/// waits for the lock as before (each reader's newest ACKNACK supersedes its older ones, so a
/// full inbox means many readers, not lost information).
const INBOX_BOUND: usize = 64;

/// One ACKNACK waiting for the lock.
struct LateAck {
    from: GuidPrefix,
    acknack: AckNack,
    at: Instant,
}

/// A [`WriterCore`] behind its lock, with the inbox of ACKNACKs that found it taken. The core is
/// reachable only through [`CoreGuard`], so no path can forget the inbox.
pub(super) struct CoreLock {
    core: Mutex<WriterCore>,
    inbox: Mutex<Vec<LateAck>>,
    pending: AtomicBool,
}

impl CoreLock {
    pub(super) fn new(core: WriterCore) -> Self {
        CoreLock {
            core: Mutex::new(core),
            inbox: Mutex::new(Vec::new()),
            pending: AtomicBool::new(false),
        }
    }

    /// Leaves an ACKNACK for the lock's holder; false (nothing kept) when the inbox is full.
    fn leave(&self, from: GuidPrefix, acknack: &AckNack, at: Instant) -> bool {
        let mut inbox = self.inbox.lock();
        if inbox.len() >= INBOX_BOUND {
            return false;
        }
        inbox.push(LateAck {
            from,
            acknack: *acknack,
            at,
        });
        drop(inbox);
        self.pending.store(true, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        true
    }

    /// Applies the inbox to `core` (whose lock the caller holds); true if it held anything.
    fn apply(&self, core: &mut WriterCore) -> bool {
        if !self.pending.load(Ordering::Relaxed) || !self.pending.swap(false, Ordering::SeqCst) {
            return false;
        }
        let mut inbox = self.inbox.lock();
        let any = !inbox.is_empty();
        for late in inbox.drain(..) {
            apply_acknack(core, late.from, &late.acknack, late.at);
        }
        any
    }

    /// After an unlock: true if an ACKNACK may have been left meanwhile.
    fn left_meanwhile(&self) -> bool {
        fence(Ordering::SeqCst);
        self.pending.load(Ordering::SeqCst)
    }
}

/// Applies one ACKNACK to the core, noting when the loss watch changed the datagram size.
pub(super) fn apply_acknack(core: &mut WriterCore, from: GuidPrefix, an: &AckNack, at: Instant) {
    let size_before = core.max_message_size();
    core.on_acknack(from, an, at);
    let size_after = core.max_message_size();
    if size_after != size_before {
        tracing::info!(
            writer = ?core.guid(),
            from = size_before,
            to = size_after,
            "datagram size changed by the loss watch (readers asking for repairs)"
        );
    }
}

/// The locked writer core (dereferences to it). Created with the inbox applied; dropping it
/// unlocks, wakes waiting writers when ACKNACKs were applied, and applies what was left
/// meanwhile.
pub(crate) struct CoreGuard<'a> {
    ep: &'a WriterEndpoint,
    core: ManuallyDrop<MutexGuard<'a, WriterCore>>,
    /// ACKNACKs from the inbox were applied under this guard.
    applied: bool,
    /// What they made due was not sent yet (no [`Self::sent`] since).
    unsent: bool,
    /// The holder may send: ACKNACKs left while it held the lock are applied and what they
    /// make due is sent as it unlocks (else the event thread sends it).
    may_send: bool,
}

impl WriterEndpoint {
    /// Locks the writer core, applying the ACKNACKs that found it taken.
    pub(crate) fn lock_core(&self) -> CoreGuard<'_> {
        CoreGuard::new(self, self.core.core.lock())
    }

    /// The receive thread's way to a core for an ACKNACK: `None` if it was left for the lock's
    /// holder (who applies it), else the locked core.
    pub(super) fn lock_core_or_leave(
        &self,
        from: GuidPrefix,
        acknack: &AckNack,
        at: Instant,
    ) -> Option<CoreGuard<'_>> {
        if self.leaves_acknacks_for_its_writer() {
            // The writing thread takes the lock again within the batch (or the event thread
            // when the batch is due) and applies the inbox then: taking the lock here would
            // make a saturating writer sleep on it.
            if !self.core.leave(from, acknack, at) {
                return Some(self.lock_core());
            }
            // Re-checked after `leave`'s fence: a batch sent (or a writer about to sleep)
            // meanwhile would not look at the inbox again, so apply it here.
            if !self.leaves_acknacks_for_its_writer() {
                self.apply_left(true);
            }
            return None;
        }
        if let Some(g) = self.core.core.try_lock() {
            return Some(CoreGuard::new(self, g));
        }
        if !self.core.leave(from, acknack, at) {
            return Some(self.lock_core());
        }
        if self.waiting.load(Ordering::SeqCst) > 0 {
            // A writer is (about to be) asleep on the condition variable, perhaps waiting for
            // this very ACKNACK, and will not look at the inbox: apply it here.
            self.lock_core().send_and_unlock();
        } else {
            self.apply_left(true);
        }
        None
    }

    /// ACKNACKs waiting in the inbox.
    #[cfg(test)]
    pub(crate) fn left_acknacks(&self) -> usize {
        self.core.inbox.lock().len()
    }

    /// True while a batch is filling and the event thread is armed to send it, and no writer
    /// waits on the condition variable: someone then takes the core lock soon (the writing
    /// thread, or the event thread when the batch is due) and applies the inbox.
    fn leaves_acknacks_for_its_writer(&self) -> bool {
        self.batch_open_and_armed() && self.waiting.load(Ordering::SeqCst) == 0
    }

    /// Applies ACKNACKs left while the lock was held, for as long as the lock is free and
    /// something was left; sends what they made due if `may_send`, else leaves that to the
    /// event thread.
    fn apply_left(&self, may_send: bool) {
        while self.core.left_meanwhile() {
            let Some(mut core) = self.core.core.try_lock() else {
                // Held again: its holder looks at the inbox when it unlocks.
                return;
            };
            if !self.core.apply(&mut core) {
                continue;
            }
            if may_send {
                outbox::flush_writer(&self.ctx, &mut core, Instant::now(), self.tos());
            }
            let next = core.poll_timeout();
            drop(core);
            self.wake_waiters();
            self.ctx.kick.ensure_by(next);
        }
    }
}

impl<'a> CoreGuard<'a> {
    fn new(ep: &'a WriterEndpoint, mut core: MutexGuard<'a, WriterCore>) -> Self {
        let applied = ep.core.apply(&mut core);
        CoreGuard {
            ep,
            core: ManuallyDrop::new(core),
            applied,
            unsent: applied,
            may_send: false,
        }
    }

    /// Tells the guard that its holder sent everything the core had due.
    pub(super) fn sent(&mut self) {
        self.unsent = false;
    }

    /// Sends what the core has due.
    fn send(&mut self) {
        let ep = self.ep;
        outbox::flush_writer(&ep.ctx, &mut self.core, Instant::now(), ep.tos());
        self.unsent = false;
    }

    /// Unlocks after sending what ACKNACKs applied under it made due, and applies and sends
    /// what is left meanwhile: for the callers that hold no other lock (an application thread
    /// in `write`, the receive and event threads).
    pub(super) fn send_and_unlock(mut self) {
        if self.unsent {
            self.send();
        }
        self.may_send = true;
    }

    /// Sleeps on the writer's condition variable (the lock released) until notified or
    /// `until`; returns at once, without sleeping, if ACKNACKs arrived in the inbox, which it
    /// applies (the caller re-checks its condition either way).
    pub(super) fn wait_until(&mut self, until: Instant) {
        let ep = self.ep;
        ep.waiting.fetch_add(1, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        if ep.core.apply(&mut self.core) {
            // What they made due goes out now: the caller may sleep next.
            self.applied = true;
            self.send();
            ep.space.notify_all();
        } else {
            let _ = ep.space.wait_until(&mut self.core, until);
        }
        ep.waiting.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Drop for CoreGuard<'_> {
    fn drop(&mut self) {
        let next = if self.unsent {
            self.core.poll_timeout()
        } else {
            None
        };
        // SAFETY: dropped once, here; the field is not used after this.
        unsafe { ManuallyDrop::drop(&mut self.core) };
        let ep = self.ep;
        if self.applied {
            ep.wake_waiters();
        }
        // Heartbeats or repairs made due under this guard and not sent: the event thread
        // sends them (this holder may hold other locks).
        ep.ctx.kick.ensure_by(next);
        ep.apply_left(self.may_send);
    }
}

impl Deref for CoreGuard<'_> {
    type Target = WriterCore;
    fn deref(&self) -> &WriterCore {
        &self.core
    }
}

impl DerefMut for CoreGuard<'_> {
    fn deref_mut(&mut self) -> &mut WriterCore {
        &mut self.core
    }
}
