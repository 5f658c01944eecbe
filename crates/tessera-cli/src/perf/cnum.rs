//! C-library-compatible number scanning (`atoi`, `atof`, `strtod`, `scanf` `%u`/`%lu`/`%lld`).
//!
//! `ddsperf`'s command line is parsed with these C functions, and some of their quirks are
//! visible (e.g. `-k all` means keep-all because `atoi("all")` is 0, `10 Hz` is a valid rate
//! because the unit lookup skips blanks). Reproducing them exactly keeps `tessera perf` a
//! drop-in replacement. All functions are total: no panics on any input.

fn is_c_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

fn skip_space(s: &[u8], mut i: usize) -> usize {
    while i < s.len() && is_c_space(s[i]) {
        i += 1;
    }
    i
}

/// Scans an optionally signed decimal integer after optional white space. Returns
/// (negative, magnitude saturated at `u64::MAX`, bytes consumed); `None` if there is no digit.
fn scan_digits(s: &[u8]) -> Option<(bool, u64, bool, usize)> {
    let mut i = skip_space(s, 0);
    let mut neg = false;
    if i < s.len() && (s[i] == b'+' || s[i] == b'-') {
        neg = s[i] == b'-';
        i += 1;
    }
    let start = i;
    let mut v: u64 = 0;
    let mut overflow = false;
    while i < s.len() && s[i].is_ascii_digit() {
        match v
            .checked_mul(10)
            .and_then(|x| x.checked_add(u64::from(s[i] - b'0')))
        {
            Some(x) => v = x,
            None => {
                overflow = true;
                v = u64::MAX;
            }
        }
        i += 1;
    }
    if i == start {
        None
    } else {
        Some((neg, v, overflow, i))
    }
}

/// Like C `strtol(s, NULL, 10)` on a 64-bit `long`: saturates on overflow.
fn strtol_prefix(s: &[u8]) -> Option<(i64, usize)> {
    let (neg, mag, overflow, n) = scan_digits(s)?;
    let v = if neg {
        if overflow || mag > i64::MAX as u64 + 1 {
            i64::MIN
        } else {
            (mag as i128).wrapping_neg() as i64
        }
    } else if overflow || mag > i64::MAX as u64 {
        i64::MAX
    } else {
        mag as i64
    };
    Some((v, n))
}

/// C `atoi` as glibc implements it: `(int) strtol(s, NULL, 10)`; 0 when nothing parses.
pub fn atoi(s: &str) -> i32 {
    strtol_prefix(s.as_bytes()).map_or(0, |(v, _)| v as i32)
}

/// `scanf("%lu%n")`: value (strtoul semantics: a leading `-` negates modulo 2^64, overflow
/// saturates) and bytes consumed.
pub fn scan_ulong(s: &str) -> Option<(u64, usize)> {
    let (neg, mag, _overflow, n) = scan_digits(s.as_bytes())?;
    Some((if neg { mag.wrapping_neg() } else { mag }, n))
}

/// `scanf("%u%n")`: like [`scan_ulong`], then truncated to 32 bits as the C conversion does.
pub fn scan_uint(s: &str) -> Option<(u32, usize)> {
    scan_ulong(s).map(|(v, n)| (v as u32, n))
}

/// `scanf("%" SCNd64 "%n")`.
pub fn scan_i64(s: &str) -> Option<(i64, usize)> {
    strtol_prefix(s.as_bytes())
}

fn hex_val(b: u8) -> Option<u32> {
    (b as char).to_digit(16)
}

