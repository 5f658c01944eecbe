//! The RTPS wire format: messages, submessages and their encoding.
//!
//! Decoding borrows from the receive buffer (no allocation per submessage); encoding appends to
//! a caller-owned `Vec<u8>` so send buffers are reused. Representations here are plain data: the
//! meaning of a HEARTBEAT or an ACKNACK lives in [`crate::writer`] and [`crate::reader`].
//!
//! Network input is never trusted: every length is checked, every decode error is a
//! [`DecodeError`], and unknown submessages and parameters are skipped by their length.

pub mod param;

mod codec;

pub use codec::{
    spliced_parts, MessageBuilder, MessageReceiver, ReceivedSubmessage, Splice, SubmessageIter,
};
pub use param::{pid, ParameterList, ParameterListBuilder};

use crate::types::{EntityId, GuidPrefix, ProtocolVersion, SequenceNumber, Timestamp, VendorId};

/// Size of the RTPS message header.
pub const HEADER_LEN: usize = 20;

/// Submessage ids (RTPS 2.5 table 9.5).
pub mod submessage_id {
    #![allow(missing_docs)]
    pub const PAD: u8 = 0x01;
    pub const ACKNACK: u8 = 0x06;
    pub const HEARTBEAT: u8 = 0x07;
    pub const GAP: u8 = 0x08;
    pub const INFO_TS: u8 = 0x09;
    pub const INFO_SRC: u8 = 0x0c;
    pub const INFO_REPLY_IP4: u8 = 0x0d;
    pub const INFO_DST: u8 = 0x0e;
    pub const INFO_REPLY: u8 = 0x0f;
    pub const NACK_FRAG: u8 = 0x12;
    pub const HEARTBEAT_FRAG: u8 = 0x13;
    pub const DATA: u8 = 0x15;
    pub const DATA_FRAG: u8 = 0x16;
}

/// Encapsulation identifiers at the start of a serialized payload.
pub mod encapsulation {
    #![allow(missing_docs)]
    pub const CDR_BE: u16 = 0x0000;
    pub const CDR_LE: u16 = 0x0001;
    pub const PL_CDR_BE: u16 = 0x0002;
    pub const PL_CDR_LE: u16 = 0x0003;
    pub const CDR2_BE: u16 = 0x0006;
    pub const CDR2_LE: u16 = 0x0007;
    pub const D_CDR2_BE: u16 = 0x0008;
    pub const D_CDR2_LE: u16 = 0x0009;
    pub const PL_CDR2_BE: u16 = 0x000a;
    pub const PL_CDR2_LE: u16 = 0x000b;
}

/// Why a message or submessage could not be decoded. Every variant is the peer's fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// The buffer ended before the structure did.
    #[error("truncated")]
    Truncated,
    /// The message does not start with "RTPS" or has an unsupported major version.
    #[error("not an RTPS 2.x message")]
    BadHeader,
    /// A submessage length points past the end of the message or is not a multiple of 4.
    #[error("bad submessage length")]
    BadSubmessageLength,
    /// A parameter length is not a multiple of 4.
    #[error("bad parameter length")]
    BadParameterLength,
    /// A sequence-number or fragment-number set violates its invariants.
    #[error("invalid number set")]
    InvalidNumberSet,
    /// A sequence number is out of range (e.g. below 1 where that is not allowed).
    #[error("invalid sequence number")]
    InvalidSequenceNumber,
    /// DATA_FRAG fields are inconsistent (zero fragment size, fragment past the sample, ...).
    #[error("invalid fragment description")]
    InvalidFragment,
    /// Flags or fields contradict each other (e.g. both D and K set).
    #[error("inconsistent submessage")]
    Inconsistent,
}

/// The RTPS message header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// Protocol version of the sender.
    pub version: ProtocolVersion,
    /// Vendor of the sender.
    pub vendor: VendorId,
    /// GUID prefix of the sending participant.
    pub guid_prefix: GuidPrefix,
}

