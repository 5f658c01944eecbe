//! Behaviour of the sans-IO discovery database on a virtual clock.

use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use tessera_rtps::discovery::*;
use tessera_rtps::qos::*;
use tessera_rtps::types::{entity_kind, EntityId, Guid, GuidPrefix, Locator};

const LOCAL: GuidPrefix = GuidPrefix([1; 12]);
const PEER: GuidPrefix = GuidPrefix([2; 12]);
const PEER2: GuidPrefix = GuidPrefix([3; 12]);

fn guid(prefix: GuidPrefix, key: u32, kind: u8) -> Guid {
    Guid::new(prefix, EntityId::new(key, kind))
}

fn spdp(prefix: GuidPrefix, lease_secs: u64) -> SpdpParticipantData {
    let mut d = SpdpParticipantData::new(prefix);
    d.lease_duration = Duration::from_secs(lease_secs);
    d.domain_id = Some(0);
    d.default_unicast_locators = vec![Locator::udpv4(Ipv4Addr::new(10, 0, 0, prefix.0[0]), 7411)];
    d
}

fn writer(prefix: GuidPrefix, key: u32, topic: &str) -> DiscoveredWriterData {
    DiscoveredWriterData::new(
        guid(prefix, key, entity_kind::USER_WRITER_WITH_KEY),
        topic,
        "KeyedSeq",
    )
}

fn reader(prefix: GuidPrefix, key: u32, topic: &str) -> DiscoveredReaderData {
    DiscoveredReaderData::new(
        guid(prefix, key, entity_kind::USER_READER_WITH_KEY),
        topic,
        "KeyedSeq",
    )
}

fn drain(db: &mut DiscoveryDb) -> Vec<DiscoveryEvent> {
    std::iter::from_fn(|| db.poll_event()).collect()
}

/// Compact event descriptions for readable assertions.
fn kinds(ev: &[DiscoveryEvent]) -> Vec<String> {
    ev.iter()
        .map(|e| match e {
            DiscoveryEvent::ParticipantDiscovered(p) => format!("pdisc {}", p.guid_prefix.0[0]),
            DiscoveryEvent::ParticipantUpdated(p) => format!("pupd {}", p.guid_prefix.0[0]),
            DiscoveryEvent::ParticipantLost { prefix, reason } => {
                format!("plost {} {reason:?}", prefix.0[0])
            }
            DiscoveryEvent::RemoteEndpointDiscovered(r) => format!("edisc {:?}", r.guid()),
            DiscoveryEvent::RemoteEndpointUpdated(r) => format!("eupd {:?}", r.guid()),
            DiscoveryEvent::RemoteEndpointLost { guid } => format!("elost {guid:?}"),
            DiscoveryEvent::Matched { local, remote } => {
                format!("match {local:?} {:?}", remote.guid())
            }
            DiscoveryEvent::MatchUpdated { local, remote } => {
                format!("mupd {local:?} {:?}", remote.guid())
            }
            DiscoveryEvent::Unmatched { local, remote } => format!("unmatch {local:?} {remote:?}"),
            DiscoveryEvent::IncompatibleQos {
                local,
                remote,
                policies,
            } => format!("incompat {local:?} {remote:?} {policies:?}"),
        })
        .collect()
}

fn matched_pairs(ev: &[DiscoveryEvent]) -> Vec<(Guid, Guid)> {
    ev.iter()
        .filter_map(|e| match e {
            DiscoveryEvent::Matched { local, remote } => Some((*local, remote.guid())),
            _ => None,
        })
        .collect()
}

