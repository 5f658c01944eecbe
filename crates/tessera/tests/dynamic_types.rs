//! Dynamic types against derived ones: for every derived test type of the repository, random
//! samples built as `DynamicValue`s encode to the bytes the derived type decodes and encodes
//! back byte for byte (XCDR1 and XCDR2, both byte orders); key hashes and key-only payloads are
//! the same; the type rebuilt from its own TypeObjects (complete, and minimal) announces the
//! same identifiers and encodes the same bytes; the worked bytes of the XTypes facts sheet.

use std::collections::HashMap;
use std::fmt::Debug;

use tessera::rtps::cdr::{
    deserialize_sample, key_hash, key_hash_from_key_payload, serialize_key, serialize_sample,
    Encoding, TopicType,
};
use tessera::rtps::xtypes::model::{Primitive, TypeDesc};
use tessera::rtps::xtypes::{DynamicType, DynamicValue as V, TypeIdentifier, TypeObject};

#[allow(dead_code)]
mod ddsperf_idl {
    include!("../../tessera-idl/tests/golden/ddsperf.rs");
}
#[allow(dead_code)]
mod features_idl {
    include!("../../tessera-idl/tests/golden/features.rs");
}
#[allow(dead_code)]
mod shape_idl {
    include!("../../tessera-idl/tests/golden/shape.rs");
}
#[allow(dead_code)]
mod extensible_idl {
    include!("../../tessera-idl/tests/golden/extensible.rs");
}
#[allow(dead_code)]
#[path = "../examples/xtypes_peer/types.rs"]
mod peer;

const ALL: [Encoding; 4] = [
    Encoding::XCDR1_LE,
    Encoding::XCDR1_BE,
    Encoding::XCDR2_LE,
    Encoding::XCDR2_BE,
];