/// A set of sequence numbers: `base` plus a bitmap of up to 256 numbers from `base`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SequenceNumberSet {
    /// First number the bitmap describes.
    pub base: SequenceNumber,
    /// How many bits of `bitmap` are meaningful (0..=256).
    pub num_bits: u32,
    /// Bit i (MSB first in each word) set means `base + i` is in the set.
    pub bitmap: [u32; 8],
}

impl SequenceNumberSet {
    /// An empty set starting at `base`.
    pub fn empty(base: SequenceNumber) -> Self {
        SequenceNumberSet {
            base,
            num_bits: 0,
            bitmap: [0; 8],
        }
    }

    /// Whether `sn` is in the set.
    pub fn contains(&self, sn: SequenceNumber) -> bool {
        let off = sn - self.base;
        if off < 0 || off >= self.num_bits as i64 {
            return false;
        }
        let off = off as usize;
        self.bitmap[off / 32] & (1u32 << (31 - off % 32)) != 0
    }

    /// Adds `sn`, extending `num_bits` as needed. Returns false if it does not fit.
    pub fn insert(&mut self, sn: SequenceNumber) -> bool {
        let off = sn - self.base;
        if !(0..256).contains(&off) {
            return false;
        }
        let off = off as usize;
        self.bitmap[off / 32] |= 1u32 << (31 - off % 32);
        self.num_bits = self.num_bits.max(off as u32 + 1);
        true
    }

    /// The members in increasing order.
    pub fn iter(&self) -> impl Iterator<Item = SequenceNumber> + '_ {
        (0..self.num_bits as i64)
            .map(move |i| self.base + i)
            .filter(move |sn| self.contains(*sn))
    }
}

/// A set of fragment numbers (1-based), same layout as [`SequenceNumberSet`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FragmentNumberSet {
    /// First fragment number the bitmap describes (≥ 1).
    pub base: u32,
    /// How many bits are meaningful (0..=256).
    pub num_bits: u32,
    /// Bit i set means fragment `base + i` is in the set.
    pub bitmap: [u32; 8],
}

impl FragmentNumberSet {
    /// An empty set starting at `base`.
    pub fn empty(base: u32) -> Self {
        FragmentNumberSet {
            base,
            num_bits: 0,
            bitmap: [0; 8],
        }
    }

    /// Whether `n` is in the set.
    pub fn contains(&self, n: u32) -> bool {
        if n < self.base || n - self.base >= self.num_bits {
            return false;
        }
        let off = (n - self.base) as usize;
        self.bitmap[off / 32] & (1u32 << (31 - off % 32)) != 0
    }

    /// Adds `n`. Returns false if it does not fit.
    pub fn insert(&mut self, n: u32) -> bool {
        if n < self.base || n - self.base >= 256 {
            return false;
        }
        let off = (n - self.base) as usize;
        self.bitmap[off / 32] |= 1u32 << (31 - off % 32);
        self.num_bits = self.num_bits.max(off as u32 + 1);
        true
    }

    /// The members in increasing order.
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        (0..self.num_bits)
            .map(move |i| self.base + i)
            .filter(move |n| self.contains(*n))
    }
}

/// What a DATA or DATA_FRAG carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PayloadKind {
    /// No payload (e.g. a dispose identified by inline key hash only).
    None,
    /// A full serialized sample (D flag).
    Data,
    /// A serialized key only (K flag): dispose/unregister.
    Key,
}

/// DATA submessage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Data<'a> {
    /// Destination reader (`EntityId::UNKNOWN` for all readers).
    pub reader_id: EntityId,
    /// Sending writer.
    pub writer_id: EntityId,
    /// Sequence number of the sample.
    pub writer_sn: SequenceNumber,
    /// Inline QoS (Q flag), e.g. PID_STATUS_INFO and PID_KEY_HASH.
    pub inline_qos: Option<ParameterList<'a>>,
    /// What the payload is.
    pub payload_kind: PayloadKind,
    /// Serialized payload including its 4-byte encapsulation header; empty for `PayloadKind::None`.
    pub payload: &'a [u8],
}

