//! The history checker: does a run's record of writes and deliveries keep ATOMIC's promises?
//!
//! A history lists every write (with its outcome as the writer saw it) and, per member, the
//! deliveries in the order the member made them. Values are unique per write. Checked, in time
//! linear in the size of the history:
//!
//! - **one value per index**: no two members (and no acknowledgment) disagree on a log index;
//! - **one sequence**: each member's deliveries are a gap-free run of the one sequence all of them
//!   deliver (log order), from its start — or from just after a snapshot the member installed;
//! - **no lost write**: an acknowledged write is delivered at every member that stayed up to the
//!   end (and caught up: the history is taken after the run quiesced);
//! - **no duplicate**: no value twice in the sequence or in a member's log;
//! - **no failed write delivered** (a failure must mean "not committed"); indeterminate writes
//!   may or may not appear;
//! - **per-writer order**: a writer's delivered values keep the order it wrote them in;
//! - and no delivered value that nobody wrote.
//!
//! The Jepsen queue checkers (inconsistent offsets, lost write, duplicate, poll skip, G1a) are
//! the model; this one is ours because no Rust crate checks distributed histories.

use std::collections::{HashMap, HashSet};

/// How a write ended, as its writer saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Acknowledged: committed, at this log index.
    Ok(u64),
    /// Acknowledged, at an index the writer was not told (a DDS `write` returns no index).
    Acked,
    /// Refused: must never be delivered.
    Failed,
    /// Timed out or the writer crashed: may or may not be delivered.
    Indeterminate,
}

/// One write.
#[derive(Clone, Debug)]
pub struct Write {
    /// Who wrote it (writes of one writer are listed in the order it made them).
    pub writer: u64,
    /// Unique per write.
    pub value: u64,
    /// Its outcome.
    pub outcome: Outcome,
}

/// What one member delivered.
#[derive(Clone, Debug, Default)]
pub struct MemberLog {
    /// A name for reports.
    pub member: String,
    /// Up (and caught up) at the end of the run: it must have every acknowledged write.
    pub stayed_up: bool,
    /// Snapshots the member installed instead of delivering part of the log: `(position, s)`
    /// means that before its delivery at `position` it skipped everything up to index `s`
    /// (reported to its readers as lost). Ascending positions.
    pub snapshots: Vec<(usize, u64)>,
    /// (log index, value) in delivery order.
    pub deliveries: Vec<(u64, u64)>,
}

/// A run's history.
#[derive(Clone, Debug, Default)]
pub struct History {
    /// Every write, per writer in invocation order.
    pub writes: Vec<Write>,
    /// Every member's deliveries.
    pub members: Vec<MemberLog>,
}

/// A broken promise.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Violation {
    /// Two values at one index.
    ConflictingValues {
        /// The index.
        index: u64,
        /// One value.
        a: u64,
        /// The other.
        b: u64,
    },
    /// A member's log leaves the reference sequence (a gap, a reordering or a divergence).
    NotPrefix {
        /// The member.
        member: String,
        /// Position in the member's log.
        position: usize,
        /// The index it delivered there.
        index: u64,
    },
    /// An acknowledged write missing at a member that stayed up.
    LostWrite {
        /// The member.
        member: String,
        /// The value.
        value: u64,
    },
    /// A value delivered twice.
    Duplicate {
        /// Where it was seen twice (`"sequence"` for two indices in the reference).
        member: String,
        /// The value.
        value: u64,
    },
    /// A write that failed was delivered.
    FailedDelivered {
        /// The member.
        member: String,
        /// The value.
        value: u64,
    },
    /// A writer's values delivered out of the order it wrote them.
    WriterOrder {
        /// The writer.
        writer: u64,
        /// Written first, delivered later.
        earlier: u64,
        /// Written later, delivered first.
        later: u64,
    },
    /// A delivered value nobody wrote.
    UnknownValue {
        /// The member.
        member: String,
        /// The value.
        value: u64,
    },
}

