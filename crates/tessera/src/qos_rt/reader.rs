//! A reader's per-writer and per-instance policy state: DEADLINE (requested), OWNERSHIP,
//! TIME_BASED_FILTER, LIFESPAN of its writers' samples, and the liveliness leases of manual
//! writers. [`ReaderPolicies::admit`] decides, sample by sample, what enters the history.

use super::deadline::{DeadlineTimers, Key};
use super::ownership::Ownership;
use std::time::{Duration, Instant};
use tessera_rtps::fasthash::FastHashMap;
use tessera_rtps::qos::{is_infinite, DataReaderQos, LivelinessKind};

/// A writer GUID as bytes.
pub(crate) type Writer = [u8; 16];

/// What a reader knows of a matched writer's policies.
#[derive(Debug, Clone, Copy)]
pub(crate) struct WriterTerms {
    /// OWNERSHIP_STRENGTH.
    pub strength: i32,
    /// LIFESPAN in ns (`None`: infinite).
    pub lifespan_ns: Option<i64>,
    /// Liveliness lease the reader checks (`None`: its participant's lease covers it, as for
    /// AUTOMATIC writers, or infinite).
    pub lease: Option<Duration>,
    /// LIVELINESS kind.
    pub kind: LivelinessKind,
}

#[derive(Debug)]
struct WriterState {
    terms: WriterTerms,
    /// The lease runs out then (manual writers with a finite lease).
    lease_due: Option<Instant>,
    alive: bool,
}

/// What [`ReaderPolicies::admit`] decided for one sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Admission {
    /// Into the history; with the sample's expiry time (ns, wall clock) under LIFESPAN.
    Deliver { expires: Option<i64> },
    /// Its lifespan ran out before it arrived.
    Expired,
    /// Another writer owns the instance.
    NotOwner,
    /// Within the minimum separation of the instance's previous sample.
    Filtered,
}

/// Per-reader policy state; see the module docs. Locked by the reader endpoint only when one
/// of these policies is in use.
#[derive(Debug, Default)]
pub(crate) struct ReaderPolicies {
    pub deadline: DeadlineTimers,
    pub ownership: Option<Ownership>,
    /// TIME_BASED_FILTER minimum separation in ns (0: off).
    min_separation_ns: i64,
    /// When (on `separation_clock`, ns) each instance's last sample was delivered, under the
    /// filter.
    last_delivered: FastHashMap<Key, i64>,
    /// The clock the minimum separation is measured on: the monotonic one unless a test sets
    /// its own. Not the wall clock, whose steps would let samples through early (forward) or
    /// hold them back (backward).
    separation_clock: Option<fn() -> i64>,
    writers: FastHashMap<Writer, WriterState>,
    /// Samples dropped as expired on arrival.
    pub expired: u64,
    /// Samples dropped by the time-based filter.
    pub filtered: u64,
}

impl ReaderPolicies {
    /// The state for a reader with `qos`.
    pub fn new(qos: &DataReaderQos) -> ReaderPolicies {
        let mut p = ReaderPolicies::default();
        p.apply_qos(qos);
        p
    }

    /// Takes the changeable policies of `qos` (DEADLINE, TIME_BASED_FILTER).
    pub fn apply_qos(&mut self, qos: &DataReaderQos) {
        self.deadline.set_period(qos.deadline.period);
        let sep = qos.time_based_filter.minimum_separation;
        self.min_separation_ns = if is_infinite(sep) {
            i64::MAX
        } else {
            i64::try_from(sep.as_nanos()).unwrap_or(i64::MAX)
        };
        if self.min_separation_ns == 0 {
            self.last_delivered.clear();
        }
        if qos.ownership == tessera_rtps::qos::Ownership::Exclusive && self.ownership.is_none() {
            let mut o = Ownership::default();
            for (w, s) in &self.writers {
                o.set_strength(*w, s.terms.strength);
            }
            self.ownership = Some(o);
        }
    }

