//! PRESENTATION end to end over the in-process transport: coherent sets delivered all or
//! none (a late repair, a deleted writer, readers with and without coherent access, local
//! readers), ordered access across instances, and the API's misuse errors.

use std::time::{Duration, Instant};
use tessera::qos::{
    DataReaderQos, DataWriterQos, History, Presentation, PresentationAccessScope, PublisherQos,
    Reliability, SubscriberQos, TopicQos,
};
use tessera::transport::{FaultConfig, InProcessNetwork};
use tessera::{
    DataReader, DataWriter, DomainParticipant, Error, ParticipantConfig, Publisher, StateMasks,
    Subscriber, TopicType,
};

#[derive(TopicType, Debug, Clone, PartialEq)]
struct Part {
    #[key]
    item: u32,
    set: u32,
    text: String,
}

fn participant(net: &InProcessNetwork) -> DomainParticipant {
    DomainParticipant::with_qos(
        0,
        Default::default(),
        ParticipantConfig::with_in_process(net.clone()),
    )
    .unwrap()
}

fn presentation(scope: PresentationAccessScope, coherent: bool, ordered: bool) -> Presentation {
    Presentation {
        access_scope: scope,
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

fn wait_matched(w: &DataWriter<Part>, readers: &[&DataReader<Part>]) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while w.publication_matched_status().current_count < readers.len() as i32
        || readers
            .iter()
            .any(|r| r.subscription_matched_status().current_count == 0)
    {
        assert!(Instant::now() < deadline, "no match within 10 s");
        std::thread::sleep(Duration::from_millis(2));
    }
}

fn part(item: u32, set: u32, len: usize) -> Part {
    Part {
        item,
        set,
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

/// Takes until `n` items arrived (at most 10 s).
fn take_n(r: &DataReader<Part>, n: usize) -> Vec<u32> {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut got = Vec::new();
    while got.len() < n {
        assert!(
            Instant::now() < deadline,
            "got {:?}, expected {n} items",
            got
        );
        got.extend(take_items(r));
        std::thread::sleep(Duration::from_millis(2));
    }
    got
}

const TOPIC: PresentationAccessScope = PresentationAccessScope::Topic;

#[test]
fn a_set_appears_only_once_complete_and_readers_without_coherent_access_see_it_as_it_comes() {
    let net = InProcessNetwork::new();
    let pw = participant(&net);
    let pr = participant(&net);
    let publ = publisher(&pw, presentation(TOPIC, true, false));
    let w = writer(&pw, &publ, "Mixed");
    let coherent = reader(
        &pr,
        &subscriber(&pr, presentation(TOPIC, true, false)),
        "Mixed",
    );
    let plain = reader(&pr, &subscriber(&pr, Presentation::default()), "Mixed");
    wait_matched(&w, &[&coherent, &plain]);

    publ.begin_coherent_changes().unwrap();
    for i in 0..3 {
        w.write(&part(i, 1, 8)).unwrap();
    }
    // The reader without coherent access has them as they come; the other has nothing.
    assert_eq!(take_n(&plain, 3), [0, 1, 2]);
    std::thread::sleep(Duration::from_millis(100));
    assert!(take_items(&coherent).is_empty());
    publ.end_coherent_changes().unwrap();
    assert_eq!(take_n(&coherent, 3), [0, 1, 2]);
    // The marker is no sample for either reader.
    std::thread::sleep(Duration::from_millis(50));
    assert!(take_items(&plain).is_empty());
    assert_eq!(plain.undecodable_samples(), 0);
    assert_eq!(coherent.coherent_set_counters().sets_delivered, 1);
    // Samples outside a set pass straight through.
    w.write(&part(9, 0, 8)).unwrap();
    assert_eq!(take_n(&coherent, 1), [9]);
}

#[test]
fn a_set_whose_fragment_is_lost_appears_whole_after_the_repair() {
    let net = InProcessNetwork::new();
    let pw = participant(&net); // node 0
    let pr = participant(&net); // node 1
    let publ = publisher(&pw, presentation(TOPIC, true, false));
    let w = writer(&pw, &publ, "Repair");
    let r = reader(
        &pr,
        &subscriber(&pr, presentation(TOPIC, true, false)),
        "Repair",
    );
    wait_matched(&w, &[&r]);

    publ.begin_coherent_changes().unwrap();
    w.write(&part(0, 1, 8)).unwrap();
    // The middle sample is large (DATA_FRAGs) and every datagram to the reader is lost.
    let lossy = FaultConfig {
        loss_percent: 100.0,
        ..FaultConfig::default()
    };
    assert!(net.set_node_faults(1, lossy));
    w.write(&part(1, 1, 200_000)).unwrap();
    std::thread::sleep(Duration::from_millis(20));
    assert!(net.set_node_faults(1, FaultConfig::default()));
    w.write(&part(2, 1, 8)).unwrap();
    publ.end_coherent_changes().unwrap();
    // Until the repair arrives nothing is visible; then all three at once.
    let deadline = Instant::now() + Duration::from_secs(10);
    let got = loop {
        let got = take_items(&r);
        if !got.is_empty() {
            break got;
        }
        assert!(Instant::now() < deadline, "the set never arrived");
        std::thread::sleep(Duration::from_millis(1));
    };
    assert_eq!(got, [0, 1, 2]);
    assert!(r.protocol_counters().delivered >= 4);
    assert_eq!(r.coherent_set_counters().sets_dropped, 0);
}

#[test]
fn a_set_abandoned_by_a_deleted_writer_never_appears() {
    let net = InProcessNetwork::new();
    let pw = participant(&net);
    let pr = participant(&net);
    let publ = publisher(&pw, presentation(TOPIC, true, false));
    let w = writer(&pw, &publ, "Abandoned");
    let r = reader(
        &pr,
        &subscriber(&pr, presentation(TOPIC, true, false)),
        "Abandoned",
    );
    wait_matched(&w, &[&r]);

    publ.begin_coherent_changes().unwrap();
    w.write(&part(0, 1, 8)).unwrap();
    w.write(&part(1, 1, 8)).unwrap();
    drop(w);
    let deadline = Instant::now() + Duration::from_secs(10);
    while r.subscription_matched_status().current_count != 0 {
        assert!(Instant::now() < deadline, "writer never unmatched");
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(Duration::from_millis(50));
    let data: Vec<_> = r
        .take(usize::MAX)
        .unwrap()
        .into_iter()
        .filter(|s| s.data.is_some())
        .collect();
    assert!(data.is_empty(), "partial set delivered: {data:?}");
    let c = r.coherent_set_counters();
    // Dropped: the two writes and the two unregistrations the deletion wrote into the
    // still open set.
    assert_eq!(
        (c.sets_delivered, c.sets_dropped, c.samples_dropped),
        (0, 1, 4)
    );
    // The publisher's bracket still closes.
    publ.end_coherent_changes().unwrap();
}

#[test]
fn local_readers_get_coherent_sets_whole_too() {
    let net = InProcessNetwork::new();
    let p = participant(&net);
    let publ = publisher(&p, presentation(TOPIC, true, false));
    let w = writer(&p, &publ, "Local");
    let r = reader(
        &p,
        &subscriber(&p, presentation(TOPIC, true, false)),
        "Local",
    );
    wait_matched(&w, &[&r]);
    publ.begin_coherent_changes().unwrap();
    publ.begin_coherent_changes().unwrap(); // nested: ends with the outer call
    w.write(&part(0, 1, 8)).unwrap();
    w.write(&part(1, 1, 8)).unwrap();
    publ.end_coherent_changes().unwrap();
    assert!(take_items(&r).is_empty());
    publ.end_coherent_changes().unwrap();
    assert_eq!(take_items(&r), [0, 1]);
}

#[test]
fn ordered_access_interleaves_the_instances_of_a_keyed_topic() {
    let net = InProcessNetwork::new();
    let pw = participant(&net);
    let pr = participant(&net);
    let publ = publisher(&pw, presentation(TOPIC, false, true));
    let w = writer(&pw, &publ, "Interleaved");
    let ordered = reader(
        &pr,
        &subscriber(&pr, presentation(TOPIC, false, true)),
        "Interleaved",
    );
    let by_instance = reader(
        &pr,
        &subscriber(&pr, Presentation::default()),
        "Interleaved",
    );
    wait_matched(&w, &[&ordered, &by_instance]);
    // Three instances (keys 0, 1, 2), written round robin; `set` = write order.
    for i in 0..9u32 {
        w.write(&Part {
            item: i % 3,
            set: i,
            text: String::new(),
        })
        .unwrap();
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    for r in [&ordered, &by_instance] {
        while r.read_with(usize::MAX, StateMasks::ANY).unwrap().len() < 9 {
            assert!(Instant::now() < deadline);
            std::thread::sleep(Duration::from_millis(2));
        }
    }
    let order = |r: &DataReader<Part>, max: usize| -> Vec<u32> {
        r.take_with(max, StateMasks::ANY)
            .unwrap()
            .into_iter()
            .filter_map(|s| s.data.map(|d| d.set))
            .collect()
    };
    // Without ordered access: instance by instance.
    assert_eq!(order(&by_instance, usize::MAX), [0, 3, 6, 1, 4, 7, 2, 5, 8]);
    // With it: the writer's order, also when taken a few at a time.
    assert_eq!(order(&ordered, 4), [0, 1, 2, 3]);
    assert_eq!(order(&ordered, usize::MAX), [4, 5, 6, 7, 8]);
}

#[test]
fn misuse_returns_typed_errors() {
    let net = InProcessNetwork::new();
    let p = participant(&net);
    let plain = publisher(&p, Presentation::default());
    assert!(matches!(
        plain.begin_coherent_changes(),
        Err(Error::PreconditionNotMet(_))
    ));
    let coherent = publisher(&p, presentation(TOPIC, true, false));
    assert!(matches!(
        coherent.end_coherent_changes(),
        Err(Error::PreconditionNotMet(_))
    ));
    coherent.begin_coherent_changes().unwrap();
    coherent.begin_coherent_changes().unwrap();
    coherent.end_coherent_changes().unwrap();
    coherent.end_coherent_changes().unwrap();
    assert!(matches!(
        coherent.end_coherent_changes(),
        Err(Error::PreconditionNotMet(_))
    ));
    let sub = subscriber(&p, presentation(TOPIC, true, true));
    assert!(matches!(
        sub.end_access(),
        Err(Error::PreconditionNotMet(_))
    ));
    sub.begin_access().unwrap();
    sub.begin_access().unwrap();
    sub.end_access().unwrap();
    sub.end_access().unwrap();
    assert!(matches!(
        sub.end_access(),
        Err(Error::PreconditionNotMet(_))
    ));
}

#[test]
fn a_content_filtered_coherent_reader_gets_the_sets_passing_samples() {
    // Writer-side filtering answers a filtered sample with a GAP: inside a coherent set that
    // would be a hole, and the reader would drop every set with a filtered sample.
    let net = InProcessNetwork::new();
    let pw = participant(&net);
    let pr = participant(&net);
    let publ = publisher(&pw, presentation(TOPIC, true, false));
    let w = writer(&pw, &publ, "Filtered");
    let t = pr
        .create_topic::<Part>("Filtered", TopicQos::default())
        .unwrap();
    let cft = pr
        .create_contentfilteredtopic("FilteredOdd", &t, "item > 10", Vec::new())
        .unwrap();
    let qos = DataReaderQos::default()
        .with_reliability(Reliability::reliable(Duration::from_secs(1)))
        .with_history(History::KeepAll);
    let r = subscriber(&pr, presentation(TOPIC, true, false))
        .create_datareader(&cft, qos)
        .unwrap();
    wait_matched(&w, &[&r]);
    // Let the writer learn the reader's filter (it comes with the reader's announcement).
    std::thread::sleep(Duration::from_millis(200));
    publ.begin_coherent_changes().unwrap();
    for i in [1, 11, 2, 12] {
        w.write(&part(i, 1, 8)).unwrap();
    }
    publ.end_coherent_changes().unwrap();
    assert_eq!(take_n(&r, 2), [11, 12]);
    assert_eq!(r.coherent_set_counters().sets_dropped, 0);
}

/// A reader without coherent access is sent a GAP for the end-of-set marker, not the marker
/// (a payload-less DATA that Fast DDS 2.9 delivers as a sample with the previous one's
/// contents), while a coherent reader beside it still gets the marker and the set.
#[test]
fn readers_without_coherent_access_get_a_gap_for_the_marker() {
    let net = InProcessNetwork::new();
    let (pw, pc, pp) = (participant(&net), participant(&net), participant(&net));
    let publ = publisher(&pw, presentation(TOPIC, true, false));
    let w = writer(&pw, &publ, "MarkerGap");
    let coherent = reader(
        &pc,
        &subscriber(&pc, presentation(TOPIC, true, false)),
        "MarkerGap",
    );
    let plain = reader(&pp, &subscriber(&pp, Presentation::default()), "MarkerGap");
    wait_matched(&w, &[&coherent, &plain]);
    for set in 1..=3 {
        publ.begin_coherent_changes().unwrap();
        for i in 0..2 {
            w.write(&part(10 * set + i, set, 8)).unwrap();
        }
        publ.end_coherent_changes().unwrap();
    }
    assert_eq!(take_n(&coherent, 6), [10, 11, 20, 21, 30, 31]);
    assert_eq!(take_n(&plain, 6), [10, 11, 20, 21, 30, 31]);
    w.wait_for_acknowledgments(Duration::from_secs(10)).unwrap();
    let c = w.protocol_counters();
    // One marker per set, filtered for the plain reader only.
    assert_eq!(c.samples_filtered, 3, "{c:?}");
    assert_eq!(coherent.coherent_set_counters().sets_delivered, 3);
}
