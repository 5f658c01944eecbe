//! Encoding and decoding of RTPS messages (RTPS 2.5 §9.4).
//!
//! Decoding is a checked walk over borrowed bytes: [`SubmessageIter`] frames submessages by their
//! `octetsToNextHeader` and decodes each into a [`Submessage`] that borrows payloads and
//! parameter lists from the receive buffer, so nothing is allocated. [`MessageReceiver`] adds the
//! receiver state of RTPS §8.3.4 (source, destination, timestamp). Every length read from the
//! wire is checked against the bytes that are really there; nothing here can panic on input.
//!
//! Encoding appends to a caller-owned `Vec<u8>` through [`MessageBuilder`]: submessages are
//! written little-endian (the `E` flag set) straight into the buffer, with
//! `octetsToNextHeader` patched in afterwards, so a message costs no allocation once the
//! buffer has grown to its working size.
//!
//! Leniency choices, all in the direction of accepting what real peers send:
//! - any protocol 2.x and any vendor is accepted;
//! - a submessage whose length is not a multiple of 4 is accepted only when it ends exactly at
//!   the end of the message (a last submessage some stacks leave unpadded); elsewhere it breaks
//!   the framing and is an error;
//! - bytes after the last field a submessage defines are ignored (room for extensions);
//! - a base-0, empty ACKNACK (Fast DDS/Connext "pre-emptive" ACKNACK) decodes with base 0 so the
//!   reliability layer can ignore it.

use super::param::ParameterList;
use super::{
    submessage_id as smid, AckNack, Data, DataFrag, DecodeError, FragmentNumberSet, Gap, Header,
    Heartbeat, HeartbeatFrag, NackFrag, PayloadKind, SequenceNumberSet, Submessage, HEADER_LEN,
};
use crate::types::{
    seq_from_wire, seq_to_wire, EntityId, GuidPrefix, ProtocolVersion, SequenceNumber, Timestamp,
    VendorId, PROTOCOL_VERSION, VENDOR_TESSERA,
};

/// Submessage flag bits (RTPS 2.5 §9.4.5).
mod flag {
    /// Endianness (all submessages): set = little-endian.
    pub const E: u8 = 0x01;
    /// DATA / DATA_FRAG: inline QoS present.
    pub const Q: u8 = 0x02;
    /// DATA: serialized data present.
    pub const DATA_D: u8 = 0x04;
    /// DATA: serialized key present.
    pub const DATA_K: u8 = 0x08;
    /// DATA_FRAG: the fragments are of a serialized key.
    pub const FRAG_K: u8 = 0x04;
    /// HEARTBEAT / ACKNACK: final.
    pub const F: u8 = 0x02;
    /// HEARTBEAT: liveliness.
    pub const L: u8 = 0x04;
    /// INFO_TS: invalidate.
    pub const I: u8 = 0x02;
}

/// Size of a submessage header.
const SUBMESSAGE_HEADER_LEN: usize = 4;
/// Bytes from after `octetsToInlineQos` to the inline QoS in a standard DATA.
const DATA_OCTETS_TO_INLINE_QOS: u16 = 16;
/// Bytes from after `octetsToInlineQos` to the inline QoS in a standard DATA_FRAG.
const DATA_FRAG_OCTETS_TO_INLINE_QOS: u16 = 28;
/// Largest bitmap of a sequence-number or fragment-number set.
const MAX_SET_BITS: u32 = 256;

// ---------------------------------------------------------------------------------------------
// Decoding
// ---------------------------------------------------------------------------------------------

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

