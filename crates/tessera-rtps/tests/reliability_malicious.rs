//! A hostile or broken writer cannot grow a reader's memory without bound or make it panic.

use std::time::{Duration, Instant};

use tessera_rtps::frag::FragLimits;
use tessera_rtps::reader::{Delivered, ReaderConfig, ReaderCore};
use tessera_rtps::sim::{epoch, reader_guid, writer_guid};
use tessera_rtps::types::{EntityId, Guid, GuidPrefix, Locators, SequenceNumber};
use tessera_rtps::wire::{
    Data, DataFrag, FragmentNumberSet, Gap, Heartbeat, HeartbeatFrag, PayloadKind,
    SequenceNumberSet,
};
use tessera_rtps::writer::OutSubmessage;

fn reader(reliable: bool) -> (ReaderCore, Guid, Instant) {
    let mut cfg = ReaderConfig::new(reader_guid(0));
    cfg.max_window = 256;
    cfg.max_buffered_bytes = 1 << 20;
    cfg.frag = FragLimits {
        max_sample_size: 1 << 20,
        max_partial: 4,
        max_total_bytes: 4 << 20,
        timeout: Duration::from_secs(1),
    };
    let mut r = ReaderCore::new(cfg);
    let w = writer_guid();
    let now = epoch();
    r.add_writer(w, Locators::new(), reliable, now);
    (r, w, now)
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

fn hb(w: Guid, first: i64, last: i64, count: i32) -> Heartbeat {
    Heartbeat {
        reader_id: EntityId::UNKNOWN,
        writer_id: w.entity_id,
        first_sn: first,
        last_sn: last,
        count,
        final_flag: false,
        liveliness_flag: false,
    }
}

fn frag(w: Guid, sn: i64, start: u32, n: u16, fs: u16, size: u32, p: &[u8]) -> DataFrag<'_> {
    DataFrag {
        reader_id: EntityId::UNKNOWN,
        writer_id: w.entity_id,
        writer_sn: sn,
        fragment_starting_num: start,
        fragments_in_submessage: n,
        fragment_size: fs,
        sample_size: size,
        inline_qos: None,
        key_flag: false,
        payload: p,
    }
}

#[test]
fn absurd_sequence_numbers_are_bounded() {
    let (mut r, w, now) = reader(true);
    let src = w.prefix;
    let mut got = Vec::new();
    let mut cb = |d: Delivered<'_>| got.push(d.seq);
    let big = vec![0u8; 4096];
    for sn in [0, -5, i64::MAX, i64::MIN, 1 << 40, (1 << 62) + 1] {
        r.on_data(src, &data(w, sn, &big), None, now, &mut cb);
    }
    // Fill far more than the window/byte budget with out-of-order samples.
    for sn in 2..100_000 {
        r.on_data(src, &data(w, sn, &big), None, now, &mut cb);
    }
    assert!(r.buffered_bytes() <= 1 << 20, "{}", r.buffered_bytes());
    let c = r.counters();
    assert!(c.out_of_window > 99_000 && c.invalid >= 4, "{c:?}");
    // Heartbeats with lies.
    r.on_heartbeat(src, &hb(w, 0, 10, 1), now, &mut cb);
    r.on_heartbeat(src, &hb(w, 5, 3, 2), now, &mut cb);
    r.on_heartbeat(src, &hb(w, i64::MAX, i64::MAX, 3), now, &mut cb);
    r.on_heartbeat(src, &hb(w, 1, 1 << 61, 4), now, &mut cb);
    let t = r.poll_transmit(now).expect("acknack");
    match &t.submessages[0] {
        OutSubmessage::AckNack(a) => {
            assert_eq!(a.reader_sn_state.base, 1);
            assert!(a.reader_sn_state.num_bits <= 256);
        }
        other => panic!("{other:?}"),
    }
    // Skipping an enormous range is O(window), not O(range).
    r.on_heartbeat(src, &hb(w, 1 << 61, 1 << 61, 5), now, &mut cb);
    assert_eq!(r.next_expected(w), Some(1 << 61));
    assert_eq!(r.buffered_bytes(), 0);
    // Huge GAP ranges.
    let gap = Gap {
        reader_id: EntityId::UNKNOWN,
        writer_id: w.entity_id,
        gap_start: 1 << 61,
        gap_list: SequenceNumberSet::empty(1 << 62),
    };
    r.on_gap(src, &gap, now, &mut cb);
    assert_eq!(r.next_expected(w), Some(1 << 62));
    let bad_gap = Gap {
        gap_start: 5,
        gap_list: SequenceNumberSet::empty(4),
        ..gap
    };
    r.on_gap(src, &bad_gap, now, &mut cb);
    r.on_data(src, &data(w, 1 << 62, b"ok"), None, now, &mut cb);
    assert_eq!(got.last(), Some(&(1 << 62)));
}

