//! A scripted remote participant over a raw UDP socket: it announces itself (SPDP) and a writer
//! (SEDP) exactly as the test says, so tests can re-announce with changed data or forge input.

use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::time::{Duration, Instant};
use tessera::rtps::discovery::{
    encode_dispose_inline_qos, encode_dispose_key_payload, BuiltinTopicKind, DiscoveredReaderData,
    DiscoveredWriterData, SpdpParticipantData, StatusInfo,
};
use tessera::rtps::types::{EntityId, Guid, GuidPrefix, Locator};
use tessera::rtps::wire::{
    Data, Heartbeat, MessageBuilder, MessageReceiver, ParameterList, PayloadKind, Submessage,
};

/// Where SPDP goes in domain 0; every participant of the namespace hears it, and the runtime
/// routes built-in and user submessages alike whatever socket they arrive on.
const SPDP: SocketAddrV4 = SocketAddrV4::new(Ipv4Addr::new(239, 255, 0, 1), 7400);

pub struct FakePeer {
    pub prefix: GuidPrefix,
    pub spdp: SpdpParticipantData,
    out: UdpSocket,
    spdp_seq: i64,
    sedp_seq: i64,
    sedp_sub_seq: i64,
    hb_count: i32,
}

/// A bound loopback socket and its locator.
pub fn listener() -> (UdpSocket, Locator) {
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    s.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
    let port = s.local_addr().unwrap().port();
    (s, Locator::udpv4(Ipv4Addr::LOCALHOST, port))
}

impl FakePeer {
    pub fn new(tag: u8, default_unicast: Locator, metatraffic: Locator) -> FakePeer {
        let prefix = GuidPrefix([0x01, 0x0f, tag, 0xaa, 1, 2, 3, 4, 5, 6, 7, tag]);
        let mut spdp = SpdpParticipantData::new(prefix);
        spdp.domain_id = Some(0);
        spdp.default_unicast_locators = vec![default_unicast];
        spdp.metatraffic_unicast_locators = vec![metatraffic];
        let out = UdpSocket::bind("127.0.0.1:0").unwrap();
        out.set_multicast_loop_v4(true).unwrap();
        FakePeer {
            prefix,
            spdp,
            out,
            spdp_seq: 0,
            sedp_seq: 0,
            sedp_sub_seq: 0,
            hb_count: 0,
        }
    }

    fn send_message(&self, source: GuidPrefix, sm: &Submessage<'_>) {
        let mut buf = Vec::new();
        MessageBuilder::new(&mut buf, source).submessage(sm);
        self.out.send_to(&buf, SPDP).unwrap();
    }

    /// Announces (or re-announces) the participant with its current `spdp` data.
    pub fn announce(&mut self) {
        let payload = self.spdp.to_payload();
        self.send_spdp(PayloadKind::Data, &payload, &[]);
    }

    /// Sends SPDP DATA as the next SPDP sample.
    fn send_spdp(&mut self, kind: PayloadKind, payload: &[u8], qos: &[u8]) {
        self.spdp_seq += 1;
        self.send_message(
            self.prefix,
            &Submessage::Data(Data {
                reader_id: EntityId::SPDP_READER,
                writer_id: EntityId::SPDP_WRITER,
                writer_sn: self.spdp_seq,
                inline_qos: parse_qos(qos),
                payload_kind: kind,
                payload,
            }),
        );
    }

    /// Announces (or re-announces) a writer over SEDP.
    pub fn announce_writer(&mut self, w: &DiscoveredWriterData) {
        self.send_sedp(true, PayloadKind::Data, &w.to_payload(), &[]);
    }

    /// Announces (or re-announces) a reader over SEDP.
    pub fn announce_reader(&mut self, r: &DiscoveredReaderData) {
        self.send_sedp(false, PayloadKind::Data, &r.to_payload(), &[]);
    }

