//! An XTypes peer for tests/interop/xtypes_cyclone_py.sh: publishes or subscribes an
//! `@appendable` ShapeType and an `@mutable` type with an `@optional` member, in XCDR2, and
//! prints what it sends or receives one line a sample.
//!
//!   xtypes_peer pub SECONDS | xtypes_peer sub SECONDS
use std::time::{Duration, Instant};
use tessera::qos::{
    data_representation, DataReaderQos, DataRepresentation, DataWriterQos, Reliability, TopicQos,
};
use tessera::DomainParticipant;

mod types;
use types::{Mut, Shape};

fn main() -> tessera::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let mode = args.get(1).map(String::as_str).unwrap_or("pub");
    let secs: f64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(5.0);
    let p = DomainParticipant::new(0)?;
    let shape = p.create_topic::<Shape>("XtShape", TopicQos::default())?;
    let mutt = p.create_topic::<Mut>("XtMut", TopicQos::default())?;
    let reliable = Reliability::reliable(Duration::from_secs(1));
    let end = Instant::now() + Duration::from_secs_f64(secs);
    if mode == "pub" {
        let qos = DataWriterQos::default()
            .with_reliability(reliable)
            .with_data_representation(DataRepresentation(vec![data_representation::XCDR2]));
        let publisher = p.create_publisher(Default::default())?;
        let ws = publisher.create_datawriter(&shape, qos.clone())?;
        let wm = publisher.create_datawriter(&mutt, qos)?;
        let mut i = 0i32;
        while Instant::now() < end {
            let s = Shape {
                color: "BLUE".into(),
                x: i,
                y: 2 * i,
                shapesize: 30,
                additional_payload_size: vec![i as u8; 3],
            };
            let m = Mut {
                id: i % 3,
                text: format!("t{i}"),
                maybe: (i % 2 == 0).then_some(i64::from(i) * 1000),
                list: vec![i, -i],
            };
            ws.write(&s)?;
            wm.write(&m)?;
            println!("sent {s:?} {m:?}");
            i += 1;
            std::thread::sleep(Duration::from_millis(100));
        }
        return Ok(());
    }
    let qos = DataReaderQos::default()
        .with_reliability(reliable)
        .with_data_representation(DataRepresentation(vec![
            data_representation::XCDR2,
            data_representation::XCDR,
        ]));
    let sub = p.create_subscriber(Default::default())?;
    let rs = sub.create_datareader(&shape, qos.clone())?;
    let rm = sub.create_datareader(&mutt, qos)?;
    let (mut bs, mut bm) = (Vec::new(), Vec::new());
    while Instant::now() < end {
        bs.clear();
        bm.clear();
        rs.take_into(&mut bs, 64);
        rm.take_into(&mut bm, 64);
        for d in bs.iter().filter_map(|s| s.data.as_ref()) {
            println!("got {d:?}");
        }
        for d in bm.iter().filter_map(|s| s.data.as_ref()) {
            println!("got {d:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}
