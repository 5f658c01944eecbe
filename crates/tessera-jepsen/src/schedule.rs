//! Seeded fault schedules: the same seed, member count, duration and nemeses give the same
//! schedule, step for step.
//!
//! Faults start every 1.5–5 s after a 5 s warm-up (the group forms undisturbed) and last 2–8 s,
//! ending by the run's duration. Each fault makes some members *faulty* (killed, paused, on the
//! minority side of a partition, cut off one way, losing packets, rejoining after a restart, its
//! clock jumped); a fault starts only on members that are not faulty already, and only while
//! the members that are up stay a majority (`n - 2f > 0` with `f` faulty of `n`).
//!
//! A killed or restarted process comes back as a new member; the leader adds it and then removes
//! the old id. Until that is done the member stays faulty: [`REJOIN_MS`] past the heal. (Before
//! the leader removed dead ids, each replacement left a dead voter and the budget had to count
//! them: a group of three could take one kill or restart per run.)
//!
//! Clock jumps come from a second pass with a random stream of their own, laid over the other
//! faults where the same rules leave room (the member free, the faulty ones still a minority).
//! So adding `clock` to a set of nemeses changes nothing else of a seed's schedule; the jumps
//! are numbered after the other faults, last 2–10 s, step by 1 s to 10 min either way, and
//! leave [`CLOCK_SETTLE_MS`] before the next fault on their member.

use std::collections::BTreeSet;
use std::fmt;

/// A kind of fault the schedule may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Nemesis {
    /// SIGKILL a member; a new incarnation starts when the fault heals.
    Kill,
    /// SIGSTOP a member; SIGCONT when the fault heals.
    Pause,
    /// Cut a minority of the hosts off the rest (both ways, nftables).
    Partition,
    /// Stop a member cleanly and start a new incarnation at once.
    Restart,
    /// One-way cuts and loss bursts (nftables).
    Loss,
    /// Jump a member's wall clock forward or back, and back again when the fault heals.
    Clock,
}

impl Nemesis {
    /// Every nemesis.
    pub const ALL: [Nemesis; 6] = [
        Nemesis::Kill,
        Nemesis::Pause,
        Nemesis::Partition,
        Nemesis::Restart,
        Nemesis::Loss,
        Nemesis::Clock,
    ];

    /// Parses a comma-separated list (`kill,pause,partition,restart,loss,clock`).
    pub fn parse_list(s: &str) -> Result<Vec<Nemesis>, String> {
        let mut out = BTreeSet::new();
        for w in s.split(',').map(str::trim).filter(|w| !w.is_empty()) {
            out.insert(match w {
                "kill" => Nemesis::Kill,
                "pause" => Nemesis::Pause,
                "partition" => Nemesis::Partition,
                "restart" => Nemesis::Restart,
                "loss" => Nemesis::Loss,
                "clock" => Nemesis::Clock,
                _ => {
                    return Err(format!(
                        "unknown nemesis {w:?} (kill, pause, partition, restart, loss, clock)"
                    ))
                }
            });
        }
        Ok(out.into_iter().collect())
    }
}

/// One fault, on members by index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// SIGKILL; heal: a new incarnation.
    Kill {
        /// The member.
        member: usize,
    },
    /// SIGSTOP; heal: SIGCONT.
    Pause {
        /// The member.
        member: usize,
    },
    /// The minority side drops everything from the others and the others drop everything
    /// from it; heal: the rules go.
    Partition {
        /// The minority side.
        minority: Vec<usize>,
    },
    /// `member` drops everything from `from` (they still hear it).
    OneWay {
        /// The member that goes deaf.
        member: usize,
        /// Whom it stops hearing.
        from: Vec<usize>,
    },
    /// `member` drops `pct` % of what it receives.
    LossBurst {
        /// The member.
        member: usize,
        /// Loss percentage.
        pct: u8,
    },
    /// A clean stop and a new incarnation at once; faulty until the heal (while it rejoins).
    Restart {
        /// The member.
        member: usize,
    },
    /// `member`'s wall clock (CLOCK_REALTIME) jumps by `offset_s` seconds; its monotonic clock
    /// does not. Heal: it jumps back to the true time.
    ClockJump {
        /// The member.
        member: usize,
        /// Seconds, forward (> 0) or back (< 0).
        offset_s: i64,
    },
}

