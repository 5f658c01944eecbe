//! Dynamic types: a topic type known only at run time — from a peer's TypeObjects (fetched
//! over TypeLookup) or from a [`TypeDesc`] built by hand — and its samples as
//! [`DynamicValue`]s. What inspection tools, bindings and services that store or forward
//! samples of any type need.
//!
//! - [`DynamicType::from_type_objects`] resolves a top-level struct identifier (complete or
//!   minimal) and every type it uses into the same [`TypeDesc`] model the derive produces; a
//!   base type's members come first (inheritance is flattened, as its encoding is). From
//!   minimal objects member names are unknown: members are named `member_<id>`.
//! - [`DynamicType::serialize`] / [`DynamicType::deserialize`] encode and decode samples in
//!   XCDR1 (plain CDR, parameter lists) and XCDR2 (DHEADER, EMHEADER), both byte orders,
//!   encapsulation header included — byte for byte as derived types do.
//! - [`DynamicType::key_hash`] and friends follow the same key-hash rule as derived types
//!   (key members in id order, big-endian XCDR2, zero-padded to 16 or MD5).
//! - Unions are [`DynamicValue::Union`] (discriminator and the selected member, none when the
//!   discriminator selects no case and there is no default), maps [`DynamicValue::Map`]
//!   (entries in wire order, keys distinct), bitmasks [`DynamicValue::Bitmask`] (the integer).
//! - [`DynamicValue::to_text`] prints a sample the way `cyclonedds subscribe` does;
//!   [`DynamicValue::to_json`] / [`DynamicValue::from_json`] convert to and from JSON.
//!
//! Decoding takes untrusted bytes: it never panics, checks every count against the bytes left
//! before allocating, and limits nesting. Types built from peers' objects are limited in
//! depth ([`MAX_DEPTH`](super::MAX_DEPTH)) and size ([`MAX_TYPE_NODES`]).

mod build;
mod codec;
mod codec_ext;
mod key;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_kinds;
mod text;
mod text_ext;

use std::sync::Arc;

use super::model::{Extensibility, StructDesc, TypeDesc};
use super::{TypeBundle, TypeIdentifier, TypeObject};
use crate::cdr::{CdrError, Encoding};

pub use build::MAX_TYPE_NODES;
/// The JSON library of [`DynamicValue::to_json`] / [`DynamicValue::from_json`].
pub use serde_json;
pub use text::JsonError;

/// Why a dynamic type could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DynamicTypeError {
    /// The top-level type is not a struct.
    #[error("a topic type is a struct, not {0}")]
    NotAStruct(String),
    /// A type kind Tessera's dynamic types do not handle (unions, maps, bitmasks, aliases,
    /// wide characters and strings, 128-bit floats, ...).
    #[error("unsupported type: {0}")]
    Unsupported(String),
    /// A hashed identifier whose TypeObject is not available.
    #[error("TypeObject of {0:?} not available")]
    Unresolved(TypeIdentifier),
    /// Types nested deeper than accepted, or referring to themselves.
    #[error("types nested too deeply or recursive")]
    TooDeep,
    /// More members, literals or array elements than accepted.
    #[error("type too large")]
    TooLarge,
    /// An inconsistent description (duplicate member ids, an optional key, an empty enum,
    /// a zero array dimension, a base type that is not a struct...).
    #[error("invalid type: {0}")]
    Invalid(String),
}

/// Why a value does not fit its type (caller's error, on encoding).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("value does not fit the type at {path}: {reason}")]
pub struct ValueError {
    /// Where: member names and indexes from the top (`color`, `points[2].x`).
    pub path: String,
    /// What is wrong.
    pub reason: String,
}

impl ValueError {
    fn new(reason: impl Into<String>) -> Self {
        ValueError {
            path: String::new(),
            reason: reason.into(),
        }
    }

    /// Prefixes the path with a member name or index.
    fn at(mut self, step: &str) -> Self {
        if self.path.is_empty() || self.path.starts_with('[') {
            self.path = format!("{step}{}", self.path);
        } else {
            self.path = format!("{step}.{}", self.path);
        }
        self
    }
}

