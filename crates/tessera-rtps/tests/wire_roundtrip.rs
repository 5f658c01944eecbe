//! Round-trip properties of the RTPS codec: randomly built submessages of every kind, encoded
//! with `MessageBuilder` (in either byte order) and decoded with `SubmessageIter` /
//! `MessageReceiver`, come back equal; plus golden byte-exact messages laid out by hand from the
//! RTPS 2.5 §9.4 tables.

use proptest::prelude::*;
use tessera_rtps::types::{
    EntityId, GuidPrefix, ProtocolVersion, SequenceNumber, Timestamp, VendorId, PROTOCOL_VERSION,
    VENDOR_TESSERA,
};
use tessera_rtps::wire::{
    pid, AckNack, Data, DataFrag, FragmentNumberSet, Gap, Header, Heartbeat, HeartbeatFrag,
    MessageBuilder, MessageReceiver, NackFrag, ParameterList, PayloadKind, ReceivedSubmessage,
    SequenceNumberSet, Submessage, SubmessageIter, HEADER_LEN,
};

// ----- owned test values (a `Submessage` borrows; these own what it borrows) -----------------

#[derive(Debug, Clone)]
enum Owned {
    Data {
        reader_id: EntityId,
        writer_id: EntityId,
        writer_sn: SequenceNumber,
        qos: Option<Vec<(u16, Vec<u8>)>>,
        kind: PayloadKind,
        payload: Vec<u8>,
    },
    DataFrag {
        reader_id: EntityId,
        writer_id: EntityId,
        writer_sn: SequenceNumber,
        start: u32,
        count: u16,
        frag_size: u16,
        sample_size: u32,
        qos: Option<Vec<(u16, Vec<u8>)>>,
        key: bool,
        payload: Vec<u8>,
    },
    Fixed(Submessage<'static>),
}

/// An `Owned` encoded for one byte order: parameter lists are built in that order.
struct Prepared {
    owned: Owned,
    qos_bytes: Option<Vec<u8>>,
    le: bool,
}

fn param_list_bytes(params: &[(u16, Vec<u8>)], le: bool) -> Vec<u8> {
    let mut v = Vec::new();
    let put16 = |v: &mut Vec<u8>, x: u16| {
        v.extend_from_slice(&if le { x.to_le_bytes() } else { x.to_be_bytes() })
    };
    for (p, val) in params {
        put16(&mut v, *p);
        let padded = val.len().div_ceil(4) * 4;
        put16(&mut v, padded as u16);
        v.extend_from_slice(val);
        v.resize(v.len() + padded - val.len(), 0);
    }
    put16(&mut v, pid::SENTINEL);
    put16(&mut v, 0);
    v
}

impl Prepared {
    fn new(owned: Owned, le: bool) -> Self {
        let qos_bytes = match &owned {
            Owned::Data { qos, .. } | Owned::DataFrag { qos, .. } => {
                qos.as_ref().map(|q| param_list_bytes(q, le))
            }
            Owned::Fixed(_) => None,
        };
        Prepared {
            owned,
            qos_bytes,
            le,
        }
    }

    fn sm(&self) -> Submessage<'_> {
        sm_of(&self.owned, &self.qos_bytes, self.le)
    }

    /// What decoding must give: DATA payloads come back with their zero padding.
    fn expected(&self) -> Owned {
        match &self.owned {
            Owned::Data {
                reader_id,
                writer_id,
                writer_sn,
                qos,
                kind,
                payload,
            } => {
                let mut payload = payload.clone();
                if *kind == PayloadKind::None {
                    payload.clear();
                }
                payload.resize(payload.len().div_ceil(4) * 4, 0);
                Owned::Data {
                    reader_id: *reader_id,
                    writer_id: *writer_id,
                    writer_sn: *writer_sn,
                    qos: qos.clone(),
                    kind: *kind,
                    payload,
                }
            }
            o => o.clone(),
        }
    }
}

fn expected_sm(p: &Prepared) -> (Owned, Option<Vec<u8>>) {
    (p.expected(), p.qos_bytes.clone())
}

