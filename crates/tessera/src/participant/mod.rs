//! The domain participant: the entry point of the API and the owner of the runtime.
//!
//! A participant owns its sockets, two kinds of threads and the tables that route received
//! submessages to local endpoints:
//! - one **receive thread per socket** decodes each datagram and hands every submessage to the
//!   endpoint it is for (a data reader, a data writer, or the built-in discovery endpoints),
//!   under that endpoint's own lock;
//! - one **event thread** runs the timers: SPDP announcements, lease expiry, heartbeats,
//!   delayed ACKNACKs and retransmissions.
//!
//! Application threads send the first transmission of every sample themselves (see
//! [`crate::publication`]); no queue sits between `write` and the socket.

mod config;
mod counters;
mod create;
mod event;
mod factory;
mod matching;
mod routing;

pub use config::ParticipantConfig;
pub use counters::{CountersSnapshot, RuntimeCounters, TransportTraffic};
pub(crate) use event::EventKick;
use routing::Endpoints;

#[cfg(doc)]
use crate::bounds::ResourceBounds;
use crate::discovery_rt::{DiscoveryRuntime, ParticipantEvent, ParticipantInfo};
use crate::error::{Error, Result};
use crate::qos::DomainParticipantQos;
use crate::runtime::RuntimeContext;
use crate::transport::Receivers;
use parking_lot::{Mutex, RwLock};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;
use tessera_rtps::types::{EntityId, Guid};

/// Everything the participant's threads and entities share: the endpoint tables and discovery,
/// around the [`RuntimeContext`] its endpoints run with. It dereferences to that context, so
/// that code holding the participant (the receive and event threads, discovery) passes it where
/// a context is wanted; endpoints get only the context.
pub(crate) struct ParticipantShared {
    pub domain_id: u32,
    pub qos: DomainParticipantQos,
    /// What endpoints see of the participant: GUID prefix, transports, send queues, event kick,
    /// counters, bounds and budgets, multicast use (see [`ParticipantConfig::allow_multicast`]).
    pub ctx: Arc<RuntimeContext>,
    pub endpoints: RwLock<Endpoints>,
    /// The endpoints table's routes generation, read by receive threads without its lock: a
    /// read lock per submessage cost a 16 B stream's receive thread ~5 % of its time.
    routes_generation: Arc<AtomicU64>,
    pub discovery: Mutex<DiscoveryRuntime>,
    /// Consensus groups of ATOMIC endpoints (started with the first one).
    pub atomic: crate::atomic::AtomicService,
    next_entity_key: AtomicU32,
    /// [`ParticipantConfig::qos_profiles`].
    pub qos_profiles: Option<Arc<crate::qos_xml::QosProvider>>,
    /// Whether the participant joined the host's node plane ([`ParticipantConfig::node`]).
    pub node_attached: bool,
}

impl std::ops::Deref for ParticipantShared {
    type Target = RuntimeContext;

    fn deref(&self) -> &RuntimeContext {
        &self.ctx
    }
}

impl std::fmt::Debug for ParticipantShared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ParticipantShared")
            .field("guid_prefix", &self.guid_prefix)
            .field("domain_id", &self.domain_id)
            .finish()
    }
}

/// Owns the threads; dropping the last [`DomainParticipant`] handle stops them.
struct ParticipantOwner {
    shared: Arc<ParticipantShared>,
    receivers: Mutex<Option<Receivers>>,
    events: Mutex<Option<JoinHandle<()>>>,
}

impl Drop for ParticipantOwner {
    fn drop(&mut self) {
        self.shared.discovery.lock().announce_leaving(&self.shared);
        self.shared.atomic.close();
        self.shared.ctx.close();
        self.shared.kick.wake_now();
        drop(self.receivers.lock().take());
        if let Some(t) = self.events.lock().take() {
            let _ = t.join();
        }
    }
}

/// A DDS domain participant: creates topics, publishers and subscribers in one domain.
/// Cheap to clone; the runtime stops when the last clone (and every entity) is dropped.
#[derive(Clone)]
pub struct DomainParticipant {
    owner: Arc<ParticipantOwner>,
}

/// What [`DomainParticipant::bundle_sends`] returns: while it lives, the calling thread's
/// sends of that participant share datagrams; dropping it sends them. Bound to its thread.
#[must_use = "the bundle sends when dropped: keep it while writing"]
pub struct SendBundle {
    _inner: crate::outbox::Bundle,
}

impl std::fmt::Debug for SendBundle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SendBundle")
    }
}

