//! Decoding of submessage bodies: a bounds-checked reader of primitive values and one decoder
//! per submessage kind, each validating what it reads.

use super::{
    flag, mask_bitmap, DATA_FRAG_OCTETS_TO_INLINE_QOS, DATA_OCTETS_TO_INLINE_QOS, MAX_SET_BITS,
};
use crate::types::{
    seq_from_wire, EntityId, GuidPrefix, ProtocolVersion, SequenceNumber, Timestamp, VendorId,
};
use crate::wire::param::ParameterList;
use crate::wire::{
    submessage_id as smid, AckNack, Data, DataFrag, DecodeError, FragmentNumberSet, Gap, Heartbeat,
    HeartbeatFrag, NackFrag, PayloadKind, SequenceNumberSet, Submessage,
};

/// A bounds-checked cursor over one submessage body in one byte order.
struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    le: bool,
}

impl<'a> Reader<'a> {
    fn new(buf: &'a [u8], le: bool) -> Self {
        Reader { buf, pos: 0, le }
    }

    #[inline]
    fn bytes<const N: usize>(&mut self) -> Result<[u8; N], DecodeError> {
        let end = self.pos.checked_add(N).ok_or(DecodeError::Truncated)?;
        let s = self.buf.get(self.pos..end).ok_or(DecodeError::Truncated)?;
        let mut a = [0u8; N];
        a.copy_from_slice(s);
        self.pos = end;
        Ok(a)
    }

    #[inline]
    fn u16(&mut self) -> Result<u16, DecodeError> {
        let b = self.bytes::<2>()?;
        Ok(if self.le {
            u16::from_le_bytes(b)
        } else {
            u16::from_be_bytes(b)
        })
    }

    #[inline]
    fn u32(&mut self) -> Result<u32, DecodeError> {
        let b = self.bytes::<4>()?;
        Ok(if self.le {
            u32::from_le_bytes(b)
        } else {
            u32::from_be_bytes(b)
        })
    }

    #[inline]
    fn i32(&mut self) -> Result<i32, DecodeError> {
        self.u32().map(|v| v as i32)
    }

    #[inline]
    fn entity_id(&mut self) -> Result<EntityId, DecodeError> {
        self.bytes::<4>().map(EntityId)
    }

    #[inline]
    fn guid_prefix(&mut self) -> Result<GuidPrefix, DecodeError> {
        self.bytes::<12>().map(GuidPrefix)
    }

    #[inline]
    fn sn(&mut self) -> Result<SequenceNumber, DecodeError> {
        let high = self.i32()?;
        let low = self.u32()?;
        Ok(seq_from_wire(high, low))
    }

    /// Reads `numBits` and the bitmap words of a number set; bits past `numBits` are cleared.
    fn bitmap(&mut self) -> Result<(u32, [u32; 8]), DecodeError> {
        let num_bits = self.u32()?;
        if num_bits > MAX_SET_BITS {
            return Err(DecodeError::InvalidNumberSet);
        }
        let mut bitmap = [0u32; 8];
        let words = num_bits.div_ceil(32) as usize;
        for w in bitmap.iter_mut().take(words) {
            *w = self.u32()?;
        }
        mask_bitmap(&mut bitmap, num_bits);
        Ok((num_bits, bitmap))
    }

    /// A sequence-number set; `base + numBits` must not overflow (so that
    /// [`SequenceNumberSet::iter`] cannot).
    fn sn_set(&mut self) -> Result<SequenceNumberSet, DecodeError> {
        let base = self.sn()?;
        let (num_bits, bitmap) = self.bitmap()?;
        if base.checked_add(num_bits as i64).is_none() {
            return Err(DecodeError::InvalidNumberSet);
        }
        Ok(SequenceNumberSet {
            base,
            num_bits,
            bitmap,
        })
    }

    /// A fragment-number set; `base + numBits` must not overflow.
    fn frag_set(&mut self) -> Result<FragmentNumberSet, DecodeError> {
        let base = self.u32()?;
        let (num_bits, bitmap) = self.bitmap()?;
        if base.checked_add(num_bits).is_none() {
            return Err(DecodeError::InvalidNumberSet);
        }
        Ok(FragmentNumberSet {
            base,
            num_bits,
            bitmap,
        })
    }

    /// Moves to an absolute offset within the body.
    fn seek(&mut self, pos: usize) -> Result<(), DecodeError> {
        if pos > self.buf.len() {
            return Err(DecodeError::Truncated);
        }
        self.pos = pos;
        Ok(())
    }

    fn rest(&self) -> &'a [u8] {
        self.buf.get(self.pos..).unwrap_or(&[])
    }
}

