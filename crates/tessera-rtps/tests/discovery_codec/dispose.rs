//! Dispose and unregister messages: inline QoS and key payloads, encoded and decoded.

use super::{cyclone_sedp_writer_minimal, endpoint_guid, participant_guid, Raw};
use tessera_rtps::discovery::*;
use tessera_rtps::types::{entity_kind, EntityId, Guid};
use tessera_rtps::wire::{pid, ParameterList};

#[test]
fn dispose_forms() {
    let g = endpoint_guid(0x107, entity_kind::USER_WRITER_WITH_KEY);
    let mut q = Vec::new();
    encode_dispose_inline_qos(g, StatusInfo::DISPOSED_UNREGISTERED, &mut q);
    let mut k = Vec::new();
    encode_dispose_key_payload(BuiltinTopicKind::Endpoint, g, &mut k);
    let ql = ParameterList::parse(&q, true).unwrap();
    let (guid, st) = decode_dispose(BuiltinTopicKind::Endpoint, Some(&ql), &k).unwrap();
    assert_eq!(guid, g);
    assert!(st.is_disposed() && st.is_unregistered() && st.ends_instance());
    // Key hash only, no payload.
    let (guid, _) = decode_dispose(BuiltinTopicKind::Endpoint, Some(&ql), &[]).unwrap();
    assert_eq!(guid, g);
    // Participant dispose with a key payload in big-endian and no inline QoS.
    let pg = Guid::from_bytes(participant_guid());
    let be = Raw::new(false)
        .param(pid::PARTICIPANT_GUID, &pg.to_bytes())
        .finish();
    let (guid, st) = decode_dispose(BuiltinTopicKind::Participant, None, &be).unwrap();
    assert_eq!(guid, pg);
    assert!(!st.ends_instance());
    // A full SEDP sample also yields its key.
    let full = cyclone_sedp_writer_minimal(true).finish();
    let (guid, _) = decode_dispose(BuiltinTopicKind::Endpoint, None, &full).unwrap();
    assert_eq!(
        guid.entity_id,
        EntityId::new(0x107, entity_kind::USER_WRITER_WITH_KEY)
    );
    // Nothing to go on.
    assert_eq!(
        decode_dispose(BuiltinTopicKind::Endpoint, None, &[]),
        Err(DiscoveryDecodeError::MissingParameter(pid::ENDPOINT_GUID))
    );
    // Unregister-only status from a hand-built inline QoS.
    let raw = [0x71, 0x00, 0x04, 0x00, 0, 0, 0, 2, 0x01, 0x00, 0x00, 0x00];
    let ql = ParameterList::parse(&raw, true).unwrap();
    let st = StatusInfo::from_inline_qos(&ql).unwrap();
    assert!(st.is_unregistered() && !st.is_disposed());
}
