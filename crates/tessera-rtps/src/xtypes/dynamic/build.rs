//! From TypeObjects to the type model, and the checks every dynamic type passes.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use super::DynamicTypeError as E;
use crate::xtypes::identifier::{CollectionHeader, TypeIdentifier};
use crate::xtypes::info::{
    TypeIdentifierWithDependencies, TypeIdentifierWithSize, TypeInformation,
};
use crate::xtypes::model::{
    BitmaskDesc, EnumDesc, Extensibility, MemberDesc, Primitive, StructDesc, TypeDesc, UnionCase,
    UnionDesc,
};
use crate::xtypes::object::{
    BitFlag, BitmaskType, EnumLiteral, EnumType, EquivalenceKind, MemberName, StructMember,
    StructType, TypeObject, TypeObjectBody, UnionMember, UnionType,
};
use crate::xtypes::{ek, flags, tk, TypeBundle, MAX_DEPTH};

/// Most members, literals and identifiers one dynamic type may hold in all.
pub const MAX_TYPE_NODES: usize = 100_000;
/// Most elements of one array (all dimensions): a default value allocates them.
const MAX_ARRAY_ELEMENTS: u64 = 1 << 24;

/// Checks a description built by hand (or derived): a struct, consistent, not too deep.
pub(super) fn check_desc(desc: &TypeDesc) -> Result<(), E> {
    if !matches!(desc, TypeDesc::Struct(_)) {
        return Err(E::NotAStruct(format!("{desc:?}")));
    }
    let mut nodes = 0usize;
    check(desc, 0, &mut nodes)
}

fn check(desc: &TypeDesc, depth: usize, nodes: &mut usize) -> Result<(), E> {
    if depth > MAX_DEPTH {
        return Err(E::TooDeep);
    }
    *nodes += 1;
    if *nodes > MAX_TYPE_NODES {
        return Err(E::TooLarge);
    }
    match desc {
        TypeDesc::Primitive(_) | TypeDesc::String { .. } => Ok(()),
        TypeDesc::Sequence { element, .. } => check(element, depth + 1, nodes),
        TypeDesc::Array { element, dims } => {
            check_dims(dims)?;
            check(element, depth + 1, nodes)
        }
        TypeDesc::Enum(e) => check_enum(e),
        TypeDesc::Bitmask(b) => check_bitmask(b),
        TypeDesc::Map { key, value, .. } => {
            check_map_key(key)?;
            check(key, depth + 1, nodes)?;
            check(value, depth + 1, nodes)
        }
        TypeDesc::Union(u) => {
            check_union(u)?;
            check(&u.discriminator, depth + 1, nodes)?;
            u.cases
                .iter()
                .try_for_each(|c| check(&c.ty, depth + 1, nodes))
        }
        TypeDesc::Struct(s) => {
            check_members(&s.members)?;
            s.members
                .iter()
                .try_for_each(|m| check(&m.ty, depth + 1, nodes))
        }
    }
}

fn check_dims(dims: &[u32]) -> Result<(), E> {
    if dims.is_empty() || dims.contains(&0) {
        return Err(E::Invalid("an array dimension is zero".into()));
    }
    let total = dims
        .iter()
        .try_fold(1u64, |acc, d| acc.checked_mul(u64::from(*d)))
        .unwrap_or(u64::MAX);
    if total > MAX_ARRAY_ELEMENTS {
        return Err(E::TooLarge);
    }
    Ok(())
}

fn check_enum(e: &EnumDesc) -> Result<(), E> {
    if e.literals.is_empty() {
        return Err(E::Invalid(format!("enum {} has no literal", e.name)));
    }
    if e.bit_bound == 0 || e.bit_bound > 32 {
        return Err(E::Invalid(format!("enum bit bound {}", e.bit_bound)));
    }
    Ok(())
}