#[test]
fn absurd_fragments_are_bounded() {
    let (mut r, w, now) = reader(true);
    let src = w.prefix;
    let mut n = 0;
    let mut cb = |_: Delivered<'_>| n += 1;
    let p = vec![7u8; 1024];
    // Lying geometry.
    r.on_data_frag(
        src,
        &frag(w, 1, 1, 1, 1024, u32::MAX, &p),
        None,
        now,
        &mut cb,
    );
    r.on_data_frag(src, &frag(w, 1, 0, 1, 1024, 4096, &p), None, now, &mut cb);
    r.on_data_frag(src, &frag(w, 1, 1, 1, 0, 4096, &p), None, now, &mut cb);
    r.on_data_frag(
        src,
        &frag(w, 1, 3, 60_000, 16, 4096, &p),
        None,
        now,
        &mut cb,
    );
    r.on_data_frag(src, &frag(w, 1, 1, 2, 1024, 4096, &p), None, now, &mut cb);
    assert_eq!(r.counters().bad_fragment, 5);
    // Many distinct partial samples of the maximum size: only `max_partial` are kept.
    for sn in 1..200 {
        r.on_data_frag(
            src,
            &frag(w, sn, 1, 1, 1024, 1 << 20, &p),
            None,
            now,
            &mut cb,
        );
    }
    assert!(r.buffered_bytes() <= 4 << 20, "{}", r.buffered_bytes());
    assert!(r.counters().fragment_no_room > 0);
    // Partial samples that stop making progress expire.
    let later = now + Duration::from_secs(2);
    assert!(r.poll_timeout().is_some());
    r.handle_timeout(later);
    assert_eq!(r.buffered_bytes(), 0);
    assert!(r.counters().fragment_expired > 0);
    // HEARTBEAT_FRAG for nothing in progress does nothing; with a bad sn it is invalid.
    let hbf = HeartbeatFrag {
        reader_id: EntityId::UNKNOWN,
        writer_id: w.entity_id,
        writer_sn: -1,
        last_fragment_num: u32::MAX,
        count: 1,
    };
    r.on_heartbeat_frag(src, &hbf, later);
    assert_eq!(n, 0);
}

#[test]
fn unknown_writers_are_ignored_and_counted() {
    let (mut r, w, now) = reader(true);
    let stranger = Guid::new(GuidPrefix([9; 12]), w.entity_id);
    let mut n = 0;
    let mut cb = |_: Delivered<'_>| n += 1;
    r.on_data(
        stranger.prefix,
        &data(stranger, 1, b"x"),
        None,
        now,
        &mut cb,
    );
    r.on_heartbeat(stranger.prefix, &hb(stranger, 1, 5, 1), now, &mut cb);
    assert_eq!(n, 0);
    assert_eq!(r.counters().unknown_writer, 2);
    // Nothing for the stranger: only the pre-emptive ACKNACK to the matched writer.
    let out: Vec<_> = std::iter::from_fn(|| r.poll_transmit(now)).collect();
    assert_eq!(out.len(), 1);
    assert!(out[0]
        .submessages
        .iter()
        .all(|s| matches!(s, OutSubmessage::AckNack(a) if a.writer_id == w.entity_id)));
    assert_eq!(out[0].dest.info_dst(), Some(w.prefix));
}

