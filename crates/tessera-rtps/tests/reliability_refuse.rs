//! A reliable reader whose application refuses samples (e.g. a full KEEP_ALL history with
//! resource limits) loses nothing: what it refuses stays unacknowledged, the writer keeps it
//! and resends it once the reader has room. Best-effort readers just drop what they refuse.

use std::time::Duration;

use tessera_rtps::reader::{Delivered, ReaderConfig, ReaderCore, Verdict};
use tessera_rtps::sim::{epoch, reader_guid, writer_guid, NetConfig, Sim};
use tessera_rtps::types::{EntityId, Guid, Locators, SequenceNumber};
use tessera_rtps::wire::{Data, Gap, Heartbeat, PayloadKind, SequenceNumberSet};
use tessera_rtps::writer::{HistoryKind, OutSubmessage, WriterConfig};

fn payload(i: u64, len: usize) -> Vec<u8> {
    let mut v = vec![0u8, 1, 0, 0];
    v.extend((0..len.saturating_sub(4)).map(|k| (i as usize * 13 + k * 5) as u8));
    v.extend_from_slice(&i.to_le_bytes()[..4.min(len)]);
    v
}

fn keep_all(max_samples: usize) -> WriterConfig {
    WriterConfig {
        history: HistoryKind::KeepAll,
        max_samples,
        ..Sim::writer_config()
    }
}

fn lossy(seed: u64, loss: f64) -> NetConfig {
    NetConfig {
        seed,
        loss,
        duplicate: 0.05,
        reorder: 0.1,
        ..NetConfig::default()
    }
}

/// Every sample 1..=n exactly once, in order, intact.
fn assert_exact(sim: &Sim, n: u64, len: usize) {
    let r = &sim.readers[0];
    let seqs: Vec<SequenceNumber> = r.received.iter().map(|s| s.seq).collect();
    assert_eq!(
        seqs,
        (1..=n as i64).collect::<Vec<_>>(),
        "{:?}",
        r.core.counters()
    );
    for s in &r.received {
        assert_eq!(s.payload, payload(s.seq as u64, len), "payload {}", s.seq);
    }
}

/// The reader holds `room` samples; the writer writes `n`; then the application takes a few at
/// a time until everything arrived.
fn refuse_then_accept(net: NetConfig, n: u64, len: usize, room: usize) -> Sim {
    let mut sim = Sim::new(keep_all(1000), net);
    sim.add_reader(true, false);
    sim.readers[0].room = Some(room);
    for i in 1..=n {
        sim.write(&payload(i, len)).expect("write");
        sim.run_for(Duration::from_millis(1));
    }
    sim.run_for(Duration::from_secs(2));
    let c = sim.readers[0].core.counters();
    assert_eq!(sim.readers[0].received.len(), room, "{c:?}");
    assert!(c.refused > 0 && c.lost == 0, "{c:?}");
    assert!(!sim.writer.all_acked(), "refused samples were acknowledged");
    assert_eq!(
        sim.writer.history_len(),
        (n as usize) - room,
        "the writer keeps exactly what was refused"
    );
    // The application takes three at a time.
    for _ in 0..n {
        if sim.readers[0].received.len() as u64 == n {
            break;
        }
        sim.give_room(0, 3);
        sim.run_for(Duration::from_millis(300));
    }
    assert!(sim.run_until_quiescent(Duration::from_secs(10)));
    assert_exact(&sim, n, len);
    let c = sim.readers[0].core.counters();
    assert_eq!(c.lost, 0, "{c:?}");
    assert!(sim.writer.all_acked());
    assert_eq!(sim.writer.history_len(), 0);
    sim
}

#[test]
fn refused_samples_arrive_once_room_is_made() {
    let sim = refuse_then_accept(NetConfig::default(), 20, 64, 5);
    // The first refusal of each sample is counted once, whatever the number of resends.
    let c = sim.readers[0].core.counters();
    assert!(c.refused <= 15, "{c:?}");
}

#[test]
fn refused_samples_arrive_under_10_percent_loss() {
    for seed in 1..=5 {
        refuse_then_accept(lossy(seed, 0.10), 40, 64, 4);
    }
}

#[test]
fn refused_fragmented_samples_arrive_once_room_is_made() {
    let sim = refuse_then_accept(lossy(7, 0.05), 8, 100 * 1024, 2);
    assert!(sim.writer.counters().data_frag_sent > 0);
}

