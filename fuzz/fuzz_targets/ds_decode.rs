//! Fuzzes the discovery-server protocol's decoders and both engines.
//!
//! The first byte picks how the rest is used: as a `ROS_DISCOVERY_SERVER` value, as an SPDP
//! payload's property list (and, sealed with a valid checksum, as a BACKUP server's backup
//! file), as a whole datagram, or as the payload of a client's DATA(p) /
//! DATA(w) / DATA(r) (or a dispose) wrapped in a valid message. The server engine and a client
//! engine take it; neither may panic, and after the leases run out the server must hold no
//! client (nothing a peer sends makes it keep state for ever).
#![no_main]

use std::net::Ipv4Addr;
use std::sync::Arc;
use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use tessera_rtps::discovery::ds_common::{
    decode_properties, parse_server_list, participant_type, server_prefix,
};
use tessera_rtps::discovery::{
    DiscoveryEngine, DiscoveryServerClient, DiscoveryServerEngine, DsClientConfig, DsServerConfig,
    RemoteServer, SelectAll, SpdpParticipantData,
};
use tessera_rtps::sim::epoch;
use tessera_rtps::types::{EntityId, GuidPrefix, Locator, Locators};
use tessera_rtps::wire::{MessageBuilder, MessageReceiver, PayloadKind, Submessage};
use tessera_rtps::writer::{InlineQos, OutData, OutSubmessage, Transmit};

fn feed(server: &mut DiscoveryServerEngine, client: &mut DiscoveryServerClient, bytes: &[u8]) {
    let now = epoch();
    let Ok(rx) = MessageReceiver::new(bytes) else {
        return;
    };
    for rs in rx {
        let Ok(rs) = rs else { break };
        server.handle_submessage(&rs, now);
        let e = match &rs.submessage {
            Submessage::Data(d) => d.writer_id,
            Submessage::Heartbeat(h) => h.writer_id,
            Submessage::Gap(g) => g.writer_id,
            Submessage::AckNack(a) => a.writer_id,
            _ => continue,
        };
        if client.owns(e) {
            client.handle_submessage(&rs, now);
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&sel, rest)) = data.split_first() else {
        return;
    };
    match sel % 4 {
        0 => {
            if let Ok(s) = std::str::from_utf8(rest) {
                let _ = parse_server_list(s);
            }
            return;
        }
        1 => {
            if let Ok(p) = decode_properties(rest) {
                let _ = participant_type(&p);
            }
            // The bytes as a backup body with a valid checksum, so that the parser behind it
            // is reached: restoring may refuse it, never panic.
            let mut sealed = b"TSDSBK01".to_vec();
            sealed.extend_from_slice(rest);
            let sum = md5::compute(&sealed).0;
            sealed.extend_from_slice(&sum);
            let mut server = DiscoveryServerEngine::new(
                DsServerConfig {
                    id: 0,
                    locators: vec![Locator::udpv4(Ipv4Addr::LOCALHOST, 11811)],
                    selector: Box::new(SelectAll),
                    lease: Duration::from_secs(20),
                    wall_clock_nanos: 0,
                    backup: true,
                    links: vec![],
                },
                epoch(),
            );
            let _ = server.restore(&sealed, epoch());
            return;
        }
        _ => {}
    }
    let now = epoch();
    let meta = Locator::udpv4(Ipv4Addr::LOCALHOST, 11811);
    let mut server = DiscoveryServerEngine::new(
        DsServerConfig {
            id: 0,
            locators: vec![meta],
            selector: Box::new(SelectAll),
            lease: Duration::from_secs(20),
            wall_clock_nanos: 0,
            backup: false,
            links: vec![],
        },
        now,
    );
    let mut l = Locators::new();
    l.push(meta);
    let mut client = DiscoveryServerClient::new(
        DsClientConfig {
            participant: SpdpParticipantData::new(GuidPrefix([7; 12])),
            servers: vec![RemoteServer { id: 0, locators: l }],
            shared_reassembly: None,
            shared_buffered: None,
            wall_clock_nanos: 0,
        },
        now,
    );
    if sel % 4 == 2 {
        feed(&mut server, &mut client, rest);
    } else {
        // The payload of a built-in DATA from a client (to the server) or the server (to the
        // client), chosen by the selector's high bits.
        let writer = match (sel >> 2) % 3 {
            0 => EntityId::SPDP_WRITER,
            1 => EntityId::SEDP_PUBLICATIONS_WRITER,
            _ => EntityId::SEDP_SUBSCRIPTIONS_WRITER,
        };
        let from = if sel & 0x40 != 0 {
            server_prefix(0)
        } else {
            GuidPrefix([9; 12])
        };
        let d = OutSubmessage::Data(OutData {
            reader_id: EntityId::UNKNOWN,
            writer_id: writer,
            writer_sn: 1,
            inline_qos: InlineQos {
                key_hash: None,
                status_info: if sel & 0x80 != 0 { 3 } else { 0 },
                sample_identity: None,
                original_writer: None,
                coherent_set: None,
                group: None,
            },
            payload_kind: PayloadKind::Data,
            payload: Arc::new(rest.to_vec()),
        });
        let t = Transmit {
            dest: Default::default(),
            submessages: vec![d],
        };
        let mut buf = Vec::new();
        let mut scratch = Vec::new();
        let mut m = MessageBuilder::new(&mut buf, from);
        for sm in &t.submessages {
            m.submessage(&sm.as_submessage(&mut scratch));
        }
        feed(&mut server, &mut client, &buf);
    }
    let later = now + Duration::from_secs(30);
    server.handle_timeout(later);
    client.handle_timeout(later);
    let mut t = Transmit::new();
    while server.poll_transmit(later, &mut t) {}
    while client.poll_transmit(later, &mut t) {}
    while client.poll_event().is_some() {}
    assert!(
        server.clients().is_empty(),
        "a silent client outlived its lease"
    );
});
