//! TypeObject (DDS-XTypes 1.3 §7.3.4.5, Annex B) for structs, enums, unions and bitmasks,
//! minimal and complete, with their XCDR2 encoding.
//!
//! ```text
//! TypeObject      appendable union (octet EK_COMPLETE | EK_MINIMAL)   DHEADER, disc
//!  └ *TypeObject  final union (octet TK_STRUCTURE | TK_ENUM | ...)    disc
//!     └ StructType final { u16 flags; header (appendable); member seq }
//!        header   { TypeIdentifier base_type; detail }   detail: minimal empty,
//!                 complete final { @optional ann; @optional ann; string<256> type_name }
//!        member   appendable { final { u32 id; u16 flags; TypeIdentifier };
//!                              minimal: octet[4] name hash | complete: final { string name;
//!                              @optional ann; @optional ann } }
//!     └ EnumeratedType final { u16 flags; header (appendable) { u16 bit_bound; detail };
//!                              literal seq }
//!        literal  appendable { appendable { i32 value; u16 flags }; member detail }
//! ```
//! ```text
//!     └ UnionType  final { u16 flags; header (appendable) { detail };
//!                          discriminator (appendable) { final { u16 flags; TypeIdentifier };
//!                                          complete: @optional ann; @optional ann };
//!                          member seq }
//!        member   appendable { final { u32 id; u16 flags; TypeIdentifier; seq<i32> labels };
//!                              member detail }
//!     └ BitmaskType appendable { u16 flags; header (appendable) { u16 bit_bound; detail };
//!                                flag seq }
//!        flag     appendable { final { u16 position; u16 flags }; member detail }
//! ```
//! In final structs an `@optional` member is a presence octet and, if present, the value:
//! Tessera writes the annotations absent and rejects objects that carry them (they change
//! nothing Tessera uses, and reading them would mean modelling annotations).

use super::identifier::TypeIdentifier;
use super::{ek, tk, XTypesError};
use crate::cdr::{CdrReader, CdrWriter, Encoding};

/// Minimal or complete.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EquivalenceKind {
    /// Only what assignability needs (names as 4-byte hashes).
    Minimal,
    /// Everything IDL says (names, type names).
    Complete,
}

impl EquivalenceKind {
    /// EK_MINIMAL / EK_COMPLETE.
    pub const fn code(self) -> u8 {
        match self {
            EquivalenceKind::Minimal => ek::MINIMAL,
            EquivalenceKind::Complete => ek::COMPLETE,
        }
    }
}

/// A member's or literal's name: its hash in minimal objects, itself in complete ones.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum MemberName {
    /// NameHash: first 4 bytes of the MD5 of the name.
    Hash([u8; 4]),
    /// The name.
    Name(String),
}

impl MemberName {
    /// The 4-byte NameHash.
    pub fn hash(&self) -> [u8; 4] {
        match self {
            MemberName::Hash(h) => *h,
            MemberName::Name(n) => super::name_hash(n),
        }
    }
}

/// A struct member.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct StructMember {
    /// Member id.
    pub id: u32,
    /// StructMemberFlag bits.
    pub flags: u16,
    /// Its type.
    pub type_id: TypeIdentifier,
    /// Its name (hash in minimal objects).
    pub name: MemberName,
}

/// A struct type.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct StructType {
    /// StructTypeFlag bits.
    pub flags: u16,
    /// The base type (TK_NONE: none).
    pub base_type: TypeIdentifier,
    /// The qualified type name (complete objects only).
    pub type_name: Option<String>,
    /// Members in declaration order.
    pub members: Vec<StructMember>,
}

/// An enumerated literal.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct EnumLiteral {
    /// Its value.
    pub value: i32,
    /// EnumeratedLiteralFlag bits (DEFAULT on the default literal).
    pub flags: u16,
    /// Its name (hash in minimal objects).
    pub name: MemberName,
}

/// An enum type.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct EnumType {
    /// EnumTypeFlag bits.
    pub flags: u16,
    /// Bit bound.
    pub bit_bound: u16,
    /// The qualified type name (complete objects only).
    pub type_name: Option<String>,
    /// Literals.
    pub literals: Vec<EnumLiteral>,
}

/// A union member (case).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct UnionMember {
    /// Member id.
    pub id: u32,
    /// UnionMemberFlag bits (IS_DEFAULT on the `default:` case).
    pub flags: u16,
    /// Its type.
    pub type_id: TypeIdentifier,
    /// The case labels.
    pub labels: Vec<i32>,
    /// Its name (hash in minimal objects).
    pub name: MemberName,
}

