//! Conditions and wait sets (DDS 1.4 §2.2.2.1.6–9).
//!
//! A [`Condition`] is something that can become true: a [`GuardCondition`] set by the
//! application, a status condition of an entity, or a read condition of a data reader.
//! A [`WaitSet`] blocks the calling thread until one of its attached conditions is true.
//!
//! The mechanism: each condition source owns a [`Notifier`] listing the wait sets it is attached
//! to. Whatever may change a trigger value (data arriving, a status changing, `set_trigger_value`)
//! calls `Notifier::notify`, which bumps each wait set's generation and wakes its waiter. A
//! waiter reads the generation *before* evaluating the conditions, so a change that lands while it
//! evaluates is never missed. With no wait set attached, `notify` is one atomic load.
//!
//! A receive thread that handles a batch of datagrams (one `recvmmsg`, one round of the
//! shared-memory ring) wakes each wait set once, after the batch, rather than once per sample:
//! it calls `defer_wakes` once and `flush_deferred_wakes` after every batch. A thread
//! waiting on a reader then takes the whole burst in one wake-up instead of being woken again
//! for every sample that lands while it runs.

use crate::error::{Error, Result};
use parking_lot::{Condvar, Mutex};
use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

/// The waking side of a wait set.
#[derive(Debug, Default)]
pub(crate) struct WaitSetCore {
    generation: Mutex<u64>,
    cv: Condvar,
}

impl WaitSetCore {
    fn wake(&self) {
        *self.generation.lock() += 1;
        self.cv.notify_all();
    }
}

/// Wait sets one thread wakes at once, past which it stops deferring (a bound on memory).
const MAX_DEFERRED: usize = 64;

thread_local! {
    /// `Some` on a thread that defers its wakes ([`defer_wakes`]): the wait sets to wake at the
    /// next [`flush_deferred_wakes`].
    static DEFERRED: RefCell<Option<Vec<Arc<WaitSetCore>>>> = const { RefCell::new(None) };
}

/// From now on, the calling thread's notifications wake wait sets only when it calls
/// [`flush_deferred_wakes`] — which it must do after every batch it handles.
pub(crate) fn defer_wakes() {
    DEFERRED.with(|d| {
        d.borrow_mut().get_or_insert_with(Vec::new);
    });
}

/// Wakes the wait sets the calling thread notified since its last flush (see [`defer_wakes`]).
pub(crate) fn flush_deferred_wakes() {
    let pending = DEFERRED.with(|d| d.borrow_mut().as_mut().map(std::mem::take));
    let Some(mut pending) = pending else { return };
    if pending.is_empty() {
        return;
    }
    for ws in pending.drain(..) {
        ws.wake();
    }
    // Hand the storage back: no allocation per batch.
    DEFERRED.with(|d| {
        if let Some(v) = d.borrow_mut().as_mut() {
            if v.is_empty() {
                *v = pending;
            }
        }
    });
}

/// The list of wait sets a condition source must wake.
#[derive(Debug, Default)]
pub struct Notifier {
    attached: AtomicUsize,
    waitsets: Mutex<Vec<Weak<WaitSetCore>>>,
}

impl Notifier {
    /// Wakes every attached wait set. Cheap when none is attached.
    pub(crate) fn notify(&self) {
        if self.attached.load(Ordering::Acquire) == 0 {
            return;
        }
        let list = self.waitsets.lock();
        for ws in list.iter().filter_map(Weak::upgrade) {
            let deferred = DEFERRED.with(|d| match d.borrow_mut().as_mut() {
                Some(v) if v.iter().any(|w| Arc::ptr_eq(w, &ws)) => true,
                Some(v) if v.len() < MAX_DEFERRED => {
                    v.push(ws.clone());
                    true
                }
                _ => false,
            });
            if !deferred {
                ws.wake();
            }
        }
    }

    fn attach(&self, ws: &Arc<WaitSetCore>) {
        let mut list = self.waitsets.lock();
        list.retain(|w| w.strong_count() > 0);
        list.push(Arc::downgrade(ws));
        self.attached.store(list.len(), Ordering::Release);
    }

