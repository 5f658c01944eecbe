//! The worked examples of the XTypes facts sheet, byte for byte, and round trips.

use super::lookup::{Call, Reply, Request, Return, SampleIdentity};
use super::*;
use crate::types::{EntityId, Guid, GuidPrefix};
use std::sync::Arc;

fn hex(s: &str) -> Vec<u8> {
    let s: String = s.chars().filter(|c| c.is_ascii_hexdigit()).collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

const SHAPE_MINIMAL: &str = "f1 1e426789957ce858cfdf3191a589";
const SHAPE_COMPLETE: &str = "f2 5c0a127987e5e2f3746b1f80a5b9";

#[test]
fn shape_type_identifiers_match_cyclone() {
    let b = TypeBundle::new(&shape_type());
    assert_eq!(b.minimal.to_bytes(), hex(SHAPE_MINIMAL));
    assert_eq!(b.complete.to_bytes(), hex(SHAPE_COMPLETE));
    assert_eq!(b.object(&b.minimal).unwrap().len(), 108);
    assert_eq!(b.object(&b.complete).unwrap().len(), 178);
    assert_eq!(b.objects.len(), 2, "no dependencies");
}

#[test]
fn shape_type_minimal_object_bytes() {
    let b = TypeBundle::new(&shape_type());
    let expect = hex("68000000 f1510200 01000000 00000000 58000000 05000000 \
         0c000000 00000000 21007080 70dda5df \
         0b000000 01000000 0100049d d4e46100 \
         0b000000 02000000 01000441 52907600 \
         0b000000 03000000 010004da 90771400 \
         10000000 04000000 010080f3 0100000d 06f3042c");
    assert_eq!(b.object(&b.minimal).unwrap().as_slice(), expect.as_slice());
}

#[test]
fn shape_type_information_parameter_value() {
    let b = TypeBundle::new(&shape_type());
    let mut expect = hex("60000000 01100040 28000000 24000000 14000000");
    expect.extend(hex(SHAPE_MINIMAL));
    expect.extend(hex("00 6c000000 00000000 04000000 00000000"));
    expect.extend(hex("02100040 28000000 24000000 14000000"));
    expect.extend(hex(SHAPE_COMPLETE));
    expect.extend(hex("00 b2000000 00000000 04000000 00000000"));
    let value = b.information.to_bytes(false);
    assert_eq!(value, expect);
    assert_eq!(value.len(), 100);
    assert_eq!(
        TypeInformation::decode(&value, false).unwrap(),
        b.information
    );
    let be = b.information.to_bytes(true);
    assert_eq!(TypeInformation::decode(&be, true).unwrap(), b.information);
}

#[test]
fn hashids_of_the_type_lookup_members() {
    assert_eq!(hash_member_id("getTypes") as i32, lookup::GET_TYPES);
    assert_eq!(
        hash_member_id("getDependencies") as i32,
        lookup::GET_DEPENDENCIES
    );
    assert_eq!(hash_member_id("type_ids"), lookup::MEMBER_TYPE_IDS);
    assert_eq!(
        hash_member_id("continuation_point"),
        lookup::MEMBER_CONTINUATION_POINT
    );
    assert_eq!(hash_member_id("types"), lookup::MEMBER_TYPES);
    assert_eq!(
        hash_member_id("complete_to_minimal"),
        lookup::MEMBER_COMPLETE_TO_MINIMAL
    );
    assert_eq!(
        hash_member_id("dependent_typeids"),
        lookup::MEMBER_DEPENDENT_TYPEIDS
    );
}

#[test]
fn get_types_request_as_cyclone_sends_it() {
    let guid = Guid::new(
        GuidPrefix([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]),
        EntityId([0, 3, 0, 0xc3]),
    );
    let mut bytes = hex("00070000");
    bytes.extend(guid.to_bytes());
    bytes.extend(hex("00000000 01000000 12000000"));
    bytes.extend(b"dds.builtin.TOS.0\0");
    bytes.extend(hex(
        "0000 23000000 d3528201 1b000000 6560535c 13000000 01000000",
    ));
    bytes.extend(hex(SHAPE_MINIMAL));
    // The encapsulation options count the trailing padding.
    bytes[3] = 1;
    bytes.push(0);
    let req = Request::decode(&bytes).unwrap();
    let minimal = TypeBundle::new(&shape_type()).minimal;
    assert_eq!(
        req,
        Request {
            id: SampleIdentity {
                writer: guid,
                seq: 1
            },
            instance_name: "dds.builtin.TOS.0".into(),
            call: Call::GetTypes(vec![minimal.clone()]),
        }
    );
    // Ours differs only in the member's length code (4 with NEXTINT, instead of 5).
    let ours = req.to_payload();
    assert_eq!(Request::decode(&ours).unwrap(), req);
}

#[test]
fn replies_round_trip() {
    let b = TypeBundle::new(&shape_type());
    let related = SampleIdentity {
        writer: Guid::new(GuidPrefix([9; 12]), EntityId([0, 3, 0, 0xc3])),
        seq: (7 << 32) | 3,
    };
    let types = Reply {
        related,
        remote_ex: 0,
        result: Return::Types {
            types: b
                .objects
                .values()
                .map(|(id, o)| (id.clone(), o.clone()))
                .collect(),
            complete_to_minimal: vec![(b.complete.clone(), b.minimal.clone())],
            unsupported: Vec::new(),
        },
    };
    assert_eq!(Reply::decode(&types.to_payload()).unwrap(), types);
    let deps = Reply {
        related,
        remote_ex: 0,
        result: Return::Dependencies {
            dependent_typeids: b.information.minimal.dependent_typeids.clone(),
            continuation_point: vec![],
        },
    };
    assert_eq!(Reply::decode(&deps.to_payload()).unwrap(), deps);
}

fn nested() -> TypeDesc {
    let inner = Arc::new(StructDesc {
        name: "M::Inner".into(),
        extensibility: Extensibility::Final,
        members: vec![MemberDesc::new(
            "e",
            0,
            TypeDesc::Enum(Arc::new(EnumDesc {
                name: "M::Color".into(),
                extensibility: Extensibility::Final,
                bit_bound: 32,
                literals: vec![("RED".into(), 0), ("GREEN".into(), 1)],
            })),
        )],
    });
    let mut opt = MemberDesc::new("o", 7, TypeDesc::Primitive(Primitive::Int64));
    opt.optional = true;
    TypeDesc::Struct(Arc::new(StructDesc {
        name: "M::Outer".into(),
        extensibility: Extensibility::Mutable,
        members: vec![
            MemberDesc::new("a", 0, TypeDesc::Struct(inner.clone())),
            MemberDesc::new(
                "s",
                1,
                TypeDesc::Sequence {
                    element: Box::new(TypeDesc::Struct(inner)),
                    bound: 300,
                },
            ),
            MemberDesc::new(
                "m",
                2,
                TypeDesc::Array {
                    element: Box::new(TypeDesc::Array {
                        element: Box::new(TypeDesc::Primitive(Primitive::Byte)),
                        dims: vec![3],
                    }),
                    dims: vec![2],
                },
            ),
            opt,
        ],
    }))
}

#[test]
fn nested_types_list_their_dependencies() {
    let b = TypeBundle::new(&nested());
    // Outer, Inner, Color; minimal and complete.
    assert_eq!(b.objects.len(), 6);
    let info = &b.information;
    assert_eq!(info.minimal.dependent_typeid_count, 2);
    assert_eq!(info.complete.dependent_typeids.len(), 2);
    for d in &info.minimal.dependent_typeids {
        assert!(matches!(d.type_id, TypeIdentifier::Minimal(_)));
        assert_eq!(b.object(&d.type_id).unwrap().len() as u32, d.size);
    }
    let TypeObjectBody::Struct(outer) = TypeObject::from_bytes(b.object(&b.minimal).unwrap())
        .unwrap()
        .body
    else {
        panic!("a struct")
    };
    assert_eq!(outer.flags, flags::IS_MUTABLE);
    assert_eq!(outer.members[3].id, 7);
    assert_eq!(
        outer.members[3].flags,
        flags::TRY_CONSTRUCT1 | flags::OPTIONAL
    );
    // A sequence of a hashed type carries the enclosing kind, a large bound, a hash.
    match &outer.members[1].type_id {
        TypeIdentifier::PlainSequence {
            header,
            bound,
            element,
        } => {
            assert_eq!(header.equiv_kind, ek::MINIMAL);
            assert_eq!(*bound, 300);
            assert!(matches!(**element, TypeIdentifier::Minimal(_)));
        }
        other => panic!("{other:?}"),
    }
    // Rust's [[u8; 3]; 2] is IDL's octet m[2][3].
    assert_eq!(
        outer.members[2].type_id.to_bytes(),
        hex("90 f3 0100 02000000 02 03 02")
    );
}

#[test]
fn type_objects_round_trip_and_rehash() {
    for desc in [shape_type(), nested()] {
        let b = TypeBundle::new(&desc);
        for (id, bytes) in b.objects.values() {
            let obj = TypeObject::from_bytes(bytes).unwrap();
            assert_eq!(obj.to_bytes(), **bytes);
            assert_eq!(obj.identifier(), *id);
        }
    }
}

#[test]
fn malformed_inputs_are_errors_not_panics() {
    let b = TypeBundle::new(&nested());
    let mut samples: Vec<Vec<u8>> = b.objects.values().map(|(_, o)| o.to_vec()).collect();
    samples.push(b.information.to_bytes(false));
    for s in &samples {
        for cut in 0..s.len() {
            let _ = TypeObject::from_bytes(&s[..cut]);
            let _ = TypeInformation::decode(&s[..cut], false);
            let mut flipped = s.clone();
            flipped[cut] ^= 0xff;
            let _ = TypeObject::from_bytes(&flipped);
            let _ = TypeInformation::decode(&flipped, false);
            let _ = Request::decode(&flipped);
            let _ = Reply::decode(&flipped);
        }
    }
    // A deep chain of sequences is refused, not followed.
    let mut id = TypeIdentifier::Primitive(tk::INT32);
    for _ in 0..100 {
        id = TypeIdentifier::PlainSequence {
            header: CollectionHeader {
                equiv_kind: ek::BOTH,
                element_flags: 1,
            },
            bound: 0,
            element: Box::new(id),
        };
    }
    let deep = id.to_bytes();
    let r = &mut crate::cdr::CdrReader::new(&deep, crate::cdr::Encoding::XCDR2_LE);
    assert_eq!(TypeIdentifier::decode(r), Err(XTypesError::TooDeep));
}

#[test]
fn type_information_checks_what_cyclone_checks() {
    let b = TypeBundle::new(&shape_type());
    let mut bad = b.information.clone();
    bad.minimal.typeid_with_size.type_id = b.complete.clone();
    assert_eq!(
        TypeInformation::decode(&bad.to_bytes(false), false),
        Err(XTypesError::BadValue)
    );
    let mut bad = b.information.clone();
    bad.complete.dependent_typeids.push(TypeIdentifierWithSize {
        type_id: b.complete.clone(),
        size: 10,
    });
    assert_eq!(
        TypeInformation::decode(&bad.to_bytes(false), false),
        Err(XTypesError::BadValue),
        "count below the list's length"
    );
    bad.complete.dependent_typeid_count = -1;
    assert!(TypeInformation::decode(&bad.to_bytes(false), false).is_ok());
    // Fast DDS 2.9's value: an encapsulation header and classic CDR.
    assert!(TypeInformation::decode(&hex("00010000 00000000 f1000000"), false).is_err());
}
