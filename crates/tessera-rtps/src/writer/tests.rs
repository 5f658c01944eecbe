use super::*;
use crate::types::{entity_kind, EntityId, GuidPrefix};
use crate::wire::{PayloadKind, SequenceNumberSet};

fn t0() -> Instant {
    crate::sim::epoch()
}

fn wguid() -> Guid {
    Guid::new(
        GuidPrefix([1; 12]),
        EntityId::new(1, entity_kind::USER_WRITER_NO_KEY),
    )
}

fn rguid() -> Guid {
    Guid::new(
        GuidPrefix([2; 12]),
        EntityId::new(1, entity_kind::USER_READER_NO_KEY),
    )
}

fn writer(cfg: impl FnOnce(&mut WriterConfig)) -> WriterCore {
    let mut c = WriterConfig::new(wguid());
    c.history = HistoryKind::KeepAll;
    cfg(&mut c);
    WriterCore::new(c)
}

fn drain(w: &mut WriterCore, now: Instant) -> Vec<Transmit> {
    std::iter::from_fn(|| w.poll_transmit(now)).collect()
}

fn acknack(base: i64, missing: &[i64], count: i32) -> AckNack {
    let mut set = SequenceNumberSet::empty(base);
    for &m in missing {
        set.insert(m);
    }
    AckNack {
        reader_id: rguid().entity_id,
        writer_id: wguid().entity_id,
        reader_sn_state: set,
        count,
        final_flag: false,
    }
}

fn nack_frag(seq: i64, frags: &[u32], count: i32) -> NackFrag {
    let mut set = FragmentNumberSet::empty(frags[0]);
    for &f in frags {
        set.insert(f);
    }
    NackFrag {
        reader_id: rguid().entity_id,
        writer_id: wguid().entity_id,
        writer_sn: seq,
        fragment_number_state: set,
        count,
    }
}

/// Completes the reader handshake: the reader's first ACKNACK (count 100, above the tests' own).
fn sync(w: &mut WriterCore, base: i64, now: Instant) {
    w.on_acknack(rguid().prefix, &acknack(base, &[], 100), now);
}

fn kinds(t: &Transmit) -> Vec<&'static str> {
    t.submessages
        .iter()
        .map(|s| match s {
            OutSubmessage::InfoTs(_) => "ts",
            OutSubmessage::Data(_) => "data",
            OutSubmessage::DataFrag(_) => "frag",
            OutSubmessage::Heartbeat(_) => "hb",
            OutSubmessage::HeartbeatFrag(_) => "hbf",
            OutSubmessage::AckNack(_) => "acknack",
            OutSubmessage::NackFrag(_) => "nackfrag",
            OutSubmessage::Gap(_) => "gap",
        })
        .collect()
}

fn pl(n: usize) -> Arc<Vec<u8>> {
    (0..n).map(|i| i as u8).collect::<Vec<_>>().into()
}

#[test]
fn new_reader_gets_a_heartbeat_then_data_with_piggybacked_heartbeat() {
    let mut w = writer(|_| {});
    let now = t0();
    w.write(pl(8), None, 0, false, None, now).unwrap();
    w.add_reader(rguid(), Locators::new(), true, false, now);
    let t = drain(&mut w, now);
    assert_eq!(t.len(), 1);
    assert_eq!(kinds(&t[0]), ["hb"]);
    match &t[0].submessages[0] {
        // Volatile late joiner: its stream starts after sample 1.
        OutSubmessage::Heartbeat(h) => assert_eq!((h.first_sn, h.last_sn), (2, 1)),
        _ => unreachable!(),
    }
    assert_eq!(t[0].dest.info_dst(), Some(rguid().prefix));
    w.write(pl(8), None, 0, false, Some(Timestamp::from_nanos(2)), now)
        .unwrap();
    // The reader has not answered yet: it gets heartbeats, not data.
    assert!(drain(&mut w, now).iter().all(|t| kinds(t) == ["hb"]));
    w.on_acknack(rguid().prefix, &acknack(2, &[], 1), now);
    let t = drain(&mut w, now);
    assert_eq!(t.len(), 1);
    assert_eq!(kinds(&t[0]), ["ts", "data", "hb"]);
    assert!(!w.all_acked());
    assert!(w.on_acknack(rguid().prefix, &acknack(3, &[], 2), now));
    assert!(w.all_acked());
    assert_eq!(w.history_len(), 0);
}