/// A union type.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct UnionType {
    /// UnionTypeFlag bits.
    pub flags: u16,
    /// The qualified type name (complete objects only).
    pub type_name: Option<String>,
    /// UnionDiscriminatorFlag bits (TRY_CONSTRUCT1 | MUST_UNDERSTAND, KEY when keyed).
    pub discriminator_flags: u16,
    /// The discriminator type.
    pub discriminator: TypeIdentifier,
    /// The cases in declaration order.
    pub members: Vec<UnionMember>,
}

/// A bitmask flag.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BitFlag {
    /// Its bit position.
    pub position: u16,
    /// BitflagFlag bits (none defined: 0).
    pub flags: u16,
    /// Its name (hash in minimal objects).
    pub name: MemberName,
}

/// A bitmask type.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BitmaskType {
    /// BitmaskTypeFlag bits.
    pub flags: u16,
    /// Bit bound.
    pub bit_bound: u16,
    /// The qualified type name (complete objects only).
    pub type_name: Option<String>,
    /// The flags, by position.
    pub bit_flags: Vec<BitFlag>,
}

/// The kinds of TypeObject Tessera models.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum TypeObjectBody {
    /// TK_STRUCTURE.
    Struct(StructType),
    /// TK_ENUM.
    Enum(EnumType),
    /// TK_UNION.
    Union(UnionType),
    /// TK_BITMASK.
    Bitmask(BitmaskType),
}

/// A TypeObject.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TypeObject {
    /// Minimal or complete.
    pub kind: EquivalenceKind,
    /// The type.
    pub body: TypeObjectBody,
}

/// Upper bound on members/literals read from a peer's object (every one takes bytes anyway).
const MAX_MEMBERS: usize = 65_536;

impl TypeObject {
    /// Appends the object (XCDR2, starting with its DHEADER; the writer must be 4-aligned).
    pub fn encode(&self, w: &mut CdrWriter<'_>) {
        let complete = self.kind == EquivalenceKind::Complete;
        let top = w.begin_dheader();
        w.write_u8(self.kind.code());
        match &self.body {
            TypeObjectBody::Struct(s) => {
                w.write_u8(tk::STRUCTURE);
                w.write_u16(s.flags);
                let h = w.begin_dheader();
                s.base_type.encode(w);
                if complete {
                    encode_type_detail(s.type_name.as_deref().unwrap_or(""), w);
                }
                w.end_dheader(h);
                let seq = w.begin_dheader();
                w.write_len(s.members.len());
                for m in &s.members {
                    let d = w.begin_dheader();
                    w.write_u32(m.id);
                    w.write_u16(m.flags);
                    m.type_id.encode(w);
                    encode_member_detail(&m.name, complete, w);
                    w.end_dheader(d);
                }
                w.end_dheader(seq);
            }
            TypeObjectBody::Enum(e) => {
                w.write_u8(tk::ENUM);
                w.write_u16(e.flags);
                let h = w.begin_dheader();
                w.write_u16(e.bit_bound);
                if complete {
                    encode_type_detail(e.type_name.as_deref().unwrap_or(""), w);
                }
                w.end_dheader(h);
                let seq = w.begin_dheader();
                w.write_len(e.literals.len());
                for l in &e.literals {
                    // Both the literal and its CommonEnumeratedLiteral are appendable.
                    let d = w.begin_dheader();
                    let c = w.begin_dheader();
                    w.write_i32(l.value);
                    w.write_u16(l.flags);
                    w.end_dheader(c);
                    encode_member_detail(&l.name, complete, w);
                    w.end_dheader(d);
                }
                w.end_dheader(seq);
            }
            TypeObjectBody::Union(u) => encode_union(u, complete, w),
            TypeObjectBody::Bitmask(b) => encode_bitmask(b, complete, w),
        }
        w.end_dheader(top);
    }