fn check_bitmask(b: &BitmaskDesc) -> Result<(), E> {
    if b.bit_bound == 0 || b.bit_bound > 64 {
        return Err(E::Invalid(format!("bitmask bit bound {}", b.bit_bound)));
    }
    let mut seen = HashSet::new();
    for (name, p) in &b.flags {
        if *p >= b.bit_bound || !seen.insert(*p) {
            return Err(E::Invalid(format!(
                "bitmask {} flag {name} at position {p}",
                b.name
            )));
        }
    }
    Ok(())
}

/// Map keys are integers or strings (IDL 4.2 §7.4.13.4.3.3).
fn check_map_key(key: &TypeDesc) -> Result<(), E> {
    match key {
        TypeDesc::String { .. } => Ok(()),
        TypeDesc::Primitive(p)
            if !matches!(p, Primitive::Float32 | Primitive::Float64 | Primitive::Bool) =>
        {
            Ok(())
        }
        other => Err(E::Invalid(format!("map key of type {other:?}"))),
    }
}

fn check_union(u: &UnionDesc) -> Result<(), E> {
    let Some((lo, hi)) = super::codec_ext::disc_range(&u.discriminator) else {
        return Err(E::Invalid(format!(
            "union {} has a discriminator of type {:?}",
            u.name, u.discriminator
        )));
    };
    let mut ids = HashSet::new();
    let mut labels = HashSet::new();
    let mut defaults = 0;
    for c in &u.cases {
        if !ids.insert(c.id) || c.id > crate::xtypes::mutable::MAX_MEMBER_ID {
            return Err(E::Invalid(format!("union member id {}", c.id)));
        }
        defaults += usize::from(c.default);
        if c.labels.is_empty() && !c.default {
            return Err(E::Invalid(format!("union case {} has no label", c.name)));
        }
        for l in &c.labels {
            if !(lo..=hi).contains(&i64::from(*l)) || !labels.insert(*l) {
                return Err(E::Invalid(format!("union {} label {l}", u.name)));
            }
        }
    }
    if defaults > 1 {
        return Err(E::Invalid(format!("union {} has two defaults", u.name)));
    }
    Ok(())
}

fn check_members(members: &[MemberDesc]) -> Result<(), E> {
    let mut ids = HashSet::new();
    for m in members {
        if !ids.insert(m.id) {
            return Err(E::Invalid(format!("member id {} used twice", m.id)));
        }
        if m.key && m.optional {
            return Err(E::Invalid(format!("key member {} is optional", m.name)));
        }
        if m.id > crate::xtypes::mutable::MAX_MEMBER_ID {
            return Err(E::Invalid(format!("member id {:#x}", m.id)));
        }
    }
    Ok(())
}

/// Builds the description of `top` and the bundle to announce for it.
pub(super) fn from_objects(
    top: &TypeIdentifier,
    resolve: &dyn Fn(&TypeIdentifier) -> Option<TypeObject>,
) -> Result<(TypeDesc, TypeBundle), E> {
    let mut b = Resolver {
        resolve,
        structs: HashMap::new(),
        enums: HashMap::new(),
        others: HashMap::new(),
        in_progress: HashSet::new(),
        objects: BTreeMap::new(),
        nodes: 0,
    };
    let desc = b.identifier(top, 0)?;
    if !matches!(desc, TypeDesc::Struct(_)) {
        return Err(E::NotAStruct(format!("{top:?}")));
    }
    let bundle = match top {
        TypeIdentifier::Complete(_) => bundle_from_complete(top, &b.objects),
        // Minimal objects lack names: announce what the description gives.
        _ => TypeBundle::new(&desc),
    };
    Ok((desc, bundle))
}