fn hex(s: &str) -> Vec<u8> {
    let s: String = s.chars().filter(|c| c.is_ascii_hexdigit()).collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// xorshift64*: deterministic, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// A random value of `ty` (strings of printable ASCII, within bounds).
fn random(ty: &TypeDesc, rng: &mut Rng) -> V {
    match ty {
        TypeDesc::Primitive(p) => {
            let x = rng.next();
            match p {
                Primitive::Bool => V::Bool(x & 1 == 1),
                Primitive::Byte | Primitive::UInt8 => V::UInt8(x as u8),
                Primitive::Int8 => V::Int8(x as i8),
                Primitive::Int16 => V::Int16(x as i16),
                Primitive::UInt16 => V::UInt16(x as u16),
                Primitive::Int32 => V::Int32(x as i32),
                Primitive::UInt32 => V::UInt32(x as u32),
                Primitive::Int64 => V::Int64(x as i64),
                Primitive::UInt64 => V::UInt64(x),
                Primitive::Float32 => V::Float32((x as i32) as f32 / 7.0),
                Primitive::Float64 => V::Float64((x as i64) as f64 / 3.0),
                Primitive::Char8 => V::Char(char::from(b' ' + (x % 95) as u8)),
            }
        }
        TypeDesc::String { bound } => {
            let max = if *bound == 0 { 12 } else { (*bound).min(12) } as u64;
            let n = rng.below(max + 1);
            V::String(
                (0..n)
                    .map(|_| char::from(b'a' + rng.below(26) as u8))
                    .collect(),
            )
        }
        TypeDesc::Enum(e) => V::Enum(e.literals[rng.below(e.literals.len() as u64) as usize].1),
        TypeDesc::Sequence { element, bound } => {
            let max = if *bound == 0 { 5 } else { (*bound).min(5) } as u64;
            let n = rng.below(max + 1) as usize;
            if matches!(
                **element,
                TypeDesc::Primitive(Primitive::Byte | Primitive::UInt8)
            ) {
                V::Bytes((0..n).map(|_| rng.next() as u8).collect())
            } else {
                V::List((0..n).map(|_| random(element, rng)).collect())
            }
        }
        TypeDesc::Array { element, dims } => random_array(element, dims, rng),
        TypeDesc::Struct(s) => V::Struct(
            s.members
                .iter()
                .map(|m| (!m.optional || rng.below(2) == 0).then(|| random(&m.ty, rng)))
                .collect(),
        ),
        TypeDesc::Union(u) => {
            let c = &u.cases[rng.below(u.cases.len() as u64) as usize];
            let d = c
                .labels
                .first()
                .map_or_else(|| u.unused_discriminator(), |l| i64::from(*l));
            V::Union {
                discriminator: d,
                value: Some(Box::new(random(&c.ty, rng))),
            }
        }
        TypeDesc::Map { key, value, bound } => {
            let max = if *bound == 0 { 4 } else { (*bound).min(4) } as u64;
            let mut entries: Vec<(V, V)> = Vec::new();
            for _ in 0..rng.below(max + 1) {
                let k = random(key, rng);
                if !entries.iter().any(|(k2, _)| *k2 == k) {
                    entries.push((k, random(value, rng)));
                }
            }
            V::Map(entries)
        }
        TypeDesc::Bitmask(b) => V::Bitmask(
            b.flags
                .iter()
                .filter(|_| rng.below(2) == 0)
                .fold(0, |x, (_, p)| x | 1 << p),
        ),
    }
}

fn random_array(element: &TypeDesc, dims: &[u32], rng: &mut Rng) -> V {
    match dims {
        [] => random(element, rng),
        [n] if matches!(
            element,
            TypeDesc::Primitive(Primitive::Byte | Primitive::UInt8)
        ) =>
        {
            V::Bytes((0..*n).map(|_| rng.next() as u8).collect())
        }
        [n, rest @ ..] => V::List((0..*n).map(|_| random_array(element, rest, rng)).collect()),
    }
}

/// The objects of a derived type's bundle, decoded.
fn objects_of<T: TopicType>() -> HashMap<TypeIdentifier, TypeObject> {
    T::type_bundle()
        .objects
        .values()
        .map(|(id, bytes)| (id.clone(), TypeObject::from_bytes(bytes).unwrap()))
        .collect()
}

/// Everything the dynamic path must agree on with the derived type `T`.
fn check<T: TopicType + Debug + PartialEq>() {
    let dt = DynamicType::from_desc(T::type_desc()).unwrap();
    assert_eq!(dt.name(), T::TYPE_NAME);
    assert_eq!(dt.is_keyed(), T::KEYED, "{}", T::TYPE_NAME);
    assert_eq!(dt.key_max_size(), T::KEY_MAX_SIZE, "{}", T::TYPE_NAME);
    assert_eq!(dt.extensibility(), T::EXTENSIBILITY);
    let bundle = T::type_bundle();
    assert_eq!(*dt.type_bundle(), bundle);

    // Rebuilt from its TypeObjects: the complete ones give the same identifiers (the minimal
    // ones derived from the complete ones equal the derive's) and TypeInformation.
    let objects = objects_of::<T>();
    let dc = DynamicType::from_type_object_map(&bundle.complete, &objects).unwrap();
    assert_eq!(dc.name(), T::TYPE_NAME);
    assert_eq!(dc.type_bundle().minimal, bundle.minimal, "{}", T::TYPE_NAME);
    assert_eq!(dc.type_bundle().complete, bundle.complete);
    assert_eq!(dc.type_bundle().information, bundle.information);
    let dm = DynamicType::from_type_object_map(&bundle.minimal, &objects).unwrap();
    assert!(dm
        .struct_desc()
        .members
        .iter()
        .all(|m| m.name == format!("member_{}", m.id)));

    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ T::TYPE_NAME.len() as u64);
    let mut values = vec![dt.default_value()];
    values.extend((0..150).map(|_| random(dt.desc(), &mut rng)));
    for v in &values {
        dt.validate(v).unwrap();
        for enc in ALL {
            let bytes = dt.serialize(v, enc).unwrap();
            let derived: T = deserialize_sample(&bytes)
                .unwrap_or_else(|e| panic!("{}: {e} on {bytes:02x?}", T::TYPE_NAME));
            let mut again = Vec::new();
            serialize_sample(&derived, enc, &mut again);
            assert_eq!(again, bytes, "{} {enc:?}", T::TYPE_NAME);
            assert_eq!(dt.deserialize(&bytes).as_ref(), Ok(v));
            // Through the types rebuilt from objects: the same bytes, the same values.
            let vc = dc.deserialize(&bytes).unwrap();
            assert_eq!(dc.serialize(&vc, enc).unwrap(), bytes);
            let vm = dm
                .deserialize(&bytes)
                .unwrap_or_else(|e| panic!("{} minimal: {e} on {bytes:02x?}", T::TYPE_NAME));
            assert_eq!(dm.serialize(&vm, enc).unwrap(), bytes);
            // Keys.
            let kh = key_hash(&derived);
            assert_eq!(dt.key_hash(v), Ok(kh));
            assert_eq!(dt.key_hash_from_sample_payload(&bytes), Ok(kh));
            assert_eq!(dm.key_hash_from_sample_payload(&bytes), Ok(kh));
            if T::KEYED {
                let mut key = Vec::new();
                serialize_key(&derived, enc, &mut key);
                assert_eq!(dt.serialize_key(v, enc).unwrap(), key, "{}", T::TYPE_NAME);
                assert_eq!(dt.key_payload_from_sample_payload(&bytes).unwrap(), key);
                assert_eq!(dt.key_hash_from_key_payload(&key), Ok(kh));
                assert_eq!(key_hash_from_key_payload::<T>(&key), Ok(kh));
            }
        }
        // JSON round trip, and text naming every member.
        let json = v.to_json(&dt);
        assert_eq!(V::from_json(&dt, &json).as_ref(), Ok(v), "{json}");
        let text = v.to_text(&dt);
        for m in &dt.struct_desc().members {
            assert!(text.contains(&format!("{}=", m.name)), "{text}");
        }
    }
}

