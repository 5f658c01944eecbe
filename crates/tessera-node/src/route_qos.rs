//! What a route's two endpoints ask and offer, so that the node is as transparent to
//! request/offered matching as a network is (sans-IO: discovered QoS in, QoS out).
//!
//! The rule, both ways: the **proxy reader** asks the weakest of what the endpoints it serves
//! would ask, so it matches every writer any of them would match directly; the **forwarding
//! writer** offers what every writer behind it keeps (going out), or what the most demanding
//! reader it serves asks (coming in), so that the readers beyond it match it as they would the
//! writers it stands for. Per policy:
//!
//! | policy | to the network (writers behind) | from the network (readers served) |
//! |---|---|---|
//! | DURABILITY | proxy: the weakest writer's, at most TRANSIENT_LOCAL (a service's replays stay on the host); writer: the strongest, with its history and DURABILITY_SERVICE | proxy: the weakest reader's (TRANSIENT: it takes the services' replays); writer: the strongest |
//! | DEADLINE | both the longest offered period | proxy: the longest requested; writer: the shortest |
//! | LIVELINESS | both the weakest kind, the longest lease; the route asserts a manual stand-in while the writer it stands for is alive | proxy: the weakest kind, the longest lease; writer: the strongest kind, the shortest lease, asserted while a remote writer is alive |
//! | OWNERSHIP | EXCLUSIVE when every writer is: the proxy then forwards each instance's owner only, the writer offers the strongest writer's strength | EXCLUSIVE when every reader is: the proxy arbitrates among remote writers, the writer offers the strongest remote strength known |
//! | DESTINATION_ORDER | both BY_SOURCE_TIMESTAMP when every writer offers it | proxy: the weakest requested; writer: the strongest |
//! | LIFESPAN | writer: the longest (the proxy drops each writer's expired samples before they are forwarded) | writer: the longest of the remote writers' |
//!
//! Fixed when the route opens, from the endpoints known then.

use std::sync::Arc;
use std::time::Duration;

use tessera::qos::{
    Deadline, DestinationOrder, Durability, DurabilityService, History, Lifespan, Liveliness,
    LivelinessKind, Ownership, OwnershipStrength, ReaderSideQos, ResourceLimits, WriterSideQos,
};
use tessera::rtps::discovery::{DiscoveredReaderData, DiscoveredWriterData};

/// What a durable forwarding writer keeps when no writer it stands for says more.
pub const DEFAULT_DURABLE_DEPTH: u32 = 16;

/// The proxy reader's request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReaderTerms {
    /// DURABILITY.
    pub durability: Durability,
    /// DEADLINE.
    pub deadline: Deadline,
    /// LIVELINESS.
    pub liveliness: Liveliness,
    /// OWNERSHIP.
    pub ownership: Ownership,
    /// DESTINATION_ORDER.
    pub destination_order: DestinationOrder,
}

/// The forwarding writer's offer, and what it keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriterTerms {
    /// DURABILITY.
    pub durability: Durability,
    /// HISTORY (what a durable writer keeps for late joiners).
    pub history: History,
    /// RESOURCE_LIMITS.
    pub resource_limits: ResourceLimits,
    /// DURABILITY_SERVICE (what a durability service keeps of it).
    pub durability_service: DurabilityService,
    /// DEADLINE.
    pub deadline: Deadline,
    /// LIVELINESS.
    pub liveliness: Liveliness,
    /// OWNERSHIP.
    pub ownership: Ownership,
    /// OWNERSHIP_STRENGTH.
    pub ownership_strength: OwnershipStrength,
    /// DESTINATION_ORDER.
    pub destination_order: DestinationOrder,
    /// LIFESPAN.
    pub lifespan: Lifespan,
}

/// A route's terms on both sides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RouteQos {
    /// The proxy reader's request.
    pub reader: ReaderTerms,
    /// The forwarding writer's offer.
    pub writer: WriterTerms,
}

impl RouteQos {
    /// With nothing to go by: the specification's defaults, except that a forwarding writer
    /// keeps everything until it is sent.
    fn defaults() -> RouteQos {
        RouteQos {
            reader: ReaderTerms {
                durability: Durability::Volatile,
                deadline: Deadline::default(),
                liveliness: Liveliness::default(),
                ownership: Ownership::Shared,
                destination_order: DestinationOrder::ByReceptionTimestamp,
            },
            writer: WriterTerms {
                durability: Durability::Volatile,
                history: History::KeepAll,
                resource_limits: ResourceLimits::default(),
                durability_service: DurabilityService::default(),
                deadline: Deadline::default(),
                liveliness: Liveliness::default(),
                ownership: Ownership::Shared,
                ownership_strength: OwnershipStrength(0),
                destination_order: DestinationOrder::ByReceptionTimestamp,
                lifespan: Lifespan::default(),
            },
        }
    }

