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

use std::time::Duration;

use crate::types::{DurationT, Locator};

/// The DDS infinite duration.
pub const INFINITE: Duration = Duration::MAX;

/// Whether `d` stands for the infinite duration (anything at or beyond 2^31-1 seconds, which is
/// what the wire can express).
pub fn is_infinite(d: Duration) -> bool {
    d.as_secs() >= 0x7fff_ffff
}

/// Converts a duration to the RTPS wire representation; [`INFINITE`] (or anything longer than
/// the wire can hold) becomes `DurationT::INFINITE`.
pub fn duration_to_wire(d: Duration) -> DurationT {
    if is_infinite(d) {
        return DurationT::INFINITE;
    }
    // Rounded up, so that a decoder that truncates (Fast DDS) gets the same nanoseconds back,
    // and one that rounds to nearest (ours) too: one fraction unit is ~0.23 ns. Truncated
    // here, Fast DDS read 100 ms as 99.999999 ms and found equal deadlines incompatible.
    let fraction = ((d.subsec_nanos() as u64) << 32).div_ceil(1_000_000_000);
    DurationT {
        seconds: d.as_secs() as i32,
        fraction: fraction as u32,
    }
}

/// Converts an RTPS wire duration. Any value with `seconds == 0x7fffffff` is infinite (some
/// implementations put nanoseconds rather than fractions in the infinite value); negative
/// durations are invalid and give `None`.
pub fn duration_from_wire(d: DurationT) -> Option<Duration> {
    if d.seconds == 0x7fff_ffff {
        return Some(INFINITE);
    }
    if d.seconds < 0 {
        return None;
    }
    let ns = ((d.fraction as u64) * 1_000_000_000 + (1 << 31)) >> 32;
    Some(Duration::from_secs(d.seconds as u64) + Duration::from_nanos(ns))
}

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

// ---------------------------------------------------------------------------------------------
// Policies
// ---------------------------------------------------------------------------------------------

/// DURABILITY kind. Ordered: a writer offering a later kind satisfies a reader requesting an
/// earlier one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub enum Durability {
    /// Samples are only for readers present when written (default).
    #[default]
    Volatile,
    /// The writer keeps samples for late-joining readers.
    TransientLocal,
    /// A durability service keeps samples beyond the writer's life.
    Transient,
    /// Samples survive on permanent storage.
    Persistent,
}

/// CONSISTENCY policy (Tessera's, after DerechoDDS): what the readers of a topic agree on.
/// Ordered like DURABILITY: a writer offering ATOMIC satisfies a reader requesting EVENTUAL.
///
/// Announced in SEDP as a Tessera vendor parameter; other vendors ignore it, so their endpoints
/// are EVENTUAL.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub enum Consistency {
    /// Per writer–reader pair, samples arrive in order, with losses as RELIABILITY allows;
    /// different readers may see different subsets (plain DDS; the default).
    #[default]
    Eventual,
    /// The participants with an ATOMIC endpoint on the topic and partition form a consensus
    /// group: every member delivers every committed sample in one total order, or none does;
    /// `write` returns once the sample is committed (see the `tessera-atomic` crate).
    Atomic,
}

/// HISTORY policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum History {
    /// Keep the most recent `depth` samples per instance (depth must be ≥ 1).
    KeepLast(u32),
    /// Keep everything, up to the resource limits.
    KeepAll,
}

impl Default for History {
    fn default() -> Self {
        History::KeepLast(1)
    }
}

/// RESOURCE_LIMITS policy; `None` means unlimited (`LENGTH_UNLIMITED`, -1 on the wire).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct ResourceLimits {
    /// Maximum samples over all instances.
    pub max_samples: Option<u32>,
    /// Maximum number of instances.
    pub max_instances: Option<u32>,
    /// Maximum samples in one instance.
    pub max_samples_per_instance: Option<u32>,
}

impl ResourceLimits {
    /// No limits (the default).
    pub const UNLIMITED: ResourceLimits = ResourceLimits {
        max_samples: None,
        max_instances: None,
        max_samples_per_instance: None,
    };
}

