//! The runtime's view of local endpoints, erased over the topic type, and the send path shared by
//! every endpoint.

use crate::runtime::RuntimeContext;
use std::cell::RefCell;
use std::sync::{Arc, Weak};
use std::time::Instant;
use tessera_rtps::reader::Delivered;
use tessera_rtps::types::{Guid, Locator, Locators};
use tessera_rtps::wire::ReceivedSubmessage;

/// What discovery knows of a matched remote endpoint, as a local endpoint needs it.
#[derive(Debug, Clone)]
pub(crate) struct RemoteEndpoint {
    pub guid: Guid,
    /// Whether the remote side asked for / offers reliable delivery.
    pub reliable: bool,
    /// Whether the remote reader wants the retained history (TRANSIENT_LOCAL or stronger).
    pub durable: bool,
    /// Where to send to it (unicast).
    pub locators: Locators,
    /// The multicast locators a remote reader listens on (its own, or its participant's
    /// default ones when it announced no locator), reachable by our transports; empty for
    /// writers, local readers, and when this participant sends no user data by multicast.
    pub multicast: Locators,
    /// A remote ATOMIC endpoint's consensus address (its participant's group member).
    #[cfg_attr(not(feature = "atomic"), allow(dead_code))]
    pub consensus: Option<Locator>,
    /// A writer's terms that its readers enforce (defaults for a reader): OWNERSHIP_STRENGTH,
    /// LIFESPAN, LIVELINESS.
    pub writer_terms: WriterQosTerms,
    /// A remote reader's content filter (PID_CONTENT_FILTER_PROPERTY), for writer-side
    /// filtering; `None` for writers and local readers.
    pub content_filter: Option<tessera_rtps::discovery::ContentFilterProperty>,
    /// A remote reader's TIME_BASED_FILTER minimum separation, for filtering at the writer;
    /// zero for writers and local readers.
    pub min_separation: std::time::Duration,
    /// Whether a remote reader asked for coherent access (PRESENTATION): one that did not is
    /// sent a GAP for a coherent set's end marker instead of the marker. True for writers and
    /// local readers.
    pub coherent_access: bool,
    /// A reader's plain layout hash for zero-copy loans (PID_TESSERA_LOAN_LAYOUT; a reader
    /// of this participant announces it too): the loan references it resolves. 0 for writers
    /// and for readers that take serialized samples only.
    pub loan_layout: u64,
    /// A reader that copies large serialized samples out of a writer's shared-memory chunks
    /// (see `publication/cdr_chunks.rs`); false for writers, for readers of this participant
    /// and for other vendors' readers.
    pub cdr_chunks: bool,
}

/// The policies of a writer that its readers enforce at run time.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct WriterQosTerms {
    pub strength: i32,
    pub lifespan: tessera_rtps::qos::Lifespan,
    pub liveliness: tessera_rtps::qos::Liveliness,
}

impl WriterQosTerms {
    /// The terms of a writer announcing `qos`.
    pub fn of(qos: &tessera_rtps::qos::WriterSideQos) -> WriterQosTerms {
        WriterQosTerms {
            strength: qos.ownership_strength.0,
            lifespan: qos.lifespan,
            liveliness: qos.liveliness,
        }
    }
}

