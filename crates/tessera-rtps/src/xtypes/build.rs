//! From the type model to TypeObjects, identifiers and TypeInformation.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::identifier::{CollectionHeader, TypeIdentifier};
use super::info::{TypeIdentifierWithDependencies, TypeIdentifierWithSize, TypeInformation};
use super::model::{BitmaskDesc, EnumDesc, Extensibility, StructDesc, TypeDesc, UnionDesc};
use super::object::{
    BitFlag, BitmaskType, EnumLiteral, EnumType, EquivalenceKind, MemberName, StructMember,
    StructType, TypeObject, TypeObjectBody, UnionMember, UnionType,
};
use super::{ek, flags};

/// Everything XTypes says about one top-level type: its identifiers, the serialized
/// TypeObjects of it and of every type it depends on (by hash), and its TypeInformation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypeBundle {
    /// Minimal identifier of the type.
    pub minimal: TypeIdentifier,
    /// Complete identifier of the type.
    pub complete: TypeIdentifier,
    /// Every hashed identifier (the type's and its dependencies', minimal and complete) with
    /// its serialized TypeObject.
    pub objects: BTreeMap<Vec<u8>, (TypeIdentifier, Arc<Vec<u8>>)>,
    /// The TypeInformation announced in SEDP.
    pub information: TypeInformation,
}

impl TypeBundle {
    /// Builds the bundle of a struct (or enum) type.
    pub fn new(desc: &TypeDesc) -> TypeBundle {
        let mut b = Builder::default();
        let minimal = b.identifier(desc, EquivalenceKind::Minimal);
        let complete = b.identifier(desc, EquivalenceKind::Complete);
        let with_size = |id: &TypeIdentifier, b: &Builder| TypeIdentifierWithSize {
            type_id: id.clone(),
            size: b.size_of(id),
        };
        let deps = |kind: EquivalenceKind, top: &TypeIdentifier| {
            // Every hashed type of this kind but the top one: all transitive dependencies
            // (Cyclone never asks getTypeDependencies, so all of them are listed here).
            let list: Vec<_> = b
                .objects
                .values()
                .filter(|(id, _)| id != top && kind_of(id) == Some(kind))
                .map(|(id, _)| with_size(id, &b))
                .collect();
            TypeIdentifierWithDependencies {
                typeid_with_size: with_size(top, &b),
                dependent_typeid_count: list.len() as i32,
                dependent_typeids: list,
            }
        };
        let information = TypeInformation {
            minimal: deps(EquivalenceKind::Minimal, &minimal),
            complete: deps(EquivalenceKind::Complete, &complete),
        };
        TypeBundle {
            minimal,
            complete,
            objects: b.objects,
            information,
        }
    }

    /// The serialized TypeObject of a hashed identifier this bundle holds.
    pub fn object(&self, id: &TypeIdentifier) -> Option<&Arc<Vec<u8>>> {
        self.objects.get(&id.to_bytes()).map(|(_, o)| o)
    }

    /// The hashed dependencies of `id` (direct and transitive), with their sizes.
    pub fn dependencies_of(&self, id: &TypeIdentifier) -> Vec<TypeIdentifierWithSize> {
        let info = if *id == self.minimal {
            &self.information.minimal
        } else if *id == self.complete {
            &self.information.complete
        } else {
            return Vec::new();
        };
        info.dependent_typeids.clone()
    }
}

fn kind_of(id: &TypeIdentifier) -> Option<EquivalenceKind> {
    match id {
        TypeIdentifier::Minimal(_) => Some(EquivalenceKind::Minimal),
        TypeIdentifier::Complete(_) => Some(EquivalenceKind::Complete),
        _ => None,
    }
}

#[derive(Default)]
struct Builder {
    objects: BTreeMap<Vec<u8>, (TypeIdentifier, Arc<Vec<u8>>)>,
}

impl Builder {
    fn size_of(&self, id: &TypeIdentifier) -> u32 {
        self.objects
            .get(&id.to_bytes())
            .map_or(0, |(_, o)| o.len() as u32)
    }

    fn identifier(&mut self, desc: &TypeDesc, kind: EquivalenceKind) -> TypeIdentifier {
        match desc {
            TypeDesc::Primitive(p) => TypeIdentifier::Primitive(p.type_kind()),
            TypeDesc::String { bound } => TypeIdentifier::String8 { bound: *bound },
            TypeDesc::Sequence { element, bound } => {
                let element = self.identifier(element, kind);
                TypeIdentifier::PlainSequence {
                    header: self.header(&element, kind),
                    bound: *bound,
                    element: Box::new(element),
                }
            }
            TypeDesc::Array { element, dims } => {
                // `[[T; M]; N]` is IDL's `T a[N][M]`: one array, dimensions outermost first.
                let mut dims = dims.clone();
                let mut inner = element.as_ref();
                while let TypeDesc::Array {
                    element: e,
                    dims: d,
                } = inner
                {
                    dims.extend_from_slice(d);
                    inner = e;
                }
                let element = self.identifier(inner, kind);
                TypeIdentifier::PlainArray {
                    header: self.header(&element, kind),
                    dims,
                    element: Box::new(element),
                }
            }
            TypeDesc::Struct(s) => {
                let obj = self.struct_object(s, kind);
                self.register(obj)
            }
            TypeDesc::Enum(e) => {
                let obj = enum_object(e, kind);
                self.register(obj)
            }
            TypeDesc::Union(u) => {
                let obj = self.union_object(u, kind);
                self.register(obj)
            }
            TypeDesc::Bitmask(b) => {
                let obj = bitmask_object(b, kind);
                self.register(obj)
            }
            TypeDesc::Map { key, value, bound } => {
                let element = self.identifier(value, kind);
                let key = self.identifier(key, kind);
                // EK_BOTH only when neither side needs a TypeObject.
                let both = element.is_fully_descriptive() && key.is_fully_descriptive();
                TypeIdentifier::PlainMap {
                    header: CollectionHeader {
                        equiv_kind: if both { ek::BOTH } else { kind.code() },
                        element_flags: flags::TRY_CONSTRUCT1,
                    },
                    bound: *bound,
                    element: Box::new(element),
                    key_flags: flags::TRY_CONSTRUCT1,
                    key: Box::new(key),
                }
            }
        }
    }

