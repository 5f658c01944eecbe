//! PRESENTATION at GROUP access scope end to end over the in-process transport: a coherent
//! set across a publisher's writers of two topics shown in both readers together or not at
//! all (a late repair, a deleted writer, local readers), a subscriber without GROUP scope
//! seeing the samples as they come, `get_datareaders` order, and the misuse errors.

use std::time::{Duration, Instant};
use tessera::qos::{
    DataReaderQos, DataWriterQos, History, Presentation, PresentationAccessScope, PublisherQos,
    Reliability, SubscriberQos, TopicQos,
};
use tessera::transport::{FaultConfig, InProcessNetwork};
use tessera::{
    DataReader, DataWriter, DomainParticipant, Error, ParticipantConfig, Publisher, ReaderRun,
    StateMasks, Subscriber, TopicType,
};

#[derive(TopicType, Debug, Clone, PartialEq)]
struct Part {
    #[key]
    item: u32,
    text: String,
}

const GROUP: PresentationAccessScope = PresentationAccessScope::Group;

fn participant(net: &InProcessNetwork) -> DomainParticipant {
    DomainParticipant::with_qos(
        0,
        Default::default(),
        ParticipantConfig::with_in_process(net.clone()),
    )
    .unwrap()
}

fn presentation(coherent: bool, ordered: bool) -> Presentation {
    Presentation {
        access_scope: GROUP,
        coherent_access: coherent,
        ordered_access: ordered,
    }
}

fn publisher(p: &DomainParticipant, pres: Presentation) -> Publisher {
    p.create_publisher(PublisherQos {
        presentation: pres,
        ..PublisherQos::default()
    })
    .unwrap()
}

fn subscriber(p: &DomainParticipant, pres: Presentation) -> Subscriber {
    p.create_subscriber(SubscriberQos {
        presentation: pres,
        ..SubscriberQos::default()
    })
    .unwrap()
}

fn writer(p: &DomainParticipant, publ: &Publisher, topic: &str) -> DataWriter<Part> {
    let t = p.create_topic::<Part>(topic, TopicQos::default()).unwrap();
    publ.create_datawriter(&t, DataWriterQos::default().with_history(History::KeepAll))
        .unwrap()
}

fn reader(p: &DomainParticipant, sub: &Subscriber, topic: &str) -> DataReader<Part> {
    let t = p.create_topic::<Part>(topic, TopicQos::default()).unwrap();
    let qos = DataReaderQos::default()
        .with_reliability(Reliability::reliable(Duration::from_secs(1)))
        .with_history(History::KeepAll);
    sub.create_datareader(&t, qos).unwrap()
}

fn wait_matched(pairs: &[(&DataWriter<Part>, &DataReader<Part>)]) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while pairs.iter().any(|(w, r)| {
        w.publication_matched_status().current_count == 0
            || r.subscription_matched_status().current_count == 0
    }) {
        assert!(Instant::now() < deadline, "no match within 10 s");
        std::thread::sleep(Duration::from_millis(2));
    }
}

fn part(item: u32, len: usize) -> Part {
    Part {
        item,
        text: "x".repeat(len),
    }
}

fn take_items(r: &DataReader<Part>) -> Vec<u32> {
    r.take(usize::MAX)
        .unwrap()
        .into_iter()
        .filter_map(|s| s.data.map(|d| d.item))
        .collect()
}

