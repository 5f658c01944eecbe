//! Evaluation of a checked expression over one subject.

use super::check::{Arg, Node};
use super::parse::CmpOp;
use super::{FilterSubject, NotFilterable, Value};
use std::cmp::Ordering;

pub(crate) fn eval(
    node: &Node,
    s: &dyn FilterSubject,
    bound: &[Value<'static>],
) -> Result<bool, NotFilterable> {
    Ok(match node {
        Node::And(terms) => {
            for t in terms {
                if !eval(t, s, bound)? {
                    return Ok(false);
                }
            }
            true
        }
        Node::Or(terms) => {
            for t in terms {
                if eval(t, s, bound)? {
                    return Ok(true);
                }
            }
            false
        }
        Node::Not(a) => !eval(a, s, bound)?,
        Node::Cmp(op, l, r) => {
            let (l, r) = (value(l, s, bound)?, value(r, s, bound)?);
            compare(&l, &r).is_some_and(|o| match op {
                CmpOp::Eq => o == Ordering::Equal,
                CmpOp::Ne => o != Ordering::Equal,
                CmpOp::Lt => o == Ordering::Less,
                CmpOp::Le => o != Ordering::Greater,
                CmpOp::Gt => o == Ordering::Greater,
                CmpOp::Ge => o != Ordering::Less,
            })
        }
        Node::Between { x, lo, hi, negated } => {
            let x = value(x, s, bound)?;
            let (lo, hi) = (value(lo, s, bound)?, value(hi, s, bound)?);
            match (compare(&lo, &x), compare(&x, &hi)) {
                (Some(a), Some(b)) => {
                    (a != Ordering::Greater && b != Ordering::Greater) != *negated
                }
                _ => false,
            }
        }
        Node::Like {
            x,
            pattern,
            negated,
        } => {
            let x = value(x, s, bound)?;
            let p = value(pattern, s, bound)?;
            let mut buf = [0u8; 4];
            let text = match &x {
                Value::Str(t) => &**t,
                Value::Char(c) => &*c.encode_utf8(&mut buf),
                _ => return Ok(false),
            };
            match &p {
                Value::Str(p) => like(text, p) != *negated,
                _ => false,
            }
        }
    })
}

fn value<'a>(
    a: &'a Arg,
    s: &'a dyn FilterSubject,
    bound: &'a [Value<'static>],
) -> Result<Value<'a>, NotFilterable> {
    Ok(match a {
        Arg::Member(p) => s.member_value(p.steps())?,
        Arg::Const(v) => v.borrowed(),
        Arg::Param(slot) => bound.get(*slot).map_or(Value::Absent, Value::borrowed),
    })
}

/// Orders two values of comparable kinds; `None` when either is absent, a float is NaN or
/// the kinds do not meet (the predicate is then false).
pub(crate) fn compare(a: &Value<'_>, b: &Value<'_>) -> Option<Ordering> {
    use Value::*;
    #[allow(clippy::cast_precision_loss)]
    match (a, b) {
        (Int(x), Int(y)) => Some(x.cmp(y)),
        (Float(x), Float(y)) => x.partial_cmp(y),
        (Int(x), Float(y)) => (*x as f64).partial_cmp(y),
        (Float(x), Int(y)) => x.partial_cmp(&(*y as f64)),
        (Bool(x), Bool(y)) => Some(x.cmp(y)),
        (Char(x), Char(y)) => Some(x.cmp(y)),
        (Str(x), Str(y)) => Some(x.cmp(y)),
        (Char(x), Str(y)) => Some(char_vs_str(*x, y)),
        (Str(x), Char(y)) => Some(char_vs_str(*y, x).reverse()),
        (Enum(x), Enum(y)) => Some(x.cmp(y)),
        _ => None,
    }
}

fn char_vs_str(c: char, s: &str) -> Ordering {
    let mut buf = [0u8; 4];
    (*c.encode_utf8(&mut buf)).cmp(s)
}

/// SQL LIKE: `%` matches any run of characters (none included), `_` exactly one. Greedy with
/// one backtrack point (the last `%`), so O(len(text) × len(pattern)) at worst. ASCII text is
/// matched byte by byte without allocating; other text character by character.
pub(crate) fn like(text: &str, pattern: &str) -> bool {
    if text.is_ascii() && pattern.is_ascii() {
        like_in(text.as_bytes(), pattern.as_bytes(), b'%', b'_')
    } else {
        let t: Vec<char> = text.chars().collect();
        let p: Vec<char> = pattern.chars().collect();
        like_in(&t, &p, '%', '_')
    }
}

fn like_in<C: PartialEq + Copy>(t: &[C], p: &[C], any_run: C, any_one: C) -> bool {
    let (mut ti, mut pi) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && (p[pi] == any_one || (p[pi] != any_run && p[pi] == t[ti])) {
            ti += 1;
            pi += 1;
        } else if pi < p.len() && p[pi] == any_run {
            star = Some((pi, ti));
            pi += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == any_run)
}
