//! XTypes on the wire (OMG DDS-XTypes 1.3): the type model, TypeIdentifiers, TypeObjects
//! with their equivalence hashes, TypeInformation (SEDP's PID_TYPE_INFORMATION) and the
//! TypeLookup service's request/reply samples.
//!
//! - [`TypeDesc`] and friends ([`model`]) describe a type the way IDL does — structs, enums,
//!   unions ([`UnionDesc`]), bitmasks ([`BitmaskDesc`]), strings, sequences, arrays and maps —;
//!   the derive builds one per type ([`crate::cdr::CdrType::type_desc`]). Union, bitmask and
//!   map identifiers and objects are byte-exact with Cyclone DDS 11 (see the pinned
//!   references in `tests_kinds.rs`); maps are plain identifiers (PlainMapS/LTypeDefn).
//! - [`TypeBundle::new`] turns one into its minimal and complete [`TypeObject`]s (and those
//!   of every type it depends on), their [`TypeIdentifier`]s — the first 14 bytes of the MD5
//!   of the canonical XCDR2 little-endian serialization — and its [`TypeInformation`].
//! - [`assignable`] decides whether a reader's type may receive a writer's (§7.2.4) under a
//!   TypeConsistencyEnforcement policy.
//! - [`dynamic`]: types known only at run time (from TypeObjects) and their samples as
//!   [`DynamicValue`]s, encoded and decoded like derived types.
//! - [`lookup`] encodes and decodes TypeLookup requests and replies; the built-in endpoints
//!   that serve them are `discovery::TypeLookupService`.
//!
//! Everything here is deterministic and canonical (zero padding), because peers re-serialize
//! a received TypeObject and compare its hash with the identifier. The decoders take
//! untrusted bytes: they never panic, bound every count by the bytes remaining, and limit
//! recursion ([`MAX_DEPTH`]).

mod assign;
mod build;
pub mod dynamic;
mod identifier;
pub mod idl_print;
mod info;
pub mod lookup;
pub mod model;
pub mod mutable;
mod object;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_kinds;

pub use assign::{assignable, Assignability};
pub use build::TypeBundle;
pub use dynamic::{DynamicType, DynamicTypeError, DynamicValue};
pub use identifier::{CollectionHeader, EquivalenceHash, TypeIdentifier};
pub use info::{
    TypeIdentifierWithDependencies, TypeIdentifierWithSize, TypeInformation, MEMBER_COMPLETE,
    MEMBER_MINIMAL,
};
pub use model::{
    shape_type, BitmaskDesc, EnumDesc, Extensibility, MemberDesc, Primitive, StructDesc, TypeDesc,
    UnionCase, UnionDesc,
};
pub use object::{
    BitFlag, BitmaskType, EnumLiteral, EnumType, EquivalenceKind, MemberName, StructMember,
    StructType, TypeObject, TypeObjectBody, UnionMember, UnionType,
};

use crate::cdr::CdrError;

/// Deepest nesting of identifiers accepted from a peer.
pub const MAX_DEPTH: usize = 32;

/// Type kinds (TK_*), DDS-XTypes 1.3 §7.3.4.1.
#[allow(missing_docs)]
pub mod tk {
    pub const NONE: u8 = 0x00;
    pub const BOOLEAN: u8 = 0x01;
    pub const BYTE: u8 = 0x02;
    pub const INT16: u8 = 0x03;
    pub const INT32: u8 = 0x04;
    pub const INT64: u8 = 0x05;
    pub const UINT16: u8 = 0x06;
    pub const UINT32: u8 = 0x07;
    pub const UINT64: u8 = 0x08;
    pub const FLOAT32: u8 = 0x09;
    pub const FLOAT64: u8 = 0x0A;
    pub const FLOAT128: u8 = 0x0B;
    pub const INT8: u8 = 0x0C;
    pub const UINT8: u8 = 0x0D;
    pub const CHAR8: u8 = 0x10;
    pub const CHAR16: u8 = 0x11;
    pub const ALIAS: u8 = 0x30;
    pub const ENUM: u8 = 0x40;
    pub const BITMASK: u8 = 0x41;
    pub const STRUCTURE: u8 = 0x51;
    pub const UNION: u8 = 0x52;
}

/// TypeIdentifier discriminators of the fully descriptive collection kinds.
#[allow(missing_docs)]
pub mod ti {
    pub const STRING8_SMALL: u8 = 0x70;
    pub const STRING8_LARGE: u8 = 0x71;
    pub const PLAIN_SEQUENCE_SMALL: u8 = 0x80;
    pub const PLAIN_SEQUENCE_LARGE: u8 = 0x81;
    pub const PLAIN_ARRAY_SMALL: u8 = 0x90;
    pub const PLAIN_ARRAY_LARGE: u8 = 0x91;
    pub const PLAIN_MAP_SMALL: u8 = 0xA0;
    pub const PLAIN_MAP_LARGE: u8 = 0xA1;
}