    /// Sends SEDP publication (or subscription) DATA, e.g. a dispose, as the next sample of
    /// that SEDP writer.
    fn send_sedp(&mut self, publications: bool, kind: PayloadKind, payload: &[u8], qos: &[u8]) {
        let (writer_id, reader_id, seq) = if publications {
            self.sedp_seq += 1;
            (
                EntityId::SEDP_PUBLICATIONS_WRITER,
                EntityId::SEDP_PUBLICATIONS_READER,
                self.sedp_seq,
            )
        } else {
            self.sedp_sub_seq += 1;
            (
                EntityId::SEDP_SUBSCRIPTIONS_WRITER,
                EntityId::SEDP_SUBSCRIPTIONS_READER,
                self.sedp_sub_seq,
            )
        };
        self.send_message(
            self.prefix,
            &Submessage::Data(Data {
                reader_id,
                writer_id,
                writer_sn: seq,
                inline_qos: parse_qos(qos),
                payload_kind: kind,
                payload,
            }),
        );
    }

    /// Sends an SPDP dispose of participant `victim` (which should be this peer's own GUID).
    pub fn dispose_participant(&mut self, victim: Guid) {
        let mut payload = Vec::new();
        encode_dispose_key_payload(BuiltinTopicKind::Participant, victim, &mut payload);
        let mut qos = Vec::new();
        encode_dispose_inline_qos(victim, StatusInfo(3), &mut qos);
        self.send_spdp(PayloadKind::Key, &payload, &qos);
    }

    /// Sends an SEDP dispose of the writer `victim` (which should be one of this peer's).
    pub fn dispose_writer(&mut self, victim: Guid) {
        let mut payload = Vec::new();
        encode_dispose_key_payload(BuiltinTopicKind::Endpoint, victim, &mut payload);
        let mut qos = Vec::new();
        encode_dispose_inline_qos(victim, StatusInfo(3), &mut qos);
        self.send_sedp(true, PayloadKind::Key, &payload, &qos);
    }

    /// A HEARTBEAT from one of this peer's writers that asks readers to answer.
    pub fn heartbeat(&mut self, writer: EntityId) {
        self.heartbeat_range(writer, 1, 0);
    }

    /// A HEARTBEAT saying the writer holds `first..=last`.
    pub fn heartbeat_range(&mut self, writer: EntityId, first: i64, last: i64) {
        self.hb_count += 1;
        self.send_message(
            self.prefix,
            &Submessage::Heartbeat(Heartbeat {
                reader_id: EntityId::UNKNOWN,
                writer_id: writer,
                first_sn: first,
                last_sn: last,
                count: self.hb_count,
                final_flag: false,
                liveliness_flag: false,
            }),
        );
    }

    pub fn guid(&self, e: EntityId) -> Guid {
        Guid::new(self.prefix, e)
    }
}

/// Inline QoS from encoded bytes; none when empty.
fn parse_qos(qos: &[u8]) -> Option<ParameterList<'_>> {
    if qos.is_empty() {
        None
    } else {
        ParameterList::parse(qos, true).ok()
    }
}

/// Whether `sock` receives a datagram holding a submessage for which `f` is true within `secs`,
/// calling `poke` every 100 ms meanwhile (e.g. to send a heartbeat).
pub fn receives(
    sock: &UdpSocket,
    secs: u64,
    mut poke: impl FnMut(),
    f: impl Fn(&Submessage<'_>) -> bool,
) -> bool {
    let deadline = Instant::now() + Duration::from_secs(secs);
    let mut buf = vec![0u8; 65536];
    let mut next_poke = Instant::now();
    while Instant::now() < deadline {
        if Instant::now() >= next_poke {
            poke();
            next_poke = Instant::now() + Duration::from_millis(100);
        }
        let Ok(n) = sock.recv(&mut buf) else { continue };
        let Ok(rx) = MessageReceiver::new(&buf[..n]) else {
            continue;
        };
        if rx.flatten().any(|rs| f(&rs.submessage)) {
            return true;
        }
    }
    false
}
