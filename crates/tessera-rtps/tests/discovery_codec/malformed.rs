//! Malformed SEDP and SPDP input: duplicated, lying or inconsistent parameters are refused, and
//! locator lists stay bounded.

use super::{cyclone_sedp_writer_minimal, endpoint_guid, participant_guid, Raw};
use tessera_rtps::discovery::*;
use tessera_rtps::types::entity_kind;
use tessera_rtps::wire::pid;

#[test]
fn duplicated_and_lying_parameters_are_rejected() {
    use DiscoveryDecodeError as E;
    let dup = cyclone_sedp_writer_minimal(true)
        .str_param(pid::TOPIC_NAME, "again")
        .finish();
    assert_eq!(
        DiscoveredWriterData::decode(&dup),
        Err(E::DuplicateParameter(pid::TOPIC_NAME))
    );
    let dup_qos = cyclone_sedp_writer_minimal(true)
        .u32p(pid::DURABILITY, 0)
        .u32p(pid::DURABILITY, 1)
        .finish();
    assert_eq!(
        DiscoveredWriterData::decode(&dup_qos),
        Err(E::DuplicateParameter(pid::DURABILITY))
    );
    let dup_spdp = Raw::new(true)
        .param(pid::PARTICIPANT_GUID, &participant_guid())
        .u32p(pid::BUILTIN_ENDPOINT_SET, 0x3f)
        .octets(pid::USER_DATA, b"a")
        .octets(pid::USER_DATA, b"b")
        .finish();
    assert_eq!(
        SpdpParticipantData::decode(&dup_spdp),
        Err(E::DuplicateParameter(pid::USER_DATA))
    );
    let mu = cyclone_sedp_writer_minimal(true).u32p(0x4077, 0).finish();
    assert_eq!(
        DiscoveredWriterData::decode(&mu),
        Err(E::MustUnderstand(0x4077))
    );
    let missing_type = Raw::new(true)
        .param(pid::ENDPOINT_GUID, &endpoint_guid(1, 2).to_bytes())
        .str_param(pid::TOPIC_NAME, "t")
        .finish();
    assert_eq!(
        DiscoveredWriterData::decode(&missing_type),
        Err(E::MissingParameter(pid::TYPE_NAME))
    );
    // User data claims 1000 bytes inside a 8-byte parameter.
    let raw = Raw::new(true);
    let mut ud = raw.u32b(1000).to_vec();
    ud.extend_from_slice(b"abcd");
    let lying = cyclone_sedp_writer_minimal(true)
        .param(pid::USER_DATA, &ud)
        .finish();
    assert_eq!(
        DiscoveredWriterData::decode(&lying),
        Err(E::InvalidParameter(pid::USER_DATA))
    );
    // A million partitions.
    let huge = cyclone_sedp_writer_minimal(true)
        .u32p(pid::PARTITION, 1_000_000)
        .finish();
    assert_eq!(
        DiscoveredWriterData::decode(&huge),
        Err(E::TooLarge(pid::PARTITION))
    );
    // 200 partitions announced, none present.
    let short = cyclone_sedp_writer_minimal(true)
        .u32p(pid::PARTITION, 200)
        .finish();
    assert_eq!(
        DiscoveredWriterData::decode(&short),
        Err(E::InvalidParameter(pid::PARTITION))
    );
    // A string without its NUL.
    let mut s = raw.u32b(4).to_vec();
    s.extend_from_slice(b"abcd");
    let no_nul = Raw::new(true)
        .param(pid::ENDPOINT_GUID, &endpoint_guid(1, 2).to_bytes())
        .param(pid::TOPIC_NAME, &s)
        .str_param(pid::TYPE_NAME, "t")
        .finish();
    assert_eq!(
        DiscoveredWriterData::decode(&no_nul),
        Err(E::InvalidParameter(pid::TOPIC_NAME))
    );
    // Parameter length past the end.
    let past = cyclone_sedp_writer_minimal(true)
        .param_len(pid::USER_DATA, 64, &[0; 8])
        .finish();
    assert!(matches!(
        DiscoveredWriterData::decode(&past),
        Err(E::ParameterList(_))
    ));
    // Reliability kind out of range, keep-last depth 0, unknown encapsulation, truncation.
    let raw = Raw::new(true);
    let mut rel = raw.u32b(7).to_vec();
    rel.extend_from_slice(&[0; 8]);
    let bad_rel = cyclone_sedp_writer_minimal(true)
        .param(pid::RELIABILITY, &rel)
        .finish();
    assert_eq!(
        DiscoveredWriterData::decode(&bad_rel),
        Err(E::InvalidParameter(pid::RELIABILITY))
    );
    let bad_hist = cyclone_sedp_writer_minimal(true)
        .param(pid::HISTORY, &[0, 0, 0, 0, 0, 0, 0, 0])
        .finish();
    assert_eq!(
        DiscoveredWriterData::decode(&bad_hist),
        Err(E::InvalidParameter(pid::HISTORY))
    );
    let mut cdr = cyclone_sedp_writer_minimal(true).finish();
    cdr[1] = 1;
    assert_eq!(
        DiscoveredWriterData::decode(&cdr),
        Err(E::UnsupportedEncapsulation(1))
    );
    assert_eq!(DiscoveredWriterData::decode(&[0, 3]), Err(E::Truncated));
    // A reader GUID announced as a writer.
    let wrong_kind = Raw::new(true)
        .param(
            pid::ENDPOINT_GUID,
            &endpoint_guid(1, entity_kind::USER_READER_NO_KEY).to_bytes(),
        )
        .str_param(pid::TOPIC_NAME, "t")
        .str_param(pid::TYPE_NAME, "t")
        .finish();
    assert_eq!(
        DiscoveredWriterData::decode(&wrong_kind),
        Err(E::InvalidParameter(pid::ENDPOINT_GUID))
    );
    // Inconsistent QoS: keep-last 5 with 2 samples per instance.
    let raw = Raw::new(true);
    let mut hist = raw.u32b(0).to_vec();
    hist.extend_from_slice(&raw.u32b(5));
    let mut limits = raw.u32b(u32::MAX).to_vec();
    limits.extend_from_slice(&raw.u32b(u32::MAX));
    limits.extend_from_slice(&raw.u32b(2));
    let inconsistent = cyclone_sedp_writer_minimal(true)
        .param(pid::HISTORY, &hist)
        .param(pid::RESOURCE_LIMITS, &limits)
        .finish();
    assert!(matches!(
        DiscoveredWriterData::decode(&inconsistent),
        Err(E::InconsistentQos(_))
    ));
}

#[test]
fn locator_lists_are_bounded() {
    let mut raw = cyclone_sedp_writer_minimal(true);
    for i in 0..200u32 {
        raw = raw.locator(
            pid::UNICAST_LOCATOR,
            1,
            [10, 0, (i >> 8) as u8, i as u8],
            7411,
        );
    }
    let w = DiscoveredWriterData::decode(&raw.finish()).unwrap();
    assert_eq!(w.unicast_locators.len(), MAX_LOCATORS);
}