    /// The canonical serialization (XCDR2 little-endian, from the DHEADER): what is hashed,
    /// served by TypeLookup and counted in TypeInformation.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(128);
        self.encode(&mut CdrWriter::new(&mut out, Encoding::XCDR2_LE));
        out
    }

    /// The equivalence hash of the canonical serialization, as an identifier.
    pub fn identifier(&self) -> TypeIdentifier {
        let h = super::equivalence_hash(&self.to_bytes());
        match self.kind {
            EquivalenceKind::Minimal => TypeIdentifier::Minimal(h),
            EquivalenceKind::Complete => TypeIdentifier::Complete(h),
        }
    }

    /// Decodes one object (its DHEADER first). Members appended to an appendable part by a
    /// newer peer are skipped, as appendable types allow.
    pub fn decode(r: &mut CdrReader<'_>) -> Result<Self, XTypesError> {
        let end = r.read_dheader()?;
        let kind = match r.read_u8()? {
            ek::MINIMAL => EquivalenceKind::Minimal,
            ek::COMPLETE => EquivalenceKind::Complete,
            other => return Err(XTypesError::UnsupportedTypeObject(other)),
        };
        let complete = kind == EquivalenceKind::Complete;
        let body = match r.read_u8()? {
            tk::STRUCTURE => {
                let flags = r.read_u16()?;
                let h = r.read_dheader()?;
                let base_type = TypeIdentifier::decode(r)?;
                let type_name = if complete {
                    Some(decode_type_detail(r)?)
                } else {
                    None
                };
                r.finish_dheader(h)?;
                let seq = r.read_dheader()?;
                // Every member takes at least a DHEADER, id, flags and a one-octet identifier.
                let n = r.read_len(11)?.min(MAX_MEMBERS);
                let mut members = Vec::with_capacity(n);
                for _ in 0..n {
                    let d = r.read_dheader()?;
                    let id = r.read_u32()?;
                    let flags = r.read_u16()?;
                    let type_id = TypeIdentifier::decode(r)?;
                    let name = decode_member_detail(r, complete)?;
                    r.finish_dheader(d)?;
                    members.push(StructMember {
                        id,
                        flags,
                        type_id,
                        name,
                    });
                }
                r.finish_dheader(seq)?;
                TypeObjectBody::Struct(StructType {
                    flags,
                    base_type,
                    type_name,
                    members,
                })
            }
            tk::ENUM => {
                let flags = r.read_u16()?;
                let h = r.read_dheader()?;
                let bit_bound = r.read_u16()?;
                let type_name = if complete {
                    Some(decode_type_detail(r)?)
                } else {
                    None
                };
                r.finish_dheader(h)?;
                let seq = r.read_dheader()?;
                let n = r.read_len(14)?.min(MAX_MEMBERS);
                let mut literals = Vec::with_capacity(n);
                for _ in 0..n {
                    let d = r.read_dheader()?;
                    let c = r.read_dheader()?;
                    let value = r.read_i32()?;
                    let flags = r.read_u16()?;
                    r.finish_dheader(c)?;
                    let name = decode_member_detail(r, complete)?;
                    r.finish_dheader(d)?;
                    literals.push(EnumLiteral { value, flags, name });
                }
                r.finish_dheader(seq)?;
                TypeObjectBody::Enum(EnumType {
                    flags,
                    bit_bound,
                    type_name,
                    literals,
                })
            }
            tk::UNION => TypeObjectBody::Union(decode_union(r, complete)?),
            tk::BITMASK => TypeObjectBody::Bitmask(decode_bitmask(r, complete)?),
            other => return Err(XTypesError::UnsupportedTypeObject(other)),
        };
        r.finish_dheader(end)?;
        Ok(TypeObject { kind, body })
    }

    /// Decodes a canonical (XCDR2 little-endian) serialization.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, XTypesError> {
        Self::decode(&mut CdrReader::new(bytes, Encoding::XCDR2_LE))
    }
}

fn encode_union(u: &UnionType, complete: bool, w: &mut CdrWriter<'_>) {
    w.write_u8(tk::UNION);
    w.write_u16(u.flags);
    let h = w.begin_dheader();
    if complete {
        encode_type_detail(u.type_name.as_deref().unwrap_or(""), w);
    }
    w.end_dheader(h);
    let d = w.begin_dheader();
    w.write_u16(u.discriminator_flags);
    u.discriminator.encode(w);
    if complete {
        // CompleteDiscriminatorMember's two absent optional annotations.
        w.write_bool(false);
        w.write_bool(false);
    }
    w.end_dheader(d);
    let seq = w.begin_dheader();
    w.write_len(u.members.len());
    for m in &u.members {
        let d = w.begin_dheader();
        w.write_u32(m.id);
        w.write_u16(m.flags);
        m.type_id.encode(w);
        w.write_len(m.labels.len());
        for l in &m.labels {
            w.write_i32(*l);
        }
        encode_member_detail(&m.name, complete, w);
        w.end_dheader(d);
    }
    w.end_dheader(seq);
}

