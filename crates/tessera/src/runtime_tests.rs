//! Endpoints driven by a [`RuntimeContext`] built without a participant: two contexts over one
//! in-process network, a writer endpoint on one and a reader endpoint on the other, matched by
//! hand (no discovery), with a router of a dozen lines in place of the participant's receive
//! path and a loop in place of its event thread. What a per-node service or a test harness
//! would do.

use super::RuntimeContext;
use crate::bounds::ResourceBounds;
use crate::endpoint::{LocalReader, LocalWriter, RemoteEndpoint};
use crate::publication::{DataWriter, WriterEndpoint};
use crate::qos::{DataReaderQos, DataWriterQos, History, Reliability};
use crate::reader::{DataReader, UntypedDataReader};
use crate::sample::TypedSupport;
use crate::subscription::ReaderEndpoint;
use crate::transport::{
    AllowMulticast, Channel, InProcessNetwork, InProcessTransport, Receivers, Transports,
};
use crate::TopicType;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tessera_rtps::types::{entity_kind, EntityId, Guid, GuidPrefix, Locator, Locators};
use tessera_rtps::wire::{MessageReceiver, Submessage};

#[derive(TopicType, Debug, Clone, PartialEq)]
#[topic(cdr_path = "tessera_rtps::cdr")]
struct Reading {
    #[key]
    sensor: u32,
    seq: u32,
}

/// One node: a context over its own in-process transport.
fn context(net: &InProcessNetwork, n: u8) -> Arc<RuntimeContext> {
    let transport = Transports::new(vec![Arc::new(InProcessTransport::new(net, 0))]).unwrap();
    Arc::new(RuntimeContext::new(
        GuidPrefix([n; 12]),
        transport,
        ResourceBounds::default(),
        AllowMulticast::Off,
    ))
}

/// Starts `ctx`'s receive thread: user submessages go to the one writer or reader given, by
/// the side of the protocol they belong to; everything else is dropped.
fn route(
    ctx: &Arc<RuntimeContext>,
    writer: Option<Arc<dyn LocalWriter>>,
    reader: Option<Arc<dyn LocalReader>>,
) -> Receivers {
    let c = ctx.clone();
    let handler = move |buf: &[u8], _from: Locator, _channel: Channel| {
        let Ok(rx) = MessageReceiver::new(buf) else {
            return;
        };
        let now = Instant::now();
        for rs in rx.flatten() {
            match (&rs.submessage, &writer, &reader) {
                (Submessage::AckNack(_) | Submessage::NackFrag(_), Some(w), _) => {
                    w.handle(&c, &rs, now)
                }
                (
                    Submessage::Data(_)
                    | Submessage::DataFrag(_)
                    | Submessage::Heartbeat(_)
                    | Submessage::HeartbeatFrag(_)
                    | Submessage::Gap(_),
                    _,
                    Some(r),
                ) => r.handle(&c, &rs, now),
                _ => {}
            }
        }
    };
    ctx.transport.start(Arc::new(handler)).unwrap()
}

fn remote(guid: Guid, ctx: &RuntimeContext) -> RemoteEndpoint {
    RemoteEndpoint {
        consensus: None,
        guid,
        reliable: true,
        durable: false,
        locators: ctx
            .transport
            .default_unicast()
            .into_iter()
            .collect::<Locators>(),
        multicast: Locators::new(),
        writer_terms: Default::default(),
        content_filter: None,
        min_separation: Duration::ZERO,
        coherent_access: true,
        loan_layout: 0,
        cdr_chunks: false,
    }
}

/// A keyed writer's GUID on `ca` and a keyed reader's on `cb`.
fn writer_and_reader_guids(ca: &RuntimeContext, cb: &RuntimeContext) -> (Guid, Guid) {
    (
        Guid::new(
            ca.guid_prefix,
            EntityId::new(1, entity_kind::USER_WRITER_WITH_KEY),
        ),
        Guid::new(
            cb.guid_prefix,
            EntityId::new(1, entity_kind::USER_READER_WITH_KEY),
        ),
    )
}

