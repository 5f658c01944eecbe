//! The writer and reader "side" views that discovery carries and matching compares:
//! [`WriterSideQos`] and [`ReaderSideQos`].

use super::consistency_rules::{
    check_deadline_filter, check_durability_service, check_history_limits, check_partition,
    InconsistentQos,
};
use super::entity_qos::{DataReaderQos, DataWriterQos, PublisherQos, SubscriberQos, TopicQos};
use super::policies::{
    Consistency, DataRepresentation, Deadline, DestinationOrder, Durability, DurabilityService,
    GroupData, History, LatencyBudget, Lifespan, Liveliness, Ownership, OwnershipStrength,
    Partition, Presentation, Reliability, ResourceLimits, TimeBasedFilter, TopicData,
    TransportPriority, TypeConsistencyEnforcement, UserData,
};
use crate::types::Locator;

/// Everything a writer offers, as announced in SEDP: the writer's own policies plus its
/// publisher's presentation, partition and group data and its topic's topic data.
/// `Default` gives the spec defaults a receiver assumes for omitted parameters.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct WriterSideQos {
    /// CONSISTENCY (Tessera).
    pub consistency: Consistency,
    /// Where the endpoint's participant serves its consensus group (ATOMIC only; announced by
    /// Tessera beside CONSISTENCY, not a policy).
    pub consensus_endpoint: Option<Locator>,
    /// DURABILITY.
    pub durability: Durability,
    /// DURABILITY_SERVICE.
    pub durability_service: DurabilityService,
    /// PRESENTATION (publisher).
    pub presentation: Presentation,
    /// DEADLINE.
    pub deadline: Deadline,
    /// LATENCY_BUDGET.
    pub latency_budget: LatencyBudget,
    /// OWNERSHIP.
    pub ownership: Ownership,
    /// OWNERSHIP_STRENGTH.
    pub ownership_strength: OwnershipStrength,
    /// LIVELINESS.
    pub liveliness: Liveliness,
    /// RELIABILITY (default reliable, 100 ms).
    pub reliability: Reliability,
    /// LIFESPAN.
    pub lifespan: Lifespan,
    /// DESTINATION_ORDER.
    pub destination_order: DestinationOrder,
    /// HISTORY.
    pub history: History,
    /// RESOURCE_LIMITS.
    pub resource_limits: ResourceLimits,
    /// TRANSPORT_PRIORITY.
    pub transport_priority: TransportPriority,
    /// PARTITION (publisher).
    pub partition: Partition,
    /// USER_DATA.
    pub user_data: UserData,
    /// TOPIC_DATA (topic).
    pub topic_data: TopicData,
    /// GROUP_DATA (publisher).
    pub group_data: GroupData,
    /// DATA_REPRESENTATION.
    pub data_representation: DataRepresentation,
}

impl Default for WriterSideQos {
    fn default() -> Self {
        WriterSideQos::new(
            &TopicQos::default(),
            &PublisherQos::default(),
            &DataWriterQos::default(),
        )
    }
}

impl WriterSideQos {
    /// Combines a writer's QoS with its publisher's and topic's.
    pub fn new(topic: &TopicQos, publisher: &PublisherQos, writer: &DataWriterQos) -> Self {
        WriterSideQos {
            consistency: writer.consistency,
            consensus_endpoint: None,
            durability: writer.durability,
            durability_service: writer.durability_service,
            presentation: publisher.presentation,
            deadline: writer.deadline,
            latency_budget: writer.latency_budget,
            ownership: writer.ownership,
            ownership_strength: writer.ownership_strength,
            liveliness: writer.liveliness,
            reliability: writer.reliability,
            lifespan: writer.lifespan,
            destination_order: writer.destination_order,
            history: writer.history,
            resource_limits: writer.resource_limits,
            transport_priority: writer.transport_priority,
            partition: publisher.partition.clone(),
            user_data: writer.user_data.clone(),
            topic_data: topic.topic_data.clone(),
            group_data: publisher.group_data.clone(),
            data_representation: writer.data_representation.clone(),
        }
    }

    /// Checks the policies against each other.
    pub fn check_consistency(&self) -> Result<(), InconsistentQos> {
        check_history_limits(self.history, self.resource_limits)?;
        check_durability_service(&self.durability_service)?;
        check_partition(&self.partition)
    }
}

