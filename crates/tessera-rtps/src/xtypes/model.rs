//! The type model: what a topic type looks like to XTypes, before it is turned into
//! TypeObjects. `#[derive(TopicType)]` builds one per type ([`crate::cdr::CdrType::type_desc`]);
//! tests and bindings may build them by hand.

use std::sync::Arc;

/// How a struct (or enum) may evolve: DDS-XTypes 1.3 §7.2.2.4.4.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Extensibility {
    /// `@final`: members fixed; no headers on the wire (Tessera's default).
    #[default]
    Final,
    /// `@appendable`: members may be added at the end; a DHEADER in XCDR2.
    Appendable,
    /// `@mutable`: members identified by id, in any order; a parameter list.
    Mutable,
}

/// The primitive types (their TypeIdentifier is just the type kind).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Primitive {
    /// `boolean`.
    Bool,
    /// `octet` (Rust `u8`).
    Byte,
    /// `int8` (Rust `i8`).
    Int8,
    /// `uint8` (Rust `u8` with `#[uint8]` on the member; plain `u8` is `octet`).
    UInt8,
    /// `short`.
    Int16,
    /// `unsigned short`.
    UInt16,
    /// `long`.
    Int32,
    /// `unsigned long`.
    UInt32,
    /// `long long`.
    Int64,
    /// `unsigned long long`.
    UInt64,
    /// `float`.
    Float32,
    /// `double`.
    Float64,
    /// `char` (one octet).
    Char8,
}

impl Primitive {
    /// The type kind (TK_*), which is the whole TypeIdentifier of a primitive.
    pub const fn type_kind(self) -> u8 {
        use super::tk;
        match self {
            Primitive::Bool => tk::BOOLEAN,
            Primitive::Byte => tk::BYTE,
            Primitive::Int8 => tk::INT8,
            Primitive::UInt8 => tk::UINT8,
            Primitive::Int16 => tk::INT16,
            Primitive::UInt16 => tk::UINT16,
            Primitive::Int32 => tk::INT32,
            Primitive::UInt32 => tk::UINT32,
            Primitive::Int64 => tk::INT64,
            Primitive::UInt64 => tk::UINT64,
            Primitive::Float32 => tk::FLOAT32,
            Primitive::Float64 => tk::FLOAT64,
            Primitive::Char8 => tk::CHAR8,
        }
    }

    /// The IDL spelling.
    pub const fn idl_name(self) -> &'static str {
        match self {
            Primitive::Bool => "boolean",
            Primitive::Byte => "octet",
            Primitive::Int8 => "int8",
            Primitive::UInt8 => "uint8",
            Primitive::Int16 => "short",
            Primitive::UInt16 => "unsigned short",
            Primitive::Int32 => "long",
            Primitive::UInt32 => "unsigned long",
            Primitive::Int64 => "long long",
            Primitive::UInt64 => "unsigned long long",
            Primitive::Float32 => "float",
            Primitive::Float64 => "double",
            Primitive::Char8 => "char",
        }
    }
}

/// A type as a member (or top-level) type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TypeDesc {
    /// A primitive.
    Primitive(Primitive),
    /// `string<bound>` (0: unbounded).
    String {
        /// Maximum length, 0 for unbounded.
        bound: u32,
    },
    /// `sequence<element, bound>` (0: unbounded).
    Sequence {
        /// The element type.
        element: Box<TypeDesc>,
        /// Maximum length, 0 for unbounded.
        bound: u32,
    },
    /// `element name[dims...]`. Nested arrays (Rust `[[T; M]; N]`) flatten into one array
    /// with dimensions `[N, M]` when identifiers are built.
    Array {
        /// The element type.
        element: Box<TypeDesc>,
        /// Dimensions, outermost first.
        dims: Vec<u32>,
    },
    /// A struct (needs a TypeObject of its own).
    Struct(Arc<StructDesc>),
    /// An enum (needs a TypeObject of its own).
    Enum(Arc<EnumDesc>),
    /// A discriminated union (needs a TypeObject of its own).
    Union(Arc<UnionDesc>),
    /// `map<key, value, bound>` (0: unbounded); a plain identifier, no TypeObject.
    Map {
        /// The key type (an integer or a string).
        key: Box<TypeDesc>,
        /// The value type.
        value: Box<TypeDesc>,
        /// Maximum number of entries, 0 for unbounded.
        bound: u32,
    },
    /// A bitmask (needs a TypeObject of its own); on the wire an unsigned integer.
    Bitmask(Arc<BitmaskDesc>),
}

