//! The QoS policies enforced at run time: DEADLINE (offered and requested), LIFESPAN, manual
//! LIVELINESS, exclusive OWNERSHIP with failover, TIME_BASED_FILTER. Timing bounds are generous
//! (this VM is noisy): the checks are on status counts and on what was or was not delivered,
//! each absence after a positive control.

use crate::harness::*;
use crate::per_transport;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tessera::qos::{
    DataReaderQos, DataWriterQos, Deadline, Durability, Lifespan, Liveliness, LivelinessKind,
    Ownership, OwnershipStrength, TimeBasedFilter,
};
use tessera::status::RequestedDeadlineMissedStatus;
use tessera::{DataReader, DataReaderListener, InstanceState};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

struct CountMisses(Arc<AtomicU32>);

impl DataReaderListener<Keyed> for CountMisses {
    fn on_requested_deadline_missed(
        &self,
        _r: &DataReader<Keyed>,
        s: RequestedDeadlineMissedStatus,
    ) {
        self.0
            .fetch_add(s.total_count_change as u32, Ordering::Relaxed);
    }
}

struct CountOffered(Arc<AtomicU32>);

impl tessera::DataWriterListener<Keyed> for CountOffered {
    fn on_offered_deadline_missed(
        &self,
        _w: &tessera::DataWriter<Keyed>,
        s: tessera::status::OfferedDeadlineMissedStatus,
    ) {
        self.0
            .fetch_add(s.total_count_change as u32, Ordering::Relaxed);
    }
}

/// Instance 1 is written every 20 ms, instance 2 once: only instance 2 misses its 150 ms
/// deadline, on both sides, once per period, with listener calls and a status condition.
fn deadline_missed_per_instance(t: Transport) {
    let ps = t.participants(2);
    let w = writer::<Keyed>(
        &ps[0],
        "Q_deadline",
        DataWriterQos::default()
            .with_reliability(reliable())
            .with_deadline(Deadline { period: ms(150) }),
    );
    let r = reader::<Keyed>(
        &ps[1],
        "Q_deadline",
        keep_all_reader().with_deadline(Deadline { period: ms(150) }),
    );
    let heard = Arc::new(AtomicU32::new(0));
    r.set_listener(Some(Arc::new(CountMisses(heard.clone()))));
    let cond = w.status_condition(tessera::StatusMask::OFFERED_DEADLINE_MISSED);
    let offered_heard = Arc::new(AtomicU32::new(0));
    matched(&w, &r);
    let h2 = w.register_instance(&Keyed { id: 2, seq: 0 }).unwrap();
    w.write(&Keyed { id: 2, seq: 0 }).unwrap();
    for seq in 0..40 {
        w.write(&Keyed { id: 1, seq }).unwrap();
        std::thread::sleep(ms(20));
    }
    // 800 ms of silence for instance 2: about 5 periods, at least 2 counted however late the
    // event thread ran.
    assert!(cond.trigger_value(), "the status condition is raised");
    let offered = w.offered_deadline_missed_status();
    assert!(offered.total_count >= 2, "{offered:?}");
    assert_eq!(offered.last_instance_handle, Some(h2));
    assert_eq!(w.offered_deadline_missed_status().total_count_change, 0);
    assert!(
        !cond.trigger_value(),
        "reading the status resets the condition"
    );
    // A writer listener hears the misses that follow (instance 2 is still silent).
    w.set_listener(Some(Arc::new(CountOffered(offered_heard.clone()))));
    wait_until(10, "the writer listener to hear a miss", || {
        offered_heard.load(Ordering::Relaxed) > 0
    });
    w.set_listener(None);
    let requested = r.requested_deadline_missed_status();
    let handle2 = r.lookup_instance(&Keyed { id: 2, seq: 0 }).unwrap();
    let handle1 = r.lookup_instance(&Keyed { id: 1, seq: 0 }).unwrap();
    assert_ne!(handle1, handle2);
    assert!(
        requested.total_count >= 2 || heard.load(Ordering::Relaxed) >= 2,
        "{requested:?}"
    );
    assert_eq!(requested.last_instance_handle, Some(handle2));
    // The listener read the status: its calls saw the counts.
    assert!(heard.load(Ordering::Relaxed) >= 1);
    // Instance 1 never missed: disposing instance 2 ends its deadline, and from then on
    // nothing is counted while instance 1 keeps being written.
    w.dispose(&Keyed { id: 2, seq: 0 }).unwrap();
    std::thread::sleep(ms(100));
    let before = w.offered_deadline_missed_status().total_count;
    let requested_before = r.requested_deadline_missed_status().total_count;
    for seq in 40..70 {
        w.write(&Keyed { id: 1, seq }).unwrap();
        std::thread::sleep(ms(20));
    }
    assert_eq!(w.offered_deadline_missed_status().total_count, before);
    assert_eq!(
        r.requested_deadline_missed_status().total_count,
        requested_before
    );
}

