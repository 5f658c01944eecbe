//! What the samples of one received datagram share on the receive thread (one reception
//! time, DATA_AVAILABLE deferred to the end of a run of DATA), and the flag that marks an
//! ATOMIC group's committed deliveries.

use super::ReaderEndpoint;
use crate::status::StatusMask;
use std::sync::Arc;

thread_local! {
    /// Whether this thread is delivering an ATOMIC group's committed entries (see
    /// [`CommittedDelivery`]).
    static COMMITTED_DELIVERY: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Marks the samples this thread delivers until dropped as committed log entries of an ATOMIC
/// group (`crate::atomic`): a flag rather than a parameter, as the path from `deliver_local`
/// to the history goes through presentation and group-coherent code that need not know.
#[cfg_attr(not(feature = "atomic"), allow(dead_code))]
pub(crate) struct CommittedDelivery;

#[cfg_attr(not(feature = "atomic"), allow(dead_code))]
impl CommittedDelivery {
    pub(crate) fn start() -> CommittedDelivery {
        COMMITTED_DELIVERY.with(|c| c.set(true));
        CommittedDelivery
    }
}

impl Drop for CommittedDelivery {
    fn drop(&mut self) {
        COMMITTED_DELIVERY.with(|c| c.set(false));
    }
}

pub(super) fn committed_delivery() -> bool {
    COMMITTED_DELIVERY.with(std::cell::Cell::get)
}

thread_local! {
    /// The reception time of the datagram this thread is handling (see [`DatagramScope`]):
    /// `NOT_IN_DATAGRAM`, `UNREAD` until its first sample needs it, then the time.
    static DATAGRAM_RECEPTION: std::cell::Cell<i64> = const { std::cell::Cell::new(NOT_IN_DATAGRAM) };
    /// Whether this thread is handling a datagram (DATA_AVAILABLE is deferred).
    static IN_DATAGRAM: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// The readers that got data from the datagrams this thread is handling, to be told at
    /// the end of each: a stack (a nested scope's readers above its outer one's), kept
    /// allocated between datagrams.
    static DATAGRAM_AVAILABLE: std::cell::RefCell<Vec<Arc<ReaderEndpoint>>> =
        const { std::cell::RefCell::new(Vec::new()) };
}
pub(super) const NOT_IN_DATAGRAM: i64 = -1;
const UNREAD: i64 = -2;

/// While it lives, the samples this thread accepts use the reception time it set (restored
/// on drop, so scopes nest).
pub(super) struct ReceptionClock {
    saved: i64,
}

impl ReceptionClock {
    pub(super) fn set(v: i64) -> ReceptionClock {
        ReceptionClock {
            saved: DATAGRAM_RECEPTION.with(|c| c.replace(v)),
        }
    }
}

impl Drop for ReceptionClock {
    fn drop(&mut self) {
        DATAGRAM_RECEPTION.with(|c| c.set(self.saved));
    }
}

/// What the samples of one received datagram share, while it lives on the receive thread:
/// one reception timestamp, read when the first of them needs it (they arrived together; a
/// clock read per sample was a tenth of a receive thread's time on batched 16 B samples), and
/// one DATA_AVAILABLE per reader and run of DATA submessages, raised when the run ends
/// ([`DatagramScope::flush`], [`DatagramScope::finish`]) instead of once per DATA (a listener
/// then takes a writer's whole batch at once, as a waiting `take` would). Scopes nest (a
/// listener whose write is delivered in-process on the same thread).
pub(crate) struct DatagramScope {
    _clock: ReceptionClock,
    saved_in: bool,
    /// Where this scope's readers start in `DATAGRAM_AVAILABLE`.
    base: usize,
    /// Set by `finish`; a scope left without it (a panic) forgets its readers.
    finished: bool,
}

impl DatagramScope {
    /// The scope of one datagram.
    pub(crate) fn start() -> DatagramScope {
        DatagramScope {
            _clock: ReceptionClock::set(UNREAD),
            saved_in: IN_DATAGRAM.with(|c| c.replace(true)),
            base: DATAGRAM_AVAILABLE.with(|a| a.borrow().len()),
            finished: false,
        }
    }

    /// Raises DATA_AVAILABLE once for each reader that got data in the scope. The listeners
    /// run outside it: what they deliver is theirs.
    pub(crate) fn finish(mut self) {
        let base = self.base;
        self.finished = true;
        drop(self);
        Self::raise_from(base);
    }

    /// Raises DATA_AVAILABLE for the readers that got data so far: the datagram goes on with
    /// a submessage other than DATA (a HEARTBEAT, say, whose ACKNACK need not go before the
    /// listener's answer to the samples above it).
    pub(crate) fn flush(&self) {
        Self::raise_from(self.base);
    }

    fn raise_from(base: usize) {
        loop {
            let next = DATAGRAM_AVAILABLE.with(|a| {
                let mut a = a.borrow_mut();
                (a.len() > base).then(|| a.remove(base))
            });
            match next {
                Some(r) => r.status_changed(StatusMask::DATA_AVAILABLE),
                None => break,
            }
        }
    }

    /// Defers `reader`'s DATA_AVAILABLE to the end of the run of DATA it is in; false outside
    /// a datagram's scope.
    pub(super) fn defer_available(reader: &ReaderEndpoint) -> bool {
        if !IN_DATAGRAM.with(std::cell::Cell::get) {
            return false;
        }
        DATAGRAM_AVAILABLE.with(|a| {
            let mut a = a.borrow_mut();
            if a.iter().any(|r| std::ptr::eq(&**r, reader)) {
                return true;
            }
            match reader.me.upgrade() {
                Some(me) => {
                    a.push(me);
                    true
                }
                None => false,
            }
        })
    }

    /// The reception time for a sample accepted now.
    pub(super) fn reception() -> i64 {
        DATAGRAM_RECEPTION.with(|c| match c.get() {
            NOT_IN_DATAGRAM => crate::publication::now_nanos(),
            UNREAD => {
                let t = crate::publication::now_nanos();
                c.set(t);
                t
            }
            t => t,
        })
    }
}

impl Drop for DatagramScope {
    fn drop(&mut self) {
        IN_DATAGRAM.with(|c| c.set(self.saved_in));
        if !self.finished {
            DATAGRAM_AVAILABLE.with(|a| {
                if let Ok(mut a) = a.try_borrow_mut() {
                    a.truncate(self.base);
                }
            });
        }
    }
}
