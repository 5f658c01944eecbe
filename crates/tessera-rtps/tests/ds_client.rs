//! The discovery-server client engine against a scripted Fast DDS 2.9 server: every datagram
//! the client sends is encoded and decoded again, and the "server" answers with hand-built
//! datagrams shaped like the ones Fast DDS 2.9.1 sends (see shared/docs/discovery-server.md).

use std::net::Ipv4Addr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tessera_rtps::discovery::ds_common::{
    decode_properties, encode_participant_with_properties, participant_type, server_prefix,
    ParticipantType, PROP_PARTICIPANT_TYPE,
};
use tessera_rtps::discovery::*;
use tessera_rtps::sim::epoch;
use tessera_rtps::types::{entity_kind, EntityId, Guid, GuidPrefix, Locator, Locators};
use tessera_rtps::wire::{Heartbeat, MessageReceiver, PayloadKind, ReceivedSubmessage, Submessage};
use tessera_rtps::writer::{
    Destination, InlineQos, OutData, OutSubmessage, Transmit, PID_FASTDDS_SAMPLE_IDENTITY,
};

mod support;
use support::encode;

const ME: GuidPrefix = GuidPrefix([7; 12]);
const PEER: GuidPrefix = GuidPrefix([9; 12]);

fn server_locator() -> Locator {
    Locator::udpv4(Ipv4Addr::LOCALHOST, 11811)
}

fn client(now: Instant) -> DiscoveryServerClient {
    let mut data = SpdpParticipantData::new(ME);
    data.domain_id = Some(0);
    data.default_unicast_locators = vec![Locator::udpv4(Ipv4Addr::LOCALHOST, 7411)];
    data.metatraffic_unicast_locators = vec![Locator::udpv4(Ipv4Addr::LOCALHOST, 7410)];
    data.metatraffic_multicast_locators = vec![Locator::udpv4(Ipv4Addr::new(239, 255, 0, 1), 7400)];
    let mut locators = Locators::new();
    locators.push(server_locator());
    DiscoveryServerClient::new(
        DsClientConfig {
            participant: data,
            servers: vec![RemoteServer { id: 0, locators }],
            shared_reassembly: None,
            shared_buffered: None,
            wall_clock_nanos: 0,
        },
        now,
    )
}

/// Everything the client wants to send now, as bytes.
fn drain(c: &mut DiscoveryServerClient, now: Instant) -> Vec<(Transmit, Vec<u8>)> {
    let mut out = Vec::new();
    let mut t = Transmit::new();
    while c.poll_transmit(now, &mut t) {
        out.push((t.clone(), encode(ME, &t)));
    }
    out
}

fn events(c: &mut DiscoveryServerClient) -> Vec<EngineEvent> {
    std::iter::from_fn(|| c.poll_event()).collect()
}

/// Feeds a datagram from the server to the client as a receive thread would.
fn deliver(c: &mut DiscoveryServerClient, from: GuidPrefix, t: &Transmit, now: Instant) {
    let bytes = encode(from, t);
    for rs in MessageReceiver::new(&bytes).unwrap() {
        let rs: ReceivedSubmessage<'_> = rs.unwrap();
        let entity = match &rs.submessage {
            Submessage::Data(d) => d.writer_id,
            Submessage::Heartbeat(h) => h.writer_id,
            Submessage::Gap(g) => g.writer_id,
            Submessage::AckNack(a) => a.writer_id,
            _ => continue,
        };
        if c.owns(entity) {
            c.handle_submessage(&rs, now);
        }
    }
}

fn to_client(sms: Vec<OutSubmessage>) -> Transmit {
    let mut locators = Locators::new();
    locators.push(Locator::udpv4(Ipv4Addr::LOCALHOST, 7410));
    Transmit {
        dest: Destination::Endpoint {
            guid: Guid::new(ME, EntityId::SPDP_READER),
            locators,
        },
        submessages: sms,
    }
}