/// Writes instance 9 from the writer's own OFFERED_DEADLINE_MISSED listener (which runs on
/// the event thread).
struct WriteOnMiss(std::sync::Mutex<u32>);

impl tessera::DataWriterListener<Keyed> for WriteOnMiss {
    fn on_offered_deadline_missed(
        &self,
        w: &tessera::DataWriter<Keyed>,
        _s: tessera::status::OfferedDeadlineMissedStatus,
    ) {
        let mut n = self.0.lock().unwrap();
        *n += 1;
        let _ = w.write(&Keyed { id: 9, seq: *n });
    }
}

/// A listener of a writer's policy status may write with that writer: the status is raised
/// with no lock of the writer held.
fn a_deadline_listener_may_write(t: Transport) {
    let ps = t.participants(2);
    let w = writer::<Keyed>(
        &ps[0],
        "Q_deadline_write",
        DataWriterQos::default().with_deadline(Deadline { period: ms(100) }),
    );
    let r = reader::<Keyed>(&ps[1], "Q_deadline_write", keep_all_reader());
    matched(&w, &r);
    w.set_listener(Some(Arc::new(WriteOnMiss(Default::default()))));
    w.write(&Keyed { id: 1, seq: 0 }).unwrap();
    let got = take_n(&r, 3, 10);
    assert!(
        seqs(&got).iter().any(|(id, _)| *id == 9),
        "{:?}",
        seqs(&got)
    );
    w.set_listener(None);
}

/// A writer and reader without DEADLINE count nothing, however long an instance is silent.
fn no_deadline_counts_nothing(t: Transport) {
    let ps = t.participants(2);
    let w = writer::<Keyed>(&ps[0], "Q_nodeadline", keep_all_writer());
    let r = reader::<Keyed>(&ps[1], "Q_nodeadline", keep_all_reader());
    matched(&w, &r);
    w.write(&Keyed { id: 1, seq: 0 }).unwrap();
    take_n(&r, 1, 10);
    std::thread::sleep(ms(300));
    assert_eq!(w.offered_deadline_missed_status().total_count, 0);
    assert_eq!(r.requested_deadline_missed_status().total_count, 0);
}

/// LIFESPAN: a sample leaves the reader's history when its lifespan runs out, read or not, and
/// a TRANSIENT_LOCAL late joiner never gets expired samples.
fn lifespan_expires_samples(t: Transport) {
    let d = t.domain(2);
    let ps = &d.participants;
    let wq = keep_all_writer()
        .with_durability(Durability::TransientLocal)
        .with_lifespan(Lifespan { duration: ms(300) });
    let rq = keep_all_reader().with_durability(Durability::TransientLocal);
    let w = writer::<Keyed>(&ps[0], "Q_lifespan", wq);
    let r = reader::<Keyed>(&ps[1], "Q_lifespan", rq.clone());
    matched(&w, &r);
    w.write(&Keyed { id: 1, seq: 1 }).unwrap();
    wait_until(10, "the sample to arrive", || {
        r.read(usize::MAX).unwrap().iter().any(|s| s.data.is_some())
    });
    wait_until(10, "the sample to expire from the reader", || {
        r.read(usize::MAX).unwrap().iter().all(|s| s.data.is_none())
    });
    // A late joiner: the expired sample is gone from the writer too; a fresh one arrives.
    std::thread::sleep(ms(100));
    let late = reader::<Keyed>(&d.join(), "Q_lifespan", rq);
    matched(&w, &late);
    w.write(&Keyed { id: 2, seq: 2 }).unwrap();
    let got = take_n(&late, 1, 10);
    settle(t);
    let mut all = seqs(&got);
    all.extend(seqs(&late.take(usize::MAX).unwrap()));
    assert_eq!(all, vec![(2, 2)], "the late joiner got an expired sample");
    assert_eq!(
        late.policy_drops().expired,
        0,
        "the writer still sent the expired sample"
    );
}

/// A sample whose source timestamp is older than its writer's lifespan is never delivered
/// (the reader's side of the decision is unit-tested in `qos_rt::reader`).
fn lifespan_drops_expired_on_arrival(t: Transport) {
    let ps = t.participants(2);
    let w = writer::<Keyed>(
        &ps[0],
        "Q_lifespan_old",
        keep_all_writer().with_lifespan(Lifespan { duration: ms(500) }),
    );
    let r = reader::<Keyed>(&ps[1], "Q_lifespan_old", keep_all_reader());
    matched(&w, &r);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as i64;
    w.write_with_timestamp(&Keyed { id: 1, seq: 1 }, now - 2_000_000_000)
        .unwrap();
    w.write(&Keyed { id: 1, seq: 2 }).unwrap();
    let got = take_n(&r, 1, 10);
    settle(t);
    let mut all = seqs(&got);
    all.extend(seqs(&r.take(usize::MAX).unwrap()));
    assert_eq!(all, vec![(1, 2)]);
    // Dropped by the reader on arrival, or by the writer before it went out (a reliable
    // writer holds its first samples until the new reader's first ACKNACK, and its event
    // thread may expire them meanwhile): never both, never delivered.
    assert!(r.policy_drops().expired <= 1, "{:?}", r.policy_drops());
}

