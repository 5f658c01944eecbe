//! Partition matching: whether a writer's and a reader's partition lists meet, with POSIX-style
//! `fnmatch` patterns.

/// Whether a partition name contains `fnmatch` wildcard characters (`*`, `?`, `[`).
pub fn is_wildcard(name: &str) -> bool {
    name.bytes().any(|b| matches!(b, b'*' | b'?' | b'['))
}

/// Whether a writer's and a reader's partition lists have a partition in common.
///
/// An empty list is the default partition `[""]`. Names are compared exactly unless one side is
/// a pattern (`*`, `?`, `[...]` as POSIX `fnmatch`, `\` escaping), which is matched against the
/// other side's name; two patterns never match each other (DDS 1.4 §2.2.3.13), even if equal.
pub fn partitions_match(offered: &[String], requested: &[String]) -> bool {
    fn names(list: &[String]) -> impl Iterator<Item = &str> + Clone {
        list.iter()
            .map(String::as_str)
            .chain(list.is_empty().then_some(""))
    }
    let b = names(requested);
    names(offered).any(|x| b.clone().any(|y| partition_names_match(x, y)))
}

fn partition_names_match(a: &str, b: &str) -> bool {
    match (is_wildcard(a), is_wildcard(b)) {
        (false, false) => a == b,
        (true, false) => fnmatch(a, b),
        (false, true) => fnmatch(b, a),
        (true, true) => false,
    }
}

/// POSIX-style `fnmatch` without flags: `*` matches any run of characters, `?` one character,
/// `[...]` a character class (ranges `a-z`, negation with a leading `!` or `^`, a leading `]`
/// is literal), `\x` the character `x`. A `[` without a closing `]` is a literal `[`.
///
/// Runs in O(len(pattern) × len(name)) at worst (single-star backtracking), without allocation.
pub fn fnmatch(pattern: &str, name: &str) -> bool {
    let (mut pi, mut ni) = (0usize, 0usize);
    // Position in the pattern just after the last `*`, and the name position it is tried at.
    let mut star: Option<(usize, usize)> = None;
    loop {
        if let Some(pc) = pattern[pi..].chars().next() {
            let nc = name[ni..].chars().next();
            let advanced = match pc {
                '*' => {
                    pi += 1;
                    star = Some((pi, ni));
                    continue;
                }
                '?' => nc.map(|c| (pi + 1, c)),
                '[' => match (nc, class_match(&pattern[pi + 1..], nc)) {
                    (Some(c), Some((true, used))) => Some((pi + 1 + used, c)),
                    (_, Some((false, _))) | (None, _) => None,
                    // Unterminated class: a literal '['.
                    (Some(c), None) => (c == '[').then_some((pi + 1, c)),
                },
                '\\' => {
                    let lit = pattern[pi + 1..].chars().next();
                    match (lit, nc) {
                        (Some(l), Some(c)) if l == c => Some((pi + 1 + l.len_utf8(), c)),
                        // A trailing backslash matches itself.
                        (None, Some('\\')) => Some((pi + 1, '\\')),
                        _ => None,
                    }
                }
                lit => nc.filter(|c| *c == lit).map(|c| (pi + lit.len_utf8(), c)),
            };
            if let Some((next_pi, c)) = advanced {
                pi = next_pi;
                ni += c.len_utf8();
                continue;
            }
        } else if ni == name.len() {
            return true;
        }
        // Mismatch: let the last star swallow one more character, if any.
        match star {
            Some((sp, sn)) => match name[sn..].chars().next() {
                Some(c) => {
                    let next = sn + c.len_utf8();
                    star = Some((sp, next));
                    pi = sp;
                    ni = next;
                }
                None => return false,
            },
            None => return false,
        }
    }
}

/// Matches `c` against the class body `body` (the text after `[`). Returns whether it matched
/// and how many bytes of `body` the class used (through the closing `]`), or `None` if the class
/// is not terminated.
fn class_match(body: &str, c: Option<char>) -> Option<(bool, usize)> {
    let mut chars = body.char_indices().peekable();
    let mut negate = false;
    if let Some(&(_, '!' | '^')) = chars.peek() {
        negate = true;
        chars.next();
    }
    let mut matched = false;
    let mut first = true;
    while let Some((i, ch)) = chars.next() {
        if ch == ']' && !first {
            return Some((matched != negate, i + 1));
        }
        first = false;
        let lo = if ch == '\\' { chars.next()?.1 } else { ch };
        // A range `lo-hi`, unless the '-' is last before ']'.
        let mut hi = lo;
        let mut look = chars.clone();
        if let Some((_, '-')) = look.next() {
            if let Some((_, h)) = look.next() {
                if h != ']' {
                    chars.next();
                    chars.next();
                    hi = h;
                }
            }
        }
        if let Some(c) = c {
            if lo <= c && c <= hi {
                matched = true;
            }
        }
    }
    None
}
