//! The network writers of a route to the network: one per application writer, so that readers
//! beyond the node see each application writer as a writer of its own — its sequence numbers
//! (a reader's loss count), its liveliness, its ownership strength, its history — under the
//! node's participant. Their datagrams are bundled by the scheduler, so many writers cost no
//! more datagrams than one.

use std::collections::HashMap;
use std::sync::Arc;

use tessera::qos::{DataWriterQos, Durability, LatencyBudget};
use tessera::rtps::discovery::{DiscoveredWriterData, RemoteEndpointInfo};
use tessera::rtps::types::Guid;
use tessera::{DomainParticipant, Publisher, UntypedDataWriter, UntypedTopic};

use crate::route_qos::RouteQos;

/// An application writer's GUID as samples name it (`SampleInfo::publication_handle`).
pub(crate) type AppWriter = [u8; 16];

/// How a route makes the network writer standing for an application writer.
pub(crate) struct NetWriters {
    publisher: Publisher,
    topic: UntypedTopic,
    /// The node's participant on the applications' side (their discovery data).
    local: DomainParticipant,
    /// The terms for a writer whose discovery data is not (yet) known.
    fallback: DataWriterQos,
    /// The reliability every network writer uses (the scheduler's brief wait).
    reliability: tessera::qos::Reliability,
    by_source: HashMap<AppWriter, UntypedDataWriter>,
    /// Writers that outlive their application writer: TRANSIENT or PERSISTENT ones, whose
    /// history late joiners beyond the node still get from them (as they would from a
    /// durability service) once the application is gone.
    outliving: std::collections::HashSet<AppWriter>,
}

impl NetWriters {
    pub(crate) fn new(
        publisher: Publisher,
        topic: UntypedTopic,
        local: DomainParticipant,
        fallback: DataWriterQos,
    ) -> NetWriters {
        NetWriters {
            publisher,
            topic,
            local,
            reliability: fallback.reliability,
            fallback,
            by_source: HashMap::new(),
            outliving: Default::default(),
        }
    }

    /// The network writer for `source`, made on first use with that application writer's
    /// terms (its durability and history, deadline, liveliness, ownership and strength,
    /// destination order, lifespan, latency budget).
    pub(crate) fn get(&mut self, source: AppWriter) -> tessera::Result<UntypedDataWriter> {
        if let Some(w) = self.by_source.get(&source) {
            return Ok(w.clone());
        }
        let known = self.discovered(source);
        let qos = match &known {
            Some(data) => self.qos_of(data),
            None => self.fallback.clone(),
        };
        let outlives = qos.durability >= Durability::Transient;
        let w = self.publisher.create_untyped_datawriter(&self.topic, qos)?;
        if outlives {
            self.outliving.insert(source);
        }
        // The scheduler flushes what a pass wrote, bundled with the other writers'.
        w.set_batching(true);
        self.by_source.insert(source, w.clone());
        Ok(w)
    }

    /// Makes the writers of `writers` now (a route to the network opens with those of the
    /// applications it knows, so that readers beyond the node find them before they write).
    pub(crate) fn make_all(
        &mut self,
        writers: &[Arc<DiscoveredWriterData>],
    ) -> tessera::Result<()> {
        for w in writers {
            self.get(w.guid.to_bytes())?;
        }
        Ok(())
    }

    /// Whether `source` has a network writer.
    pub(crate) fn has(&self, source: &AppWriter) -> bool {
        self.by_source.contains_key(source)
    }

    /// Deletes the writers of application writers no longer in `live` (beyond the node, those
    /// writers are gone and their instances unregistered, as when the application's own
    /// writer leaves), except those that outlive them. Samples already queued keep their
    /// writer until sent.
    pub(crate) fn retain(&mut self, live: &[Guid]) -> usize {
        let before = self.by_source.len();
        let outliving = &self.outliving;
        self.by_source.retain(|source, _| {
            outliving.contains(source) || live.iter().any(|g| g.to_bytes() == *source)
        });
        before - self.by_source.len()
    }

    /// Every network writer (for the liveliness asserter and the match watch).
    pub(crate) fn all(&self) -> impl Iterator<Item = &UntypedDataWriter> {
        self.by_source.values()
    }

    /// How many writers stand for application writers now.
    pub(crate) fn len(&self) -> usize {
        self.by_source.len()
    }

    fn discovered(&self, source: AppWriter) -> Option<Arc<DiscoveredWriterData>> {
        self.local
            .discovered_endpoints()
            .into_iter()
            .find_map(|e| match e {
                RemoteEndpointInfo::Writer(w) if w.guid.to_bytes() == source => Some(w),
                _ => None,
            })
    }

    /// The terms of the network writer standing for `data`: what that writer offers.
    fn qos_of(&self, data: &Arc<DiscoveredWriterData>) -> DataWriterQos {
        let terms = RouteQos::to_network(std::slice::from_ref(data)).writer;
        DataWriterQos {
            reliability: self.reliability,
            durability: terms.durability,
            durability_service: terms.durability_service,
            history: terms.history,
            resource_limits: terms.resource_limits,
            deadline: terms.deadline,
            liveliness: terms.liveliness,
            ownership: data.qos.ownership,
            ownership_strength: data.qos.ownership_strength,
            destination_order: terms.destination_order,
            lifespan: terms.lifespan,
            latency_budget: LatencyBudget {
                duration: data.qos.latency_budget.duration,
            },
            transport_priority: data.qos.transport_priority,
            ..DataWriterQos::default()
        }
    }
}
