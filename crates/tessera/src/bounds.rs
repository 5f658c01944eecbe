//! Per-participant resource bounds: what a peer (or an application that never reads) can make a
//! participant hold, whatever the number of readers and writers.
//!
//! Each reader core bounds its own buffers, and each history its own instances; these bounds
//! add one figure per participant on top. What they refuse is dropped, counted in
//! [`DomainParticipant::counters`](crate::DomainParticipant::counters) and logged: at debug level
//! as it happens, and as one warning a second at most, with the counts, from the event thread
//! ([`DropReport`]), so that a flood of datagrams cannot flood the log.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender, TrySendError};
use tessera_rtps::budget::SharedBudget;

use crate::participant::CountersSnapshot;

/// Bounds on the memory one participant holds for its peers; a field of
/// [`ParticipantConfig`](crate::ParticipantConfig). The defaults suit a participant with a few
/// dozen endpoints and samples up to the 64 MiB fragmentation limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResourceBounds {
    /// Most instances a data reader keeps when its RESOURCE_LIMITS QoS says `max_instances`
    /// is unlimited; a QoS value, larger or smaller, wins. Beyond it a sample of a new instance
    /// is rejected (SAMPLE_REJECTED) until instances go: taken after a dispose or unregister,
    /// or autopurged (READER_DATA_LIFECYCLE). Default 65,536.
    pub max_instances_per_reader: usize,
    /// Bytes of partially reassembled (DATA_FRAG) samples held by all readers together.
    /// Beyond it a new partial sample is refused; a reliable writer sends it again later.
    /// Default 256 MiB.
    pub reassembly_bytes: usize,
    /// Bytes of out-of-order samples (waiting for a gap to be filled) held by all readers
    /// together. Beyond it such a sample is dropped and, if reliable, repaired later.
    /// Default 256 MiB.
    pub out_of_order_bytes: usize,
    /// Capacity of each channel returned by
    /// [`DomainParticipant::participant_events`](crate::DomainParticipant::participant_events).
    /// An event that finds its channel full is dropped (the receive thread never waits for the
    /// application). Default 1,024.
    pub participant_events: usize,
}

impl Default for ResourceBounds {
    fn default() -> ResourceBounds {
        ResourceBounds {
            max_instances_per_reader: 65_536,
            reassembly_bytes: 256 << 20,
            out_of_order_bytes: 256 << 20,
            participant_events: 1024,
        }
    }
}

/// The participant-wide byte pools its reader cores draw from, and the count of participant
/// events dropped (atomics, so that `counters()` takes no lock).
#[derive(Debug, Clone)]
pub(crate) struct Budgets {
    pub reassembly: SharedBudget,
    pub out_of_order: SharedBudget,
    pub events_dropped: Arc<AtomicU64>,
}

impl Budgets {
    pub fn new(b: &ResourceBounds) -> Budgets {
        Budgets {
            reassembly: SharedBudget::new(b.reassembly_bytes),
            out_of_order: SharedBudget::new(b.out_of_order_bytes),
            events_dropped: Arc::default(),
        }
    }
}

/// Events fanned out to bounded channels: a full channel loses the event (counted), a closed
/// one is forgotten. Sending never blocks.
#[derive(Debug)]
pub(crate) struct EventFanout<E> {
    watchers: Vec<Sender<E>>,
    dropped: Arc<AtomicU64>,
}

impl<E: Clone> EventFanout<E> {
    /// No channels yet; drops will be counted in `dropped`.
    pub fn new(dropped: Arc<AtomicU64>) -> EventFanout<E> {
        EventFanout {
            watchers: Vec::new(),
            dropped,
        }
    }

    /// A new channel of `capacity` events (at least 1), primed with `initial` (as much of it
    /// as fits).
    pub fn watch(&mut self, capacity: usize, initial: impl IntoIterator<Item = E>) -> Receiver<E> {
        let (tx, rx) = crossbeam_channel::bounded(capacity.max(1));
        for ev in initial {
            offer(&tx, ev, &self.dropped);
        }
        self.watchers.push(tx);
        rx
    }

    /// Sends `ev` to every live channel.
    pub fn send(&mut self, ev: &E) {
        let dropped = &self.dropped;
        self.watchers.retain(|tx| offer(tx, ev.clone(), dropped));
    }

