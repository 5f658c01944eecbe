//! What a Tessera participant announces in PID_BUILTIN_ENDPOINT_SET must exist: claiming the
//! writer-liveliness (participant message) endpoints would make peers send to, and wait for, a
//! writer and reader that are not there.

use tessera_rtps::discovery::{BuiltinEndpointSet, SpdpParticipantData};
use tessera_rtps::types::GuidPrefix;

#[test]
fn tessera_announces_only_spdp_and_sedp_endpoints() {
    let implemented = BuiltinEndpointSet::PARTICIPANT_ANNOUNCER
        | BuiltinEndpointSet::PARTICIPANT_DETECTOR
        | BuiltinEndpointSet::PUBLICATIONS_ANNOUNCER
        | BuiltinEndpointSet::PUBLICATIONS_DETECTOR
        | BuiltinEndpointSet::SUBSCRIPTIONS_ANNOUNCER
        | BuiltinEndpointSet::SUBSCRIPTIONS_DETECTOR;
    assert_eq!(BuiltinEndpointSet::TESSERA_DEFAULT.0, implemented);
    let d = SpdpParticipantData::new(GuidPrefix([7; 12]));
    assert_eq!(d.builtin_endpoints, BuiltinEndpointSet::TESSERA_DEFAULT);
    let back = SpdpParticipantData::decode(&d.to_payload()).unwrap();
    assert!(!back
        .builtin_endpoints
        .contains(BuiltinEndpointSet::PARTICIPANT_MESSAGE_WRITER));
    assert!(!back
        .builtin_endpoints
        .contains(BuiltinEndpointSet::PARTICIPANT_MESSAGE_READER));
}
