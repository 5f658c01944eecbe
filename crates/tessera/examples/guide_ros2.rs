//! The user guide's ROS 2 example (docs/guide/idl.md shows it word for word without these `//!`
//! lines; `tests/guide.rs` checks that and runs it). The types are `tessera idl --ros2-names`'s
//! output for the IDL corpus's ROS 2 interfaces.
use std::time::Duration;
use tessera::qos::{DataReaderQos, Reliability, TopicQos};
use tessera::transport::InProcessNetwork;
use tessera::{DomainParticipant, ParticipantConfig, TopicType};

#[allow(dead_code, clippy::all)]
mod ros2 {
    // In a crate of your own: include!(concat!(env!("OUT_DIR"), "/all.rs")) after a build.rs
    // that calls tessera_idl::build_with(..., Options { ros2_names: true }).
    include!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tessera-idl/tests/golden/ros2.rs"
    ));
}
use ros2::{builtin_interfaces::msg::Time, geometry_msgs::msg as geo, std_msgs::msg::Header};

/// Public so that `tests/guide.rs` can run it as well.
pub fn main() -> tessera::Result<()> {
    // ROS 2's names: the DDS type of geometry_msgs/msg/PoseStamped, the topic /goal_pose.
    assert_eq!(
        geo::PoseStamped::TYPE_NAME,
        "geometry_msgs::msg::dds_::PoseStamped_"
    );
    let config = ParticipantConfig::with_in_process(InProcessNetwork::new());
    let participant = DomainParticipant::with_qos(0, Default::default(), config)?;
    let topic =
        participant.create_topic::<geo::PoseStamped>("rt/goal_pose", TopicQos::default())?;
    let reliable = Reliability::reliable(Duration::from_secs(1));
    let reader = participant
        .create_subscriber(Default::default())?
        .create_datareader(&topic, DataReaderQos::default().with_reliability(reliable))?;
    let writer = participant
        .create_publisher(Default::default())?
        .create_datawriter(&topic, Default::default())?;
    let goal = geo::PoseStamped {
        header: Header {
            stamp: Time {
                sec: 12,
                nanosec: 0,
            },
            frame_id: "map".into(),
        },
        pose: geo::Pose {
            position: geo::Point {
                x: 1.0,
                y: 2.0,
                z: 0.0,
            },
            orientation: geo::Quaternion {
                x: 0.0,
                y: 0.0,
                z: 0.0,
                w: 1.0,
            },
        },
    };
    writer.write(&goal)?;
    // The reader is in the writer's participant: the sample is there when `write` returns.
    let got = reader.take(1)?;
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].data.as_ref(), Some(&goal));
    println!("{:?}", got[0].data);
    Ok(())
}