/// The borrowed `Submessage` view of an owned value.
fn sm_of<'a>(owned: &'a Owned, qos_bytes: &'a Option<Vec<u8>>, le: bool) -> Submessage<'a> {
    let qos = qos_bytes
        .as_ref()
        .map(|b| ParameterList::parse(b, le).expect("test list"));
    match owned {
        Owned::Data {
            reader_id,
            writer_id,
            writer_sn,
            kind,
            payload,
            ..
        } => Submessage::Data(Data {
            reader_id: *reader_id,
            writer_id: *writer_id,
            writer_sn: *writer_sn,
            inline_qos: qos,
            payload_kind: *kind,
            payload,
        }),
        Owned::DataFrag {
            reader_id,
            writer_id,
            writer_sn,
            start,
            count,
            frag_size,
            sample_size,
            key,
            payload,
            ..
        } => Submessage::DataFrag(DataFrag {
            reader_id: *reader_id,
            writer_id: *writer_id,
            writer_sn: *writer_sn,
            fragment_starting_num: *start,
            fragments_in_submessage: *count,
            fragment_size: *frag_size,
            sample_size: *sample_size,
            inline_qos: qos,
            key_flag: *key,
            payload,
        }),
        Owned::Fixed(sm) => sm.clone(),
    }
}

// ----- strategies ----------------------------------------------------------------------------

fn entity_id() -> impl Strategy<Value = EntityId> {
    any::<[u8; 4]>().prop_map(EntityId)
}

fn prefix() -> impl Strategy<Value = GuidPrefix> {
    any::<[u8; 12]>().prop_map(GuidPrefix)
}

fn sn() -> impl Strategy<Value = SequenceNumber> {
    prop_oneof![1i64..1000, 1i64..=i64::MAX]
}

fn masked(num_bits: u32, mut bitmap: [u32; 8]) -> [u32; 8] {
    for (i, w) in bitmap.iter_mut().enumerate() {
        for b in 0..32u32 {
            if i as u32 * 32 + b >= num_bits {
                *w &= !(1u32 << (31 - b));
            }
        }
    }
    bitmap
}

fn sn_set() -> impl Strategy<Value = SequenceNumberSet> {
    // `base + numBits` must not overflow.
    (
        prop_oneof![1i64..1000, 1i64..=i64::MAX - 256],
        0u32..=256,
        any::<[u32; 8]>(),
    )
        .prop_map(|(base, num_bits, bitmap)| SequenceNumberSet {
            base,
            num_bits,
            bitmap: masked(num_bits, bitmap),
        })
}

fn frag_set() -> impl Strategy<Value = FragmentNumberSet> {
    (1u32..=u32::MAX - 256, 0u32..=256, any::<[u32; 8]>()).prop_map(|(base, num_bits, bitmap)| {
        FragmentNumberSet {
            base,
            num_bits,
            bitmap: masked(num_bits, bitmap),
        }
    })
}

fn params() -> impl Strategy<Value = Option<Vec<(u16, Vec<u8>)>>> {
    proptest::option::of(proptest::collection::vec(
        (
            any::<u16>().prop_filter("not the sentinel", |p| *p != pid::SENTINEL),
            proptest::collection::vec(any::<u8>(), 0..24),
        ),
        0..5,
    ))
}

fn payload_kind() -> impl Strategy<Value = PayloadKind> {
    prop_oneof![
        Just(PayloadKind::None),
        Just(PayloadKind::Data),
        Just(PayloadKind::Key)
    ]
}

fn data() -> impl Strategy<Value = Owned> {
    (
        entity_id(),
        entity_id(),
        sn(),
        params(),
        payload_kind(),
        proptest::collection::vec(any::<u8>(), 0..100),
    )
        .prop_map(
            |(reader_id, writer_id, writer_sn, qos, kind, payload)| Owned::Data {
                reader_id,
                writer_id,
                writer_sn,
                qos,
                kind,
                payload: if kind == PayloadKind::None {
                    Vec::new()
                } else {
                    payload
                },
            },
        )
}

fn data_frag() -> impl Strategy<Value = Owned> {
    (
        (entity_id(), entity_id(), sn(), params(), any::<bool>()),
        1u16..=48,    // fragment size
        1u32..=12,    // fragments in the sample
        any::<u32>(), // picks the last fragment's size, the start and the count
        any::<u8>(),  // payload byte seed
    )
        .prop_map(
            |((reader_id, writer_id, writer_sn, qos, key), fs, total, pick, seed)| {
                let fsu = fs as u32;
                let last = 1 + pick % fsu;
                let sample_size = (total - 1) * fsu + last;
                let start = 1 + (pick / 7) % total;
                let count = 1 + (pick / 101) % (total - start + 1);
                let offset = (start - 1) * fsu;
                let len = ((offset + count * fsu).min(sample_size) - offset) as usize;
                let payload = (0..len).map(|i| seed.wrapping_add(i as u8)).collect();
                Owned::DataFrag {
                    reader_id,
                    writer_id,
                    writer_sn,
                    start,
                    count: count as u16,
                    frag_size: fs,
                    sample_size,
                    qos,
                    key,
                    payload,
                }
            },
        )
}