#[derive(Debug, Clone, PartialEq, tessera::TopicType)]
#[topic(type_name = "M", extensibility = "mutable")]
struct M {
    a: i32,
    #[bound(16)]
    b: String,
    c: i64,
    #[optional]
    d: Option<i32>,
}

#[derive(Debug, Clone, PartialEq, tessera::TopicType)]
#[topic(type_name = "A", extensibility = "appendable")]
struct A {
    a: i32,
    #[optional]
    d: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, tessera::TopicType)]
struct Inner {
    #[key]
    k: u16,
    s: String,
}

#[derive(Debug, Clone, PartialEq, tessera::TopicType)]
#[topic(extensibility = "appendable")]
struct Point {
    x: i16,
    y: f64,
}

#[derive(Debug, Clone, PartialEq, tessera::TopicType)]
#[topic(type_name = "Rich", extensibility = "mutable")]
struct Rich {
    #[id(70)]
    name: String,
    #[key]
    #[id(30)]
    id: u32,
    #[key]
    #[id(1)]
    inner: Inner,
    bytes: Vec<u8>,
    words: Vec<u32>,
    longs: Vec<u64>,
    shorts: Vec<i16>,
    nested: Vec<Inner>,
    arr: [u16; 3],
    points: [Point; 2],
    // (A non-primitive `[[T; M]; N]` is left out: the derive gives each row a DHEADER while
    // its TypeObject says one array `T a[N][M]` with one; the dynamic path follows the
    // TypeObject.)
    grid: [[i16; 2]; 3],
    #[optional]
    opt: Option<String>,
    #[optional]
    opt_none: Option<f64>,
    #[optional]
    opt_point: Option<Point>,
}

/// A final type keyed by a nested keyless struct and an array: key members in id order.
#[derive(Debug, Clone, PartialEq, tessera::TopicType)]
struct KeyedByStruct {
    v: f32,
    #[key]
    #[id(9)]
    p: Point,
    #[key]
    #[id(4)]
    tag: [u8; 3],
    #[optional]
    o: Option<u8>,
}

#[test]
fn every_derived_test_type_round_trips_through_the_dynamic_path() {
    check::<ddsperf_idl::OneULong>();
    check::<ddsperf_idl::Unkeyed16>();
    check::<ddsperf_idl::Keyed32>();
    check::<ddsperf_idl::KeyedSeq>();
    check::<ddsperf_idl::CPUStats>();
    check::<shape_idl::ShapeType>();
    check::<peer::Shape>();
    check::<peer::Mut>();
    check::<extensible_idl::xt::Reading>();
    check::<extensible_idl::xt::Tagged>();
    check::<features_idl::robot::nav::Header>();
    check::<features_idl::robot::nav::Pose>();
    check::<M>();
    check::<A>();
    check::<Rich>();
    check::<KeyedByStruct>();
}

fn shape() -> DynamicType {
    DynamicType::from_desc(tessera::rtps::xtypes::shape_type()).unwrap()
}

fn blue() -> V {
    V::Struct(vec![
        Some(V::String("BLUE".into())),
        Some(V::Int32(10)),
        Some(V::Int32(20)),
        Some(V::Int32(30)),
        Some(V::Bytes(vec![])),
    ])
}