#[test]
fn best_effort_reader_drops_old_and_duplicates() {
    let (mut r, w, now) = reader(false);
    let mut got = Vec::new();
    let mut cb = |d: Delivered<'_>| got.push(d.seq);
    for sn in [1, 3, 2, 3, 7, 5, 8] {
        r.on_data(w.prefix, &data(w, sn, b"abcd"), None, now, &mut cb);
    }
    r.on_heartbeat(w.prefix, &hb(w, 1, 100, 1), now, &mut cb);
    assert_eq!(got, vec![1, 3, 7, 8]);
    // 2, 4, 5 and 6 were skipped (5 arrived after 7: too late).
    assert_eq!(r.counters().lost, 4);
    assert!(r.poll_transmit(now).is_none(), "best effort never acks");
}

fn gap(w: Guid, start: i64, base: i64, bits: &[i64]) -> Gap {
    let mut list = SequenceNumberSet::empty(base);
    for &b in bits {
        assert!(list.insert(b));
    }
    Gap {
        reader_id: EntityId::UNKNOWN,
        writer_id: w.entity_id,
        gap_start: start,
        gap_list: list,
    }
}

#[test]
fn a_best_effort_stream_counts_skipped_numbers_as_lost_unless_a_gap_names_them() {
    let (mut r, w, now) = reader(false);
    let mut got = Vec::new();
    let mut cb = |d: Delivered<'_>| got.push(d.seq);
    // A late joiner: the stream starts at the first sample, nothing before it is lost.
    r.on_data(w.prefix, &data(w, 40, b"abcd"), None, now, &mut cb);
    assert_eq!(r.counters().lost, 0);
    // 41..=43 left out on purpose (filtered), then 44 and 45 from the bitmap's leading run;
    // 47 in the bitmap after a hole says nothing about 46.
    r.on_gap(w.prefix, &gap(w, 41, 44, &[44, 45, 47]), now, &mut cb);
    r.on_data(w.prefix, &data(w, 46, b"abcd"), None, now, &mut cb);
    assert_eq!(r.counters().lost, 0);
    // 47 and 48 never come.
    r.on_data(w.prefix, &data(w, 49, b"abcd"), None, now, &mut cb);
    assert_eq!(r.counters().lost, 2);
    // A GAP that starts past the next number: the numbers before its start are lost.
    r.on_gap(w.prefix, &gap(w, 52, 55, &[]), now, &mut cb);
    assert_eq!(r.counters().lost, 4);
    // An old GAP changes nothing; the stream goes on after the GAP's end.
    r.on_gap(w.prefix, &gap(w, 10, 20, &[]), now, &mut cb);
    r.on_data(w.prefix, &data(w, 55, b"abcd"), None, now, &mut cb);
    assert_eq!(got, vec![40, 46, 49, 55]);
    assert_eq!(r.counters().lost, 4);
    assert!(r.poll_transmit(now).is_none(), "best effort never acks");
}

#[test]
fn a_gap_first_starts_a_best_effort_stream_without_loss() {
    let (mut r, w, now) = reader(false);
    let mut got = Vec::new();
    let mut cb = |d: Delivered<'_>| got.push(d.seq);
    r.on_gap(w.prefix, &gap(w, 5, 9, &[]), now, &mut cb);
    r.on_data(w.prefix, &data(w, 8, b"abcd"), None, now, &mut cb);
    r.on_data(w.prefix, &data(w, 9, b"abcd"), None, now, &mut cb);
    assert_eq!(got, vec![9]);
    assert_eq!(r.counters().lost, 0);
}