fn exclusive_writer(
    p: &tessera::DomainParticipant,
    topic: &str,
    strength: i32,
) -> tessera::DataWriter<Keyed> {
    exclusive_writer_with(p, topic, strength, |q| q)
}

fn exclusive_writer_with(
    p: &tessera::DomainParticipant,
    topic: &str,
    strength: i32,
    more: impl Fn(DataWriterQos) -> DataWriterQos,
) -> tessera::DataWriter<Keyed> {
    let qos = keep_all_writer()
        .with_ownership(Ownership::Exclusive)
        .with_ownership_strength(OwnershipStrength(strength));
    writer::<Keyed>(p, topic, more(qos))
}

/// Exclusive OWNERSHIP: only the stronger writer's samples are delivered while it lives; when
/// it is deleted (unregistering its instances) the weaker one takes over.
fn ownership_strongest_wins_and_fails_over(t: Transport) {
    let d = t.domain(3);
    let ps = &d.participants;
    let weak = exclusive_writer(&ps[0], "Q_own", 10);
    let strong = exclusive_writer(&ps[1], "Q_own", 20);
    let r = reader::<Keyed>(
        &ps[2],
        "Q_own",
        keep_all_reader().with_ownership(Ownership::Exclusive),
    );
    matched(&weak, &r);
    matched(&strong, &r);
    strong.write(&Keyed { id: 1, seq: 1000 }).unwrap();
    take_n(&r, 1, 10);
    for seq in 0..10 {
        weak.write(&Keyed { id: 1, seq }).unwrap();
        strong
            .write(&Keyed {
                id: 1,
                seq: 1001 + seq,
            })
            .unwrap();
    }
    weak.write(&Keyed { id: 2, seq: 7 }).unwrap();
    let got = take_until_each_has(&r, 11);
    assert!(
        got.iter().all(|(id, seq)| *id == 2 || *seq > 1000),
        "a weaker writer's sample was delivered: {got:?}"
    );
    assert!(r.policy_drops().not_owner >= 10);
    drop(strong);
    wait_until(10, "the strong writer to go", || {
        r.subscription_matched_status().current_count == 1
    });
    weak.write(&Keyed { id: 1, seq: 99 }).unwrap();
    let got = take_n(&r, 1, 10);
    assert!(seqs(&got).contains(&(1, 99)), "{:?}", seqs(&got));
}

/// Takes (id, seq) pairs until the strong writer's last (seq 1010) and the weak writer's
/// instance-2 sample are both in.
fn take_until_each_has(r: &DataReader<Keyed>, _n: usize) -> Vec<(u32, u32)> {
    let mut got = Vec::new();
    wait_until(10, "the strong writer's samples", || {
        got.extend(seqs(&r.take(usize::MAX).unwrap()));
        got.contains(&(1, 1010)) && got.contains(&(2, 7))
    });
    got
}

/// A weak (10) and a strong (20) exclusive writer and an exclusive reader on `topic`, each in
/// its own participant, with `w` and `rq` applied to the writers' and the reader's QoS; the
/// strong writer has written instance 1 (seq 1000) and the reader has taken it.
fn exclusive_trio(
    ps: &[tessera::DomainParticipant],
    topic: &str,
    w: impl Fn(DataWriterQos) -> DataWriterQos,
    rq: DataReaderQos,
) -> (
    tessera::DataWriter<Keyed>,
    tessera::DataWriter<Keyed>,
    DataReader<Keyed>,
) {
    let weak = exclusive_writer_with(&ps[0], topic, 10, &w);
    let strong = exclusive_writer_with(&ps[1], topic, 20, &w);
    let r = reader::<Keyed>(&ps[2], topic, rq.with_ownership(Ownership::Exclusive));
    matched(&weak, &r);
    matched(&strong, &r);
    strong.write(&Keyed { id: 1, seq: 1000 }).unwrap();
    take_n(&r, 1, 10);
    (weak, strong, r)
}

/// Writes instance 1 with `w` every 20 ms (seq from `seq`) until the reader delivers
/// something; returns what it delivered.
fn write_until_delivered(
    w: &tessera::DataWriter<Keyed>,
    r: &DataReader<Keyed>,
    mut seq: u32,
    what: &str,
) -> Vec<(u32, u32)> {
    let mut got = Vec::new();
    wait_until(10, what, || {
        w.write(&Keyed { id: 1, seq }).unwrap();
        seq += 1;
        std::thread::sleep(ms(20));
        got.extend(seqs(&r.take(usize::MAX).unwrap()));
        !got.is_empty()
    });
    got
}