#[test]
fn worked_bytes_of_the_facts_sheet() {
    let t = shape();
    // §5: XCDR2 BLUE/10/20/30/[].
    let x2 =
        hex("00090000 1c000000 05000000 424c5545 00000000 0a000000 14000000 1e000000 00000000");
    assert_eq!(t.serialize(&blue(), Encoding::XCDR2_LE).unwrap(), x2);
    assert_eq!(t.deserialize(&x2), Ok(blue()));
    // §1: the key hash of "BLUE" is an MD5 (string<128> may exceed 16 bytes).
    assert_eq!(
        t.key_hash(&blue()).unwrap().to_vec(),
        hex("cac217c318363f8ef1160eeedef9e886")
    );
    assert_eq!(
        blue().to_text(&t),
        "ShapeType(color='BLUE', x=10, y=20, shapesize=30, additional_payload_size=[])"
    );
    assert_eq!(
        blue().to_json(&t).to_string(),
        r#"{"additional_payload_size":[],"color":"BLUE","shapesize":30,"x":10,"y":20}"#
    );
    // §1 mutable example, d absent.
    let m = DynamicType::from_desc(<M as tessera::rtps::cdr::CdrType>::type_desc()).unwrap();
    let mv = V::Struct(vec![
        Some(V::Int32(1)),
        Some(V::String("hi".into())),
        Some(V::Int64(2)),
        None,
    ]);
    let mb = hex(
        "000b0000 20000000 00000020 01000000 01000050 03000000 68690000 02000030 \
         02000000 00000000",
    );
    assert_eq!(m.serialize(&mv, Encoding::XCDR2_LE).unwrap(), mb);
    assert_eq!(m.deserialize(&mb), Ok(mv));
    // §1 appendable XCDR1 with an optional member.
    let a = DynamicType::from_desc(<A as tessera::rtps::cdr::CdrType>::type_desc()).unwrap();
    let av = V::Struct(vec![Some(V::Int32(1)), Some(V::Int64(5))]);
    let ab = hex("00010000 01000000 017f0800 01000000 08000000 05000000 00000000");
    assert_eq!(a.serialize(&av, Encoding::XCDR1_LE).unwrap(), ab);
    assert_eq!(a.deserialize(&ab), Ok(av));
}

#[test]
fn shape_identifiers_equal_cyclones() {
    let t = shape();
    let b = t.type_bundle();
    assert_eq!(b.minimal.to_bytes(), hex("f1 1e426789957ce858cfdf3191a589"));
    assert_eq!(
        b.complete.to_bytes(),
        hex("f2 5c0a127987e5e2f3746b1f80a5b9")
    );
}

#[test]
fn values_that_do_not_fit_are_refused_with_a_path() {
    let t = shape();
    let mut v = blue();
    if let V::Struct(f) = &mut v {
        f[0] = Some(V::String("x".repeat(129)));
    }
    let e = t.serialize(&v, Encoding::XCDR2_LE).unwrap_err();
    assert_eq!(e.path, "color");
    if let V::Struct(f) = &mut v {
        f[0] = Some(V::String("RED".into()));
        f[2] = Some(V::Int64(3));
    }
    assert_eq!(t.validate(&v).unwrap_err().path, "y");
    if let V::Struct(f) = &mut v {
        f.pop();
    }
    assert!(t.validate(&v).is_err());
}

#[test]
fn appendable_reader_defaults_members_an_older_writer_did_not_send() {
    #[derive(Debug, Clone, PartialEq, tessera::TopicType)]
    #[topic(type_name = "V", extensibility = "appendable")]
    struct V1 {
        a: i32,
    }
    let mut bytes = Vec::new();
    serialize_sample(&V1 { a: 7 }, Encoding::XCDR2_LE, &mut bytes);
    let mut desc = <Point as tessera::rtps::cdr::CdrType>::type_desc();
    // Point with `a: i32` first: the newer reader's view of V.
    if let TypeDesc::Struct(s) = &mut desc {
        let s = std::sync::Arc::make_mut(s);
        s.members.insert(
            0,
            tessera::rtps::xtypes::MemberDesc::new("a", 0, TypeDesc::Primitive(Primitive::Int32)),
        );
        s.members[1].id = 1;
        s.members[2].id = 2;
    }
    let t = DynamicType::from_desc(desc).unwrap();
    assert_eq!(
        t.deserialize(&bytes),
        Ok(V::Struct(vec![
            Some(V::Int32(7)),
            Some(V::Int16(0)),
            Some(V::Float64(0.0))
        ]))
    );
}