#[test]
fn endpoints_run_by_contexts_built_without_a_participant() {
    let net = InProcessNetwork::new();
    let (ca, cb) = (context(&net, 1), context(&net, 2));
    let (wguid, rguid) = writer_and_reader_guids(&ca, &cb);
    let reliable = Reliability::reliable(Duration::from_secs(5));
    let wqos = DataWriterQos::default()
        .with_reliability(reliable)
        .with_history(History::KeepAll);
    let rqos = DataReaderQos::default()
        .with_reliability(reliable)
        .with_history(History::KeepAll);
    let wep = WriterEndpoint::new(ca.clone(), wguid, &wqos);
    let rep = ReaderEndpoint::new(cb.clone(), rguid, TypedSupport::<Reading>::arc(), &rqos);
    let _rx_a = route(&ca, Some(wep.clone()), None);
    let _rx_b = route(&cb, None, Some(rep.clone()));
    let now = Instant::now();
    wep.matched(&ca, &remote(rguid, &cb), None, now);
    rep.matched(&cb, &remote(wguid, &ca), now);

    let w = DataWriter::<Reading>::from_endpoint(wep.clone());
    let r = DataReader::<Reading>::from_raw(UntypedDataReader::new(rep.clone(), None));
    assert_eq!(w.publication_matched_status().current_count, 1);
    assert_eq!(r.subscription_matched_status().current_count, 1);
    for seq in 0..50 {
        w.write(&Reading {
            sensor: seq % 2,
            seq,
        })
        .unwrap();
    }
    // The event thread's part: both endpoints' timers (heartbeats, delayed ACKNACKs).
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut got = Vec::new();
    while got.len() < 50 || w.wait_for_acknowledgments(Duration::ZERO).is_err() {
        assert!(Instant::now() < deadline, "got {} of 50", got.len());
        let now = Instant::now();
        wep.on_timeout(&ca, now);
        rep.on_timeout(&cb, now);
        r.take_into(&mut got, usize::MAX);
        std::thread::sleep(Duration::from_millis(2));
    }
    let mut seqs: Vec<u32> = got
        .iter()
        .filter_map(|s| s.data.as_ref().map(|d| d.seq))
        .collect();
    seqs.sort_unstable();
    assert_eq!(seqs, (0..50).collect::<Vec<_>>());
    // Everything went through the contexts' own transports and counters.
    let sent = |c: &RuntimeContext| {
        c.counters
            .datagrams_sent
            .load(std::sync::atomic::Ordering::Relaxed)
    };
    // (Data waits for the reader's first ACKNACK, then goes as repairs: a few datagrams.)
    assert!(sent(&ca) >= 1, "the writer sent nothing");
    assert!(sent(&cb) >= 1, "the reader never acknowledged");
    // Default QoS: no policy is armed on either side, after 50 samples and the timers.
    assert!(wep.policies_idle() && rep.policies_idle());
    let with_deadline = wqos.with_deadline(crate::qos::Deadline {
        period: Duration::from_secs(1),
    });
    assert!(!WriterEndpoint::new(ca.clone(), wguid, &with_deadline).policies_idle());
}

/// A reliable KEEP_ALL writer matched with a remote reader that no code runs: the test plays
/// the reader's ACKNACKs.
struct PlayedReader {
    ca: Arc<RuntimeContext>,
    cb: Arc<RuntimeContext>,
    wguid: Guid,
    rguid: Guid,
    wep: Arc<WriterEndpoint>,
}

impl PlayedReader {
    fn new() -> Self {
        let net = InProcessNetwork::new();
        let (ca, cb) = (context(&net, 1), context(&net, 2));
        let (wguid, rguid) = writer_and_reader_guids(&ca, &cb);
        let wqos = DataWriterQos::default()
            .with_reliability(Reliability::reliable(Duration::from_secs(5)))
            .with_history(History::KeepAll);
        let wep = WriterEndpoint::new(ca.clone(), wguid, &wqos);
        wep.matched(&ca, &remote(rguid, &cb), None, Instant::now());
        PlayedReader {
            ca,
            cb,
            wguid,
            rguid,
            wep,
        }
    }

