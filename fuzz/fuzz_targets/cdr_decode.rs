//! Decodes arbitrary bytes as a few topic types (nested structs, strings, sequences, arrays,
//! 8-byte members), computes key hashes from them as sample and as key-only payloads, and
//! checks that whatever decodes re-encodes and decodes to the same bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tessera_derive::TopicType;
use tessera_rtps::cdr::{
    deserialize_sample, key_hash, key_hash_from_key_payload, key_hash_from_sample_payload,
    parse_payload, serialize_sample, TopicType,
};

#[derive(Debug, TopicType)]
#[topic(cdr_path = "tessera_rtps::cdr")]
struct KeyedSeq {
    seq: u32,
    #[key]
    keyval: u32,
    baggage: Vec<u8>,
}

#[derive(Debug, TopicType)]
#[topic(cdr_path = "tessera_rtps::cdr")]
struct CpuStatThread {
    name: String,
    u_pct: i32,
    s_pct: i32,
}

#[derive(Debug, TopicType)]
#[topic(cdr_path = "tessera_rtps::cdr")]
struct CpuStats {
    #[key]
    hostname: String,
    #[key]
    pid: u32,
    maxrss: f64,
    vcsw: u32,
    ivcsw: u32,
    some_above: bool,
    cpu: Vec<CpuStatThread>,
}

#[derive(Debug, TopicType)]
#[topic(cdr_path = "tessera_rtps::cdr")]
struct Inner {
    #[key]
    id: u16,
    wide: u64,
    c: char,
}

#[derive(Debug, TopicType)]
#[topic(cdr_path = "tessera_rtps::cdr")]
struct Deep {
    a: u8,
    #[key]
    inner: Inner,
    grid: Vec<Vec<i64>>,
    arr: [Inner; 2],
    names: Vec<String>,
    octets: [u8; 5],
    f: f32,
}

fn check<T: TopicType>(data: &[u8]) {
    let _ = key_hash_from_sample_payload::<T>(data);
    let _ = key_hash_from_key_payload::<T>(data);
    if let Ok(v) = deserialize_sample::<T>(data) {
        // Re-encode in the received encoding: decoding that must give the same value back,
        // i.e. the same bytes again (NaN-safe comparison).
        let Ok((encoding, _)) = parse_payload(data) else {
            panic!("decoded a payload whose header does not parse");
        };
        let mut once = Vec::new();
        serialize_sample(&v, encoding, &mut once);
        let again = deserialize_sample::<T>(&once).expect("re-encoded sample must decode");
        let mut twice = Vec::new();
        serialize_sample(&again, encoding, &mut twice);
        assert_eq!(once, twice);
        assert_eq!(key_hash_from_sample_payload::<T>(&once), Ok(key_hash(&v)));
    }
}

fuzz_target!(|data: &[u8]| {
    check::<KeyedSeq>(data);
    check::<CpuStats>(data);
    check::<Deep>(data);
});