/// Clears the bits at and after `num_bits` (they carry no meaning on the wire).
fn mask_bitmap(bitmap: &mut [u32; 8], num_bits: u32) {
    for (i, w) in bitmap.iter_mut().enumerate() {
        let first = i as u32 * 32;
        if num_bits <= first {
            *w = 0;
        } else if num_bits < first + 32 {
            *w &= !(u32::MAX >> (num_bits - first));
        }
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
fn decode_body(id: u8, flags: u8, body: &[u8]) -> Result<Submessage<'_>, DecodeError> {
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

/// Iterates over the submessages of one message. After the first error it yields nothing more
/// (the rest of a message whose framing is broken cannot be trusted).
#[derive(Debug, Clone)]
pub struct SubmessageIter<'a> {
    buf: &'a [u8],
    pos: usize,
    failed: bool,
}

impl<'a> SubmessageIter<'a> {
    /// Parses the header of `buf` and returns it with an iterator over the submessages.
    ///
    /// Accepts any RTPS 2.x version and any vendor.
    pub fn parse(buf: &'a [u8]) -> Result<(Header, SubmessageIter<'a>), DecodeError> {
        let h = buf.get(..HEADER_LEN).ok_or(DecodeError::Truncated)?;
        if &h[..4] != b"RTPS" || h[4] != 2 {
            return Err(DecodeError::BadHeader);
        }
        let mut prefix = [0u8; 12];
        prefix.copy_from_slice(&h[8..20]);
        let header = Header {
            version: ProtocolVersion {
                major: h[4],
                minor: h[5],
            },
            vendor: VendorId([h[6], h[7]]),
            guid_prefix: GuidPrefix(prefix),
        };
        Ok((
            header,
            SubmessageIter {
                buf,
                pos: HEADER_LEN,
                failed: false,
            },
        ))
    }

    /// Frames the next submessage: returns `(id, flags, body)` and advances.
    fn frame(&mut self) -> Result<(u8, u8, &'a [u8]), DecodeError> {
        let remaining = self.buf.len() - self.pos;
        let h = self
            .buf
            .get(self.pos..self.pos + SUBMESSAGE_HEADER_LEN)
            .ok_or(DecodeError::Truncated)?;
        let (id, flags) = (h[0], h[1]);
        let len_bytes = [h[2], h[3]];
        let len = if flags & flag::E != 0 {
            u16::from_le_bytes(len_bytes)
        } else {
            u16::from_be_bytes(len_bytes)
        } as usize;
        let avail = remaining - SUBMESSAGE_HEADER_LEN;
        let body_len = if len != 0 {
            if len > avail {
                return Err(DecodeError::BadSubmessageLength);
            }
            if len % 4 != 0 && len != avail {
                return Err(DecodeError::BadSubmessageLength);
            }
            len
        } else if id == smid::PAD || id == smid::INFO_TS {
            // RTPS 2.5 §9.4.5.1.3: for these two, 0 means an empty body.
            0
        } else {
            // 0 means "up to the end of the message" (the last submessage only).
            avail
        };
        let start = self.pos + SUBMESSAGE_HEADER_LEN;
        let body = self
            .buf
            .get(start..start + body_len)
            .ok_or(DecodeError::Truncated)?;
        self.pos = start + body_len;
        Ok((id, flags, body))
    }
}

impl<'a> Iterator for SubmessageIter<'a> {
    type Item = Result<Submessage<'a>, DecodeError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.pos >= self.buf.len() {
            return None;
        }
        let res = self
            .frame()
            .and_then(|(id, flags, body)| decode_body(id, flags, body));
        if res.is_err() {
            self.failed = true;
        }
        Some(res)
    }
}

/// A submessage with the receiver state (RTPS 8.3.4) in force where it stood.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReceivedSubmessage<'a> {
    /// Prefix of the participant that sent it (header, or the last INFO_SRC).
    pub source_prefix: GuidPrefix,
    /// Vendor of the sender.
    pub source_vendor: VendorId,
    /// Prefix it is addressed to (`GuidPrefix::UNKNOWN` when no INFO_DST preceded it).
    pub dest_prefix: GuidPrefix,
    /// Source timestamp from the last INFO_TS, if valid.
    pub timestamp: Option<Timestamp>,
    /// The submessage.
    pub submessage: Submessage<'a>,
}

/// Walks a message applying INFO_TS / INFO_DST / INFO_SRC, yielding the other submessages with
/// their context. Interpreter submessages themselves (including PAD) are not yielded; unknown
/// submessages are yielded as [`Submessage::Unknown`] so that callers can count them.
///
/// After a submessage fails to decode, its error is yielded once and the iteration ends.
#[derive(Debug, Clone)]
pub struct MessageReceiver<'a> {
    header: Header,
    /// The source in force: the header's, or the last INFO_SRC's.
    source: Header,
    inner: SubmessageIter<'a>,
    dest_prefix: GuidPrefix,
    timestamp: Option<Timestamp>,
}

