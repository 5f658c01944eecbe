//! Owned output of the reliability state machines: what to send, and to whom.
//!
//! [`crate::writer::WriterCore`] and [`crate::reader::ReaderCore`] never touch bytes on the
//! send side. They hand out a [`Transmit`]: one datagram's worth of [`OutSubmessage`]s plus a
//! [`Destination`]. The runtime encodes it straight into a reused send buffer:
//!
//! ```text
//! let mut b = MessageBuilder::new(&mut buf, local_prefix);
//! if let Some(p) = t.dest.info_dst() { b.submessage(&Submessage::InfoDst(p)); }
//! for sm in &t.submessages { b.submessage(&sm.as_submessage(&mut qos_scratch)); }
//! ```
//!
//! Payloads are `Arc<Vec<u8>>` shared with the writer's history, so building a transmit never
//! copies sample bytes; fragments are byte ranges of the same `Arc`.

use std::ops::Range;
use std::sync::Arc;

use crate::types::{EntityId, Guid, GuidPrefix, Locators, SequenceNumber, Timestamp};
use crate::wire::{
    pid, AckNack, Data, DataFrag, Gap, Heartbeat, HeartbeatFrag, NackFrag, ParameterList,
    ParameterListBuilder, PayloadKind, Submessage,
};

/// Size of the RTPS header plus an INFO_DST submessage: the fixed cost of every datagram the
/// state machines ask for.
pub const DATAGRAM_OVERHEAD: usize = crate::wire::HEADER_LEN + 16;

/// Where a [`Transmit`] goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Destination {
    /// One remote endpoint: send to its locators and precede the submessages with
    /// INFO_DST(guid.prefix).
    Endpoint {
        /// The remote reader or writer.
        guid: Guid,
        /// Its (unicast) locators.
        locators: Locators,
    },
    /// Locators shared by several endpoints (e.g. a multicast group); no INFO_DST.
    Locators(Locators),
}

impl Destination {
    /// The locators to send to.
    pub fn locators(&self) -> &Locators {
        match self {
            Destination::Endpoint { locators, .. } | Destination::Locators(locators) => locators,
        }
    }

    /// The prefix for INFO_DST, if the destination is a single participant.
    pub fn info_dst(&self) -> Option<GuidPrefix> {
        match self {
            Destination::Endpoint { guid, .. } => Some(guid.prefix),
            Destination::Locators(_) => None,
        }
    }

    /// The remote endpoint, if the destination is a single one.
    pub fn guid(&self) -> Option<Guid> {
        match self {
            Destination::Endpoint { guid, .. } => Some(*guid),
            Destination::Locators(_) => None,
        }
    }
}

impl Default for Destination {
    fn default() -> Self {
        Destination::Locators(Locators::new())
    }
}

/// PID of Fast DDS's sample identity (eProsima's `PID_CUSTOM_RELATED_SAMPLE_IDENTITY`): a
/// Fast DDS 2.9 discovery server drops a client's DATA(p) without it.
pub const PID_FASTDDS_SAMPLE_IDENTITY: u16 = 0x800f;
/// PID of the standard related sample identity (DDS-RPC), which Fast DDS 3.x reads.
pub const PID_RELATED_SAMPLE_IDENTITY: u16 = 0x0083;

/// PID_ORIGINAL_WRITER_INFO (RTPS 2.5 §9.6.3.9, inline QoS): a sample relayed by a service
/// that is not its writer (a durability service's replay) names its original writer and
/// sequence number. Value: `OriginalWriterInfo_t` = GUID_t (16) + SequenceNumber_t (8) +
/// the original writer's inline QoS as a ParameterList (we send an empty one, a sentinel).
pub const PID_ORIGINAL_WRITER_INFO: u16 = 0x0061;