#[test]
fn remote_first_then_late_local_endpoint_matches() {
    let t0 = Instant::now();
    let mut db = DiscoveryDb::new(LOCAL, 0);
    db.on_spdp(spdp(PEER, 10), t0);
    let ev = drain(&mut db);
    assert!(matches!(&ev[..], [DiscoveryEvent::ParticipantDiscovered(p)] if p.guid_prefix == PEER));

    let rr = reader(PEER, 1, "T");
    db.on_sedp_reader(rr.clone());
    let ev = drain(&mut db);
    assert_eq!(ev.len(), 1, "{:?}", kinds(&ev));
    assert!(
        matches!(&ev[0], DiscoveryEvent::RemoteEndpointDiscovered(RemoteEndpointInfo::Reader(r)) if r.guid == rr.guid)
    );

    let lw = writer(LOCAL, 1, "T");
    db.add_local_writer(lw.clone());
    let ev = drain(&mut db);
    assert_eq!(matched_pairs(&ev), vec![(lw.guid, rr.guid)]);
    // The remote reader announced no locators: it gets its participant's defaults.
    let DiscoveryEvent::Matched { remote, .. } = &ev[0] else {
        panic!()
    };
    assert_eq!(
        remote.unicast_locators(),
        &[Locator::udpv4(Ipv4Addr::new(10, 0, 0, 2), 7411)]
    );
    assert!(db.is_matched(lw.guid, rr.guid));
    assert_eq!(
        db.matched_remotes(lw.guid).collect::<Vec<_>>(),
        vec![rr.guid]
    );

    // A re-announcement with identical data changes nothing.
    db.on_sedp_reader(rr.clone());
    db.on_spdp(spdp(PEER, 10), t0);
    assert!(drain(&mut db).is_empty());
}

#[test]
fn local_first_then_remote_matches_and_other_topics_do_not() {
    let t0 = Instant::now();
    let mut db = DiscoveryDb::new(LOCAL, 0);
    let lr = reader(LOCAL, 1, "T");
    let lr_other = reader(LOCAL, 2, "U");
    db.add_local_reader(lr.clone());
    db.add_local_reader(lr_other);
    db.on_spdp(spdp(PEER, 10), t0);
    let rw = writer(PEER, 7, "T");
    db.on_sedp_writer(rw.clone());
    let ev = drain(&mut db);
    assert_eq!(matched_pairs(&ev), vec![(lr.guid, rw.guid)]);
    assert!(!ev
        .iter()
        .any(|e| matches!(e, DiscoveryEvent::IncompatibleQos { .. })));
}

#[test]
fn participant_lease_expiry_unmatches_its_endpoints() {
    let t0 = Instant::now();
    let mut db = DiscoveryDb::new(LOCAL, 0);
    let lw = writer(LOCAL, 1, "T");
    let lr = reader(LOCAL, 2, "T");
    db.add_local_writer(lw.clone());
    db.add_local_reader(lr.clone());
    db.on_spdp(spdp(PEER, 10), t0);
    db.on_spdp(spdp(PEER2, 30), t0);
    let rr = reader(PEER, 3, "T");
    let rw = writer(PEER, 4, "T");
    db.on_sedp_reader(rr.clone());
    db.on_sedp_writer(rw.clone());
    db.on_sedp_reader(reader(PEER2, 3, "T"));
    let ev = drain(&mut db);
    assert_eq!(matched_pairs(&ev).len(), 3);

    assert_eq!(db.poll_timeout(), Some(t0 + Duration::from_secs(10)));
    db.handle_timeout(t0 + Duration::from_secs(9));
    assert!(drain(&mut db).is_empty());

    // Traffic at t0+5 renews the lease to t0+15.
    db.on_participant_alive(PEER, t0 + Duration::from_secs(5));
    assert_eq!(db.poll_timeout(), Some(t0 + Duration::from_secs(15)));
    db.handle_timeout(t0 + Duration::from_secs(12));
    assert!(drain(&mut db).is_empty());

    db.handle_timeout(t0 + Duration::from_secs(15));
    let ev = drain(&mut db);
    assert_eq!(
        kinds(&ev),
        vec![
            format!("unmatch {:?} {:?}", lr.guid, rw.guid),
            format!("elost {:?}", rw.guid),
            format!("unmatch {:?} {:?}", lw.guid, rr.guid),
            format!("elost {:?}", rr.guid),
            "plost 2 LeaseExpired".to_string(),
        ]
    );
    assert!(db.participant(PEER).is_none());
    assert!(db.remote_reader(rr.guid).is_none());
    // The other participant and its match survive.
    assert_eq!(db.poll_timeout(), Some(t0 + Duration::from_secs(30)));
    assert_eq!(db.matched_remotes(lw.guid).count(), 1);

    // SPDP from the lost participant rediscovers it; its SEDP then matches again.
    db.on_spdp(spdp(PEER, 10), t0 + Duration::from_secs(20));
    db.on_sedp_reader(rr.clone());
    let ev = drain(&mut db);
    assert_eq!(matched_pairs(&ev), vec![(lw.guid, rr.guid)]);
}