/// A local data writer as the receive and event threads see it.
pub(crate) trait LocalWriter: Send + Sync {
    /// An ACKNACK or NACK_FRAG for this writer.
    fn handle(&self, ctx: &RuntimeContext, rs: &ReceivedSubmessage<'_>, now: Instant);
    /// Timers; returns the next deadline.
    fn on_timeout(&self, ctx: &RuntimeContext, now: Instant) -> Option<Instant>;
    /// A reader matched. One of this participant (`remote.guid` has our prefix) comes with
    /// `local`, the endpoint itself, which the writer then hands its samples directly (`None`
    /// if it was deleted meanwhile).
    fn matched(
        &self,
        ctx: &RuntimeContext,
        remote: &RemoteEndpoint,
        local: Option<Arc<dyn LocalReader>>,
        now: Instant,
    );
    /// A remote reader went away.
    fn unmatched(&self, remote: Guid);
    /// A remote reader was found with incompatible QoS (DDS policy ids).
    fn incompatible(&self, policies: &[u32]);
    /// `DomainParticipant::assert_liveliness`: a MANUAL_BY_PARTICIPANT writer asserts its own.
    fn assert_participant_liveliness(&self) {}
}

/// A local data reader as the receive and event threads see it.
pub(crate) trait LocalReader: Send + Sync {
    /// The reader's GUID.
    fn guid(&self) -> Guid;
    /// DATA, DATA_FRAG, HEARTBEAT, HEARTBEAT_FRAG or GAP from a matched writer. One submessage
    /// at a time: handing a datagram's whole batch over as one run (one DATA_AVAILABLE per
    /// datagram) measured 30-40 % less 16 B throughput over UDP and shared memory (the writer,
    /// no longer held back by a busy reader, lost more to contention than the reader saved).
    fn handle(&self, ctx: &RuntimeContext, rs: &ReceivedSubmessage<'_>, now: Instant);
    /// Timers; returns the next deadline.
    fn on_timeout(&self, ctx: &RuntimeContext, now: Instant) -> Option<Instant>;
    /// A remote writer matched.
    fn matched(&self, ctx: &RuntimeContext, remote: &RemoteEndpoint, now: Instant);
    /// A remote writer went away; `lost` when its participant's lease expired (liveliness lost)
    /// rather than it being deleted.
    fn unmatched(&self, remote: Guid, lost: bool);
    /// A remote writer was found with incompatible QoS (DDS policy ids).
    fn incompatible(&self, policies: &[u32]);
    /// A sample of a writer of this participant, handed over in the writer's thread: put,
    /// serialized, into the history at once (sharing the writer's buffer when `shared` is
    /// given), with no reliability protocol on the way. Runs
    /// under the writer's lock (which keeps its samples in order), so it raises no status: the
    /// writer passes the outcome to [`LocalReader::notify_local`] once its lock is released.
    ///
    /// A reliable writer passes itself as `holder`: if the history refuses the sample for its
    /// resource limits, the reader records the holder (under its history lock, so that no `take`
    /// can slip between the refusal and the record) and calls [`LocalHolder::redeliver`] once
    /// it made room. The writer keeps the refused sample meanwhile.
    fn deliver_local(
        &self,
        sample: &Delivered<'_>,
        shared: Option<&Arc<Vec<u8>>>,
        holder: Option<&Weak<dyn LocalHolder>>,
    ) -> LocalOutcome;
    /// Raises the statuses (and runs the listener) for what `deliver_local` did.
    fn notify_local(&self, ctx: &RuntimeContext, outcome: LocalOutcome);
    /// The local writer `writer` asserted its liveliness at `now` (called with no lock held).
    fn writer_asserted(&self, _writer: Guid, _now: Instant) {}
    /// The remote participant `prefix` asserted its MANUAL_BY_PARTICIPANT (`manual`) or
    /// AUTOMATIC writers alive (writer liveliness protocol).
    fn participant_asserted(
        &self,
        _prefix: tessera_rtps::types::GuidPrefix,
        _manual: bool,
        _now: Instant,
    ) {
    }
}

/// A writer of this participant that keeps samples a reliable local reader refused for lack of
/// room (the local counterpart of an unacknowledged sample).
pub(crate) trait LocalHolder: Send + Sync {
    /// Reader `reader` made room: hand it what is kept for it, in order, until it refuses
    /// again. Called with no lock held (it takes the writer's lock, then the reader's history
    /// lock).
    fn redeliver(&self, ctx: &RuntimeContext, reader: Guid);
}

/// What handing samples to a local reader did to it.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct LocalOutcome {
    /// The history changed (DATA_AVAILABLE).
    pub available: bool,
    /// Samples refused by resource limits (SAMPLE_REJECTED).
    pub rejected: u32,
    /// Samples the writer dropped before this reader had them (SAMPLE_LOST): a KEEP_LAST
    /// writer replacing samples it kept for a reader that refused them.
    pub lost: u32,
    /// A group coherent set took the sample (GROUP access scope): the subscriber may have
    /// a set to show once the writer's locks are released.
    pub group: bool,
}

impl LocalOutcome {
    /// Adds another outcome to this one.
    pub fn merge(&mut self, o: LocalOutcome) {
        self.available |= o.available;
        self.rejected += o.rejected;
        self.lost += o.lost;
        self.group |= o.group;
    }

    /// Whether there is a status to raise.
    pub fn is_news(&self) -> bool {
        self.available || self.rejected > 0 || self.lost > 0 || self.group
    }
}

thread_local! {
    /// Each thread encodes outgoing datagrams into its own reusable buffer.
    static SEND_BUF: RefCell<Vec<u8>> = RefCell::new(Vec::with_capacity(65536));
}

/// Runs `f` with this thread's send buffer.
pub(crate) fn with_send_buf<R>(f: impl FnOnce(&mut Vec<u8>) -> R) -> R {
    SEND_BUF.with(|b| f(&mut b.borrow_mut()))
}

/// Sends one encoded datagram to every locator without blocking, from any thread: what a
/// destination cannot take now waits in its send queue (see [`crate::outbox::SendQueues`]).
/// `tos`: the datagram's traffic class (IP TOS byte; 0: unmarked).
pub(crate) fn send_datagram(ctx: &RuntimeContext, buf: &[u8], dests: &[Locator], tos: u8) {
    send_datagram_parts(ctx, &[buf], dests, tos);
}

/// [`send_datagram`] of the datagram made of `parts` one after the other (headers and the
/// payloads they frame, each where it lies).
pub(crate) fn send_datagram_parts(
    ctx: &RuntimeContext,
    parts: &[&[u8]],
    dests: &[Locator],
    tos: u8,
) {
    for l in dests {
        ctx.send_queues.send(ctx, parts, l, tos);
    }
}
