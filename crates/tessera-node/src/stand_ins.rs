//! The writers of a route: one stand-in per writer on the route's other side, so that readers
//! see each writer as a writer of its own — its sequence numbers (a reader's loss count), its
//! ownership strength, its lifetime and, going out, its history and other terms — under the
//! node's participant. Going to the network they stand for the host's application writers,
//! coming in for the network's writers (so an application behind another node still sees
//! every application writer of the first host). Their datagrams are bundled, so many writers
//! cost no more datagrams than one.

use std::collections::HashMap;
use std::sync::Arc;

use tessera::qos::{DataWriterQos, Durability, LatencyBudget};
use tessera::rtps::discovery::{DiscoveredWriterData, RemoteEndpointInfo};
use tessera::rtps::types::Guid;
use tessera::{DomainParticipant, Publisher, UntypedDataWriter, UntypedTopic};

use crate::route_qos::RouteQos;

/// How long a new stand-in may wait for the readers its route's others have.
const MATCH_GATE: std::time::Duration = std::time::Duration::from_millis(500);

/// A writer's GUID as samples name it (`SampleInfo::publication_handle`).
pub(crate) type AppWriter = [u8; 16];

/// How a route makes the writer standing for a writer of its other side.
pub(crate) struct StandIns {
    publisher: Publisher,
    topic: UntypedTopic,
    /// The node's participant on the side the samples come from (their writers' discovery
    /// data).
    local: DomainParticipant,
    /// The terms for a writer whose discovery data is not (yet) known, and for every writer
    /// coming in (but its ownership strength).
    fallback: DataWriterQos,
    /// Whether a stand-in takes its writer's own terms (going out) or the route's
    /// (coming in: the host's readers asked for those).
    own_terms: bool,
    /// The reliability every network writer uses (the scheduler's brief wait).
    reliability: tessera::qos::Reliability,
    by_source: HashMap<AppWriter, UntypedDataWriter>,
    /// Writers that outlive their application writer: TRANSIENT or PERSISTENT ones, whose
    /// history late joiners beyond the node still get from them (as they would from a
    /// durability service) once the application is gone.
    /// Oldest first. At most [`MAX_OUTLIVING`] of them are kept past their writers (a host
    /// whose TRANSIENT writers come and go must not grow the node without bound: past that,
    /// the oldest of those go).
    outliving: std::collections::VecDeque<AppWriter>,
}

/// Stand-ins a route keeps past their writers at most.
const MAX_OUTLIVING: usize = 64;

impl StandIns {
    pub(crate) fn new(
        publisher: Publisher,
        topic: UntypedTopic,
        local: DomainParticipant,
        fallback: DataWriterQos,
        own_terms: bool,
    ) -> StandIns {
        StandIns {
            publisher,
            topic,
            local,
            own_terms,
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
            Some(data) if self.own_terms => self.qos_of(data),
            Some(data) => DataWriterQos {
                ownership_strength: data.qos.ownership_strength,
                ..self.fallback.clone()
            },
            None => self.fallback.clone(),
        };
        let outlives = qos.durability >= Durability::Transient;
        let w = self.publisher.create_untyped_datawriter(&self.topic, qos)?;
        if outlives {
            self.outliving.push_back(source);
        }
        self.await_readers(&w);
        // What a pass wrote is flushed at its end, bundled with the other writers'.
        w.set_batching(true);
        self.by_source.insert(source, w.clone());
        Ok(w)
    }

    /// Waits (up to [`MATCH_GATE`]) until a new stand-in matched as many readers as the
    /// route's others: a writer behind the node counts as matched once the node's proxy reader
    /// is, and writes; a stand-in that readers beyond have not matched yet would lose those
    /// first samples (volatile), which they would have had from the writer directly.
    fn await_readers(&self, new: &UntypedDataWriter) {
        let target = self
            .by_source
            .values()
            .filter(|w| w.guid() != new.guid())
            .map(|w| w.matched_subscriptions().len())
            .max()
            .unwrap_or(0);
        if target == 0 {
            return;
        }
        let deadline = std::time::Instant::now() + MATCH_GATE;
        let mut ws = tessera::WaitSet::new();
        ws.attach(&new.status_condition(tessera::StatusMask::PUBLICATION_MATCHED));
        while new.matched_subscriptions().len() < target {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                tracing::debug!(
                    target,
                    "node: a new stand-in writes before all readers matched it"
                );
                return;
            }
            let _ = new.publication_matched_status();
            let _ = ws.wait(Some(left.min(std::time::Duration::from_millis(20))));
        }
    }

    /// Brings the stand-ins in line with `live`, the writers the proxy reader matches now:
    /// makes those missing (before their samples come), deletes those of writers gone
    /// ([`StandIns::retain`]). Returns how many went.
    pub(crate) fn sync(&mut self, live: &[Guid]) -> usize {
        for g in live {
            if let Err(e) = self.get(g.to_bytes()) {
                tracing::debug!(%e, "node: no stand-in writer");
            }
        }
        self.retain(live)
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
        let is_live = |source: &AppWriter| live.iter().any(|g| g.to_bytes() == *source);
        // The outliving stand-ins of writers gone, oldest first: the oldest beyond the cap go.
        let dead: Vec<AppWriter> = self
            .outliving
            .iter()
            .filter(|s| !is_live(s))
            .copied()
            .collect();
        let evict = dead.len().saturating_sub(MAX_OUTLIVING);
        for s in &dead[..evict] {
            self.by_source.remove(s);
        }
        let outliving = &self.outliving;
        self.by_source
            .retain(|source, _| outliving.contains(source) || is_live(source));
        let by_source = &self.by_source;
        self.outliving.retain(|s| by_source.contains_key(s));
        before - self.by_source.len()
    }

    /// Every network writer (for the match watch).
    pub(crate) fn all(&self) -> impl Iterator<Item = &UntypedDataWriter> {
        self.by_source.values()
    }

    /// The writers standing for those of `sources` that have one.
    pub(crate) fn standing_for<'a>(
        &'a self,
        sources: &'a [Guid],
    ) -> impl Iterator<Item = &'a UntypedDataWriter> + 'a {
        sources
            .iter()
            .filter_map(|g| self.by_source.get(&g.to_bytes()))
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
