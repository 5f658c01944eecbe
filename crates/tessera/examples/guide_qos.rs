//! The user guide's QoS example (docs/guide/qos.md shows it word for word without these `//!`
//! lines; `tests/guide.rs` checks that and runs it).
use std::sync::Arc;
use std::time::Duration;
use tessera::qos::{Durability, History, TopicQos};
use tessera::qos_xml::QosProvider;
use tessera::transport::InProcessNetwork;
use tessera::{DomainParticipant, ParticipantConfig, TopicType};

#[derive(TopicType, Debug, Clone)]
struct Pose {
    #[key]
    robot: u32,
    x: f64,
    y: f64,
}

/// Public so that `tests/guide.rs` can run it as well.
pub fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The file is usually named by TESSERA_QOS_PROFILES=robot.xml; here it is given directly.
    let profiles = QosProvider::from_str(include_str!("guide_profiles.xml"))?;
    let wqos = profiles.datawriter_qos("Robot::State")?;
    assert_eq!(wqos.history, History::KeepLast(1)); // State's own depth
    assert_eq!(wqos.durability, Durability::TransientLocal);
    assert_eq!(wqos.deadline.period, Duration::from_secs(1));

    let config = ParticipantConfig {
        qos_profiles: Some(Arc::new(profiles)),
        ..ParticipantConfig::with_in_process(InProcessNetwork::new())
    };
    let participant = DomainParticipant::with_qos(0, Default::default(), config)?;
    let topic = participant.create_topic::<Pose>("RobotPose", TopicQos::default())?;
    let writer = participant
        .create_publisher(Default::default())?
        .create_datawriter_with_profile(&topic, "Robot::State")?;
    writer.write(&Pose {
        robot: 1,
        x: 0.5,
        y: 1.5,
    })?;
    // A typo in a profile name is an error, not the defaults.
    let missing = participant
        .create_subscriber(Default::default())?
        .create_datareader_with_profile(&topic, "Robot::Sate");
    assert!(missing.is_err());
    println!("wrote robot 1 with Robot::State: {:?}", wqos.durability);
    Ok(())
}