/// Exclusive OWNERSHIP: an owner that stops writing gives its instances up when it misses the
/// reader's deadline.
fn ownership_fails_over_on_missed_deadline(t: Transport) {
    let ps = t.participants(3);
    let period = Deadline { period: ms(200) };
    let (weak, strong, r) = exclusive_trio(
        &ps,
        "Q_own_dl",
        |q| q.with_deadline(period),
        keep_all_reader().with_deadline(period),
    );
    weak.write(&Keyed { id: 1, seq: 1 }).unwrap();
    settle(t);
    assert!(seqs(&r.take(usize::MAX).unwrap()).is_empty());
    // The strong writer falls silent: after its missed deadline the weak one owns instance 1.
    wait_until(10, "a missed deadline", || {
        r.requested_deadline_missed_status().total_count > 0
    });
    let mut got = write_until_delivered(&weak, &r, 2, "the weak writer to take over");
    assert!(got.iter().all(|(_, s)| *s < 1000), "{got:?}");
    // The strong writer comes back and takes the instance again.
    strong.write(&Keyed { id: 1, seq: 1001 }).unwrap();
    wait_until(10, "the strong writer to come back", || {
        got.extend(seqs(&r.take(usize::MAX).unwrap()));
        got.contains(&(1, 1001))
    });
}

/// Exclusive OWNERSHIP fails over when the owner loses its (manual) liveliness while its
/// process lives on: its instances go to the next live writer.
fn ownership_fails_over_on_lost_liveliness(t: Transport) {
    let ps = t.participants(3);
    let lease = Liveliness {
        kind: LivelinessKind::ManualByTopic,
        lease_duration: ms(300),
    };
    let (weak, strong, r) = exclusive_trio(
        &ps,
        "Q_own_live",
        |q| q.with_liveliness(lease),
        keep_all_reader().with_liveliness(lease),
    );
    // The weak writer keeps writing (and so stays alive); the strong one falls silent.
    write_until_delivered(&weak, &r, 0, "the weak writer to take over");
    let st = r.liveliness_changed_status();
    assert_eq!((st.alive_count, st.not_alive_count), (1, 1), "{st:?}");
    assert_eq!(strong.liveliness_lost_status().total_count, 1);
    // Nothing of the weak writer came before the strong one's lease ran out: about 15
    // writes, 20 ms apart, are dropped first.
    assert!(r.policy_drops().not_owner >= 5, "{:?}", r.policy_drops());
}

/// TIME_BASED_FILTER is changeable: a reader that starts filtering thins what it gets.
fn time_based_filter_set_on_an_enabled_reader(t: Transport) {
    let ps = t.participants(2);
    let w = writer::<Keyed>(&ps[0], "Q_tbf_set", keep_all_writer());
    let r = reader::<Keyed>(&ps[1], "Q_tbf_set", keep_all_reader());
    matched(&w, &r);
    let burst = |from: u32| {
        for seq in from..from + 20 {
            w.write(&Keyed { id: 1, seq }).unwrap();
            std::thread::sleep(ms(5));
        }
        w.write(&Keyed { id: 2, seq: from }).unwrap();
    };
    burst(0);
    let mut got = Vec::new();
    wait_until(10, "the unfiltered burst", || {
        got.extend(seqs(&r.take(usize::MAX).unwrap()));
        got.contains(&(2, 0))
    });
    assert_eq!(got.iter().filter(|(id, _)| *id == 1).count(), 20);
    r.set_qos(r.qos().with_time_based_filter(TimeBasedFilter {
        minimum_separation: ms(1000),
    }))
    .unwrap();
    burst(100);
    let mut got = Vec::new();
    wait_until(10, "the filtered burst", || {
        got.extend(seqs(&r.take(usize::MAX).unwrap()));
        got.contains(&(2, 100))
    });
    assert!(
        got.iter().filter(|(id, _)| *id == 1).count() <= 2,
        "{got:?}"
    );
}

