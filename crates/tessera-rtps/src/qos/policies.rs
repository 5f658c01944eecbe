//! The individual QoS policy types (DURABILITY, HISTORY, RELIABILITY, ...), each with the spec
//! default as its `Default`.

use std::time::Duration;

use super::duration::INFINITE;

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
