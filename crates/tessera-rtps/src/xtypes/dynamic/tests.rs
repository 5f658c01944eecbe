//! Hostile inputs: payloads and TypeObjects from peers never panic, deep or self-referring
//! types are refused, unsupported kinds are named.

use std::collections::HashMap;
use std::sync::Arc;

use proptest::prelude::*;

use super::{DynamicType, DynamicTypeError, DynamicValue as V};
use crate::cdr::Encoding;
use crate::xtypes::identifier::{CollectionHeader, TypeIdentifier};
use crate::xtypes::model::{EnumDesc, Extensibility, MemberDesc, Primitive, StructDesc, TypeDesc};
use crate::xtypes::object::{
    EquivalenceKind, MemberName, StructMember, StructType, TypeObject, TypeObjectBody,
};
use crate::xtypes::{ek, flags, tk, TypeBundle};

fn prim(p: Primitive) -> TypeDesc {
    TypeDesc::Primitive(p)
}

/// A type with every kind: mutable top, appendable and final nested structs, enum, optional,
/// sequences of structs, arrays.
fn rich() -> DynamicType {
    let inner = Arc::new(StructDesc {
        name: "Inner".into(),
        extensibility: Extensibility::Appendable,
        members: vec![
            MemberDesc::new("k", 0, prim(Primitive::UInt16)).key(),
            MemberDesc::new("s", 1, TypeDesc::String { bound: 8 }),
        ],
    });
    let color = Arc::new(EnumDesc {
        name: "Color".into(),
        extensibility: Extensibility::Final,
        bit_bound: 16,
        literals: vec![("RED".into(), 0), ("BLUE".into(), 7)],
    });
    let mut opt = MemberDesc::new("o", 5, prim(Primitive::Float64));
    opt.optional = true;
    DynamicType::from_desc(TypeDesc::Struct(Arc::new(StructDesc {
        name: "Rich".into(),
        extensibility: Extensibility::Mutable,
        members: vec![
            MemberDesc::new("id", 1, prim(Primitive::Int64)).key(),
            MemberDesc::new("inner", 2, TypeDesc::Struct(inner.clone())).key(),
            MemberDesc::new(
                "list",
                3,
                TypeDesc::Sequence {
                    element: Box::new(TypeDesc::Struct(inner)),
                    bound: 4,
                },
            ),
            MemberDesc::new(
                "colors",
                4,
                TypeDesc::Array {
                    element: Box::new(TypeDesc::Enum(color)),
                    dims: vec![2, 3],
                },
            ),
            opt,
            MemberDesc::new("c", 6, prim(Primitive::Char8)),
        ],
    })))
    .unwrap()
}

#[test]
fn rich_round_trips_in_every_encoding() {
    let t = rich();
    let v = t.default_value();
    for enc in [
        Encoding::XCDR1_LE,
        Encoding::XCDR1_BE,
        Encoding::XCDR2_LE,
        Encoding::XCDR2_BE,
    ] {
        let b = t.serialize(&v, enc).unwrap();
        assert_eq!(t.deserialize(&b), Ok(v.clone()), "{enc:?}");
        let k = t.serialize_key(&v, enc).unwrap();
        assert_eq!(t.key_hash_from_key_payload(&k).ok(), t.key_hash(&v).ok());
        assert_eq!(t.key_hash_from_sample_payload(&b).ok(), t.key_hash(&v).ok());
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn hostile_payloads_never_panic(body in proptest::collection::vec(any::<u8>(), 0..200), id in 0u8..12) {
        let t = rich();
        let mut p = vec![0, id, 0, 0];
        p.extend_from_slice(&body);
        let _ = t.deserialize(&p);
        let _ = t.key_hash_from_key_payload(&p);
        let _ = t.key_hash_from_sample_payload(&p);
    }

    #[test]
    fn mutated_samples_never_panic(at in 0usize..200, byte in any::<u8>(), enc in 0usize..4) {
        let t = rich();
        let enc = [Encoding::XCDR1_LE, Encoding::XCDR1_BE, Encoding::XCDR2_LE, Encoding::XCDR2_BE][enc];
        let mut b = t.serialize(&t.default_value(), enc).unwrap();
        let n = b.len();
        b[at % n] = byte;
        if let Ok(v) = t.deserialize(&b) {
            // What decodes fits the type and encodes again.
            prop_assert!(t.validate(&v).is_ok(), "{:?} {:?}", t.validate(&v), v);
            prop_assert!(t.serialize(&v, enc).is_ok());
        }
    }

    #[test]
    fn hostile_type_objects_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        if let Ok(obj) = TypeObject::from_bytes(&bytes) {
            let id = obj.identifier();
            let map: HashMap<_, _> = [(id.clone(), obj)].into_iter().collect();
            if let Ok(t) = DynamicType::from_type_object_map(&id, &map) {
                let v = t.default_value();
                let b = t.serialize(&v, Encoding::XCDR2_LE).unwrap();
                prop_assert_eq!(t.deserialize(&b), Ok(v));
            }
        }
    }
}

