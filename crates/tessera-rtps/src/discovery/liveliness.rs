//! The writer liveliness protocol (RTPS 2.5 §8.4.13): ParticipantMessageData on the built-in
//! endpoints ENTITYID_P2P_BUILTIN_PARTICIPANT_MESSAGE_WRITER / _READER.
//!
//! A participant writes a message keyed by (its GUID prefix, kind): kind AUTOMATIC
//! periodically while it has AUTOMATIC writers with a finite lease (a third of the shortest),
//! kind MANUAL when the application asserts the liveliness of its MANUAL_BY_PARTICIPANT
//! writers. The endpoints are reliable, the writer transient-local and keep-last 1 per key, as
//! Cyclone DDS and Fast DDS have them. A received message renews the liveliness of the
//! sender's writers of that kind ([`ParticipantMessages::poll_asserted`]); a message that
//! names another participant than its sender is dropped and counted.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::builtin::{feed_reader, sedp_writer_config};
use super::BuiltinEndpointSet;
use crate::reader::{ReaderConfig, ReaderCore};
use crate::types::{EntityId, Guid, GuidPrefix, Locators, Timestamp};
use crate::wire::{ReceivedSubmessage, Submessage};
use crate::writer::{Transmit, WriterCore};

/// ParticipantMessageData kind: the participant's AUTOMATIC writers are alive.
pub const PMD_AUTOMATIC: [u8; 4] = [0, 0, 0, 1];
/// ParticipantMessageData kind: the participant's MANUAL_BY_PARTICIPANT writers are alive.
pub const PMD_MANUAL: [u8; 4] = [0, 0, 0, 2];

/// The shortest period between two AUTOMATIC messages.
const MIN_AUTOMATIC_PERIOD: Duration = Duration::from_millis(20);

/// The participant-message writer and reader of one participant; see the module docs.
#[derive(Debug)]
pub struct ParticipantMessages {
    prefix: GuidPrefix,
    writer: WriterCore,
    reader: ReaderCore,
    automatic_period: Option<Duration>,
    next_automatic: Option<Instant>,
    asserted: VecDeque<(GuidPrefix, bool)>,
    /// Messages that did not decode or named another participant than their sender.
    pub rejected: u64,
}

impl ParticipantMessages {
    /// The endpoints of participant `prefix`.
    pub fn new(prefix: GuidPrefix) -> Self {
        ParticipantMessages {
            prefix,
            writer: WriterCore::new(sedp_writer_config(Guid::new(
                prefix,
                EntityId::P2P_MESSAGE_WRITER,
            ))),
            reader: ReaderCore::new(ReaderConfig::new(Guid::new(
                prefix,
                EntityId::P2P_MESSAGE_READER,
            ))),
            automatic_period: None,
            next_automatic: None,
            asserted: VecDeque::new(),
            rejected: 0,
        }
    }

    /// The built-in endpoint bits these endpoints add to the SPDP announcement.
    pub const ENDPOINTS: u32 = BuiltinEndpointSet::PARTICIPANT_MESSAGE_WRITER
        | BuiltinEndpointSet::PARTICIPANT_MESSAGE_READER;

    /// Whether `entity` is one of these endpoints (the writer id of reader-side input, or of
    /// an ACKNACK / NACK_FRAG).
    pub fn owns(entity: EntityId) -> bool {
        entity == EntityId::P2P_MESSAGE_WRITER
    }

    /// Matches a peer's participant-message endpoints (those it announced) at `meta`.
    pub fn add_peer(
        &mut self,
        peer: GuidPrefix,
        eps: BuiltinEndpointSet,
        meta: Locators,
        now: Instant,
    ) {
        if eps.contains(BuiltinEndpointSet::PARTICIPANT_MESSAGE_READER) {
            let g = Guid::new(peer, EntityId::P2P_MESSAGE_READER);
            self.writer.add_reader(g, meta, true, true, now);
        }
        if eps.contains(BuiltinEndpointSet::PARTICIPANT_MESSAGE_WRITER) {
            let g = Guid::new(peer, EntityId::P2P_MESSAGE_WRITER);
            self.reader.add_writer(g, meta, true, now);
        }
    }

