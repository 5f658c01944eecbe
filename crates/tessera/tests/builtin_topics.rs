//! The built-in topics, `ignore_*` and `get_matched_*_data`, as a user meets them, over the
//! in-process transport.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tessera::qos::{
    DataReaderQos, DataWriterQos, Deadline, DomainParticipantQos, Durability, History, Partition,
    PublisherQos, Reliability, SubscriberQos, TopicQos, UserData,
};
use tessera::rtps::discovery::{PublicationBuiltinTopicData, TopicBuiltinTopicData};
use tessera::transport::InProcessNetwork;
use tessera::{
    DataReader, DataReaderListener, DataWriter, DomainParticipant, InstanceState,
    ParticipantConfig, TopicType,
};

#[derive(TopicType, Debug, Clone, PartialEq)]
struct Reading {
    #[key]
    sensor: u32,
    seq: u32,
}

fn participant(net: &InProcessNetwork, user_data: &[u8]) -> DomainParticipant {
    let qos = DomainParticipantQos {
        user_data: UserData(user_data.to_vec()),
        ..Default::default()
    };
    DomainParticipant::with_qos(0, qos, ParticipantConfig::with_in_process(net.clone())).unwrap()
}

fn writer(p: &DomainParticipant, topic: &str, qos: DataWriterQos) -> DataWriter<Reading> {
    let t = p
        .create_topic::<Reading>(topic, TopicQos::default())
        .unwrap();
    p.create_publisher(PublisherQos::default().with_partition(Partition::new(["p1"])))
        .unwrap()
        .create_datawriter(&t, qos)
        .unwrap()
}

fn reader(p: &DomainParticipant, topic: &str) -> DataReader<Reading> {
    let t = p
        .create_topic::<Reading>(topic, TopicQos::default())
        .unwrap();
    let qos = DataReaderQos::default()
        .with_reliability(Reliability::reliable(Duration::from_secs(1)))
        .with_history(History::KeepAll);
    p.create_subscriber(SubscriberQos::default().with_partition(Partition::new(["p1"])))
        .unwrap()
        .create_datareader(&t, qos)
        .unwrap()
}