/// Takes from `r` until it has something (at most 10 s).
fn take_some(r: &DataReader<Part>) -> Vec<u32> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let got = take_items(r);
        if !got.is_empty() {
            return got;
        }
        assert!(Instant::now() < deadline, "nothing arrived");
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn a_group_set_appears_in_both_readers_together_even_after_a_late_repair() {
    let net = InProcessNetwork::new();
    let pw = participant(&net); // node 0
    let pr = participant(&net); // node 1
    let publ = publisher(&pw, presentation(true, false));
    let wa = writer(&pw, &publ, "GroupA");
    let wb = writer(&pw, &publ, "GroupB");
    let sub = subscriber(&pr, presentation(true, false));
    let ra = reader(&pr, &sub, "GroupA");
    let rb = reader(&pr, &sub, "GroupB");
    // A subscriber without GROUP scope sees the samples as they come.
    let plain = reader(&pr, &subscriber(&pr, Presentation::default()), "GroupA");
    wait_matched(&[(&wa, &ra), (&wb, &rb), (&wa, &plain)]);

    publ.begin_coherent_changes().unwrap();
    wa.write(&part(1, 8)).unwrap();
    // Topic B's sample is lost on the way and repaired later.
    let lossy = FaultConfig {
        loss_percent: 100.0,
        ..FaultConfig::default()
    };
    assert!(net.set_node_faults(1, lossy));
    wb.write(&part(2, 8)).unwrap();
    std::thread::sleep(Duration::from_millis(20));
    assert!(net.set_node_faults(1, FaultConfig::default()));
    wa.write(&part(3, 8)).unwrap();
    let mut plain_got = take_some(&plain);
    if plain_got.len() < 2 {
        plain_got.extend(take_some(&plain));
    }
    assert_eq!(plain_got, [1, 3]);
    std::thread::sleep(Duration::from_millis(50));
    assert!(take_items(&ra).is_empty(), "part of an open set shown");
    publ.end_coherent_changes().unwrap();
    // The moment A shows its part, B has its part too (one step for both readers).
    let a = take_some(&ra);
    let b = take_items(&rb);
    assert_eq!((a, b), (vec![1, 3], vec![2]));
    let c = sub.group_coherent_set_counters();
    assert_eq!((c.sets_delivered, c.sets_dropped), (1, 0));
    // Writes outside a set pass straight through.
    wb.write(&part(4, 8)).unwrap();
    assert_eq!(take_some(&rb), [4]);
}

#[test]
fn a_group_set_abandoned_by_a_deleted_writer_never_appears() {
    let net = InProcessNetwork::new();
    let pw = participant(&net);
    let pr = participant(&net);
    let publ = publisher(&pw, presentation(true, false));
    let wa = writer(&pw, &publ, "AbandonA");
    let wb = writer(&pw, &publ, "AbandonB");
    let sub = subscriber(&pr, presentation(true, false));
    let ra = reader(&pr, &sub, "AbandonA");
    let rb = reader(&pr, &sub, "AbandonB");
    wait_matched(&[(&wa, &ra), (&wb, &rb)]);

    publ.begin_coherent_changes().unwrap();
    wa.write(&part(1, 8)).unwrap();
    wb.write(&part(2, 8)).unwrap();
    drop(wb);
    let deadline = Instant::now() + Duration::from_secs(10);
    while rb.subscription_matched_status().current_count != 0 {
        assert!(Instant::now() < deadline, "writer never unmatched");
        std::thread::sleep(Duration::from_millis(5));
    }
    // A's part ends whole, but the set was B's too.
    publ.end_coherent_changes().unwrap();
    std::thread::sleep(Duration::from_millis(200));
    assert!(take_items(&ra).is_empty(), "abandoned set shown in A");
    assert!(take_items(&rb).is_empty(), "abandoned set shown in B");
    let c = sub.group_coherent_set_counters();
    assert_eq!((c.sets_delivered, c.sets_dropped), (0, 1));
    // The next set is shown.
    publ.begin_coherent_changes().unwrap();
    wa.write(&part(5, 8)).unwrap();
    publ.end_coherent_changes().unwrap();
    assert_eq!(take_some(&ra), [5]);
}

#[test]
fn local_readers_get_group_sets_together() {
    let net = InProcessNetwork::new();
    let p = participant(&net);
    let publ = publisher(&p, presentation(true, false));
    let wa = writer(&p, &publ, "LocalA");
    let wb = writer(&p, &publ, "LocalB");
    let sub = subscriber(&p, presentation(true, false));
    let ra = reader(&p, &sub, "LocalA");
    let rb = reader(&p, &sub, "LocalB");
    wait_matched(&[(&wa, &ra), (&wb, &rb)]);
    publ.begin_coherent_changes().unwrap();
    wa.write(&part(1, 8)).unwrap();
    wb.write(&part(2, 8)).unwrap();
    assert!(take_items(&ra).is_empty() && take_items(&rb).is_empty());
    publ.end_coherent_changes().unwrap();
    assert_eq!((take_items(&ra), take_items(&rb)), (vec![1], vec![2]));
    assert_eq!(sub.group_coherent_set_counters().sets_delivered, 1);
}