fn decode_union(r: &mut CdrReader<'_>, complete: bool) -> Result<UnionType, XTypesError> {
    let flags = r.read_u16()?;
    let h = r.read_dheader()?;
    let type_name = if complete {
        Some(decode_type_detail(r)?)
    } else {
        None
    };
    r.finish_dheader(h)?;
    let d = r.read_dheader()?;
    let discriminator_flags = r.read_u16()?;
    let discriminator = TypeIdentifier::decode(r)?;
    if complete {
        skip_absent_annotations(r)?;
    }
    r.finish_dheader(d)?;
    let seq = r.read_dheader()?;
    // DHEADER, id, flags, a one-octet identifier, a label count and a name hash at least.
    let n = r.read_len(15)?.min(MAX_MEMBERS);
    let mut members = Vec::with_capacity(n);
    for _ in 0..n {
        let d = r.read_dheader()?;
        let id = r.read_u32()?;
        let flags = r.read_u16()?;
        let type_id = TypeIdentifier::decode(r)?;
        let nl = r.read_len(4)?;
        let mut labels = Vec::with_capacity(nl);
        for _ in 0..nl {
            labels.push(r.read_i32()?);
        }
        let name = decode_member_detail(r, complete)?;
        r.finish_dheader(d)?;
        members.push(UnionMember {
            id,
            flags,
            type_id,
            labels,
            name,
        });
    }
    r.finish_dheader(seq)?;
    Ok(UnionType {
        flags,
        type_name,
        discriminator_flags,
        discriminator,
        members,
    })
}

fn encode_bitmask(b: &BitmaskType, complete: bool, w: &mut CdrWriter<'_>) {
    w.write_u8(tk::BITMASK);
    // Unlike the other kinds, BitmaskType itself is appendable (Annex B).
    let body = w.begin_dheader();
    w.write_u16(b.flags);
    let h = w.begin_dheader();
    w.write_u16(b.bit_bound);
    if complete {
        encode_type_detail(b.type_name.as_deref().unwrap_or(""), w);
    }
    w.end_dheader(h);
    let seq = w.begin_dheader();
    w.write_len(b.bit_flags.len());
    for f in &b.bit_flags {
        let d = w.begin_dheader();
        w.write_u16(f.position);
        w.write_u16(f.flags);
        encode_member_detail(&f.name, complete, w);
        w.end_dheader(d);
    }
    w.end_dheader(seq);
    w.end_dheader(body);
}

fn decode_bitmask(r: &mut CdrReader<'_>, complete: bool) -> Result<BitmaskType, XTypesError> {
    let body = r.read_dheader()?;
    let flags = r.read_u16()?;
    let h = r.read_dheader()?;
    let bit_bound = r.read_u16()?;
    let type_name = if complete {
        Some(decode_type_detail(r)?)
    } else {
        None
    };
    r.finish_dheader(h)?;
    if !(1..=64).contains(&bit_bound) {
        return Err(XTypesError::BadValue);
    }
    let seq = r.read_dheader()?;
    let n = r.read_len(12)?.min(MAX_MEMBERS);
    let mut bit_flags = Vec::with_capacity(n);
    for _ in 0..n {
        let d = r.read_dheader()?;
        let position = r.read_u16()?;
        let flags = r.read_u16()?;
        let name = decode_member_detail(r, complete)?;
        r.finish_dheader(d)?;
        if position >= bit_bound {
            return Err(XTypesError::BadValue);
        }
        bit_flags.push(BitFlag {
            position,
            flags,
            name,
        });
    }
    r.finish_dheader(seq)?;
    r.finish_dheader(body)?;
    Ok(BitmaskType {
        flags,
        bit_bound,
        type_name,
        bit_flags,
    })
}

/// CompleteTypeDetail: two absent optional annotations, then the name.
fn encode_type_detail(name: &str, w: &mut CdrWriter<'_>) {
    w.write_bool(false);
    w.write_bool(false);
    w.write_str(name);
}

fn decode_type_detail(r: &mut CdrReader<'_>) -> Result<String, XTypesError> {
    skip_absent_annotations(r)?;
    Ok(r.read_str()?.to_owned())
}

fn encode_member_detail(name: &MemberName, complete: bool, w: &mut CdrWriter<'_>) {
    if complete {
        match name {
            MemberName::Name(n) => w.write_str(n),
            MemberName::Hash(_) => w.write_str(""),
        }
        w.write_bool(false);
        w.write_bool(false);
    } else {
        w.write_bytes(&name.hash());
    }
}

fn decode_member_detail(r: &mut CdrReader<'_>, complete: bool) -> Result<MemberName, XTypesError> {
    if complete {
        let name = r.read_str()?.to_owned();
        skip_absent_annotations(r)?;
        Ok(MemberName::Name(name))
    } else {
        let mut h = [0u8; 4];
        h.copy_from_slice(r.read_bytes(4)?);
        Ok(MemberName::Hash(h))
    }
}

fn skip_absent_annotations(r: &mut CdrReader<'_>) -> Result<(), XTypesError> {
    for _ in 0..2 {
        if r.read_bool()? {
            return Err(XTypesError::UnsupportedAnnotation);
        }
    }
    Ok(())
}
