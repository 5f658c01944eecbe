//! Tests of the QoS policies: the Consistency policy's matching and its SEDP parameter,
//! durations on the wire, partition name patterns.

use super::*;

#[test]
fn consistency_atomic_writers_satisfy_every_reader_eventual_writers_only_eventual_ones() {
    let w = |c| WriterSideQos::default().with_consistency(c);
    let r = |c| ReaderSideQos::default().with_consistency(c);
    assert_eq!(
        check_compatibility(&w(Consistency::Atomic), &r(Consistency::Atomic)),
        Ok(())
    );
    assert_eq!(
        check_compatibility(&w(Consistency::Atomic), &r(Consistency::Eventual)),
        Ok(())
    );
    assert_eq!(
        check_compatibility(&w(Consistency::Eventual), &r(Consistency::Eventual)),
        Ok(())
    );
    assert_eq!(
        check_compatibility(&w(Consistency::Eventual), &r(Consistency::Atomic)),
        Err(vec![QosPolicyId::Consistency])
    );
    // The topic's policy reaches its writers and readers.
    let t = TopicQos::default().with_consistency(Consistency::Atomic);
    assert_eq!(
        DataWriterQos::from_topic(&t).consistency,
        Consistency::Atomic
    );
    assert_eq!(
        DataReaderQos::from_topic(&t).consistency,
        Consistency::Atomic
    );
    assert_eq!(DataWriterQos::default().consistency, Consistency::Eventual);
}

#[test]
fn consistency_travels_in_sedp_and_a_foreign_parameter_under_its_pid_is_ignored() {
    use crate::discovery::{DiscoveredReaderData, DiscoveredWriterData};
    use crate::types::{entity_kind, EntityId, Guid, GuidPrefix};
    let prefix = GuidPrefix([7; 12]);
    let wg = Guid::new(prefix, EntityId::new(1, entity_kind::USER_WRITER_NO_KEY));
    let rg = Guid::new(prefix, EntityId::new(2, entity_kind::USER_READER_NO_KEY));
    let mut at = Locator::udpv4(std::net::Ipv4Addr::new(10, 1, 2, 3), 40123);
    at.kind = 4; // TCPv4, as the runtime announces it
    let mut wq = WriterSideQos::default().with_consistency(Consistency::Atomic);
    wq.consensus_endpoint = Some(at);
    let wd = DiscoveredWriterData::new(wg, "T", "X").with_qos(wq.clone());
    let bytes = wd.to_payload();
    assert_eq!(DiscoveredWriterData::decode(&bytes).unwrap().qos, wq);
    let rq = ReaderSideQos::default().with_consistency(Consistency::Atomic);
    let rd = DiscoveredReaderData::new(rg, "T", "X").with_qos(rq.clone());
    assert_eq!(
        DiscoveredReaderData::decode(&rd.to_payload()).unwrap().qos,
        rq
    );
    // EVENTUAL endpoints send nothing new: byte for byte what other vendors see today.
    let plain = DiscoveredWriterData::new(wg, "T", "X").to_payload();
    assert!(!plain.windows(4).any(|x| x == b"TSRC"));

    // Another vendor's value under the same pid (no magic) leaves the endpoint EVENTUAL.
    let at_magic = bytes.windows(4).position(|x| x == b"TSRC").unwrap();
    let mut foreign = bytes.clone();
    foreign[at_magic..at_magic + 4].copy_from_slice(b"ABCD");
    let d = DiscoveredWriterData::decode(&foreign).unwrap();
    assert_eq!(
        (d.qos.consistency, d.qos.consensus_endpoint),
        (Consistency::Eventual, None)
    );
    // Ours with an unknown kind is refused, like any malformed policy.
    let mut bad = bytes.clone();
    bad[at_magic + 4] = 9;
    assert!(DiscoveredWriterData::decode(&bad).is_err());
    // Truncated after the magic: refused, no panic.
    let mut short = bytes;
    let pid_at = at_magic - 4;
    short[pid_at + 2..pid_at + 4].copy_from_slice(&4u16.to_le_bytes());
    short.truncate(at_magic + 4);
    short.extend_from_slice(&[1, 0, 0, 0]); // sentinel
    assert!(DiscoveredWriterData::decode(&short).is_err());
}

/// Fast DDS 2.9 decodes a fraction by truncation (`frac_to_nano`): the encoding must give
/// it the same nanoseconds back, or equal deadlines look incompatible to it.
#[test]
fn a_truncating_decoder_gets_the_nanoseconds_back() {
    let truncated = |w: DurationT| ((w.fraction as u64) * 1_000_000_000) >> 32;
    for ns in [1u64, 3, 100_000_000, 300_000_000, 999_999_999, 123_456_789] {
        let w = duration_to_wire(Duration::from_nanos(ns));
        assert_eq!(truncated(w), ns);
        assert_eq!(w, DurationT::from_std(Duration::from_nanos(ns)));
    }
}

#[test]
fn durations_round_trip_every_nanosecond() {
    for ns in [
        0u64,
        1,
        2,
        3,
        99_999_999,
        100_000_000,
        999_999_999,
        123_456_789,
    ] {
        for s in [0u64, 1, 10, 0x7fff_fffe] {
            let d = Duration::new(s, ns as u32);
            assert_eq!(duration_from_wire(duration_to_wire(d)), Some(d));
        }
    }
    assert_eq!(duration_to_wire(INFINITE), DurationT::INFINITE);
    assert_eq!(duration_from_wire(DurationT::INFINITE), Some(INFINITE));
    let spec_infinite = DurationT {
        seconds: 0x7fff_ffff,
        fraction: 0x7fff_ffff,
    };
    assert_eq!(duration_from_wire(spec_infinite), Some(INFINITE));
    assert_eq!(
        duration_from_wire(DurationT {
            seconds: -1,
            fraction: 0
        }),
        None
    );
}

#[test]
fn fnmatch_basics() {
    assert!(fnmatch("*", ""));
    assert!(fnmatch("*", "abc"));
    assert!(fnmatch("a*c", "abbbc"));
    assert!(!fnmatch("a*c", "abbbd"));
    assert!(fnmatch("a?c", "abc"));
    assert!(!fnmatch("a?c", "ac"));
    assert!(fnmatch("[abc]x", "bx"));
    assert!(!fnmatch("[!abc]x", "bx"));
    assert!(fnmatch("[^abc]x", "dx"));
    assert!(fnmatch("[a-c]*", "cat"));
    assert!(!fnmatch("[a-c]*", "dog"));
    assert!(fnmatch("[]]", "]"));
    assert!(fnmatch("[a-]", "-"));
    assert!(fnmatch("a[", "a["));
    assert!(fnmatch("\\*", "*"));
    assert!(!fnmatch("\\*", "x"));
    assert!(fnmatch("*a*b*c*", "xxaxxbxxcxx"));
    assert!(!fnmatch("*a*b*c*", "xxaxxcxxbxx"));
    assert!(fnmatch("é?", "éü"));
    assert!(fnmatch("**", "x"));
}
