//! `@mutable` types and `@optional` members: the worked bytes of the XTypes facts sheet,
//! round trips in XCDR1 and XCDR2, member-id matching, and key hashes.

use tessera::rtps::cdr::{
    deserialize_sample, key_hash, key_hash_from_key_payload, key_hash_from_sample_payload,
    serialize_key, serialize_sample, CdrError, Encoding,
};
use tessera::TopicType;

fn hex(s: &str) -> Vec<u8> {
    let s: String = s.chars().filter(|c| c.is_ascii_hexdigit()).collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

const ALL: [Encoding; 4] = [
    Encoding::XCDR1_LE,
    Encoding::XCDR1_BE,
    Encoding::XCDR2_LE,
    Encoding::XCDR2_BE,
];

#[derive(Debug, Clone, PartialEq, TopicType)]
#[topic(type_name = "M", extensibility = "mutable")]
struct M {
    a: i32,
    #[bound(16)]
    b: String,
    c: i64,
    #[optional]
    d: Option<i32>,
}

fn m_sample() -> M {
    M {
        a: 1,
        b: "hi".into(),
        c: 2,
        d: None,
    }
}

#[test]
fn mutable_xcdr2_worked_example() {
    let v = m_sample();
    let mut out = Vec::new();
    serialize_sample(&v, Encoding::XCDR2_LE, &mut out);
    assert_eq!(
        out,
        hex(
            "000b0000 20000000 00000020 01000000 01000050 03000000 68690000 02000030 \
             02000000 00000000"
        )
    );
    assert_eq!(deserialize_sample::<M>(&out), Ok(v));
}

#[derive(Debug, Clone, PartialEq, TopicType)]
#[topic(type_name = "A", extensibility = "appendable")]
struct A {
    a: i32,
    #[optional]
    d: Option<i64>,
}

#[test]
fn optional_xcdr1_worked_example() {
    let v = A { a: 1, d: Some(5) };
    let mut out = Vec::new();
    serialize_sample(&v, Encoding::XCDR1_LE, &mut out);
    assert_eq!(
        out,
        hex("00010000 01000000 017f0800 01000000 08000000 05000000 00000000")
    );
    assert_eq!(deserialize_sample::<A>(&out), Ok(v));
    // Absent: the header with length 0.
    let none = A { a: 1, d: None };
    let mut out = Vec::new();
    serialize_sample(&none, Encoding::XCDR1_LE, &mut out);
    assert_eq!(out, hex("00010000 01000000 017f0800 01000000 00000000"));
    assert_eq!(deserialize_sample::<A>(&out), Ok(none.clone()));
    // XCDR2: a presence octet.
    let mut out = Vec::new();
    serialize_sample(&none, Encoding::XCDR2_LE, &mut out);
    // DHEADER 5, a = 1, presence 0, three octets of padding (announced in the options).
    assert_eq!(out, hex("00090003 05000000 01000000 00000000"));
    assert_eq!(deserialize_sample::<A>(&out), Ok(none));
}

#[derive(Debug, Clone, PartialEq, TopicType)]
struct Inner {
    #[key]
    k: u16,
    s: String,
}

#[derive(Debug, Clone, PartialEq, TopicType)]
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
    #[optional]
    opt: Option<String>,
    #[optional]
    opt_none: Option<f64>,
}

fn rich() -> Rich {
    Rich {
        name: "n".into(),
        id: 42,
        inner: Inner {
            k: 9,
            s: "inner".into(),
        },
        bytes: vec![1, 2, 3],
        words: vec![7, 8],
        longs: vec![u64::MAX],
        shorts: vec![-1, 2, -3],
        nested: vec![Inner {
            k: 1,
            s: "x".into(),
        }],
        arr: [4, 5, 6],
        opt: Some("here".into()),
        opt_none: None,
    }
}

