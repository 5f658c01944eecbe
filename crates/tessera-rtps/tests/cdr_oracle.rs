//! Plain CDR (XCDR1) output compared with the `cdr-encoding` crate, and round trips of random
//! values in all four encodings.

use byteorder::{BigEndian, LittleEndian};
use proptest::prelude::*;
use serde::{Deserialize, Serialize};
use tessera_derive::TopicType;
use tessera_rtps::cdr::{
    deserialize_sample, key_hash, key_hash_from_key_payload, key_hash_from_sample_payload,
    parse_payload, serialize_key, serialize_sample, Encoding, TopicType,
};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TopicType)]
#[topic(cdr_path = "::tessera_rtps::cdr")]
struct Leaf {
    flag: bool,
    small: i16,
    wide: u64,
    name: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TopicType)]
#[topic(cdr_path = "::tessera_rtps::cdr")]
struct Everything {
    a: u8,
    b: i8,
    c: u16,
    #[key]
    d: i32,
    e: u32,
    f: i64,
    g: f32,
    h: f64,
    s: String,
    octets: Vec<u8>,
    longs: Vec<u32>,
    doubles: Vec<f64>,
    arr: [u16; 3],
    bytes4: [u8; 5],
    leaf: Leaf,
    #[key]
    leaves: Vec<Leaf>,
    names: Vec<String>,
    tail: u8,
}

fn leaf() -> impl Strategy<Value = Leaf> {
    (any::<bool>(), any::<i16>(), any::<u64>(), ".{0,12}").prop_map(|(flag, small, wide, name)| {
        Leaf {
            flag,
            small,
            wide,
            name,
        }
    })
}

fn everything() -> impl Strategy<Value = Everything> {
    (
        (
            any::<u8>(),
            any::<i8>(),
            any::<u16>(),
            any::<i32>(),
            any::<u32>(),
            any::<i64>(),
            any::<f32>(),
            any::<f64>(),
        ),
        (
            ".{0,20}",
            prop::collection::vec(any::<u8>(), 0..40),
            prop::collection::vec(any::<u32>(), 0..5),
            prop::collection::vec(any::<f64>(), 0..5),
            any::<[u16; 3]>(),
            any::<[u8; 5]>(),
        ),
        (
            leaf(),
            prop::collection::vec(leaf(), 0..4),
            prop::collection::vec(".{0,6}", 0..4),
            any::<u8>(),
        ),
    )
        .prop_map(
            |(
                (a, b, c, d, e, f, g, h),
                (s, octets, longs, doubles, arr, bytes4),
                (l, ls, ns, t),
            )| {
                Everything {
                    a,
                    b,
                    c,
                    d,
                    e,
                    f,
                    g,
                    h,
                    s,
                    octets,
                    longs,
                    doubles,
                    arr,
                    bytes4,
                    leaf: l,
                    leaves: ls,
                    names: ns,
                    tail: t,
                }
            },
        )
}

const ALL: [Encoding; 4] = [
    Encoding::XCDR1_LE,
    Encoding::XCDR1_BE,
    Encoding::XCDR2_LE,
    Encoding::XCDR2_BE,
];

/// NaN != NaN: compare through the encoding instead.
fn same(a: &Everything, b: &Everything) -> bool {
    let (mut x, mut y) = (vec![], vec![]);
    serialize_sample(a, Encoding::XCDR1_LE, &mut x);
    serialize_sample(b, Encoding::XCDR1_LE, &mut y);
    x == y
}

proptest! {
    #[test]
    fn xcdr1_matches_cdr_encoding(v in everything()) {
        let mut ours = vec![];
        serialize_sample(&v, Encoding::XCDR1_LE, &mut ours);
        let (_, body) = parse_payload(&ours).unwrap();
        let theirs = cdr_encoding::to_vec::<_, LittleEndian>(&v).unwrap();
        prop_assert_eq!(body, &theirs[..]);

        let mut ours = vec![];
        serialize_sample(&v, Encoding::XCDR1_BE, &mut ours);
        let (_, body) = parse_payload(&ours).unwrap();
        let theirs = cdr_encoding::to_vec::<_, BigEndian>(&v).unwrap();
        prop_assert_eq!(body, &theirs[..]);

        // And we decode what they encode.
        let mut payload = vec![0, 1, 0, 0];
        payload.extend_from_slice(&cdr_encoding::to_vec::<_, LittleEndian>(&v).unwrap());
        let back = deserialize_sample::<Everything>(&payload).unwrap();
        prop_assert!(same(&back, &v));
    }

    #[test]
    fn round_trip_all_encodings(v in everything()) {
        for e in ALL {
            let mut out = vec![];
            serialize_sample(&v, e, &mut out);
            prop_assert_eq!(out.len() % 4, 0);
            let back = deserialize_sample::<Everything>(&out).unwrap();
            prop_assert!(same(&back, &v));
            prop_assert_eq!(key_hash_from_sample_payload::<Everything>(&out), Ok(key_hash(&v)));
            let mut kp = vec![];
            serialize_key(&v, e, &mut kp);
            prop_assert_eq!(key_hash_from_key_payload::<Everything>(&kp), Ok(key_hash(&v)));
        }
    }

    #[test]
    fn leaf_round_trip(l in leaf()) {
        for e in ALL {
            let mut out = vec![];
            serialize_sample(&l, e, &mut out);
            prop_assert_eq!(deserialize_sample::<Leaf>(&out), Ok(l.clone()));
        }
    }
}

#[test]
fn everything_is_keyed_by_a_string_carrying_member() {
    assert_eq!(Everything::KEY_MAX_SIZE, None);
    assert_eq!(Leaf::KEY_MAX_SIZE, Some(0));
    assert_eq!(Everything::TYPE_NAME, "Everything");
}
