//! Communication statuses (DDS 1.4 §2.2.4.1) and the status-change mask.
//!
//! Each entity keeps its statuses behind its own lock; the `*_change` fields count what happened
//! since the application last read the status, and reading resets them.

use tessera_rtps::types::Guid;

/// A bit set of status kinds, used by status conditions and listeners.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct StatusMask(pub u32);

impl StatusMask {
    /// No status.
    pub const NONE: StatusMask = StatusMask(0);
    /// Every status.
    pub const ALL: StatusMask = StatusMask(u32::MAX);
    /// Offered (writer) deadline missed.
    pub const OFFERED_DEADLINE_MISSED: StatusMask = StatusMask(1 << 1);
    /// Requested (reader) deadline missed.
    pub const REQUESTED_DEADLINE_MISSED: StatusMask = StatusMask(1 << 2);
    /// A reader's QoS did not match this writer's.
    pub const OFFERED_INCOMPATIBLE_QOS: StatusMask = StatusMask(1 << 5);
    /// A writer's QoS did not match this reader's.
    pub const REQUESTED_INCOMPATIBLE_QOS: StatusMask = StatusMask(1 << 6);
    /// Samples were lost (never received).
    pub const SAMPLE_LOST: StatusMask = StatusMask(1 << 7);
    /// Samples were rejected (resource limits).
    pub const SAMPLE_REJECTED: StatusMask = StatusMask(1 << 8);
    /// New data is available in a reader.
    pub const DATA_AVAILABLE: StatusMask = StatusMask(1 << 10);
    /// A writer lost its liveliness.
    pub const LIVELINESS_LOST: StatusMask = StatusMask(1 << 11);
    /// A matched writer's liveliness changed (reader side).
    pub const LIVELINESS_CHANGED: StatusMask = StatusMask(1 << 12);
    /// A writer matched or unmatched a reader.
    pub const PUBLICATION_MATCHED: StatusMask = StatusMask(1 << 13);
    /// A reader matched or unmatched a writer.
    pub const SUBSCRIPTION_MATCHED: StatusMask = StatusMask(1 << 14);

    /// Whether any bit of `other` is set in `self`.
    pub fn intersects(self, other: StatusMask) -> bool {
        self.0 & other.0 != 0
    }
}

impl std::ops::BitOr for StatusMask {
    type Output = StatusMask;
    fn bitor(self, rhs: StatusMask) -> StatusMask {
        StatusMask(self.0 | rhs.0)
    }
}

impl std::ops::BitOrAssign for StatusMask {
    fn bitor_assign(&mut self, rhs: StatusMask) {
        self.0 |= rhs.0;
    }
}

/// A handle naming a remote or local entity in statuses: its GUID.
pub type EntityHandle = Guid;

/// PUBLICATION_MATCHED (writer side).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PublicationMatchedStatus {
    /// Readers ever matched.
    pub total_count: i32,
    /// Change since last read.
    pub total_count_change: i32,
    /// Readers matched now.
    pub current_count: i32,
    /// Change since last read.
    pub current_count_change: i32,
    /// The reader of the last change.
    pub last_subscription_handle: Option<EntityHandle>,
}

/// SUBSCRIPTION_MATCHED (reader side).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SubscriptionMatchedStatus {
    /// Writers ever matched.
    pub total_count: i32,
    /// Change since last read.
    pub total_count_change: i32,
    /// Writers matched now.
    pub current_count: i32,
    /// Change since last read.
    pub current_count_change: i32,
    /// The writer of the last change.
    pub last_publication_handle: Option<EntityHandle>,
}

/// OFFERED_INCOMPATIBLE_QOS / REQUESTED_INCOMPATIBLE_QOS.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct IncompatibleQosStatus {
    /// Incompatible peers ever seen.
    pub total_count: i32,
    /// Change since last read.
    pub total_count_change: i32,
    /// The DDS `QosPolicyId_t` of the last incompatible policy.
    pub last_policy_id: u32,
    /// For each policy id, how many times it was the cause.
    pub policies: Vec<(u32, i32)>,
}

impl IncompatibleQosStatus {
    /// Records one incompatibility caused by `policy_ids`.
    pub fn record(&mut self, policy_ids: &[u32]) {
        self.total_count += 1;
        self.total_count_change += 1;
        for &id in policy_ids {
            self.last_policy_id = id;
            match self.policies.iter_mut().find(|(p, _)| *p == id) {
                Some((_, n)) => *n += 1,
                None => self.policies.push((id, 1)),
            }
        }
    }
}

/// LIVELINESS_CHANGED (reader side).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LivelinessChangedStatus {
    /// Matched writers currently alive.
    pub alive_count: i32,
    /// Matched writers currently not alive.
    pub not_alive_count: i32,
    /// Change since last read.
    pub alive_count_change: i32,
    /// Change since last read.
    pub not_alive_count_change: i32,
    /// The writer of the last change.
    pub last_publication_handle: Option<EntityHandle>,
}

/// OFFERED_DEADLINE_MISSED (writer side): an instance was not written within the DEADLINE
/// period; counted once per period it stays silent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct OfferedDeadlineMissedStatus {
    /// Deadlines missed in total.
    pub total_count: i32,
    /// Change since last read.
    pub total_count_change: i32,
    /// The instance of the last miss.
    pub last_instance_handle: Option<crate::history::InstanceHandle>,
}

/// REQUESTED_DEADLINE_MISSED (reader side): an alive instance received no sample within the
/// DEADLINE period; counted once per period it stays silent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RequestedDeadlineMissedStatus {
    /// Deadlines missed in total.
    pub total_count: i32,
    /// Change since last read.
    pub total_count_change: i32,
    /// The instance of the last miss.
    pub last_instance_handle: Option<crate::history::InstanceHandle>,
}

/// LIVELINESS_LOST (writer side): a MANUAL_BY_PARTICIPANT or MANUAL_BY_TOPIC writer did not
/// assert its liveliness within its lease.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LivelinessLostStatus {
    /// Times the liveliness was lost.
    pub total_count: i32,
    /// Change since last read.
    pub total_count_change: i32,
}

/// SAMPLE_LOST (reader side).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SampleLostStatus {
    /// Samples lost in total.
    pub total_count: i32,
    /// Change since last read.
    pub total_count_change: i32,
}

/// SAMPLE_REJECTED (reader side).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SampleRejectedStatus {
    /// Samples rejected in total.
    pub total_count: i32,
    /// Change since last read.
    pub total_count_change: i32,
}

/// Every status a data writer keeps.
#[derive(Debug, Clone, Default)]
pub(crate) struct WriterStatuses {
    pub publication_matched: PublicationMatchedStatus,
    pub offered_incompatible_qos: IncompatibleQosStatus,
    pub offered_deadline_missed: OfferedDeadlineMissedStatus,
    pub liveliness_lost: LivelinessLostStatus,
    /// Bits whose status changed since last read.
    pub changes: StatusMask,
}

/// Every status a data reader keeps.
#[derive(Debug, Clone, Default)]
pub(crate) struct ReaderStatuses {
    pub subscription_matched: SubscriptionMatchedStatus,
    pub requested_incompatible_qos: IncompatibleQosStatus,
    pub liveliness_changed: LivelinessChangedStatus,
    pub sample_lost: SampleLostStatus,
    pub sample_rejected: SampleRejectedStatus,
    pub requested_deadline_missed: RequestedDeadlineMissedStatus,
    /// Bits whose status changed since last read.
    pub changes: StatusMask,
}
