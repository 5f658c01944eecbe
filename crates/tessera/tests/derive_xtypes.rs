//! What `#[derive(TopicType)]` says about a type in XTypes terms, and the XCDR2 layout of
//! `@appendable` types.

use tessera::rtps::cdr::{
    deserialize_sample, key_hash, key_hash_from_key_payload, key_hash_from_sample_payload,
    serialize_key, serialize_sample, Encoding,
};
use tessera::rtps::xtypes::{
    flags, tk, Extensibility, StructType, TypeIdentifier, TypeObject, TypeObjectBody,
};
use tessera::TopicType;

/// The interoperability suite's ShapeType, with `octet` for `uint8` (Rust's `u8`), as the
/// interop peer has it.
#[path = "../examples/xtypes_peer/types.rs"]
mod peer;
use peer::Shape;

#[derive(Debug, Clone, PartialEq, TopicType)]
struct Inner {
    a: u16,
}

#[derive(Debug, Clone, PartialEq, TopicType)]
#[topic(type_name = "M::Ids")]
struct Ids {
    first: u32,
    #[id(10)]
    tenth: Inner,
    eleventh: [[i8; 2]; 3],
    #[id(3)]
    third: Vec<Inner>,
}

fn struct_of(bytes: &[u8]) -> StructType {
    match TypeObject::from_bytes(bytes).unwrap().body {
        TypeObjectBody::Struct(s) => s,
        other => panic!("{other:?}"),
    }
}

#[test]
fn shape_type_objects() {
    let b = Shape::type_bundle();
    assert_eq!(Shape::EXTENSIBILITY, Extensibility::Appendable);
    let s = struct_of(b.object(&b.complete).unwrap());
    assert_eq!(s.flags, flags::IS_APPENDABLE);
    assert_eq!(s.type_name.as_deref(), Some("ShapeType"));
    assert_eq!(s.members[0].flags, flags::TRY_CONSTRUCT1 | flags::KEY);
    assert_eq!(s.members[0].type_id, TypeIdentifier::String8 { bound: 128 });
    match &s.members[4].type_id {
        TypeIdentifier::PlainSequence { element, bound, .. } => {
            assert_eq!(**element, TypeIdentifier::Primitive(tk::BYTE));
            assert_eq!(*bound, 0);
        }
        other => panic!("{other:?}"),
    }
    // The TypeInformation names the objects the bundle serves, with their sizes.
    let info = &b.information;
    assert_eq!(info.minimal.typeid_with_size.type_id, b.minimal);
    assert_eq!(
        info.complete.typeid_with_size.size as usize,
        b.object(&b.complete).unwrap().len()
    );
}

#[test]
fn member_ids_follow_explicit_ids() {
    let b = Ids::type_bundle();
    let s = struct_of(b.object(&b.minimal).unwrap());
    let ids: Vec<u32> = s.members.iter().map(|m| m.id).collect();
    assert_eq!(ids, [0, 10, 11, 3]);
    // Inner is a dependency, listed in both halves of the TypeInformation.
    assert_eq!(b.information.minimal.dependent_typeids.len(), 1);
    assert_eq!(b.information.complete.dependent_typeids.len(), 1);
    assert_eq!(b.objects.len(), 4);
    assert!(matches!(s.members[1].type_id, TypeIdentifier::Minimal(_)));
    assert_eq!(
        s.members[2].type_id,
        TypeIdentifier::PlainArray {
            header: tessera::rtps::xtypes::CollectionHeader {
                equiv_kind: 0xf3,
                element_flags: 1
            },
            dims: vec![3, 2],
            element: Box::new(TypeIdentifier::Primitive(tk::INT8)),
        }
    );
    let c = struct_of(b.object(&b.complete).unwrap());
    assert_eq!(c.type_name.as_deref(), Some("M::Ids"));
}

#[test]
fn appendable_xcdr2_has_dheader_and_d_cdr2_id() {
    let v = Shape {
        color: "BLUE".into(),
        x: 10,
        y: 20,
        shapesize: 30,
        additional_payload_size: vec![],
    };
    // The suite's XCDR2 BLUE/10/20/30/[] sample (xtypes.md §5).
    let expect: Vec<u8> = [
        "00090000", "1c000000", "05000000", "424c5545", "00000000", "0a000000", "14000000",
        "1e000000", "00000000",
    ]
    .concat()
    .as_bytes()
    .chunks(2)
    .map(|c| u8::from_str_radix(std::str::from_utf8(c).unwrap(), 16).unwrap())
    .collect();
    let mut out = Vec::new();
    serialize_sample(&v, Encoding::XCDR2_LE, &mut out);
    assert_eq!(out, expect);
    assert_eq!(deserialize_sample::<Shape>(&out), Ok(v.clone()));
    // XCDR1: appendable is laid out as final, under CDR_LE.
    let mut x1 = Vec::new();
    serialize_sample(&v, Encoding::XCDR1_LE, &mut x1);
    assert_eq!(&x1[..4], &[0, 1, 0, 0]);
    assert_eq!(deserialize_sample::<Shape>(&x1), Ok(v.clone()));
    // A final payload id for an appendable type is refused, not misread.
    let mut wrong = out.clone();
    wrong[1] = 0x07;
    assert!(deserialize_sample::<Shape>(&wrong).is_err());
    // Key hash: "BLUE" as big-endian XCDR2, no DHEADER, MD5 (the string is unbounded here).
    let kh = key_hash(&v);
    assert_eq!(key_hash_from_sample_payload::<Shape>(&out), Ok(kh));
    assert_eq!(key_hash_from_sample_payload::<Shape>(&x1), Ok(kh));
    let mut kp = Vec::new();
    serialize_key(&v, Encoding::XCDR2_LE, &mut kp);
    assert_eq!(
        &kp[..8],
        &[0, 9, 0, 3, 9, 0, 0, 0],
        "key-only payload keeps its DHEADER"
    );
    assert_eq!(key_hash_from_key_payload::<Shape>(&kp), Ok(kh));
}

