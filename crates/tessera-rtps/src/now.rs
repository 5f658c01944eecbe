//! [`Now`]: the current time, read from the clock only when something asks for it.

use std::cell::Cell;
use std::time::Instant;

/// The current time for one call into a protocol core, read from the clock on first use and
/// then fixed. A writer streaming new samples needs none in steady state (timers are the
/// event thread's business), and a clock read costs 20–25 ns on virtual machines, a tenth of
/// a small sample's whole write path. Simulations pass a fixed instant (`Instant` converts).
#[derive(Debug, Clone, Default)]
pub struct Now(Cell<Option<Instant>>);

impl Now {
    /// Reads the clock when first asked.
    pub fn lazy() -> Now {
        Now(Cell::new(None))
    }

    /// The time, read now if nobody asked before.
    #[inline]
    pub fn get(&self) -> Instant {
        match self.0.get() {
            Some(t) => t,
            None => {
                let t = Instant::now();
                self.0.set(Some(t));
                t
            }
        }
    }

    /// The time if it was read (or given), without reading the clock.
    pub fn peek(&self) -> Option<Instant> {
        self.0.get()
    }
}

impl From<Instant> for Now {
    fn from(t: Instant) -> Now {
        Now(Cell::new(Some(t)))
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
        let n = Now::lazy();
        assert_eq!(n.peek(), None);
        let t = n.get();
        assert_eq!(n.peek(), Some(t));
        assert_eq!(n.get(), t);
        let fixed = Instant::now();
        assert_eq!(Now::from(fixed).get(), fixed);
        assert_eq!(Now::from(&n).peek(), Some(t));
    }
}
