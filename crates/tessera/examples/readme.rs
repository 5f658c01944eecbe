//! The README's example, kept identical to it (`tests/readme.rs` checks) and run by
//! `tests/interop/readme_example.sh`.
use std::time::Duration;
use tessera::qos::{DataReaderQos, DataWriterQos, History, Reliability, TopicQos};
use tessera::{DomainParticipant, StateMasks, TopicType, WaitSet};

#[derive(TopicType, Debug, Clone)]
struct Reading {
    #[key]
    sensor: u32,
    celsius: f64,
}

fn main() -> tessera::Result<()> {
    let participant = DomainParticipant::new(0)?;
    let topic = participant.create_topic::<Reading>("Temperature", TopicQos::default())?;
    let reader = participant
        .create_subscriber(Default::default())?
        .create_datareader(
            &topic,
            DataReaderQos::default()
                .with_reliability(Reliability::reliable(Duration::from_secs(1))),
        )?;
    let writer = participant
        .create_publisher(Default::default())?
        .create_datawriter(
            &topic,
            DataWriterQos::default().with_history(History::KeepAll),
        )?;

    for sensor in 1..=3 {
        writer.write(&Reading {
            sensor,
            celsius: 20.0 + sensor as f64 / 2.0,
        })?;
    }

    // Sleep until the reader holds data, then take it (here, in the same participant, the
    // samples are already there when `write` returns; a remote reader would wait for the network).
    let mut waitset = WaitSet::new();
    waitset.attach(&reader.create_readcondition(StateMasks::ANY));
    let mut received = 0;
    while received < 3 {
        waitset.wait(Some(Duration::from_secs(5)))?;
        for sample in reader.take(16)? {
            println!("{:?} ({:?})", sample.data, sample.info.instance_state);
            received += 1;
        }
    }
    Ok(())
}
