//! Seeded fault schedules: the same seed, member count, duration and nemeses give the same
//! schedule, step for step.
//!
//! Faults start every 1.5–5 s after a 5 s warm-up (the group forms undisturbed) and last 2–8 s,
//! ending by the run's duration. Each fault makes some members *faulty* (killed, paused, on the
//! minority side of a partition, cut off one way, losing packets, rejoining after a restart);
//! a fault starts only on members that are not faulty already, and only while the members that
//! are up stay a majority (`n - 2f > 0` with `f` faulty of `n`).
//!
//! A killed or restarted process comes back as a new member; the leader adds it and then removes
//! the old id. Until that is done the member stays faulty: [`REJOIN_MS`] past the heal. (Before
//! the leader removed dead ids, each replacement left a dead voter and the budget had to count
//! them: a group of three could take one kill or restart per run.)

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
}

impl Nemesis {
    /// Every nemesis.
    pub const ALL: [Nemesis; 5] = [
        Nemesis::Kill,
        Nemesis::Pause,
        Nemesis::Partition,
        Nemesis::Restart,
        Nemesis::Loss,
    ];

    /// Parses a comma-separated list (`kill,pause,partition,restart,loss`).
    pub fn parse_list(s: &str) -> Result<Vec<Nemesis>, String> {
        let mut out = BTreeSet::new();
        for w in s.split(',').map(str::trim).filter(|w| !w.is_empty()) {
            out.insert(match w {
                "kill" => Nemesis::Kill,
                "pause" => Nemesis::Pause,
                "partition" => Nemesis::Partition,
                "restart" => Nemesis::Restart,
                "loss" => Nemesis::Loss,
                _ => {
                    return Err(format!(
                        "unknown nemesis {w:?} (kill, pause, partition, restart, loss)"
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
}

impl Fault {
    /// The members this fault makes faulty.
    pub fn faulty(&self) -> Vec<usize> {
        match self {
            Fault::Kill { member }
            | Fault::Pause { member }
            | Fault::OneWay { member, .. }
            | Fault::LossBurst { member, .. }
            | Fault::Restart { member } => vec![*member],
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
            let fault = match rng.pick(nemeses) {
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
        // By time; at one time heals first (stable: starts keep their order).
        steps.sort_by_key(|s| (s.at_ms, matches!(s.action, Action::Start(_))));
        Schedule { steps, faults }
    }
}

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

    /// Replays many schedules and checks at every step that the members up (a replaced one
    /// counted down until it rejoined) stay a majority and that everything heals by the end.
    #[test]
    fn the_up_members_stay_a_majority_and_everything_heals_in_time() {
        for members in [3, 5] {
            let mut kinds = std::collections::HashSet::new();
            let mut replacements = 0usize;
            for seed in 0..300 {
                let s = Schedule::generate(members, seed, 60_000, &Nemesis::ALL);
                let mut faulty: Vec<usize> = Vec::new();
                let mut open = BTreeSet::new();
                // (until, members) of replaced members still rejoining.
                let mut rejoining: Vec<(u64, Vec<usize>)> = Vec::new();
                let mut replaced_in_run = 0usize;
                for step in &s.steps {
                    rejoining.retain(|(until, _)| *until > step.at_ms);
                    assert!(step.at_ms >= WARMUP_MS && step.at_ms <= 60_000);
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
                            kinds.insert(std::mem::discriminant(started));
                            open.insert(step.id);
                        }
                        Action::Heal => {
                            assert!(open.remove(&step.id));
                            for m in f {
                                let i = faulty.iter().position(|&x| x == m).unwrap();
                                faulty.remove(i);
                            }
                            if matches!(fault, Fault::Kill { .. } | Fault::Restart { .. }) {
                                rejoining.push((step.at_ms + REJOIN_MS, fault.faulty()));
                                replaced_in_run += 1;
                            }
                        }
                    }
                    let down = faulty.len() + rejoining.iter().map(|r| r.1.len()).sum::<usize>();
                    assert!(
                        2 * (members - down) > members,
                        "seed {seed}, {members} members:\n{s}"
                    );
                }
                assert!(open.is_empty() && faulty.is_empty());
                replacements = replacements.max(replaced_in_run);
            }
            assert_eq!(kinds.len(), 6, "every kind of fault occurs");
            // No budget for dead voters any more: a group of three takes several replacements
            // in one run.
            assert!(
                replacements >= 3,
                "{members} members: at most {replacements} replacements"
            );
        }
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
