//! Malformed input never panics the RTPS decoder: it gives a `DecodeError` (once, last) or skips.
//!
//! Covers truncation at every offset, lying `octetsToNextHeader` / `octetsToInlineQos`,
//! oversized number sets, absurd fragment descriptions, lying parameter lists, random bytes and
//! random mutations of a valid message (whose decodable parts must then re-encode faithfully).

use proptest::prelude::*;
use tessera_rtps::types::{EntityId, GuidPrefix, ProtocolVersion, Timestamp, VendorId};
use tessera_rtps::wire::{
    pid, submessage_id as smid, AckNack, Data, DataFrag, DecodeError, FragmentNumberSet, Gap,
    Heartbeat, HeartbeatFrag, MessageBuilder, MessageReceiver, NackFrag, ParameterList,
    PayloadKind, SequenceNumberSet, Submessage, SubmessageIter, HEADER_LEN,
};

const PREFIX: GuidPrefix = GuidPrefix([3; 12]);
const WRITER: EntityId = EntityId([0, 0, 0x12, 0x02]);
const READER: EntityId = EntityId([0, 0, 0x12, 0x07]);
/// A vendor-specific submessage id the codec does not know.
const VENDOR_SUBMESSAGE: u8 = 0x81;

/// Decodes `buf` with both iterators, checking the "error at most once, and last" contract.
/// Returns the submessages the plain iterator gave before any error, and that error.
fn drain(buf: &[u8]) -> (Vec<Submessage<'_>>, Option<DecodeError>) {
    let (ok, err) = match SubmessageIter::parse(buf) {
        Err(e) => (Vec::new(), Some(e)),
        Ok((_, iter)) => {
            let mut ok = Vec::new();
            let mut err = None;
            for item in iter {
                assert!(err.is_none(), "item after an error");
                match item {
                    Ok(sm) => ok.push(sm),
                    Err(e) => err = Some(e),
                }
            }
            (ok, err)
        }
    };
    if let Ok(rx) = MessageReceiver::new(buf) {
        let mut seen_err = false;
        for item in rx {
            assert!(!seen_err, "receiver item after an error");
            seen_err = item.is_err();
        }
        assert_eq!(seen_err, err.is_some());
    }
    (ok, err)
}

fn le_param_list(params: &[(u16, &[u8])]) -> Vec<u8> {
    let mut v = Vec::new();
    let mut b = tessera_rtps::wire::ParameterListBuilder::new(&mut v);
    for (p, val) in params {
        b.param(*p, val);
    }
    b.finish();
    v
}

