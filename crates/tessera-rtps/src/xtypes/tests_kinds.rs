//! Unions, maps and bitmasks: TypeObjects and identifiers byte for byte as Cyclone DDS 11
//! computes them (references from PyPI's `cyclonedds` 11.0.1, `XTBuilder.process_type`),
//! decoding round trips, and assignability.
//!
//! The reference types, in Python's terms:
//! ```text
//! class Color(IdlEnum, typename="Color"): RED = 0; GREEN = 1; BLUE = 2
//! @final class U(IdlUnion, discriminator=int32, typename="U"):
//!     a: case[[1, 2], int32]; b: case[[3], str]; c: default[float64]
//! @appendable class V(IdlUnion, discriminator=Color, typename="M::V"):
//!     r: case[[Color.RED], int16]; g: case[[Color.GREEN, Color.BLUE], sequence[uint8]]
//! @bit_bound(12) class Perm(IdlBitmask, typename="Perm"): read; write; exec (position 5)
//! @final struct S { U u; Perm p; };   @appendable struct T { V v; int64 k; };
//! ```
//! Cyclone's Python builder cannot build a TypeObject for a map (and its C IDL compiler has
//! no maps): the map identifier is checked against the layout of DDS-XTypes 1.3 §7.3.4.2.

use std::sync::Arc;

use super::*;