/// PID_COHERENT_SET (RTPS 2.3 §9.6.4.1, inline QoS): the sequence number of the first sample
/// of the coherent set a sample belongs to (PRESENTATION `coherent_access`).
pub const PID_COHERENT_SET: u16 = 0x0056;
/// PID_GROUP_COHERENT_SET (RTPS 2.5 §9.6.4.2, GROUP access scope): the group sequence
/// number of the first sample of a group coherent set.
pub const PID_GROUP_COHERENT_SET: u16 = 0x0063;
/// PID_GROUP_SEQ_NUM (RTPS 2.5 §9.6.4.3, GROUP access scope): a sample's number in its
/// publisher.
pub const PID_GROUP_SEQ_NUM: u16 = 0x0064;
/// PID_WRITER_GROUP_INFO (RTPS 2.5 §9.6.4.4, GROUP access scope): the writers of a group
/// coherent set, as a GroupDigest_t (four octets).
pub const PID_WRITER_GROUP_INFO: u16 = 0x0065;

/// The inline QoS a writer attaches to a sample: PID_KEY_HASH, PID_STATUS_INFO and, for the
/// discovery-server protocol, the sample identity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct InlineQos {
    /// Key hash to send (None: not sent).
    pub key_hash: Option<[u8; 16]>,
    /// Status info flags (1 = disposed, 2 = unregistered); 0 is not sent.
    pub status_info: u32,
    /// Sample identity (writer GUID, sequence number) sent as both
    /// [`PID_RELATED_SAMPLE_IDENTITY`] and [`PID_FASTDDS_SAMPLE_IDENTITY`] (None: not sent).
    pub sample_identity: Option<(Guid, SequenceNumber)>,
    /// The original writer and sequence number of a relayed sample, sent as
    /// [`PID_ORIGINAL_WRITER_INFO`] (None: not sent).
    pub original_writer: Option<(Guid, SequenceNumber)>,
    /// [`PID_COHERENT_SET`] (None: not sent).
    pub coherent_set: Option<SequenceNumber>,
    /// [`PID_GROUP_COHERENT_SET`], [`PID_GROUP_SEQ_NUM`], [`PID_WRITER_GROUP_INFO`] (None:
    /// none sent).
    pub group: Option<super::GroupTag>,
}

/// Bytes of a PID_ORIGINAL_WRITER_INFO value as we send it: GUID, sequence number, and an
/// empty parameter list (PID_SENTINEL with length 0).
const ORIGINAL_WRITER_INFO_LEN: usize = 16 + 8 + 4;

impl InlineQos {
    /// Whether nothing would be sent (no Q flag).
    pub fn is_empty(&self) -> bool {
        self.key_hash.is_none()
            && self.status_info == 0
            && self.sample_identity.is_none()
            && self.original_writer.is_none()
            && self.coherent_set.is_none()
            && self.group.is_none()
    }

    /// Encoded length of the parameter list (0 when empty).
    pub fn wire_len(&self) -> usize {
        if self.is_empty() {
            return 0;
        }
        4 + if self.key_hash.is_some() { 20 } else { 0 }
            + if self.status_info != 0 { 8 } else { 0 }
            + if self.sample_identity.is_some() {
                56
            } else {
                0
            }
            + if self.original_writer.is_some() {
                4 + ORIGINAL_WRITER_INFO_LEN
            } else {
                0
            }
            + if self.coherent_set.is_some() { 12 } else { 0 }
            + self.group.map_or(0, |g| {
                12 * usize::from(g.set.is_some())
                    + 12 * usize::from(g.gsn > 0)
                    + 8 * usize::from(g.writers.is_some())
            })
    }