    /// Whether the reader needs this state on its sample path: some policy is on, or some
    /// matched writer has a lifespan or a lease to watch.
    pub fn in_use(qos: &DataReaderQos) -> bool {
        !is_infinite(qos.deadline.period)
            || qos.ownership == tessera_rtps::qos::Ownership::Exclusive
            || !qos.time_based_filter.minimum_separation.is_zero()
    }

    /// A writer matched (or re-announced itself with new terms). Returns whether its terms need
    /// the per-sample path (a lifespan) or the timer (a lease).
    pub fn writer_matched(&mut self, w: Writer, terms: WriterTerms, now: Instant) -> bool {
        let e = self.writers.entry(w).or_insert(WriterState {
            terms,
            lease_due: None,
            alive: true,
        });
        e.terms = terms;
        e.lease_due = terms.lease.map(|l| now + l);
        if let Some(o) = &mut self.ownership {
            o.set_strength(w, terms.strength);
        }
        terms.lifespan_ns.is_some() || terms.lease.is_some()
    }

    /// A writer went away. Returns whether it was alive (it counted in `alive_count`).
    pub fn writer_unmatched(&mut self, w: Writer) -> bool {
        let alive = self.writers.remove(&w).is_none_or(|s| s.alive);
        if let Some(o) = &mut self.ownership {
            o.release_writer(w, true);
        }
        alive
    }

    /// Whether `w`'s liveliness holds (a writer without a lease to watch always does).
    pub fn writer_alive(&self, w: &Writer) -> bool {
        self.writers.get(w).is_none_or(|s| s.alive)
    }

    /// `w` showed it is alive at `now` (a sample, a HEARTBEAT). Returns true when it was not
    /// alive before (LIVELINESS_CHANGED).
    pub fn writer_seen(&mut self, w: &Writer, now: Instant) -> bool {
        let Some(s) = self.writers.get_mut(w) else {
            return false;
        };
        if let Some(l) = s.terms.lease {
            s.lease_due = Some(now + l);
        }
        let revived = !s.alive;
        s.alive = true;
        revived
    }

    /// Participant `prefix` asserted its MANUAL_BY_PARTICIPANT writers (`manual`) or its
    /// AUTOMATIC ones at `now`: their leases are renewed; those that come back alive are
    /// appended to `revived`.
    pub fn participant_asserted(
        &mut self,
        prefix: &[u8; 12],
        manual: bool,
        now: Instant,
        revived: &mut Vec<Writer>,
    ) {
        let kind = if manual {
            LivelinessKind::ManualByParticipant
        } else {
            LivelinessKind::Automatic
        };
        let mine: Vec<Writer> = self
            .writers
            .iter()
            .filter(|(g, s)| g[..12] == prefix[..] && s.terms.kind == kind)
            .map(|(g, _)| *g)
            .collect();
        for g in mine {
            if self.writer_seen(&g, now) {
                revived.push(g);
            }
        }
    }

    /// Writers whose lease ran out by `now`, marked not alive (they own nothing any more).
    pub fn expire_leases(&mut self, now: Instant, lost: &mut Vec<Writer>) {
        for (g, s) in self.writers.iter_mut() {
            if s.alive && s.lease_due.is_some_and(|d| d <= now) {
                s.alive = false;
                lost.push(*g);
            }
        }
        if let Some(o) = &mut self.ownership {
            for g in lost.iter() {
                o.release_writer(*g, false);
            }
        }
    }

    /// The earliest lease that can run out.
    pub fn next_lease(&self) -> Option<Instant> {
        self.writers
            .values()
            .filter(|s| s.alive)
            .filter_map(|s| s.lease_due)
            .min()
    }