/// A message with every submessage kind, each in the given byte order (DATA / DATA_FRAG with
/// inline QoS stay little-endian: the builder writes their lists as they are).
fn rich_message(le: bool) -> Vec<u8> {
    let qos = le_param_list(&[(pid::STATUS_INFO, &[0, 0, 0, 1]), (pid::KEY_HASH, &[7; 16])]);
    let qos = ParameterList::parse(&qos, true).unwrap();
    let mut set = SequenceNumberSet::empty(10);
    set.insert(11);
    set.insert(40);
    let mut fset = FragmentNumberSet::empty(2);
    fset.insert(3);
    let sms = [
        Submessage::InfoTs(Some(Timestamp {
            seconds: 100,
            fraction: 7,
        })),
        Submessage::InfoDst(GuidPrefix([9; 12])),
        Submessage::Data(Data {
            reader_id: EntityId::UNKNOWN,
            writer_id: WRITER,
            writer_sn: 5,
            inline_qos: Some(qos),
            payload_kind: PayloadKind::Data,
            payload: &[0, 1, 0, 0, 1, 2, 3, 4, 5, 6],
        }),
        Submessage::Data(Data {
            reader_id: READER,
            writer_id: WRITER,
            writer_sn: 6,
            inline_qos: None,
            payload_kind: PayloadKind::Key,
            payload: &[0, 1, 0, 0, 9, 9, 9, 9],
        }),
        Submessage::DataFrag(DataFrag {
            reader_id: READER,
            writer_id: WRITER,
            writer_sn: 7,
            fragment_starting_num: 2,
            fragments_in_submessage: 2,
            fragment_size: 8,
            sample_size: 30,
            inline_qos: None,
            key_flag: false,
            payload: &[1; 16],
        }),
        Submessage::DataFrag(DataFrag {
            reader_id: READER,
            writer_id: WRITER,
            writer_sn: 7,
            fragment_starting_num: 4,
            fragments_in_submessage: 1,
            fragment_size: 8,
            sample_size: 30,
            inline_qos: Some(qos),
            key_flag: false,
            payload: &[2; 6],
        }),
        Submessage::Heartbeat(Heartbeat {
            reader_id: READER,
            writer_id: WRITER,
            first_sn: 1,
            last_sn: 7,
            count: 3,
            final_flag: false,
            liveliness_flag: false,
        }),
        Submessage::HeartbeatFrag(HeartbeatFrag {
            reader_id: READER,
            writer_id: WRITER,
            writer_sn: 7,
            last_fragment_num: 4,
            count: 1,
        }),
        Submessage::InfoSrc {
            version: ProtocolVersion { major: 2, minor: 3 },
            vendor: VendorId([1, 0x0f]),
            guid_prefix: GuidPrefix([4; 12]),
        },
        Submessage::AckNack(AckNack {
            reader_id: READER,
            writer_id: WRITER,
            reader_sn_state: set,
            count: 4,
            final_flag: true,
        }),
        Submessage::NackFrag(NackFrag {
            reader_id: READER,
            writer_id: WRITER,
            writer_sn: 7,
            fragment_number_state: fset,
            count: 2,
        }),
        Submessage::Gap(Gap {
            reader_id: READER,
            writer_id: WRITER,
            gap_start: 2,
            gap_list: set,
        }),
        Submessage::Pad,
        Submessage::InfoTs(None),
        Submessage::Unknown { id: 0x80 },
    ];
    let mut out = Vec::new();
    let mut b = MessageBuilder::new(&mut out, PREFIX);
    for sm in &sms {
        let with_qos = matches!(
            sm,
            Submessage::Data(Data {
                inline_qos: Some(_),
                ..
            }) | Submessage::DataFrag(DataFrag {
                inline_qos: Some(_),
                ..
            })
        );
        b.submessage_in(sm, le || with_qos);
    }
    out
}

/// Offsets of the submessage headers of a well-formed message.
fn submessage_offsets(msg: &[u8]) -> Vec<usize> {
    let mut offs = Vec::new();
    let mut pos = HEADER_LEN;
    while pos + 4 <= msg.len() {
        offs.push(pos);
        let b = [msg[pos + 2], msg[pos + 3]];
        let len = if msg[pos + 1] & 1 != 0 {
            u16::from_le_bytes(b)
        } else {
            u16::from_be_bytes(b)
        };
        pos += 4 + len as usize;
    }
    offs
}

fn put_len(msg: &mut [u8], at: usize, len: u16) {
    let b = if msg[at + 1] & 1 != 0 {
        len.to_le_bytes()
    } else {
        len.to_be_bytes()
    };
    msg[at + 2..at + 4].copy_from_slice(&b);
}

#[test]
fn rich_message_decodes_in_both_byte_orders() {
    for le in [true, false] {
        let msg = rich_message(le);
        let (ok, err) = drain(&msg);
        assert_eq!(err, None);
        assert_eq!(ok.len(), 15);
        assert_eq!(submessage_offsets(&msg).len(), 15);
    }
}

#[test]
fn truncated_at_every_offset() {
    for le in [true, false] {
        let msg = rich_message(le);
        let (full, _) = drain(&msg);
        for n in 0..msg.len() {
            let cut = &msg[..n];
            let (ok, err) = drain(cut);
            if n < HEADER_LEN {
                assert_eq!(err, Some(DecodeError::Truncated), "cut at {n}");
                continue;
            }
            // Everything decoded before the cut is what the whole message holds.
            assert_eq!(&ok[..], &full[..ok.len()], "cut at {n}");
            let at_boundary = n == HEADER_LEN || submessage_offsets(&msg).contains(&n);
            assert_eq!(err.is_none(), at_boundary, "cut at {n}: {err:?}");
        }
    }
}

