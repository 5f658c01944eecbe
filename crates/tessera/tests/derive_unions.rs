//! `#[derive(TopicType)]` on unions (enums with `#[union]`), `BTreeMap`/`HashMap` members and
//! `#[derive(TopicBitmask)]`: the same TypeObjects as Cyclone DDS 11 computes, and the same
//! bytes and key hashes as the dynamic codec for the same type, in every encoding.

use std::collections::{BTreeMap, HashMap};

use tessera::rtps::cdr::{
    deserialize_sample, key_hash, key_hash_from_sample_payload, serialize_sample, CdrError,
    Encoding,
};
use tessera::rtps::xtypes::DynamicType;
use tessera::{TopicBitmask, TopicEnum, TopicType};

const ALL: [Encoding; 4] = [
    Encoding::XCDR1_LE,
    Encoding::XCDR1_BE,
    Encoding::XCDR2_LE,
    Encoding::XCDR2_BE,
];

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// `union U switch (long) { case 1: case 2: long a; case 3: string b; default: double c; };`
#[derive(Debug, Clone, PartialEq, TopicType)]
#[union(discriminator = i32)]
enum U {
    #[case(1, 2)]
    A(i32),
    #[case(3)]
    B(String),
    #[default_case]
    C(f64),
}

/// Literal names as IDL (and Cyclone's reference) spell them.
#[derive(Debug, Clone, Copy, PartialEq, TopicEnum)]
#[allow(clippy::upper_case_acronyms)]
enum Color {
    RED,
    GREEN,
    BLUE,
}

