//! TypeIdentifier (DDS-XTypes 1.3 §7.3.4.2): a final union on an octet discriminator, either
//! a fully descriptive identifier (primitives, strings, plain sequences, arrays and maps of
//! those) or the equivalence hash of a TypeObject.

use super::{ek, ti, tk, XTypesError, MAX_DEPTH};
use crate::cdr::{CdrReader, CdrWriter};

/// First 14 bytes of the MD5 of a serialized TypeObject.
pub type EquivalenceHash = [u8; 14];

/// The header of a plain collection identifier.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CollectionHeader {
    /// EK_BOTH when the element is fully descriptive, else EK_MINIMAL / EK_COMPLETE.
    pub equiv_kind: u8,
    /// CollectionElementFlag (TRY_CONSTRUCT1 = 1, as Cyclone writes).
    pub element_flags: u16,
}

/// A TypeIdentifier (the kinds Tessera produces and accepts).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum TypeIdentifier {
    /// TK_NONE: no type (e.g. no base type).
    None,
    /// A primitive: its type kind.
    Primitive(u8),
    /// `string<bound>` of 8-bit characters (0: unbounded).
    String8 {
        /// The bound.
        bound: u32,
    },
    /// A plain sequence.
    PlainSequence {
        /// Header.
        header: CollectionHeader,
        /// The bound (0: unbounded).
        bound: u32,
        /// The element.
        element: Box<TypeIdentifier>,
    },
    /// A plain (multi-dimensional) array.
    PlainArray {
        /// Header.
        header: CollectionHeader,
        /// Dimensions, outermost first.
        dims: Vec<u32>,
        /// The element.
        element: Box<TypeIdentifier>,
    },
    /// A plain map (PlainMapSTypeDefn / PlainMapLTypeDefn).
    PlainMap {
        /// Header (EK_BOTH when key and element are both fully descriptive).
        header: CollectionHeader,
        /// The bound (0: unbounded).
        bound: u32,
        /// The element (value) type.
        element: Box<TypeIdentifier>,
        /// CollectionElementFlag of the key.
        key_flags: u16,
        /// The key type.
        key: Box<TypeIdentifier>,
    },
    /// The hash of a minimal TypeObject.
    Minimal(EquivalenceHash),
    /// The hash of a complete TypeObject.
    Complete(EquivalenceHash),
}

impl TypeIdentifier {
    /// Whether this is an equivalence hash (the type needs a TypeObject).
    pub fn is_hash(&self) -> bool {
        matches!(
            self,
            TypeIdentifier::Minimal(_) | TypeIdentifier::Complete(_)
        )
    }

    /// Whether the identifier describes the type fully (no TypeObject needed).
    pub fn is_fully_descriptive(&self) -> bool {
        match self {
            TypeIdentifier::Minimal(_) | TypeIdentifier::Complete(_) => false,
            TypeIdentifier::PlainSequence { header, .. }
            | TypeIdentifier::PlainArray { header, .. }
            | TypeIdentifier::PlainMap { header, .. } => header.equiv_kind == ek::BOTH,
            _ => true,
        }
    }

    /// Appends the identifier (XCDR2; alignment continues from the writer's position).
    pub fn encode(&self, w: &mut CdrWriter<'_>) {
        match self {
            TypeIdentifier::None => w.write_u8(tk::NONE),
            TypeIdentifier::Primitive(k) => w.write_u8(*k),
            TypeIdentifier::String8 { bound } => {
                if *bound <= 255 {
                    w.write_u8(ti::STRING8_SMALL);
                    w.write_u8(*bound as u8);
                } else {
                    w.write_u8(ti::STRING8_LARGE);
                    w.write_u32(*bound);
                }
            }
            TypeIdentifier::PlainSequence {
                header,
                bound,
                element,
            } => {
                encode_bounded(
                    [ti::PLAIN_SEQUENCE_SMALL, ti::PLAIN_SEQUENCE_LARGE],
                    header,
                    *bound,
                    w,
                );
                element.encode(w);
            }
            TypeIdentifier::PlainArray {
                header,
                dims,
                element,
            } => {
                let small = dims.iter().all(|d| *d <= 255);
                w.write_u8(if small {
                    ti::PLAIN_ARRAY_SMALL
                } else {
                    ti::PLAIN_ARRAY_LARGE
                });
                encode_header(header, w);
                w.write_len(dims.len());
                for d in dims {
                    if small {
                        w.write_u8(*d as u8);
                    } else {
                        w.write_u32(*d);
                    }
                }
                element.encode(w);
            }
            TypeIdentifier::PlainMap {
                header,
                bound,
                element,
                key_flags,
                key,
            } => {
                encode_bounded(
                    [ti::PLAIN_MAP_SMALL, ti::PLAIN_MAP_LARGE],
                    header,
                    *bound,
                    w,
                );
                element.encode(w);
                w.write_u16(*key_flags);
                key.encode(w);
            }
            TypeIdentifier::Minimal(h) => {
                w.write_u8(ek::MINIMAL);
                w.write_bytes(h);
            }
            TypeIdentifier::Complete(h) => {
                w.write_u8(ek::COMPLETE);
                w.write_bytes(h);
            }
        }
    }

