//! The runtime's drop and traffic counters, their snapshot, and per-transport traffic.

#[cfg(doc)]
use super::DomainParticipant;
use super::ParticipantShared;
#[cfg(doc)]
use crate::bounds::ResourceBounds;
use std::sync::atomic::{AtomicU64, Ordering};

/// Counters of what the runtime dropped or repaired; read with
/// [`DomainParticipant::counters`].
#[derive(Debug, Default)]
pub struct RuntimeCounters {
    /// Datagrams whose header could not be decoded.
    pub malformed_messages: AtomicU64,
    /// Submessages that failed to decode (the rest of their datagram is dropped too).
    pub malformed_submessages: AtomicU64,
    /// Submessages for an entity this participant does not have.
    pub unroutable_submessages: AtomicU64,
    /// Datagrams received.
    pub datagrams_received: AtomicU64,
    /// Datagrams sent.
    pub datagrams_sent: AtomicU64,
    /// Send errors.
    pub send_errors: AtomicU64,
    /// Samples and instance updates a reader's history refused (resource limits).
    pub samples_rejected: AtomicU64,
}

/// A snapshot of the runtime's drop and traffic counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CountersSnapshot {
    /// Datagrams whose header could not be decoded.
    pub malformed_messages: u64,
    /// Submessages that failed to decode.
    pub malformed_submessages: u64,
    /// Submessages for an entity this participant does not have.
    pub unroutable_submessages: u64,
    /// Datagrams received.
    pub datagrams_received: u64,
    /// Datagrams sent.
    pub datagrams_sent: u64,
    /// Send errors.
    pub send_errors: u64,
    /// Participant events dropped because the application's channel was full
    /// ([`ResourceBounds::participant_events`]).
    pub participant_events_dropped: u64,
    /// Partial (DATA_FRAG) samples refused because the participant's reassembly bytes were
    /// spent ([`ResourceBounds::reassembly_bytes`]).
    pub reassembly_refused: u64,
    /// Out-of-order samples dropped because the participant's out-of-order bytes were spent
    /// ([`ResourceBounds::out_of_order_bytes`]).
    pub out_of_order_refused: u64,
    /// Samples and instance updates a reader's history refused: RESOURCE_LIMITS, or
    /// [`ResourceBounds::max_instances_per_reader`] (also in each reader's SAMPLE_REJECTED).
    pub samples_rejected: u64,
    /// Datagrams dropped because a slow destination's send queue was full.
    pub send_queue_drops: u64,
}

/// What one transport of a participant carried ([`DomainParticipant::transport_traffic`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TransportTraffic {
    /// The transport's name (`udp4`, `udp6`, `shm`, `inproc`).
    pub name: &'static str,
    /// Datagrams sent.
    pub datagrams_sent: u64,
    /// Bytes sent.
    pub bytes_sent: u64,
    /// Datagrams received.
    pub datagrams_received: u64,
    /// Bytes received.
    pub bytes_received: u64,
}

impl ParticipantShared {
    pub(super) fn counters_snapshot(&self) -> CountersSnapshot {
        let c = &self.counters;
        CountersSnapshot {
            malformed_messages: c.malformed_messages.load(Ordering::Relaxed),
            malformed_submessages: c.malformed_submessages.load(Ordering::Relaxed),
            unroutable_submessages: c.unroutable_submessages.load(Ordering::Relaxed),
            datagrams_received: c.datagrams_received.load(Ordering::Relaxed),
            datagrams_sent: c.datagrams_sent.load(Ordering::Relaxed),
            send_errors: c.send_errors.load(Ordering::Relaxed),
            participant_events_dropped: self.budgets.events_dropped.load(Ordering::Relaxed),
            reassembly_refused: self.budgets.reassembly.refused(),
            out_of_order_refused: self.budgets.out_of_order.refused(),
            samples_rejected: c.samples_rejected.load(Ordering::Relaxed),
            send_queue_drops: self.send_queues.dropped.load(Ordering::Relaxed),
        }
    }
}