fn fixed() -> impl Strategy<Value = Owned> {
    let heartbeat = (
        entity_id(),
        entity_id(),
        1i64..i64::MAX / 2,
        -1i64..1_000_000,
        any::<i32>(),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(r, w, first, delta, count, f, l)| {
            Submessage::Heartbeat(Heartbeat {
                reader_id: r,
                writer_id: w,
                first_sn: first,
                last_sn: first + delta,
                count,
                final_flag: f,
                liveliness_flag: l,
            })
        });
    let heartbeat_frag = (entity_id(), entity_id(), sn(), 1u32.., any::<i32>()).prop_map(
        |(r, w, sn, last, count)| {
            Submessage::HeartbeatFrag(HeartbeatFrag {
                reader_id: r,
                writer_id: w,
                writer_sn: sn,
                last_fragment_num: last,
                count,
            })
        },
    );
    let acknack = (
        entity_id(),
        entity_id(),
        prop_oneof![
            9 => sn_set(),
            1 => Just(SequenceNumberSet::empty(0)), // Fast DDS pre-emptive ACKNACK
        ],
        any::<i32>(),
        any::<bool>(),
    )
        .prop_map(|(r, w, set, count, f)| {
            Submessage::AckNack(AckNack {
                reader_id: r,
                writer_id: w,
                reader_sn_state: set,
                count,
                final_flag: f,
            })
        });
    let nack_frag = (entity_id(), entity_id(), sn(), frag_set(), any::<i32>()).prop_map(
        |(r, w, sn, set, count)| {
            Submessage::NackFrag(NackFrag {
                reader_id: r,
                writer_id: w,
                writer_sn: sn,
                fragment_number_state: set,
                count,
            })
        },
    );
    let gap = (entity_id(), entity_id(), sn(), sn_set()).prop_map(|(r, w, start, list)| {
        Submessage::Gap(Gap {
            reader_id: r,
            writer_id: w,
            gap_start: start,
            gap_list: list,
        })
    });
    let info_ts = proptest::option::of((any::<i32>(), any::<u32>())).prop_map(|t| {
        Submessage::InfoTs(t.map(|(seconds, fraction)| Timestamp { seconds, fraction }))
    });
    let info_dst = prefix().prop_map(Submessage::InfoDst);
    let info_src =
        (any::<u8>(), any::<[u8; 2]>(), prefix()).prop_map(|(minor, v, p)| Submessage::InfoSrc {
            version: ProtocolVersion { major: 2, minor },
            vendor: VendorId(v),
            guid_prefix: p,
        });
    let unknown = prop_oneof![
        Just(0x0du8),
        Just(0x0f),
        0x80u8..=0xff,
        Just(0x00),
        Just(0x02)
    ]
    .prop_map(|id| Submessage::Unknown { id });
    prop_oneof![
        heartbeat,
        heartbeat_frag,
        acknack,
        nack_frag,
        gap,
        info_ts,
        info_dst,
        info_src,
        Just(Submessage::Pad),
        unknown,
    ]
    .prop_map(Owned::Fixed)
}

fn any_submessage() -> impl Strategy<Value = Owned> {
    prop_oneof![2 => data(), 2 => data_frag(), 5 => fixed()]
}

// ----- helpers -------------------------------------------------------------------------------

/// Builds a message from prepared submessages, each in its own byte order.
fn build(header_prefix: GuidPrefix, items: &[Prepared]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut b = MessageBuilder::new(&mut out, header_prefix);
    let mut expected_len = HEADER_LEN;
    for p in items {
        let sm = p.sm();
        expected_len += sm.encoded_len();
        b.submessage_in(&sm, p.le);
        assert_eq!(b.len(), expected_len, "encoded_len of {sm:?}");
    }
    out
}

