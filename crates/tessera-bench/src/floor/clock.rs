//! Time for the floor: the process's monotonic clock and the run bookkeeping (start, end,
//! once-a-second report schedule) shared by the roles.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;
use std::time::Instant;

use tessera_cli::perf::report::Stamp;

use super::{FloorConfig, SEC};

/// Monotonic ns since the first call (the process's clock for the floor).
pub(super) fn mono_ns() -> i64 {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    EPOCH.get_or_init(Instant::now).elapsed().as_nanos() as i64
}

/// Run bookkeeping shared by the roles: start, end, report schedule.
pub(super) struct Clock {
    pub(super) pid: u32,
    pub(super) tstart: i64,
    pub(super) tend: Option<i64>,
    tnext: i64,
    tprev: i64,
}

impl Clock {
    pub(super) fn new(cfg: &FloorConfig) -> Clock {
        let tstart = mono_ns();
        Clock {
            pid: std::process::id(),
            tstart,
            tend: cfg
                .duration
                .map(|d| tstart + i64::try_from(d.as_nanos()).unwrap_or(i64::MAX / 2)),
            tnext: tstart + SEC,
            tprev: tstart,
        }
    }

    /// If a report is due at `now`: its stamp and interval, and the schedule moves on.
    pub(super) fn due(&mut self, now: i64) -> Option<(Stamp, i64)> {
        if now < self.tnext {
            return None;
        }
        let r = (Stamp::new(self.pid, now, self.tstart), now - self.tprev);
        self.tprev = now;
        self.tnext += SEC;
        if now > self.tnext - SEC / 2 {
            self.tnext = now + SEC;
        }
        Some(r)
    }

    pub(super) fn ended(&self, now: i64, stop: &AtomicBool) -> bool {
        stop.load(Ordering::Acquire) || self.tend.is_some_and(|t| now >= t)
    }
}