/// TIME_BASED_FILTER at the writer: a remote reader asking for 100 ms between samples of an
/// instance is not sent the others (the writer counts them filtered and sends GAPs, so the
/// reliable reader neither waits for them nor drops them itself), while a reader beside it
/// that asked for nothing gets every sample.
fn time_based_filter_applied_at_the_writer(t: Transport) {
    let ps = t.participants(2);
    let w = writer::<Keyed>(&ps[0], "Q_tbf_writer", keep_all_writer());
    let thin = reader::<Keyed>(
        &ps[1],
        "Q_tbf_writer",
        keep_all_reader().with_time_based_filter(TimeBasedFilter {
            minimum_separation: ms(100),
        }),
    );
    let all = reader::<Keyed>(&ps[1], "Q_tbf_writer", keep_all_reader());
    matched(&w, &thin);
    matched(&w, &all);
    for seq in 0..40 {
        w.write(&Keyed { id: 1, seq }).unwrap();
        std::thread::sleep(ms(5));
    }
    w.write(&Keyed { id: 2, seq: 0 }).unwrap();
    w.wait_for_acknowledgments(Duration::from_secs(10))
        .expect("GAPs keep the filtered reader acknowledging");
    let mut got = Vec::new();
    wait_until(10, "the last sample", || {
        got.extend(seqs(&thin.take(usize::MAX).unwrap()));
        got.contains(&(2, 0))
    });
    let ones = got.iter().filter(|(id, _)| *id == 1).count() as u64;
    let at_writer = w.protocol_counters().samples_filtered;
    let at_reader = thin.policy_drops().filtered;
    // 200 ms of writes at 5 ms: two to four pass a 100 ms separation at the writer (sleeps
    // overshoot). On a loaded machine two samples that left 100 ms apart can arrive closer
    // together, and the reader's own filter (on its reception clock) then drops the second:
    // that is the reader keeping its promise, not the writer failing to filter.
    assert!((1..=4).contains(&ones), "{got:?}");
    assert!(
        at_writer >= 34,
        "the writer filtered only {at_writer} of 40"
    );
    assert!(at_reader <= 2, "the reader filtered {at_reader}");
    assert_eq!(
        ones + at_writer + at_reader,
        40,
        "every sample of instance 1 delivered or counted filtered once"
    );
    let mut every = Vec::new();
    wait_until(10, "every sample at the unfiltered reader", || {
        every.extend(seqs(&all.take(usize::MAX).unwrap()));
        every.len() == 41
    });
}

/// MANUAL_BY_TOPIC liveliness: a writer that neither writes nor asserts within its lease loses
/// its liveliness (LIVELINESS_LOST), its readers see it not alive (LIVELINESS_CHANGED, its
/// instances NOT_ALIVE_NO_WRITERS, `alive_publications` leaves it out while it stays matched),
/// and `assert_liveliness` brings it back.
fn manual_liveliness_lost_and_regained(t: Transport) {
    let ps = t.participants(2);
    let lease = Liveliness {
        kind: LivelinessKind::ManualByTopic,
        lease_duration: ms(400),
    };
    let w = writer::<Keyed>(&ps[0], "Q_live", keep_all_writer().with_liveliness(lease));
    let r = reader::<Keyed>(&ps[1], "Q_live", keep_all_reader().with_liveliness(lease));
    matched(&w, &r);
    // Writing keeps it alive past several leases.
    for seq in 0..12 {
        w.write(&Keyed { id: 1, seq }).unwrap();
        std::thread::sleep(ms(100));
    }
    assert_eq!(w.liveliness_lost_status().total_count, 0);
    let st = r.liveliness_changed_status();
    assert_eq!((st.alive_count, st.not_alive_count), (1, 0), "{st:?}");
    take_n(&r, 12, 10);
    // Silence.
    wait_until(10, "the writer's liveliness to be lost", || {
        w.liveliness_lost_status().total_count == 1
    });
    wait_until(10, "the reader to see it", || {
        let st = r.liveliness_changed_status();
        (st.alive_count, st.not_alive_count) == (0, 1)
    });
    assert_newest_state(&r, InstanceState::NotAliveNoWriters);
    // Matched but not alive, writer by writer.
    assert_eq!(r.matched_publications().len(), 1);
    assert!(r.alive_publications().is_empty());
    w.assert_liveliness().unwrap();
    wait_until(10, "the assertion to reach the reader", || {
        let st = r.liveliness_changed_status();
        (st.alive_count, st.not_alive_count) == (1, 0)
    });
    assert_eq!(r.subscription_matched_status().current_count, 1);
    assert_eq!(r.alive_publications(), r.matched_publications());
}

/// MANUAL_BY_PARTICIPANT liveliness over the writer liveliness protocol: the participant's
/// assertions (ParticipantMessageData) keep a writer that never writes alive at a remote
/// reader; without them it is lost, and one assertion brings it back.
fn participant_liveliness_asserts_writers(t: Transport) {
    let ps = t.participants(2);
    let lease = Liveliness {
        kind: LivelinessKind::ManualByParticipant,
        lease_duration: ms(400),
    };
    let w = writer::<Keyed>(
        &ps[0],
        "Q_live_pp",
        keep_all_writer().with_liveliness(lease),
    );
    let r = reader::<Keyed>(
        &ps[1],
        "Q_live_pp",
        keep_all_reader().with_liveliness(lease),
    );
    matched(&w, &r);
    w.write(&Keyed { id: 1, seq: 0 }).unwrap();
    take_n(&r, 1, 10);
    for _ in 0..12 {
        ps[0].assert_liveliness().unwrap();
        std::thread::sleep(ms(100));
    }
    assert_eq!(w.liveliness_lost_status().total_count, 0);
    let st = r.liveliness_changed_status();
    assert_eq!((st.alive_count, st.not_alive_count), (1, 0), "{st:?}");
    wait_until(10, "the reader to see the writer not alive", || {
        let st = r.liveliness_changed_status();
        (st.alive_count, st.not_alive_count) == (0, 1)
    });
    assert_eq!(w.liveliness_lost_status().total_count, 1);
    // Through the writer: a MANUAL_BY_PARTICIPANT writer asserts its participant.
    w.assert_liveliness().unwrap();
    wait_until(10, "the assertion to reach the reader", || {
        let st = r.liveliness_changed_status();
        (st.alive_count, st.not_alive_count) == (1, 0)
    });
}