impl Fault {
    /// The members this fault makes faulty.
    pub fn faulty(&self) -> Vec<usize> {
        match self {
            Fault::Kill { member }
            | Fault::Pause { member }
            | Fault::OneWay { member, .. }
            | Fault::LossBurst { member, .. }
            | Fault::Restart { member }
            | Fault::ClockJump { member, .. } => vec![*member],
            Fault::Partition { minority } => minority.clone(),
        }
    }
}

fn names(ms: &[usize]) -> String {
    ms.iter()
        .map(|m| format!("m{m}"))
        .collect::<Vec<_>>()
        .join(",")
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fault::Kill { member } => write!(f, "kill -9 m{member}"),
            Fault::Pause { member } => write!(f, "pause m{member}"),
            Fault::Partition { minority } => write!(f, "partition {} | rest", names(minority)),
            Fault::OneWay { member, from } => {
                write!(f, "one-way cut: m{member} stops hearing {}", names(from))
            }
            Fault::LossBurst { member, pct } => write!(f, "loss burst {pct}% into m{member}"),
            Fault::Restart { member } => write!(f, "restart m{member}"),
            Fault::ClockJump { member, offset_s } => {
                write!(f, "clock jump m{member} {offset_s:+} s")
            }
        }
    }
}

/// What a step does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Fault `id` starts.
    Start(Fault),
    /// Fault `id` heals.
    Heal,
}

/// One step of a schedule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// Milliseconds after the members started.
    pub at_ms: u64,
    /// The fault it starts or heals (numbered in start order).
    pub id: usize,
    /// Start or heal.
    pub action: Action,
}

/// A whole schedule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schedule {
    /// Steps by time (at one time, heals first).
    pub steps: Vec<Step>,
    /// Fault `id`, for the heal steps.
    pub faults: Vec<Fault>,
}

/// Milliseconds of undisturbed start (the group forms).
pub const WARMUP_MS: u64 = 5_000;

/// Milliseconds a killed or restarted member stays faulty after the heal: the new process is
/// discovered, added as a learner, caught up, made a voter, and the old id removed.
pub const REJOIN_MS: u64 = 6_000;

/// Milliseconds after a clock jump heals before another fault may start on its member:
/// libfaketime reads the offset file again within a second and the member's watcher looks
/// every 200 ms, so a kill sooner could keep it from ever seeing its clock come back.
pub const CLOCK_SETTLE_MS: u64 = 2_000;

impl Fault {
    /// Until when, for a fault healed at `end_ms`, its members count as faulty.
    pub fn faulty_until(&self, end_ms: u64) -> u64 {
        match self {
            Fault::Kill { .. } | Fault::Restart { .. } => end_ms + REJOIN_MS,
            _ => end_ms,
        }
    }
}

/// SplitMix64: tiny and fixed, so a seed means the same schedule in every build.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator for `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `lo..hi` (`lo` when the range is empty).
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        if hi <= lo {
            return lo;
        }
        lo + self.next_u64() % (hi - lo)
    }

    /// One of `items` (which must not be empty).
    pub fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.range(0, items.len() as u64) as usize]
    }

    /// `k` distinct items of `items`, in `items`' order.
    pub fn choose(&mut self, items: &[usize], k: usize) -> Vec<usize> {
        let mut pool = items.to_vec();
        let mut out = Vec::with_capacity(k);
        for _ in 0..k.min(pool.len()) {
            let i = self.range(0, pool.len() as u64) as usize;
            out.push(pool.swap_remove(i));
        }
        out.sort_unstable();
        out
    }
}