impl<'a> MessageReceiver<'a> {
    /// Starts receiving `buf`.
    pub fn new(buf: &'a [u8]) -> Result<Self, DecodeError> {
        let (header, inner) = SubmessageIter::parse(buf)?;
        Ok(MessageReceiver {
            header,
            source: header,
            inner,
            dest_prefix: GuidPrefix::UNKNOWN,
            timestamp: None,
        })
    }

    /// The message header as received.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The source in force at this point: the header's, or the last INFO_SRC's.
    pub fn source(&self) -> &Header {
        &self.source
    }
}

impl<'a> Iterator for MessageReceiver<'a> {
    type Item = Result<ReceivedSubmessage<'a>, DecodeError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let sm = match self.inner.next()? {
                Ok(sm) => sm,
                Err(e) => return Some(Err(e)),
            };
            match sm {
                Submessage::InfoTs(ts) => self.timestamp = ts,
                Submessage::InfoDst(prefix) => self.dest_prefix = prefix,
                Submessage::InfoSrc {
                    version,
                    vendor,
                    guid_prefix,
                } => {
                    // RTPS 8.3.7.9.4: a new source also invalidates the timestamp.
                    self.source = Header {
                        version,
                        vendor,
                        guid_prefix,
                    };
                    self.timestamp = None;
                }
                Submessage::Pad => {}
                submessage => {
                    return Some(Ok(ReceivedSubmessage {
                        source_prefix: self.source.guid_prefix,
                        source_vendor: self.source.vendor,
                        dest_prefix: self.dest_prefix,
                        timestamp: self.timestamp,
                        submessage,
                    }))
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Encoding
// ---------------------------------------------------------------------------------------------

#[inline]
fn pad4(n: usize) -> usize {
    (n + 3) & !3
}

fn set_words(num_bits: u32) -> usize {
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
fn data_body_len(inline_qos_len: usize, payload_len: usize) -> usize {
    4 + DATA_OCTETS_TO_INLINE_QOS as usize + pad4(inline_qos_len) + pad4(payload_len)
}

/// Length of a DATA_FRAG submessage body (without its 4-byte header).
fn data_frag_body_len(inline_qos_len: usize, payload_len: usize) -> usize {
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

/// Appends primitive values in one byte order.
struct Writer<'v> {
    out: &'v mut Vec<u8>,
    le: bool,
}

impl Writer<'_> {
    #[inline]
    fn u16(&mut self, v: u16) {
        let b = if self.le {
            v.to_le_bytes()
        } else {
            v.to_be_bytes()
        };
        self.out.extend_from_slice(&b);
    }

    #[inline]
    fn u32(&mut self, v: u32) {
        let b = if self.le {
            v.to_le_bytes()
        } else {
            v.to_be_bytes()
        };
        self.out.extend_from_slice(&b);
    }

    #[inline]
    fn i32(&mut self, v: i32) {
        self.u32(v as u32);
    }

    #[inline]
    fn sn(&mut self, sn: SequenceNumber) {
        let (high, low) = seq_to_wire(sn);
        self.i32(high);
        self.u32(low);
    }

    #[inline]
    fn bytes(&mut self, b: &[u8]) {
        self.out.extend_from_slice(b);
    }

    fn bitmap(&mut self, num_bits: u32, bitmap: &[u32; 8]) {
        let num_bits = num_bits.min(MAX_SET_BITS);
        let mut masked = *bitmap;
        mask_bitmap(&mut masked, num_bits);
        self.u32(num_bits);
        for w in &masked[..set_words(num_bits)] {
            self.u32(*w);
        }
    }

    fn sn_set(&mut self, s: &SequenceNumberSet) {
        self.sn(s.base);
        self.bitmap(s.num_bits, &s.bitmap);
    }

    fn frag_set(&mut self, s: &FragmentNumberSet) {
        self.u32(s.base);
        self.bitmap(s.num_bits, &s.bitmap);
    }

    fn pad_to_4(&mut self, from: usize) {
        let n = pad4(self.out.len() - from) - (self.out.len() - from);
        self.out.extend_from_slice(&[0u8; 3][..n]);
    }
}

/// The D or K flag of a DATA and the payload it carries (no flag and none for
/// [`PayloadKind::None`]).
fn data_payload<'p>(d: &Data<'p>) -> (u8, &'p [u8]) {
    match d.payload_kind {
        PayloadKind::None => (0, &[]),
        PayloadKind::Data => (flag::DATA_D, d.payload),
        PayloadKind::Key => (flag::DATA_K, d.payload),
    }
}

/// A payload left out of a message by [`MessageBuilder::submessage_spliced`]: it goes at this
/// offset of the bytes written (the offset that call returned).
pub type Splice<'p> = (usize, &'p [u8]);