#[test]
fn a_full_reader_does_not_cause_a_repair_storm_and_resumes_promptly() {
    // A small window: most samples are dropped as out of window, so they are missing, not
    // buffered, and each ACKNACK could request them all.
    let mut sim = Sim::new(keep_all(1000), NetConfig::default());
    let mut cfg = ReaderConfig::new(reader_guid(0));
    cfg.max_window = 16;
    sim.add_reader_with(cfg, true, false);
    sim.readers[0].room = Some(0);
    for i in 1..=200 {
        sim.write(&payload(i, 64)).unwrap();
    }
    let before = sim.writer.counters();
    sim.run_for(Duration::from_secs(10));
    let c = sim.writer.counters();
    let hbs = c.heartbeats_sent - before.heartbeats_sent;
    let repairs = c.retransmits - before.retransmits;
    // The writer heartbeats far more often than its period while it has unacknowledged data,
    // and the reader answers each; without pacing, every answer would request all the
    // missing samples again (~180 each).
    assert!(hbs > 100, "{c:?}");
    assert!(
        c.acknacks_received - before.acknacks_received >= hbs,
        "{c:?}"
    );
    // Fewer repairs than heartbeat periods (100 ms).
    eprintln!("{repairs} repairs for {hbs} heartbeats: {c:?}");
    assert!(
        repairs < 100,
        "{repairs} repairs for {hbs} heartbeats: {c:?}"
    );
    assert!(sim.readers[0].received.is_empty());
    assert!(!sim.writer.all_acked());
    // Room for all: the reader asks at once, not at its next probe.
    sim.give_room(0, 1000);
    // (A round trip is 100 µs; the next probe would be up to 500 ms away.)
    sim.run_for(Duration::from_millis(2));
    assert_exact(&sim, 200, 64);
    assert!(sim.run_until_quiescent(Duration::from_secs(5)));
    assert!(sim.writer.all_acked());
}

#[test]
fn best_effort_reader_drops_what_it_refuses() {
    let mut sim = Sim::new(keep_all(1000), NetConfig::default());
    sim.add_reader(false, false);
    sim.readers[0].room = Some(5);
    for i in 1..=20 {
        sim.write(&payload(i, 32)).unwrap();
        sim.run_for(Duration::from_millis(1));
    }
    sim.give_room(0, 100);
    for i in 21..=30 {
        sim.write(&payload(i, 32)).unwrap();
        sim.run_for(Duration::from_millis(1));
    }
    assert!(sim.run_until_quiescent(Duration::from_secs(5)));
    let want: Vec<SequenceNumber> = (1..=5).chain(21..=30).collect();
    assert_eq!(sim.seqs(0), want);
    let c = sim.readers[0].core.counters();
    assert_eq!((c.refused, c.refused_again, c.acknacks_sent), (15, 0, 0));
    assert_eq!(sim.writer.counters().retransmits, 0);
}

// Direct ReaderCore checks of each delivery path.

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

/// The ACKNACK the reader sends now: (base, requested numbers).
fn acknack(r: &mut ReaderCore, now: std::time::Instant) -> (SequenceNumber, Vec<SequenceNumber>) {
    let t = r.poll_transmit(now).expect("an ACKNACK is due");
    match &t.submessages[0] {
        OutSubmessage::AckNack(a) => (a.reader_sn_state.base, a.reader_sn_state.iter().collect()),
        other => panic!("{other:?}"),
    }
}

/// An application that takes `room` more samples, then refuses.
struct App {
    room: usize,
    got: Vec<SequenceNumber>,
}

impl App {
    fn offer(&mut self, d: &Delivered<'_>) -> Verdict {
        if self.room == 0 {
            return Verdict::Refused;
        }
        self.room -= 1;
        self.got.push(d.seq);
        Verdict::Accepted
    }
}

fn core() -> (ReaderCore, Guid, std::time::Instant) {
    let mut r = ReaderCore::new(ReaderConfig::new(reader_guid(0)));
    let w = writer_guid();
    let now = epoch();
    r.add_writer(w, Locators::new(), true, now);
    (r, w, now)
}