fn data(writer: EntityId, reader: EntityId, sn: i64, payload: Vec<u8>) -> OutSubmessage {
    OutSubmessage::Data(OutData {
        reader_id: reader,
        writer_id: writer,
        writer_sn: sn,
        inline_qos: InlineQos::default(),
        payload_kind: PayloadKind::Data,
        payload: Arc::new(payload),
    })
}

fn server_data() -> Vec<u8> {
    let mut d = SpdpParticipantData::new(server_prefix(0));
    d.vendor_id = tessera_rtps::types::VENDOR_FASTDDS;
    d.domain_id = Some(0);
    d.lease_duration = Duration::from_secs(20);
    d.builtin_endpoints = BuiltinEndpointSet(0x0c30_0c3f);
    d.metatraffic_unicast_locators = vec![server_locator()];
    encode_participant_with_properties(
        &d,
        &[
            (
                "PID_PERSISTENCE_GUID",
                "44.53.00.5f.45.50.52.4f.53.49.4d.41|0.0.1.c1",
            ),
            ("PARTICIPANT_TYPE", "SERVER"),
            ("DS_VERSION", "2.0"),
        ],
    )
}

fn peer_data() -> Vec<u8> {
    let mut d = SpdpParticipantData::new(PEER);
    d.default_unicast_locators = vec![Locator::udpv4(Ipv4Addr::new(10, 0, 0, 9), 7411)];
    d.lease_duration = Duration::from_secs(20);
    encode_participant_with_properties(&d, &[("PARTICIPANT_TYPE", "CLIENT")])
}

fn my_writer() -> DiscoveredWriterData {
    let g = Guid::new(ME, EntityId::new(1, entity_kind::USER_WRITER_WITH_KEY));
    DiscoveredWriterData::new(g, "Square", "ShapeType")
}

fn peer_reader() -> DiscoveredReaderData {
    let g = Guid::new(PEER, EntityId::new(1, entity_kind::USER_READER_WITH_KEY));
    DiscoveredReaderData::new(g, "Square", "ShapeType")
}

fn is_ping(t: &Transmit) -> bool {
    t.dest.info_dst() == Some(server_prefix(0))
        && t.submessages.iter().any(
            |s| matches!(s, OutSubmessage::Heartbeat(h) if h.writer_id == EntityId::SPDP_WRITER),
        )
        && t.submessages
            .iter()
            .any(|s| matches!(s, OutSubmessage::Data(d) if d.writer_id == EntityId::SPDP_WRITER))
}

/// Whether the SEDP publications writer sends anything (its handshake HEARTBEAT first).
fn sends_sedp(out: &[(Transmit, Vec<u8>)]) -> bool {
    let w = EntityId::SEDP_PUBLICATIONS_WRITER;
    out.iter().any(|(t, _)| {
        t.submessages.iter().any(|s| match s {
            OutSubmessage::Data(d) => d.writer_id == w,
            OutSubmessage::Heartbeat(h) => h.writer_id == w,
            _ => false,
        })
    })
}

/// The server's SEDP publications reader acknowledges nothing yet (the writer's handshake).
fn server_acknack(c: &mut DiscoveryServerClient, now: Instant) {
    use tessera_rtps::wire::{AckNack, SequenceNumberSet};
    let a = OutSubmessage::AckNack(AckNack {
        reader_id: EntityId::SEDP_PUBLICATIONS_READER,
        writer_id: EntityId::SEDP_PUBLICATIONS_WRITER,
        reader_sn_state: SequenceNumberSet::empty(1),
        count: 1,
        final_flag: false,
    });
    let mut t = to_client(vec![a]);
    t.dest = Destination::Endpoint {
        guid: Guid::new(ME, EntityId::SEDP_PUBLICATIONS_WRITER),
        locators: *t.dest.locators(),
    };
    deliver(c, server_prefix(0), &t, now);
}

/// Runs the client's timers from `from` to `to`, returning the instants at which it pinged.
fn ping_times(c: &mut DiscoveryServerClient, from: Instant, to: Instant) -> Vec<Duration> {
    let mut now = from;
    let mut pings = Vec::new();
    loop {
        for (t, _) in drain(c, now) {
            if is_ping(&t) {
                pings.push(now - from);
            }
        }
        match c.poll_timeout() {
            Some(t) if t <= to => {
                now = now.max(t);
                c.handle_timeout(now);
            }
            _ => return pings,
        }
    }
}

