//! Dynamic types on hostile input: arbitrary bytes as a TypeObject turned into a dynamic type
//! (never panics; a type that builds encodes and decodes its default value), and as a sample
//! payload of a type with every kind the dynamic codec handles (what decodes fits the type,
//! re-encodes, and decodes to the same value; key hashes never panic).
#![no_main]

use std::collections::HashMap;
use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use tessera_rtps::cdr::{parse_payload, Encoding};
use tessera_rtps::xtypes::model::{
    BitmaskDesc, EnumDesc, Extensibility, MemberDesc, Primitive, StructDesc, UnionCase, UnionDesc,
};
use tessera_rtps::xtypes::{DynamicType, TypeDesc, TypeObject};

fn rich(ext: Extensibility) -> DynamicType {
    let inner = Arc::new(StructDesc {
        name: "Inner".into(),
        extensibility: Extensibility::Appendable,
        members: vec![
            MemberDesc::new("k", 0, TypeDesc::Primitive(Primitive::UInt16)).key(),
            MemberDesc::new("s", 1, TypeDesc::String { bound: 8 }),
        ],
    });
    let color = Arc::new(EnumDesc {
        name: "Color".into(),
        extensibility: Extensibility::Final,
        bit_bound: 8,
        literals: vec![("RED".into(), 0), ("BLUE".into(), 7)],
    });
    let mut opt = MemberDesc::new("o", 5, TypeDesc::Primitive(Primitive::Float64));
    opt.optional = true;
    // A union with a default case, over the enum, of the given extensibility.
    let union = |ext| {
        TypeDesc::Union(Arc::new(UnionDesc {
            name: "U".into(),
            extensibility: ext,
            discriminator: TypeDesc::Enum(color.clone()),
            discriminator_key: false,
            cases: vec![
                UnionCase {
                    name: "s".into(),
                    id: 1,
                    labels: vec![0],
                    default: false,
                    ty: TypeDesc::String { bound: 0 },
                },
                UnionCase {
                    name: "d".into(),
                    id: 2,
                    labels: vec![],
                    default: true,
                    ty: TypeDesc::Struct(inner.clone()),
                },
            ],
        }))
    };
    let bits = TypeDesc::Bitmask(Arc::new(BitmaskDesc {
        name: "Bits".into(),
        bit_bound: 20,
        flags: vec![("a".into(), 0), ("b".into(), 19)],
    }));
    DynamicType::from_desc(TypeDesc::Struct(Arc::new(StructDesc {
        name: "Rich".into(),
        extensibility: ext,
        members: vec![
            MemberDesc::new("id", 1, TypeDesc::Primitive(Primitive::Int64)).key(),
            MemberDesc::new("inner", 2, TypeDesc::Struct(inner.clone())).key(),
            MemberDesc::new(
                "list",
                3,
                TypeDesc::Sequence {
                    element: Box::new(TypeDesc::Struct(inner.clone())),
                    bound: 0,
                },
            ),
            MemberDesc::new(
                "colors",
                4,
                TypeDesc::Array {
                    element: Box::new(TypeDesc::Enum(color.clone())),
                    dims: vec![2, 3],
                },
            ),
            opt,
            MemberDesc::new(
                "bytes",
                6,
                TypeDesc::Sequence {
                    element: Box::new(TypeDesc::Primitive(Primitive::Byte)),
                    bound: 0,
                },
            ),
            MemberDesc::new("u", 7, union(ext)),
            MemberDesc::new(
                "m",
                8,
                TypeDesc::Map {
                    key: Box::new(TypeDesc::String { bound: 0 }),
                    value: Box::new(union(Extensibility::Appendable)),
                    bound: 0,
                },
            ),
            MemberDesc::new("bits", 9, bits).key(),
        ],
    })))
    .expect("a valid type")
}

fuzz_target!(|data: &[u8]| {
    if let Ok(obj) = TypeObject::from_bytes(data) {
        let id = obj.identifier();
        let map: HashMap<_, _> = [(id.clone(), obj)].into_iter().collect();
        if let Ok(t) = DynamicType::from_type_object_map(&id, &map) {
            let v = t.default_value();
            let b = t.serialize(&v, Encoding::XCDR2_LE).expect("default value fits");
            assert_eq!(t.deserialize(&b), Ok(v));
        }
    }
    for ext in [Extensibility::Final, Extensibility::Appendable, Extensibility::Mutable] {
        let t = rich(ext);
        let _ = t.key_hash_from_key_payload(data);
        if let Ok(v) = t.deserialize(data) {
            t.validate(&v).expect("a decoded value fits its type");
            let (enc, _) = parse_payload(data).expect("decoded, so the header parsed");
            let again = t.serialize(&v, enc).expect("re-encodes");
            assert_eq!(t.deserialize(&again), Ok(v.clone()));
            assert_eq!(
                t.key_hash_from_sample_payload(&again).ok(),
                t.key_hash(&v).ok()
            );
        }
    }
});
