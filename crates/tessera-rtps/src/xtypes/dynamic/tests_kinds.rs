//! Unions, maps and bitmasks as dynamic values: bytes as Cyclone's Python binding writes them,
//! round trips in every encoding, keys, text and JSON, and hostile payloads.

use std::sync::Arc;

use super::{DynamicType, DynamicValue as V};
use crate::cdr::{CdrError, Encoding};
use crate::xtypes::model::{
    BitmaskDesc, Extensibility, MemberDesc, Primitive, StructDesc, TypeDesc, UnionDesc,
};
// The reference types of the TypeObject tests (U, M::V, Perm, Color).
use crate::xtypes::tests_kinds::{case, hex, map_of, p, perm, union_u, union_v};

fn union(
    name: &str,
    ext: Extensibility,
    disc: TypeDesc,
    cases: Vec<crate::xtypes::UnionCase>,
) -> TypeDesc {
    TypeDesc::Union(Arc::new(UnionDesc {
        name: name.into(),
        extensibility: ext,
        discriminator: disc,
        discriminator_key: false,
        cases,
    }))
}

const ALL: [Encoding; 4] = [
    Encoding::XCDR1_LE,
    Encoding::XCDR1_BE,
    Encoding::XCDR2_LE,
    Encoding::XCDR2_BE,
];

fn top(name: &str, ext: Extensibility, members: Vec<(&str, TypeDesc)>) -> DynamicType {
    DynamicType::from_desc(TypeDesc::Struct(Arc::new(StructDesc {
        name: name.into(),
        extensibility: ext,
        members: members
            .into_iter()
            .enumerate()
            .map(|(i, (n, t))| MemberDesc::new(n, i as u32, t))
            .collect(),
    })))
    .unwrap()
}

fn un(d: i64, v: Option<V>) -> V {
    V::Union {
        discriminator: d,
        value: v.map(Box::new),
    }
}

/// The body of a payload: what follows the encapsulation header, without trailing padding.
fn body(payload: &[u8]) -> &[u8] {
    let pad = usize::from(payload[3] & 3);
    &payload[4..payload.len() - pad]
}

#[test]
fn final_union_and_bitmask_match_cyclone_python() {
    let t = top(
        "S",
        Extensibility::Final,
        vec![("u", union_u()), ("p", perm())],
    );
    let v = V::Struct(vec![Some(un(1, Some(V::Int32(5)))), Some(V::Bitmask(0x21))]);
    // cyclonedds 11.0.1: S(u=U(a=5), p=Perm(read=True, exec=True)).serialize()
    let x1 = hex("0001 0000 01000000 05000000 2100");
    assert_eq!(t.deserialize(&x1).unwrap(), v);
    assert_eq!(
        body(&t.serialize(&v, Encoding::XCDR1_LE).unwrap()),
        &x1[4..]
    );
    // The default case, its double 8-aligned in XCDR1.
    let d = V::Struct(vec![
        Some(un(-1, Some(V::Float64(2.5)))),
        Some(V::Bitmask(0)),
    ]);
    let x1 = hex("0001 0000 ffffffff 00000000 00000000 00000440 0000");
    assert_eq!(t.deserialize(&x1).unwrap(), d);
    assert_eq!(
        body(&t.serialize(&d, Encoding::XCDR1_LE).unwrap()),
        &x1[4..]
    );
}

#[test]
fn appendable_union_matches_cyclone_python() {
    let t = top(
        "T",
        Extensibility::Appendable,
        vec![("v", union_v()), ("k", p(Primitive::Int64))],
    );
    let v = V::Struct(vec![
        Some(un(1, Some(V::Bytes(vec![1, 2])))),
        Some(V::Int64(7)),
    ]);
    // T(v=V(g=[1, 2]), k=7).serialize(use_version_2=True), both byte orders.
    let le = hex("00090000 18000000 0a000000 01000000 02000000 0102 0000 07000000 00000000");
    let be = hex("00080000 00000018 0000000a 00000001 00000002 0102 0000 00000000 00000007");
    assert_eq!(t.deserialize(&le).unwrap(), v);
    assert_eq!(t.deserialize(&be).unwrap(), v);
    assert_eq!(t.serialize(&v, Encoding::XCDR2_LE).unwrap(), le);
    assert_eq!(t.serialize(&v, Encoding::XCDR2_BE).unwrap(), be);
}