#[test]
fn ping_is_what_a_fast_dds_server_accepts() {
    let now = epoch();
    let mut c = client(now);
    c.handle_timeout(now);
    let out = drain(&mut c, now);
    // Besides the ping, only the builtin readers' pre-emptive ACKNACKs to the server.
    assert!(
        out.iter()
            .all(|(t, _)| t.dest.locators().as_slice() == [server_locator()]),
        "no multicast SPDP"
    );
    let pings: Vec<_> = out.iter().filter(|(t, _)| is_ping(t)).collect();
    assert_eq!(pings.len(), 1, "one ping");
    let (_, bytes) = pings[0];
    assert!(out.iter().all(|(o, _)| is_ping(o)
        || o.submessages
            .iter()
            .all(|s| matches!(s, OutSubmessage::AckNack(_)))));
    // On the wire: INFO_DST(server), HEARTBEAT, INFO_TS, DATA(p) with both sample identities.
    let subs: Vec<_> = MessageReceiver::new(bytes)
        .unwrap()
        .map(|s| s.unwrap())
        .collect();
    assert!(subs.iter().all(|s| s.dest_prefix == server_prefix(0)));
    let d = subs
        .iter()
        .find_map(|s| match &s.submessage {
            Submessage::Data(d) => Some(*d),
            _ => None,
        })
        .unwrap();
    assert_eq!(d.reader_id, EntityId::SPDP_READER);
    let q = d.inline_qos.as_ref().unwrap();
    let si = q.get(PID_FASTDDS_SAMPLE_IDENTITY).expect("PID 0x800f");
    assert_eq!(si.len(), 24);
    assert_eq!(&si[..12], &ME.0);
    assert_eq!(&si[12..16], &EntityId::SPDP_WRITER.0);
    assert!(q.get(0x0083).is_some());
    let p = SpdpParticipantData::decode(d.payload).unwrap();
    assert_eq!(p.vendor_id, tessera_rtps::types::VENDOR_FASTDDS);
    assert!(p.builtin_endpoints.contains(0x3f));
    assert!(p.metatraffic_multicast_locators.is_empty());
    assert_eq!(p.lease_duration, Duration::from_secs(20));
    let props = decode_properties(d.payload).unwrap();
    assert_eq!(participant_type(&props), Some(ParticipantType::Client));
    assert!(props.iter().any(|(k, v)| k == "DS_VERSION" && v == "2.0"));
}

#[test]
fn pings_fast_then_slow_then_every_three_seconds_once_heard() {
    let t0 = epoch();
    let mut c = client(t0);
    c.announce_writer(my_writer(), t0);
    let pings = ping_times(&mut c, t0, t0 + Duration::from_millis(1400));
    let ms: Vec<u128> = pings.iter().map(|d| d.as_millis()).collect();
    assert_eq!(ms, [0, 100, 200, 300, 400, 850, 1300]);
    // No SEDP before the server's DATA(p).
    assert!(!sends_sedp(&drain(
        &mut c,
        t0 + Duration::from_millis(1400)
    )));

    let now = t0 + Duration::from_millis(1500);
    let spdp = EntityId::SPDP_WRITER;
    deliver(
        &mut c,
        server_prefix(0),
        &to_client(vec![data(spdp, EntityId::SPDP_READER, 1, server_data())]),
        now,
    );
    assert!(c.server_heard(0));
    let ev = events(&mut c);
    assert!(ev.iter().any(
        |e| matches!(e, EngineEvent::ParticipantDiscovered(p) if p.guid_prefix == server_prefix(0))
    ));
    let out = drain(&mut c, now);
    assert!(sends_sedp(&out), "SEDP with the server once it is heard");
    for (t, _) in &out {
        if let Some(g) = t.dest.guid() {
            assert_eq!(g.prefix, server_prefix(0), "SEDP only with the server");
        }
    }
    let pings = ping_times(&mut c, now, now + Duration::from_millis(6500));
    let ms: Vec<u128> = pings.iter().map(|d| d.as_millis()).collect();
    assert_eq!(ms, [3000, 6000]);
}

