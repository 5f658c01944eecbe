//! The user guide's getting-started example (docs/guide/getting-started.md shows it word for
//! word without these `//!` lines; `tests/guide.rs` checks that and runs it).
use std::time::{Duration, Instant};
use tessera::qos::{DataReaderQos, DataWriterQos, Durability, History, Reliability, TopicQos};
use tessera::transport::InProcessNetwork;
use tessera::{DomainParticipant, ParticipantConfig, TopicType};

#[derive(TopicType, Debug, Clone, PartialEq)]
struct Reading {
    #[key]
    sensor: u32,
    celsius: f64,
}

/// Public so that `tests/guide.rs` can run it as well.
pub fn main() -> tessera::Result<()> {
    // Two participants, as two applications would have, on an in-process network so the
    // example sends nothing on the machine's interfaces. For the real network, create them
    // with `DomainParticipant::new(0)` instead.
    let net = InProcessNetwork::new();
    let join = || {
        let config = ParticipantConfig::with_in_process(net.clone());
        DomainParticipant::with_qos(0, Default::default(), config)
    };
    let (app_a, app_b) = (join()?, join()?);

    let reliable = Reliability::reliable(Duration::from_secs(1));
    let topic_a = app_a.create_topic::<Reading>("Temperature", TopicQos::default())?;
    let writer = app_a
        .create_publisher(Default::default())?
        .create_datawriter(
            &topic_a,
            DataWriterQos::default()
                .with_reliability(reliable)
                .with_durability(Durability::TransientLocal)
                .with_history(History::KeepLast(1)),
        )?;
    for sensor in 1..=3 {
        let celsius = 20.0 + f64::from(sensor) / 2.0;
        writer.write(&Reading { sensor, celsius })?;
    }

    // A late joiner: TRANSIENT_LOCAL gives it the last sample of each instance (sensor).
    let topic_b = app_b.create_topic::<Reading>("Temperature", TopicQos::default())?;
    let reader = app_b
        .create_subscriber(Default::default())?
        .create_datareader(
            &topic_b,
            DataReaderQos::default()
                .with_reliability(reliable)
                .with_durability(Durability::TransientLocal),
        )?;

    let deadline = Instant::now() + Duration::from_secs(10);
    let mut got = Vec::new();
    while got.len() < 3 && Instant::now() < deadline {
        for sample in reader.take(16)? {
            if let Some(reading) = sample.data {
                println!("{reading:?}");
                got.push(reading);
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(got.len(), 3, "the late joiner got every instance");
    Ok(())
}