    /// The host's application writers to the network.
    pub fn to_network(writers: &[Arc<DiscoveredWriterData>]) -> RouteQos {
        let mut q = Self::defaults();
        let offers: Vec<&WriterSideQos> = writers.iter().map(|w| &w.qos).collect();
        if offers.is_empty() {
            return q;
        }
        let weakest = offers
            .iter()
            .map(|o| o.durability)
            .min()
            .unwrap_or_default();
        q.reader.durability = weakest.min(Durability::TransientLocal);
        if let Some(model) = offers.iter().max_by_key(|o| durable_rank(o)) {
            if model.durability != Durability::Volatile {
                q.writer.durability = model.durability;
                q.writer.history = model.history;
                q.writer.resource_limits = model.resource_limits;
                q.writer.durability_service = model.durability_service;
            }
        }
        let deadline = Deadline {
            period: offers
                .iter()
                .map(|o| o.deadline.period)
                .max()
                .unwrap_or_default(),
        };
        let liveliness = weakest_liveliness(offers.iter().map(|o| o.liveliness));
        let exclusive = offers.iter().all(|o| o.ownership == Ownership::Exclusive);
        let by_source = offers
            .iter()
            .all(|o| o.destination_order == DestinationOrder::BySourceTimestamp);
        let order = order_of(by_source);
        q.reader.deadline = deadline;
        q.reader.liveliness = liveliness;
        q.reader.ownership = ownership_of(exclusive);
        q.reader.destination_order = order;
        q.writer.deadline = deadline;
        q.writer.liveliness = liveliness;
        q.writer.ownership = ownership_of(exclusive);
        if exclusive {
            q.writer.ownership_strength = strongest(offers.iter().copied());
        }
        q.writer.destination_order = order;
        q.writer.lifespan = Lifespan {
            duration: offers
                .iter()
                .map(|o| o.lifespan.duration)
                .max()
                .unwrap_or_default(),
        };
        q
    }

    /// The network's writers to the host's application readers; `remote_writers` are those
    /// known when the route opens (their history, DURABILITY_SERVICE, strength and lifespan
    /// are copied; 16 samples per instance when none is durable).
    pub fn from_network(
        readers: &[Arc<DiscoveredReaderData>],
        remote_writers: &[Arc<DiscoveredWriterData>],
    ) -> RouteQos {
        let mut q = Self::defaults();
        let asks: Vec<&ReaderSideQos> = readers.iter().map(|r| &r.qos).collect();
        if asks.is_empty() {
            return q;
        }
        let exclusive = asks.iter().all(|a| a.ownership == Ownership::Exclusive);
        let remote: Vec<&WriterSideQos> = remote_writers.iter().map(|w| &w.qos).collect();
        q.reader = ReaderTerms {
            durability: asks.iter().map(|a| a.durability).min().unwrap_or_default(),
            deadline: Deadline {
                period: asks
                    .iter()
                    .map(|a| a.deadline.period)
                    .max()
                    .unwrap_or_default(),
            },
            liveliness: weakest_liveliness(asks.iter().map(|a| a.liveliness)),
            ownership: ownership_of(exclusive),
            destination_order: order_of(
                asks.iter()
                    .all(|a| a.destination_order == DestinationOrder::BySourceTimestamp),
            ),
        };
        let strongest_durability = asks.iter().map(|a| a.durability).max().unwrap_or_default();
        if strongest_durability != Durability::Volatile {
            q.writer.durability = strongest_durability;
            match remote.iter().max_by_key(|o| durable_rank(o)) {
                Some(model) if model.durability != Durability::Volatile => {
                    q.writer.history = model.history;
                    q.writer.resource_limits = model.resource_limits;
                    q.writer.durability_service = model.durability_service;
                }
                _ => q.writer.history = History::KeepLast(DEFAULT_DURABLE_DEPTH),
            }
        }
        q.writer.deadline = Deadline {
            period: asks
                .iter()
                .map(|a| a.deadline.period)
                .min()
                .unwrap_or_default(),
        };
        q.writer.liveliness = Liveliness {
            kind: asks
                .iter()
                .map(|a| a.liveliness.kind)
                .max()
                .unwrap_or_default(),
            lease_duration: asks
                .iter()
                .map(|a| a.liveliness.lease_duration)
                .min()
                .unwrap_or_default(),
        };
        q.writer.ownership = ownership_of(exclusive);
        if exclusive {
            q.writer.ownership_strength = strongest(remote.iter().copied());
        }
        q.writer.destination_order = order_of(
            asks.iter()
                .any(|a| a.destination_order == DestinationOrder::BySourceTimestamp),
        );
        if let Some(longest) = remote.iter().map(|o| o.lifespan.duration).max() {
            q.writer.lifespan = Lifespan { duration: longest };
        }
        q
    }

    /// Whether the forwarding writer must be asserted by the route (a manual liveliness kind:
    /// its own writes assert it only while samples flow).
    pub fn asserts_liveliness(&self) -> bool {
        self.writer.liveliness.kind != LivelinessKind::Automatic
    }

    /// How often the route asserts a manual writer while the writers behind it are alive.
    pub fn assert_period(&self) -> Duration {
        (self.writer.liveliness.lease_duration / 4)
            .clamp(Duration::from_millis(10), Duration::from_secs(1))
    }
}

/// Orders writers by how much they keep for late joiners: durability first, then history.
fn durable_rank(q: &WriterSideQos) -> (Durability, u64) {
    let depth = match q.history {
        History::KeepAll => u64::MAX,
        History::KeepLast(n) => u64::from(n),
    };
    (q.durability, depth)
}

/// The weakest of several LIVELINESS policies: the least manual kind, the longest lease.
fn weakest_liveliness(all: impl Iterator<Item = Liveliness> + Clone) -> Liveliness {
    Liveliness {
        kind: all.clone().map(|l| l.kind).min().unwrap_or_default(),
        lease_duration: all.map(|l| l.lease_duration).max().unwrap_or_default(),
    }
}

fn strongest<'a>(offers: impl Iterator<Item = &'a WriterSideQos>) -> OwnershipStrength {
    OwnershipStrength(offers.map(|o| o.ownership_strength.0).max().unwrap_or(0))
}

fn ownership_of(exclusive: bool) -> Ownership {
    if exclusive {
        Ownership::Exclusive
    } else {
        Ownership::Shared
    }
}

fn order_of(by_source: bool) -> DestinationOrder {
    if by_source {
        DestinationOrder::BySourceTimestamp
    } else {
        DestinationOrder::ByReceptionTimestamp
    }
}

#[cfg(test)]
mod tests;