    /// Appends the parameter list (little-endian) to `out`; nothing when empty.
    pub fn encode(&self, out: &mut Vec<u8>) {
        if self.is_empty() {
            return;
        }
        let mut b = ParameterListBuilder::new(out);
        if let Some(k) = &self.key_hash {
            b.param(pid::KEY_HASH, k);
        }
        if self.status_info != 0 {
            // StatusInfo_t is four octets with the flags in the last one (big-endian).
            b.param(pid::STATUS_INFO, &self.status_info.to_be_bytes());
        }
        if let Some((guid, sn)) = self.sample_identity {
            let mut v = [0u8; 24];
            v[..16].copy_from_slice(&guid.to_bytes());
            let (high, low) = crate::types::seq_to_wire(sn);
            v[16..20].copy_from_slice(&high.to_le_bytes());
            v[20..].copy_from_slice(&low.to_le_bytes());
            b.param(PID_RELATED_SAMPLE_IDENTITY, &v);
            b.param(PID_FASTDDS_SAMPLE_IDENTITY, &v);
        }
        if let Some((guid, sn)) = self.original_writer {
            let mut v = [0u8; ORIGINAL_WRITER_INFO_LEN];
            v[..16].copy_from_slice(&guid.to_bytes());
            let (high, low) = crate::types::seq_to_wire(sn);
            v[16..20].copy_from_slice(&high.to_le_bytes());
            v[20..24].copy_from_slice(&low.to_le_bytes());
            // The nested parameter list: PID_SENTINEL (1), length 0, little-endian.
            v[24..26].copy_from_slice(&pid::SENTINEL.to_le_bytes());
            b.param(PID_ORIGINAL_WRITER_INFO, &v);
        }
        if let Some(sn) = self.coherent_set {
            let (high, low) = crate::types::seq_to_wire(sn);
            let mut v = [0u8; 8];
            v[..4].copy_from_slice(&high.to_le_bytes());
            v[4..].copy_from_slice(&low.to_le_bytes());
            b.param(PID_COHERENT_SET, &v);
        }
        if let Some(g) = self.group {
            if let Some(sn) = g.set {
                b.param(PID_GROUP_COHERENT_SET, &sn_bytes(sn));
            }
            if g.gsn > 0 {
                b.param(PID_GROUP_SEQ_NUM, &sn_bytes(g.gsn));
            }
            if let Some(d) = g.writers {
                b.param(PID_WRITER_GROUP_INFO, &d);
            }
        }
        b.finish();
    }

    /// Reads key hash and status info from a received inline QoS list.
    pub fn parse(pl: Option<&ParameterList<'_>>) -> InlineQos {
        let mut q = InlineQos::default();
        let Some(pl) = pl else { return q };
        for (p, v) in pl.iter() {
            match p {
                pid::KEY_HASH => {
                    if let Some(k) = v.get(..16) {
                        let mut a = [0u8; 16];
                        a.copy_from_slice(k);
                        q.key_hash = Some(a);
                    }
                }
                pid::STATUS_INFO => {
                    if let Some(s) = v.get(..4) {
                        q.status_info = u32::from_be_bytes([s[0], s[1], s[2], s[3]]);
                    }
                }
                PID_FASTDDS_SAMPLE_IDENTITY | PID_RELATED_SAMPLE_IDENTITY if v.len() >= 24 => {
                    q.sample_identity = Some(guid_and_sn(v, pl.little_endian()));
                }
                // The nested parameter list (the original inline QoS) is not needed: the
                // relayed DATA carries its own status info and key hash.
                PID_ORIGINAL_WRITER_INFO if v.len() >= 24 => {
                    let (guid, sn) = guid_and_sn(v, pl.little_endian());
                    // A relayed sample names a real writer and a valid number, else it is
                    // treated as the relay's own.
                    if (1..(1i64 << 62)).contains(&sn) && guid.entity_id.is_writer() {
                        q.original_writer = Some((guid, sn));
                    }
                }
                PID_COHERENT_SET if v.len() >= 8 => {
                    let sn = sn_from(v, pl.little_endian());
                    // A set starts at a valid number; the end marker says "unknown".
                    if sn == super::COHERENT_SET_END || valid_sn(sn) {
                        q.coherent_set = Some(sn);
                    }
                }
                // Group values that are no valid numbers are ignored one by one.
                PID_GROUP_COHERENT_SET if v.len() >= 8 => {
                    let sn = sn_from(v, pl.little_endian());
                    if valid_sn(sn) {
                        q.group.get_or_insert_with(Default::default).set = Some(sn);
                    }
                }
                PID_GROUP_SEQ_NUM if v.len() >= 8 => {
                    let sn = sn_from(v, pl.little_endian());
                    if valid_sn(sn) {
                        q.group.get_or_insert_with(Default::default).gsn = sn;
                    }
                }
                PID_WRITER_GROUP_INFO if v.len() >= 4 => {
                    q.group.get_or_insert_with(Default::default).writers =
                        Some([v[0], v[1], v[2], v[3]]);
                }
                _ => {}
            }
        }
        q
    }
}