/// DURABILITY_SERVICE policy (configures the service behind TRANSIENT/PERSISTENT).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct DurabilityService {
    /// How long the service keeps an instance after it has been disposed and has no writers.
    pub service_cleanup_delay: Duration,
    /// History kept by the service.
    pub history: History,
    /// Resource limits of the service.
    pub resource_limits: ResourceLimits,
}

/// PRESENTATION access scope. Ordered: Instance < Topic < Group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub enum PresentationAccessScope {
    /// Changes to one instance (default).
    #[default]
    Instance,
    /// Changes within one data writer.
    Topic,
    /// Changes across all writers of a publisher.
    Group,
}

/// PRESENTATION policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Presentation {
    /// Scope of coherence / ordering.
    pub access_scope: PresentationAccessScope,
    /// Whether coherent sets are supported.
    pub coherent_access: bool,
    /// Whether ordered access is supported.
    pub ordered_access: bool,
}

/// DEADLINE policy: maximum period between samples of an instance (default infinite).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Deadline {
    /// The period; [`INFINITE`] for none.
    pub period: Duration,
}

impl Default for Deadline {
    fn default() -> Self {
        Deadline { period: INFINITE }
    }
}

/// LATENCY_BUDGET policy (default zero).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct LatencyBudget {
    /// Acceptable delay from write to delivery.
    pub duration: Duration,
}

/// OWNERSHIP kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Ownership {
    /// All writers may update an instance (default).
    #[default]
    Shared,
    /// Only the strongest writer updates an instance.
    Exclusive,
}

/// OWNERSHIP_STRENGTH policy (default 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct OwnershipStrength(pub i32);

/// LIVELINESS kind. Ordered: Automatic < ManualByParticipant < ManualByTopic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub enum LivelinessKind {
    /// The infrastructure asserts liveliness (default).
    #[default]
    Automatic,
    /// The application asserts liveliness per participant.
    ManualByParticipant,
    /// The application asserts liveliness per writer.
    ManualByTopic,
}

/// LIVELINESS policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Liveliness {
    /// Who asserts liveliness.
    pub kind: LivelinessKind,
    /// How long liveliness lasts after an assertion ([`INFINITE`] by default).
    pub lease_duration: Duration,
}

impl Default for Liveliness {
    fn default() -> Self {
        Liveliness {
            kind: LivelinessKind::Automatic,
            lease_duration: INFINITE,
        }
    }
}

/// TIME_BASED_FILTER policy (default zero).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct TimeBasedFilter {
    /// Minimum time between samples delivered per instance.
    pub minimum_separation: Duration,
}

/// PARTITION policy: a list of names or `fnmatch` patterns; empty is the default partition
/// (equivalent to `[""]`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Partition(pub Vec<String>);

impl Partition {
    /// A partition list from names.
    pub fn new<I, S>(names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Partition(names.into_iter().map(Into::into).collect())
    }

    /// Whether this is the default partition (empty list or exactly `[""]`).
    pub fn is_default(&self) -> bool {
        self.0.is_empty() || (self.0.len() == 1 && self.0[0].is_empty())
    }
}

/// RELIABILITY kind. Ordered: BestEffort < Reliable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ReliabilityKind {
    /// Samples may be lost.
    BestEffort,
    /// Lost samples are repaired.
    Reliable,
}

/// RELIABILITY policy. The default differs per entity: writers default to
/// [`Reliability::WRITER_DEFAULT`], readers and topics to [`Reliability::READER_DEFAULT`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Reliability {
    /// Best effort or reliable.
    pub kind: ReliabilityKind,
    /// How long `write` may block when resources are exhausted.
    pub max_blocking_time: Duration,
}