#[test]
fn lying_octets_to_next_header() {
    for le in [true, false] {
        let msg = rich_message(le);
        for at in submessage_offsets(&msg) {
            let remaining = (msg.len() - at - 4) as u16;
            let original = {
                let b = [msg[at + 2], msg[at + 3]];
                if msg[at + 1] & 1 != 0 {
                    u16::from_le_bytes(b)
                } else {
                    u16::from_be_bytes(b)
                }
            };
            for len in [
                0,
                1,
                2,
                3,
                4,
                5,
                8,
                original.wrapping_sub(4),
                original.wrapping_sub(1),
                original.wrapping_add(1),
                original.wrapping_add(4),
                remaining,
                remaining + 1,
                remaining + 4,
                0x7fff,
                0xfffc,
                0xffff,
            ] {
                let mut m = msg.clone();
                put_len(&mut m, at, len);
                let (_, err) = drain(&m);
                if len as usize > remaining as usize {
                    assert!(err.is_some(), "length {len} past the end at {at}");
                }
            }
        }
    }
}

/// A message holding one submessage with the given id, flags and body.
fn one(id: u8, flags: u8, body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    MessageBuilder::new(&mut out, PREFIX);
    out.extend_from_slice(&[id, flags]);
    let len = body.len() as u16;
    out.extend_from_slice(&if flags & 1 != 0 {
        len.to_le_bytes()
    } else {
        len.to_be_bytes()
    });
    out.extend_from_slice(body);
    out
}

fn first(buf: &[u8]) -> Result<Submessage<'_>, DecodeError> {
    let (_, mut iter) = SubmessageIter::parse(buf)?;
    iter.next().expect("one submessage")
}

/// DATA body (little-endian): extraFlags 0, the given octetsToInlineQos, ids, sn, then `rest`.
fn data_body(otiq: u16, sn: i64, rest: &[u8]) -> Vec<u8> {
    let mut b = vec![0, 0];
    b.extend_from_slice(&otiq.to_le_bytes());
    b.extend_from_slice(&READER.0);
    b.extend_from_slice(&WRITER.0);
    b.extend_from_slice(&((sn >> 32) as i32).to_le_bytes());
    b.extend_from_slice(&(sn as u32).to_le_bytes());
    b.extend_from_slice(rest);
    b
}

#[test]
fn lying_octets_to_inline_qos() {
    let payload = [0u8, 1, 0, 0, 1, 2, 3, 4];
    for otiq in [0u16, 4, 12, 15] {
        let m = one(smid::DATA, 0x05, &data_body(otiq, 1, &payload));
        assert_eq!(first(&m), Err(DecodeError::Inconsistent), "otiq {otiq}");
    }
    for otiq in [25u16, 100, 0xffff] {
        let m = one(smid::DATA, 0x05, &data_body(otiq, 1, &payload));
        assert_eq!(first(&m), Err(DecodeError::Truncated), "otiq {otiq}");
    }
    // otiq 20: four unknown bytes after the sequence number are skipped.
    let mut rest = vec![0xee; 4];
    rest.extend_from_slice(&payload);
    let m = one(smid::DATA, 0x05, &data_body(20, 1, &rest));
    match first(&m) {
        Ok(Submessage::Data(d)) => assert_eq!(d.payload, &payload),
        other => panic!("{other:?}"),
    }
    // otiq exactly at the end, D flag: empty payload.
    let m = one(smid::DATA, 0x05, &data_body(24, 1, &payload));
    match first(&m) {
        Ok(Submessage::Data(d)) => assert!(d.payload.is_empty()),
        other => panic!("{other:?}"),
    }
    // DATA_FRAG needs at least 28.
    let mut body = vec![0, 0, 27, 0];
    body.extend_from_slice(&[0; 40]);
    assert_eq!(
        first(&one(smid::DATA_FRAG, 0x01, &body)),
        Err(DecodeError::Inconsistent)
    );
}