struct Resolver<'a> {
    resolve: &'a dyn Fn(&TypeIdentifier) -> Option<TypeObject>,
    structs: HashMap<TypeIdentifier, Arc<StructDesc>>,
    enums: HashMap<TypeIdentifier, Arc<EnumDesc>>,
    /// Unions and bitmasks resolved so far.
    others: HashMap<TypeIdentifier, TypeDesc>,
    in_progress: HashSet<TypeIdentifier>,
    /// Every hashed object reached, by the bytes of its identifier.
    objects: BTreeMap<Vec<u8>, (TypeIdentifier, TypeObject)>,
    nodes: usize,
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl Resolver<'_> {
    fn count(&mut self, n: usize) -> Result<(), E> {
        self.nodes = self.nodes.saturating_add(n);
        if self.nodes > MAX_TYPE_NODES {
            return Err(E::TooLarge);
        }
        Ok(())
    }

    fn identifier(&mut self, id: &TypeIdentifier, depth: usize) -> Result<TypeDesc, E> {
        if depth > MAX_DEPTH {
            return Err(E::TooDeep);
        }
        self.count(1)?;
        Ok(match id {
            TypeIdentifier::None => return Err(E::Invalid("a member of type TK_NONE".into())),
            TypeIdentifier::Primitive(k) => TypeDesc::Primitive(primitive(*k)?),
            TypeIdentifier::String8 { bound } => TypeDesc::String { bound: *bound },
            TypeIdentifier::PlainSequence { bound, element, .. } => TypeDesc::Sequence {
                element: Box::new(self.identifier(element, depth + 1)?),
                bound: *bound,
            },
            TypeIdentifier::PlainArray { dims, element, .. } => {
                check_dims(dims)?;
                TypeDesc::Array {
                    element: Box::new(self.identifier(element, depth + 1)?),
                    dims: dims.clone(),
                }
            }
            TypeIdentifier::PlainMap {
                bound,
                element,
                key,
                ..
            } => {
                let key = self.identifier(key, depth + 1)?;
                check_map_key(&key)?;
                TypeDesc::Map {
                    key: Box::new(key),
                    value: Box::new(self.identifier(element, depth + 1)?),
                    bound: *bound,
                }
            }
            TypeIdentifier::Minimal(_) | TypeIdentifier::Complete(_) => {
                if let Some(d) = self.others.get(id) {
                    return Ok(d.clone());
                }
                if let Some(s) = self.structs.get(id) {
                    return Ok(TypeDesc::Struct(s.clone()));
                }
                if let Some(e) = self.enums.get(id) {
                    return Ok(TypeDesc::Enum(e.clone()));
                }
                if !self.in_progress.insert(id.clone()) {
                    return Err(E::TooDeep);
                }
                let obj = (self.resolve)(id).ok_or_else(|| E::Unresolved(id.clone()))?;
                let expected = match id {
                    TypeIdentifier::Minimal(_) => EquivalenceKind::Minimal,
                    _ => EquivalenceKind::Complete,
                };
                if obj.kind != expected {
                    return Err(E::Invalid("object kind differs from its identifier".into()));
                }
                self.objects
                    .insert(id.to_bytes(), (id.clone(), obj.clone()));
                let out = match &obj.body {
                    TypeObjectBody::Struct(s) => {
                        let d = Arc::new(self.struct_type(id, s, depth)?);
                        self.structs.insert(id.clone(), d.clone());
                        TypeDesc::Struct(d)
                    }
                    TypeObjectBody::Enum(e) => {
                        let d = Arc::new(self.enum_type(id, e)?);
                        self.enums.insert(id.clone(), d.clone());
                        TypeDesc::Enum(d)
                    }
                    TypeObjectBody::Union(u) => {
                        let d = TypeDesc::Union(Arc::new(self.union_type(id, u, depth)?));
                        self.others.insert(id.clone(), d.clone());
                        d
                    }
                    TypeObjectBody::Bitmask(b) => {
                        let d = TypeDesc::Bitmask(Arc::new(self.bitmask_type(id, b)?));
                        self.others.insert(id.clone(), d.clone());
                        d
                    }
                };
                self.in_progress.remove(id);
                out
            }
        })
    }

    fn struct_type(
        &mut self,
        id: &TypeIdentifier,
        s: &StructType,
        depth: usize,
    ) -> Result<StructDesc, E> {
        self.count(s.members.len())?;
        let extensibility = extensibility(s.flags);
        let mut members = Vec::with_capacity(s.members.len());
        if s.base_type != TypeIdentifier::None {
            // A derived struct is encoded as its base's members followed by its own.
            match self.identifier(&s.base_type, depth + 1)? {
                TypeDesc::Struct(base) => {
                    if base.extensibility != extensibility {
                        return Err(E::Invalid("base type of another extensibility".into()));
                    }
                    members.extend(base.members.iter().cloned());
                }
                _ => return Err(E::Invalid("base type is not a struct".into())),
            }
        }
        for m in &s.members {
            members.push(MemberDesc {
                name: match &m.name {
                    MemberName::Name(n) => n.clone(),
                    MemberName::Hash(_) => format!("member_{}", m.id),
                },
                id: m.id,
                ty: self.identifier(&m.type_id, depth + 1)?,
                key: m.flags & flags::KEY != 0,
                optional: m.flags & flags::OPTIONAL != 0,
                must_understand: m.flags & flags::MUST_UNDERSTAND != 0,
            });
        }
        check_members(&members)?;
        Ok(StructDesc {
            name: s
                .type_name
                .clone()
                .unwrap_or_else(|| format!("type_{}", hex(&id.to_bytes()[1..]))),
            extensibility,
            members,
        })
    }

    fn union_type(
        &mut self,
        id: &TypeIdentifier,
        u: &UnionType,
        depth: usize,
    ) -> Result<UnionDesc, E> {
        self.count(u.members.len())?;
        let discriminator = self.identifier(&u.discriminator, depth + 1)?;
        let mut cases = Vec::with_capacity(u.members.len());
        for m in &u.members {
            cases.push(UnionCase {
                name: match &m.name {
                    MemberName::Name(n) => n.clone(),
                    MemberName::Hash(_) => format!("member_{}", m.id),
                },
                id: m.id,
                labels: m.labels.clone(),
                default: m.flags & flags::IS_DEFAULT != 0,
                ty: self.identifier(&m.type_id, depth + 1)?,
            });
        }
        let d = UnionDesc {
            name: u
                .type_name
                .clone()
                .unwrap_or_else(|| format!("union_{}", hex(&id.to_bytes()[1..]))),
            extensibility: extensibility(u.flags),
            discriminator,
            discriminator_key: u.discriminator_flags & flags::KEY != 0,
            cases,
        };
        check_union(&d)?;
        Ok(d)
    }

    fn bitmask_type(&mut self, id: &TypeIdentifier, b: &BitmaskType) -> Result<BitmaskDesc, E> {
        self.count(b.bit_flags.len())?;
        let d = BitmaskDesc {
            name: b
                .type_name
                .clone()
                .unwrap_or_else(|| format!("bitmask_{}", hex(&id.to_bytes()[1..]))),
            bit_bound: b.bit_bound,
            flags: b
                .bit_flags
                .iter()
                .map(|f| {
                    let name = match &f.name {
                        MemberName::Name(n) => n.clone(),
                        MemberName::Hash(_) => format!("flag_{}", f.position),
                    };
                    (name, f.position)
                })
                .collect(),
        };
        check_bitmask(&d)?;
        Ok(d)
    }

    fn enum_type(&mut self, id: &TypeIdentifier, e: &EnumType) -> Result<EnumDesc, E> {
        self.count(e.literals.len())?;
        let d = EnumDesc {
            name: e
                .type_name
                .clone()
                .unwrap_or_else(|| format!("enum_{}", hex(&id.to_bytes()[1..]))),
            extensibility: extensibility(e.flags),
            bit_bound: e.bit_bound,
            literals: e
                .literals
                .iter()
                .map(|l| {
                    let name = match &l.name {
                        MemberName::Name(n) => n.clone(),
                        MemberName::Hash(_) => format!("literal_{}", l.value),
                    };
                    (name, l.value)
                })
                .collect(),
        };
        check_enum(&d)?;
        Ok(d)
    }
}

