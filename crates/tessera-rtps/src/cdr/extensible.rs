//! Wire pieces of `@mutable` types and `@optional` members (DDS-XTypes 1.3 §7.4.3.5), which
//! the derive's generated code calls.
//!
//! | | XCDR2 | XCDR1 |
//! |---|---|---|
//! | mutable struct | DHEADER, then per member EMHEADER `M<<31 \| LC<<28 \| id` (+ NEXTINT) and value | parameter list: per member a long header `0x7f01 0x0008 id len`, value aligned from its own start, padded to 4; `0x7f02 0x0000` at the end |
//! | optional member of a final/appendable struct | presence octet, then the value | one long parameter header (length 0 when absent), no end marker |
//! | optional member of a mutable struct | omitted when absent | omitted when absent |
//!
//! Writers use the length code Cyclone DDS uses for the member's type
//! ([`CdrType::XCDR2_LC`]); readers accept all eight.

use super::{CdrError, CdrReader, CdrType, CdrWriter};

/// PID_EXTENDED with the must-understand bit, as Cyclone writes it.
const PID_EXTENDED_MU: u16 = 0x7f01;
/// PID_LIST_END with the must-understand bit, as Cyclone writes it.
const PID_LIST_END_MU: u16 = 0x7f02;
const PID_MASK: u16 = 0x3fff;
const PID_EXTENDED: u16 = 0x3f01;
const PID_LIST_END: u16 = 0x3f02;
const PID_MUST_UNDERSTAND: u16 = 0x4000;
/// Must-understand bit of the id in a long (extended) parameter header.
const LONG_ID_MUST_UNDERSTAND: u32 = 0x4000_0000;
/// Member ids have 28 bits.
const ID_MASK: u32 = 0x0fff_ffff;
/// The M bit of an EMHEADER.
const EM_MUST_UNDERSTAND: u32 = 1 << 31;

/// Writes an XCDR1 long parameter header for member `id`, runs `f` with alignment restarting
/// at the value, pads the value to 4 and fills in its length.
fn write_long_parameter(w: &mut CdrWriter<'_>, id: u32, f: impl FnOnce(&mut CdrWriter<'_>)) {
    w.align(4);
    w.write_u16(PID_EXTENDED_MU);
    w.write_u16(8);
    w.write_u32(id & ID_MASK);
    w.write_u32(0);
    let len_at = w.buffer_len() - 4;
    let origin = w.restart_alignment();
    let start = w.buffer_len();
    f(w);
    w.align(4);
    let len = w.buffer_len() - start;
    w.restore_origin(origin);
    w.patch_u32(
        len_at,
        u32::try_from(len).expect("member larger than 4 GiB"),
    );
}

