//! Malformed payloads: every truncation, hostile lengths, invalid values and random bytes give
//! errors, never panics, and never allocate more than a small multiple of the input.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use proptest::prelude::*;
use tessera_derive::TopicType;
use tessera_rtps::cdr::{
    deserialize_sample, key_hash_from_key_payload, key_hash_from_sample_payload, parse_payload,
    serialize_sample, CdrError, Encoding, TopicType,
};

/// Records the largest single allocation request, to show that no decoder allocates from a
/// peer-supplied length.
struct MaxAlloc;
// Per thread: the other tests of this binary run beside it.
thread_local! {
    static LARGEST: Cell<usize> = const { Cell::new(0) };
}

fn note_size(size: usize) {
    let _ = LARGEST.try_with(|c| c.set(c.get().max(size)));
}

// SAFETY: delegates to the system allocator; only records sizes.
unsafe impl GlobalAlloc for MaxAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note_size(layout.size());
        // SAFETY: same contract as ours.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note_size(new_size);
        // SAFETY: same contract as ours.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: MaxAlloc = MaxAlloc;

#[derive(Debug, Clone, PartialEq, TopicType)]
#[topic(cdr_path = "::tessera_rtps::cdr")]
struct Thread {
    name: String,
    u_pct: i32,
    s_pct: i32,
}

/// ddsperf's CPUStats shape: string key, a double, a bool and a sequence of structs.
#[derive(Debug, Clone, PartialEq, TopicType)]
#[topic(cdr_path = "::tessera_rtps::cdr")]
struct CpuStats {
    #[key]
    hostname: String,
    #[key]
    pid: u32,
    maxrss: f64,
    vcsw: u32,
    ivcsw: u32,
    some_above: bool,
    cpu: Vec<Thread>,
}

#[path = "support/ddsperf.rs"]
mod ddsperf;
use ddsperf::KeyedSeq;

#[derive(Debug, Clone, PartialEq, TopicType)]
#[topic(cdr_path = "::tessera_rtps::cdr")]
struct Nested {
    rows: Vec<Vec<u64>>,
    strings: Vec<String>,
    arr: [Thread; 2],
}

const ALL: [Encoding; 4] = [
    Encoding::XCDR1_LE,
    Encoding::XCDR1_BE,
    Encoding::XCDR2_LE,
    Encoding::XCDR2_BE,
];

fn cpu() -> CpuStats {
    CpuStats {
        hostname: "machine".into(),
        pid: 4242,
        maxrss: 1e6,
        vcsw: 1,
        ivcsw: 2,
        some_above: true,
        cpu: vec![
            Thread {
                name: "recv".into(),
                u_pct: 10,
                s_pct: 20,
            },
            Thread {
                name: "tev".into(),
                u_pct: 1,
                s_pct: 2,
            },
        ],
    }
}

fn nested() -> Nested {
    let t = |n: &str| Thread {
        name: n.into(),
        u_pct: -1,
        s_pct: 7,
    };
    Nested {
        rows: vec![vec![1, 2], vec![], vec![3]],
        strings: vec!["a".into(), "".into(), "ccc".into()],
        arr: [t("x"), t("yy")],
    }
}

fn check_truncations<T: TopicType + std::fmt::Debug>(v: &T) {
    for e in ALL {
        let mut full = vec![];
        serialize_sample(v, e, &mut full);
        assert!(deserialize_sample::<T>(&full).is_ok());
        for cut in 0..full.len() {
            let part = &full[..cut];
            assert!(deserialize_sample::<T>(part).is_err(), "{e:?} cut at {cut}");
            let _ = key_hash_from_sample_payload::<T>(part);
            let _ = key_hash_from_key_payload::<T>(part);
        }
    }
}

#[test]
fn truncation_at_every_offset() {
    check_truncations(&cpu());
    check_truncations(&nested());
    check_truncations(&KeyedSeq {
        seq: 1,
        keyval: 2,
        baggage: vec![9; 33],
    });
}