#[test]
fn mutable_round_trips_in_every_encoding() {
    let v = rich();
    for e in ALL {
        let mut out = Vec::new();
        serialize_sample(&v, e, &mut out);
        assert_eq!(deserialize_sample::<Rich>(&out).as_ref(), Ok(&v), "{e:?}");
        // Key hash: key members by member id (inner's key, then id), as final XCDR2 BE.
        let kh = key_hash(&v);
        assert_eq!(key_hash_from_sample_payload::<Rich>(&out), Ok(kh), "{e:?}");
        let mut kp = Vec::new();
        serialize_key(&v, e, &mut kp);
        assert_eq!(key_hash_from_key_payload::<Rich>(&kp), Ok(kh), "{e:?}");
    }
    let mut expect = [0u8; 16];
    expect[..2].copy_from_slice(&9u16.to_be_bytes());
    expect[4..8].copy_from_slice(&42u32.to_be_bytes());
    assert_eq!(key_hash(&v), expect);
}

#[test]
fn mutable_encapsulation_ids() {
    let v = rich();
    for (e, id) in [
        (Encoding::XCDR1_BE, 0x0002u16),
        (Encoding::XCDR1_LE, 0x0003),
        (Encoding::XCDR2_BE, 0x000a),
        (Encoding::XCDR2_LE, 0x000b),
    ] {
        let mut out = Vec::new();
        serialize_sample(&v, e, &mut out);
        assert_eq!(u16::from_be_bytes([out[0], out[1]]), id);
    }
}

/// The same members, declared in another order and with one member unknown to each side.
#[derive(Debug, Clone, PartialEq, TopicType)]
#[topic(type_name = "Rich", extensibility = "mutable")]
struct RichView {
    #[key]
    #[id(1)]
    inner: Inner,
    #[id(70)]
    name: String,
    #[key]
    #[id(30)]
    id: u32,
    #[id(100)]
    #[optional]
    extra: Option<u8>,
}

#[test]
fn members_match_by_id_whatever_the_order() {
    let v = rich();
    for e in ALL {
        let mut out = Vec::new();
        serialize_sample(&v, e, &mut out);
        let view = deserialize_sample::<RichView>(&out).unwrap();
        assert_eq!(
            view,
            RichView {
                inner: v.inner.clone(),
                name: "n".into(),
                id: 42,
                extra: None
            }
        );
        // And the other way: the view lacks required members of Rich.
        let mut back = Vec::new();
        serialize_sample(&view, e, &mut back);
        assert_eq!(
            deserialize_sample::<Rich>(&back),
            Err(CdrError::MissingMember(2)),
            "{e:?}"
        );
    }
}

#[test]
fn an_unknown_must_understand_member_drops_the_sample() {
    let v = m_sample();
    let mut out = Vec::new();
    serialize_sample(&v, Encoding::XCDR2_LE, &mut out);
    // Member a (EMHEADER at body offset 4) becomes unknown id 9 with the M flag.
    out[8..12].copy_from_slice(&(0x8000_0000u32 | (2 << 28) | 9).to_le_bytes());
    assert_eq!(
        deserialize_sample::<M>(&out),
        Err(CdrError::MustUnderstand(9))
    );
    // Without the M flag it is skipped, and `a` is then missing.
    out[8..12].copy_from_slice(&((2u32 << 28) | 9).to_le_bytes());
    assert_eq!(
        deserialize_sample::<M>(&out),
        Err(CdrError::MissingMember(0))
    );
}

#[test]
fn truncated_and_corrupted_payloads_are_errors() {
    let v = rich();
    for e in ALL {
        let mut out = Vec::new();
        serialize_sample(&v, e, &mut out);
        for cut in 4..out.len() {
            let _ = deserialize_sample::<Rich>(&out[..cut]);
            let _ = key_hash_from_sample_payload::<Rich>(&out[..cut]);
            let mut bad = out.clone();
            bad[cut] ^= 0xa5;
            let _ = deserialize_sample::<Rich>(&bad);
            let _ = key_hash_from_key_payload::<Rich>(&bad);
        }
    }
}