    /// Forgets a peer.
    pub fn remove_peer(&mut self, peer: GuidPrefix) {
        self.writer
            .remove_reader(Guid::new(peer, EntityId::P2P_MESSAGE_READER));
        self.reader
            .remove_writer(Guid::new(peer, EntityId::P2P_MESSAGE_WRITER));
    }

    /// The shortest lease of this participant's AUTOMATIC writers (`None`: none is finite):
    /// AUTOMATIC messages go out three times per lease from `now` on.
    pub fn set_automatic_lease(&mut self, lease: Option<Duration>, now: Instant) {
        let period = lease.map(|l| (l / 3).max(MIN_AUTOMATIC_PERIOD));
        if period != self.automatic_period {
            self.automatic_period = period;
            self.next_automatic = period.map(|_| now);
        }
    }

    /// Writes one message of `kind` (the participant's MANUAL writers asserted, or the
    /// periodic AUTOMATIC one).
    pub fn write(&mut self, kind: [u8; 4], ts: Timestamp, now: Instant) {
        let mut key = [0u8; 16];
        key[..12].copy_from_slice(&self.prefix.0);
        key[12..].copy_from_slice(&kind);
        let _ = self.writer.write(
            Arc::new(encode(self.prefix, kind)),
            Some(key),
            0,
            false,
            Some(ts),
            now,
        );
    }

    /// Handles a submessage for these endpoints; false when it is not theirs.
    pub fn handle(&mut self, rs: &ReceivedSubmessage<'_>, now: Instant) -> bool {
        let src = rs.source_prefix;
        match &rs.submessage {
            Submessage::AckNack(a) if a.writer_id == EntityId::P2P_MESSAGE_WRITER => {
                self.writer.on_acknack(src, a, now);
            }
            Submessage::NackFrag(n) if n.writer_id == EntityId::P2P_MESSAGE_WRITER => {
                self.writer.on_nack_frag(src, n, now);
            }
            sm if super::builtin::reader_input_writer(sm) == Some(EntityId::P2P_MESSAGE_WRITER) => {
                for s in feed_reader(&mut self.reader, rs, now) {
                    match decode(&s.payload) {
                        Some((prefix, kind)) if prefix == s.writer.prefix => {
                            if kind == PMD_AUTOMATIC || kind == PMD_MANUAL {
                                self.asserted.push_back((prefix, kind == PMD_MANUAL));
                            }
                        }
                        _ => self.rejected += 1,
                    }
                }
            }
            _ => return false,
        }
        true
    }

    /// A participant whose writers were asserted alive: its prefix and whether the message
    /// was MANUAL (its MANUAL_BY_PARTICIPANT writers) rather than AUTOMATIC.
    pub fn poll_asserted(&mut self) -> Option<(GuidPrefix, bool)> {
        self.asserted.pop_front()
    }

    /// Runs the timers; `ts` is the wall-clock time at `now` (for AUTOMATIC messages).
    pub fn handle_timeout(&mut self, now: Instant, ts: Timestamp) {
        if let (Some(at), Some(period)) = (self.next_automatic, self.automatic_period) {
            if now >= at {
                self.write(PMD_AUTOMATIC, ts, now);
                self.next_automatic = Some(now + period);
            }
        }
        self.writer.handle_timeout(now);
        self.reader.handle_timeout(now);
    }