/// The receiver-state model of RTPS 8.3.4 applied to the expected submessages.
fn expected_received<'a>(
    header: Header,
    items: &'a [(Owned, Option<Vec<u8>>, bool)],
) -> Vec<ReceivedSubmessage<'a>> {
    let mut src = header;
    let mut dst = GuidPrefix::UNKNOWN;
    let mut ts = None;
    let mut v = Vec::new();
    for (o, q, le) in items {
        let sm = sm_of(o, q, *le);
        match sm {
            Submessage::InfoTs(t) => ts = t,
            Submessage::InfoDst(p) => dst = p,
            Submessage::InfoSrc {
                version,
                vendor,
                guid_prefix,
            } => {
                src = Header {
                    version,
                    vendor,
                    guid_prefix,
                };
                ts = None;
            }
            Submessage::Pad => {}
            sm => v.push(ReceivedSubmessage {
                source_prefix: src.guid_prefix,
                source_vendor: src.vendor,
                dest_prefix: dst,
                timestamp: ts,
                submessage: sm,
            }),
        }
    }
    v
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// Every submessage kind round-trips through builder and iterator in both byte orders.
    #[test]
    fn submessages_round_trip(
        p in prefix(),
        items in proptest::collection::vec((any_submessage(), any::<bool>()), 0..10),
    ) {
        let prepared: Vec<Prepared> =
            items.into_iter().map(|(o, le)| Prepared::new(o, le)).collect();
        let msg = build(p, &prepared);
        let (header, iter) = SubmessageIter::parse(&msg).unwrap();
        prop_assert_eq!(header.guid_prefix, p);
        prop_assert_eq!(header.vendor, VENDOR_TESSERA);
        prop_assert_eq!(header.version, PROTOCOL_VERSION);
        let got: Vec<_> = iter.collect::<Result<_, _>>().unwrap();
        let expected: Vec<_> = prepared.iter().map(|p| (expected_sm(p), p.le)).collect();
        prop_assert_eq!(got.len(), expected.len());
        for (g, ((o, q), le)) in got.iter().zip(&expected) {
            prop_assert_eq!(g, &sm_of(o, q, *le));
        }
    }

    /// The receiver applies INFO_* submessages and yields the rest with the right context.
    #[test]
    fn receiver_applies_interpreter_submessages(
        p in prefix(),
        items in proptest::collection::vec((any_submessage(), any::<bool>()), 0..12),
    ) {
        let prepared: Vec<Prepared> =
            items.into_iter().map(|(o, le)| Prepared::new(o, le)).collect();
        let msg = build(p, &prepared);
        let rx = MessageReceiver::new(&msg).unwrap();
        let header = *rx.header();
        let got: Vec<_> = rx.collect::<Result<_, _>>().unwrap();
        let expected_items: Vec<_> = prepared
            .iter()
            .map(|p| { let (o, q) = expected_sm(p); (o, q, p.le) })
            .collect();
        let expected = expected_received(header, &expected_items);
        prop_assert_eq!(got, expected);
    }

    /// Re-encoding what was decoded gives the same bytes (little-endian input).
    #[test]
    fn decode_then_encode_is_identity(
        p in prefix(),
        items in proptest::collection::vec(any_submessage(), 0..8),
    ) {
        let prepared: Vec<Prepared> = items
            .into_iter()
            .map(|o| Prepared::new(o, true))
            .map(|p| Prepared::new(p.expected(), true))
            .collect();
        let msg = build(p, &prepared);
        let (_, iter) = SubmessageIter::parse(&msg).unwrap();
        let mut again = Vec::new();
        let mut b = MessageBuilder::new(&mut again, p);
        for sm in iter {
            b.submessage(&sm.unwrap());
        }
        prop_assert_eq!(again, msg);
    }

    /// `data_with_payload_parts` writes the same bytes as a DATA with the joined payload.
    #[test]
    fn payload_parts_equal_joined_payload(
        o in data(),
        split in any::<prop::sample::Index>(),
    ) {
        let prepared = Prepared::new(o, true);
        let Submessage::Data(d) = prepared.sm() else { unreachable!() };
        let mut joined = Vec::new();
        MessageBuilder::new(&mut joined, GuidPrefix::UNKNOWN).submessage(&Submessage::Data(d));
        let at = split.index(d.payload.len() + 1);
        let (a, b) = d.payload.split_at(at);
        let mut parts = Vec::new();
        MessageBuilder::new(&mut parts, GuidPrefix::UNKNOWN).data_with_payload_parts(
            d.reader_id,
            d.writer_id,
            d.writer_sn,
            d.inline_qos.map(|q| q.as_bytes()),
            d.payload_kind,
            &[a, b],
        );
        prop_assert_eq!(parts.len(), HEADER_LEN + MessageBuilder::data_encoded_len(
            d.inline_qos.map_or(0, |q| q.len()), d.payload.len()));
        prop_assert_eq!(parts, joined);
    }
}