    /// Reads an identifier. Kinds Tessera does not model (wide strings, strongly
    /// connected components) are [`XTypesError::UnsupportedTypeIdentifier`].
    pub fn decode(r: &mut CdrReader<'_>) -> Result<Self, XTypesError> {
        Self::decode_depth(r, 0)
    }

    fn decode_depth(r: &mut CdrReader<'_>, depth: usize) -> Result<Self, XTypesError> {
        if depth > MAX_DEPTH {
            return Err(XTypesError::TooDeep);
        }
        let d = r.read_u8()?;
        Ok(match d {
            tk::NONE => TypeIdentifier::None,
            tk::BOOLEAN..=tk::FLOAT128 | tk::INT8 | tk::UINT8 | tk::CHAR8 | tk::CHAR16 => {
                TypeIdentifier::Primitive(d)
            }
            ti::STRING8_SMALL => TypeIdentifier::String8 {
                bound: u32::from(r.read_u8()?),
            },
            ti::STRING8_LARGE => TypeIdentifier::String8 {
                bound: r.read_u32()?,
            },
            ti::PLAIN_SEQUENCE_SMALL | ti::PLAIN_SEQUENCE_LARGE => {
                let header = decode_header(r)?;
                let bound = if d == ti::PLAIN_SEQUENCE_SMALL {
                    u32::from(r.read_u8()?)
                } else {
                    r.read_u32()?
                };
                let element = Box::new(Self::decode_depth(r, depth + 1)?);
                TypeIdentifier::PlainSequence {
                    header,
                    bound,
                    element,
                }
            }
            ti::PLAIN_ARRAY_SMALL | ti::PLAIN_ARRAY_LARGE => {
                let header = decode_header(r)?;
                let small = d == ti::PLAIN_ARRAY_SMALL;
                let n = r.read_len(if small { 1 } else { 4 })?;
                let mut dims = Vec::with_capacity(n);
                for _ in 0..n {
                    dims.push(if small {
                        u32::from(r.read_u8()?)
                    } else {
                        r.read_u32()?
                    });
                }
                let element = Box::new(Self::decode_depth(r, depth + 1)?);
                TypeIdentifier::PlainArray {
                    header,
                    dims,
                    element,
                }
            }
            ti::PLAIN_MAP_SMALL | ti::PLAIN_MAP_LARGE => {
                let header = decode_header(r)?;
                let bound = if d == ti::PLAIN_MAP_SMALL {
                    u32::from(r.read_u8()?)
                } else {
                    r.read_u32()?
                };
                let element = Box::new(Self::decode_depth(r, depth + 1)?);
                let key_flags = r.read_u16()?;
                let key = Box::new(Self::decode_depth(r, depth + 1)?);
                TypeIdentifier::PlainMap {
                    header,
                    bound,
                    element,
                    key_flags,
                    key,
                }
            }
            ek::MINIMAL | ek::COMPLETE => {
                let mut h = [0u8; 14];
                h.copy_from_slice(r.read_bytes(14)?);
                if d == ek::MINIMAL {
                    TypeIdentifier::Minimal(h)
                } else {
                    TypeIdentifier::Complete(h)
                }
            }
            other => return Err(XTypesError::UnsupportedTypeIdentifier(other)),
        })
    }

    /// The identifier's bytes on their own (as hashed and compared).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(16);
        self.encode(&mut CdrWriter::new(
            &mut out,
            crate::cdr::Encoding::XCDR2_LE,
        ));
        out
    }
}

/// The discriminator (small form iff the bound fits an octet), header and bound of a plain
/// sequence or map.
fn encode_bounded(kinds: [u8; 2], header: &CollectionHeader, bound: u32, w: &mut CdrWriter<'_>) {
    let small = bound <= 255;
    w.write_u8(kinds[usize::from(!small)]);
    encode_header(header, w);
    if small {
        w.write_u8(bound as u8);
    } else {
        w.write_u32(bound);
    }
}

fn encode_header(h: &CollectionHeader, w: &mut CdrWriter<'_>) {
    w.write_u8(h.equiv_kind);
    w.write_u16(h.element_flags);
}

fn decode_header(r: &mut CdrReader<'_>) -> Result<CollectionHeader, XTypesError> {
    Ok(CollectionHeader {
        equiv_kind: r.read_u8()?,
        element_flags: r.read_u16()?,
    })
}