impl Schedule {
    /// The schedule for `members` members, `seed`, `duration_ms` and the allowed `nemeses`.
    pub fn generate(members: usize, seed: u64, duration_ms: u64, nemeses: &[Nemesis]) -> Schedule {
        let mut s = Schedule::without_clock(members, seed, duration_ms, nemeses);
        if nemeses.contains(&Nemesis::Clock) {
            s.add_clock_jumps(members, seed, duration_ms);
        }
        s
    }

    /// The first pass: every fault but clock jumps.
    fn without_clock(members: usize, seed: u64, duration_ms: u64, nemeses: &[Nemesis]) -> Schedule {
        // Without clock jumps in this list a seed's other faults are the same with `clock` as
        // without it.
        let nemeses: Vec<Nemesis> = nemeses
            .iter()
            .copied()
            .filter(|n| *n != Nemesis::Clock)
            .collect();
        let mut rng = Rng::new(seed);
        let mut steps = Vec::new();
        let mut faults = Vec::new();
        // (faulty until, fault) of the faults whose members are still faulty.
        let mut active: Vec<(u64, Fault)> = Vec::new();
        let mut t = WARMUP_MS;
        loop {
            t += rng.range(1_500, 5_000);
            if t + 2_000 > duration_ms {
                break;
            }
            active.retain(|(until, _)| *until > t);
            let faulty: BTreeSet<usize> = active.iter().flat_map(|a| a.1.faulty()).collect();
            // Whether `extra` more faulty members keep the up members a majority: n - 2f > 0.
            let fits = |extra: usize| members as i64 - 2 * (faulty.len() + extra) as i64 > 0;
            let healthy: Vec<usize> = (0..members).filter(|m| !faulty.contains(m)).collect();
            if !fits(1) || nemeses.is_empty() {
                continue;
            }
            // The most members a partition's minority side may take.
            let room = (1..=healthy.len()).take_while(|&k| fits(k)).count();
            let end = (t + rng.range(2_000, 8_000)).min(duration_ms);
            let fault = match rng.pick(&nemeses) {
                Nemesis::Kill => Fault::Kill {
                    member: rng.pick(&healthy),
                },
                Nemesis::Pause => Fault::Pause {
                    member: rng.pick(&healthy),
                },
                Nemesis::Restart => Fault::Restart {
                    member: rng.pick(&healthy),
                },
                Nemesis::Partition => {
                    let k = rng.range(1, room as u64 + 1) as usize;
                    Fault::Partition {
                        minority: rng.choose(&healthy, k),
                    }
                }
                Nemesis::Loss => {
                    let member = rng.pick(&healthy);
                    if rng.range(0, 2) == 0 {
                        let others: Vec<usize> = (0..members).filter(|&m| m != member).collect();
                        let k = rng.range(1, others.len() as u64 + 1) as usize;
                        Fault::OneWay {
                            member,
                            from: rng.choose(&others, k),
                        }
                    } else {
                        Fault::LossBurst {
                            member,
                            pct: rng.range(20, 80) as u8,
                        }
                    }
                }
                // Filtered out above: the clock pass below places them.
                Nemesis::Clock => continue,
            };
            let id = faults.len();
            active.push((fault.faulty_until(end), fault.clone()));
            steps.push(Step {
                at_ms: t,
                id,
                action: Action::Start(fault.clone()),
            });
            steps.push(Step {
                at_ms: end,
                id,
                action: Action::Heal,
            });
            faults.push(fault);
        }
        let mut s = Schedule { steps, faults };
        s.sort_steps();
        s
    }

    /// By time; at one time heals first (stable: starts keep their order).
    fn sort_steps(&mut self) {
        self.steps
            .sort_by_key(|s| (s.at_ms, matches!(s.action, Action::Start(_))));
    }

    /// (from, faulty until, members) of every fault.
    fn faulty_spans(&self) -> Vec<(u64, u64, Vec<usize>)> {
        let mut started = vec![None; self.faults.len()];
        let mut spans = Vec::new();
        for step in &self.steps {
            let fault = &self.faults[step.id];
            match step.action {
                Action::Start(_) => started[step.id] = Some(step.at_ms),
                Action::Heal => {
                    if let Some(from) = started[step.id] {
                        spans.push((from, fault.faulty_until(step.at_ms), fault.faulty()));
                    }
                }
            }
        }
        spans
    }