#[test]
fn relayed_announcements_match_and_a_relayed_dispose_unmatches() {
    let now = epoch();
    let mut c = client(now);
    c.announce_writer(my_writer(), now);
    c.handle_timeout(now);
    drain(&mut c, now);
    let spdp = EntityId::SPDP_WRITER;
    let rd = EntityId::SPDP_READER;
    // The server's own DATA(p), then PEER's relayed (server prefix, server SNs).
    deliver(
        &mut c,
        server_prefix(0),
        &to_client(vec![
            data(spdp, rd, 1, server_data()),
            data(spdp, rd, 2, peer_data()),
        ]),
        now,
    );
    let ev = events(&mut c);
    assert!(ev
        .iter()
        .any(|e| matches!(e, EngineEvent::ParticipantDiscovered(p) if p.guid_prefix == PEER)));
    // Its reader, relayed through the server's SEDP subscriptions writer.
    deliver(
        &mut c,
        server_prefix(0),
        &to_client(vec![data(
            EntityId::SEDP_SUBSCRIPTIONS_WRITER,
            EntityId::SEDP_SUBSCRIPTIONS_READER,
            1,
            peer_reader().to_payload(),
        )]),
        now,
    );
    let ev = events(&mut c);
    let matched = ev.iter().find_map(|e| match e {
        EngineEvent::Matched { local, remote } => Some((*local, remote.clone())),
        _ => None,
    });
    let (local, remote) = matched.expect("relayed reader matched");
    assert_eq!(local, my_writer().guid);
    assert_eq!(remote.guid(), peer_reader().guid);
    assert_eq!(
        remote.unicast_locators(),
        &[Locator::udpv4(Ipv4Addr::new(10, 0, 0, 9), 7411)],
        "user data goes peer to peer"
    );
    // The relayed participant does not expire on a lease of its own while the server lives.
    let later = now + Duration::from_secs(30);
    deliver(
        &mut c,
        server_prefix(0),
        &to_client(vec![OutSubmessage::Heartbeat(Heartbeat {
            reader_id: rd,
            writer_id: spdp,
            first_sn: 1,
            last_sn: 2,
            count: 1,
            final_flag: true,
            liveliness_flag: false,
        })]),
        later - Duration::from_secs(1),
    );
    c.handle_timeout(later);
    assert!(!events(&mut c)
        .iter()
        .any(|e| matches!(e, EngineEvent::ParticipantLost { prefix, .. } if *prefix == PEER)));
    // DATA(Up) of PEER relayed by the server: unmatched, then lost.
    let up = OutSubmessage::Data(OutData {
        reader_id: rd,
        writer_id: spdp,
        writer_sn: 3,
        inline_qos: InlineQos {
            key_hash: Some(Guid::new(PEER, EntityId::PARTICIPANT).to_bytes()),
            status_info: 3,
            sample_identity: Some((Guid::new(PEER, spdp), 2)),
            original_writer: None,
            coherent_set: None,
            group: None,
        },
        payload_kind: PayloadKind::None,
        payload: Arc::new(Vec::new()),
    });
    deliver(&mut c, server_prefix(0), &to_client(vec![up]), later);
    let ev = events(&mut c);
    let unmatched = ev
        .iter()
        .position(|e| matches!(e, EngineEvent::Unmatched { remote, .. } if remote.prefix == PEER))
        .expect("unmatched");
    let lost = ev
        .iter()
        .position(|e| matches!(e, EngineEvent::ParticipantLost { prefix, reason: LostReason::Disposed } if *prefix == PEER))
        .expect("lost");
    assert!(unmatched < lost);
}