/// TIME_BASED_FILTER: a reader with a 200 ms minimum separation gets a few of 30 samples
/// written 10 ms apart to one instance, and every sample of an instance written once.
fn time_based_filter_thins_instances(t: Transport) {
    let ps = t.participants(2);
    let w = writer::<Keyed>(&ps[0], "Q_tbf", keep_all_writer());
    let r = reader::<Keyed>(
        &ps[1],
        "Q_tbf",
        keep_all_reader().with_time_based_filter(TimeBasedFilter {
            minimum_separation: ms(200),
        }),
    );
    matched(&w, &r);
    for seq in 0..30 {
        w.write(&Keyed { id: 1, seq }).unwrap();
        w.write(&Keyed { id: 100 + seq, seq }).unwrap();
        std::thread::sleep(ms(10));
    }
    let mut got = Vec::new();
    wait_until(10, "every single-sample instance", || {
        got.extend(seqs(&r.take(usize::MAX).unwrap()));
        got.iter().filter(|(id, _)| *id >= 100).count() == 30
    });
    let of_one = got.iter().filter(|(id, _)| *id == 1).count();
    assert!(
        (1..=5).contains(&of_one),
        "{of_one} samples of instance 1: {got:?}"
    );
    // Dropped at the writer (it knows the separation from SEDP) or, for samples written
    // before it did, by the reader.
    let dropped = r.policy_drops().filtered + w.protocol_counters().samples_filtered;
    assert!(dropped >= 25, "{dropped}");
}

/// `set_qos` on enabled entities: a writer's new OWNERSHIP_STRENGTH wins instances from its
/// next sample on; a reader's new DEADLINE starts counting; a writer's longer DEADLINE no
/// longer meets the reader's request and unmatches it; immutable policies are refused.
fn set_qos_changes_policies_and_rematches(t: Transport) {
    let ps = t.participants(3);
    let a = exclusive_writer(&ps[0], "Q_setqos", 10);
    let b = exclusive_writer(&ps[1], "Q_setqos", 20);
    let r = reader::<Keyed>(
        &ps[2],
        "Q_setqos",
        keep_all_reader().with_ownership(Ownership::Exclusive),
    );
    matched(&a, &r);
    matched(&b, &r);
    b.write(&Keyed { id: 1, seq: 2000 }).unwrap();
    take_n(&r, 1, 10);
    a.write(&Keyed { id: 1, seq: 1 }).unwrap();
    settle(t);
    assert!(seqs(&r.take(usize::MAX).unwrap()).is_empty(), "a is weaker");
    let stronger = a.qos().with_ownership_strength(OwnershipStrength(30));
    a.set_qos(stronger).unwrap();
    assert_eq!(a.qos().ownership_strength, OwnershipStrength(30));
    let mut got = Vec::new();
    let mut seq = 2;
    wait_until(10, "the stronger a to take the instance", || {
        a.write(&Keyed { id: 1, seq }).unwrap();
        seq += 1;
        std::thread::sleep(ms(20));
        got.extend(seqs(&r.take(usize::MAX).unwrap()));
        !got.is_empty()
    });
    b.write(&Keyed { id: 1, seq: 2001 }).unwrap();
    settle(t);
    assert!(
        !seqs(&r.take(usize::MAX).unwrap()).contains(&(1, 2001)),
        "b is weaker now"
    );

    // The writers offer a deadline, then the reader starts requesting one (a writer that
    // offered none would no longer match it).
    for w in [&a, &b] {
        w.set_qos(w.qos().with_deadline(Deadline { period: ms(50) }))
            .unwrap();
    }
    assert_eq!(r.requested_deadline_missed_status().total_count, 0);
    r.set_qos(r.qos().with_deadline(Deadline { period: ms(100) }))
        .unwrap();
    a.write(&Keyed { id: 1, seq: 500 }).unwrap();
    wait_until(10, "a requested deadline miss", || {
        r.requested_deadline_missed_status().total_count > 0
    });

    // b offers a 1 s deadline: it no longer meets the reader's 100 ms request.
    let err = b
        .set_qos(
            b.qos()
                .with_reliability(tessera::qos::Reliability::best_effort()),
        )
        .unwrap_err();
    assert!(matches!(err, tessera::Error::ImmutablePolicy(_)), "{err:?}");
    b.set_qos(b.qos().with_deadline(Deadline { period: ms(1000) }))
        .unwrap();
    wait_until(10, "b to unmatch", || {
        b.publication_matched_status().current_count == 0
            && r.subscription_matched_status().current_count == 1
    });
    assert!(b.offered_incompatible_qos_status().total_count >= 1);
}