fn extensibility(f: u16) -> Extensibility {
    if f & flags::IS_MUTABLE != 0 {
        Extensibility::Mutable
    } else if f & flags::IS_APPENDABLE != 0 {
        Extensibility::Appendable
    } else {
        Extensibility::Final
    }
}

fn primitive(k: u8) -> Result<Primitive, E> {
    Ok(match k {
        tk::BOOLEAN => Primitive::Bool,
        tk::BYTE => Primitive::Byte,
        tk::INT8 => Primitive::Int8,
        tk::UINT8 => Primitive::UInt8,
        tk::INT16 => Primitive::Int16,
        tk::UINT16 => Primitive::UInt16,
        tk::INT32 => Primitive::Int32,
        tk::UINT32 => Primitive::UInt32,
        tk::INT64 => Primitive::Int64,
        tk::UINT64 => Primitive::UInt64,
        tk::FLOAT32 => Primitive::Float32,
        tk::FLOAT64 => Primitive::Float64,
        tk::CHAR8 => Primitive::Char8,
        tk::FLOAT128 => return Err(E::Unsupported("float128 (long double)".into())),
        tk::CHAR16 => return Err(E::Unsupported("wchar".into())),
        other => return Err(E::Unsupported(format!("type kind {other:#04x}"))),
    })
}