    fn detach(&self, ws: &Arc<WaitSetCore>) {
        let mut list = self.waitsets.lock();
        list.retain(|w| w.strong_count() > 0 && !std::ptr::eq(w.as_ptr(), Arc::as_ptr(ws)));
        self.attached.store(list.len(), Ordering::Release);
    }
}

type TriggerFn = dyn Fn() -> bool + Send + Sync;

/// A condition that a [`WaitSet`] can wait for. Cloning gives another handle to the same
/// condition; two handles compare equal when they name the same condition.
#[derive(Clone)]
pub struct Condition {
    trigger: Arc<TriggerFn>,
    notifier: Arc<Notifier>,
    kind: ConditionKind,
}

/// What kind of condition it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConditionKind {
    /// Set by the application.
    Guard,
    /// An entity's status changed.
    Status,
    /// A reader has samples matching given states.
    Read,
    /// A reader has samples matching given states whose data passes a query expression.
    Query,
}

impl std::fmt::Debug for Condition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Condition")
            .field("kind", &self.kind)
            .field("trigger", &self.trigger_value())
            .finish()
    }
}

impl PartialEq for Condition {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.trigger, &other.trigger)
    }
}

impl Eq for Condition {}

impl Condition {
    pub(crate) fn new(
        kind: ConditionKind,
        notifier: Arc<Notifier>,
        trigger: impl Fn() -> bool + Send + Sync + 'static,
    ) -> Condition {
        Condition {
            trigger: Arc::new(trigger),
            notifier,
            kind,
        }
    }

    /// Whether the condition is true now.
    pub fn trigger_value(&self) -> bool {
        (self.trigger)()
    }

    /// The kind of condition.
    pub fn kind(&self) -> ConditionKind {
        self.kind
    }
}

/// A condition whose trigger value the application sets, e.g. to wake a waiting thread for
/// shutdown.
#[derive(Debug, Clone)]
pub struct GuardCondition {
    value: Arc<AtomicBool>,
    condition: Condition,
}

impl Default for GuardCondition {
    fn default() -> Self {
        Self::new()
    }
}

impl GuardCondition {
    /// A new guard condition, initially false.
    pub fn new() -> GuardCondition {
        let value = Arc::new(AtomicBool::new(false));
        let v = value.clone();
        let condition = Condition::new(ConditionKind::Guard, Arc::default(), move || {
            v.load(Ordering::Acquire)
        });
        GuardCondition { value, condition }
    }

    /// Sets the trigger value, waking wait sets when it becomes true.
    pub fn set_trigger_value(&self, value: bool) {
        self.value.store(value, Ordering::Release);
        if value {
            self.condition.notifier.notify();
        }
    }

    /// The condition to attach to a wait set.
    pub fn condition(&self) -> Condition {
        self.condition.clone()
    }
}

/// Blocks a thread until one of its conditions is true.
#[derive(Debug, Default)]
pub struct WaitSet {
    core: Arc<WaitSetCore>,
    conditions: Vec<Condition>,
}

impl WaitSet {
    /// An empty wait set.
    pub fn new() -> WaitSet {
        WaitSet::default()
    }

    /// Attaches a condition (attaching the same one twice is a no-op).
    pub fn attach(&mut self, condition: &Condition) {
        if !self.conditions.contains(condition) {
            condition.notifier.attach(&self.core);
            self.conditions.push(condition.clone());
        }
    }

    /// Detaches a condition; [`Error::PreconditionNotMet`] if it was not attached.
    pub fn detach(&mut self, condition: &Condition) -> Result<()> {
        let idx = self
            .conditions
            .iter()
            .position(|c| c == condition)
            .ok_or_else(|| Error::PreconditionNotMet("condition not attached".into()))?;
        let c = self.conditions.swap_remove(idx);
        c.notifier.detach(&self.core);
        Ok(())
    }

    /// The attached conditions.
    pub fn conditions(&self) -> &[Condition] {
        &self.conditions
    }