#[test]
fn nack_frag_names_only_missing_fragments() {
    let (mut r, w, now) = reader(true);
    let mut n = 0;
    let mut cb = |_: Delivered<'_>| n += 1;
    let p = vec![1u8; 100];
    for f in [1u32, 2, 4, 6] {
        r.on_data_frag(
            w.prefix,
            &frag(w, 1, f, 1, 100, 600, &p),
            None,
            now,
            &mut cb,
        );
    }
    r.on_heartbeat(w.prefix, &hb(w, 1, 1, 1), now, &mut cb);
    let t = r.poll_transmit(now).expect("transmit");
    let mut saw = false;
    for sm in &t.submessages {
        match sm {
            OutSubmessage::AckNack(a) => assert_eq!(a.reader_sn_state.num_bits, 0),
            OutSubmessage::NackFrag(nf) => {
                assert_eq!(nf.writer_sn, 1);
                let want: FragmentNumberSet = {
                    let mut s = FragmentNumberSet::empty(3);
                    s.insert(3);
                    s.insert(5);
                    s
                };
                assert_eq!(nf.fragment_number_state, want);
                saw = true;
            }
            other => panic!("{other:?}"),
        }
    }
    assert!(saw);
    for f in [3u32, 5] {
        r.on_data_frag(
            w.prefix,
            &frag(w, 1, f, 1, 100, 600, &p),
            None,
            now,
            &mut cb,
        );
    }
    assert_eq!(n, 1);
}

/// The largest sequence number a reader accepts (2^62; see `reader.rs`).
const MAX_SN: i64 = 1 << 62;

#[test]
fn huge_first_sn_is_counted_as_lost_exactly() {
    let (mut r, w, now) = reader(true);
    let src = w.prefix;
    let mut got = Vec::new();
    let mut cb = |d: Delivered<'_>| got.push(d.seq);
    // The first HEARTBEAT only places the stream; skipping up to it is no loss.
    r.on_heartbeat(src, &hb(w, 1, 3, 1), now, &mut cb);
    r.on_data(src, &data(w, 1, b"a"), None, now, &mut cb);
    r.on_data(src, &data(w, 3, b"c"), None, now, &mut cb);
    // Everything from 2 up to 2^62 - 1 is gone except the buffered 3: 2^62 - 3 samples lost.
    r.on_heartbeat(src, &hb(w, MAX_SN, MAX_SN, 2), now, &mut cb);
    assert_eq!(r.counters().lost, (MAX_SN - 3) as u64);
    // Beyond 2^62 is refused, not counted; an older first_sn changes nothing.
    r.on_heartbeat(src, &hb(w, i64::MAX, i64::MAX, 3), now, &mut cb);
    r.on_heartbeat(src, &hb(w, 5, MAX_SN, 4), now, &mut cb);
    assert_eq!(r.counters().lost, (MAX_SN - 3) as u64);
    assert_eq!(r.counters().invalid, 1);
    r.on_data(src, &data(w, MAX_SN, b"z"), None, now, &mut cb);
    assert_eq!(got, vec![1, 3, MAX_SN]);
}