    /// The second pass: clock jumps on members left free by the faults already there.
    fn add_clock_jumps(&mut self, members: usize, seed: u64, duration_ms: u64) {
        let mut rng = Rng::new(seed ^ CLOCK_STREAM);
        let mut spans = self.faulty_spans();
        // The most members faulty at once that leave the rest a majority.
        let budget = members.saturating_sub(1) / 2;
        let faulty_at = |spans: &[(u64, u64, Vec<usize>)], x: u64| -> usize {
            spans
                .iter()
                .filter(|(from, until, _)| *from <= x && x < *until)
                .map(|s| s.2.len())
                .sum()
        };
        // (heal, member) of the jumps placed.
        let mut settling: Vec<(u64, usize)> = Vec::new();
        let mut t = WARMUP_MS;
        loop {
            t += rng.range(1_500, 6_000);
            if t + MIN_CLOCK_JUMP_MS > duration_ms {
                break;
            }
            if faulty_at(&spans, t) >= budget {
                continue;
            }
            // Per member, the latest heal from `t` on: before the first moment another fault
            // would leave too few up (counts rise only at starts), and settled before its own
            // next fault.
            let mut free: Vec<(usize, u64)> = Vec::new();
            for m in 0..members {
                let busy = |(from, until, ms): &(u64, u64, Vec<usize>)| {
                    *from <= t && t < *until && ms.contains(&m)
                };
                if spans.iter().any(busy)
                    || settling
                        .iter()
                        .any(|&(end, x)| x == m && end <= t && t < end + CLOCK_SETTLE_MS)
                {
                    continue;
                }
                let mut last_heal = duration_ms;
                for (from, _, ms) in &spans {
                    if *from <= t {
                        continue;
                    }
                    if ms.contains(&m) {
                        last_heal = last_heal.min(from.saturating_sub(CLOCK_SETTLE_MS));
                    } else if faulty_at(&spans, *from) >= budget {
                        last_heal = last_heal.min(*from);
                    }
                }
                if last_heal >= t + MIN_CLOCK_JUMP_MS {
                    free.push((m, last_heal));
                }
            }
            if free.is_empty() {
                continue;
            }
            let (member, last_heal) = free[rng.range(0, free.len() as u64) as usize];
            let end = t + rng.range(
                MIN_CLOCK_JUMP_MS,
                (last_heal - t).min(MAX_CLOCK_JUMP_MS) + 1,
            );
            // Seconds, tens of seconds or minutes, forward or back.
            let (lo, hi) = rng.pick(&[(1, 10), (10, 60), (60, 600)]);
            let magnitude = rng.range(lo, hi + 1) as i64;
            let offset_s = if rng.range(0, 2) == 0 {
                magnitude
            } else {
                -magnitude
            };
            let fault = Fault::ClockJump { member, offset_s };
            let id = self.faults.len();
            spans.push((t, fault.faulty_until(end), fault.faulty()));
            settling.push((end, member));
            self.steps.push(Step {
                at_ms: t,
                id,
                action: Action::Start(fault.clone()),
            });
            self.steps.push(Step {
                at_ms: end,
                id,
                action: Action::Heal,
            });
            self.faults.push(fault);
        }
        self.sort_steps();
    }
}

/// Mixed into the seed for the clock pass's own random stream.
const CLOCK_STREAM: u64 = 0x636c_6f63_6b6a_756d;

/// The shortest and longest clock jump, in milliseconds.
const MIN_CLOCK_JUMP_MS: u64 = 2_000;
const MAX_CLOCK_JUMP_MS: u64 = 10_000;

