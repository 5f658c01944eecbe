//! Dynamic and untyped endpoints over the in-process transport (no sockets): a dynamic reader
//! of a typed writer and the reverse, the type discovered from a remote participant over
//! TypeLookup, and an untyped writer forwarding serialized samples.

use std::sync::Arc;
use std::time::Duration;

use tessera::qos::{DataReaderQos, DataWriterQos, Durability, History, Reliability, TopicQos};
use tessera::rtps::cdr::{serialize_sample, CdrType, Encoding};
use tessera::{DomainParticipant, DynamicType, DynamicValue as V, Error, InstanceState, TopicType};

mod support;
use support::{wait_until, Transport};

#[derive(Debug, Clone, Copy, PartialEq, tessera::TopicEnum)]
#[topic(type_name = "dyn::Mode")]
enum Mode {
    Off = 0,
    Fast = 4,
}

#[derive(Debug, Clone, PartialEq, TopicType)]
#[topic(type_name = "dyn::Pos", extensibility = "appendable")]
struct Pos {
    x: f64,
    y: f64,
}

#[derive(Debug, Clone, PartialEq, TopicType)]
#[topic(type_name = "dyn::Robot", extensibility = "mutable")]
struct Robot {
    #[key]
    id: u32,
    #[bound(16)]
    name: String,
    mode: Mode,
    path: Vec<Pos>,
    #[optional]
    battery: Option<f32>,
}

fn reliable_reader() -> DataReaderQos {
    DataReaderQos::default()
        .with_reliability(Reliability::reliable(Duration::from_secs(1)))
        .with_history(History::KeepAll)
}

fn reliable_writer() -> DataWriterQos {
    DataWriterQos::default().with_history(History::KeepAll)
}

fn robot(id: u32) -> Robot {
    Robot {
        id,
        name: format!("r{id}"),
        mode: Mode::Fast,
        path: vec![Pos { x: 1.0, y: 2.5 }],
        battery: (id % 2 == 0).then_some(0.5),
    }
}

fn robot_type() -> Arc<DynamicType> {
    Arc::new(DynamicType::from_desc(Robot::type_desc()).unwrap())
}