#[test]
fn get_datareaders_follows_the_publishers_write_order_across_topics() {
    let net = InProcessNetwork::new();
    let pw = participant(&net);
    let pr = participant(&net);
    let publ = publisher(&pw, presentation(true, true));
    let wa = writer(&pw, &publ, "OrderA");
    let wb = writer(&pw, &publ, "OrderB");
    let sub = subscriber(&pr, presentation(true, true));
    let ra = reader(&pr, &sub, "OrderA");
    let rb = reader(&pr, &sub, "OrderB");
    wait_matched(&[(&wa, &ra), (&wb, &rb)]);

    publ.begin_coherent_changes().unwrap();
    // Write order: A1 B2 A3 A4 B5 (instances differ, so per-instance order is no help).
    for (w, i) in [(&wa, 1), (&wb, 2), (&wa, 3), (&wa, 4), (&wb, 5)] {
        w.write(&part(i, 8)).unwrap();
    }
    publ.end_coherent_changes().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while sub.group_coherent_set_counters().sets_delivered == 0 {
        assert!(Instant::now() < deadline, "the set never arrived");
        std::thread::sleep(Duration::from_millis(2));
    }
    assert!(matches!(
        sub.get_datareaders(StateMasks::ANY),
        Err(Error::PreconditionNotMet(_))
    ));
    sub.begin_access().unwrap();
    let runs = sub.get_datareaders(StateMasks::ANY).unwrap();
    let run = |r: &DataReader<Part>, n| ReaderRun {
        reader: r.guid(),
        samples: n,
    };
    assert_eq!(runs, [run(&ra, 1), run(&rb, 1), run(&ra, 2), run(&rb, 1)]);
    let mut got = Vec::new();
    for r in &runs {
        let rd = if r.reader == ra.guid() { &ra } else { &rb };
        got.extend(
            rd.take(r.samples)
                .unwrap()
                .into_iter()
                .filter_map(|s| s.data.map(|d| d.item)),
        );
    }
    sub.end_access().unwrap();
    assert_eq!(got, [1, 2, 3, 4, 5]);
    // Nothing left: an empty list.
    sub.begin_access().unwrap();
    assert!(sub.get_datareaders(StateMasks::ANY).unwrap().is_empty());
    sub.end_access().unwrap();
}

#[test]
fn a_writer_created_inside_an_open_group_set_writes_into_it() {
    let net = InProcessNetwork::new();
    let p = participant(&net);
    let publ = publisher(&p, presentation(true, false));
    let wa = writer(&p, &publ, "LateA");
    let sub = subscriber(&p, presentation(true, false));
    let ra = reader(&p, &sub, "LateA");
    let rb = reader(&p, &sub, "LateB");
    wait_matched(&[(&wa, &ra)]);
    publ.begin_coherent_changes().unwrap();
    wa.write(&part(1, 8)).unwrap();
    let wb = writer(&p, &publ, "LateB");
    wait_matched(&[(&wb, &rb)]);
    wb.write(&part(2, 8)).unwrap();
    publ.end_coherent_changes().unwrap();
    assert_eq!((take_items(&ra), take_items(&rb)), (vec![1], vec![2]));
    let c = sub.group_coherent_set_counters();
    assert_eq!((c.sets_delivered, c.sets_dropped), (1, 0));
}

#[test]
fn sets_completed_during_an_access_wait_for_its_end() {
    let net = InProcessNetwork::new();
    let p = participant(&net);
    let publ = publisher(&p, presentation(true, false));
    let wa = writer(&p, &publ, "AccessA");
    let sub = subscriber(&p, presentation(true, false));
    let ra = reader(&p, &sub, "AccessA");
    wait_matched(&[(&wa, &ra)]);
    sub.begin_access().unwrap();
    publ.begin_coherent_changes().unwrap();
    wa.write(&part(1, 8)).unwrap();
    publ.end_coherent_changes().unwrap();
    assert!(take_items(&ra).is_empty(), "a set shown inside an access");
    sub.end_access().unwrap();
    assert_eq!(take_items(&ra), [1]);
}

#[test]
fn group_misuse_returns_typed_errors() {
    let net = InProcessNetwork::new();
    let p = participant(&net);
    let sub = subscriber(&p, presentation(true, true));
    assert!(matches!(
        sub.end_access(),
        Err(Error::PreconditionNotMet(_))
    ));
    // Ordered only: no coherent sets to begin.
    let publ = publisher(&p, presentation(false, true));
    assert!(matches!(
        publ.begin_coherent_changes(),
        Err(Error::PreconditionNotMet(_))
    ));
    assert!(matches!(
        publ.end_coherent_changes(),
        Err(Error::PreconditionNotMet(_))
    ));
}