    /// Waits until at least one attached condition is true and returns the true ones;
    /// [`Error::Timeout`] when `timeout` passes first (`None` waits forever).
    pub fn wait(&self, timeout: Option<Duration>) -> Result<Vec<Condition>> {
        let mut active = Vec::new();
        self.wait_into(&mut active, timeout)?;
        Ok(active)
    }

    /// Like [`WaitSet::wait`], filling a caller-supplied vector (no allocation when reused).
    pub fn wait_into(&self, active: &mut Vec<Condition>, timeout: Option<Duration>) -> Result<()> {
        if self.conditions.is_empty() {
            return Err(Error::PreconditionNotMet(
                "wait set has no conditions".into(),
            ));
        }
        let deadline = timeout.map(|t| Instant::now() + t);
        loop {
            let seen = *self.core.generation.lock();
            active.clear();
            active.extend(
                self.conditions
                    .iter()
                    .filter(|c| c.trigger_value())
                    .cloned(),
            );
            if !active.is_empty() {
                return Ok(());
            }
            let mut generation = self.core.generation.lock();
            while *generation == seen {
                match deadline {
                    None => self.core.cv.wait(&mut generation),
                    Some(d) => {
                        if self.core.cv.wait_until(&mut generation, d).timed_out() {
                            drop(generation);
                            active.extend(
                                self.conditions
                                    .iter()
                                    .filter(|c| c.trigger_value())
                                    .cloned(),
                            );
                            return if active.is_empty() {
                                Err(Error::Timeout)
                            } else {
                                Ok(())
                            };
                        }
                    }
                }
            }
        }
    }
}

impl Drop for WaitSet {
    fn drop(&mut self) {
        for c in &self.conditions {
            c.notifier.detach(&self.core);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guard_condition_wakes_a_waiter() {
        let g = GuardCondition::new();
        let mut ws = WaitSet::new();
        ws.attach(&g.condition());
        assert!(matches!(
            ws.wait(Some(Duration::from_millis(10))),
            Err(Error::Timeout)
        ));
        let g2 = g.clone();
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            g2.set_trigger_value(true);
        });
        let active = ws.wait(Some(Duration::from_secs(10))).unwrap();
        assert_eq!(active, vec![g.condition()]);
        t.join().unwrap();
    }

    /// On a thread that defers its wakes, a burst of notifications wakes a wait set once, at
    /// the flush, and not before; a thread that does not defer wakes at every notification.
    #[test]
    fn deferred_wakes_come_once_at_the_flush() {
        let g = GuardCondition::new();
        let mut ws = WaitSet::new();
        ws.attach(&g.condition());
        let generation = || *ws.core.generation.lock();
        let before = generation();
        let (burst_done, go) = (std::sync::mpsc::channel(), std::sync::mpsc::channel());
        let g2 = g.clone();
        let (done_tx, go_rx) = (burst_done.0, go.1);
        let t = std::thread::spawn(move || {
            defer_wakes();
            for _ in 0..10 {
                g2.set_trigger_value(true);
            }
            done_tx.send(()).unwrap();
            go_rx.recv().unwrap();
            flush_deferred_wakes();
        });
        burst_done.1.recv().unwrap();
        assert_eq!(generation(), before, "woken before the flush");
        go.0.send(()).unwrap();
        t.join().unwrap();
        assert_eq!(generation(), before + 1, "one wake for the burst");
        g.set_trigger_value(true);
        g.set_trigger_value(true);
        assert_eq!(generation(), before + 3);
    }

    #[test]
    fn detach_unknown_is_an_error() {
        let mut ws = WaitSet::new();
        let g = GuardCondition::new();
        assert!(ws.detach(&g.condition()).is_err());
        ws.attach(&g.condition());
        ws.attach(&g.condition());
        assert_eq!(ws.conditions().len(), 1);
        ws.detach(&g.condition()).unwrap();
        assert!(ws.wait(None).is_err(), "empty wait set refuses to wait");
    }
}