/// The parts of the datagram `written` with `splices` inserted (offsets ascending, as the
/// builder records them), in order, to `part`: `2 × splices + 1` of them.
pub fn spliced_parts<'a>(
    written: &'a [u8],
    splices: &[Splice<'a>],
    mut part: impl FnMut(&'a [u8]),
) {
    let mut at = 0;
    for &(off, payload) in splices {
        let off = off.clamp(at, written.len());
        part(&written[at..off]);
        part(payload);
        at = off;
    }
    part(&written[at..]);
}

/// Appends submessages to a message buffer. The header is written by [`MessageBuilder::new`].
///
/// Submessages are little-endian except DATA / DATA_FRAG carrying a big-endian inline QoS list
/// (one decoded from a big-endian peer): parameter values cannot be byte-swapped without knowing
/// their types, so such a submessage is written big-endian as a whole.
///
/// A submessage whose body exceeds 65535 bytes is written with `octetsToNextHeader` 0, which
/// RTPS reads as "up to the end of the message": it must then be the last one.
#[derive(Debug)]
pub struct MessageBuilder<'b> {
    out: &'b mut Vec<u8>,
}

impl<'b> MessageBuilder<'b> {
    /// Clears `out` and writes a Tessera header for `prefix`.
    pub fn new(out: &'b mut Vec<u8>, prefix: GuidPrefix) -> Self {
        Self::with_header(
            out,
            Header {
                version: PROTOCOL_VERSION,
                vendor: VENDOR_TESSERA,
                guid_prefix: prefix,
            },
        )
    }

    /// Clears `out` and writes the given header (for tests, relays and simulated peers).
    pub fn with_header(out: &'b mut Vec<u8>, header: Header) -> Self {
        out.clear();
        out.extend_from_slice(b"RTPS");
        out.extend_from_slice(&[header.version.major, header.version.minor]);
        out.extend_from_slice(&header.vendor.0);
        out.extend_from_slice(&header.guid_prefix.0);
        MessageBuilder { out }
    }

    /// Appends to `out`, which already holds a message (header and submessages) that this
    /// builder continues, e.g. to bundle several writers' submessages into one datagram.
    ///
    /// # Panics
    /// If `out` is shorter than an RTPS header.
    pub fn resume(out: &'b mut Vec<u8>) -> Self {
        assert!(
            out.len() >= HEADER_LEN,
            "resume needs a message with its header"
        );
        MessageBuilder { out }
    }

    /// Bytes written so far (header included).
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> usize {
        self.out.len()
    }

    /// Drops everything after the first `len` bytes (never the header), e.g. to take back a
    /// submessage that turned out not to fit.
    pub fn truncate(&mut self, len: usize) {
        self.out.truncate(len.max(HEADER_LEN));
    }

    /// Bytes `sm` takes when encoded, header and padding included (same as
    /// [`Submessage::encoded_len`]). Use it to decide whether a submessage still fits into a
    /// datagram.
    pub fn encoded_len(sm: &Submessage<'_>) -> usize {
        sm.encoded_len()
    }

    /// Bytes a DATA with an inline QoS list of `inline_qos_len` bytes (0 for none) and a
    /// payload of `payload_len` bytes takes, header and padding included.
    pub fn data_encoded_len(inline_qos_len: usize, payload_len: usize) -> usize {
        SUBMESSAGE_HEADER_LEN + data_body_len(inline_qos_len, payload_len)
    }

    /// Bytes a DATA_FRAG with an inline QoS list of `inline_qos_len` bytes (0 for none) and
    /// `payload_len` bytes of fragments takes, header and padding included.
    pub fn data_frag_encoded_len(inline_qos_len: usize, payload_len: usize) -> usize {
        SUBMESSAGE_HEADER_LEN + data_frag_body_len(inline_qos_len, payload_len)
    }

    /// Appends any submessage (little-endian; see the type docs for the one exception).
    pub fn submessage(&mut self, sm: &Submessage<'_>) -> &mut Self {
        self.submessage_in(sm, Self::little_endian(sm))
    }