#[test]
fn last_sn_below_first_sn() {
    let (mut r, w, now) = reader(true);
    let src = w.prefix;
    let mut cb = |_: Delivered<'_>| {};
    // lastSN = firstSN - 1 is the empty history (allowed); anything lower is a lie.
    r.on_heartbeat(src, &hb(w, 10, 8, 1), now, &mut cb);
    r.on_heartbeat(src, &hb(w, MAX_SN, 1, 2), now, &mut cb);
    r.on_heartbeat(src, &hb(w, 1, i64::MIN, 3), now, &mut cb);
    assert_eq!(r.counters().invalid, 3);
    assert_eq!(r.next_expected(w), Some(1));
    r.on_heartbeat(src, &hb(w, 10, 9, 4), now, &mut cb);
    assert_eq!(r.next_expected(w), Some(10));
    assert_eq!(
        r.counters().lost,
        0,
        "the first heartbeat places the stream"
    );
    // Nothing is missing, so the ACKNACK requests nothing.
    let t = r.poll_transmit(now).expect("acknack");
    match &t.submessages[0] {
        OutSubmessage::AckNack(a) => {
            assert_eq!(a.reader_sn_state.base, 10);
            assert_eq!(a.reader_sn_state.num_bits, 0);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn gap_ranges_that_overflow() {
    let (mut r, w, now) = reader(true);
    let src = w.prefix;
    let mut got = Vec::new();
    let mut cb = |d: Delivered<'_>| got.push(d.seq);
    let full = |base| SequenceNumberSet {
        base,
        num_bits: 256,
        bitmap: [u32::MAX; 8],
    };
    // Bitmaps reaching past i64::MAX (a decoder refuses them, the core must too).
    for (start, list) in [
        (i64::MAX, full(i64::MAX - 10)),
        (1, full(i64::MAX - 255)),
        (MAX_SN + 1, full(MAX_SN + 1)),
    ] {
        let gap = Gap {
            reader_id: EntityId::UNKNOWN,
            writer_id: w.entity_id,
            gap_start: start,
            gap_list: list,
        };
        r.on_gap(src, &gap, now, &mut cb);
    }
    assert_eq!(r.counters().invalid, 3);
    assert_eq!(r.next_expected(w), Some(1));
    // A valid GAP whose bitmap runs past 2^62: irrelevant numbers are not losses, and the
    // reader never expects a number it would refuse.
    r.on_data(src, &data(w, 1, b"a"), None, now, &mut cb);
    let gap = Gap {
        reader_id: EntityId::UNKNOWN,
        writer_id: w.entity_id,
        gap_start: 2,
        gap_list: full(MAX_SN - 10),
    };
    r.on_gap(src, &gap, now, &mut cb);
    assert_eq!(r.counters().lost, 0);
    let next = r.next_expected(w).expect("matched");
    assert!(next <= MAX_SN + 1, "{next}");
    r.on_heartbeat(src, &hb(w, 1, MAX_SN, 1), now, &mut cb);
    let _ = r.poll_transmit(now);
    assert_eq!(got, vec![1]);
}

#[test]
fn writer_survives_absurd_acknacks_and_nack_frags() {
    use std::sync::Arc;
    use tessera_rtps::wire::{AckNack, NackFrag};
    use tessera_rtps::writer::{WriterConfig, WriterCore};
    let now = epoch();
    let mut cfg = WriterConfig::new(writer_guid());
    cfg.history = tessera_rtps::writer::HistoryKind::KeepAll;
    let mut wr = WriterCore::new(cfg);
    let rg = reader_guid(0);
    wr.add_reader(rg, Locators::new(), true, false, now);
    for i in 0..3u8 {
        wr.write(Arc::new(vec![0, 1, 0, 0, i]), None, 0, false, None, now)
            .unwrap();
    }
    let acknack = |base: i64, bits: u32, count: i32| {
        let s = SequenceNumberSet {
            base,
            num_bits: bits,
            bitmap: [u32::MAX; 8],
        };
        AckNack {
            reader_id: rg.entity_id,
            writer_id: writer_guid().entity_id,
            reader_sn_state: s,
            count,
            final_flag: false,
        }
    };
    let mut count = 0;
    for (base, bits) in [
        (i64::MAX, 256),
        (i64::MAX - 255, 256),
        (i64::MIN, 256),
        (1, 100_000),
        (MAX_SN, 0),
    ] {
        count += 1;
        wr.on_acknack(rg.prefix, &acknack(base, bits, count), now);
    }
    // Acknowledging beyond what was written acknowledges what was written, no more.
    assert!(wr.all_acked());
    assert_eq!(wr.unacked_samples(), 0);
    for (sn, base, bits) in [
        (i64::MAX, u32::MAX, 256),
        (2, u32::MAX - 10, 256),
        (2, 1, 100_000),
        (i64::MIN, 1, 1),
    ] {
        count += 1;
        let mut set = tessera_rtps::wire::FragmentNumberSet::empty(base);
        set.num_bits = bits;
        let nf = NackFrag {
            reader_id: rg.entity_id,
            writer_id: writer_guid().entity_id,
            writer_sn: sn,
            fragment_number_state: set,
            count,
        };
        wr.on_nack_frag(rg.prefix, &nf, now);
    }
    // The hostile requests produced no repairs.
    let mut t = tessera_rtps::writer::Transmit::new();
    while wr.poll_transmit_into(now + Duration::from_secs(1), &mut t) {
        assert!(t
            .submessages
            .iter()
            .all(|s| !matches!(s, OutSubmessage::Data(_) | OutSubmessage::DataFrag(_))));
    }
    assert_eq!(wr.counters().retransmits, 0);
}