#[test]
fn typed_writer_to_dynamic_reader_and_back() {
    let ps = Transport::InProc.participants(2);
    let t0 = ps[0]
        .create_topic::<Robot>("robots", TopicQos::default())
        .unwrap();
    let w0 = ps[0]
        .create_publisher(Default::default())
        .unwrap()
        .create_datawriter(&t0, reliable_writer())
        .unwrap();
    let r0 = ps[0]
        .create_subscriber(Default::default())
        .unwrap()
        .create_datareader(&t0, reliable_reader())
        .unwrap();
    let ty = robot_type();
    let t1 = ps[1]
        .create_dynamic_topic("robots", ty.clone(), TopicQos::default())
        .unwrap();
    assert_eq!(t1.type_name(), "dyn::Robot");
    let r1 = ps[1]
        .create_subscriber(Default::default())
        .unwrap()
        .create_dynamic_datareader(&t1, reliable_reader())
        .unwrap();
    let w1 = ps[1]
        .create_publisher(Default::default())
        .unwrap()
        .create_dynamic_datawriter(&t1, reliable_writer())
        .unwrap();
    wait_until(5, "matches", || {
        !r1.untyped().matched_publications().is_empty()
            && !r0.matched_publications().is_empty()
            && w0.matched_subscriptions().len() == 2
            && w1.untyped().matched_subscriptions().len() == 2
    });

    // Typed → dynamic.
    for id in 0..3 {
        w0.write(&robot(id)).unwrap();
    }
    let mut got = Vec::new();
    wait_until(5, "dynamic samples", || {
        got.extend(r1.take(16).unwrap());
        got.len() == 3
    });
    for (id, s) in got.iter().enumerate() {
        let v = s.data.as_ref().unwrap();
        let mut bytes = Vec::new();
        serialize_sample(&robot(id as u32), Encoding::XCDR2_LE, &mut bytes);
        assert_eq!(ty.deserialize(&bytes).as_ref(), Ok(v));
    }
    assert_eq!(
        got[0].data.as_ref().unwrap().to_text(&ty),
        "Robot(id=0, name='r0', mode=Mode.Fast, path=[Pos(x=1.0, y=2.5)], battery=0.5)"
    );
    r0.take(16).unwrap();

    // Dynamic → typed: a sample built from JSON, then disposed.
    let json = serde_json_value(r#"{"id": 7, "name": "seven", "mode": "Off", "path": []}"#);
    let v = V::from_json(&ty, &json).unwrap();
    w1.write(&v).unwrap();
    let mut typed = Vec::new();
    wait_until(5, "typed sample", || {
        typed.extend(r0.take(16).unwrap());
        !typed.is_empty()
    });
    assert_eq!(
        typed[0].data,
        Some(Robot {
            id: 7,
            name: "seven".into(),
            mode: Mode::Off,
            path: vec![],
            battery: None
        })
    );
    w1.dispose(&v).unwrap();
    wait_until(5, "disposed", || {
        r0.take(16)
            .unwrap()
            .iter()
            .any(|s| s.info.instance_state == InstanceState::NotAliveDisposed)
    });
    // A value that does not fit is refused, naming the member.
    let mut bad = v.clone();
    if let V::Struct(f) = &mut bad {
        f[1] = Some(V::String("far too long for sixteen".into()));
    }
    match w1.write(&bad) {
        Err(Error::BadParameter(m)) => assert!(m.contains("name"), "{m}"),
        other => panic!("{other:?}"),
    }
}

fn serde_json_value(s: &str) -> tessera::rtps::xtypes::dynamic::serde_json::Value {
    tessera::rtps::xtypes::dynamic::serde_json::from_str(s).unwrap()
}

#[test]
fn discover_type_fetches_the_remote_writers_type() {
    let ps = Transport::InProc.participants(2);
    let t0 = ps[0]
        .create_topic::<Robot>("robots", TopicQos::default())
        .unwrap();
    let w0 = ps[0]
        .create_publisher(Default::default())
        .unwrap()
        .create_datawriter(
            &t0,
            reliable_writer().with_durability(Durability::TransientLocal),
        )
        .unwrap();
    w0.write(&robot(4)).unwrap();

    let ty = ps[1]
        .discover_type("robots", Duration::from_secs(5))
        .unwrap();
    assert_eq!(ty.name(), "dyn::Robot");
    let bundle = Robot::type_bundle();
    assert_eq!(ty.type_bundle().complete, bundle.complete);
    assert_eq!(ty.type_bundle().minimal, bundle.minimal);
    assert_eq!(ty.type_bundle().information, bundle.information);
    let names: Vec<_> = ty
        .struct_desc()
        .members
        .iter()
        .map(|m| m.name.as_str())
        .collect();
    assert_eq!(names, ["id", "name", "mode", "path", "battery"]);

    let t1 = ps[1]
        .create_dynamic_topic("robots", ty.clone(), TopicQos::default())
        .unwrap();
    let r1 = ps[1]
        .create_subscriber(Default::default())
        .unwrap()
        .create_dynamic_datareader(
            &t1,
            reliable_reader().with_durability(Durability::TransientLocal),
        )
        .unwrap();
    let mut got = Vec::new();
    wait_until(5, "the late joiner's sample", || {
        got.extend(r1.take(16).unwrap());
        !got.is_empty()
    });
    assert_eq!(
        got[0].data.as_ref().unwrap().to_json(&ty).to_string(),
        r#"{"battery":0.5,"id":4,"mode":"Fast","name":"r4","path":[{"x":1.0,"y":2.5}]}"#
    );
}

#[test]
fn discover_type_times_out_without_a_remote_endpoint() {
    let ps = Transport::InProc.participants(1);
    let t = std::time::Instant::now();
    assert!(matches!(
        ps[0].discover_type("nobody", Duration::from_millis(150)),
        Err(Error::Timeout)
    ));
    assert!(t.elapsed() < Duration::from_secs(2));
}

#[test]
fn untyped_writer_forwards_serialized_samples() {
    let ps: Vec<DomainParticipant> = Transport::InProc.participants(2);
    let t0 = ps[0]
        .create_topic::<Robot>("robots", TopicQos::default())
        .unwrap();
    let w = ps[0]
        .create_publisher(Default::default())
        .unwrap()
        .create_untyped_datawriter(&t0.untyped(), reliable_writer())
        .unwrap();
    let t1 = ps[1]
        .create_topic::<Robot>("robots", TopicQos::default())
        .unwrap();
    let r = ps[1]
        .create_subscriber(Default::default())
        .unwrap()
        .create_datareader(&t1, reliable_reader())
        .unwrap();
    wait_until(5, "match", || !w.matched_subscriptions().is_empty());
    // The writer's representation (the default QoS: XCDR1); readers take either.
    assert_eq!(w.encoding(), Encoding::XCDR1_LE);
    let mut bytes = Vec::new();
    serialize_sample(&robot(9), Encoding::XCDR2_BE, &mut bytes);
    w.write_serialized(&bytes).unwrap();
    assert!(matches!(
        w.write_serialized(&[0, 0x0b, 0, 0, 1]),
        Err(Error::BadParameter(_))
    ));
    assert!(matches!(
        w.write_serialized(&[1]),
        Err(Error::BadParameter(_))
    ));
    let mut got = Vec::new();
    wait_until(5, "forwarded sample", || {
        got.extend(r.take(16).unwrap());
        !got.is_empty()
    });
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].data, Some(robot(9)));
}

#[test]
fn discover_type_says_when_the_endpoints_announce_no_type_information() {
    let d = Transport::InProc.domain(0);
    let quiet = DomainParticipant::with_qos(
        0,
        Default::default(),
        tessera::ParticipantConfig {
            type_information: Some(false),
            ..d.config()
        },
    )
    .unwrap();
    let t = quiet
        .create_topic::<Robot>("robots", TopicQos::default())
        .unwrap();
    let _w = quiet
        .create_publisher(Default::default())
        .unwrap()
        .create_datawriter(&t, reliable_writer())
        .unwrap();
    let asker = d.join();
    match asker.discover_type("robots", Duration::from_millis(500)) {
        Err(Error::Unsupported(m)) => assert!(m.contains("no type information"), "{m}"),
        other => panic!("{other:?}"),
    }
}
