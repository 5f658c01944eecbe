//! Byte-exact encodings (ddsperf's types, XCDR1 vs XCDR2 alignment) and key hashes.

use tessera_derive::TopicType;
use tessera_rtps::cdr::{
    deserialize_sample, key_hash, key_hash_from_key_payload, key_hash_from_sample_payload,
    parse_payload, serialize_key, serialize_sample, CdrError, CdrReader, CdrWriter, Encoding,
    TopicType,
};

#[derive(Debug, Clone, PartialEq, TopicType)]
#[topic(cdr_path = "::tessera_rtps::cdr")]
struct OneULong {
    seq: u32,
}

#[derive(Debug, Clone, PartialEq, TopicType)]
#[topic(cdr_path = "::tessera_rtps::cdr")]
struct Keyed32 {
    seq: u32,
    #[key]
    keyval: u32,
    baggage: [u8; 24],
}

#[path = "support/ddsperf.rs"]
mod ddsperf;
use ddsperf::KeyedSeq;

/// Members whose alignment differs between XCDR1 and XCDR2.
#[derive(Debug, Clone, PartialEq, TopicType)]
#[topic(cdr_path = "::tessera_rtps::cdr", type_name = "test::Mixed")]
struct Mixed {
    a: u8,
    b: u64,
    c: u16,
    d: f64,
}

const ALL: [Encoding; 4] = [
    Encoding::XCDR1_LE,
    Encoding::XCDR1_BE,
    Encoding::XCDR2_LE,
    Encoding::XCDR2_BE,
];

fn ser<T: TopicType>(v: &T, e: Encoding) -> Vec<u8> {
    let mut out = Vec::new();
    let n = serialize_sample(v, e, &mut out);
    assert_eq!(n, out.len());
    assert_eq!(out.len() % 4, 0);
    out
}

#[test]
fn type_names_and_keys() {
    assert_eq!(OneULong::TYPE_NAME, "OneULong");
    assert_eq!(Keyed32::TYPE_NAME, "Keyed32");
    assert_eq!(KeyedSeq::TYPE_NAME, "KeyedSeq");
    assert_eq!(Mixed::TYPE_NAME, "test::Mixed");
    let keyed = [
        OneULong::KEYED,
        Keyed32::KEYED,
        KeyedSeq::KEYED,
        Mixed::KEYED,
    ];
    assert_eq!(keyed, [false, true, true, false]);
    assert_eq!(OneULong::KEY_MAX_SIZE, Some(0));
    assert_eq!(Keyed32::KEY_MAX_SIZE, Some(4));
    assert_eq!(KeyedSeq::KEY_MAX_SIZE, Some(4));
}

#[test]
fn one_ulong_bytes() {
    let v = OneULong { seq: 0x0a0b0c0d };
    assert_eq!(
        ser(&v, Encoding::XCDR1_LE),
        [0, 1, 0, 0, 0x0d, 0x0c, 0x0b, 0x0a]
    );
    assert_eq!(
        ser(&v, Encoding::XCDR1_BE),
        [0, 0, 0, 0, 0x0a, 0x0b, 0x0c, 0x0d]
    );
    assert_eq!(
        ser(&v, Encoding::XCDR2_LE),
        [0, 7, 0, 0, 0x0d, 0x0c, 0x0b, 0x0a]
    );
    assert_eq!(
        ser(&v, Encoding::XCDR2_BE),
        [0, 6, 0, 0, 0x0a, 0x0b, 0x0c, 0x0d]
    );
    for e in ALL {
        assert_eq!(deserialize_sample::<OneULong>(&ser(&v, e)), Ok(v.clone()));
    }
}

