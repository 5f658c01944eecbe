//! What the samples of one received datagram share on the receive thread (one reception
//! time, DATA_AVAILABLE deferred to the end of a run of DATA), and the flag that marks an
//! ATOMIC group's committed deliveries.

use super::ReaderEndpoint;
use crate::status::StatusMask;
use std::sync::Arc;
use std::time::{Duration, Instant};

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
    /// The reception time of the datagram this thread is handling (see [`DatagramScope`]).
    static DATAGRAM_RECEPTION: std::cell::Cell<Reception> =
        const { std::cell::Cell::new(Reception::NotInDatagram) };
    /// Whether this thread is handling a datagram (DATA_AVAILABLE is deferred).
    static IN_DATAGRAM: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// The readers that got data from the datagrams this thread is handling, to be told at
    /// the end of each: a stack (a nested scope's readers above its outer one's), kept
    /// allocated between datagrams.
    static DATAGRAM_AVAILABLE: std::cell::RefCell<Vec<Arc<ReaderEndpoint>>> =
        const { std::cell::RefCell::new(Vec::new()) };
    /// A monotonic instant and the wall clock read just after it (see [`wall_nanos_at`]).
    static WALL_BASE: std::cell::Cell<Option<(Instant, i64)>> = const { std::cell::Cell::new(None) };
}

/// The reception time samples accepted on this thread get.
#[derive(Debug, Clone, Copy)]
pub(super) enum Reception {
    /// Not in a datagram's scope: each sample reads the wall clock.
    NotInDatagram,
    /// In the scope of a datagram found at this instant; no sample has needed the time yet.
    Unread(Instant),
    /// The datagram's reception time, in nanoseconds since the epoch.
    Read(i64),
}
pub(super) const NOT_IN_DATAGRAM: Reception = Reception::NotInDatagram;

/// How long a thread derives the wall clock from the monotonic clock before reading it again:
/// a step of the wall clock (NTP, an operator, a fault test) shows in reception times within
/// this.
const WALL_REREAD: Duration = Duration::from_millis(1);

/// The wall-clock time (ns since the epoch, even, as [`crate::publication::now_nanos`]) at
/// `found`, an instant just past: derived from the last wall-clock reading of this thread while
/// that is younger than [`WALL_REREAD`], so a busy receive thread reads one clock per datagram
/// (the monotonic one, which it needs anyway) rather than two. The derived time is never
/// earlier than a reading at `found` would have been (the base's wall clock was read after its
/// instant), so a sample's reception time does not precede its source timestamp.
fn wall_nanos_at(found: Instant) -> i64 {
    WALL_BASE.with(|base| {
        if let Some((at, wall)) = base.get() {
            if let Some(d) = found.checked_duration_since(at) {
                if d < WALL_REREAD {
                    return (wall + d.as_nanos() as i64) & !1;
                }
            }
        }
        let wall = crate::publication::now_nanos();
        base.set(Some((found, wall)));
        wall
    })
}

/// While it lives, the samples this thread accepts use the reception time it set (restored
/// on drop, so scopes nest).
pub(super) struct ReceptionClock {
    saved: Reception,
}

impl ReceptionClock {
    pub(super) fn set(v: Reception) -> ReceptionClock {
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
    /// The scope of one datagram, found at `found`.
    pub(crate) fn start(found: Instant) -> DatagramScope {
        DatagramScope {
            _clock: ReceptionClock::set(Reception::Unread(found)),
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
            Reception::NotInDatagram => crate::publication::now_nanos(),
            Reception::Unread(found) => {
                let t = wall_nanos_at(found);
                c.set(Reception::Read(t));
                t
            }
            Reception::Read(t) => t,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_derived_reception_time_follows_the_monotonic_clock_and_never_precedes_a_reading() {
        let before = crate::publication::now_nanos();
        let found = Instant::now();
        let first = wall_nanos_at(found);
        assert!(first >= before, "{first} < {before}");
        // Within the re-read interval the wall clock is derived: the monotonic distance.
        let later = found + Duration::from_micros(300);
        let derived = wall_nanos_at(later);
        assert_eq!(derived - first, 300_000);
        assert_eq!(derived % 2, 0, "even, as now_nanos");
        // Past it (or before the base) the wall clock is read again.
        let after = crate::publication::now_nanos();
        let reread = wall_nanos_at(Instant::now() + WALL_REREAD);
        assert!(reread >= after, "{reread} < {after}");
        assert!(wall_nanos_at(found) >= before);
    }

    #[test]
    fn the_samples_of_one_datagram_share_one_reception_time() {
        let found = Instant::now();
        let scope = DatagramScope::start(found);
        let first = DatagramScope::reception();
        std::thread::sleep(Duration::from_millis(2));
        assert_eq!(DatagramScope::reception(), first);
        scope.finish();
        // Outside a datagram every sample reads the clock.
        assert!(DatagramScope::reception() >= first + 2_000_000);
    }
}
