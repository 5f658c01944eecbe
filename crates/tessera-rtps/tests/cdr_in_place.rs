//! Decoding into an existing value (`deserialize_sample_into`, what `take_reusing` uses) gives
//! what decoding a new one gives, whatever the old value held, for every encoding and
//! extensibility, and keeps the buffers of sequences and strings; malformed payloads fail
//! without panicking.

use proptest::prelude::*;
use tessera_derive::TopicType;
use tessera_rtps::cdr::{deserialize_sample, deserialize_sample_into, serialize_sample, Encoding};

const ENCODINGS: [Encoding; 4] = [
    Encoding::XCDR1_LE,
    Encoding::XCDR1_BE,
    Encoding::XCDR2_LE,
    Encoding::XCDR2_BE,
];

#[derive(Debug, Clone, PartialEq, Default, TopicType)]
#[topic(cdr_path = "::tessera_rtps::cdr")]
struct Inner {
    a: u16,
    name: String,
}

#[derive(Debug, Clone, PartialEq, Default, TopicType)]
#[topic(cdr_path = "::tessera_rtps::cdr")]
struct Everything {
    #[key]
    id: u32,
    bytes: Vec<u8>,
    words: Vec<i32>,
    names: Vec<String>,
    inners: Vec<Inner>,
    nested: Inner,
    grid: [u16; 3],
    #[optional]
    note: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Default, TopicType)]
#[topic(cdr_path = "::tessera_rtps::cdr", extensibility = "appendable")]
struct Appended {
    seq: u32,
    text: String,
    inners: Vec<Inner>,
}

#[derive(Debug, Clone, PartialEq, Default, TopicType)]
#[topic(cdr_path = "::tessera_rtps::cdr", extensibility = "mutable")]
struct Changing {
    #[key]
    id: u8,
    text: String,
    #[optional]
    extra: Option<Vec<u8>>,
}

fn inner() -> impl Strategy<Value = Inner> {
    (any::<u16>(), "[a-z]{0,6}").prop_map(|(a, name)| Inner { a, name })
}

fn everything() -> impl Strategy<Value = Everything> {
    (
        any::<u32>(),
        proptest::collection::vec(any::<u8>(), 0..20),
        proptest::collection::vec(any::<i32>(), 0..5),
        proptest::collection::vec("[a-z]{0,5}", 0..4),
        proptest::collection::vec(inner(), 0..4),
        inner(),
        any::<[u16; 3]>(),
        proptest::option::of("[a-z]{0,5}"),
    )
        .prop_map(
            |(id, bytes, words, names, inners, nested, grid, note)| Everything {
                id,
                bytes,
                words,
                names,
                inners,
                nested,
                grid,
                note,
            },
        )
}

fn appended() -> impl Strategy<Value = Appended> {
    (
        any::<u32>(),
        "[a-z]{0,9}",
        proptest::collection::vec(inner(), 0..4),
    )
        .prop_map(|(seq, text, inners)| Appended { seq, text, inners })
}

fn changing() -> impl Strategy<Value = Changing> {
    (
        any::<u8>(),
        "[a-z]{0,9}",
        proptest::option::of(proptest::collection::vec(any::<u8>(), 0..9)),
    )
        .prop_map(|(id, text, extra)| Changing { id, text, extra })
}

/// Decodes `new`'s encodings into a copy of `old`: the result is `new`, as a fresh decode.
fn into_old<T: tessera_rtps::cdr::TopicType + Clone + PartialEq + std::fmt::Debug>(
    old: &T,
    new: &T,
) {
    for enc in ENCODINGS {
        let mut payload = Vec::new();
        serialize_sample(new, enc, &mut payload);
        let mut value = old.clone();
        deserialize_sample_into(&payload, &mut value).unwrap();
        assert_eq!(&value, new, "{enc:?}");
        assert_eq!(deserialize_sample::<T>(&payload).unwrap(), value);
        // Cut payloads fail as a fresh decode does, and leave some value behind.
        for cut in [payload.len() / 2, payload.len().saturating_sub(5), 3] {
            let fresh = deserialize_sample::<T>(&payload[..cut]);
            let mut value = old.clone();
            assert_eq!(
                deserialize_sample_into(&payload[..cut], &mut value).is_err(),
                fresh.is_err(),
                "{enc:?}, {cut} of {} bytes",
                payload.len()
            );
        }
    }
}

proptest! {
    #[test]
    fn decoding_into_an_old_value_gives_the_new_one(
        (a, b) in (everything(), everything()),
        (c, d) in (appended(), appended()),
        (e, f) in (changing(), changing()),
    ) {
        into_old(&a, &b);
        into_old(&c, &d);
        into_old(&e, &f);
    }
}

#[test]
fn sequences_and_strings_keep_their_buffers() {
    let big = Everything {
        bytes: vec![1; 64],
        names: vec!["n".repeat(32); 3],
        inners: vec![
            Inner {
                a: 1,
                name: "i".repeat(32),
            };
            3
        ],
        ..Default::default()
    };
    let small = Everything {
        id: 7,
        bytes: vec![2; 16],
        names: vec!["short".into(); 2],
        inners: vec![
            Inner {
                a: 2,
                name: "tiny".into(),
            };
            2
        ],
        ..Default::default()
    };
    let mut payload = Vec::new();
    serialize_sample(&small, Encoding::XCDR2_LE, &mut payload);
    let mut value = big.clone();
    let (bytes_at, name_at, inner_at) = (
        value.bytes.as_ptr(),
        value.names[0].as_ptr(),
        value.inners[1].name.as_ptr(),
    );
    deserialize_sample_into(&payload, &mut value).unwrap();
    assert_eq!(value, small);
    assert_eq!(value.bytes.as_ptr(), bytes_at);
    assert_eq!(value.names[0].as_ptr(), name_at);
    assert_eq!(value.inners[1].name.as_ptr(), inner_at);
}
