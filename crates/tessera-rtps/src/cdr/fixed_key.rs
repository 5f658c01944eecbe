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

/// The key hash of a payload body of a type [`usable`] accepts, `None` if the body is too
/// short (the caller has validated it, so that means a layout this code does not know).
/// Inlined so that the member list, a constant of `T`, unrolls.
#[inline(always)]
pub(super) fn hash<T: TopicType>(body: &[u8], encoding: Encoding) -> Option<[u8; 16]> {
    let max_align = match encoding.version {
        CdrVersion::Xcdr1 => 8,
        CdrVersion::Xcdr2 => 4,
    };
    let big = encoding.endianness == Endianness::Big;
    let (mut at, mut out) = (0usize, 0usize);
    let mut v = 0u128;
    for m in T::FIXED_KEY {
        let (width, count) = m.flat?;
        at = align(at, width.min(max_align));
        let len = width.checked_mul(count)?;
        let bytes = body.get(at..at.checked_add(len)?)?;
        if m.key {
            // The key-hash form: big-endian XCDR2, whose alignment is at most 4.
            out = align(out, width.min(4));
            if out + len > 16 {
                return None;
            }
            for element in bytes.chunks_exact(width) {
                let mut word = [0u8; 8];
                word[..width].copy_from_slice(element);
                let x = if big {
                    u64::from_be_bytes(word) >> (8 * (8 - width))
                } else {
                    u64::from_le_bytes(word)
                };
                v |= u128::from(x) << (8 * (16 - out - width));
                out += width;
            }
        }
        at += len;
    }
    Some(v.to_be_bytes())
}

fn align(at: usize, a: usize) -> usize {
    (at + a - 1) & !(a - 1)
}
