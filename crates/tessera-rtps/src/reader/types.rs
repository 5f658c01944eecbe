//! The reader's public types: its configuration, the samples it hands to the application,
//! the application's verdict on each, and its counters.

use std::borrow::Cow;
use std::time::Duration;

use crate::budget::SharedBudget;
use crate::frag::FragLimits;
use crate::types::{Guid, SequenceNumber, Timestamp};
use crate::wire::PayloadKind;

// The docs here link to `ReaderCore`.
#[cfg(doc)]
use super::ReaderCore;

/// Configuration of a [`ReaderCore`].
#[derive(Debug, Clone)]
pub struct ReaderConfig {
    /// The reader's GUID.
    pub guid: Guid,
    /// Delay before answering a HEARTBEAT that asks for an answer when nothing is missing.
    /// Default 0.
    pub ack_delay: Duration,
    /// Delay before answering a *final* HEARTBEAT that reveals missing samples (lets
    /// reordered datagrams arrive). Default 1 ms.
    pub nack_delay: Duration,
    /// A sequence number or fragment is not requested again within this time, at least (the
    /// measured repair round trip may lengthen it). Default 5 ms.
    pub nack_suppression: Duration,
    /// Longest suppression, however slow repairs are. Default 500 ms.
    pub nack_suppression_max: Duration,
    /// Out-of-order samples buffered per writer, as a window above `next`. Default 512.
    pub max_window: usize,
    /// Bytes of buffered out-of-order samples, all writers together. Default 64 MiB.
    pub max_buffered_bytes: usize,
    /// Fragment reassembly limits.
    pub frag: FragLimits,
    /// A pool the out-of-order bytes are also drawn from (shared with other readers, e.g. a
    /// whole participant's). Default none.
    pub shared_buffered: Option<SharedBudget>,
    /// A pool the reassembly bytes are also drawn from. Default none.
    pub shared_reassembly: Option<SharedBudget>,
}

impl ReaderConfig {
    /// Defaults (see the fields).
    pub fn new(guid: Guid) -> Self {
        ReaderConfig {
            guid,
            ack_delay: Duration::ZERO,
            nack_delay: Duration::from_millis(1),
            nack_suppression: Duration::from_millis(5),
            nack_suppression_max: Duration::from_millis(500),
            max_window: 8192,
            max_buffered_bytes: 64 << 20,
            frag: FragLimits::default(),
            shared_buffered: None,
            shared_reassembly: None,
        }
    }
}

/// A sample handed to the application side.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivered<'a> {
    /// The writer.
    pub writer: Guid,
    /// Its sequence number.
    pub seq: SequenceNumber,
    /// Full sample, key only, or nothing (dispose by key hash).
    pub kind: PayloadKind,
    /// The serialized payload (encapsulation header included); borrowed from the receive
    /// buffer when the sample arrived in order.
    pub payload: Cow<'a, [u8]>,
    /// PID_STATUS_INFO flags (1 disposed, 2 unregistered), 0 if absent.
    pub status_info: u32,
    /// PID_KEY_HASH if present.
    pub key_hash: Option<[u8; 16]>,
    /// Source timestamp (INFO_TS), if any.
    pub source_timestamp: Option<Timestamp>,
    /// For a sample relayed by another writer (a durability service's replay), the original
    /// writer and its sequence number (PID_ORIGINAL_WRITER_INFO); `writer`/`seq` are then the
    /// relay's.
    pub original: Option<(Guid, SequenceNumber)>,
    /// PID_COHERENT_SET: the number of the first sample of the writer's coherent set this
    /// one belongs to, or [`COHERENT_SET_END`](crate::writer::COHERENT_SET_END) on the
    /// payload-less DATA that ends a set.
    pub coherent_set: Option<SequenceNumber>,
    /// GROUP access scope: PID_GROUP_COHERENT_SET, PID_GROUP_SEQ_NUM and
    /// PID_WRITER_GROUP_INFO (see [`GroupTag`](crate::writer::GroupTag)).
    pub group: Option<crate::writer::GroupTag>,
}

/// What the application did with a [`Delivered`] sample: the delivery callback's answer.
///
/// A reliable reader treats a refused sample as not received: `next` stays at it, it is not
/// acknowledged (the ACKNACK base stays at it), and the writer resends it when asked (call
/// [`ReaderCore::resume`] once there is room). A best-effort reader drops it. Callbacks that
/// return `()` accept everything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The application took the sample.
    Accepted,
    /// The application had no room for it (e.g. a full KEEP_ALL history).
    Refused,
}

impl From<()> for Verdict {
    fn from(_: ()) -> Self {
        Verdict::Accepted
    }
}

/// Statistics of a [`ReaderCore`]; every dropped input is counted somewhere here.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReaderCounters {
    /// Samples delivered (accepted by the application).
    pub delivered: u64,
    /// Samples the application refused, each counted once however often it is resent.
    pub refused: u64,
    /// Resent samples the application refused again.
    pub refused_again: u64,
    /// Submessages from writers that are not matched.
    pub unknown_writer: u64,
    /// Samples or fragments already delivered or buffered.
    pub duplicates: u64,
    /// Samples too far ahead of `next`, or over the buffered-bytes budget.
    pub out_of_window: u64,
    /// Fragments with inconsistent sizes/numbers, or samples over the size limit.
    pub bad_fragment: u64,
    /// Fragments refused for lack of reassembly room.
    pub fragment_no_room: u64,
    /// Partial samples dropped by timeout.
    pub fragment_expired: u64,
    /// Sequence numbers skipped because the writer no longer has them.
    pub lost: u64,
    /// Malformed HEARTBEAT/GAP/DATA (e.g. sequence number 0 or above 2^62).
    pub invalid: u64,
    /// HEARTBEAT/HEARTBEAT_FRAG with a count not above the last one (duplicated or
    /// reordered datagrams).
    pub stale_heartbeats: u64,
    /// ACKNACKs sent.
    pub acknacks_sent: u64,
    /// NACK_FRAGs sent.
    pub nack_frags_sent: u64,
    /// Writers asked again at once because the application made room after refusing their
    /// samples ([`ReaderCore::resume`]), instead of at their next backed-off probe.
    pub resumed: u64,
}