    /// Channels still open.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.watchers.len()
    }
}

/// Offers one event to a channel; returns false when its receiver is gone.
fn offer<E>(tx: &Sender<E>, ev: E, dropped: &AtomicU64) -> bool {
    match tx.try_send(ev) {
        Ok(()) => true,
        Err(TrySendError::Full(_)) => {
            dropped.fetch_add(1, Ordering::Relaxed);
            tracing::debug!(
                "participant event dropped: the application is not reading its channel"
            );
            true
        }
        Err(TrySendError::Disconnected(_)) => false,
    }
}

/// Warns about drops at most once per period, with what was dropped since the last warning.
#[derive(Debug)]
pub(crate) struct DropReport {
    period: Duration,
    next: Option<Instant>,
    last: CountersSnapshot,
}

impl DropReport {
    pub fn new(period: Duration) -> DropReport {
        DropReport {
            period,
            next: None,
            last: CountersSnapshot::default(),
        }
    }

    /// Whether a report is due at `now` (cheap: the caller takes a snapshot only then).
    pub fn due(&self, now: Instant) -> bool {
        self.next.is_none_or(|t| now >= t)
    }

    /// Logs what the bounds dropped between the last snapshot and `c`; returns whether it
    /// logged.
    pub fn report(&mut self, now: Instant, c: CountersSnapshot) -> bool {
        self.next = Some(now + self.period);
        let l = std::mem::replace(&mut self.last, c);
        let events = c.participant_events_dropped - l.participant_events_dropped;
        let reassembly = c.reassembly_refused - l.reassembly_refused;
        let out_of_order = c.out_of_order_refused - l.out_of_order_refused;
        let rejected = c.samples_rejected - l.samples_rejected;
        if events + reassembly + out_of_order + rejected == 0 {
            return false;
        }
        tracing::warn!(
            participant_events_dropped = events,
            reassembly_refused = reassembly,
            out_of_order_refused = out_of_order,
            samples_rejected = rejected,
            "resource bounds reached: input dropped (see ParticipantConfig::limits)"
        );
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fanout_to_a_reader_that_never_drains_stays_bounded_and_counts() {
        let dropped = Arc::new(AtomicU64::new(0));
        let count = || dropped.load(Ordering::Relaxed);
        let mut f = EventFanout::new(dropped.clone());
        let idle = f.watch(4, 0..2u32); // primed with 2 of 4
        let busy = f.watch(4, std::iter::empty());
        let mut seen = Vec::new();
        for ev in 0..1000u32 {
            f.send(&ev);
            seen.extend(busy.try_iter());
        }
        assert_eq!(idle.len(), 4, "bounded at its capacity");
        assert_eq!(count(), 998, "2 primed + 2 sent fit, 998 sent did not");
        assert_eq!(seen.len(), 1000, "a reader that keeps up loses nothing");
        // The first events are kept, later ones dropped.
        assert_eq!(idle.try_iter().collect::<Vec<_>>(), [0, 1, 0, 1]);
        // A closed channel is forgotten; nothing is counted for it.
        drop(idle);
        f.send(&7);
        assert_eq!(f.len(), 1);
        assert_eq!(count(), 998);
        assert_eq!(busy.try_recv(), Ok(7));
    }

    #[test]
    fn priming_beyond_capacity_is_counted() {
        let dropped = Arc::new(AtomicU64::new(0));
        let mut f = EventFanout::new(dropped.clone());
        let rx = f.watch(3, 0..10u8);
        assert_eq!(rx.len(), 3);
        assert_eq!(dropped.load(Ordering::Relaxed), 7);
    }

    #[test]
    fn drop_report_is_rate_limited() {
        let t0 = Instant::now();
        let mut r = DropReport::new(Duration::from_secs(1));
        assert!(r.due(t0));
        let mut c = CountersSnapshot::default();
        assert!(!r.report(t0, c), "nothing dropped: silent");
        assert!(!r.due(t0 + Duration::from_millis(999)));
        c.reassembly_refused = 5;
        assert!(r.due(t0 + Duration::from_secs(1)));
        assert!(r.report(t0 + Duration::from_secs(1), c));
        assert!(!r.report(t0 + Duration::from_secs(2), c), "no new drops");
    }
}
