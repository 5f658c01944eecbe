//! The ROS 2 interfaces of the IDL corpus (`crates/tessera-idl/tests/idl/ros2/`, as
//! `rosidl_adapter` writes them), compiled by `tessera idl --ros2-names` into
//! `crates/tessera-idl/tests/golden/ros2.rs`: the Rust builds, the types carry the names ROS 2
//! nodes use over DDS, and their samples are the bytes a ROS 2 node sends (plain CDR, XCDR1
//! little-endian, final structs), worked out by hand below.

use tessera::rtps::cdr::{deserialize_sample, serialize_sample, Encoding};
use tessera::TopicType;

#[allow(dead_code, clippy::all)]
mod ros2 {
    include!("../../tessera-idl/tests/golden/ros2.rs");
}
use ros2::{builtin_interfaces, geometry_msgs, sensor_msgs, std_msgs};

/// The XCDR1 little-endian encapsulation header.
const CDR_LE: [u8; 4] = [0x00, 0x01, 0x00, 0x00];

fn encode<T: TopicType>(v: &T) -> Vec<u8> {
    let mut bytes = vec![];
    serialize_sample(v, Encoding::XCDR1_LE, &mut bytes);
    bytes
}

fn doubles(v: &[f64]) -> Vec<u8> {
    v.iter().flat_map(|d| d.to_le_bytes()).collect()
}

fn header(frame: &str) -> std_msgs::msg::Header {
    std_msgs::msg::Header {
        stamp: builtin_interfaces::msg::Time { sec: 1, nanosec: 2 },
        frame_id: frame.into(),
    }
}

#[test]
fn type_names_are_ros2s_dds_names() {
    assert_eq!(
        std_msgs::msg::Header::TYPE_NAME,
        "std_msgs::msg::dds_::Header_"
    );
    assert_eq!(
        geometry_msgs::msg::PoseStamped::TYPE_NAME,
        "geometry_msgs::msg::dds_::PoseStamped_"
    );
    assert_eq!(
        sensor_msgs::msg::Imu::TYPE_NAME,
        "sensor_msgs::msg::dds_::Imu_"
    );
    assert_eq!(
        builtin_interfaces::msg::Duration::TYPE_NAME,
        "builtin_interfaces::msg::dds_::Duration_"
    );
    assert_eq!(sensor_msgs::msg::PointField_Constants::FLOAT64, 8u8);
    const { assert!(!sensor_msgs::msg::PointCloud2::KEYED) };
}

#[test]
fn header_bytes() {
    let h = header("map");
    let bytes = encode(&h);
    #[rustfmt::skip]
    let want = [
        CDR_LE.as_slice(),
        &[1, 0, 0, 0],              // stamp.sec
        &[2, 0, 0, 0],              // stamp.nanosec
        &[4, 0, 0, 0],              // frame_id: length with the NUL
        b"map\0",
    ]
    .concat();
    assert_eq!(bytes, want);
    assert_eq!(deserialize_sample::<std_msgs::msg::Header>(&bytes), Ok(h));
}

#[test]
fn pose_stamped_bytes_align_doubles_to_eight() {
    use geometry_msgs::msg::{Point, Pose, PoseStamped, Quaternion};
    let p = PoseStamped {
        header: header("base"),
        pose: Pose {
            position: Point {
                x: 1.0,
                y: 2.0,
                z: 3.0,
            },
            orientation: Quaternion {
                x: 0.0,
                y: 0.0,
                z: 0.0,
                w: 1.0,
            },
        },
    };
    let bytes = encode(&p);
    #[rustfmt::skip]
    let want = [
        CDR_LE.as_slice(),
        &[1, 0, 0, 0, 2, 0, 0, 0],
        &[5, 0, 0, 0],
        b"base\0",                  // ends at offset 17 of the body
        &[0; 7],                    // position.x is 8-aligned: offset 24
        &[0, 0, 0, 0, 0, 0, 0xf0, 0x3f], // 1.0
        &[0, 0, 0, 0, 0, 0, 0x00, 0x40], // 2.0
        &[0, 0, 0, 0, 0, 0, 0x08, 0x40], // 3.0
        &[0; 24],                   // orientation x, y, z = 0.0
        &[0, 0, 0, 0, 0, 0, 0xf0, 0x3f], // w = 1.0
    ]
    .concat();
    assert_eq!(bytes.len(), 4 + 80);
    assert_eq!(bytes, want);
    assert_eq!(
        deserialize_sample::<geometry_msgs::msg::PoseStamped>(&bytes),
        Ok(p)
    );
}