#[test]
fn server_lease_expiry_keeps_what_it_relayed_and_pings_again() {
    let now = epoch();
    let mut c = client(now);
    c.handle_timeout(now);
    drain(&mut c, now);
    let spdp = EntityId::SPDP_WRITER;
    let rd = EntityId::SPDP_READER;
    deliver(
        &mut c,
        server_prefix(0),
        &to_client(vec![
            data(spdp, rd, 1, server_data()),
            data(spdp, rd, 2, peer_data()),
        ]),
        now,
    );
    events(&mut c);
    let later = now + Duration::from_secs(21);
    let pings = ping_times(&mut c, now, later);
    // Every 3 s while the server lived, then fast again once its lease (20 s) ran out.
    let after: Vec<u128> = pings
        .iter()
        .filter(|d| d.as_secs() >= 20)
        .map(|d| d.as_millis() - 20_000)
        .collect();
    assert_eq!(after, [0, 100, 200, 300, 400, 850], "{pings:?}");
    let ev = events(&mut c);
    assert!(
        ev.iter().any(|e| matches!(e, EngineEvent::ParticipantLost { prefix, reason: LostReason::LeaseExpired } if *prefix == server_prefix(0))),
        "{ev:?}"
    );
    // The peer it relayed stays: user data keeps flowing while the server is down.
    assert!(
        !ev.iter()
            .any(|e| matches!(e, EngineEvent::ParticipantLost { prefix, .. } if *prefix == PEER)),
        "{ev:?}"
    );
    assert!(!c.server_heard(0));
}

#[test]
fn leaving_sends_endpoint_disposes_then_participant_dispose() {
    let now = epoch();
    let mut c = client(now);
    c.announce_writer(my_writer(), now);
    c.handle_timeout(now);
    deliver(
        &mut c,
        server_prefix(0),
        &to_client(vec![data(
            EntityId::SPDP_WRITER,
            EntityId::SPDP_READER,
            1,
            server_data(),
        )]),
        now,
    );
    drain(&mut c, now);
    server_acknack(&mut c, now);
    drain(&mut c, now);
    c.shutdown(now);
    let out = drain(&mut c, now);
    let uw = out.iter().position(|(t, _)| {
        t.submessages.iter().any(|s| {
            matches!(s, OutSubmessage::Data(d)
            if d.writer_id == EntityId::SEDP_PUBLICATIONS_WRITER && d.inline_qos.status_info == 3)
        })
    });
    let up = out.iter().position(|(t, _)| {
        t.submessages.iter().any(|s| {
            matches!(s, OutSubmessage::Data(d)
            if d.writer_id == EntityId::SPDP_WRITER && d.inline_qos.status_info == 3
               && d.inline_qos.sample_identity.is_some())
        })
    });
    let (uw, up) = (uw.expect("DATA(Uw)"), up.expect("DATA(Up)"));
    assert!(uw < up);
    // No more pings once gone.
    assert!(
        c.poll_timeout()
            .is_none_or(|t| t > now + Duration::from_secs(3))
            || {
                c.handle_timeout(now + Duration::from_secs(10));
                !drain(&mut c, now + Duration::from_secs(10))
                    .iter()
                    .any(|(t, _)| is_ping(t))
            }
    );
}

#[test]
fn ignores_discovery_from_non_servers_and_forged_disposes() {
    let now = epoch();
    let mut c = client(now);
    c.handle_timeout(now);
    drain(&mut c, now);
    // A non-server sends its DATA(p) straight to us: a client takes discovery from servers only.
    deliver(
        &mut c,
        PEER,
        &to_client(vec![data(
            EntityId::SPDP_WRITER,
            EntityId::SPDP_READER,
            1,
            peer_data(),
        )]),
        now,
    );
    assert!(events(&mut c).is_empty());
    assert!(!c.server_heard(0));
    // Garbage from the server is counted, not fatal.
    deliver(
        &mut c,
        server_prefix(0),
        &to_client(vec![data(
            EntityId::SPDP_WRITER,
            EntityId::SPDP_READER,
            1,
            vec![0, 3, 0, 0, 0xff],
        )]),
        now,
    );
    assert_eq!(c.rejected(), 1);
    let _ = PROP_PARTICIPANT_TYPE;
}
