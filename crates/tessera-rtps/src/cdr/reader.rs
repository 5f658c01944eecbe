//! [`CdrReader`]: a bounds-checked view over a received payload body.

use super::{CdrError, CdrVersion, Encoding, Endianness};

/// Reads CDR primitives from a borrowed payload body (the bytes after the encapsulation
/// header; alignment is relative to their start). Every read is bounds-checked and returns
/// [`CdrError`] instead of panicking; lengths are validated against the remaining bytes before
/// anything is allocated.
#[derive(Debug, Clone)]
pub struct CdrReader<'a> {
    buf: &'a [u8],
    pos: usize,
    max_align: usize,
    big_endian: bool,
}

macro_rules! read_prim {
    ($($(#[$doc:meta])* $name:ident: $t:ty;)*) => {$(
        $(#[$doc])*
        #[inline]
        pub fn $name(&mut self) -> Result<$t, CdrError> {
            const SIZE: usize = core::mem::size_of::<$t>();
            let bytes: [u8; SIZE] = self.take_aligned::<SIZE>()?;
            Ok(if self.big_endian { <$t>::from_be_bytes(bytes) } else { <$t>::from_le_bytes(bytes) })
        }
    )*};
}

impl<'a> CdrReader<'a> {
    /// A reader over `body` (alignment origin at its first byte).
    #[inline]
    pub fn new(body: &'a [u8], encoding: Encoding) -> Self {
        CdrReader {
            buf: body,
            pos: 0,
            max_align: match encoding.version {
                CdrVersion::Xcdr1 => 8,
                CdrVersion::Xcdr2 => 4,
            },
            big_endian: encoding.endianness == Endianness::Big,
        }
    }

    /// The encoding being read.
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

    /// Whether this is XCDR2 (where collections of non-primitive elements carry a DHEADER).
    #[inline]
    pub fn is_xcdr2(&self) -> bool {
        self.max_align == 4
    }

    /// Reads an XCDR2 DHEADER and returns the position where the bytes it counts end, after
    /// checking that they are present.
    #[inline]
    pub fn read_dheader(&mut self) -> Result<usize, CdrError> {
        let n = self.read_u32()?;
        if n as usize > self.remaining() {
            return Err(CdrError::LengthTooLarge(n));
        }
        Ok(self.pos + n as usize)
    }

    /// Ends a member opened with [`read_dheader`](Self::read_dheader): fails if the member
    /// ran past the DHEADER's end, else continues at that end.
    #[inline]
    pub fn finish_dheader(&mut self, end: usize) -> Result<(), CdrError> {
        if self.pos > end {
            return Err(CdrError::BadDheader);
        }
        self.pos = end;
        Ok(())
    }

    /// Moves to absolute position `pos` (at most the end): how an XCDR2 EMHEADER with length
    /// code 5–7 steps back onto the NEXTINT that starts its member.
    #[inline]
    pub fn seek(&mut self, pos: usize) -> Result<(), CdrError> {
        if pos > self.buf.len() {
            return Err(CdrError::Truncated);
        }
        self.pos = pos;
        Ok(())
    }

    /// Takes the next `len` bytes as a reader of their own (same encoding, alignment origin at
    /// their first byte) and moves past them: an XCDR1 parameter-list value, or an XCDR2
    /// member bounded by its EMHEADER's length.
    pub fn sub_reader(&mut self, len: usize) -> Result<CdrReader<'a>, CdrError> {
        let bytes = self.read_bytes(len)?;
        Ok(CdrReader {
            buf: bytes,
            pos: 0,
            max_align: self.max_align,
            big_endian: self.big_endian,
        })
    }

    /// Bytes consumed so far.
    #[inline]
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Bytes not yet consumed.
    #[inline]
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// Skips padding up to a multiple of `min(size, max alignment)`. `size` must be a power
    /// of two.
    #[inline]
    pub fn align(&mut self, size: usize) -> Result<(), CdrError> {
        let a = size.clamp(1, self.max_align);
        let pad = self.pos.wrapping_neg() & (a - 1);
        if pad > self.remaining() {
            return Err(CdrError::Truncated);
        }
        self.pos += pad;
        Ok(())
    }

    #[inline]
    fn take_aligned<const N: usize>(&mut self) -> Result<[u8; N], CdrError> {
        let a = N.min(self.max_align);
        let start = (self.pos + (a - 1)) & !(a - 1);
        let end = start.checked_add(N).ok_or(CdrError::Truncated)?;
        let bytes = self.buf.get(start..end).ok_or(CdrError::Truncated)?;
        self.pos = end;
        // `bytes` has exactly N bytes, so this conversion cannot fail.
        bytes.try_into().map_err(|_| CdrError::Truncated)
    }

    read_prim! {
        /// Reads an `octet` / `uint8`.
        read_u8: u8;
        /// Reads an `int8`.
        read_i8: i8;
        /// Reads an `unsigned short`.
        read_u16: u16;
        /// Reads a `short`.
        read_i16: i16;
        /// Reads an `unsigned long`.
        read_u32: u32;
        /// Reads a `long`.
        read_i32: i32;
        /// Reads an `unsigned long long`.
        read_u64: u64;
        /// Reads a `long long`.
        read_i64: i64;
        /// Reads a `float`.
        read_f32: f32;
        /// Reads a `double`.
        read_f64: f64;
    }

    /// Reads a `boolean`; octets other than 0 and 1 are an error.
    #[inline]
    pub fn read_bool(&mut self) -> Result<bool, CdrError> {
        match self.read_u8()? {
            0 => Ok(false),
            1 => Ok(true),
            v => Err(CdrError::InvalidBool(v)),
        }
    }

    /// Reads an IDL `char` (one octet, ISO 8859-1).
    #[inline]
    pub fn read_char(&mut self) -> Result<char, CdrError> {
        Ok(char::from(self.read_u8()?))
    }

    /// Reads `n` raw octets (no alignment), borrowing them.
    #[inline]
    pub fn read_bytes(&mut self, n: usize) -> Result<&'a [u8], CdrError> {
        let end = self.pos.checked_add(n).ok_or(CdrError::Truncated)?;
        let bytes = self.buf.get(self.pos..end).ok_or(CdrError::Truncated)?;
        self.pos = end;
        Ok(bytes)
    }

    /// Reads a sequence count and checks that `count * min_elem_size` bytes remain, so a
    /// hostile count cannot drive an allocation. A zero `min_elem_size` counts as 1: a
    /// sequence of empty structs is limited to as many elements as bytes remain, so that a
    /// hostile count cannot spin the decoder either.
    #[inline]
    pub fn read_len(&mut self, min_elem_size: usize) -> Result<usize, CdrError> {
        let n = self.read_u32()?;
        let need = (n as usize).saturating_mul(min_elem_size.max(1));
        if need > self.remaining() {
            return Err(CdrError::LengthTooLarge(n));
        }
        Ok(n as usize)
    }

    /// Reads a `sequence<octet>`, borrowing its bytes.
    #[inline]
    pub fn read_byte_seq(&mut self) -> Result<&'a [u8], CdrError> {
        let n = self.read_len(1)?;
        self.read_bytes(n)
    }

    /// Reads a `string` and borrows it (without its NUL). A length of 0 is accepted as the
    /// empty string; otherwise the last octet must be NUL and the rest valid UTF-8.
    #[inline]
    pub fn read_str(&mut self) -> Result<&'a str, CdrError> {
        let n = self.read_len(1)?;
        if n == 0 {
            return Ok("");
        }
        let bytes = self.read_bytes(n)?;
        match bytes.split_last() {
            Some((0, text)) => core::str::from_utf8(text).map_err(|_| CdrError::InvalidUtf8),
            _ => Err(CdrError::UnterminatedString),
        }
    }
}