impl std::fmt::Debug for DomainParticipant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DomainParticipant")
            .field("guid_prefix", &self.owner.shared.guid_prefix)
            .field("domain_id", &self.owner.shared.domain_id)
            .finish()
    }
}
impl DomainParticipant {
    pub(crate) fn shared(&self) -> &Arc<ParticipantShared> {
        &self.owner.shared
    }

    /// Whether this participant is attached to the host's node service (it asked to, through
    /// [`ParticipantConfig::node`] or `TESSERA_NODE`, and a node was running when it started).
    pub fn attached_to_node(&self) -> bool {
        self.owner.shared.node_attached
    }

    /// The remote writers and readers discovered (what a bridge or a node service forwards
    /// between, and what tools list).
    pub fn discovered_endpoints(&self) -> Vec<tessera_rtps::discovery::RemoteEndpointInfo> {
        self.owner.shared.discovery.lock().remote_endpoints()
    }

    /// The domain id.
    pub fn domain_id(&self) -> u32 {
        self.owner.shared.domain_id
    }

    /// Bundles what this thread's writers of this participant send until the returned guard
    /// is dropped: transmits to the same destination share datagrams (up to 14,720 bytes)
    /// instead of leaving one datagram per writer, across writers and topics. Samples still
    /// leave no later than the guard's drop. For services that write through many writers at
    /// once (a node service forwarding many applications); a single writer batches with
    /// [`crate::DataWriter::set_batching`].
    pub fn bundle_sends(&self) -> SendBundle {
        SendBundle {
            _inner: crate::outbox::Bundle::open(&self.owner.shared.ctx),
        }
    }

    /// The participant's GUID.
    pub fn guid(&self) -> Guid {
        Guid::new(self.owner.shared.guid_prefix, EntityId::PARTICIPANT)
    }

    /// The participant QoS.
    pub fn qos(&self) -> &DomainParticipantQos {
        &self.owner.shared.qos
    }

    /// Every remote writer discovery knows, matched or not, with its topic, type, offered QoS
    /// (DURABILITY, DURABILITY_SERVICE, ...) and TypeInformation: what a durability service
    /// watches. Empty with a discovery engine that keeps no endpoint table.
    pub fn discovered_writers(
        &self,
    ) -> Vec<std::sync::Arc<tessera_rtps::discovery::DiscoveredWriterData>> {
        self.shared().discovery.lock().remote_writers()
    }

    /// The remote participants currently discovered.
    pub fn discovered_participants(&self) -> Vec<ParticipantInfo> {
        self.owner.shared.discovery.lock().participants()
    }

    /// A channel that receives an event whenever a remote participant is discovered or lost,
    /// starting with a `Discovered` event for every participant known at the time of the call.
    /// It holds at most [`ResourceBounds::participant_events`] events: when the application
    /// does not keep up, further events are dropped and counted
    /// ([`CountersSnapshot::participant_events_dropped`]);
    /// [`DomainParticipant::discovered_participants`] always has the current set.
    pub fn participant_events(&self) -> crossbeam_channel::Receiver<ParticipantEvent> {
        let capacity = self.owner.shared.limits.participant_events;
        self.owner.shared.discovery.lock().watch(capacity)
    }

    /// Asserts the liveliness of every MANUAL_BY_PARTICIPANT writer of this participant
    /// (DDS `assert_liveliness`); each of them tells its readers.
    pub fn assert_liveliness(&self) -> Result<()> {
        if self.owner.shared.is_closed() {
            return Err(Error::AlreadyDeleted);
        }
        let writers: Vec<_> = self
            .owner
            .shared
            .endpoints
            .read()
            .writers
            .values()
            .cloned()
            .collect();
        for w in writers {
            w.assert_participant_liveliness();
        }
        let shared = &self.owner.shared;
        shared
            .discovery
            .lock()
            .assert_manual_liveliness(shared, Instant::now());
        Ok(())
    }

    /// A snapshot of the runtime's drop and traffic counters.
    pub fn counters(&self) -> CountersSnapshot {
        self.owner.shared.counters_snapshot()
    }

    /// What each transport carried, in preference order: e.g. whether peers are reached by
    /// shared memory or by UDP.
    pub fn transport_traffic(&self) -> Vec<TransportTraffic> {
        self.owner
            .shared
            .transport
            .iter()
            .map(|t| {
                let s = t.stats();
                TransportTraffic {
                    name: t.name(),
                    datagrams_sent: s.send.datagrams.load(Ordering::Relaxed),
                    bytes_sent: s.send.bytes.load(Ordering::Relaxed),
                    datagrams_received: s.recv.datagrams.load(Ordering::Relaxed),
                    bytes_received: s.recv.bytes.load(Ordering::Relaxed),
                }
            })
            .collect()
    }
}
