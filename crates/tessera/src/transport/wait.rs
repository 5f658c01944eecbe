//! How a receive thread waits for the next datagram ([`WaitStrategy`]).
//!
//! A thread that sleeps in the kernel (in `recvmsg`, on a futex) pays for its wake-up: about
//! 20 µs on an idle core of the VMs this project measures on, a few µs when the other core is
//! busy. Polling instead avoids that cost, but burns the core it runs on, and on a machine
//! without a spare core it also delays the peer it is waiting for. Which wins depends on the
//! machine and the traffic, so it is a per-participant choice:
//!
//! | strategy | `TESSERA_WAIT` | CPU while idle | CPU after traffic |
//! |---|---|---|---|
//! | [`WaitStrategy::Block`] (default) | `block` | none | none |
//! | [`WaitStrategy::Spin`], fixed | `spin:US` | none | up to US µs per quiet gap |
//! | [`WaitStrategy::Spin`], adaptive | `adaptive:US` | none | about twice the recent gap but at least 20 µs, never over US µs, none when gaps are longer than US |
//! | [`WaitStrategy::BusyPoll`] | `poll` | one core per receive thread | one core per receive thread |
//!
//! Only the threads that receive user data wait this way (UDP unicast and multicast user-data
//! sockets, the shared-memory ring); discovery traffic always blocks.

use std::time::Duration;

use super::TransportError;

/// Environment variable selecting the [`WaitStrategy`] when the configuration does not.
pub const ENV_WAIT: &str = "TESSERA_WAIT";

/// How a receive thread waits for data. See the module docs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WaitStrategy {
    /// Sleep in the kernel as soon as nothing is waiting.
    #[default]
    Block,
    /// Poll for a while after the last datagram, then sleep.
    Spin {
        /// The longest spin.
        max: Duration,
        /// Spin about twice the recent gap between datagrams (an exponential average of the
        /// waits) but at least [`MIN_ADAPTIVE_SPIN`], and not at all while gaps are longer
        /// than `max`; otherwise always `max`.
        adaptive: bool,
    },
    /// Never sleep.
    BusyPoll,
}

impl WaitStrategy {
    /// Parses a `TESSERA_WAIT` value: `block`, `spin:US`, `adaptive:US` or `poll`.
    pub fn parse(s: &str) -> Result<WaitStrategy, TransportError> {
        let s = s.trim().to_ascii_lowercase();
        let bad = || {
            TransportError::InvalidConfig(format!(
                "{ENV_WAIT}={s:?}: expected block, spin:MICROSECONDS, adaptive:MICROSECONDS or poll"
            ))
        };
        match s.split_once(':') {
            None if s.is_empty() || s == "block" => Ok(WaitStrategy::Block),
            None if s == "poll" || s == "busy" => Ok(WaitStrategy::BusyPoll),
            Some((kind @ ("spin" | "adaptive"), us)) => {
                let us: u64 = us.trim().parse().map_err(|_| bad())?;
                if us == 0 {
                    return Ok(WaitStrategy::Block);
                }
                if us > 1_000_000 {
                    return Err(bad());
                }
                Ok(WaitStrategy::Spin {
                    max: Duration::from_micros(us),
                    adaptive: kind == "adaptive",
                })
            }
            _ => Err(bad()),
        }
    }

    /// `TESSERA_WAIT`, or `None` when it is unset.
    pub fn from_env() -> Result<Option<WaitStrategy>, TransportError> {
        match std::env::var(ENV_WAIT) {
            Ok(v) => WaitStrategy::parse(&v).map(Some),
            Err(_) => Ok(None),
        }
    }
}

/// The shortest adaptive spin (within `max`). Sleeping costs a wake-up of about this much on
/// the VMs measured here, and the waker a `futex` call: spinning for less than that only to
/// sleep anyway is the worst of both (a ping-pong whose round trip is 1.5 µs would spin 3 µs,
/// and every scheduling hiccup beyond it cost the round trip ~50 µs instead of a few). Bounded
/// this way, a burst's end costs at most this much CPU (the classic spin-then-block bound:
/// never worse than twice the better choice made in hindsight).
pub const MIN_ADAPTIVE_SPIN: Duration = Duration::from_micros(20);

/// The per-thread state of a [`WaitStrategy`]: how long to poll before the next sleep.
#[derive(Debug, Clone)]
pub struct Spinner {
    strategy: WaitStrategy,
    /// Exponential average of the recent waits, in ns (`None`: no wait recorded yet).
    avg_wait_ns: Option<f64>,
}

impl Spinner {
    /// A spinner for `strategy`.
    pub fn new(strategy: WaitStrategy) -> Spinner {
        Spinner {
            strategy,
            avg_wait_ns: None,
        }
    }