pub(crate) fn hex(s: &str) -> Vec<u8> {
    let s: String = s.chars().filter(|c| c.is_ascii_hexdigit()).collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

pub(crate) fn p(x: Primitive) -> TypeDesc {
    TypeDesc::Primitive(x)
}

pub(crate) fn case(name: &str, id: u32, labels: &[i32], ty: TypeDesc) -> UnionCase {
    UnionCase {
        name: name.into(),
        id,
        labels: labels.to_vec(),
        default: false,
        ty,
    }
}

pub(crate) fn union_u() -> TypeDesc {
    let mut c = case("c", 2, &[], p(Primitive::Float64));
    c.default = true;
    TypeDesc::Union(Arc::new(UnionDesc {
        name: "U".into(),
        extensibility: Extensibility::Final,
        discriminator: p(Primitive::Int32),
        discriminator_key: false,
        cases: vec![
            case("a", 0, &[1, 2], p(Primitive::Int32)),
            case("b", 1, &[3], TypeDesc::String { bound: 0 }),
            c,
        ],
    }))
}

pub(crate) fn color() -> TypeDesc {
    TypeDesc::Enum(Arc::new(EnumDesc {
        name: "Color".into(),
        extensibility: Extensibility::Final,
        bit_bound: 32,
        literals: vec![("RED".into(), 0), ("GREEN".into(), 1), ("BLUE".into(), 2)],
    }))
}

pub(crate) fn union_v() -> TypeDesc {
    TypeDesc::Union(Arc::new(UnionDesc {
        name: "M::V".into(),
        extensibility: Extensibility::Appendable,
        discriminator: color(),
        discriminator_key: false,
        cases: vec![
            case("r", 0, &[0], p(Primitive::Int16)),
            case(
                "g",
                1,
                &[1, 2],
                TypeDesc::Sequence {
                    element: Box::new(p(Primitive::UInt8)),
                    bound: 0,
                },
            ),
        ],
    }))
}

pub(crate) fn perm() -> TypeDesc {
    TypeDesc::Bitmask(Arc::new(BitmaskDesc {
        name: "Perm".into(),
        bit_bound: 12,
        flags: vec![("read".into(), 0), ("write".into(), 1), ("exec".into(), 5)],
    }))
}

fn struct_of(name: &str, ext: Extensibility, members: Vec<(&str, TypeDesc)>) -> TypeDesc {
    TypeDesc::Struct(Arc::new(StructDesc {
        name: name.into(),
        extensibility: ext,
        members: members
            .into_iter()
            .enumerate()
            .map(|(i, (n, t))| MemberDesc::new(n, i as u32, t))
            .collect(),
    }))
}

fn object_of(b: &TypeBundle, id: &TypeIdentifier) -> Vec<u8> {
    b.object(id).unwrap().as_slice().to_vec()
}

#[test]
fn union_objects_match_cyclone() {
    let b = TypeBundle::new(&union_u());
    assert_eq!(b.minimal.to_bytes(), hex("f1dbb84e27322e24649b13799aed8b"));
    assert_eq!(b.complete.to_bytes(), hex("f23a0019d36b65d96b36f146076cee"));
    assert_eq!(
        object_of(&b, &b.minimal),
        hex(
            "60000000f15201000000000003000000110004004c00000003000000180000000000000001000400\
             0200000001000000020000000cc175b91400000001000000010070000100000003000000\
             92eb5ffe100000000200000041000a00000000004a8a08f0"
        )
    );
    assert_eq!(
        object_of(&b, &b.complete),
        hex(
            "7c000000f25201000a0000000000000002000000550000000500000011000400000000005800\
             0000030000001c0000000000000001000400020000000100000002000000020000006100\
             0000180000000100000001007000010000000300000002000000620000001400000002000000\
             41000a00000000000200000063000000"
        )
    );
}

#[test]
fn union_with_enum_discriminator_matches_cyclone() {
    let b = TypeBundle::new(&union_v());
    assert_eq!(b.minimal.to_bytes(), hex("f1f3115f5cd057ed14de9fcfac5283"));
    assert_eq!(b.complete.to_bytes(), hex("f2adf5401f9cc43b5702cab7402dd2"));
    // The enum is a dependency, minimal and complete.
    assert_eq!(b.objects.len(), 4);
    assert_eq!(b.information.minimal.dependent_typeid_count, 1);
}

#[test]
fn bitmask_objects_match_cyclone() {
    let b = TypeBundle::new(&perm());
    assert_eq!(b.minimal.to_bytes(), hex("f1155f2c5dceed10f81398f730ffe8"));
    assert_eq!(b.complete.to_bytes(), hex("f2a7b18a31ed35b1bdcdf2bbe4a102"));
    assert_eq!(
        object_of(&b, &b.minimal),
        hex(
            "40000000f14100003800000001000000020000000c000000280000000300000008000000\
             00000000ecae13110800000001000000efb2a684080000000500000052fb3679"
        )
    );
    assert_eq!(
        object_of(&b, &b.complete),
        hex(
            "63000000f24100005b000000010000000d0000000c000000050000005065726d000000003f00\
             0000030000000f0000000000000005000000726561640000000010000000010000000600\
             000077726974650000000f000000050000000500000065786563000000"
        )
    );
}

#[test]
fn bitmask_flags_are_listed_by_position() {
    let TypeDesc::Bitmask(b) = perm() else {
        unreachable!()
    };
    let mut shuffled = (*b).clone();
    shuffled.flags.reverse();
    let a = TypeBundle::new(&perm());
    let s = TypeBundle::new(&TypeDesc::Bitmask(Arc::new(shuffled)));
    assert_eq!(a.minimal, s.minimal);
}

#[test]
fn structs_with_unions_and_bitmasks_match_cyclone() {
    let s = struct_of(
        "S",
        Extensibility::Final,
        vec![("u", union_u()), ("p", perm())],
    );
    let b = TypeBundle::new(&s);
    assert_eq!(b.minimal.to_bytes(), hex("f1f3d0b023610d9074d7eb5a72b9fd"));
    assert_eq!(b.complete.to_bytes(), hex("f25acb8496b939313e8773d0c02026"));
    let t = struct_of(
        "T",
        Extensibility::Appendable,
        vec![("v", union_v()), ("k", p(Primitive::Int64))],
    );
    let b = TypeBundle::new(&t);
    assert_eq!(b.minimal.to_bytes(), hex("f147e968864942b6b53f0c94033683"));
    assert_eq!(b.complete.to_bytes(), hex("f24ab5b26a365b0d0b409742ed9d6b"));
    // T, V and Color, each minimal and complete.
    assert_eq!(b.objects.len(), 6);
}

pub(crate) fn map_of(key: TypeDesc, value: TypeDesc, bound: u32) -> TypeDesc {
    TypeDesc::Map {
        key: Box::new(key),
        value: Box::new(value),
        bound,
    }
}

#[test]
fn map_identifiers_follow_the_specification() {
    let m = struct_of(
        "Mp",
        Extensibility::Final,
        vec![
            (
                "a",
                map_of(TypeDesc::String { bound: 0 }, p(Primitive::Int32), 0),
            ),
            ("b", map_of(p(Primitive::Int64), union_u(), 1000)),
        ],
    );
    let b = TypeBundle::new(&m);
    let Ok(TypeObjectBody::Struct(s)) =
        TypeObject::from_bytes(&object_of(&b, &b.minimal)).map(|o| o.body)
    else {
        panic!("not a struct");
    };
    // Small form: octet bound; header EK_BOTH; element, then key flags (aligned) and key.
    assert_eq!(
        s.members[0].type_id.to_bytes(),
        hex("a0 f3 0100 00 04 0100 7000")
    );
    // Large form with a hashed element: the header takes the object's kind.
    let TypeIdentifier::PlainMap { header, bound, .. } = &s.members[1].type_id else {
        panic!("not a map");
    };
    assert_eq!((header.equiv_kind, *bound), (ek::MINIMAL, 1000));
    let bytes = s.members[1].type_id.to_bytes();
    assert_eq!(bytes[0], ti::PLAIN_MAP_LARGE);
    assert_eq!(
        TypeIdentifier::decode(&mut crate::cdr::CdrReader::new(
            &bytes,
            crate::cdr::Encoding::XCDR2_LE
        ))
        .unwrap(),
        s.members[1].type_id
    );
}

#[test]
fn new_objects_round_trip_through_the_decoder() {
    let t = struct_of(
        "W",
        Extensibility::Mutable,
        vec![
            ("u", union_u()),
            ("v", union_v()),
            ("p", perm()),
            ("m", map_of(p(Primitive::UInt16), union_v(), 0)),
        ],
    );
    let b = TypeBundle::new(&t);
    for (id, bytes) in b.objects.values() {
        let o = TypeObject::from_bytes(bytes).unwrap();
        assert_eq!(&o.to_bytes(), bytes.as_ref());
        assert_eq!(&o.identifier(), id);
    }
}

#[test]
fn truncated_objects_are_errors_not_panics() {
    let b = TypeBundle::new(&struct_of(
        "X",
        Extensibility::Final,
        vec![("u", union_v()), ("p", perm())],
    ));
    for (_, bytes) in b.objects.values() {
        for n in 0..bytes.len() {
            assert!(TypeObject::from_bytes(&bytes[..n]).is_err());
        }
    }
}

#[test]
fn bitmask_flag_beyond_bit_bound_is_rejected() {
    let b = TypeBundle::new(&perm());
    let mut bytes = object_of(&b, &b.minimal);
    // The bit bound (12) sits after the type and header DHEADERs; make it 5, below exec's 5.
    assert_eq!(&bytes[20..22], &[12, 0]);
    bytes[20] = 5;
    assert_eq!(TypeObject::from_bytes(&bytes), Err(XTypesError::BadValue));
}

mod assignability {
    use super::*;
    use crate::qos::TypeConsistencyEnforcement;

    fn verdict(r: &TypeDesc, w: &TypeDesc) -> Assignability {
        let (rb, wb) = (TypeBundle::new(r), TypeBundle::new(w));
        let resolve = |id: &TypeIdentifier| {
            rb.object(id)
                .or_else(|| wb.object(id))
                .and_then(|o| TypeObject::from_bytes(o).ok())
        };
        assignable(
            &rb.minimal,
            &wb.minimal,
            &TypeConsistencyEnforcement::default(),
            &resolve,
        )
    }

    fn in_struct(t: TypeDesc) -> TypeDesc {
        struct_of("Holder", Extensibility::Appendable, vec![("x", t)])
    }

    fn with_cases(u: &TypeDesc, f: impl FnOnce(&mut UnionDesc)) -> TypeDesc {
        let TypeDesc::Union(d) = u else {
            unreachable!()
        };
        let mut d = (**d).clone();
        f(&mut d);
        TypeDesc::Union(Arc::new(d))
    }

    #[test]
    fn unions() {
        let u = union_u();
        assert_eq!(
            verdict(&in_struct(u.clone()), &in_struct(u.clone())),
            Assignability::Assignable
        );
        // Another discriminator type.
        let other = with_cases(&u, |d| d.discriminator = p(Primitive::Int16));
        assert_eq!(
            verdict(&in_struct(u.clone()), &in_struct(other)),
            Assignability::NotAssignable
        );
        // A final union with another label set.
        let fewer = with_cases(&u, |d| d.cases[0].labels = vec![1]);
        assert_eq!(
            verdict(&in_struct(u.clone()), &in_struct(fewer)),
            Assignability::NotAssignable
        );
        // Appendable: a label added on one side is fine, a changed case type is not.
        let v = union_v();
        let grown = with_cases(&v, |d| d.cases[0].labels = vec![0, 3]);
        assert_eq!(
            verdict(&in_struct(v.clone()), &in_struct(grown)),
            Assignability::Assignable
        );
        let retyped = with_cases(&v, |d| d.cases[0].ty = p(Primitive::Int32));
        assert_eq!(
            verdict(&in_struct(v), &in_struct(retyped)),
            Assignability::NotAssignable
        );
    }

    #[test]
    fn maps_and_bitmasks() {
        let m = |b, v| in_struct(map_of(TypeDesc::String { bound: 0 }, v, b));
        let i32t = p(Primitive::Int32);
        assert_eq!(
            verdict(&m(0, i32t.clone()), &m(10, i32t.clone())),
            Assignability::Assignable
        );
        assert_eq!(
            verdict(&m(0, i32t), &m(0, p(Primitive::Int64))),
            Assignability::NotAssignable
        );
        let TypeDesc::Bitmask(b) = perm() else {
            unreachable!()
        };
        let mut wider = (*b).clone();
        wider.bit_bound = 16;
        assert_eq!(
            verdict(
                &in_struct(perm()),
                &in_struct(TypeDesc::Bitmask(Arc::new(wider)))
            ),
            Assignability::NotAssignable
        );
        let mut renamed = (*b).clone();
        renamed.flags[2].0 = "run".into();
        assert_eq!(
            verdict(
                &in_struct(perm()),
                &in_struct(TypeDesc::Bitmask(Arc::new(renamed)))
            ),
            Assignability::NotAssignable
        );
    }
}
