//! The in-order fast path allocates nothing per sample: write → poll_transmit_into →
//! as_submessage → on_data → deliver (borrowed), plus the periodic ACKNACK round trip.

use std::borrow::Cow;
use std::sync::Arc;

use tessera_rtps::reader::{ReaderConfig, ReaderCore};
use tessera_rtps::sim::{epoch, reader_guid, writer_guid};
use tessera_rtps::types::Locators;
use tessera_rtps::wire::Submessage;
use tessera_rtps::writer::{HistoryKind, Transmit, WriterConfig, WriterCore};

#[path = "support/counting_alloc.rs"]
mod counting_alloc;
use counting_alloc::allocs;

fn run(history: HistoryKind, key: Option<[u8; 16]>) -> u64 {
    let mut cfg = WriterConfig::new(writer_guid());
    cfg.history = history;
    cfg.max_samples = 1000;
    let mut w = WriterCore::new(cfg);
    let mut r = ReaderCore::new(ReaderConfig::new(reader_guid(0)));
    let now = epoch();
    w.add_reader(reader_guid(0), Locators::new(), true, false, now);
    r.add_writer(writer_guid(), Locators::new(), true, now);
    let payload: Arc<Vec<u8>> = vec![0u8, 1, 0, 0, 1, 2, 3, 4].into();
    let mut tx = Transmit::new();
    let mut scratch = Vec::with_capacity(256);
    // Handshake: the writer holds data until the reader answers its first heartbeat.
    while w.poll_transmit_into(now, &mut tx) {
        for sm in &tx.submessages {
            if let Submessage::Heartbeat(h) = sm.as_submessage(&mut scratch) {
                r.on_heartbeat(writer_guid().prefix, &h, now, &mut |_| {});
            }
        }
    }
    while r.poll_transmit_into(now, &mut tx) {
        for sm in &tx.submessages {
            if let Submessage::AckNack(a) = sm.as_submessage(&mut scratch) {
                w.on_acknack(reader_guid(0).prefix, &a, now);
            }
        }
    }
    let mut delivered = 0u64;
    let mut borrowed = 0u64;
    let mut step = |w: &mut WriterCore, r: &mut ReaderCore, tx: &mut Transmit| {
        w.write(payload.clone(), key, 0, false, None, now).unwrap();
        while w.poll_transmit_into(now, tx) {
            for sm in &tx.submessages {
                let mut cb = |d: tessera_rtps::reader::Delivered<'_>| {
                    delivered += 1;
                    if matches!(d.payload, Cow::Borrowed(_)) {
                        borrowed += 1;
                    }
                };
                match sm.as_submessage(&mut scratch) {
                    Submessage::Data(d) => r.on_data(writer_guid().prefix, &d, None, now, &mut cb),
                    Submessage::Heartbeat(h) => {
                        r.on_heartbeat(writer_guid().prefix, &h, now, &mut cb)
                    }
                    _ => {}
                }
            }
        }
        while r.poll_transmit_into(now, tx) {
            for sm in &tx.submessages {
                if let Submessage::AckNack(a) = sm.as_submessage(&mut scratch) {
                    w.on_acknack(reader_guid(0).prefix, &a, now);
                }
            }
        }
    };
    for _ in 0..5000 {
        step(&mut w, &mut r, &mut tx);
    }
    let before = allocs();
    for _ in 0..20_000 {
        step(&mut w, &mut r, &mut tx);
    }
    let allocs = allocs() - before;
    assert_eq!(delivered, 25_000);
    assert_eq!(borrowed, 25_000, "in-order samples are delivered in place");
    assert!(w.history_len() < 1000);
    allocs
}

#[test]
fn steady_state_fast_path_does_not_allocate() {
    let a = run(HistoryKind::KeepAll, None);
    let b = run(HistoryKind::KeepLast(1), None);
    let c = run(HistoryKind::KeepLast(4), Some([3; 16]));
    assert_eq!((a, b, c), (0, 0, 0));
}