/// The bundle of a type resolved from complete objects: those objects as received, and the
/// minimal ones derived from them (names hashed, type names dropped, identifiers minimal).
fn bundle_from_complete(
    top: &TypeIdentifier,
    complete: &BTreeMap<Vec<u8>, (TypeIdentifier, TypeObject)>,
) -> TypeBundle {
    let mut minimal_of: HashMap<Vec<u8>, (TypeIdentifier, Vec<u8>)> = HashMap::new();
    // Dependencies first: a minimal object names its dependencies' minimal identifiers.
    fn minimal(
        key: &[u8],
        complete: &BTreeMap<Vec<u8>, (TypeIdentifier, TypeObject)>,
        done: &mut HashMap<Vec<u8>, (TypeIdentifier, Vec<u8>)>,
        depth: usize,
    ) -> Option<TypeIdentifier> {
        if let Some((id, _)) = done.get(key) {
            return Some(id.clone());
        }
        let (_, obj) = complete.get(key)?;
        if depth > MAX_DEPTH {
            return None;
        }
        let mut map =
            |id: &TypeIdentifier| to_minimal_id(id, &mut |k| minimal(k, complete, done, depth + 1));
        let body = match &obj.body {
            TypeObjectBody::Struct(s) => TypeObjectBody::Struct(StructType {
                flags: s.flags,
                base_type: map(&s.base_type),
                type_name: None,
                members: s
                    .members
                    .iter()
                    .map(|m| StructMember {
                        id: m.id,
                        flags: m.flags,
                        type_id: map(&m.type_id),
                        name: MemberName::Hash(m.name.hash()),
                    })
                    .collect(),
            }),
            TypeObjectBody::Enum(e) => TypeObjectBody::Enum(EnumType {
                flags: e.flags,
                bit_bound: e.bit_bound,
                type_name: None,
                literals: e
                    .literals
                    .iter()
                    .map(|l| EnumLiteral {
                        value: l.value,
                        flags: l.flags,
                        name: MemberName::Hash(l.name.hash()),
                    })
                    .collect(),
            }),
            TypeObjectBody::Union(u) => TypeObjectBody::Union(UnionType {
                flags: u.flags,
                type_name: None,
                discriminator_flags: u.discriminator_flags,
                discriminator: map(&u.discriminator),
                members: u
                    .members
                    .iter()
                    .map(|m| UnionMember {
                        id: m.id,
                        flags: m.flags,
                        type_id: map(&m.type_id),
                        labels: m.labels.clone(),
                        name: MemberName::Hash(m.name.hash()),
                    })
                    .collect(),
            }),
            TypeObjectBody::Bitmask(b) => TypeObjectBody::Bitmask(BitmaskType {
                flags: b.flags,
                bit_bound: b.bit_bound,
                type_name: None,
                bit_flags: b
                    .bit_flags
                    .iter()
                    .map(|f| BitFlag {
                        position: f.position,
                        flags: f.flags,
                        name: MemberName::Hash(f.name.hash()),
                    })
                    .collect(),
            }),
        };
        let m = TypeObject {
            kind: EquivalenceKind::Minimal,
            body,
        };
        let bytes = m.to_bytes();
        let id = m.identifier();
        done.insert(key.to_vec(), (id.clone(), bytes));
        Some(id)
    }
    let mut objects = BTreeMap::new();
    for (key, (id, obj)) in complete {
        objects.insert(key.clone(), (id.clone(), Arc::new(obj.to_bytes())));
        minimal(key, complete, &mut minimal_of, 0);
    }
    for (id, bytes) in minimal_of.values() {
        objects.insert(id.to_bytes(), (id.clone(), Arc::new(bytes.clone())));
    }
    let top_min = minimal_of
        .get(&top.to_bytes())
        .map_or(TypeIdentifier::None, |(id, _)| id.clone());
    let size = |id: &TypeIdentifier| -> u32 {
        objects
            .get(&id.to_bytes())
            .map_or(0, |(_, o): &(TypeIdentifier, Arc<Vec<u8>>)| o.len() as u32)
    };
    let deps = |top: &TypeIdentifier, kind: u8| {
        let list: Vec<_> = objects
            .values()
            .filter(|(id, _)| id != top && id.to_bytes().first() == Some(&kind))
            .map(|(id, _)| TypeIdentifierWithSize {
                type_id: id.clone(),
                size: size(id),
            })
            .collect();
        TypeIdentifierWithDependencies {
            typeid_with_size: TypeIdentifierWithSize {
                type_id: top.clone(),
                size: size(top),
            },
            dependent_typeid_count: list.len() as i32,
            dependent_typeids: list,
        }
    };
    let information = TypeInformation {
        minimal: deps(&top_min, ek::MINIMAL),
        complete: deps(top, ek::COMPLETE),
    };
    TypeBundle {
        minimal: top_min,
        complete: top.clone(),
        objects,
        information,
    }
}

