//! Key hashes of received samples read at fixed offsets (`TopicType::FIXED_KEY`) equal the ones
//! the writer side computes by encoding the key, for every encoding, alignment and key shape
//! (and so do the writer's own, read back from the bytes it just serialized); malformed payloads
//! are refused as before.

use proptest::prelude::*;
use tessera_derive::TopicType;
use tessera_rtps::cdr::{
    has_fixed_key, key_hash, key_hash_from_sample_payload, serialize_sample,
    serialize_sample_keyed, Encoding, TopicType,
};

const ENCODINGS: [Encoding; 4] = [
    Encoding::XCDR1_LE,
    Encoding::XCDR1_BE,
    Encoding::XCDR2_LE,
    Encoding::XCDR2_BE,
];

// ddsperf's type: the key after one member, a sequence after it.
#[path = "support/ddsperf.rs"]
mod ddsperf;
use ddsperf::KeyedSeq;

/// An 8-byte key after a byte: aligned to 8 in XCDR1, to 4 in XCDR2 and in the hash.
#[derive(Debug, Clone, PartialEq, TopicType)]
#[topic(cdr_path = "::tessera_rtps::cdr")]
struct WideKey {
    a: u8,
    #[key]
    k: u64,
    b: u16,
}

/// Several keys of different widths: padding inside the hash, a string after them.
#[derive(Debug, Clone, PartialEq, TopicType)]
#[topic(cdr_path = "::tessera_rtps::cdr")]
struct ManyKeys {
    #[key]
    a: u8,
    #[key]
    b: i16,
    x: f64,
    #[key]
    c: i32,
    tail: String,
}

/// An 8-byte key after a byte key: 4-aligned in the hash (at 4, not 8).
#[derive(Debug, Clone, PartialEq, TopicType)]
#[topic(cdr_path = "::tessera_rtps::cdr")]
struct ByteThenWide {
    #[key]
    a: u8,
    #[key]
    k: i64,
}

/// A GUID-like key filling the hash exactly.
#[derive(Debug, Clone, PartialEq, TopicType)]
#[topic(cdr_path = "::tessera_rtps::cdr")]
struct ArrayKey {
    #[key]
    id: [u8; 16],
    value: f64,
}

/// Arrays of wider elements as keys, the last one after a double.
#[derive(Debug, Clone, PartialEq, TopicType)]
#[topic(cdr_path = "::tessera_rtps::cdr")]
struct WideArrays {
    #[key]
    k: [u16; 3],
    x: f64,
    #[key]
    z: i8,
    #[key]
    f: f32,
}

/// A key too long for the fixed path (hashed with MD5 from the re-encoded key).
#[derive(Debug, Clone, PartialEq, TopicType)]
#[topic(cdr_path = "::tessera_rtps::cdr")]
struct LongKey {
    #[key]
    id: [u8; 20],
    n: u32,
}

/// A boolean before the key: not every bit pattern is a value, so the fixed path is off.
#[derive(Debug, Clone, PartialEq, TopicType)]
#[topic(cdr_path = "::tessera_rtps::cdr")]
struct FlagFirst {
    on: bool,
    #[key]
    k: u32,
}

/// Appendable: the key would move with the DHEADER, so the fixed path is off.
#[derive(Debug, Clone, PartialEq, TopicType)]
#[topic(cdr_path = "::tessera_rtps::cdr", extensibility = "appendable")]
struct Appended {
    seq: u32,
    #[key]
    k: u16,
}

fn agrees<T: TopicType + std::fmt::Debug>(sample: &T) {
    let expected = key_hash(sample);
    for enc in ENCODINGS {
        let mut payload = Vec::new();
        serialize_sample(sample, enc, &mut payload);
        assert_eq!(
            key_hash_from_sample_payload::<T>(&payload).unwrap(),
            expected,
            "{enc:?} {sample:?}"
        );
        // The writer's way: the hash read from the bytes it just wrote, after other bytes.
        let mut written = vec![0xa5; 3];
        assert_eq!(
            serialize_sample_keyed(sample, enc, &mut written),
            expected,
            "{enc:?} {sample:?}"
        );
        assert_eq!(written[3..], payload[..]);
    }
}