#[test]
fn keyed32_bytes() {
    let mut baggage = [0u8; 24];
    for (i, b) in baggage.iter_mut().enumerate() {
        *b = i as u8 + 0x40;
    }
    let v = Keyed32 {
        seq: 7,
        keyval: 0x11223344,
        baggage,
    };
    let mut expect = vec![0, 1, 0, 0, 7, 0, 0, 0, 0x44, 0x33, 0x22, 0x11];
    expect.extend_from_slice(&baggage);
    assert_eq!(ser(&v, Encoding::XCDR1_LE), expect);
    // All members naturally aligned: XCDR2 differs only in the id.
    expect[1] = 7;
    assert_eq!(ser(&v, Encoding::XCDR2_LE), expect);
    let mut be = vec![0, 6, 0, 0, 0, 0, 0, 7, 0x11, 0x22, 0x33, 0x44];
    be.extend_from_slice(&baggage);
    assert_eq!(ser(&v, Encoding::XCDR2_BE), be);
    for e in ALL {
        assert_eq!(deserialize_sample::<Keyed32>(&ser(&v, e)), Ok(v.clone()));
    }
    // Key hash: keyval big-endian + 12 zeros.
    let mut kh = [0u8; 16];
    kh[..4].copy_from_slice(&[0x11, 0x22, 0x33, 0x44]);
    assert_eq!(key_hash(&v), kh);
}

#[test]
fn keyed_seq_bytes_and_padding() {
    let v = KeyedSeq {
        seq: 1,
        keyval: 2,
        baggage: vec![0xaa, 0xbb, 0xcc],
    };
    // Body: 4 + 4 + 4 + 3 = 15 bytes, one byte of padding announced in the options.
    assert_eq!(
        ser(&v, Encoding::XCDR1_LE),
        [0, 1, 0, 1, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 0xaa, 0xbb, 0xcc, 0]
    );
    assert_eq!(
        ser(&v, Encoding::XCDR2_BE),
        [0, 6, 0, 1, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0xaa, 0xbb, 0xcc, 0]
    );
    let empty = KeyedSeq {
        seq: 1,
        keyval: 2,
        baggage: vec![],
    };
    assert_eq!(
        ser(&empty, Encoding::XCDR1_LE),
        [0, 1, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0]
    );
    for e in ALL {
        for s in [&v, &empty] {
            assert_eq!(deserialize_sample::<KeyedSeq>(&ser(s, e)).as_ref(), Ok(s));
        }
    }
    let bytes = ser(&v, Encoding::XCDR1_LE);
    let (_, body) = parse_payload(&bytes).unwrap();
    assert_eq!(body.len(), 15);
    // ddsperf "size N" sets 12 + baggage; a 64 KiB sample round-trips.
    let big = KeyedSeq {
        seq: 9,
        keyval: 3,
        baggage: (0..65536u32).map(|i| i as u8).collect(),
    };
    let bytes = ser(&big, Encoding::XCDR1_LE);
    assert_eq!(bytes.len(), 4 + 12 + 65536);
    assert_eq!(deserialize_sample::<KeyedSeq>(&bytes), Ok(big));
}

#[test]
fn serialize_appends_and_aligns_from_body_start() {
    // A caller serializing behind other bytes (e.g. an RTPS header) gets the same payload.
    let v = Mixed {
        a: 1,
        b: 2,
        c: 3,
        d: 4.0,
    };
    let mut out = vec![0xee; 3];
    serialize_sample(&v, Encoding::XCDR1_LE, &mut out);
    assert_eq!(&out[..3], &[0xee; 3]);
    assert_eq!(out[3..], ser(&v, Encoding::XCDR1_LE)[..]);
}

