//! Scalar values of DDS-XML: booleans, integers with `LENGTH_UNLIMITED`, durations with the
//! infinity spellings, enumerators, and octet sequences.

use super::dom::Node;
use super::error::{QosXmlError, XmlWarning};
use std::time::Duration;
use tessera_rtps::qos::INFINITE;

/// Records that `node` is ignored, with why.
pub(crate) fn warn(warnings: &mut Vec<XmlWarning>, node: &Node, message: impl Into<String>) {
    warnings.push(XmlWarning {
        at: node.at.clone(),
        element: node.name.clone(),
        message: message.into(),
    });
}

/// `true`/`false` (any case), `1`/`0`, and RTI's `BOOLEAN_TRUE`/`BOOLEAN_FALSE`.
pub(crate) fn boolean(node: &Node) -> Result<bool, QosXmlError> {
    let v = node.text.trim();
    let v = v.strip_prefix("DDS_").unwrap_or(v);
    match v.to_ascii_lowercase().as_str() {
        "true" | "1" | "boolean_true" => Ok(true),
        "false" | "0" | "boolean_false" => Ok(false),
        _ => Err(node.invalid(format!("`{v}` is not a boolean (true or false)"))),
    }
}

/// A boolean attribute of `node`, `false` when absent; errors name it `element@attribute`.
pub(crate) fn bool_attr(node: &Node, attr: &str) -> Result<bool, QosXmlError> {
    match node.attr(attr) {
        None => Ok(false),
        Some(v) => boolean(&Node {
            name: format!("{}@{attr}", node.name),
            attrs: Vec::new(),
            children: Vec::new(),
            text: v.trim().to_string(),
            at: node.at.clone(),
        }),
    }
}

fn integer(node: &Node) -> Result<i64, QosXmlError> {
    let v = node.text.trim();
    let (neg, digits) = match v.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, v.strip_prefix('+').unwrap_or(v)),
    };
    let parsed = match digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
    {
        Some(hex) => i64::from_str_radix(hex, 16),
        None => digits.parse::<i64>(),
    };
    match parsed {
        Ok(n) if !digits.starts_with(['-', '+']) => Ok(if neg { -n } else { n }),
        _ => Err(node.invalid(format!("`{v}` is not an integer"))),
    }
}

/// A signed 32-bit integer.
pub(crate) fn int32(node: &Node) -> Result<i32, QosXmlError> {
    let n = integer(node)?;
    i32::try_from(n).map_err(|_| node.invalid(format!("{n} does not fit a 32-bit integer")))
}

/// A non-negative 32-bit count.
pub(crate) fn count(node: &Node) -> Result<u32, QosXmlError> {
    let n = integer(node)?;
    u32::try_from(n).map_err(|_| node.invalid(format!("{n} is not a count from 0 to 2^32-1")))
}

/// A resource limit: a count, or `LENGTH_UNLIMITED` (also `-1`) for `None`.
pub(crate) fn length(node: &Node) -> Result<Option<u32>, QosXmlError> {
    let v = node.text.trim();
    if matches!(v, "LENGTH_UNLIMITED" | "DDS_LENGTH_UNLIMITED" | "-1") {
        return Ok(None);
    }
    let n = integer(node)?;
    match u32::try_from(n) {
        Ok(n) if n <= i32::MAX as u32 => Ok(Some(n)),
        _ => Err(node.invalid(format!(
            "{n} is not a length (0 to 2^31-1 or LENGTH_UNLIMITED)"
        ))),
    }
}

fn is_infinity(v: &str, part: &str) -> bool {
    let v = v.strip_prefix("DDS_").unwrap_or(v);
    v == "DURATION_INFINITY" || v == format!("DURATION_INFINITE_{part}")
}

/// A duration: `<sec>` and `<nanosec>` (each optional, zero when absent); either may say
/// `DURATION_INFINITY` (`DURATION_INFINITE_SEC`, `DURATION_INFINITE_NSEC`), which makes the
/// whole duration infinite, as does a second count at or past 2^31-1.
pub(crate) fn duration(
    node: &Node,
    warnings: &mut Vec<XmlWarning>,
) -> Result<Duration, QosXmlError> {
    let mut secs = 0u64;
    let mut nanos = 0u32;
    let mut infinite = false;
    if !node.text.is_empty() {
        return Err(node.invalid("a duration is given by <sec> and <nanosec> elements"));
    }
    for c in &node.children {
        let v = c.text.trim();
        let v = v.strip_prefix("DDS_").unwrap_or(v);
        match c.name.as_str() {
            "sec" if is_infinity(v, "SEC") => infinite = true,
            "nanosec" if is_infinity(v, "NSEC") => infinite = true,
            "sec" if v == "DURATION_ZERO_SEC" => {}
            "nanosec" if v == "DURATION_ZERO_NSEC" => {}
            "sec" => {
                let n = integer(c)?;
                secs = u64::try_from(n)
                    .map_err(|_| c.invalid(format!("{n}: seconds cannot be negative")))?;
            }
            "nanosec" => {
                let n = integer(c)?;
                nanos = u32::try_from(n)
                    .ok()
                    .filter(|n| *n < 1_000_000_000)
                    .ok_or_else(|| {
                        c.invalid(format!("{n}: nanoseconds run from 0 to 999999999"))
                    })?;
            }
            _ => warn(warnings, c, "not part of a duration; ignored"),
        }
    }
    if infinite || secs >= 0x7fff_ffff {
        return Ok(INFINITE);
    }
    Ok(Duration::new(secs, nanos))
}