#[test]
fn huge_lengths_do_not_allocate() {
    LARGEST.with(|c| c.set(0));
    // KeyedSeq with a 4-billion-octet baggage.
    let mut p = vec![
        0, 1, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 1, 2, 3, 4,
    ];
    assert_eq!(
        deserialize_sample::<KeyedSeq>(&p),
        Err(CdrError::LengthTooLarge(u32::MAX))
    );
    // Just over what remains.
    p[12..16].copy_from_slice(&5u32.to_le_bytes());
    assert_eq!(
        deserialize_sample::<KeyedSeq>(&p),
        Err(CdrError::LengthTooLarge(5))
    );
    p[12..16].copy_from_slice(&4u32.to_le_bytes());
    assert!(deserialize_sample::<KeyedSeq>(&p).is_ok());

    // A string length of 4 billion.
    let mut s = vec![0, 1, 0, 0, 0xff, 0xff, 0xff, 0xff];
    s.extend_from_slice(&[b'a'; 64]);
    assert!(deserialize_sample::<CpuStats>(&s).is_err());
    // A count of 1e9 rows in Nested.
    let mut n = vec![0, 1, 0, 0];
    n.extend_from_slice(&1_000_000_000u32.to_le_bytes());
    n.extend_from_slice(&[0; 256]);
    assert_eq!(
        deserialize_sample::<Nested>(&n),
        Err(CdrError::LengthTooLarge(1_000_000_000))
    );
    // Inner sequence count hostile, outer fine.
    let mut n = vec![0, 1, 0, 0];
    n.extend_from_slice(&1u32.to_le_bytes());
    n.extend_from_slice(&0x2000_0000u32.to_le_bytes());
    n.extend_from_slice(&[0; 64]);
    assert!(deserialize_sample::<Nested>(&n).is_err());
    for bytes in [&p[..], &s[..], &n[..]] {
        let _ = key_hash_from_sample_payload::<CpuStats>(bytes);
        let _ = key_hash_from_key_payload::<CpuStats>(bytes);
        let _ = key_hash_from_sample_payload::<Nested>(bytes);
    }
    let largest = LARGEST.with(Cell::get);
    assert!(largest < 64 * 1024, "largest allocation {largest}");
}

#[test]
fn invalid_values() {
    // Unsupported encapsulations (PL_CDR_LE, D_CDR2_LE) and missing header.
    for id in [0x0003u16, 0x0009, 0x000b, 0x1234] {
        let mut p = id.to_be_bytes().to_vec();
        p.extend_from_slice(&[0, 0, 1, 0, 0, 0]);
        assert_eq!(
            deserialize_sample::<KeyedSeq>(&p),
            Err(CdrError::UnsupportedEncapsulation(id))
        );
    }
    assert_eq!(
        deserialize_sample::<KeyedSeq>(&[0, 1]),
        Err(CdrError::MissingHeader)
    );
    // Padding larger than the body.
    assert_eq!(parse_payload(&[0, 1, 0, 3, 0]), Err(CdrError::BadPadding));
    // Padding honoured: the last octets are not part of the body.
    let (_, body) = parse_payload(&[0, 1, 0, 2, 1, 2, 3, 4]).unwrap();
    assert_eq!(body, [1, 2]);

    let mut good = vec![];
    serialize_sample(&cpu(), Encoding::XCDR1_LE, &mut good);
    // hostname "machine": length 8 at 4..8, bytes 8..16 (NUL at 15).
    let mut bad = good.clone();
    bad[15] = b'!';
    assert_eq!(
        deserialize_sample::<CpuStats>(&bad),
        Err(CdrError::UnterminatedString)
    );
    let mut bad = good.clone();
    bad[8] = 0xff;
    assert_eq!(
        deserialize_sample::<CpuStats>(&bad),
        Err(CdrError::InvalidUtf8)
    );
    // some_above: after hostname (4 + 8), pid (4), maxrss (8), vcsw, ivcsw (8): body offset 32.
    let mut bad = good.clone();
    assert_eq!(bad[4 + 32], 1);
    bad[4 + 32] = 2;
    assert_eq!(
        deserialize_sample::<CpuStats>(&bad),
        Err(CdrError::InvalidBool(2))
    );
    // Zero string length is accepted as "".
    let mut p = vec![0, 1, 0, 0];
    p.extend_from_slice(&[0; 4]); // hostname len 0
    p.extend_from_slice(&[0; 4 + 8 + 8]); // pid, maxrss, vcsw, ivcsw
    p.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 0]); // bool + pad + cpu count 0
    let v = deserialize_sample::<CpuStats>(&p).unwrap();
    assert_eq!(v.hostname, "");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]
    #[test]
    fn random_bytes_never_panic(mut bytes in prop::collection::vec(any::<u8>(), 0..200), enc in 0usize..4) {
        if bytes.len() >= 2 {
            let id = ALL[enc].encapsulation_id().to_be_bytes();
            bytes[0] = id[0];
            bytes[1] = id[1];
        }
        let _ = deserialize_sample::<CpuStats>(&bytes);
        let _ = deserialize_sample::<Nested>(&bytes);
        let _ = deserialize_sample::<KeyedSeq>(&bytes);
        let _ = key_hash_from_key_payload::<CpuStats>(&bytes);
        let _ = key_hash_from_sample_payload::<CpuStats>(&bytes);
        let _ = key_hash_from_sample_payload::<KeyedSeq>(&bytes);
    }

    #[test]
    fn corrupted_valid_payloads_never_panic(pos in any::<prop::sample::Index>(), val in any::<u8>(), enc in 0usize..4) {
        let mut out = vec![];
        serialize_sample(&nested(), ALL[enc], &mut out);
        let i = pos.index(out.len());
        out[i] = val;
        let _ = deserialize_sample::<Nested>(&out);
        let _ = key_hash_from_sample_payload::<Nested>(&out);
    }
}