/// Equivalence kinds (EK_*).
#[allow(missing_docs)]
pub mod ek {
    pub const MINIMAL: u8 = 0xF1;
    pub const COMPLETE: u8 = 0xF2;
    pub const BOTH: u8 = 0xF3;
}

/// Type and member flag bits.
#[allow(missing_docs)]
pub mod flags {
    // StructMemberFlag / CollectionElementFlag
    pub const TRY_CONSTRUCT1: u16 = 0x0001;
    pub const TRY_CONSTRUCT2: u16 = 0x0002;
    pub const EXTERNAL: u16 = 0x0004;
    pub const OPTIONAL: u16 = 0x0008;
    pub const MUST_UNDERSTAND: u16 = 0x0010;
    pub const KEY: u16 = 0x0020;
    pub const IS_DEFAULT: u16 = 0x0040;
    // TypeFlag
    pub const IS_FINAL: u16 = 0x0001;
    pub const IS_APPENDABLE: u16 = 0x0002;
    pub const IS_MUTABLE: u16 = 0x0004;
    pub const IS_NESTED: u16 = 0x0008;
    pub const IS_AUTOID_HASH: u16 = 0x0010;
}

/// Why XTypes data from a peer was rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum XTypesError {
    /// The CDR framing is broken (truncated, bad lengths).
    #[error("bad CDR: {0}")]
    Cdr(#[from] CdrError),
    /// A TypeIdentifier kind Tessera does not model.
    #[error("unsupported TypeIdentifier kind {0:#04x} ({name})", name = kind_name(*.0))]
    UnsupportedTypeIdentifier(u8),
    /// A TypeObject kind Tessera does not model.
    #[error("unsupported TypeObject kind {0:#04x} ({name})", name = kind_name(*.0))]
    UnsupportedTypeObject(u8),
    /// A TypeObject carrying annotations (not modelled).
    #[error("TypeObject annotations are not supported")]
    UnsupportedAnnotation,
    /// Nesting deeper than [`MAX_DEPTH`].
    #[error("identifiers nested too deeply")]
    TooDeep,
    /// More elements than accepted.
    #[error("too many elements")]
    TooLarge,
    /// A value out of range or inconsistent.
    #[error("invalid value")]
    BadValue,
    /// A required member is missing.
    #[error("missing member")]
    MissingMember,
    /// An unknown member with the must-understand flag.
    #[error("member {0:#x} must be understood")]
    MustUnderstand(u32),
    /// Not an XCDR2 encapsulation.
    #[error("not an XCDR2 encapsulation")]
    BadEncapsulation,
}

/// What a type kind (TK_*) or TypeIdentifier discriminator is, for messages.
pub fn kind_name(k: u8) -> &'static str {
    match k {
        0x0B => "float128",
        0x11 => "wchar",
        0x30 => "alias",
        0x40 => "enum",
        0x41 => "bitmask",
        0x50 => "annotation",
        0x51 => "struct",
        0x52 => "union",
        0x53 => "bitset",
        0x60 => "sequence",
        0x61 => "array",
        0x62 => "map",
        0x20 => "string8",
        0x21 | 0x72 | 0x73 => "wstring",
        0x70 | 0x71 => "string8",
        0x80 | 0x81 => "sequence",
        0x90 | 0x91 => "array",
        0xA0 | 0xA1 => "map",
        0xB0 => "strongly connected types",
        0xF1..=0xF3 => "hashed type",
        _ => "unknown kind",
    }
}

/// First 14 bytes of the MD5 of `serialized` (a TypeObject from its DHEADER).
pub fn equivalence_hash(serialized: &[u8]) -> EquivalenceHash {
    let d = md5::compute(serialized).0;
    let mut h = [0u8; 14];
    h.copy_from_slice(&d[..14]);
    h
}

/// NameHash: the first 4 bytes of the MD5 of a name.
pub fn name_hash(name: &str) -> [u8; 4] {
    let d = md5::compute(name.as_bytes()).0;
    [d[0], d[1], d[2], d[3]]
}

/// The member id `@hashid` / `@autoid(HASH)` gives a name: its NameHash as a little-endian
/// `u32`, 28 bits.
pub fn hash_member_id(name: &str) -> u32 {
    u32::from_le_bytes(name_hash(name)) & mutable::MAX_MEMBER_ID
}