/// An enumerator from `table` of (standard spelling, value). The standard spelling
/// (`RELIABLE_RELIABILITY_QOS`) is accepted with or without RTI's `DDS_` prefix; so is the
/// short form the table also lists (`RELIABLE`, as Fast DDS writes it).
pub(crate) fn enumerator<T: Copy>(
    node: &Node,
    table: &[(&str, &str, T)],
) -> Result<T, QosXmlError> {
    let v = node.text.trim();
    let bare = v.strip_prefix("DDS_").unwrap_or(v);
    table
        .iter()
        .find(|(full, short, _)| *full == bare || *short == bare)
        .map(|(_, _, t)| *t)
        .ok_or_else(|| {
            let names: Vec<&str> = table.iter().map(|(full, _, _)| *full).collect();
            node.invalid(format!("`{v}` is not one of {}", names.join(", ")))
        })
}

/// An octet sequence (USER_DATA, TOPIC_DATA, GROUP_DATA `<value>`): either RTI's list of
/// octets separated by commas (decimal or `0x` hexadecimal, `1,2,0xff`), or base64 (as
/// Cyclone DDS writes it). A value that reads as an octet list is one; anything else must be
/// base64.
pub(crate) fn octets(node: &Node) -> Result<Vec<u8>, QosXmlError> {
    let v = node.text.trim();
    if v.is_empty() {
        return Ok(Vec::new());
    }
    if let Some(list) = octet_list(v) {
        return Ok(list);
    }
    base64(v).ok_or_else(|| {
        node.invalid("neither a comma-separated list of octets (0 to 255) nor base64")
    })
}

fn octet_list(v: &str) -> Option<Vec<u8>> {
    v.split(',')
        .map(|p| {
            let p = p.trim();
            match p.strip_prefix("0x").or_else(|| p.strip_prefix("0X")) {
                Some(h) => u8::from_str_radix(h, 16).ok(),
                None => p.parse::<u8>().ok(),
            }
        })
        .collect()
}

fn base64(v: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(v.len() / 4 * 3);
    let (mut acc, mut bits, mut pad) = (0u32, 0u32, 0usize);
    for c in v.bytes().filter(|c| !c.is_ascii_whitespace()) {
        let d = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            b'=' => {
                pad += 1;
                continue;
            }
            _ => return None,
        };
        if pad > 0 {
            return None; // data after padding
        }
        acc = (acc << 6) | d as u32;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    // A lone sixth-bit group (one character past a multiple of four) is no byte; other
    // leftover bits must be zero; at most two padding characters.
    (pad <= 2 && bits != 6 && acc == 0).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(text: &str) -> Node {
        super::super::dom::parse(&format!("<v>{text}</v>"), "t".into()).unwrap()
    }

    #[test]
    fn octets_as_list_or_base64() {
        assert_eq!(octets(&n("1, 2,0xff")).unwrap(), vec![1, 2, 255]);
        assert_eq!(octets(&n("QUJD")).unwrap(), b"ABC");
        assert_eq!(
            octets(&n("ZCBzdHJpbmcgZXhhbXBsZQ==")).unwrap(),
            b"d string example"
        );
        assert_eq!(octets(&n("QUI=")).unwrap(), b"AB");
        assert!(octets(&n("1,256")).is_err());
        assert!(octets(&n("QU=I")).is_err());
        assert!(octets(&n("Q")).is_err());
    }

    #[test]
    fn lengths_and_integers() {
        assert_eq!(length(&n("LENGTH_UNLIMITED")).unwrap(), None);
        assert_eq!(length(&n("-1")).unwrap(), None);
        assert_eq!(length(&n(" 12 ")).unwrap(), Some(12));
        assert!(length(&n("-2")).is_err());
        assert_eq!(int32(&n("-5")).unwrap(), -5);
        assert_eq!(int32(&n("0x10")).unwrap(), 16);
        assert!(int32(&n("--5")).is_err());
        assert!(int32(&n("4294967296")).is_err());
        assert!(count(&n("-1")).is_err());
    }

    #[test]
    fn durations() {
        let d = |s: &str| duration(&n(s), &mut Vec::new());
        assert_eq!(
            d("<sec>1</sec><nanosec>5</nanosec>").unwrap(),
            Duration::new(1, 5)
        );
        assert_eq!(
            d("<nanosec>100</nanosec>").unwrap(),
            Duration::from_nanos(100)
        );
        assert_eq!(d("<sec>DURATION_INFINITY</sec>").unwrap(), INFINITE);
        assert_eq!(
            d("<sec>DURATION_INFINITE_SEC</sec><nanosec>DURATION_INFINITE_NSEC</nanosec>").unwrap(),
            INFINITE
        );
        assert_eq!(d("<sec>2147483647</sec>").unwrap(), INFINITE);
        assert!(d("<sec>-1</sec>").is_err());
        assert!(d("<nanosec>1000000000</nanosec>").is_err());
        assert!(d("5").is_err());
    }
}
