//! Encoding: [`MessageBuilder`] appends the header and submessages to a caller-owned buffer,
//! optionally leaving large payloads out to be spliced in by a gathering transport.

use super::lengths::{data_body_len, data_frag_body_len, pad4, set_words};
use super::{
    flag, mask_bitmap, DATA_FRAG_OCTETS_TO_INLINE_QOS, DATA_OCTETS_TO_INLINE_QOS, MAX_SET_BITS,
    SUBMESSAGE_HEADER_LEN,
};
use crate::types::{
    seq_to_wire, EntityId, GuidPrefix, SequenceNumber, Timestamp, PROTOCOL_VERSION, VENDOR_TESSERA,
};
use crate::wire::{
    submessage_id as smid, Data, DataFrag, FragmentNumberSet, Header, PayloadKind,
    SequenceNumberSet, Submessage, HEADER_LEN,
};

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