/// A sequence number as a parameter value (little-endian, as we send lists).
fn sn_bytes(sn: SequenceNumber) -> [u8; 8] {
    let (high, low) = crate::types::seq_to_wire(sn);
    let mut v = [0u8; 8];
    v[..4].copy_from_slice(&high.to_le_bytes());
    v[4..].copy_from_slice(&low.to_le_bytes());
    v
}

/// A sequence number (high, low) at the start of `v` (at least 8 bytes).
fn sn_from(v: &[u8], little_endian: bool) -> SequenceNumber {
    let word = |i: usize| [v[i], v[i + 1], v[i + 2], v[i + 3]];
    let (high, low) = if little_endian {
        (i32::from_le_bytes(word(0)), u32::from_le_bytes(word(4)))
    } else {
        (i32::from_be_bytes(word(0)), u32::from_be_bytes(word(4)))
    };
    crate::types::seq_from_wire(high, low)
}

fn valid_sn(sn: SequenceNumber) -> bool {
    (1..(1i64 << 62)).contains(&sn)
}

/// A GUID then a sequence number (high, low) in the list's byte order: the start of a
/// sample identity and of an OriginalWriterInfo_t. `v` holds at least 24 bytes.
fn guid_and_sn(v: &[u8], little_endian: bool) -> (Guid, SequenceNumber) {
    let mut g = [0u8; 16];
    g.copy_from_slice(&v[..16]);
    let word = |i: usize| [v[i], v[i + 1], v[i + 2], v[i + 3]];
    let (high, low) = if little_endian {
        (i32::from_le_bytes(word(16)), u32::from_le_bytes(word(20)))
    } else {
        (i32::from_be_bytes(word(16)), u32::from_be_bytes(word(20)))
    };
    (Guid::from_bytes(g), crate::types::seq_from_wire(high, low))
}

/// An owned DATA submessage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutData {
    /// Destination reader (`EntityId::UNKNOWN` for all readers on the locator).
    pub reader_id: EntityId,
    /// Sending writer.
    pub writer_id: EntityId,
    /// Sequence number.
    pub writer_sn: SequenceNumber,
    /// Inline QoS.
    pub inline_qos: InlineQos,
    /// Whether the payload is a full sample or a key only.
    pub payload_kind: PayloadKind,
    /// The serialized payload (encapsulation header included); ignored for `PayloadKind::None`.
    pub payload: Arc<Vec<u8>>,
}

/// An owned DATA_FRAG submessage: consecutive fragments of one sample.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutDataFrag {
    /// Destination reader.
    pub reader_id: EntityId,
    /// Sending writer.
    pub writer_id: EntityId,
    /// Sequence number.
    pub writer_sn: SequenceNumber,
    /// First fragment (1-based).
    pub fragment_starting_num: u32,
    /// Number of fragments in this submessage.
    pub fragments_in_submessage: u16,
    /// Fragment size.
    pub fragment_size: u16,
    /// Whole sample size.
    pub sample_size: u32,
    /// Inline QoS.
    pub inline_qos: InlineQos,
    /// Whether the sample is key-only.
    pub key_flag: bool,
    /// The whole sample.
    pub payload: Arc<Vec<u8>>,
    /// The bytes of `payload` this submessage carries.
    pub range: Range<usize>,
}

