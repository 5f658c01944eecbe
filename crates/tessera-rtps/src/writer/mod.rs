//! The RTPS writer state machine ([`WriterCore`]): history, matched readers, push, heartbeats,
//! repairs.
//!
//! # Model
//! One `WriterCore` per local writer (user or built-in). The runtime keeps it behind its own
//! lock and drives it with:
//! - [`WriterCore::write`] from the application thread (cheap: a ring append),
//! - [`WriterCore::on_acknack`] / [`WriterCore::on_nack_frag`] from the receive thread,
//! - [`WriterCore::handle_timeout`] when [`WriterCore::poll_timeout`] expires,
//! - [`WriterCore::poll_transmit_into`] after each of those, until it returns `false`.
//!
//! Each matched reader has a *proxy* with three cursors: `acked` (everything below was
//! acknowledged), `unsent` (next sample to push) and a repair queue filled by ACKNACK and
//! NACK_FRAG. A transmit is addressed to one reader (unicast + INFO_DST) or, for first
//! transmissions to readers sharing a multicast locator, to that locator once for all of them
//! ([`Destination::Locators`], see [`MulticastPolicy`] and the `multicast` module); the payload
//! is shared (`Arc`) between readers, so fan-out costs no copies.
//!
//! # Heartbeats (modelled on Cyclone DDS)
//! - The first transmit to a new reliable reader carries a HEARTBEAT telling it where its
//!   stream starts (volatile readers start after the last sample written before they matched).
//! - A HEARTBEAT is piggybacked at the end of every burst of new data and at the end of every
//!   repair. It is *final* (no answer needed unless something is missing) except every
//!   `ack_every` samples, after a repair, or when the history is full, when it asks for an
//!   ACKNACK so that acknowledged samples can be released.
//! - While any reliable reader has unacknowledged samples, a non-final HEARTBEAT goes to it
//!   every `heartbeat_period`.
//!
//! # Repairs
//! ACKNACK bitmaps are merged into the reader's repair queue (bounded); requests are served
//! after `nack_response_delay` as DATA/DATA_FRAG, or GAP when the sample is gone (replaced
//! under KEEP_LAST). NACK_FRAG resends only the named fragments. ACKNACKs with an old count,
//! and Fast DDS's pre-emptive ACKNACK (base 0), request nothing.
//!
//! Repairs are self-limiting, so that a congested path is not flooded with copies of what it
//! already carries (congestion collapse):
//! - *Hold-off.* Each proxy remembers when it last resent each number. A request for a number
//!   resent less than a hold-off ago is ignored: the copy is still on its way (possibly in a
//!   bottleneck queue) and the reader asked before it could have arrived. The hold-off is the
//!   reader's round-trip time, estimated per proxy like TCP's RTO (smoothed RTT + 4 × its
//!   variation, clamped to [`WriterConfig::repair_holdoff_min`]..`_max`). An RTT sample is the
//!   time from a datagram carrying new data and an ACK request to the first ACKNACK that
//!   acknowledges that data, or from the latest repair of that data if there was one (repairs
//!   end with an ACK request too). When requests were ignored, a HEARTBEAT asking for an ACKNACK follows once the
//!   hold-off ends, so a repair that was lost again is requested again.
//! - *Small datagrams.* Repairs travel in datagrams of at most
//!   [`WriterConfig::repair_message_size`] bytes: on a path that fragments large datagrams and
//!   drops fragments under load, a big repair datagram is all but certain to be lost.

mod adapt;
mod coherent;
mod emit;
mod filtered;
mod history;
mod multicast;
pub mod store;
pub mod transmit;

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::types::{Guid, GuidPrefix, Locators, SequenceNumber, Timestamp};
use crate::wire::{AckNack, FragmentNumberSet, NackFrag};
use crate::Now;
pub use coherent::{writer_set_digest, CoherentState, GroupSequence, GroupTag, COHERENT_SET_END};
pub use history::{MemoryHistory, Recycler};
use multicast::Group;
pub use multicast::MulticastPolicy;
pub use store::{HistoryStore, Sample, StoreError};
pub use transmit::{
    Destination, InlineQos, OutData, OutDataFrag, OutSubmessage, Transmit, DATAGRAM_OVERHEAD,
    PID_FASTDDS_SAMPLE_IDENTITY, PID_RELATED_SAMPLE_IDENTITY,
};

/// The HISTORY QoS of a writer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HistoryKind {
    /// Keep the last `n` samples of every instance (`n` ≥ 1).
    KeepLast(u32),
    /// Keep every sample until all reliable readers acknowledged it (bounded by
    /// [`WriterConfig::max_samples`]).
    KeepAll,
}

/// Configuration of a [`WriterCore`].
#[derive(Debug, Clone)]
pub struct WriterConfig {
    /// The writer's GUID.
    pub guid: Guid,
    /// RELIABLE (true) or BEST_EFFORT.
    pub reliable: bool,
    /// TRANSIENT_LOCAL (true: late-joining durable readers get the retained history) or VOLATILE.
    pub transient_local: bool,
    /// History kind and depth.
    pub history: HistoryKind,
    /// RESOURCE_LIMITS max_samples: live samples held at most (`usize::MAX`: unlimited).
    pub max_samples: usize,
    /// Period of heartbeats while readers have unacknowledged data. Default 100 ms.
    pub heartbeat_period: Duration,
    /// Delay before answering an ACKNACK/NACK_FRAG (coalesces requests). Default 0.
    pub nack_response_delay: Duration,
    /// DATA_FRAG fragment size (clamped to fit a datagram): the unit in which fragmented
    /// samples are cut and NACK_FRAG repairs are served. Default 1344 (Cyclone's).
    pub fragment_size: usize,
    /// Largest datagram the writer sends, RTPS header included (at least 512). A sample whose
    /// DATA fits goes whole in one DATA; a larger one goes as DATA_FRAGs carrying as many
    /// fragments as fit. Raise it (at most 65,507, UDP's largest payload) when every matched
    /// reader's transport takes larger datagrams, e.g. loopback; see
    /// [`WriterCore::set_max_message_size`]. Default 14720 (Cyclone's).
    pub max_message_size: usize,
    /// Send new samples at once (true, default) or only announce them by HEARTBEAT.
    pub push_mode: bool,
    /// Attach PID_KEY_HASH to samples that have one. Default true.
    pub send_key_hash: bool,
    /// Shortest repair hold-off (a number resent less than this ago is not resent on request).
    /// Default 2 ms.
    pub repair_holdoff_min: Duration,
    /// Longest repair hold-off, also used before the first round-trip measurement caps it.
    /// Default 1 s.
    pub repair_holdoff_max: Duration,
    /// Repair hold-off before any round-trip time was measured. Default 20 ms.
    pub repair_holdoff_initial: Duration,
    /// Largest datagram carrying repairs, RTPS header included (at least one submessage is
    /// always sent). Default 1472: one Ethernet frame.
    pub repair_message_size: usize,
    /// First transmissions to multicast locators shared by several readers (see
    /// [`WriterCore::add_reader_with_locators`]); only in push mode. Default: on, from two
    /// readers.
    pub multicast: MulticastPolicy,
    /// Sends each sample's identity (this writer's GUID and the sequence number, or the
    /// sample's [`Sample::origin`]) as inline QoS, as the Fast DDS discovery-server protocol
    /// requires. Default: off.
    pub send_sample_identity: bool,
}