#[test]
fn acknack_counts_and_preemptive_base_zero() {
    let mut w = writer(|_| {});
    let now = t0();
    w.add_reader(rguid(), Locators::new(), true, false, now);
    drain(&mut w, now);
    for _ in 0..3 {
        w.write(pl(8), None, 0, false, None, now).unwrap();
    }
    drain(&mut w, now);
    // Base 0: a request for a heartbeat, not a nack — but it proves the reader knows us, so
    // the held samples go out now.
    assert!(w.on_acknack(rguid().prefix, &acknack(0, &[], 1), now));
    let t = drain(&mut w, now);
    assert!(kinds(&t[0]).contains(&"hb"));
    assert!(kinds(&t[0]).contains(&"data"));
    // NACK 2.
    w.on_acknack(rguid().prefix, &acknack(2, &[2], 2), now);
    let t = drain(&mut w, now);
    assert_eq!(kinds(&t[0]), ["data", "hb"]);
    // Same count again: ignored.
    w.on_acknack(rguid().prefix, &acknack(2, &[2], 2), now);
    assert!(drain(&mut w, now).is_empty());
    assert_eq!(w.counters().acknacks_ignored, 1);
    // Unknown reader.
    w.on_acknack(GuidPrefix([3; 12]), &acknack(2, &[2], 9), now);
    assert_eq!(w.counters().unknown_reader, 1);
    // Acks beyond what was written are clamped.
    assert!(w.on_acknack(rguid().prefix, &acknack(1000, &[], 3), now));
    assert!(w.all_acked());
    assert_eq!(w.history_len(), 0);
}

#[test]
fn replaced_keep_last_samples_are_answered_with_gap() {
    let mut w = writer(|c| c.history = HistoryKind::KeepLast(1));
    let now = t0();
    w.add_reader(rguid(), Locators::new(), true, false, now);
    drain(&mut w, now);
    for _ in 0..5 {
        w.write(pl(8), None, 0, false, None, now).unwrap();
        drain(&mut w, now);
    }
    assert_eq!(w.history_len(), 1);
    w.on_acknack(rguid().prefix, &acknack(1, &[1, 2, 3, 4, 5], 1), now);
    let t = drain(&mut w, now);
    assert_eq!(kinds(&t[0]), ["gap", "data", "hb"]);
    match &t[0].submessages[0] {
        OutSubmessage::Gap(g) => assert_eq!((g.gap_start, g.gap_list.base), (1, 5)),
        _ => unreachable!(),
    }
}

#[test]
fn large_samples_are_fragmented_within_the_message_size() {
    let mut w = writer(|_| {});
    let now = t0();
    w.add_reader(rguid(), Locators::new(), true, false, now);
    drain(&mut w, now);
    sync(&mut w, 1, now);
    w.write(pl(100_000), None, 0, false, None, now).unwrap();
    let t = drain(&mut w, now);
    let frags: u32 = t
        .iter()
        .flat_map(|t| &t.submessages)
        .map(|s| match s {
            OutSubmessage::DataFrag(f) => {
                assert_eq!(f.fragment_size, 1344);
                f.fragments_in_submessage as u32
            }
            _ => 0,
        })
        .sum();
    assert_eq!(frags, 100_000u32.div_ceil(1344));
    for x in &t {
        assert!(x.wire_len() <= 14720, "{}", x.wire_len());
    }
    assert_eq!(t.len(), 8, "10 fragments per datagram");
    // NACK_FRAG of fragments 2 and 40: only those are resent.
    w.on_nack_frag(rguid().prefix, &nack_frag(1, &[2, 40], 1), now);
    let t = drain(&mut w, now);
    let resent: Vec<(u32, u16)> = t
        .iter()
        .flat_map(|t| &t.submessages)
        .filter_map(|s| match s {
            OutSubmessage::DataFrag(f) => {
                Some((f.fragment_starting_num, f.fragments_in_submessage))
            }
            _ => None,
        })
        .collect();
    assert_eq!(resent, vec![(2, 1), (40, 1)]);
}

#[test]
fn best_effort_readers_get_data_once_and_no_heartbeats() {
    let mut w = writer(|_| {});
    let now = t0();
    w.add_reader(rguid(), Locators::new(), false, false, now);
    assert!(drain(&mut w, now).is_empty());
    w.write(pl(8), None, 0, false, None, now).unwrap();
    let t = drain(&mut w, now);
    assert_eq!(kinds(&t[0]), ["data"]);
    assert_eq!(w.history_len(), 0);
    assert!(w.poll_timeout().is_none());
    assert!(w.all_acked());
}

