//! TypeInformation (DDS-XTypes 1.3 §7.6.3.2.2), the value of PID_TYPE_INFORMATION (0x0075):
//! XCDR2 in the parameter list's byte order, no encapsulation header.
//!
//! ```text
//! @mutable TypeInformation { @id(0x1001) minimal; @id(0x1002) complete }
//! @appendable TypeIdentifierWithDependencies {
//!     TypeIdentifierWithSize typeid_with_size;   // @appendable { TypeIdentifier; u32 size }
//!     int32 dependent_typeid_count;              // -1: not listed
//!     sequence<TypeIdentifierWithSize> dependent_typeids; }
//! ```

use super::identifier::TypeIdentifier;
use super::{mutable, XTypesError};
use crate::cdr::{CdrReader, CdrWriter, Encoding};

/// Member id of `minimal` in TypeInformation.
pub const MEMBER_MINIMAL: u32 = 0x1001;
/// Member id of `complete` in TypeInformation.
pub const MEMBER_COMPLETE: u32 = 0x1002;

/// Upper bound on dependencies read from a peer (each takes at least 20 bytes anyway).
const MAX_DEPENDENCIES: usize = 4096;

/// A type identifier with the size of its serialized TypeObject.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TypeIdentifierWithSize {
    /// The identifier.
    pub type_id: TypeIdentifier,
    /// Size of the serialized TypeObject (DHEADER included).
    pub size: u32,
}

impl TypeIdentifierWithSize {
    /// Appends it (appendable: DHEADER first).
    pub fn encode(&self, w: &mut CdrWriter<'_>) {
        let d = w.begin_dheader();
        self.type_id.encode(w);
        w.write_u32(self.size);
        w.end_dheader(d);
    }

    /// Reads one.
    pub fn decode(r: &mut CdrReader<'_>) -> Result<Self, XTypesError> {
        let d = r.read_dheader()?;
        let type_id = TypeIdentifier::decode(r)?;
        let size = r.read_u32()?;
        r.finish_dheader(d)?;
        Ok(TypeIdentifierWithSize { type_id, size })
    }
}

/// A type and its dependencies.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TypeIdentifierWithDependencies {
    /// The type.
    pub typeid_with_size: TypeIdentifierWithSize,
    /// How many dependencies exist (-1: unknown); at least `dependent_typeids.len()`.
    pub dependent_typeid_count: i32,
    /// Those listed.
    pub dependent_typeids: Vec<TypeIdentifierWithSize>,
}

impl TypeIdentifierWithDependencies {
    fn encode(&self, w: &mut CdrWriter<'_>) {
        let d = w.begin_dheader();
        self.typeid_with_size.encode(w);
        w.write_i32(self.dependent_typeid_count);
        encode_with_size_seq(&self.dependent_typeids, w);
        w.end_dheader(d);
    }

    fn decode(r: &mut CdrReader<'_>) -> Result<Self, XTypesError> {
        let d = r.read_dheader()?;
        let typeid_with_size = TypeIdentifierWithSize::decode(r)?;
        let dependent_typeid_count = r.read_i32()?;
        let dependent_typeids = decode_with_size_seq(r)?;
        r.finish_dheader(d)?;
        Ok(TypeIdentifierWithDependencies {
            typeid_with_size,
            dependent_typeid_count,
            dependent_typeids,
        })
    }
}

/// `sequence<TypeIdentifierWithSize>` (DHEADER, count, elements).
pub(crate) fn encode_with_size_seq(list: &[TypeIdentifierWithSize], w: &mut CdrWriter<'_>) {
    let d = w.begin_dheader();
    w.write_len(list.len());
    for t in list {
        t.encode(w);
    }
    w.end_dheader(d);
}

pub(crate) fn decode_with_size_seq(
    r: &mut CdrReader<'_>,
) -> Result<Vec<TypeIdentifierWithSize>, XTypesError> {
    let d = r.read_dheader()?;
    let n = r.read_len(9)?;
    if n > MAX_DEPENDENCIES {
        return Err(XTypesError::TooLarge);
    }
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        out.push(TypeIdentifierWithSize::decode(r)?);
    }
    r.finish_dheader(d)?;
    Ok(out)
}

/// What an endpoint announces about its type.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TypeInformation {
    /// The minimal identifier and dependencies.
    pub minimal: TypeIdentifierWithDependencies,
    /// The complete identifier and dependencies.
    pub complete: TypeIdentifierWithDependencies,
}

impl TypeInformation {
    /// Appends the value (XCDR2 in the writer's byte order).
    pub fn encode(&self, w: &mut CdrWriter<'_>) {
        let d = w.begin_dheader();
        for (id, part) in [
            (MEMBER_MINIMAL, &self.minimal),
            (MEMBER_COMPLETE, &self.complete),
        ] {
            let m = mutable::begin_member(w, id, false);
            part.encode(w);
            mutable::end_member(w, m);
        }
        w.end_dheader(d);
    }

    /// The parameter value in the given byte order (little-endian unless `big_endian`),
    /// padded to a multiple of 4 by the caller's parameter list.
    pub fn to_bytes(&self, big_endian: bool) -> Vec<u8> {
        let mut out = Vec::with_capacity(112);
        let enc = if big_endian {
            Encoding::XCDR2_BE
        } else {
            Encoding::XCDR2_LE
        };
        self.encode(&mut CdrWriter::new(&mut out, enc));
        out
    }

    /// Decodes a parameter value, checking what Cyclone checks: `minimal` is an EK_MINIMAL
    /// hash and `complete` an EK_COMPLETE one, dependencies are hashes of the same kind, and
    /// the count is -1 or at least the list's length. Unknown members are skipped unless
    /// must-understand.
    pub fn decode(value: &[u8], big_endian: bool) -> Result<Self, XTypesError> {
        let enc = if big_endian {
            Encoding::XCDR2_BE
        } else {
            Encoding::XCDR2_LE
        };
        let r = &mut CdrReader::new(value, enc);
        let end = r.read_dheader()?;
        let mut minimal = None;
        let mut complete = None;
        while r.position() < end {
            let m = mutable::read_member(r, end)?;
            match m.id {
                MEMBER_MINIMAL => minimal = Some(TypeIdentifierWithDependencies::decode(r)?),
                MEMBER_COMPLETE => complete = Some(TypeIdentifierWithDependencies::decode(r)?),
                _ if m.must_understand => return Err(XTypesError::MustUnderstand(m.id)),
                _ => {}
            }
            r.finish_dheader(m.end)?;
        }
        r.finish_dheader(end)?;
        let (Some(minimal), Some(complete)) = (minimal, complete) else {
            return Err(XTypesError::MissingMember);
        };
        check_part(&minimal, |id| matches!(id, TypeIdentifier::Minimal(_)))?;
        check_part(&complete, |id| matches!(id, TypeIdentifier::Complete(_)))?;
        Ok(TypeInformation { minimal, complete })
    }
}

fn check_part(
    p: &TypeIdentifierWithDependencies,
    kind_ok: impl Fn(&TypeIdentifier) -> bool,
) -> Result<(), XTypesError> {
    let count_ok = p.dependent_typeid_count == -1
        || usize::try_from(p.dependent_typeid_count).is_ok_and(|c| c >= p.dependent_typeids.len());
    if !kind_ok(&p.typeid_with_size.type_id)
        || !count_ok
        || p.dependent_typeids
            .iter()
            .any(|d| !kind_ok(&d.type_id) || d.size == 0)
    {
        return Err(XTypesError::BadValue);
    }
    Ok(())
}