/// A sample (or part of one) of a dynamic type.
///
/// Structs hold their members in declaration order (base type's first), `None` for an absent
/// `@optional` member; sequences and arrays are lists (a multi-dimensional array a list of
/// lists), except those of `octet`/`uint8`, which are [`Bytes`](Self::Bytes) (a `List` of
/// `UInt8` is accepted when encoding too).
#[derive(Debug, Clone, PartialEq)]
pub enum DynamicValue {
    /// `boolean`.
    Bool(bool),
    /// `int8`.
    Int8(i8),
    /// `octet` / `uint8`.
    UInt8(u8),
    /// `short`.
    Int16(i16),
    /// `unsigned short`.
    UInt16(u16),
    /// `long`.
    Int32(i32),
    /// `unsigned long`.
    UInt32(u32),
    /// `long long`.
    Int64(i64),
    /// `unsigned long long`.
    UInt64(u64),
    /// `float`.
    Float32(f32),
    /// `double`.
    Float64(f64),
    /// `char` (one octet, ISO 8859-1).
    Char(char),
    /// `string` (any bound).
    String(String),
    /// An enum's value (the literal's value, not its index).
    Enum(i32),
    /// A sequence or array of `octet` / `uint8`.
    Bytes(Vec<u8>),
    /// A sequence or array (one dimension of it) of anything else.
    List(Vec<DynamicValue>),
    /// A struct: members in declaration order, `None` for absent optional ones.
    Struct(Vec<Option<DynamicValue>>),
    /// A union: the discriminator (integers as themselves, `boolean` 0/1, `char` its octet,
    /// an enum its literal's value) and the member it selects, `None` when it selects none.
    Union {
        /// The discriminator value.
        discriminator: i64,
        /// The selected member's value.
        value: Option<Box<DynamicValue>>,
    },
    /// A map: its entries in wire order (keys distinct).
    Map(Vec<(DynamicValue, DynamicValue)>),
    /// A bitmask: the flags set, bit `position` for each.
    Bitmask(u64),
}

/// A topic type known at run time: a struct described by a [`TypeDesc`], with what the
/// runtime needs precomputed (keyed or not, the key-hash size rule) and the XTypes objects to
/// announce for it.
#[derive(Debug, Clone)]
pub struct DynamicType {
    name: String,
    desc: TypeDesc,
    top: Arc<StructDesc>,
    keyed: bool,
    key_max_size: Option<usize>,
    bundle: TypeBundle,
}

impl PartialEq for DynamicType {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name && self.desc == other.desc
    }
}

impl DynamicType {
    /// The dynamic type of a struct description (a derived type's `CdrType::type_desc()`, or
    /// one built by hand). Its TypeObjects are built from the description, so they equal the
    /// derived type's.
    pub fn from_desc(desc: TypeDesc) -> Result<DynamicType, DynamicTypeError> {
        build::check_desc(&desc)?;
        let bundle = TypeBundle::new(&desc);
        Self::with_bundle(desc, bundle)
    }

    /// The dynamic type of the struct `top` (a complete or minimal hashed identifier), with
    /// the TypeObjects of it and its dependencies from `resolve` (e.g. what the TypeLookup
    /// client collected). A complete `top` gives member and type names; the objects announced
    /// for the type are the complete ones received and the minimal ones derived from them. A
    /// minimal `top` names members `member_<id>` and the type after its hash; call
    /// [`with_name`](Self::with_name) with the name discovery announced.
    pub fn from_type_objects(
        top: &TypeIdentifier,
        resolve: &dyn Fn(&TypeIdentifier) -> Option<TypeObject>,
    ) -> Result<DynamicType, DynamicTypeError> {
        let (desc, bundle) = build::from_objects(top, resolve)?;
        Self::with_bundle(desc, bundle)
    }

    /// [`from_type_objects`](Self::from_type_objects) from a map of identifiers to objects.
    pub fn from_type_object_map(
        top: &TypeIdentifier,
        objects: &std::collections::HashMap<TypeIdentifier, TypeObject>,
    ) -> Result<DynamicType, DynamicTypeError> {
        Self::from_type_objects(top, &|id| objects.get(id).cloned())
    }