    /// The byte order [`MessageBuilder::submessage`] writes `sm` in.
    fn little_endian(sm: &Submessage<'_>) -> bool {
        match sm {
            Submessage::Data(Data {
                inline_qos: Some(pl),
                ..
            })
            | Submessage::DataFrag(DataFrag {
                inline_qos: Some(pl),
                ..
            }) => pl.little_endian(),
            _ => true,
        }
    }

    /// [`MessageBuilder::submessage`], except that the payload of a DATA or DATA_FRAG of at
    /// least `min` bytes is not copied into the message: the result is then the offset where
    /// it belongs, and the datagram is what was written with the payload inserted there
    /// (a [`Splice`]; [`spliced_parts`]). For a transport that can gather (copy each part to
    /// where it goes), a large payload is then copied once, not twice.
    pub fn submessage_spliced(&mut self, sm: &Submessage<'_>, min: usize) -> Option<usize> {
        let le = Self::little_endian(sm);
        let e = if le { flag::E } else { 0 };
        match sm {
            Submessage::Data(d) if data_payload(d).0 != 0 && d.payload.len() >= min => {
                let qos = d.inline_qos.map(|pl| pl.as_bytes());
                let flags = e | data_payload(d).0;
                let start = self.data_head(flags, d.reader_id, d.writer_id, d.writer_sn, qos, 0);
                let at = self.out.len();
                self.finish_spliced(start, le, d.payload.len());
                Some(at)
            }
            Submessage::DataFrag(d) if d.payload.len() >= min => {
                let start = self.data_frag_head(d, e);
                let at = self.out.len();
                self.finish_spliced(start, le, d.payload.len());
                Some(at)
            }
            _ => {
                self.submessage_in(sm, le);
                None
            }
        }
    }

    /// Appends a submessage in the given byte order. Big-endian output exists for tests and
    /// simulated foreign peers; an inline QoS list is copied as is, so it must already be in
    /// `little_endian`'s byte order.
    pub fn submessage_in(&mut self, sm: &Submessage<'_>, little_endian: bool) -> &mut Self {
        let e = if little_endian { flag::E } else { 0 };
        // One growth check instead of one per field.
        self.out.reserve(sm.encoded_len());
        match sm {
            Submessage::Data(d) => {
                let (kind, payload) = data_payload(d);
                let qos = d.inline_qos.map(|pl| pl.as_bytes());
                self.data_in(
                    e | kind,
                    d.reader_id,
                    d.writer_id,
                    d.writer_sn,
                    qos,
                    &[payload],
                );
            }
            Submessage::DataFrag(d) => {
                let start = self.data_frag_head(d, e);
                self.out.extend_from_slice(d.payload);
                self.finish(start, little_endian);
            }
            Submessage::Heartbeat(hb) => {
                let mut flags = e;
                if hb.final_flag {
                    flags |= flag::F;
                }
                if hb.liveliness_flag {
                    flags |= flag::L;
                }
                let start = self.begin(smid::HEARTBEAT, flags);
                let mut w = Writer {
                    out: self.out,
                    le: little_endian,
                };
                w.bytes(&hb.reader_id.0);
                w.bytes(&hb.writer_id.0);
                w.sn(hb.first_sn);
                w.sn(hb.last_sn);
                w.i32(hb.count);
                self.finish(start, little_endian);
            }
            Submessage::HeartbeatFrag(hf) => {
                let start = self.begin(smid::HEARTBEAT_FRAG, e);
                let mut w = Writer {
                    out: self.out,
                    le: little_endian,
                };
                w.bytes(&hf.reader_id.0);
                w.bytes(&hf.writer_id.0);
                w.sn(hf.writer_sn);
                w.u32(hf.last_fragment_num);
                w.i32(hf.count);
                self.finish(start, little_endian);
            }
            Submessage::AckNack(an) => {
                let flags = if an.final_flag { e | flag::F } else { e };
                let start = self.begin(smid::ACKNACK, flags);
                let mut w = Writer {
                    out: self.out,
                    le: little_endian,
                };
                w.bytes(&an.reader_id.0);
                w.bytes(&an.writer_id.0);
                w.sn_set(&an.reader_sn_state);
                w.i32(an.count);
                self.finish(start, little_endian);
            }
            Submessage::NackFrag(nf) => {
                let start = self.begin(smid::NACK_FRAG, e);
                let mut w = Writer {
                    out: self.out,
                    le: little_endian,
                };
                w.bytes(&nf.reader_id.0);
                w.bytes(&nf.writer_id.0);
                w.sn(nf.writer_sn);
                w.frag_set(&nf.fragment_number_state);
                w.i32(nf.count);
                self.finish(start, little_endian);
            }
            Submessage::Gap(g) => {
                let start = self.begin(smid::GAP, e);
                let mut w = Writer {
                    out: self.out,
                    le: little_endian,
                };
                w.bytes(&g.reader_id.0);
                w.bytes(&g.writer_id.0);
                w.sn(g.gap_start);
                w.sn_set(&g.gap_list);
                self.finish(start, little_endian);
            }
            Submessage::InfoTs(ts) => self.info_ts_in(*ts, little_endian),
            Submessage::InfoDst(prefix) => {
                let start = self.begin(smid::INFO_DST, e);
                self.out.extend_from_slice(&prefix.0);
                self.finish(start, little_endian);
            }
            Submessage::InfoSrc {
                version,
                vendor,
                guid_prefix,
            } => {
                let start = self.begin(smid::INFO_SRC, e);
                self.out.extend_from_slice(&[0; 4]);
                self.out.extend_from_slice(&[version.major, version.minor]);
                self.out.extend_from_slice(&vendor.0);
                self.out.extend_from_slice(&guid_prefix.0);
                self.finish(start, little_endian);
            }
            Submessage::Pad => {
                let start = self.begin(smid::PAD, e);
                self.finish(start, little_endian);
            }
            Submessage::Unknown { id } => {
                // Written with a 4-byte zero body: a zero length would mean "to the end of
                // the message" for an id other than PAD / INFO_TS.
                let start = self.begin(*id, e);
                self.out.extend_from_slice(&[0; 4]);
                self.finish(start, little_endian);
            }
        }
        self
    }

