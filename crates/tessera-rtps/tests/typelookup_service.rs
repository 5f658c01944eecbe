//! The TypeLookup service answering scripted requests from a peer's request writer, over the
//! real RTPS codec and the reliability cores, on a virtual clock.

use std::net::Ipv4Addr;
use std::sync::Arc;
use std::time::Duration;

use tessera_rtps::discovery::{BuiltinEndpointSet, TypeLookupService};
use tessera_rtps::reader::{ReaderConfig, ReaderCore};
use tessera_rtps::sim::{encode_transmit, epoch};
use tessera_rtps::types::{EntityId, Guid, GuidPrefix, Locator, Locators};
use tessera_rtps::wire::{MessageReceiver, Submessage};
use tessera_rtps::writer::{HistoryKind, Transmit, WriterConfig, WriterCore};
use tessera_rtps::xtypes::lookup::{Call, Reply, Request, Return, SampleIdentity};
use tessera_rtps::xtypes::{
    Extensibility, MemberDesc, Primitive, StructDesc, TypeBundle, TypeDesc, TypeIdentifier,
    TypeObject,
};

const US: GuidPrefix = GuidPrefix([1; 12]);
const PEER: GuidPrefix = GuidPrefix([2; 12]);

fn loc(i: u8) -> Locators {
    [Locator::udpv4(Ipv4Addr::new(10, 0, 0, i), 7410)]
        .into_iter()
        .collect()
}

/// `struct Outer { Inner a; }` with `struct Inner { long x; }`.
fn bundle() -> TypeBundle {
    let inner = Arc::new(StructDesc {
        name: "Inner".into(),
        extensibility: Extensibility::Final,
        members: vec![MemberDesc::new(
            "x",
            0,
            TypeDesc::Primitive(Primitive::Int32),
        )],
    });
    TypeBundle::new(&TypeDesc::Struct(Arc::new(StructDesc {
        name: "Outer".into(),
        extensibility: Extensibility::Appendable,
        members: vec![MemberDesc::new("a", 0, TypeDesc::Struct(inner))],
    })))
}

/// A peer with a request writer and a reply reader, talking to our service.
struct Pair {
    svc: TypeLookupService,
    req_writer: WriterCore,
    reply_reader: ReaderCore,
    replies: Vec<Reply>,
    now: std::time::Instant,
}

impl Pair {
    fn new() -> Pair {
        let now = epoch();
        let mut svc = TypeLookupService::new(US, 0, now);
        svc.register(&bundle());
        let eps = BuiltinEndpointSet(
            BuiltinEndpointSet::TYPE_LOOKUP_REQUEST_WRITER
                | BuiltinEndpointSet::TYPE_LOOKUP_REPLY_READER,
        );
        svc.add_peer(PEER, eps, loc(2), now);
        let mut wc = WriterConfig::new(Guid::new(PEER, EntityId::TL_SVC_REQUEST_WRITER));
        wc.reliable = true;
        wc.history = HistoryKind::KeepAll;
        let mut req_writer = WriterCore::new(wc);
        req_writer.add_reader(
            Guid::new(US, EntityId::TL_SVC_REQUEST_READER),
            loc(1),
            true,
            false,
            now,
        );
        let mut reply_reader = ReaderCore::new(ReaderConfig::new(Guid::new(
            PEER,
            EntityId::TL_SVC_REPLY_READER,
        )));
        reply_reader.add_writer(
            Guid::new(US, EntityId::TL_SVC_REPLY_WRITER),
            loc(1),
            true,
            now,
        );
        Pair {
            svc,
            req_writer,
            reply_reader,
            replies: Vec::new(),
            now,
        }
    }

    fn request(&mut self, seq: i64, call: Call) {
        let req = Request {
            id: SampleIdentity {
                writer: Guid::new(PEER, EntityId::TL_SVC_REQUEST_WRITER),
                seq,
            },
            instance_name: "dds.builtin.TOS.0".into(),
            call,
        };
        self.req_writer
            .write(Arc::new(req.to_payload()), None, 0, false, None, self.now)
            .unwrap();
    }

