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

    /// The time if it was read (or given), without reading the clock.
    pub fn peek(&self) -> Option<Instant> {
        match self.0.get() {
            State::Fixed(t) => Some(t),
            State::Lazy(_) => None,
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

    #[test]
    fn the_clock_is_read_once_and_only_when_asked() {
        let n = Now::lazy(Instant::now);
        assert_eq!(n.peek(), None);
        let t = n.get();
        assert_eq!(n.peek(), Some(t));
        assert_eq!(n.get(), t);
        let fixed = Instant::now();
        assert_eq!(Now::from(fixed).get(), fixed);
        assert_eq!(Now::from(&n).peek(), Some(t));
        // A lazy copy reads for itself.
        let lazy = Now::lazy(Instant::now);
        let copy = Now::from(&lazy);
        copy.get();
        assert_eq!(lazy.peek(), None);
    }
}
