//! Pieces every discovery engine's built-in endpoints share: the SEDP writer configuration,
//! feeding a built-in reader core, and turning database decisions into engine events.

use crate::reader::{Delivered, ReaderCore};
use crate::types::{EntityId, Guid, GuidPrefix, SequenceNumber, Timestamp};
use crate::wire::{PayloadKind, ReceivedSubmessage, Submessage};
use crate::writer::{HistoryKind, WriterConfig, WriterCore};
use std::sync::Arc;
use std::time::Instant;

use super::{DiscoveryEvent, EngineEvent};

/// SEDP writers: reliable, transient-local, keep-last 1 per endpoint (keyed by GUID).
pub(super) fn sedp_writer_config(guid: Guid) -> WriterConfig {
    let mut c = WriterConfig::new(guid);
    c.reliable = true;
    c.transient_local = true;
    c.history = HistoryKind::KeepLast(1);
    c
}

/// A sample a built-in reader delivered, copied out of the core's callback.
#[derive(Debug, Clone)]
pub(super) struct BuiltinSample {
    /// The writer.
    pub writer: Guid,
    /// Its sequence number.
    pub seq: SequenceNumber,
    pub kind: PayloadKind,
    pub payload: Vec<u8>,
    pub status: u32,
    pub key_hash: Option<[u8; 16]>,
}

/// Hands DATA, DATA_FRAG, HEARTBEAT(_FRAG) or GAP to a built-in reader core and returns what
/// it delivered, in order.
pub(super) fn feed_reader(
    core: &mut ReaderCore,
    rs: &ReceivedSubmessage<'_>,
    now: Instant,
) -> Vec<BuiltinSample> {
    let mut received = Vec::new();
    let mut deliver = |d: Delivered<'_>| {
        received.push(BuiltinSample {
            writer: d.writer,
            seq: d.seq,
            kind: d.kind,
            payload: d.payload.into_owned(),
            status: d.status_info,
            key_hash: d.key_hash,
        });
    };
    let src = rs.source_prefix;
    match &rs.submessage {
        Submessage::Data(d) => core.on_data(src, d, rs.timestamp, now, &mut deliver),
        Submessage::DataFrag(d) => core.on_data_frag(src, d, rs.timestamp, now, &mut deliver),
        Submessage::Heartbeat(h) => core.on_heartbeat(src, h, now, &mut deliver),
        Submessage::HeartbeatFrag(h) => core.on_heartbeat_frag(src, h, now),
        Submessage::Gap(g) => core.on_gap(src, g, now, &mut deliver),
        _ => {}
    }
    received
}

/// The engine event for a database decision; None for those the runtime does not need.
/// Unmatches of a participant in `expired` (lost by lease) are liveliness losses.
pub(super) fn engine_event(ev: DiscoveryEvent, expired: &[GuidPrefix]) -> Option<EngineEvent> {
    Some(match ev {
        DiscoveryEvent::ParticipantDiscovered(d) => EngineEvent::ParticipantDiscovered(d),
        DiscoveryEvent::ParticipantUpdated(d) => EngineEvent::ParticipantUpdated(d),
        DiscoveryEvent::ParticipantLost { prefix, reason } => {
            EngineEvent::ParticipantLost { prefix, reason }
        }
        DiscoveryEvent::Matched { local, remote } => EngineEvent::Matched { local, remote },
        DiscoveryEvent::MatchUpdated { local, remote } => {
            EngineEvent::MatchUpdated { local, remote }
        }
        DiscoveryEvent::Unmatched { local, remote } => EngineEvent::Unmatched {
            local,
            remote,
            lost: expired.contains(&remote.prefix),
        },
        DiscoveryEvent::IncompatibleQos {
            local,
            remote,
            policies,
        } => EngineEvent::IncompatibleQos {
            local,
            remote,
            policies,
        },
        DiscoveryEvent::RemoteEndpointDiscovered(info)
        | DiscoveryEvent::RemoteEndpointUpdated(info) => EngineEvent::RemoteEndpoint(info),
        DiscoveryEvent::RemoteEndpointLost { guid } => EngineEvent::RemoteEndpointLost(guid),
    })
}