    /// Decides whether a sample with data of instance `key` from `writer`, written at
    /// `source_ns` and received at `reception_ns` (wall clock, for LIFESPAN), enters the
    /// history.
    pub fn admit(
        &mut self,
        key: Key,
        writer: Writer,
        source_ns: i64,
        reception_ns: i64,
    ) -> Admission {
        let lifespan = self.writers.get(&writer).and_then(|w| w.terms.lifespan_ns);
        let expires = lifespan.map(|l| source_ns.saturating_add(l));
        if expires.is_some_and(|e| e <= reception_ns) {
            self.expired += 1;
            return Admission::Expired;
        }
        if let Some(o) = &mut self.ownership {
            if !o.admit(key, writer) {
                return Admission::NotOwner;
            }
        }
        if self.min_separation_ns > 0 {
            let now = self
                .separation_clock
                .unwrap_or(crate::subscription::monotonic_nanos)();
            if let Some(&last) = self.last_delivered.get(&key) {
                if now.saturating_sub(last) < self.min_separation_ns {
                    self.filtered += 1;
                    return Admission::Filtered;
                }
            }
            self.last_delivered.insert(key, now);
        }
        Admission::Deliver { expires }
    }

    /// Whether a dispose or unregister of `key` by `writer` applies: under exclusive ownership
    /// only the owner's (or anyone's when there is no owner). An unregistration by the owner
    /// releases the instance.
    pub fn admit_update(&mut self, key: Key, writer: Writer, unregister: bool) -> bool {
        let Some(o) = &mut self.ownership else {
            return true;
        };
        match o.owner(&key) {
            Some(owner) if owner != writer => {
                // Another writer's unregistration only ends its own registration.
                unregister
            }
            _ => {
                if unregister {
                    o.release(&key, writer);
                }
                true
            }
        }
    }

    /// The instance `key` missed its deadline: its owner gives it up.
    pub fn deadline_missed(&mut self, key: &Key) {
        if let Some(o) = &mut self.ownership {
            o.forget(key);
        }
    }

    /// The most per-instance entries (deadline, owner, filter) held: they are pruned to the
    /// history's instances when they grow past twice those, so that instances a peer creates
    /// and the history purges do not accumulate here.
    pub fn instance_entries(&self) -> usize {
        self.deadline
            .len()
            .max(self.last_delivered.len())
            .max(self.ownership.as_ref().map_or(0, Ownership::len))
    }

    /// Drops the per-instance entries of instances `exists` says are gone.
    pub fn prune(&mut self, mut exists: impl FnMut(&Key) -> bool) {
        self.deadline.retain(&mut exists);
        self.last_delivered.retain(|k, _| exists(k));
        if let Some(o) = &mut self.ownership {
            o.retain(&mut exists);
        }
    }

    /// Samples dropped because another writer owned their instance.
    pub fn not_owner_drops(&self) -> u64 {
        self.ownership.as_ref().map_or(0, |o| o.dropped)
    }
}

/// The liveliness lease a reader watches for a writer with `kind` and `lease`: manual writers
/// with a finite lease. AUTOMATIC writers live as long as their participant's lease, which
/// discovery watches.
pub(crate) fn watched_lease(kind: LivelinessKind, lease: Duration) -> Option<Duration> {
    (kind != LivelinessKind::Automatic && !is_infinite(lease)).then_some(lease)
}