    /// Appends INFO_DST addressing the participant with `prefix`.
    pub fn info_dst(&mut self, prefix: GuidPrefix) -> &mut Self {
        self.submessage(&Submessage::InfoDst(prefix))
    }

    /// Appends INFO_TS with a source timestamp, or with the I flag (invalidate) for `None`.
    pub fn info_ts(&mut self, ts: Option<Timestamp>) -> &mut Self {
        self.info_ts_in(ts, true);
        self
    }

    /// Appends a DATA whose payload is the concatenation of `payload_parts`, copied once into
    /// the message (e.g. the encapsulation header and the serialized sample, without first
    /// joining them).
    ///
    /// `inline_qos` is an encoded little-endian parameter list, sentinel included (as written by
    /// [`super::ParameterListBuilder`]). `payload_kind` selects the D or K flag; with
    /// [`PayloadKind::None`] the parts are ignored. The payload is zero-padded to 4 bytes.
    pub fn data_with_payload_parts(
        &mut self,
        reader_id: EntityId,
        writer_id: EntityId,
        writer_sn: SequenceNumber,
        inline_qos: Option<&[u8]>,
        payload_kind: PayloadKind,
        payload_parts: &[&[u8]],
    ) -> &mut Self {
        let flags = flag::E
            | match payload_kind {
                PayloadKind::None => 0,
                PayloadKind::Data => flag::DATA_D,
                PayloadKind::Key => flag::DATA_K,
            };
        let parts = if payload_kind == PayloadKind::None {
            &[][..]
        } else {
            payload_parts
        };
        self.data_in(flags, reader_id, writer_id, writer_sn, inline_qos, parts);
        self
    }

    /// Writes a DATA; `flags` carries E and D/K, Q is added here.
    fn data_in(
        &mut self,
        flags: u8,
        reader_id: EntityId,
        writer_id: EntityId,
        writer_sn: SequenceNumber,
        inline_qos: Option<&[u8]>,
        payload_parts: &[&[u8]],
    ) {
        let le = flags & flag::E != 0;
        let payload_len = payload_parts.iter().map(|p| p.len()).sum();
        let start = self.data_head(
            flags,
            reader_id,
            writer_id,
            writer_sn,
            inline_qos,
            payload_len,
        );
        for p in payload_parts {
            self.out.extend_from_slice(p);
        }
        self.finish(start, le);
    }