#[test]
fn large_data_last_in_message_uses_zero_length() {
    let payload = vec![0x5a; 70_000];
    let d = Data {
        reader_id: EntityId::UNKNOWN,
        writer_id: EntityId::new(1, 0x03),
        writer_sn: 9,
        inline_qos: None,
        payload_kind: PayloadKind::Data,
        payload: &payload,
    };
    let mut out = Vec::new();
    let mut b = MessageBuilder::new(&mut out, GuidPrefix([1; 12]));
    b.info_ts(Some(Timestamp {
        seconds: 5,
        fraction: 6,
    }));
    b.submessage(&Submessage::Data(d));
    // octetsToNextHeader of the DATA is 0: "to the end of the message".
    assert_eq!(&out[HEADER_LEN + 12 + 2..HEADER_LEN + 12 + 4], &[0, 0]);
    let got: Vec<_> = MessageReceiver::new(&out)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].submessage, Submessage::Data(d));
}

// ----- golden bytes --------------------------------------------------------------------------

const PREFIX_A: [u8; 12] = [
    0x01, 0x10, 0x07, 0xb8, 0xd4, 0x46, 0x09, 0x24, 0x80, 0x8f, 0x73, 0xf4,
];
const PREFIX_B: [u8; 12] = [
    0x01, 0xa7, 0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09,
];

fn cyclone_header() -> Header {
    Header {
        version: ProtocolVersion { major: 2, minor: 1 },
        vendor: VendorId([0x01, 0x10]),
        guid_prefix: GuidPrefix(PREFIX_A),
    }
}

fn golden_header() -> Vec<u8> {
    let mut v = b"RTPS".to_vec();
    v.extend_from_slice(&[2, 1, 0x01, 0x10]);
    v.extend_from_slice(&PREFIX_A);
    v
}

/// INFO_DST + ACKNACK, little-endian, as a Cyclone reader would send to a writer.
#[test]
fn golden_info_dst_acknack() {
    let mut msg = golden_header();
    // INFO_DST: id 0x0e, flags E, length 12, guidPrefix.
    msg.extend_from_slice(&[0x0e, 0x01, 12, 0]);
    msg.extend_from_slice(&PREFIX_B);
    // ACKNACK: id 0x06, flags E|F, length 28.
    msg.extend_from_slice(&[0x06, 0x03, 28, 0]);
    msg.extend_from_slice(&[0x00, 0x00, 0x01, 0x07]); // readerId
    msg.extend_from_slice(&[0x00, 0x00, 0x01, 0x02]); // writerId
    msg.extend_from_slice(&[0, 0, 0, 0, 5, 0, 0, 0]); // bitmapBase = 5 (high 0, low 5)
    msg.extend_from_slice(&[3, 0, 0, 0]); // numBits = 3
    msg.extend_from_slice(&[0, 0, 0, 0xa0]); // bitmap: 5 and 7 missing
    msg.extend_from_slice(&[2, 0, 0, 0]); // count = 2

    let mut set = SequenceNumberSet::empty(5);
    set.insert(5);
    set.insert(7);
    set.num_bits = 3;
    let ack = AckNack {
        reader_id: EntityId([0, 0, 1, 0x07]),
        writer_id: EntityId([0, 0, 1, 0x02]),
        reader_sn_state: set,
        count: 2,
        final_flag: true,
    };
    let got: Vec<_> = MessageReceiver::new(&msg)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(
        got,
        vec![ReceivedSubmessage {
            source_prefix: GuidPrefix(PREFIX_A),
            source_vendor: VendorId([0x01, 0x10]),
            dest_prefix: GuidPrefix(PREFIX_B),
            timestamp: None,
            submessage: Submessage::AckNack(ack),
        }]
    );
    assert_eq!(set.iter().collect::<Vec<_>>(), vec![5, 7]);

    let mut out = Vec::new();
    MessageBuilder::with_header(&mut out, cyclone_header())
        .info_dst(GuidPrefix(PREFIX_B))
        .submessage(&Submessage::AckNack(ack));
    assert_eq!(out, msg);
}

