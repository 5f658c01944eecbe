//! The discovery engine seam: how a participant finds remote participants and endpoints.
//!
//! A [`DiscoveryEngine`] is a sans-IO state machine. The runtime feeds it the local endpoints to
//! announce, the built-in submessages it owns ([`DiscoveryEngine::owns`]) and timeouts; it
//! polls datagrams to send ([`Transmit`]s: owned submessages plus destination locators, which the
//! runtime encodes into its own send buffer) and [`EngineEvent`]s to apply to its endpoints.
//! Nothing here knows of sockets, threads, clocks, `Topic<T>` or user types.
//!
//! Standard SPDP/SEDP is [`super::SimpleDiscovery`]. A discovery-server client (Fast DDS's
//! protocol) or a per-node discovery service is another implementation of the same trait: the
//! data path (user writers and readers) only ever sees [`EngineEvent`]s.
//!
//! Matching a participant's own writers with its own readers is not an engine's business (it
//! is the same for every protocol and needs no network): see [`super::LocalMatcher`].

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{
    DiscoveredReaderData, DiscoveredWriterData, LostReason, RemoteEndpointInfo, SpdpParticipantData,
};
use crate::qos::QosPolicyId;
use crate::types::{EntityId, Guid, GuidPrefix, Locator, Locators};
use crate::wire::ReceivedSubmessage;
use crate::writer::Transmit;

/// Chooses which of a peer's announced locators this participant sends to (the runtime knows its
/// transports; the engine does not). Implementations return the locators of the most preferred
/// transport that reaches any, at most [`Locators::CAPACITY`].
pub trait LocatorSelector: Send + Sync {
    /// The announced locators to use; empty when none is reachable.
    fn select(&self, announced: &[Locator]) -> Locators;
}

/// Takes every announced locator (up to [`Locators::CAPACITY`]): for tests and single-transport
/// setups where every locator is reachable.
#[derive(Debug, Clone, Copy, Default)]
pub struct SelectAll;

impl LocatorSelector for SelectAll {
    fn select(&self, announced: &[Locator]) -> Locators {
        announced.iter().copied().collect()
    }
}

/// What a discovery engine tells the runtime.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EngineEvent {
    /// A remote participant was discovered (what it announced about itself).
    ParticipantDiscovered(Arc<SpdpParticipantData>),
    /// A known participant re-announced itself with different data (e.g. its user data).
    ParticipantUpdated(Arc<SpdpParticipantData>),
    /// A remote participant is gone. Its endpoints' `Unmatched` events come before this one.
    ParticipantLost {
        /// Its prefix.
        prefix: GuidPrefix,
        /// Lease expiry or its own dispose.
        reason: LostReason,
    },
    /// A remote writer or reader was announced, or re-announced with different data (what
    /// the DCPSPublication and DCPSSubscription built-in topics show), whether or not it
    /// matches a local endpoint. Comes before its `Matched`.
    RemoteEndpoint(RemoteEndpointInfo),
    /// A remote writer or reader is gone (disposed, or its participant lost). Comes after its
    /// `Unmatched` events.
    RemoteEndpointLost(Guid),
    /// A local endpoint now matches a remote one.
    Matched {
        /// The local writer or reader.
        local: Guid,
        /// The remote reader or writer, with the locators to reach it.
        remote: RemoteEndpointInfo,
    },
    /// A matched remote endpoint re-announced itself (or its participant moved its default
    /// locators) and still matches: the local endpoint should refresh what it keeps of it.
    MatchUpdated {
        /// The local writer or reader.
        local: Guid,
        /// The remote's new data.
        remote: RemoteEndpointInfo,
    },
    /// A match ended.
    Unmatched {
        /// The local writer or reader.
        local: Guid,
        /// The remote reader or writer.
        remote: Guid,
        /// The remote's participant was lost by lease expiry (a liveliness loss rather than
        /// a deletion).
        lost: bool,
    },
    /// A local and a remote endpoint on the same topic have incompatible QoS.
    IncompatibleQos {
        /// The local writer or reader.
        local: Guid,
        /// The remote reader or writer.
        remote: Guid,
        /// Every incompatible policy.
        policies: Vec<QosPolicyId>,
    },
    /// A remote participant asserted the liveliness of its writers (a ParticipantMessageData
    /// of the writer liveliness protocol): its MANUAL_BY_PARTICIPANT writers when `manual`,
    /// its AUTOMATIC ones otherwise.
    LivelinessAsserted {
        /// The participant.
        prefix: GuidPrefix,
        /// MANUAL rather than AUTOMATIC.
        manual: bool,
    },
}

