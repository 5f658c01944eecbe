//! Encoded sizes: the bytes each submessage takes on the wire, padding included, used to
//! reserve room and to decide whether a submessage still fits into a datagram.

use super::{
    DATA_FRAG_OCTETS_TO_INLINE_QOS, DATA_OCTETS_TO_INLINE_QOS, MAX_SET_BITS, SUBMESSAGE_HEADER_LEN,
};
use crate::wire::param::ParameterList;
use crate::wire::{FragmentNumberSet, PayloadKind, SequenceNumberSet, Submessage};

// `Submessage::encoded_len` links to `MessageBuilder::submessage`.
#[cfg(doc)]
use super::MessageBuilder;

#[inline]
pub(super) fn pad4(n: usize) -> usize {
    (n + 3) & !3
}

pub(super) fn set_words(num_bits: u32) -> usize {
    num_bits.min(MAX_SET_BITS).div_ceil(32) as usize
}

fn sn_set_len(s: &SequenceNumberSet) -> usize {
    12 + 4 * set_words(s.num_bits)
}

fn frag_set_len(s: &FragmentNumberSet) -> usize {
    8 + 4 * set_words(s.num_bits)
}

fn qos_len(q: &Option<ParameterList<'_>>) -> usize {
    q.as_ref().map_or(0, |pl| pl.len())
}

/// Length of a DATA submessage body (without its 4-byte header).
pub(super) fn data_body_len(inline_qos_len: usize, payload_len: usize) -> usize {
    4 + DATA_OCTETS_TO_INLINE_QOS as usize + pad4(inline_qos_len) + pad4(payload_len)
}

/// Length of a DATA_FRAG submessage body (without its 4-byte header).
pub(super) fn data_frag_body_len(inline_qos_len: usize, payload_len: usize) -> usize {
    4 + DATA_FRAG_OCTETS_TO_INLINE_QOS as usize + pad4(inline_qos_len) + pad4(payload_len)
}

fn body_len(sm: &Submessage<'_>) -> usize {
    match sm {
        Submessage::Data(d) => {
            let payload = if d.payload_kind == PayloadKind::None {
                0
            } else {
                d.payload.len()
            };
            data_body_len(qos_len(&d.inline_qos), payload)
        }
        Submessage::DataFrag(d) => data_frag_body_len(qos_len(&d.inline_qos), d.payload.len()),
        Submessage::Heartbeat(_) => 28,
        Submessage::HeartbeatFrag(_) => 24,
        Submessage::AckNack(a) => 8 + sn_set_len(&a.reader_sn_state) + 4,
        Submessage::NackFrag(n) => 16 + frag_set_len(&n.fragment_number_state) + 4,
        Submessage::Gap(g) => 16 + sn_set_len(&g.gap_list),
        Submessage::InfoTs(Some(_)) => 8,
        Submessage::InfoTs(None) => 0,
        Submessage::InfoDst(_) => 12,
        Submessage::InfoSrc { .. } => 20,
        Submessage::Pad => 0,
        Submessage::Unknown { .. } => 4,
    }
}

impl Submessage<'_> {
    /// Bytes this submessage takes when encoded by [`MessageBuilder::submessage`], header and
    /// padding included.
    pub fn encoded_len(&self) -> usize {
        SUBMESSAGE_HEADER_LEN + body_len(self)
    }
}
