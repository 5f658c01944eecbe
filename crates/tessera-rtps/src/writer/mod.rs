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

mod ack;
mod adapt;
mod coherent;
mod emit;
mod filtered;
mod history;
mod matching;
mod multicast;
pub mod store;
mod timer;
pub mod transmit;
mod write;

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::types::{Guid, Locators, SequenceNumber, Timestamp};
use crate::wire::FragmentNumberSet;
// The unit tests (`use super::*`) name these; the code using them is in `ack`.
#[cfg(test)]
use crate::wire::{AckNack, NackFrag};
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