    fn union_object(&mut self, u: &UnionDesc, kind: EquivalenceKind) -> TypeObject {
        let complete = kind == EquivalenceKind::Complete;
        let discriminator = self.identifier(&u.discriminator, kind);
        let members = u
            .cases
            .iter()
            .map(|c| UnionMember {
                id: c.id,
                flags: flags::TRY_CONSTRUCT1 | if c.default { flags::IS_DEFAULT } else { 0 },
                type_id: self.identifier(&c.ty, kind),
                labels: c.labels.clone(),
                name: member_name(&c.name, complete),
            })
            .collect();
        TypeObject {
            kind,
            body: TypeObjectBody::Union(UnionType {
                flags: extensibility_flag(u.extensibility),
                type_name: complete.then(|| u.name.clone()),
                // As Cyclone: the discriminator is always must-understand.
                discriminator_flags: flags::TRY_CONSTRUCT1
                    | flags::MUST_UNDERSTAND
                    | if u.discriminator_key { flags::KEY } else { 0 },
                discriminator,
                members,
            }),
        }
    }

    fn header(&self, element: &TypeIdentifier, kind: EquivalenceKind) -> CollectionHeader {
        CollectionHeader {
            equiv_kind: if element.is_fully_descriptive() {
                ek::BOTH
            } else {
                kind.code()
            },
            element_flags: flags::TRY_CONSTRUCT1,
        }
    }

    fn register(&mut self, obj: TypeObject) -> TypeIdentifier {
        let bytes = obj.to_bytes();
        let h = super::equivalence_hash(&bytes);
        let id = match obj.kind {
            EquivalenceKind::Minimal => TypeIdentifier::Minimal(h),
            EquivalenceKind::Complete => TypeIdentifier::Complete(h),
        };
        self.objects
            .entry(id.to_bytes())
            .or_insert_with(|| (id.clone(), Arc::new(bytes)));
        id
    }

    fn struct_object(&mut self, s: &StructDesc, kind: EquivalenceKind) -> TypeObject {
        let complete = kind == EquivalenceKind::Complete;
        let members = s
            .members
            .iter()
            .map(|m| {
                let mut f = flags::TRY_CONSTRUCT1;
                if m.key {
                    f |= flags::KEY;
                }
                if m.optional {
                    f |= flags::OPTIONAL;
                }
                if m.must_understand {
                    f |= flags::MUST_UNDERSTAND;
                }
                StructMember {
                    id: m.id,
                    flags: f,
                    type_id: self.identifier(&m.ty, kind),
                    name: if complete {
                        MemberName::Name(m.name.clone())
                    } else {
                        MemberName::Hash(super::name_hash(&m.name))
                    },
                }
            })
            .collect();
        TypeObject {
            kind,
            body: TypeObjectBody::Struct(StructType {
                flags: extensibility_flag(s.extensibility),
                base_type: TypeIdentifier::None,
                type_name: complete.then(|| s.name.clone()),
                members,
            }),
        }
    }
}

fn extensibility_flag(e: Extensibility) -> u16 {
    match e {
        Extensibility::Final => flags::IS_FINAL,
        Extensibility::Appendable => flags::IS_APPENDABLE,
        Extensibility::Mutable => flags::IS_MUTABLE,
    }
}

fn member_name(name: &str, complete: bool) -> MemberName {
    if complete {
        MemberName::Name(name.to_owned())
    } else {
        MemberName::Hash(super::name_hash(name))
    }
}

fn bitmask_object(b: &BitmaskDesc, kind: EquivalenceKind) -> TypeObject {
    let complete = kind == EquivalenceKind::Complete;
    let mut bit_flags: Vec<BitFlag> = b
        .flags
        .iter()
        .map(|(name, position)| BitFlag {
            position: *position,
            flags: 0,
            name: member_name(name, complete),
        })
        .collect();
    // Listed by position, as Cyclone does (the hash depends on the order).
    bit_flags.sort_by_key(|f| f.position);
    TypeObject {
        kind,
        body: TypeObjectBody::Bitmask(BitmaskType {
            // Bitmasks have no extensibility annotation; Cyclone marks them final.
            flags: flags::IS_FINAL,
            bit_bound: b.bit_bound,
            type_name: complete.then(|| b.name.clone()),
            bit_flags,
        }),
    }
}

fn enum_object(e: &EnumDesc, kind: EquivalenceKind) -> TypeObject {
    let complete = kind == EquivalenceKind::Complete;
    TypeObject {
        kind,
        body: TypeObjectBody::Enum(EnumType {
            flags: extensibility_flag(e.extensibility),
            bit_bound: e.bit_bound,
            type_name: complete.then(|| e.name.clone()),
            literals: e
                .literals
                .iter()
                .enumerate()
                .map(|(i, (name, value))| EnumLiteral {
                    value: *value,
                    // The first literal is the default one (IDL 4.2 §7.4.13.4.3.4.2).
                    flags: if i == 0 { flags::IS_DEFAULT } else { 0 },
                    name: if complete {
                        MemberName::Name(name.clone())
                    } else {
                        MemberName::Hash(super::name_hash(name))
                    },
                })
                .collect(),
        }),
    }
}