/// The minimal counterpart of a complete identifier (`object` gives a hashed one's).
fn to_minimal_id(
    id: &TypeIdentifier,
    object: &mut dyn FnMut(&[u8]) -> Option<TypeIdentifier>,
) -> TypeIdentifier {
    match id {
        TypeIdentifier::Complete(_) => object(&id.to_bytes()).unwrap_or(TypeIdentifier::None),
        TypeIdentifier::PlainSequence {
            header,
            bound,
            element,
        } => TypeIdentifier::PlainSequence {
            header: minimal_header(header),
            bound: *bound,
            element: Box::new(to_minimal_id(element, object)),
        },
        TypeIdentifier::PlainArray {
            header,
            dims,
            element,
        } => TypeIdentifier::PlainArray {
            header: minimal_header(header),
            dims: dims.clone(),
            element: Box::new(to_minimal_id(element, object)),
        },
        TypeIdentifier::PlainMap {
            header,
            bound,
            element,
            key_flags,
            key,
        } => TypeIdentifier::PlainMap {
            header: minimal_header(header),
            bound: *bound,
            element: Box::new(to_minimal_id(element, object)),
            key_flags: *key_flags,
            key: Box::new(to_minimal_id(key, object)),
        },
        other => other.clone(),
    }
}

fn minimal_header(h: &CollectionHeader) -> CollectionHeader {
    CollectionHeader {
        equiv_kind: if h.equiv_kind == ek::COMPLETE {
            ek::MINIMAL
        } else {
            h.equiv_kind
        },
        element_flags: h.element_flags,
    }
}