/// A discovery protocol, sans-IO. Object-safe: the runtime holds a `Box<dyn DiscoveryEngine>`.
///
/// After every input call the runtime drains [`poll_transmit`](Self::poll_transmit) and
/// [`poll_event`](Self::poll_event), and calls [`handle_timeout`](Self::handle_timeout) no
/// later than [`poll_timeout`](Self::poll_timeout). Time enters only through `now`.
pub trait DiscoveryEngine: Send {
    /// Whether submessages exchanged with the built-in endpoint `entity` (the writer id of
    /// DATA/HEARTBEAT/GAP, or of ACKNACK/NACK_FRAG) are the engine's to handle.
    fn owns(&self, entity: EntityId) -> bool;

    /// Announces a local writer, or re-announces it with new data (same GUID).
    fn announce_writer(&mut self, data: DiscoveredWriterData, now: Instant);

    /// Announces a local reader, or re-announces it with new data (same GUID).
    fn announce_reader(&mut self, data: DiscoveredReaderData, now: Instant);

    /// Withdraws a local writer or reader (deleted).
    fn withdraw(&mut self, guid: Guid, now: Instant);

    /// A received submessage for an entity the engine [`owns`](Self::owns).
    fn handle_submessage(&mut self, rs: &ReceivedSubmessage<'_>, now: Instant);

    /// Runs what is due at `now` (announcements, leases, heartbeats, repairs).
    fn handle_timeout(&mut self, now: Instant);

    /// When [`handle_timeout`](Self::handle_timeout) next has work.
    fn poll_timeout(&self) -> Option<Instant>;

    /// The participant is leaving: queue what tells peers so (their matches end at once
    /// rather than at lease expiry). Further inputs are not expected.
    fn shutdown(&mut self, now: Instant);

    /// Fills `out` with the next datagram to send and returns true, or returns false when
    /// nothing is ready. `out` is reused across calls to keep allocations low.
    fn poll_transmit(&mut self, now: Instant, out: &mut Transmit) -> bool;

    /// The next event, if any.
    fn poll_event(&mut self) -> Option<EngineEvent>;

    /// How many received built-in samples were dropped so far as the peer's fault
    /// (undecodable, forged); the runtime logs when it grows.
    fn rejected(&self) -> u64;

    /// The application asserted the liveliness of this participant's MANUAL_BY_PARTICIPANT
    /// writers: tell the peers (writer liveliness protocol). Engines without the protocol
    /// ignore it; their peers then see those writers alive only through their samples.
    fn assert_manual_liveliness(&mut self, _now: Instant) {}

    /// The shortest lease of this participant's AUTOMATIC writers (`None`: no finite one):
    /// an engine with the writer liveliness protocol asserts them periodically.
    fn set_automatic_liveliness(&mut self, _lease: Option<Duration>, _now: Instant) {}

    /// The remote writers and readers known on `topic`, matched or not (engines that keep no
    /// such table return none).
    fn remote_endpoints_on_topic(&self, _topic: &str) -> Vec<super::RemoteEndpointInfo> {
        Vec::new()
    }

    /// Every remote writer and reader known (for bridges and node services, which forward
    /// whatever topics appear). Engines that keep no endpoint table return none.
    fn remote_endpoints(&self) -> Vec<super::RemoteEndpointInfo> {
        Vec::new()
    }

    /// Every remote writer known, matched or not (a durability service watches them for
    /// TRANSIENT and PERSISTENT ones): the writers of [`DiscoveryEngine::remote_endpoints`].
    fn remote_writers(&self) -> Vec<std::sync::Arc<super::DiscoveredWriterData>> {
        self.remote_endpoints()
            .into_iter()
            .filter_map(|e| match e {
                super::RemoteEndpointInfo::Writer(w) => Some(w),
                super::RemoteEndpointInfo::Reader(_) => None,
            })
            .collect()
    }
}
