//! Unit tests of the `ROS_DISCOVERY_SERVER` parsing.

use super::*;
use std::net::SocketAddr;

#[test]
fn ros_discovery_server_values() {
    let a = |s: &str| s.parse::<SocketAddr>().unwrap();
    assert_eq!(
        DiscoveryMode::parse("127.0.0.1:11811").unwrap(),
        DiscoveryMode::Client(vec![DiscoveryServer {
            id: 0,
            address: a("127.0.0.1:11811")
        }])
    );
    assert_eq!(
        DiscoveryMode::parse(";0.0.0.0;[::1]:7000").unwrap(),
        DiscoveryMode::Client(vec![
            DiscoveryServer {
                id: 1,
                address: a("127.0.0.1:11811")
            },
            DiscoveryServer {
                id: 2,
                address: a("[::1]:7000")
            },
        ])
    );
    let DiscoveryMode::Client(l) = DiscoveryMode::parse("localhost:7400").unwrap() else {
        panic!("a client")
    };
    assert!(l[0].address.ip().is_loopback());
    assert!(matches!(
        DiscoveryMode::parse(";;"),
        Err(crate::Error::BadParameter(_))
    ));
    assert!(DiscoveryMode::parse("1.2.3.4:99999").is_err());
}
