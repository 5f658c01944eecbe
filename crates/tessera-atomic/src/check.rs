//! The history checker: does a run's record of writes and deliveries keep ATOMIC's promises?
//!
//! A history lists every write (with its outcome as the writer saw it) and, per member, the
//! deliveries in the order the member made them. Values are unique per write. Checked, in time
//! linear in the size of the history:
//!
//! - **one value per index**: no two members (and no acknowledgment) disagree on a log index;
//! - **one sequence**: each member's deliveries are a gap-free run of one reference sequence (the
//!   longest member log), from its start — or from just after a snapshot the member installed;
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
    /// The member installed a snapshot up to this index before delivering: its log starts after.
    pub skipped_to: Option<u64>,
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
pub fn check(h: &History) -> Vec<Violation> {
    let mut out = Vec::new();
    let writes: HashMap<u64, &Write> = h.writes.iter().map(|w| (w.value, w)).collect();

    // The reference: the member log that reaches furthest.
    let reference: &[(u64, u64)] = h
        .members
        .iter()
        .max_by_key(|m| m.deliveries.last().map_or(0, |d| d.0))
        .map_or(&[], |m| &m.deliveries);
    let mut position: HashMap<u64, usize> = HashMap::with_capacity(reference.len());
    let mut seen_in_ref: HashMap<u64, u64> = HashMap::with_capacity(reference.len());
    for (pos, &(index, value)) in reference.iter().enumerate() {
        if position.insert(index, pos).is_some() {
            // The reference member delivered an index twice: reported below as NotPrefix.
            continue;
        }
        if seen_in_ref.insert(value, index).is_some() {
            out.push(Violation::Duplicate {
                member: "sequence".into(),
                value,
            });
        }
    }

    // Every member against the reference.
    let mut conflicts = HashSet::new();
    for m in &h.members {
        let mut seen = HashSet::with_capacity(m.deliveries.len());
        // Where this member's log must start in the reference.
        let mut expect = match m.skipped_to {
            None => 0,
            Some(s) => reference
                .iter()
                .position(|d| d.0 > s)
                .unwrap_or(reference.len()),
        };
        let mut in_step = true;
        for (p, &(index, value)) in m.deliveries.iter().enumerate() {
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
            match position.get(&index) {
                Some(&rp) => {
                    let rv = reference[rp].1;
                    if rv != value && conflicts.insert(index) {
                        out.push(Violation::ConflictingValues {
                            index,
                            a: rv,
                            b: value,
                        });
                    }
                    if in_step && rp != expect {
                        out.push(Violation::NotPrefix {
                            member: m.member.clone(),
                            position: p,
                            index,
                        });
                        in_step = false;
                    }
                    expect = rp + 1;
                }
                None => {
                    if in_step {
                        out.push(Violation::NotPrefix {
                            member: m.member.clone(),
                            position: p,
                            index,
                        });
                        in_step = false;
                    }
                }
            }
        }
        if m.stayed_up {
            for w in &h.writes {
                let index = match w.outcome {
                    Outcome::Ok(i) => Some(i),
                    Outcome::Acked => None,
                    _ => continue,
                };
                {
                    let covered = match (m.skipped_to, index) {
                        (Some(s), Some(i)) => i <= s,
                        // Index unknown: a member that skipped some of the log may not have it.
                        (Some(_), None) => true,
                        (None, _) => false,
                    };
                    if !covered && !seen.contains(&w.value) {
                        out.push(Violation::LostWrite {
                            member: m.member.clone(),
                            value: w.value,
                        });
                    }
                }
            }
        }
    }

    // Acknowledged indices against the sequence.
    for w in &h.writes {
        if let Outcome::Ok(i) = w.outcome {
            if let Some(&rp) = position.get(&i) {
                let rv = reference[rp].1;
                if rv != w.value && conflicts.insert(i) {
                    out.push(Violation::ConflictingValues {
                        index: i,
                        a: rv,
                        b: w.value,
                    });
                }
            }
        }
    }

    // Per-writer order along the sequence (writes listed per writer in invocation order).
    let mut last: HashMap<u64, (usize, u64)> = HashMap::new();
    for w in &h.writes {
        let Some(&index) = seen_in_ref.get(&w.value) else {
            continue;
        };
        let pos = position[&index];
        if let Some(&(prev_pos, prev_value)) = last.get(&w.writer) {
            if pos < prev_pos {
                out.push(Violation::WriterOrder {
                    writer: w.writer,
                    earlier: prev_value,
                    later: w.value,
                });
            }
        }
        last.insert(w.writer, (pos, w.value));
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
            skipped_to: None,
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
        h.members[2].skipped_to = Some(2);
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