/// Hands an ACKNACK or NACK_FRAG for one of the SEDP writers to it; false when `rs` is neither.
pub(super) fn feed_sedp_writers(
    publications: &mut WriterCore,
    subscriptions: &mut WriterCore,
    rs: &ReceivedSubmessage<'_>,
    now: Instant,
) -> bool {
    let src = rs.source_prefix;
    match &rs.submessage {
        Submessage::AckNack(a) => {
            match a.writer_id {
                EntityId::SEDP_PUBLICATIONS_WRITER => publications.on_acknack(src, a, now),
                EntityId::SEDP_SUBSCRIPTIONS_WRITER => subscriptions.on_acknack(src, a, now),
                _ => return false,
            };
            true
        }
        Submessage::NackFrag(n) => {
            match n.writer_id {
                EntityId::SEDP_PUBLICATIONS_WRITER => publications.on_nack_frag(src, n, now),
                EntityId::SEDP_SUBSCRIPTIONS_WRITER => subscriptions.on_nack_frag(src, n, now),
                _ => return false,
            }
            true
        }
        _ => false,
    }
}

/// The writer a reader-side submessage (DATA, DATA_FRAG, HEARTBEAT(_FRAG), GAP) comes from.
pub(super) fn reader_input_writer(sm: &Submessage<'_>) -> Option<EntityId> {
    Some(match sm {
        Submessage::Data(d) => d.writer_id,
        Submessage::DataFrag(d) => d.writer_id,
        Submessage::Heartbeat(h) => h.writer_id,
        Submessage::HeartbeatFrag(h) => h.writer_id,
        Submessage::Gap(g) => g.writer_id,
        _ => return None,
    })
}

/// The source timestamp at `now` of an engine whose wall clock read `origin.1` nanoseconds at
/// `origin.0` (sans-IO engines read no clock). Even, as the runtime's timestamps: ddsperf reads
/// an odd one as a ping.
pub(super) fn wall_clock(origin: (Instant, i64), now: Instant) -> Timestamp {
    let since = now.saturating_duration_since(origin.0).as_nanos();
    Timestamp::from_nanos(origin.1.saturating_add(since as i64) & !1)
}

/// How long an engine's SEDP writers hold their output after a local announcement.
pub const SEDP_COALESCE: std::time::Duration = std::time::Duration::from_millis(2);

/// Holds an engine's SEDP writers' output for [`SEDP_COALESCE`] after a local announcement (and
/// a discovery server's relays to a client, for its `RELAY_COALESCE`), so
/// that endpoints created in a burst (a ddsperf pong makes a writer per peer it discovers) go
/// to each peer together: several DATA and one HEARTBEAT per datagram instead of a datagram
/// per endpoint per peer. Disposes and the participant's departure release it at once (the
/// runtime flushes a leaving participant only once).
#[derive(Debug, Default)]
pub(super) struct SedpHold {
    until: Option<Instant>,
}

impl SedpHold {
    /// Something was written at `now`: hold for `d`, unless already holding.
    pub(super) fn announced(&mut self, now: Instant, d: std::time::Duration) {
        if !d.is_zero() {
            self.until.get_or_insert(now + d);
        }
    }

    /// Sends what is held from now on.
    pub(super) fn release(&mut self) {
        self.until = None;
    }

    /// Whether the SEDP writers' output waits at `now` (the hold ends once it is due).
    pub(super) fn holding(&mut self, now: Instant) -> bool {
        match self.until {
            Some(t) if now < t => true,
            _ => {
                self.until = None;
                false
            }
        }
    }

    /// When the held output is due.
    pub(super) fn poll_timeout(&self) -> Option<Instant> {
        self.until
    }
}

/// Writes one SEDP sample for endpoint `guid` into the publications or the subscriptions
/// writer: an announcement, or a dispose + unregister when `dispose`.
pub(super) fn write_sedp(
    publications: &mut WriterCore,
    subscriptions: &mut WriterCore,
    guid: Guid,
    payload: Vec<u8>,
    dispose: bool,
    ts: Timestamp,
    now: Instant,
) {
    let core = if guid.entity_id.is_writer() {
        publications
    } else {
        subscriptions
    };
    let status = if dispose { 3 } else { 0 };
    let _ = core.write(
        Arc::new(payload),
        Some(guid.to_bytes()),
        status,
        dispose,
        Some(ts),
        now,
    );
}