impl Reliability {
    /// The default writer reliability: reliable, 100 ms max blocking time.
    pub const WRITER_DEFAULT: Reliability = Reliability {
        kind: ReliabilityKind::Reliable,
        max_blocking_time: Duration::from_millis(100),
    };
    /// The default reader/topic reliability: best effort (max blocking time 100 ms).
    pub const READER_DEFAULT: Reliability = Reliability {
        kind: ReliabilityKind::BestEffort,
        max_blocking_time: Duration::from_millis(100),
    };

    /// Reliable with the given max blocking time.
    pub const fn reliable(max_blocking_time: Duration) -> Reliability {
        Reliability {
            kind: ReliabilityKind::Reliable,
            max_blocking_time,
        }
    }

    /// Best effort.
    pub const fn best_effort() -> Reliability {
        Reliability::READER_DEFAULT
    }
}

/// TRANSPORT_PRIORITY policy (default 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct TransportPriority(pub i32);

/// LIFESPAN policy (default infinite).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Lifespan {
    /// How long a sample stays valid after its source timestamp.
    pub duration: Duration,
}

impl Default for Lifespan {
    fn default() -> Self {
        Lifespan { duration: INFINITE }
    }
}

/// DESTINATION_ORDER kind. Ordered: ByReceptionTimestamp < BySourceTimestamp.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub enum DestinationOrder {
    /// Order by reception time (default).
    #[default]
    ByReceptionTimestamp,
    /// Order by the writer's source timestamp.
    BySourceTimestamp,
}

/// USER_DATA policy: opaque bytes attached to a participant, reader or writer.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct UserData(pub Vec<u8>);

/// TOPIC_DATA policy: opaque bytes attached to a topic.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct TopicData(pub Vec<u8>);

/// GROUP_DATA policy: opaque bytes attached to a publisher or subscriber.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct GroupData(pub Vec<u8>);

/// WRITER_DATA_LIFECYCLE policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct WriterDataLifecycle {
    /// Whether unregistering an instance also disposes it (default true).
    pub autodispose_unregistered_instances: bool,
}

impl Default for WriterDataLifecycle {
    fn default() -> Self {
        WriterDataLifecycle {
            autodispose_unregistered_instances: true,
        }
    }
}

/// READER_DATA_LIFECYCLE policy (both delays default to infinite).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ReaderDataLifecycle {
    /// Purge delay for instances without writers.
    pub autopurge_nowriter_samples_delay: Duration,
    /// Purge delay for disposed instances.
    pub autopurge_disposed_samples_delay: Duration,
}

impl Default for ReaderDataLifecycle {
    fn default() -> Self {
        ReaderDataLifecycle {
            autopurge_nowriter_samples_delay: INFINITE,
            autopurge_disposed_samples_delay: INFINITE,
        }
    }
}

/// ENTITY_FACTORY policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct EntityFactory {
    /// Whether created entities are enabled at once (default true).
    pub autoenable_created_entities: bool,
}

impl Default for EntityFactory {
    fn default() -> Self {
        EntityFactory {
            autoenable_created_entities: true,
        }
    }
}

/// Data representation identifiers (DDS-XTypes `DataRepresentationId_t`).
pub mod data_representation {
    /// XCDR version 1 (plain CDR).
    pub const XCDR: i16 = 0;
    /// XML (not supported by Tessera).
    pub const XML: i16 = 1;
    /// XCDR version 2.
    pub const XCDR2: i16 = 2;
}

/// DATA_REPRESENTATION policy. A writer uses (and offers) its first entry; a reader accepts all
/// listed. An empty list means `[XCDR]`. The default is `[XCDR]`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct DataRepresentation(pub Vec<i16>);

impl Default for DataRepresentation {
    fn default() -> Self {
        DataRepresentation(vec![data_representation::XCDR])
    }
}

impl DataRepresentation {
    /// The representation a writer with this policy uses: the first entry, XCDR if empty.
    pub fn offered(&self) -> i16 {
        self.0.first().copied().unwrap_or(data_representation::XCDR)
    }

