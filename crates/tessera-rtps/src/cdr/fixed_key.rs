//! Key hashes read at fixed offsets: for a final struct whose members up to the last key are
//! flat primitives or arrays of them ([`TopicType::FIXED_KEY`]), where each key byte lies in
//! a received payload follows from the type and the encoding alone. Reading them there, byte-
//! swapped into the big-endian XCDR2 key-hash form, costs a few nanoseconds; re-encoding the
//! key through a [`super::CdrWriter`] cost five times that per sample on a receive thread.

use super::{CdrVersion, Encoding, Endianness, TopicType};

/// Whether `T`'s key hash can be read at fixed offsets: a prefix is known, every member in
/// it is flat, and the key fits the hash unhashed (16 bytes at most, as MD5 is not worth a
/// second path).
pub const fn usable<T: TopicType>() -> bool {
    let members = T::FIXED_KEY;
    if members.is_empty() || !T::KEYED {
        return false;
    }
    match T::KEY_MAX_SIZE {
        Some(max) if max <= 16 => {}
        _ => return false,
    }
    let mut i = 0;
    let mut any_key = false;
    while i < members.len() {
        match members[i].flat {
            Some((w, _)) if w == 1 || w == 2 || w == 4 || w == 8 => {}
            _ => return false,
        }
        any_key |= members[i].key;
        i += 1;
    }
    any_key
}

/// Most key elements a plan holds: 16 one-byte keys fill the hash.
const MAX_PARTS: usize = 16;

/// One key element: where it lies in an XCDR1 and in an XCDR2 body, its width, and where it
/// goes in the hash.
#[derive(Clone, Copy)]
struct Part {
    at_xcdr1: usize,
    at_xcdr2: usize,
    width: usize,
    to: usize,
}

/// Where every key element of `T` lies, worked out at compile time from `T::FIXED_KEY`: the
/// per-sample work is then a few fixed-width loads at constant offsets.
struct Plan {
    parts: [Part; MAX_PARTS],
    len: usize,
    /// Bytes a body must have to hold every key element, per version.
    end_xcdr1: usize,
    end_xcdr2: usize,
}

const fn plan<T: TopicType>() -> Option<Plan> {
    if !usable::<T>() {
        return None;
    }
    let empty = Part {
        at_xcdr1: 0,
        at_xcdr2: 0,
        width: 0,
        to: 0,
    };
    let mut plan = Plan {
        parts: [empty; MAX_PARTS],
        len: 0,
        end_xcdr1: 0,
        end_xcdr2: 0,
    };
    let members = T::FIXED_KEY;
    let (mut at1, mut at2, mut to) = (0usize, 0usize, 0usize);
    let mut i = 0;
    while i < members.len() {
        let Some((width, count)) = members[i].flat else {
            return None;
        };
        at1 = align(at1, min(width, 8));
        at2 = align(at2, min(width, 4));
        if members[i].key {
            // The key-hash form: big-endian XCDR2, whose alignment is at most 4.
            to = align(to, min(width, 4));
            let mut k = 0;
            while k < count {
                if to + width > 16 || plan.len == MAX_PARTS {
                    return None;
                }
                plan.parts[plan.len] = Part {
                    at_xcdr1: at1 + k * width,
                    at_xcdr2: at2 + k * width,
                    width,
                    to,
                };
                plan.len += 1;
                to += width;
                k += 1;
            }
            plan.end_xcdr1 = at1 + count * width;
            plan.end_xcdr2 = at2 + count * width;
        }
        at1 += width * count;
        at2 += width * count;
        i += 1;
    }
    Some(plan)
}

const fn min(a: usize, b: usize) -> usize {
    if a < b {
        a
    } else {
        b
    }
}

/// The key hash of a payload body of a type [`usable`] accepts, `None` if the body is too
/// short (the caller has validated it, so that means a layout this code does not know).
/// Inlined so that the plan, a constant of `T`, unrolls into fixed-width loads.
#[inline(always)]
pub(super) fn hash<T: TopicType>(body: &[u8], encoding: Encoding) -> Option<[u8; 16]> {
    let plan = const { plan::<T>() };
    let plan = plan.as_ref()?;
    let xcdr1 = encoding.version == CdrVersion::Xcdr1;
    let end = if xcdr1 {
        plan.end_xcdr1
    } else {
        plan.end_xcdr2
    };
    if body.len() < end {
        return None;
    }
    let big = encoding.endianness == Endianness::Big;
    let mut out = [0u8; 16];
    for part in &plan.parts[..plan.len] {
        let at = if xcdr1 { part.at_xcdr1 } else { part.at_xcdr2 };
        let to = part.to;
        match part.width {
            1 => out[to] = body[at],
            2 => put::<2>(&mut out, to, body, at, big),
            4 => put::<4>(&mut out, to, body, at, big),
            _ => put::<8>(&mut out, to, body, at, big),
        }
    }
    Some(out)
}

/// Copies the `N`-byte element at `body[at..]` to `out[to..]` in big-endian order.
#[inline(always)]
fn put<const N: usize>(out: &mut [u8; 16], to: usize, body: &[u8], at: usize, big: bool) {
    let mut word = [0u8; N];
    word.copy_from_slice(&body[at..at + N]);
    if !big {
        word.reverse();
    }
    out[to..to + N].copy_from_slice(&word);
}

const fn align(at: usize, a: usize) -> usize {
    (at + a - 1) & !(a - 1)
}