/// Polls `f` until it returns `Some`, for up to 10 s.
fn eventually<R>(what: &str, mut f: impl FnMut() -> Option<R>) -> R {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(r) = f() {
            return r;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The data and instance state of every instance a reader holds, read (not taken).
fn instances<T: TopicType + Clone>(r: &DataReader<T>) -> Vec<(Option<T>, InstanceState)> {
    // One entry per instance: its newest valid data (a dispose may add a sample without
    // data) and its state.
    let mut out: Vec<(tessera::InstanceHandle, Option<T>, InstanceState)> = Vec::new();
    for s in r.read(1000).unwrap() {
        let h = s.info.instance_handle;
        match out.iter_mut().find(|e| e.0 == h) {
            Some(e) => {
                if s.data.is_some() {
                    e.1 = s.data;
                }
                e.2 = s.info.instance_state;
            }
            None => out.push((h, s.data, s.info.instance_state)),
        }
    }
    out.into_iter().map(|(_, d, st)| (d, st)).collect()
}

#[test]
fn remote_entities_appear_update_and_leave() {
    let net = InProcessNetwork::new();
    let a = participant(&net, b"observer");
    let builtin = a.get_builtin_subscriber();
    let parts = builtin.participant_reader();
    let pubs = builtin.publication_reader();
    let subs = builtin.subscription_reader();
    let topics = builtin.topic_reader();

    let b = participant(&net, b"peer b");
    let p = eventually("DCPSParticipant", || {
        instances(&parts).into_iter().find_map(|(d, _)| d)
    });
    assert_eq!(p.key, b.guid());
    assert_eq!(p.user_data, b"peer b");

    let qos = DataWriterQos::default()
        .with_deadline(Deadline {
            period: Duration::from_millis(500),
        })
        .with_durability(Durability::TransientLocal);
    let w = writer(&b, "temperature", qos.clone());
    let r = reader(&b, "pressure");
    let pd = eventually("DCPSPublication", || {
        instances(&pubs).into_iter().find_map(|(d, _)| d)
    });
    assert_eq!(pd.key, w.guid());
    assert_eq!(pd.participant_key, b.guid());
    assert_eq!(pd.topic_name, "temperature");
    assert_eq!(pd.type_name, "Reading");
    assert_eq!(pd.qos.deadline.period, Duration::from_millis(500));
    assert_eq!(pd.qos.durability, Durability::TransientLocal);
    assert_eq!(pd.qos.partition, Partition::new(["p1"]));
    assert!(pd.type_information.is_some());
    let sd = eventually("DCPSSubscription", || {
        instances(&subs).into_iter().find_map(|(d, _)| d)
    });
    assert_eq!(sd.key, r.guid());
    assert_eq!(sd.topic_name, "pressure");
    let mut names = eventually("two DCPSTopic samples", || {
        let t: Vec<TopicBuiltinTopicData> = instances(&topics)
            .into_iter()
            .filter_map(|(d, _)| d)
            .collect();
        (t.len() == 2).then_some(t)
    });
    names.sort_by(|x, y| x.name.cmp(&y.name));
    assert_eq!(names[0].name, "pressure");
    assert_eq!(names[1].name, "temperature");
    assert_eq!(names[1].qos.durability, Durability::TransientLocal);
    assert_eq!(
        names[1].key,
        TopicBuiltinTopicData::key_of("temperature", "Reading")
    );

    // A re-announcement (a changed deadline) updates the instance; it is not a second one.
    w.set_qos(qos.with_deadline(Deadline {
        period: Duration::from_millis(200),
    }))
    .unwrap();
    eventually("the updated DCPSPublication", || {
        let all = instances(&pubs);
        assert_eq!(all.len(), 1, "one instance per writer: {all:?}");
        let period = all[0].0.as_ref().map(|d| d.qos.deadline.period);
        (period == Some(Duration::from_millis(200))).then_some(())
    });

    // A deleted writer is disposed, and so is its topic, which nobody else uses.
    drop(w);
    eventually("the disposed DCPSPublication", || {
        let all = instances(&pubs);
        (all.len() == 1 && all[0].1 == InstanceState::NotAliveDisposed).then_some(())
    });
    eventually("the disposed DCPSTopic", || {
        instances(&topics)
            .iter()
            .any(|(_, st)| *st == InstanceState::NotAliveDisposed)
            .then_some(())
    });

    // A participant that leaves is disposed, with its endpoints.
    drop(r);
    drop(b);
    eventually("the disposed DCPSParticipant", || {
        let all = instances(&parts);
        (all.len() == 1 && all[0].1 == InstanceState::NotAliveDisposed).then_some(())
    });
    eventually("the disposed DCPSSubscription", || {
        let all = instances(&subs);
        (all.len() == 1 && all[0].1 == InstanceState::NotAliveDisposed).then_some(())
    });
}

#[test]
fn a_late_builtin_subscriber_sees_what_is_already_known() {
    let net = InProcessNetwork::new();
    let a = participant(&net, b"");
    let b = participant(&net, b"");
    let w = writer(&b, "late", DataWriterQos::default());
    let r = reader(&a, "late");
    eventually("a match", || {
        (!r.matched_publications().is_empty()).then_some(())
    });
    let pubs = a.get_builtin_subscriber().publication_reader();
    let all = instances(&pubs);
    assert_eq!(all.len(), 1);
    assert_eq!(all[0].0.as_ref().unwrap().key, w.guid());
    assert_eq!(
        instances(&a.get_builtin_subscriber().participant_reader()).len(),
        1
    );
    // Its own endpoints are not shown.
    assert!(instances(&a.get_builtin_subscriber().subscription_reader()).is_empty());
}

/// A listener on DCPSPublication that creates a reader for every new topic it sees: it runs
/// with no lock of the participant held, so creating entities there does not deadlock.
struct Follow {
    participant: DomainParticipant,
    made: Mutex<Vec<(String, DataReader<Reading>)>>,
}

impl DataReaderListener<PublicationBuiltinTopicData> for Follow {
    fn on_data_available(&self, r: &DataReader<PublicationBuiltinTopicData>) {
        for s in r.take(100).unwrap() {
            let Some(d) = s.data else { continue };
            let mut made = self.made.lock().unwrap();
            if made.iter().all(|(t, _)| *t != d.topic_name) {
                made.push((
                    d.topic_name.clone(),
                    reader(&self.participant, &d.topic_name),
                ));
            }
        }
    }
}

#[test]
fn a_listener_creates_a_reader_for_every_new_topic() {
    let net = InProcessNetwork::new();
    let a = participant(&net, b"");
    let follow = Arc::new(Follow {
        participant: a.clone(),
        made: Mutex::new(Vec::new()),
    });
    a.get_builtin_subscriber()
        .publication_reader()
        .set_listener(Some(follow.clone()));
    let b = participant(&net, b"");
    let writers: Vec<_> = ["t1", "t2", "t3"]
        .iter()
        .map(|t| writer(&b, t, DataWriterQos::default()))
        .collect();
    eventually("three readers, each matched", || {
        let made = follow.made.lock().unwrap();
        (made.len() == 3
            && made
                .iter()
                .all(|(_, r)| r.matched_publications().len() == 1))
        .then_some(())
    });
    // Volatile writers: write once they know the readers too.
    eventually("the writers' matches", || {
        writers
            .iter()
            .all(|w| w.matched_subscriptions().len() == 1)
            .then_some(())
    });
    for (i, w) in writers.iter().enumerate() {
        w.write(&Reading {
            sensor: i as u32,
            seq: 7,
        })
        .unwrap();
    }
    let made: Vec<_> = follow.made.lock().unwrap().clone();
    for (_, r) in &made {
        eventually("the sample", || {
            (!r.take(10).unwrap().is_empty()).then_some(())
        });
    }
    drop(follow.made.lock().unwrap().drain(..));
}

#[test]
fn matched_data_is_what_the_peer_announced() {
    let net = InProcessNetwork::new();
    let a = participant(&net, b"");
    let b = participant(&net, b"");
    let qos = DataWriterQos::default().with_deadline(Deadline {
        period: Duration::from_millis(300),
    });
    let w = writer(&b, "m", qos);
    let r = reader(&a, "m");
    let wg = eventually("a match", || r.matched_publications().first().copied());
    assert_eq!(wg, w.guid());
    let pd = r.get_matched_publication_data(wg).unwrap();
    assert_eq!(pd.topic_name, "m");
    assert_eq!(pd.qos.deadline.period, Duration::from_millis(300));
    let rg = eventually("the writer's match", || {
        w.matched_subscriptions().first().copied()
    });
    let sd = w.get_matched_subscription_data(rg).unwrap();
    assert_eq!(sd.key, r.guid());
    assert_eq!(sd.qos.history, History::KeepAll);
    // A handle that is not matched is refused.
    assert!(matches!(
        r.get_matched_publication_data(r.guid()),
        Err(tessera::Error::BadParameter(_))
    ));
    // The writer knows the instances it wrote.
    let s = Reading { sensor: 4, seq: 0 };
    assert!(w.lookup_instance(&s).is_none());
    w.write(&s).unwrap();
    assert!(w.lookup_instance(&s).is_some());
    // The reader gives an instance's key back without changing its samples' states.
    let h = eventually("the sample", || r.lookup_instance(&s));
    assert_eq!(r.get_key_value(h).unwrap().sensor, 4);
    let got = r.take(10).unwrap();
    assert_eq!(got.len(), 1, "get_key_value took or hid the sample");
    assert_eq!(got[0].info.sample_state, tessera::SampleState::NotRead);
    assert!(matches!(r.get_key_value(h), Err(tessera::Error::NoData)));
    assert!(matches!(
        r.get_key_value(tessera::InstanceHandle::from_raw(12345)),
        Err(tessera::Error::BadParameter(_))
    ));
}

#[test]
fn an_ignored_participant_never_matches_and_its_data_is_dropped() {
    let net = InProcessNetwork::new();
    let a = participant(&net, b"");
    let b = participant(&net, b"");
    let w = writer(&b, "ig", DataWriterQos::default());
    let r = reader(&a, "ig");
    eventually("a match", || {
        (!r.matched_publications().is_empty()).then_some(())
    });
    let parts = a.get_builtin_subscriber().participant_reader();
    assert_eq!(instances(&parts).len(), 1);
    a.ignore_participant(b.guid()).unwrap();
    // The match ends at once; the built-in reader shows it gone.
    assert!(r.matched_publications().is_empty());
    assert_eq!(r.subscription_matched_status().current_count, 0);
    assert_eq!(instances(&parts)[0].1, InstanceState::NotAliveDisposed);
    w.write(&Reading { sensor: 1, seq: 1 }).unwrap();
    // A new writer of the ignored participant does not match either.
    let w2 = writer(&b, "ig", DataWriterQos::default());
    w2.write(&Reading { sensor: 2, seq: 1 }).unwrap();
    // ... whereas a third participant's does.
    let c = participant(&net, b"");
    let w3 = writer(&c, "ig", DataWriterQos::default());
    eventually("the third participant's match", || {
        (r.matched_publications() == vec![w3.guid()]).then_some(())
    });
    std::thread::sleep(Duration::from_millis(100));
    assert!(r.take(10).unwrap().is_empty());
    assert!(a.ignored_count() > 0);
    assert!(a.ignore_participant(a.guid()).is_err());
}

#[test]
fn an_ignored_publication_ends_its_match_only() {
    let net = InProcessNetwork::new();
    let a = participant(&net, b"");
    let b = participant(&net, b"");
    let w1 = writer(&b, "ip", DataWriterQos::default());
    let w2 = writer(&b, "ip", DataWriterQos::default());
    let r = reader(&a, "ip");
    eventually("two matches", || {
        (r.matched_publications().len() == 2 && w2.matched_subscriptions() == vec![r.guid()])
            .then_some(())
    });
    a.ignore_publication(w1.guid()).unwrap();
    assert_eq!(r.matched_publications(), vec![w2.guid()]);
    assert!(a.ignore_publication(r.guid()).is_err());
    // Re-announced (set_qos), the ignored writer still does not match.
    w1.set_qos(DataWriterQos::default().with_deadline(Deadline {
        period: Duration::from_secs(5),
    }))
    .unwrap();
    w1.write(&Reading { sensor: 1, seq: 1 }).unwrap();
    w2.write(&Reading { sensor: 2, seq: 1 }).unwrap();
    let got = eventually("w2's sample", || {
        let s = r.take(10).unwrap();
        (!s.is_empty()).then_some(s)
    });
    std::thread::sleep(Duration::from_millis(100));
    let mut sensors: Vec<u32> = got
        .iter()
        .filter_map(|s| s.data.as_ref())
        .map(|d| d.sensor)
        .collect();
    sensors.extend(
        r.take(10)
            .unwrap()
            .iter()
            .filter_map(|s| s.data.as_ref())
            .map(|d| d.sensor),
    );
    assert_eq!(sensors, vec![2]);
    assert_eq!(r.matched_publications(), vec![w2.guid()]);
}

#[derive(Debug, Clone, Copy, PartialEq, tessera::TopicEnum)]
#[topic(type_name = "geo::Unit")]
enum Unit {
    Metre,
    Foot = 3,
}

#[derive(Debug, Clone, PartialEq, TopicType)]
#[topic(type_name = "geo::Point")]
struct Point {
    x: f64,
    unit: Unit,
}

#[derive(Debug, Clone, PartialEq, TopicType)]
#[topic(type_name = "geo::Track", extensibility = "appendable")]
struct Track {
    #[key]
    id: u32,
    points: Vec<Point>,
}

#[test]
fn a_peer_type_is_fetched_over_type_lookup_and_printed_as_idl() {
    let net = InProcessNetwork::new();
    let a = participant(&net, b"");
    let b = participant(&net, b"");
    let t = b
        .create_topic::<Track>("tracks", TopicQos::default())
        .unwrap();
    let _w = b
        .create_publisher(Default::default())
        .unwrap()
        .create_datawriter(&t, DataWriterQos::default())
        .unwrap();
    let pubs = a.get_builtin_subscriber().publication_reader();
    let pd = eventually("the writer", || {
        instances(&pubs).into_iter().find_map(|(d, _)| d)
    });
    let id = pd
        .type_information
        .unwrap()
        .complete
        .typeid_with_size
        .type_id
        .clone();
    // `a` has no such type: it comes from `b` over TypeLookup, with its dependencies.
    let objects = a.find_type(&id, Duration::from_secs(10)).unwrap();
    assert_eq!(objects.len(), 3, "{objects:?}");
    assert_eq!(objects[0].identifier(), id);
    let idl = tessera::rtps::xtypes::idl_print::to_idl(&objects[0], &|i| {
        objects.iter().find(|o| o.identifier() == *i).cloned()
    });
    let expect = "module geo {\n  enum Unit {\n    Metre,\n    @value(3) Foot\n  };\n};\n\
                  module geo {\n  @final\n  struct Point {\n    double x;\n    geo::Unit unit;\n  };\n};\n\
                  module geo {\n  @appendable\n  struct Track {\n    @key unsigned long id;\n    \
                  sequence<geo::Point> points;\n  };\n};\n";
    assert_eq!(idl, expect, "\n{idl}");
    // An identifier nobody has times out.
    let mut unknown = id.clone();
    if let tessera::rtps::xtypes::TypeIdentifier::Complete(h) = &mut unknown {
        h[0] ^= 0xff;
    }
    assert!(matches!(
        a.find_type(&unknown, Duration::from_millis(200)),
        Err(tessera::Error::Timeout)
    ));
}

#[test]
fn an_ignored_topic_leaves_the_builtin_readers_and_its_endpoints_never_match() {
    let net = InProcessNetwork::new();
    let a = participant(&net, b"");
    let b = participant(&net, b"");
    let w = writer(&b, "it", DataWriterQos::default());
    let other = writer(&b, "kept", DataWriterQos::default());
    let r = reader(&a, "it");
    let r2 = reader(&a, "kept");
    eventually("both matches", || {
        (r.matched_publications() == vec![w.guid()]
            && r2.matched_publications() == vec![other.guid()])
        .then_some(())
    });
    let builtin = a.get_builtin_subscriber();
    let key = TopicBuiltinTopicData::key_of("it", "Reading");
    a.ignore_topic(key).unwrap();
    assert!(r.matched_publications().is_empty());
    assert_eq!(r2.matched_publications(), vec![other.guid()]);
    let topics = instances(&builtin.topic_reader());
    assert_eq!(topics.len(), 2);
    for (d, st) in topics {
        let name = d.unwrap().name;
        let expect = if name == "it" {
            InstanceState::NotAliveDisposed
        } else {
            InstanceState::Alive
        };
        assert_eq!(st, expect, "{name}");
    }
    // A new writer on the ignored topic does not match; the writer re-announced neither.
    let w2 = writer(&b, "it", DataWriterQos::default());
    w.set_qos(DataWriterQos::default().with_deadline(Deadline {
        period: Duration::from_secs(9),
    }))
    .unwrap();
    w2.write(&Reading { sensor: 1, seq: 1 }).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    assert!(r.matched_publications().is_empty());
    assert!(r.take(10).unwrap().is_empty());
}

/// A type known by its name only: every sample is one instance, kept as bytes.
struct Opaque(&'static str);

impl tessera::TypeSupport for Opaque {
    fn type_name(&self) -> &str {
        self.0
    }
    fn is_keyed(&self) -> bool {
        true
    }
    fn key_hash_of_sample(
        &self,
        _: &[u8],
    ) -> std::result::Result<[u8; 16], tessera::rtps::cdr::CdrError> {
        Ok([0; 16])
    }
    fn key_hash_of_key(
        &self,
        _: &[u8],
    ) -> std::result::Result<[u8; 16], tessera::rtps::cdr::CdrError> {
        Ok([0; 16])
    }
}

#[test]
fn a_reader_made_from_a_type_support_receives_the_bytes() {
    let net = InProcessNetwork::new();
    let a = participant(&net, b"");
    let b = participant(&net, b"");
    let w = writer(&b, "opaque", DataWriterQos::default());
    let sub = a
        .create_subscriber(SubscriberQos::default().with_partition(Partition::new(["p1"])))
        .unwrap();
    let topic = a
        .create_untyped_topic("opaque", Arc::new(Opaque("Reading")), TopicQos::default())
        .unwrap();
    let r = sub
        .create_untyped_datareader_for(
            &topic,
            DataReaderQos::default().with_history(History::KeepAll),
        )
        .unwrap();
    // Both sides: a volatile writer that has not yet matched the reader writes to nobody.
    eventually("a match", || {
        (r.matched_publications() == vec![w.guid()] && w.matched_subscriptions() == vec![r.guid()])
            .then_some(())
    });
    w.write(&Reading { sensor: 3, seq: 9 }).unwrap();
    let got = eventually("the sample", || {
        let s = r.take_serialized(10, tessera::StateMasks::ANY).unwrap();
        (!s.is_empty()).then_some(s)
    });
    // Encapsulation header, then the two members (XCDR1 little-endian).
    assert_eq!(
        &got[0].data.as_ref().unwrap().as_bytes()[4..],
        &[3, 0, 0, 0, 9, 0, 0, 0]
    );
}