/// ENTITY_FACTORY: entities of a publisher or subscriber that does not autoenable stay
/// unannounced until `enable`; a disabled writer refuses to write.
fn entity_factory_defers_enabling(t: Transport) {
    let ps = t.participants(2);
    let manual = tessera::qos::EntityFactory {
        autoenable_created_entities: false,
    };
    let pub_qos = tessera::qos::PublisherQos {
        entity_factory: manual,
        ..Default::default()
    };
    let sub_qos = tessera::qos::SubscriberQos {
        entity_factory: manual,
        ..Default::default()
    };
    let w = writer_in::<Keyed>(&ps[0], "Q_enable", pub_qos, keep_all_writer());
    let r = reader_in::<Keyed>(&ps[1], "Q_enable", sub_qos, keep_all_reader());
    let plain = reader::<Keyed>(&ps[1], "Q_enable", keep_all_reader());
    assert!(!w.is_enabled() && !r.is_enabled() && plain.is_enabled());
    assert!(matches!(
        w.write(&Keyed { id: 1, seq: 0 }),
        Err(tessera::Error::NotEnabled)
    ));
    settle(t);
    assert_eq!(plain.subscription_matched_status().current_count, 0);
    w.enable().unwrap();
    matched(&w, &plain);
    settle(t);
    assert_eq!(
        r.subscription_matched_status().current_count,
        0,
        "r is disabled"
    );
    r.enable().unwrap();
    // `w` matched `plain` already: wait for its second reader, or `r` (volatile) may match
    // after the write and rightly miss it.
    wait_until(10, "w to match r", || {
        w.publication_matched_status().current_count >= 2
            && r.subscription_matched_status().current_count >= 1
    });
    w.write(&Keyed { id: 1, seq: 1 }).unwrap();
    assert_eq!(seqs(&take_n(&r, 1, 10)), vec![(1, 1)]);
}

/// PARTITION is changeable: moving a subscriber into the writer's partition matches its
/// readers, moving the publisher out unmatches its writers; PRESENTATION is not changeable.
fn partition_changes_rematch(t: Transport) {
    use tessera::qos::{Partition, PublisherQos, SubscriberQos};
    let ps = t.participants(2);
    let publisher = ps[0]
        .create_publisher(PublisherQos {
            partition: Partition::new(["A"]),
            ..Default::default()
        })
        .unwrap();
    let subscriber = ps[1]
        .create_subscriber(SubscriberQos {
            partition: Partition::new(["B*"]),
            ..Default::default()
        })
        .unwrap();
    let tw = ps[0]
        .create_topic::<Keyed>("Q_part", Default::default())
        .unwrap();
    let tr = ps[1]
        .create_topic::<Keyed>("Q_part", Default::default())
        .unwrap();
    let w = publisher.create_datawriter(&tw, keep_all_writer()).unwrap();
    let r = subscriber
        .create_datareader(&tr, keep_all_reader())
        .unwrap();
    settle(t);
    assert_eq!(r.subscription_matched_status().current_count, 0);
    let mut q = subscriber.qos();
    q.partition = Partition::new(["A"]);
    subscriber.set_qos(q).unwrap();
    matched(&w, &r);
    w.write(&Keyed { id: 1, seq: 1 }).unwrap();
    assert_eq!(seqs(&take_n(&r, 1, 10)), vec![(1, 1)]);
    let mut q = publisher.qos();
    q.partition = Partition::new(["C"]);
    publisher.set_qos(q.clone()).unwrap();
    wait_until(10, "the writer to leave the reader's partition", || {
        w.publication_matched_status().current_count == 0
            && r.subscription_matched_status().current_count == 0
    });
    q.presentation.coherent_access = true;
    assert!(matches!(
        publisher.set_qos(q),
        Err(tessera::Error::ImmutablePolicy(_))
    ));
}

