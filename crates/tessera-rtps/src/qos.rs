//! DDS QoS policies (DDS 1.4 §2.2.3), their consistency rules and request/offered matching.
//!
//! Every policy is a small typed value whose `Default` is the spec default. The entity
//! aggregates ([`TopicQos`], [`DataWriterQos`], [`DataReaderQos`], [`PublisherQos`],
//! [`SubscriberQos`], [`DomainParticipantQos`]) hold the policies that apply to that entity and
//! offer builder-style `with_*` setters and a `check_consistency` that reports the first
//! inconsistency as an [`InconsistentQos`].
//!
//! Matching works on the two "side" views that discovery carries on the wire:
//! [`WriterSideQos`] (what a writer offers: its own policies plus its publisher's presentation,
//! partition and group data and its topic's topic data) and [`ReaderSideQos`] (what a reader
//! requests). [`check_compatibility`] lists *every* incompatible policy by its spec
//! [`QosPolicyId`]; [`partitions_match`] is separate because a partition mismatch is not an
//! incompatibility, merely "no match".
//!
//! Durations are `std::time::Duration`; the DDS "infinite" duration is [`INFINITE`]
//! (`Duration::MAX`), which keeps the natural ordering (infinite is longer than anything) that
//! the matching rules rely on. [`duration_to_wire`] / [`duration_from_wire`] convert to and from
//! the RTPS `Duration_t`, mapping infinity both ways and round-tripping every nanosecond.

// `setters!` is defined before the submodules so that `entity_qos` and `side_views`, which
// generate their builder-style `with_*` methods with it, see it (macro_rules scoping is textual).
macro_rules! setters {
    ($ty:ident { $($setter:ident => $field:ident : $fty:ty),* $(,)? }) => {
        impl $ty {
            $(
                #[doc = concat!("Sets the `", stringify!($field), "` policy (builder style).")]
                #[must_use]
                pub fn $setter(mut self, v: $fty) -> Self {
                    self.$field = v;
                    self
                }
            )*
        }
    };
}

mod compatibility;
mod consistency_rules;
mod duration;
mod entity_qos;
mod partition_matching;
mod policies;
mod policy_id;
mod side_views;

pub use compatibility::check_compatibility;
pub use consistency_rules::InconsistentQos;
pub use duration::{duration_from_wire, duration_to_wire, is_infinite, INFINITE};
pub use entity_qos::{
    DataReaderQos, DataWriterQos, DomainParticipantQos, PublisherQos, SubscriberQos, TopicQos,
};
pub use partition_matching::{fnmatch, is_wildcard, partitions_match};
pub use policies::{
    data_representation, Consistency, DataRepresentation, Deadline, DestinationOrder, Durability,
    DurabilityService, EntityFactory, GroupData, History, LatencyBudget, Lifespan, Liveliness,
    LivelinessKind, Ownership, OwnershipStrength, Partition, Presentation, PresentationAccessScope,
    ReaderDataLifecycle, Reliability, ReliabilityKind, ResourceLimits, TimeBasedFilter, TopicData,
    TransportPriority, TypeConsistencyEnforcement, TypeConsistencyKind, UserData,
    WriterDataLifecycle,
};
pub use policy_id::QosPolicyId;
pub use side_views::{ReaderSideQos, WriterSideQos};

// The tests (`qos_tests.rs`) reach these through `use super::*`.
#[cfg(test)]
use crate::types::{DurationT, Locator};
#[cfg(test)]
use std::time::Duration;

#[cfg(test)]
#[path = "qos_tests.rs"]
mod tests;