    fn with_bundle(desc: TypeDesc, bundle: TypeBundle) -> Result<DynamicType, DynamicTypeError> {
        let TypeDesc::Struct(top) = &desc else {
            return Err(DynamicTypeError::NotAStruct(format!("{desc:?}")));
        };
        let top = top.clone();
        let keyed = top.members.iter().any(|m| m.key);
        let key_max_size = if keyed {
            key::key_extent_struct(&top).map(|e| e[0])
        } else {
            Some(0)
        };
        Ok(DynamicType {
            name: top.name.clone(),
            desc,
            top,
            keyed,
            key_max_size,
            bundle,
        })
    }

    /// The same type registered under another name (the name matching compares; the
    /// TypeObjects keep theirs).
    #[must_use]
    pub fn with_name(mut self, name: impl Into<String>) -> DynamicType {
        self.name = name.into();
        self
    }

    /// The registered type name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The description (a [`TypeDesc::Struct`]).
    pub fn desc(&self) -> &TypeDesc {
        &self.desc
    }

    /// The top-level struct.
    pub fn struct_desc(&self) -> &Arc<StructDesc> {
        &self.top
    }

    /// Whether the type has key members.
    pub fn is_keyed(&self) -> bool {
        self.keyed
    }

    /// The top-level extensibility (decides the encapsulation id).
    pub fn extensibility(&self) -> Extensibility {
        self.top.extensibility
    }

    /// The largest key in its key-hash form, `None` if unbounded (strings, sequences),
    /// `Some(0)` for keyless types: at most 16 means a zero-padded key hash, else MD5.
    pub fn key_max_size(&self) -> Option<usize> {
        self.key_max_size
    }

    /// Whether writers of this type should offer XCDR2, by Cyclone DDS's rule: the type uses
    /// an appendable or mutable struct or union or an optional member somewhere (XCDR1 cannot express
    /// a nested appendable struct, and Cyclone writes such types in XCDR2 only).
    pub fn prefers_xcdr2(&self) -> bool {
        fn extensible(ty: &TypeDesc, depth: usize) -> bool {
            depth <= super::MAX_DEPTH
                && match ty {
                    TypeDesc::Struct(s) => {
                        s.extensibility != Extensibility::Final
                            || s.members
                                .iter()
                                .any(|m| m.optional || extensible(&m.ty, depth + 1))
                    }
                    TypeDesc::Sequence { element, .. } | TypeDesc::Array { element, .. } => {
                        extensible(element, depth + 1)
                    }
                    TypeDesc::Union(u) => {
                        u.extensibility != Extensibility::Final
                            || u.cases.iter().any(|c| extensible(&c.ty, depth + 1))
                    }
                    TypeDesc::Map { key, value, .. } => {
                        extensible(key, depth + 1) || extensible(value, depth + 1)
                    }
                    _ => false,
                }
        }
        extensible(&self.desc, 0)
    }

    /// The TypeObjects, identifiers and TypeInformation announced for this type.
    pub fn type_bundle(&self) -> &TypeBundle {
        &self.bundle
    }

    /// The index of member `name` of the top-level struct.
    pub fn member_index(&self, name: &str) -> Option<usize> {
        self.top.members.iter().position(|m| m.name == name)
    }

    /// A value with every member at its default (zero, empty, the first enum literal,
    /// optional members absent).
    pub fn default_value(&self) -> DynamicValue {
        codec::default_value(&self.desc)
    }

    /// Checks that `value` fits the type (member count and kinds, bounds, enum literals).
    pub fn validate(&self, value: &DynamicValue) -> Result<(), ValueError> {
        codec::validate(&self.desc, value)
    }

    /// Appends `value` as a payload (encapsulation header, body, padding) in `encoding`.
    pub fn serialize_into(
        &self,
        value: &DynamicValue,
        encoding: Encoding,
        out: &mut Vec<u8>,
    ) -> Result<usize, ValueError> {
        self.validate(value)?;
        let at = crate::cdr::begin_payload_for(out, encoding, self.extensibility());
        codec::encode(
            &self.desc,
            value,
            &mut crate::cdr::CdrWriter::new(out, encoding),
        );
        Ok(crate::cdr::finish_payload(out, at))
    }

