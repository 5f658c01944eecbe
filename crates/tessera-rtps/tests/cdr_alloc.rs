//! The hot path allocates nothing but the output buffer's growth and the decoded value's own
//! fields (counted per thread, so libtest's own bookkeeping is not).

use tessera_derive::TopicType;
use tessera_rtps::cdr::{
    deserialize_sample, key_hash, key_hash_from_sample_payload, serialize_sample, Encoding,
};

#[path = "support/counting_alloc.rs"]
mod counting_alloc;
use counting_alloc::allocs;

#[path = "support/ddsperf.rs"]
mod ddsperf;
use ddsperf::KeyedSeq;

#[derive(Debug, Clone, PartialEq, TopicType)]
#[topic(cdr_path = "::tessera_rtps::cdr")]
struct Named {
    #[key]
    name: String,
    value: u64,
}

fn allocs_during(f: impl FnOnce()) -> u64 {
    let before = allocs();
    f();
    allocs() - before
}

#[test]
fn steady_state_allocations() {
    let v = KeyedSeq {
        seq: 1,
        keyval: 2,
        baggage: vec![7; 65536],
    };
    let n = Named {
        name: "a long enough name".into(),
        value: 3,
    };
    let mut out = Vec::with_capacity(70_000);
    // Warm up the thread-local key scratch buffer.
    let _ = key_hash(&n);
    for e in [Encoding::XCDR1_LE, Encoding::XCDR2_BE] {
        assert_eq!(
            allocs_during(|| {
                out.clear();
                serialize_sample(&v, e, &mut out);
                let _ = key_hash(&v);
                let _ = key_hash(&n);
                let _ = key_hash_from_sample_payload::<KeyedSeq>(&out);
            }),
            0
        );
        // Decoding allocates exactly the baggage.
        let mut back = None;
        assert_eq!(
            allocs_during(|| back = deserialize_sample::<KeyedSeq>(&out).ok()),
            1
        );
        assert_eq!(back.as_ref(), Some(&v));
    }
}