/// A submessage owned by a [`Transmit`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OutSubmessage {
    /// INFO_TS for the following DATA/DATA_FRAG (`None`: invalidate).
    InfoTs(Option<Timestamp>),
    /// DATA.
    Data(OutData),
    /// DATA_FRAG.
    DataFrag(OutDataFrag),
    /// HEARTBEAT.
    Heartbeat(Heartbeat),
    /// HEARTBEAT_FRAG.
    HeartbeatFrag(HeartbeatFrag),
    /// ACKNACK.
    AckNack(AckNack),
    /// NACK_FRAG.
    NackFrag(NackFrag),
    /// GAP.
    Gap(Gap),
}

fn pad4(n: usize) -> usize {
    (n + 3) & !3
}

fn set_len(num_bits: u32) -> usize {
    12 + 4 * num_bits.div_ceil(32) as usize
}

impl OutSubmessage {
    /// Encoded length in bytes, submessage header included (exact for Tessera's encoder,
    /// payloads padded to 4).
    pub fn wire_len(&self) -> usize {
        match self {
            OutSubmessage::InfoTs(Some(_)) => 12,
            OutSubmessage::InfoTs(None) => 4,
            OutSubmessage::Data(d) => {
                let p = match d.payload_kind {
                    PayloadKind::None => 0,
                    _ => pad4(d.payload.len()),
                };
                24 + d.inline_qos.wire_len() + p
            }
            OutSubmessage::DataFrag(d) => 36 + d.inline_qos.wire_len() + pad4(d.range.len()),
            OutSubmessage::Heartbeat(_) => 32,
            OutSubmessage::HeartbeatFrag(_) => 28,
            OutSubmessage::AckNack(a) => 4 + 8 + set_len(a.reader_sn_state.num_bits) + 4,
            OutSubmessage::NackFrag(n) => {
                4 + 8 + 8 + 4 + 4 * n.fragment_number_state.num_bits.div_ceil(32) as usize + 4 + 4
            }
            OutSubmessage::Gap(g) => 4 + 8 + 8 + set_len(g.gap_list.num_bits),
        }
    }

    /// The payload bytes the wire representation carries (empty for submessages without),
    /// borrowing only `self` (unlike [`OutSubmessage::as_submessage`], whose result also
    /// borrows the QoS scratch): what `MessageBuilder::submessage_spliced` left out goes back
    /// in from here.
    pub fn payload(&self) -> &[u8] {
        match self {
            OutSubmessage::Data(d) => match d.payload_kind {
                PayloadKind::None => &[],
                _ => &d.payload,
            },
            OutSubmessage::DataFrag(d) => d.payload.get(d.range.clone()).unwrap_or(&[]),
            _ => &[],
        }
    }

    /// The borrowed wire representation, ready for `MessageBuilder::submessage`. Inline QoS is
    /// encoded into `qos_scratch` (cleared first), which the result borrows.
    pub fn as_submessage<'a>(&'a self, qos_scratch: &'a mut Vec<u8>) -> Submessage<'a> {
        qos_scratch.clear();
        let qos = |q: &InlineQos, scratch: &'a mut Vec<u8>| -> Option<ParameterList<'a>> {
            if q.is_empty() {
                return None;
            }
            q.encode(scratch);
            let scratch: &'a Vec<u8> = scratch;
            ParameterList::parse(scratch, true).ok()
        };
        match self {
            OutSubmessage::InfoTs(t) => Submessage::InfoTs(*t),
            OutSubmessage::Data(d) => Submessage::Data(Data {
                reader_id: d.reader_id,
                writer_id: d.writer_id,
                writer_sn: d.writer_sn,
                inline_qos: qos(&d.inline_qos, qos_scratch),
                payload_kind: d.payload_kind,
                payload: self.payload(),
            }),
            OutSubmessage::DataFrag(d) => Submessage::DataFrag(DataFrag {
                reader_id: d.reader_id,
                writer_id: d.writer_id,
                writer_sn: d.writer_sn,
                fragment_starting_num: d.fragment_starting_num,
                fragments_in_submessage: d.fragments_in_submessage,
                fragment_size: d.fragment_size,
                sample_size: d.sample_size,
                inline_qos: qos(&d.inline_qos, qos_scratch),
                key_flag: d.key_flag,
                payload: self.payload(),
            }),
            OutSubmessage::Heartbeat(h) => Submessage::Heartbeat(*h),
            OutSubmessage::HeartbeatFrag(h) => Submessage::HeartbeatFrag(*h),
            OutSubmessage::AckNack(a) => Submessage::AckNack(*a),
            OutSubmessage::NackFrag(n) => Submessage::NackFrag(*n),
            OutSubmessage::Gap(g) => Submessage::Gap(*g),
        }
    }
}

