//! Unit tests of the codec's internals: bitmap masking, spliced encoding and encoded lengths.

use super::*;
use crate::types::{EntityId, GuidPrefix, Timestamp};
use crate::wire::{Data, DataFrag, ParameterList, PayloadKind, Submessage, HEADER_LEN};

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