    /// How long to poll before sleeping; `None`: poll until data arrives (busy polling).
    pub fn budget(&self) -> Option<Duration> {
        match self.strategy {
            WaitStrategy::Block => Some(Duration::ZERO),
            WaitStrategy::BusyPoll => None,
            WaitStrategy::Spin {
                max,
                adaptive: false,
            } => Some(max),
            WaitStrategy::Spin {
                max,
                adaptive: true,
            } => {
                let Some(avg_ns) = self.avg_wait_ns else {
                    return Some(Duration::ZERO);
                };
                let avg = Duration::from_nanos(avg_ns as u64);
                Some(if avg > max {
                    Duration::ZERO
                } else {
                    (avg * 2).max(MIN_ADAPTIVE_SPIN).min(max)
                })
            }
        }
    }

    /// Records how long the last wait took, from the moment the thread found nothing to the
    /// arrival of the next datagram (spun or slept).
    pub fn record_wait(&mut self, waited: Duration) {
        // Capped so that one long idle period does not take many datagrams to forget.
        let w = waited.min(Duration::from_millis(10)).as_nanos() as f64;
        self.avg_wait_ns = Some(self.avg_wait_ns.map_or(w, |avg| 0.75 * avg + 0.25 * w));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_form_and_rejects_the_rest() {
        assert_eq!(WaitStrategy::parse("block").unwrap(), WaitStrategy::Block);
        assert_eq!(WaitStrategy::parse("").unwrap(), WaitStrategy::Block);
        assert_eq!(WaitStrategy::parse("POLL").unwrap(), WaitStrategy::BusyPoll);
        assert_eq!(
            WaitStrategy::parse("spin:20").unwrap(),
            WaitStrategy::Spin {
                max: Duration::from_micros(20),
                adaptive: false
            }
        );
        assert_eq!(
            WaitStrategy::parse(" adaptive:50 ").unwrap(),
            WaitStrategy::Spin {
                max: Duration::from_micros(50),
                adaptive: true
            }
        );
        assert_eq!(WaitStrategy::parse("spin:0").unwrap(), WaitStrategy::Block);
        for bad in [
            "spin",
            "spin:x",
            "spin:-1",
            "spin:2000000",
            "sleep",
            "adaptive:",
        ] {
            assert!(WaitStrategy::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn adaptive_budget_follows_short_gaps_and_stops_for_long_ones() {
        let max = Duration::from_micros(50);
        let mut s = Spinner::new(WaitStrategy::Spin {
            max,
            adaptive: true,
        });
        assert_eq!(s.budget(), Some(Duration::ZERO), "no history: no spin");
        for _ in 0..20 {
            s.record_wait(Duration::from_micros(10));
        }
        let b = s.budget().unwrap();
        assert!(
            b > Duration::from_micros(19) && b <= Duration::from_micros(20),
            "{b:?}"
        );
        // Gaps of ~1 µs (a spinning ping-pong): spin at least a wake-up's worth.
        for _ in 0..20 {
            s.record_wait(Duration::from_micros(1));
        }
        assert_eq!(s.budget(), Some(MIN_ADAPTIVE_SPIN));
        // Gaps of 20 µs: twice that.
        for _ in 0..40 {
            s.record_wait(Duration::from_micros(20));
        }
        let b = s.budget().unwrap();
        assert!(
            b > Duration::from_micros(39) && b <= Duration::from_micros(40),
            "{b:?}"
        );
        // Gaps longer than the cap: spinning would only burn CPU.
        for _ in 0..20 {
            s.record_wait(Duration::from_micros(500));
        }
        assert_eq!(s.budget(), Some(Duration::ZERO));
        // Short gaps again: the spin comes back within a few datagrams.
        for _ in 0..12 {
            s.record_wait(Duration::from_micros(5));
        }
        assert!(s.budget().unwrap() > Duration::ZERO);
        // Never beyond the cap, even when the floor is above it.
        let mut small = Spinner::new(WaitStrategy::Spin {
            max: Duration::from_micros(8),
            adaptive: true,
        });
        small.record_wait(Duration::from_micros(1));
        assert_eq!(small.budget(), Some(Duration::from_micros(8)));
    }

    #[test]
    fn fixed_block_and_poll_budgets() {
        let max = Duration::from_micros(7);
        assert_eq!(
            Spinner::new(WaitStrategy::Spin {
                max,
                adaptive: false
            })
            .budget(),
            Some(max)
        );
        assert_eq!(
            Spinner::new(WaitStrategy::Block).budget(),
            Some(Duration::ZERO)
        );
        assert_eq!(Spinner::new(WaitStrategy::BusyPoll).budget(), None);
    }
}