#[test]
fn map_matches_cyclone_python_in_xcdr1() {
    let t = top(
        "W",
        Extensibility::Final,
        vec![
            (
                "m",
                map_of(TypeDesc::String { bound: 0 }, p(Primitive::Int32), 0),
            ),
            ("u", union_u()),
            ("p", perm()),
        ],
    );
    // W(m={'a': 1}, u=U(b='x'), p=Perm(write=True)).serialize()
    let x1 = hex("0001 0000 01000000 02000000 6100 0000 01000000 03000000 02000000 7800 0200");
    let v = V::Struct(vec![
        Some(V::Map(vec![(V::String("a".into()), V::Int32(1))])),
        Some(un(3, Some(V::String("x".into())))),
        Some(V::Bitmask(2)),
    ]);
    assert_eq!(t.deserialize(&x1).unwrap(), v);
    assert_eq!(
        body(&t.serialize(&v, Encoding::XCDR1_LE).unwrap()),
        &x1[4..]
    );
    // XCDR2: a string key is not primitive, so the entries sit inside a DHEADER.
    let x2 = t.serialize(&v, Encoding::XCDR2_LE).unwrap();
    assert_eq!(
        &x2[4..20],
        hex("10000000 01000000 02000000 6100 0000").as_slice()
    );
}

fn everything(ext: Extensibility) -> (DynamicType, Vec<V>) {
    let mutable_u = {
        let TypeDesc::Union(u) = union_u() else {
            unreachable!()
        };
        let mut u = (*u).clone();
        u.extensibility = Extensibility::Mutable;
        for c in &mut u.cases {
            c.id += 1;
        }
        TypeDesc::Union(Arc::new(u))
    };
    // No default: 9 selects nothing.
    let sparse = union(
        "Sparse",
        Extensibility::Final,
        p(Primitive::UInt8),
        vec![case("x", 0, &[1], p(Primitive::Int64))],
    );
    let big = TypeDesc::Bitmask(Arc::new(BitmaskDesc {
        name: "Big".into(),
        bit_bound: 40,
        flags: vec![("hi".into(), 39)],
    }));
    let t = top(
        "All",
        ext,
        vec![
            ("u", union_u()),
            ("v", union_v()),
            ("mu", mutable_u),
            ("s", sparse),
            ("p", perm()),
            ("b", big),
            ("m", map_of(p(Primitive::UInt16), union_v(), 4)),
            ("n", map_of(p(Primitive::Int32), p(Primitive::Float64), 0)),
        ],
    );
    let values = vec![
        t.default_value(),
        V::Struct(vec![
            Some(un(3, Some(V::String("hello".into())))),
            Some(un(0, Some(V::Int16(-3)))),
            Some(un(2, Some(V::Int32(9)))),
            Some(un(9, None)),
            Some(V::Bitmask(0x23)),
            Some(V::Bitmask(1 << 39)),
            // JSON objects sort their keys: entries in that order round-trip through JSON.
            Some(V::Map(vec![
                (V::UInt16(1), un(0, Some(V::Int16(1)))),
                (V::UInt16(7), un(2, Some(V::Bytes(vec![9; 5])))),
            ])),
            Some(V::Map(vec![(V::Int32(-1), V::Float64(0.5))])),
        ]),
        V::Struct(vec![
            Some(un(77, Some(V::Float64(1e10)))),
            Some(un(2, Some(V::Bytes(vec![])))),
            Some(un(5, Some(V::Float64(-1.0)))),
            Some(un(1, Some(V::Int64(i64::MIN)))),
            Some(V::Bitmask(0)),
            Some(V::Bitmask(0)),
            Some(V::Map(vec![])),
            Some(V::Map(vec![])),
        ]),
    ];
    (t, values)
}

#[test]
fn round_trips_in_every_encoding() {
    for ext in [
        Extensibility::Final,
        Extensibility::Appendable,
        Extensibility::Mutable,
    ] {
        let (t, values) = everything(ext);
        for v in &values {
            t.validate(v).unwrap();
            for enc in ALL {
                let bytes = t.serialize(v, enc).unwrap();
                assert_eq!(&t.deserialize(&bytes).unwrap(), v, "{ext:?} {enc:?}");
            }
            let json = v.to_json(&t);
            assert_eq!(&V::from_json(&t, &json).unwrap(), v, "{json}");
        }
    }
}

