//! The RTPS reader state machine ([`ReaderCore`]): ordering, duplicates, ACKNACK/NACK_FRAG,
//! reassembly.
//!
//! # Model
//! One `ReaderCore` per local reader, driven from the receive thread:
//! [`ReaderCore::on_data`], [`ReaderCore::on_data_frag`], [`ReaderCore::on_heartbeat`],
//! [`ReaderCore::on_heartbeat_frag`], [`ReaderCore::on_gap`] take decoded submessages (borrowing
//! the receive buffer) and call `deliver` for each sample that becomes deliverable (it may
//! refuse it, see [Refusal](#refusal)); then
//! [`ReaderCore::poll_transmit_into`] yields the ACKNACK/NACK_FRAG datagrams, and
//! [`ReaderCore::poll_timeout`]/[`ReaderCore::handle_timeout`] run the timers.
//!
//! # Per-writer state
//! Each matched writer has a proxy with `next` (the next sequence number to deliver) and a
//! ring of out-of-order slots indexed by `seq - next` (bounded by
//! [`ReaderConfig::max_window`]). A sample equal to `next` is delivered straight from the
//! receive buffer (`Cow::Borrowed`: no copy, no allocation); only out-of-order samples are
//! copied. A HEARTBEAT whose `first_sn` is above `next` means the samples below are gone for
//! good: they are skipped (counted as lost). A GAP marks numbers irrelevant.
//!
//! The proxy starts at sequence number 1. Samples that arrive before the writer's first
//! HEARTBEAT and are not number 1 wait in the ring; the HEARTBEAT's `first_sn` then tells
//! where this reader's stream starts (a volatile late joiner skips what came before).
//!
//! # Acknowledgements
//! A HEARTBEAT is answered when something is missing (at once if its final flag is clear,
//! after [`ReaderConfig::nack_delay`] otherwise) or when it asks for an answer (final flag
//! clear). The ACKNACK's base is `next`; its bitmap lists missing numbers up to the highest
//! known, except samples being reassembled, whose missing fragments go in NACK_FRAGs instead.
//! A number requested less than a suppression time ago is not requested again, so repairs in
//! flight are not duplicated. That time follows the measured repair round trip (from a NACK to
//! the first repaired sample that arrives: smoothed + 4 × deviation), within
//! [`ReaderConfig::nack_suppression`]..[`ReaderConfig::nack_suppression_max`]: on a congested
//! path the round trip includes the bottleneck queue, and asking again sooner only makes the
//! writer resend what is still queued.
//!
//! # Refusal
//! The `deliver` callback may answer [`Verdict::Refused`] (the application has no room, e.g. a
//! full KEEP_ALL history). From a reliable writer, a refused sample counts as not received:
//! `next` stays at it (it is neither delivered, skipped nor lost), so the ACKNACK base stays
//! at it and the writer keeps it; the sample itself is dropped (buffered ones behind it stay
//! buffered) and resent when requested. While the reader refuses, its ACKNACKs request only
//! `next` (a probe), not everything missing, and each probe the application refuses again
//! doubles the time to the next one (up to [`ReaderConfig::nack_suppression_max`]), so a
//! reader that does not take costs a few repairs a second, not a storm. [`ReaderCore::resume`] ends that when the
//! application made room: the full request goes out at once. A HEARTBEAT whose `first_sn` is
//! above a refused sample still skips it (the writer no longer has it: counted as lost).
//!
//! # Acknowledgment hold
//! An application that took a sample but may not have it acknowledged yet (a replicated
//! durability service, until its group committed the sample) holds it:
//! [`ReaderCore::hold_acknowledgment`] keeps the ACKNACK base to that writer at the lowest held
//! sample, so the writer keeps it and what follows; repairs of samples past `next` are still
//! requested (within the bitmap's 256 numbers from the held base).
//! [`ReaderCore::set_acknowledgment_hold`] moves or lifts the hold.
//!
//! Best-effort writers: a sample newer than the last delivered one is delivered at once;
//! older ones and duplicates are dropped. Nothing is ever sent to them. Once a first sample or
//! GAP from such a writer has arrived, every number it skips without a GAP is counted as lost
//! (a writer leaves numbers out on purpose only with a GAP: samples its filters drop, history it
//! no longer has); before that the stream simply starts where the first one is.

mod ack;
mod deliver;
mod matching;
mod proxy;
mod receive;
mod types;

use crate::budget::Budget;
pub use crate::writer::transmit::{Destination, InlineQos, OutSubmessage, Transmit};
use proxy::WriterProxy;
pub use types::{Delivered, ReaderConfig, ReaderCounters, Verdict};

/// Reader-wide mutable state besides the proxies (split for borrowing).
#[derive(Debug)]
struct Shared {
    cfg: ReaderConfig,
    counters: ReaderCounters,
    acknack_count: i32,
    nackfrag_count: i32,
    reassembly_bytes: Budget,
    buffered_bytes: Budget,
}

/// The state machine of one RTPS reader. See the [module docs](self).
#[derive(Debug)]
pub struct ReaderCore {
    sh: Shared,
    writers: Vec<WriterProxy>,
    rr: usize,
}

#[cfg(test)]
mod tests;