fn decode_data(body: &[u8], flags: u8, le: bool) -> Result<Data<'_>, DecodeError> {
    let has_d = flags & flag::DATA_D != 0;
    let has_k = flags & flag::DATA_K != 0;
    if has_d && has_k {
        return Err(DecodeError::Inconsistent);
    }
    let mut r = Reader::new(body, le);
    let _extra_flags = r.u16()?;
    let octets_to_inline_qos = r.u16()?;
    if octets_to_inline_qos < DATA_OCTETS_TO_INLINE_QOS {
        return Err(DecodeError::Inconsistent);
    }
    let reader_id = r.entity_id()?;
    let writer_id = r.entity_id()?;
    let writer_sn = r.sn()?;
    if writer_sn < 1 {
        return Err(DecodeError::InvalidSequenceNumber);
    }
    // Unknown fields between the sequence number and the inline QoS are skipped.
    r.seek(4 + octets_to_inline_qos as usize)?;
    let inline_qos = decode_inline_qos(&mut r, flags)?;
    let (payload_kind, payload) = if has_d {
        (PayloadKind::Data, r.rest())
    } else if has_k {
        (PayloadKind::Key, r.rest())
    } else {
        (PayloadKind::None, &[][..])
    };
    Ok(Data {
        reader_id,
        writer_id,
        writer_sn,
        inline_qos,
        payload_kind,
        payload,
    })
}

fn decode_inline_qos<'a>(
    r: &mut Reader<'a>,
    flags: u8,
) -> Result<Option<ParameterList<'a>>, DecodeError> {
    if flags & flag::Q == 0 {
        return Ok(None);
    }
    let pl = ParameterList::parse(r.rest(), r.le)?;
    r.pos += pl.len();
    Ok(Some(pl))
}

fn decode_data_frag(body: &[u8], flags: u8, le: bool) -> Result<DataFrag<'_>, DecodeError> {
    let mut r = Reader::new(body, le);
    let _extra_flags = r.u16()?;
    let octets_to_inline_qos = r.u16()?;
    if octets_to_inline_qos < DATA_FRAG_OCTETS_TO_INLINE_QOS {
        return Err(DecodeError::Inconsistent);
    }
    let reader_id = r.entity_id()?;
    let writer_id = r.entity_id()?;
    let writer_sn = r.sn()?;
    let fragment_starting_num = r.u32()?;
    let fragments_in_submessage = r.u16()?;
    let fragment_size = r.u16()?;
    let sample_size = r.u32()?;
    if writer_sn < 1 {
        return Err(DecodeError::InvalidSequenceNumber);
    }
    if fragment_size == 0 || fragments_in_submessage == 0 || fragment_starting_num == 0 {
        return Err(DecodeError::InvalidFragment);
    }
    // All in u64: none of these products can overflow.
    let fs = fragment_size as u64;
    let offset = (fragment_starting_num as u64 - 1) * fs;
    let last_offset = (fragment_starting_num as u64 + fragments_in_submessage as u64 - 2) * fs;
    if last_offset >= sample_size as u64 {
        // Covers `offset >= sample_size` too: every fragment claimed must exist.
        return Err(DecodeError::InvalidFragment);
    }
    let expected = (offset + fragments_in_submessage as u64 * fs).min(sample_size as u64) - offset;
    r.seek(4 + octets_to_inline_qos as usize)?;
    let inline_qos = decode_inline_qos(&mut r, flags)?;
    let rest = r.rest();
    // `expected` < 2^32 fits in usize on every supported target; the padding after the last
    // fragment is dropped.
    let payload = rest
        .get(..expected as usize)
        .ok_or(DecodeError::InvalidFragment)?;
    Ok(DataFrag {
        reader_id,
        writer_id,
        writer_sn,
        fragment_starting_num,
        fragments_in_submessage,
        fragment_size,
        sample_size,
        inline_qos,
        key_flag: flags & flag::FRAG_K != 0,
        payload,
    })
}

fn decode_heartbeat(body: &[u8], flags: u8, le: bool) -> Result<Heartbeat, DecodeError> {
    let mut r = Reader::new(body, le);
    let hb = Heartbeat {
        reader_id: r.entity_id()?,
        writer_id: r.entity_id()?,
        first_sn: r.sn()?,
        last_sn: r.sn()?,
        count: r.i32()?,
        final_flag: flags & flag::F != 0,
        liveliness_flag: flags & flag::L != 0,
    };
    // Cyclone's rule: firstSN >= 1 and lastSN >= firstSN - 1 (an empty range is allowed).
    if hb.first_sn < 1 || hb.last_sn < hb.first_sn - 1 {
        return Err(DecodeError::InvalidSequenceNumber);
    }
    Ok(hb)
}

