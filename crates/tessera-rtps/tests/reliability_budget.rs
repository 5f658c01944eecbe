//! A participant-wide byte pool bounds what all its readers buffer together: many readers ×
//! many writers cannot multiply the per-reader bounds.

use std::cell::RefCell;
use std::time::Instant;

use tessera_rtps::budget::SharedBudget;
use tessera_rtps::reader::{Delivered, ReaderConfig, ReaderCore};
use tessera_rtps::sim::{epoch, reader_guid, writer_guid};
use tessera_rtps::types::{EntityId, Guid, Locators, SequenceNumber};
use tessera_rtps::wire::{Data, DataFrag, PayloadKind};

/// A reliable reader drawing from the given pools, matched with the sim's writer.
fn reader(
    n: usize,
    reassembly: Option<&SharedBudget>,
    buffered: Option<&SharedBudget>,
) -> (ReaderCore, Guid, Instant) {
    let mut cfg = ReaderConfig::new(reader_guid(n));
    cfg.shared_reassembly = reassembly.cloned();
    cfg.shared_buffered = buffered.cloned();
    let mut r = ReaderCore::new(cfg);
    let w = writer_guid();
    r.add_writer(w, Locators::new(), true, epoch());
    (r, w, epoch())
}

/// The first 1 KiB fragment of a `size`-byte sample `sn`.
fn first_frag(w: Guid, sn: SequenceNumber, size: u32, p: &[u8]) -> DataFrag<'_> {
    DataFrag {
        reader_id: EntityId::UNKNOWN,
        writer_id: w.entity_id,
        writer_sn: sn,
        fragment_starting_num: 1,
        fragments_in_submessage: 1,
        fragment_size: 1024,
        sample_size: size,
        inline_qos: None,
        key_flag: false,
        payload: p,
    }
}

fn data(w: Guid, sn: SequenceNumber, payload: &[u8]) -> Data<'_> {
    Data {
        reader_id: EntityId::UNKNOWN,
        writer_id: w.entity_id,
        writer_sn: sn,
        inline_qos: None,
        payload_kind: PayloadKind::Data,
        payload,
    }
}

#[test]
fn shared_reassembly_budget_refuses_when_spent_and_recovers() {
    const SAMPLE: u32 = 64 << 10;
    // Room for three partial 64 KiB samples in the whole participant.
    let pool = SharedBudget::new(3 * SAMPLE as usize);
    let (mut a, w, now) = reader(1, Some(&pool), None);
    let (mut b, _, _) = reader(2, Some(&pool), None);
    let p = [7u8; 1024];
    let got = RefCell::new(Vec::new());
    let mut cb = |d: Delivered<'_>| got.borrow_mut().push((d.seq, d.payload.len()));

    // Reader a starts two samples, reader b one: the pool is spent.
    a.on_data_frag(w.prefix, &first_frag(w, 1, SAMPLE, &p), None, now, &mut cb);
    a.on_data_frag(w.prefix, &first_frag(w, 2, SAMPLE, &p), None, now, &mut cb);
    b.on_data_frag(w.prefix, &first_frag(w, 1, SAMPLE, &p), None, now, &mut cb);
    assert_eq!(pool.used(), 3 * SAMPLE as usize);
    // Each reader is far below its own limits, but a new partial sample is refused.
    b.on_data_frag(w.prefix, &first_frag(w, 2, SAMPLE, &p), None, now, &mut cb);
    assert_eq!(b.counters().fragment_no_room, 1);
    assert_eq!(pool.refused(), 1);
    assert_eq!(b.buffered_bytes(), SAMPLE as usize);

    // Reader a completes its first sample: its buffer goes back to the pool.
    for n in 2..=SAMPLE / 1024 {
        let mut f = first_frag(w, 1, SAMPLE, &p);
        f.fragment_starting_num = n;
        a.on_data_frag(w.prefix, &f, None, now, &mut cb);
    }
    assert_eq!(*got.borrow(), [(1, SAMPLE as usize)]);
    assert_eq!(pool.used(), 2 * SAMPLE as usize);
    // Now b's second sample fits.
    b.on_data_frag(w.prefix, &first_frag(w, 2, SAMPLE, &p), None, now, &mut cb);
    assert_eq!(b.counters().fragment_no_room, 1, "no new refusal");
    assert_eq!(pool.used(), 3 * SAMPLE as usize);

    // Deleting a reader returns everything it held.
    drop(a);
    assert_eq!(pool.used(), 2 * SAMPLE as usize);
    drop(b);
    assert_eq!(pool.used(), 0);
}

#[test]
fn shared_out_of_order_budget_bounds_many_readers() {
    const READERS: usize = 16;
    let pool = SharedBudget::new(1 << 20);
    let mut readers: Vec<_> = (0..READERS).map(|n| reader(n, None, Some(&pool))).collect();
    let big = vec![1u8; 4096];
    let mut cb = |_: Delivered<'_>| {};
    // Sample 1 never comes: every later sample would be buffered. Per reader that is bounded
    // by 64 MiB; for the participant, by the pool's 1 MiB.
    for (r, w, now) in &mut readers {
        for sn in 2..1000 {
            r.on_data(w.prefix, &data(*w, sn, &big), None, *now, &mut cb);
        }
    }
    let held: usize = readers.iter().map(|(r, _, _)| r.buffered_bytes()).sum();
    assert!(held <= 1 << 20, "{held}");
    assert_eq!(held, pool.used());
    assert!(pool.refused() > 0);
    let dropped: u64 = readers
        .iter()
        .map(|(r, _, _)| r.counters().out_of_window)
        .sum();
    assert_eq!(dropped, pool.refused());

    // The missing sample arrives at the first reader: it delivers what it buffered and the
    // bytes go back, so another reader can buffer again.
    let mut delivered = 0;
    {
        let (r, w, now) = &mut readers[0];
        let before = r.buffered_bytes();
        assert!(before > 0);
        r.on_data(w.prefix, &data(*w, 1, &big), None, *now, &mut |_| {
            delivered += 1
        });
        assert_eq!(r.buffered_bytes(), 0);
    }
    assert!(delivered > 1);
    let (r, w, now) = &mut readers[READERS - 1];
    let before = r.buffered_bytes();
    r.on_data(w.prefix, &data(*w, 1500, &big), None, *now, &mut cb);
    assert_eq!(r.buffered_bytes(), before + big.len());
}