    /// Whether a reader with this policy accepts representation `id` (empty list = `[XCDR]`).
    pub fn accepts(&self, id: i16) -> bool {
        if self.0.is_empty() {
            id == data_representation::XCDR
        } else {
            self.0.contains(&id)
        }
    }
}

/// TYPE_CONSISTENCY_ENFORCEMENT kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum TypeConsistencyKind {
    /// Types must be equal (after optional bound/name relaxations).
    DisallowTypeCoercion,
    /// Assignable types match (default).
    #[default]
    AllowTypeCoercion,
}

/// TYPE_CONSISTENCY_ENFORCEMENT policy (DDS-XTypes; a minimal rendering — Tessera matches on
/// type names and carries this policy only for the wire).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TypeConsistencyEnforcement {
    /// Coercion kind.
    pub kind: TypeConsistencyKind,
    /// Ignore sequence bounds (default true).
    pub ignore_sequence_bounds: bool,
    /// Ignore string bounds (default true).
    pub ignore_string_bounds: bool,
    /// Ignore member names (default false).
    pub ignore_member_names: bool,
    /// Prevent type widening (default false).
    pub prevent_type_widening: bool,
    /// Force type validation (default false).
    pub force_type_validation: bool,
}

impl Default for TypeConsistencyEnforcement {
    fn default() -> Self {
        TypeConsistencyEnforcement {
            kind: TypeConsistencyKind::AllowTypeCoercion,
            ignore_sequence_bounds: true,
            ignore_string_bounds: true,
            ignore_member_names: false,
            prevent_type_widening: false,
            force_type_validation: false,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Consistency
// ---------------------------------------------------------------------------------------------

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

fn check_history_limits(h: History, r: ResourceLimits) -> Result<(), InconsistentQos> {
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

fn check_durability_service(d: &DurabilityService) -> Result<(), InconsistentQos> {
    check_history_limits(d.history, d.resource_limits)
        .map_err(|_| InconsistentQos::DurabilityService)
}

fn check_deadline_filter(deadline: Deadline, tbf: TimeBasedFilter) -> Result<(), InconsistentQos> {
    if deadline.period < tbf.minimum_separation {
        return Err(InconsistentQos::DeadlineBelowMinimumSeparation);
    }
    Ok(())
}

fn check_partition(p: &Partition) -> Result<(), InconsistentQos> {
    if p.0.iter().any(|n| n.contains('\0')) {
        return Err(InconsistentQos::PartitionName);
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Entity aggregates
// ---------------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------------
// Side views: what discovery carries, and what matching compares
// ---------------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------------
// Request/offered matching
// ---------------------------------------------------------------------------------------------

/// Request/offered compatibility (DDS 1.4 §2.2.3, "RxO" policies, plus DDS-XTypes data
/// representation). Returns every incompatible policy, in the order Cyclone DDS checks them:
/// reliability, durability, presentation, deadline, latency budget, ownership, liveliness,
/// destination order, data representation; then Tessera's consistency (an ATOMIC reader needs an
/// ATOMIC writer: it delivers committed samples only).
///
/// Partitions, topic and type names are not QoS compatibility: see [`partitions_match`].
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

// ---------------------------------------------------------------------------------------------
// Partitions
// ---------------------------------------------------------------------------------------------

/// Whether a partition name contains `fnmatch` wildcard characters (`*`, `?`, `[`).
pub fn is_wildcard(name: &str) -> bool {
    name.bytes().any(|b| matches!(b, b'*' | b'?' | b'['))
}

/// Whether a writer's and a reader's partition lists have a partition in common.
///
/// An empty list is the default partition `[""]`. Names are compared exactly unless one side is
/// a pattern (`*`, `?`, `[...]` as POSIX `fnmatch`, `\` escaping), which is matched against the
/// other side's name; two patterns never match each other (DDS 1.4 §2.2.3.13), even if equal.
pub fn partitions_match(offered: &[String], requested: &[String]) -> bool {
    fn names(list: &[String]) -> impl Iterator<Item = &str> + Clone {
        list.iter()
            .map(String::as_str)
            .chain(list.is_empty().then_some(""))
    }
    let b = names(requested);
    names(offered).any(|x| b.clone().any(|y| partition_names_match(x, y)))
}

fn partition_names_match(a: &str, b: &str) -> bool {
    match (is_wildcard(a), is_wildcard(b)) {
        (false, false) => a == b,
        (true, false) => fnmatch(a, b),
        (false, true) => fnmatch(b, a),
        (true, true) => false,
    }
}

/// POSIX-style `fnmatch` without flags: `*` matches any run of characters, `?` one character,
/// `[...]` a character class (ranges `a-z`, negation with a leading `!` or `^`, a leading `]`
/// is literal), `\x` the character `x`. A `[` without a closing `]` is a literal `[`.
///
/// Runs in O(len(pattern) × len(name)) at worst (single-star backtracking), without allocation.
pub fn fnmatch(pattern: &str, name: &str) -> bool {
    let (mut pi, mut ni) = (0usize, 0usize);
    // Position in the pattern just after the last `*`, and the name position it is tried at.
    let mut star: Option<(usize, usize)> = None;
    loop {
        if let Some(pc) = pattern[pi..].chars().next() {
            let nc = name[ni..].chars().next();
            let advanced = match pc {
                '*' => {
                    pi += 1;
                    star = Some((pi, ni));
                    continue;
                }
                '?' => nc.map(|c| (pi + 1, c)),
                '[' => match (nc, class_match(&pattern[pi + 1..], nc)) {
                    (Some(c), Some((true, used))) => Some((pi + 1 + used, c)),
                    (_, Some((false, _))) | (None, _) => None,
                    // Unterminated class: a literal '['.
                    (Some(c), None) => (c == '[').then_some((pi + 1, c)),
                },
                '\\' => {
                    let lit = pattern[pi + 1..].chars().next();
                    match (lit, nc) {
                        (Some(l), Some(c)) if l == c => Some((pi + 1 + l.len_utf8(), c)),
                        // A trailing backslash matches itself.
                        (None, Some('\\')) => Some((pi + 1, '\\')),
                        _ => None,
                    }
                }
                lit => nc.filter(|c| *c == lit).map(|c| (pi + lit.len_utf8(), c)),
            };
            if let Some((next_pi, c)) = advanced {
                pi = next_pi;
                ni += c.len_utf8();
                continue;
            }
        } else if ni == name.len() {
            return true;
        }
        // Mismatch: let the last star swallow one more character, if any.
        match star {
            Some((sp, sn)) => match name[sn..].chars().next() {
                Some(c) => {
                    let next = sn + c.len_utf8();
                    star = Some((sp, next));
                    pi = sp;
                    ni = next;
                }
                None => return false,
            },
            None => return false,
        }
    }
}

/// Matches `c` against the class body `body` (the text after `[`). Returns whether it matched
/// and how many bytes of `body` the class used (through the closing `]`), or `None` if the class
/// is not terminated.
fn class_match(body: &str, c: Option<char>) -> Option<(bool, usize)> {
    let mut chars = body.char_indices().peekable();
    let mut negate = false;
    if let Some(&(_, '!' | '^')) = chars.peek() {
        negate = true;
        chars.next();
    }
    let mut matched = false;
    let mut first = true;
    while let Some((i, ch)) = chars.next() {
        if ch == ']' && !first {
            return Some((matched != negate, i + 1));
        }
        first = false;
        let lo = if ch == '\\' { chars.next()?.1 } else { ch };
        // A range `lo-hi`, unless the '-' is last before ']'.
        let mut hi = lo;
        let mut look = chars.clone();
        if let Some((_, '-')) = look.next() {
            if let Some((_, h)) = look.next() {
                if h != ']' {
                    chars.next();
                    chars.next();
                    hi = h;
                }
            }
        }
        if let Some(c) = c {
            if lo <= c && c <= hi {
                matched = true;
            }
        }
    }
    None
}

#[cfg(test)]
#[path = "qos_tests.rs"]
mod tests;
