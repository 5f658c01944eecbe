//! The per-entity QoS aggregates: [`TopicQos`], [`DataWriterQos`], [`DataReaderQos`],
//! [`PublisherQos`], [`SubscriberQos`] and [`DomainParticipantQos`].

use super::consistency_rules::{
    check_deadline_filter, check_durability_service, check_history_limits, check_partition,
    InconsistentQos,
};
use super::policies::{
    Consistency, DataRepresentation, Deadline, DestinationOrder, Durability, DurabilityService,
    EntityFactory, GroupData, History, LatencyBudget, Lifespan, Liveliness, Ownership,
    OwnershipStrength, Partition, Presentation, ReaderDataLifecycle, Reliability, ResourceLimits,
    TimeBasedFilter, TopicData, TransportPriority, TypeConsistencyEnforcement, UserData,
    WriterDataLifecycle,
};

/// QoS of a topic.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TopicQos {
    /// CONSISTENCY (Tessera).
    pub consistency: Consistency,
    /// TOPIC_DATA.
    pub topic_data: TopicData,
    /// DURABILITY.
    pub durability: Durability,
    /// DURABILITY_SERVICE.
    pub durability_service: DurabilityService,
    /// DEADLINE.
    pub deadline: Deadline,
    /// LATENCY_BUDGET.
    pub latency_budget: LatencyBudget,
    /// LIVELINESS.
    pub liveliness: Liveliness,
    /// RELIABILITY (default best effort).
    pub reliability: Reliability,
    /// DESTINATION_ORDER.
    pub destination_order: DestinationOrder,
    /// HISTORY.
    pub history: History,
    /// RESOURCE_LIMITS.
    pub resource_limits: ResourceLimits,
    /// TRANSPORT_PRIORITY.
    pub transport_priority: TransportPriority,
    /// LIFESPAN.
    pub lifespan: Lifespan,
    /// OWNERSHIP.
    pub ownership: Ownership,
    /// DATA_REPRESENTATION.
    pub data_representation: DataRepresentation,
}

impl Default for TopicQos {
    fn default() -> Self {
        TopicQos {
            consistency: Consistency::default(),
            topic_data: TopicData::default(),
            durability: Durability::default(),
            durability_service: DurabilityService::default(),
            deadline: Deadline::default(),
            latency_budget: LatencyBudget::default(),
            liveliness: Liveliness::default(),
            reliability: Reliability::READER_DEFAULT,
            destination_order: DestinationOrder::default(),
            history: History::default(),
            resource_limits: ResourceLimits::default(),
            transport_priority: TransportPriority::default(),
            lifespan: Lifespan::default(),
            ownership: Ownership::default(),
            data_representation: DataRepresentation::default(),
        }
    }
}

setters!(TopicQos {
    with_consistency => consistency: Consistency,
    with_topic_data => topic_data: TopicData,
    with_durability => durability: Durability,
    with_durability_service => durability_service: DurabilityService,
    with_deadline => deadline: Deadline,
    with_latency_budget => latency_budget: LatencyBudget,
    with_liveliness => liveliness: Liveliness,
    with_reliability => reliability: Reliability,
    with_destination_order => destination_order: DestinationOrder,
    with_history => history: History,
    with_resource_limits => resource_limits: ResourceLimits,
    with_transport_priority => transport_priority: TransportPriority,
    with_lifespan => lifespan: Lifespan,
    with_ownership => ownership: Ownership,
    with_data_representation => data_representation: DataRepresentation,
});

impl TopicQos {
    /// Checks the policies against each other.
    pub fn check_consistency(&self) -> Result<(), InconsistentQos> {
        check_history_limits(self.history, self.resource_limits)?;
        check_durability_service(&self.durability_service)
    }
}

/// QoS of a data writer.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct DataWriterQos {
    /// CONSISTENCY (Tessera).
    pub consistency: Consistency,
    /// DURABILITY.
    pub durability: Durability,
    /// DURABILITY_SERVICE.
    pub durability_service: DurabilityService,
    /// DEADLINE.
    pub deadline: Deadline,
    /// LATENCY_BUDGET.
    pub latency_budget: LatencyBudget,
    /// LIVELINESS.
    pub liveliness: Liveliness,
    /// RELIABILITY (default reliable, 100 ms).
    pub reliability: Reliability,
    /// DESTINATION_ORDER.
    pub destination_order: DestinationOrder,
    /// HISTORY.
    pub history: History,
    /// RESOURCE_LIMITS.
    pub resource_limits: ResourceLimits,
    /// TRANSPORT_PRIORITY.
    pub transport_priority: TransportPriority,
    /// LIFESPAN.
    pub lifespan: Lifespan,
    /// USER_DATA.
    pub user_data: UserData,
    /// OWNERSHIP.
    pub ownership: Ownership,
    /// OWNERSHIP_STRENGTH.
    pub ownership_strength: OwnershipStrength,
    /// WRITER_DATA_LIFECYCLE.
    pub writer_data_lifecycle: WriterDataLifecycle,
    /// DATA_REPRESENTATION.
    pub data_representation: DataRepresentation,
}