#[test]
fn truncated_and_corrupted_payloads_are_errors() {
    let (t, values) = everything(Extensibility::Appendable);
    for enc in ALL {
        let bytes = t.serialize(&values[1], enc).unwrap();
        for n in 0..bytes.len() - 4 {
            let _ = t.deserialize(&bytes[..n]);
        }
        for i in 4..bytes.len() {
            let mut b = bytes.clone();
            b[i] ^= 0xff;
            let _ = t.deserialize(&b);
        }
    }
}

#[test]
fn hostile_map_count_is_refused_before_allocating() {
    let t = top(
        "M",
        Extensibility::Final,
        vec![("n", map_of(p(Primitive::Int32), p(Primitive::Int64), 0))],
    );
    let bytes = hex("00010000 ffffff0f 01000000");
    assert!(matches!(
        t.deserialize(&bytes),
        Err(CdrError::LengthTooLarge(_))
    ));
}

#[test]
fn repeated_map_key_is_refused() {
    let t = top(
        "M",
        Extensibility::Final,
        vec![("n", map_of(p(Primitive::Int16), p(Primitive::Int16), 0))],
    );
    let bytes = hex("00010000 02000000 0100 0200 0100 0300");
    assert_eq!(t.deserialize(&bytes), Err(CdrError::DuplicateMapKey));
    let v = V::Struct(vec![Some(V::Map(vec![
        (V::Int16(1), V::Int16(2)),
        (V::Int16(1), V::Int16(3)),
    ]))]);
    assert!(t.validate(&v).is_err());
}

#[test]
fn bitmask_bits_beyond_the_bound_are_refused() {
    let t = top("B", Extensibility::Final, vec![("p", perm())]);
    assert_eq!(
        t.deserialize(&hex("00010000 0010")),
        Err(CdrError::InvalidBitmask(0x1000))
    );
    assert!(t
        .validate(&V::Struct(vec![Some(V::Bitmask(1 << 12))]))
        .is_err());
}

#[test]
fn union_values_must_agree_with_their_discriminator() {
    let t = top("U1", Extensibility::Final, vec![("u", union_u())]);
    // Selects `a` but carries a string; selects `a` but carries nothing.
    assert!(t
        .validate(&V::Struct(vec![Some(un(1, Some(V::String("x".into()))))]))
        .is_err());
    assert!(t.validate(&V::Struct(vec![Some(un(1, None))])).is_err());
    // An enum discriminator must name a literal.
    let t = top("V1", Extensibility::Final, vec![("v", union_v())]);
    assert!(t
        .validate(&V::Struct(vec![Some(un(5, Some(V::Int16(1))))]))
        .is_err());
}

#[test]
fn appendable_union_skips_a_member_the_reader_does_not_know() {
    // A newer writer added `case 3: long long z`; an older reader sees no member.
    let TypeDesc::Union(v) = union_v() else {
        unreachable!()
    };
    let mut newer = (*v).clone();
    if let TypeDesc::Enum(e) = &mut newer.discriminator {
        let mut e2 = (**e).clone();
        e2.literals.push(("YELLOW".into(), 3));
        *e = Arc::new(e2);
    }
    newer.cases.push(case("z", 2, &[3], p(Primitive::Int64)));
    let w = top(
        "T",
        Extensibility::Appendable,
        vec![
            ("v", TypeDesc::Union(Arc::new(newer))),
            ("k", p(Primitive::Int32)),
        ],
    );
    let bytes = w
        .serialize(
            &V::Struct(vec![Some(un(3, Some(V::Int64(5)))), Some(V::Int32(8))]),
            Encoding::XCDR2_LE,
        )
        .unwrap();
    let r = top(
        "T",
        Extensibility::Appendable,
        vec![("v", union_v()), ("k", p(Primitive::Int32))],
    );
    // The reader's enum lacks YELLOW: the sample is refused, not misread.
    assert_eq!(r.deserialize(&bytes), Err(CdrError::InvalidEnum(3)));
}