impl TypeDesc {
    /// The same type with every `octet` in it (the element of a sequence or array included)
    /// described as `uint8`: Rust has one `u8` for IDL's two 8-bit unsigned types, which are
    /// different types to XTypes (TK_BYTE and TK_UINT8). What `#[uint8]` on a member does.
    #[must_use]
    pub fn with_uint8(self) -> TypeDesc {
        match self {
            TypeDesc::Primitive(Primitive::Byte) => TypeDesc::Primitive(Primitive::UInt8),
            TypeDesc::Sequence { element, bound } => TypeDesc::Sequence {
                element: Box::new(element.with_uint8()),
                bound,
            },
            TypeDesc::Array { element, dims } => TypeDesc::Array {
                element: Box::new(element.with_uint8()),
                dims,
            },
            other => other,
        }
    }

    /// The same string, sequence or map with bound `n` (IDL `string<n>`, `sequence<T, n>`); other
    /// types unchanged. What `#[bound(n)]` on a member does.
    #[must_use]
    pub fn with_bound(self, n: u32) -> TypeDesc {
        match self {
            TypeDesc::String { .. } => TypeDesc::String { bound: n },
            TypeDesc::Sequence { element, .. } => TypeDesc::Sequence { element, bound: n },
            TypeDesc::Map { key, value, .. } => TypeDesc::Map {
                key,
                value,
                bound: n,
            },
            other => other,
        }
    }
}

/// A struct type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StructDesc {
    /// Fully qualified name, IDL style (`"A::B"`).
    pub name: String,
    /// Its extensibility.
    pub extensibility: Extensibility,
    /// Members in declaration order.
    pub members: Vec<MemberDesc>,
}

/// A struct member.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberDesc {
    /// Member name.
    pub name: String,
    /// Member id (sequential from 0 unless `@id` says otherwise).
    pub id: u32,
    /// Its type.
    pub ty: TypeDesc,
    /// `@key`.
    pub key: bool,
    /// `@optional`.
    pub optional: bool,
    /// `@must_understand`.
    pub must_understand: bool,
}

impl MemberDesc {
    /// A plain member (not key, not optional).
    pub fn new(name: impl Into<String>, id: u32, ty: TypeDesc) -> Self {
        MemberDesc {
            name: name.into(),
            id,
            ty,
            key: false,
            optional: false,
            must_understand: false,
        }
    }

    /// Marks it `@key` (builder style).
    #[must_use]
    pub fn key(mut self) -> Self {
        self.key = true;
        self
    }
}

/// An enum type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnumDesc {
    /// Fully qualified name.
    pub name: String,
    /// Final or appendable.
    pub extensibility: Extensibility,
    /// `@bit_bound` (32 by default).
    pub bit_bound: u16,
    /// Literals in declaration order, with their values.
    pub literals: Vec<(String, i32)>,
}

/// A discriminated union: `union name switch (discriminator) { case ...: ... }`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnionDesc {
    /// Fully qualified name.
    pub name: String,
    /// Its extensibility (final: no header; appendable: a DHEADER in XCDR2; mutable: a
    /// parameter list of the discriminator, id 0, and the selected member).
    pub extensibility: Extensibility,
    /// The discriminator type: an integer primitive, `char`, `boolean`, `octet` or an enum.
    pub discriminator: TypeDesc,
    /// `@key` on the discriminator (a union as a key member is keyed by it).
    pub discriminator_key: bool,
    /// The cases in declaration order.
    pub cases: Vec<UnionCase>,
}