impl Default for DataWriterQos {
    fn default() -> Self {
        DataWriterQos {
            consistency: Consistency::default(),
            durability: Durability::default(),
            durability_service: DurabilityService::default(),
            deadline: Deadline::default(),
            latency_budget: LatencyBudget::default(),
            liveliness: Liveliness::default(),
            reliability: Reliability::WRITER_DEFAULT,
            destination_order: DestinationOrder::default(),
            history: History::default(),
            resource_limits: ResourceLimits::default(),
            transport_priority: TransportPriority::default(),
            lifespan: Lifespan::default(),
            user_data: UserData::default(),
            ownership: Ownership::default(),
            ownership_strength: OwnershipStrength::default(),
            writer_data_lifecycle: WriterDataLifecycle::default(),
            data_representation: DataRepresentation::default(),
        }
    }
}

setters!(DataWriterQos {
    with_consistency => consistency: Consistency,
    with_durability => durability: Durability,
    with_durability_service => durability_service: DurabilityService,
    with_deadline => deadline: Deadline,
    with_latency_budget => latency_budget: LatencyBudget,
    with_liveliness => liveliness: Liveliness,
    with_reliability => reliability: Reliability,
    with_destination_order => destination_order: DestinationOrder,
    with_history => history: History,
    with_resource_limits => resource_limits: ResourceLimits,
    with_transport_priority => transport_priority: TransportPriority,
    with_lifespan => lifespan: Lifespan,
    with_user_data => user_data: UserData,
    with_ownership => ownership: Ownership,
    with_ownership_strength => ownership_strength: OwnershipStrength,
    with_writer_data_lifecycle => writer_data_lifecycle: WriterDataLifecycle,
    with_data_representation => data_representation: DataRepresentation,
});

impl DataWriterQos {
    /// The writer QoS a topic implies (DDS `copy_from_topic_qos` applied to the defaults).
    pub fn from_topic(t: &TopicQos) -> Self {
        DataWriterQos {
            consistency: t.consistency,
            durability: t.durability,
            durability_service: t.durability_service,
            deadline: t.deadline,
            latency_budget: t.latency_budget,
            liveliness: t.liveliness,
            reliability: t.reliability,
            destination_order: t.destination_order,
            history: t.history,
            resource_limits: t.resource_limits,
            transport_priority: t.transport_priority,
            lifespan: t.lifespan,
            ownership: t.ownership,
            data_representation: t.data_representation.clone(),
            ..DataWriterQos::default()
        }
    }

    /// Checks the policies against each other.
    pub fn check_consistency(&self) -> Result<(), InconsistentQos> {
        check_history_limits(self.history, self.resource_limits)?;
        check_durability_service(&self.durability_service)
    }
}

/// QoS of a data reader.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct DataReaderQos {
    /// CONSISTENCY (Tessera).
    pub consistency: Consistency,
    /// DURABILITY.
    pub durability: Durability,
    /// DEADLINE.
    pub deadline: Deadline,
    /// LATENCY_BUDGET.
    pub latency_budget: LatencyBudget,
    /// LIVELINESS.
    pub liveliness: Liveliness,
    /// RELIABILITY (default best effort).
    pub reliability: Reliability,
    /// DESTINATION_ORDER.
    pub destination_order: DestinationOrder,
    /// HISTORY.
    pub history: History,
    /// RESOURCE_LIMITS.
    pub resource_limits: ResourceLimits,
    /// USER_DATA.
    pub user_data: UserData,
    /// OWNERSHIP.
    pub ownership: Ownership,
    /// TIME_BASED_FILTER.
    pub time_based_filter: TimeBasedFilter,
    /// READER_DATA_LIFECYCLE.
    pub reader_data_lifecycle: ReaderDataLifecycle,
    /// DATA_REPRESENTATION.
    pub data_representation: DataRepresentation,
    /// TYPE_CONSISTENCY_ENFORCEMENT.
    pub type_consistency: TypeConsistencyEnforcement,
}