    /// Exchanges datagrams and runs timers for `ms` virtual milliseconds.
    fn run(&mut self, ms: u64) {
        for _ in 0..ms {
            self.now += Duration::from_millis(1);
            self.req_writer.handle_timeout(self.now);
            self.reply_reader.handle_timeout(self.now);
            self.svc.handle_timeout(self.now);
            let mut t = Transmit::new();
            let mut to_svc = Vec::new();
            while self.req_writer.poll_transmit_into(self.now, &mut t)
                || self.reply_reader.poll_transmit_into(self.now, &mut t)
            {
                to_svc.push(encode_transmit(PEER, &t));
            }
            for bytes in to_svc {
                for rs in MessageReceiver::new(&bytes).unwrap() {
                    let rs = rs.unwrap();
                    let entity = match &rs.submessage {
                        Submessage::Data(d) => d.writer_id,
                        Submessage::Heartbeat(h) => h.writer_id,
                        Submessage::Gap(g) => g.writer_id,
                        Submessage::AckNack(a) => a.writer_id,
                        _ => continue,
                    };
                    assert!(TypeLookupService::owns(entity));
                    self.svc.handle_submessage(&rs, self.now);
                }
            }
            let mut to_peer = Vec::new();
            while self.svc.poll_transmit(self.now, &mut t) {
                to_peer.push(encode_transmit(US, &t));
            }
            for bytes in to_peer {
                for rs in MessageReceiver::new(&bytes).unwrap() {
                    let rs = rs.unwrap();
                    let (src, now) = (rs.source_prefix, self.now);
                    let replies = &mut self.replies;
                    let mut deliver = |d: tessera_rtps::reader::Delivered<'_>| {
                        replies.push(Reply::decode(&d.payload).expect("a valid reply"));
                    };
                    match &rs.submessage {
                        Submessage::Data(d) => {
                            self.reply_reader
                                .on_data(src, d, rs.timestamp, now, &mut deliver)
                        }
                        Submessage::Heartbeat(h) => {
                            self.reply_reader.on_heartbeat(src, h, now, &mut deliver)
                        }
                        Submessage::Gap(g) => self.reply_reader.on_gap(src, g, now, &mut deliver),
                        Submessage::AckNack(a) => {
                            self.req_writer.on_acknack(src, a, now);
                        }
                        _ => {}
                    }
                }
            }
        }
    }
}

#[test]
fn get_types_returns_the_objects_that_hash_to_the_ids() {
    let b = bundle();
    let mut p = Pair::new();
    let unknown = TypeIdentifier::Minimal([9; 14]);
    p.request(1, Call::GetTypes(vec![b.complete.clone(), unknown]));
    p.run(500);
    assert_eq!(p.replies.len(), 1, "one reply");
    let r = &p.replies[0];
    assert_eq!(r.related.seq, 1);
    assert_eq!(r.related.writer.prefix, PEER);
    let Return::Types { types, .. } = &r.result else {
        panic!("{r:?}")
    };
    assert_eq!(types.len(), 1, "the unknown id is left out");
    assert_eq!(types[0].0, b.complete);
    assert_eq!(
        TypeObject::from_bytes(&types[0].1).unwrap().identifier(),
        b.complete
    );
    assert_eq!(p.svc.counters().unknown_types, 1);

    // Then the complete dependency the complete object names, as `cyclonedds typeof` does.
    let dep = b.information.complete.dependent_typeids[0].type_id.clone();
    p.request(2, Call::GetTypes(vec![dep.clone()]));
    p.run(500);
    assert_eq!(p.replies.len(), 2);
    let Return::Types { types, .. } = &p.replies[1].result else {
        panic!()
    };
    assert_eq!(types[0].0, dep);
}

#[test]
fn get_type_dependencies_lists_the_hashed_dependencies() {
    let b = bundle();
    let mut p = Pair::new();
    p.request(
        1,
        Call::GetTypeDependencies {
            type_ids: vec![b.minimal.clone()],
            continuation_point: vec![],
        },
    );
    p.run(500);
    assert_eq!(p.replies.len(), 1);
    assert_eq!(
        p.replies[0].result,
        Return::Dependencies {
            dependent_typeids: b.information.minimal.dependent_typeids.clone(),
            continuation_point: vec![],
        }
    );
}