/// `@appendable union M::V switch (Color) { case RED: short r; case GREEN: case BLUE:
/// sequence<uint8> g; };`
#[derive(Debug, Clone, PartialEq, TopicType)]
#[topic(type_name = "M::V", extensibility = "appendable")]
#[union(discriminator = Color)]
enum V2 {
    #[case(Color::RED)]
    R(i16),
    #[case(Color::GREEN, Color::BLUE)]
    G(#[uint8] Vec<u8>),
}

/// `@bit_bound(12) bitmask Perm { read, write, @position(5) exec };`
#[derive(Debug, Clone, Copy, PartialEq, TopicBitmask)]
#[bitmask(bit_bound = 12, read, write, exec = 5)]
struct Perm(u16);

#[derive(Debug, Clone, PartialEq, TopicType)]
struct S {
    u: U,
    p: Perm,
}

#[derive(Debug, Clone, PartialEq, TopicType)]
#[topic(extensibility = "appendable")]
struct T {
    v: V2,
    k: i64,
}

#[test]
fn identifiers_match_cyclone() {
    // cyclonedds-python 11.0.1 (see tessera-rtps xtypes/tests_kinds.rs for the types).
    let b = S::type_bundle();
    assert_eq!(hex(&b.minimal.to_bytes()), "f1f3d0b023610d9074d7eb5a72b9fd");
    assert_eq!(
        hex(&b.complete.to_bytes()),
        "f25acb8496b939313e8773d0c02026"
    );
    let b = T::type_bundle();
    assert_eq!(hex(&b.minimal.to_bytes()), "f147e968864942b6b53f0c94033683");
    assert_eq!(
        hex(&b.complete.to_bytes()),
        "f24ab5b26a365b0d0b409742ed9d6b"
    );
}

fn u_cases() -> Vec<U> {
    vec![U::A(5), U::B("hello".into()), U::C(2.5)]
}

#[test]
fn derived_and_dynamic_agree_in_every_encoding() {
    let dt = DynamicType::from_desc(<Full as tessera::rtps::cdr::CdrType>::type_desc()).unwrap();
    for (i, u) in u_cases().into_iter().enumerate() {
        let mut m = BTreeMap::new();
        m.insert("a".to_string(), U::A(i as i32));
        m.insert("b".to_string(), U::C(-1.0));
        let mut h = HashMap::new();
        h.insert(7u16, i as i64);
        let x = Full {
            id: U::A(i as i32),
            u,
            v: if i % 2 == 0 {
                V2::R(3)
            } else {
                V2::G(vec![1, 2, 3])
            },
            p: Perm::READ | Perm::EXEC,
            m,
            h,
            mu: if i == 1 {
                Mu::Small(9)
            } else {
                Mu::Other("x".repeat(i))
            },
        };
        for enc in ALL {
            let mut bytes = Vec::new();
            serialize_sample(&x, enc, &mut bytes);
            assert_eq!(deserialize_sample::<Full>(&bytes).unwrap(), x, "{enc:?}");
            // The dynamic codec reads the same bytes and writes them again identically.
            let v = dt.deserialize(&bytes).unwrap();
            assert_eq!(dt.serialize(&v, enc).unwrap(), bytes, "{enc:?}");
            assert_eq!(
                key_hash_from_sample_payload::<Full>(&bytes).unwrap(),
                key_hash(&x)
            );
            assert_eq!(dt.key_hash(&v).unwrap(), key_hash(&x));
        }
    }
}

/// A mutable union: a parameter list of the discriminator and the selected member.
#[derive(Debug, Clone, PartialEq, TopicType)]
#[topic(extensibility = "mutable")]
#[union(discriminator = u8)]
enum Mu {
    #[case(1)]
    #[id(5)]
    Small(u16),
    #[default_case]
    Other(String),
}

/// Union, map and bitmask members; keyed by a union.
#[derive(Debug, Clone, PartialEq, TopicType)]
#[topic(extensibility = "mutable")]
struct Full {
    #[key]
    id: U,
    u: U,
    v: V2,
    p: Perm,
    m: BTreeMap<String, U>,
    #[bound(4)]
    h: HashMap<u16, i64>,
    mu: Mu,
}

#[test]
fn a_discriminator_selecting_no_case_is_an_error_for_a_rust_enum() {
    // V2 has no default: discriminator 7 is not one of its cases (nor a Color).
    let bytes = [
        0x00, 0x09, 0, 0, 16, 0, 0, 0, 4, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    ];
    assert_eq!(
        deserialize_sample::<T>(&bytes),
        Err(CdrError::UnselectedDiscriminator(7))
    );
}

#[test]
fn bitmask_bits_beyond_the_bound_are_refused() {
    let mut bytes = Vec::new();
    serialize_sample(
        &S {
            u: U::A(1),
            p: Perm(0x21),
        },
        Encoding::XCDR1_LE,
        &mut bytes,
    );
    assert_eq!(
        deserialize_sample::<S>(&bytes).unwrap().p,
        Perm::READ | Perm::EXEC
    );
    let n = bytes.len();
    // The bitmask is the last two body bytes (before the payload's padding).
    let pad = usize::from(bytes[3] & 3);
    bytes[n - pad - 1] = 0x10;
    assert_eq!(
        deserialize_sample::<S>(&bytes),
        Err(CdrError::InvalidBitmask(0x1021))
    );
}

#[test]
fn map_bound_and_types_in_the_type_object() {
    use tessera::rtps::xtypes::TypeDesc;
    let TypeDesc::Struct(s) = <Full as tessera::rtps::cdr::CdrType>::type_desc() else {
        unreachable!()
    };
    assert!(matches!(&s.members[5].ty, TypeDesc::Map { bound: 4, .. }));
    assert!(s.members[0].key);
}

/// `union B switch (boolean) { case TRUE: long yes; case FALSE: string no; };` and a 64-bit
/// unsigned discriminator: the derived and dynamic codecs agree.
#[derive(Debug, Clone, PartialEq, TopicType)]
#[union(discriminator = bool)]
enum B {
    #[case(true)]
    Yes(i32),
    #[case(false)]
    No(String),
}

#[derive(Debug, Clone, PartialEq, TopicType)]
#[union(discriminator = u64)]
enum Wide {
    #[case(7)]
    Big(u8),
    #[default_case]
    Rest(i8),
}

#[derive(Debug, Clone, PartialEq, TopicType)]
struct Other {
    b: B,
    w: Wide,
}

#[test]
fn boolean_and_wide_discriminators() {
    let dt = DynamicType::from_desc(<Other as tessera::rtps::cdr::CdrType>::type_desc()).unwrap();
    for x in [
        Other {
            b: B::Yes(3),
            w: Wide::Big(1),
        },
        Other {
            b: B::No("n".into()),
            w: Wide::Rest(-1),
        },
    ] {
        for enc in ALL {
            let mut bytes = Vec::new();
            serialize_sample(&x, enc, &mut bytes);
            assert_eq!(deserialize_sample::<Other>(&bytes).unwrap(), x);
            let v = dt.deserialize(&bytes).unwrap();
            assert_eq!(dt.serialize(&v, enc).unwrap(), bytes);
        }
    }
}