/// A big-endian HEARTBEAT (E flag clear) with F and L flags.
#[test]
fn golden_big_endian_heartbeat() {
    let mut msg = golden_header();
    msg.extend_from_slice(&[0x07, 0x06, 0, 28]); // HEARTBEAT, flags F|L, BE length 28
    msg.extend_from_slice(&[0, 0, 0, 0]); // readerId unknown
    msg.extend_from_slice(&[0, 2, 0, 0xc2]); // P2P message writer
    msg.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 2]); // firstSN = 2^32 + 2
    msg.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 9]); // lastSN = 2^32 + 9
    msg.extend_from_slice(&[0, 0, 0, 42]); // count

    let hb = Heartbeat {
        reader_id: EntityId::UNKNOWN,
        writer_id: EntityId::P2P_MESSAGE_WRITER,
        first_sn: (1 << 32) + 2,
        last_sn: (1 << 32) + 9,
        count: 42,
        final_flag: true,
        liveliness_flag: true,
    };
    let (header, iter) = SubmessageIter::parse(&msg).unwrap();
    assert_eq!(header, cyclone_header());
    let got: Vec<_> = iter.collect::<Result<_, _>>().unwrap();
    assert_eq!(got, vec![Submessage::Heartbeat(hb)]);

    let mut out = Vec::new();
    MessageBuilder::with_header(&mut out, cyclone_header())
        .submessage_in(&Submessage::Heartbeat(hb), false);
    assert_eq!(out, msg);
}

/// INFO_TS + a dispose: DATA with Q and K flags, inline PID_STATUS_INFO and a key payload.
#[test]
fn golden_dispose_with_status_info() {
    let mut msg = golden_header();
    // INFO_TS: id 0x09, flags E, length 8, seconds 0x65000000, fraction 0x80000000.
    msg.extend_from_slice(&[0x09, 0x01, 8, 0]);
    msg.extend_from_slice(&[0, 0, 0, 0x65, 0, 0, 0, 0x80]);
    // DATA: id 0x15, flags E|Q|K = 0x0b.
    let body_len: u16 = 4 + 16 + 12 + 8;
    msg.extend_from_slice(&[0x15, 0x0b]);
    msg.extend_from_slice(&body_len.to_le_bytes());
    msg.extend_from_slice(&[0, 0, 16, 0]); // extraFlags, octetsToInlineQos = 16
    msg.extend_from_slice(&[0, 0, 0, 0]); // readerId
    msg.extend_from_slice(&[0, 0, 0x12, 0x02]); // writerId (keyed user writer)
    msg.extend_from_slice(&[0, 0, 0, 0, 3, 0, 0, 0]); // writerSN = 3
                                                      // Inline QoS: PID_STATUS_INFO (0x0071), length 4, flags 0x00000003 (disposed|unregistered).
    msg.extend_from_slice(&[0x71, 0x00, 4, 0, 0, 0, 0, 3]);
    msg.extend_from_slice(&[0x01, 0x00, 0, 0]); // PID_SENTINEL
                                                // Key payload: CDR_LE encapsulation, options 0, key 0x2a.
    msg.extend_from_slice(&[0x00, 0x01, 0x00, 0x00, 0x2a, 0, 0, 0]);
    assert_eq!(msg.len(), HEADER_LEN + 12 + 4 + body_len as usize);

    let got: Vec<_> = MessageReceiver::new(&msg)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(got.len(), 1);
    let r = &got[0];
    assert_eq!(
        r.timestamp,
        Some(Timestamp {
            seconds: 0x6500_0000,
            fraction: 0x8000_0000
        })
    );
    let Submessage::Data(d) = r.submessage else {
        panic!("not a DATA: {:?}", r.submessage)
    };
    assert_eq!(d.writer_id, EntityId([0, 0, 0x12, 0x02]));
    assert_eq!(d.writer_sn, 3);
    assert_eq!(d.payload_kind, PayloadKind::Key);
    assert_eq!(d.payload, &[0x00, 0x01, 0x00, 0x00, 0x2a, 0, 0, 0]);
    let qos = d.inline_qos.unwrap();
    assert_eq!(qos.get(pid::STATUS_INFO), Some(&[0u8, 0, 0, 3][..]));

    // Encoding with the convenience methods gives the same bytes.
    let mut qos_bytes = Vec::new();
    let mut pl = tessera_rtps::wire::ParameterListBuilder::new(&mut qos_bytes);
    pl.param(pid::STATUS_INFO, &[0, 0, 0, 3]);
    pl.finish();
    let mut out = Vec::new();
    MessageBuilder::with_header(&mut out, cyclone_header())
        .info_ts(Some(Timestamp {
            seconds: 0x6500_0000,
            fraction: 0x8000_0000,
        }))
        .data_with_payload_parts(
            EntityId::UNKNOWN,
            EntityId([0, 0, 0x12, 0x02]),
            3,
            Some(&qos_bytes),
            PayloadKind::Key,
            &[&[0x00, 0x01, 0x00, 0x00], &[0x2a, 0, 0, 0]],
        );
    assert_eq!(out, msg);
    // And so does re-encoding the decoded submessage.
    let mut again = Vec::new();
    MessageBuilder::with_header(&mut again, cyclone_header())
        .info_ts(r.timestamp)
        .submessage(&r.submessage);
    assert_eq!(again, msg);
}