/// LATENCY_BUDGET as a batching budget: a sample may wait up to the budget for company, and
/// the event thread sends it when the budget runs out even if nothing else is written.
fn latency_budget_batches_within_the_budget(t: Transport) {
    let ps = t.participants(2);
    let w = writer::<Keyed>(
        &ps[0],
        "Q_budget",
        keep_all_writer().with_latency_budget(tessera::qos::LatencyBudget { duration: ms(400) }),
    );
    // The reader accepts that much delay (a writer's budget must not exceed the reader's).
    let r = reader::<Keyed>(
        &ps[1],
        "Q_budget",
        keep_all_reader().with_latency_budget(tessera::qos::LatencyBudget { duration: ms(1000) }),
    );
    matched(&w, &r);
    // Finish the reliable handshake first: an ACKNACK that arrives while a batch fills may
    // send it early (sending sooner than the budget is allowed), which a slow machine
    // otherwise shows as a late first ACKNACK.
    w.write(&Keyed { id: 0, seq: 0 }).unwrap();
    w.wait_for_acknowledgments(ms(10_000)).unwrap();
    assert_eq!(seqs(&take_n(&r, 1, 10)), vec![(0, 0)]);
    for seq in 0..5 {
        w.write(&Keyed { id: 1, seq }).unwrap();
    }
    std::thread::sleep(ms(100));
    assert!(
        seqs(&r.read(usize::MAX).unwrap()).is_empty(),
        "sent before the budget ran out"
    );
    assert_eq!(seqs(&take_n(&r, 5, 10)).len(), 5);
    // Without a budget the writer sends at once again.
    w.set_qos(w.qos().with_latency_budget(Default::default()))
        .unwrap();
    w.write(&Keyed { id: 1, seq: 9 }).unwrap();
    assert_eq!(seqs(&take_n(&r, 1, 10)), vec![(1, 9)]);
}

/// WRITER_DATA_LIFECYCLE and READER_DATA_LIFECYCLE are changeable: a writer that stops
/// autodisposing leaves an unregistered instance NOT_ALIVE_NO_WRITERS, and a reader given an
/// autopurge delay purges it.
fn lifecycles_change_with_set_qos(t: Transport) {
    let ps = t.participants(2);
    let w = writer::<Keyed>(&ps[0], "Q_lifecycle", keep_all_writer());
    let r = reader::<Keyed>(&ps[1], "Q_lifecycle", keep_all_reader());
    matched(&w, &r);
    assert!(
        w.qos()
            .writer_data_lifecycle
            .autodispose_unregistered_instances
    );
    w.set_qos(
        w.qos()
            .with_writer_data_lifecycle(tessera::qos::WriterDataLifecycle {
                autodispose_unregistered_instances: false,
            }),
    )
    .unwrap();
    r.set_qos(
        r.qos()
            .with_reader_data_lifecycle(tessera::qos::ReaderDataLifecycle {
                autopurge_nowriter_samples_delay: ms(200),
                ..Default::default()
            }),
    )
    .unwrap();
    let k = Keyed { id: 1, seq: 0 };
    w.write(&k).unwrap();
    take_n(&r, 1, 10);
    w.unregister_instance(&k).unwrap();
    wait_until(10, "the unregistration", || {
        r.read(usize::MAX)
            .unwrap()
            .iter()
            .any(|s| s.info.instance_state == InstanceState::NotAliveNoWriters)
    });
    assert_newest_state(&r, InstanceState::NotAliveNoWriters);
    wait_until(10, "the autopurge", || r.lookup_instance(&k).is_none());
}

per_transport!(
    deadline_missed_per_instance,
    a_deadline_listener_may_write,
    no_deadline_counts_nothing,
    lifespan_expires_samples,
    lifespan_drops_expired_on_arrival,
    ownership_strongest_wins_and_fails_over,
    ownership_fails_over_on_missed_deadline,
    ownership_fails_over_on_lost_liveliness,
    time_based_filter_set_on_an_enabled_reader,
    time_based_filter_applied_at_the_writer,
    manual_liveliness_lost_and_regained,
    participant_liveliness_asserts_writers,
    time_based_filter_thins_instances,
    set_qos_changes_policies_and_rematches,
    entity_factory_defers_enabling,
    partition_changes_rematch,
    latency_budget_batches_within_the_budget,
    lifecycles_change_with_set_qos,
);

/// HISTORY depth above RESOURCE_LIMITS max_samples_per_instance is refused with a typed error.
#[test]
fn history_depth_above_resource_limits_is_inconsistent() {
    let ps = Transport::InProc.participants(1);
    let t = ps[0]
        .create_topic::<Keyed>("Q_inconsistent", Default::default())
        .unwrap();
    let qos = DataReaderQos::default()
        .with_history(tessera::qos::History::KeepLast(10))
        .with_resource_limits(tessera::qos::ResourceLimits {
            max_samples_per_instance: Some(5),
            ..Default::default()
        });
    let e = ps[0]
        .create_subscriber(Default::default())
        .unwrap()
        .create_datareader(&t, qos)
        .unwrap_err();
    assert!(matches!(e, tessera::Error::InconsistentPolicy(_)), "{e:?}");
}