    /// The reader acknowledges everything before `base` (its `count`-th ACKNACK).
    fn acknack(&self, count: i32, base: i64) {
        use tessera_rtps::types::VendorId;
        use tessera_rtps::wire::{AckNack, ReceivedSubmessage, SequenceNumberSet};
        let rs = ReceivedSubmessage {
            source_prefix: self.cb.guid_prefix,
            source_vendor: VendorId([0x01, 0x0f]),
            dest_prefix: self.ca.guid_prefix,
            timestamp: None,
            submessage: Submessage::AckNack(AckNack {
                reader_id: self.rguid.entity_id,
                writer_id: self.wguid.entity_id,
                reader_sn_state: SequenceNumberSet {
                    base,
                    num_bits: 0,
                    bitmap: [0; 8],
                },
                count,
                final_flag: true,
            }),
        };
        self.wep.handle(&self.ca, &rs, Instant::now());
    }
}

/// An ACKNACK that finds the writer's core locked is left for the lock's holder: the receive
/// thread goes on at once, and the ACKNACK takes effect when the lock is released. Past the
/// inbox's bound a receive thread waits for the lock, as all did before.
#[test]
fn acknacks_that_find_the_core_locked_are_left_for_its_holder() {
    let played = PlayedReader::new();
    let wep = &played.wep;
    let w = DataWriter::<Reading>::from_endpoint(wep.clone());
    for seq in 0..5 {
        w.write(&Reading { sensor: 1, seq }).unwrap();
    }
    let acknack = |count, base| played.acknack(count, base);
    let finishes = |t: &std::thread::ScopedJoinHandle<'_, ()>| {
        let deadline = Instant::now() + Duration::from_secs(5);
        while !t.is_finished() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        t.is_finished()
    };
    let received_before = wep.lock_core().counters().acknacks_received;
    let core = wep.lock_core();
    assert!(!core.all_acked());
    std::thread::scope(|s| {
        let first = s.spawn(|| (1..=64).for_each(|c| acknack(c, 6)));
        assert!(
            finishes(&first),
            "a receive thread waited for the held lock"
        );
        assert_eq!(core.counters().acknacks_received, received_before);
        assert!(!core.all_acked(), "applied under another thread's lock");
        let overflow = s.spawn(|| acknack(65, 6));
        std::thread::sleep(Duration::from_millis(50));
        assert!(
            !overflow.is_finished(),
            "the inbox took more than its bound"
        );
        drop(core);
        assert!(finishes(&overflow));
    });
    let core = wep.lock_core();
    assert_eq!(core.counters().acknacks_received, received_before + 65);
    assert!(core.all_acked());
    drop(core);

    // A writer asleep waiting for acknowledgments is woken by one, however it arrives.
    for seq in 5..10 {
        w.write(&Reading { sensor: 1, seq }).unwrap();
    }
    std::thread::scope(|s| {
        let waiter = s.spawn(|| w.wait_for_acknowledgments(Duration::from_secs(5)));
        std::thread::sleep(Duration::from_millis(20));
        acknack(66, 11);
        assert!(waiter.join().unwrap().is_ok());
    });
}

