//! Property tests: random writer, reader and participant data round-trip, and arbitrary or
//! corrupted bytes never panic a decoder.

use super::cyclone_spdp;
use std::net::Ipv4Addr;
use std::time::Duration;

use proptest::prelude::*;
use tessera_rtps::discovery::*;
use tessera_rtps::qos::*;
use tessera_rtps::types::{entity_kind, EntityId, Guid, GuidPrefix, Locator};

// ------------------------------------------------------------------ property tests

fn arb_duration() -> impl Strategy<Value = Duration> {
    prop_oneof![
        Just(INFINITE),
        (0u64..0x7fff_fffe, 0u32..1_000_000_000).prop_map(|(s, n)| Duration::new(s, n)),
    ]
}

fn arb_locator() -> impl Strategy<Value = Locator> {
    (any::<[u8; 4]>(), any::<u16>()).prop_map(|(ip, port)| Locator::udpv4(Ipv4Addr::from(ip), port))
}

fn arb_name() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9_*?/:]{0,40}"
}

prop_compose! {
    fn arb_writer()(
        key in 0u32..0xffffff,
        keyed in any::<bool>(),
        topic in arb_name(),
        ty in arb_name(),
        reliable in any::<bool>(),
        mbt in arb_duration(),
        durability in 0usize..4,
        deadline in arb_duration(),
        lease in arb_duration(),
        depth in proptest::option::of(1u32..1000),
        partition in proptest::collection::vec(arb_name(), 0..5),
        user_data in proptest::collection::vec(any::<u8>(), 0..64),
        dr in proptest::collection::vec(0i16..3, 0..4),
        uni in proptest::collection::vec(arb_locator(), 0..4),
        multi in proptest::collection::vec(arb_locator(), 0..2),
    ) -> DiscoveredWriterData {
        let kind = if keyed { entity_kind::USER_WRITER_WITH_KEY } else { entity_kind::USER_WRITER_NO_KEY };
        let mut w = DiscoveredWriterData::new(
            Guid::new(GuidPrefix([3; 12]), EntityId::new(key, kind)), topic, ty);
        w.qos.reliability = Reliability {
            kind: if reliable { ReliabilityKind::Reliable } else { ReliabilityKind::BestEffort },
            max_blocking_time: mbt,
        };
        w.qos.durability = [Durability::Volatile, Durability::TransientLocal,
            Durability::Transient, Durability::Persistent][durability];
        w.qos.deadline = Deadline { period: deadline };
        w.qos.liveliness.lease_duration = lease;
        w.qos.history = depth.map_or(History::KeepAll, History::KeepLast);
        w.qos.partition = Partition(partition);
        w.qos.user_data = UserData(user_data);
        w.qos.data_representation = DataRepresentation(dr);
        let dedup = |v: Vec<Locator>| {
            let mut out: Vec<Locator> = Vec::new();
            for l in v { if !out.contains(&l) { out.push(l) } }
            out
        };
        w.unicast_locators = dedup(uni);
        w.multicast_locators = dedup(multi);
        w
    }
}

proptest! {
    #[test]
    fn writer_round_trips(w in arb_writer()) {
        prop_assert_eq!(DiscoveredWriterData::decode(&w.to_payload()), Ok(w));
    }

    #[test]
    fn reader_round_trips(w in arb_writer(), expects in any::<bool>(), tbf in 0u64..1000) {
        let kind = if w.guid.entity_id.is_keyed() {
            entity_kind::USER_READER_WITH_KEY
        } else {
            entity_kind::USER_READER_NO_KEY
        };
        let mut r = DiscoveredReaderData::new(
            Guid::new(w.guid.prefix, EntityId::new(5, kind)), w.topic_name, w.type_name);
        r.qos.reliability = w.qos.reliability;
        r.qos.partition = w.qos.partition;
        r.qos.history = w.qos.history;
        r.qos.deadline = Deadline { period: INFINITE };
        r.qos.time_based_filter = TimeBasedFilter { minimum_separation: Duration::from_millis(tbf) };
        r.expects_inline_qos = expects;
        r.unicast_locators = w.unicast_locators;
        prop_assert_eq!(DiscoveredReaderData::decode(&r.to_payload()), Ok(r));
    }

    #[test]
    fn spdp_round_trips(
        prefix in any::<[u8; 12]>(),
        lease in arb_duration(),
        set in any::<u32>(),
        ud in proptest::collection::vec(any::<u8>(), 0..100),
        uni in proptest::collection::vec(arb_locator(), 0..4),
        name in proptest::option::of(arb_name()),
        domain in proptest::option::of(0u32..232),
    ) {
        let mut d = SpdpParticipantData::new(GuidPrefix(prefix));
        d.lease_duration = lease;
        d.builtin_endpoints = BuiltinEndpointSet(set);
        d.user_data = ud;
        let mut seen: Vec<Locator> = Vec::new();
        for l in uni { if !seen.contains(&l) { seen.push(l) } }
        d.default_unicast_locators = seen;
        d.entity_name = name;
        d.domain_id = domain;
        prop_assert_eq!(SpdpParticipantData::decode(&d.to_payload()), Ok(d));
    }

    /// Arbitrary bytes never panic any decoder.
    #[test]
    fn garbage_never_panics(mut bytes in proptest::collection::vec(any::<u8>(), 0..512), le in any::<bool>()) {
        if bytes.len() >= 2 {
            bytes[0] = 0;
            bytes[1] = if le { 3 } else { 2 };
        }
        let _ = SpdpParticipantData::decode(&bytes);
        let _ = DiscoveredWriterData::decode(&bytes);
        let _ = DiscoveredReaderData::decode(&bytes);
        let _ = decode_dispose(BuiltinTopicKind::Endpoint, None, &bytes);
    }

    /// Corrupting bytes of valid payloads never panics either.
    #[test]
    fn mutations_never_panic(
        w in arb_writer(),
        flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
    ) {
        let mut bytes = w.to_payload();
        let mut spdp = cyclone_spdp(true);
        for (i, b) in &flips {
            let n = bytes.len();
            bytes[i.index(n)] = *b;
            let n = spdp.len();
            spdp[i.index(n)] = *b;
        }
        let _ = DiscoveredWriterData::decode(&bytes);
        let _ = DiscoveredReaderData::decode(&bytes);
        let _ = SpdpParticipantData::decode(&spdp);
    }
}