impl fmt::Display for Schedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for s in &self.steps {
            let secs = s.at_ms as f64 / 1000.0;
            match &s.action {
                Action::Start(fault) => writeln!(f, "  {secs:6.1}s  #{:<3} {fault}", s.id)?,
                Action::Heal => writeln!(
                    f,
                    "  {secs:6.1}s  #{:<3} heal ({})",
                    s.id, self.faults[s.id]
                )?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_gives_the_same_schedule() {
        let a = Schedule::generate(5, 42, 60_000, &Nemesis::ALL);
        let b = Schedule::generate(5, 42, 60_000, &Nemesis::ALL);
        assert_eq!(a, b);
        assert_ne!(a, Schedule::generate(5, 43, 60_000, &Nemesis::ALL));
        assert!(a.faults.len() >= 3, "{a}");
    }

    /// Replays `s` and checks at every step that the members up (a replaced one counted down
    /// until it rejoined) stay a majority, that a fault starts only on members not faulty, and
    /// that everything heals by the end. Returns the kinds of fault started and how many
    /// members were replaced.
    fn replay(members: usize, duration_ms: u64, s: &Schedule) -> (Vec<String>, usize) {
        let mut kinds = Vec::new();
        let mut faulty: Vec<usize> = Vec::new();
        let mut open = BTreeSet::new();
        // (until, members) of replaced members still rejoining.
        let mut rejoining: Vec<(u64, Vec<usize>)> = Vec::new();
        let mut replaced = 0usize;
        for step in &s.steps {
            rejoining.retain(|(until, _)| *until > step.at_ms);
            assert!(step.at_ms >= WARMUP_MS && step.at_ms <= duration_ms, "{s}");
            let fault = &s.faults[step.id];
            let f = fault.faulty();
            match &step.action {
                Action::Start(started) => {
                    assert!(f.iter().all(|m| !faulty.contains(m)), "{s}");
                    assert!(
                        rejoining
                            .iter()
                            .all(|(_, r)| f.iter().all(|m| !r.contains(m))),
                        "{s}"
                    );
                    faulty.extend(&f);
                    kinds.push(format!("{:?}", std::mem::discriminant(started)));
                    assert!(open.insert(step.id), "{s}");
                }
                Action::Heal => {
                    assert!(open.remove(&step.id), "{s}");
                    for m in f {
                        let i = faulty.iter().position(|&x| x == m).unwrap();
                        faulty.remove(i);
                    }
                    if matches!(fault, Fault::Kill { .. } | Fault::Restart { .. }) {
                        rejoining.push((step.at_ms + REJOIN_MS, fault.faulty()));
                        replaced += 1;
                    }
                }
            }
            let down = faulty.len() + rejoining.iter().map(|r| r.1.len()).sum::<usize>();
            assert!(2 * (members - down) > members, "{members} members:\n{s}");
        }
        assert!(open.is_empty() && faulty.is_empty(), "{s}");
        (kinds, replaced)
    }

    #[test]
    fn the_up_members_stay_a_majority_and_everything_heals_in_time() {
        for members in [3, 5] {
            let mut kinds = std::collections::HashSet::new();
            let mut replacements = 0usize;
            for seed in 0..300 {
                let s = Schedule::generate(members, seed, 60_000, &Nemesis::ALL);
                let (k, replaced) = replay(members, 60_000, &s);
                kinds.extend(k);
                replacements = replacements.max(replaced);
            }
            assert_eq!(kinds.len(), 7, "every kind of fault occurs");
            // No budget for dead voters any more: a group of three takes several replacements
            // in one run.
            assert!(
                replacements >= 3,
                "{members} members: at most {replacements} replacements"
            );
        }
    }

    /// Laid over the other faults, clock jumps keep the minority rule; alone they jump both
    /// ways, by seconds to minutes, and are all healed by the end.
    #[test]
    fn clock_jumps_keep_the_rules_and_heal_in_time() {
        for members in [3, 5] {
            let (mut forward, mut back, mut overlaid) = (0, 0, 0);
            let mut together = 0;
            for seed in 0..300 {
                let mixed = Schedule::generate(members, seed, 60_000, &Nemesis::ALL);
                replay(members, 60_000, &mixed);
                // Nothing starts on a member while its clock may still be settling.
                for heal in mixed.steps.iter().filter(|x| x.action == Action::Heal) {
                    let Fault::ClockJump { member, .. } = mixed.faults[heal.id] else {
                        continue;
                    };
                    assert!(
                        !mixed.steps.iter().any(|x| {
                            matches!(&x.action, Action::Start(f) if f.faulty().contains(&member))
                                && (heal.at_ms..heal.at_ms + CLOCK_SETTLE_MS).contains(&x.at_ms)
                        }),
                        "{mixed}"
                    );
                }
                overlaid += mixed
                    .faults
                    .iter()
                    .filter(|f| matches!(f, Fault::ClockJump { .. }))
                    .count();
                let s = Schedule::generate(members, seed, 60_000, &[Nemesis::Clock]);
                replay(members, 60_000, &s);
                let mut open = 0usize;
                for step in &s.steps {
                    let Fault::ClockJump { offset_s, .. } = s.faults[step.id] else {
                        panic!("not a clock jump:\n{s}");
                    };
                    assert!((1..=600).contains(&offset_s.abs()), "{s}");
                    match step.action {
                        Action::Start(_) => {
                            open += 1;
                            together = together.max(open);
                            if offset_s > 0 {
                                forward += 1;
                            } else {
                                back += 1;
                            }
                        }
                        Action::Heal => open -= 1,
                    }
                }
                for id in 0..s.faults.len() {
                    let at = |start: bool| {
                        s.steps
                            .iter()
                            .find(|x| x.id == id && matches!(x.action, Action::Start(_)) == start)
                            .map(|x| x.at_ms)
                            .unwrap()
                    };
                    let len = at(false) - at(true);
                    assert!(
                        (MIN_CLOCK_JUMP_MS..=MAX_CLOCK_JUMP_MS).contains(&len),
                        "{s}"
                    );
                }
            }
            assert!(
                forward > 100 && back > 100,
                "{forward} forward, {back} back"
            );
            // Up to the minority at once: one of three, two of five.
            assert_eq!(together, (members - 1) / 2);
            assert!(
                overlaid > 100,
                "{members} members: {overlaid} jumps among the rest"
            );
        }
    }

    /// Adding `clock` leaves every other fault of a seed where it was, ids included.
    #[test]
    fn clock_jumps_leave_the_other_faults_alone() {
        let others: Vec<Nemesis> = Nemesis::ALL
            .into_iter()
            .filter(|n| *n != Nemesis::Clock)
            .collect();
        for nemeses in [others, vec![Nemesis::Kill, Nemesis::Partition]] {
            let mut with_clock = nemeses.clone();
            with_clock.push(Nemesis::Clock);
            for members in [3, 5] {
                for seed in 0..200 {
                    let a = Schedule::generate(members, seed, 60_000, &nemeses);
                    let b = Schedule::generate(members, seed, 60_000, &with_clock);
                    let k = a.faults.len();
                    assert_eq!(a.faults, b.faults[..k]);
                    let kept: Vec<Step> = b.steps.iter().filter(|x| x.id < k).cloned().collect();
                    assert_eq!(a.steps, kept);
                }
            }
        }
    }

    /// tests/interop/jepsen_short.sh runs this schedule and expects these faults.
    #[test]
    fn the_short_runs_schedule_is_pinned() {
        let s = Schedule::generate(3, 2, 20_000, &[Nemesis::Kill, Nemesis::Partition]);
        assert_eq!(
            s.to_string(),
            "     7.6s  #0   partition m1 | rest\n    13.8s  #0   heal (partition m1 | rest)\n    \
             15.9s  #1   kill -9 m2\n    18.6s  #1   heal (kill -9 m2)\n"
        );
    }

    #[test]
    fn only_the_chosen_nemeses_are_used() {
        let s = Schedule::generate(3, 7, 60_000, &[Nemesis::Pause]);
        assert!(s.faults.iter().all(|f| matches!(f, Fault::Pause { .. })));
        assert_eq!(
            Nemesis::parse_list("kill,partition").unwrap(),
            vec![Nemesis::Kill, Nemesis::Partition]
        );
        assert!(Nemesis::parse_list("flood").is_err());
    }
}