/// Checks `h`; an empty result means every promise held.
///
/// The sequence is never materialized (nor sorted): the log index is the total order, so it is
/// enough that all members agree on the value at each index and on the index that follows each
/// one. A member that skipped an index the others delivered disagrees on a successor.
pub fn check(h: &History) -> Vec<Violation> {
    let mut out = Vec::new();
    let writes: HashMap<u64, &Write> = h.writes.iter().map(|w| (w.value, w)).collect();

    // One value per index, across members.
    let mut value_at: HashMap<u64, u64> = HashMap::new();
    let mut conflicts = HashSet::new();
    for m in &h.members {
        for &(index, value) in &m.deliveries {
            let v = *value_at.entry(index).or_insert(value);
            if v != value && conflicts.insert(index) {
                out.push(Violation::ConflictingValues {
                    index,
                    a: v,
                    b: value,
                });
            }
        }
    }
    // Acknowledged indices hold the acknowledged value.
    for w in &h.writes {
        if let Outcome::Ok(i) = w.outcome {
            if let Some(&v) = value_at.get(&i) {
                if v != w.value && conflicts.insert(i) {
                    out.push(Violation::ConflictingValues {
                        index: i,
                        a: v,
                        b: w.value,
                    });
                }
            }
        }
    }
    // No value at two indices.
    let mut index_of: HashMap<u64, u64> = HashMap::with_capacity(value_at.len());
    for (&index, &value) in &value_at {
        if index_of.insert(value, index).is_some() {
            out.push(Violation::Duplicate {
                member: "sequence".into(),
                value,
            });
        }
    }

    // The index after each one: the smallest successor any member delivered (a member that
    // delivered a larger one skipped something). Pairs across a snapshot say nothing.
    let mut next: HashMap<u64, u64> = HashMap::with_capacity(value_at.len());
    for m in &h.members {
        let mut snaps = m.snapshots.iter().peekable();
        for (p, pair) in m.deliveries.windows(2).enumerate() {
            while snaps.next_if(|s| s.0 <= p).is_some() {}
            if snaps.peek().is_some_and(|s| s.0 == p + 1) {
                continue;
            }
            let (a, b) = (pair[0].0, pair[1].0);
            if b > a {
                let n = next.entry(a).or_insert(b);
                *n = (*n).min(b);
            }
        }
    }
    let first = value_at.keys().copied().min();
    // The first index after a snapshot up to `s` (a scan per snapshot; snapshots are rare).
    let after = |s: u64| value_at.keys().copied().filter(|&i| i > s).min();

    for m in &h.members {
        let mut seen = HashSet::with_capacity(m.deliveries.len());
        for &(_, value) in &m.deliveries {
            if !seen.insert(value) {
                out.push(Violation::Duplicate {
                    member: m.member.clone(),
                    value,
                });
            }
            match writes.get(&value) {
                None => out.push(Violation::UnknownValue {
                    member: m.member.clone(),
                    value,
                }),
                Some(w) if w.outcome == Outcome::Failed => out.push(Violation::FailedDelivered {
                    member: m.member.clone(),
                    value,
                }),
                Some(_) => {}
            }
        }
        // Gap-free: each delivery is the one after the previous, or the first after a snapshot.
        // Skipped ranges (exclusive start, inclusive end) excuse missing writes below.
        let mut skipped: Vec<(u64, u64)> = Vec::new();
        let mut snaps = m.snapshots.iter().peekable();
        let mut prev: Option<u64> = None;
        for (p, &(index, _)) in m.deliveries.iter().enumerate() {
            let mut expected = match prev {
                None => first,
                Some(a) => next.get(&a).copied(),
            };
            while let Some(&(_, s)) = snaps.next_if(|x| x.0 <= p) {
                skipped.push((prev.unwrap_or(0), s));
                expected = after(s);
            }
            if Some(index) != expected {
                out.push(Violation::NotPrefix {
                    member: m.member.clone(),
                    position: p,
                    index,
                });
                // One report per member: the rest of its log is off the sequence anyway.
                break;
            }
            prev = Some(index);
        }
        for &(_, s) in snaps {
            skipped.push((prev.unwrap_or(0), s));
        }
        if m.stayed_up {
            for w in &h.writes {
                if !matches!(w.outcome, Outcome::Ok(_) | Outcome::Acked) || seen.contains(&w.value)
                {
                    continue;
                }
                // Where it was committed: acknowledged there, or delivered there elsewhere.
                let index = match w.outcome {
                    Outcome::Ok(i) => Some(i),
                    _ => index_of.get(&w.value).copied(),
                };
                let covered = match index {
                    Some(i) => skipped.iter().any(|&(lo, hi)| lo < i && i <= hi),
                    // Delivered nowhere: lost unless this member skipped part of the log.
                    None => !skipped.is_empty(),
                };
                if !covered {
                    out.push(Violation::LostWrite {
                        member: m.member.clone(),
                        value: w.value,
                    });
                }
            }
        }
    }

    // Per-writer order along the log (writes listed per writer in invocation order).
    let mut last: HashMap<u64, (u64, u64)> = HashMap::new();
    for w in &h.writes {
        let Some(&index) = index_of.get(&w.value) else {
            continue;
        };
        if let Some(&(prev_index, prev_value)) = last.get(&w.writer) {
            if index < prev_index {
                out.push(Violation::WriterOrder {
                    writer: w.writer,
                    earlier: prev_value,
                    later: w.value,
                });
            }
        }
        last.insert(w.writer, (index, w.value));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(writer: u64, value: u64, outcome: Outcome) -> Write {
        Write {
            writer,
            value,
            outcome,
        }
    }

    fn member(name: &str, deliveries: &[(u64, u64)]) -> MemberLog {
        MemberLog {
            member: name.into(),
            stayed_up: true,
            snapshots: Vec::new(),
            deliveries: deliveries.to_vec(),
        }
    }

    /// Checks `h` and asserts that `x` is among the violations found.
    fn assert_found(h: &History, x: Violation) -> Vec<Violation> {
        let v = check(h);
        assert!(v.contains(&x), "{x:?} not in {v:?}");
        v
    }

    /// Writer 1 writes 10, 11; writer 2 writes 20, 21 (indeterminate); all delivered at 2..=5
    /// (index 1 is a leader's blank entry).
    fn clean() -> History {
        let log = [(2, 10), (3, 20), (4, 11), (5, 21)];
        History {
            writes: vec![
                w(1, 10, Outcome::Ok(2)),
                w(1, 11, Outcome::Ok(4)),
                w(2, 20, Outcome::Ok(3)),
                w(2, 21, Outcome::Indeterminate),
                w(3, 30, Outcome::Indeterminate),
            ],
            members: vec![member("a", &log), member("b", &log), member("c", &log[..2])],
        }
    }

    #[test]
    fn a_clean_history_passes() {
        let mut h = clean();
        h.members[2].stayed_up = false; // c crashed after two deliveries: a prefix is fine.
        assert_eq!(check(&h), vec![]);
    }

    #[test]
    fn two_values_at_one_index() {
        let mut h = clean();
        h.members[1].deliveries[1] = (3, 21);
        h.members[1].deliveries.pop();
        assert_found(
            &h,
            Violation::ConflictingValues {
                index: 3,
                a: 20,
                b: 21,
            },
        );
    }

    #[test]
    fn an_acknowledged_index_that_holds_another_value() {
        let mut h = clean();
        h.writes[0].outcome = Outcome::Ok(3);
        assert!(check(&h).contains(&Violation::ConflictingValues {
            index: 3,
            a: 20,
            b: 10
        }));
    }

    #[test]
    fn a_gap_in_a_member_log() {
        let mut h = clean();
        h.members[2].stayed_up = false;
        h.members[2].deliveries = vec![(2, 10), (4, 11)];
        let v = check(&h);
        assert!(
            v.iter().any(
                |x| matches!(x, Violation::NotPrefix { member, position: 1, .. } if member == "c")
            ),
            "{v:?}"
        );
    }

    #[test]
    fn a_member_log_that_does_not_start_at_the_beginning() {
        let mut h = clean();
        h.members[2].stayed_up = false;
        h.members[2].deliveries = vec![(3, 20), (4, 11)];
        assert!(check(&h)
            .iter()
            .any(|x| matches!(x, Violation::NotPrefix { position: 0, .. })));
        // ... unless it installed a snapshot that covers what it skipped.
        h.members[2].snapshots = vec![(0, 2)];
        assert_eq!(check(&h), vec![]);
    }

    #[test]
    fn an_acknowledged_write_missing_at_a_live_member() {
        let h = clean(); // c stayed up but has only two deliveries
        let v = assert_found(
            &h,
            Violation::LostWrite {
                member: "c".into(),
                value: 11,
            },
        );
        // The indeterminate 21 is not required.
        assert!(!v
            .iter()
            .any(|x| matches!(x, Violation::LostWrite { value: 21, .. })));
    }

    #[test]
    fn an_acked_write_without_index_is_still_required_everywhere() {
        let mut h = clean();
        h.writes[1].outcome = Outcome::Acked;
        assert_found(
            &h,
            Violation::LostWrite {
                member: "c".into(),
                value: 11,
            },
        );
        h.members[2].stayed_up = false;
        assert_eq!(check(&h), vec![]);
    }

    /// A member that installed a snapshot and then delivered the furthest does not make the
    /// others look broken (the first version of the checker took it as the reference).
    #[test]
    fn a_snapshot_member_ahead_of_the_others_is_fine() {
        let mut h = clean();
        h.members[2].stayed_up = false;
        h.writes.push(w(1, 12, Outcome::Indeterminate));
        h.members.push(MemberLog {
            member: "d".into(),
            stayed_up: true,
            snapshots: vec![(0, 3)],
            deliveries: vec![(4, 11), (5, 21), (7, 12)],
        });
        assert_eq!(check(&h), vec![]);
        // ... but a gap after its snapshot is caught.
        h.members[3].deliveries.remove(0);
        assert_found(
            &h,
            Violation::NotPrefix {
                member: "d".into(),
                position: 0,
                index: 5,
            },
        );
    }

    /// A member that fell behind and installed a snapshot in the middle of its log.
    #[test]
    fn a_snapshot_in_the_middle_of_a_member_log() {
        let mut h = clean();
        h.members[2].deliveries = vec![(2, 10), (5, 21)];
        h.members[2].snapshots = vec![(1, 4)];
        assert_eq!(check(&h), vec![]);
        // Without the snapshot it is a gap and a lost write.
        h.members[2].snapshots.clear();
        let v = assert_found(
            &h,
            Violation::NotPrefix {
                member: "c".into(),
                position: 1,
                index: 5,
            },
        );
        assert!(v.contains(&Violation::LostWrite {
            member: "c".into(),
            value: 11
        }));
        // A snapshot that does not reach the next delivery leaves a gap.
        h.members[2].snapshots = vec![(1, 3)];
        assert_found(
            &h,
            Violation::NotPrefix {
                member: "c".into(),
                position: 1,
                index: 5,
            },
        );
    }

    #[test]
    fn a_value_delivered_twice() {
        let mut h = clean();
        h.members[2].stayed_up = false;
        for m in &mut h.members[..2] {
            m.deliveries.push((6, 10));
        }
        let v = assert_found(
            &h,
            Violation::Duplicate {
                member: "a".into(),
                value: 10,
            },
        );
        assert!(v.contains(&Violation::Duplicate {
            member: "sequence".into(),
            value: 10
        }));
    }

    #[test]
    fn a_failed_write_delivered() {
        let mut h = clean();
        h.members[2].stayed_up = false;
        h.writes[3].outcome = Outcome::Failed;
        assert_found(
            &h,
            Violation::FailedDelivered {
                member: "a".into(),
                value: 21,
            },
        );
    }

    #[test]
    fn a_writer_order_broken() {
        let mut h = clean();
        h.members[2].stayed_up = false;
        let log = vec![(2, 11), (3, 20), (4, 10), (5, 21)];
        h.members[0].deliveries = log.clone();
        h.members[1].deliveries = log;
        h.members[2].deliveries.clear();
        h.writes[0].outcome = Outcome::Ok(4);
        h.writes[1].outcome = Outcome::Ok(2);
        let v = check(&h);
        assert_eq!(
            v,
            vec![Violation::WriterOrder {
                writer: 1,
                earlier: 10,
                later: 11
            }]
        );
    }

    #[test]
    fn a_value_nobody_wrote() {
        let mut h = clean();
        h.members[2].stayed_up = false;
        for m in &mut h.members[..2] {
            m.deliveries.push((6, 99));
        }
        assert!(check(&h).contains(&Violation::UnknownValue {
            member: "a".into(),
            value: 99
        }));
    }

    #[test]
    fn divergent_members_are_caught_whichever_is_the_reference() {
        let mut h = clean();
        h.members[2].stayed_up = false;
        h.members[2].deliveries.clear();
        h.members[1].deliveries = vec![(2, 10), (3, 20), (5, 21), (6, 11)];
        h.writes[1].outcome = Outcome::Indeterminate;
        let v = check(&h);
        assert!(
            v.iter().any(|x| matches!(x, Violation::NotPrefix { .. })),
            "{v:?}"
        );
    }
}