#[test]
fn undecodable_or_unknown_requests_are_counted_and_unanswered() {
    let mut p = Pair::new();
    p.req_writer
        .write(
            Arc::new(vec![0, 7, 0, 0, 1, 2, 3]),
            None,
            0,
            false,
            None,
            p.now,
        )
        .unwrap();
    p.request(2, Call::Unknown(0x1234));
    p.run(500);
    assert!(p.replies.is_empty());
    assert_eq!(p.svc.counters().rejected, 2);
}

/// Runs `from`'s timers and hands what it sends (as participant `prefix`) to `to`.
fn step(
    from: &mut TypeLookupService,
    to: &mut TypeLookupService,
    prefix: GuidPrefix,
    now: std::time::Instant,
) {
    from.handle_timeout(now);
    let mut t = Transmit::new();
    let mut bytes = Vec::new();
    while from.poll_transmit(now, &mut t) {
        bytes.push(encode_transmit(prefix, &t));
    }
    for m in bytes {
        for rs in MessageReceiver::new(&m).unwrap() {
            to.handle_submessage(&rs.unwrap(), now);
        }
    }
}

/// Two services: `server` serves `b`, `client` asks it for `id` and runs until answered.
fn ask_peer(b: &TypeBundle, id: &TypeIdentifier) -> (TypeLookupService, TypeLookupService) {
    let mut now = epoch();
    let mut server = TypeLookupService::new(US, 0, now);
    server.register(b);
    let mut client = TypeLookupService::new(PEER, 0, now);
    let all = BuiltinEndpointSet(BuiltinEndpointSet::TYPE_LOOKUP_ALL);
    server.add_peer(PEER, all, loc(2), now);
    client.add_peer(US, all, loc(1), now);
    assert!(client.resolve(id).is_none());
    assert!(client.request(std::slice::from_ref(id), now));
    assert!(
        !client.request(std::slice::from_ref(id), now),
        "asked once a second"
    );
    for _ in 0..500 {
        now += Duration::from_millis(1);
        step(&mut client, &mut server, PEER, now);
        step(&mut server, &mut client, US, now);
    }
    (server, client)
}

/// A client asks for a peer's minimal object, and checks its hash.
#[test]
fn a_client_resolves_a_peers_type_and_checks_its_hash() {
    let b = bundle();
    let (server, mut client) = ask_peer(&b, &b.minimal);
    assert_eq!(server.counters().requests, 1);
    assert_eq!(client.counters().types_resolved, 1);
    assert!(client.take_resolved());
    let obj = client.resolve(&b.minimal).expect("resolved");
    assert_eq!(obj.identifier(), b.minimal);
    assert_eq!(client.counters().bad_replies, 0);
}

/// A peer's object of a kind Tessera does not model (a bitset) is not kept, but the client
/// remembers why, so that a tool asking for that type can say so.
#[test]
fn a_peers_object_of_an_unsupported_kind_is_named() {
    use tessera_rtps::xtypes::XTypesError;
    let id = TypeIdentifier::Complete([9; 14]);
    // DHEADER 4, EK_COMPLETE, TK_BITSET, then what a bitset would hold.
    let bitset = vec![4, 0, 0, 0, 0xf2, 0x53, 0, 0];
    let mut b = bundle();
    b.objects.clear();
    b.objects
        .insert(id.to_bytes(), (id.clone(), Arc::new(bitset)));
    let (_, client) = ask_peer(&b, &id);
    assert!(client.resolve(&id).is_none());
    let e = client.unsupported(&id);
    assert_eq!(e, Some(XTypesError::UnsupportedTypeObject(0x53)));
    assert_eq!(
        e.unwrap().to_string(),
        "unsupported TypeObject kind 0x53 (bitset)"
    );
    assert_eq!(client.counters().bad_replies, 1);
}