    /// When [`ParticipantMessages::handle_timeout`] next has work.
    pub fn poll_timeout(&self) -> Option<Instant> {
        [
            self.next_automatic,
            self.writer.poll_timeout(),
            self.reader.poll_timeout(),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// The next datagram to send, if any.
    pub fn poll_transmit(&mut self, now: Instant, out: &mut Transmit) -> bool {
        self.writer.poll_transmit_into(now, out) || self.reader.poll_transmit_into(now, out)
    }
}

/// A ParticipantMessageData payload (CDR little-endian): prefix, kind, empty data.
pub fn encode(prefix: GuidPrefix, kind: [u8; 4]) -> Vec<u8> {
    let mut v = Vec::with_capacity(24);
    v.extend_from_slice(&[0, 1, 0, 0]);
    v.extend_from_slice(&prefix.0);
    v.extend_from_slice(&kind);
    v.extend_from_slice(&0u32.to_le_bytes());
    v
}

/// The participant and kind of a ParticipantMessageData payload (CDR, either endianness; the
/// opaque data after them is not needed). `None` when it is too short or not plain CDR.
pub fn decode(payload: &[u8]) -> Option<(GuidPrefix, [u8; 4])> {
    let body = match payload.get(..2)? {
        [0, 0] | [0, 1] => payload.get(4..)?,
        _ => return None,
    };
    let prefix = GuidPrefix(body.get(..12)?.try_into().ok()?);
    let kind = body.get(12..16)?.try_into().ok()?;
    Some((prefix, kind))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::Locator;
    use crate::wire::MessageReceiver;

    fn prefix(n: u8) -> GuidPrefix {
        GuidPrefix([n; 12])
    }

    #[test]
    fn payload_round_trip_and_malformed_input() {
        let p = prefix(7);
        assert_eq!(decode(&encode(p, PMD_MANUAL)), Some((p, PMD_MANUAL)));
        // Cyclone writes big-endian CDR with 4 bytes of opaque data.
        let mut be = vec![0, 0, 0, 0];
        be.extend_from_slice(&p.0);
        be.extend_from_slice(&PMD_AUTOMATIC);
        be.extend_from_slice(&[0, 0, 0, 4, 1, 2, 3, 4]);
        assert_eq!(decode(&be), Some((p, PMD_AUTOMATIC)));
        assert_eq!(decode(&[0, 1, 0, 0, 1, 2]), None);
        assert_eq!(decode(&[0, 2, 0, 0]), None, "PL_CDR is not this type");
        assert_eq!(decode(&[]), None);
    }

    /// Sends everything `from` has ready to `to`, through the wire codec.
    fn exchange(
        from: &mut ParticipantMessages,
        to: &mut ParticipantMessages,
        src: GuidPrefix,
        now: Instant,
    ) {
        let (mut buf, mut t, mut scratch) = (Vec::new(), Transmit::new(), Vec::new());
        while from.poll_transmit(now, &mut t) {
            buf.clear();
            let mut m = crate::wire::MessageBuilder::new(&mut buf, src);
            if let Some(dst) = t.dest.info_dst() {
                m.submessage(&Submessage::InfoDst(dst));
            }
            for sm in &t.submessages {
                m.submessage(&sm.as_submessage(&mut scratch));
            }
            for rs in MessageReceiver::new(&buf).unwrap() {
                to.handle(&rs.unwrap(), now);
            }
        }
    }

    /// Two participants' endpoints, driven by hand: a MANUAL message of A reaches B as an
    /// assertion of A.
    #[test]
    fn a_manual_assertion_reaches_the_peer() {
        let (pa, pb) = (prefix(1), prefix(2));
        let now = Instant::now();
        let (mut a, mut b) = (ParticipantMessages::new(pa), ParticipantMessages::new(pb));
        let eps = BuiltinEndpointSet(ParticipantMessages::ENDPOINTS);
        let at = |n: u8| -> Locators {
            [Locator::udpv4([127, 0, 0, n].into(), 7400)]
                .into_iter()
                .collect()
        };
        a.add_peer(pb, eps, at(2), now);
        b.add_peer(pa, eps, at(1), now);
        a.write(PMD_MANUAL, Timestamp::from_nanos(2), now);
        let mut got = Vec::new();
        // A few rounds: the reliable writer may first wait for the reader's ACKNACK.
        for round in 0..20 {
            let later = now + Duration::from_millis(200 * round);
            a.handle_timeout(later, Timestamp::from_nanos(4));
            b.handle_timeout(later, Timestamp::from_nanos(4));
            exchange(&mut a, &mut b, pa, later);
            exchange(&mut b, &mut a, pb, later);
            while let Some(x) = b.poll_asserted() {
                got.push(x);
            }
            if !got.is_empty() {
                break;
            }
        }
        assert_eq!(got, vec![(pa, true)]);
        assert_eq!(b.rejected, 0);
    }
}
