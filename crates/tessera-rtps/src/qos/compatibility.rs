//! Request/offered matching: [`check_compatibility`] between a writer's offer and a reader's
//! request.

use super::policy_id::QosPolicyId;
use super::side_views::{ReaderSideQos, WriterSideQos};

/// Request/offered compatibility (DDS 1.4 §2.2.3, "RxO" policies, plus DDS-XTypes data
/// representation). Returns every incompatible policy, in the order Cyclone DDS checks them:
/// reliability, durability, presentation, deadline, latency budget, ownership, liveliness,
/// destination order, data representation; then Tessera's consistency (an ATOMIC reader needs an
/// ATOMIC writer: it delivers committed samples only).
///
/// Partitions, topic and type names are not QoS compatibility: see [`partitions_match`].
///
/// [`partitions_match`]: super::partitions_match
pub fn check_compatibility(
    offered: &WriterSideQos,
    requested: &ReaderSideQos,
) -> Result<(), Vec<QosPolicyId>> {
    let mut bad = Vec::new();
    if offered.reliability.kind < requested.reliability.kind {
        bad.push(QosPolicyId::Reliability);
    }
    if offered.durability < requested.durability {
        bad.push(QosPolicyId::Durability);
    }
    let (op, rp) = (offered.presentation, requested.presentation);
    if op.access_scope < rp.access_scope
        || (rp.coherent_access && !op.coherent_access)
        || (rp.ordered_access && !op.ordered_access)
    {
        bad.push(QosPolicyId::Presentation);
    }
    if offered.deadline.period > requested.deadline.period {
        bad.push(QosPolicyId::Deadline);
    }
    if offered.latency_budget.duration > requested.latency_budget.duration {
        bad.push(QosPolicyId::LatencyBudget);
    }
    if offered.ownership != requested.ownership {
        bad.push(QosPolicyId::Ownership);
    }
    if offered.liveliness.kind < requested.liveliness.kind
        || offered.liveliness.lease_duration > requested.liveliness.lease_duration
    {
        bad.push(QosPolicyId::Liveliness);
    }
    if offered.destination_order < requested.destination_order {
        bad.push(QosPolicyId::DestinationOrder);
    }
    if !requested
        .data_representation
        .accepts(offered.data_representation.offered())
    {
        bad.push(QosPolicyId::DataRepresentation);
    }
    if offered.consistency < requested.consistency {
        bad.push(QosPolicyId::Consistency);
    }
    if bad.is_empty() {
        Ok(())
    } else {
        Err(bad)
    }
}