#[test]
fn core_refusal_holds_next_through_buffering_gaps_and_heartbeats() {
    let (mut r, w, now) = core();
    let src = w.prefix;
    let p = [0u8, 1, 0, 0, 9];
    let app = std::cell::RefCell::new(App {
        room: 1,
        got: Vec::new(),
    });
    let mut cb = |d: Delivered<'_>| app.borrow_mut().offer(&d);
    let gap = |start: i64, base: i64| Gap {
        reader_id: EntityId::UNKNOWN,
        writer_id: w.entity_id,
        gap_start: start,
        gap_list: SequenceNumberSet::empty(base),
    };
    r.on_heartbeat(src, &hb(w, 1, 0, 1), now, &mut cb);
    // 2 buffered; a GAP makes 1 irrelevant and 2 is delivered (the GAP's drain).
    r.on_data(src, &data(w, 2, &p), None, now, &mut cb);
    r.on_gap(src, &gap(1, 2), now, &mut cb);
    assert_eq!(r.next_expected(w), Some(3));
    // 3 in order, refused (the fast path): not delivered, not skipped.
    r.on_data(src, &data(w, 3, &p), None, now, &mut cb);
    assert_eq!(r.next_expected(w), Some(3));
    // 5 and 7 buffered behind it; a GAP marks 4 irrelevant; 3 stays.
    r.on_data(src, &data(w, 5, &p), None, now, &mut cb);
    r.on_data(src, &data(w, 7, &p), None, now, &mut cb);
    r.on_gap(src, &gap(4, 5), now, &mut cb);
    assert_eq!(r.next_expected(w), Some(3));
    // A heartbeat whose first_sn is the refused sample does not skip it; the answer's base
    // stays at 3 and, while refusing, it requests only 3 (6 is missing too).
    r.on_heartbeat(src, &hb(w, 3, 7, 2), now, &mut cb);
    assert_eq!(r.next_expected(w), Some(3));
    assert_eq!(acknack(&mut r, now), (3, vec![3]));
    // The resent 3 is refused again: counted apart from the first refusal.
    let later = now + Duration::from_secs(1);
    r.on_data(src, &data(w, 3, &p), None, later, &mut cb);
    let c = r.counters();
    assert_eq!((c.refused, c.refused_again, c.lost), (1, 1, 0), "{c:?}");
    // Room again: resume asks for everything missing at once.
    r.resume(later);
    assert_eq!(acknack(&mut r, later), (3, vec![3, 6]));
    app.borrow_mut().room = 2;
    // 3 accepted, the drain passes 4 (irrelevant) and delivers 5; 6 is missing.
    r.on_data(src, &data(w, 3, &p), None, later, &mut cb);
    assert_eq!(r.next_expected(w), Some(6));
    // 6 arrives with no room left: refused, 7 stays buffered behind it.
    r.on_data(src, &data(w, 6, &p), None, later, &mut cb);
    assert_eq!(r.next_expected(w), Some(6));
    // A callback returning () accepts everything.
    let mut cb = |d: Delivered<'_>| app.borrow_mut().got.push(d.seq);
    r.on_data(src, &data(w, 6, &p), None, later, &mut cb);
    assert_eq!(r.next_expected(w), Some(8));
    assert_eq!(app.borrow().got, vec![2, 3, 5, 6, 7]);
    let c = r.counters();
    assert_eq!((c.delivered, c.refused, c.lost), (5, 2, 0), "{c:?}");
    assert_eq!(r.buffered_bytes(), 0);
}

#[test]
fn core_refused_buffered_sample_is_dropped_to_be_resent() {
    let (mut r, w, now) = core();
    let src = w.prefix;
    let p = [0u8, 1, 0, 0, 9];
    let app = std::cell::RefCell::new(App {
        room: 1,
        got: Vec::new(),
    });
    let mut cb = |d: Delivered<'_>| app.borrow_mut().offer(&d);
    r.on_heartbeat(src, &hb(w, 1, 3, 1), now, &mut cb);
    r.on_data(src, &data(w, 2, &p), None, now, &mut cb);
    r.on_data(src, &data(w, 3, &p), None, now, &mut cb);
    // 1 accepted, the drain offers 2: refused, dropped; 3 stays buffered.
    r.on_data(src, &data(w, 1, &p), None, now, &mut cb);
    assert_eq!(app.borrow().got, vec![1]);
    assert_eq!(r.next_expected(w), Some(2));
    r.resume(now);
    assert_eq!(acknack(&mut r, now), (2, vec![2]));
    let mut cb = |d: Delivered<'_>| app.borrow_mut().got.push(d.seq);
    r.on_data(src, &data(w, 2, &p), None, now, &mut cb);
    assert_eq!(app.borrow().got, vec![1, 2, 3]);
    assert_eq!(r.buffered_bytes(), 0);
}
