//! [`Plain`]: types whose in-memory representation can be shared between processes as is,
//! which is what a zero-copy loan needs (the reader sees the writer's bytes, not a decoded
//! copy).
//!
//! A type is plain when every bit pattern of its size is a valid value and it holds no
//! pointer: the integers, `f32`, `f64`, arrays of plain types, and `#[repr(C)]` structs that
//! derive `TopicType` and are `Copy`, all of whose members are plain. Not `bool`, `char`,
//! enums (invalid bit patterns), `String`, `Vec` or `Option` (pointers, niches).
//!
//! `#[derive(TopicType)]` decides it, not the user: for a `#[repr(C)]` struct it emits
//! `unsafe impl Plain` bounded by `Self: Copy` and `Member: Plain` for every member, under a
//! higher-ranked binder so that an unsatisfied bound does not fail the derive; it just leaves
//! the impl unusable. A `#[repr(C)]` struct with a `String` still derives; it cannot be
//! loaned:
//!
//! ```compile_fail
//! use tessera_rtps::cdr::Plain;
//! #[derive(tessera_derive::TopicType, Clone)]
//! #[topic(cdr_path = "tessera_rtps::cdr")]
//! #[repr(C)]
//! struct Named { id: u32, name: String }
//! fn loanable<T: Plain>() {}
//! loanable::<Named>();
//! ```
//!
//! ```compile_fail
//! // Not #[repr(C)]: Rust may reorder the members, so the two sides could disagree.
//! use tessera_rtps::cdr::Plain;
//! #[derive(tessera_derive::TopicType, Clone, Copy)]
//! #[topic(cdr_path = "tessera_rtps::cdr")]
//! struct Loose { id: u32, value: f64 }
//! fn loanable<T: Plain>() {}
//! loanable::<Loose>();
//! ```
//!
//! ```compile_fail
//! // Plain members, but not `Copy`.
//! use tessera_rtps::cdr::Plain;
//! #[derive(tessera_derive::TopicType, Clone)]
//! #[topic(cdr_path = "tessera_rtps::cdr")]
//! #[repr(C)]
//! struct Counted { id: u32 }
//! fn loanable<T: Plain>() {}
//! loanable::<Counted>();
//! ```
//!
//! ```
//! use tessera_rtps::cdr::Plain;
//! #[derive(tessera_derive::TopicType, Clone, Copy)]
//! #[topic(cdr_path = "tessera_rtps::cdr")]
//! #[repr(C)]
//! struct Frame { seq: u64, pixels: [u8; 64] }
//! fn loanable<T: Plain>() {}
//! loanable::<Frame>();
//! ```

use super::CdrType;

/// A type whose value is its bytes: every bit pattern of `size_of::<Self>()` bytes is a valid
/// value, it holds no pointer and needs no drop (it is `Copy`).
///
/// [`Plain::LAYOUT`] identifies the layout (type name, size, alignment, member names, offsets
/// and layouts): two processes share a value only when their hashes match. It is
/// [`CdrType::PLAIN_LAYOUT`], never 0 for a plain type.
///
/// # Safety
/// Implementors promise the above; implement it through `#[derive(TopicType)]`, which only
/// does so for `#[repr(C)]` structs of plain members.
pub unsafe trait Plain: CdrType + Copy + Send + Sync + 'static {
    /// A hash of the layout (see [`layout_hash`]).
    const LAYOUT: u64 = <Self as CdrType>::PLAIN_LAYOUT;
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// FNV-1a of `bytes`, continuing from `h`.
const fn fnv(mut h: u64, bytes: &[u8]) -> u64 {
    let mut i = 0;
    while i < bytes.len() {
        h ^= bytes[i] as u64;
        h = h.wrapping_mul(FNV_PRIME);
        i += 1;
    }
    h
}

/// Mixes one 64-bit word into `h` (its little-endian bytes through FNV-1a).
#[doc(hidden)]
pub const fn layout_mix(h: u64, word: u64) -> u64 {
    fnv(h, &word.to_le_bytes())
}

/// The start of a layout hash: the type's name, size and alignment. The derive then mixes in
/// each member's offset and layout with [`layout_mix`].
pub const fn layout_hash(name: &str, size: usize, align: usize) -> u64 {
    let h = fnv(FNV_OFFSET, name.as_bytes());
    layout_mix(layout_mix(h, size as u64), align as u64)
}

macro_rules! plain_primitive {
    ($($t:ty),*) => {$(
        // SAFETY: integers and floats have no invalid bit patterns and no pointers.
        unsafe impl Plain for $t {}
    )*};
}
plain_primitive!(u8, i8, u16, i16, u32, i32, u64, i64, f32, f64);

// SAFETY: an array of plain elements is its elements back to back, with no padding between
// them and no invalid bit pattern.
unsafe impl<T: Plain, const N: usize> Plain for [T; N] {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_differ_by_type_and_length() {
        assert_ne!(u32::LAYOUT, i32::LAYOUT);
        assert_ne!(u32::LAYOUT, f32::LAYOUT);
        assert_ne!(<[u8; 4]>::LAYOUT, <[u8; 5]>::LAYOUT);
        assert_ne!(<[u8; 4]>::LAYOUT, u32::LAYOUT);
        assert_ne!(<[[u8; 2]; 3]>::LAYOUT, <[[u8; 3]; 2]>::LAYOUT);
        assert_eq!(<[u16; 8]>::LAYOUT, <[u16; 8]>::LAYOUT);
        assert_eq!(<bool as CdrType>::PLAIN_LAYOUT, 0);
        assert_eq!(<[char; 2] as CdrType>::PLAIN_LAYOUT, 0);
        assert_eq!(<String as CdrType>::PLAIN_LAYOUT, 0);
        assert_ne!(<[u8; 3] as CdrType>::PLAIN_LAYOUT, 0);
    }
}