impl WriterConfig {
    /// DDS defaults: reliable, volatile, KEEP_LAST 1, unlimited resources, 100 ms heartbeat.
    pub fn new(guid: Guid) -> Self {
        WriterConfig {
            guid,
            reliable: true,
            transient_local: false,
            history: HistoryKind::KeepLast(1),
            max_samples: usize::MAX,
            heartbeat_period: Duration::from_millis(100),
            nack_response_delay: Duration::ZERO,
            fragment_size: 1344,
            max_message_size: 14720,
            push_mode: true,
            send_key_hash: true,
            repair_holdoff_min: Duration::from_millis(2),
            repair_holdoff_max: Duration::from_secs(1),
            repair_holdoff_initial: Duration::from_millis(20),
            repair_message_size: 1472,
            multicast: MulticastPolicy::default(),
            send_sample_identity: false,
        }
    }
}

/// Why [`WriterCore::write`] refused a sample. All are resource conditions, not peer faults.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum WriteError {
    /// The history holds `max_samples` samples that readers still need; wait for
    /// acknowledgements ([`WriterCore::can_accept`]) and retry.
    #[error("writer history full of unacknowledged samples")]
    HistoryFull,
    /// The payload exceeds what RTPS can carry (4 GiB).
    #[error("payload too large")]
    PayloadTooLarge,
    /// The [`HistoryStore`] refused the sample; nothing was written.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A sample [`WriterCore::try_write_relayed`] refused: why, and the payload back when the
/// refusal was for room ([`WriteError::HistoryFull`]), so that the caller can retry with it.
#[derive(Debug)]
pub struct Refused {
    /// Why the sample was refused.
    pub error: WriteError,
    /// The payload, given back with [`WriteError::HistoryFull`] (otherwise `None`).
    pub payload: Option<Arc<Vec<u8>>>,
}

impl Refused {
    fn full(payload: Arc<Vec<u8>>) -> Self {
        Self {
            error: WriteError::HistoryFull,
            payload: Some(payload),
        }
    }

    fn dropping(error: WriteError) -> Self {
        Self {
            error,
            payload: None,
        }
    }
}

/// Statistics of a [`WriterCore`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WriterCounters {
    /// Samples accepted by `write`.
    pub samples_written: u64,
    /// Writes refused because the flow-control window was full.
    pub flow_blocked: u64,
    /// DATA submessages sent (first transmissions and repairs).
    pub data_sent: u64,
    /// DATA_FRAG submessages sent.
    pub data_frag_sent: u64,
    /// Samples or fragment runs sent again because a reader asked.
    pub retransmits: u64,
    /// GAP submessages sent.
    pub gaps_sent: u64,
    /// HEARTBEAT submessages sent.
    pub heartbeats_sent: u64,
    /// ACKNACKs received (all).
    pub acknacks_received: u64,
    /// ACKNACKs/NACK_FRAGs ignored: old count, best-effort reader.
    pub acknacks_ignored: u64,
    /// NACK_FRAGs received.
    pub nack_frags_received: u64,
    /// ACKNACK/NACK_FRAG from readers that are not matched.
    pub unknown_reader: u64,
    /// Requested sequence numbers not resent because a repair of them was still in flight.
    pub repairs_held_off: u64,
    /// Times loss made the writer drop to unfragmented (path-MTU) datagrams (see the
    /// `adapt` module: large IP-fragmented datagrams do not survive a lossy path).
    pub datagram_reductions: u64,
    /// Samples not sent to a reader because its content filter drops them (writer-side
    /// filtering; each reader counted).
    pub samples_filtered: u64,
}

/// Most NACK_FRAG requests queued per reader; more are dropped (the reader will ask again).
const MAX_FRAG_REPAIRS: usize = 16;
/// Most whole-sample repairs queued per reader.
const MAX_REPAIRS: usize = 1024;
/// Most recently resent sequence numbers remembered per reader (for the hold-off).
const MAX_RESENT: usize = 2048;
/// Room kept in every datagram for a trailing HEARTBEAT.
const HB_LEN: usize = 32;
/// Worst-case bytes around one DATA_FRAG's fragments: INFO_TS, header, inline QoS.
const FRAG_OVERHEAD: usize = 12 + 36 + 32;
/// The largest UDP payload over IPv4.
pub const MAX_UDP_PAYLOAD: usize = 65_507;