#[test]
fn infinite_lease_never_expires() {
    let t0 = Instant::now();
    let mut db = DiscoveryDb::new(LOCAL, 0);
    let mut p = spdp(PEER, 1);
    p.lease_duration = INFINITE;
    db.on_spdp(p, t0);
    drain(&mut db);
    assert_eq!(db.poll_timeout(), None);
    db.handle_timeout(t0 + Duration::from_secs(1_000_000));
    assert!(drain(&mut db).is_empty());
}

#[test]
fn incompatible_reliability_is_reported_once() {
    let t0 = Instant::now();
    let mut db = DiscoveryDb::new(LOCAL, 0);
    let lw = writer(LOCAL, 1, "T")
        .with_qos(WriterSideQos::default().with_reliability(Reliability::best_effort()));
    db.add_local_writer(lw.clone());
    db.on_spdp(spdp(PEER, 10), t0);
    let rr = reader(PEER, 2, "T").with_qos(
        ReaderSideQos::default().with_reliability(Reliability::reliable(Duration::from_secs(1))),
    );
    db.on_sedp_reader(rr.clone());
    let ev = drain(&mut db);
    assert_eq!(
        kinds(&ev[2..]),
        vec![format!(
            "incompat {:?} {:?} [Reliability]",
            lw.guid, rr.guid
        )]
    );
    assert!(!db.is_matched(lw.guid, rr.guid));
    // Re-adding the local writer unchanged does not repeat the report.
    db.add_local_writer(lw.clone());
    assert!(drain(&mut db).is_empty());
    // The reader relaxes to best effort and matches.
    let rr2 = rr
        .clone()
        .with_qos(ReaderSideQos::default().with_reliability(Reliability::best_effort()));
    db.on_sedp_reader(rr2);
    let ev = drain(&mut db);
    assert_eq!(matched_pairs(&ev), vec![(lw.guid, rr.guid)]);
    // ... and back to reliable: unmatched, and reported again.
    db.on_sedp_reader(rr.clone());
    let ev = drain(&mut db);
    assert_eq!(
        kinds(&ev),
        vec![
            format!("eupd {:?}", rr.guid),
            format!("unmatch {:?} {:?}", lw.guid, rr.guid),
            format!("incompat {:?} {:?} [Reliability]", lw.guid, rr.guid),
        ]
    );
}

#[test]
fn partitions_with_wildcards() {
    let t0 = Instant::now();
    let mut db = DiscoveryDb::new(LOCAL, 0);
    db.on_spdp(spdp(PEER, 10), t0);
    let with_part = |w: DiscoveredWriterData, names: &[&str]| {
        let q = w
            .qos
            .clone()
            .with_partition(Partition::new(names.iter().copied()));
        w.with_qos(q)
    };
    let lw_wild = with_part(writer(LOCAL, 1, "T"), &["sensors/*"]);
    let lw_plain = with_part(writer(LOCAL, 2, "T"), &["other"]);
    let lw_default = writer(LOCAL, 3, "T");
    let lw_also_wild = with_part(writer(LOCAL, 4, "T"), &["sens?rs/temp"]);
    for w in [&lw_wild, &lw_plain, &lw_default, &lw_also_wild] {
        db.add_local_writer(w.clone());
    }
    let rr = reader(PEER, 9, "T");
    let rr = {
        let q = rr
            .qos
            .clone()
            .with_partition(Partition::new(["sensors/temp"]));
        rr.with_qos(q)
    };
    db.on_sedp_reader(rr.clone());
    let ev = drain(&mut db);
    assert_eq!(
        matched_pairs(&ev),
        vec![(lw_wild.guid, rr.guid), (lw_also_wild.guid, rr.guid)]
    );
    // A partition mismatch is no incompatibility.
    assert!(!ev
        .iter()
        .any(|e| matches!(e, DiscoveryEvent::IncompatibleQos { .. })));

    // The reader switches to a pattern: pattern-vs-pattern never matches, pattern-vs-name does.
    let q = rr.qos.clone().with_partition(Partition::new(["oth*"]));
    db.on_sedp_reader(rr.clone().with_qos(q));
    let ev = drain(&mut db);
    let mut k = kinds(&ev);
    k.sort();
    let mut expect = vec![
        format!("eupd {:?}", rr.guid),
        format!("unmatch {:?} {:?}", lw_wild.guid, rr.guid),
        format!("unmatch {:?} {:?}", lw_also_wild.guid, rr.guid),
        format!("match {:?} {:?}", lw_plain.guid, rr.guid),
    ];
    expect.sort();
    assert_eq!(k, expect);
}

