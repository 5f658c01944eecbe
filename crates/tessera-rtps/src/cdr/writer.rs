//! [`CdrWriter`]: appends CDR to a caller-owned buffer.

use super::{CdrVersion, Encoding, Endianness};

/// Serializes primitives in XCDR1 or XCDR2, little or big endian, appending to a borrowed
/// `Vec<u8>` (so callers reuse one buffer for every sample).
///
/// Alignment is relative to the *origin*: the length of the buffer when the writer was
/// created, which is where the payload body starts (just after the encapsulation header).
/// Padding bytes are zeros.
#[derive(Debug)]
pub struct CdrWriter<'a> {
    buf: &'a mut Vec<u8>,
    origin: usize,
    /// Largest alignment: 8 for XCDR1, 4 for XCDR2.
    max_align: usize,
    big_endian: bool,
}

macro_rules! write_prim {
    ($($(#[$doc:meta])* $name:ident: $t:ty;)*) => {$(
        $(#[$doc])*
        #[inline]
        pub fn $name(&mut self, v: $t) {
            const SIZE: usize = core::mem::size_of::<$t>();
            self.align(SIZE);
            let bytes = if self.big_endian { v.to_be_bytes() } else { v.to_le_bytes() };
            self.buf.extend_from_slice(&bytes);
        }
    )*};
}

impl<'a> CdrWriter<'a> {
    /// A writer appending to `buf`, with alignment origin at `buf.len()`.
    #[inline]
    pub fn new(buf: &'a mut Vec<u8>, encoding: Encoding) -> Self {
        let origin = buf.len();
        CdrWriter {
            buf,
            origin,
            max_align: match encoding.version {
                CdrVersion::Xcdr1 => 8,
                CdrVersion::Xcdr2 => 4,
            },
            big_endian: encoding.endianness == Endianness::Big,
        }
    }

    /// The encoding this writer produces.
    pub fn encoding(&self) -> Encoding {
        Encoding {
            version: if self.max_align == 8 {
                CdrVersion::Xcdr1
            } else {
                CdrVersion::Xcdr2
            },
            endianness: if self.big_endian {
                Endianness::Big
            } else {
                Endianness::Little
            },
        }
    }

    /// Whether this writer produces XCDR2 (where collections of non-primitive elements carry
    /// a DHEADER).
    #[inline]
    pub fn is_xcdr2(&self) -> bool {
        self.max_align == 4
    }

    /// Writes a placeholder XCDR2 DHEADER (a `u32` byte count) and returns where the counted
    /// bytes start; pass it to [`end_dheader`](Self::end_dheader) once they are written.
    #[inline]
    pub fn begin_dheader(&mut self) -> usize {
        self.write_u32(0);
        self.buf.len()
    }

    /// Fills in the DHEADER opened by [`begin_dheader`](Self::begin_dheader) with the number
    /// of bytes written since.
    #[inline]
    pub fn end_dheader(&mut self, start: usize) {
        let n = u32::try_from(self.buf.len() - start).expect("CDR member larger than 4 GiB");
        let bytes = if self.big_endian {
            n.to_be_bytes()
        } else {
            n.to_le_bytes()
        };
        if let Some(slot) = self.buf.get_mut(start - 4..start) {
            slot.copy_from_slice(&bytes);
        }
    }

    /// Moves the alignment origin to the current end of the buffer (XCDR1 parameter-list
    /// values align from their own start) and returns the previous origin for
    /// [`restore_origin`](Self::restore_origin).
    #[inline]
    pub fn restart_alignment(&mut self) -> usize {
        std::mem::replace(&mut self.origin, self.buf.len())
    }

    /// Puts back an origin saved by [`restart_alignment`](Self::restart_alignment).
    #[inline]
    pub fn restore_origin(&mut self, origin: usize) {
        self.origin = origin;
    }

    /// Length of the whole buffer (not only what this writer appended): positions to patch.
    #[inline]
    pub fn buffer_len(&self) -> usize {
        self.buf.len()
    }

    /// Overwrites a `u32` written earlier at buffer position `at` (in this writer's byte
    /// order).
    #[inline]
    pub fn patch_u32(&mut self, at: usize, v: u32) {
        let bytes = if self.big_endian {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        };
        if let Some(slot) = self.buf.get_mut(at..at + 4) {
            slot.copy_from_slice(&bytes);
        }
    }

    /// Bytes written since the origin.
    #[inline]
    pub fn position(&self) -> usize {
        self.buf.len() - self.origin
    }

    /// Pads with zeros to a multiple of `min(size, max alignment)` from the origin.
    /// `size` must be a power of two.
    #[inline]
    pub fn align(&mut self, size: usize) {
        let a = size.clamp(1, self.max_align);
        let pad = self.origin.wrapping_sub(self.buf.len()) & (a - 1);
        if pad != 0 {
            self.buf.resize(self.buf.len() + pad, 0);
        }
    }

    /// Reserves room for `additional` more bytes.
    #[inline]
    pub fn reserve(&mut self, additional: usize) {
        self.buf.reserve(additional);
    }

    write_prim! {
        /// Writes an `octet` / `uint8`.
        write_u8: u8;
        /// Writes an `int8`.
        write_i8: i8;
        /// Writes an `unsigned short`.
        write_u16: u16;
        /// Writes a `short`.
        write_i16: i16;
        /// Writes an `unsigned long`.
        write_u32: u32;
        /// Writes a `long`.
        write_i32: i32;
        /// Writes an `unsigned long long` (aligned to 8 in XCDR1, 4 in XCDR2).
        write_u64: u64;
        /// Writes a `long long` (aligned to 8 in XCDR1, 4 in XCDR2).
        write_i64: i64;
        /// Writes a `float`.
        write_f32: f32;
        /// Writes a `double` (aligned to 8 in XCDR1, 4 in XCDR2).
        write_f64: f64;
    }

    /// Writes a `boolean` as one octet, 0 or 1.
    #[inline]
    pub fn write_bool(&mut self, v: bool) {
        self.buf.push(v as u8);
    }

    /// Writes an IDL `char` (one octet, ISO 8859-1). Characters above U+00FF cannot be
    /// represented and are written as `?`.
    #[inline]
    pub fn write_char(&mut self, v: char) {
        let c = u32::from(v);
        self.buf.push(if c <= 0xff { c as u8 } else { b'?' });
    }

    /// Writes raw octets with no length and no alignment (the body of an octet sequence or
    /// array).
    #[inline]
    pub fn write_bytes(&mut self, bytes: &[u8]) {
        crate::copy::extend_bytes(self.buf, bytes);
    }

    /// Writes a sequence length. Panics if `len` exceeds `u32::MAX` (a caller error: such a
    /// sequence cannot be represented in CDR).
    #[inline]
    pub fn write_len(&mut self, len: usize) {
        let n = u32::try_from(len).expect("CDR sequence or string longer than u32::MAX");
        self.write_u32(n);
    }

    /// Writes a `string`: `u32` length including the NUL, the bytes, a NUL.
    #[inline]
    pub fn write_str(&mut self, s: &str) {
        self.write_len(s.len() + 1);
        self.buf.reserve(s.len() + 1);
        crate::copy::extend_bytes(self.buf, s.as_bytes());
        self.buf.push(0);
    }

    /// Writes a `sequence<octet>`: `u32` count then the bytes, in one copy.
    #[inline]
    pub fn write_byte_seq(&mut self, bytes: &[u8]) {
        self.write_len(bytes.len());
        crate::copy::extend_bytes(self.buf, bytes);
    }
}