#[test]
fn xcdr1_vs_xcdr2_alignment() {
    let v = Mixed {
        a: 0x01,
        b: 0x0203040506070809,
        c: 0x0a0b,
        d: 1.5,
    };
    let x1 = ser(&v, Encoding::XCDR1_LE);
    let mut e1 = vec![0, 1, 0, 0, 0x01, 0, 0, 0, 0, 0, 0, 0];
    e1.extend_from_slice(&0x0203040506070809u64.to_le_bytes());
    e1.extend_from_slice(&[0x0b, 0x0a, 0, 0, 0, 0, 0, 0]);
    e1.extend_from_slice(&1.5f64.to_le_bytes());
    assert_eq!(x1, e1);
    assert_eq!(x1.len(), 4 + 32);

    let x2 = ser(&v, Encoding::XCDR2_BE);
    let mut e2 = vec![0, 6, 0, 0, 0x01, 0, 0, 0];
    e2.extend_from_slice(&0x0203040506070809u64.to_be_bytes());
    e2.extend_from_slice(&[0x0a, 0x0b, 0, 0]);
    e2.extend_from_slice(&1.5f64.to_be_bytes());
    assert_eq!(x2, e2);
    assert_eq!(x2.len(), 4 + 24);
    for e in ALL {
        assert_eq!(deserialize_sample::<Mixed>(&ser(&v, e)), Ok(v.clone()));
    }
}

#[test]
fn writer_reader_primitives_and_strings() {
    for e in ALL {
        let mut buf = vec![];
        let mut w = CdrWriter::new(&mut buf, e);
        w.write_bool(true);
        w.write_str("hé");
        w.write_char('x');
        w.write_char('€'); // not Latin-1: written as '?'
        w.write_i16(-2);
        w.write_i64(-3);
        w.write_f32(0.5);
        w.write_byte_seq(b"xyz");
        assert_eq!(w.position(), buf.len());
        let mut r = CdrReader::new(&buf, e);
        assert_eq!(r.read_bool(), Ok(true));
        assert_eq!(r.read_str(), Ok("hé"));
        assert_eq!(r.read_char(), Ok('x'));
        assert_eq!(r.read_char(), Ok('?'));
        assert_eq!(r.read_i16(), Ok(-2));
        assert_eq!(r.read_i64(), Ok(-3));
        assert_eq!(r.read_f32(), Ok(0.5));
        assert_eq!(r.read_byte_seq(), Ok(&b"xyz"[..]));
        assert_eq!(r.remaining(), 0);
        assert_eq!(r.read_u8(), Err(CdrError::Truncated));
    }
    // String layout: length counts the NUL.
    let mut buf = vec![];
    CdrWriter::new(&mut buf, Encoding::XCDR1_LE).write_str("ab");
    assert_eq!(buf, [3, 0, 0, 0, b'a', b'b', 0]);
}

// ---- key hashes ----

#[derive(Debug, Clone, PartialEq, TopicType)]
#[topic(cdr_path = "::tessera_rtps::cdr")]
struct KeyU8U64 {
    #[key]
    a: u8,
    x: f32,
    #[key]
    b: u64,
}

#[derive(Debug, Clone, PartialEq, TopicType)]
#[topic(cdr_path = "::tessera_rtps::cdr")]
struct StringKey {
    #[key]
    name: String,
    #[key]
    id: u32,
    value: f64,
}

#[derive(Debug, Clone, PartialEq, TopicType)]
#[topic(cdr_path = "::tessera_rtps::cdr")]
struct Key16 {
    #[key]
    k: [u32; 4],
}

#[derive(Debug, Clone, PartialEq, TopicType)]
#[topic(cdr_path = "::tessera_rtps::cdr")]
struct Key17 {
    #[key]
    k: [u8; 17],
}

#[derive(Debug, Clone, PartialEq, TopicType)]
#[topic(cdr_path = "::tessera_rtps::cdr")]
struct Inner {
    #[key]
    id: u16,
    payload: u64,
}

#[derive(Debug, Clone, PartialEq, TopicType)]
#[topic(cdr_path = "::tessera_rtps::cdr")]
struct Point {
    x: i32,
    y: i32,
}

#[derive(Debug, Clone, PartialEq, TopicType)]
#[topic(cdr_path = "::tessera_rtps::cdr")]
struct NestedKeys {
    junk: u64,
    #[key]
    inner: Inner,
    #[key]
    at: Point,
    label: String,
}

