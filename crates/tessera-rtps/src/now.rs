//! [`Now`]: the current time, read from the runtime's clock only when something asks for it.

use std::cell::Cell;
use std::time::Instant;

/// The current time for one call into a protocol core: given, or read from the runtime's clock
/// on first use and then fixed. A writer streaming new samples needs none in steady state
/// (timers are the event thread's business), and a clock read costs 20–25 ns on virtual
/// machines, a tenth of a small sample's whole write path. The core never reads a clock of its
/// own: a lazy `Now` calls the function the runtime gave it; simulations pass an instant
/// (`Instant` converts).
#[derive(Debug, Clone)]
pub struct Now(Cell<State>);

#[derive(Debug, Clone, Copy)]
enum State {
    Fixed(Instant),
    Lazy(fn() -> Instant),
}

impl Now {
    /// The time `clock` tells when first asked.
    pub fn lazy(clock: fn() -> Instant) -> Now {
        Now(Cell::new(State::Lazy(clock)))
    }

    /// The time, read now if nobody asked before.
    #[inline]
    pub fn get(&self) -> Instant {
        match self.0.get() {
            State::Fixed(t) => t,
            State::Lazy(clock) => {
                let t = clock();
                self.0.set(State::Fixed(t));
                t
            }
        }
    }
}

impl From<Instant> for Now {
    fn from(t: Instant) -> Now {
        Now(Cell::new(State::Fixed(t)))
    }
}

/// A copy that reads the clock itself if the original had not (what it reads is not shared
/// back).
impl From<&Now> for Now {
    fn from(n: &Now) -> Now {
        n.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::sync::atomic::{AtomicUsize, Ordering};

    static READS: AtomicUsize = AtomicUsize::new(0);

    fn counting_clock() -> Instant {
        READS.fetch_add(1, Ordering::SeqCst);
        Instant::now()
    }

    #[test]
    fn the_clock_is_read_once_and_only_when_asked() {
        let n = Now::lazy(counting_clock);
        let untouched = Now::lazy(counting_clock);
        assert_eq!(READS.load(Ordering::SeqCst), 0);
        let t = n.get();
        assert_eq!(n.get(), t);
        assert_eq!(READS.load(Ordering::SeqCst), 1);
        // A copy of a read time keeps it; a copy of an unread one reads for itself.
        assert_eq!(Now::from(&n).get(), t);
        assert_eq!(READS.load(Ordering::SeqCst), 1);
        Now::from(&untouched).get();
        assert_eq!(READS.load(Ordering::SeqCst), 2);
        let fixed = Instant::now();
        assert_eq!(Now::from(fixed).get(), fixed);
        assert_eq!(READS.load(Ordering::SeqCst), 2);
    }
}