#[derive(Debug)]
struct ReaderProxy {
    guid: Guid,
    locators: Locators,
    /// Multicast locators the reader listens on.
    multicast: Locators,
    /// The multicast group it belongs to (index into `WriterCore::groups`).
    group: Option<usize>,
    reliable: bool,
    /// First sample this reader is meant to get.
    start: SequenceNumber,
    /// Everything below is acknowledged (best effort: sent).
    acked: SequenceNumber,
    /// Next sample to push.
    unsent: SequenceNumber,
    /// Fragments of `unsent` already pushed.
    unsent_frag: u32,
    /// Whole samples to resend, ascending.
    repair: VecDeque<SequenceNumber>,
    /// Fragments of `repair.front()` already resent.
    repair_frag: u32,
    /// Fragment requests (NACK_FRAG).
    frag_repairs: Vec<(SequenceNumber, FragmentNumberSet)>,
    /// When queued repairs become due.
    repair_at: Option<Instant>,
    /// A heartbeat to send (the value is its final flag).
    hb_due: Option<bool>,
    /// Last sequence number for which an acknowledgement was requested.
    ack_req_seq: SequenceNumber,
    last_acknack_count: Option<i32>,
    last_nackfrag_count: Option<i32>,
    /// A reliable reader is sent data only once it has answered with an ACKNACK: that proves
    /// it has matched this writer. Pushing earlier means data it discards as coming from an
    /// unknown writer, after which some implementations (Cyclone DDS) synchronise on a later
    /// heartbeat and skip what was lost in between. Best-effort readers are always synced.
    synced: bool,
    /// Put a HEARTBEAT *before* the next data: the reader just synced while expecting numbers
    /// below its start, and must learn where its stream begins before data arrives, or it takes
    /// the data for out-of-order and may drop it.
    lead_hb: bool,
    /// When each recently repaired number was last resent, ascending by number.
    resent: VecDeque<(SequenceNumber, Instant)>,
    /// When fragments were last resent on a NACK_FRAG: (number, bitmap base, instant).
    frag_resent: Vec<(SequenceNumber, u32, Instant)>,
    /// Round-trip estimate towards this reader.
    rtt: Rtt,
    /// An RTT measurement under way: new data up to this number went out with an ACK request
    /// at this instant.
    probe: Option<(SequenceNumber, Instant)>,
    /// Ask the reader again (non-final HEARTBEAT) at this instant: requests were held off, or
    /// repairs went out and their fate is unknown.
    recheck_at: Option<Instant>,
    /// Rechecks since the reader last made progress (the interval doubles with each).
    recheck_backoff: u32,
    /// While the reader has not answered: when it is asked again, and how often it was.
    unsynced_next: Instant,
    unsynced_hbs: u32,
}

/// Smoothed round-trip time and its mean deviation (RFC 6298 style).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Rtt {
    srtt: Option<Duration>,
    rttvar: Duration,
}

impl Rtt {
    pub(crate) fn sample(&mut self, x: Duration) {
        match self.srtt {
            None => {
                self.srtt = Some(x);
                self.rttvar = x / 2;
            }
            Some(s) => {
                let dev = s.abs_diff(x);
                self.rttvar = (self.rttvar * 3 + dev) / 4;
                self.srtt = Some((s * 7 + x) / 8);
            }
        }
    }

    /// A generous bound on the round trip (smoothed RTT + 4 × deviation), `initial` before the
    /// first sample, clamped to `min..=max`.
    pub(crate) fn bound(&self, initial: Duration, min: Duration, max: Duration) -> Duration {
        let h = match self.srtt {
            Some(s) => s + self.rttvar * 4,
            None => initial,
        };
        h.clamp(min, max.max(min))
    }

    /// How long a repair is assumed to be in flight.
    fn holdoff(&self, cfg: &WriterConfig) -> Duration {
        self.bound(
            cfg.repair_holdoff_initial,
            cfg.repair_holdoff_min,
            cfg.repair_holdoff_max,
        )
    }
}

impl ReaderProxy {
    /// Whether the proxy has something to send now: new samples up to `limit`, a heartbeat
    /// (unless `defer_hb`: its group sends it), due repairs.
    fn has_work(&self, now: &Now, limit: SequenceNumber, push: bool, defer_hb: bool) -> bool {
        (self.synced && self.unsent <= limit && (push || !self.reliable))
            || (self.hb_due.is_some() && !defer_hb)
            || self.repair_at.is_some_and(|t| t <= now.get())
            || self.lead_hb
    }

    /// Notes that `seq` was resent at `now`.
    fn note_resent(&mut self, seq: SequenceNumber, now: Instant) {
        let i = self.resent.partition_point(|e| e.0 < seq);
        match self.resent.get_mut(i) {
            Some(e) if e.0 == seq => e.1 = now,
            _ => {
                if self.resent.len() >= MAX_RESENT {
                    // Forget the lowest number: the oldest repair, most likely done.
                    self.resent.pop_front();
                    self.resent.insert(i.saturating_sub(1), (seq, now));
                } else {
                    self.resent.insert(i, (seq, now));
                }
            }
        }
    }

    fn want_hb(&mut self, final_flag: bool) {
        self.hb_due = Some(self.hb_due.unwrap_or(true) && final_flag);
    }
}

/// Shortest interval between two rechecks of a reader's repairs.
const MIN_RECHECK: Duration = Duration::from_millis(1);

/// First heartbeat period towards a reliable reader that has not answered yet; it doubles
/// with each unanswered heartbeat up to the configured period. A reader usually answers
/// at once (it matched us first) or asks on its own when it matches us (its pre-emptive
/// ACKNACK); a flat 10 ms towards every reader its participant has not yet matched made
/// hundreds of writers in a starting system heartbeat a hundred times a second.
const UNSYNCED_HEARTBEAT_PERIOD: Duration = Duration::from_millis(10);

/// The heartbeat period towards a reader that left `unanswered` heartbeats unanswered.
fn unsynced_period(unanswered: u32, configured: Duration) -> Duration {
    (UNSYNCED_HEARTBEAT_PERIOD * (1u32 << unanswered.min(8))).min(configured)
}

/// Writer state shared by all proxies (split from the proxies for borrowing).
#[derive(Debug)]
struct Shared {
    cfg: WriterConfig,
    history: Box<dyn HistoryStore>,
    last_seq: SequenceNumber,
    hb_count: i32,
    counters: WriterCounters,
    /// Bytes of submessages per datagram (after header, INFO_DST and a trailing HEARTBEAT).
    budget: usize,
    /// The same for datagrams carrying repairs.
    repair_budget: usize,
    /// Fragment size for samples written from now on.
    frag_size: usize,
    /// Fragment size of repairs of whole samples too large for a repair datagram.
    repair_frag_size: usize,
    /// Loss watch choosing between large and path-MTU datagrams.
    sizer: adapt::DatagramSizer,
    ack_every: i64,
    gc_needed: bool,
    /// Flow control: at most this many samples not yet acknowledged by every reliable reader.
    flow_window: i64,
    /// `ack_every` before flow control narrowed it.
    base_ack_every: i64,
    /// Writer-side content filtering: the samples that some readers' filters drop, with
    /// those readers ([`WriterCore::filter_out`]); a reader's own stream gets a GAP for them.
    /// Empty unless a matched reader announced a filter.
    filtered_out: BTreeMap<SequenceNumber, Arc<[Guid]>>,
    /// PRESENTATION coherent sets: the open set, if any (see [`coherent`]).
    coherent: CoherentState,
}