#[test]
fn type_and_key_kind_mismatches_do_not_match() {
    let t0 = Instant::now();
    let mut db = DiscoveryDb::new(LOCAL, 0);
    db.on_spdp(spdp(PEER, 10), t0);
    let lw = writer(LOCAL, 1, "T");
    db.add_local_writer(lw.clone());
    let mut other_type = reader(PEER, 2, "T");
    other_type.type_name = "Other".into();
    let keyless = DiscoveredReaderData::new(
        guid(PEER, 3, entity_kind::USER_READER_NO_KEY),
        "T",
        "KeyedSeq",
    );
    db.on_sedp_reader(other_type);
    db.on_sedp_reader(keyless);
    let ev = drain(&mut db);
    assert!(matched_pairs(&ev).is_empty(), "{:?}", kinds(&ev));
    assert_eq!(
        evaluate_match(&lw, &reader(PEER, 2, "T")),
        MatchOutcome::Match
    );
}

#[test]
fn disposes_and_removals_unmatch() {
    let t0 = Instant::now();
    let mut db = DiscoveryDb::new(LOCAL, 0);
    db.on_spdp(spdp(PEER, 10), t0);
    let lw = writer(LOCAL, 1, "T");
    let lw2 = writer(LOCAL, 2, "T");
    db.add_local_writer(lw.clone());
    db.add_local_writer(lw2.clone());
    let rr = reader(PEER, 5, "T");
    let rr2 = reader(PEER, 6, "T");
    db.on_sedp_reader(rr.clone());
    db.on_sedp_reader(rr2.clone());
    drain(&mut db);

    assert!(db.on_remote_endpoint_disposed(rr.guid));
    assert_eq!(
        kinds(&drain(&mut db)),
        vec![
            format!("unmatch {:?} {:?}", lw.guid, rr.guid),
            format!("unmatch {:?} {:?}", lw2.guid, rr.guid),
            format!("elost {:?}", rr.guid),
        ]
    );
    assert!(!db.on_remote_endpoint_disposed(rr.guid));

    assert!(db.remove_local_writer(lw.guid));
    assert_eq!(
        kinds(&drain(&mut db)),
        vec![format!("unmatch {:?} {:?}", lw.guid, rr2.guid)]
    );
    assert!(!db.remove_local_writer(lw.guid));

    assert!(db.on_participant_disposed(PEER));
    assert_eq!(
        kinds(&drain(&mut db)),
        vec![
            format!("unmatch {:?} {:?}", lw2.guid, rr2.guid),
            format!("elost {:?}", rr2.guid),
            "plost 2 Disposed".to_string(),
        ]
    );
    assert_eq!(db.poll_timeout(), None);
}