/// Appends an `@optional` member of a final or appendable struct.
pub fn write_optional<T: CdrType>(w: &mut CdrWriter<'_>, id: u32, v: &Option<T>) {
    write_optional_with(
        w,
        id,
        v.as_ref()
            .map(|v| move |w: &mut CdrWriter<'_>| v.write_cdr(w)),
    );
}

/// [`write_optional`] for a value written by `f` (`None`: absent), for callers that know the
/// member's type only at run time (dynamic types).
pub fn write_optional_with(
    w: &mut CdrWriter<'_>,
    id: u32,
    f: Option<impl FnOnce(&mut CdrWriter<'_>)>,
) {
    if w.is_xcdr2() {
        w.write_bool(f.is_some());
        if let Some(f) = f {
            f(w);
        }
    } else {
        match f {
            Some(f) => write_long_parameter(w, id, f),
            None => {
                w.align(4);
                w.write_u16(PID_EXTENDED_MU);
                w.write_u16(8);
                w.write_u32(id & ID_MASK);
                w.write_u32(0);
            }
        }
    }
}

/// Reads an XCDR1 parameter header: `None` at the list's end, else the member's id, its
/// must-understand flag and its length.
fn read_parameter_header(r: &mut CdrReader<'_>) -> Result<Option<(u32, bool, usize)>, CdrError> {
    r.align(4)?;
    let pid = r.read_u16()?;
    let len = r.read_u16()?;
    match pid & PID_MASK {
        PID_LIST_END => Ok(None),
        PID_EXTENDED => {
            if len != 8 {
                return Err(CdrError::BadMemberHeader);
            }
            let id = r.read_u32()?;
            let mlen = r.read_u32()? as usize;
            Ok(Some((
                id & ID_MASK,
                id & LONG_ID_MUST_UNDERSTAND != 0,
                mlen,
            )))
        }
        p => Ok(Some((
            u32::from(p),
            pid & PID_MUST_UNDERSTAND != 0,
            usize::from(len),
        ))),
    }
}

/// Reads an `@optional` member of a final or appendable struct.
pub fn read_optional<T: CdrType>(r: &mut CdrReader<'_>) -> Result<Option<T>, CdrError> {
    read_optional_with(r, T::read_cdr)
}

/// [`read_optional`] with the value read by `f` (dynamic types).
pub fn read_optional_with<'a, R>(
    r: &mut CdrReader<'a>,
    f: impl FnOnce(&mut CdrReader<'a>) -> Result<R, CdrError>,
) -> Result<Option<R>, CdrError> {
    if r.is_xcdr2() {
        return if r.read_bool()? {
            Ok(Some(f(r)?))
        } else {
            Ok(None)
        };
    }
    match read_parameter_header(r)? {
        None => Err(CdrError::BadMemberHeader),
        Some((_, _, 0)) => Ok(None),
        Some((_, _, len)) => {
            let mut sub = r.sub_reader(len)?;
            Ok(Some(f(&mut sub)?))
        }
    }
}

/// Writes a mutable struct: [`begin`](Self::begin), one [`member`](Self::member) per present
/// member, [`end`](Self::end).
#[derive(Debug)]
pub struct MutableWriter {
    /// Where the XCDR2 DHEADER's count starts.
    dheader: Option<usize>,
}

impl MutableWriter {
    /// Opens the struct (XCDR2: its DHEADER).
    pub fn begin(w: &mut CdrWriter<'_>) -> Self {
        MutableWriter {
            dheader: w.is_xcdr2().then(|| w.begin_dheader()),
        }
    }

    /// Appends member `id` of type `T` (its value written by `f`).
    pub fn member<T: CdrType>(
        &self,
        w: &mut CdrWriter<'_>,
        id: u32,
        must_understand: bool,
        f: impl FnOnce(&mut CdrWriter<'_>),
    ) {
        self.member_with_lc(w, id, must_understand, T::XCDR2_LC, f)
    }

    /// [`member`](Self::member) with the XCDR2 length code given (dynamic types): 0–3 for
    /// 1/2/4/8-byte values, 5–7 when the value starts with its own length or count, else 4.
    pub fn member_with_lc(
        &self,
        w: &mut CdrWriter<'_>,
        id: u32,
        must_understand: bool,
        lc: u32,
        f: impl FnOnce(&mut CdrWriter<'_>),
    ) {
        if !w.is_xcdr2() {
            write_long_parameter(w, id, f);
            return;
        }
        let m = if must_understand {
            EM_MUST_UNDERSTAND
        } else {
            0
        };
        w.write_u32(m | (lc << 28) | (id & ID_MASK));
        if lc == 4 {
            let start = w.begin_dheader();
            f(w);
            w.end_dheader(start);
        } else {
            // LC 0-3: the size says it all; LC 5-7: the value's own first word is NEXTINT.
            f(w);
        }
    }

    /// Closes the struct (XCDR2: fills the DHEADER; XCDR1: the list's end marker).
    pub fn end(self, w: &mut CdrWriter<'_>) {
        match self.dheader {
            Some(start) => w.end_dheader(start),
            None => {
                w.align(4);
                w.write_u16(PID_LIST_END_MU);
                w.write_u16(0);
            }
        }
    }
}

/// One member of a mutable struct being read.
#[derive(Debug)]
pub struct MutableMember<'a> {
    /// Member id.
    pub id: u32,
    /// Must-understand flag.
    pub must_understand: bool,
    /// A reader over exactly the member's value.
    pub reader: CdrReader<'a>,
}

/// Reads an XCDR2 EMHEADER (and NEXTINT): the member's id, M flag and the position where its
/// value ends, leaving `r` at the value. The value must end by `limit`.
pub fn read_emheader(r: &mut CdrReader<'_>, limit: usize) -> Result<(u32, bool, usize), CdrError> {
    let h = r.read_u32()?;
    let lc = (h >> 28) & 7;
    let len = match lc {
        0 => 1,
        1 => 2,
        2 => 4,
        3 => 8,
        4 => r.read_u32()? as usize,
        _ => {
            // NEXTINT is the member's own first word (a length or count): step back onto it.
            let at = r.position();
            let n = r.read_u32()? as usize;
            r.seek(at)?;
            let unit = match lc {
                5 => 1usize,
                6 => 4,
                _ => 8,
            };
            n.checked_mul(unit)
                .and_then(|b| b.checked_add(4))
                .ok_or(CdrError::BadMemberHeader)?
        }
    };
    let end = r
        .position()
        .checked_add(len)
        .ok_or(CdrError::BadMemberHeader)?;
    if end > limit {
        return Err(CdrError::BadMemberHeader);
    }
    Ok((h & ID_MASK, h & EM_MUST_UNDERSTAND != 0, end))
}

/// Reads a mutable struct's members in wire order (any order, each at most once is not
/// checked: a repeated member overwrites).
#[derive(Debug)]
pub struct MutableReader {
    /// XCDR2: where the DHEADER's bytes end.
    end: Option<usize>,
    done: bool,
}

impl MutableReader {
    /// Opens the struct (XCDR2: reads its DHEADER).
    pub fn begin(r: &mut CdrReader<'_>) -> Result<Self, CdrError> {
        Ok(MutableReader {
            end: if r.is_xcdr2() {
                Some(r.read_dheader()?)
            } else {
                None
            },
            done: false,
        })
    }

    /// The next member, or `None` after the last.
    pub fn next<'a>(
        &mut self,
        r: &mut CdrReader<'a>,
    ) -> Result<Option<MutableMember<'a>>, CdrError> {
        if self.done {
            return Ok(None);
        }
        match self.end {
            Some(end) => {
                if r.position() >= end {
                    self.done = true;
                    return Ok(None);
                }
                let (id, must_understand, value_end) = read_emheader(r, end)?;
                let reader = r.sub_reader(value_end - r.position())?;
                Ok(Some(MutableMember {
                    id,
                    must_understand,
                    reader,
                }))
            }
            None => match read_parameter_header(r)? {
                None => {
                    self.done = true;
                    Ok(None)
                }
                Some((id, must_understand, len)) => Ok(Some(MutableMember {
                    id,
                    must_understand,
                    reader: r.sub_reader(len)?,
                })),
            },
        }
    }

    /// Closes the struct: XCDR2 continues after the DHEADER's bytes; XCDR1 must have seen the
    /// end marker.
    pub fn end(self, r: &mut CdrReader<'_>) -> Result<(), CdrError> {
        match self.end {
            Some(end) => r.finish_dheader(end),
            None if self.done => Ok(()),
            None => Err(CdrError::BadMemberHeader),
        }
    }

    /// Skips a whole mutable struct.
    pub fn skip(r: &mut CdrReader<'_>) -> Result<(), CdrError> {
        let mut m = Self::begin(r)?;
        if let Some(end) = m.end {
            return r.finish_dheader(end);
        }
        while m.next(r)?.is_some() {}
        m.end(r)
    }
}