/// The state machine of one RTPS writer. See the [module docs](self).
#[derive(Debug)]
pub struct WriterCore {
    sh: Shared,
    readers: Vec<ReaderProxy>,
    rr: usize,
    /// Readers sharing a multicast locator.
    groups: Vec<Group>,
    grr: usize,
    next_hb: Option<Instant>,
}

impl WriterCore {
    /// A writer with no matched readers and an empty in-memory history
    /// ([`MemoryHistory`]).
    pub fn new(cfg: WriterConfig) -> Self {
        let store = Box::new(MemoryHistory::for_config(&cfg));
        Self::with_store(cfg, store)
    }

    /// [`WriterCore::new`] whose history hands the payloads it releases to `recycler`.
    pub fn recycling(cfg: WriterConfig, recycler: Recycler) -> Self {
        let store = Box::new(MemoryHistory::for_config(&cfg).with_recycler(recycler));
        Self::with_store(cfg, store)
    }

    /// A writer keeping its samples in `store` (see [`HistoryStore`] for the contract). The
    /// store should be empty, and follow `cfg.history` for KEEP_LAST
    /// ([`HistoryStore::keep_last_victim`]); the core still enforces `max_samples`.
    pub fn with_store(cfg: WriterConfig, store: Box<dyn HistoryStore>) -> Self {
        // KEEP_ALL: an eighth of the history, at most 2,048 (each ACKNACK costs the reader a
        // send and often a wake-up of the writer's receive thread, ~30 µs of CPU on both sides
        // together on a VM: every 128 samples it took ~10 % of a 16 B subscriber's receive
        // thread; 512 gave +5 % samples/s and -5 % CPU per sample over shared memory, 2,048
        // another +8 % and -5 % once ACKNACKs stopped waiting for the writer's lock). Flow
        // control narrows it to a quarter of its window, so small samples ask at most every
        // 2,048 and large ones far more often.
        let ack_every = match cfg.history {
            HistoryKind::KeepAll => (cfg.max_samples / 8).clamp(1, 2048) as i64,
            HistoryKind::KeepLast(_) => 128,
        };
        let mut w = WriterCore {
            sh: Shared {
                history: store,
                last_seq: 0,
                hb_count: 0,
                counters: WriterCounters::default(),
                budget: 0,
                repair_budget: 0,
                frag_size: 0,
                repair_frag_size: 0,
                sizer: adapt::DatagramSizer::default(),
                ack_every,
                base_ack_every: ack_every,
                gc_needed: false,
                flow_window: i64::MAX,
                filtered_out: BTreeMap::new(),
                coherent: CoherentState::default(),
                cfg,
            },
            readers: Vec::new(),
            rr: 0,
            groups: Vec::new(),
            grr: 0,
            next_hb: None,
        };
        w.sh.size_datagrams();
        w
    }

    /// Changes the largest datagram ([`WriterConfig::max_message_size`]), e.g. when the
    /// matched readers' transports change. Samples written before keep their DATA/DATA_FRAG
    /// form and fragment size (a reader reassembles a sample only from fragments of one
    /// size); datagrams built from now on, new samples and repairs alike, follow the new size.
    pub fn set_max_message_size(&mut self, n: usize) {
        self.sh.cfg.max_message_size = n;
        self.sh.size_datagrams();
    }

    /// The largest datagram in use (the configured one, within 512..=65507).
    pub fn max_message_size(&self) -> usize {
        self.sh.budget + DATAGRAM_OVERHEAD + HB_LEN
    }

    /// The writer's GUID.
    pub fn guid(&self) -> Guid {
        self.sh.cfg.guid
    }

    /// The configuration.
    pub fn config(&self) -> &WriterConfig {
        &self.sh.cfg
    }

    /// Sequence number of the last sample written (0 before the first).
    pub fn last_seq(&self) -> SequenceNumber {
        self.sh.last_seq
    }

    /// Number of samples held in the history.
    pub fn history_len(&self) -> usize {
        self.sh.history.len()
    }

    /// The history store.
    pub fn store(&self) -> &dyn HistoryStore {
        &*self.sh.history
    }

    /// Gives every held sample for which `f` returns a new payload that payload (a loaning
    /// writer serializes the references it kept for a reader that cannot resolve them);
    /// returns how many the store replaced. Each keeps its number; its fragment size follows
    /// the new length. A sample already sent whole to other readers may then be repaired in
    /// fragments of the new payload: it was one DATA before, so no reader mixes the two.
    pub fn rewrite_payloads(
        &mut self,
        mut f: impl FnMut(&Sample) -> Option<Arc<Vec<u8>>>,
    ) -> usize {
        let mut changes = Vec::new();
        let mut next = self.sh.history.first_seq();
        while let Some((seq, sample)) = next.and_then(|s| self.sh.history.next_from(s)) {
            if let Some(payload) = f(sample) {
                let qos = self.sh.inline_qos(seq, sample);
                changes.push((seq, self.sh.frag_size_for(payload.len(), &qos), payload));
            }
            next = Some(seq + 1);
        }
        changes
            .into_iter()
            .filter(|(seq, frag, payload)| {
                self.sh
                    .history
                    .replace_payload(*seq, payload.clone(), *frag)
            })
            .count()
    }

    /// Statistics.
    pub fn counters(&self) -> WriterCounters {
        self.sh.counters
    }

    /// The fragment size in use (the configured one, clamped to fit a datagram).
    pub fn fragment_size(&self) -> usize {
        self.sh.frag_size
    }

    /// Calls `f` with every sample of the retained history, oldest first: what a late-joining
    /// durable reader gets (for a runtime that hands it to a reader of its own process
    /// directly). Arguments: sequence number, payload, key hash, status info, key flag, source
    /// timestamp.
    pub fn for_each_retained(
        &self,
        mut f: impl FnMut(SequenceNumber, &Arc<Vec<u8>>, Option<[u8; 16]>, u32, bool, Option<Timestamp>),
    ) {
        let mut from = 1;
        while let Some((seq, s)) = self.sh.history.next_from(from) {
            f(
                seq,
                &s.payload,
                s.key_hash,
                s.status_info,
                s.key_flag,
                s.timestamp,
            );
            from = seq + 1;
        }
    }

