//! XCDR2 member headers of `@mutable` structs (DDS-XTypes 1.3 §7.4.3.5.3): an EMHEADER
//! `M<<31 | LC<<28 | id`, then for LC 4–7 a NEXTINT.

use super::XTypesError;
use crate::cdr::{CdrReader, CdrWriter};

/// The must-understand bit of an EMHEADER.
pub const MUST_UNDERSTAND: u32 = 1 << 31;
/// Largest member id (28 bits).
pub const MAX_MEMBER_ID: u32 = 0x0fff_ffff;

/// Writes an EMHEADER with length code 4 (NEXTINT = byte length of the member) and returns
/// what [`end_member`] needs. Length code 4 is valid for every member type, so readers
/// accept it whatever they would have written.
pub fn begin_member(w: &mut CdrWriter<'_>, id: u32, must_understand: bool) -> usize {
    let mu = if must_understand { MUST_UNDERSTAND } else { 0 };
    w.write_u32(mu | (4 << 28) | (id & MAX_MEMBER_ID));
    w.begin_dheader()
}

/// Fills in the NEXTINT of the member opened by [`begin_member`].
pub fn end_member(w: &mut CdrWriter<'_>, start: usize) {
    w.end_dheader(start)
}

/// A member header read by [`read_member`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemberHeader {
    /// Member id.
    pub id: u32,
    /// The M flag.
    pub must_understand: bool,
    /// Reader position where the member's value ends (pass to `finish_dheader`).
    pub end: usize,
}

/// Reads an EMHEADER (and NEXTINT) and leaves the reader at the member's value; the value
/// must end no later than `limit` (the enclosing DHEADER's end).
pub fn read_member(r: &mut CdrReader<'_>, limit: usize) -> Result<MemberHeader, XTypesError> {
    let (id, must_understand, end) = crate::cdr::read_emheader(r, limit)?;
    Ok(MemberHeader {
        id,
        must_understand,
        end,
    })
}