/// DATA_FRAG submessage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DataFrag<'a> {
    /// Destination reader.
    pub reader_id: EntityId,
    /// Sending writer.
    pub writer_id: EntityId,
    /// Sequence number of the sample.
    pub writer_sn: SequenceNumber,
    /// First fragment number in this submessage (1-based).
    pub fragment_starting_num: u32,
    /// Number of consecutive fragments in this submessage.
    pub fragments_in_submessage: u16,
    /// Size of every fragment but possibly the last.
    pub fragment_size: u16,
    /// Size of the whole serialized sample (encapsulation header included).
    pub sample_size: u32,
    /// Inline QoS.
    pub inline_qos: Option<ParameterList<'a>>,
    /// Whether the sample is a key-only payload (K flag).
    pub key_flag: bool,
    /// The fragments' bytes.
    pub payload: &'a [u8],
}

/// HEARTBEAT submessage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Heartbeat {
    /// Destination reader.
    pub reader_id: EntityId,
    /// Sending writer.
    pub writer_id: EntityId,
    /// First available sequence number.
    pub first_sn: SequenceNumber,
    /// Last available sequence number.
    pub last_sn: SequenceNumber,
    /// Increasing count, to detect duplicates.
    pub count: i32,
    /// F flag: the reader need not answer if it has everything.
    pub final_flag: bool,
    /// L flag: this heartbeat asserts liveliness only.
    pub liveliness_flag: bool,
}

/// HEARTBEAT_FRAG submessage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeartbeatFrag {
    /// Destination reader.
    pub reader_id: EntityId,
    /// Sending writer.
    pub writer_id: EntityId,
    /// Sample the fragments belong to.
    pub writer_sn: SequenceNumber,
    /// Last fragment number available.
    pub last_fragment_num: u32,
    /// Increasing count.
    pub count: i32,
}

/// ACKNACK submessage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AckNack {
    /// Sending reader.
    pub reader_id: EntityId,
    /// Destination writer.
    pub writer_id: EntityId,
    /// `base` acknowledges everything below it; set bits are missing samples.
    pub reader_sn_state: SequenceNumberSet,
    /// Increasing count.
    pub count: i32,
    /// F flag: the writer need not answer with a heartbeat.
    pub final_flag: bool,
}

/// NACK_FRAG submessage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NackFrag {
    /// Sending reader.
    pub reader_id: EntityId,
    /// Destination writer.
    pub writer_id: EntityId,
    /// The sample with missing fragments.
    pub writer_sn: SequenceNumber,
    /// The missing fragments.
    pub fragment_number_state: FragmentNumberSet,
    /// Increasing count.
    pub count: i32,
}

/// GAP submessage: sequence numbers that will never be sent to this reader.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gap {
    /// Destination reader.
    pub reader_id: EntityId,
    /// Sending writer.
    pub writer_id: EntityId,
    /// Numbers from `gap_start` up to (not including) `gap_list.base` are irrelevant.
    pub gap_start: SequenceNumber,
    /// Further irrelevant numbers.
    pub gap_list: SequenceNumberSet,
}

/// One decoded submessage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Submessage<'a> {
    /// DATA.
    Data(Data<'a>),
    /// DATA_FRAG.
    DataFrag(DataFrag<'a>),
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
    /// INFO_TS: `None` invalidates the timestamp (I flag).
    InfoTs(Option<Timestamp>),
    /// INFO_DST.
    InfoDst(GuidPrefix),
    /// INFO_SRC.
    InfoSrc {
        /// Protocol version of the original source.
        version: ProtocolVersion,
        /// Vendor of the original source.
        vendor: VendorId,
        /// GUID prefix of the original source.
        guid_prefix: GuidPrefix,
    },
    /// PAD.
    Pad,
    /// Any other submessage (INFO_REPLY, vendor-specific, future ones): skipped by length.
    Unknown {
        /// Submessage id.
        id: u8,
    },
}