    /// Number of matched readers.
    pub fn matched_readers(&self) -> usize {
        self.readers.len()
    }

    /// Whether `guid` is a matched reader.
    pub fn has_reader(&self, guid: Guid) -> bool {
        self.readers.iter().any(|r| r.guid == guid)
    }

    /// Matches a reader. `reliable` is the reader's reliability (a best-effort writer treats
    /// every reader as best effort); `durable` says whether it wants the retained history
    /// (reader durability ≥ TRANSIENT_LOCAL; only meaningful for a transient-local writer).
    /// Matching an already matched reader updates its (unicast) locators.
    pub fn add_reader(
        &mut self,
        guid: Guid,
        locators: Locators,
        reliable: bool,
        durable: bool,
        now: Instant,
    ) {
        if let Some(r) = self.readers.iter_mut().find(|r| r.guid == guid) {
            r.locators = locators;
            return;
        }
        self.push_reader(guid, locators, Locators::new(), reliable, durable, now);
    }

    /// Like [`WriterCore::add_reader`], with the reader's multicast locators too: readers
    /// sharing one get their first transmissions there, once for all of them, as
    /// [`WriterConfig::multicast`] allows (the handshake and repairs stay unicast).
    /// Matching an already matched reader updates both locator sets.
    pub fn add_reader_with_locators(
        &mut self,
        guid: Guid,
        unicast: Locators,
        multicast: Locators,
        reliable: bool,
        durable: bool,
        now: Instant,
    ) {
        if let Some(r) = self.readers.iter_mut().find(|r| r.guid == guid) {
            r.locators = unicast;
            self.set_reader_multicast(guid, multicast);
            return;
        }
        self.push_reader(guid, unicast, multicast, reliable, durable, now);
        if !multicast.is_empty() {
            self.regroup();
        }
    }

    /// Sets the multicast locators of a matched reader; false when it is not matched.
    pub fn set_reader_multicast(&mut self, guid: Guid, multicast: Locators) -> bool {
        let Some(r) = self.readers.iter_mut().find(|r| r.guid == guid) else {
            return false;
        };
        if r.multicast != multicast {
            r.multicast = multicast;
            self.regroup();
        }
        true
    }

    /// Changes [`WriterConfig::multicast`].
    pub fn set_multicast_policy(&mut self, policy: MulticastPolicy) {
        if self.sh.cfg.multicast != policy {
            self.sh.cfg.multicast = policy;
            self.regroup();
        }
    }

    /// Number of multicast groups in use (readers sharing a locator).
    pub fn multicast_groups(&self) -> usize {
        self.groups.len()
    }

    fn regroup(&mut self) {
        let policy = if self.sh.cfg.push_mode {
            self.sh.cfg.multicast
        } else {
            MulticastPolicy::Off
        };
        let old = std::mem::take(&mut self.groups);
        self.groups = multicast::regroup(policy, &mut self.readers, old, self.sh.last_seq);
        self.grr = 0;
    }

    fn push_reader(
        &mut self,
        guid: Guid,
        locators: Locators,
        multicast: Locators,
        reliable: bool,
        durable: bool,
        now: Instant,
    ) {
        let reliable = reliable && self.sh.cfg.reliable;
        let first_hb = now + unsynced_period(0, self.sh.cfg.heartbeat_period);
        let last = self.sh.last_seq;
        let start = if self.sh.cfg.transient_local && durable {
            self.sh.history.first_seq().unwrap_or(last + 1)
        } else {
            last + 1
        };
        self.readers.push(ReaderProxy {
            guid,
            locators,
            multicast,
            group: None,
            reliable,
            start,
            acked: start,
            unsent: start,
            unsent_frag: 0,
            repair: VecDeque::new(),
            repair_frag: 0,
            frag_repairs: Vec::new(),
            repair_at: None,
            hb_due: reliable.then_some(false),
            ack_req_seq: start - 1,
            last_acknack_count: None,
            last_nackfrag_count: None,
            synced: !reliable,
            lead_hb: false,
            resent: VecDeque::new(),
            frag_resent: Vec::new(),
            rtt: Rtt::default(),
            probe: None,
            recheck_at: None,
            recheck_backoff: 0,
            unsynced_next: first_hb,
            unsynced_hbs: 0,
        });
        if reliable {
            self.next_hb = Some(self.next_hb.map_or(first_hb, |t| t.min(first_hb)));
        }
    }

    /// Unmatches a reader; returns whether it was matched. Samples only it still needed may
    /// be released.
    pub fn remove_reader(&mut self, guid: Guid) -> bool {
        let Some(i) = self.readers.iter().position(|r| r.guid == guid) else {
            return false;
        };
        let r = self.readers.swap_remove(i);
        if r.group.is_some() || !self.groups.is_empty() {
            self.regroup();
        }
        self.gc();
        true
    }

    fn min_needed(&self) -> SequenceNumber {
        self.readers
            .iter()
            .map(|r| if r.reliable { r.acked } else { r.unsent })
            .min()
            .unwrap_or(self.sh.last_seq + 1)
    }

    fn gc(&mut self) {
        self.sh.gc_needed = false;
        if !self.sh.cfg.transient_local {
            let m = self.min_needed();
            self.sh.history.remove_below(m);
        }
    }

    /// The lowest sequence number some reliable reader has not acknowledged (flow control).
    fn reliable_floor(&self) -> Option<SequenceNumber> {
        self.readers
            .iter()
            .filter(|r| r.reliable)
            .map(|r| r.acked)
            .min()
    }

    /// Whether a `write` would currently find room (KEEP_ALL/resource limits). A blocked
    /// writer re-checks this after each [`WriterCore::on_acknack`] that returned true.
    pub fn can_accept(&self) -> bool {
        let floor = self.reliable_floor();
        self.sh.can_accept(self.min_needed(), floor)
    }