#[test]
fn ignored_inputs_are_counted() {
    let t0 = Instant::now();
    let mut db = DiscoveryDb::new(LOCAL, 0);
    // SEDP before SPDP.
    db.on_sedp_reader(reader(PEER, 1, "T"));
    // Our own announcements.
    db.on_spdp(spdp(LOCAL, 10), t0);
    db.on_sedp_writer(writer(LOCAL, 1, "T"));
    // Another domain, another tag.
    let mut other = spdp(PEER, 10);
    other.domain_id = Some(1);
    db.on_spdp(other, t0);
    let mut tagged = spdp(PEER, 10);
    tagged.domain_tag = "x".into();
    db.on_spdp(tagged, t0);
    // A reader GUID on the publications topic.
    db.on_spdp(spdp(PEER, 10), t0);
    let mut bad = writer(PEER, 1, "T");
    bad.guid = guid(PEER, 1, entity_kind::USER_READER_WITH_KEY);
    db.on_sedp_writer(bad);
    let s = db.stats();
    assert_eq!(s.sedp_unknown_participant, 1);
    assert_eq!(s.ignored_own, 2);
    assert_eq!(s.ignored_other_domain, 2);
    assert_eq!(s.sedp_wrong_kind, 1);
    assert_eq!(db.participants().count(), 1);
    // A participant without a domain id is assumed to be in ours.
    let mut no_domain = spdp(PEER2, 10);
    no_domain.domain_id = None;
    db.on_spdp(no_domain, t0);
    assert_eq!(db.participants().count(), 2);
}

#[test]
fn participant_locator_change_updates_matches() {
    let t0 = Instant::now();
    let mut db = DiscoveryDb::new(LOCAL, 0);
    db.on_spdp(spdp(PEER, 10), t0);
    let lr = reader(LOCAL, 1, "T");
    db.add_local_reader(lr.clone());
    let rw = writer(PEER, 2, "T");
    let mut rw_own = writer(PEER, 3, "T");
    rw_own.unicast_locators = vec![Locator::udpv4(Ipv4Addr::new(192, 168, 0, 9), 9999)];
    db.on_sedp_writer(rw.clone());
    db.on_sedp_writer(rw_own.clone());
    drain(&mut db);

    let mut moved = spdp(PEER, 10);
    moved.default_unicast_locators = vec![Locator::udpv4(Ipv4Addr::new(10, 9, 9, 9), 7411)];
    db.on_spdp(moved, t0 + Duration::from_secs(1));
    let ev = drain(&mut db);
    assert_eq!(
        kinds(&ev),
        vec![
            "pupd 2".to_string(),
            format!("mupd {:?} {:?}", lr.guid, rw.guid),
        ],
        "only the writer without its own locators moves"
    );
    let DiscoveryEvent::MatchUpdated { remote, .. } = &ev[1] else {
        panic!()
    };
    assert_eq!(
        remote.unicast_locators(),
        &[Locator::udpv4(Ipv4Addr::new(10, 9, 9, 9), 7411)]
    );
    assert_eq!(
        db.participant_lease_expiry(PEER),
        Some(t0 + Duration::from_secs(11))
    );
}

#[test]
fn local_topic_change_unmatches_and_rematches() {
    let t0 = Instant::now();
    let mut db = DiscoveryDb::new(LOCAL, 0);
    db.on_spdp(spdp(PEER, 10), t0);
    let rr = reader(PEER, 5, "T");
    db.on_sedp_reader(rr.clone());
    let lw = writer(LOCAL, 1, "T");
    db.add_local_writer(lw.clone());
    drain(&mut db);
    let mut moved = lw.clone();
    moved.topic_name = "U".into();
    db.add_local_writer(moved);
    assert_eq!(
        kinds(&drain(&mut db)),
        vec![format!("unmatch {:?} {:?}", lw.guid, rr.guid)]
    );
    db.add_local_writer(lw.clone());
    assert_eq!(matched_pairs(&drain(&mut db)), vec![(lw.guid, rr.guid)]);
}

#[test]
fn a_flood_of_forged_participants_is_bounded_and_counted() {
    use tessera_rtps::discovery::{DiscoveryDb, SpdpParticipantData, MAX_REMOTE_PARTICIPANTS};
    use tessera_rtps::types::GuidPrefix;
    let now = std::time::Instant::now();
    let mut db = DiscoveryDb::new(GuidPrefix([9; 12]), 0);
    for i in 0..(MAX_REMOTE_PARTICIPANTS as u32 + 100) {
        let mut p = [1u8; 12];
        p[..4].copy_from_slice(&i.to_be_bytes());
        db.on_spdp(SpdpParticipantData::new(GuidPrefix(p)), now);
        while db.poll_event().is_some() {}
    }
    assert_eq!(db.participants().count(), MAX_REMOTE_PARTICIPANTS);
    assert_eq!(db.stats().participants_over_limit, 100);
}