/// An ACKNACK for a writer whose batches fill, arriving while a batch is open, is left for the
/// writer's next lock even when the lock is free (a saturating writer would otherwise sleep on
/// its lock while a receive thread applies it); once the batch went out, ACKNACKs apply at once.
#[test]
fn acknacks_for_a_writer_whose_batches_fill_wait_for_its_next_lock() {
    let played = PlayedReader::new();
    let (ca, wep) = (&played.ca, &played.wep);
    let w = DataWriter::<Reading>::from_endpoint(wep.clone());
    w.set_batching(true);
    let write = |seq| w.write(&Reading { sensor: 1, seq }).unwrap();
    let acknack = |count, base| played.acknack(count, base);
    let acknacks = || wep.lock_core().counters().acknacks_received;

    // More samples than a batch holds: a batch fills, and the next one opens armed.
    for seq in 0..300 {
        write(seq);
    }
    assert!(wep.batch_open_and_armed(), "no batch open after one filled");
    let before = acknacks();
    acknack(1, 100);
    assert_eq!(wep.left_acknacks(), 1, "the ACKNACK was not left");
    // The next write takes the lock and applies it.
    write(300);
    assert_eq!(wep.left_acknacks(), 0);
    assert_eq!(acknacks(), before + 1);

    // Left again while the batch is open: the event thread's pass when the batch is due
    // applies it, and sends the batch, which stopped filling.
    acknack(2, 200);
    assert_eq!(wep.left_acknacks(), 1);
    wep.on_timeout(ca, Instant::now() + Duration::from_millis(2));
    assert_eq!(wep.left_acknacks(), 0);
    assert_eq!(acknacks(), before + 2);
    assert!(!wep.batch_open_and_armed());

    // Writes age their batches again (nothing armed): ACKNACKs apply on the receive thread.
    write(301);
    acknack(3, 250);
    assert_eq!(wep.left_acknacks(), 0);
    assert_eq!(acknacks(), before + 3);
    w.flush();

    // Batches fill again, then a flush sends the open one: nothing is left.
    for seq in 302..600 {
        write(seq);
    }
    w.flush();
    assert!(!wep.batch_open_and_armed());
    acknack(4, 300);
    assert_eq!(wep.left_acknacks(), 0);
    assert_eq!(acknacks(), before + 4);

    // A writer waiting for acknowledgments is woken by one left while a batch is open.
    for seq in 600..900 {
        write(seq);
    }
    assert!(wep.batch_open_and_armed());
    std::thread::scope(|s| {
        let waiter = s.spawn(|| w.wait_for_acknowledgments(Duration::from_secs(5)));
        std::thread::sleep(Duration::from_millis(20));
        acknack(5, 901);
        assert!(waiter.join().unwrap().is_ok());
    });
    assert_eq!(wep.left_acknacks(), 0);
}

/// A batching writer whose batches fill reads no clock to age the next one and arms the event
/// thread for its delay instead; once the event thread had to send a batch that stopped
/// filling, and for a writer whose batches never fill (a paced writer that flushes), writes age
/// the batch themselves and nothing is armed.
#[test]
fn a_batching_writer_arms_the_event_thread_only_while_its_batches_fill() {
    let net = InProcessNetwork::new();
    let (ca, cb) = (context(&net, 1), context(&net, 2));
    let (wguid, _) = writer_and_reader_guids(&ca, &cb);
    let wep = WriterEndpoint::new(ca.clone(), wguid, &DataWriterQos::default());
    let w = DataWriter::<Reading>::from_endpoint(wep.clone());
    w.set_batching(true);
    let write = |seq| w.write(&Reading { sensor: 1, seq }).unwrap();
    let batch_delay = Duration::from_micros(500);

    ca.kick.take_scheduled();
    write(0);
    assert_eq!(
        ca.kick.take_scheduled(),
        None,
        "a batch not known to fill armed a timer"
    );
    w.flush();
    // More samples than a batch holds: at least one batch fills.
    for seq in 1..300 {
        write(seq);
    }
    w.flush();
    ca.kick.take_scheduled();
    write(300);
    let armed = ca
        .kick
        .take_scheduled()
        .expect("the event thread was not armed");
    assert!(armed <= Instant::now() + batch_delay);
    // The event thread sends the batch that stopped filling; the next is aged by the writes.
    wep.on_timeout(&ca, Instant::now() + 2 * batch_delay);
    ca.kick.take_scheduled();
    write(301);
    assert_eq!(ca.kick.take_scheduled(), None);
}