    /// Flow control: how many samples may be outstanding (written but not yet acknowledged by
    /// every reliable reader) before `write` reports [`WriteError::HistoryFull`] — which makes
    /// the caller wait for acknowledgments exactly as for a full KEEP_ALL history. The runtime
    /// sizes it from the sample size (a byte budget); the default is unlimited.
    pub fn set_flow_window(&mut self, samples: usize) {
        let w = samples.clamp(1, i64::MAX as usize) as i64;
        if w != self.sh.flow_window {
            self.sh.flow_window = w;
            // Ask for acknowledgments often enough that the window never runs dry.
            self.sh.ack_every = self.sh.base_ack_every.min((w / 4).max(1));
        }
    }

    /// Asks reliable readers for an acknowledgment at least every `samples` new samples (never
    /// less often than the history's own rhythm): for a writer whose samples hold a resource
    /// that only acknowledgments release, such as a zero-copy loan's chunk under KEEP_LAST.
    pub fn ack_at_least_every(&mut self, samples: usize) {
        let n = samples.clamp(1, i64::MAX as usize) as i64;
        self.sh.base_ack_every = self.sh.base_ack_every.min(n);
        self.sh.ack_every = self.sh.ack_every.min(n);
    }

    /// How many samples some reliable reader has not acknowledged yet.
    pub fn unacked_samples(&self) -> u64 {
        let floor = self.reliable_floor();
        floor.map_or(0, |f| (self.sh.last_seq + 1 - f).max(0) as u64)
    }

    /// Adds a sample to the history and returns its sequence number; the sample goes out on
    /// the next [`WriterCore::poll_transmit_into`].
    ///
    /// `payload` is the serialized sample (encapsulation header included) or, with `key_flag`,
    /// the serialized key; it may be empty for a dispose/unregister identified by `key_hash`.
    /// `status_info` is 0, or 1 (disposed) | 2 (unregistered).
    pub fn write(
        &mut self,
        payload: Arc<Vec<u8>>,
        key_hash: Option<[u8; 16]>,
        status_info: u32,
        key_flag: bool,
        source_timestamp: Option<Timestamp>,
        now: impl Into<Now>,
    ) -> Result<SequenceNumber, WriteError> {
        self.write_relayed(
            payload,
            key_hash,
            status_info,
            key_flag,
            source_timestamp,
            None,
            now,
        )
    }

    /// [`WriterCore::write`] for a sample that relays another writer's sample `origin`
    /// (its GUID and sequence number), sent as the sample identity (see
    /// [`WriterConfig::send_sample_identity`]).
    #[allow(clippy::too_many_arguments)]
    pub fn write_relayed(
        &mut self,
        payload: Arc<Vec<u8>>,
        key_hash: Option<[u8; 16]>,
        status_info: u32,
        key_flag: bool,
        source_timestamp: Option<Timestamp>,
        origin: Option<(Guid, SequenceNumber)>,
        now: impl Into<Now>,
    ) -> Result<SequenceNumber, WriteError> {
        self.try_write_relayed(
            payload,
            key_hash,
            status_info,
            key_flag,
            source_timestamp,
            origin,
            now,
        )
        .map_err(|refused| refused.error)
    }

    /// [`WriterCore::write_relayed`] that hands the payload back when the sample was refused
    /// for room ([`WriteError::HistoryFull`]): a writer that waits for room and tries again
    /// moves the same payload in each time instead of cloning its `Arc` for every write (two
    /// locked instructions, a few per cent of a 16 B write).
    #[allow(clippy::too_many_arguments)]
    pub fn try_write_relayed(
        &mut self,
        payload: Arc<Vec<u8>>,
        key_hash: Option<[u8; 16]>,
        status_info: u32,
        key_flag: bool,
        source_timestamp: Option<Timestamp>,
        origin: Option<(Guid, SequenceNumber)>,
        now: impl Into<Now>,
    ) -> Result<SequenceNumber, Refused> {
        let tag = self.sh.coherent.tag(self.sh.last_seq + 1);
        self.write_tagged(
            payload,
            key_hash,
            status_info,
            key_flag,
            source_timestamp,
            origin,
            tag,
            &now.into(),
        )
    }

    /// [`WriterCore::try_write_relayed`] with the sample's PID_COHERENT_SET and group values
    /// given.
    #[allow(clippy::too_many_arguments)]
    fn write_tagged(
        &mut self,
        payload: Arc<Vec<u8>>,
        key_hash: Option<[u8; 16]>,
        status_info: u32,
        key_flag: bool,
        source_timestamp: Option<Timestamp>,
        origin: Option<(Guid, SequenceNumber)>,
        (coherent_set, group): (Option<SequenceNumber>, Option<GroupTag>),
        now: &Now,
    ) -> Result<SequenceNumber, Refused> {
        if payload.len() > u32::MAX as usize {
            return Err(Refused::dropping(WriteError::PayloadTooLarge));
        }
        let keep = self.sh.cfg.transient_local || !self.readers.is_empty();
        let floor = self.reliable_floor();
        if floor.is_some_and(|f| self.sh.last_seq + 1 - f >= self.sh.flow_window) {
            // Too much in flight: wait for acknowledgments (the next transmit asks for them).
            self.sh.counters.flow_blocked += 1;
            return Err(Refused::full(payload));
        }
        let seq = self.sh.last_seq + 1;
        if keep {
            // What the new sample replaces: the oldest of its instance (KEEP_LAST), or at
            // max_samples the oldest sample every reader acknowledged.
            let victim = self.sh.history.keep_last_victim(key_hash);
            let mut oldest = None;
            if victim.is_none() && self.sh.history.len() >= self.sh.cfg.max_samples {
                match self.sh.history.first_seq() {
                    Some(f) if f < self.min_needed() => oldest = Some(f),
                    _ => return Err(Refused::full(payload)),
                }
            }
            let mut sample = Sample {
                payload,
                key_hash,
                status_info,
                key_flag,
                timestamp: source_timestamp,
                frag_size: 0,
                origin,
                coherent_set,
                group,
            };
            sample.frag_size = self
                .sh
                .frag_size_for(sample.payload.len(), &self.sh.inline_qos(seq, &sample));
            // Stored first: a store that refuses leaves everything as it was.
            self.sh
                .history
                .push(seq, sample)
                .map_err(|e| Refused::dropping(e.into()))?;
            if let Some(f) = oldest {
                self.sh.history.remove_below(f + 1);
            }
            if let Some(v) = victim {
                self.sh.history.remove(v);
            }
        }
        self.sh.last_seq = seq;
        self.sh.counters.samples_written += 1;
        if !self.sh.cfg.push_mode {
            for r in self.readers.iter_mut().filter(|r| r.reliable) {
                r.unsent = seq + 1;
            }
        }
        if self.next_hb.is_none() && self.readers.iter().any(|r| r.reliable) {
            self.next_hb = Some(now.get() + self.sh.cfg.heartbeat_period);
        }
        Ok(seq)
    }