/// A DATA_FRAG carrying fragments 2..=3 of a 10-byte sample in 4-byte fragments (the last one
/// short), with the 2 bytes of padding that follow it on the wire.
#[test]
fn golden_data_frag_last_fragment_short() {
    let mut msg = golden_header();
    let body_len: u16 = 4 + 28 + 8;
    msg.extend_from_slice(&[0x16, 0x05]); // DATA_FRAG, flags E|K
    msg.extend_from_slice(&body_len.to_le_bytes());
    msg.extend_from_slice(&[0, 0, 28, 0]); // extraFlags, octetsToInlineQos = 28
    msg.extend_from_slice(&[0, 0, 0, 0]); // readerId
    msg.extend_from_slice(&[0, 0, 0x12, 0x02]); // writerId
    msg.extend_from_slice(&[0, 0, 0, 0, 1, 0, 0, 0]); // writerSN = 1
    msg.extend_from_slice(&[2, 0, 0, 0]); // fragmentStartingNum = 2
    msg.extend_from_slice(&[2, 0, 4, 0]); // fragmentsInSubmessage = 2, fragmentSize = 4
    msg.extend_from_slice(&[10, 0, 0, 0]); // sampleSize = 10
    msg.extend_from_slice(&[4, 5, 6, 7, 8, 9, 0, 0]); // fragments 2 and 3, then padding

    let (_, mut iter) = SubmessageIter::parse(&msg).unwrap();
    let df = DataFrag {
        reader_id: EntityId::UNKNOWN,
        writer_id: EntityId([0, 0, 0x12, 0x02]),
        writer_sn: 1,
        fragment_starting_num: 2,
        fragments_in_submessage: 2,
        fragment_size: 4,
        sample_size: 10,
        inline_qos: None,
        key_flag: true,
        payload: &[4, 5, 6, 7, 8, 9],
    };
    assert_eq!(iter.next(), Some(Ok(Submessage::DataFrag(df))));
    assert_eq!(iter.next(), None);

    let mut out = Vec::new();
    MessageBuilder::with_header(&mut out, cyclone_header()).submessage(&Submessage::DataFrag(df));
    assert_eq!(out, msg);
}

/// Fast DDS appends a vendor submessage (0x80) to its messages; it is skipped by its length.
#[test]
fn vendor_submessage_is_skipped() {
    let mut msg = golden_header();
    msg.extend_from_slice(&[0x80, 0x01, 8, 0, 1, 2, 3, 4, 5, 6, 7, 8]);
    msg.extend_from_slice(&[0x01, 0x00, 0, 0]); // PAD with length 0: empty body
    msg.extend_from_slice(&[0x09, 0x03, 0, 0]); // INFO_TS invalidate, length 0
    msg.extend_from_slice(&[0x0e, 0x01, 12, 0]);
    msg.extend_from_slice(&PREFIX_B);
    let (_, iter) = SubmessageIter::parse(&msg).unwrap();
    let got: Vec<_> = iter.collect::<Result<_, _>>().unwrap();
    assert_eq!(
        got,
        vec![
            Submessage::Unknown { id: 0x80 },
            Submessage::Pad,
            Submessage::InfoTs(None),
            Submessage::InfoDst(GuidPrefix(PREFIX_B)),
        ]
    );
}