setters!(WriterSideQos {
    with_consistency => consistency: Consistency,
    with_durability => durability: Durability,
    with_presentation => presentation: Presentation,
    with_deadline => deadline: Deadline,
    with_latency_budget => latency_budget: LatencyBudget,
    with_ownership => ownership: Ownership,
    with_liveliness => liveliness: Liveliness,
    with_reliability => reliability: Reliability,
    with_destination_order => destination_order: DestinationOrder,
    with_history => history: History,
    with_resource_limits => resource_limits: ResourceLimits,
    with_partition => partition: Partition,
    with_data_representation => data_representation: DataRepresentation,
});

/// Everything a reader requests, as announced in SEDP: the reader's own policies plus its
/// subscriber's presentation, partition and group data and its topic's topic data.
/// `Default` gives the spec defaults a receiver assumes for omitted parameters.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ReaderSideQos {
    /// CONSISTENCY (Tessera).
    pub consistency: Consistency,
    /// Where the endpoint's participant serves its consensus group (ATOMIC only; announced by
    /// Tessera beside CONSISTENCY, not a policy).
    pub consensus_endpoint: Option<Locator>,
    /// DURABILITY.
    pub durability: Durability,
    /// DEADLINE.
    pub deadline: Deadline,
    /// LATENCY_BUDGET.
    pub latency_budget: LatencyBudget,
    /// OWNERSHIP.
    pub ownership: Ownership,
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
    /// TIME_BASED_FILTER.
    pub time_based_filter: TimeBasedFilter,
    /// PRESENTATION (subscriber).
    pub presentation: Presentation,
    /// PARTITION (subscriber).
    pub partition: Partition,
    /// USER_DATA.
    pub user_data: UserData,
    /// TOPIC_DATA (topic).
    pub topic_data: TopicData,
    /// GROUP_DATA (subscriber).
    pub group_data: GroupData,
    /// DATA_REPRESENTATION.
    pub data_representation: DataRepresentation,
    /// TYPE_CONSISTENCY_ENFORCEMENT.
    pub type_consistency: TypeConsistencyEnforcement,
}

impl Default for ReaderSideQos {
    fn default() -> Self {
        ReaderSideQos::new(
            &TopicQos::default(),
            &SubscriberQos::default(),
            &DataReaderQos::default(),
        )
    }
}

impl ReaderSideQos {
    /// Combines a reader's QoS with its subscriber's and topic's.
    pub fn new(topic: &TopicQos, subscriber: &SubscriberQos, reader: &DataReaderQos) -> Self {
        ReaderSideQos {
            consistency: reader.consistency,
            consensus_endpoint: None,
            durability: reader.durability,
            deadline: reader.deadline,
            latency_budget: reader.latency_budget,
            ownership: reader.ownership,
            liveliness: reader.liveliness,
            reliability: reader.reliability,
            destination_order: reader.destination_order,
            history: reader.history,
            resource_limits: reader.resource_limits,
            time_based_filter: reader.time_based_filter,
            presentation: subscriber.presentation,
            partition: subscriber.partition.clone(),
            user_data: reader.user_data.clone(),
            topic_data: topic.topic_data.clone(),
            group_data: subscriber.group_data.clone(),
            data_representation: reader.data_representation.clone(),
            type_consistency: reader.type_consistency,
        }
    }

    /// Checks the policies against each other.
    pub fn check_consistency(&self) -> Result<(), InconsistentQos> {
        check_history_limits(self.history, self.resource_limits)?;
        check_deadline_filter(self.deadline, self.time_based_filter)?;
        check_partition(&self.partition)
    }
}

setters!(ReaderSideQos {
    with_consistency => consistency: Consistency,
    with_durability => durability: Durability,
    with_presentation => presentation: Presentation,
    with_deadline => deadline: Deadline,
    with_latency_budget => latency_budget: LatencyBudget,
    with_ownership => ownership: Ownership,
    with_liveliness => liveliness: Liveliness,
    with_reliability => reliability: Reliability,
    with_destination_order => destination_order: DestinationOrder,
    with_history => history: History,
    with_resource_limits => resource_limits: ResourceLimits,
    with_time_based_filter => time_based_filter: TimeBasedFilter,
    with_partition => partition: Partition,
    with_data_representation => data_representation: DataRepresentation,
});