fn struct_object(kind: EquivalenceKind, members: Vec<StructMember>) -> TypeObject {
    TypeObject {
        kind,
        body: TypeObjectBody::Struct(StructType {
            flags: flags::IS_FINAL,
            base_type: TypeIdentifier::None,
            type_name: (kind == EquivalenceKind::Complete).then(|| "T".to_owned()),
            members,
        }),
    }
}

fn member(id: u32, type_id: TypeIdentifier) -> StructMember {
    StructMember {
        id,
        flags: flags::TRY_CONSTRUCT1,
        type_id,
        name: MemberName::Name(format!("m{id}")),
    }
}

#[test]
fn self_referring_and_deep_types_are_refused() {
    // An object naming its own identifier (a forged map: hashes cannot do this).
    let me = TypeIdentifier::Complete([7; 14]);
    let obj = struct_object(EquivalenceKind::Complete, vec![member(0, me.clone())]);
    let map: HashMap<_, _> = [(me.clone(), obj)].into_iter().collect();
    assert_eq!(
        DynamicType::from_type_object_map(&me, &map),
        Err(DynamicTypeError::TooDeep)
    );
    // A chain of 40 nested structs (each with two members of the next: shared, not copied).
    let mut map = HashMap::new();
    let mut next = TypeIdentifier::Primitive(tk::INT32);
    for _ in 0..40 {
        let o = struct_object(
            EquivalenceKind::Complete,
            vec![member(0, next.clone()), member(1, next.clone())],
        );
        next = o.identifier();
        map.insert(next.clone(), o);
    }
    assert_eq!(
        DynamicType::from_type_object_map(&next, &map),
        Err(DynamicTypeError::TooDeep)
    );
}

#[test]
fn missing_and_unsupported_types_are_named() {
    let gone = TypeIdentifier::Complete([1; 14]);
    let o = struct_object(EquivalenceKind::Complete, vec![member(0, gone.clone())]);
    let id = o.identifier();
    let map: HashMap<_, _> = [(id.clone(), o)].into_iter().collect();
    assert_eq!(
        DynamicType::from_type_object_map(&id, &map),
        Err(DynamicTypeError::Unresolved(gone))
    );
    let o = struct_object(
        EquivalenceKind::Complete,
        vec![member(0, TypeIdentifier::Primitive(tk::FLOAT128))],
    );
    let id = o.identifier();
    let map: HashMap<_, _> = [(id.clone(), o)].into_iter().collect();
    assert!(matches!(
        DynamicType::from_type_object_map(&id, &map),
        Err(DynamicTypeError::Unsupported(s)) if s.contains("float128")
    ));
    // A huge array.
    let o = struct_object(
        EquivalenceKind::Complete,
        vec![member(
            0,
            TypeIdentifier::PlainArray {
                header: CollectionHeader {
                    equiv_kind: ek::BOTH,
                    element_flags: 1,
                },
                dims: vec![65_536, 65_536],
                element: Box::new(TypeIdentifier::Primitive(tk::INT32)),
            },
        )],
    );
    let id = o.identifier();
    let map: HashMap<_, _> = [(id.clone(), o)].into_iter().collect();
    assert_eq!(
        DynamicType::from_type_object_map(&id, &map),
        Err(DynamicTypeError::TooLarge)
    );
}

#[test]
fn inheritance_is_flattened_base_first() {
    let base = struct_object(
        EquivalenceKind::Complete,
        vec![member(0, TypeIdentifier::Primitive(tk::INT16))],
    );
    let base_id = base.identifier();
    let mut derived = struct_object(
        EquivalenceKind::Complete,
        vec![member(1, TypeIdentifier::Primitive(tk::INT32))],
    );
    if let TypeObjectBody::Struct(s) = &mut derived.body {
        s.base_type = base_id.clone();
    }
    let id = derived.identifier();
    let map: HashMap<_, _> = [(id.clone(), derived), (base_id, base)]
        .into_iter()
        .collect();
    let t = DynamicType::from_type_object_map(&id, &map).unwrap();
    let names: Vec<_> = t
        .struct_desc()
        .members
        .iter()
        .map(|m| m.name.as_str())
        .collect();
    assert_eq!(names, ["m0", "m1"]);
    let v = V::Struct(vec![Some(V::Int16(-2)), Some(V::Int32(9))]);
    assert_eq!(
        t.serialize(&v, Encoding::XCDR1_LE).unwrap(),
        [0, 1, 0, 0, 0xfe, 0xff, 0, 0, 9, 0, 0, 0]
    );
    // The bundle serves the complete objects received and their minimal counterparts.
    let b: &TypeBundle = t.type_bundle();
    assert_eq!(b.complete, id);
    assert!(b.object(&b.minimal).is_some());
    assert_eq!(b.information.complete.dependent_typeid_count, 1);
    assert_eq!(b.information.minimal.dependent_typeid_count, 1);
}