    /// Handles an ACKNACK from reader `(src, an.reader_id)`. Returns true when the
    /// acknowledged state advanced (history space may have been freed, `all_acked` may have
    /// become true).
    pub fn on_acknack(&mut self, src: GuidPrefix, an: &AckNack, now: Instant) -> bool {
        self.sh.counters.acknacks_received += 1;
        let guid = Guid::new(src, an.reader_id);
        let last = self.sh.last_seq;
        let cfg = &self.sh.cfg;
        let delay = cfg.nack_response_delay;
        let Some(r) = self.readers.iter_mut().find(|r| r.guid == guid) else {
            self.sh.counters.unknown_reader += 1;
            return false;
        };
        if !r.reliable || r.last_acknack_count.is_some_and(|c| an.count <= c) {
            self.sh.counters.acknacks_ignored += 1;
            return false;
        }
        r.last_acknack_count = Some(an.count);
        let newly_synced = !r.synced;
        r.synced = true;
        let set = &an.reader_sn_state;
        if newly_synced && set.base < r.acked {
            r.lead_hb = true;
        }
        if set.base <= 0 {
            // Pre-emptive ACKNACK (Fast DDS, Connext): "tell me what you have".
            r.want_hb(false);
            return newly_synced;
        }
        let base = set.base.min(last + 1);
        let progressed = base > r.acked;
        if progressed {
            r.acked = base;
            r.recheck_backoff = 0;
        }
        if r.unsent < r.acked {
            r.unsent = r.acked;
            r.unsent_frag = 0;
        }
        if let Some((probe_seq, sent)) = r.probe {
            if base > probe_seq {
                r.probe = None;
                // Data repaired after the probe went out arrived last: time from the latest
                // repair (each ends with an ACK request that the reader answers at once).
                let i = r.resent.partition_point(|e| e.0 <= probe_seq);
                let from = r
                    .resent
                    .range(..i)
                    .map(|e| e.1)
                    .chain(
                        r.frag_resent
                            .iter()
                            .filter(|e| e.0 <= probe_seq)
                            .map(|e| e.2),
                    )
                    .fold(sent, Instant::max);
                r.rtt.sample(now.saturating_duration_since(from));
            }
        }
        // Forget repairs of acknowledged numbers.
        while r.resent.front().is_some_and(|e| e.0 < r.acked) {
            r.resent.pop_front();
        }
        let acked = r.acked;
        r.frag_resent.retain(|e| e.0 >= acked);
        let holdoff = r.rtt.holdoff(cfg);
        // Merge with what is already queued: readers suppress re-requests of repairs in
        // flight, so a newer ACKNACK that omits a number does not cancel it.
        let keep_front = r.repair.front().copied();
        r.repair.retain(|&sn| sn >= acked);
        let queued = r.repair.len();
        let mut held = 0u64;
        let mut requested = 0u64;
        let mut recheck: Option<Instant> = None;
        if set.base <= last + 1 && set.num_bits <= 256 {
            let mut k = r.resent.partition_point(|e| e.0 < set.base);
            for sn in set.iter() {
                if sn < r.acked || sn >= r.unsent {
                    continue;
                }
                while r.resent.get(k).is_some_and(|e| e.0 < sn) {
                    k += 1;
                }
                if let Some(&(_, t)) = r.resent.get(k).filter(|e| e.0 == sn) {
                    let until = t + holdoff;
                    if now < until {
                        // The last copy cannot have arrived yet when the reader asked.
                        held += 1;
                        recheck = Some(recheck.map_or(until, |x| x.min(until)));
                        continue;
                    }
                }
                requested += 1;
                if r.repair.len() < MAX_REPAIRS {
                    r.repair.push_back(sn);
                }
            }
        }
        if r.repair.len() > queued && queued > 0 {
            let v = r.repair.make_contiguous();
            v.sort_unstable();
            let mut prev = None;
            r.repair.retain(|&sn| prev.replace(sn) != Some(sn));
        }
        if r.repair.front().copied() != keep_front {
            r.repair_frag = 0;
        }
        if let Some(t) = recheck {
            r.recheck_at = Some(r.recheck_at.map_or(t, |x| x.min(t)));
        }
        if !r.repair.is_empty() {
            let due = now + delay;
            r.repair_at = Some(r.repair_at.map_or(due, |t| t.min(due)));
        } else if r.frag_repairs.is_empty() {
            r.repair_at = None;
            if !an.final_flag && r.acked <= last && held == 0 {
                r.want_hb(false);
            }
        }
        self.sh.counters.repairs_held_off += held;
        self.sh.sizer.note_requests(requested);
        self.sh.watch_loss(now);
        if progressed {
            self.gc();
        }
        progressed
    }

    /// Handles a NACK_FRAG: queues the named fragments for resending.
    pub fn on_nack_frag(&mut self, src: GuidPrefix, nf: &NackFrag, now: Instant) {
        self.sh.counters.nack_frags_received += 1;
        let guid = Guid::new(src, nf.reader_id);
        let delay = self.sh.cfg.nack_response_delay;
        let Some(r) = self.readers.iter_mut().find(|r| r.guid == guid) else {
            self.sh.counters.unknown_reader += 1;
            return;
        };
        if !r.reliable || r.last_nackfrag_count.is_some_and(|c| nf.count <= c) {
            self.sh.counters.acknacks_ignored += 1;
            return;
        }
        r.last_nackfrag_count = Some(nf.count);
        let seq = nf.writer_sn;
        let set = nf.fragment_number_state;
        if seq < r.acked
            || seq >= r.unsent
            || set.num_bits == 0
            || set.num_bits > 256
            || set.base == 0
            || set.base > u32::MAX - 256
        {
            return;
        }
        let holdoff = r.rtt.holdoff(&self.sh.cfg);
        if let Some(&(_, _, t)) = r.frag_resent.iter().find(|e| e.0 == seq && e.1 == set.base) {
            let until = t + holdoff;
            if now < until {
                // Those fragments were just resent; ask again once they had time to arrive.
                self.sh.counters.repairs_held_off += 1;
                r.recheck_at = Some(r.recheck_at.map_or(until, |x| x.min(until)));
                return;
            }
        }
        if let Some(e) = r
            .frag_repairs
            .iter_mut()
            .find(|e| e.0 == seq && e.1.base == set.base)
        {
            e.1 = set;
        } else if r.frag_repairs.len() < MAX_FRAG_REPAIRS {
            r.frag_repairs.push((seq, set));
        } else {
            return;
        }
        let due = now + delay;
        r.repair_at = Some(r.repair_at.map_or(due, |t| t.min(due)));
        self.sh.sizer.note_requests(1);
        self.sh.watch_loss(now);
    }