    /// `value` as a payload in `encoding`.
    pub fn serialize(
        &self,
        value: &DynamicValue,
        encoding: Encoding,
    ) -> Result<Vec<u8>, ValueError> {
        let mut out = Vec::with_capacity(64);
        self.serialize_into(value, encoding, &mut out)?;
        Ok(out)
    }

    /// Decodes a payload (encapsulation header included) in any of XCDR1/XCDR2, either byte
    /// order. Bytes after the value are ignored.
    pub fn deserialize(&self, payload: &[u8]) -> Result<DynamicValue, CdrError> {
        let (encoding, body) = crate::cdr::parse_payload_for(payload, self.extensibility())?;
        codec::decode(
            &self.desc,
            &mut crate::cdr::CdrReader::new(body, encoding),
            0,
        )
    }

    /// The key-only payload of `value` (a dispose or unregister) in `encoding`.
    pub fn serialize_key(
        &self,
        value: &DynamicValue,
        encoding: Encoding,
    ) -> Result<Vec<u8>, ValueError> {
        self.validate(value)?;
        let mut out = Vec::with_capacity(32);
        let at = crate::cdr::begin_payload_for(&mut out, encoding, self.extensibility());
        key::encode_key_payload(
            self,
            value,
            &mut crate::cdr::CdrWriter::new(&mut out, encoding),
        );
        crate::cdr::finish_payload(&mut out, at);
        Ok(out)
    }

    /// The RTPS key hash of `value` (zeros for a keyless type).
    pub fn key_hash(&self, value: &DynamicValue) -> Result<[u8; 16], ValueError> {
        if !self.keyed {
            return Ok([0; 16]);
        }
        self.validate(value)?;
        let mut buf = Vec::new();
        key::write_key_form(
            &self.desc,
            value,
            &mut crate::cdr::CdrWriter::new(&mut buf, Encoding::XCDR2_BE),
        );
        Ok(self.finish_key_hash(&buf))
    }

    /// The key hash of a serialized sample.
    pub fn key_hash_from_sample_payload(&self, payload: &[u8]) -> Result<[u8; 16], CdrError> {
        if !self.keyed {
            return Ok([0; 16]);
        }
        let v = self.deserialize(payload)?;
        let mut buf = Vec::new();
        key::write_key_form(
            &self.desc,
            &v,
            &mut crate::cdr::CdrWriter::new(&mut buf, Encoding::XCDR2_BE),
        );
        Ok(self.finish_key_hash(&buf))
    }

    /// The key hash of a serialized key-only payload (a dispose or unregister).
    pub fn key_hash_from_key_payload(&self, payload: &[u8]) -> Result<[u8; 16], CdrError> {
        if !self.keyed {
            return Ok([0; 16]);
        }
        let (encoding, body) = crate::cdr::parse_payload_for(payload, self.extensibility())?;
        let mut buf = Vec::new();
        key::transcode_key_payload(
            self,
            &mut crate::cdr::CdrReader::new(body, encoding),
            &mut crate::cdr::CdrWriter::new(&mut buf, Encoding::XCDR2_BE),
        )?;
        Ok(self.finish_key_hash(&buf))
    }

    /// The key-only payload of a serialized sample, in the sample's own encoding.
    pub fn key_payload_from_sample_payload(&self, payload: &[u8]) -> Result<Vec<u8>, CdrError> {
        let (encoding, _) = crate::cdr::parse_payload_for(payload, self.extensibility())?;
        let v = self.deserialize(payload)?;
        // A decoded value always fits its type.
        self.serialize_key(&v, encoding)
            .map_err(|_| CdrError::BadMemberHeader)
    }

    fn finish_key_hash(&self, key: &[u8]) -> [u8; 16] {
        let mut out = [0u8; 16];
        match self.key_max_size {
            Some(max) if max <= 16 && key.len() <= 16 => out[..key.len()].copy_from_slice(key),
            _ => out = md5::compute(key).0,
        }
        out
    }
}