#[test]
fn data_flags_and_sequence_numbers() {
    let payload = [0u8, 1, 0, 0];
    // D and K together.
    let m = one(smid::DATA, 0x0d, &data_body(16, 1, &payload));
    assert_eq!(first(&m), Err(DecodeError::Inconsistent));
    for sn in [0i64, -1, i64::MIN] {
        let m = one(smid::DATA, 0x05, &data_body(16, sn, &payload));
        assert_eq!(
            first(&m),
            Err(DecodeError::InvalidSequenceNumber),
            "sn {sn}"
        );
    }
    // Neither D nor K: no payload, trailing bytes ignored.
    let m = one(smid::DATA, 0x01, &data_body(16, 1, &payload));
    match first(&m) {
        Ok(Submessage::Data(d)) => {
            assert_eq!(d.payload_kind, PayloadKind::None);
            assert!(d.payload.is_empty());
        }
        other => panic!("{other:?}"),
    }
    // Too short for its fixed fields.
    for n in 0..20 {
        let body = data_body(16, 1, &[]);
        let m = one(smid::DATA, 0x05, &body[..n]);
        assert_eq!(first(&m), Err(DecodeError::Truncated), "body {n}");
    }
}

#[test]
fn parameter_lists_that_lie() {
    let payload = [0u8, 1, 0, 0];
    let cases: Vec<(Vec<u8>, DecodeError)> = vec![
        // length past the end of the submessage
        (vec![0x71, 0, 0x40, 0, 0, 0, 0, 1], DecodeError::Truncated),
        // length not a multiple of 4
        (
            vec![0x71, 0, 3, 0, 0, 0, 0, 1, 1, 0, 0, 0],
            DecodeError::BadParameterLength,
        ),
        // no sentinel
        (vec![0x71, 0, 4, 0, 0, 0, 0, 1], DecodeError::Truncated),
        // nothing at all
        (vec![], DecodeError::Truncated),
        // header cut in half
        (vec![0x71, 0], DecodeError::Truncated),
    ];
    for (list, want) in cases {
        let mut rest = list.clone();
        // Without a payload the list is all the submessage holds.
        let m = one(smid::DATA, 0x03, &data_body(16, 1, &rest));
        assert_eq!(first(&m), Err(want), "list {list:?}");
        rest.extend_from_slice(&payload);
        let _ = drain(&one(smid::DATA, 0x07, &data_body(16, 1, &rest)));
    }
    // A list that would fit in the message but not in its submessage must not read on into
    // the next submessage.
    let mut m = one(
        smid::DATA,
        0x03,
        &data_body(16, 1, &[0x71, 0, 0x10, 0, 0, 0, 0, 1]),
    );
    m.extend_from_slice(&[smid::PAD, 0x01, 16, 0]);
    m.extend_from_slice(&[1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    assert_eq!(first(&m), Err(DecodeError::Truncated));
    // Same for DATA_FRAG.
    let mut body = vec![0, 0, 28, 0];
    body.extend_from_slice(&READER.0);
    body.extend_from_slice(&WRITER.0);
    body.extend_from_slice(&[0, 0, 0, 0, 1, 0, 0, 0]);
    body.extend_from_slice(&[1, 0, 0, 0, 1, 0, 4, 0, 4, 0, 0, 0]);
    body.extend_from_slice(&[0x71, 0, 0x08, 0, 0, 0, 0, 1]);
    assert_eq!(
        first(&one(smid::DATA_FRAG, 0x03, &body)),
        Err(DecodeError::Truncated)
    );
}

fn sn_le(sn: i64) -> [u8; 8] {
    let mut b = [0u8; 8];
    b[..4].copy_from_slice(&((sn >> 32) as i32).to_le_bytes());
    b[4..].copy_from_slice(&(sn as u32).to_le_bytes());
    b
}

fn acknack_body(base: i64, num_bits: u32, words: usize) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(&READER.0);
    b.extend_from_slice(&WRITER.0);
    b.extend_from_slice(&sn_le(base));
    b.extend_from_slice(&num_bits.to_le_bytes());
    b.extend(std::iter::repeat_n(0xffu8, 4 * words));
    b.extend_from_slice(&1i32.to_le_bytes());
    b
}

#[test]
fn number_sets() {
    for num_bits in [257u32, 1000, u32::MAX] {
        let m = one(smid::ACKNACK, 0x01, &acknack_body(1, num_bits, 8));
        assert_eq!(first(&m), Err(DecodeError::InvalidNumberSet));
        let mut gap = vec![0u8; 8];
        gap.extend_from_slice(&sn_le(1));
        gap.extend_from_slice(&sn_le(1));
        gap.extend_from_slice(&num_bits.to_le_bytes());
        gap.extend_from_slice(&[0; 32]);
        assert_eq!(
            first(&one(smid::GAP, 0x01, &gap)),
            Err(DecodeError::InvalidNumberSet)
        );
        let mut nf = vec![0u8; 8];
        nf.extend_from_slice(&sn_le(1));
        nf.extend_from_slice(&1u32.to_le_bytes());
        nf.extend_from_slice(&num_bits.to_le_bytes());
        nf.extend_from_slice(&[0; 36]);
        assert_eq!(
            first(&one(smid::NACK_FRAG, 0x01, &nf)),
            Err(DecodeError::InvalidNumberSet)
        );
    }
    // 256 bits need 8 words; 7 words plus the count is too short.
    let mut body = acknack_body(1, 256, 7);
    body.truncate(body.len() - 4);
    assert_eq!(
        first(&one(smid::ACKNACK, 0x01, &body)),
        Err(DecodeError::Truncated)
    );
    // 256 bits, full bitmap.
    match first(&one(smid::ACKNACK, 0x01, &acknack_body(1, 256, 8))) {
        Ok(Submessage::AckNack(a)) => assert_eq!(a.reader_sn_state.iter().count(), 256),
        other => panic!("{other:?}"),
    }
    // Bits past numBits are cleared.
    match first(&one(smid::ACKNACK, 0x01, &acknack_body(1, 3, 1))) {
        Ok(Submessage::AckNack(a)) => {
            assert_eq!(a.reader_sn_state.bitmap[0], 0xe000_0000);
            assert_eq!(a.reader_sn_state.iter().collect::<Vec<_>>(), vec![1, 2, 3]);
        }
        other => panic!("{other:?}"),
    }
    // Pre-emptive ACKNACK: base 0, no bits, decoded as such.
    match first(&one(smid::ACKNACK, 0x01, &acknack_body(0, 0, 0))) {
        Ok(Submessage::AckNack(a)) => assert_eq!(a.reader_sn_state, SequenceNumberSet::empty(0)),
        other => panic!("{other:?}"),
    }
    // Sets whose last member would overflow.
    match first(&one(smid::ACKNACK, 0x01, &acknack_body(i64::MAX - 3, 3, 1))) {
        Ok(Submessage::AckNack(a)) => assert_eq!(a.reader_sn_state.iter().count(), 3),
        other => panic!("{other:?}"),
    }
    let m = one(smid::ACKNACK, 0x01, &acknack_body(i64::MAX - 2, 3, 1));
    assert_eq!(first(&m), Err(DecodeError::InvalidNumberSet));
    let mut nf = vec![0u8; 8];
    nf.extend_from_slice(&sn_le(1));
    nf.extend_from_slice(&(u32::MAX - 1).to_le_bytes());
    nf.extend_from_slice(&2u32.to_le_bytes());
    nf.extend_from_slice(&[0xff; 4]);
    nf.extend_from_slice(&[0; 4]);
    assert_eq!(
        first(&one(smid::NACK_FRAG, 0x01, &nf)),
        Err(DecodeError::InvalidNumberSet)
    );
    for (base, bits) in [(0i64, 1u32), (-1, 0), (i64::MIN, 0)] {
        let m = one(smid::ACKNACK, 0x01, &acknack_body(base, bits, 1));
        assert_eq!(
            first(&m),
            Err(DecodeError::InvalidNumberSet),
            "{base}/{bits}"
        );
    }
    // GAP: gapStart >= 1, gapList.base >= 1.
    let gap = |start: i64, base: i64| {
        let mut g = vec![0u8; 8];
        g.extend_from_slice(&sn_le(start));
        g.extend_from_slice(&sn_le(base));
        g.extend_from_slice(&0u32.to_le_bytes());
        first(&one(smid::GAP, 0x01, &g)).map(|_| ())
    };
    assert_eq!(gap(1, 1), Ok(()));
    assert_eq!(gap(0, 1), Err(DecodeError::InvalidSequenceNumber));
    assert_eq!(gap(1, 0), Err(DecodeError::InvalidNumberSet));
    // NACK_FRAG: bitmap base 0 or writerSN 0.
    let nack_frag = |sn: i64, base: u32| {
        let mut b = vec![0u8; 8];
        b.extend_from_slice(&sn_le(sn));
        b.extend_from_slice(&base.to_le_bytes());
        b.extend_from_slice(&0u32.to_le_bytes());
        b.extend_from_slice(&0u32.to_le_bytes());
        first(&one(smid::NACK_FRAG, 0x01, &b)).map(|_| ())
    };
    assert_eq!(nack_frag(1, 1), Ok(()));
    assert_eq!(nack_frag(1, 0), Err(DecodeError::InvalidNumberSet));
    assert_eq!(nack_frag(0, 1), Err(DecodeError::InvalidSequenceNumber));
}

#[test]
fn heartbeat_rules() {
    let hb = |first_sn: i64, last_sn: i64| {
        let mut b = vec![0u8; 8];
        b.extend_from_slice(&sn_le(first_sn));
        b.extend_from_slice(&sn_le(last_sn));
        b.extend_from_slice(&0i32.to_le_bytes());
        first(&one(smid::HEARTBEAT, 0x01, &b)).map(|_| ())
    };
    assert_eq!(hb(1, 0), Ok(()));
    assert_eq!(hb(1, 1), Ok(()));
    assert_eq!(hb(5, 4), Ok(()));
    assert_eq!(hb(5, 3), Err(DecodeError::InvalidSequenceNumber));
    assert_eq!(hb(0, 0), Err(DecodeError::InvalidSequenceNumber));
    assert_eq!(hb(-5, 10), Err(DecodeError::InvalidSequenceNumber));
    assert_eq!(
        hb(i64::MIN, i64::MAX),
        Err(DecodeError::InvalidSequenceNumber)
    );
    assert_eq!(hb(1, i64::MIN), Err(DecodeError::InvalidSequenceNumber));
    let hbf = |sn: i64, last: u32| {
        let mut b = vec![0u8; 8];
        b.extend_from_slice(&sn_le(sn));
        b.extend_from_slice(&last.to_le_bytes());
        b.extend_from_slice(&0i32.to_le_bytes());
        first(&one(smid::HEARTBEAT_FRAG, 0x01, &b)).map(|_| ())
    };
    assert_eq!(hbf(1, 1), Ok(()));
    assert_eq!(hbf(0, 1), Err(DecodeError::InvalidSequenceNumber));
    assert_eq!(hbf(1, 0), Err(DecodeError::InvalidFragment));
}

fn data_frag_body(start: u32, count: u16, size: u16, sample: u32, payload: usize) -> Vec<u8> {
    let mut b = vec![0, 0, 28, 0];
    b.extend_from_slice(&READER.0);
    b.extend_from_slice(&WRITER.0);
    b.extend_from_slice(&sn_le(1));
    b.extend_from_slice(&start.to_le_bytes());
    b.extend_from_slice(&count.to_le_bytes());
    b.extend_from_slice(&size.to_le_bytes());
    b.extend_from_slice(&sample.to_le_bytes());
    b.extend(std::iter::repeat_n(0xabu8, payload));
    b
}

/// (start, count, fragment size, sample size, payload bytes present, expected payload length)
type FragCase = (u32, u16, u16, u32, usize, Result<usize, DecodeError>);

#[test]
fn absurd_fragments() {
    use DecodeError::InvalidFragment as Bad;
    let cases: &[FragCase] = &[
        (1, 1, 1344, 2000, 1344, Ok(1344)),
        (2, 1, 1344, 2000, 656, Ok(656)),
        (2, 1, 1344, 2000, 660, Ok(656)), // padding trimmed
        (1, 2, 1344, 2000, 2000, Ok(2000)),
        (2, 1, 1344, 2000, 655, Err(Bad)), // last fragment too short
        (1, 1, 1344, 2000, 1000, Err(Bad)),
        (0, 1, 1344, 2000, 1344, Err(Bad)),
        (1, 0, 1344, 2000, 0, Err(Bad)),
        (1, 1, 0, 2000, 0, Err(Bad)),
        (3, 1, 1344, 2000, 1344, Err(Bad)), // past the sample
        (1, 3, 1344, 2000, 4000, Err(Bad)), // claims a fragment past the sample
        (1, 1, 1344, 0, 0, Err(Bad)),
        (u32::MAX, 1, u16::MAX, u32::MAX, 64, Err(Bad)),
        (u32::MAX, u16::MAX, u16::MAX, u32::MAX, 64, Err(Bad)),
        (1, u16::MAX, u16::MAX, u32::MAX, 64, Err(Bad)),
        (65_537, 1, u16::MAX, u32::MAX, 64, Err(Bad)),
        (65_537, 1, 1, u32::MAX, 64, Ok(1)),
    ];
    for &(start, count, size, sample, present, want) in cases {
        let m = one(
            smid::DATA_FRAG,
            0x01,
            &data_frag_body(start, count, size, sample, present),
        );
        let got = first(&m).map(|sm| match sm {
            Submessage::DataFrag(d) => d.payload.len(),
            other => panic!("{other:?}"),
        });
        assert_eq!(got, want, "{start} {count} {size} {sample} {present}");
    }
}

#[test]
fn framing_rules() {
    // Bad headers.
    let mut bad = rich_message(true);
    bad[3] = b'X';
    assert_eq!(drain(&bad).1, Some(DecodeError::BadHeader));
    for major in [0u8, 1, 3, 0xff] {
        let mut m = rich_message(true);
        m[4] = major;
        assert_eq!(drain(&m).1, Some(DecodeError::BadHeader), "major {major}");
    }
    let mut m = rich_message(true);
    m[5] = 0xff; // any minor
    assert_eq!(drain(&m).1, None);

    // A header alone is an empty message.
    assert_eq!(drain(&rich_message(true)[..HEADER_LEN]), (vec![], None));

    // A length that is not a multiple of 4 breaks the framing unless it ends the message.
    let hb = {
        let mut b = vec![0u8; 8];
        b.extend_from_slice(&sn_le(1));
        b.extend_from_slice(&sn_le(1));
        b.extend_from_slice(&0i32.to_le_bytes());
        b
    };
    let mut m = one(VENDOR_SUBMESSAGE, 0x01, &[1, 2, 3, 4, 5]);
    assert_eq!(drain(&m), (vec![Submessage::Unknown { id: 0x81 }], None));
    m.extend_from_slice(&[0, 0, 0]);
    m.extend_from_slice(&one(smid::HEARTBEAT, 0x01, &hb)[HEADER_LEN..]);
    assert_eq!(drain(&m).1, Some(DecodeError::BadSubmessageLength));

    // Trailing bytes too short for a submessage header.
    let mut m = one(smid::HEARTBEAT, 0x01, &hb);
    m.extend_from_slice(&[1, 2]);
    let (ok, err) = drain(&m);
    assert_eq!((ok.len(), err), (1, Some(DecodeError::Truncated)));

    // octetsToNextHeader 0 on a DATA: it extends to the end, swallowing what follows.
    let mut m = one(smid::DATA, 0x05, &data_body(16, 1, &[0, 1, 0, 0]));
    put_len(&mut m, HEADER_LEN, 0);
    m.extend_from_slice(&one(smid::HEARTBEAT, 0x01, &hb)[HEADER_LEN..]);
    let (ok, err) = drain(&m);
    assert_eq!(err, None);
    assert_eq!(ok.len(), 1);
    match &ok[0] {
        Submessage::Data(d) => assert_eq!(d.payload.len(), 4 + 32),
        other => panic!("{other:?}"),
    }

    // ... but on PAD and INFO_TS it means an empty body.
    let mut m = one(smid::PAD, 0x01, &[]);
    m.extend_from_slice(&[smid::INFO_TS, 0x03, 0, 0]);
    m.extend_from_slice(&one(smid::HEARTBEAT, 0x01, &hb)[HEADER_LEN..]);
    let (ok, err) = drain(&m);
    assert_eq!(err, None);
    assert_eq!(ok.len(), 3);
    // INFO_TS without the I flag needs its 8 bytes.
    let m = one(smid::INFO_TS, 0x01, &[]);
    assert_eq!(drain(&m).1, Some(DecodeError::Truncated));
    let m = one(smid::INFO_TS, 0x01, &[1, 2, 3, 4]);
    assert_eq!(drain(&m).1, Some(DecodeError::Truncated));
    // INFO_DST / INFO_SRC too short.
    assert_eq!(
        drain(&one(smid::INFO_DST, 0x01, &[0; 8])).1,
        Some(DecodeError::Truncated)
    );
    assert_eq!(
        drain(&one(smid::INFO_SRC, 0x01, &[0; 16])).1,
        Some(DecodeError::Truncated)
    );

    // After an error the receiver stops: a good HEARTBEAT after a bad one is not yielded.
    let mut bad_hb = hb.clone();
    bad_hb[8..16].copy_from_slice(&sn_le(0));
    let mut m = one(smid::HEARTBEAT, 0x01, &bad_hb);
    m.extend_from_slice(&one(smid::HEARTBEAT, 0x01, &hb)[HEADER_LEN..]);
    let items: Vec<_> = MessageReceiver::new(&m).unwrap().collect();
    assert_eq!(items, vec![Err(DecodeError::InvalidSequenceNumber)]);
}

/// Compares a decoded submessage with its decode-encode-decode image: equal, except that a
/// DATA payload may have gained up to 3 bytes of zero padding.
fn same_after_reencode(a: &Submessage<'_>, b: &Submessage<'_>) -> bool {
    match (a, b) {
        (Submessage::Data(x), Submessage::Data(y)) => {
            let pad = y.payload.len().wrapping_sub(x.payload.len());
            Data { payload: &[], ..*x } == Data { payload: &[], ..*y }
                && y.payload.starts_with(x.payload)
                && pad < 4
                && y.payload[x.payload.len()..].iter().all(|&b| b == 0)
        }
        _ => a == b,
    }
}

/// What the fuzz target checks, for `cargo test`: nothing panics, and every submessage that
/// decodes re-encodes into something that decodes to the same value.
fn check_reencode(buf: &[u8]) {
    let (ok, _) = drain(buf);
    if ok.is_empty() {
        return;
    }
    let mut out = Vec::new();
    let mut b = MessageBuilder::new(&mut out, PREFIX);
    for sm in &ok {
        b.submessage(sm);
    }
    let (again, err) = drain(&out);
    // A zero-length DATA can only be last; every other case must re-decode fully.
    assert_eq!(err, None);
    assert_eq!(again.len(), ok.len());
    for (a, b) in ok.iter().zip(&again) {
        assert!(same_after_reencode(a, b), "{a:?}\n!=\n{b:?}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
        check_reencode(&bytes);
        let mut m = rich_message(true)[..HEADER_LEN].to_vec();
        m.extend_from_slice(&bytes);
        check_reencode(&m);
    }

    #[test]
    fn random_submessage_soup_never_panics(
        parts in proptest::collection::vec(
            (
                prop_oneof![
                    Just(smid::DATA), Just(smid::DATA_FRAG), Just(smid::HEARTBEAT),
                    Just(smid::HEARTBEAT_FRAG), Just(smid::ACKNACK), Just(smid::NACK_FRAG),
                    Just(smid::GAP), Just(smid::INFO_TS), Just(smid::INFO_DST),
                    Just(smid::INFO_SRC), Just(smid::PAD), any::<u8>(),
                ],
                any::<u8>(),
                proptest::collection::vec(any::<u8>(), 0..80),
            ),
            0..6,
        ),
    ) {
        let mut m = rich_message(true)[..HEADER_LEN].to_vec();
        for (id, flags, body) in parts {
            let n = (body.len() / 4 * 4) as u16;
            m.extend_from_slice(&[id, flags]);
            m.extend_from_slice(&if flags & 1 != 0 { n.to_le_bytes() } else { n.to_be_bytes() });
            m.extend_from_slice(&body[..n as usize]);
        }
        check_reencode(&m);
    }

    #[test]
    fn mutated_message_never_panics(
        le in any::<bool>(),
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6),
        cut in any::<prop::sample::Index>(),
    ) {
        let mut m = rich_message(le);
        for (i, v) in edits {
            let at = i.index(m.len());
            m[at] = v;
        }
        check_reencode(&m);
        let at = cut.index(m.len() + 1);
        check_reencode(&m[..at]);
    }
}