/// One datagram to send: a destination and the submessages, in order.
///
/// Reuse one `Transmit` with `poll_transmit_into` to avoid allocating per datagram.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Transmit {
    /// Where to send it.
    pub dest: Destination,
    /// What to send (INFO_DST is *not* included; see [`Destination::info_dst`]).
    pub submessages: Vec<OutSubmessage>,
}

impl Transmit {
    /// An empty transmit.
    pub fn new() -> Self {
        Self::default()
    }

    /// Empties the submessage list, keeping its allocation.
    pub fn clear(&mut self) {
        self.submessages.clear();
        self.dest = Destination::default();
    }

    /// Encoded size of the datagram: RTPS header, INFO_DST if any, and the submessages.
    pub fn wire_len(&self) -> usize {
        crate::wire::HEADER_LEN
            + if self.dest.info_dst().is_some() {
                16
            } else {
                0
            }
            + self.submessages.iter().map(|s| s.wire_len()).sum::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_qos_round_trips_through_parameter_list() {
        let q = InlineQos {
            key_hash: Some([7; 16]),
            status_info: 3,
            sample_identity: Some((Guid::from_bytes([9; 16]), (5i64 << 32) + 7)),
            original_writer: None,
            coherent_set: Some(41),
            group: None,
        };
        let mut v = Vec::new();
        q.encode(&mut v);
        assert_eq!(v.len(), q.wire_len());
        let pl = ParameterList::parse(&v, true).unwrap();
        assert_eq!(InlineQos::parse(Some(&pl)), q);
        assert_eq!(InlineQos::default().wire_len(), 0);
    }

    #[test]
    fn group_values_round_trip_and_invalid_numbers_are_ignored() {
        let q = InlineQos {
            coherent_set: Some(3),
            group: Some(super::super::GroupTag {
                set: Some((2i64 << 32) + 1),
                gsn: (2i64 << 32) + 4,
                writers: Some([1, 2, 3, 4]),
            }),
            ..InlineQos::default()
        };
        let mut v = Vec::new();
        q.encode(&mut v);
        assert_eq!(v.len(), q.wire_len());
        let pl = ParameterList::parse(&v, true).unwrap();
        assert_eq!(InlineQos::parse(Some(&pl)), q);
        // PID_GROUP_SEQ_NUM only (ordered access without a set).
        let q = InlineQos {
            group: Some(super::super::GroupTag {
                gsn: 7,
                ..Default::default()
            }),
            ..InlineQos::default()
        };
        let mut v = Vec::new();
        q.encode(&mut v);
        assert_eq!(v.len(), q.wire_len());
        let pl = ParameterList::parse(&v, true).unwrap();
        assert_eq!(InlineQos::parse(Some(&pl)), q);
        // Zero, negative or short values: no group values at all.
        let mut v = Vec::new();
        let mut b = ParameterListBuilder::new(&mut v);
        b.param(PID_GROUP_COHERENT_SET, &[0; 8]);
        b.param(PID_GROUP_SEQ_NUM, &[0xff; 8]);
        b.param(PID_WRITER_GROUP_INFO, &[]);
        b.finish();
        let pl = ParameterList::parse(&v, true).unwrap();
        assert_eq!(InlineQos::parse(Some(&pl)).group, None);
    }

    #[test]
    fn coherent_set_is_a_sequence_number_and_its_end_marker_is_unknown() {
        for (sn, wire) in [
            ((1i64 << 32) + 9, [1, 0, 0, 0, 9, 0, 0, 0]),
            (
                super::super::COHERENT_SET_END,
                [0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0],
            ),
        ] {
            let q = InlineQos {
                coherent_set: Some(sn),
                group: None,
                ..InlineQos::default()
            };
            let mut v = Vec::new();
            q.encode(&mut v);
            assert_eq!(v.len(), q.wire_len());
            assert_eq!(&v[..4], &[0x56, 0x00, 8, 0]);
            assert_eq!(&v[4..12], &wire);
            let pl = ParameterList::parse(&v, true).unwrap();
            assert_eq!(InlineQos::parse(Some(&pl)), q);
        }
        // Zero, negative numbers other than the marker, and short values are ignored.
        for bad in [
            &[0u8, 0, 0, 0, 0, 0, 0, 0][..],
            &[0xff, 0xff, 0xff, 0xff, 1, 0, 0, 0],
            &[1, 0, 0, 0],
        ] {
            let mut v = Vec::new();
            let mut b = ParameterListBuilder::new(&mut v);
            b.param(PID_COHERENT_SET, bad);
            b.finish();
            let pl = ParameterList::parse(&v, true).unwrap();
            assert_eq!(InlineQos::parse(Some(&pl)).coherent_set, None);
        }
    }

    #[test]
    fn original_writer_info_round_trips_and_rejects_nonsense() {
        let writer = Guid::from_bytes([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 0, 0, 1, 0x02]);
        let q = InlineQos {
            original_writer: Some((writer, (1i64 << 32) + 9)),
            ..InlineQos::default()
        };
        let mut v = Vec::new();
        q.encode(&mut v);
        assert_eq!(v.len(), q.wire_len());
        // PID 0x0061, length 28: GUID, SN (high, low), then an empty nested list.
        assert_eq!(&v[..4], &[0x61, 0x00, 28, 0]);
        assert_eq!(&v[4..20], &writer.to_bytes());
        assert_eq!(&v[20..28], &[1, 0, 0, 0, 9, 0, 0, 0]);
        assert_eq!(&v[28..32], &[1, 0, 0, 0]);
        let pl = ParameterList::parse(&v, true).unwrap();
        assert_eq!(InlineQos::parse(Some(&pl)), q);

        // Sequence number 0 or a reader's entity id: not a relayed sample.
        for bad in [
            (writer, 0),
            (Guid::from_bytes([1; 16]), 5), // entity kind 0x01: not a writer
        ] {
            let mut v = Vec::new();
            InlineQos {
                original_writer: Some(bad),
                ..InlineQos::default()
            }
            .encode(&mut v);
            let pl = ParameterList::parse(&v, true).unwrap();
            assert_eq!(InlineQos::parse(Some(&pl)).original_writer, None);
        }
        // A truncated value is ignored, not a panic.
        let short = [0x61, 0x00, 8, 0, 1, 2, 3, 4, 5, 6, 7, 8, 1, 0, 0, 0];
        let pl = ParameterList::parse(&short, true).unwrap();
        assert_eq!(InlineQos::parse(Some(&pl)).original_writer, None);
    }

    #[test]
    fn data_frag_borrows_its_range() {
        let payload: Arc<Vec<u8>> = (0..100u8).collect::<Vec<_>>().into();
        let sm = OutSubmessage::DataFrag(OutDataFrag {
            reader_id: EntityId::UNKNOWN,
            writer_id: EntityId::UNKNOWN,
            writer_sn: 1,
            fragment_starting_num: 2,
            fragments_in_submessage: 1,
            fragment_size: 40,
            sample_size: 100,
            inline_qos: InlineQos::default(),
            key_flag: false,
            payload: payload.clone(),
            range: 40..80,
        });
        let mut s = Vec::new();
        match sm.as_submessage(&mut s) {
            Submessage::DataFrag(d) => assert_eq!(d.payload, &payload[40..80]),
            other => panic!("{other:?}"),
        }
        assert_eq!(sm.wire_len(), 36 + 40);
    }
}