/// C `strtod` on the longest valid prefix (after optional white space): decimal and hexadecimal
/// floating point, `inf`, `infinity`, `nan`, `nan(chars)`, case-insensitively. Returns the value
/// and the number of bytes consumed, or `None` if no conversion could be performed.
pub fn strtod_prefix(s: &str) -> Option<(f64, usize)> {
    let b = s.as_bytes();
    let mut i = skip_space(b, 0);
    let mut neg = false;
    if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
        neg = b[i] == b'-';
        i += 1;
    }
    let sign = |v: f64| if neg { -v } else { v };
    let rest = &b[i..];
    let starts_ci = |p: &[u8]| rest.len() >= p.len() && rest[..p.len()].eq_ignore_ascii_case(p);
    if starts_ci(b"infinity") {
        return Some((sign(f64::INFINITY), i + 8));
    }
    if starts_ci(b"inf") {
        return Some((sign(f64::INFINITY), i + 3));
    }
    if starts_ci(b"nan") {
        let mut j = i + 3;
        if j < b.len() && b[j] == b'(' {
            let mut k = j + 1;
            while k < b.len() && (b[k].is_ascii_alphanumeric() || b[k] == b'_') {
                k += 1;
            }
            if k < b.len() && b[k] == b')' {
                j = k + 1;
            }
        }
        return Some((sign(f64::NAN), j));
    }
    if starts_ci(b"0x") {
        // Hexadecimal floating point: 0x h* [. h*] [p [+-] d+], at least one hex digit.
        let mut j = i + 2;
        let mut mant: f64 = 0.0;
        let mut exp: i64 = 0;
        let mut ndig = 0;
        while j < b.len() {
            if let Some(d) = hex_val(b[j]) {
                mant = mant * 16.0 + f64::from(d);
                ndig += 1;
                j += 1;
            } else {
                break;
            }
        }
        if j < b.len() && b[j] == b'.' {
            let mut k = j + 1;
            let mut fd = 0;
            while k < b.len() {
                if let Some(d) = hex_val(b[k]) {
                    mant = mant * 16.0 + f64::from(d);
                    exp -= 4;
                    fd += 1;
                    k += 1;
                } else {
                    break;
                }
            }
            if ndig + fd > 0 {
                ndig += fd;
                j = k;
            }
        }
        if ndig == 0 {
            // Only the "0" is a number; the 'x' is left over.
            return Some((sign(0.0), i + 1));
        }
        if j < b.len() && (b[j] == b'p' || b[j] == b'P') {
            if let Some((e, n)) = strtol_prefix_no_space(&b[j + 1..]) {
                exp = exp.saturating_add(e);
                j += 1 + n;
            }
        }
        let e = exp.clamp(-2000, 2000) as i32;
        return Some((sign(mant * 2f64.powi(e)), j));
    }
    // Decimal: d* [. d*] with at least one digit, then optional e [+-] d+.
    let mut j = i;
    let mut ndig = 0;
    while j < b.len() && b[j].is_ascii_digit() {
        j += 1;
        ndig += 1;
    }
    if j < b.len() && b[j] == b'.' {
        let mut k = j + 1;
        while k < b.len() && b[k].is_ascii_digit() {
            k += 1;
            ndig += 1;
        }
        if ndig > 0 {
            j = k;
        }
    }
    if ndig == 0 {
        return None;
    }
    let mant_end = j;
    if j < b.len() && (b[j] == b'e' || b[j] == b'E') {
        if let Some((_, n)) = strtol_prefix_no_space(&b[j + 1..]) {
            j += 1 + n;
        }
    }
    let text = &s[i..j];
    let v = text
        .parse::<f64>()
        .or_else(|_| s[i..mant_end].parse::<f64>())
        .unwrap_or(0.0);
    Some((sign(v), j))
}

/// A signed decimal integer with no leading white space (exponent digits).
fn strtol_prefix_no_space(b: &[u8]) -> Option<(i64, usize)> {
    if b.first().is_some_and(|c| is_c_space(*c)) {
        return None;
    }
    strtol_prefix(b)
}

/// C `atof`: [`strtod_prefix`] or 0.
pub fn atof(s: &str) -> f64 {
    strtod_prefix(s).map_or(0.0, |(v, _)| v)
}

/// `scanf("%lf%n")` (same as [`strtod_prefix`] for the inputs that matter here).
pub fn scan_double(s: &str) -> Option<(f64, usize)> {
    strtod_prefix(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atoi_like_c() {
        assert_eq!(atoi("12"), 12);
        assert_eq!(atoi("  -7x"), -7);
        assert_eq!(atoi("all"), 0);
        assert_eq!(atoi(""), 0);
        assert_eq!(atoi("+3"), 3);
        assert_eq!(atoi("99999999999999999999"), -1); // (int) LONG_MAX
    }

    #[test]
    fn unsigned_scans() {
        assert_eq!(scan_uint("1k"), Some((1, 1)));
        assert_eq!(scan_uint("-1"), Some((u32::MAX, 2)));
        assert_eq!(scan_uint(" 42"), Some((42, 3)));
        assert_eq!(scan_uint("x"), None);
        assert_eq!(scan_uint("4294967296"), Some((0, 10)));
        assert_eq!(scan_ulong("18446744073709551616"), Some((u64::MAX, 20)));
        assert_eq!(scan_i64("-5"), Some((-5, 2)));
    }

    #[test]
    fn strtod_forms() {
        assert_eq!(strtod_prefix("10kHz"), Some((10.0, 2)));
        assert_eq!(strtod_prefix("1.5"), Some((1.5, 3)));
        assert_eq!(strtod_prefix(".5x"), Some((0.5, 2)));
        assert_eq!(strtod_prefix("5."), Some((5.0, 2)));
        assert_eq!(strtod_prefix("1e3Hz"), Some((1000.0, 3)));
        assert_eq!(strtod_prefix("1eHz"), Some((1.0, 1)));
        assert_eq!(strtod_prefix("1e+2"), Some((100.0, 4)));
        assert_eq!(strtod_prefix("-2.5e-1"), Some((-0.25, 7)));
        assert_eq!(strtod_prefix("inf"), Some((f64::INFINITY, 3)));
        assert_eq!(strtod_prefix("Infinity!"), Some((f64::INFINITY, 8)));
        assert!(strtod_prefix("nanHz").unwrap().0.is_nan());
        assert_eq!(strtod_prefix("nanHz").unwrap().1, 3);
        assert_eq!(strtod_prefix("0x10Hz"), Some((16.0, 4)));
        assert_eq!(strtod_prefix("0x1p3"), Some((8.0, 5)));
        assert_eq!(strtod_prefix("0xg"), Some((0.0, 1)));
        assert_eq!(strtod_prefix("."), None);
        assert_eq!(strtod_prefix("Hz"), None);
        assert_eq!(strtod_prefix(""), None);
        assert_eq!(atof("abc"), 0.0);
        assert_eq!(atof(" 2.5s"), 2.5);
    }
}
