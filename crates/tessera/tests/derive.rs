//! `#[derive(TopicType)]` through the `tessera` facade (default runtime path
//! `::tessera::rtps::cdr`).

use proptest::prelude::*;
use tessera::rtps::cdr::{
    deserialize_sample, key_hash, key_hash_from_key_payload, serialize_key, serialize_sample,
    CdrReader, CdrWriter, Encoding,
};
use tessera::TopicType;

mod ddsperf {
    use tessera::TopicType;

    /// Registered as the bare name, without the module path.
    #[derive(Debug, Clone, PartialEq, TopicType)]
    pub struct KeyedSeq {
        pub seq: u32,
        #[key]
        pub keyval: u32,
        pub baggage: Vec<u8>,
    }

    #[derive(Debug, Clone, PartialEq, TopicType)]
    pub struct Struct16Inner {
        pub x: [u8; 16],
    }

    /// ddsperf's nested shape: `long long junk; unsigned long seq; @key unsigned long keyval`.
    #[derive(Debug, Clone, PartialEq, TopicType)]
    #[topic(type_name = "Struct16")]
    pub struct S16 {
        pub data: Struct16Inner,
        pub junk: i64,
        pub seq: u32,
        #[key]
        pub keyval: u32,
    }
}
use ddsperf::{KeyedSeq, Struct16Inner, S16};

#[derive(Debug, Clone, PartialEq, TopicType)]
#[topic(type_name = "demo::Sensor")]
struct Sensor {
    #[key]
    id: String,
    #[key]
    channel: u16,
    reading: f64,
    ok: bool,
    grade: char,
    history: Vec<f32>,
    tags: Vec<String>,
    pos: [i32; 3],
}

#[test]
fn names_and_keys() {
    assert_eq!(KeyedSeq::TYPE_NAME, "KeyedSeq");
    assert_eq!(S16::TYPE_NAME, "Struct16");
    assert_eq!(Sensor::TYPE_NAME, "demo::Sensor");
    assert_eq!(
        [
            KeyedSeq::KEYED,
            S16::KEYED,
            Struct16Inner::KEYED,
            Sensor::KEYED
        ],
        [true, true, false, true]
    );
    assert_eq!(KeyedSeq::KEY_MAX_SIZE, Some(4));
    assert_eq!(S16::KEY_MAX_SIZE, Some(4));
    assert_eq!(Struct16Inner::KEY_MAX_SIZE, Some(0));
    assert_eq!(Sensor::KEY_MAX_SIZE, None);
}

#[test]
fn nested_struct_bytes() {
    let v = S16 {
        data: Struct16Inner { x: [1; 16] },
        junk: -1,
        seq: 5,
        keyval: 6,
    };
    let mut x1 = vec![];
    serialize_sample(&v, Encoding::XCDR1_LE, &mut x1);
    let mut x2 = vec![];
    serialize_sample(&v, Encoding::XCDR2_LE, &mut x2);
    // 16 octets leave junk aligned in both: same body.
    assert_eq!(x1[4..], x2[4..]);
    assert_eq!(x1.len(), 4 + 16 + 8 + 4 + 4);
    assert_eq!(deserialize_sample::<S16>(&x1), Ok(v.clone()));
    assert_eq!(key_hash(&v)[..4], [0, 0, 0, 6]);
}

#[test]
fn trait_methods_directly() {
    let v = KeyedSeq {
        seq: 1,
        keyval: 0xdead,
        baggage: vec![1, 2, 3, 4, 5],
    };
    let mut buf = vec![];
    let mut w = CdrWriter::new(&mut buf, Encoding::XCDR2_BE);
    v.encode(&mut w);
    let mut r = CdrReader::new(&buf, Encoding::XCDR2_BE);
    assert_eq!(KeyedSeq::decode(&mut r), Ok(v.clone()));
    assert_eq!(r.remaining(), 0);

    let mut key = vec![];
    v.encode_key(&mut CdrWriter::new(&mut key, Encoding::XCDR2_BE));
    assert_eq!(key, [0, 0, 0xde, 0xad]);

    let mut out = vec![];
    KeyedSeq::transcode_key_only(
        &mut CdrReader::new(&[0xad, 0xde, 0, 0], Encoding::XCDR1_LE),
        &mut CdrWriter::new(&mut out, Encoding::XCDR2_BE),
    )
    .unwrap();
    assert_eq!(out, key);
}

fn sensor() -> impl Strategy<Value = Sensor> {
    (
        ".{0,10}",
        any::<u16>(),
        -1e9f64..1e9,
        any::<bool>(),
        0u8..=255,
        prop::collection::vec(-1e3f32..1e3, 0..6),
        prop::collection::vec("[a-z]{0,5}", 0..4),
        any::<[i32; 3]>(),
    )
        .prop_map(|(id, channel, reading, ok, g, history, tags, pos)| Sensor {
            id,
            channel,
            reading,
            ok,
            grade: char::from(g),
            history,
            tags,
            pos,
        })
}

proptest! {
    #[test]
    fn sensor_round_trip(v in sensor()) {
        for e in [Encoding::XCDR1_LE, Encoding::XCDR1_BE, Encoding::XCDR2_LE, Encoding::XCDR2_BE] {
            let mut out = vec![];
            serialize_sample(&v, e, &mut out);
            prop_assert_eq!(deserialize_sample::<Sensor>(&out), Ok(v.clone()));
            let mut kp = vec![];
            serialize_key(&v, e, &mut kp);
            prop_assert_eq!(key_hash_from_key_payload::<Sensor>(&kp), Ok(key_hash(&v)));
        }
    }
}

/// A generic helper bounded on the trait, as the runtime will write it.
fn encoded_len<T: TopicType>(v: &T) -> usize {
    let mut out = vec![];
    serialize_sample(v, Encoding::XCDR1_LE, &mut out)
}

#[test]
fn usable_as_a_bound() {
    let v = KeyedSeq {
        seq: 0,
        keyval: 0,
        baggage: vec![0; 100],
    };
    assert_eq!(encoded_len(&v), 4 + 12 + 100);
}

/// XTypes allows empty structures; they encode to nothing. (A *sequence* of them is limited
/// to as many elements as bytes remain, so a hostile count cannot spin the decoder.)
#[derive(Debug, Clone, PartialEq, TopicType)]
struct Empty {}

#[derive(Debug, Clone, PartialEq, TopicType)]
struct HoldsEmpty {
    #[key]
    e: Empty,
    n: [Empty; 2],
    tail: u32,
}

#[test]
fn empty_structs() {
    let v = HoldsEmpty {
        e: Empty {},
        n: [Empty {}, Empty {}],
        tail: 3,
    };
    assert_eq!(Empty::KEY_MAX_SIZE, Some(0));
    assert_eq!(HoldsEmpty::KEY_MAX_SIZE, Some(0));
    assert_eq!([Empty::KEYED, HoldsEmpty::KEYED], [false, true]);
    let mut out = vec![];
    serialize_sample(&v, Encoding::XCDR1_LE, &mut out);
    assert_eq!(out, [0, 1, 0, 0, 3, 0, 0, 0]);
    assert_eq!(deserialize_sample::<HoldsEmpty>(&out), Ok(v.clone()));
    assert_eq!(key_hash(&v), [0; 16]);
}
