//! CDR serialization of user topic types: XCDR1 (classic CDR) and XCDR2, both byte orders,
//! for `@final` types; the RTPS encapsulation header; key hashes.
//!
//! # Layout
//! A serialized payload is a 4-byte encapsulation header followed by the body:
//!
//! ```text
//! +--------+--------+--------+--------+
//! | encapsulation id| options (low 2 bits of the last octet: padding added at the end)
//! +--------+--------+--------+--------+
//! | body: members in declaration order, each aligned relative to the body's start ...
//! ```
//!
//! | encoding | ids (BE / LE)   | 8-byte primitives align to |
//! |----------|-----------------|----------------------------|
//! | XCDR1    | 0x0000 / 0x0001 | 8                          |
//! | XCDR2    | 0x0006 / 0x0007 | 4                          |
//!
//! Other primitives align to their size. `boolean`, `octet`, `char` take one octet; strings
//! are a `u32` length that counts the terminating NUL, the bytes, the NUL; sequences a `u32`
//! count then the elements; arrays just the elements; nested `@final` structs their members
//! (no DHEADER for `@final` structs). In XCDR2 only, a sequence whose element type is not
//! primitive (strings, structs, sequences, arrays), and an array whose elements are not
//! primitives or arrays of them, is preceded by a DHEADER: a `u32` byte count of what
//! follows (count included), as DDS-XTypes 1.3 §7.4.3.5 and Cyclone DDS do.
//!
//! # Pieces
//! - [`CdrWriter`] appends to a caller-owned `Vec<u8>` (reused for every sample);
//!   [`CdrReader`] is a borrowing, bounds-checked view that never panics and validates every
//!   length against the remaining bytes before allocating.
//! - [`CdrType`] is implemented for the primitives, `String`, `Vec<T>`, `[T; N]` and, through
//!   `#[derive(TopicType)]` (crate `tessera-derive`, re-exported by `tessera`), user structs;
//!   [`TopicType`] adds the type name and key information a topic needs.
//! - [`serialize_sample`], [`deserialize_sample`], [`serialize_key`], [`key_hash`],
//!   [`key_hash_from_key_payload`], [`key_hash_from_sample_payload`] are what the runtime
//!   calls on write, take and dispose.
//!
//! # Key hash (RTPS 9.6.4.8, DDS-XTypes 1.3 §7.6.8)
//! The key members are serialized as big-endian XCDR2 (no encapsulation header). If the
//! type's maximum key size ([`TopicType::KEY_MAX_SIZE`]) is at most 16 the bytes are
//! zero-padded to 16, else the hash is their MD5 digest. Keyless types hash to zeros.
//!
//! # Performance
//! Serializing allocates nothing but growth of the output buffer; decoding allocates only the
//! decoded value's own strings and vectors. `sequence<octet>` and `octet[N]` are copied in one
//! `memcpy` each way, which is the data path of large samples.

mod error;
mod extensible;
mod fixed_key;
#[doc(hidden)]
pub use fixed_key::usable as has_fixed_key;
pub(crate) mod impls;
mod maps;
mod plain;
mod reader;
mod traits;
mod writer;

use std::cell::RefCell;

pub use error::CdrError;
pub use extensible::{
    read_emheader, read_optional, read_optional_with, write_optional, write_optional_with,
    MutableMember, MutableReader, MutableWriter,
};
#[doc(hidden)]
pub use impls::{in_dheader_r as __in_dheader_r, in_dheader_w as __in_dheader_w};
#[doc(hidden)]
pub use plain::layout_mix;
pub use plain::{layout_hash, Plain};
pub use reader::CdrReader;
pub use traits::{
    extent_max, extent_primitive, extent_repeat, extent_then, CdrType, FlatMember, KeyExtent,
    TopicType, EXTENT_EMPTY,
};
pub use writer::CdrWriter;

use crate::wire::encapsulation;
use crate::xtypes::Extensibility;

#[doc(hidden)]
pub use crate::filter as __filter;
#[doc(hidden)]
pub use crate::xtypes as __xtypes;

/// Size of the encapsulation header in front of every serialized payload.
pub const ENCAPSULATION_HEADER_LEN: usize = 4;

/// The CDR version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CdrVersion {
    /// Classic CDR (XCDR version 1): 8-byte primitives are 8-aligned.
    Xcdr1,
    /// XCDR version 2: no alignment beyond 4.
    Xcdr2,
}

