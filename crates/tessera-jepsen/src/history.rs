//! Member history files and their merge into a [`History`] for the checker.
//!
//! One file per member incarnation, one event per line, written as it happens:
//!
//! ```text
//! start                    the process started
//! invoke <v>               a write of value v begins
//! ok <v>                   ... it was acknowledged (committed)
//! fail <v> <error>         ... it was refused: nothing was appended, it must never be delivered
//! info <v> <error>         ... indeterminate (timed out after it may have been appended)
//! deliver <v> <position>   the reader delivered v as its position-th sample
//! stop <end|leave>         a clean exit: at the end of the run, or a graceful restart
//! ```
//!
//! Values are unique: the writer id in the upper 32 bits, a per-writer counter below. A write
//! with no outcome line (the process was killed during it) is indeterminate.

use std::collections::HashMap;
use std::fmt;

use tessera_atomic::check::{History, MemberLog, Outcome, Write};

/// The writer id a value carries.
pub fn writer_of(value: u64) -> u64 {
    value >> 32
}

/// The value of a writer's `n`-th write.
pub fn value_of(writer: u64, n: u32) -> u64 {
    (writer << 32) | u64::from(n)
}

/// A line that is not one of the events above.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// The member file.
    pub member: String,
    /// 1-based line number.
    pub line: usize,
    /// The line.
    pub text: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} line {}: not a history event: {:?}",
            self.member, self.line, self.text
        )
    }
}

impl std::error::Error for ParseError {}

/// One parsed member file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MemberHistory {
    /// The member's name (for reports).
    pub member: String,
    /// Writes in invocation order.
    pub writes: Vec<(u64, Outcome)>,
    /// (position, value) in delivery order.
    pub deliveries: Vec<(u64, u64)>,
    /// It logged `stop end`: up at the end of the run and stopped cleanly.
    pub ended: bool,
}

fn num(s: Option<&str>) -> Option<u64> {
    s?.parse().ok()
}

/// Parses one member's file. A last line without its newline (the process was killed while
/// writing it) is ignored; any other unknown line is an error.
pub fn parse_member(member: &str, text: &str) -> Result<MemberHistory, ParseError> {
    let mut h = MemberHistory {
        member: member.to_string(),
        ..Default::default()
    };
    let mut pending: HashMap<u64, usize> = HashMap::new();
    let complete = text.ends_with('\n');
    let lines: Vec<&str> = text.lines().collect();
    for (i, line) in lines.iter().enumerate() {
        let mut it = line.split_ascii_whitespace();
        let word = it.next();
        let v = num(it.next());
        let ok = match (word, v) {
            (Some("start"), _) => true,
            (Some("stop"), _) => {
                h.ended = line.trim_end() == "stop end";
                true
            }
            (Some("invoke"), Some(v)) => {
                pending.insert(v, h.writes.len());
                h.writes.push((v, Outcome::Indeterminate));
                true
            }
            (Some(w @ ("ok" | "fail" | "info")), Some(v)) => match pending.remove(&v) {
                Some(at) => {
                    h.writes[at].1 = match w {
                        "ok" => Outcome::Acked,
                        "fail" => Outcome::Failed,
                        _ => Outcome::Indeterminate,
                    };
                    true
                }
                None => false,
            },
            (Some("deliver"), Some(v)) => match num(it.next()) {
                Some(pos) => {
                    h.deliveries.push((pos, v));
                    true
                }
                None => false,
            },
            _ => false,
        };
        let torn_tail = !complete && i + 1 == lines.len();
        if !ok && !torn_tail {
            return Err(ParseError {
                member: member.to_string(),
                line: i + 1,
                text: line.to_string(),
            });
        }
    }
    Ok(h)
}

/// Merges member histories into one [`History`]. A member "stayed up" when it ended the run
/// cleanly (`stop end`): the controller stops members only after the healed group quiesced,
/// so such a member must hold every acknowledged write.
pub fn merge(members: &[MemberHistory]) -> History {
    let mut h = History::default();
    for m in members {
        for &(value, outcome) in &m.writes {
            h.writes.push(Write {
                writer: writer_of(value),
                value,
                outcome,
            });
        }
        h.members.push(MemberLog {
            member: m.member.clone(),
            stayed_up: m.ended,
            snapshots: Vec::new(),
            deliveries: m.deliveries.clone(),
        });
    }
    h
}

/// Counts for the report.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Acknowledged writes.
    pub ok: usize,
    /// Refused writes.
    pub failed: usize,
    /// Indeterminate writes (timed out, or the writer was killed).
    pub indeterminate: usize,
}