    /// A DATA up to its payload (room reserved for `payload_len` more bytes); returns where
    /// it starts.
    fn data_head(
        &mut self,
        mut flags: u8,
        reader_id: EntityId,
        writer_id: EntityId,
        writer_sn: SequenceNumber,
        inline_qos: Option<&[u8]>,
        payload_len: usize,
    ) -> usize {
        if inline_qos.is_some() {
            flags |= flag::Q;
        }
        let le = flags & flag::E != 0;
        self.out.reserve(Self::data_encoded_len(
            inline_qos.map_or(0, |q| q.len()),
            payload_len,
        ));
        let start = self.begin(smid::DATA, flags);
        let mut w = Writer { out: self.out, le };
        w.u16(0);
        w.u16(DATA_OCTETS_TO_INLINE_QOS);
        w.bytes(&reader_id.0);
        w.bytes(&writer_id.0);
        w.sn(writer_sn);
        if let Some(q) = inline_qos {
            w.bytes(q);
            w.pad_to_4(start);
        }
        start
    }

    /// A DATA_FRAG up to its fragments, `e` its endianness flag; returns where it starts.
    fn data_frag_head(&mut self, d: &DataFrag<'_>, e: u8) -> usize {
        let mut flags = e;
        if d.key_flag {
            flags |= flag::FRAG_K;
        }
        let qos = d.inline_qos.map(|pl| pl.as_bytes());
        if qos.is_some() {
            flags |= flag::Q;
        }
        let start = self.begin(smid::DATA_FRAG, flags);
        let mut w = Writer {
            out: self.out,
            le: e != 0,
        };
        w.u16(0);
        w.u16(DATA_FRAG_OCTETS_TO_INLINE_QOS);
        w.bytes(&d.reader_id.0);
        w.bytes(&d.writer_id.0);
        w.sn(d.writer_sn);
        w.u32(d.fragment_starting_num);
        w.u16(d.fragments_in_submessage);
        w.u16(d.fragment_size);
        w.u32(d.sample_size);
        if let Some(q) = qos {
            w.bytes(q);
            w.pad_to_4(start);
        }
        start
    }

    fn info_ts_in(&mut self, ts: Option<Timestamp>, le: bool) {
        let e = if le { flag::E } else { 0 };
        match ts {
            Some(ts) => {
                let start = self.begin(smid::INFO_TS, e);
                let mut w = Writer { out: self.out, le };
                w.i32(ts.seconds);
                w.u32(ts.fraction);
                self.finish(start, le);
            }
            None => {
                let start = self.begin(smid::INFO_TS, e | flag::I);
                self.finish(start, le);
            }
        }
    }

    /// Writes a submessage header with a placeholder length; returns where it starts.
    fn begin(&mut self, id: u8, flags: u8) -> usize {
        let start = self.out.len();
        self.out.extend_from_slice(&[id, flags, 0, 0]);
        start
    }

    /// Pads the submessage that starts at `start` to 4 bytes and patches its length.
    fn finish(&mut self, start: usize, le: bool) {
        self.finish_spliced(start, le, 0);
    }

