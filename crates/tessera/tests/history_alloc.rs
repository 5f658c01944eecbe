//! Insert + take in steady state allocates nothing (counting allocator, per thread).

use tessera::history::*;

mod counting_alloc;
use counting_alloc::allocs;

/// A sample type like a small ddsperf payload.
#[derive(Clone)]
struct Payload {
    seq: u32,
    _bytes: [u8; 12],
}

const W: WriterGuid = [7; 16];

fn key(n: u32) -> KeyHash {
    let mut k = [0; 16];
    k[..4].copy_from_slice(&n.to_be_bytes());
    k
}

fn steady<F: FnMut(&mut History<Payload>, &mut Vec<Sample<Payload>>, u32)>(
    cfg: HistoryConfig,
    mut step: F,
) -> u64 {
    let mut h = History::new(cfg);
    let mut out = Vec::with_capacity(1024);
    for i in 0..1000 {
        step(&mut h, &mut out, i); // warm up: queues and maps reach their working size
    }
    let before = allocs();
    for i in 1000..101_000 {
        step(&mut h, &mut out, i);
    }
    allocs() - before
}

#[test]
fn steady_state_is_allocation_free() {
    let before = allocs();
    drop(std::hint::black_box(vec![1u8; 10]));
    assert!(allocs() > before, "the counting allocator counts");

    let keep_all = HistoryConfig {
        history: HistoryKind::KeepAll,
        ..Default::default()
    };

    // Keyless, one sample at a time.
    let n = steady(keep_all, |h, out, i| {
        let r = h.insert(
            KEYLESS,
            W,
            Payload {
                seq: i,
                _bytes: [0; 12],
            },
            i as i64,
            i as i64,
        );
        assert!(r.is_stored());
        out.clear();
        assert_eq!(h.take_into(out, UNLIMITED), 1);
        assert_eq!(out[0].data.as_ref().map(|p| p.seq), Some(i));
    });
    assert_eq!(n, 0, "keyless insert + take_into");

    // Keyless bursts of 64 under keep-last 1000.
    let n = steady(
        HistoryConfig {
            history: HistoryKind::KeepLast(1000),
            ..Default::default()
        },
        |h, out, i| {
            for j in 0..64 {
                h.insert(
                    KEYLESS,
                    W,
                    Payload {
                        seq: i * 64 + j,
                        _bytes: [0; 12],
                    },
                    0,
                    0,
                );
            }
            out.clear();
            assert_eq!(h.take_into(out, UNLIMITED), 64);
        },
    );
    assert_eq!(n, 0, "bursts");

    // 100 keyed instances, round robin, read then take.
    let n = steady(keep_all, |h, out, i| {
        h.insert(
            key(i % 100),
            W,
            Payload {
                seq: i,
                _bytes: [0; 12],
            },
            0,
            0,
        );
        out.clear();
        h.read_into(out, Selection::All, UNLIMITED, StateMasks::NOT_READ)
            .unwrap();
        assert_eq!(out.len(), 1);
        out.clear();
        h.take_into(out, UNLIMITED);
        assert_eq!(out.len(), 1);
    });
    assert_eq!(n, 0, "keyed instances");
}
