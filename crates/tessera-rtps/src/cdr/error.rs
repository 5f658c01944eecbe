//! Errors of CDR decoding.

/// Why a serialized payload could not be decoded. Every variant is the sender's fault: the
/// bytes came from the network (or from a caller who passed bytes that are not a payload).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum CdrError {
    /// The payload ended before the value did.
    #[error("payload truncated")]
    Truncated,
    /// The payload is shorter than the 4-byte encapsulation header.
    #[error("payload shorter than its encapsulation header")]
    MissingHeader,
    /// The encapsulation id is not one of CDR_LE/CDR_BE/CDR2_LE/CDR2_BE.
    #[error("unsupported encapsulation id {0:#06x}")]
    UnsupportedEncapsulation(u16),
    /// The padding count of the encapsulation options exceeds the body.
    #[error("encapsulation padding exceeds the payload")]
    BadPadding,
    /// A sequence or string length exceeds what the remaining bytes could hold.
    #[error("length {0} exceeds the remaining payload")]
    LengthTooLarge(u32),
    /// A member was longer than the XCDR2 DHEADER in front of it announced.
    #[error("member exceeds its DHEADER length")]
    BadDheader,
    /// A boolean octet other than 0 or 1.
    #[error("invalid boolean value {0}")]
    InvalidBool(u8),
    /// A string without its terminating NUL.
    #[error("string not NUL-terminated")]
    UnterminatedString,
    /// A string that is not valid UTF-8.
    #[error("string is not valid UTF-8")]
    InvalidUtf8,
    /// A non-optional member of a mutable type is absent.
    #[error("member {0:#x} missing")]
    MissingMember(u32),
    /// An unknown member of a mutable type is flagged must-understand.
    #[error("unknown member {0:#x} must be understood")]
    MustUnderstand(u32),
    /// An enum value that names no literal.
    #[error("invalid enum value {0}")]
    InvalidEnum(i32),
    /// A member header (EMHEADER or parameter header) is inconsistent.
    #[error("invalid member header")]
    BadMemberHeader,
    /// Values nested deeper than the decoder accepts (dynamic types).
    #[error("value nested too deeply")]
    TooDeep,
    /// A map with the same key twice.
    #[error("map key repeated")]
    DuplicateMapKey,
    /// A bitmask value with bits set at or beyond its bit bound.
    #[error("bitmask value {0:#x} exceeds its bit bound")]
    InvalidBitmask(u64),
    /// A union whose discriminator type is not an integer, char, boolean or enum (a type
    /// built by hand; types from peers are checked before use).
    #[error("invalid union discriminator type")]
    InvalidDiscriminator,
    /// A union discriminator that selects no case of a derived Rust enum (which has no
    /// variant for an empty union).
    #[error("union discriminator {0} selects no case")]
    UnselectedDiscriminator(i64),
}