#[test]
fn appendable_reader_skips_appended_members() {
    #[derive(Debug, Clone, PartialEq, TopicType)]
    #[topic(type_name = "V", extensibility = "appendable")]
    struct V2 {
        a: u32,
        b: u64,
    }
    #[derive(Debug, Clone, PartialEq, TopicType)]
    #[topic(type_name = "V", extensibility = "appendable")]
    struct V1 {
        a: u32,
    }
    let mut out = Vec::new();
    serialize_sample(&V2 { a: 7, b: 9 }, Encoding::XCDR2_LE, &mut out);
    assert_eq!(deserialize_sample::<V1>(&out), Ok(V1 { a: 7 }));
    // The other way round the reader runs out of its DHEADER: an error, not a misread.
    let mut short = Vec::new();
    serialize_sample(&V1 { a: 7 }, Encoding::XCDR2_LE, &mut short);
    assert!(deserialize_sample::<V2>(&short).is_err());
}

/// The equivalence hash of a hashed identifier.
fn hash(id: &TypeIdentifier) -> [u8; 14] {
    match id {
        TypeIdentifier::Minimal(h) | TypeIdentifier::Complete(h) => *h,
        other => panic!("{other:?}"),
    }
}

/// The identifiers PyPI's cyclonedds 11.0.1 computes for the same types (the dataclasses of
/// tests/interop/lib/xtypes_peer.py: `get_type_info()`).
#[test]
fn identifiers_equal_cyclone_python() {
    let s = Shape::type_bundle();
    assert_eq!(
        hash(&s.minimal),
        *b"'\x83e\xe6s\xde\x13\t\xc5\xaf\xc3\x0b\xdb\xdb"
    );
    assert_eq!(
        hash(&s.complete),
        *b"\x1c\xee\xf7P\x95\x17\x0cc\x13l\xc1QW\x0e"
    );
    let m = peer::Mut::type_bundle();
    assert_eq!(hash(&m.minimal), *b"c\xf9(~*\xdeV\xa5T`\xf350\xa3");
    assert_eq!(
        hash(&m.complete),
        *b"\xf9JW\xc3\x99\x02^rp\xe8p\xeb\xcb\xad"
    );
}

#[derive(Debug, Clone, Copy, PartialEq, tessera::TopicEnum)]
#[topic(type_name = "xt::Color")]
enum Color {
    Red,
    Green,
    Blue = 5,
}

#[derive(Debug, Clone, PartialEq, TopicType)]
#[topic(type_name = "xt::Paint")]
struct Paint {
    c: Color,
    cs: Vec<Color>,
    k: i16,
}

/// An enum member, and a sequence of them: the identifiers and bytes cyclonedds-python 11.0.1
/// gives `class Color(IdlEnum): Red = 0; Green = 1; Blue = 5` and
/// `struct Paint { Color c; sequence<Color> cs; int16 k; }`.
#[test]
fn enums_equal_cyclone_python() {
    let b = Paint::type_bundle();
    // Python's hashes, as hex: the names are those of the Rust items.
    let hex = |h: [u8; 14]| h.iter().map(|b| format!("{b:02x}")).collect::<String>();
    assert_eq!(hex(hash(&b.minimal)), "b3309dd9babf4ca0e2d2cae4e65f");
    assert_eq!(hex(hash(&b.complete)), "91b8005a590aa1fe02f754424073");
    let deps = &b.information.minimal.dependent_typeids;
    assert_eq!(deps.len(), 1);
    assert_eq!(hex(hash(&deps[0].type_id)), "b1d447d9109f24d0a8cdb36a8f6d");
    assert_eq!(deps[0].size, 82);

    let v = Paint {
        c: Color::Blue,
        cs: vec![Color::Red, Color::Green],
        k: -2,
    };
    for (e, python) in [
        (
            Encoding::XCDR1_LE,
            "0001000005000000020000000000000001000000feff",
        ),
        (
            Encoding::XCDR2_LE,
            "00070000050000000c000000020000000000000001000000feff",
        ),
    ] {
        let mut out = Vec::new();
        serialize_sample(&v, e, &mut out);
        let hex: String = out.iter().map(|b| format!("{b:02x}")).collect();
        // Ours is padded to 4 (and says so in the options octet); the bodies are the same.
        assert_eq!(&hex[8..python.len()], &python[8..], "{e:?}");
        assert_eq!(deserialize_sample::<Paint>(&out), Ok(v.clone()));
    }
    // A value that names no literal is an error.
    let mut out = Vec::new();
    serialize_sample(&v, Encoding::XCDR2_LE, &mut out);
    out[4] = 3;
    assert_eq!(
        deserialize_sample::<Paint>(&out),
        Err(tessera::rtps::cdr::CdrError::InvalidEnum(3))
    );
}