#[test]
fn imu_bytes_with_the_typedef_arrays() {
    use geometry_msgs::msg::{Quaternion, Vector3};
    let cov = |k: f64| -> [f64; 9] { std::array::from_fn(|i| k + i as f64) };
    let imu = sensor_msgs::msg::Imu {
        header: header("imu_link"),
        orientation: Quaternion {
            x: 0.5,
            y: -0.5,
            z: 0.25,
            w: 1.0,
        },
        orientation_covariance: cov(10.0),
        angular_velocity: Vector3 {
            x: 0.1,
            y: 0.2,
            z: 0.3,
        },
        angular_velocity_covariance: cov(20.0),
        linear_acceleration: Vector3 {
            x: 0.0,
            y: 0.0,
            z: 9.81,
        },
        linear_acceleration_covariance: cov(30.0),
    };
    let bytes = encode(&imu);
    #[rustfmt::skip]
    let want = [
        CDR_LE.as_slice(),
        &[1, 0, 0, 0, 2, 0, 0, 0],
        &[9, 0, 0, 0],
        b"imu_link\0",              // ends at 21
        &[0; 3],                    // doubles from 24: no length prefix on the arrays
        &doubles(&[0.5, -0.5, 0.25, 1.0]),
        &doubles(&cov(10.0)),
        &doubles(&[0.1, 0.2, 0.3]),
        &doubles(&cov(20.0)),
        &doubles(&[0.0, 0.0, 9.81]),
        &doubles(&cov(30.0)),
    ]
    .concat();
    assert_eq!(bytes.len(), 4 + 24 + (4 + 9 + 3 + 9 + 3 + 9) * 8);
    assert_eq!(bytes, want);
    // -0.5 as IEEE 754: sign bit and the exponent of 0.5.
    assert_eq!(bytes[4 + 32..4 + 40], [0, 0, 0, 0, 0, 0, 0xe0, 0xbf]);
    assert_eq!(deserialize_sample::<sensor_msgs::msg::Imu>(&bytes), Ok(imu));
}

#[test]
fn the_other_ros2_types_round_trip() {
    use sensor_msgs::msg::{PointCloud2, PointField, PointField_Constants as F};
    let cloud = PointCloud2 {
        header: header("lidar"),
        height: 1,
        width: 2,
        fields: vec![PointField {
            name: "x".into(),
            offset: 0,
            datatype: F::FLOAT32,
            count: 1,
        }],
        is_bigendian: false,
        point_step: 4,
        row_step: 8,
        data: vec![0, 0, 0x80, 0x3f, 0, 0, 0, 0x40],
        is_dense: true,
    };
    let bytes = encode(&cloud);
    assert_eq!(deserialize_sample::<PointCloud2>(&bytes), Ok(cloud));
    let arr = std_msgs::msg::Float64MultiArray {
        layout: std_msgs::msg::MultiArrayLayout {
            dim: vec![std_msgs::msg::MultiArrayDimension {
                label: "rows".into(),
                size: 2,
                stride: 2,
            }],
            data_offset: 0,
        },
        data: vec![1.5, 2.5],
    };
    let bytes = encode(&arr);
    assert_eq!(
        deserialize_sample::<std_msgs::msg::Float64MultiArray>(&bytes),
        Ok(arr)
    );
    let scan = sensor_msgs::msg::LaserScan {
        header: header("laser"),
        angle_min: -1.0,
        angle_max: 1.0,
        angle_increment: 0.5,
        time_increment: 0.0,
        scan_time: 0.1,
        range_min: 0.1,
        range_max: 10.0,
        ranges: vec![1.0, 2.0, 3.0, 4.0, 5.0],
        intensities: vec![],
    };
    let bytes = encode(&scan);
    assert_eq!(
        deserialize_sample::<sensor_msgs::msg::LaserScan>(&bytes),
        Ok(scan)
    );
}
