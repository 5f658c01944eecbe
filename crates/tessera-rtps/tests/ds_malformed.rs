//! Hostile input for the discovery-server engines: mutated copies of valid client and server
//! datagrams never panic either engine, and a flood of forged clients is bounded and expires.

use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use tessera_rtps::discovery::ds_common::server_prefix;
use tessera_rtps::discovery::*;
use tessera_rtps::sim::{epoch, XorShift};
use tessera_rtps::types::{entity_kind, EntityId, Guid, GuidPrefix, Locator};
use tessera_rtps::wire::{MessageBuilder, MessageReceiver, Submessage};
use tessera_rtps::writer::Transmit;

#[path = "support/ds.rs"]
mod ds_support;

fn server(now: Instant) -> DiscoveryServerEngine {
    DiscoveryServerEngine::new(
        DsServerConfig {
            id: 0,
            locators: vec![Locator::udpv4(Ipv4Addr::LOCALHOST, 11811)],
            selector: Box::new(SelectAll),
            lease: Duration::from_secs(20),
            wall_clock_nanos: 0,
            backup: false,
            links: vec![],
        },
        now,
    )
}

fn client(prefix: GuidPrefix, now: Instant) -> DiscoveryServerClient {
    let mut d = SpdpParticipantData::new(prefix);
    d.metatraffic_unicast_locators = vec![Locator::udpv4(Ipv4Addr::LOCALHOST, 7410)];
    ds_support::ds_client(d, now)
}

/// Everything `poll` yields, encoded as sent by `from`.
fn datagrams(from: GuidPrefix, mut poll: impl FnMut(&mut Transmit) -> bool) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut t = Transmit::new();
    while poll(&mut t) {
        let mut buf = Vec::new();
        let mut scratch = Vec::new();
        let mut m = MessageBuilder::new(&mut buf, from);
        if let Some(dst) = t.dest.info_dst() {
            m.submessage(&Submessage::InfoDst(dst));
        }
        for sm in &t.submessages {
            m.submessage(&sm.as_submessage(&mut scratch));
        }
        out.push(buf);
    }
    out
}

fn feed_server(s: &mut DiscoveryServerEngine, bytes: &[u8], now: Instant) {
    let Ok(rx) = MessageReceiver::new(bytes) else {
        return;
    };
    for rs in rx {
        let Ok(rs) = rs else { break };
        s.handle_submessage(&rs, now);
    }
}

fn feed_client(c: &mut DiscoveryServerClient, bytes: &[u8], now: Instant) {
    let Ok(rx) = MessageReceiver::new(bytes) else {
        return;
    };
    for rs in rx {
        let Ok(rs) = rs else { break };
        c.handle_submessage(&rs, now);
    }
}

#[test]
fn mutated_datagrams_never_panic_either_engine() {
    let now = epoch();
    // Valid traffic: a client's ping and DATA(w), the server's answers.
    let me = GuidPrefix([3; 12]);
    let mut c = client(me, now);
    let g = Guid::new(me, EntityId::new(1, entity_kind::USER_WRITER_WITH_KEY));
    c.announce_writer(DiscoveredWriterData::new(g, "T", "X"), now);
    c.handle_timeout(now);
    let mut s = server(now);
    let mut corpus = datagrams(me, |t| c.poll_transmit(now, t));
    for d in corpus.clone() {
        feed_server(&mut s, &d, now);
    }
    corpus.extend(datagrams(server_prefix(0), |t| s.poll_transmit(now, t)));
    assert!(corpus.len() >= 2);
    let mut rng = XorShift::new(0x5eed);
    for i in 0..3000 {
        let mut d = corpus[i % corpus.len()].clone();
        for _ in 0..=rng.below(8) {
            let at = 20 + rng.below((d.len() - 20) as u64) as usize;
            d[at] = rng.next_u64() as u8;
        }
        if rng.chance(0.1) {
            d.truncate(20 + rng.below((d.len() - 20) as u64) as usize);
        }
        feed_server(&mut s, &d, now);
        feed_client(&mut c, &d, now);
        let mut t = Transmit::new();
        while s.poll_transmit(now, &mut t) {}
        while c.poll_transmit(now, &mut t) {}
        while c.poll_event().is_some() {}
    }
    assert!(s.rejected() > 0, "mutations were noticed");
}

#[test]
fn a_flood_of_forged_clients_is_bounded_and_expires() {
    let now = epoch();
    let mut s = server(now);
    for i in 0..(MAX_CLIENTS as u32 + 200) {
        let mut p = [0u8; 12];
        p[..4].copy_from_slice(&i.to_le_bytes());
        let mut c = client(GuidPrefix(p), now);
        c.handle_timeout(now);
        for d in datagrams(GuidPrefix(p), |t| c.poll_transmit(now, t)) {
            feed_server(&mut s, &d, now);
        }
    }
    assert_eq!(s.clients().len(), MAX_CLIENTS);
    assert_eq!(s.counters().over_limit, 200);
    s.handle_timeout(now + Duration::from_secs(21));
    assert!(s.clients().is_empty());
    assert_eq!(s.counters().expired, MAX_CLIENTS as u64);
}