#[test]
fn periodic_heartbeat_while_unacknowledged() {
    let mut w = writer(|_| {});
    let now = t0();
    w.add_reader(rguid(), Locators::new(), true, false, now);
    sync(&mut w, 1, now);
    w.write(pl(8), None, 0, false, None, now).unwrap();
    drain(&mut w, now);
    let t = w.poll_timeout().expect("heartbeat timer");
    assert!(t <= now + Duration::from_millis(100));
    w.handle_timeout(t);
    let x = drain(&mut w, t);
    assert_eq!(kinds(&x[0]), ["hb"]);
    match &x[0].submessages[0] {
        OutSubmessage::Heartbeat(h) => assert!(!h.final_flag),
        _ => unreachable!(),
    }
    w.on_acknack(rguid().prefix, &acknack(2, &[], 101), t);
    let t2 = w.poll_timeout().unwrap();
    w.handle_timeout(t2);
    assert!(drain(&mut w, t2).is_empty());
    assert!(
        w.poll_timeout().is_none(),
        "no timer once everything is acked"
    );
}

#[test]
fn status_info_and_key_hash_travel_as_inline_qos() {
    let mut w = writer(|_| {});
    let now = t0();
    w.add_reader(rguid(), Locators::new(), false, false, now);
    w.write(pl(8), Some([5; 16]), 3, true, None, now).unwrap();
    let t = drain(&mut w, now);
    match &t[0].submessages[0] {
        OutSubmessage::Data(d) => {
            assert_eq!(d.payload_kind, PayloadKind::Key);
            assert_eq!(d.inline_qos.status_info, 3);
            assert_eq!(d.inline_qos.key_hash, Some([5; 16]));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn reliable_reader_gets_data_only_after_its_first_acknack() {
    let mut w = writer(|_| {});
    let now = t0();
    w.add_reader(rguid(), Locators::new(), true, false, now);
    for _ in 0..3 {
        w.write(pl(8), None, 0, false, None, now).unwrap();
    }
    // Until the reader answers, only (non-final) heartbeats, repeated on a short period.
    let t = drain(&mut w, now);
    assert!(t.iter().all(|t| kinds(t) == ["hb"]), "{t:?}");
    let again = w.poll_timeout().expect("heartbeat timer");
    assert!(again <= now + Duration::from_millis(10));
    w.handle_timeout(again);
    assert!(drain(&mut w, again).iter().all(|t| kinds(t) == ["hb"]));
    // Its ACKNACK says where it starts; everything from there is sent, in order.
    sync(&mut w, 1, again);
    let t = drain(&mut w, again);
    let data = t
        .iter()
        .flat_map(|t| &t.submessages)
        .filter(|s| matches!(s, OutSubmessage::Data(_)))
        .count();
    assert_eq!(data, 3);
}

#[test]
fn reader_expecting_older_numbers_learns_its_start_before_data() {
    let mut w = writer(|_| {});
    let now = t0();
    // Five samples before the reader matched: a volatile reader's stream starts at 6.
    w.add_reader(
        Guid::new(GuidPrefix([9; 12]), rguid().entity_id),
        Locators::new(),
        true,
        false,
        now,
    );
    for _ in 0..5 {
        w.write(pl(8), None, 0, false, None, now).unwrap();
    }
    w.add_reader(rguid(), Locators::new(), true, false, now);
    w.write(pl(8), None, 0, false, None, now).unwrap();
    drain(&mut w, now);
    // The reader's first ACKNACK asks from 1 (it has heard nothing from us yet).
    sync(&mut w, 1, now);
    let t = drain(&mut w, now);
    let mine: Vec<_> = t
        .iter()
        .filter(|t| t.dest.guid() == Some(rguid()))
        .collect();
    let first = &mine[0].submessages[0];
    match first {
        OutSubmessage::Heartbeat(h) => assert_eq!(h.first_sn, 6, "stream start before any data"),
        other => panic!("expected a leading heartbeat, got {other:?}"),
    }
    assert!(kinds(mine[0]).contains(&"data"));
}

#[test]
fn for_each_retained_yields_the_live_history_oldest_first() {
    let mut w = writer(|c| {
        c.transient_local = true;
        c.history = HistoryKind::KeepLast(1);
    });
    let now = t0();
    for (i, key) in [[1u8; 16], [2; 16], [1; 16]].into_iter().enumerate() {
        w.write(Arc::new(vec![i as u8]), Some(key), 0, false, None, now)
            .unwrap();
    }
    let mut seen = Vec::new();
    w.for_each_retained(|seq, payload, key, status, key_flag, _| {
        seen.push((seq, payload[0], key.unwrap()[0], status, key_flag));
    });
    // Sample 1 (key 1) was replaced by sample 3 under KEEP_LAST 1.
    assert_eq!(seen, vec![(2, 1, 2, 0, false), (3, 2, 1, 0, false)]);
}

fn frag_sizes(t: &[Transmit]) -> Vec<u16> {
    t.iter()
        .flat_map(|t| &t.submessages)
        .filter_map(|s| match s {
            OutSubmessage::DataFrag(f) => Some(f.fragment_size),
            _ => None,
        })
        .collect()
}

#[test]
fn whole_samples_too_large_for_a_repair_datagram_are_repaired_as_fragments() {
    let mut w = writer(|_| {});
    let now = t0();
    let repair = w.config().repair_message_size;
    w.add_reader(rguid(), Locators::new(), true, false, now);
    drain(&mut w, now);
    sync(&mut w, 1, now);
    w.write(pl(8192), None, 0, false, None, now).unwrap();
    let t = drain(&mut w, now);
    assert_eq!(kinds(&t[0]), ["data", "hb"], "first copy whole");
    // The reader lost it: the repair must not need IP fragmentation.
    w.on_acknack(rguid().prefix, &acknack(1, &[1], 101), now);
    let t = drain(&mut w, now);
    assert!(t.len() > 1);
    for x in &t {
        assert!(x.wire_len() <= repair, "{} > {repair}", x.wire_len());
        assert!(!kinds(x).contains(&"data"), "{:?}", kinds(x));
    }
    let sizes = frag_sizes(&t);
    let covered: usize = sizes.iter().map(|&s| s as usize).sum();
    assert!(
        covered >= 8192 && sizes.iter().all(|&s| s == sizes[0]),
        "{sizes:?}"
    );
    // A NACK_FRAG for one of those fragments is served in the same fragment size.
    w.on_nack_frag(
        rguid().prefix,
        &nack_frag(1, &[3], 1),
        now + Duration::from_secs(2),
    );
    let t = drain(&mut w, now + Duration::from_secs(2));
    assert_eq!(frag_sizes(&t), vec![sizes[0]]);
}

#[test]
fn loss_shrinks_datagrams_to_the_path_mtu_until_the_path_is_clean() {
    let mut w = writer(|_| {});
    let mut now = t0();
    let full = w.max_message_size();
    let repair = w.config().repair_message_size;
    assert!(full > repair);
    w.add_reader(rguid(), Locators::new(), true, false, now);
    drain(&mut w, now);
    sync(&mut w, 1, now);
    let mut count = 101;
    let mut acked = 1;
    // A window where a fifth of the samples are reported missing.
    for _ in 0..50 {
        w.write(pl(512), None, 0, false, None, now).unwrap();
    }
    drain(&mut w, now);
    now += Duration::from_millis(150);
    let missing: Vec<i64> = (acked..acked + 50).step_by(5).collect();
    w.on_acknack(rguid().prefix, &acknack(acked, &missing, count), now);
    count += 1;
    assert_eq!(w.counters().datagram_reductions, 1);
    assert!(w.max_message_size() <= repair, "{}", w.max_message_size());
    // New large samples now travel in path-MTU datagrams.
    w.on_acknack(rguid().prefix, &acknack(51, &[], count), now);
    count += 1;
    acked = 51;
    drain(&mut w, now);
    w.write(pl(8192), None, 0, false, None, now).unwrap();
    let t = drain(&mut w, now);
    assert!(t.iter().all(|x| x.wire_len() <= repair));
    assert!(!frag_sizes(&t).is_empty());
    // Clean acknowledgments for a while: large datagrams come back after the quiet period.
    let reduced_at = now;
    acked += 1;
    while w.max_message_size() < full {
        now += Duration::from_millis(100);
        w.write(pl(512), None, 0, false, None, now).unwrap();
        drain(&mut w, now);
        acked += 1;
        w.on_acknack(rguid().prefix, &acknack(acked, &[], count), now);
        count += 1;
        assert!(now - reduced_at < Duration::from_secs(5), "never restored");
    }
    assert!(now - reduced_at >= Duration::from_secs(1));
    assert_eq!(w.counters().datagram_reductions, 1);
}

#[test]
fn writer_side_filtering_sends_gaps_to_reliable_and_best_effort_readers() {
    for reliable in [true, false] {
        let mut w = writer(|_| {});
        let now = t0();
        w.add_reader(rguid(), Locators::new(), reliable, false, now);
        if reliable {
            sync(&mut w, 1, now);
        }
        drain(&mut w, now);
        for seq in 1..=4 {
            w.write(pl(8), None, 0, false, None, now).unwrap();
            if seq == 2 || seq == 3 {
                w.filter_out(seq, Arc::from([rguid()]));
            }
        }
        let t = drain(&mut w, now);
        let subs: Vec<_> = t.iter().flat_map(|t| t.submessages.iter()).collect();
        let data: Vec<i64> = subs
            .iter()
            .filter_map(|s| match s {
                OutSubmessage::Data(d) => Some(d.writer_sn),
                _ => None,
            })
            .collect();
        let gaps: Vec<(i64, i64)> = subs
            .iter()
            .filter_map(|s| match s {
                OutSubmessage::Gap(g) => Some((g.gap_start, g.gap_list.base)),
                _ => None,
            })
            .collect();
        assert_eq!(data, [1, 4], "reliable {reliable}");
        // A best-effort reader needs the GAP too: it counts numbers it never sees as lost.
        assert_eq!(gaps, vec![(2, 4)], "reliable {reliable}");
        assert_eq!(w.counters().samples_filtered, 2);
        if reliable {
            // The GAP was lost: the reader asks for 2 and 3 and gets GAPs again, no data.
            w.on_acknack(rguid().prefix, &acknack(2, &[2, 3], 101), now);
            let later = now + Duration::from_secs(1);
            let t = drain(&mut w, later);
            let kinds: Vec<_> = t.iter().flat_map(kinds).collect();
            assert!(!kinds.contains(&"data"), "{kinds:?}");
            assert_eq!(
                kinds.iter().filter(|k| **k == "gap").count(),
                2,
                "{kinds:?}"
            );
            assert!(w.on_acknack(rguid().prefix, &acknack(5, &[], 102), later));
            assert!(w.all_acked());
        }
    }
}

#[test]
fn filtered_entries_leave_with_their_samples() {
    let mut w = writer(|_| {});
    let now = t0();
    w.add_reader(rguid(), Locators::new(), true, false, now);
    sync(&mut w, 1, now);
    for seq in 1..=3 {
        w.write(pl(8), None, 0, false, None, now).unwrap();
        w.filter_out(seq, Arc::from([rguid()]));
    }
    drain(&mut w, now);
    assert!(w.on_acknack(rguid().prefix, &acknack(4, &[], 101), now));
    assert_eq!(w.history_len(), 0);
    w.write(pl(8), None, 0, false, None, now).unwrap();
    w.filter_out(4, Arc::from([]));
    assert!(w.sh.filtered_out.is_empty());
}

#[test]
fn filtered_entries_stay_bounded_under_keep_last() {
    // Instance 1 written once keeps the history's first number at 1; instance 2 is replaced
    // at every write. The entries of replaced samples must not pile up.
    let mut w = writer(|c| c.history = HistoryKind::KeepLast(1));
    let now = t0();
    w.add_reader(rguid(), Locators::new(), true, false, now);
    sync(&mut w, 1, now);
    w.write(pl(8), Some([1; 16]), 0, false, None, now).unwrap();
    for _ in 0..10_000 {
        let seq = w.write(pl(8), Some([2; 16]), 0, false, None, now).unwrap();
        w.filter_out(seq, Arc::from([rguid()]));
    }
    assert_eq!(w.history_len(), 2);
    assert!(
        w.sh.filtered_out.len() <= 2 * 2 + 64 + 1,
        "{}",
        w.sh.filtered_out.len()
    );
}

/// The final flags of the heartbeats piggybacked on 16 writes of a KEEP_LAST(2) writer, one
/// drained after each write.
fn piggybacked_final_flags(w: &mut WriterCore, now: Instant) -> Vec<bool> {
    w.add_reader(rguid(), Locators::new(), true, false, now);
    drain(w, now);
    sync(w, 1, now);
    drain(w, now);
    (0..16)
        .map(|_| {
            w.write(pl(8), None, 0, false, None, now).unwrap();
            let flags: Vec<bool> = drain(w, now)
                .iter()
                .flat_map(|t| t.submessages.iter())
                .filter_map(|s| match s {
                    OutSubmessage::Heartbeat(h) => Some(h.final_flag),
                    _ => None,
                })
                .collect();
            assert_eq!(flags.len(), 1, "one piggybacked heartbeat per write");
            flags[0]
        })
        .collect()
}

#[test]
fn ack_at_least_every_asks_for_acknowledgments_that_often() {
    let now = t0();
    let keep_last = |c: &mut WriterConfig| c.history = HistoryKind::KeepLast(2);
    // KEEP_LAST asks every 128 samples: none of 16 piggybacked heartbeats asks.
    let mut w = writer(keep_last);
    assert!(piggybacked_final_flags(&mut w, now).iter().all(|f| *f));
    // Asked to, it asks every 4th sample.
    let mut w = writer(keep_last);
    w.ack_at_least_every(4);
    let asks = piggybacked_final_flags(&mut w, now)
        .iter()
        .filter(|f| !**f)
        .count();
    assert_eq!(asks, 4);
    // Never less often than the history's own rhythm.
    let mut w = writer(|c| c.max_samples = 16);
    w.ack_at_least_every(64);
    assert_eq!(w.sh.ack_every, 2);
}

#[test]
fn coherent_set_samples_carry_the_first_number_and_end_with_a_marker() {
    let mut w = writer(|_| {});
    let now = t0();
    w.add_reader(rguid(), Locators::new(), false, false, now);
    let mut sent = Vec::new();
    let mut send = |w: &mut WriterCore| {
        for t in drain(w, now) {
            for s in t.submessages {
                if let OutSubmessage::Data(d) = s {
                    let q = d.inline_qos;
                    sent.push((d.writer_sn, q.coherent_set, d.payload_kind, q.key_hash));
                }
            }
        }
    };
    w.write(pl(8), None, 0, false, None, now).unwrap(); // 1: not in a set
    send(&mut w);
    w.begin_coherent_set();
    // Opening twice is one set.
    w.begin_coherent_set();
    assert_eq!(w.coherent_set(), None);
    w.write(pl(8), None, 0, false, None, now).unwrap(); // 2
    w.write(pl(8), None, 0, false, None, now).unwrap(); // 3
    assert_eq!(w.coherent_set(), Some(2));
    assert_eq!(w.end_coherent_set(None, None, now).unwrap(), Some(4));
    // Nothing open, and an empty set: no marker.
    assert_eq!(w.end_coherent_set(None, None, now).unwrap(), None);
    w.begin_coherent_set();
    assert_eq!(w.end_coherent_set(None, None, now).unwrap(), None);
    send(&mut w);
    w.write(pl(8), None, 0, false, None, now).unwrap(); // 5: not in a set
    send(&mut w);
    assert_eq!(
        sent,
        [
            (1, None, PayloadKind::Data, None),
            (2, Some(2), PayloadKind::Data, None),
            (3, Some(2), PayloadKind::Data, None),
            (4, Some(COHERENT_SET_END), PayloadKind::None, None),
            (5, None, PayloadKind::Data, None),
        ]
    );
}

#[test]
fn a_keep_last_writer_files_markers_apart_from_the_samples_of_the_set() {
    // Keyless KEEP_LAST 1: the marker must not replace the set's last sample (a reader
    // repairing it would get a GAP and drop the whole set).
    let mut w = writer(|c| c.history = HistoryKind::KeepLast(1));
    let now = t0();
    w.add_reader(rguid(), Locators::new(), true, false, now);
    sync(&mut w, 1, now);
    w.begin_coherent_set();
    w.write(pl(8), None, 0, false, None, now).unwrap();
    w.end_coherent_set(None, None, now).unwrap();
    assert_eq!(w.history_len(), 2);
    w.begin_coherent_set();
    w.write(pl(8), None, 0, false, None, now).unwrap();
    w.end_coherent_set(None, None, now).unwrap();
    // Each new sample and marker replaced its predecessor.
    assert_eq!(w.history_len(), 2);
}

#[test]
fn writers_of_a_group_share_its_numbers_and_its_set() {
    let now = t0();
    let group = Arc::new(GroupSequence::new(5));
    let base = 5i64 << 32;
    let mut ws = [writer(|_| {}), writer(|_| {})];
    for w in ws.iter_mut() {
        w.add_reader(rguid(), Locators::new(), false, false, now);
        w.set_group(Some(group.clone()));
    }
    let mut sent = Vec::new();
    let mut send = |w: &mut WriterCore| {
        for t in drain(w, now) {
            for s in t.submessages {
                if let OutSubmessage::Data(d) = s {
                    sent.push((d.writer_sn, d.inline_qos.coherent_set, d.inline_qos.group));
                }
            }
        }
    };
    let tag = |set: Option<i64>, gsn: i64| {
        Some(GroupTag {
            set,
            gsn,
            writers: None,
        })
    };
    // Outside a set: the group number only.
    ws[0].write(pl(8), None, 0, false, None, now).unwrap();
    send(&mut ws[0]);
    group.begin_set();
    for w in ws.iter_mut() {
        w.begin_coherent_set();
    }
    ws[1].write(pl(8), None, 0, false, None, now).unwrap();
    ws[0].write(pl(8), None, 0, false, None, now).unwrap();
    assert_eq!(ws[0].last_group_tag(), tag(Some(base + 2), base + 3));
    let (first, last) = group.end_set().unwrap();
    assert_eq!((first, last), (base + 2, base + 3));
    let digest = writer_set_digest(&[wguid().entity_id]);
    let end = Some(GroupTag {
        set: Some(first),
        gsn: last,
        writers: Some(digest),
    });
    for w in ws.iter_mut() {
        w.end_coherent_set(None, end, now).unwrap();
    }
    send(&mut ws[0]);
    send(&mut ws[1]);
    assert_eq!(
        sent,
        [
            (1, None, tag(None, base + 1)),
            (2, Some(2), tag(Some(base + 2), base + 3)),
            (3, Some(COHERENT_SET_END), end),
            (1, Some(1), tag(Some(base + 2), base + 2)),
            (2, Some(COHERENT_SET_END), end),
        ]
    );
    // An empty group set has no numbers; the digest does not depend on the writers' order.
    group.begin_set();
    assert_eq!(group.end_set(), None);
    let (a, b) = (EntityId::new(1, 2), EntityId::new(3, 2));
    assert_eq!(writer_set_digest(&[a, b]), writer_set_digest(&[b, a]));
    assert_ne!(writer_set_digest(&[a]), writer_set_digest(&[a, b]));
}

#[test]
fn rewritten_payloads_reach_a_late_joiner_with_their_own_fragment_size() {
    let mut w = writer(|c| c.transient_local = true);
    let now = t0();
    for _ in 0..3 {
        w.write(pl(36), None, 0, false, None, now).unwrap();
    }
    // Only the second sample changes, to one that no longer fits a datagram.
    let big = pl(100_000);
    let replaced = w.rewrite_payloads(|s| (s.payload.len() == 36).then(|| big.clone()));
    assert_eq!(replaced, 3);
    let mut n = 0;
    let replaced = w.rewrite_payloads(|_| {
        n += 1;
        (n == 2).then(|| pl(36))
    });
    assert_eq!(replaced, 1);
    assert_eq!(w.store().get(2).unwrap().payload.len(), 36);
    assert_eq!(w.store().get(2).unwrap().frag_size, 0);
    assert_eq!(w.store().get(1).unwrap().frag_size, 1344);
    w.add_reader(rguid(), Locators::new(), true, true, now);
    drain(&mut w, now);
    sync(&mut w, 1, now);
    let t = drain(&mut w, now);
    let (mut whole, mut frags) = (Vec::new(), std::collections::BTreeSet::new());
    for s in t.iter().flat_map(|t| &t.submessages) {
        match s {
            OutSubmessage::Data(d) => whole.push((d.writer_sn, d.payload.len())),
            OutSubmessage::DataFrag(f) => {
                frags.insert(f.writer_sn);
            }
            _ => {}
        }
    }
    assert_eq!(whole, vec![(2, 36)]);
    assert_eq!(frags.into_iter().collect::<Vec<_>>(), vec![1, 3]);
}