    /// Builds the next datagram into `out` (reusing its allocation); false when there is
    /// nothing to send now. Call until it returns false after every input.
    pub fn poll_transmit_into(&mut self, now: impl Into<Now>, out: &mut Transmit) -> bool {
        let now = &now.into();
        let n = self.readers.len();
        let last = self.sh.last_seq;
        let push = self.sh.cfg.push_mode;
        let mut full_history = None;
        // Multicast first: it carries the bulk of the new data.
        let ng = self.groups.len();
        for k in 0..ng {
            let gi = (self.grr + k) % ng;
            if !self.groups[gi].has_work(&self.readers, last) {
                continue;
            }
            let fh = *full_history.get_or_insert_with(|| !self.can_accept());
            let g = &mut self.groups[gi];
            if self.sh.fill_group(g, &mut self.readers, now, fh, out) {
                self.grr = (gi + 1) % ng;
                if self.sh.gc_needed {
                    self.gc();
                }
                return true;
            }
        }
        for k in 0..n {
            let i = (self.rr + k) % n;
            let (limit, defer_hb) = match self.readers[i].group {
                Some(gi) => {
                    let g = &self.groups[gi];
                    (g.unsent - 1, g.hb_multicast(&self.readers))
                }
                None => (last, false),
            };
            if !self.readers[i].has_work(now, limit, push, defer_hb) {
                continue;
            }
            let fh = *full_history.get_or_insert_with(|| !self.can_accept());
            if self
                .sh
                .fill(&mut self.readers[i], now, fh, limit, defer_hb, out)
            {
                self.rr = (i + 1) % n;
                if self.sh.gc_needed {
                    self.gc();
                }
                return true;
            }
        }
        if self.sh.gc_needed {
            self.gc();
        }
        false
    }

    /// Like [`WriterCore::poll_transmit_into`], allocating a new [`Transmit`].
    pub fn poll_transmit(&mut self, now: Instant) -> Option<Transmit> {
        let mut t = Transmit::new();
        self.poll_transmit_into(now, &mut t).then_some(t)
    }

    /// The next instant [`WriterCore::handle_timeout`] (or a repair in `poll_transmit`) is due.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.readers
            .iter()
            .filter_map(|r| r.repair_at)
            .chain(self.readers.iter().filter_map(|r| r.recheck_at))
            .chain(self.next_hb)
            .min()
    }

    /// Runs timers: the periodic heartbeat to readers with unacknowledged samples.
    pub fn handle_timeout(&mut self, now: Instant) {
        let last = self.sh.last_seq;
        let cfg = &self.sh.cfg;
        for r in self.readers.iter_mut() {
            if r.recheck_at.is_some_and(|t| t <= now) {
                // Learn what is still missing now that repairs had time to arrive.
                r.recheck_at = None;
                if r.reliable && r.acked <= last {
                    r.want_hb(false);
                    if r.resent.back().is_some_and(|e| e.0 >= r.acked) {
                        // Repairs still unacknowledged: keep asking, less and less often.
                        let d = (r.rtt.holdoff(cfg).max(MIN_RECHECK)
                            * (1 << r.recheck_backoff.min(16)))
                        .min(cfg.heartbeat_period.max(MIN_RECHECK));
                        r.recheck_backoff = r.recheck_backoff.saturating_add(1);
                        r.recheck_at = Some(now + d);
                    }
                }
            }
        }
        let Some(t) = self.next_hb else { return };
        if t > now {
            return;
        }
        let period = self.sh.cfg.heartbeat_period;
        let mut next = None::<Instant>;
        for r in self.readers.iter_mut().filter(|r| r.reliable) {
            if !r.synced {
                // A reader that has not answered yet: asked soon after it matched, then
                // less and less often.
                if r.unsynced_next <= now {
                    r.want_hb(false);
                    r.unsynced_hbs = r.unsynced_hbs.saturating_add(1);
                    r.unsynced_next = now + unsynced_period(r.unsynced_hbs, period);
                }
                next = Some(next.map_or(r.unsynced_next, |t| t.min(r.unsynced_next)));
            } else if r.acked <= last {
                // Unacknowledged data: ask again.
                r.want_hb(false);
                next = Some(next.map_or(now + period, |t| t.min(now + period)));
            }
        }
        self.next_hb = next;
    }

    /// Whether every matched reliable reader acknowledged `seq`.
    pub fn is_acked_by_all(&self, seq: SequenceNumber) -> bool {
        self.readers
            .iter()
            .filter(|r| r.reliable)
            .all(|r| r.acked > seq)
    }

    /// Whether every sample written so far is acknowledged by every reliable reader
    /// (`wait_for_acknowledgments`).
    pub fn all_acked(&self) -> bool {
        self.is_acked_by_all(self.sh.last_seq)
    }

    /// Drops sample `seq` from the retained history (its LIFESPAN ran out): it is never sent
    /// again, and a reader that still needs it is told it is gone. Returns whether it was held.
    pub fn remove_retained(&mut self, seq: SequenceNumber) -> bool {
        self.sh.history.remove(seq)
    }

    /// A HEARTBEAT that asserts this writer's liveliness (the L flag; MANUAL_BY_TOPIC
    /// `assert_liveliness`), addressed to every reader and asking for no answer. Its range is
    /// the retained history, like any other HEARTBEAT of this writer.
    pub fn liveliness_heartbeat(&mut self) -> crate::wire::Heartbeat {
        let mut hb = self
            .sh
            .heartbeat_from(crate::types::EntityId::UNKNOWN, 1, true);
        hb.liveliness_flag = true;
        hb
    }
}

#[cfg(test)]
mod tests;