#[test]
fn key_max_sizes() {
    assert_eq!(KeyU8U64::KEY_MAX_SIZE, Some(12));
    assert_eq!(StringKey::KEY_MAX_SIZE, None);
    assert_eq!(Key16::KEY_MAX_SIZE, Some(16));
    assert_eq!(Key17::KEY_MAX_SIZE, Some(17));
    // inner key form = id (2), then Point (2 pad + 8).
    assert_eq!(NestedKeys::KEY_MAX_SIZE, Some(12));
}

#[test]
fn key_hash_padded_uses_xcdr2_be() {
    let v = KeyU8U64 {
        a: 0xab,
        x: 1.0,
        b: 0x0102030405060708,
    };
    // XCDR2: the u64 aligns to 4, not 8.
    let expect = [0xab, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0, 0];
    assert_eq!(key_hash(&v), expect);
    for e in ALL {
        let mut kp = vec![];
        serialize_key(&v, e, &mut kp);
        assert_eq!(
            key_hash_from_key_payload::<KeyU8U64>(&kp),
            Ok(expect),
            "{e:?}"
        );
        assert_eq!(
            key_hash_from_sample_payload::<KeyU8U64>(&ser(&v, e)),
            Ok(expect),
            "{e:?}"
        );
    }
    // The XCDR1 key-only payload aligns the u64 to 8.
    let mut kp = vec![];
    serialize_key(&v, Encoding::XCDR1_LE, &mut kp);
    assert_eq!(kp.len(), 4 + 16);
}

#[test]
fn key_hash_exactly_16_is_padded_17_is_md5() {
    let v = Key16 {
        k: [0x01020304, 5, 6, 0x0708090a],
    };
    assert_eq!(
        key_hash(&v),
        [1, 2, 3, 4, 0, 0, 0, 5, 0, 0, 0, 6, 7, 8, 9, 10]
    );
    let w = Key17 { k: [7; 17] };
    assert_eq!(key_hash(&w), md5::compute([7u8; 17]).0);
}

#[test]
fn string_key_is_md5() {
    let v = StringKey {
        name: "host".into(),
        id: 0x2a,
        value: 2.5,
    };
    let input = vec![
        0, 0, 0, 5, b'h', b'o', b's', b't', 0, 0, 0, 0, 0, 0, 0, 0x2a,
    ];
    assert_eq!(key_hash(&v), md5::compute(&input).0);
    for e in ALL {
        let mut kp = vec![];
        serialize_key(&v, e, &mut kp);
        assert_eq!(
            key_hash_from_key_payload::<StringKey>(&kp),
            Ok(key_hash(&v))
        );
        assert_eq!(
            key_hash_from_sample_payload::<StringKey>(&ser(&v, e)),
            Ok(key_hash(&v))
        );
    }
}

#[test]
fn nested_key_members() {
    let v = NestedKeys {
        junk: 99,
        inner: Inner {
            id: 0x0102,
            payload: 5,
        },
        at: Point { x: 3, y: -1 },
        label: "l".into(),
    };
    assert_eq!(
        key_hash(&v),
        [1, 2, 0, 0, 0, 0, 0, 3, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0]
    );
    for e in ALL {
        let bytes = ser(&v, e);
        assert_eq!(deserialize_sample::<NestedKeys>(&bytes), Ok(v.clone()));
        assert_eq!(
            key_hash_from_sample_payload::<NestedKeys>(&bytes),
            Ok(key_hash(&v))
        );
        let mut kp = vec![];
        serialize_key(&v, e, &mut kp);
        assert_eq!(
            key_hash_from_key_payload::<NestedKeys>(&kp),
            Ok(key_hash(&v))
        );
    }
}

#[test]
fn keyless_hash_and_key_payload() {
    let v = OneULong { seq: 5 };
    assert_eq!(key_hash(&v), [0; 16]);
    let mut kp = vec![];
    serialize_key(&v, Encoding::XCDR1_LE, &mut kp);
    assert_eq!(kp, [0, 1, 0, 0]);
    assert_eq!(key_hash_from_key_payload::<OneULong>(&kp), Ok([0; 16]));
}