/// One branch of a union.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnionCase {
    /// Member name.
    pub name: String,
    /// Member id (sequential from 0 unless `@id` says otherwise).
    pub id: u32,
    /// The labels selecting it (enum discriminators: the literal values; `boolean`: 0/1).
    pub labels: Vec<i32>,
    /// `default:` — selected by every value no other case names.
    pub default: bool,
    /// Its type.
    pub ty: TypeDesc,
}

impl UnionDesc {
    /// The case a discriminator value selects: the one listing it, else the default case;
    /// `None` when the value selects nothing (the union then holds no member).
    pub fn case_for(&self, disc: i64) -> Option<&UnionCase> {
        self.cases
            .iter()
            .find(|c| c.labels.iter().any(|l| i64::from(*l) == disc))
            .or_else(|| self.cases.iter().find(|c| c.default))
    }

    /// The discriminator value of a default-constructed union: the first case's first
    /// label, or for a union whose first case is `default:` the lowest value no case names
    /// (IDL 4.2 §7.4.1.4.4.4).
    pub fn default_discriminator(&self) -> i64 {
        match self.cases.first() {
            Some(c) if !c.default || !c.labels.is_empty() => {
                c.labels.first().map_or(0, |l| i64::from(*l))
            }
            _ => self.unused_discriminator(),
        }
    }

    /// The lowest non-negative value no case lists (what selects `default:`).
    pub fn unused_discriminator(&self) -> i64 {
        let mut v = 0i64;
        while self
            .cases
            .iter()
            .any(|c| c.labels.iter().any(|l| i64::from(*l) == v))
        {
            v += 1;
        }
        v
    }
}

/// A bitmask: `@bit_bound(n) bitmask name { flag, @position(p) flag, ... }`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BitmaskDesc {
    /// Fully qualified name.
    pub name: String,
    /// `@bit_bound` (1–64, 32 by default): the wire size is the smallest of 8/16/32/64 bits
    /// holding it.
    pub bit_bound: u16,
    /// Flags with their bit positions (each below `bit_bound`).
    pub flags: Vec<(String, u16)>,
}

impl BitmaskDesc {
    /// Bytes on the wire: 1, 2, 4 or 8.
    pub const fn wire_size(&self) -> usize {
        match self.bit_bound {
            0..=8 => 1,
            9..=16 => 2,
            17..=32 => 4,
            _ => 8,
        }
    }
}

/// The OMG interoperability suite's type (`shape.idl`), whose identifiers Cyclone DDS 11
/// computes as minimal `f1 1e426789957ce858cfdf3191a589` and complete
/// `f2 5c0a127987e5e2f3746b1f80a5b9`:
///
/// ```text
/// @appendable struct ShapeType { @key string<128> color; int32 x; int32 y; int32 shapesize;
///                                sequence<uint8> additional_payload_size; };
/// ```
pub fn shape_type() -> TypeDesc {
    let i32t = || TypeDesc::Primitive(Primitive::Int32);
    TypeDesc::Struct(Arc::new(StructDesc {
        name: "ShapeType".into(),
        extensibility: Extensibility::Appendable,
        members: vec![
            MemberDesc::new("color", 0, TypeDesc::String { bound: 128 }).key(),
            MemberDesc::new("x", 1, i32t()),
            MemberDesc::new("y", 2, i32t()),
            MemberDesc::new("shapesize", 3, i32t()),
            MemberDesc::new(
                "additional_payload_size",
                4,
                TypeDesc::Sequence {
                    element: Box::new(TypeDesc::Primitive(Primitive::UInt8)),
                    bound: 0,
                },
            ),
        ],
    }))
}