/// Byte order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Endianness {
    /// Least significant byte first.
    Little,
    /// Most significant byte first (network order).
    Big,
}

impl Endianness {
    /// The byte order of this machine.
    pub const NATIVE: Endianness = if cfg!(target_endian = "big") {
        Endianness::Big
    } else {
        Endianness::Little
    };
}

/// A data representation for `@final` types: CDR version × byte order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Encoding {
    /// XCDR1 or XCDR2.
    pub version: CdrVersion,
    /// Byte order.
    pub endianness: Endianness,
}

impl Encoding {
    /// `CDR_LE` (0x0001): what Cyclone DDS writes by default.
    pub const XCDR1_LE: Encoding = Encoding {
        version: CdrVersion::Xcdr1,
        endianness: Endianness::Little,
    };
    /// `CDR_BE` (0x0000).
    pub const XCDR1_BE: Encoding = Encoding {
        version: CdrVersion::Xcdr1,
        endianness: Endianness::Big,
    };
    /// `CDR2_LE` (0x0007).
    pub const XCDR2_LE: Encoding = Encoding {
        version: CdrVersion::Xcdr2,
        endianness: Endianness::Little,
    };
    /// `CDR2_BE` (0x0006): also the encoding of key-hash input.
    pub const XCDR2_BE: Encoding = Encoding {
        version: CdrVersion::Xcdr2,
        endianness: Endianness::Big,
    };

    /// The encapsulation id announcing this encoding for a `@final` type.
    pub const fn encapsulation_id(self) -> u16 {
        match (self.version, self.endianness) {
            (CdrVersion::Xcdr1, Endianness::Big) => encapsulation::CDR_BE,
            (CdrVersion::Xcdr1, Endianness::Little) => encapsulation::CDR_LE,
            (CdrVersion::Xcdr2, Endianness::Big) => encapsulation::CDR2_BE,
            (CdrVersion::Xcdr2, Endianness::Little) => encapsulation::CDR2_LE,
        }
    }

    /// The encapsulation id announcing this encoding for a top-level type of extensibility
    /// `ext` (Cyclone drops samples whose id differs from this one): XCDR2 appendable types
    /// are `D_CDR2_*`, mutable ones `PL_CDR2_*`; XCDR1 mutable ones `PL_CDR_*`, appendable
    /// ones the plain CDR ids.
    pub const fn encapsulation_id_for(self, ext: Extensibility) -> u16 {
        use CdrVersion::{Xcdr1, Xcdr2};
        use Endianness::{Big, Little};
        match (self.version, self.endianness, ext) {
            (_, _, Extensibility::Final) | (Xcdr1, _, Extensibility::Appendable) => {
                self.encapsulation_id()
            }
            (Xcdr1, Big, Extensibility::Mutable) => encapsulation::PL_CDR_BE,
            (Xcdr1, Little, Extensibility::Mutable) => encapsulation::PL_CDR_LE,
            (Xcdr2, Big, Extensibility::Appendable) => encapsulation::D_CDR2_BE,
            (Xcdr2, Little, Extensibility::Appendable) => encapsulation::D_CDR2_LE,
            (Xcdr2, Big, Extensibility::Mutable) => encapsulation::PL_CDR2_BE,
            (Xcdr2, Little, Extensibility::Mutable) => encapsulation::PL_CDR2_LE,
        }
    }

    /// The encoding an encapsulation id of a user payload announces: the four `@final` ids,
    /// and the XCDR2 ids of appendable (`D_CDR2_*`) and mutable (`PL_CDR2_*`) types and XCDR1's
    /// of mutable ones (`PL_CDR_*`): the type itself says how its members are laid out.
    pub const fn from_encapsulation_id(id: u16) -> Option<Encoding> {
        match id {
            encapsulation::CDR_BE | encapsulation::PL_CDR_BE => Some(Encoding::XCDR1_BE),
            encapsulation::CDR_LE | encapsulation::PL_CDR_LE => Some(Encoding::XCDR1_LE),
            encapsulation::CDR2_BE | encapsulation::D_CDR2_BE | encapsulation::PL_CDR2_BE => {
                Some(Encoding::XCDR2_BE)
            }
            encapsulation::CDR2_LE | encapsulation::D_CDR2_LE | encapsulation::PL_CDR2_LE => {
                Some(Encoding::XCDR2_LE)
            }
            _ => None,
        }
    }
}

