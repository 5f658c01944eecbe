//! Payloads captured from a real Cyclone DDS 0.10.2 `ddsperf` run, decoded.

use std::net::Ipv4Addr;
use std::time::Duration;

use tessera_rtps::discovery::*;
use tessera_rtps::qos::*;
use tessera_rtps::types::{entity_kind, EntityId, Guid, GuidPrefix, Locator};

// ------------------------------------------------------------------ real Cyclone bytes

/// Payloads captured from Debian's Cyclone DDS 0.10.2 `ddsperf ping` on loopback (SPDP; the
/// DDSPerfRDataKS writer; the DDSPerfRPongKS reader in its own-GUID partition). They include
/// PID_PROPERTY_LIST, PID_TYPE_INFORMATION and vendor-specific parameters that must be skipped.
const CYCLONE_SPDP: &[&str] = &[
    "000300002c00180011000000444453506572663a303a343133353a766d00000059005800030000000e0000005f5f5072",
    "6f636573734e616d65000000080000006464737065726600060000005f5f506964000000050000003431333500000000",
    "0b0000005f5f486f73746e616d65000003000000766d0000000000001500040002010000160004000110000002000800",
    "0a00000000000000500010000110cd3fe670d22cee1d3450000001c1580004003ffc00000f0004000000000031001800",
    "01000000c7d200000000000000000000000000007f0000014800180001000000e91c0000000000000000000000000000",
    "efff00013200180001000000c7d200000000000000000000000000007f0000013300180001000000e81c000000000000",
    "0000000000000000efff000107803000000000002c00000000000000000000000000000016000000766d2f302e31302e",
    "322f4c696e75782f4c696e7578000000198004000000200001000000",
];
const CYCLONE_DATA_WRITER: &[&str] = &[
    "00030000050014000f0000004444535065726652446174614b53000007001000090000004b6579656453657100000000",
    "1a000c00020000000a0000000000000040000800010000000100000041000c0010270000ffffffffffffffff73000800",
    "0200000000000200750064006000000001100040280000002400000014000000f1fa0413693f17171633962dcd81a200",
    "4c00000000000000040000000000000002100040280000002400000014000000f2c6e6285a68c8f6cd7c4203c46cb200",
    "7a000000000000000400000000000000150004000201000016000400011000005a0010000110cd3fe670d22cee1d3450",
    "00000b020c8004000100000001000000",
];
const CYCLONE_PONG_READER: &[&str] = &[
    "00030000050014000f0000004444535065726652506f6e674b53000007001000090000004b6579656453657100000000",
    "1a000c00020000000a0000000000000040000800010000000100000041000c0010270000ffffffffffffffff29002c00",
    "010000002400000030313130636433665f65363730643232635f65653164333435305f30303030303163310073000800",
    "0200000000000200750064006000000001100040280000002400000014000000f1fa0413693f17171633962dcd81a200",
    "4c00000000000000040000000000000002100040280000002400000014000000f2c6e6285a68c8f6cd7c4203c46cb200",
    "7a000000000000000400000000000000150004000201000016000400011000005a0010000110cd3fe670d22cee1d3450",
    "00000c070c8004000100000001000000",
];

fn unhex(parts: &[&str]) -> Vec<u8> {
    let s: String = parts.concat();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

#[test]
fn decodes_captured_cyclone_payloads() {
    let p = SpdpParticipantData::decode(&unhex(CYCLONE_SPDP)).unwrap();
    assert_eq!(p.vendor_id.0, [0x01, 0x10]);
    assert_eq!(p.lease_duration, Duration::from_secs(10));
    assert_eq!(p.domain_id, Some(0));
    assert!(p.user_data.starts_with(b"DDSPerf:0:"));
    assert!(p.builtin_endpoints.contains(0x3f | 0xc00));
    assert_eq!(
        p.default_multicast_locators,
        vec![Locator::udpv4(Ipv4Addr::new(239, 255, 0, 1), 7401)]
    );
    assert_eq!(p.metatraffic_unicast_locators.len(), 1);

    let w = DiscoveredWriterData::decode(&unhex(CYCLONE_DATA_WRITER)).unwrap();
    assert_eq!(w.guid.prefix, p.guid_prefix);
    assert_eq!(w.topic_name, "DDSPerfRDataKS");
    assert_eq!(w.type_name, "KeyedSeq");
    assert_eq!(
        w.qos.reliability,
        Reliability::reliable(Duration::from_secs(10))
    );
    assert_eq!(w.qos.history, History::KeepAll);
    assert_eq!(w.qos.resource_limits.max_samples, Some(10000));
    assert_eq!(w.qos.data_representation.0, vec![0, 2]);
    assert!(w.unicast_locators.is_empty());
    // Cyclone 0.10.2's TypeInformation for KeyedSeq decodes (and re-encodes to the same bytes).
    let ti = w.type_information.as_ref().expect("type information");
    assert!(!w.type_information_rejected);
    assert_eq!(ti.minimal.typeid_with_size.size, 0x4c);
    assert_eq!(ti.complete.typeid_with_size.size, 0x7a);
    assert_eq!(
        ti.minimal.typeid_with_size.type_id.to_bytes(),
        unhex(&["f1fa0413693f17171633962dcd81a2"])
    );
    let again = DiscoveredWriterData::decode(&w.to_payload()).unwrap();
    assert_eq!(again.type_information, w.type_information);

    let r = DiscoveredReaderData::decode(&unhex(CYCLONE_PONG_READER)).unwrap();
    assert_eq!(r.topic_name, "DDSPerfRPongKS");
    let own = Guid::new(p.guid_prefix, EntityId::PARTICIPANT).to_partition_string();
    assert_eq!(r.qos.partition.0, vec![own.clone()]);
    assert_eq!(r.qos.reliability.kind, ReliabilityKind::Reliable);

    // Tessera's default reader takes Cyclone's data writer; a Tessera pong writer in the
    // partition named after the Cyclone participant matches Cyclone's pong reader.
    let ours = DiscoveredReaderData::new(
        Guid::new(
            GuidPrefix([9; 12]),
            EntityId::new(1, entity_kind::USER_READER_WITH_KEY),
        ),
        "DDSPerfRDataKS",
        "KeyedSeq",
    );
    assert_eq!(evaluate_match(&w, &ours), MatchOutcome::Match);
    let mut pong = DiscoveredWriterData::new(
        Guid::new(
            GuidPrefix([9; 12]),
            EntityId::new(2, entity_kind::USER_WRITER_WITH_KEY),
        ),
        "DDSPerfRPongKS",
        "KeyedSeq",
    );
    pong.qos.reliability = Reliability::reliable(Duration::from_secs(10));
    assert_eq!(
        evaluate_match(&pong, &r),
        MatchOutcome::NoMatch(NoMatchReason::Partition)
    );
    pong.qos.partition = Partition::new([own]);
    assert_eq!(evaluate_match(&pong, &r), MatchOutcome::Match);
}