impl Default for DataReaderQos {
    fn default() -> Self {
        DataReaderQos {
            consistency: Consistency::default(),
            durability: Durability::default(),
            deadline: Deadline::default(),
            latency_budget: LatencyBudget::default(),
            liveliness: Liveliness::default(),
            reliability: Reliability::READER_DEFAULT,
            destination_order: DestinationOrder::default(),
            history: History::default(),
            resource_limits: ResourceLimits::default(),
            user_data: UserData::default(),
            ownership: Ownership::default(),
            time_based_filter: TimeBasedFilter::default(),
            reader_data_lifecycle: ReaderDataLifecycle::default(),
            data_representation: DataRepresentation::default(),
            type_consistency: TypeConsistencyEnforcement::default(),
        }
    }
}

setters!(DataReaderQos {
    with_consistency => consistency: Consistency,
    with_durability => durability: Durability,
    with_deadline => deadline: Deadline,
    with_latency_budget => latency_budget: LatencyBudget,
    with_liveliness => liveliness: Liveliness,
    with_reliability => reliability: Reliability,
    with_destination_order => destination_order: DestinationOrder,
    with_history => history: History,
    with_resource_limits => resource_limits: ResourceLimits,
    with_user_data => user_data: UserData,
    with_ownership => ownership: Ownership,
    with_time_based_filter => time_based_filter: TimeBasedFilter,
    with_reader_data_lifecycle => reader_data_lifecycle: ReaderDataLifecycle,
    with_data_representation => data_representation: DataRepresentation,
    with_type_consistency => type_consistency: TypeConsistencyEnforcement,
});

impl DataReaderQos {
    /// The reader QoS a topic implies (DDS `copy_from_topic_qos` applied to the defaults).
    pub fn from_topic(t: &TopicQos) -> Self {
        DataReaderQos {
            consistency: t.consistency,
            durability: t.durability,
            deadline: t.deadline,
            latency_budget: t.latency_budget,
            liveliness: t.liveliness,
            reliability: t.reliability,
            destination_order: t.destination_order,
            history: t.history,
            resource_limits: t.resource_limits,
            ownership: t.ownership,
            data_representation: t.data_representation.clone(),
            ..DataReaderQos::default()
        }
    }

    /// Checks the policies against each other.
    pub fn check_consistency(&self) -> Result<(), InconsistentQos> {
        check_history_limits(self.history, self.resource_limits)?;
        check_deadline_filter(self.deadline, self.time_based_filter)
    }
}

/// QoS of a publisher.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct PublisherQos {
    /// PRESENTATION.
    pub presentation: Presentation,
    /// PARTITION.
    pub partition: Partition,
    /// GROUP_DATA.
    pub group_data: GroupData,
    /// ENTITY_FACTORY.
    pub entity_factory: EntityFactory,
}

setters!(PublisherQos {
    with_presentation => presentation: Presentation,
    with_partition => partition: Partition,
    with_group_data => group_data: GroupData,
    with_entity_factory => entity_factory: EntityFactory,
});

impl PublisherQos {
    /// Checks the policies against each other.
    pub fn check_consistency(&self) -> Result<(), InconsistentQos> {
        check_partition(&self.partition)
    }
}

/// QoS of a subscriber.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct SubscriberQos {
    /// PRESENTATION.
    pub presentation: Presentation,
    /// PARTITION.
    pub partition: Partition,
    /// GROUP_DATA.
    pub group_data: GroupData,
    /// ENTITY_FACTORY.
    pub entity_factory: EntityFactory,
}

setters!(SubscriberQos {
    with_presentation => presentation: Presentation,
    with_partition => partition: Partition,
    with_group_data => group_data: GroupData,
    with_entity_factory => entity_factory: EntityFactory,
});

impl SubscriberQos {
    /// Checks the policies against each other.
    pub fn check_consistency(&self) -> Result<(), InconsistentQos> {
        check_partition(&self.partition)
    }
}

/// QoS of a domain participant.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct DomainParticipantQos {
    /// USER_DATA (announced in SPDP).
    pub user_data: UserData,
    /// ENTITY_FACTORY.
    pub entity_factory: EntityFactory,
}

setters!(DomainParticipantQos {
    with_user_data => user_data: UserData,
    with_entity_factory => entity_factory: EntityFactory,
});

impl DomainParticipantQos {
    /// Checks the policies against each other (nothing can conflict here).
    pub fn check_consistency(&self) -> Result<(), InconsistentQos> {
        Ok(())
    }
}