/// Appends an encapsulation header for `encoding` with a zero options field and returns the
/// offset of the header in `out` (to hand to [`finish_payload`] once the body is written).
#[inline]
pub fn begin_payload(out: &mut Vec<u8>, encoding: Encoding) -> usize {
    begin_payload_for(out, encoding, Extensibility::Final)
}

/// [`begin_payload`] for a top-level type of extensibility `ext`.
#[inline]
pub fn begin_payload_for(out: &mut Vec<u8>, encoding: Encoding, ext: Extensibility) -> usize {
    let start = out.len();
    let id = encoding.encapsulation_id_for(ext).to_be_bytes();
    out.extend_from_slice(&[id[0], id[1], 0, 0]);
    start
}

/// Pads the body that follows the header at `header_at` to a multiple of 4 octets and records
/// the padding count in the options field. Returns the payload's total length.
#[inline]
pub fn finish_payload(out: &mut Vec<u8>, header_at: usize) -> usize {
    let body = out.len() - header_at - ENCAPSULATION_HEADER_LEN;
    let pad = body.wrapping_neg() & 3;
    out.resize(out.len() + pad, 0);
    if let Some(options_lo) = out.get_mut(header_at + 3) {
        *options_lo = (*options_lo & !3) | pad as u8;
    }
    out.len() - header_at
}

/// Parses the encapsulation header of a payload: its encoding and the body, with the padding
/// announced in the options field removed.
pub fn parse_payload(bytes: &[u8]) -> Result<(Encoding, &[u8]), CdrError> {
    let (header, body) = bytes
        .split_first_chunk::<ENCAPSULATION_HEADER_LEN>()
        .ok_or(CdrError::MissingHeader)?;
    let id = u16::from_be_bytes([header[0], header[1]]);
    let encoding =
        Encoding::from_encapsulation_id(id).ok_or(CdrError::UnsupportedEncapsulation(id))?;
    let pad = usize::from(header[3] & 3);
    let len = body.len().checked_sub(pad).ok_or(CdrError::BadPadding)?;
    Ok((encoding, &body[..len]))
}

/// [`parse_payload`] for a type of extensibility `ext`: the encapsulation id must be the one
/// that extensibility implies (as Cyclone checks), else the layout would be misread.
pub fn parse_payload_for(bytes: &[u8], ext: Extensibility) -> Result<(Encoding, &[u8]), CdrError> {
    let (encoding, body) = parse_payload(bytes)?;
    let id = u16::from_be_bytes([bytes[0], bytes[1]]);
    if encoding.encapsulation_id_for(ext) != id {
        return Err(CdrError::UnsupportedEncapsulation(id));
    }
    Ok((encoding, body))
}

/// Appends `sample` as a payload (header + body + padding) in `encoding` to `out`, which is
/// not cleared first. Returns the number of bytes appended.
#[inline]
pub fn serialize_sample<T: TopicType>(sample: &T, encoding: Encoding, out: &mut Vec<u8>) -> usize {
    let at = begin_payload_for(out, encoding, T::EXTENSIBILITY);
    sample.encode(&mut CdrWriter::new(out, encoding));
    finish_payload(out, at)
}

/// [`serialize_sample`] that also returns the sample's key hash, read from the bytes just
/// written when the key lies at fixed offsets (`TopicType::FIXED_KEY`): the writer side then
/// encodes the key once, not twice. Other types hash as [`key_hash`] does.
#[inline]
pub fn serialize_sample_keyed<T: TopicType>(
    sample: &T,
    encoding: Encoding,
    out: &mut Vec<u8>,
) -> [u8; 16] {
    let start = out.len();
    serialize_sample(sample, encoding, out);
    if const { T::KEYED && fixed_key::usable::<T>() } {
        // Past the 4-byte encapsulation header: the body as a reader would see it.
        if let Some(hash) = fixed_key::hash::<T>(&out[start + 4..], encoding) {
            return hash;
        }
    }
    key_hash(sample)
}

/// Appends the key-only payload of `sample` (the payload of a dispose or unregister) in
/// `encoding` to `out`. Returns the number of bytes appended.
pub fn serialize_key<T: TopicType>(sample: &T, encoding: Encoding, out: &mut Vec<u8>) -> usize {
    let at = begin_payload_for(out, encoding, T::EXTENSIBILITY);
    sample.encode_key(&mut CdrWriter::new(out, encoding));
    finish_payload(out, at)
}