    /// [`MessageBuilder::finish`] for a submessage whose last `spliced` bytes are left out of
    /// `out` (see [`MessageBuilder::submessage_spliced`]).
    fn finish_spliced(&mut self, start: usize, le: bool, spliced: usize) {
        let written = self.out.len() - start + spliced;
        self.out
            .extend_from_slice(&[0u8; 3][..pad4(written) - written]);
        let body = self.out.len() + spliced - start - SUBMESSAGE_HEADER_LEN;
        // Larger than 64 KiB: 0 = "to the end of the message"; the caller puts it last.
        let len = u16::try_from(body).unwrap_or(0);
        let b = if le {
            len.to_le_bytes()
        } else {
            len.to_be_bytes()
        };
        self.out[start + 2..start + 4].copy_from_slice(&b);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mask_clears_bits_past_num_bits() {
        let mut b = [u32::MAX; 8];
        mask_bitmap(&mut b, 33);
        assert_eq!(b, [u32::MAX, 0x8000_0000, 0, 0, 0, 0, 0, 0]);
        let mut b = [u32::MAX; 8];
        mask_bitmap(&mut b, 256);
        assert_eq!(b, [u32::MAX; 8]);
        mask_bitmap(&mut b, 0);
        assert_eq!(b, [0; 8]);
    }

    /// A message built with payloads spliced out, put back together, is byte for byte the
    /// message built by copying: DATA with and without inline QoS, key payloads, lengths that
    /// need padding, DATA_FRAG, small payloads kept in, and a last submessage past 64 KiB.
    #[test]
    fn a_spliced_message_put_together_is_the_copied_message() {
        let prefix = GuidPrefix([3; 12]);
        let mut qos = vec![0x70, 0x00, 16, 0];
        qos.extend_from_slice(&[9; 16]);
        qos.extend_from_slice(&[0x01, 0x00, 0, 0]);
        let qos = ParameterList::parse(&qos, true).unwrap();
        let payload: Vec<u8> = (0..70_001u32).map(|x| (x % 251) as u8).collect();
        let data = |sn: i64, len: usize, kind: PayloadKind, q: bool| {
            Submessage::Data(Data {
                reader_id: EntityId::UNKNOWN,
                writer_id: EntityId::SPDP_WRITER,
                writer_sn: sn,
                inline_qos: q.then_some(qos),
                payload_kind: kind,
                payload: &payload[..len],
            })
        };
        let frag = Submessage::DataFrag(DataFrag {
            reader_id: EntityId::UNKNOWN,
            writer_id: EntityId::SPDP_WRITER,
            writer_sn: 9,
            fragment_starting_num: 2,
            fragments_in_submessage: 2,
            fragment_size: 1001,
            sample_size: 5000,
            key_flag: false,
            inline_qos: Some(qos),
            payload: &payload[1001..3003],
        });
        let messages = [
            vec![data(1, 5, PayloadKind::Data, false)],
            vec![
                Submessage::InfoTs(None),
                data(2, 1001, PayloadKind::Data, true),
                data(3, 4099, PayloadKind::Key, false),
                frag,
                data(4, 3, PayloadKind::Data, false),
                data(5, 0, PayloadKind::None, true),
            ],
            vec![
                data(6, 4, PayloadKind::Data, false),
                data(7, 70_001, PayloadKind::Data, true),
            ],
        ];
        for (i, sms) in messages.iter().enumerate() {
            let mut copied = Vec::new();
            let mut b = MessageBuilder::new(&mut copied, prefix);
            for sm in sms {
                b.submessage(sm);
            }
            let mut written = Vec::new();
            let mut splices = Vec::new();
            let mut b = MessageBuilder::new(&mut written, prefix);
            for sm in sms {
                if let Some(at) = b.submessage_spliced(sm, 4) {
                    let payload = match sm {
                        Submessage::Data(d) => d.payload,
                        Submessage::DataFrag(d) => d.payload,
                        _ => unreachable!("only payloads are left out"),
                    };
                    splices.push((at, payload));
                }
            }
            let mut parts = Vec::new();
            spliced_parts(&written, &splices, |p| parts.push(p));
            assert_eq!(parts.concat(), copied, "message {i}");
            // Payloads of 4 bytes and more were left out, smaller ones copied.
            let out: usize = splices.iter().map(|s| s.1.len()).sum();
            assert_eq!(written.len() + out, copied.len(), "message {i}");
        }
    }

    #[test]
    fn encoded_len_matches_output() {
        let prefix = GuidPrefix([7; 12]);
        let mut buf = Vec::new();
        let sms = [
            Submessage::Pad,
            Submessage::InfoTs(None),
            Submessage::InfoTs(Some(Timestamp {
                seconds: 1,
                fraction: 2,
            })),
            Submessage::InfoDst(prefix),
            Submessage::Unknown { id: 0x80 },
            Submessage::Data(Data {
                reader_id: EntityId::UNKNOWN,
                writer_id: EntityId::SPDP_WRITER,
                writer_sn: 1,
                inline_qos: None,
                payload_kind: PayloadKind::Data,
                payload: &[0, 1, 0, 0, 5],
            }),
        ];
        for sm in &sms {
            let mut b = MessageBuilder::new(&mut buf, prefix);
            b.submessage(sm);
            assert_eq!(b.len() - HEADER_LEN, sm.encoded_len(), "{sm:?}");
        }
    }
}
