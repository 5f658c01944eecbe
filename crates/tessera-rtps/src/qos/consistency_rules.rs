//! Self-consistency of a QoS: the [`InconsistentQos`] error and the checks between policies of
//! one entity that the aggregates' `check_consistency` methods combine.

use super::policies::{
    Deadline, DurabilityService, History, Partition, ResourceLimits, TimeBasedFilter,
};
use super::policy_id::QosPolicyId;

/// A QoS that contradicts itself (DDS `INCONSISTENT_POLICY`). This is the caller's error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum InconsistentQos {
    /// KEEP_LAST with depth 0.
    #[error("HISTORY: keep-last depth must be at least 1")]
    HistoryDepthZero,
    /// KEEP_LAST depth larger than RESOURCE_LIMITS.max_samples_per_instance.
    #[error("HISTORY: keep-last depth {depth} exceeds max_samples_per_instance {max_samples_per_instance}")]
    HistoryDepthExceedsLimit {
        /// The history depth.
        depth: u32,
        /// The per-instance limit.
        max_samples_per_instance: u32,
    },
    /// A resource limit of zero (limits are ≥ 1 or unlimited).
    #[error("RESOURCE_LIMITS: limits must be at least 1 or unlimited")]
    ResourceLimitZero,
    /// max_samples below max_samples_per_instance.
    #[error("RESOURCE_LIMITS: max_samples {max_samples} below max_samples_per_instance {max_samples_per_instance}")]
    MaxSamplesBelowPerInstance {
        /// The total limit.
        max_samples: u32,
        /// The per-instance limit.
        max_samples_per_instance: u32,
    },
    /// DEADLINE period shorter than TIME_BASED_FILTER minimum separation.
    #[error("DEADLINE: period shorter than the time-based filter's minimum separation")]
    DeadlineBelowMinimumSeparation,
    /// The durability service's history or resource limits are inconsistent.
    #[error("DURABILITY_SERVICE: history/resource limits inconsistent")]
    DurabilityService,
    /// A PARTITION name is not valid (contains a NUL character).
    #[error("PARTITION: names must not contain NUL")]
    PartitionName,
}

impl InconsistentQos {
    /// The policy at fault.
    pub fn policy(&self) -> QosPolicyId {
        match self {
            InconsistentQos::HistoryDepthZero
            | InconsistentQos::HistoryDepthExceedsLimit { .. } => QosPolicyId::History,
            InconsistentQos::ResourceLimitZero
            | InconsistentQos::MaxSamplesBelowPerInstance { .. } => QosPolicyId::ResourceLimits,
            InconsistentQos::DeadlineBelowMinimumSeparation => QosPolicyId::Deadline,
            InconsistentQos::DurabilityService => QosPolicyId::DurabilityService,
            InconsistentQos::PartitionName => QosPolicyId::Partition,
        }
    }
}

pub(super) fn check_history_limits(h: History, r: ResourceLimits) -> Result<(), InconsistentQos> {
    if [r.max_samples, r.max_instances, r.max_samples_per_instance].contains(&Some(0)) {
        return Err(InconsistentQos::ResourceLimitZero);
    }
    if let (Some(max_samples), Some(per)) = (r.max_samples, r.max_samples_per_instance) {
        if max_samples < per {
            return Err(InconsistentQos::MaxSamplesBelowPerInstance {
                max_samples,
                max_samples_per_instance: per,
            });
        }
    }
    if let History::KeepLast(depth) = h {
        if depth == 0 {
            return Err(InconsistentQos::HistoryDepthZero);
        }
        if let Some(per) = r.max_samples_per_instance {
            if depth > per {
                return Err(InconsistentQos::HistoryDepthExceedsLimit {
                    depth,
                    max_samples_per_instance: per,
                });
            }
        }
    }
    Ok(())
}

pub(super) fn check_durability_service(d: &DurabilityService) -> Result<(), InconsistentQos> {
    check_history_limits(d.history, d.resource_limits)
        .map_err(|_| InconsistentQos::DurabilityService)
}

pub(super) fn check_deadline_filter(
    deadline: Deadline,
    tbf: TimeBasedFilter,
) -> Result<(), InconsistentQos> {
    if deadline.period < tbf.minimum_separation {
        return Err(InconsistentQos::DeadlineBelowMinimumSeparation);
    }
    Ok(())
}

pub(super) fn check_partition(p: &Partition) -> Result<(), InconsistentQos> {
    if p.0.iter().any(|n| n.contains('\0')) {
        return Err(InconsistentQos::PartitionName);
    }
    Ok(())
}