fn decode_heartbeat_frag(body: &[u8], le: bool) -> Result<HeartbeatFrag, DecodeError> {
    let mut r = Reader::new(body, le);
    let hf = HeartbeatFrag {
        reader_id: r.entity_id()?,
        writer_id: r.entity_id()?,
        writer_sn: r.sn()?,
        last_fragment_num: r.u32()?,
        count: r.i32()?,
    };
    if hf.writer_sn < 1 {
        return Err(DecodeError::InvalidSequenceNumber);
    }
    if hf.last_fragment_num == 0 {
        return Err(DecodeError::InvalidFragment);
    }
    Ok(hf)
}

fn decode_acknack(body: &[u8], flags: u8, le: bool) -> Result<AckNack, DecodeError> {
    let mut r = Reader::new(body, le);
    let an = AckNack {
        reader_id: r.entity_id()?,
        writer_id: r.entity_id()?,
        reader_sn_state: r.sn_set()?,
        count: r.i32()?,
        final_flag: flags & flag::F != 0,
    };
    let set = &an.reader_sn_state;
    // Base 0 is only tolerated as the empty "pre-emptive" ACKNACK some vendors send.
    if set.base < 0 || (set.base == 0 && set.num_bits != 0) {
        return Err(DecodeError::InvalidNumberSet);
    }
    Ok(an)
}

fn decode_nack_frag(body: &[u8], le: bool) -> Result<NackFrag, DecodeError> {
    let mut r = Reader::new(body, le);
    let nf = NackFrag {
        reader_id: r.entity_id()?,
        writer_id: r.entity_id()?,
        writer_sn: r.sn()?,
        fragment_number_state: r.frag_set()?,
        count: r.i32()?,
    };
    if nf.writer_sn < 1 {
        return Err(DecodeError::InvalidSequenceNumber);
    }
    if nf.fragment_number_state.base == 0 {
        return Err(DecodeError::InvalidNumberSet);
    }
    Ok(nf)
}

fn decode_gap(body: &[u8], le: bool) -> Result<Gap, DecodeError> {
    let mut r = Reader::new(body, le);
    let gap = Gap {
        reader_id: r.entity_id()?,
        writer_id: r.entity_id()?,
        gap_start: r.sn()?,
        gap_list: r.sn_set()?,
    };
    if gap.gap_start < 1 {
        return Err(DecodeError::InvalidSequenceNumber);
    }
    if gap.gap_list.base < 1 {
        return Err(DecodeError::InvalidNumberSet);
    }
    Ok(gap)
}

/// Decodes one submessage body. `body` is exactly the bytes its header frames.
pub(super) fn decode_body(id: u8, flags: u8, body: &[u8]) -> Result<Submessage<'_>, DecodeError> {
    let le = flags & flag::E != 0;
    Ok(match id {
        smid::DATA => Submessage::Data(decode_data(body, flags, le)?),
        smid::DATA_FRAG => Submessage::DataFrag(decode_data_frag(body, flags, le)?),
        smid::HEARTBEAT => Submessage::Heartbeat(decode_heartbeat(body, flags, le)?),
        smid::HEARTBEAT_FRAG => Submessage::HeartbeatFrag(decode_heartbeat_frag(body, le)?),
        smid::ACKNACK => Submessage::AckNack(decode_acknack(body, flags, le)?),
        smid::NACK_FRAG => Submessage::NackFrag(decode_nack_frag(body, le)?),
        smid::GAP => Submessage::Gap(decode_gap(body, le)?),
        smid::INFO_TS => {
            if flags & flag::I != 0 {
                Submessage::InfoTs(None)
            } else {
                let mut r = Reader::new(body, le);
                Submessage::InfoTs(Some(Timestamp {
                    seconds: r.i32()?,
                    fraction: r.u32()?,
                }))
            }
        }
        smid::INFO_DST => Submessage::InfoDst(Reader::new(body, le).guid_prefix()?),
        smid::INFO_SRC => {
            let mut r = Reader::new(body, le);
            let _unused = r.u32()?;
            let v = r.bytes::<2>()?;
            let vendor = VendorId(r.bytes::<2>()?);
            Submessage::InfoSrc {
                version: ProtocolVersion {
                    major: v[0],
                    minor: v[1],
                },
                vendor,
                guid_prefix: r.guid_prefix()?,
            }
        }
        smid::PAD => Submessage::Pad,
        other => Submessage::Unknown { id: other },
    })
}