#[test]
fn ddsperf_key_payload() {
    // A dispose from Cyclone for Keyed32/KeyedSeq carries the key as XCDR1 LE.
    let kp = [0, 1, 0, 0, 0x44, 0x33, 0x22, 0x11];
    let mut kh = [0u8; 16];
    kh[..4].copy_from_slice(&[0x11, 0x22, 0x33, 0x44]);
    assert_eq!(key_hash_from_key_payload::<Keyed32>(&kp), Ok(kh));
    assert_eq!(key_hash_from_key_payload::<KeyedSeq>(&kp), Ok(kh));
    let v = KeyedSeq {
        seq: 0,
        keyval: 0x11223344,
        baggage: vec![1, 2, 3],
    };
    let mut out = vec![];
    serialize_key(&v, Encoding::XCDR1_LE, &mut out);
    assert_eq!(out, kp);
}

// ---- XCDR2 DHEADERs in front of collections of non-primitive elements ----

#[derive(Debug, Clone, PartialEq, TopicType)]
#[topic(cdr_path = "::tessera_rtps::cdr")]
struct T2 {
    name: String,
    u: i32,
}

#[derive(Debug, Clone, PartialEq, TopicType)]
#[topic(cdr_path = "::tessera_rtps::cdr")]
struct Dh {
    a: Vec<u32>,
    #[key]
    b: Vec<String>,
    c: [[u8; 2]; 2],
    d: [T2; 1],
}

#[test]
fn xcdr2_dheaders() {
    let v = Dh {
        a: vec![7],
        b: vec!["x".into()],
        c: [[1, 2], [3, 4]],
        d: [T2 {
            name: String::new(),
            u: 9,
        }],
    };
    #[rustfmt::skip]
    let x2: &[u8] = &[
        0, 7, 0, 0,
        1, 0, 0, 0, 7, 0, 0, 0,             // sequence<unsigned long>: no DHEADER
        10, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, b'x', 0, // sequence<string>: DHEADER 10
        1, 2, 3, 4,                         // octet c[2][2]: no DHEADER
        0, 0, 12, 0, 0, 0,                  // pad, DHEADER of T2 d[1]
        1, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0,
    ];
    assert_eq!(ser(&v, Encoding::XCDR2_LE), x2);
    #[rustfmt::skip]
    let x1: &[u8] = &[
        0, 1, 0, 0,
        1, 0, 0, 0, 7, 0, 0, 0,
        1, 0, 0, 0, 2, 0, 0, 0, b'x', 0,
        1, 2, 3, 4,
        0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0,
    ];
    assert_eq!(ser(&v, Encoding::XCDR1_LE), x1);
    for e in ALL {
        let bytes = ser(&v, e);
        assert_eq!(deserialize_sample::<Dh>(&bytes), Ok(v.clone()));
        assert_eq!(key_hash_from_sample_payload::<Dh>(&bytes), Ok(key_hash(&v)));
        let mut kp = vec![];
        serialize_key(&v, e, &mut kp);
        assert_eq!(key_hash_from_key_payload::<Dh>(&kp), Ok(key_hash(&v)));
    }
    // Key hash input: XCDR2 BE with the DHEADER.
    assert_eq!(
        key_hash(&v),
        md5::compute([0, 0, 0, 10, 0, 0, 0, 1, 0, 0, 0, 2, b'x', 0]).0
    );
    // A DHEADER shorter than its member is an error; a longer one is skipped over.
    let mut bad = x2.to_vec();
    bad[12] = 9;
    assert_eq!(deserialize_sample::<Dh>(&bad), Err(CdrError::BadDheader));
    let mut bad = x2.to_vec();
    bad[12] = 200;
    assert!(matches!(
        deserialize_sample::<Dh>(&bad),
        Err(CdrError::LengthTooLarge(200))
    ));
}