#[test]
fn text_as_cyclone_prints_it() {
    let t = top(
        "W",
        Extensibility::Final,
        vec![
            (
                "m",
                map_of(TypeDesc::String { bound: 0 }, p(Primitive::Int32), 0),
            ),
            ("u", union_u()),
            ("v", union_v()),
            ("p", perm()),
        ],
    );
    let v = V::Struct(vec![
        Some(V::Map(vec![(V::String("a".into()), V::Int32(1))])),
        Some(un(3, Some(V::String("x".into())))),
        Some(un(0, Some(V::Int16(4)))),
        Some(V::Bitmask(2)),
    ]);
    assert_eq!(
        v.to_text(&t),
        "W(m={'a': 1}, u=U[Union](3, 'x'), v=V[Union](<Color.RED: 0>, 4), \
         p=Perm(read=False, write=True, exec=False))"
    );
    let json = v.to_json(&t);
    assert_eq!(
        json.to_string(),
        r#"{"m":{"a":1},"p":2,"u":{"b":"x","discriminator":3},"v":{"discriminator":"RED","r":4}}"#
    );
    // A member name alone picks the discriminator; flags by name.
    let j = serde_json::json!({"u": {"a": 5}, "v": {"g": [1]}, "p": ["exec"]});
    let got = V::from_json(&t, &j).unwrap();
    assert_eq!(
        got,
        V::Struct(vec![
            Some(V::Map(vec![])),
            Some(un(1, Some(V::Int32(5)))),
            Some(un(1, Some(V::Bytes(vec![1])))),
            Some(V::Bitmask(0x20)),
        ])
    );
}

#[test]
fn keys_with_unions_and_bitmasks() {
    let mut k1 = MemberDesc::new("u", 0, union_u()).key();
    k1.id = 0;
    let k2 = MemberDesc::new("p", 1, perm()).key();
    let t = DynamicType::from_desc(TypeDesc::Struct(Arc::new(StructDesc {
        name: "K".into(),
        extensibility: Extensibility::Final,
        members: vec![k1, k2, MemberDesc::new("x", 2, p(Primitive::Int32))],
    })))
    .unwrap();
    // long + max(long, string, double): a string makes it unbounded (MD5).
    assert_eq!(t.key_max_size(), None);
    let v = V::Struct(vec![
        Some(un(1, Some(V::Int32(5)))),
        Some(V::Bitmask(3)),
        Some(V::Int32(0)),
    ]);
    let h = t.key_hash(&v).unwrap();
    // The key form, big-endian XCDR2: 00000001 00000005 0003, MD5 as it is unbounded.
    let form = hex("00000001 00000005 0003");
    assert_eq!(h, md5::compute(&form).0);
    for enc in ALL {
        let bytes = t.serialize(&v, enc).unwrap();
        assert_eq!(t.key_hash_from_sample_payload(&bytes).unwrap(), h);
    }
    // Without the string case the key is bounded: 4 + 8 (double at offset 4) + 2 ≤ 16.
    let bounded = union(
        "UB",
        Extensibility::Final,
        p(Primitive::Int32),
        vec![case("a", 0, &[1], p(Primitive::Float64))],
    );
    let t = DynamicType::from_desc(TypeDesc::Struct(Arc::new(StructDesc {
        name: "KB".into(),
        extensibility: Extensibility::Final,
        members: vec![MemberDesc::new("u", 0, bounded).key()],
    })))
    .unwrap();
    assert_eq!(t.key_max_size(), Some(12));
    let v = V::Struct(vec![Some(un(1, Some(V::Float64(1.0))))]);
    let mut expect = hex("00000001 3ff00000 00000000");
    expect.resize(16, 0);
    assert_eq!(t.key_hash(&v).unwrap(), expect.as_slice());
}

/// A final struct holding an appendable union (or a map of appendable ones) cannot be written
/// in XCDR1 (Cyclone's readers refuse it): writers offer XCDR2, as for nested appendable
/// structs. Found by tests/interop/unions_cyclone_py.sh, where `tessera pub` wrote XCDR1.
#[test]
fn nested_appendable_unions_prefer_xcdr2() {
    let plain = top(
        "P",
        Extensibility::Final,
        vec![("u", union_u()), ("p", perm())],
    );
    assert!(!plain.prefers_xcdr2());
    let nested = top("N", Extensibility::Final, vec![("v", union_v())]);
    assert!(nested.prefers_xcdr2());
    let in_map = top(
        "M",
        Extensibility::Final,
        vec![("m", map_of(p(Primitive::Int32), union_v(), 0))],
    );
    assert!(in_map.prefers_xcdr2());
    // A final union whose case is an appendable struct.
    let inner = TypeDesc::Struct(Arc::new(StructDesc {
        name: "In".into(),
        extensibility: Extensibility::Appendable,
        members: vec![MemberDesc::new("x", 0, p(Primitive::Int8))],
    }));
    let u = union(
        "W",
        Extensibility::Final,
        p(Primitive::Int32),
        vec![case("a", 0, &[1], inner)],
    );
    assert!(top("C", Extensibility::Final, vec![("u", u)]).prefers_xcdr2());
}