/// Write outcomes of `h`.
pub fn counts(h: &History) -> Counts {
    let mut c = Counts::default();
    for w in &h.writes {
        match w.outcome {
            Outcome::Ok(_) | Outcome::Acked => c.ok += 1,
            Outcome::Failed => c.failed += 1,
            Outcome::Indeterminate => c.indeterminate += 1,
        }
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use tessera_atomic::check::{check, Violation};

    const A: u64 = 1 << 32; // writer 1's values: A + n
    const B: u64 = 2 << 32;

    /// Three members, writers 1 and 2, all delivering A+1, B+1, A+2, B+2 in that order.
    fn files() -> Vec<(String, String)> {
        let log = |pos_vals: &[(u64, u64)]| -> String {
            pos_vals
                .iter()
                .map(|(p, v)| format!("deliver {v} {p}\n"))
                .collect()
        };
        let seq = [(1, A + 1), (2, B + 1), (3, A + 2), (4, B + 2)];
        let w1 = format!(
            "start\ninvoke {}\nok {}\ninvoke {}\nok {}\ninvoke {}\nfail {} timeout\n",
            A + 1,
            A + 1,
            A + 2,
            A + 2,
            A + 3,
            A + 3
        );
        let w2 = format!(
            "start\ninvoke {}\nok {}\ninvoke {}\ninfo {} indeterminate\n",
            B + 1,
            B + 1,
            B + 2,
            B + 2
        );
        vec![
            ("m0".into(), format!("{w1}{}stop end\n", log(&seq))),
            ("m1".into(), format!("{w2}{}stop end\n", log(&seq))),
            ("m2".into(), format!("start\n{}stop end\n", log(&seq))),
        ]
    }

    fn parse_all(files: &[(String, String)]) -> History {
        let ms: Vec<MemberHistory> = files
            .iter()
            .map(|(m, t)| parse_member(m, t).unwrap())
            .collect();
        merge(&ms)
    }

    fn edit(files: &mut [(String, String)], member: usize, from: &str, to: &str) {
        let t = &mut files[member].1;
        assert!(t.contains(from), "{from:?} not in {t}");
        *t = t.replacen(from, to, 1);
    }

    /// `member` delivers `a`'s value at `b`'s position and the other way round.
    fn swap(files: &mut [(String, String)], member: usize, a: (u64, u64), b: (u64, u64)) {
        let line = |pos: u64, v: u64| format!("deliver {v} {pos}\n");
        edit(files, member, &line(a.0, a.1), &line(a.0, b.1));
        edit(files, member, &line(b.0, b.1), &line(b.0, a.1));
    }

    #[test]
    fn a_clean_parsed_history_passes() {
        let h = parse_all(&files());
        assert_eq!(
            counts(&h),
            Counts {
                ok: 3,
                failed: 1,
                indeterminate: 1
            }
        );
        assert!(h.members.iter().all(|m| m.stayed_up));
        assert_eq!(check(&h), vec![]);
    }

    #[test]
    fn a_duplicate_delivery_is_caught() {
        let mut f = files();
        edit(
            &mut f,
            2,
            "stop end",
            &format!("deliver {} 5\nstop end", A + 1),
        );
        let v = check(&parse_all(&f));
        assert!(
            v.contains(&Violation::Duplicate {
                member: "m2".into(),
                value: A + 1
            }),
            "{v:?}"
        );
    }

    #[test]
    fn a_lost_acknowledged_write_is_caught() {
        let mut f = files();
        // m2 stayed up but never delivered A+2 (acknowledged); its later deliveries shift.
        edit(&mut f, 2, &format!("deliver {} 3\n", A + 2), "");
        edit(
            &mut f,
            2,
            &format!("deliver {} 4\n", B + 2),
            &format!("deliver {} 3\n", B + 2),
        );
        let v = check(&parse_all(&f));
        assert!(
            v.contains(&Violation::LostWrite {
                member: "m2".into(),
                value: A + 2
            }),
            "{v:?}"
        );
    }

    #[test]
    fn a_reordered_member_is_caught() {
        let mut f = files();
        // m1 delivers B+1 and A+1 swapped: two values at positions 1 and 2.
        swap(&mut f, 1, (1, A + 1), (2, B + 1));
        let v = check(&parse_all(&f));
        assert!(
            v.iter()
                .any(|x| matches!(x, Violation::ConflictingValues { index: 1, .. })),
            "{v:?}"
        );
    }

    #[test]
    fn a_divergent_index_is_caught() {
        let mut f = files();
        // m0 delivers an indeterminate write at position 4 where the others have none: fine
        // alone, but m2 delivers a different value there.
        edit(
            &mut f,
            2,
            &format!("deliver {} 4\n", B + 2),
            &format!("deliver {} 4\n", A + 3),
        );
        let v = check(&parse_all(&f));
        assert!(
            v.iter()
                .any(|x| matches!(x, Violation::ConflictingValues { index: 4, .. })),
            "{v:?}"
        );
        // A+3 failed: delivering it is a violation of its own.
        assert!(v.contains(&Violation::FailedDelivered {
            member: "m2".into(),
            value: A + 3
        }));
    }

    #[test]
    fn a_writer_order_broken_across_members_is_caught() {
        let mut f = files();
        for m in 0..3 {
            swap(&mut f, m, (1, A + 1), (3, A + 2));
        }
        let v = check(&parse_all(&f));
        assert!(
            v.contains(&Violation::WriterOrder {
                writer: 1,
                earlier: A + 1,
                later: A + 2
            }),
            "{v:?}"
        );
    }

    #[test]
    fn a_killed_member_is_not_required_to_have_everything() {
        let mut f = files();
        // m2 was killed after two deliveries, mid-line.
        f[2].1 = format!("start\ndeliver {} 1\ndeliver {} 2\ndeliv", A + 1, B + 1);
        let h = parse_all(&f);
        assert!(!h.members[2].stayed_up);
        assert_eq!(check(&h), vec![]);
    }

    #[test]
    fn a_write_cut_short_by_a_kill_is_indeterminate() {
        let h = merge(&[parse_member("m", &format!("start\ninvoke {}\n", A + 9)).unwrap()]);
        assert_eq!(h.writes[0].outcome, Outcome::Indeterminate);
    }

    #[test]
    fn garbage_in_the_middle_is_an_error() {
        let e = parse_member("m", "start\nhello\nstop end\n").unwrap_err();
        assert_eq!(e.line, 2);
        assert!(
            parse_member("m", "start\nok 5\n").is_err(),
            "an outcome without its invoke"
        );
    }
}