#[test]
fn the_derive_finds_fixed_keys_only_where_the_layout_allows() {
    assert_eq!(<KeyedSeq as TopicType>::FIXED_KEY.len(), 2);
    assert_eq!(<WideKey as TopicType>::FIXED_KEY.len(), 2);
    assert_eq!(<ManyKeys as TopicType>::FIXED_KEY.len(), 4);
    assert_eq!(
        <ArrayKey as TopicType>::FIXED_KEY[0].flat,
        Some((1, 16)),
        "an array is its elements"
    );
    assert_eq!(<WideArrays as TopicType>::FIXED_KEY[0].flat, Some((2, 3)));
    assert_eq!(<FlagFirst as TopicType>::FIXED_KEY[0].flat, None);
    assert!(<Appended as TopicType>::FIXED_KEY.is_empty());
    // The received hashes below take the fixed path for these, the re-encoding one for those.
    assert!(has_fixed_key::<KeyedSeq>() && has_fixed_key::<WideKey>());
    assert!(has_fixed_key::<ManyKeys>() && has_fixed_key::<ArrayKey>());
    assert!(has_fixed_key::<WideArrays>() && has_fixed_key::<ByteThenWide>());
    assert!(!has_fixed_key::<LongKey>() && !has_fixed_key::<FlagFirst>());
    assert!(!has_fixed_key::<Appended>());
}

#[test]
fn fixed_and_re_encoded_key_hashes_agree_at_the_edges() {
    agrees(&KeyedSeq {
        seq: u32::MAX,
        keyval: 0x0102_0304,
        baggage: vec![],
    });
    agrees(&WideKey {
        a: 0xff,
        k: 0x0102_0304_0506_0708,
        b: 1,
    });
    agrees(&ByteThenWide { a: 0x80, k: -2 });
    agrees(&ArrayKey {
        id: std::array::from_fn(|i| i as u8 + 1),
        value: -0.0,
    });
    agrees(&WideArrays {
        k: [0x0102, 0x0304, 0x0506],
        x: f64::NAN,
        z: -1,
        f: f32::MIN_POSITIVE,
    });
    agrees(&LongKey { id: [7; 20], n: 3 });
    agrees(&FlagFirst { on: true, k: 9 });
    agrees(&Appended { seq: 1, k: 0xabcd });
}

#[test]
fn a_truncated_payload_is_refused_by_the_fixed_path_too() {
    let sample = ManyKeys {
        a: 1,
        b: -2,
        x: 3.5,
        c: 4,
        tail: "tail".into(),
    };
    for enc in ENCODINGS {
        let mut payload = Vec::new();
        serialize_sample(&sample, enc, &mut payload);
        // The encapsulation header is 4 bytes; every shorter body misses the string's end,
        // except where only trailing padding is cut.
        let body_end = payload.len() - usize::from(payload[3] & 3);
        for cut in 4..body_end {
            assert!(
                key_hash_from_sample_payload::<ManyKeys>(&payload[..cut]).is_err(),
                "{enc:?}: {cut} of {} bytes accepted",
                payload.len()
            );
        }
    }
}

proptest! {
    #[test]
    fn fixed_key_hashes_match_the_writers(
        a in any::<u8>(), b in any::<i16>(), x in any::<f64>(), c in any::<i32>(),
        tail in "[a-z]{0,9}", k in any::<u64>(), id in any::<[u8; 16]>(),
        arr in any::<[u16; 3]>(), z in any::<i8>(), f in any::<f32>(),
        baggage in proptest::collection::vec(any::<u8>(), 0..40),
    ) {
        agrees(&ManyKeys { a, b, x, c, tail });
        agrees(&WideKey { a, k, b: b as u16 });
        agrees(&ByteThenWide { a, k: k as i64 });
        agrees(&ArrayKey { id, value: x });
        agrees(&WideArrays { k: arr, x, z, f });
        agrees(&KeyedSeq { seq: c as u32, keyval: k as u32, baggage });
    }
}
