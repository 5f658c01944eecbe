//! [`QosPolicyId`]: the spec's numbering of the QoS policies, used to name the policy at fault in
//! inconsistency and incompatibility reports.

/// QoS policy identifiers, numbered as DDS's `QosPolicyId_t` (and DDS-XTypes for 23/24).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u32)]
pub enum QosPolicyId {
    /// USER_DATA.
    UserData = 1,
    /// DURABILITY.
    Durability = 2,
    /// PRESENTATION.
    Presentation = 3,
    /// DEADLINE.
    Deadline = 4,
    /// LATENCY_BUDGET.
    LatencyBudget = 5,
    /// OWNERSHIP.
    Ownership = 6,
    /// OWNERSHIP_STRENGTH.
    OwnershipStrength = 7,
    /// LIVELINESS.
    Liveliness = 8,
    /// TIME_BASED_FILTER.
    TimeBasedFilter = 9,
    /// PARTITION.
    Partition = 10,
    /// RELIABILITY.
    Reliability = 11,
    /// DESTINATION_ORDER.
    DestinationOrder = 12,
    /// HISTORY.
    History = 13,
    /// RESOURCE_LIMITS.
    ResourceLimits = 14,
    /// ENTITY_FACTORY.
    EntityFactory = 15,
    /// WRITER_DATA_LIFECYCLE.
    WriterDataLifecycle = 16,
    /// READER_DATA_LIFECYCLE.
    ReaderDataLifecycle = 17,
    /// TOPIC_DATA.
    TopicData = 18,
    /// GROUP_DATA.
    GroupData = 19,
    /// TRANSPORT_PRIORITY.
    TransportPriority = 20,
    /// LIFESPAN.
    Lifespan = 21,
    /// DURABILITY_SERVICE.
    DurabilityService = 22,
    /// DATA_REPRESENTATION (DDS-XTypes).
    DataRepresentation = 23,
    /// TYPE_CONSISTENCY_ENFORCEMENT (DDS-XTypes).
    TypeConsistencyEnforcement = 24,
    /// CONSISTENCY (Tessera's, after DerechoDDS; vendor range so it never clashes with a
    /// standard id).
    Consistency = 0x8000_0001,
}

impl QosPolicyId {
    /// The numeric `QosPolicyId_t`.
    pub const fn id(self) -> u32 {
        self as u32
    }
}