/// A duration in ns for wall-clock arithmetic (`None`: infinite).
pub(crate) fn finite_ns(d: Duration) -> Option<i64> {
    (!is_infinite(d)).then(|| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;
    use tessera_rtps::qos::{Deadline, Ownership as OwnershipKind, TimeBasedFilter};

    thread_local! {
        /// The separation clock of these tests (ns), set by each test.
        static FAKE_NOW: Cell<i64> = const { Cell::new(0) };
    }

    fn fake_now() -> i64 {
        FAKE_NOW.with(Cell::get)
    }

    /// Policies for `qos` whose minimum separation runs on [`fake_now`].
    fn policies(qos: &DataReaderQos) -> ReaderPolicies {
        let mut p = ReaderPolicies::new(qos);
        p.separation_clock = Some(fake_now);
        p
    }

    /// `admit` with the separation clock at `now` and the sample received at `now` too.
    fn admit_at(p: &mut ReaderPolicies, k: Key, w: Writer, source: i64, now: i64) -> Admission {
        FAKE_NOW.with(|c| c.set(now));
        p.admit(k, w, source, now)
    }

    #[test]
    fn per_instance_entries_are_pruned_to_the_history() {
        let qos = DataReaderQos::default()
            .with_ownership(OwnershipKind::Exclusive)
            .with_deadline(Deadline {
                period: Duration::from_secs(1),
            })
            .with_time_based_filter(TimeBasedFilter {
                minimum_separation: Duration::from_millis(1),
            });
        let mut p = policies(&qos);
        let now = Instant::now();
        for i in 0..100u8 {
            let key = [i; 16];
            assert_eq!(
                admit_at(&mut p, key, [1; 16], 0, 10),
                Admission::Deliver { expires: None }
            );
            p.deadline.renew(key, now);
        }
        assert_eq!(p.instance_entries(), 100);
        p.prune(|k| k[0] < 3);
        assert_eq!(p.instance_entries(), 3);
        let mut missed = Vec::new();
        p.deadline
            .expire(now + Duration::from_millis(1500), &mut missed);
        assert_eq!(missed.len(), 3);
    }

    #[test]
    fn lifespan_filter_and_ownership_decide_in_that_order() {
        let qos = DataReaderQos::default()
            .with_ownership(OwnershipKind::Exclusive)
            .with_time_based_filter(TimeBasedFilter {
                minimum_separation: Duration::from_millis(100),
            });
        let mut p = policies(&qos);
        let now = Instant::now();
        let terms = |strength, lifespan_ns| WriterTerms {
            strength,
            lifespan_ns,
            lease: None,
            kind: LivelinessKind::Automatic,
        };
        p.writer_matched([1; 16], terms(1, Some(1_000)), now);
        p.writer_matched([2; 16], terms(2, None), now);
        let k = [9; 16];
        assert_eq!(admit_at(&mut p, k, [1; 16], 0, 2_000), Admission::Expired);
        assert_eq!(
            admit_at(&mut p, k, [1; 16], 1_500, 2_000),
            Admission::Deliver {
                expires: Some(2_500)
            }
        );
        assert_eq!(admit_at(&mut p, k, [2; 16], 0, 3_000), Admission::Filtered);
        assert_eq!(
            admit_at(&mut p, k, [2; 16], 0, 200_000_000),
            Admission::Deliver { expires: None }
        );
        assert_eq!(
            admit_at(&mut p, k, [1; 16], 400_000_000, 400_000_000),
            Admission::NotOwner
        );
        assert_eq!((p.expired, p.filtered, p.not_owner_drops()), (1, 1, 1));
    }

    /// The separation runs on the monotonic clock: reception times that step back a minute
    /// or forward an hour (wall-clock steps) neither hold samples back nor let them through.
    #[test]
    fn the_time_based_filter_ignores_wall_clock_steps() {
        let qos = DataReaderQos::default().with_time_based_filter(TimeBasedFilter {
            minimum_separation: Duration::from_millis(100),
        });
        let mut p = policies(&qos);
        let (k, w) = ([9; 16], [1; 16]);
        let ms = 1_000_000i64;
        let wall = 1_000_000 * ms;
        let at = |p: &mut ReaderPolicies, mono: i64, wall: i64| {
            FAKE_NOW.with(|c| c.set(mono));
            p.admit(k, w, 0, wall)
        };
        assert!(matches!(at(&mut p, 0, wall), Admission::Deliver { .. }));
        // The wall clock stepped back a minute 50 ms later: still within the separation.
        assert_eq!(at(&mut p, 50 * ms, wall - 60_000 * ms), Admission::Filtered);
        assert!(matches!(
            at(&mut p, 100 * ms, wall - 59_950 * ms),
            Admission::Deliver { .. }
        ));
        // And an hour forward 20 ms after that: still within the separation.
        assert_eq!(
            at(&mut p, 120 * ms, wall + 3_600_000 * ms),
            Admission::Filtered
        );
        assert_eq!(p.filtered, 2);
    }
}
