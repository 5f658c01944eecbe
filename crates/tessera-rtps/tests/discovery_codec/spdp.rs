//! SPDP participant data: Cyclone-shaped samples in both byte orders, defaults, required
//! parameters and the round trip.

use super::{cyclone_spdp, participant_guid, Raw, PREFIX};
use std::net::Ipv4Addr;
use std::time::Duration;

use tessera_rtps::discovery::*;
use tessera_rtps::types::{locator_kind, GuidPrefix, Locator};
use tessera_rtps::wire::pid;

#[test]
fn decodes_cyclone_spdp_le_and_be() {
    for le in [true, false] {
        let d = SpdpParticipantData::decode(&cyclone_spdp(le)).unwrap();
        assert_eq!(d.guid_prefix, GuidPrefix(PREFIX));
        assert_eq!((d.protocol_version.major, d.protocol_version.minor), (2, 1));
        assert_eq!(d.vendor_id.0, [0x01, 0x10]);
        assert_eq!(d.domain_id, Some(0));
        assert_eq!(d.lease_duration, Duration::from_secs(10));
        assert!(d.builtin_endpoints.contains(
            BuiltinEndpointSet::PARTICIPANT_ANNOUNCER
                | BuiltinEndpointSet::PUBLICATIONS_DETECTOR
                | BuiltinEndpointSet::SUBSCRIPTIONS_ANNOUNCER
                | BuiltinEndpointSet::PARTICIPANT_MESSAGE_READER
        ));
        let shm = Locator {
            kind: locator_kind::FASTDDS_SHM,
            port: 7777,
            address: [0; 16],
        };
        assert_eq!(
            d.default_unicast_locators,
            vec![Locator::udpv4(Ipv4Addr::LOCALHOST, 44123), shm],
            "the SHM locator is kept, not dropped"
        );
        assert_eq!(
            d.metatraffic_multicast_locators,
            vec![Locator::udpv4(Ipv4Addr::new(239, 255, 0, 1), 7400)]
        );
        assert_eq!(
            d.default_multicast_locators,
            vec![Locator::udpv4(Ipv4Addr::new(239, 255, 0, 1), 7401)]
        );
        assert_eq!(d.user_data, b"DDSPerf:0:1234:host");
        assert_eq!(d.entity_name.as_deref(), Some("ddsperf"));
    }
}

#[test]
fn spdp_minimal_and_defaults() {
    let b = Raw::new(true)
        .param(pid::PARTICIPANT_GUID, &participant_guid())
        .u32p(pid::BUILTIN_ENDPOINT_SET, 0x3f)
        .finish();
    let d = SpdpParticipantData::decode(&b).unwrap();
    assert_eq!(d.lease_duration, DEFAULT_PARTICIPANT_LEASE);
    assert_eq!(d.domain_id, None);
    assert!(d.user_data.is_empty());
    assert!(d.default_unicast_locators.is_empty());
}

#[test]
fn spdp_required_parameters() {
    let no_guid = Raw::new(true)
        .u32p(pid::BUILTIN_ENDPOINT_SET, 0x3f)
        .finish();
    assert_eq!(
        SpdpParticipantData::decode(&no_guid),
        Err(DiscoveryDecodeError::MissingParameter(
            pid::PARTICIPANT_GUID
        ))
    );
    let no_set = Raw::new(true)
        .param(pid::PARTICIPANT_GUID, &participant_guid())
        .finish();
    assert_eq!(
        SpdpParticipantData::decode(&no_set),
        Err(DiscoveryDecodeError::MissingParameter(
            pid::BUILTIN_ENDPOINT_SET
        ))
    );
    let mut wrong = participant_guid();
    wrong[15] = 0x02;
    let wrong_entity = Raw::new(true)
        .param(pid::PARTICIPANT_GUID, &wrong)
        .u32p(pid::BUILTIN_ENDPOINT_SET, 0x3f)
        .finish();
    assert_eq!(
        SpdpParticipantData::decode(&wrong_entity),
        Err(DiscoveryDecodeError::InvalidParameter(
            pid::PARTICIPANT_GUID
        ))
    );
}

#[test]
fn spdp_round_trip() {
    let mut d = SpdpParticipantData::new(GuidPrefix([7; 12]));
    d.domain_id = Some(3);
    d.domain_tag = "tag".into();
    d.lease_duration = Duration::from_millis(12_345);
    d.default_unicast_locators = vec![Locator::udpv4(Ipv4Addr::new(10, 0, 0, 1), 7411)];
    d.metatraffic_unicast_locators = vec![Locator::udpv4(Ipv4Addr::new(10, 0, 0, 1), 7410)];
    d.default_multicast_locators = vec![Locator::udpv4(Ipv4Addr::new(239, 255, 0, 1), 7401)];
    d.metatraffic_multicast_locators = vec![Locator::udpv4(Ipv4Addr::new(239, 255, 0, 1), 7400)];
    d.user_data = b"DDSPerf:1:42:box".to_vec();
    d.entity_name = Some("tessera".into());
    let bytes = d.to_payload();
    assert_eq!(&bytes[..4], &[0, 3, 0, 0]);
    assert_eq!(SpdpParticipantData::decode(&bytes), Ok(d));
}