/// Decodes a payload in any of XCDR1/XCDR2, little/big endian. Bytes after the value are
/// ignored.
#[inline]
pub fn deserialize_sample<T: TopicType>(bytes: &[u8]) -> Result<T, CdrError> {
    let (encoding, body) = parse_payload_for(bytes, T::EXTENSIBILITY)?;
    T::decode(&mut CdrReader::new(body, encoding))
}

/// [`deserialize_sample`] into `sample`, keeping the buffers of its sequences and strings.
/// After an error `sample` holds some valid value.
pub fn deserialize_sample_into<T: TopicType>(bytes: &[u8], sample: &mut T) -> Result<(), CdrError> {
    let (encoding, body) = parse_payload_for(bytes, T::EXTENSIBILITY)?;
    sample.decode_in_place(&mut CdrReader::new(body, encoding))
}

thread_local! {
    static KEY_SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Runs `f` with an empty scratch buffer (a per-thread one reused across calls, so hashing a
/// key does not allocate in steady state).
fn with_scratch<R>(f: impl FnOnce(&mut Vec<u8>) -> R) -> R {
    KEY_SCRATCH.with(|cell| match cell.try_borrow_mut() {
        Ok(mut buf) => {
            buf.clear();
            f(&mut buf)
        }
        Err(_) => f(&mut Vec::new()),
    })
}

/// The 16-byte key hash from a key serialized as big-endian XCDR2.
fn finish_key_hash<T: TopicType>(key: &[u8]) -> [u8; 16] {
    match T::KEY_MAX_SIZE {
        Some(max) if max <= 16 && key.len() <= 16 => {
            // Assembled in a register: copying the few key bytes into a zeroed array and then
            // reading it back whole stalls on store forwarding, which showed as 3-4 % of a
            // receive thread taking 16-byte keyed samples.
            let mut v = 0u128;
            for (i, b) in key.iter().enumerate() {
                v |= u128::from(*b) << (8 * (15 - i));
            }
            v.to_be_bytes()
        }
        _ => md5::compute(key).0,
    }
}

/// The RTPS key hash of `sample` (all zeros for keyless types).
pub fn key_hash<T: TopicType>(sample: &T) -> [u8; 16] {
    if !T::KEYED {
        return [0; 16];
    }
    with_scratch(|buf| key_hash_with_scratch(sample, buf))
}

/// [`key_hash`] using the caller's scratch buffer (cleared first).
pub fn key_hash_with_scratch<T: TopicType>(sample: &T, scratch: &mut Vec<u8>) -> [u8; 16] {
    if !T::KEYED {
        return [0; 16];
    }
    scratch.clear();
    // The key-hash form has no DHEADER, whatever the type's extensibility.
    sample.write_cdr_key(&mut CdrWriter::new(scratch, Encoding::XCDR2_BE));
    finish_key_hash::<T>(scratch)
}

/// The key hash of the instance a received key-only payload (a dispose/unregister with the
/// K flag) designates.
pub fn key_hash_from_key_payload<T: TopicType>(bytes: &[u8]) -> Result<[u8; 16], CdrError> {
    if !T::KEYED {
        return Ok([0; 16]);
    }
    let (encoding, body) = parse_payload_for(bytes, T::EXTENSIBILITY)?;
    with_scratch(|buf| {
        T::transcode_key_only(
            &mut CdrReader::new(body, encoding),
            &mut CdrWriter::new(buf, Encoding::XCDR2_BE),
        )?;
        Ok(finish_key_hash::<T>(buf))
    })
}

/// The key hash of a received full sample payload, computed without building the sample.
pub fn key_hash_from_sample_payload<T: TopicType>(bytes: &[u8]) -> Result<[u8; 16], CdrError> {
    if !T::KEYED {
        return Ok([0; 16]);
    }
    let (encoding, body) = parse_payload_for(bytes, T::EXTENSIBILITY)?;
    if const { fixed_key::usable::<T>() } {
        // Validated as the extraction below would (the same walk, without building a key).
        T::skip_cdr(&mut CdrReader::new(body, encoding))?;
        if let Some(hash) = fixed_key::hash::<T>(body, encoding) {
            return Ok(hash);
        }
    }
    with_scratch(|buf| {
        T::extract_key(
            &mut CdrReader::new(body, encoding),
            &mut CdrWriter::new(buf, Encoding::XCDR2_BE),
        )?;
        Ok(finish_key_hash::<T>(buf))
    })
}
